"""Graph batches drawn by several worker processes at once (chapter 2's sampler benchmark).

`lib.paths.sampler.sample_batch` runs its tensor operations on one CPU thread: they are many and small,
and splitting each across threads costs more than it saves (Python threads do not help either,
measured here: at most 1.5 times faster with two). Separate processes do scale, so for large
amounts of data (the authors wrote 2^20 examples to a file before training; the benchmark draws
millions) the standard tool is a `torch.utils.data.DataLoader` whose workers each run the
sampler on their own core. `GraphBatchStream` is the dataset such a loader iterates over, and
`graph_batch_loader` builds the loader.

Every worker has its own generator, seeded from (seed, worker index, number of workers), and
the loader returns the workers' batches in turn, so the stream of batches is a deterministic
function of the seed and the number of workers. With no workers the batches are drawn in the
calling process from the generator of worker 0 of 1.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from lib.book.params import check_int
from lib.paths.sampler import make_options, sample_with_options


def worker_seed(seed: int, worker: int, workers: int) -> int:
    """Seed of worker `worker` of `workers`: distinct per worker, fixed by (seed, workers)."""
    generator = torch.Generator().manual_seed(seed)
    return int(torch.randint(0, 2**62, (max(workers, 1),), generator=generator, dtype=torch.int64)[worker])


class GraphBatchStream(IterableDataset):
    """An endless stream of `(tokens, labels)` batches from `lib.paths.sampler.sample_batch`.

    Args:
        batch_size: examples per batch.
        task, n_min, n_max, **options: as for `lib.paths.sampler.sample_batch` (validated here, so that a
            bad option fails in the calling process with one clear error).
        seed: seeds the workers' generators (see `worker_seed`).
    """

    def __init__(self, batch_size: int, task: str, n_min: int = 3, n_max: int = 15, *, seed: int = 0,
                 **options):
        super().__init__()
        self.batch_size = check_int("batch_size", batch_size, 1)
        self.options = make_options(task, n_min, n_max, **options)
        self.seed = check_int("seed", seed, 0)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        generator = torch.Generator().manual_seed(worker_seed(self.seed, worker, workers))
        while True:
            yield sample_with_options(self.batch_size, self.options, generator)


def graph_batch_loader(stream: GraphBatchStream, workers: int = 2, prefetch: int = 4) -> DataLoader:
    """A DataLoader over `stream` with `workers` processes, each holding `prefetch` batches ready.

    Each worker runs its tensor operations on one thread (the DataLoader's default for workers),
    so `workers` should not exceed the number of CPU cores. With two batches in flight per
    worker the workers sometimes waited for the next request: two workers delivered 0.96-0.99
    million graphs/s with `prefetch=2` and 1.29-1.31 million with 4 (batches of 2^15, n <= 15).
    """
    check_int("workers", workers, 0)
    check_int("prefetch", prefetch, 1)
    return DataLoader(stream, batch_size=None, num_workers=workers,
                      prefetch_factor=prefetch if workers else None, persistent_workers=workers > 0)


__all__ = ["GraphBatchStream", "graph_batch_loader", "worker_seed"]
