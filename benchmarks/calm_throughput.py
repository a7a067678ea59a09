"""Throughput of one online CALM training step for a mixture of N expert LSTMs: batched experts against a loop.

    python benchmarks/calm_throughput.py [--experts 30] [--nhid 200] [--vocab 211] [--bptt 20] [--streams 10]
                                         [--steps 10] [--device auto] [--threads 1] [--estimate [--tflops 20]]

One step (specs/calm.md 3.2, 3.6): forward on a (T, b) window from the carried, detached hidden state, PoE
combination sum_i w_i z_i with a detached weight vector w, cross-entropy, backward, gradient-norm clipping to 1.0
separately per expert, one Adam step (lr 1e-3) over all experts' parameters.
(a) batched: reprobench.calm.models.ExpertLSTMs (stacked parameters, per-expert clipping done on the stacked
    gradients), once with each of its recurrences: "unrolled" (one autograd node per layer: one batched matmul per
    step for all experts, the recurrent weight gradient of the window in one matmul after the backward loop; torch's
    fused LSTM-cell kernel on CUDA), "per_expert" (torch's own LSTM per expert: oneDNN's on a CPU) and "autograd"
    (every step's ops recorded, the recurrent weight gradient summed step by step: the path before);
(b) loop: N separate LSTMLMs as the reference runs them, clip_grad_norm_ per module.
All start from the same parameters. Dropout 0.2 (train mode) for the timing; a dropout-0 float64 run of a few steps
first checks that each (a) ends with the parameters of (b). Prints tokens/s (T x b per step) and each (a)'s ratio to
(b), from one run in which all take turns step by step; ExpertLSTMs' default ("auto") runs "unrolled" on a GPU and,
on a CPU, "per_expert" from H = 100 ("autograd" below).

With --estimate it also prints a FLOP-count estimate of the GPU-hours of the paper's Table 1 grid (13 models,
2 datasets x 2 lambdas, 10 seeds) at an assumed sustained throughput, and the time one news-10k PoE-30 run would
take at the throughput measured here for the recurrence ExpertLSTMs runs by default ("auto").
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from reprobench.calm.models import LSTMLM, ExpertLSTMs, auto_recurrence, detach_hidden, poe_logits
from reprobench.core.device import choose_device, describe

EMSIZE, NLAYERS, LR, CLIP = 200, 2, 1e-3, 1.0
# The check runs in float64: in float32 the two summation orders differ by roundoff, and Adam's first steps
# (update ~ lr m / sqrt(v), whatever the gradient's size) blow that up to a few % of lr (~4e-5) on the many
# near-zero gradients, which would hide a real bug of that size. In float64 they agree to ~1e-13.
CHECK_STEPS, CHECK_TOL = 3, 1e-9


# --- the two implementations of one step ------------------------------------------------------------------------


def clip_per_expert_(params, max_norm: float) -> torch.Tensor:
    """clip_grad_norm_ applied to each expert on its own: expert i's norm is taken over slice i of every stacked
    gradient, and its slices are scaled by min(1, max_norm / (norm + 1e-6)), as torch does for one module."""
    grads = [p.grad for p in params]
    # like torch: the 2-norm of the per-tensor 2-norms, here one per expert and stacked tensor
    norms = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.flatten(1), dim=1) for g in grads]), dim=0)
    coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.view(-1, *([1] * (g.dim() - 1))))
    return norms  # (N,), before clipping


class Batched:
    def __init__(self, modules: list[LSTMLM], w: torch.Tensor, batch: int, recurrence: str = "unrolled"):
        self.model = ExpertLSTMs.from_modules(modules, recurrence).train()
        self.opt = torch.optim.Adam(self.model.parameters(), lr=LR)
        self.hidden, self.w, self.norms = self.model.init_hidden(batch), w, None

    def step(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z, hidden = self.model(x, self.hidden)
        loss = F.cross_entropy(poe_logits(z, self.w).flatten(0, 1), y.flatten())
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.norms = clip_per_expert_(list(self.model.parameters()), CLIP)
        self.opt.step()
        self.hidden = detach_hidden(hidden)  # truncated BPTT: the next window starts from here
        return loss.detach()

    def expert_parameters(self, i: int) -> dict[str, torch.Tensor]:
        return {name: getattr(self.model, mine)[i] for mine, name in self.model.parameter_name_pairs()}


class Loop:
    def __init__(self, modules: list[LSTMLM], w: torch.Tensor, batch: int):
        self.modules = [m.train() for m in modules]
        self.opt = torch.optim.Adam([p for m in modules for p in m.parameters()], lr=LR)  # one optimiser, as coded
        self.hiddens, self.w = [m.init_hidden(batch) for m in modules], w

    def step(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        outs = [m(x, h) for m, h in zip(self.modules, self.hiddens)]
        z = torch.stack([logits for logits, _ in outs])
        loss = F.cross_entropy(poe_logits(z, self.w).flatten(0, 1), y.flatten())
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        for m in self.modules:
            torch.nn.utils.clip_grad_norm_(m.parameters(), CLIP)
        self.opt.step()
        self.hiddens = [detach_hidden(h) for _, h in outs]
        return loss.detach()

    def expert_parameters(self, i: int) -> dict[str, torch.Tensor]:
        return dict(self.modules[i].named_parameters())


RECURRENCES = ("unrolled", "per_expert", "autograd")  # ExpertLSTMs' own recurrences (its "auto" picks one by device)


def build(args, device, dropout: float, w_range: float, dtype=torch.float32) -> list:
    """[(a), (a'), (b)] from the same N LSTMLMs (seeded) and the same detached weights w ~ U(-w_range, w_range)
    (signed, like the unnormalised +PW gate)."""
    torch.manual_seed(0)
    modules = [LSTMLM(args.vocab, EMSIZE, args.nhid, NLAYERS, dropout).to(device, dtype) for _ in range(args.experts)]
    w = torch.empty(args.experts, device=device, dtype=dtype).uniform_(-w_range, w_range)
    # the batched ones copy the parameters before the loop trains them
    return [Batched(modules, w, args.streams, r) for r in RECURRENCES] + [Loop(modules, w, args.streams)]


def windows(args, device, n: int, seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """n random (x, y) windows of shape (T, b), y the next tokens, drawn up front so the timing excludes them."""
    gen = torch.Generator().manual_seed(seed)
    toks = torch.randint(args.vocab, (n * args.bptt + 1, args.streams), generator=gen).to(device)
    return [(toks[i * args.bptt:(i + 1) * args.bptt], toks[i * args.bptt + 1:(i + 1) * args.bptt + 1])
            for i in range(n)]


def check(args, device) -> tuple[list[float], list[int]]:
    """Largest parameter (and loss) difference between each batched recurrence and the loop after CHECK_STEPS
    dropout-0 float64 steps on the same tokens, and how many experts were clipped in each step. w up to +-10 puts
    the experts' gradient norms on both sides of the clip (an expert's norm is ~0.1 |w_i| here), so the per-expert
    clipping is exercised."""
    *batched, loop = build(args, device, dropout=0.0, w_range=10.0, dtype=torch.float64)
    clipped = []
    for x, y in windows(args, device, CHECK_STEPS, seed=1):
        losses = [impl.step(x, y) for impl in batched]
        lb = loop.step(x, y)
        clipped.append(int((batched[0].norms > CLIP).sum()))
    worst = [abs(float(la) - float(lb)) for la in losses]
    with torch.no_grad():
        for j, impl in enumerate(batched):
            for i in range(args.experts):
                mine, theirs = impl.expert_parameters(i), loop.expert_parameters(i)
                worst[j] = max(worst[j], max(float((mine[k] - theirs[k]).abs().max()) for k in mine))
    return worst, clipped


def step_times(impls, data, warmup: int, device) -> list[list[float]]:
    """Seconds of each timed step, per implementation. The implementations take turns step by step, so a load
    change on a shared machine hits both alike."""
    times = [[] for _ in impls]
    for n, (x, y) in enumerate(data):
        for impl, spent in zip(impls, times):
            if device.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            impl.step(x, y)
            if device.type == "cuda":
                torch.cuda.synchronize()
            if n >= warmup:
                spent.append(time.perf_counter() - t0)
    return times


# --- FLOP count and the Table 1 grid estimate -------------------------------------------------------------------


def lstm_fwd(nhid: int, vocab: int) -> int:
    """Forward FLOPs per token of one LSTMLM: 2 x (LSTM + decoder parameters); the embedding is a lookup, no
    matmul. LSTM = 4H(E + H) + 4H(2H) + 16H = 12H^2 + 816H for E = 200 (spec 3.10)."""
    return 2 * (12 * nhid * nhid + 816 * nhid + (nhid + 1) * vocab)


def mos_fwd(nhid: int, vocab: int, k: int) -> int:
    """MoS: the LSTM trunk, prior (H K), latent (H K H + K H) and the shared decoder applied to all K slices."""
    return lstm_fwd(nhid, vocab) + 2 * (nhid * k + k * nhid * nhid + k * nhid + (k - 1) * (nhid + 1) * vocab)


def lstm_gate_fwd(g: int, n: int) -> int:
    """The gating LSTM: Embedding(V, 100) (lookup) -> LSTM(100, g) -> Linear(g, N)."""
    return 2 * (4 * g * (100 + g) + 8 * g + (g + 1) * n)


TOKENS_PER_BATCH = 20 * 10  # bptt x streams
SEEDS = 10  # Table 1 means over 10 seeds (spec 3.9: 8 / 7 for the domain MoE and MoE+PW 30 runs; we plan 10)
DATASETS = {  # (dataset, lambda): vocabulary, batches per run = 1.1 x total_length / 200, total_length = 100 lambda
    ("news", "10k"): (211, 5_500),
    ("news", "100k"): (211, 55_000),
    ("domain", "10k"): (58_000, 5_500),
    ("domain", "20k"): (58_000, 11_000),
}

# One row per (model, dataset, lambda): (kind, N, nhid, li, k gate steps, gate LSTM size g or MoS K), read from the
# settings the pipeline runs (reprobench.calm.zoo.CONFIGS, spec 3.9). kind: "lm" a single LSTM LM, "ind" Ind. LSTM
# (one module per class, but only the oracle's one runs per batch), "mos", "mix" a PoE/MoE mixture (every module runs
# every batch).
SETTINGS = {("news", "10k"): ("multilingual", 10_000), ("news", "100k"): ("multilingual", 100_000),
            ("domain", "10k"): ("multidomain", 10_000), ("domain", "20k"): ("multidomain", 20_000)}
N_CLASSES = {"multilingual": 5, "multidomain": 4}


def grid_row(cfg) -> tuple:
    """A zoo.ModelConfig as a FLOP-count row (Ind. LSTM is completed by the caller, which knows the classes)."""
    if cfg.arch == "single":
        return ("lm", 1, cfg.nhid, cfg.li, 0, 0)
    if cfg.arch == "mos":
        return ("mos", 1, cfg.nhid, cfg.li, 0, cfg.n_components)
    k = cfg.gate_steps if cfg.gate == "grad" else 0
    return ("mix", cfg.n_experts, cfg.nhid, cfg.li, k, cfg.gate_nhid)


def table1_grid() -> dict:
    from reprobench.calm import zoo

    grid = {}
    for key, (dataset, lam) in SETTINGS.items():
        rows = {}
        for model in zoo.MODELS:
            cfg = zoo.CONFIGS[model, dataset, lam]
            row = grid_row(cfg)
            rows[zoo.LABELS[model]] = ("ind", N_CLASSES[dataset], *row[2:]) if cfg.arch == "per_class" else row
        grid[key] = rows
    return grid


GRID = table1_grid()


def flops_per_token(row, vocab: int) -> float:
    """Training FLOPs per token of one batch: li passes of forward + backward (3 x forward) over every module that
    runs, the combination sum_i w_i z_i (2 N V per token) included, a gating LSTM trained once per pass, and k +PW
    gate steps, each a forward + backward of the combination alone on the detached module outputs."""
    kind, n, nhid, li, k, extra = row
    if kind == "mos":
        fwd = mos_fwd(nhid, vocab, extra)
    elif kind in ("lm", "ind"):
        fwd = lstm_fwd(nhid, vocab)  # Ind. LSTM: only the revealed class's module runs
    else:
        fwd = n * lstm_fwd(nhid, vocab) + 2 * n * vocab + (lstm_gate_fwd(extra, n) if extra else 0)
    return 3 * li * fwd + 3 * k * 2 * n * vocab


def estimate(tflops: float, measured_tok_s: float | None, device_name: str) -> None:
    print(f"\nGPU-hour ESTIMATE FROM A FLOP COUNT (not measured): Table 1 grid, 13 models x {len(GRID)} "
          f"(dataset, lambda) x {SEEDS} seeds.\nAssumed sustained throughput {tflops:g} TFLOP/s (fp32, effective; "
          f"--tflops). Counted: matmuls only, 2 x (LSTM + decoder parameters) per token forward, training = 3 x "
          f"forward, li passes per batch, k +PW gate steps.\nNot counted: embedding lookups, elementwise LSTM ops, "
          f"Adam, and the latency of the 20-step recurrence at b = 10, so small models run well below any such rate.")
    total = 0.0
    for (data, lam), rows in GRID.items():
        vocab, batches = DATASETS[data, lam]
        print(f"\n{data} lambda {lam} (V = {vocab}, {batches} batches per run)")
        sub = 0.0
        for model, row in rows.items():
            flops = flops_per_token(row, vocab) * TOKENS_PER_BATCH * batches * SEEDS
            sub += flops
            kind, n, nhid, li, k, extra = row
            print(f"  {model:12s} N={n:2d} H={nhid:4d} li={li} k={k:3d} {'K' if kind == 'mos' else 'g'}={extra:3d}: "
                  f"{flops / 1e15:9.2f} PFLOP  {flops / (tflops * 1e12) / 3600:8.2f} GPU-h")
        total += sub
        print(f"  subtotal {sub / 1e15:28.2f} PFLOP  {sub / (tflops * 1e12) / 3600:8.2f} GPU-h")
    print(f"\ntotal {total / 1e15:.1f} PFLOP = {total / (tflops * 1e12) / 3600:.1f} GPU-hours at {tflops:g} TFLOP/s "
          f"(estimate from the FLOP count)")
    if measured_tok_s is None:
        print("(no news-10k PoE-30 projection: it needs the default shape N=30 H=200 V=211 T=20 b=10)")
        return
    # A news-10k PoE 30 run: 5.5k batches, each li = 2 training steps of exactly the kind timed in (a); its g = 200
    # gating LSTM (~1% of the FLOPs) is left out.
    vocab, batches = DATASETS["news", "10k"]
    seconds = batches * 2 * TOKENS_PER_BATCH / measured_tok_s
    print(f"one news-10k PoE 30 run at the throughput (a) measured here ({measured_tok_s:.0f} tokens/s on "
          f"{device_name}): {batches} batches x li 2 x {TOKENS_PER_BATCH} tokens = {seconds / 3600:.2f} h")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experts", type=int, default=30, help="N")
    parser.add_argument("--nhid", type=int, default=200, help="H")
    parser.add_argument("--vocab", type=int, default=211, help="V (211: the multilingual characters)")
    parser.add_argument("--bptt", type=int, default=20, help="T")
    parser.add_argument("--streams", type=int, default=10, help="b")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per implementation")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--device", default="auto")
    # 1 thread by default: on a loaded machine, 2+ OpenMP threads stall on each other and step times scatter 5x
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--estimate", action="store_true", help="also print the Table 1 GPU-hour estimate")
    parser.add_argument("--tflops", type=float, default=20.0, help="assumed sustained GPU TFLOP/s for --estimate")
    args = parser.parse_args()
    device = choose_device(args.device, args.threads)
    n, tokens = args.experts, args.bptt * args.streams
    print(f"N={n} experts, H={args.nhid}, V={args.vocab}, T={args.bptt}, b={args.streams} ({tokens} tokens/step), "
          f"{describe(device)}, torch threads {torch.get_num_threads()}")

    worst, clipped = check(args, device)
    for recurrence, diff in zip(RECURRENCES, worst):
        print(f"check {recurrence}: {CHECK_STEPS} dropout-0 float64 steps (experts clipped per step: "
              f"{'/'.join(map(str, clipped))} of {n}), max |batched - loop| over all parameters and the last loss = "
              f"{diff:.2e} (tolerance {CHECK_TOL:g}): {'OK' if diff <= CHECK_TOL else 'FAILED'}")

    data = windows(args, device, args.warmup + args.steps, seed=2)
    impls = build(args, device, dropout=0.2, w_range=0.1)  # the +PW gate's init range
    times = step_times(impls, data, args.warmup, device)
    rates = [tokens / statistics.median(t) for t in times]  # median: robust to load spikes
    flops_token = flops_per_token(("mix", n, args.nhid, 1, 0, 0), args.vocab)  # the FLOP count of --estimate
    names = [f"batched, {r}" for r in RECURRENCES] + ["loop of nn.LSTM"]
    for name, tok, t in zip(names, rates, times):
        print(f"{name:20s}: {tok:9.1f} tokens/s  ({tok * flops_token / 1e9:6.1f} GFLOP/s by the FLOP count; "
              f"step {min(t):.3g}-{max(t):.3g} s)")
    print("ratio batched / loop: " + ", ".join(f"{r} {tok / rates[-1]:.2f} x" for r, tok in zip(RECURRENCES, rates))
          + f"  (median of {args.steps} timed steps each after {args.warmup} warm-up, all taking turns step by step, "
          "dropout 0.2, train mode)")
    tok_a = rates[RECURRENCES.index(auto_recurrence(device, args.nhid))]  # what the learners run here
    if args.estimate:
        default_shape = (n, args.nhid, args.vocab, args.bptt, args.streams) == (30, 200, 211, 20, 10)
        estimate(args.tflops, tok_a if default_shape else None, describe(device))


if __name__ == "__main__":
    main()
