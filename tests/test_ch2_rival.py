"""Chapter 2's drops against their rivals (lib.paths.transition_verdicts, tables in lib.chapters.ch2_results) on hand-made study curves: two
seeds in which length 1 is learned, which moves the constant the model predicts for the rest,
so that length 6's loss falls with it; length 2 is learned later in one seed only."""

import torch

from lib.chapters.ch2_results import (
    group_names, length_verdict_table, main_run_table, rival_table, sensitivity_table,
)
from lib.paths.transition_verdicts import (
    analyse_study, chapter_findings, common_lengths, held_only, held_steps, length_counts, one_length_at_a_time,
    study_counts, study_findings, study_sensitivity,
)
from lib.paths.drop_sensitivity import SENSITIVITY_RANGES
from lib.paths.phase_transitions import DropSettings, drop_order
from lib.paths.training import PathTrainingConfig
from lib.paths.transition_study import TransitionCurves

STEPS = tuple(range(0, 301, 5))
LENGTHS = (1, 2, 6, 10)
SHARES = {1: 0.25, 2: 0.25, 6: 0.25, 10: 0.25}


def ramp(before, after, at, over=10):
    return [before if s <= at else after if s >= at + over else before + (after - before) * (s - at) / over
            for s in STEPS]


def seed_curves(learn_1_at: int, learn_2_at: int | None):
    constant = ramp(4.75, 6.0, learn_1_at)
    means = {1: ramp(4.75, 1.0, learn_1_at), 6: constant, 10: constant,
             2: constant if learn_2_at is None else [c if s < learn_2_at else 2.0 for c, s in zip(constant, STEPS)]}
    losses = {k: [(m - k) ** 2 + 1e-3 for m in means[k]] for k in LENGTHS}
    return ([losses[k] for k in LENGTHS], [means[k] for k in LENGTHS])


def make_curves() -> TransitionCurves:
    seeds = [seed_curves(100, 200), seed_curves(80, None)]
    loss = torch.tensor([s[0] for s in seeds], dtype=torch.float64).transpose(1, 2)
    mean = torch.tensor([s[1] for s in seeds], dtype=torch.float64).transpose(1, 2)
    return TransitionCurves((0, 1), STEPS, LENGTHS, loss, (1.0, 1.0), PathTrainingConfig(n_max=10), mean)


def test_the_constant_passing_length_6_is_no_transition_and_length_1_holds_everywhere():
    curves = make_curves()
    settings = DropSettings()
    analyses = analyse_study(curves, SHARES, settings)
    assert all(a.drops[6].dropped and not a.verdicts[6].transition for a in analyses)
    assert all(a.verdicts[1].transition for a in analyses)
    assert analyses[0].verdicts[2].transition and not analyses[1].drops[2].dropped
    sens = study_sensitivity(curves, SHARES, settings)
    assert len(sens.rows) == sum(len(v) for v in SENSITIVITY_RANGES.values())
    assert sens.held_count(1) == 2 and sens.held_count(6) == 0 and sens.held_count(2) == 1
    common = common_lengths(LENGTHS, SHARES)
    order = drop_order(held_steps(sens, 2, common))
    assert order.groups == ((1,),) and order.sometimes == (2,) and order.never == (6, 10)
    assert group_names(order, 10) == [["1"]] and one_length_at_a_time(order) is False
    assert group_names(drop_order([{1: 40, 2: 80, 10: 60}, {1: 40, 2: 60, 10: 80}]), 10) == [["1"], ["2", "unreachable"]]
    found = study_findings(analyses, sens, order, common, 10)
    assert found["length_1_transition_holds_in_every_seed"] == {"holds": True, "events": 2, "seeds": 2}
    assert found["length_2_transition_holds_in_every_seed"] == {"holds": False, "events": 1, "seeds": 2}
    assert found["one_length_at_a_time"]["holds"] is False
    assert not held_only(analyses, sens)[0][6].dropped and held_only(analyses, sens)[0][1].dropped
    table = rival_table(analyses, sens, LENGTHS, SHARES, 10)
    assert "| 6 | 25.0% | 2 of 2 | 0 of 2 | 0 of 2 |" in table
    assert len(sensitivity_table(sens).splitlines()) == 2 + len(sens.rows)
    counts = study_counts(analyses, sens, common)
    # Drops: length 1 and 6 in both seeds, length 2 in seed 0; transitions: length 1 twice, length 2 once.
    assert (counts.seeds, counts.lengths, counts.drops, counts.transitions, counts.held) == (2, 4, 5, 3, 3)
    assert (counts.drops_beyond_1, counts.transitions_beyond_1, counts.held_beyond_1) == (3, 1, 1)
    assert len(counts.length_1_held_steps) == 2
    by_length = {c.length: c for c in length_counts(analyses, sens, common)}
    six = by_length[6]
    assert (six.dropped, six.ruled_out, six.held, six.first_not_ruled) == (2, 0, 0, 0) and six.first_not_ruled_reason
    assert (by_length[2].dropped, by_length[2].ruled_out, by_length[2].held) == (1, 1, 1)
    assert by_length[10].dropped == 0 and by_length[10].first_seed_reason
    assert len(length_verdict_table(list(by_length.values()), 10).splitlines()) == 2 + len(common)
    summary = {"final_loss": 0.01, "constant_prediction_loss": 5.0}
    findings = chapter_findings(summary, analyses, sens, order, common, 10, sens)
    assert findings["beats_baseline_tenfold"] == {"holds": True, "events": 1, "seeds": 1}
    # The study's table stands in for the main run's: seed 0's length 2 holds there.
    assert list(findings)[1:-1] == list(found) and findings["main_run_length_2_transition_holds"]["holds"] is True


def test_the_main_run_table_has_one_row_per_label_with_its_drop_and_verdict():
    curves = make_curves()
    analyses = analyse_study(curves, SHARES, DropSettings())
    sens = study_sensitivity(curves, SHARES, DropSettings())
    rows = main_run_table(analyses[0], sens, LENGTHS, 10).splitlines()[2:]
    assert len(rows) == len(LENGTHS)
    cells = {row.split(" | ")[0].strip("| "): row.split(" | ") for row in rows}
    assert cells["1"][4:6] == ["yes", "yes"]            # length 1: a transition that holds
    assert cells["6"][4:6] == ["no", "no"]              # length 6: a drop, the rival not ruled out
    assert cells["unreachable"][1] == "no drop"
