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
# {cite:p}`wang2024shortest`, we fine-tune the model briefly to give the distance from vertex 1 to
# *other* vertices, but only to vertices on a shortest 1-2 path and only in small graphs, and
# then run it on five distributions it was never trained on. Then we go past the post: a model
# trained on small graphs is run on larger graphs with longer paths, and what it does is set
# against two ideas from the length-generalization literature {cite:p}`zhou2023rasp,huang2024lengthgen`.
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
#   and outside the training range, with the training boundary marked, over several seeds;
# - where the predictions fall behind, set against how often each path length occurs in
#   training: does it begin where the data stops, or where the data gets rare?

# %% tags=["parameters"]
smoke = False  # tiny run for tests (well under a minute)
seed = 0  # seeds every random draw of the chapter
device = "auto"  # "auto" (CUDA when present), "cpu", "cuda" or "cuda:K"
results_dir = "../results"  # results JSON and saved models go here; later chapters read them here
small_n_max = 5  # small graphs have 3..small_n_max vertices, small targets have vertex ids at most small_n_max (published: 7)
finetune_steps = 300  # fine-tuning steps, each on fresh graphs (published: 100)
finetune_batch_size = 256  # graphs per fine-tuning step (published: 2**15)
finetune_learning_rate = 1e-4  # AdamW learning rate of fine-tuning (published, stated: 1e-5)
finetune_weight_decay = 1e-5  # AdamW decoupled weight decay of fine-tuning (published, stated: 1e-5)
eval_size = 4096  # held-out on-path graphs for the loss before and after fine-tuning
test_graphs = 4096  # held-out graphs per generalization test
n_seeds = 3  # seeds of pre-training + fine-tuning behind the tests' spread (the first: chapter 2's model; about 2 min each more)
graphs_per_size = 1024  # held-out on-path graphs per graph size for the per-size check of targets other than vertex 2
length_train_n_max = 6  # length study: training graphs have 3..length_train_n_max vertices
length_test_n_max = 12  # length study: test graphs have up to this many vertices (all ids seen in training)
length_n_layers = 4  # encoder layers of the length-study model
length_batch_size = 256  # fresh graphs per step of the length-study model
length_learning_rates = [1e-3, 2e-4]  # learning rate of each training phase of the length-study model
length_phase_steps = [1200, 300]  # steps of each phase
length_graphs_per_cell = 256  # test graphs per (size, distance) cell, at most
length_n_seeds = 3  # seeds of the length-study model (the first is the one the figures show; about 1.5 min each more)
cpu_threads = 1  # torch threads on the CPU (one is fastest for these small models on 2 cores)
workers = 2  # worker processes that train the further seeds at once on a CPU (one per core)

# %% tags=["remove-output", "hide-input"]
import dataclasses
import functools
import time

from IPython.display import Markdown, display

from lib.paths.finetuning import ensure_base_model, fallback_base_config, finetune, finetuning_config
from lib.chapters.ch3 import Chapter3Parameters, generalization_table, target_kind_table
from lib.chapters.ch3_figures import (
    confusion_by_test_figure, error_by_target_kind_figure, finetune_loss_figure,
    generalization_bars_figure, length_heatmap_figure, loss_by_distance_figure, loss_by_size_figure,
)
from lib.chapters.ch3_results import (
    baseline_table, chapter_claims, check_results, frequency_table, kind_spread_table, seed_claims,
    vertex_2_table,
)
from lib.paths.baseline_comparison import compare_with_baselines
from lib.paths.finetuning_summary import share_with_target, summarize_finetuning_run
from lib.paths.generalization_summary import summarize_generalization
from lib.paths.length_summary import GROUP_FIELDS, LengthSeeds, length_study_of_seed, summarize_length_study
from lib.paths.replicate_analysis import seed_analysis
from lib.paths.seed_spread import SeedSpread, count_higher, position_against, spread_by_test
from lib.paths.size_trend import size_trend, size_trends_over_seeds
from lib.paths.target_kind_scores import kind_contrast, kind_spread
from lib.paths.under_prediction_onsets import onsets, under_prediction
from lib.paths.baselines import test_baselines
from lib.paths.length_frequency import compare_frequency
from lib.paths.generalization_tests import PUBLISHED_SCALE, TARGET_KINDS, TESTS, evaluate_all, scale_for
from lib.paths.seed_replicates import replicate_seed, seed_run
from lib.paths.sampler import sample_with_options
from lib.paths.length_generalization import Cell, evaluate_cells, training_config, vertex_id_coverage
from lib.paths.training import start_training, train
from lib.book.params import apply_cpu_threads, validate_parameters
from lib.book.plotting import configure_notebook_rendering
from lib.book.reproducibility import make_generator, seed_everything
from lib.book.record import Record, direction, share, verdict
from lib.book.results import write_results
from lib.book.tables import markdown_table
from lib.book.workers import map_in_workers
from lib.paths.token_graphs import format_example
from lib.book.confusion import confusion_figure, label_histogram_figure

config = validate_parameters(Chapter3Parameters, globals())
seed_everything(config.seed)
apply_cpu_threads(config.cpu_threads, config.device)
configure_notebook_rendering()
seconds = {}
record = Record()  # the numbers the prose cites as {{key}}; they also go to the results JSON


def in_seeds(count, total):
    """The words for how many of `total` seeds a statement holds in, chosen by `share` for the prose
    to cite: "in all 3 seeds", "in 2 of 3 seeds", "in none of 3 seeds" ("in the one seed" or "not in
    the one seed" when there is one)."""
    one = total == 1
    return share(count, total, every="in the one seed" if one else f"in all {total} seeds",
                 some=f"in {count} of {total} seeds", none="not in the one seed" if one else f"in none of {total} seeds")


print(f"device: {config.device}; small graphs up to {config.small_n_max} vertices; "
      f"{config.finetune_steps} fine-tuning steps of {config.finetune_batch_size} graphs; "
      f"smoke run: {config.smoke}")

# %% [markdown]
# ```{note}
# **Published scale.** The defaults are a reduced run for a CPU, built on chapter 2's reduced
# model (graphs of up to 8 vertices, 4 layers). The post {cite:p}`wang2024shortest` fine-tuned its
# model (graphs of up to 15 vertices) for 100 steps of $2^{15}$ fresh graphs with a stated learning
# rate and weight decay of 1e-5, on small graphs of 3 to 7 vertices. To rerun that, first run
# chapter 2 at its published scale into the same `results_dir`, then
# `papermill 03_finetuning_generalization.ipynb out.ipynb -f published/03.yaml` (the parameters
# in `notebooks/published/03.yaml`; `make published` runs both chapters, in order).
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
# library code trains chapter 2's default model here first; the text below the next cell says
# which happened.

# %%
started = time.perf_counter()
base = ensure_base_model(config.results_dir, fallback_base_config(
    seed=config.seed, device=str(config.device), smoke=config.smoke), device=config.device)
seconds["base_model"] = time.perf_counter() - started
scale = scale_for(base.config, config.small_n_max)
n_labels = scale.unreachable_label + 1
from_checkpoint = base.source == "checkpoint"
record("base_model.origin", verdict(from_checkpoint, yes=f"Loaded chapter 2's checkpoint {base.checkpoint_name}",
                                    no="No chapter 2 checkpoint was found, so a base model was trained here "
                                       "with chapter 2's library code"))
record.fields("base_model", base.config, n_layers="d", total_steps="d", batch_size="d")
record.fields("base_model", base.config.sampler, n_min="d", n_max="d")
record("base_model.seconds", base.seconds, ".0f")
# The time it took, stated only for a model trained here.
record("base_model.time", verdict(from_checkpoint, yes="", no=f", {record['base_model.seconds'].text} s"))
for key, each in (("scale", scale), ("published_scale", PUBLISHED_SCALE)):
    record.fields(key, each, n_min="d", small_n_max="d", large_n_max="d", unreachable_label="d")

# %% [markdown]
# {{base_model.origin}} ({{base_model.n_layers}} layers, graphs of
# {{base_model.n_min}}..{{base_model.n_max}} vertices, {{base_model.total_steps}} steps of
# {{base_model.batch_size}} graphs{{base_model.time}}).
#
# Scale of this run: small graphs {{scale.n_min}}..{{scale.small_n_max}} vertices, large graphs
# {{scale.n_min}}..{{scale.large_n_max}}, small targets 2..{{scale.small_n_max}}, unreachable label
# {{scale.unreachable_label}}. Published scale: small graphs
# {{published_scale.n_min}}..{{published_scale.small_n_max}} vertices, large graphs
# {{published_scale.n_min}}..{{published_scale.large_n_max}}, small targets
# 2..{{published_scale.small_n_max}}, unreachable label {{published_scale.unreachable_label}}.

