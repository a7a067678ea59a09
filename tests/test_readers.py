"""The readers of CALM, S2B and AMTLB given files they must refuse (issue 27, "Inputs the readers accept"): an empty
metrics table, a file of another benchmark, experiment or stage, the same curve twice, a curve missing a metric or
all NaN, a corpora.json with wrong keys, and a Parquet file with a flipped bit. Each stage stops with one line naming
the file and what is wrong, not a traceback, an empty table or a run counted twice."""

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from reprobench.amtlb import PAPER as AMTLB
from reprobench.amtlb.runs import episode_rows
from reprobench.calm import PAPER as CALM
from reprobench.cli import main
from reprobench.core import curves
from reprobench.core.errors import ResultsFileError
from reprobench.s2b import PAPER as S2B
from reprobench.s2b.probes import PROTOCOLS, SPEAKER_METRICS


# --- where a Parquet file's pages are: a minimal reader of Thrift compact-protocol page headers -----------------------
def _varint(buf, pos):
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def _skip(buf, pos, kind):
    if kind in (1, 2):  # a bool inside a list is one byte; as a field its value is in the type
        return pos
    if kind == 3:
        return pos + 1
    if kind in (4, 5, 6):
        return _varint(buf, pos)[1]
    if kind == 7:
        return pos + 8
    if kind == 8:
        n, pos = _varint(buf, pos)
        return pos + n
    if kind in (9, 10):
        head = buf[pos]
        pos += 1
        n, elem = head >> 4, head & 0x0F
        if n == 15:
            n, pos = _varint(buf, pos)
        for _ in range(n):
            pos = pos + 1 if elem in (1, 2) else _skip(buf, pos, elem)
        return pos
    if kind == 11:
        n, pos = _varint(buf, pos)
        if n:
            kv = buf[pos]
            pos += 1
            for _ in range(n):
                pos = _skip(buf, _skip(buf, pos, kv >> 4), kv & 0x0F)
        return pos
    if kind == 12:
        return _struct(buf, pos)[1]
    raise ValueError(f"thrift type {kind}")


def _struct(buf, pos):
    """({field id: i32 value}, end) of a struct at pos."""
    fields, last = {}, 0
    while True:
        head = buf[pos]
        pos += 1
        if head == 0:
            return fields, pos
        kind, delta = head & 0x0F, head >> 4
        if delta:
            last += delta
        else:
            z, pos = _varint(buf, pos)
            last = (z >> 1) ^ -(z & 1)
        if kind == 5:
            z, pos = _varint(buf, pos)
            fields[last] = (z >> 1) ^ -(z & 1)
        else:
            pos = _skip(buf, pos, kind)


def page_regions(path):
    """[(header start, payload start, payload end)] of every page of every column chunk."""
    buf = open(path, "rb").read()
    meta = pq.ParquetFile(path).metadata
    out = []
    for i in range(meta.num_row_groups):
        for j in range(meta.num_columns):
            c = meta.row_group(i).column(j)
            start = c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset
            pos, end = start, start + c.total_compressed_size
            while pos < end:
                header, body = _struct(buf, pos)
                out.append((pos, body, body + header[3]))  # field 3: compressed_page_size
                pos = body + header[3]
    return out


def _record(paper, experiment, model, seed=0, variant="faithful", setting=None, config=None):
    return curves.provenance(paper=paper, experiment=experiment, model=model, setting=setting or {}, seed=seed,
                             scale="small", variant=variant, config=config or {}, device="cpu", wall_time_s=1.0,
                             start="s", end="e")


# --- writers of tiny curve files, one per benchmark and kind --------------------------------------------------------

