# amtlb: the Atari Multitask & Transfer Learning Benchmark (AI-ON, 2017), on real ALE games (ale-py's ROMs).
# train_fresh (the architecture on one game: the baselines F(X) and the specialists) and train_random (the random
# agent, the ratio's floor); train_pretrain (a fold's training games, saves the weights) -> train_transfer (each of
# the fold's held-out games from those weights); train_generalist (every game) -> aggregate -> tables transfer,
# multitask_scores; figures transfer_ratio, transfer_per_game, multitask_curves -> compare. parameters.json is the
# original's BenchmarkParms. Runs, paths and input functions: src/reprobench/amtlb/grid.py.
# Config: the `amtlb` section, validated against workflow/schemas/amtlb.schema.yaml.

import json

from reprobench.amtlb import grid as amtlb

AMTLB = load_benchmark("amtlb")
A = config["amtlb"]

TRAIN_SHELL = (
    "python -m reprobench amtlb train --kind {params.kind:q} --architecture {params.architecture:q} "
    "--games {params.games:q} --seed {wildcards.seed:q} {params.fold} --frames-per-game {params.frames:q} "
    "--num-envs {params.num_envs:q} --schedule-frames-per-game {params.schedule:q} --atari {params.atari:q} "
    "{params.weights} --device {params.device:q} "
    "--threads {threads} --emulator-threads {params.emulator_threads:q} --scale {params.scale:q} --checkpoint {params.checkpoint:q} "
    "--checkpoint-minutes {params.checkpoint_minutes:q} --out {output.curve:q} 2> {log:q}"
)


localrules:
    amtlb_parameters,
    amtlb_aggregate,
    amtlb_transfer,
    amtlb_multitask_scores,
    amtlb_transfer_ratio,
    amtlb_transfer_per_game,
    amtlb_multitask_curves,
    amtlb_compare,


rule amtlb_parameters:
    output:
        amtlb.PARAMETERS,
    log:
        amtlb.PARAMETERS_LOG,
    conda:
        ENV
    params:
        parms=json.dumps(AMTLB.parms_fields()),
    shell:
        "python -m reprobench amtlb parameters --parms {params.parms:q} --out {output:q} 2> {log:q}"


rule amtlb_train_fresh:
    output:
        curve=amtlb.CURVES["fresh"],
    log:
        amtlb.TRAIN_LOGS["fresh"],
    benchmark:
        amtlb.TRAIN_TIMINGS["fresh"]
    wildcard_constraints:
        **AMTLB.wildcards(),
    group:
        "amtlb_train"
    conda:
        ENV
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        **AMTLB.train_params("fresh"),
        device=config["device"],
        scale=config["scale"],
        checkpoint=amtlb.CHECKPOINTS["fresh"],
    shell:
        TRAIN_SHELL


# The random agent needs no GPU: emulator-bound, one CPU job per game and seed.
rule amtlb_train_random:
    output:
        curve=amtlb.RANDOM_CURVE,
    log:
        amtlb.RANDOM_LOG,
    benchmark:
        amtlb.RANDOM_TIMING
    wildcard_constraints:
        **AMTLB.wildcards(),
    conda:
        ENV
    threads: config["threads"]
    params:
        **AMTLB.train_params("random"),
        device="cpu",
        scale=config["scale"],
        checkpoint=amtlb.RANDOM_CHECKPOINT,
    shell:
        TRAIN_SHELL


rule amtlb_train_pretrain:
    output:
        curve=amtlb.CURVES["pretrain"],
        weights=amtlb.WEIGHTS,
    log:
        amtlb.TRAIN_LOGS["pretrain"],
    benchmark:
        amtlb.TRAIN_TIMINGS["pretrain"]
    wildcard_constraints:
        **AMTLB.wildcards(),
    group:
        "amtlb_train"
    conda:
        ENV
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        **AMTLB.train_params("pretrain"),
        device=config["device"],
        scale=config["scale"],
        checkpoint=amtlb.CHECKPOINTS["pretrain"],
    shell:
        TRAIN_SHELL


rule amtlb_train_transfer:
    input:
        weights=AMTLB.get_weights,
    output:
        curve=amtlb.CURVES["transfer"],
    log:
        amtlb.TRAIN_LOGS["transfer"],
    benchmark:
        amtlb.TRAIN_TIMINGS["transfer"]
    wildcard_constraints:
        **AMTLB.wildcards("transfer"),
    group:
        "amtlb_train"
    conda:
        ENV
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        **AMTLB.train_params("transfer"),
        device=config["device"],
        scale=config["scale"],
        checkpoint=amtlb.CHECKPOINTS["transfer"],
    shell:
        TRAIN_SHELL


