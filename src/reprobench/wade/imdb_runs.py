"""IMDB stages: prepare the tokenized corpus (real or synthetic) and train one (model, seed). Aggregation is in
summary.aggregate_imdb, Table 2 and Figure 2 in render."""

from __future__ import annotations

import numpy as np

from reprobench.core import checkpoint as checkpoints
from reprobench.core import curves
from reprobench.core.plugins import run_id
from reprobench.core.progress import log
from reprobench.core.provenance import Timer, base_record
from reprobench.wade import PAPER, imdb, imdb_models


def prepare(source: str, resources: str, out: str, scale: str, n_train: int, n_test: int, seed: int = 0) -> None:
    import pyarrow as pa

    root = imdb.fetch(resources) if source == "download" else imdb.make_synthetic(resources, n_train, n_test, seed)
    data = imdb.read(root)
    log(f"read {len(data['train'][0])} training and {len(data['test'][0])} test reviews from {root}; "
        "training the WordPiece vocabulary")
    tok = imdb.train_tokenizer(data["train"][0] + data["test"][0])
    columns = {"split": [], "label": [], "tokens": []}
    for split in ("train", "test"):
        texts, labels = data[split]
        log(f"tokenizing the {split} split")
        columns["split"] += [split] * len(texts)
        columns["label"] += labels.tolist()
        columns["tokens"] += [e.ids for e in tok.encode_batch(texts)]
    table = pa.table({"split": columns["split"], "label": pa.array(columns["label"], pa.int64()),
                      "tokens": pa.array(columns["tokens"], pa.list_(pa.int32()))})
    curves.write_table(table, out, {"paper": PAPER.id, "stage": "data", "dataset": "imdb", "scale": scale,
                                    "synthetic": imdb.is_synthetic(root), "source": source,
                                    "vocabulary": tok.get_vocab_size(), **base_record()})


def load(path: str):
    meta = curves.read_metadata(path)
    t = curves.read_table(path).to_pandas()  # page checksums verified
    split = {}
    for name in ("train", "test"):
        part = t[t["split"] == name]
        split[name] = ([np.asarray(x, dtype=np.int64) for x in part["tokens"]], part["label"].to_numpy())
    return split, meta


def train_run(data_path: str, model: str, seed: int, epochs: int, eval_every: int, out: str, scale: str,
              device: str, checkpoint: str | None = None, checkpoint_every_s: float = 600.0) -> None:
    split, meta = load(data_path)
    with Timer() as timer:
        examples, acc = imdb_models.train(model, int(meta["vocabulary"]), *split["train"], *split["test"], seed,
                                          epochs=epochs, eval_every_examples=eval_every, device=device,
                                          checkpoint=checkpoint, checkpoint_every_s=checkpoint_every_s)
    rows = curves.series_rows(seed, [("test", "accuracy", acc), ("train", "examples", examples)])
    record = curves.provenance(
        paper=PAPER.id, experiment="imdb", model=run_id(model), seed=seed, scale=scale, variant="all",
        setting={"dataset": "imdb", "synthetic": bool(meta["synthetic"]), "vocabulary": int(meta["vocabulary"])},
        config={"epochs": epochs, "batch": 8, "eval_every_examples": eval_every, "lr": 1e-3}, device=device,
        **timer.fields())
    curves.write_curve(rows, out, record)
    checkpoints.remove(checkpoint)
