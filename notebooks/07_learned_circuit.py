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
# # What did the trained transformer learn?
#
# Chapter 1 built a transformer that runs breadth-first search by hand: after layer $l$ every
# vertex token holds the set of vertices within $l$ steps of it, so a graph whose shortest path
# has length $d$ needs $d$ layers. Chapter 2 trained a transformer of the study's architecture on
# the same question, with edges as tokens (its main run, on graphs of up to 8 vertices by
# default, is the model read here), and dated when the loss of each path length drops. The
# study tried to read the trained model's computation and did not get far
# {cite:p}`wang2024shortest`. Two later studies give sharper accounts to test: trained
# transformers that merge the paths known at every vertex layer by layer, so that the range they
# search grows exponentially with depth {cite:p}`saparov2025search`, and a capacity of $3^L$ in
# diameter for an $L$-layer transformer, beyond which training drives a heuristic built on the
# vertices' degrees instead of the search {cite:p}`ye2025heuristics`. This chapter opens chapter
# 2's model and asks, layer by layer:
#
# 1. **What does each layer know?** Linear probes on every residual stream, at the target token
#    ("$d(1, t) \le k$", on graphs whose target is reachable, and "$t$ is reachable", a probe of
#    its own) and at every edge token ("an endpoint is within $k$ steps of vertex 1", "... of
#    $t$"), on probe sets stratified by distance so that every $k$ has hundreds of held-out graphs
#    of its rarer answer, with the cut-off tuned on a validation set of its own, against a rival
#    probe on statistics of the graph that need no search (edge count, degrees, ...) with the
#    margin in standard errors, and against a randomly initialised model of the same shape; also
#    within bins of the edge count, over training seeds and over depths.
# 2. **One hop per layer, or faster?** The radii of the models of 2, 4 and 6 layers (several
#    seeds each) against three laws: one hop per layer ($l$), path doubling ($2^l - 1$) and the
#    capacity $3^l$.
# 3. **Where does attention go?** The share of each head's attention that lands on edges sharing
#    an endpoint, on a shortest path, at $t$ or at vertex 1, against what uniform attention gives.
# 4. **Is what the probes read used?** Mean ablation of every head and block; patching the
#    probes' subspace from a graph at another distance, layer by layer, against random subspaces
#    of the same dimension and the whole token.
# 5. **Learned against hand-built:** the construction of chapter 1 on the same graphs; where
#    the trained model is exact, and whether its errors follow shortcuts.
# 6. **The capacity lever:** small models trained on graphs within their capacity and beyond it,
#    and how much of each one's answer the graph statistics explain.
#
# Nothing here is in the study; every claim below is a number computed in this run.

# %% tags=["parameters"]
smoke = False  # tiny run for tests (well under a minute)
seed = 0  # seeds every random draw of the chapter
device = "auto"  # "auto" (CUDA when present), "cpu", "cuda" or "cuda:K"
results_dir = "../results"  # results JSON and saved models go here; later chapters read them here
depths = [2, 6]  # encoder layers of the other models of chapter 2's recipe compared with it (chapter 2: 4)
probe_per_stratum = 500  # graphs of each distance (and of each kind of unreachable target) in each of the probes' training, validation and held-out sets
probe_pool = 1000000  # most graphs drawn from the sampler to fill one probe set
probe_l2 = 0.001  # L2 penalty of the probes (on standardised activations)
reach_threshold = 0.9  # held-out balanced accuracy (at the cut-off tuned on the validation graphs) to read a fact
auc_threshold = 0.95  # held-out ROC AUC at which a probe reads its fact
margin_z = 2.0  # standard errors by which a layer's AUC must beat the graph-statistics probe's to read a fact
resamples = 200  # bootstrap resamples of the held-out graphs for the AUC difference's standard error
depth_seeds = 3  # seeds of each other depth trained with chapter 2's recipe (seed 0 and the next)
probe_seeds = 3  # models of chapter 2's recipe probed: chapter 2's and ones trained here with the next seeds
capacity_layers = 1  # layers of the models of the capacity experiment (capacity 3^L; graphs of up to n_max vertices must exceed it)
capacity_pool = 200000  # graphs drawn for each of the capacity experiment's training and test sets
capacity_steps = 2000  # training steps of each model of the capacity experiment
capacity_seeds = 3  # seeds trained on each side of the capacity
intervention_graphs = 2000  # held-out graphs of the ablation and patching experiments
random_subspaces = 8  # random subspaces patched as the control of the probe subspace
workers = 2  # processes that train the missing models of other depths and seeds at once (one core each)
cpu_threads = 1  # torch threads on the CPU (one is fastest for these small models on 2 cores)

# %% tags=["remove-output", "hide-input"]
import time

import torch
from IPython.display import Markdown, display

from lib.book.params import apply_cpu_threads, validate_parameters
from lib.book.plotting import configure_notebook_rendering
from lib.book.record import Record, direction, share, verdict
from lib.book.reproducibility import seed_everything
from lib.book.results import write_results
from lib.book.tables import markdown_table
from lib.bfs.transformer import bfs_transformer, reach_by_layer
from lib.chapters.ch7 import (
    Chapter7Parameters, GraphSet, TrainedModel, depth_seed_configs, from_base, hand_built_distances, model_rows,
    recipe_models, seed_configs,
)
from lib.chapters.ch7_figures import (
    ablation_figure, attention_fraction_figure, confusion_figure, example_figure, law_figure, patching_figure,
    probe_auc_figure,
)
from lib.chapters.ch7_probing import capacity_experiment, capacity_summary, draw_probe_sets, radii_of, radius_points
from lib.chapters.ch7_results import (
    capacity_table, check_results, edge_bin_names, layers_label, law_table, margin_extremes, margin_table,
    model_radii_table, model_table, power_table, powered_bins_table, powered_radius_table, preference_table,
)
from lib.paths.circuit_effects import (
    WEAK_CORRELATION, ablation_extremes, ablation_rows, attention_rows, patching_summary, strongest_shortcut,
    top_attention,
)
from lib.paths.hand_built_comparison import hand_built_adjacency, hand_built_rows
from lib.paths.reach_radii import growth, span
from lib.paths.activations import capture
from lib.paths.attention_fractions import attention_fractions
from lib.paths.causal import SHORTCUTS, ablate_components, patch_distance, shortcut_correlations
from lib.paths.finetuning import ensure_base_model, fallback_base_config
from lib.paths.layer_probes import (
    DISTANCE, EDGE_STATISTICS, FACTS, FROM_SOURCE, FROM_TARGET, GRAPH_STATISTICS, REACHABLE, REACHABLE_WITH_EDGES,
    fact_values, one_hop_radii,
)
from lib.paths.model import build_model
from lib.paths.powered_probes import (
    MAX_TRAIN_TOKENS, MIN_BIN_GRAPHS, Rule, distance_subspace, grid_json, powered_radii, probe_powered,
)
from lib.paths.radius_laws import LAWS, best_laws, fit_laws
from lib.paths.stratified_graphs import stratum_name

