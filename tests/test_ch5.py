"""Chapter 5's parameters, runs, summaries and figures on tiny sweeps (fast)."""

import dataclasses
from pathlib import Path

import pytest
import torch

from lib.book.params import ParameterError, read_parameters_cell, validate_parameters
from lib.chapters.ch5 import (
    Chapter5Parameters, measure_s5_run, s5_llc_over_training, s5_measures_sweep, sparse_epochs,
)
from lib.chapters.ch5_results import (
    auc_table, chain_length_results, chain_length_table, course_table, efficiency_table, end_of_training_rows,
    measures_results, s5_comparison, s5_course_table, summary_table, tracking_table, trajectory_results,
    trajectory_rows,
)
from lib.grokking.chain_length import ChainLengthRow, chain_length_summary
from lib.grokking.efficiency_by_outcome import (
    efficiency_auc, efficiency_seeds, efficiency_summaries, grid_step, study_efficiency,
)
from lib.grokking.end_of_training import EndOfTraining, first_seed_per_outcome, measure_end_of_training
from lib.grokking.measure_ranking import TrackingRow, claim_comparison, tracking_rows
from lib.grokking.sweep_correlations import sweep_correlations
from lib.grokking.study import S4_PAIR
from lib.grokking.study_sweep import S4_BIAS_SWEEP_FILE, S4_SWEEP_FILE, choose_seeds, load_s4_sweep, outcome_groups
from lib.grokking.llc_trajectory import Trajectory, llc_over_training, representative_seeds
from lib.chapters.ch5_figures import (
    llc_spread_figure, llc_trajectory_figure, measure_scatter_figure, measures_over_time_figure,
    rescaling_figure,
)
from lib.book.statistics import Estimate
from lib.grokking.outcome_statistics import (
    MeasureAuc, measure_correlations, outcome_aucs, outcome_comparison, outcome_summaries, strongest_separator,
)
from lib.book.record import direction, share, verdict
from lib.grokking.measures_over_time import MeasuresOverTime
from lib.grokking.llc import LLCEstimate, SGLDConfig
from lib.grokking.mlp import MLPConfig
from lib.grokking.pairs import make_pair
from lib.grokking.sweeps import run_pair_sweep, save_sweep
from lib.grokking.training import SweepConfig

DEFAULTS = {**read_parameters_cell(Path(__file__).parents[1] / "notebooks" / "05_complexity.py"),
            "device": "cpu", "results_dir": "/tmp/results"}


def tiny_config(tmp_path, **changes) -> Chapter5Parameters:
    values = {**DEFAULTS, "smoke": True, "results_dir": str(tmp_path), "fallback_instances": 6,
              "fallback_epochs": 10, "trajectory_every": 5, "measures_epochs": 12, "measures_every": 3,
              "measures_sparse_every": 6, "measures_dim": 8}
    return validate_parameters(Chapter5Parameters, {**values, **changes})


def tiny_sweep(seeds=6, epochs=10):
    schedule = SweepConfig(epochs=epochs, log_every=5, checkpoint_epochs=(0, epochs))
    return run_pair_sweep(make_pair(S4_PAIR), list(range(seeds)), MLPConfig(24, 8, 8), schedule,
                          progress=False)


def with_outcomes(result, acc_g1, acc_g2):
    """The sweep with its final accuracies replaced, to give each seed a chosen outcome."""
    metrics = dict(result.metrics)
    for key, final in (("acc_g1", acc_g1), ("acc_g2", acc_g2), ("train_acc", [1.0] * len(acc_g1))):
        metrics[key] = metrics[key].clone()
        metrics[key][-1] = torch.tensor(final)
    return dataclasses.replace(result, metrics=metrics)


