"""What chapter 2's results JSON must hold, for the notebook tests (chapter 2).

The notebook writes `results_dir/02_training.json`; `tests/test_notebooks.py` finds this module
by the chapter's number and checks every executed chapter against its `REQUIRED_KEYS` and
`check_results`.
"""

from __future__ import annotations

#: Keys the results JSON must contain (a chapter may write more).
REQUIRED_KEYS = frozenset({"final_loss", "loss_by_length", "drop_by_length", "n_parameters",
                           "steps", "examples_per_second", "transition_study"})


def check_results(results: dict) -> None:
    """Assert what chapter 2's results must satisfy beyond holding `REQUIRED_KEYS`."""
    assert results["n_parameters"] > 0 and results["steps"] > 0 and results["examples_per_second"] > 0
    assert isinstance(results["loss_by_length"], dict) and isinstance(results["drop_by_length"], dict)
    study = results["transition_study"]
    seeds = len(study["seeds"])
    assert seeds >= 1 and study["n_max"] >= 3
    for length in study["lengths"]:
        # JSON keys are strings; every length has one drop step and one plateau level per seed.
        key = str(length)
        assert len(study["drop_step"][key]) == seeds and len(study["plateau"][key]) == seeds
        assert all((step is None) == (plateau is None)
                   for step, plateau in zip(study["drop_step"][key], study["plateau"][key]))
    assert len(study["loss"]) == seeds and len(study["loss"][0]) == len(study["steps"])
    assert {"groups", "sometimes", "never", "holds_over_seeds"} <= study["order"].keys()
