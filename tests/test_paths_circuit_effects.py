"""The patching and shortcut summaries that chapter 7's verdicts rest on (lib.paths.circuit_effects)."""

import torch

from lib.paths.causal import SHORTCUTS, Patching
from lib.paths.circuit_effects import WEAK_CORRELATION, patching_summary, strongest_shortcut


def test_patching_and_shortcut_summaries_are_the_layers_and_numbers_of_the_verdict():
    random = torch.tensor([[0.1, 0.2], [0.1, 0.3], [0.2, 0.2]])
    strong = patching_summary(Patching(3, torch.tensor([0.6, 0.8, 0.9]), random, torch.tensor([1.0, 1.0, 1.0]), 100))
    assert strong["used"] == strong["above"] == [1, 2] and [r["layer"] for r in strong["middle"]] == [1, 2]
    assert strong["last"]["layer"] == 3
    weak = patching_summary(Patching(3, torch.tensor([0.1, 0.2, 0.9]), random, torch.tensor([1.0, 1.0, 1.0]), 100))
    assert weak["used"] == weak["above"] == []
    outside = patching_summary(Patching(3, torch.tensor([0.3, 0.4, 0.9]), random, torch.tensor([1.0, 1.0, 1.0]), 100))
    assert outside["above"] == [1, 2] and outside["used"] == []
    small = dict.fromkeys(SHORTCUTS, 0.01) | {SHORTCUTS[2]: -0.05}
    assert strongest_shortcut(small) == {"name": SHORTCUTS[2], "correlation": -0.05, "weak": True,
                                         "tested": len(SHORTCUTS)}
    assert not strongest_shortcut(small | {SHORTCUTS[0]: WEAK_CORRELATION})["weak"]
