"""The LLC of one chapter-4 MLP by devinterp, with our SGLD settings (chapter 5's cross-check).

devinterp (`estimate_learning_coeff_with_summary`, release 1.3.2, the last one that has it) is
the field's SGLD estimator of the local learning coefficient. Its tests
(tests/test_grokking_llc_devinterp.py) and the speed benchmark (benchmarks/bench_llc.py) run it
on the same model, data and settings as `lib.grokking.mlp_llc.mlp_llc`, one model at a time
as devinterp does. How the settings map (`SGLDConfig` field -> devinterp 1.3.2 argument):

* step_size                      -> optimizer_kwargs["lr"] (sampling_method=SGLD, the default)
* n_beta                         -> optimizer_kwargs["nbeta"]
* localization                   -> optimizer_kwargs["localization"]
* chains                         -> num_chains
* steps, burn_in (a fraction)    -> num_burnin_steps = config.burn_in_steps (floor(burn_in *
                                    steps)), num_draws = steps - burn_in_steps, num_steps_bw_draws = 1
* batch_size = None (full batch) -> a DataLoader of all training pairs in one batch, in order
                                    (the dataset's __getitems__ indexes the batch in one go
                                    instead of collating item by item, for speed only)
* L(w*) = full-batch loss at w*  -> init_loss, passed explicitly (else devinterp averages the
                                    loss over its first num_chains batches)
* no weight decay, noise_level 1, no bounding box: devinterp's defaults. devinterp's seed=s
  seeds torch's global generator with s + chain before each chain; `devinterp_mlp_llc` restores
  the global generator afterwards.

Both estimators record the loss of each step at w_t before its update and average the draws
after the burn-in: llc_c = n_beta * (mean draw loss of chain c - L(w*)); devinterp's per-chain
values are its `llc-chain/{c}`.

devinterp is imported when the function runs, so the rest of the library does not need it.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F

from lib.grokking.llc import SGLDConfig
from lib.grokking.mlp import single_logits


class OneMLP(torch.nn.Module):
    """One chapter-4 MLP as an nn.Module, its parameters named as in `lib.grokking.mlp`."""

    def __init__(self, params: dict[str, torch.Tensor]):
        super().__init__()
        self.p = torch.nn.ParameterDict({k: torch.nn.Parameter(v.detach().clone())
                                         for k, v in params.items()})

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


def _as_is(batch):
    """The loader's collate_fn: `__getitems__` already returns the batch."""
    return batch


def _evaluate(model: torch.nn.Module, data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """devinterp's evaluate: the mean cross-entropy of the batch."""
    pairs, targets = data
    return F.cross_entropy(model(pairs), targets)


def full_batch_loader(train_left: torch.Tensor, train_right: torch.Tensor,
                      train_labels: torch.Tensor) -> torch.utils.data.DataLoader:
    """All training pairs as one batch, in order, as devinterp's loader."""
    dataset = TrainingPairs(torch.stack([train_left, train_right], dim=1), train_labels)
    return torch.utils.data.DataLoader(dataset, batch_size=len(dataset), shuffle=False, collate_fn=_as_is)


def full_batch_loss(params: dict[str, torch.Tensor], train_left: torch.Tensor, train_right: torch.Tensor,
                    train_labels: torch.Tensor) -> float:
    """The mean cross-entropy of one MLP on all its training pairs, as devinterp evaluates it."""
    with torch.no_grad():
        return float(_evaluate(OneMLP(params), (torch.stack([train_left, train_right], dim=1), train_labels)))


def devinterp_mlp_llc(params: dict[str, torch.Tensor], train_left: torch.Tensor, train_right: torch.Tensor,
                      train_labels: torch.Tensor, config: SGLDConfig, seed: int) -> torch.Tensor:
    """devinterp 1.3.2's per-chain LLC estimates, (chains,) float64, of one MLP (no instances
    dimension) with the SGLD settings of `config` (full batch only) and L(w*) the full-batch loss."""
    from devinterp.optim.sgld import SGLD
    from devinterp.slt.sampler import estimate_learning_coeff_with_summary

    if config.batch_size is not None:
        raise ValueError("devinterp_mlp_llc runs full-batch chains only (batch_size=None).")
    burn = config.burn_in_steps
    init_loss = full_batch_loss(params, train_left, train_right, train_labels)
    with torch.random.fork_rng(), warnings.catch_warnings():
        warnings.simplefilter("ignore")          # SGLD's deprecation, draws > batches, nbeta given
        result = estimate_learning_coeff_with_summary(
            OneMLP(params), full_batch_loader(train_left, train_right, train_labels),
            evaluate=_evaluate, sampling_method=SGLD,
            optimizer_kwargs=dict(lr=config.step_size, nbeta=config.n_beta, localization=config.localization),
            num_chains=config.chains, num_draws=config.steps - burn, num_burnin_steps=burn,
            num_steps_bw_draws=1, init_loss=init_loss, seed=seed, device="cpu", verbose=False,
        )
    return torch.tensor([result[f"llc-chain/{c}"] for c in range(config.chains)], dtype=torch.float64)


__all__ = ["OneMLP", "TrainingPairs", "devinterp_mlp_llc", "full_batch_loader", "full_batch_loss"]
