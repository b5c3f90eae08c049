"""The instance-batched trainer follows single-model training, instance by instance."""

import dataclasses

import pytest
import torch

from lib.grokking.pairs import make_pair, pairs_in_mask
from lib.grokking import parallel
from lib.grokking.chunk_step import ChunkStep
from lib.grokking.training import (
    Evaluation, SweepConfig, evaluate_instances, plan_sweep, snapshot_epochs, train_instances,
)
from lib.grokking.reference_training import train_single
from lib.grokking.mlp import MLPConfig, init_instances, instance_loss

PAIR = make_pair("S4_vs_A4xZ2")
LEFT, RIGHT = pairs_in_mask(PAIR.mask)
LABELS = PAIR.g1.table[LEFT, RIGHT]
EVALS = [Evaluation("g1", PAIR.g1.table), Evaluation("g2", PAIR.g2.table),
         Evaluation("intersection", PAIR.g1.table, PAIR.mask)]


@pytest.mark.parametrize("bias", [False, True])
def test_hand_written_gradient_equals_autograd(bias):
    config = MLPConfig(24, 8, 16, unembed_bias=bias)
    params = init_instances([0, 1, 2], config)
    stepper = ChunkStep(params, LEFT, RIGHT, LABELS, SweepConfig(lr=0.0, weight_decay=0.0))
    stepper.step()
    reference = {k: v.clone().requires_grad_() for k, v in params.items()}
    instance_loss(reference, LEFT, RIGHT, LABELS).sum().backward()
    for name, value in reference.items():
        mine = stepper.grad["unembed_t"].transpose(1, 2) if name == "unembed" else stepper.grad[name]
        torch.testing.assert_close(mine, value.grad, rtol=1e-4, atol=1e-7)
    # lr = 0 leaves the parameters where they were.
    for name, value in stepper.params().items():
        assert torch.equal(value, params[name])


def test_snapshot_epochs_step_from_the_start_and_end_at_the_last_epoch():
    assert snapshot_epochs(2000, 500) == (0, 500, 1000, 1500, 2000)
    assert snapshot_epochs(25, 10) == (0, 10, 20, 25)
    assert snapshot_epochs(20, 5, start=10) == (10, 15, 20)


@pytest.mark.parametrize("bias", [False, True])
def test_gradient_only_step_reports_each_instance_loss(bias):
    """Without an optimizer (chapter 5's SGLD) the step computes gradients and, on request, the
    mean cross-entropy of each instance, and refuses to take an Adam step."""
    params = init_instances([3, 4], MLPConfig(24, 8, 16, unembed_bias=bias))
    stepper = ChunkStep(params, LEFT, RIGHT, LABELS, config=None)
    losses = torch.empty(2)
    stepper.compute_gradients(losses)
    torch.testing.assert_close(losses, instance_loss(params, LEFT, RIGHT, LABELS), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="without an optimizer"):
        stepper.step()


# Tiny models train fastest (and least disturbed by other processes) on one thread.
pytestmark = pytest.mark.usefixtures("one_thread")


def _relative_distance(a: dict, b: dict) -> float:
    flat_a = torch.cat([a[k].flatten() for k in sorted(a)]).double()
    flat_b = torch.cat([b[k].flatten() for k in sorted(b)]).double()
    return float((flat_a - flat_b).norm() / flat_a.norm())


