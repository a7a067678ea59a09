"""`reprobench wade ...`: the WADE benchmark's pipeline stages (synthetic tasks)."""

from __future__ import annotations

from reprobench.cli import add_training_options
from reprobench.core.progress import log


def register(sub) -> None:
    p = sub.add_parser("wade", help="learning efficiency of reservoirs vs trained models (Cisneros et al. 2022)")
    s = p.add_subparsers(dest="stage", required=True)

    t = s.add_parser("prepare", help="generate one task's dataset for one seed")
    t.add_argument("--task", type=int, required=True)
    t.add_argument("--seed", type=int, required=True)
    t.add_argument("--max-sequences", type=int, default=1200)
    t.add_argument("--scale", default="small")
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_prepare)

    t = s.add_parser("reservoir", help="ReCA (every listed rule, one tensor) and ESN runs on one dataset")
    t.add_argument("--data", required=True)
    t.add_argument("--rules", type=int, nargs="*", default=[])
    t.add_argument("--rule-outputs", nargs="*", default=[])
    t.add_argument("--esn-output")
    t.add_argument("--rules-per-chunk", type=int, default=32)
    add_training_options(t)
    t.set_defaults(func=cmd_reservoir)

    t = s.add_parser("sequence", help="RNN, LSTM and Transformer runs on one dataset")
    t.add_argument("--data", required=True)
    t.add_argument("--runs", nargs="+", required=True, help="model:variant=output, e.g. transformer:corrected=x.parquet")
    t.add_argument("--epochs", type=int, default=10)
    add_training_options(t)
    t.set_defaults(func=cmd_sequence)

    t = s.add_parser("aggregate", help="WADE and accuracy of every run; mean curves")
    t.add_argument("--curves", nargs="+", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--curves-out", required=True)
    t.set_defaults(func=cmd_aggregate)

    t = s.add_parser("render", help="tables 4, 5, 6, figures 1 and 3, comparison")
    t.add_argument("--runs", required=True)
    t.add_argument("--mean-curves", required=True)
    t.add_argument("--data", nargs="+", required=True, help="one dataset per task (for table 6)")
    t.add_argument("--tables", required=True, help="output folder for tables")
    t.add_argument("--figures", required=True, help="output folder for figures")
    t.add_argument("--comparison", required=True)
    t.add_argument("--figure-variant", default="faithful", choices=["faithful", "corrected"])
    t.add_argument("--imdb-runs", help="metrics/imdb.parquet, to add Table 2 to the comparison")
    t.add_argument("--human-sessions", nargs="*", default=[], help="recorded sessions for Table 4's Human column")
    t.set_defaults(func=cmd_render)

    t = s.add_parser("human", help="play a task yourself (obfuscated tokens) and save the session")
    t.add_argument("--task", type=int, required=True)
    t.add_argument("--seed", type=int, default=0, help="letter mapping and sequence order")
    t.add_argument("--data-seed", type=int, default=12305)
    t.add_argument("--streak", type=int, default=10,
                   help="correct answers in a row that end the task: 10 as the paper describes; 5 as the reference "
                        "game that produced the published human scores")
    t.add_argument("--out", help="session file (default results/wade/human/task=<t>/seed=<s>.parquet)")
    t.set_defaults(func=cmd_human)

    t = s.add_parser("imdb-prepare", help="IMDB (download or synthetic stand-in), tokenized")
    t.add_argument("--source", choices=["synthetic", "download"], required=True)
    t.add_argument("--resources", required=True, help="folder for the archive or the stand-in corpus")
    t.add_argument("--train", type=int, default=800, help="synthetic: training reviews")
    t.add_argument("--test", type=int, default=400, help="synthetic: test reviews")
    t.add_argument("--scale", default="small")
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_imdb_prepare)

    t = s.add_parser("imdb-train", help="one IMDB model and seed")
    t.add_argument("--data", required=True)
    t.add_argument("--model", required=True)
    t.add_argument("--seed", type=int, required=True)
    t.add_argument("--epochs", type=int, default=10)
    t.add_argument("--eval-every", type=int, default=400, help="examples between test evaluations")
    add_training_options(t, checkpoint=True)
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_imdb_train)

    t = s.add_parser("imdb-render", help="Table 2 and Figure 2")
    t.add_argument("--curves", nargs="+", required=True)
    t.add_argument("--runs-out", required=True)
    t.add_argument("--tables", required=True)
    t.add_argument("--figures", required=True)
    t.set_defaults(func=cmd_imdb_render)


