# reprobench: one DAG from raw data to every table and figure of five published results.
# `snakemake --cores all` runs the embedded default (config.yaml: small, offline, CPU);
# `snakemake --profile slurm` runs the papers' full scale on a Slurm cluster (slurm/config.yaml, paper.yaml);
# `snakemake --report results/report.html` gathers every table and figure with its caption.
# Paths: results/<benchmark>/{curves,metrics,tables,figures,comparison.csv}, results/report.md; logs/ mirrors them.
# Each benchmark is one room (docs/ARCHITECTURE.md): src/reprobench/<key>/, workflow/rules/<key>.smk,
# workflow/schemas/<key>.schema.yaml, its config section, and one line in src/reprobench/benchmarks.py.

from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


for key in benchmarks.KEYS:

    include: f"workflow/rules/{key}.smk"


include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        "results/report.md",
        "results/reproduction.md",
        get_all_targets(),
