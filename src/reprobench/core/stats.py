"""Confidence intervals every benchmark can use: Wilson for proportions, Student t for means.

Estimators that belong to one paper's analysis live in that benchmark (e.g. arith.estimators).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Estimate:
    mean: float
    low: float
    high: float
    n: int
    method: str  # 'wilson', 'gamma-profile', 'beta-profile', 't-interval', 'single', 'empty'


def wilson(successes: int, n: int, confidence: float = 0.95) -> Estimate:
    """Wilson score interval without continuity correction (R binom::binom.confint, method 'wilson')."""
    if n <= 0:
        return Estimate(math.nan, math.nan, math.nan, 0, "empty")
    z = stats.norm.ppf(0.5 + confidence / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exact bounds at the ends, not round-off
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Estimate(p, float(low), float(high), n, "wilson")


def t_interval(x, lower: float = 0.0) -> Estimate:
    """mean +- t(0.975, n-1) sd / sqrt(n), clamped below at `lower` (the R fallback)."""
    x = np.asarray(x, dtype=float)
    if len(x) == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, "empty")
    if len(x) == 1:
        return Estimate(float(x[0]), math.nan, math.nan, 1, "single")
    half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    m = float(x.mean())
    return Estimate(m, max(lower, m - half), m + half, len(x), "t-interval")
