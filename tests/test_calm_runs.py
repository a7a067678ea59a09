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
