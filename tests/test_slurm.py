"""`snakemake --profile slurm` against a real one-node Slurm cluster that tests/slurm/up.sh brings up.

The node advertises counted GPUs without devices (see up.sh), so the profile's real request (`--gpus=1` per grouped
job, training rules on the GPU partition) is scheduled by Slurm as written. The only override fits the profile to
one small node: `mem_mb` and `cpus_per_gpu` are capped at the node's share per GPU. Everything else (account,
partitions, runtimes, groups, retries) comes from slurm/config.yaml unchanged.
"""

import os
import re
import shutil
import string
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import PLUGINS, ROOT, results_differences, run_snakemake, snakemake_cmd, tiny, write_config

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SLURM = ROOT / "tests" / "slurm"
PROFILE = yaml.safe_load((ROOT / "slurm" / "config.yaml").read_text())
GROUPS = {}  # profile group -> its training rules
for _rule, _group in PROFILE["groups"].items():
    GROUPS.setdefault(_group, set()).add(_rule)
TRAINING_RULES = set(PROFILE["groups"])
CPU_RULES = set(PROFILE["set-resources"]) - TRAINING_RULES  # submitted alone, without a GPU: AMTLB's random agent
# arith's training rules, one per pack, made in a loop: each its own Slurm job on the GPU partition
ARITH_PACKS = re.compile(r"arith_train_\w+")
CALM_PACKS = re.compile(r"calm_train_\w+")  # core.packs: a job per pack of calm.runs_per_job runs
SITE = {"SLURM_ACCOUNT": "reprobench", "REPROBENCH_CPU_PARTITION": "cpu", "REPROBENCH_GPU_PARTITION": "gpu"}
NODE_GPUS = 2  # two one-GPU allocations side by side on the 2-core CI machine
ARITH_TARGETS = ["results/arith/comparison.csv", "results/arith/tables/operations.md",
                 "results/arith/figures/parameters.png", "results/arith/tables/yours.md"]  # the tiny run's units


def why_no_cluster() -> str | None:
    if os.geteuid() != 0:
        return "the Slurm test needs root: tests/slurm/up.sh installs slurm-wlm and munge and starts their daemons"
    if not shutil.which("slurmctld") and not shutil.which("apt-get"):
        return "the Slurm test needs apt-get (Debian) to install slurm-wlm and munge"
    return None


@pytest.fixture(scope="module")
def cluster():
    """A running one-node cluster; stopped afterwards if this fixture started it. Yields the node's resources."""
    reason = why_no_cluster()
    if reason:
        pytest.skip(reason)  # printed in the summary (-rs in pyproject.toml)
    env = dict(os.environ, REPROBENCH_SLURM_GPUS=str(NODE_GPUS), REPROBENCH_SLURM_PARTITIONS="cpu gpu")
    up = subprocess.run(["bash", str(SLURM / "up.sh")], env=env, capture_output=True, text=True, timeout=1200)
    assert up.returncode == 0, f"tests/slurm/up.sh failed:\n{up.stdout}\n{up.stderr}"
    print(up.stdout.strip())
    node = subprocess.run(["scontrol", "-o", "show", "node"], capture_output=True, text=True, check=True).stdout
    fields = dict(item.split("=", 1) for item in node.split() if "=" in item)
    yield {"cpus": int(fields["CPUTot"]), "mem_mb": int(fields["RealMemory"]),
           "gpus": int(re.search(r"gpu:(\d+)", fields["Gres"]).group(1))}
    if "already running" not in up.stdout:
        subprocess.run(["bash", str(SLURM / "down.sh")], env=env, timeout=120)


def tiny_arith_packs() -> list[str]:
    """The rule names of the tiny configuration's arith packs."""
    from reprobench.arith.grid import Grid
    from reprobench.core import schema

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    tiny(config)
    schema.validate(config["arith"], str(ROOT / "workflow/schemas/arith.schema.yaml"), "arith")
    return [pack.rule for pack in Grid(config["arith"]).packs()]


