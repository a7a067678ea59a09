"""S2B's meta-referential game and recall environments against values worked out by hand from specs/s2b.md
sections 2 and 5.7 on tiny symbolic spaces."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from reprobench.s2b.env import MetaReferentialGame, episode_keys, generate_episode, generate_episodes, make_config
from reprobench.s2b.envs import GAME_ID, RECALL_ID, register_envs
from reprobench.s2b.recall import RecallGame
from reprobench.s2b.stimuli import is_query_combination
from reprobench.s2b.vector_env import MetaReferentialGameVector

# the paper-era listener setting: descriptive, K = 0, listener feedback (section 2.1, Regym scripts)
PAPER = dict(descriptive=True, nbr_distractors=0, provide_listener_feedback=True)
CUBE2 = dict(min_nbr_values_per_latent=2, max_nbr_values_per_latent=2)  # d = (2, 2, 2): 4 train, 4 test combos


def n_train(d) -> int:
    """#train combinations of the combinatorial2 split, by the spec's formula (section 1.4)."""
    e, o = -(-np.asarray(d) // 2), np.asarray(d) // 2
    return int(np.prod(e) + sum(o[i] * np.prod(np.delete(e, i)) for i in range(len(d))))


def play(env, policy, seed=None):
    """One episode: list of (obs_before, info_before, reward, obs_after, info_after, terminated)."""
    obs, info = env.reset(seed=seed)
    out, done = [], False
    while not done:
        nxt, reward, done, truncated, nxt_info = env.step({"decision": policy(obs, info),
                                                           "communication_channel": np.zeros(3, dtype=np.int64)})
        assert not truncated
        out.append((obs, info, reward, nxt, nxt_info, done))
        obs, info = nxt, nxt_info
    return out


def oracle(obs, info):
    return info["target_decision"]


def test_spaces_and_observation_layout_k0_n3_l3():
    env = MetaReferentialGame(**PAPER)
    assert env.action_space["decision"] == gymnasium.spaces.Discrete(2)  # K + 1 + descriptive
    assert env.action_space["communication_channel"] == gymnasium.spaces.MultiDiscrete([7, 7, 7])  # V + 1 = 7, L = 3
    obs, info = env.reset(seed=0)
    shapes = {key: value.shape for key, value in obs.items()}
    assert shapes == {"stimulus": (3,), "communication_channel": (3,), "other_agent_id": (10,), "role_id": (2,),
                      "mode_id": (2,), "previous_game_reward": (1,), "previous_game_result": (2,)}
    assert obs["stimulus"].dtype == np.float32 and obs in env.observation_space
    np.testing.assert_array_equal(obs["role_id"], [0, 1])  # listener
    np.testing.assert_array_equal(obs["mode_id"], [1, 0])  # support
    np.testing.assert_array_equal(obs["previous_game_result"], [0, 0])  # before the first game
    np.testing.assert_array_equal(obs["communication_channel"], [0, 0, 0])  # nothing uttered yet
    assert obs["previous_game_reward"][0] == 0 and ((0 <= obs["other_agent_id"]) & (obs["other_agent_id"] < 1)).all()
    assert info["round_idx"] == 0 and info["phase"] == "support" and info["mode"] == "train0"
    np.testing.assert_array_equal(info["round_id"], [1, 0])  # (1, R + 1) one-hot in the reference
    # the constructor defaults (section 2.1): K = 1, not descriptive, so 2 decisions and 2 stimuli of 3 dimensions
    default = MetaReferentialGame()
    assert default.action_space["decision"].n == 2 and default.observation_space["stimulus"].shape == (6,)
    assert MetaReferentialGame(descriptive=True, nbr_distractors=2).action_space["decision"].n == 4


def test_one_game_follows_the_spec_trace():
    env = MetaReferentialGame(**PAPER, use_communication_channel_permutations=False)
    obs0, info0 = env.reset(seed=3)
    message = info0["speaker_latents"] + 1  # posdis, no permutation
    obs1, r1, *_, info1 = env.step({"decision": 0, "communication_channel": np.zeros(3, dtype=np.int64)})
    assert r1 == 0 and info1["round_idx"] == 1 and not info1["decided"]
    np.testing.assert_array_equal(obs1["communication_channel"], message)  # the speaker's round-0 utterance
    np.testing.assert_array_equal(obs1["stimulus"], obs0["stimulus"])
    target = info1["target_decision"]
    obs2, r2, term, _, info2 = env.step({"decision": target, "communication_channel": np.zeros(3, dtype=np.int64)})
    assert r2 == 1 and not term and info2["decided"] and info2["correct"] and info2["decision_phase"] == "support"
    assert info2["round_idx"] == -1 and not info2["round_id"].any()  # feedback
    np.testing.assert_array_equal(obs2["previous_game_result"], [0, 1])
    assert obs2["previous_game_reward"][0] == 1
    # feedback shows the speaker's stimulus; with O = 1 a retained target is the very same vector
    assert (target == 0) == np.array_equal(obs1["stimulus"], obs2["stimulus"])
    obs3, r3, *_, info3 = env.step(0)  # a bare integer is the decision
    assert r3 == 0 and info3["round_idx"] == 0 and info3["game_index"] == 1
    np.testing.assert_array_equal(obs3["communication_channel"], [0, 0, 0])  # the speaker's EoS at feedback
    np.testing.assert_array_equal(obs3["previous_game_result"], [0, 1])  # carried until the next decision


def test_games_without_feedback_chain_round_r_into_the_next_round_0():
    env = MetaReferentialGame(nbr_distractors=0, use_communication_channel_permutations=False, **CUBE2)
    trace = play(env, lambda obs, info: 0, seed=5)  # not descriptive, K = 0: decision 0 is always right
    assert len(trace) == 2 * 8
    obs0 = trace[0][0]
    np.testing.assert_array_equal(obs0["communication_channel"], [0, 0, 0])  # nothing uttered before the first game
    for i, (_, info, reward, nxt, nxt_info, done) in enumerate(trace):
        assert info["round_idx"] == i % 2 and info["game_index"] == i // 2
        assert reward == (1 if i % 2 else 0)
        if i % 2:  # the decision step returns the next game's round 0, carrying the repeated message (R = 1)
            np.testing.assert_array_equal(nxt["communication_channel"], info["speaker_latents"] + 1)
            np.testing.assert_array_equal(nxt["previous_game_result"], [0, 1])
            assert nxt_info["round_idx"] == (-1 if done else 0)
    np.testing.assert_array_equal(trace[-1][3]["mode_id"], [0, 1])


@pytest.mark.parametrize("kwargs, steps", [
    (dict(provide_listener_feedback=True), 3 * 8 - 1),  # (R + 2) #RGs - 1, 4 support + 4 query games
    (dict(provide_listener_feedback=True, nbr_shots=2), 3 * 12 - 1),  # two passes over the support games
    (dict(provide_listener_feedback=False), 2 * 8),  # (R + 1) #RGs
    (dict(provide_listener_feedback=True, nbr_communication_rounds=2), 4 * 8 - 1),
    (dict(provide_listener_feedback=True, nbr_object_centric_samples=2), 3 * 16 - 1),  # every stimulus: 8 + 8
])
def test_episode_length_without_a_sampling_strategy(kwargs, steps):
    env = MetaReferentialGame(**CUBE2, **kwargs)
    trace = play(env, oracle, seed=1)
    assert len(trace) == steps and trace[-1][-1] and not any(t[-1] for t in trace[:-1])
    phases = [t[1]["phase"] for t in trace if t[4]["decided"]]  # the decided games' (test_s2b_phase_switch: scoring)
    n_oc = kwargs.get("nbr_object_centric_samples", 1)
    assert phases.count("support") == 4 * n_oc * kwargs.get("nbr_shots", 1) and phases.count("query") == 4 * n_oc
    assert phases == sorted(phases, key=["support", "query"].index)  # supporting phase, then querying phase
    modes = [t[1]["mode"] for t in trace if t[4]["decided"]]
    assert set(modes) == {"test", *(f"train{k}" for k in range(kwargs.get("nbr_shots", 1)))}


def test_episode_length_follows_the_split_sizes():
    env = MetaReferentialGame(**PAPER, min_nbr_values_per_latent=2, max_nbr_values_per_latent=4)
    for seed in range(3):
        trace = play(env, oracle, seed=seed)
        d = env.episode.space.n_values
        train = n_train(d)
        assert len(trace) == 3 * (train + (np.prod(d) - train)) - 1


def test_component_focused_support_covers_every_value_s_times():
    env = MetaReferentialGame(**PAPER, sampling_strategy="component-focused-2shots")
    for seed in range(2):
        trace = play(env, oracle, seed=seed)
        ep = env.episode
        latents = np.array([t[1]["speaker_latents"] for t in trace if t[4]["decision_phase"] == "support"])
        for i, d in enumerate(ep.space.n_values):
            assert np.bincount(latents[:, i], minlength=d).min() >= 2
        assert len(latents) == len(ep.support)
        assert len(trace) == 3 * (len(ep.support) + len(ep.query)) - 1


def test_oracle_listener_wins_every_game_and_the_target_is_where_the_spec_says():
    for kwargs in (PAPER, dict(nbr_distractors=2, provide_listener_feedback=True)):
        env = MetaReferentialGame(**kwargs, sampling_strategy="component-focused-1shot")
        for seed in range(3):
            trace = play(env, oracle, seed=seed)
            decided = [t for t in trace if t[4]["decided"]]
            assert all(t[2] == 1 and t[4]["correct"] for t in decided)
            query = [t[4]["correct"] for t in decided if t[4]["decision_phase"] == "query"]
            assert len(query) == len(env.episode.query) and np.mean(query) == 1.0  # 100 % ZSCT accuracy
            for obs, info, _, feedback, *_ in decided:  # independent of target_decision: compare the vectors
                n = len(obs["stimulus"]) // 3
                slots = obs["stimulus"].reshape(n, 3)
                same = np.flatnonzero((slots == feedback["stimulus"][:3]).all(axis=1))
                expected = same[0] if len(same) else n  # "none of them" is the last decision, K + 1
                assert info["target_decision"] == expected


def test_listener_that_always_errs_gets_zero_in_support_and_minus_two_in_query():
    env = MetaReferentialGame(**PAPER, sampling_strategy="component-focused-1shot")
    trace = play(env, lambda obs, info: 1 - info["target_decision"], seed=4)
    rewards = {"support": set(), "query": set()}
    for _, _, reward, obs, info, _ in trace:
        if info["decided"]:
            rewards[info["decision_phase"]].add(reward)
            np.testing.assert_array_equal(obs["previous_game_result"], [1, 0])
            assert obs["previous_game_reward"][0] == reward
        else:
            assert reward == 0
    assert rewards == {"support": {0.0}, "query": {-2.0}}


def test_vocabulary_permutation_is_a_bijection_redrawn_every_episode():
    env = MetaReferentialGame(**PAPER)
    seen = set()
    for seed in range(6):
        trace = play(env, oracle, seed=seed)
        vocab = env.vocabulary
        assert vocab[0] == 0 and sorted(vocab[1:]) == list(range(1, 7))
        seen.add(tuple(vocab))
        for _, _, _, obs, info, _ in trace:
            if info["round_idx"] == 1:  # the listener sees the permuted posdis message
                np.testing.assert_array_equal(obs["communication_channel"], vocab[info["speaker_latents"] + 1])
    assert len(seen) >= 5  # 6 episodes, 720 x 720 bijection pairs
    env = MetaReferentialGame(**PAPER, use_communication_channel_permutations=False)
    env.reset(seed=0)
    np.testing.assert_array_equal(env.vocabulary, np.arange(7))


@pytest.mark.parametrize("kwargs, p_none", [
    (dict(descriptive=True, nbr_distractors=0), 0.5),  # 1 - 1 / (1 + K + 1)
    (dict(descriptive=True, nbr_distractors=2), 0.75),
    (dict(descriptive=True, nbr_distractors=0, descriptive_target_ratio=1.0), 0.0),  # the 2022-12 window for K = 0
    (dict(descriptive=False, nbr_distractors=1), 0.0),
])
def test_descriptive_ratio_over_many_episodes(kwargs, p_none):
    env = MetaReferentialGame(**kwargs, min_nbr_values_per_latent=2, max_nbr_values_per_latent=3)
    k, targets = kwargs["nbr_distractors"], []
    env.reset(seed=11)
    while len(targets) < 3000:
        ep = env.episode
        targets.extend(ep.target[ep.decision])
        env.reset()
    targets = np.array(targets)
    assert targets.max() <= k + int(kwargs["descriptive"])
    none = np.mean(targets == k + 1)
    assert abs(none - p_none) <= 4 * np.sqrt(p_none * (1 - p_none) / len(targets)) + 1e-12
    if k > 0:  # a retained target is uniform over the K + 1 slots
        kept = np.bincount(targets[targets <= k], minlength=k + 1)
        assert np.abs(kept / kept.sum() - 1 / (k + 1)).max() < 0.05


def test_distractors_are_other_classes_of_the_phase():
    env = MetaReferentialGame(nbr_distractors=2, provide_listener_feedback=True)
    for seed in range(3):
        trace = play(env, oracle, seed=seed)
        for _, _, _, _, info, _ in trace:
            if info["round_idx"] != -1:
                continue
            sets = info["listener_latents"]  # at feedback: the speaker's set, target first
            np.testing.assert_array_equal(sets[0], info["speaker_latents"])
            assert len({tuple(c) for c in sets}) == 3  # distinct classes
            if info["phase"] == "support":  # train classes only
                assert not is_query_combination(sets).any()


@pytest.mark.parametrize("variant, low, high", [("faithful", 0.15, 0.35), ("corrected", 0.0, 0.0)])
def test_speaker_oc_index_variant(variant, low, high):
    env = MetaReferentialGame(nbr_distractors=0, nbr_object_centric_samples=4, provide_listener_feedback=True,
                              variant=variant, **CUBE2)
    same = []
    for seed in range(12):
        for obs, _, _, feedback, info, _ in play(env, oracle, seed=seed):
            if info["decided"]:  # not descriptive: the target is always retained, in another OC sample
                same.append(np.array_equal(obs["stimulus"], feedback["stimulus"]))
    assert len(same) == 12 * 32 and low <= np.mean(same) <= high  # P = 1/O = 0.25 faithful, 0 corrected


def test_query_all_queries_every_test_stimulus():
    kwargs = dict(**PAPER, min_nbr_values_per_latent=4, max_nbr_values_per_latent=5,
                  sampling_strategy="component-focused-1shot")
    sampled, full = MetaReferentialGame(**kwargs), MetaReferentialGame(**kwargs, query_all=True)
    n_sampled = []
    for seed in range(4):
        sampled.reset(seed=seed)
        full.reset(seed=seed)
        d = full.episode.space.n_values
        assert len(full.episode.query) == np.prod(d) - n_train(d)
        n_sampled.append(len(sampled.episode.query) / (np.prod(d) - n_train(d)))
    assert min(n_sampled) < 1  # the faithful query phase is a sample of the test split


def test_errors_name_the_argument():
    for kwargs, name in [(dict(vocab_size=5), "vocab_size"), (dict(sampling_strategy="4shots"), "sampling_strategy"),
                         (dict(variant="fixed"), "variant"), (dict(observability="partial"), "observability"),
                         (dict(descriptive_target_ratio=1.5), "descriptive_target_ratio"),
                         (dict(nbr_distractors=-1), "nbr_distractors")]:
        with pytest.raises(ValueError, match=name):
            MetaReferentialGame(**kwargs)
    env = MetaReferentialGame(**PAPER)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="decision"):
        env.step({"decision": 2})


