"""Compositionality and disentanglement metrics of S2B (specs/s2b.md section 5), vectorised with numpy.

Language metrics follow EGG (egg/core/language_analysis.py); `faithful=True` selects ReferentialGym's version where
it differs (ReferentialGym's metric modules, run by Regym's ORG wrapper, logged the paper's Table 1):

- topographic_similarity: EGG = Spearman(Hamming distance of meanings, edit distance / mean length of messages) over
  all unordered pairs. ReferentialGym = -Spearman(unnormalised Levenshtein distance, cosine similarity of meanings
  with 1e-20 added to the norms) over the pairs i < j <= min(N - 2, i + int(comprange N)) (the last sample is in no
  pair; comprange 0.2 with `metric_fast`, as the Table-1 launcher sets it).
- posdis: the Chaabouni et al. gap: for each message position j with H(m_j) > 0, (I(m_j; a_(1)) - I(m_j; a_(2))) /
  H(m_j), averaged. ReferentialGym's "ListenerCentred" score is the same number (-1 where EGG's is nan: no position
  varies).
- bosdis: the same gap over per-symbol counts; EGG drops the EoS count (symbol 0), ReferentialGym keeps it.
- speaker_centred=True gives ReferentialGym's other logged variant (its "SpeakerCentred", Denamganaï): for each
  attribute k with H(a_k) > 0, the gap between the two message positions (or symbol counts) sharing most
  information with it, over H(a_k), averaged: MIG with messages as codes.

Which convention made Table 1's Posdis-Speaker row cannot be settled exactly (it is one random draw, see
tests/test_s2b_metrics.py): its topsim 96.67 fits EGG's topsim (or ReferentialGym's on one-hot meanings), not
ReferentialGym's default cosine of class indices (~48 for that speaker); its bosdis 11.57 fits the speaker-centred
variant better than the listener-centred one; posdis is the same number in both variants for that speaker.

Disentanglement metrics follow disentanglement_lib (evaluation/metrics/{mig,modularity_explicitness,factor_vae}.py):
codes are discretised per dimension into 20 equal-width histogram bins over their own range, and mutual information
is sklearn's plug-in estimate (nats). Sampling (i.i.d. points, factor-fixed batches) is the caller's: see
reprobench.s2b.stimuli for the SCS samplers; factor_vae_score_referentialgym is ReferentialGym's FactorVAE module,
which votes on factor-fixed batches of a fixed set of samples.

Two inputs the references accept are refused here (DEVIATIONS S23): a token >= vocab_size in symbol_counts (EGG's
bosdis ignores it) and a constant factor in mig (disentanglement_lib divides by its zero entropy: MIG nan).

Arrays are (n_samples, n_columns) throughout: attributes/factors are integer classes, messages integer tokens,
codes real numbers. Plug-in MI of sklearn.metrics.mutual_info_score is used for every MI and entropy (an entropy is
I(x; x)); ratios do not depend on the log base, so EGG's bits and sklearn's nats give the same scores. Spearman
correlations are scipy.stats.spearmanr, Hamming distances scipy's pdist. Hand-written, for want of a library that does
it: the edit distance (nltk's edit_distance loops in Python one pair at a time; here one dynamic programme runs over
all pairs of distinct messages as arrays), the posdis/bosdis gaps, the histogram discretiser (disentanglement_lib is
not a dependency and np.histogram has no axis) and the FactorVAE votes (vectorised over batches).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from scipy.spatial.distance import pdist
from scipy.stats import spearmanr
from sklearn.metrics import mutual_info_score

N_BINS = 20  # disentanglement_lib's histogram discretiser
# ReferentialGym adds 1e-20 to the norms (utils/utils.py L14, L144-151 at 6961241e): a zero meaning vector has cosine
# 0 with everything, and parallel class vectors keep cosine 1 (an eps of 1e-8 would rank them by their norms)
COS_EPS = 1e-20
PRUNE_THRESHOLD = 0.05  # ReferentialGym's metric modules (and disentanglement_lib's prune_dims): std >= 0.05
FAST_COMPRANGE = 0.2  # ReferentialGym's pair window with metric_fast


def _as_2d(name: str, x, integer: bool) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 2 or a.shape[0] < 2:
        raise ValueError(f"{name} must have shape (n_samples >= 2, n_columns), got {a.shape}")
    if integer and not np.issubdtype(a.dtype, np.integer):
        if not np.all(np.isfinite(a)) or not np.all(a == np.round(a)):
            raise ValueError(f"{name} must hold integer classes or tokens")
        a = a.astype(np.int64)
    elif not integer and not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite")
    return a


def _paired(name_a: str, a, name_b: str, b, integer_b: bool = True) -> tuple[np.ndarray, np.ndarray]:
    a, b = _as_2d(name_a, a, integer=True), _as_2d(name_b, b, integer=integer_b)
    if len(a) != len(b):
        raise ValueError(f"{name_a} and {name_b} must have the same number of rows, got {len(a)} and {len(b)}")
    return a, b


def mutual_info_matrix(codes, factors) -> np.ndarray:
    """(n_codes, n_factors) plug-in mutual information in nats between each discrete code column and each factor
    column (disentanglement_lib's discrete_mutual_info)."""
    codes, factors = np.asarray(codes), np.asarray(factors)
    return np.array([[mutual_info_score(factors[:, k], codes[:, i]) for k in range(factors.shape[1])]
                     for i in range(codes.shape[1])])


def entropies(x) -> np.ndarray:
    """(n_columns,) plug-in entropy in nats of each column."""
    x = np.asarray(x)
    return np.array([mutual_info_score(x[:, i], x[:, i]) for i in range(x.shape[1])])


def _listener_centred_gap(attributes: np.ndarray, representations: np.ndarray, faithful: bool) -> float:
    """EGG's gap_mi_first_second: mean over informative representation columns."""
    if attributes.shape[1] < 2:
        raise ValueError("the gap needs at least 2 attributes (it compares the two most informative)")
    h = entropies(representations)
    keep = h > 0
    if not keep.any():  # EGG divides 0 by 0; ReferentialGym returns -1
        return -1.0 if faithful else float("nan")
    mi = np.sort(mutual_info_matrix(representations[:, keep], attributes), axis=1)
    return float(np.mean((mi[:, -1] - mi[:, -2]) / h[keep]))


def _speaker_centred_gap(attributes: np.ndarray, representations: np.ndarray) -> float:
    """ReferentialGym's Denamganaï score: mean over informative attributes of the top-2 gap across representation
    columns, over H(attribute); -1 as coded when no attribute varies."""
    if representations.shape[1] < 2:
        raise ValueError("the speaker-centred gap needs at least 2 message columns")
    h = entropies(attributes)
    keep = h > 0
    if not keep.any():
        return -1.0
    mi = np.sort(mutual_info_matrix(representations, attributes[:, keep]), axis=0)
    return float(np.mean((mi[-1] - mi[-2]) / h[keep]))


def posdis(attributes, messages, speaker_centred: bool = False, faithful: bool = False) -> float:
    """Positional disentanglement (Chaabouni et al. 2020) of messages (n, L) about attributes (n, A). 1 for a
    perfectly positional language on a product of attribute values, 0 when no position singles out an attribute.
    When every position is constant: nan (EGG), or -1 with faithful=True (ReferentialGym's "ListenerCentred" score,
    the same number otherwise)."""
    attributes, messages = _paired("attributes", attributes, "messages", messages)
    if speaker_centred:
        return _speaker_centred_gap(attributes, messages)
    return _listener_centred_gap(attributes, messages, faithful=faithful)


def symbol_counts(messages, vocab_size: int | None = None) -> np.ndarray:
    """(n, vocab_size) int64 bag-of-symbols: how often each symbol 0..vocab_size-1 occurs in each message
    (vocab_size defaults to the largest token + 1, as ReferentialGym does; EGG uses the game's vocabulary, which only
    adds constant zero columns). A token >= vocab_size raises: EGG's bosdis would silently leave it uncounted, and a
    token outside the game's vocabulary means the caller passed the wrong messages or vocabulary."""
    messages = _as_2d("messages", messages, integer=True)
    if (messages < 0).any():
        raise ValueError("messages must hold non-negative tokens")
    size = int(messages.max()) + 1 if vocab_size is None else int(vocab_size)
    if size <= messages.max():
        raise ValueError(f"vocab_size {vocab_size} is too small for token {int(messages.max())}")
    return (messages[:, :, None] == np.arange(size)[None, None, :]).sum(axis=1).astype(np.int64)


def bosdis(attributes, messages, vocab_size: int | None = None, faithful: bool = False,
           speaker_centred: bool = False) -> float:
    """Bag-of-symbols disentanglement of messages (n, L) about attributes (n, A): the posdis gap over per-symbol
    counts. EGG drops symbol 0 (EoS); faithful=True keeps it, as ReferentialGym does (and returns -1 rather than nan
    when no count varies)."""
    attributes, messages = _paired("attributes", attributes, "messages", messages)
    counts = symbol_counts(messages, vocab_size)
    if not faithful:
        counts = counts[:, 1:]
    if speaker_centred:
        # Fewer than 2 count columns (only EoS said, vocab_size inferred): the symbols never said count 0 in every
        # message, so add their constant columns rather than fail. ReferentialGym's gap fails there (IndexError) and
        # logs the 0.0 it catches; with the EoS column kept that column is constant too, so the gap is that 0.
        counts = np.pad(counts, ((0, 0), (0, max(0, 2 - counts.shape[1]))))
        return _speaker_centred_gap(attributes, counts)
    return _listener_centred_gap(attributes, counts, faithful=faithful)


def levenshtein(a, b) -> np.ndarray:
    """Edit distances between the rows of a (P, L1) and b (P, L2), pair by pair, (P,) int64; vectorised over pairs
    (a dynamic programme of L1 x L2 array steps)."""
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    if len(a) != len(b):
        raise ValueError(f"a and b must have the same number of rows, got {len(a)} and {len(b)}")
    prev = np.broadcast_to(np.arange(b.shape[1] + 1), (len(a), b.shape[1] + 1)).astype(np.int64)
    for i in range(a.shape[1]):
        cur = np.empty_like(prev)
        cur[:, 0] = i + 1
        for j in range(b.shape[1]):
            cur[:, j + 1] = np.minimum(np.minimum(prev[:, j + 1], cur[:, j]) + 1, prev[:, j] + (a[:, i] != b[:, j]))
        prev = cur
    return prev[:, -1]


PAIR_CHUNK = 1 << 20  # pairs per dynamic-programme pass: bounds the memory of levenshtein's arrays


def _pair_edit_distances(messages: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Edit distances of the pairs (i, j), computed once per pair of distinct messages."""
    unique, inverse = np.unique(messages, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    ui, uj = np.triu_indices(len(unique), k=1)
    table = np.zeros((len(unique), len(unique)), dtype=np.int16 if messages.shape[1] < 2**15 else np.int32)
    for start in range(0, len(ui), PAIR_CHUNK):
        a, b = ui[start:start + PAIR_CHUNK], uj[start:start + PAIR_CHUNK]
        table[a, b] = table[b, a] = levenshtein(unique[a], unique[b])
    return table[inverse[i], inverse[j]].astype(np.int64)


def referentialgym_pairs(n: int, comprange: float | None = FAST_COMPRANGE) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (i, j) ReferentialGym's topsim compares among n samples: i < j < min(n - 1, i + 1 + w) with
    w = int(comprange n) (w = n for None), so the last sample is never compared. Two (P,) int64 arrays."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    if comprange is not None and not 0 < comprange <= 1:
        raise ValueError(f"comprange must lie in (0, 1] or be None, got {comprange!r}")
    window = n if comprange is None else int(comprange * n)
    first = np.arange(n)
    count = np.clip(np.minimum(n - 1, first + 1 + window) - (first + 1), 0, None)
    i = np.repeat(first, count)
    j = i + 1 + (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count))
    return i.astype(np.int64), j.astype(np.int64)


def topographic_similarity(meanings, messages, faithful: bool = False, comprange: float | None = FAST_COMPRANGE,
                           meaning_distance: str = "hamming") -> float:
    """Topographic similarity of messages (n, L) (full rows, EoS padding included, as both references pass them) to
    meanings (n, A).

    faithful=False (EGG): Spearman between pdist(meanings, meaning_distance) and edit distance / ((|x| + |y|) / 2)
    over all pairs (the normalisation is a constant for equal-length rows). faithful=True (ReferentialGym):
    -Spearman(Levenshtein distance, cosine similarity of the meanings) over the pairs i < j <= min(n - 2,
    i + int(comprange n)); comprange=None is ReferentialGym's full range (still without the last sample).
    """
    meanings = _as_2d("meanings", meanings, integer=False)
    messages = _as_2d("messages", messages, integer=True)
    if len(meanings) != len(messages):
        raise ValueError(f"meanings and messages must have the same number of rows, got {len(meanings)} and "
                         f"{len(messages)}")
    n = len(messages)
    if not faithful:
        i, j = np.triu_indices(n, k=1)  # pdist's pair order
        mess = _pair_edit_distances(messages, i, j) / messages.shape[1]
        return float(spearmanr(pdist(meanings.astype(float), meaning_distance), mess).statistic)
    i, j = referentialgym_pairs(n, comprange)
    if len(i) < 2:
        raise ValueError(f"{n} samples leave fewer than 2 pairs in ReferentialGym's window")
    unit = meanings / (np.linalg.norm(meanings.astype(float), axis=1, keepdims=True) + COS_EPS)
    # summed as ReferentialGym's pair-by-pair np.matmul sums (einsum can differ in the last bit, which reorders ties)
    cos = (unit[i] * unit[j]).sum(axis=1)
    return float(-spearmanr(_pair_edit_distances(messages, i, j), cos).statistic)


def factor_fixed_indices(factors, rng: np.random.Generator, n_points: int = 256, batch_size: int = 32,
                         active_only: bool = True) -> np.ndarray:
    """Row indices of ReferentialGym's metric sample (resample=False, the ORG setting of Table 1: 256 points in
    batches of 32): each batch picks a factor k (among the non-constant ones with active_only), a random row, and
    draws without replacement up to batch_size rows sharing that row's value of k (fewer when fewer exist: the batch
    shrinks, yet the loop still counts batch_size points, so the sample can be shorter than n_points). Rows can repeat
    across batches. Returns (m,) int64, m <= n_points."""
    factors = _as_2d("factors", factors, integer=True)
    for name, value in (("n_points", n_points), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    candidates = _factors_to_fix(factors, active_only)
    out, done = [], 0
    while done < n_points:
        size = min(n_points - done, batch_size)
        out.append(_factor_fixed_batch(factors, rng, candidates, size)[1])
        done += size
    return np.concatenate(out).astype(np.int64)


def _factors_to_fix(factors: np.ndarray, active_only: bool) -> np.ndarray:
    candidates = np.flatnonzero(factors.var(axis=0) > 0) if active_only else np.arange(factors.shape[1])
    if len(candidates) == 0:
        raise ValueError("every factor is constant: no factor to fix")
    return candidates


def _factor_fixed_batch(factors: np.ndarray, rng: np.random.Generator, candidates: np.ndarray,
                        size: int) -> tuple[int, np.ndarray]:
    """One batch of ReferentialGym's resample=False sampling: a factor k among candidates, a random row, up to size
    rows sharing its value of k, without replacement. Returns (k, row indices)."""
    k = rng.choice(candidates)
    same = np.flatnonzero(factors[:, k] == factors[rng.integers(len(factors)), k])
    return int(k), rng.choice(same, size=min(size, len(same)), replace=False)


def varies(representations, threshold: float = PRUNE_THRESHOLD) -> bool:
    """ReferentialGym's gate in its metric modules (resample=False): whether any column of the epoch's representations
    (n, D) has a standard deviation (ddof 1) of at least `threshold`. Where none does, its topsim, posdis, bosdis and
    FactorVAE modules log 0.0 without computing anything (topographic_similarity_metric_module2.py L404-421,
    positional_bos_disentanglement_metric_module.py L494-508, factor_vae_disentanglement_metric_module.py L328-331
    at 6961241e)."""
    representations = np.asarray(representations, dtype=float)
    return bool((np.sqrt(np.var(representations, axis=0, ddof=1)) >= threshold).any())


def histogram_discretize(codes, n_bins: int = N_BINS) -> np.ndarray:
    """disentanglement_lib's _histogram_discretize: each code column mapped to its bin among n_bins equal-width bins
    over the column's own [min, max] (np.digitize against the left edges), (n, D) int64."""
    codes = _as_2d("codes", codes, integer=False)
    out = np.empty(codes.shape, dtype=np.int64)
    for d in range(codes.shape[1]):  # np.histogram has no axis argument
        out[:, d] = np.digitize(codes[:, d], np.histogram(codes[:, d], n_bins)[1][:-1])
    return out


