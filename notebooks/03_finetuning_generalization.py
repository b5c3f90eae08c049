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
# # Fine-tuning to new targets, and what generalizes off-distribution
#
# Chapter 2 trained a transformer to compute one distance: from vertex 1 to vertex 2. This
# chapter asks what that skill is worth elsewhere. Following the shortest-paths post
# [@wang2024shortest], we fine-tune the model briefly to give the distance from vertex 1 to
# *other* vertices, but only to vertices on a shortest 1-2 path and only in small graphs, and
# then run it on five distributions it was never trained on. Then we go past the post: a model
# trained on small graphs is run on larger graphs with longer paths, and what it does is set
# against two ideas from the length-generalization literature [@zhou2023rasp; @huang2024lengthgen].
#
# What you will see:
#
# - where the base model comes from (chapter 2's checkpoint, or the same training code run
#   here), and how the post's "small" and "large" graphs map onto this run's scale;
# - the pre-trained model on the new task before fine-tuning, the fine-tuning loss by label,
#   and predicted-against-true histograms before and after;
# - the five generalization tests in one table next to the published numbers, each split by
#   where its targets sit relative to vertices 1 and 2, with a histogram per test;
# - a length-generalization study: loss against graph size and against true distance, inside
#   and outside the training range, with the training boundary marked.

# %% tags=["parameters"]
smoke = False  # tiny run for tests (well under a minute)
seed = 0  # seeds every random draw of the chapter
device = "auto"  # "auto" (CUDA when present), "cpu", "cuda" or "cuda:K"
results_dir = "../results"  # results JSON and saved models go here; later chapters read them here
small_n_max = 5  # small graphs have 3..small_n_max vertices, small targets and labels at most small_n_max (published: 7)
finetune_steps = 300  # fine-tuning steps, each on fresh graphs (published: 100)
finetune_batch_size = 256  # graphs per fine-tuning step (published: 2**15)
finetune_learning_rate = 1e-4  # AdamW learning rate of fine-tuning (published, stated: 1e-5)
finetune_weight_decay = 1e-5  # AdamW decoupled weight decay of fine-tuning (published, stated: 1e-5)
eval_size = 4096  # held-out on-path graphs for the loss before and after fine-tuning
test_graphs = 4096  # held-out graphs per generalization test
length_train_n_max = 6  # length study: training graphs have 3..length_train_n_max vertices
length_test_n_max = 12  # length study: test graphs have up to this many vertices (all ids seen in training)
length_n_layers = 4  # encoder layers of the length-study model
length_batch_size = 256  # fresh graphs per step of the length-study model
length_learning_rates = [1e-3, 2e-4]  # learning rate of each training phase of the length-study model
length_phase_steps = [1200, 300]  # steps of each phase
length_graphs_per_cell = 256  # test graphs per (size, distance) cell, at most
cpu_threads = 1  # torch threads on the CPU (one is fastest for these small models on 2 cores)

# %%
import dataclasses
import time

import torch
from IPython.display import Markdown, display

from lib.paths.finetuning import (
    PUBLISHED_FINETUNING, ensure_base_model, fallback_base_config, finetune, finetuning_config,
    held_out_loss, loss_on, weight_shrink_factor,
)
from lib.chapters.ch3 import Chapter3Parameters, generalization_table, target_kind_table
from lib.chapters.ch3_figures import (
    confusion_by_test_figure, error_by_target_kind_figure, finetune_loss_figure,
    generalization_bars_figure, length_heatmap_figure, loss_by_distance_figure, loss_by_size_figure,
)
from lib.paths.generalization_tests import (
    PUBLISHED_SCALE, TESTS, by_target_kind, distance_1_to_2, evaluate_all, scale_for, target_kinds,
)
from lib.paths.sampler import describe_filter, sample_with_options
from lib.paths.length_generalization import (
    evaluate_cells, own_graphs_by_distance, summarize_cells, training_config, vertex_id_coverage,
)
from lib.paths.training import start_training, train
from lib.book.params import apply_cpu_threads, validate_parameters
from lib.book.plotting import configure_notebook_rendering
from lib.book.reproducibility import make_generator, seed_everything
from lib.book.results import write_results
from lib.chapters.ch2 import format_example
from lib.chapters.ch2_figures import confusion_figure, label_histogram_figure

