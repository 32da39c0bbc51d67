"""The agreement coefficient core: Krippendorff's alpha, Gwet's AC1, Fleiss' kappa, percent and category agreement.

Every coefficient here takes the **count matrix** ``n`` with shape ``(U, V)`` (see
:mod:`annotate.stats.agreement.matrices`). Notation follows ``docs/methods.md`` section 2: ``o``
coincidence matrix, ``n_c`` its margins, ``p_a`` / ``p_e`` observed and chance agreement, ``pi_q``
Gwet's category propensities. The two-rater and multi-rater kappas (Cohen's, weighted,
Brennan-Prediger, Conger) are in :mod:`annotate.stats.agreement.kappas`, the one-group summary in
:mod:`annotate.stats.agreement.summary`.

Each coefficient is written as a statistic ``finish(sum over units of features(unit))`` and runs
one path (:func:`annotate.stats.agreement._estimation._estimate`): an undefined case returns NaN
with a reason; otherwise the units collapse to count patterns and
:func:`annotate.stats.agreement._bootstrap._fit` gives the point estimate, the jackknife SE and
the BCa unit bootstrap. Fleiss' kappa on complete units adds its z test
(:func:`annotate.stats.agreement._analytic._fleiss_z`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from annotate.stats._common import NAN, SeedLike
from annotate.stats.agreement._analytic import _fleiss_z
from annotate.stats.agreement._bootstrap import _Fit, _fit, _patterns, _Resampling, _Statistic, support_of
from annotate.stats.agreement._estimation import (
    _estimate,
    _pair_agreement,
    _pairable_reason,
    _single_category_reason,
)
from annotate.stats.agreement.matrices import _check_counts
from annotate.stats.agreement.results import AlphaResult, Coefficient

Level = Literal["nominal", "ordinal", "interval", "ratio"]

_LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")


# --------------------------------------------------------------------------------------------
# Statistics as (features, finish) pairs
# --------------------------------------------------------------------------------------------


def _coincidence_features(pats: NDArray[np.int64]) -> NDArray[np.float64]:
    """Per-pattern coincidences (n n^T - diag n) / (m - 1), flattened, then the counts n.

    Returns shape (P, V*V + V). The exact integer counts are kept so that the margins n_c used
    for D_e (and for the "one category only" check) are free of rounding.
    """
    P, V = pats.shape
    n = pats.astype(float)
    m = n.sum(axis=1)
    o = (n[:, :, None] * n[:, None, :] - n[:, :, None] * np.eye(V)) / (m - 1)[:, None, None]
    return np.concatenate([o.reshape(P, V * V), n], axis=1)


def _delta(level: str, n_c: NDArray[np.float64], values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Squared difference functions delta^2_ck; shape (V, V), or (B, V, V) for ordinal."""
    V = n_c.shape[1]
    if level == "nominal":
        return 1.0 - np.eye(V)
    if level == "interval":
        return (values[:, None] - values[None, :]) ** 2
    if level == "ratio":
        diff = values[:, None] - values[None, :]
        tot = values[:, None] + values[None, :]
        return np.divide(diff, tot, out=np.zeros_like(diff), where=tot != 0) ** 2
    # ordinal: (sum_{g=c}^{k} n_g - (n_c + n_k) / 2)^2 with the replicate's own margins,
    # rewritten with cumulative sums S as (S_k - S_c + (n_c - n_k) / 2)^2 (valid for c > k too).
    S = np.cumsum(n_c, axis=1)
    return (S[:, None, :] - S[:, :, None] + (n_c[:, :, None] - n_c[:, None, :]) / 2.0) ** 2


def _expected_sum(n_c: NDArray[np.float64], delta: NDArray[np.float64]) -> NDArray[np.float64]:
    """sum_ck n_c n_k delta_ck per replicate; n_c (B, V), delta (V, V) or (B, V, V) -> (B,)."""
    spec = "bc,bk,ck->b" if delta.ndim == 2 else "bc,bk,bck->b"
    out: NDArray[np.float64] = np.einsum(spec, n_c, n_c, delta)
    return out


