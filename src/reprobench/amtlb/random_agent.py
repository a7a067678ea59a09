"""The random agent: uniform actions over the 18 of the full action space, learning nothing. Its fresh runs are the
floor of the random-normalised transfer ratio (specs/amtlb.md 1.7)."""

from __future__ import annotations

import json
import os

import numpy as np

from reprobench.amtlb.api import Architecture
from reprobench.core import atomic

N_ACTIONS = 18
MARK = {"architecture": "random", "weights": None}  # the whole of its "saved weights"


class RandomAgent(Architecture):
    def __init__(self, num_envs: int, seed: int, device: str = "cpu", total_steps: int | None = None):
        self.num_envs, self.seed, self.device, self.total_steps = int(num_envs), int(seed), device, total_steps
        self.rng = np.random.default_rng(int(seed))

    def act(self, observations: np.ndarray, rewards: np.ndarray, episode_starts: np.ndarray) -> np.ndarray:
        return self.rng.integers(0, N_ACTIONS, size=self.num_envs, dtype=np.int64)

    def save(self, path: str | os.PathLike) -> None:
        atomic.write_text(path, json.dumps(MARK) + "\n")

    def load(self, path: str | os.PathLike) -> None:
        """Checks that `path` is a random agent's file; there is nothing to reset (the generator runs on)."""
        with open(path) as f:
            try:
                saved = json.load(f)
            except (json.JSONDecodeError, UnicodeDecodeError):
                saved = None
        if saved != MARK:
            raise ValueError(f"{path} is not a random agent's saved file")

    def state_dict(self) -> dict:
        return {"num_envs": self.num_envs, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        if int(state["num_envs"]) != self.num_envs:
            raise ValueError(f"the state belongs to a random agent with num_envs={state['num_envs']}, "
                             f"not {self.num_envs}")
        self.rng.bit_generator.state = state["rng"]
