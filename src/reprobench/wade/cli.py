"""`reprobench wade <stage>`: one subcommand per rule of workflow/rules/wade.smk (plus the human game). Parse, call,
write; the work is in the modules named by each handler. Heavy imports happen inside the handlers."""

from __future__ import annotations

from reprobench.core.cli import add_output, add_training_options, output_stem
from reprobench.core.progress import log


def register(sub) -> None:
    from reprobench.wade import PAPER
    from reprobench.wade.grid import FIGURES, HUMAN_SESSION, TABLES

    p = sub.add_parser("wade", help=f"{PAPER.title} ({PAPER.citation})")
    s = p.add_subparsers(dest="stage", required=True)

    t = s.add_parser("prepare-task", help="generate one task's dataset for one seed")
    t.add_argument("--task", type=int, required=True)
    t.add_argument("--seed", type=int, required=True)
    t.add_argument("--max-sequences", type=int, required=True, help="unique sequences at most (paper: 1200)")
    t.add_argument("--scale", required=True)
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_prepare_task)

    t = s.add_parser("prepare-imdb", help="IMDB (download or synthetic stand-in), tokenized")
    t.add_argument("--source", choices=["synthetic", "download"], required=True)
    t.add_argument("--resources", required=True, help="folder for the archive or the stand-in corpus")
    t.add_argument("--train", type=int, required=True, help="synthetic: training reviews")
    t.add_argument("--test", type=int, required=True, help="synthetic: test reviews")
    t.add_argument("--scale", required=True)
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_prepare_imdb)

    t = s.add_parser("train-reservoir", help="ReCA (every listed rule, one tensor) and ESN runs on one dataset")
    t.add_argument("--data", required=True)
    t.add_argument("--seed", type=int, required=True, help="the dataset's seed (checked against the file)")
    t.add_argument("--rules", type=int, nargs="+", required=True)
    t.add_argument("--reca-output", required=True, help="one curve file for every rule (column 'rule')")
    t.add_argument("--esn-output", required=True)
    t.add_argument("--rules-per-chunk", type=int, required=True, help="CA rules evolved together in one tensor")
    add_training_options(t)
    t.set_defaults(func=cmd_train_reservoir)

    t = s.add_parser("train-sequence", help="RNN, LSTM and both Transformers on one dataset")
    t.add_argument("--data", required=True)
    t.add_argument("--seed", type=int, required=True, help="the dataset's seed (checked against the file)")
    t.add_argument("--outputs", nargs="+", required=True,
                   help="one curve file per run of grid.SEQUENCE_RUNS, in that order (rnn, lstm, transformer "
                        "faithful, transformer corrected), then one per --user-models class")
    t.add_argument("--user-models", nargs="*", default=[], metavar="PACKAGE.MODULE:CLASS",
                   help="the user's sequence models (config wade.models), trained after the paper's")
    t.add_argument("--epochs", type=int, required=True)
    add_training_options(t)
    t.set_defaults(func=cmd_train_sequence)

    t = s.add_parser("train-imdb", help="one IMDB model and seed")
    t.add_argument("--data", required=True)
    t.add_argument("--model", required=True)
    t.add_argument("--seed", type=int, required=True)
    t.add_argument("--epochs", type=int, required=True)
    t.add_argument("--eval-every", type=int, required=True, help="examples between test evaluations")
    add_training_options(t, checkpoint=True)
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_train_imdb)

    for name, helptext, handler in (("aggregate-synthetic", "WADE and accuracy of every run; mean curves",
                                     cmd_aggregate_synthetic),
                                    ("aggregate-imdb", "WADE and accuracy of every IMDB run; mean curves",
                                     cmd_aggregate_imdb)):
        t = s.add_parser(name, help=helptext)
        if name == "aggregate-synthetic":  # 6000 paths at paper scale: too long for the rule's command line
            which = t.add_mutually_exclusive_group(required=True)
            which.add_argument("--curves", nargs="+", help="curve files")
            which.add_argument("--tasks", type=int, nargs="+",
                               help="with --seeds: every curve file of these tasks and seeds (grid.synthetic_curves)")
            t.add_argument("--seeds", type=int, nargs="+", help="with --tasks")
            t.add_argument("--user-models", nargs="*", default=[], metavar="RUN_ID",
                           help="with --tasks: the run ids of the user's sequence models (grid.Grid.user_models)")
        else:
            t.add_argument("--curves", nargs="+", required=True)
        t.add_argument("--out", required=True, help="one row per run and variant (Parquet)")
        t.add_argument("--mean-curves-out", required=True, help="mean curves (Parquet)")
        t.set_defaults(func=handler)

    # One subcommand per table and figure; each reads only the aggregates it needs.
    products = {**TABLES, **FIGURES}
    for name, inputs in (("table2", ("runs",)), ("table4", ("runs", "human-sessions")),
                         ("table5", ("runs", "mean-curves")), ("table6", ("data", "user-models")),
                         ("figure1", ("runs", "mean-curves")), ("figure2", ("runs", "mean-curves")),
                         ("figure3", ("runs", "mean-curves", "variant"))):
        t = s.add_parser(name, help=f"{products[name].title}: {products[name].stem}.*")
        _add_inputs(t, inputs)
        add_output(t, products[name].title)
        t.set_defaults(func=cmd_render, formats=products[name].formats)

    t = s.add_parser("compare", help="published vs reproduced: Tables 2, 4 and 5")
    _add_inputs(t, ("runs", "mean-curves"))
    t.add_argument("--imdb-runs", required=True, help="results/wade/metrics/imdb.parquet")
    add_output(t, "comparison")
    t.add_argument("--yours", required=True, help="the rows of the 'Your model' table (core.yours)")
    t.set_defaults(func=cmd_compare, formats=(".csv",))

    t = s.add_parser("human", help="play a task yourself (obfuscated tokens) and save the session")
    t.add_argument("--task", type=int, required=True)
    t.add_argument("--seed", type=int, default=0, help="letter mapping and sequence order")
    t.add_argument("--data-seed", type=int, default=12305, help="the task data's seed (the paper's first seed)")
    t.add_argument("--streak", type=int, default=10,
                   help="correct answers in a row that end the task: 10 as the paper describes; 5 as the reference "
                        "game that produced the published human scores")
    t.add_argument("--out", help=f"session file (default {HUMAN_SESSION})")
    t.set_defaults(func=cmd_human)


