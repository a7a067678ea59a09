"""The CALM stream: fragment lengths, class order, slicing into streams and batches, resume, errors."""

import random

import numpy as np
import pytest
import torch
from scipy.stats import truncexpon

from reprobench.calm.stream import Batch, CorpusTooShortError, Stream, class_order, fragment_lengths, make_stream
from reprobench.core.errors import ReprobenchError

LANGS = ["news.test.cs", "news.test.de", "news.test.en", "news.test.es", "news.test.fr"]
DOMAINS = ["bnc.test", "europarl.test", "news.test", "wiki.test"]


def small_stream(seed=1, classes=("b", "a"), **kw):
    """Two classes given unsorted, 3 fragments each, s = 60 / (4 * 3) = 5 chunks of 4 rows, 2 batches a chunk."""
    args = dict(lam=60, seed=seed, n_fragments=6, b=3, window=4, bptt=2) | kw
    return Stream(list(classes), **args)


def arange_tokens(stream, extra=0):
    """Class c's token at position p is 1_000_000 * (c + 1) + p, so every position can be checked."""
    return {c: 1_000_000 * (i + 1) + np.arange(n + extra) for i, (c, n) in
            enumerate(sorted(stream.tokens_needed().items()))}


def test_lengths_are_the_codes_draws_from_the_seeded_global_numpy_generator():
    # lam = 10k, window 100, b 10: s = 10 chunks, so truncexpon(b=100, loc=1, scale=10); 5 per class
    stream = Stream(["y", "x"], lam=10_000, seed=3, n_fragments=10)
    state = np.random.get_state()
    try:
        np.random.seed(3)  # the reference: np.random.seed(seed), then scipy's rvs on the global generator
        x, y = (truncexpon(b=100, loc=1, scale=10).rvs(5) for _ in range(2))  # class by class, sorted order
    finally:
        np.random.set_state(state)
    assert stream.lengths["x"].tolist() == np.maximum(1, np.rint(x)).astype(int).tolist()
    assert stream.lengths["y"].tolist() == np.maximum(1, np.rint(y)).astype(int).tolist()
    assert stream.lengths["x"].dtype == np.int64


def test_fragment_length_statistics_match_the_spec_table():
    # news 10k, window 100, b 10: mean about 1.1 lam = 11k tokens, minimum 0.1 lam = 1k (one chunk)
    tokens = np.concatenate([Stream(DOMAINS, 10_000, seed).lengths[c] * 1000 for seed in range(40)
                             for c in DOMAINS])
    assert len(tokens) == 40 * 4 * 25
    assert abs(tokens.mean() / 11_000 - 1) < 0.05
    assert tokens.min() == 1000
    # news 100k: s = 100 chunks, loc 10 chunks; the minimum over 4000 draws is 0.1 lam to the chunk
    tokens = np.concatenate([Stream(DOMAINS, 100_000, seed).lengths[c] * 1000 for seed in range(40)
                             for c in DOMAINS])
    assert tokens.min() == 10_000
    assert abs(tokens.mean() / 110_000 - 1) < 0.05


def test_every_fragment_is_whole_windows_and_whole_batches():
    stream = Stream(LANGS, 10_000, seed=0)
    assert len(stream.fragments) == 100
    for f in stream.fragments:
        assert f.rows % 100 == 0 and f.rows == 100 * stream.lengths[f.class_name][f.occurrence]
        assert f.n_batches == f.rows // 20  # 5 batches of 20 rows per 100-row chunk
    assert len(stream) == sum(f.n_batches for f in stream.fragments) == 5 * sum(int(v.sum()) for v in
                                                                             stream.lengths.values())


