"""Agreement coefficients: alpha, AC1, Fleiss, Brennan-Prediger, percent, category, Cohen, weighted, Conger.

Every coefficient takes the **count matrix** ``n`` with shape ``(U, V)`` (see
:mod:`annotate.stats.agreement.matrices`); Cohen's and the weighted kappas take a contingency
table or two label vectors, Conger's kappa the label matrix (it needs to know who rated what).
Notation follows ``docs/methods.md`` section 2: ``o`` coincidence matrix, ``n_c`` its
margins, ``p_a`` / ``p_e`` observed and chance agreement, ``pi_q`` Gwet's category propensities.

Each coefficient is written as a statistic ``finish(sum over units of features(unit))`` and runs
one path (:func:`_estimate`): an undefined case returns NaN with a reason; otherwise the units
collapse to patterns (count rows, label rows or contingency cells) and
:func:`annotate.stats.agreement._bootstrap._fit` gives the point estimate, the jackknife SE and
the percentile unit bootstrap. The two-rater kappas add their analytic SE and z test.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from annotate.stats._common import NAN, SeedLike, as_codes
from annotate.stats.agreement._bootstrap import _Fit, _fit, _patterns, _Resampling, _Statistic
from annotate.stats.agreement.matrices import _check_counts, counts_from_codes
from annotate.stats.agreement.results import (
    AgreementSummary,
    AlphaResult,
    Coefficient,
    DroppedVotes,
    PairwiseKappa,
)

Level = Literal["nominal", "ordinal", "interval", "ratio"]

_LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")


# --------------------------------------------------------------------------------------------
# Statistics as (features, finish) pairs
# --------------------------------------------------------------------------------------------


def _pair_agreement(n: NDArray[np.float64], m: NDArray[np.float64]) -> NDArray[np.float64]:
    """Share of agreeing rater pairs per unit, sum_q n_q (n_q - 1) / (m (m - 1)); 0 if m < 2."""
    den = m * (m - 1)
    num = (n * (n - 1)).sum(axis=1)
    out: NDArray[np.float64] = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    return out


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


def _brennan_prediger_statistic(Q: int) -> _Statistic:
    """Percent agreement rescaled by the fixed chance term 1 / Q."""
    pct = _percent_statistic()

    def finish(S: NDArray[np.float64]) -> NDArray[np.float64]:
        p_a = pct.finish(S)
        out: NDArray[np.float64] = (p_a - 1.0 / Q) / (1.0 - 1.0 / Q)
        return out

    return _Statistic(pct.features, finish)


def _conger_terms(
    S: NDArray[np.float64], J: int, V: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """p_a, p_e and "defined" per replicate from the summed Conger features, S shape (B, F)."""
    p_a = S[:, 0] / S[:, 1]
    X = S[:, 2 : 2 + J * V].reshape(-1, J, V)
    n_g = S[:, 2 + J * V :]
    has = n_g > 0
    p = X / np.where(has, n_g, 1.0)[:, :, None]  # rows of raters without ratings stay 0
    r = has.sum(axis=1).astype(float)
    tot = p.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_e = ((tot * tot).sum(axis=1) - (p * p).sum(axis=(1, 2))) / (r * (r - 1.0))
    ok = (r >= 2) & ((X.sum(axis=1) > 0).sum(axis=1) >= 2)  # else p_e = 1 (one category): 0/0
    return p_a, p_e, ok


def _conger_statistic(J: int, V: int) -> _Statistic:
    """Conger's kappa on label rows coded ``code + 1`` (0 = no rating), shape (P, J).

    Features per unit: [pair agreement, pairable indicator, one-hot of rater j's category
    (J * V columns), rated-by-j indicator (J columns)]. The chance term averages, over ordered
    pairs of distinct raters g != h, sum_k p_gk p_hk, with p_gk the share of rater g's ratings
    in category k; raters without a rating in a replicate are left out of it.
    """

    def features(pats: NDArray[np.int64]) -> NDArray[np.float64]:
        P = pats.shape[0]
        onehot = (pats[:, :, None] == np.arange(1, V + 1)[None, None, :]).astype(float)  # (P, J, V)
        n = onehot.sum(axis=1)
        m = n.sum(axis=1)
        return np.column_stack(
            [_pair_agreement(n, m), (m >= 2).astype(float), onehot.reshape(P, J * V), (pats > 0).astype(float)]
        )

    def finish(S: NDArray[np.float64]) -> NDArray[np.float64]:
        p_a, p_e, ok = _conger_terms(S, J, V)
        return np.where(ok, (p_a - p_e) / (1.0 - p_e), np.nan)[:, None]

    return _Statistic(features, finish)


def _kappa_table_statistic(w: NDArray[np.float64]) -> _Statistic:
    """(Weighted) Cohen's kappa on units coded by their contingency cell ``a * V + b``, shape (P, 1).

    ``w`` is the (V, V) disagreement weight matrix (0 on the diagonal); kappa_w =
    1 - sum w_ab p_ab / sum w_ab p_a+ p_+b, which is Cohen's kappa for ``w = 1 - I``.
    """
    V = w.shape[0]

    def features(pats: NDArray[np.int64]) -> NDArray[np.float64]:
        out: NDArray[np.float64] = (pats[:, :1] == np.arange(V * V)[None, :]).astype(float)
        return out

    def finish(S: NDArray[np.float64]) -> NDArray[np.float64]:
        t = S.reshape(-1, V, V)
        n = t.sum(axis=(1, 2))
        row = t.sum(axis=2) / n[:, None]
        col = t.sum(axis=1) / n[:, None]
        d_o = (t * w).sum(axis=(1, 2)) / n
        d_e = np.einsum("ba,bc,ac->b", row, col, w)
        return np.where(d_e > 0, 1.0 - d_o / np.where(d_e > 0, d_e, 1.0), np.nan)[:, None]

    return _Statistic(features, finish)


def _kappa_analytic(table: NDArray[np.int64], w: NDArray[np.float64]) -> tuple[float, dict[str, float]]:
    """Large-sample SE of (weighted) kappa and the z test against chance (Fleiss, Cohen & Everitt 1969).

    With agreement weights a = 1 - w / max(w) (a_aa = 1), p_ab = table / n, row and column shares
    p_a+ and p_+b, p_o = sum a p, p_e = sum a p_a+ p_+b, abar_a = sum_b p_+b a_ab and
    abar_b = sum_a p_a+ a_ab:

        Var(kappa)   = [sum p_ab (a_ab - (abar_a + abar_b)(1 - kappa))^2 - (kappa - p_e (1 - kappa))^2]
                       / (n (1 - p_e)^2)
        Var_0(kappa) = [sum p_a+ p_+b (a_ab - (abar_a + abar_b))^2 - p_e^2] / (n (1 - p_e)^2)

    Returns the SE and ``{"se_h0", "z", "p_value"}`` (z = kappa / SE_0, two-sided normal p).
    """
    n = float(table.sum())
    a = 1.0 - w / w.max()
    p = table / n
    row, col = p.sum(axis=1), p.sum(axis=0)
    p_o = float((a * p).sum())
    p_e = float(row @ a @ col)
    kappa = (p_o - p_e) / (1.0 - p_e)
    abar = (a @ col)[:, None] + (row @ a)[None, :]
    fac = n * (1.0 - p_e) ** 2
    var = float((p * (a - abar * (1.0 - kappa)) ** 2).sum() - (kappa - p_e * (1.0 - kappa)) ** 2) / fac
    var0 = float((np.outer(row, col) * (a - abar) ** 2).sum() - p_e**2) / fac
    se0 = math.sqrt(var0) if var0 > 0 else NAN
    z = kappa / se0 if se0 > 0 else NAN
    p_value = math.erfc(abs(z) / math.sqrt(2.0)) if z == z else NAN
    return math.sqrt(max(var, 0.0)), {"se_h0": se0, "z": z, "p_value": p_value}


def _fleiss_z(kappa: float, p_j: NDArray[np.float64], N: int, r: int) -> dict[str, float]:
    """SE of Fleiss' kappa under "no agreement beyond chance" and the z test (Fleiss, Nee & Landis 1979).

        Var_0 = 2 / ((sum_j p_j q_j)^2 N r (r - 1)) * [(sum_j p_j q_j)^2 - sum_j p_j q_j (q_j - p_j)],  q_j = 1 - p_j

    as R irr's ``kappam.fleiss`` computes it. Returns ``{"se_h0", "z", "p_value"}`` (two-sided).
    """
    q_j = 1.0 - p_j
    pq = float((p_j * q_j).sum())
    bracket = pq * pq - float((p_j * q_j * (q_j - p_j)).sum())
    var0 = 2.0 * bracket / (pq * pq * N * r * (r - 1)) if pq > 0 else NAN
    se0 = math.sqrt(var0) if var0 > 0 else NAN
    z = kappa / se0 if se0 > 0 else NAN
    return {"se_h0": se0, "z": z, "p_value": math.erfc(abs(z) / math.sqrt(2.0)) if z == z else NAN}


# --------------------------------------------------------------------------------------------
# Undefined cases and the one estimation path
# --------------------------------------------------------------------------------------------


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
    fit = _fit(pats, freq, statistic, boot)
    common = {**known, **(totals(fit.total) if totals is not None else {})}
    own = per_output(fit.total) if per_output is not None else [({}, None)] * len(names)
    return tuple(
        _coefficient(name, fit, k, n_units, n_excluded, boot, {**common, **comps}, why)
        for k, (name, (comps, why)) in enumerate(zip(names, own, strict=True))
    )


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
        Level of the percentile interval.
    thresholds : sequence of float
        ``alpha_min`` values for ``q = P*(alpha < alpha_min)``.

    Returns
    -------
    AlphaResult
        ``value`` NaN with ``undefined_reason`` when fewer than two units are pairable or only one
        category occurs among the pairable values.

    Notes
    -----
    The bootstrap resamples the pairable units (Efron's nonparametric bootstrap, percentile
    interval), not judgement pairs as Hayes & Krippendorff (2007) do, whose SE is too small
    (methods.md section 2.3). It is drawn in pattern-compressed form: with P distinct count rows,
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
    v = np.arange(V, dtype=float) if values is None else np.asarray(values, dtype=float)
    if v.shape != (V,):
        raise ValueError(f"values must have one entry per category ({V}); got shape {v.shape}.")
    if level in ("interval", "ratio") and np.unique(v).size != V:
        raise ValueError(f"The {level} level needs distinct category values; got {v.tolist()}.")
    if level == "ratio" and (v < 0).any():
        raise ValueError("The ratio level needs non-negative category values.")
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
    fit = _fit(pats, freq, _alpha_statistic(V, level, v), boot)
    if fit.reps is not None:
        good = fit.reps[:, 0][np.isfinite(fit.reps[:, 0])]
        q = tuple((t, float((good < t).mean()) if good.size else NAN) for t in thr)
    else:
        q = tuple((t, NAN) for t in thr)
    return AlphaResult(
        level,
        float(fit.value[0]),
        ci_low=float(fit.ci_low[0]),
        ci_high=float(fit.ci_high[0]),
        se=float(fit.se[0]),
        se_jackknife=float(fit.se_jackknife[0]),
        q=q,
        n_boot=int(n_boot),
        n_boot_undefined=int(fit.n_undefined[0]),
        n_units=U_p,
        n_excluded=U - U_p,
        n_values=n_values,
        confidence=confidence,
        components=_alpha_components(fit.total, V, level, v),
    )


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

    The kappa paradox (methods.md TC3: 90 units (S, S), 10 split, none (H, H)): AC1 stays high at
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

    return _estimate(["gwet_ac1"], n_all, m >= 1, _ac1_statistic(V), reason, boot, totals=components)[0]


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
        ``"drop"`` (default, methods.md section 2.4): complete units only; prefer alpha for data
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
    Fleiss' (1971) data, 10 subjects x 14 raters x 5 categories (methods.md TC4), kappa =
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
    U, V = n_all.shape
    m = n_all.sum(axis=1)
    if missing == "gwet":
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
        return _estimate(["fleiss_kappa"], n_all, m >= 1, stat, reason, boot, totals=gwet_components)[0]

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
    return _estimate(["fleiss_kappa"], n_all, complete, stat, reason, boot, components=comps, totals=drop_components)[0]


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
    return _estimate(["percent_agreement"], n_all, pairable, _percent_statistic(), reason, boot)[0]


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
    return _estimate(labels, n_all, pairable, _category_statistic(V), reason, boot, per_output=per_category)


_KAPPA_NAMES = {"nominal": "Cohen's kappa", "linear": "linear weighted kappa", "quadratic": "quadratic weighted kappa"}


def _disagreement_weights(weights: str, V: int, values: ArrayLike | None) -> NDArray[np.float64]:
    """(V, V) disagreement weights: 1 - I (nominal), |v_a - v_b| (linear) or (v_a - v_b)^2 (quadratic)."""
    if weights not in _KAPPA_NAMES:
        raise ValueError(f'weights must be "linear" or "quadratic"; got {weights!r}.')
    if weights == "nominal":
        return 1.0 - np.eye(V)
    v = np.arange(V, dtype=float) if values is None else np.asarray(values, dtype=float)
    if v.shape != (V,):
        raise ValueError(f"values must have one entry per category ({V}); got shape {v.shape}.")
    if not np.isfinite(v).all() or np.unique(v).size != V:
        raise ValueError(f"Weighted kappa needs distinct, finite category values; got {v.tolist()}.")
    diff = np.abs(v[:, None] - v[None, :])
    return diff if weights == "linear" else diff * diff


def _kappa(
    weights: str,
    table: ArrayLike,
    values: ArrayLike | None,
    boot: _Resampling,
    n_excluded: int = 0,
) -> Coefficient:
    """The one path of Cohen's and the weighted kappas: checks, point estimate, analytic SE, bootstrap."""
    t = _check_counts(table)
    if t.shape[0] != t.shape[1]:
        raise ValueError(f"A contingency table must be square (V x V); got shape {t.shape}.")
    V = t.shape[0]
    w = _disagreement_weights(weights, V, values)
    what = _KAPPA_NAMES[weights]
    name = "cohen_kappa" if weights == "nominal" else f"weighted_kappa_{weights}"
    n = int(t.sum())
    reason = None
    rows_used, cols_used = np.flatnonzero(t.sum(axis=1)), np.flatnonzero(t.sum(axis=0))
    if n < 2:
        reason = f"{what[0].upper()}{what[1:]} needs at least two units rated by both raters; there are {n}."
    elif rows_used.size == 1 and cols_used.size == 1 and rows_used[0] == cols_used[0]:
        # The expected disagreement is 0 exactly when both raters used one and the same category.
        reason = (
            f"Both raters put all {n} units in one category, so chance agreement is 1 and {what} is undefined (0/0)."
        )
    # One row per unit, coded by its cell a * V + b: the unit bootstrap resamples these.
    cells = np.repeat(np.arange(V * V, dtype=np.int64), t.ravel())[:, None]
    comps: dict[str, float] = {}
    se_analytic = NAN
    if reason is None:
        p = t / n
        a = 1.0 - w / w.max()
        comps = {"p_o": float((a * p).sum()), "p_e": float(p.sum(axis=1) @ a @ p.sum(axis=0))}
        se_analytic, test = _kappa_analytic(t, w)
        comps.update(test)
    res = _estimate([name], cells, np.ones(n, dtype=bool), _kappa_table_statistic(w), reason, boot, components=comps)[0]
    return replace(res, se_analytic=se_analytic, n_excluded=n_excluded)


