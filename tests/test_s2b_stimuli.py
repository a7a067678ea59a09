"""S2B's SCS stimuli, split and sampling against hand-worked cases and the statistics of specs/s2b.md section 1.8."""

import itertools

import numpy as np
import pytest

from reprobench.s2b.stimuli import (
    SymbolicSpace,
    combination_index,
    combinations,
    component_focused_sampling,
    coordinates,
    is_query_combination,
    latent_values,
    observe,
    one_hot,
    player_oc_indices,
    query_value_mask,
    sample_space,
    split,
    uniform_coordinates,
)


def test_space_respects_the_coded_bounds_and_the_seed():
    space = sample_space(np.random.default_rng(3), n_dims=3, v_min=2, v_max=5, n_oc=4)
    d = space.n_values
    assert d.shape == (3,) and ((2 <= d) & (d <= 5)).all()
    assert space.means.shape == space.sigmas.shape == (3, d.max()) and space.oc_samples.shape == (3, d.max(), 4)
    for i in range(3):
        v = np.arange(d[i])
        sigma, mean = space.sigmas[i, :d[i]], space.means[i, :d[i]]
        section = 2 / d[i]
        assert ((section / 12 < sigma) & (sigma < section / 6)).all()
        # the +-3 sigma band lies inside the value's section [-1 + v 2/d, -1 + (v + 1) 2/d]
        assert (mean - 3 * sigma >= -1 + v * section - 1e-12).all()
        assert (mean + 3 * sigma <= -1 + (v + 1) * section + 1e-12).all()
        assert np.isnan(space.means[i, d[i]:]).all() and np.isnan(space.oc_samples[i, d[i]:]).all()
    again = sample_space(np.random.default_rng(3), n_dims=3, v_min=2, v_max=5, n_oc=4)
    np.testing.assert_array_equal(again.oc_samples, space.oc_samples)
    other = sample_space(np.random.default_rng(4), n_dims=3, v_min=2, v_max=5, n_oc=4)
    assert not np.array_equal(np.nan_to_num(other.oc_samples), np.nan_to_num(space.oc_samples))


def test_d_is_uniform_on_the_inclusive_range():
    rng = np.random.default_rng(0)
    d = np.concatenate([sample_space(rng, n_dims=3, v_min=2, v_max=5).n_values for _ in range(2000)])
    counts = np.bincount(d, minlength=6)[2:]
    # 6000 draws, 1500 expected per value, binomial sd ~33.5: 4 sd
    assert np.abs(counts - 1500).max() < 4 * np.sqrt(6000 * 0.25 * 0.75)


def test_oc_samples_are_unclipped_normal_draws_around_each_value():
    space = sample_space(np.random.default_rng(1), n_values=[2, 5], n_oc=20_000)
    x = space.oc_samples[1, :5]
    # mean within 4 standard errors, sd within 4 standard errors of a normal sd (sigma / sqrt(2n))
    se = space.sigmas[1, :5] / np.sqrt(20_000)
    assert (np.abs(x.mean(axis=1) - space.means[1, :5]) < 4 * se).all()
    assert (np.abs(x.std(axis=1) - space.sigmas[1, :5]) < 4 * se / np.sqrt(2)).all()


def test_bad_arguments_name_the_value():
    with pytest.raises(ValueError, match="v_min"):
        sample_space(np.random.default_rng(0), v_min=5, v_max=2)
    with pytest.raises(ValueError, match="n_oc"):
        sample_space(np.random.default_rng(0), n_oc=0)
    with pytest.raises(ValueError, match="n_values"):
        combinations([3, 0])
    with pytest.raises(ValueError, match="phase"):
        component_focused_sampling(np.random.default_rng(0), [2, 2, 2], [0, 1], 1, 1, "train")


def test_combinations_are_row_major_with_the_first_dimension_most_significant():
    combos = combinations([2, 3])
    np.testing.assert_array_equal(combos, [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]])
    np.testing.assert_array_equal(combination_index(combos, [2, 3]), np.arange(6))
    # stimulus-centric index k * O + j has class k
    np.testing.assert_array_equal(coordinates([0, 2, 3, 11], [2, 3], n_oc=2), [[0, 0], [0, 1], [0, 1], [1, 2]])


