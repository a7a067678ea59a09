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
