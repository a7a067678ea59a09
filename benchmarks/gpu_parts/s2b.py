"""S2B's part of the GPU check: R2D2 training of the listener at the reference sizes, through the trainer the
`s2b_train*` rules run (runs.zsct_config / runs.experiment_config -> train.Trainer, stepped as Trainer.train steps it).
Table 2's preset (LSTM listener, posdis speaker, O = S = 1) is the row; Table 4's cores (Archi LSTM, ESBN, DCEM) and
one preset per network of Figures 5 and 6 (the recall DNC with SCS stimuli; Figure 6's DNC and LSTM with the
reconstruction) are its subparts, measured in the order Table 2, DCEM (the slowest), LSTM, ESBN, Figure 5 SCS, Figure 6
DNC + Rec, LSTM + Rec, so that what a short budget leaves out is the last ones. The figures' other presets are priced
from a measured one (PRICED_AS: Figure 5's OHE as its SCS, Figure 6's cores without the reconstruction as with it).

Per preset, the preset's actors (32; Figure 6: 16; tiny sizes with --quick: train.small, 4 actors):
- warm-up: Trainer.step until the learner may start, with min_capacity lowered to N x W experiences (W env steps,
  so that episodes fall out of step and the reconstruction's store holds finished episodes) and the reconstruction's
  updates stubbed (their cost does not depend on the weights), as benchmarks/s2b_r2d2_throughput.py does;
- window: Trainer.step as it runs (acting, learner updates at the preset's cadence, reconstruction at its schedule),
  untouched but for counters of train() calls and reconstruction updates;
- learner update alone: R2D2Learner.train(replay) back to back (Table 4's bursts are back to back too);
- rate (observations/s) = observations per env step / (acting + reconstruction per env step + c x update time), c the
  preset's train() calls per env step: Table 2 and the figures call once per step (the rate is the window's own),
  Table 4 in bursts of 4 when the finished-episode counter lands on a multiple of 32 (its cadence as implemented,
  simulated on the run's own episode stream: s2b_r2d2_throughput.episode_stats), a few per hundred env steps, which a
  short window cannot sample: its acting + reconstruction is the window less the time of its own (timed) train() calls;
- the agreement of a few float64 learner updates on the device and on the CPU from the same batches and weights, host
  syncs per component, a split of an env step (acting, learner, reconstruction, each synchronised), as far as the
  preset's share of the time goes, and the paper plan's device-hours from the grid (the preset's runs x observations).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import time
from collections import Counter

import numpy as np
import torch

from gpu_parts import Context, agreement, compared_parameters, projection
from reprobench.core.hostsync import HostSyncs
from reprobench.s2b import runs, train
from reprobench.s2b.grid import R2D2, Grid
from reprobench.s2b.r2d2 import R2D2Learner

# (experiment, model): measured in this order; each gets its weight's share of the time left when it starts
ROW = ("table2", R2D2)
PRESETS = (ROW, ("table4", "dcem"), ("table4", "lstm"), ("table4", "esbn"), ("fig5", "scs"), ("fig6", "dnc_rec"),
           ("fig6", "lstm_rec"))
QUICK_PRESETS = (ROW, ("table4", "lstm"), ("fig5", "scs"))  # the CPU check: every code path (the DNC too), cheaply
# on a 160 s cap (--cap s2b=160) Table 2 and Table 4 keep the shares they had of 90 s (~20, 28, 12, 26 s) and the
# figures get ~20-25 s each (time a preset leaves unused goes to the next ones); under FIGURES_MIN_CAP_S (the
# default 90 s) the figures are left out and Tables 2 and 4 share the time in the same proportions
WEIGHTS = {ROW: 0.13, ("table4", "dcem"): 0.185, ("table4", "lstm"): 0.08, ("table4", "esbn"): 0.165,
           ("fig5", "scs"): 0.14, ("fig6", "dnc_rec"): 0.16, ("fig6", "lstm_rec"): 0.14}
# the figures' presets not measured, priced at a measured one's rate: (that preset, why its rate fits); the networks'
# sizes checked at the reference sizes (train.Trainer's parameters)
PRICED_AS = {
    ("fig5", "ohe"): (("fig5", "scs"), "OHE as SCS: the same recall DNC, replay and learner but for the encoder's "
                                       "first layer, a 512 x 15 weight instead of 512 x 3 (397,492 parameters against "
                                       "391,348); OHE's episodes are 30 steps against SCS's ~155, so ~3% fewer "
                                       "observations per env step (one reset step per episode): a few % low"),
    ("fig6", "dnc"): (("fig6", "dnc_rec"), "DNC as DNC + Rec, an upper bound: the same network without the "
                                           "reconstruction's updates"),
    ("fig6", "lstm"): (("fig6", "lstm_rec"), "LSTM as LSTM + Rec, an upper bound: the same network without the "
                                             "reconstruction's updates"),
}
FIGURES_MIN_CAP_S = 140.0  # the figures' presets are measured on a cap of at least this (gpu_check.py --cap s2b=160)
MIN_SHARE_S = 8.0  # below this a preset is left out (not with --quick, which runs every code path, a few steps)
RESERVE_S = {False: 3.0, True: 1.0}  # kept back at the end of the cap
QUICK_MAX_STEPS = {"window": 12, "learner": 3}  # --quick: a few steps, whatever the time
# W: longer than the longest episodes (Table 2 ~215 steps, Table 4 ~90, Figure 5 SCS ~490 (mean ~155), Figure 6
# ~820 (mean ~270), as environment-only runs of the presets found them)
WARM_STEPS = {"table2": 300, "table4": 150, "fig5": 500, "fig6": 1000}
QUICK_WARM_STEPS = 20
CADENCE_ENV_STEPS = {False: 10_000, True: 500}  # env-only steps simulating Table 4's cadence
ESTIMATES = {"table2": "14 GPU-hours", "table4": "65 GPU-hours (Table 4's three cores together)",
             "fig5": "14 GPU-hours (Figure 5's SCS and OHE runs together)",
             "fig6": "about 43 GPU-hours (Figure 6's four presets together)"}
ALL_ESTIMATE = "about 136 GPU-hours (Tables 2 and 4, Figures 5 and 6; faithful variants)"
FIGURES = ("fig5", "fig6")
NAMES = {"table2": "Table 2", "table4": "Table 4", "fig5": "Figure 5", "fig6": "Figure 6"}
TOLERANCE = 1e-9
NOTES = [
    "rate: environment observations per second of training as the trainer runs it (N actors' acting step, the "
    "sequence builder and replay, the learner at the preset's cadence, the auxiliary reconstruction at its schedule); "
    "not included: the greedy evaluations (700 episodes on 100 actors, acting only: every 500k (Table 2) or 1M (Table "
    "4) observations, about 5.5e4 greedy observations each, ~1% more; Figure 5 every 25k, 1.1e5 (SCS) or 2.1e4 (OHE) "
    "each, 20 per run, SCS's 2.2e6 four times the run's trained observations; Figure 6 every 200k, 1.9e5 each, 10 per "
    "run, as many as trained), checkpoints, start-up",
    "host syncs: the row's are the learner update's (train(): batches to the device through pinned memory, its "
    "priorities left on the device for the replay to copy at its next use); acting per env step: the actions to the "
    "host (inherent: the environments are numpy), the stored recurrent state of actors that start a sequence (one copy "
    "per state tensor into the numpy replay) and the last update's priorities, both after the actions' sync so that "
    "nothing is left to wait for; Table 4's reconstruction: one read of its accuracy per store update (its adaptive "
    "period is decided on the host); with Table 4's bursts of 4 back-to-back updates, each sample after the first "
    "waits for the previous update's priorities (prioritised replay needs them)",
    "env_step_split_ms: each component synchronised on its own (serialised), over a few steps after the window",
]
AGREEMENT_BATCH = {"table2": 8, "table4": 4, "fig5": 4, "fig6": 4}  # sequences per minibatch in the float64 check


def check(ctx: Context) -> dict:
    section = ctx.paper("s2b")
    sizes = "tiny" if ctx.quick else section["zsct"]["sizes"]
    grid = Grid(section)
    cadences: dict = {}
    if ctx.quick:
        presets, why = QUICK_PRESETS, "not in --quick"
    elif ctx.cap_s < FIGURES_MIN_CAP_S:  # the default cap keeps Tables 2 and 4 their shares
        presets, why = tuple(k for k in PRESETS if k[0] not in FIGURES), f"--cap s2b={FIGURES_MIN_CAP_S:g} measures it"
    else:
        presets, why = PRESETS, ""
    rows, left_out = {}, [f"{e} {m} ({why})" for e, m in PRESETS if (e, m) not in presets]
    for i, key in enumerate(presets):
        experiment, model = key
        rest = sum(WEIGHTS[k] for k in presets[i:])
        share = (ctx.left() - RESERVE_S[ctx.quick]) * WEIGHTS[key] / rest
        if share < MIN_SHARE_S and not ctx.quick:
            left_out.append(f"{experiment} {model} (no time left)")
            continue
        if key == ROW:  # the row itself: its failure is the part's
            rows[key] = _measure(ctx, experiment, model, sizes, share, section, grid, cadences)
            ctx.keep(f"{experiment} {model}", rows[key])
            continue
        try:
            rows[key] = _measure(ctx, experiment, model, sizes, share, section, grid, cadences)
            ctx.keep(f"{experiment} {model}", rows[key])
        except Exception as exc:  # a subpart's failure is its row; the others still run
            rows[key] = {"preset": f"{experiment} {model}", "status": "failed",
                         "error": f"{type(exc).__name__}: {exc}"}
    row = rows.pop(ROW)
    table4 = [("table4", m) for m in ("lstm", "esbn", "dcem")]
    row["subparts"] = [rows[k] for k in [*table4, *[p for p in PRESETS if p[0] in FIGURES]] if k in rows]
    done = [rows[k] for k in table4 if "projection" in rows.get(k, {})]
    row["projection_table4"] = _sum_projection([r["projection"] for r in done], ESTIMATES["table4"], len(done) == 3)
    for experiment in FIGURES:
        row[f"projection_{experiment}"] = _figure_projection(section, grid, experiment, rows)
    totals = {"Table 2": row["projection"], "Table 4": row["projection_table4"],
              **{NAMES[x]: row[f"projection_{x}"] for x in FIGURES}}
    complete = all(p["device_hours"] is not None for p in totals.values())
    row["projection_all"] = {
        "device_hours": sum(p["device_hours"] for p in totals.values()) if complete else None,
        "estimate_before": ALL_ESTIMATE,
        "how": ("the sum of " if complete else "not all measured, no sum: ")
        + "; ".join(f"{name} {_hours(p['device_hours'])}" + (f" ({p['presets']})" if p.get("presets") else "")
                    for name, p in totals.items())
        + (", every figure's preset measured or priced from a measured one (PRICED_AS)" if complete else "")}
    summary = [_summary(r.get("preset", "?"), r) for r in [row, *row["subparts"]]]
    t4 = row["projection_table4"]
    summary.append(f"Table 4 together: {_hours(t4['device_hours'])} ({t4['how']}; estimate before: 65 GPU-hours)")
    for experiment in FIGURES:
        p = row[f"projection_{experiment}"]
        summary.append(f"{NAMES[experiment]} together: {_hours(p['device_hours'])} ({p['how']}; estimate before: "
                       f"{p['estimate_before']})")
    summary.append(f"all of the README's 136: {_hours(row['projection_all']['device_hours'])} "
                   f"({row['projection_all']['how']})")
    if left_out:
        summary.append(f"left out: {', '.join(left_out)}")
    row["notes"] = summary + row["notes"] + NOTES
    return row


def _hours(value) -> str:
    return "-" if value is None else f"{value:.3g} device-hours"


def _summary(name: str, r: dict) -> str:
    """One line per preset for the Markdown table's notes (the JSON holds the rest)."""
    if r.get("status") != "ok":
        return f"{name}: failed ({r.get('error')})"
    a, split = r.get("agreement"), r.get("env_step_split_ms")
    return (f"{name}: {r['rate']:.4g} observations/s, {r['step_ms']:.4g} ms per env step of "
            f"{r['observations_per_env_step']:.3g} observations; learner update {r['learner_update_ms']:.4g} ms x "
            f"{r['train_calls_per_env_step']:.3g} per env step"
            + (f"; split (ms per env step, serialised): acting {split['acting']:.3g}, learner {split['learner']:.3g}, "
               f"reconstruction {split['reconstruction']:.3g}" if split else "")
            + f"; {r['peak_memory_mb']:.4g} MiB; host syncs: learner {r.get('syncs_per_step', '-')} per update, "
            f"acting {r.get('acting_syncs_per_env_step', '-')} and reconstruction "
            f"{r.get('reconstruction_syncs_per_env_step', '-')} per env step; device vs CPU "
            f"{'-' if a is None else format(a['relative_difference'], '.2g')}; paper plan "
            f"{_hours(r['projection']['device_hours'])} for {r['projection']['units']:.3g} observations")