# %% [markdown]
# The post's tests speak of *small* graphs (3 to 7 vertices: the fine-tuning graphs), *large*
# graphs (3 to 15: the pre-training graphs), *small* targets (vertex ids at most 7) and an
# unreachable label of 15. Here the roles stay and the numbers follow the base model: large
# graphs are the graphs it was pre-trained on, small graphs are the fine-tuning graphs (up to
# `small_n_max` vertices), small targets have vertex ids at most `small_n_max`, and an
# unreachable target keeps the base model's label. For the on-path tests the cap is on the
# target's vertex id, as in the authors' code (`path[k] <= MAX_TUNE_VTXS`), not on its label:
# the small-target test holds out exactly the vertex ids that fine-tuning never used as
# targets. (An earlier version of this book capped the label, which made the two on-path tests
# nearly the same distribution.) At the published scale this mapping gives
# the published tests exactly (a unit test checks it). At the default CPU scale the
# experiment has the same shape with smaller graphs, a smaller model and far less training,
# so **the MSEs below cannot be compared number for number with the published ones**: compare
# the pattern across tests, and each test's MSE as a multiple of a model-free baseline computed
# at both scales (the section "Against two model-free baselines").

# %% [markdown]
# ## Fine-tuning on targets along the shortest path
#
# The fine-tuning task keeps the graphs and changes the question. A graph must have a path
# from 1 to 2; a position k on a shortest 1-2 path is drawn with probability proportional to
# k; the target is the vertex at that position and the label is k, its distance from vertex 1.
# k can be the whole path, so vertex 2 itself stays a target (always, when 1 and 2 are
# neighbours); the note below the next cell says how often. Here the post's text and the authors' code
# disagree: the text says fine-tuning targets exclude vertex 2, while the code draws k from 1
# to the full path length, so vertex 2 is a target whenever k reaches it. The book follows the
# code. Graphs are small, and short 1-2 paths are thinned
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
finetune_sampler = finetune_config.sampler
print(f"sampler: task {finetune_sampler.task}; graphs of {finetune_sampler.n_min} to {finetune_sampler.n_max} "
      f"vertices; target ids up to {finetune_sampler.target_max}; small-graph filter "
      f"{'on' if finetune_sampler.small_graph_filter else 'off'}; length threshold "
      f"{finetune_sampler.length_threshold}; vertex ids up to {finetune_sampler.max_vertex_id}, "
      f"{'relabelled' if finetune_sampler.relabel_vertices else 'not relabelled'}; unreachable targets "
      f"labelled {finetune_sampler.unreachable_label}")
record("finetune.vertex_2_share", share_with_target(example_tokens, 2), ".2f")
print(format_example(example_tokens[0].cpu(), example_labels[0].cpu()))
print(format_example(example_tokens[1].cpu(), example_labels[1].cpu()))
label_histogram_figure(example_labels.cpu(), scale.unreachable_label,
                       title="Labels of the fine-tuning data").show()

# %% [markdown]
# Share of fine-tuning graphs whose target is vertex 2 itself: {{finetune.vertex_2_share}}.

# %%
started = time.perf_counter()
finetune_run = finetune(base.model, finetune_config)
seconds["finetuning"] = time.perf_counter() - started
# The pre-training task's graphs, on which the loss before and after fine-tuning is measured.
pretrain_tokens, pretrain_labels = sample_with_options(
    config.eval_size, base.config.sampler, make_generator(config.seed + 13, config.device))
finetuning = summarize_finetuning_run(
    finetune_run, base.model, pretrain_tokens, pretrain_labels, unreachable_label=scale.unreachable_label,
    learning_rate=config.finetune_learning_rate, weight_decay=config.finetune_weight_decay)

# %%
# NBVAL_CHECK_OUTPUT
record("finetune.eval_size", config.eval_size, "d")
record.fields("finetune", finetuning, steps="d", loss_before=".4f", loss_after=".5f", published_loss_before="g",
              published_loss_after="g", pretrain_task_loss_before=".4f", pretrain_task_loss_after=".4f",
              weight_shrink=".6f", published_weight_shrink=".10f")

# %% [markdown]
# On the on-path task, {{finetune.eval_size}} held-out small graphs: MSE {{finetune.loss_before}} before
# fine-tuning, {{finetune.loss_after}} after (published, at its own scale:
# {{finetune.published_loss_before}} and {{finetune.published_loss_after}}). On the pre-training task
# (target 2, the base model's graphs): MSE {{finetune.pretrain_task_loss_before}} before,
# {{finetune.pretrain_task_loss_after}} after. AdamW's decay alone scales every weight by
# {{finetune.weight_shrink}} over this run; at the post's stated settings it would be
# {{finetune.published_weight_shrink}}.
#
# Two remarks on these numbers. With the post's stated learning rate and weight decay, the decay moves each
# weight by about one part in $10^8$ over 100 steps: whatever the authors' intent, the decay itself could
# not have shaped the fine-tuned model, so it is unlikely to explain what generalizes below. Second,
# fine-tuning on new targets changes the model's answer on its old task; the pre-training task's MSE before
# and after measures how much.

# %%
finetune_loss_figure(finetune_run.log, scale.unreachable_label, loss_before=finetuning.loss_before,
                     loss_after=finetuning.loss_after, published_before=finetuning.published_loss_before,
                     published_after=finetuning.published_loss_after).show()

# %%
record("before.onpath_count", finetuning.kinds_before.on_path.count, ",")
record("before.answers_1_2", 100 * finetuning.kinds_before.on_path.answers_1_2_distance, ".0f")
record("before.accuracy", 100 * finetuning.kinds_before.on_path.accuracy, ".0f")
record("after.accuracy", 100 * finetuning.kinds_after.on_path.accuracy, ".0f")

# %% [markdown]
# What did the pre-trained model do with a target it was never asked about? On the held-out
# on-path targets other than vertex 2 ({{before.onpath_count}} graphs), its rounded prediction
# equals the distance from 1 to **2** in {{before.answers_1_2}}% of graphs and the true distance
# to the target in {{before.accuracy}}%: it answers the question it was trained on, whatever the
# target token says. After fine-tuning the true distance is hit in {{after.accuracy}}% of them.
# The histograms below show the same: before, the rows spread out (the post notes that its
# before-histogram looked deceptively good because the model still guessed integers
# {cite:p}`wang2024shortest`); after, the mass sits on the diagonal.

# %%
confusion_figure(finetune_run.snapshot_predictions[0], finetune_run.eval_labels, n_labels,
                 title="On-path targets in small graphs, before fine-tuning").show()
confusion_figure(finetune_run.snapshot_predictions[-1], finetune_run.eval_labels, n_labels,
                 title=f"On-path targets in small graphs, after {finetune_run.step} fine-tuning steps").show()

# %% [markdown]
# ## The five generalization tests
#
# The fine-tuned model now meets five distributions it was not trained on, each with its own
# seeded held-out graphs. Two keep on-path targets but use large graphs (with small target ids
# only, or any target); three ask for the distance to *any* target, in small or large graphs.
# Each test is run on the pre-trained model too, so we can tell what fine-tuning changed.
# The table's last two columns are the study's own numbers: the MSE its post reports, and the
# MSE the authors got when they reran the tests with a deeper, 11-layer model
# {cite:p}`wang2024shortest`. Both come from the study's larger graphs (up to 15 vertices, and an
# unreachable label of 15), so they do not compare with our columns digit by digit; the
# baselines below say how much of each difference the scale alone makes.

# %%
started = time.perf_counter()
results_before = evaluate_all(base.model, scale, config.test_graphs, config.seed)
results_after = evaluate_all(finetune_run.model, scale, config.test_graphs, config.seed)
seconds["generalization_tests"] = time.perf_counter() - started
generalization = summarize_generalization(results_before, results_after, scale,
                                          on_path_small_graphs=finetuning.kinds_after.on_path)
display(Markdown(generalization_table(generalization)))

# %%
# NBVAL_CHECK_OUTPUT
# The table's numbers, recorded (the prose below cites some of them).
for test in generalization.tests:
    record.fields(f"tests.{test.test.name}", test, mse_before=".4f", mse_after=".4f", accuracy_before=".3f",
                  accuracy_after=".3f")

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
display(Markdown(target_kind_table(generalization)))
error_by_target_kind_figure(results_after).show()

# %%
confusion_by_test_figure(results_after, n_labels).show()

# %% [markdown]
# ### Over seeds
#
# These tests rest on one trained model, and one model's MSEs move with its seed and even with
# the CPU's rounding: the same seed gave an on-path MSE of 0.073 on one machine and 0.156 on
# another. So the pipeline the tests depend on, pre-training and fine-tuning, is run again for
# `n_seeds` seeds in all. The first seed's base model is the one above (chapter 2's checkpoint);
# each further seed pre-trains a model of the same configuration with that seed (the code of
# chapter 2), fine-tunes it with the settings above and that seed, and meets the same held-out
# graphs of the five tests. A comparison with the study is stated below only where every seed
# agrees on it.

# %%
started = time.perf_counter()
replicate_base = (fallback_base_config(seed=config.seed, device=str(config.device), smoke=True)
                  if config.smoke else base.config)

# Beyond the five tests, each seed's models are measured by graph size and on the depth check.
analysis_settings = dict(graphs_per_size=config.graphs_per_size, per_cell=config.length_graphs_per_cell,
                         seed=config.seed, max_proposals=config.length_max_proposals)
