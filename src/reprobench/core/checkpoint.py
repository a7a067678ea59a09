"""Resumable training: one torch file per run, written atomically, holding the run's identity and its state.

A checkpoint whose identity (setting, seeds, configuration) differs from the run asking for it is ignored, so a
changed configuration never resumes from a stale file."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from reprobench.core.atomic import atomic_path
from reprobench.core.progress import log


def save(path: str | os.PathLike, identity: dict, **state) -> None:
    with atomic_path(path, suffix=".pt") as tmp:
        torch.save({"identity": identity, **state}, tmp)


def load(path: str | os.PathLike | None, identity: dict) -> dict | None:
    """The saved state, or None when there is no checkpoint or it belongs to another run configuration."""
    if not path or not Path(path).exists():
        return None
    blob = torch.load(path, map_location="cpu", weights_only=False)
    if blob.get("identity") != identity:
        log(f"checkpoint {path} belongs to another run configuration; starting over")
        return None
    return blob


def remove(path: str | os.PathLike | None) -> None:
    if path and os.path.exists(path):
        os.unlink(path)


def rng_states(device: torch.device) -> dict:
    """torch's generators (dropout draws from them), to restore a run mid-way exactly."""
    states = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        states["cuda"] = torch.cuda.get_rng_state(device)
    return states


def restore_rng_states(states: dict, device: torch.device) -> None:
    torch.set_rng_state(states["cpu"])
    if "cuda" in states and device.type == "cuda":
        torch.cuda.set_rng_state(states["cuda"], device)