def _add_inputs(parser, names) -> None:
    helps = {"runs": "per-run metrics from an aggregate stage (Parquet)",
             "mean-curves": "mean curves from the same aggregate stage (Parquet)",
             "data": "one prepared dataset per task (Table 6)",
             "human-sessions": "recorded sessions for Table 4's Human column (config wade.human_sessions)",
             "variant": "which WADE convention the legend shows",
             "user-models": "the user's sequence models, 'package.module:Class' (config wade.models)"}
    for name in names:
        if name == "variant":
            parser.add_argument("--variant", required=True, choices=["faithful", "corrected"], help=helps[name])
        elif name in ("data", "human-sessions", "user-models"):
            parser.add_argument(f"--{name}", nargs="+" if name == "data" else "*",
                                required=name == "data", default=[], help=helps[name])
        else:
            parser.add_argument(f"--{name}", required=True, help=helps[name])


def _dataset(path: str, seed: int):
    """The prepared dataset at `path`, which must be the one of `seed`."""
    from reprobench.core.errors import ResultsFileError
    from reprobench.wade import tasks

    d = tasks.read(path)
    if d.seed != seed:
        raise ResultsFileError(path, f"holds seed {d.seed}, not the requested seed {seed}")
    return d


def cmd_prepare_task(args) -> None:
    from reprobench.wade import tasks

    d = tasks.generate(tasks.task_spec(args.task).id, args.seed, max_n_seq=args.max_sequences)
    tasks.write(d, args.out, args.scale)
    log(f"task {args.task} seed {args.seed}: {len(d.tokens)} sequences ({int(d.train.sum())} train), "
        f"vocabulary {len(d.vocabulary)}")


def cmd_prepare_imdb(args) -> None:
    from reprobench.wade import imdb_runs

    imdb_runs.prepare(args.source, args.resources, args.out, args.scale, args.train, args.test)
    log(f"IMDB ({args.source}) tokenized into {args.out}")


def cmd_train_reservoir(args) -> None:
    from reprobench.core.device import choose_device, describe
    from reprobench.core.errors import ConfigError
    from reprobench.wade.runs import run_reservoirs

    bad = [r for r in args.rules if not 0 <= r <= 255]
    if bad:
        raise ConfigError("wade.reca_rules", f"rule {bad[0]} is outside 0-255")
    device = choose_device(args.device, args.threads)
    d = _dataset(args.data, args.seed)
    run_reservoirs(d, args.rules, args.reca_output, args.esn_output, args.scale, str(device), args.rules_per_chunk)
    log(f"task {d.task_id} seed {d.seed}: {len(args.rules)} rules + ESN on {describe(device)}")


def cmd_train_sequence(args) -> None:
    from reprobench.core.device import choose_device
    from reprobench.core.errors import ConfigError
    from reprobench.wade.grid import SEQUENCE_RUNS, USER_CONFIG
    from reprobench.wade.runs import run_sequence_model

    runs = list(SEQUENCE_RUNS) + [(spec, USER_CONFIG) for spec in args.user_models]
    if len(args.outputs) != len(runs):
        raise ConfigError("outputs", f"{len(args.outputs)} outputs for the {len(runs)} sequence-model runs")
    device = choose_device(args.device, args.threads)
    d = _dataset(args.data, args.seed)
    for (model, config), output in zip(runs, args.outputs):
        run_sequence_model(d, model, config, args.epochs, output, args.scale, str(device))
        log(f"task {d.task_id} seed {d.seed}: {model}/{config} done")


