"""Batched training of many runs at once: the seeds of one setting, or a pack of settings (specs/arith.md, section 3).

Adam (lr 1e-3, defaults otherwise) on plain MSE, a fresh batch of 128 per step, iterations + 1 steps.
Every `eval_every` steps, before that step's update, the validation (interpolation) and test
(extrapolation) MSE and the sparsity error are recorded; the training loss of that step's batch too.
A seed whose loss turns NaN is ended, as the reference did, and keeps the curve it had.

Long runs write a checkpoint every few minutes (atomically) and resume from it; because the training
stream is a pure function of (seed, step), a resumed run is identical to an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import torch

from reprobench.arith import data
from reprobench.arith.grid import Setting
from reprobench.arith.models import EPS, LAYERS, BatchedNetwork
from reprobench.arith.user_units import UserNetwork
from reprobench.core import checkpoint as checkpoints
from reprobench.core.plugins import spec_of
from reprobench.core.progress import Progress, log

FUSED_FROM = 2000  # optimiser steps from which a CPU run draws its batches with the numba kernel (same bits)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """The training settings of one job; the values come from the config's `arith` section (documented there)."""

    iterations: int
    batch_size: int
    learning_rate: float
    eval_every: int
    validation_size: int
    test_size: int
    dtype: str = "float32"  # the reference's precision; float64 for numerical checks

    @property
    def torch_dtype(self):
        return getattr(torch, self.dtype)


def _groups(values: list) -> dict:
    """{value: [indices]} in first-seen order."""
    out: dict = {}
    for i, v in enumerate(values):
        out.setdefault(v, []).append(i)
    return out


class SeedBatch:
    """The data side of a training job's members (one (setting, seed) each; a pack's settings share their model):
    subset masks, stream keys, per-member operations, ranges and input sizes, fixed evaluation sets.

    A member's batches, targets and evaluation sets do not depend on the other members: the stream is counter-based
    per member, targets are elementwise, and each distinct range's fixed set is evaluated on just its members."""

    def __init__(self, settings, seeds: list[int], cfg: TrainConfig, device, fused: bool | None = None,
                 compiled: bool = False):
        settings = [settings] * len(seeds) if isinstance(settings, Setting) else list(settings)
        first = settings[0]
        if {s.model for s in settings} != {first.model}:
            raise ValueError("the settings of one training job must share their model")
        widths = [s.input_size for s in settings]
        n = max(widths)  # a padded pack's members of smaller input sizes are zero-padded to the largest
        draws = [data.dataset_rng(seed, s.input_size, s.subset, s.overlap) for s, seed in zip(settings, seeds)]
        self.subsets = [d[0] for d in draws]
        self.keys = torch.tensor([d[1] for d in draws], dtype=torch.int64, device=device)
        self.settings, self.cfg, self.device = settings, cfg, device
        ops = _groups([s.operation for s in settings])
        self.operations = [(op, None if len(ops) == 1 else torch.tensor(idx, device=device))
                           for op, idx in ops.items()]
        # the first layer's log(|x| + eps) made with the batch where the model takes it (float32 runs only)
        logs = LAYERS.get(first.model, ("",))[0] == "nalu" and cfg.torch_dtype == torch.float32
        # the numba kernel costs about 1 s of start-up (import and cached load) and saves 0.5 ms or more per step
        if fused is None:
            fused = torch.device(device).type == "cpu" and cfg.iterations + 1 >= FUSED_FROM
        self.stream = data.BatchStream([d[1] for d in draws], cfg.batch_size, n,
                                       [s.interpolation[0] for s in settings],
                                       [s.interpolation[1] for s in settings], self.subsets, device, fused=fused,
                                       log_eps=EPS if logs else None, widths=widths, compiled=compiled)
        masks = data.subset_masks(self.subsets, n)  # (members, 2, n) 0/1, for the fixed sets' targets
        self.eval_sets = {}  # split -> [(member index tensor or None for all, x, targets (members, samples))]
        for split, fork_seed, size, attr in (("valid", data.VALIDATION_FORK_SEED, cfg.validation_size, "interpolation"),
                                             ("test", data.TEST_FORK_SEED, cfg.test_size, "extrapolation")):
            groups = _groups([(getattr(s, attr), s.input_size) for s in settings])
            self.eval_sets[split] = []
            for ((low, high), width), idx in groups.items():
                x = data.fixed_set(fork_seed, size, width, low, high)  # each input size's own first draw
                t = np.stack([data.targets(x, masks[i:i + 1, :, :width], settings[i].operation)[0] for i in idx])
                x = np.pad(x, ((0, 0), (0, n - width)))
                self.eval_sets[split].append((None if len(groups) == 1 else torch.tensor(idx, device=device),
                                              torch.tensor(x, dtype=cfg.torch_dtype, device=device),
                                              torch.tensor(t, dtype=cfg.torch_dtype, device=device)))

    @property
    def log_x(self):
        """log(|x| + EPS) of the last batch where the stream makes it, else None (the model then takes it)."""
        return self.stream.log_x

    def batch(self, step: int):
        """x (members, batch, input) and the targets, computed in float64 from x, in the run's dtype. x (and
        log_x) are buffers that the next call overwrites."""
        x, ab = self.stream.next(step)  # reused buffers; ab: (members, 2, batch) float64 subset sums
        if self.operations[0][1] is None:
            t = data.apply_operation(self.operations[0][0], ab[:, 0], ab[:, 1])
        else:
            t = torch.empty_like(ab[:, 0])
            for op, idx in self.operations:
                t[idx] = data.apply_operation(op, ab[idx, 0], ab[idx, 1])
        return x.to(self.cfg.torch_dtype), t.to(self.cfg.torch_dtype)

    def evaluate(self, net, split: str, chunk: int = 1000):
        """(members,) MSE on the fixed sets, in row chunks so that memory stays small for many members."""
        total = torch.zeros(len(self.settings), dtype=torch.float64, device=self.device)
        for idx, x, t in self.eval_sets[split]:
            part = torch.zeros(t.shape[0], dtype=torch.float64, device=t.device)
            for start in range(0, x.shape[0], chunk):
                err = net(x[start:start + chunk], members=idx) - t[:, start:start + chunk]
                part += (err.double() ** 2).sum(1)
            if idx is None:
                total = part
            else:
                total[idx] = part
        return total / self.eval_sets[split][0][1].shape[0]


