"""`reprobench calm <stage>`: one subcommand per rule of workflow/rules/calm.smk. Parse, call, write; the work is
in the modules named by each handler. Heavy imports happen inside the handlers."""

from __future__ import annotations

import json

from reprobench.core.cli import add_output, add_training_options, output_stem


def register(sub) -> None:
    from reprobench.calm import PAPER
    from reprobench.calm.grid import FIGURES, TABLES

    p = sub.add_parser("calm", help=f"{PAPER.title} ({PAPER.citation})")
    s = p.add_subparsers(dest="stage", required=True)

    t = s.add_parser("prepare", help="the corpora (download or synthetic stand-in), tokenised for the planned streams")
    t.add_argument("--source", choices=["synthetic", "download"], required=True)
    t.add_argument("--resources", required=True, help="folder for the archives or the stand-in corpus")
    t.add_argument("--datasets", nargs="+", required=True)
    t.add_argument("--lambdas", required=True, help='JSON {dataset: [lambda, ...]}')
    t.add_argument("--seeds", type=int, required=True, help="plan the streams of seeds 0 .. N-1")
    t.add_argument("--n-fragments", type=int, required=True)
    t.add_argument("--window", type=int, required=True)
    t.add_argument("--synthetic-chars", type=int, required=True, help="synthetic: characters per language")
    t.add_argument("--synthetic-words", type=int, required=True, help="synthetic: words per domain")
    t.add_argument("--top-words", type=int, required=True, help="word vocabulary per domain (paper: 25000)")
    t.add_argument("--splits", nargs="+", default=["test"], choices=["test", "dev"],
                   help="corpus halves to tokenise (dev: Appendix C's Transformer)")
    t.add_argument("--out", required=True, help="corpora.json")
    t.set_defaults(func=cmd_prepare)

    t = s.add_parser("train", help="online runs: a model on one stream (--dataset ... --out), or several in turn "
                     "(--runs: a pack, calm.runs_per_job)")
    t.add_argument("--corpora", required=True, help="corpora.json of the prepare stage")
    t.add_argument("--runs", help="JSON list of runs, each with dataset, lam, model, variant, seed, out, checkpoint "
                   "(calm.grid.Grid.pack_json), in place of the one run's options")
    t.add_argument("--dataset")
    t.add_argument("--lam", type=int)
    t.add_argument("--model", help="a paper model (reprobench.calm.zoo.MODELS) or package.module:Class")
    t.add_argument("--variant")
    t.add_argument("--seed", type=int)
    t.add_argument("--n-fragments", type=int, required=True)
    t.add_argument("--window", type=int, required=True)
    t.add_argument("--size-factor", type=float, required=True)
    t.add_argument("--max-gate-steps", type=int, required=True, help="cap on the plastic gate's k (0: none)")
    add_training_options(t)
    t.add_argument("--checkpoint", help="resume from / save to this file; removed when the run completes")
    t.add_argument("--checkpoint-minutes", type=float, required=True)
    t.add_argument("--out")
    t.set_defaults(func=cmd_train)

    t = s.add_parser("aggregate", help="metrics of every run; loss after switches")
    which = t.add_mutually_exclusive_group(required=True)  # paper scale: the paths come near the 128 KiB argument cap
    which.add_argument("--curves", nargs="+", help="curve files")
    which.add_argument("--grid", help="JSON of grid.Grid.curve_keys: every curve file of the config")
    t.add_argument("--out", required=True)
    t.add_argument("--switch-out", required=True)
    t.set_defaults(func=cmd_aggregate)

    products = {**TABLES, **FIGURES}
    for name, command in (("table1", "table1"), ("table4_std", "table4"), ("appendix_c_transformer", "appendix-c")):
        t = s.add_parser(command, help=f"{products[name].title}: {products[name].stem}.*")
        t.add_argument("--runs", required=True)
        add_output(t, "table")
        t.set_defaults(func=cmd_table, product=name)
    t = s.add_parser("table2", help=f"{TABLES['table2_model_sizes'].title}: {TABLES['table2_model_sizes'].stem}.*")
    add_output(t, "table")
    t.set_defaults(func=cmd_table2)
    for name in ("figure1b", "figure1c"):
        t = s.add_parser(name, help=f"{products[name].title}: {products[name].stem}.*")
        t.add_argument("--runs", required=True)
        t.add_argument("--switch", required=True)
        t.add_argument("--variant", required=True)
        add_output(t, "figure")
        t.set_defaults(func=cmd_switch_figure, product=name)
    for name in ("figure1d", "figure1e", "figure4"):
        t = s.add_parser(name, help=f"{products[name].title}: {products[name].stem}.*")
        t.add_argument("--curve", required=True, help="a PoE+PW 30 curve file (with gate weights)")
        add_output(t, "figure")
        t.set_defaults(func=cmd_weight_figure, product=name)

    t = s.add_parser("appendix-a", help="Appendix A: the first lines of every class of the prepared corpora")
    t.add_argument("--corpora", required=True, help="corpora.json of the prepare stage")
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_appendix_a)
    t = s.add_parser("appendix-d", help="Appendix D: the text each model generated at stages of its stream")
    t.add_argument("--curves", nargs="+", required=True, help="seed-0 curve files (their records hold the samples)")
    t.add_argument("--out", nargs="+", required=True, help="one .../appendix_d_<model>.txt per model")
    t.set_defaults(func=cmd_appendix_d)

    t = s.add_parser("compare", help="published vs reproduced numbers")
    t.add_argument("--runs", required=True)
    t.add_argument("--weight-curves", nargs="*", default=[], help="dataset=path of PoE+PW 30 curves (Appendix B)")
    t.add_argument("--out", required=True)
    t.add_argument("--yours", required=True, help="the rows of the 'Your model' table (core.yours)")
    t.set_defaults(func=cmd_compare)


