"""AMTLB's architecture API (reprobench.amtlb.api): the builtins, a user's class named in the config
(tests/plugins/scripted_atari.py, on sys.path through conftest), the errors for a bad name, and the random agent."""

import io

import numpy as np
import pytest
import torch
from scripted_atari import ScriptedAtari

from reprobench.amtlb import api
from reprobench.amtlb.api import REQUIRED_METHODS, Architecture, architecture_class, make_architecture
from reprobench.amtlb.ppo import PPO
from reprobench.amtlb.random_agent import RandomAgent
from reprobench.core.errors import ConfigError

USER = "scripted_atari:ScriptedAtari"


def test_builtins():
    assert api.BUILTIN == {"ppo": PPO, "random": RandomAgent}
    assert architecture_class("ppo") is PPO and architecture_class("random") is RandomAgent
    assert issubclass(PPO, Architecture) and issubclass(RandomAgent, Architecture)
    agent = make_architecture("random", num_envs=3, seed=0, device="cpu", total_steps=None)
    assert isinstance(agent, RandomAgent) and agent.num_envs == 3


def test_a_user_class_from_the_config():
    assert architecture_class(USER) is ScriptedAtari
    assert not issubclass(ScriptedAtari, Architecture)  # duck typing: the methods are all it needs
    agent = make_architecture(USER, num_envs=2, seed=0, device="cpu", total_steps=100)
    obs = np.zeros((2, 4, 84, 84), dtype=np.uint8)
    # FIRE at an episode's start, then the actions cycle: 1, 1, 2, 3, ... for slot 0; slot 1 restarts at step 2
    a0 = agent.act(obs, np.zeros(2), np.array([True, True]))
    a1 = agent.act(obs, np.array([1.0, 0.0]), np.array([False, False]))
    a2 = agent.act(obs, np.array([0.0, 2.0]), np.array([False, True]))
    assert a0.tolist() == [1, 1] and a1.tolist() == [1, 1] and a2.tolist() == [2, 1]
    assert (agent.calls, agent.episodes, agent.score) == (3, 3, 3.0)
    twin = agent.clone()
    assert twin.state_dict() == agent.state_dict() and twin.phase is not agent.phase


@pytest.mark.parametrize("spec, says", [
    ("no_such_module_anywhere:Agent", "cannot import"),
    ("scripted_atari:NoSuchClass", "cannot import"),
    ("not a path", "unknown architecture"),
    ("dqn", "unknown architecture"),
])
def test_a_name_that_does_not_resolve(spec, says):
    with pytest.raises(ConfigError, match=says) as err:
        architecture_class(spec)
    assert err.value.key == "amtlb.architecture" and spec in str(err.value)


class NoLoad:  # a user's class that forgot one method
    def __init__(self, num_envs, seed, device="cpu", total_steps=None):
        pass

    def act(self, observations, rewards, episode_starts):
        return np.zeros(len(observations), dtype=np.int64)

    clone = save = state_dict = load_state_dict = act


def test_a_class_that_lacks_a_method():
    with pytest.raises(ConfigError, match="lacks the required method 'load'") as err:
        architecture_class(f"{__name__}:NoLoad")
    assert err.value.key == "amtlb.architecture"
    with pytest.raises(ConfigError, match="amtlb.generalist.architecture"):
        architecture_class(f"{__name__}:NoLoad", key="amtlb.generalist.architecture")
    with pytest.raises(ConfigError, match="is not a class"):
        architecture_class(f"{__name__}:USER")
    assert set(REQUIRED_METHODS) == {"act", "clone", "save", "load", "state_dict", "load_state_dict"}


def test_random_agent_draws_uniformly_and_resumes():
    agent = RandomAgent(num_envs=6, seed=4)
    obs = np.zeros((6, 4, 84, 84), dtype=np.uint8)
    draws = np.concatenate([agent.act(obs, np.zeros(6), np.zeros(6, bool)) for _ in range(3000)])
    assert draws.dtype == np.int64 and draws.min() == 0 and draws.max() == 17
    # 18,000 uniform draws: 1,000 expected per action, standard deviation sqrt(18000 * 1/18 * 17/18) ~ 30.7;
    # 6 standard deviations either side
    assert np.all(np.abs(np.bincount(draws, minlength=18) - 1000) < 185)
    buffer = io.BytesIO()
    torch.save(agent.state_dict(), buffer)
    buffer.seek(0)
    resumed = RandomAgent(num_envs=6, seed=999)
    resumed.load_state_dict(torch.load(buffer, weights_only=True))
    assert np.array_equal(agent.act(obs, np.zeros(6), np.zeros(6, bool)),
                          resumed.act(obs, np.zeros(6), np.zeros(6, bool)))
    twin = agent.clone()
    assert np.array_equal(agent.act(obs, np.zeros(6), np.zeros(6, bool)), twin.act(obs, np.zeros(6), np.zeros(6, bool)))
    a, b = RandomAgent(6, seed=1), RandomAgent(6, seed=1)
    assert np.array_equal(a.act(obs, None, None), b.act(obs, None, None))


def test_random_agent_files(tmp_path):
    agent = RandomAgent(num_envs=2, seed=0)
    agent.save(tmp_path / "w")
    RandomAgent(num_envs=2, seed=1).load(tmp_path / "w")
    (tmp_path / "other").write_bytes(b"PK\x03\x04\xff\xfe")
    with pytest.raises(ValueError, match="not a random agent"):
        agent.load(tmp_path / "other")
