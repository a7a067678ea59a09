"""The Snakemake workflow: dry-runs of the default and the cluster plan, bad configs, a tiny end-to-end run."""

import html
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import ROOT, results_differences, run_snakemake, tiny, write_config
from reprobench.core.curves import read_curve

SNAKEFILE = str(ROOT / "Snakefile")
CURVE = re.compile(r"results/arith/curves/[^,\s]+?\.parquet")


def planned_curves(output: str) -> set[str]:
    return set(CURVE.findall(output))


def test_default_config_plans_every_run_of_the_small_grid(workdir):
    out = run_snakemake(["-n", "--snakefile", SNAKEFILE, "--cores", "2"], cwd=workdir).stdout
    config = yaml.safe_load((ROOT / "config.yaml").read_text())["arith"]
    settings_sweeps = sum(len(config["sweeps"][k]) for k in ("input_size", "hidden_size", "overlap", "subset", "range"))
    n_sweep_settings = settings_sweeps * len(config["sweeps"]["models"])
    n_cells = sum(len(m) for m in config["operations"]["cells"].values())
    n_curves = n_cells * config["operations"]["seeds"] + n_sweep_settings * config["sweeps"]["seeds"]
    assert len(planned_curves(out)) == n_curves
    # one job per pack (model, steps, input size, hidden size): NAC+ at input 4, 25, 100 and hidden 2, 10 at input
    # 100 (the table's NAC+ cells and the sweeps), Linear, NAC*, NALU (the table)
    packs = dict(re.findall(r"^(arith_train_\w+)\s+(\d+)$", out, re.M))
    assert packs == {f"arith_train_{name}_s15001": "1" for name in (
        "nac_add_n4_h2", "nac_add_n25_h2", "nac_add_n100_h2", "nac_add_n100_h10", "linear_n100_h2", "nac_mul_n100_h2",
        "nalu_n100_h2")}
    assert re.search(r"^arith_prepare_thresholds\s+1$", out, re.M)  # 10 datasets in one job
    wade = yaml.safe_load((ROOT / "config.yaml").read_text())["wade"]
    jobs = len(wade["tasks"]) * wade["seeds"]
    for rule in ("wade_prepare_task", "wade_train_reservoir", "wade_train_sequence"):
        assert re.search(rf"{rule}\s+{jobs}\b", out), rule
    # one rule per table and figure, each run once
    for rule in ("arith_table", "arith_figure", "arith_compare", "wade_table2", "wade_table4", "wade_table5",
                 "wade_table6", "wade_figure1", "wade_figure2", "wade_figure3", "wade_compare", "report",
                 "reproduction"):
        assert re.search(rf"^{rule}\s+1$", out, re.MULTILINE), rule


def group_jobs(plan: str) -> list[tuple[str, list[str], list[str]]]:
    """(group, rules, resources lines) of every group job in a dry run's plan."""
    parts = re.split(r"^\[[^\]]+\] Group job (\w+) \(jobs in lexicogr\. order\):\n", plan, flags=re.M)
    jobs = []
    for name, body in zip(parts[1::2], parts[2::2]):
        block = body.split("\n\n[", 1)[0]
        jobs.append((name, re.findall(r"^\s+rule (\w+):", block, re.M),
                     re.findall(r"^\s+resources: (.*)", block, re.M)))
    return jobs


