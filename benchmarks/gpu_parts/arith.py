"""arith on the device: paper.yaml's padded packs through the trainer the `arith_train_*` rules call.

Each pack (every setting of one model and number of steps, zero-padded to one input and hidden size) is built as
`train.Steps`, the object `train_members` drives, and its training step is timed in each `arith.cuda_step` mode:
eager, replayed as a CUDA graph, and (on CUDA, the heaviest pack only: each shape compiles for seconds) graph with
the stream's hash compiled; one evaluation (both fixed sets and the sparsity error) is timed apart. The projection
sums, over the plan's packs, steps x step time + evaluations x evaluation time. Packs are measured heaviest first; a
pack left when the time runs out is projected from the measured pack nearest in padded elements per step, scaled.
"""

from __future__ import annotations

import itertools
import time

import torch

from gpu_parts import agreement, projection
from reprobench.arith import train as trainer
from reprobench.arith.grid import Grid, Pack

ESTIMATE = "27-36 GPU-hours (launch and memory-traffic counts, README)"


def _config(section: dict, iterations: int, dtype: str = "float32", sets: int | None = None) -> trainer.TrainConfig:
    return trainer.TrainConfig(iterations=iterations, batch_size=section["batch_size"],
                               learning_rate=section["learning_rate"], eval_every=section["eval_every"],
                               validation_size=sets or section["validation_size"],
                               test_size=sets or section["test_size"], dtype=dtype)


def _elements(pack: Pack, batch_size: int) -> int:
    """Padded batch elements per step: runs x batch x the pack's input size."""
    return len(pack.members()) * batch_size * pack.input_size


def _measure(ctx, pack: Pack, section: dict, seconds: float, compiled: bool) -> dict:
    """Step times of one pack in each mode, its evaluation time, and the syncs of every mode's step."""
    members = pack.members()
    settings, seeds = [m[0] for m in members], [m[1] for m in members]
    cfg = _config(section, pack.iterations)
    out = {"pack": pack.rule, "runs": len(members), "input_size": pack.input_size,
           "hidden_size": max(s.hidden_size for s in settings), "steps_in_plan": pack.iterations + 1}
    counter = itertools.count(1)  # steps other than 0: no evaluation falls in a step call
    run = None
    for mode in ("eager", "graph") + (("compiled",) if compiled else ()):
        run = trainer.Steps(settings, seeds, cfg, ctx.device, cuda_step=mode)

        def step(run=run):
            run.step(next(counter))

        timed = ctx.rate(step, len(members), seconds / 3, warmup=trainer.Steps.WARMUP + 2)
        out |= {f"{mode}_{k}": v for k, v in timed.items()}
        out |= {f"{mode}_{k}": v for k, v in ctx.peak_memory_mb().items()}
        out |= {f"{mode}_{k}": v for k, v in ctx.syncs(step).items()}
    ctx.synchronize()
    t0 = time.perf_counter()
    with torch.no_grad():
        for split in run.data.eval_sets:
            run.data.evaluate(run.net, split).cpu()
        run.net.sparsity_error().cpu()
    out["evaluation_s"] = time.perf_counter() - t0
    return out


def _agreement(ctx, pack: Pack, section: dict, steps: int) -> dict:
    """A few float64 steps of a small padded pack (two settings of the largest pack's model, two seeds each, at
    its padded sizes) on the device (replayed as a graph there) and on the CPU: each run's losses and parameters."""
    settings = [s for s, _ in pack.members()]
    chosen = [min(settings, key=lambda s: (s.input_size, s.hidden_size)),
              max(settings, key=lambda s: (s.input_size, s.hidden_size))]
    members = [(s, seed) for s in chosen for seed in (0, 1)]
    cfg = _config(section, steps, "float64", sets=100)

    def train(device, mode, config=cfg):
        run = trainer.Steps([m[0] for m in members], [m[1] for m in members], config, device, cuda_step=mode)
        losses = torch.stack([run.step(i).clone() for i in range(steps)])
        return [losses] + [p.detach() for p in run.net.parameters()]

    sizes = " and ".join(f"{s.input_size}/{s.hidden_size}" for s in chosen)
    graph = train(ctx.device, "graph" if ctx.cuda else "eager")
    out = agreement(graph, train(torch.device("cpu"), "eager"), 1e-9,
                    f"per-run losses of {steps} steps and final parameters, runs of input/hidden {sizes} padded "
                    "together, seeds 0 and 1 (device: replayed as a CUDA graph where CUDA; CPU: the eager trainer)",
                    steps)
    if ctx.cuda:  # does each cuda_step give the eager step's bits on the device, in float64 and float32?
        out["bitwise_equal_to_eager"] = {}
        for dtype in ("float64", "float32"):
            config = _config(section, steps, dtype, sets=100)
            eager = train(ctx.device, "eager", config)
            for mode in ("graph", "compiled"):
                other = graph if (mode, dtype) == ("graph", "float64") else train(ctx.device, mode, config)
                out["bitwise_equal_to_eager"][f"{mode} {dtype}"] = all(map(torch.equal, eager, other))
    return out


