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
# {cite:p}`wang2024shortest`. This chapter opens chapter 2's model and asks, layer by layer:
#
# 1. **What does each layer know?** Linear probes on every residual stream, at the target token
#    ("$d(1, t) \le k$", on graphs whose target is reachable, and "$t$ is reachable", a probe of
#    its own) and at every edge token ("an endpoint is within $k$ steps of vertex 1", "... of
#    $t$"), scored threshold-free and at a tuned cut-off, with four controls: held-out graphs, the
#    same probes on shuffled labels, on a randomly initialised model of the same shape, and a
#    rival probe on statistics of the graph that need no search (edge count, degrees, ...);
#    also within bins of the edge count and, where `probe_seeds` > 1, over training seeds.
# 2. **Where does attention go?** The share of each head's attention that lands on edges sharing
#    an endpoint, on a shortest path, at $t$ or at vertex 1, against what uniform attention gives.
# 3. **Is what the probes read used?** Mean ablation of every head and block; patching the
#    probes' subspace from a graph at another distance, layer by layer, against random subspaces
#    of the same dimension and the whole token.
# 4. **Learned against hand-built:** the construction of chapter 1 on the same graphs; where
#    the trained model is exact, and whether its errors follow shortcuts (statistics of the
#    graph such as its edge count or the degrees of 1 and $t$).
# 5. **Depth:** the probes again on models of the same recipe with other numbers of layers.
#
# Nothing here is in the study; every claim below is a number computed in this run.

# %% tags=["parameters"]
smoke = False  # tiny run for tests (well under a minute)
seed = 0  # seeds every random draw of the chapter
device = "auto"  # "auto" (CUDA when present), "cpu", "cuda" or "cuda:K"
results_dir = "../results"  # results JSON and saved models go here; later chapters read them here
depths = [2, 6]  # encoder layers of the other models of chapter 2's recipe compared with it (chapter 2: 4)
probe_graphs = 2000  # fresh graphs the probes are trained on
probe_test_graphs = 2000  # held-out graphs the probes are scored on
probe_l2 = 0.001  # L2 penalty of the probes (on standardised activations)
reach_threshold = 0.9  # held-out balanced accuracy (at the cut-off tuned on training graphs) to read a fact
auc_threshold = 0.95  # held-out ROC AUC at which a probe reads its fact
probe_seeds = 3  # models of chapter 2's recipe probed: chapter 2's and ones trained here with the next seeds
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
    Chapter7Parameters, GraphSet, TrainedModel, depth_configs, from_base, hand_built_distances, model_rows,
    recipe_models, seed_configs,
)
from lib.chapters.ch7_figures import (
    ablation_figure, attention_fraction_figure, confusion_figure, example_figure, patching_figure,
    probe_grid_figure, reach_radius_figure,
)
from lib.chapters.ch7_results import (
    bins_table, check_results, depth_table, edge_bin_names, layers_label, model_table, preference_table, radii_table,
    radius_cell, random_reads_table, seeds_table, statistics_table,
)
from lib.paths.circuit_effects import (
    WEAK_CORRELATION, ablation_extremes, ablation_rows, attention_rows, patching_summary, strongest_shortcut,
    top_attention,
)
from lib.paths.hand_built_comparison import hand_built_adjacency, hand_built_rows
from lib.paths.reach_radii import (
    fact_radii, grid_results, growth, largest_ks, random_reads, reach_rows, seed_spread, span,
)
from lib.paths.activations import capture
from lib.paths.attention_fractions import attention_fractions
from lib.paths.causal import SHORTCUTS, ablate_components, patch_distance, shortcut_correlations
from lib.paths.finetuning import ensure_base_model, fallback_base_config
from lib.paths.layer_probes import (
    DISTANCE, EDGE_STATISTICS, FACTS, GRAPH_STATISTICS, REACHABLE, REACHABLE_WITH_EDGES, ReadCriteria,
    doubling_radii, edge_count_bins, fact_values, one_hop_radii, probe_model, statistics_probes, usable_ks,
)
from lib.paths.model import build_model
from lib.paths.token_graphs import UNREACHABLE

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
# Chapter 2's model, models of the same recipe with `depths` layers and with the next
# `probe_seeds - 1` seeds (trained here with chapter 2's code, `workers` at once, and kept in
# `results_dir`, so a rerun or an interrupted run picks them up; chapter 3 leaves the seeds'
# models there, the same models), and a randomly initialised model of chapter 2's shape for the
# probes' control.

