"""What the training Jacobian at the authors' scale shows: its rows and the study's two claims as
booleans with their evidence (chapter 6).

From a `lib.grokking.authors_scale_jacobian.SketchRun`: per segment boundary the accuracies, the
lower bound on the largest singular value (float64 and float32) and the root-mean-square singular
value (`sketch_rows`); per boundary read by randomized SVD its estimates (`sketch_spectrum_rows`);
per seed the growth of the largest singular value after grokking (`growth_row`); the finite
checks of the most stretched direction (`amplification_check`); where a long run meets float32's
range (`overflow_summary`); and `sketch_summary`, all of it with the study's two claims (no bulk;
a blow-up late in training) decided by `claim_checks`. The index's rows
(book/reproduced/06_determination.yaml) word the verdicts; chapter 6 tabulates the rows.
"""

from __future__ import annotations

import math

import torch

from lib.grokking.authors_scale_jacobian import SketchRun
from lib.grokking.jacobian_sketch import BULK_FLOOR, SketchedJacobianStudy
from lib.grokking.study import PUBLISHED_JACOBIAN

#: At most this share of singular values reaching 0.9 counts as "no bulk" (Belrose and
#: Scherlis's bulk held most directions).
NO_BULK_SHARE = 0.05
#: The largest singular value must grow at least this many times after grokking to count as a
#: blow-up (the authors' figure spans orders of magnitude).
BLOW_UP_FACTOR = 10.0
#: The float32 sketch departs from the float64 one where their relative distance first exceeds this.
FLOAT32_DEPARTURE = 0.1
#: A finite move follows the Jacobian where its ratio is within this of the products' ||J u||.
LINEAR_TOLERANCE = 0.1


def sketch_rows(run: SketchRun) -> list[dict]:
    """Per segment boundary: accuracy on the training pairs and on the whole table, the lower
    bound on the largest singular value (float64 and float32), the root-mean-square singular
    value (Hutchinson) with its relative standard error, and the float32 sketch's relative
    distance from the float64 one."""
    study = run.study
    rows = []
    for i, step in enumerate(study.boundaries.tolist()):
        frobenius = float(study.frobenius_squared[i])
        rows.append({"step": step, "train_accuracy": float(study.train_accuracy[i]),
                     "test_accuracy": float(study.test_accuracy[i]),
                     "largest_lower_bound": float(study.norm_lower_bound["float64"][i]),
                     "largest_lower_bound_float32": float(study.norm_lower_bound["float32"][i]),
                     "rms_singular_value": (frobenius / study.n_parameters) ** 0.5,
                     "rms_relative_error": float(study.frobenius_error[i]) / (2 * frobenius) if frobenius else 0.0,
                     "float32_relative_difference": float(study.dtype_difference[i])})
    return rows


def sketch_spectrum_rows(run: SketchRun) -> list[dict]:
    """Per boundary read by randomized SVD: the largest and the K-th estimated singular values,
    how many of the K estimates lie within 0.1 of 1 and above 1.1 (each estimate is at most the
    true value, so at least that many true ones exceed 1.1), the tail energy and the bound on the
    share of singular values reaching `BULK_FLOOR`."""
    accuracy = dict(zip(run.study.boundaries.tolist(), run.study.test_accuracy.tolist()))
    return [{"step": s.step, "test_accuracy": accuracy[s.step], "largest": float(s.top[0]),
             "kth": float(s.top[-1]), "k": int(s.top.numel()),
             "estimates_near_one": int(((s.top - 1).abs() <= 0.1).sum()),
             "estimates_above_bulk": int((s.top > 1.1).sum()), "tail_energy": s.tail_energy,
             "bulk_share_bound": s.bulk_share_bound} for s in run.study.spectra]


