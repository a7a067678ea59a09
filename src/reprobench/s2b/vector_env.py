"""Many S2B meta-referential game episodes stepped at once (gymnasium 1.x VectorEnv, next-step autoreset).

Sub-environment i is the single `MetaReferentialGame` seeded with seed + i (gymnasium's SyncVectorEnv convention,
`reset(seed=s)`; a list gives one seed each): it owns its own numpy Generator, and each episode is drawn whole by the
same `generate_episode` the single environment calls. step() is then array indexing into per-environment episode
timelines (padded to the longest, (num_envs, T_max + 1, ...)) and array arithmetic for rewards and previous_game_*;
so observations, rewards, terminations and infos equal those of num_envs single environments stepped in a loop
(gymnasium.vector.SyncVectorEnv), autoresets included.

Autoreset: AutoresetMode.NEXT_STEP (gymnasium's default): the step after a sub-environment terminates resets it,
ignores its action, and returns its reset observation with reward 0, terminated False and the reset info.
Infos are batched as gymnasium does: one array per key (object arrays for strings), with an all-True `_key` mask.

The one Python loop left in step() runs over the sub-environments that reset on this step, to draw their new
episodes: the component-focused sampler (reprobench.s2b.stimuli) is sequential within an episode. Over an episode of
~75-250 steps this costs one call per episode, not per step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from reprobench.s2b.env import (
    PHASES,
    Episode,
    action_space,
    generate_episode,
    make_config,
    mode_names,
    observation_space,
    reward_of,
)

_TIMELINE = ("stimulus", "comm", "mode", "shot", "round_idx", "game", "target", "decision", "speaker_latents",
             "listener_latents")
_DECISION_PHASES = np.array(["", *PHASES], dtype=object)  # indexed by decision mode + 1


class MetaReferentialGameVector(VectorEnv):
    """num_envs MetaReferentialGame episodes at once; the constructor takes the single environment's arguments."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, nbr_communication_rounds: int = 1, vocab_size: int = 6,
                 max_sentence_length: int = 3, descriptive: bool = False, nbr_latents: int = 3,
                 min_nbr_values_per_latent: int = 2, max_nbr_values_per_latent: int = 5,
                 nbr_object_centric_samples: int = 1, nbr_distractors: int = 1, observability: str = "full",
                 distractor_sampling: str = "uniform", descriptive_target_ratio: float | None = None,
                 object_centric: bool | None = None, nbr_shots: int = 1, sampling_strategy: str | None = None,
                 use_communication_channel_permutations: bool = True, allow_listener_query: bool = False,
                 provide_listener_feedback: bool = False, seed: int | None = 1337, variant: str = "faithful",
                 query_all: bool = False, speaker: str | Callable = "posdis", render_mode: str | None = None):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        if render_mode is not None:
            raise ValueError(f"render_mode must be None (nothing to render), got {render_mode!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0):
            raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
        self.config = make_config(
            nbr_communication_rounds, vocab_size, max_sentence_length, descriptive, nbr_latents,
            min_nbr_values_per_latent, max_nbr_values_per_latent, nbr_object_centric_samples, nbr_distractors,
            observability, distractor_sampling, descriptive_target_ratio, object_centric, nbr_shots,
            sampling_strategy, use_communication_channel_permutations, allow_listener_query,
            provide_listener_feedback, variant, query_all, speaker)
        self.num_envs = int(num_envs)
        self._seed = seed
        self.single_observation_space = observation_space(self.config)
        self.single_action_space = action_space(self.config)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._modes = mode_names(self.config)
        self._rngs: list[np.random.Generator] | None = None
        self.episodes: list[Episode | None] = [None] * self.num_envs
        self._buf: dict[str, np.ndarray] = {}
        self._n_steps = np.zeros(self.num_envs, dtype=np.int64)
        self._agent_id = np.zeros((self.num_envs, 10), dtype=np.float32)
        self._t = np.zeros(self.num_envs, dtype=np.int64)
        self._prev_reward = np.zeros(self.num_envs, dtype=np.float32)
        self._prev_result = np.zeros((self.num_envs, 2), dtype=np.int8)
        self._autoreset = np.zeros(self.num_envs, dtype=bool)

    # -- episodes --------------------------------------------------------------------------------------------------
    def _load(self, i: int) -> None:
        """Draw sub-environment i's next episode and copy its timeline into the padded buffers."""
        ep = generate_episode(self._rngs[i], self.config)
        self.episodes[i] = ep
        n_obs = ep.n_steps + 1
        if not self._buf or self._buf["round_idx"].shape[1] < n_obs:
            self._grow(max(n_obs, 2 * (self._buf["round_idx"].shape[1] if self._buf else 0)))
        for key in _TIMELINE:
            self._buf[key][i, :n_obs] = getattr(ep, key)
        self._n_steps[i] = ep.n_steps
        self._agent_id[i] = ep.other_agent_id
        self._t[i] = 0
        self._prev_reward[i] = 0.0
        self._prev_result[i] = 0

    def _grow(self, capacity: int) -> None:
        cfg = self.config
        shapes = {"stimulus": ((cfg.stimulus_dim,), np.float32), "comm": ((cfg.max_sentence_length,), np.int64),
                  "mode": ((), np.int8), "shot": ((), np.int64), "round_idx": ((), np.int64), "game": ((), np.int64),
                  "target": ((), np.int64), "decision": ((), bool), "speaker_latents": ((cfg.n_latents,), np.int64),
                  "listener_latents": ((cfg.n_distractors + 1, cfg.n_latents), np.int64)}
        for key, (shape, dtype) in shapes.items():
            new = np.zeros((self.num_envs, capacity, *shape), dtype=dtype)
            if key in self._buf:
                new[:, :self._buf[key].shape[1]] = self._buf[key]
            self._buf[key] = new

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
        for i in range(self.num_envs):
            self._load(i)
        self._autoreset[:] = False
        none = np.zeros(self.num_envs, dtype=bool)
        return self._observations(), self._infos(none, none, np.full(self.num_envs, -1))

    def step(self, actions):
        if self._rngs is None:
            raise RuntimeError("call reset() before step()")
        decision = self._decisions(actions)
        envs = np.arange(self.num_envs)
        resetting = self._autoreset
        t = self._t
        decided = ~resetting & self._buf["decision"][envs, t]
        correct = decided & (decision == self._buf["target"][envs, t])
        mode = self._buf["mode"][envs, t]
        rewards = np.where(decided, reward_of(correct, mode), 0.0).astype(np.float64)
        self._prev_reward = np.where(decided, rewards, self._prev_reward).astype(np.float32)
        self._prev_result = np.where(decided[:, None], np.stack([~correct, correct], axis=1).astype(np.int8),
                                     self._prev_result)
        self._t = np.where(resetting, t, t + 1)
        for i in np.flatnonzero(resetting):  # new episodes only (see the module docstring)
            self._load(int(i))
        terminations = ~resetting & (self._t == self._n_steps)
        truncations = np.zeros(self.num_envs, dtype=bool)
        self._autoreset = terminations.copy()
        infos = self._infos(decided, correct, np.where(decided, mode, -1))
        return self._observations(), rewards, terminations, truncations, infos

    def _decisions(self, actions) -> np.ndarray:
        value = actions["decision"] if isinstance(actions, Mapping) else actions
        arr = np.asarray(value)
        if arr.shape != (self.num_envs,) or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"actions decision must be ({self.num_envs},) integers, got shape {arr.shape} "
                             f"dtype {arr.dtype}")
        n = self.config.n_decisions
        if ((arr < 0) | (arr >= n)).any():
            raise ValueError(f"actions decision must lie in [0, {n}), got {arr.tolist()}")
        return arr.astype(np.int64)

    def _observations(self) -> dict[str, np.ndarray]:
        envs, t = np.arange(self.num_envs), self._t
        mode = np.zeros((self.num_envs, 2), dtype=np.int8)
        mode[envs, self._buf["mode"][envs, t]] = 1
        role = np.zeros((self.num_envs, 2), dtype=np.int8)
        role[:, 1] = 1
        return {
            "communication_channel": self._buf["comm"][envs, t],
            "mode_id": mode,
            "other_agent_id": self._agent_id.copy(),
            "previous_game_result": self._prev_result.copy(),
            "previous_game_reward": self._prev_reward[:, None].copy(),
            "role_id": role,
            "stimulus": self._buf["stimulus"][envs, t],
        }

    def _infos(self, decided: np.ndarray, correct: np.ndarray, decision_mode: np.ndarray) -> dict[str, np.ndarray]:
        envs, t = np.arange(self.num_envs), self._t
        r = self._buf["round_idx"][envs, t]
        round_id = np.zeros((self.num_envs, self.config.n_rounds + 1), dtype=np.int8)
        round_id[envs[r >= 0], r[r >= 0]] = 1
        info = {
            "phase": np.array(PHASES, dtype=object)[self._buf["mode"][envs, t]],
            "mode": self._modes[self._buf["shot"][envs, t] + 1],
            "round_idx": r,
            "round_id": round_id,
            "game_index": self._buf["game"][envs, t],
            "target_decision": self._buf["target"][envs, t],
            "speaker_latents": self._buf["speaker_latents"][envs, t],
            "listener_latents": self._buf["listener_latents"][envs, t],
            "decided": decided.copy(),
            "correct": correct.copy(),
            "decision_phase": _DECISION_PHASES[np.asarray(decision_mode) + 1],
        }
        for key in list(info):
            info[f"_{key}"] = np.ones(self.num_envs, dtype=bool)
        return info
