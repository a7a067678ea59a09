"""Everything needed to trust a number: code version, libraries, device, host, time."""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import platform
import socket
import subprocess
import time
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
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def base_record() -> dict:
    """The fields every output file carries, whatever made it."""
    return {
        "package_version": reprobench.__version__,
        "git_commit": git_commit(),
        "libraries": library_versions(),
        "host": socket.gethostname(),
    }


class Timer:
    """Start, end and wall time of a run, for its provenance record:
    `with Timer() as t: ...` then `curves.provenance(..., **t.fields())`."""

    def __enter__(self) -> Timer:
        self.start, self._t0 = now(), time.monotonic()
        self.end, self.wall_s = None, None
        return self

    def __exit__(self, *exc) -> None:
        self.end, self.wall_s = now(), time.monotonic() - self._t0

    def fields(self, share: int = 1) -> dict:
        """start, end and wall_time_s; with `share`, the wall time of one of `share` runs done together."""
        return {"start": self.start, "end": self.end, "wall_time_s": round(self.wall_s / max(1, share), 3)}
