"""The CALM online stream as a library: fragments of alternating classes (languages or domains), cut into
(bptt, b) batches, to drop into a researcher's own PyTorch loop (specs/calm.md sections 1.7-1.10, D1-D3, D6, D7).

    stream = Stream(["news.test.cs", "news.test.de", ...], lam=10_000, seed=0)
    need = stream.tokens_needed()             # {class: tokens to read from the start of its file}
    stream.attach({c: read_tokens(c, need[c]) for c in need})
    for batch in stream:                      # or stream.iter_from(i) to resume exactly after batch i - 1
        loss = score_then_train(batch.x, batch.y)

What the reference code does, and this module reproduces:

- Fragment lengths (section 1.8, D1), in chunks of `window` tokens per stream: with s = lam / (window * b),
  lengths = max(1, rint(truncexpon(b=10 s, loc=0.1 s, scale=s))), n_c per class, drawn class by class in class
  order from one numpy RandomState(seed). The reference drew from the global numpy generator right after
  np.random.seed(seed), with nothing drawing from numpy before, so the draws are the same. Mean about 1.1 lam
  tokens, minimum 0.1 lam; the upper bound 0.1 lam + 10 lam^2 / (window b) is practically absent. The seed text
  says "lengths sampled from a (truncated) exponential distribution: T_i ~ Exp(lam)" with "expected fragment
  lengths of lam" and gives no bound. An exponential of mean lam truncated below at 0.1 lam is, being memoryless,
  exactly 0.1 lam + Exp(lam): the code's distribution. So the seed states no different distribution (only its
  mean, lam, is the untruncated one's), and there is no `lengths="paper"` variant: we keep the code's.
- N (D3): n_fragments = 100 in total (lifelonglm), n_c = n_fragments // n_classes per class (20 languages x 5,
  25 domains x 4). The CALM library's README used 100 per class; we do not.
- Order (section 1.9, D7): class i repeated n_c times (class order), shuffled with Python's random (a
  random.Random(seed), the same sequence as random.seed(seed) on the global one), then up to 1000 repairs: the
  first run of equal consecutive classes has its element start + len // 2 swapped with randint(0, N - 1), any
  position (lifelonglm data.py L293-295), where len is the original's: the run length + 1 unless the run ends the
  list (data.py L269-282), so a run of three swaps its last element. The class order is then the original's for
  every seed (checked against data.py on 500 seeds of 5 x 20, 4 x 25 and uneven counts).
- Streams (section 1.7): class c's first (T_c window + 1) b tokens, T_c = sum of its lengths, as b contiguous
  streams: stream j is tokens [j (T_c window + 1), (j + 1) (T_c window + 1)). Fragment k of class c is rows
  [window sum(L[:k]), window sum(L[:k+1])) of those streams, targets one row later; a class's fragments continue
  the same b text streams. Each fragment is cut into (bptt, b) batches.
- Alignment (D2): lifelonglm aligns fragments to window = 100 and trains on bptt = 20 (a fragment is a multiple
  of 5 batches, the default here); the CALM library used window = bptt = 20.
- Class order (D6) is sorted class names (the reference used unsorted glob order, which changes which draws go to
  which class); class ids index that order.

Unlike the CALM library's single-pass iterator, a Stream can be iterated many times and resumed at any batch.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from reprobench.core.errors import ReprobenchError

if TYPE_CHECKING:
    import torch

MAX_REPAIRS = 1000  # the reference's cap on order repairs
STREAMS = 10  # b, the streams read side by side (lifelonglm's --batch-size 10 in every command line)


class CorpusTooShortError(ReprobenchError):
    """A class's token array is shorter than its streams need: a lambda the stream cannot hold with that corpus."""

    def __init__(self, class_name: str, needed: int, given: int, lam: float):
        super().__init__(f"class '{class_name}': {needed} tokens needed, {given} given: lam={lam:g} is a lambda the "
                         "stream cannot hold with this corpus (give more tokens, a smaller lam or fewer fragments)")
        self.class_name, self.needed, self.given = class_name, needed, given


def fragment_lengths(n: int, lam: float, window: int, b: int, rng: np.random.RandomState) -> np.ndarray:
    """n fragment lengths in chunks of `window` tokens per stream (section 1.8), drawn from `rng`: the reference's
    scipy truncexpon(b=10 s, loc=0.1 s, scale=s).rvs(n, random_state=rng), written out as scipy computes it (one
    uniform per draw through its inverse CDF, -log1p(u expm1(-b)), then scaled and shifted; equal bit for bit,
    tests/test_calm_stream.py), because importing scipy.stats and freezing the distribution cost 0.4 s of each job."""
    from scipy.special import expm1, log1p

    s = lam / window / b  # mean length scale in chunks of window * b tokens
    draws = -log1p(rng.uniform(size=n) * expm1(-(10 * s))) * s + 0.1 * s
    return np.maximum(1, np.rint(draws)).astype(np.int64)


