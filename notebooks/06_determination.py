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
# - **perturbation sensitivity**: noise of scale $2^k$ on the weights at a checkpoint, training
#   continued to the end; does the outcome change? (with a slider over the scale);
# - **argmax flips** late in training: do grokkers "lock in"?
# - **transplant**: a seed that learned one group on its whole table, moved to the ambiguous
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
perturb_every = 250  # epochs between the checkpoints at which they are perturbed
log2_scales = [-25, -20, -15, -10, -5, 0, 5]  # noise scales as powers of two, k in 2^k (the study: -25 .. 5)
noise_shapes = ["init", "gaussian"]  # noise shapes: "init" (the authors': N(0, s^2) on the embeddings, uniform with bound s/sqrt(fan_in) on the weights and the bias; the figures use it) and "gaussian" (N(0, s^2) on every entry)
copies = 2  # noisy copies per seed, checkpoint, scale and noise shape
decision_log2_scale = -10  # decision epoch: perturbations up to 2^k no longer change the outcome
tv_per_outcome = 60  # seeds of each outcome whose argmax flips are measured
tv_epochs = 3000  # epochs those seeds are trained for (the study: 3,000)
tv_window = 1000  # the book's late window of the total variation, its last epochs
tv_every = 20  # epochs between the snapshots inside that window
flip_every = 5  # the authors' definition: epochs between snapshots (the study: 5)
flip_intervals = 100  # the authors' definition: the last intervals averaged (the study: 100)
transplant_seeds = 64  # seeds transplanted in each direction
transplant_train_fraction = 1.0  # share of the group's table they first train on (the authors: 1, the whole table)
transplant_first_epochs = 2000  # epochs on the group's table (the authors' default: 2,000)
transplant_second_epochs = 2000  # epochs on the intersection after the transplant (the authors: 2,000)
jacobian_dim = 8  # embedding and hidden width (d and h) of the MLP whose training Jacobian is computed (the authors: 32)
jacobian_steps = 80  # full-batch Adam steps of its training (the authors: 4,000)
jacobian_segment = 20  # steps per segment of the composed Jacobian (the authors: 100)
jacobian_weight_decay = 2e-4  # weight decay of that training (the authors: 2e-4)
jacobian_train_fraction = 0.584  # share of S4's table it trains on, drawn at random (the authors: 0.584)
sketch_dim = 32  # width (embedding and hidden alike) of the MLP whose training Jacobian is read through products (the authors: 32)
sketch_steps = 2000  # its full-batch Adam steps (the authors: 4,000)
sketch_segment = 100  # steps per segment of its composition (the authors: 100)
sketch_directions = 32  # random directions pushed through its training: the randomized SVD reads the largest this many singular values
sketch_candidates = 32  # seeds screened for it; the one that groks earliest is read
sketch_spread_seeds = 4  # further grokking seeds whose largest singular value is followed too (forward only, float64)
sketch_spread_directions = 8  # directions pushed through the training of each of those
sketch_adam_eps = [1e-7, 1e-6]  # further values of Adam's eps at which the same seeds' largest singular value is followed (the authors: torch's 1e-8, the chapter's schedule)
sketch_overflow_steps = 4000  # steps of a float64 and a float32 run of the read seed, past the authors' epoch 3,100 where their norm nears float32's largest number (0: none)
predict_every = 20  # epochs between the epochs at which the outcome is predicted
predict_folds = 5  # folds of the held-out predictions
cpu_threads = 1  # torch threads of this process on the CPU
workers = 2  # single-threaded worker processes training the perturbed copies, the retrained seeds and the runs read through products, on a CPU

# %% tags=["hide-input"]
import time

import torch
from IPython.display import Markdown, display

from lib.book.params import apply_cpu_threads, validate_parameters
from lib.book.plotting import configure_notebook_rendering
from lib.book.record import Record, verdict
from lib.book.reproducibility import seed_everything
from lib.book.results import write_results
from lib.book.tables import markdown_table
from lib.book.verdict import Never, judge
from lib.grokking.early_prediction import PREDICTION_FEATURES, early_prediction
from lib.grokking.perturbation import perturbation_study, retrain_with_snapshots
from lib.grokking.jacobian_sketch import BULK_FLOOR
from lib.grokking.study import PUBLISHED_FLIP_PROTOCOL, PUBLISHED_JACOBIAN, PUBLISHED_UNGROK_SHARES
from lib.grokking.transplant import AUTHORS_CRITERION, CRITERIA
from lib.grokking.study_sweep import GROUPS, load_s4_sweep, outcome_groups
from lib.grokking.training import snapshot_epochs
from lib.chapters.ch6 import (
    Chapter6Parameters, choose_per_outcome, flip_study, jacobian_run, sketched_jacobian_run, transplant_both_ways)
from lib.grokking.jacobian_claims import BLOW_UP_FACTOR, FLOAT32_DEPARTURE, sketch_summary
from lib.chapters.ch6_figures import (
    early_prediction_figure, jacobian_figure, perturbation_figure, perturbation_heatmaps, perturbation_panel,
    seed_labels, sketched_jacobian_figure, total_variation_figure, transplant_figure,
)
from lib.chapters.ch6_results import (
    amplification_table, check_results, decision_comparison_rows, decision_comparison_table, decision_leads,
    decision_rows, decision_table, flip_comparison_table, flips_ordered, growth_table, jacobian_rows,
    jacobian_summary, jacobian_table, no_bulk_word, sketch_spectrum_table, sketch_table, total_variation_rows,
    total_variation_table, transplant_rows, transplant_table, transplant_verdict, transplant_word,
)

