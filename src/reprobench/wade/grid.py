"""The WADE runs a config asks for, and every path: read by workflow/rules/wade.smk and `reprobench inspect`."""

from __future__ import annotations

from reprobench.core.benchmark import Product, Targets, alternatives
from reprobench.core.errors import ConfigError
from reprobench.core.plugins import check_user_class, run_id, torch_stub

TASK_IDS = tuple(range(1, 11))  # the paper's ten tasks (wade.tasks.TASKS)
IMDB_MODELS = ("rnn", "lstm", "gru", "transformer", "linear")  # Table 2's models (wade.imdb_models builds them)
# (model, config) of every trained sequence-model run of one (task, seed): the Transformer's config is its variant
# (faithful: no causal mask, as released; corrected: a causal mask), RNN and LSTM have one.
SEQUENCE_RUNS = (("rnn", "default"), ("lstm", "default"), ("transformer", "faithful"), ("transformer", "corrected"))
USER_CONFIG = "default"  # the config key of a user's sequence model (config wade.models) on the synthetic tasks
USER_METHODS = ("forward",)  # what a user's sequence model must define (docs/PLUGINS.md, WADE)
ESN_RUN = ("esn", "default")
RULE_KEY = "rule"  # the key column of a ReCA curve file: every CA rule of one (task, seed) job shares the file

# Paths; logs/ and benchmarks/ mirror results/.
ROOT, LOGS, TIMINGS = "results/wade", "logs/wade", "benchmarks/wade"
TASK_SEED = "task={task}/seed={seed}"
DATA = f"{ROOT}/data/{TASK_SEED}.parquet"
DATA_LOG = f"{LOGS}/data/{TASK_SEED}.log"
CURVE = f"{ROOT}/curves/experiment=synthetic/model={{model}}/task={{task}}/config={{config}}/seed={{seed}}.parquet"
# One file per reservoir job for every CA rule (column `rule`): 1000 files at paper scale, not 256,000 (DESIGN.md,
# "Curve files": Snakemake matches every input of the aggregate to its producer when it plans).
RECA_CURVE = f"{ROOT}/curves/experiment=synthetic/model=reca/{TASK_SEED}.parquet"
RESERVOIR_LOG, RESERVOIR_TIMING = f"{LOGS}/reservoir/{TASK_SEED}.log", f"{TIMINGS}/reservoir/{TASK_SEED}.tsv"
SEQUENCE_LOG, SEQUENCE_TIMING = f"{LOGS}/sequence/{TASK_SEED}.log", f"{TIMINGS}/sequence/{TASK_SEED}.tsv"
SYNTHETIC_RUNS = f"{ROOT}/metrics/synthetic.parquet"
SYNTHETIC_MEAN_CURVES = f"{ROOT}/metrics/synthetic_mean_curves.parquet"
SYNTHETIC_LOG = f"{LOGS}/metrics/synthetic.log"

IMDB_DATA, IMDB_DATA_LOG = f"{ROOT}/data/imdb.parquet", f"{LOGS}/data/imdb.log"
IMDB_RESOURCES = {"synthetic": "resources/imdb-synthetic", "download": "resources/imdb"}  # by wade.imdb.source
MODEL_SEED = "model={model}/seed={seed}"
IMDB_CURVE = f"{ROOT}/curves/experiment=imdb/{MODEL_SEED}.parquet"
IMDB_CHECKPOINT = f"{ROOT}/checkpoints/experiment=imdb/{MODEL_SEED}.pt"
IMDB_LOG, IMDB_TIMING = f"{LOGS}/imdb/{MODEL_SEED}.log", f"{TIMINGS}/imdb/{MODEL_SEED}.tsv"
IMDB_RUNS = f"{ROOT}/metrics/imdb.parquet"
IMDB_MEAN_CURVES = f"{ROOT}/metrics/imdb_mean_curves.parquet"
IMDB_AGGREGATE_LOG = f"{LOGS}/metrics/imdb.log"

