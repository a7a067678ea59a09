"""The GPU check: every benchmark's real training code on the device, measured and checked in one command.

    python benchmarks/gpu_check.py [--device auto] [--quick] [--parts arith,wade,calm,s2b,amtlb]
                                   [--out results/gpu_check] [--budget-s 470] [--threads N] [--cap PART=SECONDS]

For each benchmark (a part, `benchmarks/gpu_parts/<key>.py`) it runs the functions the workflow's training rules
call, at paper.yaml's sizes, for a bounded time, and reports per part: the rate in the benchmark's own unit, peak
device memory, host synchronisations per steady-state training step with the sync points named, the agreement of
a few steps on the device with the CPU in float64 (or the tolerance the algorithm allows), and the paper plan's
projected device-hours from the measured rate next to the README's estimate. Writes `gpu_check.json` and
`gpu_check.md` to --out, one log per part beside them, and exits 1 if a part failed.

Each part runs in its own process (its own CUDA context and peak memory; a crash or a hang is reported and the
others still run), under its own time cap; the caps fit in 8 minutes on one H100, 470 s by default with the
process starts. `--quick` runs tiny sizes for a few seconds per part: the CPU check in the test suite
(`--device cpu --quick`) that keeps this script from rotting between GPU runs.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

from reprobench.benchmarks import KEYS

HERE = Path(__file__).resolve().parent
PARTS = KEYS  # one part per registered benchmark: gpu_parts/<key>.py
# soft caps (s) a part budgets itself with, from its process start; the hard cap adds GRACE_S. On a GPU they sum to
# 420 s + 5 x 10 s of grace = 470 s: the 8 minutes the issue allows, with the parent's own start inside.
CAPS_S = {"arith": 80, "wade": 85, "calm": 85, "s2b": 90, "amtlb": 80}
QUICK_CAP_S = 25
GRACE_S = 10
LIBRARIES = ("torch", "numpy", "numba", "triton", "scipy", "pandas", "pyarrow", "gymnasium", "ale-py",
             "incremental-tasks", "tokenizers")


def environment(device: str) -> dict:
    """Device, driver and library versions, and the commit."""
    import torch

    from reprobench.core.provenance import git_commit

    env = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host": platform.node(), "python": platform.python_version(),
           "commit": git_commit(), "device": device, "torch_cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
           "cpu_threads": torch.get_num_threads(), "cpus": os.cpu_count()}
    for name in LIBRARIES:
        try:
            env[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            env[name] = None
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(torch.device(device))
        env |= {"gpu": props.name, "gpu_memory_gib": round(props.total_memory / 2**30, 1),
                "multiprocessors": props.multi_processor_count}
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20)
            env["driver"] = smi.stdout.strip().splitlines()[0] if smi.returncode == 0 else None
        except (OSError, subprocess.SubprocessError, IndexError):
            env["driver"] = None
    return env


def run_part(name: str, args) -> None:
    """In the part's own process: run it and write its row (also when it fails)."""
    started = time.monotonic()
    row = {"part": name}
    try:
        from gpu_parts import Context
        from reprobench.core.device import choose_device

        # --quick on a CPU: one torch thread (tiny ops on several threads of a shared CPU wait on each other)
        device = choose_device(args.device, args.threads or (1 if args.quick and args.device == "cpu" else None))
        cap = QUICK_CAP_S * 0.6 if args.quick else args.caps.get(name, CAPS_S.get(name, 80))
        module = importlib.import_module(f"gpu_parts.{name}")
        row |= module.check(Context(device, args.quick, cap, started, partial=args.row + ".partial"))
        row["status"] = "ok"
    except BaseException as exc:  # a part's failure is its row, whatever it is
        row |= {"status": "failed", "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    row["time_s"] = round(time.monotonic() - started, 1)
    Path(args.row).write_text(json.dumps(row, indent=1, default=str) + "\n")


def spawn(name: str, args, hard_s: float) -> dict:
    """Run one part in a child process with a hard time limit; its output goes to gpu_check_<part>.log."""
    out = Path(args.out)
    row_path, log_path = out / f".{name}.row.json", out / f"gpu_check_{name}.log"
    partial = Path(str(row_path) + ".partial")
    row_path.unlink(missing_ok=True)
    partial.unlink(missing_ok=True)
    command = [sys.executable, str(Path(__file__).resolve()), "--part", name, "--row", str(row_path),
               "--device", args.device] + (["--quick"] if args.quick else []) + (
        ["--threads", str(args.threads)] if args.threads else []) + [
        f"--cap={part}={seconds:g}" for part, seconds in args.caps.items()]
    started = time.monotonic()
    with open(log_path, "w") as log:
        try:
            child = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, timeout=hard_s,
                                   env=os.environ | {"PYTHONUNBUFFERED": "1"})
            code = child.returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
    if row_path.exists():
        row = json.loads(row_path.read_text())
        row_path.unlink()
    else:
        tail = log_path.read_text()[-1500:]
        what = f"killed at its hard cap of {hard_s:.0f} s" if code == "timeout" else f"exited with {code}"
        row = {"part": name, "status": "failed", "error": f"the part's process {what} without a row", "log_tail": tail}
        if partial.exists():  # what it measured before
            row |= {"kept": json.loads(partial.read_text()), "error": row["error"] + " (what it kept: see kept)"}
    partial.unlink(missing_ok=True)
    row["process_s"] = round(time.monotonic() - started, 1)
    return row


