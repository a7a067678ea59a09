"""The S2B runs a config asks for, and every path: read by workflow/rules/s2b.smk and `reprobench inspect`.

The parts that need no agent: the posdis speaker's compositionality over many episodes (Table 1's PS column), the
disentanglement of SCS stimuli (Appendix D.2), the speaker's utterances (Table 3) and one meta-RG's stimuli and
messages (Figures 3, 4). Trained, R2D2 listeners with the posdis speaker: Table 2, one run per (O, S, variant, seed);
Table 4 and Figure 6, one run per (model, variant, seed) of EXPERIMENTS; the DNC on the recall task (Figure 5), one
per (representation, variant, seed); Table 1's learned columns, a speaker and a listener learned together (VDN +
SAD, reprobench.s2b.marl), one run per (S, variant, seed) as experiment "table1", models s1 and s2.
"""

from __future__ import annotations

from reprobench.core.benchmark import Product, Targets, alternatives
from reprobench.core.errors import ConfigError
from reprobench.core.plugins import USER_CLASS, check_user_class, run_id, torch_stub

ROOT, LOGS, TIMINGS = "results/s2b", "logs/s2b", "benchmarks/s2b"
SPEAKER_CURVE = f"{ROOT}/curves/experiment=speaker/seed={{seed}}.parquet"  # per episode: the PS's metrics
DISENTANGLEMENT_CURVE = f"{ROOT}/curves/experiment=disentanglement/seed={{seed}}.parquet"  # per (O, protocol)
SPEAKER_LOG, DISENTANGLEMENT_LOG = (f"{LOGS}/probes/speaker/seed={{seed}}.log",
                                    f"{LOGS}/probes/disentanglement/seed={{seed}}.log")
SPEAKER_TIMING, DISENTANGLEMENT_TIMING = (f"{TIMINGS}/probes/speaker/seed={{seed}}.tsv",
                                          f"{TIMINGS}/probes/disentanglement/seed={{seed}}.tsv")
ZSCT_RUN = "model={model}/O={o}/S={s}/variant={variant}/seed={seed}"  # model: r2d2 or a user's agent (run id)
ZSCT_CURVE = f"{ROOT}/curves/experiment=zsct/{ZSCT_RUN}.parquet"  # per evaluation: accuracies per mode, losses
ZSCT_CHECKPOINT = f"{ROOT}/checkpoints/experiment=zsct/{ZSCT_RUN}.pt"
ZSCT_LOG = f"{LOGS}/train/experiment=zsct/{ZSCT_RUN}.log"
ZSCT_TIMING = f"{TIMINGS}/train/experiment=zsct/{ZSCT_RUN}.tsv"
EXPERIMENT_RUN = "experiment={experiment}/model={model}/variant={variant}/seed={seed}"
EXPERIMENT_CURVE = f"{ROOT}/curves/{EXPERIMENT_RUN}.parquet"  # Table 4, Figure 5 and 6 runs, as ZSCT_CURVE
EXPERIMENT_CHECKPOINT = f"{ROOT}/checkpoints/{EXPERIMENT_RUN}.pt"
EXPERIMENT_LOG = f"{LOGS}/train/{EXPERIMENT_RUN}.log"
EXPERIMENT_TIMING = f"{TIMINGS}/train/{EXPERIMENT_RUN}.tsv"
ZSCT = f"{ROOT}/metrics/zsct.parquet"  # one row per trained run (every experiment): the last evaluation's accuracies
ZSCT_AGGREGATE_LOG = f"{LOGS}/metrics/zsct.log"
PROBES = f"{ROOT}/metrics/probes.parquet"  # one row per (experiment, seed, setting, metric): mean over episodes
AGGREGATE_LOG = f"{LOGS}/metrics/aggregate.log"
COMPARISON, COMPARISON_LOG = f"{ROOT}/comparison.csv", f"{LOGS}/comparison.log"

