"""core.schema.validate: defaults filled in; one short line per error naming the key path, value and what is allowed."""

import copy
from pathlib import Path

import pytest
import yaml

from reprobench.core.errors import ConfigError
from reprobench.core.schema import validate

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "workflow" / "schemas"
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())


def section(key: str) -> dict:
    return copy.deepcopy(CONFIG[key])


def error_of(data, key) -> str:
    """The message of the ConfigError that validating `data` as config[key] (whole config: None) raises."""
    with pytest.raises(ConfigError) as info:
        validate(data, SCHEMAS / f"{key or 'config'}.schema.yaml", key)
    message = str(info.value)
    assert "any of the given schemas" not in message and "$schema" not in message
    return message


def test_default_sections_validate_and_get_their_defaults_filled_in():
    arith = section("arith")
    for name in ("threshold", "batch_size", "learning_rate", "figure_variant", "checkpoint_minutes"):
        del arith[name]
    del arith["sweeps"]["long_iterations"]
    assert validate(arith, SCHEMAS / "arith.schema.yaml", "arith") is arith
    assert arith["threshold"] == {"samples": 1000000, "epsilon": 1.0e-5, "seed": 0}  # a default {} is filled, too
    assert (arith["batch_size"], arith["learning_rate"], arith["checkpoint_minutes"]) == (128, 0.001, 10)
    assert arith["figure_variant"] == "faithful"  # a default behind a $ref
    assert arith["sweeps"]["long_iterations"] == []
    assert validate(section("arith"), SCHEMAS / "arith.schema.yaml", "arith") == CONFIG["arith"]  # documents them all

    wade = section("wade")
    for name in ("rules_per_chunk", "human_sessions", "figure_variant"):
        del wade[name]
    del wade["imdb"]["synthetic_train"], wade["imdb"]["synthetic_test"]
    validate(wade, SCHEMAS / "wade.schema.yaml", "wade")
    assert (wade["rules_per_chunk"], wade["human_sessions"], wade["figure_variant"]) == (64, [], "faithful")
    assert (wade["imdb"]["synthetic_train"], wade["imdb"]["synthetic_test"]) == (800, 400)
    assert validate(section("wade"), SCHEMAS / "wade.schema.yaml", "wade") == CONFIG["wade"]


def test_filled_defaults_are_copies():
    first, second = section("arith"), section("arith")
    del first["threshold"], second["threshold"]
    validate(first, SCHEMAS / "arith.schema.yaml", "arith")["threshold"]["samples"] = 5
    assert validate(second, SCHEMAS / "arith.schema.yaml", "arith")["threshold"]["samples"] == 1000000


def test_reca_rules_errors_name_the_branch_that_fits_the_value():
    def reca(rules):
        wade = section("wade")
        wade["reca_rules"] = rules
        return error_of(wade, "wade")

    message = reca([1, 256])
    assert "wade.reca_rules[1]" in message and "256" in message and "255" in message
    assert "unique" in reca([30, 30]) and "wade.reca_rules" in reca([30, 30])
    assert "'all'" in reca("some") and "'some'" in reca("some")
    assert "'all' or a list of integers" in reca(12345)
    assert "at least 1 item" in reca([])
    validate({**section("wade"), "reca_rules": "all"}, SCHEMAS / "wade.schema.yaml", "wade")


def leaves(value, path=()):
    """(path, value) of every leaf: scalars and lists of scalars; lists of mappings and mappings are walked."""
    if isinstance(value, dict):
        for name, item in value.items():
            yield from leaves(item, (*path, name))
    elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        for i, item in enumerate(value):
            yield from leaves(item, (*path, i))
    else:
        yield path, value


def dotted(key, path) -> str:
    return key + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


CASES = [(key, path) for key in ("arith", "wade") for path, _ in leaves(CONFIG[key])]


