"""The CALM runs a config asks for, and every path: read by workflow/rules/calm.smk and `reprobench inspect`."""

from __future__ import annotations

import json
import math
import re

from reprobench.calm import corpora, zoo
from reprobench.calm.stream import STREAMS
from reprobench.core.benchmark import Product, Targets
from reprobench.core.errors import ConfigError
from reprobench.core.packs import Pack, make_packs, to_json
from reprobench.core.plugins import USER_CLASS, check_user_class, run_id, torch_stub

SPLITS = {"multilingual": "news", "multidomain": "domain"}  # dataset -> split-folder prefix (corpora.LEVELS)
RESOURCES = {"synthetic": "resources/calm-synthetic", "download": "resources"}  # by calm.source
N_CLASSES = {"multilingual": len(corpora.LANGS), "multidomain": len(corpora.DOMAINS)}  # classes of a dataset's stream
USER_METHODS = ("learn", "forward")  # a user's model is a learner (learn) or a language model (forward): runs.py

# Paths; logs/ and benchmarks/ mirror results/.
ROOT, LOGS, TIMINGS = "results/calm", "logs/calm", "benchmarks/calm"
CORPORA, CORPORA_LOG = f"{ROOT}/data/corpora.json", f"{LOGS}/data/corpora.log"
RUN = "dataset={dataset}/lambda={lam}/model={model}/variant={variant}/seed={seed}"
CURVE = f"{ROOT}/curves/{RUN}.parquet"
CHECKPOINT = f"{ROOT}/checkpoints/{RUN}.pt"
TRAIN_LOG, TRAIN_TIMING = f"{LOGS}/train/{RUN}.log", f"{TIMINGS}/train/{RUN}.tsv"
PACK_LOG, PACK_TIMING = f"{LOGS}/train/pack={{pack}}.log", f"{TIMINGS}/train/pack={{pack}}.tsv"  # calm.runs_per_job > 1
RUNS = f"{ROOT}/metrics/runs.parquet"  # one row per run: ppl, ppl@sw, rec, std, autocorr, per class
SWITCH_CURVES = f"{ROOT}/metrics/switch_curves.parquet"  # mean loss k batches after a switch, per run
AGGREGATE_LOG = f"{LOGS}/metrics/aggregate.log"
COMPARISON, COMPARISON_LOG = f"{ROOT}/comparison.csv", f"{LOGS}/comparison.log"
APPENDIX_A = f"{ROOT}/samples/appendix_a_corpora.txt"  # the first lines of every class (Figures 2, 3)
APPENDIX_D = f"{ROOT}/samples/appendix_d_{{model}}.txt"  # text generated at stages of a stream (Figure 5)
APPENDIX_A_LOG, APPENDIX_D_LOG = f"{LOGS}/samples/appendix_a.log", f"{LOGS}/samples/appendix_d.log"

TABLE_FORMATS, FIGURE_FORMATS = (".md", ".csv", ".tex"), (".png", ".pdf")
_PAPER = "Kruszewski, Sorodoc & Mikolov (2021)"
TABLES = {
    "table1": Product("Table 1", f"{ROOT}/tables/table1", TABLE_FORMATS,
                      f"Table 1 of {_PAPER}: perplexity (ppl), perplexity over the first k = 10 batches after a switch "
                      "(ppl at sw) and batches to recover (rec) of every model "
                      "on MultiLingual and MultiDomain at each lambda, means over seeds (second half of the stream)."),
    "table2_model_sizes": Product("Table 2 (Appendix E)", f"{ROOT}/tables/table2_model_sizes", TABLE_FORMATS,
                                  f"Appendix E, Table 2 of {_PAPER}: hidden size and parameter count of every model "
                                  "at the paper's sizes, next to the published counts."),
    "table4_std": Product("Table 4 (Appendix)", f"{ROOT}/tables/table4_std", TABLE_FORMATS,
                          f"Appendix Table 4 of {_PAPER}: standard deviations over seeds (ddof 1) of Table 1's "
                          "metrics."),
    "appendix_c_transformer": Product("Appendix C", f"{ROOT}/tables/appendix_c_transformer", TABLE_FORMATS,
                                      f"Appendix C of {_PAPER}: perplexity of the Transformer (a 512-token buffer, "
                                      "Vaswani's schedule) on the dev halves, next to the best validation perplexity "
                                      "the paper reports."),
}
FIGURES = {
    "figure1b": Product("Figure 1(b)", f"{ROOT}/figures/figure1b_multilingual_switch", FIGURE_FORMATS,
                        f"Figure 1(b) of {_PAPER}: mean cross-entropy over the first 15 batches after a switch on "
                        "MultiLingual, per model, mean and band over seeds."),
    "figure1c": Product("Figure 1(c)", f"{ROOT}/figures/figure1c_multidomain_switch", FIGURE_FORMATS,
                        f"Figure 1(c) of {_PAPER}: the same on MultiDomain."),
    "figure1d": Product("Figure 1(d)", f"{ROOT}/figures/figure1d_mixture_weights", FIGURE_FORMATS,
                        f"Figure 1(d) of {_PAPER}: the PoE+PW 30 mixture weights over a stretch of the MultiLingual "
                        "stream, class boundaries marked."),
    "figure1e": Product("Figure 1(e)", f"{ROOT}/figures/figure1e_weight_correlation", FIGURE_FORMATS,
                        f"Figure 1(e) of {_PAPER}: class-by-class correlation of the PoE+PW 30 mixture weights over "
                        "the last 100 batches of each fragment, with the hierarchical clustering it implies."),
    "figure4": Product("Figure 4 (Appendix B)", f"{ROOT}/figures/figure4_multidomain_analysis", FIGURE_FORMATS,
                       f"Appendix B, Figure 4 of {_PAPER}: PoE+PW 30 weights on MultiDomain and the "
                       "autocorrelation of the weights of the last 100 batches with the previous 100."),
}


