"""Chapter 2's main run scored on its evaluation batch every few steps
(lib.paths.evaluation_curves): the same model as plain training, one loss and one mean
prediction per label at every scored step."""

import torch

from lib.paths.evaluation_curves import score_by_label, train_with_curves
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
