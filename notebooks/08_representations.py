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
# # Representations: which irreps does each seed learn, and do they decide the group?
#
# Chapters 4 to 6 measured *which* group a seed of the S4 / A4 x Z2 pair groks, whether the
# grokkers are simpler, and when the choice is made. This chapter asks *what* each seed computes.
# Networks trained on one group's multiplication are known to compute it through the group's
# irreducible representations (irreps), a different subset in different seeds
# {cite:p}`chughtai2023toy`; networks that grok S5 and S6 have also been read as computing the
# product through cosets of subgroups {cite:p}`stander2024cosets`. Both lenses apply to the
# seeds of chapter 4, whose training pairs are explained equally well by two groups.
#
# What you will see:
#
# - the irreducible characters of S4 and of A4 x Z2 computed from their Cayley tables alone, the
#   isotypic projectors built from them, and how the two groups' components overlap on the one
#   labelled set they share;
# - the readout checked where the answer is known: models built inside one component, untrained
#   models, and networks trained on one group alone;
# - every seed of chapter 4's sweep (and more seeds of its stream) read under both groups: the
#   share of its embeddings in each component, its key irreps, its loss with only those irreps
#   and without them, and where the neurons of the seeds that grok neither group sit;
# - the profile along training: how early it tells the outcome, beside chapter 6's prediction
#   from accuracies, and whether it settles before the accuracy moves;
# - the coset reading of the same neurons, against what the irreps alone imply.

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
extra_instances = 2000  # further seeds of chapter 4's seed stream, after the sweep's, trained here so that the rare A4 x Z2 grokkers are more than a handful (0: none)
neither_sample = 150  # seeds that grokked neither group, drawn at random, retrained with snapshots beside every grokker
snapshot_every = 50  # epochs between the snapshots of the retrained seeds
single_group_seeds = 16  # seeds trained on the whole table of one group alone, for each group (the known answer)
settle_tolerance = 0.1  # total variation distance from its final irrep profile within which a seed's profile counts as settled
moved_accuracy = 0.7  # accuracy on the table of its group at which a grokking seed has left the plateau of memorizing (the intersection alone gives 336 of 576 pairs, 0.583)
coset_threshold = 0.1  # Stander et al.'s within-coset variance ratio at or below which a neuron counts as a coset neuron
predict_folds = 5  # folds of the held-out predictions (chapter 6's)
workers = 2  # single-threaded worker processes training the sweeps on a CPU

# %% tags=["hide-input"]
import math
import time

import torch
from IPython.display import Markdown, display

from lib.book.params import validate_parameters
from lib.book.plotting import configure_notebook_rendering
from lib.book.record import Record, verdict
from lib.book.reproducibility import seed_everything
from lib.book.results import write_results
from lib.book.tables import markdown_table
from lib.chapters.ch8 import Chapter8Parameters, retrain_chosen, seeds_of_the_pair, single_group_runs
from lib.chapters.ch8_figures import (
    coset_figure, neuron_cells_figure, over_training_figure, prediction_figure, profiles_figure, settle_figure,
)
from lib.chapters.ch8_results import (
    GROUP_KEYS, OUTCOME_KEYS, OUTCOMES, at_epoch, character_table_markdown, check_results, component_key,
    first_at_or_above, key_sets, masks, mean_rows, median, overlap_markdown, shares_markdown,
)
from lib.grokking.early_prediction import early_prediction
from lib.grokking.irrep_readout import irrep_profile, overlap_dimensions, project_embeddings
from lib.grokking.irrep_trajectory import auc_over_epochs, profiles_over_training, settle_epochs
from lib.grokking.mlp import init_instances
from lib.book.statistics import wilson_interval
from lib.grokking.outcomes import first_epoch_at_or_above
from lib.grokking.pair_irreps import pair_irreps, read_cosets, read_seeds, restrict_to_key
from lib.grokking.pairs import make_pair
from lib.grokking.study import S4_MODEL_NO_BIAS, S4_PAIR
from lib.grokking.study_sweep import GROUPS, outcome_groups

config = validate_parameters(Chapter8Parameters, globals())
config.use_sweep_backend()
seed_everything(config.seed)
configure_notebook_rendering()
seconds = {}
record = Record()  # the numbers the prose cites as {{key}}; they also go to the results JSON

# %% [markdown]
# ## The published scale
#
# The defaults read chapter 4's 1,000 seeds and train 2,000 more of the same stream on a CPU. The
# study's sweep had 10,000 seeds {cite:p}`wu2025ambiguous`; after chapter 4 ran at its published
# scale into the same `results_dir`, the chapter reads those on a GPU with
#
# ```
# papermill 08_representations.ipynb out.ipynb -f published/08.yaml
# ```
#
# (the parameters in `notebooks/published/08.yaml`: no extra seeds, 1,000 seeds that grokked neither
# retrained beside every grokker with a snapshot every 20 epochs, 100 seeds per group trained on one
# group alone). On a Ray cluster add `-p sweep_backend ray -p ray_address auto`.

# %% [markdown]
# ## Characters from the Cayley tables
#
# A representation of a group sends each element to a matrix so that products go to products; an
# irreducible one has no smaller part that does so too, and its *character* is the trace of the
# matrices, a function constant on conjugacy classes. The characters here are computed from the
# multiplication tables alone (`lib.grokking.characters`, Burnside's method: the class sums of the
# group algebra multiply with integer coefficients, and the characters are the common eigenvectors
# of those coefficient matrices), and checked against the orthogonality relations.
#
# From a character $\chi_\rho$ of degree $d_\rho$ comes the projector
# $P_\rho[x, y] = \tfrac{d_\rho}{|G|}\,\overline{\chi_\rho(x y^{-1})}$ onto the functions on the group
# built from $\rho$'s matrix entries (its isotypic component, $d_\rho^2$ dimensions of the $N = 24$).
# The projectors split any function on the group, and so any weight matrix whose rows or columns
# are indexed by group elements, into parts that add up. A complex character and its conjugate
# are taken together as one real component, so that the weights stay real. The irreps are named by
# degree and a letter; the columns give one element of each conjugacy class and the class size.