seed_runs = [seed_run(config.seed, base.source, finetune_run, scale, config.test_graphs, config.seed,
                      seconds["base_model"] + seconds["finetuning"], base_model=base.model,
                      analysis=seed_analysis(base.config.sampler, scale, **analysis_settings))]
# The further seeds are independent runs: one worker process each (on one core each). Their base
# models are kept in results_dir (lib.paths.recipe_models), where chapter 7 finds them.
seed_runs += map_in_workers(lambda extra_seed: replicate_seed(
    replicate_base, lambda s: dataclasses.replace(finetune_config, seed=s), extra_seed, scale,
    config.test_graphs, config.seed, analysis=seed_analysis(replicate_base.sampler, scale, **analysis_settings),
    results_dir=config.results_dir), config.seeds[1:], config.workers, config.device)
seconds["seed_replicates"] = time.perf_counter() - started
seed_records = [run.record() for run in seed_runs]
spreads = spread_by_test(seed_records)
finetune_spread = SeedSpread(tuple(run.finetune_loss_after for run in seed_runs))
finetune_before_spread = SeedSpread(tuple(run.finetune_loss_before for run in seed_runs))

# %%
# NBVAL_CHECK_OUTPUT
record("seeds.n", len(seed_runs), "d")
for name, spread in spreads.items():
    record.spread(f"seeds.{name}.mse", spread.values)
    record(f"seeds.{name}.published", TESTS[name].published_mse, "g")
    # Where every seed lies against the study's MSE: above it, below it, or on both sides.
    position = position_against(spread, TESTS[name].published_mse)
    record(f"seeds.{name}.side", verdict(position, yes="above", no="below", undefined="on both sides of"))
    record(f"seeds.{name}.in_every_seed", verdict(position, yes="in every seed", no="in every seed",
                                                  undefined="across the seeds (no ordering can be stated)"))
record.spread("seeds.finetune_loss", finetune_spread.values)
record.spread("seeds.finetune_loss_before", finetune_before_spread.values)

# %% [markdown]
# Each test's MSE over the seeds, mean (min to max, SD, seeds), against the study's:
#
# - On-path small target: MSE {{seeds.onpath_small_target.mse.mean}} ({{seeds.onpath_small_target.mse.min}}
#   to {{seeds.onpath_small_target.mse.max}}, SD {{seeds.onpath_small_target.mse.sd}},
#   {{seeds.onpath_small_target.mse.n}} seeds); {{seeds.onpath_small_target.side}} the study's
#   {{seeds.onpath_small_target.published}} {{seeds.onpath_small_target.in_every_seed}}.
# - On-path target: MSE {{seeds.onpath_target.mse.mean}} ({{seeds.onpath_target.mse.min}} to
#   {{seeds.onpath_target.mse.max}}, SD {{seeds.onpath_target.mse.sd}}, {{seeds.onpath_target.mse.n}}
#   seeds); {{seeds.onpath_target.side}} the study's {{seeds.onpath_target.published}}
#   {{seeds.onpath_target.in_every_seed}}.
# - Any target in small graphs: MSE {{seeds.any_target_small_graphs.mse.mean}}
#   ({{seeds.any_target_small_graphs.mse.min}} to {{seeds.any_target_small_graphs.mse.max}}, SD
#   {{seeds.any_target_small_graphs.mse.sd}}, {{seeds.any_target_small_graphs.mse.n}} seeds);
#   {{seeds.any_target_small_graphs.side}} the study's {{seeds.any_target_small_graphs.published}}
#   {{seeds.any_target_small_graphs.in_every_seed}}.
# - Any small target in large graphs: MSE {{seeds.any_small_target_large_graphs.mse.mean}}
#   ({{seeds.any_small_target_large_graphs.mse.min}} to {{seeds.any_small_target_large_graphs.mse.max}}, SD
#   {{seeds.any_small_target_large_graphs.mse.sd}}, {{seeds.any_small_target_large_graphs.mse.n}} seeds);
#   {{seeds.any_small_target_large_graphs.side}} the study's
#   {{seeds.any_small_target_large_graphs.published}} {{seeds.any_small_target_large_graphs.in_every_seed}}.
# - Any target in large graphs: MSE {{seeds.any_target_large_graphs.mse.mean}}
#   ({{seeds.any_target_large_graphs.mse.min}} to {{seeds.any_target_large_graphs.mse.max}}, SD
#   {{seeds.any_target_large_graphs.mse.sd}}, {{seeds.any_target_large_graphs.mse.n}} seeds);
#   {{seeds.any_target_large_graphs.side}} the study's {{seeds.any_target_large_graphs.published}}
#   {{seeds.any_target_large_graphs.in_every_seed}}.
# - Fine-tuning, held-out on-path: MSE {{seeds.finetune_loss_before.mean}}
#   ({{seeds.finetune_loss_before.min}} to {{seeds.finetune_loss_before.max}}) before, then
#   {{seeds.finetune_loss.mean}} ({{seeds.finetune_loss.min}} to {{seeds.finetune_loss.max}}, SD
#   {{seeds.finetune_loss.sd}}, {{seeds.finetune_loss.n}} seeds) after.

# %% [markdown]
# The target-kind table above is one model's. Over the seeds, each cell is the mean MSE (min to
# max in brackets) of that kind of target:

# %%
display(Markdown(kind_spread_table(seed_records)))
contrast = kind_contrast(seed_records, "any_target_large_graphs")

# %% [markdown]
# ### Against two model-free baselines
#
# How good is an MSE of, say, 0.15 or 17? Two predictors that need no model put a floor and a
# ceiling on it: **answer d(1,2)**, the distance from vertex 1 to vertex 2 whatever the target
# (what a model scores if it ignores the target token and answers its pre-training question),
# and **the mean label**, the test's own mean as a constant (its MSE is the labels' variance,
# the best any constant can do). Both depend only on the graphs, so they are computed here at
# this run's scale, at the study's (graphs of up to 15 vertices, unreachable label 15), and on
# this run's graphs with the study's unreachable label, which separates the label from the graph
# size. The ratio of a test's MSE to its baseline's is what compares across scales.

# %%
baselines_book = test_baselines(scale, config.test_graphs, config.seed, config.device)
baselines_study = test_baselines(PUBLISHED_SCALE, config.test_graphs, config.seed, config.device)
baselines_label = test_baselines(dataclasses.replace(scale, unreachable_label=PUBLISHED_SCALE.unreachable_label),
                                 config.test_graphs, config.seed, config.device)
comparisons = compare_with_baselines(spreads, baselines_book, baselines_study, baselines_label)
display(Markdown(baseline_table(comparisons)))
for c in comparisons:
    record(f"base.{c.test}.title", c.title)
    record(f"base.{c.test}.title_lower", c.title.lower())
    record.spread(f"base.{c.test}.ratio", c.ratio_to_baseline.values, ".2f")
    record(f"base.{c.test}.d12", c.book.mse_distance_1_2, ".3g")
    record(f"base.{c.test}.mean_label_ratio", c.model.mean / c.book.mse_mean_label, ".2f")
    record(f"base.{c.test}.mean_label", c.book.mse_mean_label, ".3g")
    record(f"base.{c.test}.study_ratio", c.study_ratio_to_baseline, ".2f")
    record(f"base.{c.test}.study_d12", c.study.mse_distance_1_2, ".3g")
    record(f"base.{c.test}.published", c.published, ".4g")
    record(f"base.{c.test}.model_mean", c.model.mean, ".3g")
    record(f"base.{c.test}.gap_scale", 100 * c.share_of_gap_from_scale, ".0f")
    record(f"base.{c.test}.gap_label", 100 * c.share_of_gap_from_label, ".0f")
any_target_comparisons = [c for c in comparisons if TESTS[c.test].task == "any"]
assert [c.test for c in any_target_comparisons] == ['any_target_small_graphs', 'any_small_target_large_graphs', 'any_target_large_graphs']
record("base.any_accounted", sum(c.scale_accounts for c in any_target_comparisons), "d")
record("base.any_tests", len(any_target_comparisons), "d")

