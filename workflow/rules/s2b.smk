# s2b: Denamganaï, Missaoui & Walker (2023), "Meta-Referential Games to Learn Compositional Learning Behaviours".
# speaker (the posdis speaker over episodes) and disentanglement (SCS stimuli) -> aggregate -> Table 1's PS column,
# Appendix D.2; train (R2D2 listener or a user's agent, one run per model, O, S, variant, seed) and train_experiment
# (one per experiment, model, variant, seed; Table 1's learned speaker and listener, Table 4, Figures 5, 6)
# -> aggregate_zsct -> Tables 1, 2, 4; train_experiment -> Figures 5, 6; -> compare.
# Table 3 and Figures 3, 4 from the speaker and one episode. Runs, paths and input functions: src/reprobench/s2b/grid.py.
# Config: the `s2b` section, validated against workflow/schemas/s2b.schema.yaml.

from reprobench.s2b import grid as s2b

S2B = load_benchmark("s2b")


# Everything runs on the submitting node: the probes take seconds (minutes at paper.yaml's episode counts).
localrules:
    s2b_speaker,
    s2b_disentanglement,
    s2b_aggregate,
    s2b_aggregate_zsct,
    s2b_table1,
    s2b_table2,
    s2b_table4,
    s2b_table3,
    s2b_tableD2,
    s2b_figure3,
    s2b_figure4,
    s2b_figure5,
    s2b_figure6,
    s2b_compare,


rule s2b_speaker:
    output:
        s2b.SPEAKER_CURVE,
    log:
        s2b.SPEAKER_LOG,
    benchmark:
        s2b.SPEAKER_TIMING
    wildcard_constraints:
        **S2B.wildcards(),
    conda:
        ENV
    params:
        episodes=config["s2b"]["speaker"]["episodes"],
        v_min=config["s2b"]["speaker"]["v_min"],
        v_max=config["s2b"]["speaker"]["v_max"],
        eoa_episodes=config["s2b"]["speaker"]["eoa_episodes"],
        eoa_epochs=config["s2b"]["speaker"]["eoa_epochs"],
        scale=config["scale"],
    shell:
        "python -m reprobench s2b speaker --seed {wildcards.seed:q} --episodes {params.episodes:q} "
        "--v-min {params.v_min:q} --v-max {params.v_max:q} --eoa-episodes {params.eoa_episodes:q} "
        "--eoa-epochs {params.eoa_epochs:q} --scale {params.scale:q} --out {output:q} 2> {log:q}"


rule s2b_disentanglement:
    output:
        s2b.DISENTANGLEMENT_CURVE,
    log:
        s2b.DISENTANGLEMENT_LOG,
    benchmark:
        s2b.DISENTANGLEMENT_TIMING
    wildcard_constraints:
        **S2B.wildcards(),
    conda:
        ENV
    params:
        n_oc=config["s2b"]["disentanglement"]["n_oc"],
        scale=config["scale"],
    shell:
        "python -m reprobench s2b disentanglement --seed {wildcards.seed:q} --n-oc {params.n_oc:q} "
        "--scale {params.scale:q} --out {output:q} 2> {log:q}"


rule s2b_train:
    output:
        s2b.ZSCT_CURVE,
    log:
        s2b.ZSCT_LOG,
    benchmark:
        s2b.ZSCT_TIMING
    wildcard_constraints:
        **S2B.wildcards("zsct"),
    group:
        "s2b_train"
    conda:
        ENV
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        model=lambda wildcards: S2B.user_models().get(wildcards.model, wildcards.model),
        sizes=config["s2b"]["zsct"]["sizes"],
        observations=config["s2b"]["zsct"]["observations"],
        eval_every=config["s2b"]["zsct"]["eval_every"],
        device=config["device"],
        scale=config["scale"],
        checkpoint=s2b.ZSCT_CHECKPOINT,
        checkpoint_minutes=config["s2b"]["zsct"]["checkpoint_minutes"],
    shell:
        "python -m reprobench s2b train --experiment zsct --model {params.model:q} --n-oc {wildcards.o:q} "
        "--shots {wildcards.s:q} "
        "--variant {wildcards.variant:q} --seed {wildcards.seed:q} --sizes {params.sizes:q} "
        "--observations {params.observations:q} --eval-every {params.eval_every:q} --device {params.device:q} "
        "--threads {threads} --scale {params.scale:q} --checkpoint {params.checkpoint:q} "
        "--checkpoint-minutes {params.checkpoint_minutes:q} --out {output:q} 2> {log:q}"


# Table 1 (multi-agent: reprobench.s2b.marl), Table 4, Figures 5 and 6: the same R2D2 trainer with another preset
# (reprobench.s2b.grid.EXPERIMENTS).
rule s2b_train_experiment:
    output:
        s2b.EXPERIMENT_CURVE,
    log:
        s2b.EXPERIMENT_LOG,
    benchmark:
        s2b.EXPERIMENT_TIMING
    wildcard_constraints:
        **S2B.wildcards("experiment"),
    group:
        "s2b_train"
    conda:
        ENV
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        model=lambda wildcards: S2B.user_models().get(wildcards.model, wildcards.model),
        sizes=config["s2b"]["experiments"]["sizes"],
        observations=lambda w: config["s2b"]["experiments"]["observations"][w.experiment],
        eval_every=lambda w: config["s2b"]["experiments"]["eval_every"][w.experiment],
        device=config["device"],
        scale=config["scale"],
        checkpoint=s2b.EXPERIMENT_CHECKPOINT,
        checkpoint_minutes=config["s2b"]["experiments"]["checkpoint_minutes"],
    shell:
        "python -m reprobench s2b train --experiment {wildcards.experiment:q} --model {params.model:q} "
        "--variant {wildcards.variant:q} --seed {wildcards.seed:q} --sizes {params.sizes:q} "
        "--observations {params.observations:q} --eval-every {params.eval_every:q} --device {params.device:q} "
        "--threads {threads} --scale {params.scale:q} --checkpoint {params.checkpoint:q} "
        "--checkpoint-minutes {params.checkpoint_minutes:q} --out {output:q} 2> {log:q}"


