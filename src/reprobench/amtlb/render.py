"""AMTLB's tables, figures and comparison rows, from the aggregates of reprobench.amtlb.summary. One function per
product (grid.TABLES, grid.FIGURES)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reprobench.amtlb import protocol, published
from reprobench.core import compare, curves, plotting, tables, yours
from reprobench.core.compare import Interval
from reprobench.core.plugins import display_name, run_id, spec_of

RATIOS = {"ratio": "C_pre/C_fresh", "r": "r = ratio - 1", "faithful": "1 - B/A (README)",
          "normalised": "(C_pre - C_rand)/(C_fresh - C_rand)"}


def _num(x: float, digits: int = 3) -> str:
    return "—" if x is None or not np.isfinite(x) else f"{x:.{digits}g}"


def _final(transfer: pd.DataFrame) -> pd.DataFrame:
    """Each (fold, game, seed, measure)'s row at t_max."""
    return transfer[transfer["t"] == transfer["t"].max()]


# the ratios' denominators: C_fresh for ratio, r and 1 - B/A (one set of flags), C_fresh - C_rand for normalised
FLAGS = {"ratio": "C_fresh", "normalised": "C_fresh - C_rand"}


def _flags(rows: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(games whose value is undefined, games whose denominator is negative) among one measure's rows."""
    return sorted(rows.loc[rows["undefined"], "game"].unique()), sorted(rows.loc[rows["sign_flip"], "game"].unique())


def transfer_table(transfer: pd.DataFrame, stem: str) -> list[str]:
    """Per fold (mean over its test games, seeds first) and over folds (mean of the fold means [min, max]); every
    average leaves out the undefined and the sign-flipped values, and the flag columns name them (per fold) and
    count them (over folds), for each denominator."""
    final = _final(transfer)
    folds = protocol.fold_means(final).pivot_table(index="fold", columns="measure", values="mean", dropna=False)
    overall = protocol.transfer_table(final).set_index("measure")
    flag_measures = [m for m in FLAGS if m in set(final["measure"])]
    header = ["Fold", "Test games", *RATIOS.values(),
              *(f"Left out, {FLAGS[m]}: undefined / sign flip" for m in flag_measures)]
    rows, data = [], []
    for fold, g in final.groupby("fold"):
        flags = {m: _flags(g[g["measure"] == m]) for m in flag_measures}
        games = sorted(g["game"].unique())
        rows.append([str(fold), ", ".join(games), *(_num(folds.loc[fold].get(m, np.nan)) for m in RATIOS),
                     *(f"{', '.join(u) or '—'} / {', '.join(f) or '—'}" for u, f in flags.values())])
        data.append({"fold": fold, "games": " ".join(games), **{m: folds.loc[fold].get(m, np.nan) for m in RATIOS},
                     **{f"{m}_undefined": " ".join(u) for m, (u, _) in flags.items()},
                     **{f"{m}_sign_flip": " ".join(f) for m, (_, f) in flags.items()}})
    cell = {m: (f"{_num(overall.loc[m, 'mean'])} [{_num(overall.loc[m, 'fold_min'])}, "
                f"{_num(overall.loc[m, 'fold_max'])}]" if m in overall.index else "—") for m in RATIOS}
    counts = {m: (int(overall.loc[m, "n_undefined"]), int(overall.loc[m, "n_sign_flip"]),
                  int(overall.loc[m, "n_values"])) for m in flag_measures}
    rows.append(["all", f"{final['game'].nunique()} games", *cell.values(),
                 *(f"{u} / {f} of {n}" for u, f, n in counts.values())])
    data.append({"fold": "all", "games": "", **{m: overall["mean"].get(m, np.nan) for m in RATIOS},
                 **{f"{m}_undefined": str(c[0]) for m, c in counts.items()},
                 **{f"{m}_sign_flip": str(c[1]) for m, c in counts.items()}})
    t_max = int(final["t"].max())
    note = (f"Scale: {curves.scale_label(transfer)}; t_max = {t_max:,} frames of each held-out game. B: the instance "
            "pre-trained on the other folds' games, reset to its saved weights; A: a fresh instance; C: cumulative raw "
            "score, every reward received up to t (AM13). ratio > 1 (r > 0) means the pre-training helped; the "
            "README's literal 1 - B/A has the opposite sign (DEVIATIONS AM1). Averages: over the test games (seeds "
            "first) of each fold, then over folds [min, max of folds], each leaving out the values it cannot read "
            "(DEVIATIONS AM2): undefined where the denominator is within ratio_eps of zero, and sign flips, where it "
            "is negative, so that the ratio reads backwards (ratio, r and 1 - B/A share C_fresh; the normalised ratio "
            "divides by C_fresh - C_rand). The last columns name the games left out per fold, and count them over "
            "folds (seeds of a game counted apart).")
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
                not_comparable_because=f"{frames_per_game:,} frames per game against the reference's "
                                       f"{int(r.frames):,}",
                deviation=compare.deviation(published.DEVIATIONS, "multitask_scores", row, r.measure, "faithful")))
    return rows


YOURS_ROLES = {"specialist": "{name}, fresh on the game", "generalist": "{name}, generalist", "random": "random agent"}


def yours_rows(scores: pd.DataFrame, frames_per_game: int, architecture: str) -> list[dict]:
    """Where the architecture under test is a user's class: per game, its specialist's and generalist's scores
    (mean, min-max over seeds) beside the random agent's and the published agents' (at their own frame counts)."""
    if not spec_of(run_id(architecture)):
        return []
    name = display_name(run_id(architecture), {})
    ref = published.reference_scores()
    rows = []
    for game, g in scores.groupby("game", sort=False):
        setting = f"{game}, {frames_per_game:,} frames"
        for measure, column in published.OURS.items():
            for role, label in YOURS_ROLES.items():
                ours = g[g["run"] == role][column]
                if len(ours):
                    rows.append(yours.row(
                        result="multitask_scores", setting=setting, metric=measure, variant="faithful",
                        model=label.format(name=name), yours=role != "random", spread="min-max over seeds",
                        reproduced=Interval(float(ours.mean()), float(ours.min()), float(ours.max())),
                        n_runs=len(ours), scale=curves.scale_label(g)))
            for r in ref[(ref["game"] == game) & (ref["measure"] == measure)].itertuples():
                rows.append(yours.row(
                    result="multitask_scores", setting=setting, metric=measure, variant="faithful",
                    model=f"{r.agent} ({r.source}, {int(r.frames):,} frames)", yours=False, spread="—",
                    reproduced=Interval(np.nan), n_runs=0, scale=curves.scale_label(g),
                    published=Interval(float(r.value))))
    return rows
