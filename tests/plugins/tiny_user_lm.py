"""A user's language model for the CALM benchmark, as a researcher would write one: named in the config as
`tiny_user_lm:TinyLM`, built as TinyLM(vocab), run through the same online protocol as the paper's models
(tests/test_workflow.py's tiny run puts this folder on PYTHONPATH)."""

import torch
from torch import nn


class TinyLM(nn.Module):
    """A GRU language model: forward(x (T, b), hidden) -> (logits (T, b, V), hidden)."""

    def __init__(self, vocab: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, 8)
        self.rnn = nn.GRU(8, 12)
        self.out = nn.Linear(12, vocab)

    def forward(self, x: torch.Tensor, hidden=None):
        h, hidden = self.rnn(self.embed(x), hidden)
        return self.out(h), hidden
