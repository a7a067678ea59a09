"""Write files so that a crash never leaves a half-written result: temp file in the same folder, then rename.

A temporary file is named `.<target name>.reprobench-tmp-<random><suffix>`, so that one left behind by a process
killed with SIGKILL (which no `finally` survives) is recognisable: `reprobench inspect` skips and counts such
files, and the next write of the same target removes them. Snakemake lets one job write a given output, so a
temporary file of that target left from an earlier attempt belongs to a dead process.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
from pathlib import Path

TEMP_MARK = ".reprobench-tmp-"


def is_temporary(path: str | os.PathLike) -> bool:
    """Whether `path` is a temporary file of atomic_path (a finished write never leaves one)."""
    name = Path(path).name
    return name.startswith(".") and TEMP_MARK in name


def _leftovers(path: Path) -> list[Path]:
    return [p for p in path.parent.glob(glob.escape(f".{path.name}") + f"{TEMP_MARK}*") if p.is_file()]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str | None = None):
    """Yield a temporary path next to `path`; rename it onto `path` only if the block succeeds.

    The final file gets the mode a plain open() would give it (0666 less the umask): the temporary file is created
    with os.open(..., 0o666), not tempfile.mkstemp, whose 0600 would leave results unreadable to the group."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in _leftovers(path):  # left by a killed earlier attempt at this target
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()
    while True:
        tmp = path.with_name(f".{path.name}{TEMP_MARK}{secrets.token_hex(4)}{suffix or path.suffix}")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
