"""Where chapters 1 and 2 spend their time, and what the constructions' softmax saves (issue 34's time floor).

Run from the repository root:

    .venv/bin/python benchmarks/bench_chapter_1_2_steps.py            # about 1 minute on a quiet core
    .venv/bin/python benchmarks/bench_chapter_1_2_steps.py --quick    # a few seconds: a smoke run (the test's)

Usage:
    python benchmarks/bench_chapter_1_2_steps.py [--quick] [--json PATH]

Everything runs on one torch thread (as chapters 1 and 2's worker processes do), each time the
median of `repeats` timings, each ratio against a baseline timed in the same run:

* `retrain_step_{study,book}` (chapter 1): one Adam step of the study's protocol (a fresh batch of
  512 graphs of the study's sampler, n = 8, denormals flushed) on the study's construction and on
  the book's; chapter 1 retrains 20 draws x 2 constructions x 100 such steps. Each against
  `retrain_step_{study,book}_torch_softmax`, the same step with `torch.softmax` in place of the
  constructions' `lib.bfs.softmax.underflow_free_softmax`.
* `softmax_torch` against `softmax_underflow_free`: the two on the book's attention scores of one
  layer (batch 512, 9 heads, 9 x 9; the difference between the two is printed).
* `exp_underflow` against `exp_normal`: `torch.exp` of arguments in (-103, -87), whose results
  are denormal, against arguments in (-80, 0).
* `encoder_step_{1,2}_threads` (chapter 2): one training step of chapter 2's default encoder (4
  layers, graphs of 3 to 8 vertices, batch 256) on one and on two threads; `encoder_eval` the
  scoring pass over its 2,048-graph evaluation batch, which chapter 2 runs every 10 steps;
  `study_step` and `study_eval` the same for a model of the transition study (graphs of up to 15
  vertices; 1,408 evaluation graphs, scored every 5 steps). Each scoring pass is
  `lib.paths.prediction.predict`, which runs each graph on the edge slots it uses, against
  `*_all_slots`, the same pass over every slot. `study_step_width_buckets` is the study's step
  as chapter 2 trains it on a CPU, in `study_width_buckets` chunks of graphs of similar width
  (`lib.paths.width_buckets`), against `study_step` on all slots; `encoder_step_width_buckets`
  the same for the main run's step, which trains on all slots (so that chapters 3 and 7 keep
  their numbers).

From these it prints the single-threaded core-seconds of what chapters 1 and 2 train at their
defaults, and half of that: the least time two cores can take for it; and, for chapter 2, the
least time two processes take when the main run and each of the study's ten seeds are runs that
cannot be split (the schedule chapter 2 uses: the main run in one process, the seeds in the
other, then in both).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from pathlib import Path

import torch

import lib.bfs.seed_construction
import lib.bfs.transformer
from lib.bfs.perturbation import flush_denormals
from lib.bfs.seed_construction import StudyConstruction
from lib.bfs.softmax import underflow_free_softmax
from lib.bfs.study_damage import frontier_distance_batch, sample_seed_graphs, unreachable_label
from lib.bfs.transformer import bfs_transformer
from lib.paths.model import PathTransformerConfig, build_model
from lib.paths.sampler import sample_batch
from lib.paths.prediction import predict
from lib.paths.width_buckets import forward_in_width_buckets
from lib.book.params import read_parameters_cell

#: Chapter 2's transition study: graphs of up to 15 vertices, scored on 128 graphs of each of 11 labels.
STUDY_N_MAX = 15
STUDY_EVAL_GRAPHS = 128 * 11
#: How many width buckets chapter 2's transition study trains in on a CPU (its notebook's default).
STUDY_WIDTH_BUCKETS = read_parameters_cell(
    Path(__file__).resolve().parents[1] / "notebooks" / "02_training.py")["study_width_buckets"]


def median_seconds(work, repeats: int) -> float:
    work()  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def retrain_step(model, n_vertices: int = 8, batch: int = 512):
    generator = torch.Generator().manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-6)
    label = unreachable_label(model)

    def step():
        with flush_denormals():
            adjacency = sample_seed_graphs(batch, n_vertices, generator)
            loss = torch.nn.functional.mse_loss(model(adjacency), frontier_distance_batch(adjacency, label))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return step


@contextlib.contextmanager
def constructions_softmax(softmax):
    """Both constructions with `softmax` (scores -> weights over the last dimension) for a while."""
    modules = (lib.bfs.transformer, lib.bfs.seed_construction)
    try:
        for module in modules:
            module.underflow_free_softmax = softmax
        yield
    finally:
        for module in modules:
            module.underflow_free_softmax = underflow_free_softmax


def torch_softmax(scores: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores, dim=-1)


def book_scores(n_vertices: int = 8, batch: int = 512) -> torch.Tensor:
    """The book's attention scores (batch, heads, query, key) in its first layer."""
    model = bfs_transformer(n_vertices)
    adjacency = sample_seed_graphs(batch, n_vertices, torch.Generator().manual_seed(1))
    captured = {}

    def capture(scores):
        captured.setdefault("scores", scores.detach().clone())
        return underflow_free_softmax(scores)
    with constructions_softmax(capture), torch.no_grad():
        model(adjacency)
    return captured["scores"]


