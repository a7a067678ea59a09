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
    with pytest.raises(Exception):
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
    assert compare.within(0.31, 0.23, 0.41, 0.0, 0.0, 0.56)[0] is True
    assert compare.within(0.31, 0.23, 0.41, 0.9, 0.8, 0.95)[0] is False
    assert compare.within(0.24, None, None, 0.2, 0.1, 0.22, tolerance=0.02)[0] is True
    assert compare.within(0.24, None, None, 0.2, 0.1, 0.21, tolerance=0.02)[0] is False
    assert compare.within(2.8e6, None, None, 3e6, None, None)[0] is None


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
