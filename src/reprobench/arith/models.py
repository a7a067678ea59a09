"""NAC+, NAC*, NALU and Linear (specs/arith.md, section 2), batched over seeds.

Every parameter has a leading seed dimension, and no operation mixes seeds, so the batched model is
mathematically the same as one model per seed: the summed loss gives each seed its own gradient and
Adam is elementwise. Each seed is initialised from its own CPU generator, so its start does not
depend on the device or on the other seeds in the batch.
"""

from __future__ import annotations

import math
from functools import cache

import torch
from scipy import optimize
from torch import nn

from reprobench.core.seeding import torch_generator

EPS = 1e-7  # inside log(|z| + eps), in the NAC* wrapper and in NALU

# Model (the slug used in paths and configs; paper.MODELS) -> (layer 1, layer 2)
LAYERS = {
    "nac_add": ("nac", "nac"),
    "nac_mul": ("nac", "nac_mul"),
    "nalu": ("nalu", "nalu"),
    "linear": ("linear", "linear"),
}


def nac_variance(r: float) -> float:
    """Var(tanh(w) sigmoid(m)) for w, m ~ U[-r, r] i.i.d. (the reference's closed form)."""
    return (1 - math.tanh(r) / r) * (r - math.tanh(r / 2)) / (2 * r)


@cache
def nac_init_radius(fan_in: int, fan_out: int) -> float:
    """r such that max(fan_in + fan_out, 5) * Var(W) = 2, i.e. Glorot's variance for W = tanh(W^) sig(M^)."""
    fan = max(fan_in + fan_out, 5)
    return optimize.brentq(lambda r: fan * nac_variance(r) - 2, 1e-6, 10, xtol=1e-12)


def _uniform(shape, bound, generator):
    """U[-bound, bound], drawn in float64 (cast by the network to its dtype)."""
    return (torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1).mul_(bound)