def class_order(counts: Iterable[int], rng: random.Random, max_repairs: int = MAX_REPAIRS) -> list[int]:
    """Class ids in fragment order, class i appearing counts[i] times, with consecutive repeats repaired as coded
    (section 1.9). Warns if repeats remain after max_repairs (never seen for 5 x 20 or 4 x 25)."""
    order = [i for i, n in enumerate(counts) for _ in range(n)]
    rng.shuffle(order)
    for _ in range(max_repairs):
        run = _first_run(order)
        if run is None:
            return order
        start, length = run
        mid, other = start + length // 2, rng.randint(0, len(order) - 1)
        order[mid], order[other] = order[other], order[mid]
    if _first_run(order) is not None:
        warnings.warn(f"class order still has consecutive repeats after {max_repairs} repairs", stacklevel=2)
    return order


def _first_run(order: list[int]) -> tuple[int, int] | None:
    """(start, length) of the first run of two or more equal consecutive elements, or None, with the original's
    length: lifelonglm data.py L269-282 (calm_aux.py L270) returns the run length + 1 when the run does not end the
    list, so class_order's `start + length // 2` swaps the last element of a run of three, not the middle one.
    Kept exactly: only with it is the class order the original's (DEVIATIONS C6)."""
    for i in range(len(order) - 1):
        if order[i] == order[i + 1]:
            end = i + 1
            while end < len(order) and order[end] == order[i]:
                end += 1
            return i, end - i + (end < len(order))
    return None


@dataclass(frozen=True)
class Fragment:
    """One fragment of the stream: the `occurrence`-th fragment of its class, rows [start_row, start_row + rows)
    of that class's streams, batches [first_batch, first_batch + n_batches) of the stream."""

    index: int
    class_id: int
    class_name: str
    occurrence: int
    start_row: int
    rows: int
    first_batch: int
    n_batches: int


@dataclass(frozen=True)
class Batch:
    """x, y: LongTensors of shape (bptt, b), y = x one token later in time. Everything else (fragment index,
    class, whether the batch opens a fragment, its index in the stream) is for evaluation and logging only: a
    learner must not use it (the benchmark is class-agnostic)."""

    x: torch.Tensor  # int64, (bptt, b)
    y: torch.Tensor
    fragment: int
    class_id: int
    class_name: str
    first_of_fragment: bool
    index: int


