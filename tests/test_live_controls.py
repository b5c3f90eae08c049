"""The live panels' callbacks, called as the sliders call them: both ends of the range and the middle.

The browser test (tests/test_browser.py) moves the real sliders in JupyterLab; these tests
call the same `lib` callbacks and panels without a browser, and check that the figure follows
the slider's value.
"""

from pathlib import Path

import ipywidgets as widgets
import plotly.graph_objects as go
import pytest
import torch

from lib.bfs.transformer import bfs_transformer
from lib.book.live import RUN_BUTTON, SliderRange
from lib.book.params import read_parameters_cell, validate_parameters
from lib.chapters.ch1 import Chapter1Parameters, PerturbationRerun
from lib.chapters.ch1_figures import SCALE_SLIDER, rerun_figure, scale_panel
from lib.chapters.ch2_figures import checkpoint_figure, checkpoint_panel, checkpoint_slider

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("one_thread")


def plotted(fig: go.Figure) -> list:
    """Every trace's plotted values (x, y and z where present), as plain lists."""
    return [[list(values) if values is not None else None for values in (t.x, t.y, getattr(t, "z", None))]
            for t in fig.data]


def controls(panel: widgets.interactive) -> dict[str, widgets.Widget]:
    """The panel's widgets by kind: its slider, its menu (if any) and its run button."""
    found = {}
    for child in panel.children:
        if isinstance(child, (widgets.FloatSlider, widgets.IntSlider)):
            found["slider"] = child
        elif isinstance(child, widgets.Dropdown):
            found["menu"] = child
        elif isinstance(child, widgets.Button):
            found["button"] = child
    return found


def test_slider_ranges_give_their_ends_and_a_middle_on_the_grid():
    assert SliderRange(-4.0, 1.0, 0.25, -2.0).ends_and_middle() == (-4.0, -1.5, 1.0)
    assert SliderRange(0, 7, 1, 7).ends_and_middle() == (0, 4, 7)
    slider = SliderRange(0, 7, 1, 7).int_slider("checkpoint")
    assert (slider.min, slider.max, slider.step, slider.value) == (0, 7, 1, 7)


@pytest.fixture(scope="module")
def rerun():
    defaults = read_parameters_cell(ROOT / "notebooks" / "01_handcrafted_bfs.py")
    config = validate_parameters(Chapter1Parameters, {**defaults, "smoke": True, "device": "cpu"})
    return PerturbationRerun(bfs_transformer(config.n_vertices), config, seed=3), config


def test_chapter_1_rerun_follows_the_scale(rerun):
    """At the slider's lowest scale the damage is slight; at its highest it wrecks the model:
    the MSE right after the damage grows along the slider, and the curves differ."""
    rerun, config = rerun
    figures = [rerun_figure(rerun, value, "gaussian", seed=4) for value in SCALE_SLIDER.ends_and_middle()]
    curves = [plotted(fig) for fig in figures]
    assert curves[0] != curves[1] != curves[2] and curves[0] != curves[2]
    first_mse = [fig.data[0].y[0] for fig in figures]
    assert first_mse[0] < first_mse[1] < first_mse[2], first_mse
    assert all("held-out MSE" in fig.layout.title.text for fig in figures)
    # The same value and seed redraw the same figure.
    assert plotted(rerun_figure(rerun, SCALE_SLIDER.low, "gaussian", seed=4)) == curves[0]


def test_chapter_1_panel_runs_its_callback_with_the_controls_values(rerun):
    rerun, config = rerun
    panel = scale_panel(rerun, config.perturbation_modes, seed=4)
    found = controls(panel)
    assert found["button"].description == RUN_BUTTON
    assert (found["slider"].min, found["slider"].max, found["slider"].step) == (
        SCALE_SLIDER.low, SCALE_SLIDER.high, SCALE_SLIDER.step)
    assert list(found["menu"].options) == list(config.perturbation_modes)
    results = []
    for value in (SCALE_SLIDER.low, SCALE_SLIDER.high):
        found["slider"].value = value
        found["menu"].value = "gaussian"
        panel.update()                         # what the button's click does
        results.append(panel.result)
    assert all(isinstance(fig, go.Figure) for fig in results)
    assert plotted(results[0]) == plotted(rerun_figure(rerun, SCALE_SLIDER.low, "gaussian", seed=4))
    assert plotted(results[0]) != plotted(results[1])


