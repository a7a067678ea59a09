"""The Transformer of lifelonglm (`--architecture transformer`; specs/calm.md 3.8, 3.2, 1.11; the seed paper's
Appendix C), re-implemented from the spec. Not one of the paper's Table 1 models: Appendix C reports it did "worse
than expected". Shapes: tokens (T, b) time first, logits (T, b, V). Device-agnostic, no host synchronisation in any
forward or in `learn`.

What the reference does:
- Model: Embedding(V, d) * sqrt(d) + sinusoidal positional encoding -> dropout -> nn.TransformerEncoder of post-LN
  layers (ReLU, feed-forward size --nhid, dropout) under a causal mask -> Linear(d, V). Run with --bptt 100.
- HEAD (576f864): a context buffer of the last 512 tokens per stream ("the last b x 512 consecutive examples",
  Appendix C), updated with every window; the loss is on the current window only. Adam with PyTorch's default
  betas and eps (the code builds betas/eps kwargs but never passes them), no gradient clipping. The learning rate
  is always Vaswani's schedule base * min(step^-0.5, step * warmup^-1.5), with base d^-0.5 for --lr 42 (a magic
  value) and base --lr otherwise.
- ACL era (c937b71; spec section 0 dates the transformer command lines to it): no buffer (the model sees the
  current window only: `context=0` here) and the schedule only for --lr 42, with base 1/d instead of d^-0.5 (any
  other --lr constant). Not reproduced: Appendix C describes the buffer, i.e. HEAD.
- The online step of every lifelonglm learner (3.2): the logged loss is computed before any update, in train mode
  (dropout on), then li times: backward, Adam step, and, unless last, predict again from the same context.

Choices where the spec is silent:
- Initialisation: embedding and decoder weight U(-0.1, 0.1), decoder bias 0 (`INIT_RANGE`, as lifelonglm's RNN
  models, 3.1, and PyTorch's word_language_model example, which has the structure 3.8 describes); the encoder layers
  keep PyTorch's defaults. Why not PyTorch's N(0, 1) embedding: scaled by sqrt(d) it would be ~45x the positional
  encoding at d = 2048, drowning the positions. nn.TransformerEncoder deep-copies its layer, so all layers start
  with the same weights (PyTorch's behaviour, so presumably the reference's). Draw order from torch's global
  generator: embedding (default, then overwritten), layer, decoder (default, then overwritten).
- Positions are counted from the first token of the model's input (buffer + window): the window's positions shift
  while the buffer fills, then stay at context..context+T-1.
- The schedule's step counts optimizer steps (li per window), from 1.
- D5 `score_eval`: False (faithful) logs the train-mode loss, as the reference; True (corrected) logs the loss of
  an extra no-grad forward in eval mode, then trains on a train-mode forward as before.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from reprobench.calm.learners import evaluating
from reprobench.calm.models import init_embedding_and_decoder
from reprobench.calm.zoo import CONTEXT  # tokens per stream kept in the buffer (HEAD, Appendix C)

MAGIC_LR = 42  # --lr 42 selects the base d^-0.5 of the warm-up schedule (HEAD)


def sinusoidal_encoding(length: int, d_model: int, device=None, dtype=torch.float32) -> Tensor:
    """Vaswani et al.'s positional encoding for positions 0..length-1, (length, 1, d): sin(pos / 10000^(2i/d)) at
    even features 2i, cos of the same angle at the odd features 2i+1."""
    pos = torch.arange(length, device=device, dtype=torch.float32).unsqueeze(1)
    inv_freq = torch.exp(torch.arange(0, d_model, 2, device=device, dtype=torch.float32) * (-math.log(1e4) / d_model))
    angles = pos * inv_freq
    pe = torch.empty(length, d_model, device=device, dtype=torch.float32)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])  # odd d: one cosine fewer than sines
    return pe.to(dtype).unsqueeze(1)


class TransformerLM(nn.Module):
    """forward(x (T, b)) -> logits (T, b, V); each position sees itself and the earlier ones only."""

    def __init__(self, vocab: int, d_model: int, n_heads: int, n_layers: int, d_ff: int, dropout: float = 0.1):
        super().__init__()
        self.vocab, self.d_model = vocab, d_model
        self.encoder = nn.Embedding(vocab, d_model)
        self.drop = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, d_ff, dropout, activation="relu", norm_first=False)
        # no nested tensors: there is no padding, and the check would only warn about batch_first=False
        self.transformer = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.decoder = nn.Linear(d_model, vocab)
        self.init_weights()

    def init_weights(self) -> None:
        init_embedding_and_decoder(self.encoder, self.decoder)

    def trunk(self, x: Tensor) -> Tensor:
        """The encoder's output (T, b, d), before the decoder."""
        t = x.shape[0]
        h = self.encoder(x) * math.sqrt(self.d_model)
        h = self.drop(h + sinusoidal_encoding(t, self.d_model, h.device, h.dtype))
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=x.device, dtype=h.dtype)
        # is_causal=True as a hint: without it torch compares the mask with a causal one, a host sync
        return self.transformer(h, mask=mask, is_causal=True)

    def forward(self, x: Tensor) -> Tensor:
        return self.decoder(self.trunk(x))


