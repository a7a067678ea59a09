"""S2B's metrics against what ReferentialGym, EGG and disentanglement_lib do on the inputs where they differed from
ours (issue 25 items 6 and 7, DEVIATIONS S22 and S23), each worked out by hand: a speaker with one message for
everything, an all-EoS message, the topsim cosine's eps on parallel class vectors, ReferentialGym's FactorVAE votes,
and the inputs we refuse where the references return a number."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import spearmanr

from reprobench.s2b import eoa, marl, metrics, probes, stimuli, train
from reprobench.s2b.speaker import posdis_message

GRID_2x2 = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])


# --- item 6: a speaker with one message for everything ---------------------------------------------------------------


def test_varies_is_referentialgyms_std_gate():
    # one token 1 among n zeros: mean 1/n, squared deviations (1 - 1/n)^2 + (n - 1)/n^2 = (n - 1)/n, over n - 1
    # (ddof 1): variance 1/n, std 1/sqrt(n): 0.1 for n = 100 (kept), 0.0316 for n = 1000 (< 0.05: "constant")
    for n, want in ((100, True), (1000, False)):
        messages = np.zeros((n, 3), dtype=np.int64)
        messages[0, 1] = 1
        assert metrics.varies(messages) is want
    assert not metrics.varies(np.tile([3, 1, 0], (10, 1)))


@pytest.mark.parametrize("message", [[3, 1, 0, 0], [0, 0, 0, 0]])
def test_one_message_for_everything_scores_zero(message):
    # ReferentialGym's topsim, posdis and bosdis modules see no message position with std >= 0.05 and log 0.0 for
    # every score; before issue 25 ours gave topsim and posdis NaN (then skipped by the probe's nanmean) and, for the
    # all-EoS message, bosdis raised a ValueError (one count column: no gap to take).
    d = [3, 4, 2]
    latents = stimuli.coordinates(stimuli.split(d, 4)[0], d, 4)
    messages = np.tile(message, (len(latents), 1))
    scores = probes.language_scores(np.random.default_rng(0), latents, messages)
    assert scores == dict.fromkeys(probes.SPEAKER_METRICS, 0.0)


def test_an_all_eos_sample_has_bosdis_zero_and_the_gap_takes_unsaid_symbols_as_zero_counts():
    eos = np.zeros((4, 2), dtype=np.int64)
    # with EoS (ReferentialGym): one count column, c0 = 2 everywhere; the unsaid symbols count 0: every MI is 0, so
    # each attribute (H = 1 bit) has gap 0 - 0 = 0. ReferentialGym's gap raises an IndexError there and logs the 0.0
    # it catches.
    assert metrics.bosdis(GRID_2x2, eos, faithful=True, speaker_centred=True) == 0.0
    # no attribute varies: no gap to average, -1 as ReferentialGym codes it
    assert metrics.bosdis(np.zeros((4, 2), int), eos, faithful=True, speaker_centred=True) == -1.0
    # without EoS: only c1 is left (tokens 0 and 1), c1 = a1. a0: MI(c1; a0) = 0, gap 0; a1: MI(c1; a1) = 1 bit over
    # H(a1) = 1 bit, the next column (symbol 2, never said) 0: gap 1. Mean 0.5 (it raised before).
    messages = np.array([[0, 0], [1, 0], [0, 0], [1, 0]])
    assert metrics.bosdis(GRID_2x2, messages, speaker_centred=True) == pytest.approx(0.5)


def test_posdis_of_constant_messages_is_referentialgyms_minus_one():
    # no position varies: EGG divides 0 by 0 positions (nan), ReferentialGym's ListenerCentred score returns -1
    assert math.isnan(metrics.posdis(GRID_2x2, np.ones((4, 2), int)))
    assert metrics.posdis(GRID_2x2, np.ones((4, 2), int), faithful=True) == -1.0
    # otherwise the same number: the MIXED language of test_s2b_metrics, 2/3
    mixed = np.array([[1, 0], [2, 0], [1, 1], [2, 2]])
    assert metrics.posdis(GRID_2x2, mixed, faithful=True) == metrics.posdis(GRID_2x2, mixed) == pytest.approx(2 / 3)


def test_the_probes_mean_counts_a_constant_speaker_as_zero(one_thread):
    config = train.small(train.preset("table1_s1"))
    trainer = marl.MARLTrainer(config, marl.MARLConfig(probe_episodes=2, eoa=eoa.EoAConfig.tiny(epochs=1)))
    rng = np.random.default_rng(0)
    spaces = [stimuli.sample_space(rng, n_values=[3, 3, 2], n_oc=1) for _ in range(2)]
    combos = [stimuli.combinations(s.n_values) for s in spaces]
    probed = [(spaces[0], np.tile([1, 2, 0], (18, 1)), 1), (spaces[1], posdis_message(combos[1], max_len=3), 18)]
    scores = trainer._language(probed)
    # episode 1 scored alone, with the probe's generator for episode k = 1: the mean of 0 (episode 0) and its score
    support = stimuli.coordinates(stimuli.split([3, 3, 2], 1)[0], [3, 3, 2], 1)
    alone = probes.language_scores(np.random.default_rng([config.eval_seed, 1]), support,
                                   probed[1][1][stimuli.combination_index(support, [3, 3, 2])])
    for key in probes.SPEAKER_METRICS:
        assert scores[key] == pytest.approx(alone[key] / 2, abs=1e-12), key
    assert scores["topsim"] > 0.4  # (the posdis speaker's own topsim is above 0.8)


# --- item 7: the small ones -------------------------------------------------------------------------------------------


def test_referentialgyms_cosine_keeps_parallel_class_vectors_tied():
    # pairs (full range, the last sample in none): 01 02 03 12 13 23. Meanings (1,0) (2,0) (1,0) (0,1) (0,1): with
    # eps 1e-20 the unit vectors of (1,0) and (2,0) are both exactly (1,0): cosines 1 1 0 1 0 0, ranks 5 5 2 5 2 2.
    # Messages 11 12 11 23: edits 1 0 2 1 2 2, ranks 2.5 1 5 2.5 5 5. Centred (3.5): (1.5, 1.5, -1.5, 1.5, -1.5, -1.5)
    # and (-1, -2.5, 1.5, -1, 1.5, 1.5): rho = -13.5 / sqrt(13.5 * 15) = -3 / sqrt(10), topsim 3 / sqrt(10).
    meanings = np.array([[1, 0], [2, 0], [1, 0], [0, 1], [0, 1]])
    messages = np.array([[1, 1], [1, 2], [1, 1], [2, 3], [3, 3]])
    assert metrics.topographic_similarity(meanings, messages, faithful=True, comprange=None) == pytest.approx(
        3 / math.sqrt(10), abs=1e-12)


def test_an_eps_of_1e8_broke_those_ties(monkeypatch):
    # ours before issue 25: 1 / (1 + 1e-8) and 2 / (2 + 1e-8) differ, so cos 02 = 1 - 2e-8 < cos 01 = cos 12 =
    # 1 - 1.5e-8: cosine ranks 5.5 4 2 5.5 2 2, centred (2, 0.5, -1.5, 2, -1.5, -1.5), sum of squares 15; products
    # with the edits' -2 - 1.25 - 2.25 - 2 - 2.25 - 2.25 = -12: rho = -12 / 15, topsim 0.8
    monkeypatch.setattr(metrics, "COS_EPS", 1e-8)
    meanings = np.array([[1, 0], [2, 0], [1, 0], [0, 1], [0, 1]])
    messages = np.array([[1, 1], [1, 2], [1, 1], [2, 3], [3, 3]])
    assert metrics.topographic_similarity(meanings, messages, faithful=True, comprange=None) == pytest.approx(0.8)


def test_the_cosines_are_referentialgyms_pair_by_pair_bit_for_bit():
    # ReferentialGym (utils.py L144-151): for each pair, np.matmul(v1 / (norm(v1) + eps), v2 / (norm(v2) + eps)).
    # On the PS protocol's class vectors ours must give the same floats, or ties among near-parallel vectors reorder.
    rng = np.random.default_rng(3)
    for _ in range(5):
        d = stimuli.sample_space(rng, n_dims=3, v_min=2, v_max=5, n_oc=4).n_values
        latents = stimuli.coordinates(stimuli.split(d, 4)[0], d, 4)
        a = latents[metrics.factor_fixed_indices(latents, rng)]
        m = posdis_message(a, max_len=4)
        i, j = metrics.referentialgym_pairs(len(a))
        unit = [v / (np.linalg.norm(v) + 1e-20) for v in a.astype(float)]
        cos = np.array([np.matmul(unit[p], unit[q]) for p, q in zip(i, j)])
        edits = metrics._pair_edit_distances(m, i, j)
        assert metrics.topographic_similarity(a, m, faithful=True) == -spearmanr(edits, cos).statistic


def test_referentialgyms_factor_vae_votes_on_factor_fixed_batches_of_the_given_set():
    rng = np.random.default_rng(0)
    grid = stimuli.combinations([5, 5, 5])
    # codes = factors: fixing factor k zeroes dimension k's variance in the batch, so every vote is (k, k): 1.0
    assert metrics.factor_vae_score_referentialgym(grid.astype(float), grid, rng) == 1.0
    # a constant factor is never fixed (active factors only): with factors (a0, 0, a2) and codes (a0, noise, a2),
    # every vote fixes a0 (dimension 0) or a2 (dimension 2): 1.0. disentanglement_lib's sampler would fix factor 1
    # too, whose batches vote for whatever dimension's variance happens to be lowest.
    factors = grid[grid[:, 1] == 0]
    codes = np.stack([factors[:, 0], rng.standard_normal(len(factors)), factors[:, 2]], axis=1)
    assert metrics.factor_vae_score_referentialgym(codes, factors, rng) == 1.0
    # every dimension with std < 0.05: pruned, ReferentialGym logs 0
    assert metrics.factor_vae_score_referentialgym(0.01 * grid, grid, rng) == 0.0
    with pytest.raises(ValueError, match="variant"):
        metrics.factor_vae_score_referentialgym(grid.astype(float), grid, rng, variant="paper")


@pytest.mark.parametrize("n_oc", [1, 4])
def test_d2_factor_vae_with_referentialgyms_protocol_is_100(n_oc):
    # published 100.0; the protocol named "referentialgym" now votes as ReferentialGym's module does
    assert probes.disentanglement(0, n_oc, "referentialgym")["factorvae_score"] == 1.0


def test_inputs_the_references_accept_and_we_refuse():
    # EGG's bosdis counts symbols 0..vocab_size-1 only: a token 6 with vocab_size 6 would leave the histogram of
    # [[0, 6]] at [1, 0, 0, 0, 0, 0]. Ours refuses the message (S23).
    with pytest.raises(ValueError, match="vocab_size 6 is too small"):
        metrics.symbol_counts([[0, 6], [0, 1]], vocab_size=6)
    # disentanglement_lib (mig.py L68-71): mean((m1 - m2) / H) with H = 0 for a constant factor: its gap is 0 / 0,
    # so MIG is nan. Ours refuses.
    with pytest.raises(ValueError, match="factor 1 is constant"):
        metrics.mig(GRID_2x2.astype(float), np.stack([GRID_2x2[:, 0], np.zeros(4, int)], axis=1))
