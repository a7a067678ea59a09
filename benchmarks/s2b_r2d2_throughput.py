"""Observations per second of S2B R2D2 training (reprobench.s2b.train) on CPU, and a GPU-hours ESTIMATE.

    python benchmarks/s2b_r2d2_throughput.py [--presets default,table2,...] [--threads 1] [--window-scale 1]
                                             [--train-seconds 10] [--tflops 10] [--launch-us 10]

Configurations: "default" (TrainConfig(), the tiny one) and the reference presets table2, table4_lstm, table4_esbn,
table4_dcem, fig6_lstm, fig6_dnc, recall_scs, recall_ohe and table1 (Table 1's multi-agent run, preset table1_s1:
reprobench.s2b.marl.MARLTrainer, two players per actor, its evaluation-time probe not timed) at the reference network
sizes. Each is changed (dataclasses.replace) in three
fields only: budget (a short run, never reached), eval_every (past the budget: no evaluation runs) and min_capacity
(N actors x W experiences, so that the learner starts after about W env steps: raised from 200 / 1,000 for default,
Table 4 and Figure 6, lowered from 40,000 for Table 2). The warm-up (those W steps) lets the actors' episodes fall
out of step and fills the reconstruction's store with finished episodes of representative lengths; in it the
reconstruction's updates are stubbed out (its bookkeeping runs), which saves minutes and changes no cost (costs do
not depend on the weights). Then a window of V env steps (per preset, x --window-scale) runs the trainer as is:
per-step acting, the learner at its cadence, reconstruction at its schedule.

Measured in the window (wall clock, --threads torch threads, default 1):
- acting: Trainer._act per env step (the N actors' forward, the vector environment's step, split out, and the rest:
  inputs, replay / sequence builder, bookkeeping);
- learner: time per learner.train(replay) call, the first call left out when there are more; real calls stop once
  they add up to --train-seconds (later ones the cadence asks for are skipped), and one call is forced after the
  window when none ran (Table 4 trains in bursts of 4 calls, dozens of env steps apart);
- reconstruction: time per update on the episodes finished at a step ("finish") and per update on half the store
  ("store"), one of each forced after the window when none ran, plus its per-step host overhead.
Steady state per env step = acting + (train calls per env step) x (time per call) + reconstruction, with
reconstruction = P(an episode ends at a step) x finish + store / period + overhead; observations per env step = N,
so obs/s = N / that. Train calls per env step: updates_per_step (1) for Table 2 and Figure 6; for Table 4's cadence
(4 calls per 32-episode cycle, the counter restarting at 1, so 4 per 31 episodes) 4 x (episodes per env step) / 31.
Episode statistics come from an environment-only run of the same seed and N (10,000 env steps after W): episode
timelines are drawn ahead and do not depend on the actions, so they are the run's own (checked against the trainer's
episode count). The same run simulates Table 4's cadence as implemented (it fires only when the counter lands exactly
on a multiple of 32, so a step where several episodes end can skip a cycle): printed as a note, with the obs/s it
gives. Table 4's reconstruction period is adaptive (1 .. max_period, starting at 2): the main figure uses the starting
period, a note gives the range. Not included: evaluations (greedy episodes every eval_every observations), start-up.

GPU ESTIMATE (not measured; the assumptions are printed): per component max(FLOP time, launch floor), plus the
CPU-side work measured here (acting minus the forward and minus the actors' state reset, which is device work on a
GPU; replay sampling and priority updates; reconstruction's padding). FLOPs per token = 2 x (parameters of matmul
layers: tensors with >= 2 dims); acting: N tokens per env step; learner update: n_minibatches x batch x (burn_in
[no-grad online] + 3 (unroll - burn_in) [forward + backward] + unroll [target]), unroll being the stored window
(burn-in included); reconstruction: 3 x (network + predictors) per padded episode step. Not counted: memory
addressing, attention over memory rows, optimiser steps, host-device bandwidth. Launch floor = kernels x --launch-us
(default 10 us); kernels = the aten operations (views left out) one real call dispatches, counted on CPU by a
TorchDispatchMode (one acting step; one train() at batch 1, the count does not depend on the batch; reconstruction on
one episode of two lengths, linear in the length), plus one per time step inside each fused LSTM call (oneDNN here,
cuDNN on a GPU: a sequential step each) and one copy per tensor moved between host and device. --tflops: assumed
sustained fp32 throughput (default 10 TFLOP/s for these small kernels). GPU-hours per run and per grid of the paper
(Table 2: 27 runs of 5M observations, 54 with the corrected variant; Table 4: LSTM 3 + ESBN 3 + DCEM 2 seeds of 10M;
Figure 5: the recall DNC, SCS and OHE, 10 seeds of 500k; Figure 6: LSTM and DNC 5 seeds each without
reconstruction, 2 each with it, of 2M: paper.yaml's seeds), and the CPU-hours the measured rates imply
(hours x --threads cores per run). Every Table 2 cell (O, S) is assumed to cost what the preset (O = 1, S = 1) costs.
"""

