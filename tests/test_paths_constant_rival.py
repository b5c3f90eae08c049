"""The constant rival of chapter 2's drops (lib.paths.constant_rival) on a hand-made case: four
labels, length 1 learned at step 100, which moves the one constant the model predicts for the
others from their common mean 4.75 to 6; length 6's loss falls with it, from (4.75 - 6)^2 to
nearly nothing, and is no transition; length 2, learned later, is."""

import math

import pytest

from lib.paths.constant_rival import NOT_BELOW_MODEL_CONSTANT, best_constant, judge_drops, shares_of
from lib.paths.phase_transitions import DropSettings, detect_drops

STEPS = list(range(0, 301, 5))
SHARES = {1: 0.25, 2: 0.25, 6: 0.25, 10: 0.25}


def ramp(before: float, after: float, at: int, over: int = 10) -> list[float]:
    return [before if s <= at else after if s >= at + over else before + (after - before) * (s - at) / over
            for s in STEPS]


def hand_made(length_2_learned: bool = True):
    """Mean predictions and losses per label: a constant 4.75 for everyone, then length 1 is
    learned (its own prediction goes to 1) and the constant of the rest moves to 6; at step 200
    length 2's prediction leaves the constant for 2 (when `length_2_learned`)."""
    constant = ramp(4.75, 6.0, 100)
    means = {1: ramp(4.75, 1.0, 100), 6: constant, 10: constant,
             2: [c if s < 200 or not length_2_learned else 2.0 for c, s in zip(constant, STEPS)]}
    # Loss = (mean - label)^2 + the spread of the predictions (small once a length is learned).
    spread = {1: 1e-3, 2: 1e-3, 6: 1e-3, 10: 1e-3}
    losses = {k: [(m - k) ** 2 + spread[k] for m in means[k]] for k in means}
    return losses, means


def test_the_best_constant_is_the_mean_label_of_the_graphs_not_yet_learned():
    assert best_constant(SHARES, [1, 2, 6, 10]) == pytest.approx(4.75)
    assert best_constant(SHARES, [2, 6, 10]) == pytest.approx(6.0)
    assert shares_of([1, 1, 2, 15]) == {1: 0.5, 2: 0.25, 15: 0.25}


def test_a_length_that_the_moving_constant_reaches_has_a_drop_but_no_transition():
    losses, means = hand_made()
    settings = DropSettings()
    drops = detect_drops(STEPS, losses, settings)
    assert drops[1].dropped and drops[6].dropped and drops[2].dropped   # the detector alone sees three
    verdicts = judge_drops(STEPS, drops, losses, means, SHARES, settings)
    assert verdicts[1].transition and verdicts[2].transition
    six = verdicts[6]
    assert not six.transition and 1 not in six.unlearned and six.best_constant == pytest.approx(6.0)
    assert six.model_constant == pytest.approx(6.0) and six.margin < settings.min_decades
    assert six.reason == NOT_BELOW_MODEL_CONSTANT   # the others sit at 6 too: the model's own constant
    # Length 1 is judged with every label unlearned: the best constant 4.75 would give it 14.06.
    assert verdicts[1].best_constant_loss == pytest.approx(3.75 ** 2)
    # Length 2 leaves the constant 6 of the others (2 and 10 still at 6): its loss is decades below 16.
    assert verdicts[2].model_constant_loss == pytest.approx(16.0) and verdicts[2].margin > 3


def test_a_length_that_only_moves_with_the_constant_is_no_transition():
    losses, means = hand_made(length_2_learned=False)
    # Length 2's loss falls with the constant moving towards it (here: from 6 down to 3).
    means[2] = ramp(6.0, 3.0, 200)
    means[10] = ramp(6.0, 3.0, 200)
    means[6] = ramp(6.0, 3.0, 200)
    losses = {k: [(m - k) ** 2 + 1e-3 for m in means[k]] for k in means}
    settings = DropSettings(min_decades=0.3)
    drops = detect_drops(STEPS, losses, settings)
    assert drops[2].dropped
    verdict = judge_drops(STEPS, drops, losses, means, SHARES, settings)[2]
    assert not verdict.transition and verdict.model_constant == pytest.approx(3.0)
    # Against the best constant alone (6, its plateau) the fall would have passed.
    assert math.log10(verdict.best_constant_loss / verdict.loss_after) > settings.min_decades