def test_slurm_profile_plans_the_full_4800_run_grid(workdir):
    shutil.copy(ROOT / "paper.yaml", workdir / "paper.yaml")
    shutil.copytree(ROOT / "slurm", workdir / "slurm")
    site = {"SLURM_ACCOUNT": "acct", "REPROBENCH_CPU_PARTITION": "cpu", "REPROBENCH_GPU_PARTITION": "gpu"}
    proc = run_snakemake(["-n", "--profile", "slurm", "--snakefile", SNAKEFILE], cwd=workdir, env=site)
    out = proc.stdout + proc.stderr
    assert "Using profile slurm" in out
    curves = planned_curves(out)
    assert len(curves) == 4800  # 1000 (table, seeds 0-99) + 3800 (sweeps, seeds 0-49)
    assert sum("experiment=operations/" in c for c in curves) == 1000
    assert max(int(re.search(r"seed=(\d+)", c).group(1)) for c in curves) == 99
    # paper.yaml packs them padded: one GPU job per (model, steps): NAC+, Linear (the table), NAC* and NALU at 5M,
    # 10M and 15M steps (the input-size sweep's longer runs)
    arith = dict(re.findall(r"^(arith_train_\w+)\s+(\d+)$", out, re.M))
    assert arith == {f"arith_train_{name}": "1" for name in (
        "nac_add_n100_h2_s5000001", "linear_n100_h2_s5000001", *(f"{model}_{sizes}" for model in ("nac_mul", "nalu")
        for sizes in ("n4to100_h2to10_s5000001", "n125to200_h2_s10000001", "n225to300_h2_s15000001")))}
    # each its own Slurm job (hours each: not grouped), with one GPU on the GPU partition (common.smk's
    # gpu_job_resources, from the same environment variable as the profile)
    for rule in arith:
        block = out.split(f"rule {rule}:", 1)[1].split("\n\n", 1)[0]
        resources = re.search(r"^\s+resources: (.*)", block, re.M).group(1)
        assert re.search(r"\bgpu=1\b", resources) and "slurm_partition=gpu" in resources, resources
        assert "slurm_account=acct" in resources and "cpus_per_gpu=2" in resources
    # Every training job is planned inside a profile group, asking for one GPU on the GPU partition.
    profile = yaml.safe_load((ROOT / "slurm/config.yaml").read_text())
    jobs = group_jobs(out)
    training = {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", out.split("Job stats:")[1].split("\n\n")[0],
                                                        re.M) if rule in profile["groups"]}
    # WADE 10 tasks x 100 seeds x (reservoir, sequence); IMDB 5 models x 50 seeds; CALM 13 models x
    # 4 (dataset, lambda) x 2 variants x 10 seeds, but 8 and 7 seeds for the two 30-expert MoE rows on MultiDomain;
    # the Transformer (Appendix C) adds 4 x 2 x 10
    calm_runs = 2 * (13 * 4 * 10 - 2 * (2 + 3)) + 4 * 2 * 10
    assert training["calm_train"] == calm_runs == 1100
    # AMTLB: 59 games x (fresh, transfer from its fold's weights), 5 folds' pre-training, one generalist; the random
    # agent's 59 fresh runs are CPU jobs outside the GPU groups
    amtlb_runs = 59 + 59 + 5 + 1
    assert (training["amtlb_train_fresh"], training["amtlb_train_transfer"], training["amtlb_train_pretrain"],
            training["amtlb_train_generalist"]) == (59, 59, 5, 1)
    assert re.search(r"amtlb_train_random\s+59\b", out)
    assert training["s2b_train"] == 3 * 3 * 3  # Table 2: O x S x seeds, faithful
    # Table 4, Figure 5 (recall: SCS and OHE, 10 seeds each) and Figure 6's seeds per model
    assert training["s2b_train_experiment"] == 3 + 3 + 3 + 3 + 2 + 10 + 10 + 5 + 5 + 2 + 2  # Table 1: S x 3 seeds
    assert sum(len(rules) for _, rules, _ in jobs) == sum(training.values()) == 10 * 100 * 2 + 5 * 50 \
        + calm_runs + 27 + 48 + amtlb_runs
    for group, rules, resources in jobs:
        assert all(profile["groups"][rule] == group for rule in rules)
        assert resources and all(re.search(r"\bgpu=1\b", r) and "slurm_partition=gpu" in r and "slurm_account=acct" in r
                                 for r in resources)
    assert profile["group-components"] == {"wade_gpu": 4, "calm_gpu": 1, "s2b_gpu": 1, "amtlb_gpu": 1,
                                          "amtlb_pretrain_gpu": 1}
    assert profile["set-resource-scopes"] == {"gpu": "local"} and profile["resources"] == {"gpu": 1}


