"""The study's perturb-and-recover protocol, on the study's construction and on the book's (chapter 1).

The authors' notebook (`insane-shortest-paths.ipynb`, `destroy_rand_weights`) damages its
hand-built model by picking one of six weight lists uniformly (the reach heads' keys, queries,
values, one set of n heads shared by every layer; or the answer heads' keys, queries, values, one
per layer), then one matrix of that list uniformly, and replacing it by standard normal noise.
It then retrains with Adam at learning rate 1e-6 on a fresh batch of 512 graphs of its sampler
every step, without gradient clipping. This module runs exactly that:

* `draw_damage` draws (list, index) as the authors did; `apply_damage` replaces that matrix in
  either construction. In the study's (`lib.bfs.seed_construction.StudyConstruction`) the reach
  heads are shared by all layers, so a reach-head draw damages that head everywhere; in the
  book's (`lib.bfs.transformer`) each layer has its own reach heads, and the same draw replaces
  head j's matrix in every layer by one noise matrix, so that the damage is the same in kind.
* `retrain_like_study` retrains on fresh graphs and records the MSE on a fixed held-out set of
  the same sampler at chosen steps, beside the mean training-batch loss of each stretch.

A draw is one damage; it is run on both constructions from the same seed, so the two columns of
chapter 1's table hit the same kind of matrix. `protocol_on_draws` retrains given draws (chapter 1
picks them from the whole damage distribution, `lib.bfs.damage_distribution`, and starts them
with `start_protocol_on_draws` in the background while it computes its other sections);
`study_protocol` draws them at random as the authors did.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from lib.bfs.graphs import frontier_distance_batch, sample_seed_graphs
from lib.bfs.perturbation import flush_denormals
from lib.bfs.seed_construction import StudyConstruction
from lib.bfs.transformer import BFSTransformer
from lib.book.workers import Pending, start_in_workers

#: The six weight lists of the authors' `destroy_rand_weights`, in their order.
WEIGHT_LISTS = ("reach key", "reach query", "reach value", "answer key", "answer query", "answer value")

#: The study's retraining: Adam at this learning rate on fresh batches of this many graphs.
STUDY_LEARNING_RATE = 1e-6
STUDY_BATCH_SIZE = 512

#: The study's one draw: its training-batch loss right after damage (step 0) and along retraining,
#: read from the losses the authors' notebook printed every 10 steps: at step s > 0, the mean of
#: those printed within 50 steps of s (11 values; 9 at 5,000, the run stopped at 5,030).
PUBLISHED_RECOVERY = {0: 0.403, 100: 0.335, 200: 0.291, 300: 0.251, 400: 0.228, 500: 0.216, 1000: 0.164,
                      2000: 0.116, 3000: 0.091, 4000: 0.071, 5000: 0.062}


@dataclass(frozen=True)
class Damage:
    """One draw of the study's damage: which weight list, and which matrix of it (0-based)."""

    weight_list: str
    index: int

    @property
    def hits_answer_head(self) -> bool:
        return self.weight_list.startswith("answer")

    @property
    def matrix(self) -> str:
        """The name of the matrix hit (`matrix_name`)."""
        return matrix_name(self.weight_list, self.index)


def matrix_name(weight_list: str, index: int) -> str:
    """The name of matrix `index` (0-based) of a weight list, for tables and figures: a reach
    head's by its vertex ("vertex 3"; one head shared by every layer), an answer head's by its
    layer ("layer 3")."""
    return f"vertex {index + 1}" if weight_list.startswith("reach") else f"layer {index + 1}"


def draw_damage(n_vertices: int, generator: torch.Generator) -> Damage:
    """One of the six lists uniformly, then one of its n matrices uniformly (the authors' draw)."""
    weight_list = WEIGHT_LISTS[int(torch.randint(len(WEIGHT_LISTS), (1,), generator=generator))]
    return Damage(weight_list, int(torch.randint(n_vertices, (1,), generator=generator)))


