"""S2B's SCS stimuli, split and sampling against hand-worked cases and the statistics of specs/s2b.md section 1.8."""

import itertools

import numpy as np
import pytest

from reprobench.s2b import stimuli
from reprobench.s2b.stimuli import (
    SymbolicSpace,
    combination_index,
    combinations,
    component_focused_sampling,
    component_focused_sampling_batch,
    coordinates,
    counter_integers,
    counter_uniform,
    is_query_combination,
    latent_values,
    observe,
    one_hot,
    player_oc_indices,
    query_value_mask,
    sample_space,
    sample_spaces,
    split,
    split_batch,
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


# -- many episodes at once ------------------------------------------------------------------------------------------


def keys_of(seed, n):
    return np.random.default_rng(seed).bit_generator.random_raw(n)


def test_counter_draws_are_uniform_and_depend_on_key_stream_and_index_only():
    keys = keys_of(0, 4)
    u = counter_uniform(keys[:, None], 3, np.arange(50_000)[None, :])
    assert u.shape == (4, 50_000) and (0 <= u).all() and (u < 1).all()
    # mean and variance of U(0, 1) within 4 standard errors; no correlation between neighbouring indices
    assert np.abs(u.mean(axis=1) - 0.5).max() < 4 * np.sqrt(1 / 12 / 50_000)
    assert np.abs(u.var(axis=1) - 1 / 12).max() < 4 * np.sqrt(1 / 180 / 50_000)
    assert abs(np.corrcoef(u[0, :-1], u[0, 1:])[0, 1]) < 4 / np.sqrt(50_000)
    counts = np.bincount(counter_integers(keys[0], 7, np.arange(60_000), 6), minlength=6)
    assert np.abs(counts - 10_000).max() < 4 * np.sqrt(60_000 * (1 / 6) * (5 / 6))
    # the same (key, stream, index) gives the same number whatever else is drawn with it
    np.testing.assert_array_equal(counter_uniform(keys[2], 3, np.arange(10, 20)), u[2, 10:20])
    assert not np.array_equal(counter_uniform(keys[2], 4, np.arange(10, 20)), u[2, 10:20])


def test_batched_spaces_follow_section_1_1_and_do_not_depend_on_the_batch():
    keys = keys_of(1, 3000)
    spaces = sample_spaces(keys, n_dims=3, v_min=2, v_max=5, n_oc=2)
    d = spaces.n_values
    counts = np.bincount(d.ravel(), minlength=6)[2:]  # 9000 draws, U{2..5}
    assert np.abs(counts - 2250).max() < 4 * np.sqrt(9000 * 0.25 * 0.75)
    for b in range(0, 3000, 301):
        space = spaces.space(b)
        for i in range(3):
            v = np.arange(d[b, i])
            sigma, mean, section = space.sigmas[i, :d[b, i]], space.means[i, :d[b, i]], 2 / d[b, i]
            assert ((section / 12 < sigma) & (sigma < section / 6)).all()
            assert (mean - 3 * sigma >= -1 + v * section - 1e-12).all()
            assert (mean + 3 * sigma <= -1 + (v + 1) * section + 1e-12).all()
            assert np.isnan(space.oc_samples[i, d[b, i]:]).all()
        single = sample_spaces(keys[b:b + 1], n_dims=3, v_min=2, v_max=5, n_oc=2)
        np.testing.assert_array_equal(single.oc_samples[0], spaces.oc_samples[b])
    # the OC samples are N(mean, sigma) draws (Box-Muller): standardised, mean 0 and sd 1 within 4 standard errors
    many = sample_spaces(keys[:1], n_dims=2, v_min=5, v_max=5, n_oc=20_000)
    z = (many.oc_samples[0] - many.means[0][..., None]) / many.sigmas[0][..., None]
    se = 1 / np.sqrt(20_000)
    assert (np.abs(z.mean(axis=2)) < 4 * se).all() and (np.abs(z.std(axis=2) - 1) < 4 * se / np.sqrt(2)).all()
    assert abs((np.abs(z) > 3).mean() - 0.0027) < 4 * np.sqrt(0.0027 / z.size)


def test_split_batch_equals_split_row_by_row():
    ds = np.array(list(itertools.product(range(2, 6), repeat=3)))
    for n_oc in (1, 3):
        for phase, half in (("support", 0), ("query", 1)):
            out, n = split_batch(ds, n_oc, phase, width=5)
            for row, d in enumerate(ds):
                np.testing.assert_array_equal(out[row, :n[row]], split(d, n_oc)[half])
                assert (out[row, n[row]:] == -1).all()


def batched_statistics(keys, n_oc, shots):
    d = stimuli.sample_n_values(keys, 3, 2, 5)
    (support, n_support), (query, n_query) = component_focused_sampling_batch(keys, d, n_oc, shots, "both", width=5)
    rows = []
    for b in range(len(keys)):
        train, test = split(d[b], n_oc)
        sup, qry = support[b, :n_support[b]], query[b, :n_query[b]]
        assert np.isin(sup, train).all() and np.isin(qry, test).all()
        assert (support[b, n_support[b]:] == -1).all() and (query[b, n_query[b]:] == -1).all()
        coords = coordinates(sup, d[b], n_oc)
        seen = min((coords[:, i] == v).sum() for i in range(3) for v in range(d[b, i]))
        rows.append((len(sup), len(qry), len(train) // n_oc, len(test) // n_oc, seen,
                     len(np.unique(qry // n_oc)) / (len(test) // n_oc)))
    return np.array(rows, dtype=float)


@pytest.mark.parametrize("n_oc, shots, published", [
    (1, 1, (10.9, 13.5, 24.2, 15.7, 0.72)),
    (4, 2, (20.6, 26.9, 27.7, 17.9, 0.84)),
    (16, 4, (37.0, 45.7, 23.5, 16.4, 0.96)),
])
def test_batched_sampling_statistics_match_section_1_8(n_oc, shots, published):
    stats = batched_statistics(keys_of(n_oc * 10 + shots, 400), n_oc, shots)
    assert (stats[:, 4] >= shots).all()  # every value of every dimension seen at least S times in support
    cols = [0, 1, 2, 3, 5]
    means, sds = stats[:, cols].mean(axis=0), stats[:, cols].std(axis=0, ddof=1)
    tol = 4 * sds * np.sqrt(1 / 400 + 1 / 100)  # ours over 400 episodes, the spec's over 100
    assert (np.abs(means - np.array(published)) < tol).all(), (means, tol)


@pytest.mark.parametrize("n_oc, shots", [(1, 1), (4, 2)])
def test_batched_sampling_and_the_sequential_sampler_agree_in_distribution(n_oc, shots):
    # the sequential sampler on numpy draws and the batched one on counter draws: same procedure, same statistics
    rng = np.random.default_rng(7)
    d = sample_spaces(keys_of(8, 300), 3, 2, 5).n_values
    keys = keys_of(9, 300)
    ours = component_focused_sampling_batch(keys, d, n_oc, shots, "both", width=5)
    lengths = np.array([[ours[0][1][b], ours[1][1][b]] for b in range(300)], dtype=float)
    theirs = []
    for b in range(300):
        train, test = split(d[b], n_oc)
        theirs.append((len(component_focused_sampling(rng, d[b], train, n_oc, shots, "support")),
                       len(component_focused_sampling(rng, d[b], test, n_oc, shots, "query"))))
    theirs = np.array(theirs, dtype=float)
    # the same d per episode: compare the mean lengths of both phases with 4 standard errors of a difference
    tol = 4 * np.sqrt((lengths.var(axis=0, ddof=1) + theirs.var(axis=0, ddof=1)) / 300)
    assert (np.abs(lengths.mean(axis=0) - theirs.mean(axis=0)) < tol).all(), (lengths.mean(0), theirs.mean(0), tol)


def test_batched_sampling_does_not_depend_on_the_batch_the_width_or_the_code_path(monkeypatch):
    keys = keys_of(3, 120)
    d = stimuli.sample_n_values(keys, 3, 2, 5)
    (sup, n_sup), (qry, n_qry) = component_focused_sampling_batch(keys, d, 2, 2, "both", width=5)
    for b in (0, 17, 119):
        for phase, out, n in (("support", sup, n_sup), ("query", qry, n_qry)):
            alone, n_alone = component_focused_sampling_batch(keys[b:b + 1], d[b:b + 1], 2, 2, phase)
            np.testing.assert_array_equal(alone[0, :n_alone[0]], out[b, :n[b]])
    # width 6: a 216-point grid, past MAX_DISTANCE_TABLE, so replacements are drawn without the tables
    (sup6, _), (qry6, _) = component_focused_sampling_batch(keys, d, 2, 2, "both", width=6)
    np.testing.assert_array_equal(sup6, sup)
    np.testing.assert_array_equal(qry6, qry)
    # without the weight-code tables the sampler loops over values: the same draws
    monkeypatch.setattr(stimuli, "MAX_CODE_TABLE", 0)
    stimuli._weight_codes.cache_clear()
    try:
        (sup0, _), (qry0, _) = component_focused_sampling_batch(keys, d, 2, 2, "both", width=5)
    finally:
        stimuli._weight_codes.cache_clear()
    np.testing.assert_array_equal(sup0, sup)
    np.testing.assert_array_equal(qry0, qry)


def test_batched_sampling_fallbacks_and_errors():
    keys = keys_of(4, 6)
    d = np.full((6, 3), 2)
    # d = (2, 2, 2): 4 test stimuli, S sum d = 6 > 4, so the query phase is the whole split in index order
    out, n = component_focused_sampling_batch(keys, d, 1, 1, "query")
    assert (n == 4).all() and (out == split([2, 2, 2])[1]).all()
    # 4 train stimuli, S sum d = 12 > 4: duplicates from the start, and still every value at least S = 2 times
    out, n = component_focused_sampling_batch(keys, d, 1, 2, "support")
    for row, length in zip(out, n, strict=True):
        coords = coordinates(row[:length], [2, 2, 2])
        assert length > len(np.unique(row[:length])) and np.isin(row[:length], split([2, 2, 2])[0]).all()
        assert all((coords[:, i] == v).sum() >= 2 for i in range(3) for v in range(2))
    with pytest.raises(ValueError, match="never occurs"):  # the query split of (5, 5) holds odd values only
        component_focused_sampling_batch(keys[:1], [[5, 5]], 3, 1, "query")
    with pytest.raises(ValueError, match="phase"):
        component_focused_sampling_batch(keys[:1], [[2, 2, 2]], 1, 1, "train")
    with pytest.raises(ValueError, match="n_values"):
        component_focused_sampling_batch(keys[:2], [[2, 2, 2]], 1, 1, "support")
