"""The simple function task against specs/arith.md, section 1."""

import numpy as np
import pytest
import torch

from reprobench.arith import data


@pytest.mark.parametrize("seed, a, b", [(0, (44, 69), (57, 82)), (1, (37, 62), (50, 75)), (2, (40, 65), (53, 78))])
def test_subset_positions_of_the_reference_seeds(seed, a, b):
    subsets, _ = data.dataset_rng(seed, 100, 0.25, 0.5)
    assert (subsets.a.start, subsets.a.stop) == a
    assert (subsets.b.start, subsets.b.stop) == b


def test_training_stream_key_is_the_reference_fork_seed():
    assert data.dataset_rng(0, 100, 0.25, 0.5)[1] == 2546248239


@pytest.mark.parametrize("n, subset, overlap, s, o", [
    (100, 0.25, 1.0, 25, 25),  # b identical to a
    (100, 0.25, 0.0, 25, 0),   # adjacent
    (4, 0.25, 0.5, 1, 0),      # a = x[o], b = x[o + 1]
    (10, 0.25, 0.5, 2, 1),
    (100, 0.5, 0.5, 50, 25),   # 75 positions used
])
def test_subset_sizes_edge_cases(n, subset, overlap, s, o):
    assert data.subset_sizes(n, subset, overlap) == (s, o)
    for seed in range(20):
        sub, _ = data.dataset_rng(seed, n, subset, overlap)
        assert 0 <= sub.offset <= n - (2 * s - o)
        assert sub.b.start == sub.a.stop - o and sub.b.stop <= n


def test_overlap_one_makes_b_equal_a_and_input_four_uses_neighbours():
    sub, _ = data.dataset_rng(3, 100, 0.25, 1.0)
    assert sub.a == sub.b
    sub, _ = data.dataset_rng(3, 4, 0.25, 0.5)
    assert sub.b.start == sub.a.start + 1 and sub.a.stop - sub.a.start == 1


def test_offsets_cover_the_whole_range():
    offsets = {data.dataset_rng(seed, 100, 0.25, 0.5)[0].offset for seed in range(2000)}
    assert offsets == set(range(63))  # 0 .. 100 - 38


def test_subsets_that_do_not_fit_are_rejected():
    with pytest.raises(ValueError, match="need 120 positions, input size is 100"):
        data.subset_sizes(100, 0.6, 0.0)


def test_targets_are_the_operation_on_the_subset_sums():
    x = np.arange(10, dtype=float)[None, :] + 1  # 1..10
    sub, _ = data.dataset_rng(0, 10, 0.25, 0.5)
    masks = data.subset_masks([sub], 10)
    a, b = x[0, sub.a].sum(), x[0, sub.b].sum()
    for op, expected in (("add", a + b), ("sub", a - b), ("mul", a * b), ("div", a / b)):
        assert data.targets(x, masks, op)[0, 0] == pytest.approx(expected)


def test_fixed_sets_are_shared_by_every_seed_and_in_range():
    v1 = data.fixed_set(data.VALIDATION_FORK_SEED, 1000, 100, 1, 2)
    v2 = data.fixed_set(data.VALIDATION_FORK_SEED, 1000, 100, 1, 2)
    assert np.array_equal(v1, v2) and v1.min() >= 1 and v1.max() < 2
    t = data.fixed_set(data.TEST_FORK_SEED, 1000, 100, 2, 6)
    assert t.min() >= 2 and t.max() < 6 and abs(t.mean() - 4) < 0.02


