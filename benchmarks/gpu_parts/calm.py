"""calm on the device: Table 1's online learners at paper.yaml's sizes, through the step of the `calm_train` rule.

A measurement builds a learner with `zoo.build` (what `runs.train_run` calls: size_factor 1, no cap on the plastic
gate's k) and times `online.learn_batch`, the body of `run_online`'s loop: the batch to the device, `learn` (score the
batch, then li passes of the experts' update with per-expert clipping and Adam, and per pass the plastic gate's k
Adam steps or the LSTM gate's one), the gate weights and the loss kept on the device. The batches come from a stream
of the synthetic stand-in corpus (made here, offline; bptt 20 x 10 streams = 200 tokens), its vocabulary padded to
the real corpora's (211 characters, about 58,000 words) so that every shape is the paper's. Measured in this order
while time lasts: PoE+PW 30 on news lambda 10k (the row: 21.8M parameters, li 2, k 10), MoE 30 on news 10k (its
LSTM gate, after the warm-up), Large LSTM on domain 10k (H 5200: the FLOP rate of a FLOP-bound run), PoE+PW 30 on
domain 10k (k 100 gate steps over the (30, 20, 10, 58000) expert outputs: their memory traffic) and PoE+PW 30 on
news 100k (k 100: with the first, a pass's and a gate step's latency). `StepModel` extrapolates them to the grid.
Then, while time lasts, Appendix C's Transformer on its four settings (windows of 100 tokens x 10 streams read with a
512-token buffer, li Adam steps per window), each timed after the buffer has filled, and projected on its own runs;
its float64 agreement with the CPU at a quarter of the widths (d 512, 8 heads, a 128-token buffer).
"""

from __future__ import annotations

import itertools
import math
import tempfile
from collections import Counter
from pathlib import Path

import calm_throughput as flop_count  # the FLOP count of calm_throughput.py --estimate
import torch

from gpu_parts import agreement, compared_parameters, projection
from reprobench.calm import corpora, runs, synthetic, zoo
from reprobench.calm.grid import SPLITS, Grid
from reprobench.calm.models import auto_recurrence
from reprobench.calm.online import learn_batch
from reprobench.calm.stream import Stream

ESTIMATE = "about 30 GPU-hours per variant (FLOP count at an assumed 20 TFLOP/s)"
ASSUMED_FLOPS = 20e12  # the estimate's rate, for a FLOP-bound pass when Large LSTM could not be measured
VOCAB = {"multilingual": 211, "multidomain": 58_000}  # the real corpora's (spec 1.5; calm_throughput.DATASETS)
CLASSES = {"multilingual": corpora.LANGS, "multidomain": corpora.DOMAINS}
BPTT, STREAMS = 20, 10  # zoo.bptt of every Table 1 model, Stream's b
TOKENS = BPTT * STREAMS
NEWS_10K, NEWS_100K, DOMAIN_10K = ("multilingual", 10_000), ("multilingual", 100_000), ("multidomain", 10_000)
MEASURED = (("poe_pw_30", *NEWS_10K), ("moe_30", *NEWS_10K), ("large_lstm", *DOMAIN_10K),
            ("poe_pw_30", *DOMAIN_10K), ("poe_pw_30", *NEWS_100K))
AGREE_TOL = 1e-9  # float64; the batched and looped CPU paths agree to ~3e-14 after three steps (calm_throughput.py)
# Appendix C's Transformer, in the order measured: news 10k (d 2048, 3 layers, li 5) first, the costliest per window
TRANSFORMER_SETTINGS = (NEWS_10K, DOMAIN_10K, NEWS_100K, ("multidomain", 20_000))
TRANSFORMER_ESTIMATE = "none (not in the README's estimates)"
TRANSFORMER_AGREE_FACTOR = 0.25  # the agreement's widths: float64 at d 2048 on the CPU would take minutes


