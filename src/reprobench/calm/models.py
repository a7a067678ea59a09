"""The lifelonglm models and combination rules (specs/calm.md sections 3.1-3.7 and 3.10; D5, D9, D10, D12, D13),
re-implemented from the spec. Shapes: tokens x are (T, b) (time first), logits (T, b, V); expert outputs carry a
leading expert dimension N. Everything is device-agnostic: no host synchronisation in any forward.

- `LSTMLM` (3.1): Embedding(V, E) -> dropout -> nlayers-layer nn.LSTM (dropout between layers) -> dropout ->
  Linear(H, V). Embedding and decoder weight U(-0.1, 0.1), decoder bias 0, the LSTM keeps PyTorch's default init,
  no weight tying. Construction draws from torch's global generator in the order encoder (PyTorch default, then
  overwritten), LSTM, decoder (default, then overwritten), so seeding torch fixes it.
- `ExpertLSTMs` (3.6, 3.7): N such LMs as one module with stacked parameters (leading expert dimension) and the
  recurrence written as batched matmuls over experts (torch.baddbmm per time step, PyTorch's gate order i, f, g, o
  and both bias vectors b_ih, b_hh per layer, so the parameter count is exactly N x LSTMLM's). Initialisation:
  `ExpertLSTMs(N, ...)` builds N `LSTMLM`s one after the other from torch's global generator and copies each into
  its slot, so after the same torch.manual_seed it equals `from_modules([LSTMLM(...) for _ in range(N)])`, i.e.
  what the reference's N separately created modules get. `from_modules` / `to_modules` convert both ways. Dropout
  masks are drawn independently per expert (one F.dropout over the whole (N, ...) tensor), as N separate modules
  would. The input tokens are the same for every expert.
- Combinations: `poe_logits` (PoE/Ensemble: sum_i w_i z_i of raw logits, then cross-entropy),
  `moe_loss_faithful` (HEAD MoE as coded, D10: -sum_i pi_i log p_i(y)), `moe_loss_corrected` (the mixture
  likelihood -log sum_i pi_i p_i(y)). The pre-d2d1b58 MoE variant of D10 (cross-entropy on sum_i pi_i log p_i, a
  normalised geometric mixture) is `cross_entropy(poe_logits(log_probs, pi))`.
- Gates: `FixedWeights` (Ensemble, D12), `GradientWeights` (the "+PW" plastic gate, D13), `LSTMWeights` (LSTM
  gating). Gate weights are returned with the expert dimension first: (N,) or (N, T, b).
- `MoS` (3.5): mixture of K softmaxes over the LSTM output, log(p + 1e-8) for NLLLoss.
- `n_parameters` and the closed forms of 3.10.

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

Hidden = tuple[Tensor, Tensor]

INIT_RANGE = 0.1  # U(-0.1, 0.1) for embeddings, decoders and the plastic gate
MOS_EPS = 1e-8  # MoS outputs log(p + 1e-8) (restored in 9e377d3)
GATE_EMSIZE = 100  # the LSTM gate's embedding size


def detach_hidden(hidden):
    """The reference's repackage_hidden: the same (nested tuples / lists of) tensors, cut from the graph."""
    if isinstance(hidden, Tensor):
        return hidden.detach()
    return type(hidden)(detach_hidden(h) for h in hidden)


