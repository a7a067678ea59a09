"""Many S2B recall episodes stepped at once (gymnasium 1.x VectorEnv, next-step autoreset).

Sub-environment i is the single `RecallGame` seeded with seed + i (gymnasium's SyncVectorEnv convention,
`reset(seed=s)`; a list gives one seed each, None keeps a sub-environment's generator). Exactness comes by
construction: the vector env holds one RecallGame per sub-environment and starts each episode with that env's own
reset() (its seeding rules, its generator, its `_draw`), then reads the drawn timeline. So observations, rewards,
terminations and infos equal those of num_envs single environments stepped in a loop (gymnasium.vector.SyncVectorEnv),
autoresets included. The RecallGame objects only draw timelines: their own step() is never called.

Speed: the current timelines are packed into a padded (num_envs, T_max, D) stimulus buffer and a (num_envs, T_max, 6)
int buffer (target, query_dim, game, shot, is_query, stale), T_max grown (doubled) when a longer timeline arrives.
step() gathers row t of every sub-environment with array indexing and computes rewards, correct, decided and
previous_game_result with array arithmetic; the only Python loop runs over the sub-environments whose episode starts.

Autoreset: AutoresetMode.NEXT_STEP (gymnasium's default): the step after a sub-environment terminates resets it,
ignores its action, and returns its reset observation with reward 0, terminated False and the reset info.
Infos are batched as gymnasium does: one array per key of RecallGame's info (object arrays for strings), with an
all-True `_key` mask; no other key is added (the loop of single envs has none). The actions are checked as a whole,
those of resetting sub-environments included. options["reset_mask"] (partial resets) is not supported: ValueError.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from reprobench.s2b.recall import REWARD_RIGHT, REWARD_WRONG, RecallGame
from reprobench.s2b.vector_env import sub_seeds

_FIELDS = ("target", "query_dim", "game", "shot", "is_query", "stale")  # the int buffer's columns
_TARGET, _QUERY_DIM, _GAME, _SHOT, _IS_QUERY, _STALE = range(len(_FIELDS))
# indexed by decided + correct: 0 no answer, 1 wrong, 2 right (also the previous_game_result code)
_REWARDS = np.array([0.0, REWARD_WRONG, REWARD_RIGHT])
_RESULTS = np.array([[0, 0], [1, 0], [0, 1]], dtype=np.int8)  # previous_game_result: none yet, failure, success
_INFO_KEYS = ("mode", "stale", "is_query", "query_dim", "target", "game_index", "decided", "correct", "decision_mode")


class RecallGameVector(VectorEnv):
    """num_envs RecallGame episodes at once (see the module docstring); the constructor takes RecallGame's
    arguments and checks them the same way (it builds one RecallGame per sub-environment)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, representation: str = "scs", nbr_latents: int = 3,
                 min_nbr_values_per_latent: int = 2, max_nbr_values_per_latent: int = 5, nbr_shots: int = 2,
                 max_episode_length: int | str | None = "auto", variant: str = "faithful", seed: int | None = 1337,
                 render_mode: str | None = None):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        self.num_envs = n = int(num_envs)
        kwargs = dict(representation=representation, nbr_latents=nbr_latents,
                      min_nbr_values_per_latent=min_nbr_values_per_latent,
                      max_nbr_values_per_latent=max_nbr_values_per_latent, nbr_shots=nbr_shots,
                      max_episode_length=max_episode_length, variant=variant, render_mode=render_mode)
        first = RecallGame(**kwargs, seed=seed)  # checks every argument, the seed included
        self.envs = [first] + [RecallGame(**kwargs, seed=None if seed is None else seed + i) for i in range(1, n)]
        self._seed = seed
        self.noop = first.noop
        self.single_observation_space = first.observation_space
        self.single_action_space = spaces.Discrete(first.noop + 1)
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self._modes = np.array([f"train{k}" for k in range(first.nbr_shots)], dtype=object)
        self._decision_modes = np.array(["", *self._modes], dtype=object)  # indexed by decided * (shot + 1)
        self._dim = first.observation_space["stimulus"].shape[0]
        self._arange = np.arange(n)
        self._stimulus = np.zeros((n, 0, self._dim), dtype=np.float32)  # the current timelines, padded
        self._ints = np.zeros((n, 0, len(_FIELDS)), dtype=np.int64)
        self._n_steps = np.ones(n, dtype=np.int64)
        self._t = np.zeros(n, dtype=np.int64)
        self._prev_result = np.zeros(n, dtype=np.int64)  # 0 none yet, 1 failure, 2 success
        self._autoreset = np.zeros(n, dtype=bool)
        self._started = False

    # -- timelines -------------------------------------------------------------------------------------------------
    def _grow(self, rows: int) -> None:
        """Make room for timelines of `rows` observations (at least doubling, so growth is rare)."""
        new = max(rows, 2 * self._stimulus.shape[1])
        for name in ("_stimulus", "_ints"):
            old = getattr(self, name)
            grown = np.zeros((old.shape[0], new, old.shape[2]), dtype=old.dtype)
            grown[:, :old.shape[1]] = old
            setattr(self, name, grown)

    def _start(self, i: int, seed: int | None = None) -> None:
        """Start sub-environment i's next episode: its RecallGame's reset (drawing the timeline), then packed."""
        env = self.envs[i]
        env.reset(seed=seed)
        tl = env._timeline
        rows = len(tl["stimulus"])
        if rows > self._stimulus.shape[1]:
            self._grow(rows)
        self._stimulus[i, :rows] = tl["stimulus"]
        self._ints[i, :rows] = np.stack([tl[name] for name in _FIELDS], axis=1)
        self._n_steps[i] = rows - 1
        self._t[i] = 0
        self._prev_result[i] = 0

    # -- API -------------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict | None = None):
        """Reset every sub-environment: seed + i each (int), seeds[i] (a list), or, unseeded, the constructor's
        seed + i on the first reset and the generators' continuation afterwards."""
        if options is not None and "reset_mask" in options:
            raise ValueError("options['reset_mask'] (partial resets) is not supported")
        seeds = sub_seeds(self, seed)
        for i, s in enumerate(seeds):
            self._start(i, s)
        self._autoreset[:] = False
        self._started = True
        n = self.num_envs
        return self._observe(np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64))

    def step(self, actions):
        if not self._started:
            raise RuntimeError("call reset() before step()")
        actions = self._check(actions)
        resetting = self._autoreset
        cur = self._ints[self._arange, self._t]
        decided = cur[:, _IS_QUERY].astype(bool) & ~resetting  # (a terminal row is no query anyway)
        correct = decided & (actions == cur[:, _TARGET])
        outcome = decided.view(np.int8) + correct  # 0 no answer, 1 wrong, 2 right (bool + bool would be `or`)
        rewards = _REWARDS.take(outcome)
        np.copyto(self._prev_result, outcome, where=decided)
        self._t += 1
        for i in np.flatnonzero(resetting).tolist():
            self._start(i)
        terminations = self._t == self._n_steps
        self._autoreset = terminations
        obs, infos = self._observe(decided, correct, decided * (cur[:, _SHOT] + 1))
        return obs, rewards, terminations.copy(), np.zeros(self.num_envs, dtype=bool), infos

    def _check(self, actions) -> np.ndarray:
        arr = np.asarray(actions)
        if arr.shape != (self.num_envs,) or arr.dtype.kind not in "iu":
            raise ValueError(f"actions must be an integer array of shape ({self.num_envs},), got shape {arr.shape} "
                             f"dtype {arr.dtype}")
        if ((arr < 0) | (arr > self.noop)).any():
            raise ValueError(f"actions must lie in [0, {self.noop}] ({self.noop}: the no-op), got {arr.tolist()}")
        return arr

    def _observe(self, decided: np.ndarray, correct: np.ndarray, decision_mode: np.ndarray):
        """The observations and infos of row t of every sub-environment (decision_mode: 0 for no answer, else the
        answered game's shot + 1)."""
        ints = self._ints[self._arange, self._t]
        obs = {
            "previous_game_result": _RESULTS.take(self._prev_result, axis=0),
            "stimulus": self._stimulus[self._arange, self._t],
        }
        values = (self._modes.take(ints[:, _SHOT]), ints[:, _STALE].astype(bool), ints[:, _IS_QUERY].astype(bool),
                  ints[:, _QUERY_DIM], ints[:, _TARGET], ints[:, _GAME], decided, correct,
                  self._decision_modes.take(decision_mode))
        masks = np.ones((len(_INFO_KEYS), self.num_envs), dtype=bool)
        infos = {}
        for key, value, mask in zip(_INFO_KEYS, values, masks):
            infos[key], infos[f"_{key}"] = value, mask
        return obs, infos
