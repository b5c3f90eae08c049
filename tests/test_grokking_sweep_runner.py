"""The sweep runner: shards cover the instances and merge in seed order; the Ray backend gives the
local backend's numbers exactly, survives a worker killed mid-shard, and names a shard that keeps
failing; an interrupted sweep resumes from the shards it wrote."""

import os
import signal
import sys
from pathlib import Path

import pytest
import torch

from lib.grokking.llc import SGLDConfig
from lib.grokking.mlp import MLPConfig, init_instances
from lib.grokking.mlp_llc import mlp_llc_in_chunks
from lib.grokking.pairs import make_pair
from lib.grokking.sweep_runner import (
    ShardFailed, SweepBackend, backend_in_use, check_backend, content_key, merge_shards, plan_shards, run_sharded,
)
from lib.grokking.sweeps import intersection_training_set, run_pair_sweep
from lib.grokking.training import SweepConfig

PAIR = make_pair("S4_vs_A4xZ2")
CONFIG = SweepConfig(epochs=40, log_every=10, checkpoint_epochs=(0, 20, 40))
SEEDS = list(range(10, 22))


def small_sweep():
    return run_pair_sweep(PAIR, SEEDS, MLPConfig(24, 8, 8), CONFIG, progress=False)


def assert_same_sweep(a, b):
    assert a.metrics.keys() == b.metrics.keys() and a.checkpoints.keys() == b.checkpoints.keys()
    assert all(torch.equal(a.metrics[k], b.metrics[k]) for k in a.metrics)
    assert all(torch.equal(a.final_params[k], b.final_params[k]) for k in a.final_params)
    assert all(torch.equal(a.checkpoints[e][k], b.checkpoints[e][k]) for e in a.checkpoints for k in a.checkpoints[e])


def squares(start: int, stop: int) -> dict[str, torch.Tensor]:
    """A stand-in for a sweep: instance i's outputs are i^2 (instances first) and a (2, B) row."""
    values = torch.arange(start, stop, dtype=torch.float64)
    return {"square": values ** 2, "rows": torch.stack([values, -values])}


def rows_dim(name: str) -> int:
    return 1 if name == "rows" else 0


def test_shards_cover_every_instance_once_in_nearly_equal_sizes():
    for n_items, n_shards in ((10, 3), (7, 7), (5, 9), (1000, 8)):
        shards = plan_shards(n_items, n_shards)
        assert shards[0][0] == 0 and shards[-1][1] == n_items
        assert all(a[1] == b[0] for a, b in zip(shards, shards[1:]))
        sizes = [stop - start for start, stop in shards]
        assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1


def test_shards_start_only_at_the_cut_points():
    assert plan_shards(100, 4, cut_points=[0, 26, 50, 76]) == [(0, 26), (26, 50), (50, 76), (76, 100)]
    assert plan_shards(100, 8, cut_points=[0, 50]) == [(0, 50), (50, 100)]   # never more shards than chunks
    assert plan_shards(100, 2, cut_points=[0, 10, 20, 45, 70, 90]) == [(0, 45), (45, 100)]


def test_merging_puts_shards_back_in_seed_order_along_each_outputs_instance_dimension():
    merged = merge_shards([squares(0, 3), squares(3, 7)], rows_dim)
    assert torch.equal(merged["square"], torch.arange(7.0, dtype=torch.float64) ** 2)
    assert merged["rows"].shape == (2, 7) and torch.equal(merged["rows"][1], -torch.arange(7.0, dtype=torch.float64))


def test_a_bad_backend_is_refused_in_one_sentence():
    with pytest.raises(ValueError, match="must be one of local, ray; got 'spark'"):
        check_backend("spark", None)
    with pytest.raises(ValueError, match="needs sweep_backend 'ray'"):
        check_backend("local", "auto")


def test_the_key_names_the_computation():
    assert content_key(torch.ones(3), "a") == content_key(torch.ones(3), "a")
    assert content_key(torch.ones(3), "a") != content_key(torch.ones(3), "b") != content_key(torch.zeros(3), "b")


def test_an_interrupted_run_resumes_from_the_shards_it_wrote(tmp_path):
    backend = SweepBackend("local", results_dir=tmp_path, shards_per_worker=4)
    calls = []

    def fails_on_the_third_shard(start, stop):
        calls.append(start)
        if len(calls) == 3:
            raise OSError("disk on fire")
        return squares(start, stop)

    with pytest.raises(ShardFailed, match=r"^Shard 2 \(instances 5\.\.6\) failed: disk on fire$"):
        run_sharded(fails_on_the_third_shard, 10, key="k", instance_dim=rows_dim, backend=backend)
    written = sorted(p.name for p in (tmp_path / "shards" / "k").iterdir())
    assert written == ["shard_00000000_00000002.pt", "shard_00000002_00000005.pt"]   # whole shards only
    calls.clear()
    merged = run_sharded(fails_on_the_third_shard, 10, key="k", instance_dim=rows_dim, backend=backend)
    assert calls == [5, 7]   # only the missing shards (5..6, 7..9) were computed
    expected = squares(0, 10)
    assert all(torch.equal(merged[k], expected[k]) for k in expected)
    assert not (tmp_path / "shards" / "k").exists()   # removed once merged


