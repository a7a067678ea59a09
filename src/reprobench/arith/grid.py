"""The experiment grid (specs/arith.md, section 5.1): which settings exist, their seeds and their paths.

The Snakefile, `reprobench inspect` and the aggregation all read the grid from here, so that the
runs the DAG plans, the runs a reader expects and the runs a table counts are the same list.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from reprobench.arith.data import subset_sizes
from reprobench.core.errors import ConfigError

ROOT = "results/arith"
SWEEPS = ("input_size", "hidden_size", "overlap", "subset", "range")
EXPERIMENTS = ("operations",) + SWEEPS
SETTING_KEYS = ("operation", "input_size", "hidden_size", "overlap", "subset", "interpolation", "extrapolation")
CURVE_PATTERN = (ROOT + "/curves/experiment={experiment}/model={model}/operation={operation}/input_size={input_size}"
                 "/hidden_size={hidden_size}/overlap={overlap}/subset={subset}/interpolation={interpolation}"
                 "/extrapolation={extrapolation}/seed={seed}.parquet")
THRESHOLD_PATTERN = (ROOT + "/thresholds/operation={operation}/input_size={input_size}/overlap={overlap}"
                     "/subset={subset}/extrapolation={extrapolation}.json")


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
        return CURVE_PATTERN.format(seed=seed, **self.keys())

    def threshold_path(self) -> str:
        return THRESHOLD_PATTERN.format(**self.keys())

    def record(self) -> dict:
        return asdict(self)

    @classmethod
    def from_keys(cls, keys) -> "Setting":
        return cls(experiment=keys["experiment"], model=keys["model"], operation=keys["operation"],
                   input_size=int(keys["input_size"]), hidden_size=int(keys["hidden_size"]),
                   overlap=float(keys["overlap"]), subset=float(keys["subset"]),
                   interpolation=parse_range(keys["interpolation"]),
                   extrapolation=parse_range(keys["extrapolation"]))


def default_setting(arith: dict, experiment: str, model: str, operation: str) -> Setting:
    d = arith["dataset"]
    return Setting(experiment, model, operation, int(d["input_size"]), int(d["hidden_size"]), float(d["overlap"]),
                   float(d["subset"]), tuple(d["interpolation"]), tuple(d["extrapolation"]))


def settings(arith: dict, experiment: str | None = None) -> list[Setting]:
    """Every training setting of the `arith` config section (or of one experiment), in a stable order."""
    out = []
    if experiment in (None, "operations"):
        for operation, models in arith["operations"]["cells"].items():
            out += [default_setting(arith, "operations", model, operation) for model in models]
    sweeps = arith["sweeps"]
    for name in SWEEPS:
        if experiment not in (None, name):
            continue
        for model in sweeps["models"]:
            base = default_setting(arith, name, model, sweeps["operation"])
            if name == "range":
                out += [replace(base, interpolation=tuple(r["interpolation"]), extrapolation=tuple(r["extrapolation"]))
                        for r in sweeps["range"]]
            else:
                cast = int if name in ("input_size", "hidden_size") else float
                out += [replace(base, **{name: cast(v)}) for v in sweeps[name]]
    return out


def seeds(arith: dict, experiment: str) -> list[int]:
    section = arith["operations"] if experiment == "operations" else arith["sweeps"]
    return list(range(int(section["seeds"])))


def iterations(arith: dict, setting: Setting) -> int:
    """Optimiser steps minus one (the reference loops over range(iterations + 1)), per experiment; the
    input-size sweep's large inputs train longer (sweeps.long_iterations)."""
    if setting.experiment == "operations":
        return int(arith["operations"]["iterations"])
    longer = {int(n): int(entry["iterations"]) for entry in arith["sweeps"].get("long_iterations") or []
              for n in entry["input_sizes"]}
    if setting.experiment == "input_size" and setting.input_size in longer:
        return longer[setting.input_size]
    return int(arith["sweeps"]["iterations"])


def expected_curves(arith: dict) -> list[str]:
    return [s.curve_path(seed) for s in settings(arith) for seed in seeds(arith, s.experiment)]


def check(arith: dict) -> None:
    """What the schema cannot say: every subset must fit its input, ranges must be ordered."""
    for s in settings(arith):
        key = "arith.dataset" if s.experiment == "operations" else f"arith.sweeps.{s.experiment}"
        try:
            subset_sizes(s.input_size, s.subset, s.overlap)
        except ValueError as exc:
            raise ConfigError(key, f"{exc} (input_size={s.input_size}, subset={s.subset}, overlap={s.overlap})") from None
        for name in ("interpolation", "extrapolation"):
            low, high = getattr(s, name)
            if not low < high:
                raise ConfigError(f"{key}.{name}" if s.experiment != "range" else key,
                                  f"range [{low}, {high}] is empty (low must be below high)")
