"""The S2B R2D2 agent (reprobench.s2b.replay, r2d2, cores, train) against values worked out by hand from
specs/s2b.md sections 4.2-4.5 and 6.3-6.4."""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pytest
import torch
from torch import nn

from reprobench.core import checkpoint as ckpt
from reprobench.s2b import cores, r2d2, replay, train

torch.set_num_threads(1)


# -- sum-tree and replay -------------------------------------------------------------------------------------------
def test_sum_tree_four_leaves_find_sample_and_update():
    tree = replay.SumTree(4)
    tree.update([0, 1, 2, 3], [1.0, 2.0, 3.0, 4.0])
    assert tree.total == 10.0 and tree.tree[2] == 3.0 and tree.tree[3] == 7.0  # (1 + 2), (3 + 4)
    # prefix sums 0 | 1 | 3 | 6 | 10
    assert tree.find([0.0, 0.99, 1.0, 2.99, 3.0, 5.99, 6.0, 9.99]).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    rng = np.random.default_rng(0)
    counts = np.bincount(np.concatenate([tree.sample(1000, rng) for _ in range(40)]), minlength=4)
    np.testing.assert_allclose(counts / counts.sum(), [0.1, 0.2, 0.3, 0.4], atol=0.005)
    tree.update([1, 3], [0.0, 6.0])  # leaves 1, 0, 3, 6: internal nodes 1 and 9
    assert tree.total == 10.0 and tree.tree[2] == 1.0 and tree.tree[3] == 9.0
    assert tree.find([0.5, 1.0, 3.99, 4.0, 9.99]).tolist() == [0, 2, 2, 3, 3]  # leaf 1 (weight 0) never returned
    assert 1 not in tree.sample(1000, rng)
    with pytest.raises(ValueError, match="values"):
        tree.update([0], [-1.0])


def _replay(n: int, alpha=1.0, beta=1.0, eps=0.0):
    spec = {"x": ((), np.float32)}
    return replay.PrioritizedSequenceReplay(n, 2, spec, {"h": ((1,), np.float32)}, alpha=alpha, beta=beta,
                                            priority_eps=eps, seed=0)


def test_replay_probabilities_and_importance_weights():
    buf = _replay(4)
    buf.add({"x": np.arange(8, dtype=np.float32).reshape(4, 2)}, np.ones((4, 2), bool),
            {"h": np.arange(4, dtype=np.float32)[:, None]})
    buf.update_priorities([0, 1, 2, 3], [1.0, 2.0, 3.0, 4.0])
    idx, steps, states, w = buf.sample(4)
    # stratified over [0, 10) in 4 segments of 2.5: one draw in [0, 2.5) -> leaf 0 or 1, ..., one in [7.5, 10) -> 3
    assert idx[-1] == 3 and np.array_equal(steps["x"][:, 0], 2 * idx) and np.array_equal(states["h"][:, 0], idx)
    prob = np.array([0.1, 0.2, 0.3, 0.4])[idx]
    expected = (4 * prob) ** -1.0
    np.testing.assert_allclose(w, expected / expected.max(), rtol=1e-6)
    # alpha: stored (p + eps)^alpha; a new sequence gets the largest priority so far (4)
    buf2 = _replay(4, alpha=0.5, eps=0.0)
    buf2.add({"x": np.zeros((1, 2), np.float32)}, np.ones((1, 2), bool), {"h": np.zeros((1, 1), np.float32)})
    buf2.update_priorities([0], [4.0])
    buf2.add({"x": np.zeros((1, 2), np.float32)}, np.ones((1, 2), bool), {"h": np.zeros((1, 1), np.float32)})
    np.testing.assert_allclose(buf2.tree.leaves()[:2], [2.0, 2.0])


def test_priority_mixture_eta_max_plus_mean():
    td = torch.tensor([[1.0, 2.0, 3.0, 100.0], [4.0, 0.0, 0.0, 0.0], [5.0, 5.0, 5.0, 5.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]], dtype=torch.bool)
    # 0.9 * 3 + 0.1 * 2 = 2.9 (the masked 100 ignored); 0.9 * 4 + 0.1 * 4 = 4; no step -> 0
    np.testing.assert_allclose(replay.priority_mixture(td, mask, 0.9).numpy(), [2.9, 4.0, 0.0], rtol=1e-6)


