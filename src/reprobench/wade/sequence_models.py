"""Trained sequence models on the synthetic tasks (specs/wade.md, 3.4 and 3.5).

RNN and LSTM: one layer, one-hot inputs, hidden size V + sqrt(V^2 + 1800 V) (as coded), a linear output over
the vocabulary. Transformer: embedding 80 (scaled by sqrt 80) + sinusoidal positions, one post-LN encoder
layer (8 heads, feed-forward 50, dropout 0.5), linear output. Variant `faithful` has no causal mask, as
released (a position can attend to the answer it must predict); `corrected` has one.

Training as coded: Adam (lr 1e-3), per sequence the mean cross-entropy over its supervised positions, the
gradients of 8 consecutive sequences summed per optimiser step (the counter runs on across the 10 epochs,
each epoch a fresh shuffle), test accuracy over every supervised test position after every step. The 8
sequences of a step go through the model as one padded batch: the summed loss has the same gradient as 8
separate backward passes (padding sits after each sequence; the faithful Transformer masks it as a key).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from reprobench.core.errors import ConfigError
from reprobench.core.plugins import USER_CLASS, load_class
from reprobench.core.progress import Progress
from reprobench.wade.grid import SEQUENCE_RUNS
from reprobench.wade.tasks import Dataset

BATCH = 8
RESERVOIR_WIDTH = 1800  # the ReCA readout width the hidden-size formula matches


def hidden_size(vocab_size: int, multiplier: int = 1) -> int:
    return multiplier * int(vocab_size + math.sqrt(vocab_size**2 + RESERVOIR_WIDTH * vocab_size))


class Recurrent(nn.Module):
    def __init__(self, kind: str, vocab_size: int, hidden: int):
        super().__init__()
        self.vocab_size = vocab_size
        self.rnn = {"rnn": nn.RNN, "lstm": nn.LSTM}[kind](vocab_size, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab_size)

    def forward(self, tokens: torch.Tensor, padding: torch.Tensor | None = None) -> torch.Tensor:
        x = nn.functional.one_hot(tokens, self.vocab_size).to(self.out.weight.dtype)
        return self.out(self.rnn(x)[0])  # causal: padding after a sequence cannot reach it

    def predict(self, tokens, padding, queries: Queries):
        """Logits of the supervised items only (evaluation: the output layer where an item is scored)."""
        x = nn.functional.one_hot(tokens, self.vocab_size).to(self.out.weight.dtype)
        return self.out(self.rnn(x)[0][queries.rows, queries.positions])


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, dropout: float, max_len: int = 1000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        position = torch.arange(max_len)[:, None]
        div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(position * div), torch.cos(position * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return self.dropout(x + self.pe[: x.shape[1]])


class Transformer(nn.Module):
    def __init__(self, vocab_size: int, causal: bool, d_model: int = 80, heads: int = 8, feedforward: int = 50,
                 layers: int = 1, dropout: float = 0.5):
        super().__init__()
        self.causal, self.d_model = causal, d_model
        self.embed = nn.Embedding(vocab_size, d_model)
        self.position = PositionalEncoding(d_model, dropout)
        layer = nn.TransformerEncoderLayer(d_model, heads, feedforward, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.out = nn.Linear(d_model, vocab_size)
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)
        nn.init.uniform_(self.out.weight, -0.1, 0.1)
        nn.init.zeros_(self.out.bias)

    def forward(self, tokens: torch.Tensor, padding: torch.Tensor | None = None) -> torch.Tensor:
        x = self.position(self.embed(tokens) * math.sqrt(self.d_model))
        length = tokens.shape[1]
        mask = torch.triu(torch.ones((length, length), dtype=torch.bool, device=tokens.device), 1) \
            if self.causal else None
        return self.out(self.encoder(x, mask=mask, src_key_padding_mask=padding, is_causal=self.causal))

    def predict(self, tokens, padding, queries: Queries):
        """Logits of the supervised items only, in evaluation (no dropout): the layers before the last over every
        position; the last one's queries, feed-forward and output only where an item is scored (Basic QA scores one
        position of ~17; keys and values still cover the sequence), each item attending as in `forward`: to its
        sequence's tokens (faithful) or to those up to its position (corrected)."""
        x = self.position(self.embed(tokens) * math.sqrt(self.d_model))
        batch, length = tokens.shape
        causal = torch.triu(torch.ones((length, length), dtype=torch.bool, device=tokens.device), 1)
        *first, last = self.encoder.layers
        for layer in first:
            x = layer(x, src_mask=causal if self.causal else None, src_key_padding_mask=padding,
                      is_causal=self.causal)
        attention, heads = last.self_attn, last.self_attn.num_heads
        w_q, w_k, w_v = attention.in_proj_weight.chunk(3)
        b_q, b_k, b_v = attention.in_proj_bias.chunk(3)
        slots = queries.grid.shape[1]
        query = x.gather(1, queries.grid[..., None].expand(-1, -1, self.d_model))  # (batch, slots, d)

        def split(t):  # (batch, n, d) -> (batch, heads, n, d / heads)
            return t.view(batch, t.shape[1], heads, -1).transpose(1, 2)

        q, k, v = (split(nn.functional.linear(t, w, b))
                   for t, w, b in ((query, w_q, b_q), (x, w_k, b_k), (x, w_v, b_v)))
        blocked = padding[:, None, :]  # (batch, 1, keys): every slot of a row sees its sequence's tokens
        if self.causal:
            blocked = blocked | causal[queries.grid]  # (batch, slots, keys)
        mixed = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=~blocked[:, None])
        y = last.norm1(query + attention.out_proj(mixed.transpose(1, 2).reshape(batch, slots, -1)))
        y = last.norm2(y + last.linear2(last.activation(last.linear1(y))))
        if self.encoder.norm is not None:
            y = self.encoder.norm(y)
        return self.out(y.reshape(batch * slots, -1)[queries.take])


