"""What chapter 2 says about its transition study (`notebooks/02_training.py`): the drops of
every length in every seed, their spread, the order of learning over the seeds, as a table,
sentences and the results JSON entry. The study itself runs in `lib.paths.transition_study`,
the drops are dated by `lib.paths.phase_transitions`."""

from __future__ import annotations

import math
import statistics

import torch

from lib.book.tables import format_value, markdown_table
from lib.paths.phase_transitions import Drop, DropOrder, DropSettings, detect_drops, drop_order
from lib.paths.transition_study import TransitionCurves


def study_drops(curves: TransitionCurves, settings: DropSettings) -> list[dict[int, Drop]]:
    """Per seed, {length: its drop}."""
    return [detect_drops(curves.steps, {length: curves.curve(index, length) for length in curves.lengths}, settings)
            for index in range(len(curves.seeds))]


def drop_steps(drops: list[dict[int, Drop]], lengths=None) -> list[dict[int, int | None]]:
    """Per seed, {length: drop step or None} (only `lengths`, when given)."""
    return [{length: drop.step for length, drop in by_length.items() if lengths is None or length in lengths}
            for by_length in drops]


def plotted_lengths(lengths: tuple[int, ...], unreachable_label: int) -> list[int]:
    """The labels the authors plotted and read the order of learning from: lengths 1, 2 and 3
    and unreachable targets (among `lengths`)."""
    return [k for k in lengths if k <= 3 or k == unreachable_label]


def spread(steps: list[int | None]) -> int | None:
    """Largest minus smallest drop step over the seeds (None unless every seed dropped)."""
    return None if any(step is None for step in steps) else max(steps) - min(steps)


def _name(length: int, unreachable_label: int) -> str:
    return "unreachable" if length == unreachable_label else str(length)


def _names(lengths, unreachable_label: int) -> str:
    names = [("unreachable targets" if k == unreachable_label else str(k)) for k in lengths]
    reachable = [n for n in names if n != "unreachable targets"]
    text = ("length " if len(reachable) == 1 else "lengths ") + _join(reachable) if reachable else ""
    if len(reachable) < len(names):
        text = _join([t for t in (text, "unreachable targets") if t])
    return text


def _verb(lengths, unreachable_label: int | None = None) -> str:
    return "drops" if len(lengths) == 1 and lengths[0] != unreachable_label else "drop"


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def mean_label_from(mean_loss: dict[int, float]) -> float:
    """The mean label behind a `mean_label_loss` dict (from its first two lengths)."""
    (a, la), (b, lb) = list(mean_loss.items())[:2]
    # (a - m)^2 - (b - m)^2 = (a - b)(a + b - 2m)
    return ((a + b) - (la - lb) / (a - b)) / 2


def mean_label_loss(labels: torch.Tensor, lengths: tuple[int, ...]) -> dict[int, float]:
    """{length: (length - mean label)^2}: each length's loss while the model predicts the mean
    label of the training distribution (`labels`: a sample of it) for every graph."""
    mean = float(labels.double().mean())
    return {length: (length - mean) ** 2 for length in lengths}


def drop_table(curves: TransitionCurves, drops: list[dict[int, Drop]], unreachable_label: int,
               mean_loss: dict[int, float]) -> str:
    """Markdown table: per length, every seed's drop step, their spread, plateau and after
    levels (median over the seeds that dropped), the fall and width, and the mean-label loss."""
    rows = []
    for length in curves.lengths:
        per_seed = [by_length[length] for by_length in drops]
        dropped = [d for d in per_seed if d.dropped]
        steps = [d.step for d in per_seed]
        median = (lambda values: format_value(statistics.median(values), 3) if values else "–")
        rows.append([
            _name(length, unreachable_label),
            ", ".join("no drop" if s is None else str(s) for s in steps),
            "–" if spread(steps) is None else str(spread(steps)),
            median([d.plateau for d in dropped]), format_value(mean_loss[length], 3),
            median([d.after for d in dropped]), median([d.decades for d in dropped]),
            median([d.width for d in dropped])])
    seeds = ", ".join(str(s) for s in curves.seeds)
    return markdown_table(
        ["length", f"drop step (seeds {seeds})", "spread (steps)", "plateau loss", "(length - mean label)²",
         "loss after", "fall (decades)", "width (steps)"], rows)