def _alpha_statistic(V: int, level: str, values: NDArray[np.float64]) -> _Statistic:
    VV = V * V

    def finish(S: NDArray[np.float64]) -> NDArray[np.float64]:
        o = S[:, :VV].reshape(-1, V, V)
        n_c = S[:, VV:]  # margins n_c = sum_k o_ck (exact integers)
        n = n_c.sum(axis=1)
        if level == "nominal":
            # (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c n_k, using n - trace(o) and
            # n^2 - sum n_c^2 for the off-diagonal sums (fewer rounding steps).
            d_o = n - np.trace(o, axis1=1, axis2=2)
            d_e = (n * n - (n_c * n_c).sum(axis=1)) / (n - 1)
        else:
            delta = _delta(level, n_c, values)
            d_o = (o * delta).sum(axis=(1, 2))
            d_e = _expected_sum(n_c, delta) / (n - 1)
        alpha = 1.0 - d_o / d_e
        # D_e = 0 exactly when a single category occurs: alpha is 0/0, not 1.
        two_cats = (n_c > 0).sum(axis=1) >= 2
        return np.where(two_cats, alpha, np.nan)[:, None]

    return _Statistic(_coincidence_features, finish)


def _alpha_components(total: NDArray[np.float64], V: int, level: str, values: NDArray[np.float64]) -> dict[str, float]:
    """D_o and D_e of the point estimate (for reports), from the summed coincidence features."""
    S = total[None, :]
    o = S[:, : V * V].reshape(-1, V, V)
    n_c = S[:, V * V :]
    n = float(n_c.sum())
    delta = _delta(level, n_c, values)
    d_o = float((o * delta).sum()) / n
    d_e = float(_expected_sum(n_c, delta)[0]) / (n * (n - 1))
    return {"D_o": d_o, "D_e": d_e}


def _percent_statistic() -> _Statistic:
    def features(pats: NDArray[np.int64]) -> NDArray[np.float64]:
        n = pats.astype(float)
        return np.column_stack([_pair_agreement(n, n.sum(axis=1)), np.ones(len(n))])

    def finish(S: NDArray[np.float64]) -> NDArray[np.float64]:
        return (S[:, 0] / S[:, 1])[:, None]

    return _Statistic(features, finish)


def _ac1_statistic(Q: int, chance: Literal["gwet", "fleiss"] = "gwet") -> _Statistic:
    """AC1 (chance = "gwet"), or Fleiss' kappa generalised to missing ratings (chance = "fleiss").

    Both use Gwet's p_a and pi_q; they differ only in the chance term:
    sum_q pi_q (1 - pi_q) / (Q - 1) for AC1, sum_q pi_q^2 for Fleiss.
    """

    def features(pats: NDArray[np.int64]) -> NDArray[np.float64]:
        n = pats.astype(float)
        m = n.sum(axis=1)
        pairable = (m >= 2).astype(float)
        # [agreement of pairable units, pairable indicator, n_uq / m_u (Q columns), n_uq, 1]
        return np.column_stack([_pair_agreement(n, m), pairable, n / m[:, None], n, np.ones(len(n))])

    def finish(S: NDArray[np.float64]) -> NDArray[np.float64]:
        p_a = S[:, 0] / S[:, 1]
        pi_q = S[:, 2 : 2 + Q] / S[:, -1:]
        if chance == "gwet":
            p_e = (pi_q * (1.0 - pi_q)).sum(axis=1) / (Q - 1)
            ac1: NDArray[np.float64] = (p_a - p_e) / (1.0 - p_e)
            return ac1[:, None]
        p_e = (pi_q * pi_q).sum(axis=1)
        two_cats = (S[:, 2 + Q : 2 + 2 * Q] > 0).sum(axis=1) >= 2  # else p_e = 1: 0/0
        return np.where(two_cats, (p_a - p_e) / (1.0 - p_e), np.nan)[:, None]

    return _Statistic(features, finish)


def _fleiss_statistic(V: int, r: int) -> _Statistic:
    def features(pats: NDArray[np.int64]) -> NDArray[np.float64]:
        n = pats.astype(float)
        P_i = (n * (n - 1)).sum(axis=1) / (r * (r - 1))
        return np.column_stack([P_i, n, np.ones(len(n))])

    def finish(S: NDArray[np.float64]) -> NDArray[np.float64]:
        N = S[:, -1]
        P_bar = S[:, 0] / N
        p_j = S[:, 1 : 1 + V] / (N * r)[:, None]
        P_e = (p_j * p_j).sum(axis=1)
        kappa = (P_bar - P_e) / (1.0 - P_e)
        two_cats = (S[:, 1 : 1 + V] > 0).sum(axis=1) >= 2  # else P_e = 1 and kappa is 0/0
        return np.where(two_cats, kappa, np.nan)[:, None]

    return _Statistic(features, finish)