# -- one preset --------------------------------------------------------------------------------------------------


def _label(experiment: str, model: str) -> str:
    if experiment == "table2":
        return "Table 2 (LSTM, O = 1, S = 1)"
    if experiment == "fig5":
        return f"Figure 5 (the recall task's DNC, {model.upper()} stimuli)"
    if experiment == "fig6":
        core, rec = model.removesuffix("_rec"), model.endswith("_rec")
        return f"Figure 6 {core.upper()}{' + Rec' if rec else ''}"
    return f"{NAMES[experiment]} {model.upper()}"


def _config(experiment: str, model: str, sizes: str, section: dict) -> train.TrainConfig:
    """The run's config as the rule builds it (seed 0, faithful; Table 2's cell O = 1, S = 1)."""
    if experiment == "table2":
        z = section["zsct"]
        return runs.zsct_config(1, 1, "faithful", 0, sizes, z["observations"], z["eval_every"])
    e = section["experiments"]
    return runs.experiment_config(experiment, model, "faithful", 0, sizes, e["observations"][experiment],
                                  e["eval_every"][experiment])


def _measure(ctx: Context, experiment: str, model: str, sizes: str, share: float, section: dict, grid: Grid,
             cadences: dict) -> dict:
    started = time.monotonic()
    end = started + share
    base = _config(experiment, model, sizes, section)
    n, r = base.n_actors, base.r2d2
    warm = QUICK_WARM_STEPS if ctx.quick else WARM_STEPS[experiment]
    config = dataclasses.replace(base, r2d2=dataclasses.replace(r, min_capacity=n * warm))
    trainer = train.Trainer(config, ctx.device)
    label = _label(experiment, model)
    notes, phases = [], {"setup": time.monotonic() - started}

    def phase(name):
        phases[name] = time.monotonic() - started - sum(phases.values())

    def affordable(name: str, seconds: float) -> bool:
        """Whether a phase estimated at `seconds` fits what is left of the share (a quarter of it as slack); always
        with --quick, whose phases are a few steps each."""
        if ctx.quick or seconds <= end - time.monotonic() + 0.25 * share:
            return True
        notes.append(f"{name} left out: about {seconds:.1f} s, {max(end - time.monotonic(), 0):.1f} s left")
        return False

    # warm-up: until the learner may start (reconstruction stubbed); cut at 30% of the share, the replay's content
    # then being the learner's threshold
    with _reconstruction_stubbed(trainer):
        while not _ready(trainer):
            if not ctx.quick and time.monotonic() > started + 0.3 * share and len(trainer.replay):
                trainer.config = dataclasses.replace(config, r2d2=dataclasses.replace(
                    config.r2d2, min_capacity=len(trainer.replay) * r.stride))
                if _ready(trainer):
                    notes.append(f"warm-up cut at {trainer.env_steps} env steps (of {warm}) for time")
                    break
            trainer.step()
    warm_steps = trainer.env_steps
    for _ in range(2):
        trainer.step()
    phase("warm-up")

    # the window: the trainer's own loop, its train() calls counted (and, with a cadence, timed: they are few and long,
    # and their synchronisation costs Table 4's loop nothing; Table 2's call at every step is left to overlap)
    calls, spent = Counter(), Counter()
    train_call, cadence = trainer.learner.train, r.episodes_per_cycle is not None

    def counted(replay):
        calls["window"] += 1
        if not cadence:
            return train_call(replay)
        ctx.synchronize()
        t0 = time.perf_counter()
        out = train_call(replay)
        ctx.synchronize()
        spent["window"] += time.perf_counter() - t0
        return out

    trainer.learner.train = counted

    # the reconstruction's updates counted too: a window before the first finished episodes would have none
    def recon_counted(update):
        def run(*args):
            calls["recon"] += 1
            return update(*args)
        return run

    store0 = len(trainer.rec_store)
    undo_recon = None if trainer.recon is None else _wrapped(trainer.recon, "update", recon_counted)
    obs0 = trainer.observations
    ctx.reset_peak_memory()
    window = ctx.rate(trainer.step, 1.0, _budget(end, 0.40), warmup=0, min_steps=2,
                      max_steps=QUICK_MAX_STEPS["window"] if ctx.quick else None)
    obs, window_calls = trainer.observations - obs0, calls["window"]
    del trainer.learner.train
    if undo_recon:
        undo_recon()
    phase("window")

    # the learner update alone, back to back
    update = ctx.rate(lambda: trainer.learner.train(trainer.replay), r.batch_size * r.n_minibatches,
                      _budget(end, 0.25), warmup=1, min_steps=2,
                      max_steps=QUICK_MAX_STEPS["learner"] if ctx.quick else None)
    memory = ctx.peak_memory_mb()
    phase("learner")

    # the cadence: train() calls per env step
    if not cadence:
        c = c_nominal = float(r.updates_per_step)
    else:
        key = (config.task, repr(sorted(config.env.items())), n, config.seed, r.episodes_per_cycle)
        if key not in cadences:
            from s2b_r2d2_throughput import episode_stats  # benchmarks/ (on the path of gpu_check's parts)

            cadences[key] = episode_stats(config, warm, CADENCE_ENV_STEPS[ctx.quick])
        c, c_nominal = cadences[key]["calls_implemented"], cadences[key]["calls_nominal"]
        phase("cadence")
    steps = window["steps"]
    t_update = update["step_ms"] / 1e3
    t_window = window["seconds"] / steps
    # acting + reconstruction per env step: Table 2's and the figures' window less its one update per step at the
    # back-to-back time (so that the rate is the window's own), Table 4's less the time its few train() calls took
    t_rest = t_window - (spent["window"] / steps if cadence else window_calls / steps * t_update)
    t_step = t_rest + c * t_update
    obs_per_step = obs / steps
    rate = obs_per_step / t_step

    # the agreement, syncs and the split, as far as the share goes
    burst = r.train_calls_per_cycle if cadence else 0
    syncs = agree = split = None
    updates = 3 if experiment == "table2" and not ctx.quick else 2
    if affordable("the agreement", 3 * updates * t_update):
        agree = _agreement(ctx, trainer, updates, AGREEMENT_BATCH[experiment])
        phase("agreement")
    if affordable("the sync count", 2.5 * (2 * t_window + burst * t_update)):  # counting slows torch calls down
        syncs = _syncs(ctx, trainer, burst)
        phase("syncs")
    if affordable("the split", 2.5 * t_window):
        split = _split(ctx, trainer, 0.0 if ctx.quick else min(0.08 * share, _budget(end, 0.5)))
        phase("split")

    runs_in_plan, per_run = _plan(section, grid, experiment, model)
    units = runs_in_plan * per_run
    hours_nominal = units / (obs_per_step / (t_rest + c_nominal * t_update)) / 3600
    row = {
        "preset": f"{experiment} {model}", "status": "ok",
        "setting": f"{label}: {n} actors, {sizes} sizes, batch {r.batch_size} x {r.n_minibatches} sequences of "
                   f"{r.unroll} steps (burn-in {r.burn_in}), train() {c:.3g} calls per env step"
                   + (", with the auxiliary reconstruction" if config.recon.enabled else ""),
        "unit": "observations",
        "rate": rate, "steps": steps, "seconds": window["seconds"], "step_ms": round(1e3 * t_step, 3),
        "window_rate": obs / window["seconds"], "observations_per_env_step": round(obs_per_step, 3),
        "train_calls_per_env_step": c, "train_calls_in_window": window_calls, "recon_updates_in_window": calls["recon"],
        "learner_update_ms": update["step_ms"], "learner_updates_timed": update["steps"],
        "learner_sequences_per_s": update["rate"], "env_step_split_ms": split,
        **memory, **(syncs or {}), "agreement": agree,
        "projection": projection(units, rate, ESTIMATES[experiment],
                                 f"{runs_in_plan} runs of {per_run:,} observations (the paper grid's runs of "
                                 f"{'Table 2' if experiment == 'table2' else NAMES[experiment] + ' ' + model}) at the "
                                 "measured rate"),
        "notes": notes,
    }
    notes.insert(0, f"warm-up: {warm_steps} env steps (min_capacity {r.min_capacity} -> "
                    f"{trainer.config.r2d2.min_capacity} experiences; reconstruction updates stubbed), then a window "
                    f"of {steps} env steps with {window_calls} train() calls; the learner alone: {update['steps']} "
                    f"updates back to back")
    if r.episodes_per_cycle is not None:
        notes.append(f"Table 4's cadence as implemented: {c:.4f} train() calls per env step (nominal 4 per 31 "
                     f"episodes: {c_nominal:.4f}, {hours_nominal:.3g} device-hours for this core's runs)")
    if config.recon.enabled:
        notes.append(f"the window ran {calls['recon']} reconstruction updates (its store held {store0} finished "
                     f"episodes at the start)" + ("" if calls["recon"] else ": the rate leaves the reconstruction out ("
                                                  + ("no episode had finished" if not trainer.rec_store else
                                                     "a window shorter than its period") + ")"))
    if config.recon.adaptive:
        notes.append(f"the reconstruction's adaptive period was {trainer.recon.period} (it starts at "
                     f"{config.recon.period}; it may grow to {config.recon.max_period} once the reconstruction is "
                     f"accurate, and then costs less than in this early window)")
    notes.append(f"time: {time.monotonic() - started:.1f} s of a {share:.1f} s share ("
                 + ", ".join(f"{k} {v:.1f}" for k, v in phases.items()) + ")")
    return row


