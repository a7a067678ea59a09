"""Bad CALM, S2B and AMTLB config values stop at plan time with one line naming the key and the value (issue 27).

Most cases run what workflow/rules/common.smk's load_benchmark runs, in-process: the section's schema, then its
Grid.check(). The wildcard constraints are matched as Snakemake compiles them; only what needs Snakemake itself
(override files, a target that matches no rule) starts `snakemake -n`."""

from __future__ import annotations

import copy
import re
import sys

import pytest
import yaml
from snakemake.io import regex_from_filepattern, update_wildcard_constraints
from snakemake.utils import update_config

from conftest import ROOT, run_snakemake, tiny
from reprobench import benchmarks
from reprobench.amtlb import grid as amtlb_grid
from reprobench.calm import grid as calm_grid
from reprobench.calm import metrics
from reprobench.calm.stream import Stream
from reprobench.core import schema
from reprobench.core.errors import ConfigError
from reprobench.s2b import grid as s2b_grid

SNAKEFILE = str(ROOT / "Snakefile")
SCHEMAS = ROOT / "workflow" / "schemas"
DEFAULT = yaml.safe_load((ROOT / "config.yaml").read_text())


def config(*overrides) -> dict:
    """config.yaml with each override merged as Snakemake merges --configfile files."""
    merged = copy.deepcopy(DEFAULT)
    for override in overrides:
        update_config(merged, copy.deepcopy(override))
    return merged


def load(key: str, cfg: dict):
    """What load_benchmark does: validate the section (filling defaults), build the Grid, run its check."""
    section = cfg[key]
    schema.validate(section, SCHEMAS / f"{key}.schema.yaml", key)
    grid = benchmarks.grid(key, section)
    grid.check()
    return grid


def edited(key: str, edit) -> dict:
    cfg = config()
    edit(cfg[key])
    return cfg