class Sizes:
    """paper.yaml's sizes (the real vocabularies), or the quick check's tiny ones (the stand-in's vocabularies)."""

    def __init__(self, quick: bool, stand_in_vocab: dict[str, int]):
        self.quick = quick
        self.size_factor, self.max_gate_steps = (0.05, 3) if quick else (1.0, 0)
        self.vocab = stand_in_vocab if quick else VOCAB
        if any(stand_in_vocab[d] > self.vocab[d] for d in VOCAB):
            raise ValueError(f"the stand-in's vocabularies {stand_in_vocab} exceed the padded ones {self.vocab}")

    def config(self, model: str, dataset: str, lam: int) -> zoo.ModelConfig:
        return zoo.config(model, dataset, lam, self.size_factor, self.max_gate_steps)

    def learner(self, model: str, dataset: str, lam: int, device=None):
        """The run's learner, built on `device` (its initial parameters drawn there: the paper's largest take seconds
        to draw on a CPU) or, without one, on the CPU as `runs.train_run` builds it."""
        torch.manual_seed(0)
        with torch.device(device or "cpu"):
            return zoo.build(model, dataset, lam, self.vocab[dataset], "faithful", self.size_factor,
                             self.max_gate_steps)


def stand_in_batches(folder: str, windows=(BPTT,)) -> tuple[dict[tuple[str, int], list], dict[str, int]]:
    """({(dataset, window): the batches of a short stream}, {dataset: vocabulary size}) of a small synthetic stand-in
    (a few thousand tokens per class: 2 fragments per class of about 1,000 tokens); a window's batches are window
    tokens per stream (bptt = window: Table 1's 20, the Transformer's 100)."""
    root = synthetic.make_synthetic(Path(folder) / "stand-in", chars_per_language=60_000, words_per_domain=20_000)
    batches, vocab = {}, {}
    for dataset, prefix in SPLITS.items():
        tokens, words = corpora.load_tokens(root / f"{prefix}_test")
        for window in windows:
            batches[dataset, window] = list(Stream(tokens, 1_000, 0, 2 * len(tokens), b=STREAMS, window=window,
                                                   bptt=window))
        vocab[dataset] = len(words)
    return batches, vocab


def measure(ctx, sizes: Sizes, model: str, dataset: str, lam: int, batches: list, seconds: float,
            syncs: bool, warmup: int = 2) -> dict:
    """One learner's online step on the device, after its warm-up (an MoE's gate trains, as in 95 of 100 fragments;
    the Transformer's buffer fills over its first windows: `warmup` steps)."""
    cfg = sizes.config(model, dataset, lam)
    learner = sizes.learner(model, dataset, lam, ctx.device)
    if cfg.warmup:
        learner.on_fragment(cfg.warmup)
    losses = torch.full((len(batches),), math.nan, device=ctx.device)
    weights, stream = None, itertools.cycle(batches)

    def step():
        nonlocal weights
        weights = learn_batch(learner, next(stream), ctx.device, losses, weights)

    out = {"model": model, "dataset": dataset, "lambda": lam, "vocabulary": sizes.vocab[dataset],
           "parameters": runs.n_parameters(learner), "nhid": cfg.nhid, "n_experts": cfg.n_experts, "li": cfg.li,
           "gate": cfg.gate or "-", "gate_steps": cfg.gate_steps if cfg.gate == "grad" else 0}
    tokens = batches[0].x.numel()
    out |= {"window": batches[0].x.shape[0], "context": cfg.context, "n_layers": cfg.n_layers} if cfg.context else {}
    out |= ctx.rate(step, tokens, seconds, warmup=warmup)
    out |= ctx.peak_memory_mb()
    if syncs:
        out |= ctx.syncs(step)
    return out


