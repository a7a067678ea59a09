"""The paper's outputs: the "Effect of dataset operation" table, the "Effect of parameters" figure, and the
published-vs-reproduced comparison."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reprobench.arith import published
from reprobench.arith.grid import fmt
from reprobench.arith.paper import display
from reprobench.core import compare, curves, plotting, stats, tables, yours
from reprobench.core.compare import Interval
from reprobench.core.plugins import spec_of

OPERATION_SYMBOLS = {"mul": "×", "div": "/", "add": "+", "sub": "−", "squared": "z²", "root": "√z"}
SWEEP_AXES = [("input_size", "input size"), ("hidden_size", "hidden size"), ("overlap", "overlap ratio"),
              ("subset", "subset ratio"), ("range", "interpolation range")]
METRIC_COLUMNS = {"success": ("success", "success_low", "success_high"),
                  "solved_at_mean": ("solved_at_mean", "solved_at_low", "solved_at_high"),
                  "sparsity_error": ("sparsity_error", "sparsity_low", "sparsity_high")}


def _ci(mean, low, high, fmt_value, tex=False):
    if pd.isna(mean):
        return "---" if tex else "—"
    if pd.isna(low) or pd.isna(high):
        return f"${fmt_value(mean)}$" if tex else fmt_value(mean)
    plus, minus = fmt_value(high - mean), fmt_value(mean - low)
    if tex:
        return f"${fmt_value(mean)}^{{+{plus}}}_{{-{minus}}}$"
    return f"{fmt_value(mean)} (+{plus}/−{minus})"


def _pct(x):
    return f"{100 * x:.0f}%"


def _pct_tex(x):
    return rf"{100 * x:.0f}\%"


def _cells(r, tex=False):
    sci = tables.sci_tex if tex else tables.sci
    return [_ci(r.success, r.success_low, r.success_high, _pct_tex if tex else _pct, tex),
            (f"${sci(r.solved_at_median)}$" if tex and not pd.isna(r.solved_at_median) else sci(r.solved_at_median)),
            _ci(r.solved_at_mean, r.solved_at_low, r.solved_at_high, sci, tex),
            _ci(r.sparsity_error, r.sparsity_low, r.sparsity_high, sci, tex)]


def operations_table(groups: pd.DataFrame, stem: str) -> list[str]:
    """Paper layout: one row per (operation, model); a 'corrected' row under it where the variants differ."""
    groups = groups[groups["experiment"] == "operations"]
    header = ["Op", "Model", "Variant", "Success rate", "Solved at: median", "Solved at: mean", "Sparsity error"]
    rows_md, rows_tex, bold, data = [], [], set(), []
    for op in dict.fromkeys(groups["operation"]):
        block = groups[groups["operation"] == op]
        first_row = len(rows_md)
        faithful = block[block["variant"] == "faithful"].set_index("model")
        corrected = block[block["variant"] == "corrected"].set_index("model")
        for model in faithful.index:
            for variant, frame in (("faithful", faithful), ("corrected", corrected)):
                if model not in frame.index:
                    continue
                r = frame.loc[model]
                md, tex = _cells(r), _cells(r, tex=True)
                if variant == "corrected" and md == _cells(faithful.loc[model]):
                    continue  # the variants agree: show one row
                label = [OPERATION_SYMBOLS.get(op, op), display(model), variant]
                rows_md.append(label + md)
                rows_tex.append(label + tex)
                data.append(r.to_dict() | {"model": model, "variant": variant})
        # best per operation among the faithful rows: highest success, lowest solved-at and sparsity
        faithful_rows = [i for i in range(first_row, len(rows_md)) if rows_md[i][2] == "faithful"]
        frame = faithful.reset_index()
        for col, column_index, higher in (("success", 3, True), ("solved_at_median", 4, False),
                                          ("solved_at_mean", 5, False), ("sparsity_error", 6, False)):
            bold |= {(faithful_rows[i], column_index) for i in tables.best(frame[col], higher)}
    scale = curves.scale_label(groups) if len(groups) else "?"
    n = int(groups["n_runs"].max()) if len(groups) else 0
    iterations = int(groups["iterations"].max()) if len(groups) else 0
    note = (f"Scale: {scale}; {n} seeds per cell; {iterations + 1:,} optimiser steps. Success: Wilson 95% CI. "
            "Solved at: median, and gamma-fit mean with 95% profile CI, over solved runs. Sparsity error: beta-fit "
            "mean with 95% profile CI over solved runs (faithful: the published estimator, about half the mean; "
            "corrected: fixed). Bold: best per operation (faithful rows). See docs/DEVIATIONS.md.")
    if len(groups) and groups["model"].map(spec_of).notna().any():
        note += (" Rows marked (yours): a user's unit (docs/PLUGINS.md), trained, selected and scored as the paper's "
                 "models; its sparsity error is — where the unit exposes no weights().")
    return tables.write_all(stem, header, rows_md, rows_tex, pd.DataFrame(data), bold, note)


def _sweep_key(row) -> str:
    if row["experiment"] == "range":
        return row["interpolation"]
    return fmt(row[row["experiment"]])


def _dodge(x: np.ndarray, index: int, count: int, log: bool, span: float) -> np.ndarray:
    """Shift model `index` of `count` sideways so that equal values stay visible."""
    shift = (index - (count - 1) / 2) * 0.02
    return x * 10 ** (shift * span) if log else x + shift * span


def parameters_figure(groups: pd.DataFrame, stem: str, variant: str) -> list[str]:
    """3 rows (success, solved at, sparsity error) x 5 sweeps; NAC* and NALU with 95% CIs; published success
    rates overlaid as open markers."""
    import matplotlib.pyplot as plt

    groups = groups[(groups["experiment"] != "operations") & (groups["variant"] == variant)].copy()
    groups["key"] = groups.apply(_sweep_key, axis=1)
    operations = sorted(set(groups["operation"]))
    pub = published.parameters_figure()
    if operations != [published.FIGURE_OPERATION]:  # the published rates are for mul only
        pub = pub.iloc[:0]
    models = list(dict.fromkeys(groups["model"]))
    with plotting.style():
        fig, axes = plt.subplots(3, 5, figsize=(12, 6.4), sharey="row")
        for col, (experiment, label) in enumerate(SWEEP_AXES):
            part = groups[groups["experiment"] == experiment]
            keys = list(dict.fromkeys(part["key"]))
            categorical, log = experiment == "range", experiment == "input_size"
            xs = {k: float(i if categorical else float(k)) for i, k in enumerate(keys)}
            x = np.array([xs[k] for k in keys])
            if len(x) == 0:
                continue
            span = (np.log10(x.max() / x.min()) if log else x.max() - x.min()) or 1.0
            for m_index, model in enumerate(models):
                color = plotting.COLORS[m_index % len(plotting.COLORS)]
                rows = part[part["model"] == model].set_index("key").reindex(keys)
                xd = _dodge(x, m_index, len(models), log, span)
                for row_index, metric in enumerate(("success", "solved_at_mean", "sparsity_error")):
                    mean, low, high = (rows[c].to_numpy(float) for c in METRIC_COLUMNS[metric])
                    err = np.vstack([np.nan_to_num(mean - low), np.nan_to_num(high - mean)])
                    axes[row_index, col].errorbar(xd, mean, yerr=err, color=color, marker="o", capsize=2,
                                                  label=display(model) if col == 0 and row_index == 0 else None)
                p = pub[(pub["experiment"] == experiment) & (pub["model"] == model) & pub["value"].isin(xs)]
                px = _dodge(np.array([xs[v] for v in p["value"]]), m_index, len(models), log, span)
                axes[0, col].plot(px, p["success_rate"], linestyle="none", marker="D", markerfacecolor="none",
                                  color=color, label=f"{display(model)} (published)" if col == 0 and len(p) else None)
            for row_index in range(3):
                ax = axes[row_index, col]
                if log:
                    ax.set_xscale("log")
                    ax.set_xlim(x.min() / 10 ** (0.08 * span), x.max() * 10 ** (0.08 * span))
                else:
                    ax.set_xlim(x.min() - 0.08 * span, x.max() + 0.08 * span)
                if categorical:
                    ax.set_xticks(range(len(keys)), [f"U[{k.replace('_', ',')}]" for k in keys], rotation=30)
                if row_index and part[["solved_at_mean", "sparsity_error"][row_index - 1]].isna().all():
                    ax.text(0.5, 0.5, "no solved run", transform=ax.transAxes, ha="center", va="center",
                            color="0.5")
            axes[2, col].set_xlabel(label)
        axes[0, 0].set_ylabel("success rate")
        axes[1, 0].set_ylabel("solved at (step)")
        axes[2, 0].set_ylabel("sparsity error")
        axes[0, 0].set_ylim(-0.05, 1.05)
        if groups["solved_at_mean"].notna().any():
            axes[1, 0].set_yscale("log")
        else:
            axes[1, 0].set_ylim(0, 1)
        if groups["sparsity_error"].isna().all():
            axes[2, 0].set_ylim(0, 0.5)
        scale = curves.scale_label(groups) if len(groups) else "?"
        n = int(groups["n_runs"].max()) if len(groups) else 0
        fig.suptitle(f"Effect of parameters (op = {', '.join(operations) or '?'}; {n} seeds; scale {scale}; "
                     f"variant {variant}; open diamonds: published success rates"
                     f"{'' if len(pub) else ', none for this operation'})")
        fig.legend(loc="lower center", ncol=4, bbox_to_anchor=(0.5, -0.03))
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        return plotting.save(fig, stem)


def comparison(groups: pd.DataFrame) -> list[dict]:
    rows = []
    ops = groups[groups["experiment"] == "operations"]
    for _, p in published.operations_table().iterrows():
        for _, r in ops[(ops["operation"] == p["operation"]) & (ops["model"] == p["model"])].iterrows():
            label = f"{p['operation']}/{display(p['model'])}"
            common = {"benchmark": "arith", "result": "operations", "row": label, "n_runs": int(r["n_runs"]),
                      "scale": r["scale"], "variant": r["variant"]}

            def known(metric, label=label, variant=r["variant"], p=p, r=r):
                """The row's documented deviation, and whether its budget allows the comparison (and why not)."""
                short = published.budget_reason("operations", p["operation"], p["model"], int(r["iterations"]),
                                                metric=metric)
                return {"deviation": compare.deviation(published.DEVIATIONS, "operations", label, metric, variant),
                        "comparable": not short, "not_comparable_because": short}

            for metric, pub in _published_operation(p).items():  # success, solved-at median and mean, sparsity
                reproduced = Interval(r[metric]) if metric == "solved_at_median" else \
                    Interval(*r[list(METRIC_COLUMNS[metric])])
                rows.append(compare.row(metric=metric, published=pub, reproduced=reproduced, **known(metric),
                                        **common))
    sweeps = groups[(groups["experiment"] != "operations")
                    & (groups["operation"] == published.FIGURE_OPERATION)].copy()  # published: mul only
    sweeps["key"] = [_sweep_key(r) for _, r in sweeps.iterrows()]  # (apply on no rows makes a frame)
    for _, p in published.parameters_figure().iterrows():
        match = sweeps[(sweeps["experiment"] == p["experiment"]) & (sweeps["model"] == p["model"])
                       & (sweeps["key"] == p["value"])]
        # the published spread: the paper's own 95% Wilson interval at its 50 seeds
        spread = stats.wilson(round(p["success_rate"] * published.FIGURE_SEEDS), published.FIGURE_SEEDS)
        for _, r in match.iterrows():
            label = f"{p['experiment']}={p['value']}/{display(p['model'])}"
            short = published.budget_reason(p["experiment"], r["operation"], p["model"], int(r["iterations"]),
                                            int(r["input_size"]))
            rows.append(compare.row(benchmark="arith", result="parameters", row=label, metric="success",
                                    comparable=not short, not_comparable_because=short,
                                    published=Interval(p["success_rate"]),
                                    reproduced=Interval(*r[list(METRIC_COLUMNS["success"])]), n_runs=int(r["n_runs"]),
                                    scale=r["scale"], variant=r["variant"],
                                    tolerance=published.FIGURE_READING_ACCURACY,
                                    published_width=spread.high - spread.low,
                                    deviation=compare.deviation(published.DEVIATIONS, "parameters", label, "success",
                                                                r["variant"])))
    return rows


