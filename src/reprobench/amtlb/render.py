"""AMTLB's tables, figures and comparison rows, from the aggregates of reprobench.amtlb.summary. One function per
product (grid.TABLES, grid.FIGURES)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reprobench.amtlb import protocol, published
from reprobench.core import compare, curves, plotting, tables
from reprobench.core.compare import Interval

RATIOS = {"ratio": "C_pre/C_fresh", "r": "r = ratio - 1", "faithful": "1 - B/A (README)",
          "normalised": "(C_pre - C_rand)/(C_fresh - C_rand)"}


def _num(x: float, digits: int = 3) -> str:
    return "—" if x is None or not np.isfinite(x) else f"{x:.{digits}g}"


def _final(transfer: pd.DataFrame) -> pd.DataFrame:
    """Each (fold, game, seed, measure)'s row at t_max."""
    return transfer[transfer["t"] == transfer["t"].max()]


def transfer_table(transfer: pd.DataFrame, stem: str) -> list[str]:
    """Per fold (mean over its test games, seeds first) and over folds (mean of the fold means [min, max])."""
    final = _final(transfer)
    folds = protocol.fold_means(final).pivot_table(index="fold", columns="measure", values="mean", dropna=False)
    overall = protocol.transfer_table(final).set_index("measure")
    header = ["Fold", "Test games", *RATIOS.values(), "Flagged (undefined / sign flip)"]
    rows, data = [], []
    for fold, g in final.groupby("fold"):
        g = g[g["measure"] == "normalised"] if "normalised" in set(g["measure"]) else g[g["measure"] == "ratio"]
        undefined = sorted(g.loc[g["undefined"], "game"].unique())
        flipped = sorted(g.loc[g["sign_flip"], "game"].unique())
        games = sorted(g["game"].unique())
        rows.append([str(fold), ", ".join(games), *(_num(folds.loc[fold].get(m, np.nan)) for m in RATIOS),
                     f"{', '.join(undefined) or '—'} / {', '.join(flipped) or '—'}"])
        data.append({"fold": fold, "games": " ".join(games), **{m: folds.loc[fold].get(m, np.nan) for m in RATIOS},
                     "undefined": " ".join(undefined), "sign_flip": " ".join(flipped)})
    cell = {m: (f"{_num(overall.loc[m, 'mean'])} [{_num(overall.loc[m, 'fold_min'])}, "
                f"{_num(overall.loc[m, 'fold_max'])}]" if m in overall.index else "—") for m in RATIOS}
    rows.append(["all", f"{final['game'].nunique()} games", *cell.values(), "—"])
    data.append({"fold": "all", "games": "", **{m: overall["mean"].get(m, np.nan) for m in RATIOS},
                 "undefined": "", "sign_flip": ""})
    t_max = int(final["t"].max())
    note = (f"Scale: {curves.scale_label(transfer)}; t_max = {t_max:,} frames of each held-out game. B: the instance "
            "pre-trained on the other folds' games, reset to its saved weights; A: a fresh instance; C: cumulative raw "
            "score. ratio > 1 (r > 0) means the pre-training helped; the README's literal 1 - B/A has the opposite "
            "sign (DEVIATIONS AM1). Averages: over the test games (seeds first) of each fold, then over folds [min, "
            "max of folds]. Flagged games (random-normalised ratio): a denominator within ratio_eps of zero gives no "
            "value; a negative one inverts the ratio's reading (DEVIATIONS AM2).")
    return tables.write_all(stem, header, rows, rows, pd.DataFrame(data), note=note)


def multitask_table(scores: pd.DataFrame, stem: str) -> list[str]:
    """Per game: generalist, specialist and random agent; mean over seeds of the last-100 mean, best, C(t_max)."""
    stats = scores.groupby(["game", "run"])[["last100", "best", "c_final", "episodes"]].mean()
    runs = [r for r in ("specialist", "generalist", "random") if r in scores["run"].unique()]
    header = ["Game", *[f"{r} {m}" for r in runs for m in ("last-100 mean", "best", "C(t_max)")]]
    rows, data = [], []
    for game in sorted(scores["game"].unique()):
        cells = []
        for r in runs:
            s = stats.loc[(game, r)] if (game, r) in stats.index else None
            cells += ["—"] * 3 if s is None else [_num(s["last100"], 4), _num(s["best"], 4), _num(s["c_final"], 4)]
            if s is not None:
                data.append({"game": game, "run": r, **s.to_dict()})
        rows.append([game, *cells])
    note = (f"Scale: {curves.scale_label(scores)}; raw (unclipped) scores; the generalist's per-game numbers use "
            "only that game's episodes and frames. Absolute scores are comparable only with scores obtained under "
            "the same frame budget (the README); comparison.csv sets the specialists next to published agents.")
    return tables.write_all(stem, header, rows, rows, pd.DataFrame(data), note=note)


