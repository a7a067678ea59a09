"""A user's arithmetic unit (docs/PLUGINS.md, arith; tests/plugins/tiny_user_arith.py on the path through conftest):
the plan-time check, the run ids and rule names, the trainer's steps and evaluation, the shape check, sparsity."""

import math

import numpy as np
import pytest
import torch

from reprobench.arith import grid as arith_grid
from reprobench.arith import summary
from reprobench.arith.train import Steps, TrainConfig, train_members
from reprobench.core.errors import ConfigError
from reprobench.core.plugins import spec_of

KEY = "arith.operations.cells / arith.sweeps.models"


def section(cells, sweep_models=("nalu",)):
    import yaml

    from conftest import ROOT

    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())["arith"]
    cfg["operations"]["cells"] = cells
    cfg["sweeps"]["models"] = list(sweep_models)
    return cfg


@pytest.mark.parametrize("spec, message", [("tiny_user_arith:NoForward", "lacks the method 'forward'"),
                                           ("tiny_user_arith:Missing", "cannot import")])
def test_a_bad_unit_stops_at_plan_time_naming_the_key(spec, message):
    with pytest.raises(ConfigError, match=message) as err:
        arith_grid.Grid(section({"add": [spec]})).check()
    assert KEY in str(err.value)


def test_a_unit_gets_its_run_id_in_paths_and_a_valid_rule_name():
    g = arith_grid.Grid(section({"add": ["tiny_user_arith:ExactAdd", "linear"]}))
    g.check()
    assert g.user_models() == {"tiny_user_arith.ExactAdd": "tiny_user_arith:ExactAdd"}
    pack = next(p for p in g.packs() if p.model == "tiny_user_arith.ExactAdd")
    assert pack.rule.isidentifier() and pack.rule.startswith("arith_train_tiny_user_arith_ExactAdd_n100")
    assert "/model=tiny_user_arith.ExactAdd/operation=add/" in pack.curves()[0]
    assert spec_of("tiny_user_arith.ExactAdd") == "tiny_user_arith:ExactAdd" and spec_of("nac_add") is None


def setting(model, operation="add"):
    return arith_grid.Setting("operations", model, operation, 100, 2, 0.5, 0.25, (1.0, 2.0), (2.0, 6.0))


CFG = TrainConfig(iterations=60, batch_size=16, learning_rate=1e-3, eval_every=20, validation_size=200,
                  test_size=200, dtype="float32")


def test_the_exact_unit_has_zero_error_and_no_sparsity_and_the_constant_learns_one_number():
    settings = [setting("tiny_user_arith.ExactAdd")] * 2
    curves, _ = train_members(settings, [0, 1], CFG, "cpu", progress=False)
    for c in curves:
        test = [v for s, m, v in zip(c["split"], c["metric"], c["value"]) if s == "test"]
        weights = [v for s, v in zip(c["split"], c["value"]) if s == "weights"]
        assert max(test) < 1e-9 and all(math.isnan(w) for w in weights)  # float32 sums of the exact terms
    run = Steps([setting("tiny_user_arith.Constant")] * 2, [0, 1], CFG, "cpu")
    first = run.step(0)
    for k in range(1, 40):
        run.step(k)
    assert (first > 1).all()  # (a + b)^2 of sums of 25 inputs in [1, 2]: far from 0
    assert torch.allclose(run.net.units[0].value, torch.tensor(40 * 1e-3), rtol=0.05)  # Adam moves ~lr per step
    errors = run.net.sparsity_error()
    assert errors.shape == (2,) and float(errors[0]) == pytest.approx(min(0.04, 0.96), rel=0.05)


def test_a_wrong_shape_stops_at_the_first_step_naming_the_key():
    run = Steps([setting("tiny_user_arith.WrongShape")], [0], CFG, "cpu")
    with pytest.raises(ConfigError, match=r"returned \(16, 2\) for a batch of \(16, 100\).*\(batch,\) or \(batch, 1\)"):
        run.step(0)


def test_no_sparsity_statistic_without_weights():
    import pandas as pd

    rows = pd.DataFrame({"experiment": "operations", "model": "tiny_user_arith.ExactAdd", "operation": "add",
                         "input_size": 100, "hidden_size": 2, "overlap": 0.5, "subset": 0.25, "interpolation": "1_2",
                         "extrapolation": "2_6", "variant": "faithful", "solved": True, "solved_at": [0.0, 0.0],
                         "sparsity_at_best": np.nan, "crashed": False, "threshold": 1e-5, "iterations": 60,
                         "scale": "small"})
    rows = rows.reindex(columns=list(dict.fromkeys(summary.GROUP_KEYS + list(rows.columns))))
    out = summary.group_statistics(rows).iloc[0]
    assert out["success"] == 1.0 and math.isnan(out["sparsity_error"])
