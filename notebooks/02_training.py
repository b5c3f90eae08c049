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
# - the training loss, and the same loss split by the true path length. The split shows
#   **phase transitions**: the loss of one length sits on a plateau and then drops within a few
#   dozen steps, and different lengths drop at different times, the shortest first. A library
#   function finds the step of each drop, so the order of learning is a number, not an
#   impression;
# - how the model's predictions sharpen, as a predicted-versus-true histogram with a slider over
#   training steps.
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
transition_threshold = 0.1  # a length counts as learned once its loss stays below this
transition_smoothing = 3  # logging windows in the running median applied before detection
cpu_threads = 1  # torch threads on the CPU (one is fastest for this small model on 2 cores)

# %% tags=["remove-output"]
import math

import torch
from IPython.display import Markdown, display

from lib.book.params import apply_cpu_threads, validate_parameters
from lib.book.plotting import configure_notebook_rendering
from lib.book.reproducibility import seed_everything
from lib.book.results import write_results
from lib.chapters.ch2 import (
    PUBLISHED, Chapter2Parameters, format_example, learning_order, summarize_run,
    transition_sentence,
)
from lib.chapters.ch2_figures import (
    checkpoint_panel, confusion_figure, confusion_slider_figure, label_histogram_figure,
    learning_rate_figure, loss_by_length_figure, total_loss_figure,
)
from lib.paths.model import PathTransformer, PathTransformerConfig, count_parameters
from lib.paths.phase_transitions import order_of_learning
from lib.paths.sampler import describe_filter, sample_batch
from lib.paths.training import save_training_run, start_training, train

config = validate_parameters(Chapter2Parameters, globals())
training = config.training
sampler = training.sampler
seed_everything(config.seed)
apply_cpu_threads(config.cpu_threads, config.training.device)
configure_notebook_rendering()
print(f"device: {training.device}; graphs of {training.n_min}..{training.n_max} vertices; "
      f"{training.n_layers} layers; batch {training.batch_size}; schedule {training.lr_schedule}; "
      f"smoke run: {config.smoke}")

# %% [markdown]
# ```{note}
# **Published scale.** The defaults are a reduced run for a CPU. The post's run
# {cite:p}`wang2024shortest` used graphs of up to 15 vertices, 11 layers, batches of $2^{15}$ fresh graphs,
# 6,400 steps at learning rate 5e-4 and then 3,200 at 1e-4 (the post's "epochs" were such steps
# on fresh data, 3.14e8 examples in all), and reports a final loss of 0.001623 after about three
# hours on one GPU. To rerun it that way:
# `papermill 02_training.ipynb out.ipynb -p n_max 15 -p n_layers 11 -p batch_size 32768
# -p learning_rates "[5e-4, 1e-4]" -p phase_steps "[6400, 3200]" -p snapshot_every 400
# -p eval_size 32768 -p device cuda`.
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
print("filter:", describe_filter(sampler))
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
# ## Training
#
# Every step draws a fresh batch, so the model never sees a graph twice and there is no
# overfitting to speak of: the training loss is also the test loss. The loop logs the loss of
# every true path length over windows of `log_every` steps, and every `snapshot_every` steps it
# stores the predictions on a fixed evaluation batch for the histograms below.

# %%
run = start_training(training)
train(run)
checkpoint_path = f"{config.results_dir}/02_training_checkpoint.pt"
save_training_run(run, checkpoint_path)
summary = summarize_run(run, config.transition_threshold, config.transition_smoothing)
print(f"{run.step} steps, {run.step * training.batch_size:,} examples in {run.seconds:.0f} s "
      f"({summary['examples_per_second']:,.0f} examples/s, "
      f"{100 * summary['sampling_share']:.0f}% of the time drawing graphs)")
print(f"final loss on the evaluation batch: {summary['final_loss']:.4f}; "
      f"always predicting the mean label: {summary['constant_prediction_loss']:.3f}")
print(f"checkpoint written to {checkpoint_path}")

# %%
total_loss_figure(run.log, published_final_loss=PUBLISHED["final_loss"]).show()

# %% [markdown]
# ## Phase transitions
#
# The same loss, split by the true distance of each example (the step axis is logarithmic, to
# spread out the early steps). Within the first steps the model learns to predict roughly the
# mean label for every graph, so every length has a loss near its squared distance from the
# mean. Then the lengths drop off one after another. The diamonds mark the detected
# transition of each length: the first logged step from which its loss, smoothed by a running
# median over `transition_smoothing` windows, stays below the threshold until the end, over at
# least the last ten windows (`lib.paths.phase_transitions.transition_steps`). "Stays below" matters: a length close to the mean
# label has a small loss early on, while the model predicts the mean for everything, and that
# dip is not learning.

