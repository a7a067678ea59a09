"""WADE: the weighted average of inverse times to reach accuracy thresholds (specs/wade.md, section 2).

    WADE = sum_a w(a) / T(a) / sum_a w(a)

where T(a) is the time at which the accuracy curve first exceeds a (infinity if it never does). One function
with every convention explicit, and the conventions the paper's tables used, by name.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Convention:
    thresholds: np.ndarray  # the accuracy levels a
    weights: np.ndarray  # w(a), same length
    strict: bool = True  # acc > a (the reference) or acc >= a

    def __post_init__(self):
        if len(self.thresholds) != len(self.weights):
            raise ValueError("thresholds and weights differ in length")


def ewma(x: np.ndarray, window: int = 10) -> np.ndarray:
    """The reference's smoothing of the IMDB Linear model's curve before WADE: the recursive exponential moving
    average y[0] = x[0], y[t] = (1 - a) y[t-1] + a x[t] with a = 2 / (window + 1), i.e. pandas'
    ewm(span=window, adjust=False) (pandas' default adjust=True weights early points differently)."""
    import pandas as pd

    return pd.Series(x, dtype=float).ewm(span=window, adjust=False).mean().to_numpy()


def synthetic_convention() -> Convention:
    """The synthetic tasks: a in {0, 0.001, ..., 0.999} (np.arange, as coded), w(a) = a, strict >."""
    a = np.arange(0, 1, 0.001)
    return Convention(a, a.copy(), strict=True)


def imdb_convention() -> Convention:
    """IMDB: a in {0.50, ..., 0.99}, weights linspace(1, 10, 50) normalised to sum 1, strict >."""
    a = np.arange(0.5, 1, 0.01)
    w = np.linspace(1, 10, len(a))
    return Convention(a, w / w.sum(), strict=True)


def human_convention() -> Convention:
    """The human game: a = streak / 5 in {0.2, ..., 1.0}, w(a) = a, reached when the streak is first >= 5a."""
    a = np.arange(1, 6) / 5
    return Convention(a, a.copy(), strict=False)


def first_crossing(curve, convention: Convention) -> np.ndarray:
    """Index of the first checkpoint whose value passes each threshold; -1 where none does."""
    curve = np.asarray(curve, dtype=float)
    passed = curve[None, :] > convention.thresholds[:, None] if convention.strict else \
        curve[None, :] >= convention.thresholds[:, None]
    index = passed.argmax(axis=1)
    index[~passed.any(axis=1)] = -1
    return index


def times(curve, convention: Convention, time=None) -> np.ndarray:
    """T(a): time[index] of the first crossing (default time: index + 1), infinity where never reached."""
    index = first_crossing(curve, convention)
    if time is None:
        time = np.arange(1, len(curve) + 1, dtype=float)
    time = np.asarray(time, dtype=float)
    if len(time) != len(curve):
        raise ValueError(f"{len(time)} time values for a curve of {len(curve)} checkpoints")
    return np.where(index >= 0, time[np.maximum(index, 0)], np.inf)


def wade(curve, convention: Convention, time=None) -> float:
    """WADE of one accuracy curve. `time[k]` is the time of checkpoint k (default k + 1)."""
    t = times(curve, convention, time)
    return float((convention.weights / t).sum() / convention.weights.sum())


def reference_reservoir_time(n_checkpoints: int, items_per_sequence: float, batch_size: int = 8) -> np.ndarray:
    """The reference's time for the reservoir readouts: checkpoint index k > 0 divided by
    items_per_sequence / batch_size (about the number of sequences seen), plus one; index 0 stays 1."""
    k = np.arange(n_checkpoints, dtype=float)
    k[1:] /= items_per_sequence / batch_size
    return k + 1