def check(ctx) -> dict:
    section = ctx.paper("arith")
    packs = Grid(section).packs()
    batch_size = section["batch_size"]
    packs.sort(key=lambda p: -_elements(p, batch_size) * (p.iterations + 1))  # the plan's heaviest first
    if ctx.quick:  # two small settings of the heaviest pack, two seeds each
        heaviest = packs[0]
        small = sorted(heaviest.settings, key=lambda s: (s.input_size, s.hidden_size))[:2]
        packs = [Pack(heaviest.iterations, tuple(small), (2, 2))]
        section = section | {"validation_size": 200, "test_size": 200}
    agree = _agreement(ctx, packs[0], section, 3 if ctx.quick else 10)
    ctx.keep("agreement", agree)
    measured = []
    for pack in packs:  # the heaviest in full; the others while the time lasts (each builds its data for seconds)
        if measured and ctx.left() < (5 if ctx.quick else 20):
            break
        seconds = (1.5 if ctx.quick else 9.0) if not measured else min(4.0, 0.1 * ctx.left())
        measured.append(_measure(ctx, pack, section, seconds, ctx.cuda and not measured))
        ctx.keep(pack.rule, measured[-1])
    unmeasured = packs[len(measured):]

    def plan_hours(mode: str) -> float | None:
        """The plan's device-hours with every pack's step in `mode` (None where a measured pack lacks it)."""
        total = 0.0
        for pack in packs:
            evals = pack.iterations // section["eval_every"] + 1
            done = next((m for m in measured if m["pack"] == pack.rule), None)
            scale = 1.0
            if done is None:  # the measured pack nearest in elements per step, scaled by them
                done = min(measured, key=lambda m: abs(m["runs"] * m["input_size"] - len(pack.members()) *
                                                   pack.input_size))
                scale = _elements(pack, batch_size) / (done["runs"] * batch_size * done["input_size"])
            if mode + "_step_ms" not in done:
                return None
            total += scale * ((pack.iterations + 1) * done[mode + "_step_ms"] / 1e3 + evals * done["evaluation_s"])
        return total / 3600

    top = measured[0]
    units = sum((p.iterations + 1) * len(p.members()) for p in packs)  # run-steps of the plan
    hours = {mode: plan_hours(mode) for mode in trainer.CUDA_STEPS}
    modes = "; ".join(f"{mode}: {top[mode + '_rate']:,.0f} seed-steps/s, {top[mode + '_step_ms']:.3g} ms per step, "
                      f"{top[mode + '_syncs_per_step']:g} syncs, {top[mode + '_peak_memory_mb']:,.0f} MiB"
                      for mode in trainer.CUDA_STEPS if mode + "_rate" in top)
    plan = ", ".join(f"{mode} {h:,.1f}" for mode, h in hours.items() if h is not None)
    if not ctx.cuda:
        plan += " (graph and compiled run eagerly on a CPU; compiled is measured on CUDA only)"
    return {
        "setting": f"{'quick: ' if ctx.quick else ''}{top['pack']}: {top['runs']} runs padded to input "
                   f"{top['input_size']}, hidden {top['hidden_size']}, batch {batch_size}, float32, eager step",
        "unit": "seed-steps", "rate": top["eager_rate"], "steps": top["eager_steps"],
        "seconds": top["eager_seconds"], "step_ms": top["eager_step_ms"],
        "peak_memory_mb": top["eager_peak_memory_mb"], "memory_counter": top["eager_memory_counter"],
        "syncs_per_step": top["eager_syncs_per_step"], "sync_points": top["eager_sync_points"],
        "sync_counter": top["eager_sync_counter"], "agreement": agree,
        "projection": projection(units, units / (hours["eager"] * 3600), ESTIMATE,
                                 f"{len(packs)} pack(s) ({len(measured)} measured), {units:.3g} run-steps: each pack's "
                                 f"steps x its step time + its evaluations x one evaluation's time; device-hours by "
                                 f"arith.cuda_step: {plan}"),
        "subparts": measured,
        "notes": [f"the heaviest pack by arith.cuda_step: {modes}",
                  f"one evaluation (2 x {section['validation_size']} samples per run, sparsity) of the heaviest pack: "
                  f"{top['evaluation_s']:.3g} s, every {section['eval_every']} steps",
                  "packs not measured in the time: " + (", ".join(p.rule for p in unmeasured) or "none")]
                 + [f"the same {agree['steps']} steps on the device, each cuda_step against eager, bit for bit: " +
                    ", ".join(f"{k} {'equal' if v else 'differs'}" for k, v in bits.items())
                    for bits in [agree.get("bitwise_equal_to_eager")] if bits],
    }
