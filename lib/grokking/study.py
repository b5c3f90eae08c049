"""The ambiguous-grokking study's settings and published numbers, written once (chapters 4-6 and
the index table, `lib.book.reproduced`).

Everything here was recovered from the study [@wu2025ambiguous] and its authors' code
(GitHub LouisYRYJ/Finite-groups; the facts are listed in the book's reference notes):

* the pairs the chapters train (`S4_PAIR`, `S5_PAIR`);
* the model and schedule of each: every published S4 and S5 run had the unembedding bias (the
  authors' `--unembed_bias`, without weight decay), so `S4_MODEL` and `S5_MODEL` have it;
  `S4_MODEL_NO_BIAS` is the book's earlier variant, whose sweep feeds chapters 5 and 6 (with the
  bias, seeds that grok A4 x Z2 are too rare for a CPU-sized sweep to hold several);
* the published counts and fractions, each with the protocol that produced it (bias, weight
  decay, grokking threshold), so that a number of the book sits beside a published one only when
  both come from the same protocol (`PublishedCount.matches`);
* the published LLC along training of S5 (`PUBLISHED_S5_LLC`) with its chains, and the
  published argmax-flip rates and ungrokking shares of chapter 6.
"""

from __future__ import annotations

from dataclasses import dataclass

from lib.grokking.mlp import MLPConfig
from lib.grokking.training import SweepConfig

#: The pair of the 10,000-seed experiment and the pair of the LLC trajectory.
S4_PAIR = "S4_vs_A4xZ2"
S5_PAIR = "S5_vs_A5xZ2"

#: The study's S4 model: d = h = 32 with the unembedding bias [@wu2025ambiguous].
S4_MODEL = MLPConfig(24, 32, 32, unembed_bias=True)
#: The same model without the bias: the book's earlier variant (its sweep feeds chapters 5-6).
S4_MODEL_NO_BIAS = MLPConfig(24, 32, 32, unembed_bias=False)
#: The study's S4 schedule: coupled weight decay 2e-5, 2,000 full-batch epochs; snapshots every
#: 500 epochs (what chapter 4 saves for chapters 5 and 6).
S4_SCHEDULE = SweepConfig(epochs=2000, log_every=20, weight_decay=2e-5,
                          checkpoint_epochs=(0, 500, 1000, 1500, 2000))
#: The study's S5 model and schedule: d = h = 128 with the bias, weight decay 2e-5, 2,000 epochs.
S5_MODEL = MLPConfig(120, 128, 128, unembed_bias=True)
S5_SCHEDULE = SweepConfig(epochs=2000, log_every=20, weight_decay=2e-5)

#: The authors' runs of the other pairs (their code; chapter 4). Both use their "MLP3" model, one
#: linear map on the summed embeddings (`MLPConfig.tied_linear`), without the bias, and Adam
#: with beta2 = 0.999: the Z48 runs (August 2024) predate the commit that passed their betas to
#: Adam (torch's default 0.999 applied), the Z35 sweep sets it. Grokked = accuracy >= 0.95, the
#: threshold of their training script (`AUTHORS_SCRIPT_THRESHOLD`).
#: Z48 (`llc_intersect.ipynb`): d = 32, h = 64, wd 2e-4, 20,000 epochs, 100 instances.
Z48_PAIR = "Z48xZ2_vs_Z48x|25Z2"
Z48_MODEL = MLPConfig(96, 32, 64, unembed_bias=False, tied_linear=True)
Z48_SCHEDULE = SweepConfig(epochs=20_000, log_every=200, weight_decay=2e-4, beta2=0.999)
#: Z35 (`scripts/train_sweep.sh`): d = h = 128, wd 1e-4, 5,000 epochs, 100 instances at each of
#: eight learning rates.
Z35_PAIR = "Z35x|6Z2_vs_Z35x|34Z2"
Z35_MODEL = MLPConfig(70, 128, 128, unembed_bias=False, tied_linear=True)
Z35_SCHEDULE = SweepConfig(epochs=5_000, log_every=100, weight_decay=1e-4, beta2=0.999)
Z35_LEARNING_RATES = (5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1)