def test_sequence_builder_windows_overlap_stored_state_and_terminal_padding():
    spec = {"x": ((), np.int64)}
    b = replay.SequenceBuilder(1, 4, 2, spec, {"h": ((), np.int64)})
    out = []
    for t in range(8):  # an episode of 8 steps, terminal on step 7
        res = b.add({"x": np.array([t])}, {"h": np.array([100 + t])}, [True], [t == 7])
        out.append(res)
    assert [o is None for o in out] == [True, True, True, False, True, False, True, False]
    for o, xs, h in ((out[3], [0, 1, 2, 3], 100), (out[5], [2, 3, 4, 5], 102), (out[7], [4, 5, 6, 7], 104)):
        assert o[0]["x"][0].tolist() == xs and o[1][0].tolist() == [True] * 4 and o[2]["h"][0] == h
    assert b.add({"x": np.array([99])}, {"h": np.array([199])}, [False], [False]) is None  # autoreset: skipped
    for t in range(3):  # next episode ends after 3 steps: one padded window from the zero state of that episode
        res = b.add({"x": np.array([10 + t])}, {"h": np.array([200 + t])}, [True], [t == 2])
    assert res[0]["x"][0].tolist() == [10, 11, 12, 0] and res[1][0].tolist() == [True, True, True, False]
    assert res[2]["h"][0] == 200


# -- targets, loss, burn-in ----------------------------------------------------------------------------------------
def test_n_step_targets_by_hand():
    r = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])
    d = torch.tensor([[0, 0, 0, 1, 0, 0]], dtype=torch.bool)
    v = torch.tensor([[10.0, 20.0, 30.0, 40.0, 50.0, 60.0]])
    y, ok = r2d2.n_step_targets(r, d, v, gamma=0.5, n=3)
    # t0: 1 + .5*2 + .25*3 + .125*40 = 7.75; t1: 2 + .5*3 + .25*4 (terminal at 3: no bootstrap) = 4.5;
    # t2: 3 + .5*4 = 5; t3: 4; t4: 5 + .5*6 = 8 (no target: t + 3 > 5, no terminal); t5: 6 (no target)
    np.testing.assert_allclose(y[0].numpy(), [7.75, 4.5, 5.0, 4.0, 8.0, 6.0])
    assert ok[0].tolist() == [True, True, True, True, False, False]


class StubNet(nn.Module):
    """Q-values read from the stimulus (times a learnable scale): a toy whose Q-values the test writes down."""

    def __init__(self, n_actions: int, legal: np.ndarray):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))
        self.register_buffer("legal", torch.as_tensor(legal))

    def legal_mask(self, decision):
        return self.legal[decision.long()]

    def forward(self, inputs, state, features=False):
        return inputs["stimulus"] * self.scale, state, None

    def initial_state(self, batch, device=None):
        return {"h": torch.zeros(batch, 1)}


def _stub_learner(double_q="unmasked", **kw):
    legal = np.array([[False, False, True], [True, True, False]])  # A = 3, the no-op (2) legal only off-decision
    config = r2d2.R2D2Config(unroll=5, burn_in=1, overlap=2, n_step=2, gamma=0.5, eta=0.9, double_q=double_q,
                             batch_size=1, lr=0.1, **kw)
    learner = r2d2.R2D2Learner(StubNet(3, legal), config, n_actors=2)
    with torch.no_grad():
        learner.target.scale.fill_(2.0)  # target Q = 2 x online Q
    q = torch.tensor([[[0, 0, 0], [1, 2, 0], [0, 0, 5], [3, 1, 9], [2, 4, 1]]], dtype=torch.float32)
    steps = {"stimulus": q, "decision": torch.tensor([[0, 1, 0, 1, 0]], dtype=torch.bool),
             "action": torch.tensor([[2, 1, 2, 0, 2]]), "reward": torch.tensor([[0.0, 1.0, 0.0, 1.0, 0.0]]),
             "done": torch.zeros(1, 5, dtype=torch.bool), "valid": torch.ones(1, 5, dtype=torch.bool)}
    return learner, steps


@pytest.mark.parametrize("double_q, y, prio", [("unmasked", [5.5, 2.5], 0.9 * 3.5 + 0.1 * (3.5 + 2.5) / 4),
                                              ("masked", [2.5, 1.0], 0.9 * 4.0 + 0.1 * (0.5 + 4.0) / 4)])
