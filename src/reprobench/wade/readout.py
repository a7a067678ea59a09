"""The reservoir readout (specs/wade.md, 3.3): one pass of per-sample SGD logistic regression, one-vs-rest,
as sklearn's SGDClassifier(loss='log_loss', learning_rate='constant', eta0=1e-3, alpha=1e-3) does it, for
many reservoirs (CA rules) at once, with the test set scored at every checkpoint in batched matrix products.

Per sample, as sklearn's _plain_sgd with its WeightVector (the weights as a scale times a vector, so the L2 shrink
costs one multiplication), with p = w.x + b and y in {-1, +1} for each one-vs-rest problem (a single problem,
class 1 vs class 0, for two classes): dloss = sklearn's Log.dloss(p, y) (-y / (1 + exp(y p)), with its branches
beyond |y p| = 18); scale <- scale (1 - eta alpha); w <- w - eta dloss x; b <- b - eta dloss.
Features are standardised with the training set's mean and standard deviation (sklearn's StandardScaler:
population std, 1 where it is 0); the scaling is folded into the weights for scoring, so raw binary features
never need a float copy. Checkpoints: after the first sample alone, then after every `chunk` samples starting
again at sample 0 (so sample 0 is seen twice), as the reference's partial_fit calls. Test items with the same
features (a simple rule's reservoir repeats states: 37% of Incremental periodic's items over all 256 rules) are
scored once and counted per label, and features equal in every test row once (their weights summed in float64:
a float32 rounding change: 0.23% of Incremental periodic's checkpoints moved, by at most 0.026, as float32 scoring
itself moves from float64; DEVIATIONS V9); the problems of classes not yet seen tie, and a tie goes to
the first class, as in sklearn (tie_leaders).
"""

from __future__ import annotations

import math

import torch


