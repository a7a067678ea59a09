"""One reservoir run (specs/wade.md, 3.1-3.3): features at supervised positions, then the SGD readout.

The state after consuming tokens 0..i-1 predicts token i for every supervised position i. Sequences of equal
length go through the reservoir together (no padding); every sequence starts from a zero state. Training
items of all sequences are pooled and shuffled (sample level) before the single pass of the readout.
For ReCA, every CA rule of a run shares the data, the projection and the sample order, and is evolved in
one tensor; rules are processed in chunks to bound memory.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import torch

from reprobench.core.progress import Progress
from reprobench.wade import readout, reca
from reprobench.wade.esn import EchoStateNetwork
from reprobench.wade.tasks import Dataset


def supervised_items(dataset: Dataset, feature_fn, train: bool, device) -> tuple[torch.Tensor, torch.Tensor]:
    """(features (models, items, F), targets (items,)) over the train or test sequences, in sequence order."""
    by_length = defaultdict(list)
    for i in np.flatnonzero(dataset.train == train):
        by_length[len(dataset.tokens[i])].append(i)
    feats, targets, order = [], [], []
    for length in sorted(by_length):
        idx = by_length[length]
        tokens = torch.tensor(np.stack([dataset.tokens[i] for i in idx]), device=device)
        f = feature_fn(tokens)  # (models, batch, length, F)
        for row, i in enumerate(idx):
            positions = torch.tensor(dataset.masks[i] - 1, device=device)
            feats.append(f[:, row, positions])
            targets.append(tokens[row, positions + 1])
            order.append(i)
    # restore the dataset's sequence order so the result does not depend on the grouping
    sequence_order = np.argsort(np.repeat(order, [len(dataset.masks[i]) for i in order]), kind="stable")
    x = torch.cat(feats, 1)[:, torch.tensor(sequence_order, device=device)]
    y = torch.cat(targets)[torch.tensor(sequence_order, device=device)]
    return x, y


def run(dataset: Dataset, model: str, seed: int, rules: list[int] | None = None, rules_per_chunk: int | None = None,
        device="cpu", chunk: int = 8, score_block: int = 64) -> dict:
    """{rule (or 'esn'): test-accuracy curve (numpy)} for one seed's data; ReCA evolves `rules_per_chunk` rules
    at a time (config wade.rules_per_chunk)."""
    device = torch.device(device)
    rng = np.random.RandomState(seed)
    vocab = len(dataset.vocabulary)
    if model == "reca":
        projection = torch.tensor(reca.one_to_one_projection(vocab, rng), device=device)
        groups = [rules[i:i + rules_per_chunk] for i in range(0, len(rules), rules_per_chunk)]
        make = [lambda g=g: (lambda tokens: reca.features(tokens, projection, torch.tensor(g, device=device)))
                for g in groups]
        names = groups
    elif model == "esn":
        esn = EchoStateNetwork(vocab, torch.Generator().manual_seed(seed)).to(device)
        make, names = [lambda: (lambda tokens: esn.features(tokens).unsqueeze(0))], [["esn"]]
    else:
        raise ValueError(f"unknown reservoir '{model}' (reca or esn)")
    n_train = int(sum(len(m) for m, t in zip(dataset.masks, dataset.train) if t))
    permutation = torch.tensor(rng.permutation(n_train), device=device)
    curves = {}
    bar = Progress(sum(map(len, names)), f"{model} task {dataset.task_id} seed {seed}")
    for feature_fn_factory, keys in zip(make, names):
        fn = feature_fn_factory()
        xtr, ytr = supervised_items(dataset, fn, True, device)
        xte, yte = supervised_items(dataset, fn, False, device)
        xtr, ytr = xtr[:, permutation], ytr[permutation]
        classes = sorted(set(ytr.tolist()))  # the readout knows only classes seen in training
        acc = readout.fit_and_score(xtr, ytr, xte, yte, classes, chunk=chunk, score_block=score_block)
        for k, key in enumerate(keys):
            curves[key] = acc[k].cpu().numpy()
        bar.update(len(keys))
    bar.close()
    return curves
