"""The library behind the book: one subpackage per study, one for what every chapter shares.

Conventions, stated once:

* Vertices are numbered as in the shortest-paths study: 1..n, the source is vertex 1 and the
  target of pre-training is vertex 2. Token 0 is padding. Where a tensor is indexed by vertex
  (chapter 1's adjacency matrices and reach sets), vertex v sits at index v - 1.
* Every chapter's parameters are one dataclass in `lib.chapters` (type, bounds and help of
  each field), validated by `lib.book.params.validate_parameters`.

Module map (chapters in brackets):

lib.book       what every chapter uses
  params                 papermill parameters: declared once, validated by one function [all]
  results                atomic JSON and checkpoint writes [all]
  record                 numbers recorded once for the prose and the results JSON; the words that flip with the data [5]
  plotting               plotly conventions and the static slider over precomputed steps [all]
  live                   the live ipywidgets panels: a slider's range, a panel with a run button [1, 2, 6]
  tables                 markdown tables from rows of numbers [all]
  statistics             ROC AUC, rank and linear correlation, bootstrap intervals [5, 7]
  reproduced             the index page's table: the rows of book/reproduced/*.yaml filled from the results [index]
  verdict_rules          the named rules those rows judge by: intervals, Wilson counts, too few events [index]
  confusion              predicted-against-true and label histograms of distance models [2, 3]
  reproducibility        seeding [all]
  seed_streams           the model-seed streams of chapters 4-6, named in one table, none overlapping [4-6]
  code_fingerprint       which code produced a committed notebook's outputs (make notebooks, tests) [all]
  sphinx_outputs         how the HTML book (Sphinx, MyST-NB) shows plotly figures and widget panels [book]
  figure_style           the book's one figure style, applied to every figure when the book is staged [book]
  workers                independent runs mapped over forked single-threaded worker processes [1-3, 6]
lib.bfs        the hand-built BFS transformer (study 1, part 1)
  transformer            the construction: weights set by hand, n layers of n + 1 heads [1]
  graphs                 adjacency-matrix graph samplers and the plain BFS oracle [1]
  perturbation           damage the weights, retrain, measure the recovery [1]
  seed_construction      the study's own construction: its error, and a trainable copy with the authors' weight lists [1]
  study_damage           the study's perturb-and-recover protocol on the study's construction and the book's [1]
  damage_distribution    the study's damage over every matrix: MSE right after it, percentiles, draws near a value [1]
lib.paths      transformers trained on shortest paths (study 1, part 2)
  sampler                edge-token graphs with shortest-path labels, batched: options checked, the rounds [2, 3]
  sampler_options        the sampler's options, one data distribution (below the sampler's modules) [2, 3]
  tasks                  the sampler's tasks: the target of each graph, which graphs are kept [2, 3]
  graph_batch            random graph batches: drawing them, their labels, their edge-token layout [2, 3]
  graph_search           breadth-first search of whole batches, vertex sets as bitmasks (the only BFS) [2, 3]
  pretrain_draw          pre-training proposals drawn only where the length filter can keep them [2]
  reference_sampler      the same data one graph at a time in plain Python (test oracle) [2]
  stream                 the sampler in DataLoader worker processes [2]
  model                  the edge-token encoder [2, 3]
  training               training on fresh data, logs, checkpoints, resume [2, 3]
  phase_transitions      the drop of each path length's loss: flat plateau, step, size, width, hold; order over seeds [2]
  transition_study       loss and mean prediction per length on a length-balanced set every few steps, several seeds [2]
  evaluation_curves      a run trained as usual, scored per label on its evaluation batch every few steps [2]
  constant_rival         a drop against one constant prediction for every graph not yet learned [2]
  drop_sensitivity       the detector and the rival rerun over a range of each setting; what holds at every one [2]
  finetuning             fine-tuning the pre-trained model to new targets [3]
  generalization_tests   the study's five off-distribution tests [3]
  length_generalization  train on small graphs, test on larger ones [3]
  baselines              model-free baselines of the five tests at any scale; on-path error by graph size [3]
  seed_replicates        pre-training and fine-tuning again from other seeds, and the five tests of each [3]
  recipe_models          models of chapter 2's recipe kept on disk by configuration, trained once for chapters 3 and 7 [3, 7]
  length_frequency       prediction against training frequency per path length: where the under-prediction begins [3]
  activations            residual streams and attention weights of a forward pass, by hooks [7]
  graph_set              graphs of a model's training distribution with their BFS facts [7]
  token_graphs           the BFS facts behind each token: distances, shortest-path edges, degrees [7]
  probes                 batched logistic and ridge probes with held-out scores [7]
  attention_fractions    share of each head's attention by graph category, against uniform [7]
  interventions          mean ablation of heads and blocks, residual patching [7]
  layer_probes           what each layer knows: distance (reachable graphs), reachability, edge facts; radii [7]
  causal                 ablation of every component, patching per layer against random subspaces, shortcuts [7]
lib.grokking   ambiguous grokking of finite groups (study 2)
  groups                 groups as checked multiplication tables [4-6]
  pairs                  pairs of groups, intersections, training sets [4-6]
  mlp                    the one-hidden-layer MLP with a leading instances dimension [4-6]
  training               sweeps of instances: plan, the epoch loop of a chunk, result [4-6]
  sweep_config           a sweep's optimiser, schedule and bookkeeping (below training and chunk_step) [4-6]
  reference_training     one model trained plainly with autograd: the trainer's test reference [4-6]
  chunk_step             one full-batch step of a chunk of instances: hand-written gradient, Adam [4-6]
  fused_ops              the private torch kernel (fused Adam) beside its public fallback [4-6]
  parallel               chunks in forked worker processes (shared memory), threads, or in order [4-6]
  sweep_runner           instance sweeps cut into shards, run here or on Ray, resumable, merged in seed order [4-6]
  evaluation             scoring many instances at once on all N^2 pairs [4-6]
  sweeps                 seed sweeps: train, classify, save, load [4-6]
  outcomes               which group each instance grokked, with intervals [4-6]
  study                  the study's pairs, models, schedules and published numbers, each with its protocol [4-6, index]
  study_sweep            chapter 4's S4 sweep as chapters 5-6 read it (loaded or retrained), its outcome groups [5, 6]
  llc                    local learning coefficient by SGLD, all instances and chains at once; shorter chains read from long ones [5]
  mlp_llc                the LLC of the MLPs: hand-written gradient, chunks over worker processes [5]
  devinterp_llc          the same chains by devinterp, one model at a time (tests, benchmark) [5]
  circuit_efficiency     rescaled weights: training loss at a common weight norm; the study's objective along the curve [5]
  sample_weights         weights that make a sample of a sweep's seeds stand for the sweep; weighted correlations [5]
  generalization_measures  Jiang et al.'s complexity measures as the study computes them, batched over instances [5]
  measures_over_time     measures along one run's checkpoints (dense and sparse grids), Spearman with the gap over common checkpoints [5]
  perturbation           noisy copies (the authors' init-shaped noise, the book's Gaussian) continued anew; decision epochs [6]
  total_variation        argmax flips late in training by the authors' definition and the book's; total variation [6]
  training_jacobian      d theta_T / d theta_0 of Adam by torch.func, composed over segments; the chapter's spectra [6]
  jacobian_sketch        the same at the authors' scale through K products: norm bound, randomized SVD, finite check [6]
  transplant             the authors' transplant protocol: whole table, then the intersection; ungrokking criteria [6]
  early_prediction       held-out logistic regression of the final outcome from epoch-t features [6]
lib.chapters   glue of each chapter: its parameters, runs, summaries and figures
  registry               a chapter's parameters class, found from its notebook's name (tests, tools)
  ch1, ch1_figures       the hand-built BFS transformer
  ch1_damage             where the study's damaged draw falls in the damage distribution; the draws retrained
  ch1_study              the study's perturb-and-recover protocol: table, comparison with the study, judgements by counts
  ch1_results            the checks chapter 1's notebook runs on its results JSON before writing it
  ch2, ch2_figures       training: the main run and the figures
  ch2_transitions        the transition study's table, order of learning over seeds, names of lengths, results
  ch2_rival              drops against the constant rival and the detector's settings: tables, counts, findings
  ch2_results            the checks chapter 2's notebook runs on its results JSON before writing it
  ch3, ch3_figures       fine-tuning and off-distribution generalization
  ch3_results            typed summaries of fine-tuning and the five tests, read by the prose
  ch3_length             typed summary of the length-generalization study
  ch3_baselines          the tests against model-free baselines, over seeds, and by graph size
  ch3_seeds              the one-model claims (target kinds, per-size check, length study) over the seeds
  ch4, ch4_figures       ambiguous grokking
  ch4_results            typed outcomes of each pair and subsample, tables, the chapter's checks
  ch4_report             published counts beside this run's, like for like; the sweep that feeds 5-6
  ch5, ch5_figures       complexity of the grokked solution
  ch5_results            summaries per outcome, their comparisons, correlations, AUCs, the S5 LLC course beside the study's; checks
  ch5_trajectory         the LLC along training: S4 seeds per outcome, S5 seeds as in the study
  ch5_chain_length       the LLC estimate against the SGLD chain length, and where it settles
  ch5_population         end-of-training correlations over the sweep's population; the study's circuit efficiency
  ch5_measures           the study's S5 measures over time: the run, rankings of the measures, table, the claim, results
  ch6, ch6_figures       determination: parameters, seeds per outcome, transplant and Jacobian runs; figures
  ch6_results            decision epochs by noise shape, flips by both definitions, ungrok criteria, tables, checks
  ch6_jacobian           the Jacobian at the authors' scale: rows, growth per seed, the study's two claims as booleans with their evidence
  ch7, ch7_figures       the learned circuit: parameters, models of other depths and seeds, graph sets; figures
  ch7_hand_built         chapter 1's hand-built model on chapter 7's graphs
  ch7_results            the verdicts as numbers and layer lists, tables, checks of the results JSON
  sweep_parameters       the parameters chapters 4-6 share: sweep backend; fallback sweep, grok threshold declared once
"""
