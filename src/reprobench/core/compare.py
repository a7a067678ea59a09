"""Published vs reproduced: one row per number, with a verdict that says how it was reached."""

from __future__ import annotations

import math

import pandas as pd

from reprobench.core.atomic import write_text

COLUMNS = ["benchmark", "result", "row", "metric", "published", "published_low", "published_high", "reproduced",
           "reproduced_low", "reproduced_high", "n_runs", "scale", "variant", "within", "criterion"]


def _finite(*xs) -> bool:
    return all(x is not None and not (isinstance(x, float) and math.isnan(x)) for x in xs)


def within(published, published_low, published_high, reproduced, reproduced_low, reproduced_high,
           tolerance: float = 0.0, spread: str = "95% intervals"):
    """(verdict, criterion). Both intervals known: they overlap. Only ours: the published value, widened by
    `tolerance` (e.g. the accuracy of a value read off a figure), touches our interval. Otherwise: None."""
    if not _finite(published, reproduced):
        return None, "missing value"
    if _finite(published_low, published_high, reproduced_low, reproduced_high):
        return bool(published_low <= reproduced_high and reproduced_low <= published_high), f"{spread} overlap"
    if _finite(reproduced_low, reproduced_high):
        ok = reproduced_low - tolerance <= published <= reproduced_high + tolerance
        return bool(ok), f"published within reproduced 95% interval (+-{tolerance:g})"
    return None, "no interval"


def row(benchmark, result, row_name, metric, published, published_low, published_high, reproduced, reproduced_low,
        reproduced_high, n_runs, scale, variant, tolerance: float = 0.0, spread: str = "95% intervals") -> dict:
    verdict, criterion = within(published, published_low, published_high, reproduced, reproduced_low,
                                reproduced_high, tolerance, spread)
    return dict(benchmark=benchmark, result=result, row=row_name, metric=metric, published=published,
                published_low=published_low, published_high=published_high, reproduced=reproduced,
                reproduced_low=reproduced_low, reproduced_high=reproduced_high, n_runs=n_runs, scale=scale,
                variant=variant, within=verdict, criterion=criterion)


def write(rows: list[dict], path: str) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=COLUMNS)
    write_text(path, frame.to_csv(index=False, float_format="%.6g"))
    return frame