@pytest.mark.parametrize("edit, words", [
    (lambda c: c["arith"]["operations"]["cells"].update(pow=["nalu"]), ["pow"]),
    (lambda c: c["arith"]["operations"].update(seeds=-3), ["seeds", "-3"]),
    (lambda c: c["arith"]["sweeps"].update(subset=[0.75]), ["arith.sweeps.subset", "subset=0.75", "113 positions"]),
    (lambda c: c["arith"]["sweeps"].update(models=["lstm"]), ["lstm"]),
    (lambda c: c["wade"].update(tasks=[5, 11]), ["tasks", "11"]),
    (lambda c: c["wade"].update(reca_rules=[30, 300]), ["wade.reca_rules[1]", "must be <= 255, got 300"]),
    (lambda c: c["wade"].update(reca_rules=[30, 30]), ["wade.reca_rules", "items must be unique, got [30, 30]"]),
    (lambda c: c.update(threads=0), ["config key 'threads': must be >= 1, got 0"]),
    (lambda c: c.update(atari={"games": 59}), ["config key 'atari'", "not a setting or a benchmark"]),
    (lambda c: c["amtlb"].update(games=["breakout", "pongg"]), ["amtlb.games", "unknown game 'pongg'"]),
    (lambda c: c["amtlb"].update(games=["breakout", "pong"], folds=3), ["amtlb.folds", "3 folds for 2 games"]),
    (lambda c: c["amtlb"].update(architecture="nosuchpackage.mod:Agent"), ["amtlb.architecture", "nosuchpackage"]),
    (lambda c: c["wade"].update(models=["tiny_user_wade:NoForward"]), ["wade.models", "lacks the method 'forward'"]),
    (lambda c: c["arith"]["operations"]["cells"].update(add=["tiny_user_arith:NoForward"]),
     ["arith.operations.cells / arith.sweeps.models", "tiny_user_arith:NoForward", "lacks the method 'forward'"]),
    (lambda c: c.pop("wade"), ["config key 'wade'", "section is missing"]),
    (lambda c: c["arith"].update(eval_every=10**9), ["arith.eval_every", "arith.operations.iterations"]),
    (lambda c: c["arith"]["sweeps"].update(long_iterations=[{"input_sizes": [7], "iterations": 10**6}]),
     ["arith.sweeps.long_iterations[0].input_sizes", "[7]", "arith.sweeps.input_size"]),
    (lambda c: c["wade"].update(human_sessions=["nothere.parquet"]), ["wade.human_sessions", "nothere.parquet",
                                                                      "does not exist"]),
    (lambda c: c["s2b"]["experiments"]["seeds"].update(table4={"lstm": 2, "gru": 2}),
     ["s2b.experiments.seeds.table4", "'gru'"]),
    (lambda c: c["s2b"]["experiments"]["seeds"].update(table4={"tiny_user_s2b_core:NoCore": 2}),
     ["s2b.experiments.seeds.table4", "tiny_user_s2b_core:NoCore"]),
    (lambda c: c["s2b"]["experiments"]["seeds"].update(fig6={"tiny_user_s2b_core:TinyGRUCore": 2}),
     ["s2b.experiments.seeds.fig6", "unknown model"]),
    (lambda c: c["calm"].update(runs_per_job=0), ["calm.runs_per_job", "must be >= 1, got 0"]),
])
def test_bad_config_stops_with_a_message_naming_the_key(workdir, edit, words):
    write_config(workdir, edit)
    (workdir / "results").mkdir()  # outputs up to date must not hide a bad value ("Nothing to be done")
    proc = run_snakemake(["-n", "--snakefile", SNAKEFILE, "--cores", "1"], cwd=workdir, check=False)
    assert proc.returncode != 0
    message = proc.stdout + proc.stderr
    for word in words:
        assert word in message, message[-2000:]
    assert len(message.splitlines()) < 15 and "any of the given schemas" not in message, message  # one short error
    assert list((workdir / "results").iterdir()) == []


@pytest.mark.parametrize("target", [
    "results/wade/curves/experiment=imdb/model=lstm;touch${IFS}INJECTED;/seed=0.parquet",
    "results/arith/metrics/operations;touch${IFS}INJECTED;.parquet",
    "results/wade/data/task=1;touch${IFS}INJECTED;/seed=12305.parquet",
])
def test_a_wildcard_value_outside_its_constraint_matches_no_rule(workdir, target):
    proc = run_snakemake(["-n", "-p", "--snakefile", SNAKEFILE, "--cores", "1", target], cwd=workdir, check=False)
    assert proc.returncode != 0 and "MissingRuleException" in proc.stdout + proc.stderr
    assert "touch INJECTED" not in proc.stdout + proc.stderr and not (workdir / "INJECTED").exists()


