"""Many S2B meta-referential game episodes stepped at once (gymnasium 1.x VectorEnv, next-step autoreset).

Sub-environment i is the single `MetaReferentialGame` seeded with seed + i (gymnasium's SyncVectorEnv convention,
`reset(seed=s)`; a list gives one seed each): it owns its own numpy Generator, and its k-th episode is the episode of
the generator's k-th key (reprobench.s2b.env.episode_keys), exactly as the single environment draws it. So
observations, rewards, terminations and infos equal those of num_envs single environments stepped in a loop
(gymnasium.vector.SyncVectorEnv), autoresets included.

Episodes are drawn ahead, in batches, in two stages, each one call over the whole batch with array operations (an
episode depends on its key only, not on its batch): the sampled phases (reprobench.s2b.env.sample_phases, the
component-focused sampling, the costly part, which wants big batches), then the timelines
(reprobench.s2b.env.generate_episodes). When a sub-environment needs an episode and has none waiting, every
sub-environment is topped up to `episodes_ahead` waiting timelines, taken from its sampled phases, and if those run
short every sub-environment is topped up to 4 x episodes_ahead sampled phases, the next keys of its own generator.
The timelines wait in an arena of rows, packed into three arrays (int32, int8 and float32 fields, one row per
observation, episode after episode, reprobench.s2b.env.packed_columns), and step() gathers row start + t of each
sub-environment, plus array arithmetic for rewards and previous_game_*. When the arena is full, the rows of the
episodes still current or waiting are moved to its front (to a bigger one when needed). A reset draws one episode per
sub-environment that has none waiting; reset(seed=...) drops the seeded sub-environments' waiting episodes.
Defaults hold about 2048 episodes' timelines and 8192 sampled phases (tens of MB at 256 sub-environments).

Autoreset: AutoresetMode.NEXT_STEP (gymnasium's default): the step after a sub-environment terminates resets it,
ignores its action, and returns its reset observation with reward 0, terminated False and the reset info.
Infos are batched as gymnasium does: one array per key (object arrays for strings), with an all-True `_key` mask.
Observation and info arrays of one step may be views of one another's buffers (fresh ones each step).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from reprobench.s2b.env import (
    PHASES,
    EpisodeBatch,
    Phases,
    action_space,
    episode_keys,
    generate_episodes,
    make_config,
    mode_names,
    observation_space,
    packed_columns,
    reward_of,
    sample_phases,
)

EPISODES_PER_REFILL = 2048  # the default episodes_ahead tops up about this many episodes at a time
SAMPLES_PER_EPISODE_AHEAD = 4  # sampled phases wait for 4 x episodes_ahead episodes (they are small)
_PHASES = np.array(PHASES, dtype=object)
_DECISION_PHASES = np.array(["", *PHASES], dtype=object)  # indexed by decision mode + 1
# indexed by 2 scored + correct, scored = 0 (no decision) or the decision's mode + 1
_REWARDS = np.concatenate([[0.0, 0.0], reward_of(np.array([False, True, False, True]), np.array([0, 0, 1, 1]))])
_RESULTS = np.array([[0, 0], [1, 0], [0, 1]], dtype=np.int8)  # previous_game_result: none yet, failure, success


class MetaReferentialGameVector(VectorEnv):
    """num_envs MetaReferentialGame episodes at once; the constructor takes the single environment's arguments, plus
    episodes_ahead (timelines drawn ahead per sub-environment, SAMPLES_PER_EPISODE_AHEAD times as many sampled
    phases; None: about EPISODES_PER_REFILL / num_envs, within [2, 256]). It changes the speed and the memory held,
    never the episodes."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, nbr_communication_rounds: int = 1, vocab_size: int = 6,
                 max_sentence_length: int = 3, descriptive: bool = False, nbr_latents: int = 3,
                 min_nbr_values_per_latent: int = 2, max_nbr_values_per_latent: int = 5,
                 nbr_object_centric_samples: int = 1, nbr_distractors: int = 1, observability: str = "full",
                 distractor_sampling: str = "uniform", descriptive_target_ratio: float | None = None,
                 object_centric: bool | None = None, nbr_shots: int = 1, sampling_strategy: str | None = None,
                 use_communication_channel_permutations: bool = True, allow_listener_query: bool = False,
                 provide_listener_feedback: bool = False, seed: int | None = 1337, variant: str = "faithful",
                 query_all: bool = False, speaker: str | Callable = "posdis", render_mode: str | None = None,
                 episodes_ahead: int | None = None):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        if render_mode is not None:
            raise ValueError(f"render_mode must be None (nothing to render), got {render_mode!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0):
            raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
        if episodes_ahead is None:
            episodes_ahead = min(max(-(-EPISODES_PER_REFILL // int(num_envs)), 2), 256)
        elif isinstance(episodes_ahead, bool) or not isinstance(episodes_ahead, int | np.integer) or episodes_ahead < 1:
            raise ValueError(f"episodes_ahead must be a positive integer or None, got {episodes_ahead!r}")
        self.samples_ahead = SAMPLES_PER_EPISODE_AHEAD * int(episodes_ahead)
        self.config = cfg = make_config(
            nbr_communication_rounds, vocab_size, max_sentence_length, descriptive, nbr_latents,
            min_nbr_values_per_latent, max_nbr_values_per_latent, nbr_object_centric_samples, nbr_distractors,
            observability, distractor_sampling, descriptive_target_ratio, object_centric, nbr_shots,
            sampling_strategy, use_communication_channel_permutations, allow_listener_query,
            provide_listener_feedback, variant, query_all, speaker)
        self.num_envs = n = int(num_envs)
        self.episodes_ahead = int(episodes_ahead)
        self._seed = seed
        self.single_observation_space = observation_space(cfg)
        self.single_action_space = action_space(cfg)
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self._modes = mode_names(cfg)
        self._rngs: list[np.random.Generator] | None = None
        # per sub-environment, the episodes waiting, in order: first those whose timelines are in the arena, as
        # (first row, length, other_agent_id), then those whose phases only are sampled, as (key, batch id * 2**32 +
        # row in the batch)
        self._queues: list[deque[tuple]] = [deque() for _ in range(n)]
        self._sampled: list[list[tuple]] = [[] for _ in range(n)]  # (and how many of each were taken already)
        self._sampled_at = [0] * n
        self._phases: dict[int, list] = {}  # sampled batches: id -> [Phases, episodes not taken yet]
        self._next_phases = 0
        self._col = col = packed_columns(cfg)  # the arena's rows are EpisodeBatch rows
        self._width_i, self._width_8 = col["n_ints"], col["n_small"]
        self._rows_i = np.zeros((0, self._width_i), dtype=np.int32)  # the arena: (rows, fields)
        self._rows_8 = np.zeros((0, self._width_8), dtype=np.int8)
        self._rows_f = np.zeros((0, cfg.stimulus_dim), dtype=np.float32)
        self._end = 0  # the arena's first unused row
        self._start = np.zeros(n, dtype=np.int64)  # each sub-environment's episode: its first row,
        self._steps = np.ones(n, dtype=np.int64)  # its length
        self._agent = np.zeros((n, 10), dtype=np.float32)  # and its other_agent_id
        self._started = np.zeros(n, dtype=bool)  # whether the sub-environment's episode is current
        self._t = np.zeros(n, dtype=np.int64)
        self._prev_reward = np.zeros(n, dtype=np.float32)
        self._prev_result = np.zeros(n, dtype=np.int8)  # 0 none yet, 1 failure, 2 success
        self._autoreset = np.zeros(n, dtype=bool)
        self._cur_decision = np.zeros(n, dtype=bool)  # of the observation last returned
        self._cur_target = np.zeros(n, dtype=np.int64)
        self._cur_mode = np.zeros(n, dtype=np.int8)
        self._role = np.tile(np.array([0, 1], dtype=np.int8), (n, 1))

    # -- episodes --------------------------------------------------------------------------------------------------
    def _sample(self, counts: np.ndarray) -> None:
        """Append counts[i] episodes to sub-environment i's sampled queue: the next keys of its generator, their
        phases sampled as one batch (entries (key, batch id * 2**32 + row))."""
        envs = np.flatnonzero(counts).tolist()
        keys = np.concatenate([episode_keys(self._rngs[i], int(counts[i])) for i in envs])
        batch_id = self._next_phases
        self._next_phases += 1
        self._phases[batch_id] = [sample_phases(keys, self.config), len(keys)]
        entries = list(zip(keys.tolist(), range(batch_id << 32, (batch_id << 32) + len(keys)), strict=True))
        at = 0
        for i in envs:
            self._sampled[i].extend(entries[at:at + counts[i]])
            at += counts[i]

    def _draw(self, counts: np.ndarray, top_up: bool) -> None:
        """Append counts[i] episodes to sub-environment i's queue, taken from its sampled queue (topped up first if
        short: all sub-environments to samples_ahead, or, if not top_up, just what is missing), their timelines
        drawn as one batch and packed at the end of the arena."""
        sampled, sampled_at = self._sampled, self._sampled_at
        counts_list = counts.tolist()
        have = [len(q) - at for q, at in zip(sampled, sampled_at, strict=True)]
        short = [max(c - h, 0) for c, h in zip(counts_list, have, strict=True)]
        if any(short):
            self._sample(np.array([max(self.samples_ahead + c - h, 0) for c, h in zip(counts_list, have, strict=True)]
                                  if top_up else short))
        envs = np.flatnonzero(counts).tolist()
        taken = []
        for i in envs:
            at = sampled_at[i]
            taken += sampled[i][at:at + counts_list[i]]
            at += counts_list[i]
            if 2 * at > len(sampled[i]):  # drop the entries taken
                del sampled[i][:at]
                at = 0
            sampled_at[i] = at
        taken = np.array(taken, dtype=np.uint64)
        keys, ids, rows = taken[:, 0], (taken[:, 1] >> np.uint64(32)).astype(np.int64), (
            taken[:, 1] & np.uint64(0xFFFFFFFF)).astype(np.int64)
        groups = np.unique(ids).tolist()
        if len(groups) == 1:
            order, parts = np.arange(len(ids)), [(groups[0], rows)]
        else:  # group by sampled batch
            masks = [ids == b for b in groups]
            order = np.concatenate([np.flatnonzero(mask) for mask in masks])
            parts = [(b, rows[mask]) for b, mask in zip(groups, masks, strict=True)]
        phases = []
        for b, part in parts:
            phases.append(self._phases[b][0].take(part))
            self._phases[b][1] -= len(part)
            if self._phases[b][1] == 0:
                del self._phases[b]
        batch = generate_episodes(keys[order], self.config, phases[0] if len(phases) == 1 else
                                  Phases.concatenate(phases))
        first = self._pack(batch)
        position = np.empty_like(order)
        position[order] = np.arange(len(order))  # each taken episode's row in the batch
        entries = list(zip((first + batch.offsets[:-1])[position].tolist(), batch.n_steps[position].tolist(),
                           batch.other_agent_id[position], strict=True))
        at = 0
        for i in envs:
            self._queues[i].extend(entries[at:at + counts_list[i]])
            at += counts_list[i]

    def _forget(self, i: int) -> None:
        """Drop sub-environment i's waiting episodes (its generator was reseeded)."""
        self._queues[i].clear()
        for _, entry in self._sampled[i][self._sampled_at[i]:]:
            b = entry >> 32
            self._phases[b][1] -= 1
            if self._phases[b][1] == 0:
                del self._phases[b]
        self._sampled[i].clear()
        self._sampled_at[i] = 0

    def _pack(self, batch: EpisodeBatch) -> int:
        """Copy the batch's rows into the arena (made room for first); returns the row of its first one."""
        rows = int(batch.offsets[-1])
        if self._end + rows > len(self._rows_i):
            self._compact(rows)
        at = self._end
        self._rows_i[at:at + rows] = batch.ints
        self._rows_8[at:at + rows] = batch.small
        self._rows_f[at:at + rows] = batch.stimulus
        self._end = at + rows
        return at

    def _compact(self, extra: int) -> None:
        """Move the rows of the episodes still current or waiting to the front of the arena, grown if they and
        `extra` more rows would fill more than half of it."""
        live = [(int(self._start[i]), int(self._steps[i])) for i in range(self.num_envs) if self._started[i]]
        live += [(s, n) for q in self._queues for s, n, _ in q]
        start = np.array([s for s, _ in live], dtype=np.int64)
        length = np.array([n + 1 for _, n in live], dtype=np.int64)
        dest = np.cumsum(length) - length
        total = int(length.sum())
        moved = np.repeat(start - dest, length) + np.arange(total)
        grow = 2 * (total + extra) > len(self._rows_i)
        for name in ("_rows_i", "_rows_8", "_rows_f"):
            old = getattr(self, name)
            rows = old.take(moved, axis=0)
            if grow:
                old = np.empty((2 * (total + extra), old.shape[1]), dtype=old.dtype)
                setattr(self, name, old)
            old[:total] = rows
        new_start = dict(zip(start.tolist(), dest.tolist(), strict=True))
        for i in range(self.num_envs):
            if self._started[i]:
                self._start[i] = new_start[int(self._start[i])]
        self._queues = [deque((new_start[s], n, a) for s, n, a in q) for q in self._queues]
        self._end = total

    def _advance(self, envs: np.ndarray, top_up: bool) -> None:
        """Move sub-environments `envs` to their next episode, drawing episodes first if one has none waiting: then,
        if top_up, every sub-environment is topped up to episodes_ahead waiting episodes (plus the one it needs now)."""
        queues = self._queues
        self._started[envs] = False  # their current episodes are over: compaction may drop them
        if any(not queues[i] for i in envs):
            ahead = self.episodes_ahead if top_up else 0
            counts = np.array([max(ahead - len(q), 0) for q in queues], dtype=np.int64)
            for i in envs:
                if not queues[i]:
                    counts[i] += 1
            self._draw(counts, top_up)
            queues = self._queues
        for i in envs.tolist():
            self._start[i], self._steps[i], self._agent[i] = queues[i].popleft()
        self._started[envs] = True
        self._t[envs] = 0
        self._prev_reward[envs] = 0.0  # (observations hold copies)
        self._prev_result[envs] = 0

    # -- API -------------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | Sequence[int] | None = None, options: dict | None = None):
        """Reset every sub-environment: seed + i each (int), seeds[i] (a list), or, unseeded, the constructor's
        seed + i on the first reset and the generators' continuation afterwards."""
        if seed is None and self._rngs is None and self._seed is not None:
            seed = self._seed
        if seed is None:
            seeds = [None] * self.num_envs
        elif isinstance(seed, int | np.integer) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(self.num_envs)]
            super().reset(seed=int(seed))
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"seed must be an int or a list of {self.num_envs} seeds, got {seed!r}")
        if self._rngs is None:
            self._rngs = [None] * self.num_envs
        for i, s in enumerate(seeds):
            if s is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(s)
                self._forget(i)  # episodes of the old seed
        self._advance(np.arange(self.num_envs), top_up=False)
        self._autoreset[:] = False
        return self._observe(np.zeros(self.num_envs, dtype=bool), np.zeros(self.num_envs, dtype=bool),
                             np.zeros(self.num_envs, dtype=np.int64))

    def step(self, actions):
        if self._rngs is None:
            raise RuntimeError("call reset() before step()")
        decision = self._decisions(actions)
        resetting = self._autoreset
        decided = self._cur_decision  # (False for a terminated sub-environment: its last observation is no decision)
        correct = decided & (decision == self._cur_target)
        scored = decided * (self._cur_mode + 1)
        rewards = _REWARDS.take(2 * scored + correct)
        np.copyto(self._prev_reward, rewards, where=decided, casting="same_kind")
        np.copyto(self._prev_result, 1 + correct.view(np.int8), where=decided)
        self._t += 1
        if resetting.any():
            self._advance(np.flatnonzero(resetting), top_up=True)  # (t = 0, so no termination)
        terminations = self._t == self._steps
        self._autoreset = terminations
        obs, infos = self._observe(decided, correct, scored)
        return obs, rewards, terminations.copy(), np.zeros(self.num_envs, dtype=bool), infos

    def _decisions(self, actions) -> np.ndarray:
        value = actions["decision"] if isinstance(actions, Mapping) else actions
        arr = np.asarray(value)
        if arr.shape != (self.num_envs,) or arr.dtype.kind not in "iu":
            raise ValueError(f"actions decision must be ({self.num_envs},) integers, got shape {arr.shape} "
                             f"dtype {arr.dtype}")
        n = self.config.n_decisions
        if arr.dtype != np.int64:
            arr = arr.astype(np.int64)
        if (arr.view(np.uint64) >= n).any():  # (a negative decision reads as a huge unsigned one)
            raise ValueError(f"actions decision must lie in [0, {n}), got {arr.tolist()}")
        return arr

    def _observe(self, decided: np.ndarray, correct: np.ndarray, decision_phase: np.ndarray):
        """The observations and infos of row start + t of every sub-environment (decision_phase: 0 for no decision,
        else the decision's mode + 1)."""
        cfg, col, n = self.config, self._col, self.num_envs
        row = self._start + self._t
        ints = self._rows_i.take(row, axis=0).astype(np.int64)
        small = self._rows_8.take(row, axis=0)
        mode = small[:, col["mode"]]
        self._cur_decision = small[:, col["decision"]].astype(bool)
        self._cur_target = ints[:, col["target"]].copy()
        self._cur_mode = mode.copy()
        obs = {
            "communication_channel": ints[:, col["comm"]],
            "mode_id": small[:, col["mode_id"]],
            "other_agent_id": self._agent.copy(),
            "previous_game_result": _RESULTS.take(self._prev_result, axis=0),
            "previous_game_reward": self._prev_reward[:, None].copy(),
            "role_id": self._role.copy(),
            "stimulus": self._rows_f.take(row, axis=0),
        }
        masks = np.ones((11, n), dtype=bool)
        info = {
            "phase": _PHASES.take(mode),
            "mode": self._modes.take(ints[:, col["shot"]] + 1),
            "round_idx": ints[:, col["round_idx"]],
            "round_id": small[:, col["round_id"]],
            "game_index": ints[:, col["game"]],
            "target_decision": ints[:, col["target"]],
            "speaker_latents": ints[:, col["speaker_latents"]],
            "listener_latents": ints[:, col["listener_latents"]].reshape(n, cfg.n_distractors + 1, cfg.n_latents),
            "decided": decided,
            "correct": correct,
            "decision_phase": _DECISION_PHASES.take(decision_phase),
            "_phase": masks[0], "_mode": masks[1], "_round_idx": masks[2], "_round_id": masks[3],
            "_game_index": masks[4], "_target_decision": masks[5], "_speaker_latents": masks[6],
            "_listener_latents": masks[7], "_decided": masks[8], "_correct": masks[9], "_decision_phase": masks[10],
        }
        return obs, info
