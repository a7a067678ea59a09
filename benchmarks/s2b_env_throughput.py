"""Throughput of the S2B meta-referential game: the vector environment against a Python loop of single environments.

    python benchmarks/s2b_env_throughput.py [--envs 256] [--steps 10000] [--loop-steps 300] [--warmup 1000]
                                            [--loop-warmup 150] [--seed 0] [--setting table2]

(a) vector: reprobench.s2b.vector_env.MetaReferentialGameVector with num_envs = --envs, one step() per vector step;
(b) loop: --envs MetaReferentialGame instances stepped one after the other in a plain Python loop, each reset as
    soon as it terminates (what the reference's sequential VecEnv does, and what gymnasium's SyncVectorEnv does
    minus its batching of observations).
Both take random legal actions (a decision drawn uniformly from Discrete(K + 1 + descriptive); the listener's message
is ignored by the environment). The setting is the paper's Table 2 listener setting (specs/s2b.md section 2.11):
descriptive, K = 0, listener feedback, V = 6, L = 3, R = 1, N_dim = 3, V in [2, 5], O = 1, component-focused-1shot;
--setting o4s2 gives the O = 4, S = 2 cell and o16s4 the O = 16, S = 4 one.

Throughput is env-steps/s: one vector step of n environments counts n. Episode generation at (auto)reset is part of
the timed work in both, since a training run pays for it. The untimed warm-up (--warmup vector steps, --loop-warmup
loop rounds) lets the episodes of the n environments fall out of step, so that resets are spread as in a long run;
the vector environment draws its episodes in batches ahead of need (at 256 environments, timelines about every 8
episodes per environment and sampled phases about every 32), so --steps vector steps should cover several of its
refills: the default 10000 covers about 18 and 5. Both rates are given in wall-clock time and in this process's CPU
time (on a machine shared with other work the CPU-time rates are the steadier ones). Prints both rates and the
ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from reprobench.s2b.env import MetaReferentialGame
from reprobench.s2b.vector_env import MetaReferentialGameVector

BASE = dict(descriptive=True, nbr_distractors=0, provide_listener_feedback=True, vocab_size=6, max_sentence_length=3,
            nbr_communication_rounds=1, nbr_latents=3, min_nbr_values_per_latent=2, max_nbr_values_per_latent=5)
SETTINGS = {
    "table2": dict(BASE, nbr_object_centric_samples=1, sampling_strategy="component-focused-1shot"),
    "o4s2": dict(BASE, nbr_object_centric_samples=4, sampling_strategy="component-focused-2shots"),
    "o16s4": dict(BASE, nbr_object_centric_samples=16, sampling_strategy="component-focused-4shots"),
}


def time_vector(kwargs: dict, n: int, steps: int, warmup: int, seed: int) -> tuple[float, float, int]:
    """env-steps/s (wall clock, CPU) of the vector environment over `steps` timed vector steps, and the episodes that
    ended in them."""
    env = MetaReferentialGameVector(num_envs=n, **kwargs)
    rng = np.random.default_rng(seed)
    n_dec = env.single_action_space["decision"].n
    length = env.single_action_space["communication_channel"].shape[0]
    comm = np.zeros((n, length), dtype=np.int64)
    env.reset(seed=seed)
    # actions drawn up front, so that the timed loop holds the environment's work only
    decisions = rng.integers(n_dec, size=(warmup + steps, n))
    for k in range(warmup):
        env.step({"decision": decisions[k], "communication_channel": comm})
    ends = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for k in range(warmup, warmup + steps):
        _, _, terminated, _, _ = env.step({"decision": decisions[k], "communication_channel": comm})
        ends += int(terminated.sum())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return n * steps / wall, n * steps / cpu, ends


def time_loop(kwargs: dict, n: int, steps: int, warmup: int, seed: int) -> tuple[float, float, int]:
    """env-steps/s (wall clock, CPU) of n single environments stepped one by one in a Python loop, over `steps`
    rounds of n steps, and the episodes that ended in them."""
    envs = [MetaReferentialGame(**kwargs) for _ in range(n)]
    rng = np.random.default_rng(seed)
    n_dec = envs[0].action_space["decision"].n
    length = envs[0].action_space["communication_channel"].shape[0]
    comm = np.zeros(length, dtype=np.int64)
    for i, env in enumerate(envs):
        env.reset(seed=seed + i)
    decisions = rng.integers(n_dec, size=(warmup + steps, n)).tolist()
    actions = [[{"decision": a, "communication_channel": comm} for a in row] for row in decisions]

    def rounds(lo: int, hi: int) -> int:
        done = 0
        for k in range(lo, hi):
            row = actions[k]
            for i, env in enumerate(envs):
                _, _, terminated, truncated, _ = env.step(row[i])
                if terminated or truncated:
                    env.reset()
                    done += 1
        return done

    rounds(0, warmup)
    wall, cpu = time.perf_counter(), time.process_time()
    ends = rounds(warmup, warmup + steps)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return n * steps / wall, n * steps / cpu, ends


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", type=int, default=256, help="number of environments (episodes at once)")
    parser.add_argument("--steps", type=int, default=10000, help="timed vector steps (each counts --envs env-steps)")
    parser.add_argument("--loop-steps", type=int, default=300, help="timed rounds of the loop (each --envs steps)")
    parser.add_argument("--warmup", type=int, default=1000, help="untimed vector steps first")
    parser.add_argument("--loop-warmup", type=int, default=150, help="untimed loop rounds first")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--setting", choices=sorted(SETTINGS), default="table2")
    args = parser.parse_args()
    kwargs = SETTINGS[args.setting]
    print(f"setting {args.setting}: {kwargs}")
    print(f"{args.envs} environments; vector: {args.warmup} warm-up + {args.steps} timed steps; loop: "
          f"{args.loop_warmup} warm-up + {args.loop_steps} timed rounds")
    vec_wall, vec_cpu, vec_ends = time_vector(kwargs, args.envs, args.steps, args.warmup, args.seed)
    loop_wall, loop_cpu, loop_ends = time_loop(kwargs, args.envs, args.loop_steps, args.loop_warmup, args.seed)
    for name, wall, cpu, ends, steps in (("vector (a)", vec_wall, vec_cpu, vec_ends, args.steps),
                                         ("loop   (b)", loop_wall, loop_cpu, loop_ends, args.loop_steps)):
        print(f"{name}: {wall:12,.0f} env-steps/s wall clock, {cpu:12,.0f} env-steps/s CPU time  ({ends} episodes "
              f"ended, ~{args.envs * steps / max(ends, 1):.0f} steps each)")
    print(f"ratio vector / loop: {vec_wall / loop_wall:.1f} x wall clock, {vec_cpu / loop_cpu:.1f} x CPU time")


if __name__ == "__main__":
    main()
