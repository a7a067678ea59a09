"""Curve files, atomic writes, comparison verdicts, tables, inspect."""

import json
import os
import signal
import stat
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import yaml

from conftest import ROOT
from reprobench.core import compare, curves, tables
from reprobench.core.errors import ResultsFileError

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
    with pytest.raises(ResultsFileError, match="nothere.parquet.*does not exist"):
        curves.read_curve(tmp_path / "nothere.parquet")
    bad = tmp_path / "corrupt.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(ResultsFileError, match="corrupt.parquet.*not a readable Parquet"):
        curves.read_curve(bad)
    foreign = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"step": [1]}), foreign)
    with pytest.raises(ResultsFileError, match="foreign.parquet.*no reprobench provenance"):
        curves.read_curve(foreign)
    wrong = tmp_path / "wrong.parquet"
    curves.write_table(pa.table({"step": [1]}), wrong, record())
    with pytest.raises(ResultsFileError, match="wrong.parquet.*schema"):
        curves.read_curve(wrong)
    empty = tmp_path / "empty.parquet"
    curves.write_curve({k: [] for k in ROWS}, empty, record())
    with pytest.raises(ResultsFileError, match="empty.parquet: has no rows"):  # not a run counted as unsolved
        curves.read_curve(empty)


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
    groups, bad, temporary = inspect.summarise(str(tmp_path / "results"))
    assert sum(i["files"] for i in groups.values()) == 1 and len(bad) == 1 and "broken.parquet" in bad[0]
    assert temporary == 0
    cfg = tmp_path / "c.yaml"
    arith = yaml.safe_load((ROOT / "config.yaml").read_text())["arith"]
    arith["operations"].update(seeds=2, cells={"add": ["nac_add"]})
    arith["sweeps"].update(seeds=1, models=["nac_mul"], input_size=[10], hidden_size=[2], overlap=[0.5],
                           subset=[0.25], range=arith["sweeps"]["range"][:1])
    cfg.write_text(yaml.safe_dump({"arith": arith}))
    monkeypatch.chdir(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "reprobench", "inspect", "results", "--config", str(cfg)],
                          capture_output=True, text=True)
    assert "config expects 7 curve files; 0 present, 7 missing" in proc.stdout  # 2 seeds + 5 sweeps
    assert "UNREADABLE" in proc.stdout and proc.returncode == 1


def test_inspect_checks_each_kind_of_file_and_skips_temporary_files(tmp_path, monkeypatch):
    """Curves need rows; metrics tables are called metrics; threshold files must pass arith's reader; a temporary
    file of a killed write is counted, not reported unreadable."""
    results = tmp_path / "results"
    curves.write_curve(ROWS, results / "arith/curves/a/seed=0.parquet", record())
    curves.write_curve({k: [] for k in ROWS}, results / "arith/curves/a/seed=1.parquet", record())
    curves.write_frame(pd.DataFrame({"success": [0.5]}), results / "arith/metrics/operations.parquet",
                       curves.summary_record("madsen2019-arith", "operations", "groups", "small", "faithful"))
    thresholds = results / "arith/thresholds/operation=add"
    thresholds.mkdir(parents=True)
    (thresholds / "good.json").write_text(json.dumps({"stage": "threshold", "paper": "madsen2019-arith",
                                                      "thresholds": {"faithful": 1e-5, "corrected": 2e-5}}))
    (thresholds / "nokey.json").write_text(json.dumps({"stage": "threshold", "values": {}}))
    (thresholds / "corrupt.json").write_text('{"thresholds": {"faith')
    (results / "arith/curves/a/.seed=2.parquet.reprobench-tmp-0a1b2c3d.parquet").write_bytes(b"PAR1 half")
    monkeypatch.chdir(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "reprobench", "inspect", "results"], capture_output=True, text=True)
    out = proc.stdout
    assert proc.returncode == 1
    unreadable = sorted(line for line in out.splitlines() if line.startswith("UNREADABLE"))
    assert len(unreadable) == 3, out
    assert "seed=1.parquet: has no rows" in out
    assert "nokey.json: is not a threshold file" in out and "corrupt.json: is not readable JSON" in out
    assert "1 temporary files of interrupted writes skipped" in out and "reprobench-tmp" not in "".join(unreadable)
    kinds = {line.split()[0] for line in out.splitlines()[2:] if line.split() and line.split()[-1] != "files"}
    assert {"curve", "metrics", "threshold"} <= kinds, out
    assert "3 readable results files" in out