YOURS_METRICS = {"success": "Wilson 95%", "solved_at_median": "none", "solved_at_mean": "gamma fit, 95% profile",
                 "sparsity_error": "beta fit, 95% profile"}  # the operations table's columns and their intervals


def yours_rows(groups: pd.DataFrame) -> list[dict]:
    """Every setting (an operation of the table, a point of a sweep) in which a user's unit ran: each model's success
    (and, in the table, its solved-at and sparsity error) with the published number where the paper gives one."""
    table = published.operations_table().set_index(["operation", "model"])
    figure = published.parameters_figure()
    groups = groups.copy()
    groups["setting"] = [r["operation"] if r["experiment"] == "operations" else
                         f"{r['operation']}, {r['experiment']}={_sweep_key(r)}" for _, r in groups.iterrows()]
    rows = []
    for (experiment, setting), g in groups.groupby(["experiment", "setting"], sort=False):
        if not g["model"].map(spec_of).notna().any():
            continue
        result = "operations" if experiment == "operations" else "parameters"
        for _, r in g.iterrows():
            for metric, spread in YOURS_METRICS.items() if result == "operations" else [("success", "Wilson 95%")]:
                pub = yours.NONE
                if result == "operations" and (r["operation"], r["model"]) in table.index:
                    pub = _published_operation(table.loc[(r["operation"], r["model"])])[metric]
                elif result == "parameters" and r["operation"] == published.FIGURE_OPERATION:
                    p = figure[(figure["experiment"] == experiment) & (figure["model"] == r["model"])
                               & (figure["value"] == _sweep_key(r))]
                    pub = Interval(float(p["success_rate"].iloc[0])) if len(p) else pub
                reproduced = Interval(r[metric]) if metric == "solved_at_median" else \
                    Interval(*r[list(METRIC_COLUMNS[metric])])
                rows.append(yours.row(result=result, setting=setting, metric=metric, variant=r["variant"],
                                      model=display(r["model"]), yours=spec_of(r["model"]) is not None,
                                      reproduced=reproduced, spread=spread, n_runs=int(r["n_runs"]), scale=r["scale"],
                                      published=pub))
        if result == "operations":  # the paper's models of the operation that did not run here: published only
            for model in sorted(set(table.loc[setting].index) - set(g["model"])) if setting in table.index else []:
                rows += _published_only(table.loc[(setting, model)], setting, model, g)
    return rows


