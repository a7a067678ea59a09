"""`reprobench report`: one Markdown document over every benchmark's tables, figures and comparison."""

from __future__ import annotations

import collections
import os
from pathlib import Path

from reprobench.core.atomic import write_text

TITLES = {
    "wade": "Benchmarking Learning Efficiency in Deep Reservoir Computing (WADE)",
    "amtlb": "Atari multitask and transfer learning benchmark",
    "calm": "Online continual language modelling (CALM)",
    "arith": "Measuring Arithmetic Extrapolation Performance (Madsen & Johansen, 2019)",
    "s2b": "Meta-referential games (S2B)",
}


def register(sub) -> None:
    p = sub.add_parser("report", help="write results/report.md from the benchmarks' outputs")
    p.add_argument("--out", required=True)
    p.add_argument("--tables", nargs="*", default=[], help="Markdown tables (results/<key>/tables/*.md)")
    p.add_argument("--figures", nargs="*", default=[], help="PNG figures (results/<key>/figures/*.png)")
    p.add_argument("--comparisons", nargs="*", default=[], help="results/<key>/comparison.csv")
    p.set_defaults(func=run)


def _benchmark(path: str) -> str:
    parts = Path(path).parts
    return parts[parts.index("results") + 1] if "results" in parts else parts[0]


def comparison_summary(path: str) -> str:
    import pandas as pd

    frame = pd.read_csv(path)
    lines = ["| variant | result | numbers compared | within | outside | no verdict (no interval or no value) |",
             "|---|---|---|---|---|---|"]
    for (variant, result), g in frame.groupby(["variant", "result"], sort=False):
        verdict = g["within"].astype("string")
        lines.append(f"| {variant} | {result} | {len(g)} | {int((verdict == 'True').sum())} | "
                     f"{int((verdict == 'False').sum())} | {int(verdict.isna().sum())} |")
    scales = ", ".join(sorted(frame["scale"].astype(str).unique()))
    return "\n".join(lines) + f"\n\nScale of these runs: {scales}. Full rows: `{path}`.\n"


def run(args) -> None:
    out_dir = Path(args.out).parent
    sections = collections.OrderedDict()
    for kind in ("tables", "figures", "comparisons"):
        for path in getattr(args, kind):
            sections.setdefault(_benchmark(path), collections.defaultdict(list))[kind].append(path)
    lines = ["# reprobench report", "",
             "Every table and figure this run made, and how each reproduced number compares with the published one "
             "(`within`: the two 95% intervals overlap, or the published value lies in ours). Runs at the `small` "
             "scale use few seeds and short training: their numbers show that the pipeline works, not what the "
             "paper found; `paper.yaml` restores the full scale.", ""]
    for key, files in sections.items():
        lines += [f"## {key}: {TITLES.get(key, key)}", ""]
        for table in files["tables"]:
            lines += [f"### Table `{table}`", "", Path(table).read_text(), ""]
        for figure in files["figures"]:
            lines += [f"### Figure `{figure}`", "", f"![{Path(figure).stem}]({os.path.relpath(figure, out_dir)})", ""]
        for comparison in files["comparisons"]:
            lines += ["### Published vs reproduced", "", comparison_summary(comparison), ""]
    write_text(args.out, "\n".join(lines))
