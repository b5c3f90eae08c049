# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Which solution is simpler? Complexity of the grokked solutions
#
# Chapter 4 trained a thousand seeds on the pairs where S4 and A4 x Z2 agree: most memorized,
# some grokked S4, a few grokked A4 x Z2. If training prefers simple solutions, a measure of
# complexity should tell the outcomes apart, and perhaps even predict them. The study of Wu and
# Jaburi {cite:p}`wu2025ambiguous` tried three measures at the end of training, the local learning
# coefficient (LLC) {cite:p}`lau2023llc`, the weight norm and the circuit efficiency {cite:p}`varma2023efficiency`,
# and found all three "somewhat predictive": seeds that grok S4 tend to have lower training
# loss, weight norm and LLC. This chapter measures the same seeds.
#
# What you will see:
#
# - the LLC estimated by SGLD for hundreds of seeds and their chains at once, checked on a
#   model whose answer is known, with the spread of the estimate over chains;
# - training loss, weight norm, LLC and circuit efficiency of every grokker and a sample of the
#   other seeds, per outcome with intervals, their correlations, and how well each measure
#   separates the outcomes (ROC AUC);
# - the LLC along training of one S4 seed per outcome and of an S5 seed as the study followed
#   it, with chains of the study's 3,000 steps, and how the estimate moves with the chain length;
# - the generalization measures of Jiang et al. {cite:p}`jiang2019fantastic` along the training of
#   one S5 model on 40% of its table, as the study followed them: which one follows the
#   generalization gap.

# %% tags=["parameters"]
smoke = False  # tiny run for tests (well under a minute)
seed = 0  # seeds every random draw of the chapter
device = "auto"  # "auto" (CUDA when present), "cpu", "cuda" or "cuda:K"
results_dir = "../results"  # results JSON and saved models go here; later chapters read them here
sweep_backend = "local"  # where the instance sweeps run: "local" (this machine) or "ray"
ray_address = None  # Ray cluster to join: None (start Ray here), "auto" or an address
llc_chains = 5  # SGLD chains per S4 seed (published: 100)
llc_steps = 3000  # SGLD steps per chain (published: 3,000)
llc_step_size = 8e-4  # SGLD step size (published: 8e-4)
llc_n_beta = 1000.0  # SGLD inverse temperature n * beta (published: 1e3)
llc_localization = 1.0  # SGLD localization strength gamma (published: 1)
llc_burn_in = 0.6  # share of each chain's steps left out as burn-in (published: 0.6)
neither_sample = 100  # seeds that grokked neither group measured beside every grokker
efficiency_per_outcome = 20  # seeds per outcome whose training objective is followed along the rescaling curve (the study: 20)
bootstrap_resamples = 1000  # bootstrap resamples of every interval
fallback_instances = 1000  # seeds of the S4 sweep trained here when chapter 4's is missing (chapter 4: 1,000)
fallback_epochs = 2000  # epochs of that sweep (the study: 2,000)
trajectory_every = 200  # epochs between the snapshots at which one seed per outcome is measured over training
measures_epochs = 2000  # epochs of the S5 model whose measures are followed over training (the study: 2,000)
measures_train_fraction = 0.4  # share of S5's table it trains on (the study: 0.4)
measures_dim = 128  # its embedding and hidden width, the two alike (the study: 128)
measures_every = 3  # epochs between its checkpoints, where the cheap measures are computed (the study: 3)
measures_sparse_every = 150  # epochs between the checkpoints where the PAC-Bayes sharpness and the LLC are computed too, a multiple of measures_every (the study: 3)
measures_llc_chains = 2  # SGLD chains per sparse checkpoint (the study: 5)
measures_llc_steps = 150  # SGLD steps per chain there (the study: 3,000)
pac_bayes_doubling_draws = 10  # noise draws per doubling step of the PAC-Bayes sigma search (the study: 100)
pac_bayes_bisection_draws = 20  # noise draws per bisection step of the PAC-Bayes sigma search (the study: 1,000)
grok_threshold = 0.999  # accuracy on a group's full table that counts as grokking it
s5_seeds = 1  # S5 vs A5 x Z2 seeds whose LLC is followed along training
s5_dim = 128  # their embedding and hidden width, the two alike (the study: 128)
s5_epochs = 2000  # their epochs (the study: 2,000)
s5_snapshots = [80, 2000]  # epochs at which their LLC is estimated, with the last epoch (published: every 10)
s5_every = 0  # epochs between further snapshots on a regular grid, 0 for none (published: 10)
s5_llc_chains = 3  # SGLD chains per S5 snapshot (published: 3)
s5_llc_steps = 3000  # SGLD steps per chain at each S5 snapshot (published: 3,000)
chain_lengths = [200, 500, 1000, 3000]  # chain lengths at which every estimate is also read from the first steps of its chains
cpu_threads = 1  # torch threads of this process on the CPU (the measures)
workers = 2  # single-threaded worker processes for the LLC chains and the training here, on a CPU

# %% tags=["hide-input"]
import dataclasses
import time

import torch
from IPython.display import Markdown, display

