"""The published WADE numbers (copied from shared/reference), keyed like our results."""

from __future__ import annotations

import pandas as pd

from reprobench.core.published import read_csv

MODEL_SLUGS = {"ReCA": "reca", "ESN": "esn", "RNN": "rnn", "LSTM": "lstm", "Transformer": "transformer",
               "Human": "human", "GRU": "gru", "Linear": "linear"}

# Comparison rows that a documented deviation (docs/DEVIATIONS.md) is expected to move: (result, row, metric,
# variant, id), fnmatch patterns, first match wins.
DEVIATIONS = [
    ("table[45]", "*/Transformer", "*", "corrected", "W1"),  # the causal mask
    ("table4", "*", "wade", "corrected", "W2"),  # one time unit for every model
    ("table2", "Linear", "*", "corrected", "V11"),  # no EWMA smoothing
]


def table2() -> pd.DataFrame:
    return read_csv("reprobench.wade", "wade_table2_imdb.csv", MODEL_SLUGS)


def table4() -> pd.DataFrame:
    return read_csv("reprobench.wade", "wade_table4_wade.csv", MODEL_SLUGS)


def table5() -> pd.DataFrame:
    return read_csv("reprobench.wade", "wade_table5_accuracy.csv", MODEL_SLUGS)