def test_double_q_loss_and_priority_by_hand(double_q, y, prio):
    """Burn-in 1, n = 2, gamma 0.5. a* at t3: unmasked argmax [3, 1, 9] = 2 (the illegal no-op: target 18), masked 0
    (target 6); at t4 (no-op only legal): unmasked 1 (target 8), masked 2 (target 2). y(t1) = 1 + .25 Q(t3),
    y(t2) = .5 + .25 Q(t4); Q taken 2 and 5; t3, t4 have no target (the window's last n steps). The priority's mean
    runs over the 4 positions after the burn-in, the 2 masked ones as zeros (Regym's, the default priority_mean)."""
    learner, steps = _stub_learner(double_q)
    loss, p, td, mask = learner.loss(steps, {"h": torch.zeros(1, 1)}, torch.tensor([0.5]))
    td_hand = np.array(y) - np.array([2.0, 5.0])
    assert mask[0].tolist() == [True, True, False, False]
    np.testing.assert_allclose(td[0, :2].numpy(), np.abs(td_hand), rtol=1e-6)
    np.testing.assert_allclose(float(loss.detach()), 0.5 * 0.5 * (td_hand ** 2).sum() / 4, rtol=1e-6)
    np.testing.assert_allclose(float(p[0]), prio, rtol=1e-6)


def _tiny_dims(vocab=6, core="lstm", actions="combined"):
    layout = cores.ActionLayout(actions, 2, vocab, 3)
    dims = cores.InputDims(3, vocab, 3, 2, layout.n_actions)
    torch.manual_seed(0)
    return cores.build_network(cores.tiny_net(core), dims, layout), layout, dims


def _random_inputs(dims, b, t, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"stimulus": torch.rand(b, t, dims.stimulus, generator=g) * 2 - 1,
            "comm": torch.randint(0, dims.vocab_size + 1, (b, t, dims.max_len), generator=g),
            "prev_reward": torch.rand(b, t, 1, generator=g), "round_id": torch.eye(2)[torch.arange(t) % 2].expand(b,
                                                                                                                t, 2),
            "role_id": torch.tensor([0.0, 1.0]).expand(b, t, 2), "mode_id": torch.tensor([1.0, 0.0]).expand(b, t, 2),
            "previous_game_result": torch.zeros(b, t, 2), "previous_game_reward": torch.zeros(b, t, 1),
            "prev_action": torch.randint(-1, dims.n_actions, (b, t), generator=g),
            "decision": (torch.arange(t) % 2 == 1).expand(b, t)}


def test_burn_in_has_no_gradient_and_the_stored_state_is_used():
    net, layout, dims = _tiny_dims()
    config = r2d2.R2D2Config(unroll=6, burn_in=3, overlap=3, n_step=1, batch_size=2)
    learner = r2d2.R2D2Learner(net, config, n_actors=1)
    steps = _random_inputs(dims, 2, 6)
    steps.update(action=torch.full((2, 6), layout.noop), reward=torch.ones(2, 6), done=torch.zeros(2, 6, dtype=bool),
                 valid=torch.ones(2, 6, dtype=bool))
    steps["stimulus"] = steps["stimulus"].clone().requires_grad_(True)
    zero = net.initial_state(2)
    loss, *_ = learner.loss(steps, zero, torch.ones(2))
    loss.backward()
    grad = steps["stimulus"].grad
    assert grad[:, :3].abs().sum() == 0 and grad[:, 3:5].abs().sum() > 0
    stored = {k: torch.randn_like(v) for k, v in zero.items()}
    with torch.no_grad():
        other, *_ = learner.loss(steps, stored, torch.ones(2))
        changed_burn_in = dict(steps, stimulus=steps["stimulus"].detach().clone())
        changed_burn_in["stimulus"][:, 0] += 1.0
        third, *_ = learner.loss(changed_burn_in, zero, torch.ones(2))
    assert float(other) != float(loss.detach())  # the stored state is used
    assert float(third) != float(loss.detach())  # and the burn-in steps move it


