"""The pattern-compressed estimation engine: point estimate, jackknife SE and unit bootstrap.

Every agreement coefficient depends on the data only through the multiset of count rows
``n_u`` (shape ``(V,)`` each), and is a smooth function of a few sums over units. So a
coefficient is written as a :class:`_Statistic`, ``finish(sum_u features(n_u))``; the U rows
collapse to P distinct patterns with frequencies ``freq`` (:func:`_patterns`), and

* the point estimate is ``finish(freq @ features(pats))``;
* the jackknife has only P distinct leave-one-unit-out values, ``finish(total - features[p])``,
  each repeated ``freq[p]`` times;
* Efron's unit bootstrap (resampling N units with replacement) is the same as drawing pattern
  frequencies ``W ~ Multinomial(N, freq / N)``, shape (B, P), so ``finish(W @ features(pats))``
  gives every replicate in one matrix product (docs/methods.md section 2.3).

The cost grows with P, not U: P <= 16 for 3 annotators x 3 categories.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from annotate.stats._common import SeedLike, rng

# Upper bound on the elements of one (replicates x patterns) weight block; keeps memory flat
# when there are many distinct count patterns (many annotators or categories).
_MAX_BLOCK = 1 << 22


def _patterns(counts: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Distinct count rows and their frequencies.

    Every coefficient here depends on the data only through the multiset of count vectors, so
    the U rows collapse to P distinct patterns (P <= 16 for 3 annotators x 3 categories).

    Parameters
    ----------
    counts : ndarray of int64, shape (U, V)

    Returns
    -------
    pats : ndarray of int64, shape (P, V)
        In increasing order of the mixed-radix key (or lexicographic order in the fallback).
    freq : ndarray of int64, shape (P,)

    Examples
    --------
    >>> pats, freq = _patterns(np.array([[2, 0], [1, 1], [2, 0]]))
    >>> pats.tolist(), freq.tolist()
    ([[2, 0], [1, 1]], [2, 1])
    """
    U, V = counts.shape
    if U == 0:
        return np.zeros((0, V), np.int64), np.zeros(0, np.int64)
    radix = int(counts.max()) + 1
    if V * math.log2(radix) < 62:
        # Mixed-radix key per row: np.unique on one int64 column is much cheaper than
        # np.unique(axis=0), and a bincount is cheaper still when the key space is small.
        place = radix ** np.arange(V, dtype=np.int64)
        key = counts @ place
        if radix**V <= max(1 << 16, 4 * U):
            freq_all = np.bincount(key, minlength=radix**V)
            keys = np.flatnonzero(freq_all)
            freq = freq_all[keys]
        else:
            keys, freq = np.unique(key, return_counts=True)
        pats = (keys[:, None] // place[None, :]) % radix
        return pats.astype(np.int64), freq.astype(np.int64)
    pats, freq = np.unique(counts, axis=0, return_counts=True)
    return pats.astype(np.int64), freq.astype(np.int64)


@dataclass(frozen=True)
class _Statistic:
    """A coefficient written as ``finish(sum over units of features(unit))``.

    All coefficients here are smooth functions of a few sums over units, so a bootstrap replicate
    is ``finish(W @ features(pats))`` with multinomial pattern weights W, and a jackknife value
    is ``finish(total - features(pats)[p])``.
    """

    features: Callable[[NDArray[np.int64]], NDArray[np.float64]]  # (P, V) -> (P, F)
    finish: Callable[[NDArray[np.float64]], NDArray[np.float64]]  # (B, F) -> (B, K)


@dataclass(frozen=True)
class _Resampling:
    """The bootstrap settings of one call, checked when it is built.

    Attributes
    ----------
    n_boot : int
        Replicates B (0 = point estimate and jackknife only).
    seed : int, numpy.random.Generator or None
        Checked only when a bootstrap is drawn.
    confidence : float
        Level of the percentile interval, strictly between 0 and 1.
    """

    n_boot: int
    seed: SeedLike
    confidence: float

    def __post_init__(self) -> None:
        if int(self.n_boot) != self.n_boot or self.n_boot < 0:
            raise ValueError(f"n_boot must be a non-negative integer; got {self.n_boot!r}.")
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence must lie strictly between 0 and 1; got {self.confidence!r}.")


@dataclass(frozen=True)
class _Fit:
    """What :func:`_fit` returns for a statistic with K outputs."""

    value: NDArray[np.float64]  # (K,)
    ci_low: NDArray[np.float64]  # (K,)
    ci_high: NDArray[np.float64]  # (K,)
    se: NDArray[np.float64]  # (K,)
    se_jackknife: NDArray[np.float64]  # (K,)
    n_undefined: NDArray[np.int64]  # (K,)
    reps: NDArray[np.float64] | None  # (B, K); None without bootstrap
    total: NDArray[np.float64]  # (F,): the sums over units the point estimate is finished from


def _jackknife(
    feat: NDArray[np.float64], freq: NDArray[np.int64], total: NDArray[np.float64], stat: _Statistic
) -> NDArray[np.float64]:
    """Leave-one-unit-out jackknife SE, shape (K,), from P distinct values.

    ``theta_p = finish(total - feat[p])`` (P, K), each repeated ``freq[p]`` times;
    ``SE^2 = (N - 1) / N * sum_p freq[p] (theta_p - theta_bar)^2`` with N = ``freq.sum()`` >= 2.
    NaN for an output where any leave-one-out value is undefined.
    """
    N = int(freq.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = stat.finish(total[None, :] - feat)  # (P, K)
    ok = np.isfinite(theta).all(axis=0)
    theta_bar = (freq @ np.where(np.isfinite(theta), theta, 0.0)) / N
    var = (N - 1) / N * (freq @ (theta - theta_bar) ** 2)
    se: NDArray[np.float64] = np.where(ok, np.sqrt(np.where(ok, var, 0.0)), np.nan)
    return se


def _fit(pats: NDArray[np.int64], freq: NDArray[np.int64], stat: _Statistic, boot: _Resampling) -> _Fit:
    """Point estimate, jackknife SE and percentile bootstrap for one statistic.

    Parameters
    ----------
    pats : ndarray of int64, shape (P, V)
    freq : ndarray of int64, shape (P,)
        From :func:`_patterns`; N = ``freq.sum()`` units.
    stat : _Statistic
        With K outputs.
    boot : _Resampling

    Returns
    -------
    _Fit
        Replicates on which an output is not finite are left out of its interval and SE and
        counted in ``n_undefined``; an interval needs at least two defined replicates.
    """
    feat = stat.features(pats)  # (P, F)
    total = freq @ feat  # (F,)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = stat.finish(total[None, :])[0]
    K = value.shape[0]
    N = int(freq.sum())
    P = len(freq)
    se_jack = _jackknife(feat, freq, total, stat) if N >= 2 else np.full(K, np.nan)

    nan_k = np.full(K, np.nan)
    n_boot = boot.n_boot
    if n_boot == 0 or N == 0:
        return _Fit(value, nan_k, nan_k.copy(), nan_k.copy(), se_jack, np.zeros(K, np.int64), None, total)

    gen = rng(boot.seed)
    # Resampling N units with replacement = drawing pattern frequencies from
    # Multinomial(N, freq / N); one matrix product then gives every replicate's sums.
    pvals = freq / N
    reps = np.empty((n_boot, K))
    block = max(1, min(n_boot, _MAX_BLOCK // max(P, 1)))
    for start in range(0, n_boot, block):
        b = min(block, n_boot - start)
        W = gen.multinomial(N, pvals, size=b)  # (b, P)
        with np.errstate(divide="ignore", invalid="ignore"):
            reps[start : start + b] = stat.finish(W @ feat)

    tail = (1.0 - boot.confidence) / 2.0
    lo, hi, se = nan_k.copy(), nan_k.copy(), nan_k.copy()
    n_undef = np.zeros(K, np.int64)
    for k in range(K):
        good = reps[:, k][np.isfinite(reps[:, k])]
        n_undef[k] = n_boot - good.size
        if good.size >= 2:
            lo[k], hi[k] = np.quantile(good, [tail, 1.0 - tail])
            se[k] = good.std(ddof=1)
    return _Fit(value, lo, hi, se, se_jack, n_undef, reps, total)