config = validate_parameters(Chapter3Parameters, globals())
seed_everything(config.seed)
apply_cpu_threads(config.cpu_threads, config.device)
configure_notebook_rendering()
seconds = {}
print(f"device: {config.device}; small graphs up to {config.small_n_max} vertices; "
      f"{config.finetune_steps} fine-tuning steps of {config.finetune_batch_size} graphs; "
      f"smoke run: {config.smoke}")

# %% [markdown]
# ```{note}
# **Published scale.** The defaults are a reduced run for a CPU, built on chapter 2's reduced
# model (graphs of up to 8 vertices, 4 layers). The post [@wang2024shortest] fine-tuned its
# model (graphs of up to 15 vertices) for 100 steps of 2^15 fresh graphs with a stated learning
# rate and weight decay of 1e-5, on small graphs of 3 to 7 vertices. To rerun that, first run
# chapter 2 at its published scale into the same `results_dir`, then
# `papermill 03_finetuning_generalization.ipynb out.ipynb -p small_n_max 7 -p finetune_steps 100
# -p finetune_batch_size 32768 -p finetune_learning_rate 1e-5 -p finetune_weight_decay 1e-5
# -p eval_size 32768 -p test_graphs 32768 -p device cuda`.
# With a base model trained on graphs of up to 15 vertices and `small_n_max = 7`, the five tests
# below are exactly the published ones. One difference cannot be removed: the authors' loop
# stepped the pre-training optimizer, so their 0.01472 was reached with that optimizer's
# settings and state, not with the stated ones, and a rerun of the stated settings may land
# elsewhere. The length study is not in the post; a larger version
# for a GPU is, for example, `-p length_train_n_max 10 -p length_test_n_max 20
# -p length_n_layers 11 -p length_batch_size 32768 -p length_phase_steps "[3000, 1000]"
# -p length_graphs_per_cell 4096`.
# ```

# %% [markdown]
# ## The base model
#
# The chapter starts from the model chapter 2 trained, read from its checkpoint in
# `results_dir`. When the checkpoint is missing (this chapter run on its own), the same
# library code trains chapter 2's default model here first; the line below says which
# happened.

# %%
started = time.perf_counter()
base = ensure_base_model(config.results_dir, fallback_base_config(
    seed=config.seed, device=str(config.device), smoke=config.smoke), device=config.device)
seconds["base_model"] = time.perf_counter() - started
scale = scale_for(base.config, config.small_n_max)
n_labels = scale.unreachable_label + 1
display(Markdown(base.describe()))
print(f"scale of this run: {scale.describe()}")
print(f"published scale:   {PUBLISHED_SCALE.describe()}")

# %% [markdown]
# The post's tests speak of *small* graphs (3 to 7 vertices: the fine-tuning graphs), *large*
# graphs (3 to 15: the pre-training graphs), *small* targets (at most 7) and an unreachable
# label of 15. Here the roles stay and the numbers follow the base model: large graphs are the
# graphs it was pre-trained on, small graphs are the fine-tuning graphs (up to `small_n_max`
# vertices), small targets and the on-path label cap are at most `small_n_max`, and an
# unreachable target keeps the base model's label. At the published scale this mapping gives
# the published tests exactly (a unit test checks it). At the default CPU scale the
# experiment has the same shape with smaller graphs, a smaller model and far less training,
# so **the MSEs below cannot be compared number for number with the published ones**: compare
# the pattern across tests, not the values.

