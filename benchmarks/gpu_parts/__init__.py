"""What every part of benchmarks/gpu_check.py shares: the context a part runs in and the fields of its row.

A part is a module `gpu_parts.<key>` with `check(ctx: Context) -> dict`: it builds the benchmark's real training
code (the functions its rules call) at paper.yaml's sizes (tiny sizes with `ctx.quick`), and returns its row:

    setting       what ran (sizes), in words
    unit, rate    the benchmark's own unit (seed-steps, CA-rule steps, tokens, observations, frames) per second,
                  from `ctx.rate` (warm-up excluded, device synchronised)
    steps, seconds, step_ms
    peak_memory_mb                     `ctx.peak_memory_mb()` after the timed steps
    syncs_per_step, sync_points, sync_counter    `ctx.syncs(step)`: host syncs of steady-state steps
    agreement     `agreement(...)`: a few steps on the device against the CPU in float64 (or a stated tolerance)
    projection    `projection(...)`: the paper plan's device-hours from the measured rate, next to today's estimate
    notes         anything a reader needs (what the step includes, what was left out and why)

Parts budget their own time with `ctx.left()`; the harness also kills a part at its hard cap, and then reports
what the part saved with `ctx.keep(key, value)` as it went (a measurement done is not lost with the part).
"""

from __future__ import annotations

import dataclasses
import json
import resource
import time
from pathlib import Path

import torch

from reprobench.core.hostsync import HostSyncs

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = [str(ROOT / "config.yaml"), str(ROOT / "paper.yaml")]


@dataclasses.dataclass
class Context:
    device: torch.device
    quick: bool
    cap_s: float  # the part's own soft time cap, from its process start
    started: float = dataclasses.field(default_factory=time.monotonic)
    partial: str | None = None  # where `keep` saves what the part has measured so far (JSON)
    kept: dict = dataclasses.field(default_factory=dict)

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"

    def left(self) -> float:
        """Seconds left of the part's soft cap."""
        return self.cap_s - (time.monotonic() - self.started)

    def keep(self, key: str, value) -> None:
        """Save a measurement as soon as it is done: if the part is killed at its cap, the harness reports these."""
        self.kept[key] = value
        if self.partial:
            Path(self.partial).write_text(json.dumps(self.kept, default=str))

    def synchronize(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def paper(self, key: str) -> dict:
        """The benchmark's config section at paper scale (config.yaml with paper.yaml over it)."""
        from reprobench.core.config import load

        return load(CONFIGS)[key]

    def rate(self, step, units_per_step: float, seconds: float, warmup: int = 2, min_steps: int = 2,
             max_steps: int | None = None) -> dict:
        """Call `step()` `warmup` times, then until `seconds` have passed (at least `min_steps`, at most `max_steps`
        times), synchronising the device around the timed calls; the rate is units per second of wall time."""
        for _ in range(warmup):
            step()
        self.synchronize()
        self.reset_peak_memory()
        steps, t0 = 0, time.perf_counter()
        while steps < min_steps or (time.perf_counter() - t0 < seconds and (max_steps is None or steps < max_steps)):
            step()
            steps += 1
            if steps % 8 == 0:
                self.synchronize()  # keep the host's clock close to the device's
        self.synchronize()
        elapsed = time.perf_counter() - t0
        return {"steps": steps, "seconds": round(elapsed, 3), "step_ms": round(1e3 * elapsed / steps, 3),
                "rate": units_per_step * steps / elapsed}

    def syncs(self, step, steps: int = 3) -> dict:
        """Host syncs per call of `step()` (already warmed up), counted over `steps` calls, the points named."""
        with HostSyncs(self.device) as counter:
            for _ in range(steps):
                step()
        self.synchronize()
        return counter.report(steps)

    def reset_peak_memory(self) -> None:
        if self.cuda:
            torch.cuda.reset_peak_memory_stats(self.device)

    def peak_memory_mb(self) -> dict:
        """Peak device memory since the timed steps began (CUDA: allocated by torch; CPU: the process's peak
        resident set, setup included)."""
        if self.cuda:
            return {"peak_memory_mb": round(torch.cuda.max_memory_allocated(self.device) / 2**20, 1),
                    "memory_counter": "torch.cuda.max_memory_allocated"}
        return {"peak_memory_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "memory_counter": "peak resident set of the process (setup included)"}


def compared_parameters(net) -> list:
    """A module's parameters as an agreement compares them: without the key part of a self-attention's input bias,
    which adds the same to every score of a softmax row, so that its true gradient is 0 and what a backward computes
    for it is rounding noise, different on every device, that Adam turns into steps (found in S2B's DCEM and CALM's
    Transformer: relative differences of 1e-9 to 1)."""
    out = []
    for name, p in net.named_parameters():
        if name.endswith("in_proj_bias"):
            e = p.shape[0] // 3
            p = torch.cat([p[:e], p[2 * e:]])
        out.append(p.detach().clone())
    return out


def relative_difference(got, want) -> float:
    """max over pairs of ||got - want|| / ||want|| (float64; 0 where both are zero; inf where only `want` is)."""
    worst = 0.0
    for a, b in zip(_flat(got), _flat(want), strict=True):
        a, b = a.detach().double().cpu(), b.detach().double().cpu()
        if a.shape != b.shape:
            raise ValueError(f"shapes differ: {tuple(a.shape)} vs {tuple(b.shape)}")
        if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
            if not torch.equal(torch.isnan(a), torch.isnan(b)) or not torch.equal(a[~torch.isnan(a)],
                                                                                  b[~torch.isnan(b)]):
                return float("inf")
            a, b = torch.nan_to_num(a), torch.nan_to_num(b)
        norm = b.norm().item()
        diff = (a - b).norm().item()
        worst = max(worst, diff / norm if norm else (0.0 if diff == 0 else float("inf")))
    return worst


def _flat(values):
    if isinstance(values, torch.Tensor):
        return [values]
    if isinstance(values, dict):
        return [t for k in sorted(values) for t in _flat(values[k])]
    return [t for v in values for t in _flat(v)]


def agreement(device_values, cpu_values, tolerance: float, what: str, steps: int, dtype: str = "float64") -> dict:
    """The agreement of the same `steps` on the device and on the CPU: `what` names the values compared (tensors,
    or lists / dicts of them), `tolerance` the largest relative difference the algorithm allows in `dtype`."""
    difference = relative_difference(device_values, cpu_values)
    return {"what": what, "steps": steps, "dtype": dtype, "relative_difference": difference,
            "tolerance": tolerance, "within": bool(difference <= tolerance)}


def projection(units: float, rate: float, estimate: str, how: str) -> dict:
    """The paper plan's device-hours at the measured rate (`units` of the rate's unit in the plan), beside the
    README's estimate (`estimate`, quoted as it stands) and how the units were counted (`how`)."""
    return {"units": float(units), "device_hours": units / rate / 3600 if rate > 0 else None,
            "estimate_before": estimate, "how": how}
