"""The paper's outputs: Table 4 (WADE), Table 5 (accuracy), Table 6 (parameters), Figure 1 (time to threshold),
Figure 3 (learning curves) on the synthetic tasks; Table 2 and Figure 2 on IMDB; the published-vs-reproduced
comparison of Tables 2, 4 and 5."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reprobench.core import compare, curves, plotting, tables, yours
from reprobench.core.compare import Interval
from reprobench.core.plugins import run_id, spec_of
from reprobench.wade import metric, published
from reprobench.wade.grid import IMDB_MODELS, SEQUENCE_RUNS, USER_CONFIG
from reprobench.wade.summary import DISPLAY, MODEL_ORDER, best_rules, display, model_order, selected
from reprobench.wade.tasks import TASKS

TRAINED_NOTE = ("Periodic has only 52 distinct sequences (41 train / 11 test), not 1200 (960/240). ")


def _fmt(mean, std):
    return "—" if pd.isna(mean) else (f"{mean:.2f} ± {std:.2f}" if not pd.isna(std) else f"{mean:.2f}")


def _stats(runs: pd.DataFrame, value: str) -> pd.DataFrame:
    return runs.groupby(["task", "variant", "model"])[value].agg(["mean", lambda x: np.std(x, ddof=0), "count"]) \
        .set_axis(["mean", "std", "n"], axis=1).reset_index()


def _human(sessions: list[str] | None = None) -> dict[int, str]:
    """The Human column: the mean WADE of recorded sessions where there are any, else the published value."""
    from reprobench.wade.human import session_wade

    t = published.table4()
    out = {int(r.task_id): f"{r.wade_mean:.2f} (published)" for r in t[t["model"] == "human"].itertuples()
           if not pd.isna(r.wade_mean)}
    recorded: dict[int, list[float]] = {}
    for path in sessions or []:
        task, score = session_wade(path)
        recorded.setdefault(task, []).append(score)
    for task, scores in recorded.items():
        out[task] = f"{np.mean(scores):.2f} ({len(scores)} recorded)"
    return out


def _write_model_table(stem: str, frame: pd.DataFrame, rules: pd.DataFrame, value_label: str, note: str,
                       human: dict | None, bolded: tuple[str, ...]) -> list[str]:
    """One row per task and variant, a column per model (the paper's, then the user's); the best of the `bolded`
    models in bold."""
    order = model_order(frame["model"])
    header = ["Task", "Variant", *[display(m) for m in order]] + (["Human"] if human else [])
    rows, bold = [], set()
    for task in sorted(frame["task"].unique()):
        for variant in ("faithful", "corrected"):
            part = frame[(frame["task"] == task) & (frame["variant"] == variant)].set_index("model")
            if part.empty:
                continue
            rule = rules[(rules["task"] == task) & (rules["variant"] == variant)]
            cells = []
            for m in order:
                cell = _fmt(part.at[m, "mean"], part.at[m, "std"]) if m in part.index else "—"
                if m == "reca" and not rule.empty and m in part.index:
                    by_acc, by_wade = rule["rule_by_accuracy"].iloc[0][4:], rule["rule_by_wade"].iloc[0][4:]
                    cell += f" (rule {by_acc}" + (f"; by WADE: {by_wade})" if by_wade != by_acc else ")")
                cells.append(cell)
            candidates = [m for m in bolded if m in part.index]
            for i in tables.best([part.at[m, "mean"] for m in candidates]):
                bold.add((len(rows), 2 + order.index(candidates[i])))
            label = f"{task} {TASKS[task].pretty}" + (" (52 seqs)" if task == 1 else "")
            rows.append([label, variant, *cells] + ([human.get(task, "—")] if human else []))
    data = frame.copy()
    if len(order) > len(MODEL_ORDER):
        note += (" Columns marked (yours): the user's models (config wade.models), trained and scored as the RNN is, "
                 "never bolded.")
    return tables.write_all(stem, header, rows, rows, data, bold, note + f" Values: {value_label}.")


def table4(runs: pd.DataFrame, stem: str, scale: str, human_sessions: list[str] | None = None) -> list[str]:
    rules = best_rules(runs)
    frame = _stats(selected(runs, rules), "wade")
    note = (f"Scale: {scale}. WADE, mean ± std over runs (ReCA: the rule with the highest mean max test accuracy, as "
            "the paper chose). faithful: the reference's conventions (reservoir time in ~sequences, trained models "
            "in 8-sequence steps, Transformer without causal mask); corrected: one time unit (sequences) for every "
            "model and a causal mask. Bold: best of ReCA, ESN, RNN, LSTM (the paper never bolds the Transformer). "
            "Human: recorded sessions (`reprobench wade human`, config wade.human_sessions) where given, else the "
            "published scores. " + TRAINED_NOTE)
    return _write_model_table(stem, frame, rules, "WADE", note, _human(human_sessions),
                              bolded=("reca", "esn", "rnn", "lstm"))


def accuracy_frame(runs: pd.DataFrame, mean_curves: pd.DataFrame) -> pd.DataFrame:
    """Accuracy as the paper computed it: the maximum over checkpoints of the mean curve, ± the std across runs
    at the last checkpoint, for the runs the tables show."""
    keep = selected(runs, best_rules(runs))[["task", "variant", "model", "config"]].drop_duplicates()
    rows = []
    for k in keep.itertuples():
        c = mean_curves[(mean_curves["task"] == k.task) & (mean_curves["model"] == k.model) &
                        (mean_curves["config"] == k.config)]
        if not c.empty:
            rows.append({"task": k.task, "variant": k.variant, "model": k.model, "mean": c["mean"].max(),
                         "std": c.sort_values("step")["std"].iloc[-1], "n": int(c["n"].max())})
    return pd.DataFrame(rows)


def table5(runs: pd.DataFrame, mean_curves: pd.DataFrame, stem: str, scale: str) -> list[str]:
    note = (f"Scale: {scale}. Test accuracy: maximum over checkpoints of the mean curve ± std across runs at the last "
            "checkpoint (as the paper). Bold: best of ReCA, ESN, RNN, LSTM and Transformer (as the paper's Table 5, "
            "unlike its Table 4). " + TRAINED_NOTE)
    return _write_model_table(stem, accuracy_frame(runs, mean_curves), best_rules(runs), "accuracy", note, None,
                              bolded=("reca", "esn", "rnn", "lstm", "transformer"))


def table6(datasets: dict, stem: str, scale: str, user_models: list[str] = ()) -> list[str]:
    """Experimental parameters: per task, the sizes that depend on it, with the paper's parameter formulas next to
    the parameters the models really have, and those of each user's model ('package.module:Class')."""
    from reprobench.wade import sequence_models  # torch: only this table builds models

    header = ["Task", "V", "Train/test sequences", "ReCA/ESN readout (1800 × classes seen)", "h (RNN, LSTM)",
              "RNN: paper h²+2hV", "RNN: actual", "LSTM: actual", "Transformer: actual",
              *[f"{display(run_id(m))}: actual" for m in user_models]]
    rows, data = [], []
    for task, d in sorted(datasets.items()):
        v = len(d.vocabulary)
        h = sequence_models.hidden_size(v)
        seen = len({int(t[m]) for t, ms, tr in zip(d.tokens, d.masks, d.train) if tr for m in ms})
        # one run per model: both Transformer variants have the same parameters
        counts = {m: sequence_models.n_parameters(sequence_models.build(m, v, c))
                  for m, c in dict(SEQUENCE_RUNS).items()}
        row = {"task": task, "vocabulary": v, "train": int(d.train.sum()), "test": int((~d.train).sum()),
               "readout": 1800 * (1 if seen == 2 else seen), "hidden": h, "rnn_paper": h * h + 2 * h * v,
               "rnn": counts["rnn"], "lstm": counts["lstm"], "transformer": counts["transformer"],
               **{run_id(m): sequence_models.n_parameters(sequence_models.build(m, v, USER_CONFIG))
                  for m in user_models}}
        data.append(row)
        rows.append([f"{task} {TASKS[task].pretty}", str(v), f"{row['train']}/{row['test']}", f"{row['readout']:,}",
                     str(h), f"{row['rnn_paper']:,}", f"{row['rnn']:,}", f"{row['lstm']:,}", f"{row['transformer']:,}",
                     *[f"{row[run_id(m)]:,}" for m in user_models]])
    note = (f"Scale: {scale}. Common to all tasks (paper, Table 6): reservoirs 1 pass of SGD (lr 1e-3, weight decay "
            "1e-3, one-vs-rest logistic readout on 1800 features); trained models 10 epochs of Adam (lr 1e-3), "
            "gradients of 8 sequences summed per step; 100 runs per task. The paper's 'batch size 1' holds only for "
            "the forward pass; the Transformer's size is fixed (d 80, 8 heads, feed-forward 50, 1 layer).")
    return tables.write_all(stem, header, rows, rows, pd.DataFrame(data), note=note)


