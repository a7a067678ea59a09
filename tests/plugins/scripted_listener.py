"""A scripted S2B listener for the tests: a user's agent (reprobench.s2b.agents) that reads the right decision from
the environment's info, so that every one of its decisions is right and its Table 2 row is exactly 100%."""

from __future__ import annotations

import numpy as np


class PerfectListener:
    def __init__(self, observation_space, action_space, num_envs: int, seed: int, device: str):
        self.num_envs, self.steps = num_envs, 0

    def act(self, observation, info):
        return np.asarray(info["target_decision"], dtype=np.int64)

    def observe(self, observation, reward, terminated, truncated, info) -> None:
        self.steps += 1  # nothing to learn

    def policy(self):
        return self