def calm_curve(path, model="poe_pw_30", seed=0, weights=True, drop=(), nan=(), paper=CALM.id,
               experiment="multilingual"):
    n = 40
    fragment = np.repeat(np.arange(8), 5)
    series = {"loss": np.linspace(3, 1, n), "fragment": fragment, "class_id": fragment % 2,
              "switch": (np.arange(n) % 5 == 0).astype(float)}
    if weights:
        series |= {f"weight_{i:02d}": np.full(n, 0.5) for i in range(2)}
    series = [("stream", k, np.full(n, np.nan) if k in nan else v) for k, v in series.items() if k not in drop]
    record = _record(paper, experiment, model, seed, setting={
        "dataset": experiment, "lambda": 200, "classes": ["a", "b"], "synthetic": True, "vocabulary": 5,
        "split": "test"}, config={"n_fragments": 8, "parameters": 10})
    curves.write_curve(curves.series_rows(seed, series), path, record)
    return str(path)


def s2b_probe(path, experiment="speaker", seed=0, drop=(), nan=False, paper=S2B.id):
    if experiment == "speaker":
        series = [("episode", k, [np.nan if nan else 0.5] * 3) for k in SPEAKER_METRICS if k not in drop]
        model = "posdis_speaker"
    else:
        series = [(f"O={o}/{p}", k, [np.nan if nan else 0.5]) for o in (1, 4) for p in PROTOCOLS
                  for k in ("factorvae_score", "mig", "modularity") if k not in drop]
        model = "scs_stimuli"
    curves.write_curve(curves.series_rows(seed, series), path, _record(paper, experiment, model, seed))
    return str(path)


def s2b_run(path, experiment="zsct", model="r2d2", seed=0, drop=(), nan=False, env=True):
    values = {"observations": [100.0, 200.0], "zsct_accuracy": [0.4, 0.6], "accuracy/train1": [0.5, 0.7],
              "train_accuracy/train1": [0.5, 0.6]}
    series = [("eval", k, [np.nan] * 2 if nan else v) for k, v in values.items() if k not in drop]
    setting = {"env": {"nbr_object_centric_samples": 4, "sampling_strategy": "component-focused-1shot"}} if env else {}
    curves.write_curve(curves.series_rows(seed, series), path, _record(S2B.id, experiment, model, seed,
                                                                       setting=setting))
    return str(path)


def amtlb_curve(path, kind="fresh", model="ppo", game="pong", seed=0, fold=None, drop=(), nan=False,
                paper=AMTLB.id):
    episodes = [SimpleNamespace(game=game, episode_return=float(k), frames=10, end_frame=10 * (k + 1),
                                truncated=False, slot=0, cut=False) for k in range(3)]
    rows = episode_rows(seed, episodes, [(game, 10 * (k + 1), float(k)) for k in range(3)])
    keep = [i for i, m in enumerate(rows["metric"]) if m not in drop]
    rows = {k: [v[i] for i in keep] for k, v in rows.items()}
    if nan:
        rows["value"] = [np.nan] * len(rows["value"])
    record = _record(paper, kind, model, seed, setting={"games": [game], "fold": fold, "frames_per_game": 30})
    curves.write_curve(rows, path, record)
    return str(path)


def empty_table(path, paper, experiment, stage, columns):
    curves.write_frame(pd.DataFrame({c: pd.Series([], dtype=float) for c in columns}), path,
                       curves.summary_record(paper, experiment, stage, "small", "faithful"))
    return str(path)


def run(argv, capsys):
    """(exit status, stderr) of `reprobench ARGV` run in this process."""
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def assert_refused(code, err, path, *words):
    assert code == 2, err
    assert "Traceback" not in err and f"file {path}:" in err, err
    for word in words:
        assert word in err, err


# --- 1. a metrics table with no rows ---------------------------------------------------------------------------------

