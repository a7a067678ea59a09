# arith: Madsen & Johansen (2019), "Measuring Arithmetic Extrapolation Performance".
# prepare (success thresholds) -> train (every seed of a setting in one job) -> aggregate -> table, figure -> compare.
# Runs, paths and input functions: src/reprobench/arith/grid.py. Config: the `arith` section, validated against
# workflow/schemas/arith.schema.yaml.

from reprobench.arith import grid as arith

ARITH = load_benchmark("arith")


localrules:
    arith_prepare_threshold,
    arith_aggregate,
    arith_table,
    arith_figure,
    arith_compare,


# The success threshold of one dataset setting: the extrapolation MSE of a nearly perfect model (specs 4.1).
rule arith_prepare_threshold:
    output:
        arith.THRESHOLD,
    log:
        arith.THRESHOLD_LOG,
    wildcard_constraints:
        **ARITH.wildcards(),
    conda:
        ENV
    params:
        samples=config["arith"]["threshold"]["samples"],
        epsilon=config["arith"]["threshold"]["epsilon"],
        seed=config["arith"]["threshold"]["seed"],
    shell:
        "python -m reprobench arith prepare-threshold --operation {wildcards.operation:q} "
        "--input-size {wildcards.input_size:q} --subset {wildcards.subset:q} --overlap {wildcards.overlap:q} "
        "--extrapolation {wildcards.extrapolation:q} --samples {params.samples:q} --epsilon {params.epsilon:q} "
        "--seed {params.seed:q} --out {output:q} 2> {log:q}"


# Training: one job per (experiment, model, setting), all its seeds batched into one model. The table's cells
# (seeds from operations.seeds) and the figure's sweeps (seeds from sweeps.seeds) differ only in their seeds.
ARITH_TRAIN_SHELL = (
    "python -m reprobench arith train --experiment {wildcards.experiment:q} --model {wildcards.model:q} "
    "--operation {wildcards.operation:q} --input-size {wildcards.input_size:q} "
    "--hidden-size {wildcards.hidden_size:q} --overlap {wildcards.overlap:q} --subset {wildcards.subset:q} "
    "--interpolation {wildcards.interpolation:q} --extrapolation {wildcards.extrapolation:q} "
    "--seeds {params.seeds:q} --outputs {output:q} --iterations {params.iterations:q} "
    "--batch-size {params.batch_size:q} --learning-rate {params.learning_rate:q} "
    "--eval-every {params.eval_every:q} --validation-size {params.validation_size:q} "
    "--test-size {params.test_size:q} --device {params.device:q} --threads {threads} --scale {params.scale:q} "
    "--checkpoint {params.checkpoint:q} --checkpoint-minutes {params.checkpoint_minutes:q} 2> {log:q}"
)
ARITH_TRAIN_PARAMS = {
    "seeds": ARITH.get_seeds,
    "iterations": ARITH.get_iterations,
    "batch_size": config["arith"]["batch_size"],
    "learning_rate": config["arith"]["learning_rate"],
    "eval_every": config["arith"]["eval_every"],
    "validation_size": config["arith"]["validation_size"],
    "test_size": config["arith"]["test_size"],
    "device": config["device"],
    "scale": config["scale"],
    "checkpoint": arith.CHECKPOINT,
    "checkpoint_minutes": config["arith"]["checkpoint_minutes"],
}


rule arith_train_operations:
    output:
        expand(arith.CURVE, seed=ARITH.seeds("operations"), allow_missing=True),
    log:
        arith.TRAIN_LOG,
    benchmark:
        arith.TRAIN_TIMING
    wildcard_constraints:
        **ARITH.wildcards(experiments=["operations"]),
    group:
        "arith_train"
    conda:
        ENV
    threads: config["threads"]
    resources:
        gpu=1,
        runtime=ARITH.get_runtime,
    params:
        **ARITH_TRAIN_PARAMS,
    shell:
        ARITH_TRAIN_SHELL


rule arith_train_sweep:
    output:
        expand(arith.CURVE, seed=ARITH.seeds("input_size"), allow_missing=True),
    log:
        arith.TRAIN_LOG,
    benchmark:
        arith.TRAIN_TIMING
    wildcard_constraints:
        **ARITH.wildcards(experiments=arith.SWEEPS),
    group:
        "arith_train"
    conda:
        ENV
    threads: config["threads"]
    resources:
        gpu=1,
        runtime=ARITH.get_runtime,
    params:
        **ARITH_TRAIN_PARAMS,
    shell:
        ARITH_TRAIN_SHELL


# The command passes the grid keys the curve list depends on (JSON of Grid.curve_keys), not the paths: at paper scale
# those would pass Linux's 128 KiB cap on one argument (243 KB for input_size). The CLI lists the same files as
# `input.curves` with the grid's own function (tests/test_command_lengths.py).
rule arith_aggregate:
    input:
        curves=ARITH.get_curves,
        thresholds=ARITH.get_thresholds,
    output:
        runs=arith.RUNS,
        groups=arith.GROUPS,
    log:
        arith.AGGREGATE_LOG,
    wildcard_constraints:
        experiment="|".join(arith.EXPERIMENTS),
    conda:
        ENV
    params:
        window=config["arith"]["selection_window"],
        grid=ARITH.get_curve_keys,
    shell:
        "python -m reprobench arith aggregate --experiment {wildcards.experiment:q} --grid {params.grid:q} "
        "--window {params.window:q} --out {output.runs:q} --groups-out {output.groups:q} 2> {log:q}"


rule arith_table:
    input:
        ARITH.groups(["operations"]),
    output:
        **reported("arith", arith.TABLE),
    log:
        arith.TABLE.log,
    conda:
        ENV
    params:
        caption=arith.TABLE.caption,
    shell:
        "python -m reprobench arith table --groups {input:q} --out {output:q} 2> {log:q}"


rule arith_figure:
    input:
        ARITH.groups(arith.SWEEPS),
    output:
        **reported("arith", arith.FIGURE),
    log:
        arith.FIGURE.log,
    conda:
        ENV
    params:
        caption=arith.FIGURE.caption,
        variant=config["arith"]["figure_variant"],
    shell:
        "python -m reprobench arith figure --groups {input:q} --variant {params.variant:q} --out {output:q} "
        "2> {log:q}"


rule arith_compare:
    input:
        ARITH.groups(arith.EXPERIMENTS),
    output:
        arith.COMPARISON,
    log:
        arith.COMPARISON_LOG,
    conda:
        ENV
    shell:
        "python -m reprobench arith compare --groups {input:q} --out {output:q} 2> {log:q}"
