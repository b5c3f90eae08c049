"""Chapter 7's library: parameters, models of other depths and seeds (resumable), probe thresholds
and radii (lib.paths.layer_probes: the agreement of the tuned cut-off and the AUC, the statistics
probe as the rival, radii per edge-count bin), the verdicts in words, the hand-built model on the learned
model's graphs, and the ablation, patching and shortcut statistics (lib.paths.causal) on a small
trained model."""

import dataclasses

import pytest
import torch

from lib.book.params import ParameterError, validate_parameters
from lib.chapters.ch7 import (
    Chapter7Parameters, GraphSet, depth_configs, depth_seed_configs, hand_built_distances, recipe_models,
    seed_configs,
)
from lib.chapters.ch7_results import bins_table, layers_label, seeds_table
from lib.paths.reach_radii import growth, seed_spread
from lib.paths.causal import ablate_components, patch_distance
from lib.paths.layer_probes import (
    DISTANCE, FACTS, REACHABLE, REACHABLE_WITH_EDGES, ProbeGrid, ReadCriteria, beats_rival, bin_of, bin_radii,
    both_have_edges, edge_count_bins, fact_values, probe_model, read_radii, statistics_probes, usable_ks,
)
from lib.paths.recipe_models import LOADED, TRAINED, ensure_recipe_run, finished_recipe_run, recipe_path
from lib.paths.probes import LogisticScores
from lib.paths.finetuning import fallback_base_config
from lib.paths.sampler import sample_with_options
from lib.paths.token_graphs import TokenGraphs
from lib.paths.training import PathTrainingConfig, save_training_run, start_training, train

DEFAULTS = dict(smoke=False, seed=0, device="cpu", results_dir="results", depths=[2, 6], probe_per_stratum=500,
                probe_pool=1_000_000, probe_l2=1e-3, reach_threshold=0.9, auc_threshold=0.95, margin_z=2.0,
                resamples=200, depth_seeds=3, probe_seeds=1, capacity_layers=1, capacity_pool=200_000,
                capacity_steps=2000, capacity_seeds=3, intervention_graphs=2000,
                random_subspaces=8, workers=2, cpu_threads=1)


def tiny_recipe(**changes) -> PathTrainingConfig:
    """Chapter 2's smoke recipe cut to 1 layer (unless `changes` say otherwise) and 30 steps."""
    settings = {"n_layers": 1, "lr_schedule": ((20, 1e-3), (10, 2e-4)), **changes}
    return dataclasses.replace(fallback_base_config(seed=0, smoke=True), **settings)


def test_a_repeated_depth_is_refused_in_one_sentence():
    with pytest.raises(ParameterError, match="must not repeat a depth"):
        validate_parameters(Chapter7Parameters, {**DEFAULTS, "depths": [2, 2]})
    smoke = validate_parameters(Chapter7Parameters, {**DEFAULTS, "smoke": True})
    assert smoke.depths == (1,) and smoke.probe_per_stratum == 60 and smoke.random_subspaces == 2
    assert smoke.depth_seeds == 1 and smoke.capacity_seeds == 1 and smoke.resamples == 40
    assert validate_parameters(Chapter7Parameters, {**DEFAULTS, "probe_seeds": 3, "smoke": True}).probe_seeds == 1


