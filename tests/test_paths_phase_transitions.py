"""The drop detector of chapter 2 (lib.paths.phase_transitions) on synthetic loss curves with
known answers: a clean step, a slow ramp, a flat line, a noisy plateau with one spike, a
constant prediction passing through a length's value, a noise blip that recovers, a dip that
comes back, a fall with no plateau before it."""

import math

import pytest
import torch

from lib.paths.phase_transitions import (
    COMES_BACK, NO_FALL, NO_PLATEAU, NOT_FLAT, NOT_HELD, TOO_SMALL, TOO_WIDE, DropSettings, detect_drop, detect_drops,
    drop_order, running_median,
)

STEPS = list(range(0, 301, 5))


def noise(seed: int, scale: float) -> list[float]:
    return (scale * torch.randn(len(STEPS), generator=torch.Generator().manual_seed(seed))).tolist()


def clean_step(at: int = 100, high: float = 16.0, low: float = 0.01, over: int = 15) -> list[float]:
    """log-loss flat at `high`, then linear in log down to `low` over `over` steps, then flat."""
    top, bottom = math.log10(high), math.log10(low)
    return [10 ** (top if s <= at else bottom if s >= at + over else top + (bottom - top) * (s - at) / over)
            for s in STEPS]


def test_a_clean_step_is_a_drop_dated_inside_the_fall():
    drop = detect_drop(STEPS, clean_step())
    assert drop.dropped and drop.reason == ""
    assert 100 <= drop.step <= 115
    assert drop.plateau == pytest.approx(16.0) and drop.after == pytest.approx(0.01)
    assert drop.decades == pytest.approx(math.log10(1600))
    assert drop.start >= 95 and drop.end <= 120 and drop.width <= 20


def test_a_slow_ramp_is_no_drop_however_far_it_falls():
    ramp = [10 ** (1.2 - 2.0 * s / 300) for s in STEPS]   # two decades over 300 steps
    drop = detect_drop(STEPS, ramp)
    assert not drop.dropped and drop.step is None and drop.plateau is None
    assert drop.reason == TOO_WIDE


def test_a_flat_line_is_no_drop():
    drop = detect_drop(STEPS, [5.0] * len(STEPS))
    assert not drop.dropped and drop.reason == NO_FALL
    wiggling = [5.0 * 10 ** e for e in noise(1, 0.05)]
    drop = detect_drop(STEPS, wiggling)
    assert not drop.dropped and drop.reason == TOO_SMALL


def test_a_noisy_plateau_with_one_spike_is_no_drop():
    curve = [10.0 * 10 ** e for e in noise(2, 0.05)]
    curve[30] *= 100   # one evaluation two decades up, then straight back
    assert not detect_drop(STEPS, curve).dropped
    # Without the running median the way back down from the spike is steep and large, but it
    # has no flat plateau before it: the curve rose into it one point earlier.
    drop = detect_drop(STEPS, curve, DropSettings(smoothing=1))
    assert not drop.dropped and drop.reason == NOT_FLAT


def test_a_noisy_step_is_still_found_and_a_fall_from_the_first_steps_is_not():
    curve = [v * 10 ** e for v, e in zip(clean_step(at=150), noise(3, 0.1))]
    drop = detect_drop(STEPS, curve)
    assert drop.dropped and 140 <= drop.step <= 170
    early = [200.0 if s < 10 else 20.0 for s in STEPS]   # the model learning the mean label
    drop = detect_drop(STEPS, early)
    assert not drop.dropped
    drop = detect_drop(STEPS, early, DropSettings(min_plateau=5))
    assert not drop.dropped and drop.reason == NO_PLATEAU


def test_the_largest_fall_is_the_transition_not_a_later_wiggle():
    curve = clean_step(at=60, low=0.05)
    for i, s in enumerate(STEPS):   # a learned length's loss bumps up once and falls back fast
        if 200 <= s < 230:
            curve[i] = 1.0
    drop = detect_drop(STEPS, curve)
    assert drop.dropped and 60 <= drop.step <= 75


