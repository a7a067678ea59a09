"""Throughput of the batched arith trainer against one model per seed, measured in one run.

    python benchmarks/arith_throughput.py [--device auto] [--seeds 16] [--steps 300] [--estimate]

Prints optimiser steps x seeds per second for (a) all seeds in one batched model and (b) a loop that
trains one model per seed (the reference's way), and their ratio. With --estimate it also measures the
batched rate at the paper's batch shapes (100 seeds for the table, 50 for the sweeps, input sizes 100 and
300) and extrapolates the wall time of the full 4800-run grid of paper.yaml on this device, one job at a time.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from reprobench.arith.grid import Grid, Setting
from reprobench.arith.train import TrainConfig, train
from reprobench.core.config import load
from reprobench.core.device import choose_device, describe

ROOT = Path(__file__).resolve().parents[1]


def rate(model: str, seeds: list[int], steps: int, device, input_size: int = 100, repeats: int = 1) -> float:
    """Optimiser steps x seeds per second of one batched model (evaluation only at the first and last step)."""
    setting = Setting("operations", model, "mul", input_size, 2, 0.5, 0.25, (1.0, 2.0), (2.0, 6.0))
    paper = {"batch_size": 128, "learning_rate": 1e-3}
    cfg = TrainConfig(iterations=steps, eval_every=steps, validation_size=1000, test_size=1000, **paper)
    train(setting, seeds, TrainConfig(iterations=5, eval_every=5, validation_size=100, test_size=100, **paper), device,
          progress=False)  # warm-up (allocations, kernels)
    best = float("inf")
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        train(setting, seeds, cfg, device, progress=False)
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return (steps + 1) * len(seeds) / best


def estimate_grid(device, steps: int) -> None:
    grid = Grid(load([str(ROOT / "config.yaml"), str(ROOT / "paper.yaml")])["arith"])
    shapes = {}
    total_s, total_runs, total_steps = 0.0, 0, 0
    for s in grid.settings():
        n_seeds = len(grid.seeds(s.experiment))
        key = (s.model, n_seeds, s.input_size, s.hidden_size)
        if key not in shapes:
            shapes[key] = rate(s.model, list(range(n_seeds)), steps, device, s.input_size) / n_seeds  # job steps/s
            print(f"  {s.model:8s} seeds={n_seeds:3d} n={s.input_size:3d} h={s.hidden_size:2d}: "
                  f"{shapes[key]:8.1f} batched steps/s", flush=True)
        iterations = grid.iterations(s) + 1
        total_s += iterations / shapes[key]
        total_runs += n_seeds
        total_steps += iterations * n_seeds
    print(f"full grid: {total_runs} runs, {total_steps:.3g} optimiser steps x seeds; "
          f"estimated {total_s / 3600:.1f} device-hours on {describe(device)}, one training job at a time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--model", default="nalu")
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--estimate", action="store_true", help="extrapolate the paper grid's device-hours")
    args = parser.parse_args()
    device = choose_device(args.device, args.threads)
    seeds = list(range(args.seeds))
    print(f"device {describe(device)}, model {args.model}, {args.seeds} seeds, {args.steps + 1} steps, "
          f"torch threads {torch.get_num_threads()}")
    batched = rate(args.model, seeds, args.steps, device, repeats=2)
    # One model per seed, each seed timed on its own (mean time per seed-step over the seeds)
    seconds_per_seed_step = sum(1 / rate(args.model, [seed], args.steps, device) for seed in seeds) / len(seeds)
    looped = 1 / seconds_per_seed_step
    print(f"batched  : {batched:12.1f} steps x seeds / s")
    print(f"per seed : {looped:12.1f} steps x seeds / s")
    print(f"ratio    : {batched / looped:12.1f} x")
    if args.estimate:
        estimate_grid(device, args.steps)


if __name__ == "__main__":
    main()
