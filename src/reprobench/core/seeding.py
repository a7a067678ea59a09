"""Seeds: every random stream is derived from an explicit integer, never from global state."""

from __future__ import annotations

import random

import numpy as np


def seed_everything(seed: int) -> None:
    """Seed the global generators as a safety net; code should use explicit generators."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        import torch
    except ImportError:  # torch is optional for CPU-only stages
        return
    torch.manual_seed(seed)


def torch_generator(seed: int):
    """A CPU generator for initialisation, so that parameters do not depend on the device or batch."""
    import torch

    return torch.Generator(device="cpu").manual_seed(int(seed))
