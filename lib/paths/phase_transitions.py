"""When does the model learn each path length? Drops in the loss curve of each length (chapter 2).

The study saw the loss of each path length sit on a plateau and then fall by orders of
magnitude within a few dozen steps, length 1 first [@wang2024shortest]. `detect_drop` turns one
such curve into numbers instead of reading them off a plot:

1. the curve is taken in log10 and smoothed by a centred running median over `smoothing`
   points (a median keeps the edge of a step where it is and removes a single spike);
2. its slope is taken by central differences; the candidates are the points with at least
   `min_plateau` steps of curve before them, steepest first;
3. around a candidate, the level before is the highest smoothed value within `window` steps
   before it and the level after the lowest within `window` steps after it; the drop's size is
   their difference in decades, its start and end the last point before and the first point
   after it that lie within 10% of the size from those levels, its width end minus start;
4. the candidate is a drop when it falls by at least `min_decades`, within `max_width` steps,
   from a flat plateau, and stays down:
   - flat plateau: at least `min_plateau` steps of curve before the drop's start, over which
     the smoothed log-loss stays within `flatness` decades of the level before (a curve
     that was still falling into the "plateau", or that rose into it shortly before, as in the
     recovery from a noise blip, has none);
   - stays down: the curve goes on for at least `min_hold` steps after the drop's end, and over
     them the smoothed log-loss stays below the level before by at least `min_decades` and at
     least half the fall (a dip that comes back does not, nor the V that a length's loss
     (c - d)^2 draws in log scale while a moving prediction c passes through its value d).
   The plateau level is the level before (the top of the smoothed curve before the fall).

Of the candidates that are drops, the one with the largest fall is the transition (once a
length is learned its loss still wiggles, by less), dated by the steepest point of the smoothed
curve between its start and end; when no
candidate is a drop, the curve has "no drop" and the steepest candidate says why (too small a
fall, too slow, no flat plateau before it, or it does not stay down). A slow ramp falls too
slowly, a flat line not at all, a spike on a plateau is smoothed away, and the fall of the
first steps (the model learning the mean label) has no plateau before it.

A drop in one length's curve is not yet a transition of that length: the loss of a length can
also fall because one prediction shared by many lengths moves towards it.
`lib.paths.constant_rival` judges each drop against that rival, and
`lib.paths.drop_sensitivity` reruns the detector over a range of each setting.

`drop_order` reads the order of learning off several seeds: the lengths are split into groups
that drop one group after the other in every seed.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence


def running_median(values: Sequence[float], window: int) -> list[float]:
    """Centred running median over the valid (non-NaN) values; NaN entries stay NaN.

    Windows are taken over valid values only, so a gap (a point without data) does not shorten
    the median around it; near the ends the window is cut short.
    """
    if window < 1:
        raise ValueError("window must be at least 1")
    positions = [i for i, v in enumerate(values) if v is not None and not math.isnan(v)]
    valid = [values[i] for i in positions]
    half = window // 2
    smoothed = [math.nan] * len(values)
    for rank, position in enumerate(positions):
        neighbourhood = valid[max(0, rank - half): rank + half + 1]
        smoothed[position] = statistics.median(neighbourhood)
    return smoothed


@dataclasses.dataclass(frozen=True)
class DropSettings:
    """What counts as a drop (see the module docstring; steps are training steps).

    Attributes:
        smoothing: points in the running median of the log-loss.
        window: steps on each side of a candidate over which the levels before and after it
            are read.
        min_decades: smallest fall (log10 of the ratio of the levels) that counts.
        max_width: most steps the fall from 10% to 90% of its size may take.
        min_plateau: fewest steps of flat curve before the drop's start (the plateau).
        flatness: how far (decades) the smoothed log-loss may stray from the level before over
            the plateau.
        min_hold: fewest steps after the drop's end over which the fall must hold (the curve
            stays below the level before by at least `min_decades` and half the fall).
    """

    smoothing: int = 5
    window: int = 60
    min_decades: float = 0.5
    max_width: int = 60
    min_plateau: int = 20
    flatness: float = 0.2
    min_hold: int = 30

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Drop:
    """The drop of one loss curve, or why it has none.

    Attributes:
        dropped: whether the curve has a drop.
        step: the step of steepest descent of the smoothed log-loss (None: no drop).
        plateau: the loss on the plateau before the drop (the highest smoothed loss within
            `window` steps before it; None: no drop).
        after: the lowest smoothed loss within `window` steps after the drop (None: no drop).
        decades: the fall, log10(level before / level after), at the steepest candidate (also
            when it is not a drop).
        width: steps from 10% to 90% of the fall (None: no drop).
        start, end: the steps where the fall starts and ends (None: no drop).
        reason: "" for a drop, else why the steepest candidate is none (one of the labels
            `NO_FALL`, `TOO_SMALL`, `TOO_WIDE`, `NO_PLATEAU`, `NOT_FLAT`, `NOT_HELD`, `COMES_BACK`).
    """

    dropped: bool
    step: int | None
    plateau: float | None
    after: float | None
    decades: float
    width: int | None
    start: int | None
    end: int | None
    reason: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


#: Why the steepest candidate of a curve is not a drop (`Drop.reason`): fixed labels, each naming
#: the `DropSettings` field it failed; the fall itself is `Drop.decades`.
NO_FALL = "the curve does not fall"
TOO_SMALL = "falls less than min_decades"
TOO_WIDE = "falls over more than max_width steps"
NO_PLATEAU = "falls from the first steps, with no plateau of min_plateau steps before"
NOT_FLAT = "no flat plateau in the min_plateau steps before its fall"
NOT_HELD = "ends before its fall has held for min_hold steps"
COMES_BACK = "comes back up within min_hold steps"


def _candidate(steps: list[int], smoothed: list[float], i: int, settings: DropSettings) -> Drop:
    """The drop around point `i` of a smoothed log10 curve (judged, not yet accepted)."""
    t = steps[i]
    before = [j for j in range(i + 1) if steps[j] >= t - settings.window]
    after = [j for j in range(i, len(steps)) if steps[j] <= t + settings.window]
    high = max(smoothed[j] for j in before)
    low = min(smoothed[j] for j in after)
    size = high - low
    if size <= 0:
        return Drop(False, None, None, None, 0.0, None, None, None, NO_FALL)
    start = max(j for j in before if smoothed[j] >= high - 0.1 * size)
    end = min(j for j in after if smoothed[j] <= low + 0.1 * size)
    width = steps[end] - steps[start]
    has_plateau = steps[start] - steps[0] >= settings.min_plateau
    plateau = [smoothed[j] for j in range(start + 1) if steps[j] >= steps[start] - settings.min_plateau]
    flat = max(abs(v - high) for v in plateau) <= settings.flatness
    held = [smoothed[j] for j in range(end, len(steps)) if steps[j] <= steps[end] + settings.min_hold]
    if size < settings.min_decades:
        reason = TOO_SMALL
    elif width > settings.max_width:
        reason = TOO_WIDE
    elif not has_plateau:
        reason = NO_PLATEAU
    elif not flat:
        reason = NOT_FLAT
    elif steps[-1] - steps[end] < settings.min_hold:
        reason = NOT_HELD
    elif max(held) > high - max(settings.min_decades, size / 2):
        reason = COMES_BACK
    else:
        return Drop(True, t, 10 ** high, 10 ** low, size, width,
                    steps[start], steps[end], "")
    return Drop(False, None, None, None, size, None, None, None, reason)


def detect_drop(steps: Sequence[int], losses: Sequence[float], settings: DropSettings = DropSettings()) -> Drop:
    """The drop of one loss curve (see the module docstring).

    Args:
        steps: increasing training steps.
        losses: the loss at each step (positive; NaN marks a missing point).
        settings: what counts as a drop.
    """
    points = [(int(s), math.log10(v)) for s, v in zip(steps, losses)
              if v is not None and not math.isnan(v) and v > 0]
    if len(points) < 3:
        return Drop(False, None, None, None, 0.0, None, None, None, "too few points")
    times = [s for s, _ in points]
    smoothed = running_median([v for _, v in points], settings.smoothing)
    slopes = {i: (smoothed[i + 1] - smoothed[i - 1]) / (times[i + 1] - times[i - 1])
              for i in range(1, len(times) - 1) if times[i] - times[0] >= settings.min_plateau}
    falling = sorted((i for i in slopes if slopes[i] < 0), key=lambda i: (slopes[i], i))
    if not falling:
        return Drop(False, None, None, None, 0.0, None, None, None, NO_FALL)
    judged = [_candidate(times, smoothed, i, settings) for i in falling]
    drops = [drop for drop in judged if drop.dropped]
    if not drops:
        return judged[0]
    # The largest fall is the transition (a learned length's later wiggles fall less); its
    # step is the steepest point within it.
    largest = max(drops, key=lambda drop: (round(drop.decades, 9), -drop.step))
    steepest = min((i for i in slopes if largest.start <= times[i] <= largest.end), key=lambda i: (slopes[i], i))
    return dataclasses.replace(largest, step=times[steepest])


def detect_drops(steps: Sequence[int], curves: Mapping[int, Sequence[float]],
                 settings: DropSettings = DropSettings()) -> dict[int, Drop]:
    """`detect_drop` for every length's curve ({length: losses})."""
    return {length: detect_drop(steps, curve, settings) for length, curve in curves.items()}


