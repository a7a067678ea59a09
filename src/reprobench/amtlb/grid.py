"""The AMTLB runs a config asks for, and every path: read by workflow/rules/amtlb.smk and `reprobench inspect`.

Every run trains one instance of the architecture under test (or the random agent) on real ALE games and writes one
curve file, one row per (episode, measure):
- fresh:      a fresh instance on one game (the baselines F(X), and the multitask benchmark's specialists); the
              random agent's fresh runs are the floor of the normalised ratio
- pretrain:   a fresh instance on a fold's training games, episodes interleaved by remaining quota; saves its weights
- transfer:   the saved weights of a fold ("reset to saved weights") on each of the fold's test games
- generalist: a fresh instance on every game, interleaved by remaining quota
The fold partition is computed here from the config (protocol.BenchmarkParms), so the DAG knows it when it plans.
"""

from __future__ import annotations

import re

from reprobench.core.benchmark import Product, Targets, alternatives
from reprobench.core.errors import ConfigError
from reprobench.core.plugins import USER_CLASS, find_module, run_id

ROOT, LOGS, TIMINGS = "results/amtlb", "logs/amtlb", "benchmarks/amtlb"
RANDOM = "random"  # the random agent: its fresh runs are the floor of the normalised ratio
BUILTIN = ("ppo",)  # architectures under test of reprobench.amtlb.api; or a user's 'pkg.module:Class'
KINDS = ("fresh", "pretrain", "transfer", "generalist")
MIN_PLAY_FRAMES = 3600  # one minute at 60 Hz: the least an episode may play after its reset (Grid.check)

FRESH_RUN = "experiment=fresh/model={model}/game={game}/seed={seed}"
PRETRAIN_RUN = "experiment=pretrain/model={model}/fold={fold}/seed={seed}"
TRANSFER_RUN = "experiment=transfer/model={model}/fold={fold}/game={game}/seed={seed}"
GENERALIST_RUN = "experiment=generalist/model={model}/seed={seed}"
RUNS = {"fresh": FRESH_RUN, "pretrain": PRETRAIN_RUN, "transfer": TRANSFER_RUN, "generalist": GENERALIST_RUN}
CURVES = {k: f"{ROOT}/curves/{v}.parquet" for k, v in RUNS.items()}
CHECKPOINTS = {k: f"{ROOT}/checkpoints/{v}.pt" for k, v in RUNS.items()}
TRAIN_LOGS = {k: f"{LOGS}/train/{v}.log" for k, v in RUNS.items()}
TRAIN_TIMINGS = {k: f"{TIMINGS}/train/{v}.tsv" for k, v in RUNS.items()}
WEIGHTS = f"{ROOT}/weights/model={{model}}/fold={{fold}}/seed={{seed}}.pt"  # a fold's pre-trained instance
_RANDOM_RUN = FRESH_RUN.replace("{model}", RANDOM)  # the random agent's fresh runs: a rule of their own (no GPU)
RANDOM_CURVE, RANDOM_CHECKPOINT = f"{ROOT}/curves/{_RANDOM_RUN}.parquet", f"{ROOT}/checkpoints/{_RANDOM_RUN}.pt"
RANDOM_LOG, RANDOM_TIMING = f"{LOGS}/train/{_RANDOM_RUN}.log", f"{TIMINGS}/train/{_RANDOM_RUN}.tsv"

PARAMETERS, PARAMETERS_LOG = f"{ROOT}/parameters.json", f"{LOGS}/parameters.log"  # the original's BenchmarkParms
TRANSFER, MULTITASK, SCORES = (f"{ROOT}/metrics/transfer.parquet", f"{ROOT}/metrics/multitask.parquet",
                               f"{ROOT}/metrics/scores.parquet")
AGGREGATE_LOG = f"{LOGS}/metrics/aggregate.log"
COMPARISON, COMPARISON_LOG = f"{ROOT}/comparison.csv", f"{LOGS}/comparison.log"

