"""Symbolic Continuous Stimuli (SCS) of one S2B episode, as the reference dataset builds them (specs/s2b.md
sections 1.1-1.8): the symbolic space, its object-centric samples, the 'combinatorial2' support/query split, the
'component-focused-<S>shots' sampling of both phases, and which object-centric sample each player sees.

    space = sample_space(rng, n_dims=3, v_min=2, v_max=5, n_oc=4)     # resampled on every episode
    train, test = split(space.n_values, space.n_oc)                      # stimulus indices, ascending
    support = component_focused_sampling(rng, space.n_values, train, space.n_oc, shots=1, phase="support")
    query = component_focused_sampling(rng, space.n_values, test, space.n_oc, shots=1, phase="query")
    x = observe(space, coordinates(support, space.n_values, space.n_oc), support % space.n_oc)

Conventions (the reference's):

- A combination is a coordinate vector c = (c_1..c_N), c_i in [0, d(i)); combinations are numbered row-major, first
  dimension most significant (np.ravel_multi_index). With O object-centric (OC) samples per (dimension, value), the
  stimulus-centric index of combination k with OC index j is k * O + j, and its class is k.
- Per dimension i: d(i) ~ U{v_min..v_max} (inclusive), and for each value v: sigma ~ U(2/(12 d) + 1e-8,
  2/(6 d) - 1e-8) and mean = -1 + 2v/d + 3 sigma + U(0, 1) (2/d - 6 sigma), so that the +-3 sigma band lies inside the
  value's section of [-1, 1]. O samples x_{i,v,j} ~ N(mean, sigma) are drawn once per episode and never clipped; a
  stimulus uses the same j on every dimension.
- Randomness comes from the numpy Generator passed in (same seed, same arrays). The reference used the global numpy
  and random generators, so its draws cannot be reproduced bit for bit; the distributions are the same.
- Many episodes at once (the environments use these): sample_spaces, split_batch and component_focused_sampling_batch
  draw the same quantities for a batch of episodes with array operations, every random number of an episode being a
  function of its 64-bit key (see 'many episodes at once' below), so that an episode does not depend on its batch.
- Arrays over values are padded to max d(i) (nan, or False in masks, beyond d(i)) so that everything vectorises.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

EPS = 1e-8  # the reference's margin on the sigma bounds
STEP = 100.0  # the component-focused sampler's weight step
MAX_TRIALS = 10  # duplicate draws before the sampler allows replacement
TRIALS_BEFORE_ACCEPTING = 5  # duplicate draws, once replacement is allowed, before one is accepted
VARIANTS = ("faithful", "corrected")


@dataclass(frozen=True)
class SymbolicSpace:
    """One episode's symbolic space and its object-centric samples.

    n_values: (N,) int64, d(i). means, sigmas: (N, V) float64 with V = max d(i), nan where v >= d(i).
    oc_samples: (N, V, O) float64, x_{i,v,j}, nan where v >= d(i).
    """

    n_values: np.ndarray
    means: np.ndarray
    sigmas: np.ndarray
    oc_samples: np.ndarray

    @property
    def n_dims(self) -> int:
        return len(self.n_values)

    @property
    def n_oc(self) -> int:
        return self.oc_samples.shape[2]

    @property
    def n_combinations(self) -> int:
        return int(np.prod(self.n_values))

    @property
    def n_stimuli(self) -> int:
        return self.n_combinations * self.n_oc


def check_int(name: str, value, minimum: int) -> int:
    """`value` as an int, or a ValueError naming `name` (bools are not integers here)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _positive_int(name: str, value) -> int:
    return check_int(name, value, 1)


def _check_n_values(n_values) -> np.ndarray:
    d = np.asarray(n_values)
    if d.ndim != 1 or len(d) == 0 or not np.issubdtype(d.dtype, np.integer) or (d < 1).any():
        raise ValueError(f"n_values must be a non-empty 1-D array of positive integers, got {n_values!r}")
    return d.astype(np.int64)


def sample_space(rng: np.random.Generator, n_dims: int = 3, v_min: int = 2, v_max: int = 5, n_oc: int = 1,
                 n_values=None) -> SymbolicSpace:
    """A fresh symbolic space (section 1.1) with its OC samples (section 1.2). n_values fixes d(i) instead of drawing
    them (Appendix D.2 uses d(i) = 5 for every i); then n_dims, v_min and v_max are ignored."""
    n_oc = _positive_int("n_oc", n_oc)
    if n_values is None:
        n_dims, v_min, v_max = (_positive_int(k, v) for k, v in (("n_dims", n_dims), ("v_min", v_min),
                                                                   ("v_max", v_max)))
        if v_min > v_max:
            raise ValueError(f"v_min ({v_min}) must not exceed v_max ({v_max})")
        d = rng.integers(v_min, v_max + 1, size=n_dims)
    else:
        d = _check_n_values(n_values)
    n, width = len(d), int(d.max())
    valid = np.arange(width)[None, :] < d[:, None]  # (N, V)
    section = 2.0 / d[:, None]  # (N, 1)
    sigma = rng.uniform(section / 12 + EPS, section / 6 - EPS, size=(n, width))
    mean = -1.0 + np.arange(width)[None, :] * section + 3 * sigma + rng.uniform(size=(n, width)) * (section - 6 * sigma)
    samples = rng.normal(mean[..., None], sigma[..., None], size=(n, width, n_oc))
    sigma, mean = np.where(valid, sigma, np.nan), np.where(valid, mean, np.nan)
    samples = np.where(valid[..., None], samples, np.nan)
    return SymbolicSpace(n_values=d, means=mean, sigmas=sigma, oc_samples=samples)


