"""Throughput of WADE's two costs against their baselines, in one run.

    python benchmarks/wade_throughput.py [--task 5] [--rules 32] [--device auto] [--evaluations 20]

Reservoirs: (a) vectorised: every rule of the chunk evolved in one tensor, and the test set scored for a block of
checkpoints in one batched product (reprobench.wade.reservoir.run); (b) baseline: the reference's structure, one
rule at a time and one test evaluation per checkpoint. Both produce the same accuracy curves (checked here).
Prints seconds per rule-run and the ratio.

Trained models' test evaluation (after every optimiser step, most of a run's time): (a) sequence_models.accuracy,
length buckets and outputs at the supervised items only; (b) baseline: every test length group through the whole
model (the reference evaluates sequence by sequence, slower still). Both give the same accuracy (checked here).
Prints milliseconds per evaluation of each model and the ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from reprobench.core.device import choose_device, describe
from reprobench.wade import readout, reservoir, sequence_models, tasks


def looped(dataset, seed, rules, device):
    """One rule at a time; the readout scores the test set after every checkpoint on its own."""
    out = {}
    for rule in rules:
        out.update(reservoir.run(dataset, "reca", seed, rules=[rule], rules_per_chunk=1, device=device,
                                 score_block=1))
    return out


@torch.no_grad()
def grouped_accuracy(net, dataset) -> float:
    """The baseline evaluation: each test length group as one batch through the whole model."""
    net.eval()
    groups = {}
    for i in np.flatnonzero(~dataset.train):
        groups.setdefault(len(dataset.tokens[i]), []).append(i)
    correct = total = 0
    for idx in groups.values():
        logits = net(torch.tensor(np.stack([dataset.tokens[i] for i in idx])))
        for row, i in enumerate(idx):
            mask = dataset.masks[i]
            correct += int((logits[row, mask - 1].argmax(-1) == torch.tensor(dataset.tokens[i][mask])).sum())
            total += len(mask)
    return correct / total


def evaluation(dataset, repeats: int) -> None:
    test = sequence_models.TestSet(dataset, "cpu")
    for model, config in sequence_models.SEQUENCE_RUNS:
        torch.manual_seed(0)
        net = sequence_models.build(model, len(dataset.vocabulary), config)
        times = {}
        for name, fn in (("buckets", lambda net=net: float(sequence_models.accuracy(net, test))),
                         ("groups", lambda net=net: grouped_accuracy(net, dataset))):
            fn()
            t0 = time.perf_counter()
            for _ in range(repeats):
                value = fn()
            times[name] = ((time.perf_counter() - t0) / repeats, value)
        (fast, a), (slow, b) = times["buckets"], times["groups"]
        print(f"{model + '/' + config:22s} evaluation: {1e3 * fast:7.1f} ms, baseline {1e3 * slow:7.1f} ms, ratio "
              f"{slow / fast:5.1f} x (accuracy {a:.4f} vs {b:.4f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", type=int, default=5)
    parser.add_argument("--rules", type=int, default=32, help="how many rules (0..N-1) to time")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--evaluations", type=int, default=20, help="timed test evaluations per trained model")
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
    evaluation(dataset, args.evaluations)


if __name__ == "__main__":
    main()
