"""Throughput of the arith trainer against this machine's floor and against one model per seed, in one run.

    python benchmarks/arith_throughput.py [--device auto] [--model nalu] [--seeds 100] [--steps 300]
                                          [--loop-seeds 10] [--estimate]

Prints, for one setting (input 100, hidden 2, batch 128, multiplication):
- the floor of one seed-step on this device, from its parts measured here: the fused training stream (the numba
  kernel: splitmix64, subset sums, |x| + eps), the first layer's log, and the six thin GEMMs of the first layer
  (three forward, three weight gradients); their sum is what no step can avoid;
- the trainer's seed-steps/s with all seeds in one batched model (`train.train`, evaluation at the first and last
  step only) and its fraction of the floor;
- one model per seed (the reference's way; `--loop-seeds` of the seeds, each timed alone) and the ratio;
- the kernels of one training step, counted with the torch profiler (on a CPU: the outermost aten operators,
  views and allocations excluded, plus the one numba call; on CUDA: the CUDA kernels).
With --estimate it also measures the batched rate at every run shape of paper.yaml's 4800-run grid and extrapolates
the grid's device-hours on this device, one pack at a time, and prints a GPU estimate for paper.yaml's plan (its
padded packs) from the kernel count and the memory traffic per step (an estimate: its assumptions are printed).

Times on a CPU are this process's CPU time (robust to other work on a shared machine); on CUDA, wall time with
synchronisation.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

import torch

from reprobench.arith import data
from reprobench.arith import train as trainer
from reprobench.arith.grid import Grid, Setting
from reprobench.arith.train import SeedBatch, TrainConfig, train
from reprobench.core.config import load
from reprobench.core.device import choose_device, describe

ROOT = Path(__file__).resolve().parents[1]
PAPER = {"batch_size": 128, "learning_rate": 1e-3}
VIEWS = {"aten::as_strided", "aten::view", "aten::transpose", "aten::expand", "aten::select", "aten::detach",
         "aten::alias", "aten::t", "aten::permute", "aten::unsqueeze", "aten::squeeze", "aten::_reshape_alias",
         "aten::reshape", "aten::empty", "aten::empty_strided", "aten::empty_like", "aten::resize_", "aten::slice",
         "aten::lift_fresh", "aten::_unsafe_view", "aten::result_type", "detach", "aten::zeros_like", "aten::to",
         "aten::_to_copy", "aten::item", "aten::_local_scalar_dense", "aten::is_nonzero"}


def _setting(model: str, input_size: int = 100, hidden: int = 2) -> Setting:
    return Setting("operations", model, "mul", input_size, hidden, 0.5, 0.25, (1.0, 2.0), (2.0, 6.0))


class Clock:
    """CPU time of this process on a CPU, synchronised wall time on CUDA."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def now(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
            return time.perf_counter()
        return time.process_time()

    def best(self, fn, repeats: int = 3, inner: int = 20) -> float:
        """Best over `repeats` of the mean time of `inner` calls (after one warm-up call)."""
        fn()
        best = float("inf")
        for _ in range(repeats):
            t0 = self.now()
            for _ in range(inner):
                fn()
            best = min(best, (self.now() - t0) / inner)
        return best


def floor(model: str, n_seeds: int, device, clock: Clock, input_size: int = 100, hidden: int = 2) -> dict:
    """Seconds per seed-step of each part of the floor."""
    setting = _setting(model, input_size, hidden)
    cfg = TrainConfig(iterations=1, eval_every=1, validation_size=10, test_size=10, **PAPER)
    batch = SeedBatch(setting, list(range(n_seeds)), cfg, device)
    stream = data.BatchStream([int(k) for k in batch.keys.tolist()], 128, input_size, 1.0, 2.0, batch.subsets,
                              device, log_eps=1e-7)
    parts = {}
    if stream.fused:
        kernel, args = data._fused_kernel(), stream._np
        parts["stream (fused kernel)"] = clock.best(lambda: kernel(args[0], 7, *args[1:]))
    else:
        parts["stream (in-place torch ops)"] = clock.best(lambda: stream._draw_in_place(7))
    stream.next(7)
    shifted, logs = stream.x.abs() + 1e-7, stream.log_x
    parts["log"] = clock.best(lambda: torch.log(shifted, out=logs))
    x = stream.x
    w = torch.rand(n_seeds, hidden, input_size, device=device)
    g = torch.rand(n_seeds, 128, hidden, device=device)

    def gemms():
        for _ in range(3):
            torch.bmm(x, w.transpose(1, 2))  # forward: gate, additive and multiplicative paths
            torch.bmm(g.transpose(1, 2), x)  # their weight gradients

    parts["six thin GEMMs"] = clock.best(gemms)
    return {k: v / n_seeds for k, v in parts.items()}