def cohen_kappa_table(
    table: ArrayLike, *, n_boot: int = 2000, seed: SeedLike = 0, confidence: float = 0.95
) -> Coefficient:
    """Cohen's kappa from a two-rater contingency table, with its analytic SE and z test.

        p_o = sum_k p_kk,  p_e = sum_k p_k+ p_+k,  kappa = (p_o - p_e) / (1 - p_e)

    ``se_analytic`` is the large-sample SE (Fleiss, Cohen & Everitt 1969; SAS's ASE);
    ``components["se_h0"]`` the SE under "no agreement beyond chance", ``z = kappa / se_h0`` and
    its two-sided ``p_value``.

    Parameters
    ----------
    table : array_like of int, shape (V, V)
        ``table[a, b]`` = units that rater A put in category a and rater B in category b.
    n_boot, seed, confidence
        Bootstrap over the units (the table's cells, each repeated by its count).

    Returns
    -------
    Coefficient
        ``components``: ``p_o``, ``p_e``, ``se_h0``, ``z``, ``p_value``. Undefined with fewer than
        two units or ``p_e = 1`` (both raters used one and the same category throughout).

    Examples
    --------
    50 units; rater A says "yes" on 25, rater B on 30; they agree on 20 + 15. So p_o = 0.7,
    p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5 and kappa = 0.2 / 0.5 = 0.4:

    >>> res = cohen_kappa_table([[20, 5], [10, 15]], n_boot=0)
    >>> round(res.value, 6), res.components["p_o"], res.components["p_e"]
    (0.4, 0.7, 0.5)

    The analytic SE agrees with ``statsmodels`` (SAS's ASE of this table is 0.1380):

    >>> from statsmodels.stats.inter_rater import cohens_kappa
    >>> sas = [[0, 4, 1], [0, 8, 0], [0, 1, 5]]
    >>> res, sm = cohen_kappa_table(sas, n_boot=0), cohens_kappa(sas)
    >>> round(res.value, 4), round(res.se_analytic, 4), round(res.components["z"], 4)
    (0.4842, 0.138, 3.2626)
    >>> bool(abs(res.se_analytic - sm.std_kappa) < 1e-12 and abs(res.components["z"] - sm.z_value) < 1e-12)
    True
    """
    return _kappa("nominal", table, None, _Resampling(n_boot, seed, confidence))


