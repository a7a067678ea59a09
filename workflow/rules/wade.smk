# WADE (Cisneros et al. 2022), synthetic tasks: prepare -> reservoirs / trained models -> aggregate -> render.
# Outputs: results/wade/tables/table{4_wade,5_accuracy,6_parameters}.{md,csv,tex},
# results/wade/figures/figure{1_time_to_threshold,3_learning_curves}.{png,pdf}, results/wade/comparison.csv.

from reprobench.wade import grid as wade_grid

WADE = config["wade"]
WADE_RULES = wade_grid.rules(WADE)
WADE_SEEDS = wade_grid.seeds(WADE)
WADE_DATA = wade_grid.DATA
WADE_CURVE = wade_grid.CURVE
WADE_SEQUENCE_RUNS = wade_grid.SEQUENCE_RUNS
WADE_TABLES = [f"results/wade/tables/{t}.{e}" for t in ("table4_wade", "table5_accuracy", "table6_parameters")
               for e in ("md", "csv", "tex")]
WADE_FIGURES = [f"results/wade/figures/{f}.{e}" for f in ("figure1_time_to_threshold", "figure3_learning_curves")
                for e in ("png", "pdf")]
IMDB = WADE["imdb"]
IMDB_CURVE = wade_grid.IMDB_CURVE
IMDB_OUTPUTS = [f"results/wade/tables/table2_imdb.{e}" for e in ("md", "csv", "tex")] + [
    f"results/wade/figures/figure2_imdb_curves.{e}" for e in ("png", "pdf")]
TARGETS["tables"].append("results/wade/tables/table2_imdb.md")
TARGETS["figures"].append("results/wade/figures/figure2_imdb_curves.png")
TARGETS["other"] += [p for p in IMDB_OUTPUTS if not p.endswith((".md", ".png"))]

TARGETS["tables"] += [t for t in WADE_TABLES if t.endswith(".md")]
TARGETS["figures"] += [f for f in WADE_FIGURES if f.endswith(".png")]
TARGETS["comparisons"].append("results/wade/comparison.csv")
TARGETS["other"] += [p for p in WADE_TABLES + WADE_FIGURES if not p.endswith((".md", ".png"))]


wildcard_constraints:
    task=r"\d+",
    config=r"[a-z0-9]+",


def get_wade_all_curves(wildcards):
    return [WADE_CURVE.format(model=m, config=c, task=t, seed=s) for t in WADE["tasks"] for s in WADE_SEEDS
            for m, c in wade_grid.runs(WADE)]


localrules:
    wade_prepare,
    wade_aggregate,
    wade_render,
    wade_imdb_prepare,
    wade_imdb_render,


rule wade_prepare:
    output:
        WADE_DATA,
    log:
        "logs/wade/data/task={task}/seed={seed}.log",
    params:
        max_sequences=WADE["max_sequences"],
        scale=config["scale"],
    conda:
        ENV
    shell:
        "{PY} wade prepare --task {wildcards.task} --seed {wildcards.seed} --max-sequences {params.max_sequences} "
        "--scale {params.scale} --out {output} 2> {log}"


# Every CA rule of one (task, seed) in one vectorised job, plus the ESN on the same data.
rule wade_reservoir:
    input:
        WADE_DATA,
    output:
        rules=[WADE_CURVE.replace("{model}", "reca").replace("{config}", f"rule{r}") for r in WADE_RULES],
        esn=WADE_CURVE.replace("{model}", "esn").replace("{config}", "default"),
    log:
        "logs/wade/reservoir/task={task}/seed={seed}.log",
    benchmark:
        "benchmarks/wade/reservoir/task={task}/seed={seed}.tsv"
    params:
        rules=" ".join(map(str, WADE_RULES)),
        rules_per_chunk=WADE["rules_per_chunk"],
        device=config["device"],
        scale=config["scale"],
    threads: config["threads"]
    resources:
        gpu=1,
    group:
        "wade_train"
    conda:
        ENV
    shell:
        "{PY} wade reservoir --data {input} --rules {params.rules} --rule-outputs {output.rules} "
        "--esn-output {output.esn} --rules-per-chunk {params.rules_per_chunk} --device {params.device} "
        "--threads {threads} --scale {params.scale} 2> {log}"


