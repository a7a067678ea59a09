"""The environments the R2D2 trainer drives (reprobench.s2b.train, TrainConfig.task), behind one interface: the
meta-referential game's vector environment as it is, and the recall task (Figure 5) seen through the same keys.

    env = make_env(task, env_kwargs, num_envs, seed)   # MetaReferentialGameVector or RecallListenerView
    env.config.{stimulus_dim, vocab_size, max_sentence_length, n_rounds, n_decisions, nbr_shots}
    obs, info = env.reset(seed=s); obs, reward, terminated, truncated, info = env.step(decisions)
    obs: stimulus, communication_channel, role_id, mode_id, previous_game_result, previous_game_reward
    info: round_id (one-hot), round_idx, mode, decided, correct, target_decision

The recall task as a listener's game (RecallListenerView): one round per game, step A (the stimulus) is round 0 and
step B (the query) the decision round 1, so the network's decision mask allows only the no-op at A and the V_max
value answers at B (the reference's agent could also pick its no-op at B, scored wrong: never better). The inputs
the recall task does not have are zeros: the channel (one EoS token, L = 1, V = 1), role, mode and the previous
game's reward; the reference's recall agent saw {stimulus, previous_game_result} only, and a zero input adds nothing
but the bias the layer has anyway. Its modes are train0, train1 (no query phase: "test" decisions never happen).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reprobench.s2b.recall_vector import RecallGameVector
from reprobench.s2b.vector_env import MetaReferentialGameVector

TASKS = ("meta_rg", "recall", "marl")  # marl: both players learned (reprobench.s2b.marl, Table 1)


@dataclass(frozen=True)
class RecallConfig:
    """The fields of a game config that the trainer reads, for the recall task."""

    stimulus_dim: int
    n_decisions: int
    nbr_shots: int
    vocab_size: int = 1
    max_sentence_length: int = 1
    n_rounds: int = 1


class RecallListenerView:
    """RecallGameVector with the meta-referential game's observation and info keys (module docstring)."""

    def __init__(self, num_envs: int, seed: int, **kwargs):
        self.env = RecallGameVector(num_envs=num_envs, seed=seed, **kwargs)
        self.num_envs = num_envs
        self.config = RecallConfig(stimulus_dim=self.env.single_observation_space["stimulus"].shape[0],
                                   n_decisions=self.env.noop, nbr_shots=self.env.envs[0].nbr_shots)
        self._zeros2 = np.zeros((num_envs, 2), dtype=np.int8)

    def _view(self, obs, info):
        query = np.asarray(info["is_query"], dtype=bool)
        view = {"stimulus": obs["stimulus"], "communication_channel": np.zeros((self.num_envs, 1), dtype=np.int64),
                "role_id": self._zeros2, "mode_id": self._zeros2,
                "previous_game_result": obs["previous_game_result"],
                "previous_game_reward": np.zeros((self.num_envs, 1), dtype=np.float32)}
        extra = {"round_id": np.eye(2, dtype=np.float32)[query.astype(np.int64)], "round_idx": query.astype(np.int64),
                 "target_decision": np.asarray(info["target"], dtype=np.int64)}
        return view, {**info, **extra}

    def reset(self, *, seed=None, options=None):
        return self._view(*self.env.reset(seed=seed, options=options))

    def step(self, decisions):
        obs, reward, terminated, truncated, info = self.env.step(np.asarray(decisions, dtype=np.int64))
        view, info = self._view(obs, info)
        return view, reward, terminated, truncated, info


def make_env(task: str, env_kwargs, num_envs: int, seed: int):
    """The vector environment of `task` ("meta_rg", "recall" or "marl": the two-player game) with `env_kwargs`."""
    if task == "meta_rg":
        return MetaReferentialGameVector(num_envs=num_envs, seed=seed, **env_kwargs)
    if task == "recall":
        return RecallListenerView(num_envs, seed, **env_kwargs)
    if task == "marl":
        from reprobench.s2b.marl_env import MetaReferentialGameTwoPlayerVector

        return MetaReferentialGameTwoPlayerVector(num_envs=num_envs, seed=seed, **env_kwargs)
    raise ValueError(f"task must be one of {TASKS}, got {task!r}")
