"""`reprobench arith <stage>`: one subcommand per rule of workflow/rules/arith.smk. Parse, call, write; the work is
in the modules named by each handler. Heavy imports happen inside the handlers."""

from __future__ import annotations

from reprobench.core.cli import add_output, add_training_options, output_stem
from reprobench.core.progress import log


def register(sub) -> None:
    from reprobench.arith import PAPER
    from reprobench.arith.grid import FIGURE, TABLE

    p = sub.add_parser("arith", help=f"{PAPER.title} ({PAPER.citation})")
    s = p.add_subparsers(dest="stage", required=True)

    t = s.add_parser("prepare-thresholds", help="simulate the success thresholds of every dataset setting")
    t.add_argument("--datasets", required=True, help="JSON of grid.Grid.datasets(): one file each, at THRESHOLD")
    t.add_argument("--samples", type=int, required=True, help="simulated samples (paper: 1e6)")
    t.add_argument("--epsilon", type=float, required=True, help="weight shift (paper: 1e-5)")
    t.add_argument("--seed", type=int, required=True)
    t.set_defaults(func=cmd_thresholds)

    t = s.add_parser("train", help="train a pack of settings, every seed, as one batched model (rules arith_train_*)")
    t.add_argument("--pack", required=True, help="JSON of grid.Pack: settings and seed counts; the curve files are "
                   "the grid's paths of its (setting, seed) runs")
    for name, kind in (("batch-size", int), ("learning-rate", float), ("eval-every", int),
                       ("validation-size", int), ("test-size", int)):
        t.add_argument(f"--{name}", type=kind, required=True)
    t.add_argument("--cuda-step", required=True, choices=["eager", "graph", "compiled"],
                   help="on CUDA: eager kernels, the step replayed as one CUDA graph, or that with the batch stream "
                        "compiled into one kernel (config arith.cuda_step)")
    add_training_options(t, checkpoint=True)
    t.set_defaults(func=cmd_train)

    t = s.add_parser("aggregate", help="per-run summaries and per-setting statistics of one experiment")
    t.add_argument("--experiment", required=True)
    which = t.add_mutually_exclusive_group(required=True)  # paper scale: the paths would pass the 128 KiB argument cap
    which.add_argument("--curves", nargs="+", help="curve files")
    which.add_argument("--grid", help="JSON of grid.Grid.curve_keys: every curve file of the experiment")
    t.add_argument("--window", type=int, required=True, help="faithful selection window (evaluations)")
    t.add_argument("--out", required=True, help="per-run table (Parquet)")
    t.add_argument("--groups-out", required=True, help="per-setting statistics (Parquet)")
    t.set_defaults(func=cmd_aggregate)

    for name, helptext, formats, handler in (
            ("table", "the 'Effect of dataset operation' table", TABLE.formats, cmd_table),
            ("figure", "the 'Effect of parameters' figure", FIGURE.formats, cmd_figure),
            ("compare", "published vs reproduced", (".csv",), cmd_compare)):
        t = s.add_parser(name, help=helptext)
        t.add_argument("--groups", nargs="+", required=True, help="per-setting statistics from aggregate")
        add_output(t, name)
        if name == "compare":
            t.add_argument("--yours", required=True, help="the rows of the 'Your model' table (core.yours)")
        if name == "figure":
            t.add_argument("--variant", required=True, choices=["faithful", "corrected"])
        t.set_defaults(func=handler, formats=formats)


