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
The timelines wait in an arena: one int32 array, one row per observation, episode after episode, holding the
EpisodeBatch fields (reprobench.s2b.env.packed_columns: the int32 ones, the float32 stimulus as its bits, the int8
ones as bytes) plus what step() would otherwise work out at every step, once per row at packing: the right decision
on a decision row (else -1), the reward table row, the phase/mode names row, the mode a decision on the row is scored
in (reprobench.s2b.env.scored_blocks: S2B's late phase switch) and a flag of the episode's last row. So
step() is one gather of each sub-environment's row (one cache miss per row, where an array per field group would miss
once per group) and a handful of array operations on it. When the arena is full, the rows still to be shown (of the
current episodes, from their current row, and of the waiting ones) are moved to its front (to a bigger one when
needed). A reset draws one episode per sub-environment that has none waiting; reset(seed=...) drops the seeded
sub-environments' waiting episodes. Defaults hold about 2048 episodes' timelines and 8192 sampled phases (at 256
sub-environments, about 30 MB for the paper's Table 2 setting, about 100 MB for 16 OC samples and 4 shots).

Autoreset: AutoresetMode.NEXT_STEP (gymnasium's default): the step after a sub-environment terminates resets it,
ignores its action, and returns its reset observation with reward 0, terminated False and the reset info.
Infos are batched as gymnasium does: one array per key (object arrays for strings), with an all-True `_key` mask.
Every array returned is fresh memory or a view of memory allocated at that step or the one before (mostly of the
rows gathered for the observation, so observation and info arrays may be views of one another's buffers, and need not
be contiguous); none is ever written to afterwards, so arrays kept across steps stay as they were.
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
    scored_blocks,
)

EPISODES_PER_REFILL = 2048  # the default episodes_ahead tops up about this many episodes at a time
SAMPLES_PER_EPISODE_AHEAD = 4  # sampled phases wait for 4 x episodes_ahead episodes (they are small)
PACK_CHUNK = 8192  # rows packed into the arena at a time (about 0.7 MB at the paper's settings)
# Tables indexed by a step's outcome code: 2 scored + correct, scored = 0 (no decision) or 1 + the mode (0 support,
# 1 query) the decision is scored in; code 0 also stands for "no decision yet" in previous_game_*.
_REWARDS = np.concatenate([[0.0, 0.0], reward_of(np.array([False, True, False, True]), np.array([0, 0, 1, 1]))])
_PREV_REWARDS = _REWARDS.astype(np.float32)[:, None]  # previous_game_reward (1,)
_RESULTS = np.array([[0, 0], [0, 0], [1, 0], [0, 1], [1, 0], [0, 1]], dtype=np.int8)  # previous_game_result
_INT64 = np.dtype(np.int64)


def _bytes(a: np.ndarray) -> np.ndarray:
    """The rows of a 2-D array (its last axis contiguous) as one fixed-size byte string each: (rows, 1) void."""
    return a.view(np.dtype((np.void, a.shape[1] * a.itemsize)))


def sub_seeds(env: VectorEnv, seed) -> list:
    """The seed of each sub-environment (gymnasium's SyncVectorEnv convention): seed + i for an int (which also
    seeds the vector env's own generator), seeds[i] for a list, None each for None."""
    if seed is None:
        return [None] * env.num_envs
    if isinstance(seed, int | np.integer) and not isinstance(seed, bool):
        VectorEnv.reset(env, seed=int(seed))
        return [int(seed) + i for i in range(env.num_envs)]
    seeds = list(seed)
    if len(seeds) != env.num_envs:
        raise ValueError(f"seed must be an int or a list of {env.num_envs} seeds, got {seed!r}")
    return seeds


class MetaReferentialGameVector(VectorEnv):
    """num_envs MetaReferentialGame episodes at once; the constructor takes the single environment's arguments, plus
    episodes_ahead (timelines drawn ahead per sub-environment, SAMPLES_PER_EPISODE_AHEAD times as many sampled
    phases; None: about EPISODES_PER_REFILL / num_envs, within [2, 256]). It changes the speed and the memory held,
    never the episodes. keep_spaces: keep each episode's symbolic space (current_spaces(), for probes that ask a
    speaker about every combination; it costs a few microseconds per episode)."""

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
                 episodes_ahead: int | None = None, keep_spaces: bool = False):
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
        self._keep_spaces = bool(keep_spaces)
        self.single_observation_space = observation_space(cfg)
        self.single_action_space = action_space(cfg)
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self._n_decisions = cfg.n_decisions
        self._n_decisions_u64 = np.uint64(cfg.n_decisions)
        modes = mode_names(cfg)
        # the phase and mode names of an observation, indexed by its label 2 (shot + 1) + mode
        self._labels = np.array([[PHASES[m], modes[s]] for s in range(len(modes)) for m in range(2)], dtype=object)
        # the phase and mode names a decision is scored in, indexed by 1 + its label (0: no decision, "" and "")
        self._scored_labels = np.concatenate([np.array([["", ""]], dtype=object), self._labels])
        self._rngs: list[np.random.Generator] | None = None

        # The arena's rows, in int32 words: the EpisodeBatch ints, then four codes worked out at packing, answer (the
        # target on a decision row, else -1, which no decision equals), score (2 (mode + 1) on a decision row, mode
        # the one it is scored in, else 0), label (2 (shot + 1) + mode, the row of its phase and mode names) and
        # scored (1 + the label of the mode a decision on the row is scored in, else 0), then the stimulus's float32
        # bits, then the EpisodeBatch small fields and a flag of the episode's last row as bytes.
        self._col = col = packed_columns(cfg)
        n_ints = col["n_ints"]
        self._answer, self._score, self._label, self._scored = n_ints, n_ints + 1, n_ints + 2, n_ints + 3
        self._stimulus = slice(n_ints + 4, n_ints + 4 + cfg.stimulus_dim)
        self._small = n_ints + 4 + cfg.stimulus_dim
        self._last_flag = col["n_small"]  # (a byte of the small fields' words)
        self._arena = np.zeros((0, self._small + (col["n_small"] + 4) // 4), dtype=np.int32)
        self._end = 0  # the arena's first unused row
        self._listener_shape = (n, cfg.n_distractors + 1, cfg.n_latents)

        # per sub-environment, the episodes whose timelines wait in the arena, in order: (first row, last row,
        # other_agent_id, vocabulary, space or None)
        self._queues: list[deque[tuple]] = [deque() for _ in range(n)]
        # the episodes whose phases only are sampled: flat arrays sorted by sub-environment (each one's in order):
        # sub-environment, key, sampled batch id * 2**32 + row in the batch; and how many each sub-environment has
        self._s_env = np.zeros(0, dtype=np.int64)
        self._s_key = np.zeros(0, dtype=np.uint64)
        self._s_ref = np.zeros(0, dtype=np.int64)
        self._s_count = np.zeros(n, dtype=np.int64)
        self._phases: dict[int, list] = {}  # sampled batches: id -> [Phases, episodes not taken yet]
        self._next_phases = 0

        # each sub-environment's current episode: the arena row of the observation last returned, its last row
        # (terminal) and its other_agent_id; the outcome code of its last scored decision (0: none yet)
        self._row = np.zeros(n, dtype=np.int64)
        self._last = np.ones(n, dtype=np.int64)
        self._agent = np.zeros((n, 10), dtype=np.float32)
        self._vocab = np.zeros((n, cfg.vocab_size + 1), dtype=np.int64)
        self._spaces: list = [None] * n
        self._prev_code = np.zeros(n, dtype=np.intp)
        self._autoreset = np.zeros(n, dtype=bool)
        self._n_autoreset = 0
        # of the observation last returned (views of its gathered rows, never written): answer, score, scored, decision
        self._cur_answer = np.full(n, -1, dtype=np.int64)
        self._cur_score = np.zeros(n, dtype=np.int64)
        self._cur_scored = np.zeros(n, dtype=np.int64)
        self._cur_decided = np.zeros(n, dtype=bool)
        self._role = np.tile(np.array([0, 1], dtype=np.int8), (n, 1))
        self._masks = np.ones((12, n), dtype=bool)  # the infos' `_key` masks, copied at each step

    # -- episodes --------------------------------------------------------------------------------------------------
    def _sample(self, counts: np.ndarray) -> None:
        """Append counts[i] episodes to sub-environment i's sampled ones: the next keys of its generator, their
        phases sampled as one batch."""
        envs = np.flatnonzero(counts)
        keys = np.concatenate([episode_keys(self._rngs[i], int(counts[i])) for i in envs.tolist()])
        batch_id = self._next_phases
        self._next_phases += 1
        self._phases[batch_id] = [sample_phases(keys, self.config), len(keys)]
        env = np.concatenate([self._s_env, np.repeat(envs, counts[envs])])
        order = np.argsort(env, kind="stable")  # by sub-environment, the older entries first
        self._s_env = env[order]
        self._s_key = np.concatenate([self._s_key, keys])[order]
        self._s_ref = np.concatenate([self._s_ref, (batch_id << 32) + np.arange(len(keys))])[order]
        self._s_count = self._s_count + counts

    def _release(self, refs: np.ndarray) -> None:
        """Count the sampled entries `refs` as taken (or dropped): a sampled batch is let go once all are."""
        ids, taken = np.unique(refs >> 32, return_counts=True)
        for b, k in zip(ids.tolist(), taken.tolist(), strict=True):
            self._phases[b][1] -= k
            if self._phases[b][1] == 0:
                del self._phases[b]

    def _draw(self, counts: np.ndarray, top_up: bool, live: np.ndarray) -> None:
        """Append counts[i] episodes to sub-environment i's queue, taken from its sampled ones (topped up first if
        short: all sub-environments to samples_ahead, or, if not top_up, just what is missing), their timelines
        drawn as one batch and packed at the end of the arena (the current episodes of `live` kept)."""
        short = np.maximum(counts - self._s_count, 0)
        if short.any():
            self._sample(np.maximum(self.samples_ahead + counts - self._s_count, 0) if top_up else short)
        # the first counts[i] sampled entries of each sub-environment i (its entries are a run of the sorted arrays)
        env = self._s_env
        first = np.cumsum(self._s_count) - self._s_count
        take = np.arange(len(env)) - first[env] < counts[env]
        keys, refs = self._s_key[take], self._s_ref[take]
        rest = ~take
        self._s_env, self._s_key, self._s_ref = env[rest], self._s_key[rest], self._s_ref[rest]
        self._s_count = self._s_count - counts
        ids = refs >> 32
        order = np.argsort(ids, kind="stable")  # grouped by sampled batch
        ids, rows = ids[order], refs[order] & 0xFFFFFFFF
        bounds = np.flatnonzero(np.diff(ids)) + 1
        parts = [self._phases[int(ids[lo])][0].take(rows[lo:hi])
                 for lo, hi in zip([0, *bounds.tolist()], [*bounds.tolist(), len(ids)], strict=True)]
        self._release(refs)
        batch = generate_episodes(keys[order], self.config, parts[0] if len(parts) == 1 else
                                  Phases.concatenate(parts))
        offsets = self._pack(batch, live) + batch.offsets
        position = np.empty_like(order)
        position[order] = np.arange(len(order))  # each taken episode's place in the batch
        spaces = ([batch.spaces.space(b) for b in position.tolist()] if self._keep_spaces
                  else [None] * len(position))
        entries = list(zip(offsets[:-1][position].tolist(), (offsets[1:] - 1)[position].tolist(),
                           batch.other_agent_id[position], batch.vocabulary[position], spaces, strict=True))
        lo = 0
        for i, c in enumerate(counts.tolist()):
            if c:
                self._queues[i].extend(entries[lo:lo + c])
                lo += c

    def _forget(self, envs: list[int]) -> None:
        """Drop the waiting episodes of sub-environments `envs` (their generators were reseeded)."""
        for i in envs:
            self._queues[i].clear()
        drop = np.isin(self._s_env, envs)
        if drop.any():
            self._release(self._s_ref[drop])
            keep = ~drop
            self._s_env, self._s_key, self._s_ref = self._s_env[keep], self._s_key[keep], self._s_ref[keep]
        self._s_count[envs] = 0

    def _pack(self, batch: EpisodeBatch, live: np.ndarray) -> int:
        """Copy the batch's rows into the arena (made room for first, the current episodes of `live` kept), with
        their codes; returns the row of its first one."""
        rows = int(batch.offsets[-1])
        if self._end + rows > len(self._arena):
            self._compact(rows, live)
        at, col = self._end, self._col
        self._end = at + rows
        ints, small = np.ascontiguousarray(batch.ints), np.ascontiguousarray(batch.small)
        stimulus = np.ascontiguousarray(batch.stimulus)
        late = self.config.late_switch  # then a decision is scored in the next row's mode: worked out over the batch
        if late:
            terminal = np.zeros(rows, dtype=bool)
            terminal[batch.offsets[1:] - 1] = True
            scored_mode, scored_shot = scored_blocks(self.config, small[:, col["mode"]], ints[:, col["shot"]],
                                                     terminal)
        # A chunk of rows at a time, so that the rows stay in the cache from their first read (from memory) to the
        # last write: each field group is copied as one (rows,) array of fixed-size byte strings (a row-by-row copy
        # of a few numbers each costs about twice as much), and the codes are worked out from the copied rows.
        for lo in range(0, rows, PACK_CHUNK):
            hi = min(lo + PACK_CHUNK, rows)
            out = self._arena[at + lo:at + hi]
            _bytes(out[:, :col["n_ints"]])[:] = _bytes(ints[lo:hi])
            _bytes(out[:, self._stimulus])[:] = _bytes(stimulus[lo:hi])
            out_small = out[:, self._small:].view(np.int8)
            _bytes(out_small[:, :col["n_small"]])[:] = _bytes(small[lo:hi])
            decision, mode = out_small[:, col["decision"]].view(bool), out_small[:, col["mode"]]
            shot = out[:, col["shot"]]
            out[:, self._answer] = np.where(decision, out[:, col["target"]], -1)
            out[:, self._label] = 2 * shot + 2 + mode
            if late:
                mode, shot = scored_mode[lo:hi], scored_shot[lo:hi]
            out[:, self._score] = decision * (2 * mode + 2)
            out[:, self._scored] = decision * (2 * shot + 3 + mode)
            out_small[:, self._last_flag] = 0
        self._arena[at:at + rows, self._small:].view(np.int8)[batch.offsets[1:] - 1, self._last_flag] = 1
        return at

    def _compact(self, extra: int, live: np.ndarray) -> None:
        """Move the rows still to be shown (of the current episodes of `live`, from their current row on, and of the
        waiting episodes) to the front of the arena, grown if they and `extra` more rows would fill more than half
        of it."""
        current = np.flatnonzero(live)
        waiting = [(s, e) for q in self._queues for s, e, *_ in q]
        start = np.concatenate([self._row[current], np.array([s for s, _ in waiting], dtype=np.int64)])
        length = np.concatenate([self._last[current], np.array([e for _, e in waiting], dtype=np.int64)]) + 1 - start
        dest = np.cumsum(length) - length
        total = int(length.sum())
        rows = self._arena.take(np.repeat(start - dest, length) + np.arange(total), axis=0)
        if 2 * (total + extra) > len(self._arena):
            self._arena = np.empty((2 * (total + extra), self._arena.shape[1]), dtype=np.int32)
        self._arena[:total] = rows
        k = len(current)
        self._row[current] = dest[:k]
        self._last[current] -= (start - dest)[:k]
        shift = (start - dest).tolist()
        for q in self._queues:
            moved = [(s - shift[j], e - shift[j], *rest) for j, (s, e, *rest) in enumerate(q, k)]
            k += len(q)
            q.clear()
            q.extend(moved)
        self._end = total

    def _advance(self, envs: np.ndarray, top_up: bool) -> None:
        """Move sub-environments `envs` to their next episode, drawing episodes first if one has none waiting: then,
        if top_up, every sub-environment is topped up to episodes_ahead waiting episodes (plus the one it needs now)."""
        queues, envs_list = self._queues, envs.tolist()
        if any(not queues[i] for i in envs_list):
            ahead = self.episodes_ahead if top_up else 0
            counts = np.array([max(ahead - len(q), 0) for q in queues], dtype=np.int64)
            for i in envs_list:
                if not queues[i]:
                    counts[i] += 1
            live = np.ones(self.num_envs, dtype=bool)
            live[envs] = False  # their current episodes are over: compaction may drop them
            self._draw(counts, top_up, live)
        row, last, agent, vocab, spaces = self._row, self._last, self._agent, self._vocab, self._spaces
        for i in envs_list:
            row[i], last[i], agent[i], vocab[i], spaces[i] = queues[i].popleft()
        self._prev_code[envs] = 0  # (observations hold copies)

    # -- API -------------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | Sequence[int] | None = None, options: dict | None = None):
        """Reset every sub-environment: seed + i each (int), seeds[i] (a list), or, unseeded, the constructor's
        seed + i on the first reset and the generators' continuation afterwards."""
        if seed is None and self._rngs is None and self._seed is not None:
            seed = self._seed
        seeds = sub_seeds(self, seed)
        if self._rngs is None:
            self._rngs = [None] * self.num_envs
        reseeded = []
        for i, s in enumerate(seeds):
            if s is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(s)
                reseeded.append(i)
        self._forget(reseeded)  # episodes of the old seeds
        self._advance(np.arange(self.num_envs), top_up=False)
        n = self.num_envs
        return self._observe(np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), np.zeros(n, dtype=np.intp))

    def step(self, actions):
        if self._rngs is None:
            raise RuntimeError("call reset() before step()")
        decision = self._decisions(actions)
        decided = self._cur_decided  # (False for a terminated sub-environment: its last observation is no decision)
        correct = decision == self._cur_answer  # (-1 where no decision)
        code = self._cur_score + correct
        scored = self._cur_scored
        np.copyto(self._prev_code, code, where=decided)
        self._row += 1
        if self._n_autoreset:
            self._advance(self._autoreset.nonzero()[0], top_up=True)  # (their code is 0)
        obs, infos = self._observe(decided, correct, scored)
        terminations = self._autoreset  # (set by _observe)
        return obs, _REWARDS.take(code), terminations.copy(), np.zeros(self.num_envs, dtype=bool), infos

    # -- what a speaker sees (reprobench.s2b.marl_env) --------------------------------------------------------------
    def current_vocabularies(self) -> np.ndarray:
        """(num_envs, V + 1) int64: each current episode's listener token for every speaker token (0 -> 0)."""
        return self._vocab.copy()

    def current_spaces(self) -> list:
        """Each current episode's symbolic space (stimuli.SymbolicSpace); needs keep_spaces=True."""
        if not self._keep_spaces:
            raise RuntimeError("construct with keep_spaces=True to read the episodes' spaces")
        return list(self._spaces)

    def speaker_stimuli(self) -> np.ndarray:
        """(num_envs, (K + 1) N_dim) float32: the speaker's stimuli (target first) of each current observation's game,
        read from the game's feedback row (which shows them to the listener): needs listener feedback."""
        cfg = self.config
        if not cfg.listener_feedback:
            raise RuntimeError("the speaker's stimuli are read from the feedback rows: provide_listener_feedback=True")
        round_idx = self._arena[self._row, self._col["round_idx"]].astype(np.int64)
        kk = np.where(round_idx >= 0, round_idx, cfg.n_rounds + 1)  # the row's place in its game
        rows = self._arena.take(self._row + cfg.n_rounds + 1 - kk, axis=0)
        return np.ascontiguousarray(rows[:, self._stimulus]).view(np.float32)

    @property
    def resetting(self) -> np.ndarray:
        """(num_envs,) bool: the sub-environments whose next step is an autoreset (their action is ignored)."""
        return self._autoreset.copy()

    def _decisions(self, actions) -> np.ndarray:
        value = actions["decision"] if type(actions) is dict or isinstance(actions, Mapping) else actions
        arr = np.asarray(value)
        if arr.shape != (self.num_envs,) or arr.dtype.kind not in "iu":
            raise ValueError(f"actions decision must be ({self.num_envs},) integers, got shape {arr.shape} "
                             f"dtype {arr.dtype}")
        if arr.dtype is not _INT64:  # (the native int64 dtype is a singleton)
            arr = arr.astype(np.int64)
        if np.count_nonzero(arr.view(np.uint64) >= self._n_decisions_u64):  # (a negative one reads as huge)
            raise ValueError(f"actions decision must lie in [0, {self._n_decisions}), got {arr.tolist()}")
        return arr

    def _observe(self, decided: np.ndarray, correct: np.ndarray, scored: np.ndarray):
        """The observations and infos of every sub-environment's current row (decided, correct, scored: of the action
        just taken)."""
        col = self._col
        block = self._arena.take(self._row, axis=0)  # one gather; the fields below are views of it or of `ints`
        ints = block.astype(np.int64)  # (the whole block: a contiguous conversion is the cheaper one)
        small = block[:, self._small:].view(np.int8)
        self._cur_answer, self._cur_score, self._cur_scored = (ints[:, self._answer], ints[:, self._score],
                                                               ints[:, self._scored])
        self._cur_decided = small[:, col["decision"]].view(bool)
        self._autoreset = small[:, self._last_flag].view(bool)  # terminated: the episode's last row
        self._n_autoreset = np.count_nonzero(self._autoreset)
        labels = self._labels.take(ints[:, self._label], axis=0)
        scored_labels = self._scored_labels.take(scored, axis=0)
        prev = self._prev_code
        obs = {
            "communication_channel": ints[:, col["comm"]],
            "mode_id": small[:, col["mode_id"]],
            "other_agent_id": self._agent.copy(),
            "previous_game_result": _RESULTS.take(prev, axis=0),
            "previous_game_reward": _PREV_REWARDS.take(prev, axis=0),
            "role_id": self._role.copy(),
            "stimulus": block[:, self._stimulus].view(np.float32),
        }
        masks = self._masks.copy()
        info = {
            "phase": labels[:, 0],
            "mode": labels[:, 1],
            "round_idx": ints[:, col["round_idx"]],
            "round_id": small[:, col["round_id"]],
            "game_index": ints[:, col["game"]],
            "target_decision": ints[:, col["target"]],
            "speaker_latents": ints[:, col["speaker_latents"]],
            "listener_latents": ints[:, col["listener_latents"]].reshape(self._listener_shape),
            "decided": decided,
            "correct": correct,
            "decision_phase": scored_labels[:, 0],
            "decision_mode": scored_labels[:, 1],
            "_phase": masks[0], "_mode": masks[1], "_round_idx": masks[2], "_round_id": masks[3],
            "_game_index": masks[4], "_target_decision": masks[5], "_speaker_latents": masks[6],
            "_listener_latents": masks[7], "_decided": masks[8], "_correct": masks[9], "_decision_phase": masks[10],
            "_decision_mode": masks[11],
        }
        return obs, info
