"""WADE's part of the GPU check.

(a) The reservoir job of `wade_train_reservoir` (`reservoir.run`: every CA rule of paper.yaml in chunks of
    `rules_per_chunk`, then the ESN) on Basic QA's 1200 sequences, timed per chunk (`reservoir.chunk_curves`, the
    body of run's loop): the CA evolved over every sequence, then the readout (one pass of per-sample SGD for all
    rules of the chunk at once, the test set scored at every checkpoint). Unit: CA-rule steps, one token of one
    sequence through one rule's CA (its input XOR-ed in and two updates of the 900 cells). Where time and memory are
    left, one chunk on Incremental periodic, the heaviest task (68k training items, 8,500 checkpoints x 17k test
    items scored).
(b) The Transformer (and, where time is left, the LSTM) of `wade_train_sequence` (`sequence_models.Training`, the
    loop `train` runs) at the 10-epoch settings on Basic QA: a step is one optimiser step of 8 sequences and the test
    accuracy after it, as the run does. Unit: sequences.
(c) Where time is left, IMDB's five models (`wade_train_imdb`: `imdb_models.train`'s loop body, batches of 8 reviews,
    and one test evaluation, `imdb_models.accuracy`) on reviews of IMDB's size (25,000 + 25,000, a 30,000-word
    vocabulary) whose lengths are drawn from a stated assumption (IMDB_LENGTHS): the real corpus is not on the device.

The paper plan is projected task by task from the measured parts (the CA's time scaled by the task's tokens, the
readout's by its training items, a sequence model's step by its test length buckets), each task's sizes counted from
its data at paper.yaml's settings (the first seed).
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import torch

from gpu_parts import agreement, projection
from reprobench.wade import readout, reservoir, tasks
from reprobench.wade import sequence_models as sm
from reprobench.wade.grid import Grid
from reprobench.wade.reca import BLOCKS, CELLS_PER_BLOCK, STEPS

QA, HEAVY = 5, 2  # Basic QA (representative: 6 length groups, 960 training items); Incremental periodic
ESTIMATE = "none (CPU: about 101 + 1.5 CPU-hours for the reservoir grid)"
SEQUENCE_ESTIMATE = "none (CPU: 13-16 s per Transformer run on Basic QA, 10 epochs)"
AGREEMENT_RULES = [30, 54, 90, 110, 150, 184, 206, 232]  # chaotic, complex, additive and simple rules
FEATURES = STEPS * BLOCKS * CELLS_PER_BLOCK
IMDB_REVIEWS, IMDB_VOCAB, IMDB_BATCH = 25_000, 30_000, 8  # per split (spec 3.6); the WordPiece trainer's default
# tokens per review: lognormal, median e^5.45 = 233, mean about 310, clipped to [10, 3000]: an assumption standing in
# for the real corpus's WordPiece lengths (reviews average about 230 words; WordPiece splits some words)
IMDB_LENGTHS = (5.45, 0.75, 10, 3000)
IMDB_EVAL_SUBSET = 2_000  # test reviews an evaluation is timed on, scaled to 25,000 by count


class Sizes:
    """What the projection scales by, from one seed's data of one task."""

    def __init__(self, d: tasks.Dataset, epochs: int):
        lengths = np.array([len(t) for t in d.tokens])
        items = np.array([len(m) for m in d.masks])
        self.tokens = int(lengths.sum())  # through the CA (train and test sequences)
        self.train_items, self.test_items = int(items[d.train].sum()), int(items[~d.train].sum())
        self.samples = self.train_items + 1  # the readout's SGD updates (sample 0 twice)
        self.scored = readout.n_checkpoints(self.train_items) * self.test_items
        self.largest_group = int(max(np.sum(lengths[d.train] == n) * n for n in set(lengths[d.train])))  # tokens
        self.test_groups = len(sm.TestSet(d, "cpu"))  # the evaluation's length buckets
        self.steps = epochs * int(d.train.sum()) // sm.BATCH  # optimiser steps of a sequence-model run


def _timed(ctx, fn):
    ctx.synchronize()
    t0 = time.perf_counter()
    out = fn()
    ctx.synchronize()
    return out, time.perf_counter() - t0


