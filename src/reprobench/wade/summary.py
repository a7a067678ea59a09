"""From curve files to per-run numbers (the aggregate stage): WADE under both conventions, maximum and final
accuracy, mean curves, for the synthetic tasks (aggregate_synthetic) and IMDB (aggregate_imdb); best rules.

Conventions (docs/DEVIATIONS.md):
- faithful: thresholds 0..0.999 weighted by a, strict >, T = index + 1; reservoirs' index converted by
  items-per-sequence / 8 (items per sequence estimated, as the reference did, from 500 sequences of the task's
  default constructor; we seed that estimate with 0), trained models in optimiser steps of 8 sequences;
  the Transformer is the released one without a causal mask.
- corrected: the same thresholds, T = training sequences consumed (at least 1) for every model; the
  Transformer has a causal mask.
"""

from __future__ import annotations

import functools
import random

import numpy as np
import pandas as pd

from reprobench.core import curves
from reprobench.core.errors import ResultsFileError
from reprobench.core.plugins import display_name
from reprobench.core.progress import Progress
from reprobench.wade import metric
from reprobench.wade.grid import RULE_KEY
from reprobench.wade.tasks import make_task

RESERVOIRS = ("reca", "esn")
MODEL_ORDER = ("reca", "esn", "rnn", "lstm", "transformer")
DISPLAY = {"reca": "ReCA", "esn": "ESN", "rnn": "RNN", "lstm": "LSTM", "transformer": "Transformer", "gru": "GRU",
           "linear": "Linear"}


def display(model: str) -> str:
    """A model's column or legend name: the paper's, or a user's class name (run id 'package.module.Class')."""
    return display_name(model, DISPLAY)


def model_order(models) -> list[str]:
    """The paper's models (MODEL_ORDER), then any user's models among `models`, sorted."""
    return list(MODEL_ORDER) + sorted(set(models) - set(MODEL_ORDER))


@functools.cache
def default_items_per_sequence(task_id: int, seed: int = 0) -> float:
    """The reference's unit factor: mean supervised items per sequence of the default-constructed task."""
    task = type(make_task(task_id))()
    state = random.getstate(), np.random.get_state()
    random.seed(seed)
    np.random.seed(seed)
    try:
        return task.get_n_items_per_seq()
    finally:
        random.setstate(state[0])
        np.random.set_state(state[1])


# What the tables, figures and comparison read from each aggregate (the aggregate functions below write them).
COLUMNS = {
    "synthetic": ("task", "task_name", "model", "config", "seed", "variant", "wade", "max_accuracy",
                  "final_accuracy", "scale"),
    "synthetic_mean_curves": ("task", "model", "config", "step", "sequences", "mean", "std", "n"),
    "imdb": ("model", "seed", "variant", "wade_x100", "max_accuracy", "synthetic", "scale"),
    "imdb_mean_curves": ("model", "step", "examples", "mean", "std", "n"),
}


def read(path: str, kind: str) -> pd.DataFrame:
    """One aggregate (a key of COLUMNS); a clear error names a file that is not one."""
    return curves.read_frame(path, COLUMNS[kind])[0]


