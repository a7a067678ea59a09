# Shared by every benchmark's rules (no rules here): the job environment, config validation, the registry, and
# the report helpers.
# All logic lives in the reprobench package (src/); the rules call `python -m reprobench <key> <stage>`.
# A benchmark's runs, paths and input functions live in its grid module (src/reprobench/<key>/grid.py).

import os
import sys

SRC = os.path.join(workflow.basedir, "src")
sys.path.insert(0, SRC)
# Jobs (local, conda or Slurm) import the package from this checkout, with the interpreter that runs Snakemake
# (its virtual environment) unless a conda environment is activated on top. Both variables are passed to jobs.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)
os.environ["PATH"] = os.pathsep.join((os.path.dirname(sys.executable), os.environ.get("PATH", "")))


envvars:
    "PATH",
    "PYTHONPATH",


from reprobench import benchmarks  # noqa: E402
from reprobench.core import schema, yours  # noqa: E402
from reprobench.core.errors import ConfigError  # noqa: E402

ENV = "../../envs/reprobench.yaml"
CAPTION = "../report/caption.rst"  # one template: each product's caption param, the scale and the variant

SCHEMAS = os.path.join(workflow.basedir, "workflow", "schemas")
# core.schema.validate, not snakemake.utils.validate: one short line per error (key path, value, what is allowed)
try:
    schema.validate(config, os.path.join(SCHEMAS, "config.schema.yaml"), None)
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None
for key in config:
    if key not in ("scale", "device", "threads") and key not in benchmarks.KEYS:
        raise WorkflowError(
            f"config key '{key}': not a setting or a benchmark (benchmarks: {', '.join(benchmarks.KEYS)})"
        )


def empty_mappings(data, path=()):
    """The key paths of the empty mappings in `data`."""
    for name, value in data.items() if isinstance(data, dict) else ():
        if value == {}:
            yield path + (name,)
        else:
            yield from empty_mappings(value, path + (name,))


# Snakemake merges an override file (--configfile) into config.yaml mapping by mapping, so an empty mapping there
# keeps config.yaml's entries: `s2b.experiments.seeds: {table4: {}}` would still run Table 4. Refused where the
# merged config holds entries. (An override that is empty, not a mapping or not YAML never gets here: Snakemake
# refuses it while reading its options, before the Snakefile runs.)
from snakemake.common.configfile import load_configfile  # noqa: E402  (Snakemake's reader: what it merged)

for override in workflow.overwrite_configfiles:
    for path in empty_mappings(load_configfile(override)):
        merged = config
        for name in path:
            merged = merged.get(name) if isinstance(merged, dict) else None
        if isinstance(merged, dict) and merged:
            raise WorkflowError(
                f"config key '{'.'.join(map(str, path))}': {{}} in {override} changes nothing, as Snakemake "
                "merges an override into config.yaml key by key; set the keys to change, or null where the "
                "schema allows it (s2b.experiments.seeds.<experiment>: null switches an experiment off)"
            )


def gpu_job_resources(**resources):
    """Slurm resources of a GPU training rule made in a loop (one rule per job, as arith's packs), which the profile's
    set-resources cannot name: the GPU partition from REPROBENCH_GPU_PARTITION (as slurm/config.yaml) and the given
    values. Empty where the variable is not set (a local run)."""
    partition = os.environ.get("REPROBENCH_GPU_PARTITION")
    return {"slurm_partition": partition, **resources} if partition else {}


GRIDS = {}  # key -> the benchmark's Grid, as its rule file loaded it


def load_benchmark(key):
    """Validate config[key] against workflow/schemas/<key>.schema.yaml (filling in its defaults), run the benchmark's
    own check, and return its Grid: runs, paths and the input functions of its rules."""
    if key not in config:
        raise WorkflowError(f"config key '{key}': the benchmark's section is missing (see config.yaml)")
    try:
        schema.validate(config[key], os.path.join(SCHEMAS, f"{key}.schema.yaml"), key)
        GRIDS[key] = benchmarks.grid(key, config[key])
        return GRIDS[key]
    except ConfigError as exc:  # its message names the key path
        raise WorkflowError(str(exc)) from None


def reported(key, product):
    """Named outputs {format: path} of one table or figure (core.benchmark.Product), each file marked for
    `snakemake --report` under its paper; the caption template reads the rule's `caption` param."""
    paper = benchmarks.paper(key)
    return {
        ext.lstrip("."): report(
            path,
            caption=CAPTION,
            category=f"{key}: {paper.title}",
            subcategory=product.title,
            labels={"file": os.path.basename(path)},
        )
        for ext, path in zip(product.formats, product.files())
    }


def yours_table(key):
    """The benchmark's "Your model" table (core.yours) where its config names a user's class, else None."""
    if not yours.names_user_class(config[key]):
        return None
    return yours.product(f"results/{key}", benchmarks.paper(key).title)


def get_all_targets():
    """Every benchmark's tables, figures and comparison, and its "Your model" table where it has one."""
    paths = [path for key in benchmarks.KEYS for path in GRIDS[key].targets().files()]
    return paths + [path for key in benchmarks.KEYS if yours_table(key) for path in yours_table(key).files()]


def get_report_inputs(wildcards):
    """The files results/report.md shows: Markdown tables, PNG figures and comparisons, benchmark by benchmark."""
    inputs = {"tables": [], "figures": [], "comparisons": []}
    for key in benchmarks.KEYS:
        targets = GRIDS[key].targets()
        inputs["tables"] += [f"{t.stem}.md" for t in targets.tables + [yours_table(key)] if t]
        inputs["figures"] += [f"{f.stem}.png" for f in targets.figures]
        inputs["comparisons"] += targets.comparisons
    return inputs