def _empty_cases():
    from reprobench.amtlb.summary import COLUMNS as AMTLB_COLUMNS
    from reprobench.calm.summary import RUN_COLUMNS, SWITCH_COLUMNS
    from reprobench.s2b.summary import COLUMNS as PROBE_COLUMNS
    from reprobench.s2b.summary import ZSCT_COLUMNS

    table, figure = ["t.md", "t.csv", "t.tex"], ["f.png", "f.pdf"]
    runs = (CALM.id, "calm", "aggregate", RUN_COLUMNS)
    switch = (CALM.id, "calm", "switch_curves", SWITCH_COLUMNS)
    probes, zsct = (S2B.id, "probes", "aggregate", PROBE_COLUMNS), (S2B.id, "zsct", "aggregate", ZSCT_COLUMNS)
    transfer = (AMTLB.id, "transfer", "aggregate", AMTLB_COLUMNS["transfer"])
    multitask = (AMTLB.id, "multitask", "aggregate", AMTLB_COLUMNS["multitask"])
    scores = (AMTLB.id, "scores", "aggregate", AMTLB_COLUMNS["scores"])
    return {  # name: (the empty file, argv with {e} for it and {ok} for a good file of the same kind)
        "calm table1": (runs, ["calm", "table1", "--runs", "{e}", "--out", *table]),
        "calm table4": (runs, ["calm", "table4", "--runs", "{e}", "--out", *table]),
        "calm compare": (runs, ["calm", "compare", "--runs", "{e}", "--out", "c.csv", "--yours", "y.csv"]),
        "calm figure1b runs": (runs, ["calm", "figure1b", "--runs", "{e}", "--switch", "{sw}", "--variant",
                                      "faithful", "--out", *figure]),
        "calm figure1b switch": (switch, ["calm", "figure1b", "--runs", "{runs}", "--switch", "{e}", "--variant",
                                          "faithful", "--out", *figure]),
        "s2b table2": (zsct, ["s2b", "table2", "--zsct", "{e}", "--out", *table]),
        "s2b table1": (probes, ["s2b", "table1", "--probes", "{e}", "--out", *table]),
        "s2b tableD2": (probes, ["s2b", "tableD2", "--probes", "{e}", "--out", *table]),
        "s2b compare": (zsct, ["s2b", "compare", "--probes", "{probes}", "--zsct", "{e}", "--out", "c.csv",
                                "--yours", "y.csv"]),
        "amtlb transfer": (transfer, ["amtlb", "transfer", "--metrics", "{e}", "--out", *table]),
        "amtlb transfer-ratio": (transfer, ["amtlb", "transfer-ratio", "--metrics", "{e}", "--out", *figure]),
        "amtlb transfer-per-game": (transfer, ["amtlb", "transfer-per-game", "--metrics", "{e}", "--out", *figure]),
        "amtlb multitask-scores": (scores, ["amtlb", "multitask-scores", "--metrics", "{e}", "--out", *table]),
        "amtlb multitask-curves": (multitask, ["amtlb", "multitask-curves", "--metrics", "{e}", "--out", *figure]),
        "amtlb compare": (scores, ["amtlb", "compare", "--scores", "{e}", "--frames-per-game", "100", "--out",
                                   "c.csv", "--yours", "y.csv", "--architecture", "ppo"]),
    }


@pytest.mark.parametrize("name", list(_empty_cases()))
def test_a_metrics_table_with_no_rows_stops_its_stage(name, tmp_path, capsys, monkeypatch):
    from reprobench.s2b.summary import aggregate

    monkeypatch.chdir(tmp_path)
    (paper, experiment, stage, columns), argv = _empty_cases()[name]
    empty = empty_table(tmp_path / "empty.parquet", paper, experiment, stage, columns)
    # the other input of a two-input stage: a good file, so that the empty one is what stops it
    probes = aggregate([s2b_probe(tmp_path / "experiment=speaker/seed=0.parquet"),
                        s2b_probe(tmp_path / "experiment=disentanglement/seed=0.parquet", "disentanglement")],
                       str(tmp_path / "probes.parquet"))
    assert len(probes)
    from reprobench.calm.summary import aggregate as calm_aggregate

    calm_aggregate([calm_curve(tmp_path / "c.parquet")], str(tmp_path / "runs.parquet"), str(tmp_path / "sw.parquet"))
    argv = [a.format(e=empty, probes=tmp_path / "probes.parquet", runs=tmp_path / "runs.parquet",
                     sw=tmp_path / "sw.parquet") for a in argv]
    code, err = run(argv, capsys)
    assert_refused(code, err, empty, "has no rows")
    assert not list(tmp_path.glob("t.*")) and not list(tmp_path.glob("f.*")) and not (tmp_path / "c.csv").exists()


