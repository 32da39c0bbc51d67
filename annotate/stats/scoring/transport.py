"""Rogan-Gladen transport: borrow the judge's pooled clear-stratum Se'/Sp' for under-reviewed cells.

Stages (methods.md 4.4), each vectorised over benchmarks or cells:

1. :func:`heterogeneity_test`: per (benchmark, clear judge label), the likelihood-ratio test of
   logit Y ~ model (per-model binomial log-likelihoods of the resolved items against the pooled
   binomial), chi^2 with (models with resolved items - 1) df;
2. :func:`donor_rates`: the donors' Se' = T_H / (T_H + T_S), Sp' = F_S / (F_S + F_H) and their
   delta-method variances, and whether the benchmark may pool;
3. :func:`transport_points`: p_transport = (N_C/N) RG(q', Se', Sp') + sum_U W_h ybar_h and its
   variances;
4. :func:`cell_flags`: each cell's flag and note;

and :func:`transport_table`, the per-(benchmark, clear label) diagnostics. The formulas are in
the docstring of :mod:`annotate.stats.scoring`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import special, stats

from annotate.columns import CLEAR_LABELS, JUDGE_LABELS
from annotate.stats.scoring._arrays import group_sum
from annotate.stats.scoring.estimator import StratumTerms
from annotate.stats.scoring.strata import H_CODE, S_CODE, Strata

__all__ = [
    "Donors",
    "Heterogeneity",
    "TransportPoints",
    "cell_flags",
    "donor_rates",
    "heterogeneity_test",
    "transport_points",
    "transport_table",
]


def _fmt(x: float) -> str:
    return "nan" if not np.isfinite(x) else f"{x:.3g}"


# --------------------------------------------------------------------------------------------
# 1. Heterogeneity test
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Heterogeneity:
    """LR test of logit Y ~ model per (benchmark, clear judge label).

    Column k of every attribute is the judge-label code (``H_CODE`` = 0, ``S_CODE`` = 1).

    Attributes
    ----------
    lr_stat : ndarray of float64, shape (B, 2)
        LR = max(2 (sum_m ll_m - ll_pooled), 0).
    df : ndarray of float64, shape (B, 2)
        Models with resolved items - 1 (at least 0).
    p_value : ndarray of float64, shape (B, 2)
        chi^2 survival function of ``lr_stat`` on ``df``; NaN where df = 0.
    n_models : ndarray of float64, shape (B, 2)
        Models with resolved items.
    """

    lr_stat: NDArray[np.float64]
    df: NDArray[np.float64]
    p_value: NDArray[np.float64]
    n_models: NDArray[np.float64]


def heterogeneity_test(st: Strata, y: NDArray[np.float64], r: NDArray[np.float64]) -> Heterogeneity:
    """Test whether P(Y | clear judge label) differs across the models of each benchmark.

    Parameters
    ----------
    st : Strata
    y, r : ndarray of float64, shape (S,)
        Harmful and resolved reviewed items per stratum; the waves of one judge label in a cell
        are summed (Y_c, R_c).

    Returns
    -------
    Heterogeneity
        With p_c = Y_c / R_c and p_b = sum_c Y_c / sum_c R_c over the benchmark's cells with
        R_c > 0: ll = Y log p + (R - Y) log(1 - p), LR = 2 (sum_c ll_c - ll_b), df = #cells - 1.
    """
    C, cell, lab = st.C, st.cell, st.label
    B = len(st.benchmarks)
    lr = np.full((B, 2), np.nan)
    dfree = np.zeros((B, 2))
    pval = np.full((B, 2), np.nan)
    nmod = np.zeros((B, 2))
    for k in (H_CODE, S_CODE):
        sel = lab == k
        Yc = group_sum(np.where(sel, y, 0.0), cell, C)
        Rc = group_sum(np.where(sel, r, 0.0), cell, C)
        has = Rc > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            pc = np.where(has, Yc / Rc, 0.0)
            ll_own = special.xlogy(Yc, pc) + special.xlogy(Rc - Yc, 1.0 - pc)
        Yb = np.bincount(st.bench, weights=Yc, minlength=B)
        Rb = np.bincount(st.bench, weights=Rc, minlength=B)
        with np.errstate(divide="ignore", invalid="ignore"):
            pb = np.where(Rb > 0, Yb / Rb, 0.0)
        ll_pool = special.xlogy(Yb, pb) + special.xlogy(Rb - Yb, 1.0 - pb)
        ll1 = np.bincount(st.bench, weights=np.where(has, ll_own, 0.0), minlength=B)
        nmod[:, k] = np.bincount(st.bench, weights=has.astype(float), minlength=B)
        dfree[:, k] = np.maximum(nmod[:, k] - 1, 0)
        lr[:, k] = np.maximum(2.0 * (ll1 - ll_pool), 0.0)
        ok = dfree[:, k] > 0
        pval[ok, k] = stats.chi2.sf(lr[ok, k], dfree[ok, k])
    return Heterogeneity(lr_stat=lr, df=dfree, p_value=pval, n_models=nmod)


# --------------------------------------------------------------------------------------------
# 2. Donors' Se', Sp' and the pooling decision
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Donors:
    """The judge's clear-stratum sensitivity and specificity pooled over each benchmark's donors.

    Attributes
    ----------
    strata : ndarray of bool, shape (S,)
        Donor strata: clear strata with r_h > 0 of cells without an under-reviewed clear stratum.
    sensitivity, specificity : ndarray of float64, shape (B,)
        Se' = T_H / (T_H + T_S), Sp' = F_S / (F_S + F_H).
    var_sensitivity, var_specificity : ndarray of float64, shape (B,)
        (T_S^2 Var T_H + T_H^2 Var T_S) / (T_H + T_S)^4 and likewise for Sp'.
    youden : ndarray of float64, shape (B,)
        J = Se' + Sp' - 1.
    n_donors, n_targets : ndarray of float64, shape (B,)
        Donor cells and target (under-reviewed) cells per benchmark.
    pooled : ndarray of bool, shape (B,)
        The benchmark may pool (``reason`` is empty).
    reason : ndarray of object, shape (B,)
        Why not: no donor, heterogeneity, undefined Se' or Sp', or J <= 0.
    """

    strata: NDArray[np.bool_]
    sensitivity: NDArray[np.float64]
    specificity: NDArray[np.float64]
    var_sensitivity: NDArray[np.float64]
    var_specificity: NDArray[np.float64]
    youden: NDArray[np.float64]
    n_donors: NDArray[np.float64]
    n_targets: NDArray[np.float64]
    pooled: NDArray[np.bool_]
    reason: NDArray[Any]


def donor_rates(st: Strata, terms: StratumTerms, het: Heterogeneity, alpha_het: float) -> Donors:
    """Se' and Sp' per benchmark from the donor cells, analytically, and whether to pool.

    Parameters
    ----------
    st : Strata
    terms : StratumTerms
        Of the run's counts (donors are the cells that are not transport targets).
    het : Heterogeneity
        Pooling is refused where either clear label has p < ``alpha_het``.
    alpha_het : float

    Returns
    -------
    Donors
        Donor totals per benchmark: T_H = sum_H N_h ybar_h, T_S = sum_S N_h ybar_h,
        F_H = sum_H N_h (1 - ybar_h), F_S = sum_S N_h (1 - ybar_h), Var(T) = sum N_h^2 s_h^2 / r_h
        (no finite population correction).
    """
    cell, lab, N = st.cell, st.label, st.N
    r, s2, target, clear = terms.r, terms.s2, terms.target, terms.clear
    B = len(st.benchmarks)
    bench_s = st.bench[cell]
    donor_c = ~target
    dsel = clear & donor_c[cell] & (r > 0)
    Nd = np.where(dsel, N, 0.0)
    yb0 = np.nan_to_num(terms.ybar)
    s2_sup = np.where(dsel & (r > 1), s2, 0.0)
    var_T = np.where(dsel, N * N * s2_sup / np.where(r > 0, r, 1.0), 0.0)
    TH = np.bincount(bench_s, weights=np.where(lab == H_CODE, Nd * yb0, 0.0), minlength=B)
    TS = np.bincount(bench_s, weights=np.where(lab == S_CODE, Nd * yb0, 0.0), minlength=B)
    FH = np.bincount(bench_s, weights=np.where(lab == H_CODE, Nd * (1 - yb0), 0.0), minlength=B)
    FS = np.bincount(bench_s, weights=np.where(lab == S_CODE, Nd * (1 - yb0), 0.0), minlength=B)
    VH = np.bincount(bench_s, weights=np.where(lab == H_CODE, var_T, 0.0), minlength=B)
    VS = np.bincount(bench_s, weights=np.where(lab == S_CODE, var_T, 0.0), minlength=B)
    # (np.bincount with weights returns float64; astype without a copy only tells the type checker)
    n_donors = np.bincount(st.bench, weights=donor_c.astype(float), minlength=B).astype(np.float64, copy=False)
    n_targets = np.bincount(st.bench, weights=target.astype(float), minlength=B).astype(np.float64, copy=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        se_b = TH / (TH + TS)
        sp_b = FS / (FS + FH)
        var_se = (TS**2 * VH + TH**2 * VS) / (TH + TS) ** 4
        var_sp = (FH**2 * VS + FS**2 * VH) / (FS + FH) ** 4
    J_b = se_b + sp_b - 1.0
    pval = het.p_value
    het_reject = np.any(pval < alpha_het, axis=1)
    reason_b = np.full(B, "", dtype=object)
    pooled = np.ones(B, dtype=bool)
    for b in range(B):  # loop over benchmarks (a handful), strings only
        why = ""
        if n_donors[b] == 0:
            why = "no donor model in the benchmark has enough reviewed clear items"
        elif het_reject[b]:
            ps = ", ".join(
                f"{JUDGE_LABELS[k]} p={_fmt(pval[b, k])}" for k in (H_CODE, S_CODE) if pval[b, k] < alpha_het
            )
            why = f"heterogeneity across models (LR test, {ps} < {alpha_het:g})"
        elif not (TH[b] + TS[b] > 0):
            why = "donors have no harmful clear response, so sensitivity is undefined"
        elif not (FS[b] + FH[b] > 0):
            why = "donors have no safe clear response, so specificity is undefined"
        elif not J_b[b] > 0:
            why = f"the judge is uninformative on the donors (Se'+Sp'-1 = {_fmt(J_b[b])} <= 0)"
        reason_b[b] = why
        pooled[b] = why == ""
    return Donors(
        strata=dsel,
        sensitivity=se_b,
        specificity=sp_b,
        var_sensitivity=var_se,
        var_specificity=var_sp,
        youden=J_b,
        n_donors=n_donors,
        n_targets=n_targets,
        pooled=pooled,
        reason=reason_b,
    )


# --------------------------------------------------------------------------------------------
# 3. Transport point estimates
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TransportPoints:
    """Rogan-Gladen transport estimates of every cell (used only where the cell is transported).

    Attributes
    ----------
    q : ndarray of float64, shape (C,)
        q' = N_H / N_C (0 without clear responses).
    clear_share : ndarray of float64, shape (C,)
        N_C / N.
    point, v_fixed, v_general : ndarray of float64, shape (C,)
        p_transport and its fixed-prompt and general-estimand variances.
    """

    q: NDArray[np.float64]
    clear_share: NDArray[np.float64]
    point: NDArray[np.float64]
    v_fixed: NDArray[np.float64]
    v_general: NDArray[np.float64]


def transport_points(st: Strata, terms: StratumTerms, donors: Donors) -> TransportPoints:
    """p_transport = (N_C/N) RG(q', Se', Sp') + sum_U W_h ybar_h for every cell, with variances.

    Parameters
    ----------
    st : Strata
    terms : StratumTerms
        N_H, N_C and the ambiguous part (point and variance) of each cell.
    donors : Donors
        Se', Sp' and their variances of the cell's benchmark.

    Returns
    -------
    TransportPoints
        RG = clip((q' + Sp' - 1)/J, 0, 1); Var(RG) = [Var(q) + RG^2 Var(Se') + (1 - RG)^2
        Var(Sp')] / J^2 with Var(q) = 0 (fixed) or q'(1 - q')/N_C (general);
        V = (N_C/N)^2 Var(RG) + sum_U W_h^2 (1 - r_h/N_h) s_h^2 / r_h.
    """
    NH, NC = terms.NH, terms.NC
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(NC > 0, NH / NC, 0.0)
        Sp_c, J_c = donors.specificity[st.bench], donors.youden[st.bench]
        rg = np.clip((q + Sp_c - 1.0) / J_c, 0.0, 1.0)
        var_rg_fixed = (
            rg**2 * donors.var_sensitivity[st.bench] + (1 - rg) ** 2 * donors.var_specificity[st.bench]
        ) / J_c**2
        var_q = np.where(NC > 0, q * (1 - q) / NC, 0.0)
        var_rg_gen = var_rg_fixed + var_q / J_c**2
    wc = NC / st.N_cell
    return TransportPoints(
        q=q,
        clear_share=wc,
        point=wc * rg + terms.amb_point,
        v_fixed=wc**2 * var_rg_fixed + terms.amb_v,
        v_general=wc**2 * var_rg_gen + terms.amb_v,
    )


# --------------------------------------------------------------------------------------------
# 4. Flags and notes
# --------------------------------------------------------------------------------------------


def cell_flags(
    st: Strata,
    terms: StratumTerms,
    het: Heterogeneity,
    donors: Donors,
    use_tr: NDArray[np.bool_],
    min_reviewed: int,
) -> tuple[NDArray[Any], NDArray[Any]]:
    """Each cell's flag and note (strings are built for flagged cells only).

    Parameters
    ----------
    st : Strata
    terms : StratumTerms
    het : Heterogeneity
    donors : Donors
    use_tr : ndarray of bool, shape (C,)
        The cell is transported.
    min_reviewed : int

    Returns
    -------
    flag, note : ndarray of object, shape (C,)
        ``"ok"``; ``"not estimable: ..."`` (an ambiguous stratum without a resolved item, or a
        clear one where transport is not possible); ``"transport"`` (note: Se', Sp', donors,
        the LR p-values); ``"low n: ..."`` (note: the per-cell estimate is kept).
    """
    C, cell, lab, N, r = st.C, st.cell, st.label, st.N, terms.r
    amb_missing, target, clear_missing = terms.amb_missing, terms.target, terms.clear_missing
    pval, dfree, nmod = het.p_value, het.df, het.n_models
    flag = np.full(C, "ok", dtype=object)
    note = np.full(C, "", dtype=object)
    flagged = np.flatnonzero(amb_missing | target | clear_missing)
    if len(flagged):
        fr = st.frame
        bad_rows = np.flatnonzero((terms.missing | terms.under) & np.isin(cell, flagged))
        desc: dict[int, list[str]] = {}
        for i in bad_rows:
            desc.setdefault(int(cell[i]), []).append(
                f"'{str(fr.at[i, 'stratum'])}' ({JUDGE_LABELS[lab[i]]}, N={int(N[i])}, resolved {int(r[i])})"
            )
        for c in flagged:
            b = st.bench[c]
            what = "; ".join(desc.get(int(c), []))
            if amb_missing[c]:
                flag[c] = f"not estimable: an ambiguous stratum has no resolved reviewed item: {what}"
            elif use_tr[c]:
                flag[c] = "transport"
                het_text = ", ".join(
                    f"{JUDGE_LABELS[k]} p={_fmt(pval[b, k])}"
                    if dfree[b, k] > 0
                    else f"{JUDGE_LABELS[k]} untestable ({int(nmod[b, k])} model)"
                    for k in (H_CODE, S_CODE)
                )
                note[c] = (
                    f"under-reviewed clear strata (min_reviewed={min_reviewed}): {what}; "
                    f"Rogan-Gladen with Se'={donors.sensitivity[b]:.4f}, Sp'={donors.specificity[b]:.4f} pooled "
                    f"over {int(donors.n_donors[b])} donor model(s); heterogeneity LR {het_text}"
                )
            elif clear_missing[c]:
                why = donors.reason[b] if target[c] else f"transport disabled (min_reviewed={min_reviewed})"
                flag[c] = (
                    "not estimable: a clear stratum has no resolved reviewed item "
                    f"({what}); transport not possible: {why}"
                )
            else:
                flag[c] = (
                    f"low n: clear strata under min_reviewed={min_reviewed} ({what}); "
                    f"transport not possible: {donors.reason[b]}"
                )
                note[c] = "per-cell stratified estimate kept"
    return flag, note


# --------------------------------------------------------------------------------------------
# Diagnostics
# --------------------------------------------------------------------------------------------


def transport_table(st: Strata, het: Heterogeneity, donors: Donors) -> pd.DataFrame:
    """One row per (benchmark, clear judge label) with the test and the donors' rates.

    Returns
    -------
    DataFrame, 2 B rows
        ``benchmark, judge_label, n_models, lr_stat`` (NaN where df = 0), ``df, p_value,
        sensitivity, specificity, se_sensitivity, se_specificity, n_donors, n_targets, pooled,
        reason`` (the last eight per benchmark, repeated on both rows).
    """
    B = len(st.benchmarks)
    return pd.DataFrame(
        {
            "benchmark": np.repeat(np.asarray(st.benchmarks, dtype=object), 2),
            "judge_label": np.tile(np.array(CLEAR_LABELS, dtype=object), B),
            "n_models": het.n_models.ravel().astype(int),
            "lr_stat": np.where(het.df > 0, het.lr_stat, np.nan).ravel(),
            "df": het.df.ravel().astype(int),
            "p_value": het.p_value.ravel(),
            "sensitivity": np.repeat(donors.sensitivity, 2),
            "specificity": np.repeat(donors.specificity, 2),
            "se_sensitivity": np.repeat(np.sqrt(donors.var_sensitivity), 2),
            "se_specificity": np.repeat(np.sqrt(donors.var_specificity), 2),
            "n_donors": np.repeat(donors.n_donors.astype(int), 2),
            "n_targets": np.repeat(donors.n_targets.astype(int), 2),
            "pooled": np.repeat(donors.pooled, 2),
            "reason": np.repeat(donors.reason, 2),
        }
    )
