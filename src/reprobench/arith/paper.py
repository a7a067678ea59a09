"""What the paper fixes that needs no data or library: its models' names, its step budgets and the shorter budgets
that still cover a table cell's published solve times (the package's PAPER reads them at import)."""

MODELS = {"nac_add": "NAC+", "nac_mul": "NAC•", "nalu": "NALU", "linear": "Linear"}  # slug -> the paper's name
USER_KEY = "arith.operations.cells / arith.sweeps.models"  # where a user's unit is named (docs/PLUGINS.md, arith)


def display(model: str) -> str:
    """A model's name in tables and legends: the paper's, or a user's class name (run id 'package.module.Class')."""
    from reprobench.core.plugins import display_name

    return display_name(model, MODELS)

# The paper's budget, iterations + 1 optimiser steps: 5M for every table cell and sweep point, 10M and 15M for the
# input-size sweep's sizes 125-200 and 225-300 (stable-nalu's experiment scripts).
PAPER_ITERATIONS = 5_000_000
PAPER_LONG_ITERATIONS = {**dict.fromkeys((125, 150, 175, 200), 10_000_000),
                         **dict.fromkeys((225, 250, 275, 300), 15_000_000)}
# Table cells whose published solve times a shorter run covers: (operation, model) -> (least iterations, why). Only
# the solved-at statistics are then the paper's quantities: the first step a run solves does not depend on the run's
# length once every run solves within it. Success and sparsity do: they are read at the model selected by the lowest
# validation MSE over the whole run, so a shorter run selects another step (add/Linear at 250,001 steps, 100 seeds:
# every seed solved, at 4.0e4-1.76e5 steps, but 8 selected an earlier, unsolved step: 92% success, not the paper's
# 100%). Every other cell run shorter than the paper is not compared.
REDUCED_BUDGETS = {
    ("add", "linear"): (250_000, "all 100 published seeds solve, at 6.3e4 steps on average (95% CI 6.0e4-6.55e4, "
                                 "median 6.1e4): 2.5e5 steps is four times the mean"),
}


def scale_note() -> str:
    """What REPRODUCTION.md says of runs shorter than the paper's."""
    cells = "; ".join(f"{op}/{MODELS[model]} from {least + 1:,} steps ({why})" for (op, model), (least, why)
                      in REDUCED_BUDGETS.items())
    return (f"A table cell run for fewer than the paper's {PAPER_ITERATIONS + 1:,} steps is compared for its solve "
            f"times only, and only where its budget covers the published ones: {cells}. Its success and sparsity, "
            "and every other shortened run, are not compared at this scale (each row says why).")