def test_missing_points_are_skipped_and_every_length_gets_a_result():
    curve = clean_step()
    curve[5] = math.nan
    drops = detect_drops(STEPS, {1: curve, 2: [3.0] * len(STEPS)})
    assert drops[1].dropped and not drops[2].dropped
    assert running_median([1.0, math.nan, 3.0, 2.0], 3) == [2.0, math.nan, 2.0, 2.5]


def test_the_order_of_learning_keeps_only_what_holds_in_every_seed():
    seeds = [{1: 50, 2: 120, 3: 130, 4: None, 5: 80}, {1: 60, 2: 140, 3: 110, 4: None, 5: None},
             {1: 40, 2: 100, 3: 150, 4: None, 5: 90}]
    order = drop_order(seeds)
    assert order.groups == ((1,), (2, 3)) and order.sometimes == (5,) and order.never == (4,)
    assert not order.holds_over_seeds
    strict = drop_order([{1: 50, 2: 120}, {1: 60, 2: 110}])
    assert strict.groups == ((1,), (2,)) and strict.holds_over_seeds
    tied = drop_order([{1: 50, 2: 50}])
    assert tied.groups == ((1, 2),)


def passing_constant(length: float, start: float = 7.5, stop: float = 5.5) -> list[float]:
    """(c - length)^2 for a constant prediction c moving linearly from `start` to `stop` over
    the steps: the loss of a length while one constant stands in for every graph."""
    return [(start + (stop - start) * s / STEPS[-1] - length) ** 2 + 1e-4 for s in STEPS]


def test_a_constant_passing_through_lengths_6_and_7_gives_no_drop():
    for length in (6, 7):
        curve = passing_constant(length)
        drop = detect_drop(STEPS, curve)
        assert not drop.dropped, (length, drop)
    # The same constant sweeping faster, after a flat stretch, still comes back up.
    fast = [(6.5 if s < 100 else max(5.0, 6.5 - (s - 100) / 40)) for s in STEPS]
    drop = detect_drop(STEPS, [(c - 6) ** 2 + 1e-4 for c in fast])
    assert not drop.dropped and drop.reason in (COMES_BACK, NOT_FLAT)


def test_a_step_after_a_flat_plateau_is_a_drop_at_every_flatness_and_hold():
    curve = [v * 10 ** e for v, e in zip(clean_step(at=150), noise(4, 0.03))]
    for settings in (DropSettings(), DropSettings(min_plateau=40, min_hold=60), DropSettings(flatness=0.15)):
        drop = detect_drop(STEPS, curve, settings)
        assert drop.dropped and 150 <= drop.step <= 165


def test_the_recovery_from_a_noise_blip_is_no_drop():
    low = [0.001 * 10 ** e for e in noise(5, 0.03)]
    blip = [v * (30 if 150 <= s <= 165 else 1) for v, s in zip(low, STEPS)]   # four points up, then back
    drop = detect_drop(STEPS, blip)
    assert not drop.dropped and drop.reason in (NOT_FLAT, TOO_SMALL)


def test_a_dip_that_comes_back_is_no_drop():
    dip = [16.0 if not 150 <= s <= 175 else 0.05 for s in STEPS]
    drop = detect_drop(STEPS, dip)
    assert not drop.dropped and drop.reason == COMES_BACK


def test_a_fall_with_no_flat_plateau_before_it_is_no_drop():
    # Rising by two decades over 40 steps, then straight down: steep and large, but the top is a peak.
    curve = [10 ** (-1 + max(0, s - 60) / 20) if s <= 100 else 10 ** (1 - 3 * min(1, (s - 100) / 15))
             for s in STEPS]
    drop = detect_drop(STEPS, curve)
    assert not drop.dropped and drop.reason == NOT_FLAT


def test_a_fall_too_close_to_the_end_is_not_yet_a_drop():
    drop = detect_drop(STEPS, clean_step(at=280))
    assert not drop.dropped and drop.reason == NOT_HELD
