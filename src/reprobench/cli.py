"""`reprobench` (or `python -m reprobench`): the command line the Snakemake rules call.

    reprobench inspect PATH [--config config.yaml]     summarise cached Parquet files
    reprobench report --out results/report.md ...      the Markdown report over all benchmarks
    reprobench arith {threshold,train,aggregate,table,figure,compare} ...
    reprobench wade {prepare,reservoir,sequence,aggregate,render} ...
"""

from __future__ import annotations

import argparse
import sys

from reprobench.core.errors import ReprobenchError


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
