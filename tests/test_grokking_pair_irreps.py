"""Reading a batch of models under both groups of the S4 pair at once (chapter 8): the cells
refine both groups' components, a model confined to one cell reads there under both groups with
pure neurons, and a model whose neurons are coset functions reads as coset neurons."""

import pytest
import torch

from lib.grokking.irrep_readout import project_embeddings
from lib.grokking.mlp import init_instances
from lib.grokking.pair_irreps import pair_irreps, read_cosets, read_seeds, restrict_to_key
from lib.grokking.pairs import make_pair
from lib.grokking.study import S4_MODEL_NO_BIAS

IRREPS = pair_irreps(make_pair("S4_vs_A4xZ2"))


def test_the_pair_readout_has_both_groups_and_eight_cells():
    assert IRREPS.names == ("S4", "A4xZ2")
    assert IRREPS.cells.shape == (8, 24, 24)
    assert IRREPS.cell_names()[4] == "3a & 3a"
    labels, orders = IRREPS.partitions[("S4", "right")]
    assert labels.shape == (28, 24) and sorted(set(orders.tolist())) == [2, 3, 4, 6, 8, 12]


def test_a_model_inside_one_cell_reads_there_under_both_groups():
    params = init_instances(range(3), S4_MODEL_NO_BIAS)
    cell = IRREPS.cell_names().index("3a & 3b")
    confined = project_embeddings(params, IRREPS.cells[cell].float())
    reading = read_seeds(IRREPS, confined)
    s4, a4z2 = (IRREPS.characters[name].component_names for name in IRREPS.names)
    assert torch.allclose(reading.profile["S4"].embedding[:, s4.index("3a")], torch.ones(3, dtype=torch.float64))
    assert torch.allclose(reading.profile["A4xZ2"].embedding[:, a4z2.index("3b")], torch.ones(3, dtype=torch.float64))
    assert torch.allclose(reading.cells[:, cell], torch.ones(3, dtype=torch.float64))
    assert torch.allclose(reading.purity, torch.ones(3, dtype=torch.float64))
    assert torch.allclose(reading.top_cells[:, cell], torch.ones(3, dtype=torch.float64))
    losses = restrict_to_key(IRREPS, params, torch.zeros(3, 5, dtype=torch.bool), "S4")
    assert set(losses) == {"full", "restricted", "excluded"} and set(losses["full"]) == {"S4", "A4xZ2"}


def test_coset_functions_read_as_coset_neurons_and_random_ones_do_not():
    params = init_instances(range(2), S4_MODEL_NO_BIAS)
    generator = torch.Generator().manual_seed(0)
    assert float(read_cosets(IRREPS, params, "S4", 0.1, generator).observed.max()) < 0.05
    # every neuron's pre-activation constant on the right cosets of one S3 (left input) and on the
    # left cosets of it (right input): embeddings that are functions of those cosets
    right_labels, orders = IRREPS.partitions[("S4", "right")]
    left_labels, _ = IRREPS.partitions[("S4", "left")]
    target = int((orders == 6).nonzero()[0])
    values = torch.randn(2, 24, S4_MODEL_NO_BIAS.embed_dim, generator=generator)
    built = dict(params, embed_left=values[:, right_labels[target]], embed_right=values[:, left_labels[target]])
    reading = read_cosets(IRREPS, built, "S4", 0.1, generator)
    assert torch.allclose(reading.observed, torch.ones(2, dtype=torch.float64))
    assert reading.orders == [2, 3, 4, 6, 8, 12]
    assert torch.allclose(reading.by_order[:, reading.orders.index(6)], torch.ones(2, dtype=torch.float64))
    assert bool((reading.matched < reading.observed).all())
