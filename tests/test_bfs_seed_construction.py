"""The study's own construction, re-implemented to measure it (lib.bfs.seed_construction)."""

import torch

from lib.bfs.graphs import bfs_distance, sample_graphs
from lib.bfs.seed_construction import seed_construction_distance


def labels(adjacency: torch.Tensor) -> torch.Tensor:
    n = adjacency.shape[-1]
    return torch.tensor([bfs_distance(g, unreachable=n + 1) for g in adjacency], dtype=torch.float32)


def test_it_computes_bfs_up_to_the_errors_the_reference_measured(one_thread):
    adjacency = sample_graphs("seed", 2000, 8, torch.Generator().manual_seed(0))
    error = seed_construction_distance(adjacency) - labels(adjacency)
    # REFERENCE.md: MSE 7.9e-5 and max abs error 0.019 on 2,000 graphs at n = 8.
    assert 4e-5 < float((error ** 2).mean()) < 1.5e-4
    assert 0.01 < float(error.abs().max()) < 0.03


def test_large_constants_make_it_exact_and_small_ones_break_it(one_thread):
    adjacency = sample_graphs("seed", 300, 6, torch.Generator().manual_seed(1))
    exact = seed_construction_distance(adjacency, big=40, super=100, medium=20, squash_slope=40)
    assert torch.allclose(exact, labels(adjacency), atol=1e-3)
    rough = seed_construction_distance(adjacency, squash_slope=1.0)
    assert float((rough - labels(adjacency)).abs().max()) > 0.5


def test_a_path_graph_gives_each_distance():
    # Path 1 - 3 - 4 - 2 (distance 3) and a graph where 2 is isolated (unreachable: n + 1 = 5).
    path = torch.zeros(4, 4)
    for u, v in [(0, 2), (2, 3), (3, 1)]:
        path[u, v] = path[v, u] = 1
    isolated = torch.zeros(4, 4)
    isolated[0, 2] = isolated[2, 0] = 1
    out = seed_construction_distance(torch.stack([path, isolated]))
    assert torch.allclose(out, torch.tensor([3.0, 5.0]), atol=0.05)
