"""What chapter 1's results JSON must hold, for the notebook tests (chapter 1).

The notebook writes `results_dir/01_handcrafted_bfs.json`; `tests/test_notebooks.py` finds this
module by the chapter's number and checks every executed chapter against its `REQUIRED_KEYS`
and `check_results`.
"""

from __future__ import annotations

#: Keys the results JSON must contain (a chapter may write more).
REQUIRED_KEYS = frozenset({"handcrafted_mse", "handcrafted_max_abs_error", "n_graphs", "perturbation"})


def check_results(results: dict) -> None:
    """Assert what chapter 1's results must satisfy beyond holding `REQUIRED_KEYS`."""
    assert results["handcrafted_mse"] < 1e-6 and results["n_graphs"] > 0
    assert all({"scale", "loss_before", "loss_after"} <= r.keys() for r in results["perturbation"])
