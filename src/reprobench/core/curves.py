"""Curve files: one tidy Parquet file per run, with the run's identity and provenance in its metadata.

Rows are (seed, step, split, metric, value). The run's identity is also in the path
(`experiment=<e>/model=<m>/<setting keys>/seed=<s>.parquet`, hive style, so that a whole folder reads
as one dataset) and, with everything needed to trust a number, in the schema metadata under the key
`reprobench`. A reader that finds a file without it, or with another schema, stops and names the file; so does
a reader given a file of another paper, experiment or stage than it expects (its provenance says which), a table
with no rows, or the same run twice. Every Parquet file is written with page checksums (CRC-32 of each page) and
read with them verified, so that a flipped bit in a data page stops the reader instead of changing a number.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from reprobench.core.atomic import atomic_path
from reprobench.core.errors import ResultsFileError
from reprobench.core.provenance import base_record

METADATA_KEY = b"reprobench"
ROWS_KEY = b"reprobench_rows"  # the number of rows written
DIGEST_KEY = b"reprobench_sha256"  # SHA-256 of the record and the row count (files written before it have none)


def _digest(meta: dict) -> bytes:
    return hashlib.sha256(meta.get(METADATA_KEY, b"") + b"\0" + meta.get(ROWS_KEY, b"")).hexdigest().encode()


def _check_footer(path, meta: dict, num_rows: int | None = None) -> None:
    """The footer's digest and, given the rows read, their count (a file without a digest: nothing to check)."""
    if DIGEST_KEY not in meta:
        return
    if meta[DIGEST_KEY] != _digest(meta):
        raise ResultsFileError(path, "is corrupt: its metadata does not match its SHA-256")
    if num_rows is not None and meta.get(ROWS_KEY, b"").decode() != str(num_rows):
        raise ResultsFileError(path, f"is corrupt: {num_rows} rows read, {meta.get(ROWS_KEY, b'?').decode()} "
                               "written")
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
    # the footer has no checksum of its own: a flipped bit in it could change a provenance field or the row count
    # (rows silently dropped) without an error; the digest covers both
    meta[ROWS_KEY] = str(table.num_rows).encode()
    meta[DIGEST_KEY] = _digest(meta)
    table = table.replace_schema_metadata(meta)
    with atomic_path(path, suffix=".parquet") as tmp:
        pq.write_table(table, tmp, compression="zstd", write_page_checksum=True)


def read_table(path: str | os.PathLike) -> pa.Table:
    """The whole table of a Parquet file, its page checksums verified (files written before they were written read
    as before); a clear error names an unreadable or corrupt file. For every Parquet file this package reads."""
    try:
        table = pq.read_table(path, partitioning=None, page_checksum_verification=True)
    except (pa.ArrowException, OSError) as exc:
        if "crc" in str(exc).lower() or "checksum" in str(exc).lower():
            raise ResultsFileError(path, f"is corrupt: a page fails its checksum ({exc})") from exc
        raise ResultsFileError(path, f"is not a readable Parquet file ({exc})") from exc
    _check_footer(path, table.schema.metadata or {}, table.num_rows)
    return table


def describe(record: dict) -> str:
    """What a file is, from its provenance: "<paper>'s curve (experiment 'e', model 'm', ...)" or "<paper>'s
    '<stage>' table (...)"."""
    kind = f"'{record['stage']}' table" if "stage" in record else "curve"
    fields = ", ".join(f"{k} '{record[k]}'" for k in ("experiment", "model", "variant") if k in record)
    return f"{record.get('paper', '?')}'s {kind}" + (f" ({fields})" if fields else "")


def check_record(path: str | os.PathLike, record: dict, expect: dict | None) -> None:
    """Stop on a file whose provenance is not what its reader expects: `expect` maps a provenance field (paper,
    experiment, stage, model...) to its value or a collection of allowed values."""
    for key, allowed in (expect or {}).items():
        allowed = (allowed,) if isinstance(allowed, str) else tuple(allowed)
        if record.get(key) not in allowed:
            wanted = repr(allowed[0]) if len(allowed) == 1 else f"one of {list(allowed)}"
            raise ResultsFileError(path, f"is {describe(record)}, but its reader needs {key} {wanted}")


def write_frame(frame, path: str | os.PathLike, record: dict) -> None:
    """Write a pandas DataFrame (no index) atomically with `record` as its metadata."""
    write_table(pa.Table.from_pandas(frame, preserve_index=False), path, record)