def weighted_kappa_table(
    table: ArrayLike,
    weights: Literal["linear", "quadratic"] = "linear",
    *,
    values: ArrayLike | None = None,
    n_boot: int = 2000,
    seed: SeedLike = 0,
    confidence: float = 0.95,
) -> Coefficient:
    """Weighted kappa (Cohen 1968) for an ordinal scale, from a two-rater contingency table.

    With disagreement weights w_ab = |v_a - v_b| (linear, Cicchetti-Allison) or (v_a - v_b)^2
    (quadratic, Fleiss-Cohen) on the category values v, p_ab = table / n and the margins
    p_a+ and p_+b:

        kappa_w = 1 - sum_ab w_ab p_ab / sum_ab w_ab p_a+ p_+b

    A near miss costs less than a far one; with w = 1 - I this is Cohen's kappa. The value does
    not change when w is rescaled; ``se_analytic`` (Fleiss, Cohen & Everitt 1969) uses the
    agreement weights 1 - w / max(w), as SAS and statsmodels do.

    Parameters
    ----------
    table : array_like of int, shape (V, V)
        ``table[a, b]`` = units that rater A put in category a and rater B in category b; the
        categories in scale order.
    weights : {"linear", "quadratic"}
    values : array_like of float, shape (V,), optional
        Category values (distinct). Default ``0..V-1``: the ranks of the declared categories. R irr's
        ``kappa2`` ranks only the categories the two raters used: to reproduce it, drop the
        categories neither of them used (their all-zero rows and columns) first.
    n_boot, seed, confidence
        Bootstrap over the units.

    Returns
    -------
    Coefficient
        Named ``weighted_kappa_linear`` or ``weighted_kappa_quadratic``; ``components``:
        ``p_o`` and ``p_e`` (weighted agreement, observed and by chance), ``se_h0``, ``z``,
        ``p_value``. Undefined with fewer than two units or when both raters used one and the same
        category throughout.

    Examples
    --------
    Ten units on a three-point scale; the raters disagree on three, each time by one step.
    Margins (0.4, 0.4, 0.2) and (0.4, 0.3, 0.3); with linear weights (0, 1/2, 1 apart) the
    observed disagreement is 3 * 0.5 / 10 = 0.15 and the chance disagreement 0.43, so
    kappa_w = 1 - 0.15 / 0.43 = 0.651163. Unweighted kappa counts the near misses in full
    (p_o = 0.7, p_e = 0.34, kappa = 0.545455); quadratic weights (0, 1/4, 1) give
    1 - 0.075 / 0.315 = 0.761905:

    >>> table = [[3, 1, 0], [1, 2, 1], [0, 0, 2]]
    >>> round(weighted_kappa_table(table, n_boot=0).value, 6), round(cohen_kappa_table(table, n_boot=0).value, 6)
    (0.651163, 0.545455)
    >>> round(weighted_kappa_table(table, "quadratic", n_boot=0).value, 6)
    0.761905

    scikit-learn agrees (it takes the two label vectors):

    >>> from sklearn.metrics import cohen_kappa_score
    >>> a, b = [0, 0, 0, 0, 1, 1, 1, 1, 2, 2], [0, 0, 0, 1, 0, 1, 1, 2, 2, 2]
    >>> round(float(cohen_kappa_score(a, b, weights="linear")), 6)
    0.651163
    """
    if weights not in ("linear", "quadratic"):
        raise ValueError(f'weights must be "linear" or "quadratic"; got {weights!r}.')
    return _kappa(weights, table, values, _Resampling(n_boot, seed, confidence))


