"""Seeds: random streams come from explicit integers. (The WADE task package draws from the global
generators; reprobench.wade.tasks seeds them per run.)"""

from __future__ import annotations


def torch_generator(seed: int):
    """A CPU generator for initialisation, so that parameters do not depend on the device or batch."""
    import torch

    return torch.Generator(device="cpu").manual_seed(int(seed))