def build(model: str, vocab_size: int, config: str) -> nn.Module:
    """`config`: 'default' for RNN and LSTM; the Transformer's variant, 'faithful' or 'corrected'
    (grid.SEQUENCE_RUNS). A user's model (config wade.models, 'package.module:Class'): Class(vocab_size)."""
    if USER_CLASS.match(model):
        net = load_class(model, "wade.models")(vocab_size)
        if not isinstance(net, nn.Module):
            raise ConfigError("wade.models", f"'{model}' built a {type(net).__name__}, not a torch.nn.Module")
        return net
    if (model, config) not in SEQUENCE_RUNS:
        raise ValueError(f"unknown sequence-model run {model}/{config} (known: "
                         f"{', '.join(f'{m}/{c}' for m, c in SEQUENCE_RUNS)})")
    if model == "transformer":
        return Transformer(vocab_size, causal=config == "corrected")
    return Recurrent(model, vocab_size, hidden_size(vocab_size))


def _pad(sequences: list[np.ndarray], device):
    length = max(len(s) for s in sequences)
    tokens = torch.zeros((len(sequences), length), dtype=torch.int64, device=device)
    padding = torch.ones((len(sequences), length), dtype=torch.bool, device=device)
    for i, s in enumerate(sequences):
        tokens[i, : len(s)] = torch.as_tensor(s, device=device)
        padding[i, : len(s)] = False
    return tokens, padding


class Sequences:
    """Every sequence of a dataset on the device, uploaded once (each blocking upload to a GPU is a host sync):
    zero-padded to the longest with its padding mask, and every supervised position in one flat tensor. A batch is
    then sliced on the device, equal to `_pad` of its sequences."""

    def __init__(self, dataset: Dataset, device):
        self.lengths = np.array([len(t) for t in dataset.tokens])
        tokens, padding = _pad(dataset.tokens, "cpu")
        self.tokens, self.padding = tokens.to(device), padding.to(device)
        self.first = np.concatenate([[0], np.cumsum([len(m) for m in dataset.masks])])  # each sequence's first item
        self.positions = torch.tensor(np.concatenate(dataset.masks), device=device)

    def batch(self, idx: np.ndarray, rows: torch.Tensor):
        """(tokens, padding, [supervised positions per sequence]) of sequences `idx`; `rows`: `idx` on the device."""
        length = int(self.lengths[idx].max())
        return (self.tokens[rows, :length], self.padding[rows, :length],
                [self.positions[self.first[i]:self.first[i + 1]] for i in idx])


@dataclass
class Queries:
    """The supervised items of a padded batch: each item's row and the position whose output predicts it, and the
    same laid out per row, (rows, most items of a row) positions (padded with 0), with each item's index in it."""

    rows: torch.Tensor
    positions: torch.Tensor
    grid: torch.Tensor
    take: torch.Tensor

    @classmethod
    def of(cls, masks: list[np.ndarray], device) -> Queries:
        counts = [len(m) for m in masks]
        grid = np.zeros((len(masks), max(counts)), dtype=np.int64)
        for r, m in enumerate(masks):
            grid[r, : len(m)] = m - 1
        take = np.concatenate([r * grid.shape[1] + np.arange(c) for r, c in enumerate(counts)])
        rows = np.repeat(np.arange(len(masks)), counts)
        index = torch.tensor(np.stack([rows, np.concatenate(masks) - 1, take]), device=device)  # one upload
        return cls(index[0], index[1], torch.tensor(grid, device=device), index[2])