def mean_curve(curves: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(mean, std) across runs, each run truncated to the shortest, as the reference's notebooks did."""
    length = min(len(c) for c in curves)
    stack = np.stack([np.asarray(c)[:length] for c in curves])
    return stack.mean(0), stack.std(0)


def run_summary(wide: pd.DataFrame, record: dict) -> list[dict]:
    """Rows for one run; `wide` is its curve with one column per metric (core.curves.wide)."""
    acc = wide["accuracy"].to_numpy()
    setting = record["setting"]
    model, task = record["model"], int(setting["task"])
    base = {"task": task, "task_name": setting["task_name"], "model": model, "config": setting["config"],
            "seed": int(record["seed"]), "n_checkpoints": len(acc), "max_accuracy": float(acc.max()),
            "final_accuracy": float(acc[-1]), "scale": record["scale"], "train_sequences": setting["train_sequences"]}
    conv = metric.synthetic_convention()
    if model in RESERVOIRS:
        faithful_time = metric.reference_reservoir_time(len(acc), default_items_per_sequence(task))
    else:
        faithful_time = np.arange(1, len(acc) + 1, dtype=float)
    corrected_time = np.maximum(wide["sequences"].to_numpy(), 1.0)
    rows = []
    transformer_variant = setting["config"] if model == "transformer" else None
    for variant, time in (("faithful", faithful_time), ("corrected", corrected_time)):
        if transformer_variant not in (None, variant):
            continue  # each Transformer run belongs to one variant (no mask / causal mask)
        rows.append(base | {"variant": variant, "wade": metric.wade(acc, conv, time)})
    return rows


def best_rules(runs: pd.DataFrame) -> pd.DataFrame:
    """Per task and variant: the paper's choice (highest mean over seeds of the maximum test accuracy) and the
    rule WADE would choose (highest mean WADE)."""
    reca = runs[runs["model"] == "reca"]
    if reca.empty:
        return pd.DataFrame(columns=["task", "variant", "rule_by_accuracy", "rule_by_wade"])
    means = reca.groupby(["task", "variant", "config"])[["max_accuracy", "wade"]].mean().reset_index()
    out = []
    for (task, variant), g in means.groupby(["task", "variant"]):
        out.append({"task": task, "variant": variant,
                    "rule_by_accuracy": g.loc[g["max_accuracy"].idxmax(), "config"],
                    "rule_by_wade": g.loc[g["wade"].idxmax(), "config"]})
    return pd.DataFrame(out)


def selected(runs: pd.DataFrame, rules: pd.DataFrame, by: str = "rule_by_accuracy") -> pd.DataFrame:
    """The runs the tables show: the selected ReCA rule per task and variant, and every other model."""
    keep = runs["model"] != "reca"
    for _, r in rules.iterrows():
        keep |= (runs["model"] == "reca") & (runs["task"] == r["task"]) & (runs["variant"] == r["variant"]) & \
                (runs["config"] == r[by])
    return runs[keep]


def synthetic_runs(path: str):
    """(wide curve, record) of every run in one synthetic curve file, in file order: a ReCA file holds every CA rule
    of its job (key column `rule`; each run gets the config 'rule<N>'), any other file one run."""
    keys = tuple(curves.read_metadata(path).get(curves.RUN_KEYS_FIELD) or ())
    if keys not in ((), (RULE_KEY,)):
        raise ResultsFileError(path, f"has the key columns {list(keys)}; a WADE curve file has none or ['rule']")
    frame, record = curves.read_curve(path, keys)
    if not keys:
        yield curves.wide(frame), record
        return
    # one pivot for the whole file; each rule's rows are those its own file held, so its values are the same
    table = curves.wide(frame, keys)
    for rule in pd.unique(frame[RULE_KEY]):
        yield table.loc[rule], record | {"setting": record["setting"] | {"config": f"rule{rule}"}}


def aggregate_synthetic(paths: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per run and variant: WADE, max and final accuracy; the mean curve of every (task, model, config))."""
    rows, accs = [], {}
    bar = Progress(len(paths), "aggregate synthetic", log_every_s=10)
    for path in paths:
        for table, record in synthetic_runs(path):
            rows += run_summary(table, record)
            key = (int(record["setting"]["task"]), record["model"], record["setting"]["config"])
            accs.setdefault(key, []).append((table["accuracy"].to_numpy(), table["sequences"].to_numpy()))
        bar.update(1)
    bar.close()
    mean_rows = []
    for (task, model, config), series in accs.items():
        mean, std = mean_curve([a for a, _ in series])
        sequences, _ = mean_curve([s for _, s in series])
        mean_rows += [{"task": task, "model": model, "config": config, "step": k, "sequences": sequences[k],
                       "mean": mean[k], "std": std[k], "n": len(series)} for k in range(len(mean))]
    return pd.DataFrame(rows), pd.DataFrame(mean_rows)


def aggregate_imdb(paths: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per run and variant: WADE x 100 and max accuracy; mean curves per model)."""
    conv = metric.imdb_convention()
    rows, series = [], {}
    bar = Progress(len(paths), "aggregate imdb", log_every_s=10)
    for path in paths:
        bar.update(1)
        frame, record = curves.read_curve(path)
        table = curves.wide(frame)
        acc = table["accuracy"].to_numpy()
        for variant in ("faithful", "corrected"):
            # faithful: the reference overwrote the Linear curve with its EWMA before both WADE and the maximum
            smoothed = metric.ewma(acc) if (variant == "faithful" and record["model"] == "linear") else acc
            rows.append({"model": record["model"], "seed": int(record["seed"]), "variant": variant,
                         "wade_x100": 100 * metric.wade(smoothed, conv), "max_accuracy": float(smoothed.max()),
                         "synthetic": bool(record["setting"]["synthetic"]), "scale": record["scale"]})
        series.setdefault(record["model"], []).append((table["examples"].to_numpy(), acc))
    bar.close()
    mean_rows = []
    for model, runs in series.items():
        mean, std = mean_curve([a for _, a in runs])
        mean_rows += [{"model": model, "step": k, "examples": runs[0][0][k], "mean": mean[k], "std": std[k],
                       "n": len(runs)} for k in range(len(mean))]
    return pd.DataFrame(rows), pd.DataFrame(mean_rows)
