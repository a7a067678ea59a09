"""The vectorised readout against sklearn's SGDClassifier driven as the reference drove it."""

import numpy as np
import pytest
import torch

from reprobench.wade import readout

sklearn = pytest.importorskip("sklearn.linear_model")
preprocessing = pytest.importorskip("sklearn.preprocessing")


def reference_curve(train_x, train_y, test_x, test_y):
    """partial_fit on the first sample, then on chunks of 8 from sample 0; score after each call."""
    scaler = preprocessing.StandardScaler().fit(train_x)
    xs, xt = scaler.transform(train_x), scaler.transform(test_x)
    clf = sklearn.SGDClassifier(loss="log_loss", learning_rate="constant", eta0=1e-3, alpha=1e-3, shuffle=False)
    classes = np.unique(train_y)
    curve = []
    for start, stop in readout.checkpoint_schedule(len(train_x)):
        clf.partial_fit(xs[start:stop], train_y[start:stop], classes=classes)
        curve.append(clf.score(xt, test_y))
    return np.array(curve)


@pytest.mark.parametrize("n_classes,binary_features", [(2, False), (4, False), (2, True), (4, True)])
def test_matches_sklearn_for_every_model(n_classes, binary_features):
    rng = np.random.default_rng(n_classes)
    models, n, m, f = 3, 61, 40, 30
    centres = rng.normal(size=(n_classes, f))
    ytr, yte = rng.integers(0, n_classes, n), rng.integers(0, n_classes, m)
    xtr = (rng.random((models, n, f)) < 1 / (1 + np.exp(-centres[ytr]))).astype(np.uint8)  # binary features
    xte = (rng.random((models, m, f)) < 1 / (1 + np.exp(-centres[yte]))).astype(np.uint8)
    xtr[:, :, 0] = 1  # a constant feature: scale 1, as sklearn
    ours = readout.fit_and_score(torch.tensor(xtr), torch.tensor(ytr), torch.tensor(xte), torch.tensor(yte),
                                 classes=list(range(n_classes)), score_block=5, score_dtype=torch.float64,
                                 binary_features=binary_features)
    assert ours.shape == (models, readout.n_checkpoints(n))
    for r in range(models):
        np.testing.assert_allclose(ours[r].numpy(), reference_curve(xtr[r], ytr, xte[r], yte), atol=1e-12)


def test_binary_standardisation_is_the_exact_count_formula():
    """Worked by hand: a column with 3 ones in 4 samples has mean 3/4 and population std sqrt(3 * 1) / 4; a constant
    column gets scale 1 (sklearn). Against the float64 path: equal means, scales within 1e-13 relative."""
    x = torch.tensor([[[1, 0, 1], [1, 0, 1], [1, 1, 1], [0, 0, 1]]], dtype=torch.uint8)
    mean, scale = readout.standardisation(x, binary=True)
    assert mean.tolist() == [[0.75, 0.25, 1.0]]
    assert scale.tolist() == [[np.sqrt(3) / 4, np.sqrt(3) / 4, 1.0]]
    big = (torch.rand((3, 70_000, 20), generator=torch.Generator().manual_seed(1)) < 0.3).to(torch.uint8)
    (m1, s1), (m2, s2) = readout.standardisation(big, binary=True), readout.standardisation(big)
    assert torch.equal(m1, m2)  # sums of 0/1 are exact in float64 too
    assert ((s1 - s2).abs() / s2).max() < 1e-13
    counts = big.sum(1)  # int64: the int16 partial sums across the 2^15 boundary must give the same counts
    assert torch.equal(s1, (counts * (70_000 - counts)).double().div(70_000**2).sqrt())