def order_sentence(order: DropOrder, n_seeds: int, unreachable_label: int) -> str:
    """The order of learning as far as it holds in every seed, in words."""
    if not order.groups:
        text = f"No length drops in all {n_seeds} seeds"
    else:
        parts = [_names(group, unreachable_label) + (" (in an order that changes between seeds)"
                                                     if len(group) > 1 else "") for group in order.groups]
        if len(parts) == 1:
            text = (f"In all {n_seeds} seeds {parts[0]} drop, but no length drops before another in "
                    f"every seed" if len(order.groups[0]) > 1 else f"In all {n_seeds} seeds only {parts[0]} drops")
        else:
            text = f"In every one of the {n_seeds} seeds, " + ", then ".join(parts) + " drop, in this order"
    extras = []
    if order.sometimes:
        extras.append(f"{_names(order.sometimes, unreachable_label)} {_verb(order.sometimes, unreachable_label)} in some seeds only")
    if order.never:
        extras.append(f"{_names(order.never, unreachable_label)} {_verb(order.never, unreachable_label)} in none")
    return text + ("; " + "; ".join(extras) if extras else "") + "."


def study_results(curves: TransitionCurves, drops: list[dict[int, Drop]], order: DropOrder,
                  settings: DropSettings, mean_loss: dict[int, float], per_length: int) -> dict:
    """The transition study's entry of the results JSON: its recipe, the curves, and per length
    the drops of every seed (step, plateau, fall, width) and their spread."""
    config = curves.config
    return {
        "n_min": config.n_min, "n_max": config.n_max, "n_layers": config.n_layers,
        "batch_size": config.batch_size, "learning_rate": config.lr_schedule[0][1],
        "steps_trained": config.total_steps, "seeds": list(curves.seeds), "eval_per_length": per_length,
        "drop_settings": {"smoothing": settings.smoothing, "window": settings.window,
                          "min_decades": settings.min_decades, "max_width": settings.max_width,
                          "min_plateau": settings.min_plateau},
        "lengths": list(curves.lengths), "steps": list(curves.steps), "loss": curves.loss.tolist(),
        "seconds": list(curves.seconds),
        "drop_step": {length: [d[length].step for d in drops] for length in curves.lengths},
        "plateau": {length: [d[length].plateau for d in drops] for length in curves.lengths},
        "drops": {length: [d[length].to_dict() for d in drops] for length in curves.lengths},
        "spread": {length: spread([d[length].step for d in drops]) for length in curves.lengths},
        "mean_label_loss": mean_loss, "mean_label": mean_label_from(mean_loss),
        "order": {"groups": [list(g) for g in order.groups], "sometimes": list(order.sometimes),
                  "never": list(order.never), "holds_over_seeds": order.holds_over_seeds},
    }




def _steps_text(steps: list[int | None]) -> str:
    return ", ".join("none" if s is None else str(s) for s in steps)


