"""WADE curve files: every CA rule of one (task, seed) job in one file with a `rule` column, holding what one file per
rule held before, and an aggregate that gives the same numbers from either layout.

tests/data/wade_reca_per_rule/ was written by the trainer of commit c619ba8 (one curve file per rule): task 5 (Basic
QA) with at most 120 sequences, seed 12305, rules 30, 110 and 206 evolved two at a time, and its dataset."""

import subprocess
import sys

import pandas as pd
import pytest

from conftest import ROOT
from reprobench import benchmarks
from reprobench.core import curves, inspect
from reprobench.core.config import load
from reprobench.core.errors import ResultsFileError
from reprobench.wade import grid, runs, tasks
from reprobench.wade.summary import aggregate_synthetic

STORED = ROOT / "tests/data/wade_reca_per_rule"
RULES = [30, 110, 206]
OLD_FILES = [str(STORED / f"rule{r}.parquet") for r in RULES]


@pytest.fixture(scope="module")
def reca_file(tmp_path_factory):
    """Today's trainer on the stored dataset: one file for the three rules."""
    path = tmp_path_factory.mktemp("reca") / "experiment=synthetic/model=reca/task=5/seed=12305.parquet"
    runs.run_reservoirs(tasks.read(str(STORED / "data.parquet")), RULES, str(path), None, "small", "cpu", 2)
    return path


def test_one_file_holds_each_rules_curve_as_its_own_file_did(reca_file):
    frame, record = curves.read_curve(reca_file, keys=("rule",))
    assert list(frame.columns) == ["rule", "seed", "step", "split", "metric", "value"]
    assert list(pd.unique(frame["rule"])) == RULES  # in the job's rule order
    for rule, old_path in zip(RULES, OLD_FILES):
        old, old_record = curves.read_curve(old_path)
        mine = frame[frame["rule"] == rule].drop(columns="rule").reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, old)  # the same rows and values, bit for bit
        assert record["setting"] | {"config": f"rule{rule}"} == old_record["setting"]
    assert record["run_keys"] == ["rule"] and record["config"]["rules"] == RULES and record["model"] == "reca"
    # any Parquet reader sees the rule column; a reader of one-run curves is told the file has another schema
    assert pd.read_parquet(reca_file)["rule"].value_counts().to_dict() == {30: 39, 110: 39, 206: 39}
    with pytest.raises(ResultsFileError, match="seed=12305.parquet: has schema"):
        curves.read_curve(reca_file)


def test_aggregate_of_the_one_file_equals_the_aggregate_of_one_file_per_rule(reca_file):
    runs_old, mean_old = aggregate_synthetic(OLD_FILES)
    runs_new, mean_new = aggregate_synthetic([str(reca_file)])
    pd.testing.assert_frame_equal(runs_new, runs_old)
    pd.testing.assert_frame_equal(mean_new, mean_old)
    # rules x (faithful, corrected), each the maximum of its stored curve (hand-checked: 0.708, 0.833, 0.792 of 24)
    assert len(runs_new) == 6 and set(runs_new["config"]) == {"rule30", "rule110", "rule206"}
    maxima = runs_new.drop_duplicates("config").set_index("config")["max_accuracy"] * 24
    assert maxima.round(6).to_dict() == {"rule30": 17, "rule110": 20, "rule206": 19}


def test_inspect_counts_the_file_as_a_curve(reca_file):
    groups, bad, _ = inspect.summarise(str(reca_file.parents[3]))
    assert not bad and [k[:4] for k in groups] == [("curve", "cisneros2022-wade", "synthetic", "reca")]


def test_a_file_with_other_key_columns_is_named(tmp_path, reca_file):
    frame, record = curves.read_curve(reca_file, keys=("rule",))
    other = tmp_path / "other.parquet"
    curves.write_curve(frame.rename(columns={"rule": "cell"}).to_dict("list"), other, record, keys=("cell",))
    with pytest.raises(ResultsFileError, match="other.parquet: has the key columns \\['cell'\\]"):
        aggregate_synthetic([str(other)])


def test_paper_grid_lists_6000_synthetic_curve_files_not_262000():
    g = benchmarks.grid("wade", load([ROOT / "config.yaml", ROOT / "paper.yaml"])["wade"])  # merged as Snakemake does
    files = g.synthetic_curves()
    # 10 tasks x 100 seeds x (1 ReCA file for 256 rules, ESN, RNN, LSTM, 2 Transformers)
    assert len(files) == len(set(files)) == 10 * 100 * 6
    assert len(g.expected_curves()) == 6000 + 5 * 50  # + IMDB: 5 models x 50 seeds
    assert sum("model=reca/" in f for f in files) == 1000 and len(g.runs()) == 256 + 1 + 4
    assert g.reservoir_outputs() == {
        "reca": "results/wade/curves/experiment=synthetic/model=reca/task={task}/seed={seed}.parquet",
        "esn": "results/wade/curves/experiment=synthetic/model=esn/task={task}/config=default/seed={seed}.parquet"}
    # why the aggregate's command names tasks and seeds: the paths would pass Linux's 128 KiB cap on one argument
    assert len(" ".join(files)) > 128 * 1024


def test_aggregate_cli_rebuilds_the_paths_from_tasks_and_seeds_and_names_a_missing_one(tmp_path, reca_file):
    target = tmp_path / grid.RECA_CURVE.format(task=5, seed=12305)
    target.parent.mkdir(parents=True)
    target.write_bytes(reca_file.read_bytes())
    proc = subprocess.run([sys.executable, "-m", "reprobench", "wade", "aggregate-synthetic", "--tasks", "5",
                           "--seeds", "12305", "--out", "o.parquet", "--mean-curves-out", "m.parquet"],
                          cwd=tmp_path, capture_output=True, text=True)
    missing = "results/wade/curves/experiment=synthetic/model=esn/task=5/config=default/seed=12305.parquet"
    assert proc.returncode == 2 and f"{missing}: does not exist" in proc.stderr, proc.stderr
    assert not (tmp_path / "o.parquet").exists()
