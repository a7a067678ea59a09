"""The Markdown report over every benchmark's tables, figures and comparison (results/report.md).

The caller (the top-level CLI) passes each benchmark's heading from the registry; this module knows none of them.
"""

from __future__ import annotations

import os
from pathlib import Path

from reprobench.core.atomic import write_text

INTRO = ("Every table and figure this run made, and how each reproduced number compares with the published one "
         "(`within`: the two 95% intervals overlap, or the published value lies in ours; `informative`: the verdict "
         "could have failed, i.e. at least 5 runs and our interval no wider than twice the published spread). Runs "
         "at the `small` scale use few seeds and short training: their numbers show that the pipeline works, not "
         "what the paper found; `cpu.yaml` runs the papers' own settings where a 2-core machine can, `paper.yaml` "
         "the full scale.")


YOURS_TABLE = "yours.md"  # core.yours: a user's class beside the paper's models, where the config names one


def benchmark_of(path: str) -> str:
    """results/<key>/... -> <key>."""
    parts = Path(path).parts
    return parts[parts.index("results") + 1] if "results" in parts else parts[0]


def comparison_summary(path: str) -> str:
    import pandas as pd

    from reprobench.core.reproduction import counts

    frame = pd.read_csv(path)
    lines = ["| variant | result | numbers compared | within | informative | informative and within | outside | "
             "no verdict (no interval or no value) |", "|---|---|---|---|---|---|---|---|"]
    for (variant, result), g in frame.groupby(["variant", "result"], sort=False):
        c = counts(g)
        lines.append(f"| {variant} | {result} | {c['compared']} | {c['within']} | {c['informative']} | "
                     f"{c['informative_within']} | {c['outside']} | {c['no_verdict']} |")
    scales = ", ".join(sorted(frame["scale"].astype(str).unique()))
    return "\n".join(lines) + (f"\n\nScale of these runs: {scales}. Full rows: `{path}`. Misses and their reasons: "
                               "`results/reproduction.md` (the committed cpu-scale run: docs/REPRODUCTION.md).\n")


def write(out: str, headings: dict[str, tuple[str, str]], tables: list[str], figures: list[str],
          comparisons: list[str]) -> None:
    """One section per benchmark, in the order of `headings` ({key: (title, citation)}), with its tables
    (Markdown, inlined), figures (PNG, linked relative to `out`) and comparison summary."""
    out_dir = Path(out).parent
    files = {key: {"tables": [], "figures": [], "comparisons": []} for key in headings}
    for kind, paths in (("tables", tables), ("figures", figures), ("comparisons", comparisons)):
        for path in paths:
            files.setdefault(benchmark_of(path), {"tables": [], "figures": [], "comparisons": []})[kind].append(path)
    lines = ["# reprobench report", "", INTRO, ""]
    for key, found in files.items():
        if not any(found.values()):
            continue
        title, citation = headings.get(key, (key, ""))
        lines += [f"## {key}: {title}", ""] + ([f"*{citation}*", ""] if citation else [])
        for table in found["tables"]:
            title = "Your model" if Path(table).name == YOURS_TABLE else "Table"
            lines += [f"### {title} `{table}`", "", Path(table).read_text(), ""]
        for figure in found["figures"]:
            lines += [f"### Figure `{figure}`", "", f"![{Path(figure).stem}]({os.path.relpath(figure, out_dir)})", ""]
        for comparison in found["comparisons"]:
            lines += ["### Published vs reproduced", "", comparison_summary(comparison), ""]
    write_text(out, "\n".join(lines))
