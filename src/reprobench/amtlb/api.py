"""The architecture API: what a researcher implements to put an architecture (network and learning rule) under test.

The benchmark owns the episode loop. It steps `num_envs` emulator slots in lockstep and, at every agent step, calls
`act(observations, rewards, episode_starts)` once for the whole batch; the architecture learns inside `act`. It is
never told which game a slot plays: slots switch games between episodes, and every game shares the full action space
of 18 actions. A class is named in the config as `amtlb: {architecture: "package.module:Class"}`; it need not
subclass `Architecture`, only have its constructor and the methods of REQUIRED_METHODS. The builtins are "ppo"
(reprobench.amtlb.ppo) and "random" (reprobench.amtlb.random_agent).
"""

from __future__ import annotations

import copy
import os

import numpy as np

from reprobench.core.errors import ConfigError
from reprobench.core.plugins import USER_CLASS, load_class

KEY = "amtlb.architecture"
REQUIRED_METHODS = ("act", "clone", "save", "load", "state_dict", "load_state_dict")


class Architecture:
    """The successor of the original `amtlb.Agent`. Observations are (N, 4, 84, 84) uint8 (four stacked 84x84
    grayscale frames per slot); actions are (N,) int64 in [0, 18)."""

    def __init__(self, num_envs: int, seed: int, device: str = "cpu", total_steps: int | None = None):
        """`num_envs` slots; `seed` makes the run reproducible; `device` is "cpu" or "cuda[:N]"; `total_steps` is the
        horizon of schedules such as a learning-rate annealing, in agent steps per slot:
        `amtlb.schedule_frames_per_game` frames per game of the run (default 40M, the 10M agent steps of the PPO
        references), or the run's own length where that is null (None when unknown; it may be ignored)."""
        self.num_envs, self.seed, self.device, self.total_steps = num_envs, seed, device, total_steps

    def act(self, observations: np.ndarray, rewards: np.ndarray, episode_starts: np.ndarray) -> np.ndarray:
        """The actions for `observations`. `rewards` (N,) float64 is the raw (unclipped) score of each slot's previous
        action (0 at the first call); `episode_starts` (N,) bool says that the observation begins a new episode, so
        the slot's previous action ended one (all True at the first call). Learn here."""
        raise NotImplementedError

    def clone(self) -> Architecture:
        """A deep copy (weights and learning state) that shares nothing with this instance."""
        return copy.deepcopy(self)

    def save(self, path: str | os.PathLike) -> None:
        """Write the weights ("saved weights") to `path`; the same weights give the same bytes."""
        raise NotImplementedError

    def load(self, path: str | os.PathLike) -> None:
        """"Reset to saved weights": the weights of `path`, with a fresh optimiser, empty buffers and restarted
        schedules. The next `act` starts afresh (its `rewards` belong to no action of this instance)."""
        raise NotImplementedError

    def state_dict(self) -> dict:
        """Everything an exact resume needs (weights, optimiser, buffers, random generators, counters), as values that
        `torch.save` writes and `torch.load(weights_only=True)` reads (tensors, numbers, strings, lists, dicts)."""
        raise NotImplementedError

    def load_state_dict(self, state: dict) -> None:
        """Continue exactly where the instance that wrote `state` was."""
        raise NotImplementedError


def _builtin() -> dict[str, type]:
    # Imported here, not at the top: PPO and RandomAgent subclass Architecture, so they import this module.
    from reprobench.amtlb.ppo import PPO
    from reprobench.amtlb.random_agent import RandomAgent

    return {"ppo": PPO, "random": RandomAgent}


def __getattr__(name: str):
    if name == "BUILTIN":  # {"ppo": PPO, "random": RandomAgent}, resolved lazily (see _builtin)
        return _builtin()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def architecture_class(spec: str, key: str = KEY) -> type:
    """The class of a builtin name ("ppo", "random") or of a user's "package.module:Class"; a ConfigError naming `key`
    when it is neither, does not import, or lacks one of REQUIRED_METHODS."""
    builtin = _builtin()
    if spec in builtin:
        return builtin[spec]
    if not isinstance(spec, str) or not USER_CLASS.match(spec):
        raise ConfigError(key, f"unknown architecture {spec!r}: use one of {sorted(builtin)} or 'package.module:Class'")
    cls = load_class(spec, key)
    if not isinstance(cls, type):
        raise ConfigError(key, f"'{spec}' is not a class")
    for method in REQUIRED_METHODS:
        if not callable(getattr(cls, method, None)):
            raise ConfigError(key, f"the class '{spec}' lacks the required method '{method}' "
                                   f"(an architecture needs {', '.join(REQUIRED_METHODS)})")
    return cls


def make_architecture(spec: str, num_envs: int, seed: int, device: str, total_steps: int | None) -> Architecture:
    """A fresh instance of the architecture `spec` names (see architecture_class)."""
    cls = architecture_class(spec)
    return cls(num_envs=num_envs, seed=seed, device=device, total_steps=total_steps)