def test_registration_make_and_gymnasium_check_env():
    register_envs()
    register_envs()  # idempotent
    env = gymnasium.make(GAME_ID, **PAPER)
    assert isinstance(env.unwrapped, MetaReferentialGame)
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert obs in env.observation_space
    vec = gymnasium.make_vec(GAME_ID, num_envs=3, **PAPER)
    assert isinstance(vec.unwrapped, MetaReferentialGameVector) and vec.num_envs == 3
    assert vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, _ = vec.reset(seed=0)
    assert obs in vec.observation_space
    recall = gymnasium.make(RECALL_ID, representation="ohe")
    assert isinstance(recall.unwrapped, RecallGame)
    check_env(recall.unwrapped, skip_render_check=True)
    recalls = gymnasium.make_vec(RECALL_ID, num_envs=3, representation="ohe")
    assert type(recalls.unwrapped).__name__ == "RecallGameVector" and recalls.num_envs == 3
    assert recalls.reset(seed=0)[0] in recalls.observation_space


@pytest.mark.parametrize("kwargs", [
    dict(descriptive=True, nbr_distractors=1, nbr_object_centric_samples=2, provide_listener_feedback=True,
         max_nbr_values_per_latent=3, sampling_strategy="component-focused-1shot"),
    dict(nbr_distractors=0, max_nbr_values_per_latent=3, nbr_communication_rounds=2),  # no feedback, 2 rounds
])
def test_vector_env_equals_a_loop_of_single_envs(kwargs):
    n = 4
    vec = MetaReferentialGameVector(num_envs=n, **kwargs)
    loop = SyncVectorEnv([lambda: MetaReferentialGame(**kwargs) for _ in range(n)])
    assert vec.single_observation_space == loop.single_observation_space
    assert vec.single_action_space == loop.single_action_space
    first = vec.reset(seed=7), loop.reset(seed=7)
    assert data_equivalence(*first, exact=True)
    rng, ends = np.random.default_rng(0), 0
    for _ in range(250):
        actions = {"decision": rng.integers(vec.single_action_space["decision"].n, size=n),
                   "communication_channel": np.zeros((n, 3), dtype=np.int64)}
        got, want = vec.step(actions), loop.step(actions)
        for name, a, b in zip(("obs", "reward", "terminated", "truncated", "info"), got, want):
            assert data_equivalence(a, b, exact=True), name
        ends += int(got[2].sum())
    assert ends >= 2 * n  # autoresets were exercised
    assert not data_equivalence(vec.reset(seed=8)[0], loop.reset(seed=7)[0])  # and the check can tell seeds apart


