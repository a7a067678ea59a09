"""Kruszewski, Sorodoc & Mikolov, "Evaluating Online Continual Learning with CALM": online continual language
modelling over streams that switch between languages (MultiLingual) or domains (MultiDomain) without telling the
learner.

Work in progress (issue 11): not yet registered in reprobench.benchmarks. The library parts (the stream, the
metrics, the corpora) are importable on their own.
"""

from reprobench.core.benchmark import Paper

PAPER = Paper(key="calm", id="kruszewski2021-calm", title="Evaluating Online Continual Learning with CALM",
              citation="Kruszewski, Sorodoc & Mikolov, 2020, arXiv (code: github.com/germank/CALM, germank/lifelonglm)")