# %%
pair = make_pair(S4_PAIR)
irreps = pair_irreps(pair)
S4, A4Z2 = irreps.names
for name in irreps.names:
    display(Markdown(f"**{name}**\n\n" + character_table_markdown(irreps.characters[name])))
orthogonality_error, projector_error = {}, {}
for name in irreps.names:
    table, projectors = irreps.characters[name], irreps.projectors[name]
    sizes = table.class_sizes.to(torch.complex128)
    gram = (table.values * sizes) @ table.values.conj().T / 24
    orthogonality_error[name] = float((gram - torch.eye(table.n_irreps)).abs().max())
    identity = torch.eye(24, dtype=torch.float64)
    projector_error[name] = max(float((projectors.sum(dim=0) - identity).abs().max()),
                                float((projectors @ projectors - projectors).abs().max()))
    record(f"chars.{GROUP_KEYS[name]}_dims", ", ".join(str(d) for d in table.dimensions))
    record(f"chars.{GROUP_KEYS[name]}_classes", table.n_irreps, "d")
    record(f"chars.{GROUP_KEYS[name]}_components", len(table.components), "d")
record("chars.orthogonality_error", max(orthogonality_error.values()), ".0e")
record("chars.projector_error", max(projector_error.values()), ".0e")
transposition = pair.g1.element_names.index("(1 2)")
s4_names = irreps.characters[S4].component_names
record("chars.s4_3a_transposition", float(irreps.characters[S4].values[s4_names.index("3a"),
                                                                         irreps.characters[S4].class_of[transposition]].real), "+.0f")

# %% [markdown]
# S4 has {{chars.s4_classes}} irreps of degrees {{chars.s4_dims}}; its 3a takes the value
# {{chars.s4_3a_transposition}} on the transposition (1 2), so it is the standard representation
# (S4 permuting four points, less the trivial part) and 3b is the standard one times the sign.
# A4 x Z2 has {{chars.a4z2_classes}} irreps of degrees {{chars.a4z2_dims}}: A4's four irreps times
# the two characters of Z2, two conjugate pairs among them, hence {{chars.a4z2_components}} real
# components. The characters are orthonormal to {{chars.orthogonality_error}} and the projectors
# idempotent and summing to the identity to {{chars.projector_error}}.
#
# Both groups live on the same 24 labels (chapter 4), so each splits the same space of functions
# in its own way. How many dimensions does each S4 component share with each A4 x Z2 component?

# %%
overlaps = overlap_dimensions(irreps.projectors[S4], irreps.projectors[A4Z2])
display(Markdown(overlap_markdown(overlaps, irreps.characters[S4], irreps.characters[A4Z2])))
a4_names = irreps.characters[A4Z2].component_names
record("overlap.sign", int(round(float(overlaps[s4_names.index("1b"), a4_names.index("1b")]))), "d")
record("overlap.shared_3", int(round(float(overlaps[s4_names.index("3a"), a4_names.index("3a")]))), "d")
record("overlap.cross_3", int(round(float(overlaps[s4_names.index("3a"), a4_names.index("3b")]))), "d")
record("overlap.cells", len(irreps.cell_components), "d")
cell_names = irreps.cell_names()

# %% [markdown]
# The two groups' projectors commute, so the 24 dimensions split into {{overlap.cells}} cells, each
# inside one component of each group. The sign of S4 and the sign of the Z2 factor are the same
# function on the labels ({{overlap.sign}} shared dimension): both are +1 on A4 and -1 on the other
# half. S4's standard irrep 3a shares {{overlap.shared_3}} of its 9 dimensions with A4 x Z2's 3a
# (A4's 3-dimensional irrep, the same on both halves) and {{overlap.cross_3}} with 3b. So the two
# readouts are not independent: a function inside S4's 3a is never more than
# {{overlap.shared_3}}/9 inside one component of A4 x Z2, and the other way round. The cells are
# named "S4 component & A4 x Z2 component".

# %% [markdown]
# ## The seeds
#
# The seeds are those of chapter 4's S4 sweep without the unembedding bias, the sweep chapters 5 and
# 6 measure: loaded from `results_dir` when chapter 4 saved it, otherwise trained here with chapter
# 4's code (`lib.grokking.study_sweep.load_s4_sweep`, as in chapters 5 and 6; the cell says which). The study's published runs had the bias; with it, seeds that grok
# A4 x Z2 are rarer still (chapter 4 gives both sweeps' counts), too rare for anything per outcome on
# a CPU. To have more than a handful of A4 x Z2 grokkers, `extra_instances` further seeds of the same
# stream are trained here with the same model and schedule.

# %%
started = time.perf_counter()
seeds = seeds_of_the_pair(config)
joined = seeds.joined
groups = outcome_groups(joined, config.grok_threshold)
seconds["seeds"] = time.perf_counter() - started
counts = {name: int((groups == code).sum()) for code, name in enumerate(GROUPS)}
print(f"chapter 4's sweep: {seeds.sweep.source}" + (f" ({seeds.sweep.file_name})" if seeds.sweep.path else "")
      + f", {seeds.n_sweep} seeds; {seeds.n_extra} more trained here in {seeds.extra_seconds:.0f} s; outcomes: {counts}")
record("seeds.source", verdict(seeds.sweep.source == "checkpoint", yes="loaded from chapter 4's run",
                               no="trained here with chapter 4's code (chapter 4's saved sweep was not in results_dir)"))
record("seeds.sweep", seeds.n_sweep, ",")
record("seeds.extra", seeds.n_extra, ",")
record("seeds.total", joined.n_instances, ",")
record("seeds.epochs", joined.training_config.epochs, ",")
for code, key in enumerate(OUTCOME_KEYS[:3]):
    low, high = wilson_interval(counts[GROUPS[code]], joined.n_instances)
    record(f"seeds.{key}", counts[GROUPS[code]], ",")
    record(f"seeds.{key}_low", low, ".2%")
    record(f"seeds.{key}_high", high, ".2%")
