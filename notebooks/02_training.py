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
# # Training a transformer on shortest paths
#
# Chapter 1 built a transformer that computes shortest paths by hand. Here a transformer has to
# find such weights itself. We reproduce the training study of the shortest-paths post
# {cite:p}`wang2024shortest`: random graphs written as sequences of edge tokens, a label that is the
# distance from vertex 1 to vertex 2, a standard encoder trained on fresh graphs at every step.
#
# What you will see:
#
# - the data: how a graph becomes tokens, and how a rejection filter balances path lengths;
# - the model, with the published parameter count recomputed;
# - the main training run, on graphs of up to `n_max` vertices: the model that chapters 3 and 7
#   build on (its checkpoint goes to `results_dir`);
# - the **phase transitions** the study reports, where the loss of one path length sits on a
#   plateau and then drops within a few dozen steps, measured where the study measured them: in
#   a second, short study on graphs of up to `study_n_max` vertices (15, the study's size), with
#   several models trained from different seeds and every length scored on one fixed,
#   length-balanced evaluation set every few steps. A library function dates each drop, so the
#   order of learning is a number, checked across the seeds, not an impression;
# - each drop against its rival: the loss of a length also falls when one constant prediction
#   for every graph not yet learned moves towards that length, so a drop counts as a transition
#   only when the length's loss ends well below what such a constant would give it, and only
#   transitions found at every setting of the detector over a stated range are reported;
# - how the main model's predictions sharpen, as a predicted-versus-true histogram with a slider
#   over training steps.
#
# The defaults train a smaller model on smaller graphs so that the chapter runs on a laptop CPU
# in a few minutes; a cell below lists the parameters of the published run for a GPU.

# %% tags=["parameters"]
smoke = False  # tiny run for tests (well under a minute)
seed = 0  # seeds every random draw of the chapter
device = "auto"  # "auto" (CUDA when present), "cpu", "cuda" or "cuda:K"
results_dir = "../results"  # results JSON and saved models go here; later chapters read them here
n_min = 3  # fewest vertices in a graph
n_max = 8  # most vertices in a graph, also the number of edge slots (published: 15)
n_layers = 4  # encoder layers (published: 11)
batch_size = 256  # fresh graphs per step (published: 2**15)
learning_rates = [1e-3, 2e-4]  # learning rate of each phase (published: [5e-4, 1e-4])
phase_steps = [2000, 500]  # steps of each phase (published: [6400, 3200])
log_every = 10  # steps per logging window of the loss by path length
snapshot_every = 100  # steps between predictions on the fixed evaluation batch
eval_size = 2048  # size of the fixed evaluation batch
study_n_max = 15  # most vertices in the graphs of the transition study (the study's size: 15)
study_seeds = 10  # models in the transition study, seeded seed, seed + 1, ...
study_workers = 1  # worker processes that train the transition study's models on a CPU while the main run trains; this process joins them after it (one worker: one busy process per core)
study_steps = 300  # training steps of each model of the transition study (the study plotted 300)
study_batch_size = 256  # fresh graphs per step in the transition study
study_width_buckets = 4  # on a CPU, chunks of graphs of similar width each training batch of the transition study runs in, each on its widest graph's edge slots (0: every graph on all slots; see lib.paths.width_buckets)
study_learning_rate = 5e-4  # learning rate of the transition study (published: 5e-4)
study_eval_every = 5  # steps between scorings of the transition study's models
study_eval_per_length = 128  # evaluation graphs of each path length in the transition study
drop_smoothing = 5  # points in the running median of each log-loss curve before drops are dated
drop_min_decades = 0.5  # smallest fall (decades of loss) that counts as a drop
drop_max_width = 60  # most steps a drop may take (from 10% to 90% of its fall)
cpu_threads = 1  # torch threads of the main run on the CPU (one: the study's workers train beside it)
state_every_s = 0.0  # seconds between saves of the main run's whole state to results_dir/02_training_state.pt, from which a stopped run continues (tools/published.py); 0: no state, the weights are scored after the run

# %% tags=["remove-output", "hide-input"]
import math

import torch
from IPython.display import Markdown, display

