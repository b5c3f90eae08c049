"""What chapter 6 reports: decision epochs under both noise shapes, argmax flips per outcome by
the authors' definition and the book's, transplant ungrokking under each criterion, the
training Jacobian's spectra around grokking (and at the authors' scale: `sketch_table`,
`sketch_spectrum_table`, `growth_table`, `amplification_table`) and early-prediction AUCs, as
tables and as the entries of the chapter's results JSON, which the notebook assembles and
`check_results` checks."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import torch

from lib.book.statistics import mean_estimate, wilson_interval
from lib.book.tables import markdown_table
from lib.book.verdict import Interval, Never, NotComparable, OneRun, judge, rate_interval
from lib.grokking.jacobian_claims import LINEAR_TOLERANCE, claim_checks
from lib.grokking.jacobian_sketch import BULK_FLOOR
from lib.grokking.perturbation import PerturbationStudy
from lib.grokking.study import PUBLISHED_FLIP_RATES, PUBLISHED_JACOBIAN, PUBLISHED_UNGROK_SHARES
from lib.grokking.study_sweep import GROUPS
from lib.grokking.total_variation import TotalVariationStudy
from lib.grokking.training_jacobian import JacobianStudy
from lib.grokking.transplant import AUTHORS_CRITERION, CRITERIA, ungrok_share
from lib.grokking.transplant_both_ways import TransplantStudy


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


def decision_comparison_rows(studies: dict[str, PerturbationStudy], seeds: torch.Tensor,
                             log2_scale: int) -> list[dict]:
    """Per perturbed seed: its outcome, when its choice shows, and its decision epoch for noise
    up to 2**`log2_scale` under each noise shape of `studies` (shape -> study, same seeds)."""
    by_shape = {shape: decision_rows(study, seeds, log2_scale) for shape, study in studies.items()}
    first = next(iter(by_shape.values()))
    return [{"seed": row["seed"], "outcome": row["outcome"], "choice_epoch": row["choice_epoch"],
             **{f"decision_epoch_{shape}": rows[b]["decision_epoch"] for shape, rows in by_shape.items()}}
            for b, row in enumerate(first)]


def decision_comparison_table(rows: list[dict], shapes: list[str], log2_scale: int) -> str:
    """Markdown table of `decision_comparison_rows` ("-": never within the run)."""
    def shown(value):
        return "-" if value is None or value == -1 else value

    return markdown_table(
        ["seed", "outcome", "choice shows (epoch)"] + [f"decided, {shape} noise up to 2^{log2_scale}" for shape in shapes],
        [[r["seed"], r["outcome"], shown(r["choice_epoch"])] + [shown(r[f"decision_epoch_{shape}"]) for shape in shapes]
         for r in rows])


def total_variation_rows(study: TotalVariationStudy, generator: torch.Generator | None = None,
                         resamples: int = 2000) -> list[dict]:
    """Per outcome group: seeds; the authors' flip rate (all N^2 pairs, the last intervals of
    their snapshot spacing) with a bootstrap interval of its mean and the number of seeds that
    flip at all; the book's (pairs outside the training set, over its window) with its total
    variation; the published rate; and the largest training-set total variation and flip rate
    among seeds that fit the training set at the window's start."""
    generator = generator or torch.Generator().manual_seed(0)
    rows = []
    fits = study.train_accuracy >= 1.0
    for code, name in enumerate(GROUPS):
        members = study.group == code
        if not members.any():
            continue
        fitted = members & fits
        authors = mean_estimate(study.authors_flips[members], resamples=resamples, generator=generator)
        rows.append({"group": name, "count": int(members.sum()),
                     "authors_flip_rate_mean": authors.value, "authors_flip_rate_low": authors.low,
                     "authors_flip_rate_high": authors.high,
                     "seeds_flipping_authors": int((study.authors_flips[members] > 0).sum()),
                     "test_tv_mean": float(study.test_tv[members].mean()),
                     "test_flip_rate_mean": float(study.test_flips[members].mean()),
                     "seeds_flipping_book": int((study.test_flips[members] > 0).sum()),
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

    def interval(low, high):   # a bootstrap of one seed has none
        if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
            return "none (too few seeds)"
        return f"{low:.2g} to {high:.2g}"

    return markdown_table(
        ["outcome", "seeds", "flips, authors' definition (mean)", "95% interval", "seeds that flip",
         "published", "flips, book's (mean)", "seeds that flip (book's)", "test TV (mean)",
         "training-set flips (max)"],
        [[r["group"], r["count"], r["authors_flip_rate_mean"],
          interval(r["authors_flip_rate_low"], r["authors_flip_rate_high"]), r["seeds_flipping_authors"],
          r["published_flip_rate"], r["test_flip_rate_mean"], r["seeds_flipping_book"], r["test_tv_mean"],
          shown(r["train_flips_max_fitted"])] for r in rows])


def transplant_rows(study: TransplantStudy) -> list[dict]:
    """Per direction: the group learned first, seeds, and under each criterion of `CRITERIA` the
    phase-1 grokkers, how many ungrokked (share, Wilson interval) and regrokked; the book's
    criterion also at the top level (with the median lowest accuracy of its ungrokked seeds)."""
    rows = []
    for group, run in study.runs.items():
        fates = study.fates[group]
        fractions = fates.fractions()
        lowest = run.second.metrics[f"acc_{group}"].min(dim=0).values[fates.ungrokked]
        rows.append({"first_group": getattr(run.pair, group).name, "seeds": len(run.first.seeds),
                     "grokked_first": fractions["grokked_first"], "ungrokked": int(fates.ungrokked.sum()),
                     "ungrokked_share": fractions["ungrokked"], "regrokked": int(fates.regrokked.sum()),
                     "regrokked_share": fractions["regrokked"],
                     "lowest_accuracy_median": median(lowest.tolist()) if len(lowest) else None,
                     "final_accuracy_median": median(run.second.final(f"acc_{group}").tolist()),
                     "intersection_share": run.intersection_share,
                     "criteria": {name: ungrok_share(study.criteria[group][name]) for name in CRITERIA}})
    return rows


def transplant_table(rows: list[dict]) -> str:
    """Markdown table of `transplant_rows`: one line per direction and criterion."""
    def share(entry):
        if entry["share"] != entry["share"]:
            return "-"
        return f"{entry['ungrokked']} ({entry['share']:.1%}; {entry['low']:.1%} to {entry['high']:.1%})"

    return markdown_table(
        ["learned first", "criterion", "grokked it in phase 1", "ungrokked (share; 95% interval)", "regrokked"],
        [[r["first_group"], name, entry["grokked_first"], share(entry),
          entry["regrokked"] if name.startswith("below") else "-"]
         for r in rows for name, entry in r["criteria"].items()])


def jacobian_rows(study: JacobianStudy) -> list[dict]:
    """Per segment boundary: accuracy on the training pairs and on the whole table, the largest
    and smallest singular values (float64, and the largest in float32), the share within 0.1 of
    1 (the bulk), and the float32 Jacobian's relative distance from the float64 one."""
    near = study.near_one("float64")
    rows = []
    for i, step in enumerate(study.boundaries.tolist()):
        values = study.singular_values["float64"][i]
        row = {"step": step, "train_accuracy": float(study.train_accuracy[i]),
               "test_accuracy": float(study.test_accuracy[i]), "top_singular_value": float(values[0]),
               "smallest_singular_value": float(values[-1]), "share_near_one": float(near[i]),
               "float32_relative_difference": float(study.dtype_difference[i])}
        if "float32" in study.singular_values:
            row["top_singular_value_float32"] = float(study.singular_values["float32"][i, 0])
        rows.append(row)
    return rows


def jacobian_table(rows: list[dict]) -> str:
    """Markdown table of `jacobian_rows`."""
    return markdown_table(
        ["step", "training accuracy", "accuracy on the whole table", "largest singular value",
         "largest (float32)", "smallest", "within 0.1 of 1", "float32 vs float64 (relative)"],
        [[r["step"], r["train_accuracy"], r["test_accuracy"], r["top_singular_value"],
          r.get("top_singular_value_float32", "-"), r["smallest_singular_value"], f"{r['share_near_one']:.1%}",
          r["float32_relative_difference"]] for r in rows])


def jacobian_summary(study: JacobianStudy) -> dict:
    """The run's scale beside the authors', whether and when it grokked, and the spectrum at the
    boundaries just before and after grokking (or at the start and the end when it did not)."""
    grok = study.grok_step()
    steps = study.boundaries.tolist()
    if grok > 0:
        after = steps.index(grok)
        before = after - 1
    else:
        before, after = (1 if len(steps) > 1 else 0), len(steps) - 1
    near = study.near_one("float64")
    authors = PUBLISHED_JACOBIAN
    return {"n_parameters": study.n_parameters, "embed_dim": study.embed_dim, "steps": study.steps,
            "segment": study.segment, "weight_decay": study.weight_decay, "train_fraction": study.train_fraction,
            "grok_step": grok, "published": dict(authors),
            "cost_ratio_to_published": (authors["n_parameters"] / study.n_parameters) ** 2
            * authors["steps"] / study.steps,
            "before": {"step": steps[before], "top_singular_value": float(study.singular_values["float64"][before, 0]),
                       "share_near_one": float(near[before])},
            "after": {"step": steps[after], "top_singular_value": float(study.singular_values["float64"][after, 0]),
                      "share_near_one": float(near[after])},
            "finite_difference_error": study.finite_difference_error,
            "float32_relative_difference_end": float(study.dtype_difference[-1]),
            "seconds_per_step": study.seconds_per_step}


def median(values: list[float]) -> float:
    """The median of `values` (the mean of the two middle ones for an even count; torch's
    `median` would give the lower one); NaN when there are none."""
    return statistics.median(values) if values else float("nan")


def transplant_verdict(transplanted: list[dict]) -> dict:
    """Which criteria put the published shares (`PUBLISHED_UNGROK_SHARES`, in the order of the
    directions) inside this run's Wilson intervals in both directions, and whether the authors'
    coded criterion (`AUTHORS_CRITERION`) is one of them."""
    matching = [name for name in CRITERIA
                if all(r["criteria"][name]["low"] <= published <= r["criteria"][name]["high"]
                       for r, published in zip(transplanted, PUBLISHED_UNGROK_SHARES))]
    return {"criteria_matching_both": matching, "authors_criterion": AUTHORS_CRITERION,
            "authors_criterion_matches": AUTHORS_CRITERION in matching,
            "authors_criterion_shares": [r["criteria"][AUTHORS_CRITERION]["share"] for r in transplanted]}


def decision_leads(decisions: list[dict], shape: str) -> dict:
    """Under one noise shape: the perturbed seeds that grokked (`grokkers`), how many of them were
    decided before their choice showed in test accuracy (`decided_early`) and the median of the
    leads in epochs (`median_lead`, NaN when none was decided)."""
    key = f"decision_epoch_{shape}"
    grokkers = [r for r in decisions if r["choice_epoch"] >= 0]
    leads = [r["choice_epoch"] - r[key] for r in grokkers if r[key] >= 0]
    return {"shape": shape, "grokkers": len(grokkers), "decided_early": sum(lead > 0 for lead in leads),
            "median_lead": median(leads)}


def flips_ordered(tv_rows: list[dict]) -> bool | None:
    """Whether every group's seeds flip less (authors' definition, mean) than those that grokked
    neither, as in the study; None when "neither" or every other outcome is missing."""
    flips = {r["group"]: r for r in tv_rows}
    if "neither" not in flips or len(flips) < 2:
        return None
    return all(r["authors_flip_rate_mean"] < flips["neither"]["authors_flip_rate_mean"]
               for name, r in flips.items() if name != "neither")


def flip_comparison_table(with_bias: list[dict], without_bias: list[dict]) -> str:
    """Markdown table: per outcome, the authors' flip rate and how many seeds flip at all in the
    sweep with the bias (the study's model) and without it, and the published rate."""
    def cells(rows, name):
        r = next((r for r in rows if r["group"] == name), None)
        return ["-", "-"] if r is None else [f"{r['authors_flip_rate_mean']:.2g}",
                                             f"{r['seeds_flipping_authors']} of {r['count']}"]

    names = [name for name in GROUPS if any(r["group"] == name for r in with_bias + without_bias)]
    published = {r["group"]: r["published_flip_rate"] for r in with_bias + without_bias}
    return markdown_table(
        ["outcome", "with the bias (mean)", "seeds that flip", "without the bias (mean)", "seeds that flip",
         "book's definition, with the bias (mean)", "published"],
        [[name, *cells(with_bias, name), *cells(without_bias, name),
          next((f"{r['test_flip_rate_mean']:.2g}" for r in with_bias if r["group"] == name), "-"),
          f"{published[name]:.2g}"] for name in names])


def check_results(results: dict) -> None:
    """Assert what chapter 6's results JSON must satisfy (the notebook, before it writes them)."""
    shapes = list(results["perturbation"])
    assert shapes and all(f"decision_epoch_{shape}" in r for r in results["decision_epochs"] for shape in shapes)
    assert all({"seed", "outcome", "choice_epoch"} <= r.keys() for r in results["decision_epochs"])
    assert {r["first_group"] for r in results["transplant"]} == {"S4", "A4xZ2"}
    for r in results["transplant"]:
        assert {"ungrokked_share", "regrokked_share", "criteria"} <= r.keys()
        assert set(r["criteria"]) == set(CRITERIA)
        assert all({"grokked_first", "ungrokked", "share", "low", "high"} <= c.keys() for c in r["criteria"].values())
    jacobian = results["jacobian"]
    assert {"n_parameters", "steps", "segment", "published", "before", "after", "spectra"} <= jacobian.keys()
    assert jacobian["finite_difference_error"] < 1e-4
    assert jacobian["spectra"][0]["step"] == 0 and jacobian["spectra"][0]["top_singular_value"] == 1.0
    sketch = results["jacobian_sketch"]
    assert {"n_parameters", "steps", "directions", "grok_step", "rows", "spectra", "claims"} <= sketch.keys()
    assert sketch["rows"][0]["step"] == 0 and abs(sketch["rows"][0]["largest_lower_bound"] - 1.0) < 1e-9
    assert all(0 <= s["bulk_share_bound"] <= 1 for s in sketch["spectra"])
    prediction = results["early_prediction"]
    assert len(prediction["auc_either"]) == len(prediction["epochs"]) == len(prediction["auc_group"])
    for r in results["total_variation"]["by_outcome"]:
        assert {"published_flip_rate", "authors_flip_rate_mean", "seeds_flipping_authors",
                "test_flip_rate_mean", "seeds_flipping_book"} <= r.keys()
        assert 0 <= r["seeds_flipping_authors"] <= r["count"]
    # The words the prose shows agree with the results they were chosen from.
    recorded = results.get("recorded", {})
    if "transplant.authors_match" in recorded and all(c["low"] is not None and c["high"] is not None
                                                      for r in results["transplant"] for c in r["criteria"].values()):
        matches = transplant_verdict(results["transplant"])["authors_criterion_matches"]
        assert recorded["transplant.authors_match"]["text"].startswith("lie inside") == matches
    # The claims are booleans (None: not decided) that agree with the evidence they were decided
    # from (`lib.grokking.jacobian_claims.claim_checks`; where a growth is not finite, JSON holds null for it).
    claims = sketch["claims"]
    flags = ("grokked", "no_bulk", "blow_up", "blow_up_some", "blow_up_survives_eps", "float32_departs",
             "float32_overflows")
    assert all(claims[name] is None or isinstance(claims[name], bool) for name in flags)
    growths = [r["growth_after_grokking"] for rows in [sketch["growth_by_seed"]]
               + [entry["rows"] for entry in sketch["growth_by_eps"]] for r in rows if r["grok_step"] > 0]
    if all(growth is not None for growth in growths):
        decided = claim_checks(sketch)
        assert all(claims[name] == decided[name] for name in flags + ("seeds_blown", "grokking_seeds"))
    if "sketch.no_bulk" in recorded:
        assert recorded["sketch.no_bulk"]["text"] == no_bulk_word(claims["no_bulk"])
    if "sketch.blow_up" in recorded and claims["grokked"]:
        # "Blows up late" judged as an "every grokking seed" by the one verdict rule.
        assert recorded["sketch.blow_up"]["text"] == judge(
            Never(claims["grokking_seeds"] - claims["seeds_blown"], claims["grokking_seeds"]))


def no_bulk_word(no_bulk: bool | None) -> str:
    """The verdict on the study's "no bulk of singular values near 1", read on one seed (chapter 6
    and its index row): the book's one rule, one run, or not comparable where the tail bound is
    too loose to count the bulk (False) or the model does not grok (None)."""
    return judge(OneRun()) if no_bulk else judge(OneRun(), NotComparable())


def transplant_word(transplant: list[dict], published: Sequence[float], criterion: str) -> str:
    """The verdict on the study's transplant shares under the criterion the authors' code records
    (chapter 6 and its index row): the book's one rule on the two directions' rates (`transplant`:
    per direction its `criteria`, each with `ungrokked` of `grokked_first`)."""
    def rate(entry: dict, share: float):
        if not entry["grokked_first"]:
            return Interval(share, None, None, 0)
        low, high = wilson_interval(entry["ungrokked"], entry["grokked_first"])
        return rate_interval(share, entry["ungrokked"], entry["grokked_first"], low, high)
    return judge(*(rate(r["criteria"][criterion], share) for r, share in zip(transplant, published)))


def sketch_table(rows: list[dict]) -> str:
    """Markdown table of `sketch_rows`."""
    return markdown_table(
        ["step", "training accuracy", "accuracy on the whole table", "largest singular value (lower bound)",
         "same, float32", "root-mean-square singular value", "float32 vs float64 (relative)"],
        [[r["step"], r["train_accuracy"], r["test_accuracy"], r["largest_lower_bound"],
          r["largest_lower_bound_float32"], r["rms_singular_value"], r["float32_relative_difference"]] for r in rows])


def sketch_spectrum_table(rows: list[dict]) -> str:
    """Markdown table of `sketch_spectrum_rows`."""
    return markdown_table(
        ["step", "accuracy on the whole table", "largest (estimate)", "K-th largest (estimate)",
         "estimates within 0.1 of 1", "estimates above 1.1", f"share of all reaching {BULK_FLOOR} (at most)"],
        [[r["step"], r["test_accuracy"], r["largest"], r["kth"], f"{r['estimates_near_one']} of {r['k']}",
          f"{r['estimates_above_bulk']} of {r['k']}", f"{r['bulk_share_bound']:.1%}"] for r in rows])


def growth_table(rows: list[dict]) -> str:
    """Markdown table of `growth_row` over the seeds read."""
    def number(value):
        return "-" if value is None else value
    return markdown_table(
        ["seed", "directions", "groks at step", "after the first segment", "at grokking", "largest after grokking",
         "at the end", "end / at grokking"],
        [[r["seed"], r["directions"], r["grok_step"] if r["grok_step"] > 0 else "never", r["first_segment"],
          number(r["at_grok"]), number(r["largest_after_grok"]), r["end"], number(r["growth_after_grokking"])]
         for r in rows])


def amplification_table(checks: list[dict]) -> str:
    """Markdown table of the finite checks (`amplification_check`): per step checked, the products'
    ||J u|| and the randomized-SVD estimate, each move of the initial weights along u with the move
    it makes there, and the largest move whose ratio agrees with ||J u|| within `LINEAR_TOLERANCE`
    ("none": no move tried is small enough to be linear)."""
    return markdown_table(
        ["step", "||J u|| (products)", "randomized-SVD estimate", "move at the start -> move at the step",
         f"linear (within {LINEAR_TOLERANCE:.0%}) up to"],
        [[f"{c['step']:,}", f"{c['derivative']:.3g}", f"{c['estimate']:.3g}",
          ", ".join(f"{size:.0e} -> {move:.2g}" for size, move in zip(c["sizes"], c["moves"])),
          "none" if c["linear_up_to"] is None else f"{c['linear_up_to']:.0e}"] for c in checks])


__all__ = [
    "amplification_table", "check_results", "decision_comparison_rows", "decision_comparison_table",
    "decision_leads", "decision_rows", "decision_table", "flip_comparison_table", "flips_ordered",
    "growth_table", "jacobian_rows", "jacobian_summary", "jacobian_table", "median",
    "sketch_spectrum_table", "sketch_table", "total_variation_rows", "total_variation_table",
    "transplant_rows", "transplant_table", "transplant_verdict",
]