def apply_damage(model: StudyConstruction | BFSTransformer, damage: Damage, generator: torch.Generator) -> None:
    """Replace the drawn matrix of `model` by N(0, 1) noise, in place."""
    part, kind = damage.weight_list.split()
    with torch.no_grad():
        if isinstance(model, StudyConstruction):
            weight = getattr(model, f"{part}_{kind}")
            weight[damage.index] = torch.randn(weight[damage.index].shape, generator=generator).to(weight)
            return
        weight = {"key": model.key, "query": model.query, "value": model.value}[kind]
        if part == "reach":          # head j of every layer, one noise matrix (the study shares them)
            weight[:, damage.index] = torch.randn(weight[0, damage.index].shape, generator=generator).to(weight)
        else:                        # the answer head (index n) of one layer
            weight[damage.index, model.n_vertices] = torch.randn(
                weight[damage.index, model.n_vertices].shape, generator=generator).to(weight)


def unreachable_label(model: StudyConstruction | BFSTransformer) -> int:
    """The label a construction gives an unreachable vertex 2: n + 1 in the study's, n in the book's."""
    return model.n_vertices + 1 if isinstance(model, StudyConstruction) else model.n_vertices


@dataclass
class HeldOut:
    """A fixed set of graphs of the study's sampler with their distances, for one construction."""

    adjacency: torch.Tensor
    distance: torch.Tensor

    def mse(self, model) -> float:
        with torch.no_grad():
            return float(((model(self.adjacency) - self.distance) ** 2).mean())


def held_out_set(model, n_graphs: int, seed: int) -> HeldOut:
    adjacency = sample_seed_graphs(n_graphs, model.n_vertices, torch.Generator().manual_seed(seed))
    return HeldOut(adjacency, frontier_distance_batch(adjacency, unreachable_label(model)))


def checkpoints(steps: int, every: int) -> list[int]:
    """The steps at which the held-out MSE is recorded: 0, every `every`, the study's, the last."""
    marks = set(range(0, steps + 1, max(1, every))) | {s for s in PUBLISHED_RECOVERY if s <= steps} | {steps}
    return sorted(marks)


def retrain_like_study(model, steps: int, held_out: HeldOut, generator: torch.Generator, *,
                       batch_size: int = STUDY_BATCH_SIZE, learning_rate: float = STUDY_LEARNING_RATE,
                       record_every: int = 50) -> dict:
    """Adam on a fresh batch of the study's graphs every step, in place; what was measured.

    Returns `curve` ([step, held-out MSE] at `checkpoints`) and `train_curve` ([step, mean
    training-batch MSE of the steps since the previous checkpoint]; the study plotted the
    training-batch loss of single steps).
    """
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    label = unreachable_label(model)
    marks = checkpoints(steps, record_every)
    curve, train_curve, window = [[0, held_out.mse(model)]], [], []
    with flush_denormals():
        for step in range(1, steps + 1):
            adjacency = sample_seed_graphs(batch_size, model.n_vertices, generator)
            loss = torch.nn.functional.mse_loss(model(adjacency), frontier_distance_batch(adjacency, label))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            window.append(loss.item())
            if step in marks:
                curve.append([step, held_out.mse(model)])
                train_curve.append([step, sum(window) / len(window)])
                window = []
    return {"curve": curve, "train_curve": train_curve}


def study_protocol_draw(intact, damage: Damage, steps: int, held_out: HeldOut, seed: int, *,
                        batch_size: int = STUDY_BATCH_SIZE, record_every: int = 50,
                        tolerance: float = 1e-6) -> dict:
    """Damage a copy of `intact` as drawn, retrain it as the study did; the record of the draw.

    The record holds `weight_list`, `index`, `matrix` (`matrix_name`), `answer_head`, `seed`,
    `loss_intact`, `loss_before` (held-out MSE right after damage), `loss_after` (after `steps`), `steps`,
    `damage_had_effect` (the damage moved the held-out MSE by more than `tolerance`), `curve`
    and `train_curve` (see `retrain_like_study`).
    """
    generator = torch.Generator().manual_seed(seed)
    model = copy.deepcopy(intact)
    apply_damage(model, damage, generator)
    run = retrain_like_study(model, steps, held_out, generator, batch_size=batch_size, record_every=record_every)
    loss_intact = held_out.mse(intact)
    return {"weight_list": damage.weight_list, "index": damage.index, "matrix": damage.matrix,
            "answer_head": damage.hits_answer_head, "seed": seed, "loss_intact": loss_intact,
            "loss_before": run["curve"][0][1], "loss_after": run["curve"][-1][1], "steps": steps,
            "damage_had_effect": abs(run["curve"][0][1] - loss_intact) > tolerance, **run}