BAD = [
    # calm: a lambda below one chunk of window x 10 streams, which every fragment is at least
    ("calm", lambda c: c["lambdas"].update(multilingual=[1]),
     ["'calm.lambdas.multilingual'", "lambda 1 ", "= 200 tokens"]),
    ("calm", lambda c: c.update(window=100), ["'calm.lambdas.multilingual'", "lambda 200 ", "= 1000 tokens"]),
    ("calm", lambda c: c["lambdas"].update(multidomain=[400, 199]), ["'calm.lambdas.multidomain'", "lambda 199 "]),
    # calm: fragments the metrics cannot use
    ("calm", lambda c: c.update(n_fragments=7), ["'calm.n_fragments'", "7 leaves", "20 or more"]),
    ("calm", lambda c: c.update(n_fragments=3), ["'calm.n_fragments'", "3 leaves"]),
    ("calm", lambda c: c.update(n_fragments=24), ["'calm.n_fragments'", "24 leaves", "5 in multilingual"]),
    ("calm", lambda c: c.update(n_fragments=10, datasets=["multilingual"]), ["'calm.n_fragments'", "15 or more"]),
    ("calm", lambda c: c.update(n_fragments=8, datasets=["multidomain"]), ["'calm.n_fragments'", "12 or more"]),
    # calm: no Table 1 model
    ("calm", lambda c: c.update(models=["transformer"]), ["'calm.models'", "['transformer']", "Tables 1 and 4"]),
    # calm: user classes
    ("calm", lambda c: c.update(models=["poe_5", "nosuchpackage.lm:LM"]), ["'calm.models'", "nosuchpackage"]),
    ("calm", lambda c: c.update(models=["poe_5", "tiny_user_lm:NoSuchLM"]), ["'calm.models'", "NoSuchLM"]),
    ("calm", lambda c: c.update(models=["poe_5", "scripted_listener:PerfectListener"]),
     ["'calm.models'", "PerfectListener", "'learn' or 'forward'"]),
    ("calm", lambda c: c.update(models=["poe_5", "tiny_user_lm:torch"]), ["'calm.models'", "is not a class"]),
    # amtlb
    ("amtlb", lambda c: c["atari"].update(max_num_frames_per_episode=1),
     ["'amtlb.atari.max_num_frames_per_episode'", "1 leaves no time to play", "at least 3630"]),
    ("amtlb", lambda c: c["atari"].update(max_num_frames_per_episode=3699, noop_max=100), ["at least 3700"]),
    ("amtlb", lambda c: c.update(grid_points=20001), ["'amtlb.grid_points'", "20001", "frames_per_game = 20000"]),
    ("amtlb", lambda c: c.update(architecture="nosuchpackage.arch:Agent"), ["'amtlb.architecture'", "nosuchpackage"]),
    # s2b: evaluation spacing past the budget
    ("s2b", lambda c: c["zsct"].update(eval_every=1501), ["'s2b.zsct.eval_every'", "1501", "observations = 1500"]),
    ("s2b", lambda c: c["experiments"]["eval_every"].update(fig5=1001),
     ["'s2b.experiments.eval_every.fig5'", "1001", "s2b.experiments.observations.fig5 = 1000"]),
    # s2b: {} where config.yaml has no entry to merge into (a --replace-workflow-config file)
    ("s2b", lambda c: c["experiments"]["seeds"].update(table4={}),
     ["'s2b.experiments.seeds.table4'", "{}", "write null"]),
    # s2b: sizes past the paper's ranges (MemoryError before)
    ("s2b", lambda c: c["speaker"].update(v_max=10000), ["'s2b.speaker.v_max'", "<= 10", "10000"]),
    ("s2b", lambda c: c["zsct"].update(n_oc=[1, 100000]), ["'s2b.zsct.n_oc[1]'", "<= 16", "100000"]),
    ("s2b", lambda c: c["disentanglement"].update(n_oc=[4, 1000]), ["'s2b.disentanglement.n_oc[1]'", "<= 16",
                                                                     "1000"]),
    # s2b: user agents
    ("s2b", lambda c: c["zsct"].update(models=["r2d2", "nosuchpackage.agent:A"]), ["'s2b.zsct.models'",
                                                                                     "nosuchpackage"]),
    ("s2b", lambda c: c["zsct"].update(models=["r2d2", "scripted_listener:Missing"]), ["'s2b.zsct.models'",
                                                                                        "Missing"]),
    ("s2b", lambda c: c["zsct"].update(models=["tiny_user_lm:TinyLM"]),
     ["'s2b.zsct.models'", "TinyLM", "'act'", "'observe'", "'policy'"]),
]


@pytest.mark.parametrize("key, edit, words", BAD, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(BAD)])
def test_a_bad_value_stops_with_one_line_naming_the_key(key, edit, words):
    with pytest.raises(ConfigError) as caught:
        load(key, edited(key, edit))
    message = str(caught.value)
    assert "\n" not in message and message.startswith("config key '"), message
    for word in words:
        assert word in message, message


GOOD = [
    ("calm", lambda c: None),
    ("calm", lambda c: c.update(n_fragments=15, datasets=["multilingual"])),  # the least for five classes
    ("calm", lambda c: c.update(n_fragments=12, datasets=["multidomain"])),
    ("calm", lambda c: c.update(window=100, lambdas={"multilingual": [1000], "multidomain": [1000]})),
    ("calm", lambda c: c.update(models=["transformer", "tiny_user_lm:TinyLM"])),  # a user's model fills Table 1
    ("amtlb", lambda c: None),
    ("amtlb", lambda c: c["atari"].update(max_num_frames_per_episode=3630)),
    ("amtlb", lambda c: c.update(grid_points=20000)),
    ("s2b", lambda c: None),
    ("s2b", lambda c: c["zsct"].update(models=["r2d2", "scripted_listener:PerfectListener"], eval_every=1500)),
    ("s2b", lambda c: c["speaker"].update(v_min=10, v_max=10)),
    ("s2b", lambda c: c["zsct"].update(n_oc=[1, 4, 16])),
]


@pytest.mark.parametrize("key, edit", GOOD, ids=[f"{k}-{i}" for i, (k, _) in enumerate(GOOD)])
def test_values_at_the_limits_pass(key, edit):
    load(key, edited(key, edit))


