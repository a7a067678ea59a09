"""ESN weight statistics against specs/wade.md 3.2."""

import numpy as np
import torch

from reprobench.wade.esn import EchoStateNetwork


def test_weight_statistics():
    esn = EchoStateNetwork(16, torch.Generator().manual_seed(0), dtype=torch.float64)
    nonzero = (esn.w_hh != 0).sum(1).double()
    assert abs(nonzero.mean().item() - 10) < 0.3  # about 10 non-zeros per row
    assert esn.w_hh.abs().max() <= 1 and esn.w_ih.abs().max() <= 1 and esn.w_ih.abs().min() > 0
    assert abs(esn.w_ih.mean().item()) < 0.02 and abs(esn.w_ih.var().item() - 1 / 3) < 0.01  # dense U(-1, 1)
    assert esn.bias.abs().max() <= 2 / np.sqrt(1800)
    radius = np.abs(np.linalg.eigvals(esn.w_hh.numpy())).max()
    assert 1.75 < radius < 1.95  # no rescaling: about 1.85 (the spec's three draws: 1.843-1.866)


def test_features_follow_the_tanh_update_from_zero():
    esn = EchoStateNetwork(4, torch.Generator().manual_seed(1), units=50, nonzero_per_row=5, dtype=torch.float64)
    tokens = torch.tensor([[1, 3, 0]])
    f = esn.features(tokens)
    h = torch.zeros(50, dtype=torch.float64)
    for t, tok in enumerate(tokens[0]):
        x = torch.zeros(4, dtype=torch.float64)
        x[tok] = 1
        h = torch.tanh(esn.w_ih @ x + esn.bias + esn.w_hh @ h)
        assert torch.allclose(f[0, t], h)
