"""The aggregate stage: every AMTLB curve file -> the cumulative scores C(t) on a common frame grid, the transfer
ratios per (fold, held-out game, seed), and the multitask comparison per game.

- metrics/transfer.parquet:  fold, game, seed, t (frames of the held-out game), measure (protocol.MEASURES), value,
                             undefined, sign_flip (the guards), c_pre, c_fresh, c_rand (protocol.measures_frame)
- metrics/multitask.parquet: game, seed, run (generalist | specialist | random), t, cumulative: each game's C(t)
                             against frames of that game (the generalist's clock counts only that game's frames)
- metrics/scores.parquet:    game, seed, run, episodes (finished ones), cut (episodes the benchmark cut: the quota, the
                             no-reward limit, a resume), last100 (mean of the last 100 finished episodes), best (of the
                             finished ones), c_final (C at frames_per_game: every reward up to then)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reprobench.amtlb import PAPER, protocol
from reprobench.amtlb.grid import KINDS, RANDOM
from reprobench.amtlb.runs import MEASURES, REWARDS, episodes_frame, rewards_frame
from reprobench.core import curves
from reprobench.core.errors import ResultsFileError

# What the table, figure and comparison stages read from each aggregate (aggregate below writes them).
COLUMNS = {
    "transfer": ("fold", "game", "seed", "t", "measure", "value", "undefined", "sign_flip", "scale"),
    "multitask": ("game", "seed", "run", "t", "cumulative", "scale"),
    "scores": ("game", "seed", "run", "episodes", "last100", "best", "c_final", "scale"),
}


def read(path: str, name: str) -> pd.DataFrame:
    """One aggregate (a key of COLUMNS); a clear error names a file that is not it, or one with no rows."""
    return curves.read_frame(path, COLUMNS[name], expect={"paper": PAPER.id, "experiment": name,
                                                          "stage": "aggregate"})[0]


def load_runs(paths: list[str]) -> tuple[list[dict], list[str]]:
    """[{experiment, model, seed, fold, episodes (one row per episode), rewards (by frame), path}], and the runs'
    scales."""
    runs, scales = [], set()
    for path, frame, record in curves.read_curves(paths, expect={"paper": PAPER.id, "experiment": KINDS}):
        setting = record.get("setting") or {}
        if not isinstance(setting.get("games"), list) or not setting["games"] or \
                (record["experiment"] == "transfer" and not isinstance(setting.get("fold"), int)):
            raise ResultsFileError(path, f"has no setting.games (and, for a transfer run, setting.fold) (it is "
                                   f"{curves.describe(record)})")
        if REWARDS not in set(frame["metric"]):
            raise ResultsFileError(path, "has no rewards by frame: it was written before C(t) counted every reward "
                                   "as it came (issue 24); run its training again (delete the file)")
        curves.require_metrics(path, frame, record, present=MEASURES, labels=(REWARDS, "finished"))
        episodes, rewards = episodes_frame(frame), rewards_frame(frame)
        runs.append({"experiment": record["experiment"], "model": record["model"], "seed": int(record["seed"]),
                     "fold": setting.get("fold"), "games": setting["games"], "episodes": episodes,
                     "rewards": rewards, "path": path})
        scales.add(record["scale"])
    return runs, sorted(scales)


def game_curve(run: dict, game: str, grid: np.ndarray) -> np.ndarray:
    """C(t) of `game` in a run, against that game's own frame clock: every reward received up to t."""
    r = run["rewards"]
    r = r[r["game"] == game]
    return protocol.cumulative(r["frame"].to_numpy(), r["cumulative"].to_numpy(), grid)


def aggregate(paths: list[str], frames_per_game: int, points: int, eps: float) -> dict[str, pd.DataFrame]:
    """{"transfer", "multitask", "scores"} frames (module docstring) from every run's curve file."""
    runs, scales = load_runs(paths)
    grid = protocol.frame_grid(frames_per_game, points, "amtlb.grid_points")
    fresh = {(r["model"], g, r["seed"]): r for r in runs if r["experiment"] == "fresh" for g in r["games"]}
    transfer = []
    for r in (r for r in runs if r["experiment"] == "transfer"):
        game, seed = r["games"][0], r["seed"]
        for model in (r["model"], RANDOM):  # a transfer run is read against these fresh runs of its game and seed
            if (model, game, seed) not in fresh:
                raise ResultsFileError(r["path"], f"has no fresh run of model '{model}' on {game}, seed {seed}, among "
                                       "the curves given: its transfer ratio has no denominator")
        c_pre = game_curve(r, game, grid)
        c_fresh = game_curve(fresh[(r["model"], game, seed)], game, grid)
        c_random = game_curve(fresh[(RANDOM, game, seed)], game, grid)
        transfer.append(protocol.measures_frame(int(r["fold"]), game, grid, c_pre, c_fresh, c_random, eps, seed))
    multitask, scores = [], []
    roles = [("specialist", r) for r in runs if r["experiment"] == "fresh" and r["model"] != RANDOM]
    roles += [("random", r) for r in runs if r["experiment"] == "fresh" and r["model"] == RANDOM]
    roles += [("generalist", r) for r in runs if r["experiment"] == "generalist"]
    for role, r in roles:
        for game in r["games"]:
            c = game_curve(r, game, grid)
            multitask.append(pd.DataFrame({"game": game, "seed": r["seed"], "run": role, "t": grid,
                                           "cumulative": c}))
            e = r["episodes"][r["episodes"]["game"] == game]
            finished = e[e["finished"] == 1.0]  # as the reference monitors count episodes
            last100, best = protocol.absolute_scores(finished["return"].to_numpy())
            scores.append({"game": game, "seed": r["seed"], "run": role, "episodes": len(finished),
                           "cut": len(e) - len(finished), "last100": last100, "best": best, "c_final": c[-1]})
    scale = ",".join(scales)
    out = {"transfer": pd.concat(transfer, ignore_index=True) if transfer else pd.DataFrame(),
           "multitask": pd.concat(multitask, ignore_index=True), "scores": pd.DataFrame(scores)}
    for frame in out.values():
        frame["scale"] = scale
    return out


def write(frames: dict[str, pd.DataFrame], outs: dict[str, str], settings: dict) -> None:
    for name, frame in frames.items():
        record = curves.summary_record(PAPER.id, name, "aggregate", ",".join(sorted(frame["scale"].unique())),
                                       "faithful and corrected", settings=settings)
        curves.write_frame(frame, outs[name], record)
