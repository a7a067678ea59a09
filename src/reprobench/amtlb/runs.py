"""One AMTLB run: an instance of the architecture plays its games until every frame quota is spent, and the
benchmark records every episode. The benchmark owns the episode loop: it switches games between episodes without
telling the architecture (the original TrainingRun), which only ever sees observations, rewards and episode starts.

Kinds (grid.KINDS): fresh (one game), pretrain (a fold's training games; saves the weights), transfer (the saved
weights, reset with `load`, on one held-out game) and generalist (every game). Training runs on several games end an
episode after `max_steps_without_reward` agent steps without a positive reward, as the original TrainingRun did;
test runs (fresh, transfer) do not.

Every architecture instance of seed s starts from the same weights, as the original cloned one instance for every
fresh run; the emulators' streams differ per run (`env_seed`).
"""

from __future__ import annotations

import time
import zlib

import numpy as np

from reprobench.amtlb import PAPER
from reprobench.core import curves
from reprobench.core.errors import ConfigError
from reprobench.core.progress import Progress
from reprobench.core.provenance import Timer

# a curve's metrics per episode; `finished` is 1 when the emulator ended the episode, 0 when the benchmark cut it
MEASURES = ("return", "frames", "end_frame", "cumulative_score", "truncated", "slot", "finished")
REWARDS = "cumulative_reward"  # a curve's rows of rewards by frame (episode_rows)


def env_seed(kind: str, seed: int, games: list[str], fold: int | None) -> int:
    """A run's emulator seed: distinct per (kind, seed, games, fold), stable across platforms."""
    key = f"{kind}|{seed}|{fold}|{','.join(games)}".encode()
    return int(np.random.SeedSequence([seed, zlib.crc32(key)]).generate_state(1)[0])


def episode_rows(seed: int, episodes, reward_log=()) -> dict:
    """Curve columns (core.curves.CURVE_SCHEMA). Per episode: step = its number in the order episodes ended, split =
    its game, one row per measure of MEASURES (cumulative_score: the running sum of the game's returns at its end).
    Per entry of `reward_log` (GameEnvs.reward_log: (game, frame, the game's rewards summed up to that frame of its
    clock)): metric REWARDS, step = the frame, split = the game, value = the sum; C(t) is read from these rows."""
    rows = {"seed": [], "step": [], "split": [], "metric": [], "value": []}

    def add(step, game, metric, value):
        rows["seed"].append(seed)
        rows["step"].append(int(step))
        rows["split"].append(game)
        rows["metric"].append(metric)
        rows["value"].append(float(value))

    totals: dict[str, float] = {}
    for step, e in enumerate(episodes):
        totals[e.game] = totals.get(e.game, 0.0) + e.episode_return
        values = (e.episode_return, e.frames, e.end_frame, totals[e.game], float(e.truncated), e.slot,
                  float(not getattr(e, "cut", False)))
        for metric, value in zip(MEASURES, values):
            add(step, e.game, metric, value)
    for game, frame, total in reward_log:
        add(frame, game, REWARDS, total)
    return rows


def episodes_frame(frame):
    """A curve file's episode rows as one row per episode: step, game, and a column per measure."""
    frame = frame[frame["metric"].isin(MEASURES)]
    wide = frame.pivot_table(index=["seed", "step", "split"], columns="metric", values="value", aggfunc="first")
    return wide.reset_index().rename(columns={"split": "game"}).sort_values("step", ignore_index=True)


def rewards_frame(frame):
    """A curve file's rewards by frame: columns game, frame, cumulative (in the order logged, frames nondecreasing
    per game); empty for a file written before they were logged."""
    rewards = frame[frame["metric"] == REWARDS]
    return rewards.rename(columns={"split": "game", "step": "frame", "value": "cumulative"})[
        ["game", "frame", "cumulative"]].reset_index(drop=True)


