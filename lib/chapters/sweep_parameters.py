"""The parameters every chapter whose sweeps can run on a Ray cluster declares (chapters 4-6).

`SweepChapterParameters` extends `lib.book.params.ChapterParameters` with `sweep_backend` and
`ray_address` (`lib.grokking.sweep_runner`); chapters 4, 5 and 6 extend it, so no chapter module
imports another's for them. It also declares, once, the parameters that several of these chapters
have (`SweepChapterParameters.SHARED`: `fallback_instances`, `fallback_epochs`, `grok_threshold`):
their help, bounds and smoke value. A chapter places each one among its own fields with
`SweepChapterParameters.shared(name)`, at the line where its notebook's parameters cell lists it
(the cells order them differently, and chapter 4 has no fallback sweep); the default is the one in
that cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from lib.book.params import ChapterParameters, ParameterError, at_most, parameter
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

    #: The parameters several of chapters 4-6 have, declared once: name -> the arguments of
    #: `lib.book.params.parameter` (help, bounds, smoke value). Not fields of this class: each
    #: chapter places the ones it has with `shared`, where its notebook's cell lists them.
    SHARED: ClassVar[dict[str, dict[str, Any]]] = {
        "fallback_instances": dict(
            help="seeds of the S4 sweep trained here when chapter 4's is missing (chapter 4: 1,000)",
            low=1, high=1_000_000, smoke=at_most(16)),
        "fallback_epochs": dict(help="epochs of that sweep (the study: 2,000)", low=1, high=1_000_000,
                                smoke=at_most(40)),
        "grok_threshold": dict(help="accuracy on a group's full table that counts as grokking it",
                               low=0.5, high=1.0),
    }

    @classmethod
    def shared(cls, name: str):
        """The field of the shared parameter `name`, as declared in `SHARED` (chapters 4-6)."""
        return parameter(**cls.SHARED[name])

    def use_sweep_backend(self) -> None:
        """Send this process's sweeps to the chosen backend, writing finished shards to results_dir."""
        use_backend(self.sweep_backend, self.ray_address, self.results_dir)

    def check_consistency(self) -> None:
        try:
            check_backend(self.sweep_backend, self.ray_address)
        except ValueError as error:
            raise ParameterError(str(error)) from None


__all__ = ["SweepChapterParameters"]
