# Arithmetic extrapolation (Madsen & Johansen 2019): thresholds -> batched training -> aggregate -> render.
# Outputs: results/arith/tables/operations.{md,csv,tex}, results/arith/figures/parameters.{png,pdf},
# results/arith/comparison.csv.

ARITH = config["arith"]
ARITH_SEEDS = {e: arith_grid.seeds(ARITH, e) for e in arith_grid.EXPERIMENTS}
ARITH_MODELS = sorted({s.model for s in arith_grid.settings(ARITH)})


wildcard_constraints:
    experiment="|".join(arith_grid.EXPERIMENTS),
    operation="add|sub|mul|div|squared|root",
    input_size=r"\d+",
    hidden_size=r"\d+",
    overlap=r"[0-9.]+",
    subset=r"[0-9.]+",
    interpolation=r"-?[0-9.]+_-?[0-9.]+",
    extrapolation=r"-?[0-9.]+_-?[0-9.]+",
    seed=r"\d+",


TARGETS["tables"].append("results/arith/tables/operations.md")
TARGETS["other"] += ["results/arith/tables/operations.csv", "results/arith/tables/operations.tex"]
TARGETS["figures"].append("results/arith/figures/parameters.png")
TARGETS["other"].append("results/arith/figures/parameters.pdf")
TARGETS["comparisons"].append("results/arith/comparison.csv")


def get_arith_setting(wildcards):
    return arith_grid.Setting.from_keys(dict(wildcards.items()) | {"experiment": wildcards.get("experiment", "operations")})


def get_arith_iterations(wildcards):
    return arith_grid.iterations(ARITH, get_arith_setting(wildcards))


def get_arith_runtime(wildcards, attempt):
    """Slurm minutes for one setting: all its seeds train together; more time on each retry."""
    steps = get_arith_iterations(wildcards) + 1
    return int(15 + attempt * ARITH["slurm_minutes_per_million_steps"] * steps / 1e6)


def get_arith_curves(wildcards):
    return [s.curve_path(seed) for s in arith_grid.settings(ARITH, wildcards.experiment)
            for seed in ARITH_SEEDS[wildcards.experiment]]


def get_arith_thresholds(wildcards):
    return sorted({s.threshold_path() for s in arith_grid.settings(ARITH, wildcards.experiment)})


def get_arith_groups(experiments):
    return [f"results/arith/metrics/{e}_groups.parquet" for e in experiments]


localrules:
    arith_threshold,
    arith_aggregate,
    arith_table,
    arith_figure,
    arith_compare,


rule arith_threshold:
    output:
        arith_grid.THRESHOLD_PATTERN,
    log:
        arith_grid.THRESHOLD_PATTERN.replace("results/", "logs/").replace(".json", ".log"),
    params:
        samples=ARITH["threshold"]["samples"],
        epsilon=ARITH["threshold"]["epsilon"],
        seed=ARITH["threshold"]["seed"],
    conda:
        ENV
    shell:
        "{PY} arith threshold --operation {wildcards.operation} --input-size {wildcards.input_size} "
        "--subset {wildcards.subset} --overlap {wildcards.overlap} --extrapolation {wildcards.extrapolation} "
        "--samples {params.samples} --epsilon {params.epsilon} --seed {params.seed} --out {output} 2> {log}"


ARITH_TRAIN_SHELL = (
    "{PY} arith train --experiment {params.experiment} --model {wildcards.model} "
    "--operation {wildcards.operation} --input-size {wildcards.input_size} --hidden-size {wildcards.hidden_size} "
    "--overlap {wildcards.overlap} --subset {wildcards.subset} --interpolation {wildcards.interpolation} "
    "--extrapolation {wildcards.extrapolation} --seeds {params.seeds} --outputs {output} "
    "--iterations {params.iterations} --batch-size {params.batch_size} --learning-rate {params.learning_rate} "
    "--eval-every {params.eval_every} --validation-size {params.validation_size} --test-size {params.test_size} "
    "--device {params.device} --threads {threads} --scale {params.scale} --checkpoint {params.checkpoint} "
    "--checkpoint-minutes {params.checkpoint_minutes} 2> {log}"
)
ARITH_TRAIN_PARAMS = dict(
    iterations=get_arith_iterations,
    batch_size=ARITH["batch_size"],
    learning_rate=ARITH["learning_rate"],
    eval_every=ARITH["eval_every"],
    validation_size=ARITH["validation_size"],
    test_size=ARITH["test_size"],
    device=config["device"],
    scale=config["scale"],
    checkpoint_minutes=ARITH["checkpoint_minutes"],
)
ARITH_SETTING_PATH = arith_grid.CURVE_PATTERN.replace("/seed={seed}.parquet", "")


