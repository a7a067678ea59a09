"""S2B's multi-agent meta-referential game (Table 1's learned columns): the two-player vector environment against the
listener-side one, the speaker's action sentences, VDN's loss against a hand-written team TD, SAD's partner input,
the multi-agent trainer's exact resume and its language probe."""

from __future__ import annotations

import numpy as np
import pytest

from reprobench.s2b.cores import ActionLayout
from reprobench.s2b.marl_env import MetaReferentialGameTwoPlayerVector, regularise
from reprobench.s2b.speaker import posdis_message
from reprobench.s2b.vector_env import MetaReferentialGameVector

PAPER = dict(descriptive=True, nbr_distractors=0, provide_listener_feedback=True, sampling_strategy=None,
             min_nbr_values_per_latent=2, max_nbr_values_per_latent=3, vocab_size=4)


def posdis_speaker(info, cfg) -> np.ndarray:
    """The posdis speaker's message at each sub-environment's observation, in its own token space: round r < R says
    round r's message, round R repeats round R - 1 (the environment's choice), feedback says all EoS."""
    out = np.zeros((len(info["round_idx"]), cfg.max_sentence_length), dtype=np.int64)
    for i, r in enumerate(np.asarray(info["round_idx"]).tolist()):
        if r >= 0:
            msg = posdis_message(info["speaker_latents"][i], max_len=cfg.max_sentence_length,
                                 round_idx=min(r, cfg.n_rounds - 1), n_rounds=cfg.n_rounds)
            out[i] = msg[:cfg.max_sentence_length]
    return out


def equal(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("kwargs", [
    dict(nbr_object_centric_samples=1),
    dict(nbr_object_centric_samples=4, sampling_strategy="component-focused-1shot"),
    dict(descriptive=False, nbr_distractors=2),
    dict(nbr_communication_rounds=3, max_sentence_length=1),
])
def test_listener_side_equals_the_listener_environment_fed_the_posdis_speaker(kwargs):
    env_kwargs = {**PAPER, **kwargs}
    n, seed = 3, 7
    two = MetaReferentialGameTwoPlayerVector(num_envs=n, seed=seed, **env_kwargs)
    one = MetaReferentialGameVector(num_envs=n, seed=seed, **env_kwargs)
    cfg = two.config
    obs2, info2 = two.reset(seed=seed)
    obs1, info1 = one.reset(seed=seed)
    rng = np.random.default_rng(0)
    episodes = np.zeros(n, dtype=int)
    speaker_said = np.zeros((n, cfg.max_sentence_length), dtype=np.int64)
    game_stimulus = {}
    for t in range(600):
        assert equal(obs2["listener"], obs1) and equal(info2, info1), t
        speaker = obs2["speaker"]
        # the speaker sees its own last message (EoS at an episode's start), its role, the listener's mode/outcome
        np.testing.assert_array_equal(speaker["communication_channel"], speaker_said)
        np.testing.assert_array_equal(speaker["role_id"], np.tile([1, 0], (n, 1)))
        for key in ("mode_id", "previous_game_result", "previous_game_reward"):
            np.testing.assert_array_equal(speaker[key], obs1[key])
        # ... and its stimuli, the same through a game, which the listener sees at the game's feedback step
        for i in range(n):
            key = (i, episodes[i], int(info1["game_index"][i]))
            game_stimulus.setdefault(key, speaker["stimulus"][i].copy())
            np.testing.assert_array_equal(speaker["stimulus"][i], game_stimulus[key])
            if info1["round_idx"][i] == -1:
                np.testing.assert_array_equal(speaker["stimulus"][i], obs1["stimulus"][i])
        if t == 300:  # a reseed mid-run
            obs2, info2 = two.reset(seed=seed + 100)
            obs1, info1 = one.reset(seed=seed + 100)
            speaker_said[:] = 0
            episodes += 1
            continue
        messages = posdis_speaker(info2, cfg)
        decisions = rng.integers(cfg.n_decisions, size=n)
        resetting = one.resetting
        obs2, r2, term2, trunc2, info2 = two.step(messages, decisions)
        obs1, r1, term1, trunc1, info1 = one.step(decisions)
        assert equal(r2, r1) and equal(term2, term1) and equal(trunc2, trunc1)
        speaker_said = np.where(resetting[:, None], 0, messages)
        episodes += resetting
    assert episodes.min() >= 2  # whole episodes and autoresets were compared


def test_messages_are_regularised_and_permuted_for_the_listener_only():
    two = MetaReferentialGameTwoPlayerVector(num_envs=2, seed=3, **PAPER)
    obs, info = two.reset(seed=3)
    np.testing.assert_array_equal(obs["listener"]["communication_channel"], 0)  # nothing said yet
    np.testing.assert_array_equal(regularise(np.array([[2, 0, 3], [1, 4, 0]])), [[2, 0, 0], [1, 4, 0]])
    vocab = two.game.current_vocabularies()
    assert sorted(vocab[0, 1:].tolist()) == [1, 2, 3, 4] and (vocab[:, 0] == 0).all()  # a bijection, EoS fixed
    obs, *_ = two.step(np.array([[2, 0, 3], [1, 4, 0]]), np.zeros(2, dtype=np.int64))
    np.testing.assert_array_equal(obs["speaker"]["communication_channel"], [[2, 0, 0], [1, 4, 0]])
    np.testing.assert_array_equal(obs["listener"]["communication_channel"],
                                  [[vocab[0, 2], 0, 0], [vocab[1, 1], vocab[1, 4], 0]])
    with pytest.raises(ValueError, match="speaker_messages"):
        two.step(np.full((2, 3), 5), np.zeros(2, dtype=np.int64))  # token 5 > V = 4
    with pytest.raises(ValueError, match="provide_listener_feedback"):
        MetaReferentialGameTwoPlayerVector(num_envs=1, **{**PAPER, "provide_listener_feedback": False})


def test_action_sentences_are_the_wrappers_little_endian_enumeration():
    # V = 2, L = 2: 1 + 2 + 4 = 7 sentences: EoS; 1; 2; (1, 1) (2, 1) (1, 2) (2, 2), the first token least significant
    layout = ActionLayout("combined", n_decisions=2, vocab_size=2, max_len=2)
    assert layout.n_sentences == 7 and layout.n_actions == 15 and layout.noop == 14
    sentences = [[0, 0], [1, 0], [2, 0], [1, 1], [2, 1], [1, 2], [2, 2]]
    np.testing.assert_array_equal(layout.messages(np.arange(7)), sentences)
    np.testing.assert_array_equal(layout.messages(np.arange(7, 14)), sentences)  # decision 1, same sentences
    np.testing.assert_array_equal(layout.messages(np.array([14])), [[0, 0]])  # the no-op says nothing
    np.testing.assert_array_equal(layout.decisions(np.array([3, 10, 14])), [0, 1, 0])