from lib.book.params import apply_cpu_threads, validate_parameters
from lib.book.plotting import configure_notebook_rendering
from lib.book.record import Record, verdict
from lib.book.reproducibility import seed_everything
from lib.book.results import write_results
from lib.chapters.ch2 import PUBLISHED, Chapter2Parameters
from lib.paths.main_run_summary import learning_order, summarize_run
from lib.paths.token_graphs import format_example
from lib.book.confusion import confusion_figure, label_histogram_figure
from lib.chapters.ch2_figures import (
    checkpoint_panel, confusion_slider_figure, evaluation_loss_figure, learning_rate_figure,
    mean_prediction_figure, total_loss_figure, transition_study_figure,
)
from lib.chapters.ch2_results import (
    check_results, drop_table, group_names, length_name, length_verdict_table, main_run_table, rival_table,
    sensitivity_table,
)
from lib.paths.phase_transitions import drop_order
from lib.paths.transition_drops import chance_of_order, mean_label_loss, study_drops, study_results
from lib.paths.transition_verdicts import (
    MIN_SHARE, analyse_main, analyse_study, analyses_results, chapter_findings, common_lengths, held_only,
    held_steps, length_counts, main_curves, main_lengths, main_sensitivity, one_length_at_a_time, study_counts,
    study_curves, study_sensitivity,
)
from lib.paths.constant_rival import shares_of
from lib.paths.evaluation_curves import start_scoring, train_keeping_weights
from lib.paths.model import PathTransformer, PathTransformerConfig, count_parameters
from lib.paths.sampler import sample_batch
from lib.paths.resumable_run import train_resumably
from lib.paths.training import save_training_run, start_training
from lib.paths.transition_study import balanced_evaluation_set, start_transition_study

config = validate_parameters(Chapter2Parameters, globals())
training = config.training
sampler = training.sampler
seed_everything(config.seed)
apply_cpu_threads(config.cpu_threads, config.training.device)
configure_notebook_rendering()
record = Record()  # the numbers the prose cites as {{key}}; they also go to the results JSON
print(f"device: {training.device}; main run: graphs of {training.n_min}..{training.n_max} vertices, "
      f"{training.n_layers} layers, batch {training.batch_size}, schedule {training.lr_schedule}; "
      f"transition study: graphs of up to {config.study_n_max} vertices, {config.study_seeds} seeds x "
      f"{config.study_steps} steps; smoke run: {config.smoke}")

# %% [markdown]
# ```{note}
# **Published scale.** The defaults are a reduced run for a CPU. The post's run
# {cite:p}`wang2024shortest` used graphs of up to 15 vertices, 11 layers, batches of $2^{15}$ fresh graphs,
# 6,400 steps at learning rate 5e-4 and then 3,200 at 1e-4 (the post's "epochs" were such steps
# on fresh data, 3.14e8 examples in all), and reports a final loss of 0.001623 after about three
# hours on one GPU. To rerun it that way: `papermill 02_training.ipynb out.ipynb -f published/02.yaml`
# (the parameters in `notebooks/published/02.yaml`; `make published` runs it on a GPU, its first
# 300 steps first, then the whole run in as many GPU loans as it takes: with `-p state_every_s 120`
# the main run saves its whole state every two minutes and a stopped run continues from it). The
# transition study can take the published model and
# batch the same way (`-p study_batch_size 32768`; its depth is `n_layers`).
# ```

# %% [markdown]
# ## The data
#
# A graph on n vertices (n uniform between `n_min` and `n_max`) is drawn as in the post: 2n
# endpoints uniform on 1..n are paired into n edges, self-loops are dropped and duplicate edges
# kept. The model reads one token pair per edge, (a, b) with a < b, then padding pairs (0, 0)
# up to `n_max` slots, and last the query pair (t, TARGET), where TARGET is a token that is
# never a vertex. The label is the breadth-first-search distance from vertex 1 to t; when t
# cannot be reached, the label is `n_max` (15 in the published run), a stand-in for infinity.
#
# In pre-training the target is always vertex 2. Most random graphs have a short path from 1 to
# 2 or none at all, so a rejection filter thins out the common cases: in the published run,
# paths of length at least 6 are always kept, a shorter length d with probability
# 1/(2(6 - d)), and unreachable targets with probability 1/15. As in the authors' code, each
# example's size n is drawn once and only its graph is redrawn until the filter keeps it, so
# sizes stay uniform among the kept examples (redrawing n as well would favour large graphs,
# whose paths are longer). For smaller graphs the threshold
# 6 scales with `n_max` (see `lib.paths.sampler.default_length_threshold`). Graphs, labels and the
# filter are computed for a whole batch at once with tensor operations
# (`lib.paths.sampler.sample_batch`; `benchmarks/bench_graph_sampler.py` compares it with a
# per-graph Python generator, in one process and with `lib.paths.stream` running the sampler in
# one DataLoader worker process per core).