# %%
started = time.perf_counter()
base = from_base(ensure_base_model(config.results_dir,
                                   fallback_base_config(seed=config.seed, device=str(config.device),
                                                        smoke=config.smoke), device=config.device))
# The other depths and the further seeds train at once, one worker process each.
depths, further_seeds = depth_configs(base.config, config.depths), seed_configs(base.config, config.probe_seeds - 1)
trained = recipe_models(depths | further_seeds, config.results_dir, workers=config.workers, device=config.device)
models: dict[str, TrainedModel] = {f"chapter 2 ({base.n_layers} layers)": base} | {name: trained[name] for name in depths}
seed_models = {further_seeds[name].seed: trained[name] for name in further_seeds}
random_init = build_model(base.config.model_config, seed=config.seed + 100, device=config.device).eval()
seconds["models"] = time.perf_counter() - started

recipe = base.config
train, test, held_out = (GraphSet.draw(recipe, count, config.seed + offset) for count, offset in
                         ((config.probe_graphs, 1), (config.probe_test_graphs, 2), (config.intervention_graphs, 3)))
predictions = {name: capture(model.model, held_out.tokens).prediction for name, model in models.items()}
model_summary = model_rows(models, held_out, predictions)
display(Markdown(model_table(model_summary, held_out.unreachable_label)))

# %% [markdown]
# ## What each layer knows
#
# Each probe is a logistic regression on one residual stream (index 0 is the embedding, index
# $l$ the output of layer $l$), fitted on `probe_graphs` fresh graphs and scored on
# `probe_test_graphs` held-out graphs in two ways: by ROC AUC, which needs no cut-off, and by
# balanced accuracy (the mean of the recall of "yes" and of "no", so 0.5 is chance whatever the
# base rate) at the logit cut-off that maximises the balanced accuracy on the training graphs.
# An unweighted logistic fit cut at logit 0 calls a rare class "no" even where it ranks it
# right, so its radius would be set by the cut-off rather than by the representation (it is
# recorded for comparison only). The thresholds $k$ are those at which both answers are common
# enough to score.
#
# The rival is the same probe on statistics of the graph that need no search: its edge count,
# duplicate edges, the vertices with an edge, the degrees of 1 and of $t$, whether the edge
# $(1, t)$ is present and whether 1 and $t$ both have an edge (at edge tokens also the degrees of
# the edge's endpoints). A layer reads a fact at $k$ only where its AUC beats the rival's by
# `STATISTICS_MARGIN` (or, where the rival leaves less room than that below 1, matches it).
#
# The reach radius of a layer under a criterion is the largest $k$ such that every threshold up
# to $k$ passes it: balanced accuracy at the tuned cut-off at least `reach_threshold`; AUC at
# least `auc_threshold`; AUC beyond the rival. The radius is *stated* only where the first two
# give the same radius, capped by the third; where they differ it is *disputed* and both are
# recorded. The same is done within three bins of the edge count (terciles of the held-out
# graphs'), so that the size of the graph cannot carry the fact.
#
# "$d(1, t) \le k$" is probed on graphs whose target is reachable only: on all graphs, the "no"
# answer for a large $k$ is almost always an unreachable target, and the probe would read
# reachability instead of distance. Reachability gets a probe of its own (reachable or not),
# scored at each $k$ on the graphs whose target is exactly $k$ steps away or unreachable: its
# radius says up to which distance a layer tells a reachable target from an unreachable one.
# The edge facts are probed on the edges that the vertex can reach, for the same reason.
# An unreachable target often has no edge at all, or vertex 1 has none, which needs no search
# to see; so reachability is probed a second time on the graphs where 1 and $t$ both have an
# edge (how much the rule "both have an edge" gives on all graphs is in the statistics probe's
# scores below).

