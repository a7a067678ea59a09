"""Time and peak memory of planning the paper-scale run: `snakemake -n --profile slurm` (paper.yaml, all papers).

    python benchmarks/dry_run.py [--repeat 2] [--in-place] [--profile-out plan.prof]

By default the dry run happens as tests/test_workflow.py does it, in a scratch folder holding copies of config.yaml,
paper.yaml and slurm/ (what a fresh clone plans: no results yet), with the repository's Snakefile; --in-place plans
in the repository root itself (whatever results/ holds there counts). The Slurm site variables are set to dummy
values. Peak memory is the snakemake process's maximum resident set size (wait4's rusage, stdlib only).
--profile-out runs snakemake's main under cProfile instead (slower: the profile, not the timing, is its output).

Prints the jobs planned, the seconds and the peak MB of each repeat, and the goal: at most 60 s and 1 GB.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_S, GOAL_MB = 60.0, 1024.0
SITE = {"SLURM_ACCOUNT": "acct", "REPROBENCH_CPU_PARTITION": "cpu", "REPROBENCH_GPU_PARTITION": "gpu"}


def command(profile_out: str | None) -> list[str]:
    """snakemake of this interpreter (its virtual environment), or its main module under cProfile."""
    args = ["-n", "--profile", "slurm", "--snakefile", str(ROOT / "Snakefile")]
    if profile_out:
        return [sys.executable, "-m", "cProfile", "-o", str(Path(profile_out).resolve()), "-m", "snakemake", *args]
    exe = Path(sys.executable).with_name("snakemake")
    return [str(exe) if exe.exists() else "snakemake", *args]


def scratch(folder: Path) -> Path:
    for name in ("config.yaml", "paper.yaml"):
        shutil.copy(ROOT / name, folder / name)
    shutil.copytree(ROOT / "slurm", folder / "slurm")
    return folder


def plan_once(cwd: Path, profile_out: str | None) -> tuple[float, float, float, int, str]:
    """(wall seconds, CPU seconds, peak MB, exit status, output) of one dry run."""
    env = dict(os.environ, **SITE)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    with tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(command(profile_out), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                text=True)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage (and its waited-for children's)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    peak_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
    return seconds, usage.ru_utime + usage.ru_stime, peak_mb, proc.returncode, text


def jobs_planned(output: str) -> dict[str, int]:
    """The 'Job stats' table of a dry run: {rule: count, 'total': n}."""
    stats = output.split("Job stats:", 1)[1].split("\n\n", 1)[0] if "Job stats:" in output else ""
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", stats, re.M)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=2, help="dry runs to time (default 2)")
    parser.add_argument("--in-place", action="store_true", help="plan in the repository root, not a scratch copy")
    parser.add_argument("--profile-out", help="write a cProfile of snakemake's main here (one run, not timed)")
    parser.add_argument("--top", type=int, default=15, help="with --profile-out: functions to print by cumulative time")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start "
          "(other work on the machine slows the dry run)")
    with tempfile.TemporaryDirectory(prefix="dry_run_") as tmp:
        cwd = ROOT if args.in_place else scratch(Path(tmp))
        results = []
        for i in range(1 if args.profile_out else args.repeat):
            seconds, cpu_s, peak_mb, rc, text = plan_once(cwd, args.profile_out)
            if rc != 0:
                print(text[-6000:])
                print(f"snakemake -n --profile slurm failed with exit status {rc}")
                return rc
            jobs = jobs_planned(text)
            results.append((seconds, peak_mb))
            print(f"run {i + 1}: {jobs.get('total', 0)} jobs planned, {seconds:.1f} s ({cpu_s:.1f} s of CPU), "
                  f"peak {peak_mb:.0f} MB")
        if args.profile_out:
            import pstats

            pstats.Stats(args.profile_out).sort_stats("cumulative").print_stats(args.top)
            return 0
    best_s, best_mb = min(s for s, _ in results), max(m for _, m in results)
    ok = best_s <= GOAL_S and best_mb <= GOAL_MB
    biggest = sorted(((n, r) for r, n in jobs.items() if r != "total"), reverse=True)[:5]
    print("largest rules: " + ", ".join(f"{r} {n}" for n, r in biggest))
    print(f"fastest {best_s:.1f} s, peak {best_mb:.0f} MB; goal <= {GOAL_S:.0f} s and <= {GOAL_MB:.0f} MB: "
          f"{'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
