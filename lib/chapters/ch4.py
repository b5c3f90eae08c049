"""Parameters, experiments and runs of chapter 4 (ambiguous grokking).

The notebook `notebooks/04_ambiguous_grokking.py` validates its papermill parameters, declared by
`Chapter4Parameters`, runs each experiment with `run_experiment` and saves the sweeps with
`save_experiments`. What the chapter reports about the runs (outcome fractions next to the
published ones, the subsample and class-balance findings, the results JSON and its checks) is
built in `lib.chapters.ch4_results`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from lib.grokking.pairs import GroupPair, make_pair
from lib.grokking.outcomes import first_epoch_at_or_above, typical_instances
from lib.grokking.sweeps import run_pair_sweep, save_sweep, sweep_outcomes, sweep_summary
from lib.grokking.training import SweepResult, SweepConfig, snapshot_epochs
from lib.grokking.mlp import MLPConfig
from lib.grokking.study import (
    AUTHORS_SCRIPT_THRESHOLD, PUBLISHED_S4, PUBLISHED_S4_SECOND_DECAY, PublishedCount, S4_PAIR, S5_PAIR,
    Z35_MODEL, Z35_PAIR, Z35_SCHEDULE, Z48_MODEL, Z48_PAIR, Z48_SCHEDULE,
)
from lib.book.params import at_most, KEEP, parameter, ParameterError
from lib.book.tables import markdown_table, short_scientific
from lib.book.seed_streams import stream_seeds
from lib.chapters.sweep_parameters import SweepChapterParameters

#: The pairs whose intersection chapter 4 can subsample.
SUBSAMPLE_PAIRS = ("S4_vs_A4xZ2", "S5_vs_A5xZ2")

def z35_key(learning_rate: float) -> str:
    """The experiment key of the Z35 sweep at the authors' settings and this learning rate."""
    return f"z35_lr{learning_rate:g}"


def pair_keys(keys) -> list[str]:
    """The keys, in order, of the experiments trained on the whole intersection."""
    return [key for key in keys if not key.startswith(SUBSAMPLE_PREFIX)]

#: Keys of the experiments trained on part of the intersection start with this.
SUBSAMPLE_PREFIX = "subsample_"

#: The published counts by experiment key, each with its protocol (`lib.grokking.study`).
PUBLISHED_COUNTS: dict[str, PublishedCount] = {"s4": PUBLISHED_S4,
                                               "s4_second_decay": PUBLISHED_S4_SECOND_DECAY}


def published_for(experiment: Experiment) -> PublishedCount | None:
    """The published count trained as `experiment` was (same pair, weight decay and bias), or
    None: a sweep is compared only with a count of the same protocol (on the whole intersection)."""
    if experiment.train_fraction < 1:
        return None
    for count in PUBLISHED_COUNTS.values():
        if count.matches(experiment.pair_name, experiment.training.weight_decay, experiment.model.unembed_bias):
            return count
    return None


@dataclass(frozen=True)
class Experiment:
    """One sweep of chapter 4: a pair, a model shape, a schedule, how many seeds and the grokking
    threshold its seeds are classified at (None: the chapter's `grok_threshold`)."""

    key: str
    pair_name: str
    n_instances: int
    model: MLPConfig
    training: SweepConfig
    train_fraction: float = 1.0
    grok_threshold: float | None = None


def experiments_table(experiments: dict[str, Experiment]) -> str:
    """Markdown table, one row per experiment of the chapter: its key, pair, seeds, model shape,
    weight decay, epochs, optimizer, share of the intersection and threshold ("chapter's": the
    chapter's `grok_threshold`)."""
    rows = [[key, e.pair_name, e.n_instances, e.model.embed_dim, e.model.hidden_dim,
             "one map on summed embeddings" if e.model.tied_linear else "two maps",
             "yes" if e.model.unembed_bias else "no", e.training.weight_decay, e.training.epochs,
             e.training.lr, e.training.beta2, e.train_fraction,
             "chapter's" if e.grok_threshold is None else e.grok_threshold]
            for key, e in experiments.items()]
    return markdown_table(
        ["experiment", "pair", "seeds", "d", "h", "model", "bias", "weight decay", "epochs", "Adam lr",
         "beta2", "of the intersection", "threshold"], rows,
        formats={7: short_scientific, 9: lambda value: f"{value:g}", 10: lambda value: f"{value:g}",
                 11: lambda share: f"{share:.0%}", 12: lambda value: value if isinstance(value, str) else f"{value:g}"})


def subsample_keys(keys) -> list[str]:
    """The keys, in order, of the experiments trained on part of the intersection."""
    return [key for key in keys if key.startswith(SUBSAMPLE_PREFIX)]


def _count(help: str, smoke_cap: int):
    return parameter(help, low=1, high=1_000_000, smoke=at_most(smoke_cap))


def _width(help: str, smoke=KEEP):
    return parameter(help, low=1, high=4096, smoke=smoke)


def _decay(help: str):
    return parameter(help, low=0.0, high=1.0)


