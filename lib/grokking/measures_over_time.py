"""Complexity measures along the training of one model, against its generalization gap (chapter 5).

The study tracked one S5 model (d = h = 128, no bias, 40% of the S5 table) over 2,000 epochs,
computed Jiang et al.'s measures, the training loss and the LLC at a checkpoint every 3 epochs,
and compared each with the generalization gap (training accuracy minus accuracy on the whole
table) by Spearman's rank correlation over the checkpoints [@wu2025ambiguous]. Here:

* `measures_over_time`: the cheap measures (`lib.grokking.generalization_measures.CHEAP_MEASURES`)
  at every checkpoint of a run, and the PAC-Bayes sharpness and the LLC (the costly ones) at a
  sparser grid of its checkpoints, with the time each took;
* `rank_correlation`: Spearman's coefficient with infinite values kept (an infinite inverse
  margin, where the margin is not positive, ranks above every finite value, tied with the other
  infinite ones, as `scipy.stats.spearmanr` ranks them);
* `spearman_over_common`: every measure's coefficient over the SAME checkpoints (those where no
  measure and not the gap is NaN), so that a ranking of the measures compares like with like.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from lib.book.statistics import average_ranks, pearson
from lib.grokking.generalization_measures import PacBayesSearch, cheap_measures, pac_bayes_sigma
from lib.grokking.llc import SGLDConfig
from lib.grokking.mlp_llc import mlp_llc_in_chunks
from lib.grokking.training import SweepResult


def rank_correlation(values: torch.Tensor, other: torch.Tensor) -> float:
    """Spearman's rank correlation of two equally long samples: the Pearson correlation of their
    average ranks. Infinite values are kept: +inf ranks above every finite value and -inf below,
    equal infinities tied (sharing the mean of their ranks). NaN where either sample is constant.

    Raises:
        ValueError: if either sample holds a NaN (drop those entries from both first).
    """
    values, other = values.double().flatten(), other.double().flatten()
    if values.shape != other.shape:
        raise ValueError(f"the samples differ in length: {values.numel()} and {other.numel()}.")
    if values.isnan().any() or other.isnan().any():
        raise ValueError("rank_correlation takes no NaN; drop those entries from both samples first.")
    return pearson(average_ranks(values), average_ranks(other))


def common_checkpoints(measures: dict[str, torch.Tensor], gap: torch.Tensor) -> torch.Tensor:
    """(E,) bool: the checkpoints where the gap and every measure are not NaN (infinite values
    count as present)."""
    keep = ~gap.isnan()
    for values in measures.values():
        keep &= ~values.isnan()
    return keep


def spearman_over_common(measures: dict[str, torch.Tensor],
                         gap: torch.Tensor) -> tuple[dict[str, float], torch.Tensor]:
    """Every measure's `rank_correlation` with the gap over the `common_checkpoints`, and that
    mask."""
    keep = common_checkpoints(measures, gap)
    return {name: rank_correlation(values[keep], gap[keep]) for name, values in measures.items()}, keep


@dataclass
class MeasuresOverTime:
    """The measures of one model along its training (chapter 5).

    Attributes:
        epochs: (E,) the checkpoints of the dense grid; gap: (E,) training accuracy minus
            accuracy on the whole table there.
        measures: name -> (E,) every cheap measure at every dense checkpoint.
        sparse: (S,) positions in `epochs` of the sparse grid.
        sparse_measures: name -> (S,) every measure at the sparse checkpoints: the cheap ones,
            the PAC-Bayes sharpness and the LLC.
        llc_sem: (S,) standard error of the LLC over chains; pac_bayes_converged: (S,) whether
            each PAC-Bayes bisection met its tolerance.
        seconds: wall-clock seconds of the cheap measures, the PAC-Bayes search and the LLC.
        sgld, search: the settings of the LLC chains and of the PAC-Bayes search.
    """

    epochs: torch.Tensor
    gap: torch.Tensor
    measures: dict[str, torch.Tensor]
    sparse: torch.Tensor
    sparse_measures: dict[str, torch.Tensor]
    llc_sem: torch.Tensor
    pac_bayes_converged: torch.Tensor
    seconds: dict[str, float]
    sgld: SGLDConfig
    search: PacBayesSearch

    @property
    def sparse_epochs(self) -> torch.Tensor:
        return self.epochs[self.sparse]

    def seconds_per_checkpoint(self) -> dict[str, float]:
        """The measured cost of one checkpoint: cheap measures, PAC-Bayes search, LLC chains."""
        return {"cheap_measures": self.seconds["cheap_measures"] / len(self.epochs),
                "pac_bayes": self.seconds["pac_bayes"] / max(1, len(self.sparse)),
                "llc": self.seconds["llc"] / max(1, len(self.sparse))}


def measures_over_time(result: SweepResult, sparse_epochs: list[int], sgld: SGLDConfig,
                       search: PacBayesSearch, generator: torch.Generator, workers: int = 1,
                       instance: int = 0) -> MeasuresOverTime:
    """The measures of instance `instance` of `result` at every checkpoint (cheap ones) and at
    `sparse_epochs` (all, with the PAC-Bayes sharpness and the LLC), beside the gap.

    The gap at a checkpoint comes from the metrics logged at its epoch (the same parameters:
    `lib.grokking.training` logs and saves after the same number of updates), so the run must
    log at every checkpoint epoch. `generator` seeds the PAC-Bayes noise and the LLC chains (two
    seeds drawn from it first).
    """
    epochs = sorted(result.checkpoints)
    missing = sorted(set(sparse_epochs) - set(epochs))
    if missing:
        raise ValueError(f"sparse epochs {missing} are not checkpoints of the run.")
    logged = {int(e): i for i, e in enumerate(result.log_epochs.tolist())}
    if any(e not in logged for e in epochs):
        raise ValueError("the run must log its metrics at every checkpoint epoch.")
    rows = torch.tensor([logged[e] for e in epochs])
    gap = (result.metrics["train_acc"][rows, instance] - result.metrics["acc_test"][rows, instance]).double()
    stacked = {name: torch.stack([result.checkpoints[e][name][instance] for e in epochs])
               for name in result.checkpoints[epochs[0]]}
    init = {name: value[:1].expand_as(value) for name, value in stacked.items()}
    train = (result.train_left, result.train_right, result.train_labels)
    pac_seed, llc_seed = torch.randint(0, 2**62, (2,), generator=generator).tolist()
    seconds = {}
    started = time.perf_counter()
    measures = cheap_measures(stacked, init, *train)
    seconds["cheap_measures"] = time.perf_counter() - started
    position = {e: i for i, e in enumerate(epochs)}
    sparse = torch.tensor([position[e] for e in sorted(set(sparse_epochs))], dtype=torch.long)
    chosen = {name: value[sparse] for name, value in stacked.items()}
    started = time.perf_counter()
    sigma = pac_bayes_sigma(chosen, *train, torch.Generator().manual_seed(pac_seed), search)
    seconds["pac_bayes"] = time.perf_counter() - started
    started = time.perf_counter()
    llc = mlp_llc_in_chunks(chosen, *train, sgld, torch.Generator().manual_seed(llc_seed), workers=workers)
    seconds["llc"] = time.perf_counter() - started
    sparse_measures = {**{name: values[sparse] for name, values in measures.items()},
                       "pac_bayes_sharpness": 1.0 / sigma.sigma ** 2, "llc": llc.mean.double()}
    return MeasuresOverTime(torch.tensor(epochs), gap, measures, sparse, sparse_measures,
                            llc.sem.double(), sigma.converged, seconds, sgld, search)


__all__ = ["MeasuresOverTime", "common_checkpoints", "measures_over_time", "rank_correlation",
           "spearman_over_common"]
