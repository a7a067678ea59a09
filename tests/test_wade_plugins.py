"""A user's sequence model on WADE's synthetic tasks (config wade.models; tests/plugins/tiny_user_wade.py, on the path
through conftest): the plan-time check, the first-step shape check, the run's curve file, Tables 4-6 and Figure 3's
columns."""

import numpy as np
import pandas as pd
import pytest
import torch

from reprobench.core import curves
from reprobench.core.errors import ConfigError
from reprobench.wade import grid, imdb_models, render, runs, summary, tasks
from reprobench.wade import sequence_models as sm

USER = "tiny_user_wade:TinyGRU"


@pytest.fixture(scope="module")
def qa():
    full = tasks.generate(5, 12305, 200)
    return tasks.Dataset(5, 12305, full.vocabulary, full.tokens[:40], full.masks[:40], full.train[:40])


def section(models):
    return {"tasks": [5], "seeds": 1, "base_seed": 12305, "reca_rules": [30], "models": models, "human_sessions": [],
            "imdb": {"models": ["lstm"], "seeds": 1, "source": "synthetic"}}


@pytest.mark.parametrize("spec, message", [
    ("tiny_user_wade:NoSuchClass", "cannot import"), ("tiny_user_wade:NoForward", "lacks the method 'forward'"),
    ("no_such_module:Model", "cannot import")])
def test_a_bad_class_stops_at_plan_time_naming_the_key(spec, message):
    with pytest.raises(ConfigError, match=message) as err:
        grid.Grid(section([spec])).check()
    assert "wade.models" in str(err.value)


def test_the_grid_adds_one_run_per_user_model_to_every_sequence_job():
    g = grid.Grid(section([USER]))
    g.check()
    assert g.sequence_runs()[-1] == ("tiny_user_wade.TinyGRU", "default")
    assert g.sequence_outputs()[-1].endswith("model=tiny_user_wade.TinyGRU/task={task}/config=default/seed={seed}"
                                             ".parquet")
    assert len(g.synthetic_curves()) == 2 + len(grid.SEQUENCE_RUNS) + 1  # ReCA, ESN, the paper's four, the user's
    assert "tiny_user_wade\\.TinyGRU" in g.wildcards()["model"]


def test_a_wrong_shape_stops_at_the_first_step_naming_the_key(qa):
    shapes = r"returned \(8, 16\); it must return logits of shape \(batch, length, vocabulary\) = \(8, 20, 16\)"
    with pytest.raises(ConfigError, match=r"wade.models.*" + shapes):
        sm.train(qa, "tiny_user_wade:WrongShape", 0, "default", epochs=1, max_steps=2)


def test_a_user_model_trains_as_the_rnn_and_writes_its_curve(qa, tmp_path):
    out = tmp_path / "curve.parquet"
    runs.run_sequence_model(qa, USER, "default", 1, str(out), "tiny", "cpu")
    frame, record = curves.read_curve(str(out))
    assert record["model"] == "tiny_user_wade.TinyGRU" and record["variant"] == "all"
    torch.manual_seed(0)
    from tiny_user_wade import TinyGRU
    assert record["config"]["parameters"] == sum(p.numel() for p in TinyGRU(len(qa.vocabulary)).parameters())
    accuracy = frame[frame["metric"] == "accuracy"]["value"].to_numpy()
    assert len(accuracy) == int(qa.train.sum()) // sm.BATCH and np.all((accuracy >= 0) & (accuracy <= 1))
    # the evaluation of a model without `predict` (every position's logits, read at the scored items) is the same as
    # the built-in models' bucketed `predict`
    torch.manual_seed(1)
    user, rnn = TinyGRU(len(qa.vocabulary)), sm.build("rnn", len(qa.vocabulary), "default")
    test = sm.TestSet(qa, "cpu")
    for net in (user, rnn):
        with torch.no_grad():
            hits = [net(torch.tensor(qa.tokens[i])[None])[0, qa.masks[i] - 1].argmax(-1).numpy()
                    == qa.tokens[i][qa.masks[i]] for i in np.flatnonzero(~qa.train)]
        alone = np.mean(np.concatenate(hits))
        assert float(sm.accuracy(net, test)) == pytest.approx(alone, abs=1e-12)