config = validate_parameters(Chapter6Parameters, globals())
config.use_sweep_backend()
apply_cpu_threads(config.cpu_threads, config.device)
seed_everything(config.seed)
configure_notebook_rendering()
seconds = {}
record = Record()  # the numbers the prose cites as {{key}}; they also go to the results JSON

# %% [markdown]
# ## The published scale
#
# The defaults are a reduced run for a CPU: two seeds per outcome perturbed every 250 epochs at
# the study's scales $2^{-25}, 2^{-20}, \dots, 2^{5}$ with two noisy copies per noise shape, up to
# 60 seeds per outcome for the argmax flips, 64 seeds per transplant direction, the whole training
# Jacobian of a $d = h = 8$ model over 80 steps, and that of the authors' $d = h = 32$ model over
# 2,000 steps read through 32 directions. The study's flip rates come from one run of
# 1,000 seeds, its transplant from the authors' `ungrok.ipynb`, its Jacobian from $d = h = 32$
# ($P$ = 4,376) over 4,000 steps {cite:p}`wu2025ambiguous`. On a GPU, after chapter 4 ran at the
# published scale:
#
# ```
# papermill 06_determination.ipynb out.ipynb -f published/06.yaml
# ```
#
# (the parameters in `notebooks/published/06.yaml`).
# The perturbed copies, the retrained and the transplanted seeds all train through the sweep
# runner, so on a Ray cluster (run from its head node) the same run is
#
# ```
# papermill 06_determination.ipynb out.ipynb -f published/06.yaml -p sweep_backend ray -p ray_address auto
# ```

# %% [markdown]
# ## Chapter 4's seeds
#
# The S4 sweep of chapter 4 without the unembedding bias (the one chapter 5 measures too) is
# loaded from `results_dir` when it is there; otherwise the same sweep is trained here with
# chapter 4's code (the cell says which happened). The study's published runs had the bias, and
# chapter 4 saves that sweep too (`04_sweep_s4.pt`), but in chapter 4's sweep with the bias seeds that
# grok A4 x Z2 are rarer than without it (its table gives both sweeps' counts), too few in a CPU-sized
# sweep for anything per outcome. This chapter reads the sweep without the bias, and every
# comparison with the study below names the difference.

# %%
sweep = load_s4_sweep(config)
result = sweep.result
groups = outcome_groups(result, config.grok_threshold)
counts = {name: int((groups == code).sum()) for code, name in enumerate(GROUPS)}
epochs = result.training_config.epochs
print(f"S4 sweep: {sweep.source}" + (f" ({sweep.file_name})" if sweep.path else "")
      + f", {result.n_instances} seeds, {epochs} epochs; outcomes: {counts}")

# %% [markdown]
# ## Perturbation sensitivity
#
# For `perturb_per_outcome` seeds of each outcome, chosen at random, chapter 4 kept too few
# snapshots, so they are retrained here with the same code, seeds and schedule (the cell checks
# that they end as they did in the sweep), keeping a snapshot every `perturb_every` epochs. At
# each snapshot but the last, `copies` copies of the weights get noise of scale $2^k$ for every
# $k$ of `log2_scales`, and one copy gets none; all are trained on to the sweep's last epoch as
# one batch of instances, with a fresh Adam state (moments and step count reset), as the study
# continued "anew". The probability that the outcome changes is the share of noisy copies whose
# final outcome differs from the noiseless continuation's.
#
# Two noise shapes (`noise_shapes`). The authors' (`init`, from their `perturb.ipynb`) is shaped
# like the initialization: $N(0, s^2)$ on the embeddings; uniform on $[-s/\sqrt{\text{fan-in}},
# s/\sqrt{\text{fan-in}}]$ on the two linear maps (fan-in $d$: their noise uses their uniform
# helper without the $1/\sqrt 2$ their initialization applies, so its bound is $s/\sqrt d$ while
# the initialization's is $1/\sqrt{2d}$) and on the unembedding (fan-in $h$); uniform with bound
# $s/\sqrt h$ on the unembedding bias. The book's first choice (`gaussian`) is $N(0, s^2)$ on
# every entry, about $\sqrt{3d}$ (here about 10) times larger on the linear maps at the same
# nominal scale. The figures, compared with the study, use the authors' shape.

# %%
started = time.perf_counter()
chosen = choose_per_outcome(groups, config.perturb_per_outcome, torch.Generator().manual_seed(config.seed))
dense = retrain_with_snapshots(result, chosen, snapshot_epochs(epochs, config.perturb_every), config.workers)
same_outcome = torch.equal(outcome_groups(dense, config.grok_threshold), groups[chosen])
studies = {shape: perturbation_study(dense, torch.arange(len(chosen)), config.log2_scales, config.copies,
                                     torch.Generator().manual_seed(config.seed + 1), config.grok_threshold,
                                     config.workers, noise_shape=shape)
           for shape in config.noise_shapes}
study = studies[config.figure_noise_shape]
seconds["perturbation"] = time.perf_counter() - started
labels = seed_labels(study, dense.seeds)
print(f"retrained seeds end as in the sweep: {same_outcome}; {len(study.checkpoints)} checkpoints x "
      f"{len(chosen)} seeds x {len(config.log2_scales)} scales x {config.copies} copies x "
      f"{len(studies)} noise shapes continued in {seconds['perturbation']:.0f} s; figures: {config.figure_noise_shape} noise")
