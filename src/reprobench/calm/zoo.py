"""The thirteen models of Table 1 and Appendix C's Transformer, with the settings the original test runs used
(specs/calm.md 3.9), and the builder that turns (model, dataset, lambda, variant) into a learner.

Every run: emsize 200, 2 LSTM layers, b = 10, bptt 20, window 100, Adam, clip 1.0. One row per (model, dataset,
paper lambda): hidden size(s), learning rate, dropout, learn iterations li, and for mixtures N, the gate and its
options. Where the command lines hold several rows for one Table 1 entry, the row matching Appendix E's Table 2
sizes is taken (D15), and where they hold none, the nearest documented setting (each such choice is commented).
Mixtures ignore --dropout: their experts always use 0.2 (D17). `size_factor` < 1 shrinks every width (embedding,
hidden, gate; the Transformer's heads and buffer) for the small scales, and `max_gate_steps` caps k; N, K, li and
the learning rates stay.

The Transformer (Appendix C) is not a Table 1 model: its runs are on the dev halves (the paper reports its best
validation perplexities; its command lines ran on the test halves), with bptt = window (100 in the command lines,
with --window 100), a 512-token input and Vaswani's schedule as HEAD (reprobench.calm.transformer). Its FF size is
the command lines' --nhid, equal to --emsize = d on every line (DEVIATIONS C21).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from reprobench.core.errors import ConfigError

DATASETS = ("multilingual", "multidomain")
PAPER_LAMBDAS = {"multilingual": (10_000, 100_000), "multidomain": (10_000, 20_000)}
MODELS = ("ind_lstm", "large_lstm", "mos", "ensemble_5", "ensemble_30", "poe_5", "poe_30", "poe_pw_5", "poe_pw_30",
          "moe_5", "moe_30", "moe_pw_5", "moe_pw_30")
LABELS = {"ind_lstm": "Ind. LSTM", "large_lstm": "Large LSTM", "mos": "MoS", "ensemble_5": "Ensemble 5",
          "ensemble_30": "Ensemble 30", "poe_5": "PoE 5", "poe_30": "PoE 30", "poe_pw_5": "PoE+PW 5",
          "poe_pw_30": "PoE+PW 30", "moe_5": "MoE 5", "moe_30": "MoE 30", "moe_pw_5": "MoE+PW 5",
          "moe_pw_30": "MoE+PW 30", "transformer": "Transformer"}
TRANSFORMER = "transformer"  # Appendix C
ALL_MODELS = (*MODELS, TRANSFORMER)
VARIANTS = ("faithful", "corrected")
EMSIZE, GATE_EMSIZE = 200, 100
MIXTURE_DROPOUT = 0.2  # MoELearner's default, which learner_factory never overrides (D17)
CONTEXT = 512  # the Transformer's input, tokens per stream, the window included (HEAD's --buffer-len, Appendix C)
TRANSFORMER_WARMUP = 4000  # --transformer-warmup's default (main.py L50): the rows that pass no value
SEEDS = tuple(range(10))  # the test command lines' seeds (D16)


@dataclass(frozen=True)
class ModelConfig:
    arch: str  # single | per_class | mos | mixture
    nhid: int
    lr: float = 1e-3
    dropout: float = 0.2
    li: int = 1
    n_experts: int = 1
    kind: str = ""  # mixtures: poe | moe
    gate: str = ""  # mixtures: fixed | grad | lstm
    gate_steps: int = 1  # k Adam steps of the plastic gate per pass
    gate_nhid: int = 0  # g, the LSTM gate's hidden size
    normalize: bool = False  # --weight-normalization (always on for the MoE)
    clear_gate_hidden: bool = False  # --clear-lstm-hidden
    warmup: int = 0  # --moe-warmup, in fragments
    n_components: int = 0  # MoS K
    seeds: tuple[int, ...] = SEEDS  # the seeds of the test command lines (D16)
    n_heads: int = 0  # Transformer: attention heads (nhid is d_model)
    n_layers: int = 0  # Transformer: encoder layers
    lr_warmup: int = 0  # Transformer: warm-up of Vaswani's schedule, in windows (learn() calls)
    context: int = 0  # Transformer: tokens per stream of its input, the window included
    split: str = "test"  # the corpus half a run streams: test (Table 1) or dev (Appendix C's validation)


def _single(nhid, **kw):
    return ModelConfig("single", nhid, **kw)


def _mix(kind, gate, n, nhid, **kw):
    return ModelConfig("mixture", nhid, n_experts=n, kind=kind, gate=gate, dropout=MIXTURE_DROPOUT, **kw)


def _transformer(d, heads, layers, warmup=TRANSFORMER_WARMUP, **kw):
    return ModelConfig("transformer", d, dropout=0.1, n_heads=heads, n_layers=layers, lr_warmup=warmup, split="dev",
                       context=CONTEXT, **kw)


NEWS_10K, NEWS_100K = ("multilingual", 10_000), ("multilingual", 100_000)
DOMAIN_10K, DOMAIN_20K = ("multidomain", 10_000), ("multidomain", 20_000)
CONFIGS: dict[tuple[str, str, int], ModelConfig] = {
    # Large LSTM: 1300 on news (Table 2); 5200 on domain (10k with lr 1e-4, the only 5200 row at 10k)
    ("large_lstm", *NEWS_10K): _single(1300, dropout=0.2, li=2),
    ("large_lstm", *NEWS_100K): _single(1300, dropout=0.1, li=1),
    ("large_lstm", *DOMAIN_10K): _single(5200, lr=1e-4, dropout=0.1, li=5),
    ("large_lstm", *DOMAIN_20K): _single(5200, dropout=0.4, li=1),
    # Ind. LSTM: 5 x 550 on news (Table 2), li 5 (550 at 100k: li 2); 4 x 1800 on domain
    ("ind_lstm", *NEWS_10K): ModelConfig("per_class", 550, li=5),
    ("ind_lstm", *NEWS_100K): ModelConfig("per_class", 550, li=2),
    ("ind_lstm", *DOMAIN_10K): ModelConfig("per_class", 1800, li=2),
    ("ind_lstm", *DOMAIN_20K): ModelConfig("per_class", 1800, li=2),
    # MoS: 500 / K 75 on news; 4750 / K 2, lr 5e-4 on domain (the command lines; Table 2 says 2620: D15)
    ("mos", *NEWS_10K): ModelConfig("mos", 500, n_components=75, li=2),
    ("mos", *NEWS_100K): ModelConfig("mos", 500, n_components=75, li=2),
    ("mos", *DOMAIN_10K): ModelConfig("mos", 4750, n_components=2, lr=5e-4, li=2),
    ("mos", *DOMAIN_20K): ModelConfig("mos", 4750, n_components=2, lr=5e-4, li=2),
    # Ensemble: the command lines hold 30 x 200 only; Ensemble 5 takes the 5-expert size of its dataset (550 news,
    # 1600 domain, as PoE 5) and the li of Ensemble 30
    ("ensemble_30", *NEWS_10K): _mix("poe", "fixed", 30, 200, li=2),
    ("ensemble_30", *NEWS_100K): _mix("poe", "fixed", 30, 200, li=1),
    ("ensemble_30", *DOMAIN_10K): _mix("poe", "fixed", 30, 200, li=2),
    ("ensemble_30", *DOMAIN_20K): _mix("poe", "fixed", 30, 200, li=2),
    ("ensemble_5", *NEWS_10K): _mix("poe", "fixed", 5, 550, li=2),
    ("ensemble_5", *NEWS_100K): _mix("poe", "fixed", 5, 550, li=1),
    ("ensemble_5", *DOMAIN_10K): _mix("poe", "fixed", 5, 1600, li=2),
    ("ensemble_5", *DOMAIN_20K): _mix("poe", "fixed", 5, 1600, li=2),
    # PoE+PW: the plastic (grad) gate, k = 10 for news-10k 30 experts, else 100
    ("poe_pw_30", *NEWS_10K): _mix("poe", "grad", 30, 200, li=2, gate_steps=10),
    ("poe_pw_30", *NEWS_100K): _mix("poe", "grad", 30, 200, li=1, gate_steps=100),
    ("poe_pw_30", *DOMAIN_10K): _mix("poe", "grad", 30, 200, li=2, gate_steps=100),
    ("poe_pw_30", *DOMAIN_20K): _mix("poe", "grad", 30, 200, li=1, gate_steps=100),
    ("poe_pw_5", *NEWS_10K): _mix("poe", "grad", 5, 550, li=2, gate_steps=100),
    ("poe_pw_5", *NEWS_100K): _mix("poe", "grad", 5, 550, li=1, gate_steps=100),
    ("poe_pw_5", *DOMAIN_10K): _mix("poe", "grad", 5, 1600, li=1, gate_steps=100),
    ("poe_pw_5", *DOMAIN_20K): _mix("poe", "grad", 5, 1600, li=1, gate_steps=100),
    # PoE: the LSTM gate, with the per-row g, --clear-lstm-hidden and --weight-normalization of 3.9 (D14)
    ("poe_30", *NEWS_10K): _mix("poe", "lstm", 30, 200, li=2, gate_nhid=200),
    ("poe_30", *NEWS_100K): _mix("poe", "lstm", 30, 200, li=1, gate_nhid=200, clear_gate_hidden=True),
    ("poe_30", *DOMAIN_10K): _mix("poe", "lstm", 30, 200, li=2, gate_nhid=200, clear_gate_hidden=True),
    ("poe_30", *DOMAIN_20K): _mix("poe", "lstm", 30, 200, li=2, gate_nhid=200),
    ("poe_5", *NEWS_10K): _mix("poe", "lstm", 5, 550, li=2, gate_nhid=100, clear_gate_hidden=True, normalize=True),
    ("poe_5", *NEWS_100K): _mix("poe", "lstm", 5, 550, li=1, gate_nhid=200, clear_gate_hidden=True, normalize=True),
    ("poe_5", *DOMAIN_10K): _mix("poe", "lstm", 5, 1600, li=2, gate_nhid=50, normalize=True),
    ("poe_5", *DOMAIN_20K): _mix("poe", "lstm", 5, 1600, li=1, gate_nhid=200, normalize=True),
    # MoE+PW (grad gate, k = 100) and MoE (LSTM gate, g = 10): li 1, warm-up 5 fragments except where 3.9 says 0;
    # domain MoE 5 is 5 x 550 in the command lines (D15); domain MoE 30 ran 8 (10k) / 7 (20k) seeds, not 0..7 and
    # 0..6 but those test_command_lines_moe.txt holds for each gate (D16)
    ("moe_pw_30", *NEWS_10K): _mix("moe", "grad", 30, 200, gate_steps=100, warmup=5),
    ("moe_pw_30", *NEWS_100K): _mix("moe", "grad", 30, 200, gate_steps=100, warmup=5),
    ("moe_pw_30", *DOMAIN_10K): _mix("moe", "grad", 30, 200, gate_steps=100, warmup=5, seeds=(0, 1, 2, 3, 6, 7, 8, 9)),
    ("moe_pw_30", *DOMAIN_20K): _mix("moe", "grad", 30, 200, gate_steps=100, warmup=0, seeds=(0, 1, 3, 4, 5, 6, 7)),
    ("moe_pw_5", *NEWS_10K): _mix("moe", "grad", 5, 550, gate_steps=100, warmup=5),
    ("moe_pw_5", *NEWS_100K): _mix("moe", "grad", 5, 550, gate_steps=100, warmup=5),
    ("moe_pw_5", *DOMAIN_10K): _mix("moe", "grad", 5, 550, gate_steps=100, warmup=0),
    ("moe_pw_5", *DOMAIN_20K): _mix("moe", "grad", 5, 550, gate_steps=100, warmup=5),
    ("moe_30", *NEWS_10K): _mix("moe", "lstm", 30, 200, gate_nhid=10, warmup=5),
    ("moe_30", *NEWS_100K): _mix("moe", "lstm", 30, 200, gate_nhid=10, warmup=5),
    ("moe_30", *DOMAIN_10K): _mix("moe", "lstm", 30, 200, gate_nhid=10, warmup=5, seeds=(0, 1, 3, 4, 6, 7, 8, 9)),
    ("moe_30", *DOMAIN_20K): _mix("moe", "lstm", 30, 200, gate_nhid=10, warmup=5, seeds=(0, 1, 3, 5, 6, 8, 9)),
    ("moe_5", *NEWS_10K): _mix("moe", "lstm", 5, 550, gate_nhid=10, warmup=5),
    ("moe_5", *NEWS_100K): _mix("moe", "lstm", 5, 550, gate_nhid=10, warmup=5),
    ("moe_5", *DOMAIN_10K): _mix("moe", "lstm", 5, 550, gate_nhid=10, warmup=0),
    ("moe_5", *DOMAIN_20K): _mix("moe", "lstm", 5, 550, gate_nhid=10, warmup=5),
    # Transformer (Appendix C), d = nhid here: lr 42 is the magic value that selects the base d^-0.5, and only
    # those rows pass --transformer-warmup 40; the lr 1e-3 rows warm up over the default 4000 windows. News 100k
    # has two command lines (d 2048 / 32 heads / lr 1e-3, and d 768 / 16 heads / lr 42, both 1 layer): the first
    # is taken, the d of the 10k row (C21)
    ("transformer", *NEWS_10K): _transformer(2048, 32, 3, lr=42, li=5, warmup=40),
    ("transformer", *NEWS_100K): _transformer(2048, 32, 1, lr=1e-3, li=5),
    ("transformer", *DOMAIN_10K): _transformer(768, 16, 1, lr=1e-3, li=2),
    ("transformer", *DOMAIN_20K): _transformer(768, 16, 3, lr=42, li=5, warmup=40),
}


def paper_lambda(dataset: str, lam: int) -> int:
    """The paper lambda whose settings a run at `lam` takes: the largest paper lambda <= lam, else the smallest (the
    small scales run shorter fragments with the 10k settings)."""
    below = [p for p in PAPER_LAMBDAS[dataset] if p <= lam]
    return max(below) if below else min(PAPER_LAMBDAS[dataset])


def config(model: str, dataset: str, lam: int, size_factor: float = 1.0, max_gate_steps: int = 0) -> ModelConfig:
    """The setting of a run; `size_factor` scales the widths, `max_gate_steps` > 0 caps the plastic gate's k (the
    small scale's knob: k = 100 gate steps per pass dominate a CPU run)."""
    if model not in ALL_MODELS:
        raise ConfigError("calm.models", f"unknown model '{model}' (known: {', '.join(ALL_MODELS)})")
    if dataset not in DATASETS:
        raise ConfigError("calm.datasets", f"unknown dataset '{dataset}' (known: {', '.join(DATASETS)})")
    cfg = CONFIGS[(model, dataset, paper_lambda(dataset, lam))]
    if size_factor != 1.0 and cfg.arch == "transformer":  # heads are a width too; d stays a multiple of them
        heads = max(1, round(cfg.n_heads * size_factor))
        # the input shrinks too: its attention costs context^2 per layer and head
        cfg = replace(cfg, n_heads=heads, nhid=heads * max(1, round(cfg.nhid * size_factor / heads)),
                      context=max(1, round(cfg.context * size_factor)))
    elif size_factor != 1.0:
        cfg = replace(cfg, nhid=scaled(cfg.nhid, size_factor), gate_nhid=scaled(cfg.gate_nhid, size_factor))
    if max_gate_steps:
        cfg = replace(cfg, gate_steps=min(cfg.gate_steps, max_gate_steps))
    return cfg


