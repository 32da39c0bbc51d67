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

from annotate.stats._common import SeedLike, normal_cdf, normal_quantile, rng

#: Fewer pairable values than this: no interval, and so no verdict (issue #23; docs/methods.md 9.13).
MIN_PAIRABLE_VALUES = 30
#: ... or fewer pairable units holding the second most frequent category than this (the minority
#: category the chance term rests on: Krippendorff's required sample sizes grow as the smallest
#: category's share falls), for the coefficients whose chance term is the observed marginals
#: (alpha, Fleiss, Conger, category agreement). AC1, percent agreement and Brennan-Prediger keep
#: their intervals there (selecting on the minority biased AC1's: 0.33-0.90 where printed).
MIN_MINORITY_UNITS = 10
#: The bootstrap interval: ``"bca"`` (bias-corrected and accelerated) or ``"percentile"``.
INTERVAL = "bca"
#: No interval from a majority of undefined replicates or of zero width (issue #23); False only
#: to reproduce the intervals before issue #23 in comparisons (bench/coverage.py).
CHECK_REPLICATES = True
#: The reason of a group below the minimum.
TOO_FEW = (
    "too few units for an interval: {n} pairable values, {k} units with the second most frequent category "
    "(an interval needs at least {m} and {u})"
)
#: ... of a coefficient that does not rest on the minority category (AC1, percent agreement, Brennan-Prediger).
TOO_FEW_VALUES = "too few units for an interval: {n} pairable values (an interval needs at least {m})"

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
        Level of the bootstrap interval, strictly between 0 and 1.
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
    interval_notes: tuple[str | None, ...] = ()  # (K,): why an output has no interval (None: it has one)


def support_of(counts: NDArray[np.int64], minority: bool = True) -> tuple[int, int | None]:
    """(pairable values, pairable units holding the second most frequent category) of a count matrix.

    ``minority=False``: the second is None (no minimum of minority units).

    >>> support_of(np.array([[2, 0], [1, 1], [0, 2], [0, 1]]))
    (6, 2)
    """
    c = np.asarray(counts)
    pairable = c[c.sum(axis=1) >= 2]
    if not minority:
        return int(pairable.sum()), None
    if not len(pairable) or pairable.shape[1] < 2:
        return int(pairable.sum()), 0
    second = int(np.argsort(-pairable.sum(axis=0), kind="stable")[1])
    return int(pairable.sum()), int((pairable[:, second] > 0).sum())