# %%
started = time.perf_counter()
criteria = ReadCriteria(config.reach_threshold, config.auc_threshold)
ks = {fact: usable_ks(train, test, fact) for fact in FACTS}
bins = edge_count_bins(test.graphs)
largest = max(int(graphs.graphs.distance[graphs.graphs.distance < UNREACHABLE].max()) for graphs in (train, test))
statistics = statistics_probes(train, test, l2=config.probe_l2, ks=ks, bins=bins)
probes = {base.n_layers: probe_model(base.model, train, test, l2=config.probe_l2, ks=ks, bins=bins,
                                     seed=config.seed + 4)}
random_probes = probe_model(random_init, train, test, l2=config.probe_l2, ks=ks, bins=bins)
for name, model in models.items():
    if model is not base:
        probes[model.n_layers] = probe_model(model.model, train, test, l2=config.probe_l2, ks=ks, bins=bins,
                                             seed=config.seed + 4 + model.n_layers)
seconds["probes"] = time.perf_counter() - started
radii = {depth: fact_radii(model, statistics, criteria) for depth, model in probes.items()}
random_radii = fact_radii(random_probes, statistics, criteria)
probed = largest_ks(probes[base.n_layers])
print(f"thresholds: {ks}; largest distance in the probe graphs: {largest}; edge-count bin boundaries: {bins}")
print(f"held-out R^2 of a linear probe of d(1, t) at the target token (reachable targets), per index: "
      f"{[round(v, 3) for v in probes[base.n_layers].distance_r2.tolist()]}")
probe_grid_figure(probes[base.n_layers], random_probes, statistics).show()
record("statistics.graph_features", ", ".join(GRAPH_STATISTICS))
record("statistics.edge_features", " and ".join(EDGE_STATISTICS))
record("statistics.margin", criteria.margin, "g")
display(Markdown(markdown_table(*statistics_table(statistics), formats={2: lambda v: f"{v:.3f}"})))

# %% [markdown]
# The rival probe reads the graph's statistics alone ({{statistics.graph_features}}; at edge
# tokens also the {{statistics.edge_features}}); the table above gives its held-out AUC per fact
# and $k$. A layer reads a fact at $k$ only where its AUC beats this by at least
# {{statistics.margin}} (or matches it where it leaves less room than that).
#
# A randomly initialised model of the same shape, probed and scored the same way, reads what the
# table below gives per fact: its largest stated radius (beyond the statistics probe; "-":
# nothing beyond it) and the first residual index that states it, and without the rival, its
# largest radius at the tuned cut-off and by AUC and its best AUC. What a trained model reads
# beyond this is what training added.

# %%
random_reads_rows = random_reads(random_radii, random_probes)
display(Markdown(markdown_table(*random_reads_table(random_reads_rows))))

# %% [markdown]
# Under breadth-first search with one hop per layer, the radius after layer $l$ is $l$; a model
# that doubled path lengths every layer would reach $2^l$, and for reachability a search run
# from both ends at once, one hop per layer each, would tell targets up to $2l$ steps away.
# The dotted and dashed lines are the first two; each model's line is its stated radii (a gap
# where the radius is disputed), the black crosses what the randomly initialised model reads
# under the same rule (radii capped at the largest $k$ probed). Below the figure, the stated
# radii within each edge-count bin.
# The last stream of a model is the one its linear readout reads, so a model that answers well
# has every threshold readable there by construction: what a line says about the computation is
# in its points before the last.

# %%
reach_radius_figure(reach_rows(radii), probed, random_init={fact: value["stated"]
                                                          for fact, value in random_radii.items()}).show()
display(Markdown(markdown_table(*bins_table(radii[base.n_layers], bins, (DISTANCE, REACHABLE_WITH_EDGES)))))

# %% [markdown]
# Within bins of the edge count, each probe is scored on the held-out graphs of the bin, its
# cut-off tuned on the training graphs of the bin, against the statistics probe in the same bin,
# over the $k$ with both answers often enough in the bin ("-": no $k$ has); a radius below the
# first $k$ scored reads none. The table above gives the stated radii per residual index.

# %% [markdown]
# **Other seeds.** The same probes on models of chapter 2's recipe trained here with the next
# `probe_seeds - 1` seeds (trained or loaded above with the models of other depths), scored on
# the same graphs against the same statistics probe: how much a radius owes to one training run.

