"""Frames per second of AMTLB's training loop against the raw emulator and Stable-Baselines3's PPO, on one game.

    python benchmarks/amtlb_throughput.py [--game pong] [--envs 8] [--threads 2] [--frames 16384]
                                          [--device cpu] [--seed 0] [--systems raw,ours,sb3] [--repeats 1]

Needs ale-py (a dependency) and, for the SB3 row, the optional extra: pip install -c constraints.txt -e '.[bench]'.

All three rows step the same emulator: one ale_py.AtariVectorEnv of --envs slots and --threads emulator threads with
the benchmark's settings (full action space, sticky actions 0.25, frameskip 4, 84x84 grayscale, max-pool, 4-stack,
30 no-ops, fire reset, 108k-frame cap, raw rewards, same-step autoreset). Frames = 4 x agent steps (the budget's
unit; the no-op and fire-reset frames of new episodes are not counted). torch runs on --threads threads.
- raw: uniform random actions from numpy, no learning: the emulator's ceiling.
- ours: reprobench.amtlb.ppo.PPO driven the way the benchmark drives an architecture (act(observations, rewards,
  episode_starts) once per agent step), its own hyperparameters (CleanRL's Atari PPO: 128 steps per slot, 4 epochs
  of 4 minibatches). The loop makes one act() call more than it steps the emulator, so that it runs the update of
  its last rollout, as SB3's learn() does: both rows then hold --frames / (512 x envs) updates.
- sb3: stable_baselines3.PPO("CnnPolicy") learn() with the same hyperparameters (lr 2.5e-4 annealed linearly to 0,
  n_steps 128, batch 256 for 8 envs, 4 epochs, clip 0.1 fixed, value clipping 0.1, entropy 0.01, value coefficient
  0.5, gradient norm 0.5; SB3's own defaults give Adam eps 1e-5, orthogonal init and the same Nature CNN, 1,693,875
  parameters). Its environment is the same AtariVectorEnv behind a thin SB3 VecEnv adapter (rewards clipped to
  their sign there, as SB3 does not clip inside its learner), not SB3's make_atari_env: that way the two training
  rows differ only in the learner and its loop; SB3's AtariWrapper would need opencv (not a dependency of this
  project) and a NoFrameskip id, and its DummyVecEnv steps the slots one after another in Python.
  One remaining difference: SB3's value loss is the mean squared error without CleanRL's factor 1/2 (no cost).
Printed: frames/s of each row, our loop's time split (emulator, acting, updates), ours/SB3 and ours/raw. With
--repeats R the rows run R times, interleaved (raw, ours, sb3, raw, ...), and the ratios use each row's best run: on a
shared machine the best run is the one least slowed by other processes.
"""

from __future__ import annotations

import argparse
import time

import ale_py
import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from reprobench.amtlb.ppo import PPO

FRAMESKIP = 4


def make_env(game: str, envs: int, threads: int) -> ale_py.AtariVectorEnv:
    # AtariVectorEnv's own defaults differ from the benchmark's (sticky 0.0, reward clipping): every setting explicit
    return ale_py.AtariVectorEnv(game, envs, num_threads=threads, full_action_space=True,
                                 repeat_action_probability=0.25, frameskip=FRAMESKIP, noop_max=30,
                                 use_fire_reset=True, episodic_life=False, max_num_frames_per_episode=108_000,
                                 reward_clipping=False, autoreset_mode=AutoresetMode.SAME_STEP)


def raw(args, steps: int) -> dict:
    env = make_env(args.game, args.envs, args.threads)
    env.reset(seed=args.seed)
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    for _ in range(steps):
        env.step(rng.integers(0, 18, size=args.envs))
    seconds = time.perf_counter() - start
    env.close()
    return {"seconds": seconds}


def ours(args, steps: int) -> dict:
    env = make_env(args.game, args.envs, args.threads)
    obs, _ = env.reset(seed=args.seed)
    agent = PPO(args.envs, args.seed, args.device, total_steps=steps)
    rewards, starts = np.zeros(args.envs), np.ones(args.envs, dtype=bool)
    t_env = t_update = 0.0
    start = time.perf_counter()
    for step in range(steps + 1):  # the last call runs the last rollout's update
        t0 = time.perf_counter()
        updates = agent.updates
        actions = agent.act(obs, rewards, starts)
        t1 = time.perf_counter()
        if agent.updates != updates:
            t_update += t1 - t0  # the acting part of that call is a small share of it
        if step == steps:
            break
        obs, rewards, terminated, truncated, _ = env.step(actions)
        starts = terminated | truncated
        t_env += time.perf_counter() - t1
    seconds = time.perf_counter() - start
    env.close()
    return {"seconds": seconds, "env": t_env, "update": t_update, "act": seconds - t_env - t_update,
            "updates": agent.updates}


