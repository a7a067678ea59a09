"""Shared intervals against reference values (R binom::binom.confint, method wilson)."""

from reprobench.core import stats


def test_wilson_reference_values():
    e = stats.wilson(31, 100)
    assert (round(e.low, 4), round(e.high, 4)) == (0.2278, 0.4063)
    e = stats.wilson(0, 100)
    assert e.low == 0 and round(e.high, 4) == 0.0370
    e = stats.wilson(14, 100)
    assert (round(e.low, 4), round(e.high, 4)) == (0.0853, 0.2214)
    assert stats.wilson(100, 100).high == 1.0


def test_t_interval_against_its_formula():
    e = stats.t_interval([1.0, 2.0, 3.0, 4.0])  # mean 2.5, sd 1.2910, t(0.975, 3) = 3.1824
    assert e.mean == 2.5 and round(e.low, 4) == 0.4457 and round(e.high, 4) == 4.5543
    assert stats.t_interval([5.0]).method == "single" and stats.t_interval([]).method == "empty"
