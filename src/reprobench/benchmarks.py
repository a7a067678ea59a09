"""The registry: every benchmark of the pipeline, one line each.

A benchmark is one room (docs/ARCHITECTURE.md): the package `reprobench.<key>`, the rule file
`workflow/rules/<key>.smk`, the schema `workflow/schemas/<key>.schema.yaml`, its section in config.yaml and
paper.yaml, its entries in slurm/config.yaml, and its line below. The top-level CLI, `reprobench inspect`, the
reports and the Snakefile loop over KEYS; nothing in `core` knows any benchmark. Each package exposes:

    reprobench.<key>.PAPER                     core.benchmark.Paper: key, provenance id, title, citation
    reprobench.<key>.cli.register(subparsers)  its `reprobench <key> <stage>` commands
    reprobench.<key>.grid.Grid(section)        its runs and paths, from its config section:
        .check()            what the schema cannot say; raises core.errors.ConfigError naming the key
        .expected_curves()  every curve file the section asks for (`reprobench inspect --config`)
        .targets()          core.benchmark.Targets: its tables, figures and comparison
    reprobench.<key>.grid.READERS              optional {pattern over absolute paths: reader}: files that
                                               `reprobench inspect` checks with the function that reads them
"""

from __future__ import annotations

import importlib

KEYS = (
    "arith",  # Madsen & Johansen (2019): arithmetic extrapolation of NAC/NALU
    "wade",  # Cisneros, Sivic & Mikolov (2022): learning efficiency of reservoirs (WADE)
    "calm",  # Kruszewski, Sorodoc & Mikolov (2021): online continual language modelling (CALM)
    "s2b",  # Denamganaï, Missaoui & Walker (2023): meta-referential games (S2B)
    "amtlb",  # Kuhn et al., AI-ON (2017): the Atari multitask and transfer learning benchmark (AMTLB)
)


def paper(key: str):
    """The benchmark's core.benchmark.Paper."""
    return importlib.import_module(f"reprobench.{key}").PAPER


def grid(key: str, section: dict):
    """The benchmark's Grid for its config section, checked."""
    g = importlib.import_module(f"reprobench.{key}.grid").Grid(section)
    g.check()
    return g


def readers(key: str) -> dict:
    """The benchmark's file checks for `reprobench inspect` (its grid's READERS)."""
    return getattr(importlib.import_module(f"reprobench.{key}.grid"), "READERS", {})


def register_cli(key: str, subparsers) -> None:
    importlib.import_module(f"reprobench.{key}.cli").register(subparsers)