def test_defaults_validate_and_smoke_shrinks_the_work():
    config = validate_parameters(Chapter5Parameters, DEFAULTS)
    assert config.sgld.step_size == 8e-4 and config.sgld.n_beta == 1000.0 and config.sgld.burn_in == 0.6
    smoke = validate_parameters(Chapter5Parameters, {**DEFAULTS, "smoke": True})
    assert smoke.llc_steps <= 20 and smoke.llc_chains == 2 and smoke.fallback_instances <= 16
    with pytest.raises(ParameterError, match="`llc_chains`"):
        validate_parameters(Chapter5Parameters, {**DEFAULTS, "llc_chains": 1})
    with pytest.raises(ParameterError, match="`measures_train_fraction`"):
        validate_parameters(Chapter5Parameters, {**DEFAULTS, "measures_train_fraction": 0.0})
    with pytest.raises(ParameterError, match="`measures_sparse_every` must be a multiple"):
        validate_parameters(Chapter5Parameters, {**DEFAULTS, "measures_sparse_every": 200})
    # the study's model and task by default; the measures' sparse grid inside the dense one
    assert (config.measures_dim, config.measures_train_fraction, config.measures_epochs) == (128, 0.4, 2000)
    assert config.measures_every == 3 and config.measures_sparse_every % config.measures_every == 0
    assert smoke.measures_epochs <= 30 and smoke.measures_llc_steps <= 20


def test_outcome_groups_and_the_measured_seeds():
    result = with_outcomes(tiny_sweep(), [1.0, 0.5, 0.5, 0.5, 1.0, 0.5], [0.5, 1.0, 0.5, 0.5, 0.5, 0.5])
    groups = outcome_groups(result, 0.999)
    assert groups.tolist() == [0, 1, 2, 2, 0, 2]
    chosen = choose_seeds(groups, 2, torch.Generator().manual_seed(0))
    assert {0, 1, 4} <= set(chosen.tolist()) and len(chosen) == 5 and chosen.tolist() == sorted(chosen.tolist())
    assert torch.equal(chosen, choose_seeds(groups, 2, torch.Generator().manual_seed(0)))
    assert set(representative_seeds(result, groups)) == {"grokked S4", "grokked A4xZ2", "neither"}


def test_the_sweep_is_loaded_when_saved_and_trained_when_missing(tmp_path):
    config = tiny_config(tmp_path)
    trained = load_s4_sweep(config, progress=False)
    assert trained.source == "trained" and trained.result.n_instances == 6
    assert not trained.result.model_config.unembed_bias  # chapter 4's sweep without the bias
    assert trained.result.training_config.epochs == 10 and trained.result.training_config.checkpoint_epochs == (0, 10)
    assert not list(tmp_path.iterdir()), "the fallback is not written where chapter 4's sweep goes"
    save_sweep(trained.result, tmp_path / S4_SWEEP_FILE)
    loaded = load_s4_sweep(config, progress=False)
    assert loaded.source == "checkpoint" and torch.equal(loaded.result.final_params["unembed"],
                                                         trained.result.final_params["unembed"])
    # The sweep with the bias (the study's model; chapter 6's like-for-like flips) is another file.
    biased = load_s4_sweep(config, progress=False, with_bias=True)
    assert biased.source == "trained" and biased.result.model_config.unembed_bias
    save_sweep(biased.result, tmp_path / S4_BIAS_SWEEP_FILE)
    assert load_s4_sweep(config, progress=False, with_bias=True).source == "checkpoint"


def test_end_of_training_measures_and_their_summaries(tmp_path):
    config = tiny_config(tmp_path)
    result = with_outcomes(tiny_sweep(), [1.0, 0.5, 0.5, 0.5, 1.0, 0.5], [0.5, 1.0, 0.5, 0.5, 0.5, 0.5])
    groups = outcome_groups(result, 0.999)
    index = torch.arange(6)
    end = measure_end_of_training(result, index, groups, config.sgld, torch.Generator().manual_seed(0),
                                  device=config.device, workers=config.workers)
    assert end.llc.mean.shape == (6,) and end.llc.per_chain.shape == (6, config.llc_chains)
    assert end.efficiency_norm == pytest.approx(float(end.weight_norm.median()))
    # A seed whose norm is the common norm keeps its training loss.
    at_median = int((end.weight_norm - end.efficiency_norm).abs().argmin())
    assert end.efficiency_loss[at_median] == pytest.approx(float(end.train_loss[at_median]), rel=1e-4)
    summaries = outcome_summaries(end, resamples=100, generator=torch.Generator().manual_seed(0))
    assert [(s.group, s.count) for s in summaries] == [("grokked S4", 2), ("grokked A4xZ2", 1), ("neither", 3)]
    assert summaries[0].means["weight_norm"].value == pytest.approx(float(end.weight_norm[[0, 4]].mean()))
    table = summary_table(summaries).splitlines()
    assert table[0].startswith("| outcome | seeds | training loss |") and len(table) == 5


