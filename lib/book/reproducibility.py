"""Seeding, so that the same seed gives the same numbers on the same machine (all chapters)."""

from __future__ import annotations

import random

import numpy as np
import torch


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python, numpy and torch (CPU and CUDA) and return a CPU generator seeded the same.

    Library functions take an explicit `torch.Generator` where they draw random numbers, so a
    chapter's results do not depend on how many draws earlier cells made; the global seeds
    cover anything that does not.
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def make_generator(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    """A fresh torch.Generator on `device` seeded with `seed`."""
    return torch.Generator(device=device).manual_seed(seed)