# %% [markdown]
# ## Fine-tuning on targets along the shortest path
#
# The fine-tuning task keeps the graphs and changes the question. A graph must have a path
# from 1 to 2; a position k on a shortest 1-2 path is drawn with probability proportional to
# k; the target is the vertex at that position and the label is k, its distance from vertex 1.
# k can be the whole path, so vertex 2 itself stays a target (always, when 1 and 2 are
# neighbours); the cell below says how often. Graphs are small, and short 1-2 paths are thinned
# out as in the post.
#
# The optimizer is built for the fine-tuning and is the one that steps: **AdamW** with the
# learning rate and weight decay given as parameters, started without any state from
# pre-training. The post gives a learning rate and weight decay of 1e-5 for this step; in the
# authors' code the loop stepped the pre-training optimizer instead, so those values were
# never applied. We chose AdamW over Adam's built-in weight decay because the post's reason for
# the decay was to push the model towards simpler representations: Adam adds the decay to the
# gradient and then divides by the running gradient scale, so weights with large gradients are
# hardly decayed, while AdamW shrinks every weight by the same factor, (1 - lr x decay), at
# each step.

# %%
finetune_config = finetuning_config(
    base.config, small_n_max=config.small_n_max, steps=config.finetune_steps,
    batch_size=config.finetune_batch_size, learning_rate=config.finetune_learning_rate,
    weight_decay=config.finetune_weight_decay, eval_size=config.eval_size, seed=config.seed)
example_tokens, example_labels = sample_with_options(
    20_000, finetune_config.sampler, make_generator(config.seed + 11, config.device))
print("filter:", describe_filter(finetune_config.sampler))
print(f"share of fine-tuning graphs whose target is vertex 2 itself: "
      f"{float((example_tokens[:, -1, 0] == 2).float().mean()):.2f}")
print(format_example(example_tokens[0].cpu(), example_labels[0].cpu()))
print(format_example(example_tokens[1].cpu(), example_labels[1].cpu()))
label_histogram_figure(example_labels.cpu(), scale.unreachable_label,
                       title="Labels of the fine-tuning data").show()

# %%
started = time.perf_counter()
finetune_run = finetune(base.model, finetune_config)
seconds["finetuning"] = time.perf_counter() - started
finetune_loss_before = held_out_loss(finetune_run, 0)
finetune_loss_after = held_out_loss(finetune_run, -1)
shrink = weight_shrink_factor(config.finetune_learning_rate, config.finetune_weight_decay, config.finetune_steps)
published_shrink = weight_shrink_factor(PUBLISHED_FINETUNING["learning_rate"],
                                        PUBLISHED_FINETUNING["weight_decay"], PUBLISHED_FINETUNING["steps"])
pretrain_tokens, pretrain_labels = sample_with_options(
    config.eval_size, base.config.sampler, make_generator(config.seed + 13, config.device))
pretrain_loss_before = loss_on(base.model, pretrain_tokens, pretrain_labels)
pretrain_loss_after = loss_on(finetune_run.model, pretrain_tokens, pretrain_labels)
# Where each held-out target sits, and each graph's 1-2 distance (the pre-training answer).
eval_kinds = target_kinds(finetune_run.eval_tokens)
eval_distance_12 = distance_1_to_2(finetune_run.eval_tokens, scale.unreachable_label)
finetune_kinds_before = by_target_kind(finetune_run.snapshot_predictions[0], finetune_run.eval_labels,
                                       eval_kinds, eval_distance_12)
finetune_kinds = by_target_kind(finetune_run.snapshot_predictions[-1], finetune_run.eval_labels,
                                eval_kinds, eval_distance_12)

# %%
# NBVAL_CHECK_OUTPUT
print(f"on-path task, {config.eval_size} held-out small graphs: MSE {finetune_loss_before:.4f} before "
      f"fine-tuning, {finetune_loss_after:.5f} after "
      f"(published, at its own scale: {PUBLISHED_FINETUNING['loss_before']} and {PUBLISHED_FINETUNING['loss_after']})")
print(f"pre-training task (target 2, the base model's graphs): MSE {pretrain_loss_before:.4f} before, "
      f"{pretrain_loss_after:.4f} after")
print(f"AdamW's decay alone scales every weight by {shrink:.6f} over this run; "
      f"at the post's stated settings it would be {published_shrink:.10f}")

