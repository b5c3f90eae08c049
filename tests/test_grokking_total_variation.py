"""The total-variation study retraces its seeds and measures the window at the end of training (lib.grokking.total_variation)."""

import pytest
import torch

from lib.grokking.mlp import MLPConfig
from lib.grokking.pairs import make_pair
from lib.grokking.sweeps import run_pair_sweep
from lib.grokking.total_variation import total_variation_study
from lib.grokking.training import SweepConfig

pytestmark = pytest.mark.usefixtures("one_thread")


def test_total_variation_study_retraces_the_seeds_and_measures_the_window():
    schedule = SweepConfig(epochs=20, log_every=5, checkpoint_epochs=(0, 20))
    result = run_pair_sweep(make_pair("S4_vs_A4xZ2"), [0, 1, 2], MLPConfig(24, 8, 8), schedule, progress=False)
    index = torch.tensor([1, 2])
    study = total_variation_study(result, index, epochs=20, window=10, every=5, grok_threshold=0.999,
                                  authors_every=2, authors_intervals=4)
    assert study.epochs.tolist() == [10, 15, 20] and study.same_outcome
    # The authors' definition: snapshots every 2 epochs, the last 4 intervals, all 576 pairs.
    assert study.authors_epochs.tolist() == [12, 14, 16, 18, 20]
    assert study.authors_flips.shape == (2,) and torch.all((study.authors_flips >= 0) & (study.authors_flips <= 1))
    for values in (study.test_tv, study.test_flips, study.train_tv, study.train_flips, study.train_accuracy):
        assert values.shape == (2,) and torch.all(values >= 0)
    assert torch.all(study.test_tv > 0)                      # 10 epochs of training move the logits
    torch.testing.assert_close(study.train_accuracy, result.metrics["train_acc"][2, index])   # epoch 10
    # One step over the whole window: at most the sum of the two steps (triangle inequality).
    coarse = total_variation_study(result, index, epochs=20, window=10, every=10, grok_threshold=0.999,
                                   authors_every=2, authors_intervals=4)
    assert coarse.epochs.tolist() == [10, 20] and torch.all(coarse.test_tv <= study.test_tv + 1e-9)
    # Trained on past the sweep's end, the same trajectories go on: the window moves to the end.
    longer = total_variation_study(result, index, epochs=30, window=10, every=5, grok_threshold=0.999,
                                   authors_every=2, authors_intervals=4)
    assert longer.epochs.tolist() == [20, 25, 30] and longer.same_outcome
    with pytest.raises(ValueError, match="every <= window"):
        total_variation_study(result, index, epochs=20, window=30, every=5, grok_threshold=0.999)
    with pytest.raises(ValueError, match="at least the sweep's 20"):
        total_variation_study(result, index, epochs=10, window=5, every=5, grok_threshold=0.999)
    with pytest.raises(ValueError, match="do not fit"):                  # the authors' 100 x 5 epochs
        total_variation_study(result, index, epochs=20, window=10, every=5, grok_threshold=0.999)