# --- 2. a file of another benchmark, experiment or stage -------------------------------------------------------------

def test_s2b_aggregate_refuses_a_fig5_curve_or_a_calm_curve_as_a_probe(tmp_path, capsys):
    good = s2b_probe(tmp_path / "experiment=speaker/seed=0.parquet")
    fig5 = s2b_run(tmp_path / "experiment=fig5/model=scs/variant=faithful/seed=0.parquet", "fig5", "scs")
    calm = calm_curve(tmp_path / "calm.parquet")
    for other, words in ((fig5, ("experiment 'fig5'", "one of ['speaker', 'disentanglement']")),
                         (calm, (CALM.id, f"paper '{S2B.id}'"))):
        code, err = run(["s2b", "aggregate", "--curves", good, other, "--out", tmp_path / "p.parquet"], capsys)
        assert_refused(code, err, other, *words)
    assert not (tmp_path / "p.parquet").exists()


def test_calm_weight_figures_refuse_a_curve_without_mixture_weights(tmp_path, capsys):
    ind = calm_curve(tmp_path / "ind.parquet", model="ind_lstm", weights=False)
    for figure in ("figure1d", "figure1e", "figure4"):
        code, err = run(["calm", figure, "--curve", ind, "--out", tmp_path / "f.png", tmp_path / "f.pdf"], capsys)
        assert_refused(code, err, ind, "has no mixture weights", "'Ind. LSTM' curve")
    assert not (tmp_path / "f.png").exists()
    code, err = run(["calm", "figure1d", "--curve", calm_curve(tmp_path / "poe.parquet"), "--out",
                     tmp_path / "f.png", tmp_path / "f.pdf"], capsys)
    assert code == 0 and (tmp_path / "f.png").exists(), err  # a curve with weights draws


@pytest.mark.parametrize("stage,aggregate", [("transfer", "scores"), ("multitask-scores", "multitask"),
                                             ("multitask-curves", "scores"), ("transfer-ratio", "multitask"),
                                             ("compare", "transfer")])
def test_amtlb_tables_and_figures_refuse_another_aggregate(stage, aggregate, tmp_path, capsys):
    from reprobench.amtlb.summary import COLUMNS

    path = tmp_path / f"{aggregate}.parquet"
    curves.write_frame(pd.DataFrame({c: [1] for c in COLUMNS[aggregate]}), path,
                       curves.summary_record(AMTLB.id, aggregate, "aggregate", "small", "faithful"))
    out = ["--out", tmp_path / "c.csv", "--yours", tmp_path / "y.csv", "--architecture", "ppo", "--frames-per-game",
           "100", "--scores"] if stage == "compare" else \
        ["--out", *(tmp_path / f"x{e}" for e in ((".png", ".pdf") if "-" in stage and "scores" not in stage
                                                 else (".md", ".csv", ".tex"))), "--metrics"]
    code, err = run(["amtlb", stage, *out, path], capsys)
    assert_refused(code, err, path, f"{AMTLB.id}'s 'aggregate' table (experiment '{aggregate}'")


def test_amtlb_stages_name_a_table_without_the_columns_they_read(tmp_path, capsys):
    path = tmp_path / "transfer.parquet"
    curves.write_frame(pd.DataFrame({"fold": [0], "game": ["pong"]}), path,
                       curves.summary_record(AMTLB.id, "transfer", "aggregate", "small", "faithful"))
    code, err = run(["amtlb", "transfer", "--metrics", path, "--out", *(tmp_path / f"t{e}" for e in
                                                                       (".md", ".csv", ".tex"))], capsys)
    assert_refused(code, err, path, "lacks the columns ['seed', 't', 'measure'")