# %% [markdown]
# Two remarks on these numbers. With the post's stated learning rate and weight decay, the
# decay moves each weight by about one part in 10^8 over 100 steps: whatever the
# authors' intent, the decay itself could not have shaped the fine-tuned model, so it is
# unlikely to explain what generalizes below. Second, fine-tuning on new targets changes the
# model's answer on its old task; the second line above measures how much.

# %%
finetune_loss_figure(finetune_run.log, scale.unreachable_label, loss_before=finetune_loss_before,
                     loss_after=finetune_loss_after,
                     published_before=PUBLISHED_FINETUNING["loss_before"],
                     published_after=PUBLISHED_FINETUNING["loss_after"]).show()

# %%
on_path_before = finetune_kinds_before.get("on a shortest 1-2 path", {})
on_path_after = finetune_kinds.get("on a shortest 1-2 path", {})
display(Markdown(
    f"What did the pre-trained model do with a target it was never asked about? On the held-out "
    f"on-path targets other than vertex 2 ({on_path_before.get('count', 0)} graphs), its rounded "
    f"prediction equals the distance from 1 to **2** in "
    f"{100 * on_path_before.get('answers_1_2_distance', float('nan')):.0f}% of graphs and the true "
    f"distance to the target in {100 * on_path_before.get('accuracy', float('nan')):.0f}%: it answers "
    f"the question it was trained on, whatever the target token says. After fine-tuning the true "
    f"distance is hit in {100 * on_path_after.get('accuracy', float('nan')):.0f}% of them. The "
    f"histograms below show the same: before, the rows spread out (the post notes that its "
    f"before-histogram looked deceptively good because the model still guessed integers "
    f"[@wang2024shortest]); after, the mass sits on the diagonal."))

# %%
confusion_figure(finetune_run.snapshot_predictions[0], finetune_run.eval_labels, n_labels,
                 title="On-path targets in small graphs, before fine-tuning").show()
confusion_figure(finetune_run.snapshot_predictions[-1], finetune_run.eval_labels, n_labels,
                 title=f"On-path targets in small graphs, after {finetune_run.step} fine-tuning steps").show()

# %% [markdown]
# ## The five generalization tests
#
# The fine-tuned model now meets five distributions it was not trained on, each with its own
# seeded held-out graphs. Two keep on-path targets but use large graphs (with small labels
# only, or any label); three ask for the distance to *any* target, in small or large graphs.
# Each test is run on the pre-trained model too, so we can tell what fine-tuning changed.

# %%
started = time.perf_counter()
results_before = evaluate_all(base.model, scale, config.test_graphs, config.seed)
results_after = evaluate_all(finetune_run.model, scale, config.test_graphs, config.seed)
seconds["generalization_tests"] = time.perf_counter() - started
display(Markdown(generalization_table(results_before, results_after, scale)))

# %%
# NBVAL_CHECK_OUTPUT
for b, a in zip(results_before, results_after):
    print(f"{a.test.name:>30}: MSE {b.mse:9.4f} -> {a.mse:9.4f}, accuracy {b.accuracy:.3f} -> {a.accuracy:.3f} "
          f"(published {a.test.published_mse})")

# %%
scale_text = f"graphs up to {scale.large_n_max} vertices, small = up to {scale.small_n_max}"
generalization_bars_figure(results_before, results_after, scale_text).show()

# %% [markdown]
# A single MSE per test hides *where* the errors are. Each test's targets fall into four
# kinds: vertex 2 itself (the pre-training target), another vertex on a shortest 1-2 path
# (the fine-tuning targets), a reachable vertex off every shortest 1-2 path, and an
# unreachable target (a vertex with no path from 1, or a number larger than the graph). The
# table gives the fine-tuned model's MSE for each kind (number of graphs in brackets).

# %%
display(Markdown(target_kind_table(results_after)))
error_by_target_kind_figure(results_after).show()

# %%
confusion_by_test_figure(results_after, n_labels).show()