def job_counts(log: str) -> dict[str, int]:
    """Rule -> jobs, from the 'Job stats' table of a Snakemake run."""
    table = log.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.MULTILINE)}


@pytest.mark.slow
def test_tiny_end_to_end_run_makes_table_figure_comparison_and_report(tiny_local_run):
    workdir = tiny_local_run
    results = workdir / "results"
    for name in ("arith/tables/operations.md", "arith/tables/operations.csv", "arith/tables/operations.tex",
                 "arith/figures/parameters.png", "arith/figures/parameters.pdf", "arith/comparison.csv", "report.md"):
        assert (results / name).stat().st_size > 0, name
    table = (results / "arith/tables/operations.md").read_text()
    assert "| − | NAC+ | faithful |" in table and "NAC•" in table and "Scale: small" in table
    # the user's units (tests/plugins/tiny_user_arith.py): the scripted exact sum solves every seed at step 0, the
    # learned constant none
    assert "| + | ExactAdd (yours) | faithful | **100% (+0%/−66%)** | **0.0e0** |" in table
    assert "| + | Constant (yours) | faithful | 0% (+66%/−0%) | — | — | — |" in table
    comparison = pd.read_csv(results / "arith/comparison.csv")
    for column in ("benchmark", "result", "row", "metric", "published", "published_low", "published_high",
                   "reproduced", "reproduced_low", "reproduced_high", "n_runs", "scale", "variant", "within"):
        assert column in comparison.columns
    assert set(comparison["variant"]) == {"faithful", "corrected"}
    success = comparison[(comparison["row"] == "sub/NAC+") & (comparison["metric"] == "success")]
    assert len(success) == 2 and (success["n_runs"] == 2).all()
    report = (results / "report.md").read_text()
    assert "arith" in report and "wade" in report
    for name in ("table4_wade", "table5_accuracy", "table6_parameters"):
        for ext in ("md", "csv", "tex"):
            assert (results / f"wade/tables/{name}.{ext}").stat().st_size > 0
    for name in ("figure1_time_to_threshold", "figure3_learning_curves"):
        for ext in ("png", "pdf"):
            assert (results / f"wade/figures/{name}.{ext}").stat().st_size > 0
    table4 = (results / "wade/tables/table4_wade.md").read_text()
    assert "| 1 Periodic (52 seqs) | faithful |" in table4 and "| 5 Basic QA | corrected |" in table4
    assert "| Transformer | TinyGRU (yours) | Human |" in table4  # the user's model (tests/plugins/tiny_user_wade.py)
    assert "TinyGRU (yours): actual" in (results / "wade/tables/table6_parameters.md").read_text()
    wade_comparison = pd.read_csv(results / "wade/comparison.csv")
    assert {"table4", "table5", "table2"} <= set(wade_comparison["result"]) and (wade_comparison["n_runs"] == 2).all()
    assert "SYNTHETIC STAND-IN, NOT IMDB" in (results / "wade/tables/table2_imdb.md").read_text()
    assert "| TinyClassifier (yours) | both |" in (results / "wade/tables/table2_imdb.md").read_text()
    assert (results / "wade/figures/figure2_imdb_curves.pdf").stat().st_size > 0
    assert "synthetic data" in set(wade_comparison[wade_comparison["result"] == "table2"]["scale"]).pop()
    # 2 runs per number: no verdict is informative; every miss says why
    assert not comparison["informative"].any() and not wade_comparison["informative"].any()
    summary = (results / "reproduction.md").read_text()
    assert "## arith:" in summary and "## wade:" in summary and "UNEXPLAINED" not in summary
    compared = len(comparison)
    assert f"{compared} published numbers compared" in summary
    # CALM: every table and figure, a user's model (tests/plugins) next to the paper's, all said to be synthetic.
    for name in ("table1", "table2_model_sizes", "table4_std", "appendix_c_transformer"):
        for ext in ("md", "csv", "tex"):
            assert (results / f"calm/tables/{name}.{ext}").stat().st_size > 0
    assert "| faithful | multilingual | 200 | 2 |" in (results / "calm/tables/appendix_c_transformer.md").read_text()
    corpora_lines = (results / "calm/samples/appendix_a_corpora.txt").read_text()
    assert corpora_lines.startswith("SYNTHETIC STAND-IN") and "news.test.fr" in corpora_lines
    for model in ("poe_pw_30", "transformer", "tiny_user_lm.TinyLM"):
        text = (results / f"calm/samples/appendix_d_{model}.txt").read_text()
        assert text.startswith("SYNTHETIC STAND-IN") and "multidomain" in text
    assert "-- end of the " in (results / "calm/samples/appendix_d_poe_pw_30.txt").read_text()
    for name in ("figure1b_multilingual_switch", "figure1c_multidomain_switch", "figure1d_mixture_weights",
                 "figure1e_weight_correlation", "figure4_multidomain_analysis"):
        for ext in ("png", "pdf"):
            assert (results / f"calm/figures/{name}.{ext}").stat().st_size > 0
    table1 = (results / "calm/tables/table1.md").read_text()
    assert "| multilingual λ=200 ppl |" in table1
    assert "| faithful | PoE+PW 30 |" in table1 and "| faithful | TinyLM (yours) |" in table1
    assert "SYNTHETIC STAND-IN" in table1 and "Transformer" not in table1  # Appendix C's, on the dev halves
    calm_comparison = pd.read_csv(results / "calm/comparison.csv")
    # Table 1 is published at lambda 10k/100k/20k only: the small scale's lambda 200 has no row to compare
    assert set(calm_comparison["result"]) == {"table2_model_sizes", "figure4"}
    assert not calm_comparison[calm_comparison["result"] != "table2_model_sizes"]["informative"].any()
    assert "## calm:" in summary
    assert len(list((results / "calm/curves").rglob("*.parquet"))) == 2 * 3 * 2  # datasets x models x seeds
    # S2B: Table 3 equals the paper's; the PS column, Appendix D.2, Tables 2 and 4 compared.
    for name in ("table1_marl", "table2_zsct", "table3_posdis_examples", "table4_architectures",
                 "tableD2_disentanglement"):
        for ext in ("md", "csv", "tex"):
            assert (results / f"s2b/tables/{name}.{ext}").stat().st_size > 0
    for name in ("figure3_scs_episode", "figure4_posdis_messages", "figure5_recall", "figure6_architectures"):
        assert (results / f"s2b/figures/{name}.png").stat().st_size > 0
    assert pd.read_csv(results / "s2b/tables/table3_posdis_examples.csv")["equal"].all()
    s2b_comparison = pd.read_csv(results / "s2b/comparison.csv")
    assert set(s2b_comparison["result"]) == {"table1", "table2", "table4", "tableD2"} and "## s2b:" in summary
    table2 = (results / "s2b/tables/table2_zsct.md").read_text()
    # the user's scripted agent (tests/plugins) lands in Table 2 next to R2D2, scored by the same evaluation
    assert "| R2D2 | faithful | 1 |" in table2
    assert "| PerfectListener (yours) | faithful | 1 | 100.00 ± 0.00 | 62.23 ± 3.67 |" in table2
    table4 = (results / "s2b/tables/table4_architectures.md").read_text()
    assert "| faithful | LSTM |" in table4
    assert "| faithful | TinyGRUCore (yours) | " in table4 and "| — | 2 |" in table4  # tests/plugins/tiny_user_s2b_core
    assert re.search(r"\| Acc_EoA [^|]*\|.*\| — \| \d+\.\d\d ± ", (results / "s2b/tables/table1_marl.md").read_text())
    zsct = pd.read_parquet(results / "s2b/metrics/zsct.parquet")
    assert sorted(zsct.groupby(["experiment", "model"]).size().items()) == [
        (("fig6", "lstm_rec"), 2), (("table1", "s1"), 2), (("table4", "lstm"), 2),
        (("table4", "tiny_user_s2b_core.TinyGRUCore"), 2), (("zsct", "r2d2"), 2),
        (("zsct", "scripted_listener.PerfectListener"), 2)]
    # Table 4 reconstructs (its short episodes finish within 300 observations; Figure 6's do not); an agent does not
    assert zsct.loc[zsct["experiment"] == "table4", "rec_stimulus_accuracy"].notna().all()
    assert zsct.loc[zsct["model"] != "r2d2", "rec_stimulus_accuracy"].isna().sum() == 6  # Table 1 has none either
    # Table 1's learned S = 1 column: the speaker's language scored at every evaluation (EoA near chance untrained)
    assert zsct.loc[zsct["experiment"] == "table1", "eoa_accuracy"].between(0, 1).all()
    # AMTLB on real ROMs: every table and figure, the original's parameters JSON, the specialists against published
    # agents (never comparable at 1,200 frames per game), one curve file per run.
    for name in ("transfer", "multitask_scores"):
        for ext in ("md", "csv", "tex"):
            assert (results / f"amtlb/tables/{name}.{ext}").stat().st_size > 0
    for name in ("transfer_ratio", "transfer_per_game", "multitask_curves"):
        for ext in ("png", "pdf"):
            assert (results / f"amtlb/figures/{name}.{ext}").stat().st_size > 0
    parms = json.loads((results / "amtlb/parameters.json").read_text())
    assert sorted(g for fold in parms["folds"] for g in fold) == ["breakout", "pong"] and parms["num_folds"] == 2
    assert "| all | 2 games |" in (results / "amtlb/tables/transfer.md").read_text()
    amtlb_comparison = pd.read_csv(results / "amtlb/comparison.csv")
    assert {r.split(" vs ")[0] for r in amtlb_comparison["row"]} == {"breakout", "pong"}
    assert not amtlb_comparison["informative"].any() and "## amtlb:" in summary
    assert len(list((results / "amtlb/curves").rglob("*.parquet"))) == 2 + 2 + 2 + 2 + 1  # fresh, random, pretrain,
    # transfer, generalist
    # Curves: one file per seed, readable, with provenance, hive-readable as one dataset.
    wade_curves = list((results / "wade/curves").rglob("*.parquet"))
    # tasks x seeds x (one ReCA file for both rules, ESN, 4 trained, the user's model) + IMDB's 3 models x 2 seeds
    assert len(wade_curves) == 2 * 2 * (1 + 1 + 4 + 1) + 3 * 2
    reca = pd.read_parquet(results / "wade/curves/experiment=synthetic/model=reca/task=5/seed=12306.parquet")
    assert sorted(reca["rule"].unique()) == [34, 206]
    curve_files = sorted((results / "arith/curves").rglob("*.parquet"))
    # cells (3 of the paper's models, 2 user's units) x seeds + sweep settings x models x seeds
    assert len(curve_files) == (3 + 2) * 2 + (2 + 2 + 1 + 1 + 2) * 2 * 2
    frame, record = read_curve(curve_files[0])
    assert record["scale"] == "small" and record["paper"] == "madsen2019-arith" and len(frame) > 0
    dataset = pd.read_parquet(results / "arith/curves")
    assert {"experiment", "model", "seed", "step", "metric", "value"} <= set(dataset.columns)
    # Nothing half-written anywhere.
    assert not [p for p in results.rglob(".*") if p.is_file()]
    # Rendering is byte-stable: remake the figure and table, compare bytes.
    before = {p: (results / p).read_bytes() for p in ("arith/figures/parameters.png", "arith/figures/parameters.pdf",
                                                      "arith/tables/operations.tex")}
    run_snakemake(["--snakefile", SNAKEFILE, "--cores", "2", "--forcerun", "arith_figure", "arith_table"], cwd=workdir)
    for p, data in before.items():
        assert (results / p).read_bytes() == data, p
    # A single figure or table is rebuilt by naming its file, and that reruns its own rule only.
    for name, rule in (("arith/figures/parameters.png", "arith_figure"),
                       ("wade/tables/table5_accuracy.md", "wade_table5"),
                       ("wade/figures/figure2_imdb_curves.pdf", "wade_figure2")):
        before = {p: p.stat().st_mtime_ns for p in results.rglob("*") if p.is_file() and p.name != Path(name).name}
        data = (results / name).read_bytes()
        (results / name).unlink()
        out = run_snakemake(["--snakefile", SNAKEFILE, "--cores", "1", f"results/{name}"], cwd=workdir)
        assert job_counts(out.stdout + out.stderr) == {rule: 1, "total": 1}, name
        assert (results / name).read_bytes() == data, name
        siblings = {p for p in before if p.stem == Path(name).stem}  # the product's other formats are rewritten
        assert all(p.stat().st_mtime_ns == t for p, t in before.items() if p not in siblings), name