def _codes_and_factors(codes, factors) -> tuple[np.ndarray, np.ndarray]:
    factors, codes = _paired("factors", factors, "codes", codes, integer_b=False)
    return codes, factors


def mig(codes, factors, n_bins: int = N_BINS) -> float:
    """Mutual Information Gap (Chen et al. 2018) as disentanglement_lib computes it: with m[i, k] = I(bin(z_i); y_k),
    the mean over factors of (largest - second largest m[., k]) / H(y_k). A constant factor raises, where
    disentanglement_lib divides 0 by its zero entropy and returns nan for the whole score."""
    codes, factors = _codes_and_factors(codes, factors)
    if codes.shape[1] < 2:
        raise ValueError("MIG needs at least 2 code dimensions")
    h = entropies(factors)
    if (h <= 0).any():
        raise ValueError(f"factor {int(np.flatnonzero(h <= 0)[0])} is constant: MIG divides by its entropy")
    m = np.sort(mutual_info_matrix(histogram_discretize(codes, n_bins), factors), axis=0)
    return float(np.mean((m[-1] - m[-2]) / h))


def modularity(codes, factors, n_bins: int = N_BINS) -> float:
    """Modularity (Ridgeway & Zemel 2018) as disentanglement_lib computes it: for each code i, with m = I(bin(z_i);
    y_k), 1 - (sum_k m_k^2 - max_k m_k^2) / (max_k m_k^2 (F - 1)), 0 for a code with no information; averaged."""
    codes, factors = _codes_and_factors(codes, factors)
    if factors.shape[1] < 2:
        raise ValueError("modularity needs at least 2 factors")
    sq = np.square(mutual_info_matrix(histogram_discretize(codes, n_bins), factors))
    best = sq.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = 1.0 - (sq.sum(axis=1) - best) / (best * (sq.shape[1] - 1.0))
    return float(np.mean(np.where(best == 0, 0.0, score)))