# %%
onpath_small, onpath_all, any_small, any_small_large, any_large = results_after
kind = {r.test.name: r.by_kind for r in results_after}
on_path_here = finetune_kinds.get("on a shortest 1-2 path", {})
on_path_large = kind["onpath_target"].get("on a shortest 1-2 path", {})
on_path_large_before = results_before[1].by_kind.get("on a shortest 1-2 path", {})
off_path = kind["any_target_large_graphs"].get("reachable, off the path", {})
unreachable = kind["any_target_large_graphs"].get("unreachable", {})
on_path_any = kind["any_target_large_graphs"].get("on a shortest 1-2 path", {})
worse_or_better = ("higher" if any_large.mse > results_before[4].mse else "lower")
display(Markdown(f"""
**Reading the table.** All numbers are from this run, at the scale above.

- *On-path targets carry over to larger graphs.* On large graphs the fine-tuned model scores
  MSE {onpath_small.mse:.4f} with small labels and {onpath_all.mse:.4f} with any label (the
  pre-trained model: {results_before[0].mse:.4f} and {results_before[1].mse:.4f}). Most of
  these targets are vertex 2 itself, so count only the others: their MSE is
  {on_path_here.get('mse', float('nan')):.4f} on the small fine-tuning graphs and
  {on_path_large.get('mse', float('nan')):.4f} on large graphs, with accuracy
  {on_path_here.get('accuracy', float('nan')):.3f} and {on_path_large.get('accuracy', float('nan')):.3f}
  (before fine-tuning, on large graphs: MSE {on_path_large_before.get('mse', float('nan')):.3f},
  accuracy {on_path_large_before.get('accuracy', float('nan')):.3f}). The skill transfers, with a
  loss that {"grows" if on_path_large.get('mse', 0) > on_path_here.get('mse', 0) else "does not grow"}
  with the graph. The post found small labels easier than all labels (0.1020 against 0.1451)
  and called it good and moderate generalization [@wang2024shortest]. Here the two tests
  {"agree with that ordering" if onpath_small.mse < onpath_all.mse else "do not show that ordering"};
  they can hardly differ, since {int((onpath_all.labels > scale.small_n_max).sum())} of the
  {len(onpath_all.labels)} on-path labels in graphs of up to {scale.large_n_max} vertices are
  above {scale.small_n_max}.
- *Any-target tests fail*, with MSEs of {any_small.mse:.2f}, {any_small_large.mse:.2f} and
  {any_large.mse:.2f}. The split by target kind says why. On the last test, targets that happen
  to lie on a shortest 1-2 path are still answered well (MSE {on_path_any.get('mse', float('nan')):.3f}
  on {on_path_any.get('count', 0)} graphs). Reachable targets off the path get a mean
  prediction of {off_path.get('mean_prediction', float('nan')):.2f} against a mean true
  distance of {off_path.get('mean_label', float('nan')):.2f} (MSE {off_path.get('mse', float('nan')):.2f}),
  and unreachable targets a mean prediction of {unreachable.get('mean_prediction', float('nan')):.2f}
  against the label {scale.unreachable_label} (MSE {unreachable.get('mse', float('nan')):.2f}, on
  {100 * any_large.share_unreachable:.0f}% of the graphs). What does the model answer instead?
  Often the distance from 1 to 2: its rounded prediction equals that distance (or "unreachable"
  when 2 cannot be reached) for {100 * off_path.get('answers_1_2_distance', float('nan')):.0f}% of
  the off-path targets and {100 * unreachable.get('answers_1_2_distance', float('nan')):.0f}% of the
  unreachable ones. Where fine-tuning taught nothing, the model falls back on its pre-training
  answer.
- *What the training explains.* Every fine-tuning target lies on a shortest 1-2 path and is
  reachable, so nothing in fine-tuning rewarded a distance to a vertex off that path or an
  "unreachable" answer for any target but vertex 2. The model learned to answer the question it
  was asked, the position of a vertex along the 1-2 path, and that answer stays right as
  graphs grow; it did not become a general distance calculator. Fine-tuning left the
  any-target MSE on large graphs {worse_or_better} than before ({results_before[4].mse:.2f} before,
  {any_large.mse:.2f} after): it was never good at these targets to begin with.
- The published any-target MSEs (61.44, 47.06, 72.87) are larger than ours partly because
  their unreachable label is 15, not {scale.unreachable_label}: the error on an unreachable
  target grows with the square of that label.
"""))