def hand_end(values, groups) -> EndOfTraining:
    values = torch.tensor(values, dtype=torch.float64)
    n = len(values)
    llc = LLCEstimate(values, torch.ones(n), torch.ones(n), values[:, None].repeat(1, 2),
                      torch.zeros(n), torch.zeros(3, n), 1)
    return EndOfTraining(torch.arange(n), torch.tensor(groups), values, 2 * values, llc, 1.0, -values, 0.0)


def test_aucs_and_correlations_on_hand_made_measures():
    # Grokkers (groups 0 and 1) have the lowest values; among them S4 (0) below A4xZ2 (1).
    end = hand_end([1.0, 2.0, 3.0, 5.0, 6.0, 7.0], [0, 0, 1, 2, 2, 2])
    aucs = {row.measure: row for row in outcome_aucs(end, resamples=100, generator=torch.Generator().manual_seed(0))}
    assert aucs["llc"].either_vs_neither.value == 0.0 and aucs["llc"].s4_vs_a4.value == 0.0
    assert aucs["efficiency_loss"].either_vs_neither.value == 1.0  # the negated values
    assert "| LLC | 0 (0 to 0) | 0 (0 to 0) |" in auc_table(list(aucs.values()))
    correlations = {(c.first, c.second): c for c in measure_correlations(end)}
    assert correlations[("train_loss", "weight_norm")].pearson == pytest.approx(1.0)
    assert correlations[("train_loss", "llc")].spearman == pytest.approx(1.0)


def test_the_strongest_separator_and_one_seed_per_outcome():
    def row(measure, value):
        return MeasureAuc(measure, Estimate(value, value, value, 0.95), Estimate(0.5, 0.5, 0.5, 0.95))
    rows = [row("llc", 0.3), row("weight_norm", 0.85), row("train_loss", float("nan")), row("x", 0.2)]
    assert strongest_separator(rows).measure == "weight_norm"          # |0.85 - 0.5| > |0.2 - 0.5|
    assert strongest_separator([row("train_loss", float("nan")), row("llc", 0.5)]).measure == "llc"
    end = hand_end([1.0, 2.0, 3.0, 4.0], [2, 0, 2, 0])
    assert first_seed_per_outcome(end) == {"grokked S4": 1, "neither": 0}


def hand_run() -> MeasuresOverTime:
    """Five checkpoints, the sparse grid at 0, 2, 4; the gap rises then falls."""
    gap = torch.tensor([0.0, 0.6, 0.9, 0.3, 0.1], dtype=torch.float64)
    dense = {"train_loss": torch.tensor([5.0, 1.0, 0.5, 0.1, 0.01], dtype=torch.float64),
             "inverse_margin": torch.tensor([float("inf"), float("inf"), 3.0, 1.0, 0.5], dtype=torch.float64),
             "path_norm": gap * 2 + 1}
    sparse = torch.tensor([0, 2, 4])
    sparse_measures = {**{k: v[sparse] for k, v in dense.items()},
                       "pac_bayes_sharpness": torch.tensor([1.0, 3.0, 2.0], dtype=torch.float64),
                       "llc": torch.tensor([1.0, 9.0, 2.0], dtype=torch.float64)}
    return MeasuresOverTime(torch.tensor([0, 3, 6, 9, 12]), gap, dense, sparse, sparse_measures, torch.ones(3),
                            torch.ones(3, dtype=torch.bool), {"cheap_measures": 1.0, "pac_bayes": 3.0, "llc": 6.0},
                            SGLDConfig(steps=30, chains=2), None)


def test_tracking_ranks_measures_over_common_checkpoints():
    run = hand_run()
    rows = tracking_rows(run)
    assert [r.measure for r in rows["dense"]][0] == "path_norm" and rows["dense"][0].spearman == pytest.approx(1.0)
    assert all(r.checkpoints == 5 for r in rows["dense"]) and all(r.checkpoints == 3 for r in rows["sparse"])
    inverse = next(r for r in rows["dense"] if r.measure == "inverse_margin")
    assert inverse.infinite == 2
    # sparse: LLC and path norm both follow the gap's order (1, 3, 2) exactly; ties keep insertion order
    assert {r.measure for r in rows["sparse"] if r.spearman == pytest.approx(1.0)} == {"llc", "path_norm", "pac_bayes_sharpness"}
    claim = claim_comparison(rows)
    assert claim.n_measures == 5 and claim.checkpoints == 3 and claim.llc_spearman == pytest.approx(1.0)
    assert claim.llc_rank == 1 and claim.best == "llc" and claim.reproduced      # tied first counts
    header, table = tracking_table(rows)
    assert header[1] == "Spearman, sparse grid (3 checkpoints)" and len(table) == 5
    assert [line[3] for line in table if line[0] == "LLC"] == ["not computed"]
    assert run.seconds_per_checkpoint() == {"cheap_measures": 0.2, "pac_bayes": 1.0, "llc": 2.0}


