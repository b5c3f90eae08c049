"""Pre-training and fine-tuning again from another seed (lib.paths.seed_replicates)."""

import dataclasses

from lib.paths.finetuning import fallback_base_config, finetuning_config
from lib.paths.generalization_tests import TESTS, scale_for
from lib.paths.recipe_models import recipe_path
from lib.paths.seed_replicates import replicate_seed


def test_a_replicate_trains_fine_tunes_and_scores_every_test_deterministically(one_thread, tmp_path):
    base = dataclasses.replace(fallback_base_config(seed=0, smoke=True), lr_schedule=((4, 1e-3),), eval_size=64,
                               snapshot_every=4, log_every=2)
    scale = scale_for(base, 5)

    def tuning(seed):
        return finetuning_config(base, small_n_max=5, steps=2, batch_size=16, learning_rate=1e-4, weight_decay=0.0,
                                 eval_size=32, seed=seed)

    def analysis(base_model, tuned_model):
        return {"same_model": base_model is tuned_model, "parameters": sum(p.numel() for p in tuned_model.parameters())}

    # Two replicates in two empty folders train twice: the same numbers.
    first = replicate_seed(base, tuning, 3, scale, test_graphs=32, test_seed=0, results_dir=tmp_path / "a",
                           analysis=analysis)
    again = replicate_seed(base, tuning, 3, scale, test_graphs=32, test_seed=0, results_dir=tmp_path / "b")
    assert list(first.test_mse) == list(TESTS) and first.source == "trained" and first.seed == 3
    assert first.test_mse == again.test_mse and first.finetune_loss_after == again.finetune_loss_after
    assert set(first.record()) >= {"seed", "test_mse", "finetune_loss_before", "finetune_loss_after", "test_by_kind"}
    # The analysis sees the seed's base model and its fine-tuned copy; without one it is empty.
    assert first.analysis["same_model"] is False and first.analysis["parameters"] > 0 and again.analysis == {}
    assert list(first.test_by_kind) == list(TESTS) and first.test_by_kind == again.test_by_kind
    assert all(sum(k["count"] for k in kinds.values()) == 32 for kinds in first.test_by_kind.values())
    # The seed's base model is saved where chapter 7 looks for it (lib.paths.recipe_models), and
    # a third replicate in the same folder loads it: the same numbers.
    assert recipe_path(tmp_path / "a", dataclasses.replace(base, seed=3)).exists()
    loaded = replicate_seed(base, tuning, 3, scale, test_graphs=32, test_seed=0, results_dir=tmp_path / "a")
    assert loaded.test_mse == first.test_mse and loaded.finetune_loss_after == first.finetune_loss_after