def test_a_sharded_local_sweep_equals_the_unsharded_one(tmp_path):
    reference = small_sweep()
    with backend_in_use(SweepBackend("local", results_dir=tmp_path, shards_per_worker=3)):
        sharded = small_sweep()
    assert_same_sweep(reference, sharded)


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    # Ray's workers cannot import this test module: send its functions by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield ray
    ray.shutdown()


def test_the_ray_backend_gives_the_local_numbers_exactly(ray_cluster, tmp_path):
    reference = small_sweep()
    with backend_in_use(SweepBackend("ray", results_dir=tmp_path, shards_per_worker=2)):
        on_ray = small_sweep()
    assert_same_sweep(reference, on_ray)


def killed_on_first_try(marker: Path, start: int, stop: int) -> dict[str, torch.Tensor]:
    """Shard 5..6: on its first try its worker process dies (SIGKILL), as a lost machine would."""
    if start == 5 and not marker.exists():
        marker.write_text("killed once")
        os.kill(os.getpid(), signal.SIGKILL)
    return squares(start, stop)


def always_fails(start: int, stop: int) -> dict[str, torch.Tensor]:
    if start == 5:
        raise ValueError("this shard cannot be computed")
    return squares(start, stop)


def test_a_shard_whose_worker_dies_is_retried_and_the_result_is_unchanged(ray_cluster, tmp_path):
    import functools

    backend = SweepBackend("ray", results_dir=tmp_path / "results", shards_per_worker=2)  # 4 shards: 0..1, 2..4, 5..6, 7..9
    merged = run_sharded(functools.partial(killed_on_first_try, tmp_path / "marker"), 10, key="kill",
                         instance_dim=rows_dim, backend=backend)
    assert (tmp_path / "marker").read_text() == "killed once"
    expected = squares(0, 10)
    assert all(torch.equal(merged[k], expected[k]) for k in expected)


def test_a_shard_that_keeps_failing_stops_the_sweep_with_one_sentence(ray_cluster, tmp_path):
    backend = SweepBackend("ray", results_dir=tmp_path, shards_per_worker=2)
    with pytest.raises(ShardFailed) as error:
        run_sharded(always_fails, 10, key="fails", instance_dim=rows_dim, backend=backend)
    assert str(error.value) == "Shard 2 (instances 5..6) failed: ValueError: this shard cannot be computed"
    left = list((tmp_path / "shards" / "fails").glob("*")) if (tmp_path / "shards" / "fails").exists() else []
    assert all(p.suffix == ".pt" and p.name.startswith("shard_") for p in left)   # whole shards, nothing partial



def test_llc_chains_on_ray_equal_the_local_ones(ray_cluster, monkeypatch):
    """Chapter 5's chains go through the runner too: shards are whole chunks with their own seeds."""
    monkeypatch.setattr("lib.grokking.mlp_llc.MAX_SGLD_ACTIVATIONS", 2 * 3 * 336 * 24)  # 2 instances a chunk
    params = init_instances(list(range(7)), MLPConfig(24, 8, 8))
    left, right, labels = intersection_training_set(PAIR)
    config = SGLDConfig(steps=30, chains=3)

    def estimate():
        return mlp_llc_in_chunks(params, left, right, labels, config, torch.Generator().manual_seed(4), workers=2)

    local = estimate()
    with backend_in_use(SweepBackend("ray", shards_per_worker=2)):
        on_ray = estimate()
    for field in ("per_chain", "init_loss", "loss_trace", "mean"):
        assert torch.equal(getattr(local, field), getattr(on_ray, field)), field


def test_a_local_shard_holds_a_chunk_for_every_local_worker(tmp_path):
    backend = SweepBackend("local", results_dir=tmp_path, shards_per_worker=4)
    shards = []

    def record(start, stop):
        shards.append((start, stop))
        return squares(start, stop)

    # Four chunks of one instance (chapter 4's Z48 sweep): with two workers, two shards of two chunks.
    merged = run_sharded(record, 4, key="z48", instance_dim=rows_dim, backend=backend, cut_points=[0, 1, 2, 3],
                         local_workers=2)
    assert shards == [(0, 2), (2, 4)] and torch.equal(merged["square"], squares(0, 4)["square"])
    shards.clear()
    run_sharded(record, 4, key="one", instance_dim=rows_dim, backend=backend, cut_points=[0, 1, 2, 3])
    assert len(shards) == 4                        # one worker: a shard per chunk, as before
    shards.clear()
    run_sharded(record, 40, key="many", instance_dim=rows_dim, backend=backend, cut_points=list(range(0, 40, 1)),
                local_workers=2)
    assert len(shards) == 4                        # enough chunks: still shards_per_worker shards
