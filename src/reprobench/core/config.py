"""Reading the pipeline's YAML config outside Snakemake (for `reprobench inspect`), merged like --configfile."""

from __future__ import annotations

import yaml

from reprobench.core.errors import ConfigError


def deep_merge(base: dict, override: dict) -> dict:
    out = dict(base)
    for key, value in override.items():
        out[key] = deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def load(paths: list[str]) -> dict:
    config: dict = {}
    for path in paths:
        try:
            with open(path) as fh:
                config = deep_merge(config, yaml.safe_load(fh) or {})
        except FileNotFoundError:
            raise ConfigError("config", f"file {path} does not exist") from None
        except yaml.YAMLError as exc:
            raise ConfigError("config", f"file {path} is not valid YAML ({exc})") from None
    return config


def expected_outputs(config: dict) -> dict[str, list[str]]:
    """Per benchmark, the curve files that the config asks for."""
    out = {}
    if "arith" in config:
        from reprobench.arith.grid import expected_curves

        out["arith"] = expected_curves(config["arith"])
    if "wade" in config:
        from reprobench.wade import grid as wade_grid

        out["wade"] = wade_grid.expected_curves(config["wade"])
    return out