@pytest.mark.parametrize("bench", ["calm", "s2b", "s2b-zsct", "s2b-figure5", "amtlb"])
@pytest.mark.parametrize("how", ["same path", "other path", "copy"])
def test_aggregates_refuse_a_curve_given_twice(bench, how, tmp_path, capsys):
    if bench == "calm":
        path = calm_curve(tmp_path / "dataset=multilingual/lambda=200/model=poe_pw_30/variant=faithful/seed=0.parquet")
        argv = [*_aggregate_argv("calm", tmp_path), "--curves"]
    elif bench == "s2b":
        path = s2b_probe(tmp_path / "experiment=speaker/seed=0.parquet")
        argv = ["s2b", "aggregate", "--out", tmp_path / "p.parquet", "--curves"]
    elif bench == "s2b-zsct":
        path = s2b_run(tmp_path / "experiment=zsct/model=r2d2/O=4/S=1/variant=faithful/seed=0.parquet")
        argv = ["s2b", "aggregate-zsct", "--out", tmp_path / "z.parquet", "--curves"]
    elif bench == "s2b-figure5":
        path = s2b_run(tmp_path / "experiment=fig5/model=scs/variant=faithful/seed=0.parquet", "fig5", "scs")
        argv = ["s2b", "figure5", "--out", tmp_path / "f.png", tmp_path / "f.pdf", "--curves"]
    else:
        path = amtlb_curve(tmp_path / "experiment=fresh/model=ppo/game=pong/seed=0.parquet")
        argv = [*_aggregate_argv("amtlb", tmp_path), "--curves"]
    if how == "same path":
        second, words = path, ("is given twice",)
    elif how == "other path":
        second, words = str(Path(path).parent / ".." / Path(path).parent.name / Path(path).name), ("is given twice",)
    else:
        second = str(tmp_path / "copy" / Path(path).relative_to(tmp_path))
        Path(second).parent.mkdir(parents=True)
        shutil.copy(path, second)
        words = ("holds the same run as", path)
    code, err = run([*argv, path, second], capsys)
    assert_refused(code, err, second, *words)
    assert not list(tmp_path.glob("*.p*"))  # nothing written (.parquet, .png, .pdf)


def test_a_curve_on_another_runs_path_is_refused(tmp_path, capsys):
    moved = calm_curve(tmp_path / "dataset=multilingual/lambda=200/model=poe_pw_30/variant=faithful/seed=1.parquet")
    code, err = run(["calm", "aggregate", "--out", tmp_path / "r.parquet", "--switch-out", tmp_path / "s.parquet",
                     "--curves", moved], capsys)
    assert_refused(code, err, moved, "its path says seed=1 but its provenance says seed '0'")


# --- 3. another benchmark's curve, a missing metric, all NaN, a corpora.json with wrong keys -------------------------

def _aggregate_argv(bench, tmp_path):
    return {
        "calm": ["calm", "aggregate", "--out", tmp_path / "r.parquet", "--switch-out", tmp_path / "s.parquet"],
        "calm-figure1d": ["calm", "figure1d", "--out", tmp_path / "f.png", tmp_path / "f.pdf"],
        "s2b": ["s2b", "aggregate", "--out", tmp_path / "p.parquet"],
        "s2b-zsct": ["s2b", "aggregate-zsct", "--out", tmp_path / "z.parquet"],
        "s2b-figure5": ["s2b", "figure5", "--out", tmp_path / "f.png", tmp_path / "f.pdf"],
        "amtlb": ["amtlb", "aggregate", "--frames-per-game", "30", "--points", "3", "--eps", "1e-6", "--transfer",
                  tmp_path / "t.parquet", "--multitask", tmp_path / "m.parquet", "--scores", tmp_path / "s.parquet"],
    }[bench]