@dataclasses.dataclass(frozen=True)
class DropOrder:
    """The order of learning over several seeds.

    Attributes:
        groups: lengths with a drop in every seed, in groups such that every length of a group
            drops before every length of the next group in every seed (strictly earlier step);
            within a group the order changes between seeds.
        sometimes: lengths that drop in some seeds but not in all.
        never: lengths that drop in no seed.
    """

    groups: tuple[tuple[int, ...], ...]
    sometimes: tuple[int, ...]
    never: tuple[int, ...]

    @property
    def holds_over_seeds(self) -> bool:
        """Every length with a drop in every seed has its own place in the order."""
        return all(len(group) == 1 for group in self.groups)


def drop_order(steps_by_seed: Sequence[Mapping[int, int | None]]) -> DropOrder:
    """Split the lengths into groups that drop one after the other in every seed.

    Args:
        steps_by_seed: per seed, {length: drop step or None}.
    """
    lengths = sorted(set().union(*(s.keys() for s in steps_by_seed)))
    always = [k for k in lengths if all(s.get(k) is not None for s in steps_by_seed)]
    never = tuple(k for k in lengths if all(s.get(k) is None for s in steps_by_seed))
    sometimes = tuple(k for k in lengths if k not in always and k not in never)
    ordered = sorted(always, key=lambda k: (statistics.median(s[k] for s in steps_by_seed), k))
    groups, current = [], []
    for position, length in enumerate(ordered):
        current.append(length)
        rest = ordered[position + 1:]
        separated = all(s[a] < s[b] for s in steps_by_seed for a in ordered[:position + 1] for b in rest)
        if separated:
            groups.append(tuple(current))
            current = []
    return DropOrder(tuple(groups), sometimes, never)


__all__ = [
    "COMES_BACK", "NO_FALL", "NO_PLATEAU", "NOT_FLAT", "NOT_HELD", "TOO_SMALL", "TOO_WIDE", "Drop", "DropOrder",
    "DropSettings", "detect_drop", "detect_drops", "drop_order", "running_median",
]