def cmd_prepare(args) -> None:
    from reprobench.wade import tasks

    d = tasks.generate(args.task, args.seed, max_n_seq=args.max_sequences)
    tasks.write(d, args.out, args.scale)
    log(f"task {args.task} seed {args.seed}: {len(d.tokens)} sequences ({int(d.train.sum())} train), "
        f"vocabulary {len(d.vocabulary)}")


def cmd_reservoir(args) -> None:
    from reprobench.core.device import choose_device, describe
    from reprobench.core.errors import ConfigError
    from reprobench.wade import tasks
    from reprobench.wade.runs import run_reservoirs

    if len(args.rules) != len(args.rule_outputs):
        raise ConfigError("rule-outputs", f"{len(args.rule_outputs)} outputs for {len(args.rules)} rules")
    bad = [r for r in args.rules if not 0 <= r <= 255]
    if bad:
        raise ConfigError("wade.reca_rules", f"rule {bad[0]} is outside 0-255")
    device = choose_device(args.device, args.threads)
    d = tasks.read(args.data)
    run_reservoirs(d, d.seed, args.rules, args.rule_outputs, args.esn_output, args.scale, str(device),
                   args.rules_per_chunk)
    log(f"task {d.task_id} seed {d.seed}: {len(args.rules)} rules{' + ESN' if args.esn_output else ''} on {describe(device)}")


def cmd_sequence(args) -> None:
    from reprobench.core.device import choose_device
    from reprobench.core.errors import ConfigError
    from reprobench.wade import tasks
    from reprobench.wade.runs import run_sequence_model

    device = choose_device(args.device, args.threads)
    d = tasks.read(args.data)
    for spec in args.runs:
        name, _, output = spec.partition("=")
        model, _, variant = name.partition(":")
        if model not in ("rnn", "lstm", "transformer") or not output:
            raise ConfigError("wade.models", f"cannot read run '{spec}' (model:variant=output)")
        run_sequence_model(d, d.seed, model, variant or "faithful", args.epochs, output, args.scale, str(device))
        log(f"task {d.task_id} seed {d.seed}: {name} done")


def cmd_aggregate(args) -> None:
    import pandas as pd
    import pyarrow as pa

    from reprobench.core import curves
    from reprobench.wade import PAPER
    from reprobench.wade.summary import mean_curve, run_summary

    rows, accs = [], {}
    for path in args.curves:
        frame, record = curves.read_curve(path)
        table = curves.wide(frame)
        rows += run_summary(table, record)
        key = (int(record["setting"]["task"]), record["model"], record["setting"]["config"])
        accs.setdefault(key, []).append((table["accuracy"].to_numpy(), table["sequences"].to_numpy()))
    runs = pd.DataFrame(rows)
    mean_rows = []
    for (task, model, config), series in accs.items():
        mean, std = mean_curve([a for a, _ in series])
        sequences, _ = mean_curve([s for _, s in series])
        mean_rows += [{"task": task, "model": model, "config": config, "step": k, "sequences": sequences[k],
                       "mean": mean[k], "std": std[k], "n": len(series)} for k in range(len(mean))]
    meta = {"paper": PAPER, "experiment": "synthetic", "stage": "aggregate", "scale": ",".join(sorted(runs["scale"].unique())),
            "variant": "faithful,corrected", **curves.base_record()}
    curves.write_table(pa.Table.from_pandas(runs, preserve_index=False), args.out, meta)
    curves.write_table(pa.Table.from_pandas(pd.DataFrame(mean_rows), preserve_index=False), args.curves_out,
                       meta | {"stage": "mean-curves"})
    log(f"{len(args.curves)} curves -> {len(runs)} run x variant rows")