def test_per_actor_epsilons_for_four_actors():
    # 0.4^(1 + 2 i / 3): 0.4, 0.4^(5/3) = exp(5/3 ln 0.4), 0.4^(7/3), 0.4^3 = 0.064
    eps = r2d2.actor_epsilons(4, 0.4, 2.0)
    np.testing.assert_allclose(eps, [0.4, 0.2171534, 0.1178890, 0.064], rtol=1e-6)
    np.testing.assert_allclose(r2d2.epsilon_schedule(0, eps), 1.0)
    np.testing.assert_allclose(r2d2.epsilon_schedule(30_000, eps), eps + (1 - eps) / math.e)
    assert r2d2.actor_epsilons(1).tolist() == [0.4]


def _learner_with_replay(target_update, tau, n_actors):
    learner, steps = _stub_learner(target_update=target_update, tau=tau)
    learner.n_actors = n_actors
    with torch.no_grad():
        learner.target.scale.fill_(1.0)
    buf = replay.PrioritizedSequenceReplay(2, 5, {k: (tuple(v.shape[2:]), v.numpy().dtype) for k, v in steps.items()
                                                  if k != "valid"}, {"h": ((1,), np.float32)}, seed=0)
    buf.add({k: v.numpy() for k, v in steps.items() if k != "valid"}, steps["valid"].numpy(),
            {"h": np.zeros((1, 1), np.float32)})
    return learner, buf


@pytest.mark.parametrize("mode, tau, n_actors, copies_after", [
    ("faithful", 0.25, 2, [False, False, True, False]),  # int(1/tau) = 4, counter += 2 actors, copy once > 4: every 3
    ("period", 0.25, 2, [False, False, False, True]),  # every 4 updates whatever the number of actors
])
def test_target_hard_copy_every_n(mode, tau, n_actors, copies_after):
    learner, buf = _learner_with_replay(mode, tau, n_actors)
    for copied in copies_after:
        before = float(learner.target.scale)
        learner.train(buf)
        online, target = float(learner.net.scale.detach()), float(learner.target.scale)
        assert (target == online) == copied and (copied or target == before)


def test_faithful_target_period_of_the_table2_run():
    """tau = 4e-4 read as int(1 / tau) = 2500 actor-updates, 32 actors per update: a copy every 79 updates."""
    learner, _ = _learner_with_replay("faithful", 4e-4, 32)
    for _ in range(78):
        learner._update_target()
    assert learner.target_copies == 0
    learner._update_target()
    assert learner.target_copies == 1 and learner.target_counter == 0


def test_target_soft_update():
    learner, buf = _learner_with_replay("soft", 0.25, 2)
    learner.train(buf)
    online = float(learner.net.scale.detach())
    assert online != 1.0
    np.testing.assert_allclose(float(learner.target.scale), 0.75 * 1.0 + 0.25 * online, rtol=1e-6)


# -- networks --------------------------------------------------------------------------------------------------------
def test_fc_body_non_linearity_as_run_versus_regym_head():
    torch.manual_seed(0)
    run = cores.FCBody(3, (8, 8, 4), "all")
    head = cores.FCBody(3, (8, 8, 4), "head")
    head.load_state_dict(run.state_dict())
    x = torch.randn(64, 3)
    l1, l2, l3 = run.layers
    assert torch.equal(run(x), torch.relu(l3(torch.relu(l2(torch.relu(l1(x)))))))
    assert torch.equal(head(x), l3(l2(torch.relu(l1(x)))))
    assert (run(x) >= 0).all() and (head(x) < 0).any()


def test_action_layouts_and_legal_actions():
    combined = cores.ActionLayout("combined", 2, 6, 3)  # (K + 2)(1 + 6 + 36 + 216) + 1
    assert combined.n_actions == 519 and combined.noop == 518 and combined.n_sentences == 259
    assert combined.decisions(np.array([0, 258, 259, 517, 518])).tolist() == [0, 0, 1, 1, 0]
    assert cores.ActionLayout("combined", 2, 4, 3).n_actions == 171
    compact = cores.ActionLayout("decision", 2, 6, 3)
    assert compact.n_actions == 3 and compact.decisions(np.array([0, 1, 2])).tolist() == [0, 1, 0]
    assert compact.legal.tolist() == [[False, False, True], [True, True, False]]
    a = combined.random_actions(np.random.default_rng(0), np.array([True, False] * 50))
    assert (a[1::2] == 518).all() and (a[::2] < 518).all()


