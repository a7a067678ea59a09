"""Everything needed to trust a number: code version, libraries, device, host, time."""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import platform
import socket
import subprocess
from pathlib import Path

import reprobench

LIBRARIES = ("numpy", "pandas", "pyarrow", "scipy", "torch", "matplotlib", "snakemake")


@functools.cache
def git_commit() -> str:
    """The commit of the checkout the package runs from ('+dirty' when it has changes), or 'unknown'."""
    root = Path(reprobench.__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@functools.cache
def library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def base_record() -> dict:
    """The fields every output file carries, whatever made it."""
    return {
        "package_version": reprobench.__version__,
        "git_commit": git_commit(),
        "libraries": library_versions(),
        "host": socket.gethostname(),
    }
