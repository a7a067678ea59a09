"""A user's listener agent (reprobench.s2b.agents) through the benchmark's loop and the R2D2 runs' evaluation:
scripted agents whose accuracies are known exactly."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scripted_listener import PerfectListener

from reprobench.core.errors import ConfigError
from reprobench.s2b import agents, runs, train

CONFIG = dataclasses.replace(train.TrainConfig(), budget=600, eval_every=250)


class WrongListener(PerfectListener):
    """Always one decision off the right one: every decision wrong."""

    def act(self, observation, info):
        return (np.asarray(info["target_decision"]) + 1) % 2


def test_a_perfect_agent_scores_100_and_a_wrong_one_0_in_every_mode():
    for cls, expected in ((PerfectListener, 1.0), (WrongListener, 0.0)):
        records = agents.run_agent(cls, CONFIG)
        # evaluations at the first step past 250, 500 and at the budget: a step adds at most the 4 actors
        # (autoreset steps add nothing)
        assert [0 <= r["observations"] - t < 4 for r, t in zip(records, (250, 500, 600))] == [True] * 3
        for r in records:
            assert r["zsct_accuracy"] == expected and r["decisions/test"] > 0
            assert all(r[k] == expected for k in r if k.startswith("accuracy/"))


def test_the_agent_and_r2d2_are_scored_on_the_same_evaluation_episodes():
    # the R2D2 listener's greedy policy and the scripted one meet the same decisions (same environments, same count)
    perfect = train.evaluate(PerfectListener(None, None, 4, 0, "cpu"), CONFIG)
    r2d2 = train.Trainer(CONFIG).evaluate()
    assert {k: v for k, v in perfect.items() if k.startswith("decisions/")} == {
        k: v for k, v in r2d2.items() if k.startswith("decisions/")}


def test_the_run_writes_a_curve_with_the_user_class_and_a_bad_class_names_the_key(tmp_path):
    from reprobench.core import curves

    config = runs.zsct_config(1, 1, "faithful", 0, "tiny", 300, 150)
    out = tmp_path / "curve.parquet"
    runs.train_run(config, "zsct", "scripted_listener:PerfectListener", {"n_oc": 1, "shots": 1}, "faithful", "tiny",
                   str(out), "test", "cpu")
    frame, record = curves.read_curve(out)
    assert record["model"] == "scripted_listener.PerfectListener"
    assert record["setting"]["user_class"] == "scripted_listener:PerfectListener"
    assert (curves.wide(frame)["zsct_accuracy"] == 1.0).all()
    with pytest.raises(ConfigError, match="'s2b.zsct.models': cannot import the user's class 'nope.mod:X'"):
        runs.train_run(config, "zsct", "nope.mod:X", {}, "faithful", "tiny", str(tmp_path / "x.parquet"), "test",
                       "cpu")
    assert not (tmp_path / "x.parquet").exists()
