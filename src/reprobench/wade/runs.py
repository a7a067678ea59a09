"""Training stages of the synthetic tasks: curve files for reservoirs (all rules of a seed in one job) and for
the trained sequence models. Each curve has, per checkpoint k: test accuracy, and the training items and
sequences consumed by then (the time units the WADE conventions need)."""

from __future__ import annotations

import numpy as np

from reprobench.core import curves
from reprobench.core.plugins import run_id
from reprobench.core.provenance import Timer
from reprobench.wade import PAPER, reservoir, sequence_models
from reprobench.wade.grid import RULE_KEY
from reprobench.wade.tasks import Dataset, task_spec


def reservoir_progress(dataset: Dataset, n_checkpoints: int, chunk: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """(items, sequences) consumed at each readout checkpoint: 1, then 8, 16, ... (capped at the total)."""
    n_items = int(sum(len(m) for m, t in zip(dataset.masks, dataset.train) if t))
    items = np.array([1] + [min((k + 1) * chunk, n_items) for k in range(n_checkpoints - 1)], dtype=float)
    return items, items / (n_items / dataset.train.sum())


def sequence_progress(n_steps: int) -> np.ndarray:
    """Sequences consumed after each optimiser step of 8."""
    return (np.arange(n_steps) + 1.0) * sequence_models.BATCH


def curve_rows(seed: int, accuracy: np.ndarray, sequences: np.ndarray, items: np.ndarray | None = None) -> dict:
    series = [("test", "accuracy", accuracy), ("train", "sequences", sequences)]
    if items is not None:
        series.append(("train", "items", items))
    return curves.series_rows(seed, series)


def write_run(path: str, dataset: Dataset, model: str, config_key: str, variant: str, seed: int, scale: str,
              device: str, rows: dict, params: dict, timing: dict, keys=()) -> None:
    """One curve file; `timing` is core.provenance.Timer.fields(); `keys`: the key columns of a file of several
    runs (core.curves.curve_schema)."""
    spec = task_spec(dataset.task_id)
    record = curves.provenance(
        paper=PAPER.id, experiment="synthetic", model=model, seed=seed, scale=scale, variant=variant,
        setting={"task": spec.id, "task_name": spec.name, "config": config_key, "vocabulary": len(dataset.vocabulary),
                 "train_sequences": int(dataset.train.sum()), "test_sequences": int((~dataset.train).sum())},
        config=params, device=device, **timing)
    curves.write_curve(rows, path, record, keys)


def reca_rows(seed: int, results: dict, rules: list[int], dataset: Dataset) -> dict:
    """The rows of one ReCA file: each rule's curve_rows (what a file of its own held) after a `rule` column."""
    rows = {RULE_KEY: []}
    for rule in rules:
        items, sequences = reservoir_progress(dataset, len(results[rule]))
        one = curve_rows(seed, results[rule], sequences, items)
        rows[RULE_KEY] += [rule] * len(one["step"])
        for column, values in one.items():
            rows.setdefault(column, []).extend(values)
    return rows


def run_reservoirs(dataset: Dataset, rules: list[int], reca_output: str, esn_output: str | None, scale: str,
                   device: str, rules_per_chunk: int) -> None:
    """Every CA rule (one tensor, `rules_per_chunk` at a time) into one curve file with a `rule` column, and the ESN,
    on one seed's dataset."""
    seed = dataset.seed
    with Timer() as timer:
        results = reservoir.run(dataset, "reca", seed, rules=rules, rules_per_chunk=rules_per_chunk, device=device)
    # setting.config names the key column: the aggregate gives each rule's run the config 'rule<N>'
    write_run(reca_output, dataset, "reca", RULE_KEY, "all", seed, scale, device,
              reca_rows(seed, results, rules, dataset),
              {"rules": list(rules), "rules_per_chunk": rules_per_chunk, "readout": "sgd-ovr lr 1e-3 l2 1e-3"},
              timer.fields(), keys=(RULE_KEY,))
    if esn_output:
        with Timer() as timer:
            acc = reservoir.run(dataset, "esn", seed, device=device)["esn"]
        items, sequences = reservoir_progress(dataset, len(acc))
        write_run(esn_output, dataset, "esn", "default", "all", seed, scale, device,
                  curve_rows(seed, acc, sequences, items), {"units": 1800, "readout": "sgd-ovr lr 1e-3 l2 1e-3"},
                  timer.fields())


def run_sequence_model(dataset: Dataset, model: str, config: str, epochs: int, output: str, scale: str,
                       device: str) -> None:
    """One trained model on one seed's dataset; `config` is the run's config key (grid.SEQUENCE_RUNS); a user's model
    (config wade.models) is named 'package.module:Class' and written under its run id."""
    seed = dataset.seed
    with Timer() as timer:
        acc = sequence_models.train(dataset, model, seed, config, epochs=epochs, device=device)
    variant = config if model == "transformer" else "all"  # only the Transformer differs by variant
    write_run(output, dataset, run_id(model), config, variant, seed, scale, device,
              curve_rows(seed, acc, sequence_progress(len(acc))),
              {"epochs": epochs, "batch": sequence_models.BATCH, "lr": 1e-3,
               "parameters": sequence_models.n_parameters(sequence_models.build(model, len(dataset.vocabulary),
                                                                                config))},
              timer.fields())
