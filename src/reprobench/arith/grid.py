"""The experiment grid (specs/arith.md, section 5.1): which settings exist, their seeds, and every path.

The rules (workflow/rules/arith.smk), `reprobench inspect` and the aggregation all read the grid from here, so
that the runs the DAG plans, the runs a reader expects and the runs a table counts are the same list, and every
path is written once.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace

from reprobench.arith.data import subset_sizes
from reprobench.arith.paper import USER_KEY
from reprobench.arith.thresholds import read as read_thresholds
from reprobench.core.benchmark import Product, Targets
from reprobench.core.errors import ConfigError
from reprobench.core.plugins import check_user_class, run_id, torch_stub

SWEEPS = ("input_size", "hidden_size", "overlap", "subset", "range")
EXPERIMENTS = ("operations",) + SWEEPS

# Paths. A setting's folders, then each stage's files; logs/ and benchmarks/ mirror results/.
ROOT, LOGS, TIMINGS = "results/arith", "logs/arith", "benchmarks/arith"
SETTING = ("experiment={experiment}/model={model}/operation={operation}/input_size={input_size}"
           "/hidden_size={hidden_size}/overlap={overlap}/subset={subset}/interpolation={interpolation}"
           "/extrapolation={extrapolation}")
DATASET = ("operation={operation}/input_size={input_size}/overlap={overlap}/subset={subset}"
           "/extrapolation={extrapolation}")  # what a success threshold depends on
THRESHOLD = f"{ROOT}/thresholds/{DATASET}.json"
CURVE = f"{ROOT}/curves/{SETTING}/seed={{seed}}.parquet"
# A training job trains a pack of settings (Pack): one model, the same number of steps (input and hidden sizes: the
# pack's range of them).
PACK = "model={model}/input_size={input_size}/hidden_size={hidden_size}/steps={steps}"
TRAIN_LOG = f"{LOGS}/train/{PACK}.log"
TRAIN_TIMING = f"{TIMINGS}/train/{PACK}.tsv"
CHECKPOINT = f"{ROOT}/checkpoints/{PACK}.pt"
THRESHOLDS_LOG = f"{LOGS}/thresholds.log"
RUNS = f"{ROOT}/metrics/{{experiment}}.parquet"
GROUPS = f"{ROOT}/metrics/{{experiment}}_groups.parquet"
AGGREGATE_LOG = f"{LOGS}/metrics/{{experiment}}.log"
TABLE = Product("Table: effect of dataset operation", f"{ROOT}/tables/operations", (".md", ".csv", ".tex"),
                "The table 'Effect of dataset operation' of Madsen & Johansen (2019): success rate (Wilson 95% CI), "
                "solved-at step (median; gamma-fit mean with 95% profile CI) and sparsity error (beta-fit mean with "
                "95% profile CI) per operation and model. Faithful rows use the paper's estimators; a corrected row "
                "follows where the fixed estimators differ (docs/DEVIATIONS.md A1-A3).")
FIGURE = Product("Figure: effect of parameters", f"{ROOT}/figures/parameters", (".png", ".pdf"),
                 "The figure 'Effect of parameters' of Madsen & Johansen (2019): success rate, solved-at step and "
                 "sparsity error of NAC• and NALU on multiplication against input size, hidden size, overlap ratio, "
                 "subset ratio and interpolation range, with 95% intervals; open diamonds are the published success "
                 "rates read off the paper's figure.")
COMPARISON = f"{ROOT}/comparison.csv"
COMPARISON_LOG = f"{LOGS}/comparison.log"
# Files `reprobench inspect` checks with the reader that uses them (a pattern over absolute paths -> reader).
READERS = {f"*/{ROOT}/thresholds/*.json": read_thresholds}


def fmt(x) -> str:
    """Numbers in paths: 0.5 -> '0.5', 1.0 -> '1', 100 -> '100'."""
    return f"{float(x):g}"


def fmt_range(r) -> str:
    """[1, 2] -> '1_2'."""
    return f"{fmt(r[0])}_{fmt(r[1])}"


def parse_range(text: str) -> tuple[float, float]:
    low, high = text.split("_")
    return float(low), float(high)


@dataclass(frozen=True)
class Setting:
    experiment: str
    model: str
    operation: str
    input_size: int
    hidden_size: int
    overlap: float
    subset: float
    interpolation: tuple[float, float]
    extrapolation: tuple[float, float]

    def keys(self) -> dict[str, str]:
        """The path's wildcard values."""
        return {"experiment": self.experiment, "model": self.model, "operation": self.operation,
                "input_size": str(self.input_size), "hidden_size": str(self.hidden_size),
                "overlap": fmt(self.overlap), "subset": fmt(self.subset),
                "interpolation": fmt_range(self.interpolation), "extrapolation": fmt_range(self.extrapolation)}

    def curve_path(self, seed: int) -> str:
        return CURVE.format(seed=seed, **self.keys())

    def threshold_path(self) -> str:
        return THRESHOLD.format(**self.keys())

    def record(self) -> dict:
        return asdict(self)

    @classmethod
    def from_keys(cls, keys) -> Setting:
        return cls(experiment=keys["experiment"], model=keys["model"], operation=keys["operation"],
                   input_size=int(keys["input_size"]), hidden_size=int(keys["hidden_size"]),
                   overlap=float(keys["overlap"]), subset=float(keys["subset"]),
                   interpolation=parse_range(keys["interpolation"]),
                   extrapolation=parse_range(keys["extrapolation"]))


