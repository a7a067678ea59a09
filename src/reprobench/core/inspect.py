"""`reprobench inspect PATH`: which runs are cached, at which scale and variant, with what provenance, and
(with --config) which runs the config expects but are missing."""

from __future__ import annotations

import collections
import os
from pathlib import Path

from reprobench.core.errors import CurveFileError


def register(sub) -> None:
    p = sub.add_parser("inspect", help="summarise cached Parquet files (curves, metrics)")
    p.add_argument("path", help="a Parquet file or a folder (e.g. results/ or results/arith/curves)")
    p.add_argument("--config", nargs="*", default=[],
                   help="config files, merged in order (e.g. config.yaml paper.yaml): list what is missing")
    p.add_argument("--list-missing", type=int, default=10, help="how many missing paths to print (default 10)")
    p.set_defaults(func=run)


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


def run(args) -> int:
    groups, bad = summarise(args.path)
    header = f"{'paper':<18} {'experiment':<12} {'model':<10} {'scale':<6} {'variant':<9} {'status':<9} " \
             f"{'files':>6} {'seeds':>6} {'run-hours':>9}  commit / device / last written"
    print(header)
    print("-" * len(header))
    for (paper, experiment, model, scale, variant, status), info in groups.items():
        print(f"{paper:<18} {experiment:<12} {model:<10} {scale:<6} {variant:<9} {status:<9} {info['files']:>6} "
              f"{len(info['seeds']):>6} {info['wall_s'] / 3600:>9.3f}  {','.join(sorted(info['commits']))} / "
              f"{','.join(sorted(info['devices']))} / {info['last']}")
    total = sum(i["files"] for i in groups.values())
    print(f"\n{total} readable Parquet files under {args.path}")
    for message in bad:
        print(f"UNREADABLE: {message}")
    if args.config:
        from reprobench.core.config import expected_outputs, load

        for benchmark, expected in expected_outputs(load(args.config)).items():
            missing = [p for p in expected if not os.path.exists(p)]
            print(f"{benchmark}: config expects {len(expected)} curve files; {len(expected) - len(missing)} present, "
                  f"{len(missing)} missing")
            for p in missing[:args.list_missing]:
                print(f"  missing {p}")
            if len(missing) > args.list_missing:
                print(f"  ... and {len(missing) - args.list_missing} more")
    return 1 if bad else 0
