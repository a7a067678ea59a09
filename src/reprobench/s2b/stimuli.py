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
- Arrays over values are padded to max d(i) (nan, or False in masks, beyond d(i)) so that everything vectorises.
"""

from __future__ import annotations

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


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


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
