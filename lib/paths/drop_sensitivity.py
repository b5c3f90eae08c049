"""Which drops survive every reasonable setting of the drop detector? (chapter 2)

`lib.paths.phase_transitions.detect_drop` has settings (how far a loss must fall, how fast, over
which window, after how long a flat plateau, held how long, smoothed over how many points), and
a drop found at one choice of them may vanish at another. `sensitivity` reruns a whole analysis
(detection and the constant-rival verdict of `lib.paths.constant_rival`) once per value of each
setting, one setting at a time with the others at their defaults, over `SENSITIVITY_RANGES`,
and reports per row how many drops and transitions it finds. A transition *holds* when it is
found at every row of the table, each time dated within the default drop's fall (from its start
to its end, widened by `slack` steps on each side).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from lib.paths.phase_transitions import DropSettings

#: The values each setting takes in the table (the default value is among them). Most range
#: from about half to one and a half times the default. `max_width` only widens: it is there to
#: exclude slow ramps, and a narrower bar excludes the clearest fall the study has, length 1's
#: (three decades whose 10%-90% width is 45-50 steps at the chapter's defaults). `smoothing`
#: keeps a running median (3 to 7 points): without one, single noisy evaluations decide.
SENSITIVITY_RANGES: dict[str, tuple] = {
    "min_decades": (0.3, 0.4, 0.5, 0.6, 0.75),
    "window": (30, 45, 60, 90),
    "max_width": (60, 75, 90),
    "min_plateau": (10, 15, 20, 25),
    "flatness": (0.1, 0.2, 0.3),
    "min_hold": (15, 30, 45, 60),
    "smoothing": (3, 5, 7),
}

#: What an analysis returns for one setting: {(seed, length): (drop step or None, transition, start, end)}.
Found = Mapping[tuple[int, int], tuple[int | None, bool, int | None, int | None]]


@dataclasses.dataclass(frozen=True)
class SensitivityRow:
    """The analysis at one value of one setting (the others at their defaults).

    Attributes:
        setting, value: the setting changed and its value.
        drops: (seed, length) with a drop at this value.
        transitions: (seed, length) whose drop is a transition at this value, with its step.
    """

    setting: str
    value: float
    drops: tuple[tuple[int, int], ...]
    transitions: dict[tuple[int, int], int]


@dataclasses.dataclass(frozen=True)
class Sensitivity:
    """The sensitivity table of the drop detector and what holds across it.

    Attributes:
        base: the default settings.
        rows: one per (setting, value), in the order of `SENSITIVITY_RANGES`.
        default: the analysis at the defaults.
        holds: (seed, length) of the default transitions found at every row within the
            default drop's fall, with their default step.
        step_range: for each of `holds`, the earliest and latest step over the rows.
        slack: steps by which a row's transition may lie outside the default drop's fall.
    """

    base: DropSettings
    rows: tuple[SensitivityRow, ...]
    default: dict
    holds: dict[tuple[int, int], int]
    step_range: dict[tuple[int, int], tuple[int, int]]
    slack: int = 10

    def same_transition(self, key: tuple[int, int], step: int | None) -> bool:
        """Whether a row's transition at `step` is the default transition `key` (within its fall)."""
        _, _, start, end = self.default[key]
        return step is not None and start - self.slack <= step <= end + self.slack

    def lost_at(self, key: tuple[int, int]) -> list[tuple[str, float, int | None]]:
        """(setting, value, the row's step or None) of every row where the default transition
        `key` is missing (None) or dated outside its fall: why it does not hold."""
        return [(row.setting, row.value, row.transitions.get(key)) for row in self.rows
                if not self.same_transition(key, row.transitions.get(key))]

    def held_count(self, length: int) -> int:
        """In how many seeds the transition of `length` holds across the table."""
        return sum(1 for (_, k) in self.holds if k == length)

    def found_everywhere_count(self, length: int, kind: str = "drops") -> int:
        """In how many seeds `length` has a drop (kind "drops") or a transition ("transitions")
        at every row of the table (at any step)."""
        seeds = {seed for (seed, k) in self.default if k == length}
        return sum(1 for seed in seeds if all((seed, length) in (set(row.drops) if kind == "drops" else row.transitions)
                                              for row in self.rows))

    def table_rows(self) -> list[dict]:
        """Plain rows: setting, value, drop and transition counts, and how many default
        transitions each row loses."""
        default_transitions = {key for key, found in self.default.items() if found[1]}
        return [{"setting": row.setting, "value": row.value, "drops": len(row.drops),
                 "transitions": len(row.transitions),
                 "default_transitions_lost": len(default_transitions - set(row.transitions))}
                for row in self.rows]

    def to_dict(self) -> dict:
        return {"base": self.base.to_dict(), "ranges": {k: list(v) for k, v in SENSITIVITY_RANGES.items()},
                "rows": self.table_rows(),
                "holds": [[seed, length, step] for (seed, length), step in sorted(self.holds.items())],
                "step_range": [[seed, length, *span] for (seed, length), span in sorted(self.step_range.items())]}


def sensitivity(analyse: Callable[[DropSettings], Found], base: DropSettings = DropSettings(), *,
                ranges: Mapping[str, Sequence] = SENSITIVITY_RANGES, slack: int = 10) -> Sensitivity:
    """Run `analyse` at every value of every setting in `ranges` (the others as in `base`).

    Args:
        analyse: settings -> {(seed, length): (drop step or None, is a transition, start, end)}
            for every seed and length analysed.
        base: the default settings.
        ranges: {setting name: values}.
        slack: steps by which a row's transition may lie outside the default drop's fall and
            still be the same transition.
    """
    default = dict(analyse(base))
    rows = []
    for setting, values in ranges.items():
        for value in values:
            found = default if getattr(base, setting) == value else analyse(dataclasses.replace(base, **{setting: value}))
            rows.append(SensitivityRow(
                setting, value, tuple(sorted(key for key, f in found.items() if f[0] is not None)),
                {key: f[0] for key, f in sorted(found.items()) if f[1]}))
    table = Sensitivity(base, tuple(rows), default, {}, {}, slack)
    for key, (step, transition, _, _) in sorted(default.items()):
        if transition and not table.lost_at(key):
            steps = [row.transitions[key] for row in rows]
            table.holds[key] = step
            table.step_range[key] = (min(steps), max(steps))
    return table


__all__ = ["SENSITIVITY_RANGES", "Sensitivity", "SensitivityRow", "sensitivity"]