@dataclass(frozen=True)
class Chapter4Parameters(SweepChapterParameters):
    """The papermill parameters of chapter 4, each with its type, bounds, help and smoke value."""

    epochs: int = parameter("full-batch epochs of every sweep (the authors: 2000)", low=1,
                            high=1_000_000, smoke=at_most(60))
    log_every: int = parameter("epochs between recorded accuracies and losses", low=1,
                               high=lambda earlier: earlier.epochs, smoke=at_most(10))
    grok_threshold: float = SweepChapterParameters.shared("grok_threshold")
    unembed_bias: bool = parameter(
        "give the S4 and S5 models an unembedding bias without weight decay (published: on)")
    s4_instances: int = _count("seeds of the S4 vs A4 x Z2 sweep (published: 10,000)", 16)
    s4_dim: int = _width("embedding and hidden width (d and h) for the S4 pair (published: 32)")
    s4_weight_decay: float = _decay("coupled L2 weight decay for the S4 pair (published: 2e-5)")
    s4_second_weight_decay: float = _decay(
        "weight decay of a second S4 sweep on the same seeds (published: 2e-4)")
    z48_instances: int = _count(
        "seeds of the Z48 x Z2 vs Z48 x| Z2 sweep at the authors' settings (published: 100)", 2)
    z48_epochs: int = parameter("full-batch epochs of the Z48 sweep (the authors: 20000)", low=1,
                                high=1_000_000, smoke=at_most(60))
    z35_instances: int = _count(
        "seeds of the Z35 x|6 Z2 vs Z35 x|34 Z2 sweep at each learning rate (published: 100)", 1)
    z35_learning_rates: tuple[float, ...] = parameter(
        "Adam learning rates of the Z35 sweep at the authors' settings (the authors: 5e-4 to 1e-1)",
        low=1e-6, high=1.0, smoke=lambda rates: rates[:1])
    z35_epochs: int = parameter("full-batch epochs of the Z35 sweep (the authors: 5000)", low=1,
                                high=1_000_000, smoke=at_most(60))
    z35_book_instances: int = _count(
        "seeds of the Z35 pair with the chapter's recipe (two maps, `epochs`, `grok_threshold`)", 2)
    z35_embed_dim: int = _width("embedding width for the Z35 pair with the chapter's recipe")
    z35_hidden_dim: int = _width("hidden width for the Z35 pair with the chapter's recipe")
    z35_weight_decay: float = _decay("weight decay for the Z35 pair with the chapter's recipe")
    z100_instances: int = _count("seeds of the Z100 vs Z50 x Z2 sweep", 1)
    z100_embed_dim: int = _width("embedding width for the Z100 pair")
    z100_hidden_dim: int = _width("hidden width for the Z100 pair")
    z100_weight_decay: float = _decay("weight decay for the Z100 pair")
    s5_instances: int = _count(
        "seeds of the S5 vs A5 x Z2 sweep: a small sample on a CPU (published: 100)", 1)
    s5_dim: int = _width("embedding and hidden width (d and h) for the S5 pair (published: 128)",
                         smoke=at_most(32))
    s5_weight_decay: float = _decay("weight decay for the S5 pair (published: 2e-5)")
    subsample_pairs: tuple[str, ...] = parameter(
        "pairs trained on a random part of the intersection", choices=SUBSAMPLE_PAIRS)
    subsample_instances: tuple[int, ...] = parameter(
        "seeds for each of those pairs", low=1, high=1_000_000,
        smoke=lambda counts: tuple(min(c, 4) for c in counts))
    subsample_fraction: float = parameter(
        "share of the intersection used for training (published: 0.6)", low=0.0, high=1.0,
        low_inclusive=False)
    checkpoint_every: int = parameter(
        "epochs between saved parameter snapshots of the S4 sweep without bias (0: none)", low=0,
        smoke=at_most(30))
    save_sweeps: bool = parameter(
        "save the sweeps (metrics, final parameters, S4 snapshots) for chapters 5-6")

    def check_consistency(self) -> None:
        super().check_consistency()
        if len(self.subsample_instances) != len(self.subsample_pairs):
            raise ParameterError(
                "Parameter `subsample_instances` must have one entry per subsample pair; got "
                f"{len(self.subsample_instances)} for {len(self.subsample_pairs)} pairs.")

    def schedule(self, weight_decay: float, checkpoints: bool = False) -> SweepConfig:
        """The training schedule of one sweep; only the S4 sweep without bias (the one chapters
        5 and 6 measure) keeps parameter snapshots."""
        marks = ()
        if checkpoints and self.checkpoint_every:
            marks = snapshot_epochs(self.epochs, self.checkpoint_every)
        return SweepConfig(epochs=self.epochs, log_every=self.log_every, weight_decay=weight_decay,
                           checkpoint_epochs=marks)

    @property
    def experiments(self) -> dict[str, Experiment]:
        """One `Experiment` per sweep of the chapter, in the order the chapter runs them."""
        s4_model = MLPConfig(24, self.s4_dim, self.s4_dim, self.unembed_bias)
        s4_no_bias = MLPConfig(24, self.s4_dim, self.s4_dim, False)
        s5_model = MLPConfig(120, self.s5_dim, self.s5_dim, self.unembed_bias)
        z48_schedule = dataclasses.replace(Z48_SCHEDULE, epochs=self.z48_epochs,
                                           log_every=min(Z48_SCHEDULE.log_every, self.z48_epochs))
        experiments = {
            "z48": Experiment("z48", Z48_PAIR, self.z48_instances, Z48_MODEL, z48_schedule,
                              grok_threshold=AUTHORS_SCRIPT_THRESHOLD),
            "s4": Experiment("s4", S4_PAIR, self.s4_instances, s4_model,
                             self.schedule(self.s4_weight_decay)),
            "s4_no_bias": Experiment("s4_no_bias", S4_PAIR, self.s4_instances, s4_no_bias,
                                     self.schedule(self.s4_weight_decay, checkpoints=True)),
            "s4_second_decay": Experiment("s4_second_decay", S4_PAIR, self.s4_instances, s4_model,
                                          self.schedule(self.s4_second_weight_decay)),
            "s5": Experiment("s5", S5_PAIR, self.s5_instances, s5_model,
                             self.schedule(self.s5_weight_decay)),
        }
        for rate in self.z35_learning_rates:
            schedule = dataclasses.replace(Z35_SCHEDULE, epochs=self.z35_epochs, lr=rate,
                                           log_every=min(Z35_SCHEDULE.log_every, self.z35_epochs))
            experiments[z35_key(rate)] = Experiment(z35_key(rate), Z35_PAIR, self.z35_instances, Z35_MODEL,
                                                    schedule, grok_threshold=AUTHORS_SCRIPT_THRESHOLD)
        experiments |= {
            "z35_book": Experiment("z35_book", Z35_PAIR, self.z35_book_instances,
                                   MLPConfig(70, self.z35_embed_dim, self.z35_hidden_dim),
                                   self.schedule(self.z35_weight_decay)),
            "z100": Experiment("z100", "Z100_vs_Z50xZ2", self.z100_instances,
                               MLPConfig(100, self.z100_embed_dim, self.z100_hidden_dim),
                               self.schedule(self.z100_weight_decay)),
        }
        for name, count in zip(self.subsample_pairs, self.subsample_instances):
            key = SUBSAMPLE_PREFIX + name.split("_")[0].lower()
            model, decay = ((s5_model, self.s5_weight_decay) if name.startswith("S5")
                            else (s4_model, self.s4_weight_decay))
            experiments[key] = Experiment(key, name, count, model, self.schedule(decay),
                                          self.subsample_fraction)
        return experiments


