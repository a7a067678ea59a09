"""`reprobench arith ...`: one subcommand per pipeline stage. Heavy imports happen inside the handlers."""

from __future__ import annotations

import json
import time

from reprobench.cli import add_training_options
from reprobench.core.progress import log


def register(sub) -> None:
    p = sub.add_parser("arith", help="arithmetic extrapolation (Madsen & Johansen 2019)")
    s = p.add_subparsers(dest="stage", required=True)

    t = s.add_parser("threshold", help="simulate the success threshold of one dataset setting")
    for name in ("operation", "input-size", "subset", "overlap", "extrapolation"):
        t.add_argument(f"--{name}", required=True)
    t.add_argument("--samples", type=int, default=1_000_000)
    t.add_argument("--epsilon", type=float, default=1e-5)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_threshold)

    t = s.add_parser("train", help="train every seed of one setting as one batched model")
    for name in ("experiment", "model", "operation", "input-size", "hidden-size", "overlap", "subset",
                 "interpolation", "extrapolation"):
        t.add_argument(f"--{name}", required=True)
    t.add_argument("--seeds", type=int, nargs="+", required=True)
    t.add_argument("--outputs", nargs="+", required=True, help="one curve file per seed, in --seeds order")
    t.add_argument("--iterations", type=int, required=True)
    t.add_argument("--batch-size", type=int, default=128)
    t.add_argument("--learning-rate", type=float, default=1e-3)
    t.add_argument("--eval-every", type=int, default=1000)
    t.add_argument("--validation-size", type=int, default=10_000)
    t.add_argument("--test-size", type=int, default=10_000)
    add_training_options(t, checkpoint=True)
    t.set_defaults(func=cmd_train)

    t = s.add_parser("aggregate", help="per-run summaries and per-setting statistics of one experiment")
    t.add_argument("--experiment", required=True)
    t.add_argument("--curves", nargs="+", required=True)
    t.add_argument("--window", type=int, required=True, help="faithful selection window (evaluations)")
    t.add_argument("--out", required=True, help="per-run table (Parquet)")
    t.add_argument("--groups-out", required=True, help="per-setting statistics (Parquet)")
    t.set_defaults(func=cmd_aggregate)

    for name, helptext in (("table", "the 'Effect of dataset operation' table"),
                           ("figure", "the 'Effect of parameters' figure"),
                           ("compare", "published vs reproduced")):
        t = s.add_parser(name, help=helptext)
        t.add_argument("--groups", nargs="+", required=True, help="per-setting statistics from aggregate")
        t.add_argument("--out", required=True, help="output file, or stem for several formats")
        if name == "figure":
            t.add_argument("--variant", default="faithful", choices=["faithful", "corrected"])
        t.set_defaults(func={"table": cmd_table, "figure": cmd_figure, "compare": cmd_compare}[name])


def cmd_threshold(args) -> None:
    from reprobench.arith.grid import parse_range
    from reprobench.arith.thresholds import thresholds
    from reprobench.core.atomic import write_text
    from reprobench.core.provenance import base_record, now

    values = thresholds(args.operation, int(args.input_size), float(args.subset), float(args.overlap),
                        parse_range(args.extrapolation), args.samples, args.epsilon, args.seed)
    record = {"operation": args.operation, "input_size": int(args.input_size), "subset": float(args.subset),
              "overlap": float(args.overlap), "extrapolation": args.extrapolation, "samples": args.samples,
              "epsilon": args.epsilon, "seed": args.seed, "thresholds": values, "made": now(), **base_record()}
    write_text(args.out, json.dumps(record, indent=1, sort_keys=True) + "\n")
    log(f"thresholds {values}")