# %% [markdown]
# - *{{base.onpath_small_target.title}}*: the fine-tuned model's MSE is
#   {{base.onpath_small_target.ratio.min}} to {{base.onpath_small_target.ratio.max}} times that of answering
#   d(1,2) ({{base.onpath_small_target.d12}}) and {{base.onpath_small_target.mean_label_ratio}} times that
#   of the constant mean label ({{base.onpath_small_target.mean_label}}); the study's MSE is
#   {{base.onpath_small_target.study_ratio}} times its own d(1,2) baseline
#   ({{base.onpath_small_target.study_d12}}).
# - *{{base.onpath_target.title}}*: the fine-tuned model's MSE is {{base.onpath_target.ratio.min}} to
#   {{base.onpath_target.ratio.max}} times that of answering d(1,2) ({{base.onpath_target.d12}}) and
#   {{base.onpath_target.mean_label_ratio}} times that of the constant mean label
#   ({{base.onpath_target.mean_label}}); the study's MSE is {{base.onpath_target.study_ratio}} times its own
#   d(1,2) baseline ({{base.onpath_target.study_d12}}).
# - *{{base.any_target_small_graphs.title}}*: the fine-tuned model's MSE is
#   {{base.any_target_small_graphs.ratio.min}} to {{base.any_target_small_graphs.ratio.max}} times that of
#   answering d(1,2) ({{base.any_target_small_graphs.d12}}) and
#   {{base.any_target_small_graphs.mean_label_ratio}} times that of the constant mean label
#   ({{base.any_target_small_graphs.mean_label}}); the study's MSE is
#   {{base.any_target_small_graphs.study_ratio}} times its own d(1,2) baseline
#   ({{base.any_target_small_graphs.study_d12}}).
# - *{{base.any_small_target_large_graphs.title}}*: the fine-tuned model's MSE is
#   {{base.any_small_target_large_graphs.ratio.min}} to {{base.any_small_target_large_graphs.ratio.max}}
#   times that of answering d(1,2) ({{base.any_small_target_large_graphs.d12}}) and
#   {{base.any_small_target_large_graphs.mean_label_ratio}} times that of the constant mean label
#   ({{base.any_small_target_large_graphs.mean_label}}); the study's MSE is
#   {{base.any_small_target_large_graphs.study_ratio}} times its own d(1,2) baseline
#   ({{base.any_small_target_large_graphs.study_d12}}).
# - *{{base.any_target_large_graphs.title}}*: the fine-tuned model's MSE is
#   {{base.any_target_large_graphs.ratio.min}} to {{base.any_target_large_graphs.ratio.max}} times that of
#   answering d(1,2) ({{base.any_target_large_graphs.d12}}) and
#   {{base.any_target_large_graphs.mean_label_ratio}} times that of the constant mean label
#   ({{base.any_target_large_graphs.mean_label}}); the study's MSE is
#   {{base.any_target_large_graphs.study_ratio}} times its own d(1,2) baseline
#   ({{base.any_target_large_graphs.study_d12}}).

# %% [markdown]
# Graph size and the unreachable label, measured by the d(1,2) baseline:
# {{base.any_target_small_graphs.title_lower}}: the study {{base.any_target_small_graphs.published}} against
# {{base.any_target_small_graphs.model_mean}} here; answering d(1,2) gives
# {{base.any_target_small_graphs.study_d12}} at the study's scale and {{base.any_target_small_graphs.d12}}
# here, {{base.any_target_small_graphs.gap_scale}}% of the gap ({{base.any_target_small_graphs.gap_label}}%
# from the label alone); {{base.any_small_target_large_graphs.title_lower}}: the study
# {{base.any_small_target_large_graphs.published}} against {{base.any_small_target_large_graphs.model_mean}}
# here; answering d(1,2) gives {{base.any_small_target_large_graphs.study_d12}} at the study's scale and
# {{base.any_small_target_large_graphs.d12}} here, {{base.any_small_target_large_graphs.gap_scale}}% of the
# gap ({{base.any_small_target_large_graphs.gap_label}}% from the label alone);
# {{base.any_target_large_graphs.title_lower}}: the study {{base.any_target_large_graphs.published}} against
# {{base.any_target_large_graphs.model_mean}} here; answering d(1,2) gives
# {{base.any_target_large_graphs.study_d12}} at the study's scale and {{base.any_target_large_graphs.d12}}
# here, {{base.any_target_large_graphs.gap_scale}}% of the gap ({{base.any_target_large_graphs.gap_label}}%
# from the label alone). On {{base.any_accounted}} of {{base.any_tests}} any-target tests the study's ratio
# to its baseline lies inside this book's range over seeds, so there graph size and the unreachable label
# account for the whole difference.

# %% [markdown]
# Most on-path targets are vertex 2 itself, the pre-training target, which the base model
# already answered before fine-tuning. Among the on-path targets of each data set (vertex 2
# included), the share that are vertex 2:

# %%
finetune_vertex_2_share = share_with_target(example_tokens, 2)
display(Markdown(vertex_2_table(finetune_vertex_2_share, comparisons)))

# %% [markdown]
# Does the answer on the *other* on-path targets stay right as graphs grow past the
# fine-tuning sizes? The fine-tuned model, on on-path targets other than vertex 2 (any target id),
# one graph size at a time. Larger graphs change two things at once: the size, and the target
# ids, since ids above `small_n_max` (never fine-tuning targets) occur only in graphs that have
# that many vertices. So each larger size is also split by target id, as in the table above, and
# the graph size alone is read on the targets whose ids fine-tuning used. (The rows were measured
# with each seed's models in the seeds cell above.)

# %%
sizes = size_trend(seed_runs[0].analysis["onpath_by_graph_size"], scale.small_n_max)
size_seeds = size_trends_over_seeds(seed_records, scale.small_n_max)
# A size with no larger ids (all its targets are fine-tuning ids) has no split: "-" in those cells.
display(Markdown(markdown_table(
    ["graph size", "MSE", "targets", f"MSE, ids up to {scale.small_n_max}", f"targets, ids up to {scale.small_n_max}",
     "MSE, larger ids", "targets, larger ids"],
    [[r["n_vertices"], f"{r['mse']:.3g}", r["count"],
      *((f"{r['small_id']['mse']:.3g}", r["small_id"]["count"], f"{r['large_id']['mse']:.3g}", r["large_id"]["count"])
        if r.get("large_id") and r["large_id"]["count"] else ("-",) * 4)]
     for r in sizes.rows if r["count"]])))
record("sizes.small_n_max", sizes.small_n_max, "d")
for name in ("mse_small", "mse_large", "mse_large_small_ids", "mse_large_large_ids", "growth_small_ids"):
    record(f"sizes.{name}", getattr(sizes, name), ".3g")
for name in ("count_small", "count_large", "count_large_small_ids", "count_large_large_ids"):
    record(f"sizes.{name}", getattr(sizes, name), ",")
record("sizes.verdict", verdict(sizes.stays_right_small_ids,
                                yes="at most twice as high: the answer largely stays right as graphs grow",
                                no="more than twice as high: the answer does not stay right as graphs grow, "
                                   "and new target ids are not the whole reason"))
record("size_seeds.seeds", size_seeds.seeds, "d")
for name in ("mse_small", "mse_large_small_ids", "mse_large_large_ids", "growth_small_ids"):
    record.spread(f"size_seeds.{name}", getattr(size_seeds, name).values)
record("size_seeds.not_staying_right", size_seeds.seeds_not_staying_right, "d")
record("size_seeds.not_staying_right_in_seeds", in_seeds(size_seeds.seeds_not_staying_right, size_seeds.seeds))
record("size_seeds.new_ids_worse", size_seeds.seeds_new_ids_worse, "d")

# %% [markdown]
# The table gives the fine-tuned model's MSE on on-path targets other than vertex 2 by graph size (first
# seed). Pooled, it is {{sizes.mse_small}} on graphs of up to {{sizes.small_n_max}} vertices (the
# fine-tuning sizes, {{sizes.count_small}} targets, every id up to {{sizes.small_n_max}}) and
# {{sizes.mse_large}} on larger ones ({{sizes.count_large}} targets). On the larger graphs, targets with ids
# up to {{sizes.small_n_max}} (ids fine-tuning used) score {{sizes.mse_large_small_ids}}
# ({{sizes.count_large_small_ids}} targets) and targets with larger ids (never fine-tuning targets)
# {{sizes.mse_large_large_ids}} ({{sizes.count_large_large_ids}}). With the ids held to the fine-tuning
# ones, the MSE on the larger graphs is {{sizes.growth_small_ids}} times that on the fine-tuning sizes,
# {{sizes.verdict}}.
#
# Over {{size_seeds.seeds}} seeds of pre-training and fine-tuning, the MSE on these targets is
# {{size_seeds.mse_small.mean}} ({{size_seeds.mse_small.min}} to {{size_seeds.mse_small.max}}, SD
# {{size_seeds.mse_small.sd}}) on the fine-tuning sizes and, on larger graphs,
# {{size_seeds.mse_large_small_ids.mean}} ({{size_seeds.mse_large_small_ids.min}} to
# {{size_seeds.mse_large_small_ids.max}}, SD {{size_seeds.mse_large_small_ids.sd}}) with the target ids
# fine-tuning used and {{size_seeds.mse_large_large_ids.mean}} ({{size_seeds.mse_large_large_ids.min}} to
# {{size_seeds.mse_large_large_ids.max}}, SD {{size_seeds.mse_large_large_ids.sd}}) with larger ids. With
# the ids held to the fine-tuning ones the larger graphs' MSE is {{size_seeds.growth_small_ids.min}} to
# {{size_seeds.growth_small_ids.max}} times that of the fine-tuning sizes, more than twice in
# {{size_seeds.not_staying_right}} of {{size_seeds.seeds}} seeds; new ids score worse than fine-tuning ids
# in {{size_seeds.new_ids_worse}} of {{size_seeds.seeds}}.


