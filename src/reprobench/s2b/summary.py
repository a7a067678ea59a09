"""The S2B aggregate: curve files -> one row per (experiment, seed, setting, metric), the mean over episodes."""

from __future__ import annotations

import pandas as pd

from reprobench.core import curves
from reprobench.core.errors import ResultsFileError
from reprobench.s2b import PAPER
from reprobench.s2b.grid import EXPERIMENTS, RECALL
from reprobench.s2b.probes import PROTOCOLS, SPEAKER_METRICS

# value: the mean over a seed's episodes (or its one value); low, high: the 2.5% and 97.5% points of its episodes
COLUMNS = ["experiment", "seed", "setting", "metric", "value", "low", "high", "n", "scale"]
PROBE_EXPERIMENTS = ("speaker", "disentanglement")  # the probe curves of the aggregate stage
D2 = ("factorvae_score", "mig", "modularity")  # a disentanglement curve's metrics (probes.disentanglement)
# the trained runs with a query phase (zsct.parquet's): Table 2's, Table 1's, Table 4's and Figure 6's
ZSCT_EXPERIMENTS = ("zsct", *(e for e in EXPERIMENTS if e != RECALL))


def _check_probe(path: str, frame: pd.DataFrame, record: dict) -> None:
    """A speaker curve has every speaker metric; a disentanglement curve every metric for each (O, protocol) it
    holds, and every protocol; neither may be all NaN."""
    if record["experiment"] == "speaker":
        curves.require_metrics(path, frame, record, present=SPEAKER_METRICS)
        return
    curves.require_metrics(path, frame, record, present=D2)
    settings = frame.groupby("split")["metric"].agg(set)
    lacking = {s: sorted(set(D2) - m) for s, m in settings.items() if set(D2) - m}
    protocols = {s.partition("/")[2] for s in settings.index}
    if lacking or not set(PROTOCOLS) <= protocols:
        raise ResultsFileError(path, f"is an incomplete disentanglement curve: settings lacking metrics {lacking}, "
                               f"protocols {sorted(protocols)} of {list(PROTOCOLS)}")


def aggregate(paths: list[str], out: str) -> pd.DataFrame:
    rows, scales = [], set()
    for path, frame, record in curves.read_curves(paths, expect={"paper": PAPER.id,
                                                                 "experiment": PROBE_EXPERIMENTS}):
        _check_probe(path, frame, record)
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
    return curves.read_frame(path, COLUMNS, expect={"paper": PAPER.id, "experiment": "probes",
                                                    "stage": "aggregate"})[0]


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
    for path, frame, record in curves.read_curves(paths, expect={"paper": PAPER.id,
                                                                 "experiment": ZSCT_EXPERIMENTS}):
        curves.require_metrics(path, frame, record, finite=("zsct_accuracy",), labels=("observations",))
        w = curves.wide(frame)
        last = w.iloc[-1]
        support = [c for c in w.columns if c.startswith("accuracy/train")]
        env = (record.get("setting") or {}).get("env")
        if not isinstance(env, dict) or not {"nbr_object_centric_samples", "sampling_strategy"} <= set(env):
            raise ResultsFileError(path, f"has no setting.env with nbr_object_centric_samples and sampling_strategy "
                                   f"(it is {curves.describe(record)})")
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
    return curves.read_frame(path, ZSCT_COLUMNS, expect={"paper": PAPER.id, "experiment": "zsct",
                                                         "stage": "aggregate"})[0]
