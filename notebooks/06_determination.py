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
# # When is the choice made? Determination of the grokked group
#
# Training here is deterministic: full-batch Adam from a seeded initialization. In that literal
# sense a seed's fate is fixed before its first step. Wu and Jaburi {cite:p}`wu2025ambiguous` ask a
# more useful question: from which point on is the choice *robust*, so that small changes to the
# weights no longer change which group the model groks? Borrowing from cell biology, a seed is
# *determined* once its fate is stable, even while it still looks undecided from the outside.
# This chapter repeats their four probes on chapter 4's S4 vs A4 x Z2 seeds and adds one of its own:
#
# - **perturbation sensitivity**: noise of scale $2^k$ on all weights at a checkpoint, training
#   continued to the end; does the outcome change? (with a slider over the scale);
# - **total variation** of the logits over the last epochs: do grokkers "lock in"?
# - **transplant**: a seed that grokked one group on its own data, moved to the ambiguous
#   intersection: does it keep the group?
# - **the training Jacobian**: how final weights respond to initial weights;
# - **early prediction** (not in the study): from what a seed looks like at epoch $t$, how well can
#   its outcome be predicted, and is it readable before it is determined?

# %% tags=["parameters"]
smoke = False  # tiny run for tests (well under a minute)
seed = 0  # seeds every random draw of the chapter
device = "auto"  # "auto" (CUDA when present), "cpu", "cuda" or "cuda:K"
results_dir = "../results"  # results JSON and saved models go here; later chapters read them here
sweep_backend = "local"  # where the instance sweeps run: "local" (this machine) or "ray"
ray_address = None  # Ray cluster to join: None (start Ray here), "auto" or an address
fallback_instances = 1000  # seeds of the S4 sweep trained here when chapter 4's is missing (chapter 4: 1,000)
fallback_epochs = 2000  # epochs of that sweep (the study: 2,000)
grok_threshold = 0.999  # accuracy on a group's full table that counts as grokking it
perturb_per_outcome = 2  # seeds of each outcome whose weights are perturbed
perturb_every = 200  # epochs between the checkpoints at which they are perturbed
log2_scales = [-25, -20, -15, -10, -5, 0, 5]  # noise scales as powers of two, k in 2^k (the study: -25 .. 5)
copies = 4  # noisy copies per seed, checkpoint and scale
decision_log2_scale = -10  # decision epoch: perturbations up to 2^k no longer change the outcome
tv_per_outcome = 20  # seeds of each outcome whose logits' total variation is measured
tv_epochs = 3000  # epochs those seeds are trained for (the study: 3,000)
tv_window = 1000  # the late interval of the total variation, its last epochs
tv_every = 20  # epochs between the snapshots inside that interval
transplant_seeds = 64  # seeds transplanted in each direction
transplant_train_fraction = 0.8  # share of the group's table they first train on
transplant_first_epochs = 1500  # epochs on that iid part
transplant_second_epochs = 2000  # epochs on the intersection after the transplant
jacobian_dim = 4  # embedding and hidden width (d and h) of the MLP whose training Jacobian is computed
jacobian_lengths = [0, 10, 100, 300]  # training lengths (full-batch Adam steps) of the Jacobians
jacobian_weight_decays = [0.0, 2e-5]  # weight decays of the Jacobians (0 and the study's 2e-5)
predict_every = 20  # epochs between the epochs at which the outcome is predicted
predict_folds = 5  # folds of the held-out predictions
cpu_threads = 1  # torch threads of this process on the CPU
workers = 2  # single-threaded worker processes training the perturbed copies and the retrained seeds, on a CPU

# %%
import time

import torch
from IPython.display import Markdown, display

from lib.book.params import apply_cpu_threads, validate_parameters
from lib.book.plotting import configure_notebook_rendering
from lib.book.reproducibility import seed_everything
from lib.book.results import write_results
from lib.grokking.study_sweep import GROUPS, load_s4_sweep, outcome_groups
from lib.chapters.ch6 import (
    PREDICTION_FEATURES, Chapter6Parameters, choose_per_outcome, early_prediction, jacobian_spectra,
    retrain_with_snapshots, total_variation_study, transplant_both_ways,
)
from lib.chapters.ch6_perturbation import perturbation_study
from lib.chapters.ch6_figures import (
    early_prediction_figure, jacobian_figure, perturbation_figure, perturbation_heatmaps,
    perturbation_panel, seed_labels, total_variation_figure, transplant_figure,
)
from lib.chapters.ch6_results import (
    chapter_results, decision_rows, decision_table, jacobian_rows, jacobian_table, median, summary_lines,
    total_variation_rows, total_variation_table, transplant_rows, transplant_table,
)
from lib.grokking.mlp import MLPConfig
from lib.grokking.training import snapshot_epochs