def _jackknife_values(feat: NDArray[np.float64], total: NDArray[np.float64], stat: _Statistic) -> NDArray[np.float64]:
    """The P distinct leave-one-unit-out values, ``finish(total - feat[p])``, shape (P, K)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        theta: NDArray[np.float64] = stat.finish(total[None, :] - feat)
    return theta


def _bca(
    reps: NDArray[np.float64],
    value: float,
    jack: NDArray[np.float64],
    freq: NDArray[np.int64],
    confidence: float,
) -> tuple[float, float, str | None]:
    """Efron's BCa interval of one output from its defined replicates (percentile, bias-corrected, accelerated).

    z0 = Phi^-1(share of replicates below the estimate, ties counted half); the acceleration
    a = sum_p f_p (m - t_p)^3 / (6 (sum_p f_p (m - t_p)^2)^1.5) from the jackknife values t_p
    (frequencies f_p, mean m); the limits are the replicates' quantiles at
    Phi(z0 + (z0 + z_q) / (1 - a (z0 + z_q))) for z_q = Phi^-1 of (1 -/+ confidence) / 2
    (Efron 1987; Efron & Tibshirani 1993, 14.3). Returns (low, high, why there is none).
    """
    B = reps.size
    below = (np.count_nonzero(reps < value) + 0.5 * np.count_nonzero(reps == value)) / B
    if not 0.0 < below < 1.0:
        return math.nan, math.nan, "every bootstrap replicate lies on one side of the estimate"
    z0 = normal_quantile(below)
    ok = np.isfinite(jack)
    if ok.all() and freq.sum() >= 2:
        N = float(freq.sum())
        m = float(freq @ jack) / N
        d = m - jack
        den = float(freq @ d**2)
        acc = float(freq @ d**3) / (6.0 * den**1.5) if den > 0 else 0.0
    else:
        acc = 0.0
    tail = (1.0 - confidence) / 2.0
    out = []
    for q in (tail, 1.0 - tail):
        zq = normal_quantile(q)
        w = z0 + (z0 + zq) / (1.0 - acc * (z0 + zq))
        out.append(float(np.quantile(reps, normal_cdf(w))))
    return out[0], out[1], None


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


def _fit(
    pats: NDArray[np.int64],
    freq: NDArray[np.int64],
    stat: _Statistic,
    boot: _Resampling,
    support: tuple[int, int | None] | None = None,
    rules: bool = True,
) -> _Fit:
    """Point estimate, jackknife SE and the BCa unit bootstrap for one statistic.

    Parameters
    ----------
    pats : ndarray of int64, shape (P, V)
    freq : ndarray of int64, shape (P,)
        From :func:`_patterns`; N = ``freq.sum()`` units.
    stat : _Statistic
        With K outputs.
    boot : _Resampling
    support : (int, int), optional
        The group's pairable values and its pairable units holding the second most frequent
        category (:func:`support_of`): below :data:`MIN_PAIRABLE_VALUES` or
        :data:`MIN_MINORITY_UNITS` no interval is given.
    rules : bool
        False: the percentile interval with none of the rules of issue #23 (no minimum, none of the
        checks of the replicates), for the reviewer diagnostics' kappas, which have a minimum of
        their own (docs/methods.md 9.10, 9.13).

    Returns
    -------
    _Fit
        Replicates on which an output is not finite are left out of its interval and SE and
        counted in ``n_undefined``. The interval is Efron's BCa (:func:`_bca`; :data:`INTERVAL`).
        No interval (NaN, the reason in ``interval_notes``) below the minimum support, with a
        majority of undefined replicates, or where the interval would have zero width.
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
    notes: list[str | None] = [None] * K
    jack = _jackknife_values(feat, total, stat) if INTERVAL == "bca" and rules else None
    too_few = (
        rules
        and support is not None
        and (support[0] < MIN_PAIRABLE_VALUES or (support[1] is not None and support[1] < MIN_MINORITY_UNITS))
    )
    checks = CHECK_REPLICATES and rules
    for k in range(K):
        good = reps[:, k][np.isfinite(reps[:, k])]
        n_undef[k] = n_boot - good.size
        if good.size >= 2:
            se[k] = good.std(ddof=1)
        if not np.isfinite(value[k]):
            continue
        if too_few:
            assert support is not None
            if support[1] is None:
                notes[k] = TOO_FEW_VALUES.format(n=support[0], m=MIN_PAIRABLE_VALUES)
            else:
                notes[k] = TOO_FEW.format(n=support[0], k=support[1], m=MIN_PAIRABLE_VALUES, u=MIN_MINORITY_UNITS)
            continue
        if good.size < 2 or (checks and good.size < n_boot / 2):
            notes[k] = (
                f"no interval: the coefficient is undefined in {n_boot - good.size} of {n_boot} bootstrap replicates "
                "(a majority: too few units for an interval)"
            )
            continue
        if jack is not None:
            lo[k], hi[k], why = _bca(good, float(value[k]), jack[:, k], freq, boot.confidence)
        else:
            lo[k], hi[k] = np.quantile(good, [tail, 1.0 - tail])
            why = None
        if why is None and checks and not hi[k] - lo[k] > 1e-12:
            why = "the bootstrap replicates do not vary"
        if why is not None:
            lo[k] = hi[k] = math.nan
            notes[k] = f"no interval: {why} (a zero-width interval is no interval; too few units for an interval)"
    return _Fit(value, lo, hi, se, se_jack, n_undef, reps, total, tuple(notes))