def transfer_ratio_figure(transfer: pd.DataFrame, stem: str) -> list[str]:
    folds = protocol.fold_means(transfer)
    with plotting.style():
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(7, 2.6))
        for ax, (measure, label) in zip(axes, (("r", "r(t) = C_pre/C_fresh - 1"),
                                               ("normalised", "random-normalised ratio - 1"))):
            per_fold = folds[folds["measure"] == measure].pivot_table(index="t", columns="fold", values="mean",
                                                                       dropna=False)
            if measure == "normalised":
                per_fold = per_fold - 1
            x = per_fold.index.to_numpy()
            ax.plot(x, per_fold.mean(axis=1).to_numpy(), color=plotting.COLORS[0], marker="o", markersize=2,
                    label="mean over folds")  # markers: a ratio defined at few grid points still shows
            ax.fill_between(x, per_fold.min(axis=1).to_numpy(), per_fold.max(axis=1).to_numpy(),
                            color=plotting.COLORS[0], alpha=0.2, label="min-max over folds")
            ax.axhline(0, color="0.4", lw=0.8)
            ax.set(xlabel="frames of the held-out game", ylabel=label)
        axes[0].legend(loc="best")
        fig.suptitle(f"AMTLB transfer ({curves.scale_label(transfer)} scale)")
        return plotting.save(fig, stem)


def transfer_per_game_figure(transfer: pd.DataFrame, stem: str) -> list[str]:
    final = _final(transfer)
    final = final[final["measure"].isin(["r", "normalised"])].pivot_table(index="game", columns="measure",
                                                                          values="value", dropna=False)
    with plotting.style():
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(max(3.5, 0.5 * len(final) + 1.5), 2.8))
        x = np.arange(len(final))
        ax.bar(x - 0.2, final["r"].to_numpy(), 0.4, color=plotting.COLORS[0], label="r(t_max)")
        if "normalised" in final:
            ax.bar(x + 0.2, final["normalised"].to_numpy() - 1, 0.4, color=plotting.COLORS[1],
                   label="normalised - 1")
        ax.axhline(0, color="0.4", lw=0.8)
        ax.set_xticks(x, final.index, rotation=45, ha="right")
        ax.set(ylabel="transfer at t_max (missing: undefined)")
        ax.legend(loc="best")
        return plotting.save(fig, stem)


def multitask_figure(multitask: pd.DataFrame, stem: str) -> list[str]:
    games = sorted(multitask["game"].unique())
    cols = min(4, len(games))
    rows = -(-len(games) // cols)
    colors = {"specialist": plotting.COLORS[0], "generalist": plotting.COLORS[1], "random": "0.5"}
    with plotting.style():
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(rows, cols, figsize=(2.2 * cols, 1.9 * rows), squeeze=False)
        for ax, game in zip(axes.flat, games):
            g = multitask[multitask["game"] == game]
            for run, color in colors.items():
                c = g[g["run"] == run].groupby("t")["cumulative"]
                if not len(g[g["run"] == run]):
                    continue
                mean = c.mean()
                ax.plot(mean.index, mean.to_numpy(), color=color, label=run)
                ax.fill_between(mean.index, c.min().to_numpy(), c.max().to_numpy(), color=color, alpha=0.15)
            ax.set_title(game)
        for ax in list(axes.flat)[len(games):]:
            ax.axis("off")
        axes.flat[0].legend(loc="best")
        fig.supxlabel("frames of the game")
        fig.supylabel("cumulative raw score")
        fig.tight_layout()
        return plotting.save(fig, stem)


def comparison_rows(scores: pd.DataFrame, frames_per_game: int) -> list[dict]:
    """The specialists against published agents' scores at the same frame count (AMTLB publishes no numbers):
    comparable only where our budget equals the reference's."""
    ref = published.reference_scores()
    spec = scores[scores["run"] == "specialist"]
    rows = []
    for game, g in spec.groupby("game"):
        for r in ref[ref["game"] == game].itertuples():
            ours = g[published.OURS[r.measure]]
            row = f"{game} vs {r.source} {r.agent} at {int(r.frames):,} frames"
            rows.append(compare.row(
                benchmark="amtlb", result="multitask_scores", row=row,
                metric=r.measure, published=Interval(float(r.value)),
                reproduced=Interval(float(ours.mean()), float(ours.min()), float(ours.max())), n_runs=len(ours),
                scale=curves.scale_label(g), variant="faithful", spread="min-max over seeds",
                comparable=int(r.frames) == frames_per_game,
                deviation=compare.deviation(published.DEVIATIONS, "multitask_scores", row, r.measure, "faithful")))
    return rows
