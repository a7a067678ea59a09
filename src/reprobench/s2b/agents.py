"""The listener-agent interface of the S2B benchmark: a user's agent trains and is scored as the R2D2 listener is.

A user's agent is a class named in the config as 'package.module:Class' (`s2b.zsct.models`, next to "r2d2"). Each
Table 2 cell (O, S, variant, seed) trains one instance on the meta-referential game with the posdis speaker for the
cell's observation budget and evaluates it by train.evaluate, the test-only protocol of the R2D2 runs (greedy
episodes on the same reseeded evaluation environments), so its row lands in Table 2 and comparison.csv next to
R2D2's. The interface:

    class MyAgent:
        def __init__(self, observation_space, action_space, num_envs: int, seed: int, device: str): ...
        def act(self, observation, info): ...              # -> actions of the num_envs environments (may explore)
        def observe(self, observation, reward, terminated, truncated, info) -> None: ...   # the step's outcome; learn
        def policy(self): ...                              # -> a frozen greedy policy for evaluation, with
                                                           #    act(observation, info) and observe(...) as above

observation and info are the batched ones of reprobench.s2b.vector_env.MetaReferentialGameVector (one row per
environment; the spaces passed in are the single environment's); actions are what its step() takes: an int array of
decisions in Discrete(K + 1 + descriptive), or the dict of its action space (the listener's message is ignored).
Autoreset is next-step: after a row terminates, its next action is ignored and it returns the next episode's first
observation. The policy meets fresh environments, as many as config.eval_actors: it sees their number in its first
act() call. info holds the game's bookkeeping, target_decision included: an honest agent must not read it (the
scripted agent of the tests does, to score 100%). The variant (faithful / corrected) changes the R2D2 learner only.
Observations count real transitions summed over environments, as for R2D2. A user's run keeps no checkpoint: a
killed job starts again.
"""

from __future__ import annotations

import numpy as np

from reprobench.core.progress import Progress
from reprobench.s2b.train import TrainConfig, evaluate, evaluation_due
from reprobench.s2b.vector_env import MetaReferentialGameVector


def run_agent(cls, config: TrainConfig, device: str = "cpu", progress: bool = False) -> list[dict]:
    """Train an instance of `cls` on config.env with config.n_actors environments to config.budget observations,
    recording an evaluation (train.evaluate) at the first step past every multiple of eval_every and at the budget;
    returns the records (observations, env_steps, episodes, zsct_accuracy and evaluate's accuracies)."""
    env = MetaReferentialGameVector(num_envs=config.n_actors, seed=config.seed, **config.env)
    agent = cls(env.single_observation_space, env.single_action_space, num_envs=config.n_actors, seed=config.seed,
                device=device)
    obs, info = env.reset(seed=config.seed)
    pending = np.zeros(config.n_actors, dtype=bool)  # rows whose next step is an autoreset (not an observation)
    observations = env_steps = episodes = 0
    next_eval, records = config.eval_every, []
    bar = Progress(config.budget, "s2b user agent") if progress else None
    while observations < config.budget:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        agent.observe(obs, reward, terminated, truncated, info)
        active = ~pending
        observations += int(active.sum())
        env_steps += 1
        episodes += int((terminated & active).sum())
        pending = np.asarray(terminated, dtype=bool).copy()
        if bar is not None:
            bar.update(int(active.sum()))
        if evaluation_due(observations, next_eval, config.budget, records[-1]["observations"] if records else None):
            evaluation = evaluate(agent.policy(), config)
            records.append({"observations": observations, "env_steps": env_steps, "episodes": episodes,
                            "zsct_accuracy": evaluation["accuracy/test"], **evaluation})
            while next_eval <= observations:
                next_eval += config.eval_every
    if bar is not None:
        bar.close()
    return records