def figure3(runs: pd.DataFrame, mean_curves: pd.DataFrame, stem: str, variant: str, scale: str) -> list[str]:
    """5 x 2 learning curves, log-x in training sequences, ±1 std bands, WADE in the legend."""
    import matplotlib.pyplot as plt

    rules = best_rules(runs)
    chosen = selected(runs, rules)
    chosen = chosen[chosen["variant"] == variant]
    wade = chosen.groupby(["task", "model"])["wade"].mean()
    with plotting.style():
        fig, axes = plt.subplots(5, 2, figsize=(9, 12), sharey=True)
        for ax, task in zip(axes.flat, sorted(TASKS)):
            keep = chosen[chosen["task"] == task][["model", "config"]].drop_duplicates()
            for m_index, model in enumerate(model_order(chosen["model"])):
                configs = keep[keep["model"] == model]["config"]
                if configs.empty:
                    continue
                c = mean_curves[(mean_curves["task"] == task) & (mean_curves["model"] == model) &
                                (mean_curves["config"] == configs.iloc[0])].sort_values("step")
                x = np.maximum(c["sequences"].to_numpy(), 1e-1)
                color = plotting.COLORS[m_index % len(plotting.COLORS)]
                ax.plot(x, c["mean"], color=color, label=f"{display(model)} ({wade.get((task, model), np.nan):.2f})")
                ax.fill_between(x, c["mean"] - c["std"], c["mean"] + c["std"], color=color, alpha=0.2, linewidth=0)
            ax.set_xscale("log")
            ax.set_title(f"{task}. {TASKS[task].pretty}")
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="lower right", fontsize=6)
            else:
                ax.text(0.5, 0.5, "not run at this scale", transform=ax.transAxes, ha="center", color="0.5")
        for ax in axes[-1]:
            ax.set_xlabel("training sequences")
        for ax in axes[:, 0]:
            ax.set_ylabel("test accuracy")
        fig.suptitle(f"Learning curves (mean ± std; legend: WADE, {variant}; scale {scale})")
        fig.tight_layout()
        return plotting.save(fig, stem)