# %%
tokens, labels = sample_batch(20_000, "pretrain", config.n_min, config.n_max, torch.Generator().manual_seed(config.seed))
print(f"sampler: task {sampler.task}; graphs of {sampler.n_min} to {sampler.n_max} vertices; target ids up to "
      f"{sampler.target_max}; small-graph filter {'on' if sampler.small_graph_filter else 'off'}; length threshold "
      f"{sampler.length_threshold}; vertex ids up to {sampler.max_vertex_id}, "
      f"{'relabelled' if sampler.relabel_vertices else 'not relabelled'}; unreachable targets labelled "
      f"{sampler.unreachable_label}")
print(format_example(tokens[0], labels[0]))
print(format_example(tokens[1], labels[1]))
label_histogram_figure(labels, sampler.unreachable_label).show()

# %% [markdown]
# ## The model
#
# A standard post-LN encoder: width 64, 2 attention heads, feed-forward width 256, ReLU, no
# dropout, and no positional encodings, since the order of the edges carries no information.
# One shared vertex embedding of width 32 embeds both ends of a pair and the two halves are
# concatenated; padding pairs are masked out of attention; a linear head reads the distance off
# the query pair. The loss is the mean squared error, and the optimizer Adam. The parameter
# count of the published 11-layer model is recomputed here from the same code:

# %%
# NBVAL_CHECK_OUTPUT
published_model = PathTransformer(PathTransformerConfig(n_layers=11, max_vertex_id=15))
six_layers = PathTransformer(PathTransformerConfig(n_layers=6, max_vertex_id=15))
this_model = PathTransformer(training.model_config)
print(f"published shape (11 layers, ids up to 15): {count_parameters(published_model):,} parameters "
      f"(the post reports {PUBLISHED['n_parameters']:,})")
print(f"6 layers: {count_parameters(six_layers):,} parameters")
print(f"this run ({training.n_layers} layers, ids up to {training.model_config.max_vertex_id}): "
      f"{count_parameters(this_model):,} parameters")
assert count_parameters(published_model) == PUBLISHED["n_parameters"]

# %% [markdown]
# Could a model of this size simply memorize the task? The post argues that it cannot
# {cite:p}`wang2024shortest`: a graph on 15 vertices is 15 edges, each one of the $\binom{15}{2}$ vertex
# pairs, so there are roughly $\binom{15}{2}^{15} / 15!$ graphs once the order of the edges is ignored
# (roughly, because edges may repeat), and each answer needs about 4 bits. The cell below
# redoes the arithmetic from the parameter count above.[^bits]
#
# [^bits]: The post gives the size of the model as about $1.76 \times 10^6$ bits. Its 550,433 float32
#     parameters are $550{,}433 \times 32$, about $1.76 \times 10^7$ bits, so the answers outweigh the model by
#     a factor ten times smaller than the post's; the conclusion is unchanged.

# %%
# NBVAL_CHECK_OUTPUT
model_bits = 32 * count_parameters(published_model)
graphs_on_15_vertices = math.comb(15, 2) ** 15 / math.factorial(15)
answer_bits = 4 * graphs_on_15_vertices
print(f"published model: {model_bits:,} bits ({model_bits:.3g}); graphs on 15 vertices: about "
      f"{graphs_on_15_vertices:.3g}; their answers: {answer_bits:.3g} bits, "
      f"{answer_bits / model_bits:.3g} times the model")

# %% [markdown]
# ## Optimization
#
# Adam on the mean squared error, with a learning rate that is constant within each phase of
# the schedule (here and in the post: a higher rate, then a lower one to settle). Training runs
# in float32. The authors first trained in bfloat16 to save memory and found that with their
# huge batches training barely progressed, from loss of precision; switching to float32 fixed it,
# after two weeks of debugging {cite:p}`wang2024shortest`. Why precision would matter here is our guess,
# not something this book tested: bfloat16 keeps only 8 bits of mantissa (about 3 significant
# digits), so a mean over $2^{15}$ squared errors, and the small updates it produces late in
# training, could be mostly rounded away.

