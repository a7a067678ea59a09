"""Cisneros, Sivic & Mikolov (2022), "Benchmarking Learning Efficiency in Deep Reservoir Computing" (WADE).

Stages (workflow/rules/wade.smk): task data and IMDB -> reservoirs, sequence models, IMDB models -> aggregate ->
Tables 2, 4, 5, 6 and Figures 1, 2, 3 -> compare.
"""

from reprobench.core.benchmark import Paper

PAPER = Paper(key="wade", id="cisneros2022-wade",
              title="Benchmarking Learning Efficiency in Deep Reservoir Computing (WADE)",
              citation="Cisneros, Sivic & Mikolov, 2022, Conference on Lifelong Learning Agents (CoLLAs)",
              full_scale="IMDB (Table 2) on the real aclImdb corpus (`wade.imdb.source: download`, 84 MB), 50 seeds of "
                         "5 models at 630 evaluations over 25,000 reviews each: a GPU (paper.yaml); the synthetic "
                         "tasks' 100 seeds (paper.yaml) narrow the intervals further")
