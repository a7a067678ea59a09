"""Host syncs of S2B's R2D2 training (reprobench.s2b.train, r2d2, replay): none in the learner update, and in an acting
step only the reads the numpy environment and replay need (counted as on an accelerator: reprobench.core.hostsync)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from reprobench.core.hostsync import HostSyncs
from reprobench.s2b import r2d2, replay, train

torch.set_num_threads(1)


def _ready(name: str) -> train.Trainer:
    """A tiny trainer of preset `name` whose learner may start, one full step past it."""
    config = train.small(train.preset(name))
    trainer = train.Trainer(config)
    while len(trainer.replay) < config.r2d2.min_sequences or trainer.observations < config.r2d2.min_handled:
        trainer.step()
    trainer.step()
    return trainer


def _points(fn) -> dict:
    with HostSyncs() as syncs:
        fn()
    return dict(syncs.points)


@pytest.mark.parametrize("name", ["table2", "table4_dcem"])
def test_learner_update_has_no_host_sync(name):
    trainer = _ready(name)
    trainer._act()  # flushes the last update's priorities, as in the loop
    assert _points(lambda: trainer.learner.train(trainer.replay)) == {}
    assert trainer.replay._pending is not None  # its priorities wait for the replay's next use


def test_back_to_back_updates_wait_only_for_the_previous_priorities():
    """Table 4's bursts: each sample after the first needs the previous update's priorities (prioritised replay)."""
    trainer = _ready("table4_lstm")
    trainer._act()

    def burst():
        for _ in range(4):
            trainer.learner.train(trainer.replay)

    points = _points(burst)
    assert sum(points.values()) == 3 and all(" flush (cpu)" in p for p in points), points


def test_acting_step_syncs_for_the_actions_and_the_stored_state_only():
    trainer = _ready("table2")
    trainer.learner.train(trainer.replay)  # leaves priorities pending, as the loop does before acting
    points = _points(trainer._act)
    assert sum(v for p, v in points.items() if "_greedy (cpu)" in p) == 1, points  # the actions, for the numpy env
    assert sum(v for p, v in points.items() if " flush (cpu)" in p) == 1, points  # the update's priorities
    assert all(p.split(" ")[1] in ("_greedy", "flush", "<dictcomp>") for p in points), points  # + stored states


def test_pending_priorities_give_the_tree_an_immediate_write_gives():
    spec, state = {"x": ((), np.float32)}, {"h": ((1,), np.float32)}

    def filled():
        buf = replay.PrioritizedSequenceReplay(8, 2, spec, state, alpha=0.9, priority_eps=1e-6, seed=0)
        buf.add({"x": np.zeros((6, 2), np.float32)}, np.ones((6, 2), bool), {"h": np.zeros((6, 1), np.float32)})
        return buf

    now, later = filled(), filled()
    p = np.array([0.5, 3.0, 0.25], dtype=np.float32)
    now.update_priorities([1, 4, 2], p)
    later.update_priorities([1, 4, 2], torch.as_tensor(p))
    assert later._pending is not None
    for buf in (now, later):  # a new sequence takes the largest priority so far: the pending one must be in
        buf.add({"x": np.ones((1, 2), np.float32)}, np.ones((1, 2), bool), {"h": np.ones((1, 1), np.float32)})
    assert later._pending is None and later.max_priority == now.max_priority == 3.0
    assert np.array_equal(later.tree.tree, now.tree.tree)
    later.update_priorities([0], torch.tensor([7.0]))
    assert later.state_dict()["max_priority"] == 7.0  # saving writes it first
    later.update_priorities([0], torch.tensor([9.0]))
    later.load_state_dict(now.state_dict())  # loading replaces what was pending
    assert later.max_priority == 3.0 and np.array_equal(later.tree.tree, now.tree.tree)


def test_network_runs_in_the_dtype_of_its_weights():
    """The float64 check of benchmarks/gpu_parts/s2b.py: a float64 copy of the network gives the float32 loss."""
    for name in ("table2", "table4_esbn"):
        trainer = _ready(name)
        _, steps, state, weights = trainer.replay.sample(4)
        learner64 = r2d2.R2D2Learner(copy.deepcopy(trainer.net).double(), trainer.config.r2d2, 4)
        learner64.target.load_state_dict(trainer.learner.target.state_dict())

        def f64(arrays):
            return {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in arrays.items()}

        loss, prio, _, _ = trainer.learner.loss(r2d2.to_tensors(steps, "cpu"), r2d2.to_tensors(state, "cpu"),
                                                torch.as_tensor(weights))
        loss64, prio64, _, _ = learner64.loss(r2d2.to_tensors(f64(steps), "cpu"), r2d2.to_tensors(f64(state), "cpu"),
                                              torch.as_tensor(weights.astype(np.float64)))
        assert loss64.dtype == prio64.dtype == torch.float64
        assert torch.allclose(loss64.float(), loss.detach(), rtol=1e-4) and torch.allclose(prio64.float(), prio,
                                                                                           rtol=1e-4, atol=1e-6)
