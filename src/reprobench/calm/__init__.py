"""Kruszewski, Sorodoc & Mikolov, "Evaluating Online Continual Learning with CALM": online continual language
modelling over streams that switch between languages (MultiLingual) or domains (MultiDomain) without telling the
learner.

As a library, without Snakemake (the paper's promise): reprobench.calm.stream.Stream (the online stream of (bptt, b)
token batches, class and switch information for evaluation only), reprobench.calm.metrics.compute_metrics (ppl,
ppl@sw, rec), reprobench.calm.online.run_online (test-then-train over a stream with any learner) and the learners
and models of Table 1 (reprobench.calm.learners, .models, .zoo).
"""

from reprobench.core.benchmark import Paper

PAPER = Paper(key="calm", id="kruszewski2021-calm", title="Evaluating Online Continual Learning with CALM",
              citation="Kruszewski, Sorodoc & Mikolov, 2020, arXiv (code: github.com/germank/CALM, germank/lifelonglm)",
              full_scale="paper.yaml on the real corpora (WMT09 news, Europarl, WikiText-103, and the BNC placed by "
                         "hand) at the papers' widths, 10 seeds: 1,100 runs, about 30 GPU-hours per variant for Table "
                         "1, an estimate from a FLOP count (README, calm speed)")
