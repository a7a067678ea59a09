"""The pins: one constraints file, and the conda environment agrees with it."""

import yaml

from conftest import ROOT


def test_conda_environment_matches_constraints():
    pins = dict(line.strip().split("==") for line in (ROOT / "constraints.txt").read_text().splitlines() if "==" in line)
    env = yaml.safe_load((ROOT / "envs/reprobench.yaml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    for entry in pip:
        name, version = entry.split("==")
        assert pins[name] == version, name
    assert pins["torch"] == "2.13.0" and pins["snakemake"] == "9.27.1"
    assert pins["snakemake-executor-plugin-slurm"] == "2.8.0"
