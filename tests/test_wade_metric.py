"""WADE against hand-computed curves (specs/wade.md, 2.1 and 7)."""

import numpy as np
import pytest

from reprobench.wade import metric

SYN = metric.synthetic_convention()


def test_constant_chance_curve_scores_a_quarter():
    # a < 0.5 (a = 0 .. 0.499) is passed at the first checkpoint (T = 1): sum a = 124.75 of 499.5
    assert metric.wade([0.5] * 20, SYN) == pytest.approx(124.75 / 499.5, abs=1e-12)
    assert round(metric.wade([0.5] * 20, SYN), 4) == 0.2497


def test_perfect_curve_scores_one():
    assert metric.wade([1.0, 1.0, 1.0], SYN) == pytest.approx(1.0)


def test_short_rising_curve():
    # T = 1 for a < 0.5, 2 for a < 0.6, 3 for a < 0.9, 4 for a < 0.95, never above
    expected = (124.75 + 54.95 / 2 + 224.85 / 3 + 46.225 / 4) / 499.5
    assert metric.wade([0.5, 0.6, 0.9, 0.95], SYN) == pytest.approx(expected, abs=1e-12)
    assert round(metric.wade([0.5, 0.6, 0.9, 0.95], SYN), 4) == 0.4779


def test_strict_comparison_and_never_reached():
    conv = metric.Convention(np.array([0.5]), np.array([1.0]), strict=True)
    assert metric.wade([0.5, 0.5], conv) == 0.0  # never strictly above
    loose = metric.Convention(np.array([0.5]), np.array([1.0]), strict=False)
    assert metric.wade([0.4, 0.5], loose) == 0.5  # reached at the second checkpoint


def test_time_units():
    # reservoir readouts: checkpoint k > 0 counts k / (items_per_seq / 8) + 1
    t = metric.reference_reservoir_time(4, items_per_sequence=2.0)
    assert t.tolist() == [1.0, 5.0, 9.0, 13.0]
    conv = metric.Convention(np.array([0.5]), np.array([1.0]))
    assert metric.wade([0.0, 0.0, 0.9, 0.9], conv, time=t) == pytest.approx(1 / 9)


def test_imdb_and_human_conventions():
    imdb = metric.imdb_convention()
    assert len(imdb.thresholds) == 50 and imdb.weights.sum() == pytest.approx(1.0)
    assert imdb.weights[-1] / imdb.weights[0] == pytest.approx(10.0)
    human = metric.human_convention()
    # streak reached 1..5 after 2, 3, 4, 5, 6 tries: sum a/T / sum a
    streak = [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    expected = sum(a / t for a, t in zip([0.2, 0.4, 0.6, 0.8, 1.0], [2, 3, 4, 5, 6])) / 3.0
    assert metric.wade(streak, human) == pytest.approx(expected)


def test_imdb_linear_smoothing_is_the_recursive_ewma_of_the_reference():
    """y[t] = (9/11) y[t-1] + (2/11) x[t]: the reference's values, by hand (pandas' default adjust=True would
    give 0.500, 0.555, 0.613, 0.675)."""
    got = metric.ewma(np.array([0.5, 0.6, 0.7, 0.8]))
    expected = [0.5, 0.5 * 9 / 11 + 0.6 * 2 / 11]
    expected += [expected[-1] * 9 / 11 + 0.7 * 2 / 11]
    expected += [expected[-1] * 9 / 11 + 0.8 * 2 / 11]
    assert got == pytest.approx(expected, abs=1e-15)
    assert np.round(got, 3).tolist() == [0.5, 0.518, 0.551, 0.596]


def test_faithful_imdb_linear_max_accuracy_is_that_of_the_smoothed_curve(tmp_path):
    from reprobench.core import curves
    from reprobench.wade.summary import aggregate_imdb

    acc = [0.5, 0.9, 0.6, 0.6]
    for model in ("linear", "lstm"):
        rows = curves.series_rows(0, [("test", "accuracy", acc), ("train", "examples", [8, 408, 808, 1208])])
        curves.write_curve(rows, tmp_path / f"{model}.parquet", curves.provenance(
            paper="cisneros2022-wade", experiment="imdb", model=model, setting={"synthetic": True}, seed=0,
            scale="small", variant="all", config={}, device="cpu", wall_time_s=0, start="", end=""))
    runs, _ = aggregate_imdb([str(tmp_path / "linear.parquet"), str(tmp_path / "lstm.parquet")])
    best = runs.set_index(["model", "variant"])["max_accuracy"]
    assert best["linear", "faithful"] == pytest.approx(metric.ewma(np.array(acc)).max())  # 0.5727
    assert best["linear", "corrected"] == best["lstm", "faithful"] == 0.9