def test_trajectory_measures_over_time_results_and_figures(tmp_path):
    config = tiny_config(tmp_path)
    result = with_outcomes(tiny_sweep(), [1.0, 0.5, 0.5, 0.5, 1.0, 0.5], [0.5, 1.0, 0.5, 0.5, 0.5, 0.5])
    groups = outcome_groups(result, 0.999)
    trajectory = llc_over_training(result, groups, config.trajectory_every, config.sgld, config.grok_threshold,
                                   torch.Generator().manual_seed(0), workers=config.workers, device=config.device)
    assert trajectory.epochs.tolist() == [0, 5, 10] and trajectory.llc.shape == (3, 3)
    # One seed per outcome is retrained; in 10 epochs none groks (their outcomes in the sweep
    # were made up), and the labels say what the retraining gave.
    chosen = list(representative_seeds(result, groups).values())
    assert list(trajectory.labels) == [f"neither (seed {int(result.seeds[i])})" for i in chosen]
    assert trajectory.same_outcome is False
    assert trajectory.loss_trace.shape == (config.llc_steps, 3, 3)
    course = trajectory.course(0)
    assert course["fitted_epoch"] == -1 and course["highest"] is None and course["before"] is None
    assert course_table(trajectory)[1][0][1:4] == ["-", "-", "-"]
    s5 = s5_llc_over_training(config, torch.Generator().manual_seed(0), progress=False)
    assert (config.s5_epochs, config.s5_snapshots) == (20, (10, 20)) and s5.epochs.tolist() == [10, 20]
    assert s5.result.model_config.hidden_dim == config.s5_dim and s5.sgld.chains == config.s5_llc_chains
    assert s5.result.model_config.unembed_bias and int(s5.result.seeds[0]) == 70_000
    compared = s5_comparison(s5)
    assert (compared.seeds, compared.fitted) == (1, 0) and compared.peak != compared.peak  # NaN: none fits
    assert s5_course_table(s5)[1] == []
    assert s5.group_names == ("S5", "A5xZ2") and s5.same_outcome is None
    s5_run = s5_measures_sweep(config, progress=False)
    assert s5_run.train_left.numel() == round(0.4 * 14_400) and int(s5_run.seeds[0]) == 60_000
    assert not s5_run.model_config.unembed_bias and s5_run.model_config.hidden_dim == 8
    assert sparse_epochs(config) == [0, 6, 12]
    over_time = measure_s5_run(s5_run, config, torch.Generator().manual_seed(0))
    assert over_time.epochs.tolist() == [0, 3, 6, 9, 12] and over_time.sparse_epochs.tolist() == [0, 6, 12]
    assert set(over_time.sparse_measures) >= {"llc", "path_norm", "train_loss", "pac_bayes_sharpness"}
    assert over_time.sgld.steps == config.measures_llc_steps and over_time.search.bisection_draws == 8
    ranked = tracking_rows(over_time)
    assert claim_comparison(ranked).n_measures == len(ranked["sparse"])
    over_time_json = measures_results(s5_run, over_time, ranked, config)
    assert over_time_json["settings"]["n_train"] == 5760 and over_time_json["sparse"]["checkpoints"] == 3
    end = measure_end_of_training(result, torch.arange(6), groups, config.sgld, torch.Generator().manual_seed(1),
                                  device=config.device, workers=config.workers)
    summaries = outcome_summaries(end, resamples=100, generator=torch.Generator().manual_seed(0))
    aucs = outcome_aucs(end, resamples=100, generator=torch.Generator().manual_seed(0))
    rows = end_of_training_rows(end, config.sgld, tuple(config.chain_lengths))
    assert [r.lengths for r in rows] == [(5, 10, 20)] * 3 and rows[0].what.startswith("S4, end of training")
    assert len(summaries) == 3 and measure_correlations(end) and aucs
    assert over_time_json["claim"]["study_best"] == "llc"
    assert chain_length_results(rows)[0]["estimates"][-1] == pytest.approx(float(end.llc.mean[end.group == 0].mean()))
    assert trajectory_results(trajectory)["epochs"] == [0, 5, 10]
    assert trajectory_results(s5)["chains"] == config.s5_llc_chains
    norms = torch.linspace(1, 2, 4)[:, None].repeat(1, 2)
    figures = [measure_scatter_figure(end), llc_spread_figure(end), llc_trajectory_figure(trajectory, "S4"),
               llc_trajectory_figure(s5, "S5"),
               rescaling_figure(norms, norms, end, {"grokked S4": 0, "neither": 2}),
               measures_over_time_figure(over_time)]
    for fig in figures:
        assert fig.layout.title.text and len(fig.data) > 0
    # Two snapshots are shown as two estimates, not joined into a course; more are joined.
    two, three = figures[3], figures[2]
    assert s5.epochs.tolist() == [10, 20] and two.data[0].mode == "markers"
    assert "two snapshots" in two.layout.annotations[0].text and three.data[0].mode == "lines+markers"
    # The two stacked y-axis titles are short enough to fit their rows (issue 36).
    for fig in (two, three):
        assert [fig.layout.yaxis.title.text, fig.layout.yaxis2.title.text] == ["LLC", "accuracy"]


