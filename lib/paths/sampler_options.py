"""`SamplerOptions`: everything that defines one data distribution of the edge-token sampler
(chapters 2 and 3).

It sits below the sampler's modules so that they need not import each other:
`lib.paths.sampler` validates and fills it in (`make_options`) and samples with it,
`lib.paths.tasks` draws each task's proposals from it and `lib.paths.graph_batch` lays tokens out
by it. Chapters and the other `lib.paths` modules import it from `lib.paths.sampler`, which
re-exports it.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class SamplerOptions:
    """Everything that defines one data distribution (see `lib.paths.sampler.sample_batch` for
    the meanings)."""

    task: str
    n_min: int
    n_max: int
    target_max: int
    small_graph_filter: bool
    length_threshold: int
    max_vertex_id: int
    relabel_vertices: bool
    unreachable_label: int

    @property
    def target_token(self) -> int:
        """The token paired with the target vertex in the last row."""
        return self.max_vertex_id + 1

    @property
    def vocabulary_size(self) -> int:
        """Number of distinct token ids: padding 0, vertices 1..max_vertex_id, TARGET."""
        return self.max_vertex_id + 2


__all__ = ["SamplerOptions"]