# %% [markdown]
# ## Beyond the paper: length generalization
#
# Does a model trained on small graphs work on larger ones? In a larger graph two things grow
# together: the number of edge tokens (the length of the input) and the longest possible
# distance (more hops to chain, and label values the model has never output). The study below
# trains a fresh model on graphs of 3 to `length_train_n_max` vertices and scores it on every
# (graph size, true distance) cell up to `length_test_n_max` vertices, so the two effects can
# be read apart: along a row of fixed distance only the size changes.
#
# A third difference would make the failure trivial: a model trained on small graphs has only
# ever embedded small vertex ids. The split removes it. In training, the
# vertices 3..n of every graph get distinct ids drawn at random from 3..`length_test_n_max`
# (vertices 1 and 2 keep their ids, so the task is unchanged), so every vertex id and the
# TARGET token are seen in training; the cell below checks this. The model has no positional
# encodings, so more tokens are just more tokens. Graphs where vertex 2 is unreachable are left
# out of this study, since the label standing for "no path" would have to grow with the graph.
# Training balances path lengths with the pre-training filter, at a threshold equal to the
# longest possible training path.

# %%
split = config.length_split
length_config = training_config(split, n_layers=config.length_n_layers, batch_size=config.length_batch_size,
                                lr_schedule=config.length_lr_schedule, seed=config.seed, device=str(config.device))
seen_ids = vertex_id_coverage(length_config, 2000, make_generator(config.seed + 17, config.device))
assert seen_ids == list(range(1, split.vertex_ids + 2)), seen_ids
print(f"training graphs: {split.n_min}..{split.n_train_max} vertices, paths of at most "
      f"{split.distance_train_max}; test graphs up to {split.n_test_max} vertices")
print(f"token ids seen in 2,000 training graphs: {seen_ids[0]}..{seen_ids[-1]} "
      f"(every vertex id up to {split.vertex_ids}, and TARGET = {split.vertex_ids + 1})")
length_tokens, length_labels = sample_with_options(20_000, length_config.sampler,
                                                   make_generator(config.seed + 19, config.device))
label_histogram_figure(length_labels.cpu(), split.n_test_max,
                       title="Path lengths in the length-study training data").show()

# %%
started = time.perf_counter()
length_run = train(start_training(length_config))
length_run.model.eval()
seconds["length_training"] = time.perf_counter() - started
started = time.perf_counter()
cells = evaluate_cells(length_run.model, split, per_cell=config.length_graphs_per_cell, seed=config.seed,
                       max_proposals=config.length_max_proposals)
length_summary = summarize_cells(cells)
depth_cells = own_graphs_by_distance(base.model, base.config.sampler, per_cell=config.length_graphs_per_cell,
                                     seed=config.seed, max_proposals=config.length_max_proposals)
seconds["length_evaluation"] = time.perf_counter() - started

# %%
# NBVAL_CHECK_OUTPUT
for name, group in length_summary.items():
    print(f"{name:>45}: MSE {group['mse']:8.4f}, accuracy {group['accuracy']:.3f} on {group['count']} graphs")

# %%
length_heatmap_figure(cells, split).show()

# %%
loss_by_size_figure(cells, split).show()

# %%
loss_by_distance_figure(cells, split).show()

# %%
largest = max(c.n_vertices for c in cells)
short_rows = {d: {c.n_vertices: c for c in cells if c.distance == d} for d in (1, 2, 3)}
long_cells = [c for c in cells if not c.seen_distance]
longest_training = [c for c in cells if c.seen_size and c.distance == split.distance_train_max]
top_prediction = max((c.mean_prediction for c in cells), default=float("nan"))
depth_text = ", ".join(f"distance {c.distance}: {c.mean_prediction:.2f}" for c in depth_cells)
depth_top = max((c.mean_prediction for c in depth_cells), default=float("nan"))
depth_verdict = (
    "A model of this depth can output longer distances when they were in its training data; the "
    "length-study model stops where its data stopped." if depth_top > top_prediction + 0.5 else
    "Here that model does not reach further than the length-study model, so depth may be the "
    "limit too.")