config = validate_parameters(Chapter7Parameters, globals())
apply_cpu_threads(config.cpu_threads, config.device)
seed_everything(config.seed)
configure_notebook_rendering()
seconds = {}
record = Record()  # the numbers the prose cites as {{key}}; they also go to the results JSON
print(f"device: {config.device}; smoke run: {config.smoke}")

# %% [markdown]
# ```{note}
# **Scale.** The study's model has 11 layers and reads graphs of up to 15 vertices
# {cite:p}`wang2024shortest`; chapter 2's CPU default has 4 layers and graphs of 3 to 8 vertices, and
# this chapter reads that model (from chapter 2's checkpoint in `results_dir` when it is there).
# After chapter 2 ran at the published scale on a GPU, the same analysis of the 11-layer model,
# with models of 6 and 16 layers beside it and more graphs, is
# `papermill 07_learned_circuit.ipynb out.ipynb -f published/07.yaml` (the parameters in
# `notebooks/published/07.yaml`; the models of other depths are trained with chapter 2's recipe, so at that scale they take as
# long as chapter 2 did).
# ```
#
# ## The models
#
# Chapter 2's model, models of the same recipe with `depths` layers (`depth_seeds` seeds each,
# chapter 2's seed and the next ones) and with the next `probe_seeds - 1` seeds at chapter 2's
# depth (trained here with chapter 2's code, `workers` at once, and kept in `results_dir`, so a
# rerun or an interrupted run picks them up; chapter 3 leaves the seeds' models there, the same
# models), and a randomly initialised model of chapter 2's shape for the probes' control.

# %%
started = time.perf_counter()
base = from_base(ensure_base_model(config.results_dir,
                                   fallback_base_config(seed=config.seed, device=str(config.device),
                                                        smoke=config.smoke), device=config.device))
# The other depths and seeds train at once, one worker process each.
further_seeds = seed_configs(base.config, config.probe_seeds - 1)
other_depths = depth_seed_configs(base.config, config.depths, config.depth_seeds)
named = {f"{depth} layers, seed {seed}": cfg for (depth, seed), cfg in other_depths.items()}
trained = recipe_models(named | further_seeds, config.results_dir, workers=config.workers, device=config.device)
recipe = base.config
models: dict[str, TrainedModel] = {f"chapter 2 ({base.n_layers} layers)": base} | {
    f"{depth} layers": trained[f"{depth} layers, seed {recipe.seed}"] for depth, _ in other_depths
    if _ == recipe.seed}
# Every model of the recipe by (depth, seed): chapter 2's, its further seeds, the other depths.
every_model = {(base.n_layers, recipe.seed): base} | {
    (base.n_layers, cfg.seed): trained[name] for name, cfg in further_seeds.items()} | {
    key: trained[f"{key[0]} layers, seed {key[1]}"] for key in other_depths}
random_init = build_model(base.config.model_config, seed=config.seed + 100, device=config.device).eval()
seconds["models"] = time.perf_counter() - started

held_out, reference = (GraphSet.draw(recipe, config.intervention_graphs, config.seed + offset)
                       for offset in (3, 1))
predictions = {name: capture(model.model, held_out.tokens).prediction for name, model in models.items()}
model_summary = model_rows(models, held_out, predictions)
display(Markdown(model_table(model_summary, held_out.unreachable_label)))

# %% [markdown]
# ## What each layer knows
#
# Each probe is a logistic regression on one residual stream (index 0 is the embedding, index
# $l$ the output of layer $l$). Long distances are rare under chapter 2's sampler, so the probes
# read three probe sets stratified by distance: each holds up to `probe_per_stratum` graphs of
# every distance $d(1, t)$ and of each of two kinds of unreachable target (1 and $t$ both with an
# edge, or not) within each of three bins of the edge count (terciles of the sampler's), drawn
# from at most `probe_pool` graphs of the sampler (a distance needs as many edges, so a long
# distance is absent from the bin of few edges). The probes are fitted on
# the first set, their cut-off is the one that maximises the balanced accuracy (the mean of the
# recall of "yes" and of "no") on the second, and they are scored on the third, by ROC AUC and by
# balanced accuracy at that cut-off. A threshold $k$ is probed only where each answer holds in at
# least `probe_per_stratum` graphs of every set. Scores are scores on this balanced mixture, not
# on the sampler's proportions.
#
# The rival is the same probe on statistics of the graph that need no search: its edge count,
# duplicate edges, the vertices with an edge, the degrees of 1 and of $t$, whether the edge
# $(1, t)$ is present and whether 1 and $t$ both have an edge (at edge tokens also the degrees of
# the edge's endpoints), fitted, tuned and scored on the same tokens. The difference of the two
# AUCs gets its standard error from a paired bootstrap over the held-out graphs (`resamples`
# resamples; a graph is resampled whole, with all its edge tokens).
#
# **The rule.** A layer reads a fact at $k$ where its held-out AUC is at least `auc_threshold`,
# its balanced accuracy at least `reach_threshold`, and its AUC above the rival's by at least
# `margin_z` standard errors of the difference (where the rival reads $k$ perfectly, with AUC 1,
# the fact needs no search and the first two suffice). Its radius is the largest $k$ such that
# every $k' \le k$ is read; it is one less than the first $k$ probed where that fails. Every
# radius below, of every model, seed and bin, is this one.
#
# "$d(1, t) \le k$" is probed on graphs whose target is reachable only: on all graphs, the "no"
# answer for a large $k$ is almost always an unreachable target, and the probe would read
# reachability instead of distance. Reachability gets a probe of its own (reachable or not),
# scored at each $k$ on the graphs whose target is exactly $k$ steps away or unreachable, once on
# all graphs and once on the graphs where 1 and $t$ both have an edge. The edge facts are probed
# on the edges that the vertex can reach (the distance of an edge is that of its nearer
# endpoint), at most {{probes.max_train}} of them in training (a fixed random subset).