# %%
learning_rate_figure(training.lr_schedule).show()

# %% [markdown]
# ## Training: the main run
#
# This run, on graphs of `n_min` to `n_max` vertices, trains the model that chapters 3 and 7
# build on; its checkpoint goes to `results_dir`. Every step draws a fresh batch, so the model
# never sees a graph twice and there is no overfitting to speak of: the training loss is also
# the test loss. The loop logs the loss of every true path length over windows of `log_every`
# steps, and every `snapshot_every` steps it stores the predictions on a fixed evaluation batch
# for the histograms below. Every `log_every` steps it also keeps a copy of its weights, and each
# copy is scored on that batch, one loss and one mean prediction per true distance
# (`lib.paths.evaluation_curves`: the training is plain training, and the scoring waits until it
# is done). On a CPU, the models of the next section's transition study meanwhile train in
# `study_workers` background processes of one thread each. Once the main run is done, one more
# such process scores its copies while this process trains the study's models that no worker has
# started: at the defaults two busy processes on two cores, three for the 20 s or so of scoring.
# Like the main run, which trains here on `cpu_threads` threads, each model and each scoring gets
# the numbers it would get alone on one thread (on a GPU they all run here, after the main run).
# A run that may be stopped before its end (`state_every_s` above 0: the published scale, run in
# short GPU loans by `tools/published.py`) scores each copy as soon as it is made instead, and
# saves its whole state every `state_every_s` seconds; the next run continues from it, with the
# batches, updates and scores of a run that never stopped (`lib.paths.resumable_run`).

# %%
evaluation = balanced_evaluation_set(config.study.sampler, config.study_eval_per_length,
                                     torch.Generator().manual_seed(config.seed + 10_000))
study = start_transition_study(config.study, config.study_seed_list, evaluation, config.study_eval_every,
                               workers=config.study_workers, this_process_helps=True)

# %%
if config.state_every_s > 0:
    run, eval_curves = train_resumably(training, training.log_every, config.state_path,
                                       save_every_s=config.state_every_s)
    curves = study.curves()
else:
    run = start_training(training)
    kept_weights = train_keeping_weights(run, training.log_every)
    scoring = start_scoring(run, kept_weights)  # in one more worker on a CPU, while ...
    curves = study.curves()  # ... this process trains the study's models no worker has started
    eval_curves = scoring.curves()
    del kept_weights, scoring  # the copies: about 200 MB at the defaults, 2 GB at the published scale
checkpoint_path = f"{config.results_dir}/02_training_checkpoint.pt"
save_training_run(run, checkpoint_path)
summary = summarize_run(run, config.drop_settings, eval_curves)
print(f"{run.step} steps, {run.step * training.batch_size:,} examples in {run.seconds:.0f} s "
      f"({summary['examples_per_second']:,.0f} examples/s, "
      f"{100 * summary['sampling_share']:.0f}% of the time drawing graphs"
      + ("; the transition study's workers trained beside it, on the same cores)" if study.in_background else ")"))
print(f"final loss on the evaluation batch: {summary['final_loss']:.4f}; "
      f"always predicting the mean label: {summary['constant_prediction_loss']:.3f}")
print(f"checkpoint written to {checkpoint_path.rsplit('/', 1)[-1]}")
examples = run.step * training.batch_size
record("main.layers", training.n_layers, ",")
record("main.examples", examples, ",")
record("main.final_loss", summary["final_loss"], ".4f")
record("main.baseline", summary["constant_prediction_loss"], ".3f")
record("published.examples_ratio", 3.14e8 / examples, ",.0f")
record("published.final_loss", PUBLISHED["final_loss"], "g")

# %%
total_loss_figure(run.log, published_final_loss=PUBLISHED["final_loss"]).show()