def row_text(d):
    row = short_rows[d]
    if split.n_train_max not in row or largest not in row:
        return f"distance {d}: not measured"
    return (f"distance {d}: MSE {row[split.n_train_max].mse:.4f} at {split.n_train_max} vertices, "
            f"{row[largest].mse:.4f} at {largest}")


display(Markdown(f"""
**What the model does outside its training range** (numbers from this run):

- *Larger graphs, familiar distances.* At a fixed short distance the loss changes with the
  graph size ({row_text(1)}; {row_text(2)}; {row_text(3)}), but far less than it changes with
  the distance (next point). Over all larger graphs and distances seen in training the MSE is
  {length_summary.get('larger graphs, distances seen in training', {}).get('mse', float('nan')):.3f},
  against {length_summary.get('training sizes', {}).get('mse', float('nan')):.3f} on the training sizes.
- *Longer distances.* On paths longer than any training path the MSE is
  {length_summary.get('larger graphs, longer distances', {}).get('mse', float('nan')):.2f} with accuracy
  {length_summary.get('larger graphs, longer distances', {}).get('accuracy', float('nan')):.3f}. The
  right panel above shows why: the mean prediction levels off and never exceeds
  {top_prediction:.2f}, whatever the true distance, so the model reports "about as far as anything
  I have seen" for every long path. Even the longest training length, {split.distance_train_max}, is
  {"predicted at " + ", ".join(f"{c.mean_prediction:.2f} (n = {c.n_vertices})" for c in longest_training) if longest_training else "not measured"}:
  it made up only {100 * float((length_labels == split.distance_train_max).float().mean()):.1f}% of the training paths.
- *Not a matter of depth alone.* Chapter 2's model has the same number of layers
  ({base.config.n_layers}) and was trained on graphs of up to {base.config.n_max} vertices, where
  longer paths occur. On its own largest graphs its mean predictions are {depth_text}.
  {depth_verdict}
"""))

# %% [markdown]
# **How this relates to the length-generalization literature.** The RASP-generalization
# conjecture [@zhou2023rasp] says a transformer tends to length-generalize on a task when the
# task has a short RASP program that works for every input length. For a *fixed* distance k,
# "is vertex 2 within k hops of vertex 1?" is such a program: k rounds of "attend to the edges
# that touch the current frontier", whatever the number of edges. Computing the distance for
# *any* length is not: breadth-first search needs one round per hop, so the number of
# sequential steps grows with the answer, while a trained model has a fixed depth and has only
# been rewarded for the outputs in its data. The conjecture is thus consistent with the split
# seen above: short distances carry over to graphs with many more edge tokens, and distances
# longer than the training paths do not. The hand-built transformer of chapter 1 makes the point from the other side:
# it is exact, but only because it has one layer per possible hop.
#
# The formal framework of [@huang2024lengthgen] analyses causal transformers with learnable
# *absolute positional encodings*: it characterizes which functions can be identified from
# sufficiently long training inputs (under a norm-based regularizer), which proves length
# generalization possible for a rich family of tasks and predicts failure elsewhere. With
# positional encodings, a longer input also brings positions never trained on. Our model has
# no positional encodings at all, and the relabelling makes every vertex id familiar, so
# neither unseen positions nor unseen tokens can explain a failure here. What remains is the
# need to chain more hops, and to output larger distances, than any training example asked
# for. The milder growth of the loss with size at a fixed distance is consistent with
# attention averaging over more edge tokens in a larger graph, though we have not tested that
# mechanism directly.

# %% [markdown]
# ## Numbers and checks

# %%
generalization_records = []
for b, a in zip(results_before, results_after):
    generalization_records.append({**a.record(), "graphs_and_targets": a.test.describe(scale),
                                   "mse_pretrained": b.mse, "accuracy_pretrained": b.accuracy})
