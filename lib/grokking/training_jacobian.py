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
  directions;
* `composed_jacobian` composes the Jacobian over segments of training, as the authors did
  (`training_jacobian.ipynb`: segments of 100 steps, 4,000 steps in all): an Adam step maps the
  whole optimizer state (theta, m, v) to the next, so the Jacobian of a segment is a 3P x 3P
  matrix, and d theta_T / d theta_0 is the theta block of the product of the segments'
  Jacobians applied to (I, 0, 0) (the moments start at zero whatever theta_0 is). Each segment
  is run from its detached starting state and its Jacobian applied to the product so far by
  forward-mode products (`torch.func.jvp`, vmapped over the P columns), which never forms the
  3P x 3P matrix; `segment_jacobian` forms it (by `torch.func.jacfwd`) for the tests, which
  check both against the Jacobian of the whole run;
* `jacobian_study`: the chapter's run: an MLP trained on an iid part of a group's table, the
  spectrum of d theta_t / d theta_0 at every segment boundary, in float64 and float32, with
  the accuracy on the whole table at each boundary (before and after grokking).

The model must be small enough to hold P x P numbers and to carry P tangents through every
step; `mlp_loss` makes the loss of one chapter-4 MLP as a function of its flat parameters.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch.func import grad, jacfwd, jvp, vmap

from lib.grokking.groups import Group
from lib.grokking.mlp import NO_DECAY, PARAMETER_NAMES, MLPConfig, init_single, single_logits
from lib.grokking.pairs import pairs_in_mask, subsample_pairs

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
        u = torch.randn(theta0.shape, generator=generator, dtype=theta0.dtype).to(theta0.device)
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


# --- Composition over segments -----------------------------------------------------------------


def advance(step: Step, state: tuple[torch.Tensor, ...], steps: int) -> tuple[torch.Tensor, ...]:
    """The optimizer state after `steps` more steps (no derivatives kept)."""
    with torch.no_grad():
        for _ in range(steps):
            state = step(state)
    return state


def push_tangents(step: Step, state: tuple[torch.Tensor, ...], tangents: tuple[torch.Tensor, ...],
                  steps: int) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
    """One segment: the state after `steps` steps from `state` (theta, m, v, t), and the
    segment's Jacobian d(theta, m, v)_end / d(theta, m, v)_start applied to each of the K
    tangents (K, P) of `tangents` = (d theta, d m, d v), by vmapped forward-mode products."""
    theta, m, v, t = state

    def segment(theta_, m_, v_):
        return advance_differentiable(step, (theta_, m_, v_, t), steps)[:3]

    def pushed(d_theta, d_m, d_v):
        return jvp(segment, (theta, m, v), (d_theta, d_m, d_v))[1]

    return advance(step, state, steps), vmap(pushed)(*tangents)


def advance_differentiable(step: Step, state: tuple[torch.Tensor, ...], steps: int) -> tuple[torch.Tensor, ...]:
    """`advance` through which torch.func transforms differentiate."""
    for _ in range(steps):
        state = step(state)
    return state


def composed_jacobian(step: Step, start: Callable[[torch.Tensor], tuple[torch.Tensor, ...]],
                      theta0: torch.Tensor, steps: int, segment: int,
                      at_boundary: Callable[[int, tuple[torch.Tensor, ...], torch.Tensor], None] | None = None,
                      ) -> torch.Tensor:
    """d theta_T / d theta_0 after `steps` steps from `start(theta0)`, composed over segments of
    `segment` steps (the last one shorter when `segment` does not divide `steps`), (P, P).

    `at_boundary(done, state, jacobian)` is called at step 0 and after every segment with the
    Jacobian d theta_done / d theta_0 so far (a caller keeps what it needs of it: spectra,
    accuracy), so that no list of P x P matrices is held."""
    if steps < 0 or segment < 1:
        raise ValueError(f"need steps >= 0 and segment >= 1; got steps={steps}, segment={segment}.")
    state = start(theta0)
    p = theta0.numel()
    eye = torch.eye(p, dtype=theta0.dtype, device=theta0.device)
    tangents = (eye, torch.zeros_like(eye), torch.zeros_like(eye))     # row k: d state / d theta0_k
    if at_boundary is not None:
        at_boundary(0, state, tangents[0].T)
    done = 0
    while done < steps:
        length = min(segment, steps - done)
        state, tangents = push_tangents(step, state, tangents, length)
        done += length
        if at_boundary is not None:
            at_boundary(done, state, tangents[0].T)
    return tangents[0].T