def cmd_train(args) -> None:
    from reprobench.arith import PAPER
    from reprobench.arith.grid import Setting
    from reprobench.arith.train import TrainConfig, train
    from reprobench.core import checkpoint as checkpoints
    from reprobench.core import curves
    from reprobench.core.device import choose_device, describe
    from reprobench.core.errors import ConfigError
    from reprobench.core.provenance import now

    if len(args.outputs) != len(args.seeds):
        raise ConfigError("outputs", f"{len(args.outputs)} outputs for {len(args.seeds)} seeds")
    setting = Setting.from_keys({k: getattr(args, k) for k in (
        "experiment", "model", "operation", "input_size", "hidden_size", "overlap", "subset", "interpolation",
        "extrapolation")})
    cfg = TrainConfig(iterations=args.iterations, batch_size=args.batch_size, learning_rate=args.learning_rate,
                      eval_every=args.eval_every, validation_size=args.validation_size, test_size=args.test_size)
    device = choose_device(args.device, args.threads)
    start, t0 = now(), time.monotonic()
    log(f"training {setting} seeds {args.seeds[0]}..{args.seeds[-1]} on {describe(device)}, {cfg}")
    per_seed, state = train(setting, args.seeds, cfg, device, checkpoint=args.checkpoint,
                            checkpoint_every_s=60 * args.checkpoint_minutes)
    wall = time.monotonic() - t0
    for i, (seed, path) in enumerate(zip(args.seeds, args.outputs)):
        ended = int(state.ended_at[i])
        record = curves.provenance(
            paper=PAPER, experiment=setting.experiment, model=setting.model, setting=setting.record(), seed=seed,
            scale=args.scale, variant="all", config=cfg.__dict__ | {"seeds_in_batch": len(args.seeds)},
            device=describe(device), wall_time_s=round(wall, 3), start=start, end=now(),
            status="nan" if ended >= 0 else "completed", nan_found_at_step=ended)
        curves.write_curve(per_seed[seed], path, record)
    checkpoints.remove(args.checkpoint)
    log(f"done in {wall:.1f} s; {int((state.ended_at >= 0).sum())} of {len(args.seeds)} seeds ended by NaN")


def cmd_aggregate(args) -> None:
    import pandas as pd
    import pyarrow as pa

    from reprobench.arith import PAPER
    from reprobench.arith.grid import Setting
    from reprobench.arith.summary import VARIANTS, group_statistics, summarise_run
    from reprobench.core import curves
    from reprobench.core.errors import CurveFileError
    from reprobench.core.progress import Progress

    rows, thresholds_cache = [], {}
    bar = Progress(len(args.curves), f"aggregate {args.experiment}", log_every_s=10)
    for path in args.curves:
        frame, record = curves.read_curve(path)
        setting = Setting(**{k: tuple(v) if isinstance(v, list) else v for k, v in record["setting"].items()})
        if setting.experiment != args.experiment:
            raise CurveFileError(path, f"belongs to experiment '{setting.experiment}', not '{args.experiment}'")
        tpath = setting.threshold_path()
        if tpath not in thresholds_cache:
            with open(tpath) as fh:
                thresholds_cache[tpath] = json.load(fh)["thresholds"]
        for variant in VARIANTS:
            threshold = thresholds_cache[tpath][variant]
            summary = summarise_run(frame, threshold, variant, args.window)
            keys = setting.keys()
            rows.append({**keys, "input_size": setting.input_size, "hidden_size": setting.hidden_size,
                         "overlap": setting.overlap, "subset": setting.subset, "seed": int(record["seed"]),
                         "variant": variant, "threshold": threshold, **summary,
                         "crashed": record.get("status") == "nan", "iterations": int(record["config"]["iterations"]),
                         "scale": record["scale"], "source": path})
        bar.update(1)
    bar.close()
    runs = pd.DataFrame(rows)
    meta = {"paper": PAPER, "experiment": args.experiment, "stage": "aggregate", "window": args.window,
            "n_curves": len(args.curves), "scale": ",".join(sorted(runs["scale"].unique())),
            "variant": ",".join(VARIANTS), **curves.base_record()}
    curves.write_table(pa.Table.from_pandas(runs, preserve_index=False), args.out, meta)
    groups = group_statistics(runs)
    curves.write_table(pa.Table.from_pandas(groups, preserve_index=False), args.groups_out, meta | {"stage": "groups"})
    log(f"{len(args.curves)} runs -> {len(groups)} setting x variant rows")


def _groups(paths):
    import pandas as pd

    from reprobench.core.curves import read_metadata

    frames = []
    for path in paths:
        read_metadata(path)  # a clear error for a missing or foreign file
        frames.append(pd.read_parquet(path))
    return pd.concat(frames, ignore_index=True)


def _stem(out: str) -> str:
    return out.rsplit(".", 1)[0] if out.endswith((".md", ".png", ".pdf", ".csv", ".tex")) else out


def cmd_table(args) -> None:
    from reprobench.arith.render import operations_table

    log(f"wrote {operations_table(_groups(args.groups), _stem(args.out))}")


def cmd_figure(args) -> None:
    from reprobench.arith.render import parameters_figure

    log(f"wrote {parameters_figure(_groups(args.groups), _stem(args.out), args.variant)}")


def cmd_compare(args) -> None:
    from reprobench.arith.render import comparison
    from reprobench.core import compare

    frame = compare.write(comparison(_groups(args.groups)), args.out)
    log(f"wrote {args.out}: {len(frame)} rows, {int(frame['within'].eq(True).sum())} within")