def _category_statistic(V: int) -> _Statistic:
    def features(pats: NDArray[np.int64]) -> NDArray[np.float64]:
        n = pats.astype(float)
        m = n.sum(axis=1)
        o_cc = (n * (n - 1)) / (m - 1)[:, None]
        return np.column_stack([o_cc, n])

    def finish(S: NDArray[np.float64]) -> NDArray[np.float64]:
        o_cc, n_c = S[:, :V], S[:, V:]
        return np.where(n_c > 0, o_cc / np.where(n_c > 0, n_c, 1.0), np.nan)

    return _Statistic(features, finish)


# --------------------------------------------------------------------------------------------
# Public coefficients
# --------------------------------------------------------------------------------------------


def krippendorff_alpha(
    counts: ArrayLike,
    *,
    level: Level = "nominal",
    values: ArrayLike | None = None,
    n_boot: int = 2000,
    seed: SeedLike = 0,
    confidence: float = 0.95,
    thresholds: Sequence[float] = (0.667, 0.800),
) -> AlphaResult:
    """Krippendorff's alpha with missing ratings, unit-bootstrap interval and jackknife SE.

    Only units with ``m_u >= 2`` are pairable. With the coincidence matrix

        o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1),  n_c = sum_k o_ck,  n = sum_c n_c

    alpha = 1 - D_o / D_e = 1 - (n - 1) sum_ck o_ck delta_ck / sum_ck n_c n_k delta_ck, with
    delta_ck = [c != k] for nominal data, (v_c - v_k)^2 interval, ((v_c - v_k)/(v_c + v_k))^2
    ratio, and (sum_{g=c..k} n_g - (n_c + n_k)/2)^2 ordinal (Krippendorff 2011).

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
        Count matrix; columns in category order (rank order for ordinal).
    level : {"nominal", "ordinal", "interval", "ratio"}
        Metric. There is no default-to-interval trap here: nominal is the default.
    values : array_like of float, shape (V,), optional
        Numeric category values for interval/ratio (default ``0..V-1``). Ignored otherwise.
    n_boot : int
        Bootstrap replicates B (0 = point estimate and jackknife only).
    seed : int, numpy.random.Generator or None
        Seed of the bootstrap; the same int gives the same interval.
    confidence : float
        Level of the bootstrap interval.
    thresholds : sequence of float
        ``alpha_min`` values for ``q = P*(alpha < alpha_min)``.

    Returns
    -------
    AlphaResult
        ``value`` NaN with ``undefined_reason`` when fewer than two units are pairable or only one
        category occurs among the pairable values.

    Notes
    -----
    The bootstrap resamples the pairable units (Efron's nonparametric bootstrap, BCa interval),
    not judgement pairs as Hayes & Krippendorff (2007) do, whose SE is too small (docs/methods.md
    section 2.3); no interval below the minimum support (docs/methods.md 9.13: ``interval_note``).
    It is drawn in pattern-compressed form: with P distinct count rows,
    ``W ~ Multinomial(U_pairable, freq / U_pairable)`` of shape (B, P), and ``W @ features`` gives
    every replicate's coincidence matrix in one product. The cost grows with P, not U: P <= 16
    for 3 annotators x 3 categories, but it approaches U with many annotators and categories
    (then W is drawn in blocks to bound memory).

    Examples
    --------
    Two coders, five units, categories (harmful, safe): A says H H S S S, B says H S S S S.
    The coincidences are o_HH = 2, o_HS = o_SH = 1, o_SS = 6, so n_H = 3, n_S = 7, n = 10 and
    alpha = 1 - (n - 1) (o_HS + o_SH) / (2 n_H n_S) = 1 - 9 * 2 / 42 = 4/7:

    >>> counts = np.array([[2, 0], [1, 1], [0, 2], [0, 2], [0, 2]])
    >>> res = krippendorff_alpha(counts, n_boot=0)
    >>> round(res.value, 6), res.n_units, res.n_values
    (0.571429, 5, 10)

    The ``krippendorff`` package gives the same value (its data are shaped (coders, units)):

    >>> import krippendorff
    >>> data = [[0, 0, 1, 1, 1], [0, 1, 1, 1, 1]]
    >>> round(float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")), 6)
    0.571429

    With one category only, alpha is undefined and says why:

    >>> res = krippendorff_alpha([[2, 0], [2, 0]], n_boot=0)
    >>> res.value, res.undefined_reason[:57]
    (nan, 'All 4 pairable values fall in one category (category 0), ')
    """
    n_all = _check_counts(counts)
    if level not in _LEVELS:
        raise ValueError(f"level must be one of {list(_LEVELS)}; got {level!r}.")
    boot = _Resampling(n_boot, seed, confidence)
    U, V = n_all.shape
    v = _category_values(level, values, V)
    thr = tuple(float(t) for t in thresholds)

    pairable = n_all.sum(axis=1) >= 2
    n_pair = n_all[pairable]
    U_p = int(pairable.sum())
    n_values = int(n_pair.sum())
    reason = _pairable_reason(U_p, "Krippendorff's alpha") or _single_category_reason(
        n_pair.sum(axis=0), "alpha", "pairable values"
    )
    if reason is not None:
        return AlphaResult(
            level,
            NAN,
            q=tuple((t, NAN) for t in thr),
            n_units=U_p,
            n_excluded=U - U_p,
            n_values=n_values,
            confidence=confidence,
            undefined_reason=reason,
        )

    pats, freq = _patterns(n_pair)
    fit = _fit(pats, freq, _alpha_statistic(V, level, v), boot, support=support_of(n_pair))
    return AlphaResult(
        level,
        float(fit.value[0]),
        ci_low=float(fit.ci_low[0]),
        ci_high=float(fit.ci_high[0]),
        se=float(fit.se[0]),
        se_jackknife=float(fit.se_jackknife[0]),
        q=_exceedance(fit, thr),
        n_boot=int(n_boot),
        n_boot_undefined=int(fit.n_undefined[0]),
        n_units=U_p,
        n_excluded=U - U_p,
        n_values=n_values,
        confidence=confidence,
        components=_alpha_components(fit.total, V, level, v),
        interval_note=fit.interval_notes[0] if fit.interval_notes else None,
    )