def figure1(mean_curves: pd.DataFrame, runs: pd.DataFrame, stem: str, task: int = 5) -> list[str]:
    """T(a, curve) read off a learning curve: the best ReCA rule's mean curve on one task, A = 0.1 .. 0.8."""
    import matplotlib.pyplot as plt

    rules = best_rules(runs)
    rule = rules[(rules["task"] == task) & (rules["variant"] == "faithful")]
    if rule.empty:
        task = int(rules["task"].iloc[0])
        rule = rules[(rules["task"] == task) & (rules["variant"] == "faithful")]
    c = mean_curves[(mean_curves["task"] == task) & (mean_curves["model"] == "reca") &
                    (mean_curves["config"] == rule["rule_by_accuracy"].iloc[0])].sort_values("step")
    acc = c["mean"].to_numpy()
    steps = np.arange(1, len(acc) + 1)
    levels = np.round(np.arange(0.1, 0.81, 0.1), 1)
    conv = metric.Convention(levels, levels)
    t = metric.times(acc, conv)
    with plotting.style():
        fig, ax = plt.subplots(figsize=(5, 3.2))
        ax.plot(steps, acc, color=plotting.COLORS[0], label="test accuracy (mean curve)")
        for level, time in zip(levels, t):
            if np.isfinite(time):
                ax.plot([1, time], [level, level], color="0.6", linewidth=0.8)
                ax.plot([time], [level], "o", color=plotting.COLORS[1], markersize=3)
                ax.annotate(f"T({level:.1f})={int(time)}", (time, level), fontsize=6, xytext=(3, -8),
                            textcoords="offset points")
            else:
                ax.axhline(level, color="0.8", linestyle=":", linewidth=0.8)
                ax.annotate(f"T({level:.1f})=∞", (steps[-1], level), fontsize=6, ha="right", va="bottom")
        ax.set_xscale("log")
        ax.set_xlabel("training steps (checkpoints)")
        ax.set_ylabel("test accuracy")
        ax.set_title(f"Time to threshold, task {task} ({TASKS[task].pretty}), ReCA "
                     f"{rule['rule_by_accuracy'].iloc[0]}; WADE(A=0.1..0.8) = {metric.wade(acc, conv):.3f}")
        fig.tight_layout()
        return plotting.save(fig, stem)