TABLE_FORMATS, FIGURE_FORMATS = (".md", ".csv", ".tex"), (".png", ".pdf")
_PAPER = "the AMTLB README (Kuhn et al., AI-ON, 2017)"
TABLES = {
    "transfer": Product("Transfer", f"{ROOT}/tables/transfer", TABLE_FORMATS,
                        f"Transfer benchmark of {_PAPER}: per fold and overall, the cumulative-score ratio of the "
                        "pre-trained instance to the fresh one on held-out games at t_max (ratio, r = ratio - 1, the "
                        "README's literal 1 - B/A, and the random-normalised ratio), averaged over the test games of "
                        "each fold, then over folds."),
    "multitask_scores": Product("Multitask scores", f"{ROOT}/tables/multitask_scores", TABLE_FORMATS,
                                f"Multitask benchmark of {_PAPER}: per game, the generalist's and the specialist's "
                                "absolute scores (mean of the last 100 episodes, best episode) and cumulative score "
                                "at the frame budget, with the random agent's."),
}
FIGURES = {
    "transfer_ratio": Product("Transfer ratio r(t)", f"{ROOT}/figures/transfer_ratio", FIGURE_FORMATS,
                              f"Transfer benchmark of {_PAPER}: r(t) = C_pre(t)/C_fresh(t) - 1 and the "
                              "random-normalised ratio - 1 over frames of the held-out game; mean over folds (of "
                              "the mean over each fold's test games), band: min-max over folds."),
    "transfer_per_game": Product("Transfer per game", f"{ROOT}/figures/transfer_per_game", FIGURE_FORMATS,
                                 f"Transfer benchmark of {_PAPER}: each held-out game's r(t_max), plain and "
                                 "random-normalised (flagged where the fresh score is near zero or negative)."),
    "multitask_curves": Product("Multitask curves", f"{ROOT}/figures/multitask_curves", FIGURE_FORMATS,
                                f"Multitask benchmark of {_PAPER}: per game, the cumulative raw score of the "
                                "generalist (against frames of that game) and of the specialist, with the random "
                                "agent's."),
}


def _parms(cfg: dict):
    from reprobench.amtlb.protocol import BenchmarkParms

    return BenchmarkParms(games=tuple(cfg["games"]), split=cfg["split"], folds=cfg["folds"],
                          test_fraction=cfg["test_fraction"], seed=cfg["partition_seed"],
                          frames_per_game=cfg["frames_per_game"],
                          max_steps_without_reward=cfg["atari"]["max_steps_without_reward"])


