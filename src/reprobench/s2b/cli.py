"""`reprobench s2b <stage>`: one subcommand per rule of workflow/rules/s2b.smk. Parse, call, write; the work is in
the modules named by each handler. Heavy imports happen inside the handlers."""

from __future__ import annotations

from reprobench.core.cli import add_output, add_training_options, output_stem


def register(sub) -> None:
    from reprobench.s2b import PAPER
    from reprobench.s2b.grid import EXPERIMENTS, FIGURES, SIZES, TABLES

    p = sub.add_parser("s2b", help=f"{PAPER.title} ({PAPER.citation})")
    s = p.add_subparsers(dest="stage", required=True)

    t = s.add_parser("speaker", help="the posdis speaker's topsim, posdis and bosdis over episodes (Table 1, PS)")
    t.add_argument("--seed", type=int, required=True)
    t.add_argument("--episodes", type=int, required=True)
    t.add_argument("--v-min", type=int, required=True)
    t.add_argument("--v-max", type=int, required=True)
    t.add_argument("--eoa-episodes", type=int, default=0, help="episodes scored by the EoA listener (0: none)")
    t.add_argument("--eoa-epochs", type=int, default=512)
    t.add_argument("--scale", required=True)
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_speaker)

    t = s.add_parser("disentanglement", help="FactorVAE, MIG, Modularity of SCS stimuli (Appendix D.2)")
    t.add_argument("--seed", type=int, required=True)
    t.add_argument("--n-oc", type=int, nargs="+", required=True)
    t.add_argument("--scale", required=True)
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_disentanglement)

    t = s.add_parser("train", help="one run: Table 2 (--n-oc, --shots; --model r2d2 or a user's agent class) or "
                                   "Tables 1, 4 / Figures 5, 6 (--model)")
    t.add_argument("--experiment", required=True, choices=["zsct", *EXPERIMENTS])
    t.add_argument("--n-oc", type=int, help="Table 2: object-centric samples O")
    t.add_argument("--shots", type=int, help="Table 2: shots S")
    t.add_argument("--model", required=True, help="zsct: r2d2 or 'package.module:Class' (reprobench.s2b.agents); "
                                                   "table1 / table4 / fig5 / fig6: a model of "
                                                   "reprobench.s2b.grid.EXPERIMENTS")
    t.add_argument("--variant", required=True, choices=["faithful", "corrected"])
    t.add_argument("--seed", type=int, required=True)
    t.add_argument("--sizes", required=True, choices=SIZES)
    t.add_argument("--observations", type=int, required=True, help="the budget: observations summed over actors")
    t.add_argument("--eval-every", type=int, required=True)
    add_training_options(t, checkpoint=True)
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_train)

    t = s.add_parser("aggregate-zsct", help="the last evaluation of every Table 2 run")
    t.add_argument("--curves", nargs="+", required=True)
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_aggregate_zsct)

    for name in ("table2", "table4"):
        t = s.add_parser(name, help=f"{TABLES[name].title}: {TABLES[name].stem}.*")
        t.add_argument("--zsct", required=True)
        add_output(t, "table")
        t.set_defaults(func=cmd_zsct_table, product=name)
    for name in ("figure5", "figure6"):
        t = s.add_parser(name, help=f"{FIGURES[name].title}: {FIGURES[name].stem}.*")
        t.add_argument("--curves", nargs="+", required=True)
        add_output(t, "figure")
        t.set_defaults(func=cmd_curves_figure, product=name)

    t = s.add_parser("aggregate", help="per-seed means of every probe")
    t.add_argument("--curves", nargs="+", required=True)
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_aggregate)

    for name in ("table1", "tableD2"):
        t = s.add_parser(name, help=f"{TABLES[name].title}: {TABLES[name].stem}.*")
        t.add_argument("--probes", required=True)
        if name == "table1":
            t.add_argument("--zsct", help="zsct.parquet, for the learned (multi-agent) columns")
        add_output(t, "table")
        t.set_defaults(func=cmd_table, product=name)
    t = s.add_parser("table3", help=f"{TABLES['table3'].title}: {TABLES['table3'].stem}.*")
    add_output(t, "table")
    t.set_defaults(func=cmd_table3)
    for name in ("figure3", "figure4"):
        t = s.add_parser(name, help=f"{FIGURES[name].title}: {FIGURES[name].stem}.*")
        t.add_argument("--seed", type=int, required=True, help="the episode's seed")
        add_output(t, "figure")
        t.set_defaults(func=cmd_figure, product=name)

    t = s.add_parser("compare", help="published vs reproduced numbers")
    t.add_argument("--probes", required=True)
    t.add_argument("--zsct", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--yours", required=True, help="the rows of the 'Your model' table (core.yours)")
    t.set_defaults(func=cmd_compare)


def cmd_speaker(args) -> None:
    from reprobench.s2b import runs

    runs.speaker_run(args.seed, args.episodes, args.out, args.scale, args.v_min, args.v_max, args.eoa_episodes,
                     args.eoa_epochs)


def cmd_disentanglement(args) -> None:
    from reprobench.s2b import runs

    runs.disentanglement_run(args.seed, args.n_oc, args.out, args.scale)


def cmd_train(args) -> None:
    from reprobench.core.device import choose_device
    from reprobench.core.errors import ConfigError
    from reprobench.core.plugins import USER_CLASS
    from reprobench.s2b import runs
    from reprobench.s2b.grid import EXPERIMENTS, USER_CORE_EXPERIMENT

    if args.experiment == "zsct":
        if args.n_oc is None or args.shots is None:
            raise ConfigError("--n-oc/--shots", "the zsct experiment needs both")
        config = runs.zsct_config(args.n_oc, args.shots, args.variant, args.seed, args.sizes, args.observations,
                                  args.eval_every)
        setting = {"n_oc": args.n_oc, "shots": args.shots}
    else:
        known = EXPERIMENTS[args.experiment]
        user = args.experiment == USER_CORE_EXPERIMENT and USER_CLASS.match(args.model)
        if args.model not in known and not user:
            raise ConfigError("--model", f"{args.model!r} is not a {args.experiment} model; known: {sorted(known)}" +
                              (", or a user's core 'package.module:Class'" if args.experiment == USER_CORE_EXPERIMENT
                               else ""))
        config = runs.experiment_config(args.experiment, args.model, args.variant, args.seed, args.sizes,
                                          args.observations, args.eval_every)
        setting = {"model": args.model}
    device = choose_device(args.device, args.threads)
    runs.train_run(config, args.experiment, args.model, setting, args.variant, args.sizes, args.out, args.scale,
                   str(device), args.checkpoint, args.checkpoint_minutes)


def cmd_aggregate_zsct(args) -> None:
    from reprobench.s2b import summary

    summary.aggregate_zsct(args.curves, args.out)


def cmd_zsct_table(args) -> None:
    from reprobench.s2b import render, summary

    draw = {"table2": render.table2, "table4": render.table4}[args.product]
    draw(summary.read_zsct(args.zsct), output_stem(args.out, (".md", ".csv", ".tex")))


def cmd_curves_figure(args) -> None:
    from reprobench.s2b import render

    draw = {"figure5": render.figure5, "figure6": render.figure6}[args.product]
    draw(args.curves, output_stem(args.out, (".png", ".pdf")))


def cmd_aggregate(args) -> None:
    from reprobench.s2b import summary

    summary.aggregate(args.curves, args.out)


def cmd_table(args) -> None:
    from reprobench.core.errors import ResultsFileError
    from reprobench.s2b import render, summary

    stem, probes = output_stem(args.out, (".md", ".csv", ".tex")), summary.read_probes(args.probes)
    if args.product == "table1":
        render.table1(probes, stem, zsct=summary.read_zsct(args.zsct) if args.zsct else None)
    else:
        if not (probes["experiment"] == "disentanglement").any():  # Appendix D.2 is made of these rows only
            raise ResultsFileError(args.probes, "has no disentanglement rows (s2b.disentanglement.seeds: 0?)")
        render.tableD2(probes, stem)


def cmd_table3(args) -> None:
    from reprobench.s2b import render

    render.table3(output_stem(args.out, (".md", ".csv", ".tex")))


def cmd_figure(args) -> None:
    from reprobench.s2b import render

    draw = {"figure3": render.figure3, "figure4": render.figure4}[args.product]
    draw(output_stem(args.out, (".png", ".pdf")), args.seed)


def cmd_compare(args) -> None:
    from reprobench.core import compare, yours
    from reprobench.s2b import render, summary

    zsct = summary.read_zsct(args.zsct)
    compare.write(render.comparison_rows(summary.read_probes(args.probes), zsct), args.out)
    yours.write_rows(render.yours_rows(zsct), args.yours)
