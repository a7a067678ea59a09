#!/usr/bin/env bash
# Snakemake runs this inside the conda environment right after creating it (--software-deployment-method conda).
# The WADE authors' task generators, without their numpy<2 declaration (see requirements-nodeps.txt; the pin is
# checked against that file by tests/test_packaging.py).
set -euo pipefail
python -m pip install --no-deps incremental-tasks==0.1.2
