"""The study's damage over every matrix (lib.bfs.damage_distribution): known answers, selection,
shares with their Wilson intervals."""

import math

import pytest
import torch

from lib.bfs.damage_distribution import (
    Share, damage_distribution, every_damage, nearest_draws, quantile_summary, share_at_or_below,
)
from lib.bfs.graphs import sample_seed_graphs
from lib.bfs.seed_construction import StudyConstruction
from lib.bfs.study_damage import WEIGHT_LISTS, Damage, HeldOut, held_out_set, study_protocol_draw
from lib.book.statistics import wilson_interval


class ReadsOnlyTheAnswerKeys(StudyConstruction):
    """A stand-in with a known answer: it outputs the held-out labels plus how far the answer keys'
    sum moved from the intact sum, so a damage elsewhere leaves it exact (MSE 0) and a damage of
    answer key l gives MSE (noise sum - intact sum of that matrix)^2."""

    def __init__(self, n_vertices, labels):
        super().__init__(n_vertices)
        self.labels = labels
        self.intact_sum = float(self.answer_key.detach().sum())

    def forward(self, adjacency):
        return self.labels + (self.answer_key.sum() - self.intact_sum)


def test_every_matrix_is_damaged_equally_often_and_a_damage_that_leaves_the_model_exact_gives_0():
    n = 3
    adjacency = sample_seed_graphs(10, n, torch.Generator().manual_seed(0))
    labels = torch.arange(10, dtype=torch.float32)
    model = ReadsOnlyTheAnswerKeys(n, labels)
    records = damage_distribution(model, HeldOut(adjacency, labels), noise_draws=2, seed=100)
    assert len(records) == 6 * n * 2 and every_damage(n)[0] == Damage("reach key", 0)
    assert [r["seed"] for r in records] == list(range(100, 100 + 36))
    assert {(r["weight_list"], r["index"]) for r in records} == {(w, i) for w in WEIGHT_LISTS for i in range(n)}
    assert records[0]["matrix"] == "vertex 1" and records[-1]["matrix"] == f"layer {n}"   # reach, then answer lists
    for record in records:
        if record["weight_list"] != "answer key":
            assert record["mse"] == 0.0 and record["standard_error"] == 0.0    # untouched output: exact
            continue
        noise = torch.randn(model.answer_key[record["index"]].shape, generator=torch.Generator().manual_seed(record["seed"]))
        expected = (float(noise.sum()) - float(model.answer_key[record["index"]].detach().sum())) ** 2
        assert record["mse"] == pytest.approx(expected, rel=1e-4)
    assert float(model.answer_key.detach().sum()) == model.intact_sum   # the model itself is never changed


def test_a_draw_of_the_distribution_is_retrained_from_the_very_same_damage(one_thread):
    intact = StudyConstruction(4)
    held_out = held_out_set(intact, 64, seed=1)
    records = damage_distribution(intact, held_out, noise_draws=1, seed=7)
    picked = nearest_draws(records, 0.403, 2)
    for record in picked:
        run = study_protocol_draw(intact, Damage(record["weight_list"], record["index"]), 1, held_out, record["seed"],
                                  batch_size=8, record_every=1)
        assert run["loss_before"] == pytest.approx(record["mse"], rel=1e-6) and run["seed"] == record["seed"]


def test_nearest_draws_are_nearest_on_a_log_scale_and_never_zero():
    records = [{"mse": v} for v in (0.1, 0.35, 0.42, 0.5, 0.8, 0.0, 0.3)]
    assert [r["mse"] for r in nearest_draws(records, 0.4, 3)] == [0.42, 0.35, 0.5]
    # On a log scale 0.3 (a factor 1.33 below) is nearer than 0.56 would be, farther than 0.5 (1.25 above).
    assert [r["mse"] for r in nearest_draws(records, 0.4, 5)] == [0.42, 0.35, 0.5, 0.3, 0.8]
    assert all(r["mse"] > 0 for r in nearest_draws(records, 0.4, 10)) and len(nearest_draws(records, 0.4, 10)) == 6
    with pytest.raises(ValueError, match="target must be positive"):
        nearest_draws(records, 0.0, 1)


def test_the_percentile_of_a_value_in_a_synthetic_sample_with_its_wilson_interval():
    share = share_at_or_below(range(100), 9.5)
    assert (share.k, share.n, share.share) == (10, 100, 0.1)
    low, high = share.interval
    assert low == pytest.approx(0.0552, abs=1e-4) and high == pytest.approx(0.1744, abs=1e-4)  # Wilson, 10 of 100
    assert share.as_dict() == {"k": 10, "n": 100, "share": 0.1, "low": low, "high": high}
    assert wilson_interval(0, 20)[0] == 0.0 and wilson_interval(20, 20)[1] == 1.0 and wilson_interval(0, 0) == (0, 1)
    assert Share(0, 0).as_dict()["k"] == 0 and math.isnan(Share(0, 0).share)
    # The interval holds the true share about 95% of the time (400 binomial samples of 60 at p = 0.07).
    generator = torch.Generator().manual_seed(0)
    hits = 0
    for _ in range(400):
        k = int((torch.rand(60, generator=generator) < 0.07).sum())
        low, high = wilson_interval(k, 60)
        hits += low <= 0.07 <= high
    assert 0.9 <= hits / 400 <= 0.99


def test_quantile_summary_interpolates_and_keeps_the_extremes():
    summary = quantile_summary([1.0, 2.0, 3.0, 4.0, 5.0], (0.25, 0.5))
    assert summary == {"min": 1.0, "0.25": 2.0, "0.5": 3.0, "max": 5.0}
    assert math.isclose(quantile_summary([0.0, 10.0], (0.05,))["0.05"], 0.5)