def comparison(runs: pd.DataFrame, table5_frame: pd.DataFrame) -> list[dict]:
    """Table 4 (WADE) and Table 5 (accuracy) against the published mean ± std."""
    rows = []
    scale = runs["scale"].iloc[0]
    frame = _stats(selected(runs, best_rules(runs)), "wade")
    pub = published.table4()
    for p in pub[pub["model"] != "human"].itertuples():
        for r in frame[(frame["task"] == p.task_id) & (frame["model"] == p.model)].itertuples():
            label = f"{p.task_id}/{DISPLAY[p.model]}"
            rows.append(compare.row(benchmark="wade", result="table4", row=label,
                                    metric="wade", published=Interval.mean_std(p.wade_mean, p.wade_std),
                                    reproduced=Interval.mean_std(r.mean, r.std), n_runs=int(r.n), scale=scale,
                                    variant=r.variant, spread="mean ± std ranges",
                                    deviation=compare.deviation(published.DEVIATIONS, "table4", label, "wade",
                                                                r.variant)))
    for p in published.table5().itertuples():
        for r in table5_frame[(table5_frame["task"] == p.task_id) & (table5_frame["model"] == p.model)].itertuples():
            label = f"{p.task_id}/{DISPLAY[p.model]}"
            rows.append(compare.row(benchmark="wade", result="table5", row=label,
                                    metric="accuracy", published=Interval.mean_std(p.accuracy_mean, p.accuracy_std),
                                    reproduced=Interval.mean_std(r.mean, r.std), n_runs=int(r.n), scale=scale,
                                    variant=r.variant, spread="mean ± std ranges",
                                    deviation=compare.deviation(published.DEVIATIONS, "table5", label, "accuracy",
                                                                r.variant)))
    return rows


def table2(runs: pd.DataFrame, stem: str) -> list[str]:
    synthetic = bool(runs["synthetic"].any())
    header = ["Model", "Variant", "WADE × 1e-2", "max test accuracy", "runs"]
    rows = []
    paper = ("lstm", "gru", "linear", "transformer", "rnn")
    for model in [m for m in paper if m in set(runs["model"])] + sorted(set(runs["model"]) - set(paper)):
        for variant in ("faithful", "corrected"):
            g = runs[(runs["model"] == model) & (runs["variant"] == variant)]
            if variant == "corrected" and model != "linear":
                continue  # only the Linear model's WADE differs (no EWMA smoothing)
            rows.append([display(model), variant if model == "linear" else "both",
                         f"{g['wade_x100'].mean():.3f} ± {g['wade_x100'].std(ddof=0):.3f}",
                         f"{g['max_accuracy'].mean():.3f} ± {g['max_accuracy'].std(ddof=0):.3f}", str(len(g))])
    note = ("SYNTHETIC STAND-IN, NOT IMDB: these numbers come from a generated corpus in aclImdb's layout "
            "(config wade.imdb.source: download for the real data). " if synthetic else "") + \
        (f"Scale: {curves.scale_label(runs)}. WADE with A = 0.50..0.99, weights linspace(1, 10), T in "
         "evaluation intervals (paper: one per 400 examples); faithful smooths the Linear curve (EWMA, span 10) as "
         "the reference did.")
    if len(set(runs["model"]) - set(paper)):
        note += " Rows marked (yours): the user's classifiers (config wade.imdb.models), trained as the paper's models."
    return tables.write_all(stem, header, rows, rows, runs, note=note)