class Stream:
    """The CALM stream (see the module docstring). `classes` is either class names, to plan the stream and ask
    tokens_needed() before reading any corpus, or {class name: 1-D integer token ids}, which also attaches them.
    lam is the mean switch interval in tokens (all b streams together), n_fragments the total N.

    Attributes: class_names (sorted; class ids index it), lengths ({class: fragment lengths in chunks of window rows,
    in draw order}), order (class id of each fragment), fragments (Fragment records in stream order)."""

    def __init__(self, classes: Iterable[str] | Mapping[str, object], lam: float, seed: int, n_fragments: int = 100,
                 b: int = STREAMS, window: int = 100, bptt: int = 20):
        names = list(classes)
        if not names or len(set(names)) != len(names) or not all(isinstance(c, str) and c for c in names):
            raise ValueError(f"classes must be distinct non-empty names, got {names!r}")
        for key, value in dict(n_fragments=n_fragments, b=b, window=window, bptt=bptt).items():
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{key} must be a positive integer, got {value!r}")
        if window % bptt:
            raise ValueError(f"window={window} must be a multiple of bptt={bptt} (fragments are whole batches)")
        if isinstance(lam, bool) or not isinstance(lam, int | float | np.number) or not 0 < lam < np.inf:
            raise ValueError(f"lam must be a positive finite number of tokens, got {lam!r}")
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed < 2**32:
            raise ValueError(f"seed must be an integer in [0, 2**32) (numpy's RandomState), got {seed!r}")
        self.class_names = tuple(sorted(names))
        per_class = n_fragments // len(names)
        if per_class < 1:
            raise ValueError(f"n_fragments={n_fragments} gives no fragment per class for {len(names)} classes")
        self.lam, self.seed, self.b, self.window, self.bptt = float(lam), int(seed), int(b), int(window), int(bptt)

        draws = np.random.RandomState(self.seed)  # the reference's np.random.seed(seed); nothing drew before
        self.lengths = {c: fragment_lengths(per_class, lam, window, b, draws) for c in self.class_names}
        self.order = tuple(class_order([per_class] * len(names), random.Random(self.seed)))

        fragments, seen, rows_done, first_batch = [], [0] * len(names), dict.fromkeys(self.class_names, 0), 0
        batches_per_chunk = window // bptt
        for index, class_id in enumerate(self.order):
            name = self.class_names[class_id]
            length = int(self.lengths[name][seen[class_id]])
            fragments.append(Fragment(index, class_id, name, seen[class_id], rows_done[name], length * window,
                                      first_batch, length * batches_per_chunk))
            seen[class_id] += 1
            rows_done[name] += length * window
            first_batch += length * batches_per_chunk
        self.fragments = tuple(fragments)
        self._starts = np.array([f.first_batch for f in fragments], dtype=np.int64)
        self._n_batches = first_batch
        self._data: dict[str, torch.Tensor] | None = None
        if isinstance(classes, Mapping):
            self.attach(classes)

    @property
    def n_fragments(self) -> int:
        """Fragments actually in the stream: (n_fragments // n_classes) * n_classes."""
        return len(self.fragments)

    def tokens_needed(self) -> dict[str, int]:
        """Tokens each class's array must hold, from the start of its file: (T_c window + 1) b."""
        return {c: (int(self.lengths[c].sum()) * self.window + 1) * self.b for c in self.class_names}

    def attach(self, tokens: Mapping[str, object]) -> Stream:
        """Give every class its 1-D integer token ids (longer arrays are cut to tokens_needed()); returns self."""
        missing, extra = set(self.class_names) - set(tokens), set(tokens) - set(self.class_names)
        if missing or extra:
            raise ValueError(f"tokens must have exactly the classes {list(self.class_names)}; missing "
                             f"{sorted(missing)}, unexpected {sorted(extra)}")
        import torch

        data = {}
        for name, needed in self.tokens_needed().items():
            ids = np.asarray(tokens[name])
            if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
                raise ValueError(f"tokens['{name}'] must be a 1-D integer array, got dtype {ids.dtype}, "
                                 f"shape {ids.shape}")
            if len(ids) < needed:
                raise CorpusTooShortError(name, needed, len(ids), self.lam)
            # b contiguous streams as columns: row t holds token t of every stream
            streams = ids[:needed].reshape(self.b, needed // self.b).T
            data[name] = torch.from_numpy(np.ascontiguousarray(streams, dtype=np.int64))
        self._data = data
        return self

    def __len__(self) -> int:
        """Number of (bptt, b) batches in the stream."""
        return self._n_batches

    def __iter__(self) -> Iterator[Batch]:
        return self.iter_from(0)

    def iter_from(self, batch_index: int) -> Iterator[Batch]:
        """The batches from `batch_index` (0-based) on: the same batches as the tail of a full pass, for an exact
        resume after a kill."""
        if self._data is None:
            raise ReprobenchError("the stream has no tokens: call attach() with tokens_needed() tokens per class")
        if isinstance(batch_index, bool) or not isinstance(batch_index, int | np.integer) \
                or not 0 <= batch_index <= len(self):
            raise ValueError(f"batch_index must be an integer in [0, {len(self)}], got {batch_index!r}")
        return self._batches(int(batch_index))

    def _batches(self, start: int) -> Iterator[Batch]:
        first = int(np.searchsorted(self._starts, start, side="right")) - 1
        for fragment in self.fragments[max(first, 0):]:
            data = self._data[fragment.class_name]
            for m in range(max(start - fragment.first_batch, 0), fragment.n_batches):
                row = fragment.start_row + m * self.bptt
                yield Batch(x=data[row:row + self.bptt].clone(), y=data[row + 1:row + 1 + self.bptt].clone(),
                            fragment=fragment.index, class_id=fragment.class_id, class_name=fragment.class_name,
                            first_of_fragment=m == 0, index=fragment.first_batch + m)

    def batch_labels(self) -> tuple[np.ndarray, np.ndarray]:
        """(fragment index, class id) of every batch, in stream order, without tokens: the evaluation labels
        reprobench.calm.metrics.compute_metrics takes alongside the losses."""
        sizes = [f.n_batches for f in self.fragments]
        return (np.repeat([f.index for f in self.fragments], sizes),
                np.repeat([f.class_id for f in self.fragments], sizes))


def make_stream(tokens: Mapping[str, object], lam: float, seed: int, n_fragments: int = 100, b: int = STREAMS,
                window: int = 100, bptt: int = 20) -> Stream:
    """A Stream over {class name: 1-D integer token ids}, classes in sorted-name order."""
    return Stream(tokens, lam, seed, n_fragments=n_fragments, b=b, window=window, bptt=bptt)