def fake_checkpoints(n: int = 5, n_labels: int = 4, examples: int = 200):
    """Predictions that move from all-zero to the labels over n checkpoints."""
    labels = torch.arange(examples) % n_labels
    predictions = [labels.float() * k / (n - 1) for k in range(n)]
    return [100 * k for k in range(n)], predictions, labels, n_labels


def test_chapter_2_histogram_follows_the_checkpoint():
    steps, predictions, labels, n_labels = fake_checkpoints()
    ends = checkpoint_slider(len(steps)).ends_and_middle()
    assert ends == (0, 2, 4)
    figures = [checkpoint_figure(steps, predictions, labels, n_labels, int(i)) for i in ends]
    assert [fig.layout.title.text for fig in figures] == [
        f"Predicted against true distance at step {steps[int(i)]}" for i in ends]
    histograms = [plotted(fig) for fig in figures]
    assert histograms[0] != histograms[1] != histograms[2] and histograms[0] != histograms[2]


def test_chapter_2_panel_starts_at_the_last_checkpoint_and_redraws():
    steps, predictions, labels, n_labels = fake_checkpoints()
    panel = checkpoint_panel(steps, predictions, labels, n_labels)
    found = controls(panel)
    assert (found["slider"].min, found["slider"].max, found["slider"].value) == (0, 4, 4)
    panel.update()
    last = plotted(panel.result)
    found["slider"].value = 0
    panel.update()
    assert plotted(panel.result) == plotted(checkpoint_figure(steps, predictions, labels, n_labels, 0))
    assert plotted(panel.result) != last


@pytest.fixture(scope="module")
def tiny_s4_sweep():
    """Three S4 vs A4xZ2 seeds (d = h = 8) trained 30 epochs, snapshots at 0, 15 and 30."""
    from lib.grokking.mlp import MLPConfig
    from lib.grokking.pairs import make_pair
    from lib.grokking.sweeps import run_pair_sweep
    from lib.grokking.training import SweepConfig
    schedule = SweepConfig(epochs=30, log_every=10, checkpoint_epochs=(0, 15, 30))
    return run_pair_sweep(make_pair("S4_vs_A4xZ2"), [0, 1, 2], MLPConfig(24, 8, 8), schedule, progress=False)


def test_chapter_6_rerun_follows_the_scale(tiny_s4_sweep):
    """At the slider's lowest scale the noisy copies end where the seed does; in the middle and
    at the top they end further and further away."""
    from lib.chapters.ch6_figures import SCALE_SLIDER as PERTURBATION_SLIDER, rerun_perturbation
    figures = [rerun_perturbation(tiny_s4_sweep, 1, k, copies=2, seed=0, grok_threshold=0.999)
               for k in PERTURBATION_SLIDER.ends_and_middle()]
    curves = [plotted(fig) for fig in figures]
    assert curves[0] != curves[1] != curves[2] and curves[0] != curves[2]
    shifts = [max(fig.data[1].y) for fig in figures]               # mean |change of final accuracy|
    assert shifts[0] < 1e-3 < shifts[2] and shifts[1] <= shifts[2], shifts
    assert all(f"2^{int(k)}" in fig.layout.title.text for fig, k in zip(figures, PERTURBATION_SLIDER.ends_and_middle()))
    assert plotted(rerun_perturbation(tiny_s4_sweep, 1, PERTURBATION_SLIDER.low, 2, 0, 0.999)) == curves[0]


def test_chapter_6_panel_runs_its_callback_with_the_controls_values(tiny_s4_sweep):
    from lib.chapters.ch6_figures import SCALE_SLIDER as PERTURBATION_SLIDER, perturbation_panel, rerun_perturbation
    labels = ["first", "second", "third"]
    panel = perturbation_panel(tiny_s4_sweep, labels, copies=2, seed=0, grok_threshold=0.999)
    found = controls(panel)
    assert found["button"].description == RUN_BUTTON
    assert (found["slider"].min, found["slider"].max, found["slider"].step, found["slider"].value) == (
        PERTURBATION_SLIDER.low, PERTURBATION_SLIDER.high, PERTURBATION_SLIDER.step, PERTURBATION_SLIDER.start)
    assert list(found["menu"].options) == [(label, b) for b, label in enumerate(labels)]
    results = []
    for value in (PERTURBATION_SLIDER.low, PERTURBATION_SLIDER.high):
        found["slider"].value = value
        found["menu"].value = 2
        panel.update()
        results.append(panel.result)
    assert plotted(results[0]) == plotted(rerun_perturbation(tiny_s4_sweep, 2, PERTURBATION_SLIDER.low, 2, 0, 0.999))
    assert plotted(results[0]) != plotted(results[1])