assert same_outcome, "retraining did not retrace the sweep"
perturbation_figure(study, dense, labels).show()
perturbation_heatmaps(study, labels).show()

# %% [markdown]
# A seed's **decision epoch** is the first checkpoint from which no perturbation up to a chosen
# scale changes its outcome in any copy, at that checkpoint or any later one. The first table is
# the figures' noise shape, with the epoch at which the choice shows in test accuracy (accuracy
# against S4 or A4 x Z2 on the whole table reaching the grokking threshold; "-" for seeds that
# grok neither); the second puts the decision epochs under both noise shapes side by side.

# %%
largest = int(study.log2_scales.max())
display(Markdown(decision_table(decision_rows(study, dense.seeds, config.decision_log2_scale),
                                config.decision_log2_scale, largest)))
decisions = decision_comparison_rows(studies, dense.seeds, config.decision_log2_scale)
display(Markdown(decision_comparison_table(decisions, list(studies), config.decision_log2_scale)))

# %% [markdown]
# In a live kernel, the panel below reruns the study for one seed and one scale with the
# authors' noise (a few seconds to a minute: it trains `copies` noisy copies and a noiseless one
# from every checkpoint).

# %%
display(perturbation_panel(dense, labels, config.copies, config.seed + 2, config.grok_threshold, config.workers,
                           config.figure_noise_shape))

# %% [markdown]
# ## Argmax flips: do grokkers lock in?
#
# The study measured how much each seed's predictions still move late in training. Its code
# (`total_variation.ipynb`) kept a snapshot every 5 epochs over 3,000 epochs and took, for each
# seed, the share of **all** $N^2$ = 576 pairs whose argmax changes between consecutive snapshots,
# averaged over the last 100 intervals, with seeds grouped by their accuracy at the end
# {cite:p}`wu2025ambiguous`. That is the authors' definition here (`flip_every`,
# `flip_intervals`). The book's first definition sits beside it: the pairs outside the training
# set only, over a window of the last `tv_window` epochs with a snapshot every `tv_every`, with the
# total variation of the logits (the distance between a pair's logit vectors at consecutive
# snapshots, averaged over pairs and summed over the window). Up to `tv_per_outcome` seeds per
# outcome are retrained here with the same code and seeds for `tv_epochs` epochs (past the
# sweep's 2,000 the same trajectories simply go on) and grouped by their outcome at the end.

# %%
started = time.perf_counter()
tv_chosen = choose_per_outcome(groups, config.tv_per_outcome, torch.Generator().manual_seed(config.seed + 3))
tv = flip_study(config, result, tv_chosen)
seconds["total_variation"] = time.perf_counter() - started
tv_rows = total_variation_rows(tv, torch.Generator().manual_seed(config.seed + 7))
print(f"retrained seeds match the sweep at its epoch {epochs}: {tv.same_outcome}; authors' definition: epochs "
      f"{int(tv.authors_epochs[0])}-{int(tv.authors_epochs[-1])}, {len(tv.authors_epochs) - 1} intervals; book's "
      f"window: epochs {int(tv.epochs[0])}-{int(tv.epochs[-1])}, {len(tv.epochs) - 1} snapshot steps")
assert tv.same_outcome, "retraining did not retrace the sweep"
display(Markdown(total_variation_table(tv_rows)))
total_variation_figure(tv).show()

# %% [markdown]
# The study's rates come from a run of the model **with** the bias. Like for like, the same
# flips are measured on chapter 4's sweep with the bias (`04_sweep_s4.pt`), up to
# `tv_per_outcome` seeds per outcome again; it holds fewer seeds that grokked A4 x Z2 (the table
# says how many).

# %%
started = time.perf_counter()
with_bias = load_s4_sweep(config, with_bias=True)
bias_groups = outcome_groups(with_bias.result, config.grok_threshold)
tv_bias = flip_study(config, with_bias.result,
                     choose_per_outcome(bias_groups, config.tv_per_outcome, torch.Generator().manual_seed(config.seed + 8)))
seconds["total_variation_with_bias"] = time.perf_counter() - started
tv_bias_rows = total_variation_rows(tv_bias, torch.Generator().manual_seed(config.seed + 9))
print(f"S4 sweep with the bias: {with_bias.source}" + (f" ({with_bias.file_name})" if with_bias.path else "")
      + f"; retrained seeds match it: {tv_bias.same_outcome}")
assert tv_bias.same_outcome, "retraining did not retrace the sweep with the bias"
display(Markdown(total_variation_table(tv_bias_rows)))
record("flips.published_instances", PUBLISHED_FLIP_PROTOCOL["instances"], ",")
record("flips.published_a4_seeds", PUBLISHED_FLIP_PROTOCOL["a4_seeds"], ",")
flip_comparison = flip_comparison_table(tv_bias_rows, tv_rows)
display(Markdown(flip_comparison))

# %% [markdown]
# By the authors' definition, per outcome, the table above gives the mean flip rate and how many
# seeds flip at all in the model with the bias (the study's, which ran
# {{flips.published_instances}} seeds, {{flips.published_a4_seeds}} of them grokking A4 x Z2) and
# in the model without it, beside the published rates.