def test_tables_and_figure_show_the_user_model_after_the_papers(qa, tmp_path):
    rows = []
    for model, config in [("rnn", "default"), ("tiny_user_wade.TinyGRU", "default")]:
        for seed, value in ((1, 0.5), (2, 0.7)):
            for variant in ("faithful", "corrected"):
                rows.append({"task": 5, "task_name": "qa", "model": model, "config": config, "seed": seed,
                             "variant": variant, "wade": value, "max_accuracy": value, "final_accuracy": value,
                             "scale": "tiny"})
    frame = pd.DataFrame(rows)
    written = render.table4(frame, str(tmp_path / "t4"), "tiny")
    text = open([w for w in written if w.endswith(".md")][0]).read()
    header = next(line for line in text.splitlines() if line.startswith("| Task"))
    assert header.split("|")[-3].strip() == "TinyGRU (yours)" and "0.60 ± 0.10" in text  # mean, population std
    assert summary.model_order(frame["model"])[-1] == "tiny_user_wade.TinyGRU"
    written = render.table6({5: qa}, str(tmp_path / "t6"), "tiny", [USER])
    text = open([w for w in written if w.endswith(".md")][0]).read()
    torch.manual_seed(0)
    from tiny_user_wade import TinyGRU
    assert "TinyGRU (yours): actual" in text and f"{sum(p.numel() for p in TinyGRU(16).parameters()):,}" in text


def toy_reviews(n, seed):
    """Reviews of 3-9 tokens over a vocabulary of 20, labelled by whether token 1 occurs more often than token 2."""
    rng = np.random.default_rng(seed)
    seqs = [rng.integers(1, 20, rng.integers(3, 10)) for _ in range(n)]
    return seqs, np.array([int((s == 1).sum() > (s == 2).sum()) for s in seqs])


def test_a_user_classifier_trains_on_imdb_as_the_papers_and_a_wrong_shape_stops():
    (train_x, train_y), (test_x, test_y) = toy_reviews(48, 0), toy_reviews(16, 1)
    seen, acc = imdb_models.train("tiny_user_wade:TinyClassifier", 20, train_x, train_y, test_x, test_y, seed=0,
                                  epochs=2, eval_every_examples=16)
    assert list(seen) == [8, 24, 40, 56, 72, 88] and np.all((acc >= 0) & (acc <= 1))  # batches starting at 0, 16, 32
    again = imdb_models.train("tiny_user_wade:TinyClassifier", 20, train_x, train_y, test_x, test_y, seed=0,
                              epochs=2, eval_every_examples=16)
    np.testing.assert_array_equal(again[1], acc)  # seeded
    with pytest.raises(ConfigError, match=r"wade.imdb.models.*returned \(8, 1\).*\(batch, 2\)"):
        imdb_models.train("tiny_user_wade:OneLogit", 20, train_x, train_y, test_x, test_y, seed=0, epochs=1,
                          eval_every_examples=16)
    g = grid.Grid(section([]) | {"imdb": {"models": ["lstm", "tiny_user_wade:TinyClassifier"], "seeds": 1,
                                          "source": "synthetic"}})
    g.check()
    assert g.imdb_curves()[-1].endswith("experiment=imdb/model=tiny_user_wade.TinyClassifier/seed=0.parquet")


def test_table2_shows_the_user_classifier_after_the_papers(tmp_path):
    rows = [{"model": m, "seed": s, "variant": v, "wade_x100": 1.0 + s, "max_accuracy": 0.5, "synthetic": True,
             "scale": "tiny"} for m in ("lstm", "tiny_user_wade.TinyClassifier") for s in (0, 1)
            for v in ("faithful", "corrected")]
    written = render.table2(pd.DataFrame(rows), str(tmp_path / "t2"))
    lines = open([w for w in written if w.endswith(".md")][0]).read().splitlines()
    assert lines[2].startswith("| LSTM | both |") and lines[3] == "| TinyClassifier (yours) | both | 1.500 ± 0.500 | " \
        "0.500 ± 0.000 | 2 |"
