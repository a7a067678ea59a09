"""Two user's units for arith's operations table (config arith.operations.cells, 'tiny_user_arith:ExactAdd'), built as
Class(input_size, hidden_size, seed) and called as unit(x) with x (batch, input_size) (docs/PLUGINS.md, arith).

ExactAdd is a scripted oracle, a test fixture and not a learner: it draws the seed's subsets as the benchmark does
(reprobench.arith.data, for the default dataset's subset 0.25 and overlap 0.5) and returns a + b exactly, so its
success on addition must be 100%. Constant learns one number for every input, so it can never extrapolate a sum: 0%."""

import torch
from torch import nn

from reprobench.arith import data


class ExactAdd(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, seed: int):
        super().__init__()
        subsets, _ = data.dataset_rng(seed, input_size, 0.25, 0.5)
        weights = torch.zeros(input_size)
        weights[subsets.a] += 1
        weights[subsets.b] += 1  # the overlap counts twice, as in a + b
        self.register_buffer("sum_weights", weights)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.sum_weights.to(x.dtype)


class Constant(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, seed: int):
        super().__init__()
        self.value = nn.Parameter(torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.value.expand(x.shape[0])

    def weights(self):
        return [self.value]  # its sparsity error is reported


class WrongShape(Constant):
    def forward(self, x):
        return self.value.expand(x.shape[0], 2)


class NoForward(nn.Module):
    """Has no forward of its own: stopped at plan time."""

    def __init__(self, input_size: int, hidden_size: int, seed: int):
        super().__init__()
