"""Seed sweeps on a pair of groups: build the training set, train, classify, summarise, save.

Chapter 4 runs one sweep per pair of the ambiguous-grokking study; chapters 5 and 6 load the
saved sweeps (final parameters, checkpoints, metric trajectories) instead of retraining.
Chapter 5 also trains on a random part of one group's table (`run_group_sweep`), the classic
grokking setting, where models reliably generalize.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

import torch
from tqdm.auto import tqdm

from lib.grokking.groups import Group
from lib.grokking.pairs import GroupPair, label_counts, pairs_in_mask, subsample_pairs
from lib.grokking.outcomes import OUTCOMES, classify_outcomes, outcome_fractions
from lib.grokking.training import Evaluation, SweepResult, SweepConfig, train_instances
from lib.grokking.mlp import MLPConfig, init_instances
from lib.book.results import save_checkpoint


def pair_evaluations(pair: GroupPair) -> list[Evaluation]:
    """Score against G1 and G2 on all N^2 pairs, and on the intersection alone."""
    return [Evaluation("g1", pair.g1.table), Evaluation("g2", pair.g2.table),
            Evaluation("intersection", pair.g1.table, pair.mask)]


def intersection_training_set(
    pair: GroupPair, fraction: float = 1.0, generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The pairs where the two groups agree (or a random `fraction` of them) and their labels."""
    left, right = pairs_in_mask(pair.mask)
    if fraction < 1.0:
        if generator is None:
            raise ValueError("subsampling the intersection needs an explicit torch.Generator.")
        left, right = subsample_pairs(left, right, fraction, generator)
    return left, right, pair.g1.table[left, right]


def run_pair_sweep(
    pair: GroupPair,
    seeds: Sequence[int] | torch.Tensor,
    model_config: MLPConfig,
    training_config: SweepConfig,
    *,
    train_fraction: float = 1.0,
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
    progress: bool = True,
) -> SweepResult:
    """Train one instance per seed on the intersection of `pair` (chapter 4's experiment).

    Args:
        pair: the two groups; the training set is their intersection.
        seeds: one model per seed, initialised as `init_single(seed)` would.
        model_config: MLP shape (n_elements must equal the pair's order).
        training_config: optimiser, epochs, logging, checkpoints.
        train_fraction: train on a random subset of the intersection of this size instead.
        generator: draws that subset (required when train_fraction < 1).
        device: where to train.
        progress: show a tqdm bar (quiet when not attached to a terminal or notebook).
    """
    if model_config.n_elements != pair.n_elements:
        raise ValueError(f"model_config.n_elements is {model_config.n_elements} but {pair.name} "
                         f"has {pair.n_elements} elements.")
    left, right, labels = intersection_training_set(pair, train_fraction, generator)
    params = init_instances(seeds, model_config, device=device)
    bar = tqdm(total=len(seeds) * training_config.epochs, desc=pair.name, unit="model-epoch",
               unit_scale=True, mininterval=10.0, disable=None if progress else True)
    try:
        result = train_instances(
            params, left, right, labels, pair_evaluations(pair), training_config,
            seeds=seeds, model_config=model_config, progress=bar.update,
            info={"pair": pair.name, "g1": pair.g1.name, "g2": pair.g2.name,
                  "n_elements": pair.n_elements, "intersection_size": pair.intersection_size,
                  "train_fraction": train_fraction},
        )
    finally:
        bar.close()
    return result


def run_group_sweep(
    group: Group,
    seeds: Sequence[int] | torch.Tensor,
    model_config: MLPConfig,
    training_config: SweepConfig,
    *,
    train_fraction: float,
    generator: torch.Generator,
    device: torch.device | str = "cpu",
    progress: bool = True,
) -> SweepResult:
    """Train one instance per seed on a random `train_fraction` of `group`'s table (chapter 5).

    The training pairs are drawn once (from `generator`) and shared by every instance; accuracy
    is recorded on all N^2 pairs as metric "acc_test", so train_acc - acc_test is the
    generalization gap at each logged epoch.
    """
    if model_config.n_elements != group.order:
        raise ValueError(f"model_config.n_elements is {model_config.n_elements} but {group.name} "
                         f"has {group.order} elements.")
    everything = torch.ones(group.order, group.order, dtype=torch.bool)
    left, right = subsample_pairs(*pairs_in_mask(everything), train_fraction, generator)
    params = init_instances(seeds, model_config, device=device)
    bar = tqdm(total=len(seeds) * training_config.epochs, desc=group.name, unit="model-epoch",
               unit_scale=True, mininterval=10.0, disable=None if progress else True)
    try:
        return train_instances(
            params, left, right, group.table[left, right], [Evaluation("test", group.table)],
            training_config, seeds=seeds, model_config=model_config, progress=bar.update,
            info={"group": group.name, "n_elements": group.order, "train_fraction": train_fraction})
    finally:
        bar.close()


