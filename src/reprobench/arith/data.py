"""The simple function task (specs/arith.md, section 1), exactly as the reference code defines it.

Two contiguous subsets of x are summed, a = sum x[off : off+S], b = sum x[off+S-O : off+2S-O], with
S = floor(subset * n), O = floor(overlap * S) (a fraction of the subset, not of the input), and an integer
offset drawn once per seed. The target is op(a, b).

Random streams:
- offset and training-stream key: numpy's legacy RandomState(seed), in the reference's order
  (offset first, then the fork seed, 2546248239 for seed 0);
- validation and test sets: fixed 10,000-sample sets from RandomState(43953907) and RandomState(8689336),
  the same x for every seed and model, as in the reference;
- training batches: a counter-based stream (splitmix64 of key and element index) so that seed s's batch at
  step t is a pure function of (s, t). It does not depend on which seeds share a batched model, on the
  device, or on where a resumed run restarts. (The reference drew batches from the forked RandomState; its
  exact bytes are not reproduced, see docs/DEVIATIONS.md.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

VALIDATION_FORK_SEED = 43953907
TEST_FORK_SEED = 8689336
OPERATIONS = ("add", "sub", "mul", "div", "squared", "root")


@dataclass(frozen=True)
class Subsets:
    subset_size: int
    overlap_size: int
    offset: int

    @property
    def a(self) -> slice:
        return slice(self.offset, self.offset + self.subset_size)

    @property
    def b(self) -> slice:
        start = self.offset + self.subset_size - self.overlap_size
        return slice(start, start + self.subset_size)


def subset_sizes(input_size: int, subset_ratio: float, overlap_ratio: float) -> tuple[int, int]:
    """(S, O) with floors as in the reference; raises ValueError if the two subsets do not fit."""
    s = math.floor(subset_ratio * input_size)
    o = math.floor(overlap_ratio * s)
    if s < 1:
        raise ValueError(f"subset ratio {subset_ratio} of input size {input_size} leaves an empty subset")
    if 2 * s - o > input_size:
        raise ValueError(f"subsets of {s} with overlap {o} need {2 * s - o} positions, input size is {input_size}")
    return s, o


def dataset_rng(seed: int, input_size: int, subset_ratio: float, overlap_ratio: float) -> tuple[Subsets, int]:
    """The per-seed subset positions and the training-stream key, drawn in the reference's order."""
    s, o = subset_sizes(input_size, subset_ratio, overlap_ratio)
    rng = np.random.RandomState(seed)
    offset = int(rng.randint(0, input_size - (2 * s - o) + 1))
    stream_key = int(rng.randint(0, 2**32 - 1))
    return Subsets(s, o, offset), stream_key


def apply_operation(op: str, a, b):
    """op(a, b) for numpy arrays or torch tensors."""
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / b
    if op == "squared":
        return a * a
    if op == "root":
        return a**0.5
    raise ValueError(f"unknown operation '{op}' (known: {', '.join(OPERATIONS)})")


def subset_masks(subsets: list[Subsets], input_size: int) -> np.ndarray:
    """(seeds, 2, input_size) 0/1 masks of subsets a and b."""
    masks = np.zeros((len(subsets), 2, input_size))
    for i, sub in enumerate(subsets):
        masks[i, 0, sub.a] = 1
        masks[i, 1, sub.b] = 1
    return masks


def fixed_set(fork_seed: int, size: int, input_size: int, low: float, high: float) -> np.ndarray:
    """A fixed evaluation set, float64, U[low, high), shared by every seed (reference fork seeds)."""
    return np.random.RandomState(fork_seed).uniform(low, high, size=(size, input_size))


def targets(x: np.ndarray, masks: np.ndarray, op: str) -> np.ndarray:
    """(seeds, samples) float64 targets op(a, b) for a shared x (samples, input_size)."""
    ab = np.einsum("ni,sji->sjn", x, masks)
    return apply_operation(op, ab[:, 0], ab[:, 1])


# splitmix64 constants, as signed 64-bit integers (torch has no uint64 arithmetic)
_GOLDEN = 0x9E3779B97F4A7C15 - 2**64
_MIX1 = 0xBF58476D1CE4E5B9 - 2**64
_MIX2 = 0x94D049BB133111EB - 2**64


def _srl(z, bits: int):
    """Logical right shift of int64 tensors (torch's >> is arithmetic)."""
    return (z >> bits) & ((1 << (64 - bits)) - 1)


def _mix(z):
    """The splitmix64 finaliser: a bijection of 64-bit integers with good avalanche."""
    z = (z ^ _srl(z, 30)) * _MIX1
    z = (z ^ _srl(z, 27)) * _MIX2
    return z ^ _srl(z, 31)


def uniform_stream(keys, step: int, batch_size: int, input_size: int, low, high, index=None):
    """(seeds, batch, input) float32 uniforms on [low, high) for training step `step`.

    A seed with key k gets, at step t, the state s = mix(mix(k) + t) and, for element j, the value
    mix(s + (j + 1) * golden) (splitmix64's split and next). It is a pure function of (k, t, j): identical
    on every device and independent of the other seeds in the batch. `keys` is an int64 tensor (seeds,);
    `low`/`high` are scalars or (seeds,) tensors; `index` may hold the precomputed (j + 1) * golden.
    """
    import torch

    if index is None:
        index = stream_index(batch_size, input_size, keys.device)
    state = _mix(_mix(keys * _GOLDEN) + step)
    z = _mix(state[:, None] + index[None, :])
    u = _srl(z, 40).to(torch.float32) * (1.0 / (1 << 24))  # top 24 bits: exact in float32
    u = u.view(len(keys), batch_size, input_size)
    low = torch.as_tensor(low, dtype=torch.float32, device=keys.device).reshape(-1, 1, 1)
    high = torch.as_tensor(high, dtype=torch.float32, device=keys.device).reshape(-1, 1, 1)
    return low + (high - low) * u


def stream_index(batch_size: int, input_size: int, device=None):
    import torch

    return (torch.arange(1, batch_size * input_size + 1, dtype=torch.int64, device=device)) * _GOLDEN
