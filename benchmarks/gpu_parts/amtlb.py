"""amtlb on the device: AMTLB's PPO through the benchmark's own run loop, on 8 emulators of one real game.

`runs.play` (the loop the `amtlb_train_*` rules run) drives the architecture API's PPO (`make_architecture("ppo")`)
and `GameEnvs` (one AtariVectorEnv of 8 Pong emulators with paper.yaml's settings: sticky actions 0.25, the full
18-action set, frame skip 4, 84x84 4-stacks; the path of the fresh and transfer runs), both wrapped to time every
act() (those that ran a PPO update apart) and every emulator step. The rate is the game's frame clock (the unit of
the frame quotas) per second of whole rollout cycles (128 agent steps x 8 emulators and their update) after a
warm-up update. The process is pinned to the cores a Slurm job of these rules gets (cpus_per_gpu, slurm/config.yaml)
and runs with `--threads` that many, so the emulators get the cores the projection assumes. Then, on the same agent:
the syncs of an agent step (the actions the emulators need: inherent) and of an update (the learner's own), the
update timed alone, and a few float64 updates on the device against the CPU from the same rollout and weights. With
the time left: the pooled path (one emulator per slot, the pre-training and generalist runs' path) and one emulator
thread (what paper.yaml's `threads: 1` gives a one-game run today).
"""

from __future__ import annotations

import importlib.util
import os
import time

import numpy as np
import torch

from gpu_parts import ROOT, agreement, projection

GAME, SEED = "pong", 0
ESTIMATE = "17-36 GPU-hours (emulator-bound estimate)"
QUICK = {"num_steps": 8, "num_minibatches": 2, "update_epochs": 1}  # PPO's sizes with --quick (4 emulators)
COMPARED = ("policy", "value", "entropy", "approx_kl")  # clip_fraction counts samples past a threshold: not smooth
TOLERANCE = 1e-9  # float64: expected rounding of order 1e-13 after a few updates; a wrong operation shows far above


def _require_emulator() -> None:
    missing = [wheel for module, wheel in (("ale_py", "ale-py"), ("gymnasium", "gymnasium"))
               if importlib.util.find_spec(module) is None]
    if missing:
        raise RuntimeError(f"amtlb runs real Atari games and this Python lacks {' and '.join(missing)}: install "
                           "the versions constraints.txt pins (pip install -c constraints.txt ale-py gymnasium, or "
                           "their wheels where there is no network)")


def _pin_cores() -> tuple[int, list[int]]:
    """Pin this process to the CPUs one amtlb training job gets on Slurm (or all there are, where fewer)."""
    import yaml

    profile = yaml.safe_load((ROOT / "slurm" / "config.yaml").read_text())
    per_gpu = int(profile["set-resources"]["amtlb_train_fresh"]["cpus_per_gpu"])
    cores = sorted(os.sched_getaffinity(0))[:per_gpu]
    os.sched_setaffinity(0, cores)  # threads started from here on (emulators, torch's) inherit it
    return per_gpu, cores