# Table "Effect of dataset operation": every seed of one (operation, model) cell in one batched model.
rule arith_train_operations:
    output:
        expand(arith_grid.CURVE_PATTERN, experiment="operations", seed=ARITH_SEEDS["operations"], allow_missing=True),
    wildcard_constraints:
        model="|".join(ARITH_MODELS) or "none",
    log:
        ARITH_SETTING_PATH.replace("results/", "logs/").replace("{experiment}", "operations") + ".log",
    benchmark:
        ARITH_SETTING_PATH.replace("results/", "benchmarks/").replace("{experiment}", "operations") + ".tsv"
    params:
        experiment="operations",
        seeds=" ".join(map(str, ARITH_SEEDS["operations"])),
        checkpoint=ARITH_SETTING_PATH.replace("/curves/", "/checkpoints/").replace("{experiment}", "operations")
        + ".pt",
        **ARITH_TRAIN_PARAMS,
    threads: config["threads"]
    resources:
        gpu=1,
        runtime=get_arith_runtime,
    group:
        "arith_train"
    conda:
        ENV
    shell:
        ARITH_TRAIN_SHELL


# Figure "Effect of parameters": one job per (sweep, value, model), all its seeds batched.
rule arith_train_sweep:
    output:
        expand(arith_grid.CURVE_PATTERN, seed=ARITH_SEEDS["input_size"], allow_missing=True),
    wildcard_constraints:
        experiment="|".join(arith_grid.SWEEPS),
        model="|".join(ARITH_MODELS) or "none",
    log:
        ARITH_SETTING_PATH.replace("results/", "logs/") + ".log",
    benchmark:
        ARITH_SETTING_PATH.replace("results/", "benchmarks/") + ".tsv"
    params:
        experiment=lambda wildcards: wildcards.experiment,
        seeds=" ".join(map(str, ARITH_SEEDS["input_size"])),
        checkpoint=ARITH_SETTING_PATH.replace("/curves/", "/checkpoints/") + ".pt",
        **ARITH_TRAIN_PARAMS,
    threads: config["threads"]
    resources:
        gpu=1,
        runtime=get_arith_runtime,
    group:
        "arith_train"
    conda:
        ENV
    shell:
        ARITH_TRAIN_SHELL


rule arith_aggregate:
    input:
        curves=get_arith_curves,
        thresholds=get_arith_thresholds,
    output:
        runs="results/arith/metrics/{experiment}.parquet",
        groups="results/arith/metrics/{experiment}_groups.parquet",
    log:
        "logs/arith/metrics/{experiment}.log",
    params:
        window=ARITH["selection_window"],
    conda:
        ENV
    shell:
        "{PY} arith aggregate --experiment {wildcards.experiment} --curves {input.curves} "
        "--window {params.window} --out {output.runs} --groups-out {output.groups} 2> {log}"


rule arith_table:
    input:
        get_arith_groups(["operations"]),
    output:
        multiext("results/arith/tables/operations", ".md", ".csv", ".tex"),
    log:
        "logs/arith/tables/operations.log",
    conda:
        ENV
    shell:
        "{PY} arith table --groups {input} --out results/arith/tables/operations 2> {log}"


rule arith_figure:
    input:
        get_arith_groups(arith_grid.SWEEPS),
    output:
        multiext("results/arith/figures/parameters", ".png", ".pdf"),
    log:
        "logs/arith/figures/parameters.log",
    params:
        variant=ARITH["figure_variant"],
    conda:
        ENV
    shell:
        "{PY} arith figure --groups {input} --variant {params.variant} "
        "--out results/arith/figures/parameters 2> {log}"


rule arith_compare:
    input:
        get_arith_groups(arith_grid.EXPERIMENTS),
    output:
        "results/arith/comparison.csv",
    log:
        "logs/arith/comparison.log",
    conda:
        ENV
    shell:
        "{PY} arith compare --groups {input} --out {output} 2> {log}"
