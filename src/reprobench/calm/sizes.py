"""The closed forms of the CALM models' parameter counts (specs/calm.md 3.10), without torch: the render and compare
stages (Appendix E's Table 2) count the paper's sizes without importing it."""

from __future__ import annotations

from reprobench.calm.zoo import GATE_EMSIZE


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