def fitted_resources(node) -> list[str]:
    """The profile's set-resources, every key kept, with memory and CPUs capped at one GPU's share of the node, and
    the same caps for arith's pack rules (their resources are the rules' own, from common.smk's gpu_job_resources).

    A command-line --set-resources replaces the profile's whole set-resources (seen here: the training jobs then
    went to the CPU partition), so every entry is passed again, with $VARS expanded as the profile would."""
    caps = {"mem_mb": node["mem_mb"] // node["gpus"], "cpus_per_gpu": max(1, node["cpus"] // node["gpus"])}
    args = [f"{rule}:{key}={min(value, caps[key])}" for rule in tiny_arith_packs()
            for key, value in (("mem_mb", 16000), ("cpus_per_gpu", 2))]
    for rule, resources in PROFILE["set-resources"].items():
        for key, value in resources.items():
            if key in caps:
                value = min(value, caps[key])
            elif isinstance(value, str):
                value = string.Template(value).safe_substitute(SITE)
            args.append(f"{rule}:{key}={value}")
    return args


def slurm_command(node, *targets) -> list[str]:
    return [*targets, "--snakefile", str(ROOT / "Snakefile"), "--profile", str(ROOT / "slurm"),
            "--configfile", "config.yaml",
            "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "2",
            "--slurm-keep-successful-logs", "--verbose", "--set-resources", *fitted_resources(node)]


def sbatch_calls(log: str) -> list[dict]:
    """Each sbatch command line the plugin ran: its options and the Snakemake jobs it carried."""
    calls = []
    for line in re.findall(r"sbatch call: (sbatch .*)", log):
        wrapped = re.search(r'--wrap="(.*)"', line).group(1)
        targets = re.search(r"--target-jobs (.*?) --allowed-rules", wrapped).group(1)
        calls.append({"line": line, "options": line.split("--wrap=")[0], "jobs": re.findall(r"'([^']+)'", targets),
                      "attempt": int(re.search(r"--attempt (\d+)", wrapped).group(1))})
    return calls


def job_stats(log: str) -> dict[str, int]:
    table = log.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


def test_profile_submits_every_training_job_through_sbatch_grouped_with_one_gpu(cluster, tmp_path, tiny_local_run):
    write_config(tmp_path, tiny)
    proc = run_snakemake(slurm_command(cluster), cwd=tmp_path, env=SITE, timeout=1500, cluster=True)
    log = proc.stdout + proc.stderr
    (tmp_path / "snakemake.log").write_text(log)
    calls = sbatch_calls(log)
    stats = job_stats(log)
    assert calls, "no sbatch call in the log"

    # Every training job went through sbatch exactly once, in a group of the profile's size and rules.
    submitted = [job for call in calls for job in call["jobs"]]
    assert len(submitted) == len(set(submitted))
    packs = {rule for rule in stats if ARITH_PACKS.fullmatch(rule)}
    # 3 cells and the 2 user's units at 1501 steps, 2 x 4 shapes at 101
    assert packs == set(tiny_arith_packs()) and len(packs) == 13
    # CALM's 6 runs of each dataset (3 models x 2 seeds) are one pack each (calm.runs_per_job 8)
    calm_packs = {rule for rule in stats if CALM_PACKS.fullmatch(rule)}
    assert calm_packs == {"calm_train_multilingual_200_0", "calm_train_multidomain_200_0"}
    packs |= calm_packs
    for rule in TRAINING_RULES | CPU_RULES | packs:
        assert sum(job.startswith(f"{rule}:") for job in submitted) == stats.get(rule, 0), rule
    # WADE 8 (the user's sequence model shares its job) + IMDB 6 (3 models, the user's classifier one) (CALM: the 2
    # packs above, each 3 models (PoE+PW 30, the Transformer, the user's) x 2 seeds),
    # S2B's Table 2 (R2D2 and the scripted user agent), Table 4 (LSTM and the user's core), Figure 5 (OHE), Figure 6
    # (LSTM+Rec), Table 1 (S = 1): 2 seeds; AMTLB (2 games, 2 folds): 2 fresh, 2 pre-training, 2 transfer, 1 generalist
    assert sum(stats.get(rule, 0) for rule in TRAINING_RULES) == 8 + 6 + 4 + 8 + 2 + 7
    assert sum(stats.get(rule, 0) for rule in CPU_RULES) == 2  # the random agent on each game
    cpu_calls = [call for call in calls if {job.split(":")[0] for job in call["jobs"]} <= CPU_RULES]
    for call in cpu_calls:  # one job each, on the CPU partition, no GPU
        assert len(call["jobs"]) == 1 and "--gpus" not in call["options"]
        assert re.search(r"-p cpu\b", call["options"]) and re.search(r"-A reprobench\b", call["options"])
    pack_calls = [call for call in calls if {job.split(":")[0] for job in call["jobs"]} <= packs]
    assert len(pack_calls) == len(packs) and all(len(call["jobs"]) == 1 for call in pack_calls)
    for call in (call for call in calls if call not in cpu_calls):
        rules = {job.split(":")[0] for job in call["jobs"]}
        if call not in pack_calls:
            group = re.search(rf"--comment rule_({'|'.join(GROUPS)})_", call["options"]).group(1)
            assert rules <= GROUPS[group] and 1 <= len(call["jobs"]) <= PROFILE["group-components"][group]
        # The real request: one GPU per grouped job, on the GPU partition, charged to the site's account.
        assert len(re.findall(r"--gpus=", call["options"])) == 1 and "--gpus=1" in call["options"].split()
        assert "--gres" not in call["options"]
        assert re.search(r"-p gpu\b", call["options"]) and re.search(r"-A reprobench\b", call["options"])
    assert max(len(call["jobs"]) for call in calls) == 4  # grouping happened
    assert len(calls) < len(submitted)

    # Slurm ran them: its logs (one per job id) name every curve file; local rules never reached Slurm.
    job_ids = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    assert len(job_ids) == len(calls)
    slurm_logs = {p.stem: p.read_text() for p in (tmp_path / "logs/slurm").rglob("*.log")}
    assert set(job_ids) == set(slurm_logs)
    in_slurm = set(re.findall(r"results/[^\s,]+?\.parquet", "\n".join(slurm_logs.values())))
    curves = {str(p.relative_to(tmp_path)) for p in (tmp_path / "results").glob("*/curves/**/*.parquet")}
    # arith (3 cells, 2 user's units, 16 sweep settings) x seeds; WADE as in test_workflow (the user's model included,
    # IMDB's 3 models); CALM one curve per job; S2B's 2 + 2 probes (local rules) and 4 Table 2, 4 Table 4 (2 the user's
    # core's), 2 Figure 5, 2 Figure 6 and 2 Table 1 runs; AMTLB's 7 runs and the random agent's 2
    assert len(curves) == (3 + 2 + 16) * 2 + 2 * 2 * (1 + 1 + 4 + 1) + 3 * 2 + 12 + 4 + 4 + 8 + 2 + 9
    probes = ("results/s2b/curves/experiment=speaker/", "results/s2b/curves/experiment=disentanglement/")
    assert {c for c in curves if not c.startswith(probes)} <= in_slurm
    assert set(re.findall(r"^\s*rule (\w+):", "\n".join(slurm_logs.values()), re.M)) <= \
        TRAINING_RULES | CPU_RULES | packs

    # The same outputs as a local run of the same configuration.
    assert results_differences(tiny_local_run / "results", tmp_path / "results") == []
    # Running the command again submits nothing.
    again = run_snakemake(slurm_command(cluster), cwd=tmp_path, env=SITE, timeout=600, cluster=True)
    assert "Nothing to be done" in again.stdout + again.stderr and "sbatch call" not in again.stdout + again.stderr


def running_job_with(rule: str) -> str | None:
    """The running Slurm job whose batch script runs `rule` (a rule without wildcards: target 'rule:')."""
    running = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i"], capture_output=True, text=True).stdout
    for job in running.split():
        script = subprocess.run(["scontrol", "write", "batch_script", job, "-"], capture_output=True, text=True)
        if f"'{rule}:'" in script.stdout:
            return job
    return None


def pack_rule(path: Path, root: Path) -> str:
    """results/arith/checkpoints/model=m/input_size=n/hidden_size=h/steps=s.pt -> its pack's rule name."""
    parts = path.relative_to(root / "results/arith/checkpoints").with_suffix("").parts
    keys = dict(part.split("=", 1) for part in parts)
    return f"arith_train_{keys['model']}_n{keys['input_size']}_h{keys['hidden_size']}_s{keys['steps']}"


def cancel_a_job_after_its_checkpoint(workdir: Path, run: subprocess.Popen, timeout_s: float):
    """Watch for checkpoint files; scancel the Slurm job training one of them; return (job id, checkpoint, rule,
    the job's Slurm state) once a cancelled job has left its checkpoint behind (the run was cut mid-training)."""
    seen, deadline = set(), time.monotonic() + timeout_s
    folder = workdir / "results/arith/checkpoints"
    while run.poll() is None and time.monotonic() < deadline:
        # the table's packs: 1501 steps, long enough to catch
        for ckpt in sorted(folder.rglob("steps=1501.pt")) if folder.exists() else []:
            if ckpt.name.startswith(".") or ckpt in seen:
                continue
            seen.add(ckpt)
            rule = pack_rule(ckpt, workdir)
            job = running_job_with(rule)
            if job is None:
                continue
            subprocess.run(["scancel", job], check=True)
            for _ in range(100):
                state = subprocess.run(["squeue", "-h", "-j", job, "-t", "all", "-o", "%T"], capture_output=True,
                                       text=True).stdout.strip()
                if state not in ("RUNNING", "COMPLETING"):
                    break
                time.sleep(0.1)
            if ckpt.exists():
                return job, ckpt, rule, state
        time.sleep(0.05)
    return None


def test_cancelled_training_job_is_retried_resumes_from_its_checkpoint_and_outputs_match(cluster, tmp_path,
                                                                                          tiny_local_run):
    def checkpoint_often(config):
        tiny(config)
        config["arith"]["checkpoint_minutes"] = 0.001  # every evaluation (50 steps)

    write_config(tmp_path, checkpoint_often)
    env = dict(os.environ, **SITE)
    env["PATH"] = f"{Path(snakemake_cmd()[0]).parent}{os.pathsep}{env['PATH']}"
    # the plan imports the config's user classes (calm's tiny_user_lm:TinyLM): on the path, as run_snakemake puts them
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGINS), env.get("PYTHONPATH")) if p)
    with open(tmp_path / "snakemake.log", "w") as out:
        run = subprocess.Popen(snakemake_cmd() + slurm_command(cluster, *ARITH_TARGETS), cwd=tmp_path, env=env,
                               stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            cancelled = cancel_a_job_after_its_checkpoint(tmp_path, run, timeout_s=600)
            rc = run.wait(timeout=1500)
        finally:
            if run.poll() is None:
                run.kill()
    log = (tmp_path / "snakemake.log").read_text()
    assert cancelled is not None, "no training job was caught between a checkpoint and its end"
    job, ckpt, rule, state = cancelled
    assert rc == 0, log[-5000:]

    # Slurm cancelled it, Snakemake saw the job fail and resubmitted it (attempt 2).
    assert state == "CANCELLED"
    error = log.split(f"Error in rule {rule}:", 1)
    assert len(error) == 2 and job in error[1][:3000], log[-5000:]
    assert "Trying to restart job" in log
    carrying = [call for call in sbatch_calls(log) if f"{rule}:" in call["jobs"]]
    assert [call["attempt"] for call in carrying] == [1, 2]
    assert carrying[0]["jobs"] == carrying[1]["jobs"]
    # The retried training job started from the checkpoint, not from step 0; no checkpoint is left.
    rule_log = tmp_path / "logs/arith/train" / ckpt.relative_to(tmp_path / "results/arith/checkpoints")
    rule_log = rule_log.with_suffix(".log")
    step = re.search(r"resuming from checkpoint \S+ at step (\d+)", rule_log.read_text())
    assert step and 0 < int(step.group(1)) < 1500, rule_log.read_text()[-2000:]  # mid-training
    assert not list((tmp_path / "results/arith/checkpoints").rglob("*.pt"))
    # Complete and identical to the uninterrupted local run.
    assert results_differences(tiny_local_run / "results/arith", tmp_path / "results/arith") == []