# %% [markdown]
# ## Transplant: is a grokked solution stable under a change of data?
#
# The authors' protocol (`ungrok.ipynb`): `transplant_seeds` seeds of the study's S4 model
# ($d = h = 32$, the bias, weight decay 2e-5) train on the **whole** table of one group
# (`transplant_train_fraction` = 1; the study's text speaks of an iid subsample, its code trained
# on all 576 pairs) for `transplant_first_epochs` epochs, then the weights alone move to the
# intersection of S4 and A4 x Z2 for `transplant_second_epochs` epochs with a fresh Adam (lr 0.01,
# betas 0.9 / 0.98). Nothing in the new data asks the seed to change. Both directions, S4 first
# and A4 x Z2 first. A seed **ungroks** by four criteria, each counted among the seeds that
# learned the group in phase 1:
#
# - *below 0.999* (the book's): accuracy on the group's whole table below 0.999 at some logged
#   epoch on the intersection while the intersection is still fitted; *below 0.95*: the same at 0.95;
# - *peak minus final > 0.1*: the authors' coded criterion (their `is_grokked`, with their
#   training script's grok threshold 0.95): the best accuracy on the intersection phase exceeds
#   the last by more than 0.1;
# - *collapse to the intersection*: at the end, accuracy on the group's table at most the
#   intersection's share of it (336 / 576): no pair outside the intersection is right any more.
#
# Shares come with Wilson 95% intervals.

# %%
started = time.perf_counter()
transplant = transplant_both_ways(config, torch.Generator().manual_seed(config.seed + 4))
seconds["transplant"] = time.perf_counter() - started
transplanted = transplant_rows(transplant)
display(Markdown(transplant_table(transplanted)))
transplant_figure(transplant, config.grok_threshold).show()

# %%
transplant_claim = transplant_verdict(transplanted)
record("transplant.published_s4", PUBLISHED_UNGROK_SHARES[0], ".0%")
record("transplant.published_a4", PUBLISHED_UNGROK_SHARES[1], ".0%")
record("transplant.authors_criterion", AUTHORS_CRITERION)
record("transplant.criteria_tried", len(CRITERIA), ",")
for r, share_ in zip(transplanted, transplant_claim["authors_criterion_shares"]):
    record(f"transplant.{r['first_group'].lower()}.authors_share", share_, ".1%")
record("transplant.authors_match", verdict(transplant_claim["authors_criterion_matches"],
                                           yes="lie inside both Wilson intervals",
                                           no="lie outside a Wilson interval"))
# The verdict word: the book's one rule on the two rates (the index's transplant row judges the same).
record("transplant.verdict", transplant_word(transplanted, PUBLISHED_UNGROK_SHARES, AUTHORS_CRITERION))
other_criteria = [name for name in transplant_claim["criteria_matching_both"] if name != AUTHORS_CRITERION]
record("transplant.other_criteria", ", ".join(other_criteria) if other_criteria else "none")

# %% [markdown]
# The study reports about {{transplant.published_s4}} and {{transplant.published_a4}} ungrokking
# {cite:p}`wu2025ambiguous`. Under the criterion its code records ({{transplant.authors_criterion}})
# the authors' protocol gives {{transplant.s4.authors_share}} (S4 first) and
# {{transplant.a4xz2.authors_share}} (A4xZ2 first) here: the published shares
# {{transplant.authors_match}} (verdict: **{{transplant.verdict}}**). The other criteria under which they lie inside both intervals:
# {{transplant.other_criteria}}; their code uses none of these, each is one of the
# {{transplant.criteria_tried}} tried here, so such a match is weak evidence. Where the shares are
# not reproduced, note that the number is not stored in the authors' repository; getting it would
# take the run it came from (its seeds, phase-1 length and criterion).

# %% [markdown]
# ## The training Jacobian
#
# The training map sends initial weights to final weights; its Jacobian says how a small change
# at initialization shows up at the end {cite:p}`belrose2024jacobian`. Belrose and Scherlis found
# a *bulk* of singular values near 1 (directions training leaves alone); the study found none,
# and a Jacobian that blows up late in training, past grokking {cite:p}`wu2025ambiguous`. Its
# setting: $d = h = 32$ with the bias, weight decay 2e-4, full-batch Adam on an iid 58.4% of S4's
# table, the Jacobian composed over segments of 100 steps, 4,000 steps; their notebook sets no
# dtype, so it ran in torch's default float32. First the whole matrix, exactly, on a model small
# enough to hold it: the same setting at $d = h$ = `jacobian_dim` over `jacobian_steps` steps
# (the next section reads the authors' model). An Adam step maps the whole optimizer
# state $(\theta, m, v)$ to the next, so each segment's Jacobian is applied to the product of the
# earlier ones (forward-mode products, `torch.func.jvp` vmapped over the $P$ directions) and
# $d\theta_t / d\theta_0$ is read at every segment boundary, in float64 and float32, with the
# accuracy on the whole table at each boundary; the first segment is checked against central
# finite differences. Its cost grows with $P$ directions times $P$-sized steps times the number
# of steps, which is what bounds the CPU run.

# %%
started = time.perf_counter()
jacobian = jacobian_run(config, result.training_config)
seconds["jacobian"] = time.perf_counter() - started
jacobian_facts = jacobian_summary(jacobian)
print(f"P = {jacobian.n_parameters}, {jacobian.steps} steps in segments of {jacobian.segment}; finite-difference "
      f"check of the first segment (float64): largest relative error {jacobian.finite_difference_error:.2e}; "
      f"seconds per step: {jacobian.seconds_per_step}")
