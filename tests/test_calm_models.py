import math

import pytest
import torch
import torch.nn.functional as F

from reprobench.calm.models import (
    LSTMLM,
    ExpertLSTMs,
    FixedWeights,
    GradientWeights,
    LSTMWeights,
    MoS,
    detach_hidden,
    moe_loss_corrected,
    moe_loss_faithful,
    n_parameters,
    poe_logits,
)
from reprobench.calm.sizes import lstm_gate_n_parameters, lstm_lm_n_parameters, mos_n_parameters

torch.set_num_threads(1)

NEWS_V = 211


def spec_lstm_lm(v, h):  # spec 3.10, E = 200, two layers
    return (h + 201) * v + 12 * h * h + 816 * h


# --- parameter counts (spec 3.10) -------------------------------------------------------------------------------


@pytest.mark.parametrize("h, millions", [(200, 0.728), (550, 4.24), (1300, 21.66)])
def test_lstm_lm_count(h, millions):
    with torch.device("meta"):  # counts only: no memory, no init cost
        model = LSTMLM(NEWS_V, 200, h)
    n = n_parameters(model)
    assert n == spec_lstm_lm(NEWS_V, h) == lstm_lm_n_parameters(NEWS_V, h)
    assert round(n / 1e6, len(str(millions).split(".")[1])) == millions


def test_lstm_lm_count_exact_small():
    assert n_parameters(LSTMLM(NEWS_V, 200, 200)) == 727_811


def test_mos_count():
    with torch.device("meta"):
        model = MoS(NEWS_V, 200, 500, n_components=75)
    n = n_parameters(model)
    assert n == spec_lstm_lm(NEWS_V, 500) + 75 * 500**2 + 2 * 75 * 500 == mos_n_parameters(NEWS_V, 500, 75)
    assert round(n / 1e6, 2) == 22.38


def test_lstm_gate_count():
    gate = LSTMWeights(NEWS_V, n=30, nhid=200)
    g, n, v = 200, 30, NEWS_V
    expected = 100 * v + 4 * g * (100 + g) + 8 * g + (g + 1) * n + n
    assert n_parameters(gate) == expected == lstm_gate_n_parameters(v, n, g)
    assert round(expected / 1e6, 2) == 0.27
    # the biases and the unused base-class vector are frozen: only the weights train
    assert n_parameters(gate, trainable_only=True) == 100 * v + 4 * g * (100 + g) + g * n


def test_expert_lstms_count():
    with torch.device("meta"):
        experts = ExpertLSTMs(30, NEWS_V, 200, 200)
    assert n_parameters(experts) == 30 * spec_lstm_lm(NEWS_V, 200) == 21_834_330
    assert round(n_parameters(experts) / 1e6, 1) == 21.8


def test_closed_form_matches_modules_other_shapes():
    assert n_parameters(LSTMLM(13, 7, 5, nlayers=3)) == lstm_lm_n_parameters(13, 5, emsize=7, nlayers=3)
    assert n_parameters(MoS(13, 7, 5, n_components=3)) == mos_n_parameters(13, 5, 3, emsize=7)
    assert n_parameters(LSTMWeights(13, 4, 6)) == lstm_gate_n_parameters(13, 4, 6)


# --- the batched experts equal N separate LSTMLMs ---------------------------------------------------------------

N, V, E, H, T, B = 3, 7, 5, 4, 4, 2


def _build(dtype, dropout=0.3):
    torch.manual_seed(0)
    mods = [LSTMLM(V, E, H, dropout=dropout).to(dtype) for _ in range(N)]
    experts = ExpertLSTMs.from_modules(mods)
    return mods, experts


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
def test_batched_equals_loop_forward_and_gradients(dtype, tol):
    mods, experts = _build(dtype)
    for m in [*mods, experts]:
        m.eval()
    gen = torch.Generator().manual_seed(1)
    hid_b = experts.init_hidden(B)
    hid_l = [m.init_hidden(B) for m in mods]
    for _window in range(2):  # the second window starts from the first one's detached hidden state
        x = torch.randint(V, (T, B), generator=gen)
        y = torch.randint(V, (T, B), generator=gen)
        for m in [*mods, experts]:
            m.zero_grad()
        logits_b, hid_b = experts(x, hid_b)
        assert logits_b.shape == (N, T, B, V) and logits_b.dtype == dtype
        F.cross_entropy(logits_b.reshape(-1, V), y.repeat(N, 1, 1).reshape(-1), reduction="sum").backward()
        outs = []
        for i, m in enumerate(mods):
            logits, hid_l[i] = m(x, hid_l[i])
            F.cross_entropy(logits.reshape(-1, V), y.reshape(-1), reduction="sum").backward()
            outs.append(logits)
        assert (logits_b - torch.stack(outs)).abs().max() < tol
        stacked = ExpertLSTMs.stack_hidden(hid_l)
        for a, b in zip(hid_b, stacked):
            assert a.shape == (N, 2, B, H) and (a - b).abs().max() < tol
        for mine, theirs in experts.parameter_name_pairs():
            g_b = getattr(experts, mine).grad
            g_l = torch.stack([dict(m.named_parameters())[theirs].grad for m in mods])
            assert (g_b - g_l).abs().max() < tol, mine
        hid_b, hid_l = detach_hidden(hid_b), detach_hidden(hid_l)


