"""A user's sequence model for WADE's ten synthetic tasks, as a researcher would write one: named in the config as
`tiny_user_wade:TinyGRU` (wade.models), built as TinyGRU(vocab_size), trained by the same loop as the paper's RNN
(tests/test_workflow.py's tiny run puts this folder on PYTHONPATH)."""

import torch
from torch import nn


class TinyGRU(nn.Module):
    """forward(tokens (batch, length) int64, padding (batch, length) bool, True after a sequence's end) -> logits
    (batch, length, vocabulary): the logits at position i predict token i + 1 from tokens 0..i only."""

    def __init__(self, vocab_size: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, 16)
        self.rnn = nn.GRU(16, 24, batch_first=True)
        self.out = nn.Linear(24, vocab_size)

    def forward(self, tokens: torch.Tensor, padding: torch.Tensor | None = None) -> torch.Tensor:
        return self.out(self.rnn(self.embed(tokens))[0])  # causal: padding after a sequence cannot reach it


class WrongShape(TinyGRU):
    """Returns one vector per sequence, not per position: stopped at the first step."""

    def forward(self, tokens, padding=None):
        return super().forward(tokens, padding)[:, -1]


class NoForward(nn.Module):
    """Has no forward of its own: stopped at plan time."""

    def __init__(self, vocab_size: int):
        super().__init__()