#: Grokking thresholds of the published counts: test accuracy >= 0.999 for the wd 2e-5 counts,
#: > 0.95 at the last logged epoch for the wd 2e-4 counts (`early_stop.ipynb`).
STRICT_THRESHOLD = 0.999
AUTHORS_SCRIPT_THRESHOLD = 0.95


@dataclass(frozen=True)
class PublishedCount:
    """A published count of seeds that grokked each group of a pair, with its protocol."""

    pair: str
    n_instances: int
    grokked_g1: int
    grokked_g2: int
    weight_decay: float
    unembed_bias: bool
    grok_threshold: float
    note: str

    @property
    def fraction_g1(self) -> float:
        return self.grokked_g1 / self.n_instances

    @property
    def fraction_g2(self) -> float:
        return self.grokked_g2 / self.n_instances

    def matches(self, pair: str, weight_decay: float, unembed_bias: bool) -> bool:
        """Whether a sweep of `pair` at this decay and bias setting is trained as this count was
        (the threshold is applied when the sweep is classified)."""
        return (pair, weight_decay, unembed_bias) == (self.pair, self.weight_decay, self.unembed_bias)

    def as_json(self) -> dict:
        """The count, its fractions and its protocol, for a results JSON."""
        return {"pair": self.pair, "n_instances": self.n_instances, "grokked_g1": self.grokked_g1,
                "grokked_g2": self.grokked_g2, "fraction_g1": self.fraction_g1,
                "fraction_g2": self.fraction_g2, "weight_decay": self.weight_decay,
                "unembed_bias": self.unembed_bias, "grok_threshold": self.grok_threshold,
                "note": self.note}


#: The two published S4 counts (10,000 seeds, d = h = 32, bias, 2,000 epochs).
PUBLISHED_S4 = PublishedCount(S4_PAIR, 10_000, 603, 43, 2e-5, True, STRICT_THRESHOLD,
                              "wd 2e-5: 603 grokked S4, 43 grokked A4xZ2 (accuracy >= 0.999)")
PUBLISHED_S4_SECOND_DECAY = PublishedCount(
    S4_PAIR, 10_000, 670, 42, 2e-4, True, AUTHORS_SCRIPT_THRESHOLD,
    "wd 2e-4: 670 grokked S4, 42 grokked A4xZ2 (accuracy > 0.95 at the last logged epoch)")

#: What the study says of the other pairs (no counts), by chapter 4's experiment key.
PUBLISHED_NOTES = {
    "z48": "only the commutative group Z48xZ2 groks",
    "s5": "100 seeds (d = h = 128, bias, wd 2e-5): ~90% memorize, ~4% and ~6% grok one group or the other",
    "z35": "listed as another pair where either group can be grokked; no fractions given",
    "z100": "never groks either group",
    "subsample": "trained on a random 60% of the S5 intersection, always groks the intersection",
}

#: The published LLC along training of S5 (`llc_save.ipynb`, `data/S5_A5x2_llcs.pt`): ONE run of
#: 3 instances (d = h = 128, bias), a checkpoint every 10 epochs, 3 chains of 3,000 SGLD steps
#: per checkpoint; the three instances peak at these values near epochs 80-90 and end here. The
#: notebook picks the instances by outcome (`insts`: the lowest S5 loss, the lowest A5xZ2 loss, the
#: first with both accuracies < 0.551), so instance 31 grokked S5, 43 A5xZ2 and 8 neither, in the
#: order of `outcomes`; the file's last values are 505.3, 587.1, 598.3.
PUBLISHED_S5_LLC = {"peaks": (4558, 4573, 4601), "peak_epochs": (80, 90), "finals": (505, 587, 598),
                    "outcomes": ("grokked_g1", "grokked_g2", "neither"),
                    "instances": 3, "chains": 3, "steps": 3000, "checkpoint_every": 10}

