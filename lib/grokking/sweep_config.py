"""`SweepConfig`: the optimiser, schedule and bookkeeping of a sweep of instances (chapters 4-6).

It sits below the modules that read it so that they need not import each other:
`lib.grokking.training` plans and runs a sweep from it, and `lib.grokking.chunk_step` takes its
Adam hyperparameters and weight decay. Chapters and the other `lib.grokking` modules import it
from `lib.grokking.training`, which re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SweepConfig:
    """Optimiser, schedule and bookkeeping of a sweep.

    Attributes:
        epochs: number of full-batch updates.
        lr, beta1, beta2, eps: Adam hyperparameters (the authors: 0.01, 0.9, 0.98, 1e-8).
        weight_decay: coupled L2 coefficient on non-bias parameters (S4/S5: 2e-5).
        log_every: metrics are recorded at epochs 0, log_every, 2 log_every, ... and at `epochs`.
        checkpoint_epochs: epochs whose parameters are kept for every instance (0 = init).
        chunk_size: instances trained together; 0 picks one (see
            `lib.grokking.training.auto_chunk_size`).
        workers: processes training different chunks at once, each single-threaded, on a CPU
            (threads where fork or room in /dev/shm is missing); 0 uses one per torch thread.
    """

    epochs: int = 2000
    lr: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.98
    eps: float = 1e-8
    weight_decay: float = 2e-5
    log_every: int = 10
    checkpoint_epochs: tuple[int, ...] = ()
    chunk_size: int = 0
    workers: int = 0

    def log_epochs(self) -> list[int]:
        """The epochs at which metrics are recorded."""
        epochs = list(range(0, self.epochs + 1, self.log_every))
        return epochs if epochs[-1] == self.epochs else epochs + [self.epochs]


__all__ = ["SweepConfig"]
