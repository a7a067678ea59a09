"""Resumable training: one torch file per run, written atomically, holding the run's identity and its state.

A checkpoint whose identity (setting, seeds, configuration) differs from the run asking for it is ignored, so a
changed configuration never resumes from a stale file.

Loading never runs code: files are read with `torch.load(weights_only=True)`, which accepts only tensors and plain
containers. The state is stored in that form: a numpy array becomes {ARRAY: (dtype, shape, bytes as a uint8
tensor)} and is restored exactly on load. A file that cannot be read that way (cut short by a full disk, corrupt,
or holding anything else, such as a crafted pickle) is moved aside to `<name>.unreadable` with a warning naming it,
and the run starts over.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from reprobench.core.atomic import atomic_path
from reprobench.core.progress import log

ARRAY = "__numpy_array__"


def _encode(value):
    """The state with every numpy array or scalar replaced by tensors and plain values (weights_only-loadable)."""
    if isinstance(value, np.ndarray):
        flat = np.ascontiguousarray(value)
        return {ARRAY: (flat.dtype.str, list(flat.shape), torch.from_numpy(flat.reshape(-1).view(np.uint8).copy()))}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_encode(v) for v in value)
    return value


def _decode(value):
    if isinstance(value, dict):
        if set(value) == {ARRAY}:
            dtype, shape, data = value[ARRAY]
            return data.numpy().view(np.dtype(dtype)).reshape(shape).copy()
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_decode(v) for v in value)
    return value


def save(path: str | os.PathLike, identity: dict, **state) -> None:
    with atomic_path(path, suffix=".pt") as tmp:
        torch.save(_encode({"identity": identity, **state}), tmp)


def load(path: str | os.PathLike | None, identity: dict) -> dict | None:
    """The saved state, or None when there is no checkpoint, it cannot be read (it is then moved aside), or it
    belongs to another run configuration."""
    if not path or not Path(path).exists():
        return None
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(blob, dict) or "identity" not in blob:
            raise ValueError("not a reprobench checkpoint")
        blob = _decode(blob)
    except Exception as exc:  # any unreadable file: truncated zip, bad pickle, refused global
        aside = Path(f"{path}.unreadable")
        os.replace(path, aside)
        reason = (str(exc).strip().splitlines() or [""])[0][:200]
        log(f"WARNING: checkpoint {path} cannot be read ({type(exc).__name__}: {reason}); moved it to {aside} and "
            "starting over")
        return None
    if blob["identity"] != identity:
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
