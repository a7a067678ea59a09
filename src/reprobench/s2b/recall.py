"""The single-agent recall task of S2B (specs/s2b.md section 5.7; the paper's Figure 5): a binding problem without
communication. Each game is two steps:

    A  the stimulus of a train-split combination (SCS: the N_dim continuous values; OHE: the concatenated one-hots)
    B  a query for a uniformly random dimension q (SCS: e_q; OHE: ones over dimension q's V_max slots); the action
       answers q's value index: reward 0 if right, -1 if wrong (the no-op included); step A's action is ignored

Observation: stimulus (D,) float32 (D = N_dim for SCS, N_dim * V_max for OHE) and previous_game_result (2,) int8
([1, 0] failure, [0, 1] success, zeros before the first answer). Action: Discrete(V_max + 1), the last one a no-op.
An episode draws a fresh symbolic space (SCS: d(i) ~ U{V_min..V_max}; OHE: d(i) = V_max, as the reference's factory
forces) and plays `nbr_shots` modes ("train0", "train1", ...) of n = min(max_episode_length // nbr_shots, #train)
games each (all train combinations when there is no cap: the SCS sweep; the OHE sweep caps at 10, so 5 per mode).
The sweeps' metric is the accuracy over the answers of mode "train1" (info `decision_mode`).

variant (section 6.3 item 13):
- "faithful" (default): each mode draws its n stimuli with replacement, independently of the other modes, and after
  the last mode the episode goes on for one more pass of n games labelled "train0" that all show the last (stale)
  stimulus: 30 steps instead of 20 with the OHE cap, 150 on average for SCS (the measured lengths).
- "corrected": the n stimuli are drawn once, without replacement, and every mode presents that same set (a fresh
  order per mode, as the paper's 'shots' are repetitions); no stale pass: 2 n nbr_shots steps.

Choices where the spec is silent: the stale pass follows the last mode whatever nbr_shots is, and draws fresh query
dimensions; the terminal observation repeats the last query with previous_game_result updated; the query dimensions
are drawn after the stimuli; object-centric samples are not used (O = 1, as in every recall run); the default
nbr_shots is 2 (the '-2Shots' id, the only one the paper reports). The corrected variant keeps the train split (the
paper's text says 'all the stimuli of the instantiated symbolic space'; the reference uses the train split).
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from reprobench.s2b import stimuli

REPRESENTATIONS = ("scs", "ohe")
OHE_MAX_EPISODE_LENGTH = 10  # the OHE sweep's cap (5 games per mode with 2 shots)
REWARD_RIGHT, REWARD_WRONG = 0.0, -1.0


class RecallGame(gymnasium.Env):
    """The recall task, one episode at a time (see the module docstring).

    max_episode_length: "auto" (the sweeps': no cap for SCS, 10 for OHE), None (no cap) or a positive integer.
    """

    metadata = {"render_modes": []}

    def __init__(self, representation: str = "scs", nbr_latents: int = 3, min_nbr_values_per_latent: int = 2,
                 max_nbr_values_per_latent: int = 5, nbr_shots: int = 2, max_episode_length: int | str | None = "auto",
                 variant: str = "faithful", seed: int | None = 1337, render_mode: str | None = None):
        if render_mode is not None:
            raise ValueError(f"render_mode must be None (nothing to render), got {render_mode!r}")
        if representation not in REPRESENTATIONS:
            raise ValueError(f"representation must be one of {REPRESENTATIONS}, got {representation!r}")
        if variant not in stimuli.VARIANTS:
            raise ValueError(f"variant must be one of {stimuli.VARIANTS}, got {variant!r}")
        self.representation, self.variant = representation, variant
        self.n_latents = stimuli.check_int("nbr_latents", nbr_latents, 2)
        self.v_max = stimuli.check_int("max_nbr_values_per_latent", max_nbr_values_per_latent, 2)
        self.v_min = self.v_max if representation == "ohe" else stimuli.check_int("min_nbr_values_per_latent",
                                                                     min_nbr_values_per_latent, 2)
        if self.v_min > self.v_max:
            raise ValueError(f"min_nbr_values_per_latent ({self.v_min}) must not exceed max_nbr_values_per_latent "
                             f"({self.v_max})")
        self.nbr_shots = stimuli.check_int("nbr_shots", nbr_shots, 1)
        if max_episode_length == "auto":
            max_episode_length = OHE_MAX_EPISODE_LENGTH if representation == "ohe" else None
        if max_episode_length is not None:
            max_episode_length = stimuli.check_int("max_episode_length", max_episode_length, self.nbr_shots)
        self.max_episode_length = max_episode_length
        if seed is not None:
            stimuli.check_int("seed", seed, 0)
        self._seed = seed
        dim = self.n_latents * (self.v_max if representation == "ohe" else 1)
        self.observation_space = spaces.Dict({
            "previous_game_result": spaces.MultiBinary(2),
            "stimulus": spaces.Box(-1.0, 1.0, (dim,), dtype=np.float32),
        })
        self.action_space = spaces.Discrete(self.v_max + 1)
        self.noop = self.v_max
        self._timeline: dict[str, np.ndarray] | None = None
        self._t = 0
        self._prev_result = np.zeros(2, dtype=np.int8)

    @property
    def n_steps(self) -> int:
        if self._timeline is None:
            raise RuntimeError("call reset() first")
        return len(self._timeline["stimulus"]) - 1

    def _draw(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        n_dims = self.n_latents
        if self.representation == "ohe":
            d = np.full(n_dims, self.v_max, dtype=np.int64)
            space = None
        else:
            space = stimuli.sample_space(rng, n_dims=n_dims, v_min=self.v_min, v_max=self.v_max, n_oc=1)
            d = space.n_values
        train, _ = stimuli.split(d, 1)  # O = 1: stimulus index = class
        n = len(train) if self.max_episode_length is None else min(self.max_episode_length // self.nbr_shots,
                                                                   len(train))
        if self.variant == "faithful":
            picks = [train[rng.integers(len(train), size=n)] for _ in range(self.nbr_shots)]
            picks.append(np.full(n, picks[-1][-1]))  # the stale pass
            shot = np.repeat([*range(self.nbr_shots), 0], n)
            stale = np.repeat([False] * self.nbr_shots + [True], n)
        else:
            chosen = rng.choice(train, size=n, replace=False)
            picks = [chosen[rng.permutation(n)] for _ in range(self.nbr_shots)]
            shot = np.repeat(np.arange(self.nbr_shots), n)
            stale = np.zeros(len(shot), dtype=bool)
        classes = np.concatenate(picks)
        g = len(classes)
        query = rng.integers(n_dims, size=g)
        coords = stimuli.coordinates(classes, d, 1)
        if self.representation == "ohe":
            shown = stimuli.one_hot(coords, d)
            asked = (np.arange(n_dims * self.v_max)[None, :] // self.v_max == query[:, None]).astype(np.float32)
        else:
            shown = stimuli.observe(space, coords, 0)
            asked = np.eye(n_dims, dtype=np.float32)[query]
        target = coords[np.arange(g), query]
        # observations 2g (stimulus) and 2g + 1 (query), then the terminal one (the last query again)
        stimulus = np.concatenate([np.stack([shown, asked], axis=1).reshape(2 * g, -1), asked[-1:]])
        game = np.append(np.repeat(np.arange(g), 2), g - 1)
        return {"stimulus": stimulus.astype(np.float32), "game": game, "is_query": np.arange(2 * g + 1) % 2 == 1,
                "target": target[game], "query_dim": query[game], "shot": shot[game], "stale": stale[game],
                "n_values": d}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is None and self._np_random is None and self._seed is not None:
            seed = self._seed
        super().reset(seed=seed)
        self._timeline = self._draw(self.np_random)
        self._t = 0
        self._prev_result = np.zeros(2, dtype=np.int8)
        return self._observation(0), self._info(0, False, False, "")

    def step(self, action):
        if self._timeline is None:
            raise RuntimeError("call reset() before step()")
        t, tl = self._t, self._timeline
        if t >= self.n_steps:
            raise RuntimeError("the episode has ended; call reset()")
        arr = np.asarray(action)
        if arr.size != 1 or not np.issubdtype(arr.dtype, np.integer) or not 0 <= int(arr.reshape(())) <= self.noop:
            raise ValueError(f"action must be one integer in [0, {self.noop}], got {action!r}")
        decided = bool(tl["is_query"][t])
        correct = decided and int(arr.reshape(())) == int(tl["target"][t])
        reward = 0.0
        decision_mode = ""
        if decided:
            reward = REWARD_RIGHT if correct else REWARD_WRONG
            self._prev_result = np.array([0, 1] if correct else [1, 0], dtype=np.int8)
            decision_mode = f"train{int(tl['shot'][t])}"
        self._t = t + 1
        return (self._observation(self._t), reward, self._t == self.n_steps, False,
                self._info(self._t, decided, correct, decision_mode))

    def _observation(self, t: int) -> dict[str, np.ndarray]:
        return {"previous_game_result": self._prev_result.copy(), "stimulus": self._timeline["stimulus"][t].copy()}

    def _info(self, t: int, decided: bool, correct: bool, decision_mode: str) -> dict:
        tl = self._timeline
        return {
            "mode": f"train{int(tl['shot'][t])}",
            "stale": bool(tl["stale"][t]),
            "is_query": bool(tl["is_query"][t]),
            "query_dim": int(tl["query_dim"][t]),
            "target": int(tl["target"][t]),
            "game_index": int(tl["game"][t]),
            "decided": bool(decided),
            "correct": bool(correct),
            "decision_mode": decision_mode,
        }
