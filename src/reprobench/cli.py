"""`reprobench` (or `python -m reprobench`): the command line the Snakemake rules call.

    reprobench inspect PATH [--config config.yaml]     summarise cached Parquet files
    reprobench report --out results/report.md ...      the Markdown report over all benchmarks
    reprobench arith {threshold,train,aggregate,table,figure,compare} ...
    reprobench wade {prepare,reservoir,sequence,aggregate,render,human,imdb-prepare,imdb-train,imdb-render} ...
"""

from __future__ import annotations

import argparse
import sys

from reprobench.core.errors import ReprobenchError


def add_training_options(parser: argparse.ArgumentParser, checkpoint: bool = False) -> None:
    """The options every training stage takes; with `checkpoint`, those of a stage that saves and resumes."""
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--scale", default="small")
    if checkpoint:
        parser.add_argument("--checkpoint", help="resume from / save to this file; removed when the run completes")
        parser.add_argument("--checkpoint-minutes", type=float, default=10.0)


def build_parser() -> argparse.ArgumentParser:
    from reprobench.arith import cli as arith_cli
    from reprobench.wade import cli as wade_cli
    from reprobench.core import inspect as inspect_cmd
    from reprobench.core import report as report_cmd

    parser = argparse.ArgumentParser(prog="reprobench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    inspect_cmd.register(sub)
    report_cmd.register(sub)
    arith_cli.register(sub)
    wade_cli.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except ReprobenchError as exc:
        print(f"reprobench: error: {exc}", file=sys.stderr)
        return 2
