"""The S2B aggregate: curve files -> one row per (experiment, seed, setting, metric), the mean over episodes."""

from __future__ import annotations

import pandas as pd

from reprobench.core import curves
from reprobench.s2b import PAPER

# value: the mean over a seed's episodes (or its one value); low, high: the 2.5% and 97.5% points of its episodes
COLUMNS = ["experiment", "seed", "setting", "metric", "value", "low", "high", "n", "scale"]


def aggregate(paths: list[str], out: str) -> pd.DataFrame:
    rows, scales = [], set()
    for path in paths:
        frame, record = curves.read_curve(path)
        for (setting, metric), g in frame.groupby(["split", "metric"], sort=True):
            rows.append({"experiment": record["experiment"], "seed": int(record["seed"]), "setting": setting,
                         "metric": metric, "value": float(g["value"].mean()),
                         "low": float(g["value"].quantile(0.025)), "high": float(g["value"].quantile(0.975)),
                         "n": len(g), "scale": record["scale"]})
        scales.add(record["scale"])
    probes = pd.DataFrame(rows, columns=COLUMNS).sort_values(["experiment", "setting", "metric", "seed"],
                                                              kind="stable").reset_index(drop=True)
    curves.write_frame(probes, out, curves.summary_record(PAPER.id, "probes", "aggregate", ",".join(sorted(scales)),
                                                          "faithful", n_files=len(paths)))
    return probes


def read_probes(path) -> pd.DataFrame:
    return curves.read_frame(path, COLUMNS)[0]


ZSCT_COLUMNS = ["experiment", "model", "n_oc", "shots", "variant", "seed", "observations", "zsct_accuracy",
                "support_accuracy", "rec_stimulus_accuracy", "eoa_accuracy", "topsim", "posdis", "bosdis", "scale"]
LANGUAGE = ("eoa_accuracy", "topsim", "posdis", "bosdis")  # Table 1's runs' language probe (reprobench.s2b.marl)


def _shots(strategy: str | None) -> int:
    """S of 'component-focused-<S>shot(s)'; 0 without a sampling strategy (Figure 6: every support combination)."""
    return 0 if strategy is None else int(strategy.rsplit("-", 1)[1].split("shot")[0])


def aggregate_zsct(paths: list[str], out: str) -> pd.DataFrame:
    """One row per trained run (Tables 1, 2, 4, Figure 6): its last evaluation (greedy, test-only); the language
    probe's scores for Table 1's runs (NaN for the others)."""
    rows, scales = [], set()
    for path in paths:
        frame, record = curves.read_curve(path)
        w = curves.wide(frame)
        last = w.iloc[-1]
        support = [c for c in w.columns if c.startswith("accuracy/train")]
        env = record["setting"]["env"]
        rows.append({"experiment": record["experiment"], "model": record["model"],
                     "n_oc": int(env["nbr_object_centric_samples"]), "shots": _shots(env["sampling_strategy"]),
                     "variant": record["variant"], "seed": int(record["seed"]),
                     "observations": int(last["observations"]), "zsct_accuracy": float(last["zsct_accuracy"]),
                     "support_accuracy": float(last[support].mean()) if support else float("nan"),
                     "rec_stimulus_accuracy": float(last.get("rec_stimulus_accuracy", float("nan"))),
                     **{k: float(last.get(k, float("nan"))) for k in LANGUAGE}, "scale": record["scale"]})
        scales.add(record["scale"])
    runs = pd.DataFrame(rows, columns=ZSCT_COLUMNS).sort_values(
        ["experiment", "model", "n_oc", "shots", "variant", "seed"], kind="stable").reset_index(drop=True)
    curves.write_frame(runs, out, curves.summary_record(PAPER.id, "zsct", "aggregate", ",".join(sorted(scales)),
                                                        ",".join(sorted(set(runs["variant"]))), n_runs=len(runs)))
    return runs


def read_zsct(path) -> pd.DataFrame:
    return curves.read_frame(path, ZSCT_COLUMNS)[0]