config = validate_parameters(Chapter6Parameters, globals())
config.use_sweep_backend()
apply_cpu_threads(config.cpu_threads, config.device)
seed_everything(config.seed)
configure_notebook_rendering()
seconds = {}

# %% [markdown]
# ## The published scale
#
# The defaults are a reduced run for a CPU: two seeds per outcome perturbed every 200 epochs at
# the study's scales $2^{-25}, 2^{-20}, \dots, 2^{5}$ with four noisy copies each, 20 seeds per
# outcome for the total variation, 64 seeds per transplant direction, and the Jacobian of a
# $d = h = 4$ model over 300 steps. The study perturbed its seeds on that same grid of scales
# and measured total variation over 3,000 epochs {cite:p}`wu2025ambiguous`; it does not give its
# numbers of seeds and copies. On a GPU, after chapter 4 ran at the published scale, with ten
# seeds per outcome, ten copies and Jacobians up to 2,000 steps:
#
# ```
# papermill 06_determination.ipynb out.ipynb -p device cuda -p perturb_per_outcome 10 \
#     -p perturb_every 100 -p copies 10 \
#     -p tv_per_outcome 1000 -p transplant_seeds 1000 -p jacobian_lengths '[0, 10, 100, 1000, 2000]'
# ```
#
# The perturbed copies, the retrained and the transplanted seeds all train through the sweep
# runner, so on a Ray cluster (run from its head node) the same run is
#
# ```
# papermill 06_determination.ipynb out.ipynb -p device cuda -p sweep_backend ray -p ray_address auto \
#     -p perturb_per_outcome 10 -p perturb_every 100 -p copies 10 -p tv_per_outcome 1000 -p transplant_seeds 1000
# ```

# %% [markdown]
# ## Chapter 4's seeds
#
# The S4 sweep of chapter 4 without the unembedding bias (the one chapter 5 measures too: with the
# bias, seeds that grok A4 x Z2 are too rare in a sweep of this size) is loaded from
# `results_dir` when it is there; otherwise the same sweep is trained here with chapter 4's code
# (the cell says which happened).

# %%
sweep = load_s4_sweep(config)
result = sweep.result
groups = outcome_groups(result, config.grok_threshold)
counts = {name: int((groups == code).sum()) for code, name in enumerate(GROUPS)}
epochs = result.training_config.epochs
print(f"S4 sweep: {sweep.source}" + (f" ({sweep.path})" if sweep.path else "")
      + f", {result.n_instances} seeds, {epochs} epochs; outcomes: {counts}")

# %% [markdown]
# ## Perturbation sensitivity
#
# For `perturb_per_outcome` seeds of each outcome, chosen at random, chapter 4 kept too few
# snapshots, so they are retrained here with the same code, seeds and schedule (the cell checks
# that they end as they did in the sweep), keeping a snapshot every `perturb_every` epochs. At
# each snapshot but the last, `copies` copies of the weights get Gaussian noise of standard
# deviation $2^k$ on every weight, for every $k$ of `log2_scales`, and one copy gets none; all are
# trained on to the sweep's last epoch as one batch of instances. Training resumes with a fresh
# Adam state (moments and step count reset), as the study continued "anew"; the noiseless copy is
# continued under the same rule, so only the noise differs between it and the perturbed ones. The
# probability that the outcome changes is the share of noisy copies whose final outcome differs
# from the noiseless continuation's.

# %%
started = time.perf_counter()
chosen = choose_per_outcome(groups, config.perturb_per_outcome, torch.Generator().manual_seed(config.seed))
dense = retrain_with_snapshots(result, chosen, snapshot_epochs(epochs, config.perturb_every), config.workers)
same_outcome = torch.equal(outcome_groups(dense, config.grok_threshold), groups[chosen])
study = perturbation_study(dense, torch.arange(len(chosen)), config.log2_scales, config.copies,
                           torch.Generator().manual_seed(config.seed + 1), config.grok_threshold, config.workers)
