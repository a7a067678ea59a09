# calm: Kruszewski, Sorodoc & Mikolov (2021), "Evaluating Online Continual Learning with CALM".
# prepare (corpora, tokenised) -> train (one online run per dataset, lambda, model, variant, seed) -> aggregate ->
# Tables 1, 2, 4, Appendix C and Figures 1(b-e), 4 -> compare; Appendix A (corpus lines) and D (generated text).
# Runs, paths and input functions: src/reprobench/calm/grid.py.
# Config: the `calm` section, validated against workflow/schemas/calm.schema.yaml.

import json

from reprobench.calm import grid as calm

CALM = load_benchmark("calm")


localrules:
    calm_prepare,
    calm_aggregate,
    calm_table1,
    calm_table2,
    calm_table4,
    calm_appendix_c,
    calm_appendix_a,
    calm_appendix_d,
    calm_figure1b,
    calm_figure1c,
    calm_figure1d,
    calm_figure1e,
    calm_figure4,
    calm_compare,


# The corpora (download: on the submitting node, it needs the network; or the synthetic stand-in), tokenised once
# for every planned stream.
rule calm_prepare:
    output:
        calm.CORPORA,
    log:
        calm.CORPORA_LOG,
    conda:
        ENV
    params:
        source=config["calm"]["source"],
        resources=CALM.resources(),
        datasets=config["calm"]["datasets"],
        lambdas=json.dumps(config["calm"]["lambdas"]),
        seeds=CALM.seed_span(),
        n_fragments=config["calm"]["n_fragments"],
        window=config["calm"]["window"],
        chars=config["calm"]["synthetic_chars"],
        words=config["calm"]["synthetic_words"],
        top_words=config["calm"]["top_words"],
        splits=CALM.splits(),
    shell:
        "python -m reprobench calm prepare --source {params.source:q} --resources {params.resources:q} "
        "--datasets {params.datasets:q} --lambdas {params.lambdas:q} --seeds {params.seeds:q} "
        "--n-fragments {params.n_fragments:q} --window {params.window:q} --synthetic-chars {params.chars:q} "
        "--synthetic-words {params.words:q} --top-words {params.top_words:q} --splits {params.splits:q} "
        "--out {output:q} 2> {log:q}"


# Training. calm.runs_per_job > 1 (the small scales): one job per pack (core.packs: the runs of a (dataset, lambda),
# that many to a job, trained in turn in one process), one rule per pack made in a loop, as arith's; each run keeps
# its curve file, and naming one runs its pack. calm.runs_per_job 1 (paper.yaml): a job per run, the wildcard rule.
for _pack in CALM.packs():

    rule:
        name:
            _pack.rule
        input:
            calm.CORPORA,
        output:
            _pack.paths(calm.CURVE),
        log:
            _pack.path(calm.PACK_LOG),
        benchmark:
            _pack.path(calm.PACK_TIMING)
        conda:
            ENV
        threads: config["threads"]
        resources:
            **gpu_job_resources(cpus_per_gpu=2, mem_mb=16000),
            gpu=1,
        params:
            runs=CALM.pack_json(_pack),
            n_fragments=config["calm"]["n_fragments"],
            window=config["calm"]["window"],
            size_factor=config["calm"]["size_factor"],
            max_gate_steps=config["calm"]["max_gate_steps"],
            device=config["device"],
            scale=config["scale"],
            checkpoint_minutes=config["calm"]["checkpoint_minutes"],
        shell:
            "python -m reprobench calm train --corpora {input:q} --runs {params.runs:q} "
            "--n-fragments {params.n_fragments:q} --window {params.window:q} --size-factor {params.size_factor:q} "
            "--max-gate-steps {params.max_gate_steps:q} "
            "--device {params.device:q} --threads {threads} --scale {params.scale:q} "
            "--checkpoint-minutes {params.checkpoint_minutes:q} 2> {log:q}"


