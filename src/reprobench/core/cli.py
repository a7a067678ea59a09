"""Command-line plumbing every benchmark's CLI shares."""

from __future__ import annotations

import argparse
from pathlib import Path

from reprobench.core.errors import ConfigError


def add_training_options(parser: argparse.ArgumentParser, checkpoint: bool = False) -> None:
    """The options every training stage takes; with `checkpoint`, those of a stage that saves and resumes.
    The rules always pass them (from config.yaml), so they have no default here."""
    parser.add_argument("--device", required=True, help="auto | cpu | cuda | cuda:N")
    parser.add_argument("--threads", type=int, required=True, help="torch threads")
    parser.add_argument("--scale", required=True, help="the label written into every output (small | cpu | paper)")
    if checkpoint:
        parser.add_argument("--checkpoint", required=True,
                            help="resume from / save to this file; removed when the run completes")
        parser.add_argument("--checkpoint-minutes", type=float, required=True)


def add_output(parser: argparse.ArgumentParser, what: str) -> None:
    """--out: every file of one product (e.g. table.md table.csv table.tex), which share one stem."""
    parser.add_argument("--out", nargs="+", required=True, help=f"the {what}'s files, one per format")


def output_stem(paths: list[str], extensions: tuple[str, ...]) -> str:
    """The common stem of a product's files; a clear error unless they are exactly stem + each extension."""
    stems = {str(Path(p).with_suffix("")) for p in paths}
    suffixes = sorted(Path(p).suffix for p in paths)
    if len(stems) != 1 or suffixes != sorted(extensions):
        raise ConfigError("out", f"expected one file per format {', '.join(extensions)} with a common stem, "
                                 f"got {' '.join(paths)}")
    return stems.pop()