from __future__ import annotations

import argparse
import collections
import copy
import dataclasses
import os
import time
import traceback

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from reprobench.s2b.marl import MARLConfig, MARLTrainer
from reprobench.s2b.r2d2 import R2D2Learner, VDNLearner
from reprobench.s2b.tasks import make_env
from reprobench.s2b.train import TrainConfig, Trainer, preset

NAMES = ("default", "table2", "table4_lstm", "table4_esbn", "table4_dcem", "fig6_lstm", "fig6_dnc", "recall_scs",
         "recall_ohe", "table1")
# (W warm-up env steps before the learner starts, V window env steps): W covers a few of the longest episodes
# (Table 2: up to ~215 observations, Table 4: ~90, Figure 6: ~800), V is what the time budget allows
STEPS = {"default": (300, 200), "table2": (300, 60), "table4_lstm": (150, 30), "table4_esbn": (150, 8),
         "table4_dcem": (150, 8), "fig6_lstm": (1000, 60), "fig6_dnc": (1000, 20), "recall_scs": (300, 20),
         "recall_ohe": (100, 20), "table1": (150, 30)}
ENV_STEPS = 10_000  # environment-only steps for the episode statistics
GRIDS = [("Table 1: 2 S x 3 seeds (multi-agent, VDN + SAD)", [("table1", 6, False)]),
         ("Table 2: 3 O x 3 S x 3 seeds", [("table2", 27, True)]),
         ("Table 2 + corrected variant", [("table2", 54, True)]),
         ("Table 4: LSTM 3 + ESBN 3 + DCEM 2 seeds", [("table4_lstm", 3, True), ("table4_esbn", 3, True),
                                                      ("table4_dcem", 2, True)]),
         ("Figure 5: recall, DNC, SCS and OHE x 10 seeds", [("recall_scs", 10, False), ("recall_ohe", 10, False)]),
         ("Figure 6: LSTM 5, DNC 5, LSTM+Rec 2, DNC+Rec 2 seeds", [("fig6_lstm", 5, False), ("fig6_dnc", 5, False),
                                                                    ("fig6_lstm", 2, True), ("fig6_dnc", 2, True)])]


def config_of(name: str) -> TrainConfig:
    """table1: the S = 1 preset (S = 2's episodes are a little longer; every Table 1 run is assumed to cost it)."""
    return TrainConfig() if name == "default" else preset("table1_s1" if name == "table1" else name)


def players(config: TrainConfig) -> int:
    return 2 if config.task == "marl" else 1


# -- episode statistics ------------------------------------------------------------------------------------------