def test_results_files_get_the_mode_of_a_plain_open_under_the_umask(tmp_path):
    from reprobench.core import atomic, checkpoint

    for umask, mode in ((0o022, 0o644), (0o002, 0o664), (0o077, 0o600)):
        old = os.umask(umask)
        try:
            folder = tmp_path / oct(umask)
            atomic.write_text(folder / "table.md", "x")
            curves.write_curve(ROWS, folder / "seed=0.parquet", record())
            checkpoint.save(folder / "run.pt", {"run": 1}, step=3)
        finally:
            os.umask(old)
        for name in ("table.md", "seed=0.parquet", "run.pt"):
            assert stat.S_IMODE((folder / name).stat().st_mode) == mode, (oct(umask), name)


def test_a_write_killed_by_sigkill_leaves_a_recognisable_file_that_the_next_write_removes(tmp_path):
    from reprobench.core import atomic

    target = tmp_path / "out" / "seed=0.parquet"
    killed = subprocess.run([sys.executable, "-c", f"""
import os, signal
from reprobench.core.atomic import atomic_path
with atomic_path({str(target)!r}) as tmp:
    tmp.write_bytes(b"PAR1 half written")
    os.kill(os.getpid(), signal.SIGKILL)
"""])
    assert killed.returncode == -signal.SIGKILL
    (left,) = target.parent.iterdir()
    assert atomic.is_temporary(left) and not target.exists()
    other = tmp_path / "out" / "seed=1.parquet"
    curves.write_curve(ROWS, other, record())  # another target's write leaves it alone
    assert left.exists()
    curves.write_curve(ROWS, target, record())
    assert sorted(p.name for p in target.parent.iterdir()) == ["seed=0.parquet", "seed=1.parquet"]


def test_checkpoint_round_trip_restores_numpy_state_exactly(tmp_path):
    from reprobench.core import checkpoint

    rng = np.random.RandomState(7)
    state = {"alive": np.array([True, False]), "ended_at": np.array([-1, 5]), "records": [
        (0, "test", "mse", np.array([1.5, np.nan]), np.array([True, True]))], "numpy_rng": rng.get_state(),
        "order": np.arange(6, dtype=np.int64).reshape(2, 3)[:, ::2], "scalar": np.float64(0.25)}
    identity = {"setting": {"interpolation": (1.0, 2.0)}, "seeds": [0, 1]}
    checkpoint.save(tmp_path / "c.pt", identity, model={"w": torch.ones(2)}, state=state)
    blob = checkpoint.load(tmp_path / "c.pt", identity)
    got = blob["state"]
    assert got["alive"].dtype == bool and got["alive"].tolist() == [True, False]
    assert got["ended_at"].dtype == np.int64 and got["order"].tolist() == [[0, 2], [3, 5]]
    np.testing.assert_array_equal(got["records"][0][3], [1.5, np.nan])
    assert got["records"][0][:3] == (0, "test", "mse") and got["scalar"] == 0.25
    restored = np.random.RandomState()
    restored.set_state(got["numpy_rng"])
    assert restored.randint(1 << 30) == rng.randint(1 << 30)
    assert torch.equal(blob["model"]["w"], torch.ones(2))
    assert checkpoint.load(tmp_path / "c.pt", {**identity, "seeds": [0]}) is None  # another run's file


