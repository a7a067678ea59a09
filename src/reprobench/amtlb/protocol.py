"""The AMTLB protocol in numbers: which games each fold holds out, the cumulative score C(t) on a frame grid, the
transfer-ratio variants with their guards, the fold averaging, and the frames a whole protocol costs.

Pure numpy/pandas: nothing here touches an emulator or a network (specs/amtlb.md 1.6, 1.7, 5).

Reading of the README taken here (docs/DEVIATIONS.md, AMTLB section):
* The clock is emulator frames of the game being scored (the game's own clock, no-op and fire-reset frames
  included). C(t) is the sum of the raw rewards received up to frame t of that game, episodes in progress included
  (the original accumulated every reward as it came; specs 1.7 item 3, docs/DEVIATIONS.md AM13).
* `ratio = C_pre / C_fresh`, `r = ratio - 1` (positive: pre-training on other games helps), the README's literal
  `faithful = 1 - C_pre / C_fresh`, and the random-agent-normalised `(C_pre - C_rand) / (C_fresh - C_rand)`.
* A ratio is averaged over the test games of a fold (or trial), then over folds; by default without the values whose
  denominator is negative (sign flips: they read backwards), each average counting what it left out (AM2).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from reprobench.core.atomic import write_text
from reprobench.core.errors import ConfigError, ResultsFileError

SPLITS = ("kfold", "random")
EPS = 1.0  # raw score points: a cumulative score (or difference) smaller than one point counts as zero
MEASURES = ("ratio", "r", "faithful", "normalised")
LAST_EPISODES = 100  # "absolute score": the mean of the last 100 episodes (specs 5.8)


# --- the folds ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchmarkParms:
    """The benchmark's parameters, as the original `BenchmarkParms` (specs 1.2), and the partition they imply.

    split "kfold" (the original code): `folds` = k, a seeded random partition of `games` into k folds whose sizes
    differ by at most one; every game is a test game exactly once. Valid for 2 <= k <= len(games): each fold needs
    at least one test game (k <= n; k = n is leave-one-out) and at least one training game (k >= 2). The original's
    `len(game_names) > num_folds` assert also excluded leave-one-out, which needs no such exclusion.
    split "random" (the README): `folds` = the number of trials; each trial tests an independent seeded sample of
    round(test_fraction * n) games (rounded half up, clamped to [1, n - 1]); trials may share test games and a game
    may never be tested, as in the README's example.

    The partition comes from numpy's Generator on PCG64 seeded with `seed` (`Generator.permutation` for kfold,
    `Generator.choice(replace=False)` per trial, drawn in order, so trial i does not depend on how many trials
    follow), which gives the same games on every platform. The JSON written by save() records the partition and
    load() refuses a file whose recorded folds this numpy no longer reproduces.
    """

    games: tuple[str, ...]
    split: str = "kfold"
    folds: int = 5
    test_fraction: float = 0.3
    seed: int = 0
    frames_per_game: int = 10_000_000
    max_steps_without_reward: int | None = 10_000  # the original's max_rounds_w_no_reward (agent steps, training)

    def __post_init__(self):
        object.__setattr__(self, "games", tuple(self.games))

    # The config key (under the section) each field is read from (amtlb/grid.py), for the errors check() raises.
    KEYS: ClassVar[dict[str, str]] = {
        "games": "games", "split": "split", "folds": "folds", "test_fraction": "test_fraction",
        "seed": "partition_seed", "frames_per_game": "frames_per_game",
        "max_steps_without_reward": "atari.max_steps_without_reward"}

    def check(self, key_prefix: str = "amtlb") -> None:
        """Raise ConfigError naming the config key of the first invalid field."""
        def key(field):
            return f"{key_prefix}.{self.KEYS[field]}"

        n = len(self.games)
        if any(not isinstance(g, str) or not g for g in self.games):
            raise ConfigError(key("games"), f"every game must be a non-empty name, got {list(self.games)}")
        dups = sorted({g for g in self.games if self.games.count(g) > 1})
        if dups:
            raise ConfigError(key("games"), f"duplicate games {dups}: each game is one test task")
        if n < 2:
            raise ConfigError(key("games"), f"{n} game(s): transfer needs at least 2 (one to pre-train on, one to "
                              "test)")
        if self.split not in SPLITS:
            raise ConfigError(key("split"), f"unknown split '{self.split}' (known: {', '.join(SPLITS)})")
        if not _is_int(self.folds) or self.folds < 1:
            raise ConfigError(key("folds"), f"must be a positive integer, got {self.folds!r}")
        if self.split == "kfold" and self.folds > n:
            raise ConfigError(key("folds"), f"{self.folds} folds for {n} games: each fold needs at least one test "
                              f"game, so folds <= {n} (folds = {n} is leave-one-out)")
        if self.split == "kfold" and self.folds < 2:
            raise ConfigError(key("folds"), f"{self.folds} fold: with one fold every game is a test game and none is "
                              "left to pre-train on; use 2 <= folds <= number of games")
        if not isinstance(self.test_fraction, (int, float)) or isinstance(self.test_fraction, bool) \
                or not 0.0 < self.test_fraction < 1.0:
            raise ConfigError(key("test_fraction"), f"must lie strictly between 0 and 1, got {self.test_fraction!r}")
        if not _is_int(self.seed) or self.seed < 0:
            raise ConfigError(key("seed"), f"must be a non-negative integer (numpy's PCG64 seed), got {self.seed!r}")
        if not _is_int(self.frames_per_game) or self.frames_per_game < 1:
            raise ConfigError(key("frames_per_game"), f"must be a positive integer, got {self.frames_per_game!r}")
        m = self.max_steps_without_reward
        if m is not None and (not _is_int(m) or m < 1):
            raise ConfigError(key("max_steps_without_reward"), f"must be a positive integer or null, got {m!r}")

    def test_size(self) -> int:
        """Test games per trial of the "random" split: round(test_fraction * n) half up, within [1, n - 1]."""
        n = len(self.games)
        # the 1e-9 keeps 0.35 * 10 = 3.4999999999999996 from rounding down
        return min(max(math.floor(self.test_fraction * n + 0.5 + 1e-9), 1), n - 1)

    def partition(self) -> tuple[tuple[str, ...], ...]:
        """The test games of each fold (or trial), each in `games` order."""
        self.check()
        n = len(self.games)
        rng = np.random.Generator(np.random.PCG64(self.seed))
        if self.split == "kfold":
            # array_split gives the first n % k folds one game more: sizes differ by at most one
            groups = np.array_split(rng.permutation(n), self.folds)
        else:
            groups = [rng.choice(n, size=self.test_size(), replace=False) for _ in range(self.folds)]
        return tuple(tuple(self.games[i] for i in sorted(int(j) for j in g)) for g in groups)

    def training_games(self, fold: int) -> tuple[str, ...]:
        """Every game not tested in `fold`, in `games` order: what that fold's instance is pre-trained on."""
        folds = self.partition()
        if not _is_int(fold) or not 0 <= fold < len(folds):
            raise ValueError(f"fold {fold!r} out of range: there are {len(folds)} folds")
        test = set(folds[fold])
        return tuple(g for g in self.games if g not in test)

    def to_dict(self) -> dict:
        """The JSON record: the fields, `folds` (each fold's test games) and the generator that drew them."""
        m = self.max_steps_without_reward
        record = {"split": self.split, "num_folds": int(self.folds), "test_fraction": float(self.test_fraction),
                  "seed": int(self.seed), "frames_per_game": int(self.frames_per_game),
                  "max_steps_without_reward": None if m is None else int(m), "games": list(self.games),
                  "folds": [list(f) for f in self.partition()],
                  "partition_rng": f"numpy {np.__version__} Generator(PCG64(seed))"}
        return record

    def to_json(self) -> str:
        """The original's JSON (folds, seed, games) plus split and frame budget; `folds` lists each fold's test
        games."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def save(self, path: str | os.PathLike) -> None:
        write_text(path, self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike) -> BenchmarkParms:
        """The parameters saved by save(); ResultsFileError if the file is unreadable, incomplete, invalid, or its
        recorded folds differ from the ones these parameters give now (another numpy's generator stream)."""
        try:
            with open(path) as fh:
                record = json.load(fh)
        except (OSError, ValueError) as exc:
            raise ResultsFileError(path, f"cannot read the benchmark parameters: {exc}") from exc
        fields = ("games", "split", "num_folds", "test_fraction", "seed", "frames_per_game",
                  "max_steps_without_reward", "folds")
        missing = [f for f in fields if not isinstance(record, dict) or f not in record]
        if missing:
            raise ResultsFileError(path, f"lacks {missing}: not a file written by BenchmarkParms.save")
        parms = cls(games=tuple(record["games"]), split=record["split"], folds=record["num_folds"],
                    test_fraction=record["test_fraction"], seed=record["seed"],
                    frames_per_game=record["frames_per_game"],
                    max_steps_without_reward=record["max_steps_without_reward"])
        try:
            folds = parms.partition()
        except ConfigError as exc:
            raise ResultsFileError(path, str(exc)) from exc
        if [list(f) for f in folds] != record["folds"]:
            raise ResultsFileError(path, f"its folds {record['folds']} differ from the {[list(f) for f in folds]} "
                                   f"that seed {parms.seed} gives with numpy {np.__version__} (recorded: "
                                   f"{record.get('partition_rng', 'unknown')})")
        return parms


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


# --- the frame clock and C(t) ---------------------------------------------------------------------------------------
def frame_grid(frames_per_game: int, points: int, key: str = "amtlb.curve_points") -> np.ndarray:
    """`points` evenly spaced frame counts (int64) ending at `frames_per_game`: i * frames_per_game // points for
    i = 1..points (t = 0 is left out: every cumulative score is 0 there and every ratio undefined)."""
    if not _is_int(points) or not 1 <= points <= frames_per_game:
        raise ConfigError(key, f"must be an integer in [1, frames per game = {frames_per_game}], got {points!r}")
    return np.arange(1, points + 1, dtype=np.int64) * np.int64(frames_per_game) // np.int64(points)


def cumulative(frames, sums, grid) -> np.ndarray:
    """The cumulative raw score C(t) at each t of `grid` (float64) from one game's rewards by frame (atari.GameEnvs'
    reward_log): `sums[i]` is the game's rewards summed up to frame `frames[i]` of its clock, entries in the order
    logged (frames nondecreasing). C(t) is the sum at the last entry at or before t, 0 before the first: every
    reward received up to frame t, the partial episode a quota cuts included."""
    at = np.asarray(frames, dtype=np.int64).reshape(-1)
    total = np.asarray(sums, dtype=np.float64).reshape(-1)
    if at.shape != total.shape:
        raise ValueError(f"{at.size} frames but {total.size} sums")
    if not np.isfinite(total).all():
        raise ValueError("a cumulative reward is NaN or infinite")
    if (np.diff(at) < 0).any():
        raise ValueError("the frames of a reward log must not decrease")
    # the last entry with frame <= t: side="right" counts a reward received exactly at t
    index = np.searchsorted(at, np.asarray(grid, dtype=np.int64), side="right") - 1
    return np.where(index >= 0, total[np.maximum(index, 0)], 0.0) if total.size else np.zeros(np.shape(grid))


def cumulative_by_game(rewards: pd.DataFrame, grid) -> pd.DataFrame:
    """C(t) of each game of a run's rewards by frame (columns game, frame, cumulative; runs.rewards_frame) on `grid`:
    columns game, t, cumulative. For the generalist this is each game's score against frames of that game (the log's
    frames are the game's own clock), the curve to set beside that game's specialist."""
    grid = np.asarray(grid, dtype=np.int64)
    parts = [pd.DataFrame({"game": game, "t": grid, "cumulative": cumulative(g["frame"], g["cumulative"], grid)})
             for game, g in rewards.groupby("game", sort=True)]
    if not parts:
        return pd.DataFrame({"game": pd.Series(dtype=str), "t": pd.Series(dtype=np.int64),
                             "cumulative": pd.Series(dtype=float)})
    return pd.concat(parts, ignore_index=True)


# --- the ratios ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Guarded:
    """A ratio over the grid with the reasons it may not be read plainly (arrays of one shape).

    value: float64, NaN where undefined. undefined: |denominator| < eps (or the denominator is NaN): the ratio of
    two near-zero scores says nothing. sign_flip: the denominator is <= -eps, so the ratio reads backwards (a
    pre-trained score *above* a negative fresh score gives a ratio below 1)."""

    value: np.ndarray
    undefined: np.ndarray
    sign_flip: np.ndarray


def _divide(numerator, denominator, eps: float) -> Guarded:
    if not eps > 0:
        raise ValueError(f"eps must be positive, got {eps}")
    num, den = np.broadcast_arrays(np.asarray(numerator, dtype=np.float64), np.asarray(denominator, dtype=np.float64))
    undefined = ~(np.abs(den) >= eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(undefined, np.nan, num / np.where(undefined, 1.0, den)) + 0.0  # + 0.0: no -0.0 in files
    return Guarded(value=value, undefined=undefined, sign_flip=~undefined & (den < 0))


def ratio(c_pre, c_fresh, eps: float = EPS) -> Guarded:
    """C_pre / C_fresh: 1 means no transfer, above 1 (for a positive C_fresh) pre-training helps. `eps` is in raw
    score points (default 1: Atari scores move in whole points, so this is "C_fresh is zero")."""
    return _divide(c_pre, c_fresh, eps)


def r(c_pre, c_fresh, eps: float = EPS) -> Guarded:
    """ratio - 1, our reading of the README's r: positive means transfer helps, 0 none, negative it hurts."""
    g = ratio(c_pre, c_fresh, eps)
    return Guarded(g.value - 1.0, g.undefined, g.sign_flip)


def faithful(c_pre, c_fresh, eps: float = EPS) -> Guarded:
    """The README's literal r = 1 - B/A, with A the fresh instance and B the pre-trained one: 1 - C_pre/C_fresh.
    It has the opposite sign to the README's own reading of r (specs 1.7 item 1): when transfer helps, B > A and
    this is negative. Reported for completeness; it is -r."""
    g = ratio(c_pre, c_fresh, eps)
    return Guarded(1.0 - g.value, g.undefined, g.sign_flip)


def normalised(c_pre, c_fresh, c_rand, eps: float = EPS) -> Guarded:
    """(C_pre - C_rand) / (C_fresh - C_rand): the ratio of the scores above a random agent's, which removes the
    sign problem of games whose raw scores start negative (Pong, Skiing, ...) as long as the fresh instance beats
    the random agent. Undefined where the fresh instance is within eps of random; sign_flip where it is worse."""
    c_rand = np.asarray(c_rand, dtype=np.float64)
    return _divide(np.asarray(c_pre, dtype=np.float64) - c_rand, np.asarray(c_fresh, dtype=np.float64) - c_rand, eps)


def transfer_measures(c_pre, c_fresh, c_rand=None, eps: float = EPS) -> dict[str, Guarded]:
    """Every measure of MEASURES (normalised only when C_rand is given), keyed by name."""
    out = {"ratio": ratio(c_pre, c_fresh, eps), "r": r(c_pre, c_fresh, eps), "faithful": faithful(c_pre, c_fresh, eps)}
    if c_rand is not None:
        out["normalised"] = normalised(c_pre, c_fresh, c_rand, eps)
    return out


def measures_frame(fold: int, game: str, t, c_pre, c_fresh, c_rand=None, eps: float = EPS,
                   seed: int | None = None) -> pd.DataFrame:
    """The long rows of one (fold, game[, seed]) for transfer_table: columns fold, game, [seed,] t, measure,
    value, undefined, sign_flip, c_pre, c_fresh, c_rand (NaN without a random baseline)."""
    t = np.asarray(t, dtype=np.int64)
    def on_grid(c):
        return np.broadcast_to(np.asarray(c, dtype=np.float64), t.shape)

    pre, fresh = on_grid(c_pre), on_grid(c_fresh)
    rand = on_grid(np.nan if c_rand is None else c_rand)
    parts = []
    for name, g in transfer_measures(pre, fresh, None if c_rand is None else rand, eps).items():
        part = {"fold": fold, "game": game}
        if seed is not None:
            part["seed"] = seed
        part.update(t=t, measure=name, value=g.value, undefined=g.undefined, sign_flip=g.sign_flip,
                    c_pre=pre, c_fresh=fresh, c_rand=rand)
        parts.append(pd.DataFrame(part))
    return pd.concat(parts, ignore_index=True)


# --- averaging over games and folds ---------------------------------------------------------------------------------
def _per_game(frame: pd.DataFrame, exclude_sign_flip: bool = True) -> pd.DataFrame:
    """One value per (fold, game, t, measure): the seeds' mean where a seed column is present."""
    need = {"fold", "game", "t", "measure", "value"}
    if not need <= set(frame.columns):
        raise ValueError(f"transfer rows lack columns {sorted(need - set(frame.columns))}")
    df = frame.copy()
    if "undefined" not in df:
        df["undefined"] = df["value"].isna()
    if "sign_flip" not in df:
        df["sign_flip"] = False
    df["value"] = df["value"].astype(float)
    if exclude_sign_flip:
        df.loc[df["sign_flip"].astype(bool), "value"] = np.nan
    keys = ["fold", "game", "t", "measure"] + (["seed"] if "seed" in df else [])
    dup = df.duplicated(keys)
    if dup.any():
        raise ValueError(f"duplicate transfer rows for {df.loc[dup, keys].head(3).to_dict('records')}")
    if "seed" in df:
        df = df.groupby(["fold", "game", "t", "measure"], sort=True).agg(
            value=("value", "mean"), undefined=("undefined", "sum"), sign_flip=("sign_flip", "sum")).reset_index()
    return df


def fold_means(frame: pd.DataFrame, exclude_sign_flip: bool = True) -> pd.DataFrame:
    """Per (fold, t, measure): the mean over the fold's test games of the defined values (NaN-aware), with
    n_games (games with a value), n_test (test games), n_undefined and n_sign_flip (rows flagged). Sign-flipped
    values are left out unless `exclude_sign_flip` is False (they are counted either way)."""
    df = _per_game(frame, exclude_sign_flip)
    return df.groupby(["fold", "t", "measure"], sort=True).agg(
        mean=("value", "mean"), n_games=("value", "count"), n_test=("value", "size"),
        n_undefined=("undefined", "sum"), n_sign_flip=("sign_flip", "sum")).reset_index()


def transfer_table(frame: pd.DataFrame, exclude_sign_flip: bool = True) -> pd.DataFrame:
    """The README's two-level average of long transfer rows (columns fold, game, t, measure, value[, seed,
    undefined, sign_flip], as measures_frame writes): first over the test games of each fold, then over folds.

    Returns one row per (t, measure) with
    mean: the mean over folds of the fold means (folds whose games are all undefined are left out);
    fold_sd, fold_min, fold_max, n_folds: spread (sd with ddof 1) and count of those fold means;
    game_sd, game_min, game_max, n_games: spread and count of the per-game values themselves, pooled over folds;
    n_values, n_undefined, n_sign_flip: rows in all, and how many were undefined or sign-flipped.
    With a seed column the seeds of each (fold, game) are averaged first. By default the sign-flipped values are
    left out of every average (a negative denominator makes a ratio read backwards: C_pre = -27 over C_fresh = -41
    gives 0.66 although the pre-trained instance did better); exclude_sign_flip=False keeps them in. Either way
    n_sign_flip and n_undefined count them, and n_games counts the values averaged."""
    games = _per_game(frame, exclude_sign_flip)
    folds = fold_means(frame, exclude_sign_flip)
    by_fold = folds.groupby(["t", "measure"], sort=True).agg(
        mean=("mean", "mean"), fold_sd=("mean", "std"), fold_min=("mean", "min"), fold_max=("mean", "max"),
        n_folds=("mean", "count"))
    by_game = games.groupby(["t", "measure"], sort=True).agg(
        game_sd=("value", "std"), game_min=("value", "min"), game_max=("value", "max"), n_games=("value", "count"),
        n_values=("value", "size"), n_undefined=("undefined", "sum"), n_sign_flip=("sign_flip", "sum"))
    return by_fold.join(by_game).reset_index()


# --- multitask ------------------------------------------------------------------------------------------------------
def absolute_scores(returns_in_order, last: int = LAST_EPISODES) -> tuple[float, float]:
    """(mean of the last `last` episode returns, best episode return) of episodes given in the order they ended;
    fewer episodes than `last` average what there is; none gives (NaN, NaN). Pass finished episodes only, as the
    reference monitors count them (an episode the quota cuts is not one)."""
    if not _is_int(last) or last < 1:
        raise ValueError(f"last must be a positive integer, got {last!r}")
    x = np.asarray(returns_in_order, dtype=np.float64).reshape(-1)
    if x.size == 0:
        return float("nan"), float("nan")
    return float(x[-last:].mean()), float(x.max())


# --- cost ---------------------------------------------------------------------------------------------------------
def frames_implied(parms: BenchmarkParms, generalist: bool = True, random_baselines: bool = True) -> dict[str, int]:
    """Emulator frames a whole protocol takes (one seed): fresh (the specialists / F(X) baselines, one run per
    game), random (the random agent per game, for the normalised ratio; no learning), pretraining (per fold,
    frames_per_game for each training game), transfer (each fold's test games), generalist (every game), total."""
    per, n = parms.frames_per_game, len(parms.games)
    folds = parms.partition()
    out = {"fresh": n * per, "random": n * per if random_baselines else 0,
           "pretraining": sum(per * (n - len(f)) for f in folds), "transfer": sum(per * len(f) for f in folds),
           "generalist": n * per if generalist else 0}
    out["total"] = sum(out.values())
    return out

