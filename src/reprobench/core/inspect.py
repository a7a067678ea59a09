"""`reprobench inspect PATH`: which runs are cached, at which scale and variant, with what provenance, and
(with --config) which runs the config expects but are missing. The caller (the top-level CLI) supplies the
expected runs of each benchmark from the registry."""

from __future__ import annotations

import collections
import os
from pathlib import Path

from reprobench.core.errors import CurveFileError


def summarise(path: str) -> tuple[dict, list[str]]:
    """({(paper, experiment, model, scale, variant, status): info}, unreadable files)."""
    from reprobench.core.curves import read_metadata

    root = Path(path)
    files = [root] if root.is_file() else sorted(root.rglob("*.parquet"))
    groups: dict = collections.OrderedDict()
    bad = []
    for f in files:
        try:
            meta = read_metadata(f)
        except CurveFileError as exc:
            bad.append(str(exc))
            continue
        key = (meta.get("paper", "?"), meta.get("experiment", "?"), meta.get("model", meta.get("stage", "?")),
               meta.get("scale", "?"), meta.get("variant", "?"), meta.get("status", "-"))
        info = groups.setdefault(key, {"files": 0, "seeds": set(), "commits": set(), "devices": set(),
                                       "versions": set(), "wall_s": 0.0, "last": ""})
        info["files"] += 1
        if "seed" in meta:
            info["seeds"].add(meta["seed"])
        info["commits"].add(str(meta.get("git_commit", "?"))[:12])
        info["devices"].add(meta.get("device", "-"))
        info["versions"].add(meta.get("package_version", "?"))
        config = meta.get("config") if isinstance(meta.get("config"), dict) else {}
        # a batched job's wall time is shared by the seeds trained together
        info["wall_s"] += float(meta.get("wall_time_s", 0.0)) / max(1, int(config.get("seeds_in_batch", 1)))
        info["last"] = max(info["last"], str(meta.get("end", "")))
    return groups, bad


def run(path: str, expected: dict[str, list[str]], list_missing: int = 10) -> int:
    """Print what is cached under `path` and, per benchmark, which of its `expected` curve files are missing.
    Exit status 1 when a file cannot be read."""
    groups, bad = summarise(path)
    header = f"{'paper':<18} {'experiment':<12} {'model':<10} {'scale':<6} {'variant':<9} {'status':<9} " \
             f"{'files':>6} {'seeds':>6} {'run-hours':>9}  commit / device / last written"
    print(header)
    print("-" * len(header))
    for (paper, experiment, model, scale, variant, status), info in groups.items():
        print(f"{paper:<18} {experiment:<12} {model:<10} {scale:<6} {variant:<9} {status:<9} {info['files']:>6} "
              f"{len(info['seeds']):>6} {info['wall_s'] / 3600:>9.3f}  {','.join(sorted(info['commits']))} / "
              f"{','.join(sorted(info['devices']))} / {info['last']}")
    total = sum(i["files"] for i in groups.values())
    print(f"\n{total} readable Parquet files under {path}")
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
