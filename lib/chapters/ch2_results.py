"""What chapter 2's results JSON must hold, for the notebook tests (chapter 2).

The notebook writes `results_dir/02_training.json`; `tests/test_notebooks.py` finds this module
by the chapter's number and checks every executed chapter against its `REQUIRED_KEYS` and
`check_results`.
"""

from __future__ import annotations

#: Keys the results JSON must contain (a chapter may write more).
REQUIRED_KEYS = frozenset({"final_loss", "loss_by_length", "drop_by_length", "n_parameters",
                           "steps", "examples_per_second", "transition_study", "findings", "main_run"})


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
    # Beside each loss, the mean prediction on the same graphs (seeds, steps, lengths).
    assert len(study["mean_prediction"]) == seeds and len(study["mean_prediction"][0]) == len(study["steps"])
    assert len(study["mean_prediction"][0][0]) == len(study["lengths"])
    for length in study["lengths"]:
        key = str(length)
        assert len(study["rival"][key]) == seeds and len(study["held_step"][key]) == seeds
        # A transition that holds is a transition at the defaults, which is a drop there.
        for held, transition, drop in zip(study["held_step"][key], study["transition_step"][key],
                                          study["drop_step"][key]):
            assert held is None or (transition is not None and drop is not None)
    for table in (study["sensitivity"], results["main_run"]["sensitivity"]):
        ranges = table["ranges"]
        assert len(table["rows"]) == sum(len(values) for values in ranges.values())
        assert all(row["transitions"] <= row["drops"] for row in table["rows"])
    curves = results["main_run"]["evaluation_curves"]
    assert len(curves["loss"]) == len(curves["steps"]) == len(curves["mean_prediction"])
    # Findings are reported with their counts, never asserted.
    for found in results["findings"].values():
        assert isinstance(found["holds"], bool) and 0 <= found["events"] and found["seeds"] >= 1
