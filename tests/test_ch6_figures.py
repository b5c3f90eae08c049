"""Chapter 6's figures on tiny real studies: what each shows, and the static scale slider."""

import plotly.graph_objects as go
import pytest
import torch

from lib.book.plotting import slider_over_steps
from lib.grokking.authors_scale_jacobian import SketchRun
from lib.grokking.transplant_both_ways import TransplantStudy
from lib.grokking.early_prediction import EarlyPrediction
from lib.grokking.perturbation import perturbation_study
from lib.grokking.total_variation import total_variation_study
from lib.grokking.training_jacobian import jacobian_study
from lib.chapters.ch6_figures import (
    early_prediction_figure, jacobian_figure, perturbation_figure, perturbation_heatmaps, seed_labels,
    sketched_jacobian_figure, total_variation_figure, transplant_figure,
)
from lib.grokking.jacobian_sketch import sketched_jacobian_study
from lib.grokking.training_jacobian import iid_part
from lib.grokking.mlp import MLPConfig
from lib.grokking.pairs import make_pair
from lib.grokking.sweeps import run_pair_sweep
from lib.grokking.training import SweepConfig
from lib.grokking.transplant import transplant, transplant_fates

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def sweep():
    schedule = SweepConfig(epochs=20, log_every=5, checkpoint_epochs=(0, 10, 20))
    return run_pair_sweep(make_pair("S4_vs_A4xZ2"), [0, 1, 2], MLPConfig(24, 8, 8), schedule, progress=False)


def test_a_slider_added_to_a_figure_keeps_the_figures_own_traces_visible():
    fig = go.Figure([go.Scatter(x=[0, 1], y=[0, 1], name="fixed")])
    steps = [[go.Scatter(x=[0], y=[k], name=f"a{k}"), go.Scatter(x=[1], y=[k], name=f"b{k}")] for k in range(3)]
    fig = slider_over_steps(steps, ["0", "1", "2"], slider_prefix="k: ", active=1, figure=fig)
    assert len(fig.data) == 7 and fig.data[0].name == "fixed"
    assert [t.visible for t in fig.data[1:]] == [False, False, True, True, False, False]
    visible = [step["args"][0]["visible"] for step in fig.layout.sliders[0].steps]
    assert visible[2] == [True, False, False, False, False, True, True]


def test_perturbation_figure_has_one_slider_step_per_scale_over_fixed_accuracy_curves(sweep):
    study = perturbation_study(sweep, torch.tensor([0, 2]), [-20, -5, 3], copies=2,
                               generator=torch.Generator().manual_seed(0), grok_threshold=0.999)
    labels = seed_labels(study, sweep.seeds[[0, 2]])
    assert labels[0].startswith("seed 0 (") and labels[1].startswith("seed 2 (")
    fig = perturbation_figure(study, sweep, labels)
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["2^-20", "2^-5", "2^3"]
    fixed = 2 * len(labels)                 # accuracy against each group, per seed
    for s, step in enumerate(steps):
        visible = step["args"][0]["visible"]
        assert visible[:fixed] == [True] * fixed                            # the accuracy curves
        shown = [fig.data[fixed + i] for i, v in enumerate(visible[fixed:]) if v]
        assert len(shown) == 2 and [list(t.y) for t in shown] == [study.probability[:, b, s].tolist() for b in (0, 1)]
    heatmaps = perturbation_heatmaps(study, labels)
    assert len(heatmaps.data) == 2
    assert [list(row) for row in heatmaps.data[1].z] == study.probability[:, 1, :].T.tolist()


def test_total_variation_figure_has_three_histograms_per_outcome_present(sweep):
    study = total_variation_study(sweep, torch.tensor([0, 1, 2]), epochs=20, window=10, every=5,
                                  grok_threshold=0.999, authors_every=2, authors_intervals=4)
    fig = total_variation_figure(study)
    present = len(study.group.unique())
    assert len(fig.data) == 3 * present and all(isinstance(t, go.Histogram) for t in fig.data)
    assert sorted(sum((list(t.x) for t in fig.data[::3]), [])) == sorted(study.authors_flips.tolist())
    assert sorted(sum((list(t.x) for t in fig.data[2::3]), [])) == sorted(study.test_tv.tolist())