initial = init_instances(joined.seeds.tolist(), joined.model_config)

# %% [markdown]
# Of {{seeds.total}} seeds ({{seeds.sweep}} of chapter 4's sweep, {{seeds.source}}, and
# {{seeds.extra}} more), {{seeds.s4}} grokked S4 (95% interval {{seeds.s4_low}} to
# {{seeds.s4_high}}), {{seeds.a4z2}} grokked A4 x Z2 ({{seeds.a4z2_low}} to {{seeds.a4z2_high}})
# and {{seeds.neither}} neither, after {{seeds.epochs}} epochs.

# %% [markdown]
# ## Known answers
#
# The readout (`lib.grokking.irrep_readout`) follows Chughtai et al. {cite:p}`chughtai2023toy`: a
# model's *total embeddings* $L = E_\text{left} W_\text{left}$ and $R = E_\text{right} W_\text{right}$
# (neuron j's pre-activation as a function of each input) and its unembedding $U$ are read as
# functions on the group, and the share of their squared norm in each component is its *profile*
# (L and R pooled). A component is *key* when the model's logits over answers $z$ look like
# $\chi_\rho(x y z^{-1})$, the logits of the representation algorithm, with a mean cosine above
# their threshold of 0.05. Three checks where the answer is known:
#
# - a model whose embeddings and unembedding are projected onto one component must read 100% there;
# - untrained models (the seeds' own initial weights) must read each component's share of the
#   dimensions, $d_\rho^2 / 24$, on average;
# - networks with the sweep's model and schedule trained on the *whole table of one group alone*
#   compute that group; they must use a faithful set of its irreps (no element but the identity
#   acting trivially in all of them), keep their loss when restricted to their key irreps and be no
#   better than chance, $\log 24$ = 3.18, without them.

# %%
started = time.perf_counter()
confined_min = 1.0
probe = init_instances(range(4), S4_MODEL_NO_BIAS)
for name in irreps.names:
    for component, projector in enumerate(irreps.projectors[name]):
        profile = irrep_profile(project_embeddings(probe, projector.float(), unembed=True), irreps.projectors[name])
        confined_min = min(confined_min, float(profile.embedding[:, component].min()),
                           float(profile.unembed[:, component].min()))
record("known.confined_min", confined_min, ".6f")
init_deviation = 0.0
for name in irreps.names:
    expected = torch.tensor(irreps.characters[name].component_dimensions, dtype=torch.float64) / 24
    shares = irrep_profile(initial, irreps.projectors[name]).embedding.mean(dim=0)
    init_deviation = max(init_deviation, float((shares - expected).abs().max()))
record("known.init_deviation", init_deviation, ".3f")
single = single_group_runs(config, joined)
single_reading = {name: read_seeds(irreps, result.final_params) for name, result in single.items()}
single_losses = {}
record("known.single_seeds", config.single_group_seeds, ",")
for name, result in single.items():
    reading, key = single_reading[name], GROUP_KEYS[name]
    losses = restrict_to_key(irreps, result.final_params, reading.key[name], name)
    single_losses[name] = {variant: median(by_table[name]) for variant, by_table in losses.items()}
    sets = key_sets(reading.key[name], irreps.characters[name].component_names)
    record(f"known.{key}_accuracy_min", float(result.final("acc_test").min()), ".3f")
    record(f"known.{key}_faithful", int(reading.faithful[name].sum()), ",")
    record(f"known.{key}_sets", len(sets), "d")
    record(f"known.{key}_top_set", sets[0][0])
    record(f"known.{key}_top_count", sets[0][1], ",")
    for variant, value in single_losses[name].items():
        record(f"known.{key}_{variant}", value, ".3f")
known_answers_hold = (confined_min > 0.999 and init_deviation < 0.02 and all(
    bool(single_reading[name].faithful[name].all()) and single_losses[name]["restricted"] < 0.1
    and single_losses[name]["excluded"] > math.log(24) - 0.1 for name in irreps.names))
record("known.verdict", verdict(known_answers_hold, yes="finds what it should", no="misses a known answer"))
seconds["known_answers"] = time.perf_counter() - started

# %% [markdown]
# Every model confined to one component reads at least {{known.confined_min}} there. The untrained
# seeds read each component's share of the dimensions to within {{known.init_deviation}} on average.
# Of {{known.single_seeds}} networks trained on S4's whole table, the least accurate reaches
# {{known.s4_accuracy_min}}; {{known.s4_faithful}} use a faithful set of S4's irreps, in
# {{known.s4_sets}} different key sets (the most common, {{known.s4_top_set}}, in
# {{known.s4_top_count}} seeds); their median loss on S4's table is {{known.s4_full}} whole,
# {{known.s4_restricted}} restricted to their key irreps and {{known.s4_excluded}} without them. On
# A4 x Z2's whole table: accuracy at least {{known.a4z2_accuracy_min}}, {{known.a4z2_faithful}}
# faithful, {{known.a4z2_sets}} key sets (most common {{known.a4z2_top_set}}, {{known.a4z2_top_count}}
# seeds), median loss {{known.a4z2_full}} whole, {{known.a4z2_restricted}} restricted and
# {{known.a4z2_excluded}} without them. The readout **{{known.verdict}}**.

# %% [markdown]
# ## What each seed holds at the end
#
# Every seed is read under both groups. The table gives the mean profile (shares of the pooled
# embeddings) of each outcome group, and of the same seeds at initialization, the rival that
# training changed nothing.

# %%
started = time.perf_counter()
reading = read_seeds(irreps, joined.final_params)
at_init = read_seeds(irreps, initial)
group_counts = [counts[name] for name in GROUPS] + [joined.n_instances]
profile_rows = {}
for name in irreps.names:
    names = irreps.characters[name].component_names
    profile_rows[name] = mean_rows(reading.profile[name].embedding, groups, at_init.profile[name].embedding)
    display(Markdown(f"**Read with {name}'s irreps** (mean share of the embeddings' norm)\n\n"
                     + shares_markdown(profile_rows[name], names, group_counts)))
    for row, outcome in zip(profile_rows[name], OUTCOME_KEYS):
        for component, value in zip(names, row.tolist()):
            record(f"profile.{outcome}.{GROUP_KEYS[name]}.{component_key(component)}", value, ".2f")
