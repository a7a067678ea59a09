"""Issue 25 item 12: the EoA listener as the ORG wrapper ran it (DEVIATIONS S28). Its lifetime: one listener and one
Adam state carried through the scored episodes (faithful) or a fresh one per episode (corrected), in eoa, in the
speaker probe (runs.speaker_run) and in the multi-agent probe (marl); and the kept-target trial's object-centric
sample, uniform over the combination's O samples (the SCS dataset redraws it at every fetch)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from reprobench.s2b import eoa, marl, stimuli, train
from reprobench.s2b.speaker import posdis_message

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.one_thread

# d = (5, 4, 4), O = 4. combinatorial2: the odd value indices are test values (2 of 5, 2 of 4, 2 of 4), a query
# combination has >= 2 of them: 2*2*2 + 2*2*2 + 2*2*2 + 3*2*2 = 36 of the 80, so 44 support combinations = 176 support
# stimuli, ceil(176 / 32) = 6 Adam steps per epoch.
SPACE = stimuli.sample_space(np.random.default_rng(0), n_dims=3, v_min=2, v_max=5, n_oc=4)
# d = (2, 2, 2), O = 4: value 1 is the test value of each dimension; the query combinations are (1,1,0), (1,0,1),
# (0,1,1), (1,1,1), so 4 support combinations = 16 support stimuli, 1 Adam step per epoch.
SMALL = stimuli.sample_space(np.random.default_rng(1), n_values=[2, 2, 2], n_oc=4)


def test_spaces_hold_the_support_counts_worked_out_above():
    assert SPACE.n_values.tolist() == [5, 4, 4] and len(stimuli.split(SPACE.n_values, 4)[0]) == 176
    assert len(stimuli.split(SMALL.n_values, 4)[0]) == 16


def test_kept_trials_show_any_of_the_combinations_samples_and_replacements_skip_its_block():
    """A pool of 3 combinations x O = 2 (stimuli 0..5). keep_target 1: every trial kept, the listener's stimulus is
    2 c + oc with oc the generator's integers(2) after its random(): as run, the target's own sample (oc = j) too.
    keep_target 0: every trial replaced; for the target 3 (combination 1, block {2, 3}) the draw r in {0, 1, 2, 3}
    maps to 0, 1, 4, 5 (r + 2 once r reaches the block's start 2)."""
    pool, targets = np.arange(6), np.array([3] * 400)
    listener, answer = eoa._trials(np.random.default_rng(0), targets, pool, 2, 1.0)
    twin = np.random.default_rng(0)
    twin.random(targets.shape)
    assert (answer == eoa.TARGET).all() and np.array_equal(listener, 2 + twin.integers(2, size=targets.shape))
    assert abs((listener == 3).mean() - 0.5) < 0.08  # the target's own sample half the time at O = 2 (sd 0.025)

    listener, answer = eoa._trials(np.random.default_rng(1), targets, pool, 2, 0.0)
    twin = np.random.default_rng(1)
    twin.random(targets.shape), twin.integers(2, size=targets.shape)
    r = twin.integers(4, size=targets.shape)
    assert (answer == eoa.NOT_TARGET).all() and np.array_equal(listener, np.array([0, 1, 4, 5])[r])


def test_kept_trials_are_uniform_over_the_o_samples_at_o_4():
    """Each of the 4 samples of the kept target's combination, the target's own included, 1/4 of the time (sd
    sqrt(3/16 / 4000) = 0.007; before issue 25 the own sample never showed)."""
    support, _ = stimuli.split(SPACE.n_values, 4)
    targets = np.repeat(support[::4], 100)  # every combination's sample 0, 100 times: 4400 kept trials
    listener, _ = eoa._trials(np.random.default_rng(2), targets, support, 4, 1.0)
    assert np.array_equal(listener // 4, targets // 4)
    assert np.allclose(np.bincount(listener % 4, minlength=4) / len(targets), 0.25, atol=0.03)


@pytest.mark.parametrize("listener", eoa.LISTENERS)
def test_the_listener_and_its_adam_state_carry_over_only_when_persistent(monkeypatch, listener):
    """Episodes SPACE, SMALL, SPACE at 2 epochs: 2 x 6 = 12, 2 x 1 = 2 and 12 Adam steps. Persistent: the listener
    enters episode 1 with the weights it left episode 0 with and Adam's step count at 12, episode 2 at 12 + 2 = 14;
    fresh: every episode starts from its own seed's initialisation with step 0."""
    config, seeds = eoa.EoAConfig.tiny(epochs=2), [5, 6, 7]
    seen = []
    acquire = eoa._acquire

    def spy(games, n_dims, rngs, config, flat, state):
        before = (flat.detach().clone(), state["step"].tolist())
        out = acquire(games, n_dims, rngs, config, flat, state)
        seen.append((before, flat.detach().clone(), state["step"].tolist()))
        return out

    monkeypatch.setattr(eoa, "_acquire", spy)
    results = eoa.ease_of_acquisition_sequence([SPACE, SMALL, SPACE], eoa.posdis_speaker(), config, seeds,
                                               listener=listener)
    assert [r["steps"] for r in results] == [12, 2, 12] and [r["prior_episodes"] for r in results] == (
        [0, 1, 2] if listener == "persistent" else [0, 0, 0])
    if listener == "persistent":
        assert [s[0][1] for s in seen] == [[0.0], [12.0], [14.0]] and seen[-1][2] == [26.0]
        assert torch.equal(seen[0][0][0], eoa.init_listeners(3, config, seeds[:1]))
        assert all(torch.equal(seen[k + 1][0][0], seen[k][1]) for k in range(2))
    else:  # one batch of three fresh listeners, each at step 0, 12 / 2 / 12 after
        (start, steps), _, after = seen[0]
        assert steps == [0.0, 0.0, 0.0] and after == [12.0, 2.0, 12.0]
        assert torch.equal(start, eoa.init_listeners(3, config, seeds))


def test_a_persistent_listeners_first_episode_is_the_fresh_listeners_and_its_later_ones_are_not():
    config, seeds = eoa.EoAConfig.tiny(epochs=3), [11, 12]
    chain = eoa.ease_of_acquisition_sequence([SPACE, SPACE], eoa.posdis_speaker(), config, seeds)
    fresh = eoa.ease_of_acquisition_sequence([SPACE, SPACE], eoa.posdis_speaker(), config, seeds, listener="fresh")
    alone = [eoa.ease_of_acquisition(SPACE, eoa.posdis_speaker(), config, seed=s) for s in seeds]
    assert chain[0] == alone[0] | {"prior_episodes": 0}
    assert chain[1]["accuracy"] != alone[1]["accuracy"] or chain[1]["train_loss"] != alone[1]["train_loss"]
    for f, a in zip(fresh, alone):  # fresh: the batch of independent listeners (equal to alone up to float order)
        assert f["accuracy"] == pytest.approx(a["accuracy"], abs=1e-12) and f["prior_episodes"] == 0
    with pytest.raises(ValueError, match="listener"):
        eoa.ease_of_acquisition_sequence([SPACE], eoa.posdis_speaker(), config, [0], listener="reset")


def test_a_persistent_listener_keeps_what_it_learned():
    """The same game three times, 16 epochs each: the persistent listener's third score comes after 48 epochs on it,
    where fresh listeners scored 0.630-0.756 over 32 seeds (test_s2b_eoa's LEARN) and the chains' third scores
    0.634-0.756 over 8 seed triples; a fresh 16-epoch listener has not started to acquire (0.474-0.531 over 32
    seeds)."""
    config, seeds = eoa.EoAConfig(epochs=16, test_repeats=10), [0, 1, 2]
    chain = eoa.ease_of_acquisition_sequence([SPACE] * 3, eoa.posdis_speaker(4), config, seeds)
    fresh = eoa.ease_of_acquisition_sequence([SPACE] * 3, eoa.posdis_speaker(4), config, seeds, listener="fresh")
    assert chain[2]["accuracy"] > 0.6 and max(r["accuracy"] for r in fresh) < 0.6


def test_the_variants_pick_the_listener():
    assert eoa.LISTENER_OF_VARIANT == {"faithful": "persistent", "corrected": "fresh"}


def test_the_speaker_run_eoa_is_one_listener_faithful_and_fresh_ones_corrected(tmp_path):
    from reprobench.core import curves
    from reprobench.s2b import runs

    # the [seed, 1] generator's first two spaces, episode k's trials seeded 1000 seed + k
    rng = np.random.default_rng([3, 1])
    spaces = [stimuli.sample_space(rng, n_dims=3, v_min=2, v_max=5, n_oc=4) for _ in range(2)]
    config, seeds = eoa.EoAConfig(epochs=2), [3000, 3001]
    for variant, listener in eoa.LISTENER_OF_VARIANT.items():
        out = tmp_path / f"{variant}.parquet"
        runs.speaker_run(3, 1, str(out), "test", eoa_episodes=2, eoa_epochs=2, variant=variant)
        frame, record = curves.read_curve(out)
        got = frame[frame["metric"] == "eoa_accuracy"].sort_values("step")["value"].tolist()
        want = eoa.ease_of_acquisition_sequence(spaces, eoa.posdis_speaker(4), config, seeds, listener=listener)
        assert got == pytest.approx([r["accuracy"] for r in want], abs=1e-12) and record["variant"] == variant


def _marl_config(**kw):
    config = train.small(train.preset("table1_s1"))
    env = {**config.env, "nbr_object_centric_samples": 1, "max_nbr_values_per_latent": 3, "vocab_size": 4}
    return dataclasses.replace(config, env=env, n_actors=3, budget=300, eval_every=150, eval_actors=2,
                               eval_episodes=2, **kw)


@pytest.mark.parametrize("variant", ["faithful", "corrected"])
def test_the_marl_probe_carries_its_listener_through_an_evaluations_episodes_when_faithful(variant):
    """Two probed episodes of the posdis speaker: faithful, one listener through both (seeded 1000 seed, episode k's
    trials 1000 seed + k); corrected, two fresh ones. eoa_accuracy is the mean of the two scores."""
    config = _marl_config(seed=4)
    config = train.corrected(config) if variant == "corrected" else config
    m = marl.MARLConfig(probe_episodes=2, eoa=eoa.EoAConfig.tiny(epochs=2))
    trainer = marl.MARLTrainer(config, m)
    rng = np.random.default_rng(0)
    spaces = [stimuli.sample_space(rng, n_values=[3, 3, 2], n_oc=1) for _ in range(2)]
    probed = [(s, posdis_message(stimuli.combinations(s.n_values), max_len=3), 18) for s in spaces]
    want = eoa.ease_of_acquisition_sequence(spaces, eoa.posdis_speaker(3), m.eoa, [4000, 4001],
                                            listener=eoa.LISTENER_OF_VARIANT[variant])
    assert trainer._language(probed)["eoa_accuracy"] == pytest.approx(np.mean([r["accuracy"] for r in want]),
                                                                      abs=1e-12)