def agree(ctx, sizes: Sizes, batches: list, steps: int) -> dict:
    """PoE+PW 30 and MoE 30 (news 10k) for `steps` batches in float64, dropout off, from the same initial state
    (built on the CPU as `runs.train_run` builds it, then moved): the per-batch losses and the final parameters of
    experts and gate on the device and on the CPU."""
    def run(device) -> list:
        values = []
        for model in ("poe_pw_30", "moe_30"):
            cfg = sizes.config(model, *NEWS_10K)
            learner = sizes.learner(model, *NEWS_10K)
            learner.experts.dropout = 0.0  # masks would come from two generators
            for module in (learner.experts, learner.gate, learner.uniform):
                module.to(device, torch.float64)  # in place: the optimisers keep their parameters
            if cfg.warmup:
                learner.on_fragment(cfg.warmup)
            losses = torch.stack([learner.learn(b.x.to(device), b.y.to(device)) for b in batches[:steps]])
            values += [losses, *learner.experts.parameters(), *learner.gate.parameters()]
        return values

    nhid = sizes.config("poe_pw_30", *NEWS_10K).nhid
    return agreement(run(ctx.device), run(torch.device("cpu")), AGREE_TOL,
                     f"PoE+PW 30 and MoE 30 (news 10k), {steps} batches each in float64 without dropout: per-batch "
                     "losses and the final parameters of experts and gates (recurrence on the device "
                     f"'{auto_recurrence(ctx.device, nhid)}', on the CPU '{auto_recurrence('cpu', nhid)}')", steps)


def plan_batches(section: dict, models=zoo.MODELS) -> Counter:
    """{(model, dataset, lambda): batches} of the runs of `models` (Table 1's by default) in paper.yaml, one variant:
    the grid's runs (its seeds, 7 or 8 for domain MoE 30) and each run's batches from its stream (which depends on
    the dataset's number of classes, lambda, the seed, n_fragments, the window and the model's bptt)."""
    grid = Grid(section | {"models": list(models), "variants": ["faithful"]})
    per_stream, out = {}, Counter()
    for run in grid.runs():
        bptt = zoo.bptt(run["model"], section["window"])
        key = run["dataset"], run["lam"], run["seed"], bptt
        if key not in per_stream:
            per_stream[key] = len(Stream(CLASSES[run["dataset"]], run["lam"], run["seed"], section["n_fragments"],
                                         b=STREAMS, window=section["window"], bptt=bptt))
        out[run["model"], run["dataset"], run["lam"]] += per_stream[key]
    return out


def _flops(cfg: zoo.ModelConfig, vocab: int) -> tuple[float, float]:
    """(FLOPs of one pass, of one plastic-gate step) over a batch, by calm_throughput's count."""
    kind, *rest = flop_count.grid_row(cfg)
    if cfg.arch == "per_class":
        kind = "ind"
    one_pass = flop_count.flops_per_token((kind, rest[0], rest[1], 1, 0, rest[4]), vocab) * TOKENS
    return one_pass, 3 * 2 * cfg.n_experts * vocab * TOKENS


STEP_MODEL = ("li passes, each max(a pass's measured latency, its FLOPs at the FLOP rate measured on Large LSTM), "
              "plus li x k plastic-gate steps, each max(a gate step's measured latency, the measured domain gate step "
              "scaled by N V, the size of the expert outputs it reads); a pass's latency is PoE+PW 30's (news) or, "
              "with an LSTM gate, MoE 30's, for the single LSTMs an upper bound (one cuDNN LSTM launches fewer kernels "
              "than 30 batched experts), so that the small models' rates are bounded below")