def _ready(trainer) -> bool:
    r = trainer.config.r2d2
    return len(trainer.replay) >= r.min_sequences and trainer.observations >= r.min_handled


def _budget(end: float, fraction_of_left: float) -> float:
    return max(0.0, (end - time.monotonic()) * fraction_of_left)


@contextlib.contextmanager
def _reconstruction_stubbed(trainer):
    """The reconstruction's update returns NaN statistics without running (the warm-up's; its bookkeeping runs)."""
    if trainer.recon is None:
        yield
        return
    nan = torch.full((), float("nan"))
    trainer.recon.update = lambda inputs, valid: {"loss": nan, "stimulus_accuracy": nan, "comm_accuracy": nan}
    try:
        yield
    finally:
        del trainer.recon.update


def _wrapped(obj, attr: str, around):
    """Set obj.attr to around(original) on the instance; returns the undo."""
    original = getattr(obj, attr)
    setattr(obj, attr, around(original))
    return lambda: delattr(obj, attr)


def _split(ctx: Context, trainer, seconds: float) -> dict:
    """ms per env step of acting, the learner's calls and the reconstruction, each synchronised (serialised)."""
    spent = Counter()

    def timed(key):
        def around(fn):
            def run(*args, **kwargs):
                ctx.synchronize()
                t0 = time.perf_counter()
                out = fn(*args, **kwargs)
                ctx.synchronize()
                spent[key] += time.perf_counter() - t0
                return out
            return run
        return around

    undo = [_wrapped(trainer, "_act", timed("acting")), _wrapped(trainer.learner, "train", timed("learner")),
            _wrapped(trainer, "_reconstruct", timed("reconstruction"))]
    steps, t0 = 0, time.perf_counter()
    while steps < 2 or time.perf_counter() - t0 < seconds:
        trainer.step()
        steps += 1
    for u in undo:
        u()
    return {k: round(1e3 * spent[k] / steps, 3) for k in ("acting", "learner", "reconstruction")} | {"steps": steps}


