"""A user's arithmetic unit (docs/PLUGINS.md, arith), trained as the paper's models are: one instance per member of a
training job (a (setting, seed) run), side by side in one module so that the trainer, the evaluation and the
checkpoints treat it as BatchedNetwork. Each unit is built as Class(input_size, hidden_size, seed) right after
torch.manual_seed(seed) and is called as unit(x) with x (batch, input_size), returning (batch,) or (batch, 1). Optional:
`regularizer()`, a scalar added to the unit's loss, and `weights()`, the tensors whose sparsity error (max over
entries of min(|w|, |1 - |w||)) the table reports (NaN, and no sparsity statistic, without it). The units run one
after another: a user's module is not batched over seeds.
"""

from __future__ import annotations

import torch
from torch import nn

from reprobench.arith.paper import USER_KEY
from reprobench.core.errors import ConfigError
from reprobench.core.plugins import load_class


class UserNetwork(nn.Module):
    def __init__(self, spec: str, input_sizes: list[int], hidden_sizes: list[int], seeds: list[int],
                 dtype=torch.float32):
        super().__init__()
        cls = load_class(spec, USER_KEY)
        units = []
        for n, h, seed in zip(input_sizes, hidden_sizes, seeds):
            torch.manual_seed(seed)
            units.append(cls(n, h, seed))
        if not all(isinstance(u, nn.Module) for u in units):
            raise ConfigError(USER_KEY, f"'{spec}' built a {type(units[0]).__name__}, not a torch.nn.Module")
        self.spec, self.units, self.widths = spec, nn.ModuleList(units), list(input_sizes)
        self.to(dtype)

    def forward(self, x, log_x=None, members=None):
        """x: (members, batch, input) or a shared (batch, input), zero-padded to the job's widest input; returns
        (members, batch), or the `members` (index tensor) only."""
        index = range(len(self.units)) if members is None else members.tolist()
        out = []
        for row, i in enumerate(index):
            xi = (x[i] if members is None else x[row]) if x.dim() == 3 else x
            y = self.units[i](xi[:, : self.widths[i]])
            if y.dim() == 2 and y.shape[1] == 1:
                y = y[:, 0]
            if tuple(y.shape) != (xi.shape[0],):
                raise ConfigError(USER_KEY, f"'{self.spec}' returned {tuple(y.shape)} for a batch of "
                                  f"{tuple(xi[:, : self.widths[i]].shape)}; it must return (batch,) or (batch, 1)")
            out.append(y)
        return torch.stack(out)

    def regularizer(self):
        """The sum of the units' regularizer() (each unit's own gradient), or 0."""
        terms = [u.regularizer() for u in self.units if callable(getattr(u, "regularizer", None))]
        return sum(terms) if terms else 0.0

    @torch.no_grad()
    def sparsity_error(self):
        """(members,) as BatchedNetwork's over the tensors of each unit's weights(); NaN where it has none."""
        errors = []
        for u in self.units:
            tensors = list(u.weights()) if callable(getattr(u, "weights", None)) else []
            if not tensors:
                errors.append(torch.tensor(float("nan")))
                continue
            errors.append(torch.stack([torch.minimum(w.abs(), (1 - w.abs()).abs()).max() for w in tensors]).max())
        return torch.stack([e.float() for e in errors])