profiles_figure(profile_rows, {name: irreps.characters[name].component_names for name in irreps.names}).show()

# %% [markdown]
# Seeds that grokked S4 hold, on average, {{profile.s4.s4.3a}} of their embeddings' norm in S4's
# standard irrep 3a and {{profile.s4.s4.1b}} in the sign 1b; read with A4 x Z2's irreps, the same
# embeddings split {{profile.s4.a4z2.3a}} / {{profile.s4.a4z2.3b}} between its two 3-dimensional
# components (S4's 3a itself splits {{overlap.shared_3}} : {{overlap.cross_3}} between them). Seeds that grokked A4 x Z2 hold
# {{profile.a4z2.a4z2.3a}} in A4 x Z2's 3a and {{profile.a4z2.a4z2.1b}} in the sign, and split
# {{profile.a4z2.s4.3a}} / {{profile.a4z2.s4.3b}} between S4's 3a and 3b. The seeds that grokked
# neither hold {{profile.neither.s4.3a}} / {{profile.neither.s4.3b}} in S4's two 3-dimensional
# components, against {{profile.init.s4.3a}} / {{profile.init.s4.3b}} at initialization, and
# {{profile.neither.s4.2a}} in 2a (initialization {{profile.init.s4.2a}}) and {{profile.neither.s4.1a}}
# in the trivial component (initialization {{profile.init.s4.1a}}).
#
# Which components are *key* (their logits' similarity to $\chi(x y z^{-1})$ above 0.05), and is
# the key set faithful for the group the seed grokked?

# %%
key_rows = []
for code, (outcome, key) in enumerate(zip(GROUPS, OUTCOME_KEYS)):
    for name in irreps.names:
        members = groups == code
        sets = key_sets(reading.key[name][members], irreps.characters[name].component_names)
        top, top_count = sets[0] if sets else ("none", 0)
        faithful = int(reading.faithful[name][members].sum())
        key_rows.append([outcome, name, int(members.sum()), top, top_count, len(sets), faithful])
        record(f"key.{key}.{GROUP_KEYS[name]}.top", top)
        record(f"key.{key}.{GROUP_KEYS[name]}.top_count", top_count, ",")
        record(f"key.{key}.{GROUP_KEYS[name]}.sets", len(sets), ",")
        record(f"key.{key}.{GROUP_KEYS[name]}.faithful", faithful, ",")
display(Markdown(markdown_table(["outcome", "read with", "seeds", "most common key set", "seeds with it",
                                 "key sets", "faithful"], key_rows)))

# %% [markdown]
# Of the {{seeds.s4}} seeds that grokked S4, {{key.s4.s4.top_count}} have the key set
# {{key.s4.s4.top}} under S4 ({{key.s4.s4.sets}} different sets among them, {{key.s4.s4.faithful}}
# faithful for S4); of the {{seeds.a4z2}} A4 x Z2 grokkers, {{key.a4z2.a4z2.top_count}} have
# {{key.a4z2.a4z2.top}} under A4 x Z2 ({{key.a4z2.a4z2.sets}} sets, {{key.a4z2.a4z2.faithful}} faithful
# for A4 x Z2). The {{known.single_seeds}} networks trained on one group's whole table used
# {{known.s4_sets}} (S4) and {{known.a4z2_sets}} (A4 x Z2) different key sets. The seeds that grokked
# neither most often have the key set {{key.neither.s4.top}} under S4 ({{key.neither.s4.top_count}}
# of {{seeds.neither}}, {{key.neither.s4.sets}} sets) and {{key.neither.a4z2.top}} under A4 x Z2
# ({{key.neither.a4z2.top_count}}).
#
# ## Restricted to the key irreps, and without them
#
# Chughtai et al. check an account of a network by keeping only its key irreps in the embeddings
# (restricted loss) or removing them (excluded loss) {cite:p}`chughtai2023toy`. Here the loss is
# the mean cross-entropy on each group's full table, median over the seeds; grokkers are restricted
# to their key components of the group they grokked, the seeds that grokked neither (the same sample
# that is retrained below) to their key components under each group. Chance is $\log 24$ = 3.18.

# %%
generator = torch.Generator().manual_seed(config.seed + 8)
chosen, retrained = retrain_chosen(config, joined, groups, generator)
chosen_groups = groups[chosen]
chosen_params = {k: v[chosen] for k, v in joined.final_params.items()}
restriction_rows, restriction = [], {}
for code, (outcome, key) in enumerate(zip(GROUPS, OUTCOME_KEYS[:3])):
    members = chosen_groups == code
    by = irreps.names[code:code + 1] if code < 2 else irreps.names
    for name in by:
        label = f"{key}_by_{GROUP_KEYS[name]}"
        if bool(members.any()):
            params = {k: v[members] for k, v in chosen_params.items()}
            losses = restrict_to_key(irreps, params, reading.key[name][chosen][members], name)
            restriction[label] = {variant: {table: median(values) for table, values in by_table.items()}
                                  for variant, by_table in losses.items()}
        else:
            restriction[label] = {variant: {table: float("nan") for table in irreps.names}
                                  for variant in ("full", "restricted", "excluded")}
        for variant, by_table in restriction[label].items():
            for table, value in by_table.items():
                record(f"restrict.{label}.{variant}.{GROUP_KEYS[table]}", value, ".3f")
            restriction_rows.append([outcome, name, int(members.sum()), variant,
                                     *(f"{by_table[t]:.3f}" for t in irreps.names)])
display(Markdown(markdown_table(["outcome", "key irreps of", "seeds", "embeddings", "loss on S4", "loss on A4xZ2"],
                                restriction_rows)))