def test_a_trajectory_reads_its_course_from_the_fitting_epoch_on():
    """Two seeds with hand-made LLCs at epochs 0-40: seed 0 fits at 10 and groks at 30, seed 1
    fits at 20 and never groks. Chains of 10 steps, 4 kept; at the last snapshot the loss of
    seed 0 climbs from L(w*) = 1 by 1 and then by 2 (half of its climb comes after the first
    half of the draws), that of seed 1 is flat at 3 (settled)."""
    llc = torch.tensor([[-5.0, -9.0], [100.0, -3.0], [400.0, 300.0], [200.0, 350.0], [150.0, 320.0]],
                       dtype=torch.float64)
    trace = torch.zeros(10, 5, 2, dtype=torch.float64)
    trace[6:8, -1, 0], trace[8:, -1, 0], trace[6:, -1, 1] = 2.0, 3.0, 3.0
    trajectory = Trajectory(
        {"grokked S4 (seed 7)": 0, "neither (seed 9)": 1}, torch.tensor([0, 2]), ("S4", "A4xZ2"), None,
        torch.arange(0, 50, 10), llc, torch.ones(5, 2), torch.tensor([10, 20]), torch.tensor([30, -1]),
        SGLDConfig(steps=10, chains=2, burn_in=0.6), trace, torch.ones(5, 2, dtype=torch.float64))
    epochs, values = trajectory.after_fitting(0)
    assert epochs.tolist() == [10, 20, 30, 40] and values.tolist() == [100.0, 400.0, 200.0, 150.0]
    assert trajectory.around_grokking(0) == (20, 400.0, 30, 200.0) and trajectory.around_grokking(1) is None
    assert trajectory.course(0) == {
        "fitted_epoch": 10, "grok_epoch": 30, "first": 100.0, "first_epoch": 10, "highest": 400.0,
        "highest_epoch": 20, "final": 150.0, "final_epoch": 40, "before": 400.0, "before_epoch": 20,
        "after": 200.0, "after_epoch": 30, "change_across_grokking": -0.5, "highest_before": 400.0,
        "change_from_highest": 0.0}
    assert trajectory.course(1)["before"] is None and trajectory.course(1)["final"] == 320.0
    header, rows = course_table(trajectory)
    assert len(header) == len(rows[0]) and rows[0][-2:] == ["-50%", "+0%"] and rows[1][7] == "-"
    assert trajectory.peak_and_end() == (375.0, 235.0)
    # seed 0: (3 - 2) / (3 - 1) = 0.5; seed 1: 0
    assert trajectory.last_snapshot_drift() == pytest.approx(0.25)