from lib.book.params import apply_cpu_threads, validate_parameters
from lib.book.plotting import configure_notebook_rendering
from lib.book.record import Record, direction, share, verdict
from lib.book.reproducibility import seed_everything
from lib.book.results import write_results
from lib.chapters.ch5 import Chapter5Parameters, measure_s5_run, s5_llc_over_training, s5_measures_sweep
from lib.chapters.ch5_figures import (
    llc_spread_figure, llc_trajectory_figure, measure_scatter_figure, measures_over_time_figure,
    rescaling_figure,
)
from lib.chapters.ch5_results import (
    MEASURE_LABELS, MEASURE_NAMES, auc_table, chain_length_results, chain_length_table, check_results, course_table,
    efficiency_table, end_of_training_rows, measures_over_time_verdict, measures_results, population_results,
    s5_comparison, s5_course_table, summary_table, tracking_table, trajectory_results, trajectory_rows,
)
from lib.grokking.chain_length import chain_length_summary
from lib.grokking.efficiency_by_outcome import efficiency_auc, efficiency_summaries, grid_step, study_efficiency
from lib.grokking.end_of_training import first_seed_per_outcome, measure_end_of_training
from lib.grokking.llc_regression_check import regression_check
from lib.grokking.llc_trajectory import llc_over_training
from lib.grokking.measure_ranking import claim_comparison, tracking_rows
from lib.grokking.s5_measures_run import run_summary
from lib.grokking.sweep_correlations import sweep_correlations
from lib.grokking.outcome_statistics import (
    measure_correlations, outcome_aucs, outcome_comparison, outcome_summaries, strongest_separator,
)
from lib.grokking.circuit_efficiency import loss_along_rescaling
from lib.grokking.mlp import select_instances
from lib.grokking.study import PUBLISHED_S5_LLC, S5_MEASURES_CLAIM
from lib.grokking.study_sweep import GROUPS, choose_seeds, load_s4_sweep, outcome_groups
from lib.book.tables import markdown_table

config = validate_parameters(Chapter5Parameters, globals())
config.use_sweep_backend()
apply_cpu_threads(config.cpu_threads, config.device)
seed_everything(config.seed)
configure_notebook_rendering()
seconds = {}
record = Record()  # the numbers the prose cites as {{key}}; they also go to the results JSON
sgld = config.sgld
print(f"SGLD: step size {sgld.step_size:g}, n * beta {sgld.n_beta:g}, localization {sgld.localization:g}, "
      f"{sgld.chains} chains of {sgld.steps:,} steps, the first {sgld.burn_in:.0%} of each left out as burn-in, "
      + ("full batch" if sgld.batch_size is None else f"batches of {sgld.batch_size}"))

# %% [markdown]
# ## The published scale
#
# The defaults are a reduced run for a CPU, with the study's chain length (3,000 SGLD steps)
# everywhere: fewer chains per S4 seed (the study: 100), every grokker but only a sample of the
# other seeds (the study: every grokker and the first 500 others), one S5 seed with the study's 3
# chains at a few snapshots (the study: one run of 3 instances, a snapshot every 10 epochs), and,
# for the measures over time, the study's model, task and checkpoints every 3 epochs but the
# PAC-Bayes search with fewer draws and the LLC with shorter chains at a sparser grid
# {cite:p}`wu2025ambiguous`. On a GPU, after chapter 4 ran at the published scale (10,000 seeds):
#
# ```
# papermill 05_complexity.ipynb out.ipynb -f published/05.yaml
# ```
#
# (the parameters in `notebooks/published/05.yaml`).
# With `-p sweep_backend ray -p ray_address auto` the LLC chains and the seeds this chapter
# trains (the S5 seeds, the fallback sweep) run as shards on a Ray cluster, with the
# same numbers as on one machine.

# %% [markdown]
# ## The estimator
#
# The LLC of a trained model $w^*$ measures how much of parameter space around $w^*$ has a loss
# almost as low as $w^*$'s: the smaller, the more degenerate (and, in singular learning theory,
# the simpler) the solution {cite:p}`lau2023llc`. It is estimated by sampling the tempered posterior
# localized at $w^*$ with stochastic-gradient Langevin dynamics:
#
# $$w \leftarrow w - \tfrac{\epsilon}{2}\left(n\beta\,\nabla L(w) + \gamma\,(w - w^*)\right) + \mathcal{N}(0, \epsilon),$$
#
# and $\hat\lambda = n\beta\,\left(\overline{L}_{\text{chain}} - L(w^*)\right)$, the mean of $L$ over the chain after burn-in, averaged over chains
# (`lib.grokking.llc`). Every chain of every seed is one model of a batch: the models of the
# chapter share the training set, so their losses and gradients are computed together.
#
# First, a case with a known answer: linear regression with $d$ parameters is a regular model,
# whose learning coefficient is $d/2$ (the unit tests add singular models with known
# coefficients).

# %%
# NBVAL_CHECK_OUTPUT
check = regression_check(torch.Generator().manual_seed(config.seed))
record("check.estimate", check.estimate, ".3f")
record("check.sem", check.sem, ".3f")
record("check.expected", check.expected, ".3f")
record("check.learning_coefficient", check.learning_coefficient, "g")
assert check.passes, "the estimator misses a known learning coefficient"

# %% [markdown]
# On linear regression with $d = 4$ the estimate is {{check.estimate}} +- {{check.sem}} (standard
# error over chains), where the exact mean of the estimator at these SGLD settings is
# {{check.expected}} and $d/2$ = {{check.learning_coefficient}}; the cell asserts that it lies
# within 4 standard errors of the first and within 10% of the second.

# %% [markdown]
# ## Chapter 4's seeds
#
# Chapter 4 trained the S4 pair twice on the same seeds: with the unembedding bias (the study's
# model) and without it. This chapter measures the sweep **without the bias**: it compares the
# seeds of each outcome, and with the bias seeds that grok A4 x Z2 are too rare for a sweep of a
# thousand seeds to hold several (chapter 4 gives both counts). Its numbers therefore describe the
# book's variant of the model. The sweep is loaded from `results_dir` when it is there; otherwise
# the same sweep is trained here with chapter 4's code (the cell says which happened).

