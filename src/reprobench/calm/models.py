"""The lifelonglm models and combination rules (specs/calm.md sections 3.1-3.7 and 3.10; D5, D9, D10, D12, D13),
re-implemented from the spec. Shapes: tokens x are (T, b) (time first), logits (T, b, V); expert outputs carry a
leading expert dimension N. Everything is device-agnostic: no host synchronisation in any forward.

- `LSTMLM` (3.1): Embedding(V, E) -> dropout -> nlayers-layer nn.LSTM (dropout between layers) -> dropout ->
  Linear(H, V). Embedding and decoder weight U(-0.1, 0.1), decoder bias 0, the LSTM keeps PyTorch's default init,
  no weight tying. Construction draws from torch's global generator in the order encoder (PyTorch default, then
  overwritten), LSTM, decoder (default, then overwritten), so seeding torch fixes it.
- `ExpertLSTMs` (3.6, 3.7): N such LMs as one module with stacked parameters (leading expert dimension) and the
  recurrence written as batched matmuls over experts (torch.baddbmm per time step, PyTorch's gate order i, f, g, o and
  both bias vectors b_ih, b_hh per layer, so the parameter count is exactly N x LSTMLM's). Initialisation:
  `ExpertLSTMs(N, ...)` builds N `LSTMLM`s one after the other from torch's global generator and copies each into its
  slot, so after the same torch.manual_seed it equals `from_modules([LSTMLM(...) for _ in range(N)])`, i.e. what the
  reference's N separately created modules get, once the gate has drawn first (zoo.build makes the gate before the
  experts, as learner_factory.py L44-48 did: DEVIATIONS C25). `from_modules` / `to_modules` convert both ways. Dropout
  masks are drawn independently per expert (one F.dropout over the whole (N, ...) tensor), as N separate modules
  would. The input tokens are the same for every expert. Its recurrence (`recurrence`, one of `RECURRENCES`):
  "unrolled" is one autograd node per layer (`Recurrence`) whose backward walks the steps back with one batched matmul
  per step and forms the recurrent weights' gradient of the whole window in one matmul at the end; on CUDA each step's
  cell is one fused kernel (torch's LSTMCell kernel) both ways. "autograd" records every step's ops and sums the
  recurrent weight gradient step by step (the path before: "unrolled" has its forward bits and its gradients to
  rounding). "per_expert" runs torch's own LSTM kernel per expert (oneDNN's on a CPU). "auto" (the default) picks one
  by device and size (`auto_recurrence`).
- Combinations: `poe_logits` (PoE/Ensemble: sum_i w_i z_i of raw logits, then cross-entropy),
  `moe_loss_faithful` (HEAD MoE as coded, D10: -sum_i pi_i log p_i(y)), `moe_loss_corrected` (the mixture
  likelihood -log sum_i pi_i p_i(y)). The pre-d2d1b58 MoE variant of D10 (cross-entropy on sum_i pi_i log p_i, a
  normalised geometric mixture) is `cross_entropy(poe_logits(log_probs, pi))`.
- Gates: `FixedWeights` (Ensemble, D12), `GradientWeights` (the "+PW" plastic gate, D13), `LSTMWeights` (LSTM
  gating). Gate weights are returned with the expert dimension first: (N,) or (N, T, b).
- `MoS` (3.5): mixture of K softmaxes over the LSTM output, log(p + 1e-8) for NLLLoss.
- `n_parameters` (the closed forms of 3.10 are in `reprobench.calm.sizes`, which needs no torch).

What the models leave to the learner (not here): D5 (the logged loss is computed in train mode, dropout on: call
.train() to be faithful), D9 (PoE/Ensemble with li > 1 re-process the window from the post-window hidden state:
the learner decides which hidden state it passes in), detaching the hidden state every window (`detach_hidden`),
the per-module gradient clipping and the gate's update schedule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from reprobench.calm.zoo import GATE_EMSIZE

Hidden = tuple[Tensor, Tensor]

INIT_RANGE = 0.1  # U(-0.1, 0.1) for embeddings, decoders and the plastic gate
MOS_EPS = 1e-8  # MoS outputs log(p + 1e-8) (restored in 9e377d3)


def detach_hidden(hidden):
    """The reference's repackage_hidden: the same (nested tuples / lists of) tensors, cut from the graph."""
    if isinstance(hidden, Tensor):
        return hidden.detach()
    return type(hidden)(detach_hidden(h) for h in hidden)


