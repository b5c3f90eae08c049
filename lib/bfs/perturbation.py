"""Perturb the hand-built BFS transformer and let gradient descent repair it (chapter 1).

Two kinds of damage, both at a chosen `scale`:

* "replace": one randomly chosen query, key or value matrix (one head of one layer) is replaced
  by `scale` times standard normal noise. At scale 1 this is the study's experiment.
* "gaussian": every parameter tensor W gets noise of Frobenius norm `scale * ||W||_F`, i.e.
  relative noise of that scale spread over all of its entries.

The damaged model is then retrained by gradient descent (plain SGD by default, or Adam as in the
study) on MSE against BFS distances, and the loss on a fixed held-out set is recorded before and
during recovery.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from lib.bfs.graphs import bfs_distance_batch, sample_graphs
from lib.bfs.transformer import BFSTransformer
from lib.book.workers import map_in_workers

PERTURBATION_MODES = ("replace", "gaussian")
RECOVERY_OPTIMIZERS = ("sgd", "adam")


@dataclass(frozen=True)
class RecoverySettings:
    """How a damaged model is retrained and evaluated."""

    steps: int = 100          # optimizer steps of retraining
    batch_size: int = 64      # graphs per step, drawn from a fixed training pool
    learning_rate: float = 1e-3
    optimizer: str = "sgd"    # "sgd" or "adam"
    n_eval_graphs: int = 1000  # held-out graphs the recorded losses are measured on
    n_train_graphs: int = 4096
    n_curve_points: int = 10  # evaluations along the recovery curve


@dataclass
class GraphSet:
    """Graphs (adjacency) with their BFS distances."""

    adjacency: torch.Tensor
    distance: torch.Tensor

    @classmethod
    def sample(cls, n_graphs: int, n_vertices: int, generator: torch.Generator, sampler: str = "seed") -> "GraphSet":
        adjacency = sample_graphs(sampler, n_graphs, n_vertices, generator)
        return cls(adjacency, bfs_distance_batch(adjacency))


@contextlib.contextmanager
def flush_denormals() -> Iterator[None]:
    """Flush denormal floats to zero while retraining (torch's default is not to flush).

    A damaged model's attention scores spread far apart, so softmax produces numbers below
    1e-38 whose CPU arithmetic is many times slower; flushing changes nothing above that size.
    """
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


def perturb_weights(model: BFSTransformer, mode: str, scale: float, generator: torch.Generator) -> dict:
    """Damage `model` in place; return which weights were hit.

    "replace" replaces one head's query, key or value matrix in one layer by `scale` x N(0, 1):
    the hit is {"matrix": "query" | "key" | "value", "layer", "head" (0-based), "answer_head"
    (head n is the answer head, heads 0..n-1 the reach heads of vertices 1..n)}. "gaussian" adds
    noise of relative Frobenius norm `scale` to every weight: {"matrix": "all", "layer": None,
    "head": None, "answer_head": False}.
    """
    with torch.no_grad():
        if mode == "replace":
            kinds = {"query": model.query, "key": model.key, "value": model.value}
            names = list(kinds)
            name = names[int(torch.randint(len(names), (1,), generator=generator))]
            weight = kinds[name]
            layer = int(torch.randint(weight.shape[0], (1,), generator=generator))
            head = int(torch.randint(weight.shape[1], (1,), generator=generator))
            noise = torch.randn(weight[layer, head].shape, generator=generator)
            weight[layer, head] = scale * noise.to(weight)
            return {"matrix": name, "layer": layer, "head": head, "answer_head": head == model.n_vertices}
        if mode == "gaussian":
            for weight in model.parameters():
                noise = torch.randn(weight.shape, generator=generator).to(weight)
                weight.add_(noise * (scale * weight.norm() / noise.norm()))
            return {"matrix": "all", "layer": None, "head": None, "answer_head": False}
    raise ValueError(f"Unknown perturbation mode {mode!r}; choose one of {', '.join(PERTURBATION_MODES)}.")


def mse(model: BFSTransformer, graphs: GraphSet) -> float:
    """Mean squared error of `model` on `graphs` (no gradient)."""
    with torch.no_grad():
        device = model.query.device
        return float(((model(graphs.adjacency.to(device)) - graphs.distance.to(device)) ** 2).mean())


def recover(
    model: BFSTransformer, train: GraphSet, evaluation: GraphSet, settings: RecoverySettings,
    generator: torch.Generator, progress: bool = False,
) -> list[tuple[int, float]]:
    """Retrain `model` in place on MSE; return (step, held-out MSE) along the way.

    SGD moves a weight only as far as its gradient says. Adam rescales every gradient to a
    step of about the learning rate, so it also moves the many weights whose gradient is
    nearly zero on the flat plateaus of the saturated construction.
    """
    if settings.optimizer not in RECOVERY_OPTIMIZERS:
        raise ValueError(f"Unknown optimizer {settings.optimizer!r}; choose one of {', '.join(RECOVERY_OPTIMIZERS)}.")
    optimizer_class = torch.optim.SGD if settings.optimizer == "sgd" else torch.optim.Adam
    optimizer = optimizer_class(model.parameters(), lr=settings.learning_rate)
    device = model.query.device
    every = max(1, settings.steps // settings.n_curve_points)
    curve = [(0, mse(model, evaluation))]
    for step in tqdm(range(1, settings.steps + 1), disable=not progress, leave=False, mininterval=5):
        pick = torch.randint(len(train.distance), (settings.batch_size,), generator=generator)
        prediction = model(train.adjacency[pick].to(device))
        loss = torch.nn.functional.mse_loss(prediction, train.distance[pick].to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        # A saturated softmax can produce huge gradients right after damage; clip for stability.
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=10.0)
        optimizer.step()
        if step % every == 0 or step == settings.steps:
            curve.append((step, mse(model, evaluation)))
    return curve


def perturb_and_recover(
    intact: BFSTransformer, mode: str, scale: float, train: GraphSet, evaluation: GraphSet,
    settings: RecoverySettings, seed: int,
) -> dict:
    """Copy `intact`, damage the copy, retrain it; return a record of the run.

    The record holds `mode`, `scale`, `hit` (which weights, `perturb_weights`), `loss_intact`,
    `loss_before` (right after damage), `loss_after` (after retraining) and `curve`
    (list of [step, held-out MSE]).
    """
    generator = torch.Generator().manual_seed(seed)
    model = copy.deepcopy(intact)
    hit = perturb_weights(model, mode, scale, generator)
    with flush_denormals():
        curve = recover(model, train, evaluation, settings, generator)
    return {
        "mode": mode,
        "scale": scale,
        "hit": hit,
        "loss_intact": mse(intact, evaluation),
        "loss_before": curve[0][1],
        "loss_after": curve[-1][1],
        "curve": [[step, loss] for step, loss in curve],
    }


def perturbation_study(
    intact: BFSTransformer, modes: list[str], scales: list[float], settings: RecoverySettings,
    seed: int, progress: bool = True, workers: int = 1,
) -> list[dict]:
    """`perturb_and_recover` for every (mode, scale), on one seeded training pool and eval set;
    with `workers` > 1 on a CPU, in that many single-threaded worker processes (`lib.book.workers`:
    each record as a single-threaded run here gives it)."""
    generator = torch.Generator().manual_seed(seed)
    train = GraphSet.sample(settings.n_train_graphs, intact.n_vertices, generator)
    evaluation = GraphSet.sample(settings.n_eval_graphs, intact.n_vertices, generator)
    runs = list(enumerate((mode, scale) for mode in modes for scale in scales))

    def recover_run(run: tuple[int, tuple[str, float]]) -> dict:
        index, (mode, scale) = run
        return perturb_and_recover(intact, mode, scale, train, evaluation, settings, seed + 1 + index)

    done = map_in_workers(recover_run, runs, workers, next(intact.parameters()).device)
    return list(tqdm(done, total=len(runs), disable=not progress, desc="perturb and recover", mininterval=5))