# %%
started = time.perf_counter()
rule = Rule(config.reach_threshold, config.auc_threshold, config.margin_z)
sets, drawn, bins = draw_probe_sets(recipe, config.probe_per_stratum, config.probe_pool, config.seed,
                                    l2=config.probe_l2, min_graphs=config.probe_per_stratum)
grids, binned = probe_powered(base.model, sets, l2=config.probe_l2, rule=rule, resamples=config.resamples,
                              seed=config.seed + 4, bins=bins)
random_grids, _ = probe_powered(random_init, sets, l2=config.probe_l2, rule=rule, resamples=config.resamples,
                                seed=config.seed + 5)
seconds["probes"] = time.perf_counter() - started
own = radii_of(grids, rule)
random_radii = radii_of(random_grids, rule)
caps = {fact: max(ks) for fact, ks in sets.ks.items() if ks}
set_sizes = {name: len(s.graphs.labels) for name, s in drawn.items()}
print(f"probe sets: {set_sizes} graphs, drawn from {[s.drawn for s in drawn.values()]}; "
      f"strata of the held-out set: {{{', '.join(f'{stratum_name(k)}: {v}' for k, v in drawn['held-out'].counts.items())}}}")
print(f"thresholds: {dict(sets.ks)}; edge-count bin boundaries: {bins}")
probe_auc_figure(grids, random_grids).show()
fewest = min(int(grid.rarer_graphs.min()) for grid in grids.values())
record("probes.per_stratum", config.probe_per_stratum, ",")
record("probes.held_out_graphs", set_sizes["held-out"], ",")
record("probes.fewest_rarer", fewest, ",")
record("probes.distance_largest_k", caps[DISTANCE], ",")
record("statistics.graph_features", ", ".join(GRAPH_STATISTICS))
record("statistics.edge_features", " and ".join(EDGE_STATISTICS))
record("statistics.margin_z", config.margin_z, "g")
display(Markdown(markdown_table(*power_table(grids, {}))))

# %% [markdown]
# The held-out set holds {{probes.held_out_graphs}} graphs ({{probes.per_stratum}} of each
# stratum where the pool had them); every $k$ probed has at least {{probes.fewest_rarer}} held-out
# graphs of its rarer answer (table above, with the rival's AUC). The rival reads the graph's
# statistics alone ({{statistics.graph_features}}; at edge tokens also the
# {{statistics.edge_features}}). In the figure, each line is one $k$; the dotted line of the same
# colour is the rival, the cross the best AUC of the randomly initialised model.
#
# Below: per fact, the radius after each residual index of chapter 2's model under the rule, and
# per index the first $k$ that fails and what fails there ("auc", "balanced", "rival", with the
# AUC difference in standard errors; "nan" where it was not computed because the AUC or the
# balanced accuracy fails already); then the same for the randomly initialised model; then the
# margin over the rival, in standard errors, at every $k$.

# %%
weakest, closest = margin_extremes(grids, rule)
record("margin.weakest_z", weakest["z"], ".1f")
record("margin.weakest_where", f"{weakest['fact']}, index {weakest['index']}, k = {weakest['k']}")
record("margin.closest_z", closest["z"] if closest else float("nan"), ".1f")
record("margin.closest_where", f"{closest['fact']}, index {closest['index']}, k = {closest['k']}" if closest
       else "nowhere")
record("probes.max_train", MAX_TRAIN_TOKENS, ",")
record("random.distance", str(random_radii[DISTANCE]))
record("random.with_edges", str(random_radii[REACHABLE_WITH_EDGES]))
display(Markdown(markdown_table(*powered_radius_table(grids, rule))))
display(Markdown(markdown_table(*powered_radius_table(random_grids, rule))))
display(Markdown(markdown_table(*margin_table(grids))))

# %% [markdown]
# Of the cells that pass the rule against a rival below AUC 1, the narrowest margin is
# {{margin.weakest_z}} standard errors ({{margin.weakest_where}}); of those that fail on the rival
# alone, the closest is {{margin.closest_z}} ({{margin.closest_where}}). The randomly initialised
# model's radii are {{random.distance}} for the distance and {{random.with_edges}} for
# reachability where both have an edge.
#
# **Within bins of the edge count** (the three bins the probe sets are stratified by), each probe is
# scored on the held-out graphs of the bin, its cut-off tuned on the validation graphs of the
# bin, against the rival in the same bin, over the $k$ at which each answer holds in at least
# `MIN_BIN_GRAPHS` graphs of the bin in both sets (long distances need many edges, so a bin of few
# edges has none of them); the radius counts from the first
# $k$ scored (one less than it: nothing read).

# %%
record("bins.min_graphs", MIN_BIN_GRAPHS, ",")
display(Markdown(markdown_table(*powered_bins_table(binned, bins, rule))))

# %% [markdown]
# A $k$ is scored in a bin where each answer holds in at least {{bins.min_graphs}} graphs of it.
#
# **Other seeds and depths.** The same probes, on the same sets against the same rival, on the
# models of chapter 2's recipe with the next `probe_seeds - 1` seeds and on the models of other
# depths (`depth_seeds` seeds each): how much a radius owes to one training run (every fact but
# reachability on all graphs, which its variant on graphs where 1 and $t$ both have an edge
# stands in for).