def check(ctx) -> dict:
    budget = ctx.left()
    cfg = ctx.paper("wade")
    grid = Grid(cfg)
    rules, per_chunk, epochs, seed = grid.rules(), cfg["rules_per_chunk"], cfg["epochs"], grid.seeds()[0]
    n_seq = cfg["max_sequences"]
    if ctx.quick:  # a few rules, a few sequences: the code path in a few seconds
        rules, per_chunk, n_seq = rules[::64], 2, 40
        if not ctx.cuda:  # tensors this small gain nothing from threads, and on a busy CPU each op waits for them
            torch.set_num_threads(1)
    data = {t: tasks.generate(t, seed, n_seq) for t in sorted(set(cfg["tasks"]) | {QA})}
    sizes = {t: Sizes(d, epochs) for t, d in data.items()}
    qa, q, notes = data[QA], sizes[QA], []

    # (a) the reservoir job on Basic QA: a chunk (the warm-up), the whole job once where it fits, the chunk timed
    train, test, classes, chunks = reservoir.prepare(qa, "reca", seed, rules, per_chunk, ctx.device)
    fn, chunk_rules = chunks[0][1](), len(chunks[0][0])

    def chunk():  # the device's path: every test item scored (the CPU's unique rows would make a GPU wait)
        return reservoir.chunk_curves(train, test, classes, fn, unique=False)

    _, first_s = _timed(ctx, chunk)
    job_s = None
    if len(chunks) * first_s < 0.1 * budget:
        _, job_s = _timed(ctx, lambda: reservoir.run(qa, "reca", seed, rules, per_chunk, ctx.device))
    else:
        notes.append(f"the whole job was not run: its first chunk took {first_s:.1f} s")
    row = {"setting": f"ReCA on Basic QA (task {QA}, seed {seed}): {len(rules)} rules in chunks of {per_chunk}, "
                      f"{len(qa.tokens)} sequences ({q.tokens} tokens, {q.train_items} training items, "
                      f"{q.test_items} test items x {readout.n_checkpoints(q.train_items)} checkpoints); a step is "
                      "one chunk", "unit": "CA-rule steps",
           **ctx.rate(chunk, chunk_rules * q.tokens, 0.08 * budget, warmup=0, min_steps=1), **ctx.peak_memory_mb(),
           **ctx.syncs(chunk, 1)}
    parts = _chunk_parts(ctx, train, test, classes, fn)
    _, esn_s = _timed(ctx, lambda: reservoir.run(qa, "esn", seed, device=ctx.device))
    row |= {"job_s": job_s and round(job_s, 3), "first_chunk_s": round(first_s, 3), "esn_run_s": round(esn_s, 3),
            "scored_per_step": chunk_rules * q.scored, "chunk_parts_s": {k: round(v, 4) for k, v in parts.items()}}
    ctx.keep("reservoir", row)
    row["agreement"] = _reservoir_agreement(ctx, qa, seed)

    def chunk_model(s: Sizes) -> float:  # a chunk's seconds on a task, scaled from Basic QA's parts
        return (parts["CA features"] * s.tokens / q.tokens + parts["readout SGD"] * s.samples / q.samples +
                parts["readout scoring"] * readout.n_checkpoints(s.train_items) / readout.n_checkpoints(q.train_items))

    chunk_s = {t: chunk_model(s) for t, s in sizes.items()}

    subparts = [_sequence(ctx, qa, "transformer", "faithful", epochs, budget, notes)]
    ctx.keep("transformer", subparts[0])
    if ctx.left() > 0.35 * budget:
        subparts.append(_sequence(ctx, qa, "lstm", "default", epochs, budget, notes))
    else:
        notes.append("the LSTM was not measured (no time left): price the RNN and LSTM runs as the Transformer's")
    subparts += _imdb(ctx, cfg["imdb"], budget, notes)
    heavy = None
    if HEAVY in data and not ctx.quick:
        heavy = _heavy(ctx, data[HEAVY], seed, rules[:per_chunk], sizes[HEAVY], chunk_s[HEAVY], notes)
    if heavy:
        chunk_s[HEAVY] = heavy["seconds"]
        subparts.append(heavy)
    seeds = len(grid.seeds())
    for part in subparts:
        if "model" in part:
            part["projection"] = _sequence_projection(part, sizes, cfg["tasks"], seeds)

    # the paper plan: every task x seed: the job's chunks and the ESN run
    chunks_per_job = math.ceil(len(grid.rules()) / cfg["rules_per_chunk"])
    per_task = {t: seeds * (chunks_per_job * chunk_s[t] + esn_s * sizes[t].samples / q.samples) for t in cfg["tasks"]}
    units = seeds * len(grid.rules()) * sum(sizes[t].tokens for t in cfg["tasks"])
    heavy_how = ("Incremental periodic's chunk as measured" if heavy else "Incremental periodic's scoring, 3e13 "
                 "FLOP per chunk, is FLOP-bound where QA's is launch-bound: this may be a lower bound")
    row["projection"] = projection(
        units, units / sum(per_task.values()), ESTIMATE,
        f"{len(cfg['tasks'])} tasks x {seeds} seeds x {len(grid.rules())} rules x the task's tokens (its first seed's "
        f"data) = {units:.3g} CA-rule steps, in {chunks_per_job} chunks of {cfg['rules_per_chunk']} rules per job, "
        "plus an ESN run per job; a chunk's time on a task is Basic QA's, its parts scaled by the task's tokens (the "
        f"CA), training items (the SGD) and checkpoints (the scoring) over QA's ({heavy_how}); the ESN run's by "
        "training items; the rate used is these units over that time")
    row["projection"]["per_task_hours"] = {tasks.task_spec(t).name: round(h / 3600, 4) for t, h in per_task.items()}
    row["subparts"] = subparts
    row["notes"] = [
        "a step is one chunk as reservoir.run runs it (reservoir.chunk_curves): the CA evolved for each length group "
        "of the train and test sequences, the features at the supervised items gathered and standardised, one pass of "
        "per-sample SGD in float64 for every rule of the chunk at once, the test set scored every 8 samples in "
        "float32 (64 checkpoints per batched product); job_s is the whole ReCA job once (reservoir.run: setup and "
        "read-back included), first_chunk_s the first chunk (warm-up included)",
        "outside the step and counted in job_s: once per job, the data layout, sample order, projection and classes "
        "uploaded (reservoir.prepare); once per chunk, its rule numbers uploaded and its curves read back (one sync)",
        "the readout is sequential, sample after sample, about a dozen small kernels per sample for all rules of a "
        "chunk: expected to be launch-bound on a GPU (its time growing with training items, hardly with rules); if "
        "chunk_parts_s confirms it, chunks of more rules (rules_per_chunk 128 or 256 where memory allows) would cut "
        "the reservoir's GPU time nearly in proportion",
        *notes]
    return row


