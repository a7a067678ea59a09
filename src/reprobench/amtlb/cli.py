"""`reprobench amtlb <stage>`: one subcommand per rule of workflow/rules/amtlb.smk. Parse, call, write; the work is
in the modules named by each handler. Heavy imports happen inside the handlers."""

from __future__ import annotations

import json

from reprobench.core.cli import add_output, add_training_options, output_stem


def register(sub) -> None:
    from reprobench.amtlb import PAPER
    from reprobench.amtlb.grid import FIGURES, KINDS, TABLES

    p = sub.add_parser("amtlb", help=f"{PAPER.title} ({PAPER.citation})")
    s = p.add_subparsers(dest="stage", required=True)

    t = s.add_parser("parameters", help="the benchmark's parameters (folds, seed, games) as JSON, as BenchmarkParms")
    t.add_argument("--parms", required=True, help="JSON of protocol.BenchmarkParms' fields")
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_parameters)

    t = s.add_parser("train", help="one run: an instance of the architecture on its games until the quotas are spent")
    t.add_argument("--kind", required=True, choices=KINDS)
    t.add_argument("--architecture", required=True, help="ppo, random, or a user's 'package.module:Class'")
    t.add_argument("--games", nargs="+", required=True)
    t.add_argument("--seed", type=int, required=True)
    t.add_argument("--fold", type=int)
    t.add_argument("--frames-per-game", type=int, required=True)
    t.add_argument("--num-envs", type=int, required=True)
    t.add_argument("--schedule-frames-per-game", type=_int_or_none, required=True,
                   help="the horizon of the architecture's schedules in frames per game, or None: the run's budget")
    t.add_argument("--atari", required=True, help="JSON of atari.AtariSettings' fields")
    t.add_argument("--emulator-threads", default="threads",
                   help="worker threads stepping the emulators: a number, 'threads' (as --threads) or 'auto' (every "
                        "CPU this process may run on)")
    t.add_argument("--load-weights", help="transfer: the fold's saved weights")
    t.add_argument("--save-weights", help="pretrain: where the trained instance's weights go")
    add_training_options(t, checkpoint=True)
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_train)

    t = s.add_parser("aggregate", help="C(t), transfer ratios and multitask scores from every run")
    t.add_argument("--curves", nargs="+", required=True)
    t.add_argument("--frames-per-game", type=int, required=True)
    t.add_argument("--points", type=int, required=True)
    t.add_argument("--eps", type=float, required=True)
    t.add_argument("--transfer", required=True)
    t.add_argument("--multitask", required=True)
    t.add_argument("--scores", required=True)
    t.set_defaults(func=cmd_aggregate)

    for name in TABLES:
        t = s.add_parser(name.replace("_", "-"), help=f"{TABLES[name].title}: {TABLES[name].stem}.*")
        t.add_argument("--metrics", required=True)
        add_output(t, "table")
        t.set_defaults(func=cmd_product, product=name, kind="table")
    for name in FIGURES:
        t = s.add_parser(name.replace("_", "-"), help=f"{FIGURES[name].title}: {FIGURES[name].stem}.*")
        t.add_argument("--metrics", required=True)
        add_output(t, "figure")
        t.set_defaults(func=cmd_product, product=name, kind="figure")

    t = s.add_parser("compare", help="the specialists' scores against published agents' at the same frame count")
    t.add_argument("--scores", required=True)
    t.add_argument("--frames-per-game", type=int, required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--architecture", required=True, help="the architecture under test (config amtlb.architecture)")
    t.add_argument("--yours", required=True, help="the rows of the 'Your model' table (core.yours)")
    t.set_defaults(func=cmd_compare)


# the aggregate (reprobench.amtlb.summary.COLUMNS) each table and figure reads
AGGREGATE_OF = {"transfer": "transfer", "multitask_scores": "scores", "transfer_ratio": "transfer",
                "transfer_per_game": "transfer", "multitask_curves": "multitask"}


def _int_or_none(text: str) -> int | None:
    return None if text in ("None", "null") else int(text)


def cmd_parameters(args) -> None:
    from reprobench.amtlb.protocol import BenchmarkParms

    parms = json.loads(args.parms)
    BenchmarkParms(**{**parms, "games": tuple(parms["games"])}).save(args.out)


def cmd_train(args) -> None:
    from reprobench.amtlb import runs

    runs.run(args.kind, args.architecture, args.games, args.seed, args.out, frames_per_game=args.frames_per_game,
             num_envs=args.num_envs, schedule_frames_per_game=args.schedule_frames_per_game,
             settings=json.loads(args.atari), scale=args.scale, device=args.device,
             threads=args.threads, emulator_threads=runs.emulator_threads(args.emulator_threads, args.threads),
             fold=args.fold, load_weights=args.load_weights, save_weights=args.save_weights,
             checkpoint=args.checkpoint, checkpoint_minutes=args.checkpoint_minutes)


def cmd_aggregate(args) -> None:
    from reprobench.amtlb import summary

    frames = summary.aggregate(args.curves, args.frames_per_game, args.points, args.eps)
    summary.write(frames, {"transfer": args.transfer, "multitask": args.multitask, "scores": args.scores},
                  {"frames_per_game": args.frames_per_game, "points": args.points, "eps": args.eps})


def cmd_product(args) -> None:
    from reprobench.amtlb import render, summary
    from reprobench.amtlb.grid import FIGURE_FORMATS, TABLE_FORMATS

    stem = output_stem(args.out, TABLE_FORMATS if args.kind == "table" else FIGURE_FORMATS)
    frame = summary.read(args.metrics, AGGREGATE_OF[args.product])
    make = {"transfer": render.transfer_table, "multitask_scores": render.multitask_table,
            "transfer_ratio": render.transfer_ratio_figure, "transfer_per_game": render.transfer_per_game_figure,
            "multitask_curves": render.multitask_figure}[args.product]
    make(frame, stem)


def cmd_compare(args) -> None:
    from reprobench.amtlb import render, summary
    from reprobench.core import compare, yours

    scores = summary.read(args.scores, "scores")
    compare.write(render.comparison_rows(scores, args.frames_per_game), args.out)
    yours.write_rows(render.yours_rows(scores, args.frames_per_game, args.architecture), args.yours)