def test_default_init_equals_separately_built_modules_and_roundtrip():
    torch.manual_seed(5)
    experts = ExpertLSTMs(N, V, E, H, dropout=0.1)
    torch.manual_seed(5)
    mods = [LSTMLM(V, E, H, dropout=0.1) for _ in range(N)]
    state = ExpertLSTMs.from_modules(mods).state_dict()
    assert all(torch.equal(state[k], v) for k, v in experts.state_dict().items())
    before = torch.random.get_rng_state()
    back = experts.to_modules()
    assert torch.equal(before, torch.random.get_rng_state())
    for a, b in zip(back, mods):
        assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    # init ranges of spec 3.1
    assert experts.encoder_weight.abs().max() <= 0.1 and experts.decoder_weight.abs().max() <= 0.1
    assert torch.count_nonzero(experts.decoder_bias) == 0


def test_dropout_masks_are_independent_per_expert():
    torch.manual_seed(0)
    experts = ExpertLSTMs.from_modules([LSTMLM(V, E, H, dropout=0.5)] * N)  # N identical experts
    x = torch.randint(V, (T, B))
    logits, _ = experts.eval()(x)
    assert torch.equal(logits[0], logits[1]) and torch.equal(logits[0], logits[2])
    logits, _ = experts.train()(x)
    assert not torch.allclose(logits[0], logits[1]) and not torch.allclose(logits[1], logits[2])


# --- combinations, by hand -------------------------------------------------------------------------------------


def test_poe_logits_by_hand():
    z = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, -1.0]]).view(2, 1, 1, 3)
    w = torch.tensor([1.0, 2.0])
    combined = poe_logits(z, w)  # 1 z1 + 2 z2 = [1, 2, -2]
    assert torch.allclose(combined.view(3), torch.tensor([1.0, 2.0, -2.0]))
    loss = F.cross_entropy(combined.view(1, 3), torch.tensor([0]))
    expected = math.log(math.e**1 + math.e**2 + math.e**-2) - 1.0  # 1.3265626...
    assert abs(loss.item() - expected) < 1e-6 and abs(expected - 1.3265626) < 1e-7
    # per-token weights (N, T, b) and negative weights
    w_tok = torch.tensor([-1.0, 0.5]).view(2, 1, 1)
    assert torch.allclose(poe_logits(z, w_tok).view(3), torch.tensor([-1.0, 0.5, -0.5]))


def test_moe_losses_by_hand():
    # p1 = (1/2, 1/4, 1/4), p2 = (1/5, 3/5, 1/5): log-probabilities given as logits, so softmax(z_i) = p_i
    p = torch.tensor([[0.5, 0.25, 0.25], [0.2, 0.6, 0.2]], dtype=torch.float64)
    log_probs = torch.log_softmax(torch.log(p), -1).view(2, 1, 1, 3)
    pi = torch.tensor([0.25, 0.75], dtype=torch.float64)
    y = torch.tensor([[0]])
    faithful = moe_loss_faithful(log_probs, pi, y)  # -(1/4 ln 1/2 + 3/4 ln 1/5) = 1/4 ln 2 + 3/4 ln 5
    assert abs(faithful.item() - (0.25 * math.log(2) + 0.75 * math.log(5))) < 1e-12
    assert abs(faithful.item() - 1.3803652) < 1e-7
    corrected = moe_loss_corrected(log_probs, pi, y)  # -ln(1/4 * 1/2 + 3/4 * 1/5) = -ln 0.275
    assert abs(corrected.item() + math.log(0.275)) < 1e-12 and abs(corrected.item() - 1.290984) < 1e-6
    same = moe_loss_corrected(log_probs, None, y, log_pi=torch.log(pi))
    assert abs(same.item() - corrected.item()) < 1e-12
    # the faithful loss is NLLLoss on the pi-weighted sum of log-probabilities (what the code did)
    nll = F.nll_loss(poe_logits(log_probs, pi).view(1, 3), y.view(1))
    assert abs(nll.item() - faithful.item()) < 1e-12


