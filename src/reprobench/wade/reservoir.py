"""One reservoir run (specs/wade.md, 3.1-3.3): features at supervised positions, then the SGD readout.

The state after consuming tokens 0..i-1 predicts token i for every supervised position i. Sequences of equal
length go through the reservoir together (no padding); every sequence starts from a zero state. Training
items of all sequences are pooled and shuffled (sample level) before the single pass of the readout.
For ReCA, every CA rule of a run shares the data, the projection and the sample order, and is evolved in
one tensor; rules are processed in chunks to bound memory.

The items' layout (which rows and positions, in which order) is computed on the host and sent to the device once
per run, so a chunk on a GPU waits on the host only for its accuracy curves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from reprobench.core.progress import Progress
from reprobench.wade import readout, reca
from reprobench.wade.esn import EchoStateNetwork
from reprobench.wade.tasks import Dataset


@dataclass
class Items:
    """The supervised items of one split on the device: the split's sequences sorted by length (stable, so each
    length group is a block of rows in dataset order), zero-padded; per group (first row, end row, length,
    first item, end item); each item's row in its group and the position whose features predict it; `order` from
    the grouped items to the output order; the targets in that order (on the device and on the host)."""

    tokens: torch.Tensor
    groups: list[tuple[int, int, int, int, int]]
    rows: torch.Tensor
    positions: torch.Tensor
    order: torch.Tensor
    targets: torch.Tensor
    host_targets: np.ndarray

    @classmethod
    def of(cls, dataset: Dataset, train: bool, device, permutation: np.ndarray | None = None) -> Items:
        """Items in sequence order (each sequence's items in mask order), then reordered by `permutation`."""
        split = np.flatnonzero(dataset.train == train)
        lengths = np.array([len(dataset.tokens[i]) for i in split])
        rank = np.argsort(lengths, kind="stable")
        ranked, lengths = split[rank], lengths[rank]
        tokens = np.zeros((len(ranked), lengths[-1]), dtype=np.int64)
        for row, i in enumerate(ranked):
            tokens[row, : lengths[row]] = dataset.tokens[i]
        starts = np.flatnonzero(np.diff(lengths, prepend=-1))  # the first row of each length group
        ends = np.append(starts[1:], len(ranked))
        n_items = np.array([len(dataset.masks[i]) for i in ranked])
        item = np.concatenate([[0], np.cumsum(n_items)])  # each row's first item
        groups = [(int(a), int(b), int(lengths[a]), int(item[a]), int(item[b])) for a, b in zip(starts, ends)]
        row = np.repeat(np.arange(len(ranked)), n_items)
        local_row = row - np.repeat(starts, ends - starts)[row]
        positions = np.concatenate([dataset.masks[i] - 1 for i in ranked])
        targets = np.concatenate([dataset.tokens[i][dataset.masks[i]] for i in ranked])
        # back to the dataset's sequence order, so that the result does not depend on the grouping
        order = np.argsort(ranked[row], kind="stable")
        if permutation is not None:
            order = order[permutation]
        # one upload per array: each blocking copy to a GPU is a host sync
        index = torch.tensor(np.stack([local_row, positions, order]), device=device)
        targets = targets[order]
        return cls(torch.tensor(tokens, device=device), groups, index[0], index[1], index[2],
                   torch.tensor(targets, device=device), targets)

    def features(self, feature_fn) -> torch.Tensor:
        """(models, items, F): `feature_fn` on each length group, at the items' positions, in the output order."""
        feats = [feature_fn(self.tokens[a:b, :length])[:, self.rows[i:j], self.positions[i:j]]
                 for a, b, length, i, j in self.groups]
        return (feats[0] if len(feats) == 1 else torch.cat(feats, 1))[:, self.order]


def supervised_items(dataset: Dataset, feature_fn, train: bool, device) -> tuple[torch.Tensor, torch.Tensor]:
    """(features (models, items, F), targets (items,)) over the train or test sequences, in sequence order."""
    items = Items.of(dataset, train, device)
    return items.features(feature_fn), items.targets


def prepare(dataset: Dataset, model: str, seed: int, rules: list[int] | None = None,
            rules_per_chunk: int | None = None, device="cpu"):
    """What a run's chunks share: (train Items in the readout's sample order, test Items, the classes seen in
    training (on the device), [(keys, make)]) where `make()` returns a chunk's feature function."""
    device = torch.device(device)
    rng = np.random.RandomState(seed)
    vocab = len(dataset.vocabulary)
    if model == "reca":
        projection = torch.tensor(reca.one_to_one_projection(vocab, rng), device=device)

        def make_reca(group):
            numbers = torch.tensor(group, device=device)  # once per chunk, not per length group
            return lambda tokens: reca.features(tokens, projection, numbers)

        chunks = [(group, lambda g=group: make_reca(g))
                  for group in (rules[i:i + rules_per_chunk] for i in range(0, len(rules), rules_per_chunk))]
    elif model == "esn":
        esn = EchoStateNetwork(vocab, torch.Generator().manual_seed(seed)).to(device)
        chunks = [(["esn"], lambda: (lambda tokens: esn.features(tokens).unsqueeze(0)))]
    else:
        raise ValueError(f"unknown reservoir '{model}' (reca or esn)")
    n_train = int(sum(len(m) for m, t in zip(dataset.masks, dataset.train) if t))
    train = Items.of(dataset, True, device, permutation=rng.permutation(n_train))
    test = Items.of(dataset, False, device)
    classes = sorted(set(train.host_targets.tolist()))  # the readout knows only classes seen in training
    return train, test, torch.tensor(classes, device=device), chunks


def chunk_curves(train: Items, test: Items, classes: torch.Tensor, feature_fn, **readout_options) -> torch.Tensor:
    """Test-accuracy curves (models, checkpoints) of one chunk of reservoirs: features at the supervised items, then
    the readout (readout.fit_and_score and its options). On the device, without a host sync. ReCA's features are its
    CA states, 0/1 in uint8 (the readout's exact binary standardisation); the ESN's are floats."""
    train_x = train.features(feature_fn)
    readout_options.setdefault("binary_features", train_x.dtype == torch.uint8)
    return readout.fit_and_score(train_x, train.targets, test.features(feature_fn), test.targets, classes,
                                 **readout_options)


def run(dataset: Dataset, model: str, seed: int, rules: list[int] | None = None, rules_per_chunk: int | None = None,
        device="cpu", chunk: int = 8, score_block: int | None = None, score_dtype=torch.float32,
        unique: bool | None = None) -> dict:
    """{rule (or 'esn'): test-accuracy curve (numpy)} for one seed's data; ReCA evolves `rules_per_chunk` rules
    at a time (config wade.rules_per_chunk). `score_dtype`, `unique`: readout.fit_and_score's."""
    train, test, classes, chunks = prepare(dataset, model, seed, rules, rules_per_chunk, device)
    curves = {}
    bar = Progress(sum(len(keys) for keys, _ in chunks), f"{model} task {dataset.task_id} seed {seed}")
    for keys, make in chunks:
        acc = chunk_curves(train, test, classes, make(), chunk=chunk, score_block=score_block,
                           score_dtype=score_dtype, unique=unique).cpu().numpy()  # the run's only wait on the device
        for k, key in enumerate(keys):
            curves[key] = acc[k]
        bar.update(len(keys))
    bar.close()
    return curves
