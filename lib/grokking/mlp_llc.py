"""The LLC of chapter 4's MLPs: many instances at once, in chunks, over worker processes (chapter 5).

`mlp_llc` estimates the local learning coefficient of every instance of a batch of MLPs (the
parameter dicts of `lib.grokking.mlp`, leading instances dimension) on their training pairs,
with the SGLD chains of `lib.grokking.llc` (see there for the estimator and its settings).

Full batch (the study's setting, `batch_size=None`), the gradient of the M = B * chains models
comes from the hand-written forward and backward pass of the trainer
(`lib.grokking.chunk_step.ChunkStep`) instead of autograd: on S4 vs A4xZ2 (d = h = 32, 200
models per call, one thread) a step cost about 130 microseconds per model against about 210
with autograd (`benchmarks/bench_llc.py`). It draws its noise in the order of
`lib.grokking.llc.estimate_llc` (one tensor per parameter, in `PARAMETER_NAMES` order), so both
paths give the same chains up to rounding. With minibatches it runs `estimate_llc` itself.

`mlp_llc_in_chunks` cuts many instances into calls of at most `MAX_SGLD_ACTIVATIONS` and
spreads them over single-threaded worker processes (`lib.grokking.parallel.run_chunks`, as the
sweep trainer). Each chunk draws from its own generator, seeded from the caller's before any
chunk runs, so the numbers depend on the seed and the chunk size but not on the workers.
`mlp_single_llc` is the one-model reference loop (`lib.grokking.llc.single_model_llc`).
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

from lib.grokking.chunk_step import ChunkStep
from lib.grokking.llc import (
    ChainRecord, LLCEstimate, SGLDConfig, estimate_llc, noise_like, sgld_drift_step,
    single_model_llc, summarise_chains,
)
from lib.grokking.mlp import PARAMETER_NAMES, instance_loss, single_logits
from lib.grokking.parallel import run_chunks
from lib.grokking.sweep_runner import content_key, current_backend, run_sharded

#: Most activations (models x training pairs x the larger of hidden width and group order) in
#: one SGLD batch of `mlp_llc_in_chunks`, 1 MiB of floats: 3 S4 seeds at 8 chains, one at the
#: published 100 chains or an S5 seed at any count (a chunk has at least one seed). Smaller
#: batches stay nearer the core's cache: on S4 (8 chains, one thread, six interleaved rounds) a
#: model-step cost 110 microseconds in batches of 16-24 models, 123 at 48, 129 at 96, 136 at 8.
#: With two workers on 200 seeds, wall time per model-step against the former 4 MiB (medians of
#: eight interleaved rounds on a busy machine): 92 against 99 microseconds for trained seeds, 71
#: against 94 at their initial weights. Many small chunks also share out evenly over the workers.
MAX_SGLD_ACTIVATIONS = 2**18


def mlp_llc(
    params: dict[str, torch.Tensor], train_left: torch.Tensor, train_right: torch.Tensor,
    train_labels: torch.Tensor, config: SGLDConfig, generator: torch.Generator,
) -> LLCEstimate:
    """LLC of every MLP instance in `params` on its training pairs (mean cross-entropy)."""
    device = params["unembed"].device
    left, right, labels = (t.to(device) for t in (train_left, train_right, train_labels))
    if config.batch_size is None:
        return _full_batch_llc(params, left, right, labels, config, generator)

    def loss_fn(models: dict[str, torch.Tensor], batch: torch.Tensor | None) -> torch.Tensor:
        pick = slice(None) if batch is None else batch
        return instance_loss(models, left[pick], right[pick], labels[pick])

    return estimate_llc(loss_fn, params, config, generator, n_data=left.numel())


def _full_batch_llc(params: dict[str, torch.Tensor], left: torch.Tensor, right: torch.Tensor,
                    labels: torch.Tensor, config: SGLDConfig, generator: torch.Generator) -> LLCEstimate:
    """`estimate_llc` on the full batch with the trainer's hand-written gradient."""
    n_models, chains = params["unembed"].shape[0], config.chains
    with torch.no_grad():
        init_loss = instance_loss(params, left, right, labels)
    chain_params = {k: v.detach().repeat_interleave(chains, dim=0) for k, v in params.items()}
    stepper = ChunkStep(chain_params, left, right, labels, config=None)
    center = stepper.flat_param.clone()
    # The parameters in their canonical shapes (views into the flat buffer), for the noise.
    current = stepper.params()
    names = [name for name in PARAMETER_NAMES if name in current]
    losses = torch.empty(n_models * chains, dtype=center.dtype, device=center.device)
    record = ChainRecord(config, n_models, center.device)
    for step in range(config.steps):
        stepper.compute_gradients(losses)
        record.add(step, losses)
        # All parameters, gradients and centres are flat buffers of one layout: one update.
        sgld_drift_step(stepper.flat_param, stepper.flat_grad, center, config)
        for name in names:
            current[name].add_(noise_like(current[name], generator), alpha=math.sqrt(config.step_size))
    return record.estimate(init_loss)


