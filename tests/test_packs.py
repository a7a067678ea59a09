"""core.packs: runs trained one after another in one job, and CALM's packs (calm.runs_per_job)."""

import pytest
import yaml

from conftest import ROOT, run_snakemake
from reprobench.calm.grid import CURVE, Grid
from reprobench.core.packs import make_packs


def test_runs_are_grouped_in_order_and_cut_to_size():
    runs = [{"d": d, "m": m, "s": s} for d in ("a", "b") for m in ("x", "y") for s in (0, 1)]
    packs = make_packs(runs, ("d",), 3, "t")
    assert [p.rule for p in packs] == ["t_a_0", "t_a_1", "t_b_0", "t_b_1"]
    assert [len(p.runs) for p in packs] == [3, 1, 3, 1]
    assert packs[1].runs == ({"d": "a", "m": "y", "s": 1},)
    assert packs[2].paths("{d}/{m}/{s}") == ["b/x/0", "b/x/1", "b/y/0"]
    assert packs[3].path("logs/pack={pack}.log") == "logs/pack=t_b_1.log"
    assert [p.rule for p in make_packs(runs, ("d", "m"), 8, "t.x")] == ["t_x_a_x_0", "t_x_a_y_0", "t_x_b_x_0",
                                                                        "t_x_b_y_0"]
    with pytest.raises(ValueError, match="at least one run"):
        make_packs(runs, ("d",), 0, "t")


def calm_section(**edits):
    return {**yaml.safe_load((ROOT / "config.yaml").read_text())["calm"], **edits}


def test_calm_default_packs_cover_every_run_once():
    """The default grid: 2 datasets x 14 models x 2 variants x 2 seeds = 112 runs, 56 per (dataset, lambda), 8 to a
    job: 7 jobs each, 14 in all; runs_per_job 1 (paper.yaml) makes no packs (the wildcard rule)."""
    grid = Grid(calm_section())
    packs = grid.packs()
    assert len(packs) == 14 and all(len(p.runs) == 8 for p in packs)
    curves = [c for p in packs for c in p.paths(CURVE)]
    assert sorted(curves) == sorted(grid.curves()) and len(set(curves)) == 112
    assert all(len({(r["dataset"], r["lam"]) for r in p.runs}) == 1 for p in packs)
    assert Grid(calm_section(runs_per_job=1)).packs() == []
    assert yaml.safe_load((ROOT / "paper.yaml").read_text())["calm"]["runs_per_job"] == 1


def test_a_pack_passes_a_users_class_and_each_runs_files():
    grid = Grid(calm_section(models=["ind_lstm", "tiny_user_lm:TinyLM"], variants=["faithful"], seeds=1,
                             datasets=["multilingual"]))
    (pack,) = grid.packs()
    runs = yaml.safe_load(grid.pack_json(pack))  # JSON is YAML
    assert [r["model"] for r in runs] == ["ind_lstm", "tiny_user_lm:TinyLM"]
    assert runs[1]["out"] == CURVE.format(dataset="multilingual", lam=200, model="tiny_user_lm.TinyLM",
                                          variant="faithful", seed=0)
    assert runs[1]["checkpoint"].startswith("results/calm/checkpoints/") and runs[1]["checkpoint"].endswith(".pt")


def test_naming_one_curve_runs_its_pack(workdir):
    """Snakemake finds the pack that makes a curve: the corpora, then that one job."""
    curve = CURVE.format(dataset="multidomain", lam=200, model="moe_30", variant="corrected", seed=1)
    proc = run_snakemake(["-n", "--snakefile", str(ROOT / "Snakefile"), "--cores", "1", curve], cwd=workdir)
    jobs = dict(line.split() for line in proc.stdout.splitlines() if line.startswith("calm_") and len(line.split())
                == 2)
    pack = next(p.rule for p in Grid(calm_section()).packs() if curve in p.paths(CURVE))
    assert jobs == {"calm_prepare": "1", pack: "1"} and pack == "calm_train_multidomain_200_5"