@dataclass
class PendingProtocol:
    """Retraining runs started by `start_protocol_on_draws`; `records()` waits for them."""

    names: tuple[str, ...]
    run_names: tuple[str, ...]   # the construction of each run, in the order of the results
    pending: Pending

    @property
    def in_background(self) -> bool:
        """Whether worker processes retrain while this process goes on."""
        return self.pending.in_background

    def records(self, *, progress: bool = False) -> dict[str, list[dict]]:
        """Construction name -> its draws' records, in draw order (a bar counts the runs done)."""
        records = {name: [] for name in self.names}
        for name, record in zip(self.run_names, tqdm(self.pending.results(), total=len(self.run_names),
                                                     disable=not progress, desc="the study's protocol",
                                                     mininterval=5)):
            records[name].append(record)
        return records


def start_protocol_on_draws(constructions: dict, draws: list[tuple[Damage, int]], steps: int, held_out_seed: int, *,
                            n_held_out: int = 1024, batch_size: int = STUDY_BATCH_SIZE, record_every: int = 50,
                            workers: int = 1, this_process_helps: bool = False) -> PendingProtocol:
    """Start retraining the given draws (damage, seed), each damaged and retrained on every
    construction (name -> model); `PendingProtocol.records()` returns them.

    Draw i uses the same (list, index) and the same seed on every construction, so the columns
    are paired; the held-out graphs (`n_held_out` graphs of the study's sampler from
    `held_out_seed`) are the same graphs for all, labelled by each construction's unreachable
    convention. On a CPU the runs start now in `workers` single-threaded worker processes
    (`lib.book.workers.start_in_workers`) while this process goes on; with `this_process_helps`,
    `records()` also retrains here, on one thread, the runs no worker has started; each run's
    numbers are then those of a single-threaded run here. On a machine with a GPU, or with no
    second process, the runs go here, on this process's threads, when the records are read.
    """
    held_out = {name: held_out_set(model, n_held_out, held_out_seed) for name, model in constructions.items()}
    runs = [(name, damage, seed) for name in constructions for damage, seed in draws]

    def retrain(run: tuple[str, Damage, int]) -> dict:
        name, damage, seed = run
        return study_protocol_draw(constructions[name], damage, steps, held_out[name], seed,
                                   batch_size=batch_size, record_every=record_every)

    device = next(next(iter(constructions.values())).parameters()).device
    pending = start_in_workers(retrain, runs, workers, device, this_process_helps=this_process_helps)
    return PendingProtocol(tuple(constructions), tuple(name for name, _, _ in runs), pending)


def protocol_on_draws(constructions: dict, draws: list[tuple[Damage, int]], steps: int, held_out_seed: int, *,
                      n_held_out: int = 1024, batch_size: int = STUDY_BATCH_SIZE, record_every: int = 50,
                      progress: bool = False, workers: int = 1) -> dict[str, list[dict]]:
    """`start_protocol_on_draws` and wait for its records: construction name -> the draws'
    records (`study_protocol_draw`), in draw order; `progress` shows a bar over the runs."""
    return start_protocol_on_draws(constructions, draws, steps, held_out_seed, n_held_out=n_held_out,
                                   batch_size=batch_size, record_every=record_every,
                                   workers=workers).records(progress=progress)


def study_protocol(constructions: dict, draws: int, steps: int, seed: int, *, n_held_out: int = 1024,
                   batch_size: int = STUDY_BATCH_SIZE, record_every: int = 50) -> dict[str, list[dict]]:
    """`draws` random damages of the study's distribution, each run on every construction
    (`protocol_on_draws`, held-out graphs from `seed + 1`, draw i retrained from seed `seed + 2 + i`)."""
    picker = torch.Generator().manual_seed(seed)
    damages = [draw_damage(next(iter(constructions.values())).n_vertices, picker) for _ in range(draws)]
    return protocol_on_draws(constructions, [(damage, seed + 2 + i) for i, damage in enumerate(damages)], steps,
                             seed + 1, n_held_out=n_held_out, batch_size=batch_size, record_every=record_every)


__all__ = [
    "Damage", "HeldOut", "PUBLISHED_RECOVERY", "STUDY_BATCH_SIZE", "STUDY_LEARNING_RATE", "WEIGHT_LISTS",
    "PendingProtocol", "apply_damage", "checkpoints", "draw_damage", "held_out_set", "matrix_name",
    "protocol_on_draws", "retrain_like_study", "start_protocol_on_draws", "study_protocol", "study_protocol_draw",
    "unreachable_label",
]
