"""Cisneros, Sivic & Mikolov (2022), "Benchmarking Learning Efficiency in Deep Reservoir Computing" (WADE).

Stages (workflow/rules/wade.smk): task data and IMDB -> reservoirs, sequence models, IMDB models -> aggregate ->
Tables 2, 4, 5, 6 and Figures 1, 2, 3 -> compare.
"""

from reprobench.core.benchmark import Paper

PAPER = Paper(key="wade", id="cisneros2022-wade",
              title="Benchmarking Learning Efficiency in Deep Reservoir Computing (WADE)",
              citation="Cisneros, Sivic & Mikolov, 2022, Conference on Lifelong Learning Agents (CoLLAs)")
