"""S2B's late phase switch without listener feedback (issue 25 item 3, DEVIATIONS S21): S2B moves its mode on when the
last round of a mode's last game is shown, before that game's decision is scored (S2B `013d16c` L383-398 run before
L519-547), so the decision is rewarded and counted in the next mode. Expected values worked out by hand below."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import SyncVectorEnv

from reprobench.s2b import train
from reprobench.s2b.env import QUERY, SUPPORT, MetaReferentialGame, make_config, scored_blocks
from reprobench.s2b.vector_env import MetaReferentialGameVector

# d = (2, 2, 2): 4 train and 4 test combinations, O = 1, so without a sampling strategy a support pass is 4 games and
# the query phase 4 games; K = 1 (decisions 0 and 1, one of them right), R = 1, two support passes: 12 games of 2
# observations (round 0, round 1 = the decision), 24 steps.
FIG6_TINY = dict(min_nbr_values_per_latent=2, max_nbr_values_per_latent=2, nbr_distractors=1,
                 nbr_communication_rounds=1, nbr_shots=2, provide_listener_feedback=False)


def memoriser(info):
    """Right on every support game, wrong on every query game (judged by the observation's own phase)."""
    target = info["target_decision"]
    return target if info["phase"] == "support" else 1 - target


def decisions(env, policy, seed=0):
    """Per decided game: (reward, decision_phase, decision_mode, correct, the next observation's previous_game_*)."""
    obs, info = env.reset(seed=seed)
    out, done = [], False
    while not done:
        obs, reward, done, _, nxt = env.step(policy(info))
        if nxt["decided"]:
            out.append((reward, nxt["decision_phase"], nxt["decision_mode"], nxt["correct"],
                        float(obs["previous_game_reward"][0]), tuple(obs["previous_game_result"])))
        else:
            assert reward == 0 and nxt["decision_phase"] == "" and nxt["decision_mode"] == ""
        info = nxt
    return out


def accuracy(trace, mode):
    return np.mean([d[3] for d in trace if d[2] == mode])


def test_memoriser_faithful_order_is_s2b_s():
    trace = decisions(MetaReferentialGame(**FIG6_TINY), memoriser)
    assert len(trace) == 12
    # games 0-2: support pass 0, right: +1, train0. Game 3 (pass 0's last): scored in pass 1 (train1), still +1.
    # Games 4-6: train1. Game 7 (the last support game, right): scored in the query phase, +1, counted in "test".
    # Games 8-10: query, wrong: -2, "test". Game 11 (the last query game, wrong): the modes wrapped to train0, so a
    # support failure, reward 0, counted in train0.
    expected = ([(1.0, "support", "train0")] * 3 + [(1.0, "support", "train1")] * 4 + [(1.0, "query", "test")]
                + [(-2.0, "query", "test")] * 3 + [(0.0, "support", "train0")])
    assert [d[:3] for d in trace] == expected
    # logged accuracies: train0 = {0, 1, 2 right; 11 wrong} = 3/4, train1 = {3..6} = 4/4, the ZSCT (test) one =
    # {7 right; 8, 9, 10 wrong} = 1/4 where the query games alone give 0/4: the bias (support accuracy - query
    # accuracy) / #query games = (1 - 0) / 4
    assert (accuracy(trace, "train0"), accuracy(trace, "train1"), accuracy(trace, "test")) == (0.75, 1.0, 0.25)
    # previous_game_* after the last decision: S2B stores the wrapped mode's reward, 0, and the failure
    assert trace[-1][4:] == (0.0, (1, 0))
    assert sum(d[0] for d in trace) == 8 * 1 - 3 * 2 + 0  # = 2


def test_memoriser_corrected_order_scores_each_game_in_its_own_phase():
    trace = decisions(MetaReferentialGame(**FIG6_TINY, variant="corrected"), memoriser)
    expected = ([(1.0, "support", "train0")] * 4 + [(1.0, "support", "train1")] * 4
                + [(-2.0, "query", "test")] * 4)
    assert [d[:3] for d in trace] == expected
    assert (accuracy(trace, "train0"), accuracy(trace, "train1"), accuracy(trace, "test")) == (1.0, 1.0, 0.0)
    assert trace[-1][4:] == (-2.0, (1, 0))
    assert sum(d[0] for d in trace) == 8 - 4 * 2  # = 0


def test_a_listener_always_wrong_earns_minus_two_on_the_last_support_game_and_zero_on_the_last_query_game():
    for variant, support_last, query_last in (("faithful", -2.0, 0.0), ("corrected", 0.0, -2.0)):
        trace = decisions(MetaReferentialGame(**FIG6_TINY, variant=variant), lambda info: 1 - info["target_decision"])
        rewards = [d[0] for d in trace]
        # games 0-6 support (0 each), 7 the last support game, 8-10 query (-2 each), 11 the last query game
        assert rewards == [0.0] * 7 + [support_last] + [-2.0] * 3 + [query_last], variant
        assert trace[7][4:] == (support_last, (1, 0))  # what the next observation (game 8's round 0) shows


@pytest.mark.parametrize("variant", ["faithful", "corrected"])
def test_with_listener_feedback_every_decision_is_scored_in_its_own_game_s_mode(variant):
    # S2B scores at the feedback step (round_idx -1), before the switch: the late switch is a no-feedback path only
    env = MetaReferentialGame(**{**FIG6_TINY, "provide_listener_feedback": True}, variant=variant)
    obs, info = env.reset(seed=0)
    rewards, done = [], False
    while not done:
        before = info
        obs, reward, done, _, info = env.step(memoriser(before))
        if info["decided"]:
            assert (info["decision_phase"], info["decision_mode"]) == (before["phase"], before["mode"])
            rewards.append(reward)
    assert rewards == [1.0] * 8 + [-2.0] * 4


def test_scored_blocks_by_hand():
    # two episodes without feedback, R = 1, one support pass of 2 games and 2 query games each, then the terminal row:
    #   row:      0  1  2  3  4  5  6  7  8 | 9 10 11 12 13 14 15 16 17
    #   mode:     S  S  S  S  Q  Q  Q  Q  Q | S  S  S  S  Q  Q  Q  Q  Q
    #   shot:     0  0  0  0 -1 -1 -1 -1 -1 | 0  0  0  0 -1 -1 -1 -1 -1
    #   decision:    1     1     1     1    |    1     1     1     1
    # late switch: row 1 -> row 2's (S, 0); row 3 -> row 4's (Q, -1); row 5 -> row 6's (Q, -1); row 7, whose next row
    # is terminal, -> (S, 0), the wrap to train0; the second episode the same
    one = (np.array([0, 0, 0, 0, 1, 1, 1, 1, 1], dtype=np.int8), np.array([0, 0, 0, 0, -1, -1, -1, -1, -1]),
           np.arange(9) == 8)
    mode, shot, terminal = (np.concatenate([a, a]) for a in one)
    rows = [1, 3, 5, 7, 10, 12, 14, 16]
    late = scored_blocks(make_config(), mode, shot, terminal)
    assert late[0][rows].tolist() == [SUPPORT, QUERY, QUERY, SUPPORT] * 2
    assert late[1][rows].tolist() == [0, -1, -1, 0] * 2
    for cfg in (make_config(variant="corrected"), make_config(provide_listener_feedback=True)):
        own = scored_blocks(cfg, mode, shot, terminal)  # each decision in its own game's block
        assert own[0][rows].tolist() == [SUPPORT, SUPPORT, QUERY, QUERY] * 2
        assert own[1][rows].tolist() == [0, 0, -1, -1] * 2


def test_the_late_switch_is_figure_6_s_faithful_runs_only():
    # Figure 6 ran without listener feedback (Regym 2ad02503's s2b_2shots_r2d2_{lstm,dnc}_sad_vdn configs have no
    # feedback key; S2B had none before 50386b3, 2022-01); Table 2 (dc5affee sweeps), Table 4 and Table 1 (10e54b2d
    # run_*.sh) set provide_listener_feedback=True
    late = {name: make_config(**train.preset(name).env).late_switch for name in train.PRESETS
            if train.preset(name).task != "recall"}
    assert late == {name: name.startswith("fig6") for name in late}
    for name in ("fig6_lstm", "fig6_dnc"):
        config = train.corrected(train.preset(name))  # the corrected variant reaches the environment's config
        assert not make_config(**config.env).late_switch


@pytest.mark.parametrize("variant", ["faithful", "corrected"])
def test_vector_env_equals_the_loop_with_the_late_switch(variant):
    # nbr_shots = 2 (pass 0 -> pass 1, support -> query and query -> train0 wraps), one episode drawn ahead so the
    # arena is refilled and compacted often; random decisions reach every scored block
    n, kwargs = 5, dict(FIG6_TINY, max_nbr_values_per_latent=3, variant=variant)
    vec = MetaReferentialGameVector(num_envs=n, **kwargs, episodes_ahead=1)
    loop = SyncVectorEnv([lambda: MetaReferentialGame(**kwargs) for _ in range(n)])
    assert data_equivalence(vec.reset(seed=3), loop.reset(seed=3), exact=True)
    rng, modes = np.random.default_rng(2), set()
    for step in range(400):
        actions = {"decision": rng.integers(2, size=n), "communication_channel": np.zeros((n, 3), dtype=np.int64)}
        got, want = vec.step(actions), loop.step(actions)
        for name, a, b in zip(("obs", "reward", "terminated", "truncated", "info"), got, want, strict=True):
            assert data_equivalence(a, b, exact=True), (step, name)
        info = got[4]
        modes |= {(p, m) for p, m, d in zip(info["decision_phase"], info["decision_mode"], info["decided"]) if d}
    assert modes == {("support", "train0"), ("support", "train1"), ("query", "test")}


class _Memoriser:
    """memoriser() as a batched policy of train.evaluate."""

    def act(self, obs, info):
        target = np.asarray(info["target_decision"])
        return np.where(np.asarray(info["phase"]) == "support", target, 1 - target)

    def observe(self, *args):
        pass


@pytest.mark.skipif(not hasattr(train, "scored_modes"),
                    reason="train.py counts decisions by their observation's mode until the S21 accounting patch "
                           "(train.scored_modes) is applied")
@pytest.mark.parametrize("variant, accuracies", [("faithful", (0.75, 1.0, 0.25)), ("corrected", (1.0, 1.0, 0.0))])
def test_evaluate_counts_each_decision_in_the_mode_that_scored_it(variant, accuracies):
    # 6 episodes of test_memoriser_*'s game on 2 actors, pooled: the per-episode fractions of those tests, 4 decisions
    # per mode and episode, so 24 each
    config = train.TrainConfig(env={**FIG6_TINY, "variant": variant}, eval_actors=2, eval_episodes=6)
    out = train.evaluate(_Memoriser(), config)
    assert (out["accuracy/train0"], out["accuracy/train1"], out["accuracy/test"]) == accuracies
    assert out["decisions/train0"] == out["decisions/train1"] == out["decisions/test"] == 24
