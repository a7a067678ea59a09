"""The aggregate's switch curves and the figures' weight statistics on hand-made inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reprobench.calm import render, summary


def test_switch_curve_averages_the_events_ppl_at_switch_counts():
    # 6 fragments, classes A B A B A B; second half = fragments 3, 4, 5; events: fragment 4 (A seen in 3? no: 3 is B)
    # kept fragments: 3 (B, first in half: not an event), 4 (A, first: not), 5 (B: event, but last: skipped) -> none
    fragment = np.repeat(np.arange(6), 2)
    class_id = np.repeat([0, 1, 0, 1, 0, 1], 2)
    loss = np.arange(12, dtype=float)
    assert np.isnan(summary.switch_curve(loss, fragment, class_id, 6, k=3)).all()
    # 8 fragments A B A B A B A B: second half 4..7 = A B A B; events: 6 (A) with [12, 13, 14], 7 is last
    fragment = np.repeat(np.arange(8), [2, 2, 2, 2, 2, 2, 3, 2])
    class_id = np.repeat([0, 1, 0, 1, 0, 1, 0, 1], [2, 2, 2, 2, 2, 2, 3, 2])
    loss = np.arange(len(fragment), dtype=float)
    np.testing.assert_array_equal(summary.switch_curve(loss, fragment, class_id, 8, k=4), [12, 13, 14, np.nan])


def test_weight_autocorrelation_by_hand():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])
    weights = np.vstack([np.tile(a, (100, 1)), np.tile(a, (100, 1)), np.tile(b, (100, 1))])
    # windows (a, a): correlation 1; (a, b): -1; mean 0
    assert render.weight_autocorrelation(weights) == pytest.approx(0.0)
    assert render.weight_autocorrelation(weights[:200]) == pytest.approx(1.0)
    assert np.isnan(render.weight_autocorrelation(weights[:150]))


def test_class_correlation_uses_the_last_batches_of_each_fragment():
    cols = ["weight_00", "weight_01", "weight_02"]
    rows = []
    for fragment, (cls, early, late) in enumerate([(0, [9, 0, 0], [1, 2, 3]), (1, [0, 0, 9], [3, 2, 1]),
                                                   (2, [0, 9, 0], [2, 4, 6])]):
        for i in range(4):
            rows.append({"fragment": fragment, "class_id": cls, **dict(zip(cols, early if i < 2 else late))})
    corr, means = render.class_weight_correlation(pd.DataFrame(rows), cols, ["a", "b", "c"], window=2)
    np.testing.assert_allclose(means.loc[0].to_numpy(), [1, 2, 3])
    assert corr.loc["a", "b"] == pytest.approx(-1.0) and corr.loc["a", "c"] == pytest.approx(1.0)


def test_appendix_c_compares_the_transformer_at_the_paper_lambdas_only():
    rows = [dict(dataset="multilingual", model="transformer", variant="faithful", seed=s, split="dev", total_pp=p,
                 synthetic=False, scale="paper") for s, (lam, p) in enumerate([(10_000, 12.0), (10_000, 14.0),
                                                                                (200, 3.0), (200, 5.0)])]
    for r, lam in zip(rows, [10_000, 10_000, 200, 200]):
        r["lambda"] = lam
    rows.append(dict(rows[2], model="poe_pw_30", split="test", total_pp=99.0))  # a Table 1 run: not in it
    table = render.appendix_c_rows(pd.DataFrame(rows))
    assert [(r["lambda"], r["n_runs"], r["ppl_mean"]) for r in table] == [(200, 2, 4.0), (10_000, 2, 13.0)]
    assert table[1]["ppl_std"] == pytest.approx(2**0.5) and table[1]["published_best_ppl"] == 13.2
    assert np.isnan(table[0]["published_best_ppl"])  # Appendix C has no number at lambda 200
    compared = [r for r in render.comparison_rows(pd.DataFrame(rows)) if r["result"] == "appendix_c_transformer"]
    assert len(compared) == 1 and compared[0]["within"] and compared[0]["deviation"] == "C21"