class StepModel:
    """The seconds of one batch of any Table 1 row from the measured steps (STEP_MODEL)."""

    def __init__(self, sizes: Sizes, measured: dict, notes: list):
        def seconds(key):
            return measured[key]["step_ms"] / 1e3 if key in measured else None

        def cfg(key):
            return sizes.config(*key)

        a, a2 = MEASURED[0], MEASURED[4]
        s_a, s_a2 = seconds(a), seconds(a2)
        li_a, k_a, li_a2, k_a2 = cfg(a).li, cfg(a).gate_steps, cfg(a2).li, cfg(a2).gate_steps
        det = li_a * li_a2 * (k_a2 - k_a)
        if s_a2 is not None and det:  # li P + li k G = s for both settings
            self.gate = max((li_a * s_a2 - li_a2 * s_a) / det, 0.0)
            self.pass_ = max((s_a - li_a * k_a * self.gate) / li_a, 0.0)
        else:  # an upper bound: each part takes the whole step
            self.pass_, self.gate = s_a / li_a, s_a / (li_a * k_a)
            notes.append("pass and gate-step latency not separated (PoE+PW 30 news 100k unmeasured, or with news "
                         "10k's k): both bounded above by the whole step of news 10k")
        self.lstm_pass = seconds(MEASURED[1]) or self.pass_
        large = MEASURED[2]
        if large in measured:
            self.flops = cfg(large).li * _flops(cfg(large), sizes.vocab[large[1]])[0] / seconds(large)
        else:
            self.flops = ASSUMED_FLOPS
            notes.append(f"FLOP-bound passes at an assumed {ASSUMED_FLOPS / 1e12:g} TFLOP/s (Large LSTM unmeasured)")
        domain = MEASURED[3]
        self.gate_per_nv = None
        if domain in measured:
            c = cfg(domain)
            vocab = sizes.vocab[domain[1]]
            pass_s = max(self.pass_, _flops(c, vocab)[0] / self.flops)
            gate_s = max((seconds(domain) - c.li * pass_s) / (c.li * c.gate_steps), self.gate)
            self.gate_per_nv = gate_s / (c.n_experts * vocab)
        else:
            notes.append("gate steps at large V from their FLOPs (PoE+PW 30 domain 10k unmeasured)")

    def batch_seconds(self, cfg: zoo.ModelConfig, vocab: int) -> float:
        pass_flops, gate_flops = _flops(cfg, vocab)
        latency = self.lstm_pass if cfg.gate == "lstm" else self.pass_
        one_pass = max(latency, pass_flops / self.flops)
        if cfg.gate != "grad" or cfg.n_experts == 1:
            return cfg.li * one_pass
        traffic = gate_flops / self.flops if self.gate_per_nv is None else self.gate_per_nv * cfg.n_experts * vocab
        return cfg.li * (one_pass + cfg.gate_steps * max(self.gate, traffic))


QUICK_TRANSFORMER_WINDOW = 20  # --quick: the Transformer's context shrinks with size_factor 0.05 to 26 tokens


def transformer_rows(ctx, sizes: Sizes, section: dict, batches: dict, window: int, notes: list) -> list[dict]:
    """Appendix C's Transformer on its settings while time lasts, each projected on its own runs in paper.yaml (one
    variant); the first with host syncs, then the float64 agreement at reduced widths. [] if none could run."""
    plan = plan_batches(section, (zoo.TRANSFORMER,))
    rows = []
    for i, (dataset, lam) in enumerate(TRANSFORMER_SETTINGS):
        if ctx.left() < (3 if ctx.quick else 12):
            notes.append("Transformer not measured for lack of time: " + ", ".join(
                f"{d} {lam_ // 1000}k" for d, lam_ in TRANSFORMER_SETTINGS[i:]))
            break
        cfg = sizes.config(zoo.TRANSFORMER, dataset, lam)
        warm = math.ceil(cfg.context / window) + 1  # until the buffer holds its full context
        row = measure(ctx, sizes, zoo.TRANSFORMER, dataset, lam, batches[dataset, window],
                      0.2 if ctx.quick else min(6.0, 0.2 * ctx.left()), syncs=i == 0, warmup=warm)
        row["setting"] = (f"Transformer {dataset} {lam // 1000}k: d {cfg.nhid}, {cfg.n_heads} heads, {cfg.n_layers} "
                          f"layer(s), li {cfg.li}, V {sizes.vocab[dataset]:,}, windows of {row['window']} x {STREAMS} "
                          f"tokens read with a {cfg.context}-token buffer")
        n = plan[zoo.TRANSFORMER, dataset, lam]
        row["projection"] = projection(n * row["window"] * STREAMS, row["rate"], TRANSFORMER_ESTIMATE,
                                       f"{n:,} windows of {row['window']} x {STREAMS} tokens over the grid's "
                                       f"Transformer runs on {dataset} {lam // 1000}k (10 seeds), one variant, at "
                                       "this setting's measured step")
        rows.append(row)
        ctx.keep(f"transformer {dataset} {lam}", row)
        if ctx.cuda:
            torch.cuda.empty_cache()
    if rows and ctx.left() > (3 if ctx.quick else 10):
        rows[0]["agreement"] = agree_transformer(ctx, sizes, batches["multilingual", window], 2)
    if len(rows) == len(TRANSFORMER_SETTINGS):
        hours = sum(r["projection"]["device_hours"] for r in rows)
        notes.append(f"Appendix C's Transformer, measured on its 4 settings: {hours:.3g} device-hours per variant "
                     "(" + ", ".join(f"{r['dataset']} {r['lambda'] // 1000}k {r['projection']['device_hours']:.3g} h"
                                     for r in rows) + "); the corrected variant adds an eval-mode forward per window "
                     "and carries one copy of the window, not li")
    return rows


