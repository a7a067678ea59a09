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
scored once and counted per label; the problems of classes not yet seen tie, and a tie goes to the first class, as
in sklearn (tie_leaders).
"""

from __future__ import annotations

import math

import torch


def standardisation(train_x: torch.Tensor, max_elements: int = 2**28):
    """(mean, scale) over samples: train_x (models, samples, features) -> (models, features) each.

    A few models at a time, so that the float64 copy stays under `max_elements` (2 GiB; Incremental periodic's 64
    rules would need 63 GiB at once). Each model's reduction is the same whichever models share the call."""
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
        self.rows = rows.to(dtype)
        self.counts_by_class = counts.T.contiguous()  # (classes, rows)

    def correct(self, predicted: torch.Tensor) -> torch.Tensor:
        """predicted (checkpoints, rows): class indices -> correctly classified items per checkpoint."""
        return self.counts_by_class.gather(0, predicted).sum(-1)


def fit_and_score(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor,
                  classes: list[int] | torch.Tensor, lr: float = 1e-3, alpha: float = 1e-3, chunk: int = 8,
                  score_block: int = 64, dtype=torch.float64, score_dtype=torch.float32,
                  unique: bool | None = None) -> torch.Tensor:
    """Test accuracy at every checkpoint, (models, checkpoints).

    train_x (models, n, features) and test_x (models, m, features): any numeric dtype (binary uint8 is fine);
    train_y (n,), test_y (m,): class labels shared by all models; `classes`: the labels seen in training (a list, or
    a tensor already on the device, which saves an upload: a host sync on a GPU).
    The SGD runs in `dtype`; checkpoints are scored in `score_dtype` (float32 holds 0/1 features exactly; a
    logit within float32 rounding of 0 may then be classified differently than in float64). `unique`: score each
    distinct test feature vector once (default: on the CPU only; _TestSet).
    """
    models, n, features = train_x.shape
    device = train_x.device
    mean, scale = standardisation(train_x)
    mean, scale = mean.to(dtype), scale.to(dtype)
    classes_t = classes if isinstance(classes, torch.Tensor) else torch.tensor(classes, device=device)
    binary = len(classes) == 2
    problems = 1 if binary else len(classes)
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
        ws, bs = ws.to(score_dtype), bs.to(score_dtype)
        leaders = None if binary else tie_leaders(first_seen, stops[block_index[0]:block_index[-1] + 1])
        for m, test in enumerate(tests):
            logits = (test.rows @ ws[m].reshape(k * p, features).T).view(-1, k, p).transpose(0, 1) + bs[m][:, None]
            if leaders is not None:  # tied problems take the first one's logits: a tie goes to the first class
                logits = logits.gather(-1, leaders[:, None, :].expand_as(logits))
            predicted = (logits[..., 0] > 0).long() if binary else logits.argmax(-1)  # (k, rows): class indices
            # the block's checkpoints are consecutive: a slice, not a list index (an upload: a host sync on a GPU)
            accuracies[m, block_index[0]:block_index[-1] + 1] = test.correct(predicted).double() / len(test_y)
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