def sb3(args, steps: int) -> dict:
    from stable_baselines3 import PPO as SB3PPO
    from stable_baselines3.common.vec_env import VecEnv

    class AleVecEnv(VecEnv):
        """The benchmark's AtariVectorEnv as an SB3 VecEnv; SB3 learns from sign-clipped rewards."""

        def __init__(self, env, seed):
            super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)
            self.env, self.seed_value, self.actions = env, seed, None

        def reset(self):
            obs, _ = self.env.reset(seed=self.seed_value)
            return obs

        def step_async(self, actions):
            self.actions = np.asarray(actions, dtype=np.int64)

        def step_wait(self):
            obs, rewards, terminated, truncated, info = self.env.step(self.actions)
            dones = terminated | truncated
            infos = [{} for _ in range(self.num_envs)]
            for i in np.flatnonzero(dones):  # what SB3 reads to bootstrap a truncated episode
                infos[i] = {"terminal_observation": info["final_obs"][i],
                            "TimeLimit.truncated": bool(truncated[i] and not terminated[i])}
            return obs, np.sign(rewards).astype(np.float32), dones, infos

        def close(self):
            self.env.close()

        def get_attr(self, attr_name, indices=None):
            return [None] * len(self._get_indices(indices))

        def set_attr(self, attr_name, value, indices=None):
            pass

        def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
            return [None] * len(self._get_indices(indices))

        def env_is_wrapped(self, wrapper_class, indices=None):
            return [False] * len(self._get_indices(indices))

    venv = AleVecEnv(make_env(args.game, args.envs, args.threads), args.seed)
    model = SB3PPO("CnnPolicy", venv, learning_rate=lambda remaining: 2.5e-4 * remaining, n_steps=128,
                   batch_size=128 * args.envs // 4, n_epochs=4, gamma=0.99, gae_lambda=0.95, clip_range=0.1,
                   clip_range_vf=0.1, normalize_advantage=True, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5,
                   seed=args.seed, device=args.device, verbose=0)
    params = sum(p.numel() for p in model.policy.parameters())
    start = time.perf_counter()
    model.learn(total_timesteps=steps * args.envs)
    seconds = time.perf_counter() - start
    venv.close()
    return {"seconds": seconds, "params": params}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", default="pong", help="ale-py ROM id (default pong)")
    parser.add_argument("--envs", type=int, default=8, help="emulator slots (default 8)")
    parser.add_argument("--threads", type=int, default=2, help="emulator threads and torch threads (default 2)")
    parser.add_argument("--frames", type=int, default=16_384,
                        help="frames per row, rounded down to whole 128-step rollouts (default 16384)")
    parser.add_argument("--device", default="cpu", help="torch device of both learners (default cpu)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--systems", default="raw,ours,sb3", help="rows to measure (default raw,ours,sb3)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each row, interleaved (default 1)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    rollouts = args.frames // (FRAMESKIP * 128 * args.envs)
    if rollouts < 1:
        parser.error(f"--frames {args.frames} is less than one rollout ({FRAMESKIP * 128 * args.envs} frames)")
    steps = rollouts * 128  # agent steps per slot
    frames = steps * args.envs * FRAMESKIP
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    print(f"AMTLB throughput: {args.game}, {args.envs} envs, {args.threads} threads, device {args.device}, "
          f"torch {torch.__version__}, ale-py {ale_py.__version__}; {frames:,} frames per row ({rollouts} rollouts "
          f"of 128 steps x {args.envs} envs; frames = 4 x agent steps)", flush=True)
    fps = {}
    for name in [name for _ in range(args.repeats) for name in systems]:
        result = {"raw": raw, "ours": ours, "sb3": sb3}[name](args, steps)
        rate = frames / result["seconds"]
        fps[name] = max(fps.get(name, 0.0), rate)
        line = f"{name:>4}: {rate:10,.0f} frames/s  ({result['seconds']:.1f} s)"
        if name == "ours":
            line += (f"; emulator {result['env']:.1f} s, acting {result['act']:.1f} s, {result['updates']} updates "
                     f"{result['update']:.1f} s")
        if name == "sb3":
            import stable_baselines3

            line += f"; stable-baselines3 {stable_baselines3.__version__}, {result['params']:,} parameters"
        print(line, flush=True)
    if "ours" in fps and "sb3" in fps:
        print(f"ours / SB3: {fps['ours'] / fps['sb3']:.2f}")
    if "ours" in fps and "raw" in fps:
        print(f"ours / raw: {fps['ours'] / fps['raw']:.3f}")


if __name__ == "__main__":
    main()
