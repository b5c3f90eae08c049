"""What chapter 2's results must satisfy (chapter 2): `check_results`.

The notebook calls `check_results` on its results (the recorded numbers among them) right
before it writes `results_dir/02_training.json`; the notebook tests call it again on the JSON
they read back. Which keys the JSON must hold is what `book/reproduced/02_training.yaml` reads.
"""

from __future__ import annotations

from lib.book.record import verdict
from lib.book.results import to_jsonable
from lib.chapters.ch2_transitions import length_name


def check_results(results: dict) -> None:
    """Assert what chapter 2's results must satisfy: the shapes and counts of its records, and
    that the recorded numbers and words agree with the results they were recorded from. Takes
    the results as written or as read back (`to_jsonable` makes the two the same: JSON keys are
    strings)."""
    results = to_jsonable(results)
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
    # The numbers the prose cites (lib.book.record): each with its format and text, and each
    # agreeing with the result it was recorded from.
    recorded = results["recorded"]
    assert all(entry.keys() == {"value", "format", "text"} for entry in recorded.values())
    assert recorded["main.final_loss"]["value"] == results["final_loss"]
    assert recorded["study.seeds"]["value"] == seeds
    unreachable = study["n_max"]
    assert recorded["study.common_lengths"]["value"] == ", ".join(length_name(k, unreachable)
                                                                  for k in study["common_lengths"])
    assert recorded["order.groups"]["value"] == len(study["order"]["groups"])
    assert recorded["order.one_at_a_time"]["value"] == verdict(results["findings"]["one_length_at_a_time"]["holds"],
                                                               yes="holds", no="does not hold")
    assert recorded["main.beats_baseline"]["value"] == verdict(
        results["findings"]["beats_baseline_tenfold"]["holds"],
        yes="it computes distances rather than guessing", no="it does not beat that guess tenfold")
    hardest = recorded["main.hardest"]["value"]
    assert results["loss_by_length"][str(hardest)] == max(results["loss_by_length"].values())
