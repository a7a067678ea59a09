"""The training steps make no call that would make the host wait for a GPU (HostSyncs' CPU counter), and the
layout that made them so changes no result."""

import numpy as np
import pytest
import torch

from reprobench.core.hostsync import HostSyncs
from reprobench.wade import readout, reca, reservoir, tasks
from reprobench.wade import sequence_models as sm


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny tensors: threads only add waits on a shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def qa():
    full = tasks.generate(5, 12305, 200)
    return tasks.Dataset(5, 12305, full.vocabulary, full.tokens[:60], full.masks[:60], full.train[:60])


def test_a_reservoir_chunk_makes_no_host_sync(qa):
    """As on a GPU: the readout scores every test item (`unique` test rows are found on the CPU only)."""
    for model, rules in (("reca", [30, 90, 206]), ("esn", None)):
        train, test, classes, chunks = reservoir.prepare(qa, model, 7, rules, 3)
        fn = chunks[0][1]()
        reservoir.chunk_curves(train, test, classes, fn, unique=False)
        with HostSyncs() as syncs:
            reservoir.chunk_curves(train, test, classes, fn, unique=False)
        assert syncs.count == 0, syncs.points


def test_scoring_unique_test_rows_changes_no_curve(qa):
    """Rule 0 maps every state to zeros (one distinct feature vector), rule 30 keeps them apart."""
    train, test, classes, chunks = reservoir.prepare(qa, "reca", 7, [0, 30, 90], 3)
    fn = chunks[0][1]()
    assert len(torch.unique(test.features(fn)[0], dim=0)) == 1
    assert torch.equal(reservoir.chunk_curves(train, test, classes, fn, unique=True),
                       reservoir.chunk_curves(train, test, classes, fn, unique=False))


def test_a_reservoir_run_waits_once_per_chunk_for_its_curves(qa):
    with HostSyncs() as syncs:
        reservoir.run(qa, "reca", 7, rules=[30, 90, 206], rules_per_chunk=2, unique=False)
    assert syncs.count == 2 and all(p.startswith("reprobench/wade/reservoir.py:") and p.endswith(" run (cpu)")
                                    for p in syncs.points), syncs.points


@pytest.mark.parametrize("model, config", sm.SEQUENCE_RUNS)
def test_a_sequence_model_step_makes_no_host_sync(qa, model, config):
    """The batch is sliced on the device, the test accuracy stays there (Adam's reads of its step counts, kept on the
    host whatever the device, are not syncs: HostSyncs leaves torch.optim's reads out)."""
    run = sm.Training(qa, model, 0, config, epochs=2)
    run.step(0)
    with HostSyncs() as syncs:
        run.step(1), run.step(2)
    assert syncs.count == 0, syncs.points


def test_items_equal_each_sequence_through_the_reservoir_alone(qa):
    """The grouped layout (reservoir.Items) gives each item the features of its sequence run alone, in order."""
    projection = torch.tensor(reca.one_to_one_projection(len(qa.vocabulary), np.random.RandomState(3)))
    rules = torch.tensor([30, 110])

    def fn(tokens):
        return reca.features(tokens, projection, rules)

    for train in (True, False):
        x, y = reservoir.supervised_items(qa, fn, train, "cpu")
        split = np.flatnonzero(qa.train == train)
        alone = torch.cat([fn(torch.tensor(qa.tokens[i])[None])[:, 0, qa.masks[i] - 1] for i in split], 1)
        assert torch.equal(x, alone)
        assert torch.equal(y, torch.tensor(np.concatenate([qa.tokens[i][qa.masks[i]] for i in split])))
    permutation = np.random.RandomState(0).permutation(int(sum(len(qa.masks[i]) for i in np.flatnonzero(qa.train))))
    items = reservoir.Items.of(qa, True, "cpu", permutation)
    assert torch.equal(items.features(fn), reservoir.supervised_items(qa, fn, True, "cpu")[0][:, permutation])


def test_standardisation_a_few_models_at_a_time_is_bitwise_the_same():
    x = (torch.rand((5, 301, 40), generator=torch.Generator().manual_seed(0)) < 0.3).to(torch.uint8)
    whole = readout.standardisation(x)
    for per_call in (1, 2):
        pieces = readout.standardisation(x, max_elements=per_call * 301 * 40)
        assert all(torch.equal(a, b) for a, b in zip(whole, pieces))


def test_a_run_trains_in_float64(qa):
    """The GPU check compares float64 steps with the CPU's: every model builds and steps in float64."""
    for model, config in sm.SEQUENCE_RUNS:
        run = sm.Training(qa, model, 0, config, epochs=1, dtype=torch.float64)
        loss = run.step(0)
        assert loss.dtype == torch.float64 and all(p.dtype == torch.float64 for p in run.net.parameters())
        assert 0 <= float(run.curve[0]) <= 1
