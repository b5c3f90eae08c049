"""The batched LLC estimator against devinterp's, on a small trained chapter-4 MLP.

`lib.grokking.llc.mlp_llc` and devinterp 1.3.2's `estimate_learning_coeff_with_summary` (the
last release that has it) run the same SGLD chains on the same model and data, so their
estimates have the same expectation; they differ only in their random numbers. The test checks
that they agree within 3 combined standard errors (sqrt(sem_ours^2 + sem_devinterp^2), each the
standard deviation of the per-chain estimates over sqrt(chains)).

The model: the S4 vs A4xZ2 intersection of chapter 4 (N = 24, 336 training pairs), d = h = 16
(1,664 parameters), trained 500 full-batch epochs by `train_single` (train loss about 2e-3), so
that w* is near a minimum and the chains sample around it.

How the settings map (ours: `SGLDConfig` field -> devinterp 1.3.2 argument):

* step_size = 8e-4               -> optimizer_kwargs["lr"] (sampling_method=SGLD, the default)
* n_beta = 1e3                   -> optimizer_kwargs["nbeta"] (also the LLCEstimator's nbeta)
* localization = 1               -> optimizer_kwargs["localization"]
* chains                         -> num_chains
* steps, burn_in (a fraction)    -> num_burnin_steps = config.burn_in_steps (floor(burn_in *
                                    steps)), num_draws = steps - burn_in_steps,
                                    num_steps_bw_draws = 1 (here 500 steps at 0.6: 300 + 200)
* batch_size = None (full batch) -> DataLoader(dataset of the 336 pairs, batch_size=336,
                                    shuffle=False): one batch of every pair at every step (the
                                    dataset's __getitems__ indexes the batch in one go instead of
                                    collating 336 items, for speed only)
* L(w*) = full-batch loss at w*  -> init_loss = our full-batch L(w*), passed explicitly (else
                                    devinterp averages the loss over its first num_chains batches)
* (no weight decay, noise_level 1, no bounding box: devinterp's defaults; devinterp's seed=s
  seeds torch's global generator with s + chain before each chain, ours one torch.Generator)

Both record the loss of each step at w_t before its update and average the draws after the
burn-in: llc_c = n_beta * (mean draw loss of chain c - L(w*)). devinterp's per-chain values are
`llc-chain/{c}`; its `llc/std` has ddof 1 as ours.

Cost and precision: with 16 chains of 500 steps (300 burn-in, 200 draws) the LLC comes out at
about 135, its per-chain spread about 10, so each standard error is about 2.5 and the combined
one about 3.6: the test would notice a systematic gap of about 11 (8%). devinterp runs its
chains one model at a time (about 2.7 ms a step here: 8,000 steps), ours all 16 in one batch;
the test takes about 35 s on one thread of a busy 2-core machine (training 1-5 s, ours 2 s,
devinterp 20-25 s, the rest imports).
"""

import math
import warnings

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("devinterp")

from devinterp.optim.sgld import SGLD  # noqa: E402
from devinterp.slt.sampler import estimate_learning_coeff_with_summary  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from lib.grokking.llc import SGLDConfig, mlp_llc  # noqa: E402
from lib.grokking.mlp import MLPConfig, single_logits  # noqa: E402
from lib.grokking.pairs import make_pair  # noqa: E402
from lib.grokking.sweeps import intersection_training_set  # noqa: E402
from lib.grokking.training import SweepConfig, train_single  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")

CHAINS = 16
CONFIG = SGLDConfig(step_size=8e-4, n_beta=1e3, localization=1.0, steps=500, chains=CHAINS, burn_in=0.6)


class OneMLP(torch.nn.Module):
    """One chapter-4 MLP as an nn.Module, its parameters named as in `lib.grokking.mlp`."""

    def __init__(self, params: dict[str, torch.Tensor]):
        super().__init__()
        self.p = torch.nn.ParameterDict({k: torch.nn.Parameter(v.clone()) for k, v in params.items()})

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        return single_logits(dict(self.p), pairs[:, 0], pairs[:, 1])


