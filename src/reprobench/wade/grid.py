"""The WADE runs a config asks for, and their paths; read by the Snakefile and by `reprobench inspect`."""

from __future__ import annotations

DATA = "results/wade/data/task={task}/seed={seed}.parquet"
CURVE = "results/wade/curves/experiment=synthetic/model={model}/task={task}/config={config}/seed={seed}.parquet"
IMDB_CURVE = "results/wade/curves/experiment=imdb/model={model}/seed={seed}.parquet"
IMDB_CHECKPOINT = "results/wade/checkpoints/experiment=imdb/model={model}/seed={seed}.pt"
SEQUENCE_RUNS = [("rnn", "default"), ("lstm", "default"), ("transformer", "faithful"), ("transformer", "corrected")]


def rules(wade: dict) -> list[int]:
    return list(range(256)) if wade["reca_rules"] == "all" else list(wade["reca_rules"])


def seeds(wade: dict) -> list[int]:
    return [wade["base_seed"] + i for i in range(wade["seeds"])]


def runs(wade: dict) -> list[tuple[str, str]]:
    """(model, config) of every synthetic-task run of one (task, seed)."""
    return [("reca", f"rule{r}") for r in rules(wade)] + [("esn", "default")] + SEQUENCE_RUNS


def expected_curves(wade: dict) -> list[str]:
    synthetic = [CURVE.format(model=m, config=c, task=t, seed=s) for t in wade["tasks"] for s in seeds(wade)
                 for m, c in runs(wade)]
    imdb = wade.get("imdb") or {}
    return synthetic + [IMDB_CURVE.format(model=m, seed=s) for m in imdb.get("models", [])
                        for s in range(imdb.get("seeds", 0))]