def segment_jacobian(step: Step, state: tuple[torch.Tensor, ...], steps: int) -> torch.Tensor:
    """The (3P, 3P) Jacobian of one segment of `steps` steps with respect to the whole
    optimizer state (theta, m, v) at its start, by `torch.func.jacfwd` (the authors' matrix)."""
    theta, m, v, t = state
    p = theta.numel()

    def segment(flat: torch.Tensor) -> torch.Tensor:
        out = advance_differentiable(step, (flat[:p], flat[p:2 * p], flat[2 * p:], t), steps)
        return torch.cat(out[:3])
    return jacfwd(segment)(torch.cat([theta, m, v]))


def product_of_segment_jacobians(step: Step, start: Callable[[torch.Tensor], tuple[torch.Tensor, ...]],
                                 theta0: torch.Tensor, steps: int, segment: int) -> torch.Tensor:
    """d theta_T / d theta_0 as the theta block of the product of the explicit (3P, 3P)
    segment Jacobians applied to (I, 0, 0): the authors' composition, for small models."""
    state, p, done = start(theta0), theta0.numel(), 0
    product = torch.eye(3 * p, dtype=theta0.dtype, device=theta0.device)
    while done < steps:
        length = min(segment, steps - done)
        product = segment_jacobian(step, state, length) @ product
        state = advance(step, state, length)
        done += length
    return product[:p, :p]


# --- The chapter's study ---------------------------------------------------------------------


def iid_part(group: Group, fraction: float, generator: torch.Generator
             ) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
    """(left, right, label) of a random `fraction` of `group`'s table drawn from `generator`,
    and the same of the whole table: the training and test pairs of the Jacobian studies."""
    left, right = pairs_in_mask(torch.ones(group.order, group.order, dtype=torch.bool))
    part_left, part_right = subsample_pairs(left, right, fraction, generator)
    return (part_left, part_right, group.table[part_left, part_right]), (left, right, group.table[left, right])


# --- The dense study --------------------------------------------------------------------


@dataclass
class JacobianStudy:
    """The training Jacobian of one MLP on an iid part of a group's table, segment by segment.

    Attributes:
        n_parameters: P; embed_dim: d = h; steps, segment: training steps and segment length;
        weight_decay, train_fraction: the run's weight decay and share of the table trained on.
        boundaries: (K,) the step counts at which the Jacobian d theta_t / d theta_0 is read
            (0, segment, 2 segment, ..., steps).
        train_accuracy, test_accuracy: (K,) accuracy on the training pairs and on the whole
            table at each boundary (float64 run).
        singular_values: dtype name -> (K, P) singular values at each boundary, descending.
        dtype_difference: (K,) relative Frobenius distance of the float32 Jacobian from the
            float64 one at each boundary (NaN without both dtypes).
        finite_difference_error: the float64 Jacobian of the first segment against central
            differences (largest relative error over a few random directions).
        seconds_per_step: dtype name -> seconds per training step carrying the P tangents.
    """

    n_parameters: int
    embed_dim: int
    steps: int
    segment: int
    weight_decay: float
    train_fraction: float
    boundaries: torch.Tensor
    train_accuracy: torch.Tensor
    test_accuracy: torch.Tensor
    singular_values: dict[str, torch.Tensor]
    dtype_difference: torch.Tensor
    finite_difference_error: float
    seconds_per_step: dict[str, float] = field(default_factory=dict)

    def grok_step(self, threshold: float = 0.999) -> int:
        """First boundary at which the accuracy on the whole table reaches `threshold` and stays
        there to the end; -1 if never."""
        above = (self.test_accuracy >= threshold).int().flip(0).cummin(dim=0).values.flip(0).bool()
        return int(self.boundaries[above.nonzero()[0, 0]]) if above.any() else -1

    def near_one(self, dtype: str = "float64", tolerance: float = 0.1) -> torch.Tensor:
        """(K,) share of singular values within `tolerance` of 1 (the "bulk") at each boundary."""
        return ((self.singular_values[dtype] - 1).abs() <= tolerance).double().mean(dim=1)