def cmd_prepare(args) -> None:
    from reprobench.calm import runs

    runs.prepare(args.source, args.resources, args.datasets, json.loads(args.lambdas), args.seeds, args.n_fragments,
                 args.window, args.out, args.synthetic_chars, args.synthetic_words, args.top_words,
                 tuple(args.splits))


def cmd_train(args) -> None:
    from reprobench.calm import runs
    from reprobench.core.device import choose_device
    from reprobench.core.errors import ConfigError

    one = ("dataset", "lam", "model", "variant", "seed", "out", "checkpoint")
    if args.runs is not None:
        try:
            todo = json.loads(args.runs)
            todo = [{k: run[k] for k in one} for run in todo]
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError("runs", f"not a JSON list of runs with the keys {', '.join(one)} ({exc!r})") from None
    else:
        missing = [f"--{k}" for k in one if getattr(args, k) is None]
        if missing:
            raise ConfigError("train", f"give --runs, or every one of {', '.join(missing)}")
        todo = [{k: getattr(args, k) for k in one}]
    device = choose_device(args.device, args.threads)
    for run in todo:  # one process: torch and the optimiser's set-up once, the corpora read once (core.packs)
        runs.train_run(args.corpora, run["dataset"], int(run["lam"]), run["model"], run["variant"], int(run["seed"]),
                       args.n_fragments, args.window, args.size_factor, args.max_gate_steps, run["out"], args.scale,
                       str(device), run["checkpoint"], args.checkpoint_minutes * 60)


def cmd_aggregate(args) -> None:
    from reprobench.calm import summary
    from reprobench.calm.grid import Grid
    from reprobench.core.errors import ConfigError

    if args.grid is not None:
        try:
            args.curves = Grid(json.loads(args.grid)).curves()
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError("grid", f"not the JSON of calm Grid.curve_keys ({exc!r})") from None
    summary.aggregate(args.curves, args.out, args.switch_out)


def cmd_table(args) -> None:
    from reprobench.calm import render, summary

    stem = output_stem(args.out, (".md", ".csv", ".tex"))
    draw = {"table1": render.table1, "table4_std": render.table4, "appendix_c_transformer": render.appendix_c}
    draw[args.product](summary.read_runs(args.runs), stem)


def cmd_table2(args) -> None:
    from reprobench.calm import render

    render.table2(output_stem(args.out, (".md", ".csv", ".tex")))


def cmd_switch_figure(args) -> None:
    from reprobench.calm import render, summary

    dataset = "multilingual" if args.product == "figure1b" else "multidomain"
    render.switch_figure(summary.read_switch(args.switch), summary.read_runs(args.runs), dataset,
                         output_stem(args.out, (".png", ".pdf")), args.variant)


def cmd_weight_figure(args) -> None:
    from reprobench.calm import render

    draw = {"figure1d": render.figure1d, "figure1e": render.figure1e, "figure4": render.figure4}[args.product]
    draw(args.curve, output_stem(args.out, (".png", ".pdf")))


def cmd_appendix_a(args) -> None:
    from reprobench.calm import runs, samples

    info = runs.read_corpora(args.corpora)
    samples.appendix_a({d: i["split_dir"] for d, i in info.items()}, args.out,
                       any(i["synthetic"] for i in info.values()))


def cmd_appendix_d(args) -> None:
    from pathlib import Path

    from reprobench.calm import samples
    from reprobench.calm.grid import APPENDIX_D
    from reprobench.calm.summary import CURVE
    from reprobench.core import curves
    from reprobench.core.errors import ConfigError

    records = [record for _, _, record in curves.read_curves(args.curves, expect=CURVE)]
    prefix, suffix = APPENDIX_D.split("{model}")
    for out in args.out:
        name = Path(out).name
        if not (name.startswith(Path(prefix).name) and name.endswith(suffix)):
            raise ConfigError("out", f"expected {APPENDIX_D}, got '{out}'")
        model = name[len(Path(prefix).name):-len(suffix)]
        mine = [r for r in records if r["model"].replace(":", ".") == model]
        if not mine:
            raise ConfigError("curves", f"no curve of model '{model}' given for {out}")
        by_dataset = {}
        for r in mine:
            by_dataset.setdefault(r["setting"]["dataset"], []).append(r)
        samples.appendix_d(by_dataset, out, any(r["setting"]["synthetic"] for r in mine))


def cmd_compare(args) -> None:
    from reprobench.calm import render, summary
    from reprobench.core import compare, yours
    from reprobench.core.errors import ConfigError

    curves = {}
    for item in args.weight_curves:
        dataset, sep, path = item.partition("=")
        if not sep:
            raise ConfigError("weight-curves", f"expected dataset=path, got '{item}'")
        curves[dataset] = path
    runs = summary.read_runs(args.runs)
    compare.write(render.comparison_rows(runs, curves), args.out)
    yours.write_rows(render.yours_rows(runs), args.yours)
