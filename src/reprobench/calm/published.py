"""The published CALM numbers (copied from shared/reference), keyed like our results."""

from __future__ import annotations

import pandas as pd

from reprobench.calm.zoo import LABELS
from reprobench.core.published import read_csv

MODEL_SLUGS = {label: slug for slug, label in LABELS.items()}
METRICS = {"ppl": "total_pp", "ppl_at_switch": "ppl@sw", "recovery_batches": "rec"}  # published -> ours

# Comparison rows that a documented deviation (docs/DEVIATIONS.md) is expected to move: (result, row, metric,
# variant, id), fnmatch patterns, first match wins.
DEVIATIONS = [
    ("table1", "Ensemble*", "*", "corrected", "C12"),  # weights 1/N instead of 1
    ("table1", "MoE*", "*", "corrected", "C10"),  # the mixture likelihood instead of -sum pi log p
    ("table1", "*", "*", "corrected", "C5"),  # scored in eval mode, dropout off
    ("table2_model_sizes", "*", "*", "*", "C15"),  # Table 2 vs the command lines' sizes
    ("appendix_c_transformer", "*", "*", "*", "C21"),  # one setting (the command lines') against the best of a search
]


def table1() -> pd.DataFrame:
    """model (our slug), dataset, lam, metric (published name), mean, std (Table 4). `lambda` is renamed `lam`
    (a Python keyword, which itertuples cannot name)."""
    return read_csv("reprobench.calm", "calm_table1.csv", MODEL_SLUGS).rename(columns={"lambda": "lam"})


def table2_sizes() -> pd.DataFrame:
    return read_csv("reprobench.calm", "calm_table2_sizes.csv")


def other() -> pd.DataFrame:
    return read_csv("reprobench.calm", "calm_other.csv")
