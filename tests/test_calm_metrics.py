"""CALM's metrics on hand-made logs whose values are worked out by hand below."""

import math

import numpy as np
import pytest

from reprobench.calm.metrics import compute_metrics


def log(fragments):
    """Per-batch arrays from [(fragment, class, [losses])]."""
    loss = [x for _, _, losses in fragments for x in losses]
    fragment = [f for f, _, losses in fragments for _ in losses]
    class_id = [c for _, c, losses in fragments for _ in losses]
    return np.array(loss, float), np.array(fragment), np.array(class_id)


def two_class_log():
    """100 fragments alternating classes 0, 1 (fragment i has class i % 2).

    First half: one batch of loss 50 each (it would trip the inf guard if it counted).
    Second half: class 0 fragments [3, 1] (mean 2), class 1 fragments [4, 2] (mean 3), except
      - fragment 60 (class 0): [5, 5, 5], never below the previous class-0 mean 2: rec = its length 3, sw = 5;
        it makes the reference of fragment 62 equal to 5, where the first batch (3) is below: rec = 0, sw = 2;
      - fragment 71 (class 1): ten 6s then two 0s: longer than k = 10, sw = 6, first below 3 at index 10, rec 10,
        mean 60 / 12 = 5, so fragment 73 has reference 5: rec 0, sw = 3.
    A regular fragment (shorter than k: sw is the mean of both batches) has sw 2 or 3 and rec 1.
    """
    fragments = [(i, i % 2, [50.0]) for i in range(50)]
    special = {60: [5.0, 5.0, 5.0], 71: [6.0] * 10 + [0.0, 0.0]}
    fragments += [(i, i % 2, special.get(i, [[3.0, 1.0], [4.0, 2.0]][i % 2])) for i in range(50, 100)]
    return log(fragments)


def test_hand_made_two_class_log():
    out = compute_metrics(*two_class_log(), class_names=["news", "wiki"])
    # kept rows: class 0: 24 x [3, 1] + [5, 5, 5] = 51 rows, sum 111; class 1: 24 x [4, 2] + fragment 71 = 60 rows,
    # sum 144 + 60 = 204
    assert out["loss"] == pytest.approx(315 / 111)
    assert out["total_pp"] == pytest.approx(math.exp(315 / 111))
    assert out["loss_news"] == pytest.approx(111 / 51) and out["loss_wiki"] == pytest.approx(204 / 60)
    assert out["total_pp_news"] == pytest.approx(math.exp(111 / 51))
    assert out["total_pp_wiki"] == pytest.approx(math.exp(3.4))
    # events: fragments 52..98 (50 and 51 are the classes' first in the second half, 99 is the last): 47
    assert out["n_events"] == 47
    # class 0: 24 events, sw 22 x 2 + 5 + 2 = 51, rec 22 x 1 + 3 + 0 = 25
    # class 1: 23 events, sw 21 x 3 + 6 + 3 = 72, rec 21 x 1 + 10 + 0 = 31
    assert out["ppl@sw_news"] == pytest.approx(math.exp(51 / 24))
    assert out["ppl@sw_wiki"] == pytest.approx(math.exp(72 / 23))
    assert out["ppl@sw"] == pytest.approx(math.exp(123 / 47))
    assert out["rec_news"] == pytest.approx(25 / 24) and out["rec_wiki"] == pytest.approx(31 / 23)
    assert out["rec"] == pytest.approx(56 / 47)
    assert list(out)[:4] == ["loss", "total_pp", "ppl@sw", "rec"]


def test_keys_default_to_class_ids():
    out = compute_metrics(*two_class_log())
    assert {"loss_0", "total_pp_1", "ppl@sw_0", "rec_1"} <= set(out)


def test_a_smaller_k():
    # k = 1: sw is the first batch. Class 0: 22 x 3 + 5 + 3 = 74; class 1: 21 x 4 + 6 + 4 = 94
    out = compute_metrics(*two_class_log(), k=1)
    assert out["ppl@sw_0"] == pytest.approx(math.exp(74 / 24)) and out["ppl@sw"] == pytest.approx(math.exp(168 / 47))
    assert out["rec"] == pytest.approx(56 / 47)