# %%
sweep = load_s4_sweep(config)
result = sweep.result
groups = outcome_groups(result, config.grok_threshold)
counts = {name: int((groups == code).sum()) for code, name in enumerate(GROUPS)}
print(f"S4 sweep: {sweep.source}" + (f" ({sweep.file_name})" if sweep.path else ""))
chosen = choose_seeds(groups, config.neither_sample, torch.Generator().manual_seed(config.seed))
record("sweep.source", {"checkpoint": "loaded from chapter 4's file", "trained": "trained here"}.get(sweep.source, sweep.source))
record("sweep.seeds", result.n_instances, ",")
record("sweep.epochs", result.training_config.epochs, ",")
for name, key in zip(GROUPS, ("grokked_s4", "grokked_a4", "neither")):
    record(f"sweep.{key}", counts[name], ",")
record("sweep.measured", len(chosen), ",")
record("sweep.neither_measured", int((groups[chosen] == 2).sum()), ",")

# %% [markdown]
# The S4 sweep was {{sweep.source}}: {{sweep.seeds}} seeds trained {{sweep.epochs}} epochs, of
# which {{sweep.grokked_s4}} grokked S4, {{sweep.grokked_a4}} grokked A4 x Z2 and
# {{sweep.neither}} neither. Measured here: {{sweep.measured}} seeds, every grokker and
# {{sweep.neither_measured}} of the {{sweep.neither}} that grokked neither.

# %% [markdown]
# ## At the end of training
#
# For every measured seed: the training loss, the L2 norm of all its weights, its LLC, and its
# **circuit efficiency**. The model is homogeneous: multiplying every weight by $\alpha$ multiplies
# the logits by $\alpha^3$ (the unembedding bias, absent here, would be scaled by $\alpha^3$ too,
# `lib.grokking.circuit_efficiency`). Rescaling a seed's weights therefore traces a curve of
# training loss against weight norm. We read each curve at one common norm, the median final norm
# of the measured seeds: the loss there is the seed's efficiency number (lower = a solution that
# buys more confidence per unit of norm).

# %%
started = time.perf_counter()
end = measure_end_of_training(result, chosen, groups, config.sgld, torch.Generator().manual_seed(config.seed + 1),
                              device=config.device, workers=config.workers)
seconds["end_of_training"] = time.perf_counter() - started
print(f"LLC of {len(chosen)} seeds x {config.llc_chains} chains x {config.llc_steps} steps in "
      f"{end.llc_seconds:.0f} s")
record("end.efficiency_norm", end.efficiency_norm, ".2f")

# %%
summaries = outcome_summaries(end, resamples=config.bootstrap_resamples,
                              generator=torch.Generator().manual_seed(config.seed + 2))
display(Markdown(summary_table(summaries)))
measure_scatter_figure(end).show()
# Two outcomes compared on every measure (the summary cites these).
compared = {f"{measure}.s4_vs_neither": outcome_comparison(summaries, measure, "grokked S4", "neither")
            for measure in MEASURE_NAMES}
compared["llc.s4_vs_a4"] = outcome_comparison(summaries, "llc", "grokked S4", "grokked A4xZ2")
for name, c in compared.items():
    for side, estimate, count in (("first", c.first, c.first_count), ("second", c.second, c.second_count)):
        record(f"compare.{name}.{side}", estimate.value, ".3g")
        record(f"compare.{name}.{side}_low", estimate.low, ".3g")
        record(f"compare.{name}.{side}_high", estimate.high, ".3g")
        record(f"compare.{name}.{side}_seeds", count, ",")
    record(f"compare.{name}.relation", direction(c.first.value, c.second.value, above="higher than",
                                                 below="lower than", equal="equal to",
                                                 undefined="not measured beside"))
    record(f"compare.{name}.intervals", verdict(c.apart, yes="are apart", no="overlap",
                                                undefined="cannot be compared"))

# %% [markdown]
# How much does one estimate move between chains? The figure shows every chain's estimate
# beside each seed's mean. With $C$ chains the standard error of the mean is the spread over
# chains divided by $\sqrt{C}$; the published 100 chains would shrink the error bars below by
# $\sqrt{100/C}$.

# %%
spread, sem = float(end.llc.std.mean()), float(end.llc.sem.mean())
record("end.llc_spread", spread, ".2f")
record("end.llc_sem", sem, ".2f")
record("end.llc_chains", config.llc_chains, ",")
record("end.llc_steps", config.llc_steps, ",")
record("end.llc_sem_at_100_chains", spread / 10, ".2f")
record("end.llc_sem_shrink_at_100_chains", (100 / config.llc_chains) ** 0.5, ".1f")
llc_spread_figure(end).show()

# %% [markdown]
# The mean spread of the LLC over chains is {{end.llc_spread}}; the mean standard error with
# {{end.llc_chains}} chains is {{end.llc_sem}}, and with 100 chains it would be about
# {{end.llc_sem_at_100_chains}}.

# %% [markdown]
# ## Correlations and prediction
#
# The study found the training loss and the LLC strongly correlated across seeds, and the loss
# and the weight norm moderately so {cite:p}`wu2025ambiguous`, from scatter plots of all 10,000
# seeds (no coefficient is computed in the authors' code). The measured seeds here are every
# grokker and a sample of the rest, far more grokkers than in the sweep, so the correlations are
# given over the population the study looked at: the training loss against the weight norm over
# every seed of the sweep, and every pair involving the LLC over the measured seeds weighted so
# that each outcome counts as often as in the sweep. The unweighted coefficients of the measured
# sample are printed beside them.