seconds["perturbation"] = time.perf_counter() - started
labels = seed_labels(study, dense.seeds)
print(f"retrained seeds end as in the sweep: {same_outcome}; {len(study.checkpoints)} checkpoints x "
      f"{len(chosen)} seeds x {len(config.log2_scales)} scales x {config.copies} copies continued "
      f"in {seconds['perturbation']:.0f} s")
assert same_outcome, "retraining did not retrace the sweep"
perturbation_figure(study, dense, labels).show()
perturbation_heatmaps(study, labels).show()

# %% [markdown]
# A seed's **decision epoch** is the first checkpoint from which no perturbation up to a chosen
# scale changes its outcome in any copy, at that checkpoint or any later one. The table puts it
# next to the epoch at which the choice shows in test accuracy (accuracy against S4 or A4 x Z2
# on the whole table reaching the grokking threshold; "-" for seeds that grok neither).

# %%
decisions = decision_rows(study, dense.seeds, config.decision_log2_scale)
largest = int(study.log2_scales.max())
display(Markdown(decision_table(decisions, config.decision_log2_scale, largest)))
leads = [r["lead_epochs"] for r in decisions if r["lead_epochs"] is not None]
print(f"grokkers decided (noise up to 2^{config.decision_log2_scale}) a median of {median(leads):.0f} epochs before "
      f"their choice showed ({len(leads)} seeds with both epochs)")

# %% [markdown]
# In a live kernel, the panel below reruns the study for one seed and one scale (a few seconds
# to a minute: it trains `copies` noisy copies and a noiseless one from every checkpoint).

# %%
display(perturbation_panel(dense, labels, config.copies, config.seed + 2, config.grok_threshold, config.workers))

# %% [markdown]
# ## Total variation: do grokkers lock in?
#
# The study measured, over a fixed late interval, how much each seed's logits on the pairs
# outside the training set still move: the total variation (the distance between a pair's logit
# vectors at consecutive snapshots, averaged over pairs and summed over the snapshot steps) and the
# argmax-flip rate (share of pairs whose predicted element changes, per snapshot step)
# {cite:p}`wu2025ambiguous`. The study trained these models for 3,000 epochs; up to `tv_per_outcome`
# seeds per outcome are retrained here with the same code and seeds for `tv_epochs` epochs (past
# the sweep's 2,000 the same trajectories simply go on), with a snapshot every `tv_every` epochs
# over the last `tv_window`, and grouped by their outcome at the end. The study's formula did not
# survive in its text, so the published flip rates are the comparable numbers here, not the
# total variation's absolute size.

# %%
started = time.perf_counter()
tv_chosen = choose_per_outcome(groups, config.tv_per_outcome, torch.Generator().manual_seed(config.seed + 3))
tv_epochs = max(config.tv_epochs, epochs)
tv = total_variation_study(result, tv_chosen, tv_epochs, min(config.tv_window, tv_epochs),
                           min(config.tv_every, config.tv_window, tv_epochs), config.grok_threshold, config.workers)
seconds["total_variation"] = time.perf_counter() - started
tv_rows = total_variation_rows(tv)
print(f"retrained seeds match the sweep at its epoch {epochs}: {tv.same_outcome}; window: epochs "
      f"{int(tv.epochs[0])}-{int(tv.epochs[-1])}, {len(tv.epochs) - 1} snapshot steps")
assert tv.same_outcome, "retraining did not retrace the sweep"
display(Markdown(total_variation_table(tv_rows)))
total_variation_figure(tv).show()

# %% [markdown]
# ## Transplant: is a grokked solution stable under a change of data?
#
# `transplant_seeds` seeds train on a random `transplant_train_fraction` of one group's table
# (where the MLP reliably groks it), then continue on the intersection of S4 and A4 x Z2, whose
# labels that group also fits: nothing in the new data asks the seed to change. A seed
# **ungrokks** when, at some logged epoch on the intersection, its accuracy on the group's whole
# table falls below the threshold while it still fits the intersection; it **regrokks** when it
# is back above the threshold at the end. Both directions, S4 first and A4 x Z2 first.

# %%
started = time.perf_counter()
transplant = transplant_both_ways(config, torch.Generator().manual_seed(config.seed + 4))
seconds["transplant"] = time.perf_counter() - started
transplanted = transplant_rows(transplant)
display(Markdown(transplant_table(transplanted)))
transplant_figure(transplant, config.grok_threshold).show()