def _category_values(level: str, values: ArrayLike | None, V: int) -> NDArray[np.float64]:
    """The (V,) numeric category values of alpha's metric (default ``0..V-1``), checked for its level."""
    v = np.arange(V, dtype=float) if values is None else np.asarray(values, dtype=float)
    if v.shape != (V,):
        raise ValueError(f"values must have one entry per category ({V}); got shape {v.shape}.")
    if level in ("interval", "ratio") and np.unique(v).size != V:
        raise ValueError(f"The {level} level needs distinct category values; got {v.tolist()}.")
    if level == "ratio" and (v < 0).any():
        raise ValueError("The ratio level needs non-negative category values.")
    return v


def _exceedance(fit: _Fit, thresholds: tuple[float, ...]) -> tuple[tuple[float, float], ...]:
    """``(alpha_min, q)`` per threshold, ``q = P*(alpha < alpha_min)`` over the defined bootstrap
    replicates; NaN without replicates."""
    if fit.reps is None:
        return tuple((t, NAN) for t in thresholds)
    good = fit.reps[:, 0][np.isfinite(fit.reps[:, 0])]
    return tuple((t, float((good < t).mean()) if good.size else NAN) for t in thresholds)


def gwet_ac1(counts: ArrayLike, *, n_boot: int = 2000, seed: SeedLike = 0, confidence: float = 0.95) -> Coefficient:
    """Gwet's AC1 for any number of raters, with missing ratings (Gwet 2014; irrCAC raw data).

        p_a  = mean over units with m_u >= 2 of sum_q n_uq (n_uq - 1) / (m_u (m_u - 1))
        pi_q = mean over units with m_u >= 1 of n_uq / m_u
        p_e  = sum_q pi_q (1 - pi_q) / (Q - 1),      AC1 = (p_a - p_e) / (1 - p_e)

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
        Count matrix; ``Q = V`` (declared categories, observed or not).
    n_boot, seed, confidence
        Bootstrap over the units with at least one rating (the units that enter ``pi_q``).

    Returns
    -------
    Coefficient
        ``components``: ``p_a``, ``p_e``. Undefined with fewer than two categories declared,
        fewer than two pairable units, or a single category among the pairable values (AC1
        would be 1 by construction). Bootstrap replicates keep the formula value.

    Examples
    --------
    Two coders, five units, categories (harmful, safe): A says H H S S S, B says H S S S S.
    p_a = 4/5; pi = (0.3, 0.7), so p_e = 2 * 0.3 * 0.7 / 1 = 0.42 and AC1 = 0.38 / 0.58 = 19/29:

    >>> counts = np.array([[2, 0], [1, 1], [0, 2], [0, 2], [0, 2]])
    >>> res = gwet_ac1(counts, n_boot=0)
    >>> round(res.value, 6), round(res.components["p_e"], 6)
    (0.655172, 0.42)

    The kappa paradox (docs/methods.md TC3: 90 units (S, S), 10 split, none (H, H)): AC1 stays high at
    161/181 while alpha falls to -9/190:

    >>> tc3 = np.repeat([[0, 2], [1, 1]], [90, 10], axis=0)
    >>> round(gwet_ac1(tc3, n_boot=0).value, 6), round(krippendorff_alpha(tc3, n_boot=0).value, 6)
    (0.889503, -0.047368)
    """
    n_all = _check_counts(counts)
    boot = _Resampling(n_boot, seed, confidence)
    V = n_all.shape[1]
    m = n_all.sum(axis=1)
    U_p = int((m >= 2).sum())
    reason = None
    if V < 2:
        reason = "Gwet's AC1 needs at least two declared categories (Q - 1 is its chance-term divisor)."
    # One category among the pairable values means p_a = 1 with no variation to agree on; AC1
    # would be 1 by construction, so it is reported as undefined, like alpha.
    reason = (
        reason
        or _pairable_reason(U_p, "Gwet's AC1")
        or _single_category_reason(
            n_all[m >= 2].sum(axis=0), "AC1 (which would be 1 by construction)", "pairable values"
        )
    )

    def components(S: NDArray[np.float64]) -> dict[str, float]:
        pi_q = S[2 : 2 + V] / S[-1]
        return {
            "p_a": float(S[0] / S[1]),
            "p_e": float((pi_q * (1 - pi_q)).sum() / (V - 1)),
            "n_pairable_units": float(U_p),
        }

    support = support_of(n_all, minority=False)
    return _estimate(["gwet_ac1"], n_all, m >= 1, _ac1_statistic(V), reason, boot, totals=components, support=support)[
        0
    ]