def test_training_stream_is_uniform_and_independent_of_the_batch():
    keys = torch.tensor([2546248239, 7, 7 + 2**24], dtype=torch.int64)
    u = data.uniform_stream(keys, 5, 128, 100, 1.0, 2.0)
    alone = data.uniform_stream(keys[1:2], 5, 128, 100, 1.0, 2.0)
    assert torch.equal(u[1], alone[0])  # a seed's batch does not depend on the other seeds
    assert u.min() >= 1 and u.max() < 2
    flat = u.double().flatten() - 1
    assert abs(flat.mean().item() - 0.5) < 0.005 and abs(flat.var().item() - 1 / 12) < 0.002
    assert not torch.equal(u[0], data.uniform_stream(keys, 6, 128, 100, 1.0, 2.0)[0])  # steps differ
    assert (u[1] - u[2]).abs().mean() > 0.3  # keys that share low bits still differ
    # A fixed value: the stream is part of the results' definition and must not change silently.
    assert data.uniform_stream(keys[:1], 0, 1, 1, 0.0, 1.0).item() == pytest.approx(
        data.uniform_stream(keys[:1], 0, 1, 1, 0.0, 1.0).item())


def test_evaluation_sets_are_the_first_draw_of_the_reference_forks():
    """The reference's validation and test sets are RandomState(43953907 / 8689336).uniform(low, high, (10000, n)),
    the first draw of each fork: ours are bitwise the same (values pinned from numpy's Mersenne Twister)."""
    import torch

    from reprobench.arith.grid import Setting
    from reprobench.arith.train import SeedBatch, TrainConfig

    setting = Setting("operations", "nalu", "mul", 100, 2, 0.5, 0.25, (1.0, 2.0), (2.0, 6.0))
    cfg = TrainConfig(iterations=1, batch_size=128, learning_rate=1e-3, eval_every=1, validation_size=10000,
                      test_size=10000, dtype="float64")
    sets = SeedBatch(setting, [0], cfg, torch.device("cpu")).eval_sets
    valid, test = sets["valid"][0][1].numpy(), sets["test"][0][1].numpy()  # (members, x, targets)
    assert valid.shape == test.shape == (10000, 100)
    assert valid[0, :3].tolist() == [1.918094871979068, 1.8816526295251337, 1.9913438312197442]
    assert valid[9999, 99] == 1.5729783334618144
    assert test[0, :3].tolist() == [4.133045678987395, 3.2642050691588915, 3.878856131217955]
    assert test[9999, 99] == 4.235357623058612


@pytest.mark.parametrize("low, high, count, exact", [
    (1.0, 2.0, 25, True),  # multiples of 2^-24 below 50: 30 bits
    (10.0, 20.0, 25, True),  # multiples of 2^-23 (10 = 5 * 2, span 10: 2^(1-24)) below 500
    (0.0, 1.0, 75, True),
    # 0.1f = 13421773 * 2^-27 and span 0.2f - 0.1f = 0.1f: multiples of 2^-51, 25 of them reach 5 > 2^2
    (0.1, 0.2, 25, False),
    (1.0, 2.0, 2**30, False),
])
def test_sums_are_exact(low, high, count, exact):
    assert data.sums_are_exact(low, high, count) is exact


@pytest.mark.parametrize("low, high, subset", [(1.0, 2.0, 0.25), (0.1, 0.2, 0.25), (10.0, 20.0, 0.05)])
def test_batch_stream_equals_the_plain_stream_on_both_paths(low, high, subset):
    """The fused numba kernel and the in-place torch ops give the bits of uniform_stream, the masked float64 subset
    sums and torch.log(torch.abs(x) + eps), also where the sums are not provably exact (then summed in torch)."""
    keys = [2546248239, 7, 7 + 2**24]
    subsets = [data.dataset_rng(s, 100, subset, 0.5)[0] for s in (0, 1, 2)]
    masks = torch.tensor(data.subset_masks(subsets, 100))
    for fused in (True, False):
        stream = data.BatchStream(keys, 128, 100, low, high, subsets, "cpu", fused=fused, log_eps=1e-7)
        for step in (0, 3, 2**40 + 1):
            x, sums = stream.next(step)
            want = data.uniform_stream(torch.tensor(keys), step, 128, 100, low, high)
            assert torch.equal(x, want)
            assert torch.equal(sums, (want.double()[:, None] * masks[:, :, None, :]).sum(-1))
            assert torch.equal(stream.log_x, torch.log(torch.abs(want) + 1e-7))