class _Timed:
    """runs.play's architecture and emulators in one object: every call passes through, timed; with `record`, the
    inputs of the first rollout's act() calls and the next are kept (the agreement's rollout); `done` ends the run
    once `seconds` of whole rollout cycles have passed since the first (warm-up) update, or at `deadline`
    (time.monotonic)."""

    def __init__(self, agent, envs, seconds: float, deadline: float, record: bool = False):
        self.agent, self.envs, self.seconds, self.deadline = agent, envs, seconds, deadline
        self.record = agent.num_steps + 1 if record else 0
        self.totals = dict.fromkeys(("act_s", "acts", "update_s", "updates", "env_s", "env_steps"), 0.0)
        self.marks: list[dict] = []  # the totals, the clock and the frames at the end of every updating act()
        self.recorded: list[tuple] = []
        self.last_obs = None

    def act(self, observations, rewards, episode_starts):
        if len(self.recorded) < self.record:
            self.recorded.append((observations.copy(), rewards.copy(), episode_starts.copy()))
        updates, t0 = self.agent.updates, time.perf_counter()
        actions = self.agent.act(observations, rewards, episode_starts)
        kind = "update" if self.agent.updates != updates else "act"
        self.totals[kind + "_s"] += time.perf_counter() - t0
        self.totals[kind + "s"] += 1
        if kind == "update":
            self.marks.append({"t": time.perf_counter(), "frames": sum(self.envs.frames.values()), **self.totals})
        return actions

    def reset(self):
        return self.envs.reset()

    def step(self, actions):
        t0 = time.perf_counter()
        out = self.envs.step(actions)
        self.totals["env_s"] += time.perf_counter() - t0
        self.totals["env_steps"] += 1
        self.last_obs = out[0]
        return out

    @property
    def frames(self) -> dict:
        return self.envs.frames

    @property
    def done(self) -> bool:
        if self.envs.done or time.monotonic() > self.deadline:
            return True
        return len(self.marks) >= 2 and self.marks[-1]["t"] - self.marks[0]["t"] >= self.seconds

    def window(self) -> dict:
        """Rate and time split of the whole cycles between the first update and the last."""
        if len(self.marks) < 2:
            raise RuntimeError(f"{len(self.marks)} PPO update(s) in the time given: no whole rollout cycle timed")
        d = {k: self.marks[-1][k] - self.marks[0][k] for k in self.marks[0]}
        acting_ms = 1e3 * d["act_s"] / d["acts"]
        updates_s = d["update_s"] - d["updates"] * acting_ms / 1e3  # an updating act() also acts once
        return {"rate": d["frames"] / d["t"], "frames": int(d["frames"]), "seconds": round(d["t"], 3),
                "steps": int(d["updates"]), "step_ms": 1e3 * d["t"] / d["updates"],
                "agent_step_ms": 1e3 * d["t"] / d["env_steps"], "acting_ms": acting_ms,
                "emulator_ms": 1e3 * d["env_s"] / d["env_steps"], "update_in_loop_ms": 1e3 * updates_s / d["updates"],
                "acting_loop_rate": d["frames"] / (d["t"] - updates_s),
                "share": {"emulator": d["env_s"] / d["t"], "acting": (d["t"] - d["env_s"] - updates_s) / d["t"],
                          "update": updates_s / d["t"]}}


