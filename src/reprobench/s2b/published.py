"""The published S2B numbers (copied from shared/reference), in percent."""

from __future__ import annotations

import pandas as pd

from reprobench.core.published import read_csv

# Comparison rows that a documented deviation (docs/DEVIATIONS.md) is expected to move: (result, row, metric,
# variant, id), fnmatch patterns, first match wins.
DEVIATIONS = [
    ("table1", "PS", "*", "*", "S1"),  # one unrecoverable draw of ReferentialGym's 256-point protocol
    ("table1", "S=*", "*", "*", "S16"),  # the multi-agent run's settings: the spec has none (Table 4's Archi LSTM)
    ("tableD2", "*", "mig", "*", "S2"),  # MIG/Modularity: neither sampling protocol gives the paper's pair
    ("tableD2", "*", "modularity", "*", "S2"),
]


# Observations per trained run in the paper (paper.yaml, from the spec's presets: reprobench.s2b.train.preset): a run
# trained on fewer says nothing of the paper's number, whatever its spread.
OBSERVATIONS = {"table1": 500_000, "table2": 5_000_000, "table4": 10_000_000}


def budget_reason(result: str, observations) -> str:
    """Why a trained run's comparison row cannot be informative: "" at the paper's budget, else how far below."""
    ours, paper = int(max(observations, default=0)), OBSERVATIONS[result]
    return "" if ours >= paper else f"{ours:,} observations per run of the paper's {paper:,}"


def tables() -> pd.DataFrame:
    """table, metric, setting, mean, std (percent)."""
    return read_csv("reprobench.s2b", "s2b_tables.csv")
