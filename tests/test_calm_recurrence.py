"""ExpertLSTMs' recurrences against the step-by-step autograd graph ("autograd", the path before, which "auto" keeps
for small models on a CPU): "unrolled" (one autograd node per layer, what "auto" runs on a GPU; its CUDA branch,
torch's fused LSTMCell kernel, through an emulation of that kernel here) and "per_expert" (torch's own LSTM per
expert, what "auto" runs for large models on a CPU)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from reprobench.calm import models, zoo
from reprobench.calm.models import ExpertLSTMs, Recurrence, auto_recurrence

torch.set_num_threads(1)

N, V, E, H, T, B = 3, 7, 5, 4, 6, 2


def _models(recurrence, dtype, dropout=0.0):
    torch.manual_seed(0)
    ref = ExpertLSTMs(N, V, E, H, dropout=dropout, recurrence="autograd").to(dtype)
    other = ExpertLSTMs(N, V, E, H, dropout=dropout, init=False, recurrence=recurrence).to(dtype)
    other.load_state_dict(ref.state_dict())
    return ref, other


def _run(model, seed=1, dtype=torch.float64):
    """Logits, new hidden state and the gradients (parameters, then the initial h and c) of a loss on the logits
    and on the new hidden state, so that gradients reach every output and input of the recurrence; dropout masks
    from `seed`."""
    gen = torch.Generator().manual_seed(seed)
    x, y = torch.randint(V, (T, B), generator=gen), torch.randint(V, (T, B), generator=gen)
    hidden = [torch.randn(N, 2, B, H, generator=gen, dtype=dtype).requires_grad_() for _ in range(2)]
    torch.manual_seed(seed)
    z, (h, c) = model(x, hidden)
    loss = F.cross_entropy(z.reshape(-1, V), y.repeat(N, 1, 1).reshape(-1)) + 0.3 * h.sum() + 0.1 * (c**2).sum()
    params = dict(model.named_parameters())
    grads = torch.autograd.grad(loss, [*params.values(), *hidden])
    return z, (h, c), dict(zip([*params, "h0", "c0"], grads))


def _rel(a, b):
    a, b = a.detach(), b.detach()
    return float((a - b).norm() / b.norm()) if b.norm() else float((a - b).norm())


@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-13), (torch.float32, 1e-5)])
def test_unrolled_forward_is_the_autograd_paths_bits_and_gradients_agree_to_rounding(dtype, tol):
    ref, unrolled = _models("unrolled", dtype, dropout=0.3)
    for train in (True, False):
        ref.train(train), unrolled.train(train)
        z_ref, hid_ref, g_ref = _run(ref, dtype=dtype)
        z, hid, g = _run(unrolled, dtype=dtype)
        assert torch.equal(z, z_ref) and all(torch.equal(a, b) for a, b in zip(hid, hid_ref))
        for name in g_ref:
            assert _rel(g[name], g_ref[name]) < tol, name
            if dtype == torch.float64 and not name.startswith("weight_hh"):
                # the same ops in autograd's order: only the recurrent weights' sum over steps is regrouped
                assert torch.equal(g[name], g_ref[name]), name


def test_unrolled_without_gradients_equals_its_forward():
    ref, unrolled = _models("unrolled", torch.float64)
    x = torch.randint(V, (T, B))
    with torch.no_grad():
        assert torch.equal(unrolled.eval()(x)[0], ref.eval()(x)[0])


def test_unrolled_backward_against_finite_differences():
    gen = torch.Generator().manual_seed(2)
    xw = torch.randn(T, N, B, 4 * H, generator=gen, dtype=torch.float64, requires_grad=True)
    w_hh = (0.5 * torch.randn(N, 4 * H, H, generator=gen, dtype=torch.float64)).requires_grad_()
    h0, c0 = (torch.randn(N, B, H, generator=gen, dtype=torch.float64, requires_grad=True) for _ in range(2))
    assert torch.autograd.gradcheck(lambda *a: Recurrence.apply(*a, False), (xw, w_hh, h0, c0))


def _emulated_cell(input_gates, hidden_gates, cx):
    """torch's CUDA LSTMCell kernel (aten/src/ATen/native/cuda/RNN.cu, lstm_cell_forward), in torch ops."""
    i, f, g, o = (input_gates + hidden_gates).chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    return o * cy.tanh(), cy, torch.cat([i, f, g, o], 1)