def _syncs(ctx: Context, trainer, burst: int, steps: int = 2) -> dict:
    """Host syncs of the learner per update (the row's syncs_per_step) and of acting and the reconstruction per env
    step, over `steps` env steps of the trainer; with a cadence, the first followed by a burst of `burst` train()
    calls through the trainer's own rule (its counter set to fire)."""
    points = {k: Counter() for k in ("acting", "learner", "reconstruction")}
    calls = Counter()

    def counted(key):
        def around(fn):
            def run(*args, **kwargs):
                with HostSyncs(ctx.device) as s:
                    out = fn(*args, **kwargs)
                points[key].update(s.points)
                calls[key] += 1
                return out
            return run
        return around

    undo = [_wrapped(trainer, "_act", counted("acting")), _wrapped(trainer.learner, "train", counted("learner")),
            _wrapped(trainer, "_reconstruct", counted("reconstruction"))]
    for i in range(steps):
        trainer.step()
        if burst and i == 0:
            trainer.cycle_counter = 0
            trainer._learn(0)
    ctx.synchronize()
    for u in undo:
        u()

    def per(key, n):
        return {p: v / n for p, v in points[key].most_common()}

    learner = per("learner", max(calls["learner"], 1))
    return {"syncs_per_step": sum(learner.values()), "sync_points": learner,
            "sync_counter": ("torch.cuda sync debug mode" if ctx.cuda else "tensor calls that sync on an accelerator")
            + "; the row's per learner update (train())",
            "learner_updates_counted": calls["learner"],
            "acting_syncs_per_env_step": sum(per("acting", steps).values()), "acting_sync_points": per("acting", steps),
            "reconstruction_syncs_per_env_step": sum(per("reconstruction", steps).values()),
            "reconstruction_sync_points": per("reconstruction", steps)}