def test_moe_faithful_bounds_corrected():
    gen = torch.Generator().manual_seed(3)
    n, t, b, v = 4, 5, 3, 6
    log_probs = torch.log_softmax(3 * torch.randn(n, t, b, v, generator=gen, dtype=torch.float64), -1)
    y = torch.randint(v, (t, b), generator=gen)
    for pi in (torch.softmax(torch.randn(n, generator=gen, dtype=torch.float64), 0),
               torch.softmax(torch.randn(n, t, b, generator=gen, dtype=torch.float64), 0)):
        faithful = moe_loss_faithful(log_probs, pi, y, reduction="none")
        corrected = moe_loss_corrected(log_probs, pi, y, reduction="none")
        assert faithful.shape == corrected.shape == (t, b)
        assert bool((faithful >= corrected - 1e-12).all()) and bool((faithful > corrected).any())
        assert torch.allclose(faithful.mean(), moe_loss_faithful(log_probs, pi, y))


# --- gates -----------------------------------------------------------------------------------------------------


def test_gradient_weights_init():
    torch.manual_seed(0)
    gate = GradientWeights(1000)
    w = gate()
    assert w.shape == (1000,) and w.requires_grad
    assert w.abs().max() <= 0.1 and w.min() < -0.09 and w.max() > 0.09
    soft = GradientWeights(5, normalize=True)
    assert abs(soft().sum().item() - 1) < 1e-6
    assert torch.allclose(soft.log_weights().exp(), soft())


def test_fixed_weights_one_vs_mean():
    assert torch.equal(FixedWeights(4)(), torch.ones(4))  # ACL-era default (the Ensemble command lines)
    assert torch.equal(FixedWeights(4, "one")(), torch.ones(4))
    assert torch.allclose(FixedWeights(4, "mean")(), torch.full((4,), 0.25))
    assert n_parameters(FixedWeights(4)) == 0
    with pytest.raises(ValueError):
        FixedWeights(4, "sum")


def test_lstm_weights_shapes_and_biases():
    torch.manual_seed(0)
    gate = LSTMWeights(V, n=3, nhid=6)
    x = torch.randint(V, (T, B))
    w, hidden = gate(x)
    assert w.shape == (3, T, B) and hidden[0].shape == (1, B, 6)
    for bias in (gate.rnn.bias_ih_l0, gate.rnn.bias_hh_l0, gate.decoder.bias):
        assert torch.count_nonzero(bias) == 0 and not bias.requires_grad
    assert gate.encoder.weight.abs().max() <= 0.1 and gate.decoder.weight.abs().max() <= 0.1
    w.sum().backward()
    assert gate.decoder.bias.grad is None and gate.decoder.weight.grad is not None
    norm = LSTMWeights(V, n=3, nhid=6, normalize=True)
    assert torch.allclose(norm(x)[0].sum(0), torch.ones(T, B))


def test_mos_draws_and_orders_its_parameters_as_the_reference():
    # model.py L184-210: encoder, prior, latent, LSTM, decoder, each with PyTorch's default init, then the embedding
    # and decoder weights redrawn U(-0.1, 0.1) and the decoder bias zeroed
    torch.manual_seed(0)
    model = MoS(V, E, H, n_components=3, dropout=0.2)
    torch.manual_seed(0)
    parts = [torch.nn.Embedding(V, E), torch.nn.Linear(H, 3, bias=False), torch.nn.Linear(H, 3 * H),
             torch.nn.LSTM(E, H, 2, dropout=0.2), torch.nn.Linear(H, V)]
    parts[0].weight.data.uniform_(-0.1, 0.1)
    parts[4].bias.data.zero_()
    parts[4].weight.data.uniform_(-0.1, 0.1)
    expected = [p for part in parts for p in part.parameters()]
    got = list(model.parameters())
    assert len(got) == len(expected) and all(torch.equal(p, q) for p, q in zip(got, expected))
    assert [n.split(".")[0] for n, _ in model.named_parameters()][:4] == ["encoder", "prior", "latent", "latent"]


def test_mos_outputs_log_mixture():
    torch.manual_seed(0)
    model = MoS(V, E, H, n_components=3, dropout=0.2).eval()
    out, hidden = model(torch.randint(V, (T, B)))
    assert out.shape == (T, B, V) and hidden[0].shape == (2, B, H)
    assert torch.allclose(out.exp().sum(-1), torch.full((T, B), 1 + V * 1e-8), atol=1e-5)
    assert model.prior.bias is None