# %% [markdown]
# The study reports that about 7% of transplanted seeds ungrok, 8% with the roles swapped
# {cite:p}`wu2025ambiguous`; the summary at the end sets this run's shares beside those. What could
# make them differ is not settled here: the study does not say which pair, model size or
# first-phase data it transplanted, nor where it drew the line for "partially ungrok". Here any
# logged epoch below the grokking threshold while the intersection is still fitted counts, the
# optimizer starts anew on the intersection, and the table's last column shows how far the
# ungrokked seeds actually fell.

# %% [markdown]
# ## The training Jacobian
#
# The training map sends initial weights to final weights; its Jacobian says how a small change
# at initialization shows up at the end {cite:p}`belrose2024jacobian`. For an MLP of the chapter's shape
# with $d = h$ = `jacobian_dim`, small enough for its $P \times P$ Jacobian, the Jacobian is computed
# exactly with `torch.func.jacfwd` through every full-batch Adam step (one forward-mode tangent
# per initial weight, batched), after several training lengths, with and without weight decay,
# in float64 and float32, and checked against central finite differences in float64. Belrose and
# Scherlis found a *bulk* of singular values near 1 (directions training leaves alone); the
# study found none in this setting, and a Jacobian that blows up late in training
# {cite:p}`wu2025ambiguous`. If the blow-up were a numerical artifact, float32 and float64 would part;
# and where the map is no longer linear over a step of 1e-6, finite differences part from the
# exact Jacobian (checked at the shortest and the longest length; only the first is asserted).

# %%
started = time.perf_counter()
model = MLPConfig(result.model_config.n_elements, config.jacobian_dim, config.jacobian_dim)
spectra = jacobian_spectra(result.info["pair"], model, config.seed, result.training_config,
                           config.jacobian_lengths, config.jacobian_weight_decays,
                           (torch.float64, torch.float32), torch.Generator().manual_seed(config.seed + 5))
seconds["jacobian"] = time.perf_counter() - started
print(f"{spectra.n_parameters} parameters; finite-difference check (float64, {spectra.lengths[1]} steps): "
      f"largest relative error {spectra.finite_difference_error:.2e}; at {spectra.lengths[-1]} steps: "
      f"{spectra.longest_finite_difference_error:.2e}")
assert spectra.finite_difference_error < 1e-4, "the Jacobian disagrees with finite differences"
jacobian = jacobian_rows(spectra)
display(Markdown(jacobian_table(jacobian)))
jacobian_figure(spectra).show()

# %% [markdown]
# ## Beyond the study: how early is the outcome readable?
#
# For every seed of the sweep, at every `predict_every` epochs, a logistic regression predicts
# the final outcome from what was logged at that epoch: accuracy against each group on the whole
# table, training accuracy and log training loss. Every seed is scored by a regression fitted on
# the other folds (`predict_folds`, stratified), and the ROC AUC of those held-out scores measures
# how readable the outcome is at that epoch. Two questions: grokked either group vs neither, and,
# among grokkers, S4 vs A4 x Z2 (with few A4 x Z2 grokkers this second AUC is noisy).

# %%
started = time.perf_counter()
prediction = early_prediction(result, groups, config.predict_every, config.predict_folds,
                              torch.Generator().manual_seed(config.seed + 6))
seconds["early_prediction"] = time.perf_counter() - started
readable = prediction.first_epoch_at_or_above(0.9)
print(f"features: {', '.join(PREDICTION_FEATURES)}; folds {prediction.folds}; AUC (either vs neither) "
      f"stays at or above 0.9 from epoch {readable} (-1: never)")
early_prediction_figure(prediction, [r["decision_epoch"] for r in decisions],
                        [r["choice_epoch"] for r in decisions]).show()

# %% [markdown]
# ## Numbers and checks

# %% tags=["remove-output"]
results = chapter_results(config=config, sweep_source=sweep.source, n_seeds=result.n_instances,
                          outcome_counts=counts, decisions=decisions, perturbation=study, tv=tv,
                          transplant=transplant, spectra=spectra, prediction=prediction, seconds=seconds)
path = write_results(config.results_dir, "06_determination", results)
print(f"results written to {path}")

# %% [markdown]
# ## Summary
#
# What this run measured (every number from the cells above):

# %%
display(Markdown("\n".join(f"- {line}" for line in summary_lines(
    decisions, config.decision_log2_scale, tv_rows, transplanted, spectra, prediction))))