# The grokkers of each group, restricted to their key irreps of it: loss below 0.1 on its table,
# and within 0.1 of chance without them (a group without grokkers in this run is not judged).
grokker_checks = [restriction[f"{key}_by_{GROUP_KEYS[name]}"] for key, name in zip(OUTCOME_KEYS[:2], irreps.names)]
judged = [(check, name) for check, name in zip(grokker_checks, irreps.names) if not math.isnan(check["full"][name])]
key_irreps_suffice = bool(judged) and all(check["restricted"][name] < 0.1 and check["excluded"][name] > math.log(24) - 0.1
                                          for check, name in judged)
record("restrict.verdict", verdict(key_irreps_suffice, yes="keeps", no="does not keep"))
seconds["readout"] = time.perf_counter() - started

# %% [markdown]
# A seed that grokked S4, restricted to its key S4 irreps, has median loss
# {{restrict.s4_by_s4.restricted.s4}} on S4's table (whole: {{restrict.s4_by_s4.full.s4}}); without
# them {{restrict.s4_by_s4.excluded.s4}}, chance. A seed that grokked A4 x Z2: restricted
# {{restrict.a4z2_by_a4z2.restricted.a4z2}} on A4 x Z2's table (whole {{restrict.a4z2_by_a4z2.full.a4z2}}),
# without them {{restrict.a4z2_by_a4z2.excluded.a4z2}}. In short a grokker **{{restrict.verdict}}**
# its loss with its key irreps alone (restricted below 0.1 and excluded within 0.1 of chance, for
# both groups' grokkers), as the representation account of Chughtai et al. has it. The seeds that
# grokked neither have median loss {{restrict.neither_by_s4.full.s4}} on S4's table and
# {{restrict.neither_by_s4.full.a4z2}} on A4 x Z2's, whole; restricted to their key components under
# S4, {{restrict.neither_by_s4.restricted.s4}} and {{restrict.neither_by_s4.restricted.a4z2}}.
#
# ## What the seeds that grok neither hold
#
# The pooled profile of a seed that grokked neither looks like an untrained one. Neuron by neuron
# it does not: each neuron's pre-activations (a column of L or R) can be placed in the cells of the
# two groups' common refinement. A neuron's *purity* is the share of its norm in its own largest
# cell; the figure stacks the weight of the neurons (their share of the seed's norm) by their
# largest cell.

# %%
top_rows = mean_rows(reading.top_cells, groups, at_init.top_cells)
purity_rows = mean_rows(reading.purity[:, None], groups, at_init.purity[:, None])[:, 0]
neuron_cells_figure(top_rows, cell_names, purity_rows).show()
for outcome, purity_value, top in zip(OUTCOME_KEYS, purity_rows.tolist(), top_rows):
    record(f"neurons.{outcome}.purity", purity_value, ".2f")
    order = top.nan_to_num(-1).argsort(descending=True)
    record(f"neurons.{outcome}.first_cell", cell_names[int(order[0])])
    record(f"neurons.{outcome}.first_weight", float(top[order[0]]), ".2f")
    record(f"neurons.{outcome}.second_cell", cell_names[int(order[1])])
    record(f"neurons.{outcome}.second_weight", float(top[order[1]]), ".2f")
    record(f"neurons.{outcome}.two_cells", float(top[order[0]] + top[order[1]]), ".2f")

# %% [markdown]
# Trained neurons are far purer than untrained ones: mean purity {{neurons.s4.purity}} in the S4 grokkers,
# {{neurons.a4z2.purity}} in the A4 x Z2 grokkers and {{neurons.neither.purity}} in the seeds that
# grokked neither, against {{neurons.init.purity}} at initialization. The S4 grokkers' neuron weight
# sits in {{neurons.s4.first_cell}} ({{neurons.s4.first_weight}}) and {{neurons.s4.second_cell}}
# ({{neurons.s4.second_weight}}); the A4 x Z2 grokkers' in {{neurons.a4z2.first_cell}}
# ({{neurons.a4z2.first_weight}}) and {{neurons.a4z2.second_cell}} ({{neurons.a4z2.second_weight}})
# (a cell is named by its S4 component, then its A4 x Z2 component). The seeds that grokked neither
# put their largest weight in {{neurons.neither.first_cell}} ({{neurons.neither.first_weight}}), then
# {{neurons.neither.second_cell}} ({{neurons.neither.second_weight}}): their two largest cells hold
# {{neurons.neither.two_cells}} of the neuron weight, against {{neurons.s4.two_cells}} in the S4
# grokkers and {{neurons.a4z2.two_cells}} in the A4 x Z2 grokkers. Their features are much purer
# than at initialization but spread over more cells, and their pooled profile (the table above)
# puts no single irrep of either group above the rest as the grokkers' does.

# %% [markdown]
# ## When is it decided?
#
# Every grokker and {{time.neither_sample}} seeds that grokked neither are trained again from their
# initial weights with the same code and schedule, keeping a snapshot every `snapshot_every` epochs
# (`lib.grokking.perturbation.retrain_with_snapshots`, chapter 6's). At every snapshot a logistic
# regression predicts each seed's outcome from its pooled embedding shares in the cells, every seed
# scored by a regression fitted without it (chapter 6's held-out AUC,
# `lib.grokking.irrep_trajectory`); beside it, chapter 6's prediction from the same seeds' logged
# accuracies and loss (`lib.grokking.early_prediction`) at the same epochs.

# %%
started = time.perf_counter()
retrained_groups = outcome_groups(retrained, config.grok_threshold)
same_outcome = int((retrained_groups == chosen_groups).sum())
record("time.retrained", len(chosen), ",")
record("time.neither_sample", int((chosen_groups == 2).sum()), ",")
record("time.same_outcome", same_outcome, ",")
epochs, cell_shares = profiles_over_training(retrained.checkpoints, irreps.cells)
prediction_generator = torch.Generator().manual_seed(config.seed + 9)
by_irreps = auc_over_epochs(cell_shares, epochs, retrained_groups, config.predict_folds, prediction_generator)
by_accuracy = early_prediction(retrained, retrained_groups, config.snapshot_every, config.predict_folds,
                               prediction_generator)