# %%
correlations = measure_correlations(end)
population = sweep_correlations(result, groups, end)
for c in population:
    print(f"{c.first} vs {c.second} over {c.n_seeds} seeds ({c.population}): Pearson {c.pearson:.3f}, "
          f"Spearman {c.spearman:.3f}")
for c in correlations:
    print(f"{c.first} vs {c.second}, measured seeds unweighted: Pearson {c.pearson:.3f}, Spearman {c.spearman:.3f}")
loss_norm, loss_llc = population[0], population[1]
record("corr.loss_llc_pearson", loss_llc.pearson, ".2f")
record("corr.loss_llc_spearman", loss_llc.spearman, ".2f")
record("corr.loss_llc_seeds", loss_llc.n_seeds, ",")
record("corr.loss_norm_pearson", loss_norm.pearson, ".2f")
record("corr.loss_norm_spearman", loss_norm.spearman, ".2f")
record("corr.loss_norm_seeds", loss_norm.n_seeds, ",")
record("corr.loss_norm_against_loss_llc", direction(loss_norm.spearman, loss_llc.spearman, above="the higher",
                                                    below="the lower", equal="as high as the first"))

# %% [markdown]
# Which measure tells the outcomes apart? The ROC AUC of a measure is the probability that a
# random seed of the first class has a higher value than a random seed of the second (0.5:
# no information; below 0.5: *low* values mark the first class). Intervals are 95% bootstrap
# intervals, resampling within each class. AUC does not depend on how many seeds of each class
# were sampled, so the sample of non-grokkers does not bias it.

# %%
aucs = outcome_aucs(end, resamples=config.bootstrap_resamples,
                    generator=torch.Generator().manual_seed(config.seed + 3))
display(Markdown(auc_table(aucs)))
best_auc = strongest_separator(aucs)
record("auc.best_measure", MEASURE_NAMES[best_auc.measure])
record("auc.best", best_auc.either_vs_neither.value, ".2f")
record("auc.best_low", best_auc.either_vs_neither.low, ".2f")
record("auc.best_high", best_auc.either_vs_neither.high, ".2f")
record("auc.best_side", direction(best_auc.either_vs_neither.value, 0.5))
record("auc.best_marks", direction(best_auc.either_vs_neither.value, 0.5, above="higher", below="lower",
                                   equal="neither higher nor lower", undefined="undetermined"))

# %% [markdown]
# ## Circuit efficiency
#
# The rescaling curves of one seed per outcome, and the common norm, {{end.efficiency_norm}}, at which
# the efficiency of every seed is read.

# %%
positions = first_seed_per_outcome(end)
subset = select_instances(result.final_params, end.index[list(positions.values())])
alphas = torch.linspace(0.4, 1.6, 25)
losses, norms = loss_along_rescaling(subset, result.train_left, result.train_right,
                                     result.train_labels, alphas)
rescaling_figure(norms, losses, end, positions).show()

# %% [markdown]
# The study's own circuit-efficiency quantity differs from the loss at a common norm: it follows
# the training objective itself, cross-entropy plus (wd / 2) times the squared norm, along each
# seed's rescaling curve ($\alpha = 2^{t}$, $t$ from -6 to 3 in 500 steps) and compares its
# minimum with the objective of the seed as trained, for 20 seeds per outcome
# {cite:p}`wu2025ambiguous`. Here: the first `efficiency_per_outcome` seeds of each outcome of the
# sweep (all of them where an outcome has fewer). Training with weight decay already minimizes
# that objective, so each seed should sit at the minimum of its own curve; the outcomes then
# differ only by how low that minimum is, which the cell compares (medians per outcome and the
# AUC of the S4 grokkers against the other seeds).

# %%
efficiency = study_efficiency(result, groups, config.efficiency_per_outcome)
efficiency_rows = efficiency_summaries(efficiency, resamples=config.bootstrap_resamples,
                                       generator=torch.Generator().manual_seed(config.seed + 9))
efficiency_separation = efficiency_auc(efficiency, resamples=config.bootstrap_resamples,
                                       generator=torch.Generator().manual_seed(config.seed + 10))
display(Markdown(markdown_table(*efficiency_table(efficiency_rows))))
record("efficiency.grid_step", grid_step(), ".1%")
record("efficiency.largest_excess", float(efficiency.optimum.excess.max()), ".2g")
record("efficiency.fewest_seeds", min(r.count for r in efficiency_rows), ",")
record("efficiency.auc", efficiency_separation.value, ".2f")
record("efficiency.auc_low", efficiency_separation.low, ".2f")
record("efficiency.auc_high", efficiency_separation.high, ".2f")
record("efficiency.auc_side", direction(efficiency_separation.value, 0.5))
record("efficiency.s4_side", direction(efficiency_separation.value, 0.5, above="higher", below="lower",
                                       equal="neither higher nor lower", undefined="undetermined"))

# %% [markdown]
# Along the rescaling curve (factors {{efficiency.grid_step}} apart) every trained seed sits at
# the minimum of its own training objective (the largest excess over it is
# {{efficiency.largest_excess}}), so the study's quantity tells the outcomes apart only by that
# minimum, cross-entropy plus wd/2 times the squared norm: its median per outcome is in the last
# column (the smallest outcome holds {{efficiency.fewest_seeds}} seed(s); under 10 a comparison is
# not firm). The AUC of the seeds that grokked S4 against the others is {{efficiency.auc}} (95%
# interval {{efficiency.auc_low}} to {{efficiency.auc_high}}), {{efficiency.auc_side}} 0.5: the
# S4 grokkers' minimum objectives are {{efficiency.s4_side}}.

