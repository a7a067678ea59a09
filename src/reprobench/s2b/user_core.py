"""A user's recurrent core in Table 4, next to the Archi LSTM, ESBN and DCEM (docs/PLUGINS.md, "s2b").

The class is named in the config as a key of `s2b.experiments.seeds.table4` ('package.module:Class': its seeds). It
replaces only the core: the Archi encoder before it, the dueling head after it, the R2D2 learner, the replay, the
burn-in and the auxiliary reconstruction stay Table 4's (the Archi LSTM's preset, `table4_lstm`). Its contract:

    core = Class(input_size)                  input_size: the encoder's output width (245 at the reference sizes)
    core.out_dim                              int: the width of h
    core.state_spec()                         {name: (shape, dtype)} of the per-sample recurrent state; every tensor
                                              is zeros at an episode's start, and the replay stores and restores it
                                              at the start of every training sequence (before the burn-in)
    h, state = core(x, state)                 one step: x (B, input_size), state {name: (B, *shape)} -> h (B, out_dim)
    core.recon_features(h, state) (optional)  what the auxiliary reconstruction reads, (B, core.recon_dim); without
                                              it the reconstruction reads h

`UserCore` wraps it into the `cores.Core` interface (unroll loops over time) and checks the first step's shapes,
naming the config key. The user's module keeps its own initialisation (`cores.initialise` skips it); the run's seed
is set before it is built, so the same seed gives the same weights.
"""

from __future__ import annotations

import torch
from torch import Tensor

from reprobench.core.errors import ConfigError
from reprobench.core.plugins import load_class
from reprobench.s2b.cores import Core
from reprobench.s2b.grid import USER_CORE_EXPERIMENT

KEY = f"s2b.experiments.seeds.{USER_CORE_EXPERIMENT}"  # its plan-time check: grid.Grid.check (grid.CORE_METHODS)
PRESET = ("table4_lstm", True)  # the preset around a user's core (Archi encoder, Table 4's R2D2) and recon on


class UserCore(Core):
    """A user's core (module docstring) behind the `cores.Core` interface."""

    own_init = True

    def __init__(self, spec: str, in_dim: int):
        super().__init__()
        self.spec = spec
        self.inner = load_class(spec, KEY)(in_dim)
        if not isinstance(self.inner, torch.nn.Module):
            raise ConfigError(KEY, f"'{spec}'({in_dim}) is not a torch.nn.Module")
        for name in ("out_dim",) + (("recon_dim",) if hasattr(self.inner, "recon_features") else ()):
            value = getattr(self.inner, name, None)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(KEY, f"'{spec}' needs a positive integer attribute {name}, got {value!r}")
        self.in_dim, self.out_dim = in_dim, self.inner.out_dim
        self.recon_dim = getattr(self.inner, "recon_dim", self.out_dim)
        spec_ = self.state_spec()
        if not isinstance(spec_, dict) or not spec_ or not all(
                isinstance(k, str) and isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], torch.dtype)
                for k, v in spec_.items()):
            raise ConfigError(KEY, f"'{spec}'.state_spec() must return a non-empty {{name: (shape, dtype)}}, got "
                              f"{spec_!r}")
        self._checked = False

    def state_spec(self):
        return {k: (tuple(shape), dtype) for k, (shape, dtype) in self.inner.state_spec().items()}

    def forward(self, x: Tensor, state: dict[str, Tensor]):
        h, new = self.inner(x, state)
        if not self._checked:
            self._check(x, h, new)
        return h, new

    def recon_features(self, h: Tensor, state: dict[str, Tensor]) -> Tensor:
        if not hasattr(self.inner, "recon_features"):
            return h
        features = self.inner.recon_features(h, state)
        if tuple(features.shape) != (h.shape[0], self.recon_dim):
            raise ConfigError(KEY, f"'{self.spec}'.recon_features returned shape {tuple(features.shape)}; expected "
                              f"({h.shape[0]}, recon_dim = {self.recon_dim})")
        return features

    def _check(self, x: Tensor, h, new) -> None:
        """The first step's outputs against the contract (module docstring)."""
        b = x.shape[0]
        if not isinstance(h, Tensor) or tuple(h.shape) != (b, self.out_dim):
            got = tuple(h.shape) if isinstance(h, Tensor) else type(h).__name__
            raise ConfigError(KEY, f"'{self.spec}'.forward(x {tuple(x.shape)}, state) returned h of shape {got}; "
                              f"expected ({b}, out_dim = {self.out_dim})")
        want = {k: (b, *shape) for k, (shape, _) in self.state_spec().items()}
        got = {k: tuple(v.shape) for k, v in new.items()} if isinstance(new, dict) else None
        if got != want:
            raise ConfigError(KEY, f"'{self.spec}'.forward returned a state of shapes {got}; state_spec() says "
                              f"{want}")
        self._checked = True
