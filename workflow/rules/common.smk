# Validation, wildcard constraints and input functions shared by every benchmark's rules.
# All logic lives in the reprobench package (src/); the rules call `python -m reprobench`.

import os
import sys

from snakemake.utils import validate

SRC = os.path.join(workflow.basedir, "src")
sys.path.insert(0, SRC)
# Jobs (local, conda or Slurm) import the package from this checkout, whatever environment runs them.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)
# ...with the interpreter that runs Snakemake (its virtual environment), unless a conda env is activated on top.
os.environ["PATH"] = os.pathsep.join((os.path.dirname(sys.executable), os.environ.get("PATH", "")))

from reprobench.core.errors import ConfigError  # noqa: E402
from reprobench.arith import grid as arith_grid  # noqa: E402

validate(config, schema="../schemas/config.schema.yaml")
try:
    arith_grid.check(config["arith"])
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None

ENV = "../../envs/reprobench.yaml"
PY = "python -m reprobench"

# Every benchmark adds its final outputs here; rule all and the report read them.
TARGETS = {"tables": [], "figures": [], "comparisons": [], "other": []}


def get_all_targets():
    return [p for paths in TARGETS.values() for p in paths]


def get_report_inputs(wildcards):
    return {k: TARGETS[k] for k in ("tables", "figures", "comparisons")}
