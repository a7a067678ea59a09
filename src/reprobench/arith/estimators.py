"""The arith paper's estimators: gamma and beta means with profile-likelihood intervals.

They follow the R code behind the arithmetic-extrapolation paper (specs/arith.md, section 4): a gamma and a beta
distribution parameterised by mean and dispersion, fitted by maximum likelihood, with a 95% profile-likelihood
interval for the mean and a t-interval fallback (core.stats).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special, stats

from reprobench.core.stats import Estimate, t_interval

CHI2_95 = stats.chi2.ppf(0.95, df=1) / 2  # drop in log-likelihood at the 95% profile bound


def _profile_interval(nll_profile, mle: float, lo_bound: float, hi_bound: float) -> tuple[float, float]:
    """Where the profile negative log-likelihood rises CHI2_95 above its minimum, on each side of the MLE."""
    target = nll_profile(mle) + CHI2_95

    def side(bound):
        if nll_profile(bound) < target:
            return bound
        return optimize.brentq(lambda m: nll_profile(m) - target, min(mle, bound), max(mle, bound),
                               xtol=1e-12 * max(1.0, abs(mle)))

    return side(lo_bound), side(hi_bound)


def gamma_mean(x) -> Estimate:
    """Gamma fit with mean mu and variance s2 (shape mu^2/s2, rate mu/s2), profile CI for mu.

    The MLE of the mean of a gamma distribution is the sample mean; the fit is done on the data divided
    by its mean so that the optimiser is well scaled (the R fit was not, see DEVIATIONS.md).
    """
    x = np.asarray(x, dtype=float)
    if len(x) < 2 or x.std(ddof=1) <= 1e-5 or np.any(x <= 0):
        return t_interval(x)
    scale = x.mean()
    y = x / scale
    n, sum_y, sum_log_y = len(y), y.sum(), np.log(y).sum()

    def nll(mu, log_shape):
        k = math.exp(log_shape)  # shape; the variance is mu^2 / k
        return -(n * (k * math.log(k / mu) - special.gammaln(k)) + (k - 1) * sum_log_y - k / mu * sum_y)

    def profile(mu):
        res = optimize.minimize_scalar(lambda s: nll(mu, s), bounds=(-20, 20), method="bounded",
                                       options={"xatol": 1e-10})
        return res.fun

    mle = 1.0  # sample mean of y, exactly
    low, high = _profile_interval(profile, mle, 1e-6, 50.0)
    return Estimate(float(scale), float(low * scale), float(high * scale), n, "gamma-profile")


def beta_mean(x, faithful: bool) -> Estimate:
    """Beta fit on [0, 0.5] with mean mu and precision v, profile CI for mu.

    The R code meant the density of 2x under Beta(2 mu v, (1 - 2 mu) v), but evaluated it at x.
    `faithful=True` keeps that bug (the fitted mu is then about half the mean of x), `False` fixes it.
    Values are clipped into (0, 0.5) as R did (sparsity errors of unconstrained weights exceed 0.5).
    """
    x = np.clip(np.asarray(x, dtype=float), 1e-16, 0.5 - 1e-16)
    if len(x) <= 1 or x.std(ddof=1) <= 1e-10:
        return t_interval(x)
    y = x if faithful else 2 * x

    def nll(mu, log_v):
        v = math.exp(log_v)
        a, b = 2 * mu * v, (1 - 2 * mu) * v
        return -np.clip(stats.beta.logpdf(y, a, b), -1e6, 1e6).sum()

    def best_v(mu):
        res = optimize.minimize_scalar(lambda s: nll(mu, s), bounds=(math.log(1e-5), 30), method="bounded",
                                       options={"xatol": 1e-10})
        return res.fun

    eps = 1e-9
    res = optimize.minimize_scalar(best_v, bounds=(eps, 0.5 - eps), method="bounded", options={"xatol": 1e-12})
    if not res.success or not np.isfinite(res.fun):
        return t_interval(x)
    mle = float(res.x)
    low, high = _profile_interval(best_v, mle, eps, 0.5 - eps)
    return Estimate(mle, float(low), float(high), len(x), "beta-profile")