# %% [markdown]
# ## Phase transitions, at the study's graph size
#
# The authors recorded the loss of each label on every training batch of $2^{15}$ fresh graphs
# of up to 15 vertices and plotted log MSE against a linear step axis over the first 300 steps:
# the loss of length 1 sat near 16 until about step 40 and fell by more than two decades by step
# 70; lengths 2 and 3 followed from about step 80 {cite:p}`wang2024shortest`. A CPU batch holds few
# examples of each length, so here each of `study_seeds` models (chapter 2's recipe with
# `n_layers` layers, `study_batch_size` graphs per step at learning rate `study_learning_rate`,
# graphs of up to `study_n_max` vertices) is scored every `study_eval_every` steps on one fixed
# evaluation set with `study_eval_per_length` graphs of every path length (lengths too rare to
# fill it are left out), drawn from the same distribution. On a CPU each training batch of the
# study runs in `study_width_buckets` chunks of graphs of similar width, each on the edge slots its
# widest graph uses (`lib.paths.width_buckets`): the same function as on all slots, since padding
# is masked (`tests/test_paths_width_buckets.py` checks predictions and gradients), rounded
# differently. It is there to save time on a CPU; `benchmarks/bench_chapter_1_2_steps.py` times
# it against a step on all slots.
#
# A drop is dated by `lib.paths.phase_transitions.detect_drop`: the log-loss, smoothed by a
# running median over `drop_smoothing` points, is taken at its steepest descent; the drop counts
# when the loss falls by at least `drop_min_decades` decades, from 10% to 90% of the fall within
# `drop_max_width` steps, from a flat plateau (20 steps within 0.2 decades of its level) and stays
# down (for 30 steps, by at least `drop_min_decades` and half the fall). A slow ramp, a flat line,
# a spike on a plateau, the recovery from a noise blip, a dip that comes back, the V that a
# moving prediction draws as it passes a length's value, and the fall of the first steps (while
# the model learns the mean label) are not drops; `tests/test_paths_phase_transitions.py` checks
# each on synthetic curves.
#
# A drop is not yet a transition of its length. While a model predicts one constant c for all
# the graphs it has not learned, the loss of every such length d is (c - d)²: when c moves (as it
# does when length 1 is learned and leaves the others), lengths near c "drop" together without
# being learned. So beside each length's loss the study logs the model's mean prediction on that
# length, and `lib.paths.constant_rival` counts a drop as a transition only when, over the 30
# steps after it, the length's loss lies at least `drop_min_decades` decades below both the loss
# (c_U - d)² of the best single constant for the graphs not yet learned (their mean label under
# the training distribution) and the loss (c - d)² of the model's own mean prediction c on the
# other not-yet-learned lengths. Last, `lib.paths.drop_sensitivity` reruns detector and rival at
# every value of each setting over a range (the others at their defaults): a transition *holds*
# when every row of that table finds it within its fall. The order of learning is read off the
# transitions that hold, over every length with at least 2% of the training graphs.

# %%
study_unreachable = config.study.sampler.unreachable_label
study_labels = sample_batch(20_000, "pretrain", config.n_min, config.study_n_max,
                            torch.Generator().manual_seed(config.seed + 10_001))[1]
study_shares = shares_of(study_labels)
mean_loss = mean_label_loss(study_labels, curves.lengths)
drops = study_drops(curves, config.drop_settings)
analyses = analyse_study(curves, study_shares, config.drop_settings)
study_sens = study_sensitivity(curves, study_shares, config.drop_settings)
common = common_lengths(curves.lengths, study_shares)
order = drop_order(held_steps(study_sens, len(curves.seeds), common))
print(f"{len(curves.seeds)} models x {curves.steps[-1]} steps in {sum(curves.seconds):.0f} s of training"
      f"{' (in the background beside the main run, then here too)' if study.in_background else ''}; "
      f"evaluation set: {evaluation.per_length} graphs of each of the labels {list(curves.lengths)}")
transition_study_figure(curves, held_only(analyses, study_sens), unreachable_label=study_unreachable,
                        marked=("transitions that hold", "no transition holds"),
                        lengths=[k for k in curves.lengths if k <= 4 or k == study_unreachable]).show()

# %% [markdown]
# The figure shows lengths 1 to 4 and unreachable targets (the study plotted 1, 2, 3 and
# unreachable, all in one panel), a panel each, every seed a line; its diamonds are the
# transitions that hold. The mean predictions of the first seed show what the rival is about:
# while a model has learned nothing, its lines lie on top of each other, one constant for every
# length (lengths 1 to 4 and unreachable targets in colour, the lengths between them in grey).

# %%
mean_prediction_figure(curves.steps, study_curves(curves, 0)[1], unreachable_label=study_unreachable,
                       title=f"Mean prediction by true path length, seed {curves.seeds[0]}").show()

