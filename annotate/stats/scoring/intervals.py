"""Intervals: Wilson for the judge-only rates, equal-tailed posterior intervals for everything else."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from annotate.stats._common import normal_quantile

__all__ = ["enclose", "equal_tailed", "wilson_interval"]


def wilson_interval(
    x: NDArray[Any] | float, n: NDArray[Any] | float, confidence: float = 0.95
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson score interval for a binomial proportion, vectorised.

    Parameters
    ----------
    x, n : array_like, broadcastable
        Successes and trials (0 <= x <= n).
    confidence : float
        Two-sided level.

    Returns
    -------
    low, high : ndarray of float64
        ``(x + z^2/2)/(n + z^2) -/+ z/(n + z^2) sqrt(x (n - x)/n + z^2/4)`` with
        z = Phi^-1(1/2 + confidence/2), clipped to [0, 1]; low = 0 at x = 0, high = 1 at x = n;
        NaN where n = 0.

    Examples
    --------
    3 of 10: z = 1.959964, centre = 4.920729 / 13.841459 = 0.355507, half-width =
    0.141601 sqrt(2.1 + 0.960365) = 0.247716 (``scipy.stats.binomtest(3, 10).proportion_ci(
    method="wilson")`` gives the same limits):

    >>> low, high = wilson_interval(3, 10)
    >>> round(float(low), 6), round(float(high), 6)
    (0.107791, 0.603222)
    >>> low, high = wilson_interval([0, 10], [10, 10])
    >>> low.round(6).tolist(), high.round(6).tolist()
    ([0.0, 0.722467], [0.277533, 1.0])
    >>> wilson_interval(0, 0)
    (array(nan), array(nan))
    """
    x = np.asarray(x, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z = normal_quantile(0.5 + confidence / 2.0)  # the normal quantile (scipy.stats.norm.ppf)
    with np.errstate(divide="ignore", invalid="ignore"):
        centre = (x + z * z / 2.0) / (n + z * z)
        half = z / (n + z * z) * np.sqrt(np.maximum(x * (n - x) / n, 0.0) + z * z / 4.0)
        low = np.where(n > 0, np.where(x <= 0, 0.0, np.clip(centre - half, 0.0, 1.0)), np.nan)
        high = np.where(n > 0, np.where(x >= n, 1.0, np.clip(centre + half, 0.0, 1.0)), np.nan)
    return low, high


def equal_tailed(draws: NDArray[np.float64], confidence: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Equal-tailed interval per row of posterior draws; rows with a NaN give NaN.

    Parameters
    ----------
    draws : ndarray of float64, shape (C, D)
        D draws for each of C rows.
    confidence : float
        Two-sided level; a = (1 - confidence) / 2.

    Returns
    -------
    low, high : ndarray of float64, shape (C,)
        The a- and (1 - a)-quantiles. The q-quantile is the smallest draw whose empirical CDF
        reaches q (``np.quantile``'s ``method="inverted_cdf"``): the order statistic of 0-based
        index ceil(q D) - 1, found with one ``np.partition``. All NaN when D = 0.

    Examples
    --------
    D = 20 draws 1..20, confidence 0.9: a D = 1, (1 - a) D = 19, so the 1st and 19th smallest.

    >>> equal_tailed(np.arange(1.0, 21.0)[None, :], 0.9)
    (array([1.]), array([19.]))
    >>> equal_tailed(np.array([[0.2, np.nan, 0.4]]), 0.9)
    (array([nan]), array([nan]))
    """
    C, D = draws.shape
    lo: NDArray[np.float64] = np.full(C, np.nan)
    hi: NDArray[np.float64] = np.full(C, np.nan)
    if D == 0 or C == 0:
        return lo, hi
    a = (1.0 - confidence) / 2.0
    k_lo = min(max(math.ceil(a * D - 1e-9) - 1, 0), D - 1)
    k_hi = min(max(math.ceil((1.0 - a) * D - 1e-9) - 1, 0), D - 1)
    part = np.partition(draws, (k_lo, k_hi), axis=1)
    lo, hi = part[:, k_lo].copy(), part[:, k_hi].copy()
    bad = np.isnan(draws).any(axis=1)
    lo[bad] = np.nan
    hi[bad] = np.nan
    return lo, hi


def enclose(
    estimate: NDArray[np.float64], low: NDArray[np.float64], high: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Extend each interval to hold its own estimate: the invariant every output keeps.

    Parameters
    ----------
    estimate, low, high : ndarray of float64, shape (C,)

    Returns
    -------
    low, high : ndarray of float64, shape (C,)
        min(low, estimate) and max(high, estimate) where all three are finite (unchanged
        elsewhere).
    extended : ndarray of bool, shape (C,)
        Rows that had to move. A posterior quantile can miss the design-based estimate when
        every draw sits on one side of it (e.g. several strata with no harmful item, whose
        draws can only add harm); the interval is then extended and the row says so.

    Examples
    --------
    >>> lo, hi, moved = enclose(np.array([0.0, 0.3, np.nan]), np.array([0.01, 0.2, 0.1]), np.array([0.2, 0.4, 0.2]))
    >>> lo.tolist(), hi.tolist(), moved.tolist()
    ([0.0, 0.2, 0.1], [0.2, 0.4, 0.2], [True, False, False])
    """
    est = np.asarray(estimate, dtype=np.float64)
    lo = np.asarray(low, dtype=np.float64)
    hi = np.asarray(high, dtype=np.float64)
    ok = np.isfinite(est) & np.isfinite(lo) & np.isfinite(hi)
    with np.errstate(invalid="ignore"):
        extended = ok & ((est < lo) | (est > hi))
    return np.where(ok, np.minimum(lo, est), lo), np.where(ok, np.maximum(hi, est), hi), extended