# -- agreement ---------------------------------------------------------------------------------------------------


class _FixedBatches:
    """A replay that hands out the same stored batches (float64) in turn and keeps the priorities it is given."""

    def __init__(self, batches):
        self.batches, self.next, self.priorities = batches, 0, []

    def sample(self, batch: int):
        out = self.batches[self.next % len(self.batches)]
        self.next += 1
        return out

    def update_priorities(self, indices, priorities) -> None:
        self.priorities.append(priorities.detach())


def _float64(arrays: dict) -> dict:
    return {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in arrays.items()}


def _agreement(ctx: Context, trainer, updates: int, batch: int) -> dict:
    """`updates` learner updates in float64 on the device and on the CPU, from the trainer's current weights (a fresh
    Adam each) and the same batches of its replay (`batch` sequences x at most 2 minibatches, to keep the CPU's
    float64 side short); compared: the losses, the priorities and the parameters' change."""
    r = trainer.config.r2d2
    r64 = dataclasses.replace(r, batch_size=min(r.batch_size, batch), n_minibatches=min(r.n_minibatches, 2))
    batches = []
    for _ in range(updates * r64.n_minibatches):
        idx, steps, state, weights = trainer.replay.sample(r64.batch_size)
        batches.append((idx, _float64(steps), _float64(state), weights.astype(np.float64)))

    def run(device):
        net = copy.deepcopy(trainer.net).to(device=device, dtype=torch.float64)
        before = compared_parameters(net)
        learner = R2D2Learner(net, r64, trainer.config.n_actors, device)
        replay = _FixedBatches(batches)
        losses = torch.stack([learner.train(replay) for _ in range(updates)])
        return {"loss": losses, "priorities": torch.cat(replay.priorities),
                "update": [p - b for p, b in zip(compared_parameters(net), before)]}

    return agreement(run(ctx.device), run(torch.device("cpu")), TOLERANCE,
                     f"losses, priorities and parameter changes of {updates} float64 learner updates on batches of "
                     f"{r64.batch_size} x {r64.n_minibatches} sequences (tolerance: float64 rounding grown through "
                     f"{r.unroll} recurrent steps, the backward's sums and Adam; an argmax tie broken differently by "
                     "the two devices would exceed it; self-attention key biases left out, their true gradient is 0)",
                     updates)