def agree_transformer(ctx, sizes: Sizes, batches: list, steps: int) -> dict:
    """The Transformer (news 10k's setting at TRANSFORMER_AGREE_FACTOR of its widths and buffer) for `steps`
    windows in float64, dropout off, from the same initial weights (built on the CPU): the losses and the weights."""
    factor = 0.05 if ctx.quick else TRANSFORMER_AGREE_FACTOR
    vocab = sizes.vocab["multilingual"]

    def run(device) -> list:
        torch.manual_seed(0)
        learner = zoo.build(zoo.TRANSFORMER, *NEWS_10K, vocab, "faithful", factor)
        for m in learner.model.modules():  # masks would come from two generators
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0
            if isinstance(m, torch.nn.MultiheadAttention):
                m.dropout = 0.0
        learner.model.to(device, torch.float64)  # in place: the optimiser keeps its parameters
        losses = torch.stack([learner.learn(b.x.to(device), b.y.to(device)) for b in batches[:steps]])
        return [losses, *compared_parameters(learner.model)]

    cfg = zoo.config(zoo.TRANSFORMER, *NEWS_10K, size_factor=factor)
    return agreement(run(ctx.device), run(torch.device("cpu")), AGREE_TOL,
                     f"the Transformer (news 10k's setting at {factor} of its widths: d {cfg.nhid}, {cfg.n_heads} "
                     f"heads, {cfg.n_layers} layers, a {cfg.context}-token buffer, li {cfg.li}), {steps} windows in "
                     "float64 without dropout: the losses and every weight after them (the attention's key bias "
                     "left out: its true gradient is 0, gpu_parts.compared_parameters)", steps)


