"""Per-run model selection and success, and group statistics, on hand-made curves."""

import math

import pandas as pd
import pytest

from reprobench.arith.summary import group_statistics, summarise_run


def curve(steps, valid, test, sparsity):
    rows = []
    for s, v, t, w in zip(steps, valid, test, sparsity):
        rows += [(s, "valid", "mse", v), (s, "test", "mse", t), (s, "weights", "sparsity_error", w)]
    return pd.DataFrame(rows, columns=["step", "split", "metric", "value"])


STEPS = [0, 1000, 2000, 3000, 4000]


def test_faithful_window_and_first_crossing():
    c = curve(STEPS, [0.0, 5, 1, 3, 4], [9, 0.5, 0.05, 0.2, 0.3], [0.4, 0.3, 0.01, 0.2, 0.2])
    r = summarise_run(c, threshold=0.1, variant="faithful", window=4)  # step 0 (valid 0.0) is outside the window
    assert r["best_step"] == 2000 and r["solved"] and r["solved_at"] == 2000 and r["sparsity_at_best"] == 0.01
    r = summarise_run(c, threshold=0.1, variant="faithful", window=5)  # now step 0 wins, and it is not solved
    assert r["best_step"] == 0 and not r["solved"]
    r = summarise_run(c, threshold=0.1, variant="corrected", window=2)  # corrected: every step after 0
    assert r["best_step"] == 2000


def test_dip_below_threshold_without_success_and_nan():
    c = curve(STEPS, [5, 4, 3, 2, 1], [1, 0.01, 1, 1, 1], [0.1] * 5)
    r = summarise_run(c, threshold=0.1, variant="faithful", window=4)
    assert not r["solved"] and r["solved_at"] == 1000  # dipped, but the selected step fails
    c = curve(STEPS[:2], [5, float("nan")], [1, float("nan")], [0.1, float("nan")])
    r = summarise_run(c, threshold=0.1, variant="faithful", window=4)
    assert not r["solved"] and r["n_evals"] == 2


def test_group_statistics_counts_crashes_as_failures():
    base = dict(experiment="operations", model="nalu", operation="add", input_size=100, hidden_size=2, overlap=0.5,
                subset=0.25, interpolation="1_2", extrapolation="2_6", variant="faithful", threshold=0.1,
                iterations=10, scale="small")
    runs = pd.DataFrame([base | dict(solved=True, solved_at=1000.0 * (i + 1), sparsity_at_best=0.1 + 0.01 * i,
                                     crashed=False) for i in range(3)]
                        + [base | dict(solved=False, solved_at=math.nan, sparsity_at_best=math.nan, crashed=True)])
    g = group_statistics(runs).iloc[0]
    assert g["n_runs"] == 4 and g["n_solved"] == 3 and g["n_crashed"] == 1 and g["success"] == 0.75
    assert g["solved_at_median"] == 2000 and math.isclose(g["solved_at_mean"], 2000)
    assert g["sparsity_error"] < 0.08  # faithful: about half of the mean 0.11


def test_a_nan_on_an_evaluation_pass_ends_the_faithful_run_there():
    """NALU overflowing on the extrapolation set at step 1000 but recovering: the reference's NaN check on every
    forward pass ended the run at step 1000 (a failure); corrected judges the whole curve."""
    c = curve(STEPS, [5, 4, 3, 0.01, 0.02], [1, float("nan"), 1, 0.01, 0.01], [0.1] * 5)
    faithful = summarise_run(c, threshold=0.1, variant="faithful", window=2)
    assert faithful["nan_at"] == 1000 and faithful["n_evals"] == 2 and not faithful["solved"]
    assert math.isnan(faithful["solved_at"])
    corrected = summarise_run(c, threshold=0.1, variant="corrected", window=2)
    assert corrected["solved"] and corrected["best_step"] == 3000 and corrected["solved_at"] == 3000


def test_the_published_parameters_figure_has_nalu_at_zero_where_the_figure_draws_it():
    from reprobench.arith import published

    fig = published.parameters_figure()
    nalu = fig[fig["model"] == "nalu"]
    assert len(fig) == 51 + 25 and len(nalu) == 13 + 25
    for experiment, values in (("hidden_size", range(2, 11)), ("overlap", (0, 0.1, 0.25, 0.5, 0.75, 1)),
                               ("input_size", range(75, 301, 25))):
        got = nalu[nalu["experiment"] == experiment].set_index("value")["success_rate"]
        got = got[got.index.astype(float) >= min(values)]  # input sizes 4-50 are not at 0
        assert sorted(got.index, key=float) == [f"{v:g}" for v in values] and (got == 0).all(), experiment


@pytest.mark.parametrize("operation, rows", [("mul", 1), ("add", 0)])
def test_sweeps_are_compared_with_the_published_figure_only_for_its_operation(operation, rows):
    """The published figure is multiplication's: a sweep of another operation (the default scale's NAC+ on
    addition) gets no comparison row, a mul sweep at a published point gets one."""
    from reprobench.arith.render import comparison

    group = {"experiment": "input_size", "model": "nac_mul", "operation": operation, "input_size": 4,
             "hidden_size": 2, "overlap": 0.5, "subset": 0.25, "interpolation": "1_2", "extrapolation": "2_6",
             "variant": "faithful", "n_runs": 2, "scale": "small", "success": 0.5, "success_low": 0.1,
             "success_high": 0.9, "iterations": 15000}
    found = [r for r in comparison(pd.DataFrame([group])) if r["result"] == "parameters"]
    assert len(found) == rows
    if rows:
        assert found[0]["row"] == "input_size=4/NAC•"
        # 15,001 steps: the row says why it cannot be informative
        assert found[0]["not_informative_because"] == "15,001 steps of the paper's 5,000,001: its runs may solve later"
