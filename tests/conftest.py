import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def snakemake_cmd() -> list[str]:
    """The snakemake of the interpreter running the tests (the README's virtual environment)."""
    exe = Path(sys.executable).with_name("snakemake")
    return [str(exe)] if exe.exists() else [shutil.which("snakemake") or "snakemake"]


def run_snakemake(args, cwd=ROOT, env=None, check=True, timeout=900):
    full_env = dict(os.environ, **(env or {}))
    full_env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{full_env.get('PATH', '')}"
    proc = subprocess.run(snakemake_cmd() + list(args), cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n"
                             f"{proc.stderr[-6000:]}")
    return proc


@pytest.fixture
def workdir(tmp_path):
    """A scratch working directory holding the default config (Snakemake reads config.yaml from here)."""
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    return tmp_path