def rate(model: str, seeds: list[int], steps: int, device, clock: Clock, input_size: int = 100, hidden: int = 2,
         repeats: int = 1) -> float:
    """Optimiser steps x seeds per second of `train` (evaluation only at the first and last step)."""
    setting = _setting(model, input_size, hidden)
    cfg = TrainConfig(iterations=steps, eval_every=steps, validation_size=1000, test_size=1000, **PAPER)
    train(setting, seeds, TrainConfig(iterations=5, eval_every=5, validation_size=100, test_size=100, **PAPER), device,
          progress=False)  # warm-up (allocations, the numba kernel)
    best = float("inf")
    for _ in range(repeats):
        t0 = clock.now()
        train(setting, seeds, cfg, device, progress=False)
        best = min(best, clock.now() - t0)
    return (steps + 1) * len(seeds) / best


class _Unfused(data.BatchStream):
    """The stream as CUDA runs it (in-place torch ops), to count that path's operators on a CPU."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **(kwargs | {"fused": False}))


def _inside_aten(event) -> bool:
    """Whether an operator runs inside another aten operator (then it is part of that one's work)."""
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith("aten::"):
            return True
        parent = parent.cpu_parent
    return False


def kernels_per_step(model: str, n_seeds: int, device, fused: bool = True) -> tuple[float, dict]:
    """Kernels of one training step: the profile of 20 steps minus that of 10, over 10."""
    from torch.profiler import ProfilerActivity, profile

    setting = _setting(model)
    counts = {}
    real = data.BatchStream
    for steps in (10, 20):
        cfg = TrainConfig(iterations=steps - 1, eval_every=10**9, validation_size=100, test_size=100, **PAPER)
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        data.BatchStream = real if fused else _Unfused
        try:
            with profile(activities=activities) as prof:
                train(setting, list(range(n_seeds)), cfg, device, progress=False)
        finally:
            data.BatchStream = real
        names = {}
        for e in prof.events():
            if device.type == "cuda":
                if e.device_type == torch.autograd.DeviceType.CUDA:
                    names[e.name] = names.get(e.name, 0) + 1
            elif e.name.startswith("aten::") and e.name not in VIEWS and not _inside_aten(e):
                names[e.name] = names.get(e.name, 0) + 1
        counts[steps] = names
    per_step = {k: (counts[20].get(k, 0) - counts[10].get(k, 0)) / 10 for k in counts[20]}
    per_step = {k: v for k, v in per_step.items() if v > 0}
    total = sum(per_step.values()) + (1 if device.type == "cpu" and fused else 0)  # the numba call
    return total, per_step


def estimate_grid(device, clock: Clock, steps: int) -> tuple[float, float]:
    """Device-hours of paper.yaml's grid, its packs trained one at a time, from batched rates measured here at each
    run shape (100 runs; each run at its own input and hidden size: a CPU packs by shape, unpadded). Returns the
    paper plan's batched steps (summed over its packs) and padded element-steps (runs x batch x padded input), the
    inputs of the GPU estimate."""
    grid = Grid(load([str(ROOT / "config.yaml"), str(ROOT / "paper.yaml")])["arith"])
    rates = {}
    total_s, runs, run_steps, pack_steps, elements = 0.0, 0, 0, 0, 0
    packs = grid.packs()
    for pack in packs:
        members, n_steps = pack.members(), pack.iterations + 1
        runs += len(members)
        run_steps += n_steps * len(members)
        pack_steps += n_steps
        elements += n_steps * len(members) * 128 * pack.input_size
        for (n, h), count in Counter((s.input_size, s.hidden_size) for s, _ in members).items():
            key = (pack.model, n, h)
            if key not in rates:
                rates[key] = rate(pack.model, list(range(100)), steps, device, clock, n, h)
                print(f"  {pack.model:8s} n={n:3d} h={h:2d}: {rates[key]:9,.0f} seed-steps/s", flush=True)
            total_s += n_steps * count / rates[key]
    print(f"full grid: {runs} distinct runs (4800 curve files), {run_steps:.3g} run-steps; estimated "
          f"{total_s / 3600:,.0f} device-hours on {describe(device)} (one core where a CPU); paper.yaml's plan: "
          f"{len(packs)} packs ({grid.cfg['packing']}), {pack_steps:.3g} batched steps")
    return pack_steps, elements


def gpu_estimate(kernels: float, total_steps: float, elements: float, launch_us: float = 4.0,
                 bandwidth: float = 2.0e12) -> None:
    """An estimate, not a measurement: per batched step of a pack, kernels x launch cost; per element of the
    (padded) training batches, the bytes that the CUDA path moves (counted below) at `bandwidth`; the larger of the
    two bounds, and their sum."""
    bytes_per_element = (
        1 * (8 + 8)  # state + index -> z
        + 2 * (3 * 16 + 8 + 16)  # per round: shift, and, xor (r/w int64), multiply
        + 2 * 16  # the last shift and mask
        + (8 + 4) + 3 * 8  # int64 -> float32, scale, span, low
        + 4 + 8 + 2 * (8 + 16) + 16  # the masked float64 subset sums (double copy, mask product, sum)
        + 3 * 8  # |x|, + eps, log
        + 6 * 4  # six GEMMs read x or log x once each
    )
    launch_h = total_steps * kernels * launch_us * 1e-6 / 3600
    traffic_h = elements * bytes_per_element / bandwidth / 3600
    print(f"GPU estimate (not measured; no GPU here): {kernels:.0f} kernels per step at an assumed {launch_us:g} us "
          f"each x {total_steps:.3g} batched steps -> {launch_h:,.1f} h; {bytes_per_element} bytes of memory traffic "
          f"per batch element ({elements:.3g} element-steps, padded) at an assumed {bandwidth / 1e12:g} TB/s -> "
          f"{traffic_h:,.1f} h; the grid: about {max(launch_h, traffic_h):,.0f}-{launch_h + traffic_h:,.0f} "
          "GPU-hours, one pack at a time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--model", default="nalu")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--loop-seeds", type=int, default=10, help="seeds timed alone for the per-seed loop")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--estimate", action="store_true", help="extrapolate the paper grid's device-hours")
    args = parser.parse_args()
    device = choose_device(args.device, args.threads)
    trainer.FUSED_FROM = 0  # the numba stream as in long runs, also in these short timings (on a CPU)
    clock = Clock(device)
    seeds = list(range(args.seeds))
    print(f"device {describe(device)}, model {args.model}, input 100, hidden 2, batch 128, {args.seeds} seeds, "
          f"{args.steps + 1} steps, torch threads {torch.get_num_threads()}", flush=True)
    parts = floor(args.model, args.seeds, device, clock)
    floor_s = sum(parts.values())
    for name, seconds in parts.items():
        print(f"  floor part {name:24s}: {seconds * 1e6:7.2f} us per seed-step")
    print(f"floor     : {floor_s * 1e6:7.2f} us per seed-step = {1 / floor_s:10,.0f} seed-steps/s", flush=True)
    batched = rate(args.model, seeds, args.steps, device, clock, repeats=2)
    print(f"trainer   : {batched:10,.0f} seed-steps/s ({1e6 / batched:.1f} us per seed-step), "
          f"{batched * floor_s:.2f} of the floor ({1 / (batched * floor_s):.2f}x the floor's time)", flush=True)
    loop_seeds = seeds[:args.loop_seeds]
    looped = 1 / (sum(1 / rate(args.model, [seed], args.steps, device, clock) for seed in loop_seeds)
                  / len(loop_seeds))
    print(f"per seed  : {looped:10,.0f} seed-steps/s (one model per seed, mean over {len(loop_seeds)} seeds)")
    print(f"ratio     : {batched / looped:10.1f}x the per-seed loop at {args.seeds} seeds")
    kernels, names = kernels_per_step(args.model, args.seeds, device)
    top = ", ".join(f"{k.removeprefix('aten::')} {v:g}" for k, v in sorted(names.items(), key=lambda kv: -kv[1]))
    print(f"kernels   : {kernels:.0f} per training step ({top}{', numba 1' if device.type == 'cpu' else ''})")
    if args.estimate:
        total_steps, elements = estimate_grid(device, clock, args.steps)
        if device.type == "cpu":
            cuda_kernels, _ = kernels_per_step(args.model, args.seeds, device, fused=False)
            print(f"kernels   : {cuda_kernels:.0f} per training step with the stream as on CUDA (in-place ops)")
            gpu_estimate(cuda_kernels, total_steps, elements)


if __name__ == "__main__":
    main()