# %%
# The on-path test with any label and the any-target test on large graphs, read most below.
on_path_test, any_target_test = generalization.onpath_target, generalization.any_target_large_graphs
onpath_gap, onpath_ids = generalization.onpath_gap, generalization.onpath_target_ids
onpath_order = count_higher(spreads, "onpath_target", "onpath_small_target")
# On-path targets other than vertex 2: small fine-tuning graphs, large graphs, large graphs before.
record.fields("read.on_path_small_graphs", generalization.on_path_small_graphs, mse=".4f", accuracy=".3f")
record.fields("read.on_path_large", on_path_test.kinds_after.on_path, mse=".4f", accuracy=".3f")
record.fields("read.on_path_large_before", on_path_test.kinds_before.on_path, mse=".3f", accuracy=".3f")
record("read.loss_grows", verdict(generalization.on_path_loss_grows, yes="grows", no="does not grow"))
# Small target ids against any target: over the seeds, and the first seed's gap and split by id.
record.fields("read.onpath_order", onpath_order, higher="d", seeds="d")
record.fields("read.onpath_gap", onpath_gap, difference=".4f", low=".4f", high=".4f")
record("read.onpath_gap.separates", verdict(
    onpath_gap.excludes_zero, yes="so the two tests separate at this sample size",
    no="an interval that contains zero: at this sample size the two tests do not separate"))
record("read.test_graphs", config.test_graphs, ",")
record.fields("read.onpath_ids", onpath_ids, count_large="d", id_max="d", mse_large=".4f", mse_small=".4f",
              count_small="d")
# The any-target tests, and the last one by kind of target (this model, then over the seeds).
for test in generalization.tests[2:]:
    record(f"read.{test.test.name}.mse_after", test.mse_after, ".2f")
record("read.any_target_large_graphs.mse_before", any_target_test.mse_before, ".2f")
record("read.any_target_large_graphs.rose", verdict(generalization.any_target_large_mse_rose,
                                                    yes="higher", no="lower"))
kinds_after = any_target_test.kinds_after
record("read.better", verdict(contrast.seeds_far_better == contrast.seeds, yes="far better", no="better"))
record.fields("read.any_large.on_path", kinds_after.on_path, mse=".3f", count="d")
record("read.factor", contrast.factor, "g")
record("read.far_better_in_seeds", in_seeds(contrast.seeds_far_better, contrast.seeds))
record.fields("read.any_large.off_path", kinds_after.off_path, mean_prediction=".2f", mean_label=".2f", mse=".2f")
record.fields("read.any_large.unreachable", kinds_after.unreachable, mean_prediction=".2f", mse=".2f")
record("read.any_large.share_unreachable", 100 * any_target_test.share_unreachable, ".0f")
record("read.any_large.off_path.answers_1_2", 100 * kinds_after.off_path.answers_1_2_distance, ".0f")
record("read.any_large.unreachable.answers_1_2", 100 * kinds_after.unreachable.answers_1_2_distance, ".0f")
for kind in ("off_path", "unreachable"):
    answers = getattr(contrast, f"{kind}_answers_1_2")
    record.spread(f"read.contrast.{kind}_answers_1_2", [100 * v for v in (answers.values if answers else ())], ".0f")
record("read.contrast.seeds", contrast.seeds, "d")
record("read.stays_right", verdict(sizes.stays_right_small_ids, yes="and about as well on larger graphs",
                                   no="though far less well on larger graphs"))

# %% [markdown]
# **Reading the table.** All numbers are from this run, at the scale above.
#
# - *On-path targets on larger graphs.* On large graphs the fine-tuned model scores MSE
#   {{tests.onpath_small_target.mse_after}} with small target ids and {{tests.onpath_target.mse_after}} with
#   any target (the pre-trained model: {{tests.onpath_small_target.mse_before}} and
#   {{tests.onpath_target.mse_before}}). Most of these targets are vertex 2 itself, so count only the
#   others: their MSE is {{read.on_path_small_graphs.mse}} on the small fine-tuning graphs and
#   {{read.on_path_large.mse}} on large graphs, with accuracy {{read.on_path_small_graphs.accuracy}} and
#   {{read.on_path_large.accuracy}} (before fine-tuning, on large graphs: MSE
#   {{read.on_path_large_before.mse}}, accuracy {{read.on_path_large_before.accuracy}}). Fine-tuning helps
#   on large graphs too, with a loss that {{read.loss_grows}} with the graph; the next point splits that
#   loss by the target's vertex id, and the per-size check above holds the id to the fine-tuning ones: there
#   the MSE on larger graphs is {{size_seeds.growth_small_ids.min}} to {{size_seeds.growth_small_ids.max}}
#   times that on the fine-tuning sizes over the {{size_seeds.seeds}} seeds.
# - *Small target ids against any target.* The post found the small-target test easier than the any-target
#   one (0.1020 against 0.1451) and called it good and moderate generalization {cite:p}`wang2024shortest`.
#   Over the seeds the any-target test is the higher in {{read.onpath_order.higher}} of
#   {{read.onpath_order.seeds}}. In the first seed its MSE is higher by {{read.onpath_gap.difference}} (95%
#   interval {{read.onpath_gap.low}} to {{read.onpath_gap.high}}; {{read.test_graphs}} graphs per test),
#   {{read.onpath_gap.separates}}. Inside the any-target test, the {{read.onpath_ids.count_large}} graphs
#   whose target has a vertex id above {{read.onpath_ids.id_max}} (never a fine-tuning target) score MSE
#   {{read.onpath_ids.mse_large}}, against {{read.onpath_ids.mse_small}} for the
#   {{read.onpath_ids.count_small}} with a smaller id.
# - *Any-target tests fail*, with MSEs of {{read.any_target_small_graphs.mse_after}},
#   {{read.any_small_target_large_graphs.mse_after}} and {{read.any_target_large_graphs.mse_after}}. The
#   split by target kind says why. On the last test, targets that happen to lie on a shortest 1-2 path are
#   answered {{read.better}} than the rest (MSE {{read.any_large.on_path.mse}} on
#   {{read.any_large.on_path.count}} graphs; more than {{read.factor}} times lower than both other kinds
#   {{read.far_better_in_seeds}}). Reachable targets off the path get a mean prediction of
#   {{read.any_large.off_path.mean_prediction}} against a mean true distance of
#   {{read.any_large.off_path.mean_label}} (MSE {{read.any_large.off_path.mse}}), and unreachable targets a
#   mean prediction of {{read.any_large.unreachable.mean_prediction}} against the label
#   {{scale.unreachable_label}} (MSE {{read.any_large.unreachable.mse}}, on
#   {{read.any_large.share_unreachable}}% of the graphs). What does the model answer instead? Often the
#   distance from 1 to 2: its rounded prediction equals that distance (or "unreachable" when 2 cannot be
#   reached) for {{read.any_large.off_path.answers_1_2}}% of the off-path targets and
#   {{read.any_large.unreachable.answers_1_2}}% of the unreachable ones in this model, and
#   {{read.contrast.off_path_answers_1_2.min}}% to {{read.contrast.off_path_answers_1_2.max}}% and
#   {{read.contrast.unreachable_answers_1_2.min}}% to {{read.contrast.unreachable_answers_1_2.max}}% over
#   the {{read.contrast.seeds}} seeds. Where fine-tuning taught nothing, the model falls back on its
#   pre-training answer.
# - *What the training explains.* Every fine-tuning target lies on a shortest 1-2 path and is reachable, so
#   nothing in fine-tuning rewarded a distance to a vertex off that path or an "unreachable" answer for any
#   target but vertex 2. The model learned to answer the question it was asked, the position of a vertex
#   along the 1-2 path (on targets other than vertex 2: MSE {{sizes.mse_small}} on the fine-tuning sizes,
#   {{sizes.mse_large_small_ids}} on larger graphs with the same target ids), {{read.stays_right}}; it did
#   not become a general distance calculator. Fine-tuning left the any-target MSE on large graphs
#   {{read.any_target_large_graphs.rose}} than before ({{read.any_target_large_graphs.mse_before}} before,
#   {{read.any_target_large_graphs.mse_after}} after): it was never good at these targets to begin with.
# - *Against the study, over {{seeds.n}} seeds.* {{base.onpath_small_target.title_lower}}:
#   {{seeds.onpath_small_target.mse.mean}} ({{seeds.onpath_small_target.mse.min}} to
#   {{seeds.onpath_small_target.mse.max}}, SD {{seeds.onpath_small_target.mse.sd}},
#   {{seeds.onpath_small_target.mse.n}} seeds), {{seeds.onpath_small_target.side}} the study's
#   {{seeds.onpath_small_target.published}} {{seeds.onpath_small_target.in_every_seed}};
#   {{base.onpath_target.title_lower}}: {{seeds.onpath_target.mse.mean}} ({{seeds.onpath_target.mse.min}} to
#   {{seeds.onpath_target.mse.max}}, SD {{seeds.onpath_target.mse.sd}}, {{seeds.onpath_target.mse.n}}
#   seeds), {{seeds.onpath_target.side}} the study's {{seeds.onpath_target.published}}
#   {{seeds.onpath_target.in_every_seed}}; {{base.any_target_small_graphs.title_lower}}:
#   {{seeds.any_target_small_graphs.mse.mean}} ({{seeds.any_target_small_graphs.mse.min}} to
#   {{seeds.any_target_small_graphs.mse.max}}, SD {{seeds.any_target_small_graphs.mse.sd}},
#   {{seeds.any_target_small_graphs.mse.n}} seeds), {{seeds.any_target_small_graphs.side}} the study's
#   {{seeds.any_target_small_graphs.published}} {{seeds.any_target_small_graphs.in_every_seed}};
#   {{base.any_small_target_large_graphs.title_lower}}: {{seeds.any_small_target_large_graphs.mse.mean}}
#   ({{seeds.any_small_target_large_graphs.mse.min}} to {{seeds.any_small_target_large_graphs.mse.max}}, SD
#   {{seeds.any_small_target_large_graphs.mse.sd}}, {{seeds.any_small_target_large_graphs.mse.n}} seeds),
#   {{seeds.any_small_target_large_graphs.side}} the study's
#   {{seeds.any_small_target_large_graphs.published}} {{seeds.any_small_target_large_graphs.in_every_seed}};
#   {{base.any_target_large_graphs.title_lower}}: {{seeds.any_target_large_graphs.mse.mean}}
#   ({{seeds.any_target_large_graphs.mse.min}} to {{seeds.any_target_large_graphs.mse.max}}, SD
#   {{seeds.any_target_large_graphs.mse.sd}}, {{seeds.any_target_large_graphs.mse.n}} seeds),
#   {{seeds.any_target_large_graphs.side}} the study's {{seeds.any_target_large_graphs.published}}
#   {{seeds.any_target_large_graphs.in_every_seed}}. The study's graphs are larger (up to
#   {{published_scale.large_n_max}} vertices, against {{scale.large_n_max}}) and its unreachable label is
#   {{published_scale.unreachable_label}} (here {{scale.unreachable_label}}), so these orderings are not
#   like for like; the ratios to the d(1,2) baseline above are. The paragraph after the baseline table says
#   how much of each any-target gap graph size and the unreachable label account for.

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
# Chapter 2's model on its own largest graphs, one cell per distance (measured in the seeds cell).
depth_cells_by_seed = [[Cell(**r) for r in run.analysis["depth_check"]] for run in seed_runs]
depth_cells = depth_cells_by_seed[0]
seconds["length_evaluation"] = time.perf_counter() - started
length = summarize_length_study(cells, split, length_labels, depth_cells, base.config)

