"""The human protocol (paper, Appendix A; specs/wade.md 2.1 item 9): a terminal game on an obfuscated task.

Every token of the task is mapped to a random letter, so prior knowledge of the words does not help. Sequences
come one by one with the supervised tokens hidden; the player types each hidden letter; after each answer the
true letter is shown, and after the sequence the whole sequence. A task ends after `streak` correct answers in a
row (the paper's text: 10, the command's default; the reference game that produced the published scores: 5).
A sequence with more than `streak + 1` supervised tokens is cut before its (streak + 1)-th one, as the reference
game did.

Scoring (paper): k correct answers in a row give accuracy k / streak, credited to the first answer of the series,
so answering everything right from the start gives WADE 1. With a[q] = min(length of the run of correct answers
starting at question q, streak) / streak, T(alpha) is the first question with a[q] >= alpha.
"""

from __future__ import annotations

import string
import sys
import time

import numpy as np

from reprobench.wade import metric
from reprobench.wade.tasks import Dataset

LETTERS = string.ascii_letters  # 52 symbols: enough for the largest vocabulary (51)


def letter_map(vocabulary: list[str], rng: np.random.RandomState) -> dict[int, str]:
    letters = rng.choice(list(LETTERS), size=len(vocabulary), replace=False)
    return {i: str(letter) for i, letter in enumerate(letters)}


def streak_curve(correct: list[bool], streak: int) -> np.ndarray:
    """a[q]: the run of correct answers starting at q (capped at `streak`), divided by `streak`."""
    out = np.zeros(len(correct))
    run = 0
    for q in range(len(correct) - 1, -1, -1):
        run = run + 1 if correct[q] else 0
        out[q] = min(run, streak) / streak
    return out


def human_wade(correct: list[bool], streak: int = 5) -> float:
    a = np.arange(1, streak + 1) / streak
    return metric.wade(streak_curve(correct, streak), metric.Convention(a, a.copy(), strict=False))


def play(dataset: Dataset, seed: int, streak: int = 5, max_questions: int = 500, stdin=None, stdout=None) -> list[bool]:
    """Run the game on `dataset` (its training sequences in a seeded order); returns the answers' correctness."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    rng = np.random.RandomState(seed)
    symbols = letter_map(dataset.vocabulary, rng)
    order = rng.permutation(np.flatnonzero(dataset.train))
    answers: list[bool] = []
    run = 0
    print(f"Each symbol stands for a token of the task. Type the hidden symbol ('?') and press Enter. "
          f"The task ends after {streak} correct answers in a row.", file=stdout, flush=True)
    for n, i in enumerate(order):
        tokens, mask = dataset.tokens[i], list(dataset.masks[i])
        if len(mask) > streak + 1:  # the reference game cut long sequences before their (streak+1)-th question
            tokens, mask = tokens[: mask[streak]], mask[:streak]
        shown = [symbols[int(t)] for t in tokens]
        for position in mask:
            prompt = " ".join(shown[:position]) + " ?"
            print(f"\n[sequence {n + 1}, streak {run}/{streak}] {prompt}", file=stdout, flush=True)
            reply = stdin.readline()
            if reply == "":
                print("\nInput ended; the session is saved as it is.", file=stdout)
                return answers
            ok = reply.strip() == shown[position]
            answers.append(ok)
            run = run + 1 if ok else 0
            print("right" if ok else f"wrong: it was {shown[position]}", file=stdout, flush=True)
            if run >= streak or len(answers) >= max_questions:
                print(f"\nDone: {run} in a row after {len(answers)} answers. WADE {human_wade(answers, streak):.3f}",
                      file=stdout, flush=True)
                return answers
        print("full sequence: " + " ".join(shown), file=stdout, flush=True)
    return answers


def run_session(dataset: Dataset, seed: int, streak: int, out: str, stdin=None, stdout=None) -> float:
    from reprobench.core import curves
    from reprobench.core.provenance import now
    from reprobench.wade import PAPER
    from reprobench.wade.tasks import task_spec

    start, t0 = now(), time.monotonic()
    answers = play(dataset, seed, streak, stdin=stdin, stdout=stdout)
    spec = task_spec(dataset.task_id)
    record = curves.provenance(
        paper=PAPER.id, experiment="human", model="human", seed=seed, scale="human", variant="all",
        setting={"task": spec.id, "task_name": spec.name, "streak": streak, "data_seed": dataset.seed},
        config={"streak": streak}, device="human", wall_time_s=round(time.monotonic() - t0, 1), start=start,
        end=now())
    rows = curves.series_rows(seed, [("test", "correct", answers), ("test", "streak_accuracy",
                                                                     streak_curve(answers, streak))])
    curves.write_curve(rows, out, record)
    return human_wade(answers, streak)


def session_wade(path: str) -> tuple[int, float]:
    """(task, WADE) of a recorded session file."""
    from reprobench.core import curves

    frame, record = curves.read_curve(path)
    correct = frame[frame["metric"] == "correct"].sort_values("step")["value"].astype(bool).tolist()
    return int(record["setting"]["task"]), human_wade(correct, int(record["setting"]["streak"]))
