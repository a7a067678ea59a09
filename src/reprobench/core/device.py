"""Device choice: 'auto' takes CUDA when present; CPU runs are deterministic."""

from __future__ import annotations

from reprobench.core.errors import ConfigError


def choose_device(name: str = "auto", threads: int | None = None):
    import torch

    if threads:
        torch.set_num_threads(int(threads))
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError("device", f"'{name}' was asked for but torch sees no CUDA device")
    if name not in ("cpu",) and not name.startswith("cuda"):
        raise ConfigError("device", f"unknown device '{name}' (use auto, cpu, cuda or cuda:N)")
    if name == "cpu":
        torch.use_deterministic_algorithms(True)
    return torch.device(name)


def describe(device) -> str:
    import torch

    if device.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(device)}"
    return "cpu"
