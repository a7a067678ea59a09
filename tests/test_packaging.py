"""The pins: one constraints file, and the conda environment agrees with it."""

import yaml

from conftest import ROOT


def test_conda_environment_matches_constraints():
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    pins = dict(line.strip().split("==") for line in lines if "==" in line)
    env = yaml.safe_load((ROOT / "envs/reprobench.yaml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    for entry in pip:
        name, version = entry.split("==")
        assert pins[name] == version, name
    assert pins["torch"] == "2.13.0" and pins["snakemake"] == "9.27.1"
    assert pins["snakemake-executor-plugin-slurm"] == "2.8.0"


def test_conda_post_deploy_script_adds_the_no_deps_pins():
    """Snakemake runs envs/<env>.post-deploy.sh in a new environment; it must install requirements-nodeps.txt."""
    nodeps = [line for line in (ROOT / "requirements-nodeps.txt").read_text().splitlines()
              if line and not line.startswith("#")]
    script = (ROOT / "envs/reprobench.post-deploy.sh").read_text()
    for pin in nodeps:
        assert f"pip install --no-deps {pin}" in script, pin


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- test-command: .ci/run runs exactly this line -->", 1)[1]
    command = block.split("```bash\n", 1)[1].split("\n", 1)[0]
    assert command.endswith("python -m pytest")
    assert command in (ROOT / ".ci/run").read_text().splitlines()