def _pair_table(a: ArrayLike, b: ArrayLike, n_categories: int, what: str) -> tuple[NDArray[np.int64], int]:
    """Contingency table of two label vectors on the units both rated, and the number left out."""
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.ndim != 1 or a_arr.shape != b_arr.shape:
        raise ValueError(f"{what} needs two label vectors of equal length; got shapes {a_arr.shape} and {b_arr.shape}.")
    y = as_codes(np.column_stack([a_arr, b_arr]), n_categories)
    both = (y >= 0).all(axis=1)
    K = int(n_categories)
    table = np.bincount(y[both, 0] * K + y[both, 1], minlength=K * K).reshape(K, K)
    return table, int((~both).sum())


def cohen_kappa(
    a: ArrayLike, b: ArrayLike, n_categories: int, *, n_boot: int = 2000, seed: SeedLike = 0, confidence: float = 0.95
) -> Coefficient:
    """Cohen's kappa between two label vectors, on the units both rated.

    Parameters
    ----------
    a, b : array_like, shape (U,)
        Category codes ``0..V-1``; ``-1`` or NaN = no rating.
    n_categories : int
        V.
    n_boot, seed, confidence
        Bootstrap over the units both rated.

    Returns
    -------
    Coefficient
        As :func:`cohen_kappa_table`; ``n_excluded`` = units not rated by both.

    Examples
    --------
    Two coders, five units, categories (harmful, safe): A says H H S S S, B says H S S S S.
    p_o = 0.8, p_e = 0.4 * 0.2 + 0.6 * 0.8 = 0.56, kappa = 0.24 / 0.44 = 6/11; a unit only one of
    them rated is left out:

    >>> res = cohen_kappa([0, 0, 1, 1, 1, 0], [0, 1, 1, 1, 1, -1], n_categories=2, n_boot=0)
    >>> round(res.value, 6), res.n_units, res.n_excluded
    (0.545455, 5, 1)
    """
    table, left_out = _pair_table(a, b, n_categories, "cohen_kappa")
    return _kappa("nominal", table, None, _Resampling(n_boot, seed, confidence), left_out)