COMPARISON, COMPARISON_LOG = f"{ROOT}/comparison.csv", f"{LOGS}/comparison.log"
HUMAN_SESSION = f"{ROOT}/human/task={{task}}/seed={{seed}}.parquet"  # `reprobench wade human`, not a rule

TABLE_FORMATS, FIGURE_FORMATS = (".md", ".csv", ".tex"), (".png", ".pdf")
_PAPER = "Cisneros, Sivic & Mikolov (2022)"
TABLES = {
    "table2": Product("Table 2", f"{ROOT}/tables/table2_imdb", TABLE_FORMATS,
                      f"Table 2 of {_PAPER}: WADE (x 1e-2) and maximum test accuracy of RNN, LSTM, GRU, Transformer "
                      "and a linear bag-of-words model on IMDB; faithful smooths the Linear curve before WADE as the "
                      "reference did, corrected does not (DEVIATIONS V11)."),
    "table4": Product("Table 4", f"{ROOT}/tables/table4_wade", TABLE_FORMATS,
                      f"Table 4 of {_PAPER}: WADE per task of the best ReCA rule, the ESN, RNN, LSTM and Transformer, "
                      "with the human scores; faithful and corrected conventions (DEVIATIONS W1, W2)."),
    "table5": Product("Table 5", f"{ROOT}/tables/table5_accuracy", TABLE_FORMATS,
                      f"Table 5 of {_PAPER}: maximum test accuracy per task and model (the mean curve's maximum, "
                      "± the spread at the last checkpoint, as the paper)."),
    "table6": Product("Table 6", f"{ROOT}/tables/table6_parameters", TABLE_FORMATS,
                      f"Table 6 of {_PAPER}: the experimental parameters per task, with the paper's parameter "
                      "formulas next to the parameters the models really have."),
}
FIGURES = {
    "figure1": Product("Figure 1", f"{ROOT}/figures/figure1_time_to_threshold", FIGURE_FORMATS,
                       f"Figure 1 of {_PAPER}: the times T(a) at which a learning curve (the best ReCA rule's mean "
                       "curve on Basic QA) first passes each accuracy threshold, from which WADE is computed."),
    "figure2": Product("Figure 2", f"{ROOT}/figures/figure2_imdb_curves", FIGURE_FORMATS,
                       f"Figure 2 of {_PAPER}: IMDB test accuracy against training examples, mean ± std over runs, "
                       "WADE in the legend."),
    "figure3": Product("Figure 3", f"{ROOT}/figures/figure3_learning_curves", FIGURE_FORMATS,
                       f"Figure 3 of {_PAPER}: test accuracy against training sequences on the ten tasks, mean ± std "
                       "over runs, WADE in the legend."),
}