def _one_step(net, dims, b=1):
    inp = {k: v[:, 0] for k, v in _random_inputs(dims, b, 1).items()}
    return net.step(inp, net.initial_state(b))


def test_reference_sizes_of_every_core():
    """Input widths from specs/s2b.md section 4.3, for A = 519 (V = 6) and A = 171 (V = 4)."""
    for core, vocab, checks in (
        ("lstm", 6, lambda n: (n.encoder.critic.layers[0].in_features, n.core.out_dim, n.core.recon_dim)),
        ("archi_lstm", 4, lambda n: (n.encoder.out_dim, n.head.value.in_features, n.core.recon_dim)),
        ("esbn", 4, lambda n: (n.core.controller.input_size, n.core.out_lstm.input_size, n.head.value.in_features)),
        ("dcem", 4, lambda n: (n.core.lstm.input_size, n.head.value.in_features, n.core.recon_dim)),
        ("dnc", 6, lambda n: (n.core.recon_dim, n.core.output.out_features, n.core.n)),
    ):
        layout = cores.ActionLayout("combined", 2, vocab, 3)
        dims = cores.InputDims(3, vocab, 3, 2, layout.n_actions)
        net = cores.build_network(cores.NetConfig(core=core), dims, layout)
        expected = {"lstm": (1197, 384, 256), "archi_lstm": (245, 683, 512), "esbn": (502, 758, 1185),
                    "dcem": (1009, 427, 1009), "dnc": (256, 128, 128)}[core]
        assert checks(net) == expected, core
        if core in ("esbn", "dcem"):
            q, _ = _one_step(net, dims)
            assert q.shape == (1, layout.n_actions) and torch.isfinite(q).all()
    with pytest.raises(ValueError, match="'gru'"):
        cores.NetConfig(core="gru")


@pytest.mark.parametrize("core", cores.CORES)
def test_cores_step_and_unroll_agree(core):
    net, layout, dims = _tiny_dims(core=core, actions="decision")
    inp = _random_inputs(dims, 2, 5)
    state = net.initial_state(2)
    q_seq, end, feats = net(inp, state, features=True)
    for t in range(5):
        q_t, state = net.step({k: v[:, t] for k, v in inp.items()}, state)
        torch.testing.assert_close(q_t, q_seq[:, t])
        torch.testing.assert_close(net.core.recon_features(None, state), feats[:, t])
    for k in end:
        torch.testing.assert_close(end[k], state[k])
    assert feats.shape == (2, 5, net.core.recon_dim)


def test_esbn_memory_reads_only_past_steps_and_dnc_recon_sources():
    net, layout, dims = _tiny_dims(core="esbn")
    inp = _random_inputs(dims, 1, 3)
    state = net.initial_state(1)
    _, s1 = net.step({k: v[:, 0] for k, v in inp.items()}, state)
    assert torch.count_nonzero(s1["read"]) == 0 and int(s1["count"]) == 1  # empty memory at the first step
    _, s2 = net.step({k: v[:, 1] for k, v in inp.items()}, s1)
    assert torch.count_nonzero(s2["read"]) > 0 and int(s2["count"]) == 2
    feats = net.core.recon_features(None, s2).view(3, -1)  # last 3 key slots, oldest first, zero-padded
    assert torch.count_nonzero(feats[0]) == 0 and torch.equal(feats[2], s2["mem_k"][0, 1])
    hidden = cores.build_network(cores.tiny_net("dnc"), dims, layout)
    memory = cores.build_network(cores.tiny_net("dnc", dnc_recon="memory"), dims, layout)
    _, hs = _one_step(hidden, dims)
    _, ms = _one_step(memory, dims)
    assert torch.equal(hidden.core.recon_features(None, hs), torch.cat([hs["ctrl_h0"], hs["ctrl_h1"]], -1))
    assert torch.equal(memory.core.recon_features(None, ms), ms["memory"][:, -3:].flatten(1))