class FusedAdam:
    """torch.optim.Adam(lr, fused=True) with its other defaults (betas 0.9, 0.999, eps 1e-8, no weight decay):
    the same two kernels on the same state, so the same bits, without torch.optim's constructor, which imports
    torch._dynamo (about 2 s of every training process's start). Every parameter has a gradient at every step
    here (ended seeds get zeros), so the state is made at once rather than at the first step."""

    def __init__(self, params, lr: float):
        self.params, self.lr = list(params), lr
        self.steps = [torch.tensor(0.0, dtype=torch.float32, device=p.device) for p in self.params]
        self.exp_avgs = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
        self.exp_avg_sqs = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        torch._foreach_add_(self.steps, 1)
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]  # a user's unused ones
        torch._fused_adam_(self.params, grads, self.exp_avgs, self.exp_avg_sqs, [],
                           self.steps, amsgrad=False, lr=self.lr, beta1=0.9, beta2=0.999, weight_decay=0.0,
                           eps=1e-8, maximize=False, grad_scale=None, found_inf=None)

    def state_dict(self) -> dict:
        return {"step": self.steps, "exp_avg": self.exp_avgs, "exp_avg_sq": self.exp_avg_sqs}

    def load_state_dict(self, state: dict) -> None:
        for name, mine in (("step", self.steps), ("exp_avg", self.exp_avgs), ("exp_avg_sq", self.exp_avg_sqs)):
            for dst, src in zip(mine, state[name], strict=True):
                dst.copy_(src)