@dataclass
class ExperimentRun:
    """A finished sweep with its pair, outcome codes, JSON summary and the threshold that classified it."""

    experiment: Experiment
    pair: GroupPair
    result: SweepResult
    codes: torch.Tensor
    summary: dict
    grok_threshold: float


def run_experiment(experiment: Experiment, config: Chapter4Parameters, progress: bool = True) -> ExperimentRun:
    """Train one sweep of the chapter and classify its instances.

    Instance i of every sweep uses seed i of the "sweep" stream (`lib.book.seed_streams`:
    `config.seed * 100_000 + i`); the random subset of a subsample experiment is drawn from a
    generator seeded with `config.seed`.
    """
    pair = make_pair(experiment.pair_name)
    seeds = stream_seeds("sweep", config.seed, experiment.n_instances)
    result = run_pair_sweep(pair, seeds, experiment.model, experiment.training,
                            train_fraction=experiment.train_fraction,
                            generator=torch.Generator().manual_seed(config.seed),
                            device=config.device, progress=progress)
    threshold = config.grok_threshold if experiment.grok_threshold is None else experiment.grok_threshold
    return classify_run(experiment, pair, result, threshold)


def classify_run(experiment: Experiment, pair: GroupPair, result: SweepResult,
                 grok_threshold: float) -> ExperimentRun:
    """Outcome codes and JSON summary of a trained sweep; one threshold for grokking and fitting."""
    codes = sweep_outcomes(result, grok_threshold, grok_threshold)
    summary = sweep_summary(result, codes, grok_threshold=grok_threshold)
    summary["experiment"] = experiment.key
    return ExperimentRun(experiment, pair, result, codes, summary, grok_threshold)


def save_experiment(run: ExperimentRun, results_dir: str) -> str:
    """Save a sweep to `results_dir/04_sweep_<key>.pt` for chapters 5 and 6; returns the file name."""
    name = f"04_sweep_{run.experiment.key}.pt"
    save_sweep(run.result, f"{results_dir}/{name}")
    return name


def save_experiments(runs: dict[str, ExperimentRun], config: Chapter4Parameters) -> dict[str, str]:
    """Save every sweep when `config.save_sweeps` is set; experiment key -> file name (else empty)."""
    if not config.save_sweeps:
        return {}
    return {key: save_experiment(run, config.results_dir) for key, run in runs.items()}


def representative_instances(run: ExperimentRun, threshold: float = 0.999) -> dict[str, int]:
    """One typical instance per outcome: the one that fitted its training set at the median epoch."""
    fitted = first_epoch_at_or_above(run.result.metrics["train_acc"], run.result.log_epochs, threshold)
    return typical_instances(run.codes, fitted.float())