def length_sentence(length: int, drops: list[dict[int, Drop]], mean_loss: dict[int, float],
                    unreachable_label: int) -> str:
    """One length's drops over the seeds in words: steps, spread, plateau against the
    mean-label loss, level after, fall and width."""
    name = "Unreachable targets" if length == unreachable_label else f"Length {length}"
    per_seed = [by_length[length] for by_length in drops]
    dropped = [d for d in per_seed if d.dropped]
    steps = [d.step for d in per_seed]
    if not dropped:
        falls = max(d.decades for d in per_seed)
        plural = length == unreachable_label
        return (f"{name} {'have' if plural else 'has'} no drop in any seed ({'their' if plural else 'its'} largest "
                f"fall is {falls:.2f} decades; "
                f"{per_seed[0].reason} in the first seed).")
    count = "every seed" if len(dropped) == len(per_seed) else f"{len(dropped)} of {len(per_seed)} seeds"
    spread_text = "" if spread(steps) is None else f", a spread of {spread(steps)} steps"
    plateau = statistics.median(d.plateau for d in dropped)
    return (f"{name} {_verb([length], unreachable_label)} in {count}, at steps {_steps_text(steps)}{spread_text}: from a plateau at "
            f"{plateau:.3g} (median over those seeds; predicting the mean label gives it {mean_loss[length]:.3g}) "
            f"to {statistics.median(d.after for d in dropped):.3g}, {statistics.median(d.decades for d in dropped):.1f} "
            f"decades within {statistics.median(d.width for d in dropped):.0f} steps.")


def chance_of_order(order: DropOrder, n_seeds: int) -> float:
    """Probability that lengths dropping in a uniformly random order (independently per seed)
    put every group of `order.groups` before the next in all `n_seeds` seeds."""
    sizes = [len(group) for group in order.groups]
    per_seed = math.prod(math.factorial(size) for size in sizes) / math.factorial(sum(sizes))
    return per_seed ** n_seeds


def transition_sentences(curves: TransitionCurves, drops: list[dict[int, Drop]], order: DropOrder,
                         mean_loss: dict[int, float], unreachable_label: int) -> str:
    """The transition study's findings, each from the run's numbers, as markdown."""
    shown = plotted_lengths(curves.lengths, unreachable_label)
    n_seeds = len(curves.seeds)
    if len(order.groups) > 1:
        chance = chance_of_order(order, n_seeds)
        verdict = (f"If the lengths dropped in a random order, this order would hold in all {n_seeds} seeds with "
                   f"probability {chance:.3g}: {'the seeds rule that rival out' if chance < 0.01 else 'more seeds would be needed to rule that rival out'}"
                   + ("." if order.holds_over_seeds else "; within a group the order changes with the seed."))
    else:
        verdict = "No order of learning holds in every seed."
    lines = [f"**Order of learning over {n_seeds} seeds** (lengths 1 to 3 and unreachable targets, the labels the "
             f"study plotted). {order_sentence(order, n_seeds, unreachable_label)} {verdict}"]
    lines += [length_sentence(k, drops, mean_loss, unreachable_label) for k in shown]
    others = [k for k in curves.lengths if k not in shown and all(d[k].dropped for d in drops)]
    if others:
        lines.append("Among the other lengths, " + _names(others, unreachable_label) + " " + _verb(others)
                     + " in every seed too, at median steps " + ", ".join(
                         f"{statistics.median(d[k].step for d in drops):.0f}" for k in others)
                     + ", from plateaus at " + ", ".join(
                         f"{statistics.median(d[k].plateau for d in drops):.3g}" for k in others)
                     + f" (the mean label is {mean_label_from(mean_loss):.2f}).")
    lines.append("In the published run the loss of length 1 sat at about 16 until step 40 and fell to 0.04 by "
                 "step 70, and lengths 2 and 3 fell from about step 80 {cite:p}`wang2024shortest`.")
    return "\n\n".join(lines)


