"""Published reference scores for the AMTLB comparison (specs/amtlb.md section 4): AMTLB itself publishes no
numbers, so the specialists are set next to standard agents' scores at the same frame count."""

from __future__ import annotations

import pandas as pd

from reprobench.core.published import read_csv

# A reference measure -> our scores.parquet column that measures the same thing.
OURS = {"train_return_last100": "last100",  # mean of the last 100 training episodes by the budget
        "cumulative_return": "c_final"}  # the cumulative raw score of every episode within the budget
# Comparison rows that a documented deviation (docs/DEVIATIONS.md) is expected to move: (result, row, metric,
# variant, id), fnmatch patterns, first match wins.
DEVIATIONS = [
    ("multitask_scores", "* sb3_zoo_monitor *", "*", "*", "AM6"),  # sticky actions, full action set, no life loss
]


def reference_scores(compared_only: bool = True) -> pd.DataFrame:
    """source, agent, game, frames, measure, value, ... (published/reference_scores.csv); by default only the
    measures comparison.csv compares (OURS)."""
    frame = read_csv("reprobench.amtlb", "reference_scores.csv")
    return frame[frame["measure"].isin(OURS)].reset_index(drop=True) if compared_only else frame