# %%
started = time.perf_counter()
model_radii = {(base.n_layers, recipe.seed): own}
model_grids = {(base.n_layers, recipe.seed): grids}
for key, model in every_model.items():
    if key not in model_grids:
        model_grids[key] = probe_powered(model.model, sets, l2=config.probe_l2, rule=rule,
                                         resamples=config.resamples, seed=config.seed + 6 + 10 * key[0] + key[1],
                                         facts=(DISTANCE, REACHABLE_WITH_EDGES, FROM_SOURCE, FROM_TARGET))[0]
        model_radii[key] = radii_of(model_grids[key], rule)
seconds["seeds_and_depths"] = time.perf_counter() - started
seed_radii = {seed: radii for (depth, seed), radii in model_radii.items() if depth == base.n_layers}
distance_by_seed = {seed: radii[DISTANCE] for seed, radii in seed_radii.items()}
ahead = {seed: growth(radii, caps[DISTANCE])["faster"] for seed, radii in distance_by_seed.items()}
record("seeds.count", len(seed_radii), ",")
record("seeds.list", ", ".join(str(seed) for seed in seed_radii))
record("seeds.distance", "; ".join(f"seed {seed}: {radii}" for seed, radii in distance_by_seed.items()))
record("seeds.ahead_count", sum(bool(layers) for layers in ahead.values()), ",")
record("seeds.ahead_share", share(sum(bool(layers) for layers in ahead.values()), len(ahead), every="every",
                                  some="some", none="none"))
record("depths.models", len(model_radii), ",")
display(Markdown(markdown_table(*model_radii_table(model_radii, (DISTANCE, REACHABLE_WITH_EDGES)))))
display(Markdown(markdown_table(*model_radii_table(model_radii, (FROM_SOURCE, FROM_TARGET)))))

# %% [markdown]
# Chapter 2's recipe at {{seeds.count}} seeds ({{seeds.list}}) reads "$d(1, t) \le k$" up to
# {{seeds.distance}} after residual index 0, 1, ...: {{seeds.ahead_count}} of them
# ({{seeds.ahead_share}}) run ahead of one hop per layer after some layer. The tables above give
# every model's radii ({{depths.models}} models), at the target token and at the edge tokens.

# %% [markdown]
# ## Where attention goes
#
# For every head, the share of attention from edge tokens to themselves, to edges sharing an
# endpoint, to edges on a shortest 1-$t$ path and to the target token; and from the target token
# to itself, to edges at $t$, to edges at vertex 1 and to edges on a shortest path. Black marks
# show the share a head would give with uniform attention over the graph's tokens. Categories
# overlap, so shares need not add up to one. The table lists, for every head, the category it
# favours most relative to uniform attention.

# %%
started = time.perf_counter()
activations = capture(base.model, held_out.tokens)
fractions = attention_fractions(activations.attention, held_out.graphs)
attention = attention_rows(fractions)
seconds["attention"] = time.perf_counter() - started
attention_fraction_figure(fractions).show()
display(Markdown(preference_table(attention)))

# %% [markdown]
# One graph, layer by layer (move the slider): both heads' attention among the graph's tokens
# beside the reach sets of chapter 1's hand-built model on the same graph after the same layer.
# The example is the first held-out graph whose target is at the largest distance the model was
# trained on that is within its depth.

# %%
distance = held_out.graphs.distance
largest = int(held_out.graphs.distance[held_out.reachable].max())
wanted = min(base.n_layers, largest)
row = int(torch.nonzero(distance == wanted)[0]) if (distance == wanted).any() else int(torch.argmin(distance))
hand_built_model = bfs_transformer(recipe.n_max)
example_reach = reach_by_layer(hand_built_model, hand_built_adjacency(held_out.graphs, recipe.n_max)[row])
example_figure(activations, held_out.graphs, row, example_reach).show()

# %% [markdown]
# ## Are the probed features used?
#
# **Ablation.** Each head, each layer's attention and each feed-forward block in turn outputs
# its mean over `intervention_graphs` other graphs (mean ablation), and the loss is measured per true
# distance on the held-out graphs.

# %%
started = time.perf_counter()
ablation = ablate_components(base.model, held_out, reference)
ablation_summary = ablation_rows(ablation)
seconds["ablation"] = time.perf_counter() - started
ablation_figure(ablation, held_out.unreachable_label).show()

# %% [markdown]
# **Patching.** Graphs with a reachable target are paired at random with a donor whose target is
# at another distance. At one residual index, the recipient's target-token stream takes the
# donor's components in the subspace spanned by the distance probes (the linear probe of the
# distance and every "$d(1, t) \le k$" probe, orthonormalised), everything else unchanged; the
# slope of the prediction's shift against the label difference says how far the model follows.
# Random subspaces of the same dimension are the control, the donor's whole token the ceiling.
# After the last layer the linear readout reads this subspace almost by construction, so the
# verdict rests on the layers before it. (Index 0 is left out: the target is vertex 2 in every
# graph, so its embedding never differs.)

# %%
started = time.perf_counter()
subspace, distance_r2 = distance_subspace(base.model, sets.train, sets.test, sets.ks[DISTANCE], l2=config.probe_l2)
print(f"held-out R^2 of a linear probe of d(1, t) at the target token (reachable targets), per index: "
      f"{[round(v, 3) for v in distance_r2.tolist()]}")
patching = patch_distance(base.model, held_out, subspace,
                          random_subspaces=config.random_subspaces, seed=config.seed + 5)
