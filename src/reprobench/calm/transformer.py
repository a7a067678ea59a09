"""The Transformer of lifelonglm (`--architecture transformer`; specs/calm.md 3.8, 3.2, 1.11; the seed paper's
Appendix C), re-implemented from the spec. Not one of the paper's Table 1 models: Appendix C reports it did "worse
than expected". Shapes: tokens (T, b) time first, logits (T, b, V). Device-agnostic, no host synchronisation in any
forward or in `learn`.

What the reference does (lifelonglm 576f864: learner/transformer_learner.py, base_learner.py, model.py, main.py):
- Model: Embedding(V, d) * sqrt(d) + sinusoidal positional encoding -> dropout -> nn.TransformerEncoder of post-LN
  layers (ReLU, feed-forward size --nhid, dropout) under a causal mask -> Linear(d, V). Run with --bptt 100. The
  encoding is a buffer of 5000 positions computed in float32 on the CPU when the model is built (model.py L108-119)
  and moved with the model: on a GPU it holds the CPU's values (computed there, sin and exp of float32 angles up to
  511 rad differ by ~1e-5, a float64 run's forward by 2.6e-7 on an H200).
- The input: `predict` appends the window to a buffer and cuts it to the last --buffer-len = 512 tokens per stream
  (L47-58), and the model reads that buffer: 512 tokens including the window (412 past + 100), positions counted
  from its first token; the loss is on the window's rows only. The first window starts the buffer uncut.
- With li > 1 (base_learner.py L17-29) every re-prediction calls `predict` again, which appends the same window
  again: pass k reads k copies of it, and the buffer carried to the next window ends with li copies (li = 5: the
  next window's 412 past tokens are 4.12 copies of the previous one). Faithful: this; corrected (`repeat_window`
  False): every pass reads the buffer with the window appended once, and that is what is carried.
- The learning rate is Vaswani's schedule base * min(step^-0.5, step * warmup^-1.5), base d^-0.5 for --lr 42 (a
  magic value), else --lr, set once per `learn()` call (L41-43): step counts windows from 1, not optimizer steps,
  so the li Adam steps of a window share one rate. --transformer-warmup defaults to 4000 (main.py L50): the test
  command lines pass 40 only on the --lr 42 rows (zoo.CONFIGS). Adam with PyTorch's default betas and eps (the
  code builds betas/eps kwargs but never passes them), no gradient clipping.
- The online step of every lifelonglm learner (3.2): the logged loss is computed before any update, in train mode
  (dropout on), then li times: backward, Adam step, and, unless last, predict again.
- Initialisation (model.py L137-163): the encoder layer is built first (its default init; nn.TransformerEncoder
  deep-copies it, so all layers start equal), then the Embedding and the decoder, then the embedding and decoder
  weight are redrawn U(-0.1, 0.1) and the decoder bias zeroed. The same draws from torch's global generator here.
- ACL era (c937b71; spec section 0 dates the transformer command lines to it): no buffer (the model sees the
  current window only: `context=0` here) and the schedule only for --lr 42, with base 1/d instead of d^-0.5 (any
  other --lr constant). Not reproduced: Appendix C describes the buffer, i.e. HEAD.
- D5 `score_eval`: False (faithful) logs the train-mode loss, as the reference; True (corrected) logs the loss of
  an extra no-grad forward in eval mode, then trains on a train-mode forward as before.

Ours only: `predictor` (Appendix D samples; the reference's `generate` raises) reads the buffer and the tokens
fed since, at most `context` tokens.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from reprobench.calm.learners import evaluating
from reprobench.calm.models import init_embedding_and_decoder
from reprobench.calm.zoo import CONTEXT  # tokens per stream of the model's input, window included (HEAD)

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

    def __init__(self, vocab: int, d_model: int, n_heads: int, n_layers: int, d_ff: int, dropout: float = 0.1,
                 max_len: int = 5000):
        super().__init__()
        self.vocab, self.d_model = vocab, d_model
        self.drop = nn.Dropout(dropout)
        # computed on the CPU whatever the default device (module docstring), then put where the parameters are made;
        # not in the state dict, which stays as it was
        pe = sinusoidal_encoding(max_len, d_model, "cpu").to(torch.get_default_device())
        self.register_buffer("pe", pe, persistent=False)
        # the reference's draw order: the layer, the embedding, the decoder, then init_weights (module docstring)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, d_ff, dropout, activation="relu", norm_first=False)
        # no nested tensors: there is no padding, and the check would only warn about batch_first=False
        self.transformer = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.encoder = nn.Embedding(vocab, d_model)
        self.decoder = nn.Linear(d_model, vocab)
        self.init_weights()

    def init_weights(self) -> None:
        init_embedding_and_decoder(self.encoder, self.decoder)

    def trunk(self, x: Tensor) -> Tensor:
        """The encoder's output (T, b, d), before the decoder."""
        t = x.shape[0]
        h = self.encoder(x) * math.sqrt(self.d_model)
        if t > len(self.pe):  # longer than the reference's buffer (which would fail): the CPU's values all the same
            self.pe = sinusoidal_encoding(t, self.d_model, "cpu").to(self.pe.device, self.pe.dtype)
        h = self.drop(h + self.pe[:t].to(h.dtype))
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

    learn(x, y): the model's input is the buffer with the window x appended, cut to its last `context` tokens per
    stream (token ids only, so no gradient reaches the past); the loss is the mean cross-entropy over the window's
    T b positions. Returned before any update (test-then-train), then `learn_iterations` Adam steps, each on a fresh
    forward: with `repeat_window` (faithful) the window is appended to the buffer again before each, as the
    reference's re-prediction did; without it every pass reads the same input. The last input is the buffer carried
    to the next window. context=0: no buffer, the window alone (the ACL era).

    Learning rate: lr_at(calls, base_lr(lr, d), warmup), set once per learn() call, calls counted from 1.
    """

    oracle = False

    def __init__(self, model: TransformerLM, lr: float, warmup: int = 4000, learn_iterations: int = 1,
                 context: int = CONTEXT, score_eval: bool = False, repeat_window: bool = True):
        if learn_iterations < 1:
            raise ValueError(f"learn_iterations must be at least 1, got {learn_iterations}")
        if context < 0:
            raise ValueError(f"context must be non-negative, got {context}")
        self.model, self.lr, self.warmup, self.li, self.context = model, lr, warmup, learn_iterations, context
        self.score_eval, self.repeat_window = score_eval, repeat_window
        self.base = base_lr(lr, model.d_model)
        lr_at(1, self.base, warmup)  # fail early on a bad warmup
        # default betas and eps, as the reference (which built its own but never passed them)
        self.optimizer = torch.optim.Adam(model.parameters(), lr=self._lr(1))
        self.step = 0  # learn() calls so far: the schedule's step is the next one's number
        self.window = 1  # tokens per stream of the last window (the predictor's bound without a buffer)
        self.buffer: Tensor | None = None  # (<= context, b) token ids
        model.train()

    def _lr(self, step: int) -> float:
        return lr_at(step, self.base, self.warmup)

    def _append(self, buffer: Tensor | None, x: Tensor) -> Tensor:
        """The reference's append_to_buffer: x starts the buffer (uncut, a copy), else buffer + x, last context."""
        if self.context == 0:
            return x
        return x.clone() if buffer is None else torch.cat([buffer, x])[-self.context:]

    def _loss(self, inp: Tensor, y: Tensor) -> Tensor:
        t = y.shape[0]
        logits = self.model.decoder(self.model.trunk(inp)[-t:])  # decode the window only: the buffer has no loss
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    def learn(self, x: Tensor, y: Tensor, class_id: int | None = None) -> Tensor:
        if self.buffer is not None and self.buffer.shape[1] != x.shape[1]:
            raise ValueError(f"the buffer holds {self.buffer.shape[1]} streams, the window {x.shape[1]}")
        if 0 < self.context < x.shape[0]:
            raise ValueError(f"the Transformer's input holds {self.context} tokens per stream, fewer than the window "
                             f"({x.shape[0]}): give a larger calm.size_factor or a smaller calm.window")
        self.step += 1
        for group in self.optimizer.param_groups:
            group["lr"] = self._lr(self.step)
        inp = self._append(self.buffer, x)
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
            self.optimizer.step()
            if it < self.li - 1:
                if self.repeat_window:
                    inp = self._append(inp, x)
                loss = self._loss(inp, y)
        if self.context > 0:
            self.buffer = inp
        return first

    def gate_weights(self) -> Tensor | None:
        return None

    def on_fragment(self, index: int) -> None:
        pass

    @contextmanager
    def predictor(self, class_id: int | None = None):
        """Next-token log-probabilities given the buffer and the tokens fed since, at most `context` tokens (the
        window's length without a buffer), eval mode, no gradient; the learner's buffer is not changed."""
        context, longest = self.buffer, self.context or self.window

        def step(x: Tensor) -> Tensor:
            nonlocal context
            context = (x if context is None else torch.cat([context, x]))[-longest:]
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