prediction_figure(by_irreps, by_accuracy).show()
readable = {}
for source, prediction in (("irreps", by_irreps), ("accuracy", by_accuracy)):
    for which in ("either", "group"):
        first = first_at_or_above(prediction, 0.9, which)
        readable[(source, which)] = first
        record(f"time.{source}_{which}_from", verdict(first >= 0, yes=f"epoch {first:,}", no="no epoch of the run"))
        for fraction, label in ((0.25, "quarter"), (0.5, "half")):
            record(f"time.{source}_{which}_{label}", at_epoch(prediction, int(fraction * retrained.training_config.epochs),
                                                                 which), ".2f")
record("time.quarter_epoch", int(0.25 * retrained.training_config.epochs), ",")
record("time.half_epoch", int(0.5 * retrained.training_config.epochs), ",")
record("time.folds", f"{by_irreps.folds[0]} and {by_irreps.folds[1]}")
irreps_first, accuracy_first = readable[("irreps", "either")], readable[("accuracy", "either")]
irreps_before_accuracy = irreps_first >= 0 and (accuracy_first < 0 or irreps_first < accuracy_first)
record("time.irreps_before_accuracy", verdict(irreps_before_accuracy, yes="earlier than", no="not earlier than"))

# %% [markdown]
# {{time.same_outcome}} of the {{time.retrained}} retrained seeds end as they did in the sweep.
# Grokked either group against neither: from the irrep profile the held-out AUC stays at or above 0.9
# from {{time.irreps_either_from}}, from the accuracies and loss from {{time.accuracy_either_from}}; at
# epoch {{time.quarter_epoch}} the two AUCs are {{time.irreps_either_quarter}} and
# {{time.accuracy_either_quarter}}, at epoch {{time.half_epoch}} {{time.irreps_either_half}} and
# {{time.accuracy_either_half}}. S4 against A4 x Z2 among the grokkers: at or above 0.9 from
# {{time.irreps_group_from}} (irreps) and {{time.accuracy_group_from}} (accuracies); at epoch
# {{time.quarter_epoch}} {{time.irreps_group_quarter}} and {{time.accuracy_group_quarter}}, at epoch
# {{time.half_epoch}} {{time.irreps_group_half}} and {{time.accuracy_group_half}} (folds
# {{time.folds}}; with few A4 x Z2 grokkers this second AUC is coarse). The representation tells the
# outcome **{{time.irreps_before_accuracy}}** the accuracies do. The first point of each curve, epoch
# 0, reads the untrained seeds: the rival that the outcome is already written in the initial
# weights.
#
# Seed by seed: when does a grokker's profile settle (stay within total variation
# `settle_tolerance` of its final profile), and when does its accuracy on its group leave the
# memorizing plateau (reach `moved_accuracy`)?

# %%
grokker = retrained_groups < 2
rows = grokker.nonzero().squeeze(1)
settled = settle_epochs(cell_shares[:, rows], epochs, config.settle_tolerance)
accuracy = torch.where((retrained_groups[rows] == 0)[None, :], retrained.metrics["acc_g1"][:, rows],
                       retrained.metrics["acc_g2"][:, rows])
moved = first_epoch_at_or_above(accuracy, retrained.log_epochs, config.moved_accuracy)
travelled = 0.5 * (cell_shares[-1, rows] - cell_shares[0, rows]).abs().sum(dim=1)
settle_figure(settled, moved, [GROUPS[int(g)] for g in retrained_groups[rows]]).show()
record("time.grokkers", len(rows), ",")
record("time.settle_median", median(settled.double()), ",.0f")
record("time.moved_median", median(moved.double()), ",.0f")
record("time.settled_first", int((settled < moved).sum()), ",")
record("time.settled_same", int((settled == moved).sum()), ",")
record("time.travelled", median(travelled), ".2f")
record("time.lead_median", median((moved - settled).double()), ",.0f")
per_outcome_cells = [cell_shares[:, retrained_groups == code].mean(dim=1) for code in range(3)]
over_training_figure(epochs, per_outcome_cells, cell_names).show()
seconds["over_training"] = time.perf_counter() - started

# %% [markdown]
# The grokkers' profiles travel far (median total variation {{time.travelled}} between the first and
# the last snapshot), so settling is not standing still. Their median settle epoch is
# {{time.settle_median}} and their accuracy moves at a median epoch {{time.moved_median}}: in
# {{time.settled_first}} of {{time.grokkers}} grokkers the profile settled first (in
# {{time.settled_same}} at the same snapshot); the median lead of the settling over the accuracy is
# {{time.lead_median}} epochs (negative: the accuracy moved first). So the two findings differ: the
# profile *tells* the outcome early (AUC {{time.irreps_either_quarter}} at epoch
# {{time.quarter_epoch}}), while it *settles* into its final form at about the time the accuracy
# moves.
#
# ## The coset rival
#
# Stander et al. read neurons of MLPs that grok S5 and S6 as coset detectors
# {cite:p}`stander2024cosets`: a neuron's pre-activation, as a function of the left input, barely
# varies inside the right cosets $H g$ of some subgroup $H$ (of the right input: inside the left
# cosets $g H$). Their statistic (`lib.grokking.coset_readout`) is the within-coset variance summed
# over the cosets over the variance on the group, minimized over the proper subgroups (30 of S4,
# 26 of A4 x Z2, enumerated from the tables): 0 for a coset neuron, about the number of cosets for
# a random function. A neuron counts as a coset neuron at a ratio of at most `coset_threshold`; the
# number read is the share of a model's neuron variance in coset neurons.
#
# Coset functions lie inside sums of isotypic components, so a model inside few irreps has many
# near-coset neurons for free. The rival is therefore random functions with exactly each neuron's
# isotypic profile (each component's part redrawn inside the component): what the irreps account
# alone predicts.

