"""Chapter 7's library: parameters, models of other depths (resumable), probe thresholds and
radii (lib.paths.layer_probes), the verdicts in words, the hand-built model on the learned
model's graphs, and the ablation, patching and shortcut statistics (lib.paths.causal) on a small
trained model."""

import dataclasses

import pytest
import torch

from lib.book.params import ParameterError, validate_parameters
from lib.chapters.ch7 import DEPTH_CHECKPOINT, Chapter7Parameters, GraphSet, depth_model
from lib.chapters.ch7_hand_built import hand_built_distances
from lib.chapters.ch7_results import growth_verdict, patching_sentence, settled_layer, shortcut_sentence
from lib.paths.causal import SHORTCUTS, Patching, ablate_components, patch_distance, shortcut_values
from lib.paths.layer_probes import (
    DISTANCE, FACTS, FROM_SOURCE, MIN_CLASS_COUNT, REACHABLE, ProbeGrid, fact_values, probe_model, usable_ks,
)
from lib.paths.finetuning import fallback_base_config
from lib.paths.sampler import sample_with_options
from lib.paths.token_graphs import UNREACHABLE, TokenGraphs
from lib.paths.training import PathTrainingConfig, save_training_run, start_training, train

DEFAULTS = dict(smoke=False, seed=0, device="cpu", results_dir="results", depths=[2, 6], probe_graphs=2000,
                probe_test_graphs=2000, probe_l2=1e-3, reach_threshold=0.9, intervention_graphs=2000,
                random_subspaces=8, cpu_threads=1)


def tiny_recipe(**changes) -> PathTrainingConfig:
    """Chapter 2's smoke recipe cut to 1 layer (unless `changes` say otherwise) and 30 steps."""
    settings = {"n_layers": 1, "lr_schedule": ((20, 1e-3), (10, 2e-4)), **changes}
    return dataclasses.replace(fallback_base_config(seed=0, smoke=True), **settings)


def test_a_repeated_depth_is_refused_in_one_sentence():
    with pytest.raises(ParameterError, match="must not repeat a depth"):
        validate_parameters(Chapter7Parameters, {**DEFAULTS, "depths": [2, 2]})
    smoke = validate_parameters(Chapter7Parameters, {**DEFAULTS, "smoke": True})
    assert smoke.depths == (1,) and smoke.probe_graphs == 256 and smoke.random_subspaces == 2


def test_a_depth_model_is_kept_and_an_interrupted_one_resumes_to_the_same_weights(tmp_path):
    recipe = tiny_recipe()
    first = depth_model(recipe, 1, tmp_path / "full", progress=False)
    assert first.source == "trained here with chapter 2's code"
    again = depth_model(recipe, 1, tmp_path / "full", progress=False)
    assert again.source == "this chapter's checkpoint"
    assert all(torch.equal(a, b) for a, b in zip(first.model.state_dict().values(),
                                                  again.model.state_dict().values()))
    partial = train(start_training(dataclasses.replace(recipe, n_layers=1)), until_step=12, progress=False)
    (tmp_path / "cut").mkdir()
    save_training_run(partial, tmp_path / "cut" / DEPTH_CHECKPOINT.format(layers=1))
    resumed = depth_model(recipe, 1, tmp_path / "cut", progress=False)
    assert resumed.source == "resumed from this chapter's checkpoint at step 12"
    assert all(torch.equal(a, b) for a, b in zip(first.model.state_dict().values(),
                                                  resumed.model.state_dict().values()))


def test_distance_probes_see_reachable_targets_only_and_need_both_answers():
    recipe = fallback_base_config(seed=0)
    train_set, test_set = GraphSet.draw(recipe, 1500, 1), GraphSet.draw(recipe, 1500, 2)
    ks = usable_ks(train_set, test_set, DISTANCE)
    distances = [fact_values(g.graphs, DISTANCE) for g in (train_set, test_set)]
    assert all(bool((d < UNREACHABLE).all()) for d in distances)   # no unreachable "no" answers
    assert len(distances[0]) == int(train_set.reachable.sum()) < len(train_set.labels)
    largest = max(int(d.max()) for d in distances)
    assert ks and max(ks) < largest and min(ks) >= 1
    for k in ks:
        assert all(MIN_CLASS_COUNT <= int((d <= k).sum()) <= len(d) - MIN_CLASS_COUNT for d in distances)
    reach_ks = usable_ks(train_set, test_set, REACHABLE)
    everything = [fact_values(g.graphs, REACHABLE) for g in (train_set, test_set)]
    assert reach_ks[0] == 1 and all(int((d == k).sum()) >= MIN_CLASS_COUNT for d in everything for k in reach_ks)
    assert all(bool((fact_values(g.graphs, FROM_SOURCE) < UNREACHABLE).all()) for g in (train_set, test_set))


