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


def hash24(state, index):
    """The top 24 bits of splitmix64 at `state[:, None] + index` (int64; the stream's integer part). Integer
    arithmetic only, so any compiler gives these bits; the float conversion is left to the caller."""
    z = state[:, None] + index
    for shift, mult in ((30, _MIX1), (27, _MIX2)):
        z = (z ^ _srl(z, shift)) * mult
    return _srl(z, 40)  # the skipped last xor-shift of splitmix64 does not touch the top 24 bits


def stream_index(batch_size: int, input_size: int, device=None):
    import torch

    return (torch.arange(1, batch_size * input_size + 1, dtype=torch.int64, device=device)) * _GOLDEN


def _lowest_bit(value: float) -> int:
    """e such that 2**e is the largest power of two dividing the float `value` (not zero)."""
    num, den = float(value).as_integer_ratio()
    return ((num & -num).bit_length() - 1) - (den.bit_length() - 1)


def sums_are_exact(low: float, high: float, count: int) -> bool:
    """Whether a float64 sum of `count` training inputs of U[low, high) is exact, so that its order does not matter.

    Every input is fl32(low + fl32(span * k 2^-24)) with span = fl32(high) - fl32(low): a multiple of
    2^q, q = min(lowest bit of low, lowest bit of span - 24) (rounding to float32 only drops bits below that), and
    at most max(|low|, |high|) in magnitude. A sum of `count` of them (all partial sums too) is then a multiple of
    2^q below count * max(|low|, |high|), exact in float64 if that is at most 2^(q + 53). True for every range of
    the paper (U[1, 2] and 25 terms need 30 bits)."""
    low32, high32 = np.float32(low), np.float32(high)
    span = np.float32(high32 - low32)
    if span <= 0:
        return False
    q = _lowest_bit(span) - 24
    if low32 != 0:
        q = min(q, _lowest_bit(low32))
    return count * max(abs(float(low32)), abs(float(high32))) <= 2.0 ** (q + 53)


_KERNEL = None


def _fused_kernel():
    """The numba kernel of BatchStream (compiled once, cached on disk next to this module)."""
    global _KERNEL
    if _KERNEL is None:
        import numba

        golden, mix1, mix2 = (np.uint64(c % 2**64) for c in (_GOLDEN, _MIX1, _MIX2))

        @numba.njit(cache=True, nogil=True)
        def fill(mixed_keys, step, low, span, starts, sizes, widths, x, sums, shifted, eps):
            """x[s, r, j] = low[s] + span[s] * u for j < widths[s] (seed s's input size; x beyond it is left alone),
            u the top 24 bits of splitmix64 (see uniform_stream); with sums not empty, sums[s, k, r] = the float64
            sum of x[s, r, starts[s, k] : starts[s, k] + sizes[s]]; with shifted not empty, shifted = |x| + eps in
            float32 (the argument of the models' log), the whole row."""
            n_seeds, rows, width = x.shape
            scale = np.float32(1.0 / (1 << 24))
            for s in range(n_seeds):
                z = np.uint64(mixed_keys[s]) + np.uint64(step)
                z = (z ^ (z >> np.uint64(30))) * mix1
                z = (z ^ (z >> np.uint64(27))) * mix2
                state = z ^ (z >> np.uint64(31))
                lo, sp = low[s], span[s]
                n = widths[s]
                for r in range(rows):
                    base = np.uint64(r * n + 1)
                    for j in range(n):
                        z = state + (base + np.uint64(j)) * golden
                        z = (z ^ (z >> np.uint64(30))) * mix1
                        z = (z ^ (z >> np.uint64(27))) * mix2
                        # the last xor-shift of splitmix64 leaves the top 24 bits unchanged: skipped
                        x[s, r, j] = lo + sp * (np.float32(z >> np.uint64(40)) * scale)
                    if shifted.shape[0]:
                        for j in range(width):
                            shifted[s, r, j] = np.abs(x[s, r, j]) + eps
                    if sums.shape[0]:
                        for k in range(2):
                            total = 0.0
                            for j in range(starts[s, k], starts[s, k] + sizes[s]):
                                total += np.float64(x[s, r, j])
                            sums[s, k, r] = total

        _KERNEL = fill
    return _KERNEL