# %% [markdown]
# That is one trained model. The same study is run again from `length_n_seeds - 1` further
# seeds (the same training settings, the same test graphs), so that what follows can say which of
# its numbers hold in every seed.

# %%
started = time.perf_counter()
# The further seeds are independent runs: one worker process each (on one core each). Their base
# models are kept in results_dir (lib.paths.recipe_models), where chapter 7 finds them.
length_study = functools.partial(
    length_study_of_seed, config=length_config, split=split, per_cell=config.length_graphs_per_cell,
    test_seed=config.seed, max_proposals=config.length_max_proposals, training_labels=length_labels,
    depth_cells=depth_cells, depth_config=base.config)
length_summaries = [length, *map_in_workers(length_study, config.length_seeds[1:], config.workers, config.device)]
length_seeds = LengthSeeds(config.length_seeds, tuple(length_summaries))
seconds["length_seeds"] = time.perf_counter() - started
# Chapter 2's model's highest mean prediction in each seed, and in how many seeds it lies more
# than half a hop above the length-study model's highest (in any of its seeds).
depth_tops = [max((c.mean_prediction for c in cells_of_seed), default=float("nan"))
              for cells_of_seed in depth_cells_by_seed]
depth_further = sum(top > length_seeds.top_prediction.high + 0.5 for top in depth_tops)
# Prediction against training frequency, per true distance (read in the section "Where the data
# stops, or where it gets rare?"): the training labels of chapter 2's model come from its sampler.
chapter_2_labels = {}
for sampler in {base.config.sampler, replicate_base.sampler}:
    chapter_2_labels[sampler] = sample_with_options(
        2**17, sampler, make_generator(config.seed + 23, config.device))[1]
length_models = [under_prediction(f"length study, seed {s}", list(summary.cells), length_labels,
                                  split.distance_train_max)
                 for s, summary in zip(length_seeds.seeds, length_seeds.summaries)]
depth_models = [under_prediction(f"chapter 2's model, seed {run.seed}", cells_of_seed,
                                 chapter_2_labels[base.config.sampler if k == 0 else replicate_base.sampler],
                                 (base.config.sampler if k == 0 else replicate_base.sampler).n_max - 1)
                for k, (run, cells_of_seed) in enumerate(zip(seed_runs, depth_cells_by_seed))]
frequency = compare_frequency([*length_models, *depth_models])

# %%
# NBVAL_CHECK_OUTPUT
for field in GROUP_FIELDS.values():
    record.fields(f"length.{field}", getattr(length, field), mse=".4f", accuracy=".3f", count="d")
record("length_seeds.seeds", len(length_seeds.seeds), "d")
for name in ("training_sizes_mse", "larger_graphs_seen_distances_mse", "longer_distances_mse", "top_prediction"):
    record.spread(f"length_seeds.{name}", getattr(length_seeds, name).values)

# %% [markdown]
# By group of cells, the length-study model scores MSE {{length.training_sizes.mse}} with accuracy
# {{length.training_sizes.accuracy}} on the training sizes ({{length.training_sizes.count}} graphs), MSE
# {{length.larger_graphs_seen_distances.mse}} with accuracy {{length.larger_graphs_seen_distances.accuracy}}
# on larger graphs at distances seen in training ({{length.larger_graphs_seen_distances.count}} graphs) and
# MSE {{length.longer_distances.mse}} with accuracy {{length.longer_distances.accuracy}} on larger graphs at
# longer distances ({{length.longer_distances.count}} graphs). Over {{length_seeds.seeds}} seeds: MSE
# {{length_seeds.training_sizes_mse.mean}} ({{length_seeds.training_sizes_mse.min}} to
# {{length_seeds.training_sizes_mse.max}}, SD {{length_seeds.training_sizes_mse.sd}}) on the training sizes,
# {{length_seeds.larger_graphs_seen_distances_mse.mean}}
# ({{length_seeds.larger_graphs_seen_distances_mse.min}} to
# {{length_seeds.larger_graphs_seen_distances_mse.max}}, SD
# {{length_seeds.larger_graphs_seen_distances_mse.sd}}) on larger graphs at seen distances,
# {{length_seeds.longer_distances_mse.mean}} ({{length_seeds.longer_distances_mse.min}} to
# {{length_seeds.longer_distances_mse.max}}, SD {{length_seeds.longer_distances_mse.sd}}) on longer
# distances; highest mean prediction {{length_seeds.top_prediction.mean}}
# ({{length_seeds.top_prediction.min}} to {{length_seeds.top_prediction.max}}, SD
# {{length_seeds.top_prediction.sd}}).

# %%
length_heatmap_figure(cells, split).show()

# %%
loss_by_size_figure(cells, split).show()

# %%
loss_by_distance_figure(cells, split).show()

# %%
for row in length.short_distance_rows:
    record.fields(f"outside.distance_{row.distance}", row, training_size="d", largest_size="d",
                  mse_at_training_size=".4f", mse_at_largest_size=".4f")
record("outside.seen_mse", length.larger_graphs_seen_distances.mse, ".3f")
record("outside.training_mse", length.training_sizes.mse, ".3f")
record("outside.longer_mse", length.longer_distances.mse, ".2f")
record("outside.longer_accuracy", length.longer_distances.accuracy, ".3f")
record("outside.longer_ten_times_in_seeds",
       in_seeds(length_seeds.seeds_longer_ten_times_worse, len(length_seeds.seeds)))
record("outside.top_prediction", length.top_prediction, ".2f")
record("outside.distance_train_max", split.distance_train_max, "d")
# The mean prediction at the longest training length, one per training size that has it.
record("outside.longest_training", verdict(
    bool(length.longest_training_cells), no="not measured", yes="predicted at " + ", ".join(
        f"{c.mean_prediction:.2f} (n = {c.n_vertices})" for c in length.longest_training_cells)))
record("outside.longest_training_share", 100 * length.share_longest_training_distance, ".1f")
# The depth check: chapter 2's model on its own largest graphs, against the length-study model.
record.fields("depth", length, depth_n_layers="d", depth_n_max="d")
record("depth.mean_predictions", ", ".join(f"distance {c.distance}: {c.mean_prediction:.2f}"
                                           for c in length.depth_cells))
record.spread("depth.top_prediction", depth_tops)
record("depth.further_in_seeds", in_seeds(depth_further, len(depth_models)))
record("depth.inside_in_seeds", in_seeds(sum(m.starts_inside_range for m in depth_models), len(depth_models)))
record("depth.reading", verdict(
    depth_further > 0,
    yes=f"A model of this depth can output longer distances than the length-study model "
        f"{record['depth.further_in_seeds'].text}, so depth alone does not set where the length-study model "
        f"stops. Chapter 2's model, too, falls more than half a hop short on a distance inside its training "
        f"range {record['depth.inside_in_seeds'].text}: the next section reads that.",
    no="Here that model does not reach further than the length-study model, so depth may be the limit too."))