# %% [markdown]
# ## The LLC along training
#
# The study followed the LLC of one S5 run of 3 seeds over training (3 chains of 3,000 SGLD steps
# at a snapshot every 10 epochs): it peaked at 4,558-4,601 near epochs 80-90 and fell to 505-598
# by the end, and for seeds that grokked it fell sharply when test accuracy rose
# {cite:p}`wu2025ambiguous`. First the S4 seeds of this chapter. Chapter 4 kept their snapshots only
# every few hundred epochs, so one seed per outcome is retrained here with the same code and
# seed, with a snapshot every `trajectory_every` epochs, and its LLC estimated at each. The
# estimate assumes the weights sit at a minimum of the training loss: before a seed fits its
# training set they do not, the chains slide downhill and the estimate comes out negative, so
# the figure starts each curve at the epoch its seed fits the training set.

# %%
started = time.perf_counter()
trajectory = llc_over_training(result, groups, config.trajectory_every, config.sgld, config.grok_threshold,
                               torch.Generator().manual_seed(config.seed + 4), workers=config.workers,
                               device=config.device)
seconds["llc_over_training"] = time.perf_counter() - started
record("s4_course.same_outcome", verdict(trajectory.same_outcome, yes="end with", no="do not all end with"))
display(Markdown(markdown_table(*course_table(trajectory))))
llc_trajectory_figure(trajectory, "The LLC along training, one S4 seed per outcome").show()

# %% [markdown]
# The retrained seeds {{s4_course.same_outcome}} the outcome they had in the sweep. The table
# gives each seed's LLC from the snapshot at which it fits its training set, at its highest and at
# the end, and for a seed that groks, at the snapshots before and after grokking: the change
# across grokking beside the change from its highest value to the snapshot before.

# %% [markdown]
# Then the study's own setting: S5 vs A5 x Z2 with $d = h = 128$ and the unembedding bias,
# weight decay 2e-5, 2,000 epochs, and the study's SGLD chains: 3 chains of 3,000 steps per
# snapshot. An S5 model has 18 times the parameters of an S4 one and trains on 24 times the
# pairs, so each SGLD step costs hundreds of times more: the defaults follow `s5_seeds` seed(s)
# at the epochs `s5_snapshots` (by default the epoch of the study's peak, 80, and the last one),
# where the study took a snapshot every 10 epochs of one run (`s5_every` adds such a grid). The
# study's three instances were picked by outcome (the authors' `llc_save.ipynb`: the lowest S5
# loss, the lowest A5 x Z2 loss, the first that grokked neither), so each seed here is set beside
# the instance with its own outcome: one seed against one instance, which the index does not
# judge. Most S5 seeds memorize (about 90% in the study); the cell says what this one did.

# %%
started = time.perf_counter()
s5_trajectory = s5_llc_over_training(config, torch.Generator().manual_seed(config.seed + 8))
seconds["s5_llc_over_training"] = time.perf_counter() - started
s5 = s5_comparison(s5_trajectory)
s5_model = s5_trajectory.result.model_config
record("s5.dim", s5_model.embed_dim, "d")
record("s5.bias", verdict(s5_model.unembed_bias, yes="with", no="without"))
record("s5.chains", s5_trajectory.sgld.chains, "d")
record("s5.steps", s5_trajectory.sgld.steps, ",")
record("s5.chains_as_study", verdict(s5.same_chains, yes="as in", no="against"))
record("s5.model_as_study", verdict(s5.same_model, yes="as in", no="against"))
record("s5.seeds", s5.seeds, "d")
record("s5.fitted", s5.fitted, "d")
record("s5.snapshots", ", ".join(str(int(e)) for e in s5_trajectory.epochs))
record("s5.peak", s5.peak, ",.0f")
record("s5.final", s5.final, ",.0f")
record("s5.peak_ratio", s5.peak_ratio, ".2f")
record("s5.final_ratio", s5.final_ratio, ".2f")
record("s5.study_peaks", f"{s5.study_peak_low:,}-{s5.study_peak_high:,}")
record("s5.study_peak_epochs", "-".join(str(e) for e in PUBLISHED_S5_LLC["peak_epochs"]))
record("s5.study_finals", f"{s5.study_final_low:,}-{s5.study_final_high:,}")
record("s5.study_instances", PUBLISHED_S5_LLC["instances"], "d")
record("s5.study_chains", PUBLISHED_S5_LLC["chains"], "d")
record("s5.study_steps", PUBLISHED_S5_LLC["steps"], ",")
record("s5.study_every", PUBLISHED_S5_LLC["checkpoint_every"], "d")
display(Markdown(markdown_table(*s5_course_table(s5_trajectory))))
llc_trajectory_figure(s5_trajectory, f"The LLC along training of S5 vs A5 x Z2 seeds (d = h = {config.s5_dim})").show()

# %% [markdown]
# S5 vs A5 x Z2 (d = h = {{s5.dim}}, {{s5.bias}} the unembedding bias, {{s5.chains}} chains of
# {{s5.steps}} SGLD steps per snapshot): {{s5.fitted}} of the {{s5.seeds}} seed(s) fit the
# training set, and only their snapshots from then on have a meaningful LLC. The table sets each
# such seed beside the study's instance with its outcome, one seed against one instance. The
# study's run peaked at {{s5.study_peaks}} near epochs {{s5.study_peak_epochs}} and ended at
# {{s5.study_finals}} {cite:p}`wu2025ambiguous`: the mean highest value here, {{s5.peak}}, is
# {{s5.peak_ratio}} times the middle of their range and the mean final one, {{s5.final}},
# {{s5.final_ratio}} times. What differs: {{s5.seeds}} seed(s) against the study's
# {{s5.study_instances}}; snapshots at epochs {{s5.snapshots}} against every {{s5.study_every}};
# the chains ({{s5.chains}} of {{s5.steps}} steps) {{s5.chains_as_study}} the study's
# ({{s5.study_chains}} of {{s5.study_steps}}); the model (d = h = {{s5.dim}}, {{s5.bias}} the
# bias) {{s5.model_as_study}} the study's (128, with the bias).