def check(ctx) -> dict:
    if ctx.quick and not ctx.cuda:
        torch.set_num_threads(1)  # tiny ops: one thread, the fastest on a shared CPU
    section = ctx.paper("calm")
    t_window = QUICK_TRANSFORMER_WINDOW if ctx.quick else section["window"]
    with tempfile.TemporaryDirectory() as folder:
        batches, stand_in_vocab = stand_in_batches(folder, (BPTT, t_window))
    sizes = Sizes(ctx.quick, stand_in_vocab)
    plan = plan_batches(section)
    measured, notes, agree_row = {}, [], None
    for i, key in enumerate(MEASURED):
        if i == 2:  # the CPU comparison after the row and its MoE subpart
            agree_row = agree(ctx, sizes, batches["multilingual", BPTT], 2 if ctx.quick else 3)
            ctx.keep("agreement", agree_row)
        seconds = 0.2 if ctx.quick else min(8.0, 0.15 * ctx.left())
        if measured and ctx.left() < (3 if ctx.quick else 15):
            notes.append("not measured for lack of time: " + ", ".join(f"{m} {d} {lam}" for m, d, lam in MEASURED[i:]))
            break
        measured[key] = measure(ctx, sizes, *key, batches[key[1], BPTT], seconds, syncs=i < 2)
        ctx.keep(" ".join(map(str, key)), measured[key])
        if ctx.cuda:
            torch.cuda.empty_cache()  # the next learner may be 30 times larger
    transformer = transformer_rows(ctx, sizes, section, batches, t_window, notes)
    model = StepModel(sizes, measured, notes)
    hours = {key: n_batches * model.batch_seconds(sizes.config(*key), sizes.vocab[key[1]]) / 3600
             for key, n_batches in plan.items()}
    total_s, units, by_dataset = 3600 * sum(hours.values()), TOKENS * sum(plan.values()), Counter()
    for (_, dataset, lam), h in hours.items():
        by_dataset[dataset, lam] += h
    largest = sorted(hours, key=hours.get, reverse=True)[:5]
    top = measured[MEASURED[0]]
    recurrence = auto_recurrence(ctx.device, top["nhid"])
    row = {
        "setting": f"{'quick: ' if ctx.quick else ''}PoE+PW 30, news lambda 10k: N {top['n_experts']}, "
                   f"H {top['nhid']}, V {top['vocabulary']} (the stand-in's ids), li {top['li']}, "
                   f"k {top['gate_steps']}, "
                   f"{top['parameters'] / 1e6:.1f}M parameters, {BPTT} x {STREAMS} tokens per batch, float32, "
                   f"recurrence '{recurrence}'",
        "unit": "tokens", **{k: top[k] for k in ("rate", "steps", "seconds", "step_ms", "peak_memory_mb",
                                                  "memory_counter", "syncs_per_step", "sync_points", "sync_counter")},
        "agreement": agree_row,
        "projection": projection(units, units / total_s, ESTIMATE,
                                 f"Table 1's 13 models x 4 (dataset, lambda) in paper.yaml, one variant: "
                                 f"{sum(plan.values()):,} batches of {TOKENS} tokens over the grid's runs (10 seeds, "
                                 "7-8 for domain MoE 30), each run's batches from its stream; each row's batch time "
                                 f"from the measured steps: {STEP_MODEL}; "
                                 + ", ".join(f"{d} {lam // 1000}k {h:,.2f} h" for (d, lam), h in by_dataset.items())),
        "subparts": [measured[k] for k in MEASURED[1:] if k in measured] + transformer,
        "notes": [f"one step = online.learn_batch (run_online's loop body) on {TOKENS} tokens: the batch to the "
                  "device, learn (score, li passes of the experts' update: forward, loss, backward, clipping per "
                  "expert, Adam; per pass k plastic-gate Adam steps or one LSTM-gate step), the gate weights and the "
                  "loss kept on the device; left out: Appendix D's sampler (seed 0 only, a few stages), the "
                  "checkpoint every 10 minutes and the curve's copy to the host at the end",
                  f"step model: pass latency {model.pass_ * 1e3:.3g} ms (PoE+PW 30), {model.lstm_pass * 1e3:.3g} ms "
                  f"(with an LSTM gate), gate step {model.gate * 1e3:.3g} ms, FLOP-bound passes at "
                  f"{model.flops / 1e12:.3g} TFLOP/s"
                  + ("" if model.gate_per_nv is None else
                     f", a gate step over 30 x {sizes.vocab['multidomain']:,} outputs "
                     f"{model.gate_per_nv * 30 * sizes.vocab['multidomain'] * 1e3:.3g} ms"),
                  "largest rows of the plan: " + ", ".join(f"{zoo.LABELS[m]} {d} {lam // 1000}k {hours[m, d, lam]:,.2f}"
                                                           " h" for m, d, lam in largest),
                  f"the experts' recurrence here: '{recurrence}' (on CUDA 'unrolled': per layer and time step one "
                  "batched matmul for all experts and torch's fused LSTM-cell kernel, 2 kernels, 3 in the backward, "
                  "and the recurrent weights' gradient in one matmul per layer); cuDNN runs the single LSTMs and the "
                  "LSTM gates; matmuls in full float32 (torch's default: no TF32), cuDNN's LSTMs may use TF32 "
                  "(torch.backends.cudnn.allow_tf32 is on by default)",
                  "the corrected variant adds one no-grad forward per batch (scoring in eval mode): about a third of "
                  "a pass more",
                  *notes],
    }
    if ctx.quick:
        row["notes"].append("quick: tiny sizes (size_factor 0.05, k at most 3, the stand-in's vocabularies): the rates "
                            "and the projection only exercise the code")
    return row