@pytest.mark.parametrize("biasing", [True, False])
def test_reconstruction_biasing_reaches_the_agent_only_when_on(biasing):
    net, layout, dims = _tiny_dims()
    rec = r2d2.Reconstruction(net, r2d2.ReconConfig(biasing=biasing, hidden=8), dims.stimulus, dims.vocab_size,
                              dims.max_len, "unit")
    agent, predictors = copy.deepcopy(net.state_dict()), copy.deepcopy(rec.predictors.state_dict())
    stats = rec.update(_random_inputs(dims, 2, 4), torch.tensor([[True] * 4, [True, True, False, False]]))
    assert torch.isfinite(stats["loss"]) and 0 <= float(stats["stimulus_accuracy"]) <= 1
    changed = any(not torch.equal(v, net.state_dict()[k]) for k, v in agent.items())
    assert changed == biasing
    assert any(not torch.equal(v, rec.predictors.state_dict()[k]) for k, v in predictors.items())


def test_corrected_variant_flips_the_faithful_options():
    c = train.corrected(train.TrainConfig(net=cores.tiny_net("dnc")))
    assert (c.r2d2.double_q, c.r2d2.target_update, c.net.dnc_recon) == ("masked", "period", "memory")
    base = train.TrainConfig()
    assert (base.r2d2.double_q, base.r2d2.target_update, base.net.fc_activation) == ("unmasked", "faithful", "all")
    with pytest.raises(ValueError, match="target_update"):
        r2d2.R2D2Config(target_update="polyak")


# -- training loop ---------------------------------------------------------------------------------------------------
def _tiny_config(**r2d2_kw):
    env = dict(train.TABLE2_ENV, vocab_size=4, max_nbr_values_per_latent=3)
    return train.TrainConfig(env=env, n_actors=3, budget=300, eval_every=150, eval_actors=2, eval_episodes=2,
                             r2d2=r2d2.R2D2Config(batch_size=4, replay_capacity=600, min_capacity=60, tau=0.01,
                                                  **r2d2_kw),
                             recon=r2d2.ReconConfig(hidden=8, store=4, period=5))


def _params(trainer):
    return {**{f"net.{k}": v for k, v in trainer.learner.net.state_dict().items()},
            **{f"rec.{k}": v for k, v in trainer.recon.predictors.state_dict().items()}}


