"""`reprobench` (or `python -m reprobench`): the command line the Snakemake rules call.

    reprobench inspect PATH [--config config.yaml]     summarise cached Parquet files, list missing runs
    reprobench report --out results/report.md ...      the Markdown report over all benchmarks
    reprobench reproduction --out ... --comparisons ...  what was reproduced, with every miss explained
    reprobench yours --rows results/<key>/yours.csv --out ...  the "Your model" table of one benchmark
    reprobench <key> <stage> ...                       one benchmark's stages (`reprobench <key> -h`)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reprobench import benchmarks
from reprobench.core.errors import ReprobenchError

SCHEMAS = Path(__file__).resolve().parents[2] / "workflow" / "schemas"  # in a checkout (the README's install)


def cmd_inspect(args) -> int:
    from reprobench.core import inspect, schema
    from reprobench.core.config import load

    config = load(args.config) if args.config else {}
    for key in benchmarks.KEYS:  # as the workflow does: defaults filled, one short message per error
        if key in config and (SCHEMAS / f"{key}.schema.yaml").exists():
            schema.validate(config[key], SCHEMAS / f"{key}.schema.yaml", key)
    expected = {key: benchmarks.grid(key, config[key]).expected_curves() for key in benchmarks.KEYS if key in config}
    readers = {pattern: read for key in benchmarks.KEYS for pattern, read in benchmarks.readers(key).items()}
    return inspect.run(args.path, expected, args.list_missing, readers)


def cmd_report(args) -> None:
    from reprobench.core import report

    headings = {key: (benchmarks.paper(key).title, benchmarks.paper(key).citation) for key in benchmarks.KEYS}
    report.write(args.out, headings, args.tables, args.figures, args.comparisons)


def cmd_reproduction(args) -> None:
    from reprobench.core import reproduction

    papers = {key: benchmarks.paper(key) for key in benchmarks.KEYS}
    headings = {key: (p.title, p.citation, p.full_scale, p.scale_note) for key, p in papers.items()}
    reproduction.write(args.out, headings, args.comparisons)


def cmd_yours(args) -> None:
    from reprobench.core import yours

    yours.table(args.rows, args.out[0].rsplit(".", 1)[0])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reprobench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("inspect", help="summarise and check cached results (curves, metrics, data, thresholds)")
    p.add_argument("path", help="a Parquet file or a folder (e.g. results/ or results/arith/curves)")
    p.add_argument("--config", nargs="*", default=[],
                   help="config files, merged in order (e.g. config.yaml paper.yaml): list what is missing")
    p.add_argument("--list-missing", type=int, default=10, help="how many missing paths to print (default 10)")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("report", help="write results/report.md from the benchmarks' outputs")
    p.add_argument("--out", required=True)
    p.add_argument("--tables", nargs="*", default=[], help="Markdown tables (results/<key>/tables/*.md)")
    p.add_argument("--figures", nargs="*", default=[], help="PNG figures (results/<key>/figures/*.png)")
    p.add_argument("--comparisons", nargs="*", default=[], help="results/<key>/comparison.csv")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("reproduction", help="write results/reproduction.md: published numbers compared, misses")
    p.add_argument("--out", required=True)
    p.add_argument("--comparisons", nargs="+", required=True, help="results/<key>/comparison.csv")
    p.set_defaults(func=cmd_reproduction)

    p = sub.add_parser("yours", help="write a benchmark's 'Your model' table from its compare stage's rows")
    p.add_argument("--rows", required=True, help="results/<key>/yours.csv")
    p.add_argument("--out", nargs="+", required=True, help="results/<key>/tables/yours.{md,csv,tex}")
    p.set_defaults(func=cmd_yours)

    for key in benchmarks.KEYS:
        benchmarks.register_cli(key, sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except ReprobenchError as exc:
        print(f"reprobench: error: {exc}", file=sys.stderr)
        return 2