# experiment -> model -> (train.PRESETS name, auxiliary reconstruction on): specs/s2b.md sections 2.11, 4.2-4.4, 5.7
EXPERIMENTS = {
    "table1": {"s1": ("table1_s1", False), "s2": ("table1_s2", False)},  # multi-agent: the preset's task is "marl"
    "table4": {"lstm": ("table4_lstm", True), "esbn": ("table4_esbn", True), "dcem": ("table4_dcem", True)},
    "fig5": {"scs": ("recall_scs", False), "ohe": ("recall_ohe", False)},
    "fig6": {"lstm": ("fig6_lstm", False), "dnc": ("fig6_dnc", False), "lstm_rec": ("fig6_lstm", True),
             "dnc_rec": ("fig6_dnc", True)},
}
R2D2 = "r2d2"  # Table 2's own listener in s2b.zsct.models; anything else is a user's agent (reprobench.s2b.agents)
RECALL = "fig5"  # the experiment without a query phase (the recall task)
AGENT_METHODS = ("act", "observe", "policy")  # what reprobench.s2b.agents.run_agent calls on a user's agent
USER_CORE_EXPERIMENT = "table4"  # the experiment whose models may include a user's core (reprobench.s2b.user_core)
CORE_METHODS = ("forward", "state_spec")  # what a user's core must define
PRODUCTS = {"table4": "table4", "fig5": "figure5", "fig6": "figure6"}  # experiment -> the product it alone feeds
SIZES = ("tiny", "reference")  # tiny: train.small (test-sized networks and replay, 4 actors); reference: the preset

TABLE_FORMATS, FIGURE_FORMATS = (".md", ".csv", ".tex"), (".png", ".pdf")
_PAPER = "Denamganaï, Missaoui & Walker (2023)"
TABLES = {
    "table1": Product("Table 1", f"{ROOT}/tables/table1_marl", TABLE_FORMATS,
                      f"Table 1 of {_PAPER}: ZSCT and EoA accuracies and linguistic compositionality (topsim, posdis, "
                      "bosdis, %) of a speaker and a listener learned together (R2D2 + VDN + SAD, S = 1 and 2, "
                      "O = 4), mean ± std over seeds, and of the Posdis-Speaker (PS), next to the paper's."),
    "table2": Product("Table 2", f"{ROOT}/tables/table2_zsct", TABLE_FORMATS,
                      f"Table 2 of {_PAPER}: ZSCT accuracy (%) of the R2D2 listener with the posdis speaker per number "
                      "of object-centric samples O and shots S, greedy test-only evaluation, mean ± std over seeds."),
    "table3": Product("Table 3", f"{ROOT}/tables/table3_posdis_examples", TABLE_FORMATS,
                      f"Table 3 of {_PAPER}: latent stimuli and the posdis speaker's utterances (token 0 is EoS)."),
    "table4": Product("Table 4", f"{ROOT}/tables/table4_architectures", TABLE_FORMATS,
                      f"Table 4 of {_PAPER}: ZSCT accuracy (%) of R2D2 listeners with the Archi LSTM, ESBN and DCEM "
                      "cores and the posdis speaker (S = 1, O = 1, V in [2, 3]), greedy test-only evaluation, mean ± "
                      "std over seeds."),
    "tableD2": Product("Appendix D.2", f"{ROOT}/tables/tableD2_disentanglement", TABLE_FORMATS,
                       f"Appendix D.2 of {_PAPER}: FactorVAE score, MIG and Modularity (%) of SCS stimuli, N_dim = 3, "
                       "d(j) = 5, under disentanglement_lib's and ReferentialGym's sampling, next to the paper's."),
}
FIGURES = {
    "figure3": Product("Figure 3", f"{ROOT}/figures/figure3_scs_episode", FIGURE_FORMATS,
                       f"Figure 3 of {_PAPER}: the SCS stimuli the speaker sees at each RG of one meta-RG "
                       "(N_dim = 3, d = (5, 5, 3)), coloured by latent value, with each value's Gaussian kernel."),
    "figure4": Product("Figure 4", f"{ROOT}/figures/figure4_posdis_messages", FIGURE_FORMATS,
                       f"Figure 4 of {_PAPER}: the posdis speaker's messages over the episode of Figure 3 (top) and "
                       "OHE vs SCS representations of example stimuli of two symbolic spaces (bottom)."),
    "figure5": Product("Figure 5", f"{ROOT}/figures/figure5_recall", FIGURE_FORMATS,
                       f"Figure 5 of {_PAPER}: 5-way 2-shot accuracy (second shot) on the recall task of the DNC R2D2 "
                       "agent with OHE and SCS stimuli over observations: the training episodes' (epsilon-greedy, as "
                       "the paper's logs) and greedy evaluations; mean and min-max band over seeds."),
    "figure6": Product("Figure 6", f"{ROOT}/figures/figure6_architectures", FIGURE_FORMATS,
                       f"Figure 6 of {_PAPER}: (a) 4-way (3 distractors) ZSCT accuracy over observations of the LSTM "
                       "and DNC listeners with and without the auxiliary reconstruction loss; (b) their stimulus "
                       "reconstruction accuracy (threshold 0.02 as run). Mean and min-max band over seeds."),
}


