"""A user's class named in a config as 'package.module:Class' (calm.models, s2b.zsct.agents): its syntax, its
path-safe run id and its import."""

from __future__ import annotations

import importlib
import re

from reprobench.core.errors import ConfigError

USER_CLASS = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*):([A-Za-z_][A-Za-z0-9_]*)$")


def run_id(name: str) -> str:
    """The path-safe name of a model: a benchmark's own as it is, 'pkg.module.Class' for a user's 'pkg.module:Class'."""
    return name.replace(":", ".")


def load_class(spec: str, key: str):
    """The class named 'package.module:Class'; a ConfigError naming the config `key` when it cannot be imported."""
    module, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(key, f"cannot import the user's class '{spec}' ({exc})") from None