TABLE2 = dict(PAPER, sampling_strategy="component-focused-1shot")  # the paper's Table 2 listener setting (O = 1, S = 1)
BATCH_CONFIGS = [
    TABLE2,
    dict(descriptive=True, nbr_distractors=2, nbr_object_centric_samples=3, provide_listener_feedback=True,
         sampling_strategy="component-focused-2shots", variant="corrected"),
    dict(nbr_distractors=1, nbr_communication_rounds=3, max_sentence_length=1, nbr_shots=2),  # Fig. 6: no feedback
    dict(PAPER, nbr_object_centric_samples=4, sampling_strategy="component-focused-1shot", query_all=True),
]


@pytest.mark.parametrize("kwargs", BATCH_CONFIGS)
def test_an_episode_drawn_in_a_batch_equals_the_episode_drawn_alone(kwargs):
    cfg = make_config(**kwargs)
    rng = np.random.default_rng(3)
    keys = episode_keys(rng, 40)
    batch = generate_episodes(keys, cfg)
    assert len(batch) == 40 and (batch.n_steps >= 1).all()
    again = np.random.default_rng(3)  # the keys are the generator's raw outputs, one per episode, in order
    for b in range(40):
        alone = generate_episode(again, cfg)
        if b % 7:
            continue
        for name, value in vars(batch.episode(b)).items():
            if name == "space":
                for key, array in vars(value).items():
                    np.testing.assert_array_equal(array, getattr(alone.space, key), err_msg=key)
            else:
                assert data_equivalence(value, getattr(alone, name), exact=True), name


