"""The structure every benchmark follows (docs/ARCHITECTURE.md), and the code checks: ruff, snakefmt, Snakemake's
linter and the import contract."""

import importlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, run_snakemake
from reprobench import benchmarks
from reprobench.core.benchmark import Paper, Product

BIN = Path(sys.executable).parent
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
PAPER_CONFIG = yaml.safe_load((ROOT / "paper.yaml").read_text())


def schema(key: str) -> dict:
    return yaml.safe_load((ROOT / "workflow/schemas" / f"{key}.schema.yaml").read_text())


def run(*args, cwd=ROOT, env=None):
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("key", benchmarks.KEYS)
def test_every_benchmark_is_one_room(key):
    paper = benchmarks.paper(key)
    assert isinstance(paper, Paper) and paper.key == key and paper.title and paper.citation
    for path in (f"src/reprobench/{key}/grid.py", f"src/reprobench/{key}/cli.py", f"workflow/rules/{key}.smk",
                 f"workflow/schemas/{key}.schema.yaml"):
        assert (ROOT / path).is_file(), path
    assert key in CONFIG and key in PAPER_CONFIG
    grid = benchmarks.grid(key, CONFIG[key])
    targets = grid.targets()
    assert targets.tables and targets.figures and targets.comparisons
    for product in targets.tables + targets.figures:
        assert isinstance(product, Product) and product.stem.startswith(f"results/{key}/") and product.caption
    assert grid.expected_curves() and all(p.startswith(f"results/{key}/curves/") for p in grid.expected_curves())
    assert f"`{key}`" in (ROOT / "README.md").read_text()


def test_every_training_rule_has_slurm_entries():
    """Rules that declare a GPU are the ones the profile sends to the GPU partition and groups; rules made in a loop
    (arith's and CALM's packs), which the profile cannot name, take the GPU partition from common.smk's
    gpu_job_resources. A named rule may sit under an `if` (calm_train: a job per run when calm.runs_per_job is 1)."""
    profile = yaml.safe_load((ROOT / "slurm/config.yaml").read_text())
    gpu_rules, looped = set(), 0
    for key in benchmarks.KEYS:
        text = (ROOT / "workflow/rules" / f"{key}.smk").read_text()
        for match in re.finditer(r"^([ \t]*)rule (\w+):\n", text, re.M):
            rest = text[match.end():]
            end = re.search(rf"^{match.group(1)}(?=[^\s#])", rest, re.M)  # the next line as little indented
            if "gpu=1" in rest[:end.start() if end else None]:
                gpu_rules.add(match.group(2))
        for block in re.split(r"\n\s+rule:\n", text)[1:]:
            assert "gpu=1" not in block or "**gpu_job_resources(" in block, key
            looped += "gpu=1" in block
    assert gpu_rules and gpu_rules == set(profile["groups"]) and gpu_rules <= set(profile["set-resources"])
    assert looped == 2  # arith's and CALM's pack rules
    # a CPU rule with resources of its own (amtlb's random agent) stays off the GPU partition
    for rule in set(profile["set-resources"]) - gpu_rules:
        assert "GPU" not in str(profile["set-resources"][rule].get("slurm_partition", "")), rule


def test_schemas_enumerate_the_packages_constants():
    from reprobench.arith import data, models, paper
    from reprobench.core.plugins import USER_CLASS
    from reprobench.wade import grid, imdb_models, tasks

    arith = schema("arith")["$defs"]
    assert arith["operation"]["enum"] == list(data.OPERATIONS)
    builtin, user = arith["model"]["anyOf"]
    assert builtin["enum"] == list(paper.MODELS) == list(models.LAYERS)
    assert user["pattern"] == schema("wade")["properties"]["models"]["items"]["pattern"]
    for name in ("pkg.mod:Cls", "mod:Cls", "nac_add", "mod.Cls", "a:b:c", "1pkg:Cls", "pkg.mod:Cls.x"):
        assert bool(re.match(user["pattern"], name)) == bool(USER_CLASS.match(name)), name
    wade = schema("wade")["properties"]
    imdb_builtin, imdb_user = wade["imdb"]["properties"]["models"]["items"]["anyOf"]
    assert imdb_builtin["enum"] == list(imdb_models.MODELS) and imdb_user["pattern"] == user["pattern"]
    assert wade["imdb"]["properties"]["source"]["enum"] == list(grid.IMDB_RESOURCES)
    task = wade["tasks"]["items"]
    assert tuple(range(task["minimum"], task["maximum"] + 1)) == grid.TASK_IDS == tuple(sorted(tasks.TASKS))


