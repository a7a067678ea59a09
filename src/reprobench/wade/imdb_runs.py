"""IMDB stages: prepare the tokenized corpus (real or synthetic), train one (model, seed), summarise and render
Table 2 and Figure 2."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reprobench.core import checkpoint as checkpoints
from reprobench.core import compare, curves, plotting, tables
from reprobench.core.compare import Interval
from reprobench.core.progress import Progress
from reprobench.core.provenance import Timer, base_record
from reprobench.wade import PAPER, imdb, imdb_models, metric, published
from reprobench.wade.summary import mean_curve

DISPLAY = {"rnn": "RNN", "lstm": "LSTM", "gru": "GRU", "transformer": "Transformer", "linear": "Linear"}


def prepare(source: str, resources: str, out: str, scale: str, n_train: int, n_test: int, seed: int = 0) -> None:
    import pyarrow as pa

    root = imdb.fetch(resources) if source == "download" else imdb.make_synthetic(resources, n_train, n_test, seed)
    data = imdb.read(root)
    tok = imdb.train_tokenizer(data["train"][0] + data["test"][0])
    columns = {"split": [], "label": [], "tokens": []}
    for split in ("train", "test"):
        texts, labels = data[split]
        columns["split"] += [split] * len(texts)
        columns["label"] += labels.tolist()
        columns["tokens"] += [e.ids for e in tok.encode_batch(texts)]
    table = pa.table({"split": columns["split"], "label": pa.array(columns["label"], pa.int64()),
                      "tokens": pa.array(columns["tokens"], pa.list_(pa.int32()))})
    curves.write_table(table, out, {"paper": PAPER.id, "stage": "data", "dataset": "imdb", "scale": scale,
                                    "synthetic": imdb.is_synthetic(root), "source": source,
                                    "vocabulary": tok.get_vocab_size(), **base_record()})


def load(path: str):
    import pyarrow.parquet as pq

    meta = curves.read_metadata(path)
    t = pq.read_table(path).to_pandas()
    split = {}
    for name in ("train", "test"):
        part = t[t["split"] == name]
        split[name] = ([np.asarray(x, dtype=np.int64) for x in part["tokens"]], part["label"].to_numpy())
    return split, meta


def train_run(data_path: str, model: str, seed: int, epochs: int, eval_every: int, out: str, scale: str,
              device: str, checkpoint: str | None = None, checkpoint_every_s: float = 600.0) -> None:
    split, meta = load(data_path)
    with Timer() as timer:
        examples, acc = imdb_models.train(model, int(meta["vocabulary"]), *split["train"], *split["test"], seed,
                                          epochs=epochs, eval_every_examples=eval_every, device=device,
                                          checkpoint=checkpoint, checkpoint_every_s=checkpoint_every_s)
    rows = curves.series_rows(seed, [("test", "accuracy", acc), ("train", "examples", examples)])
    record = curves.provenance(
        paper=PAPER.id, experiment="imdb", model=model, seed=seed, scale=scale, variant="all",
        setting={"dataset": "imdb", "synthetic": bool(meta["synthetic"]), "vocabulary": int(meta["vocabulary"])},
        config={"epochs": epochs, "batch": 8, "eval_every_examples": eval_every, "lr": 1e-3}, device=device,
        **timer.fields())
    curves.write_curve(rows, out, record)
    checkpoints.remove(checkpoint)


def summarise(paths: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
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
            smoothed = imdb_models.ewma(acc) if (variant == "faithful" and record["model"] == "linear") else acc
            rows.append({"model": record["model"], "seed": int(record["seed"]), "variant": variant,
                         "wade_x100": 100 * metric.wade(smoothed, conv), "max_accuracy": float(acc.max()),
                         "synthetic": bool(record["setting"]["synthetic"]), "scale": record["scale"]})
        series.setdefault(record["model"], []).append((table["examples"].to_numpy(), acc))
    bar.close()
    mean_rows = []
    for model, runs in series.items():
        mean, std = mean_curve([a for _, a in runs])
        mean_rows += [{"model": model, "step": k, "examples": runs[0][0][k], "mean": mean[k], "std": std[k],
                       "n": len(runs)} for k in range(len(mean))]
    return pd.DataFrame(rows), pd.DataFrame(mean_rows)


def table2(runs: pd.DataFrame, stem: str) -> list[str]:
    synthetic = bool(runs["synthetic"].any())
    header = ["Model", "Variant", "WADE × 1e-2", "max test accuracy", "runs"]
    rows = []
    for model in [m for m in ("lstm", "gru", "linear", "transformer", "rnn") if m in set(runs["model"])]:
        for variant in ("faithful", "corrected"):
            g = runs[(runs["model"] == model) & (runs["variant"] == variant)]
            if variant == "corrected" and model != "linear":
                continue  # only the Linear model's WADE differs (no EWMA smoothing)
            rows.append([DISPLAY[model], variant if model == "linear" else "both",
                         f"{g['wade_x100'].mean():.3f} ± {g['wade_x100'].std(ddof=0):.3f}",
                         f"{g['max_accuracy'].mean():.3f} ± {g['max_accuracy'].std(ddof=0):.3f}", str(len(g))])
    note = ("SYNTHETIC STAND-IN, NOT IMDB: these numbers come from a generated corpus in aclImdb's layout "
            "(config wade.imdb.source: download for the real data). " if synthetic else "") + \
        (f"Scale: {curves.scale_label(runs)}. WADE with A = 0.50..0.99, weights linspace(1, 10), T in "
         "evaluation intervals (paper: one per 400 examples); faithful smooths the Linear curve (EWMA, span 10) as the reference did.")
    return tables.write_all(stem, header, rows, rows, runs, note=note)


def figure2(mean_curves: pd.DataFrame, runs: pd.DataFrame, stem: str) -> list[str]:
    import matplotlib.pyplot as plt

    synthetic = bool(runs["synthetic"].any())
    with plotting.style():
        fig, ax = plt.subplots(figsize=(5.5, 3.5))
        for i, model in enumerate(m for m in imdb_models.MODELS if m in set(mean_curves["model"])):
            c = mean_curves[mean_curves["model"] == model].sort_values("step")
            w = runs[(runs["model"] == model) & (runs["variant"] == "faithful")]["wade_x100"].mean()
            ax.plot(c["examples"], c["mean"], color=plotting.COLORS[i], label=f"{DISPLAY[model]} ({w:.2f})")
            ax.fill_between(c["examples"], c["mean"] - c["std"], c["mean"] + c["std"], color=plotting.COLORS[i],
                            alpha=0.2, linewidth=0)
        ax.set_xscale("log")
        ax.set_xlabel("training examples")
        ax.set_ylabel("test accuracy")
        ax.legend(title="WADE × 1e-2", fontsize=6)
        ax.set_title("IMDB" + (" — SYNTHETIC STAND-IN, not IMDB" if synthetic else ""))
        fig.tight_layout()
        return plotting.save(fig, stem)


def comparison(runs: pd.DataFrame) -> list[dict]:
    """Table 2 against the published mean ± std, for both variants."""
    out = []
    scale = curves.scale_label(runs) + (" (synthetic data)" if runs["synthetic"].any() else "")
    for p in published.table2().itertuples():
        for variant in ("faithful", "corrected"):
            g = runs[(runs["model"] == p.model) & (runs["variant"] == variant)]
            if g.empty:
                continue
            for metric_name, pm, ps in (("wade_x100", p.wade_x100_mean, p.wade_x100_std),
                                        ("max_accuracy", p.max_test_accuracy_mean, p.max_test_accuracy_std)):
                out.append(compare.row(benchmark="wade", result="table2", row=DISPLAY[p.model], metric=metric_name,
                                       published=Interval.mean_std(pm, ps),
                                       reproduced=Interval.mean_std(g[metric_name].mean(), g[metric_name].std(ddof=0)),
                                       n_runs=len(g), scale=scale, variant=variant, spread="mean ± std ranges"))
    return out
