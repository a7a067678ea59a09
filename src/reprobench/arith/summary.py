"""From curves to numbers: per-run summaries (model selection, success, solved-at, sparsity) and group stats.

Per run (specs/arith.md, section 3, "Model selection" and "Success"):
- selected step: lowest validation MSE within the selection window (faithful: the last `window`
  evaluations, as the R scripts; corrected: every evaluation after step 0, so that the 10e6/15e6-step
  input-size runs are selected over their whole run);
- solved: test MSE at the selected step below the variant's threshold (NaN counts as failure);
- solved at: first evaluated step whose test MSE is below the threshold (used for solved runs only);
- sparsity error at the selected step.
Per group: Wilson interval for success; gamma profile interval for solved-at; beta profile interval for
sparsity, with the R bug kept in `faithful` and fixed in `corrected` (arith.estimators.beta_mean).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from reprobench.arith import estimators
from reprobench.arith.grid import Setting
from reprobench.arith.thresholds import read as read_thresholds
from reprobench.core import curves, stats
from reprobench.core.errors import ResultsFileError
from reprobench.core.progress import Progress

VARIANTS = ("faithful", "corrected")
GROUP_KEYS = ["experiment", "model", "operation", "input_size", "hidden_size", "overlap", "subset",
              "interpolation", "extrapolation"]
# What the table, the figure and the comparison read from a groups file (group_statistics writes them).
GROUP_COLUMNS = GROUP_KEYS + ["variant", "n_runs", "n_solved", "success", "success_low", "success_high",
                              "solved_at_median", "solved_at_mean", "solved_at_low", "solved_at_high",
                              "sparsity_error", "sparsity_low", "sparsity_high", "scale"]


def nan_step(curve: pd.DataFrame) -> float:
    """The first evaluated step at which a recorded value (a forward pass on the training batch, the interpolation
    or the extrapolation set, or the weights) is NaN; NaN if none."""
    steps = curve.loc[curve["value"].isna(), "step"]
    return float(steps.min()) if len(steps) else math.nan


def summarise_run(curve: pd.DataFrame, threshold: float, variant: str, window: int) -> dict:
    """Model selection and success of one run. Faithful: the reference checks every forward pass for NaN,
    evaluations included, and ends the run at the first one (specs/arith.md section 3, "Crashes"; DEVIATIONS A4),
    so the curve is cut after the first evaluation holding a NaN, as its partial log was. Corrected: the run is
    judged on its whole curve (an overflow on the extrapolation set does not stop training)."""
    ended = nan_step(curve)
    if variant == "faithful" and not math.isnan(ended):
        curve = curve[curve["step"] <= ended]
    wide = curve[curve["split"].isin(["valid", "test", "weights"])].pivot_table(
        index="step", columns="split", values="value", aggfunc="first", dropna=False).sort_index()
    out = {"nan_at": ended, "n_evals": len(wide), "best_step": math.nan, "valid_at_best": math.nan,
           "test_at_best": math.nan, "sparsity_at_best": math.nan, "solved": False, "solved_at": math.nan}
    if wide.empty:
        return out
    candidates = wide.tail(window) if variant == "faithful" else wide[wide.index > 0]
    valid = candidates["valid"].dropna()
    if not valid.empty:
        best = valid.idxmin()
        out.update(best_step=int(best), valid_at_best=float(wide.at[best, "valid"]),
                   test_at_best=float(wide.at[best, "test"]), sparsity_at_best=float(wide.at[best, "weights"]))
        out["solved"] = bool(out["test_at_best"] < threshold)  # NaN compares False
    below = wide.index[(wide["test"] < threshold).to_numpy()]
    if len(below):
        out["solved_at"] = int(below[0])
    return out


def group_statistics(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, variant): success with Wilson CI, solved-at median and gamma mean with CI,
    sparsity error with beta CI. `runs` has one row per (run, variant) as written by the aggregate stage."""
    rows = []
    for key, g in runs.groupby(GROUP_KEYS + ["variant"], sort=False, dropna=False):
        row = dict(zip(GROUP_KEYS + ["variant"], key))
        n, k = len(g), int(g["solved"].sum())
        solved = g[g["solved"]]
        success = stats.wilson(k, n)
        solved_at = estimators.gamma_mean(solved["solved_at"].to_numpy(float))
        # a user's unit without weights() has none (NaN): no sparsity statistic then
        sparsity = estimators.beta_mean(solved["sparsity_at_best"].dropna().to_numpy(float),
                                        faithful=row["variant"] == "faithful")
        row.update(n_runs=n, n_solved=k, n_crashed=int(g["crashed"].sum()),
                   success=success.mean, success_low=success.low, success_high=success.high,
                   solved_at_median=float(np.median(solved["solved_at"])) if k else math.nan,
                   solved_at_mean=solved_at.mean, solved_at_low=solved_at.low, solved_at_high=solved_at.high,
                   solved_at_method=solved_at.method,
                   sparsity_error=sparsity.mean, sparsity_low=sparsity.low, sparsity_high=sparsity.high,
                   sparsity_method=sparsity.method,
                   threshold=float(g["threshold"].iloc[0]), iterations=int(g["iterations"].max()),
                   scale=str(g["scale"].iloc[0]))
        rows.append(row)
    return pd.DataFrame(rows)


def aggregate(paths: list[str], experiment: str, window: int) -> pd.DataFrame:
    """One row per (run, variant) of one experiment's curve files, with its setting's success threshold."""
    rows, thresholds = [], {}
    bar = Progress(len(paths), f"aggregate {experiment}", log_every_s=10)
    for path in paths:
        frame, record = curves.read_curve(path)
        setting = Setting(**{k: tuple(v) if isinstance(v, list) else v for k, v in record["setting"].items()})
        if setting.experiment != experiment:
            raise ResultsFileError(path, f"belongs to experiment '{setting.experiment}', not '{experiment}'")
        tpath = setting.threshold_path()
        if tpath not in thresholds:
            thresholds[tpath] = read_thresholds(tpath)
        for variant in VARIANTS:
            threshold = thresholds[tpath][variant]
            run = summarise_run(frame, threshold, variant, window)
            # a training NaN ends the run in both variants; a NaN on an evaluation pass, in the faithful one
            crashed = record.get("status") == "nan" or (variant == "faithful" and not math.isnan(run["nan_at"]))
            rows.append({**setting.keys(), "input_size": setting.input_size, "hidden_size": setting.hidden_size,
                         "overlap": setting.overlap, "subset": setting.subset, "seed": int(record["seed"]),
                         "variant": variant, "threshold": threshold, **run, "crashed": crashed,
                         "iterations": int(record["config"]["iterations"]), "scale": record["scale"], "source": path})
        bar.update(1)
    bar.close()
    return pd.DataFrame(rows)


def read_groups(paths: list[str]) -> pd.DataFrame:
    """The per-setting statistics of several experiments, as one frame."""
    return pd.concat([curves.read_frame(path, GROUP_COLUMNS)[0] for path in paths], ignore_index=True)