def weighted_kappa(
    a: ArrayLike,
    b: ArrayLike,
    n_categories: int,
    weights: Literal["linear", "quadratic"] = "linear",
    *,
    values: ArrayLike | None = None,
    n_boot: int = 2000,
    seed: SeedLike = 0,
    confidence: float = 0.95,
) -> Coefficient:
    """Linear or quadratic weighted kappa between two ordinal label vectors (e.g. a confidence rating).

    Parameters
    ----------
    a, b : array_like, shape (U,)
        Category codes ``0..V-1`` in scale order; ``-1`` or NaN = no rating.
    n_categories : int
        V.
    weights : {"linear", "quadratic"}
    values : array_like of float, shape (V,), optional
        Category values; default the codes (see :func:`weighted_kappa_table`).
    n_boot, seed, confidence
        Bootstrap over the units both rated.

    Returns
    -------
    Coefficient
        As :func:`weighted_kappa_table`; ``n_excluded`` = units not rated by both.

    Examples
    --------
    Artstein & Poesio's (2008) weighting example, as scikit-learn's tests encode it:

    >>> a = [0] * 46 + [1] * 44 + [2] * 10
    >>> b = [0] * 50 + [1] * 40 + [2] * 10
    >>> [round(weighted_kappa(a, b, 3, w, n_boot=0).value, 4) for w in ("linear", "quadratic")]
    [0.9412, 0.9541]
    """
    if weights not in ("linear", "quadratic"):
        raise ValueError(f'weights must be "linear" or "quadratic"; got {weights!r}.')
    table, left_out = _pair_table(a, b, n_categories, "weighted_kappa")
    return _kappa(weights, table, values, _Resampling(n_boot, seed, confidence), left_out)


def brennan_prediger(
    counts: ArrayLike, *, n_boot: int = 2000, seed: SeedLike = 0, confidence: float = 0.95
) -> Coefficient:
    """Brennan & Prediger's (1981) coefficient: percent agreement against a fixed chance of 1 / Q.

        p_a = mean over units with m_u >= 2 of sum_q n_uq (n_uq - 1) / (m_u (m_u - 1))
        BP  = (p_a - 1/Q) / (1 - 1/Q)

    The chance term assumes raters who guess uniformly over the Q declared categories, whatever
    the observed prevalence (the "free-marginal" kappa; Randolph's kappa on complete data), so
    it does not suffer the kappa paradox, and it depends on how many categories are declared.

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
        Count matrix; ``Q = V`` (declared categories, observed or not).
    n_boot, seed, confidence
        Bootstrap over the pairable units.

    Returns
    -------
    Coefficient
        ``components``: ``p_a``, ``p_e`` (= 1/Q). Undefined with fewer than two declared
        categories or fewer than two pairable units. It stays defined, at 1, when every pairable
        value is in one category: it is percent agreement rescaled, and that agreement is real.

    Examples
    --------
    Two coders, five units, categories (harmful, safe): A says H H S S S, B says H S S S S.
    p_a = 0.8 and p_e = 1/2, so BP = 0.3 / 0.5 = 0.6; on the kappa-paradox data (methods.md TC3)
    it is (0.9 - 0.5) / 0.5 = 0.8, where kappa is below 0:

    >>> round(brennan_prediger([[2, 0], [1, 1], [0, 2], [0, 2], [0, 2]], n_boot=0).value, 6)
    0.6
    >>> tc3 = np.repeat([[0, 2], [1, 1]], [90, 10], axis=0)
    >>> round(brennan_prediger(tc3, n_boot=0).value, 6)
    0.8

    Three raters, four units, three categories: p_a = (1 + 1/3 + 0 + 1) / 4 = 7/12, so
    BP = (7/12 - 1/3) / (2/3) = 3/8. On complete data it equals statsmodels' Randolph
    (free-marginal) kappa:

    >>> from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss
    >>> table = [[0, 0, 3], [0, 2, 1], [1, 1, 1], [3, 0, 0]]
    >>> round(brennan_prediger(table, n_boot=0).value, 6), round(float(sm_fleiss(table, method="randolph")), 6)
    (0.375, 0.375)
    """
    n_all = _check_counts(counts)
    boot = _Resampling(n_boot, seed, confidence)
    V = n_all.shape[1]
    pairable = n_all.sum(axis=1) >= 2
    reason = None
    if V < 2:
        reason = "Brennan-Prediger needs at least two declared categories (its chance term is 1/Q)."
    reason = reason or _pairable_reason(int(pairable.sum()), "Brennan-Prediger")

    def components(S: NDArray[np.float64]) -> dict[str, float]:
        return {"p_a": float(S[0] / S[1]), "p_e": 1.0 / V}

    stat = _brennan_prediger_statistic(V)
    return _estimate(["brennan_prediger"], n_all, pairable, stat, reason, boot, totals=components)[0]