def encoder_step(batch: int = 256, n_max: int = 8, width_buckets: int = 0):
    """One training step of chapter 2's default encoder (4 layers) on graphs of 3 to `n_max`
    vertices, on all edge slots or in `width_buckets` chunks (as `lib.paths.training.train`)."""
    model = build_model(PathTransformerConfig(n_layers=4, max_vertex_id=n_max), seed=0)
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    tokens, labels = sample_batch(batch, "pretrain", 3, n_max, torch.Generator().manual_seed(0))

    def forward():
        return model(tokens) if width_buckets == 0 else forward_in_width_buckets(model, tokens, width_buckets)

    def step():
        loss = torch.nn.functional.mse_loss(forward(), labels.float())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return model, step


def evaluation_pass(model, graphs: int, n_max: int, *, all_slots: bool = False):
    """One scoring pass of `model` over `graphs` graphs: `predict` (eval mode, no gradient, each
    graph on the slots it uses), or with `all_slots` the same over every slot."""
    tokens, _ = sample_batch(graphs, "pretrain", 3, n_max, torch.Generator().manual_seed(4))

    @torch.no_grad()
    def over_all_slots():
        model.eval()
        model(tokens)
        model.train()
    return over_all_slots if all_slots else lambda: predict(model, tokens)


def two_process_schedule(main_run: float, seed_run: float, seeds: int) -> float:
    """The least time two processes take for one run of `main_run` seconds and `seeds` runs of
    `seed_run` seconds, none of them split: the main run and k seeds in one, the rest in the other."""
    return min(max(main_run + k * seed_run, (seeds - k) * seed_run) for k in range(seeds + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats, small batches: a smoke run")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    repeats = 2 if args.quick else 15
    batch = 32 if args.quick else 512
    seconds = {}
    for name, construction in (("study", StudyConstruction), ("book", bfs_transformer)):
        seconds[f"retrain_step_{name}"] = median_seconds(retrain_step(construction(8), batch=batch), repeats)
        with constructions_softmax(torch_softmax):
            seconds[f"retrain_step_{name}_torch_softmax"] = median_seconds(
                retrain_step(construction(8), batch=batch), repeats)
    scores = book_scores(batch=batch)
    seconds["softmax_torch"] = median_seconds(lambda: torch_softmax(scores), repeats)
    seconds["softmax_underflow_free"] = median_seconds(lambda: underflow_free_softmax(scores), repeats)
    difference = float((underflow_free_softmax(scores) - torch_softmax(scores)).abs().max())
    normal = torch.empty(scores.numel()).uniform_(-80, 0, generator=torch.Generator().manual_seed(2))
    underflow = torch.empty(scores.numel()).uniform_(-103, -87, generator=torch.Generator().manual_seed(3))
    with flush_denormals():
        seconds["exp_normal"] = median_seconds(lambda: normal.exp(), repeats)
        seconds["exp_underflow"] = median_seconds(lambda: underflow.exp(), repeats)
    encoder_batch = 64 if args.quick else 256
    for threads in (1, 2):
        torch.set_num_threads(threads)
        _, step = encoder_step(encoder_batch)
        seconds[f"encoder_step_{threads}_threads"] = median_seconds(step, repeats)
    torch.set_num_threads(1)
    _, step = encoder_step(encoder_batch, width_buckets=STUDY_WIDTH_BUCKETS)
    seconds["encoder_step_width_buckets"] = median_seconds(step, repeats)
    model, _ = encoder_step(encoder_batch)
    for suffix, all_slots in (("", False), ("_all_slots", True)):
        seconds[f"encoder_eval{suffix}"] = median_seconds(
            evaluation_pass(model, 8 * encoder_batch, 8, all_slots=all_slots), repeats)
    model, step = encoder_step(encoder_batch, STUDY_N_MAX)
    seconds["study_step"] = median_seconds(step, repeats)
    _, step = encoder_step(encoder_batch, STUDY_N_MAX, STUDY_WIDTH_BUCKETS)
    seconds["study_step_width_buckets"] = median_seconds(step, repeats)
    for suffix, all_slots in (("", False), ("_all_slots", True)):
        seconds[f"study_eval{suffix}"] = median_seconds(evaluation_pass(
            model, STUDY_EVAL_GRAPHS // (1 if not args.quick else 8), STUDY_N_MAX, all_slots=all_slots), repeats)
    # What chapters 1 and 2 train at their defaults, in single-threaded core-seconds at these times.
    core_seconds = {
        "chapter 1's retraining (20 draws x 2 constructions x 100 steps)":
            20 * 100 * (seconds["retrain_step_study"] + seconds["retrain_step_book"]),
        "chapter 2's main run (2,500 steps, 251 scorings)":
            2500 * seconds["encoder_step_1_threads"] + 251 * seconds["encoder_eval"],
        f"chapter 2's transition study (10 seeds x 300 steps in {STUDY_WIDTH_BUCKETS} width buckets, "
        "61 scorings each)":
            10 * (300 * seconds["study_step_width_buckets"] + 61 * seconds["study_eval"]),
    }
    ratios = {
        "retrain step study, torch / underflow-free softmax":
            seconds["retrain_step_study_torch_softmax"] / seconds["retrain_step_study"],
        "retrain step book, torch / underflow-free softmax":
            seconds["retrain_step_book_torch_softmax"] / seconds["retrain_step_book"],
        "softmax torch / underflow-free": seconds["softmax_torch"] / seconds["softmax_underflow_free"],
        "exp_underflow / exp_normal": seconds["exp_underflow"] / seconds["exp_normal"],
        "encoder_step 1 / 2 threads": seconds["encoder_step_1_threads"] / seconds["encoder_step_2_threads"],
        "encoder_eval / 10 encoder steps (1 thread)": seconds["encoder_eval"] / (10 * seconds["encoder_step_1_threads"]),
        "encoder_eval, used / all slots": seconds["encoder_eval"] / seconds["encoder_eval_all_slots"],
        "study_eval, used / all slots": seconds["study_eval"] / seconds["study_eval_all_slots"],
        "study_step, width buckets / all slots": seconds["study_step_width_buckets"] / seconds["study_step"],
        "encoder_step (1 thread), width buckets / all slots":
            seconds["encoder_step_width_buckets"] / seconds["encoder_step_1_threads"],
    }
    seed_run = 300 * seconds["study_step_width_buckets"] + 61 * seconds["study_eval"]
    chapter_2_schedule = two_process_schedule(
        core_seconds["chapter 2's main run (2,500 steps, 251 scorings)"], seed_run, 10)
    for name, value in seconds.items():
        print(f"{name:34s} {1e3 * value:9.2f} ms")
    for name, value in ratios.items():
        print(f"{name:52s} {value:6.2f}")
    print(f"underflow-free softmax vs torch's: largest difference {difference:.1e}")
    for name, value in core_seconds.items():
        print(f"{name}: {value:.0f} core-seconds, {value / 2:.0f} s on two cores at best")
    print(f"chapter 2's main run and 10 seeds of {seed_run:.1f} s, none split, on two processes: "
          f"{chapter_2_schedule:.0f} s at best")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"seconds": seconds, "ratios": ratios, "softmax_difference": difference,
                       "core_seconds": core_seconds, "chapter_2_two_process_seconds": chapter_2_schedule,
                       "quick": args.quick}, handle, indent=1)


if __name__ == "__main__":
    main()