rule s2b_aggregate_zsct:
    input:
        S2B.zsct_runs(),
    output:
        s2b.ZSCT,
    log:
        s2b.ZSCT_AGGREGATE_LOG,
    conda:
        ENV
    shell:
        "python -m reprobench s2b aggregate-zsct --curves {input:q} --out {output:q} 2> {log:q}"


rule s2b_table2:
    input:
        zsct=s2b.ZSCT,
    output:
        **reported("s2b", s2b.TABLES["table2"]),
    log:
        s2b.TABLES["table2"].log,
    conda:
        ENV
    params:
        caption=s2b.TABLES["table2"].caption,
    shell:
        "python -m reprobench s2b table2 --zsct {input.zsct:q} --out {output:q} 2> {log:q}"


rule s2b_table4:
    input:
        zsct=s2b.ZSCT,
    output:
        **reported("s2b", s2b.TABLES["table4"]),
    log:
        s2b.TABLES["table4"].log,
    conda:
        ENV
    params:
        caption=s2b.TABLES["table4"].caption,
    shell:
        "python -m reprobench s2b table4 --zsct {input.zsct:q} --out {output:q} 2> {log:q}"


rule s2b_figure5:
    input:
        S2B.experiment_curves("fig5"),
    output:
        **reported("s2b", s2b.FIGURES["figure5"]),
    log:
        s2b.FIGURES["figure5"].log,
    conda:
        ENV
    params:
        caption=s2b.FIGURES["figure5"].caption,
    shell:
        "python -m reprobench s2b figure5 --curves {input:q} --out {output:q} 2> {log:q}"


rule s2b_figure6:
    input:
        S2B.experiment_curves("fig6"),
    output:
        **reported("s2b", s2b.FIGURES["figure6"]),
    log:
        s2b.FIGURES["figure6"].log,
    conda:
        ENV
    params:
        caption=s2b.FIGURES["figure6"].caption,
    shell:
        "python -m reprobench s2b figure6 --curves {input:q} --out {output:q} 2> {log:q}"


rule s2b_aggregate:
    input:
        S2B.speaker_curves() + S2B.disentanglement_curves(),
    output:
        s2b.PROBES,
    log:
        s2b.AGGREGATE_LOG,
    conda:
        ENV
    shell:
        "python -m reprobench s2b aggregate --curves {input:q} --out {output:q} 2> {log:q}"


rule s2b_table1:
    input:
        probes=s2b.PROBES,
        zsct=s2b.ZSCT,
    output:
        **reported("s2b", s2b.TABLES["table1"]),
    log:
        s2b.TABLES["table1"].log,
    conda:
        ENV
    params:
        caption=s2b.TABLES["table1"].caption,
    shell:
        "python -m reprobench s2b table1 --probes {input.probes:q} --zsct {input.zsct:q} --out {output:q} 2> {log:q}"


rule s2b_tableD2:
    input:
        probes=s2b.PROBES,
    output:
        **reported("s2b", s2b.TABLES["tableD2"]),
    log:
        s2b.TABLES["tableD2"].log,
    conda:
        ENV
    params:
        caption=s2b.TABLES["tableD2"].caption,
    shell:
        "python -m reprobench s2b tableD2 --probes {input.probes:q} --out {output:q} 2> {log:q}"


# The speaker's utterances for the paper's example latents: no data.
rule s2b_table3:
    output:
        **reported("s2b", s2b.TABLES["table3"]),
    log:
        s2b.TABLES["table3"].log,
    conda:
        ENV
    params:
        caption=s2b.TABLES["table3"].caption,
    shell:
        "python -m reprobench s2b table3 --out {output:q} 2> {log:q}"


rule s2b_figure3:
    output:
        **reported("s2b", s2b.FIGURES["figure3"]),
    log:
        s2b.FIGURES["figure3"].log,
    conda:
        ENV
    params:
        caption=s2b.FIGURES["figure3"].caption,
        seed=config["s2b"]["figure_seed"],
    shell:
        "python -m reprobench s2b figure3 --seed {params.seed:q} --out {output:q} 2> {log:q}"


rule s2b_figure4:
    output:
        **reported("s2b", s2b.FIGURES["figure4"]),
    log:
        s2b.FIGURES["figure4"].log,
    conda:
        ENV
    params:
        caption=s2b.FIGURES["figure4"].caption,
        seed=config["s2b"]["figure_seed"],
    shell:
        "python -m reprobench s2b figure4 --seed {params.seed:q} --out {output:q} 2> {log:q}"


rule s2b_compare:
    input:
        probes=s2b.PROBES,
        zsct=s2b.ZSCT,
    output:
        csv=s2b.COMPARISON,
        yours=yours.rows_file(s2b.ROOT),
    log:
        s2b.COMPARISON_LOG,
    conda:
        ENV
    shell:
        "python -m reprobench s2b compare --probes {input.probes:q} --zsct {input.zsct:q} --out {output.csv:q} --yours {output.yours:q} 2> {log:q}"