class Grid:
    """The runs of one `calm` config section, and the input functions its rules use."""

    def __init__(self, section: dict):
        self.cfg = section

    # --- the registry's interface (reprobench.benchmarks) -------------------------------------------------------
    def check(self) -> None:
        models = self.cfg["models"]
        for model in models:
            if model not in zoo.ALL_MODELS and not USER_CLASS.match(model):
                raise ConfigError("calm.models", f"unknown model '{model}' (known: {', '.join(zoo.ALL_MODELS)}, or a "
                                  "user's class as 'package.module:Class')")
        for spec in self.user_models().values():  # found now, not when its job runs
            check_user_class(spec, "calm.models", one_of=USER_METHODS, unimplemented=torch_stub)
        if set(models) <= {zoo.TRANSFORMER}:  # the Transformer runs on the dev halves only (Appendix C)
            raise ConfigError("calm.models", f"{models} has no model of Table 1: Tables 1 and 4 would be empty; add "
                              "one of the paper's models or a user's class")
        n, window = self.cfg["n_fragments"], self.cfg["window"]
        chunk = window * STREAMS
        for dataset in self.cfg["datasets"]:
            if not self.cfg["lambdas"].get(dataset):
                raise ConfigError(f"calm.lambdas.{dataset}", "no lambda given for a dataset in calm.datasets")
        for dataset in self.cfg["datasets"]:  # after every dataset has lambdas: the missing ones are named first
            # stream.fragment_lengths: a fragment is a whole number (at least 1) of chunks of window x b tokens, a
            # draw of at most 0.1 s + 10 s^2 chunks (s = lambda / chunk) rounded. Below one chunk most fragments are
            # one chunk (all of them below 0.38 chunk), so lambda no longer sets the stream; from one chunk on the
            # mean fragment is 1.1 to 1.4 lambda (1.1 from the paper's 10 chunks on).
            short = [lam for lam in self.cfg["lambdas"][dataset] if lam < chunk]
            if short:
                raise ConfigError(f"calm.lambdas.{dataset}", f"lambda {short[0]} is below one chunk of calm.window "
                                  f"x {STREAMS} streams = {chunk} tokens, the shortest fragment, so the stream would "
                                  f"not depend on it: use lambda >= {chunk} or a smaller calm.window")
        # metrics.compute_metrics keeps fragments >= n // 2 and needs the last one numbered n - 1: a stream holds
        # (n // C) x C fragments, so n must be a multiple of the C classes of every dataset. ppl@sw and rec need a
        # class seen twice in the kept half before its last fragment: n - n // 2 - 1 > C (pigeonhole).
        counts = [N_CLASSES[d] for d in self.cfg["datasets"]]

        def fits(k):
            return all(k % c == 0 and k - k // 2 >= c + 2 for c in counts)

        if not fits(n):
            step = math.lcm(*counts)
            least = next(k for k in range(step, 100 * step, step) if fits(k))
            raise ConfigError("calm.n_fragments", f"{n} leaves the metrics empty (NaN): it must be a multiple of the "
                              f"classes ({' and '.join(f'{c} in {d}' for c, d in zip(counts, self.cfg['datasets']))}) "
                              f"and large enough that a class returns in the stream's second half: {least} or more")

    def expected_curves(self) -> list[str]:
        return [CURVE.format(**run) for run in self.runs()]

    def targets(self) -> Targets:
        """Every table; the figures whose runs the config asks for (Figure 1(b)/(d, e) need MultiLingual, 1(c) and 4
        MultiDomain, and 1(d, e) and 4 the PoE+PW 30 model)."""
        datasets, weights = self.cfg["datasets"], "poe_pw_30" in self.cfg["models"]
        lingual, domain = "multilingual" in datasets, "multidomain" in datasets
        wanted = {"figure1b": lingual, "figure1c": domain, "figure1d": weights and lingual,
                  "figure1e": weights and lingual, "figure4": weights and domain}
        transformer = zoo.TRANSFORMER in self.cfg["models"]
        tables = [t for k, t in TABLES.items() if k != "appendix_c_transformer" or transformer]
        return Targets(tables=tables, figures=[FIGURES[k] for k, ok in wanted.items() if ok],
                       comparisons=[COMPARISON], extras=[APPENDIX_A, *self.appendix_d_files()])

    # --- runs -----------------------------------------------------------------------------------------------------
    def user_models(self) -> dict[str, str]:
        """{run id: 'package.module:Class'} of the user's models in calm.models."""
        return {run_id(m): m for m in self.cfg["models"] if m not in zoo.ALL_MODELS}

    def splits(self) -> list[str]:
        """The corpus halves the runs stream: test, and dev where Appendix C's Transformer runs."""
        return ["test", "dev"] if zoo.TRANSFORMER in self.cfg["models"] else ["test"]

    def seeds(self, model: str, dataset: str, lam: int) -> list[int]:
        """The first calm.seeds of the seeds the original test runs used for that setting (0 .. 9, but for the
        domain MoE 30 rows the 8 or 7 of test_command_lines_moe.txt, D16); a user's model: 0 .. calm.seeds - 1."""
        n = self.cfg["seeds"]
        if model in zoo.ALL_MODELS:
            return list(zoo.config(model, dataset, lam).seeds[:n])
        return list(range(n))

    def seed_span(self) -> int:
        """1 + the largest seed of any run: the streams `prepare` plans for are those of seeds 0 .. span - 1."""
        return 1 + max((r["seed"] for r in self.runs()), default=-1)

    def runs(self) -> list[dict]:
        return [{"dataset": d, "lam": lam, "model": run_id(m), "variant": v, "seed": s}
                for d in self.cfg["datasets"] for lam in self.cfg["lambdas"][d] for m in self.cfg["models"]
                for v in self.cfg["variants"] for s in self.seeds(m, d, lam)]

    def packs(self) -> list[Pack]:
        """The training jobs when calm.runs_per_job > 1 (none at 1: the wildcard rule, a job per run): the runs of a
        (dataset, lambda), in order, calm.runs_per_job to a job."""
        size = self.cfg["runs_per_job"]
        return [] if size == 1 else make_packs(self.runs(), ("dataset", "lam"), size, "calm_train")

    def pack_json(self, pack: Pack) -> str:
        """A pack's runs for `calm train --runs`: each run's keys (a user's model as its class), curve and
        checkpoint."""
        models = self.user_models()
        return to_json([{**run, "model": models.get(run["model"], run["model"]), "out": CURVE.format(**run),
                         "checkpoint": CHECKPOINT.format(**run)} for run in pack.runs])

    def wildcards(self) -> dict[str, str]:
        models = [run_id(m) for m in self.cfg["models"]]
        return {"dataset": "|".join(zoo.DATASETS), "lam": "[0-9]+", "seed": "[0-9]+",
                "model": "|".join(re.escape(m) for m in sorted(models)), "variant": "|".join(zoo.VARIANTS)}

    def resources(self) -> str:
        return RESOURCES[self.cfg["source"]]

    def variant(self) -> str:
        """The variant the figures draw: faithful when it runs."""
        return "faithful" if "faithful" in self.cfg["variants"] else self.cfg["variants"][0]

    def weight_curve(self, dataset: str) -> str:
        """The PoE+PW 30 curve the weight figures draw: seed 0 at the dataset's first lambda."""
        return CURVE.format(dataset=dataset, lam=self.cfg["lambdas"][dataset][0], model="poe_pw_30",
                            variant=self.variant(), seed=0)

    def weight_curves(self) -> list[str]:
        """dataset=path pairs for the comparison of Appendix B's weight autocorrelations."""
        if "poe_pw_30" not in self.cfg["models"]:
            return []
        return [f"{d}={self.weight_curve(d)}" for d in self.cfg["datasets"]]

    def curves(self) -> list[str]:
        return self.expected_curves()

    def curve_keys(self) -> dict:
        """The part of the section that `curves()` reads. The aggregate's command passes it as JSON and the CLI lists
        the paths with `Grid(keys).curves()`: the 1100 paths of the paper plan (111 KB) come near Linux's 128 KiB cap
        on one argument."""
        return {k: self.cfg[k] for k in ("datasets", "lambdas", "models", "variants", "seeds")}

    def curve_keys_json(self) -> str:
        return json.dumps(self.curve_keys(), separators=(",", ":"))

    def sample_curves(self) -> list[str]:
        """The curves whose records hold Appendix D's samples: seed 0 of every model, each dataset's first lambda,
        the figures' variant."""
        return [CURVE.format(dataset=d, lam=self.cfg["lambdas"][d][0], model=run_id(m), variant=self.variant(),
                             seed=0) for m in self.cfg["models"] for d in self.cfg["datasets"]]

    def appendix_d_files(self) -> list[str]:
        return [APPENDIX_D.format(model=run_id(m)) for m in self.cfg["models"]]