seconds["patching"] = time.perf_counter() - started
patching_figure(patching).show()
patched = patching_summary(patching)
middle = patched["middle"]
record("patching.dimension", patching.dimension, ",")
record("patching.pairs", patching.pairs, ",")
record("patching.last_layer", patched["last"]["layer"], ",")
record("patching.last_probe", patched["last"]["probe"], ".2f")
record("patching.last_random", patched["last"]["random_mean"], ".2f")
record("patching.last_token", patched["last"]["token"], ".2f")
record("patching.intermediate", layers_label([row["layer"] for row in middle], "no intermediate layer"))
record("patching.beats_random", layers_label(patched["above"]))
record("patching.used", layers_label(patched["used"]))
record("patching.used_share", share(len(patched["used"]), len(middle), every="every one", some="only some",
                                    none="none"))
display(Markdown(markdown_table(
    ["layer", "probes' subspace", "random subspaces (mean)", "random subspaces (largest)", "whole token",
     "share of the token's effect", "beats every random subspace"],
    [[row["layer"], f"{row['probe']:.2f}", f"{row['random_mean']:.2f}", f"{row['random_max']:.2f}",
      f"{row['token']:.2f}", f"{row['share_of_token']:.0%}", "yes" if row["beats_every_random"] else "no"]
     for row in middle])))

# %% [markdown]
# Patching the {{patching.dimension}}-dimensional subspace of the distance probes from a donor
# graph at another distance ({{patching.pairs}} pairs): after layer {{patching.last_layer}},
# whose stream the readout reads, it moves the prediction by {{patching.last_probe}} per unit of
# label difference (random subspaces of that dimension {{patching.last_random}}, the whole token
# {{patching.last_token}}), which the readout makes nearly circular. The table gives the same
# after the intermediate layers ({{patching.intermediate}}), with the share of the token's effect
# the probes' subspace carries. It beats every random subspace after {{patching.beats_random}},
# and also carries at least half of the token's effect after {{patching.used}}: {{patching.used_share}}
# of the intermediate layers. Where it beats the random subspaces but carries less than half,
# most of what the token passes on lies outside the probed directions.

# %% [markdown]
# ## One hop per layer, or faster?
#
# Breadth-first search that advances one hop per layer reaches radius $l$ after layer $l$
# (chapter 1's construction). Path merging, which Saparov et al. found trained transformers to
# do on graph search {cite:p}`saparov2025search`, joins at every layer two paths known after the
# previous one, so an edge token would know paths of length up to $2^l$ from its endpoint after
# layer $l$ and the radius of "the edge is within $k$ of vertex 1" would be $2^l - 1$; Ye et al.'s
# construction reaches diameter $3^l$ {cite:p}`ye2025heuristics`. Each law is capped at the
# largest $k$ probed (a radius cannot exceed it) and compared with the measured radii of every
# model above ({{depths.models}} models of 2, 4 and 6 layers by default), at the target token
# ("$d(1, t) \le k$") and at the edge tokens (within $k$ of vertex 1, of $t$), over the layers
# before each model's last (whose stream the readout reads) and, second, with the last layer too.
# A law has no free parameter: the table gives each one's root mean square error, its mean error
# (negative where the law runs ahead of the radii) and how many radii it predicts exactly.

# %%
law_facts = (DISTANCE, FROM_SOURCE, FROM_TARGET)
point_sets = {
    "target token, layers before the last": radius_points(model_radii, caps, (DISTANCE,), with_last=False),
    "edge tokens, layers before the last": radius_points(model_radii, caps, (FROM_SOURCE, FROM_TARGET),
                                                         with_last=False),
    "all three facts, layers before the last": radius_points(model_radii, caps, law_facts, with_last=False),
    "all three facts, every layer": radius_points(model_radii, caps, law_facts, with_last=True),
}
fits = {name: fit_laws(points) for name, points in point_sets.items()}
best = {name: best_laws(fit) for name, fit in fits.items()}
law_figure(point_sets["all three facts, every layer"], caps).show()
display(Markdown(markdown_table(*law_table(fits))))
main_fit = fits["all three facts, layers before the last"]
record("laws.points", main_fit[next(iter(main_fit))]["points"], ",")
record("laws.best", " and ".join(best["all three facts, layers before the last"]))
record("laws.best_target", " and ".join(best["target token, layers before the last"]))
record("laws.best_edges", " and ".join(best["edge tokens, layers before the last"]))
record("laws.best_every_layer", " and ".join(best["all three facts, every layer"]))
for law, short in zip(LAWS, ("hop", "doubling", "tripling")):
    record(f"laws.{short}_rms", main_fit[law]["rms"], ".2f")
    record(f"laws.{short}_mean", main_fit[law]["mean_error"], "+.2f")
    record(f"laws.{short}_target_rms", fits["target token, layers before the last"][law]["rms"], ".2f")
    record(f"laws.{short}_edges_rms", fits["edge tokens, layers before the last"][law]["rms"], ".2f")
    record(f"laws.{short}_target_mean", fits["target token, layers before the last"][law]["mean_error"], "+.2f")
    record(f"laws.{short}_edges_mean", fits["edge tokens, layers before the last"][law]["mean_error"], "+.2f")
edge_fit = fits["edge tokens, layers before the last"]
record("laws.edges_verdict", verdict(all(fit["mean_error"] < 0 for fit in edge_fit.values()),
                                     yes="do not hold, in linearly readable form, the growing reach that path "
                                         "merging would put there",
                                     no="hold part of the reach one of the laws predicts"))
record("laws.edges_ahead", share(sum(fit["mean_error"] < 0 for fit in edge_fit.values()), len(edge_fit),
                                 every="every law", some="some of the laws", none="no law"))