class Grid:
    """The runs of one `amtlb` config section, and the input functions its rules use."""

    def __init__(self, section: dict):
        self.cfg = section
        self.model = run_id(section["architecture"])

    # --- the registry's interface (reprobench.benchmarks) -------------------------------------------------------
    def check(self) -> None:
        from reprobench.amtlb.atari import check_games

        arch = self.cfg["architecture"]
        if arch == RANDOM:
            raise ConfigError("amtlb.architecture", "the random agent is the benchmark's floor and always runs; "
                              "name the architecture under test (ppo, or a user's 'package.module:Class')")
        if arch not in BUILTIN and not USER_CLASS.match(arch):
            raise ConfigError("amtlb.architecture", f"unknown architecture '{arch}' (known: {', '.join(BUILTIN)}, "
                              "or a user's class as 'package.module:Class')")
        if arch not in BUILTIN:  # found without importing it (that would cost every plan a torch import); a
            find_module(arch, "amtlb.architecture")  # missing method is reported by the job (reprobench.amtlb.api)
        check_games(self.cfg["games"], "amtlb.games")
        self.parms().check("amtlb")
        frames, points = self.cfg["frames_per_game"], self.cfg["grid_points"]
        if points > frames:  # protocol.frame_grid refuses it, but only at aggregate, after every training job
            raise ConfigError("amtlb.grid_points", f"{points} is larger than amtlb.frames_per_game = {frames}: the "
                              "grid of C(t) needs distinct frames")
        atari = self.cfg["atari"]
        # The cap counts the reset's frames (up to noop_max no-ops and the FIRE frame: atari.AtariSettings,
        # GameEnvs.step), so a smaller one ends episodes in the reset, return 0. A minute of play (3600 frames at
        # 60 Hz) after it is the floor we set for an episode to score at all; the ALE standard is 108000 (30 min).
        least = max(atari["noop_max"], 1) + MIN_PLAY_FRAMES
        if atari["max_num_frames_per_episode"] < least:
            raise ConfigError("amtlb.atari.max_num_frames_per_episode", f"{atari['max_num_frames_per_episode']} "
                              f"leaves no time to play: it counts the reset's up to {max(atari['noop_max'], 1)} "
                              f"frames, so use at least {least} (one minute of play, {MIN_PLAY_FRAMES} frames, after "
                              "them; ALE's standard: 108000)")

    def expected_curves(self) -> list[str]:
        return self.fresh_curves() + self.fresh_curves(RANDOM) + self.pretrain_curves() + self.transfer_curves() \
            + self.generalist_curves()

    def targets(self) -> Targets:
        return Targets(tables=list(TABLES.values()), figures=list(FIGURES.values()), comparisons=[COMPARISON],
                       extras=[PARAMETERS])

    # --- runs -------------------------------------------------------------------------------------------------
    def parms(self):
        return _parms(self.cfg)

    def folds(self) -> tuple[tuple[str, ...], ...]:
        """The test games of each fold (or trial)."""
        return self.parms().partition()

    def seeds(self) -> range:
        return range(self.cfg["seeds"])

    def fresh_curves(self, model: str | None = None) -> list[str]:
        return [CURVES["fresh"].format(model=model or self.model, game=g, seed=s)
                for g in self.cfg["games"] for s in self.seeds()]

    def pretrain_curves(self) -> list[str]:
        return [CURVES["pretrain"].format(model=self.model, fold=f, seed=s)
                for f in range(len(self.folds())) for s in self.seeds()]

    def transfer_curves(self) -> list[str]:
        return [CURVES["transfer"].format(model=self.model, fold=f, game=g, seed=s)
                for f, games in enumerate(self.folds()) for g in games for s in self.seeds()]

    def generalist_curves(self) -> list[str]:
        if not self.cfg["generalist"]:
            return []
        return [CURVES["generalist"].format(model=self.model, seed=s) for s in self.seeds()]

    def run_games(self, kind: str, wildcards) -> list[str]:
        """The games a run plays: its own (fresh, transfer), its fold's training games, or all (generalist)."""
        if kind in ("fresh", "transfer"):
            return [wildcards.game]
        if kind == "pretrain":
            return list(self.parms().training_games(int(wildcards.fold)))
        return list(self.cfg["games"])

    def architecture(self, model: str) -> str:
        """The architecture spec of a run's model wildcard (the random agent or the configured one)."""
        return RANDOM if model == RANDOM else self.cfg["architecture"]

    def get_weights(self, wildcards) -> str:
        """A transfer run's input: its fold's saved weights."""
        return WEIGHTS.format(model=wildcards.model, fold=wildcards.fold, seed=wildcards.seed)

    def parms_fields(self) -> dict:
        """BenchmarkParms' fields as plain JSON values (the parameters rule's argument)."""
        import dataclasses

        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self.parms()).items()}

    def train_params(self, kind: str) -> dict:
        """The params of a training rule (`random`: the random agent's fresh runs); values or input functions."""
        import json
        import shlex

        atari = json.dumps(self.cfg["atari"], sort_keys=True)
        weights = {"pretrain": lambda w: f"--save-weights {shlex.quote(self.get_weights(w))}",
                   "transfer": lambda w: f"--load-weights {shlex.quote(self.get_weights(w))}"}.get(kind, "")
        return {"kind": "fresh" if kind == RANDOM else kind,
                "architecture": RANDOM if kind == RANDOM else self.cfg["architecture"],
                "games": lambda w: self.run_games("fresh" if kind == RANDOM else kind, w),
                "fold": (lambda w: f"--fold {int(w.fold)}") if kind in ("pretrain", "transfer") else "",
                "frames": self.cfg["frames_per_game"], "num_envs": self.cfg["num_envs"], "atari": atari,
                "emulator_threads": str(self.cfg.get("emulator_threads") or "threads"),
                "schedule": str(self.cfg["schedule_frames_per_game"]),
                "weights": weights, "checkpoint_minutes": self.cfg["checkpoint_minutes"]}

    def wildcards(self, kind: str | None = None) -> dict[str, str]:
        """model: the architecture under test's run id only (the random agent's runs have their own rule, whose
        path names it); fold: the folds of the partition. For the transfer rule (kind "transfer") the fold also
        names its test games: a lookahead on the game that follows it in the path (a constraint holds one
        wildcard), so a fold's training game matches no rule."""
        folds = self.folds()
        fold = "|".join(str(f) for f in range(len(folds)))
        if kind == "transfer":
            fold = "|".join(f"{f}(?=/game=(?:{alternatives(games)})/)" for f, games in enumerate(folds))
        return {"seed": "[0-9]+", "fold": fold, "game": alternatives(self.cfg["games"]),
                "model": re.escape(self.model)}