# %%
started = time.perf_counter()
seed_radii = {recipe.seed: radii[base.n_layers]}
seed_results = {recipe.seed: grid_results(probes[base.n_layers], None, radii[base.n_layers])}
for other_seed, other in seed_models.items():
    other_probes = probe_model(other.model, train, test, l2=config.probe_l2, ks=ks, bins=bins)
    seed_radii[other_seed] = fact_radii(other_probes, statistics, criteria)
    seed_results[other_seed] = grid_results(other_probes, None, seed_radii[other_seed])
spread = seed_spread(seed_radii)
seconds["seeds"] = time.perf_counter() - started
record("seeds.count", len(seed_radii), ",")
record("seeds.list", ", ".join(str(seed) for seed in seed_radii))
record("seeds.spread", verdict(len(seed_radii) > 1, yes="the range over the seeds",
                               no="one model's, with no spread over training seeds"))
display(Markdown(markdown_table(*seeds_table(spread, (DISTANCE, REACHABLE_WITH_EDGES)))))

# %% [markdown]
# Probed: {{seeds.count}} model(s) of chapter 2's recipe (seeds {{seeds.list}}). The table gives,
# per residual index, the stated radii ({{seeds.spread}}; "-": no seed states a radius there),
# and per index how many seeds' radius is disputed.

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
wanted = min(base.n_layers, largest)
row = int(torch.nonzero(distance == wanted)[0]) if (distance == wanted).any() else int(torch.argmin(distance))
hand_built_model = bfs_transformer(recipe.n_max)
example_reach = reach_by_layer(hand_built_model, hand_built_adjacency(held_out.graphs, recipe.n_max)[row])
example_figure(activations, held_out.graphs, row, example_reach).show()

# %% [markdown]
# ## Are the probed features used?
#
# **Ablation.** Each head, each layer's attention and each feed-forward block in turn outputs
# its mean over `probe_graphs` other graphs (mean ablation), and the loss is measured per true
# distance on the held-out graphs.