# %% [markdown]
# At the target token, over the radii read before each model's last layer, the root mean square
# error is {{laws.hop_target_rms}} for one hop per layer (mean error {{laws.hop_target_mean}}),
# {{laws.doubling_target_rms}} for doubling ({{laws.doubling_target_mean}}) and
# {{laws.tripling_target_rms}} for $3^l$ ({{laws.tripling_target_mean}}): the numbers favour
# {{laws.best_target}} there. At the edge tokens the errors are {{laws.hop_edges_rms}},
# {{laws.doubling_edges_rms}} and {{laws.tripling_edges_rms}}, with mean errors
# {{laws.hop_edges_mean}}, {{laws.doubling_edges_mean}} and {{laws.tripling_edges_mean}}:
# {{laws.edges_ahead}} runs ahead of what a linear probe reads at the edge tokens, so the least
# wrong law there ({{laws.best_edges}}) is no account of them: the edge tokens
# {{laws.edges_verdict}}. Over all
# {{laws.points}} radii of the three facts the smallest error is {{laws.best}}'s
# ({{laws.hop_rms}}, {{laws.doubling_rms}} and {{laws.tripling_rms}}), and with the last layers
# too {{laws.best_every_layer}}'s.
#
# The mechanism each law needs is in the sections below: path merging needs edge tokens that
# attend to edges sharing an endpoint and carry what they read onward; the attention shares below
# say where the edge tokens look (the most selective head from the edge tokens favours
# {{summary.attention_edges_category}}, {{summary.attention_edges_ratio}} times uniform; the
# table gives every head) and where the target token looks (its most selective head favours
# {{summary.attention_target_category}}), and the patching of the distance subspace says after
# which layers the target token's reading is used ({{patching.used}}). One account that these
# numbers allow, not one they prove: a target token that gathers from the edges at both ends, each
# of which knows its own neighbourhood, reads farther than one hop per layer without any edge
# token holding a long path.

# %% [markdown]
# ## Learned against hand-built
#
# Chapter 1's construction for graphs of `n_max` vertices reads the same graphs (as adjacency
# matrices) and needs one layer per hop. Below, both models' rounded predictions by true
# distance, then the correlations, within each true distance, of the trained model's error with
# statistics of the graph a network could use instead of searching
# (`lib.paths.causal.SHORTCUTS`).

# %%
hand_built = hand_built_distances(held_out.graphs, recipe.n_max)
agreement = hand_built_rows(activations.prediction, hand_built, held_out, base.n_layers)
shortcuts = shortcut_correlations(activations.prediction, held_out)
confusion_figure(activations.prediction, held_out.labels, hand_built.prediction, held_out.unreachable_label).show()
strongest = strongest_shortcut(shortcuts)
record("shortcut.tested", strongest["tested"], ",")
record("shortcut.strongest", strongest["name"])
record("shortcut.correlation", strongest["correlation"], "+.3f")
record("shortcut.weak_limit", WEAK_CORRELATION, "g")
record("shortcut.size", direction(abs(strongest["correlation"]), WEAK_CORRELATION, above="above", below="below",
                                  equal="at"))
record("shortcut.verdict", verdict(not strongest["weak"], yes="goes with a shortcut in place of part of the search",
                                   no="follows none of the statistics tested; other shortcuts are not ruled "
                                      "out by this"))
display(Markdown(markdown_table(["statistic", "correlation with the error"],
                                [[name, f"{value:+.3f}"] for name, value in shortcuts.items()])))

# %% [markdown]
# Within each true distance, the error's largest correlation with the {{shortcut.tested}} graph
# statistics tested (table above) is {{shortcut.correlation}}, with the {{shortcut.strongest}}:
# {{shortcut.size}} the {{shortcut.weak_limit}} in size below which a correlation counts as no
# shortcut, so the error {{shortcut.verdict}}.

# %% [markdown]
# ## The capacity lever
#
# Ye et al. prove that an $L$-layer disentangled transformer can solve connectivity on graphs of
# diameter up to $3^L$, and find that training on graphs within that capacity drives the exact
# algorithm while graphs beyond it drive a heuristic built on the vertices' degrees
# {cite:p}`ye2025heuristics`. Chapter 2's graphs have at most 8 vertices, so no graph's diameter
# exceeds 7: within the capacity of 2 layers ($3^2 = 9$). The lever is therefore pulled here with
# `capacity_layers`-layer models of chapter 2's architecture (capacity $3^L$): `capacity_seeds`
# trained on graphs of chapter 2's sampler whose diameter (the longest shortest path between two
# of their vertices) is within the capacity, as many on graphs beyond it, both sets holding the
# same number of graphs of every edge count, each model `capacity_steps` steps of chapter 2's loss
# and learning rate on batches drawn from its set. On held-out graphs of both kinds: each model's
# MSE, and the held-out $R^2$ of a ridge probe of the model's answer on the graph statistics of
# the rival probe above (the degree statistics); last, the same probe of the true answer.

# %%
started = time.perf_counter()
capacity = capacity_experiment(recipe, layers=config.capacity_layers, pool=config.capacity_pool,
                               steps=config.capacity_steps, seeds=config.capacity_seeds, seed=config.seed,
                               l2=config.probe_l2)
seconds["capacity"] = time.perf_counter() - started
lever = capacity_summary(capacity)
record("capacity.layers", capacity["layers"], ",")
record("capacity.diameter", capacity["capacity"], ",")
record("capacity.training_graphs", capacity["training_graphs"], ",")
record("capacity.seeds", config.capacity_seeds, ",")
for side in ("within", "beyond"):
    for name in ("r2_beyond", "r2_within", "mse_beyond", "mse_within"):
        for stat in ("mean", "low", "high"):
            record(f"capacity.{side}.{name}.{stat}", lever[side][name][stat], ".3f")
record("capacity.truth_r2_beyond", capacity["truth_r2"]["beyond"], ".3f")
record("capacity.truth_r2_within", capacity["truth_r2"]["within"], ".3f")
record("capacity.direction", direction(lever["beyond"]["r2_beyond"]["mean"], lever["within"]["r2_beyond"]["mean"],
                                       above="more", below="less", equal="as much"))
apart = (lever["beyond"]["r2_beyond"]["low"] > lever["within"]["r2_beyond"]["high"]
         or lever["beyond"]["r2_beyond"]["high"] < lever["within"]["r2_beyond"]["low"])
record("capacity.separated", verdict(apart, yes="the two ranges over seeds do not overlap",
                                     no="the two ranges over seeds overlap, so the difference is within the "
                                        "spread over seeds"))
