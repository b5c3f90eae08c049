"""What chapter 6 reports: decision epochs, total variation per outcome, transplant fates,
Jacobian spectra and early-prediction AUCs, as tables and as the chapter's results JSON."""

from __future__ import annotations

import statistics

import torch

from lib.book.tables import markdown_table
from lib.grokking.study_sweep import GROUPS
from lib.chapters.ch6 import (
    PUBLISHED_FLIP_RATES, PUBLISHED_UNGROK_SHARES, EarlyPrediction, JacobianSpectra, TotalVariationStudy,
    TransplantStudy,
)
from lib.chapters.ch6_perturbation import PerturbationStudy


def decision_rows(study: PerturbationStudy, seeds: torch.Tensor, log2_scale: int) -> list[dict]:
    """Per perturbed seed: its outcome, the epoch its choice shows in test accuracy, its
    decision epoch for perturbations up to 2**`log2_scale` and up to the largest scale, and
    how many epochs the decision precedes the choice (None where either is missing)."""
    at_scale = study.decision_epochs(log2_scale).tolist()
    at_largest = study.decision_epochs(int(study.log2_scales.max())).tolist()
    rows = []
    for b, seed in enumerate(seeds.tolist()):
        choice = int(study.choice_epoch[b])
        decided = at_scale[b]
        rows.append({"seed": seed, "outcome": GROUPS[int(study.sweep_group[b])], "choice_epoch": choice,
                     "decision_epoch": decided, "decision_epoch_largest_scale": at_largest[b],
                     "lead_epochs": choice - decided if choice >= 0 and decided >= 0 else None})
    return rows


def decision_table(rows: list[dict], log2_scale: int, largest: int) -> str:
    """Markdown table of `decision_rows` (-1 / "-": never within the run)."""
    def shown(value):
        return "-" if value is None or value == -1 else value

    return markdown_table(
        ["seed", "outcome", "choice shows (epoch)", f"decided, noise up to 2^{log2_scale}",
         f"decided, noise up to 2^{largest}", "lead (epochs)"],
        [[r["seed"], r["outcome"], shown(r["choice_epoch"]), shown(r["decision_epoch"]),
          shown(r["decision_epoch_largest_scale"]), shown(r["lead_epochs"])] for r in rows])


def total_variation_rows(study: TotalVariationStudy) -> list[dict]:
    """Per outcome group: seeds, mean test-set total variation and argmax-flip rate (with the
    published flip rate), share of seeds with no flip, and the largest training-set total
    variation and flip rate among seeds that fit the training set at the window's start."""
    rows = []
    fits = study.train_accuracy >= 1.0
    for code, name in enumerate(GROUPS):
        members = study.group == code
        if not members.any():
            continue
        fitted = members & fits
        rows.append({"group": name, "count": int(members.sum()),
                     "test_tv_mean": float(study.test_tv[members].mean()),
                     "test_flip_rate_mean": float(study.test_flips[members].mean()),
                     "published_flip_rate": PUBLISHED_FLIP_RATES[name],
                     "share_without_flips": float((study.test_flips[members] == 0).double().mean()),
                     "fitted_at_window_start": int(fitted.sum()),
                     "train_tv_max_fitted": float(study.train_tv[fitted].max()) if fitted.any() else None,
                     "train_flips_max_fitted": float(study.train_flips[fitted].max()) if fitted.any() else None})
    return rows


def total_variation_table(rows: list[dict]) -> str:
    """Markdown table of `total_variation_rows`."""
    def shown(value):
        return "-" if value is None else value

    return markdown_table(
        ["outcome", "seeds", "test TV (mean)", "argmax flips (mean)", "published flips",
         "seeds without flips", "training-set TV (max)", "training-set flips (max)"],
        [[r["group"], r["count"], r["test_tv_mean"], r["test_flip_rate_mean"], r["published_flip_rate"],
          f"{r['share_without_flips']:.0%}", shown(r["train_tv_max_fitted"]), shown(r["train_flips_max_fitted"])]
         for r in rows])


def transplant_rows(study: TransplantStudy) -> list[dict]:
    """Per direction: the group grokked first, seeds, how many grokked it, the shares that
    ungrokked it on the intersection and (of those) regrokked it, and the median over the
    ungrokked seeds of their lowest accuracy on the group's table (how deep they fell)."""
    rows = []
    for group, run in study.runs.items():
        fates = study.fates[group]
        fractions = fates.fractions()
        lowest = run.second.metrics[f"acc_{group}"].min(dim=0).values[fates.ungrokked]
        rows.append({"first_group": getattr(run.pair, group).name, "seeds": len(run.first.seeds),
                     "grokked_first": fractions["grokked_first"], "ungrokked": int(fates.ungrokked.sum()),
                     "ungrokked_share": fractions["ungrokked"], "regrokked": int(fates.regrokked.sum()),
                     "regrokked_share": fractions["regrokked"],
                     "lowest_accuracy_median": median(lowest.tolist()) if len(lowest) else None})
    return rows


