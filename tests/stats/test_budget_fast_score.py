"""bench/budget.py's fast path is the tool's own model-level interval (corrected_scores)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

# Loaded from its file, not by putting bench/ on sys.path: bench/coverage.py would then shadow the
# coverage package that numba (through ppi-python) imports in later tests.
_SPEC = importlib.util.spec_from_file_location(
    "bench_budget", Path(__file__).resolve().parents[2] / "bench" / "budget.py"
)
assert _SPEC is not None and _SPEC.loader is not None
budget = importlib.util.module_from_spec(_SPEC)
sys.modules["bench_budget"] = budget  # dataclasses look their module up there
_SPEC.loader.exec_module(budget)


def test_the_fast_path_equals_corrected_scores_within_monte_carlo_error() -> None:
    rng = np.random.default_rng(11)
    pop = budget.simulate(1, rng, lo=0.002, hi=0.4, se=0.8)
    N, K = pop.N, pop.K
    n = np.minimum(N, np.where(np.arange(3) == 2, 6, 3))  # sparse: the fiducial mixture and its shared coin matter
    y = budget.hyper(rng, K, N - K, n)
    D = 20000
    fast = budget.fast_score(N, n, y, D, np.random.default_rng(1))
    tool = budget.tool_score(N, n, y, D, seed=2)
    again = budget.tool_score(N, n, y, D, seed=3)
    np.testing.assert_allclose(fast[2], tool[2], rtol=0, atol=1e-12)  # the estimates: exactly
    for k in (0, 1):  # the ends: as close as the tool is to itself with another seed
        d_fast = np.abs(fast[k] - tool[k])
        d_tool = np.abs(again[k] - tool[k])
        assert d_fast.max() <= 0.006
        assert d_fast.mean() <= 2.5 * d_tool.mean() + 2e-4
    # not a copy of the tool's draws: a different design gives different intervals
    other = budget.fast_score(N, np.minimum(N, 25), budget.hyper(rng, K, N - K, np.minimum(N, 25)), 2000, rng)
    assert np.abs(other[1] - tool[1]).max() > 0.01