def conger_kappa(
    labels: ArrayLike, n_categories: int, *, n_boot: int = 2000, seed: SeedLike = 0, confidence: float = 0.95
) -> Coefficient:
    """Conger's (1980) kappa: Cohen's kappa for any number of raters, with missing ratings.

    Observed agreement is Gwet's p_a (as AC1 and Fleiss); chance agreement keeps each rater's own
    category shares, as Cohen's kappa does for two (Fleiss' kappa pools them):

        p_a  = mean over units with m_u >= 2 of sum_k n_uk (n_uk - 1) / (m_u (m_u - 1))
        p_gk = share of rater g's ratings in category k (over the units g rated)
        p_e  = sum_k [ pbar_k^2 - s_k^2 / r ]
             = mean over ordered pairs g != h of sum_k p_gk p_hk
        kappa_C = (p_a - p_e) / (1 - p_e)

    with pbar_k and s_k^2 the mean and variance (ddof 1) of p_gk over the r raters who rated at
    least one unit (Gwet 2014; irrCAC ``conger.kappa.raw``). With two raters and no missing
    rating it is Cohen's kappa.

    Parameters
    ----------
    labels : array_like, shape (U, J)
        Label matrix: codes ``0..V-1``, ``-1`` or NaN = no rating; one column per rater.
    n_categories : int
        V.
    n_boot, seed, confidence
        Bootstrap over the units with at least one rating (rater identity is kept: a unit is
        resampled with its whole row).

    Returns
    -------
    Coefficient
        ``components``: ``p_a``, ``p_e``, ``n_raters`` (raters with a rating). Undefined with
        fewer than two pairable units, fewer than two raters with a rating, or a single
        category among the ratings (p_e = 1).

    Examples
    --------
    Three raters, five units; rater C says "safe" (1) more often than A and B:

    >>> labels = np.array([[0, 0, 0], [0, 0, 1], [1, 1, 1], [1, 1, 1], [0, 1, 1]])
    >>> res = conger_kappa(labels, 2, n_boot=0)
    >>> round(res.value, 6), round(res.components["p_a"], 6), round(res.components["p_e"], 6)
    (0.473684, 0.733333, 0.493333)

    Here p_a = 11/15; the raters' shares of category 0 are 3/5, 2/5 and 1/5, and the three
    pairs' chance agreements 12/25, 11/25 and 14/25 average to p_e = 37/75, so
    kappa_C = (55/75 - 37/75) / (38/75) = 9/19. With two raters it equals Cohen's kappa (A and B
    agree on 4 of 5 units: p_o = 0.8, p_e = 12/25, kappa = 8/13):

    >>> two = labels[:, :2]
    >>> round(conger_kappa(two, 2, n_boot=0).value, 6), round(cohen_kappa(two[:, 0], two[:, 1], 2, n_boot=0).value, 6)
    (0.615385, 0.615385)
    """
    y = as_codes(labels, n_categories)
    boot = _Resampling(n_boot, seed, confidence)
    U, J = y.shape
    V = int(n_categories)
    rated: NDArray[np.bool_] = np.asarray((y >= 0).any(axis=1))
    counts = counts_from_codes(y, V)
    pairable = counts.sum(axis=1) >= 2
    n_raters = int((y >= 0).any(axis=0).sum())
    reason = None
    if n_raters < 2:
        reason = f"Conger's kappa needs at least two raters with a rating; this group has {n_raters}."
    reason = (
        reason
        or _pairable_reason(int(pairable.sum()), "Conger's kappa")
        or _single_category_reason(counts.sum(axis=0), "Conger's kappa", "ratings")
    )
    stat = _conger_statistic(J, V)

    def components(S: NDArray[np.float64]) -> dict[str, float]:
        p_a, p_e, _ = _conger_terms(S[None, :], J, V)
        return {"p_a": float(p_a[0]), "p_e": float(p_e[0]), "n_raters": float(n_raters)}

    return _estimate(["conger_kappa"], y + 1, rated, stat, reason, boot, totals=components)[0]