def episode_stats(config: TrainConfig, warm: int, steps: int) -> dict:
    """The run's episode stream from its environment alone (same task, seed and N; actions do not change it)."""
    n, r = config.n_actors, config.r2d2
    env = make_env(config.task, config.env, n, config.seed)
    env.reset(seed=config.seed)
    actions = np.zeros(n, dtype=np.int64)
    step = env.step
    if config.task == "marl":  # the two-player game: a silent speaker (its messages do not change the episodes)
        silent = np.zeros((n, env.config.max_sentence_length), dtype=np.int64)

        def step(decisions):
            return env.step(silent, decisions)
    pending, length = np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64)
    finished, lengths = np.zeros(warm + steps, dtype=np.int64), []
    for t in range(warm + steps):
        _, _, terminated, _, _ = step(actions)
        terminated = np.asarray(terminated, dtype=bool)
        length += ~pending
        done = terminated & ~pending
        if t >= warm:
            lengths.extend(length[done].tolist())
        length[done] = 0
        finished[t] = done.sum()
        pending = terminated.copy()
    span = finished[warm:]
    out = {"episodes_per_step": span.sum() / steps, "length": float(np.mean(lengths)),
           "max_length": int(np.max(lengths)), "p_finish": float(np.mean(span > 0)),
           "finish_batch": float(span.sum() / max(np.count_nonzero(span), 1)), "cumulative": np.cumsum(finished)}
    store_half = max(1, config.recon.store // 2)
    rng = np.random.default_rng(0)
    out["store_pad"] = float(rng.choice(np.asarray(lengths), size=(2000, store_half)).max(1).mean())
    out["store_half"] = store_half
    if r.episodes_per_cycle is not None:
        out["calls_nominal"] = r.train_calls_per_cycle * out["episodes_per_step"] / (r.episodes_per_cycle - 1)
        counter = calls = 0
        for t in range(warm + steps):  # the trainer's rule; the learner is on from the warm-up's end
            counter += int(finished[t])
            if t >= warm and counter % r.episodes_per_cycle == 0:
                calls += r.train_calls_per_cycle
                counter = 1
        out["calls_implemented"] = calls / steps
    else:
        out["calls_nominal"] = out["calls_implemented"] = float(r.updates_per_step)
    return out


# -- kernel counting ---------------------------------------------------------------------------------------------


class KernelCount(TorchDispatchMode):
    """Counts the aten operations dispatched (views and empty allocations left out), plus one per time step of each
    fused LSTM layer call (its sequential steps)."""

    def __init__(self):
        super().__init__()
        self.kernels = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if not func.is_view and not name.startswith(("empty", "new_empty", "detach")):
            self.kernels += 1
            if name.startswith("mkldnn_rnn_layer") and args and isinstance(args[0], torch.Tensor):
                self.kernels += int(args[0].shape[0])  # time-major input: one sequential step per time step
        return func(*args, **(kwargs or {}))


def matmul_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters() if p.dim() >= 2)


# -- the measurement ---------------------------------------------------------------------------------------------