def test_vector_env_equals_the_loop_through_refills_arena_moves_and_reseeding():
    # one episode drawn ahead (refills every few steps, the arena compacted often), and resets with and without
    # seeds in the middle of the run
    n, kwargs = 6, dict(TABLE2, min_nbr_values_per_latent=2, max_nbr_values_per_latent=3)
    vec = MetaReferentialGameVector(num_envs=n, **kwargs, episodes_ahead=1)
    loop = SyncVectorEnv([lambda: MetaReferentialGame(**kwargs) for _ in range(n)])
    assert data_equivalence(vec.reset(seed=11), loop.reset(seed=11), exact=True)
    rng, ends = np.random.default_rng(1), 0
    for step in range(600):
        if step == 200:
            assert data_equivalence(vec.reset(), loop.reset(), exact=True)
        if step == 400:
            seeds = [5, None, 6, None, None, 7]
            assert data_equivalence(vec.reset(seed=seeds), loop.reset(seed=seeds), exact=True)
        actions = {"decision": rng.integers(2, size=n), "communication_channel": np.zeros((n, 3), dtype=np.int64)}
        got, want = vec.step(actions), loop.step(actions)
        for name, a, b in zip(("obs", "reward", "terminated", "truncated", "info"), got, want):
            assert data_equivalence(a, b, exact=True), (step, name)
        ends += int(got[2].sum())
    assert ends >= 6 * n