@pytest.mark.parametrize("classes", [LANGS, DOMAINS])
def test_order_has_the_counts_and_no_consecutive_repeats(classes):
    for seed in range(10):
        order = Stream(classes, 10_000, seed).order
        assert len(order) == 100
        assert np.bincount(order).tolist() == [100 // len(classes)] * len(classes)
        assert all(a != b for a, b in zip(order[:-1], order[1:]))


def test_uneven_split_drops_the_remainder():
    stream = Stream(["a", "b", "c"], 10_000, seed=0)  # 100 // 3 = 33 per class, 99 fragments
    assert stream.n_fragments == 99 and np.bincount(stream.order).tolist() == [33, 33, 33]


class ScriptedRandom:
    """A random.Random stand-in: shuffle puts a scripted order in place (or leaves the list alone), randint returns
    scripted values."""

    def __init__(self, values, order=None):
        self.values, self.calls, self.order = list(values), [], order

    def shuffle(self, x):
        if self.order is not None:
            x[:] = self.order

    def randint(self, a, b):
        self.calls.append((a, b))
        return self.values.pop(0)


def test_order_repair_swaps_with_the_originals_run_length():
    # lifelonglm data.py's run length is one too long unless the run ends the list, and the swapped element is
    # start + length // 2 (DEVIATIONS C6). Worked by hand:
    # [0,0,0,1,1]: run at 0, length 3 + 1 = 4, swap 0 + 2 = 2 with 4 -> [0,0,1,1,0]
    # run at 0, length 2 + 1 = 3, swap 1 with 3 -> [0,1,1,0,0]; run at 1, length 3, swap 2 with 4 -> [0,1,0,0,1]
    # run at 2, length 3, swap 3 with 4 -> [0,1,0,1,0]: no run left, no further draw
    rng = ScriptedRandom([4, 3, 4, 4])
    assert class_order([3, 2], rng) == [0, 1, 0, 1, 0]
    assert rng.calls == [(0, 4)] * 4  # uniform over every position
    # (the true length would swap the middle, position 1, with 4: [0,1,0,1,0] after one draw)
    # a run that ends the list keeps its true length: [0,1,0,1,2,2,2], run at 4, length 3, swap 5 with 1
    rng = ScriptedRandom([1], order=[0, 1, 0, 1, 2, 2, 2])
    assert class_order([2, 2, 3], rng) == [0, 2, 0, 1, 2, 1, 2] and rng.calls == [(0, 6)]
    # [0, 0, 1]: run at 0, length 2 + 1 = 3, swap 1 with 2; no run left
    rng = ScriptedRandom([2])
    assert class_order([2, 1], rng) == [0, 1, 0] and rng.calls == [(0, 2)]
    # a swap with itself keeps the run: the repair draws again
    rng = ScriptedRandom([1, 2])
    assert class_order([2, 1], rng) == [0, 1, 0] and rng.calls == [(0, 2), (0, 2)]


# The class orders lifelonglm's RandomAlternationIterator (data.py at 576f864) gave after random.seed(seed), run
# here for this test: 5 languages x 20 and 4 domains x 25 fragments.
ORIGINAL_ORDERS = {
    (5, 0): "1040431312021201343403401430310124341420403204342324314241312402140320301210102313402012320123143242",
    (5, 1): "1302012324214243104104013130141413213204234143430204030212431304130212420342010240323030124324210431",
    (4, 0): "0313031320321032101020201013210121013101303201202123231031232103121232102130303203210323032023012321",
    (4, 2): "1201310102101032120131303231032130102021032120230303213201201313120321232012302323013010312303232120",
}


@pytest.mark.parametrize("n_classes,seed", sorted(ORIGINAL_ORDERS))
def test_class_order_is_the_originals(n_classes, seed):
    names = LANGS if n_classes == 5 else ["d0", "d1", "d2", "d3"]
    order = Stream(names, 10_000, seed).order
    assert "".join(map(str, order)) == ORIGINAL_ORDERS[n_classes, seed]


def test_order_uses_python_random_seeded_with_the_seed():
    order = class_order([20] * 5, random.Random(7))
    assert Stream(LANGS, 10_000, seed=7).order == tuple(order)


def test_order_repair_gives_up_with_a_warning():
    with pytest.warns(UserWarning, match="consecutive repeats"):
        assert class_order([3], random.Random(0)) == [0, 0, 0]  # one class: no order without repeats


def test_same_seed_same_stream_other_seed_another():
    a, b, c = small_stream(seed=5), small_stream(seed=5), small_stream(seed=6)
    assert a.order == b.order and all(np.array_equal(a.lengths[k], b.lengths[k]) for k in a.lengths)
    xa, xb = list(a.attach(arange_tokens(a))), list(b.attach(arange_tokens(b)))
    assert all(torch.equal(p.x, q.x) and torch.equal(p.y, q.y) for p, q in zip(xa, xb)) and len(xa) == len(xb)
    big = [Stream(LANGS, 10_000, seed) for seed in (5, 6)]
    assert big[0].order != big[1].order
    assert not np.array_equal(big[0].lengths["news.test.en"], big[1].lengths["news.test.en"])
    assert a.tokens_needed() != c.tokens_needed() or a.order != c.order


def test_classes_are_sorted_names_and_tokens_needed_is_the_formula():
    stream = small_stream()
    assert stream.class_names == ("a", "b")
    for c in ("a", "b"):
        chunks = int(stream.lengths[c].sum())
        assert stream.tokens_needed()[c] == (chunks * 4 + 1) * 3  # (T_c window + 1) b
    lam10k = Stream(DOMAINS, 10_000, seed=0)
    assert lam10k.tokens_needed()["wiki.test"] == (int(lam10k.lengths["wiki.test"].sum()) * 100 + 1) * 10


def test_slicing_streams_fragments_and_batches():
    stream = small_stream()
    stream.attach(arange_tokens(stream, extra=7))  # longer arrays: only the first tokens_needed count
    batches = list(stream)
    assert len(batches) == len(stream) == 2 * sum(int(v.sum()) for v in stream.lengths.values())
    seen_in_fragment, last_x = {}, {}
    for i, batch in enumerate(batches):
        assert isinstance(batch, Batch) and batch.index == i
        assert batch.x.dtype == batch.y.dtype == torch.int64 and batch.x.shape == batch.y.shape == (2, 3)
        assert torch.equal(batch.y, batch.x + 1)  # the target is the next token of the same stream
        frag = stream.fragments[batch.fragment]
        assert (batch.class_id, batch.class_name) == (frag.class_id, "ab"[frag.class_id])
        m = seen_in_fragment.get(batch.fragment, 0)
        seen_in_fragment[batch.fragment] = m + 1
        assert batch.first_of_fragment == (m == 0)
        lengths = stream.lengths[batch.class_name]
        stream_len = int(lengths.sum()) * 4 + 1  # tokens per stream of this class
        start = 4 * int(lengths[:frag.occurrence].sum())  # rows before this fragment of the class
        offset = 1_000_000 * (batch.class_id + 1)
        expected = [[offset + j * stream_len + start + 2 * m + r for j in range(3)] for r in range(2)]
        assert batch.x.tolist() == expected
        if batch.class_name in last_x:  # the class's text goes on where its previous batch stopped
            assert torch.equal(batch.x[0], last_x[batch.class_name][-1] + 1)
        last_x[batch.class_name] = batch.x
    assert sorted(seen_in_fragment) == list(range(6))
    assert all(seen_in_fragment[f.index] == f.n_batches == 2 * stream.lengths[f.class_name][f.occurrence]
               for f in stream.fragments)
    fragment, class_id = stream.batch_labels()
    assert fragment.tolist() == [b.fragment for b in batches] and class_id.tolist() == [b.class_id for b in batches]


def test_the_last_batch_of_a_class_ends_on_its_last_needed_token():
    stream = small_stream()
    stream.attach(arange_tokens(stream))
    last = [b for b in stream if b.class_name == "b"][-1]
    needed = stream.tokens_needed()["b"]
    assert int(last.y[-1, -1]) == 2_000_000 + needed - 1


def test_calm_library_alignment_window_equals_bptt():
    stream = small_stream(window=2, bptt=2, lam=30)  # s = 30 / (2 * 3) = 5 chunks of 2 rows, 1 batch a chunk
    assert all(f.n_batches == stream.lengths[f.class_name][f.occurrence] for f in stream.fragments)


def test_resume_yields_the_tail_of_a_full_pass():
    stream = make_stream(arange_tokens(small_stream()), lam=60, seed=1, n_fragments=6, b=3, window=4, bptt=2)
    full = list(stream)
    second = stream.fragments[1].first_batch
    for start in (0, 1, second, second + 1, len(full) - 1, len(full)):
        tail = list(stream.iter_from(start))
        assert len(tail) == len(full) - start
        assert all(torch.equal(p.x, q.x) and torch.equal(p.y, q.y) and p.index == q.index and
                   p.first_of_fragment == q.first_of_fragment for p, q in zip(tail, full[start:]))
    with pytest.raises(ValueError, match="batch_index"):
        stream.iter_from(len(full) + 1)


def test_a_corpus_too_short_names_the_class_and_the_counts():
    stream = small_stream()
    tokens = arange_tokens(stream)
    needed = stream.tokens_needed()["b"]
    tokens["b"] = tokens["b"][:-1]
    with pytest.raises(CorpusTooShortError, match=rf"class 'b': {needed} tokens needed, {needed - 1} given") as err:
        stream.attach(tokens)
    assert isinstance(err.value, ReprobenchError) and "cannot hold" in str(err.value)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="window=100 must be a multiple of bptt=30"):
        Stream(LANGS, 10_000, 0, bptt=30)
    with pytest.raises(ValueError, match="n_fragments=4"):
        Stream(LANGS, 10_000, 0, n_fragments=4)
    with pytest.raises(ValueError, match="lam"):
        Stream(LANGS, 0, 0)
    with pytest.raises(ValueError, match="seed"):
        Stream(LANGS, 10_000, -1)
    with pytest.raises(ValueError, match="classes"):
        Stream(["a", "a"], 10_000, 0)
    stream = small_stream()
    with pytest.raises(ReprobenchError, match="attach"):
        next(iter(stream))
    with pytest.raises(ValueError, match="missing \\['b'\\]"):
        stream.attach({"a": np.arange(10**4)})
    with pytest.raises(ValueError, match="integer"):
        stream.attach({c: np.zeros(10**4) for c in "ab"})


@pytest.mark.parametrize("lam", [200, 1_000, 10_000, 20_000, 100_000])
def test_fragment_lengths_are_scipys_truncexpon_bit_for_bit(lam):
    """fragment_lengths writes out scipy's truncexpon.rvs (to spare each job importing scipy.stats): the draws,
    before rounding, are the library's own for 200 seeds and the settings the grids use."""
    for seed in range(200):
        for window, b in ((20, 10), (100, 10)):
            s = lam / window / b
            want = truncexpon(b=10 * s, loc=0.1 * s, scale=s).rvs(25, random_state=np.random.RandomState(seed))
            got = fragment_lengths(25, lam, window, b, np.random.RandomState(seed))
            assert np.array_equal(got, np.maximum(1, np.rint(want)).astype(np.int64))