def measure(name: str, warm: int, window: int, train_seconds: float) -> dict:
    base = config_of(name)
    n = base.n_actors
    budget = 4 * n * (warm + window + 100)  # never reached
    config = dataclasses.replace(base, budget=budget, eval_every=budget + 1,
                                 r2d2=dataclasses.replace(base.r2d2, min_capacity=n * warm))
    # Table 1: the probe (EoA listeners) runs at evaluations only, which the window never reaches
    tr = MARLTrainer(config, MARLConfig(probe_episodes=0)) if config.task == "marl" else Trainer(config)
    acc, cnt = collections.defaultdict(float), collections.Counter()
    train_times, rec_times = [], {"finish": [], "store": []}
    mode = {"phase": "warm", "kind": None}

    def wrap(obj, attr, key):
        orig = getattr(obj, attr)

        def run(*args, **kwargs):
            t0 = time.perf_counter()
            out = orig(*args, **kwargs)
            if mode["phase"] == "window":
                acc[key] += time.perf_counter() - t0
                cnt[key] += 1
            return out
        setattr(obj, attr, run)

    for obj, attr, key in ((tr, "_act", "act"), (tr.env, "step", "env"), (tr.learner, "q_values", "fwd"),
                           (tr.replay, "sample", "sample"), (tr.replay, "update_priorities", "prio"),
                           (tr, "_reconstruct", "recon"), (tr.actors, "advance", "advance")):
        wrap(obj, attr, key)
    orig_train = tr.learner.train

    def train(replay):
        if mode["phase"] == "window" and sum(train_times) < train_seconds:
            t0 = time.perf_counter()
            out = orig_train(replay)
            train_times.append(time.perf_counter() - t0)
            return out
        cnt["train_skipped" if mode["phase"] == "window" else "train_warm"] += 1  # warm: the step that fills
        return torch.zeros(())
    tr.learner.train = train
    nan = torch.tensor(float("nan"))
    if tr.recon is not None:
        orig_update = tr.recon.update

        def update(inputs, valid):
            if mode["phase"] == "warm":
                return {"loss": nan, "stimulus_accuracy": nan, "comm_accuracy": nan}
            # in _reconstruct the store update runs once the countdown is spent, the finish one before it
            kind = mode["kind"] or ("store" if tr.rec_countdown <= 0 else "finish")
            t0 = time.perf_counter()
            out = orig_update(inputs, valid)
            if mode["phase"] == "window" or mode["kind"] in rec_times:
                rec_times[kind].append(time.perf_counter() - t0)
                if mode["phase"] == "window":
                    acc["rec_update"] += rec_times[kind][-1]
            return out
        tr.recon.update = update

    t_start = time.perf_counter()
    while len(tr.replay) < config.r2d2.min_sequences:
        tr.train(until=tr.observations + 1)
    warm_steps = tr.env_steps
    mode["phase"] = "window"
    while tr.env_steps < warm_steps + window:
        tr.train(until=tr.observations + 1)
    steps = tr.env_steps - warm_steps
    mode["phase"] = "after"
    out = {"n": n, "budget": base.budget, "warm": warm_steps, "window": steps, "episodes": tr.episodes,
           "env_steps": tr.env_steps, "min_capacity": (base.r2d2.min_capacity, n * warm),
           "act": acc["act"] / cnt["act"], "env": acc["env"] / cnt["act"], "fwd": acc["fwd"] / cnt["act"],
           "advance": acc["advance"] / cnt["act"],
           "train_real": len(train_times), "train_skipped": cnt["train_skipped"], "forced": []}
    if not train_times:
        mode["phase"] = "window"  # (for the replay's sample / update_priorities timers)
        t0 = time.perf_counter()
        orig_train(tr.replay)
        train_times.append(time.perf_counter() - t0)
        mode["phase"] = "after"
        out["forced"].append("train")
    out["train"] = float(np.mean(train_times[1:] if len(train_times) > 1 else train_times))
    out["host_learn"] = (acc["sample"] + acc["prio"]) / max(cnt["prio"], 1) if cnt["prio"] else 0.0
    out["recon"] = tr.recon is not None
    if tr.recon is not None:
        out["rec_overhead"] = (acc["recon"] - acc["rec_update"]) / steps
        rng = np.random.default_rng(0)
        for kind in ("finish", "store"):
            if not rec_times[kind]:
                mode["kind"] = kind
                store = tr.rec_store
                pick = [store[-1]] if kind == "finish" else [store[j] for j in np.sort(
                    rng.choice(len(store), size=max(1, len(store) // 2), replace=False))]
                tr._rec_update(pick)
                mode["kind"] = None
                out["forced"].append(kind)
            out[f"rec_{kind}"] = float(np.mean(rec_times[kind]))
        out["period"] = config.recon.period
        out["adaptive"] = config.recon.adaptive
        out["max_period"] = config.recon.max_period
    out["wall"] = time.perf_counter() - t_start

    # -- kernel counts and FLOPs (for the GPU estimate) --------------------------------------------------------
    mode["phase"] = "count"
    n_inputs = len(tr.actors.inputs())
    with KernelCount() as kc:
        tr._act()
    out["k_act"] = kc.kernels + n_inputs + 1  # + host-to-device inputs, device-to-host actions
    learner = VDNLearner if config.task == "marl" else R2D2Learner
    one = learner(copy.deepcopy(tr.net), dataclasses.replace(config.r2d2, batch_size=1), n)
    _, s_steps, s_state, _ = tr.replay.sample(1)
    with KernelCount() as kc:
        one.train(tr.replay)
    out["k_upd"] = kc.kernels + config.r2d2.n_minibatches * (len(s_steps) + len(s_state) + 1) + 1
    f_tok = 2 * matmul_params(tr.net)
    r = config.r2d2
    p = players(config)  # every player's step is one pass of the network
    out["flop_act"] = p * n * f_tok
    out["flop_upd"] = p * r.n_minibatches * r.batch_size * f_tok * (r.burn_in + 3 * (r.unroll - r.burn_in) + r.unroll)
    out["params"] = sum(p.numel() for p in tr.net.parameters())
    if tr.recon is not None:
        out["flop_rec_tok"] = 3 * (f_tok + 2 * matmul_params(tr.recon.predictors))
        eps = sorted(tr.rec_store, key=lambda ep: len(ep["prev_action"]))
        points = []
        for ep in ([eps[0], eps[-1]] if len(eps) > 1 else eps):
            with KernelCount() as kc:
                tr._rec_update([ep])
            points.append((len(ep["prev_action"]), kc.kernels + len(ep) + 1))
        (t1, k1), (t2, k2) = points[0], points[-1]
        slope = (k2 - k1) / (t2 - t1) if t2 > t1 else k1 / t1
        out["k_rec"] = (k1 - slope * t1, slope)  # kernels(T) = a + b T for one update on episodes padded to T
    out["wall_total"] = time.perf_counter() - t_start
    return out


# -- steady state ------------------------------------------------------------------------------------------------


def recon_step(m: dict, ep: dict, period: float | None = None) -> float:
    """CPU reconstruction seconds per env step."""
    if not m["recon"]:
        return 0.0
    period = m["period"] if period is None else period
    return ep["p_finish"] * m["rec_finish"] + m["rec_store"] / period + m["rec_overhead"]


def cpu_step(m: dict, ep: dict, calls: float, recon: bool = True, period: float | None = None) -> float:
    return m["act"] + calls * m["train"] + (recon_step(m, ep, period) if recon else 0.0)


def gpu_step(m: dict, ep: dict, calls: float, recon: bool, tflops: float, launch: float) -> dict:
    """ESTIMATED GPU seconds per env step, by component."""
    thr = tflops * 1e12
    g = {"act": (m["act"] - m["fwd"] - m["advance"]) + max(m["flop_act"] / thr, m["k_act"] * launch),
         "learn": calls * (m["host_learn"] + max(m["flop_upd"] / thr, m["k_upd"] * launch)), "recon": 0.0}
    g["act_bound"] = "flop" if m["flop_act"] / thr > m["k_act"] * launch else "launch"
    g["upd_bound"] = "flop" if m["flop_upd"] / thr > m["k_upd"] * launch else "launch"
    if recon and m["recon"]:
        a, b = m["k_rec"]
        fin = max(ep["finish_batch"] * ep["length"] * m["flop_rec_tok"] / thr, (a + b * ep["length"]) * launch)
        sto = max(ep["store_half"] * ep["store_pad"] * m["flop_rec_tok"] / thr, (a + b * ep["store_pad"]) * launch)
        g["recon"] = ep["p_finish"] * fin + sto / m["period"] + m["rec_overhead"]
    g["total"] = g["act"] + g["learn"] + g["recon"]
    return g


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 1 else f"{ms:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--presets", default=",".join(NAMES), help=f"comma-separated subset of {','.join(NAMES)}")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--window-scale", type=float, default=1.0, help="multiply every window's env steps")
    ap.add_argument("--train-seconds", type=float, default=10.0, help="real learner calls per window, in seconds")
    ap.add_argument("--tflops", type=float, default=10.0, help="ASSUMED sustained GPU fp32 TFLOP/s")
    ap.add_argument("--launch-us", type=float, default=10.0, help="ASSUMED seconds x 1e-6 per GPU kernel")
    args = ap.parse_args()
    names = [s.strip() for s in args.presets.split(",") if s.strip()]
    unknown = [s for s in names if s not in NAMES]
    if unknown:
        ap.error(f"unknown presets {unknown}; choose from {NAMES}")
    torch.set_num_threads(args.threads)
    launch = args.launch_us * 1e-6
    t0 = time.perf_counter()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at start")

    stats, results, failed = {}, {}, {}
    for name in names:
        warm, window = STEPS[name]
        window = max(1, round(window * args.window_scale))
        config = config_of(name)
        key = repr((config.task, sorted(config.env.items()), config.n_actors, config.seed, config.r2d2,
                    config.recon.store, warm))
        try:
            t1 = time.perf_counter()
            if key not in stats:
                stats[key] = episode_stats(config, warm, ENV_STEPS)
            m = measure(name, warm, window, args.train_seconds)
            m["stats"] = stats[key]
            results[name] = m
            print(f"  measured {name}: warm-up {m['warm']} + window {m['window']} env steps, "
                  f"{m['train_real']} real train() calls ({m['train_skipped']} skipped past --train-seconds)"
                  f"{', forced: ' + ', '.join(m['forced']) if m['forced'] else ''}; {time.perf_counter() - t1:.0f} s",
                  flush=True)
        except Exception as exc:  # report and go on with the other presets
            failed[name] = f"{type(exc).__name__}: {exc}"
            print(f"  {name} FAILED: {failed[name]}")
            traceback.print_exc()

    print(f"\nCPU steady state ({args.threads} thread(s); ms per env step unless marked; obs/s = N / total). Changed "
          "from each config: budget (short), eval_every (past it), min_capacity (below: the learner starts after the "
          "warm-up);\nreconstruction updates stubbed during the warm-up only")
    print(f"{'config':<12}{'N':>4}{'ep.len':>7}{'min_cap':>15}{'act':>7}{'(fwd':>7}{'env':>6}{'other)':>7}"
          f"{'train/call':>11}{'calls/step':>11}{'recon':>8}{'total':>8}{'obs/s':>9}")
    for name, m in results.items():
        ep = m["stats"]
        calls = ep["calls_nominal"]
        total = cpu_step(m, ep, calls)
        other = m["act"] - m["fwd"] - m["env"]
        cap = f"{m['min_capacity'][0]}->{m['min_capacity'][1]}"
        print(f"{name:<12}{m['n']:>4}{ep['length']:>7.1f}{cap:>15}{fmt_ms(m['act']):>7}{fmt_ms(m['fwd']):>7}"
              f"{fmt_ms(m['env']):>6}{fmt_ms(other):>7}{fmt_ms(m['train']):>11}{calls:>11.4f}"
              f"{fmt_ms(recon_step(m, ep)):>8}{fmt_ms(total):>8}{m['n'] / total:>9.1f}")
    print("notes:")
    for name, m in results.items():
        ep = m["stats"]
        if m["env_steps"] <= len(ep["cumulative"]) and ep["cumulative"][m["env_steps"] - 1] != m["episodes"]:
            print(f"  {name}: the trainer's episodes ({m['episodes']}) differ from the environment-only run's "
                  f"({ep['cumulative'][m['env_steps'] - 1]}): episode statistics may not be the run's own")
        if m["recon"]:
            print(f"  {name}: recon = {ep['p_finish']:.3f} x {fmt_ms(m['rec_finish'])} ms (finish) + "
                  f"{fmt_ms(m['rec_store'])} ms (store of {ep['store_half']}, padded to ~{ep['store_pad']:.0f}) / "
                  f"period {m['period']} + {fmt_ms(m['rec_overhead'])} ms overhead")
        if m["recon"] and m["adaptive"]:
            calls = ep["calls_nominal"]
            lo, hi = (m["n"] / cpu_step(m, ep, calls, period=p) for p in (1, m["max_period"]))
            print(f"  {name}: adaptive reconstruction period: {lo:.1f} obs/s at period 1, {hi:.1f} at "
                  f"max_period {m['max_period']} (main figure: the starting period {m['period']})")
        if ep["calls_implemented"] != ep["calls_nominal"]:
            rate = m["n"] / cpu_step(m, ep, ep["calls_implemented"])
            print(f"  {name}: Table 4 cadence as implemented (fires only on an exact multiple of 32; "
                  f"{ep['finish_batch']:.2f} episodes end per ending step): {ep['calls_implemented']:.4f} calls/step "
                  f"vs {ep['calls_nominal']:.4f} nominal -> {rate:.1f} obs/s")
    for name, why in failed.items():
        print(f"  {name}: FAILED ({why})")

    print(f"\nGPU ESTIMATE (not measured): {args.tflops:g} TFLOP/s fp32 sustained and {args.launch_us:g} us per "
          "kernel ASSUMED; per component max(FLOP time, launch floor) + the CPU work measured above;\n  FLOPs = 2 x "
          "matmul parameters per token (x 3 with the backward), kernels = aten ops counted on CPU + one per fused-LSTM "
          "time step + host-device copies; ' -rec': without reconstruction")
    print(f"{'config':<15}{'params':>10}{'MFLOP/act':>10}{'GFLOP/upd':>10}{'kern/act':>9}{'kern/upd':>9}"
          f"{'bound':>6}{'act ms':>8}{'learn ms':>9}{'recon ms':>9}{'obs/s':>9}{'GPU-h/run':>10}{'CPU-h/run':>10}")
    gpu, cpu = {}, {}
    for name, m in results.items():
        ep = m["stats"]
        for recon in (True, False):
            g = gpu_step(m, ep, ep["calls_nominal"], recon, args.tflops, launch)
            c = cpu_step(m, ep, ep["calls_nominal"], recon)
            gpu[name, recon] = m["budget"] / (m["n"] / g["total"]) / 3600
            cpu[name, recon] = m["budget"] / (m["n"] / c) / 3600 * args.threads
            if recon or name.startswith("fig6"):
                bound = f"{g['act_bound'][0]}/{g['upd_bound'][0]}"
                label = name if recon or not m["recon"] else f"{name} -rec"
                print(f"{label:<15}{m['params']:>10}{m['flop_act'] / 1e6:>10.1f}{m['flop_upd'] / 1e9:>10.2f}"
                      f"{m['k_act']:>9}{m['k_upd']:>9}{bound:>6}{fmt_ms(g['act']):>8}{fmt_ms(g['learn']):>9}"
                      f"{fmt_ms(g['recon']):>9}{m['n'] / g['total']:>9.0f}{gpu[name, recon]:>10.3g}"
                      f"{cpu[name, recon]:>10.3g}")
    budgets = ", ".join(f"{k} {m['budget']:.0e}" for k, m in results.items())
    print("  bound: acting / learner update, f = FLOP time or l = launch floor, the larger; act / learn / recon ms: "
          f"GPU ms per env step; hours per run at the preset's budget ({budgets} observations)")

    print("\nGrids (GPU-hours: ESTIMATE; CPU-hours: measured rates x threads, one run per core set)")
    for title, runs in GRIDS:
        if any(name not in results for name, _, _ in runs):
            print(f"  {title}: n/a (not all of {sorted({r[0] for r in runs})} measured)")
            continue
        n_runs = sum(k for _, k, _ in runs)
        g = sum(k * gpu[name, rec] for name, k, rec in runs)
        c = sum(k * cpu[name, rec] for name, k, rec in runs)
        print(f"  {title}: {n_runs} runs, {g:,.1f} GPU-hours, {c:,.0f} CPU-hours")
        if title.startswith("Table 4"):
            ci = gi = 0.0
            for name, k, _ in runs:
                m, ep = results[name], results[name]["stats"]
                calls = ep["calls_implemented"]
                ci += k * m["budget"] / (m["n"] / cpu_step(m, ep, calls)) / 3600 * args.threads
                gi += k * m["budget"] / (m["n"] / gpu_step(m, ep, calls, True, args.tflops, launch)["total"]) / 3600
            print(f"  {title}, cadence as implemented: {gi:,.1f} GPU-hours, {ci:,.0f} CPU-hours")
    print(f"\ntotal {time.perf_counter() - t0:.0f} s; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          "at end")


if __name__ == "__main__":
    main()
