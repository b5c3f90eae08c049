"""Probes with a validation split and the rival's margin in standard errors
(lib.paths.powered_probes, chapter 7)."""

import dataclasses

import torch

from lib.paths.finetuning import fallback_base_config
from lib.paths.layer_probes import DISTANCE, FACTS, REACHABLE
from lib.paths.powered_probes import (
    PoweredGrid, Rule, class_graphs, first_failure, grid_json, passes, powered_ks, powered_radii, prepare_sets,
    probe_powered, scored_columns,
)
from lib.paths.stratified_graphs import draw_stratified
from lib.paths.training import start_training, train

nan, inf = float("nan"), float("inf")


def grid(auc, balanced, rival, difference, error, ks=(1, 2, 3, 4)) -> PoweredGrid:
    t = lambda v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    return PoweredGrid("fact", ks, t(auc), t(balanced), t(rival), t(difference), t(error), torch.tensor([500] * len(ks)))


def test_one_rule_reads_the_radius_and_the_rival_counts_in_standard_errors():
    rule = Rule(0.9, 0.95, 2.0)
    g = grid(auc=[[0.5, 0.5, 0.5, 0.5], [1.0, 0.97, 0.96, 0.9], [1.0, 0.99, 0.98, 0.97]],
             balanced=[[0.5] * 4, [0.99, 0.93, 0.91, 0.8], [1.0, 0.96, 0.95, 0.92]],
             rival=[1.0, 0.95, 0.93, 0.9],
             difference=[[nan] * 4, [nan, 0.02, 0.03, nan], [nan, 0.04, 0.05, 0.07]],
             error=[[nan] * 4, [nan, 0.005, 0.02, nan], [nan, 0.01, 0.01, 0.01]])
    # k = 1: the rival reads it perfectly (AUC 1), so the AUC and balanced accuracy suffice.
    # Index 1: k = 2 beats the rival by 4 SE, k = 3 by 1.5 SE only: radius 2.
    assert powered_radii(g, rule) == [0, 2, 4]
    assert passes(g, rule)[1].tolist() == [True, True, False, False]
    failure = first_failure(g, rule)
    assert failure[0]["k"] == 1 and set(failure[0]["fails"]) == {"auc", "balanced"}
    assert failure[1] == {"k": 3, "fails": ["rival"], "z": 1.5} and failure[2] is None
    # A stricter margin cuts both radii where the margin is 4 SE.
    assert powered_radii(g, Rule(0.9, 0.95, 4.5)) == [0, 1, 1]
    # An error of 0 with a positive difference passes any margin; NaN never passes.
    assert torch.allclose(g.z[2, 1:], torch.tensor([4.0, 5.0, 7.0], dtype=torch.float64))
    exact = grid([[0.99]], [[0.99]], [0.9], [[0.09]], [[0.0]], ks=(1,))
    assert exact.z.item() == inf and powered_radii(exact, rule) == [1]
    as_json = grid_json(g, rule)
    assert as_json["radii"] == [0, 2, 4] and as_json["z"][0][0] is None


def test_in_a_bin_the_radius_counts_from_the_first_k_scored():
    rule = Rule(0.9, 0.95, 2.0)
    g = grid(auc=[[nan, 0.99, 0.99, nan]], balanced=[[nan, 0.99, 0.93, nan]], rival=[nan, 0.9, 0.9, nan],
             difference=[[nan, 0.09, 0.09, nan]], error=[[nan, 0.01, 0.01, nan]])
    assert scored_columns(g) == [1, 2]
    assert powered_radii(g, rule, scored_only=True) == [3] and powered_radii(g, rule) == [0]


def test_every_k_probed_has_enough_graphs_of_both_answers_and_a_trained_model_is_scored():
    recipe = dataclasses.replace(fallback_base_config(seed=0, smoke=True), n_layers=1,
                                 lr_schedule=((30, 1e-3),))
    sets = tuple(draw_stratified(recipe, 80, seed, pool=200_000).graphs for seed in (1, 2, 3))
    for fact in FACTS:
        ks = powered_ks(sets, fact, 80)
        assert ks, fact
        assert all(min(class_graphs(s, fact, k)) >= 80 for s in sets for k in ks)
    assert powered_ks(sets, DISTANCE, 80)[0] == 1 and powered_ks(sets, REACHABLE, 80)[0] == 1
    prepared = prepare_sets(*sets, l2=1e-3, min_graphs=80, max_train=500)
    model = train(start_training(recipe), progress=False).model.eval()
    rule = Rule(0.9, 0.95, 2.0)
    grids, binned = probe_powered(model, prepared, l2=1e-3, rule=rule, resamples=20, seed=0, bins=(4.0, 6.0),
                                  min_bin_graphs=20)
    assert set(grids) == set(FACTS) and all(len(b) == 3 for b in binned.values())
    for fact, g in grids.items():
        assert g.auc.shape == (2, len(prepared.ks[fact])) and g.rival_auc.shape == (len(prepared.ks[fact]),)
        assert all(int(n) >= 80 for n in g.rarer_graphs)
        assert len(powered_radii(g, rule)) == 2
        # The embedding of the target token is the same in every graph: nothing to read there.
        if fact == DISTANCE:
            assert torch.allclose(g.auc[0], torch.full_like(g.auc[0], 0.5))
