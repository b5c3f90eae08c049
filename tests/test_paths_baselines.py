"""Model-free baselines of the five tests and the per-size on-path check (lib.paths.baselines)."""

import torch

from lib.paths.baselines import onpath_by_graph_size, score_baselines, test_baselines, vertex_2_share_of_on_path
from lib.paths.generalization_tests import PUBLISHED_SCALE, TESTS, Scale
from lib.paths.model import PathTransformer, PathTransformerConfig

SMALL = Scale(n_min=3, small_n_max=4, large_n_max=6, max_vertex_id=6, unreachable_label=6)


def tokens_of(edges, target, slots=6):
    """One example: edge pairs padded to `slots`, then (target, TARGET)."""
    rows = list(edges) + [(0, 0)] * (slots - len(edges)) + [(target, 7)]
    return torch.tensor(rows, dtype=torch.int64)


def test_answering_the_1_2_distance_is_exact_when_the_target_is_vertex_2():
    tokens = torch.stack([tokens_of([(1, 3), (2, 3)], 2), tokens_of([(1, 2)], 2)])
    score = score_baselines(tokens, torch.tensor([2.0, 1.0]), 6, "x")
    assert score.mse_distance_1_2 == 0.0 and score.mse_mean_label == 0.25 and score.share_vertex_2 == 1.0


def test_the_1_2_answer_misses_other_targets_by_their_distance():
    # Path 1-3-2: target 3 has label 1, the 1-2 distance is 2; vertex 4 is unreachable (label 6).
    tokens = torch.stack([tokens_of([(1, 3), (2, 3)], 3), tokens_of([(1, 3), (2, 3)], 4)])
    score = score_baselines(tokens, torch.tensor([1.0, 6.0]), 6, "x")
    assert score.mse_distance_1_2 == (1 + 16) / 2 and score.share_unreachable == 0.5
    assert score.share_vertex_2_of_on_path == 0.0


def test_vertex_2_share_counts_only_on_path_targets():
    assert vertex_2_share_of_on_path(torch.tensor([0, 1, 1, 2, 3, 0])) == 0.5
    assert vertex_2_share_of_on_path(torch.tensor([2, 3])) != vertex_2_share_of_on_path(torch.tensor([2, 3]))  # NaN


def test_baselines_run_at_any_scale_and_the_study_label_raises_the_any_target_error():
    small = {s.test: s for s in test_baselines(SMALL, 256, 0)}
    study = {s.test: s for s in test_baselines(PUBLISHED_SCALE, 256, 0)}
    assert list(small) == list(TESTS)
    assert small["onpath_target"].share_unreachable == 0.0
    assert study["any_target_large_graphs"].mse_distance_1_2 > 3 * small["any_target_large_graphs"].mse_distance_1_2


def test_per_size_rows_cover_every_size_and_skip_vertex_2():
    model = PathTransformer(PathTransformerConfig(n_layers=1, max_vertex_id=SMALL.max_vertex_id))
    rows = onpath_by_graph_size(model, TESTS["onpath_target"], SMALL, 64, seed=0)
    assert [r["n_vertices"] for r in rows] == [3, 4, 5, 6]
    assert all(0 <= r["count"] <= 64 for r in rows) and any(r["count"] for r in rows)


def test_per_size_rows_split_the_targets_by_vertex_id():
    model = PathTransformer(PathTransformerConfig(n_layers=1, max_vertex_id=SMALL.max_vertex_id))
    rows = onpath_by_graph_size(model, TESTS["onpath_target"], SMALL, 64, seed=0)
    for row in rows:
        assert row["small_id"]["count"] + row["large_id"]["count"] == row["count"]
        if row["n_vertices"] <= SMALL.small_n_max:   # no id above the cap in a graph this small
            assert row["large_id"]["count"] == 0 and row["small_id"]["mse"] == row["mse"]
        if row["count"] and row["large_id"]["count"] and row["small_id"]["count"]:
            pooled = (row["small_id"]["mse"] * row["small_id"]["count"]
                      + row["large_id"]["mse"] * row["large_id"]["count"]) / row["count"]
            assert abs(pooled - row["mse"]) < 1e-9
    assert sum(r["large_id"]["count"] for r in rows) > 0