def test_a_recipe_model_is_kept_an_interrupted_one_resumes_and_workers_train_the_same_weights(tmp_path):
    recipe = tiny_recipe()
    first = ensure_recipe_run(recipe, tmp_path / "full")
    assert first.source == TRAINED and recipe_path(tmp_path / "full", recipe).exists()
    again = ensure_recipe_run(recipe, tmp_path / "full")
    assert again.source == LOADED and weights_equal(first.run.model, again.run.model)
    partial = train(start_training(recipe), until_step=12, progress=False)
    save_training_run(partial, recipe_path(tmp_path / "cut", recipe))
    resumed = ensure_recipe_run(recipe, tmp_path / "cut")
    assert resumed.source == "resumed from a saved run at step 12"
    assert weights_equal(first.run.model, resumed.run.model)
    # Another recipe with another seed has its own file; the depths and seeds chapter 7 asks for.
    assert recipe_path(tmp_path, recipe) != recipe_path(tmp_path, dataclasses.replace(recipe, seed=5))
    depths, seeds = depth_configs(tiny_recipe(n_layers=4), (2, 4)), seed_configs(recipe, 2)
    assert list(depths) == ["2 layers"] and depths["2 layers"].n_layers == 2
    assert {name: c.seed for name, c in seeds.items()} == {"seed 1": 1, "seed 2": 2}
    by_seed = depth_seed_configs(tiny_recipe(n_layers=4), (2, 4, 6), 2)
    assert sorted(by_seed) == [(2, 0), (2, 1), (6, 0), (6, 1)]
    assert by_seed[(2, 0)] == depths["2 layers"] and by_seed[(6, 1)].seed == 1
    # Trained by two workers, on one thread each: the weights of a run trained here on one thread.
    models = recipe_models({"seed 1": seeds["seed 1"], "again": recipe}, tmp_path / "workers", workers=2)
    assert models["again"].source == TRAINED and models["again"].config == recipe
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        alone = ensure_recipe_run(seeds["seed 1"], tmp_path / "alone")
    finally:
        torch.set_num_threads(threads)
    assert weights_equal(models["seed 1"].model, alone.run.model)
    assert not weights_equal(models["seed 1"].model, models["again"].model)
    # Called again, every model is finished on disk: loaded here, none trained.
    kept = recipe_models({"seed 1": seeds["seed 1"], "again": recipe}, tmp_path / "workers", workers=2)
    assert {m.source for m in kept.values()} == {LOADED}
    assert all(weights_equal(kept[name].model, models[name].model) for name in kept)
    # Only a finished run counts as found; an interrupted one is left to ensure_recipe_run.
    assert finished_recipe_run(recipe, tmp_path / "full").source == LOADED
    assert finished_recipe_run(recipe, tmp_path / "cut") is not None   # resumed to the end above
    save_training_run(partial, recipe_path(tmp_path / "cut2", recipe))
    assert finished_recipe_run(recipe, tmp_path / "cut2") is None and finished_recipe_run(recipe, tmp_path / "no") is None