def combinations(n_values) -> np.ndarray:
    """Every combination in index order: (prod d, N) int64, row-major (first dimension most significant)."""
    d = _check_n_values(n_values)
    return np.stack(np.unravel_index(np.arange(int(np.prod(d))), tuple(d)), axis=1).astype(np.int64)


def combination_index(coords, n_values) -> np.ndarray:
    """(n,) int64 class indices of (n, N) coordinates (the reference's coord2idx)."""
    d = _check_n_values(n_values)
    coords = np.asarray(coords)
    if coords.ndim != 2 or coords.shape[1] != len(d):
        raise ValueError(f"coords must have shape (n, {len(d)}), got {coords.shape}")
    if (coords < 0).any() or (coords >= d).any():
        raise ValueError(f"coords out of range for n_values {d.tolist()}")
    return np.ravel_multi_index(tuple(coords.T), tuple(d)).astype(np.int64)


def coordinates(stimulus_idx, n_values, n_oc: int = 1) -> np.ndarray:
    """(n, N) int64 latent classes of stimulus-centric indices (class = idx // O)."""
    d = _check_n_values(n_values)
    idx = np.asarray(stimulus_idx, dtype=np.int64)
    n_oc = _positive_int("n_oc", n_oc)
    if (idx < 0).any() or (idx >= np.prod(d) * n_oc).any():
        raise ValueError(f"stimulus indices out of range [0, {int(np.prod(d)) * n_oc})")
    return np.stack(np.unravel_index(idx // n_oc, tuple(d)), axis=-1).astype(np.int64)


def uniform_coordinates(rng: np.random.Generator, n_values, n: int) -> np.ndarray:
    """(n, N) int64 i.i.d. uniform combinations (disentanglement_lib's sample_factors for a full factor grid)."""
    d = _check_n_values(n_values)
    return rng.integers(0, d, size=(_positive_int("n", n), len(d)))


def observe(space: SymbolicSpace, coords, oc_index) -> np.ndarray:
    """SCS stimuli (n, N) float32 (the reference's `experiences` dtype): x_{i, c_i, j} for each row c with its OC
    index j ((n,) ints, or one int for all rows)."""
    coords = np.asarray(coords)
    if coords.ndim != 2 or coords.shape[1] != space.n_dims:
        raise ValueError(f"coords must have shape (n, {space.n_dims}), got {coords.shape}")
    if (coords < 0).any() or (coords >= space.n_values).any():
        raise ValueError(f"coords out of range for n_values {space.n_values.tolist()}")
    j = np.broadcast_to(np.asarray(oc_index, dtype=np.int64), (len(coords),))
    if (j < 0).any() or (j >= space.n_oc).any():
        raise ValueError(f"oc_index out of range [0, {space.n_oc})")
    return space.oc_samples[np.arange(space.n_dims)[None, :], coords, j[:, None]].astype(np.float32)


def latent_values(space: SymbolicSpace, coords) -> np.ndarray:
    """(n, N) float64 value means of each coordinate (the reference's `exp_latents_values`)."""
    coords = np.asarray(coords)
    return space.means[np.arange(space.n_dims)[None, :], coords]


def one_hot(coords, n_values) -> np.ndarray:
    """The OHE/MHE alternative to SCS: per-dimension one-hots concatenated, (n, sum d) float32 (the reference's
    `exp_latents_one_hot_encoded`; the recall task's OHE fixes d(i) = v_max, giving 15 dimensions for 3 x 5)."""
    d = _check_n_values(n_values)
    coords = np.asarray(coords)
    combination_index(coords, d)  # validates shape and range
    offsets = np.concatenate([[0], np.cumsum(d)[:-1]])
    out = np.zeros((len(coords), int(d.sum())), dtype=np.float32)
    out[np.arange(len(coords))[:, None], offsets[None, :] + coords] = 1.0
    return out


def query_value_mask(coords, test_set_divider: int = 2) -> np.ndarray:
    """(n, N) bool: which dimensions hold a 'test value', (v + 1) % test_set_divider == 0, i.e. the odd value indices
    for the hard-coded divider 2 (the reference's `test_latents_mask`)."""
    test_set_divider = _positive_int("test_set_divider", test_set_divider)
    return (np.asarray(coords) + 1) % test_set_divider == 0


def is_query_combination(coords, threshold: int = 2, test_set_divider: int = 2) -> np.ndarray:
    """(n,) bool: the combination belongs to the test (querying) split, i.e. at least `threshold` of its dimensions
    hold a test value ('combinatorial2': never two test values together in support)."""
    threshold = _positive_int("threshold", threshold)
    return query_value_mask(coords, test_set_divider).sum(axis=1) >= threshold


def split(n_values, n_oc: int = 1, threshold: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """The 'combinatorial<threshold>' split (section 1.4): (train, test) stimulus-centric indices, each ascending,
    int64. With e_i = ceil(d_i / 2), o_i = floor(d_i / 2) and threshold 2: #train combinations = prod e +
    sum_i o_i prod_{j != i} e_j."""
    n_oc = _positive_int("n_oc", n_oc)
    test = is_query_combination(combinations(n_values), threshold)
    stimuli = np.arange(len(test) * n_oc, dtype=np.int64)
    in_test = np.repeat(test, n_oc)
    return stimuli[~in_test], stimuli[in_test]


def component_focused_sampling(rng: np.random.Generator, n_values, split_indices, n_oc: int, shots: int,
                               phase: str) -> np.ndarray:
    """Stimulus-centric indices of one phase, in presentation order (section 1.5): draw coordinates from per-value
    weights (100 (S+1) at first, less 100 per pick, floor 100) until every value of every dimension was picked S
    times. A draw outside the split is replaced by a split stimulus with probability proportional to
    1 / (sum_l (10 (c'_l - c_l))^2 + 1e-3). Duplicated combinations are redrawn, up to the reference's limits.
    If S * sum d exceeds the split's size, the support phase allows duplicates from the start and the query phase
    ('query') returns the whole split in index order (section 1.6).

    split_indices: the phase's stimulus-centric indices (from `split`). Returns (n,) int64.
    """
    d = _check_n_values(n_values)
    n_oc, shots = _positive_int("n_oc", n_oc), _positive_int("shots", shots)
    if phase not in ("support", "query"):
        raise ValueError(f"phase must be 'support' or 'query', got {phase!r}")
    split_indices = np.asarray(split_indices, dtype=np.int64)
    if split_indices.ndim != 1 or len(split_indices) == 0:
        raise ValueError("split_indices must be a non-empty 1-D array of stimulus indices")
    valid = coordinates(split_indices, d, n_oc)  # (M, N)
    allow_replacement = False
    if shots * d.sum() > len(split_indices):
        if phase == "query":
            return split_indices.copy()
        allow_replacement = True
    missing = [(i, v) for i in range(len(d)) for v in range(d[i]) if not (valid[:, i] == v).any()]
    if missing:  # the reference would loop for ever: that value's weight can never come down
        raise ValueError(f"(dimension, value) {missing[0]} never occurs in split_indices, so it can never be sampled "
                         f"{shots} times")

    width = int(d.max())
    weights = np.where(np.arange(width)[None, :] < d[:, None], STEP * (shots + 1), 0.0)  # (N, V)
    member = np.zeros(int(np.prod(d)) * n_oc, dtype=bool)
    member[split_indices] = True
    seen: set[int] = set()
    out: list[int] = []
    trials = 0
    strides = np.concatenate([np.cumprod(d[::-1])[::-1][1:], [1]])
    while True:
        cum = np.cumsum(weights, axis=1)
        coord = np.minimum((cum <= rng.random(len(d))[:, None] * cum[:, -1:]).sum(axis=1), d - 1)
        combo = int(coord @ strides)
        if combo in seen:  # the reference's duplicate handling, trial counter carried across draws
            if not allow_replacement:
                trials += 1
                if trials > MAX_TRIALS:
                    allow_replacement, trials = True, 0
                continue
            if trials < TRIALS_BEFORE_ACCEPTING:
                trials += 1
                continue
            trials = 0
        idx = combo * n_oc + int(rng.integers(n_oc))
        if member[idx]:
            out.append(idx)
        else:
            p = 1.0 / (np.square(10.0 * (valid - coord)).sum(axis=1) + 1e-3)
            r = int(rng.choice(len(p), p=p / p.sum()))
            out.append(int(split_indices[r]))
            coord = valid[r]
            combo = int(coord @ strides)
        seen.add(combo)
        picked = weights[np.arange(len(d)), coord]
        weights[np.arange(len(d)), coord] = np.maximum(STEP, picked - STEP)
        if (weights.sum(axis=1) / d <= STEP).all():
            return np.asarray(out, dtype=np.int64)


def player_oc_indices(rng: np.random.Generator, stimulus_idx, n_oc: int, variant: str = "faithful"
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Which OC sample of each target the speaker and the listener see (section 1.3): (speaker_j, listener_j), each
    (n,) int64, for a listener that keeps the target.

    The listener's copy is another stimulus of the target's class: uniform over the O - 1 OC indices other than the
    target's own (idx % O); with O = 1 it is the target itself. 'faithful': the speaker sees a uniformly random OC
    index, not the target's, so the two players see the same vector with probability 1/O (the reference's quirk).
    'corrected': the speaker sees the target's own OC index, so for O > 1 the listener never sees the speaker's vector.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    n_oc = _positive_int("n_oc", n_oc)
    idx = np.asarray(stimulus_idx, dtype=np.int64)
    own = idx % n_oc
    if n_oc == 1:
        listener = own.copy()
    else:  # uniform over the other O - 1 indices: skip over the target's own
        listener = rng.integers(n_oc - 1, size=idx.shape)
        listener = listener + (listener >= own)
    speaker = rng.integers(n_oc, size=idx.shape) if variant == "faithful" else own.copy()
    return speaker.astype(np.int64), listener.astype(np.int64)


# -- many episodes at once ------------------------------------------------------------------------------------------
# The functions above draw from a numpy Generator, one episode at a time. The ones below draw the same quantities for
# a batch of episodes with array operations. Each episode is identified by a 64-bit key, and every random number of
# the episode is a pure function of (key, stream, index): output number stream * 2**40 + index of SplitMix64 seeded
# with the key (Steele, Lea & Flood 2014, the generator of java.util.SplittableRandom). An episode's draws therefore do
# not depend on which other episodes share its batch, nor on their order: one episode drawn alone equals the same
# episode drawn among a thousand, which is what lets the vector environment equal a loop of single ones.

GAMMA = 0x9E3779B97F4A7C15  # SplitMix64's increment
_GAMMA = np.uint64(GAMMA)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_LOW32 = np.uint64(0xFFFFFFFF)
STREAM_BITS = 40  # an index within a stream lies below 2**40
# the streams of this module (reprobench.s2b.env uses 32 and up)
S_NVALUES, S_SIGMA, S_MEAN, S_NORMAL_R, S_NORMAL_THETA = range(5)
S_CF = {"support": (8, 9), "query": (10, 11)}  # component-focused sampling: the draws, the replacements
MAX_DISTANCE_TABLE = 128  # grid sizes (width**N) up to which the replacement draw is tabulated per n_values
MAX_CODE_TABLE = 1 << 20  # entries of the weight-code tables, beyond which the sampler loops over values


def counter_bits(keys, stream, index) -> np.ndarray:
    """uint64 random bits, broadcast over keys (uint64), stream and index (non-negative ints): output number
    stream * 2**40 + index of SplitMix64 seeded with each key."""
    counter = (np.asarray(stream, dtype=np.uint64) << np.uint64(STREAM_BITS)) | np.asarray(index, dtype=np.uint64)
    return _mix(np.asarray(keys, dtype=np.uint64) + (counter + np.uint64(1)) * _GAMMA)


def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def _duplicate_rule() -> np.ndarray:
    """The reference's handling of a duplicate draw as a table over state = 16 * (replacement allowed) + trials:
    2 * next state + (the duplicate is accepted)."""
    rule = np.zeros(32, dtype=np.int64)
    for trials in range(16):
        # not allowed yet: redraw, and allow replacement (trials reset) after more than MAX_TRIALS redraws
        rule[trials] = 2 * (16 if trials + 1 > MAX_TRIALS else trials + 1)
        # allowed: redraw while trials < TRIALS_BEFORE_ACCEPTING, then accept and reset the trials
        rule[16 + trials] = 2 * (16 + trials + 1) if trials < TRIALS_BEFORE_ACCEPTING else 2 * 16 + 1
    return rule


_DUPLICATE_RULE = _duplicate_rule()


def counter_uniform(keys, stream, index) -> np.ndarray:
    """Uniform float64 in [0, 1) with 53 random bits, from counter_bits."""
    return (counter_bits(keys, stream, index) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def counter_integers(keys, stream, index, n) -> np.ndarray:
    """Uniform int64 in [0, n) (n >= 1, broadcast like index): floor(u n) of counter_uniform."""
    n = np.asarray(n, dtype=np.int64)
    return np.minimum((counter_uniform(keys, stream, index) * n).astype(np.int64), n - 1)


def _keys(keys) -> np.ndarray:
    keys = np.asarray(keys)
    if keys.ndim != 1 or len(keys) == 0 or not np.issubdtype(keys.dtype, np.integer):
        raise ValueError(f"keys must be a non-empty 1-D array of integer episode keys, got {keys!r}")
    return keys.astype(np.uint64)


def _n_values_batch(n_values, n_keys: int) -> np.ndarray:
    d = np.asarray(n_values)
    if d.ndim != 2 or d.shape[0] != n_keys or d.shape[1] == 0 or not np.issubdtype(d.dtype, np.integer) or (
            d < 1).any():
        raise ValueError(f"n_values must be ({n_keys}, N) positive integers, one row per key, got {n_values!r}")
    return d.astype(np.int64)


@dataclass(frozen=True)
class SymbolicSpaces:
    """A batch of symbolic spaces: n_values (B, N) int64; means, sigmas (B, N, W) and oc_samples (B, N, W, O) float64,
    W = v_max, nan where v >= d(i)."""

    n_values: np.ndarray
    means: np.ndarray
    sigmas: np.ndarray
    oc_samples: np.ndarray

    def space(self, b: int) -> SymbolicSpace:
        """Episode b's space, padded to its own max d(i) as sample_space pads it."""
        width = int(self.n_values[b].max())
        return SymbolicSpace(n_values=self.n_values[b].copy(), means=self.means[b, :, :width].copy(),
                             sigmas=self.sigmas[b, :, :width].copy(), oc_samples=self.oc_samples[b, :, :width].copy())


def sample_n_values(keys, n_dims: int = 3, v_min: int = 2, v_max: int = 5) -> np.ndarray:
    """The d(i) of sample_spaces alone: (B, N) int64, d(i) ~ U{v_min..v_max}."""
    keys = _keys(keys)
    return v_min + counter_integers(keys[:, None], S_NVALUES, np.arange(n_dims)[None, :], v_max - v_min + 1)


def sample_spaces(keys, n_dims: int = 3, v_min: int = 2, v_max: int = 5, n_oc: int = 1) -> SymbolicSpaces:
    """sample_space (sections 1.1-1.2) for a batch of episode keys: the same distributions (d(i) ~ U{v_min..v_max},
    sigma and mean by the same formulas), with the OC samples' N(mean, sigma) by the Box-Muller transform."""
    keys = _keys(keys)
    n_oc = _positive_int("n_oc", n_oc)
    n_dims, v_min, v_max = (_positive_int(k, v) for k, v in (("n_dims", n_dims), ("v_min", v_min), ("v_max", v_max)))
    if v_min > v_max:
        raise ValueError(f"v_min ({v_min}) must not exceed v_max ({v_max})")
    k = keys[:, None, None]
    d = sample_n_values(keys, n_dims, v_min, v_max)
    cell = (np.arange(n_dims)[:, None] * v_max + np.arange(v_max)[None, :])[None]  # (1, N, W)
    value = np.arange(v_max)[None, None, :]
    valid = value < d[:, :, None]
    section = 2.0 / d[:, :, None]
    low, high = section / 12 + EPS, section / 6 - EPS
    sigma = low + (high - low) * counter_uniform(k, S_SIGMA, cell)
    mean = -1.0 + value * section + 3 * sigma + counter_uniform(k, S_MEAN, cell) * (section - 6 * sigma)
    j = cell[..., None] * n_oc + np.arange(n_oc)  # (1, N, W, O)
    radius = np.sqrt(-2.0 * np.log1p(-counter_uniform(k[..., None], S_NORMAL_R, j)))
    normal = radius * np.cos(2.0 * np.pi * counter_uniform(k[..., None], S_NORMAL_THETA, j))
    samples = mean[..., None] + sigma[..., None] * normal
    return SymbolicSpaces(n_values=d, means=np.where(valid, mean, np.nan), sigmas=np.where(valid, sigma, np.nan),
                          oc_samples=np.where(valid[..., None], samples, np.nan))


def grid(n_dims: int, width: int) -> np.ndarray:
    """(width**n_dims, n_dims) int64: every coordinate of the padded grid, row-major. For an episode with every
    d(i) <= width, the coordinates inside its d come in its own index order (row-major order is lexicographic)."""
    return combinations(np.full(n_dims, width))


def strides(n_values) -> np.ndarray:
    """(..., N) int64 row-major strides of each episode's combinations (rows of n_values): class = coords @ strides."""
    d = np.asarray(n_values, dtype=np.int64)
    return np.concatenate([np.cumprod(d[..., :0:-1], axis=-1)[..., ::-1], np.ones_like(d[..., :1])], axis=-1)


def class_tables(n_values, width: int | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Lookup tables of each episode's classes (rows of n_values, every d(i) <= width): (ids (B,), tables), where
    row ids[b] of tables 'split' (U, 2, C) holds the classes of the support (0) and query (1) halves of the
    'combinatorial2' split in index order (padded with -1), 'size' (U, 2) their counts, 'rank' (U, 2, C) each class's
    position in them (-1 if absent), 'coords' (U, C, N) each class's coordinates; C = width**N. Computed once per
    distinct n_values; read-only."""
    d = np.asarray(n_values, dtype=np.int64)
    tables = _SplitTables.get(d.shape[1], int(d.max()) if width is None else width)
    return tables.lookup(d), tables.arrays


def split_batch(n_values, n_oc: int, phase: str, width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """split() row by row: each episode's train ('support') or test ('query') stimulus-centric indices, ascending,
    as (B, M) int64 padded with -1, and the (B,) counts. width (>= n_values.max()) only sets internal padding."""
    if phase not in ("support", "query"):
        raise ValueError(f"phase must be 'support' or 'query', got {phase!r}")
    d = np.asarray(n_values, dtype=np.int64)
    n_oc = _positive_int("n_oc", n_oc)
    tables = _SplitTables.get(d.shape[1], int(d.max()) if width is None else width)
    uid, half = tables.lookup(d), int(phase == "query")
    counts = tables.arrays["size"][uid, half]
    combos = tables.arrays["split"][uid, half, :max(int(counts.max()), 1)]
    stim = (combos[:, :, None] * n_oc + np.arange(n_oc)).reshape(len(d), -1)
    stim[np.repeat(combos, n_oc, axis=1) < 0] = -1
    return stim, counts * n_oc


def component_focused_sampling_batch(keys, n_values, n_oc: int, shots: int, phase: str, width: int | None = None
                                     ) -> tuple[np.ndarray, np.ndarray]:
    """component_focused_sampling (section 1.5) of each episode's split (the phase's half of 'combinatorial2') for
    a batch of episode keys (one row of n_values each): (B, n_max) int64 stimulus-centric indices in presentation
    order, padded with -1, and the (B,) lengths. phase 'both' runs the two phases together and returns
    ((support, lengths), (query, lengths)); width (>= n_values.max()) only sets the padding of internal arrays.

    The procedure of component_focused_sampling, step for step, with other random numbers (the same distributions):
    per-value weights 100 (S + 1), less 100 per pick, floor 100 (kept as integer multiples of 100, P(v) = w_v / sum w);
    duplicates redrawn with the trial counter carried across draws, replacement allowed after MAX_TRIALS redraws (or
    from the start when S sum d exceeds the split), a duplicate then accepted after TRIALS_BEFORE_ACCEPTING redraws; a
    draw outside the split replaced by a split stimulus with probability proportional to
    1 / (sum_l (10 (c'_l - c_l))^2 + 1e-3), drawn as its combination (inverse CDF) then its OC index (uniform: a
    combination's O stimuli have equal weight); the query phase's whole split, in index order, when S sum d exceeds
    it. The random numbers come from each episode's key: a value or an OC index from 32 random bits by multiply-shift
    (each probability off by less than 2**-32), a replacement from 53. All episodes iterate in lock step, each stopping
    when its own weights are all down to 100; an episode's result does not depend on the others or on width."""
    keys = _keys(keys)
    d = _n_values_batch(n_values, len(keys))
    n_oc, shots = _positive_int("n_oc", n_oc), _positive_int("shots", shots)
    if phase not in ("support", "query", "both"):
        raise ValueError(f"phase must be 'support', 'query' or 'both', got {phase!r}")
    width = int(d.max()) if width is None else int(width)
    if width < d.max():
        raise ValueError(f"width ({width}) must be >= n_values.max() ({int(d.max())})")
    b = len(keys)
    if phase != "both":
        return _lockstep(keys, d, np.full(b, phase == "query"), n_oc, shots, width)
    out, length = _lockstep(np.tile(keys, 2), np.tile(d, (2, 1)), np.repeat([False, True], b), n_oc, shots, width)
    return (out[:b, :max(int(length[:b].max()), 1)].copy(), length[:b]), (
        out[b:, :max(int(length[b:].max()), 1)].copy(), length[b:])


class _SplitTables:
    """Per-n_values tables of the component-focused sampler over the padded grid (C = width**N points), for the two
    halves of the split (0: support/train, 1: query/test): member (U, 2, C) bool, classes (U, C) (each grid point's
    class, -1 outside d), split (U, 2, C) each half's classes in index order (padded with -1), size (U, 2), last
    (U, 2) (the last member), covered (U, 2) (every value occurs in the half), rank (U, 2, C) each class's position in
    its half's list (-1 if not in it), coords (U, C, N) each class's coordinates, and when C <= MAX_DISTANCE_TABLE the
    replacement draw's cumulative weights from each grid point, total (U, 2, C), cdf (U, 2, C, C + 1) (padded with
    inf) and a guide table (U, 2, C, C) to start the inverse-CDF search from. Rows depend on n_values only, so they
    are computed once per distinct n_values and shared by every batch (their order, the ids, does not matter)."""

    _registry: dict[tuple[int, int], _SplitTables] = {}

    def __init__(self, n_dims: int, width: int):
        self.grid = grid(n_dims, width)
        self.c = len(self.grid)
        self.tabulated = self.c <= MAX_DISTANCE_TABLE
        self.width = width
        self.by_code = np.full((width + 1) ** n_dims, -1, dtype=np.int64)  # id of n_values sum_i d(i) (W + 1)**i
        self.n_ids = 0
        self.arrays: dict[str, np.ndarray] = {}
        if self.tabulated:
            diff = self.grid[:, None, :] - self.grid[None, :, :]
            self.weight = 1.0 / (np.square(10.0 * diff).sum(axis=2) + 1e-3)  # (C, C): from point to candidate

    @classmethod
    def get(cls, n_dims: int, width: int) -> _SplitTables:
        key = (n_dims, width)
        if key not in cls._registry:
            cls._registry[key] = cls(n_dims, width)
        return cls._registry[key]

    def lookup(self, d: np.ndarray) -> np.ndarray:
        """(B,) ids of the rows of d (B, N), computing the tables of n_values not seen before."""
        code = d @ (self.width + 1) ** np.arange(d.shape[1], dtype=np.int64)
        ids = self.by_code[code]
        if (ids < 0).any():
            new = np.unique(d[ids < 0], axis=0)
            parts = [self._build(r) for r in new]
            self.arrays = {name: np.concatenate(([self.arrays[name]] if self.arrays else [])
                                                + [np.stack([p[name] for p in parts])])
                           for name in parts[0]}
            self.by_code[new @ (self.width + 1) ** np.arange(d.shape[1], dtype=np.int64)] = np.arange(
                self.n_ids, self.n_ids + len(new))
            self.n_ids += len(new)
            ids = self.by_code[code]
        return ids

    def _build(self, d: np.ndarray) -> dict[str, np.ndarray]:
        g, c = self.grid, self.c
        inside = (g < d).all(axis=1)
        q = is_query_combination(g)
        member = np.stack([inside & ~q, inside & q])
        values = np.arange(self.width)
        occurs = (member[:, :, None, None] & (g[None, :, :, None] == values)).any(axis=1)  # (2, N, W)
        classes = np.where(inside, g @ strides(d), -1)
        split = np.full((2, c), -1, dtype=np.int64)  # each half's classes in index order
        for half in range(2):
            split[half, :member[half].sum()] = classes[member[half]]
        rank = np.full((2, c), -1, dtype=np.int64)  # each class's position in its half's list
        for half in range(2):
            rank[half, split[half, :member[half].sum()]] = np.arange(member[half].sum())
        coords = np.zeros((c, len(d)), dtype=np.int64)  # each class's coordinates
        coords[classes[inside]] = g[inside]
        out = {"member": member, "classes": classes, "split": split, "size": member.sum(axis=1), "rank": rank,
               "coords": coords,
               "last": c - 1 - np.argmax(member[:, ::-1], axis=1),
               "covered": (occurs | (values >= d[:, None])[None]).all(axis=(1, 2))}
        if self.tabulated:
            cdf = np.cumsum(np.where(member[:, None, :], self.weight[None], 0.0), axis=2)  # (2, C, C)
            total = cdf[..., -1]
            # guide[h, x, q]: how many cumulative weights lie below q / C of the total (a little below, so that the
            # search, which only moves forward, never starts past its answer)
            below = total[..., None] * (np.arange(c) / c) * (1 - 1e-9)
            guide = np.array([np.searchsorted(row, th, side="right") for row, th in
                              zip(cdf.reshape(-1, c), below.reshape(-1, c), strict=True)]).reshape(2, c, c)
            padded = np.full((2, c, c + 1), np.inf)
            padded[..., :c] = cdf
            out.update(total=total, cdf=padded, guide=guide.astype(np.int64))
        return out


@functools.cache
def _weight_codes(width: int, shots: int) -> tuple[np.ndarray, ...] | None:
    """One dimension's sampler weights as one integer: m_v = weight_v / 100, in {1 .. S + 1} for v < d and 0 beyond,
    code = sum_v m_v (S + 2)**v. Returns (power (W,) (S + 2)**v, total (codes,) sum_v m_v, choice (codes * T,) the
    value that r in [0, T = (S + 1) W) selects, the v with cum_{v-1} <= r < cum_v, and dec (codes * W,) m_v > 1), or
    None when the tables would exceed MAX_CODE_TABLE entries."""
    base, t = shots + 2, (shots + 1) * width
    n_codes = base ** width
    if n_codes * t * width > MAX_CODE_TABLE:
        return None
    power = base ** np.arange(width, dtype=np.int64)
    m = (np.arange(n_codes, dtype=np.int64)[:, None] // power) % base
    cum = np.cumsum(m, axis=1)
    choice = np.minimum((cum[:, None, :] <= np.arange(t)[None, :, None]).sum(axis=2), width - 1)
    return power, cum[:, -1].copy(), choice.ravel(), (m > 1).ravel()


def _lockstep(keys: np.ndarray, d: np.ndarray, query: np.ndarray, n_oc: int, shots: int, width: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """The component-focused sampler on R problems at once: keys (R,), d (R, N), query (R,) bool (which half of the
    split). Per-dimension state is (N, A) over the A problems still drawing; the finished ones are dropped as they
    accumulate. Lookups go through flat indices (numpy's multi-index gathers are several times slower)."""
    r_all, n = d.shape
    tables = _SplitTables.get(n, width)
    g, c = tables.grid, tables.c
    uid = tables.lookup(d)
    ph = query.astype(np.int64)
    tab = tables.arrays
    member = tab["member"][uid, ph]  # (R, C)
    too_small = shots * d.sum(axis=1) > member.sum(axis=1) * n_oc
    run = ~(too_small & query)
    values = np.arange(width)
    uncovered = run & ~tab["covered"][uid, ph]
    if uncovered.any():  # the reference would loop for ever: that value's weight can never come down
        row = int(np.flatnonzero(uncovered)[0])
        mem = member[row]
        i, v = next((i, v) for i in range(n) for v in range(d[row, i]) if not (mem & (g[:, i] == v)).any())
        raise ValueError(f"(dimension, value) {(i, v)} never occurs in the {'query' if query[row] else 'support'} "
                         f"split of n_values {d[row].tolist()}, so it can never be sampled {shots} times")

    out = np.full((r_all, 2 * int(shots * d.sum(axis=1).max()) + 8), -1, dtype=np.int64)
    length = np.zeros(r_all, dtype=np.int64)
    rows = np.flatnonzero(run)  # the problems still drawing, as indices into the inputs
    if len(rows):
        codes = _weight_codes(width, shots)
        dt = d[rows].T  # (N, A)
        if codes is not None:
            power, total, choice, dec_table = codes
            n_pick = (shots + 1) * width
            code = ((shots + 1) * power[:, None, None] * (values[:, None, None] < dt[None])).sum(axis=0)  # (N, A)
        else:
            m = np.ascontiguousarray(np.where(values[:, None, None] < dt[None], shots + 1, 0))  # (W, N, A): w / 100
            tot = (shots + 1) * dt  # (N, A): their sums
        need = shots * dt.sum(axis=0)  # picks still needed to bring every weight down to 100
        # the duplicate rule's state: 16 once replacement is allowed (from the start when the split is too small),
        # plus the trial counter
        state = np.where(too_small[rows], 16, 0)
        seen = np.zeros(len(rows) * c, dtype=bool)  # (A, C) flat: the combinations picked so far, over the grid
        seen_row = np.arange(len(rows)) * c
        table_row = (uid[rows] * 2 + ph[rows]) * c  # + grid point: flat index into the (U, 2, C) tables
        class_row = uid[rows] * c
        last = tab["last"][uid[rows], ph[rows]]
        # counter_bits(key, stream, index) = _mix(base + index * gamma): each problem's base, for both streams
        base_draw, base_rep = (keys[rows] + ((np.where(query[rows], S_CF["query"][i], S_CF["support"][i])
                                              .astype(np.uint64) << np.uint64(STREAM_BITS)) + np.uint64(1)) * _GAMMA
                               for i in range(2))
        member_flat, classes_flat = tab["member"].reshape(-1), tab["classes"].reshape(-1)
        grid_flat = g.T.ravel()  # (N * C,): coordinate i of grid point p at i * C + p
        dim_offset = np.arange(n)[:, None] * c
        grid_stride = width ** np.arange(n - 1, -1, -1, dtype=np.int64)
        n_bits = (n + 2) // 2  # 64-bit draws per step: N coordinates and one OC index, 32 bits each
        bit_gamma = np.array([(i * GAMMA) % 2 ** 64 for i in range(n_bits)], dtype=np.uint64)[:, None]
        if tables.tabulated:
            total_flat, cdf_flat, guide_flat = (tab[name].reshape(-1) for name in ("total", "cdf", "guide"))
        it = 0
        while True:
            a = len(rows)
            h = _mix(base_draw + (bit_gamma + np.uint64((it * n_bits * GAMMA) % 2 ** 64)))  # (n_bits, A)
            halves = h.view(np.uint32).reshape(n_bits, a, 2).transpose(0, 2, 1).reshape(2 * n_bits, a)
            if codes is not None:
                coord = choice[code * n_pick + ((halves[:n] * total[code]) >> 32).astype(np.int64)]  # (N, A)
            else:
                pick = ((halves[:n] * tot) >> 32).astype(np.int64)  # uniform in [0, sum of the weights / 100)
                cum = m[0].copy()
                coord = (cum <= pick).astype(np.int64)
                for v in range(1, width - 1):
                    cum += m[v]
                    coord += cum <= pick
            gidx = grid_stride @ coord
            dup = seen[seen_row + gidx]
            rule = _DUPLICATE_RULE[state]
            state = np.where(dup, rule >> 1, state)
            acc = (~dup | (rule & 1).astype(bool)) & (need > 0)  # finished problems wait to be dropped
            j = ((halves[n] * n_oc) >> 32).astype(np.int64) if n_oc > 1 else 0
            outside = acc & ~member_flat[table_row + gidx]
            if outside.any():  # replace by a split stimulus near the draw
                o = np.flatnonzero(outside)
                h2 = _mix(base_rep[o] + np.uint64((it * GAMMA) % 2 ** 64))
                u = (h2 >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
                if tables.tabulated:  # inverse CDF, the search started from the guide table (Chen & Asau 1974)
                    t = table_row[o] + gidx[o]
                    x = u * total_flat[t]
                    pos = guide_flat[t * c + (u * c).astype(np.int64)]
                    cursor = t * (c + 1) + pos  # moves forward while the cumulative weight there is <= x
                    moving = np.arange(len(cursor))
                    while len(moving):
                        moving = moving[cdf_flat[cursor[moving]] <= x[moving]]
                        cursor[moving] += 1
                    pos = cursor - t * (c + 1)
                else:
                    mem = tab["member"][uid[rows[o]], ph[rows[o]]]
                    dist = np.square(10.0 * (g[None] - coord[:, o].T[:, None, :])).sum(axis=2)
                    cp = np.cumsum(mem / (dist + 1e-3), axis=1)
                    pos = (cp <= (u * cp[:, -1])[:, None]).sum(axis=1)
                gidx[o] = np.minimum(pos, last[o])
                if n_oc > 1:
                    j[o] = (((h2 & _LOW32) * np.uint64(n_oc)) >> np.uint64(32)).astype(np.int64)
                coord = grid_flat[dim_offset + gidx]
            ra = np.flatnonzero(acc)
            if len(ra):
                rid = rows[ra]
                at = length[rid]
                if int(at.max()) >= out.shape[1]:
                    out = np.concatenate([out, np.full_like(out, -1)], axis=1)
                gr = gidx[ra]
                out.reshape(-1)[rid * out.shape[1] + at] = classes_flat[class_row[ra] + gr] * n_oc + (
                    j[ra] if n_oc > 1 else 0)
                length[rid] = at + 1
                seen[seen_row[ra] + gr] = True
                if codes is not None:
                    dec = dec_table[code * width + coord] & acc
                    code = code - dec * power[coord]
                else:
                    flat = (coord * n + np.arange(n)[:, None]) * a + np.arange(a)
                    w = m.reshape(-1)[flat]
                    dec = (w > 1) & acc
                    m.reshape(-1)[flat] = w - dec
                    tot = tot - dec
                need = need - dec.sum(axis=0)
            it += 1
            alive = need > 0
            n_alive = int(alive.sum())
            if n_alive == 0:
                break
            if n_alive <= 0.75 * a:  # drop the finished problems
                rows, need, state, table_row, class_row, last, base_draw, base_rep = (
                    x[alive] for x in (rows, need, state, table_row, class_row, last, base_draw, base_rep))
                seen = seen.reshape(a, c)[alive].ravel()
                seen_row = np.arange(n_alive) * c
                if codes is not None:
                    code = code[:, alive]
                else:
                    m, tot = np.ascontiguousarray(m[:, :, alive]), tot[:, alive]

    whole = too_small & query
    if whole.any():  # the query phase's whole split, in index order
        stim, counts = split_batch(d[whole], n_oc, "query", width)
        if stim.shape[1] > out.shape[1]:
            out = np.concatenate([out, np.full((r_all, stim.shape[1] - out.shape[1]), -1, dtype=np.int64)], axis=1)
        out[whole, :stim.shape[1]] = stim
        length[whole] = counts
    return np.ascontiguousarray(out[:, :max(int(length.max()), 1)]), length