def _published_operation(p: pd.Series) -> dict[str, Interval]:
    """The operations table's published numbers of one (operation, model), by metric, with their 95% intervals."""
    success = p["success_pct"] / 100
    return {
        "success": Interval(success, success - p["success_minus"] / 100, success + p["success_plus"] / 100),
        "solved_at_median": Interval(p["solved_at_median"]),
        "solved_at_mean": Interval(p["solved_at_mean"], p["solved_at_mean"] - p["solved_at_minus"],
                                   p["solved_at_mean"] + p["solved_at_plus"]),
        "sparsity_error": Interval(p["sparsity_error"], p["sparsity_error"] - p["sparsity_minus"],
                                   p["sparsity_error"] + p["sparsity_plus"])}


def _published_only(p: pd.Series, operation: str, model: str, ran: pd.DataFrame) -> list[dict]:
    """A paper's model on `operation` that this run did not train: its published numbers, in each variant that ran."""
    published_values = _published_operation(p)
    return [yours.row(result="operations", setting=operation, metric=metric, variant=variant, model=display(model),
                      yours=False, reproduced=yours.NONE, spread="—", n_runs=0, scale=ran["scale"].iloc[0],
                      published=published_values[metric])
            for variant in dict.fromkeys(ran["variant"]) for metric in YOURS_METRICS]
