"""S2B's timed checkpoints (issue 27): train.run saves on wall-clock time between evaluations, and a run killed right
after such a save, mid-interval and mid-episode, resumes to the records of an uninterrupted run, bit for bit on CPU;
the real CLI stage killed with SIGKILL writes the curve an uninterrupted process writes."""

from __future__ import annotations

import dataclasses
import types

import pytest
import torch

from reprobench.core import checkpoint as ckpt
from reprobench.s2b import eoa, marl, r2d2, train

torch.set_num_threads(1)


class Killed(Exception):
    """Stands for SIGKILL in-process: raised right after a checkpoint is on disk, nothing after it runs."""


def _tiny(**kw):
    env = dict(train.TABLE2_ENV, vocab_size=4, max_nbr_values_per_latent=3)
    return train.TrainConfig(env=env, n_actors=3, budget=300, eval_every=150, eval_actors=2, eval_episodes=2,
                             r2d2=r2d2.R2D2Config(batch_size=4, replay_capacity=600, min_capacity=60, tau=0.01),
                             recon=r2d2.ReconConfig(hidden=8, store=4, period=5), **kw)


def _tiny_marl():
    config = train.small(train.preset("table1_s1"))
    env = {**config.env, "nbr_object_centric_samples": 1, "max_nbr_values_per_latent": 3, "vocab_size": 4}
    return dataclasses.replace(config, env=env, n_actors=3, budget=300, eval_every=150, eval_actors=2,
                               eval_episodes=2, r2d2=dataclasses.replace(
                                   config.r2d2, episodes_per_cycle=None, min_handled=0, min_capacity=60, tau=0.02,
                                   batch_size=4, n_minibatches=1, unroll=10, burn_in=2, overlap=2, n_step=2))


CASES = {
    "lstm_recon": (_tiny(), None),  # Regym sequences, reconstruction on (its store and trajectories mid-episode)
    "corrected": (train.corrected(_tiny()), None),  # aligned sequences, the corrected environment
    "esbn": (_tiny(net=train.tiny_net("esbn"), actions="decision"), None),  # a memory core's state
    "marl": (_tiny_marl(), marl.MARLConfig(probe_episodes=2, eoa=eoa.EoAConfig.tiny(epochs=2))),  # run()'s marl path
}


def _final_params(path):
    """The networks and the replay's sum-tree of the state run() saved at the budget."""
    state = torch.load(path, weights_only=True)["trainer"]
    return state["learner"], ckpt._decode(state["replay"]["tree"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_run_killed_after_a_timed_checkpoint_between_evaluations_resumes_bitwise(case, tmp_path, monkeypatch):
    config, marl_config = CASES[case]
    straight = train.run(config, marl=marl_config)
    assert [r["observations"] // 3 for r in straight] == [50, 100]

    # saving at every step reads the state and changes none of it
    every = tmp_path / "every.pt"
    assert repr(train.run(config, checkpoint=str(every), checkpoint_every_s=0, marl=marl_config)) == repr(straight)

    # a clock that advances 1 s per reading, saves every 7 s: timed checkpoints at steps no evaluation falls on
    now = [0.0]

    def clock():
        now[0] += 1.0
        return now[0]

    monkeypatch.setattr(train, "time", types.SimpleNamespace(monotonic=clock))
    real_save, saved = ckpt.save, []

    def save_then_die(path, identity, **state):
        real_save(path, identity, **state)
        t = state["trainer"]
        saved.append(t["counters"]["observations"])
        records = t["records"]
        if len(records) == 1 and t["counters"]["observations"] > records[-1]["observations"] + 20:
            raise Killed  # the first timed save well past the first evaluation, before the second

    monkeypatch.setattr(ckpt, "save", save_then_die)
    path = tmp_path / "run.pt"
    with pytest.raises(Killed):
        train.run(config, checkpoint=str(path), checkpoint_every_s=7, marl=marl_config)
    monkeypatch.setattr(ckpt, "save", real_save)
    blob = torch.load(path, weights_only=True)["trainer"]
    at = blob["counters"]["observations"]
    assert len(blob["records"]) == 1 and straight[0]["observations"] < at < straight[1]["observations"]
    assert len(saved) > 3 and saved[-2] < at  # several timed saves, not only the evaluations'
    # mid-episode: some actor has acted since its episode began (its previous action is set)
    assert (ckpt._decode(blob["actors"]["prev_action"]) >= 0).any()

    resumed = train.run(config, checkpoint=str(path), checkpoint_every_s=7, marl=marl_config)
    assert repr(resumed) == repr(straight)
    (net_a, tree_a), (net_b, tree_b) = _final_params(every), _final_params(path)
    for part in ("net", "target"):
        a, b = net_a[part], net_b[part]
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert (tree_a == tree_b).all()


def test_checkpoint_every_s_must_be_a_non_negative_number():
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="checkpoint_every_s"):
            train.run(_tiny(), checkpoint="unused.pt", checkpoint_every_s=bad)


def test_the_train_stage_killed_by_sigkill_between_evaluations_resumes_to_the_same_curve(tmp_path):
    """The real thing: `reprobench s2b train` as workflow/rules/s2b.smk calls it, killed with SIGKILL (no handler
    runs) once a timed checkpoint past the first evaluation exists, then run again, writes the curve an
    uninterrupted process writes."""
    import signal
    import subprocess
    import sys
    import time

    from reprobench.core.curves import read_curve

    budget, eval_every = 800, 400

    def command(name):
        return [sys.executable, "-m", "reprobench", "s2b", "train", "--experiment", "zsct", "--model", "r2d2",
                "--n-oc", "1", "--shots", "1", "--variant", "faithful", "--seed", "0", "--sizes", "tiny",
                "--observations", str(budget), "--eval-every", str(eval_every), "--device", "cpu", "--threads", "1",
                "--scale", "small", "--checkpoint", str(tmp_path / f"{name}.pt"), "--checkpoint-minutes", "0.001",
                "--out", str(tmp_path / f"{name}.parquet")]

    subprocess.run(command("full"), check=True, capture_output=True)
    ckpt_path, curve = tmp_path / "killed.pt", tmp_path / "killed.parquet"

    def state():
        try:
            return torch.load(ckpt_path, weights_only=True)["trainer"]
        except (FileNotFoundError, RuntimeError, EOFError):  # not written yet
            return None

    proc = subprocess.Popen(command("killed"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        s = state()
        if s is not None and len(s["records"]) == 1 and s["counters"]["observations"] > s["records"][0]["observations"]:
            break  # a timed save after the first evaluation: the next evaluation is ~100 steps (seconds) away
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, "the run ended before it was killed; give it a larger budget"
    s = state()
    at = s["counters"]["observations"]
    assert len(s["records"]) == 1 and s["records"][0]["observations"] < at < 2 * eval_every + 4, \
        "the last checkpoint is not a timed one between the first two evaluations"
    assert not curve.exists()
    subprocess.run(command("killed"), check=True, capture_output=True)
    full, _ = read_curve(tmp_path / "full.parquet")
    resumed, _ = read_curve(curve)
    assert len(full) > 0 and full.equals(resumed)
    assert not ckpt_path.exists() and not (tmp_path / "full.pt").exists()
