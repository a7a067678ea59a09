"""RecallGameVector against a loop of single RecallGame environments (gymnasium's SyncVectorEnv, next-step
autoreset): the same observations, rewards, terminations and infos, step for step."""

from __future__ import annotations

import time

import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from reprobench.s2b.recall import RecallGame
from reprobench.s2b.recall_vector import RecallGameVector

N = 5
NAMES = ("obs", "reward", "terminated", "truncated", "info")


def loop_of(n, seed=None, **kwargs):
    """The reference: n single envs, sub-environment i seeded with seed + i."""
    return SyncVectorEnv([lambda i=i: RecallGame(**kwargs, seed=None if seed is None else seed + i) for i in range(n)],
                         autoreset_mode=AutoresetMode.NEXT_STEP)


def assert_same_steps(vec, loop, rng, steps, label=""):
    """Steps both with the same random actions (no-op included); returns how many episodes ended."""
    ends = 0
    for step in range(steps):
        actions = rng.integers(vec.noop + 1, size=vec.num_envs)
        got, want = vec.step(actions), loop.step(actions)
        for name, a, b in zip(NAMES, got, want):
            assert data_equivalence(a, b, exact=True), (label, step, name)
        ends += int(got[2].sum())
    return ends


@pytest.mark.parametrize("variant", ["faithful", "corrected"])
@pytest.mark.parametrize("representation", ["scs", "ohe"])
def test_vector_env_equals_a_loop_of_single_envs(representation, variant):
    kwargs = dict(representation=representation, variant=variant)
    if representation == "scs":  # small spaces: short SCS episodes, so several autoresets in 400 steps
        kwargs.update(min_nbr_values_per_latent=2, max_nbr_values_per_latent=3)
    vec = RecallGameVector(N, **kwargs, seed=None)
    loop = loop_of(N, **kwargs)
    assert vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert vec.single_observation_space == loop.single_observation_space
    assert vec.single_action_space == loop.single_action_space
    assert vec.observation_space == loop.observation_space and vec.action_space == loop.action_space
    first = vec.reset(seed=7)
    assert data_equivalence(first, loop.reset(seed=7), exact=True)
    assert vec.observation_space.contains(first[0])
    ends = assert_same_steps(vec, loop, np.random.default_rng(0), 400)
    assert ends >= 3 * N  # autoresets were exercised
    assert not data_equivalence(vec.reset(seed=8)[0], loop.reset(seed=7)[0])  # the check can tell seeds apart


def test_seeds_as_constructor_int_list_and_mid_run_reseeding():
    kwargs = dict(representation="ohe")
    vec = RecallGameVector(N, **kwargs, seed=3)  # the constructor's seed: sub-environment i gets 3 + i
    loop = loop_of(N, seed=3, **kwargs)
    assert data_equivalence(vec.reset(), loop.reset(), exact=True)
    rng = np.random.default_rng(1)
    assert_same_steps(vec, loop, rng, 70, "constructor seed")
    assert data_equivalence(vec.reset(), loop.reset(), exact=True)  # unseeded: the generators go on
    assert_same_steps(vec, loop, rng, 70, "continued")
    seeds = [5, None, 6, None, 9]  # a list: reseeds some, the others go on
    assert data_equivalence(vec.reset(seed=seeds), loop.reset(seed=seeds), exact=True)
    assert_same_steps(vec, loop, rng, 70, "list")
    obs, info = vec.reset(seed=11)  # an int mid-run: 11 + i, as a fresh loop seeded so
    fresh = loop_of(N, **kwargs)
    assert data_equivalence((obs, info), fresh.reset(seed=11), exact=True)
    assert_same_steps(vec, fresh, rng, 70, "int")
    assert vec.observation_space.contains(obs)


def test_bad_inputs_raise_naming_the_argument():
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="num_envs"):
            RecallGameVector(bad)
    with pytest.raises(ValueError, match="representation"):  # RecallGame's own checks
        RecallGameVector(2, representation="rgb")
    with pytest.raises(ValueError, match="min_nbr_values_per_latent"):
        RecallGameVector(2, min_nbr_values_per_latent=4, max_nbr_values_per_latent=3)
    with pytest.raises(ValueError, match="seed"):
        RecallGameVector(2, seed=-1)
    vec = RecallGameVector(3)
    with pytest.raises(RuntimeError, match="reset"):
        vec.step(np.zeros(3, dtype=np.int64))
    vec.reset(seed=0)
    for actions, match in ((np.array([0, 6, 1]), "range|lie in"), (np.array([0, -1, 1]), "lie in"),
                           (np.zeros(2, dtype=np.int64), "shape"), (np.zeros((3, 1), dtype=np.int64), "shape"),
                           (np.zeros(3), "integer"), (np.zeros(3, dtype=bool), "integer")):
        with pytest.raises(ValueError, match=f"actions.*({match})"):
            vec.step(actions)
    with pytest.raises(ValueError, match="seed"):
        vec.reset(seed=[1, 2])
    vec.step(np.full(3, vec.noop))  # the no-op is a valid action


def test_throughput_against_the_loop(capsys):
    """Measured, not asserted: env-steps/s of the vector env and of the loop at 256 sub-environments."""
    n, steps, rates = 256, 100, {}
    for name, env in (("vector", RecallGameVector(n)), ("loop", loop_of(n, seed=1337))):
        env.reset()
        actions = np.random.default_rng(0).integers(6, size=(steps, n))
        start = time.perf_counter()
        for a in actions:
            env.step(a)
        rates[name] = n * steps / (time.perf_counter() - start)
    with capsys.disabled():
        print(f"\nrecall, 256 envs (scs): vector {rates['vector']:,.0f} env-steps/s, loop {rates['loop']:,.0f} "
              f"env-steps/s ({rates['vector'] / rates['loop']:.1f}x)")
