"""Where chapters 1 and 2 spend their time, against the alternatives issue 34's time floor would need.

Run from the repository root:

    .venv/bin/python benchmarks/bench_chapter_1_2_steps.py            # about 1 minute on a quiet core
    .venv/bin/python benchmarks/bench_chapter_1_2_steps.py --quick    # a few seconds: a smoke run (the test's)

Usage:
    python benchmarks/bench_chapter_1_2_steps.py [--quick] [--json PATH]

Everything runs on one torch thread (as chapters 1 and 2's worker processes do), each time the
median of `repeats` timings, each ratio against a baseline timed in the same run:

* `retrain_step_{study,book}` (chapter 1): one Adam step of the study's protocol (a fresh batch of
  512 graphs of the study's sampler, n = 8, denormals flushed) on the study's construction and on
  the book's; chapter 1 retrains 20 draws x 2 constructions x 100 such steps.
* `softmax_torch` against `softmax_written_out`: `torch.softmax` on the book's attention scores
  of one layer (batch 512, 9 heads, 9 x 9) against max-subtract, exp only where the result is a
  normal float, divide (the difference between the two is printed).
* `exp_underflow` against `exp_normal`: `torch.exp` of arguments in (-103, -87), whose results
  are denormal, against arguments in (-80, 0).
* `encoder_step_{1,2}_threads` (chapter 2): one training step of chapter 2's default encoder (4
  layers, graphs of 3 to 8 vertices, batch 256) on one and on two threads; `encoder_eval` the
  forward pass over its 2,048-graph evaluation batch, which chapter 2 scores every 10 steps.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from lib.bfs.perturbation import flush_denormals
from lib.bfs.seed_construction import StudyConstruction
from lib.bfs.study_damage import frontier_distance_batch, sample_seed_graphs, unreachable_label
from lib.bfs.transformer import bfs_transformer
from lib.paths.model import PathTransformerConfig, build_model
from lib.paths.sampler import sample_batch

#: log of the smallest normal float32: exp below it gives a denormal or zero.
LOG_TINY = float(torch.log(torch.tensor(torch.finfo(torch.float32).tiny)))


def median_seconds(work, repeats: int) -> float:
    work()  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def softmax_written_out(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    shifted = scores - scores.amax(dim, keepdim=True)
    kept = shifted >= LOG_TINY
    weights = torch.where(kept, shifted, 0.0).exp() * kept
    return weights / weights.sum(dim, keepdim=True)


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


def book_scores(n_vertices: int = 8, batch: int = 512) -> torch.Tensor:
    """The book's attention scores (batch, heads, query, key) in its first layer."""
    model = bfs_transformer(n_vertices)
    adjacency = sample_seed_graphs(batch, n_vertices, torch.Generator().manual_seed(1))
    captured = {}
    original = torch.softmax

    def capture(scores, dim):
        captured.setdefault("scores", scores.detach().clone())
        return original(scores, dim=dim)
    torch.softmax = capture
    try:
        with torch.no_grad():
            model(adjacency)
    finally:
        torch.softmax = original
    return captured["scores"]


def encoder_step(batch: int = 256):
    model = build_model(PathTransformerConfig(n_layers=4, max_vertex_id=8), seed=0)
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    tokens, labels = sample_batch(batch, "pretrain", 3, 8, torch.Generator().manual_seed(0))

    def step():
        loss = torch.nn.functional.mse_loss(model(tokens), labels.float())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return model, step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats, small batches: a smoke run")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    repeats = 2 if args.quick else 15
    batch = 32 if args.quick else 512
    seconds = {
        "retrain_step_study": median_seconds(retrain_step(StudyConstruction(8), batch=batch), repeats),
        "retrain_step_book": median_seconds(retrain_step(bfs_transformer(8), batch=batch), repeats),
    }
    scores = book_scores(batch=batch)
    seconds["softmax_torch"] = median_seconds(lambda: torch.softmax(scores, dim=-1), repeats)
    seconds["softmax_written_out"] = median_seconds(lambda: softmax_written_out(scores), repeats)
    difference = float((softmax_written_out(scores) - torch.softmax(scores, dim=-1)).abs().max())
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
    model, _ = encoder_step(encoder_batch)
    evaluation, _ = sample_batch(8 * encoder_batch, "pretrain", 3, 8, torch.Generator().manual_seed(4))
    with torch.no_grad():
        seconds["encoder_eval"] = median_seconds(lambda: model(evaluation), repeats)
    ratios = {
        "softmax_torch / written_out": seconds["softmax_torch"] / seconds["softmax_written_out"],
        "exp_underflow / exp_normal": seconds["exp_underflow"] / seconds["exp_normal"],
        "encoder_step 1 / 2 threads": seconds["encoder_step_1_threads"] / seconds["encoder_step_2_threads"],
        "encoder_eval / 10 encoder steps (1 thread)": seconds["encoder_eval"] / (10 * seconds["encoder_step_1_threads"]),
    }
    for name, value in seconds.items():
        print(f"{name:28s} {1e3 * value:9.2f} ms")
    for name, value in ratios.items():
        print(f"{name:44s} {value:6.2f}")
    print(f"softmax written out vs torch: largest difference {difference:.1e}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"seconds": seconds, "ratios": ratios, "softmax_difference": difference,
                       "quick": args.quick}, handle, indent=1)


if __name__ == "__main__":
    main()
