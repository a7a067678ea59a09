"""The human game, driven by scripted answers, and its scoring (paper, Appendix A)."""

import io
import re
import subprocess
import sys

import pytest

from reprobench.wade import human, tasks


def test_scoring_credits_a_run_to_its_first_answer():
    assert human.human_wade([True] * 5) == pytest.approx(1.0)  # perfect from the start
    # wrong, wrong, then five right: every level first reached at question 3
    assert human.human_wade([False, False] + [True] * 5) == pytest.approx(1 / 3)
    # right, wrong, then five right: 0.2 reached at question 1, the rest at 3
    expected = (0.2 / 1 + (0.4 + 0.6 + 0.8 + 1.0) / 3) / 3.0
    assert human.human_wade([True, False] + [True] * 5) == pytest.approx(expected)
    assert human.streak_curve([True, True, False, True], 5).tolist() == [0.4, 0.2, 0.0, 0.2]


def test_game_with_scripted_answers(tmp_path):
    d = tasks.generate(5, 12305, tasks.PAPER_MAX_SEQUENCES)  # Basic QA: one hidden answer per sequence
    rng_seed = 3
    import numpy as np

    symbols = human.letter_map(d.vocabulary, np.random.RandomState(rng_seed))
    order = np.random.RandomState(rng_seed)
    order.choice(list(human.LETTERS), size=len(d.vocabulary), replace=False)
    sequence_order = order.permutation(np.flatnonzero(d.train))
    truth = [symbols[int(d.tokens[i][d.masks[i][0]])] for i in sequence_order]
    script = io.StringIO("".join(["#\n", "#\n"] + [t + "\n" for t in truth[2:7]]))
    shown = io.StringIO()
    answers = human.play(d, rng_seed, streak=5, stdin=script, stdout=shown)
    assert answers == [False, False, True, True, True, True, True]
    assert "wrong: it was" in shown.getvalue() and "full sequence:" in shown.getvalue()
    assert "PETER" not in shown.getvalue() and "YES" not in shown.getvalue()  # tokens are obfuscated


def test_cli_session_file_and_early_end(tmp_path):
    out = tmp_path / "session.parquet"
    proc = subprocess.run([sys.executable, "-m", "reprobench", "wade", "human", "--task", "1", "--seed", "1",
                           "--out", str(out)], input="x\nx\n", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    task, score = human.session_wade(str(out))
    assert task == 1 and score == 0.0  # two wrong answers, then the input ended


def test_human_sessions_are_checked_when_the_config_is_loaded(tmp_path):
    """A missing file, or a curve file of another benchmark given as a session, stops at load naming it."""
    import yaml

    from conftest import ROOT
    from reprobench import benchmarks
    from reprobench.core import curves
    from reprobench.core.errors import ConfigError

    section = yaml.safe_load((ROOT / "config.yaml").read_text())["wade"]
    foreign = tmp_path / "arith-seed=0.parquet"
    curves.write_curve({"seed": [0], "step": [0], "split": ["test"], "metric": ["mse"], "value": [1.0]}, foreign,
                       curves.provenance(paper="madsen2019-arith", experiment="operations", model="nalu", setting={},
                                         seed=0, scale="small", variant="all", config={}, device="cpu", wall_time_s=0,
                                         start="", end=""))
    for path, words in ((tmp_path / "nothere.parquet", "nothere.parquet: does not exist"),
                        (foreign, "arith-seed=0.parquet is not a WADE human session (it is a 'operations' file of "
                                  "madsen2019-arith)")):
        with pytest.raises(ConfigError, match=re.escape("config key 'wade.human_sessions': ") + ".*" +
                           re.escape(words)):
            benchmarks.grid("wade", {**section, "human_sessions": [str(path)]})
