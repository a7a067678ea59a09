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
        deterministic()
    return torch.device(name)


def deterministic() -> None:
    """torch's deterministic algorithms, for eager code. The public switch (torch.use_deterministic_algorithms) also
    imports the inductor to set its own flag, about 1.4 s of every training process's start, and nothing here is
    compiled; the eager flag it sets is torch._C._set_deterministic_algorithms (the public one where that is gone)."""
    import torch

    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    if setter is None:
        torch.use_deterministic_algorithms(True)
    else:
        setter(True)


def describe(device) -> str:
    import torch

    if device.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(device)}"
    return "cpu"