@pytest.mark.parametrize("n_classes", [2, 3])
def test_the_scoring_block_changes_no_bit(n_classes):
    """How many checkpoints share a product (and, for two classes, the comparison w.x > -b in place of w.x + b > 0)
    changes no accuracy, in float32 scoring too."""
    rng = np.random.default_rng(3)
    xtr = torch.tensor(rng.integers(0, 2, (2, 400, 60), dtype=np.uint8))
    ytr = torch.tensor(rng.integers(0, n_classes, 400))
    xte = torch.tensor(rng.integers(0, 2, (2, 150, 60), dtype=np.uint8))
    yte = torch.tensor(rng.integers(0, n_classes, 150))
    curves = [readout.fit_and_score(xtr, ytr, xte, yte, list(range(n_classes)), score_block=block)
              for block in (1, 7, None)]
    assert torch.equal(curves[0], curves[1]) and torch.equal(curves[0], curves[2])


def test_checkpoint_schedule_sees_sample_zero_twice():
    assert readout.checkpoint_schedule(17) == [(0, 1), (0, 8), (8, 16), (16, 17)]
    assert readout.n_checkpoints(17) == 4


def test_float32_scoring_agrees_with_float64():
    rng = np.random.default_rng(7)
    xtr = torch.tensor(rng.integers(0, 2, (2, 300, 50), dtype=np.uint8))
    ytr = torch.tensor(rng.integers(0, 3, 300))
    xte = torch.tensor(rng.integers(0, 2, (2, 100, 50), dtype=np.uint8))
    yte = torch.tensor(rng.integers(0, 3, 100))
    a = readout.fit_and_score(xtr, ytr, xte, yte, [0, 1, 2], score_dtype=torch.float64)
    b = readout.fit_and_score(xtr, ytr, xte, yte, [0, 1, 2], score_dtype=torch.float32)
    assert (a - b).abs().max() <= 0.01  # at most one borderline test item of 100 flips


def test_log_dloss_is_sklearn_logs_with_its_shortcuts():
    """sklearn < 1.3's Log.dloss (the reference's `loss="log"`), worked by hand: -y / (exp(y p) + 1), but exactly -y
    below y p = -18 and exp(-y p) * -y above 18."""
    p = torch.tensor([-5.0, -20.0, 20.0, 0.0], dtype=torch.float64)
    y = torch.tensor([1.0, 1.0, -1.0, -1.0], dtype=torch.float64)
    got = readout.log_dloss(p, y).tolist()
    assert got[0] == -1 / (np.exp(-5.0) + 1)  # -0.99330714907...
    assert got[1] == -1.0  # the formula would give -1 / (1 + 2.06e-9)
    assert got[2] == 1.0  # z = -20: -y
    assert got[3] == 0.5
    assert readout.log_dloss(torch.tensor([20.0], dtype=torch.float64), torch.tensor([1.0], dtype=torch.float64)) \
        .item() == -np.exp(-20.0)


def test_classes_not_yet_seen_tie_and_the_tie_goes_to_the_first_class():
    """Worked by hand: classes 0, 1, 2; the first training sample is class 2, so after it problems 0 and 1 have had the
    same update and tie exactly (sklearn's argmax gives class 0); class 1 is first seen at sample 3, class 0 at 9."""
    first_seen = torch.tensor([9, 3, 0])
    stops = torch.tensor([1, 8, 16])  # checkpoint_schedule(>= 16): (0, 1), (0, 8), (8, 16)
    assert readout.tie_leaders(first_seen, stops).tolist() == [[0, 0, 2], [0, 1, 2], [0, 1, 2]]
    # through the readout: no test item can be predicted class 1 at the first checkpoint, so test labels all 1 score 0
    rng = np.random.default_rng(0)
    ytr = torch.tensor([2, 2, 2, 1, 2, 1, 1, 2, 0, 0] * 2)
    xtr = torch.tensor(rng.integers(0, 2, (2, len(ytr), 12), dtype=np.uint8))
    xte = torch.tensor(rng.integers(0, 2, (2, 50, 12), dtype=np.uint8))
    acc = readout.fit_and_score(xtr, ytr, xte, torch.ones(50, dtype=torch.int64), [0, 1, 2])
    assert acc[:, 0].tolist() == [0.0, 0.0]
