"""`reprobench inspect PATH`: which results are cached (curves, metrics tables, data, thresholds), at which scale
and variant, with what provenance, and (with --config) which runs the config expects but are missing.

Every file is checked as its reader would: a Parquet file must have its provenance (its SHA-256 matching where it
has one), at least one row and pages that pass their checksums (the whole file is read: about 1 ms a file); a curve
file (one with the curve schema; any other is a metrics or data table) must also have every required provenance
field and sit on a path that agrees with it (experiment=, model=, variant=, seed=); a JSON file must parse, and a
file that
a benchmark registers a reader for (its grid's READERS, e.g. arith's thresholds) must pass that reader. Temporary
files left by a killed write (core.atomic) are skipped and counted. The caller (the top-level CLI) supplies the
expected runs and the readers of each benchmark from the registry.
"""

from __future__ import annotations

import collections
import fnmatch
import json
import os
from collections.abc import Callable
from pathlib import Path

from reprobench.core.atomic import is_temporary
from reprobench.core.errors import ReprobenchError, ResultsFileError


def _describe(path: Path, readers: dict[str, Callable]) -> tuple[str, dict]:
    """(kind, provenance) of one results file, checked; raises ReprobenchError naming it."""
    import pyarrow.parquet as pq

    from reprobench.core import curves
    from reprobench.core.curves import REQUIRED_FIELDS, RUN_KEYS_FIELD, curve_schema, read_metadata

    if path.suffix == ".parquet":
        meta = read_metadata(path)
        footer = pq.read_metadata(path)
        schema = curve_schema(meta.get(RUN_KEYS_FIELD) or ())  # a file of several runs names its key columns
        kind = "curve" if footer.schema.to_arrow_schema().remove_metadata().equals(schema) else \
            "data" if meta.get("stage") == "data" else "metrics"
        missing = [k for k in REQUIRED_FIELDS if k not in meta]
        if kind == "curve" and missing:
            raise ResultsFileError(path, f"provenance lacks {missing}")
        if footer.num_rows == 0:  # a curve of no evaluation, or an aggregate of no runs: every reader stops on it
            raise ResultsFileError(path, "has no rows")
        where = curves.path_mismatch(path, meta) if kind == "curve" else None
        if where:
            raise ResultsFileError(path, where)
        curves.read_table(path)  # every page against its checksum, as the readers do
    else:
        try:
            meta = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ResultsFileError(path, f"is not readable JSON ({exc})") from None
        if not isinstance(meta, dict):
            raise ResultsFileError(path, "holds no JSON object")
        kind = str(meta.get("stage", "json"))
    for pattern, reader in readers.items():
        if fnmatch.fnmatch(path.resolve().as_posix(), pattern):
            reader(str(path))
    return kind, meta


def summarise(path: str, readers: dict[str, Callable] | None = None) -> tuple[dict, list[str], int]:
    """({(kind, paper, experiment, model or stage, scale, variant, status): info}, unreadable files, number of
    temporary files skipped)."""
    root = Path(path)
    files = [root] if root.is_file() else sorted(f for pattern in ("*.parquet", "*.json") for f in root.rglob(pattern))
    groups: dict = collections.OrderedDict()
    bad, temporary = [], 0
    for f in files:
        if is_temporary(f):
            temporary += 1
            continue
        try:
            kind, meta = _describe(f, readers or {})
        except ReprobenchError as exc:
            bad.append(str(exc))
            continue
        key = (kind, meta.get("paper", "?"), meta.get("experiment", "-"), meta.get("model", meta.get("stage", "?")),
               meta.get("scale", "-"), meta.get("variant", "-"), meta.get("status", "-"))
        info = groups.setdefault(key, {"files": 0, "seeds": set(), "commits": set(), "devices": set(),
                                       "versions": set(), "wall_s": 0.0, "last": ""})
        info["files"] += 1
        if "seed" in meta and kind == "curve":
            info["seeds"].add(meta["seed"])
        info["commits"].add(str(meta.get("git_commit", "?"))[:12])
        info["devices"].add(meta.get("device", "-"))
        info["versions"].add(meta.get("package_version", "?"))
        config = meta.get("config") if isinstance(meta.get("config"), dict) else {}
        # a batched job's wall time is shared by the curve files it wrote (older arith files: seeds_in_batch)
        shared = config.get("files_in_job", config.get("seeds_in_batch", 1))
        info["wall_s"] += float(meta.get("wall_time_s", 0.0)) / max(1, int(shared))
        info["last"] = max(info["last"], str(meta.get("end", meta.get("made", ""))))
    return groups, bad, temporary


def run(path: str, expected: dict[str, list[str]], list_missing: int = 10,
        readers: dict[str, Callable] | None = None) -> int:
    """Print what is cached under `path` and, per benchmark, which of its `expected` curve files are missing.
    Exit status 1 when a file cannot be read."""
    groups, bad, temporary = summarise(path, readers)
    header = f"{'kind':<9} {'paper':<18} {'experiment':<12} {'model':<11} {'scale':<6} {'variant':<18} " \
             f"{'status':<7} {'files':>6} {'seeds':>6} {'run-hours':>9}  commit / device / last written"
    print(header)
    print("-" * len(header))
    for (kind, paper, experiment, model, scale, variant, status), info in groups.items():
        print(f"{kind:<9} {paper:<18} {experiment:<12} {model:<11} {scale:<6} {variant:<18} {status:<7} "
              f"{info['files']:>6} {len(info['seeds']):>6} {info['wall_s'] / 3600:>9.3f}  "
              f"{','.join(sorted(info['commits']))} / {','.join(sorted(map(str, info['devices'])))} / {info['last']}")
    total = sum(i["files"] for i in groups.values())
    print(f"\n{total} readable results files under {path}")
    if temporary:
        print(f"{temporary} temporary files of interrupted writes skipped (the next write of their target removes "
              "them)")
    for message in bad:
        print(f"UNREADABLE: {message}")
    for benchmark, paths in expected.items():
        missing = [p for p in paths if not os.path.exists(p)]
        print(f"{benchmark}: config expects {len(paths)} curve files; {len(paths) - len(missing)} present, "
              f"{len(missing)} missing")
        for p in missing[:list_missing]:
            print(f"  missing {p}")
        if len(missing) > list_missing:
            print(f"  ... and {len(missing) - list_missing} more")
    return 1 if bad else 0