def test_reach_radius_is_the_last_k_of_an_unbroken_run_above_the_threshold():
    accuracy = torch.tensor([[0.5, 0.5, 0.5], [0.95, 0.8, 0.99], [0.95, 0.92, 0.91], [float("nan"), 1.0, 1.0]])
    grid = ProbeGrid("fact", (1, 2, 3), accuracy, None, torch.zeros(4, 3, 2))
    assert grid.reach_radius(0.9) == [0, 1, 3, 0]   # a NaN score (one class only) stops the run


def test_verdicts_in_words_follow_the_radii():
    assert growth_verdict([0, 1, 2, 3], 7) == "never ahead of one hop per layer"
    assert growth_verdict([0, 1, 1], 7) == "never ahead of one hop per layer (behind it after layer 2)"
    assert growth_verdict([0, 1, 2, 7, 7], 7) == ("ahead of one hop per layer after layers 3, 4; its largest "
                                                  "step is from k = 2 to k = 7 in layer 3")
    assert settled_layer([0, 1, 2, 7, 7], 7) == 3 and settled_layer([0, 1, 2], 7) is None


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
    well; the shuffled control stays near chance."""
    model, train_set, test_set = small_model
    ks = {fact: usable_ks(train_set, test_set, fact) for fact in FACTS}
    probes = probe_model(model, train_set, test_set, l2=1e-3, ks=ks, seed=0)
    assert probes.distance_r2[0] < 0.05 < probes.distance_r2[-1]
    for fact in FACTS:
        grid = probes.grids[fact]
        assert grid.accuracy.shape == (3, len(ks[fact])) and grid.shuffled.shape == grid.accuracy.shape
        assert len(grid.shuffled_radius(0.9)) == 3
    assert probes.grids[REACHABLE].directions.shape[1] == 1
    shuffled = probes.grids[DISTANCE].shuffled
    assert shuffled is not None and float(shuffled.nanmean()) < 0.65
    subspace = probes.distance_subspace()
    gram = subspace @ subspace.transpose(1, 2)
    assert torch.allclose(gram, torch.eye(gram.shape[-1], dtype=gram.dtype).expand_as(gram), atol=1e-8)


def test_patching_by_layer_rests_the_verdict_on_the_intermediate_layers():
    patching = Patching(3, torch.tensor([0.6, 0.8, 0.9]), torch.tensor([[0.1, 0.2], [0.1, 0.3], [0.2, 0.2]]),
                        torch.tensor([1.0, 1.0, 1.0]), 100)
    rows = patching.by_layer()
    assert [r["last"] for r in rows] == [False, False, True] and rows[0]["beats_every_random"]
    assert rows[1]["random_max"] == pytest.approx(0.3) and rows[1]["share_of_token"] == pytest.approx(0.8)
    assert "At every intermediate layer it beats every random subspace" in patching_sentence(patching)
    weak = Patching(3, torch.tensor([0.1, 0.2, 0.9]), torch.tensor([[0.1, 0.2], [0.1, 0.3], [0.2, 0.2]]),
                    torch.tensor([1.0, 1.0, 1.0]), 100)
    assert "At no intermediate layer does it beat every random subspace" in patching_sentence(weak)


def test_shortcut_statistics_on_a_known_graph_and_the_sentence_counts_them():
    # Edges 1-3, 3-2, 1-3 (a duplicate), 4-5; target 2: d(1, 2) = 2.
    tokens = torch.tensor([[[1, 3], [2, 3], [1, 3], [4, 5], [0, 0], [0, 0], [2, 9]]])
    values = {name: int(v[0]) for name, v in shortcut_values(TokenGraphs.from_tokens(tokens)).items()}
    assert values == {"edges in the graph": 4, "duplicate edges": 1, "vertices with an edge": 5,
                      "degree of vertex 1": 2, "degree of t": 1, "vertices reachable from 1": 3,
                      "vertices reachable from t": 3, "edges on shortest 1-t paths": 3}
    weak = dict.fromkeys(SHORTCUTS, 0.01)
    assert f"none of the {len(SHORTCUTS)} graph statistics tested" in shortcut_sentence(weak)
