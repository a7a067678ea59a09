"""Success thresholds: the extrapolation MSE of a nearly perfect solution (specs/arith.md, section 4.1).

The first layer is perfect but for a deterministic shift of eps on every weight (0 -> +eps, 1 -> 1 - eps);
the operation is applied exactly; the threshold is the mean squared difference from the exact target over
N samples of the extrapolation range. Only the subset sums matter, so the N x n matrix product reduces to
a_eps = a + eps * (total - 2 a), computed in float64 over chunks of rows.

Variants:
- faithful: the R script's subsets, which have S + 1 elements and O + 1 overlap (its off-by-one);
- corrected: the task's own S and O.
"""

from __future__ import annotations

import json
import math

import numpy as np

from reprobench.arith.data import apply_operation, subset_sizes
from reprobench.core.errors import ResultsFileError
from reprobench.core.progress import Progress


def simulated_threshold(operation: str, input_size: int, subset_sizes_: tuple[int, int], low: float, high: float,
                        samples: int = 1_000_000, epsilon: float = 1e-5, seed: int = 0,
                        chunk: int = 50_000) -> float:
    s, o = subset_sizes_
    if 2 * s - o > input_size:
        raise ValueError(f"subsets of {s} with overlap {o} do not fit input size {input_size}")
    rng = np.random.default_rng(seed)
    total_sq, done = 0.0, 0
    bar = Progress(samples, f"threshold {operation} n={input_size} S={s} O={o}")
    while done < samples:
        rows = min(chunk, samples - done)
        x = rng.uniform(low, high, size=(rows, input_size))
        whole = x.sum(1)
        a = x[:, :s].sum(1)
        b = x[:, s - o:2 * s - o].sum(1)
        exact = apply_operation(operation, a, b)
        near = apply_operation(operation, a + epsilon * (whole - 2 * a), b + epsilon * (whole - 2 * b))
        total_sq += float(((near - exact) ** 2).sum())
        done += rows
        bar.update(rows)
    bar.close()
    return total_sq / samples


def thresholds(operation: str, input_size: int, subset: float, overlap: float, extrapolation,
               samples: int, epsilon: float, seed: int) -> dict:
    """{'faithful': ..., 'corrected': ...} for one dataset setting."""
    s, o = subset_sizes(input_size, subset, overlap)
    low, high = extrapolation
    faithful_sizes = (s + 1, o + 1)  # R: a = 1..(1+S), b = (1+S-O)..(1+2S-O), inclusive ranges
    if 2 * (s + 1) - (o + 1) > input_size:  # cannot happen for the paper's grid; keep R's meaning otherwise
        faithful_sizes = (s, o)
    kw = dict(samples=samples, epsilon=epsilon, seed=seed)
    return {"faithful": simulated_threshold(operation, input_size, faithful_sizes, low, high, **kw),
            "corrected": simulated_threshold(operation, input_size, (s, o), low, high, **kw)}


def read(path: str) -> dict:
    """{'faithful': ..., 'corrected': ...} from a threshold file written by `reprobench arith prepare-thresholds`;
    a clear error names a missing, corrupt or foreign file."""

    try:
        with open(path) as fh:
            values = json.load(fh)["thresholds"]
        out = {variant: float(values[variant]) for variant in ("faithful", "corrected")}
    except FileNotFoundError:
        raise ResultsFileError(path, "does not exist") from None
    except (ValueError, KeyError, TypeError) as exc:  # not JSON, no 'thresholds', a variant missing or not a number
        raise ResultsFileError(path, f"is not a threshold file ({type(exc).__name__}: {exc})") from None
    if not all(math.isfinite(v) and v > 0 for v in out.values()):
        raise ResultsFileError(path, f"holds thresholds {out}; each must be a positive number")
    return out