def mlp_llc_in_chunks(
    params: dict[str, torch.Tensor], train_left: torch.Tensor, train_right: torch.Tensor,
    train_labels: torch.Tensor, config: SGLDConfig, generator: torch.Generator, workers: int = 1,
) -> LLCEstimate:
    """`mlp_llc` of every instance, in chunks of at most `MAX_SGLD_ACTIVATIONS` activations
    (at least one instance), run by `workers` single-threaded processes at once on a CPU (one
    after another on a GPU).

    Chunk k uses a generator seeded with the k-th of a list of seeds drawn first from
    `generator`; the same seed gives the same numbers with any number of workers, and on every
    backend of `lib.grokking.sweep_runner` (its shards are whole chunks).
    """
    n, chains = params["unembed"].shape[0], config.chains
    n_elements, hidden = params["unembed"].shape[2], params["unembed"].shape[1]
    size = max(1, MAX_SGLD_ACTIVATIONS // (chains * train_labels.numel() * max(hidden, n_elements)))
    chunks = [(start, min(start + size, n)) for start in range(0, n, size)]
    seeds = torch.randint(0, 2**62, (len(chunks),), generator=generator, device=generator.device).tolist()
    local = current_backend().name == "local"
    on_cpu = params["unembed"].device.type == "cpu"
    shard_work = functools.partial(_llc_shard, params, (train_left, train_right, train_labels), config,
                                   dict(zip(chunks, seeds)), str(generator.device),
                                   workers if on_cpu and local else 1)
    key = content_key(*params.values(), train_left, train_right, train_labels, repr((config, seeds)))
    flat = run_sharded(shard_work, n, key=key, instance_dim=lambda name: 1 if name == "trace" else 0,
                       cut_points=[start for start, _ in chunks], local_workers=workers if on_cpu and local else 1)
    return summarise_chains(flat["per_chain"], flat["init_loss"], flat["trace"], config.burn_in_steps)


def _llc_shard(params: dict[str, torch.Tensor], train: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
               config: SGLDConfig, seed_of: dict[tuple[int, int], int], device: str, workers: int,
               start: int, stop: int) -> dict[str, torch.Tensor]:
    """The chains of instances start..stop - 1 (whole chunks of `seed_of`, each with its own
    seed): one shard of `mlp_llc_in_chunks` for `lib.grokking.sweep_runner`."""
    chunks = [(a - start, b - start) for a, b in seed_of if start <= a < stop]
    shard = {k: v[start:stop] for k, v in params.items()}
    per_chain = torch.empty(stop - start, config.chains, dtype=torch.float64)
    init_loss = torch.empty(stop - start, dtype=torch.float64)
    trace = torch.empty(config.steps, stop - start, dtype=torch.float64)

    def estimate_chunk(chunk: tuple[int, int], report) -> None:
        a, b = chunk
        generator = torch.Generator(device=device).manual_seed(seed_of[a + start, b + start])
        part = mlp_llc({k: v[a:b] for k, v in shard.items()}, *train, config, generator)
        per_chain[a:b], init_loss[a:b], trace[:, a:b] = part.per_chain, part.init_loss, part.loss_trace

    run_chunks(chunks, estimate_chunk, workers, [per_chain, init_loss, trace], None)
    return {"per_chain": per_chain, "init_loss": init_loss, "trace": trace}


def mlp_single_llc(
    params: dict[str, torch.Tensor], train_left: torch.Tensor, train_right: torch.Tensor,
    train_labels: torch.Tensor, config: SGLDConfig, generator: torch.Generator,
) -> LLCEstimate:
    """LLC of one MLP (no instances dimension) by `single_model_llc`, its loss from `single_logits`."""
    device = params["unembed"].device
    left, right, labels = (t.to(device) for t in (train_left, train_right, train_labels))

    def loss_fn(model: dict[str, torch.Tensor], batch: torch.Tensor | None) -> torch.Tensor:
        pick = slice(None) if batch is None else batch
        return F.cross_entropy(single_logits(model, left[pick], right[pick]), labels[pick])

    return single_model_llc(loss_fn, params, config, generator, n_data=left.numel())


__all__ = ["MAX_SGLD_ACTIVATIONS", "mlp_llc", "mlp_llc_in_chunks", "mlp_single_llc"]
