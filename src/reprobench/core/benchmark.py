"""The two things a benchmark hands to the rest of the pipeline (see reprobench.benchmarks): its paper, and its
final outputs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Paper:
    key: str  # the benchmark's key: its package, rule prefix, config section and results/<key> folder
    id: str  # the label written as `paper` into every output file's provenance
    title: str  # the heading of its section in the report
    citation: str  # authors, year, venue
    full_scale: str = ""  # what makes its comparisons informative where the cpu scale cannot (REPRODUCTION.md)
    scale_note: str = ""  # how runs below the paper's scale are compared (REPRODUCTION.md, at every other scale)


@dataclass(frozen=True)
class Product:
    """One table or figure of a paper: its files and what it reproduces (the report's caption)."""

    title: str  # e.g. "Table 4"
    stem: str  # results/<key>/tables/<name> or results/<key>/figures/<name>
    formats: tuple[str, ...]  # (".md", ".csv", ".tex") or (".png", ".pdf")
    caption: str  # what it shows and of which paper; the report adds the scale and the variant

    def files(self) -> list[str]:
        return [f"{self.stem}{ext}" for ext in self.formats]

    @property
    def log(self) -> str:
        """logs/ mirrors results/: results/<key>/tables/<name> -> logs/<key>/tables/<name>.log."""
        if not self.stem.startswith("results/"):
            raise ValueError(f"a product's stem lies under results/, not {self.stem}")
        return f"logs/{self.stem.removeprefix('results/')}.log"


@dataclass(frozen=True)
class Targets:
    """A benchmark's final outputs: what `snakemake` builds by default and what the reports show."""

    tables: list[Product] = field(default_factory=list)  # the Markdown report inlines each .md
    figures: list[Product] = field(default_factory=list)  # the Markdown report shows each .png
    comparisons: list[str] = field(default_factory=list)  # comparison.csv
    extras: list[str] = field(default_factory=list)  # other final outputs (e.g. text samples), not in the report

    def files(self) -> list[str]:
        return [f for product in self.tables + self.figures for f in product.files()] + self.comparisons \
            + self.extras


def alternatives(names) -> str:
    """A wildcard constraint matching exactly one of `names` (escaped, longest first, so that a name that starts
    another does not match its start)."""
    return "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True))