def bptt(model: str, window: int) -> int:
    """Tokens per batch and stream: 20 (lifelonglm's --bptt), the Transformer the whole window (--bptt 100 with
    --window 100)."""
    return window if model == TRANSFORMER else 20


def scaled(width: int, factor: float) -> int:
    """A width times `factor`, at least 4 (0 stays 0)."""
    return 0 if width == 0 else max(4, round(width * factor))


def build(model: str, dataset: str, lam: int, vocab: int, variant: str, size_factor: float = 1.0,
          max_gate_steps: int = 0):
    """A fresh learner for one run, its parameters drawn from torch's global generator (seed it first, as the
    reference did before building the model). Variants: see reprobench.calm.learners."""
    from reprobench.calm import learners, models

    if variant not in VARIANTS:
        raise ConfigError("calm.variants", f"unknown variant '{variant}' (known: {', '.join(VARIANTS)})")
    cfg = config(model, dataset, lam, size_factor, max_gate_steps)
    corrected = variant == "corrected"
    emsize = scaled(EMSIZE, size_factor)
    if cfg.arch == "transformer":
        from reprobench.calm import transformer

        lm = transformer.TransformerLM(vocab, cfg.nhid, cfg.n_heads, cfg.n_layers, cfg.nhid, cfg.dropout)
        return transformer.TransformerLearner(lm, cfg.lr, cfg.lr_warmup, cfg.li, context=cfg.context,
                                              score_eval=corrected, repeat_window=not corrected)
    if cfg.arch == "single":
        lm = models.LSTMLM(vocab, emsize, cfg.nhid, dropout=cfg.dropout)
        return learners.SingleLearner(lm, cfg.lr, cfg.li, score_eval=corrected)
    if cfg.arch == "mos":
        lm = models.MoS(vocab, emsize, cfg.nhid, cfg.n_components, dropout=cfg.dropout)
        return learners.SingleLearner(lm, cfg.lr, cfg.li, score_eval=corrected, log_probs=True)
    if cfg.arch == "per_class":
        def factory():
            return models.LSTMLM(vocab, emsize, cfg.nhid, dropout=cfg.dropout)

        return learners.PerClassLearner(factory, cfg.lr, cfg.li, score_eval=corrected)
    # the gate first, then the experts: the reference's draw order (learner_factory.py L44-48)
    if cfg.gate == "fixed":
        gate = models.FixedWeights(cfg.n_experts, "mean" if corrected else "one")  # D12
    elif cfg.gate == "grad":
        gate = models.GradientWeights(cfg.n_experts)
    else:
        gate = models.LSTMWeights(vocab, cfg.n_experts, cfg.gate_nhid, emsize=scaled(GATE_EMSIZE, size_factor))
    experts = models.ExpertLSTMs(cfg.n_experts, vocab, emsize, cfg.nhid, dropout=cfg.dropout)
    return learners.MixtureLearner(experts, gate, cfg.kind, cfg.lr, cfg.li, gate_steps=cfg.gate_steps,
                                   normalize=cfg.normalize, clear_gate_hidden=cfg.clear_gate_hidden,
                                   warmup=cfg.warmup, moe_objective=variant, restore_state=corrected,
                                   score_eval=corrected)
