"""Throughput of the vectorised ReCA run against a one-rule-at-a-time, one-checkpoint-at-a-time loop.

    python benchmarks/wade_throughput.py [--task 5] [--rules 32] [--device auto] [--estimate]

(a) vectorised: every rule of the chunk evolved in one tensor, and the test set scored for a block of
    checkpoints in one batched product (reprobench.wade.reservoir.run);
(b) baseline: the reference's structure, one rule at a time and one test evaluation per checkpoint.
Both produce the same accuracy curves (checked here). Prints seconds per rule-run and the ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from reprobench.core.device import choose_device, describe
from reprobench.wade import readout, reservoir, tasks


def looped(dataset, seed, rules, device):
    """One rule at a time; the readout scores the test set after every checkpoint on its own."""
    out = {}
    for rule in rules:
        out.update(reservoir.run(dataset, "reca", seed, rules=[rule], rules_per_chunk=1, device=device,
                                 score_block=1))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", type=int, default=5)
    parser.add_argument("--rules", type=int, default=32, help="how many rules (0..N-1) to time")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    device = choose_device(args.device, args.threads)
    dataset = tasks.generate(args.task, 12305, tasks.PAPER_MAX_SEQUENCES)
    rules = list(range(args.rules))
    n_items = int(sum(len(m) for m, t in zip(dataset.masks, dataset.train) if t))
    print(f"task {args.task} ({len(dataset.tokens)} sequences, {n_items} training items, "
          f"{readout.n_checkpoints(n_items)} checkpoints), {len(rules)} rules, {describe(device)}, "
          f"torch threads {torch.get_num_threads()}")
    t0 = time.perf_counter()
    fast = reservoir.run(dataset, "reca", 12305, rules=rules, rules_per_chunk=len(rules), device=device)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    slow = looped(dataset, 12305, rules, device)
    t_slow = time.perf_counter() - t0
    worst = max(float(np.abs(fast[r] - slow[r]).max()) for r in rules)
    print(f"vectorised: {t_fast / len(rules):8.3f} s per rule-run")
    print(f"looped    : {t_slow / len(rules):8.3f} s per rule-run")
    print(f"ratio     : {t_slow / t_fast:8.1f} x   (largest accuracy difference {worst:.2e})")


if __name__ == "__main__":
    main()
