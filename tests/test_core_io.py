"""Curve files, atomic writes, comparison verdicts, tables, inspect."""

import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from reprobench.core import compare, curves, tables
from reprobench.core.errors import CurveFileError

ROWS = {"seed": [0, 0], "step": [0, 1000], "split": ["valid", "valid"], "metric": ["mse", "mse"], "value": [2.0, 1.0]}


def record(**extra):
    return curves.provenance(paper="p", experiment="e", model="m", setting={"a": 1}, seed=0, scale="small",
                             variant="all", config={"iterations": 1}, device="cpu", wall_time_s=1.0, start="s",
                             end="e", **extra)


def test_curve_round_trip_with_provenance(tmp_path):
    path = tmp_path / "experiment=e/model=m/seed=0.parquet"
    curves.write_curve(ROWS, path, record())
    frame, meta = curves.read_curve(path)
    assert frame["value"].tolist() == [2.0, 1.0]
    assert meta["paper"] == "p" and "numpy" in meta["libraries"] and meta["git_commit"]
    assert list(tmp_path.rglob(".*")) == []  # no temporary file left


def test_same_input_same_bytes(tmp_path):
    curves.write_curve(ROWS, tmp_path / "a.parquet", record())
    curves.write_curve(ROWS, tmp_path / "b.parquet", record())
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_missing_corrupt_and_foreign_files_are_named(tmp_path):
    with pytest.raises(CurveFileError, match="nothere.parquet.*does not exist"):
        curves.read_curve(tmp_path / "nothere.parquet")
    bad = tmp_path / "corrupt.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(CurveFileError, match="corrupt.parquet.*not a readable Parquet"):
        curves.read_curve(bad)
    foreign = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"step": [1]}), foreign)
    with pytest.raises(CurveFileError, match="foreign.parquet.*no reprobench provenance"):
        curves.read_curve(foreign)
    wrong = tmp_path / "wrong.parquet"
    curves.write_table(pa.table({"step": [1]}), wrong, record())
    with pytest.raises(CurveFileError, match="wrong.parquet.*schema"):
        curves.read_curve(wrong)


def test_failed_write_leaves_nothing(tmp_path):
    path = tmp_path / "x.parquet"
    with pytest.raises(pa.ArrowException):
        curves.write_curve({**ROWS, "value": ["not", "numbers"]}, path, record())
    assert list(tmp_path.iterdir()) == []


def test_cli_names_a_missing_curve_file(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "reprobench", "arith", "aggregate", "--experiment", "operations",
                           "--curves", str(tmp_path / "gone.parquet"), "--window", "5", "--out",
                           str(tmp_path / "o.parquet"), "--groups-out", str(tmp_path / "g.parquet")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "gone.parquet" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "o.parquet").exists()


def test_within_verdicts():
    I = compare.Interval  # noqa: E741
    assert compare.within(I(0.31, 0.23, 0.41), I(0.0, 0.0, 0.56))[0] is True
    assert compare.within(I(0.31, 0.23, 0.41), I(0.9, 0.8, 0.95))[0] is False
    assert compare.within(I(0.24), I(0.2, 0.1, 0.22), tolerance=0.02)[0] is True
    assert compare.within(I(0.24), I(0.2, 0.1, 0.21), tolerance=0.02)[0] is False
    assert compare.within(I(2.8e6), I(3e6))[0] is None
    assert compare.within(I(None), I(3e6, 2e6, 4e6)) == (None, "missing value")
    assert compare.Interval.mean_std(0.5, 0.25) == I(0.5, 0.25, 0.75)


def test_comparison_row_names_every_column():
    row = compare.row(benchmark="b", result="table1", row="x", metric="m", published=compare.Interval(1.0, 0.5, 1.5),
                      reproduced=compare.Interval(2.0, 1.2, 2.8), n_runs=3, scale="small", variant="faithful")
    assert list(row) == compare.COLUMNS
    assert (row["published_low"], row["reproduced_high"], row["within"]) == (0.5, 2.8, True)


def test_best_cells_for_bolding():
    assert tables.best([0.2, 0.5, 0.5]) == [1, 2]  # ties are all best
    assert tables.best([3.0, float("nan"), 1.0], higher=False) == [2]
    assert tables.best([0.4, 0.4]) == []  # everyone ties: nothing is best
    assert tables.best([0.4]) == [0] and tables.best([float("nan")]) == []


def test_output_stem_checks_every_format():
    from reprobench.core.cli import output_stem
    from reprobench.core.errors import ConfigError

    assert output_stem(["r/t.md", "r/t.tex", "r/t.csv"], (".md", ".csv", ".tex")) == "r/t"
    with pytest.raises(ConfigError, match="common stem"):
        output_stem(["r/t.md", "r/u.csv", "r/t.tex"], (".md", ".csv", ".tex"))
    with pytest.raises(ConfigError, match="one file per format"):
        output_stem(["r/t.md"], (".md", ".csv", ".tex"))


def test_product_files_and_log_mirror_results():
    from reprobench.core.benchmark import Product

    p = Product("Table 1", "results/x/tables/t1", (".md", ".csv"), "what it shows")
    assert p.files() == ["results/x/tables/t1.md", "results/x/tables/t1.csv"]
    assert p.log == "logs/x/tables/t1.log"


def test_table_formats():
    assert tables.sci(3.04e6) == "3.0e6" and tables.sci(5.8e-4) == "5.8e-4" and tables.sci(float("nan")) == "—"
    assert tables.sci_tex(2.9e5) == r"2.9 \cdot 10^{5}"
    md = tables.to_markdown(["a", "b"], [["1", "2"]], bold={(0, 1)})
    assert "| 1 | **2** |" in md
    assert r"\textbf{2}" in tables.to_latex(["a", "b"], [["1", "2"]], bold={(0, 1)})


def test_inspect_lists_runs_and_missing(tmp_path, monkeypatch):
    from reprobench.core import inspect

    root = tmp_path / "results/arith/curves"
    curves.write_curve(ROWS, root / "x/seed=0.parquet", record())
    (root / "y").mkdir()
    (root / "y/broken.parquet").write_bytes(b"junk")
    groups, bad = inspect.summarise(str(tmp_path / "results"))
    assert sum(i["files"] for i in groups.values()) == 1 and len(bad) == 1 and "broken.parquet" in bad[0]
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps({"arith": {"dataset": {"input_size": 10, "hidden_size": 2, "overlap": 0.5, "subset": 0.25,
                                                     "interpolation": [1, 2], "extrapolation": [2, 6]},
                                         "operations": {"seeds": 2, "iterations": 1, "cells": {"add": ["nac_add"]}},
                                         "sweeps": {"seeds": 1, "iterations": 1, "operation": "mul", "models": [],
                                                    "input_size": [], "hidden_size": [], "overlap": [], "subset": [],
                                                    "range": []}}}))
    monkeypatch.chdir(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "reprobench", "inspect", "results", "--config", str(cfg)],
                          capture_output=True, text=True)
    assert "config expects 2 curve files; 0 present, 2 missing" in proc.stdout
    assert "UNREADABLE" in proc.stdout and proc.returncode == 1
