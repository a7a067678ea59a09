"""Published numbers ship inside each benchmark's package as CSV (copied from shared/reference), never in code."""

from __future__ import annotations

from importlib import resources


def read_csv(package: str, name: str, model_slugs: dict | None = None):
    """The CSV `published/<name>` of `package` as a DataFrame ('#' lines are comments); a `model` column is
    mapped through `model_slugs` to the names our results use."""
    import pandas as pd

    with resources.files(package).joinpath("published", name).open() as fh:
        frame = pd.read_csv(fh, comment="#")
    if model_slugs is not None and "model" in frame:
        frame["model"] = frame["model"].map(model_slugs)
    return frame
