# wade: Cisneros, Sivic & Mikolov (2022), "Benchmarking Learning Efficiency in Deep Reservoir Computing".
# prepare (task data, IMDB) -> train (reservoirs, sequence models, IMDB models) -> aggregate -> Tables 2, 4, 5, 6 and
# Figures 1, 2, 3 -> compare. Runs, paths and input functions: src/reprobench/wade/grid.py. Config: the `wade`
# section, validated against workflow/schemas/wade.schema.yaml.

from reprobench.wade import grid as wade

WADE = load_benchmark("wade")


localrules:
    wade_prepare_task,
    wade_prepare_imdb,
    wade_aggregate_synthetic,
    wade_aggregate_imdb,
    wade_table2,
    wade_table4,
    wade_table5,
    wade_table6,
    wade_figure1,
    wade_figure2,
    wade_figure3,
    wade_compare,


# One task's data for one seed, read by every model of that seed (the paper requires the same data).
rule wade_prepare_task:
    output:
        wade.DATA,
    log:
        wade.DATA_LOG,
    wildcard_constraints:
        **WADE.wildcards(),
    conda:
        ENV
    params:
        max_sequences=config["wade"]["max_sequences"],
        scale=config["scale"],
    shell:
        "python -m reprobench wade prepare-task --task {wildcards.task:q} --seed {wildcards.seed:q} "
        "--max-sequences {params.max_sequences:q} --scale {params.scale:q} --out {output:q} 2> {log:q}"


# IMDB: the real corpus (download: on the submitting node, it needs the network) or the synthetic stand-in.
rule wade_prepare_imdb:
    output:
        wade.IMDB_DATA,
    log:
        wade.IMDB_DATA_LOG,
    conda:
        ENV
    params:
        source=config["wade"]["imdb"]["source"],
        resources=WADE.imdb_resources(),
        train=config["wade"]["imdb"]["synthetic_train"],
        test=config["wade"]["imdb"]["synthetic_test"],
        scale=config["scale"],
    shell:
        "python -m reprobench wade prepare-imdb --source {params.source:q} --resources {params.resources:q} "
        "--train {params.train:q} --test {params.test:q} --scale {params.scale:q} --out {output:q} 2> {log:q}"


# Every CA rule of one (task, seed) in one vectorised job, into one curve file with a `rule` column (256 files per job
# would give the aggregate 256,000 inputs at paper scale), plus the ESN on the same data.
rule wade_train_reservoir:
    input:
        wade.DATA,
    output:
        **WADE.reservoir_outputs(),
    log:
        wade.RESERVOIR_LOG,
    benchmark:
        wade.RESERVOIR_TIMING
    wildcard_constraints:
        **WADE.wildcards(),
    # the longest jobs of a cpu run first (Incremental periodic's, about 25 min), so that both cores end together
    priority: 1
    group:
        "wade_train"
    conda:
        ENV
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        rules=WADE.rules(),
        rules_per_chunk=config["wade"]["rules_per_chunk"],
        device=config["device"],
        scale=config["scale"],
    shell:
        "python -m reprobench wade train-reservoir --data {input:q} --seed {wildcards.seed:q} "
        "--rules {params.rules:q} --reca-output {output.reca:q} --esn-output {output.esn:q} "
        "--rules-per-chunk {params.rules_per_chunk:q} --device {params.device:q} --threads {threads} "
        "--scale {params.scale:q} 2> {log:q}"


# RNN, LSTM and both Transformers (faithful: no causal mask; corrected: causal mask) of one (task, seed).
rule wade_train_sequence:
    input:
        wade.DATA,
    output:
        WADE.sequence_outputs(),
    log:
        wade.SEQUENCE_LOG,
    benchmark:
        wade.SEQUENCE_TIMING
    wildcard_constraints:
        **WADE.wildcards(),
    group:
        "wade_train"
    conda:
        ENV
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        epochs=config["wade"]["epochs"],
        device=config["device"],
        scale=config["scale"],
        user_models=list(WADE.user_models().values()),
    shell:
        "python -m reprobench wade train-sequence --data {input:q} --seed {wildcards.seed:q} --outputs {output:q} "
        "--user-models {params.user_models:q} --epochs {params.epochs:q} --device {params.device:q} "
        "--threads {threads} --scale {params.scale:q} 2> {log:q}"


rule wade_train_imdb:
    input:
        wade.IMDB_DATA,
    output:
        wade.IMDB_CURVE,
    log:
        wade.IMDB_LOG,
    benchmark:
        wade.IMDB_TIMING
    wildcard_constraints:
        **WADE.wildcards(),
    group:
        "wade_train"
    conda:
        ENV
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        epochs=config["wade"]["imdb"]["epochs"],
        eval_every=config["wade"]["imdb"]["eval_every"],
        device=config["device"],
        scale=config["scale"],
        checkpoint=wade.IMDB_CHECKPOINT,
        checkpoint_minutes=config["wade"]["imdb"]["checkpoint_minutes"],
    shell:
        "python -m reprobench wade train-imdb --data {input:q} --model {wildcards.model:q} --seed {wildcards.seed:q} "
        "--epochs {params.epochs:q} --eval-every {params.eval_every:q} --device {params.device:q} "
        "--threads {threads} --scale {params.scale:q} --checkpoint {params.checkpoint:q} "
        "--checkpoint-minutes {params.checkpoint_minutes:q} --out {output:q} 2> {log:q}"


