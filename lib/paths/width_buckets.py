"""A training forward pass that skips most padding slots (chapter 2's transition study).

A batch of graphs with up to n vertices is n edge slots wide, but a graph uses on average about
half of them (at up to 15 vertices, 9.0 of the 16 token slots on average, its query slot included). The padding
slots are masked out of attention and the model reads only the last (query) slot, and it has no
positional encodings, so a graph run on a prefix of its slots that holds all its edges, followed
by its query slot, gives the same prediction as on all slots, up to float rounding.
`forward_in_width_buckets` sorts a batch by the edge slots each graph uses
(`lib.paths.prediction.used_edge_slots`), splits it into a few chunks of equal size, runs each
chunk on the slots of its widest graph and puts the predictions back in batch order, with
gradients. Few chunks keep the matrix products large; four cut a one-thread training step of
chapter 2's study encoder to about 0.7 of its time on all slots
(`benchmarks/bench_chapter_1_2_steps.py`).

`lib.paths.training.train` uses it when a run's `width_buckets` is above 0. The rounding differs
from a pass over all slots, so a run trained this way is another run of the same recipe, not the
same bits.
"""

from __future__ import annotations

import torch

from lib.paths.model import PathTransformer
from lib.paths.prediction import used_edge_slots


def forward_in_width_buckets(model: PathTransformer, tokens: torch.Tensor, buckets: int) -> torch.Tensor:
    """`model(tokens)`, shape (B,), computed in `buckets` chunks of graphs of similar width.

    The graphs of (B, S, 2) `tokens` are ordered by the edge slots they use (stable, so equal
    widths keep their batch order), split into `buckets` chunks of equal size (`tensor_split`),
    and each chunk runs on its leading edge slots up to its widest graph's, plus the query slot.
    """
    if buckets < 1:
        raise ValueError(f"buckets must be at least 1; got {buckets}")
    used = used_edge_slots(tokens)
    order = torch.argsort(used, stable=True)
    pieces = []
    for rows in order.tensor_split(min(buckets, len(tokens))):  # no empty chunk
        width = int(used[rows].max())
        pieces.append(model(torch.cat([tokens[rows, :width], tokens[rows, -1:]], dim=1)))
    # pieces hold the predictions in sorted order; the inverse permutation restores batch order.
    return torch.cat(pieces)[torch.argsort(order)]


__all__ = ["forward_in_width_buckets"]
