"""Parameters, experiment runs and printed summaries of chapter 4 (ambiguous grokking).

The notebook `notebooks/04_ambiguous_grokking.py` validates its papermill parameters with
`validate_parameters`, runs each experiment with `run_experiment`, and prints the comparisons
with the published numbers through the small formatting helpers here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.grokking.pairs import GroupPair, make_pair
from lib.grokking.outcomes import first_epoch_at_or_above, typical_instances
from lib.grokking.sweeps import run_pair_sweep, save_sweep, sweep_outcomes, sweep_summary
from lib.grokking.training import SweepResult, SweepConfig
from lib.grokking.mlp import MLPConfig
from lib.book.params import (
    ParameterError, check_bool, check_choice, check_common, check_float, check_int, check_int_list,
)

#: Numbers reported by the authors [@wu2025ambiguous], as recovered from their code and outputs.
PUBLISHED = {
    "S4_vs_A4xZ2": {"n_instances": 10_000, "fraction_g1": 603 / 10_000, "fraction_g2": 43 / 10_000,
                    "note": "wd 2e-5: 603 grokked S4, 43 grokked A4xZ2; wd 2e-4: 670 and 42"},
    "S5_vs_A5xZ2": {"n_instances": 100, "note": "~90% memorize, ~4% and ~6% grok one group or the other"},
    "Z48xZ2_vs_Z48x|25Z2": {"fraction_g2": 0.0, "note": "only the commutative group Z48xZ2 groks"},
    "Z100_vs_Z50xZ2": {"fraction_g1": 0.0, "fraction_g2": 0.0, "note": "never groks either group"},
    "subsample": {"note": "trained on a random 60% of the S5 intersection, always groks the intersection"},
}


@dataclass(frozen=True)
class Experiment:
    """One sweep of chapter 4: a pair, a model shape, a schedule and how many seeds."""

    key: str
    pair_name: str
    n_instances: int
    model: MLPConfig
    training: SweepConfig
    train_fraction: float = 1.0


@dataclass(frozen=True)
class ChapterConfig:
    """Validated parameters of chapter 4."""

    smoke: bool
    seed: int
    device: torch.device
    results_dir: str
    grok_threshold: float
    save_sweeps: bool
    experiments: dict[str, Experiment]


def validate_parameters(
    *, smoke, seed, device, results_dir, epochs, log_every, grok_threshold, s4_instances, s4_dim,
    s4_weight_decay, z48_instances, z48_embed_dim, z48_hidden_dim, z48_weight_decay,
    z100_instances, z100_embed_dim, z100_hidden_dim, z100_weight_decay, s5_instances, s5_dim,
    s5_weight_decay, subsample_pairs, subsample_instances, subsample_fraction, checkpoint_every,
    save_sweeps,
) -> ChapterConfig:
    """Check chapter 4's parameters and build one `Experiment` per sweep.

    `smoke=True` shrinks every sweep to a few instances and a few dozen epochs. Raises
    `ParameterError` with one sentence naming the first bad parameter.
    """
    resolved = check_common(smoke, seed, device, results_dir)
    check_int("epochs", epochs, 1, 1_000_000)
    check_int("log_every", log_every, 1, epochs)
    check_float("grok_threshold", grok_threshold, 0.5, 1.0)
    for name, value in [("s4_instances", s4_instances), ("z48_instances", z48_instances),
                        ("z100_instances", z100_instances), ("s5_instances", s5_instances)]:
        check_int(name, value, 1, 1_000_000)
    for name, value in [("s4_dim", s4_dim), ("z48_embed_dim", z48_embed_dim),
                        ("z48_hidden_dim", z48_hidden_dim), ("z100_embed_dim", z100_embed_dim),
                        ("z100_hidden_dim", z100_hidden_dim), ("s5_dim", s5_dim)]:
        check_int(name, value, 1, 4096)
    for name, value in [("s4_weight_decay", s4_weight_decay), ("z48_weight_decay", z48_weight_decay),
                        ("z100_weight_decay", z100_weight_decay), ("s5_weight_decay", s5_weight_decay)]:
        check_float(name, value, 0.0, 1.0)
    if not isinstance(subsample_pairs, (list, tuple)) or not subsample_pairs:
        raise ParameterError(f"Parameter `subsample_pairs` must be a non-empty list of pair names; "
                             f"got {subsample_pairs!r}.")
    for name in subsample_pairs:
        check_choice("subsample_pairs", name, ["S4_vs_A4xZ2", "S5_vs_A5xZ2"])
    counts = check_int_list("subsample_instances", subsample_instances, 1, 1_000_000)
    if len(counts) != len(subsample_pairs):
        raise ParameterError("Parameter `subsample_instances` must have one entry per subsample "
                             f"pair; got {len(counts)} for {len(subsample_pairs)} pairs.")
    check_float("subsample_fraction", subsample_fraction, 0.0, 1.0, low_inclusive=False)
    check_int("checkpoint_every", checkpoint_every, 0)
    check_bool("save_sweeps", save_sweeps)

    def shrink(n: int, cap: int) -> int:
        return min(n, cap) if smoke else n

    if smoke:
        epochs, log_every = min(epochs, 60), min(log_every, 10)
        s5_dim = min(s5_dim, 32)
        checkpoint_every = min(checkpoint_every, 30) if checkpoint_every else 0

    def schedule(weight_decay: float, checkpoints: bool = False) -> SweepConfig:
        marks = ()
        if checkpoints and checkpoint_every:
            marks = tuple(sorted(set(range(0, epochs + 1, checkpoint_every)) | {epochs}))
        return SweepConfig(epochs=epochs, log_every=log_every, weight_decay=weight_decay,
                              checkpoint_epochs=marks)

    s4_model = MLPConfig(24, s4_dim, s4_dim)
    s5_model = MLPConfig(120, s5_dim, s5_dim)
    experiments = {
        "z48": Experiment("z48", "Z48xZ2_vs_Z48x|25Z2", shrink(z48_instances, 2),
                          MLPConfig(96, z48_embed_dim, z48_hidden_dim), schedule(z48_weight_decay)),
        "s4": Experiment("s4", "S4_vs_A4xZ2", shrink(s4_instances, 16), s4_model,
                         schedule(s4_weight_decay, checkpoints=True)),
        "s5": Experiment("s5", "S5_vs_A5xZ2", shrink(s5_instances, 1), s5_model,
                         schedule(s5_weight_decay)),
        "z100": Experiment("z100", "Z100_vs_Z50xZ2", shrink(z100_instances, 1),
                           MLPConfig(100, z100_embed_dim, z100_hidden_dim), schedule(z100_weight_decay)),
    }
    for name, count in zip(subsample_pairs, counts):
        key = "subsample_" + name.split("_")[0].lower()
        model, decay = (s5_model, s5_weight_decay) if name.startswith("S5") else (s4_model, s4_weight_decay)
        experiments[key] = Experiment(key, name, shrink(count, 4), model, schedule(decay),
                                      float(subsample_fraction))
    return ChapterConfig(smoke, seed, resolved, results_dir, float(grok_threshold), save_sweeps,
                         experiments)


@dataclass
class ExperimentRun:
    """A finished sweep with its pair, outcome codes and JSON summary."""

    experiment: Experiment
    pair: GroupPair
    result: SweepResult
    codes: torch.Tensor
    summary: dict


def run_experiment(experiment: Experiment, config: ChapterConfig, progress: bool = True) -> ExperimentRun:
    """Train one sweep of the chapter and classify its instances.

    Instance i of every sweep uses seed `config.seed * 100_000 + i`; the random subset of a
    subsample experiment is drawn from a generator seeded with `config.seed`.
    """
    pair = make_pair(experiment.pair_name)
    seeds = [config.seed * 100_000 + i for i in range(experiment.n_instances)]
    result = run_pair_sweep(pair, seeds, experiment.model, experiment.training,
                            train_fraction=experiment.train_fraction,
                            generator=torch.Generator().manual_seed(config.seed),
                            device=config.device, progress=progress)
    codes = sweep_outcomes(result, config.grok_threshold, config.grok_threshold)
    summary = sweep_summary(result, codes, grok_threshold=config.grok_threshold)
    summary["experiment"] = experiment.key
    return ExperimentRun(experiment, pair, result, codes, summary)


def save_experiment(run: ExperimentRun, results_dir: str) -> str:
    """Save a sweep to `results_dir/04_sweep_<key>.pt` for chapters 5 and 6; returns the file name."""
    name = f"04_sweep_{run.experiment.key}.pt"
    save_sweep(run.result, f"{results_dir}/{name}")
    return name


def representative_instances(run: ExperimentRun, threshold: float = 0.999) -> dict[str, int]:
    """One typical instance per outcome: the one that fitted its training set at the median epoch."""
    fitted = first_epoch_at_or_above(run.result.metrics["train_acc"], run.result.log_epochs, threshold)
    return typical_instances(run.codes, fitted.float())


def fractions_line(run: ExperimentRun) -> str:
    """One line: counts and fractions of each outcome with 95% intervals."""
    s = run.summary
    g1, g2 = s["g1"], s["g2"]
    parts = []
    for key, label in [("grokked_g1", f"grokked {g1}"), ("grokked_g2", f"grokked {g2}"),
                       ("memorized", "memorized only"), ("failed", "did not fit")]:
        low, high = s[f"ci_{key}"]
        parts.append(f"{label}: {s[f'count_{key}']} ({100 * s[f'count_{key}'] / s['n_instances']:.2f}%, "
                     f"95% CI {100 * low:.2f}-{100 * high:.2f}%)")
    return (f"{s['name']}, {s['n_instances']} instances, {s['epochs']} epochs, "
            f"{s['seconds']:.0f} s: " + "; ".join(parts))