def test_tiny_training_run_resumes_bitwise(tmp_path):
    config = _tiny_config()
    straight = train.Trainer(config)
    records = straight.train()
    assert [r["observations"] // 3 for r in records] == [50, 100]  # records at the first step past 150, 300
    assert all(math.isfinite(r["loss"]) and math.isfinite(r["rec_loss"]) for r in records)
    assert records[-1]["updates"] > 0 and records[-1]["target_copies"] > 0 and records[-1]["decisions/test"] > 0

    first = train.Trainer(config)
    first.train(until=100)  # "killed" mid-episode, between evaluations
    path = tmp_path / "run.pt"
    ckpt.save(path, train.identity(config), trainer=first.state_dict())
    resumed = train.Trainer(config)
    resumed.load_state_dict(ckpt.load(path, train.identity(config))["trainer"])
    assert repr(resumed.train()) == repr(records)
    a, b = _params(straight), _params(resumed)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert np.array_equal(straight.replay.tree.tree, resumed.replay.tree.tree)

    assert repr(train.run(config, checkpoint=str(tmp_path / "full.pt"))) == repr(records)  # run() saves/resumes
    assert repr(train.run(config, checkpoint=str(tmp_path / "full.pt"))) == repr(records)


def test_recall_task_trains_and_resumes_bitwise():
    # Figure 5's run: the DNC on the recall task through the same trainer (reprobench.s2b.tasks)
    small = train.small(train.preset("recall_ohe"))
    r2d2 = dataclasses.replace(small.r2d2, min_capacity=40)
    config = dataclasses.replace(small, budget=160, eval_every=80, r2d2=r2d2)
    straight = train.Trainer(config)
    records = straight.train()
    last = records[-1]
    assert last["updates"] > 0 and math.isfinite(last["loss"]) and last["decisions/train1"] > 0
    assert math.isnan(last["zsct_accuracy"]) and last["decisions/test"] == 0  # no query phase
    # the mask: only the no-op at a stimulus step, only the V_max = 5 answers at a query step
    np.testing.assert_array_equal(straight.layout.legal, [[0, 0, 0, 0, 0, 1], [1, 1, 1, 1, 1, 0]])
    first = train.Trainer(config)
    first.train(until=70)
    resumed = train.Trainer(config)
    resumed.load_state_dict(first.state_dict())
    assert repr(resumed.train()) == repr(records)
    a, b = straight.learner.net.state_dict(), resumed.learner.net.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_memory_core_trains_and_stores_its_memory():
    config = dataclasses.replace(_tiny_config(), net=cores.tiny_net("esbn"), actions="decision", budget=90,
                                 eval_every=90)
    trainer = train.Trainer(config)
    records = trainer.train()
    assert len(records) == 1 and math.isfinite(records[0]["loss"]) and records[0]["updates"] > 0
    stored = trainer.replay.states["count"][:len(trainer.replay)]
    assert stored.max() > 0 and trainer.replay.states["mem_k"].shape[1:] == (64, 16)  # windows start mid-episode


def test_archi_cadence_counts_finished_episodes():
    trainer = train.Trainer(_tiny_config(episodes_per_cycle=3, train_calls_per_cycle=4))
    calls = []
    trainer.learner.train = lambda buf: calls.append(1) or torch.zeros(())
    trainer.replay.size = trainer.replay.capacity  # "minimum capacity reached"
    done = []
    for finished in (0, 1, 1, 3, 2):  # counter 0 -> fire, reset to 1; 2; 3 -> fire, 1; 4; 6 -> fire
        before = len(calls)
        trainer._learn(finished)
        done.append(len(calls) - before)
    assert done == [4, 0, 4, 0, 4]
    # min_handled (Table 4's LSTM: 2e3): nothing until the actors have handled that many experiences
    assert (train.preset("table4_lstm").r2d2.min_handled, train.preset("table4_dcem").r2d2.min_handled) == (2000, 1)
    trainer.config = dataclasses.replace(trainer.config, r2d2=dataclasses.replace(trainer.config.r2d2,
                                                                                  min_handled=100))
    trainer.cycle_counter, trainer.observations = 0, 99
    trainer._learn(0)
    trainer.observations = 100
    trainer._learn(3)
    assert len(calls) == 12 + 4


def test_presets_hold_the_spec_values():
    t2, t4, f6 = train.preset("table2"), train.preset("table4_esbn"), train.preset("fig6_dnc")
    assert (t2.n_actors, t2.r2d2.lr, t2.r2d2.adam_eps, t2.r2d2.batch_size, t2.r2d2.unroll, t2.r2d2.burn_in,
            t2.r2d2.n_step, t2.r2d2.gamma, t2.r2d2.replay_sequences, t2.r2d2.min_sequences, t2.budget) == (
        32, 6.25e-5, 1e-12, 32, 20, 10, 3, 0.997, 50_000, 4_000, 5_000_000)
    assert (t4.r2d2.n_step, t4.r2d2.unroll, t4.r2d2.burn_in, t4.r2d2.replay_sequences, t4.r2d2.batch_size,
            t4.r2d2.n_minibatches, t4.env["vocab_size"], t4.recon.max_period, t4.net.core) == (
        7, 40, 20, 333, 64, 4, 4, 200, "esbn")
    assert (f6.n_actors, f6.r2d2.lr, f6.r2d2.burn_in, f6.r2d2.target_interval, f6.r2d2.replay_sequences,
            f6.recon.signals, f6.env["nbr_distractors"]) == (16, 6.7e-4, 0, 500, 5_000, ("stimulus",), 3)
    small = dataclasses.replace(f6, n_actors=2, net=cores.tiny_net("lstm"), budget=40, eval_every=40, eval_actors=1,
                                eval_episodes=1, r2d2=dataclasses.replace(f6.r2d2, batch_size=2, min_capacity=20),
                                recon=dataclasses.replace(f6.recon, hidden=8))
    record = train.Trainer(small).train()[-1]  # K = 3, R = 3, L = 1, no feedback: 29 combined actions
    assert record["updates"] > 0 and math.isfinite(record["loss"]) and 29 == train.Trainer(small).layout.n_actions


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="n_actors"):
        dataclasses.replace(train.TrainConfig(), n_actors=0)
    with pytest.raises(ValueError, match="burn_in"):
        r2d2.R2D2Config(unroll=10, burn_in=10)
    with pytest.raises(ValueError, match="preset"):
        train.preset("table9")