# RNN, LSTM and both Transformers (faithful: no causal mask; corrected: causal mask) of one (task, seed).
rule wade_sequence:
    input:
        WADE_DATA,
    output:
        [WADE_CURVE.replace("{model}", m).replace("{config}", c) for m, c in WADE_SEQUENCE_RUNS],
    log:
        "logs/wade/sequence/task={task}/seed={seed}.log",
    benchmark:
        "benchmarks/wade/sequence/task={task}/seed={seed}.tsv"
    params:
        runs=lambda wildcards, output: " ".join(
            f"{m}:{c if m == 'transformer' else 'faithful'}={path}" for (m, c), path in zip(WADE_SEQUENCE_RUNS, output)
        ),
        epochs=WADE["epochs"],
        device=config["device"],
        scale=config["scale"],
    threads: config["threads"]
    resources:
        gpu=1,
    group:
        "wade_train"
    conda:
        ENV
    shell:
        "{PY} wade sequence --data {input} --runs {params.runs} --epochs {params.epochs} --device {params.device} "
        "--threads {threads} --scale {params.scale} 2> {log}"


rule wade_aggregate:
    input:
        get_wade_all_curves,
    output:
        runs="results/wade/metrics/synthetic.parquet",
        curves="results/wade/metrics/synthetic_mean_curves.parquet",
    log:
        "logs/wade/metrics/synthetic.log",
    conda:
        ENV
    shell:
        "{PY} wade aggregate --curves {input} --out {output.runs} --curves-out {output.curves} 2> {log}"


rule wade_render:
    input:
        runs="results/wade/metrics/synthetic.parquet",
        curves="results/wade/metrics/synthetic_mean_curves.parquet",
        data=expand(WADE_DATA, task=WADE["tasks"], seed=WADE_SEEDS[0]),
        imdb="results/wade/metrics/imdb.parquet",
        human=WADE.get("human_sessions", []),
    output:
        WADE_TABLES + WADE_FIGURES + ["results/wade/comparison.csv"],
    log:
        "logs/wade/render.log",
    params:
        variant=WADE["figure_variant"],
    conda:
        ENV
    shell:
        "{PY} wade render --runs {input.runs} --mean-curves {input.curves} --data {input.data} "
        "--tables results/wade/tables --figures results/wade/figures --comparison results/wade/comparison.csv "
        "--figure-variant {params.variant} --imdb-runs {input.imdb} --human-sessions {input.human} 2> {log}"


# IMDB: the real corpus (download: on the submitting node, it needs the network) or the synthetic stand-in.
rule wade_imdb_prepare:
    output:
        "results/wade/data/imdb.parquet",
    log:
        "logs/wade/data/imdb.log",
    params:
        source=IMDB["source"],
        resources="resources/imdb" if IMDB["source"] == "download" else "resources/imdb-synthetic",
        train=IMDB["synthetic_train"],
        test=IMDB["synthetic_test"],
        scale=config["scale"],
    conda:
        ENV
    shell:
        "{PY} wade imdb-prepare --source {params.source} --resources {params.resources} --train {params.train} "
        "--test {params.test} --scale {params.scale} --out {output} 2> {log}"


rule wade_imdb_train:
    input:
        "results/wade/data/imdb.parquet",
    output:
        IMDB_CURVE,
    log:
        "logs/wade/imdb/model={model}/seed={seed}.log",
    benchmark:
        "benchmarks/wade/imdb/model={model}/seed={seed}.tsv"
    params:
        epochs=IMDB["epochs"],
        eval_every=IMDB["eval_every"],
        device=config["device"],
        scale=config["scale"],
        checkpoint=wade_grid.IMDB_CHECKPOINT,
        checkpoint_minutes=IMDB["checkpoint_minutes"],
    threads: config["threads"]
    resources:
        gpu=1,
    group:
        "wade_train"
    conda:
        ENV
    shell:
        "{PY} wade imdb-train --data {input} --model {wildcards.model} --seed {wildcards.seed} "
        "--epochs {params.epochs} --eval-every {params.eval_every} --device {params.device} --threads {threads} "
        "--scale {params.scale} --checkpoint {params.checkpoint} --checkpoint-minutes {params.checkpoint_minutes} "
        "--out {output} 2> {log}"


rule wade_imdb_render:
    input:
        expand(IMDB_CURVE, model=IMDB["models"], seed=range(IMDB["seeds"])),
    output:
        runs="results/wade/metrics/imdb.parquet",
        rendered=IMDB_OUTPUTS,
    log:
        "logs/wade/imdb_render.log",
    conda:
        ENV
    shell:
        "{PY} wade imdb-render --curves {input} --runs-out {output.runs} --tables results/wade/tables "
        "--figures results/wade/figures 2> {log}"