class BatchStream:
    """The training batches of one setting's seeds, into buffers reused at every step.

    `next(step)` returns x (seeds, batch, input) float32, equal bit for bit to `uniform_stream`, and the float64
    subset sums a, b (seeds, 2, batch), equal bit for bit to the masked float64 sum over x. With `log_eps`, `log_x`
    then holds torch.log(torch.abs(x) + log_eps), bit for bit (the models' first log). On a CPU one numba kernel
    draws x, sums the subsets and shifts |x| in one pass (the sums where `sums_are_exact`, else the masked sum of
    the trainer before, in torch); on other devices the same splitmix64 runs as a dozen in-place int64 torch ops
    (no host sync), or with `compiled`, as one kernel that torch.compile makes of `hash24` (integer arithmetic: the
    same bits; about a fifth of the memory traffic on a GPU); there the exact sums are one float64 batched product
    (any order gives their bits). The returned tensors are overwritten by the next call.

    `widths` gives each seed's own input size where they differ (a padded pack): seed s's x is its own stream in
    columns [0, widths[s]) and exactly zero beyond, up to `input_size`, the largest."""

    def __init__(self, keys: list[int], batch_size: int, input_size: int, low, high, subsets: list[Subsets],
                 device=None, fused: bool | None = None, log_eps: float | None = None, widths=None,
                 compiled: bool = False):
        import torch

        self.device = torch.device(device or "cpu")
        n = len(keys)
        low = np.broadcast_to(np.asarray(low, np.float32), (n,)).copy()
        high = np.broadcast_to(np.asarray(high, np.float32), (n,)).copy()
        span = (high - low).astype(np.float32)
        self.fused = self.device.type == "cpu" if fused is None else fused
        # each seed's own decision: where every sum is exact, the kernel's order gives the masked sum's bits
        self.exact = all(sums_are_exact(lo, hi, sub.subset_size) for lo, hi, sub in zip(low, high, subsets))
        self.masks = torch.tensor(subset_masks(subsets, input_size), device=self.device)  # float64
        widths = np.broadcast_to(np.asarray(input_size if widths is None else widths, np.int64), (n,)).copy()
        self.padded = bool((widths != input_size).any())
        self.x = torch.zeros(n, batch_size, input_size, dtype=torch.float32, device=self.device)
        self.sums = torch.empty(n, 2, batch_size, dtype=torch.float64, device=self.device)
        self.log_eps = log_eps
        self.log_x = torch.empty_like(self.x) if log_eps is not None else None
        keys = torch.tensor(keys, dtype=torch.int64)
        self.mixed_keys = _mix(keys * _GOLDEN).to(self.device)
        if self.fused:
            self._np = (self.mixed_keys.numpy().view(np.uint64), low, span,
                        np.array([[sub.a.start, sub.b.start] for sub in subsets], np.int64),
                        np.array([sub.subset_size for sub in subsets], np.int64), widths,
                        self.x.numpy(), self.sums.numpy() if self.exact else np.empty((0, 2, 0)),
                        self.log_x.numpy() if log_eps is not None else np.empty((0, 0, 0), np.float32),
                        np.float32(log_eps or 0))
            _fused_kernel()
        else:
            self.index = stream_index(batch_size, input_size, self.device)[None, :]
            if self.padded:  # each seed's own element numbers; its padding is zeroed after the draw
                cols = torch.arange(input_size)
                inside = cols[None, :] < torch.tensor(widths)[:, None]  # (seeds, input)
                rows = torch.arange(batch_size)[None, :, None] * torch.tensor(widths)[:, None, None]
                number = torch.where(inside[:, None, :], rows + cols + 1, 0).reshape(n, -1)
                self.index = (number * _GOLDEN).to(self.device)
                self.inside = inside[:, None, :].to(self.x.dtype).to(self.device)
            self.low = torch.tensor(low, device=self.device).reshape(-1, 1)
            self.span = torch.tensor(span, device=self.device).reshape(-1, 1)
            self.scratch = torch.empty(n, batch_size * input_size, dtype=torch.int64, device=self.device)
            self.z = torch.empty_like(self.scratch)
            self.hash = torch.compile(hash24, dynamic=False) if compiled else None

    def next(self, step: int):
        """(x, sums) of training step `step`."""
        import torch

        if self.fused:
            _fused_kernel()(self._np[0], step, *self._np[1:])
            if self.log_x is not None:
                self.log_x.log_()  # torch's log (the kernel wrote |x| + eps): the same bits as the models' own
        else:
            self._draw_in_place(step)
            if self.log_x is not None:
                torch.abs(self.x, out=self.log_x).add_(self.log_eps).log_()
        if self.fused and self.exact:
            pass  # the kernel wrote them
        elif self.exact and self.hash is not None:
            torch.bmm(self.masks, self.x.double().transpose(1, 2), out=self.sums)
        else:
            self.sums.copy_((self.x.double()[:, None, :, :] * self.masks[:, :, None, :]).sum(-1))
        return self.x, self.sums

    def _draw_in_place(self, step: int) -> None:
        import torch

        z, t = self.z, self.scratch
        state = _mix(self.mixed_keys + step)
        if self.hash is not None:
            t = self.hash(state, self.index)
        else:
            torch.add(state[:, None], self.index, out=z)
            for shift, mult in ((30, _MIX1), (27, _MIX2)):
                torch.bitwise_right_shift(z, shift, out=t)
                z.bitwise_xor_(t.bitwise_and_((1 << (64 - shift)) - 1)).mul_(mult)
            torch.bitwise_right_shift(z, 40, out=t)  # top 24 bits (the skipped last xor-shift does not touch them)
            t.bitwise_and_((1 << 24) - 1)
        x = self.x.view(len(z), -1)
        x.copy_(t).mul_(1.0 / (1 << 24)).mul_(self.span).add_(self.low)
        if self.padded:
            self.x.mul_(self.inside)
