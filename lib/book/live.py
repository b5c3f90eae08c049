"""The live controls of the chapters: ipywidgets panels that recompute a figure (chapters 1, 2, 6).

In a live kernel a chapter offers a slider (and sometimes a menu) with a "Run Interact" button;
pressing it calls a `lib` function with the controls' values and shows the plotly figure it
returns. The static book shows a plotly slider over precomputed values instead
(`lib.book.plotting.slider_over_steps`). Each chapter's panel is built by a function of its
`lib.chapters` module from a `SliderRange` defined there, so that the unit tests call the same
callback over the same range as the slider, and the browser test (tests/test_browser.py)
moves the real slider in JupyterLab.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import ipywidgets as widgets
import plotly.graph_objects as go

#: The label of the button that runs a panel's callback (ipywidgets' own for `interact_manual`).
RUN_BUTTON = "Run Interact"


@dataclass(frozen=True)
class SliderRange:
    """A slider's range: its two ends, its step, and the value it starts at."""

    low: float
    high: float
    step: float
    start: float

    def ends_and_middle(self) -> tuple[float, float, float]:
        """The lowest value, a value on the grid half way along, and the highest value."""
        middle = self.low + round((self.high - self.low) / 2 / self.step) * self.step
        return self.low, middle, self.high

    def float_slider(self, description: str) -> widgets.FloatSlider:
        """An ipywidgets float slider over this range."""
        return widgets.FloatSlider(value=self.start, min=self.low, max=self.high, step=self.step,
                                   description=description)

    def int_slider(self, description: str) -> widgets.IntSlider:
        """An ipywidgets integer slider over this range."""
        return widgets.IntSlider(value=int(self.start), min=int(self.low), max=int(self.high),
                                 step=int(self.step), description=description)


def manual_panel(view: Callable[..., go.Figure], **controls: widgets.Widget) -> widgets.interactive:
    """A panel of `controls` and a "Run Interact" button; pressing it shows `view(**values)`.

    The returned `widgets.interactive` keeps the last figure in `.result` and shows it below the
    controls (`auto_display`, as `widgets.interact_manual` does); display the panel in a cell.
    """
    return widgets.interactive(view, {"manual": True, "manual_name": RUN_BUTTON, "auto_display": True},
                               **controls)


__all__ = ["RUN_BUTTON", "SliderRange", "manual_panel"]