assert jacobian.finite_difference_error < 1e-4, "the Jacobian disagrees with finite differences"
display(Markdown(jacobian_table(jacobian_rows(jacobian))))
jacobian_figure(jacobian).show()

# %%
record("jacobian.n_parameters", jacobian.n_parameters, ",")
record("jacobian.steps", jacobian.steps, ",")
record("jacobian.published_n_parameters", PUBLISHED_JACOBIAN["n_parameters"], ",")
record("jacobian.published_steps", PUBLISHED_JACOBIAN["steps"], ",")
record("jacobian.cost_ratio", jacobian_facts["cost_ratio_to_published"], ",.0f")
record("jacobian.groks", verdict(jacobian_facts["grok_step"] > 0, yes="groks", no="does not grok"))
record("jacobian.grok_step", jacobian_facts["grok_step"], ",")
record("jacobian.before_step", jacobian_facts["before"]["step"], ",")
record("jacobian.after_step", jacobian_facts["after"]["step"], ",")
record("jacobian.before_kind", verdict(jacobian_facts["grok_step"] > 0, yes="just before and after grokking",
                                       no="after the first segment and at the end"))

# %% [markdown]
# This run: $P$ = {{jacobian.n_parameters}} over {{jacobian.steps}} steps; the authors': $P$ =
# {{jacobian.published_n_parameters}} over {{jacobian.published_steps}} steps, about
# {{jacobian.cost_ratio}} times the work ($P^2$ times steps). The model {{jacobian.groks}} within
# the run (grokking step {{jacobian.grok_step}}; -1: never), so the spectra compared are those of
# steps {{jacobian.before_step}} and {{jacobian.after_step}}, {{jacobian.before_kind}}. Where it
# does not grok, the study's claims, which concern models trained past grokking, are tested in the
# next section (which also screens this width for grokking); this one shows the exact spectrum
# moving before grokking and checks the composition.

# %% [markdown]
# ### At the authors' scale, through products
#
# The dense Jacobian above carries $P$ directions through every step, so its work grows with
# $P^2$ times the steps: the ratio printed above puts the authors' setting out of a CPU's reach.
# The study's two claims need less than the whole matrix: "no bulk" asks how many
# singular values sit near 1, "blows up" how the largest grows. So the authors' model
# ($d = h$ = `sketch_dim`, the bias, weight decay 2e-4, the same 58.4%) is trained for
# `sketch_steps` steps and its Jacobian read through `sketch_directions` random directions $\Omega$,
# composed over segments of `sketch_segment` steps like the dense one
# (`lib/grokking/jacobian_sketch.py`):
#
# - forward, at every boundary $t$: $J_t \Omega$ gives a **lower bound** on the largest singular
#   value (that of $J_t$ restricted to the directions' span) and Hutchinson's estimate of
#   $\lVert J_t \rVert_F^2$, the **root-mean-square** singular value;
# - backward, a third of the way to grokking, just before and at grokking, and at the end: an
#   orthonormal basis $Q$ of $J_t \Omega$'s range is pulled back through the segments by
#   vector-Jacobian products;
#   the singular values of $Q^\top J_t$ estimate the $K$ largest of $J_t$ (randomized SVD
#   {cite:p}`halko2011finding`, each estimate at most the true value);
# - the bulk bound: the singular values past the $K$-th have squares summing to at most
#   $\lVert J_t \rVert_F^2 - \lVert Q^\top J_t \rVert_F^2$, so at most $K$ plus that over $0.9^2$
#   of them reach 0.9;
# - a finite check, for the authors' own caveat that a blow-up may be "an artifact of numerical
#   instability": the model is retrained from $\theta_0$ moved by $10^{-14}, \dots, 10^{-6}$ along
#   the most stretched direction $u$, and each move at step $t$ divided by the move at the start
#   is compared with $\lVert J_t u \rVert$ from one forward product, early (a third of the way to
#   grokking, where the map should still be smooth at these scales) and at grokking.
#
# Few seeds grok within the run, so `sketch_candidates` seeds are screened first (all at once) and
# the earliest to grok is read; the next `sketch_spread_seeds` grokkers are followed forward only
# (`sketch_spread_directions` directions, float64), so that "late blow-up" does not rest on one
# model. The run stops at 2,000 steps, where the authors read their spectrum (the product of the
# first 20 segments); the tests check every product against the dense Jacobian of a small model.

# %%
started = time.perf_counter()
sketch_run = sketched_jacobian_run(config, result.training_config)
seconds["jacobian_sketch"] = time.perf_counter() - started
sketch_facts = sketch_summary(sketch_run)
print(f"P = {sketch_run.study.n_parameters}, {sketch_run.study.steps} steps in segments of {sketch_run.study.segment}, "
      f"{sketch_run.study.sketch_size} directions; screened seeds grokking at steps {sketch_run.grok_steps} (-1: not "
      f"within the run); read seed {sketch_run.chosen}; seconds: "
      + ", ".join(f"{name} {value:.0f}" for name, value in sketch_run.study.seconds.items()))
display(Markdown(sketch_table(sketch_facts["rows"])))
display(Markdown(sketch_spectrum_table(sketch_facts["spectra"])))
sketched_jacobian_figure(sketch_run).show()
display(Markdown(growth_table(sketch_facts["growth_by_seed"])))