if not CALM.packs():

    rule calm_train:
        input:
            calm.CORPORA,
        output:
            calm.CURVE,
        log:
            calm.TRAIN_LOG,
        benchmark:
            calm.TRAIN_TIMING
        wildcard_constraints:
            **CALM.wildcards(),
        group:
            "calm_train"
        conda:
            ENV
        threads: config["threads"]
        resources:
            gpu=1,
        params:
            model=lambda wildcards: CALM.user_models().get(wildcards.model, wildcards.model),
            n_fragments=config["calm"]["n_fragments"],
            window=config["calm"]["window"],
            size_factor=config["calm"]["size_factor"],
            max_gate_steps=config["calm"]["max_gate_steps"],
            device=config["device"],
            scale=config["scale"],
            checkpoint=calm.CHECKPOINT,
            checkpoint_minutes=config["calm"]["checkpoint_minutes"],
        shell:
            "python -m reprobench calm train --corpora {input:q} --dataset {wildcards.dataset:q} "
            "--lam {wildcards.lam:q} --model {params.model:q} --variant {wildcards.variant:q} --seed {wildcards.seed:q} "
            "--n-fragments {params.n_fragments:q} --window {params.window:q} --size-factor {params.size_factor:q} "
            "--max-gate-steps {params.max_gate_steps:q} "
            "--device {params.device:q} --threads {threads} --scale {params.scale:q} "
            "--checkpoint {params.checkpoint:q} --checkpoint-minutes {params.checkpoint_minutes:q} "
            "--out {output:q} 2> {log:q}"


# The command passes the config keys the curve list depends on (JSON of Grid.curve_keys), not the 1100 paths (111 KB
# at paper scale, near Linux's 128 KiB cap on one argument); the CLI lists the same files as `input` with the grid's
# own function (tests/test_command_lengths.py).
rule calm_aggregate:
    input:
        CALM.curves(),
    output:
        runs=calm.RUNS,
        switch=calm.SWITCH_CURVES,
    log:
        calm.AGGREGATE_LOG,
    conda:
        ENV
    params:
        grid=CALM.curve_keys_json(),
    shell:
        "python -m reprobench calm aggregate --grid {params.grid:q} --out {output.runs:q} "
        "--switch-out {output.switch:q} 2> {log:q}"


rule calm_table1:
    input:
        runs=calm.RUNS,
    output:
        **reported("calm", calm.TABLES["table1"]),
    log:
        calm.TABLES["table1"].log,
    conda:
        ENV
    params:
        caption=calm.TABLES["table1"].caption,
    shell:
        "python -m reprobench calm table1 --runs {input.runs:q} --out {output:q} 2> {log:q}"


rule calm_table4:
    input:
        runs=calm.RUNS,
    output:
        **reported("calm", calm.TABLES["table4_std"]),
    log:
        calm.TABLES["table4_std"].log,
    conda:
        ENV
    params:
        caption=calm.TABLES["table4_std"].caption,
    shell:
        "python -m reprobench calm table4 --runs {input.runs:q} --out {output:q} 2> {log:q}"


# The Transformer's runs are on the dev halves: Appendix C reports validation perplexities.
rule calm_appendix_c:
    input:
        runs=calm.RUNS,
    output:
        **reported("calm", calm.TABLES["appendix_c_transformer"]),
    log:
        calm.TABLES["appendix_c_transformer"].log,
    conda:
        ENV
    params:
        caption=calm.TABLES["appendix_c_transformer"].caption,
    shell:
        "python -m reprobench calm appendix-c --runs {input.runs:q} --out {output:q} 2> {log:q}"


rule calm_appendix_a:
    input:
        calm.CORPORA,
    output:
        calm.APPENDIX_A,
    log:
        calm.APPENDIX_A_LOG,
    conda:
        ENV
    shell:
        "python -m reprobench calm appendix-a --corpora {input:q} --out {output:q} 2> {log:q}"


