"""The prepare and train jobs in-process: a lambda the corpus cannot hold, a user's learner class, the curve file."""

from __future__ import annotations

import json
import sys

import pytest
import torch

from reprobench.calm import runs, summary
from reprobench.core.errors import ConfigError, ReprobenchError


class ConstantLearner:
    """A user's learner (it has `learn`): predicts the uniform distribution, never learns."""

    oracle = False

    def __init__(self, vocab: int):
        self.vocab = vocab

    def learn(self, x, y, class_id=None):
        return torch.tensor(float(torch.log(torch.tensor(float(self.vocab)))))

    def gate_weights(self):
        return None

    def on_fragment(self, index):
        pass

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    root = tmp_path_factory.mktemp("calm")
    out = root / "corpora.json"
    runs.prepare("synthetic", str(root / "stand-in"), ["multilingual"], {"multilingual": [200]}, 1, 20, 20, str(out),
                 60_000, 20_000, 100)
    return root, out


def test_a_lambda_the_corpus_cannot_hold_stops_naming_it_and_writes_nothing(prepared, tmp_path):
    root, _ = prepared
    out = tmp_path / "corpora.json"
    with pytest.raises(ReprobenchError, match=r"calm.lambdas.multilingual = \[1000000\]"):
        runs.prepare("synthetic", str(root / "stand-in"), ["multilingual"], {"multilingual": [10**6]}, 1, 20, 20,
                     str(out), 60_000, 20_000, 100)
    assert not out.exists()


def test_a_user_learner_runs_the_online_protocol_into_a_curve(prepared, tmp_path):
    _, corpora_json = prepared
    vocab = json.loads(corpora_json.read_text())["splits"]["test"]["multilingual"]["vocabulary"]
    sys.modules[__name__].ConstantLearner = ConstantLearner
    out = tmp_path / "curve.parquet"
    runs.train_run(str(corpora_json), "multilingual", 200, f"{__name__}:ConstantLearner", "faithful", 0, 20, 20,
                   0.05, 0, str(out), "test", "cpu")
    w, record = summary.stream_frame(out)
    assert record["config"]["user_class"] == f"{__name__}:ConstantLearner" and record["setting"]["synthetic"]
    assert w["loss"].to_numpy() == pytest.approx(float(torch.log(torch.tensor(float(vocab)))))
    assert w["switch"].sum() == 20 and w["fragment"].max() == 19
    with pytest.raises(ConfigError, match="'calm.models': cannot import the user's class 'nope.mod:X'"):
        runs.train_run(str(corpora_json), "multilingual", 200, "nope.mod:X", "faithful", 0, 20, 20, 0.05, 0,
                       str(tmp_path / "x.parquet"), "test", "cpu")


def test_a_pack_trains_each_run_as_its_own_job_would(prepared, tmp_path, capsys):
    """`calm train --runs` (a pack, core.packs) trains its runs in turn in one process: each curve equals the one its
    own job writes (the loss of every batch, the metrics), a user's class included."""
    import pandas as pd

    from reprobench.cli import main

    _, corpora_json = prepared
    sys.modules[__name__].ConstantLearner = ConstantLearner
    settings = [("ind_lstm", "faithful", 0), ("ind_lstm", "corrected", 1),
                (f"{__name__}:ConstantLearner", "faithful", 0)]
    common = ["--corpora", str(corpora_json), "--n-fragments", "20", "--window", "20", "--size-factor", "0.05",
              "--max-gate-steps", "2", "--device", "cpu", "--threads", "1", "--scale", "test", "--checkpoint-minutes",
              "10"]
    pack = [{"dataset": "multilingual", "lam": 200, "model": m, "variant": v, "seed": s,
             "out": str(tmp_path / f"pack{i}.parquet"), "checkpoint": str(tmp_path / f"pack{i}.pt")}
            for i, (m, v, s) in enumerate(settings)]
    main(["calm", "train", *common, "--runs", json.dumps(pack)])
    for i, (m, v, s) in enumerate(settings):
        main(["calm", "train", *common, "--dataset", "multilingual", "--lam", "200", "--model", m, "--variant", v,
              "--seed", str(s), "--out", str(tmp_path / f"one{i}.parquet"),
              "--checkpoint", str(tmp_path / f"one{i}.pt")])
        a, b = pd.read_parquet(tmp_path / f"pack{i}.parquet"), pd.read_parquet(tmp_path / f"one{i}.parquet")
        assert len(a) > 50 and a.equals(b), settings[i]
    assert main(["calm", "train", *common, "--dataset", "multilingual", "--lam", "200", "--model", "ind_lstm",
                 "--variant", "faithful", "--seed", "0", "--checkpoint", str(tmp_path / "x.pt")]) == 2
    assert "config key 'train': give --runs, or every one of --out" in capsys.readouterr().err
    no_checkpoint = {k: v for k, v in pack[0].items() if k != "checkpoint"}
    assert main(["calm", "train", *common, "--runs", json.dumps([no_checkpoint])]) == 2
    assert "config key 'runs'" in (err := capsys.readouterr().err) and "'checkpoint'" in err