@pytest.mark.parametrize("bias, chunk_size, workers, dtype", [
    (False, 0, 1, torch.float32), (True, 2, 2, torch.float32),
    (False, 0, 1, torch.float64), (True, 3, 2, torch.float64),
])
def test_batched_training_follows_single_model_training(bias, chunk_size, workers, dtype):
    """Each instance follows the trajectory of training its seed alone, over 100 epochs.

    The two computations differ only in rounding (fused kernels, summation order, where the
    1/T of the mean is applied). In float64 they agree to ~1e-12 throughout. In float32 they
    agree to ~1e-6 relative until a rare discrete event (a ReLU unit or a tiny Adam
    denominator flipping) lets the rounding difference jump, as it does between two single
    runs whose initial weights differ by one ulp; the float32 checks therefore stop at epoch
    60 for parameters and allow 1e-3 on the loss curve.
    """
    seeds = [11, 3, 7, 0]
    model = MLPConfig(24, 8, 16, unembed_bias=bias)
    record = tuple(range(0, 101, 20))
    config = SweepConfig(epochs=100, log_every=1, checkpoint_epochs=record,
                            weight_decay=2e-4, chunk_size=chunk_size, workers=workers)
    initial = {k: v.to(dtype) for k, v in init_instances(seeds, model).items()}
    result = train_instances(initial, LEFT, RIGHT, LABELS, EVALS, config, seeds=seeds)
    assert result.metrics["train_loss"].shape == (101, 4)
    assert result.final_params["unembed"].dtype == dtype
    for i, seed in enumerate(seeds):
        final, recorded, losses = train_single(seed, model, LEFT, RIGHT, LABELS, config,
                                               record_epochs=record, dtype=dtype)
        recorded[100] = final
        mine = {e: {k: v[i] for k, v in result.checkpoints[e].items()} for e in record}
        assert _relative_distance(recorded[0], mine[0]) == 0.0
        for epoch in record:
            distance = _relative_distance(recorded[epoch], mine[epoch])
            if dtype == torch.float64:
                assert distance < 1e-10, (seed, epoch, distance)
            elif epoch <= 60:
                assert distance < 1e-5, (seed, epoch, distance)
        tolerance = 1e-6 if dtype == torch.float64 else 1e-3     # metrics are stored in float32
        torch.testing.assert_close(result.metrics["train_loss"][:100, i].double(),
                                   torch.tensor(losses, dtype=torch.float64),
                                   rtol=tolerance, atol=tolerance * 1e-2)


def test_same_seeds_same_numbers_and_chunking_does_not_matter():
    seeds = list(range(6))
    model = MLPConfig(24, 8, 8)
    config = SweepConfig(epochs=40, log_every=10)
    runs = [train_instances(init_instances(seeds, model), LEFT, RIGHT, LABELS, EVALS,
                            SweepConfig(epochs=40, log_every=10, chunk_size=c, workers=w))
            for c, w in [(0, 1), (0, 1), (1, 2), (4, 1)]]
    for name, values in runs[0].metrics.items():
        assert torch.equal(values, runs[1].metrics[name])
        for other in runs[2:]:
            torch.testing.assert_close(values, other.metrics[name], rtol=1e-4, atol=1e-4)
    assert runs[0].log_epochs.tolist() == [0, 10, 20, 30, 40] == config.log_epochs()


def test_log_epochs_always_end_at_the_last_epoch():
    assert SweepConfig(epochs=25, log_every=10).log_epochs() == [0, 10, 20, 25]
    with pytest.raises(ValueError, match="checkpoint"):
        train_instances(init_instances([0], MLPConfig(24, 4, 4)), LEFT, RIGHT, LABELS, EVALS,
                        SweepConfig(epochs=5, checkpoint_epochs=(6,)))


def test_evaluate_instances_against_a_direct_count():
    params = init_instances([0, 1], MLPConfig(24, 8, 8))
    values = evaluate_instances(params, EVALS, LEFT, RIGHT, LABELS, max_logits=24 ** 3)
    grid = torch.arange(24)
    a, b = grid.repeat_interleave(24), grid.repeat(24)
    for i in range(2):
        from lib.grokking.mlp import single_logits
        logits = single_logits({k: v[i] for k, v in params.items()}, a, b)
        predictions = logits.argmax(-1).view(24, 24)
        assert values["acc_g1"][i].item() == pytest.approx((predictions == PAIR.g1.table).float().mean().item())
        assert values["acc_g2"][i].item() == pytest.approx((predictions == PAIR.g2.table).float().mean().item())
        assert values["acc_intersection"][i].item() == pytest.approx(
            (predictions == PAIR.g1.table)[PAIR.mask].float().mean().item())
        assert values["train_acc"][i].item() == pytest.approx(
            (predictions[LEFT, RIGHT] == LABELS).float().mean().item())
        loss = torch.nn.functional.cross_entropy(single_logits({k: v[i] for k, v in params.items()},
                                                               LEFT, RIGHT), LABELS)
        assert values["train_loss"][i].item() == pytest.approx(loss.item(), rel=1e-5)