# %% [markdown]
# **What the model does outside its training range** (numbers from this run):
#
# - *Larger graphs, familiar distances.* At a fixed short distance the loss changes with the graph size
#   (distance 1: MSE {{outside.distance_1.mse_at_training_size}} at {{outside.distance_1.training_size}}
#   vertices, {{outside.distance_1.mse_at_largest_size}} at {{outside.distance_1.largest_size}}; distance 2:
#   MSE {{outside.distance_2.mse_at_training_size}} at {{outside.distance_2.training_size}} vertices,
#   {{outside.distance_2.mse_at_largest_size}} at {{outside.distance_2.largest_size}}; distance 3: MSE
#   {{outside.distance_3.mse_at_training_size}} at {{outside.distance_3.training_size}} vertices,
#   {{outside.distance_3.mse_at_largest_size}} at {{outside.distance_3.largest_size}}), but far less than it
#   changes with the distance (next point). Over all larger graphs and distances seen in training the MSE is
#   {{outside.seen_mse}}, against {{outside.training_mse}} on the training sizes.
# - *Longer distances.* On paths longer than any training path the MSE is {{outside.longer_mse}} with
#   accuracy {{outside.longer_accuracy}} ({{length_seeds.longer_distances_mse.mean}}
#   ({{length_seeds.longer_distances_mse.min}} to {{length_seeds.longer_distances_mse.max}}, SD
#   {{length_seeds.longer_distances_mse.sd}}, {{length_seeds.longer_distances_mse.n}} seeds) over the seeds,
#   more than 10 times the training sizes' MSE {{outside.longer_ten_times_in_seeds}}). The right panel above
#   shows why: the mean prediction levels off and never exceeds {{outside.top_prediction}} (over the seeds:
#   {{length_seeds.top_prediction.mean}} ({{length_seeds.top_prediction.min}} to
#   {{length_seeds.top_prediction.max}}, SD {{length_seeds.top_prediction.sd}},
#   {{length_seeds.top_prediction.n}} seeds)), whatever the true distance. Even the longest training length,
#   {{outside.distance_train_max}}, is {{outside.longest_training}}: it made up only
#   {{outside.longest_training_share}}% of the training paths.
# - *Depth.* Chapter 2's model has the same number of layers ({{depth.depth_n_layers}}) and was trained on
#   graphs of up to {{depth.depth_n_max}} vertices, where longer paths occur. On its own largest graphs its
#   mean predictions are {{depth.mean_predictions}} (its highest mean prediction over the seeds:
#   {{depth.top_prediction.mean}} ({{depth.top_prediction.min}} to {{depth.top_prediction.max}}, SD
#   {{depth.top_prediction.sd}}, {{depth.top_prediction.n}} seeds)). {{depth.reading}}

# %% [markdown]
# ### Where the data stops, or where it gets rare?
#
# The levelling off has a rival explanation. The longest training paths are the rarest ones, so a
# model may fail on them because it saw few of them, not because they are the longest. Where the
# under-prediction begins tells the two apart: at the first length past the training range (the
# data stopped), or inside the range at a length whose share of the training paths is small (the
# data got rare). The table sets each true distance's share of the training paths beside the mean
# prediction there, pooled over graph sizes, for the length-study model (every seed) and for
# chapter 2's model on its own largest graphs (every seed of the replicates above); outside a
# model's training range the share is 0.

# %%
display(Markdown(frequency_table(length_models, depth_models)))
display(Markdown(markdown_table(
    ["model", "first under-predicted distance", "its share of training paths", "inside the training range"],
    [[family, d, f"{100 * share_:.2g}%", verdict(inside, yes="yes", no="no")]
     for family, models in (("length study", length_models), ("chapter 2's model", depth_models))
     for d, share_, inside in onsets(models).onsets])))
record("freq.tolerance", frequency.models[0].tolerance, "g")
record("freq.length_seeds", len(length_models), "d")
record("freq.length_range_end", length_models[0].distance_train_max, "d")
record("freq.length_without", onsets(length_models).missing, "d")
record("freq.depth_seeds", len(depth_models), "d")
record("freq.depth_range_end", depth_models[0].distance_train_max, "d")
record("freq.depth_without", onsets(depth_models).missing, "d")
record("freq.models", len(frequency.models), "d")
record("freq.inside_count", frequency.inside_range_count, "d")
record("freq.at_end_count", frequency.at_range_end_count, "d")
record("freq.lowest_share_predicted", 100 * frequency.lowest_share_predicted, ".2g")
record("freq.highest_share_short", 100 * frequency.highest_share_short, ".2g")
record("freq.separates", verdict(frequency.share_separates, yes="One training share separates",
                                 no="No one training share separates"))
record("freq.supports", {
    "rare data": "The numbers support the rival, *rare data*: the predictions fall behind where the data gets "
                 "rare, before it stops. Since in every model the longest training lengths are also the rarest, "
                 "these runs cannot say whether a model whose longest training paths were common would stop at "
                 "the end of its range.",
    "data stopped": "The numbers support *the data stopped*: the predictions fall behind exactly where the "
                    "training paths end.",
    "mixed": "Neither explanation fits every model: the under-prediction does not start at the end of the "
             "range in every model, nor only at lengths that one training share marks as rare.",
}[frequency.supports])

# %% [markdown]
# The second table lists, per model family, where a mean prediction first falls more than
# {{freq.tolerance}} hop short of the true distance: in the length-study model
# ({{freq.length_seeds}} seeds; its training range ends at {{freq.length_range_end}}; no
# under-prediction in {{freq.length_without}} of them) and in chapter 2's model ({{freq.depth_seeds}}
# seeds; range ends at {{freq.depth_range_end}}; no under-prediction in {{freq.depth_without}}). In
# {{freq.inside_count}} of {{freq.models}} models it starts inside the training range, in
# {{freq.at_end_count}} at the first distance past it. {{freq.separates}} the distances predicted
# within {{freq.tolerance}} hop from the under-predicted ones: the lowest training share of a
# distance predicted within it is {{freq.lowest_share_predicted}}% of its model's training paths, the
# highest of an under-predicted one {{freq.highest_share_short}}%, inside the range or outside it.
# {{freq.supports}}

# %% [markdown]
# **How this relates to the length-generalization literature.** The RASP-generalization
# conjecture {cite:p}`zhou2023rasp` says a transformer tends to length-generalize on a task when the
# task has a short RASP program that works for every input length. For a *fixed* distance k,
# "is vertex 2 within k hops of vertex 1?" is such a program: k rounds of "attend to the edges
# that touch the current frontier", whatever the number of edges. Computing the distance for
# *any* length is not: breadth-first search needs one round per hop, so the number of
# sequential steps grows with the answer, while a trained model has a fixed depth and has only
# been rewarded for the outputs in its data. The conjecture is thus consistent with the split
# seen above: short distances carry over to graphs with many more edge tokens, and distances
# longer than the training paths do not. It does not by itself explain the failure on the
# longest, rarest training lengths that the frequency comparison above reports. The hand-built transformer of chapter 1 makes the point from the other side:
# it is exact, but only because it has one layer per possible hop.
#
# The formal framework of {cite:p}`huang2024lengthgen` analyses causal transformers with learnable
# *absolute positional encodings*: it characterizes which functions can be identified from
# sufficiently long training inputs (under a norm-based regularizer), which proves length
# generalization possible for a rich family of tasks and predicts failure elsewhere. With
# positional encodings, a longer input also brings positions never trained on. Our model has
# no positional encodings at all, and the relabelling makes every vertex id familiar, so
# neither unseen positions nor unseen tokens can explain a failure here. What remains is the
# need to chain more hops, and to output larger distances, than the training examples asked
# for, or asked for often: the frequency comparison above says which of the two the runs favour. The milder growth of the loss with size at a fixed distance is consistent with
# attention averaging over more edge tokens in a larger graph, though we have not tested that
# mechanism directly.

# %% [markdown]
# ## Summary

# %%
record("finetune.learning_rate", config.finetune_learning_rate, "g")
record("finetune.weight_decay", config.finetune_weight_decay, "g")
record("summary.finetune_effect", direction(finetuning.loss_after, finetuning.loss_before, above="raises",
                                            below="lowers", equal="does not change"))
record("summary.order", verdict(
    onpath_order.higher == onpath_order.seeds,
    yes="the post's ordering of the two on-path tests holds in every seed, as does its contrast with the "
        "any-target tests",
    no="the post's contrast between on-path and any-target tests holds, but the two on-path tests do not keep "
       "one order over the seeds"))
record.fields("length", split, n_train_max="d", n_test_max="d")
record.spread("summary.top_prediction", length_seeds.top_prediction.values, ".2g")
record("summary.favours", {"rare data": "*rare data*", "data stopped": "*the data stopped*",
                           "mixed": "neither explanation alone"}[frequency.supports])
record("summary.favours_over", {"rare data": "over the data stopping", "data stopped": "over rare data",
                                "mixed": ""}[frequency.supports])