def cmd_train_imdb(args) -> None:
    from reprobench.core.device import choose_device
    from reprobench.core.errors import ConfigError
    from reprobench.core.plugins import USER_CLASS, spec_of
    from reprobench.wade import imdb_models, imdb_runs

    model = spec_of(args.model) or args.model  # the rule passes a user's class by its run id
    if model not in imdb_models.MODELS and not USER_CLASS.match(model):
        raise ConfigError("wade.imdb.models", f"unknown model '{args.model}' (known: {', '.join(imdb_models.MODELS)}, "
                          "or a user's 'package.module:Class')")
    device = choose_device(args.device, args.threads)
    imdb_runs.train_run(args.data, model, args.seed, args.epochs, args.eval_every, args.out, args.scale,
                        str(device), checkpoint=args.checkpoint, checkpoint_every_s=60 * args.checkpoint_minutes)
    log(f"IMDB {args.model} seed {args.seed} done")


def _write_aggregate(args, experiment: str, runs, mean_curves) -> None:
    from reprobench.core import curves
    from reprobench.wade import PAPER

    record = curves.summary_record(PAPER.id, experiment, "aggregate", curves.scale_label(runs), "faithful,corrected")
    curves.write_frame(runs, args.out, record)
    curves.write_frame(mean_curves, args.mean_curves_out, record | {"stage": "mean-curves"})
    log(f"{len(args.curves)} curves -> {len(runs)} run x variant rows")


def cmd_aggregate_synthetic(args) -> None:
    from reprobench.core.errors import ConfigError
    from reprobench.wade.grid import synthetic_curves
    from reprobench.wade.summary import aggregate_synthetic

    if bool(args.tasks) != bool(args.seeds):
        raise ConfigError("seeds", "--seeds goes with --tasks (or name the --curves)")
    args.curves = args.curves or synthetic_curves(args.tasks, args.seeds, args.user_models)
    _write_aggregate(args, "synthetic", *aggregate_synthetic(args.curves))


def cmd_aggregate_imdb(args) -> None:
    from reprobench.wade.summary import aggregate_imdb

    _write_aggregate(args, "imdb", *aggregate_imdb(args.curves))


def cmd_render(args) -> None:
    """One table or figure, named by the subcommand, from the aggregates (or datasets) named on the command line."""
    from reprobench.core.curves import read_metadata, scale_label
    from reprobench.wade import render, summary, tasks

    stem = output_stem(args.out, args.formats)
    if args.stage == "table6":
        datasets = {d.task_id: d for d in map(tasks.read, args.data)}
        written = render.table6(datasets, stem, ",".join(sorted({str(read_metadata(p)["scale"]) for p in args.data})),
                                args.user_models)
    else:
        experiment = "imdb" if args.stage in ("table2", "figure2") else "synthetic"
        runs = summary.read(args.runs, experiment)
        mean_curves = summary.read(args.mean_curves, f"{experiment}_mean_curves") if "mean_curves" in args else None
        scale = scale_label(runs)
        written = {
            "table2": lambda: render.table2(runs, stem),
            "table4": lambda: render.table4(runs, stem, scale, args.human_sessions),
            "table5": lambda: render.table5(runs, mean_curves, stem, scale),
            "figure1": lambda: render.figure1(mean_curves, runs, stem),
            "figure2": lambda: render.figure2(mean_curves, runs, stem),
            "figure3": lambda: render.figure3(runs, mean_curves, stem, args.variant, scale),
        }[args.stage]()
    log(f"wrote {written}")


def cmd_compare(args) -> None:
    from reprobench.core import compare, yours
    from reprobench.wade import render, summary

    runs, mean_curves = summary.read(args.runs, "synthetic"), summary.read(args.mean_curves, "synthetic_mean_curves")
    accuracy, imdb_runs = render.accuracy_frame(runs, mean_curves), summary.read(args.imdb_runs, "imdb")
    rows = render.comparison(runs, accuracy) + render.imdb_comparison(imdb_runs)
    out = output_stem(args.out, args.formats) + ".csv"
    frame = compare.write(rows, out)
    yours.write_rows(render.yours_rows(runs, accuracy, imdb_runs), args.yours)
    log(f"wrote {out}: {len(frame)} rows, {int(frame['within'].eq(True).sum())} within")


def cmd_human(args) -> None:
    from reprobench.wade import human, tasks
    from reprobench.wade.grid import HUMAN_SESSION

    dataset = tasks.generate(tasks.task_spec(args.task).id, args.data_seed, max_n_seq=tasks.PAPER_MAX_SEQUENCES)
    out = args.out or HUMAN_SESSION.format(task=args.task, seed=args.seed)
    score = human.run_session(dataset, args.seed, args.streak, out)
    log(f"session saved to {out}; WADE {score:.3f}")