def n_parameters(module: nn.Module, trainable_only: bool = False) -> int:
    """Number of scalar parameters (all of them, or only those with requires_grad)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)


# --- closed forms (spec 3.10) -----------------------------------------------------------------------------------


def lstm_lm_n_parameters(vocab: int, nhid: int, emsize: int = 200, nlayers: int = 2) -> int:
    """Embedding E V + per layer 4H (in + H) + 8H (two bias vectors) + decoder (H + 1) V. With E = 200 and two
    layers: (H + 201) V + 12 H^2 + 816 H (spec 3.10)."""
    lstm = sum(4 * nhid * ((emsize if layer == 0 else nhid) + nhid) + 8 * nhid for layer in range(nlayers))
    return emsize * vocab + lstm + (nhid + 1) * vocab


def mos_n_parameters(vocab: int, nhid: int, n_components: int, emsize: int = 200, nlayers: int = 2) -> int:
    """The LSTM LM plus the prior K H (no bias) and the latent layer K H^2 + K H: adds K H^2 + 2 K H."""
    k = n_components
    return lstm_lm_n_parameters(vocab, nhid, emsize, nlayers) + k * nhid * nhid + 2 * k * nhid


def lstm_gate_n_parameters(vocab: int, n_experts: int, nhid: int, emsize: int = GATE_EMSIZE) -> int:
    """100 V + 4 g (100 + g) + 8 g + (g + 1) N + N (spec 3.10): the biases (zero, frozen) and the reference's
    unused base-class weight vector of size N included."""
    g, n = nhid, n_experts
    return emsize * vocab + 4 * g * (emsize + g) + 8 * g + (g + 1) * n + n


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


class ExpertLSTMs(nn.Module):
    """N `LSTMLM`s with stacked parameters. forward(x (T, b), hidden) -> (logits (N, T, b, V), hidden), hidden =
    (h, c) each (N, nlayers, b, H): h[i], c[i] is expert i's LSTMLM hidden state (`stack_hidden`,
    `unstack_hidden`). Parameter i of a stacked tensor is expert i's (`parameter_name_pairs` maps the names)."""

    def __init__(self, n_experts: int, vocab: int, emsize: int = 200, nhid: int = 200, nlayers: int = 2,
                 dropout: float = 0.2, *, init: bool = True):
        super().__init__()
        self.n_experts, self.vocab, self.emsize, self.nhid, self.nlayers = n_experts, vocab, emsize, nhid, nlayers
        self.dropout = dropout
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
    def from_modules(cls, modules: Sequence[LSTMLM]) -> ExpertLSTMs:
        m = modules[0]
        shape = (m.vocab, m.emsize, m.nhid, m.nlayers)
        if any((o.vocab, o.emsize, o.nhid, o.nlayers) != shape or o.dropout != m.dropout for o in modules):
            raise ValueError("from_modules needs LSTMLMs of one shape and dropout")
        p = m.decoder.weight
        out = cls(len(modules), *shape, dropout=m.dropout, init=False).to(device=p.device, dtype=p.dtype)
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
        n, t, b, _ = inp.shape
        w_ih = getattr(self, f"weight_ih_l{layer}")
        w_hh_t = getattr(self, f"weight_hh_l{layer}").transpose(1, 2)
        bias = (getattr(self, f"bias_ih_l{layer}") + getattr(self, f"bias_hh_l{layer}")).unsqueeze(1)
        # input contributions of all time steps at once: (N, T b, 4H), then time first for contiguous steps
        xw = torch.baddbmm(bias, inp.reshape(n, t * b, -1), w_ih.transpose(1, 2))
        xw = xw.view(n, t, b, -1).transpose(0, 1).contiguous()
        outs = []
        # unbind, not xw[step]: indexing's backward zero-fills a full-size gradient at every step
        for xw_step in xw.unbind(0):
            gates = torch.baddbmm(xw_step, h, w_hh_t)
            i, f, g, o = gates.chunk(4, dim=-1)  # PyTorch's gate order
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs, dim=1), h, c

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


class MoS(nn.Module):
    """lifelonglm's MoSRNNModel: the LSTMLM trunk (output with dropout) h, prior pi = softmax(W_p h) (no bias),
    latent = dropout(tanh(Linear(H, K H)(h))), a shared decoder Linear(H, V) per latent slice,
    p = sum_k pi_k softmax(decoder(latent_k)). forward(x, hidden) -> (log(p + 1e-8) (T, b, V), hidden) for
    NLLLoss. One dropout rate everywhere. Embedding and decoder weight U(-0.1, 0.1), decoder bias 0; the prior and
    latent layers keep PyTorch's default init (the spec names none)."""

    def __init__(self, vocab: int, emsize: int = 200, nhid: int = 200, n_components: int = 1, dropout: float = 0.2,
                 nlayers: int = 2):
        super().__init__()
        self.vocab, self.nhid, self.n_components, self.nlayers = vocab, nhid, n_components, nlayers
        self.lm = LSTMLM(vocab, emsize, nhid, nlayers, dropout)  # its decoder is the shared one
        self.prior = nn.Linear(nhid, n_components, bias=False)
        self.latent = nn.Linear(nhid, n_components * nhid)

    def init_hidden(self, batch: int) -> Hidden:
        return self.lm.init_hidden(batch)

    def forward(self, x: Tensor, hidden: Hidden | None = None) -> tuple[Tensor, Hidden]:
        h, hidden = self.lm.trunk(x, hidden)
        t, b, _ = h.shape
        pi = torch.softmax(self.prior(h), -1)  # (T, b, K)
        latent = self.lm.drop(torch.tanh(self.latent(h))).view(t, b, self.n_components, self.nhid)
        probs = torch.softmax(self.lm.decoder(latent), -1)  # (T, b, K, V)
        p = (pi.unsqueeze(-1) * probs).sum(2)
        return torch.log(p + MOS_EPS), hidden