def weights_equal(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def scores(auc, tuned, untuned=None) -> LogisticScores:
    auc, tuned = torch.tensor(auc, dtype=torch.float64), torch.tensor(tuned, dtype=torch.float64)
    return LogisticScores(auc, tuned, tuned if untuned is None else torch.tensor(untuned, dtype=torch.float64))


def test_a_radius_is_stated_only_where_the_tuned_cut_off_and_the_auc_agree_and_the_rival_is_beaten():
    ks = (1, 2, 3, 4)
    layers = scores(auc=[[0.5, 0.5, 0.5, 0.5], [1.0, 0.96, 0.9, 0.9], [1.0, 0.99, 0.97, 0.99],
                         [1.0, 1.0, 0.999, 0.995]],
                    tuned=[[0.5, 0.5, 0.5, 0.5], [0.98, 0.92, 0.8, 0.8], [1.0, 0.95, 0.92, 0.95],
                           [1.0, 1.0, 0.98, 0.85]],
                    untuned=[[0.5, 0.5, 0.5, 0.5], [0.98, 0.7, 0.5, 0.5], [1.0, 0.9, 0.6, 0.5], [1.0, 1.0, 0.9, 0.6]])
    rival = scores(auc=[[1.0, 0.9, 0.96, 0.9]], tuned=[[1.0, 0.85, 0.9, 0.85]])
    radii = read_radii(layers, ks, ReadCriteria(0.9, 0.95), rival)
    assert radii["tuned"] == [0, 2, 4, 3] and radii["auc"] == [0, 2, 4, 4] and radii["untuned"] == [0, 1, 2, 3]
    # Rival: at k = 1 it reads the fact by itself (AUC 1), so matching it is enough; elsewhere +0.02.
    assert radii["beyond_statistics"] == [0, 2, 2, 4]                 # index 2: 0.97 < 0.96 + 0.02 at k = 3
    assert radii["disputed"] == [False, False, False, True] and radii["stated"] == [0, 2, 2, None]
    stronger = scores(auc=[[1.0, 0.98, 0.9, 0.9]], tuned=[[1, 1, 1, 1.0]])
    capped = read_radii(layers, ks, ReadCriteria(0.9, 0.95), stronger)
    assert capped["beyond_statistics"] == [0, 1, 1, 4] and capped["stated"] == [0, 1, 1, None]
    assert read_radii(layers, ks, ReadCriteria(0.9, 0.95))["stated"] == [0, 2, 4, None]   # no rival: not capped
    assert beats_rival(torch.tensor([[0.97, float("nan")]]), torch.tensor([[0.95, 0.5]]), 0.02).tolist() == \
        [[True, False]]


def test_radii_per_edge_count_bin_use_the_ks_scored_in_each_bin():
    recipe = fallback_base_config(seed=0)
    graphs = GraphSet.draw(recipe, 600, 3).graphs
    boundaries = edge_count_bins(graphs)
    assert len(boundaries) == 2
    bins = bin_of(graphs, boundaries)
    edges = graphs.edge_count.double()
    assert bool((edges[bins == 0] <= boundaries[0]).all()) and bool((edges[bins == 2] > boundaries[1]).all())
    nan = float("nan")
    grid = ProbeGrid("fact", (1, 2, 3), scores([[1.0, 0.97, 0.7]], [[1.0, 0.95, 0.6]]), None, torch.zeros(1, 3, 2),
                     by_bin=(scores([[1.0, 0.97, nan]], [[1.0, 0.95, nan]]),
                             scores([[nan, 0.9, 0.99]], [[nan, 0.8, 1.0]]),
                             scores([[nan, nan, nan]], [[nan, nan, nan]])))
    rival = ProbeGrid("fact", (1, 2, 3), scores([[0.6, 0.6, 0.6]], [[0.6] * 3]), None, torch.zeros(1, 3, 2),
                      by_bin=(scores([[0.6] * 3], [[0.6] * 3]),) * 3)
    small, middle, large = bin_radii(grid, rival, ReadCriteria(0.9, 0.95))
    assert small["ks"] == [1, 2] and small["stated"] == [2]
    assert middle["ks"] == [2, 3] and middle["stated"] == [1] and middle["auc"] == [1]   # below its first k
    assert large["ks"] == [] and large["stated"] == [None]
    header, rows = bins_table({"fact": {"bins": [small, middle, large]}}, boundaries, ("fact",))
    assert [row[2:] for row in rows] == [["[2]", "[1, 2]"], ["[1]", "[2, 3]"], ["-", "-"]]


def test_the_hand_built_model_answers_the_learned_models_question_for_any_target():
    """Targets anywhere (chapter 3's "any" task): vertex t is relabelled 2 for the construction."""
    recipe = fallback_base_config(seed=0)
    options = dataclasses.replace(recipe, task="any").sampler
    tokens, labels = sample_with_options(400, options, torch.Generator().manual_seed(4))
    graphs = TokenGraphs.from_tokens(tokens)
    assert (graphs.target != 2).sum() > 100
    hand_built = hand_built_distances(graphs, recipe.n_max)
    assert torch.equal(hand_built.prediction.round(), labels)
    for layer in range(recipe.n_max):
        assert torch.equal(hand_built.knows[layer] > 0.5, graphs.distance <= layer + 1)


@pytest.fixture(scope="module")
def small_model():
    run = train(start_training(tiny_recipe(n_layers=2)), progress=False)
    run.model.eval()
    recipe = run.config
    return run.model, GraphSet.draw(recipe, 300, 7), GraphSet.draw(recipe, 300, 8)


def test_ablating_nothing_is_the_intact_model(small_model):
    model, graphs, reference = small_model
    ablation = ablate_components(model, graphs, reference)
    with torch.no_grad():
        clean = ((model(graphs.tokens).double() - graphs.labels.double()) ** 2).mean()
    assert ablation.components[0] == "none" and torch.isclose(ablation.overall[0], clean, rtol=1e-5)
    assert len(ablation.components) == 1 + 2 * (2 + 2) and ablation.increase()[0] == 0


def test_patching_the_whole_space_is_patching_the_token(small_model):
    """A subspace spanning every direction moves the whole vector: the same slope as the token."""
    model, graphs, _ = small_model
    everything = torch.eye(64, dtype=torch.float64).expand(3, -1, -1)
    patching = patch_distance(model, graphs, everything, random_subspaces=1, seed=0)
    assert torch.allclose(patching.probe, patching.token, atol=1e-4)
    assert torch.allclose(patching.random[:, 0], patching.token, atol=1e-4)
    assert patching.pairs > 0 and len(patching.probe) == 2


def test_probes_read_the_answer_off_the_last_layer_of_a_trained_model(small_model):
    """The readout is linear in the last stream, so its ridge probe fits the model's own answer
    well; the shuffled control stays near chance; every grid has its scores per edge-count bin,
    and the statistics probe has one row per fact."""
    model, train_set, test_set = small_model
    ks = {fact: usable_ks(train_set, test_set, fact) for fact in FACTS}
    bins = edge_count_bins(test_set.graphs)
    probes = probe_model(model, train_set, test_set, l2=1e-3, ks=ks, bins=bins, seed=0)
    rival = statistics_probes(train_set, test_set, l2=1e-3, ks=ks, bins=bins)
    assert probes.distance_r2[0] < 0.05 < probes.distance_r2[-1]
    for fact in FACTS:
        grid = probes.grids[fact]
        for values in (grid.scores.auc, grid.scores.tuned, grid.scores.untuned, grid.shuffled.auc):
            assert values.shape == (3, len(ks[fact]))
        assert len(grid.by_bin) == len(rival[fact].by_bin) == len(bins) + 1
        assert rival[fact].scores.auc.shape == (1, len(ks[fact]))
        assert len(read_radii(grid.scores, grid.ks, ReadCriteria(0.9, 0.95), rival[fact].scores)["stated"]) == 3
    assert probes.grids[REACHABLE].directions.shape[1] == 1
    shuffled = probes.grids[DISTANCE].shuffled
    assert shuffled is not None and float(shuffled.auc.nanmean()) < 0.65
    subspace = probes.distance_subspace()
    gram = subspace @ subspace.transpose(1, 2)
    assert torch.allclose(gram, torch.eye(gram.shape[-1], dtype=gram.dtype).expand_as(gram), atol=1e-8)
    with_edges = fact_values(test_set.graphs, REACHABLE_WITH_EDGES)
    assert len(with_edges) == int(both_have_edges(test_set.graphs).sum()) < len(test_set.labels)


def test_growth_against_one_hop_is_numbers():
    assert growth([0, 1, 2, 3], 7) == {"faster": [], "slower": [], "unstated": [], "step":
                                       {"layer": 1, "from": 0, "to": 1}}
    assert growth([0, 1, 1], 7)["slower"] == [2]
    assert growth([0, 1, 2, 7, 7], 7) == {"faster": [3, 4], "slower": [], "unstated": [],
                                          "step": {"layer": 3, "from": 2, "to": 7}}
    assert growth([0, 1, None, 5, 5], 7)["unstated"] == [2] and growth([0, 1, None, 5, 5], 7)["faster"] == [3, 4]
    assert growth([0, None], 7)["step"] is None
    assert layers_label([]) == "no layer" and layers_label([2]) == "layer 2" and layers_label([3, 4]) == "layers 3, 4"
    spread = seed_spread({0: {fact: {"stated": [0, 1, None]} for fact in FACTS},
                          1: {fact: {"stated": [0, 2, None]} for fact in FACTS}})
    assert seeds_table(spread, (DISTANCE,))[1] == [[DISTANCE, "0, 1-2, -", "[0, 0, 2]"]]


def test_the_probe_figure_is_one_column_of_panels_with_short_labels():
    """The first figure reads on a phone: one panel per fact above each other, titles wrapped to
    short lines, one legend entry per k (not 25 heatmaps)."""
    from lib.chapters.ch7_figures import probe_auc_figure
    from lib.paths.powered_probes import PoweredGrid

    def grid(fact, ks):
        shape = (5, len(ks))
        return PoweredGrid(fact, ks, torch.rand(shape, dtype=torch.float64), torch.rand(shape, dtype=torch.float64),
                           torch.rand(len(ks), dtype=torch.float64), torch.zeros(shape, dtype=torch.float64),
                           torch.ones(shape, dtype=torch.float64), torch.full((len(ks),), 500))

    grids = {fact: grid(fact, (1, 2, 3)) for fact in FACTS}
    fig = probe_auc_figure(grids, grids)
    titles = [a.text for a in fig.layout.annotations]
    assert len(titles) == len(FACTS) and all(len(line) <= 45 for t in titles for line in t.split("<br>"))
    assert all(trace.type == "scatter" for trace in fig.data)
    legend = [trace.name for trace in fig.data if trace.showlegend is not False]
    assert legend == ["k = 1", "k = 2", "k = 3", "statistics probe at each k (dotted)", "random init, best index (x)"]
    # Seven thresholds: five drawn, spread evenly, each its own colour, named in the title.
    seven = probe_auc_figure({fact: grid(fact, tuple(range(7))) for fact in FACTS}, {})
    drawn = [trace.name for trace in seven.data if trace.showlegend is True]
    assert drawn == ["k = 0", "k = 1", "k = 2", "k = 4", "k = 6"] and "k = 0, 1, 2, 4, 6 of 0 to 6" in seven.layout.title.text
    assert len({trace.line.color for trace in seven.data if trace.showlegend is True}) == 5
    assert all(getattr(fig.layout, f"xaxis{i if i > 1 else ''}").domain == (0.0, 1.0) for i in range(1, 6))