# %% [markdown]
# ## How long must a chain be?
#
# A chain starts at $w^*$; its loss first overshoots and then settles, and the estimate averages
# the loss after the burn-in (60% of the chain). A chain of $L$ steps is exactly the first $L$
# steps of a longer chain drawn from the same generator, so every estimate of this chapter is
# read again at shorter lengths from the chains already run (`chain_lengths`): at an early and
# the final snapshot of each seed followed along training, and per outcome at the end of
# training.

# %%
chain_rows = (trajectory_rows(s5_trajectory, tuple(config.chain_lengths), "S5")
              + trajectory_rows(trajectory, tuple(config.chain_lengths), "S4")
              + end_of_training_rows(end, config.sgld, tuple(config.chain_lengths)))
display(Markdown(markdown_table(*chain_length_table(chain_rows))))
chains = chain_length_summary(chain_rows)
record("chains.shortest", chains.shortest, ",")
record("chains.longest", chains.longest, ",")
record("chains.second", chains.second, ",")
record("chains.rows", chains.rows, ",")
record("chains.higher", chains.higher, ",")
record("chains.excess_low", chains.excess_low, "+.0%")
record("chains.excess_high", chains.excess_high, "+.0%")
record("chains.short_chains", share(chains.higher, chains.rows, every="overestimate, they are not lower bounds",
                                    some="do not err in one direction", none="underestimate"))
record("chains.within", chains.within, ".0%")
record("chains.settled_low", chains.settled_low, ",")
record("chains.settled_high", chains.settled_high, ",")
record("chains.unsettled", chains.unsettled, ",")

# %% [markdown]
# Chains of {{chains.shortest}} steps give estimates {{chains.excess_low}} to
# {{chains.excess_high}} off the {{chains.longest}}-step ones over the {{chains.rows}} estimates of
# the table ({{chains.higher}} of {{chains.rows}} higher: short chains {{chains.short_chains}}).
# The estimates stay within {{chains.within}} of the {{chains.longest}}-step value from
# {{chains.settled_low}} to {{chains.settled_high}} steps on, and {{chains.unsettled}} of
# {{chains.rows}} still move by more than {{chains.within}} between {{chains.second}} and
# {{chains.longest}} steps (the longest length is where the comparison ends, not proof that an
# estimate settled).

# %% [markdown]
# ## Measures over time, as the study followed them
#
# Trained on a random part of one group's own table, with no second group to confuse it, the MLP
# usually groks. The study followed ONE such model, S5 with $d = h = 128$ and no bias on a random
# 40% of S5's table, over 2,000 epochs, and computed at a checkpoint every 3 epochs the measures
# of Jiang et al. {cite:p}`jiang2019fantastic` (L2 norm and distance from initialization, inverse
# margin, products of the spectral and of the Frobenius norms of the five weight tensors, path
# norm, PAC-Bayes sharpness), the training loss and the LLC, and compared each with the
# generalization gap (training accuracy minus accuracy on the whole table) by Spearman's rank
# correlation over the checkpoints {cite:p}`wu2025ambiguous`. The measures here follow the
# study's code (`lib.grokking.generalization_measures`). Every measure is compared over the same
# checkpoints, an infinite inverse margin (margin not positive) kept as a tied top rank.
#
# The PAC-Bayes search and the LLC chains cost far more than the rest, so by default they run
# at a sparser grid (`measures_sparse_every`), the search with fewer noise draws and the LLC with
# shorter chains than the study's. Two rankings follow: every cheap measure over every
# checkpoint, and every measure, LLC included, over the sparse grid; the cell prints the
# measured cost per checkpoint of each kind.

# %%
started = time.perf_counter()
s5_run = s5_measures_sweep(config)
over_time = measure_s5_run(s5_run, config, torch.Generator().manual_seed(config.seed + 5))
seconds["measures_over_time"] = time.perf_counter() - started
s5_summary = run_summary(s5_run, config.grok_threshold)
record("over_time.dim", config.measures_dim, "d")
record("over_time.n_train", s5_run.train_left.numel(), ",")
record("over_time.train_fraction", config.measures_train_fraction, ".0%")
record("over_time.epochs", config.measures_epochs, ",")
record("over_time.fitted_epoch", s5_summary["fitted_epoch"], "d")
record("over_time.grok_epoch", s5_summary["grok_epoch"], "d")
record("over_time.final_test_accuracy", s5_summary["final_test_accuracy"], ".3f")
costs = over_time.seconds_per_checkpoint()
print(f"{len(over_time.epochs)} checkpoints, {len(over_time.sparse)} on the sparse grid; seconds per "
      f"checkpoint: cheap measures {costs['cheap_measures']:.3f}, PAC-Bayes search {costs['pac_bayes']:.1f}, "
      f"LLC ({over_time.sgld.chains} x {over_time.sgld.steps} steps) {costs['llc']:.1f}")
