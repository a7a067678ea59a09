"""S2B's R2D2 replay against Regym as run (issue 25 items 1, 2, 4, 5; DEVIATIONS S17-S20): importance weights,
sequence spacing, episode ends, priorities and the target copy, each against values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from reprobench.s2b import r2d2, replay, train

torch.set_num_threads(1)


def _two_sequences(weights: str):
    spec = {"x": ((), np.float32)}
    buf = replay.PrioritizedSequenceReplay(2, 2, spec, {"h": ((1,), np.float32)}, alpha=0.5, beta=0.5,
                                           priority_eps=0.0, seed=0, weights=weights)
    buf.add({"x": np.zeros((2, 2), np.float32)}, np.ones((2, 2), bool), {"h": np.zeros((2, 1), np.float32)})
    buf.update_priorities([0, 1], [4.0, 16.0])  # leaves p^alpha = 2 and 4, total 6
    return buf


@pytest.mark.parametrize("weights, by_leaf", [
    # Regym (PrioritizedReplayBuffer.py L774): (N leaf)^-beta, N = 2: (2 * 2)^-0.5 = 0.5, (2 * 4)^-0.5 = 0.3535534
    ("unnormalised", {0: 0.5, 1: 8 ** -0.5}),
    # the PER paper: (N P)^-beta with P = 2/6, 4/6: (2/3)^-0.5 = 1.2247449, (4/3)^-0.5 = 0.8660254, over the batch's max
    ("normalised", {0: (2 / 3) ** -0.5, 1: (4 / 3) ** -0.5}),
])
def test_importance_weights_by_hand(weights, by_leaf):
    buf = _two_sequences(weights)
    seen = set()
    for _ in range(20):
        idx, _, _, w = buf.sample(2)  # stratified over [0, 6): [0, 3) holds leaf 0 ([0, 2)) and 1; [3, 6) leaf 1
        assert idx[1] == 1
        expected = np.array([by_leaf[int(i)] for i in idx])
        if weights == "normalised":
            expected = expected / expected.max()
        np.testing.assert_allclose(w, expected, rtol=1e-6)
        seen.add(int(idx[0]))
    assert seen == {0, 1}


def test_the_two_weightings_differ_by_n_times_the_batch_smallest_leaf_to_the_beta():
    """normalised_i / unnormalised_i = [(N leaf_i / total)^-beta / (N leaf_min / total)^-beta] / (N leaf_i)^-beta =
    (N leaf_min)^beta, leaf_min the batch's smallest leaf. Leaves 1, 2, 3, 4 (alpha 1, eps 0), N = 4, beta 0.5: the
    batch of 4 drawn stratified over [0, 10) holds leaf 0 or 1 in its first segment, so the ratio is 2 or
    sqrt(8) = 2.83 for every entry. At Table 2's scale (N = 50,000, beta 0.6) it is 659.75 leaf_min^0.6: Regym's loss is
    hundreds of times smaller (issue 25 item 1: 170-700)."""
    assert r2d2.R2D2Config().importance_weights == "unnormalised"
    assert train.corrected(train.TrainConfig()).r2d2.importance_weights == "normalised"
    spec = {"x": ((), np.float32)}
    bufs = {}
    for weights in replay.IMPORTANCE_WEIGHTS:
        buf = replay.PrioritizedSequenceReplay(4, 2, spec, {"h": ((1,), np.float32)}, alpha=1.0, beta=0.5,
                                               priority_eps=0.0, seed=3, weights=weights)
        buf.add({"x": np.zeros((4, 2), np.float32)}, np.ones((4, 2), bool), {"h": np.zeros((4, 1), np.float32)})
        buf.update_priorities([0, 1, 2, 3], [1.0, 2.0, 3.0, 4.0])
        bufs[weights] = buf
    for _ in range(10):
        (idx, _, _, raw), (idx2, _, _, norm) = bufs["unnormalised"].sample(4), bufs["normalised"].sample(4)
        assert np.array_equal(idx, idx2) and idx.min() in (0, 1)
        np.testing.assert_allclose(norm / raw, np.full(4, (4 * (idx.min() + 1.0)) ** 0.5), rtol=1e-6)
    np.testing.assert_allclose(5e4 ** 0.6, 659.75, rtol=1e-5)


# -- sequence spacing (item 2) and episode ends (item 4) ------------------------------------------------------------
def _feed(builder, n_steps: int, done_at: int, actors: int = 1, base: int = 0):
    """Step `n_steps` transitions (x = step index + base, state h = 100 + x) through the builder, the last one terminal
    at `done_at`; returns every stored window as (x list, valid list, h)."""
    out = []
    for t in range(n_steps):
        x = np.full(actors, base + t)
        res = builder.add({"x": x}, {"h": torch.as_tensor(100 + x)}, np.ones(actors, bool), x == base + done_at)
        if res is not None:
            steps, valid, states = res
            out += [(steps["x"][i].tolist(), valid[i].tolist(), int(states["h"][i])) for i in range(len(valid))]
    return out


def _regym(every: int, seq_len: int = 6, actors: int = 1):
    return replay.RegymSequenceBuilder(actors, seq_len, every, {"x": ((), np.int64)}, {"h": ((), np.int64)})


def test_regym_spacing_in_both_eras_and_the_aligned_layout():
    """An episode of 13 steps (terminal at step 12), unroll 6, overlap 2.
    - Regym until 0ad9ce36 (every `overlap` = 2 steps once 6 are held): counts 6, 8, 10, 12 store steps 0-5, 2-7,
      4-9, 6-11; the terminal (count 13) stores the last 6, 7-12. Each stored window starts from the state of its first
      step (h = 100 + first step).
    - Regym after it (every unroll - overlap = 4): counts 8 and 12 (6 is not a multiple of 4), so steps 0-1 are never
      stored; then the terminal's 7-12.
    - ours (aligned, the R2D2 paper's): windows start at 0, 4, 8; 0-5 at count 6, 4-9 at count 10, and at the terminal
      8-12 with its last position padding (valid False)."""
    def window(first, last):
        return (list(range(first, last + 1)), [True] * 6, 100 + first)

    assert _feed(_regym(2), 13, 12) == [window(0, 5), window(2, 7), window(4, 9), window(6, 11), window(7, 12)]
    assert _feed(_regym(4), 13, 12) == [window(2, 7), window(6, 11), window(7, 12)]
    aligned = replay.SequenceBuilder(1, 6, 2, {"x": ((), np.int64)}, {"h": ((), np.int64)})
    assert _feed(aligned, 13, 12) == [window(0, 5), window(4, 9), ([8, 9, 10, 11, 12, 0], [True] * 5 + [False], 108)]


def test_the_presets_store_every_overlap_steps_until_2023_and_every_unroll_minus_overlap_after():
    """Figure 5's recall (2021-10): unroll 40, overlap 10, a window every 10 steps, sharing 30 steps with the next; its
    1,666 sequences (5e4 / 30) so hold about 16.7k steps. Table 2 (2022-07) and Figure 6 (2021-10): every 10 = 20 - 10
    either way. Table 4 and Table 1 (Regym 752e46d0 / 10e54b2d, after 0ad9ce36): every 40 - 10 = 30."""
    recall = train.preset("recall_scs").r2d2
    assert (recall.store_interval, recall.replay_sequences, recall.replay_sequences * recall.store_interval) == (
        10, 1666, 16660)
    for name, every in (("table2", 10), ("fig6_dnc", 10), ("table4_dcem", 30), ("table4_lstm", 30),
                        ("table1_s1", 30)):
        assert train.preset(name).r2d2.store_interval == every, name
        assert train.small(train.preset(name)).r2d2.store_interval == every, name


def test_regym_episode_end_pads_with_trained_copies_and_keeps_the_terminal_state():
    """unroll 6. An episode of 3 steps (x 0, 1, 2; terminal at 2) is stored at its terminal step as 0 1 2 2 2 2, valid
    everywhere (Regym trains the copies), done on the terminal and its 3 copies; its state slot holds the state the
    terminal step acted from (h = 102), the start's being zero. An episode of 8 steps ending off the spacing stores its
    last 6 steps (2-7) from the state of step 2, after the regular window 0-5 at count 6."""
    b = _regym(2)
    for t in range(3):
        res = b.add({"x": np.array([t])}, {"h": np.array([100 + t])}, [True], [t == 2])
    steps, valid, states = res
    assert steps["x"][0].tolist() == [0, 1, 2, 2, 2, 2] and valid[0].all() and int(states["h"][0]) == 102
    assert b.add({"x": np.array([99])}, {"h": np.array([199])}, [False], [False]) is None  # autoreset: skipped
    assert _feed(b, 8, 7, base=10) == [(list(range(10, 16)), [True] * 6, 110), (list(range(12, 18)), [True] * 6, 112)]


def test_regym_builder_keeps_each_actors_own_history():
    """Two actors out of phase: actor 0 ends a 2-step episode, autoresets and plays 6 more; actor 1 plays 8 steps.
    Stored states come from the actor's own row and step of the on-device history."""
    b = _regym(3, seq_len=4, actors=2)
    got = []
    for t in range(9):
        active = np.array([t != 2, True])  # actor 0's autoreset step
        x = np.array([t, 50 + t])
        done = np.array([t in (1, 8), t == 8])
        res = b.add({"x": x}, {"h": torch.as_tensor(1000 + x)}, active, done)
        if res is not None:
            got += [(s.tolist(), int(h)) for s, h in zip(res[0]["x"], res[2]["h"])]
    # actor 0: its 2-step episode padded (state of step 1); then steps 3.. 8: count 6 at step 8 (regular, and the
    # terminal): 5-8. actor 1: counts 6 (steps 52-55, at t = 5) and the terminal at count 9, steps 55-58 (9 % 3 == 0)
    assert got == [([0, 1, 1, 1], 1001), ([52, 53, 54, 55], 1052), ([5, 6, 7, 8], 1005), ([55, 56, 57, 58], 1055)]


class _StateStub(nn.Module):
    """Q(s_t, a) = scale * stimulus_t[a] + h_t, h counting steps from the state it starts from (h_{t+1} = h_t + 1):
    Q-values the test writes down, which show which state each step was evaluated from."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))
        self.register_buffer("legal", torch.ones(2, 2, dtype=torch.bool))

    def legal_mask(self, decision):
        return self.legal[decision.long()]

    def forward(self, inputs, state, features=False):
        t = inputs["stimulus"].shape[1]
        h = state["h"] + torch.arange(t, dtype=torch.float32)  # (B, T)
        return self.scale * inputs["stimulus"] + h.unsqueeze(-1), {"h": state["h"] + t}, None

    def initial_state(self, batch, device=None):
        return {"h": torch.zeros(batch, 1)}


def _stub_learner(**kw):
    config = r2d2.R2D2Config(unroll=5, burn_in=1, overlap=2, n_step=2, gamma=0.5, eta=0.9, batch_size=1, **kw)
    learner = r2d2.R2D2Learner(_StateStub(), config, n_actors=1)
    with torch.no_grad():
        learner.target.scale.fill_(2.0)
    return learner


def _window(stimulus, action, reward, done, valid=None):
    t = len(action)
    return {"stimulus": torch.tensor([stimulus], dtype=torch.float32), "decision": torch.zeros(1, t, dtype=torch.bool),
            "action": torch.tensor([action]), "reward": torch.tensor([reward]), "done": torch.tensor([done]),
            "valid": torch.ones(1, t, dtype=torch.bool) if valid is None else torch.tensor([valid])}


def test_regym_copies_are_trained_from_the_terminal_state():
    """A 3-step episode stored as Regym does: steps 0 1 2 + 2 copies of the terminal step 2, stored state h = 10 (the
    terminal's). Burn-in 1, n = 2, gamma 0.5, weight 0.5. The window starts at the episode's start (h = 0), so
    Q(t) = stimulus_t[a_t] + t for the real steps: t1 2 + 1 = 3, t2 3 + 2 = 5; each copy one step from h = 10: 3 + 10 =
    13. Targets: t1 0.5 + 0.5 * 1 = 1 (terminal at t2), t2 and the copies 1. All 4 positions trained (the last n = 2
    are terminal copies): TD -2, -4, -12, -12; loss 0.5 mean(0.5 [4, 16, 144, 144]) = 19.25; priority 0.9 * 12 +
    0.1 * 30 / 4 = 11.55; d loss / d scale = mean(0.5 (Q - y) stimulus[a]) = (2 + 6 + 18 + 18) / 4 = 11."""
    learner = _stub_learner()
    s = [[0, 0], [1, 2], [3, 1], [3, 1], [3, 1]]
    steps = _window(s, [0, 1, 0, 0, 0], [0.0, 0.5, 1.0, 1.0, 1.0], [False, False, True, True, True])
    loss, prio, td, mask = learner.loss(steps, {"h": torch.tensor([[10.0]])}, torch.tensor([0.5]))
    assert mask[0].tolist() == [True] * 4
    np.testing.assert_allclose(td[0].numpy(), [2, 4, 12, 12], rtol=1e-6)
    np.testing.assert_allclose(float(loss.detach()), 19.25, rtol=1e-6)
    np.testing.assert_allclose(float(prio[0]), 11.55, rtol=1e-6)
    loss.backward()
    np.testing.assert_allclose(float(learner.net.scale.grad), 11.0, rtol=1e-6)

    # ours (aligned): the same episode as 0 1 2 + 2 padding steps (valid False), from the zero state: TD -2, -4 only;
    # loss 0.5 mean(0.5 [4, 16, 0, 0]) = 1.25; priority over the 2 trained steps 0.9 * 4 + 0.1 * 3 = 3.9
    corrected = _stub_learner(sequences="aligned", priority_mean="trained")
    done = [False, False, True, False, False]
    padded = _window(s[:3] + [[0, 0]] * 2, [0, 1, 0, 0, 0], [0.0, 0.5, 1.0, 0.0, 0.0], done, [True] * 3 + [False] * 2)
    loss, prio, _, mask = corrected.loss(padded, {"h": torch.zeros(1, 1)}, torch.tensor([0.5]))
    assert mask[0].tolist() == [True, True, False, False]
    np.testing.assert_allclose([float(loss.detach()), float(prio[0])], [1.25, 3.9], rtol=1e-6)


def test_regym_masks_the_last_n_steps_unless_terminal():
    """An episode of exactly 5 steps (unroll 5): one window, terminal at its end, no copies, from its stored state
    h = 7.
    Q(t) = stimulus_t[a_t] + 7 + t: t1 2 + 8 = 10, t2 3 + 9 = 12, t3 2 + 10 = 12, t4 4 + 11 = 15. Target network
    Q = 2 stimulus + h. y(t1) = 0.5 + 0.5 * 1 + 0.25 * Q_tgt(t3, a* = 0 (tie 12, 12)) = 1 + 0.25 * (4 + 10) = 4.5;
    y(t2) = 1 + 0.5 * 0 + 0.25 * Q_tgt(t4, a* = 1 (11, 15)) = 1 + 0.25 * (8 + 11) = 5.75; y(t3) = 0 + 0.5 * 2 = 1
    (terminal at t4); y(t4) = 2. TD -5.5, -6.25, -11, -13.
    - Regym: t3 is in the last n = 2 and not terminal: masked, although its return is complete. Loss 0.5 (30.25 +
      39.0625 + 169) / 4 = 29.7890625; priority 0.9 * 13 + 0.1 * (5.5 + 6.25 + 13) / 4 = 12.31875.
    - ours: t3 trained. Loss 0.5 (238.3125 + 121) / 4 = 44.9140625; priority 0.9 * 13 + 0.1 * 35.75 / 4 = 12.59375."""
    steps = _window([[0, 0], [1, 2], [3, 1], [2, 2], [0, 4]], [0, 1, 0, 1, 1], [0.0, 0.5, 1.0, 0.0, 2.0],
                    [False, False, False, False, True])
    state, w = {"h": torch.tensor([[7.0]])}, torch.tensor([1.0])
    for kw, mask_hand, loss_hand, prio_hand in (
            ({}, [True, True, False, True], 29.7890625, 12.31875),
            ({"sequences": "aligned", "priority_mean": "trained"}, [True] * 4, 44.9140625, 12.59375)):
        loss, prio, td, mask = _stub_learner(**kw).loss(steps, state, w)
        assert mask[0].tolist() == mask_hand
        np.testing.assert_allclose(td[0].numpy(), [5.5, 6.25, 11, 13], rtol=1e-6)
        np.testing.assert_allclose([float(loss.detach()), float(prio[0])], [loss_hand, prio_hand], rtol=1e-6)


def test_the_trainer_stores_as_its_variant_says():
    base = train.Trainer(train.TrainConfig())
    fixed = train.Trainer(train.corrected(train.TrainConfig()))
    assert isinstance(base.builder, replay.RegymSequenceBuilder) and base.builder.every == 10
    assert type(fixed.builder) is replay.SequenceBuilder and fixed.builder.stride == 10
    assert (base.replay.weights, base.replay.priority_eps, fixed.replay.weights, fixed.replay.priority_eps) == (
        "unnormalised", 2e-4, "normalised", 1e-6)
    for _ in range(200):  # until some episodes have ended
        base.step()
    assert len(base.replay) > 0 and base.replay.valid[:len(base.replay)].all()  # no masked padding in Regym's layout


# -- priorities and the target copy (item 5) ------------------------------------------------------------------------
def test_priority_mean_over_all_positions_and_regym_eps():
    """|TD| 3, 1 on the 2 trained positions of 4 (masked ones 100, 7 ignored). Regym: 0.9 * 3 + 0.1 * (3 + 1) / 4 = 2.8,
    then 1e-4 added in sequence_priority and 1e-4 in priority(): leaf (2.8 + 2e-4)^0.9 = 2.8002^0.9. Ours: 0.9 * 3 +
    0.1 * 2 = 2.9, leaf (2.9 + 1e-6)^0.9."""
    td = torch.tensor([[3.0, 1.0, 100.0, 7.0]])
    mask = torch.tensor([[True, True, False, False]])
    np.testing.assert_allclose(float(replay.priority_mixture(td, mask, 0.9, "all")[0]), 2.8, rtol=1e-6)
    np.testing.assert_allclose(float(replay.priority_mixture(td, mask, 0.9, "trained")[0]), 2.9, rtol=1e-6)
    config = r2d2.R2D2Config()
    assert (config.priority_mean, config.priority_eps) == ("all", 2e-4)
    spec = {"x": ((), np.float32)}
    buf = replay.PrioritizedSequenceReplay(4, 2, spec, {"h": ((1,), np.float32)}, alpha=0.9, priority_eps=2e-4)

    def add():
        return buf.add({"x": np.zeros((1, 2), np.float32)}, np.ones((1, 2), bool), {"h": np.zeros((1, 1), np.float32)})

    add()
    assert buf.tree.leaves()[0] == 1.0  # a new sequence before any update: 1, Regym's (and the PER paper's) p_1
    buf.update_priorities([0], [0.5])
    add()
    assert buf.tree.leaves()[1] == 1.0  # (0.5 + 2e-4)^0.9 < 1: still 1
    buf.update_priorities([0], [2.8])
    add()
    np.testing.assert_allclose(buf.tree.leaves()[[0, 2]], [2.8002 ** 0.9] * 2, rtol=1e-12)


def test_faithful_target_copy_once_the_counter_is_past_the_interval():
    """Regym copies when the counter (+ n_actors per update) is > int(1 / tau), then resets it to 0. 4 actors (the
    small scale), tau 4e-4: after 625 updates the counter is 2500, not past: the copy comes at update 626. 32 actors
    (the reference): 78 * 32 = 2496, 79 * 32 = 2528: update 79, as with >=. The R2D2 paper's period: update 2500."""
    for n_actors, mode, first in ((4, "faithful", 626), (32, "faithful", 79), (4, "period", 2500)):
        learner = r2d2.R2D2Learner(_StateStub(), r2d2.R2D2Config(tau=4e-4, target_update=mode), n_actors=n_actors)
        for _ in range(first - 1):
            learner._update_target()
        assert learner.target_copies == 0
        learner._update_target()
        assert learner.target_copies == 1 and learner.target_counter == 0
