"""Curve files: one tidy Parquet file per run, with the run's identity and provenance in its metadata.

Rows are (seed, step, split, metric, value). The run's identity is also in the path
(`experiment=<e>/model=<m>/<setting keys>/seed=<s>.parquet`, hive style, so that a whole folder reads
as one dataset) and, with everything needed to trust a number, in the schema metadata under the key
`reprobench`. A reader that finds a file without it, or with another schema, stops and names the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from reprobench.core.atomic import atomic_path
from reprobench.core.errors import ResultsFileError
from reprobench.core.provenance import base_record

METADATA_KEY = b"reprobench"
CURVE_SCHEMA = pa.schema([
    pa.field("seed", pa.int64(), nullable=False),
    pa.field("step", pa.int64(), nullable=False),
    pa.field("split", pa.string(), nullable=False),
    pa.field("metric", pa.string(), nullable=False),
    pa.field("value", pa.float64(), nullable=True),
])
# Where one job trains many tiny runs together (WADE: 256 CA rules of one task and seed), they share one file: int64
# key columns (e.g. `rule`) come first and the metadata names them under "run_keys" (DESIGN.md, "Curve files").
RUN_KEYS_FIELD = "run_keys"
# What a curve file's metadata must hold (DESIGN.md, "Curve files").
REQUIRED_FIELDS = ("paper", "experiment", "model", "setting", "seed", "scale", "variant", "config",
                   "package_version", "git_commit", "libraries", "device", "wall_time_s", "start", "end", "host")


def provenance(**fields) -> dict:
    """The metadata record of one run: the caller's identity fields plus code, library and host versions."""
    record = base_record()
    record.update(fields)
    missing = [k for k in REQUIRED_FIELDS if k not in record]
    if missing:
        raise ValueError(f"provenance lacks {missing}")
    return record


def write_table(table: pa.Table, path: str | os.PathLike, record: dict) -> None:
    """Write any Parquet table atomically with `record` as its metadata (byte-stable for equal input)."""
    meta = dict(table.schema.metadata or {})
    meta[METADATA_KEY] = json.dumps(record, sort_keys=True, default=str).encode()
    table = table.replace_schema_metadata(meta)
    with atomic_path(path, suffix=".parquet") as tmp:
        pq.write_table(table, tmp, compression="zstd")


def write_frame(frame, path: str | os.PathLike, record: dict) -> None:
    """Write a pandas DataFrame (no index) atomically with `record` as its metadata."""
    write_table(pa.Table.from_pandas(frame, preserve_index=False), path, record)


def read_frame(path: str | os.PathLike, columns=()):
    """(DataFrame, provenance record) of a table written by write_frame; a clear error names a missing or foreign
    file, or one without the `columns` its reader needs (another stage's table given in its place)."""
    record = read_metadata(path)
    try:
        frame = pq.read_table(path, partitioning=None).to_pandas()
    except (pa.ArrowException, OSError) as exc:
        raise ResultsFileError(path, f"is not a readable Parquet file ({exc})") from exc
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        what = f"a '{record.get('stage', record.get('model', '?'))}' table of {record.get('paper', '?')}"
        raise ResultsFileError(path, f"lacks the columns {missing} (it is {what}; has {list(frame.columns)})")
    return frame, record


def scale_label(frame) -> str:
    """The scales of the runs in a frame (its `scale` column), as tables and comparisons print them."""
    return ",".join(sorted(frame["scale"].astype(str).unique()))


def summary_record(paper: str, experiment: str, stage: str, scale: str, variant: str, **fields) -> dict:
    """The metadata of a table made from curve files (an aggregate), with the package and host versions."""
    return {"paper": paper, "experiment": experiment, "stage": stage, "scale": scale, "variant": variant, **fields,
            **base_record()}


def curve_schema(keys=()) -> pa.Schema:
    """CURVE_SCHEMA, after the int64 key columns `keys` of a file that holds several runs (none: one run)."""
    return pa.schema([pa.field(k, pa.int64(), nullable=False) for k in keys] + list(CURVE_SCHEMA))


def write_curve(rows: dict, path: str | os.PathLike, record: dict, keys=()) -> None:
    """`rows` maps column name to a sequence; columns follow curve_schema(keys) (with keys, the record says so)."""
    schema = curve_schema(keys)
    table = pa.table({f.name: pa.array(rows[f.name], type=f.type) for f in schema}, schema=schema)
    write_table(table, path, record | {RUN_KEYS_FIELD: list(keys)} if keys else record)


def series_rows(seed: int, series) -> dict:
    """Curve columns from [(split, metric, values)], where values[k] belongs to step k."""
    rows = {"seed": [], "step": [], "split": [], "metric": [], "value": []}
    for split, metric, values in series:
        values = [float(v) for v in values]
        rows["seed"] += [seed] * len(values)
        rows["step"] += list(range(len(values)))
        rows["split"] += [split] * len(values)
        rows["metric"] += [metric] * len(values)
        rows["value"] += values
    return rows


def wide(frame, keys=()):
    """One column per metric, one row per step (per key and step in a file of several runs; the first value where a
    metric has several splits)."""
    return frame.pivot_table(index=[*keys, "step"], columns="metric", values="value", aggfunc="first").sort_index()


def read_metadata(path: str | os.PathLike) -> dict:
    """The provenance record of a Parquet file written by this package; a clear error otherwise."""
    path = Path(path)
    if not path.exists():
        raise ResultsFileError(path, "does not exist")
    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError) as exc:
        raise ResultsFileError(path, f"is not a readable Parquet file ({exc})") from exc
    raw = (schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        raise ResultsFileError(path, "has no reprobench provenance metadata")
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(path, f"has corrupt provenance metadata ({exc})") from exc


def read_curve(path: str | os.PathLike, keys=()):
    """Read a curve file into a pandas DataFrame (columns of curve_schema(keys): a file of several runs has key
    columns); returns (frame, record)."""
    record = read_metadata(path)
    try:
        table = pq.read_table(path, partitioning=None)
    except (pa.ArrowException, OSError) as exc:
        raise ResultsFileError(path, f"is not a readable Parquet file ({exc})") from exc
    if not table.schema.remove_metadata().equals(curve_schema(keys)):
        raise ResultsFileError(path, f"has schema {table.schema.remove_metadata()} instead of the curve schema"
                               + (f" with key columns {list(keys)}" if keys else ""))
    missing = [k for k in REQUIRED_FIELDS if k not in record]
    if missing:
        raise ResultsFileError(path, f"provenance lacks {missing}")
    if table.num_rows == 0:  # every run records its first evaluation, so an empty curve is a broken file
        raise ResultsFileError(path, "has no rows")
    return table.to_pandas(), record
