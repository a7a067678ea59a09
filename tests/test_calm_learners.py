"""The online learners against hand computations (specs/calm.md 3.2-3.7; D5, D9, D10, D12) and the online loop's
exact resume."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from reprobench.calm import learners, models, zoo
from reprobench.calm.online import learn_batch, run_online
from reprobench.calm.stream import Stream
from reprobench.core.hostsync import HostSyncs

V, T, B = 13, 5, 3


def windows(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        x = torch.randint(0, V, (T + 1, B), generator=g)
        out.append((x[:-1], x[1:]))
    return out


def lm(dropout=0.0, seed=0, nhid=8):
    torch.manual_seed(seed)
    return models.LSTMLM(V, 6, nhid, dropout=dropout)


def ce(logits, y):
    return F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))


def test_single_learner_scores_before_it_trains_and_repeats_from_the_saved_state():
    model = lm()
    before = copy.deepcopy(model)
    learner = learners.SingleLearner(model, lr=0.01, learn_iterations=2)
    (x, y), = windows(1)
    loss = learner.learn(x, y)
    assert loss.dim() == 0 and not loss.requires_grad
    torch.testing.assert_close(loss, ce(before(x)[0], y))
    # by hand: two Adam steps, each from the zero state, clipped at 1.0
    opt = torch.optim.Adam(before.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        out, hidden = before(x)
        ce(out, y).backward()
        torch.nn.utils.clip_grad_norm_(before.parameters(), 1.0)
        opt.step()
    for a, b in zip(model.parameters(), before.parameters()):
        torch.testing.assert_close(a, b)
    # the carried state is the last pass's (made with the parameters after the first step), detached
    torch.testing.assert_close(learner.hidden[0], hidden[0].detach())
    assert not learner.hidden[0].requires_grad


def test_score_eval_logs_the_eval_mode_loss_and_still_trains_with_dropout():
    model = lm(dropout=0.5)
    snapshot = copy.deepcopy(model).eval()
    learner = learners.SingleLearner(model, lr=0.01, score_eval=True)
    (x, y), = windows(1)
    loss = learner.learn(x, y)
    torch.testing.assert_close(loss, ce(snapshot(x)[0], y))
    assert model.training


def test_per_class_learner_keeps_one_model_optimizer_and_state_per_class():
    torch.manual_seed(0)
    learner = learners.PerClassLearner(lambda: models.LSTMLM(V, 6, 8, dropout=0.0), lr=0.01)
    (x0, y0), (x1, y1), (x2, y2) = windows(3)
    learner.learn(x0, y0, class_id=3)
    state3 = learner.learners[3].hidden
    learner.learn(x1, y1, class_id=1)
    assert list(learner.learners) == [3, 1]
    assert learner.learners[3].hidden is state3  # class 3's state waits where its text stopped
    # class 3 resumes from its own state: the same loss as a lone learner that saw only class 3's windows
    torch.manual_seed(0)
    alone = learners.SingleLearner(models.LSTMLM(V, 6, 8, dropout=0.0), lr=0.01)
    alone.learn(x0, y0)
    torch.testing.assert_close(learner.learn(x2, y2, class_id=3), alone.learn(x2, y2))
    with pytest.raises(ValueError, match="oracle"):
        learner.learn(x0, y0)


def test_clipping_each_expert_equals_clip_grad_norm_on_each_module():
    torch.manual_seed(1)
    mods = [models.LSTMLM(V, 6, 8, dropout=0.0) for _ in range(3)]
    experts = models.ExpertLSTMs.from_modules(mods)
    (x, y), = windows(1)
    w = torch.tensor([5.0, 0.01, -3.0])  # large, tiny and negative weights: some experts clip, one does not
    ce(models.poe_logits(experts(x)[0], w), y).backward()
    ce(models.poe_logits(torch.stack([m(x)[0] for m in mods]), w), y).backward()
    norms = [float(torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5)) for m in mods]
    assert min(norms) < 0.5 < max(norms)
    learners.clip_per_expert(experts, 0.5)
    for i, m in enumerate(mods):
        theirs = dict(m.named_parameters())
        for mine, name in experts.parameter_name_pairs():
            torch.testing.assert_close(getattr(experts, mine).grad[i], theirs[name].grad, atol=1e-6, rtol=1e-5)


def mixture(kind, gate, n=3, li=1, **kw):
    torch.manual_seed(0)
    experts = models.ExpertLSTMs(n, V, 6, 8, dropout=0.0)
    return learners.MixtureLearner(experts, gate, kind, lr=0.01, learn_iterations=li, **kw)


def test_ensemble_loss_is_cross_entropy_of_the_summed_logits_and_d12_weights():
    learner = mixture("poe", models.FixedWeights(3, "one"))
    z = learner.experts(windows(1)[0][0])[0].detach()
    (x, y), = windows(1)
    torch.testing.assert_close(learner.learn(x, y), ce(z.sum(0), y))
    torch.testing.assert_close(learner.gate_weights(), torch.ones(3))
    torch.manual_seed(0)
    assert torch.equal(zoo.build("ensemble_5", "multilingual", 10_000, V, "corrected", 0.02).gate(),
                       torch.full((5,), 0.2))
    torch.manual_seed(0)
    assert torch.equal(zoo.build("ensemble_5", "multilingual", 10_000, V, "faithful", 0.02).gate(), torch.ones(5))


def test_moe_objectives_by_hand():
    (x, y), = windows(1)
    for objective in ("faithful", "corrected"):
        learner = mixture("moe", models.GradientWeights(3), moe_objective=objective, gate_steps=2)
        log_p = torch.log_softmax(learner.experts(x)[0].detach(), -1)
        pi = torch.softmax(learner.gate.weights.detach(), 0)
        target = log_p.gather(-1, y.unsqueeze(0).unsqueeze(-1).expand(3, T, B, 1)).squeeze(-1)  # (N, T, b)
        if objective == "faithful":  # -sum_i pi_i log p_i(y)
            expected = -(pi.view(3, 1, 1) * target).sum(0).mean()
        else:  # -log sum_i pi_i p_i(y)
            expected = -torch.log((pi.view(3, 1, 1) * target.exp()).sum(0)).mean()
        torch.testing.assert_close(learner.learn(x, y), expected)
        # the plastic gate took k = 2 Adam steps; the faithful loss bounds the mixture NLL from above (Jensen)
        assert learner.gate_optimizer.state[learner.gate.weights]["step"] == 2
    faithful = mixture("moe", models.GradientWeights(3), moe_objective="faithful").learn(x, y)
    corrected = mixture("moe", models.GradientWeights(3), moe_objective="corrected").learn(x, y)
    assert faithful > corrected


def test_d9_mixtures_reprocess_the_window_from_the_post_window_state_unless_corrected():
    (x, y), = windows(1)
    states = {}
    for restore in (False, True):
        learner = mixture("poe", models.FixedWeights(3, "one"), li=2, restore_state=restore)
        learner.optimizer = torch.optim.SGD(learner.experts.parameters(), lr=0.0)  # no update: only the state moves
        learner.learn(x, y)
        states[restore] = learner.hidden[0]
    reference = mixture("poe", models.FixedWeights(3, "one"))
    once = reference.experts(x)[1][0]
    twice = reference.experts(x, reference.experts(x)[1])[1][0]
    torch.testing.assert_close(states[True], once)  # corrected: pass 2 starts from the saved state
    torch.testing.assert_close(states[False], twice)  # faithful: the window is processed twice in sequence


def test_lstm_gate_takes_one_step_and_its_state_is_restored_between_passes():
    gate = models.LSTMWeights(V, 3, 4)
    learner = mixture("poe", gate, li=2)
    (x, y), = windows(1)
    learner.learn(x, y)
    steps = [s["step"] for s in learner.gate_optimizer.state.values()]
    assert steps and all(s == 2 for s in steps)  # one step per pass
    assert learner.gate_weights().shape == (3,)


def test_moe_warmup_uses_uniform_weights_then_resets_the_experts_optimizer():
    learner = mixture("moe", models.GradientWeights(3), warmup=2, gate_steps=5)
    gate_before = learner.gate.weights.detach().clone()
    for i, (x, y) in enumerate(windows(3)):
        learner.on_fragment(i)
        learner.learn(x, y)
        if i < 2:
            torch.testing.assert_close(learner.gate_weights(), torch.full((3,), 1 / 3))
            assert torch.equal(learner.gate.weights, gate_before)
    assert not learner.warming
    assert not torch.equal(learner.gate.weights, gate_before)
    assert all(s["step"] == 1 for s in learner.optimizer.state.values())  # a fresh Adam at fragment 2


def tiny_stream():
    rng = np.random.default_rng(0)
    tokens = {c: rng.integers(0, V, 6000) for c in ("a", "b", "c")}
    return Stream(tokens, lam=60, seed=3, n_fragments=12, b=B, window=T, bptt=T)


@pytest.mark.parametrize("model", ["poe_pw_30", "ind_lstm", "moe_5"])
def test_a_killed_run_resumes_exactly(tmp_path, model):
    stream = tiny_stream()
    identity = {"model": model}

    def build():
        torch.manual_seed(0)
        return zoo.build(model, "multilingual", 10_000, V, "faithful", 0.02)

    full = run_online(build(), stream, "cpu")
    ckpt = str(tmp_path / "run.pt")
    half = len(stream) // 2
    run_online(build(), stream, "cpu", checkpoint=ckpt, identity=identity, stop_after=half)
    torch.manual_seed(123)  # a new process: torch's generator elsewhere; the checkpoint restores it
    resumed = run_online(build(), stream, "cpu", checkpoint=ckpt, identity=identity)
    assert np.array_equal(full.loss, resumed.loss)
    assert (full.weights is None) == (resumed.weights is None)
    if full.weights is not None:
        assert np.array_equal(full.weights, resumed.weights)


@pytest.mark.parametrize("variant", ["faithful", "corrected"])
def test_a_training_step_reads_no_tensor_on_the_host(variant):
    """No host sync (reprobench.core.hostsync) in the online loop's step (online.learn_batch: learn, the gate weights
    and the loss kept on the device), for every Table 1 model and the Transformer, in and after the MoE warm-up: on a
    GPU the whole step is queued without waiting."""
    batches = list(tiny_stream())[:3]
    losses = torch.zeros(len(batches))
    for model in (*zoo.MODELS, zoo.TRANSFORMER):
        torch.manual_seed(0)
        learner = zoo.build(model, "multilingual", 10_000, V, variant, 0.02, 3)
        weights = learn_batch(learner, batches[0], "cpu", losses, None)  # the first step makes the optimiser's state
        with HostSyncs() as syncs:
            weights = learn_batch(learner, batches[1], "cpu", losses, weights)
            learner.on_fragment(10)  # the MoE warm-up ends: a fresh Adam for the experts
            learn_batch(learner, batches[2], "cpu", losses, weights)
        assert syncs.count == 0, (model, syncs.points)
