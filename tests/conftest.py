import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
PLUGINS = ROOT / "tests" / "plugins"  # user models named in test configs (e.g. calm's tiny_user_lm:TinyLM)
sys.path.insert(0, str(PLUGINS))  # and importable by the tests that run them in-process


NO_SLURM = ROOT / "tests" / "noslurm"  # an `scontrol` that fails at once, first on PATH where no cluster is tested


def pytest_collection_modifyitems(items):
    """The Slurm tests last: the Slurm executor plugin runs `scontrol show config` whenever Snakemake starts, and once
    the Slurm test has installed slurm-wlm and stopped its daemons, that call waits about 9 s for a controller that is
    gone, on every later Snakemake start (run_snakemake puts tests/noslurm first on PATH for the same reason, where
    slurm-wlm was installed before the suite began)."""
    items.sort(key=lambda item: item.get_closest_marker("slurm") is not None)


def snakemake_cmd() -> list[str]:
    """The snakemake of the interpreter running the tests (the README's virtual environment)."""
    exe = Path(sys.executable).with_name("snakemake")
    return [str(exe)] if exe.exists() else [shutil.which("snakemake") or "snakemake"]


def run_snakemake(args, cwd=ROOT, env=None, check=True, timeout=900, cluster=False):
    """Snakemake with the tests' plugins importable; without `cluster`, Slurm's `scontrol` answers at once
    (tests/noslurm/scontrol), as on a machine without Slurm."""
    full_env = dict(os.environ, **(env or {}))
    path = [str(Path(sys.executable).parent), *([] if cluster else [str(NO_SLURM)]), full_env.get("PATH", "")]
    full_env["PATH"] = os.pathsep.join(path)
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGINS), full_env.get("PYTHONPATH")) if p)
    proc = subprocess.run(snakemake_cmd() + list(args), cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n"
                             f"{proc.stderr[-6000:]}")
    return proc


@pytest.fixture
def one_thread():
    """Tiny networks run fastest on one torch thread, and much faster when the CPU is shared."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def workdir(tmp_path):
    """A scratch working directory holding the default config (Snakemake reads config.yaml from here)."""
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    return tmp_path


def write_config(workdir, edit):
    """config.yaml in `workdir`: the default config with `edit(config)` applied."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    edit(config)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


USER_CORE = "tiny_user_s2b_core:TinyGRUCore"  # S2B Table 4's user core (tests/plugins)
USER_ARCHITECTURE = "scripted_atari:ScriptedAtari"  # AMTLB's architecture under test (tests/plugins)