def pairwise_cohen_kappa(
    labels: ArrayLike,
    n_categories: int,
    *,
    annotators: Sequence[Any] | None = None,
    n_boot: int = 0,
    seed: SeedLike = 0,
    confidence: float = 0.95,
) -> PairwiseKappa:
    """Cohen's kappa for every pair of annotators (their mean is Light's kappa).

    Parameters
    ----------
    labels : array_like, shape (U, J)
        Label matrix; ``-1`` or NaN = no rating.
    n_categories : int
        V.
    annotators : sequence, length J, optional
        Names (default ``0..J-1``).
    n_boot, seed, confidence
        Bootstrap of each pair's kappa; none by default (each pair carries its analytic SE).

    Returns
    -------
    PairwiseKappa

    Examples
    --------
    Kappas 6/11, 8/13 and 2/7; Light's kappa is their mean, 1448/3003:

    >>> labels = np.array([[0, 0, 0], [0, 1, 0], [1, 1, 1], [1, 1, 1], [1, 1, 0]])
    >>> pk = pairwise_cohen_kappa(labels, 2, annotators=["A", "B", "C"])
    >>> [(pk.annotators[a], pk.annotators[b], round(k.value, 6)) for a, b, k in pk.pairs]
    [('A', 'B', 0.545455), ('A', 'C', 0.615385), ('B', 'C', 0.285714)]
    >>> round(pk.light_kappa, 6)
    0.482184
    """
    y = as_codes(labels, n_categories)
    J = y.shape[1]
    names = tuple(range(J)) if annotators is None else tuple(annotators)
    if len(names) != J:
        raise ValueError(f"annotators has {len(names)} names but the label matrix has {J} columns.")
    pairs = tuple(
        (a, b, cohen_kappa(y[:, a], y[:, b], n_categories, n_boot=n_boot, seed=seed, confidence=confidence))
        for a in range(J)
        for b in range(a + 1, J)
    )
    return PairwiseKappa(names, pairs)


def prevalence_warning(
    counts: ArrayLike, *, categories: Sequence[Any] | None = None, threshold: float = 0.9
) -> str | None:
    """Warn when one category holds more than ``threshold`` of the pairable values.

    Under such prevalence kappa-type coefficients and alpha drop towards 0 even when raw
    agreement is high (the kappa paradox, Feinstein & Cicchetti 1990), while AC1 stays high.

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
    categories : sequence, length V, optional
        Names for the message.
    threshold : float
        Share above which to warn (strictly greater).

    Returns
    -------
    str or None

    Examples
    --------
    >>> tc3 = np.repeat([[0, 2], [1, 1]], [90, 10], axis=0)
    >>> prevalence_warning(tc3, categories=["harmful", "safe"])[:46]
    'Category safe holds 95.0% of the 200 pairable '
    >>> prevalence_warning([[2, 0], [1, 1], [0, 2]]) is None
    True
    """
    n_all = _check_counts(counts)
    n_c = n_all[n_all.sum(axis=1) >= 2].sum(axis=0)
    n = int(n_c.sum())
    if n == 0:
        return None
    k = int(np.argmax(n_c))
    share = n_c[k] / n
    if share <= threshold:
        return None
    name = k if categories is None else list(categories)[k]
    return (
        f"Category {name!s} holds {share:.1%} of the {n} pairable values; under such prevalence "
        "kappa and alpha are depressed even when raw agreement is high, so read them together "
        "with AC1, percent agreement and category-specific agreement."
    )


def dropped_votes(
    counts: ArrayLike, dropped: ArrayLike | None = None, labels: Sequence[str] = ("unsure",)
) -> DroppedVotes:
    """How many votes a label set treats as missing, and what that costs in pairable units.

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
        The count matrix without the dropped votes.
    dropped : array_like of int, shape (U,), optional
        Votes dropped per unit (e.g. the ``unsure`` column of the 3-way count matrix); None =
        nothing was dropped.
    labels : sequence of str
        The verdicts that were dropped, for the record.

    Returns
    -------
    DroppedVotes

    Examples
    --------
    Three units rated by three reviewers; unit 2 had one unsure vote, unit 3 two of them, so
    unit 3 has a single vote left and is no longer pairable:

    >>> d = dropped_votes([[2, 1], [1, 1], [1, 0]], [0, 1, 2])
    >>> d.n_votes, d.n_dropped, round(d.share, 3), d.n_units_with_dropped, d.n_units_unpairable
    (6, 3, 0.333, 2, 1)
    """
    n_all = _check_counts(counts)
    m = n_all.sum(axis=1)
    raw = np.zeros(len(m), dtype=np.int64) if dropped is None else np.asarray(dropped)
    if raw.shape != m.shape:
        raise ValueError(f"dropped must have one entry per unit ({len(m)}); got shape {raw.shape}.")
    whole = raw.dtype.kind in "iu" or (
        raw.dtype.kind == "f" and bool(np.isfinite(raw).all() and (raw == np.round(raw)).all())
    )
    if not whole or (raw < 0).any():
        raise ValueError("dropped must hold non-negative whole vote counts, one per unit.")
    d = raw.astype(np.int64)
    n_votes, n_dropped = int(m.sum()), int(d.sum())
    total = n_votes + n_dropped
    return DroppedVotes(
        labels=tuple(str(x) for x in labels) if n_dropped or dropped is not None else (),
        n_votes=n_votes,
        n_dropped=n_dropped,
        share=n_dropped / total if total else NAN,
        n_units_with_dropped=int((d > 0).sum()),
        n_units_unpairable=int(((m + d) >= 2).sum() - (m >= 2).sum()),
    )