# %% [markdown]
# The detector's drops at its defaults, every seed and every length (the plateau of a length is
# compared with (length - mean label)², the loss of predicting the training distribution's mean
# label for every graph):

# %%
display(Markdown(drop_table(curves, drops, study_unreachable, mean_loss)))

# %% [markdown]
# Each drop against the constant rival and across the detector's settings (medians over the
# seeds with a drop; c_U is the best constant for the graphs not yet learned, c the model's own
# mean prediction on the other not-yet-learned lengths), then the sensitivity table (drops and
# transitions over all seeds and lengths at each value):

# %%
display(Markdown(rival_table(analyses, study_sens, curves.lengths, study_shares, study_unreachable)))
display(Markdown(sensitivity_table(study_sens)))
counts = study_counts(analyses, study_sens, common)
record("study.n_max", curves.config.n_max, ",")
record("study.layers", curves.config.n_layers, ",")
record("study.steps", curves.steps[-1], ",")
record("study.length_1_held", len(counts.length_1_held_steps), ",")
record("study.length_1_held_steps", ", ".join(str(s) for s in counts.length_1_held_steps) or "none")
# Every seed's length-1 drop at the detector's defaults, held or not: the held steps alone are cut by
# which drops hold (the earliest did not).
record("study.length_1_drop_steps", ", ".join(str(step) for step in sorted(
    d[min(curves.lengths)].step for d in drops if d[min(curves.lengths)].step is not None)) or "none")
record("study.drops_beyond_1", counts.drops_beyond_1, ",")
record("study.transitions_beyond_1", counts.transitions_beyond_1, ",")
record("study.held_beyond_1", counts.held_beyond_1, ",")
record("order.one_at_a_time", verdict(one_length_at_a_time(order), yes="holds", no="does not hold"))
record("study.seeds", counts.seeds, ",")
record("study.labels", counts.lengths, ",")
record("study.min_share", MIN_SHARE, ".0%")
record("study.common_lengths", ", ".join(length_name(k, study_unreachable) for k in common))
record("study.drops", counts.drops, ",")
record("study.transitions", counts.transitions, ",")
record("study.held", counts.held, ",")
record("order.every", ", then ".join("/".join(group) for group in group_names(order, study_unreachable)) or "none")
record("order.sometimes", ", ".join(length_name(k, study_unreachable) for k in order.sometimes) or "none")
record("order.never", ", ".join(length_name(k, study_unreachable) for k in order.never) or "none")
record("order.groups", len(order.groups), ",")
record("order.chance", chance_of_order(order, len(curves.seeds)) if len(order.groups) > 1 else None, ".3g")
display(Markdown(length_verdict_table(length_counts(analyses, study_sens, common), study_unreachable)))

# %% [markdown]
# Over {{study.seeds}} seeds and the {{study.labels}} labels with at least {{study.min_share}} of
# the training graphs ({{study.common_lengths}}; a label is a path length, or "unreachable" for
# unreachable targets), the detector at its defaults finds {{study.drops}} drops; the constant
# rival is ruled out for {{study.transitions}} of them, and {{study.held}} of those transitions
# hold at every row of the sensitivity table. Labels with a transition that holds in every one of
# the {{study.seeds}} seeds, in the order of their transitions (labels joined by a slash changed
# their order between seeds): {{order.every}}; in some seeds only: {{order.sometimes}}; in none:
# {{order.never}}. If the lengths with such transitions had them in a random order, this order
# would hold in all {{study.seeds}} seeds with probability {{order.chance}} (computed only where at
# least two groups of lengths hold in every seed). The last table gives each length's count of
# seeds with a drop, with the constant rival ruled out and with a transition that holds across the
# table, and why not in the first seed that falls short.
#
# In the published run the loss of length 1 sat at about 16 until step 40 and fell to 0.04 by
# step 70, and lengths 2 and 3 fell from about step 80 {cite:p}`wang2024shortest`.

# %% [markdown]
# ## The main run, split by path length
#
# The main run's loss by true distance on its fixed evaluation batch (the step axis is
# logarithmic, to spread out the early steps), on graphs of at most `n_max` vertices, with the
# same detector, the same rival (the best constant under the evaluation batch's label shares)
# and the same sensitivity table.