# 6000 curve files at paper scale: the command names tasks and seeds, the CLI rebuilds the paths (grid.synthetic_curves)
# as one argument of 500 KB would pass the kernel's 128 KiB limit. disk_mb is set so that planning does not stat every
# input for the profile's default `2 * input.size_mb`.
rule wade_aggregate_synthetic:
    input:
        WADE.synthetic_curves(),
    output:
        runs=wade.SYNTHETIC_RUNS,
        mean_curves=wade.SYNTHETIC_MEAN_CURVES,
    log:
        wade.SYNTHETIC_LOG,
    conda:
        ENV
    resources:
        disk_mb=1000,
    params:
        tasks=config["wade"]["tasks"],
        seeds=WADE.seeds(),
        user_models=list(WADE.user_models()),
    shell:
        "python -m reprobench wade aggregate-synthetic --tasks {params.tasks:q} --seeds {params.seeds:q} "
        "--user-models {params.user_models:q} --out {output.runs:q} --mean-curves-out {output.mean_curves:q} "
        "2> {log:q}"


rule wade_aggregate_imdb:
    input:
        WADE.imdb_curves(),
    output:
        runs=wade.IMDB_RUNS,
        mean_curves=wade.IMDB_MEAN_CURVES,
    log:
        wade.IMDB_AGGREGATE_LOG,
    conda:
        ENV
    shell:
        "python -m reprobench wade aggregate-imdb --curves {input:q} --out {output.runs:q} "
        "--mean-curves-out {output.mean_curves:q} 2> {log:q}"


rule wade_table2:
    input:
        runs=wade.IMDB_RUNS,
    output:
        **reported("wade", wade.TABLES["table2"]),
    log:
        wade.TABLES["table2"].log,
    conda:
        ENV
    params:
        caption=wade.TABLES["table2"].caption,
    shell:
        "python -m reprobench wade table2 --runs {input.runs:q} --out {output:q} 2> {log:q}"


rule wade_table4:
    input:
        runs=wade.SYNTHETIC_RUNS,
        human=config["wade"]["human_sessions"],
    output:
        **reported("wade", wade.TABLES["table4"]),
    log:
        wade.TABLES["table4"].log,
    conda:
        ENV
    params:
        caption=wade.TABLES["table4"].caption,
    shell:
        "python -m reprobench wade table4 --runs {input.runs:q} --human-sessions {input.human:q} --out {output:q} "
        "2> {log:q}"


rule wade_table5:
    input:
        runs=wade.SYNTHETIC_RUNS,
        mean_curves=wade.SYNTHETIC_MEAN_CURVES,
    output:
        **reported("wade", wade.TABLES["table5"]),
    log:
        wade.TABLES["table5"].log,
    conda:
        ENV
    params:
        caption=wade.TABLES["table5"].caption,
    shell:
        "python -m reprobench wade table5 --runs {input.runs:q} --mean-curves {input.mean_curves:q} "
        "--out {output:q} 2> {log:q}"


rule wade_table6:
    input:
        WADE.first_seed_data(),
    output:
        **reported("wade", wade.TABLES["table6"]),
    log:
        wade.TABLES["table6"].log,
    conda:
        ENV
    params:
        caption=wade.TABLES["table6"].caption,
        user_models=list(WADE.user_models().values()),
    shell:
        "python -m reprobench wade table6 --data {input:q} --user-models {params.user_models:q} --out {output:q} "
        "2> {log:q}"


rule wade_figure1:
    input:
        runs=wade.SYNTHETIC_RUNS,
        mean_curves=wade.SYNTHETIC_MEAN_CURVES,
    output:
        **reported("wade", wade.FIGURES["figure1"]),
    log:
        wade.FIGURES["figure1"].log,
    conda:
        ENV
    params:
        caption=wade.FIGURES["figure1"].caption,
    shell:
        "python -m reprobench wade figure1 --runs {input.runs:q} --mean-curves {input.mean_curves:q} "
        "--out {output:q} 2> {log:q}"


rule wade_figure2:
    input:
        runs=wade.IMDB_RUNS,
        mean_curves=wade.IMDB_MEAN_CURVES,
    output:
        **reported("wade", wade.FIGURES["figure2"]),
    log:
        wade.FIGURES["figure2"].log,
    conda:
        ENV
    params:
        caption=wade.FIGURES["figure2"].caption,
    shell:
        "python -m reprobench wade figure2 --runs {input.runs:q} --mean-curves {input.mean_curves:q} "
        "--out {output:q} 2> {log:q}"


rule wade_figure3:
    input:
        runs=wade.SYNTHETIC_RUNS,
        mean_curves=wade.SYNTHETIC_MEAN_CURVES,
    output:
        **reported("wade", wade.FIGURES["figure3"]),
    log:
        wade.FIGURES["figure3"].log,
    conda:
        ENV
    params:
        caption=wade.FIGURES["figure3"].caption,
        variant=config["wade"]["figure_variant"],
    shell:
        "python -m reprobench wade figure3 --runs {input.runs:q} --mean-curves {input.mean_curves:q} "
        "--variant {params.variant:q} --out {output:q} 2> {log:q}"


rule wade_compare:
    input:
        runs=wade.SYNTHETIC_RUNS,
        mean_curves=wade.SYNTHETIC_MEAN_CURVES,
        imdb_runs=wade.IMDB_RUNS,
    output:
        csv=wade.COMPARISON,
        yours=yours.rows_file(wade.ROOT),
    log:
        wade.COMPARISON_LOG,
    conda:
        ENV
    shell:
        "python -m reprobench wade compare --runs {input.runs:q} --mean-curves {input.mean_curves:q} "
        "--imdb-runs {input.imdb_runs:q} --out {output.csv:q} --yours {output.yours:q} 2> {log:q}"