def _fmt(value, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)


def _subpart(sub: dict, unit: str) -> str:
    """One line for a part's sub-measurement, from whichever of the common fields it has (a mode's fields carry the
    mode as a prefix: arith's eager_, graph_, compiled_)."""
    label = next((str(sub[k]) for k in ("setting", "pack", "preset", "model") if sub.get(k)), "?")
    fields = []
    for prefix in ("", "eager_", "graph_", "compiled_"):
        if prefix + "rate" in sub:
            mode = prefix.rstrip("_") + " " if prefix else ""
            fields.append(f"{mode}{_fmt(sub[prefix + 'rate'])} {sub.get('unit', unit)}/s, "
                          f"{_fmt(sub.get(prefix + 'step_ms'))} ms per step, "
                          f"{_fmt(sub.get(prefix + 'syncs_per_step'))} syncs per step")
    if "peak_memory_mb" in sub:
        fields.append(f"{_fmt(sub['peak_memory_mb'])} MiB")
    if isinstance(sub.get("agreement"), dict):
        fields.append(f"device vs CPU {_fmt(sub['agreement'].get('relative_difference'), 2)}"
                      f"{'' if sub['agreement'].get('within') else ' (over its tolerance)'}")
    if sub.get("error"):
        fields.append(str(sub["error"]))
    return f"{label}: {'; '.join(fields) or 'no fields'}"


