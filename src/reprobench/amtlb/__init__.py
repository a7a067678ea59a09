"""The Atari Multitask & Transfer Learning Benchmark (AMTLB, AI-ON 2017): how quickly an *architecture* (a network
and its learning rule) learns Atari games, with and without prior training on other games. The original Python-2
prototype never computed its ratio nor built its multitask benchmark; this package builds both on real ALE games
(ale-py bundles the ROMs), with the choices the README leaves open written in docs/DEVIATIONS.md (AMTLB section).

As a library: reprobench.amtlb.api (the architecture interface a researcher implements), reprobench.amtlb.atari
(the 59 games and the emulator layer), reprobench.amtlb.protocol (folds, cumulative scores, the ratio variants).
"""

from __future__ import annotations

from reprobench.core.benchmark import Paper

PAPER = Paper(
    key="amtlb", id="amtlb2017", title="Atari Multitask & Transfer Learning Benchmark (AMTLB)",
    citation="Kuhn et al., AI-ON (2017), github.com/AI-ON/Multitask-and-Transfer-Learning (README; no paper)",
    full_scale="paper.yaml: 59 ALE games x 10M frames in 5 folds (4.72 billion frames, 183 runs): about 17-36 "
               "GPU-hours, an estimate (README, amtlb speed)",
)