def _imdb_reviews(rng, n: int, vocab: int, longest: int) -> tuple[list, np.ndarray]:
    mu, sigma, shortest, cap = IMDB_LENGTHS
    lengths = np.clip(np.exp(rng.normal(mu, sigma, n)).astype(int), shortest, min(cap, longest))
    return [rng.integers(1, vocab, size=k) for k in lengths], rng.integers(0, 2, size=n)


def _imdb(ctx, section: dict, budget: float, notes: list) -> list[dict]:
    """IMDB's models (config's wade.imdb.models): the training step as `imdb_models.train` runs it and one test
    evaluation, each projected on paper.yaml's runs (models x seeds x epochs x (steps + evaluations)); the float64
    agreement of the GRU. A model starts only where the time it is expected to take (the costliest model so far)
    leaves the Incremental periodic chunk its reserve: 80 s at caps of 150 s and more (the chunk needs twice its
    prediction, about 2 x 33 + 5 s on an H100), 12 s under them, where the chunk does not fit anyway."""
    from reprobench.wade import imdb_models

    models = list(section["models"])
    reserve = 1 if ctx.quick else (80 if budget >= 150 else 12)
    seconds = 0.1 if ctx.quick else min(3.0, 0.02 * budget)  # the timed steps of one model
    n, vocab, longest = (400, 500, 40) if ctx.quick else (IMDB_REVIEWS, IMDB_VOCAB, IMDB_LENGTHS[3])
    rng = np.random.default_rng(0)
    train_x, train_y = _imdb_reviews(rng, n, vocab, longest)
    test_x, test_y = _imdb_reviews(rng, min(n, IMDB_EVAL_SUBSET), vocab, longest)
    steps = -(-IMDB_REVIEWS // IMDB_BATCH)  # per epoch, as train's loop
    evals = sum(start % section["eval_every"] == 0 for start in range(0, IMDB_REVIEWS, IMDB_BATCH))
    seeds, epochs, rows = section["seeds"], section["epochs"], []
    expected = seconds + (0.5 if ctx.quick else 4.0)  # the first model: its steps, warm-up, syncs, evaluation
    for i, model in enumerate(models):
        if ctx.left() - expected < reserve:
            notes.append(f"IMDB not measured for lack of time ({ctx.left():.0f} s left, a model expected to take "
                         f"{expected:.0f} s, {reserve} s kept for what follows): " + ", ".join(models[i:]))
            break
        t0 = time.monotonic()
        row, eval_s = _imdb_model(ctx, imdb_models, model, vocab, (train_x, train_y, test_x, test_y), seconds,
                                  syncs=i == 0)
        eval_s *= IMDB_REVIEWS / len(test_x)
        run_s = epochs * (steps * row["step_ms"] / 1e3 + evals * eval_s)
        row |= {"evaluation_s": round(eval_s, 3), "run_s": round(run_s, 1), "projection": projection(
            seeds * epochs * steps * IMDB_BATCH, seeds * epochs * steps * IMDB_BATCH / (seeds * run_s),
            "none", f"{seeds} seeds x {epochs} epochs x ({steps:,} steps of {IMDB_BATCH} reviews at the measured step "
            f"+ {evals} evaluations over {IMDB_REVIEWS:,} test reviews, each timed on {len(test_x):,} and scaled by "
            "count); review lengths from IMDB_LENGTHS, an assumption")}
        row["notes"] = [
            "review lengths are drawn from IMDB_LENGTHS (lognormal, median 233, mean about 310 tokens, clipped to "
            "3,000), an assumption standing in for the real corpus's WordPiece lengths: the recurrent models' step and "
            "evaluation grow about in proportion to the longest review of a batch (one recurrent step per token), "
            "the Transformer's between that and its square (attention over the padded length), the Linear's hardly; "
            "the timed batches' longest reviews against the epoch's are in longest_review_mean",
            "the step is imdb_models.train's loop body (_batch, forward, loss, backward, Adam); the evaluation "
            "imdb_models.accuracy, timed once on the first test reviews and scaled to 25,000 by count"]
        rows.append(row)
        ctx.keep(f"imdb {model}", row)
        expected = max(expected, time.monotonic() - t0)
        if ctx.cuda:
            torch.cuda.empty_cache()
    if rows and ctx.left() > reserve + (1 if ctx.quick else 3):
        gru = next((r for r in rows if r["imdb_model"] == "gru"), rows[0])
        gru["agreement"] = _imdb_agreement(ctx, imdb_models, train_x, train_y, vocab)
    if rows:
        hours = sum(r["projection"]["device_hours"] for r in rows)
        notes.append(f"IMDB (Table 2): {hours:.3g} device-hours for {len(rows)} of {len(models)} models x {seeds} "
                     f"seeds x {epochs} epochs (" +
                     ", ".join(f"{r['imdb_model']} {r['projection']['device_hours']:.3g} h, evaluation "
                               f"{r['evaluation_s']:.3g} s" for r in rows) +
                     f"); the evaluation every {section['eval_every']} examples runs {evals} times per epoch over the "
                     "whole test set; tokens per review an assumption (IMDB_LENGTHS)")
    return rows


def _imdb_model(ctx, imdb_models, model: str, vocab: int, data: tuple, seconds: float, syncs: bool):
    """(row, seconds of one evaluation over the test reviews given) of one IMDB model."""
    train_x, train_y, test_x, test_y = data
    torch.manual_seed(0)
    net = imdb_models.build(model, vocab).to(ctx.device)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    labels = torch.as_tensor(train_y, device=ctx.device)
    n_tokens = np.array([len(x) for x in train_x])
    order, k, longest = np.random.RandomState(0).permutation(len(train_x)), itertools.count(), []

    def step():  # imdb_models.train's loop body, line by line, without its logits' shape check, progress bar,
        # evaluation and checkpoint; `longest` is bookkeeping for the row
        start = next(k) * IMDB_BATCH % (len(order) - IMDB_BATCH)
        index = order[start:start + IMDB_BATCH]
        longest.append(int(n_tokens[index].max()))  # from the host's lengths: no sync
        tokens, lengths = imdb_models._batch(train_x, index, ctx.device)
        loss = loss_fn(net(tokens, lengths), labels[index])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    row = {"imdb_model": model, "setting": f"IMDB {model}: batches of {IMDB_BATCH} of {len(train_x):,} reviews of "
                                          f"{n_tokens.mean():.0f} tokens on average (the longest {n_tokens.max()}), "
                                          f"vocabulary {vocab:,}; float32", "unit": "reviews",
           **ctx.rate(step, IMDB_BATCH, seconds, warmup=3),
           **ctx.peak_memory_mb()}
    epoch = n_tokens[order[:len(order) // IMDB_BATCH * IMDB_BATCH]].reshape(-1, IMDB_BATCH).max(1)
    row["longest_review_mean"] = {"timed batches": round(float(np.mean(longest[3:3 + row["steps"]])), 1),
                                  "an epoch's batches": round(float(epoch.mean()), 1)}
    if syncs:
        row |= ctx.syncs(step, 3)
        row["sync_sources"] = ("_batch: the lengths made on the device from a list, int(lengths.max()) for the "
                               "padded width, one copy per review (8 a step); forward: pack_padded_sequence's "
                               "lengths.cpu(), the index of the last real token (sync_points has the lines); the "
                               "step: labels[index] with a host index. The evaluation adds accuracy's .cpu() per "
                               "batch of 32 (782 per evaluation) besides its 25,000 per-review copies")
    _, eval_s = _timed(ctx, lambda: imdb_models.accuracy(net, test_x, test_y, ctx.device))
    return row, eval_s


def _imdb_agreement(ctx, imdb_models, train_x, train_y, vocab: int, steps: int = 2) -> dict:
    """The GRU classifier: `steps` Adam steps in float64 from the same initial weights on the device and the CPU,
    dropout off, the same batches: the losses and every weight after them."""
    def on(device):
        torch.manual_seed(0)
        net = imdb_models.build("gru", vocab)
        _without_dropout(net)
        net = net.to(device, torch.float64)
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        labels = torch.as_tensor(train_y, device=device)
        losses = []
        for b in range(steps):
            index = np.arange(b * IMDB_BATCH, (b + 1) * IMDB_BATCH)
            tokens, lengths = imdb_models._batch(train_x, index, device)
            loss = torch.nn.functional.cross_entropy(net(tokens, lengths), labels[index])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        return [torch.stack(losses), torch.cat([p.detach().flatten() for p in net.parameters()])]

    return agreement(on(ctx.device), on(torch.device("cpu")), tolerance=1e-9, steps=steps,
                     what=f"IMDB's GRU classifier: the losses of {steps} Adam steps on batches of {IMDB_BATCH} reviews "
                          "and all weights after them (one vector), float64, dropout off")


def _chunk_parts(ctx, train, test, classes, fn) -> dict:
    """Seconds of a chunk's parts, which the projection scales apart: the CA (by tokens), the readout's SGD (by
    training items) and its scoring (by checkpoints: a product per 64, launch-bound on Basic QA's sizes); the SGD
    alone is the readout scoring one test item."""
    (xtr, xte), features = _timed(ctx, lambda: (train.features(fn), test.features(fn)))
    _, whole = _timed(ctx, lambda: readout.fit_and_score(xtr, train.targets, xte, test.targets, classes,
                                                         binary_features=True))
    _, sgd = _timed(ctx, lambda: readout.fit_and_score(xtr, train.targets, xte[:, :1], test.targets[:1], classes,
                                                       binary_features=True))
    return {"CA features": features, "readout SGD": sgd, "readout scoring": max(whole - sgd, 0.0)}


def _reservoir_agreement(ctx, qa, seed) -> dict:
    """A chunk of 8 rules on Basic QA on the device and on the CPU, scored in float64: the CA features must be
    identical (uint8 arithmetic); the curves equal but for a test item whose logit is within rounding of 0."""
    rules = AGREEMENT_RULES[:2] if ctx.quick else AGREEMENT_RULES

    def on(device):
        train, test, classes, chunks = reservoir.prepare(qa, "reca", seed, rules, len(rules), device)
        fn = chunks[0][1]()
        xtr, xte = train.features(fn), test.features(fn)
        return [xtr, xte], readout.fit_and_score(xtr, train.targets, xte, test.targets, classes,
                                                 score_dtype=torch.float64, binary_features=True)

    (fd, cd), (fc, cc) = on(ctx.device), on(torch.device("cpu"))
    result = agreement(cd, cc, tolerance=1e-3, what=f"the accuracy curves of rules {rules} on Basic QA (SGD and "
                       "scoring in float64), and the CA features at every item (exactly)", steps=cc.shape[1])
    result["features_identical"] = all(torch.equal(a.cpu(), b) for a, b in zip(fd, fc))
    result["largest_accuracy_difference"] = float((cd.cpu() - cc).abs().max())
    result["within"] = result["within"] and result["features_identical"]
    result["why_tolerance"] = ("the features are 0/1 and must be equal; the float64 SGD differs from the CPU's only "
                               "in summation order (about 1e-16 relative), which flips a test item only where its "
                               "logit is within rounding of 0: one item of 240 at one checkpoint of 121 is 5e-4")
    return result


def _heavy(ctx, d, seed, rules, s: Sizes, predicted: float, notes: list) -> dict | None:
    """One chunk on Incremental periodic, where the time (twice the prediction, the last thing the part does) and the
    device memory allow it."""
    # bytes: the CA's output for the largest group, the gathered and reordered training features, the test features
    # in uint8 and float32, and a margin of 2 GiB (the 0/1 features' standardisation is integer counts)
    need = len(rules) * FEATURES * (s.largest_group + 2 * s.train_items + 6 * s.test_items) + 2**31
    free = torch.cuda.mem_get_info(ctx.device)[0] if ctx.cuda else float("inf")
    if 2 * predicted + 5 > ctx.left() or need > 0.85 * free:
        notes.append(f"Incremental periodic was not measured: a chunk of {len(rules)} rules was predicted at "
                     f"{predicted:.1f} s and {need / 2**30:.0f} GiB, with {ctx.left():.0f} s left")
        return None
    try:
        train, test, classes, chunks = reservoir.prepare(d, "reca", seed, rules, len(rules), ctx.device)
        fn = chunks[0][1]()
        ctx.reset_peak_memory()
        _, seconds = _timed(ctx, lambda: reservoir.chunk_curves(train, test, classes, fn))
    except torch.cuda.OutOfMemoryError as exc:
        notes.append(f"Incremental periodic: out of device memory for a chunk of {len(rules)} rules ({exc})")
        return None
    return {"task": HEAVY, "setting": f"one chunk of {len(rules)} rules on Incremental periodic (task {HEAVY}, seed "
                                      f"{seed}): {s.tokens} tokens, {s.train_items} training items, {s.test_items} "
                                      f"test items x {readout.n_checkpoints(s.train_items)} checkpoints",
            "unit": "CA-rule steps", "steps": 1, "seconds": round(seconds, 3), "step_ms": round(1e3 * seconds, 3),
            "rate": len(rules) * s.tokens / seconds, **ctx.peak_memory_mb(),
            "predicted_from_basic_qa_s": round(predicted, 3), "scored_per_step": len(rules) * s.scored,
            "notes": ["the top row's step (reservoir.chunk_curves) on this task, timed once after the top row's "
                      "warm-up: its syncs and agreement are the top row's; its time replaces the model's for this "
                      "task in the top row's projection"],
            "estimated_memory_gib": round(need / 2**30, 1)}


def _sequence(ctx, qa, model: str, config: str, epochs: int, budget: float, notes: list) -> dict:
    """Steps of one sequence-model run as `train` runs them, timed; the test evaluation timed apart; float64
    agreement."""
    run = sm.Training(qa, model, qa.seed, config, epochs, ctx.device)
    k = itertools.count()

    def step():
        return run.step(next(k) % run.steps)

    timing = ctx.rate(step, sm.BATCH, (0.08 if model == "transformer" else 0.04) * budget, warmup=3, min_steps=2)
    row = {"model": model, "setting": f"{model}/{config} on Basic QA: {run.steps} steps of {sm.BATCH} sequences "
                                      f"(10 epochs), the test set's {len(run.test)} length buckets evaluated after "
                                      "every step; float32", "unit": "sequences",
           **timing, **ctx.peak_memory_mb(), **ctx.syncs(step, 3)}
    _, eval_s = _timed(ctx, lambda: [sm.accuracy(run.net, run.test) for _ in range(5)])
    row["step_parts_ms"] = {"train": round(max(timing["step_ms"] - 200 * eval_s, 0.0), 3),
                            "per test length bucket": round(200 * eval_s / len(run.test), 3)}
    try:
        row["agreement"] = _sequence_agreement(ctx, qa, model, config, epochs)
    except Exception as exc:  # a failed comparison is reported, the timings stand
        row["agreement"] = {"what": f"{model}: float64 steps", "error": f"{type(exc).__name__}: {exc}", "within": False}
        notes.append(f"{model}: the float64 comparison failed: {type(exc).__name__}: {exc}")
    return row


def _without_dropout(net):
    for m in net.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
        if isinstance(m, torch.nn.MultiheadAttention):
            m.dropout = 0.0


def _sequence_agreement(ctx, qa, model, config, epochs, steps: int = 3) -> dict:
    """`steps` training steps in float64 from the same initial weights on the device and on the CPU, dropout off
    (each device draws its masks from its own generator): the losses, and every weight after them."""
    def on(device):
        run = sm.Training(qa, model, qa.seed, config, epochs, device, dtype=torch.float64)
        _without_dropout(run.net)
        losses = torch.stack([run.step(k) for k in range(steps)])
        return [losses, torch.cat([p.detach().flatten() for p in run.net.parameters()])], run.curve[:steps]

    (dv, dc), (cv, cc) = on(ctx.device), on(torch.device("cpu"))
    result = agreement(dv, cv, tolerance=1e-9, what=f"{model}/{config}: the losses of {steps} Adam steps on Basic QA "
                       "and all weights after them (one vector), float64, dropout off", steps=steps)
    result["accuracy_equal"] = bool(torch.equal(dc.cpu(), cc))
    result["why_tolerance"] = ("float64 differs only in summation order (about 1e-16 per operation); Adam divides by "
                               "sqrt(v) + 1e-8, so a weight whose true gradient is 0 (the keys' bias) moves by noise "
                               "of about 1e-12, far under 1e-9 of the weights' norm")
    return result


def _sequence_projection(part: dict, sizes: dict, task_ids, seeds: int) -> dict:
    """Two runs per (task, seed) at this model's measured step (the Transformer: faithful and corrected; the LSTM:
    the LSTM and the RNN): per task, its steps x (the train part + its test length buckets x the time per bucket)."""
    ms = part["step_parts_ms"]
    seconds = {t: 2 * seeds * sizes[t].steps * (ms["train"] + ms["per test length bucket"] * sizes[t].test_groups) / 1e3
               for t in task_ids}
    units = 2 * seeds * sm.BATCH * sum(sizes[t].steps for t in task_ids)
    runs = "both Transformer runs (faithful, corrected)" if part["model"] == "transformer" else \
        "the LSTM and RNN runs (the RNN priced as the LSTM)"
    out = projection(units, units / sum(seconds.values()), SEQUENCE_ESTIMATE,
                     f"{runs}: {len(task_ids)} tasks x {seeds} seeds x floor(10 epochs x training sequences / 8) "
                     f"steps x 8 = {units:.3g} sequences; a step on a task costs the measured train part plus the "
                     "task's test length buckets x the measured time per bucket (the evaluation after every step runs "
                     "one forward per bucket)")
    out["per_task_hours"] = {tasks.task_spec(t).name: round(h / 3600, 4) for t, h in seconds.items()}
    return out