def _play(ctx, section: dict, num_envs: int, threads: int, pooled: bool, seconds: float, reserve: float,
          record: bool = False):
    """One run of runs.play on GAME for about `seconds` after its warm-up, ended early to leave `reserve` seconds of
    the part's time; (agent, timed)."""
    from reprobench.amtlb import runs
    from reprobench.amtlb.api import make_architecture
    from reprobench.amtlb.atari import AtariSettings, GameEnvs, QuotaSchedule
    from reprobench.amtlb.ppo import PPO

    kind = "generalist" if pooled else "fresh"  # the pooled path is the one of the runs on several games
    cap = section["atari"]["max_steps_without_reward"] if pooled else None  # as runs.run: training runs only
    atari = AtariSettings(**{**section["atari"], "max_steps_without_reward": cap})
    frames = section["frames_per_game"]
    total_steps = -(-frames // (atari.frameskip * num_envs))  # as runs.run: the learning-rate schedule's length
    torch.set_num_threads(threads)  # as `--threads` does
    if ctx.quick:
        agent = PPO(num_envs, SEED, str(ctx.device), total_steps, **QUICK)
    else:
        agent = make_architecture("ppo", num_envs, SEED, str(ctx.device), total_steps)
    e_seed = runs.env_seed(kind, SEED, [GAME], None)
    envs = GameEnvs(QuotaSchedule({GAME: frames}, e_seed), num_envs, e_seed, atari, threads=threads, _pooled=pooled)
    # the warm-up: emulator start-up (two ROM loads per AtariVectorEnv), the first rollout and update
    allowed = max(min(seconds + max(2 * seconds, 5.0), ctx.left() - reserve), 1.0)
    timed = _Timed(agent, envs, seconds, time.monotonic() + allowed, record)
    try:
        runs.play(timed, timed)
    finally:
        envs.close()
    return agent, timed


def _agreement(ctx, num_envs: int, recorded: list, budget_s: float, most: int) -> dict:
    """Float64 PPO on the device and on the CPU from the same weights (the same seed: the initialisation draws from a
    CPU generator) and the same rollouts: the CPU agent acts on the main run's recorded inputs, and at each update
    its rollout buffers and minibatch shuffles are handed to the device agent, which updates beside it. Compared:
    the last minibatch's loss terms of every update and the final weights. As many updates as `budget_s` allows,
    1 to `most`; PPO's own sizes where one update fits in `budget_s` by the time of a CPU forward pass, else QUICK's."""
    from reprobench.amtlb.ppo import PPO, ROLLOUT

    def pair(hparams):
        default = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            return [PPO(num_envs, SEED, device, 10_000, **hparams) for device in ("cpu", str(ctx.device))]
        finally:
            torch.set_default_dtype(default)

    cpu, dev = pair(QUICK if ctx.quick else {})
    obs = torch.as_tensor(recorded[0][0])
    with torch.no_grad():
        for _ in range(2):  # the second one timed
            t0 = time.perf_counter()
            cpu.net(obs)
    passes = cpu.num_steps + 3 * cpu.update_epochs * cpu.num_steps  # acting, then forward and backward (3 passes)
    if passes * (time.perf_counter() - t0) > budget_s:
        cpu, dev = pair(QUICK)
    orders, losses = [], {"cpu": [], "device": []}
    cpu_update = cpu._update

    def record(n):
        orders.append(PPO._order(cpu, n))
        return orders[-1]

    def both(next_obs):
        for name in ROLLOUT:
            getattr(dev, name).copy_(getattr(cpu, name))
        cpu_update(next_obs)
        dev._update(next_obs.to(dev.device))
        for agent, key in ((cpu, "cpu"), (dev, "device")):
            losses[key].append(torch.stack([agent.last_losses[k] for k in COMPARED]))

    cpu._order, dev._order, cpu._update = record, lambda n: orders.pop(0).to(dev.device), both
    t0, calls = time.perf_counter(), 0
    while True:
        cpu.act(*recorded[calls % len(recorded)])
        calls += 1
        done = len(losses["cpu"])
        if done and calls % cpu.num_steps == 1:  # just after an update: is there time for one more?
            spent = time.perf_counter() - t0
            if done >= most or spent * (done + 1) / done > budget_s:
                break
    ctx.synchronize()
    return agreement([losses["device"], list(dev.net.parameters())], [losses["cpu"], list(cpu.net.parameters())],
                     TOLERANCE, f"the loss terms ({', '.join(COMPARED)}) of the last minibatch of each of {done} "
                     f"PPO update(s) and the weights after them; rollouts of {num_envs} emulators x {cpu.num_steps} "
                     f"steps of recorded {GAME} inputs, {cpu.update_epochs} epoch(s) x {cpu.num_minibatches} "
                     "minibatches, the CPU's minibatch shuffles replayed on the device", done)


def _sub(ctx, section, num_envs, threads, pooled, seconds, reserve, what) -> dict:
    """A shorter run on another emulator path: its rate and time split, or why there is none."""
    try:
        window = _play(ctx, section, num_envs, threads, pooled, seconds, reserve)[1].window()
    except RuntimeError as exc:
        return {"setting": what, "error": str(exc)}
    return {"setting": what, "threads": threads} | window


def check(ctx) -> dict:
    _require_emulator()
    from reprobench.amtlb import grid, protocol

    section = ctx.paper("amtlb")
    per_gpu, cores = _pin_cores()
    quick = ctx.quick  # tiny sizes and windows: the CPU check of the code, not a measurement
    num_envs = 4 if quick else section["num_envs"]
    threads = 1 if quick else len(cores)  # quick: one thread, the fastest on a shared CPU
    agent, timed = _play(ctx, section, num_envs, threads, False, min(0.25 * ctx.left(), 1.0 if quick else 18.0),
                         reserve=0.5 * ctx.left(), record=True)
    main = timed.window()
    ctx.keep("main", main)
    memory = ctx.peak_memory_mb()  # the run's: acting, emulators' uploads and updates
    frames_per_update = main["frames"] / main["steps"]  # about steps x emulators x 4 (reset frames besides)
    obs = timed.last_obs
    zeros, no_starts = np.zeros(num_envs), np.zeros(num_envs, dtype=bool)
    while agent.step + 4 >= agent.num_steps:  # act on into a rollout with room for 4 steps that do not update
        agent.act(obs, zeros, no_starts)
    acting = ctx.syncs(lambda: agent.act(obs, zeros, no_starts), 4)
    next_obs = torch.as_tensor(obs, device=ctx.device)
    update_s = main["update_in_loop_ms"] / 1e3  # the counts below stay within the time where updates are slow
    learner = ctx.syncs(lambda: agent._update(next_obs), 2 if update_s < 0.02 * ctx.left() else 1)
    alone = None
    if 3 * update_s < 0.1 * ctx.left():
        alone = ctx.rate(lambda: agent._update(next_obs), frames_per_update,
                         min(0.05 * ctx.left(), 0.3 if quick else 4.0), warmup=1)
    agree = _agreement(ctx, num_envs, timed.recorded, 0.3 * ctx.left(), 1 if quick else 3)

    subparts = []
    for pooled, n_threads, what in ((True, threads, "pooled path: one emulator (and thread) per slot, as the "
                                     "pre-training and generalist runs on several games"),
                                    (False, 1, "one AtariVectorEnv on 1 thread (and 1 torch thread): what "
                                     "paper.yaml's `threads: 1` gives a fresh or transfer run")):
        if ctx.left() < (4 if quick else max(12, 4 * main["step_ms"] / 1e3)):  # room for two whole cycles
            subparts.append({"setting": what, "error": "not measured: no time left"})
            continue
        subparts.append(_sub(ctx, section, num_envs, n_threads, pooled, min(0.25 * ctx.left(), 0.5 if quick else 10.0),
                             2 + 2 * update_s, what))  # an update under way when the time is up runs on
    pooled = subparts[0] if "rate" in subparts[0] else None
    one_thread = subparts[1] if "rate" in subparts[1] else None

    implied = protocol.frames_implied(grid.Grid(section).parms(), generalist=section["generalist"])
    single, several = implied["fresh"] + implied["transfer"], implied["pretraining"] + implied["generalist"]
    several_rate = pooled["rate"] if pooled else main["rate"]
    hours = (single / main["rate"] + several / several_rate) / 3600
    how = (f"protocol.frames_implied on paper.yaml: {(single + several) / 1e9:.2f} billion frames with learning, one "
           f"run per GPU with {per_gpu} CPU cores (the Slurm profile's cpus_per_gpu; measured here on {len(cores)} "
           f"pinned): fresh + transfer {single / 1e9:.2f} billion on one AtariVectorEnv of {num_envs} emulators on "
           f"{threads} thread(s) at {main['rate']:,.0f} frames/s, pre-training + generalist {several / 1e9:.2f} "
           "billion "
           + (f"on the pooled path at {several_rate:,.0f} frames/s" if pooled else "at that rate (pooled path not "
              "measured)") + f"; the random agent's {implied['random'] / 1e9:.2f} billion frames run on CPU nodes")
    notes = [
        f"one step = one rollout cycle: {agent.num_steps} agent steps x {num_envs} emulators ({frames_per_update:,.0f}"
        f" frames) and its PPO update ({agent.update_epochs} epochs x {agent.num_minibatches} minibatches); per "
        f"agent step {main['agent_step_ms']:.3g} ms: emulators {main['emulator_ms']:.3g} ms, acting "
        f"{main['acting_ms']:.3g} ms; time shares emulator {main['share']['emulator']:.0%}, acting and the loop's "
        f"bookkeeping {main['share']['acting']:.0%}, updates {main['share']['update']:.0%}",
        (f"PPO update alone (synchronised, on a recorded rollout): {alone['step_ms']:.4g} ms, {alone['rate']:,.0f} "
         f"frames/s of learning; " if alone else "PPO update not timed alone (too slow for the time left); ")
        + f"in the loop {main['update_in_loop_ms']:.4g} ms",
        f"acting loop alone (emulators and acting, updates taken out): {main['acting_loop_rate']:,.0f} frames/s",
        f"host syncs of an agent step (inherent: the emulators read the actions on the host): "
        f"{acting['syncs_per_step']:g}, at " + ("; ".join(f"`{k}` {v:g}" for k, v in acting["sync_points"].items())
                                                or "none"),
        "syncs per step above are the learner's (one PPO update); nothing reads the losses (PPO keeps them on the "
        "device; the run loop logs episodes, not losses)",
    ]
    if ctx.cuda:
        notes.append("float32 convolutions run as TF32 on the device (torch's cuDNN default), so float32 runs differ "
                     "from the CPU's by more than float32 rounding; the agreement is float64, where TF32 never applies")
    if one_thread:
        notes.append(f"with paper.yaml's threads: 1 a fresh or transfer run gets one emulator thread: "
                     f"{one_thread['rate']:,.0f} frames/s, {single / one_thread['rate'] / 3600:,.1f} device-hours for "
                     f"those runs instead of {single / main['rate'] / 3600:,.1f}")
    return {
        "setting": f"{'quick: ' if quick else ''}PPO (Nature CNN) through runs.play on {GAME}, {num_envs} emulators "
                   f"(one AtariVectorEnv, {threads} thread(s) on {len(cores)} pinned cores), sticky 0.25, full action "
                   f"set, frame skip 4, 84x84x4; {agent.num_steps} steps per rollout, float32",
        "unit": "frames", "rate": main["rate"], "steps": main["steps"], "seconds": main["seconds"],
        "step_ms": main["step_ms"], **memory, **learner, "agreement": agree,
        "acting_syncs_per_step": acting["syncs_per_step"], "acting_sync_points": acting["sync_points"],
        "update_alone": alone, "main": main, "subparts": subparts,
        "projection": projection(single + several, (single + several) / (hours * 3600), ESTIMATE, how),
        "notes": notes,
    }