def test_a_short_sweep_fits_the_training_set():
    """Sanity check of the whole loop: 300 epochs at the authors' settings fit the intersection."""
    result = train_instances(init_instances(range(8), MLPConfig(24, 32, 32)), LEFT, RIGHT, LABELS,
                             EVALS, SweepConfig(epochs=300, log_every=50))
    assert (result.final("train_acc") == 1.0).all()
    assert (result.final("acc_intersection") == 1.0).all()
    assert (result.metrics["train_loss"][-1] < result.metrics["train_loss"][0]).all()
    assert result.model_epochs_per_second() > 0


def test_worker_processes_give_the_in_process_numbers_and_report_progress():
    """Two worker processes (forked, writing into shared memory) reproduce the one-process run
    exactly, chunk by chunk, and every model-epoch reaches the progress callback."""
    model = MLPConfig(24, 8, 8)
    config = SweepConfig(epochs=60, log_every=20, checkpoint_epochs=(0, 30), chunk_size=2)
    reported = []
    runs = [train_instances(init_instances(range(6), model), LEFT, RIGHT, LABELS, EVALS,
                            dataclasses.replace(config, workers=workers), progress=reported.append)
            for workers in (1, 2)]
    for name, values in runs[0].metrics.items():
        assert torch.equal(values, runs[1].metrics[name]), name
    for epoch in (0, 30):
        for name, values in runs[0].checkpoints[epoch].items():
            assert torch.equal(values, runs[1].checkpoints[epoch][name])
    for name, values in runs[0].final_params.items():
        assert torch.equal(values, runs[1].final_params[name])
    assert sum(reported) == 2 * 6 * 60


def test_an_error_in_a_worker_process_fails_the_sweep_with_its_message():
    bad = [Evaluation("broken", torch.zeros(5, 5, dtype=torch.long))]  # not an N x N table
    with pytest.raises(RuntimeError, match=r"(?s)failed in a worker process: worker \d.*must match the size"):
        train_instances(init_instances(range(4), MLPConfig(24, 4, 4)), LEFT, RIGHT, LABELS, bad,
                        SweepConfig(epochs=3, chunk_size=2, workers=2))


def test_without_room_in_shared_memory_threads_give_the_same_numbers(monkeypatch):
    model = MLPConfig(24, 8, 8)
    config = SweepConfig(epochs=30, log_every=10, chunk_size=2, workers=2)
    in_processes = train_instances(init_instances(range(4), model), LEFT, RIGHT, LABELS, EVALS, config)
    monkeypatch.setattr(parallel, "processes_can_share", lambda tensors: False)
    reported = []
    in_threads = train_instances(init_instances(range(4), model), LEFT, RIGHT, LABELS, EVALS, config,
                                 progress=reported.append)
    for name, values in in_processes.final_params.items():
        assert torch.equal(values, in_threads.final_params[name])
    assert sum(reported) == 4 * 30
    assert not in_threads.final_params["unembed"].is_shared()


