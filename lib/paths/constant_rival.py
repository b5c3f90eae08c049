"""Is a drop a transition of its length, or one constant prediction moving? (chapter 2)

The loss of a path length d can fall in two ways. The model may learn to tell graphs of length
d apart from the rest, or it may still predict one constant c for every graph it has not yet
learned, and that constant moves closer to d: the loss of d is then (c - d)^2 for every d at
once, and a length near the constant's path "drops" without being learned. This module judges
each drop of `lib.paths.phase_transitions.detect_drop` against that rival, with the model's mean
prediction on each length logged beside its loss.

The rule (`judge_drops`). The loss of length d is read over the `min_hold` steps after its
drop's end (`DropSettings`, the steps over which the detector saw the fall hold). The graphs
"not yet learned" then are those of every label (d included) except the labels with a
transition dated (its steepest point) no later than the end of those steps. Over those steps
the median loss of length d must lie at least `min_decades` decades below both

1. the loss the best single constant for the not-yet-learned graphs would give it,
   (c_U - d)^2, where c_U is the mean label of those graphs under the training distribution
   (`shares`): the constant with the least squared error on them. A constant has no spread, so
   no variance term enters a length's loss; the model's own loss of d is
   (m_d - d)^2 + the variance of its predictions on d's graphs, at least (m_d - d)^2; and
2. the loss the model's own constant would give it: (c_model - d)^2, with c_model the model's
   mean prediction on the other not-yet-learned lengths it is scored on (weighted by their
   shares), step by step over the same steps. If the model predicted one constant for all of
   them, d's mean prediction would be that constant and d's loss at least (c_model - d)^2.

Only then is the drop a transition and the rival ruled out for that length. A length whose
loss falls because the shared constant passed by, or settled near it, ends at the rival's
loss, not decades below it. When d is the only label left, rule 2 has nothing to compare with
and rule 1 alone decides. Which labels are learned depends on the verdicts, and the verdicts on
which labels are learned (a length near the constant "drops" at the very step at which length 1
is learned and moves the constant): the drops are judged in the order of their steps, again and
again with the verdicts so far, until no verdict changes (at most `MAX_ROUNDS` rounds).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence

from lib.paths.phase_transitions import Drop, DropSettings


@dataclasses.dataclass(frozen=True)
class RivalVerdict:
    """One length's drop judged against the constant rival.

    Attributes:
        transition: whether the drop is a transition (the rival ruled out for this length).
        step: the drop's step (None: the length has no drop).
        unlearned: labels not yet learned at the drop (the length itself included).
        best_constant: c_U, the mean label of those graphs under the training distribution.
        best_constant_loss: (c_U - d)^2.
        model_constant: median over the hold steps of the model's mean prediction on the other
            not-yet-learned lengths it is scored on (None: no other such length).
        model_constant_loss: median over the hold steps of (c_model - d)^2 (None: as above).
        loss_after: median loss of the length over the hold steps.
        mean_after: median mean prediction on the length over the hold steps.
        margin: decades between the lower of the two rival losses and `loss_after`.
        reason: "" for a transition, else why not (`NOT_BELOW_MODEL_CONSTANT`,
            `NOT_BELOW_BEST_CONSTANT`, `NO_DROP`, or the detector's reason for no drop).
    """

    transition: bool
    step: int | None
    unlearned: tuple[int, ...]
    best_constant: float | None
    best_constant_loss: float | None
    model_constant: float | None
    model_constant_loss: float | None
    loss_after: float | None
    mean_after: float | None
    margin: float | None
    reason: str

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["unlearned"] = list(self.unlearned)
        return data


#: Why a length's drop is not a transition (`RivalVerdict.reason`): fixed labels; the losses are
#: the verdict's `loss_after`, `model_constant_loss` and `best_constant_loss`. A length without a
#: drop carries its detector's reason (`lib.paths.phase_transitions`), or `NO_DROP`.
NO_DROP = "no drop"
NOT_BELOW_MODEL_CONSTANT = "loss after the drop not min_decades below (c - d)^2 of the model's own constant"
NOT_BELOW_BEST_CONSTANT = "loss after the drop not min_decades below (c - d)^2 of the best constant"


def best_constant(shares: Mapping[int, float], labels) -> float:
    """The constant with the least squared error on the graphs of `labels`: their mean label
    under the distribution `shares` ({label: share})."""
    weights = {label: shares.get(label, 0.0) for label in labels}
    total = sum(weights.values())
    if total <= 0:
        raise ValueError("the labels have no weight under `shares`")
    return sum(label * weight for label, weight in weights.items()) / total


def _no_drop(reason: str) -> RivalVerdict:
    return RivalVerdict(False, None, (), None, None, None, None, None, None, None, reason)


def judge_drop(steps: Sequence[int], length: int, drop: Drop, losses: Mapping[int, Sequence[float]],
               means: Mapping[int, Sequence[float]], shares: Mapping[int, float], unlearned,
               settings: DropSettings) -> RivalVerdict:
    """One drop of `length` against the constant rival, with `unlearned` the labels not yet
    learned at its step (see the module docstring; `losses` and `means`: {label: curve} on
    `steps`, NaN where missing)."""
    if not drop.dropped:
        return _no_drop(NO_DROP)
    unlearned = tuple(sorted(set(unlearned) | {length}))
    hold = [i for i, s in enumerate(steps) if drop.end <= s <= drop.end + settings.min_hold
            and not math.isnan(losses[length][i])]
    others = [label for label in unlearned if label != length and label in means and shares.get(label, 0) > 0]
    constant = best_constant(shares, unlearned)
    constant_loss = (constant - length) ** 2
    loss_after = statistics.median(losses[length][i] for i in hold)
    mean_after = statistics.median(means[length][i] for i in hold)
    model_constant = model_loss = None
    if others:
        per_step = []
        for i in hold:
            valid = [label for label in others if not math.isnan(means[label][i])]
            if valid:
                per_step.append(sum(shares[label] * means[label][i] for label in valid)
                                / sum(shares[label] for label in valid))
        if per_step:
            model_constant = statistics.median(per_step)
            model_loss = statistics.median((c - length) ** 2 for c in per_step)
    rival = min(constant_loss, model_loss) if model_loss is not None else constant_loss
    margin = math.log10(rival / loss_after) if rival > 0 and loss_after > 0 else (
        math.inf if loss_after <= 0 < rival else -math.inf)
    if margin >= settings.min_decades:
        reason = ""
    elif model_loss is not None and model_loss <= constant_loss:
        reason = NOT_BELOW_MODEL_CONSTANT
    else:
        reason = NOT_BELOW_BEST_CONSTANT
    return RivalVerdict(margin >= settings.min_decades, drop.step, unlearned, constant, constant_loss,
                        model_constant, model_loss, loss_after, mean_after, margin, reason)


#: Most rounds of `judge_drops` (a round judges every drop once, in the order of their steps).
MAX_ROUNDS = 10


def judge_drops(steps: Sequence[int], drops: Mapping[int, Drop], losses: Mapping[int, Sequence[float]],
                means: Mapping[int, Sequence[float]], shares: Mapping[int, float],
                settings: DropSettings) -> dict[int, RivalVerdict]:
    """Every length's drop against the constant rival, in the order of the drops' steps (see the
    module docstring).

    Args:
        steps: the steps of the curves.
        drops: {length: its drop} from `lib.paths.phase_transitions.detect_drops` with `settings`.
        losses, means: {length: loss curve} and {length: mean-prediction curve} on `steps`.
        shares: {label: share of the training distribution}, every label (scored or not).
        settings: the detector's settings (`min_hold` and `min_decades` are used here too).

    Returns:
        {length: its verdict}, for every length of `drops`.
    """
    learned: dict[int, int] = {}
    verdicts = {length: _no_drop(drop.reason or NO_DROP) for length, drop in drops.items() if not drop.dropped}
    ordered = sorted(((k, d) for k, d in drops.items() if d.dropped), key=lambda item: (item[1].step, item[0]))
    for _ in range(MAX_ROUNDS):
        changed = False
        for length, drop in ordered:
            read_until = drop.end + settings.min_hold
            unlearned = [label for label in set(shares) | {length}
                         if label == length or label not in learned or learned[label] > read_until]
            verdict = judge_drop(steps, length, drop, losses, means, shares, unlearned, settings)
            changed |= verdicts.get(length) is None or verdict.transition != verdicts[length].transition
            verdicts[length] = verdict
            if verdict.transition:
                learned[length] = drop.step
            else:
                learned.pop(length, None)
        if not changed:
            break
    return {length: verdicts[length] for length in drops}


def shares_of(labels) -> dict[int, float]:
    """{label: its share} of a sample of labels (a tensor or a sequence)."""
    values = [int(v) for v in (labels.tolist() if hasattr(labels, "tolist") else labels)]
    counts: dict[int, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return {label: counts[label] / len(values) for label in sorted(counts)}


__all__ = [
    "MAX_ROUNDS", "NO_DROP", "NOT_BELOW_BEST_CONSTANT", "NOT_BELOW_MODEL_CONSTANT", "RivalVerdict", "best_constant",
    "judge_drop", "judge_drops", "shares_of",
]
