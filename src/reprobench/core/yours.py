"""Your model in the report: a user's class (named in the config as 'package.module:Class') beside the paper's models
reproduced in the same run and setting, and the published numbers, in one table per benchmark.

Each benchmark's compare stage writes the rows (results/<key>/yours.csv, COLUMNS): for every setting (result, setting,
metric, variant) in which a user's model ran, the user's rows and those of the paper's models, each with its own
interval and number of runs, and the published number where the paper gives one for that model and setting. This
module turns them into the table (results/<key>/tables/yours.{md,tex,csv}) that results/report.md and the HTML report
show; it knows no benchmark.
"""

from __future__ import annotations

import math

import pandas as pd

from reprobench.core import tables
from reprobench.core.atomic import write_text
from reprobench.core.benchmark import Product
from reprobench.core.compare import Interval
from reprobench.core.plugins import USER_CLASS

COLUMNS = ["result", "setting", "metric", "variant", "model", "yours", "value", "low", "high", "spread", "n_runs",
           "scale", "published", "published_low", "published_high"]
SETTING = ["result", "setting", "metric", "variant"]
NONE = Interval(math.nan)  # no number: the paper gives none for this model and setting
FORMATS = (".md", ".csv", ".tex")


def rows_file(root: str) -> str:
    """Where a benchmark's compare stage writes the rows: results/<key>/yours.csv."""
    return f"{root}/yours.csv"


def product(root: str, paper_title: str) -> Product:
    """The benchmark's "Your model" table (results/<key>/tables/yours)."""
    return Product("Your model", f"{root}/tables/yours", FORMATS,
                   f"Your model on {paper_title}: each user's class named in the config (marked yours) beside the "
                   "paper's models reproduced in the same run and setting, with the published number where the paper "
                   "gives one for that model and setting; intervals as each row's spread says, and the number of "
                   "runs behind each.")


def names_user_class(section) -> bool:
    """Whether a benchmark's config section names a user's class ('package.module:Class') anywhere, as a value or as
    a key (S2B's Table 4 names its cores as the keys of a seeds mapping)."""
    if isinstance(section, dict):
        return any(names_user_class(k) or names_user_class(v) for k, v in section.items())
    if isinstance(section, (list, tuple)):
        return any(names_user_class(v) for v in section)
    return isinstance(section, str) and bool(USER_CLASS.match(section))


def row(*, result: str, setting: str, metric: str, variant: str, model: str, yours: bool, reproduced: Interval,
        spread: str, n_runs: int, scale: str, published: Interval = NONE) -> dict:
    """One model's number in one setting. `model` is the name the benchmark's tables print ("NAC+", "TinyGRU
    (yours)"); `spread` says what (low, high) is ("Wilson 95%", "mean ± std")."""
    return {"result": result, "setting": setting, "metric": metric, "variant": variant, "model": model,
            "yours": bool(yours), "value": reproduced.value, "low": reproduced.low, "high": reproduced.high,
            "spread": spread, "n_runs": int(n_runs), "scale": scale, "published": published.value,
            "published_low": published.low, "published_high": published.high}


def select(rows: list[dict]) -> pd.DataFrame:
    """The rows of the settings in which a user's model ran: in each, the user's rows first, then the paper's models
    in the order given; settings in the order their first user's row came."""
    frame = pd.DataFrame(rows, columns=COLUMNS)
    if not len(frame):
        return frame
    frame["yours"] = frame["yours"].astype(bool)
    keys = list(dict.fromkeys(map(tuple, frame.loc[frame["yours"], SETTING].itertuples(index=False))))
    parts = []
    for key in keys:
        same = (frame[SETTING] == pd.Series(key, index=SETTING)).all(axis=1)
        parts += [frame[same & frame["yours"]], frame[same & ~frame["yours"]]]
    return pd.concat(parts, ignore_index=True) if parts else frame.iloc[:0]


def write_rows(rows: list[dict], path: str) -> pd.DataFrame:
    """The compare stage's output: select(rows) as CSV (its header alone where no user's model ran)."""
    frame = select(rows)
    write_text(path, frame.to_csv(index=False, float_format="%.6g"))
    return frame


def _number(x) -> str:
    return "—" if x is None or pd.isna(x) else f"{x:.4g}"


def _with_interval(value, low, high) -> str:
    if pd.isna(value):
        return "—"
    if pd.isna(low) or pd.isna(high):
        return _number(value)
    return f"{_number(value)} [{_number(low)}, {_number(high)}]"


def table(rows_csv: str, stem: str) -> list[str]:
    """The "Your model" table from a compare stage's rows file: one row per (setting, model), the user's first."""
    frame = pd.read_csv(rows_csv)
    header = ["Result", "Setting", "Metric", "Variant", "Model", "Reproduced", "Spread", "Runs", "Published"]
    body, bold = [], set()
    for r in frame.itertuples():
        if r.yours:
            bold.add((len(body), 4))
        body.append([str(r.result), str(r.setting), str(r.metric), str(r.variant), str(r.model),
                     _with_interval(r.value, r.low, r.high), str(r.spread), str(int(r.n_runs)) if r.n_runs else "—",
                     _with_interval(r.published, r.published_low, r.published_high)])
    scales = ", ".join(sorted(frame["scale"].astype(str).unique())) if len(frame) else "—"
    note = (f"Scale: {scales}. Bold: the user's classes (the config's 'package.module:Class'), trained and scored by "
            "the same code as the paper's models listed under each; Reproduced: this run's number with its interval "
            "(Spread says which); Published: the paper's number for that model and setting, — where it gives none "
            "(a user's model never has one); a paper's model without runs was not run here: its published number "
            "only. At a scale below the paper's, compare the user's rows with the reproduced ones, not with the "
            "published." if len(frame) else "No user's class ran in a setting of this benchmark.")
    return tables.write_all(stem, header, body, body, frame, bold, note)