rule amtlb_train_generalist:
    output:
        curve=amtlb.CURVES["generalist"],
    log:
        amtlb.TRAIN_LOGS["generalist"],
    benchmark:
        amtlb.TRAIN_TIMINGS["generalist"]
    wildcard_constraints:
        **AMTLB.wildcards(),
    group:
        "amtlb_train"
    conda:
        ENV
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        **AMTLB.train_params("generalist"),
        device=config["device"],
        scale=config["scale"],
        checkpoint=amtlb.CHECKPOINTS["generalist"],
    shell:
        TRAIN_SHELL


rule amtlb_aggregate:
    input:
        AMTLB.expected_curves(),
    output:
        transfer=amtlb.TRANSFER,
        multitask=amtlb.MULTITASK,
        scores=amtlb.SCORES,
    log:
        amtlb.AGGREGATE_LOG,
    conda:
        ENV
    params:
        frames=A["frames_per_game"],
        points=A["grid_points"],
        eps=A["ratio_eps"],
    shell:
        "python -m reprobench amtlb aggregate --curves {input:q} --frames-per-game {params.frames:q} "
        "--points {params.points:q} --eps {params.eps:q} --transfer {output.transfer:q} "
        "--multitask {output.multitask:q} --scores {output.scores:q} 2> {log:q}"


rule amtlb_transfer:
    input:
        amtlb.TRANSFER,
    output:
        **reported("amtlb", amtlb.TABLES["transfer"]),
    log:
        amtlb.TABLES["transfer"].log,
    conda:
        ENV
    params:
        caption=amtlb.TABLES["transfer"].caption,
    shell:
        "python -m reprobench amtlb transfer --metrics {input:q} --out {output:q} 2> {log:q}"


rule amtlb_multitask_scores:
    input:
        amtlb.SCORES,
    output:
        **reported("amtlb", amtlb.TABLES["multitask_scores"]),
    log:
        amtlb.TABLES["multitask_scores"].log,
    conda:
        ENV
    params:
        caption=amtlb.TABLES["multitask_scores"].caption,
    shell:
        "python -m reprobench amtlb multitask-scores --metrics {input:q} --out {output:q} 2> {log:q}"


rule amtlb_transfer_ratio:
    input:
        amtlb.TRANSFER,
    output:
        **reported("amtlb", amtlb.FIGURES["transfer_ratio"]),
    log:
        amtlb.FIGURES["transfer_ratio"].log,
    conda:
        ENV
    params:
        caption=amtlb.FIGURES["transfer_ratio"].caption,
    shell:
        "python -m reprobench amtlb transfer-ratio --metrics {input:q} --out {output:q} 2> {log:q}"


rule amtlb_transfer_per_game:
    input:
        amtlb.TRANSFER,
    output:
        **reported("amtlb", amtlb.FIGURES["transfer_per_game"]),
    log:
        amtlb.FIGURES["transfer_per_game"].log,
    conda:
        ENV
    params:
        caption=amtlb.FIGURES["transfer_per_game"].caption,
    shell:
        "python -m reprobench amtlb transfer-per-game --metrics {input:q} --out {output:q} 2> {log:q}"


rule amtlb_multitask_curves:
    input:
        amtlb.MULTITASK,
    output:
        **reported("amtlb", amtlb.FIGURES["multitask_curves"]),
    log:
        amtlb.FIGURES["multitask_curves"].log,
    conda:
        ENV
    params:
        caption=amtlb.FIGURES["multitask_curves"].caption,
    shell:
        "python -m reprobench amtlb multitask-curves --metrics {input:q} --out {output:q} 2> {log:q}"


rule amtlb_compare:
    input:
        amtlb.SCORES,
    output:
        csv=amtlb.COMPARISON,
        yours=yours.rows_file(amtlb.ROOT),
    log:
        amtlb.COMPARISON_LOG,
    conda:
        ENV
    params:
        frames=A["frames_per_game"],
        architecture=A["architecture"],
    shell:
        "python -m reprobench amtlb compare --scores {input:q} --frames-per-game {params.frames:q} "
        "--architecture {params.architecture:q} --out {output.csv:q} --yours {output.yours:q} "
        "2> {log:q}"