def test_recall_spaces_and_queries():
    for representation, dim in (("scs", 3), ("ohe", 15)):
        env = RecallGame(representation=representation)
        assert env.observation_space["stimulus"].shape == (dim,) and env.action_space.n == 6  # V_max + 1
        obs, info = env.reset(seed=0)
        assert not info["is_query"] and obs in env.observation_space
        query, reward, *_, qinfo = env.step(env.noop)  # step A: any action, reward 0
        assert reward == 0 and qinfo["is_query"]
        q = qinfo["query_dim"]
        expected = np.eye(3)[q] if representation == "scs" else np.repeat(np.eye(3)[q], 5)
        np.testing.assert_array_equal(query["stimulus"], expected)
        if representation == "ohe":  # the shown one-hot encodes the answer
            assert obs["stimulus"].reshape(3, 5)[q].argmax() == qinfo["target"]
        nxt, reward, *_, ninfo = env.step(qinfo["target"])
        assert reward == 0 and ninfo["correct"] and ninfo["decision_mode"] == "train0"
        np.testing.assert_array_equal(nxt["previous_game_result"], [0, 1])
        env.step(0)
        _, reward, *_, winfo = env.step((env._timeline["target"][env._t] + 1) % 6)  # a wrong answer
        assert reward == -1 and not winfo["correct"]


