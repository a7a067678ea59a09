"""benchmarks/gpu_check.py on the CPU (`--quick`): every benchmark's part runs its real training code and writes its
row, so that the check cannot rot between the rare runs on a GPU (docs/GPU.md)."""

import json
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import gpu_check  # noqa: E402  (a script, not a package)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu_check")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--device", "cpu", "--quick",
                           "--out", str(out)], capture_output=True, text=True, timeout=900)
    return proc, json.loads((out / "gpu_check.json").read_text()), (out / "gpu_check.md").read_text()


def test_every_part_runs_and_writes_its_row(report):
    proc, blob, _ = report
    rows = {row["part"]: row for row in blob["parts"]}
    assert list(rows) == list(gpu_check.PARTS)
    for name, row in rows.items():
        assert row["status"] == "ok", f"{name}: {row.get('traceback') or row.get('log_tail')}"
        assert row["rate"] > 0 and row["steps"] >= 1 and row["unit"], name
        assert row["peak_memory_mb"] > 0, name
        assert row["agreement"]["within"], f"{name}: {row['agreement']}"
        assert row["projection"]["device_hours"] > 0 and row["projection"]["estimate_before"], name
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert blob["environment"]["device"] == "cpu" and blob["environment"]["torch"]


def test_no_training_step_syncs_the_host(report):
    """The learner's steady-state steps make no call that would sync on a GPU (inherent syncs, such as actions read
    by a CPU emulator, are reported apart by their parts)."""
    for row in report[1]["parts"]:
        assert row["syncs_per_step"] == 0, f"{row['part']}: {row['sync_points']}"


def test_the_markdown_table_has_a_row_and_a_section_per_part(report):
    text = report[2]
    for name in gpu_check.PARTS:
        assert f"\n| {name} | " in text and f"\n## {name}\n" in text


def test_a_part_that_hangs_or_fails_is_reported_and_the_check_goes_on(tmp_path):
    args = Namespace(out=str(tmp_path), device="cpu", quick=True, threads=None, caps={})
    killed = gpu_check.spawn("arith", args, hard_s=0.5)
    assert killed["status"] == "failed" and "hard cap" in killed["error"]
    row = tmp_path / "row.json"
    gpu_check.run_part("nonexistent", Namespace(**vars(args), row=str(row)))
    failed = json.loads(row.read_text())
    assert failed["status"] == "failed" and "nonexistent" in failed["traceback"]


def test_what_a_killed_part_kept_is_reported(tmp_path, monkeypatch):
    """A part killed at its hard cap after it kept a measurement (ctx.keep) is reported with that measurement; a
    --cap given to the check is the part's soft cap (ctx.cap_s) in its own process."""
    parts = tmp_path / "parts"
    (parts / "gpu_parts").mkdir(parents=True)
    real = ROOT / "benchmarks" / "gpu_parts" / "__init__.py"
    (parts / "gpu_parts" / "__init__.py").write_text(real.read_text().replace(
        "ROOT = Path(__file__).resolve().parents[2]", f"ROOT = Path({str(ROOT)!r})"))
    (parts / "gpu_parts" / "slow.py").write_text(
        "import time\n\ndef check(ctx):\n    ctx.keep('first', {'rate': 1.5, 'cap': ctx.cap_s})\n    time.sleep(60)\n")
    script = parts / "gpu_check.py"
    script.write_text((ROOT / "benchmarks" / "gpu_check.py").read_text())
    monkeypatch.setattr(gpu_check, "__file__", str(script))
    row = gpu_check.spawn("slow", Namespace(out=str(tmp_path), device="cpu", quick=False, threads=None,
                                            caps={"slow": 42.0}), hard_s=8)
    assert row["status"] == "failed" and "hard cap" in row["error"]
    assert row["kept"] == {"first": {"rate": 1.5, "cap": 42.0}}


@pytest.mark.parametrize("cap", ["nopart=30", "wade=soon", "wade=-5"])
def test_a_bad_cap_is_refused_with_its_text(cap):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--cap", cap, "--out",
                           "/nonexistent/never-written"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and f"--cap '{cap}'" in proc.stderr, proc.stderr