BAD_CURVES = {  # (stage, how to write the bad curve, words of the error)
    "calm: an s2b curve": ("calm", lambda p: s2b_probe(p), ("its reader needs paper",)),
    "calm: an amtlb curve": ("calm", lambda p: amtlb_curve(p), (AMTLB.id,)),
    "calm: no loss": ("calm", lambda p: calm_curve(p, drop=("loss",)), ("lacks the metrics ['loss']",)),
    "calm: no class ids": ("calm", lambda p: calm_curve(p, drop=("class_id",)), ("lacks the metrics ['class_id']",)),
    "calm: all NaN": ("calm", lambda p: calm_curve(p, nan=("loss", "fragment", "class_id", "switch", "weight_00",
                                                           "weight_01")), ("has only NaN values",)),
    "calm: NaN loss only": ("calm", lambda p: calm_curve(p, nan=("loss",)), ("only NaN values of ['loss']",)),
    "calm: NaN fragments": ("calm", lambda p: calm_curve(p, nan=("fragment",)), ("NaN values of ['fragment']",)),
    "calm: another dataset": ("calm", lambda p: calm_curve(p, experiment="wikitext"), ("experiment one of",)),
    "figure1d: an arith curve": ("calm-figure1d", lambda p: curves.write_curve(
        curves.series_rows(0, [("valid", "mse", [1.0])]), p, _record("madsen2019-arith", "operations", "nac")) or p,
                                 ("madsen2019-arith",)),
    "figure1d: no loss": ("calm-figure1d", lambda p: calm_curve(p, drop=("loss",)), ("lacks the metrics",)),
    "figure1d: all NaN": ("calm-figure1d", lambda p: calm_curve(p, nan=("loss", "fragment", "class_id", "switch",
                                                                        "weight_00", "weight_01")),
                          ("has only NaN values",)),
    "figure1d: NaN weights": ("calm-figure1d", lambda p: calm_curve(p, nan=("weight_00", "weight_01")),
                              ("only NaN mixture weights",)),
    "s2b: a calm curve": ("s2b", lambda p: calm_curve(p), (CALM.id,)),
    "s2b: speaker without posdis": ("s2b", lambda p: s2b_probe(p, drop=("posdis",)), ("lacks the metrics ['posdis']",)),
    "s2b: disentanglement without mig": ("s2b", lambda p: s2b_probe(p, "disentanglement", drop=("mig",)),
                                         ("lacks the metrics ['mig']",)),
    "s2b: all NaN": ("s2b", lambda p: s2b_probe(p, nan=True), ("has only NaN values",)),
    "zsct: a calm curve": ("s2b-zsct", lambda p: calm_curve(p), (CALM.id,)),
    "zsct: a fig5 curve": ("s2b-zsct", lambda p: s2b_run(p, "fig5", "scs"), ("experiment 'fig5'",)),
    "zsct: no accuracy": ("s2b-zsct", lambda p: s2b_run(p, drop=("zsct_accuracy",)),
                          ("lacks the metrics ['zsct_accuracy']",)),
    "zsct: all NaN": ("s2b-zsct", lambda p: s2b_run(p, nan=True), ("has only NaN values",)),
    "zsct: no env": ("s2b-zsct", lambda p: s2b_run(p, env=False), ("has no setting.env",)),
    "figure5: a zsct curve": ("s2b-figure5", lambda p: s2b_run(p), ("its reader needs experiment 'fig5'",)),
    "figure5: an amtlb curve": ("s2b-figure5", lambda p: amtlb_curve(p), (AMTLB.id,)),
    "figure5: no greedy accuracy": ("s2b-figure5", lambda p: s2b_run(p, "fig5", "scs", drop=("accuracy/train1",)),
                                    ("lacks the metrics ['accuracy/train1']",)),
    "figure5: all NaN": ("s2b-figure5", lambda p: s2b_run(p, "fig5", "scs", nan=True), ("has only NaN values",)),
    "amtlb: a calm curve": ("amtlb", lambda p: calm_curve(p), (CALM.id,)),
    "amtlb: no returns": ("amtlb", lambda p: amtlb_curve(p, drop=("return",)), ("lacks the metrics ['return']",)),
    "amtlb: no rewards by frame": ("amtlb", lambda p: amtlb_curve(p, drop=("cumulative_reward",)),
                                   ("has no rewards by frame",)),
    "amtlb: all NaN": ("amtlb", lambda p: amtlb_curve(p, nan=True), ("has only NaN values",)),
    "amtlb: transfer without its fresh run": ("amtlb", lambda p: amtlb_curve(p, "transfer", fold=0),
                                              ("has no fresh run of model 'ppo' on pong",)),
}


