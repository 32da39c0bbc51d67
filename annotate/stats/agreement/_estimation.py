"""The one estimation path of every agreement coefficient, and why a coefficient is undefined.

A coefficient is a statistic ``finish(sum over units of features(unit))``
(:class:`annotate.stats.agreement._bootstrap._Statistic`). :func:`_estimate` runs it: an
undefined case returns NaN with a reason (:func:`_pairable_reason`,
:func:`_single_category_reason`); otherwise the units collapse to patterns (count rows, label
rows or contingency cells) and :func:`annotate.stats.agreement._bootstrap._fit` gives the point
estimate, the jackknife SE and the BCa unit bootstrap, each output becoming a
``results.Coefficient`` (:func:`_coefficient`). :func:`_pair_agreement` is the per-unit share of
agreeing rater pairs that percent agreement, AC1, Fleiss and Conger share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from annotate.stats._common import NAN
from annotate.stats.agreement._bootstrap import _Fit, _fit, _patterns, _Resampling, _Statistic
from annotate.stats.agreement.results import Coefficient


def _pair_agreement(n: NDArray[np.float64], m: NDArray[np.float64]) -> NDArray[np.float64]:
    """Share of agreeing rater pairs per unit, sum_q n_q (n_q - 1) / (m (m - 1)); 0 if m < 2."""
    den = m * (m - 1)
    num = (n * (n - 1)).sum(axis=1)
    out: NDArray[np.float64] = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    return out


def _pairable_reason(n_pairable: int, what: str) -> str | None:
    if n_pairable < 2:
        return (
            f"{what} needs at least two pairable units (units with two or more ratings); this group has {n_pairable}."
        )
    return None


def _single_category_reason(col_sums: NDArray[np.int64], what: str, where: str) -> str | None:
    present = np.flatnonzero(col_sums > 0)
    if present.size < 2:
        cat = f"category {int(present[0])}" if present.size else "no category"
        return (
            f"All {int(col_sums.sum())} {where} fall in one category ({cat}), so chance agreement "
            f"is total and {what} is undefined (0/0)."
        )
    return None


def _coefficient(
    name: str,
    fit: _Fit | None,
    k: int,
    n_units: int,
    n_excluded: int,
    boot: _Resampling,
    components: dict[str, float],
    reason: str | None,
) -> Coefficient:
    """Output ``k`` of ``fit`` as a Coefficient; NaN without interval when ``reason`` is set."""
    if reason is not None or fit is None:
        return Coefficient(
            name,
            NAN,
            n_units=n_units,
            n_excluded=n_excluded,
            confidence=boot.confidence,
            components=components,
            undefined_reason=reason,
        )
    return Coefficient(
        name,
        float(fit.value[k]),
        ci_low=float(fit.ci_low[k]),
        ci_high=float(fit.ci_high[k]),
        se=float(fit.se[k]),
        se_jackknife=float(fit.se_jackknife[k]),
        n_units=n_units,
        n_excluded=n_excluded,
        n_boot=int(boot.n_boot) if fit.reps is not None else 0,
        n_boot_undefined=int(fit.n_undefined[k]),
        confidence=boot.confidence,
        components=components,
        interval_note=fit.interval_notes[k] if fit.interval_notes else None,
    )


def _estimate(
    names: Sequence[str],
    counts: NDArray[np.int64],
    rows: NDArray[np.bool_],
    statistic: _Statistic,
    reason: str | None,
    boot: _Resampling,
    *,
    components: dict[str, float] | None = None,
    totals: Callable[[NDArray[np.float64]], dict[str, float]] | None = None,
    per_output: Callable[[NDArray[np.float64]], Sequence[tuple[dict[str, float], str | None]]] | None = None,
    support: tuple[int, int | None] | None = None,
    rules: bool = True,
) -> tuple[Coefficient, ...]:
    """Every output of ``statistic`` on the units ``rows`` of ``counts``: the path of every coefficient.

    If ``reason`` is set (too few pairable units, one category only, ...), every output is
    undefined with that reason and nothing is fitted. Otherwise the kept units collapse to count
    patterns, :func:`_fit` gives point estimates, jackknife SEs and the bootstrap, and output
    ``k`` becomes ``Coefficient(names[k], ...)``.

    Parameters
    ----------
    names : sequence of str, length K
        One per output of ``statistic``.
    counts : ndarray of int64, shape (U, F0)
        The whole input, one row per unit: its category counts, or whatever non-negative integer
        row the statistic reads (Conger: the unit's label row + 1; two-rater kappas: the unit's
        contingency cell). The units not in ``rows`` are reported in ``n_excluded``.
    rows : ndarray of bool, shape (U,)
        The units that enter the estimate (the resampled population, ``n_units``).
    statistic : _Statistic
        With K outputs.
    reason : str or None
        Why the whole group is undefined.
    boot : _Resampling
    components : dict of str to float, optional
        Reported with every output, defined or not (e.g. Fleiss' ``n_raters``).
    totals : callable, optional
        ``totals(S)``, with S the features summed over the kept units (shape (F,)), gives more
        components for every output (e.g. ``p_a`` and ``p_e``).
    per_output : callable, optional
        ``per_output(S)`` gives, for each output, its own components and a reason when that
        output alone is undefined (e.g. a category that never occurs).
    support : (int, int), optional
        Pairable values and pairable units holding the second most frequent category: no
        interval below the minimum (:func:`annotate.stats.agreement._bootstrap.support_of`);
        None: no minimum.
    rules : bool
        False: the percentile interval without the rules of issue #23 (the reviewer diagnostics'
        two-rater kappas).

    Returns
    -------
    tuple of Coefficient, length K
        Components in the order ``components``, ``totals``, ``per_output``.
    """
    n_units = int(rows.sum())
    n_excluded = counts.shape[0] - n_units
    known = components or {}
    if reason is not None:
        return tuple(_coefficient(name, None, 0, n_units, n_excluded, boot, dict(known), reason) for name in names)
    pats, freq = _patterns(counts[rows])
    fit = _fit(pats, freq, statistic, boot, support=support, rules=rules)
    common = {**known, **(totals(fit.total) if totals is not None else {})}
    own = per_output(fit.total) if per_output is not None else [({}, None)] * len(names)
    return tuple(
        _coefficient(name, fit, k, n_units, n_excluded, boot, {**common, **comps}, why)
        for k, (name, (comps, why)) in enumerate(zip(names, own, strict=True))
    )