# %% [markdown]
# Two rivals of "the Jacobian blows up late in training" are measured on the same seeds. **Adam's
# eps**: Adam divides each step by $\sqrt{\hat v} + \epsilon$, and late in training $\hat v$ of some
# weights falls towards $\epsilon$ (the authors: torch's $10^{-8}$), so a tiny change of the weights
# can change a step a lot; the growth is read again at each of `sketch_adam_eps`. **Float32
# overflow**: the authors' norm (float32) rises to about $10^{37}$ near epoch 3,100, just under
# float32's largest number ($3.4 \times 10^{38}$); the read seed is run for `sketch_overflow_steps`
# steps in both dtypes. A growth in these tables is a ratio of two lower bounds: an estimate of the
# growth, not a bound on it.

# %%
for entry in sketch_facts["growth_by_eps"]:
    display(Markdown(f"At Adam eps {entry['eps']:g}:\n\n{growth_table(entry['rows'])}"))
overflow = sketch_facts["overflow"]
if overflow:
    print(f"seed {overflow['seed']} run {overflow['steps']} steps (groks at step {overflow['grok_step']}): float64 bound "
          f"{overflow['float64_end']:.3g} at the end, above float32's largest number from step "
          f"{overflow['float64_exceeds_float32_max_at']} (-1: never); the float32 bound is not finite from step "
          f"{overflow['float32_nonfinite_at']} (-1: never)")

# %%
checks = sketch_facts["claims"]  # the study's two claims as booleans, with their evidence (the index words them)
f = sketch_facts
for name, value, fmt in (
        ("n_parameters", f["n_parameters"], ","), ("steps", f["steps"], ","),
        ("published_steps", f["published"]["steps"], ","), ("directions", f["directions"], ","),
        ("seeds_screened", f["seeds_screened"], ","), ("seeds_grokked", f["seeds_grokked_in_screen"], ","),
        ("small_width", f["small_width"], ","), ("small_seeds_grokked", f["small_seeds_grokked"], ","),
        ("chosen_seed", f["chosen_seed"], ""), ("grok_step", f["grok_step"], ","),
        ("largest_first_segment", f["largest_lower_bound_first_segment"], ".3g"),
        ("largest_at_grok", f["largest_lower_bound_at_grok"], ".3g"),
        ("largest_end", f["largest_lower_bound_end"], ".3g"), ("end_step", f["end_step"], ","),
        ("end_above_bulk", f["end_estimates_above_bulk"], ","), ("end_bulk_bound", f["end_bulk_share_bound"], ".1%"),
        ("bulk_floor", BULK_FLOOR, "g"), ("departure", FLOAT32_DEPARTURE, ".0%"),
        ("float32_departs_at", f["float32_departs_at"] if f["float32_departs_at"] >= 0 else None, ","),
        ("float32_end", f["float32_relative_difference_end"], ".2g"),
        ("blow_up_factor", BLOW_UP_FACTOR, ".0f"), ("adam_eps", f["adam_eps"], "g"),
        ("seeds_blown", checks["seeds_blown"], ","), ("grokking_seeds", checks["grokking_seeds"], ","),
        ("growth_before_grokking", checks["growth_before_grokking_min"], ".2g")):
    record(f"sketch.{name}", value, fmt)
record("sketch.groks", verdict(checks["grokked"], yes="groks", no="does not grok"))
record("sketch.bound_says", verdict(f["end_bulk_share_bound"] < 1, yes="bounds the others",
                                    no="says nothing of the others"))
record("sketch.float32_departs", verdict(checks["float32_departs"], yes="departs from float64",
                                         no="stays close to float64"))
# "No bulk" read on one seed: one run, and not comparable where the bound cannot count the bulk.
record("sketch.no_bulk", no_bulk_word(checks["no_bulk"]))
# The study's "blows up late" read as an "every grokking seed": the book's one verdict rule.
record("sketch.blow_up", judge(Never(checks["grokking_seeds"] - checks["seeds_blown"], checks["grokking_seeds"]))
       if checks["grokked"] else "not comparable at this scale (the model does not grok)")
record("sketch.blow_up_some", verdict(checks["blow_up_some"], yes="at least one does", no="none does",
                                      undefined="none is read"))
record("sketch.blow_up_eps", "; ".join(f"{e['seeds_blown']} of {e['grokking_seeds']} at eps {e['eps']:g}"
                                      for e in checks["by_eps"]) or "not read at further values of Adam's eps")
record("sketch.overflow_steps", f["overflow"]["steps"] if f["overflow"] else None, ",")
record("sketch.overflow_at", f["overflow"]["float32_nonfinite_at"] if checks["float32_overflows"] else None, ",")
record("sketch.overflow_float64_end", f["overflow"]["float64_end"] if f["overflow"] else None, ".2g")
record("sketch.overflow", verdict(checks["float32_overflows"], yes="overflows",
                                  no="stays finite", undefined="is not run past the read run"))
display(Markdown(markdown_table(["Adam eps", "grokking seeds that grow at least 10 times", "grokking seeds"],
                                [[f"{f['adam_eps']:g} (the authors')", checks["seeds_blown"], checks["grokking_seeds"]]]
                                + [[f"{e['eps']:g}", e["seeds_blown"], e["grokking_seeds"]] for e in checks["by_eps"]])))
display(Markdown(amplification_table(f["amplification"])))