def test_sweeps_over_disjoint_seed_ranges_concatenate_to_one_sweep():
    """With a set chunk size, shards that start at multiples of it give the whole sweep's numbers,
    bit for bit, whatever the workers (what a sweep cut into shards relies on)."""
    model = MLPConfig(24, 8, 8)
    config = SweepConfig(epochs=30, log_every=10, checkpoint_epochs=(0, 20), chunk_size=3)
    seeds = list(range(20, 29))

    def sweep(part, workers):
        return train_instances(init_instances(part, model), LEFT, RIGHT, LABELS, EVALS,
                               dataclasses.replace(config, workers=workers), seeds=part)

    whole = sweep(seeds, workers=1)
    shards = [sweep(seeds[:3], workers=1), sweep(seeds[3:], workers=2)]
    assert torch.equal(torch.cat([shard.seeds for shard in shards]), whole.seeds)
    for name, values in whole.metrics.items():
        assert torch.equal(torch.cat([shard.metrics[name] for shard in shards], dim=1), values), name
    for name, values in whole.final_params.items():
        assert torch.equal(torch.cat([shard.final_params[name] for shard in shards]), values), name
    for epoch, snapshot in whole.checkpoints.items():
        for name, values in snapshot.items():
            assert torch.equal(torch.cat([shard.checkpoints[epoch][name] for shard in shards]), values)


def test_plan_gives_every_worker_the_same_number_of_chunks():
    model = MLPConfig(24, 32, 32)
    plan = plan_sweep(1000, LEFT.numel(), model, SweepConfig(workers=2), torch.device("cpu"))
    sizes = [stop - start for start, stop in plan.chunks]
    assert len(plan.chunks) % 2 == 0
    assert len(set(sizes[:-1])) == 1 and sizes[-1] <= sizes[0]  # only the last one may be smaller
    assert plan.chunks[0][0] == 0 and plan.chunks[-1][1] == 1000
    assert all(a[1] == b[0] for a, b in zip(plan.chunks, plan.chunks[1:]))
    assert (plan.workers, plan.torch_threads) == (2, 1)


def test_tied_linear_map_trains_as_one_map_on_summed_embeddings():
    """The authors' "MLP3" (chapter 4's Z48 and Z35 runs): one map W on E_left[a] + E_right[b].
    Stored as two copies, it must follow an autograd model that really shares one W, in float64
    over 60 epochs, and its copies must stay exactly equal."""
    model = MLPConfig(24, 8, 16, tied_linear=True)
    seeds = [5, 9]
    init = init_instances(seeds, model)
    assert torch.equal(init["linear_left"], init["linear_right"])
    assert init["linear_left"].abs().max() <= 1 / 8 ** 0.5    # bound 1/sqrt(d), not 1/sqrt(2d)
    assert init["linear_left"].abs().max() > 1 / 16 ** 0.5
    record = (0, 30, 60)
    config = SweepConfig(epochs=60, log_every=10, checkpoint_epochs=record, weight_decay=2e-4,
                         beta2=0.999, workers=1)
    initial = {k: v.double() for k, v in init.items()}
    result = train_instances(initial, LEFT, RIGHT, LABELS, EVALS, config, seeds=seeds, model_config=model)
    torch.testing.assert_close(result.final_params["linear_left"], result.final_params["linear_right"],
                               rtol=0, atol=0)
    for i, seed in enumerate(seeds):
        final, recorded, _ = train_single(seed, model, LEFT, RIGHT, LABELS, config, record_epochs=record,
                                          dtype=torch.float64)
        assert torch.equal(final["linear_right"], final["linear_left"])
        recorded[60] = final
        for epoch in record:
            mine = {k: v[i] for k, v in result.checkpoints[epoch].items()}
            assert _relative_distance(recorded[epoch], mine) < 1e-10, (seed, epoch)
    # The untied model from the same seeds trains differently: the tying is not a no-op.
    untied = train_instances(initial, LEFT, RIGHT, LABELS, EVALS, config, seeds=seeds,
                             model_config=dataclasses.replace(model, tied_linear=False))
    assert not torch.allclose(untied.final_params["linear_left"], untied.final_params["linear_right"])