def figure2(mean_curves: pd.DataFrame, runs: pd.DataFrame, stem: str) -> list[str]:
    import matplotlib.pyplot as plt

    synthetic = bool(runs["synthetic"].any())
    with plotting.style():
        fig, ax = plt.subplots(figsize=(5.5, 3.5))
        present = set(mean_curves["model"])
        for i, model in enumerate([m for m in IMDB_MODELS if m in present] + sorted(present - set(IMDB_MODELS))):
            c = mean_curves[mean_curves["model"] == model].sort_values("step")
            w = runs[(runs["model"] == model) & (runs["variant"] == "faithful")]["wade_x100"].mean()
            color = plotting.COLORS[i % len(plotting.COLORS)]
            ax.plot(c["examples"], c["mean"], color=color, label=f"{display(model)} ({w:.2f})")
            ax.fill_between(c["examples"], c["mean"] - c["std"], c["mean"] + c["std"], color=color,
                            alpha=0.2, linewidth=0)
        ax.set_xscale("log")
        ax.set_xlabel("training examples")
        ax.set_ylabel("test accuracy")
        ax.legend(title="WADE × 1e-2", fontsize=6)
        ax.set_title("IMDB" + (" — SYNTHETIC STAND-IN, not IMDB" if synthetic else ""))
        fig.tight_layout()
        return plotting.save(fig, stem)


def imdb_comparison(runs: pd.DataFrame) -> list[dict]:
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
                                       n_runs=len(g), scale=scale, variant=variant, spread="mean ± std ranges",
                                       comparable=not runs["synthetic"].any(),  # a stand-in says nothing of IMDB
                                       not_comparable_because="the synthetic IMDB stand-in, not the paper's corpus",
                                       deviation=compare.deviation(published.DEVIATIONS, "table2", DISPLAY[p.model],
                                                                   metric_name, variant)))
    return out


def yours_rows(runs: pd.DataFrame, table5_frame: pd.DataFrame, imdb_runs: pd.DataFrame) -> list[dict]:
    """Every task on which a user's model ran (Table 4's WADE, Table 5's accuracy) and IMDB (Table 2): each model's
    mean ± std over runs, the published mean ± std where the paper gives one (as in `comparison`)."""
    rows = []
    scale = runs["scale"].iloc[0] if len(runs) else ""
    t4, t5 = published.table4().set_index(["task_id", "model"]), published.table5().set_index(["task_id", "model"])
    for result, measure, frame, pub, columns in (
            ("table4", "wade", _stats(selected(runs, best_rules(runs)), "wade"), t4, ("wade_mean", "wade_std")),
            ("table5", "accuracy", table5_frame, t5, ("accuracy_mean", "accuracy_std"))):
        for task, g in frame.groupby("task", sort=False):
            if not g["model"].map(spec_of).notna().any():
                continue
            order = {m: i for i, m in enumerate(model_order(g["model"]))}  # the tables' order, faithful first
            g = g.sort_values(["variant", "model"], kind="stable",
                              key=lambda c: c.map(order) if c.name == "model" else c != "faithful")
            for r in g.itertuples():
                p = pub.loc[(task, r.model)] if (task, r.model) in pub.index else None
                paper = yours.NONE if p is None else Interval.mean_std(*p[list(columns)])
                rows.append(yours.row(result=result, setting=f"task {task}", metric=measure, variant=r.variant,
                                      model=display(r.model), yours=spec_of(r.model) is not None,
                                      reproduced=Interval.mean_std(r.mean, r.std), spread="mean ± std",
                                      n_runs=int(r.n), scale=scale, published=paper))
    if len(imdb_runs) and imdb_runs["model"].map(spec_of).notna().any():
        scale = curves.scale_label(imdb_runs) + (" (synthetic data)" if imdb_runs["synthetic"].any() else "")
        pub = published.table2().set_index("model")
        for (model, variant), g in imdb_runs.groupby(["model", "variant"], sort=False):
            for metric, columns in (("wade_x100", ("wade_x100_mean", "wade_x100_std")),
                                    ("max_accuracy", ("max_test_accuracy_mean", "max_test_accuracy_std"))):
                p = Interval.mean_std(*pub.loc[model, list(columns)]) if model in pub.index else Interval(np.nan)
                rows.append(yours.row(result="table2", setting="IMDB", metric=metric, variant=variant,
                                      model=display(model), yours=spec_of(model) is not None,
                                      reproduced=Interval.mean_std(g[metric].mean(), g[metric].std(ddof=0)),
                                      spread="mean ± std", n_runs=len(g), scale=scale, published=p))
    return rows