tracking = tracking_rows(over_time)
display(Markdown(markdown_table(*tracking_table(tracking))))
measures_over_time_figure(over_time).show()
claim = claim_comparison(tracking)
dense = tracking["dense"]
record("over_time.dense_checkpoints", dense[0].checkpoints, ",")
record("over_time.dense_every", config.measures_every, "d")
record("over_time.dense_best", MEASURE_LABELS[dense[0].measure])
record("over_time.dense_best_spearman", dense[0].spearman, ".2f")
record("over_time.inverse_margin_infinite", {r.measure: r for r in dense}["inverse_margin"].infinite, ",")
record("over_time.sparse_checkpoints", claim.checkpoints, ",")
record("over_time.sparse_every", config.measures_sparse_every, "d")
record("over_time.llc_chains", over_time.sgld.chains, "d")
record("over_time.llc_steps", over_time.sgld.steps, ",")
record("over_time.sparse_best", MEASURE_LABELS[claim.best])
record("over_time.sparse_best_spearman", claim.best_spearman, ".2f")
record("over_time.llc_rank", claim.llc_rank, "d")
record("over_time.measures", claim.n_measures, "d")
record("over_time.llc_spearman", claim.llc_spearman, ".2f")
record("over_time.study_also_good", " and the ".join(MEASURE_LABELS[m] for m in S5_MEASURES_CLAIM["also_good"]))
record("over_time.agrees", verdict(claim.reproduced, yes="agrees", no="does not agree"))
record("over_time.claim", measures_over_time_verdict(measures_results(s5_run, over_time, tracking, config)))

# %% [markdown]
# The S5 model (d = h = {{over_time.dim}}, no bias, {{over_time.n_train}} of 14,400 pairs,
# {{over_time.epochs}} epochs) fits its training set at epoch {{over_time.fitted_epoch}} and groks
# S5 at epoch {{over_time.grok_epoch}} (-1: never); its final accuracy on the whole table is
# {{over_time.final_test_accuracy}}.
#
# Over all {{over_time.dense_checkpoints}} checkpoints (every {{over_time.dense_every}} epochs) the
# cheap measure that follows the gap most closely is the {{over_time.dense_best}} (Spearman
# {{over_time.dense_best_spearman}}; the inverse margin is infinite at
# {{over_time.inverse_margin_infinite}} of them, kept as tied top ranks). Over the
# {{over_time.sparse_checkpoints}} checkpoints of the sparse grid (every {{over_time.sparse_every}}
# epochs), where the PAC-Bayes sharpness and the LLC ({{over_time.llc_chains}} chains of
# {{over_time.llc_steps}} steps) are computed too, the best is the {{over_time.sparse_best}}
# ({{over_time.sparse_best_spearman}}) and the LLC ranks {{over_time.llc_rank}} of
# {{over_time.measures}} ({{over_time.llc_spearman}}). The study found the LLC the best tracker,
# with the {{over_time.study_also_good}} also doing well {cite:p}`wu2025ambiguous`: on the sparse
# grid here the ranking {{over_time.agrees}} with that claim. One model, as the study's: the
# verdict is **{{over_time.claim}}** (the book's one rule: a ranking read on one model has no
# interval to judge it by, and one read on a coarser grid or shorter chains than the study's is not
# comparable).

# %% [markdown]
# ## Numbers and checks

# %% tags=["remove-output"]
# The results JSON: per outcome, the correlations, the AUCs, the trajectories, the measures over
# time (`lib.chapters.ch5_measures.measures_results`) and the settings of the run.
results = {
    "outcomes": [{"group": s.group, "count": s.count, **{key: dataclasses.asdict(value) for key, value in s.means.items()}}
                 for s in summaries],
    "correlations": [dataclasses.asdict(c) for c in correlations],
    "aucs": [dataclasses.asdict(a) for a in aucs],
    "efficiency_norm": end.efficiency_norm,
    "llc_spread": {"mean_std_over_chains": float(end.llc.std.mean()), "mean_sem": float(end.llc.sem.mean()),
                   "chains": end.llc.per_chain.shape[1]},
    "llc_over_training": trajectory_results(trajectory),
    "s5_llc_over_training": trajectory_results(s5_trajectory),
    "measures_over_time": measures_results(s5_run, over_time, tracking, config),
    "sgld": {k: getattr(config.sgld, k) for k in ("step_size", "n_beta", "localization", "steps", "chains", "burn_in")},
    "sweep_source": sweep.source, "n_seeds_in_sweep": result.n_instances,
    "outcome_counts": counts, "n_measured": len(chosen),
    "regression_check": dataclasses.asdict(check),
    "s5_snapshots": s5_trajectory.epochs.tolist(), "chain_length_study": chain_length_results(chain_rows),
    **population_results(population, efficiency, efficiency_rows, efficiency_separation),
    "feeding_sweep": "chapter 4's S4 sweep without the unembedding bias",
    "seconds": seconds,
    "smoke": config.smoke, "seed": config.seed,
}
results["recorded"] = record.results()
check_results(results)
path = write_results(config.results_dir, "05_complexity", results)
print(f"results written to {path.name}")