# %% [markdown]
# $P$ = {{sketch.n_parameters}} (the authors' model) over {{sketch.steps}} steps (the authors:
# {{sketch.published_steps}}), read through {{sketch.directions}} directions. Of
# {{sketch.seeds_screened}} seeds screened, {{sketch.seeds_grokked}} grokked within the run (at the
# exact model's width d = h = {{sketch.small_width}}, the same seeds: {{sketch.small_seeds_grokked}});
# seed {{sketch.chosen_seed}} was read and {{sketch.groks}} within the run (grokking step
# {{sketch.grok_step}}; -1: never). The lower bound on the largest singular value is
# {{sketch.largest_first_segment}} after the first segment, {{sketch.largest_at_grok}} at grokking
# and {{sketch.largest_end}} at step {{sketch.steps}}; at step {{sketch.end_step}} at least
# {{sketch.end_above_bulk}} singular values exceed 1.1, and the tail bound puts at most
# {{sketch.end_bulk_bound}} of the {{sketch.n_parameters}} at or above {{sketch.bulk_floor}}, which
# {{sketch.bound_says}}.
#
# The finite checks (the second table) move the initial weights along the most stretched direction
# u: where the ratio agrees with the products, they read the real training map; where no move
# tried is small enough to be linear, in float64 the map is not differentiable in practice there,
# and any such move lands the weights elsewhere. Float32 {{sketch.float32_departs}}: its sketch
# first lies more than {{sketch.departure}} from the float64 one at step
# {{sketch.float32_departs_at}} (n/a where it never does) and ends {{sketch.float32_end}} apart; past
# such a step a float32 Jacobian is not the float64 one.
#
# **No bulk**: {{sketch.no_bulk}}. **Blow-up late**: {{sketch.blow_up}}: at Adam eps
# {{sketch.adam_eps}} (the authors'), {{sketch.seeds_blown}} of {{sketch.grokking_seeds}} grokking
# seeds grow at least {{sketch.blow_up_factor}} times from grokking to step {{sketch.steps}} (ratios
# of two lower bounds, estimates, in the growth table above; {{sketch.blow_up_some}}), and the
# growth is counted again at further values of Adam's eps (the first table), seeds growing at
# least {{sketch.blow_up_factor}} times: {{sketch.blow_up_eps}}. Adam's step divides by
# $\sqrt{v} + \epsilon$, which shrinks as the gradients vanish after grokking, so the late growth
# may be partly the optimizer's rather than the grokked solution's; a few seeds per eps measure no
# rate, and these counts do not decide it. It grows before grokking too (at least
# {{sketch.growth_before_grokking}} times from the first segment to grokking). Float64 throughout:
# run to step {{sketch.overflow_steps}}, the float32 bound {{sketch.overflow}} (first not finite
# at step {{sketch.overflow_at}}, n/a where it stays finite; the float64 one ends at
# {{sketch.overflow_float64_end}}); a float32 curve that overflows ends near float32's largest
# number, 3.4e38, whatever the true growth. The authors
# also decay the unembedding bias, this model does not.

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
early_prediction_figure(prediction, [r[f"decision_epoch_{config.figure_noise_shape}"] for r in decisions],
                        [r["choice_epoch"] for r in decisions]).show()

# %% [markdown]
# ## Summary
#
# What this run measured (every number from the cells above):

# %%
leads = [decision_leads(decisions, shape) for shape in studies]
record("summary.decision_log2_scale", config.decision_log2_scale, "d")
display(Markdown(markdown_table(
    ["noise shape", "perturbed grokkers", "decided before the choice showed", "median lead (epochs)"],
    [[r["shape"], r["grokkers"], r["decided_early"], f"{r['median_lead']:.0f}"] for r in leads])))
display(Markdown(flip_comparison))
record("summary.flips_ordered", verdict(flips_ordered(tv_bias_rows),
                                        yes="less than those that grokked neither, as in the study",
                                        no="not always less than those that grokked neither, unlike the study",
                                        undefined="without a comparison with those that grokked neither (an outcome is missing)"))
criterion_keys = dict(zip(CRITERIA, ("below_0999", "below_095", "peak_minus_final", "collapse")))
for r in transplanted:
    direction_key = r["first_group"].lower()
    record(f"summary.transplant.{direction_key}.learned", r["criteria"][CRITERIA[0]]["grokked_first"], ",")
    for name, c in r["criteria"].items():
        record(f"summary.transplant.{direction_key}.{criterion_keys[name]}", c["ungrokked"], ",")
        record(f"summary.transplant.{direction_key}.{criterion_keys[name]}_share", c["share"], ".1%")
jacobian_entry = jacobian_facts
record("summary.jacobian.segment", jacobian_entry["segment"], ",")
record("summary.jacobian.before_top", jacobian_entry["before"]["top_singular_value"], ".3g")
record("summary.jacobian.before_near_one", jacobian_entry["before"]["share_near_one"], ".0%")
record("summary.jacobian.after_top", jacobian_entry["after"]["top_singular_value"], ".3g")
record("summary.jacobian.after_near_one", jacobian_entry["after"]["share_near_one"], ".0%")
record("summary.jacobian.float32_end", jacobian_entry["float32_relative_difference_end"], ".2g")
record("summary.readable_from", readable, ",")

