"""The authors' transplant protocol run in both directions, with every ungrokking criterion (chapter 6).

`transplant_in_both_directions` trains seeds of the study's S4 model (d = h = 32, the bias,
weight decay 2e-5) on each group's table, then on the pair's intersection with a fresh Adam
(`lib.grokking.transplant.transplant`), once per group grokked first, and says which of them
ungrok the group under each criterion (`lib.grokking.transplant.ungrok_criteria`);
`TransplantStudy` holds both directions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.grokking.pairs import make_pair
from lib.grokking.study import S4_MODEL, S4_PAIR, S4_SCHEDULE
from lib.grokking.training import SweepConfig
from lib.grokking.transplant import Transplant, TransplantFates, transplant, ungrok_criteria


@dataclass
class TransplantStudy:
    """Transplants in both directions: group ("g1" or "g2") -> its run, and its seeds' fates
    under each ungrokking criterion (`lib.grokking.transplant.CRITERIA`)."""

    runs: dict[str, Transplant]
    criteria: dict[str, dict[str, TransplantFates]]

    @property
    def fates(self) -> dict[str, TransplantFates]:
        """The fates under the book's criterion (below 0.999 at a logged epoch)."""
        return {group: by_criterion["below 0.999"] for group, by_criterion in self.criteria.items()}


def transplant_in_both_directions(seeds: dict[str, list[int]], first_epochs: int, second_epochs: int,
                                  train_fraction: float, generator: torch.Generator, *, workers: int,
                                  progress: bool = True) -> TransplantStudy:
    """The authors' transplant protocol in both directions: for each group ("g1", "g2") its
    `seeds` of the study's S4 model trained on a random `train_fraction` of the group's table (1:
    all of it) for `first_epochs`, then on the pair's intersection for `second_epochs` with a
    fresh Adam, and which of them ungrok the group by each criterion."""
    pair = make_pair(S4_PAIR)

    def schedule(epochs: int) -> SweepConfig:
        return SweepConfig(epochs=epochs, log_every=min(S4_SCHEDULE.log_every, epochs),
                           weight_decay=S4_SCHEDULE.weight_decay, workers=workers)

    runs, criteria = {}, {}
    for group, group_seeds in seeds.items():
        runs[group] = transplant(pair, group, group_seeds, S4_MODEL, schedule(first_epochs),
                                 schedule(second_epochs), train_fraction, generator, progress=progress)
        criteria[group] = ungrok_criteria(runs[group])
    return TransplantStudy(runs, criteria)


__all__ = ["TransplantStudy", "transplant_in_both_directions"]