#: The study's measures over time (`gen_measures_epochs.ipynb`, `src/generalization_measures.py`):
#: ONE S5 model without the bias (d = h = 128), trained 2,000 epochs with weight decay 2e-5 on a
#: random 40% of the S5 table (5,760 of 14,400 pairs); its checkpoints every 3 epochs (0, 3, ...,
#: 1,998: 667) each measured (LLC: 5 chains of 3,000 SGLD steps; PAC-Bayes sigma: 100 draws per
#: doubling step, 1,000 per bisection step, depth 15) and compared with the generalization gap
#: (training accuracy minus accuracy on the whole table) by Spearman over the checkpoints.
S5_MEASURES_MODEL = MLPConfig(120, 128, 128, unembed_bias=False)
S5_MEASURES_PROTOCOL = {"train_fraction": 0.4, "epochs": 2000, "weight_decay": 2e-5,
                        "checkpoint_every": 3, "checkpoints": 667, "llc_chains": 5, "llc_steps": 3000,
                        "pac_bayes_doubling_draws": 100, "pac_bayes_bisection_draws": 1000,
                        "pac_bayes_depth": 15}
#: What the study concludes from those plots: the LLC tracks the gap best; the inverse margin and
#: the training loss also do well (but are large at the start, where the gap is small).
S5_MEASURES_CLAIM = {"best": "llc", "also_good": ("inverse_margin", "train_loss")}

#: The published argmax-flip rates of the test-set logits over a late interval, per outcome
#: group (chapter 6).
PUBLISHED_FLIP_RATES = {"grokked S4": 5.4e-5, "grokked A4xZ2": 4e-4, "neither": 6.5e-3}
#: The published share of transplanted seeds that partially ungrok their group, per group
#: grokked first ("about 7%" one way, "8%" with the roles swapped; chapter 6).
PUBLISHED_UNGROK_SHARES = (0.07, 0.08)
#: The protocol of the published argmax-flip rates (`total_variation.ipynb`): one run of 1,000
#: instances with the bias, a snapshot every 5 epochs over 3,000 epochs, the share of all N^2
#: pairs whose argmax changes averaged over the last 100 intervals; 6 seeds grokked A4xZ2.
PUBLISHED_FLIP_PROTOCOL = {"instances": 1000, "unembed_bias": True, "epochs": 3000, "every": 5,
                           "intervals": 100, "a4_seeds": 6}
#: The published training Jacobian's setting (`training_jacobian.ipynb`): d = h = 32 with the
#: bias, weight decay 2e-4, full-batch Adam on an iid 58.4% of S4's table, composed over
#: segments of 100 steps (chapter 6).
PUBLISHED_JACOBIAN = {"n_parameters": 4376, "steps": 4000, "segment": 100, "weight_decay": 2e-4,
                      "train_fraction": 0.584}


__all__ = [
    "AUTHORS_SCRIPT_THRESHOLD", "PUBLISHED_FLIP_PROTOCOL", "PUBLISHED_FLIP_RATES", "PUBLISHED_JACOBIAN",
    "PUBLISHED_NOTES", "PUBLISHED_S4",
    "PUBLISHED_S4_SECOND_DECAY", "PUBLISHED_S5_LLC", "PUBLISHED_UNGROK_SHARES", "PublishedCount",
    "S4_MODEL", "S4_MODEL_NO_BIAS", "S4_PAIR", "S4_SCHEDULE", "S5_MEASURES_CLAIM", "S5_MEASURES_MODEL",
    "S5_MEASURES_PROTOCOL", "S5_MODEL", "S5_PAIR", "S5_SCHEDULE",
    "STRICT_THRESHOLD",
]
