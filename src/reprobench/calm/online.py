"""The online protocol (specs/calm.md 1.11, 3.2): every batch of the stream is scored, then trained on, once, in
order; nothing is held out. Drives any learner with the interface of reprobench.calm.learners (a user's too).

    result = run_online(learner, stream, device)       # OnlineResult: per-batch losses and gate weights
    metrics = compute_metrics(result.loss, *stream.batch_labels(), stream.class_names)

Losses and weights stay on the device until the end (or a checkpoint): no host sync per batch. With `checkpoint`,
the run saves everything an exact resume needs (learner state, the losses so far, the batch to resume at, torch's
generators, the samples so far) at most every `checkpoint_every_s` seconds; started again with the same identity,
it continues from there and produces the same numbers as an uninterrupted run. A `sampler`
(reprobench.calm.samples.Sampler) is called after every batch and keeps Appendix D's text in `sampler.texts`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from reprobench.calm.stream import Stream
from reprobench.core import checkpoint as checkpoints
from reprobench.core.progress import Progress, log


@dataclass
class OnlineResult:
    loss: np.ndarray  # (n_batches,) mean cross-entropy of each batch before its update, nats
    weights: np.ndarray | None  # (n_batches, N) gate weights used for each batch, or None
    samples: dict[str, str]  # Appendix D's generated text by stage (empty without a sampler)


def learn_batch(learner, batch, device: torch.device, losses: torch.Tensor, weights: torch.Tensor | None):
    """One batch of the protocol, with no host sync: the batch to the device, test-then-train, its loss into
    `losses` and the gate weights into `weights` (made at the first batch with weights: returned)."""
    if batch.first_of_fragment:
        learner.on_fragment(batch.fragment)
    x = batch.x.to(device, non_blocking=True)
    y = batch.y.to(device, non_blocking=True)
    losses[batch.index] = learner.learn(x, y, batch.class_id if learner.oracle else None)
    w = learner.gate_weights()
    if w is not None:
        if weights is None:
            weights = torch.full((len(losses), w.shape[0]), float("nan"), device=device)
        weights[batch.index] = w
    return weights


def run_online(learner, stream: Stream, device, checkpoint: str | None = None, identity: dict | None = None,
               checkpoint_every_s: float = 600.0, desc: str = "calm", stop_after: int | None = None,
               sampler=None) -> OnlineResult:
    """Test-then-train over the whole stream. The learner gets the class id only if it is an oracle (Ind. LSTM),
    and `on_fragment(index)` when a fragment starts. `stop_after` ends the run early after that many batches of
    this call (tests of the resume)."""
    device = torch.device(device)
    n = len(stream)
    losses = torch.full((n,), float("nan"), device=device)
    weights = None
    start = 0
    blob = checkpoints.load(checkpoint, identity or {})
    if blob is not None:
        learner.load_state_dict(blob["learner"])
        start = int(blob["at"])
        losses[:start] = torch.as_tensor(blob["loss"][:start], device=device)
        if blob["weights"] is not None:
            weights = torch.full((n, blob["weights"].shape[1]), float("nan"), device=device)
            weights[:start] = torch.as_tensor(blob["weights"][:start], device=device)
        checkpoints.restore_rng_states(blob["torch_rng"], device)
        if sampler is not None:
            sampler.texts = dict(blob["samples"])
        log(f"resuming from checkpoint {checkpoint} at batch {start} of {n}")
    progress = Progress(n, desc)
    progress.update(start)
    last_save, done = time.monotonic(), 0
    for batch in stream.iter_from(start):
        weights = learn_batch(learner, batch, device, losses, weights)
        if sampler is not None:
            sampler(learner, batch, device)
        progress.update(1)
        done += 1
        at = batch.index + 1
        if checkpoint and (time.monotonic() - last_save >= checkpoint_every_s or done == stop_after):
            checkpoints.save(checkpoint, identity or {}, learner=learner.state_dict(), at=at,
                             loss=losses[:at].cpu().numpy(),
                             weights=None if weights is None else weights[:at].cpu().numpy(),
                             torch_rng=checkpoints.rng_states(device),
                             samples={} if sampler is None else dict(sampler.texts))
            last_save = time.monotonic()
        if done == stop_after:
            break
    progress.close()
    return OnlineResult(losses.cpu().numpy(), None if weights is None else weights.cpu().numpy(),
                        {} if sampler is None else dict(sampler.texts))
