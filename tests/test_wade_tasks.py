"""Task statistics against specs/wade.md 1.1 (incremental-tasks 0.1.2, the paper's seed 12305)."""

import numpy as np
import pytest

from reprobench.core.errors import ConfigError
from reprobench.wade import tasks

# id: (V, unique sequences, train, test, min length, mean length, max length, items per sequence mean)
SPEC = {
    1: (2, 52, 41, 11, 100, 100.0, 100, 90.2),
    2: (2, 1200, 960, 240, 100, 100.0, 100, 70.8),
    3: (15, 1200, 960, 240, 5, 13.2, 20, 2.05),
    4: (18, 1200, 960, 240, 6, 53.2, 152, 5.87),
    5: (16, 1200, 960, 240, 10, 16.8, 20, 1.0),
    6: (25, 1200, 960, 240, 10, 22.0, 32, 1.0),
    7: (29, 1200, 960, 240, 10, 28.4, 64, 1.0),
    8: (45, 1200, 960, 240, 10, 29.5, 60, 1.0),
    9: (38, 1200, 960, 240, 12, 31.7, 63, 1.0),
    10: (51, 1200, 960, 240, 12, 44.5, 104, 2.48),
}


@pytest.mark.parametrize("task_id", sorted(SPEC))
def test_statistics_for_the_papers_seed(task_id):
    v, n, n_train, n_test, lo, mean, hi, items = SPEC[task_id]
    d = tasks.generate(task_id, 12305, tasks.PAPER_MAX_SEQUENCES)
    lengths = np.array([len(t) for t in d.tokens])
    assert len(d.vocabulary) == v and len(d.tokens) == n
    assert (d.train.sum(), (~d.train).sum()) == (n_train, n_test)
    assert (lengths.min(), round(lengths.mean(), 1), lengths.max()) == (lo, mean, hi)
    assert round(d.n_items.mean(), 2 if items < 10 else 1) == pytest.approx(items, abs=0.01)
    assert len({tuple(t) for t in d.tokens}) == n  # unique sequences
    assert all(m.max() < len(t) and m.min() >= 1 for t, m in zip(d.tokens, d.masks))


def test_same_seed_same_data_and_round_trip(tmp_path):
    a, b = tasks.generate(5, 3, tasks.PAPER_MAX_SEQUENCES), tasks.generate(5, 3, tasks.PAPER_MAX_SEQUENCES)
    assert all(np.array_equal(x, y) for x, y in zip(a.tokens, b.tokens)) and np.array_equal(a.train, b.train)
    path = tmp_path / "task=5/seed=3.parquet"
    tasks.write(a, str(path), "small")
    c = tasks.read(str(path))
    assert c.vocabulary == a.vocabulary and np.array_equal(c.train, a.train)
    assert all(np.array_equal(x, y) for x, y in zip(a.masks, c.masks))


def test_unknown_task_is_named():
    with pytest.raises(ConfigError, match="unknown task id 11"):
        tasks.task_spec(11)