def factor_vae_score(sample_factors: Callable[[int, np.random.Generator], np.ndarray],
                     observe: Callable[[np.ndarray, np.random.Generator], np.ndarray], rng: np.random.Generator,
                     batch_size: int = 64, n_train: int = 10_000, n_eval: int = 5_000, n_variance: int = 10_000,
                     threshold: float = 0.05, variant: str = "faithful") -> float:
    """FactorVAE score (Kim & Mnih 2018) as disentanglement_lib computes it (gin: batch 64, 10000 train votes, 5000
    eval votes, 10000 points for the global variances, prune threshold 0.05): the eval accuracy of the majority-vote
    classifier from the code dimension of least normalised variance in a batch with one factor fixed, to that factor.

    sample_factors(n, rng) -> (n, F) factor classes; observe(factors, rng) -> (n, D) codes.
    variant='faithful' keeps disentanglement_lib's indexing quirk: the argmin over *active* dimensions is used as a
    column of the full vote matrix (only differs when a dimension is pruned); 'corrected' maps it back.
    """
    if variant not in ("faithful", "corrected"):
        raise ValueError(f"variant must be 'faithful' or 'corrected', got {variant!r}")
    for name, value in (("batch_size", batch_size), ("n_train", n_train), ("n_eval", n_eval),
                        ("n_variance", n_variance)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 2:
            raise ValueError(f"{name} must be an integer >= 2, got {value!r}")
    global_var = np.var(np.asarray(observe(sample_factors(n_variance, rng), rng), dtype=float), axis=0, ddof=1)
    active = np.sqrt(global_var) >= threshold
    if not active.any():
        return 0.0

    def votes(n_points: int) -> np.ndarray:
        factors = np.array(sample_factors(n_points * batch_size, rng))
        n_factors = factors.shape[1]
        factors = factors.reshape(n_points, batch_size, n_factors)
        fixed = rng.integers(n_factors, size=n_points)
        factors[np.arange(n_points), :, fixed] = factors[np.arange(n_points), 0, fixed][:, None]
        codes = np.asarray(observe(factors.reshape(-1, n_factors), rng), dtype=float)
        local = np.var(codes.reshape(n_points, batch_size, -1), axis=1, ddof=1)
        return _vote_matrix(fixed, local, global_var, active, n_factors, variant)

    return _majority_vote_accuracy(votes(n_train), votes(n_eval))


def _vote_matrix(fixed: np.ndarray, local: np.ndarray, global_var: np.ndarray, active: np.ndarray, n_factors: int,
                 variant: str) -> np.ndarray:
    """(n_factors, D) votes: batch b (fixed factor fixed[b], per-dimension variances local[b]) votes for the dimension
    of least normalised variance; 'faithful' uses its index among the active dimensions as a column of the full matrix
    (disentanglement_lib's and ReferentialGym's quirk), 'corrected' the dimension itself."""
    argmin = np.argmin(local[:, active] / global_var[active], axis=1)
    if variant == "corrected":
        argmin = np.flatnonzero(active)[argmin]
    out = np.zeros((n_factors, len(global_var)), dtype=np.int64)
    np.add.at(out, (fixed, argmin), 1)
    return out


def _majority_vote_accuracy(train_votes: np.ndarray, eval_votes: np.ndarray) -> float:
    classifier = np.argmax(train_votes, axis=0)
    return float(eval_votes[classifier, np.arange(eval_votes.shape[1])].sum() / eval_votes.sum())


def factor_vae_score_referentialgym(codes, factors, rng: np.random.Generator, n_train: int = 256, n_eval: int = 128,
                                    batch_size: int = 32, threshold: float = PRUNE_THRESHOLD,
                                    variant: str = "faithful") -> float:
    """FactorVAE score as ReferentialGym's module computes it with resample=False (factor_vae_disentanglement_metric_
    module.py at 6961241e; the ORG launchers: 256 train and 128 eval votes, batch 32, active factors only): codes
    (n, D) and factors (n, F) are the epoch's samples; global variances (ddof 1) over all of them, dimensions of std
    < threshold pruned (score 0 when every one is); each vote one factor-fixed batch of up to batch_size rows of the
    epoch (factor_fixed_indices' batches), for the dimension of least normalised variance (variant as in
    factor_vae_score). A batch of one row has undefined variances (NaN) and votes, as np.argmin does in ReferentialGym,
    for the first active dimension."""
    if variant not in ("faithful", "corrected"):
        raise ValueError(f"variant must be 'faithful' or 'corrected', got {variant!r}")
    for name, value in (("n_train", n_train), ("n_eval", n_eval), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    codes, factors = _codes_and_factors(codes, factors)
    global_var = np.var(codes, axis=0, ddof=1)
    active = np.sqrt(global_var) >= threshold
    if not active.any():
        return 0.0
    candidates = _factors_to_fix(factors, active_only=True)

    def votes(n_votes: int) -> np.ndarray:
        fixed, local = np.empty(n_votes, dtype=np.int64), np.empty((n_votes, codes.shape[1]))
        with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a one-row batch: ddof 1 leaves no degree of freedom
            for b in range(n_votes):
                fixed[b], batch = _factor_fixed_batch(factors, rng, candidates, batch_size)
                local[b] = np.var(codes[batch], axis=0, ddof=1)
        return _vote_matrix(fixed, local, global_var, active, factors.shape[1], variant)

    return _majority_vote_accuracy(votes(n_train), votes(n_eval))
