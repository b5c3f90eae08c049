"""Chapter 2's main run scored on its evaluation batch every few steps
(lib.paths.evaluation_curves): the same model as plain training, one loss and one mean
prediction per label at every scored step, and the same curves whether the kept weights are
scored here or in a worker process."""

import torch

from lib.book.workers import can_fork
from lib.paths.evaluation_curves import (
    score_by_label, score_weights, start_scoring, train_keeping_weights, train_with_curves,
)
from lib.paths.training import PathTrainingConfig, start_training, train

RECIPE = PathTrainingConfig(n_layers=1, n_min=3, n_max=6, batch_size=16, lr_schedule=((7, 1e-3), (5, 5e-4)),
                            log_every=4, snapshot_every=6, eval_size=64)


def test_training_with_curves_gives_the_model_plain_training_gives():
    plain = train(start_training(RECIPE), progress=False)
    scored = start_training(RECIPE)
    curves = train_with_curves(scored, 5, progress=False)
    for a, b in zip(plain.model.state_dict().values(), scored.model.state_dict().values()):
        assert torch.equal(a, b)
    assert plain.log.loss == scored.log.loss and plain.snapshot_steps == scored.snapshot_steps
    assert curves.steps == (0, 5, 10, 12)
    assert curves.loss.shape == curves.mean_prediction.shape == (4, len(curves.labels))
    assert sum(curves.counts) == RECIPE.eval_size
    loss, mean, labels, counts = score_by_label(scored)
    assert labels == curves.labels and torch.equal(loss, curves.loss[-1]) and torch.equal(mean, curves.mean_prediction[-1])
    label = labels[0]
    chosen = scored.eval_labels.long() == label
    assert curves.to_dict()["counts"][0] == int(chosen.sum())


def test_kept_weights_scored_in_a_worker_give_the_curves_scored_here():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)   # a worker scores on one thread; so does this process here
    try:
        run = start_training(RECIPE)
        kept = train_keeping_weights(run, 5, progress=False)
        final = {name: value.clone() for name, value in run.model.state_dict().items()}
        here = score_weights(run, kept)
        pending = start_scoring(run, kept)
        there = pending.curves()
    finally:
        torch.set_num_threads(threads)
    assert pending.in_background == can_fork(2)
    assert [step for step, _ in kept] == list(here.steps) == list(there.steps) == [0, 5, 10, 12]
    assert not torch.equal(kept[0][1]["readout.weight"], kept[-1][1]["readout.weight"])   # copies, not views
    assert torch.equal(here.loss, there.loss) and torch.equal(here.mean_prediction, there.mean_prediction)
    assert here.labels == there.labels and here.counts == there.counts
    for name, value in run.model.state_dict().items():   # scoring leaves the run's model as it was
        assert torch.equal(value, final[name])
    assert torch.equal(score_by_label(run)[0], here.loss[-1])
