"""The arith paper's estimators against numbers worked out independently (specs/arith.md, section 4;
brute-force profiles)."""

import numpy as np
import pytest
from scipy import stats as sps

from reprobench.arith import estimators

CUT = sps.chi2.ppf(0.95, 1) / 2


def _profile_interval(nll, mus, nuisance):
    """The 95% profile-likelihood interval by brute force: for each mean, the minimum over a dense grid of the
    nuisance parameter; the interval is the means within the chi-square cut of the best."""
    prof = np.array([min(nll(m, v) for v in nuisance) for m in mus])
    inside = mus[prof <= prof.min() + CUT]
    return inside.min(), inside.max()


def test_gamma_mean_is_the_sample_mean_with_a_profile_interval():
    x = np.array([2.1e6, 3.4e6, 2.7e6, 4.0e6, 1.9e6, 3.1e6, 2.2e6, 5.3e6, 2.9e6, 3.6e6])
    e = estimators.gamma_mean(x)
    assert e.mean == pytest.approx(x.mean())
    assert e.low < x.mean() < e.high

    def nll(mu, k):  # shape k, mean mu
        return -sps.gamma.logpdf(x, a=k, scale=mu / k).sum()

    mus = np.linspace(2.0e6, 5.0e6, 601)
    low, high = _profile_interval(nll, mus, np.exp(np.linspace(np.log(0.5), np.log(200), 800)))
    assert e.low == pytest.approx(low, rel=3e-3)
    assert e.high == pytest.approx(high, rel=3e-3)


def test_gamma_falls_back_to_a_t_interval():
    one = estimators.gamma_mean([5e5])
    assert one.mean == 5e5 and np.isnan(one.low) and one.method == "single"
    same = estimators.gamma_mean([5e5, 5e5, 5e5])
    assert same.method == "t-interval" and same.low == same.high == 5e5


def test_beta_corrected_fits_the_mean_and_faithful_halves_it():
    rng = np.random.default_rng(3)
    x = 0.5 * rng.beta(3.0, 9.0, size=60)  # mean 0.125 on [0, 0.5]
    fixed = estimators.beta_mean(x, faithful=False)
    buggy = estimators.beta_mean(x, faithful=True)
    assert fixed.mean == pytest.approx(x.mean(), rel=0.03)
    assert buggy.mean == pytest.approx(fixed.mean / 2, rel=0.05)  # specs 4.4: the published mu ~ mean / 2

    def nll(mu, v):  # density of 2x under Beta(2 mu v, (1 - 2 mu) v)
        return -sps.beta.logpdf(2 * x, 2 * mu * v, (1 - 2 * mu) * v).sum()

    mus = np.linspace(0.09, 0.17, 401)
    low, high = _profile_interval(nll, mus, np.exp(np.linspace(np.log(2), np.log(100), 600)))
    assert fixed.low == pytest.approx(low, abs=4e-4)
    assert fixed.high == pytest.approx(high, abs=4e-4)


def test_beta_clips_values_above_one_half():
    e = estimators.beta_mean([0.81, 0.6, 0.45, 0.4], faithful=False)
    assert e.high <= 0.5
