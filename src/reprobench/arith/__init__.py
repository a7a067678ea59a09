"""Madsen & Johansen (2019), "Measuring Arithmetic Extrapolation Performance": NAC/NALU on the simple function task.

Stages (workflow/rules/arith.smk): thresholds -> batched training -> aggregate -> table, figure -> compare.
"""

from reprobench.arith.paper import scale_note
from reprobench.core.benchmark import Paper

PAPER = Paper(key="arith", id="madsen2019-arith", title="Measuring Arithmetic Extrapolation Performance",
              citation="Madsen & Johansen, 2019, SEDL workshop at NeurIPS 2019, arXiv:1910.01888",
              scale_note=scale_note(),
              full_scale="paper.yaml: 4,800 runs of 5,000,001 steps (10-15M for input sizes 125-300), 100 seeds per "
                         "table cell and 50 per sweep setting; about 27-36 GPU-hours for the padded grid, an estimate "
                         "(README, arith speed)")