def schedule_steps(frames_per_game: int, games: int, frameskip: int, num_envs: int) -> int:
    """The agent steps per slot that `frames_per_game` frames of each of `games` games make, at `frameskip` frames a
    step over `num_envs` slots (rounded up): an architecture's `total_steps`. The reset frames take no agent step, so a
    run's own budget holds about 2% fewer steps than this (DEVIATIONS AM16)."""
    return -(-frames_per_game * games // (frameskip * num_envs))


def play(agent, envs, checkpoint: str | None = None, identity: dict | None = None, checkpoint_minutes: float = 10.0,
         progress: Progress | None = None) -> list:
    """Step `envs` with `agent` until the schedule is spent; every finished episode, in order. Resumes from
    `checkpoint` (the architecture's state and the envs' bookkeeping: emulator state cannot be saved, so a resumed
    run starts new episodes and closes the ones in progress as truncated) and saves one every `checkpoint_minutes`."""
    import dataclasses

    from reprobench.amtlb.atari import Episode
    from reprobench.core import checkpoint as checkpoints

    episodes: list = []
    state = checkpoints.load(checkpoint, identity or {})
    if state is not None:
        agent.load_state_dict(state["agent"])
        envs.load_state_dict(state["envs"])
        episodes = [Episode(**e) for e in state["episodes"]]  # stored as plain dicts: weights_only loading
    observations, closed = envs.reset()
    episodes += closed
    n = observations.shape[0]
    rewards, starts = np.zeros(n), np.ones(n, dtype=bool)
    last_save, done_frames = time.monotonic(), sum(envs.frames.values())
    while not envs.done:
        actions = agent.act(observations, rewards, starts)
        observations, rewards, starts, finished = envs.step(actions)
        episodes += finished
        if progress is not None:
            frames = sum(envs.frames.values())
            progress.update(frames - done_frames, f"{len(episodes)} episodes")
            done_frames = frames
        if checkpoint and time.monotonic() - last_save > 60 * checkpoint_minutes and not envs.done:
            checkpoints.save(checkpoint, identity or {}, agent=agent.state_dict(), envs=envs.state_dict(),
                             episodes=[dataclasses.asdict(e) for e in episodes])
            last_save = time.monotonic()
    return episodes


def emulator_threads(setting: str, threads: int) -> int:
    """The emulators' worker threads for config amtlb.emulator_threads: a number; 'threads', the job's torch threads;
    'auto', every CPU this process may run on (on Slurm the allocation's, which the job's `threads` cannot carry:
    Snakemake caps them at the submitting machine's). The emulators give the same frames whatever the count."""
    import os

    if setting == "threads":
        return int(threads)
    if setting == "auto":
        return len(os.sched_getaffinity(0))
    if not setting.isdigit() or int(setting) < 1:
        raise ConfigError("amtlb.emulator_threads", f"'{setting}' is not a positive number, 'threads' or 'auto'")
    return int(setting)


def run(kind: str, architecture: str, games: list[str], seed: int, out: str, *, frames_per_game: int,
        num_envs: int, settings: dict, scale: str, device: str, threads: int, emulator_threads: int | None = None,
        schedule_frames_per_game: int | None = None, fold: int | None = None,
        load_weights: str | None = None, save_weights: str | None = None, checkpoint: str | None = None,
        checkpoint_minutes: float = 10.0, config: dict | None = None) -> None:
    """Train one instance on `games` (frames_per_game frames each) and write its episodes as one curve file.
    `schedule_frames_per_game` sets the architecture's `total_steps` (the horizon of its schedules) to that many
    frames per game, in agent steps per slot; None: the run's own budget (config.yaml says why 40M, DEVIATIONS
    AM15)."""
    import dataclasses

    from reprobench.amtlb.api import make_architecture
    from reprobench.amtlb.atari import AtariSettings, GameEnvs, QuotaSchedule
    from reprobench.core import checkpoint as checkpoints
    from reprobench.core.device import choose_device, describe
    from reprobench.core.plugins import run_id

    training = kind in ("pretrain", "generalist")
    atari = AtariSettings(**{**settings, "max_steps_without_reward":
                             settings.get("max_steps_without_reward") if training else None})
    quotas = dict.fromkeys(games, frames_per_game)
    horizon = frames_per_game if schedule_frames_per_game is None else schedule_frames_per_game
    total_steps = schedule_steps(horizon, len(games), atari.frameskip, num_envs)
    torch_device = choose_device(device, threads)
    agent = make_architecture(architecture, num_envs, seed, str(torch_device), total_steps)
    if load_weights:
        agent.load(load_weights)  # reset to saved weights: fresh optimiser, empty buffers, restarted schedules
    e_seed = env_seed(kind, seed, games, fold)
    envs = GameEnvs(QuotaSchedule(quotas, e_seed), num_envs, e_seed, atari, threads=emulator_threads or threads)
    identity = {"kind": kind, "architecture": architecture, "games": games, "seed": seed, "fold": fold,
                "bookkeeping": "rewards by frame",  # checkpoints from before GameEnvs logged them start over
                "frames_per_game": frames_per_game, "num_envs": num_envs, "settings": dataclasses.asdict(atari),
                "total_steps": total_steps,
                "load_weights": load_weights}
    progress = Progress(frames_per_game * len(games), f"amtlb {kind} {run_id(architecture)} seed {seed}")
    try:
        with Timer() as timer:
            episodes = play(agent, envs, checkpoint, identity, checkpoint_minutes, progress)
    finally:
        progress.close()
        envs.close()
    if save_weights:
        agent.save(save_weights)
    setting = {"games": games, "fold": fold, "frames_per_game": frames_per_game, "frames": dict(envs.frames)}
    if architecture not in ("ppo", "random"):
        setting["user_class"] = architecture
    record = curves.provenance(paper=PAPER.id, experiment=kind, model=run_id(architecture), seed=seed, scale=scale,
                               variant="faithful", setting=setting,
                               config={**(config or {}), "num_envs": num_envs, "total_steps": total_steps,
                                       "schedule_frames_per_game": schedule_frames_per_game,
                                       "atari": dataclasses.asdict(atari),
                                       "env_seed": e_seed, "load_weights": load_weights},
                               device=describe(torch_device), **timer.fields())
    curves.write_curve(episode_rows(seed, episodes, envs.reward_log), out, record)
    checkpoints.remove(checkpoint)
