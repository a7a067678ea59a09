"""The CALM aggregate: curve files -> one row per run (the metrics of reprobench.calm.metrics) and the mean loss
over the first batches after a switch (Figure 1(b, c))."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reprobench.calm import PAPER
from reprobench.calm.metrics import compute_metrics
from reprobench.calm.zoo import DATASETS
from reprobench.core import curves
from reprobench.core.errors import ResultsFileError
from reprobench.core.progress import Progress

SWITCH_BATCHES = 15  # Figure 1(b, c): the first 15 batches after a switch
KEYS = ["dataset", "lambda", "model", "variant", "seed"]
METRIC_COLUMNS = ["loss", "total_pp", "ppl@sw", "rec", "n_events", "std", "autocorr"]
# split: test (Table 1) or dev (Appendix C's Transformer)
RUN_COLUMNS = KEYS + ["scale", "synthetic", "split", "n_batches", "n_fragments", "parameters", *METRIC_COLUMNS]
SWITCH_COLUMNS = KEYS + ["offset", "loss"]
CURVE = {"paper": PAPER.id, "experiment": DATASETS}  # what a CALM curve's provenance says (experiment: its dataset)
LABELS = ("fragment", "class_id", "switch")  # a stream's bookkeeping rows: never NaN in a run's file
SETTING_KEYS = ("dataset", "lambda", "classes", "synthetic", "split")
CONFIG_KEYS = ("n_fragments", "parameters")


def _checked(path, frame, record):
    """(one row per batch, record) of a CALM curve read by read_curve; a clear error names a file without the rows
    or the provenance the aggregate and the figures read (a diverged run's NaN losses are a result, an all-NaN loss
    is not)."""
    curves.require_metrics(path, frame, record, finite=("loss",), labels=LABELS)
    weights = frame[frame["metric"].str.startswith("weight_")]
    if len(weights) and weights["value"].isna().all():  # curves.wide would drop them: a model without weights
        raise ResultsFileError(path, "has only NaN mixture weights")
    setting, config = record.get("setting"), record.get("config")
    missing = [f"setting.{k}" for k in SETTING_KEYS if not isinstance(setting, dict) or k not in setting]
    missing += [f"config.{k}" for k in CONFIG_KEYS if not isinstance(config, dict) or k not in config]
    if missing:
        raise ResultsFileError(path, f"has no provenance fields {missing} (it is {curves.describe(record)})")
    return curves.wide(frame), record


def stream_frame(path):
    """(one row per batch: loss, fragment, class_id, switch, weight_NN..., the curve's record)."""
    return _checked(path, *curves.read_curve(path, expect=CURVE))


def switch_curve(loss: np.ndarray, fragment: np.ndarray, class_id: np.ndarray, n_fragments: int,
                 k: int = SWITCH_BATCHES) -> np.ndarray:
    """Mean loss at each of the first k batches after a switch, over the switches ppl@sw counts (the second half's
    fragments whose class already appeared in it, the last fragment excluded); nan where no fragment is that long."""
    keep = fragment >= n_fragments // 2
    loss, fragment, class_id = loss[keep], fragment[keep], class_id[keep]
    _, starts = np.unique(fragment, return_index=True)
    bounds = [*starts.tolist(), len(loss)]
    sums, counts, seen = np.zeros(k), np.zeros(k), set()
    for i in range(len(starts) - 1):
        cls = class_id[bounds[i]]
        if cls in seen:
            part = loss[bounds[i]:bounds[i + 1]][:k]
            sums[:len(part)] += part
            counts[:len(part)] += 1
        seen.add(cls)
    with np.errstate(invalid="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def aggregate(paths: list[str], out: str, switch_out: str) -> pd.DataFrame:
    rows, switch_rows = [], []
    progress = Progress(len(paths), "calm aggregate")
    scales, variants = set(), set()
    for path, frame, record in curves.read_curves(paths, expect=CURVE):
        w, record = _checked(path, frame, record)
        setting, config = record["setting"], record["config"]
        loss, fragment, class_id = (w[c].to_numpy() for c in ("loss", "fragment", "class_id"))
        fragment, class_id = fragment.astype(int), class_id.astype(int)
        m = compute_metrics(loss, fragment, class_id, setting["classes"], config["n_fragments"])
        key = {"dataset": setting["dataset"], "lambda": int(setting["lambda"]), "model": record["model"],
               "variant": record["variant"], "seed": int(record["seed"])}
        rows.append({**key, "scale": record["scale"], "synthetic": bool(setting["synthetic"]),
                     "split": setting["split"], "n_batches": len(loss),
                     "n_fragments": config["n_fragments"], "parameters": config["parameters"],
                     **{c: m.get(c, np.nan) for c in METRIC_COLUMNS}})
        for offset, value in enumerate(switch_curve(loss, fragment, class_id, config["n_fragments"])):
            switch_rows.append({**key, "offset": offset, "loss": value})
        scales.add(record["scale"])
        variants.add(record["variant"])
        progress.update(1)
    progress.close()
    runs = pd.DataFrame(rows, columns=RUN_COLUMNS).sort_values(KEYS, kind="stable").reset_index(drop=True)
    switch = pd.DataFrame(switch_rows, columns=SWITCH_COLUMNS).sort_values(KEYS + ["offset"], kind="stable")
    meta = curves.summary_record(PAPER.id, "calm", "aggregate", ",".join(sorted(scales)), ",".join(sorted(variants)),
                                 n_runs=len(runs))
    curves.write_frame(runs, out, meta)
    curves.write_frame(switch.reset_index(drop=True), switch_out, {**meta, "stage": "switch_curves"})
    return runs


def read_runs(path) -> pd.DataFrame:
    return curves.read_frame(path, RUN_COLUMNS, expect={"paper": PAPER.id, "stage": "aggregate"})[0]


def read_switch(path) -> pd.DataFrame:
    return curves.read_frame(path, SWITCH_COLUMNS, expect={"paper": PAPER.id, "stage": "switch_curves"})[0]