def main_run_sentence(drops: dict[int, Drop], order, unreachable_label: int, n_max: int, mean_label: float,
                      study_mean_loss: dict[int, float]) -> str:
    """What the detector finds in the main run's logged training loss (`order`: its
    `lib.chapters.ch2.LearningOrder`; `mean_label`: its evaluation batch's mean label), in words,
    with what predicting the mean costs length 1 here and at the study's size."""
    common = [k for k in order.common_lengths]
    dropped = [k for k in common if drops[k].dropped]
    flat = [k for k in common if not drops[k].dropped]
    found = (f"a drop for {_names(dropped, unreachable_label)} (" + ", ".join(
        f"{'unreachable' if k == unreachable_label else k} at step {drops[k].step}, "
        f"{drops[k].decades:.1f} decades in {drops[k].width} steps" for k in dropped) + ")") if dropped else "no drop"
    missing = (f" and none for {_names(flat, unreachable_label)} (" + "; ".join(
        f"{'unreachable' if k == unreachable_label else k}: {drops[k].reason}" for k in flat) + ")") if flat else ""
    study_mean = mean_label_from(study_mean_loss)
    return (f"**Main run (graphs of up to {n_max} vertices).** Among the lengths with at least 2% of the "
            f"evaluation examples the detector finds {found}{missing}. The mean label here is {mean_label:.2f}, so "
            f"predicting it costs length 1 a loss of {(1 - mean_label) ** 2:.3g}, against {(1 - study_mean) ** 2:.3g} "
            f"at the study's size (mean label {study_mean:.2f}): the plateau a short length can sit on is "
            f"{'lower' if (1 - mean_label) ** 2 < (1 - study_mean) ** 2 else 'not lower'} here.")


def summary_markdown(summary: dict, training, curves: TransitionCurves, drops: list[dict[int, Drop]],
                     order: DropOrder, mean_loss: dict[int, float], unreachable_label: int, published: dict,
                     main_order, main_unreachable_label: int) -> str:
    """The chapter's closing bullets, every number from the run (`unreachable_label`: the
    transition study's, `main_unreachable_label`: the main run's)."""
    examples = summary["steps"] * training.batch_size
    first = [by_length[1].step for by_length in drops if 1 in by_length]
    if first and all(s is not None for s in first):
        length_one = (f"learning happens in drops: length 1 drops at steps {_steps_text(first)} (the published "
                      f"run: about step 50)")
    else:
        length_one = f"length 1 drops in {sum(s is not None for s in first)} of {len(first)} seeds"
    main_dropped = [k for k, d in summary["drop_by_length"].items() if d["dropped"] and k in main_order.common_lengths]
    return "\n".join([
        f"- The main run, a {training.n_layers}-layer transformer trained on {examples:,} fresh graphs of up to "
        f"{training.n_max} vertices (the model chapters 3 and 7 build on), reaches a mean squared error of "
        f"{summary['final_loss']:.4f} on held-out graphs, against {summary['constant_prediction_loss']:.3f} for "
        f"always predicting the mean: it computes distances rather than guessing. The published model, larger "
        f"and trained on about {3.14e8 / examples:,.0f} times more examples, reached {published['final_loss']} "
        f"{{cite:p}}`wang2024shortest`.",
        f"- At the study's graph size (up to {curves.config.n_max} vertices, {len(curves.seeds)} models of "
        f"{curves.config.n_layers} layers, {curves.steps[-1]} steps each), {length_one}. {order_sentence(order, len(curves.seeds), unreachable_label)}",
        f"- In the main run, on graphs of up to {training.n_max} vertices, the same detector finds a drop for "
        + (_names(main_dropped, main_unreachable_label) if main_dropped else "no length") + ".",
        f"- At the end of the main run the largest remaining loss is on {main_order.hardest_name} "
        f"({main_order.hardest_loss:.3f}, on {main_order.hardest_count} of {training.eval_size} evaluation "
        f"examples, which are drawn like the training graphs): at that share about "
        f"{main_order.hardest_count / training.eval_size * examples:,.0f} of the {examples:,} training graphs "
        f"had that length.",
    ])


__all__ = ["chance_of_order", "drop_order", "drop_steps", "drop_table", "length_sentence", "mean_label_from", "plotted_lengths", "main_run_sentence", "mean_label_loss",
           "order_sentence", "spread", "study_drops", "study_results", "summary_markdown", "transition_sentences"]