def transplant_table(rows: list[dict]) -> str:
    """Markdown table of `transplant_rows`."""
    def share(value):
        return "-" if value != value else f"{value:.1%}"

    return markdown_table(
        ["grokked first", "seeds", "grokked it", "ungrokked on the intersection", "of those, regrokked",
         "lowest accuracy (median)"],
        [[r["first_group"], r["seeds"], r["grokked_first"], f"{r['ungrokked']} ({share(r['ungrokked_share'])})",
          f"{r['regrokked']} ({share(r['regrokked_share'])})",
          "-" if r["lowest_accuracy_median"] is None else r["lowest_accuracy_median"]] for r in rows])


def jacobian_rows(spectra: JacobianSpectra) -> list[dict]:
    """Per (weight decay, dtype) and training length: the largest and smallest singular values
    and the share within 0.1 of 1 (the bulk)."""
    rows = []
    for (decay, dtype), values in spectra.singular_values.items():
        near = spectra.near_one((decay, dtype))
        for i, length in enumerate(spectra.lengths):
            rows.append({"weight_decay": decay, "dtype": dtype, "length": length,
                         "top_singular_value": float(values[i, 0]), "smallest_singular_value": float(values[i, -1]),
                         "share_near_one": float(near[i])})
    return rows


def jacobian_table(rows: list[dict]) -> str:
    """Markdown table of `jacobian_rows`."""
    return markdown_table(
        ["weight decay", "dtype", "steps", "largest singular value", "smallest", "within 0.1 of 1"],
        [[r["weight_decay"], r["dtype"], r["length"], r["top_singular_value"], r["smallest_singular_value"],
          f"{r['share_near_one']:.1%}"] for r in rows])


def chapter_results(*, config, sweep_source: str, n_seeds: int, outcome_counts: dict[str, int],
                    decisions: list[dict], perturbation: PerturbationStudy, tv: TotalVariationStudy,
                    transplant: TransplantStudy, spectra: JacobianSpectra, prediction: EarlyPrediction,
                    seconds: dict[str, float]) -> dict:
    """The chapter's results JSON."""
    return {
        "seed": config.seed, "smoke": config.smoke, "sweep_source": sweep_source, "n_seeds_in_sweep": n_seeds,
        "outcome_counts": outcome_counts,
        "perturbation": {"checkpoints": perturbation.checkpoints.tolist(),
                         "log2_scales": perturbation.log2_scales.tolist(), "copies": perturbation.copies,
                         "change_probability": perturbation.probability.tolist(),
                         "accuracy_shift": perturbation.accuracy_shift.tolist(),
                         "decision_log2_scale": config.decision_log2_scale},
        "decision_epochs": decisions,
        "total_variation": {"epochs": tv.epochs.tolist(), "same_outcome_as_sweep": tv.same_outcome,
                            "by_outcome": total_variation_rows(tv)},
        "transplant": transplant_rows(transplant),
        "jacobian": {"n_parameters": spectra.n_parameters, "lengths": spectra.lengths,
                     "finite_difference_error": spectra.finite_difference_error,
                     "longest_finite_difference_error": spectra.longest_finite_difference_error,
                     "spectra": jacobian_rows(spectra)},
        "early_prediction": {"epochs": prediction.epochs.tolist(), "auc_either": prediction.auc_either.tolist(),
                             "auc_group": prediction.auc_group.tolist(), "folds": list(prediction.folds)},
        "seconds": seconds,
    }


def median(values: list[float]) -> float:
    """The median of `values` (the mean of the two middle ones for an even count; torch's
    `median` would give the lower one); NaN when there are none."""
    return statistics.median(values) if values else float("nan")