@pytest.mark.parametrize("variant", ["faithful", "corrected"])
def test_recall_stale_third_pass(variant):
    ohe = RecallGame(representation="ohe", variant=variant)
    obs, info = ohe.reset(seed=2)
    stimuli_shown, modes, stale, done = [obs["stimulus"]], [info["mode"]], [info["stale"]], False
    while not done:
        obs, reward, done, _, info = ohe.step(ohe.noop)
        if not info["is_query"] and not done:
            stimuli_shown.append(obs["stimulus"])
            modes.append(info["mode"])
            stale.append(info["stale"])
    shown = np.array(stimuli_shown)
    if variant == "faithful":  # 3 passes of 5 games: 30 steps, the third one stale and labelled train0
        assert ohe.n_steps == 30 and modes == ["train0"] * 5 + ["train1"] * 5 + ["train0"] * 5
        assert stale == [False] * 10 + [True] * 5 and (shown[10:] == shown[9]).all()
    else:  # 2 shots of the same 5 stimuli
        assert ohe.n_steps == 20 and modes == ["train0"] * 5 + ["train1"] * 5 and not any(stale)
        assert sorted(map(tuple, shown[:5])) == sorted(map(tuple, shown[5:]))
        assert len({tuple(s) for s in shown[:5]}) == 5
    scs = RecallGame(representation="scs", variant=variant)
    scs.reset(seed=3)
    games = (3 if variant == "faithful" else 2) * n_train(scs._timeline["n_values"])
    assert scs.n_steps == 2 * games