@pytest.mark.parametrize("name", list(BAD_CURVES))
def test_a_bad_curve_stops_its_stage_naming_the_file(name, tmp_path, capsys):
    bench, write, words = BAD_CURVES[name]
    path = write(str(tmp_path / "bad.parquet"))
    flag = "--curve" if bench == "calm-figure1d" else "--curves"
    code, err = run([*_aggregate_argv(bench, tmp_path), flag, path], capsys)
    assert_refused(code, err, path, *words)
    assert not [p for p in tmp_path.iterdir() if p.name != "bad.parquet"]  # nothing written


@pytest.mark.parametrize("bench,write", [
    ("calm", lambda p: calm_curve(p)), ("calm-figure1d", lambda p: calm_curve(p)),
    ("s2b", lambda p: s2b_probe(p)), ("s2b-zsct", lambda p: s2b_run(p)),
    ("s2b-figure5", lambda p: s2b_run(p, "fig5", "scs")), ("amtlb", lambda p: amtlb_curve(p))])
def test_the_good_curves_of_those_cases_pass(bench, write, tmp_path, capsys):
    """The fixtures above differ from a readable file only in what each case breaks."""
    path = write(str(tmp_path / "good.parquet"))
    flag = "--curve" if bench == "calm-figure1d" else "--curves"
    code, err = run([*_aggregate_argv(bench, tmp_path), flag, path], capsys)
    assert code == 0, err


CORPORA = {"paper": CALM.id, "source": "synthetic", "splits": {"test": {"multilingual": {
    "split_dir": "x/news_test", "vocabulary": 5, "classes": ["a"], "ntokens": {"a": 1}, "synthetic": True,
    "level": "char"}}}}


@pytest.mark.parametrize("change,words", [
    (lambda c: c.pop("splits"), "is not a CALM corpora.json"),
    (lambda c: c.update(paper=S2B.id), f"paper '{S2B.id}'"),
    (lambda c: c["splits"].pop("test"), "has no 'test' split"),
    (lambda c: c["splits"]["test"]["multilingual"].pop("split_dir"), "lacks or mistypes split_dir (str)"),
    (lambda c: c["splits"]["test"]["multilingual"].update(classes="a"), "lacks or mistypes classes (list)"),
    (lambda c: c["splits"]["test"].update(multilingual=[1]), "splits.test.multilingual is not an object"),
])
def test_a_corpora_json_with_wrong_keys_is_named(change, words, tmp_path, capsys):
    from reprobench.calm.runs import read_corpora

    path = tmp_path / "corpora.json"
    path.write_text(json.dumps(CORPORA))
    assert read_corpora(str(path))["multilingual"]["vocabulary"] == 5
    blob = json.loads(json.dumps(CORPORA))
    change(blob)
    path.write_text(json.dumps(blob))
    with pytest.raises(ResultsFileError, match="corpora.json: "):
        read_corpora(str(path))
    code, err = run(["calm", "appendix-a", "--corpora", path, "--out", tmp_path / "a.txt"], capsys)
    assert_refused(code, err, path, words)


# --- 4. page checksums -----------------------------------------------------------------------------------------------

def _flip_outcomes(path, positions, read):
    """{'error', 'same', 'different'}: counts over every bit of `positions` flipped in turn."""
    good = Path(path).read_bytes()
    reference = read(path)
    out = {"error": 0, "same": 0, "different": 0}
    bad = Path(path).with_name("flipped.parquet")
    for i in positions:
        for bit in range(8):
            data = bytearray(good)
            data[i] ^= 1 << bit
            bad.write_bytes(bytes(data))
            try:
                frame = read(bad)
            except Exception:
                out["error"] += 1
                continue
            out["same" if frame.equals(reference) else "different"] += 1
    return out


