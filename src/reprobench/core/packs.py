"""Packs: several runs of a benchmark trained one after another in one job (issue 30).

Every job is a new process that imports torch and sets up its optimiser (about 2.5 s of CPU before any work), so at
small scales a run of a few seconds is mostly start-up. A pack is a fixed list of runs that one job trains in turn:
each run keeps its own curve file, and naming one curve file makes Snakemake run its pack. A rule's outputs are a
fixed list, so a workflow makes one rule per pack in a loop (arith's batched packs are the same idea with one model
for all their runs). At paper scale a job holds one run (a GPU allocation's size): the benchmark then keeps its
wildcard rule and makes no packs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Pack:
    """Runs (dicts of a benchmark's run keys) that one job trains in order."""

    prefix: str
    key: tuple
    index: int
    runs: tuple[dict, ...]

    @property
    def rule(self) -> str:
        """The Snakemake rule's name: the prefix, the values the pack's runs share, and its number among them."""
        return re.sub(r"\W", "_", "_".join([self.prefix, *map(str, self.key), str(self.index)]))

    def paths(self, pattern: str) -> list[str]:
        """`pattern` filled in with each run's keys: its curve files, checkpoints."""
        return [pattern.format(**run) for run in self.runs]

    def path(self, pattern: str) -> str:
        """`pattern` with {pack} as the rule's name: the job's own log and timing."""
        return pattern.format(pack=self.rule)


def make_packs(runs: list[dict], by: tuple[str, ...], size: int, prefix: str) -> list[Pack]:
    """The runs grouped by the values of the keys `by` (in order of first appearance), each group cut into packs of
    at most `size` runs in the given order."""
    if size < 1:
        raise ValueError(f"a pack holds at least one run, got size {size}")
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault(tuple(run[k] for k in by), []).append(run)
    return [Pack(prefix, key, i // size, tuple(members[i:i + size]))
            for key, members in groups.items() for i in range(0, len(members), size)]


def to_json(runs: list[dict]) -> str:
    """A pack's runs for the command line (compact JSON; each run's keys as the CLI reads them)."""
    return json.dumps(runs, separators=(",", ":"))