def n_parameters(module: nn.Module, trainable_only: bool = False) -> int:
    """Number of scalar parameters (all of them, or only those with requires_grad)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)


@torch.no_grad()
def init_embedding_and_decoder(encoder: nn.Embedding, decoder: nn.Linear) -> None:
    """lifelonglm's init_weights: embedding and decoder weight U(-0.1, 0.1), decoder bias 0, in that draw order."""
    encoder.weight.uniform_(-INIT_RANGE, INIT_RANGE)
    decoder.bias.zero_()
    decoder.weight.uniform_(-INIT_RANGE, INIT_RANGE)


# --- the module LM (3.1) ----------------------------------------------------------------------------------------


class LSTMLM(nn.Module):
    """lifelonglm's OriginalRNNModel: forward(x (T, b), hidden) -> (logits (T, b, V), hidden), hidden = (h, c)
    each (nlayers, b, H)."""

    def __init__(self, vocab: int, emsize: int = 200, nhid: int = 200, nlayers: int = 2, dropout: float = 0.2):
        super().__init__()
        self.vocab, self.emsize, self.nhid, self.nlayers, self.dropout = vocab, emsize, nhid, nlayers, dropout
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocab, emsize)
        self.rnn = nn.LSTM(emsize, nhid, nlayers, dropout=dropout if nlayers > 1 else 0.0)
        self.decoder = nn.Linear(nhid, vocab)
        self.init_weights()

    def init_weights(self) -> None:
        init_embedding_and_decoder(self.encoder, self.decoder)

    def init_hidden(self, batch: int) -> Hidden:
        w = self.decoder.weight
        zeros = w.new_zeros(self.nlayers, batch, self.nhid)
        return zeros, zeros.clone()

    def trunk(self, x: Tensor, hidden: Hidden | None = None) -> tuple[Tensor, Hidden]:
        """The LSTM output after the output dropout, (T, b, H), and the new hidden state."""
        if hidden is None:
            hidden = self.init_hidden(x.shape[1])
        out, hidden = self.rnn(self.drop(self.encoder(x)), hidden)
        return self.drop(out), hidden

    def forward(self, x: Tensor, hidden: Hidden | None = None) -> tuple[Tensor, Hidden]:
        out, hidden = self.trunk(x, hidden)
        return self.decoder(out), hidden


# --- N experts as one batched module (3.6, 3.7) -----------------------------------------------------------------


PER_EXPERT_FROM = 100  # hidden size from which "auto" runs torch's LSTM per expert on a CPU


def auto_recurrence(device, nhid: int) -> str:
    """The recurrence ExpertLSTMs' "auto" runs on `device`. A GPU: "unrolled" (two kernels per step for all
    experts, where N per-expert cuDNN calls would launch N times as many). A CPU: "per_expert" from a hidden size
    of PER_EXPERT_FROM (torch's LSTM per expert, oneDNN's in float32, which packs the weights once per window where
    a batched matmul per step repacks them: about 2x "autograd" at N = 30, H = 200), "autograd" below it, whose one
    call per step for all experts costs less there (the crossover lay between H = 40 and 100 at N = 30 on a 2-core
    CPU) and whose bits the small scale keeps (its experts have H <= 80)."""
    if torch.device(device).type != "cpu":
        return "unrolled"
    return "per_expert" if nhid >= PER_EXPERT_FROM else "autograd"