def tiny(config):
    """The tiny configuration: every rule of arith (two user's units from tests/plugins on addition), WADE (IMDB on
    its synthetic stand-in; a user's sequence model from tests/plugins beside the paper's) and CALM (a user's model
    from tests/plugins next to PoE+PW 30 and the Transformer), S2B (a user's listener in Table 2 and core in Table 4)
    and AMTLB (a user's scripted architecture) in a few minutes: every benchmark's "Your model" table."""
    a = config["arith"]
    a.update(eval_every=50, selection_window=4, validation_size=500, test_size=500)
    a["threshold"]["samples"] = 20000
    user_units = ["tiny_user_arith:ExactAdd", "tiny_user_arith:Constant"]
    a["operations"].update(seeds=2, iterations=1500,
                           cells={"sub": ["nac_add"], "mul": ["nac_mul", "nalu"], "add": user_units})
    a["sweeps"].update(seeds=2, iterations=100, operation="mul", models=["nac_mul", "nalu"], input_size=[4, 10],
                       hidden_size=[2, 3], overlap=[0.5], subset=[0.25], range=a["sweeps"]["range"][:2])
    config["wade"].update(tasks=[1, 5], seeds=2, max_sequences=60, reca_rules=[34, 206], epochs=1,
                          models=["tiny_user_wade:TinyGRU"])
    config["wade"]["imdb"].update(models=["linear", "lstm", "tiny_user_wade:TinyClassifier"], seeds=2, epochs=1,
                                  eval_every=16, synthetic_train=64, synthetic_test=32)
    config["calm"].update(models=["poe_pw_30", "transformer", "tiny_user_lm:TinyLM"], variants=["faithful"], seeds=2,
                          n_fragments=20, synthetic_chars=60000, synthetic_words=20000, top_words=100)
    config["s2b"]["speaker"].update(episodes=2, eoa_episodes=1, eoa_epochs=8)
    config["s2b"]["disentanglement"].update(n_oc=[1])
    config["s2b"]["zsct"].update(models=["r2d2", "scripted_listener:PerfectListener"], n_oc=[1], shots=[1],
                                 observations=300, eval_every=150)
    # AMTLB's architecture under test is the user's scripted one (tests/plugins): PPO's runs, resumes and
    # determinism are tested in test_amtlb_ppo and test_amtlb_runs
    config["amtlb"].update(games=["breakout", "pong"], frames_per_game=1200, num_envs=2, grid_points=10,
                           architecture=USER_ARCHITECTURE)
    config["s2b"]["experiments"].update(seeds={"table1": {"s1": 2}, "table4": {"lstm": 2, USER_CORE: 2},
                                               "fig5": {"ohe": 2}, "fig6": {"lstm_rec": 2}},
                                        observations={"table1": 300, "table4": 300, "fig5": 200, "fig6": 300},
                                        eval_every={"table1": 150, "table4": 150, "fig5": 100, "fig6": 150})


@pytest.fixture(scope="session")
def tiny_local_run(tmp_path_factory):
    """The tiny configuration run once locally (`--cores 2`); shared by the end-to-end and the Slurm tests."""
    workdir = tmp_path_factory.mktemp("tiny-local")
    write_config(workdir, tiny)
    run_snakemake(["--snakefile", str(ROOT / "Snakefile"), "--cores", "2"], cwd=workdir)
    return workdir


@contextlib.contextmanager
def killed_after_optimizer_steps(monkeypatch, steps: int):
    """A training run inside the block is killed (KeyboardInterrupt) when Adam is about to take step `steps` + 1,
    as a preempted job would be; the block must end that way."""
    import torch

    real_step, calls = torch.optim.Adam.step, {"n": 0}

    def dying_step(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] > steps:
            raise KeyboardInterrupt("killed")
        return real_step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", dying_step)
    try:
        with pytest.raises(KeyboardInterrupt):
            yield
    finally:
        monkeypatch.setattr(torch.optim.Adam, "step", real_step)


def results_differences(a: Path, b: Path) -> list[str]:
    """Files that differ between two results folders (missing files on either side count): Parquet by data, NaN
    equal to NaN (its metadata records times and hosts), JSON without its provenance fields, reproduction.md
    without its provenance line, everything else (tables, figures, comparisons, report) by bytes."""
    import json

    import pyarrow.parquet as pq

    from reprobench.core import reproduction
    from reprobench.core.provenance import base_record

    provenance = set(base_record()) | {"made"}

    def comparable(path: Path):
        if path.suffix == ".parquet":  # as pandas: NaN equals NaN (arrow's Table.equals says NaN != NaN)
            return pq.read_table(path).replace_schema_metadata(None).to_pandas()
        if path.suffix == ".json":
            return {k: v for k, v in json.loads(path.read_text()).items() if k not in provenance}
        if path.name == "reproduction.md":
            return reproduction.without_provenance(path.read_text())
        return path.read_bytes()

    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    differ = [f"only in one run: {p}" for p in sorted(files_a ^ files_b)]
    for rel in sorted(files_a & files_b):
        first, second = comparable(a / rel), comparable(b / rel)
        if not (first.equals(second) if rel.suffix == ".parquet" else first == second):
            differ.append(str(rel))
    return differ
