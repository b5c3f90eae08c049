"""Parameter validation (one clear sentence naming the parameter) and atomic result writing."""

import json
from pathlib import Path

import pytest
import torch

from lib.book import params
from lib.book.params import read_parameters_cell, validate_parameters
from lib.book.results import read_results, save_checkpoint, write_results
from lib.chapters.ch1 import Chapter1Parameters

#: Chapter 1's own defaults (read from its parameters cell, so a new parameter needs no edit
#: here), made small.
GOOD = {**read_parameters_cell(Path(__file__).parents[1] / "notebooks" / "01_handcrafted_bfs.py"),
        **dict(smoke=False, seed=0, device="auto", results_dir="r", n_vertices=8, exactness_sizes=[4, 8],
               graphs_per_sampler=10, sharpness_graphs=10, perturbation_modes=["replace", "gaussian"],
               perturbation_scales=[0.1, 1.0], recovery_steps=5, recovery_batch_size=4,
               recovery_learning_rate=1e-5, recovery_optimizer="sgd", n_eval_graphs=8, recovered_below=0.01,
               cpu_threads=1, study_draws=2, study_steps=3)}


def test_good_parameters_pass_and_smoke_shrinks_the_run():
    config = validate_parameters(Chapter1Parameters, GOOD)
    assert config.n_vertices == 8 and config.recovery.steps == 5 and config.device.type in ("cpu", "cuda")
    assert config.exactness_sizes == (4, 8) and config.recovery.n_train_graphs == 256
    smoke = validate_parameters(Chapter1Parameters, {**GOOD, "smoke": True})
    assert smoke.recovery.steps == 4 and smoke.graphs_per_sampler == 40 and smoke.n_vertices == 5
    assert smoke.recovery.n_train_graphs == 64 and smoke.recovered_below == 0.01


@pytest.mark.parametrize("name, value", [
    ("smoke", "yes"), ("seed", -1), ("seed", 1.5), ("device", "tpu"), ("results_dir", ""),
    ("n_vertices", 1), ("n_vertices", 100), ("n_vertices", "8"), ("exactness_sizes", []),
    ("exactness_sizes", [4, 99]), ("graphs_per_sampler", 0), ("perturbation_modes", ["shake"]),
    ("perturbation_scales", [0.0]), ("perturbation_scales", [float("nan")]), ("recovery_steps", 0),
    ("recovery_learning_rate", 0.0), ("recovery_optimizer", "lbfgs"), ("recovered_below", -1.0), ("cpu_threads", 0),
])
def test_each_bad_parameter_is_named_in_one_sentence(name, value):
    with pytest.raises(params.ParameterError) as error:
        validate_parameters(Chapter1Parameters, {**GOOD, name: value})
    message = str(error.value)
    assert f"`{name}`" in message and message.endswith(".") and "\n" not in message


def test_cuda_requested_without_cuda_is_refused():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(params.ParameterError, match="`device`"):
        params.resolve_device("cuda")


def test_results_are_written_atomically_and_read_back(tmp_path):
    path = write_results(tmp_path / "out", "chapter", {"loss": torch.tensor(0.5), "values": (1, 2)})
    assert read_results(tmp_path / "out", "chapter") == {"loss": 0.5, "values": [1, 2]}
    assert json.loads(path.read_text())["loss"] == 0.5
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["chapter.json"]


def test_a_failed_write_leaves_nothing_behind(tmp_path):
    with pytest.raises(TypeError):
        write_results(tmp_path, "chapter", {"bad": object()})
    with pytest.raises(Exception):
        save_checkpoint(tmp_path / "model.pt", {"bad": lambda: None})  # lambdas cannot be pickled
    assert list(tmp_path.iterdir()) == []