def test_per_class_inf_guard_tests_the_overall_loss():
    # second half: class 0 at loss 1, class 1 at loss 45, one batch per fragment: overall mean 23 >= 20
    fragments = [(i, i % 2, [1.0 if i % 2 == 0 else 45.0]) for i in range(50, 100)]
    out = compute_metrics(*log(fragments))
    assert out["loss"] == pytest.approx(23) and out["total_pp"] == math.inf
    assert out["loss_0"] == 1 and out["total_pp_0"] == math.inf  # the code's bug, kept
    # overall below 20 but one class above: that class gets exp of its mean, no guard
    fragments = [(i, i % 2, [0.0] * 9 if i % 2 == 0 else [30.0]) for i in range(50, 100)]
    out = compute_metrics(*log(fragments))
    assert out["loss"] == pytest.approx(3) and out["total_pp_1"] == pytest.approx(math.exp(30))
    # every batch equal: rec counts the whole fragment (1 batch, never strictly below its reference)
    assert out["rec_1"] == 1 and out["rec_0"] == 9 and out["n_events"] == 47


def test_empty_results_as_coded():
    assert compute_metrics([], [], []) == {}  # nothing kept
    assert compute_metrics(*log([(i, i % 2, [1.0]) for i in range(99)])) == {}  # last fragment 98 < 99
    assert compute_metrics(*log([(i, i % 3, [1.0]) for i in range(99)])) == {}  # 3 classes x 33
    assert compute_metrics(*log([(i, 0, [1.0]) for i in range(40)])) == {}  # nothing in the second half
    assert compute_metrics(*log([(i, i % 3, [1.0]) for i in range(99)]), n_fragments=99) != {}


def test_std_autocorr_and_a_log_without_events():
    # n_fragments = 4: fragments 2 and 3 kept; class 0 [1, 3, 2, 4], class 1 [2, 4, 3]
    out = compute_metrics(*log([(0, 0, [9.0]), (1, 1, [9.0]), (2, 0, [1.0, 3.0, 2.0, 4.0]), (3, 1, [2.0, 4.0, 3.0])]),
                          n_fragments=4)
    assert out["n_events"] == 0 and math.isnan(out["ppl@sw"]) and math.isnan(out["rec"])
    assert math.isnan(out["ppl@sw_0"]) and math.isnan(out["rec_1"])
    # std, np.std's ddof 0 (display_results.py L224): class 0 squared deviations 2.25 + .25 + .25 + 2.25 = 5 over 4;
    # class 1 1 + 1 + 0 = 2 over 3
    assert out["std"] == pytest.approx((math.sqrt(5 / 4) + math.sqrt(2 / 3)) / 2)
    # corrcoef(x[1:], x[:-1]): class 0 ([3, 2, 4], [1, 3, 2]): deviations (0, -1, 1), (-1, 1, 0): -1 / 2;
    # class 1 ([4, 3], [2, 4]): -1
    assert out["autocorr"] == pytest.approx(-0.75)


def test_a_class_without_autocorrelation_makes_the_mean_nan():
    # class 1's kept losses are constant: its corrcoef is nan, and np.mean over the classes is nan (the reference's)
    out = compute_metrics(*log([(0, 0, [9.0]), (1, 1, [9.0]), (2, 0, [1.0, 3.0, 2.0, 4.0]), (3, 1, [2.0, 2.0, 2.0])]),
                          n_fragments=4)
    assert math.isnan(out["autocorr"])
    assert out["std"] == pytest.approx(math.sqrt(5 / 4) / 2)  # class 1's std is 0 and counts
    # two kept batches: corrcoef of one value with one value is nan too
    out = compute_metrics(*log([(0, 0, [9.0]), (1, 0, [1.0, 2.0])]), n_fragments=2)
    assert math.isnan(out["autocorr"]) and out["std"] == 0.5


def test_std_and_autocorr_are_numpys_as_the_reference_calls_them():
    x = np.array([0.3, 1.2, 0.7, 2.5, 1.1, 0.4, 0.9])
    out = compute_metrics(*log([(0, 0, [9.0]), (1, 0, x.tolist())]), n_fragments=2)
    assert out["autocorr"] == float(np.corrcoef(x[1:], x[:-1])[0, 1])
    assert out["std"] == float(np.std(x))


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="equally long"):
        compute_metrics([1.0, 2.0], [0], [0])
    with pytest.raises(ValueError, match="non-decreasing"):
        compute_metrics([1.0, 2.0], [1, 0], [0, 0])
    with pytest.raises(ValueError, match="class_names"):
        compute_metrics(*log([(1, 2, [1.0])]), n_fragments=2, class_names=["a", "b"])
