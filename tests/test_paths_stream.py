"""Batches drawn by DataLoader worker processes: deterministic, distinct per worker, valid."""

from __future__ import annotations

import itertools

import networkx as nx
import pytest
import torch

from lib.paths.stream import GraphBatchStream, graph_batch_loader, worker_seed
from lib.book.params import ParameterError


def first_batches(workers: int, count: int, seed: int = 3) -> list[tuple[torch.Tensor, torch.Tensor]]:
    stream = GraphBatchStream(64, "pretrain", 3, 9, seed=seed)
    return list(itertools.islice(iter(graph_batch_loader(stream, workers=workers)), count))


def test_two_workers_give_the_same_stream_twice_and_distinct_batches():
    first, second = first_batches(2, 4), first_batches(2, 4)
    for (tokens_a, labels_a), (tokens_b, labels_b) in zip(first, second):
        assert torch.equal(tokens_a, tokens_b) and torch.equal(labels_a, labels_b)
    # Workers draw from different generators, and each worker's batches follow one another.
    assert not torch.equal(first[0][0], first[1][0])
    assert not torch.equal(first[0][0], first[2][0])


def test_without_workers_the_stream_is_drawn_in_process_and_labels_are_shortest_paths():
    ((tokens, labels),) = first_batches(0, 1)
    assert tokens.shape == (64, 10, 2) and (tokens[:, -1] == torch.tensor([2, 10])).all()
    for row, label in zip(tokens, labels.long().tolist()):
        graph = nx.Graph()
        graph.add_nodes_from([1, 2])
        graph.add_edges_from(pair for pair in row[:-1].tolist() if pair[0])
        expected = nx.shortest_path_length(graph, 1, 2) if nx.has_path(graph, 1, 2) else 9
        assert label == expected


def test_worker_seeds_are_distinct_and_fixed():
    seeds = [worker_seed(5, worker, 4) for worker in range(4)]
    assert len(set(seeds)) == 4 and seeds == [worker_seed(5, worker, 4) for worker in range(4)]
    assert worker_seed(6, 0, 4) != seeds[0]


@pytest.mark.parametrize("kwargs", [{"batch_size": 0}, {"task": "nope"}, {"n_max": 1}, {"seed": -1}])
def test_bad_stream_arguments_fail_in_the_calling_process(kwargs):
    arguments = {"batch_size": 8, "task": "pretrain", **kwargs}
    with pytest.raises(ParameterError):
        GraphBatchStream(**arguments)


def test_bad_worker_count():
    with pytest.raises(ParameterError, match="workers"):
        graph_batch_loader(GraphBatchStream(8, "pretrain"), workers=-1)

