"""The S2B numbers that need no training: the posdis speaker's compositionality (Table 1's PS column) and the
disentanglement of SCS stimuli (Appendix D.2). Both are properties of the stimuli and of a fixed speaker, so they are
tested against the paper without any agent.

Posdis speaker (specs/s2b.md sections 3, 4.5 and 5; DEVIATIONS S1): Regym's ORG wrapper logged the row from
ReferentialGym's metric modules, on a game built from one episode's train (support) split, all its stimuli, O = 4,
d(j) ~ U{2..5}, the oracle speaker with L = 4, scored on 256 points drawn in factor-fixed batches of 32. Which
episodes and which points made the published row is not recoverable, so ours is the mean over many seeded episodes
of the same protocol. Per episode: topsim (EGG's: Hamming meanings vs normalised edit distance; ReferentialGym's own
cosine-of-class-index topsim, about 48 for this speaker, cannot have printed 96.67), posdis (the same in both
definitions for this speaker), bosdis (ReferentialGym's speaker-centred variant with the EoS count, the one that
fits 11.57; EGG's listener-centred one is recorded too).

Disentanglement (Appendix D.2; DEVIATIONS S2): FactorVAE, MIG and Modularity of SCS codes, N_dim = 3, d(j) = 5,
for each O asked, under two protocols: disentanglement_lib's (10,000 i.i.d. points, the metric code's defaults;
FactorVAE: 10,000 / 5,000 votes of i.i.d. batches of 64) and ReferentialGym's (MIG and Modularity on 256 points in
factor-fixed batches of 32; FactorVAE: 256 / 128 votes, each a factor-fixed batch of 32 of every stimulus of the
space, as its module votes on the epoch's samples). Neither gives the paper's MIG 94.8 / Modularity 98.9
together, nor its drop at O = 1 (64.4 / 66.6): both numbers are reported next to the paper's.
"""

from __future__ import annotations

import numpy as np

from reprobench.s2b import metrics, stimuli
from reprobench.s2b.speaker import posdis_message

SPEAKER_METRICS = ("topsim", "posdis", "bosdis", "bosdis_listener", "topsim_referentialgym")
PROTOCOLS = ("disentanglement_lib", "referentialgym")
DISENTANGLEMENT_METRICS = ("factorvae_score", "mig", "modularity")


def speaker_episode(rng: np.random.Generator, n_dims: int = 3, v_min: int = 2, v_max: int = 5, n_oc: int = 4,
                    max_len: int = 4, n_points: int = 256, batch_size: int = 32) -> dict[str, float]:
    """The posdis speaker's metrics on one episode's train split (fractions, not percent)."""
    d = stimuli.sample_space(rng, n_dims=n_dims, v_min=v_min, v_max=v_max, n_oc=n_oc).n_values
    latents = stimuli.coordinates(stimuli.split(d, n_oc)[0], d, n_oc)
    return language_scores(rng, latents, posdis_message(latents, max_len=max_len), n_points, batch_size)


def language_scores(rng: np.random.Generator, latents: np.ndarray, messages: np.ndarray, n_points: int = 256,
                    batch_size: int = 32) -> dict[str, float]:
    """A speaker's SPEAKER_METRICS (fractions) by the protocol of Table 1's PS row: `n_points` of the rows of
    latents (n, N_dim) and their messages (n, L), picked in factor-fixed batches of `batch_size`.

    As ReferentialGym's modules (metrics.varies): when no message position varies over all n rows (std < 0.05), every
    score is 0.0 and nothing is drawn; a speaker that says one message for everything scores 0, not NaN, so it counts
    in a mean over episodes. When the rows vary but the picked points do not, posdis is ReferentialGym's -1, bosdis 0,
    and the topsims NaN (Spearman of a constant, as ReferentialGym logs it)."""
    messages = np.asarray(messages)
    if not metrics.varies(messages):
        return dict.fromkeys(SPEAKER_METRICS, 0.0)
    pick = metrics.factor_fixed_indices(latents, rng, n_points=n_points, batch_size=batch_size)
    a, m = latents[pick], messages[pick]
    return {"topsim": metrics.topographic_similarity(a, m), "posdis": metrics.posdis(a, m, faithful=True),
            "bosdis": metrics.bosdis(a, m, faithful=True, speaker_centred=True),
            "bosdis_listener": metrics.bosdis(a, m),
            "topsim_referentialgym": metrics.topographic_similarity(a, m, faithful=True)}


def speaker_metrics(seed: int, episodes: int, **kw) -> dict[str, np.ndarray]:
    """{metric: (episodes,) values} over `episodes` episodes drawn from one generator seeded with `seed`."""
    rng = np.random.default_rng(seed)
    rows = [speaker_episode(rng, **kw) for _ in range(episodes)]
    return {k: np.array([r[k] for r in rows]) for k in SPEAKER_METRICS}


def disentanglement(seed: int, n_oc: int, protocol: str, n_values=(5, 5, 5)) -> dict[str, float]:
    """FactorVAE score, MIG and Modularity of SCS codes of one sampled space (fractions)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    rng = np.random.default_rng(seed)
    space = stimuli.sample_space(rng, n_values=list(n_values), n_oc=n_oc)

    def observe(factors, r):  # each stimulus with a uniformly random object-centric sample
        return stimuli.observe(space, factors, r.integers(n_oc, size=len(factors)))

    if protocol == "disentanglement_lib":
        factors = stimuli.uniform_coordinates(rng, n_values, 10_000)
    else:  # ReferentialGym: every stimulus of the space, 256 of them picked in factor-fixed batches
        every = stimuli.combinations(n_values)
        factors = every[metrics.factor_fixed_indices(every, rng, n_points=256, batch_size=32)]
    codes = observe(factors, rng)
    scores = {"mig": metrics.mig(codes, factors), "modularity": metrics.modularity(codes, factors)}
    if protocol == "disentanglement_lib":
        def sample(n, r):
            return stimuli.uniform_coordinates(r, n_values, n)

        return {"factorvae_score": metrics.factor_vae_score(sample, observe, rng), **scores}
    # ReferentialGym's FactorVAE module votes on the epoch's samples: every stimulus of the space (each combination
    # with each of its O object-centric samples), 256 train and 128 eval votes of factor-fixed batches of 32
    stimulus = np.arange(len(stimuli.combinations(n_values)) * n_oc)
    epoch = stimuli.coordinates(stimulus, n_values, n_oc)
    return {"factorvae_score": metrics.factor_vae_score_referentialgym(
        stimuli.observe(space, epoch, stimulus % n_oc), epoch, rng), **scores}


def figure_episode(seed: int, n_values=(5, 5, 3), n_oc: int = 1, shots: int = 1) -> dict:
    """One meta-RG's targets for Figures 3 and 4: the space, the support then query stimuli (coordinates, SCS vectors,
    phase) and the posdis speaker's message for each (L = 4)."""
    rng = np.random.default_rng(seed)
    space = stimuli.sample_space(rng, n_values=list(n_values), n_oc=n_oc)
    train, test = stimuli.split(n_values, n_oc)
    support = stimuli.component_focused_sampling(rng, n_values, train, n_oc, shots, "support")
    query = stimuli.component_focused_sampling(rng, n_values, test, n_oc, shots, "query")
    idx = np.concatenate([support, query])
    coords = stimuli.coordinates(idx, n_values, n_oc)
    return {"space": space, "coords": coords, "scs": stimuli.observe(space, coords, idx % n_oc),
            "query": np.arange(len(idx)) >= len(support), "messages": posdis_message(coords, max_len=4)}