def test_transplant_figure_draws_the_groups_accuracy_of_the_seeds_shown():
    pair = make_pair("S4_vs_A4xZ2")
    schedule = SweepConfig(epochs=10, log_every=5)
    runs = {g: transplant(pair, g, [0, 1], MLPConfig(24, 8, 8), schedule, schedule, 0.8,
                          torch.Generator().manual_seed(0)) for g in ("g1", "g2")}
    # Mark every seed as a grokker that ungrokked, so that the figure draws them coloured.
    fates = {g: transplant_fates(run, 0.0) for g, run in runs.items()}
    for g in fates:
        fates[g] = type(fates[g])(torch.ones(2, dtype=torch.bool), torch.tensor([True, False]),
                                  torch.zeros(2, dtype=torch.bool))
    fig = transplant_figure(TransplantStudy(runs, {g: {"below 0.999": f} for g, f in fates.items()}), threshold=0.999)
    assert len(fig.data) == 2 * 2 * 2                  # 2 directions x 2 seeds x (group, training) accuracy
    assert list(fig.data[0].y) == runs["g1"].second.metrics["acc_g1"][:, 0].tolist()
    assert "ungrokked" in fig.data[0].name and "kept" in fig.data[2].name


def test_jacobian_figure_has_a_spectrum_per_boundary_and_the_largest_value_in_both_dtypes():
    pair = make_pair("S4_vs_A4xZ2")
    study = jacobian_study(pair.g1, MLPConfig(24, 2, 2, unembed_bias=True), 0, 4, 2, 2e-4, 0.584, 0.01, (0.9, 0.98),
                           1e-8, [torch.float64, torch.float32], torch.Generator().manual_seed(0))
    fig = jacobian_figure(study)
    assert len(fig.data) == 3 + 2 + 1 and fig.layout.yaxis.type == "log"    # 3 boundaries, 2 dtypes, accuracy
    assert list(fig.data[0].y) == [1.0] * study.n_parameters                  # step 0: the identity
    assert list(fig.data[5].y) == study.test_accuracy.tolist()


def test_sketched_jacobian_figure_has_the_bounds_in_both_dtypes_and_a_spectrum_per_boundary_read():
    training, test = iid_part(make_pair("S4_vs_A4xZ2").g1, 0.584, torch.Generator().manual_seed(0))
    study = sketched_jacobian_study(MLPConfig(24, 2, 2, unembed_bias=True), 0, training, test, 4, 2, 2e-4, 0.01,
                                    (0.9, 0.98), 1e-8, 5, [2, 4], torch.Generator().manual_seed(1))
    fig = sketched_jacobian_figure(SketchRun(seeds=[0], grok_steps=[-1], chosen=0, study=study, amplification=[],
                                             spread=[], small_width=2, small_grok_steps=[-1], eps_spread={},
                                             overflow=None, adam_eps=1e-8))
    assert len(fig.data) == 2 + 1 + 1 + 2                 # two dtypes, root-mean-square, accuracy, two spectra
    assert fig.data[0].y[0] == pytest.approx(1.0) and list(fig.data[0].x) == [0, 2, 4]
    assert [trace.name for trace in fig.data[4:]] == ["step 2", "step 4"] and len(fig.data[4].y) == 5


def test_early_prediction_figure_marks_only_epochs_that_exist():
    prediction = EarlyPrediction(torch.tensor([0, 10]), torch.tensor([0.5, 0.9], dtype=torch.float64),
                                 torch.tensor([0.4, 1.0], dtype=torch.float64), (3, 2))
    fig = early_prediction_figure(prediction, decision_epochs=[0, -1, 10], choice_epochs=[-1, 10, 20])
    assert [list(t.y) for t in fig.data[:2]] == [[0.5, 0.9], [0.4, 1.0]]
    assert list(fig.data[2].x) == [0, 10] and list(fig.data[3].x) == [10, 20]