def test_every_flipped_bit_in_a_data_page_stops_the_reader(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "seed=0.parquet"
    curves.write_curve({"seed": [0] * 30, "step": list(range(30)), "split": ["valid"] * 30, "metric": ["mse"] * 30,
                        "value": rng.normal(size=30).tolist()}, path, _record("p", "e", "m"))
    payload = [i for _, start, end in page_regions(path) for i in range(start, end)]
    assert len(payload) > 300
    # without verification some flips read back as other numbers: the test can tell
    unverified = _flip_outcomes(path, payload, lambda p: pq.read_table(p, partitioning=None).to_pandas())
    assert unverified["different"] > 0, unverified
    verified = _flip_outcomes(path, payload, lambda p: curves.read_curve(p)[0])
    assert verified == {"error": 8 * len(payload), "same": 0, "different": 0}
    data = bytearray(path.read_bytes())
    data[payload[len(payload) // 2]] ^= 1
    (tmp_path / "flipped.parquet").write_bytes(bytes(data))
    with pytest.raises(ResultsFileError, match="flipped.parquet: is corrupt: a page fails its checksum"):
        curves.read_curve(tmp_path / "flipped.parquet")


def test_a_flipped_row_count_or_provenance_in_the_footer_is_caught(tmp_path):
    path = tmp_path / "seed=0.parquet"
    curves.write_curve({"seed": [0] * 50, "step": list(range(50)), "split": ["v"] * 50, "metric": ["m"] * 50,
                        "value": [0.5] * 50}, path, _record("p", "e", "m"))
    data = path.read_bytes()
    footer = range(page_regions(path)[-1][2], len(data) - 8)
    outcomes = _flip_outcomes(path, footer, lambda p: curves.read_curve(p)[0].assign(
        record=json.dumps(curves.read_metadata(p), sort_keys=True)))
    assert outcomes["different"] == 0, outcomes


def test_files_written_without_checksums_still_read(tmp_path):
    import pyarrow as pa

    path = tmp_path / "old.parquet"
    table = pa.table({f.name: pa.array([0], type=f.type) if f.type != pa.string() else ["x"]
                      for f in curves.CURVE_SCHEMA}, schema=curves.CURVE_SCHEMA)
    meta = {curves.METADATA_KEY: json.dumps(_record("p", "e", "m"), sort_keys=True).encode()}
    pq.write_table(table.replace_schema_metadata(meta), path)
    frame, record = curves.read_curve(path)
    assert len(frame) == 1 and record["paper"] == "p"


# --- inspect agrees ------------------------------------------------------------------------------------------------

def test_inspect_flags_what_the_readers_refuse(tmp_path, monkeypatch):
    import subprocess

    results = tmp_path / "results"
    calm_curve(results / "calm/curves/dataset=multilingual/lambda=200/model=poe_pw_30/variant=faithful/seed=0.parquet")
    moved = calm_curve(results / "calm/curves/dataset=multilingual/lambda=200/model=ind_lstm/variant=faithful/"
                       "seed=0.parquet")
    empty_table(results / "calm/metrics/runs.parquet", CALM.id, "calm", "aggregate", ["loss"])
    flipped = amtlb_curve(results / "amtlb/curves/experiment=fresh/model=ppo/game=pong/seed=0.parquet")
    start, end = next((s, e) for _, s, e in page_regions(flipped) if e - s > 8)
    data = bytearray(Path(flipped).read_bytes())
    data[(start + end) // 2] ^= 4
    Path(flipped).write_bytes(bytes(data))
    monkeypatch.chdir(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "reprobench", "inspect", "results"], capture_output=True, text=True)
    unreadable = [line for line in proc.stdout.splitlines() if line.startswith("UNREADABLE")]
    assert proc.returncode == 1 and len(unreadable) == 3, proc.stdout
    assert f"{Path(moved).relative_to(tmp_path)}: its path says model=ind_lstm" in proc.stdout
    assert "runs.parquet: has no rows" in proc.stdout
    assert "seed=0.parquet: is corrupt: a page fails its checksum" in proc.stdout
    assert "1 readable results files" in proc.stdout