def growth_row(study: SketchedJacobianStudy) -> dict:
    """One model's largest singular value (float64 lower bound) after the first segment, at its
    grokking boundary, at its largest after grokking and at the end, and the growth from
    grokking to the end (None when it does not grok)."""
    steps = study.boundaries.tolist()
    lower = study.norm_lower_bound["float64"].tolist()
    grok = study.grok_step()
    at_grok = lower[steps.index(grok)] if grok > 0 else None
    return {"seed": study.seed, "grok_step": grok, "directions": study.sketch_size,
            "first_segment": lower[1] if len(lower) > 1 else lower[0], "at_grok": at_grok,
            "largest_after_grok": max(lower[steps.index(grok):]) if grok > 0 else None, "end": lower[-1],
            "growth_after_grokking": lower[-1] / at_grok if grok > 0 else None}


def amplification_check(check: dict) -> dict:
    """One finite check with what it shows: the sizes whose ratio agrees with the products'
    derivative ||J u|| within 10% (the linear regime; `linear_up_to`: the largest, None when no
    size is small enough) and the moves (size times ratio)."""
    agree = [size for size, ratio in zip(check["sizes"], check["ratios"])
             if abs(ratio / check["derivative"] - 1) <= LINEAR_TOLERANCE]
    return {**check, "linear_up_to": max(agree) if agree else None,
            "moves": [size * ratio for size, ratio in zip(check["sizes"], check["ratios"])]}


def sketch_summary(run: SketchRun) -> dict:
    """The results-JSON entry: scale beside the authors', the screen, the grokking step, every
    boundary's row, the spectra, the growth of the largest singular value after grokking, and the
    study's two claims as booleans with their evidence (`claims`: `claim_checks`)."""
    study = run.study
    rows, spectra = sketch_rows(run), sketch_spectrum_rows(run)
    grok = study.grok_step()
    steps = study.boundaries.tolist()
    lower = study.norm_lower_bound["float64"].tolist()
    growth = lower[-1] / lower[steps.index(grok)] if grok > 0 else None
    end = spectra[-1]
    # float32 "departs" where its sketch is 10% (relative) from the float64 one
    departs = next((r["step"] for r in rows if r["float32_relative_difference"] > FLOAT32_DEPARTURE), -1)
    facts = {"n_parameters": study.n_parameters, "embed_dim": study.embed_dim, "steps": study.steps,
             "segment": study.segment, "directions": study.sketch_size, "published": dict(PUBLISHED_JACOBIAN),
             "seeds_screened": len(run.seeds), "seeds_grokked_in_screen": sum(s > 0 for s in run.grok_steps),
             "small_width": run.small_width, "small_seeds_grokked": sum(s > 0 for s in run.small_grok_steps),
             "chosen_seed": run.chosen, "screen_grok_step": run.grok_steps[run.seeds.index(run.chosen)],
             "grok_step": grok, "growth_after_grokking": growth, "largest_lower_bound_end": lower[-1],
             "largest_lower_bound_at_grok": lower[steps.index(grok)] if grok > 0 else None,
             "largest_lower_bound_first_segment": lower[1] if len(lower) > 1 else lower[0],
             "end_bulk_share_bound": end["bulk_share_bound"], "end_step": end["step"],
             "end_estimates_above_bulk": end["estimates_above_bulk"], "end_smallest_estimate": end["kth"],
             "float32_relative_difference_end": rows[-1]["float32_relative_difference"],
             "float32_departs_at": departs,
             "amplification": [amplification_check(check) for check in run.amplification],
             "seconds": study.seconds, "rows": rows, "spectra": spectra,
             "growth_by_seed": [growth_row(study)] + [growth_row(other) for other in run.spread],
             "adam_eps": run.adam_eps,
             "growth_by_eps": [{"eps": eps, "rows": [growth_row(s) for s in studies]}
                               for eps, studies in run.eps_spread.items()],
             "overflow": overflow_summary(run.overflow)}
    facts["claims"] = claim_checks(facts)
    return facts


#: The largest finite float32 number: a float32 norm beyond it is inf.
FLOAT32_MAX = float(torch.finfo(torch.float32).max)