def agreement_summary(
    counts: ArrayLike,
    categories: Sequence[str],
    *,
    labels: ArrayLike | None = None,
    level: Level = "nominal",
    values: ArrayLike | None = None,
    n_boot: int = 2000,
    seed: SeedLike = 0,
    confidence: float = 0.95,
    prevalence_threshold: float = 0.9,
    dropped: ArrayLike | None = None,
    dropped_labels: Sequence[str] = ("unsure",),
) -> AgreementSummary:
    """Alpha, AC1, Fleiss' kappa, percent, category-specific agreement, Brennan-Prediger for one group.

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
    categories : sequence of str, length V
    labels : array_like, shape (U, J), optional
        The label matrix behind ``counts``; when given, pairwise Cohen's kappa (analytic SEs, no
        bootstrap) and Conger's kappa are added.
    level, values
        Passed to :func:`krippendorff_alpha`.
    n_boot, seed, confidence
        Bootstrap settings. With an int (or None) seed each coefficient is bootstrapped with
        that same seed, so ``summary.alpha`` equals ``krippendorff_alpha(counts, seed=seed)``;
        a Generator is consumed in the order alpha, AC1, Fleiss, percent, category,
        Brennan-Prediger, Conger.
    prevalence_threshold : float
        See :func:`prevalence_warning`.
    dropped : array_like of int, shape (U,), optional
        Votes per unit this label set treats as missing (the binary set's ``unsure`` votes);
        reported in ``summary.dropped`` (see :func:`dropped_votes`), never silently lost.
    dropped_labels : sequence of str
        The verdicts ``dropped`` counts.

    Returns
    -------
    AgreementSummary
        Never raises for undefined coefficients; each carries its ``undefined_reason``.

    Examples
    --------
    Two coders, five units, categories (harmful, safe): A says H H S S S, B says H S S S S.

    >>> labels = np.array([[0, 0], [0, 1], [1, 1], [1, 1], [1, 1]])
    >>> s = agreement_summary(counts_from_codes(labels, 2), ["harmful", "safe"], labels=labels, n_boot=0)
    >>> round(s.alpha.value, 6), round(s.ac1.value, 6), s.percent_agreement.value, s.category_shares
    (0.571429, 0.655172, 0.8, (0.3, 0.7))
    >>> round(s.pairwise_cohen.light_kappa, 6), s.prevalence_warning is None
    (0.545455, True)
    >>> round(s.brennan_prediger.value, 6), round(s.conger_kappa.value, 6)
    (0.6, 0.545455)

    The binary label set of the same reviewers, after two ``unsure`` votes on a sixth unit were
    dropped: the summary says so.

    >>> s = agreement_summary(np.array([[2, 0], [1, 1], [0, 2], [0, 2], [0, 2], [0, 0]]), ["harmful", "safe"],
    ...                       dropped=[0, 0, 0, 0, 0, 2], n_boot=0)
    >>> s.dropped.n_dropped, round(s.dropped.share, 3), s.dropped.n_units_unpairable
    (2, 0.167, 1)
    """
    n_all = _check_counts(counts)
    U, V = n_all.shape
    cats = tuple(str(c) for c in categories)
    if len(cats) != V:
        raise ValueError(f"categories has {len(cats)} entries but the count matrix has {V} columns.")
    pairwise = conger = None
    y = None if labels is None else as_codes(labels, V)
    if y is not None:
        if y.shape[0] != U or not np.array_equal(counts_from_codes(y, V), n_all):
            raise ValueError("The label matrix does not match the count matrix; build both from the same data.")
        pairwise = pairwise_cohen_kappa(y, V)
    dropped_record = dropped_votes(n_all, dropped, dropped_labels)
    m = n_all.sum(axis=1)
    n_c = n_all[m >= 2].sum(axis=0)
    n = int(n_c.sum())
    alpha = krippendorff_alpha(n_all, level=level, values=values, n_boot=n_boot, seed=seed, confidence=confidence)
    ac1 = gwet_ac1(n_all, n_boot=n_boot, seed=seed, confidence=confidence)
    fleiss = fleiss_kappa(n_all, n_boot=n_boot, seed=seed, confidence=confidence)
    percent = percent_agreement(n_all, n_boot=n_boot, seed=seed, confidence=confidence)
    per_cat = category_agreement(n_all, categories=cats, n_boot=n_boot, seed=seed, confidence=confidence)
    bp = brennan_prediger(n_all, n_boot=n_boot, seed=seed, confidence=confidence)
    if y is not None:
        conger = conger_kappa(y, V, n_boot=n_boot, seed=seed, confidence=confidence)
    return AgreementSummary(
        categories=cats,
        n_units=U,
        n_rated_units=int((m >= 1).sum()),
        n_pairable_units=int((m >= 2).sum()),
        n_pairable_values=n,
        category_shares=tuple(float(x / n) if n else NAN for x in n_c),
        alpha=alpha,
        ac1=ac1,
        fleiss_kappa=fleiss,
        percent_agreement=percent,
        category_agreement=per_cat,
        pairwise_cohen=pairwise,
        prevalence_warning=prevalence_warning(n_all, categories=cats, threshold=prevalence_threshold),
        brennan_prediger=bp,
        conger_kappa=conger,
        dropped=dropped_record,
    )
