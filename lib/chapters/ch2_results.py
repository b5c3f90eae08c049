"""What chapter 2's results JSON must hold, for the notebook tests (chapter 2).

The notebook writes `results_dir/02_training.json`; `tests/test_notebooks.py` finds this module
by the chapter's number and checks every executed chapter against its `REQUIRED_KEYS` and
`check_results`.
"""

from __future__ import annotations

#: Keys the results JSON must contain (a chapter may write more).
REQUIRED_KEYS = frozenset({"final_loss", "loss_by_length", "transition_step_by_length", "n_parameters",
                           "steps", "examples_per_second"})


def check_results(results: dict) -> None:
    """Assert what chapter 2's results must satisfy beyond holding `REQUIRED_KEYS`."""
    assert results["n_parameters"] > 0 and results["steps"] > 0 and results["examples_per_second"] > 0
    assert isinstance(results["loss_by_length"], dict) and isinstance(results["transition_step_by_length"], dict)