def overflow_summary(study: SketchedJacobianStudy | None) -> dict | None:
    """Where a run in both dtypes meets float32's range: the lower bound on the largest singular
    value per boundary in float64 and float32, the first step at which the float64 one exceeds
    `FLOAT32_MAX` and the first at which the float32 one is not finite (-1: never). None when the
    chapter did not make the run."""
    if study is None:
        return None
    steps = study.boundaries.tolist()
    wide, narrow = study.norm_lower_bound["float64"].tolist(), study.norm_lower_bound["float32"].tolist()
    return {"steps": study.steps, "seed": study.seed, "grok_step": study.grok_step(), "boundaries": steps,
            "float64": wide, "float32": [value if math.isfinite(value) else None for value in narrow],
            "float64_exceeds_float32_max_at": next((s for s, v in zip(steps, wide) if v > FLOAT32_MAX), -1),
            "float32_nonfinite_at": next((s for s, v in zip(steps, narrow) if not math.isfinite(v)), -1),
            "float64_end": wide[-1]}


def _grew(rows: list[dict]) -> tuple[int, int]:
    """(seeds that grow at least `BLOW_UP_FACTOR` times from grokking to the end, grokking seeds)."""
    grokkers = [r for r in rows if r["grok_step"] > 0]
    return sum(r["growth_after_grokking"] >= BLOW_UP_FACTOR for r in grokkers), len(grokkers)


def claim_checks(facts: dict) -> dict:
    """The study's two claims as booleans with the evidence they are decided from (the index's
    rows, book/reproduced/06_determination.yaml, word them): `grokked`; `no_bulk` (at most
    `no_bulk_share` of the singular values reach `bulk_floor` at the end; None when the model does
    not grok); `blow_up` (the largest singular value grows `blow_up_factor` times from grokking to
    the end in most grokking seeds read), `blow_up_some` (in at least one), `blow_up_survives_eps`
    (in most at every further Adam eps), the counts (`seeds_blown` of `grokking_seeds`, and
    `by_eps`) and the least growth before grokking (each claim None when the model does not grok);
    `float32_departs` (the float32 sketch departs from the float64 one) and `float32_overflows`
    (the long float32 run's bound stops being finite; None without that run); the thresholds and
    `singular_values_unread` (those past the `directions` the randomized SVD reads)."""
    grokked = facts["grok_step"] > 0
    grokkers = [r for r in facts["growth_by_seed"] if r["grok_step"] > 0]
    blown, n = _grew(grokkers)
    by_eps = [(entry["eps"], *_grew(entry["rows"])) for entry in facts.get("growth_by_eps", [])]
    overflow = facts.get("overflow")
    return {"grokked": grokked,
            "no_bulk": facts["end_bulk_share_bound"] <= NO_BULK_SHARE if grokked else None,
            "blow_up": blown * 2 > n if grokked else None,
            "blow_up_some": blown > 0 if grokked else None,
            "blow_up_survives_eps": all(k * 2 > m for _, k, m in by_eps if m) if grokked else None,
            "seeds_blown": blown, "grokking_seeds": n,
            "by_eps": [{"eps": eps, "seeds_blown": k, "grokking_seeds": m} for eps, k, m in by_eps],
            "growth_before_grokking_min": min(r["at_grok"] / r["first_segment"] for r in grokkers)
            if grokked and grokkers else None,
            "float32_departs": facts["float32_departs_at"] >= 0,
            "float32_overflows": overflow["float32_nonfinite_at"] >= 0 if overflow else None,
            "no_bulk_share": NO_BULK_SHARE, "blow_up_factor": BLOW_UP_FACTOR, "bulk_floor": BULK_FLOOR,
            "singular_values_unread": facts["n_parameters"] - facts["directions"]}


__all__ = ["BLOW_UP_FACTOR", "FLOAT32_DEPARTURE", "FLOAT32_MAX", "LINEAR_TOLERANCE", "NO_BULK_SHARE",
           "amplification_check", "claim_checks", "growth_row", "overflow_summary", "sketch_rows",
           "sketch_spectrum_rows", "sketch_summary"]