# %%
started = time.perf_counter()
coset_generator = torch.Generator().manual_seed(config.seed + 10)
coset_sets = [("S4 grokkers", chosen_params, chosen_groups == 0, S4),
              ("A4xZ2 grokkers", chosen_params, chosen_groups == 1, A4Z2),
              ("neither, read with S4", chosen_params, chosen_groups == 2, S4),
              ("neither, read with A4xZ2", chosen_params, chosen_groups == 2, A4Z2),
              ("random init", {k: v[chosen] for k, v in initial.items()}, torch.ones(len(chosen), dtype=torch.bool), S4),
              ("S4 alone", single[S4].final_params, torch.ones(config.single_group_seeds, dtype=torch.bool), S4),
              ("A4xZ2 alone", single[A4Z2].final_params, torch.ones(config.single_group_seeds, dtype=torch.bool), A4Z2)]
coset_results, coset_rows = {}, []
for label, params, members, name in coset_sets:
    key = label.lower().replace(" ", "_").replace(",", "")
    if not bool(members.any()):
        coset_results[key] = {"observed": float("nan"), "matched": float("nan"), "seeds": 0, "top_order": None}
        for field in ("observed", "matched", "top_order"):
            record(f"cosets.{key}.{field}", None)
        continue
    cosets = read_cosets(irreps, {k: v[members] for k, v in params.items()}, name, config.coset_threshold,
                         coset_generator)
    by_order = cosets.by_order.mean(dim=0)
    top_order = cosets.orders[int(by_order.argmax())] if float(by_order.max()) > 0 else None
    coset_results[key] = {"observed": float(cosets.observed.mean()), "matched": float(cosets.matched.mean()),
                          "seeds": int(members.sum()), "top_order": top_order,
                          "by_order": dict(zip(cosets.orders, by_order.tolist()))}
    coset_rows.append([label, name, int(members.sum()), f"{coset_results[key]['observed']:.3f}",
                       f"{coset_results[key]['matched']:.3f}", top_order])
    record(f"cosets.{key}.observed", coset_results[key]["observed"], ".2f")
    record(f"cosets.{key}.matched", coset_results[key]["matched"], ".2f")
    record(f"cosets.{key}.top_order", top_order, "d")  # None (no coset neuron) reads "n/a"
display(Markdown(markdown_table(["models", "cosets of", "seeds", "coset neurons (share of variance)",
                                 "irreps alone (matched random)", "commonest order of the largest fitting subgroup"], coset_rows)))
coset_figure([row[0] for row in coset_rows], [float(row[3]) for row in coset_rows],
             [float(row[4]) for row in coset_rows]).show()
grokker_keys = [key for key in ("s4_grokkers", "a4xz2_grokkers") if coset_results[key]["seeds"]]
beyond = all(coset_results[key]["observed"] > coset_results[key]["matched"] for key in grokker_keys) and bool(grokker_keys)
neither_keys = [key for key in ("neither_read_with_s4", "neither_read_with_a4xz2") if coset_results[key]["seeds"]]
neither_beyond = bool(neither_keys) and all(coset_results[key]["observed"] > coset_results[key]["matched"]
                                            for key in neither_keys)
record("cosets.beyond_irreps", verdict(beyond, yes="more", no="not more"))
record("cosets.neither_beyond", verdict(neither_beyond, yes="are", no="are not"))
record("cosets.specific", verdict(beyond and not neither_beyond, yes="is", no="is not"))
seconds["cosets"] = time.perf_counter() - started

# %% [markdown]
# In the S4 grokkers {{cosets.s4_grokkers.observed}} of the neuron variance is in coset neurons of
# S4's subgroups, against {{cosets.s4_grokkers.matched}} for random functions with the same irrep
# profiles; in the A4 x Z2 grokkers {{cosets.a4xz2_grokkers.observed}} against
# {{cosets.a4xz2_grokkers.matched}}; at initialization {{cosets.random_init.observed}}. The grokkers'
# neurons are **{{cosets.beyond_irreps}}** coset-aligned than their irreps alone imply (when more,
# the coset account of Stander et al. says something the irreps do not: which functions inside the
# key irreps the neurons are). The largest subgroup that fits their coset neurons most often has
# order {{cosets.s4_grokkers.top_order}} in the S4 grokkers and {{cosets.a4xz2_grokkers.top_order}}
# in the A4 x Z2 grokkers. The seeds that grokked neither
# **{{cosets.neither_beyond}}** more coset-aligned than their irreps imply as well
# ({{cosets.neither_read_with_s4.observed}} with S4's subgroups and
# {{cosets.neither_read_with_a4xz2.observed}} with A4 x Z2's, against
# {{cosets.neither_read_with_s4.matched}} and {{cosets.neither_read_with_a4xz2.matched}} for their
# irreps alone); the networks trained on one whole table read {{cosets.s4_alone.observed}} and
# {{cosets.a4xz2_alone.observed}}. So coset alignment **{{cosets.specific}}** specific to the
# grokkers. Both accounts describe the grokkers' neurons (the coset one is a refinement inside the
# key irreps); what separates the outcomes in this chapter is which irreps a seed uses, its profile
# and key set above.

