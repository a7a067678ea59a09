"""Validate a config section against its YAML JSON-Schema (draft 2020-12), filling in the schema's defaults.

This replaces snakemake.utils.validate, which fills defaults the same way but on error prints the whole schema and
config with the key buried, and for a oneOf says only "is not valid under any of the given schemas". Here each
error is one line: the dotted key path, what is allowed in plain words, and the offending value.
"""

import copy
from itertools import groupby
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator, validators

from reprobench.core.errors import ConfigError

NOUNS = {"integer": ("an integer", "integers"), "number": ("a number", "numbers"), "string": ("a string", "strings"),
         "boolean": ("true or false", "booleans"), "array": ("a list", "lists"), "object": ("a mapping", "mappings"),
         "null": ("null", "nulls")}
COMPARISONS = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
MAX_LINES = 10  # errors listed in one message
PROPERTIES = Draft202012Validator.VALIDATORS["properties"]


def validate(data: dict, schema_path, key: str | None) -> dict:
    """Validate `data` against the schema at `schema_path`, fill in its defaults in place and return it.

    `key` is where `data` sits in the config ("wade" for config["wade"]): it prefixes every path in the messages
    (wade.reca_rules[0]); pass "" or None for the whole config, whose keys are then printed bare (threads).
    Raises ConfigError: for one error, keyed by its path; for several, keyed by `key`, one line per error.
    """
    root = yaml.safe_load(Path(schema_path).read_text())

    def fill_defaults(validator, properties, instance, schema):
        # As snakemake.utils.validate: a missing property gets its default before the properties are validated, so
        # that a default {} is then filled by its own properties' defaults. Copied: the schema's default stays {}.
        if validator.is_type(instance, "object"):
            for name, sub in properties.items():
                sub = sub if "default" in sub else _resolve(sub, root)
                if "default" in sub:
                    instance.setdefault(name, copy.deepcopy(sub["default"]))
        yield from PROPERTIES(validator, properties, instance, schema)

    checker = validators.extend(Draft202012Validator, {"properties": fill_defaults})(root)
    found = {(tuple(path), text) for error in checker.iter_errors(data) for path, text in _explain(error, root)}
    if not found:
        return data
    # sorted by path (indices numerically, before names at the same place), then message: deterministic
    lines = [(_dotted(key, path), text) for path, text in
             sorted(found, key=lambda item: ([(isinstance(part, str), part) for part in item[0]], item[1]))]
    if len(lines) == 1:
        raise ConfigError(*lines[0])
    shown = [f"  {path}: {text}" for path, text in lines[:MAX_LINES]]  # e.g. each of 300 items out of range
    more = [f"  ... and {len(lines) - MAX_LINES} more"] if len(lines) > MAX_LINES else []
    raise ConfigError(key or "(top level)", "\n".join([f"{len(lines)} errors:", *shown, *more]))


def _explain(error, root) -> list[tuple[tuple, str]]:
    """(path, message) of each problem behind one jsonschema error."""
    path = tuple(error.absolute_path)
    if error.validator in ("oneOf", "anyOf") and error.context:
        branches = [list(errors) for _, errors in groupby(error.context, lambda e: e.relative_schema_path[0])]
        # The branches whose type the value has (no type error at the value itself) tell what is wrong with it;
        # when none has, say what each branch allows instead of "not valid under any of the given schemas".
        fitting = [errors for errors in branches
                   if not any(e.validator == "type" and not e.relative_path for e in errors)]
        if fitting:
            return [found for errors in fitting for e in errors for found in _explain(e, root)]
        allowed = " or ".join(_describe(_resolve(branch, root)) for branch in error.validator_value)
        return [(path, f"must be {allowed}, got {_short(error.instance)}")]
    if error.validator == "required":  # one line per missing key, naming it in full
        return [(path + (name,), "required, but missing") for name in error.validator_value
                if name not in error.instance]
    if error.validator == "additionalProperties" and error.validator_value is False:
        known = list(error.schema.get("properties", {}))
        return [(path + (name,), f"unknown key (allowed: {', '.join(known)})") for name in error.instance
                if name not in known]
    text, got = _allowed(error), f", got {_short(error.instance)}"
    if text is None:  # a keyword these schemas do not use: jsonschema's own words
        text, got = error.message[:120], ""
    elif "propertyNames" in error.schema_path:  # the instance is a key of the mapping at `path`, not a value
        text, got = f"key {_short(error.instance)} {text}", ""
    description = error.schema.get("description", "") if isinstance(error.schema, dict) else ""
    return [(path, f"{text}{got}" + (f" ({description})" if description and len(description) <= 60 else ""))]


def _allowed(error) -> str | None:
    """What the schema keyword that failed allows, in plain words (None: a keyword these schemas do not use)."""
    kind, value = error.validator, error.validator_value
    if kind == "type":
        return "must be " + " or ".join(NOUNS[t][0] for t in ([value] if isinstance(value, str) else value))
    if kind == "enum":
        return "must be " + _describe({"enum": value})
    if kind in COMPARISONS:
        return f"must be {COMPARISONS[kind]} {value}"
    if kind in ("minItems", "maxItems", "minProperties", "maxProperties"):
        noun = "item" if kind.endswith("Items") else "key"
        return f"must hold at {'least' if kind.startswith('min') else 'most'} {value} {noun}{'s' * (value != 1)}"
    if kind == "uniqueItems":
        return "items must be unique"
    if kind == "pattern":
        return f"must match the pattern {value}"
    return None


def _describe(schema) -> str:
    """What one oneOf/anyOf branch allows: 'all', one of: a, b, an integer, a list of integers."""
    if "enum" in schema:
        values = schema["enum"]
        return repr(values[0]) if len(values) == 1 else "one of: " + ", ".join(str(v) for v in values)
    kind = schema.get("type", "")
    if kind == "array" and isinstance(schema.get("items"), dict) and "type" in schema["items"]:
        return "a list of " + NOUNS[schema["items"]["type"]][1]
    return NOUNS[kind][0] if kind in NOUNS else "valid under its schema"


def _resolve(schema, root):
    """Follow local references ("#/$defs/name"), the only kind these schemas use."""
    while isinstance(schema, dict) and "$ref" in schema:
        target = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        schema = target
    return schema


def _dotted(key, path) -> str:
    """wade.reca_rules[0]; top-level keys bare when key is "" or None."""
    text = key or ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text or "(top level)"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."