@pytest.mark.slow
def test_the_report_puts_each_benchmarks_user_class_beside_the_paper_models(tiny_local_run):
    """Issue 29's "Your model": the tiny config names a user's class in every benchmark (tests/plugins)."""
    results = tiny_local_run / "results"
    report = (results / "report.md").read_text()
    expected = {  # a row of the user's class (bold) and one of a paper's model of the same setting
        "arith": ["| operations | add | success | faithful | **ExactAdd (yours)** | 1 [0.3424, 1] | Wilson 95% | 2 "
                  "| — |", "| operations | add | success | faithful | Linear | — | — | — | 1 [0.96, 1] |"],
        "wade": ["| table4 | task 5 | wade | faithful | **TinyGRU (yours)** |",
                 "| table4 | task 5 | wade | faithful | RNN |",
                 "| table2 | IMDB | max_accuracy | faithful | **TinyClassifier (yours)** |"],
        "calm": ["| **TinyLM (yours)** |", "| PoE+PW 30 |"],
        "s2b": ["| table2 | O=1 S=1 | acc_zsct | faithful | **PerfectListener (yours)** | 100 [100, 100] | mean ± std "
                "| 2 | — |",
                "| table4 | Archi task | acc_zsct | faithful | **TinyGRUCore (yours)** |",
                "| table4 | Archi task | acc_zsct | faithful | DCEM | — | — | — | 81.9 [81.31, 82.49] |"],
        "amtlb": ["| **ScriptedAtari (yours), fresh on the game** |", "| random agent |",
                  "| DQN (sb3_zoo_monitor, 10,000,000 frames) | — | — | — | 3762 |"],
    }
    for key, lines in expected.items():
        table = (results / f"{key}/tables/yours.md").read_text()
        assert all(line in table for line in lines), (key, table)
        assert f"### Your model `results/{key}/tables/yours.md`" in report and table in report, key
        rows = pd.read_csv(results / f"{key}/yours.csv")
        assert rows["yours"].any() and rows.loc[rows["yours"], "published"].isna().all(), key


