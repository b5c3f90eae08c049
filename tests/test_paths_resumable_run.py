"""lib.paths.resumable_run: a run killed mid-way (a process that exits without clean-up) and
continued from its saved state ends with the numbers of a run that never stopped."""

import json
import subprocess
import sys
import textwrap

import pytest
import torch

from lib.paths.resumable_run import load_state, progress_path, read_progress, train_resumably
from lib.paths.training import PathTrainingConfig

CONFIG = "PathTrainingConfig(n_layers=1, n_max=5, batch_size=16, lr_schedule=((12, 1e-3), (8, 1e-4)), " \
         "log_every=2, snapshot_every=5, eval_size=32, seed=3)"

#: One run in a fresh process: argv = state file, the scoring step at which the process kills
#: itself (-1: never), and where its end state goes.
RUN = textwrap.dedent(f"""
    import os, sys, torch
    from lib.paths.training import PathTrainingConfig
    from lib.paths.resumable_run import train_resumably
    torch.set_num_threads(1)
    stop_at = int(sys.argv[2])

    def after_scoring(step):
        if step == stop_at:
            os._exit(3)              # killed: nothing is saved after the last save
    run, curves = train_resumably({CONFIG}, 4, sys.argv[1], save_every_s=0.0, progress=False,
                                  after_scoring=after_scoring)
    torch.save({{"weights": run.model.state_dict(), "adam": run.optimizer.state_dict()["state"],
                "log": run.log.to_dict(), "steps": curves.steps, "loss": curves.loss,
                "mean": curves.mean_prediction, "snapshots": torch.stack(run.snapshot_predictions)}},
               sys.argv[3])
""")


def run_process(state, stop_at, out) -> int:
    return subprocess.run([sys.executable, "-c", RUN, str(state), str(stop_at), str(out)]).returncode


def test_a_killed_run_continues_as_if_it_never_stopped(tmp_path):
    assert run_process(tmp_path / "whole.pt", -1, tmp_path / "whole_end.pt") == 0
    assert run_process(tmp_path / "broken.pt", 12, tmp_path / "unused.pt") == 3
    # Saved after each scoring, killed after scoring step 12 and before saving it: the state is at 8.
    assert read_progress(tmp_path / "broken.pt")["step"] == 8
    assert not (tmp_path / "unused.pt").exists()
    assert run_process(tmp_path / "broken.pt", -1, tmp_path / "broken_end.pt") == 0
    whole = torch.load(tmp_path / "whole_end.pt", weights_only=True)
    broken = torch.load(tmp_path / "broken_end.pt", weights_only=True)
    assert whole["steps"] == broken["steps"] == (0, 4, 8, 12, 16, 20)
    for key, values in whole["log"].items():      # NaN marks a window without a length: compared as equal
        torch.testing.assert_close(torch.tensor(values, dtype=torch.float64),
                                   torch.tensor(broken["log"][key], dtype=torch.float64),
                                   rtol=0, atol=0, equal_nan=True, msg=key)
    for key in ("loss", "mean", "snapshots"):
        assert torch.equal(whole[key], broken[key]), key
    for name, value in whole["weights"].items():
        assert torch.equal(value, broken["weights"][name]), name
    for index, moments in whole["adam"].items():
        for name, value in moments.items():
            assert torch.equal(value, broken["adam"][index][name]), (index, name)
    progress = json.loads(progress_path(tmp_path / "broken.pt").read_text())
    assert progress["step"] == progress["total_steps"] == 20


def test_a_state_of_another_configuration_stops_with_one_sentence(tmp_path):
    config = eval(CONFIG)
    train_resumably(config, 4, tmp_path / "state.pt", save_every_s=1e9, progress=False)
    other = PathTrainingConfig(**{**config.to_dict(), "lr_schedule": ((12, 1e-3),), "sampler_options": ()})
    with pytest.raises(ValueError, match="another configuration"):
        load_state(tmp_path / "state.pt", other)


def test_no_state_no_progress(tmp_path):
    assert read_progress(tmp_path / "absent.pt") is None
