"""The training Jacobian: how the final parameters move with the initial ones (chapter 6).

Full-batch training is a deterministic map from initial parameters theta_0 to final ones
theta_T. Its Jacobian d theta_T / d theta_0 says how a small change at initialization is carried
through training: singular values near 1 are directions training leaves alone (the "bulk" of
Belrose and Scherlis), large ones directions it amplifies; the ambiguous-grokking study found
no bulk and values that blow up late in training [@wu2025ambiguous]. Here:

* `gradient_descent` and `adam` build one optimizer step as a pure function of the optimizer
  state (parameters first), from a loss of the flat parameter vector; `adam` is
  torch.optim.Adam's rule with coupled weight decay on the entries `decay_mask` marks, as the
  sweep trainer uses (its moments start at zero, its step count at 1);
* `training_map(step, initial_state, steps)` is theta_0 -> theta_T for a fixed number of steps,
  `training_snapshots` the same at several numbers of steps in one run;
* `training_jacobian` differentiates it exactly in forward mode (`torch.func.jacfwd`: every
  step carries the tangents of all P directions at once, vmapped), a P x P matrix;
* `finite_difference_error` checks a Jacobian against central differences along a few random
  directions.

The model must be small enough to hold P x P numbers and to carry P tangents through every
step; `mlp_loss` makes the loss of one chapter-4 MLP as a function of its flat parameters.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.func import grad, jacfwd

from lib.grokking.mlp import NO_DECAY, PARAMETER_NAMES, single_logits

#: One optimizer step: state -> state, the parameters first.
Step = Callable[[tuple[torch.Tensor, ...]], tuple[torch.Tensor, ...]]


def gradient_descent(loss: Callable[[torch.Tensor], torch.Tensor], lr: float) -> Step:
    """Plain gradient descent, theta <- theta - lr * grad loss(theta); state (theta,)."""
    gradient = grad(loss)

    def step(state: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        (theta,) = state
        return (theta - lr * gradient(theta),)
    return step


def adam(loss: Callable[[torch.Tensor], torch.Tensor], lr: float, betas: tuple[float, float], eps: float,
         weight_decay: float, decay_mask: torch.Tensor) -> Step:
    """torch.optim.Adam with coupled L2 weight decay on the entries where `decay_mask` is 1;
    state (theta, m, v, t), start from `adam_start(theta)`."""
    gradient = grad(loss)
    beta1, beta2 = betas

    def step(state: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        theta, m, v, t = state
        g = gradient(theta) + weight_decay * decay_mask * theta
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
        # sqrt has an infinite derivative at 0 (an entry whose gradient has always been 0):
        # take the root only where v > 0, so that no NaN tangent is ever selected.
        positive = v_hat > 0
        root = torch.where(positive, torch.sqrt(torch.where(positive, v_hat, 1.0)), 0.0)
        return theta - lr * m_hat / (root + eps), m, v, t + 1
    return step


def adam_start(theta: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Adam's initial state for parameters `theta`: zero moments, step count 1."""
    return theta, torch.zeros_like(theta), torch.zeros_like(theta), torch.ones((), dtype=theta.dtype)


def training_map(step: Step, start: Callable[[torch.Tensor], tuple[torch.Tensor, ...]],
                 steps: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """theta_0 -> theta_T: `steps` optimizer steps from the state `start(theta_0)`."""
    def train(theta0: torch.Tensor) -> torch.Tensor:
        state = start(theta0)
        for _ in range(steps):
            state = step(state)
        return state[0]
    return train


def training_snapshots(step: Step, start: Callable[[torch.Tensor], tuple[torch.Tensor, ...]],
                       lengths: list[int]) -> Callable[[torch.Tensor], torch.Tensor]:
    """theta_0 -> (len(lengths), P): the parameters after each number of steps in `lengths`
    (increasing), from one run of max(lengths) steps. Its Jacobian holds the training Jacobian
    of every length for the price of the longest."""
    if list(lengths) != sorted(set(lengths)) or lengths[0] < 0:
        raise ValueError(f"lengths must be increasing, distinct and at least 0; got {list(lengths)}.")

    def train(theta0: torch.Tensor) -> torch.Tensor:
        state, kept = start(theta0), []
        for done in range(lengths[-1] + 1):
            if done in lengths:
                kept.append(state[0])
            if done < lengths[-1]:
                state = step(state)
        return torch.stack(kept)
    return train


def training_jacobian(train: Callable[[torch.Tensor], torch.Tensor], theta0: torch.Tensor) -> torch.Tensor:
    """d train(theta_0) / d theta_0, exact, by forward-mode differentiation: (P, P) for
    `training_map`, (len(lengths), P, P) for `training_snapshots`."""
    return jacfwd(train)(theta0)


def finite_difference_error(train: Callable[[torch.Tensor], torch.Tensor], theta0: torch.Tensor,
                            jacobian: torch.Tensor, directions: int, h: float,
                            generator: torch.Generator) -> float:
    """Largest relative error of jacobian @ u against (train(theta_0 + h u) - train(theta_0 -
    h u)) / 2h over `directions` random unit directions u."""
    worst = 0.0
    for _ in range(directions):
        u = torch.randn(theta0.shape, generator=generator, dtype=theta0.dtype)
        u = u / u.norm()
        with torch.no_grad():
            difference = (train(theta0 + h * u) - train(theta0 - h * u)) / (2 * h)
        exact = jacobian @ u
        worst = max(worst, float((exact - difference).norm() / exact.norm().clamp_min(1e-30)))
    return worst


def flatten(params: dict[str, torch.Tensor]) -> torch.Tensor:
    """One model's parameters (no instances dimension) as one vector, in `PARAMETER_NAMES` order."""
    return torch.cat([params[name].flatten() for name in PARAMETER_NAMES if name in params])


def mlp_loss(shapes: dict[str, tuple[int, ...]], left: torch.Tensor, right: torch.Tensor,
             labels: torch.Tensor) -> tuple[Callable[[torch.Tensor], torch.Tensor], torch.Tensor]:
    """The mean cross-entropy of one MLP as a function of its flat parameters, and the mask of
    the entries that get weight decay (all but the unembedding bias)."""
    names = [name for name in PARAMETER_NAMES if name in shapes]
    sizes = [torch.Size(shapes[name]).numel() for name in names]

    def loss(theta: torch.Tensor) -> torch.Tensor:
        params = {name: part.view(shapes[name]) for name, part in zip(names, theta.split(sizes))}
        return F.cross_entropy(single_logits(params, left, right), labels)

    mask = torch.cat([torch.full((size,), 0.0 if name in NO_DECAY else 1.0)
                      for name, size in zip(names, sizes)])
    return loss, mask


__all__ = ["Step", "adam", "adam_start", "finite_difference_error", "flatten", "gradient_descent",
           "mlp_loss", "training_jacobian", "training_map", "training_snapshots"]