def fleiss_kappa(
    counts: ArrayLike,
    *,
    n_raters: int | None = None,
    missing: Literal["drop", "gwet"] = "drop",
    n_boot: int = 2000,
    seed: SeedLike = 0,
    confidence: float = 0.95,
) -> Coefficient:
    """Fleiss' kappa; by default on the complete units only (every unit rated by r raters).

        P_i = sum_j n_ij (n_ij - 1) / (r (r - 1)),  P_bar = mean_i P_i,
        p_j = sum_i n_ij / (N r),  P_e = sum_j p_j^2,  kappa = (P_bar - P_e) / (1 - P_e)

    With two raters this is Scott's pi, not Cohen's kappa.

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
    n_raters : int, optional
        r for ``missing="drop"``. Default: the largest ``m_u``. Units with ``m_u < r`` are dropped
        as incomplete; ``m_u > r`` is an error.
    missing : {"drop", "gwet"}
        ``"drop"`` (default, docs/methods.md section 2.4): complete units only; prefer alpha for data
        with missing ratings. ``"gwet"``: Gwet's (2014) generalisation used by irrCAC's
        ``fleiss.kappa.raw``: ``P_bar`` becomes AC1's ``p_a`` (units with >= 2 ratings) and
        ``p_j`` AC1's ``pi_q`` (units with >= 1 rating); identical to ``"drop"`` on complete data.
    n_boot, seed, confidence
        Bootstrap over the units that enter the estimate.

    Returns
    -------
    Coefficient
        ``n_excluded`` = units dropped (incomplete, or unrated for ``"gwet"``);
        ``components``: ``P_bar``, ``P_e_bar``, ``n_raters`` / ``n_incomplete_dropped``; with
        ``"drop"`` also the test against chance agreement of Fleiss, Nee & Landis (1979), as R
        irr's ``kappam.fleiss`` reports it: ``se_h0`` (SE under "no agreement beyond chance"),
        ``z = kappa / se_h0`` and its two-sided normal ``p_value``. ``"gwet"`` has no null
        variance for units with unequal numbers of ratings, so no z (rather than a wrong one).

    Examples
    --------
    Fleiss' (1971) data, 10 subjects x 14 raters x 5 categories (docs/methods.md TC4), kappa =
    4211/20059:

    >>> counts = [
    ...     [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    ...     [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ... ]
    >>> res = fleiss_kappa(counts, n_boot=0)
    >>> round(res.value, 7), round(res.components["P_bar"], 6), round(res.components["P_e_bar"], 6)
    (0.2099307, 0.378022, 0.212755)
    >>> round(res.components["z"], 4)  # far from "chance agreement only"
    12.3743

    With two raters it is Scott's pi: on the two-coder data of :func:`krippendorff_alpha`,
    p_o = 0.8 and P_e = 0.3^2 + 0.7^2 = 0.58, so pi = 0.22 / 0.42 = 11/21:

    >>> round(fleiss_kappa([[2, 0], [1, 1], [0, 2], [0, 2], [0, 2]], n_boot=0).value, 6)
    0.52381
    """
    n_all = _check_counts(counts)
    boot = _Resampling(n_boot, seed, confidence)
    if missing not in ("drop", "gwet"):
        raise ValueError(f'missing must be "drop" or "gwet"; got {missing!r}.')
    if missing == "gwet":
        return _fleiss_gwet(n_all, boot)
    return _fleiss_complete(n_all, n_raters, boot)