def lr_at(step: int, base: float, warmup: int) -> float:
    """Vaswani's schedule: base * min(step^-0.5, step * warmup^-1.5), step counted from 1: a linear rise to
    base * warmup^-0.5 at step = warmup, then decay as step^-0.5."""
    if step < 1 or warmup < 1:
        raise ValueError(f"step and warmup must be at least 1, got step={step}, warmup={warmup}")
    return base * min(step**-0.5, step * warmup**-1.5)


def base_lr(lr: float, d_model: int) -> float:
    """The schedule's base at HEAD: d^-0.5 for the magic --lr 42, else lr itself (the ACL era used 1/d)."""
    return d_model**-0.5 if lr == MAGIC_LR else lr


class TransformerLearner:
    """The online learner of a `TransformerLM` (class-agnostic; interface of reprobench.calm.learners).

    learn(x, y): the model's input is the buffer (the last `context` tokens of every stream before this window,
    fewer while it fills, token ids only, so no gradient reaches the past) followed by the window x; the loss is the
    mean cross-entropy over the window's T b positions. Returned before any update (test-then-train), then
    `learn_iterations` Adam steps, each on a fresh forward over the same input. The buffer then takes in x.
    context=0: no buffer (the ACL era).

    Learning rate: lr_at(step, base_lr(lr, d), warmup), set before every optimizer step (HEAD schedules every run;
    the ACL era scheduled only --lr 42, with base 1/d, and kept any other lr constant).
    """

    oracle = False

    def __init__(self, model: TransformerLM, lr: float, warmup: int = 40, learn_iterations: int = 1,
                 context: int = CONTEXT, score_eval: bool = False):
        if learn_iterations < 1:
            raise ValueError(f"learn_iterations must be at least 1, got {learn_iterations}")
        if context < 0:
            raise ValueError(f"context must be non-negative, got {context}")
        self.model, self.lr, self.warmup, self.li, self.context = model, lr, warmup, learn_iterations, context
        self.score_eval = score_eval
        self.base = base_lr(lr, model.d_model)
        lr_at(1, self.base, warmup)  # fail early on a bad warmup
        # default betas and eps, as the reference (which built its own but never passed them); the initial lr is
        # overwritten before every step
        self.optimizer = torch.optim.Adam(model.parameters(), lr=self._lr(1))
        self.step = 0  # optimizer steps taken
        self.window = 1  # tokens per stream of the last window (the predictor's context bound)
        self.buffer: Tensor | None = None  # (<= context, b) token ids
        model.train()

    def _lr(self, step: int) -> float:
        return lr_at(step, self.base, self.warmup)

    def _loss(self, inp: Tensor, y: Tensor) -> Tensor:
        t = y.shape[0]
        logits = self.model.decoder(self.model.trunk(inp)[-t:])  # decode the window only: the buffer has no loss
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    def learn(self, x: Tensor, y: Tensor, class_id: int | None = None) -> Tensor:
        if self.buffer is not None and self.buffer.shape[1] != x.shape[1]:
            raise ValueError(f"the buffer holds {self.buffer.shape[1]} streams, the window {x.shape[1]}")
        inp = x if self.buffer is None else torch.cat([self.buffer, x])
        self.window = x.shape[0]
        first = None
        if self.score_eval:
            self.model.eval()
            with torch.no_grad():
                first = self._loss(inp, y)
        self.model.train()
        loss = self._loss(inp, y)
        if first is None:
            first = loss.detach()
        for it in range(self.li):
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.step += 1
            for group in self.optimizer.param_groups:
                group["lr"] = self._lr(self.step)
            self.optimizer.step()
            if it < self.li - 1:
                loss = self._loss(inp, y)
        if self.context > 0:
            self.buffer = inp[-self.context:].clone()  # clone: the first window's would alias the caller's x
        return first

    def gate_weights(self) -> Tensor | None:
        return None

    def on_fragment(self, index: int) -> None:
        pass

    @contextmanager
    def predictor(self, class_id: int | None = None):
        """Next-token log-probabilities given the buffer and the tokens fed since, at most context + window tokens
        (eval mode, no gradient); the learner's buffer is not changed."""
        context, longest = self.buffer, self.context + self.window

        def step(x: Tensor) -> Tensor:
            nonlocal context
            # at most the buffer plus one window, the longest input training showed it
            context = x if context is None else torch.cat([context, x])[-longest:]
            return torch.log_softmax(self.model(context)[-1:], -1)

        with evaluating(self.model):
            yield step

    def state_dict(self) -> dict:
        """Like PyTorch's: references to the live tensors (save or deep-copy it before training on)."""
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(), "step": self.step,
                "buffer": self.buffer, "window": self.window}

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.step, self.window = int(state["step"]), int(state["window"])
        buffer = state["buffer"]
        self.buffer = None if buffer is None else buffer.to(self.model.decoder.weight.device)