def jacobian_study(group: Group, model: MLPConfig, seed: int, steps: int, segment: int, weight_decay: float,
                   train_fraction: float, lr: float, betas: tuple[float, float], eps: float,
                   dtypes: Sequence[torch.dtype], generator: torch.Generator,
                   device: torch.device | str = "cpu") -> JacobianStudy:
    """Train seed `seed`'s MLP full-batch with Adam (coupled weight decay `weight_decay`) on a
    random `train_fraction` of `group`'s table for `steps` steps, and read the training Jacobian
    composed over segments of `segment` steps at every segment boundary, in each dtype of
    `dtypes` (float64 first when present: it is the reference of the accuracy, the
    finite-difference check and the dtype comparison)."""
    (left, right, labels), (all_left, all_right, all_labels) = iid_part(group, train_fraction, generator)
    left, right, labels, all_left, all_right, all_labels = (
        t.to(device) for t in (left, right, labels, all_left, all_right, all_labels))
    params = init_single(seed, model, device)
    shapes = {name: tuple(value.shape) for name, value in params.items()}
    names = [name for name in PARAMETER_NAMES if name in shapes]
    sizes = [torch.Size(shapes[name]).numel() for name in names]
    loss, mask = mlp_loss(shapes, left, right, labels)

    def accuracy(theta: torch.Tensor, l, r, y) -> float:
        unpacked = {name: part.view(shapes[name]) for name, part in zip(names, theta.split(sizes))}
        with torch.no_grad():
            return float((single_logits(unpacked, l, r).argmax(dim=1) == y).double().mean())

    ordered = sorted(dtypes, key=lambda d: d != torch.float64)
    names_of = [str(d).removeprefix("torch.") for d in ordered]
    steps_of = {name: adam(loss, lr, betas, eps, weight_decay, mask.to(device=device, dtype=dtype))
                for dtype, name in zip(ordered, names_of)}
    states, tangents = {}, {}
    for dtype, name in zip(ordered, names_of):
        theta0 = flatten(params).to(dtype)
        eye = torch.eye(theta0.numel(), dtype=dtype, device=theta0.device)
        states[name], tangents[name] = adam_start(theta0), (eye, torch.zeros_like(eye), torch.zeros_like(eye))
    spectra = {name: [] for name in names_of}
    boundaries, train_acc, test_acc, difference = [], [], [], []
    seconds = {name: 0.0 for name in names_of}
    first_jacobian, done = None, 0
    while True:
        # the Jacobian d theta_done / d theta_0 of each dtype: row k of the tangents is column k
        jacobians = {name: tangents[name][0].T.double() for name in names_of}
        for name in names_of:
            spectra[name].append(torch.linalg.svdvals(jacobians[name]).cpu())
        reference = jacobians[names_of[0]]
        difference.append(float((jacobians[names_of[1]] - reference).norm() / reference.norm())
                          if len(names_of) > 1 else float("nan"))
        boundaries.append(done)
        train_acc.append(accuracy(states[names_of[0]][0], left, right, labels))
        test_acc.append(accuracy(states[names_of[0]][0], all_left, all_right, all_labels))
        if done == min(segment, steps) and done > 0:
            first_jacobian = jacobians[names_of[0]].to(ordered[0])
        if done >= steps:
            break
        length = min(segment, steps - done)
        for name in names_of:
            started = time.perf_counter()
            states[name], tangents[name] = push_tangents(steps_of[name], states[name], tangents[name], length)
            seconds[name] += time.perf_counter() - started
        done += length
    error = float("nan")
    if first_jacobian is not None and ordered[0] == torch.float64:
        theta0 = flatten(params).to(torch.float64)
        error = finite_difference_error(training_map(steps_of[names_of[0]], adam_start, min(segment, steps)),
                                        theta0, first_jacobian, 3, 1e-6, generator)
    seconds = {name: value / max(steps, 1) for name, value in seconds.items()}
    difference = torch.tensor(difference, dtype=torch.float64)
    return JacobianStudy(
        n_parameters=int(flatten(params).numel()), embed_dim=model.embed_dim, steps=steps, segment=segment,
        weight_decay=weight_decay, train_fraction=train_fraction, boundaries=torch.tensor(boundaries),
        train_accuracy=torch.tensor(train_acc, dtype=torch.float64),
        test_accuracy=torch.tensor(test_acc, dtype=torch.float64),
        singular_values={name: torch.stack(values) for name, values in spectra.items()},
        dtype_difference=difference, finite_difference_error=error, seconds_per_step=seconds)


__all__ = ["JacobianStudy", "Step", "advance", "composed_jacobian", "jacobian_study", "product_of_segment_jacobians",
           "push_tangents", "segment_jacobian", "adam", "adam_start", "finite_difference_error", "flatten", "gradient_descent",
           "iid_part", "mlp_loss", "training_jacobian", "training_map", "training_snapshots"]