class Payload:
    """A pickle that runs code when it is loaded unsafely."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_crafted_checkpoint_is_refused_without_running_its_code(tmp_path, capsys):
    from reprobench.core import checkpoint

    marker, path = tmp_path / "RAN", tmp_path / "run.pt"
    torch.save({"identity": {"run": 1}, "state": Payload(marker)}, path)
    torch.load(path, weights_only=False)  # the payload is live: an unsafe load runs it
    assert marker.exists()
    marker.unlink()
    assert checkpoint.load(path, {"run": 1}) is None
    assert not marker.exists()
    assert not path.exists() and (tmp_path / "run.pt.unreadable").exists()
    assert f"checkpoint {path} cannot be read" in capsys.readouterr().err


@pytest.mark.parametrize("keep", [0, 1, 100, 0.5, -1])
def test_a_truncated_checkpoint_is_moved_aside_and_training_starts_over(tmp_path, capsys, keep):
    from reprobench.core import checkpoint

    path = tmp_path / "run.pt"
    checkpoint.save(path, {"run": 1}, model={"w": torch.arange(1000.0)}, state={"a": np.zeros(500)})
    data = path.read_bytes()
    cut = int(len(data) * keep) if isinstance(keep, float) else (len(data) + keep if keep < 0 else keep)
    path.write_bytes(data[:cut])
    assert checkpoint.load(path, {"run": 1}) is None
    assert f"checkpoint {path} cannot be read" in capsys.readouterr().err
    assert (tmp_path / "run.pt.unreadable").read_bytes() == data[:cut] and not path.exists()
    checkpoint.save(path, {"run": 1}, step=1)
    assert checkpoint.load(path, {"run": 1})["step"] == 1


def test_a_metrics_table_without_the_columns_its_reader_needs_is_named(tmp_path):
    from reprobench.arith.summary import read_groups

    path = tmp_path / "synthetic.parquet"
    curves.write_frame(pd.DataFrame({"task": [1], "wade": [0.5]}), path,
                       curves.summary_record("cisneros2022-wade", "synthetic", "aggregate", "small", "all"))
    with pytest.raises(ResultsFileError, match=r"synthetic.parquet: lacks the columns \['experiment'.*'aggregate'"):
        read_groups([str(path)])


def test_threshold_files_are_checked_by_their_reader(tmp_path):
    from reprobench.arith import thresholds

    path = tmp_path / "t.json"
    path.write_text(json.dumps({"thresholds": {"faithful": 1e-5, "corrected": 2e-5}}))
    assert thresholds.read(str(path)) == {"faithful": 1e-5, "corrected": 2e-5}
    for text in ("not json", json.dumps({"values": 1}), json.dumps({"thresholds": {"faithful": 1}}),
                 json.dumps([1]), json.dumps({"thresholds": {"faithful": "x", "corrected": 1}})):
        path.write_text(text)
        with pytest.raises(ResultsFileError, match="t.json: is not a threshold file"):
            thresholds.read(str(path))
    path.write_text(json.dumps({"thresholds": {"faithful": -1, "corrected": 1}}))
    with pytest.raises(ResultsFileError, match="t.json: holds thresholds"):
        thresholds.read(str(path))
    with pytest.raises(ResultsFileError, match="nothere.json: does not exist"):
        thresholds.read(str(tmp_path / "nothere.json"))


def test_a_verdict_is_informative_only_where_it_could_have_failed():
    I = compare.Interval  # noqa: E741
    published = I(0.31, 0.23, 0.41)  # width 0.18
    two_seeds = compare.row(benchmark="b", result="t", row="r", metric="m", published=published,
                            reproduced=I(0.5, 0.09, 0.91), n_runs=2, scale="small", variant="faithful")
    assert two_seeds["within"] is True and two_seeds["informative"] is False
    fifty = dict(benchmark="b", result="t", row="r", metric="m", published=published, n_runs=50, scale="cpu",
                 variant="faithful")
    assert compare.row(reproduced=I(0.3, 0.19, 0.45), **fifty)["informative"] is True  # 0.26 <= 2 x 0.18
    assert compare.row(reproduced=I(0.3, 0.05, 0.45), **fifty)["informative"] is False  # 0.40 > 0.36
    assert compare.row(reproduced=I(0.3, 0.19, 0.45), comparable=False, **fifty)["informative"] is False
    # a figure value: the published spread is given as a width
    figure = compare.row(benchmark="b", result="f", row="r", metric="success", published=I(0.24),
                         reproduced=I(0.2, 0.1, 0.32), n_runs=10, scale="cpu", variant="faithful", tolerance=0.02,
                         published_width=0.24)
    assert figure["within"] is True and figure["informative"] is True
    assert compare.deviation([("t", "1/*", "*", "corrected", "W2")], "t", "1/LSTM", "wade", "corrected") == "W2"
    assert compare.deviation([("t", "1/*", "*", "corrected", "W2")], "t", "1/LSTM", "wade", "faithful") == ""


def test_reproduction_summary_counts_and_explains_every_miss(tmp_path):
    from reprobench.core import reproduction

    I = compare.Interval  # noqa: E741
    common = dict(benchmark="arith", result="operations", metric="success", scale="cpu", variant="faithful")
    rows = [compare.row(row="a", published=I(0.3, 0.2, 0.4), reproduced=I(0.3, 0.25, 0.35), n_runs=10, **common),
            compare.row(row="b", published=I(0.3, 0.2, 0.4), reproduced=I(0.9, 0.85, 0.95), n_runs=10, **common),
            compare.row(row="c", published=I(0.3, 0.2, 0.4), reproduced=I(0.9, 0.85, 0.95), n_runs=10,
                        deviation="B5", **common),
            compare.row(row="d", published=I(0.3, 0.2, 0.4), reproduced=I(0.9, 0.5, 1.0), n_runs=2, **common),
            compare.row(row="e", published=I(2e6), reproduced=I(3e6), n_runs=10, **common)]
    path = tmp_path / "results/arith/comparison.csv"
    compare.write(rows, str(path))
    reproduction.write(str(tmp_path / "r.md"), {"arith": ("Title", "Cite", "", "Short runs: solve times only.")},
                       [str(path)])
    text = (tmp_path / "r.md").read_text()
    assert "\nShort runs: solve times only.\n" in text  # the rows' scale is cpu
    assert ("5 published numbers compared; 1 within the published spread, of which 1 informative (of 3 informative "
            "verdicts); 3 outside: 1 by a documented deviation, 1 not informative, 1 unexplained.") in text
    assert "| operations | faithful | 5 | 1 | 3 | 1 | 1 | 1 | 1 | 1 |" in text
    assert "operations b success (faithful)" in text and "UNEXPLAINED" in text and "documented deviation B5" in text


def test_a_miss_that_could_not_have_been_informative_is_the_scales_not_a_deviations(tmp_path):
    from reprobench.core import reproduction

    I = compare.Interval  # noqa: E741
    common = dict(benchmark="s2b", result="table1", metric="acc", scale="small", variant="faithful",
                  published=I(0.3, 0.2, 0.4))
    rows = [compare.row(row="two seeds", reproduced=I(0.9, 0.85, 0.95), n_runs=2, deviation="S16", **common),
            compare.row(row="wide", reproduced=I(0.9, 0.5, 1.0), n_runs=10, **common),  # 0.5 wide > 2 x 0.2
            compare.row(row="short", reproduced=I(0.9, 0.85, 0.95), n_runs=10, comparable=False,
                        not_comparable_because="1,500 observations per run of the paper's 500,000", **common),
            compare.row(row="informative", reproduced=I(0.9, 0.85, 0.95), n_runs=10, deviation="S16", **common)]
    assert [r["not_informative_because"] for r in rows] == [
        "2 runs, fewer than 5", "our interval (0.5 wide) is over 2 times the published one (0.2)",
        "1,500 observations per run of the paper's 500,000", ""]
    path = tmp_path / "results/s2b/comparison.csv"
    compare.write(rows, str(path))
    reproduction.write(str(tmp_path / "r.md"), {"s2b": ("Title", "Cite", "the agents at full size")}, [str(path)])
    text = (tmp_path / "r.md").read_text()
    assert "4 outside: 1 by a documented deviation, 3 not informative, 0 unexplained." in text
    assert "Nothing here is informative" not in text  # one verdict could have failed
    compare.write(rows[:3], str(path))
    reproduction.write(str(tmp_path / "r.md"), {"s2b": ("Title", "Cite", "the agents at full size")}, [str(path)])
    assert ("**Nothing here is informative at this scale**: no verdict could have failed (each miss below says why). "
            "What would make them informative: the agents at full size.") in (tmp_path / "r.md").read_text()
    assert ("table1 two seeds acc (faithful): published 0.3 [0.2, 0.4], reproduced 0.9 [0.85, 0.95], 2 runs: not "
            "informative at this scale: 2 runs, fewer than 5 (deviation S16 also applies)") in text
    assert "short acc (faithful)" in text and "not informative at this scale: 1,500 observations" in text
    assert "table1 informative acc (faithful)" in text and ": documented deviation S16" in text
