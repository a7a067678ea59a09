"""IMDB models and training (specs/wade.md, 3.6): RNN, LSTM, GRU, Transformer and bag-of-words Linear.

Recurrent: Embedding(V, 128, padding_idx 0) -> Dropout 0.6 -> one layer (hidden 256) over the packed
sequence -> output at the last real token -> BatchNorm1d(256) -> Linear(256, 2).
Transformer: embedding 128 (+ sinusoidal positions), one encoder layer (8 heads, feed-forward 256, dropout
0.5), no causal or padding mask, mean over every position including padding (as released), Linear(128, 2).
Linear: the bag-of-words presence vector normalised to sum 1, Linear(V, 2) with weights U(+-sqrt(1/V)/100).
Training: Adam 1e-3, cross-entropy, batches of 8, a permutation per epoch; the test accuracy is measured after
the batches that start at example 0, 400, 800, ... (every 50 batches), over the whole test set in batches of 32.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
from torch import nn

from reprobench.core import checkpoint as checkpoints
from reprobench.core.errors import ConfigError
from reprobench.core.plugins import USER_CLASS, load_class
from reprobench.core.progress import Progress, log
from reprobench.wade.grid import IMDB_MODELS
from reprobench.wade.sequence_models import PositionalEncoding

MODELS = IMDB_MODELS  # the models build() knows, besides a user's class (config wade.imdb.models)
USER_KEY = "wade.imdb.models"


class RecurrentClassifier(nn.Module):
    def __init__(self, kind: str, vocab: int, embed: int = 128, hidden: int = 256):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed, padding_idx=0)
        self.dropout = nn.Dropout(0.6)
        self.rnn = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}[kind](embed, hidden, batch_first=True)
        self.norm = nn.BatchNorm1d(hidden)
        self.out = nn.Linear(hidden, 2)

    def forward(self, tokens, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.dropout(self.embed(tokens)), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        output, _ = self.rnn(packed)
        output, _ = nn.utils.rnn.pad_packed_sequence(output, batch_first=True)
        last = output[torch.arange(len(lengths)), lengths - 1]
        return self.out(self.norm(last))


class TransformerClassifier(nn.Module):
    def __init__(self, vocab: int, d_model: int = 128, heads: int = 8, feedforward: int = 256, dropout: float = 0.5):
        super().__init__()
        self.d_model = d_model
        self.embed = nn.Embedding(vocab, d_model)
        self.position = PositionalEncoding(d_model, dropout, max_len=4096)
        layer = nn.TransformerEncoderLayer(d_model, heads, feedforward, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.out = nn.Linear(d_model, 2)
        # the reference's TransformerModel.init_weights (as the synthetic tasks' model): PyTorch's default N(0, 1)
        # embedding would be about std 11 after the sqrt(d) scaling and swamp the positional encoding
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)
        nn.init.uniform_(self.out.weight, -0.1, 0.1)
        nn.init.zeros_(self.out.bias)

    def forward(self, tokens, lengths):
        x = self.position(self.embed(tokens) * math.sqrt(self.d_model))
        return self.out(self.encoder(x).mean(1))  # padding included in the mean, as released


class BagOfWords(nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab
        self.out = nn.Linear(vocab, 2)
        bound = math.sqrt(1 / vocab) / 100
        nn.init.uniform_(self.out.weight, -bound, bound)
        nn.init.uniform_(self.out.bias, -bound, bound)

    def forward(self, tokens, lengths):
        present = torch.zeros((len(tokens), self.vocab), device=tokens.device)
        valid = torch.arange(tokens.shape[1], device=tokens.device)[None, :] < lengths[:, None]
        present.scatter_(1, torch.where(valid, tokens, 0), valid.float())
        return self.out(present / present.sum(1, keepdim=True).clamp_min(1))


def build(model: str, vocab: int) -> nn.Module:
    """A paper's model, or a user's 'package.module:Class' built as Class(vocab) (docs/PLUGINS.md, WADE IMDB)."""
    if USER_CLASS.match(model):
        net = load_class(model, USER_KEY)(vocab)
        if not isinstance(net, nn.Module):
            raise ConfigError(USER_KEY, f"'{model}' built a {type(net).__name__}, not a torch.nn.Module")
        return net
    if model in ("rnn", "lstm", "gru"):
        return RecurrentClassifier(model, vocab)
    if model == "transformer":
        return TransformerClassifier(vocab)
    if model == "linear":
        return BagOfWords(vocab)
    raise ValueError(f"unknown IMDB model '{model}' (known: {', '.join(MODELS)})")


def _batch(sequences, index, device):
    lengths = torch.tensor([max(1, len(sequences[i])) for i in index], device=device)
    tokens = torch.zeros((len(index), int(lengths.max())), dtype=torch.int64, device=device)  # pad id 0 = '!'
    for row, i in enumerate(index):
        tokens[row, : len(sequences[i])] = torch.as_tensor(sequences[i], device=device)
    return tokens, lengths


@torch.no_grad()
def accuracy(net, sequences, labels, device, batch: int = 32) -> float:
    net.eval()
    correct = 0
    for start in range(0, len(sequences), batch):
        index = list(range(start, min(start + batch, len(sequences))))
        tokens, lengths = _batch(sequences, index, device)
        correct += int((net(tokens, lengths).argmax(1).cpu().numpy() == labels[index]).sum())
    net.train()
    return correct / len(sequences)


def train(model: str, vocab: int, train_seqs, train_labels, test_seqs, test_labels, seed: int, epochs: int,
          eval_every_examples: int, batch: int = 8, device="cpu", checkpoint: str | None = None,
          checkpoint_every_s: float = 600.0) -> tuple[np.ndarray, np.ndarray]:
    """(examples seen at each evaluation, test accuracy at each evaluation).

    With `checkpoint`, the run saves its state after an evaluation at most every `checkpoint_every_s` seconds
    (model, optimiser, the epoch's order and position, numpy's and torch's generators: dropout draws from torch's),
    and a run started with an existing checkpoint of the same configuration continues from it, identically."""
    device = torch.device(device)
    torch.manual_seed(seed)
    rng = np.random.RandomState(seed)
    net = build(model, vocab).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    labels = torch.as_tensor(train_labels, device=device)
    identity = {"model": model, "vocab": vocab, "seed": seed, "epochs": epochs, "batch": batch,
                "eval_every_examples": eval_every_examples, "train": len(train_seqs), "test": len(test_seqs)}
    at = {"epoch": 0, "start": 0, "order": None, "examples": 0, "seen": [], "accs": []}
    blob = checkpoints.load(checkpoint, identity)
    if blob is not None:
        net.load_state_dict(blob["model"])
        opt.load_state_dict(blob["optimizer"])
        rng.set_state(blob["numpy_rng"])
        checkpoints.restore_rng_states(blob["torch_rng"], device)
        at = blob["at"]
        log(f"resuming from checkpoint {checkpoint} at epoch {at['epoch']}, example {at['examples']}")
    last_save = time.monotonic()
    steps_per_epoch = -(-len(train_seqs) // batch)
    bar = Progress(epochs * steps_per_epoch, f"IMDB {model} seed {seed}")
    bar.update(at["epoch"] * steps_per_epoch + at["start"] // batch)
    for epoch in range(at["epoch"], epochs):
        if at["order"] is None:
            at["order"] = rng.permutation(len(train_seqs))
        order = at["order"]
        for start in range(at["start"], len(order), batch):
            index = order[start:start + batch]
            tokens, lengths = _batch(train_seqs, index, device)
            logits = net(tokens, lengths)
            if tuple(logits.shape) != (len(index), 2):
                raise ConfigError(USER_KEY, f"'{model}'.forward(tokens {tuple(tokens.shape)}, lengths) returned "
                                  f"{tuple(logits.shape)}; it must return logits of shape (batch, 2) = "
                                  f"{(len(index), 2)}")
            loss = loss_fn(logits, labels[index])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            at["examples"] += len(index)
            bar.update(1)
            if start % eval_every_examples == 0:
                at["seen"].append(at["examples"])
                at["accs"].append(accuracy(net, test_seqs, test_labels, device))
                if checkpoint and time.monotonic() - last_save >= checkpoint_every_s:
                    at.update(epoch=epoch, start=start + batch)
                    checkpoints.save(checkpoint, identity, model=net.state_dict(), optimizer=opt.state_dict(),
                                     numpy_rng=rng.get_state(), torch_rng=checkpoints.rng_states(device), at=at)
                    last_save = time.monotonic()
        at.update(order=None, start=0)
    bar.close()
    return np.array(at["seen"]), np.array(at["accs"])
