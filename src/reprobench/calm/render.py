"""The paper's outputs: Table 1 (ppl, ppl@sw, rec), Appendix Table 4 (their std over seeds), Appendix E's Table 2
(model sizes), Appendix C's Transformer validation perplexities, Figure 1(b-e) and Appendix B's Figure 4, and the
published-vs-reproduced comparison. Table 1, 4 and the switch figures draw the test-split runs; Appendix C the
Transformer's dev-split runs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reprobench.calm import published, sizes, zoo
from reprobench.calm.summary import stream_frame
from reprobench.core import compare, curves, plotting, tables, yours
from reprobench.core.compare import Interval
from reprobench.core.errors import ResultsFileError
from reprobench.core.plugins import display_name, run_id

METRICS = (("total_pp", "ppl"), ("ppl@sw", "ppl@sw"), ("rec", "rec"))
STAND_IN = "SYNTHETIC STAND-IN: generated corpora, not the paper's; the numbers say nothing about the paper."
# The vocabularies of the paper's counts: 211 chars (spec 3.10); for MultiDomain the union of four top-25K lists
# is about 58K (spec 3.10), but Table 2's own Large LSTM count (605.2M at H = 5200) solves to V = 51,181-51,199,
# and with V = 51,195 its Ind. LSTM count matches too (571.1M vs 571.2M): the paper counted with that vocabulary.
PAPER_VOCAB = {"multilingual": 211, "multidomain": 51_195}
N_CLASSES = {"multilingual": 5, "multidomain": 4}
WEIGHT_WINDOW = 100  # Figure 1(e), Appendix B: the last 100 batches


def _label(model: str) -> str:
    """The paper's name of a model, or 'Class (yours)' for a user's 'package.module:Class'."""
    return display_name(run_id(model), zoo.LABELS)


def _lam(lam: int) -> str:
    """10000 -> '10k' (the paper's labels), 200 -> '200'."""
    return f"{lam // 1000}k" if lam % 1000 == 0 else str(lam)


def _settings(runs: pd.DataFrame) -> list[tuple[str, int]]:
    return sorted({(d, int(lam)) for d, lam in zip(runs["dataset"], runs["lambda"])},
                  key=lambda s: (zoo.DATASETS.index(s[0]), s[1]))


def _models(runs: pd.DataFrame) -> list[str]:
    known = [m for m in zoo.MODELS if m in set(runs["model"])]
    return known + sorted(set(runs["model"]) - set(zoo.MODELS))


def _note(runs: pd.DataFrame) -> str:
    synthetic = bool(runs["synthetic"].any())
    return (f"Scale: {curves.scale_label(runs)}; {runs['seed'].nunique()} seed(s); means over seeds of the second "
            "half of each stream." + (f" {STAND_IN}" if synthetic else ""))


def _grouped(runs: pd.DataFrame, stat: str) -> pd.DataFrame:
    g = runs.groupby(["variant", "model", "dataset", "lambda"])[[m for m, _ in METRICS]]
    return (g.mean() if stat == "mean" else g.std(ddof=1)).reset_index()  # Table 4: pandas' std, ddof 1 (D16)


def test_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of Table 1 (the test halves): not Appendix C's Transformer."""
    return runs[runs["split"] == "test"]


def _metric_table(runs: pd.DataFrame, stem: str, stat: str) -> list[str]:
    """One row per (variant, model), a column per (dataset, lambda, metric): Table 1's layout."""
    runs = test_runs(runs)
    stats, settings = _grouped(runs, stat), _settings(runs)
    header = ["Variant", "Model"] + [f"{d} λ={_lam(lam)} {name}" for d, lam in settings for _, name in METRICS]
    rows, bold, data = [], set(), []
    for variant in [v for v in zoo.VARIANTS if v in set(runs["variant"])]:
        block = []
        for model in _models(runs):
            cells = [variant, _label(model)]
            for d, lam in settings:
                part = stats[(stats["variant"] == variant) & (stats["model"] == model) & (stats["dataset"] == d)
                             & (stats["lambda"] == lam)]
                for metric, name in METRICS:
                    value = float(part[metric].iloc[0]) if len(part) else np.nan
                    cells.append("—" if np.isnan(value) else f"{value:.3g}")
                    data.append({"variant": variant, "model": model, "dataset": d, "lambda": lam, "metric": name,
                                 stat: value})
            block.append(cells)
        if stat == "mean":  # the best (lowest) model of each column in bold, as the paper
            for j in range(2, len(header)):
                col = [float(r[j]) if r[j] != "—" else np.nan for r in block]
                bold |= {(len(rows) + i, j) for i in tables.best(col, higher=False)}
        rows += block
    return tables.write_all(stem, header, rows, rows, pd.DataFrame(data), bold, _note(runs))


def table1(runs: pd.DataFrame, stem: str) -> list[str]:
    return _metric_table(runs, stem, "mean")


def table4(runs: pd.DataFrame, stem: str) -> list[str]:
    return _metric_table(runs, stem, "std")


def paper_parameters(model: str, dataset: str) -> tuple[int, int]:
    """(hidden size, parameters) of a Table 1 model at the paper's size and vocabulary (spec 3.10's closed forms;
    gates not counted, as the reference's get_num_parameters)."""
    cfg = zoo.config(model, dataset, zoo.PAPER_LAMBDAS[dataset][0])
    v = PAPER_VOCAB[dataset]
    if cfg.arch == "mos":
        return cfg.nhid, sizes.mos_n_parameters(v, cfg.nhid, cfg.n_components)
    per_model = sizes.lstm_lm_n_parameters(v, cfg.nhid)
    n = N_CLASSES[dataset] if cfg.arch == "per_class" else cfg.n_experts
    return cfg.nhid, n * per_model


TABLE2_MODELS = {"LSTM": "large_lstm", "Ind. LSTM": "ind_lstm", "PoE/MoE (+PW) 5": "poe_pw_5",
                 "PoE/MoE (+PW) 30": "poe_pw_30", "MoS": "mos"}


def table2_rows() -> list[dict]:
    out = []
    for p in published.table2_sizes().itertuples():
        hidden, params = paper_parameters(TABLE2_MODELS[p.model], p.dataset)
        out.append({"model": p.model, "dataset": p.dataset, "published_hidden": int(p.hidden_size),
                    "published_params_millions": float(p.params_millions), "hidden": hidden,
                    "params_millions": params / 1e6, "vocabulary": PAPER_VOCAB[p.dataset]})
    return out


def table2(stem: str) -> list[str]:
    data = pd.DataFrame(table2_rows())
    header = ["Model", "Dataset", "Hidden (paper)", "Params M (paper)", "Hidden (ours)", "Params M (ours)"]
    rows = [[r.model, r.dataset, str(r.published_hidden), f"{r.published_params_millions:g}", str(r.hidden),
             f"{r.params_millions:.2f}"] for r in data.itertuples()]
    note = ("Ours: the hidden sizes of the test command lines (reprobench.calm.zoo), counted with the closed forms "
            "of specs/calm.md 3.10 (gates not counted, as the reference), at V = 211 (MultiLingual) and V = 51,195 "
            "(MultiDomain: the vocabulary that the paper's own Large LSTM count implies; the union of the four "
            "top-25K lists is about 58K, D8). Differences: DEVIATIONS C15.")
    return tables.write_all(stem, header, rows, rows, data, note=note)


def appendix_c_rows(runs: pd.DataFrame) -> list[dict]:
    """Per (variant, dataset, lambda): the Transformer's mean ± std ppl over seeds on the dev halves, next to the
    best validation ppl Appendix C reports."""
    pub = published.other()
    pub = pub[pub["item"] == "transformer_best_validation_ppl"]
    ours = runs[(runs["model"] == zoo.TRANSFORMER) & (runs["split"] == "dev")]
    out = []
    for (variant, dataset, lam), g in ours.groupby(["variant", "dataset", "lambda"]):
        paper = pub[(pub["dataset"] == dataset) & (pub["lambda"] == lam)]["value"]  # none at the small lambdas
        out.append({"variant": variant, "dataset": dataset, "lambda": int(lam), "n_runs": len(g),
                    "ppl_mean": float(g["total_pp"].mean()), "ppl_std": float(g["total_pp"].std(ddof=1)),
                    "published_best_ppl": float(paper.iloc[0]) if len(paper) else np.nan})
    return out


def appendix_c(runs: pd.DataFrame, stem: str) -> list[str]:
    data = pd.DataFrame(appendix_c_rows(runs), columns=["variant", "dataset", "lambda", "n_runs", "ppl_mean",
                                                       "ppl_std", "published_best_ppl"])
    header = ["Variant", "Dataset", "λ", "Runs", "ppl (ours, mean ± std)", "Best validation ppl (paper)"]
    rows = [[r.variant, r.dataset, _lam(r[2]), str(r.n_runs), f"{r.ppl_mean:.4g} ± {r.ppl_std:.2g}",
             "—" if np.isnan(r.published_best_ppl) else f"{r.published_best_ppl:g}"]
            for r in data.itertuples(index=False)]
    ours = runs[runs["model"] == zoo.TRANSFORMER]
    note = ("The Transformer of Appendix C (HEAD: a 512-token buffer per stream, Vaswani's schedule) with the "
            "settings of the test command lines (reprobench.calm.zoo), on the dev halves; the paper gives the best "
            "of a search over schedules, learning rates and warm-ups at lambda 10k/100k (MultiLingual) and 10k/20k "
            "(MultiDomain), so ours is one point of that search. "
            + (_note(ours) if len(ours) else "No Transformer run in this config (calm.models)."))
    return tables.write_all(stem, header, rows, rows, data, note=note)


# --- figures ----------------------------------------------------------------------------------------------------


def switch_figure(switch: pd.DataFrame, runs: pd.DataFrame, dataset: str, stem: str, variant: str) -> list[str]:
    """Mean cross-entropy over the first batches after a switch, per model: mean over seeds and a min-max band."""
    import matplotlib.pyplot as plt

    part = switch[(switch["dataset"] == dataset) & (switch["variant"] == variant)
                  & switch["model"].isin(set(test_runs(runs)["model"]))]
    lams = sorted(part["lambda"].unique())
    with plotting.style():
        fig, axes = plt.subplots(1, max(len(lams), 1), figsize=(5.5 * max(len(lams), 1), 4), squeeze=False)
        for ax, lam in zip(axes[0], lams):
            sub = part[part["lambda"] == lam]
            for i, model in enumerate(_models(sub)):
                per_seed = sub[sub["model"] == model].pivot_table(index="offset", columns="seed", values="loss")
                x = per_seed.index.to_numpy() + 1
                ax.plot(x, per_seed.mean(axis=1), label=_label(model), color=plotting.COLORS[i % len(plotting.COLORS)],
                        linestyle="-" if i < len(plotting.COLORS) else "--")
                ax.fill_between(x, per_seed.min(axis=1), per_seed.max(axis=1), alpha=0.15,
                                color=plotting.COLORS[i % len(plotting.COLORS)])
            ax.set_title(f"{dataset}, lambda = {lam:,} ({variant})")
            ax.set_xlabel("batches after a switch")
            ax.set_ylabel("cross-entropy (nats)")
        if lams:
            axes[0][-1].legend(fontsize=7, ncol=2)
        if runs["synthetic"].any():
            fig.suptitle(STAND_IN, fontsize=8)
        return plotting.save(fig, stem)


def weight_curve(path: str):
    """(per-batch frame, record, weight columns) of a curve with gate weights; a clear error names a curve without
    them (a model with no mixture: its heatmap would be empty)."""
    w, record = stream_frame(path)
    cols = [c for c in w.columns if c.startswith("weight_")]
    if not cols:
        raise ResultsFileError(path, f"has no mixture weights (weight_NN metrics): it is a "
                               f"'{_label(record['model'])}' curve; Figures 1(d, e), 4 and Appendix B read a PoE+PW 30 "
                               "curve")
    return w, record, cols


def class_weight_correlation(w: pd.DataFrame, cols: list[str], classes: list[str], window: int = WEIGHT_WINDOW):
    """Figure 1(e): each class's mean weight vector over the last `window` batches of each of its fragments (all of a
    shorter fragment), averaged over its fragments; returns (class-by-class Pearson correlation over experts, the
    class mean vectors)."""
    last = w.groupby("fragment", sort=True).tail(window)
    means = last.groupby("class_id")[cols].mean()
    vectors = means.to_numpy()
    corr = np.corrcoef(vectors) if len(vectors) > 1 else np.ones((1, 1))
    return pd.DataFrame(corr, index=[classes[int(i)] for i in means.index],
                        columns=[classes[int(i)] for i in means.index]), means


def weight_autocorrelation(weights: np.ndarray, window: int = WEIGHT_WINDOW) -> float:
    """Appendix B's statistic as we read it: the Pearson correlation (over experts) between the mean weight vector
    of batches [t - window, t) and that of [t - 2 window, t - window), averaged over t = 2 window, 3 window, ...
    of the stream. The paper gives the numbers (0.65 MultiDomain, 0.96 MultiLingual), not the formula."""
    values = []
    for t in range(2 * window, len(weights) + 1, window):
        a, b = weights[t - window:t].mean(0), weights[t - 2 * window:t - window].mean(0)
        if np.ptp(a) > 0 and np.ptp(b) > 0:
            values.append(np.corrcoef(a, b)[0, 1])
    return float(np.mean(values)) if values else float("nan")


def _heatmap(ax, w: pd.DataFrame, cols: list[str], classes: list[str], start: int, stop: int) -> None:
    part = w.iloc[start:stop]
    ax.imshow(part[cols].to_numpy().T, aspect="auto", cmap="viridis", interpolation="nearest",
              extent=(start, stop, len(cols) - 0.5, -0.5))
    for b in part.index[part["switch"].to_numpy() > 0]:
        ax.axvline(b, color="white", linewidth=0.8)
        ax.text(b, -0.6, classes[int(part.at[b, "class_id"])], fontsize=6, rotation=90, va="bottom")
    ax.set_xlabel("batch")
    ax.set_ylabel("expert")


def figure1d(path: str, stem: str, n_batches: int = 600) -> list[str]:
    import matplotlib.pyplot as plt

    w, record, cols = weight_curve(path)
    classes = record["setting"]["classes"]
    start = max(0, len(w) // 2)
    with plotting.style():
        fig, ax = plt.subplots(figsize=(10, 4))
        _heatmap(ax, w, cols, classes, start, min(len(w), start + n_batches))
        ax.set_title(f"{_label(record['model'])} mixture weights, {record['setting']['dataset']}, "
                     f"lambda = {record['setting']['lambda']:,}, seed {record['seed']} ({record['variant']})",
                     fontsize=9)
        if record["setting"]["synthetic"]:
            fig.suptitle(STAND_IN, fontsize=8)
        return plotting.save(fig, stem)


def figure1e(path: str, stem: str) -> list[str]:
    import matplotlib.pyplot as plt
    from scipy.cluster import hierarchy

    w, record, cols = weight_curve(path)
    corr, _ = class_weight_correlation(w, cols, record["setting"]["classes"])
    with plotting.style():
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
        im = left.imshow(corr.to_numpy(), vmin=-1, vmax=1, cmap="RdBu_r")
        left.set_xticks(range(len(corr)), corr.columns, rotation=45, fontsize=7)
        left.set_yticks(range(len(corr)), corr.index, fontsize=7)
        fig.colorbar(im, ax=left, fraction=0.046)
        left.set_title("class-by-class correlation of mixture weights")
        if len(corr) > 1:
            distance = np.clip(1 - corr.to_numpy(), 0, None)
            condensed = distance[np.triu_indices(len(corr), 1)]
            hierarchy.dendrogram(hierarchy.linkage(condensed, "average"), labels=list(corr.index), ax=right)
        right.set_title("average-linkage clustering (1 - correlation)")
        if record["setting"]["synthetic"]:
            fig.suptitle(STAND_IN, fontsize=8)
        return plotting.save(fig, stem)


def figure4(path: str, stem: str, n_batches: int = 600) -> list[str]:
    import matplotlib.pyplot as plt

    w, record, cols = weight_curve(path)
    classes = record["setting"]["classes"]
    auto = weight_autocorrelation(w[cols].to_numpy())
    with plotting.style():
        fig, ax = plt.subplots(figsize=(10, 4))
        start = max(0, len(w) // 2)
        _heatmap(ax, w, cols, classes, start, min(len(w), start + n_batches))
        ax.set_title(f"{_label(record['model'])} weights, {record['setting']['dataset']}; autocorrelation of the "
                     f"last {WEIGHT_WINDOW} batches' weights with the previous {WEIGHT_WINDOW}: {auto:.2f} "
                     "(paper: 0.65 MultiDomain, 0.96 MultiLingual)", fontsize=8)
        if record["setting"]["synthetic"]:
            fig.suptitle(STAND_IN, fontsize=8)
        return plotting.save(fig, stem)


# --- comparison -------------------------------------------------------------------------------------------------


def _rounding(value: float) -> float:
    """Half a unit of the last digit a published number is printed with (22 -> 0.5, 21.66 -> 0.005)."""
    text = f"{value:g}"
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10.0**-decimals + 1e-9


STAND_IN_REASON = "the synthetic stand-in corpora, not the paper's"  # a comparison row's


def comparison_rows(runs: pd.DataFrame, weight_curves: dict[str, str] | None = None) -> list[dict]:
    """Table 1 means (mean ± std over seeds, ours and the paper's) and Table 2's parameter counts; the
    Appendix B weight autocorrelations where a PoE+PW 30 curve is given ({dataset: path})."""
    rows = []
    scale = curves.scale_label(runs) if len(runs) else ""
    comparable = not runs["synthetic"].any()
    stand_in = {"comparable": comparable, "not_comparable_because": STAND_IN_REASON}
    pub = published.table1()
    for p in pub.itertuples():
        lam = int(p.lam)
        ours = runs[(runs["model"] == p.model) & (runs["dataset"] == p.dataset) & (runs["lambda"] == lam)]
        metric = published.METRICS[p.metric]
        for variant, g in ours.groupby("variant"):
            label = f"{p.dataset} {_lam(lam)}/{_label(p.model)}"
            std = p.std if not pd.isna(p.std) else np.nan
            rows.append(compare.row(
                benchmark="calm", result="table1", row=label, metric=p.metric,
                published=Interval.mean_std(p.mean, std), reproduced=Interval.mean_std(g[metric].mean(),
                                                                                        g[metric].std(ddof=1)),
                n_runs=len(g), scale=scale, variant=variant, spread="mean ± std ranges", **stand_in,
                deviation=compare.deviation(published.DEVIATIONS, "table1", label, p.metric, variant)))
    for r in table2_rows():  # a count that does not depend on training: within the paper's rounding or not
        rows.append(compare.row(
            benchmark="calm", result="table2_model_sizes", row=f"{r['dataset']}/{r['model']}",
            metric="params_millions", published=Interval(r["published_params_millions"]),
            reproduced=Interval(r["params_millions"], r["params_millions"], r["params_millions"]), n_runs=1,
            scale="exact", variant="faithful", tolerance=_rounding(r["published_params_millions"]), spread="rounding",
            deviation=compare.deviation(published.DEVIATIONS, "table2_model_sizes", f"{r['dataset']}/{r['model']}",
                                        "params_millions", "faithful")))
    for r in appendix_c_rows(runs):
        if np.isnan(r["published_best_ppl"]):
            continue
        label = f"{r['dataset']} {_lam(r['lambda'])}/Transformer"
        rows.append(compare.row(
            benchmark="calm", result="appendix_c_transformer", row=label, metric="best_validation_ppl",
            published=Interval(r["published_best_ppl"]), reproduced=Interval.mean_std(r["ppl_mean"], r["ppl_std"]),
            n_runs=r["n_runs"], scale=scale, variant=r["variant"], spread="mean ± std vs the paper's best",
            **stand_in,
            deviation=compare.deviation(published.DEVIATIONS, "appendix_c_transformer", label, "best_validation_ppl",
                                        r["variant"])))
    other = published.other()
    for dataset, path in (weight_curves or {}).items():
        w, record, cols = weight_curve(path)
        value = weight_autocorrelation(w[cols].to_numpy())
        pub_rows = other[(other["item"] == "gate_weight_autocorrelation_last100_vs_previous100")
                         & (other["dataset"] == dataset)]
        for p in pub_rows.itertuples():
            rows.append(compare.row(
                benchmark="calm", result="figure4", row=f"{dataset}/PoE+PW 30", metric="weight_autocorrelation",
                published=Interval(float(p.value)), reproduced=Interval(value), n_runs=1, scale=record["scale"],
                variant=record["variant"], comparable=not record["setting"]["synthetic"],
                not_comparable_because=STAND_IN_REASON))
    return rows


def yours_rows(runs: pd.DataFrame) -> list[dict]:
    """Every Table 1 setting (dataset, λ) in which a user's model ran: each model's ppl, ppl@sw and rec, mean ± std
    over seeds (pandas' std, as Table 4), with the paper's mean ± std where it gives one (as `comparison_rows`)."""
    runs = test_runs(runs)
    if not len(runs):
        return []
    pub = published.table1()
    scale = curves.scale_label(runs) + (" (synthetic data)" if runs["synthetic"].any() else "")
    rows = []
    for (dataset, lam), setting in runs.groupby(["dataset", "lambda"], sort=False):
        if setting["model"].isin(zoo.ALL_MODELS).all():
            continue
        for (variant, model), g in setting.groupby(["variant", "model"], sort=False):
            for metric, column in published.METRICS.items():
                p = pub[(pub["model"] == model) & (pub["dataset"] == dataset) & (pub["lam"] == lam)
                        & (pub["metric"] == metric)]
                paper = Interval(np.nan) if not len(p) else Interval.mean_std(
                    float(p["mean"].iloc[0]), float(p["std"].iloc[0]) if not pd.isna(p["std"].iloc[0]) else np.nan)
                rows.append(yours.row(result="table1", setting=f"{dataset} λ={_lam(int(lam))}", metric=metric,
                                      variant=variant, model=_label(model), yours=model not in zoo.ALL_MODELS,
                                      reproduced=Interval.mean_std(g[column].mean(), g[column].std(ddof=1)),
                                      spread="mean ± std", n_runs=len(g), scale=scale, published=paper))
    return rows
