"""Published vs reproduced: one row per number, with a verdict that says how it was reached."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from reprobench.core.atomic import write_text

COLUMNS = ["benchmark", "result", "row", "metric", "published", "published_low", "published_high", "reproduced",
           "reproduced_low", "reproduced_high", "n_runs", "scale", "variant", "within", "criterion"]


@dataclass(frozen=True)
class Interval:
    """A number and, where known, its spread (low, high); NaN or None where not known."""

    value: float | None
    low: float | None = math.nan
    high: float | None = math.nan

    @classmethod
    def mean_std(cls, mean: float, std: float) -> Interval:
        """mean ± std, as the WADE paper reports its spreads."""
        return cls(mean, mean - std, mean + std)


def _finite(*xs) -> bool:
    return all(x is not None and not (isinstance(x, float) and math.isnan(x)) for x in xs)


def within(published: Interval, reproduced: Interval, tolerance: float = 0.0, spread: str = "95% intervals"):
    """(verdict, criterion). Both intervals known: they overlap. Only ours: the published value, widened by
    `tolerance` (e.g. the accuracy of a value read off a figure), touches our interval. Otherwise: None."""
    if not _finite(published.value, reproduced.value):
        return None, "missing value"
    if _finite(published.low, published.high, reproduced.low, reproduced.high):
        return bool(published.low <= reproduced.high and reproduced.low <= published.high), f"{spread} overlap"
    if _finite(reproduced.low, reproduced.high):
        ok = reproduced.low - tolerance <= published.value <= reproduced.high + tolerance
        return bool(ok), f"published within reproduced 95% interval (+-{tolerance:g})"
    return None, "no interval"


def row(*, benchmark: str, result: str, row: str, metric: str, published: Interval, reproduced: Interval,
        n_runs: int, scale: str, variant: str, tolerance: float = 0.0, spread: str = "95% intervals") -> dict:
    """One comparison row; `result` names the table or figure, `row` the entry within it."""
    verdict, criterion = within(published, reproduced, tolerance, spread)
    return {"benchmark": benchmark, "result": result, "row": row, "metric": metric, "published": published.value,
            "published_low": published.low, "published_high": published.high, "reproduced": reproduced.value,
            "reproduced_low": reproduced.low, "reproduced_high": reproduced.high, "n_runs": n_runs, "scale": scale,
            "variant": variant, "within": verdict, "criterion": criterion}


def write(rows: list[dict], path: str) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=COLUMNS)
    write_text(path, frame.to_csv(index=False, float_format="%.6g"))
    return frame