def test_comparisons_name_the_lower_group_and_whether_intervals_are_apart():
    end = hand_end([1.0, 1.1, 1.2, 5.0, 5.1, 5.2], [0, 0, 0, 2, 2, 2])
    summaries = outcome_summaries(end, resamples=200, generator=torch.Generator().manual_seed(0))
    c = outcome_comparison(summaries, "llc", "grokked S4", "neither")
    assert c.first.value == pytest.approx(1.1) and c.second.value == pytest.approx(5.1)
    assert (c.first_count, c.second_count, c.first_lower, c.apart) == (3, 3, True, True)
    assert direction(c.first.value, c.second.value, above="higher than", below="lower than") == "lower than"
    assert verdict(c.apart, yes="are apart", no="overlap") == "are apart"
    absent = outcome_comparison(summaries, "llc", "grokked S4", "grokked A4xZ2")
    assert (absent.second_count, absent.first_lower, absent.apart) == (0, None, None)
    assert direction(absent.first.value, absent.second.value, undefined="not measured beside") == "not measured beside"
    assert verdict(absent.apart, undefined="cannot be compared") == "cannot be compared"
    close = hand_end([1.0, 3.0, 5.0, 1.2, 3.2, 5.2], [0, 0, 0, 2, 2, 2])
    near = outcome_comparison(outcome_summaries(close, resamples=200, generator=torch.Generator().manual_seed(0)),
                              "llc", "grokked S4", "neither")
    assert near.first_lower is True and near.apart is False


def test_the_chain_length_study_reads_where_estimates_settle():
    """Two seeds: seed 0 fits at epoch 10, seed 1 never. Chains of 10 steps, burn-in 0.5: at
    length 4 the kept steps are 2-3, at 10 steps 5-9; the loss overshoots (3 above L(w*) = 1 at
    steps 2-3) and settles at 1 above it from step 5 on."""
    trace = torch.ones(10, 3, 2, dtype=torch.float64)
    trace[2:4] += 3.0
    trace[4:] += 1.0
    trajectory = Trajectory(
        {"grokked S4 (seed 7)": 0, "neither (seed 9)": 1}, torch.tensor([0, 2]), ("S4", "A4xZ2"), None,
        torch.tensor([0, 10, 20]), torch.zeros(3, 2), torch.zeros(3, 2), torch.tensor([10, -1]),
        torch.tensor([-1, -1]), SGLDConfig(steps=10, chains=2, burn_in=0.5, n_beta=100.0), trace,
        torch.ones(3, 2, dtype=torch.float64))
    rows = trajectory_rows(trajectory, (4, 8), "S4")
    assert [r.what for r in rows] == ["S4 seed 7 (grokked S4), early snapshot, epoch 10",
                                      "S4 seed 7 (grokked S4), final snapshot, epoch 20"]
    # length 4: steps 2-3 at +3 -> 300; length 8: steps 4-7 at +1 -> 100; length 10: steps 5-9 -> 100
    assert rows[0].lengths == (4, 8, 10) and rows[0].estimates == (300.0, 100.0, 100.0)
    assert rows[0].settled_at() == 8 and rows[0].excess(0) == pytest.approx(2.0)
    assert chain_length_table(rows)[1][0][-1] == "8 steps"
    summary = chain_length_summary(rows)
    assert (summary.shortest, summary.second, summary.longest) == (4, 8, 10)
    assert (summary.rows, summary.higher, summary.unsettled) == (2, 2, 0)
    assert summary.excess_low == pytest.approx(2.0) and summary.excess_high == pytest.approx(2.0)
    assert (summary.settled_low, summary.settled_high, summary.within) == (8, 8, 0.05)
    words = {"every": "overestimate", "some": "do not err in one direction", "none": "underestimate"}
    assert share(summary.higher, summary.rows, **words) == "overestimate"
    mixed = chain_length_summary(rows + [ChainLengthRow("low", (4, 8, 10), (50.0, 90.0, 100.0))])
    assert (mixed.higher, mixed.rows, mixed.unsettled) == (2, 3, 1) and mixed.excess_low == pytest.approx(-0.5)
    assert share(mixed.higher, mixed.rows, **words) == "do not err in one direction"
    flat = ChainLengthRow("flat", (1, 2, 3), (1.0, 1.2, 1.0))
    assert flat.settled_at() == 3


