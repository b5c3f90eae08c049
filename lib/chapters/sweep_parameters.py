"""The parameters every chapter whose sweeps can run on a Ray cluster declares (chapters 4-6).

`SweepChapterParameters` extends `lib.book.params.ChapterParameters` with `sweep_backend` and
`ray_address` (`lib.grokking.sweep_runner`); chapters 4, 5 and 6 extend it, so no chapter module
imports another's for them.
"""

from __future__ import annotations

from dataclasses import dataclass

from lib.book.params import ChapterParameters, ParameterError, parameter
from lib.grokking.sweep_runner import BACKENDS, check_backend, use_backend


def _ray_address(name: str, value):
    if value is not None and (not isinstance(value, str) or not value):
        raise ParameterError(f'Parameter `{name}` must be None (start Ray on this machine), "auto" or a '
                             f"cluster address such as \"ray://host:10001\"; got {value!r}.")
    return value


@dataclass(frozen=True)
class SweepChapterParameters(ChapterParameters):
    """The parameters of the chapters whose sweeps can run on a Ray cluster (4-6): declared
    once here, after the four every chapter has (`lib.grokking.sweep_runner`)."""

    sweep_backend: str = parameter('where the instance sweeps run: "local" (this machine) or "ray"',
                                   choices=BACKENDS)
    ray_address: str = parameter('Ray cluster to join: None (start Ray here), "auto" or an address',
                                 check=_ray_address)

    def use_sweep_backend(self) -> None:
        """Send this process's sweeps to the chosen backend, writing finished shards to results_dir."""
        use_backend(self.sweep_backend, self.ray_address, self.results_dir)

    def check_consistency(self) -> None:
        try:
            check_backend(self.sweep_backend, self.ray_address)
        except ValueError as error:
            raise ParameterError(str(error)) from None


__all__ = ["SweepChapterParameters"]