# %% [markdown]
# ## What this run could not decide
#
# - **The A4 x Z2 grokkers are few.** Every statement about them rests on {{seeds.a4z2}} seeds (95%
#   interval of their share {{seeds.a4z2_low}} to {{seeds.a4z2_high}}). That {{key.a4z2.a4z2.top_count}}
#   of them use the key set {{key.a4z2.a4z2.top}} does not exclude a rarer second solution, and the
#   S4-against-A4 x Z2 AUC along training rests on the same handful.
# - **Why S4 so much more often.** The study counted 603 S4 grokkers against 43 A4 x Z2 grokkers
#   among 10,000 seeds {cite:p}`wu2025ambiguous`. In dimensions the two groups' irreps are symmetric
#   on these labels (S4's 3a shares {{overlap.shared_3}} of its 9 dimensions with A4 x Z2's 3a, and
#   the other way round; the sign is shared), so counting dimensions does not explain the preference,
#   and this chapter offers no other explanation. What it shows is where the choice is made: between
#   irreps, and {{time.irreps_before_accuracy}} the accuracies reveal it.
# - **The study's own model.** These seeds have no unembedding bias (chapters 5 and 6 measure the
#   same sweep); with the bias the published runs had, A4 x Z2 grokkers are rarer still, and whether
#   they use the same irreps was not measured.
# - **No published number to compare.** Chughtai et al. and Stander et al. publish their per-seed
#   numbers for models trained on one group's table (cyclic, dihedral, alternating and symmetric
#   groups), with their own models and data, never on the intersection of two groups; no number of
#   theirs compares like for like with this chapter's, so it adds no row to the index's table of
#   what is reproduced.

# %% tags=["remove-output"]
results = {
    "seed": config.seed, "smoke": config.smoke,
    "characters": {name: {"dimensions": list(irreps.characters[name].dimensions),
                          "components": list(irreps.characters[name].component_names),
                          "component_dimensions": list(irreps.characters[name].component_dimensions),
                          "orthogonality_error": orthogonality_error[name], "projector_error": projector_error[name]}
                   for name in irreps.names},
    "overlap_dimensions": overlaps.tolist(), "cells": cell_names,
    "known_answers": {"confined_min_share": confined_min, "init_max_deviation": init_deviation,
                      "hold": known_answers_hold,
                      "single_group": {name: {"accuracy_min": float(single[name].final("acc_test").min()),
                                              "faithful": int(single_reading[name].faithful[name].sum()),
                                              "key_sets": key_sets(single_reading[name].key[name],
                                                                   irreps.characters[name].component_names),
                                              "losses": single_losses[name]} for name in irreps.names}},
    "seeds": {"source": seeds.sweep.source, "n_sweep": seeds.n_sweep, "n_extra": seeds.n_extra,
              "epochs": joined.training_config.epochs, "counts": counts},
    "profiles": {outcome: {name: profile_rows[name][row].tolist() for name in irreps.names}
                 for row, outcome in enumerate(OUTCOMES)},
    "key_sets": {f"{outcome} read with {name}": key_sets(reading.key[name][groups == code],
                                                         irreps.characters[name].component_names)
                 for code, outcome in enumerate(GROUPS) for name in irreps.names},
    "restriction": {"by_outcome": restriction, "key_irreps_suffice": key_irreps_suffice},
    "neurons": {"purity": dict(zip(OUTCOMES, purity_rows.tolist())),
                "top_cells": {outcome: dict(zip(cell_names, row.tolist())) for outcome, row in zip(OUTCOMES, top_rows)}},
    "over_training": {"epochs": epochs.tolist(), "retrained": len(chosen), "same_outcome": same_outcome,
                      "auc_irreps_either": by_irreps.auc_either.tolist(), "auc_irreps_group": by_irreps.auc_group.tolist(),
                      "accuracy_epochs": by_accuracy.epochs.tolist(),
                      "auc_accuracy_either": by_accuracy.auc_either.tolist(),
                      "auc_accuracy_group": by_accuracy.auc_group.tolist(), "folds": list(by_irreps.folds),
                      "readable_from": {f"{source}_{which}": epoch for (source, which), epoch in readable.items()},
                      "irreps_before_accuracy": irreps_before_accuracy,
                      "settle_epochs": settled.tolist(), "moved_epochs": moved.tolist()},
    "cosets": coset_results,
    "coset_claims": {"grokkers_beyond_irreps": beyond, "neither_beyond_irreps": neither_beyond},
    "seconds": seconds,
}
results["recorded"] = record.results()
check_results(results)
path = write_results(config.results_dir, "08_representations", results)
print(f"results written to {path}")

# %% [markdown]
# ## Summary
#
# - **The readout** computes both groups' characters from their Cayley tables (degrees
#   {{chars.s4_dims}} for S4, {{chars.a4z2_dims}} for A4 x Z2) and reads models confined to one
#   component at {{known.confined_min}}, untrained ones at their share of the dimensions (within
#   {{known.init_deviation}}), and networks trained on one group alone as using faithful sets of
#   that group's irreps ({{known.s4_faithful}} and {{known.a4z2_faithful}} of {{known.single_seeds}}).
# - **Which irreps.** S4 grokkers: key set {{key.s4.s4.top}} in {{key.s4.s4.top_count}} of
#   {{seeds.s4}}; A4 x Z2 grokkers: {{key.a4z2.a4z2.top}} in {{key.a4z2.a4z2.top_count}} of
#   {{seeds.a4z2}}. Restricted to them a grokker **{{restrict.verdict}}** its loss; without them it is
#   at chance.
# - **Neither.** Neurons far purer than untrained ones (purity {{neurons.neither.purity}}) from more cells (the two
#   largest hold {{neurons.neither.two_cells}}, most in {{neurons.neither.first_cell}}).
# - **When.** The irrep profile tells grokkers from the rest **{{time.irreps_before_accuracy}}** the
#   accuracies do (AUC at or above 0.9 from {{time.irreps_either_from}} against
#   {{time.accuracy_either_from}}; S4 against A4 x Z2 from {{time.irreps_group_from}} against
#   {{time.accuracy_group_from}}, on {{seeds.a4z2}} A4 x Z2 grokkers); in {{time.settled_first}} of
#   {{time.grokkers}} grokkers the profile settled before the accuracy moved.
# - **Cosets.** The grokkers' neurons are **{{cosets.beyond_irreps}}** coset-aligned than their
#   irreps imply; coset alignment **{{cosets.specific}}** specific to the grokkers.
#
# Open questions: why the choice between S4's and A4 x Z2's 3-dimensional irrep so strongly favours
# S4; whether the seeds with the study's unembedding bias choose the same way; and whether the early
# profile, which predicts the outcome, can be steered (for example by initializing inside one irrep).