@dataclasses.dataclass
class State:
    """Everything a checkpoint holds besides the model and optimiser."""

    step: int
    alive: np.ndarray  # (seeds,) bool: not yet ended by a NaN
    ended_at: np.ndarray  # (seeds,) int64: evaluation step at which a NaN was found, -1 if none
    records: list  # [(step, split, metric, values (seeds,) float64, mask (seeds,) bool)]
    # (seeds,) bool: a NaN seen since the last evaluation; saved so that a resumed run ends the same seeds
    nan_seen: np.ndarray | None = None


def _load_checkpoint(path: str | None, net, opt, identity: dict) -> State | None:
    blob = checkpoints.load(path, identity)
    if blob is None:
        return None
    net.load_state_dict(blob["model"])
    opt.load_state_dict(blob["optimizer"])
    log(f"resuming from checkpoint {path} at step {blob['state']['step']}")
    return State(**blob["state"])


def train(setting: Setting, seeds: list[int], cfg: TrainConfig, device, checkpoint: str | None = None,
          checkpoint_every_s: float = 600.0, progress: bool = True, cuda_step: str = "eager") -> tuple[dict, State]:
    """Train all `seeds` of `setting` together; returns ({seed: curve columns}, final state)."""
    columns, state = train_members([setting] * len(seeds), seeds, cfg, device, checkpoint, checkpoint_every_s,
                                   progress, cuda_step)
    return dict(zip(seeds, columns)), state


CUDA_STEPS = ("eager", "graph", "compiled")


class Steps:
    """One pack's batched model, optimiser and data; `step(step)` takes optimiser step `step` and returns each member's
    loss on its batch (before the update), with no host sync.

    `cuda_step` "graph": the step reads its number from a device tensor (`step_t`, set before each step), so that one
    captured step serves every step: on CUDA, after `WARMUP` eager steps on a side stream, the step is captured once
    as a CUDA graph and replayed (one launch instead of about 117 kernels; the same kernels, so the same bits). The
    batches are then always drawn by the stream's torch ops (the numba kernel is a host call). "compiled": the same,
    with the stream's integer hash compiled into one kernel (`data.hash24`; the same bits, less memory traffic). On a
    CPU the same functions run eagerly: tests/test_arith_train.py and test_arith_reference.py check them bit for
    bit."""

    WARMUP = 3

    def __init__(self, settings: list[Setting], seeds: list[int], cfg: TrainConfig, device, cuda_step: str = "eager"):
        if cuda_step not in CUDA_STEPS:
            raise ValueError(f"cuda_step '{cuda_step}' is not one of {', '.join(CUDA_STEPS)}")
        user = spec_of(settings[0].model)  # a user's unit (docs/PLUGINS.md): one module per member, eager steps only
        cuda_graph = cuda_step != "eager" and not user
        self.device = torch.device(device)
        self.data = SeedBatch(settings, seeds, cfg, self.device, fused=False if cuda_graph else None,
                              compiled=cuda_graph and cuda_step == "compiled")
        network = (lambda *a: UserNetwork(user, *a)) if user else (lambda *a: BatchedNetwork(settings[0].model, *a))
        self.net = network([s.input_size for s in settings], [s.hidden_size for s in settings], seeds,
                           cfg.torch_dtype).to(self.device)
        self.opt = FusedAdam(self.net.parameters(), cfg.learning_rate)  # one kernel for all parameters
        self.nan_seen = torch.zeros(len(seeds), dtype=torch.bool, device=self.device)
        self.step_t = torch.zeros((), dtype=torch.int64, device=self.device) if cuda_graph else None
        self.graph = self.graph_out = None
        self.eager_steps = 0
        if cuda_graph and self.device.type == "cuda":
            self.side = torch.cuda.Stream(self.device)

    def _step(self, step):
        x, t = self.data.batch(step)
        per_seed = ((self.net(x, self.data.log_x) - t) ** 2).mean(1)
        self.nan_seen |= torch.isnan(per_seed)
        loss = torch.where(self.nan_seen, torch.zeros_like(per_seed), per_seed).sum()  # each seed's own gradient
        if isinstance(self.net, UserNetwork):
            loss = loss + self.net.regularizer()
            if not loss.requires_grad:  # a unit without parameters (a scripted one): nothing to learn
                return per_seed.detach()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return per_seed.detach()

    def step(self, step: int):
        if self.step_t is None:
            return self._step(step)
        self.step_t.fill_(step)
        if self.device.type != "cuda":
            return self._step(self.step_t)
        if self.graph is None and self.eager_steps >= self.WARMUP:
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.graph_out = self._step(self.step_t)
        if self.graph is not None:
            self.graph.replay()
            return self.graph_out
        # warm-up (lazy initialisations before the capture) on a side stream, as torch's CUDA graph notes advise
        self.side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.side):
            out = self._step(self.step_t)
        torch.cuda.current_stream(self.device).wait_stream(self.side)
        self.eager_steps += 1
        return out


