"""The human game, driven by scripted answers, and its scoring (paper, Appendix A)."""

import io
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