class TestSet:
    """The test sequences in a few buckets of similar length, each one zero-padded batch (sorted by length, a bucket
    grows while its padding stays under a quarter of its tokens), with every supervised item's row and position.
    Padding sits after each sequence and is masked as a key: every item's logits are those of its sequence alone."""

    SLACK = 1.25

    def __init__(self, dataset: Dataset, device):
        idx = np.flatnonzero(~dataset.train)
        idx = idx[np.argsort([len(dataset.tokens[i]) for i in idx], kind="stable")]
        buckets, real = [[]], 0
        for i in idx:
            length = len(dataset.tokens[i])
            if buckets[-1] and (len(buckets[-1]) + 1) * length > self.SLACK * (real + length):
                buckets.append([])
                real = 0
            buckets[-1].append(i)
            real += length
        self.buckets = [self._bucket(dataset, b, device) for b in buckets]
        self.items = sum(len(dataset.masks[i]) for i in idx)

    @staticmethod
    def _bucket(dataset: Dataset, idx: list[int], device):
        tokens, padding = _pad([dataset.tokens[i] for i in idx], device)
        return tokens, padding, Queries.of([dataset.masks[i] for i in idx], device)

    def __len__(self):
        return len(self.buckets)


@torch.no_grad()
def accuracy(net: nn.Module, test: TestSet) -> torch.Tensor:
    """Test accuracy over every supervised test item, a float64 tensor on the device (no host sync)."""
    net.eval()
    correct = 0
    for tokens, padding, queries in test.buckets:
        if hasattr(net, "predict"):
            logits = net.predict(tokens, padding, queries)
        else:  # a user's model: every position's logits, read at the scored items
            logits = net(tokens, padding)[queries.rows, queries.positions]
        predicted = logits.argmax(-1)
        correct = correct + (predicted == tokens[queries.rows, queries.positions + 1]).sum()
    net.train()
    return correct.double() / test.items  # as Python's int / int: both exact in float64, one rounding


def train_step(net: nn.Module, opt: torch.optim.Optimizer, tokens: torch.Tensor, padding: torch.Tensor,
               positions: list[torch.Tensor]) -> torch.Tensor:
    """One optimiser step on a padded batch: each sequence's mean cross-entropy over its supervised positions,
    summed. Returns the loss (on the device)."""
    logits = net(tokens, padding)
    loss = 0.0
    for row, p in enumerate(positions):
        loss = loss + nn.functional.cross_entropy(logits[row, p - 1], tokens[row, p])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.detach()


class Training:
    """One run, a step at a time: `train` drives it; benchmarks/gpu_parts/wade.py times its steps. `dtype`: the
    model's (float64 for the GPU check's comparison with the CPU)."""

    def __init__(self, dataset: Dataset, model: str, seed: int, config: str, epochs: int, device="cpu",
                 dtype=torch.float32):
        device = torch.device(device)
        torch.manual_seed(seed)
        self.vocab_size = len(dataset.vocabulary)
        self.net = build(model, self.vocab_size, config).to(device, dtype)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-3)
        rng = np.random.RandomState(seed)
        train_idx = np.flatnonzero(dataset.train)
        self.order = np.concatenate([rng.permutation(train_idx) for _ in range(epochs)])
        self.steps = len(self.order) // BATCH
        self.data, self.rows = Sequences(dataset, device), torch.tensor(self.order, device=device)
        self.test = TestSet(dataset, device)
        self.curve = torch.empty(self.steps, dtype=torch.float64, device=device)  # read back once, at the end

    def check_output(self, name: str) -> None:
        """A user's model must return (batch, length, vocabulary) logits for a padded batch: said at its first step
        rather than as an indexing error deep in the loss."""
        tokens, padding, _ = self.data.batch(self.order[:BATCH], self.rows[:BATCH])
        with torch.no_grad():
            out = self.net(tokens, padding)
        want = (*tokens.shape, self.vocab_size)
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != want:
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise ConfigError("wade.models", f"'{name}'.forward(tokens {tuple(tokens.shape)}, padding) returned {got}; "
                              f"it must return logits of shape (batch, length, vocabulary) = {want}")

    def step(self, k: int) -> torch.Tensor:
        """Optimiser step k (sequences 8k .. 8k + 7 of the order), then the test accuracy into curve[k]; returns the
        step's loss. No host sync."""
        batch = slice(k * BATCH, (k + 1) * BATCH)
        loss = train_step(self.net, self.opt, *self.data.batch(self.order[batch], self.rows[batch]))
        self.curve[k] = accuracy(self.net, self.test)
        return loss


def train(dataset: Dataset, model: str, seed: int, config: str, epochs: int, device="cpu",
          max_steps: int | None = None) -> np.ndarray:
    """Test accuracy after every optimiser step: floor(epochs * n_train / 8) values (or max_steps)."""
    run = Training(dataset, model, seed, config, epochs, device)
    if USER_CLASS.match(model):
        run.check_output(model)
    steps = run.steps if max_steps is None else min(max_steps, run.steps)
    bar = Progress(steps, f"{model}/{config} task {dataset.task_id} seed {seed}")
    for k in range(steps):
        run.step(k)
        bar.update(1)
    bar.close()
    return run.curve[:steps].cpu().numpy()


def n_parameters(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())