def sweep_outcomes(result: SweepResult, grok_threshold: float = 0.999,
                   fit_threshold: float = 0.999) -> torch.Tensor:
    """Outcome code of every instance of a pair sweep at its last logged epoch."""
    return classify_outcomes(result.final("acc_g1"), result.final("acc_g2"),
                             result.final("train_acc"), grok_threshold, fit_threshold)


def sweep_summary(result: SweepResult, codes: torch.Tensor, confidence: float = 0.95,
                  grok_threshold: float = 0.999) -> dict:
    """The numbers chapter 4 writes to its results JSON for one pair sweep.

    `fraction_intersection_grokked` is the share of instances whose final accuracy on the whole
    intersection reaches `grok_threshold`; `min_acc_intersection` is the lowest such accuracy.
    """
    fractions = outcome_fractions(codes, confidence)
    info = result.info
    summary = {
        "name": info.get("pair"), "g1": info.get("g1"), "g2": info.get("g2"),
        "n_elements": info.get("n_elements"), "intersection_size": info.get("intersection_size"),
        "train_fraction": info.get("train_fraction", 1.0),
        "n_train_pairs": int(result.train_left.numel()),
        "n_instances": result.n_instances, "epochs": result.training_config.epochs,
        "embed_dim": result.model_config.embed_dim, "hidden_dim": result.model_config.hidden_dim,
        "weight_decay": result.training_config.weight_decay,
        "learning_rate": result.training_config.lr, "beta2": result.training_config.beta2,
        "tied_linear": result.model_config.tied_linear, "grok_threshold": grok_threshold,
        "fraction_g1": fractions["grokked_g1"].fraction,
        "fraction_g2": fractions["grokked_g2"].fraction,
        "fraction_neither": fractions["memorized"].fraction + fractions["failed"].fraction,
        "fraction_intersection_grokked": float((result.final("acc_intersection") >= grok_threshold).float().mean()),
        "min_acc_intersection": float(result.final("acc_intersection").min()),
        "mean_acc_intersection": float(result.final("acc_intersection").mean()),
        "seconds": result.elapsed_s,
        "model_epochs_per_second": result.model_epochs_per_second(),
    }
    for name in OUTCOMES:
        f = fractions[name]
        summary[f"count_{name}"] = f.count
        summary[f"ci_{name}"] = [f.low, f.high]
    return summary


def class_balance(pair: GroupPair) -> dict[str, torch.Tensor]:
    """How often each label occurs in the intersection versus over each full table (length N).

    Over a full group table every label occurs N times; the intersection can be lopsided.
    """
    left, right = pairs_in_mask(pair.mask)
    n = pair.n_elements
    full_left, full_right = pairs_in_mask(torch.ones(n, n, dtype=torch.bool))
    return {"intersection": label_counts(pair.g1, left, right),
            "g1_full": label_counts(pair.g1, full_left, full_right),
            "g2_full": label_counts(pair.g2, full_left, full_right)}


# --- Saving and loading --------------------------------------------------------------------


def save_sweep(result: SweepResult, path: str | os.PathLike, include_checkpoints: bool = True) -> Path:
    """Write a sweep (parameters, checkpoints, metrics, configs) atomically to `path` (torch.save)."""
    state = {
        "format": "grokking_sweep/1",
        "seeds": result.seeds, "model_config": dataclasses.asdict(result.model_config),
        "training_config": dataclasses.asdict(result.training_config),
        "train_left": result.train_left, "train_right": result.train_right,
        "train_labels": result.train_labels, "log_epochs": result.log_epochs,
        "metrics": result.metrics, "final_params": result.final_params,
        "checkpoints": result.checkpoints if include_checkpoints else {},
        "elapsed_s": result.elapsed_s, "info": result.info,
    }
    return save_checkpoint(path, state)


def load_sweep(path: str | os.PathLike) -> SweepResult:
    """Read back a sweep written by `save_sweep`."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    if state.get("format") != "grokking_sweep/1":
        raise ValueError(f"{path} is not a sweep written by save_sweep.")
    training = dict(state["training_config"])
    training["checkpoint_epochs"] = tuple(training["checkpoint_epochs"])
    return SweepResult(
        seeds=state["seeds"], model_config=MLPConfig(**state["model_config"]),
        training_config=SweepConfig(**training), train_left=state["train_left"],
        train_right=state["train_right"], train_labels=state["train_labels"],
        log_epochs=state["log_epochs"], metrics=state["metrics"],
        checkpoints={int(k): v for k, v in state["checkpoints"].items()},
        final_params=state["final_params"], elapsed_s=state["elapsed_s"], info=state["info"],
    )
