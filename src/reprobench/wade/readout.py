"""The reservoir readout (specs/wade.md, 3.3): one pass of per-sample SGD logistic regression, one-vs-rest,
as sklearn's SGDClassifier(loss='log_loss', learning_rate='constant', eta0=1e-3, alpha=1e-3) does it, for
many reservoirs (CA rules) at once, with the test set scored at every checkpoint in batched matrix products.

Per sample, with p = w.x + b and y in {-1, +1} for each one-vs-rest problem (a single problem, class 1 vs
class 0, for two classes): dloss = -y / (1 + exp(y p)); w <- (1 - eta alpha) w - eta dloss x; b <- b - eta dloss.
Features are standardised with the training set's mean and standard deviation (sklearn's StandardScaler:
population std, 1 where it is 0); the scaling is folded into the weights for scoring, so raw binary features
never need a float copy. Checkpoints: after the first sample alone, then after every `chunk` samples starting
again at sample 0 (so sample 0 is seen twice), as the reference's partial_fit calls.
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


def fit_and_score(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor,
                  classes: list[int] | torch.Tensor, lr: float = 1e-3, alpha: float = 1e-3, chunk: int = 8,
                  score_block: int = 64, dtype=torch.float64, score_dtype=torch.float32) -> torch.Tensor:
    """Test accuracy at every checkpoint, (models, checkpoints).

    train_x (models, n, features) and test_x (models, m, features): any numeric dtype (binary uint8 is fine);
    train_y (n,), test_y (m,): class labels shared by all models; `classes`: the labels seen in training (a list, or
    a tensor already on the device, which saves an upload: a host sync on a GPU).
    The SGD runs in `dtype`; checkpoints are scored in `score_dtype` (float32 holds 0/1 features exactly; a
    logit within float32 rounding of 0 may then be classified differently than in float64).
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
    shrink = 1.0 - lr * alpha
    schedule = checkpoint_schedule(n, chunk)
    accuracies = torch.empty((models, len(schedule)), dtype=torch.float64, device=device)
    block_w, block_b, block_index = [], [], []
    test_features = test_x.to(score_dtype)  # once, not per block

    def score():
        # logits of standardised features = (w / scale) . x + (b - (w / scale) . mean)
        ws = torch.stack(block_w, 1) / scale[:, None, None, :]  # (models, k, problems, features)
        bs = torch.stack(block_b, 1) - (ws * mean[:, None, None, :]).sum(-1)
        k, p = ws.shape[1], ws.shape[2]
        logits = torch.bmm(test_features, ws.reshape(models, k * p, features).transpose(1, 2).to(score_dtype))
        logits = logits.view(models, -1, k, p).transpose(1, 2) + bs[:, :, None, :].to(score_dtype)
        if binary:
            predicted = torch.where(logits[..., 0] > 0, classes_t[1], classes_t[0])
        else:
            predicted = classes_t[logits.argmax(-1)]
        # the block's checkpoints are consecutive: a slice, not a list index (uploaded, a host sync on a GPU)
        accuracies[:, block_index[0]:block_index[-1] + 1] = (predicted == test_y[None, None, :]).double().mean(-1)
        block_w.clear(), block_b.clear(), block_index.clear()

    for k, (start, stop) in enumerate(schedule):
        for i in range(start, stop):
            x = (train_x[:, i].to(dtype) - mean) / scale  # (models, features)
            p = torch.bmm(w, x[:, :, None])[..., 0] + b
            z = p * signs[i]
            dloss = -signs[i] / (torch.exp(z) + 1)  # log loss; exact for |z| large as well
            update = -lr * dloss.clamp(-1e12, 1e12)
            w = w * shrink + update[..., None] * x[:, None, :]
            b = b + update
        block_w.append(w), block_b.append(b), block_index.append(k)
        if len(block_w) == score_block:
            score()
    if block_w:
        score()
    return accuracies


def n_checkpoints(n_samples: int, chunk: int = 8) -> int:
    return 1 + math.ceil(n_samples / chunk)
