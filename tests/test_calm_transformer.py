import copy
import math

import pytest
import torch
import torch.nn.functional as F

from reprobench.calm import transformer
from reprobench.calm.transformer import TransformerLearner, TransformerLM, base_lr, lr_at, sinusoidal_encoding

torch.set_num_threads(1)

V, D, HEADS, LAYERS, FF, T, B = 11, 16, 2, 1, 32, 5, 3


def make_model(dropout=0.0, seed=0):
    torch.manual_seed(seed)
    return TransformerLM(V, D, HEADS, LAYERS, FF, dropout)


def windows(n, t=T, seed=1):
    """n consecutive (x, y) windows of one random token stream per column, y = x shifted one token."""
    g = torch.Generator().manual_seed(seed)
    stream = torch.randint(V, (n * t + 1, B), generator=g)
    return [(stream[i * t:(i + 1) * t], stream[i * t + 1:(i + 1) * t + 1]) for i in range(n)]


def ce(model, inp, y):
    logits = model(inp)[-y.shape[0]:]
    return F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))


# --- the model ---------------------------------------------------------------------------------------------------


def test_shapes():
    model = make_model(0.1)
    assert model(torch.randint(V, (T, B))).shape == (T, B, V)
    assert model(torch.randint(V, (9, 1))).shape == (9, 1, V)


def test_causal_mask():
    model = make_model(0.1).eval()
    x = torch.randint(V, (T, B))
    x2 = x.clone()
    x2[3] = (x2[3] + 1) % V
    with torch.no_grad():
        a, b = model(x), model(x2)
    torch.testing.assert_close(a[:3], b[:3], rtol=0, atol=1e-6)
    assert not torch.allclose(a[3:], b[3:])