# The seed-0 runs sample text at stages of their stream (reprobench.calm.samples); their curve records hold it.
rule calm_appendix_d:
    input:
        CALM.sample_curves(),
    output:
        CALM.appendix_d_files(),
    log:
        calm.APPENDIX_D_LOG,
    conda:
        ENV
    shell:
        "python -m reprobench calm appendix-d --curves {input:q} --out {output:q} 2> {log:q}"


# Parameter counts at the paper's sizes: closed forms, no training.
rule calm_table2:
    output:
        **reported("calm", calm.TABLES["table2_model_sizes"]),
    log:
        calm.TABLES["table2_model_sizes"].log,
    conda:
        ENV
    params:
        caption=calm.TABLES["table2_model_sizes"].caption,
    shell:
        "python -m reprobench calm table2 --out {output:q} 2> {log:q}"


rule calm_figure1b:
    input:
        runs=calm.RUNS,
        switch=calm.SWITCH_CURVES,
    output:
        **reported("calm", calm.FIGURES["figure1b"]),
    log:
        calm.FIGURES["figure1b"].log,
    conda:
        ENV
    params:
        caption=calm.FIGURES["figure1b"].caption,
        variant=CALM.variant(),
    shell:
        "python -m reprobench calm figure1b --runs {input.runs:q} --switch {input.switch:q} "
        "--variant {params.variant:q} --out {output:q} 2> {log:q}"


rule calm_figure1c:
    input:
        runs=calm.RUNS,
        switch=calm.SWITCH_CURVES,
    output:
        **reported("calm", calm.FIGURES["figure1c"]),
    log:
        calm.FIGURES["figure1c"].log,
    conda:
        ENV
    params:
        caption=calm.FIGURES["figure1c"].caption,
        variant=CALM.variant(),
    shell:
        "python -m reprobench calm figure1c --runs {input.runs:q} --switch {input.switch:q} "
        "--variant {params.variant:q} --out {output:q} 2> {log:q}"


rule calm_figure1d:
    input:
        curve=CALM.weight_curve("multilingual") if "multilingual" in config["calm"]["lambdas"] else [],
    output:
        **reported("calm", calm.FIGURES["figure1d"]),
    log:
        calm.FIGURES["figure1d"].log,
    conda:
        ENV
    params:
        caption=calm.FIGURES["figure1d"].caption,
    shell:
        "python -m reprobench calm figure1d --curve {input.curve:q} --out {output:q} 2> {log:q}"


rule calm_figure1e:
    input:
        curve=CALM.weight_curve("multilingual") if "multilingual" in config["calm"]["lambdas"] else [],
    output:
        **reported("calm", calm.FIGURES["figure1e"]),
    log:
        calm.FIGURES["figure1e"].log,
    conda:
        ENV
    params:
        caption=calm.FIGURES["figure1e"].caption,
    shell:
        "python -m reprobench calm figure1e --curve {input.curve:q} --out {output:q} 2> {log:q}"


rule calm_figure4:
    input:
        curve=CALM.weight_curve("multidomain") if "multidomain" in config["calm"]["lambdas"] else [],
    output:
        **reported("calm", calm.FIGURES["figure4"]),
    log:
        calm.FIGURES["figure4"].log,
    conda:
        ENV
    params:
        caption=calm.FIGURES["figure4"].caption,
    shell:
        "python -m reprobench calm figure4 --curve {input.curve:q} --out {output:q} 2> {log:q}"


rule calm_compare:
    input:
        runs=calm.RUNS,
        weights=[pair.split("=", 1)[1] for pair in CALM.weight_curves()],
    output:
        csv=calm.COMPARISON,
        yours=yours.rows_file(calm.ROOT),
    log:
        calm.COMPARISON_LOG,
    conda:
        ENV
    params:
        weights=CALM.weight_curves(),
    shell:
        "python -m reprobench calm compare --runs {input.runs:q} --weight-curves {params.weights:q} "
        "--out {output.csv:q} --yours {output.yours:q} 2> {log:q}"