def summary_lines(decisions: list[dict], decision_log2_scale: int, tv_rows: list[dict],
                  transplanted: list[dict], spectra: JacobianSpectra, prediction: EarlyPrediction) -> list[str]:
    """The chapter's summary, one sentence per finding, every number from this run's results
    (the study's numbers are cited as such)."""
    grokkers = [r for r in decisions if r["choice_epoch"] >= 0]
    leads = [r["lead_epochs"] for r in grokkers if r["lead_epochs"] is not None]
    never = sum(r["decision_epoch_largest_scale"] == -1 for r in decisions)
    lines = [
        f"Perturbation: {sum(lead > 0 for lead in leads)} of the {len(grokkers)} perturbed grokkers were decided "
        f"(no noise up to 2^{decision_log2_scale} changed their outcome from then on) before their choice showed "
        f"in test accuracy, a median of {median(leads):.0f} epochs earlier; the study saw decisions "
        "well before the choice is apparent {cite:p}`wu2025ambiguous`. The largest noise still changed the outcome "
        f"at the last checkpoint for {never} of the {len(decisions)} seeds."]
    flips = {r["group"]: r for r in tv_rows}
    if "neither" in flips and len(flips) > 1:
        ordered = all(r["test_flip_rate_mean"] < flips["neither"]["test_flip_rate_mean"]
                      for name, r in flips.items() if name != "neither")
        lines.append(
            "Total variation: mean argmax-flip rates " + ", ".join(
                f"{name} {r['test_flip_rate_mean']:.2g} (published {r['published_flip_rate']:.2g})"
                for name, r in flips.items())
            + f"; seeds that grokked a group flip {'less' if ordered else 'not always less'} than those that "
            "grokked neither" + (", as in the study." if ordered else ", unlike the study."))
    fitted = [r["train_flips_max_fitted"] for r in tv_rows if r["train_flips_max_fitted"] is not None]
    if fitted:
        lines.append(f"On the training set, seeds that fit it flip at most {max(fitted):.2g} of their predictions "
                     "over the window (the study: no change once training accuracy is perfect), while the "
                     "logits themselves keep moving (training-set total variation up to "
                     f"{max(r['train_tv_max_fitted'] for r in tv_rows if r['train_tv_max_fitted'] is not None):.3g}).")
    shares = [r["ungrokked_share"] for r in transplanted if r["ungrokked_share"] == r["ungrokked_share"]]
    lines.append("Transplant: " + "; ".join(
        f"of the {r['grokked_first']} seeds that grokked {r['first_group']} on its own data, "
        f"{r['ungrokked']} ({r['ungrokked_share']:.0%}) ungrokked it on the intersection and "
        f"{r['regrokked']} of those regrokked it" for r in transplanted)
        + "; the study reports about 7% and 8% ungrokking {cite:p}`wu2025ambiguous`"
        + (f", so here ungrokking is {min(shares) / max(PUBLISHED_UNGROK_SHARES):.0f} to "
           f"{max(shares) / min(PUBLISHED_UNGROK_SHARES):.0f} times as common." if shares and min(shares) > 0 else "."))
    key64 = next(k for k in spectra.singular_values if k[1] == "float64")
    key32 = (key64[0], "float32")
    top64 = float(spectra.singular_values[key64][-1, 0])
    near = spectra.near_one(key64)
    line = (f"Training Jacobian ({spectra.n_parameters} parameters, weight decay {key64[0]:g}): the share of "
            f"singular values within 0.1 of 1 is {float(near[1]):.0%} after {spectra.lengths[1]} steps and "
            f"{float(near[-1]):.0%} after {spectra.lengths[-1]}, where the largest is {top64:.3g}")
    if key32 in spectra.singular_values:
        top32 = float(spectra.singular_values[key32][-1, 0])
        line += f" ({top32:.3g} in float32, {top32 / top64:.2g} times the float64 value)"
    error = spectra.longest_finite_difference_error
    if error > 0.1:
        line += (f". The blow-up is in float64 too, so float32 rounding does not make it, though it changes its size; "
                 f"and by {spectra.lengths[-1]} steps a change of 1e-6 in the initial weights already moves the "
                 f"final ones non-linearly: central differences miss the exact Jacobian by {error:.0%}.")
    else:
        line += f"; central differences match the exact Jacobian to {error:.1e} at {spectra.lengths[-1]} steps."
    lines.append(line)
    readable = prediction.first_epoch_at_or_above(0.9)
    decided = [r["decision_epoch"] for r in grokkers if r["decision_epoch"] >= 0]
    line = ("Early prediction: from the logged metrics, grokking either group is told from neither with "
            f"held-out AUC at or above 0.9 from epoch {readable} on (-1: never); the perturbed grokkers were "
            f"decided at a median epoch of {median(decided):.0f} and showed their choice at "
            f"{median([r['choice_epoch'] for r in grokkers]):.0f}")
    if readable >= 0 and decided:
        gap = readable - median(decided)
        if gap > 0:
            line += f": the fate is determined about {gap:.0f} epochs before these features read it"
        elif gap < 0:
            line += f": these features read the fate {-gap:.0f} epochs before the median decision"
        else:
            line += ": these features read the fate at the median decision epoch"
    lines.append(line + ".")
    return lines


__all__ = [
    "chapter_results", "decision_rows", "decision_table", "jacobian_rows", "jacobian_table", "median",
    "summary_lines",
    "total_variation_rows", "total_variation_table", "transplant_rows", "transplant_table",
]


# --- What the notebook tests check (tests/test_notebooks.py finds these by chapter number) ---

#: Keys chapter 6's results JSON must contain (it may write more).
REQUIRED_KEYS = frozenset({"decision_epochs", "total_variation", "transplant", "jacobian", "early_prediction",
                           "perturbation", "outcome_counts"})


def check_results(results: dict) -> None:
    """Assert what chapter 6's results JSON must satisfy beyond holding `REQUIRED_KEYS`."""
    assert all({"seed", "outcome", "choice_epoch", "decision_epoch", "lead_epochs"} <= r.keys()
               for r in results["decision_epochs"])
    assert {r["first_group"] for r in results["transplant"]} == {"S4", "A4xZ2"}
    assert all({"ungrokked_share", "regrokked_share"} <= r.keys() for r in results["transplant"])
    jacobian = results["jacobian"]
    assert jacobian["finite_difference_error"] < 1e-4
    assert all(r["top_singular_value"] == 1.0 for r in jacobian["spectra"] if r["length"] == 0)
    prediction = results["early_prediction"]
    assert len(prediction["auc_either"]) == len(prediction["epochs"]) == len(prediction["auc_group"])
    assert all("published_flip_rate" in r for r in results["total_variation"]["by_outcome"])
