"""The length study of another seed scores the cells of its split (lib.paths.length_summary)."""

import torch

from lib.paths.length_generalization import Cell, LengthSplit, training_config
from lib.paths.length_summary import length_study_of_seed


def test_the_length_study_of_another_seed_scores_the_cells_of_the_split():
    split = LengthSplit(3, 5, 7)
    config = training_config(split, n_layers=1, batch_size=8, lr_schedule=((2, 1e-3),), seed=0, device="cpu")
    depth_cells = [Cell(8, 5, 20, 0.4, 4.9, 0.6, False, True)]
    summary = length_study_of_seed(1, config, split, per_cell=32, test_seed=0, max_proposals=1 << 12,
                                   training_labels=torch.tensor([1, 2, 3, 4]), depth_cells=depth_cells,
                                   depth_config=config)
    assert summary.split == split and summary.cells
    assert {c.n_vertices for c in summary.cells} <= set(range(3, 8))
    assert summary.depth_cells == tuple(depth_cells) and summary.share_longest_training_distance == 0.25