def _fleiss_gwet(n_all: NDArray[np.int64], boot: _Resampling) -> Coefficient:
    """Fleiss' kappa with Gwet's (2014) missing-rating generalisation (``missing="gwet"``)."""
    V = n_all.shape[1]
    m = n_all.sum(axis=1)
    U_p = int((m >= 2).sum())
    reason = _pairable_reason(U_p, "Fleiss' kappa") or _single_category_reason(
        n_all[m >= 2].sum(axis=0), "Fleiss' kappa", "pairable values"
    )

    def gwet_components(S: NDArray[np.float64]) -> dict[str, float]:
        pi_q = S[2 : 2 + V] / S[-1]
        return {
            "P_bar": float(S[0] / S[1]),
            "P_e_bar": float((pi_q * pi_q).sum()),
            "n_pairable_units": float(U_p),
        }

    stat = _ac1_statistic(V, "fleiss")
    return _estimate(
        ["fleiss_kappa"], n_all, m >= 1, stat, reason, boot, totals=gwet_components, support=support_of(n_all)
    )[0]


def _fleiss_complete(n_all: NDArray[np.int64], n_raters: int | None, boot: _Resampling) -> Coefficient:
    """Fleiss' kappa on the units rated by all r raters, with its z test (``missing="drop"``)."""
    U, V = n_all.shape
    m = n_all.sum(axis=1)
    r = int(m.max()) if n_raters is None and U else int(n_raters or 0)
    if n_raters is not None and U and int(m.max()) > r:
        raise ValueError(
            f"A unit has {int(m.max())} ratings but n_raters={r}; n_raters must be at least the "
            "largest number of ratings per unit."
        )
    complete = (m == r) & (r > 0)
    N = int(complete.sum())
    reason = None
    if r < 2:
        reason = f"Fleiss' kappa needs at least two ratings per unit; the most any unit has is {r}."
    elif N == 0:
        reason = f"Fleiss' kappa needs complete units (rated by all {r} raters); none of the {U} units is complete."
    reason = (
        reason
        or _pairable_reason(N, "Fleiss' kappa (complete units only)")
        or _single_category_reason(n_all[complete].sum(axis=0), "Fleiss' kappa", "ratings of the complete units")
    )

    def drop_components(S: NDArray[np.float64]) -> dict[str, float]:
        p_j = S[1 : 1 + V] / (N * r)
        P_bar, P_e = float(S[0] / N), float((p_j * p_j).sum())
        return {"P_bar": P_bar, "P_e_bar": P_e, **_fleiss_z((P_bar - P_e) / (1.0 - P_e), p_j, N, r)}

    comps = {"n_raters": float(r), "n_incomplete_dropped": float(U - N)}
    stat = _fleiss_statistic(V, r)
    return _estimate(
        ["fleiss_kappa"],
        n_all,
        complete,
        stat,
        reason,
        boot,
        components=comps,
        totals=drop_components,
        support=support_of(n_all[complete]),
    )[0]