class Grid:
    """The runs of one `s2b` config section, and the input functions its rules use."""

    def __init__(self, section: dict):
        self.cfg = section

    # --- the registry's interface (reprobench.benchmarks) -------------------------------------------------------
    def check(self) -> None:
        d, z, e = self.cfg["disentanglement"], self.cfg["zsct"], self.cfg["experiments"]
        for model in z["models"]:
            if model != R2D2 and not USER_CLASS.match(model):
                raise ConfigError("s2b.zsct.models", f"unknown model '{model}' (known: {R2D2}, or a user's agent "
                                  "class as 'package.module:Class')")
        for spec in [m for m in z["models"] if m != R2D2]:  # found now, not when its job runs
            check_user_class(spec, "s2b.zsct.models", required=AGENT_METHODS)
        for key in ("n_oc", "shots"):
            if any(v < 1 for v in z[key]):
                raise ConfigError(f"s2b.zsct.{key}", f"every value must be at least 1, got {z[key]}")
        if z["eval_every"] > z["observations"]:
            raise ConfigError("s2b.zsct.eval_every", f"{z['eval_every']} is larger than s2b.zsct.observations = "
                              f"{z['observations']}: the run would be evaluated at its budget only")
        for experiment, models in e["seeds"].items():
            if models is None:  # switched off
                continue
            if not models:  # reached here only without a config.yaml entry to merge into (schema: minProperties)
                raise ConfigError(f"s2b.experiments.seeds.{experiment}", "{} runs nothing: write null to switch the "
                                  "experiment off")
            for key in ("observations", "eval_every"):
                if experiment not in e[key]:
                    raise ConfigError(f"s2b.experiments.{key}", f"has no entry for '{experiment}', which has seeds")
            key = f"s2b.experiments.seeds.{experiment}"
            users = [m for m in models if experiment == USER_CORE_EXPERIMENT and USER_CLASS.match(m)]
            unknown = sorted(set(models) - set(EXPERIMENTS[experiment]) - set(users))
            if unknown:
                raise ConfigError(key, f"unknown model(s) {unknown}; known: {sorted(EXPERIMENTS[experiment])}" + (
                    ", or a user's core class as 'package.module:Class'" if experiment == USER_CORE_EXPERIMENT
                    else ""))
            for spec in users:  # found now, not when its job runs
                check_user_class(spec, key, required=CORE_METHODS, unimplemented=torch_stub)
            every, budget = e["eval_every"][experiment], e["observations"][experiment]
            if every > budget:
                raise ConfigError(f"s2b.experiments.eval_every.{experiment}", f"{every} is larger than "
                                  f"s2b.experiments.observations.{experiment} = {budget}: the run would be evaluated "
                                  "at its budget only")
        if any(o < 1 for o in d["n_oc"]):
            raise ConfigError("s2b.disentanglement.n_oc", f"every O must be at least 1, got {d['n_oc']}")
        if self.cfg["speaker"]["v_min"] > self.cfg["speaker"]["v_max"]:
            raise ConfigError("s2b.speaker.v_min", f"v_min ({self.cfg['speaker']['v_min']}) exceeds v_max "
                              f"({self.cfg['speaker']['v_max']})")

    def expected_curves(self) -> list[str]:
        return (self.speaker_curves() + self.disentanglement_curves() + self.zsct_runs()
                + self.experiment_curves(RECALL))

    def targets(self) -> Targets:
        """Every table and figure but those of an experiment switched off (s2b.experiments.seeds.<experiment>:
        null); Table 1 stays, with its Posdis-Speaker column."""
        off = {PRODUCTS[x] for x in PRODUCTS if not self.experiment_models(x)}
        return Targets(tables=[t for k, t in TABLES.items() if k not in off],
                       figures=[f for k, f in FIGURES.items() if k not in off], comparisons=[COMPARISON])

    # --- runs -----------------------------------------------------------------------------------------------------
    def speaker_curves(self) -> list[str]:
        return [SPEAKER_CURVE.format(seed=s) for s in range(self.cfg["speaker"]["seeds"])]

    def disentanglement_curves(self) -> list[str]:
        return [DISENTANGLEMENT_CURVE.format(seed=s) for s in range(self.cfg["disentanglement"]["seeds"])]

    def zsct_curves(self) -> list[str]:
        z = self.cfg["zsct"]
        return [ZSCT_CURVE.format(model=run_id(m), o=o, s=s, variant=v, seed=seed) for m in z["models"]
                for o in z["n_oc"] for s in z["shots"] for v in z["variants"] for seed in range(z["seeds"])]

    def user_models(self) -> dict[str, str]:
        """{run id: 'package.module:Class'} of the user's agents in s2b.zsct.models and cores in Table 4."""
        cores = self.cfg["experiments"]["seeds"].get(USER_CORE_EXPERIMENT) or {}
        return {run_id(m): m for m in [*self.cfg["zsct"]["models"], *cores] if USER_CLASS.match(m)}

    def experiment_models(self, experiment: str) -> dict[str, int]:
        """{model run id: seeds} of an experiment; {} when it is switched off (null) or absent."""
        return {run_id(m): n for m, n in (self.cfg["experiments"]["seeds"].get(experiment) or {}).items()}

    def experiment_curves(self, experiment: str) -> list[str]:
        a = self.cfg["experiments"]
        return [EXPERIMENT_CURVE.format(experiment=experiment, model=m, variant=v, seed=seed)
                for m, n in self.experiment_models(experiment).items() for v in a["variants"] for seed in range(n)]

    def zsct_runs(self) -> list[str]:
        """Every run with a query phase (zsct.parquet's): Table 2's, then Table 4's and Figure 6's."""
        return self.zsct_curves() + [c for e in EXPERIMENTS if e != RECALL for c in self.experiment_curves(e)]

    def wildcards(self, rule: str | None = None) -> dict[str, str]:
        """The constraints of a rule's wildcards, as narrow as the config: "zsct" (s2b_train) takes the models of
        s2b.zsct.models; "experiment" (s2b_train_experiment) an experiment with seeds and one of its models, tied by
        a lookahead on the model that follows the experiment in the path (a constraint holds one wildcard)."""
        out = {"seed": "[0-9]+", "o": "[0-9]+", "s": "[0-9]+", "variant": "faithful|corrected"}
        if rule == "zsct":
            out["model"] = alternatives(run_id(m) for m in self.cfg["zsct"]["models"])
        elif rule == "experiment":
            planned = {x: self.experiment_models(x) for x in EXPERIMENTS if self.experiment_models(x)}
            out["experiment"] = "|".join(f"{x}(?=/model=(?:{alternatives(models)})/)"
                                         for x, models in planned.items()) or NOTHING
            out["model"] = alternatives({m for models in planned.values() for m in models}) or NOTHING
        return out


NOTHING = "(?!)"  # a regex that matches nothing: the constraint of a wildcard no run can take
