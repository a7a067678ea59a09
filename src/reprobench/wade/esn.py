"""The echo state network baseline (specs/wade.md, section 3.2), as the reference built it.

1800 tanh units (the width of the ReCA features); recurrent weights U(-1, 1) kept with probability 10/1800
(about 10 per row), dense input weights U(-1, 1), both biases U(+-1/sqrt(1800)) as torch's RNNCell default;
no spectral-radius rescaling (the radius is about 1.85) and no leak. Features: the state after each token,
from a zero start.
"""

from __future__ import annotations

import math

import torch

UNITS = 1800
NONZERO_PER_ROW = 10


class EchoStateNetwork:
    def __init__(self, vocab_size: int, generator: torch.Generator, units: int = UNITS,
                 nonzero_per_row: float = NONZERO_PER_ROW, dtype=torch.float32):
        def uniform(shape, bound):
            return (torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1) * bound

        keep = torch.rand((units, units), generator=generator, dtype=torch.float64) < nonzero_per_row / units
        self.w_hh = (uniform((units, units), 1.0) * keep).to(dtype)
        self.w_ih = uniform((units, vocab_size), 1.0).to(dtype)
        bound = 1 / math.sqrt(units)
        self.bias = (uniform((units,), bound) + uniform((units,), bound)).to(dtype)  # b_ih + b_hh

    def to(self, device):
        self.w_hh, self.w_ih, self.bias = self.w_hh.to(device), self.w_ih.to(device), self.bias.to(device)
        return self

    def features(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (batch, length) int64 -> (batch, length, units): the state after each token."""
        batch, length = tokens.shape
        state = torch.zeros((batch, self.w_hh.shape[0]), dtype=self.w_hh.dtype, device=self.w_hh.device)
        inputs = self.w_ih.T[tokens] + self.bias  # one-hot input times W_ih is a column lookup
        out = torch.empty((batch, length, self.w_hh.shape[0]), dtype=self.w_hh.dtype, device=self.w_hh.device)
        for t in range(length):
            state = torch.tanh(inputs[:, t] + state @ self.w_hh.T)
            out[:, t] = state
        return out
