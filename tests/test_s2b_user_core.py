"""A user's recurrent core in S2B's Table 4 (reprobench.s2b.user_core; tests/plugins/tiny_user_s2b_core.py): built in
the Archi LSTM's place with its own initialisation, trained by the R2D2 trainer (its state through the replay and the
burn-in), deterministic per seed, and stopped at the first step when it breaks the contract."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from reprobench.core.errors import ConfigError
from reprobench.s2b import cores, runs, train

GRU, TANH = "tiny_user_s2b_core:TinyGRUCore", "tiny_user_s2b_core:TanhRNNCore"


def _config(spec: str, budget: int = 240, every: int = 120):
    return runs.experiment_config("table4", spec, "faithful", 3, "tiny", budget, every)


def test_the_user_core_sits_in_table4s_preset_and_keeps_its_initialisation():
    config = _config(TANH)
    lstm = runs.experiment_config("table4", "lstm", "faithful", 3, "tiny", 240, 120)
    assert config.net.core == "user" and config.net.user_core == TANH and config.recon.enabled
    # everything but the core is the Archi LSTM's run
    assert dataclasses.replace(config, net=lstm.net) == lstm
    torch.manual_seed(0)
    net = train.Trainer(config).net
    core = net.core.inner
    assert type(core).__name__ == "TanhRNNCore" and isinstance(net.encoder, cores.ArchiEncoder)
    # PyTorch's Linear default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)); Archi's init (kaiming normal x sqrt(2), std
    # 2/sqrt(8) = 0.71 here) would exceed that bound by far
    bound = 1 / math.sqrt(core.linear.in_features)
    assert core.linear.weight.abs().max() <= bound and core.linear.bias.abs().max() <= bound
    # the reconstruction reads the user's recon_features: (B, recon_dim)
    state = net.core.initial_state(3)
    h, state = net.core(torch.zeros(3, net.core.in_dim), state)
    assert net.core.recon_features(h, state).shape == (3, 16) and net.core.recon_dim == 16


def test_a_user_core_trains_through_replay_and_burn_in_and_repeats_per_seed():
    # Table 4's cadence: 4 updates each 32 finished episodes (about 1,100 observations of the tiny run)
    first, again = train.run(_config(GRU, 1400, 700)), train.run(_config(GRU, 1400, 700))
    assert len(first) == 2 and first[-1]["observations"] >= 1400
    assert first[-1]["updates"] > 0  # the learner ran: sequences sampled with the GRU's stored state, burnt in
    assert repr(first) == repr(again)  # same seed, same records (repr: NaN losses before the first update)
    assert all(0 <= r["zsct_accuracy"] <= 1 for r in first)


def test_a_core_whose_state_breaks_its_spec_stops_at_the_first_step_naming_the_key():
    with pytest.raises(ConfigError, match=r"s2b\.experiments\.seeds\.table4.*WrongStateCore.*state_spec"):
        train.run(_config("tiny_user_s2b_core:WrongStateCore"))


def test_net_config_ties_core_user_to_its_class():
    with pytest.raises(ValueError, match="user_core"):
        cores.NetConfig(core="user")
    with pytest.raises(ValueError, match="user_core"):
        cores.NetConfig(core="lstm", user_core=GRU)