def cmd_thresholds(args) -> None:
    """Every dataset's thresholds in one process (one start-up), each file written as soon as it is done."""
    import json

    from reprobench.arith import PAPER
    from reprobench.arith.grid import THRESHOLD, parse_range
    from reprobench.arith.thresholds import thresholds
    from reprobench.core.atomic import write_text
    from reprobench.core.errors import ConfigError
    from reprobench.core.provenance import base_record, now

    try:
        datasets = json.loads(args.datasets)
        paths = [THRESHOLD.format(**d) for d in datasets]
        keys = [(d["operation"], int(d["input_size"]), float(d["subset"]), float(d["overlap"]),
                 parse_range(d["extrapolation"])) for d in datasets]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError("datasets", f"not the JSON of Grid.datasets() ({exc!r})") from None
    base = base_record()
    for d, path, (operation, n, subset, overlap, extrapolation) in zip(datasets, paths, keys):
        values = thresholds(operation, n, subset, overlap, extrapolation, args.samples, args.epsilon, args.seed)
        record = {"paper": PAPER.id, "stage": "threshold", "operation": operation, "input_size": n, "subset": subset,
                  "overlap": overlap, "extrapolation": d["extrapolation"], "samples": args.samples,
                  "epsilon": args.epsilon, "seed": args.seed, "thresholds": values, "made": now(), **base}
        write_text(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
        log(f"{path}: {values}")


def cmd_train(args) -> None:
    from reprobench.arith import PAPER
    from reprobench.arith.grid import Pack
    from reprobench.arith.train import TrainConfig, train_members
    from reprobench.core import checkpoint as checkpoints
    from reprobench.core import curves
    from reprobench.core.device import choose_device, describe
    from reprobench.core.errors import ConfigError
    from reprobench.core.provenance import Timer

    try:
        pack = Pack.from_json(args.pack)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError("pack", f"not the JSON of grid.Pack ({exc!r})") from None
    members, outputs = pack.members(), pack.outputs()
    cfg = TrainConfig(iterations=pack.iterations, batch_size=args.batch_size, learning_rate=args.learning_rate,
                      eval_every=args.eval_every, validation_size=args.validation_size, test_size=args.test_size)
    device = choose_device(args.device, args.threads)
    log(f"training pack {pack.keys()}: {len(pack.settings)} settings, {len(outputs)} curve files, {len(members)} "
        f"distinct runs on {describe(device)}, {cfg}")
    with Timer() as timer:
        columns, state = train_members([m[0] for m in members], [m[1] for m in members], cfg, device,
                                       checkpoint=args.checkpoint, checkpoint_every_s=60 * args.checkpoint_minutes,
                                       cuda_step=args.cuda_step)
    for setting, seed, path, i in outputs:
        ended = int(state.ended_at[i])
        record = curves.provenance(
            paper=PAPER.id, experiment=setting.experiment, model=setting.model, setting=setting.record(), seed=seed,
            scale=args.scale, variant="all", pack=pack.keys(), device=describe(device),
            config=cfg.__dict__ | {"runs_in_job": len(members), "files_in_job": len(outputs),
                                   "cuda_step": args.cuda_step if device.type == "cuda" else "cpu"},
            status="nan" if ended >= 0 else "completed", nan_found_at_step=ended, **timer.fields())
        curves.write_curve(columns[i], path, record)
    checkpoints.remove(args.checkpoint)
    log(f"done in {timer.wall_s:.1f} s; {int((state.ended_at >= 0).sum())} of {len(members)} runs ended by NaN")


def _grid_curves(text: str, experiment: str) -> list[str]:
    """The curve files of one experiment from the keys the rule passes (grid.Grid.curve_keys)."""
    import json

    from reprobench.arith.grid import EXPERIMENTS, Grid
    from reprobench.core.errors import ConfigError

    if experiment not in EXPERIMENTS:
        raise ConfigError("experiment", f"'{experiment}' is not one of {', '.join(EXPERIMENTS)}")
    try:
        return Grid(json.loads(text)).curves(experiment)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError("grid", f"not the JSON of Grid.curve_keys('{experiment}') ({exc!r})") from None


def cmd_aggregate(args) -> None:
    from reprobench.arith import PAPER
    from reprobench.arith.summary import VARIANTS, aggregate, group_statistics
    from reprobench.core import curves

    if args.grid is not None:
        args.curves = _grid_curves(args.grid, args.experiment)
    runs = aggregate(args.curves, args.experiment, args.window)
    record = curves.summary_record(PAPER.id, args.experiment, "aggregate", curves.scale_label(runs),
                                   ",".join(VARIANTS), window=args.window, n_curves=len(args.curves))
    curves.write_frame(runs, args.out, record)
    groups = group_statistics(runs)
    curves.write_frame(groups, args.groups_out, record | {"stage": "groups"})
    log(f"{len(args.curves)} runs -> {len(groups)} setting x variant rows")


def cmd_table(args) -> None:
    from reprobench.arith.render import operations_table
    from reprobench.arith.summary import read_groups

    log(f"wrote {operations_table(read_groups(args.groups), output_stem(args.out, args.formats))}")


def cmd_figure(args) -> None:
    from reprobench.arith.render import parameters_figure
    from reprobench.arith.summary import read_groups

    log(f"wrote {parameters_figure(read_groups(args.groups), output_stem(args.out, args.formats), args.variant)}")


def cmd_compare(args) -> None:
    from reprobench.arith.render import comparison, yours_rows
    from reprobench.arith.summary import read_groups
    from reprobench.core import compare, yours

    out = output_stem(args.out, args.formats) + ".csv"
    groups = read_groups(args.groups)
    frame = compare.write(comparison(groups), out)
    yours.write_rows(yours_rows(groups), args.yours)
    log(f"wrote {out}: {len(frame)} rows, {int(frame['within'].eq(True).sum())} within")
