"""Success thresholds against the reference (shared/reference/arith_thresholds.csv) and specs/arith.md 4.1."""

import pytest

from reprobench.arith import published
from reprobench.arith.thresholds import thresholds

KW = dict(samples=1_000_000, epsilon=1e-5, seed=0)


@pytest.mark.parametrize("operation", ["add", "sub", "mul", "div"])
def test_faithful_default_thresholds_match_the_published_ones(operation):
    reference = published.thresholds()[operation]
    ours = thresholds(operation, 100, 0.25, 0.5, (2.0, 6.0), **KW)["faithful"]
    assert ours == pytest.approx(reference, rel=0.02)


@pytest.mark.parametrize("n, subset, extrapolation, faithful, corrected", [
    (4, 0.25, (2.0, 6.0), 7.1e-8, 4.8e-7),          # R's off-by-one doubles the subsets at n = 4
    (100, 0.5, (2.0, 6.0), 0.00222, 0.00107),
    (100, 0.05, (2.0, 6.0), 0.0289, 0.021),
    (100, 0.25, (20.0, 40.0), 505, None),
    (300, 0.25, (2.0, 6.0), 12.97, None),
])
def test_sweep_thresholds_match_the_spec_resimulation(n, subset, extrapolation, faithful, corrected):
    values = thresholds("mul", n, subset, 0.5, extrapolation, **KW)
    assert values["faithful"] == pytest.approx(faithful, rel=0.03)
    if corrected is not None:
        assert values["corrected"] == pytest.approx(corrected, rel=0.03)


def test_threshold_is_reproducible_and_rejects_subsets_that_do_not_fit():
    a = thresholds("add", 10, 0.25, 0.5, (2.0, 6.0), samples=1000, epsilon=1e-5, seed=1)
    assert a == thresholds("add", 10, 0.25, 0.5, (2.0, 6.0), samples=1000, epsilon=1e-5, seed=1)
    with pytest.raises(ValueError, match="input size is 10"):
        thresholds("add", 10, 0.8, 0.0, (2.0, 6.0), samples=10, epsilon=1e-5, seed=0)