def test_sinusoidal_encoding():
    pe = sinusoidal_encoding(7, 6).squeeze(1)
    assert pe.shape == (7, 6)
    torch.testing.assert_close(pe[0], torch.tensor([0.0, 1.0] * 3))
    pos = 5
    expected = [f(pos / 1e4 ** (2 * (j // 2) / 6)) for j, f in zip(range(6), [math.sin, math.cos] * 3)]
    torch.testing.assert_close(pe[pos], torch.tensor(expected))


def test_the_encoding_is_the_cpus_whatever_the_device_the_model_is_built_on(monkeypatch):
    """As the reference's buffer (model.py L108-119): 5000 positions computed on the CPU at construction and moved
    with the model, so a GPU run adds the CPU's float32 values (computed on a GPU they differ by ~1e-5 at large
    positions); not in the state dict."""
    calls = []

    def recorded(*args, **kwargs):
        calls.append(args[2:] + tuple(kwargs.values()))
        return sinusoidal_encoding(*args, **kwargs)

    with monkeypatch.context() as m, torch.device("meta"):  # a model built on another device than the CPU
        m.setattr(transformer, "sinusoidal_encoding", recorded)
        model = TransformerLM(V, 8, 2, 1, 8)
    assert calls == [("cpu",)] and model.pe.device.type == "meta" and model.pe.shape == (5000, 1, 8)
    assert torch.equal(make_model().pe[:7], sinusoidal_encoding(7, D))
    assert "pe" not in model.state_dict()
    x = torch.randint(0, V, (5003, 1))
    with torch.no_grad():
        make_model().eval()(x)  # beyond the buffer: recomputed, not an error


def test_init():
    model = make_model()
    assert model.encoder.weight.abs().max() <= 0.1 and model.decoder.weight.abs().max() <= 0.1
    assert torch.equal(model.decoder.bias, torch.zeros(V))


def test_init_draws_in_the_references_order():
    # lifelonglm model.py L137-163: the encoder layer (copied into every layer), the Embedding, the decoder, then
    # the embedding and decoder weights redrawn U(-0.1, 0.1)
    model = make_model(0.1)
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(D, HEADS, FF, 0.1)
    emb, dec = torch.nn.Embedding(V, D), torch.nn.Linear(D, V)
    emb.weight.data.uniform_(-0.1, 0.1)
    dec.weight.data.uniform_(-0.1, 0.1)
    assert torch.equal(model.encoder.weight, emb.weight) and torch.equal(model.decoder.weight, dec.weight)
    assert torch.equal(model.transformer.layers[0].linear1.weight, layer.linear1.weight)


# --- the learning rate -------------------------------------------------------------------------------------------


def test_lr_at_by_hand():
    assert lr_at(1, 1.0, 4) == pytest.approx(0.125)  # 1 * 4^-1.5
    assert lr_at(2, 1.0, 4) == pytest.approx(0.25)  # still rising linearly
    assert lr_at(4, 1.0, 4) == pytest.approx(0.5)  # the peak, 4^-0.5
    assert lr_at(16, 1.0, 4) == pytest.approx(0.25)  # decaying as step^-0.5
    assert lr_at(16, 2.0, 4) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        lr_at(0, 1.0, 4)


def test_base_lr():
    assert base_lr(42, 64) == pytest.approx(0.125)
    assert base_lr(1e-3, 64) == 1e-3


def record_lrs(learner):
    """The learning rate of every optimizer step the learner takes, appended as they happen."""
    lrs = []
    learner.optimizer.register_step_pre_hook(lambda opt, args, kwargs: lrs.append(opt.param_groups[0]["lr"]))
    return lrs


def test_the_schedule_counts_windows_not_optimizer_steps():
    # transformer_learner.py L41-43: the rate is set once per learn() call from a step that counts the calls, so
    # the li = 2 Adam steps of window i both take lr_at(i)
    data = windows(3)
    learner = TransformerLearner(make_model(), lr=42, warmup=4, learn_iterations=2)
    lrs = record_lrs(learner)
    for x, y in data:
        learner.learn(x, y)
    base = D**-0.5
    assert lrs == [lr_at(1, base, 4)] * 2 + [lr_at(2, base, 4)] * 2 + [lr_at(3, base, 4)] * 2
    assert learner.step == 3
    learner = TransformerLearner(make_model(), lr=1e-3)  # HEAD: base --lr; the default warm-up is main.py's 4000
    lrs = record_lrs(learner)
    for x, y in data:
        learner.learn(x, y)
    assert lrs == [pytest.approx(1e-3 * i * 4000**-1.5) for i in (1, 2, 3)]


# --- the learner -------------------------------------------------------------------------------------------------


def test_learn_returns_pre_update_loss():
    model = make_model(0.0)
    before = copy.deepcopy(model).eval()
    learner = TransformerLearner(model, lr=1e-2, context=0)
    (x, y), = windows(1)
    loss = learner.learn(x, y, class_id=2)
    assert isinstance(loss, torch.Tensor) and loss.dim() == 0 and not loss.requires_grad
    assert loss.device == model.decoder.weight.device
    with torch.no_grad():
        torch.testing.assert_close(loss, ce(before, x, y))
    assert not torch.equal(model.decoder.weight, before.decoder.weight)  # then it trained
    assert learner.gate_weights() is None and learner.on_fragment(3) is None


def test_two_learn_iterations_are_two_adam_steps():
    model = make_model(0.0)
    replay = copy.deepcopy(model)
    learner = TransformerLearner(model, lr=1e-2, learn_iterations=2, context=0)
    (x, y), = windows(1)
    first = learner.learn(x, y)
    assert learner.step == 1  # one window
    assert all(int(s["step"]) == 2 for s in learner.optimizer.state.values())
    opt = torch.optim.Adam(replay.parameters(), lr=1e-2)
    for it in range(2):  # the same window twice, re-predicted after the first step
        loss = ce(replay, x, y)
        if it == 0:
            torch.testing.assert_close(first, loss.detach())
        opt.zero_grad()
        loss.backward()
        for group in opt.param_groups:  # HEAD's schedule, base --lr, default warm-up 4000, step 1 for the window
            group["lr"] = lr_at(1, 1e-2, 4000)
        opt.step()
    for p, q in zip(model.parameters(), replay.parameters()):
        torch.testing.assert_close(p, q)


def test_score_eval_logs_the_eval_mode_loss():
    model = make_model(0.5)
    before = copy.deepcopy(model).eval()
    learner = TransformerLearner(model, lr=1e-2, score_eval=True)
    (x, y), = windows(1)
    loss = learner.learn(x, y)
    with torch.no_grad():
        torch.testing.assert_close(loss, ce(before, x, y))
    assert model.training


def inputs_seen(learner):
    """The model's input of every forward the learner makes, appended as they happen."""
    seen = []
    learner.model.encoder.register_forward_hook(lambda mod, args, out: seen.append(args[0].clone()))
    return seen


def test_the_input_is_the_last_context_tokens_and_repeats_the_window_as_the_reference():
    """context = 8, windows w1, w2, w3 of 3 tokens, li = 2. transformer_learner.py L47-58: predict appends the window
    to the buffer and keeps its last 8 tokens (the first window starts it uncut), and every re-prediction appends
    the window again (base_learner.py L26). Listed by hand:
      w1: pass 1 reads w1, pass 2 w1 w1; carried: w1 w1
      w2: pass 1 (w1 w1 w2)[-8:] = w1[1:] w1 w2; pass 2 (w1[1:] w1 w2 w2)[-8:] = w1[1:] w2 w2 (2 + 3 + 3 tokens)
      w3: pass 1 (w1[1:] w2 w2 w3)[-8:] = w2[1:] w2 w3; pass 2 w2[1:] w3 w3
    and the loss returned is the window's under pass 1's input."""
    model = make_model(0.0)
    learner = TransformerLearner(model, lr=1e-2, learn_iterations=2, context=8)
    seen = inputs_seen(learner)
    (w1, y1), (w2, y2), (w3, y3) = windows(3, 3)
    cat = torch.cat
    expected = [[w1, cat([w1, w1])], [cat([w1[1:], w1, w2]), cat([w1[1:], w2, w2])],
                [cat([w2[1:], w2, w3]), cat([w2[1:], w3, w3])]]
    for (x, y), want in zip([(w1, y1), (w2, y2), (w3, y3)], expected):
        before = copy.deepcopy(model).eval()
        seen.clear()
        loss = learner.learn(x, y)
        assert len(seen) == 2 and all(torch.equal(s, w) for s, w in zip(seen, want))
        assert torch.equal(learner.buffer, want[-1])
        with torch.no_grad():
            torch.testing.assert_close(loss, ce(before, want[0], y))


def test_corrected_appends_the_window_once():
    # repeat_window=False: both passes read the buffer with the window once, w1 | w1 w2 | (w1 w2 w3)[-8:]
    learner = TransformerLearner(make_model(0.0), lr=1e-2, learn_iterations=2, context=8, repeat_window=False)
    seen = inputs_seen(learner)
    (w1, y1), (w2, y2), (w3, y3) = windows(3, 3)
    expected = [w1, torch.cat([w1, w2]), torch.cat([w1[1:], w2, w3])]
    for (x, y), want in zip([(w1, y1), (w2, y2), (w3, y3)], expected):
        seen.clear()
        learner.learn(x, y)
        assert len(seen) == 2 and all(torch.equal(s, want) for s in seen)
        assert torch.equal(learner.buffer, want)


def test_an_input_shorter_than_the_window_is_refused():
    learner = TransformerLearner(make_model(0.0), lr=1e-2, context=2)
    (x, y), = windows(1)
    with pytest.raises(ValueError, match="fewer than the window"):
        learner.learn(x, y)


def test_no_buffer_without_context():
    model = make_model(0.0)
    seen = []
    model.encoder.register_forward_hook(lambda mod, args, out: seen.append(args[0]))
    learner = TransformerLearner(model, lr=1e-2, context=0)
    for x, y in windows(2):
        learner.learn(x, y)
        assert torch.equal(seen[-1], x)
    assert learner.buffer is None


def test_state_dict_resume_is_exact():
    data = windows(6)
    learner = TransformerLearner(make_model(0.1), lr=42, warmup=4, learn_iterations=2, context=8)
    for x, y in data[:3]:
        learner.learn(x, y)
    snapshot, rng = copy.deepcopy(learner.state_dict()), torch.get_rng_state()
    straight = [learner.learn(x, y) for x, y in data[3:]]

    resumed = TransformerLearner(make_model(0.1, seed=7), lr=42, warmup=4, learn_iterations=2, context=8)
    resumed.load_state_dict(snapshot)
    torch.set_rng_state(rng)
    again = [resumed.learn(x, y) for x, y in data[3:]]
    assert all(torch.equal(a, b) for a, b in zip(straight, again))
