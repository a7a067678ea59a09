"""Models and initialisation against specs/arith.md, section 2."""

import math

import pytest
import torch

from reprobench.arith import models


@pytest.mark.parametrize("fan_in, fan_out, r", [(100, 2, 0.5039), (2, 1, 9.4714), (100, 10, 0.4839),
                                                (300, 2, 0.2855), (10, 1, 2.2605)])
def test_nac_init_radius(fan_in, fan_out, r):
    assert models.nac_init_radius(fan_in, fan_out) == pytest.approx(r, abs=5e-5)


def test_nac_weight_variance_matches_glorot():
    net = models.BatchedNetwork("nac_add", 100, 2, list(range(200)))
    w = net.layer1.effective_weight().detach().double()
    assert w.var().item() == pytest.approx(2 / 102, rel=0.05)
    radius = models.nac_init_radius(100, 2)
    assert net.layer1.w_hat.abs().max().item() <= radius


def test_nalu_gate_and_linear_init_bounds():
    net = models.BatchedNetwork("nalu", 100, 2, [0, 1, 2])
    assert net.layer1.gate.abs().max().item() <= math.sqrt(6 / 102)
    assert net.layer1.gate.abs().max().item() > 0.9 * math.sqrt(6 / 102)
    lin = models.BatchedNetwork("linear", 100, 2, [0])
    assert torch.count_nonzero(lin.layer1.bias) == 0


def test_each_seed_starts_the_same_whatever_the_batch():
    both = models.BatchedNetwork("nalu", 10, 3, [4, 9])
    alone = models.BatchedNetwork("nalu", 10, 3, [9])
    for (name, p), q in zip(both.named_parameters(), alone.parameters()):
        assert torch.equal(p[1], q[0]), name


def test_forward_by_hand():
    net = models.BatchedNetwork("nac_mul", 2, 1, [0])
    with torch.no_grad():  # W1 = W2 = 1 by saturating tanh and sigmoid
        for p in (net.layer1.w_hat, net.layer1.m_hat, net.layer2.w_hat, net.layer2.m_hat):
            p.fill_(30.0)
    x = torch.tensor([[2.0, 3.0]])
    assert net(x).item() == pytest.approx(5.0, rel=1e-5)  # exp(1 * log(2 + 3))
    nalu = models.BatchedNetwork("nalu", 2, 1, [0])
    with torch.no_grad():
        nalu.layer1.w_hat.fill_(30.0), nalu.layer1.m_hat.fill_(30.0), nalu.layer1.gate.fill_(-30.0)
    # gate ~ 0 selects the multiplicative path: exp(log 2 + log 3) = 6
    assert nalu.layer1(x).item() == pytest.approx(6.0, rel=1e-5)


def test_sparsity_error_is_max_over_layers_excluding_gates():
    net = models.BatchedNetwork("nalu", 2, 1, [0])
    with torch.no_grad():
        net.layer1.w_hat.fill_(30.0), net.layer1.m_hat.fill_(30.0)  # W1 = 1: error 0
        net.layer2.w_hat.fill_(math.atanh(0.7)), net.layer2.m_hat.fill_(30.0)  # W2 = 0.7: error 0.3
        net.layer1.gate.fill_(0.5)  # would give 0.5 if gates counted
    assert net.sparsity_error().item() == pytest.approx(0.3, abs=1e-6)