@dataclass(frozen=True)
class Pack:
    """The settings one training job trains together, as one batched model: they share the model and the number of
    steps (and the input and hidden sizes, unless the config pads them: `input_size` is the largest). Each (setting,
    seed) keeps its own curve file; a run that two experiments share (the sweeps' default point, the table's cell of
    the sweeps' operation) is trained once and written to each of its files (its training does not depend on the
    experiment).
    """

    iterations: int
    settings: tuple[Setting, ...]
    seeds: tuple[int, ...]  # N: seeds 0 .. N-1 of each setting, in `settings` order

    @property
    def model(self) -> str:
        return self.settings[0].model

    @property
    def input_size(self) -> int:
        """The largest input size (the padded width)."""
        return max(s.input_size for s in self.settings)

    def keys(self) -> dict[str, str]:
        def span(values):
            values = sorted(set(values))
            return str(values[0]) if len(values) == 1 else f"{values[0]}to{values[-1]}"

        return {"model": self.model, "input_size": span(s.input_size for s in self.settings),
                "hidden_size": span(s.hidden_size for s in self.settings), "steps": str(self.iterations + 1)}

    @property
    def rule(self) -> str:
        """The Snakemake rule name of this pack's job (a user's run id with its dots as underscores)."""
        k = self.keys()
        return f"arith_train_{k['model'].replace('.', '_')}_n{k['input_size']}_h{k['hidden_size']}_s{k['steps']}"

    def path(self, pattern: str) -> str:
        return pattern.format(**self.keys())

    def outputs(self) -> list[tuple[Setting, int, str, int]]:
        """(setting, seed, curve file, index of its run in `members()`) for every curve file, in a stable order."""
        index, out = {}, {}
        for setting, n in zip(self.settings, self.seeds):
            run = replace(setting, experiment="")
            for seed in range(n):
                path = setting.curve_path(seed)
                out.setdefault(path, (setting, seed, path, index.setdefault((run, seed), len(index))))
        return list(out.values())

    def curves(self) -> list[str]:
        return [o[2] for o in self.outputs()]

    def members(self) -> list[tuple[Setting, int]]:
        """The distinct (setting, seed) runs the job trains (the setting of the first file that names the run)."""
        runs: dict = {}
        for setting, seed, _, i in self.outputs():
            runs.setdefault(i, (setting, seed))
        return list(runs.values())

    def to_json(self) -> str:
        return json.dumps({"settings": [s.keys() for s in self.settings], "seeds": list(self.seeds),
                           "iterations": self.iterations}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Pack:
        blob = json.loads(text)
        settings = tuple(Setting.from_keys(k) for k in blob["settings"])
        if not settings or len(settings) != len(blob["seeds"]) or len({s.model for s in settings}) != 1:
            raise ValueError("a pack needs settings of one model, with one seed count each")
        return cls(int(blob["iterations"]), settings, tuple(int(n) for n in blob["seeds"]))


class Grid:
    """The runs of one `arith` config section, and the input functions its rules use."""

    def __init__(self, section: dict):
        self.cfg = section

    # --- the runs -------------------------------------------------------------------------------------------------
    def _default(self, experiment: str, model: str, operation: str) -> Setting:
        d = self.cfg["dataset"]
        return Setting(experiment, model, operation, int(d["input_size"]), int(d["hidden_size"]), float(d["overlap"]),
                       float(d["subset"]), tuple(d["interpolation"]), tuple(d["extrapolation"]))

    def settings(self, experiment: str | None = None) -> list[Setting]:
        """Every training setting (or those of one experiment), in a stable order."""
        out = []
        if experiment in (None, "operations"):
            for operation, models in self.cfg["operations"]["cells"].items():
                out += [self._default("operations", run_id(model), operation) for model in models]
        sweeps = self.cfg["sweeps"]
        for name in SWEEPS:
            if experiment not in (None, name):
                continue
            for model in sweeps["models"]:
                base = self._default(name, run_id(model), sweeps["operation"])
                if name == "range":
                    out += [replace(base, interpolation=tuple(r["interpolation"]),
                                    extrapolation=tuple(r["extrapolation"])) for r in sweeps["range"]]
                else:
                    cast = int if name in ("input_size", "hidden_size") else float
                    out += [replace(base, **{name: cast(v)}) for v in sweeps[name]]
        return out

    def user_models(self) -> dict[str, str]:
        """{run id: 'package.module:Class'} of the user's units in the table's cells and the sweeps."""
        named = [m for ms in self.cfg["operations"]["cells"].values() for m in ms] + list(self.cfg["sweeps"]["models"])
        return {run_id(m): m for m in named if ":" in m}

    def seeds(self, experiment: str, setting: Setting | None = None) -> list[int]:
        """Seeds 0 .. N-1 of the experiment's section (operations or sweeps), or of the setting's table cell where
        operations.cell_budgets gives it its own."""
        section = self.cfg["operations"] if experiment == "operations" else self.cfg["sweeps"]
        own = self.cell_budget(setting) if setting is not None else None
        return list(range(int((own or section)["seeds"])))

    def cell_budget(self, setting: Setting) -> dict | None:
        """A table cell's own {seeds, iterations} (operations.cell_budgets, keyed 'operation/model'), or None."""
        if setting.experiment != "operations":
            return None
        return (self.cfg["operations"].get("cell_budgets") or {}).get(f"{setting.operation}/{setting.model}")

    def iterations(self, setting: Setting) -> int:
        """Optimiser steps minus one (the reference loops over range(iterations + 1)), per experiment or table cell
        (operations.cell_budgets); the input-size sweep's large inputs train longer (sweeps.long_iterations)."""
        if setting.experiment == "operations":
            return int((self.cell_budget(setting) or self.cfg["operations"])["iterations"])
        longer = {int(n): int(entry["iterations"]) for entry in self.cfg["sweeps"].get("long_iterations") or []
                  for n in entry["input_sizes"]}
        if setting.experiment == "input_size" and setting.input_size in longer:
            return longer[setting.input_size]
        return int(self.cfg["sweeps"]["iterations"])

    def packs(self) -> list[Pack]:
        """The training jobs: every setting of every experiment, grouped by model and steps, and by input and hidden
        size where `packing` is `shape` (no padding: no extra work on a CPU). Padded packs (input and hidden sizes
        zero-padded to the pack's largest, with exact masks) suit a GPU, where the padding is nearly free and the
        step's kernel launches are shared; on a CPU they multiply the first layer's work (hidden 2 -> 10: 5x).
        Either way a run computes the same function as alone; its bits differ from a run alone (or in another
        batch) by the rounding of vectorised kernels, which depends on where an element falls in a tensor."""
        padded = self.cfg["packing"] == "padded"
        groups: dict = {}
        for s in self.settings():
            key = (s.model, self.iterations(s)) + (() if padded else (s.input_size, s.hidden_size))
            groups.setdefault(key, []).append(s)
        return [Pack(iterations, tuple(settings), tuple(len(self.seeds(s.experiment, s)) for s in settings))
                for (_, iterations, *_), settings in groups.items()]

    def datasets(self) -> list[dict]:
        """The keys of every distinct success threshold (what THRESHOLD names), in a stable order."""
        names = ("operation", "input_size", "overlap", "subset", "extrapolation")
        return list({s.threshold_path(): {k: s.keys()[k] for k in names} for s in self.settings()}.values())

    def thresholds(self) -> list[str]:
        return [THRESHOLD.format(**d) for d in self.datasets()]

    # --- the registry's interface (reprobench.benchmarks) -------------------------------------------------------
    def check(self) -> None:
        """What the schema cannot say: every run evaluates after step 0, long_iterations names swept input sizes,
        every subset fits its input, ranges are ordered."""
        every = self.cfg["eval_every"]
        sweeps = self.cfg["sweeps"]
        for spec in self.user_models().values():
            check_user_class(spec, USER_KEY, required=("forward",), unimplemented=torch_stub)
        budgets = self.cfg["operations"].get("cell_budgets") or {}
        for cell in budgets:
            operation, _, model = cell.partition("/")
            if model not in [run_id(m) for m in self.cfg["operations"]["cells"].get(operation, [])]:
                raise ConfigError(f"arith.operations.cell_budgets.{cell}", "names no cell of arith.operations.cells "
                                  f"{self.cfg['operations']['cells']}")
        for key, iterations in [("arith.operations.iterations", self.cfg["operations"]["iterations"]),
                                ("arith.sweeps.iterations", sweeps["iterations"])] + \
                               [(f"arith.operations.cell_budgets.{c}.iterations", b["iterations"])
                                for c, b in budgets.items()] + \
                               [(f"arith.sweeps.long_iterations[{i}].iterations", e["iterations"])
                                for i, e in enumerate(sweeps.get("long_iterations") or [])]:
            if every > iterations:
                raise ConfigError("arith.eval_every", f"{every} is larger than {key} = {iterations}: the run would "
                                  "be evaluated at step 0 only")
        for i, entry in enumerate(sweeps.get("long_iterations") or []):
            unknown = sorted(set(entry["input_sizes"]) - set(sweeps["input_size"]))
            if unknown:
                raise ConfigError(f"arith.sweeps.long_iterations[{i}].input_sizes",
                                  f"{unknown} not in arith.sweeps.input_size {sweeps['input_size']}")
        for s in self.settings():
            key = "arith.dataset" if s.experiment == "operations" else f"arith.sweeps.{s.experiment}"
            try:
                subset_sizes(s.input_size, s.subset, s.overlap)
            except ValueError as exc:
                raise ConfigError(key, f"{exc} (input_size={s.input_size}, subset={s.subset}, overlap={s.overlap})") \
                    from None
            for name in ("interpolation", "extrapolation"):
                low, high = getattr(s, name)
                if not low < high:
                    raise ConfigError(f"{key}.{name}" if s.experiment != "range" else key,
                                      f"range [{low}, {high}] is empty (low must be below high)")

    def curves(self, experiment: str) -> list[str]:
        """Every curve file of one experiment: each setting's seeds."""
        return [s.curve_path(seed) for s in self.settings(experiment) for seed in self.seeds(experiment, s)]

    def curve_keys(self, experiment: str) -> dict:
        """The part of the section that `curves(experiment)` reads. The aggregate's command passes it as JSON and the
        CLI lists the paths with `Grid(keys).curves(experiment)`: the paths themselves would pass Linux's 128 KiB cap
        on one argument at paper scale (243 KB for input_size)."""
        section, keys = (("operations", ("cells", "seeds", "cell_budgets")) if experiment == "operations"
                         else ("sweeps", ("models", "operation", "seeds", experiment)))
        return {"dataset": self.cfg["dataset"], "operations": {}, "sweeps": {},
                section: {k: self.cfg[section][k] for k in keys if k in self.cfg[section]}}

    def expected_curves(self) -> list[str]:
        return [path for experiment in EXPERIMENTS for path in self.curves(experiment)]

    def targets(self) -> Targets:
        return Targets(tables=[TABLE], figures=[FIGURE], comparisons=[COMPARISON])

    # --- for the rules ----------------------------------------------------------------------------------------------
    def runtime(self, pack: Pack, attempt: int) -> int:
        """Slurm minutes for one pack, more on each retry: slurm_minutes_per_million_steps per million steps of up to
        1,000 runs at input size 100, proportionally more for more batch elements (an estimate: on a GPU a big pack's
        step is bound by the memory traffic of its batches, README "arith speed")."""
        scale = max(1.0, len(pack.members()) * pack.input_size / 100_000)
        return int(15 + attempt * self.cfg["slurm_minutes_per_million_steps"] * (pack.iterations + 1) / 1e6 * scale)

    def get_curves(self, wildcards) -> list[str]:
        return self.curves(wildcards.experiment)

    def get_curve_keys(self, wildcards) -> str:
        """curve_keys of the rule's experiment, as one JSON argument."""
        return json.dumps(self.curve_keys(wildcards.experiment), separators=(",", ":"))  # cells: order kept

    def get_thresholds(self, wildcards) -> list[str]:
        return sorted({s.threshold_path() for s in self.settings(wildcards.experiment)})

    @staticmethod
    def groups(experiments) -> list[str]:
        return [GROUPS.format(experiment=e) for e in experiments]