def read_frame(path: str | os.PathLike, columns=(), expect: dict | None = None):
    """(DataFrame, provenance record) of a table written by write_frame; a clear error names a missing or foreign
    file, one whose provenance is not `expect` (check_record), one with no rows (an aggregate of no runs: its
    tables would have headers only), or one without the `columns` its reader needs (another stage's table)."""
    record = read_metadata(path)
    check_record(path, record, expect)
    frame = read_table(path).to_pandas()
    if frame.empty:
        raise ResultsFileError(path, f"has no rows (it is {describe(record)})")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ResultsFileError(path, f"lacks the columns {missing} (it is {describe(record)}; has "
                               f"{list(frame.columns)})")
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
    _check_footer(path, schema.metadata or {})
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(path, f"has corrupt provenance metadata ({exc})") from exc


def read_curve(path: str | os.PathLike, keys=(), expect: dict | None = None):
    """Read a curve file into a pandas DataFrame (columns of curve_schema(keys): a file of several runs has key
    columns); returns (frame, record). With `expect`, its provenance must match (check_record)."""
    record = read_metadata(path)
    check_record(path, record, expect)
    table = read_table(path)
    if not table.schema.remove_metadata().equals(curve_schema(keys)):
        raise ResultsFileError(path, f"has schema {table.schema.remove_metadata()} instead of the curve schema"
                               + (f" with key columns {list(keys)}" if keys else ""))
    missing = [k for k in REQUIRED_FIELDS if k not in record]
    if missing:
        raise ResultsFileError(path, f"provenance lacks {missing}")
    if table.num_rows == 0:  # every run records its first evaluation, so an empty curve is a broken file
        raise ResultsFileError(path, "has no rows")
    return table.to_pandas(), record


# the hive keys of a curve's path that its provenance also holds (run_id: a user's 'pkg.mod:Class' in a path)
PATH_FIELDS = ("experiment", "model", "variant", "seed")


def path_mismatch(path: str | os.PathLike, record: dict) -> str | None:
    """Where a curve's path (`.../experiment=e/model=m/seed=s.parquet`) says another run than its provenance: a file
    copied or moved onto another run's path; None where they agree."""
    from reprobench.core.plugins import run_id

    for part in Path(path).with_suffix("").parts:
        key, sep, value = part.partition("=")
        if sep and key in PATH_FIELDS and key in record and value != run_id(str(record[key])):
            return f"its path says {key}={value} but its provenance says {key} '{record[key]}'"
    return None


def run_identity(record: dict) -> str:
    """What tells one run from another in a curve's provenance (a copy of a file is the same run)."""
    return json.dumps({k: record.get(k) for k in ("paper", "experiment", "model", "setting", "seed", "variant",
                                                  RUN_KEYS_FIELD)}, sort_keys=True, default=str)


def read_curves(paths: Iterable[str], expect: dict | None = None, keys=()) -> Iterator[tuple[str, object, dict]]:
    """(path, frame, record) of each curve file an aggregate or figure reads: every file as read_curve with
    `expect`, its path agreeing with its provenance; a path given twice, or two files of the same run, stop it
    (each would count its run twice)."""
    paths = [str(p) for p in paths]
    seen: dict[str, str] = {}
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:
            raise ResultsFileError(path, f"is given twice (also as {seen[real]}): its run would count twice")
        seen[real] = path
    runs: dict[str, str] = {}
    for path in paths:
        frame, record = read_curve(path, keys, expect)
        where = path_mismatch(path, record)
        if where:
            raise ResultsFileError(path, where)
        identity = run_identity(record)
        if identity in runs:
            raise ResultsFileError(path, f"holds the same run as {runs[identity]} ({describe(record)}, seed "
                                   f"{record.get('seed')}): it would count twice")
        runs[identity] = path
        yield path, frame, record


def require_metrics(path: str | os.PathLike, frame, record: dict, present=(), finite=(), labels=()) -> None:
    """Stop on a curve (long rows) whose values are all NaN, that lacks a metric its reader needs (`present`,
    `finite`, `labels`), whose `finite` metrics are all NaN (nothing to read; a NaN here and there is a run's
    result), or whose `labels` (bookkeeping rows: step counts, class ids) hold a NaN."""
    if frame["value"].isna().all():
        raise ResultsFileError(path, f"has only NaN values (it is {describe(record)})")
    have = set(frame["metric"].unique())
    missing = [m for m in (*present, *finite, *labels) if m not in have]
    if missing:
        raise ResultsFileError(path, f"lacks the metrics {missing} (it is {describe(record)}; has {sorted(have)})")
    values = frame.groupby("metric")["value"]
    nan_only = [m for m in finite if values.get_group(m).isna().all()]
    if nan_only:
        raise ResultsFileError(path, f"has only NaN values of {nan_only}")
    nan_labels = [m for m in labels if values.get_group(m).isna().any()]
    if nan_labels:
        raise ResultsFileError(path, f"has NaN values of {nan_labels}, which a run never writes")