results = {
    "finetune_loss_before": finetune_loss_before,
    "finetune_loss_after": finetune_loss_after,
    "published_finetune_loss_before": PUBLISHED_FINETUNING["loss_before"],
    "published_finetune_loss_after": PUBLISHED_FINETUNING["loss_after"],
    "finetune_by_target_kind_before": finetune_kinds_before,
    "finetune_by_target_kind": finetune_kinds,
    "pretrain_task_loss_before_finetune": pretrain_loss_before,
    "pretrain_task_loss_after_finetune": pretrain_loss_after,
    "finetune_optimizer": "AdamW", "finetune_config": finetune_config.to_dict(),
    "base_model": {"source": base.source, "checkpoint": base.checkpoint_path,
                   "config": base.config.to_dict()},
    "scale": dataclasses.asdict(scale), "published_scale": dataclasses.asdict(PUBLISHED_SCALE),
    "generalization": generalization_records,
    "length_generalization": [c.record() for c in cells],
    "length_generalization_summary": length_summary,
    "length_split": dataclasses.asdict(split),
    "length_config": length_config.to_dict(),
    "length_depth_check": [c.record() for c in depth_cells],
    "seconds": seconds,
    "smoke": config.smoke,
}
path = write_results(config.results_dir, "03_finetuning_generalization", results)
print(f"wrote {path}")
print("seconds:", {name: round(value, 1) for name, value in seconds.items()})

# Fine-tuning must lower the on-path loss (the chapter's first claim).
assert finetune_loss_after < finetune_loss_before, (finetune_loss_before, finetune_loss_after)
assert [r["test"] for r in generalization_records] == list(TESTS)
if not config.smoke:
    # The claims of the text: on-path tests improve with fine-tuning, any-target tests stay far
    # worse than on-path ones, and longer distances are much worse than the training range.
    assert onpath_small.mse < results_before[0].mse and onpath_all.mse < results_before[1].mse
    assert min(r.mse for r in results_after[2:]) > 10 * max(onpath_small.mse, onpath_all.mse)
    assert length_summary["larger graphs, longer distances"]["mse"] > 10 * length_summary["training sizes"]["mse"]
    assert top_prediction < split.distance_train_max + 1

# %% [markdown]
# ## Summary

# %%
display(Markdown(f"""
- Fine-tuning the pre-trained model for {finetune_run.step} steps with AdamW (learning rate
  {config.finetune_learning_rate:g}, weight decay {config.finetune_weight_decay:g}) on on-path
  targets in graphs of up to {scale.small_n_max} vertices lowers the held-out on-path MSE from
  {finetune_loss_before:.4f} to {finetune_loss_after:.5f}. The post went from 0.5531 to 0.01472 at its
  own scale [@wang2024shortest].
- The skill carries over to larger graphs for the targets it was trained on (on-path MSE
  {onpath_small.mse:.4f} and {onpath_all.mse:.4f}) and not to other targets (any-target MSE
  {any_small.mse:.2f}, {any_small_large.mse:.2f}, {any_large.mse:.2f}): the same pattern as the post.
  The split by target kind locates the failure in the two kinds of target that fine-tuning never
  showed: reachable vertices off the shortest 1-2 path, and unreachable targets.
- A model trained on graphs of up to {split.n_train_max} vertices, with every vertex id seen,
  keeps short distances right on graphs up to {split.n_test_max} vertices, but its predictions
  stop near {top_prediction:.1f} for longer paths (MSE
  {length_summary.get('larger graphs, longer distances', {}).get('mse', float('nan')):.2f} beyond the
  training lengths), as the RASP-generalization conjecture would lead one to expect.
"""))

# %% [markdown]
# Open questions:
#
# - What does fine-tuning change inside the model? A probe for "distance from 1" on every
#   vertex token, before and after fine-tuning, would tell whether the pre-trained model already
#   held distances to all vertices (and only the readout was missing) or only along the 1-2 path.
# - Would fine-tuning on any target, including unreachable ones, generalize to larger graphs as
#   well as on-path fine-tuning does, or is the 1-2 path what makes the on-path task easy?
# - Can a model of fixed depth be made to extrapolate to longer paths, for instance by
#   training with a curriculum of growing graphs, by sharing weights across layers and running
#   more layers at test time, or by predicting "farther than k" as a class rather than a number?
