"""The published numbers (copied from shared/reference into the package), keyed like our results."""

from __future__ import annotations

from importlib import resources

import pandas as pd

MODEL_SLUGS = {"NAC*": "nac_mul", "NAC+": "nac_add", "NALU": "nalu", "Linear": "linear"}
PARAMETER_TO_EXPERIMENT = {"input_size": "input_size", "hidden_size": "hidden_size", "overlap_ratio": "overlap",
                           "subset_ratio": "subset", "interpolation_range": "range"}
FIGURE_READING_ACCURACY = 0.02  # values read off the vector data of the published figure


def _read(name: str) -> pd.DataFrame:
    with resources.files("reprobench.arith").joinpath("published", name).open() as fh:
        return pd.read_csv(fh, comment="#")


def operations_table() -> pd.DataFrame:
    t = _read("arith_table_operations.csv")
    t["model"] = t["model"].map(MODEL_SLUGS)
    return t


def parameters_figure() -> pd.DataFrame:
    """Columns: experiment, value (as our path keys write it), model, success_rate."""
    from reprobench.arith.grid import fmt, fmt_range

    t = _read("arith_effect_of_parameters.csv")
    t["experiment"] = t["parameter"].map(PARAMETER_TO_EXPERIMENT)
    t["model"] = t["model"].map(MODEL_SLUGS)

    def key(row):
        if row["experiment"] == "range":  # 'U[0.1;0.2]' -> '0.1_0.2'
            low, high = row["value"].strip("U[]").split(";")
            return fmt_range((low, high))
        return fmt(row["value"])

    t["value"] = t.apply(key, axis=1)
    return t[["experiment", "value", "model", "success_rate"]]


def thresholds() -> dict[str, float]:
    t = _read("arith_thresholds.csv")
    return dict(zip(t["operation"], t["threshold"]))