def _emulated_cell_backward(d_hy, d_cy, cx, cy, workspace):
    """Its backward (lstm_cell_backward): d gates, d cx."""
    i, f, g, o = workspace.chunk(4, 1)
    go = torch.zeros_like(cx) if d_hy is None else d_hy
    tc = cy.tanh()
    dc = go * o * (1 - tc * tc) + (0 if d_cy is None else d_cy)
    d_gates = torch.cat([dc * g * (1 - i) * i, dc * cx * (1 - f) * f, dc * i * (1 - g * g), go * tc * (1 - o) * o], 1)
    return d_gates, dc * f


def test_the_fused_cell_branch_through_an_emulated_kernel(monkeypatch):
    """The CUDA branch's plumbing (rows, saved states, the order of the kernel's arguments) on the CPU: with the
    kernel emulated, it gives the CPU branch's values and passes gradcheck. On a GPU, benchmarks/gpu_check.py
    compares the real kernel with the CPU."""
    monkeypatch.setattr(models, "_fused_cell", _emulated_cell)
    monkeypatch.setattr(models, "_fused_cell_backward", _emulated_cell_backward)
    gen = torch.Generator().manual_seed(3)
    xw = torch.randn(T, N, B, 4 * H, generator=gen, dtype=torch.float64, requires_grad=True)
    w_hh = (0.5 * torch.randn(N, 4 * H, H, generator=gen, dtype=torch.float64)).requires_grad_()
    # c0 a strided slice, as ExpertLSTMs passes it (hidden[:, layer])
    h0, c0 = (torch.randn(N, 2, B, H, generator=gen, dtype=torch.float64)[:, 1].requires_grad_() for _ in range(2))
    inputs = (xw, w_hh, h0, c0)
    for with_state in (True, False):  # without: no gradient reaches h_T and c_T, as in training
        outs = {}
        for fused in (False, True):
            out, h, c = Recurrence.apply(*inputs, fused)
            loss = (out**2).sum() + (0.3 * h.sum() + 0.1 * (c**2).sum() if with_state else 0)
            outs[fused] = [out, h, c, *torch.autograd.grad(loss, inputs)]
        for a, b in zip(outs[True], outs[False]):
            assert _rel(a, b) < 1e-13
    assert torch.autograd.gradcheck(lambda *a: Recurrence.apply(*a, True), inputs)


@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-12), (torch.float32, 1e-5)])
def test_per_expert_equals_the_autograd_path_to_rounding(dtype, tol):
    ref, per_expert = _models("per_expert", dtype, dropout=0.3)
    for train in (True, False):  # train mode: the same dropout masks (drawn outside the recurrence)
        ref.train(train), per_expert.train(train)
        z_ref, hid_ref, g_ref = _run(ref, dtype=dtype)
        z, hid, g = _run(per_expert, dtype=dtype)
        assert _rel(z, z_ref) < tol and all(_rel(a, b) < tol for a, b in zip(hid, hid_ref))
        for name in g_ref:
            assert _rel(g[name], g_ref[name]) < tol, name


def test_auto_keeps_the_old_bits_on_a_small_cpu_model():
    assert auto_recurrence("cpu", H) == "autograd" and auto_recurrence("cpu", 200) == "per_expert"
    # every mixture of the small scale (config.yaml's size_factor) keeps the step-by-step graph on a CPU
    widths = {zoo.config(m, d, lam, 0.05).nhid for m in zoo.MODELS for d in zoo.DATASETS for lam in (200, 10_000)
              if zoo.config(m, d, lam).arch == "mixture"}
    assert {auto_recurrence("cpu", w) for w in widths} == {"autograd"}
    assert auto_recurrence(torch.device("cuda", 0), H) == auto_recurrence("cuda", 200) == "unrolled"
    ref, auto = _models("auto", torch.float64, dropout=0.3)
    z_ref, hid_ref, g_ref = _run(ref)
    z, hid, g = _run(auto)
    assert torch.equal(z, z_ref) and all(torch.equal(a, b) for a, b in zip(hid, hid_ref))
    assert all(torch.equal(g[name], g_ref[name]) for name in g_ref)
    with pytest.raises(ValueError, match="recurrence must be one of"):
        ExpertLSTMs(N, V, E, H, recurrence="cudnn")