def markdown(env: dict, rows: list[dict]) -> str:
    device = env.get("gpu") or env["device"]
    lines = [f"# GPU check: {device}", "",
             f"{env['date']}, commit {env['commit']}; torch {env['torch']} (CUDA {env['torch_cuda']}, cuDNN "
             f"{env['cudnn']}), driver {env.get('driver', '-')}, Python {env['python']}, {env['cpus']} CPUs "
             f"({env['cpu_threads']} torch threads).", "",
             "| part | setting | rate | step | peak memory | host syncs per step | device vs CPU | paper plan "
             "(measured) | estimate before | time |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("status") != "ok":
            lines.append(f"| {r['part']} | **failed**: {r.get('error', '?')} | | | | | | | | "
                         f"{_fmt(r.get('process_s'))} s |")
            continue
        a, p = r.get("agreement") or {}, r.get("projection") or {}
        agree = (f"{_fmt(a.get('relative_difference'), 2)} ({a.get('dtype')}, {a.get('steps')} steps; tol "
                 f"{_fmt(a.get('tolerance'), 2)}) {'ok' if a.get('within') else '**over**'}") if a else "-"
        hours = f"{_fmt(p.get('device_hours'))} h" if p.get("device_hours") is not None else "-"
        lines.append(f"| {r['part']} | {r.get('setting', '')} | {_fmt(r.get('rate'))} {r.get('unit', '')}/s | "
                     f"{_fmt(r.get('step_ms'))} ms | {_fmt(r.get('peak_memory_mb'))} MiB | "
                     f"{_fmt(r.get('syncs_per_step'))} | {agree} | {hours} | {p.get('estimate_before', '-')} | "
                     f"{_fmt(r.get('process_s'))} s |")
    lines += ["", "Host syncs are counted with " + ("torch.cuda's sync debug mode" if env.get("gpu") else
              "a torch function mode that counts the tensor calls that sync on an accelerator (item, bool, cpu, "
              "nonzero, ...)") + " over steady-state training steps; device vs CPU is the relative difference "
              "(norm of the difference over the norm) of the values named below after the same steps on both.", ""]
    for r in rows:
        lines.append(f"## {r['part']}")
        lines.append("")
        if r.get("status") != "ok":
            lines += ["```", (r.get("traceback") or r.get("log_tail") or r.get("error", "")).rstrip(), "```", ""]
            for key, value in (r.get("kept") or {}).items():
                lines.append(f"- kept before it stopped, {key}: `{json.dumps(value, default=str)[:600]}`")
            lines.append("")
            continue
        if r.get("sync_points"):
            lines.append("Sync points per step: " + "; ".join(f"`{k}` {_fmt(v)}" for k, v in r["sync_points"].items())
                         + ".")
        if r.get("agreement"):
            lines.append(f"Compared with the CPU: {r['agreement']['what']}.")
        if r.get("projection"):
            lines.append(f"Paper plan: {r['projection']['how']}.")
        for note in r.get("notes", []):
            lines.append(f"- {note}")
        for sub in r.get("subparts", []):
            lines.append(f"- subpart: {_subpart(sub, r.get('unit', ''))}")
        lines.append("")
    return "\n".join(lines) + "\n"


def _caps(parser, given: list[str]) -> dict[str, float]:
    """{part: seconds} from --cap PART=SECONDS options (the part names are checked by main, not in a part's
    process)."""
    caps = {}
    for text in given:
        part, _, seconds = text.partition("=")
        try:
            caps[part.strip()] = float(seconds)
        except ValueError:
            parser.error(f"--cap {text!r}: expected PART=SECONDS, e.g. wade=170")
        if caps[part.strip()] <= 0:
            parser.error(f"--cap {text!r}: the seconds must be positive")
    return caps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", help="auto (CUDA where present), cpu, cuda or cuda:N")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a few seconds per part (the CI check)")
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated subset of " + ", ".join(PARTS))
    parser.add_argument("--out", default="results/gpu_check", help="folder for gpu_check.{json,md} and the logs")
    parser.add_argument("--budget-s", type=float, default=470.0, help="wall-time budget of the whole check")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--cap", action="append", default=[], metavar="PART=SECONDS",
                        help="a part's soft time cap instead of its default (" + ", ".join(
                            f"{k} {v}" for k, v in CAPS_S.items()) + " s), e.g. --cap wade=170; repeatable")
    parser.add_argument("--part", help=argparse.SUPPRESS)  # internal: run one part in this process
    parser.add_argument("--row", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.caps = _caps(parser, args.cap)
    sys.path.insert(0, str(HERE))
    if args.part:
        run_part(args.part, args)
        return 0
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"--parts: unknown part(s) {', '.join(unknown)} (known: {', '.join(PARTS)})")
    for name in sorted(set(args.caps) - set(PARTS)):
        parser.error(f"--cap '{name}={args.caps[name]:g}': unknown part '{name}' (known: {', '.join(PARTS)})")
    started = time.monotonic()
    import torch

    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    Path(args.out).mkdir(parents=True, exist_ok=True)
    env = environment(args.device)
    print(f"GPU check on {env.get('gpu') or args.device}: parts {', '.join(parts)}", flush=True)
    rows = []
    for name in parts:
        left = args.budget_s - (time.monotonic() - started)
        hard = min((QUICK_CAP_S if args.quick else args.caps.get(name, CAPS_S.get(name, 80))) + GRACE_S, left)
        if hard < 5:
            rows.append({"part": name, "status": "failed", "error": "no time left in the check's budget"})
            continue
        row = spawn(name, args, hard)
        rows.append(row)
        summary = (f"{_fmt(row.get('rate'))} {row.get('unit')}/s, {_fmt(row.get('syncs_per_step'))} syncs/step"
                   if row["status"] == "ok" else row.get("error"))
        print(f"  {name:6s} {row['status']:6s} {row['process_s']:6.1f} s  {summary}", flush=True)
    report = {"environment": env, "quick": args.quick, "parts": rows,
              "wall_s": round(time.monotonic() - started, 1)}
    (Path(args.out) / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    text = markdown(env, rows)
    (Path(args.out) / "gpu_check.md").write_text(text)
    print(text, flush=True)
    print(f"wrote {args.out}/gpu_check.json and gpu_check.md in {report['wall_s']} s", flush=True)
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