class _DataMatmul(torch.autograd.Function):
    """bmm(x, w^T) for an input x without gradient (the batch): the weight gradient as g^T x, (seeds, out, in),
    which MKL computes about twice as fast as autograd's (x^T g)^T and to the same bits (the reference test)."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x)
        return torch.bmm(x, w.transpose(1, 2))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return None, torch.bmm(grad.transpose(1, 2), x)


def _matmul(x, w):
    """x (seeds, batch, in) or shared (batch, in), w (seeds, out, in) -> (seeds, batch, out).

    Always bmm: its result for one seed is bit-identical whatever the number of seeds (einsum's is not),
    so a seed's curve does not depend on which seeds share its batch. A shared x is a stride-0 view, not a copy
    per seed (same bits; tests/test_arith_reference.py)."""
    if x.dim() == 2:
        x = x.expand(w.shape[0], *x.shape)
    if w.requires_grad and not x.requires_grad and torch.is_grad_enabled():
        return _DataMatmul.apply(x, w)
    return torch.bmm(x, w.transpose(1, 2))


def _padded(blocks, shape):
    """Stack per-seed arrays of (out, in) sizes up to `shape`, zero-filled beyond each seed's own size."""
    out = torch.zeros(len(blocks), *shape, dtype=torch.float64)
    for i, block in enumerate(blocks):
        out[i, :block.shape[0], :block.shape[1]] = block
    return out


class Layer(nn.Module):
    """One layer of `kind` for every seed; the tensors hold seeds along dimension 0.

    `fan_ins`/`fan_outs` give each seed's own size; a seed smaller than the largest is initialised at its own size
    (the same draws as alone) and zero-padded, and a 0/1 `mask` buffer keeps its padding out of the model: the
    masked effective weights (and NALU gate weights) are exactly zero, so padded units add exact zeros and get zero
    gradients. Its outputs equal the unpadded seed's up to the summation order of a longer matrix product."""

    def __init__(self, kind: str, fan_ins: list[int], fan_outs: list[int], seeds_generators: list):
        super().__init__()
        self.kind = kind
        shape = (max(fan_outs), max(fan_ins))
        shapes = list(zip(fan_outs, fan_ins))
        if len(set(shapes)) > 1:
            mask = torch.zeros(len(shapes), *shape, dtype=torch.float64)
            for i, (o, n) in enumerate(shapes):
                mask[i, :o, :n] = 1
            self.register_buffer("mask", mask)
        else:
            self.mask = None
        if kind in ("nac", "nac_mul", "nalu"):
            w_hat, m_hat, g = [], [], []
            for gen, (fan_out, fan_in) in zip(seeds_generators, shapes):  # per-seed order: W^, M^, (G)
                r = nac_init_radius(fan_in, fan_out)
                w_hat.append(_uniform((fan_out, fan_in), r, gen))
                m_hat.append(_uniform((fan_out, fan_in), r, gen))
                if kind == "nalu":  # xavier_uniform with gain calculate_gain('sigmoid') = 1
                    g.append(_uniform((fan_out, fan_in), math.sqrt(6 / (fan_in + fan_out)), gen))
            self.w_hat = nn.Parameter(_padded(w_hat, shape))
            self.m_hat = nn.Parameter(_padded(m_hat, shape))
            if kind == "nalu":
                self.gate = nn.Parameter(_padded(g, shape))
        elif kind == "linear":  # xavier_uniform, gain 1; bias starts at zero
            self.weight = nn.Parameter(_padded([_uniform((o, n), math.sqrt(6 / (n + o)), gen)
                                                for gen, (o, n) in zip(seeds_generators, shapes)], shape))
            self.bias = nn.Parameter(torch.zeros(len(seeds_generators), shape[0], dtype=torch.float64))
        else:
            raise ValueError(f"unknown layer kind '{kind}'")

    def _param(self, name: str, members):
        """A parameter of every seed, or of the seeds indexed by `members` (evaluation of a subset)."""
        p = getattr(self, name)
        return p if members is None else p[members]

    def _masked(self, w, members):
        if self.mask is None:
            return w
        return w * (self.mask if members is None else self.mask[members])

    def effective_weight(self, members=None):
        """The weight matrix whose sparsity error is logged: W = tanh(W^) sig(M^), or the linear W."""
        if self.kind == "linear":
            return self._masked(self._param("weight", members), members)
        w = torch.tanh(self._param("w_hat", members)) * torch.sigmoid(self._param("m_hat", members))
        return self._masked(w, members)

    def needs_log(self) -> bool:
        return self.kind in ("nac_mul", "nalu")

    def forward(self, x, log_x=None, members=None):
        """`log_x`, if given, is log(|x| + EPS), computed by the caller (the training stream makes it in place);
        `members` (an index tensor) evaluates only those seeds."""
        w = self.effective_weight(members)
        if self.kind == "linear":
            return _matmul(x, w) + self._param("bias", members)[:, None, :]
        if self.kind == "nac":
            return _matmul(x, w)
        if log_x is None:
            log_x = torch.log(torch.abs(x) + EPS)
        if self.kind == "nac_mul":
            return torch.exp(_matmul(log_x, w))
        # input-dependent gate, no bias
        gate = torch.sigmoid(_matmul(x, self._masked(self._param("gate", members), members)))
        add = _matmul(x, w)
        mul = torch.exp(_matmul(log_x, w))  # same W as the additive path
        return gate * add + (1 - gate) * mul


class BatchedNetwork(nn.Module):
    """input -> layer 1 -> hidden -> layer 2 -> 1, for every seed at once.

    `input_size` and `hidden_size` are one size for every seed, or lists with each seed's own (padded to the largest,
    see Layer)."""

    def __init__(self, model: str, input_size, hidden_size, seeds: list[int], dtype=torch.float32):
        super().__init__()
        if model not in LAYERS:
            raise ValueError(f"unknown model '{model}' (known: {', '.join(LAYERS)})")
        kind1, kind2 = LAYERS[model]
        inputs, hidden = ([size] * len(seeds) if isinstance(size, int) else list(size)
                          for size in (input_size, hidden_size))
        generators = [torch_generator(s) for s in seeds]
        self.layer1 = Layer(kind1, inputs, hidden, generators)
        self.layer2 = Layer(kind2, hidden, [1] * len(seeds), generators)
        self.to(dtype)

    def forward(self, x, log_x=None, members=None):
        """x: (seeds, batch, input) or a shared (batch, input), log_x optionally its log(|x| + EPS); returns
        (seeds, batch). `members` (an index tensor) evaluates only those seeds (the same function; the last bits
        may differ, as with any other batch around a seed)."""
        return self.layer2(self.layer1(x, log_x, members), None, members)[..., 0]

    @torch.no_grad()
    def sparsity_error(self):
        """(seeds,) max over layers of max_i min(|W_i|, |1 - |W_i||); NALU gates and biases excluded."""
        errors = []
        for layer in (self.layer1, self.layer2):
            w = layer.effective_weight().abs()
            errors.append(torch.minimum(w, (1 - w).abs()).flatten(1).amax(1))
        return torch.stack(errors).amax(0)
