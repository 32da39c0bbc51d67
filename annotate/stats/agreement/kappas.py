"""The kappas: Cohen's and the weighted kappas (with their analytic SEs), Brennan-Prediger, Conger, pairwise Cohen.

Cohen's and the weighted kappas take a two-rater contingency table (``*_table``) or two label
vectors; Brennan-Prediger the **count matrix** ``n`` with shape ``(U, V)``; Conger's kappa the
**label matrix** with shape ``(U, J)`` (it needs to know who rated what); pairwise Cohen's
kappa (Light's kappa is their mean) the label matrix too. See
:mod:`annotate.stats.agreement.matrices` for both shapes; notation as in
:mod:`annotate.stats.agreement.coefficients`.

Each runs the one estimation path (:func:`annotate.stats.agreement._estimation._estimate`); the
two-rater kappas add their analytic SE and z test
(:func:`annotate.stats.agreement._analytic._kappa_analytic`, Fleiss, Cohen & Everitt 1969).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from annotate.stats._common import NAN, SeedLike, as_codes
from annotate.stats.agreement._analytic import _kappa_analytic
from annotate.stats.agreement._bootstrap import _Resampling, _Statistic, support_of
from annotate.stats.agreement._estimation import (
    _estimate,
    _pair_agreement,
    _pairable_reason,
    _single_category_reason,
)
from annotate.stats.agreement.coefficients import _percent_statistic
from annotate.stats.agreement.matrices import _check_counts, counts_from_codes
from annotate.stats.agreement.results import Coefficient, PairwiseKappa

# --------------------------------------------------------------------------------------------
# Statistics as (features, finish) pairs
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Public kappas
# --------------------------------------------------------------------------------------------


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
    stat = _kappa_table_statistic(w)
    # Two-rater kappas serve the reviewer diagnostics (docs/methods.md 2.5, 9.10), which have a
    # minimum of their own: the percentile interval, without the rules of issue #23 (9.13).
    res = _estimate([name], cells, np.ones(n, dtype=bool), stat, reason, boot, components=comps, rules=False)[0]
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
    p_a = 0.8 and p_e = 1/2, so BP = 0.3 / 0.5 = 0.6; on the kappa-paradox data (docs/methods.md TC3)
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
    return _estimate(
        ["brennan_prediger"],
        n_all,
        pairable,
        stat,
        reason,
        boot,
        totals=components,
        support=support_of(n_all, minority=False),
    )[0]


def randolph_kappa(
    counts: ArrayLike, *, n_boot: int = 2000, seed: SeedLike = 0, confidence: float = 0.95
) -> Coefficient:
    """Randolph's (2005) free-marginal multirater kappa: (P_o - 1/Q) / (1 - 1/Q).

    P_o is Fleiss' mean pairwise agreement P_bar; with missing ratings, Gwet's p_a over the
    pairable units. This is :func:`brennan_prediger` under its multirater name (statsmodels'
    ``fleiss_kappa(method="randolph")`` on complete data), reported as ``randolph_kappa``.

    Examples
    --------
    Fleiss' (1971) 10 subjects x 14 raters x 5 categories (docs/methods.md TC4): P_bar = 0.378022,
    so (0.378022 - 0.2) / 0.8 = 0.2225275, statsmodels' value:

    >>> counts = [
    ...     [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    ...     [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ... ]
    >>> round(randolph_kappa(counts, n_boot=0).value, 7)
    0.2225275
    """
    res = brennan_prediger(counts, n_boot=n_boot, seed=seed, confidence=confidence)
    return replace(res, name="randolph_kappa")


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

    support = support_of(counts)
    return _estimate(["conger_kappa"], y + 1, rated, stat, reason, boot, totals=components, support=support)[0]


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