# %%
started = time.perf_counter()
ablation = ablate_components(base.model, held_out, train)
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
patching = patch_distance(base.model, held_out, probes[base.n_layers].distance_subspace(),
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
# ## Numbers and checks

# %% tags=["remove-output"]
assert agreement["hand_built_mse"] < 1e-6, "the hand-built model must be exact on these graphs"
assert all(abs(value) <= 1 for value in shortcuts.values())
# The distance probes saw reachable targets only; the reachability probe saw every graph.
assert len(fact_values(train.graphs, DISTANCE)) == int(train.reachable.sum()) < len(train.labels)
assert len(fact_values(train.graphs, REACHABLE)) == len(train.labels)
# A radius is stated only where the tuned cut-off and the AUC agree, never beyond the statistics probe.
assert all((stated is None) == disputed and (stated is None or stated <= beyond)
           for by_fact in radii.values() for r in by_fact.values()
           for stated, disputed, beyond in zip(r["stated"], r["disputed"], r["beyond_statistics"]))
# The results JSON: every probe grid with its ks, held-out AUC, tuned and untuned balanced
# accuracy, the statistics probe's scores, the scores per edge-count bin and its radii under every
# criterion, for the trained models, the random one and each seed of chapter 2's recipe.
results = {
    "seed": config.seed, "smoke": config.smoke, "models": model_summary, "largest_distance": largest,
    "reach_threshold": config.reach_threshold, "auc_threshold": config.auc_threshold,
    "statistics_margin": criteria.margin, "facts": list(FACTS),
    "held_out_graphs": config.probe_test_graphs, "edge_count_bins": list(bins),
    "edge_count_bin_names": edge_bin_names(bins),
    "statistics_features": {"graph": list(GRAPH_STATISTICS), "edge": list(EDGE_STATISTICS)},
    "probes": {str(depth): {"grids": grid_results(model, statistics, radii[depth]),
                            "distance_r2": model.distance_r2.tolist()} for depth, model in probes.items()},
    "probes_random_init": grid_results(random_probes, None, random_radii),
    "reach_radius": {str(depth): value for depth, value in reach_rows(radii).items()},
    "reach_radius_random_init": {fact: value["stated"] for fact, value in random_radii.items()},
    "reachable_with_edges_radius": radii[base.n_layers][REACHABLE_WITH_EDGES],
    "probes_by_seed": {str(seed): value for seed, value in seed_results.items()}, "seed_spread": spread,
    "attention": attention, "ablation": ablation_summary,
    "patching": {"dimension": patching.dimension, "pairs": patching.pairs, "probe": patching.probe.tolist(),
                 "random": patching.random.tolist(), "token": patching.token.tolist(),
                 "by_layer": patching.by_layer()},
    "shortcut_correlations": shortcuts, "shortcuts": list(SHORTCUTS), "hand_built": agreement,
    "seconds": seconds,
}

# The numbers the summary cites.
own, probed_k = radii[base.n_layers], largest_ks(probes[base.n_layers])
record("summary.balanced_accuracy", criteria.balanced_accuracy, "g")
record("summary.auc", criteria.auc, "g")
record("summary.depth", base.n_layers, ",")
record("summary.distance_fact", DISTANCE)
record("summary.distance_largest_k", probed_k[DISTANCE], ",")
for key, fact in (("distance", DISTANCE), ("reachable", REACHABLE), ("with_edges", REACHABLE_WITH_EDGES)):
    record(f"summary.{key}_stated", radius_cell(own[fact]["stated"]))
    low, high = span(statistics[fact].scores.auc)
    record(f"summary.{key}_statistics_low", low, ".3f")
    record(f"summary.{key}_statistics_high", high, ".3f")
    grown = growth(own[fact]["stated"], probed_k[fact])
    record(f"summary.{key}_faster", layers_label(grown["faster"]))
    record(f"summary.{key}_slower", layers_label(grown["slower"]))
    record(f"summary.{key}_unstated", layers_label(grown["unstated"]))
record("summary.one_hop", str(one_hop_radii(base.n_layers, probed_k[DISTANCE])))
record("summary.doubling", str(doubling_radii(base.n_layers, probed_k[DISTANCE])))
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
# - Reading rule: a layer reads a fact up to $k$ when, for every $k' \le k$, the held-out balanced
#   accuracy at the cut-off tuned on the training graphs is at least {{summary.balanced_accuracy}},
#   the held-out AUC at least {{summary.auc}}, and the AUC beats the statistics probe by
#   {{statistics.margin}}; where the first two give different radii, the radius is disputed.
# - On graphs whose target is reachable, the probes of chapter 2's {{summary.depth}}-layer model
#   read "{{summary.distance_fact}}" ($k$ probed up to {{summary.distance_largest_k}}) up to
#   $k$ = {{summary.distance_stated}} after residual index 0 to {{summary.depth}} (under each
#   criterion in the first table below); one hop per layer would give {{summary.one_hop}} and
#   doubling {{summary.doubling}}. The stated radii are ahead of one hop per layer after
#   {{summary.distance_faster}}, behind it after {{summary.distance_slower}}, and disputed (the
#   tuned cut-off and the AUC disagree) after {{summary.distance_unstated}}.
# - Reachability on all graphs is read up to $k$ = {{summary.reachable_stated}}, where the
#   statistics probe alone scores AUC {{summary.reachable_statistics_low}} to
#   {{summary.reachable_statistics_high}}; on the graphs where 1 and $t$ both have an edge
#   (statistics probe: AUC {{summary.with_edges_statistics_low}} to
#   {{summary.with_edges_statistics_high}}) up to $k$ = {{summary.with_edges_stated}}: ahead of
#   one hop per layer after {{summary.with_edges_faster}}, disputed after
#   {{summary.with_edges_unstated}}.
# - Controls: the best held-out AUC of each probe trained on shuffled labels is in the first
#   table below; what a randomly initialised model reads is in the table of the section "What
#   each layer knows". The edge facts' radii are in the first table below, the radii within
#   edge-count bins and over seeds in the tables of that section.
# - The models of other depths, on the same reachable graphs: the second table below. The last
#   layer's stream is what the linear readout reads, so an accurate model's probes read every
#   $k$ there; the informative layers are the earlier ones.
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

# %%
display(Markdown(markdown_table(*radii_table(probes[base.n_layers], own))))
display(Markdown(markdown_table(*depth_table(radii, probed_k))))
