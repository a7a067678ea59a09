"""The published WADE numbers (copied from shared/reference), keyed like our results."""

from __future__ import annotations

from importlib import resources

import pandas as pd

MODEL_SLUGS = {"ReCA": "reca", "ESN": "esn", "RNN": "rnn", "LSTM": "lstm", "Transformer": "transformer",
               "Human": "human", "GRU": "gru", "Linear": "linear"}


def _read(name: str) -> pd.DataFrame:
    with resources.files("reprobench.wade").joinpath("published", name).open() as fh:
        return pd.read_csv(fh, comment="#")


def table4() -> pd.DataFrame:
    t = _read("wade_table4_wade.csv")
    t["model"] = t["model"].map(MODEL_SLUGS)
    return t


def table5() -> pd.DataFrame:
    t = _read("wade_table5_accuracy.csv")
    t["model"] = t["model"].map(MODEL_SLUGS)
    return t


def table2() -> pd.DataFrame:
    t = _read("wade_table2_imdb.csv")
    t["model"] = t["model"].map(MODEL_SLUGS)
    return t
