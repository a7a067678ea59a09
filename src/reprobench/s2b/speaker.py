"""The rule-based posdis speaker (specs/s2b.md section 3; the paper's Posdis-Speaker, PS, Table 3): token i of the
message is latent class i + 1, positions beyond the N_dim attributes stay 0 (the grounded EoS), so it speaks a
perfectly positional language. Table 3 of the paper shows it with L = 4: (0, 1, 2) -> 1, 2, 3, 0.

The message depends on the ground-truth latent classes only, never on the stimulus, so the reference's random
object-centric index for the speaker (section 1.3) does not change any message: there is no faithful/corrected
option here (it lives in reprobench.s2b.stimuli.player_oc_indices). The per-episode vocabulary permutations that the
environment applies to the messages (section 2.9) are not the speaker's either.
"""

from __future__ import annotations

import numpy as np

EOS = 0


def posdis_message(latents, max_len: int | None = None, vocab_size: int | None = None, round_idx: int = 0,
                   n_rounds: int = 1) -> np.ndarray:
    """Messages (n, L) int64 for latent classes (n, N_dim) (or one (N_dim,) vector, giving (L,)).

    L = max(N_dim, max_len) when n_rounds = 1: the whole message, repeated at every round_idx >= 0. With n_rounds > 1
    (one attribute per round, L = 1 in the reference), round r emits (class_r + 1,). At the feedback step
    (round_idx = -1) the message is all EoS. vocab_size, when given, is checked as the reference asserts:
    class + 1 < vocab_size, i.e. vocab_size >= V_max + 1.
    """
    lat = np.asarray(latents)
    single = lat.ndim == 1
    lat = np.atleast_2d(lat)
    if lat.ndim != 2 or (not np.issubdtype(lat.dtype, np.integer) and not np.all(lat == np.round(lat))):
        raise ValueError(f"latents must be integer classes of shape (n, N_dim), got shape {np.shape(latents)}")
    lat = lat.astype(np.int64)
    if (lat < 0).any():
        raise ValueError("latents must be non-negative class indices")
    if vocab_size is not None and (lat + 1 >= vocab_size).any():
        raise ValueError(f"vocab_size {vocab_size} is too small: latent class {int(lat.max())} needs a token "
                         f"{int(lat.max()) + 1} < vocab_size (vocab_size >= V_max + 1)")
    if isinstance(n_rounds, bool) or not isinstance(n_rounds, int | np.integer) or n_rounds < 1:
        raise ValueError(f"n_rounds must be a positive integer, got {n_rounds!r}")
    if not -1 <= round_idx < n_rounds:
        raise ValueError(f"round_idx must lie in [-1, {n_rounds}), got {round_idx!r}")
    n, n_dims = lat.shape
    if n_rounds == 1:
        length = n_dims if max_len is None else max(n_dims, int(max_len))
        out = np.full((n, length), EOS, dtype=np.int64)
        if round_idx >= 0:
            out[:, :n_dims] = lat + 1
    else:
        if round_idx >= n_dims:
            raise ValueError(f"round_idx {round_idx} has no attribute to utter (N_dim = {n_dims})")
        length = 1 if max_len is None else int(max_len)
        out = np.full((n, length), EOS, dtype=np.int64)
        if round_idx >= 0:
            out[:, 0] = lat[:, round_idx] + 1
    return out[0] if single else out
