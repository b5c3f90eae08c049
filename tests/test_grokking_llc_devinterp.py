"""The batched LLC estimator against devinterp's, on a small trained chapter-4 MLP.

`lib.grokking.mlp_llc.mlp_llc` and devinterp 1.3.2's `estimate_learning_coeff_with_summary`
(run by `lib.grokking.devinterp_llc.devinterp_mlp_llc`, whose docstring maps the settings) run
the same SGLD chains on the same model and data, so their estimates have the same expectation;
they differ only in their random numbers. The test checks that they agree within 3 combined
standard errors (sqrt(sem_ours^2 + sem_devinterp^2), each the standard deviation of the
per-chain estimates over sqrt(chains)).

The model: the S4 vs A4xZ2 intersection of chapter 4 (N = 24, 336 training pairs), d = h = 16
(1,664 parameters), trained 500 full-batch epochs by `train_single` (train loss about 2e-3), so
that w* is near a minimum and the chains sample around it. Settings: the study's step 8e-4,
n_beta 1e3, localization 1; 16 chains of 500 steps (300 burn-in, 200 draws).

Cost and precision: the LLC comes out at about 135, its per-chain spread about 10, so each
standard error is about 2.5 and the combined one about 3.6: the test would notice a systematic
gap of about 11 (8%). devinterp runs its chains one model at a time (about 2.7 ms a step here:
8,000 steps), ours all 16 in one batch; the test takes about 35 s on one thread of a busy
2-core machine (training 1-5 s, ours under 2 s, devinterp 20-25 s, the rest imports).
"""

import math

import pytest
import torch

pytest.importorskip("devinterp")

from lib.grokking.devinterp_llc import devinterp_mlp_llc, full_batch_loader, full_batch_loss  # noqa: E402
from lib.grokking.llc import SGLDConfig  # noqa: E402
from lib.grokking.mlp import MLPConfig  # noqa: E402
from lib.grokking.mlp_llc import mlp_llc  # noqa: E402
from lib.grokking.pairs import make_pair  # noqa: E402
from lib.grokking.sweeps import intersection_training_set  # noqa: E402
from lib.grokking.reference_training import train_single
from lib.grokking.training import SweepConfig  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")

CHAINS = 16
CONFIG = SGLDConfig(step_size=8e-4, n_beta=1e3, localization=1.0, steps=500, chains=CHAINS, burn_in=0.6)


def test_mlp_llc_agrees_with_devinterp():
    pair = make_pair("S4_vs_A4xZ2")
    left, right, labels = intersection_training_set(pair)
    w_star, _, losses = train_single(0, MLPConfig(pair.n_elements, 16, 16), left, right, labels,
                                     SweepConfig(epochs=500))
    assert losses[-1] < 0.01, losses[-1]

    ours = mlp_llc({k: v[None] for k, v in w_star.items()}, left, right, labels, CONFIG,
                   torch.Generator().manual_seed(0))
    # devinterp sees every pair in one batch, in order, and the same loss at w*.
    batches = list(full_batch_loader(left, right, labels))
    assert len(batches) == 1 and torch.equal(batches[0][1], labels)
    assert math.isclose(full_batch_loss(w_star, left, right, labels), float(ours.init_loss[0]), rel_tol=1e-4)
    assert (CONFIG.burn_in_steps, CONFIG.steps - CONFIG.burn_in_steps) == (300, 200)

    state = torch.random.get_rng_state()
    theirs = devinterp_mlp_llc(w_star, left, right, labels, CONFIG, seed=0)
    assert torch.equal(torch.random.get_rng_state(), state)           # the global generator is restored
    theirs_mean, theirs_sem = float(theirs.mean()), float(theirs.std()) / math.sqrt(CHAINS)
    ours_mean, ours_sem = float(ours.mean[0]), float(ours.sem[0])

    combined = math.hypot(ours_sem, theirs_sem)
    summary = (f"ours {ours_mean:.2f} +- {ours_sem:.2f}, devinterp {theirs_mean:.2f} +- {theirs_sem:.2f} "
               f"(sem), difference {(ours_mean - theirs_mean) / combined:+.2f} combined se")
    print(summary)
    assert ours_mean > 0 and theirs_mean > 0, summary          # w* is near a minimum
    assert abs(ours_mean - theirs_mean) < 3 * combined, summary
    # The spreads over chains estimate the same quantity too (a loose check: within a factor 2).
    assert 0.5 < float(ours.std[0]) / float(theirs.std()) < 2.0, summary