# %%
transitions = summary["transition_step_by_length"]
order = learning_order(summary, sampler.unreachable_label)
# Only lengths with at least 2% of the evaluation examples: rarer ones are too noisy to read.
loss_by_length_figure(run.log, transitions, threshold=config.transition_threshold,
                      unreachable_label=sampler.unreachable_label, lengths=list(order.common_lengths)).show()
groups = order_of_learning(transitions)
display(Markdown(
    f"**Order of learning in this run:** "
    f"{transition_sentence(transitions, sampler.unreachable_label)}. "
    f"That is {len(groups)} distinct transition steps. In the published run the loss first sat "
    f"on a plateau, length 1 was learned first (around step 50, which the authors attribute to "
    f"checking whether the edge (1, 2) is present), and lengths 2 and 3 followed together "
    f"around step 80 [@wang2024shortest]."))

# %% [markdown]
# ## Predicted against true distance
#
# Each row of the histogram is one true distance; the colours show how the model's rounded
# predictions on the fixed evaluation batch are spread. A perfect model fills the diagonal.
# The slider moves through the stored checkpoints: early on every row collapses onto the same
# few predictions near the mean, and the rows peel off onto the diagonal in the order of the
# transitions above.

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
results = {**summary, "checkpoint": "02_training_checkpoint.pt", "smoke": config.smoke,
           "config": training.to_dict(), "published": PUBLISHED}
path = write_results(config.results_dir, "02_training", results)
print(f"wrote {path}")

# %%
# NBVAL_CHECK_OUTPUT
print(f"final loss {summary['final_loss']:.6f}; mean-label baseline {summary['constant_prediction_loss']:.6f}")
for length, loss in summary["loss_by_length"].items():
    name = "unreachable" if length == sampler.unreachable_label else f"length {length}"
    print(f"{name:>12}: loss {loss:8.4f} on {summary['count_by_length'][length]:5d} examples, "
          f"transition step {transitions.get(length)}")

# %%
# The model must beat the no-information baseline by a wide margin (the smoke run, a few
# dozen steps, only has to beat it).
margin = 1 if config.smoke else 10
assert summary["final_loss"] * margin < summary["constant_prediction_loss"], summary["final_loss"]
if not config.smoke:
    learned = [length for length, step in transitions.items() if step is not None]
    assert 1 in learned, "length 1 should be learned"
    assert len(groups) >= 2, f"expected at least two distinct transitions, got {groups}"
    assert transitions[1] == min(step for step in transitions.values() if step is not None), \
        "length 1 should be learned first"

# %% [markdown]
# ## Summary

# %%
final = summary["final_loss"]
order_text = ("in order of length, the shortest first" if order.in_length_order
              else "not strictly in order of length")
display(Markdown(f"""
- A {training.n_layers}-layer transformer trained on {run.step * training.batch_size:,} fresh
  graphs of up to {training.n_max} vertices reaches a mean squared error of {final:.4f} on
  held-out graphs, against {summary['constant_prediction_loss']:.3f} for always predicting the
  mean: it computes distances rather than guessing. The published model, larger and trained
  on about {3.14e8 / (run.step * training.batch_size):,.0f} times more examples, reached
  {PUBLISHED['final_loss']} [@wang2024shortest].
- Learning happens in steps. Each path length has its own transition, here
  {order_text}: {transition_sentence(transitions, sampler.unreachable_label)}. The published
  run also learned length 1 first, then lengths 2 and 3 close together.
- At the end the largest remaining loss is on {order.hardest_name}
  ({order.hardest_loss:.3f}, on {order.hardest_count} of
  {training.eval_size} evaluation examples). Long paths are rare even after the filter, so the
  model has seen few of them.
"""))

# %% [markdown]
# Open questions:
#
# - What does the model compute at each transition? Length 1 can be solved by looking for the
#   pair (1, 2) among the edges; it is not known which circuit appears when lengths 2 and 3 are
#   learned, or whether it resembles the layer-by-layer search of the hand-built transformer of
#   chapter 1.
# - How do the transition steps scale with the batch size, the depth and the balance of the
#   filter? The published run and the reduced one here differ in all three.
# - Chapter 3 fine-tunes this checkpoint on other targets and asks which of those skills carry
#   over to graphs and targets it never saw.