def test_a_stimulus_uses_the_same_oc_index_on_every_dimension():
    d = np.array([2, 3])
    samples = np.full((2, 3, 2), np.nan)
    samples[0, :2] = [[0.10, 0.11], [0.20, 0.21]]
    samples[1, :3] = [[0.30, 0.31], [0.40, 0.41], [0.50, 0.51]]
    means = np.array([[-0.5, 0.5, np.nan], [-0.6, 0.0, 0.6]])
    space = SymbolicSpace(n_values=d, means=means, sigmas=np.full((2, 3), 0.1), oc_samples=samples)
    x = observe(space, [[1, 2], [0, 0]], [1, 0])
    assert x.dtype == np.float32
    np.testing.assert_allclose(x, [[0.21, 0.51], [0.10, 0.30]], rtol=1e-6)
    np.testing.assert_array_equal(latent_values(space, [[1, 2]]), [[0.5, 0.6]])
    with pytest.raises(ValueError, match="oc_index"):
        observe(space, [[0, 0]], 2)


def test_one_hot_concatenates_per_dimension_one_hots():
    np.testing.assert_array_equal(one_hot([[0, 2], [1, 0]], [2, 3]), [[1, 0, 0, 0, 1], [0, 1, 1, 0, 0]])


def test_split_by_hand_for_two_values_per_dimension():
    # test values are the odd indices; a combination is a query one iff >= 2 dimensions hold one:
    # (0,1,1)=3, (1,0,1)=5, (1,1,0)=6, (1,1,1)=7
    np.testing.assert_array_equal(query_value_mask([[0, 1, 3, 4]]), [[False, True, True, False]])
    train, test = split([2, 2, 2], n_oc=2)
    np.testing.assert_array_equal(test, [6, 7, 10, 11, 12, 13, 14, 15])
    np.testing.assert_array_equal(train, [0, 1, 2, 3, 4, 5, 8, 9])
    # every value, test values included, appears in training, but never two test values together
    support = coordinates(train, [2, 2, 2], 2)
    assert (query_value_mask(support).sum(axis=1) <= 1).all()


def test_split_sizes_match_the_closed_form_of_section_1_4():
    sizes = []
    for d in itertools.product(range(2, 6), repeat=3):
        train, test = split(d)
        e, o = np.ceil(np.array(d) / 2), np.floor(np.array(d) / 2)
        closed = np.prod(e) + sum(o[i] * np.prod(np.delete(e, i)) for i in range(3))
        assert len(train) == closed and len(train) + len(test) == np.prod(d)
        sizes.append((len(train), len(test)))
    train, test = np.array(sizes).T
    # the spec's numbers: #train in [4, 81] with mean 26.0, #test in [4, 44] with mean 16.9 (exactly 16.875)
    assert (train.min(), train.max(), train.mean()) == (4, 81, 26.0)
    assert (test.min(), test.max(), test.mean()) == (4, 44, 16.875)
    assert split([5, 5, 5])[0].size == 81


def test_query_phase_falls_back_to_the_whole_split_in_index_order():
    # d = (2, 2, 2): 4 test stimuli, S sum d = 6 > 4
    _, test = split([2, 2, 2])
    out = component_focused_sampling(np.random.default_rng(0), [2, 2, 2], test, 1, 1, "query")
    np.testing.assert_array_equal(out, test)


def test_support_phase_allows_duplicates_when_the_split_is_too_small():
    # 4 train stimuli, S sum d = 12 > 4: duplicates allowed, and still every value at least S = 2 times
    train, _ = split([2, 2, 2])
    out = component_focused_sampling(np.random.default_rng(0), [2, 2, 2], train, 1, 2, "support")
    coords = coordinates(out, [2, 2, 2])
    assert len(out) > len(np.unique(out)) and np.isin(out, train).all()
    assert all((coords[:, i] == v).sum() >= 2 for i in range(3) for v in range(2))


def test_a_value_absent_from_the_split_is_an_error_not_an_endless_loop():
    # two dimensions: the test split holds only odd values (both dimensions odd), so value 0 never occurs there
    _, test = split([5, 5], n_oc=3)
    with pytest.raises(ValueError, match="never occurs"):
        component_focused_sampling(np.random.default_rng(0), [5, 5], test, 3, 1, "query")