@pytest.mark.parametrize(("key", "path"), CASES, ids=[dotted(key, path) for key, path in CASES])
def test_every_leaf_of_the_wrong_type_is_named_in_a_short_message(key, path):
    data = section(key)
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = 12345 if isinstance(parent[path[-1]], str) else "bogus"
    message = error_of(data, key)
    assert dotted(key, path) in message, message
    assert ("'bogus'" if parent[path[-1]] == "bogus" else "12345") in message
    assert len(message.splitlines()) < 15


def test_the_systematic_test_covers_nested_leaves():
    names = {dotted(key, path) for key, path in CASES}
    assert {"arith.threshold.samples", "arith.sweeps.range[2].extrapolation", "arith.operations.cells.mul",
            "wade.imdb.synthetic_test", "wade.reca_rules", "arith.sweeps.long_iterations"} <= names


def test_unknown_and_missing_keys_are_named_in_full():
    arith = section("arith")
    arith["foo"] = 1
    message = error_of(arith, "arith")
    assert "arith.foo" in message and "unknown key" in message and "eval_every" in message

    arith = section("arith")
    arith["threshold"]["sample"] = 10
    message = error_of(arith, "arith")
    assert "arith.threshold.sample" in message and "allowed: samples, epsilon, seed" in message

    wade = section("wade")
    del wade["imdb"]["seeds"]
    assert "config key 'wade.imdb.seeds'" in error_of(wade, "wade") and "missing" in error_of(wade, "wade")

    arith = section("arith")
    arith["operations"]["cells"]["power"] = ["nalu"]
    message = error_of(arith, "arith")
    assert "arith.operations.cells" in message and "'power'" in message and "add, sub, mul" in message


def test_plain_words_for_each_kind_of_constraint():
    arith = section("arith")
    arith["operations"]["seeds"] = -3
    assert "config key 'arith.operations.seeds': must be >= 1, got -3" in error_of(arith, "arith")
    arith = section("arith")
    arith["sweeps"]["operation"] = "pow"
    assert "must be one of: add, sub, mul, div, squared, root, got 'pow'" in error_of(arith, "arith")
    arith = section("arith")
    arith["learning_rate"] = 0
    assert "must be > 0" in error_of(arith, "arith")
    arith = section("arith")
    arith["dataset"]["interpolation"] = [1, 2, 3]
    assert "config key 'arith.dataset.interpolation': must hold at most 2 items" in error_of(arith, "arith")
    wade = section("wade")
    wade["human_sessions"] = "x" * 1000
    assert len(error_of(wade, "wade")) < 200  # a long value is truncated
    wade["tasks"] = list(range(1, 300))
    message = error_of(wade, "wade")
    assert message.startswith("config key 'wade': 290 errors:\n  wade.human_sessions: must be a list, got 'xxx")
    assert len(message.splitlines()) == 12 and message.endswith("\n  ... and 280 more")


def test_several_errors_come_in_one_message_sorted_by_path():
    arith = section("arith")
    arith["sweeps"]["seeds"] = 0
    arith["batch_size"] = "x"
    arith["sweeps"]["range"][1]["interpolation"] = [-1, 2]
    del arith["dataset"]["subset"]
    message = error_of(copy.deepcopy(arith), "arith")
    assert message == error_of(arith, "arith")
    lines = message.splitlines()
    assert lines[0] == "config key 'arith': 4 errors:"
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "arith.batch_size", "arith.dataset.subset", "arith.sweeps.range[1].interpolation[0]", "arith.sweeps.seeds"]


def test_top_level_keys_are_printed_bare():
    config = copy.deepcopy(CONFIG)
    assert validate(config, SCHEMAS / "config.schema.yaml", None) == CONFIG
    config["threads"] = 0
    assert error_of(config, None).startswith("config key 'threads': must be >= 1, got 0")
    config["device"] = "gpu"
    del config["scale"]
    message = error_of(config, "")
    assert "\n  device: must match" in message and "\n  scale: required" in message and "\n  threads:" in message
