"""The training Jacobian of a model too large to hold, read through products (chapter 6).

At the authors' scale (d = h = 32 with the bias, P = 4,376) the dense Jacobian of
`lib.grokking.training_jacobian` would carry P tangents through every step: hours on a CPU per
thousand steps. The study's two claims do not need the whole matrix [@wu2025ambiguous]: "no
bulk" asks how many singular values sit near 1, "blows up late" asks how the largest grows. Both
are read here from K << P products, composed over segments of training like the dense one:

* forward: K Gaussian directions Omega (K, P) are pushed through training
  (`training_jacobian.push_tangents`), giving Y_t = J_t Omega^T at every segment boundary t;
  ||Y_t||_F^2 / K is Hutchinson's unbiased estimate of ||J_t||_F^2, and the largest singular
  value of J_t Q_0 (Q_0 = the orthonormal basis of Omega^T) is a guaranteed lower bound on the
  largest singular value of J_t (Cauchy interlacing);
* backward (`pull_cotangents`): at a few boundaries, Q = an orthonormal basis of Y_t's range is
  pulled back through the segments by vector-Jacobian products, giving B = Q^T J_t (K, P). Its
  singular values are the randomized-SVD estimates of J_t's top K (each a lower bound of the
  true one; exact when K = P) [@halko2011finding];
* the bulk bound: by Ky Fan, sum_{i > K} sigma_i^2 <= ||J_t||_F^2 - ||B||_F^2 (the "tail
  energy"), so at most K + tail / 0.9^2 singular values reach 0.9: the share of the bulk is at
  most that over P (with ||J_t||_F^2 estimated, so an estimate of a bound);
* `finite_amplification` trains the model from theta_0 moved a finite distance along the most
  stretched direction, to tell a real amplification from an artifact of the products (the
  authors' own caveat: "assuming [the blow-up] isn't an artifact of numerical instability");
* `screen_seeds` trains candidate seeds at once and gives each one's grokking step, so that the
  chapter can pick a seed that groks within its budget (and say how many did).

The tests check every product against the dense Jacobian of a small model.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.func import jvp, vjp, vmap

from lib.grokking.mlp import NO_DECAY, MLPConfig, init_instances, init_single, instance_logits, single_logits
from lib.grokking.training_jacobian import (
    Step, adam, adam_start, advance_differentiable, flatten, mlp_loss, push_tangents)

#: A singular value at least this large counts towards the bulk bound (the bulk: within 0.1 of 1).
BULK_FLOOR = 0.9


def pull_cotangents(step: Step, state: tuple[torch.Tensor, ...], cotangents: tuple[torch.Tensor, ...],
                    steps: int) -> tuple[torch.Tensor, ...]:
    """One segment backwards: the transposed Jacobian d(theta, m, v)_end / d(theta, m, v)_start
    of `steps` steps from `state` applied to each of the K cotangents (K, P) of `cotangents`,
    by vmapped vector-Jacobian products."""
    theta, m, v, t = state

    def segment(theta_, m_, v_):
        return advance_differentiable(step, (theta_, m_, v_, t), steps)[:3]

    _, pullback = vjp(segment, theta, m, v)
    return vmap(pullback)(cotangents)


def transposed_product(step: Step, states: Sequence[tuple[torch.Tensor, ...]], lengths: Sequence[int],
                       cotangents: torch.Tensor) -> torch.Tensor:
    """(U J_t), (K, P), for the K rows of `cotangents` U, where J_t = d theta_t / d theta_0 and
    t is the end of the segments whose starting states and lengths are `states` and `lengths`:
    (U, 0, 0) is pulled back segment by segment to step 0, where only theta depends on theta_0
    (Adam's moments start at zero)."""
    pulled = (cotangents, torch.zeros_like(cotangents), torch.zeros_like(cotangents))
    for state, length in zip(reversed(states), reversed(lengths)):
        pulled = pull_cotangents(step, state, pulled, length)
    return pulled[0]


def norm_lower_bound(sketch: torch.Tensor, directions: torch.Tensor) -> float:
    """A lower bound on ||J||_2 from `sketch` = J directions^T (as rows, (K, P)): the largest
    singular value of J Q_0, Q_0 the orthonormal basis of the directions' span; infinite when
    the sketch is not finite (a float32 run whose tangents overflowed: chapter 6 records where)."""
    if not torch.isfinite(sketch).all():
        return float("inf")
    _, r = torch.linalg.qr(directions.T)
    j_q0 = torch.linalg.solve_triangular(r.T, sketch, upper=False)   # R^-T (J Omega^T)^T = (J Q_0)^T
    return float(torch.linalg.matrix_norm(j_q0, ord=2))


def frobenius_estimate(sketch: torch.Tensor) -> tuple[float, float]:
    """Hutchinson's estimate of ||J||_F^2 from `sketch` = J Omega^T with Omega standard
    Gaussian (rows), and its standard error over the K directions."""
    per_direction = sketch.pow(2).sum(dim=1)
    k = per_direction.numel()
    spread = float(per_direction.std()) if k > 1 else float("nan")
    return float(per_direction.mean()), spread / math.sqrt(k)


@dataclass
class SketchedSpectrum:
    """The randomized-SVD reading of J_t at one boundary t.

    Attributes:
        step: t. top: (K,) estimates of the K largest singular values (each <= the true one).
        top_direction: (P,) the unit direction of theta_0 that the largest estimate stretches.
        frobenius_squared: Hutchinson's estimate of ||J_t||_F^2. tail_energy: its upper end
            (two standard errors above) minus ||B||_F^2, at least 0: bounds the squares of the
            singular values past the K-th (with the estimate's uncertainty).
        bulk_share_bound: at most this share of the P singular values reaches `BULK_FLOOR`.
    """

    step: int
    top: torch.Tensor
    top_direction: torch.Tensor
    frobenius_squared: float
    tail_energy: float
    bulk_share_bound: float


def sketched_spectrum(step: Step, states: Sequence[tuple[torch.Tensor, ...]], lengths: Sequence[int],
                      sketch: torch.Tensor, n_parameters: int, done: int) -> SketchedSpectrum:
    """Randomized SVD of J_t from its forward sketch (K, P) and one backward pass."""
    q, _ = torch.linalg.qr(sketch.T)                                   # (P, K): basis of J's range seen
    b = transposed_product(step, states, lengths, q.T.contiguous())   # Q^T J_t
    _, top, right = torch.linalg.svd(b, full_matrices=False)
    frobenius, error = frobenius_estimate(sketch)
    # Hutchinson's estimate is noisy (its error dominates when a few singular values are huge):
    # the tail is bounded from the estimate's upper end, two standard errors above it, so that a
    # low draw cannot make the bound look tight.
    upper = frobenius + 2 * (error if error == error else frobenius)
    tail = max(upper - float(b.pow(2).sum()), 0.0)
    bound = min(1.0, (sketch.shape[0] + tail / BULK_FLOOR ** 2) / n_parameters)
    return SketchedSpectrum(step=done, top=top, top_direction=right[0], frobenius_squared=frobenius,
                            tail_energy=tail, bulk_share_bound=bound)


@dataclass
class SketchedJacobianStudy:
    """The training Jacobian of one MLP at the authors' scale, read through K products.

    Attributes:
        n_parameters: P; embed_dim: d = h; seed: the model's seed; steps, segment, sketch_size: K.
        boundaries: (S,) the step counts read (0, segment, ..., steps).
        train_accuracy, test_accuracy: (S,) float64 run, on the training pairs / whole table.
        norm_lower_bound: dtype name -> (S,) lower bound on the largest singular value of J_t.
        frobenius_squared, frobenius_error: (S,) Hutchinson's ||J_t||_F^2 and its standard error.
        dtype_difference: (S,) relative distance of the float32 sketch from the float64 one.
        spectra: randomized SVDs at a few boundaries (float64).
        seconds: wall time of the forward sketch of each dtype and of the backward passes.
    """

    n_parameters: int
    embed_dim: int
    seed: int
    steps: int
    segment: int
    sketch_size: int
    boundaries: torch.Tensor
    train_accuracy: torch.Tensor
    test_accuracy: torch.Tensor
    norm_lower_bound: dict[str, torch.Tensor]
    frobenius_squared: torch.Tensor
    frobenius_error: torch.Tensor
    dtype_difference: torch.Tensor
    spectra: list[SketchedSpectrum]
    seconds: dict[str, float]

    def grok_step(self, threshold: float = 0.999) -> int:
        """First boundary from which the accuracy on the whole table stays at or above
        `threshold` to the end; -1 if none."""
        above = (self.test_accuracy >= threshold).int().flip(0).cummin(dim=0).values.flip(0).bool()
        return int(self.boundaries[above.nonzero()[0, 0]]) if above.any() else -1


def sketched_jacobian_study(model: MLPConfig, seed: int, training: tuple[torch.Tensor, ...],
                            test: tuple[torch.Tensor, ...], steps: int, segment: int, weight_decay: float,
                            lr: float, betas: tuple[float, float], eps: float, sketch_size: int,
                            spectrum_steps: Callable[[list[int], list[float]], list[int]] | Sequence[int],
                            generator: torch.Generator, device: torch.device | str = "cpu",
                            with_float32: bool = True) -> SketchedJacobianStudy:
    """Train seed `seed`'s MLP full-batch with Adam on the `training` pairs (left, right, label)
    for `steps` steps in float64 and float32, pushing `sketch_size` Gaussian directions drawn
    from `generator` through training in segments of `segment` steps; then the randomized SVD
    of J_t at the boundaries `spectrum_steps` names (a list, or a function of the boundaries
    and the float64 accuracy on the `test` pairs that returns one). Without `with_float32` only
    the float64 run is made (its dtype difference is then NaN)."""
    if segment < 1 or steps < segment or sketch_size < 1:
        raise ValueError(f"need 1 <= segment <= steps and sketch_size >= 1; got segment={segment}, "
                         f"steps={steps}, sketch_size={sketch_size}.")
    training = tuple(t.to(device) for t in training)
    test = tuple(t.to(device) for t in test)
    params = init_single(seed, model, device)
    shapes = {name: tuple(value.shape) for name, value in params.items()}
    loss, mask = mlp_loss(shapes, *training)
    theta0 = flatten(params).double()
    p = theta0.numel()
    directions = torch.randn(sketch_size, p, generator=generator, dtype=torch.float64).to(device)
    lengths = [min(segment, steps - start) for start in range(0, steps, segment)]
    boundaries = [0] + [sum(lengths[:i + 1]) for i in range(len(lengths))]

    def accuracy(theta: torch.Tensor, left, right, labels) -> float:
        unpacked = {name: part.view(shapes[name]) for name, part in zip(shapes, theta.split(
            [torch.Size(s).numel() for s in shapes.values()]))}
        with torch.no_grad():
            return float((single_logits(unpacked, left, right).argmax(dim=1) == labels).double().mean())

    sketches, lower, seconds, states64, step64 = {}, {}, {}, [], None
    train_acc, test_acc = [], []
    for dtype in (torch.float64, torch.float32) if with_float32 else (torch.float64,):
        name = str(dtype).removeprefix("torch.")
        step = adam(loss, lr, betas, eps, weight_decay, mask.to(device=device, dtype=dtype))
        state = adam_start(theta0.to(dtype))
        tangents = (directions.to(dtype), torch.zeros_like(directions, dtype=dtype),
                    torch.zeros_like(directions, dtype=dtype))
        kept, started = [tangents[0].double()], time.perf_counter()
        for length in lengths:
            if dtype == torch.float64:
                states64.append(state)
                train_acc.append(accuracy(state[0], *training))
                test_acc.append(accuracy(state[0], *test))
            state, tangents = push_tangents(step, state, tangents, length)
            kept.append(tangents[0].double())
        seconds[f"forward_{name}"] = time.perf_counter() - started
        if dtype == torch.float64:
            train_acc.append(accuracy(state[0], *training))
            test_acc.append(accuracy(state[0], *test))
            step64 = step
        sketches[name] = torch.stack(kept)
        lower[name] = torch.tensor([norm_lower_bound(s, directions) for s in kept], dtype=torch.float64)
    reference = sketches["float64"]
    difference = ((sketches["float32"] - reference).flatten(1).norm(dim=1) / reference.flatten(1).norm(dim=1)
                  if with_float32 else torch.full((len(boundaries),), float("nan"), dtype=torch.float64))
    difference = torch.where(difference.isnan() & with_float32, torch.inf, difference)   # overflowed float32
    estimates = [frobenius_estimate(s) for s in reference]
    chosen = spectrum_steps(boundaries, test_acc) if callable(spectrum_steps) else list(spectrum_steps)
    started, spectra = time.perf_counter(), []
    for done in chosen:
        if done not in boundaries:
            raise ValueError(f"spectrum step {done} is not a segment boundary ({boundaries}).")
        i = boundaries.index(done)
        spectra.append(sketched_spectrum(step64, states64[:i], lengths[:i], reference[i], p, done))
    seconds["backward"] = time.perf_counter() - started
    return SketchedJacobianStudy(
        n_parameters=p, embed_dim=model.embed_dim, seed=seed, steps=steps, segment=segment, sketch_size=sketch_size,
        boundaries=torch.tensor(boundaries), train_accuracy=torch.tensor(train_acc, dtype=torch.float64),
        test_accuracy=torch.tensor(test_acc, dtype=torch.float64), norm_lower_bound=lower,
        frobenius_squared=torch.tensor([e[0] for e in estimates], dtype=torch.float64),
        frobenius_error=torch.tensor([e[1] for e in estimates], dtype=torch.float64),
        dtype_difference=difference, spectra=spectra, seconds=seconds)


def finite_amplification(model: MLPConfig, seed: int, training: tuple[torch.Tensor, ...], steps: int,
                         weight_decay: float, lr: float, betas: tuple[float, float], eps: float,
                         direction: torch.Tensor, sizes: Sequence[float], device: torch.device | str = "cpu",
                         ) -> tuple[list[float], float]:
    """The ratios ||theta_steps(theta_0 + s u) - theta_steps(theta_0)|| / s for each size s in
    `sizes`, u the unit `direction`, trained as in `sketched_jacobian_study` (float64, all sizes
    at once), and the derivative ||J u|| by one forward-mode product. Where training is smooth at
    a size the ratio is ||J u||; where it is not, the finite move no longer follows the Jacobian."""
    params = init_single(seed, model, device)
    loss, mask = mlp_loss({name: tuple(value.shape) for name, value in params.items()},
                          *(t.to(device) for t in training))
    step = adam(loss, lr, betas, eps, weight_decay, mask.to(device=device, dtype=torch.float64))
    theta0 = flatten(params).double()
    unit = (direction / direction.norm()).to(device=device, dtype=torch.float64)
    starts = torch.stack([theta0] + [theta0 + size * unit for size in sizes])

    def train(theta: torch.Tensor) -> torch.Tensor:
        return advance_differentiable(step, adam_start(theta), steps)[0]

    with torch.no_grad():
        ends = vmap(train)(starts)
    _, derivative = jvp(train, (theta0,), (unit,))
    return [float((ends[i + 1] - ends[0]).norm() / size) for i, size in enumerate(sizes)], float(derivative.norm())


def screen_seeds(model: MLPConfig, seeds: Sequence[int], training: tuple[torch.Tensor, ...],
                 test: tuple[torch.Tensor, ...], steps: int, check_every: int, weight_decay: float, lr: float,
                 betas: tuple[float, float], eps: float, threshold: float = 0.999,
                 device: torch.device | str = "cpu") -> torch.Tensor:
    """Each seed's grokking step when its MLP is trained as in `sketched_jacobian_study`
    (full-batch torch.optim.Adam, coupled weight decay on all but the unembedding bias): the
    first multiple of `check_every` from which the accuracy on the `test` pairs stays at or
    above `threshold` to `steps`; -1 if none. All seeds train at once (float32)."""
    left, right, labels = (t.to(device) for t in training)
    test_left, test_right, test_labels = (t.to(device) for t in test)
    params = {name: value.clone().requires_grad_() for name, value in init_instances(seeds, model, device).items()}
    groups = [{"params": [v for k, v in params.items() if k not in NO_DECAY], "weight_decay": weight_decay},
              {"params": [v for k, v in params.items() if k in NO_DECAY], "weight_decay": 0.0}]
    optimizer = torch.optim.Adam([g for g in groups if g["params"]], lr=lr, betas=betas, eps=eps)
    grokked = torch.full((len(seeds),), -1)
    for done in range(1, steps + 1):
        optimizer.zero_grad()
        logits = instance_logits(params, left, right)
        # the sum over seeds of each seed's mean loss: every seed gets its own gradient
        loss = F.cross_entropy(logits.flatten(0, 1), labels.repeat(len(seeds)), reduction="sum") / labels.numel()
        loss.backward()
        optimizer.step()
        if done % check_every == 0 or done == steps:
            with torch.no_grad():
                above = (instance_logits(params, test_left, test_right).argmax(-1) == test_labels).double().mean(1)
            above = above.cpu() >= threshold
            grokked = torch.where(above & (grokked < 0), torch.tensor(done), torch.where(above, grokked, -1))
    return grokked


__all__ = ["BULK_FLOOR", "SketchedJacobianStudy", "SketchedSpectrum", "finite_amplification", "frobenius_estimate",
           "norm_lower_bound", "pull_cotangents", "screen_seeds", "sketched_jacobian_study", "sketched_spectrum", "transposed_product"]