# %% [markdown]
# - Perturbation (the table above, per noise shape): of the perturbed grokkers, those decided (no
#   noise up to 2^{{summary.decision_log2_scale}} changed their outcome from then on) before their
#   choice showed in test accuracy, and the median number of epochs by which the decision came
#   first. The study saw decisions well before the choice is apparent {cite:p}`wu2025ambiguous`.
# - Argmax flips by the authors' definition (the model with the bias, as the study's) and by the
#   book's (pairs outside the training set): the second table above, per outcome. Seeds that
#   grokked a group flip {{summary.flips_ordered}}.
# - Transplant, the authors' protocol: S4 first ({{summary.transplant.s4.learned}} seeds learned
#   it): below 0.999 {{summary.transplant.s4.below_0999}} ({{summary.transplant.s4.below_0999_share}}),
#   below 0.95 {{summary.transplant.s4.below_095}} ({{summary.transplant.s4.below_095_share}}),
#   peak minus final > 0.1 {{summary.transplant.s4.peak_minus_final}}
#   ({{summary.transplant.s4.peak_minus_final_share}}), collapse to the intersection
#   {{summary.transplant.s4.collapse}} ({{summary.transplant.s4.collapse_share}}); A4xZ2 first
#   ({{summary.transplant.a4xz2.learned}} seeds learned it): below 0.999
#   {{summary.transplant.a4xz2.below_0999}} ({{summary.transplant.a4xz2.below_0999_share}}), below
#   0.95 {{summary.transplant.a4xz2.below_095}} ({{summary.transplant.a4xz2.below_095_share}}), peak
#   minus final > 0.1 {{summary.transplant.a4xz2.peak_minus_final}}
#   ({{summary.transplant.a4xz2.peak_minus_final_share}}), collapse to the intersection
#   {{summary.transplant.a4xz2.collapse}} ({{summary.transplant.a4xz2.collapse_share}}). Under the
#   authors' coded criterion the published shares {{transplant.authors_match}}: {{transplant.verdict}}.
# - Training Jacobian ($P$ = {{jacobian.n_parameters}}, {{jacobian.steps}} steps, segments of
#   {{summary.jacobian.segment}}; the authors: $P$ = {{jacobian.published_n_parameters}},
#   {{jacobian.published_steps}} steps): the model {{jacobian.groks}} within the run; at step
#   {{jacobian.before_step}} the largest singular value is {{summary.jacobian.before_top}} and
#   {{summary.jacobian.before_near_one}} lie within 0.1 of 1; at step {{jacobian.after_step}},
#   {{summary.jacobian.after_top}} and {{summary.jacobian.after_near_one}}; float32 ends
#   {{summary.jacobian.float32_end}} (relative) from float64.
# - Early prediction: from the logged metrics, grokking either group is told from neither with
#   held-out AUC at or above 0.9 from epoch {{summary.readable_from}} on (-1: never).
# - Training Jacobian at the authors' scale ($P$ = {{sketch.n_parameters}}, {{sketch.steps}}
#   steps): no bulk: {{sketch.no_bulk}}; blow-up late: {{sketch.blow_up}}
#   ({{sketch.seeds_blown}} of {{sketch.grokking_seeds}} grokking seeds grow at least
#   {{sketch.blow_up_factor}} times); at further values of Adam's eps: {{sketch.blow_up_eps}}.

# %% [markdown]
# ## Numbers and checks

# %% tags=["remove-output"]
results = {
    "seed": config.seed, "smoke": config.smoke, "sweep_source": sweep.source, "n_seeds_in_sweep": result.n_instances,
    "sweep_model": "S4, d = h = 32, no unembedding bias (chapter 4's 04_sweep_s4_no_bias.pt)",
    "outcome_counts": counts,
    "perturbation": {shape: {"checkpoints": p.checkpoints.tolist(), "log2_scales": p.log2_scales.tolist(),
                             "copies": p.copies, "change_probability": p.probability.tolist(),
                             "accuracy_shift": p.accuracy_shift.tolist(),
                             "decision_epochs": p.decision_epochs(config.decision_log2_scale).tolist()}
                     for shape, p in studies.items()},
    "decision_log2_scale": config.decision_log2_scale, "figure_noise_shape": config.figure_noise_shape,
    "decision_epochs": decisions,
    "total_variation": {"epochs": tv.epochs.tolist(), "same_outcome_as_sweep": tv.same_outcome,
                        "authors_epochs": [int(tv.authors_epochs[0]), int(tv.authors_epochs[-1])],
                        "authors_every": int(tv.authors_epochs[1] - tv.authors_epochs[0]),
                        "authors_intervals": len(tv.authors_epochs) - 1, "by_outcome": tv_rows},
    # The same flips on chapter 4's sweep with the bias, the study's model (like for like).
    "total_variation_with_bias": {"sweep": "S4, d = h = 32, with the unembedding bias (04_sweep_s4.pt)",
                                  "by_outcome": tv_bias_rows},
    "transplant": transplanted,
    "transplant_protocol": {"train_fraction": config.transplant_train_fraction,
                            "first_epochs": config.transplant_first_epochs,
                            "second_epochs": config.transplant_second_epochs, "model": "S4, d = h = 32, bias",
                            "weight_decay": 2e-5, "criteria": list(CRITERIA)},
    "jacobian": {**jacobian_facts, "spectra": jacobian_rows(jacobian)},
    # the study's two claims as booleans with their evidence under "claims"; book/reproduced words them
    "jacobian_sketch": sketch_facts,
    "early_prediction": {"epochs": prediction.epochs.tolist(), "auc_either": prediction.auc_either.tolist(),
                         "auc_group": prediction.auc_group.tolist(), "folds": list(prediction.folds)},
    "seconds": seconds,
}
results["recorded"] = record.results()
check_results(results)
path = write_results(config.results_dir, "06_determination", results)
print(f"results written to {path.name}")