class ExpertLSTMs(nn.Module):
    """N `LSTMLM`s with stacked parameters. forward(x (T, b), hidden) -> (logits (N, T, b, V), hidden), hidden =
    (h, c) each (N, nlayers, b, H): h[i], c[i] is expert i's LSTMLM hidden state (`stack_hidden`,
    `unstack_hidden`). Parameter i of a stacked tensor is expert i's (`parameter_name_pairs` maps the names)."""

    RECURRENCES = ("auto", "unrolled", "per_expert", "autograd")

    def __init__(self, n_experts: int, vocab: int, emsize: int = 200, nhid: int = 200, nlayers: int = 2,
                 dropout: float = 0.2, *, init: bool = True, recurrence: str = "auto"):
        super().__init__()
        if recurrence not in self.RECURRENCES:
            raise ValueError(f"recurrence must be one of {self.RECURRENCES}, not {recurrence!r}")
        self.n_experts, self.vocab, self.emsize, self.nhid, self.nlayers = n_experts, vocab, emsize, nhid, nlayers
        self.dropout, self.recurrence = dropout, recurrence
        n, g = n_experts, 4 * nhid
        self.encoder_weight = nn.Parameter(torch.empty(n, vocab, emsize))
        for layer in range(nlayers):
            inp = emsize if layer == 0 else nhid
            setattr(self, f"weight_ih_l{layer}", nn.Parameter(torch.empty(n, g, inp)))
            setattr(self, f"weight_hh_l{layer}", nn.Parameter(torch.empty(n, g, nhid)))
            setattr(self, f"bias_ih_l{layer}", nn.Parameter(torch.empty(n, g)))
            setattr(self, f"bias_hh_l{layer}", nn.Parameter(torch.empty(n, g)))
        self.decoder_weight = nn.Parameter(torch.empty(n, vocab, nhid))
        self.decoder_bias = nn.Parameter(torch.empty(n, vocab))
        if init:  # expert i gets exactly what the i-th of N LSTMLMs created in a row would get
            for i in range(n):
                self.load_expert(i, LSTMLM(vocab, emsize, nhid, nlayers, dropout))

    def parameter_name_pairs(self) -> list[tuple[str, str]]:
        """(stacked parameter name here, the matching parameter name in an LSTMLM)."""
        pairs = [("encoder_weight", "encoder.weight")]
        for layer in range(self.nlayers):
            pairs += [(f"{kind}_l{layer}", f"rnn.{kind}_l{layer}")
                      for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        return pairs + [("decoder_weight", "decoder.weight"), ("decoder_bias", "decoder.bias")]

    @torch.no_grad()
    def load_expert(self, i: int, module: LSTMLM) -> None:
        """Copy an LSTMLM's parameters into expert slot i."""
        theirs = dict(module.named_parameters())
        for mine, name in self.parameter_name_pairs():
            getattr(self, mine)[i].copy_(theirs[name])

    @classmethod
    def from_modules(cls, modules: Sequence[LSTMLM], recurrence: str = "auto") -> ExpertLSTMs:
        m = modules[0]
        shape = (m.vocab, m.emsize, m.nhid, m.nlayers)
        if any((o.vocab, o.emsize, o.nhid, o.nlayers) != shape or o.dropout != m.dropout for o in modules):
            raise ValueError("from_modules needs LSTMLMs of one shape and dropout")
        p = m.decoder.weight
        out = cls(len(modules), *shape, dropout=m.dropout, init=False, recurrence=recurrence)
        out = out.to(device=p.device, dtype=p.dtype)
        for i, module in enumerate(modules):
            out.load_expert(i, module)
        return out

    @torch.no_grad()
    def to_modules(self) -> list[LSTMLM]:
        """N independent LSTMLMs (copies) with the experts' parameters, on this module's device and dtype."""
        p = self.decoder_weight
        mods = []
        for i in range(self.n_experts):
            with torch.random.fork_rng(devices=[]):  # the throw-away init must not move torch's generator
                mod = LSTMLM(self.vocab, self.emsize, self.nhid, self.nlayers, self.dropout)
            mod = mod.to(p.device, p.dtype)
            theirs = dict(mod.named_parameters())
            for mine, name in self.parameter_name_pairs():
                theirs[name].copy_(getattr(self, mine)[i])
            mods.append(mod.train(self.training))
        return mods

    def init_hidden(self, batch: int) -> Hidden:
        zeros = self.decoder_weight.new_zeros(self.n_experts, self.nlayers, batch, self.nhid)
        return zeros, zeros.clone()

    @staticmethod
    def stack_hidden(hiddens: Sequence[Hidden]) -> Hidden:
        """Per-expert LSTMLM hidden states (each (nlayers, b, H)) -> the stacked (N, nlayers, b, H) pair."""
        return torch.stack([h for h, _ in hiddens]), torch.stack([c for _, c in hiddens])

    @staticmethod
    def unstack_hidden(hidden: Hidden) -> list[Hidden]:
        return list(zip(hidden[0].unbind(0), hidden[1].unbind(0)))

    def _layer(self, layer: int, inp: Tensor, h: Tensor, c: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """One LSTM layer over all experts: inp (N, T, b, in), h, c (N, b, H) -> out (N, T, b, H), h, c."""
        recurrence = auto_recurrence(inp.device, self.nhid) if self.recurrence == "auto" else self.recurrence
        if recurrence == "per_expert":
            return self._layer_per_expert(layer, inp, h, c)
        n, t, b, _ = inp.shape
        w_ih = getattr(self, f"weight_ih_l{layer}")
        w_hh_t = getattr(self, f"weight_hh_l{layer}").transpose(1, 2)
        bias = (getattr(self, f"bias_ih_l{layer}") + getattr(self, f"bias_hh_l{layer}")).unsqueeze(1)
        # input contributions of all time steps at once: (N, T b, 4H), then time first for contiguous steps
        xw = torch.baddbmm(bias, inp.reshape(n, t * b, -1), w_ih.transpose(1, 2))
        xw = xw.view(n, t, b, -1).transpose(0, 1).contiguous()
        if recurrence == "unrolled":
            return Recurrence.apply(xw, getattr(self, f"weight_hh_l{layer}"), h, c, xw.is_cuda)
        outs = []
        # unbind, not xw[step]: indexing's backward zero-fills a full-size gradient at every step
        for xw_step in xw.unbind(0):
            gates = torch.baddbmm(xw_step, h, w_hh_t)
            i, f, g, o = gates.chunk(4, dim=-1)  # PyTorch's gate order
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs, dim=1), h, c

    def _layer_per_expert(self, layer: int, inp: Tensor, h: Tensor, c: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """`_layer` as N calls of torch's own one-layer LSTM (what nn.LSTM runs: oneDNN's on a CPU in float32),
        one per expert on its slices of the stacked parameters (unbind: their gradients are stacked back in one op
        per parameter)."""
        weights = zip(*(getattr(self, f"{kind}_l{layer}").unbind(0)
                        for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")))
        outs, hs, cs = [], [], []
        for x, h0, c0, w in zip(inp.unbind(0), h.unbind(0), c.unbind(0), weights):
            out, h_n, c_n = torch.lstm(x, (h0.unsqueeze(0), c0.unsqueeze(0)), list(w), True, 1, 0.0, self.training,
                                       False, False)
            outs.append(out)
            hs.append(h_n[0])
            cs.append(c_n[0])
        return torch.stack(outs), torch.stack(hs), torch.stack(cs)

    def trunk(self, x: Tensor, hidden: Hidden | None = None) -> tuple[Tensor, Hidden]:
        """The experts' LSTM outputs after the output dropout, (N, T, b, H), and the new hidden state."""
        n, v = self.n_experts, self.vocab
        if hidden is None:
            hidden = self.init_hidden(x.shape[1])
        # expert i looks token x up in its own table: rows i V + x of the (N V, E) stacked table
        offsets = torch.arange(n, device=x.device).mul_(v).view(n, 1, 1)
        out = F.embedding(x.unsqueeze(0) + offsets, self.encoder_weight.reshape(n * v, self.emsize))
        out = F.dropout(out, self.dropout, self.training)  # independent masks per expert
        h0, c0 = hidden
        hs, cs = [], []
        for layer in range(self.nlayers):
            if layer > 0:
                out = F.dropout(out, self.dropout, self.training)  # nn.LSTM's dropout between layers
            out, h, c = self._layer(layer, out, h0[:, layer], c0[:, layer])
            hs.append(h)
            cs.append(c)
        return F.dropout(out, self.dropout, self.training), (torch.stack(hs, 1), torch.stack(cs, 1))

    def forward(self, x: Tensor, hidden: Hidden | None = None) -> tuple[Tensor, Hidden]:
        out, hidden = self.trunk(x, hidden)
        n, t, b, h = out.shape
        logits = torch.baddbmm(self.decoder_bias.unsqueeze(1), out.reshape(n, t * b, h),
                               self.decoder_weight.transpose(1, 2))
        return logits.view(n, t, b, self.vocab), hidden


class Recurrence(torch.autograd.Function):
    """One LSTM layer's recurrence over a window for all experts, as one autograd node: apply(xw (T, N, b, 4H), the
    input contributions with both biases; w_hh (N, 4H, H); h0, c0 (N, b, H); fused) -> (out (N, T, b, H), h_T, c_T).

    Forward, per step: gates = xw_t + h w_hh^T (one batched matmul for all experts), then the cell (PyTorch's gate
    order i, f, g, o). Backward, per step from the last: the cell's backward, then dh_{t-1} = dgates_t w_hh (one
    batched matmul); after the loop the recurrent weight gradient of the whole window is one batched matmul,
    sum_t dgates_t^T h_{t-1} over T b rows, where autograd's step-by-step graph sums T matmuls of b rows each (the
    "autograd" recurrence). On the CPU the cell is torch's elementwise ops as `ExpertLSTMs._layer` writes them (the
    same forward bits) and its backward the ops autograd would run on them, in autograd's order (so only the
    weight gradient's summation order differs); with `fused` (on CUDA) it is torch's fused LSTMCell kernel in both
    directions (`_fused_cell`), which takes the (N b, 4H) rows of all experts at once."""

    @staticmethod
    def forward(ctx, xw: Tensor, w_hh: Tensor, h0: Tensor, c0: Tensor, fused: bool):
        n, b, hid = h0.shape
        w_t = w_hh.transpose(1, 2)
        h, c = h0, c0
        hs, cs, saved = [], [c0], []
        for x in xw.unbind(0):
            if fused:  # rows of the fused kernel: (N b, 4H) gates, (N b, H) cell
                h, c, workspace = _fused_cell(x.view(n * b, -1), torch.bmm(h, w_t).view(n * b, -1),
                                              c.reshape(n * b, hid))
                h, c = h.view(n, b, hid), c.view(n, b, hid)
                saved.append(workspace)  # the activated gates
            else:
                gates = torch.baddbmm(x, h, w_t)
                i, f, g, o = gates.chunk(4, dim=-1)
                si, sf, tg, so = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
                c = sf * c + si * tg
                tc = torch.tanh(c)
                h = so * tc
                saved += [si, sf, tg, so, tc]
            hs.append(h)
            cs.append(c)
        ctx.save_for_backward(w_hh, h0, *hs, *cs, *saved)
        ctx.set_materialize_grads(False)
        ctx.steps, ctx.fused = len(hs), fused
        return torch.stack(hs, dim=1), h, c

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, d_out, d_h, d_c):
        steps, fused = ctx.steps, ctx.fused
        w_hh, h0, *rest = ctx.saved_tensors
        hs, cs, saved = rest[:steps], rest[steps:2 * steps + 1], rest[2 * steps + 1:]
        n, b, hid = h0.shape
        d_gates = [None] * steps
        for t in reversed(range(steps)):
            # what reaches h_t: the output at t, and the next step (or the returned h_T); c_t: the same
            d_h = _add(None if d_out is None else d_out[:, t], d_h)
            if fused:
                dg, d_c = _fused_cell_backward(None if d_h is None else d_h.reshape(n * b, hid),
                                               None if d_c is None else d_c.reshape(n * b, hid),
                                               cs[t].reshape(n * b, hid), cs[t + 1].reshape(n * b, hid), saved[t])
                dg, d_c = dg.view(n, b, -1), d_c.view(n, b, hid)
            else:
                dg, d_c = _cell_backward(d_h, d_c, cs[t], *saved[5 * t:5 * t + 5])
            d_gates[t] = dg
            d_h = torch.bmm(dg, w_hh) if t > 0 or ctx.needs_input_grad[2] else None
        d_gates = torch.stack(d_gates, dim=1)  # (N, T, b, 4H)
        d_w = None
        if ctx.needs_input_grad[1]:  # the whole window's recurrent weight gradient in one matmul over T b rows
            h_prev = torch.stack([h0, *hs[:-1]], dim=1).view(n, steps * b, hid)
            d_w = torch.bmm(d_gates.view(n, steps * b, -1).transpose(1, 2), h_prev)
        return d_gates.transpose(0, 1), d_w, d_h, d_c if ctx.needs_input_grad[3] else None, None


def _fused_cell(input_gates: Tensor, hidden_gates: Tensor, cx: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """torch's CUDA LSTMCell kernel on rows ((B, 4H) gates in the order i, f, g, o, (B, H) cell): one kernel for
    gates = input_gates + hidden_gates, the activations, c' and h'; -> (h', c', workspace: the activated gates)."""
    return torch.ops.aten._thnn_fused_lstm_cell(input_gates, hidden_gates, cx)


def _fused_cell_backward(d_hy, d_cy, cx: Tensor, cy: Tensor, workspace: Tensor) -> tuple[Tensor, Tensor]:
    """Its backward, one kernel: (d gates (B, 4H), d cx); d_hy or d_cy may be None."""
    d_gates, d_cx, _ = torch.ops.aten._thnn_fused_lstm_cell_backward_impl(d_hy, d_cy, cx, cy, workspace, False)
    return d_gates, d_cx


def _add(a: Tensor | None, b: Tensor | None) -> Tensor | None:
    return b if a is None else a if b is None else a + b


def _cell_backward(d_h, d_c, c_prev, si, sf, tg, so, tc):
    """The gradients autograd computes through `Recurrence`'s CPU cell (c = sf c_prev + si tg, h = so tanh(c)), op
    for op: (d gates (N, b, 4H), d c_prev). d_h and d_c (the gradient reaching c_t from the next step) may be None."""
    if d_h is None:  # only the cell state's gradient reaches this step
        d_h = torch.zeros_like(tc)
    d_so, d_tc = d_h * tc, d_h * so
    d_c = _add(torch.ops.aten.tanh_backward(d_tc, tc), d_c)
    aten = torch.ops.aten
    d_gates = torch.cat([aten.sigmoid_backward(d_c * tg, si), aten.sigmoid_backward(d_c * c_prev, sf),
                         aten.tanh_backward(d_c * si, tg), aten.sigmoid_backward(d_so, so)], -1)
    return d_gates, d_c * sf


# --- combinations (3.6, 3.7, D10) -------------------------------------------------------------------------------


def expand_weights(w: Tensor, like: Tensor) -> Tensor:
    """Gate weights (N,) or (N, T, b) -> broadcastable against expert outputs (N, T, b, V)."""
    return w.reshape(w.shape + (1,) * (like.dim() - w.dim()))


def poe_logits(z: Tensor, w: Tensor) -> Tensor:
    """PoE/Ensemble combination as coded: sum_i w_i z_i of the experts' raw logits z (N, T, b, V) with weights w
    (N,) or per token and stream (N, T, b); feed the result to cross-entropy. p(y) is proportional to
    prod_i p_i(y)^{w_i}. Weights may be negative (unnormalised plastic gate)."""
    if w.dim() == 1:  # one weight per expert: a matrix-vector product, without an (N, T, b, V) temporary
        return torch.tensordot(w, z, dims=1)
    return torch.einsum("ntb,ntbv->tbv", w, z)


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"reduction must be mean, sum or none, not {reduction!r}")


def _target_log_probs(log_probs: Tensor, targets: Tensor) -> Tensor:
    """log p_i(y) for every expert: (N, T, b, V), targets (T, b) -> (N, T, b)."""
    index = targets.unsqueeze(0).unsqueeze(-1).expand(log_probs.shape[0], *targets.shape, 1)
    return log_probs.gather(-1, index).squeeze(-1)


def moe_loss_faithful(log_probs: Tensor, pi: Tensor, targets: Tensor, reduction: str = "mean") -> Tensor:
    """HEAD MoE as coded (D10): NLLLoss on sum_i pi_i log p_i, i.e. -sum_i pi_i log p_i(y) per token.
    log_probs (N, T, b, V) are the experts' log-softmaxes, pi (N,) or (N, T, b) the (softmax) gate weights,
    targets (T, b). An upper bound on the mixture NLL (Jensen) when pi sums to 1."""
    return _reduce(-(expand_weights(pi, targets.unsqueeze(0)) * _target_log_probs(log_probs, targets)).sum(0),
                   reduction)


def moe_loss_corrected(log_probs: Tensor, pi: Tensor | None, targets: Tensor, reduction: str = "mean", *,
                       log_pi: Tensor | None = None) -> Tensor:
    """The mixture likelihood -log sum_i pi_i p_i(y) per token, via logsumexp over experts. Pass log_pi (e.g. a
    log_softmax) instead of pi to stay finite when a weight underflows to 0."""
    if log_pi is None:
        if pi is None:
            raise ValueError("give pi or log_pi")
        log_pi = torch.log(pi)
    log_pi = expand_weights(log_pi, targets.unsqueeze(0))
    return _reduce(-torch.logsumexp(log_pi + _target_log_probs(log_probs, targets), dim=0), reduction)


# --- gates (3.6, D12, D13) --------------------------------------------------------------------------------------


class FixedWeights(nn.Module):
    """Ensemble (D12): fixed, never trained weights, w_i = 1 ("one": the ACL-era code, which the Ensemble command
    lines ran, so the faithful default) or 1/N ("mean": since d2d1b58, and HEAD's MoE warm-up). forward() -> (N,).
    A buffer, not a parameter."""

    def __init__(self, n: int, ensemble_weights: Literal["one", "mean"] = "one"):
        super().__init__()
        if ensemble_weights not in ("one", "mean"):
            raise ValueError(f"ensemble_weights must be 'one' or 'mean', not {ensemble_weights!r}")
        self.ensemble_weights = ensemble_weights
        self.register_buffer("weights", torch.full((n,), 1.0 if ensemble_weights == "one" else 1.0 / n))

    def forward(self) -> Tensor:
        return self.weights


class GradientWeights(nn.Module):
    """The "+PW" plastic gate (D13): one input-independent scalar per expert, an nn.Parameter of size N, init
    U(-0.1, 0.1), used for every token and stream. forward() -> (N,): raw for PoE (may go negative), softmax
    when normalize (MoE, or PoE with --weight-normalization). Training it (k Adam steps per batch on detached
    expert outputs, never reset) is the learner's job."""

    def __init__(self, n: int, normalize: bool = False):
        super().__init__()
        self.normalize = normalize
        self.weights = nn.Parameter(torch.empty(n))
        self.reset_weights()

    @torch.no_grad()
    def reset_weights(self) -> None:
        self.weights.uniform_(-INIT_RANGE, INIT_RANGE)

    def forward(self) -> Tensor:
        return torch.softmax(self.weights, 0) if self.normalize else self.weights

    def log_weights(self) -> Tensor:
        """log of the softmax weights (for moe_loss_corrected's log_pi)."""
        return torch.log_softmax(self.weights, 0)


class LSTMWeights(nn.Module):
    """LSTM gating: Embedding(V, 100) -> 1-layer LSTM(100, g) -> Linear(g, N), per-token, per-stream weights.
    forward(x (T, b), hidden) -> (weights (N, T, b), hidden), softmax over experts when normalize.

    The reference zeroes the LSTM biases and the decoder bias before every forward, so they never act: here they
    are zero and frozen (requires_grad False), which computes the same and keeps the parameter count of spec 3.10
    (100 V + 4 g (100 + g) + 8 g + (g + 1) N + N). The trailing N is the size-N weight vector every reference
    gate inherits from its base class; the LSTM gate does not use it (our reading of the count): kept, frozen,
    as `unused_weights`. One difference: in the reference those biases still receive gradients before being
    zeroed again, which would count in a gradient-norm clip over the gate's parameters (the spec names no clip for
    the gate). Embedding and decoder weight U(-0.1, 0.1), LSTM weights PyTorch's default."""

    def __init__(self, vocab: int, n: int, nhid: int, normalize: bool = False, emsize: int = GATE_EMSIZE):
        super().__init__()
        self.n, self.nhid, self.normalize = n, nhid, normalize
        self.encoder = nn.Embedding(vocab, emsize)
        self.rnn = nn.LSTM(emsize, nhid, 1)
        self.decoder = nn.Linear(nhid, n)
        self.unused_weights = nn.Parameter(torch.zeros(n), requires_grad=False)
        with torch.no_grad():
            self.encoder.weight.uniform_(-INIT_RANGE, INIT_RANGE)
            self.decoder.weight.uniform_(-INIT_RANGE, INIT_RANGE)
            for bias in (self.rnn.bias_ih_l0, self.rnn.bias_hh_l0, self.decoder.bias):
                bias.zero_()
                bias.requires_grad_(False)

    def init_hidden(self, batch: int) -> Hidden:
        zeros = self.decoder.weight.new_zeros(1, batch, self.nhid)
        return zeros, zeros.clone()

    def forward(self, x: Tensor, hidden: Hidden | None = None) -> tuple[Tensor, Hidden]:
        if hidden is None:
            hidden = self.init_hidden(x.shape[1])
        out, hidden = self.rnn(self.encoder(x), hidden)
        w = self.decoder(out).permute(2, 0, 1)  # (N, T, b)
        return (torch.softmax(w, 0) if self.normalize else w), hidden


# --- mixture of softmaxes (3.5) ---------------------------------------------------------------------------------


class MoS(LSTMLM):
    """lifelonglm's MoSRNNModel: the LSTMLM trunk (output with dropout) h, prior pi = softmax(W_p h) (no bias),
    latent = dropout(tanh(Linear(H, K H)(h))), a shared decoder Linear(H, V) per latent slice,
    p = sum_k pi_k softmax(decoder(latent_k)). forward(x, hidden) -> (log(p + 1e-8) (T, b, V), hidden) for
    NLLLoss. One dropout rate everywhere. Built as the reference (model.py L184-210): encoder, prior, latent, LSTM,
    decoder, each with PyTorch's default init from torch's global generator, in that order (so also the parameter
    order), then the embedding and decoder weight redrawn U(-0.1, 0.1) and the decoder bias zeroed."""

    def __init__(self, vocab: int, emsize: int = 200, nhid: int = 200, n_components: int = 1, dropout: float = 0.2,
                 nlayers: int = 2):
        nn.Module.__init__(self)  # LSTMLM's attributes, drawn in MoSRNNModel's order
        self.vocab, self.emsize, self.nhid, self.nlayers, self.dropout = vocab, emsize, nhid, nlayers, dropout
        self.n_components = n_components
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocab, emsize)
        self.prior = nn.Linear(nhid, n_components, bias=False)
        self.latent = nn.Linear(nhid, n_components * nhid)
        self.rnn = nn.LSTM(emsize, nhid, nlayers, dropout=dropout if nlayers > 1 else 0.0)
        self.decoder = nn.Linear(nhid, vocab)  # shared by the K softmaxes
        self.init_weights()

    def forward(self, x: Tensor, hidden: Hidden | None = None) -> tuple[Tensor, Hidden]:
        h, hidden = self.trunk(x, hidden)
        t, b, _ = h.shape
        pi = torch.softmax(self.prior(h), -1)  # (T, b, K)
        latent = self.drop(torch.tanh(self.latent(h))).view(t, b, self.n_components, self.nhid)
        probs = torch.softmax(self.decoder(latent), -1)  # (T, b, K, V)
        p = (pi.unsqueeze(-1) * probs).sum(2)
        return torch.log(p + MOS_EPS), hidden