def episode_statistics(rng, n_oc, shots, n_episodes):
    rows = []
    for _ in range(n_episodes):
        space = sample_space(rng, n_dims=3, v_min=2, v_max=5, n_oc=n_oc)
        d = space.n_values
        train, test = split(d, n_oc)
        support = component_focused_sampling(rng, d, train, n_oc, shots, "support")
        query = component_focused_sampling(rng, d, test, n_oc, shots, "query")
        assert np.isin(support, train).all() and np.isin(query, test).all()
        coords = coordinates(support, d, n_oc)
        seen = min((coords[:, i] == v).sum() for i in range(3) for v in range(d[i]))
        rows.append((len(support), len(query), len(train) // n_oc, len(test) // n_oc, seen,
                     len(np.unique(query // n_oc)) / (len(test) // n_oc)))
    return np.array(rows, dtype=float)


@pytest.mark.parametrize("n_oc, shots, published", [
    # spec 1.8 (100 episodes each): support RGs, query RGs, #train combos, #test combos, fraction of test combos queried
    (1, 1, (10.9, 13.5, 24.2, 15.7, 0.72)),
    (4, 2, (20.6, 26.9, 27.7, 17.9, 0.84)),
])
def test_sampling_statistics_match_section_1_8(n_oc, shots, published):
    stats = episode_statistics(np.random.default_rng(n_oc * 10 + shots), n_oc, shots, 200)
    assert (stats[:, 4] >= shots).all()  # every value of every dimension seen at least S times in support
    cols = [0, 1, 2, 3, 5]
    means, sds = stats[:, cols].mean(axis=0), stats[:, cols].std(axis=0, ddof=1)
    # both sides are sample means (ours over 200 episodes, the spec's over 100): 4 sd of their difference
    tol = 4 * sds * np.sqrt(1 / 200 + 1 / 100)
    assert (np.abs(means - np.array(published)) < tol).all(), (means, tol)


def test_with_o_1_and_s_4_every_query_phase_is_the_whole_test_split():
    # spec 1.8: O = 1, S = 4 queries all test combinations (1.00): 4 sum d > #test for every d in {2..5}^3
    for d in itertools.product(range(2, 6), repeat=3):
        _, test = split(d)
        out = component_focused_sampling(np.random.default_rng(0), d, test, 1, 4, "query")
        np.testing.assert_array_equal(out, test)


def test_sampling_is_reproducible_from_the_generator():
    d, (train, _) = [4, 3, 5], split([4, 3, 5], 4)
    a = component_focused_sampling(np.random.default_rng(11), d, train, 4, 2, "support")
    b = component_focused_sampling(np.random.default_rng(11), d, train, 4, 2, "support")
    np.testing.assert_array_equal(a, b)


def test_which_oc_sample_each_player_sees():
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 125 * 4, size=40_000)
    speaker, listener = player_oc_indices(rng, idx, n_oc=4, variant="faithful")
    assert (listener != idx % 4).all() and ((0 <= speaker) & (speaker < 4)).all()
    # the quirk: the same vector with probability 1/O; with the 50% of trials where the target is removed, the spec
    # measured 0.131 of decisions at O = 4 (expected 0.125)
    same = (speaker == listener).mean()
    assert abs(same - 0.25) < 4 * np.sqrt(0.25 * 0.75 / len(idx))
    speaker, listener = player_oc_indices(rng, idx, n_oc=4, variant="corrected")
    assert (speaker == idx % 4).all() and (speaker != listener).all()
    speaker, listener = player_oc_indices(rng, idx, n_oc=1)
    assert (speaker == 0).all() and (listener == 0).all()
    with pytest.raises(ValueError, match="variant"):
        player_oc_indices(rng, idx, n_oc=4, variant="fixed")


def test_uniform_coordinates_and_query_mask():
    coords = uniform_coordinates(np.random.default_rng(0), [5, 5, 5], 1000)
    assert coords.shape == (1000, 3) and coords.min() == 0 and coords.max() == 4
    np.testing.assert_array_equal(is_query_combination([[1, 3, 0], [1, 0, 0], [0, 2, 4]]), [True, False, False])