# %% [markdown]
# - Fine-tuning the pre-trained model for {{finetune.steps}} steps with AdamW (learning rate
#   {{finetune.learning_rate}}, weight decay {{finetune.weight_decay}}) on on-path targets in graphs of up
#   to {{scale.small_n_max}} vertices {{summary.finetune_effect}} the held-out on-path MSE from
#   {{finetune.loss_before}} to {{finetune.loss_after}}. The post went from
#   {{finetune.published_loss_before}} to {{finetune.published_loss_after}} at its own scale
#   {cite:p}`wang2024shortest`.
# - Over {{seeds.n}} seeds of pre-training and fine-tuning, on larger graphs the on-path MSE is
#   {{seeds.onpath_small_target.mse.mean}} ({{seeds.onpath_small_target.mse.min}} to
#   {{seeds.onpath_small_target.mse.max}}, SD {{seeds.onpath_small_target.mse.sd}},
#   {{seeds.onpath_small_target.mse.n}} seeds) with target ids up to {{scale.small_n_max}} and
#   {{seeds.onpath_target.mse.mean}} ({{seeds.onpath_target.mse.min}} to {{seeds.onpath_target.mse.max}}, SD
#   {{seeds.onpath_target.mse.sd}}, {{seeds.onpath_target.mse.n}} seeds) with any target id (the second the
#   higher in {{read.onpath_order.higher}} of {{read.onpath_order.seeds}} seeds; the post: 0.1020 and 0.1451
#   at its own scale), and the any-target MSEs are {{seeds.any_target_small_graphs.mse.mean}}
#   ({{seeds.any_target_small_graphs.mse.min}} to {{seeds.any_target_small_graphs.mse.max}}, SD
#   {{seeds.any_target_small_graphs.mse.sd}}, {{seeds.any_target_small_graphs.mse.n}} seeds),
#   {{seeds.any_small_target_large_graphs.mse.mean}} ({{seeds.any_small_target_large_graphs.mse.min}} to
#   {{seeds.any_small_target_large_graphs.mse.max}}, SD {{seeds.any_small_target_large_graphs.mse.sd}},
#   {{seeds.any_small_target_large_graphs.mse.n}} seeds) and {{seeds.any_target_large_graphs.mse.mean}}
#   ({{seeds.any_target_large_graphs.mse.min}} to {{seeds.any_target_large_graphs.mse.max}}, SD
#   {{seeds.any_target_large_graphs.mse.sd}}, {{seeds.any_target_large_graphs.mse.n}} seeds):
#   {{summary.order}}. On the any-target tests the model scores {{base.any_target_small_graphs.ratio.min}}
#   to {{base.any_target_small_graphs.ratio.max}}, {{base.any_small_target_large_graphs.ratio.min}} to
#   {{base.any_small_target_large_graphs.ratio.max}}, {{base.any_target_large_graphs.ratio.min}} to
#   {{base.any_target_large_graphs.ratio.max}} times the MSE of answering d(1,2) whatever the target, and
#   the study's model {{base.any_target_small_graphs.study_ratio}},
#   {{base.any_small_target_large_graphs.study_ratio}}, {{base.any_target_large_graphs.study_ratio}} times
#   the same baseline at its own scale. The split by target kind locates the failure in the two kinds of
#   target that fine-tuning never showed: reachable vertices off the shortest 1-2 path, and unreachable
#   targets.
# - On-path targets other than vertex 2, with the target ids held to those fine-tuning used: MSE
#   {{size_seeds.mse_small.mean}} ({{size_seeds.mse_small.min}} to {{size_seeds.mse_small.max}}, SD
#   {{size_seeds.mse_small.sd}}, {{size_seeds.mse_small.n}} seeds) on the fine-tuning sizes against
#   {{size_seeds.mse_large_small_ids.mean}} ({{size_seeds.mse_large_small_ids.min}} to
#   {{size_seeds.mse_large_small_ids.max}}, SD {{size_seeds.mse_large_small_ids.sd}},
#   {{size_seeds.mse_large_small_ids.n}} seeds) on larger graphs (more than twice as high
#   {{size_seeds.not_staying_right_in_seeds}}).
# - A model trained on graphs of up to {{length.n_train_max}} vertices, with every vertex id seen, tested on
#   graphs of up to {{length.n_test_max}} vertices over {{length_seeds.seeds}} seeds: MSE
#   {{length_seeds.training_sizes_mse.mean}} ({{length_seeds.training_sizes_mse.min}} to
#   {{length_seeds.training_sizes_mse.max}}, SD {{length_seeds.training_sizes_mse.sd}},
#   {{length_seeds.training_sizes_mse.n}} seeds) on the training sizes,
#   {{length_seeds.larger_graphs_seen_distances_mse.mean}}
#   ({{length_seeds.larger_graphs_seen_distances_mse.min}} to
#   {{length_seeds.larger_graphs_seen_distances_mse.max}}, SD
#   {{length_seeds.larger_graphs_seen_distances_mse.sd}},
#   {{length_seeds.larger_graphs_seen_distances_mse.n}} seeds) on larger graphs at distances seen in
#   training, and {{length_seeds.longer_distances_mse.mean}} ({{length_seeds.longer_distances_mse.min}} to
#   {{length_seeds.longer_distances_mse.max}}, SD {{length_seeds.longer_distances_mse.sd}},
#   {{length_seeds.longer_distances_mse.n}} seeds) beyond the training lengths, where its predictions stop
#   near {{summary.top_prediction.mean}} ({{summary.top_prediction.min}} to {{summary.top_prediction.max}},
#   SD {{summary.top_prediction.sd}}, {{summary.top_prediction.n}} seeds). The under-prediction begins
#   inside the training range in {{freq.inside_count}} of {{freq.models}} models (the length study's and
#   chapter 2's, every seed); every under-predicted length had at most {{freq.highest_share_short}}% of its
#   model's training paths. The numbers favour {{summary.favours}} {{summary.favours_over}} as the reason
#   the predictions level off.

# %% [markdown]
# Open questions:
#
# - What does fine-tuning change inside the model? A probe for "distance from 1" on every
#   vertex token, before and after fine-tuning, would tell whether the pre-trained model already
#   held distances to all vertices (and only the readout was missing) or only along the 1-2 path.
# - Would fine-tuning on any target, including unreachable ones, generalize to larger graphs as
#   well as on-path fine-tuning does, or is the 1-2 path what makes the on-path task easy?
# - Would a model whose longest training paths were common stop at the end of its training range?
#   In both models here the longest training lengths are also the rarest, so the frequency
#   comparison cannot say; a training filter that keeps long paths often would.
# - Can a model of fixed depth be made to extrapolate to longer paths, for instance by
#   training with a curriculum of growing graphs, by sharing weights across layers and running
#   more layers at test time, or by predicting "farther than k" as a class rather than a number?

# %% [markdown]
# ## Numbers and checks

# %% tags=["remove-output"]
results = {
    **finetuning.record(),
    "finetune_optimizer": "AdamW", "finetune_config": finetune_config.to_dict(),
    "base_model": {"source": base.source, "checkpoint": base.checkpoint_path,
                   "config": base.config.to_dict()},
    "scale": dataclasses.asdict(scale), "published_scale": dataclasses.asdict(PUBLISHED_SCALE),
    "generalization": generalization.record(),
    "seed_runs": [run.record() for run in seed_runs],
    "test_mse_over_seeds": {name: spread.record() for name, spread in spreads.items()},
    "finetune_loss_over_seeds": finetune_spread.record(),
    "finetune_loss_before_over_seeds": finetune_before_spread.record(),
    "baselines": {"book": [dataclasses.asdict(b) for b in baselines_book],
                  "study": [dataclasses.asdict(b) for b in baselines_study],
                  "book_graphs_study_label": [dataclasses.asdict(b) for b in baselines_label]},
    "baseline_comparison": [c.record() for c in comparisons],
    "vertex_2_share_of_on_path": {"finetuning": finetune_vertex_2_share,
                                  **{b.test: b.share_vertex_2_of_on_path for b in baselines_book}},
    "onpath_by_graph_size": sizes.record(),
    "onpath_by_graph_size_over_seeds": size_seeds.record(),
    "target_kinds_over_seeds": {
        name: {kind: spread.record() for kind in TARGET_KINDS
               if (spread := kind_spread(seed_records, name, kind)) is not None} for name in TESTS},
    "kind_contrast_over_seeds": contrast.record(),
    **length.record(),
    "length_over_seeds": length_seeds.record(),
    "length_frequency": frequency.record(),
    "length_config": length_config.to_dict(),
    "seconds": seconds,
    "smoke": config.smoke,
    # The claims of the text, reported and never asserted: each is an outcome of training.
    "claims": {**chapter_claims(finetuning, generalization, length),
               **seed_claims(size_seeds, contrast, length_seeds, frequency)},
}
results["recorded"] = record.results()
check_results(results)
path = write_results(config.results_dir, "03_finetuning_generalization", results)
print(f"wrote {path.name}")
print("seconds:", {name: round(value, 1) for name, value in seconds.items()})
print("claims (true: holds in this run):", results["claims"])