class TrainingPairs(torch.utils.data.Dataset):
    """The training pairs as a map-style dataset: item t is ((left[t], right[t]), label[t])."""

    def __init__(self, pairs: torch.Tensor, labels: torch.Tensor):
        self.pairs, self.labels = pairs, labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.pairs[index], self.labels[index]

    def __getitems__(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """A whole batch at once (the DataLoader's fetcher calls this when it exists)."""
        index = torch.tensor(indices)
        return self.pairs[index], self.labels[index]


def as_is(batch):
    """The loader's collate_fn: `__getitems__` already returns the batch."""
    return batch


def evaluate(model: torch.nn.Module, data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """devinterp's evaluate: the mean cross-entropy of the batch."""
    pairs, targets = data
    return F.cross_entropy(model(pairs), targets)


def test_mlp_llc_agrees_with_devinterp():
    pair = make_pair("S4_vs_A4xZ2")
    left, right, labels = intersection_training_set(pair)
    w_star, _, losses = train_single(0, MLPConfig(pair.n_elements, 16, 16), left, right, labels,
                                     SweepConfig(epochs=500))
    assert losses[-1] < 0.01, losses[-1]

    ours = mlp_llc({k: v[None] for k, v in w_star.items()}, left, right, labels, CONFIG,
                   torch.Generator().manual_seed(0))
    init_loss = float(ours.init_loss[0])

    model = OneMLP(w_star)
    dataset = TrainingPairs(torch.stack([left, right], dim=1), labels)
    loader = DataLoader(dataset, batch_size=len(dataset), shuffle=False, collate_fn=as_is)
    batches = list(loader)
    assert len(batches) == 1 and torch.equal(batches[0][1], labels)       # full batch, in order
    with torch.no_grad():
        assert math.isclose(float(evaluate(model, batches[0])), init_loss, rel_tol=1e-4)
    burn = CONFIG.burn_in_steps
    assert (burn, CONFIG.steps - burn) == (300, 200)
    # devinterp reseeds torch's global generator before each chain: fork_rng restores it after.
    with torch.random.fork_rng(), warnings.catch_warnings():
        warnings.simplefilter("ignore")          # SGLD's deprecation, draws > batches, nbeta given
        result = estimate_learning_coeff_with_summary(
            model, loader, evaluate=evaluate, sampling_method=SGLD,
            optimizer_kwargs=dict(lr=CONFIG.step_size, nbeta=CONFIG.n_beta,
                                  localization=CONFIG.localization),
            num_chains=CONFIG.chains, num_draws=CONFIG.steps - burn, num_burnin_steps=burn,
            num_steps_bw_draws=1, init_loss=init_loss, seed=0, device="cpu", verbose=False,
        )
    theirs = torch.tensor([result[f"llc-chain/{c}"] for c in range(CHAINS)], dtype=torch.float64)
    theirs_mean, theirs_sem = float(theirs.mean()), float(theirs.std()) / math.sqrt(CHAINS)
    assert math.isclose(result["llc/mean"], theirs_mean, rel_tol=1e-5)
    ours_mean, ours_sem = float(ours.mean[0]), float(ours.sem[0])

    combined = math.hypot(ours_sem, theirs_sem)
    summary = (f"ours {ours_mean:.2f} +- {ours_sem:.2f}, devinterp {theirs_mean:.2f} +- {theirs_sem:.2f} "
               f"(sem), difference {(ours_mean - theirs_mean) / combined:+.2f} combined se")
    print(summary)
    assert ours_mean > 0 and theirs_mean > 0, summary          # w* is near a minimum
    assert abs(ours_mean - theirs_mean) < 3 * combined, summary
    # The spreads over chains estimate the same quantity too (a loose check: within a factor 2).
    assert 0.5 < float(ours.std[0]) / float(theirs.std()) < 2.0, summary