@pytest.mark.parametrize("key", ["calm", "s2b", "amtlb"])
def test_the_default_paper_and_tiny_configs_pass(key):
    load(key, config())
    load(key, config(yaml.safe_load((ROOT / "paper.yaml").read_text())))
    tiny_config = config()
    tiny(tiny_config)
    load(key, tiny_config)


def test_device_cuda_is_accepted_at_plan_time():
    # a Slurm login node has no GPU: the job, not the plan, says where CUDA is missing
    schema.validate(config({"device": "cuda"}), SCHEMAS / "config.schema.yaml", None)


def test_a_calm_torch_module_without_its_own_forward_names_the_methods(tmp_path, monkeypatch):
    (tmp_path / "headless_lm.py").write_text(
        "from torch import nn\n\n\nclass NoForward(nn.Module):\n    pass\n\n\n"
        "class Learner:\n    def learn(self, batch):\n        return 0.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"'calm\.models'.*NoForward.*'learn' or 'forward'"):
        load("calm", edited("calm", lambda c: c.update(models=["poe_5", "headless_lm:NoForward"])))
    load("calm", edited("calm", lambda c: c.update(models=["poe_5", "headless_lm:Learner"])))
    sys.modules.pop("headless_lm", None)


@pytest.mark.parametrize("dataset", ["multilingual", "multidomain"])
def test_n_fragments_is_accepted_exactly_where_every_stream_gives_switch_metrics(dataset):
    """The calm.n_fragments rule is what metrics.compute_metrics needs: an accepted value gives ppl@sw and rec on
    every stream, whatever the class order; a refused one leaves them NaN on some stream."""
    classes = calm_grid.N_CLASSES[dataset]
    names = [f"c{i}" for i in range(classes)]
    for n in range(classes, 5 * classes):
        try:
            load("calm", edited("calm", lambda c, n=n: c.update(datasets=[dataset], n_fragments=n)))
            accepted = True
        except ConfigError:
            accepted = False
        events = []
        for seed in range(40):
            fragment, class_id = Stream(names, lam=200, seed=seed, n_fragments=n, window=20).batch_labels()
            out = metrics.compute_metrics(fragment * 0.0 + 1.0, fragment, class_id, names, n)
            events.append(out.get("n_events", 0) > 0 and out["ppl@sw"] == out["ppl@sw"])
        assert accepted == all(events), (n, accepted, events)


def test_a_lambda_below_one_chunk_does_not_set_the_stream():
    """Why calm.lambdas must be at least one chunk (calm.grid.STREAMS x window): below it the stream is the same
    for every lambda."""
    lengths = {lam: Stream([f"c{i}" for i in range(5)], lam=lam, seed=0, n_fragments=100, window=20).lengths
               for lam in (1, 60)}
    assert all((lengths[1][c] == lengths[60][c]).all() for c in lengths[1])
    chunk = 20 * calm_grid.STREAMS
    one, two = (Stream([f"c{i}" for i in range(5)], lam=lam, seed=0, window=20).lengths for lam in (chunk, 2 * chunk))
    assert any((one[c] != two[c]).any() for c in one)


def test_an_s2b_experiment_set_to_null_is_off():
    grid = load("s2b", config({"s2b": {"experiments": {"seeds": {"table4": None, "fig5": None}}}}))
    assert grid.experiment_curves("table4") == grid.experiment_curves("fig5") == []
    assert len(grid.experiment_curves("fig6")) == 8
    stems = {p.stem.rsplit("/", 1)[-1] for p in grid.targets().tables + grid.targets().figures}
    assert "table4_architectures" not in stems and "figure5_recall" not in stems
    assert {"table1_marl", "table2_zsct", "figure6_architectures"} <= stems
    assert not any("experiment=table4" in c for c in grid.zsct_runs())


def matches(pattern: str, constraints: dict, path: str) -> bool:
    """Whether `path` matches the output `pattern` under `constraints`, as Snakemake compiles them."""
    return re.match(regex_from_filepattern(update_wildcard_constraints(pattern, constraints, {})), path) is not None


def test_wildcard_constraints_are_as_narrow_as_the_config():
    amtlb = load("amtlb", config())
    folds = amtlb.folds()  # fold 0 tests breakout and space_invaders, fold 1 pong and freeway
    transfer = amtlb.wildcards("transfer")
    pattern = amtlb_grid.CURVES["transfer"]
    for fold, games in enumerate(folds):
        for game in DEFAULT["amtlb"]["games"]:
            path = pattern.format(model="ppo", fold=fold, game=game, seed=0)
            assert matches(pattern, transfer, path) == (game in games), path
    assert not matches(pattern, transfer, pattern.format(model="ppo", fold=7, game=folds[0][0], seed=0))
    pretrain = amtlb_grid.CURVES["pretrain"]
    assert matches(pretrain, amtlb.wildcards(), pretrain.format(model="ppo", fold=1, seed=0))
    assert not matches(pretrain, amtlb.wildcards(), pretrain.format(model="ppo", fold=2, seed=0))

    s2b = load("s2b", config())
    zsct, experiment = s2b_grid.ZSCT_CURVE, s2b_grid.EXPERIMENT_CURVE
    cell = dict(o=1, s=1, variant="faithful", seed=0)
    assert matches(zsct, s2b.wildcards("zsct"), zsct.format(model="r2d2", **cell))
    assert not matches(zsct, s2b.wildcards("zsct"), zsct.format(model="lstm", **cell))
    run = dict(variant="faithful", seed=0)
    assert matches(experiment, s2b.wildcards("experiment"), experiment.format(experiment="fig5", model="ohe", **run))
    for name, model in [("fig5", "lstm"), ("table4", "ohe"), ("zsct", "lstm"), ("table1", "r2d2")]:
        path = experiment.format(experiment=name, model=model, **run)
        assert not matches(experiment, s2b.wildcards("experiment"), path), path
    off = load("s2b", config({"s2b": {"experiments": {"seeds": dict.fromkeys(s2b_grid.EXPERIMENTS)}}}))
    path = experiment.format(experiment="fig5", model="ohe", **run)
    assert not matches(experiment, off.wildcards("experiment"), path)


# --- what needs Snakemake itself -----------------------------------------------------------------------------------

@pytest.mark.parametrize("target", [
    "results/amtlb/curves/experiment=transfer/model=ppo/fold=0/game=pong/seed=0.parquet",  # pong: fold 0 trains on it
    "results/amtlb/curves/experiment=transfer/model=ppo/fold=7/game=pong/seed=0.parquet",  # a traceback before
    "results/s2b/curves/experiment=fig5/model=lstm/variant=faithful/seed=0.parquet",
])
def test_a_target_the_config_cannot_make_matches_no_rule(workdir, target):
    proc = run_snakemake(["-n", "--snakefile", SNAKEFILE, "--cores", "1", target], cwd=workdir, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "MissingRuleException" in out and "Traceback" not in out, out[-2000:]


def test_an_empty_mapping_in_an_override_stops_naming_the_file(workdir):
    (workdir / "off.yaml").write_text("s2b:\n  experiments:\n    seeds:\n      table4: {}\n")
    proc = run_snakemake(["-n", "--snakefile", SNAKEFILE, "--cores", "1", "--configfile", "off.yaml"], cwd=workdir,
                         check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "config key 's2b.experiments.seeds.table4': {} in " in out and "off.yaml changes nothing" in out, out
    assert "null" in out and len(out.splitlines()) < 15 and "Traceback" not in out


def test_an_override_switches_experiments_off_with_null_and_keeps_device_cuda(workdir):
    (workdir / "off.yaml").write_text("device: cuda\ns2b:\n  experiments:\n    seeds:\n      table4: null\n"
                                      "      fig5: null\n")
    out = run_snakemake(["-n", "--snakefile", SNAKEFILE, "--cores", "1", "--configfile", "off.yaml"],
                        cwd=workdir).stdout
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", out.split("Job stats:", 1)[1].split("\n\n", 1)[0], re.M))
    assert jobs["s2b_train_experiment"] == str(2 + 2 + 2 * 4)  # table1 (s1, s2) and fig6 (4 models), 2 seeds each
    assert "s2b_table4" not in jobs and "s2b_figure5" not in jobs and jobs["s2b_figure6"] == "1"