# %%
main_analysis = analyse_main(eval_curves, config.drop_settings)
main_sens = main_sensitivity(eval_curves, config.drop_settings)
order_main = learning_order(summary, sampler.unreachable_label)
main_common = main_lengths(eval_curves)
record("main.hardest", order_main.hardest_length, "d")
record("main.hardest_kind", verdict(order_main.hardest_unreachable, yes="the label of unreachable targets",
                                    no="a path length"))
record("main.hardest_loss", order_main.hardest_loss, ".3f")
record("main.hardest_count", order_main.hardest_count, ",")
record("main.eval_size", training.eval_size, ",")
record("main.hardest_training_graphs", order_main.hardest_count / training.eval_size * examples, ",.0f")
# Only lengths with at least 2% of the evaluation examples: rarer ones are too noisy to read.
main_losses, main_means = main_curves(eval_curves)
evaluation_loss_figure(eval_curves.steps, {k: main_losses[k] for k in main_common},
                       held_only([main_analysis], main_sens)[0], unreachable_label=sampler.unreachable_label).show()
mean_prediction_figure(eval_curves.steps, {k: main_means[k] for k in main_common},
                       unreachable_label=sampler.unreachable_label, log_steps=True,
                       title="Main run: mean prediction by true path length").show()
main_held = [k for k in main_common if (0, k) in main_sens.holds]
record("main.n_max", training.n_max, ",")
record("main.held", ", ".join(length_name(k, sampler.unreachable_label) for k in main_held) or "none")
display(Markdown(main_run_table(main_analysis, main_sens, main_common, sampler.unreachable_label)))

# %% [markdown]
# In the main run (graphs of up to {{main.n_max}} vertices), among the labels with at least
# {{study.min_share}} of the evaluation examples, those with a transition that holds: {{main.held}}.
# The table gives each label's drop, whether the constant rival is ruled out for it (a
# transition), whether it holds across the table (and the steps it is dated at there), and why not.

# %% [markdown]
# ## Predicted against true distance
#
# Each row of the histogram is one true distance; the colours show how the model's rounded
# predictions on the fixed evaluation batch are spread. A perfect model fills the diagonal.
# The slider moves through the stored checkpoints of the main run.

# %%
n_labels = run.max_label + 1
confusion_figure(run.snapshot_predictions[-1], run.eval_labels, n_labels,
                 title=f"Predicted against true distance after {run.step} steps",
                 unreachable_label=sampler.unreachable_label).show()

# %%
confusion_slider_figure(run.snapshot_steps, run.snapshot_predictions, run.eval_labels, n_labels,
                        unreachable_label=sampler.unreachable_label).show()

# %% [markdown]
# In a live kernel, the slider below redraws the histogram from the stored predictions at any
# checkpoint (press "Run Interact"; the static book shows the plotly slider above instead).

# %%
display(checkpoint_panel(run.snapshot_steps, run.snapshot_predictions, run.eval_labels, n_labels,
                         unreachable_label=sampler.unreachable_label))

# %% [markdown]
# ## Numbers and checks

# %% tags=["remove-output"]
# What training produced is reported, not asserted, because it can change with the CPU: whether
# the model beats the no-information baseline by a factor of 10, and what holds of the
# transitions over the seeds, each with the count it rests on (printed below).
findings = chapter_findings(summary, analyses, study_sens, order, common, study_unreachable, main_sens)
record("main.beats_baseline", verdict(findings["beats_baseline_tenfold"]["holds"],
                                      yes="it computes distances rather than guessing",
                                      no="it does not beat that guess tenfold"))
study_entry = study_results(curves, drops, order, config.drop_settings, mean_loss, evaluation.per_length)
study_entry.update({
    "mean_prediction": curves.mean_prediction.tolist(), "shares": study_shares, "common_lengths": common,
    "rival": analyses_results(analyses, curves.lengths),
    "transition_step": {k: [a.drops[k].step if a.verdicts[k].transition else None for a in analyses]
                        for k in curves.lengths},
    "held_step": {k: [study_sens.holds.get((i, k)) for i in range(len(curves.seeds))] for k in curves.lengths},
    "sensitivity": study_sens.to_dict(),
})
results = {**summary, "checkpoint": "02_training_checkpoint.pt", "smoke": config.smoke,
           "config": training.to_dict(), "published": PUBLISHED, "findings": findings,
           "transition_study": study_entry,
           "main_run": {"evaluation_curves": eval_curves.to_dict(), "common_lengths": main_common,
                        "rival": analyses_results([main_analysis], list(main_analysis.drops)),
                        "held_step": {k: main_sens.holds.get((0, k)) for k in main_analysis.drops},
                        "sensitivity": main_sens.to_dict()}}
