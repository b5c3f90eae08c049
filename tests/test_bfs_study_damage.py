"""The study's perturb-and-recover protocol (lib.bfs.study_damage) and its construction as a model."""

import torch

from lib.bfs.graphs import bfs_distance, bfs_distance_batch, frontier_distance_batch, sample_graphs
from lib.bfs.seed_construction import StudyConstruction, seed_construction_distance
from lib.bfs.study_damage import (
    WEIGHT_LISTS, Damage, apply_damage, checkpoints, draw_damage, held_out_set, matrix_name, protocol_on_draws,
    start_protocol_on_draws, study_protocol,
)
from lib.bfs.transformer import bfs_transformer


def test_the_frontier_search_gives_the_plain_bfs_distances():
    adjacency = sample_graphs("seed", 300, 7, torch.Generator().manual_seed(0))
    assert torch.equal(frontier_distance_batch(adjacency), bfs_distance_batch(adjacency))
    labels = torch.tensor([bfs_distance(g, unreachable=8) for g in adjacency], dtype=torch.float32)
    assert torch.equal(frontier_distance_batch(adjacency, unreachable=8), labels)


def test_the_trainable_study_construction_computes_what_the_instrument_computes(one_thread):
    adjacency = sample_graphs("seed", 500, 8, torch.Generator().manual_seed(1))
    model = StudyConstruction(8)
    with torch.no_grad():
        assert torch.allclose(model(adjacency), seed_construction_distance(adjacency), atol=1e-5)
    # The authors' notebook prints 7,072 parameters at n = 8.
    assert sum(p.numel() for p in model.parameters()) == 7072


def test_draws_cover_the_six_lists_uniformly_and_every_index():
    generator = torch.Generator().manual_seed(2)
    draws = [draw_damage(8, generator) for _ in range(3000)]
    counts = [sum(d.weight_list == name for d in draws) for name in WEIGHT_LISTS]
    assert all(400 < c < 600 for c in counts)
    assert {d.index for d in draws} == set(range(8))
    assert 0.45 < sum(d.hits_answer_head for d in draws) / len(draws) < 0.55   # half hit an answer head


def test_a_reach_draw_replaces_one_shared_head_and_an_answer_draw_one_layer():
    generator = torch.Generator().manual_seed(3)
    study, book = StudyConstruction(5), bfs_transformer(5)
    intact_study, intact_book = StudyConstruction(5), bfs_transformer(5)
    apply_damage(study, Damage("reach key", 2), generator)
    changed = (study.reach_key != intact_study.reach_key).any(dim=(1, 2))
    assert changed.tolist() == [False, False, True, False, False]
    apply_damage(book, Damage("reach key", 2), generator)
    # The book's head 2 (vertex 3) gets one noise matrix in every layer, nothing else changes.
    assert torch.equal(book.key[0, 2], book.key[4, 2]) and not torch.equal(book.key[0, 2], intact_book.key[0, 2])
    others = torch.ones(6, dtype=torch.bool)
    others[2] = False
    assert torch.equal(book.key[:, others], intact_book.key[:, others])
    apply_damage(book, Damage("answer value", 3), generator)
    assert not torch.equal(book.value[3, 5], intact_book.value[3, 5])
    assert torch.equal(book.value[2, 5], intact_book.value[2, 5])


def test_a_matrix_is_named_by_its_vertex_in_a_reach_list_and_by_its_layer_in_an_answer_list():
    assert matrix_name("reach query", 2) == Damage("reach query", 2).matrix == "vertex 3"
    assert matrix_name("answer value", 0) == Damage("answer value", 0).matrix == "layer 1"


def test_checkpoints_hold_the_studys_steps_within_the_run():
    assert checkpoints(600, 250) == [0, 100, 200, 250, 300, 400, 500, 600]


def test_the_protocol_pairs_draws_across_constructions_and_is_deterministic(one_thread):
    def run():
        return study_protocol({"study": StudyConstruction(4), "book": bfs_transformer(4)}, draws=2, steps=3,
                              seed=5, n_held_out=32, batch_size=8, record_every=1)
    first, again = run(), run()
    assert first == again
    for a, b in zip(first["study"], first["book"]):
        assert (a["weight_list"], a["index"], a["matrix"]) == (b["weight_list"], b["index"], b["matrix"])
        assert a["matrix"] == matrix_name(a["weight_list"], a["index"]) and "what" not in a
        assert [step for step, _ in a["curve"]] == [0, 1, 2, 3] and a["loss_before"] == a["curve"][0][1]
    held = held_out_set(StudyConstruction(4), 16, 0)
    assert float(held.distance.max()) <= 5.0   # n + 1 is the study's unreachable label


def test_given_draws_are_retrained_from_their_own_seeds_on_every_construction(one_thread):
    draws = [(Damage("answer key", 1), 11), (Damage("answer query", 0), 12)]
    records = protocol_on_draws({"study": StudyConstruction(4), "book": bfs_transformer(4)}, draws, steps=2,
                                held_out_seed=3, n_held_out=16, batch_size=8, record_every=1)
    for name in ("study", "book"):
        assert [(r["weight_list"], r["index"], r["seed"]) for r in records[name]] == [
            ("answer key", 1, 11), ("answer query", 0, 12)]
    # Draw order does not matter: each draw's run depends only on its own seed.
    alone = protocol_on_draws({"study": StudyConstruction(4)}, draws[1:], steps=2, held_out_seed=3, n_held_out=16,
                              batch_size=8, record_every=1)
    assert alone["study"][0] == records["study"][1]
    # Two worker processes give every draw's record exactly as here on one thread.
    forked = protocol_on_draws({"study": StudyConstruction(4), "book": bfs_transformer(4)}, draws, steps=2,
                               held_out_seed=3, n_held_out=16, batch_size=8, record_every=1, workers=2)
    assert forked == records
    # So does one worker started in the background that this process helps once it reads them.
    started = start_protocol_on_draws({"study": StudyConstruction(4), "book": bfs_transformer(4)}, draws, steps=2,
                                      held_out_seed=3, n_held_out=16, batch_size=8, record_every=1, workers=1,
                                      this_process_helps=True)
    assert started.records() == records