def test_population_correlations_and_the_study_efficiency():
    result = with_outcomes(tiny_sweep(), [1.0, 0.5, 0.5, 0.5, 1.0, 0.5], [0.5, 1.0, 0.5, 0.5, 0.5, 0.5])
    groups = outcome_groups(result, 0.999)
    # the measured seeds: both S4 grokkers, the A4 grokker and one of the three others
    end = hand_end([1.0, 2.0, 3.0, 5.0], [0, 1, 2, 0])
    end.index = torch.tensor([0, 1, 2, 4])
    rows = sweep_correlations(result, groups, end)
    assert [(r.first, r.second, r.n_seeds) for r in rows] == [
        ("train_loss", "weight_norm", 6), ("train_loss", "llc", 4), ("llc", "weight_norm", 4)]
    assert rows[1].spearman == pytest.approx(1.0)  # hand_end: loss and LLC are the same values
    assert efficiency_seeds(groups, 1).tolist() == [0, 1, 2]
    study = study_efficiency(result, groups, 2)
    assert study.index.tolist() == [0, 1, 2, 3, 4] and study.weight_decay == result.training_config.weight_decay
    assert bool((study.optimum.excess >= 0).all())
    summaries = efficiency_summaries(study, resamples=100, generator=torch.Generator().manual_seed(0))
    assert [(r.group, r.count) for r in summaries] == [("grokked S4", 2), ("grokked A4xZ2", 1), ("neither", 2)]
    assert efficiency_table(summaries)[0][2] == "best factor alpha"
    lowest = study.optimum.lowest
    assert summaries[0].lowest_median == pytest.approx(float(lowest[study.group == 0].median()))
    auc = efficiency_auc(study, resamples=100, generator=torch.Generator().manual_seed(0))
    assert min(r.count for r in summaries) == 1 and 0.0 <= auc.value <= 1.0
    assert grid_step() == pytest.approx(2 ** (9 / 499) - 1)


def test_the_s5_course_sits_beside_the_published_one_with_what_differs():
    from types import SimpleNamespace

    from lib.grokking.study import S5_MODEL

    llc = torch.tensor([[5000.0], [1000.0], [600.0]], dtype=torch.float64)
    trajectory = Trajectory(
        {"neither (seed 70000)": 0}, torch.tensor([2]), ("S5", "A5xZ2"), SimpleNamespace(model_config=S5_MODEL),
        torch.tensor([80, 1000, 2000]), llc, torch.ones(3, 1), torch.tensor([60]), torch.tensor([-1]),
        SGLDConfig(steps=3000, chains=3), torch.zeros(1, 3, 1), torch.zeros(3, 1))
    compared = s5_comparison(trajectory)
    assert (compared.seeds, compared.fitted, compared.peak, compared.final) == (1, 1, 5000.0, 600.0)
    assert compared.peak_ratio == pytest.approx(5000 / 4579.5) and compared.final_ratio == pytest.approx(600 / 551.5)
    assert (compared.study_peak_low, compared.study_peak_high, compared.study_final_low,
            compared.study_final_high) == (4558, 4601, 505, 598)
    assert compared.same_chains and compared.same_model
    assert verdict(compared.same_chains, yes="as in", no="against") == "as in"
    header, rows = s5_course_table(trajectory)
    # the seed beside the study's instance with its outcome (neither: the third)
    assert rows == [["neither (seed 70000)", "5,000", 80, "600", 2000, "4,601", 598]]
    assert len(header) == len(rows[0])