# %% [markdown]
# ## Summary
#
# What this run measured (every number from the cells above):
#
# - The batched SGLD estimator gives {{check.estimate}} +- {{check.sem}} on linear regression with
#   d = 4 (exact mean at its settings {{check.expected}}, d / 2 = {{check.learning_coefficient}}).
# - Training loss {{compare.train_loss.s4_vs_neither.first}}
#   ({{compare.train_loss.s4_vs_neither.first_low}} to {{compare.train_loss.s4_vs_neither.first_high}})
#   for grokked S4 ({{compare.train_loss.s4_vs_neither.first_seeds}} seeds),
#   {{compare.train_loss.s4_vs_neither.relation}} {{compare.train_loss.s4_vs_neither.second}}
#   ({{compare.train_loss.s4_vs_neither.second_low}} to {{compare.train_loss.s4_vs_neither.second_high}})
#   for neither ({{compare.train_loss.s4_vs_neither.second_seeds}}); the 95% intervals
#   {{compare.train_loss.s4_vs_neither.intervals}}.
# - Weight norm {{compare.weight_norm.s4_vs_neither.first}}
#   ({{compare.weight_norm.s4_vs_neither.first_low}} to {{compare.weight_norm.s4_vs_neither.first_high}})
#   for grokked S4 ({{compare.weight_norm.s4_vs_neither.first_seeds}} seeds),
#   {{compare.weight_norm.s4_vs_neither.relation}} {{compare.weight_norm.s4_vs_neither.second}}
#   ({{compare.weight_norm.s4_vs_neither.second_low}} to {{compare.weight_norm.s4_vs_neither.second_high}})
#   for neither ({{compare.weight_norm.s4_vs_neither.second_seeds}}); the 95% intervals
#   {{compare.weight_norm.s4_vs_neither.intervals}}.
# - LLC {{compare.llc.s4_vs_neither.first}} ({{compare.llc.s4_vs_neither.first_low}} to
#   {{compare.llc.s4_vs_neither.first_high}}) for grokked S4 ({{compare.llc.s4_vs_neither.first_seeds}}
#   seeds), {{compare.llc.s4_vs_neither.relation}} {{compare.llc.s4_vs_neither.second}}
#   ({{compare.llc.s4_vs_neither.second_low}} to {{compare.llc.s4_vs_neither.second_high}}) for
#   neither ({{compare.llc.s4_vs_neither.second_seeds}}); the 95% intervals
#   {{compare.llc.s4_vs_neither.intervals}}.
# - Loss at the common norm {{compare.efficiency_loss.s4_vs_neither.first}}
#   ({{compare.efficiency_loss.s4_vs_neither.first_low}} to
#   {{compare.efficiency_loss.s4_vs_neither.first_high}}) for grokked S4
#   ({{compare.efficiency_loss.s4_vs_neither.first_seeds}} seeds),
#   {{compare.efficiency_loss.s4_vs_neither.relation}} {{compare.efficiency_loss.s4_vs_neither.second}}
#   ({{compare.efficiency_loss.s4_vs_neither.second_low}} to
#   {{compare.efficiency_loss.s4_vs_neither.second_high}}) for neither
#   ({{compare.efficiency_loss.s4_vs_neither.second_seeds}}); the 95% intervals
#   {{compare.efficiency_loss.s4_vs_neither.intervals}}.
# - LLC {{compare.llc.s4_vs_a4.first}} ({{compare.llc.s4_vs_a4.first_low}} to
#   {{compare.llc.s4_vs_a4.first_high}}) for grokked S4 ({{compare.llc.s4_vs_a4.first_seeds}} seeds),
#   {{compare.llc.s4_vs_a4.relation}} {{compare.llc.s4_vs_a4.second}} ({{compare.llc.s4_vs_a4.second_low}}
#   to {{compare.llc.s4_vs_a4.second_high}}) for grokked A4xZ2 ({{compare.llc.s4_vs_a4.second_seeds}});
#   the 95% intervals {{compare.llc.s4_vs_a4.intervals}}.
# - Over the {{corr.loss_llc_seeds}} measured seeds weighted to the sweep's outcome shares the
#   training loss and the LLC correlate with Pearson {{corr.loss_llc_pearson}} (Spearman
#   {{corr.loss_llc_spearman}}); over all {{corr.loss_norm_seeds}} seeds of the sweep the training
#   loss and the weight norm correlate with {{corr.loss_norm_pearson}} ({{corr.loss_norm_spearman}}).
#   The study describes the first as high and the second as moderate from scatter plots
#   {cite:p}`wu2025ambiguous`; here the second is {{corr.loss_norm_against_loss_llc}} of the two by
#   rank.
# - The study's circuit efficiency: every trained seed sits at the minimum of its own training
#   objective (largest excess {{efficiency.largest_excess}}); by that minimum, the AUC of the S4
#   grokkers against the other seeds is {{efficiency.auc}} ({{efficiency.auc_low}} to
#   {{efficiency.auc_high}}): their minimum objectives are {{efficiency.s4_side}}.
# - The measure that best separates grokkers from the rest is the {{auc.best_measure}}: AUC
#   {{auc.best}} (95% interval {{auc.best_low}} to {{auc.best_high}}; {{auc.best_side}} 0.5:
#   {{auc.best_marks}} values mark the grokkers).
# - Measures over time (one S5 model on {{over_time.train_fraction}} of its table): on the sparse
#   grid the best tracker of the generalization gap is the {{over_time.sparse_best}}
#   ({{over_time.sparse_best_spearman}}) and the LLC ranks {{over_time.llc_rank}} of
#   {{over_time.measures}} ({{over_time.llc_spearman}}): the ranking {{over_time.agrees}} with the
#   study's claim that the LLC tracks it best; verdict: {{over_time.claim}}.
# - S5 LLC along training: the mean highest value is {{s5.peak_ratio}} times the middle of the
#   study's range and the mean final one {{s5.final_ratio}} times ({{s5.fitted}} of {{s5.seeds}}
#   seed(s) fit, snapshots at epochs {{s5.snapshots}}).
# - Chains of {{chains.shortest}} steps are {{chains.excess_low}} to {{chains.excess_high}} off the
#   {{chains.longest}}-step estimates: short chains {{chains.short_chains}}.
# - Across grokking, the LLC of each seed that groks moves as the course tables of the two
#   LLC-along-training sections give it (change across grokking beside the change from its
#   highest value).
# - The S4 LLC estimates of this run use {{end.llc_chains}} chains of {{end.llc_steps}} steps; their
#   standard errors (mean {{end.llc_sem}}) would shrink about {{end.llc_sem_shrink_at_100_chains}}
#   times with the published 100 chains.
