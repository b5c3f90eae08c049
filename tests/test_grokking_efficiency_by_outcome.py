"""The AUC of the lowest rescaled objective, S4 grokkers against the other seeds (lib.grokking.efficiency_by_outcome)."""

import torch

from lib.grokking.efficiency_by_outcome import efficiency_auc


def test_the_efficiency_auc_reads_low_minimum_objectives_of_s4_grokkers():
    from lib.grokking.efficiency_by_outcome import StudyEfficiency
    from lib.grokking.circuit_efficiency import RescalingOptimum

    lowest = torch.tensor([0.1, 0.2, 0.5, 0.6, 0.7], dtype=torch.float64)
    study = StudyEfficiency(torch.arange(5), torch.tensor([0, 0, 1, 2, 2]),
                            RescalingOptimum(torch.ones(5), lowest, lowest), 2e-5)
    auc = efficiency_auc(study, resamples=100, generator=torch.Generator().manual_seed(0))
    assert auc.value == 0.0                       # every S4 grokker lower than every other seed