def train_members(settings: list[Setting], seeds: list[int], cfg: TrainConfig, device, checkpoint: str | None = None,
                  checkpoint_every_s: float = 600.0, progress: bool = True,
                  cuda_step: str = "eager") -> tuple[list, State]:
    """Train every member (settings[i], seeds[i]) in one batched model (one model; input and hidden sizes may differ,
    padded with exact masks); returns ([curve columns per member], final state). `cuda_step`: see `Steps`."""
    run = Steps(settings, seeds, cfg, device, cuda_step)
    batch, net, opt = run.data, run.net, run.opt
    first = settings[0]
    identity = {"settings": [s.record() for s in settings], "seeds": list(seeds), "config": dataclasses.asdict(cfg)}
    state = _load_checkpoint(checkpoint, net, opt, identity) or State(
        step=0, alive=np.ones(len(seeds), bool), ended_at=np.full(len(seeds), -1), records=[])
    run.nan_seen.copy_(torch.tensor(~state.alive if state.nan_seen is None else state.nan_seen))
    label = f"{first.model} x{len(seeds)} runs of {len(set(settings))} settings"
    bar = Progress(cfg.iterations + 1 - state.step, label) if progress else None
    last_save, since = time.monotonic(), state.step

    for step in range(state.step, cfg.iterations + 1):
        evaluate = step % cfg.eval_every == 0
        if evaluate:  # the only host syncs: once per evaluation
            newly = run.nan_seen.cpu().numpy() & state.alive
            state.ended_at[newly] = step
            state.alive &= ~newly
            if not state.alive.any():
                break
            with torch.no_grad():
                for split in batch.eval_sets:
                    mse = batch.evaluate(net, split)
                    state.records.append((step, split, "mse", mse.cpu().numpy(), state.alive.copy()))
                state.records.append((step, "weights", "sparsity_error", net.sparsity_error().double().cpu().numpy(),
                                      state.alive.copy()))
        per_seed = run.step(step)
        if evaluate:
            state.records.append((step, "train", "loss", per_seed.double().cpu().numpy(), state.alive.copy()))
            if bar is not None:
                bar.update(step + 1 - since, f"alive {int(state.alive.sum())}/{len(seeds)}")
                since = step + 1
            if checkpoint and time.monotonic() - last_save >= checkpoint_every_s:
                state.step, state.nan_seen = step + 1, run.nan_seen.cpu().numpy()
                checkpoints.save(checkpoint, identity, model=net.state_dict(), optimizer=opt.state_dict(),
                                 state=dataclasses.asdict(state))
                last_save = time.monotonic()
    else:
        step = cfg.iterations + 1
    state.step = step
    if bar is not None:
        bar.update(max(0, cfg.iterations + 1 - since))
        bar.close()
    return _curves(seeds, state), state


def _curves(seeds: list[int], state: State) -> list:
    """Per-member tidy columns from the batched records, keeping only the steps where the member was alive."""
    out = []
    for i, seed in enumerate(seeds):
        rows = [(step, split, metric, float(values[i])) for step, split, metric, values, mask in state.records
                if mask[i]]
        out.append({"seed": [seed] * len(rows), "step": [r[0] for r in rows], "split": [r[1] for r in rows],
                    "metric": [r[2] for r in rows], "value": [r[3] for r in rows]})
    return out