def percent_agreement(
    counts: ArrayLike, *, n_boot: int = 2000, seed: SeedLike = 0, confidence: float = 0.95
) -> Coefficient:
    """Raw percent agreement (Gwet's p_a): mean over pairable units of the agreeing-pair share.

    ``p_a = mean_u sum_q n_uq (n_uq - 1) / (m_u (m_u - 1))`` over units with ``m_u >= 2``; with
    two raters this is the share of units on which they agree.

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
    n_boot, seed, confidence
        Bootstrap over the pairable units.

    Returns
    -------
    Coefficient
        Undefined with fewer than two pairable units.

    Examples
    --------
    Two coders, five units, categories (harmful, safe): A says H H S S S, B says H S S S S.
    They agree on 4 of 5 units:

    >>> percent_agreement([[2, 0], [1, 1], [0, 2], [0, 2], [0, 2]], n_boot=0).value
    0.8
    """
    n_all = _check_counts(counts)
    boot = _Resampling(n_boot, seed, confidence)
    pairable = n_all.sum(axis=1) >= 2
    reason = _pairable_reason(int(pairable.sum()), "Percent agreement")
    return _estimate(
        ["percent_agreement"],
        n_all,
        pairable,
        _percent_statistic(),
        reason,
        boot,
        support=support_of(n_all, minority=False),
    )[0]


def category_agreement(
    counts: ArrayLike,
    *,
    categories: Sequence[Any] | None = None,
    n_boot: int = 2000,
    seed: SeedLike = 0,
    confidence: float = 0.95,
) -> tuple[Coefficient, ...]:
    """Category-specific agreement p_c = o_cc / n_c for every category.

    The share of category-c values that another coder matched. With two coders it is positive
    agreement 2a / (2a + b + c) for the first category of a 2x2 table and negative agreement for
    the second (Cicchetti & Feinstein 1990).

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
    categories : sequence, length V, optional
        Names used in ``Coefficient.name`` (``"category_agreement[<name>]"``).
    n_boot, seed, confidence
        Bootstrap over the pairable units (same draws as alpha's for the same seed).

    Returns
    -------
    tuple of Coefficient, length V
        A category that never occurs among the pairable values is undefined.

    Examples
    --------
    Two coders, five units, categories (harmful, safe): A says H H S S S, B says H S S S S.
    Of the 3 harmful values 2 are matched (2a / (2a + b + c) = 4/6), of the 7 safe ones 6:

    >>> pos, neg = category_agreement([[2, 0], [1, 1], [0, 2], [0, 2], [0, 2]], categories=["H", "S"], n_boot=0)
    >>> pos.name, round(pos.value, 6), round(neg.value, 6)
    ('category_agreement[H]', 0.666667, 0.857143)
    """
    n_all = _check_counts(counts)
    boot = _Resampling(n_boot, seed, confidence)
    V = n_all.shape[1]
    names = list(range(V)) if categories is None else list(categories)
    if len(names) != V:
        raise ValueError(f"categories has {len(names)} entries but the count matrix has {V} columns.")
    pairable = n_all.sum(axis=1) >= 2
    reason = _pairable_reason(int(pairable.sum()), "Category-specific agreement")
    n_c = n_all[pairable].sum(axis=0)

    def per_category(S: NDArray[np.float64]) -> list[tuple[dict[str, float], str | None]]:
        return [
            (
                {"n_c": float(n_c[k])},
                None
                if n_c[k] > 0
                else f"Category {c} does not occur among the pairable values, so its specific agreement is undefined.",
            )
            for k, c in enumerate(names)
        ]

    labels = [f"category_agreement[{c}]" for c in names]
    return _estimate(
        labels,
        n_all,
        pairable,
        _category_statistic(V),
        reason,
        boot,
        per_output=per_category,
        support=support_of(n_all),
    )