def schema_defaults(node: dict, defs: dict, path=()):
    """(path, default) of every property with a default in a JSON schema ($refs into `defs` resolved)."""
    for name, sub in node.get("properties", {}).items():
        sub = defs[sub["$ref"].rsplit("/", 1)[1]] if "$ref" in sub else sub
        if "default" in sub and sub["default"] != {}:
            yield path + (name,), sub["default"]
        yield from schema_defaults(sub, defs, path + (name,))


@pytest.mark.parametrize("key", benchmarks.KEYS)
def test_config_yaml_states_the_schema_defaults(key):
    """One source for every default: where config.yaml writes a key out, it holds the schema's default."""
    s = schema(key)
    checked = 0
    for path, default in schema_defaults(s, s.get("$defs", {})):
        value = CONFIG[key]
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            assert value == default, f"{key}.{'.'.join(path)}: config.yaml {value!r}, schema default {default!r}"
            checked += 1
    assert checked >= 5


def test_ruff():
    proc = run(BIN / "ruff", "check", "src", "tests", "benchmarks")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_snakefmt():
    proc = run(BIN / "snakefmt", "--check", "Snakefile", "workflow")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_snakemake_lint(tmp_path):
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    proc = run_snakemake(["--lint", "--snakefile", str(ROOT / "Snakefile")], cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_import_contract_holds():
    proc = run(BIN / "lint-imports")
    assert proc.returncode == 0 and "0 broken" in proc.stdout, proc.stdout + proc.stderr


def test_import_contract_catches_core_importing_a_benchmark(tmp_path):
    """The contract can fail: a copy of the package whose core imports a benchmark breaks it."""
    shutil.copytree(ROOT / "src/reprobench", tmp_path / "reprobench")
    (tmp_path / "reprobench/core/leak.py").write_text("from reprobench.wade import grid  # noqa\n")
    env = {"PYTHONPATH": str(tmp_path), "PATH": str(BIN)}
    proc = run(BIN / "lint-imports", "--config", ROOT / "pyproject.toml", cwd=tmp_path, env=env)
    assert proc.returncode != 0 and "reprobench.core.leak -> reprobench.wade" in proc.stdout, proc.stdout
    assert importlib.util.find_spec("reprobench").origin.startswith(str(ROOT))  # the real package is untouched


RULE_WILDCARDS = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ResourceSettings
with SnakemakeApi() as api:
    workflow = api.workflow(resource_settings=ResourceSettings(cores=1), snakefile=Path(sys.argv[1]),
                            workdir=Path.cwd())._workflow
    print(json.dumps({rule.name: [sorted(rule.wildcard_names), {k: str(v) for k, v in
                                  (rule.wildcard_constraints or {}).items()}] for rule in workflow.rules}))
"""


def test_every_wildcard_of_every_rule_is_constrained_to_shell_safe_values(workdir):
    """A wildcard value reaches a shell command: each one is constrained per rule, and no constraint admits a
    character the shell would act on (every value is also quoted with :q)."""
    import json
    import re

    proc = subprocess.run([sys.executable, "-c", RULE_WILDCARDS, str(ROOT / "Snakefile")], cwd=workdir,
                          capture_output=True, text=True, check=True)
    rules = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sum(bool(names) for names, _ in rules.values()) >= 8
    for rule, (names, constraints) in rules.items():
        for name in names:
            assert name in constraints, f"rule {rule}: wildcard {name} has no constraint"
            for value in ("lstm;touch x", "a b", "$(id)", "`id`", "x'y", "a|b>c", "../x", "x\ny", ""):
                assert not re.fullmatch(constraints[name], value), (rule, name, value)