def _figure_end(seeds_per_group=(3, 2, 4), chains=5):
    """A stand-in for `EndOfTraining` with what the figures read: outcome, index, LLC per chain."""
    from types import SimpleNamespace

    group = torch.tensor([g for g, n in enumerate(seeds_per_group) for _ in range(n)])
    per_chain = torch.rand(len(group), chains, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    llc = SimpleNamespace(per_chain=per_chain, mean=per_chain.mean(dim=1), sem=per_chain.std(dim=1) / chains ** 0.5)
    return SimpleNamespace(group=group, index=torch.arange(len(group)) + 100, llc=llc, efficiency_norm=2.5)


def test_the_chains_read_on_a_white_page_and_stay_apart_from_the_means():
    fig = llc_spread_figure(_figure_end())
    chains = [t for t in fig.data if t.name.endswith(": chains")]
    means = [t for t in fig.data if t.name.endswith(": mean")]
    assert len(chains) == len(means) == 3
    for chain, mean in zip(chains, means):
        assert chain.marker.opacity >= 0.6 and chain.marker.color == mean.marker.color
        # told apart by shape (open ring against filled dot) and size, not by faintness
        assert chain.marker.symbol != mean.marker.symbol and chain.marker.size < mean.marker.size


def test_the_rescaling_lines_end_where_the_loss_underflows_to_zero():
    end = _figure_end()
    norms = torch.linspace(1, 5, 9)[:, None].repeat(1, 2)
    losses = torch.logspace(0, -8, 9)[:, None].repeat(1, 2)
    losses[6:, 0] = -0.0   # float32 cross-entropy underflows at large norms
    losses[7:, 1] = 0.0
    fig = rescaling_figure(norms, losses, end, {"grokked S4": 0, "neither": 5})
    assert [len(t.y) for t in fig.data] == [6, 7] and all(y > 0 for t in fig.data for y in t.y)
    assert "underflows to 0" in fig.layout.title.text and fig.layout.yaxis.type == "log"
    # the x axis spans the norms drawn (and the common norm), not the norms left out
    assert list(fig.layout.xaxis.range) == [1.0, pytest.approx(float(norms[6, 1]))]
    whole = rescaling_figure(norms, losses.abs() + 1e-9, end, {"grokked S4": 0, "neither": 5})
    assert [len(t.y) for t in whole.data] == [9, 9] and "underflows" not in whole.layout.title.text


def test_an_s5_course_with_one_outcome_has_an_honest_title_and_legend():
    from types import SimpleNamespace

    from lib.grokking.study import S5_MODEL

    metrics = {"acc_g1": torch.full((3, 1), 0.55), "acc_g2": torch.full((3, 1), 0.56)}
    result = SimpleNamespace(model_config=S5_MODEL, metrics=metrics, log_epochs=torch.tensor([0, 40, 80]))
    trajectory = Trajectory(
        {"neither (seed 70000)": 0}, torch.tensor([2]), ("S5", "A5xZ2"), result, torch.tensor([40, 80]),
        torch.tensor([[5000.0], [600.0]], dtype=torch.float64), torch.ones(2, 1), torch.tensor([0]),
        torch.tensor([-1]), SGLDConfig(steps=3000, chains=3), torch.zeros(1, 2, 1), torch.zeros(2, 1))
    fig = llc_trajectory_figure(trajectory, "The LLC along training of S5 vs A5 x Z2 seeds")
    assert fig.layout.title.text.endswith("1 seed, outcome neither only")
    # every kind of mark drawn has a legend entry that looks like it: the LLC dots and both
    # accuracy lines (solid and dotted)
    listed = [t for t in fig.data if t.showlegend is not False]
    assert {(t.mode, t.line.dash if t.mode == "lines" else None) for t in listed} == {
        ("markers", None), ("lines", "solid"), ("lines", "dot")}


def test_the_measures_grid_has_one_line_titles_and_the_same_ticks_in_every_panel():
    from types import SimpleNamespace

    cheap = ("l2_norm", "distance_from_init", "inverse_margin", "spectral_product", "frobenius_product",
             "path_norm", "train_loss")
    dense = {m: torch.rand(5, dtype=torch.float64) + 0.1 for m in cheap}
    sparse = {**{m: v[::2] for m, v in dense.items()},
              "pac_bayes_sharpness": torch.tensor([1e-9, 10.0, 20.0], dtype=torch.float64),
              "llc": torch.tensor([50.0, 80.0, 20.0], dtype=torch.float64)}
    over_time = SimpleNamespace(epochs=torch.tensor([0, 500, 1000, 1500, 2000]),
                                sparse_epochs=torch.tensor([0, 1000, 2000]), gap=torch.rand(5, dtype=torch.float64),
                                measures=dense, sparse_measures=sparse)
    fig = measures_over_time_figure(over_time)
    titles = [a.text for a in fig.layout.annotations]
    assert len(titles) == 10 and "sharpness" in titles and "LLC" in titles
    assert all(len(t) <= 18 for t in titles)   # one line at a quarter of the figure's width
    axes = [fig.layout[k] for k in fig.layout if k.startswith("xaxis")]
    assert len(axes) == 12 and all(list(a.range) == [0, 2000] for a in axes)
