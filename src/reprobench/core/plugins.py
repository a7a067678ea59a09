"""A user's class named in a config as 'package.module:Class' (calm.models, s2b.zsct.models, amtlb.architecture):
its syntax, its path-safe run id, its import, and the plan-time check every benchmark's Grid.check() runs on it."""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable, Sequence

from reprobench.core.errors import ConfigError

USER_CLASS = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*):([A-Za-z_][A-Za-z0-9_]*)$")


def run_id(name: str) -> str:
    """The path-safe name of a model: a benchmark's own as it is, 'pkg.module.Class' for a user's 'pkg.module:Class'."""
    return name.replace(":", ".")


def display_name(model: str, names: dict[str, str]) -> str:
    """A model's name in tables and legends: the paper's (`names`), or a user's class name followed by "(yours)"."""
    return names.get(model) or f"{model.rsplit('.', 1)[-1]} (yours)"


def spec_of(name: str) -> str | None:
    """The 'package.module:Class' of a run id made by run_id (the last dot was the colon: a class name has no dot);
    None for a benchmark's own model (its names have no dot)."""
    module, dot, cls = name.rpartition(".")
    return f"{module}:{cls}" if dot else None


def load_class(spec: str, key: str):
    """The class named 'package.module:Class'; a ConfigError naming the config `key` when it cannot be imported."""
    module, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(key, f"cannot import the user's class '{spec}' ({exc})") from None
    except Exception as exc:  # the user's module itself fails on import (a syntax error, a failing statement)
        raise ConfigError(key, f"importing the module of the user's class '{spec}' failed: "
                          f"{type(exc).__name__}: {exc}") from None


def find_module(spec: str, key: str) -> None:
    """A ConfigError naming `key` when the module of 'package.module:Class' is not on the Python path; found without
    importing it (for a plan that must not pay the module's imports)."""
    module = spec.partition(":")[0]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing, or not a package
        found = False
    if not found:
        raise ConfigError(key, f"cannot find the module '{module}' of '{spec}' on the Python path")


def torch_stub(cls: type, name: str) -> bool:
    """torch.nn.Module gives every module a `forward` that only raises NotImplementedError: not a method of its own
    (check_user_class's `unimplemented` for a torch module)."""
    return name == "forward" and getattr(getattr(cls, name), "__name__", "") == "_forward_unimplemented"


def check_user_class(spec: str, key: str, required: Sequence[str] = (), one_of: Sequence[str] = (),
                     unimplemented: Callable[[type, str], bool] | None = None) -> type:
    """The plan-time check of a user's class: it imports, is a class, has a callable of every name in `required` and
    of at least one name in `one_of`. `unimplemented(cls, name)` may say that an inherited method only raises (torch's
    nn.Module.forward). Returns the class; raises a ConfigError naming `key`, the class and the missing method."""
    if not USER_CLASS.match(spec):
        raise ConfigError(key, f"'{spec}' is not a user's class 'package.module:Class'")
    cls = load_class(spec, key)
    if not isinstance(cls, type):
        raise ConfigError(key, f"'{spec}' is not a class")

    def has(name):
        return callable(getattr(cls, name, None)) and not (unimplemented and unimplemented(cls, name))

    missing = [name for name in required if not has(name)]
    if missing:
        raise ConfigError(key, f"the class '{spec}' lacks the method{'s' * (len(missing) > 1)} "
                          f"{', '.join(repr(m) for m in missing)} (needed: {', '.join(required)})")
    if one_of and not any(has(name) for name in one_of):
        raise ConfigError(key, f"the class '{spec}' has no method {' or '.join(repr(m) for m in one_of)} (it needs "
                          "one of them)")
    return cls