results["recorded"] = record.results()
check_results(results)
path = write_results(config.results_dir, "02_training", results)
print(f"wrote {path.name}")

# %%
# NBVAL_CHECK_OUTPUT
print(f"final loss {summary['final_loss']:.6f}; mean-label baseline {summary['constant_prediction_loss']:.6f}")
for length, loss in summary["loss_by_length"].items():
    name = "unreachable" if length == sampler.unreachable_label else f"length {length}"
    drop = summary["drop_by_length"].get(length)
    print(f"{name:>12}: loss {loss:8.4f} on {summary['count_by_length'][length]:5d} examples, "
          f"drop step {drop['step'] if drop else None}")

# %%
# What must hold on any machine is asserted (shapes, one drop record per seed); the findings of
# training are printed.
assert curves.loss.shape == (len(curves.seeds), len(curves.steps), len(curves.lengths))
assert all(len(steps) == len(curves.seeds) for steps in results["transition_study"]["drop_step"].values())
for name, found in findings.items():
    print(f"{name.replace('_', ' ')}: {verdict(found['holds'], yes='holds', no='does not hold')} in this run "
          f"({found['events']} of {found['seeds']})")

# %% [markdown]
# ## Summary
#
# - The main run, a {{main.layers}}-layer transformer trained on {{main.examples}} fresh graphs of
#   up to {{main.n_max}} vertices (the model chapters 3 and 7 build on), reaches a mean squared
#   error of {{main.final_loss}} on held-out graphs, against {{main.baseline}} for always
#   predicting the mean: {{main.beats_baseline}}. The published model, larger and trained on about
#   {{published.examples_ratio}} times more examples, reached {{published.final_loss}}
#   {cite:p}`wang2024shortest`.
# - At the study's graph size (up to {{study.n_max}} vertices, {{study.seeds}} models of
#   {{study.layers}} layers, {{study.steps}} steps each), length 1 has a transition that holds in
#   {{study.length_1_held}} of {{study.seeds}} seeds (steps: {{study.length_1_held_steps}}; every
#   seed's drop at the detector's defaults, held or not: {{study.length_1_drop_steps}}; the
#   published run: about step 50). Labels with a transition that holds in every seed, in order
#   (a slash joins labels whose order changed between seeds): {{order.every}}; in some seeds only:
#   {{order.sometimes}}; in none: {{order.never}}.
# - Beyond length 1, over the {{study.seeds}} seeds and the common lengths, the detector at its
#   defaults finds {{study.drops_beyond_1}} drops, of which the constant rival is ruled out for
#   {{study.transitions_beyond_1}}, of which {{study.held_beyond_1}} hold across the sensitivity
#   table (per length in the tables above). "The loss falls one path length at a time"
#   {{order.one_at_a_time}} over these seeds: it needs at least two lengths with transitions that
#   hold in every seed, each in its own place in every seed, and none that holds in some seeds
#   only; here {{order.groups}} group(s) of lengths hold in every seed.
# - In the main run, on graphs of up to {{main.n_max}} vertices, the labels with a transition that
#   holds: {{main.held}}.
# - At the end of the main run the largest remaining loss is on label {{main.hardest}}
#   ({{main.hardest_kind}}): {{main.hardest_loss}}, on {{main.hardest_count}} of {{main.eval_size}}
#   evaluation examples, which are drawn like the training graphs; at that share about
#   {{main.hardest_training_graphs}} of the {{main.examples}} training graphs had that label.

# %% [markdown]
# Open questions:
#
# - What does the model compute at each transition? Length 1 can be solved by looking for the
#   pair (1, 2) among the edges; it is not known which circuit appears when lengths 2 and 3 are
#   learned, or whether it resembles the layer-by-layer search of the hand-built transformer of
#   chapter 1.
# - How do the drop steps scale with the batch size, the depth and the balance of the filter?
#   The published run and the study here differ in the first two.
# - Chapter 3 fine-tunes this checkpoint on other targets and asks which of those skills carry
#   over to graphs and targets it never saw.
