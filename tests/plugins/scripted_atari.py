"""A scripted AMTLB architecture for the tests: a user's class named in the config (amtlb.architecture =
'scripted_atari:ScriptedAtari') that implements the architecture API without subclassing reprobench's
Architecture. It learns nothing: each slot presses FIRE (1) at the start of an episode, then cycles through the 18
actions, and counts what it was told, so a test can check what the benchmark passes in."""

from __future__ import annotations

import json
import os

import numpy as np

FIRE, N_ACTIONS = 1, 18


class ScriptedAtari:
    def __init__(self, num_envs: int, seed: int, device: str = "cpu", total_steps: int | None = None):
        self.num_envs = num_envs
        self.phase = np.zeros(num_envs, dtype=np.int64)  # agent steps since the slot's episode began
        self.calls, self.episodes, self.score = 0, 0, 0.0  # what the benchmark has told it

    def act(self, observations: np.ndarray, rewards: np.ndarray, episode_starts: np.ndarray) -> np.ndarray:
        assert observations.shape == (self.num_envs, 4, 84, 84) and observations.dtype == np.uint8
        self.calls += 1
        self.score += float(np.sum(rewards))
        self.episodes += int(np.sum(episode_starts))
        self.phase = np.where(episode_starts, 0, self.phase + 1)
        return np.where(self.phase == 0, FIRE, self.phase % N_ACTIONS).astype(np.int64)

    def clone(self) -> ScriptedAtari:
        twin = ScriptedAtari(self.num_envs, 0)
        twin.load_state_dict(self.state_dict())
        return twin

    def save(self, path: str | os.PathLike) -> None:
        with open(path, "w") as f:
            json.dump({"scripted_atari": 1}, f)

    def load(self, path: str | os.PathLike) -> None:
        with open(path) as f:
            assert json.load(f) == {"scripted_atari": 1}
        self.phase[:] = 0

    def state_dict(self) -> dict:
        return {"phase": self.phase.tolist(), "calls": self.calls, "episodes": self.episodes, "score": self.score}

    def load_state_dict(self, state: dict) -> None:
        self.phase = np.asarray(state["phase"], dtype=np.int64)
        self.calls, self.episodes, self.score = int(state["calls"]), int(state["episodes"]), float(state["score"])
