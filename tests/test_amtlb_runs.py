"""The AMTLB run loop, its curve files, the aggregate and the grid: hand-made episodes whose cumulative scores and
ratios are worked out by hand, a scripted environment that checks the calling convention, and real runs on ROMs."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

from reprobench.amtlb import grid, runs, summary
from reprobench.core import curves
from reprobench.core.errors import ConfigError, ResultsFileError

Ep = namedtuple("Ep", "slot game index episode_return frames end_frame truncated cut", defaults=(False,))


def section(**edit):
    import yaml

    from conftest import ROOT

    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())["amtlb"]
    cfg.update(edit)
    return cfg


def write_run(path, experiment, model, seed, games, episodes, rewards, fold=None):
    """`rewards`: {game: [(frame, the game's rewards summed up to it)]}, the entries after (game, 0, 0.0)."""
    record = curves.provenance(paper="amtlb2017", experiment=experiment, model=model, seed=seed, scale="small",
                               variant="faithful", setting={"games": games, "fold": fold}, config={}, device="cpu",
                               start=0, end=0, wall_time_s=0)
    log = [(g, 0, 0.0) for g in games] + [(g, f, v) for g in games for f, v in rewards.get(g, [])]
    curves.write_curve(runs.episode_rows(seed, episodes, log), path, record)


def test_episode_rows_keep_every_measure_and_the_per_game_running_score():
    eps = [Ep(0, "pong", 0, -21.0, 3000, 3000, False), Ep(1, "breakout", 0, 2.0, 800, 800, False),
           Ep(0, "pong", 1, -19.0, 3100, 6100, True, True)]
    log = [("pong", 0, 0.0), ("breakout", 0, 0.0), ("breakout", 790, 2.0), ("pong", 2990, -21.0)]
    rows = _frame(runs.episode_rows(7, eps, log))
    frame = runs.episodes_frame(rows)
    assert frame["step"].tolist() == [0, 1, 2]
    assert frame["game"].tolist() == ["pong", "breakout", "pong"]
    assert frame["return"].tolist() == [-21.0, 2.0, -19.0]
    assert frame["cumulative_score"].tolist() == [-21.0, 2.0, -40.0]  # per game: -21, then -21 - 19
    assert frame["end_frame"].tolist() == [3000, 800, 6100]
    assert frame["truncated"].tolist() == [0.0, 0.0, 1.0]
    assert frame["finished"].tolist() == [1.0, 1.0, 0.0]  # the last one cut by the benchmark
    assert set(frame["seed"]) == {7}
    rewards = runs.rewards_frame(rows)
    assert list(rewards.itertuples(index=False, name=None)) == [(g, f, v) for g, f, v in log]


def _frame(rows):
    import pandas as pd

    return pd.DataFrame(rows)


class ScriptedEnvs:
    """Two slots; slot 0's episodes last 2 steps, slot 1's 3; reward = the action taken; quota 12 steps' frames."""

    def __init__(self):
        self.t, self.frames, self.done, self.lengths, self.age, self.ret = 0, {"g": 0}, False, [2, 3], [0, 0], [0, 0]
        self.count = 0

    def reset(self):
        return np.zeros((2, 1)), []

    def step(self, actions):
        self.t += 1
        self.frames["g"] += 8
        finished, starts = [], np.zeros(2, dtype=bool)
        for s in range(2):
            self.age[s] += 1
            self.ret[s] += float(actions[s])
            if self.age[s] == self.lengths[s] or self.t == 6:
                finished.append(Ep(s, "g", self.count, self.ret[s], 4 * self.age[s], self.frames["g"], self.t == 6))
                self.count += 1
                starts[s], self.age[s], self.ret[s] = True, 0, 0
        self.done = self.t == 6
        return np.full((2, 1), self.t), np.asarray(actions, dtype=float), starts, finished

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


class Recorder:
    """Acts t + slot at step t and records what the benchmark hands it."""

    def __init__(self):
        self.calls = []

    def act(self, obs, rewards, starts):
        self.calls.append((obs[:, 0].tolist(), rewards.tolist(), starts.tolist()))
        return np.array([len(self.calls), len(self.calls) + 10])


def test_play_hands_the_previous_reward_and_the_episode_starts_to_the_architecture():
    agent, envs = Recorder(), ScriptedEnvs()
    episodes = runs.play(agent, envs)
    assert len(agent.calls) == 6
    # first call: zero rewards, every slot starts; then the reward of the previous action (= that action)
    assert agent.calls[0] == ([0, 0], [0.0, 0.0], [True, True])
    assert agent.calls[1] == ([1, 1], [1.0, 11.0], [False, False])
    assert agent.calls[2] == ([2, 2], [2.0, 12.0], [True, False])  # slot 0 ended at step 2
    assert agent.calls[3][2] == [False, True]  # slot 1 ended at step 3
    # slot 0: episodes of steps 1-2, 3-4, 5-6 (truncated); slot 1: 1-3, 4-6 (6 ends the quota)
    returns = sorted((e.slot, e.episode_return) for e in episodes)
    assert returns == [(0, 1.0 + 2.0), (0, 3.0 + 4.0), (0, 5.0 + 6.0), (1, 11.0 + 12.0 + 13.0), (1, 14.0 + 15.0 + 16.0)]


def test_aggregate_computes_c_t_and_every_ratio_by_hand(tmp_path):
    # budget 100 frames, grid 50, 100. C(t) is every reward received up to frame t:
    # fresh: +2 by 40, +2 by 90 -> C = 2, 4; then an episode the quota cuts (+9 at frame 103, past the budget)
    # random: +1 at 30 -> 1, 1
    # transfer: +6 at 50 (an episode ending there), then an episode the quota cuts at frame 104: +1 at 70, +1 at 100
    # (and +5 at 104, past the budget) -> C = 6, 8. Counting finished episodes only, C(100) would be 6.
    # ratio 6/2 = 3, 8/4 = 2; r 2, 1; faithful -2, -1; normalised (6-1)/(2-1) = 5, (8-1)/(4-1) = 7/3.
    paths = [tmp_path / "fresh.parquet", tmp_path / "random.parquet", tmp_path / "transfer.parquet"]
    write_run(paths[0], "fresh", "ppo", 0, ["pong"],
              [Ep(0, "pong", 0, 2, 40, 40, False), Ep(0, "pong", 1, 2, 50, 90, False),
               Ep(0, "pong", 2, 9, 14, 104, True, True)], {"pong": [(40, 2.0), (90, 4.0), (103, 13.0)]})
    write_run(paths[1], "fresh", "random", 0, ["pong"], [Ep(0, "pong", 0, 1, 30, 30, False),
                                                         Ep(0, "pong", 1, 0, 50, 80, False)], {"pong": [(30, 1.0)]})
    write_run(paths[2], "transfer", "ppo", 0, ["pong"],
              [Ep(0, "pong", 0, 6, 50, 50, False), Ep(0, "pong", 1, 7, 54, 104, True, True)],
              {"pong": [(50, 6.0), (70, 7.0), (100, 8.0), (104, 13.0)]}, fold=1)
    out = summary.aggregate([str(p) for p in paths], frames_per_game=100, points=2, eps=1.0)
    t = out["transfer"].pivot_table(index="t", columns="measure", values="value")
    assert t.index.tolist() == [50, 100]
    np.testing.assert_allclose(t["ratio"], [3.0, 2.0])
    np.testing.assert_allclose(t["r"], [2.0, 1.0])
    np.testing.assert_allclose(t["faithful"], [-2.0, -1.0])
    np.testing.assert_allclose(t["normalised"], [5.0, 7.0 / 3.0])
    assert set(out["transfer"]["fold"]) == {1}
    scores = out["scores"].set_index("run")
    # last-100 and best over finished episodes only: the cut +9 is not an episode a monitor would count
    assert scores.loc["specialist", "last100"] == 2.0 and scores.loc["specialist", "best"] == 2.0
    assert (scores.loc["specialist", "episodes"], scores.loc["specialist", "cut"]) == (2, 1)
    assert scores.loc["specialist", "c_final"] == 4.0 and scores.loc["random", "c_final"] == 1.0


def test_a_curve_without_rewards_by_frame_is_refused(tmp_path):
    path = tmp_path / "old.parquet"
    record = curves.provenance(paper="amtlb2017", experiment="fresh", model="ppo", seed=0, scale="small",
                               variant="faithful", setting={"games": ["pong"], "fold": None}, config={}, device="cpu",
                               start=0, end=0, wall_time_s=0)
    rows = runs.episode_rows(0, [Ep(0, "pong", 0, 2, 40, 40, False)])
    keep = [i for i, m in enumerate(rows["metric"]) if m != "finished"]  # as written before issue 24
    curves.write_curve({k: [v[i] for i in keep] for k, v in rows.items()}, path, record)
    with pytest.raises(ResultsFileError, match="no rewards by frame"):
        summary.aggregate([str(path)], frames_per_game=100, points=2, eps=1.0)


def test_the_generalist_is_scored_per_game_on_that_game_s_clock(tmp_path):
    path = tmp_path / "generalist.parquet"
    write_run(path, "generalist", "ppo", 0, ["pong", "breakout"],
              [Ep(0, "pong", 0, -3, 60, 60, False), Ep(1, "breakout", 0, 5, 40, 40, False),
               Ep(0, "breakout", 1, 1, 70, 110, False), Ep(1, "pong", 1, -1, 30, 90, True)],
              {"pong": [(20, -1.0), (60, -3.0), (90, -4.0)], "breakout": [(40, 5.0), (105, 6.0)]})
    out = summary.aggregate([str(path)], frames_per_game=100, points=2, eps=1.0)
    m = out["multitask"].set_index(["game", "t"])["cumulative"]
    assert m[("pong", 50)] == -1.0 and m[("pong", 100)] == -4.0  # -1 at frame 20, within the unfinished episode
    assert m[("breakout", 50)] == 5.0 and m[("breakout", 100)] == 5.0  # the +1 at frame 105 is past the grid


def test_the_grid_plans_every_run_of_the_protocol():
    g = grid.Grid(section(games=["breakout", "pong", "freeway"], folds=3, seeds=2))
    g.check()
    folds = g.folds()
    assert sorted(x for f in folds for x in f) == ["breakout", "freeway", "pong"]
    assert len(g.fresh_curves()) == len(g.fresh_curves("random")) == 6
    assert len(g.pretrain_curves()) == 6 and len(g.transfer_curves()) == 6 and len(g.generalist_curves()) == 2
    assert all("model=ppo" in c for c in g.transfer_curves())


@pytest.mark.parametrize(("edit", "key"), [({"architecture": "random"}, "amtlb.architecture"),
                                           ({"architecture": "no such thing"}, "amtlb.architecture"),
                                           ({"games": ["breakout", "pongg"]}, "amtlb.games"),
                                           ({"games": ["breakout", "pong"], "folds": 3}, "amtlb.folds")])
def test_bad_config_names_its_key(edit, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        grid.Grid(section(**edit)).check()


# --- real runs on the ROMs ------------------------------------------------------------------------------------------
ATARI = {"repeat_action_probability": 0.25, "frameskip": 4, "noop_max": 30, "use_fire_reset": True,
         "episodic_life": False, "max_num_frames_per_episode": 108000, "max_steps_without_reward": 10000}


def real_run(tmp_path, kind, architecture, games, name, **kw):
    out = tmp_path / f"{name}.parquet"
    runs.run(kind, architecture, games, 0, str(out), frames_per_game=kw.pop("frames", 1200), num_envs=2,
             settings=ATARI, scale="small", device="cpu", threads=1, **kw)
    frame, record = curves.read_curve(out)
    return runs.episodes_frame(frame), record


def test_a_user_architecture_plays_its_game_to_the_quota(tmp_path):
    episodes, record = real_run(tmp_path, "fresh", "scripted_atari:ScriptedAtari", ["pong"], "fresh")
    assert record["model"] == "scripted_atari.ScriptedAtari" and record["setting"]["user_class"]
    frames = record["setting"]["frames"]["pong"]
    # the quota is spent: two slots of 4-frame steps overshoot it by less than one step each (plus reset frames)
    assert 1200 <= frames < 1200 + 2 * 4 + 2 * 4 * (30 + 2)
    assert episodes["frames"].sum() == frames and episodes["end_frame"].max() == frames
    assert episodes["truncated"].iloc[-1] == 1.0 and (episodes["end_frame"].diff().dropna() >= 0).all()


def test_ppo_pretrains_saves_its_weights_and_a_transfer_run_starts_from_them(tmp_path):
    weights = tmp_path / "weights.pt"
    pre, record = real_run(tmp_path, "pretrain", "ppo", ["breakout", "pong"], "pretrain", fold=0,
                           save_weights=str(weights))
    assert set(pre["game"]) == {"breakout", "pong"} and weights.stat().st_size > 1_000_000  # 1.7M float32
    assert record["setting"]["frames"]["breakout"] >= 1200 and record["setting"]["frames"]["pong"] >= 1200
    transfer, record = real_run(tmp_path, "transfer", "ppo", ["freeway"], "transfer", fold=0,
                                load_weights=str(weights))
    assert set(transfer["game"]) == {"freeway"} and record["config"]["load_weights"] == str(weights)


def test_a_killed_run_resumes_from_its_checkpoint(tmp_path, monkeypatch):
    from scripted_atari import ScriptedAtari

    whole, _ = real_run(tmp_path, "fresh", "scripted_atari:ScriptedAtari", ["breakout"], "whole", frames=4000)
    checkpoint = tmp_path / "run.pt"
    real_act, calls = ScriptedAtari.act, {"n": 0}

    def dying_act(self, *args):
        calls["n"] += 1
        if calls["n"] > 300:
            raise KeyboardInterrupt("killed")
        return real_act(self, *args)

    monkeypatch.setattr(ScriptedAtari, "act", dying_act)
    with pytest.raises(KeyboardInterrupt):
        real_run(tmp_path, "fresh", "scripted_atari:ScriptedAtari", ["breakout"], "resumed", frames=4000,
                 checkpoint=str(checkpoint), checkpoint_minutes=0.0)
    assert checkpoint.exists()
    calls["n"] = -10**9  # counts the resumed run's calls, without dying
    resumed, record = real_run(tmp_path, "fresh", "scripted_atari:ScriptedAtari", ["breakout"], "resumed", frames=4000,
                               checkpoint=str(checkpoint), checkpoint_minutes=0.0)
    assert not checkpoint.exists()  # removed once the curve is written
    # it resumed (a run started over would make as many calls as the whole run: about 4000 / 8)
    assert calls["n"] + 10**9 < 4000 // 8 - 250
    # the episodes in progress at the checkpoint are closed as truncated; the quota is spent all the same
    assert resumed["truncated"].sum() >= 2 and record["setting"]["frames"]["breakout"] >= 4000
    assert resumed["frames"].sum() == record["setting"]["frames"]["breakout"]
    # until the checkpoint the run is the uninterrupted one
    first = whole[whole["end_frame"] <= resumed.loc[resumed["truncated"] == 1.0, "end_frame"].min()]
    assert len(first) > 0 and resumed.iloc[:len(first)][["game", "return", "frames"]].equals(
        first[["game", "return", "frames"]])
