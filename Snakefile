# reprobench: one DAG from raw data to every table and figure of five published results.
# `snakemake --cores all` runs the embedded default (config.yaml: small, offline, CPU);
# `snakemake --profile slurm` runs the papers' full scale on a Slurm cluster (slurm/config.yaml, paper.yaml).
# Paths: results/<benchmark>/{curves,metrics,tables,figures,comparison.csv}, results/report.md; logs/ mirrors them.

from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/arith.smk"
include: "workflow/rules/wade.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        "results/report.md",
        get_all_targets(),