def standardisation(train_x: torch.Tensor, max_elements: int = 2**28, binary: bool = False):
    """(mean, scale) over samples: train_x (models, samples, features) -> (models, features) each.

    `binary` (the features are 0/1, as ReCA's): from each feature's count c of ones over n samples, mean c / n and
    variance c (n - c) / n^2, each one correctly rounded division of exact integers (a tenth of the time of the
    float64 path, whose reduction rounds the variance differently in about 98% of features, by up to 1e-14 relative).
    Otherwise a few models at a time, so that the float64 copy stays under `max_elements` (2 GiB; Incremental
    periodic's 64 rules would need 63 GiB at once). Each model's result is the same whichever models share the call."""
    if binary:
        n = train_x.shape[1]
        # int16 partial sums (exact below 2^15 rows): a third of the time of one int32 sum, a sixth of int64's
        counts = sum(train_x[:, a:a + 2**15 - 1].sum(1, dtype=torch.int16).to(torch.int64)
                     for a in range(0, n, 2**15 - 1))
        mean = counts.double() / n
        scale = (counts * (n - counts)).double().div(n * n).sqrt()
    else:
        per_call = max(1, max_elements // max(1, train_x.shape[1] * train_x.shape[2]))
        means, scales = [], []
        for m in range(0, train_x.shape[0], per_call):
            x = train_x[m:m + per_call].double()
            means.append(x.mean(1))
            scales.append(x.var(1, unbiased=False).sqrt())
            del x
        mean, scale = (means[0], scales[0]) if len(means) == 1 else (torch.cat(means), torch.cat(scales))
    scale = torch.where(scale == 0, torch.ones_like(scale), scale)
    return mean, scale


def checkpoint_schedule(n_samples: int, chunk: int = 8) -> list[tuple[int, int]]:
    """[(start, stop)] of the sample ranges fitted before each checkpoint."""
    return [(0, 1)] + [(s, min(s + chunk, n_samples)) for s in range(0, n_samples, chunk)]


def log_dloss(p: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """sklearn's Log.dloss (_sgd_fast.pyx): the derivative of log(1 + exp(-y p)) in p, with its shortcuts."""
    z = p * y
    return torch.where(z > 18.0, torch.exp(-z) * -y, torch.where(z < -18.0, -y, -y / (torch.exp(z) + 1.0)))


def tie_leaders(first_seen: torch.Tensor, stops: torch.Tensor) -> torch.Tensor:
    """(checkpoints, problems): the problem whose logits each problem takes at each checkpoint. A one-vs-rest problem
    whose class no sample up to the checkpoint had has been updated exactly as every other such problem (y = -1 each
    time, from the same zeros), so in exact arithmetic their logits tie, and sklearn's argmax (its decision values for
    such problems are bitwise equal) gives the first of them. A product's rounding, which depends on where a row falls
    in it, must not decide instead: each such problem takes the first one's logits. `first_seen` (problems,): the
    index of each class's first training sample; `stops` (checkpoints,): the samples fitted before each checkpoint."""
    unseen = first_seen[None, :] >= stops[:, None]
    first = unseen.to(torch.int8).argmax(-1)  # the first unseen problem (argmax: the first maximal)
    own = torch.arange(len(first_seen), device=first_seen.device)
    return torch.where(unseen, first[:, None], own[None, :])


class _TestSet:
    """One model's test items as feature rows and, per row, how many items carry each class label (items whose
    label the readout never saw in training count in no column). `unique`: one row per distinct feature vector (its
    size depends on the data, so a GPU would wait for it: done on the CPU only, where a wait costs nothing)."""

    def __init__(self, features: torch.Tensor, labels: torch.Tensor, classes: torch.Tensor, dtype, unique: bool):
        hits = (labels[:, None] == classes[None, :]).to(torch.int64)  # (items, classes)
        if unique:
            rows, inverse = torch.unique(features, dim=0, return_inverse=True)
            counts = torch.zeros((len(rows), len(classes)), dtype=torch.int64, device=features.device)
            counts.index_add_(0, inverse, hits)
        else:
            rows, counts = features, hits
        self.columns = None  # each feature's column in `rows`, where features repeat one another in every row
        if unique:
            merged, columns = torch.unique(rows, dim=1, return_inverse=True)
            if merged.shape[1] < rows.shape[1]:
                rows, self.columns = merged, columns
        self.rows = rows.to(dtype)
        self.dtype = dtype
        self.counts_by_class = counts.T.contiguous()  # (classes, rows)
        # two classes: what choosing the second gains over the first, per row (correct_binary)
        self.gain = (self.counts_by_class[1] - self.counts_by_class[0]).to(torch.float32) if len(classes) == 2 else None

    def weights(self, w: torch.Tensor) -> torch.Tensor:
        """w (outputs, features) float64 -> (outputs, columns of `rows`) in the scoring dtype: the weights of
        features that are equal in every test row summed (in float64) into one column. Rules that shift the state
        repeat columns (rule 2's second state is its first shifted: 898 columns of 1,800); over Incremental
        periodic's 256 rules the products shrink by 15%. A rule without repeated features is scored as before."""
        if self.columns is not None:
            w = torch.zeros((w.shape[0], self.rows.shape[1]), dtype=w.dtype, device=w.device).index_add_(
                1, self.columns, w)
        return w.to(self.dtype)

    def correct(self, predicted: torch.Tensor) -> torch.Tensor:
        """predicted (checkpoints, rows): class indices -> correctly classified items per checkpoint."""
        return self.counts_by_class.gather(0, predicted).sum(-1)

    def correct_binary(self, second: torch.Tensor) -> torch.Tensor:
        """second (rows, checkpoints): True where a row is given the second of two classes -> correctly classified
        items per checkpoint: the first class's items, plus the difference wherever the second is chosen (one product
        in float32, exact: the counts stay far below 2^24)."""
        return self.counts_by_class[0].sum() + (self.gain @ second.to(torch.float32)).to(torch.int64)


def fit_and_score(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor,
                  classes: list[int] | torch.Tensor, lr: float = 1e-3, alpha: float = 1e-3, chunk: int = 8,
                  score_block: int | None = None, dtype=torch.float64, score_dtype=torch.float32,
                  unique: bool | None = None, binary_features: bool = False) -> torch.Tensor:
    """Test accuracy at every checkpoint, (models, checkpoints).

    train_x (models, n, features) and test_x (models, m, features): any numeric dtype (binary uint8 is fine);
    train_y (n,), test_y (m,): class labels shared by all models; `classes`: the labels seen in training (a list, or
    a tensor already on the device, which saves an upload: a host sync on a GPU).
    The SGD runs in `dtype`; checkpoints are scored in `score_dtype` (float32 holds 0/1 features exactly; a
    logit within float32 rounding of 0 may then be classified differently than in float64). `unique`: score each
    distinct test feature vector once (default: on the CPU only; _TestSet). `score_block`: checkpoints scored in one
    product (default: enough for 512 columns, at least 64; one core's sgemm runs at 71 GFLOP/s with 64 columns and
    106 with 512, on Incremental periodic's 16,991 x 1,800 test rows). `binary_features`: the
    features are 0/1 (standardisation's exact path).
    """
    models, n, features = train_x.shape
    device = train_x.device
    mean, scale = standardisation(train_x, binary=binary_features)
    mean, scale = mean.to(dtype), scale.to(dtype)
    classes_t = classes if isinstance(classes, torch.Tensor) else torch.tensor(classes, device=device)
    binary = len(classes) == 2
    problems = 1 if binary else len(classes)
    score_block = score_block or max(64, 512 // problems)
    # y in {-1, +1} per sample and problem
    if binary:
        signs = torch.where(train_y == classes_t[1], 1.0, -1.0).to(dtype)[:, None]
    else:
        signs = torch.where(train_y[:, None] == classes_t[None, :], 1.0, -1.0).to(dtype)
    w = torch.zeros((models, problems, features), dtype=dtype, device=device)
    b = torch.zeros((models, problems), dtype=dtype, device=device)
    wscale, shrink = 1.0, max(0.0, 1.0 - lr * alpha)
    schedule = checkpoint_schedule(n, chunk)
    accuracies = torch.empty((models, len(schedule)), dtype=torch.float64, device=device)
    block_w, block_b, block_index = [], [], []
    unique = device.type == "cpu" if unique is None else unique
    # each class's first training sample and each checkpoint's fitted samples, for tie_leaders (uploaded once)
    first_seen = torch.where(train_y[:, None] == classes_t[None, :], torch.arange(n, device=device)[:, None], n).amin(0)
    stops = torch.tensor([stop for _, stop in checkpoint_schedule(n, chunk)], device=device)
    tests = [_TestSet(test_x[m], test_y, classes_t, score_dtype, unique) for m in range(models)]

    def score():
        # logits of standardised features = (w / scale) . x + (b - (w / scale) . mean)
        ws = torch.stack(block_w, 1) / scale[:, None, None, :]  # (models, k, problems, features)
        bs = torch.stack(block_b, 1) - (ws * mean[:, None, None, :]).sum(-1)
        k, p = ws.shape[1], ws.shape[2]
        bs = bs.to(score_dtype)
        leaders = None if binary else tie_leaders(first_seen, stops[block_index[0]:block_index[-1] + 1])
        for m, test in enumerate(tests):
            products = test.rows @ test.weights(ws[m].reshape(k * p, features)).T  # (rows, k * p)
            if binary:  # w.x + b > 0 exactly where w.x > -b (a rounded sum is 0 only where the exact one is)
                correct = test.correct_binary(products > -bs[m][:, 0])
            else:
                logits = products.view(-1, k, p).transpose(0, 1) + bs[m][:, None]
                if leaders is not None:  # tied problems take the first one's logits: a tie goes to the first class
                    logits = logits.gather(-1, leaders[:, None, :].expand_as(logits))
                correct = test.correct(logits.argmax(-1))
            # the block's checkpoints are consecutive: a slice, not a list index (an upload: a host sync on a GPU)
            accuracies[m, block_index[0]:block_index[-1] + 1] = correct.double() / len(test_y)
        block_w.clear(), block_b.clear(), block_index.clear()

    for k, (start, stop) in enumerate(schedule):
        for i in range(start, stop):
            x = (train_x[:, i].to(dtype) - mean) / scale  # (models, features)
            p = torch.bmm(w, x[:, :, None])[..., 0] * wscale + b
            update = -lr * log_dloss(p, signs[i]).clamp(-1e12, 1e12)
            wscale *= shrink
            if wscale < 1e-9:  # sklearn's WeightVector.reset_wscale
                w.mul_(wscale)
                wscale = 1.0
            w.baddbmm_((update / wscale)[..., None], x[:, None, :])
            b = b + update
        block_w.append(w * wscale), block_b.append(b), block_index.append(k)
        if len(block_w) == score_block:
            score()
    if block_w:
        score()
    return accuracies


def n_checkpoints(n_samples: int, chunk: int = 8) -> int:
    return 1 + math.ceil(n_samples / chunk)