def test_html_report_holds_every_table_and_figure_with_its_caption(tiny_local_run):
    """`snakemake --report results/report.html` (the README's command) after the tiny run."""
    workdir = tiny_local_run
    page = workdir / "results/report.html"
    try:
        run_snakemake(["--snakefile", SNAKEFILE, "--report", "results/report.html"], cwd=workdir)
        text = page.read_text()
    finally:
        page.unlink(missing_ok=True)  # the Slurm test compares this results folder with its own
    from reprobench import benchmarks
    from reprobench.core import yours

    config = yaml.safe_load((workdir / "config.yaml").read_text())
    for key in benchmarks.KEYS:
        targets = benchmarks.grid(key, config[key]).targets()
        mine = [yours.product(f"results/{key}", benchmarks.paper(key).title)]  # every benchmark names a user's class
        for product in targets.tables + targets.figures + mine:
            for path in product.files():
                assert Path(path).name in text, path
            caption = html.escape(product.caption[:60], quote=False)
            # the report's embedded data escapes non-ASCII as JSON does ("Denamgana\u00ef")
            assert caption in text or json.dumps(caption)[1:-1] in text, product.title
    assert "Scale: <strong>small</strong>" in text


@pytest.mark.slow
def test_two_tiny_runs_give_the_same_results(tiny_local_run, tmp_path, request):
    """Same config, same seeds, CPU: equal curve and metrics data, byte-identical tables, figures and report. Where the
    real-Slurm test runs in this session it makes that second tiny run itself (under Slurm) and asserts the same
    equality with the same function, so this one is skipped rather than run twice (about 5 minutes of the suite)."""
    from test_slurm import why_no_cluster

    if why_no_cluster() is None and any(item.name.startswith("test_profile_submits_every_training_job")
                                        for item in request.session.items):
        pytest.skip("the real-Slurm test compares its own tiny run with this session's, byte for byte")
    write_config(tmp_path, tiny)
    run_snakemake(["--snakefile", SNAKEFILE, "--cores", "2"], cwd=tmp_path)
    assert results_differences(tiny_local_run / "results", tmp_path / "results") == []
