"""A user's sequence model for WADE's ten synthetic tasks and a user's classifier for IMDB, as a researcher would write
them: named in the config as `tiny_user_wade:TinyGRU` (wade.models), built as TinyGRU(vocab_size) and trained by the
same loop as the paper's RNN, and `tiny_user_wade:TinyClassifier` (wade.imdb.models), built as
TinyClassifier(vocab) and trained by the same loop as the paper's IMDB models (tests/test_workflow.py's tiny run puts
this folder on PYTHONPATH)."""

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


class TinyClassifier(nn.Module):
    """IMDB: forward(tokens (batch, length) int64, right-padded with 0, lengths (batch,) int64) -> logits (batch, 2):
    the mean embedding of each review's real tokens, then a linear layer."""

    def __init__(self, vocab: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        self.out = nn.Linear(16, 2)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        real = torch.arange(tokens.shape[1], device=tokens.device)[None, :] < lengths[:, None]
        summed = (self.embed(tokens) * real[..., None]).sum(1)
        return self.out(summed / lengths[:, None].clamp_min(1))


class OneLogit(TinyClassifier):
    """Returns one logit per review, not two: stopped at the first batch."""

    def forward(self, tokens, lengths):
        return super().forward(tokens, lengths)[:, :1]