# -- the paper plan ----------------------------------------------------------------------------------------------


def _plan(section: dict, grid: Grid, experiment: str, model: str) -> tuple[int, int]:
    """(runs of this preset in the paper's grid, observations per run)."""
    if experiment == "table2":
        return (sum(f"/model={R2D2}/" in c for c in grid.zsct_curves()), int(section["zsct"]["observations"]))
    return (sum(f"/model={model}/" in c for c in grid.experiment_curves(experiment)),
            int(section["experiments"]["observations"][experiment]))


def _sum_projection(parts: list[dict], estimate: str, complete: bool) -> dict:
    hours = sum(p["device_hours"] for p in parts) if complete else None
    return {"units": sum(p["units"] for p in parts), "device_hours": hours, "estimate_before": estimate,
            "how": "the sum of the three cores' projections" if complete else "not all three cores were measured"}


def _figure_projection(section: dict, grid: Grid, experiment: str, rows: dict) -> dict:
    """A figure's runs in the paper's grid, each preset at its own measured rate or at the rate of the measured preset
    PRICED_AS names; no sum unless every preset has a rate."""
    units, hours, how, presets = 0.0, 0.0, [], []
    for model in grid.experiment_models(experiment):
        key = (experiment, model)
        source, why = PRICED_AS.get(key, (key, ""))
        runs_in_plan, per_run = _plan(section, grid, experiment, model)
        units += runs_in_plan * per_run
        rate = rows[source]["rate"] if "projection" in rows.get(source, {}) else None
        if rate is None:
            hours = None
            at = "not measured" if source == key else f"not priced ({source[1]} not measured)"
        else:
            at = "at its measured rate" if source == key else f"at {source[1]}'s measured rate ({why})"
            hours = None if hours is None else hours + runs_in_plan * per_run / rate / 3600
            split = rows[source].get("env_step_split_ms")
            if source != key and rows[source].get("recon_updates_in_window") and split:
                # the bound's looseness: the same step less the split's (serialised) reconstruction
                r, rec = rows[source], split["reconstruction"]
                low = runs_in_plan * per_run / (r["observations_per_env_step"] * 1e3 / (r["step_ms"] - rec)) / 3600
                at += (f"; at the step less the reconstruction's {rec:.3g} of {r['step_ms']:.3g} ms (the split's, "
                       f"serialised) {low:.3g} device-hours, a lower estimate") if rec < r["step_ms"] else ""
        how.append(f"{model}: {runs_in_plan} runs of {per_run:,} observations {at}")
        if source == key:
            presets.append(f"{model} {'measured' if rate else 'not measured'}")
        else:
            presets.append(f"{model} priced as {source[1]}" + ("" if rate else " (not measured)"))
    return {"units": units, "device_hours": hours, "estimate_before": ESTIMATES[experiment],
            "how": "; ".join(how) or "no runs in the plan", "presets": ", ".join(presets)}