display(Markdown(markdown_table(*capacity_table(capacity))))

# %% [markdown]
# With {{capacity.layers}} layer(s) (capacity {{capacity.diameter}}) and
# {{capacity.training_graphs}} training graphs on each side ({{capacity.seeds}} seeds each), on
# held-out graphs beyond the capacity the statistics explain $R^2$ =
# {{capacity.beyond.r2_beyond.mean}} (seeds {{capacity.beyond.r2_beyond.low}} to
# {{capacity.beyond.r2_beyond.high}}) of the answers of the models trained beyond it and
# {{capacity.within.r2_beyond.mean}} ({{capacity.within.r2_beyond.low}} to
# {{capacity.within.r2_beyond.high}}) of those trained within it: {{capacity.direction}} for the
# models trained beyond, and {{capacity.separated}}. Of the true answer on those graphs they
# explain {{capacity.truth_r2_beyond}}. The
# models trained beyond the capacity reach MSE {{capacity.beyond.mse_beyond.mean}} on those graphs
# ({{capacity.beyond.mse_beyond.low}} to {{capacity.beyond.mse_beyond.high}}), those trained
# within it {{capacity.within.mse_beyond.mean}}. On graphs within the capacity the statistics
# explain {{capacity.within.r2_within.mean}} of the within-trained models' answers,
# {{capacity.beyond.r2_within.mean}} of the beyond-trained ones' and
# {{capacity.truth_r2_within}} of the truth.

# %% [markdown]
# ## Numbers and checks

# %% tags=["remove-output"]
assert agreement["hand_built_mse"] < 1e-6, "the hand-built model must be exact on these graphs"
assert all(abs(value) <= 1 for value in shortcuts.values())
# The distance probes saw reachable targets only; the reachability probe saw every graph.
assert len(fact_values(sets.train.graphs, DISTANCE)) == int(sets.train.reachable.sum()) < len(sets.train.labels)
assert len(fact_values(sets.train.graphs, REACHABLE)) == len(sets.train.labels)
# The results JSON: every model's probe grids (AUC, balanced accuracy, the rival's AUC, the
# difference and its standard error, radii), per edge-count bin for chapter 2's model, the law
# fits and the capacity experiment, beside the attention, ablation, patching and shortcuts.
results = {
    "seed": config.seed, "smoke": config.smoke, "models": model_summary,
    "reach_threshold": config.reach_threshold, "auc_threshold": config.auc_threshold, "margin_z": config.margin_z,
    "facts": list(FACTS), "edge_count_bins": list(bins), "edge_count_bin_names": edge_bin_names(bins),
    "statistics_features": {"graph": list(GRAPH_STATISTICS), "edge": list(EDGE_STATISTICS)},
    "powered": {
        "min_graphs": config.probe_per_stratum, "sets": set_sizes,
        "strata": {name: {stratum_name(k): v for k, v in s.counts.items()} for name, s in drawn.items()},
        "drawn": {name: s.drawn for name, s in drawn.items()},
        "held_out_by_bin": {f"{stratum_name(k)}, {edge_bin_names(bins)[b]}": v
                            for (k, b), v in drawn["held-out"].by_bin.items()}, "ks": {fact: list(ks) for fact, ks in sets.ks.items()},
        "models": {f"{depth} layers, seed {seed}": {"depth": depth, "seed": seed,
                                                     "grids": {fact: grid_json(grid, rule) for fact, grid in g.items()}}
                   for (depth, seed), g in sorted(model_grids.items())},
        "random_init": {fact: grid_json(grid, rule) for fact, grid in random_grids.items()},
        "bins": {fact: [grid_json(grid, rule) | {"radii": powered_radii(grid, rule, scored_only=True)}
                        for grid in by_bin] for fact, by_bin in binned.items()},
        "distance_r2": distance_r2.tolist(),
    },
    "radii": {f"{depth} layers, seed {seed}": r for (depth, seed), r in sorted(model_radii.items())},
    "laws": {"fits": fits, "best": best["all three facts, layers before the last"], "best_by_set": best,
             "points": {name: [vars(p) for p in points] for name, points in point_sets.items()}},
    "capacity": capacity,
    "attention": attention, "ablation": ablation_summary,
    "patching": {"dimension": patching.dimension, "pairs": patching.pairs, "probe": patching.probe.tolist(),
                 "random": patching.random.tolist(), "token": patching.token.tolist(),
                 "by_layer": patching.by_layer()},
    "shortcut_correlations": shortcuts, "shortcuts": list(SHORTCUTS), "hand_built": agreement,
    "seconds": seconds,
}

# The numbers the summary cites.
record("summary.balanced_accuracy", rule.balanced_accuracy, "g")
record("summary.auc", rule.auc, "g")
record("summary.depth", base.n_layers, ",")
record("summary.distance_fact", DISTANCE)
for key, fact in (("distance", DISTANCE), ("reachable", REACHABLE), ("with_edges", REACHABLE_WITH_EDGES),
                  ("from_source", FROM_SOURCE), ("from_target", FROM_TARGET)):
    record(f"summary.{key}_stated", str(own[fact]))
    low, high = span(grids[fact].rival_auc.unsqueeze(0))
    record(f"summary.{key}_statistics_low", low, ".3f")
    record(f"summary.{key}_statistics_high", high, ".3f")
    grown = growth(own[fact], caps[fact])
    record(f"summary.{key}_faster", layers_label(grown["faster"]))
    record(f"summary.{key}_slower", layers_label(grown["slower"]))
record("summary.one_hop", str(one_hop_radii(base.n_layers, caps[DISTANCE])))
record("summary.doubling", str([min(2 ** layer - 1, caps[DISTANCE]) for layer in range(base.n_layers + 1)]))
for key, query in (("target", "target token"), ("edges", "edge tokens")):
    top = top_attention(attention, query)
    record(f"summary.attention_{key}_head", f"layer {top['layer']} head {top['head']}")
    record(f"summary.attention_{key}_share", top["share"], ".2f")
    record(f"summary.attention_{key}_category", top["category"])
    record(f"summary.attention_{key}_ratio", top["ratio"], ".1f")
    record(f"summary.attention_{key}_chance", top["chance"], ".2f")