class Grid:
    """The runs of one `wade` config section, and the input functions its rules use."""

    def __init__(self, section: dict):
        self.cfg = section

    def rules(self) -> list[int]:
        return list(range(256)) if self.cfg["reca_rules"] == "all" else list(self.cfg["reca_rules"])

    def seeds(self) -> list[int]:
        """Seeds base_seed .. base_seed + seeds - 1 (the paper: 12305 onwards)."""
        return [self.cfg["base_seed"] + i for i in range(self.cfg["seeds"])]

    def user_models(self) -> dict[str, str]:
        """{run id: 'package.module:Class'} of the user's sequence models (config wade.models)."""
        return {run_id(m): m for m in self.cfg.get("models") or []}

    def sequence_runs(self) -> list[tuple[str, str]]:
        """(model, config) of every trained run of one (task, seed): SEQUENCE_RUNS, then each user's model."""
        return list(SEQUENCE_RUNS) + [(m, USER_CONFIG) for m in self.user_models()]

    def runs(self) -> list[tuple[str, str]]:
        """(model, config) of every synthetic-task run of one (task, seed)."""
        return [("reca", f"rule{r}") for r in self.rules()] + [ESN_RUN] + self.sequence_runs()

    # --- the registry's interface (reprobench.benchmarks) -------------------------------------------------------
    def check(self) -> None:
        """What the schema cannot say: each human session file exists and is a WADE human session (Snakemake would
        otherwise ignore a missing one while Table 4 is up to date, and fail late on a foreign one)."""
        from reprobench.core.curves import read_metadata
        from reprobench.core.errors import ReprobenchError
        from reprobench.wade import PAPER

        models = self.cfg.get("models") or []
        if len(set(models)) < len(models):
            raise ConfigError("wade.models", f"names a class twice: {models}")
        for spec in models:
            check_user_class(spec, "wade.models", required=USER_METHODS, unimplemented=torch_stub)
        for spec in self.cfg["imdb"]["models"]:
            if ":" in spec:
                check_user_class(spec, "wade.imdb.models", required=USER_METHODS, unimplemented=torch_stub)

        for path in self.cfg.get("human_sessions") or []:
            try:
                meta = read_metadata(path)
            except ReprobenchError as exc:
                raise ConfigError("wade.human_sessions", str(exc)) from None
            if (meta.get("paper"), meta.get("experiment")) != (PAPER.id, "human"):
                raise ConfigError("wade.human_sessions", f"file {path} is not a WADE human session (it is a "
                                  f"'{meta.get('experiment', meta.get('stage'))}' file of {meta.get('paper')}); "
                                  "record one with `reprobench wade human`")

    def expected_curves(self) -> list[str]:
        return self.synthetic_curves() + self.imdb_curves()

    def targets(self) -> Targets:
        return Targets(tables=list(TABLES.values()), figures=list(FIGURES.values()), comparisons=[COMPARISON])

    # --- for the rules ----------------------------------------------------------------------------------------------
    def wildcards(self) -> dict[str, str]:
        """Wildcard constraints of the WADE rules: the values this config can produce."""
        return {"task": "|".join(map(str, TASK_IDS)), "seed": r"[0-9]+",
                "model": alternatives({m for m, _ in self.runs()} | {run_id(m) for m in self.cfg["imdb"]["models"]}),
                "config": alternatives({c for _, c in (ESN_RUN, *self.sequence_runs())})}

    @staticmethod
    def reservoir_outputs() -> dict[str, str]:
        """The curve files of one reservoir job (every CA rule in one file, the ESN), `{task}` and `{seed}` open."""
        return {"reca": RECA_CURVE, "esn": CURVE.format(model=ESN_RUN[0], config=ESN_RUN[1], task="{task}",
                                                        seed="{seed}")}

    def sequence_outputs(self) -> list[str]:
        """The curve files of one sequence-model job, in sequence_runs() order, `{task}` and `{seed}` left open."""
        return [CURVE.format(model=m, config=c, task="{task}", seed="{seed}") for m, c in self.sequence_runs()]

    def synthetic_curves(self) -> list[str]:
        return synthetic_curves(self.cfg["tasks"], self.seeds(), self.user_models())

    def first_seed_data(self) -> list[str]:
        """One dataset per task (the first seed), for Table 6."""
        return [DATA.format(task=t, seed=self.seeds()[0]) for t in self.cfg["tasks"]]

    def imdb_curves(self) -> list[str]:
        """Seeds 0 .. imdb.seeds - 1 of every IMDB model."""
        return [IMDB_CURVE.format(model=run_id(m), seed=s) for m in self.cfg["imdb"]["models"]
                for s in range(self.cfg["imdb"]["seeds"])]

    def imdb_resources(self) -> str:
        return IMDB_RESOURCES[self.cfg["imdb"]["source"]]


def synthetic_curves(tasks, seeds, user_models=()) -> list[str]:
    """The curve files of the synthetic tasks, per (task, seed): the ReCA file (every rule), the ESN's, one per
    sequence-model run in SEQUENCE_RUNS order, then one per user's model (run ids). The aggregate rebuilds this list
    from tasks, seeds and models: at paper scale it is too long for one command line (Linux caps one argument, the
    shell command, at 128 KiB)."""
    runs = (ESN_RUN, *SEQUENCE_RUNS, *((m, USER_CONFIG) for m in user_models))
    return [path for t in tasks for s in seeds
            for path in (RECA_CURVE.format(task=t, seed=s),
                         *(CURVE.format(model=m, config=c, task=t, seed=s) for m, c in runs))]
