"""Does our PPO learn? One game through the benchmark's own run loop (reprobench.amtlb.runs: GameEnvs, the
architecture API, the per-episode curve), next to the random agent on the same game, against published 10M-frame
references (published/reference_scores.csv: the SB3-zoo PPO training monitor recomputed at 10M frames, Dopamine).

    python benchmarks/amtlb_ppo_learning.py [--game breakout] [--frames 2000000] [--envs 8] [--threads 2]

Prints, per block of --report frames, the mean raw return of the episodes that ended in it (PPO and random), the
cumulative score C(t) at the end, and the published rows for the game. The published runs differ from ours in what
the README lists (DEVIATIONS AM6): the SB3 zoo ran without sticky actions, with the minimal action set and life-loss
episodes; Dopamine (DQN/Rainbow/IQN) with sticky actions and the minimal set. A run short of 10M frames is compared
with their curves' shape, not their numbers: it says whether learning has begun.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from reprobench.amtlb import protocol, published, runs
from reprobench.core import curves

ATARI = {"repeat_action_probability": 0.25, "frameskip": 4, "noop_max": 30, "use_fire_reset": True,
         "episodic_life": False, "max_num_frames_per_episode": 108000, "max_steps_without_reward": 10000}


def one_run(architecture: str, args, folder: Path) -> tuple:
    out = folder / f"{architecture}.parquet"
    start = time.perf_counter()
    runs.run("fresh", architecture, [args.game], args.seed, str(out), frames_per_game=args.frames,
             num_envs=args.envs, settings=ATARI, scale="benchmark", device=args.device, threads=args.threads)
    seconds = time.perf_counter() - start
    frame, _ = curves.read_curve(out)
    rewards = runs.rewards_frame(frame)
    c_final = protocol.cumulative(rewards["frame"], rewards["cumulative"], [args.frames])[0]  # every reward to t_max
    return runs.episodes_frame(frame), seconds, c_final


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--game", default="breakout")
    p.add_argument("--frames", type=int, default=2_000_000)
    p.add_argument("--report", type=int, default=250_000, help="frames per reported block")
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = {a: one_run(a, args, Path(tmp)) for a in ("random", "ppo")}
    edges = np.arange(0, args.frames + args.report, args.report)
    print(f"{args.game}, {args.frames:,} frames, {args.envs} envs, sticky 0.25, full action set, raw scores")
    print(f"{'frames':>12} {'random mean':>12} {'n':>5} {'ppo mean':>10} {'n':>5}")
    for lo, hi in zip(edges[:-1], edges[1:]):
        cells = []
        for a in ("random", "ppo"):
            e = results[a][0]
            block = e[(e["end_frame"] > lo) & (e["end_frame"] <= hi) & (e["finished"] == 1)]["return"]
            cells.append((block.mean() if len(block) else float("nan"), len(block)))
        print(f"{hi:>12,} {cells[0][0]:>12.2f} {cells[0][1]:>5} {cells[1][0]:>10.2f} {cells[1][1]:>5}")
    for a, (e, seconds, c_final) in results.items():
        done = e[e["finished"] == 1]["return"]  # the episodes the emulator ended, as a monitor counts them
        print(f"{a}: {len(done)} finished episodes, first-100 mean {done.head(100).mean():.2f}, last-100 mean "
              f"{done.tail(100).mean():.2f}, best {done.max():.0f}, C(t_max) {c_final:.0f}, "
              f"{args.frames / seconds:,.0f} frames/s ({seconds:.0f} s)")
    ref = published.reference_scores(compared_only=False)
    ref = ref[ref["game"] == args.game]
    print("published (10M/40M frames; AM6 lists how their settings differ):")
    for r in ref.itertuples():
        print(f"  {r.source} {r.agent} at {int(r.frames):,} frames: {r.measure} = {r.value:g}")


if __name__ == "__main__":
    main()