extremes = ablation_extremes(ablation_summary)
record("summary.ablation_intact", extremes["intact"], ".3f")
record("summary.ablation_worst", extremes["worst"]["component"])
record("summary.ablation_worst_mse", extremes["worst"]["mse"], ".2f")
record("summary.ablation_mildest", extremes["mildest"]["component"])
record("summary.ablation_mildest_mse", extremes["mildest"]["mse"], ".3f")
record("summary.hand_built_mse", agreement["hand_built_mse"], ".2g")
record("summary.hand_built_layers", agreement["hand_built_layers"], ",")
for key in ("within_depth", "beyond_depth", "unreachable"):
    record(f"summary.trained_exact_{key}", agreement["trained_exact"][key], ".1%")
record("summary.beyond_depth_graphs", agreement["counts"]["beyond_depth"], ",")
results["recorded"] = record.results()
check_results(results)
path = write_results(config.results_dir, "07_learned_circuit", results)
print(f"results written to {path}")

# %% [markdown]
# ## Summary
#
# What this run measured (every number from the cells above):
#
# - Reading rule: a layer reads a fact up to $k$ when, for every $k' \le k$, the held-out AUC is
#   at least {{summary.auc}}, the held-out balanced accuracy at the cut-off tuned on a separate
#   validation set at least {{summary.balanced_accuracy}}, and the AUC beats the graph-statistics
#   probe by {{statistics.margin_z}} standard errors of the difference (paired bootstrap over
#   held-out graphs); every $k$ probed has at least {{probes.fewest_rarer}} held-out graphs of its
#   rarer answer.
# - On graphs whose target is reachable, chapter 2's {{summary.depth}}-layer model reads
#   "{{summary.distance_fact}}" ($k$ probed up to {{probes.distance_largest_k}}) up to $k$ =
#   {{summary.distance_stated}} after residual index 0 to {{summary.depth}}; one hop per layer
#   would give {{summary.one_hop}} and doubling ($2^l - 1$) {{summary.doubling}}. The radii are
#   ahead of one hop per layer after {{summary.distance_faster}} and behind it after
#   {{summary.distance_slower}}. Over its {{seeds.count}} seeds: {{seeds.distance}}
#   ({{seeds.ahead_share}} seed runs ahead of one hop per layer somewhere).
# - Reachability where 1 and $t$ both have an edge (statistics probe: AUC
#   {{summary.with_edges_statistics_low}} to {{summary.with_edges_statistics_high}}) is read up to
#   $k$ = {{summary.with_edges_stated}}; on all graphs up to {{summary.reachable_stated}}.
# - At the edge tokens, "within $k$ of vertex 1" is read up to {{summary.from_source_stated}} and
#   "within $k$ of $t$" up to {{summary.from_target_stated}}.
# - Against the three laws, over the radii of {{depths.models}} models before their last layer:
#   at the target token the RMS error is {{laws.hop_target_rms}} (one hop per layer),
#   {{laws.doubling_target_rms}} (doubling) and {{laws.tripling_target_rms}} ($3^l$), so
#   {{laws.best_target}} fits best; at the edge tokens {{laws.edges_ahead}} runs ahead of the
#   radii (mean errors {{laws.hop_edges_mean}}, {{laws.doubling_edges_mean}},
#   {{laws.tripling_edges_mean}}).
# - Attention from the target token: the most selective head is
#   {{summary.attention_target_head}}, which gives {{summary.attention_target_share}} of its
#   attention to {{summary.attention_target_category}} ({{summary.attention_target_ratio}} times
#   the {{summary.attention_target_chance}} of uniform attention). From the edge tokens:
#   {{summary.attention_edges_head}}, {{summary.attention_edges_share}} to
#   {{summary.attention_edges_category}} ({{summary.attention_edges_ratio}} times the
#   {{summary.attention_edges_chance}} of uniform attention).
# - Mean-ablating {{summary.ablation_worst}} raises the MSE most, from
#   {{summary.ablation_intact}} to {{summary.ablation_worst_mse}}; {{summary.ablation_mildest}}
#   least (to {{summary.ablation_mildest_mse}}).
# - Patching the probes' {{patching.dimension}}-dimensional subspace moves the prediction after
#   the last layer by {{patching.last_probe}} per unit of label difference (whole token
#   {{patching.last_token}}); it beats every random subspace and carries at least half of the
#   token's effect after {{patching.used}} ({{patching.used_share}} of the intermediate layers).
# - Within each true distance, the error's largest correlation with a graph statistic is
#   {{shortcut.correlation}} (the {{shortcut.strongest}}): it {{shortcut.verdict}}.
# - The hand-built model answers every graph exactly (MSE {{summary.hand_built_mse}}) with
#   {{summary.hand_built_layers}} layers; the trained one, rounded, is exact on
#   {{summary.trained_exact_within_depth}} of the reachable graphs whose distance is at most its
#   depth, {{summary.trained_exact_beyond_depth}} of those beyond
#   ({{summary.beyond_depth_graphs}} graphs) and {{summary.trained_exact_unreachable}} of the
#   unreachable ones.
# - Capacity lever ({{capacity.layers}}-layer models, capacity {{capacity.diameter}}): on graphs
#   beyond the capacity the graph statistics explain $R^2$ = {{capacity.beyond.r2_beyond.mean}} of
#   the answers of models trained beyond it and {{capacity.within.r2_beyond.mean}} of those trained
#   within it ({{capacity.direction}}; {{capacity.separated}}; of the true answer
#   {{capacity.truth_r2_beyond}}).
#
# Open: the probes are linear and read one token; a fact held across several tokens, or
# non-linearly, is not seen. The capacity experiment runs below the depth of chapter 2's model,
# because its graphs are too small to exceed the capacity of 2 layers.
