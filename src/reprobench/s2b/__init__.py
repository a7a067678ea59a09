"""Denamganaï, Missaoui & Walker, "Meta-Referential Games to Learn Compositional Learning Behaviours" (S2B): a
speaker and a listener must acquire, within one episode, a language over a symbolic space that is resampled every
episode and shown through Symbolic Continuous Stimuli (SCS), then generalise to novel combinations (ZSCT).

As a library: reprobench.s2b.stimuli (the per-episode SCS space, its train/test split and the component-focused
S-shot sampling), reprobench.s2b.speaker (the rule-based posdis speaker) and reprobench.s2b.metrics (topsim, posdis,
bosdis, MIG, FactorVAE score, Modularity).
"""

from __future__ import annotations

from reprobench.core.benchmark import Paper

PAPER = Paper(
    key="s2b", id="denamganai2023-s2b", title="Meta-Referential Games to Learn Compositional Learning Behaviours",
    citation="Denamganaï, Missaoui & Walker (2023), arXiv (code: github.com/Near32/S2B, Regym, ReferentialGym)",
    full_scale="the trained R2D2 agents at the reference's sizes (paper.yaml: 32 actors, 0.5-10M observations per run, "
               "69 runs): about 136 GPU-hours, an estimate (README, s2b speed)",
)
