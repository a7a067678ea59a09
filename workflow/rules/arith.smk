# arith: Madsen & Johansen (2019), "Measuring Arithmetic Extrapolation Performance".
# prepare (success thresholds) -> train (a pack of settings, every seed, in one job) -> aggregate -> table, figure ->
# compare.
# Runs, paths and input functions: src/reprobench/arith/grid.py. Config: the `arith` section, validated against
# workflow/schemas/arith.schema.yaml.

import json

from reprobench.arith import grid as arith

ARITH = load_benchmark("arith")


localrules:
    arith_prepare_thresholds,
    arith_aggregate,
    arith_table,
    arith_figure,
    arith_compare,


# The success thresholds of every dataset setting (the extrapolation MSE of a nearly perfect model, specs 4.1), in
# one process: a few seconds each, so one start-up instead of one per dataset.
rule arith_prepare_thresholds:
    output:
        ARITH.thresholds(),
    log:
        arith.THRESHOLDS_LOG,
    conda:
        ENV
    params:
        datasets=json.dumps(ARITH.datasets(), separators=(",", ":")),
        samples=config["arith"]["threshold"]["samples"],
        epsilon=config["arith"]["threshold"]["epsilon"],
        seed=config["arith"]["threshold"]["seed"],
    shell:
        "python -m reprobench arith prepare-thresholds --datasets {params.datasets:q} --samples {params.samples:q} "
        "--epsilon {params.epsilon:q} --seed {params.seed:q} 2> {log:q}"


# Training: one job per pack (grid.Pack: the settings of one model, input size and number of steps, every seed, as
# one batched model; the table's cells and the figure's sweeps together). Its outputs are one curve file per
# (setting, seed), so naming one curve file runs its pack. One rule per pack, named for it (arith_train_<model>_n<input
# size>_h<hidden size>_s<steps>): a rule's outputs are a fixed list. The command gets the pack as JSON, not the paths
# (those would pass Linux's 128 KiB cap on one argument at paper scale). On Slurm each pack is one GPU job on the GPU
# partition (REPROBENCH_GPU_PARTITION, read here: the profile's set-resources cannot name rules made in a loop).
for _pack in ARITH.packs():

    rule:
        name:
            _pack.rule
        output:
            _pack.curves(),
        log:
            _pack.path(arith.TRAIN_LOG),
        benchmark:
            _pack.path(arith.TRAIN_TIMING)
        conda:
            ENV
        threads: config["threads"]
        resources:
            **gpu_job_resources(cpus_per_gpu=2, mem_mb=16000),
            gpu=1,
            runtime=lambda wildcards, attempt, pack=_pack: ARITH.runtime(pack, attempt),
        params:
            pack=_pack.to_json(),
            batch_size=config["arith"]["batch_size"],
            learning_rate=config["arith"]["learning_rate"],
            eval_every=config["arith"]["eval_every"],
            validation_size=config["arith"]["validation_size"],
            test_size=config["arith"]["test_size"],
            device=config["device"],
            scale=config["scale"],
            checkpoint=_pack.path(arith.CHECKPOINT),
            checkpoint_minutes=config["arith"]["checkpoint_minutes"],
            cuda_step=config["arith"]["cuda_step"],
        shell:
            "python -m reprobench arith train --pack {params.pack:q} --batch-size {params.batch_size:q} "
            "--learning-rate {params.learning_rate:q} --eval-every {params.eval_every:q} "
            "--validation-size {params.validation_size:q} --test-size {params.test_size:q} "
            "--device {params.device:q} --threads {threads} --scale {params.scale:q} "
            "--checkpoint {params.checkpoint:q} --checkpoint-minutes {params.checkpoint_minutes:q} --cuda-step {params.cuda_step:q} "
            "2> {log:q}"


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
        csv=arith.COMPARISON,
        yours=yours.rows_file(arith.ROOT),
    log:
        arith.COMPARISON_LOG,
    conda:
        ENV
    shell:
        "python -m reprobench arith compare --groups {input:q} --out {output.csv:q} --yours {output.yours:q} 2> {log:q}"
