"""Published vs reproduced: one row per number, with a verdict that says how it was reached."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from reprobench.core.atomic import write_text

COLUMNS = ["benchmark", "result", "row", "metric", "published", "published_low", "published_high", "reproduced",
           "reproduced_low", "reproduced_high", "n_runs", "scale", "variant", "within", "criterion", "informative",
           "not_informative_because", "deviation"]
INFORMATIVE_RATIO = 2.0  # a verdict counts when our spread is at most this many times the published one
MIN_RUNS = 5  # and rests on at least this many runs (a std of 2 runs says nothing)


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


def deviation(known: list[tuple[str, str, str, str, str]], result: str, row: str, metric: str, variant: str) -> str:
    """The first documented deviation in `known` [(result, row, metric, variant, id)] matching a comparison row
    (fnmatch patterns, e.g. ("parameters", "input_size=*", "success", "corrected", "A3")); "" if none."""
    import fnmatch

    for pattern in known:
        if all(fnmatch.fnmatchcase(value, p) for value, p in zip((result, row, metric, variant), pattern[:4])):
            return pattern[4]
    return ""


def informative(verdict, published: Interval, reproduced: Interval, n_runs: int,
                published_width: float | None = None) -> bool:
    """Whether a verdict could have failed: it exists, rests on MIN_RUNS runs or more, and our interval is no wider
    than INFORMATIVE_RATIO times the published spread (`published_width` where the paper gives a value only, e.g.
    the width of its own 95% interval at its number of seeds). With 2 seeds a Wilson interval of [0, 0.66]
    contains almost anything: such a 'within' says nothing about the paper."""
    return not_informative_because(verdict, published, reproduced, n_runs, published_width) == ""


def not_informative_because(verdict, published: Interval, reproduced: Interval, n_runs: int,
                            published_width: float | None = None) -> str:
    """Why a verdict could not have failed ("" where it could: `informative`), the first reason that applies."""
    if verdict is None:
        return "no verdict"
    if n_runs < MIN_RUNS:
        return f"{n_runs} run{'s' * (n_runs != 1)}, fewer than {MIN_RUNS}"
    if not _finite(reproduced.low, reproduced.high):
        return "no reproduced spread"
    if published_width is None:
        if not _finite(published.low, published.high):
            return "no published spread"
        published_width = published.high - published.low
    ours = reproduced.high - reproduced.low
    if ours > INFORMATIVE_RATIO * published_width + 1e-12:
        return (f"our interval ({ours:.3g} wide) is over {INFORMATIVE_RATIO:g} times the published one "
                f"({published_width:.3g})")
    return ""


def row(*, benchmark: str, result: str, row: str, metric: str, published: Interval, reproduced: Interval,
        n_runs: int, scale: str, variant: str, tolerance: float = 0.0, spread: str = "95% intervals",
        published_width: float | None = None, comparable: bool = True, not_comparable_because: str = "",
        deviation: str = "") -> dict:
    """One comparison row; `result` names the table or figure, `row` the entry within it. `comparable=False`
    (e.g. a synthetic stand-in for the paper's data, a budget far below the paper's) makes the row uninformative
    whatever the intervals, for the reason `not_comparable_because` gives; `deviation` names the documented
    deviation (docs/DEVIATIONS.md) expected to move this number."""
    verdict, criterion = within(published, reproduced, tolerance, spread)
    why = (not_comparable_because or "not comparable at this scale") if not comparable else \
        not_informative_because(verdict, published, reproduced, n_runs, published_width)
    return {"benchmark": benchmark, "result": result, "row": row, "metric": metric, "published": published.value,
            "published_low": published.low, "published_high": published.high, "reproduced": reproduced.value,
            "reproduced_low": reproduced.low, "reproduced_high": reproduced.high, "n_runs": n_runs, "scale": scale,
            "variant": variant, "within": verdict, "criterion": criterion, "informative": why == "",
            "not_informative_because": why, "deviation": deviation}


def write(rows: list[dict], path: str) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=COLUMNS)
    write_text(path, frame.to_csv(index=False, float_format="%.6g"))
    return frame