def cmd_render(args) -> None:
    import os

    import pandas as pd

    from reprobench.core import compare
    from reprobench.core.curves import read_metadata
    from reprobench.wade import render, tasks

    for path in (args.runs, args.mean_curves):
        read_metadata(path)
    runs, mean_curves = pd.read_parquet(args.runs), pd.read_parquet(args.mean_curves)
    scale = ",".join(sorted(runs["scale"].unique()))
    datasets = {}
    for path in args.data:
        d = tasks.read(path)
        datasets[d.task_id] = d
    t, f = args.tables, args.figures
    render.table4(runs, os.path.join(t, "table4_wade"), scale, args.human_sessions)
    render.table5(runs, mean_curves, os.path.join(t, "table5_accuracy"), scale)
    render.table6(datasets, os.path.join(t, "table6_parameters"), scale)
    render.figure1(mean_curves, runs, os.path.join(f, "figure1_time_to_threshold"))
    render.figure3(runs, mean_curves, os.path.join(f, "figure3_learning_curves"), args.figure_variant, scale)
    rows = render.comparison(runs, render.accuracy_frame(runs, mean_curves))
    if args.imdb_runs:
        from reprobench.wade import imdb_runs

        read_metadata(args.imdb_runs)
        rows += imdb_runs.comparison(pd.read_parquet(args.imdb_runs))
    frame = compare.write(rows, args.comparison)
    log(f"rendered; comparison {len(frame)} rows, {int(frame['within'].eq(True).sum())} within")


def cmd_imdb_prepare(args) -> None:
    from reprobench.wade import imdb_runs

    imdb_runs.prepare(args.source, args.resources, args.out, args.scale, args.train, args.test)
    log(f"IMDB ({args.source}) tokenized into {args.out}")


def cmd_imdb_train(args) -> None:
    from reprobench.core.device import choose_device
    from reprobench.core.errors import ConfigError
    from reprobench.wade import imdb_models, imdb_runs

    if args.model not in imdb_models.MODELS:
        raise ConfigError("wade.imdb.models", f"unknown model '{args.model}' (known: {', '.join(imdb_models.MODELS)})")
    device = choose_device(args.device, args.threads)
    imdb_runs.train_run(args.data, args.model, args.seed, args.epochs, args.eval_every, args.out, args.scale,
                        str(device), checkpoint=args.checkpoint, checkpoint_every_s=60 * args.checkpoint_minutes)
    log(f"IMDB {args.model} seed {args.seed} done")


def cmd_imdb_render(args) -> None:
    import os

    import pyarrow as pa

    from reprobench.core import curves
    from reprobench.wade import PAPER, imdb_runs

    runs, mean_curves = imdb_runs.summarise(args.curves)
    curves.write_table(pa.Table.from_pandas(runs, preserve_index=False), args.runs_out,
                       {"paper": PAPER, "experiment": "imdb", "stage": "aggregate",
                        "scale": ",".join(sorted(runs["scale"].unique())), "variant": "faithful,corrected",
                        **curves.base_record()})
    imdb_runs.table2(runs, os.path.join(args.tables, "table2_imdb"))
    imdb_runs.figure2(mean_curves, runs, os.path.join(args.figures, "figure2_imdb_curves"))
    log(f"IMDB: {len(args.curves)} runs rendered")


def cmd_human(args) -> None:
    from reprobench.wade import human, tasks

    dataset = tasks.generate(tasks.task_spec(args.task).id, args.data_seed)
    out = args.out or f"results/wade/human/task={args.task}/seed={args.seed}.parquet"
    score = human.run_session(dataset, args.seed, args.streak, out)
    log(f"session saved to {out}; WADE {score:.3f}")
