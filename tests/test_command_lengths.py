"""The aggregate rules of arith and CALM pass grid keys, not every curve path, on their command line: Linux caps one
argument at 128 KiB (MAX_ARG_STRLEN) and the job's command is one `bash -c` argument. The CLI must rebuild exactly the
rule's input list."""

import json
import shlex
from types import SimpleNamespace

import pytest

from conftest import ROOT
from reprobench import benchmarks
from reprobench.arith import grid as arith_grid
from reprobench.calm import grid as calm_grid
from reprobench.cli import main
from reprobench.core import schema
from reprobench.core.config import load

ARG_MAX = 128 * 1024


def paper_grid(key):
    """The benchmark's grid for paper.yaml over config.yaml, defaults filled in, as the Snakefile builds it."""
    section = load([ROOT / "config.yaml", ROOT / "paper.yaml"])[key]
    schema.validate(section, str(ROOT / "workflow" / "schemas" / f"{key}.schema.yaml"), key)
    return benchmarks.grid(key, section)


def quoted(paths) -> int:
    """Length of the paths as `{input:q}` writes them."""
    return len(" ".join(shlex.quote(p) for p in paths))


@pytest.mark.parametrize("experiment, n", [("operations", 10 * 100), ("input_size", 2 * 14 * 50),
                                           ("hidden_size", 2 * 9 * 50), ("overlap", 2 * 6 * 50),
                                           ("subset", 2 * 4 * 50), ("range", 2 * 5 * 50)])
def test_arith_cli_lists_the_rules_inputs_from_a_short_argument(experiment, n):
    g = paper_grid("arith")
    wildcards = SimpleNamespace(experiment=experiment)
    expected = g.get_curves(wildcards)  # the rule's input.curves
    argument = g.get_curve_keys(wildcards)  # the rule's params.grid
    assert len(expected) == n  # paper: 10 table cells x 100 seeds; 2 models x sweep values x 50 seeds
    assert arith_grid.Grid(json.loads(argument)).curves(experiment) == expected
    assert len(shlex.quote(argument)) < 4096
    if experiment == "input_size":  # why: the paths themselves would not fit
        assert quoted(expected) > ARG_MAX


def test_arith_train_passes_the_pack_not_its_curve_paths():
    """A pack's job writes up to 1,900 curve files (paper.yaml's padded NALU pack at 5M steps): its command passes the
    pack's JSON, from which the CLI rebuilds exactly the rule's outputs."""
    packs = paper_grid("arith").packs()
    largest = max(packs, key=lambda p: len(p.curves()))
    # the table's 4 NALU cells x 100 seeds; 30 sweep settings at 5M steps (input sizes 4-100, 9 hidden sizes, 6
    # overlaps, 4 subsets, 5 ranges) x 50 seeds
    assert len(largest.curves()) == 4 * 100 + 30 * 50
    assert quoted(largest.curves()) > ARG_MAX
    for pack in packs:
        assert len(shlex.quote(pack.to_json())) < 8192
        assert arith_grid.Pack.from_json(pack.to_json()).curves() == pack.curves()


def test_calm_cli_lists_the_rules_inputs_from_a_short_argument():
    g = paper_grid("calm")
    expected = g.curves()  # the rule's input
    # 13 models x 4 (dataset, lambda) x 2 variants x 10 seeds, 8 and 7 seeds for two rows on MultiDomain (D16),
    # + the Transformer's 4 x 2 x 10
    assert len(expected) == 2 * (13 * 4 * 10 - 2 * (2 + 3)) + 4 * 2 * 10
    argument = g.curve_keys_json()
    assert calm_grid.Grid(json.loads(argument)).curves() == expected
    assert len(shlex.quote(argument)) < 4096 and quoted(expected) > 100_000


def test_arith_aggregate_reads_the_grids_files_and_names_a_missing_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    keys = paper_grid("arith").get_curve_keys(SimpleNamespace(experiment="operations"))
    assert main(["arith", "aggregate", "--experiment", "operations", "--grid", keys, "--window", "5",
                 "--out", "o.parquet", "--groups-out", "g.parquet"]) == 2
    # config.yaml's first cell (mul: nac_mul) at the default dataset, seed 0
    first = ("results/arith/curves/experiment=operations/model=nac_mul/operation=mul/input_size=100/hidden_size=2"
             "/overlap=0.5/subset=0.25/interpolation=1_2/extrapolation=2_6/seed=0.parquet")
    assert f"{first}: does not exist" in capsys.readouterr().err
    assert not (tmp_path / "o.parquet").exists()


def test_calm_aggregate_reads_the_grids_files_and_names_a_missing_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["calm", "aggregate", "--grid", paper_grid("calm").curve_keys_json(), "--out", "r.parquet",
                 "--switch-out", "s.parquet"]) == 2
    first = "results/calm/curves/dataset=multilingual/lambda=10000/model=ind_lstm/variant=faithful/seed=0.parquet"
    assert f"{first}: does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["arith", "aggregate", "--experiment", "operations", "--window", "5",
                                   "--groups-out", "g"],
                                  ["calm", "aggregate", "--switch-out", "s"]])
def test_bad_grid_json_names_the_option(argv, capsys):
    assert main(argv + ["--grid", '{"datasets": ', "--out", "o"]) == 2
    assert "grid" in capsys.readouterr().err


def test_arith_unknown_experiment_is_named(capsys):
    assert main(["arith", "aggregate", "--experiment", "bogus", "--grid", "{}", "--window", "5", "--out", "o",
                 "--groups-out", "g"]) == 2
    assert "bogus" in capsys.readouterr().err
