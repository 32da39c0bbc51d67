"""Rogan-Gladen transport: fill a cell's unreviewed clear strata from the judge's pooled Se'/Sp'.

Stages (docs/methods.md 4.4 as amended by issue #13), each vectorised over benchmarks or cells:

1. :func:`pooled_rates`: per benchmark, the donors' design-weighted rates per clear judge label,
   pooled before any prior: ybar_k = sum N_h ybar_h / sum N_h over the donor strata of label k,
   with Kish's effective size n_k = (sum N_h)^2 / sum (N_h^2 / r_h); Se' = T_H / (T_H + T_S),
   Sp' = F_S / (F_S + F_H) (T_k = sum N_h ybar_h, F_k = sum N_h (1 - ybar_h));
2. :func:`label_shift_test`: does the judge have one sensitivity and specificity across the donor
   models? The likelihood-ratio test of the two-phase design (judge labels on every response,
   human labels on a stratified sample): common Se, Sp with a prevalence per model (fitted by
   EM) against a free (q, PPV, FOR) per model, chi^2 with 2 (M - 1) df;
3. :func:`pooling_decision`: may the benchmark borrow, and if not, why;
4. :func:`transport_points`: per cell, the filled strata's rates theta_H = pi Se'/q,
   theta_S = pi (1 - Se')/(1 - q) with pi = RG(q, Se', Sp'), the estimate and its variance;
5. :func:`cell_flags`: each cell's flag and note;

and :func:`transport_table`, the per-benchmark diagnostics. The formulas are in the docstring of
:mod:`annotate.stats.scoring`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotate.columns import JUDGE_LABELS
from annotate.stats._common import chi2_sf, xlogy
from annotate.stats.scoring._arrays import group_sum
from annotate.stats.scoring.estimator import StratumTerms
from annotate.stats.scoring.strata import H_CODE, S_CODE, Strata

__all__ = [
    "Donors",
    "LabelShiftTest",
    "TransportPoints",
    "cell_flags",
    "fill_rates",
    "label_shift_test",
    "pooled_rates",
    "pooling_decision",
    "transport_points",
    "transport_table",
]

_EM_MAX_ITER = 5000
_EM_TOL = 1e-10  # change of the log-likelihood over _EM_CHECK iterations, per benchmark
_EM_CHECK = 25


def _fmt(x: float) -> str:
    return "nan" if not np.isfinite(x) else f"{x:.3g}"


# --------------------------------------------------------------------------------------------
# 1. The donors' pooled rates
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Donors:
    """The judge's clear-stratum rates pooled over each benchmark's donor cells.

    Column k of the (B, 2) attributes is the judge-label code (``H_CODE`` = 0, ``S_CODE`` = 1).

    Attributes
    ----------
    strata : ndarray of bool, shape (S,)
        Donor strata: clear strata with r_h > 0 of donor cells (no under-reviewed clear stratum).
    population : ndarray of float64, shape (B, 2)
        sum N_h over the donor strata of each label.
    rate : ndarray of float64, shape (B, 2)
        ybar_k = sum N_h ybar_h / sum N_h (NaN without donor strata).
    n_eff : ndarray of float64, shape (B, 2)
        Kish's effective sample size (sum N_h)^2 / sum (N_h^2 / r_h).
    var_rate : ndarray of float64, shape (B, 2)
        Variance of the Beta(ybar_k n_k + 1/2, (1 - ybar_k) n_k + 1/2) posterior the draws use.
    sensitivity, specificity : ndarray of float64, shape (B,)
        Se' = T_H / (T_H + T_S), Sp' = F_S / (F_S + F_H).
    var_sensitivity, var_specificity : ndarray of float64, shape (B,)
        Delta-method variances of Se' and Sp' from ``var_rate``.
    youden : ndarray of float64, shape (B,)
        J = Se' + Sp' - 1.
    n_donors, n_targets : ndarray of float64, shape (B,)
        Donor cells and target cells (a clear stratum to fill) per benchmark.
    """

    strata: NDArray[np.bool_]
    population: NDArray[np.float64]
    rate: NDArray[np.float64]
    n_eff: NDArray[np.float64]
    var_rate: NDArray[np.float64]
    sensitivity: NDArray[np.float64]
    specificity: NDArray[np.float64]
    var_sensitivity: NDArray[np.float64]
    var_specificity: NDArray[np.float64]
    youden: NDArray[np.float64]
    n_donors: NDArray[np.float64]
    n_targets: NDArray[np.float64]

    def partials(self) -> tuple[NDArray[np.float64], ...]:
        """dSe/dtheta_H, dSe/dtheta_S, dSp/dtheta_H, dSp/dtheta_S per benchmark (B,) each."""
        NpH, NpS = self.population[:, H_CODE], self.population[:, S_CODE]
        TH, TS = NpH * self.rate[:, H_CODE], NpS * self.rate[:, S_CODE]
        FH, FS = NpH - TH, NpS - TS
        with np.errstate(divide="ignore", invalid="ignore"):
            return (
                NpH * TS / (TH + TS) ** 2,
                -NpS * TH / (TH + TS) ** 2,
                NpH * FS / (FS + FH) ** 2,
                -NpS * FH / (FS + FH) ** 2,
            )


def pooled_rates(st: Strata, terms: StratumTerms) -> Donors:
    """The donors' pooled rates per benchmark and clear label, Se' and Sp', analytically.

    Parameters
    ----------
    st : Strata
    terms : StratumTerms
        Of the run's counts (donors are the cells with ``terms.donor``).

    Returns
    -------
    Donors
        Pooling the counts first and putting one Jeffreys prior on the pooled effective counts
        keeps the draws centred on Se' and Sp' (a prior per donor stratum adds 1/2 a harmful
        response to every donor's judge-safe stratum and drags Se' down).
    """
    cell, lab, N = st.cell, st.label, st.N
    r, clear = terms.r, terms.clear
    B = len(st.benchmarks)
    bench_s = st.bench[cell]
    dsel = clear & terms.donor[cell] & (r > 0)
    key = bench_s * 2 + np.where(lab == H_CODE, H_CODE, S_CODE)
    yb0 = np.nan_to_num(terms.ybar)
    Np = group_sum(np.where(dsel, N, 0.0), key, 2 * B).reshape(B, 2)
    T = group_sum(np.where(dsel, N * yb0, 0.0), key, 2 * B).reshape(B, 2)
    K = group_sum(np.where(dsel, N * N / np.where(r > 0, r, 1.0), 0.0), key, 2 * B).reshape(B, 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(Np > 0, T / Np, np.nan)
        n_eff = np.where(K > 0, Np * Np / K, 0.0)
        a = rate * n_eff + 0.5
        b = (1.0 - rate) * n_eff + 0.5
        var_rate = a * b / ((a + b) ** 2 * (a + b + 1.0))
    TH, TS = T[:, H_CODE], T[:, S_CODE]
    FH, FS = Np[:, H_CODE] - TH, Np[:, S_CODE] - TS
    with np.errstate(divide="ignore", invalid="ignore"):
        se_b = TH / (TH + TS)
        sp_b = FS / (FS + FH)
    n_donors = np.bincount(st.bench, weights=terms.donor.astype(float), minlength=B).astype(np.float64, copy=False)
    n_targets = np.bincount(st.bench, weights=terms.target.astype(float), minlength=B).astype(np.float64, copy=False)
    donors = Donors(
        strata=dsel,
        population=Np,
        rate=rate,
        n_eff=n_eff,
        var_rate=var_rate,
        sensitivity=se_b,
        specificity=sp_b,
        var_sensitivity=np.zeros(B),
        var_specificity=np.zeros(B),
        youden=se_b + sp_b - 1.0,
        n_donors=n_donors,
        n_targets=n_targets,
    )
    dSe_H, dSe_S, dSp_H, dSp_S = donors.partials()
    VH, VS = var_rate[:, H_CODE], var_rate[:, S_CODE]
    donors.var_sensitivity[:] = dSe_H**2 * VH + dSe_S**2 * VS
    donors.var_specificity[:] = dSp_H**2 * VH + dSp_S**2 * VS
    return donors


# --------------------------------------------------------------------------------------------
# 2. The label-shift test
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LabelShiftTest:
    """Likelihood-ratio test of one Se and Sp across a benchmark's donor models.

    Attributes
    ----------
    tested : ndarray of bool, shape (B,)
        The test was run (the benchmark has a cell to fill and at least two donor models).
    lr_stat, df, p_value : ndarray of float64, shape (B,)
        LR = 2 (ll_saturated - ll_common), its degrees of freedom (2 (M - 1) when every donor has
        both clear labels), chi^2 survival function; NaN where not tested.
    sensitivity, specificity : ndarray of float64, shape (B,)
        The maximum-likelihood common Se and Sp (NaN where not tested).
    n_models : ndarray of float64, shape (B,)
        Donor models in the test.
    iterations : int
        EM iterations used (all benchmarks at once).
    """

    tested: NDArray[np.bool_]
    lr_stat: NDArray[np.float64]
    df: NDArray[np.float64]
    p_value: NDArray[np.float64]
    sensitivity: NDArray[np.float64]
    specificity: NDArray[np.float64]
    n_models: NDArray[np.float64]
    iterations: int = 0


def _two_phase_ll(
    NH: NDArray[np.float64],
    NS: NDArray[np.float64],
    yH: NDArray[np.float64],
    rH: NDArray[np.float64],
    yS: NDArray[np.float64],
    rS: NDArray[np.float64],
    q: NDArray[np.float64],
    ppv: NDArray[np.float64],
    fo: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Per-cell log-likelihood: judge labels ~ Bin(N_C, q), human labels within each stratum."""
    return (
        xlogy(NH, q)
        + xlogy(NS, 1.0 - q)
        + xlogy(yH, ppv)
        + xlogy(rH - yH, 1.0 - ppv)
        + xlogy(yS, fo)
        + xlogy(rS - yS, 1.0 - fo)
    )


def label_shift_test(st: Strata, terms: StratumTerms, donors: Donors, need: NDArray[np.bool_]) -> LabelShiftTest:
    """Test whether the judge's sensitivity and specificity are common to the donor models.

    Parameters
    ----------
    st : Strata
    terms : StratumTerms
    donors : Donors
        The donor cells and the pooled Se', Sp' (the EM's starting point).
    need : ndarray of bool, shape (B,)
        Benchmarks to test (those with a cell to fill and defined Se', Sp' with J > 0).

    Returns
    -------
    LabelShiftTest

    Notes
    -----
    Per donor cell m (the waves of a judge label summed): N_H, N_S judge labels, y_k harmful among
    r_k resolved reviewed items of label k. Every response has a judge label; the reviewed ones
    are a stratified sample, so the likelihood is Bin(N_C, q_m) for the judge labels times, per
    stratum, Bin(r_k, P(Y = 1 | J = k)) (ignorable sampling within strata). Saturated: (q, PPV,
    FOR) free per model, MLE N_H/N_C, y_H/r_H, y_S/r_S. Restricted (label shift): a prevalence
    pi_m per model and one Se, Sp, so q = pi Se + (1 - pi)(1 - Sp), PPV = pi Se / q,
    FOR = pi (1 - Se) / (1 - q); fitted by EM (the unreviewed responses' Y is the missing data),
    started at the pooled Se', Sp'. df = sum_m (k_m - 1) - 2 with k_m = 1 + [r_H > 0] + [r_S > 0]
    free saturated parameters per model (= 2 (M - 1) when every donor has both clear labels).
    Predictive values differ across models under pure label shift, which is why testing them
    (the earlier check) refused valid pooling; Se and Sp are what borrowing needs.
    """
    B = len(st.benchmarks)
    nan = np.full(B, np.nan)
    out = LabelShiftTest(
        tested=np.zeros(B, dtype=bool),
        lr_stat=nan.copy(),
        df=nan.copy(),
        p_value=nan.copy(),
        sensitivity=nan.copy(),
        specificity=nan.copy(),
        n_models=donors.n_donors.copy(),
    )
    run = need & (donors.n_donors >= 2)
    if not run.any():
        return out
    C, cell, lab = st.C, st.cell, st.label
    r = terms.r
    sel_c = terms.donor & run[st.bench]
    idx = np.flatnonzero(sel_c)
    cells = np.full(C, -1, dtype=np.int64)
    cells[idx] = np.arange(len(idx))
    k = len(idx)
    ins = sel_c[cell] & terms.clear & (r > 0)
    g = np.where(ins, cells[cell], 0)

    def csum(values: NDArray[np.float64], label: int) -> NDArray[np.float64]:
        return group_sum(np.where(ins & (lab == label), values, 0.0), g, k)

    NH = csum(st.N, H_CODE)
    NS = csum(st.N, S_CODE)
    yH, rH = csum(terms.y, H_CODE), csum(r, H_CODE)
    yS, rS = csum(terms.y, S_CODE), csum(r, S_CODE)
    NC = NH + NS
    UH, US = NH - rH, NS - rS
    b = st.bench[idx]
    bench_ids = np.flatnonzero(run)
    Se = np.clip(np.nan_to_num(donors.sensitivity, nan=0.9), 1e-6, 1 - 1e-6)
    Sp = np.clip(np.nan_to_num(donors.specificity, nan=0.9), 1e-6, 1 - 1e-6)
    with np.errstate(divide="ignore", invalid="ignore"):
        pi = np.clip((NH / NC + Sp[b] - 1.0) / (Se[b] + Sp[b] - 1.0), 1e-3, 1 - 1e-3)

    def loglik(pi: NDArray[np.float64], Se: NDArray[np.float64], Sp: NDArray[np.float64]) -> NDArray[np.float64]:
        q = pi * Se[b] + (1.0 - pi) * (1.0 - Sp[b])
        with np.errstate(divide="ignore", invalid="ignore"):
            ppv = np.where(q > 0, pi * Se[b] / q, 0.0)
            fo = np.where(q < 1, pi * (1.0 - Se[b]) / (1.0 - q), 0.0)
        ll = _two_phase_ll(NH, NS, yH, rH, yS, rS, q, ppv, fo)
        return np.bincount(b, weights=ll, minlength=B).astype(np.float64, copy=False)

    last = loglik(pi, Se, Sp)
    it = 0
    while it < _EM_MAX_ITER:
        for _ in range(_EM_CHECK):
            # E-step: expected true positives A and false negatives F among each cell's
            # judge-harmful and judge-safe responses; M-step: the closed-form maximisers.
            q = pi * Se[b] + (1.0 - pi) * (1.0 - Sp[b])
            with np.errstate(divide="ignore", invalid="ignore"):
                A = yH + np.where(q > 0, UH * pi * Se[b] / q, 0.0)
                F = yS + np.where(q < 1, US * pi * (1.0 - Se[b]) / (1.0 - q), 0.0)
            pi = np.where(NC > 0, (A + F) / NC, 0.0)
            pos = np.bincount(b, weights=A + F, minlength=B)
            neg = np.bincount(b, weights=NC - A - F, minlength=B)
            with np.errstate(divide="ignore", invalid="ignore"):
                Se = np.where(run & (pos > 0), np.bincount(b, weights=A, minlength=B) / pos, Se)
                Sp = np.where(run & (neg > 0), np.bincount(b, weights=NS - F, minlength=B) / neg, Sp)
        it += _EM_CHECK
        now = loglik(pi, Se, Sp)
        done = np.all(np.abs(now - last)[run] <= _EM_TOL * (1.0 + np.abs(now[run])))
        last = now
        if done:
            break
    with np.errstate(divide="ignore", invalid="ignore"):
        ll_sat = _two_phase_ll(
            NH,
            NS,
            yH,
            rH,
            yS,
            rS,
            np.where(NC > 0, NH / NC, 0.0),
            np.where(rH > 0, yH / rH, 0.0),
            np.where(rS > 0, yS / rS, 0.0),
        )
    lr = np.maximum(2.0 * (np.bincount(b, weights=ll_sat, minlength=B) - last), 0.0)
    kfree = 1.0 + (rH > 0) + (rS > 0)
    dfree = np.bincount(b, weights=kfree - 1.0, minlength=B) - 2.0
    ok = run & (dfree > 0)
    out.tested[ok] = True
    out.lr_stat[ok] = lr[ok]
    out.df[ok] = dfree[ok]
    out.p_value[ok] = [chi2_sf(x, k) for x, k in zip(lr[ok], dfree[ok], strict=True)]  # scipy.stats.chi2.sf
    out.sensitivity[bench_ids] = Se[bench_ids]
    out.specificity[bench_ids] = Sp[bench_ids]
    return LabelShiftTest(
        tested=out.tested,
        lr_stat=out.lr_stat,
        df=out.df,
        p_value=out.p_value,
        sensitivity=np.where(ok, out.sensitivity, np.nan),
        specificity=np.where(ok, out.specificity, np.nan),
        n_models=out.n_models,
        iterations=it,
    )


# --------------------------------------------------------------------------------------------
# 3. Whether to pool
# --------------------------------------------------------------------------------------------


def pooling_decision(
    donors: Donors, test: LabelShiftTest, alpha: float
) -> tuple[NDArray[np.bool_], NDArray[Any], NDArray[Any]]:
    """May each benchmark borrow its donors' Se'/Sp', why not, and a note on the test.

    Returns
    -------
    pooled : ndarray of bool, shape (B,)
    reason : ndarray of object, shape (B,)
        Why not (empty when pooled): no donor, undefined Se' or Sp', J <= 0, or the label-shift
        test rejects at ``alpha``.
    test_note : ndarray of object, shape (B,)
        The test's outcome in words (p-value, or why it was not run).
    """
    B = len(donors.n_donors)
    pooled = np.ones(B, dtype=bool)
    reason = np.full(B, "", dtype=object)
    note = np.full(B, "", dtype=object)
    NpH, NpS = donors.population[:, H_CODE], donors.population[:, S_CODE]
    TH, TS = NpH * np.nan_to_num(donors.rate[:, H_CODE]), NpS * np.nan_to_num(donors.rate[:, S_CODE])
    for b in range(B):  # a handful of benchmarks; strings only
        why = ""
        if donors.n_donors[b] == 0:
            why = "no donor model in the benchmark has enough reviewed clear items"
        elif not (TH[b] + TS[b] > 0):
            why = "donors have no harmful clear response, so sensitivity is undefined"
        elif not (NpH[b] - TH[b] + NpS[b] - TS[b] > 0):
            why = "donors have no safe clear response, so specificity is undefined"
        elif not donors.youden[b] > 0:
            why = f"the judge is uninformative on the donors (Se'+Sp'-1 = {_fmt(donors.youden[b])} <= 0)"
        elif test.tested[b] and test.p_value[b] < alpha:
            why = (
                "the judge's sensitivity and specificity differ across the donor models "
                f"(label-shift LR test p={_fmt(test.p_value[b])} < {alpha:g}, df {int(test.df[b])})"
            )
        if test.tested[b]:
            note[b] = f"label-shift LR test p={_fmt(test.p_value[b])} (df {int(test.df[b])})"
        elif donors.n_targets[b] == 0:
            note[b] = "label-shift test not run: no cell needs transport"
        elif donors.n_donors[b] == 1:
            note[b] = "label-shift test not possible with one donor model: common Se/Sp assumed"
        else:
            note[b] = "label-shift test not run"
        reason[b] = why
        pooled[b] = why == ""
    return pooled, reason, note


# --------------------------------------------------------------------------------------------
# 4. Transport point estimates
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TransportPoints:
    """Rogan-Gladen fills of every cell (used only where the cell is transported).

    Attributes
    ----------
    q : ndarray of float64, shape (C,)
        q' = N_H / N_C (0 without clear responses).
    prevalence : ndarray of float64, shape (C,)
        pi = clip((q' + Sp' - 1)/(Se' + Sp' - 1), 0, 1), the clear responses' harmful share.
    theta : ndarray of float64, shape (C, 2)
        The filled rates P(Y = 1 | J = H) = pi Se'/q' and P(Y = 1 | J = S) = pi (1 - Se')/(1 - q'),
        clipped to [0, 1].
    filled : ndarray of float64, shape (C,)
        N_filled / N, the share of the cell's responses in filled strata.
    point, v_fixed : ndarray of float64, shape (C,)
        The estimate (own strata + fills) and its fixed-prompt variance.
    """

    q: NDArray[np.float64]
    prevalence: NDArray[np.float64]
    theta: NDArray[np.float64]
    filled: NDArray[np.float64]
    point: NDArray[np.float64]
    v_fixed: NDArray[np.float64]


def fill_rates(
    q: NDArray[np.float64], Se: NDArray[np.float64], Sp: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """(pi, theta_H, theta_S, pi inside (0, 1)) from q and Se, Sp (broadcast), label shift.

    pi = clip((q + Sp - 1)/J, 0, 1) with J = max(Se + Sp - 1, 1e-12); theta_H = pi Se / q and
    theta_S = pi (1 - Se)/(1 - q), clipped to [0, 1] (0 where q = 0 or 1 makes them undefined).

    >>> pi, tH, tS, inside = fill_rates(np.array([0.2]), np.array([0.9]), np.array([0.95]))
    >>> round(float(pi[0]), 12), round(float(tH[0]), 12), round(float(tS[0]), 12)
    (0.176470588235, 0.794117647059, 0.022058823529)
    """
    J = np.maximum(Se + Sp - 1.0, 1e-12)
    raw = (q + Sp - 1.0) / J
    pi = np.clip(raw, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        tH = np.where(q > 0, np.clip(pi * Se / q, 0.0, 1.0), 0.0)
        tS = np.where(q < 1, np.clip(pi * (1.0 - Se) / (1.0 - q), 0.0, 1.0), 0.0)
    return pi, tH, tS, (raw > 0) & (raw < 1)


def transport_points(st: Strata, terms: StratumTerms, donors: Donors) -> TransportPoints:
    """Every cell's estimate with its unreviewed clear strata filled from the donors' Se', Sp'.

    Parameters
    ----------
    st : Strata
    terms : StratumTerms
        Own strata (r_h > 0) and strata to fill of each cell.
    donors : Donors
        Se', Sp' and the variances of the pooled rates of the cell's benchmark.

    Returns
    -------
    TransportPoints
        p = sum_{own} W_h ybar_h + sum_{fill} W_h theta_{k(h)}; V_fixed = the own strata's terms
        + sum_{fill} W_h^2 theta (1 - theta) / N_h (the unknown labels of these prompts) + the
        delta-method terms of the pooled rates, g_H^2 Var(ybar_H) + g_S^2 Var(ybar_S) with
        g = d p / d ybar_k through Se' and Sp'.
    """
    C, cell, lab, N = st.C, st.cell, st.label, st.N
    NH, NC = terms.NH, terms.NC
    bc = st.bench
    Se_c, Sp_c = donors.sensitivity[bc], donors.specificity[bc]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(NC > 0, NH / NC, 0.0)
    pi, tH, tS, inside = fill_rates(q, np.nan_to_num(Se_c), np.nan_to_num(Sp_c))
    fH = group_sum(np.where(terms.fill & (lab == H_CODE), N, 0.0), cell, C)
    fS = group_sum(np.where(terms.fill & (lab == S_CODE), N, 0.0), cell, C)
    Ncell = st.N_cell
    point = terms.own_point + (fH * tH + fS * tS) / Ncell
    binom = (fH * tH * (1.0 - tH) + fS * tS * (1.0 - tS)) / Ncell**2
    # d p / d Se and d Sp (pi varies only inside (0, 1); a clipped theta does not vary)
    J = np.maximum(Se_c + Sp_c - 1.0, 1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        dpi_se = np.where(inside, -pi / J, 0.0)
        dpi_sp = np.where(inside, (1.0 - pi) / J, 0.0)
        okH = (q > 0) & (tH > 0) & (tH < 1)
        okS = (q < 1) & (tS > 0) & (tS < 1)
        dtH_se = np.where(okH, (pi + Se_c * dpi_se) / q, 0.0)
        dtH_sp = np.where(okH, Se_c * dpi_sp / q, 0.0)
        dtS_se = np.where(okS, (-pi + (1.0 - Se_c) * dpi_se) / (1.0 - q), 0.0)
        dtS_sp = np.where(okS, (1.0 - Se_c) * dpi_sp / (1.0 - q), 0.0)
    g_se = (fH * dtH_se + fS * dtS_se) / Ncell
    g_sp = (fH * dtH_sp + fS * dtS_sp) / Ncell
    dSe_H, dSe_S, dSp_H, dSp_S = (np.nan_to_num(a)[bc] for a in donors.partials())
    gH = g_se * dSe_H + g_sp * dSp_H
    gS = g_se * dSe_S + g_sp * dSp_S
    VH, VS = np.nan_to_num(donors.var_rate[bc, H_CODE]), np.nan_to_num(donors.var_rate[bc, S_CODE])
    return TransportPoints(
        q=q,
        prevalence=pi,
        theta=np.column_stack([tH, tS]),
        filled=(fH + fS) / Ncell,
        point=point,
        v_fixed=terms.own_v + binom + gH**2 * VH + gS**2 * VS,
    )


# --------------------------------------------------------------------------------------------
# 5. Flags and notes
# --------------------------------------------------------------------------------------------


def cell_flags(
    st: Strata,
    terms: StratumTerms,
    donors: Donors,
    reason: NDArray[Any],
    test_note: NDArray[Any],
    use_tr: NDArray[np.bool_],
    min_reviewed: int,
) -> tuple[NDArray[Any], NDArray[Any]]:
    """Each cell's flag and note (strings are built for flagged cells only).

    Parameters
    ----------
    st : Strata
    terms : StratumTerms
    donors : Donors
    reason, test_note : ndarray of object, shape (B,)
        From :func:`pooling_decision`.
    use_tr : ndarray of bool, shape (C,)
        The cell is transported.
    min_reviewed : int

    Returns
    -------
    flag, note : ndarray of object, shape (C,)
        ``"ok"``; ``"not estimable: ..."`` (an ambiguous stratum without a resolved item, or a
        clear one where transport is not possible); ``"transport"`` (note: the filled strata,
        Se', Sp', donors, the label-shift test); ``"low n: ..."`` (a clear stratum with fewer
        than ``min_reviewed`` resolved items keeps its own estimate).
    """
    C, cell, lab, N, r = st.C, st.cell, st.label, st.N, terms.r
    amb_missing, clear_missing = terms.amb_missing, terms.clear_missing
    flag = np.full(C, "ok", dtype=object)
    note = np.full(C, "", dtype=object)
    flagged = np.flatnonzero(amb_missing | clear_missing | terms.low_cell)
    if not len(flagged):
        return flag, note
    fr = st.frame
    rows = np.flatnonzero((terms.missing | terms.under) & np.isin(cell, flagged))
    miss_desc: dict[int, list[str]] = {}
    low_desc: dict[int, list[str]] = {}
    for i in rows:
        text = f"'{str(fr.at[i, 'stratum'])}' ({JUDGE_LABELS[lab[i]]}, N={int(N[i])}, resolved {int(r[i])})"
        (miss_desc if terms.missing[i] else low_desc).setdefault(int(cell[i]), []).append(text)
    for c in flagged:
        b = st.bench[c]
        missing = "; ".join(miss_desc.get(int(c), []))
        low = "; ".join(low_desc.get(int(c), []))
        low_text = (
            f"low n: clear strata under min_reviewed={min_reviewed} keep their own estimate ({low})" if low else ""
        )
        if amb_missing[c]:
            flag[c] = f"not estimable: an ambiguous stratum has no resolved reviewed item: {missing}"
        elif use_tr[c]:
            flag[c] = "transport"
            parts = [
                f"filled by Rogan-Gladen transport: {missing}",
                f"Se'={donors.sensitivity[b]:.4f}, Sp'={donors.specificity[b]:.4f} pooled over "
                f"{int(donors.n_donors[b])} donor model(s)",
                str(test_note[b]),
                "the cell's reviewed strata keep their own estimate",
            ]
            if low_text:
                parts.append(low_text)
            note[c] = "; ".join(p for p in parts if p)
        elif clear_missing[c]:
            why = reason[b] if min_reviewed > 0 else f"transport disabled (min_reviewed={min_reviewed})"
            flag[c] = (
                f"not estimable: a clear stratum has no resolved reviewed item ({missing}); "
                f"transport not possible: {why}"
            )
        else:
            flag[c] = f"low n: clear strata under min_reviewed={min_reviewed} ({low})"
            note[c] = "per-cell stratified estimate kept (transport fills only strata without a resolved reviewed item)"
    return flag, note


# --------------------------------------------------------------------------------------------
# Diagnostics
# --------------------------------------------------------------------------------------------

#: Columns of :func:`transport_table`.
TRANSPORT_COLUMNS = (
    "benchmark",
    "n_donors",
    "n_targets",
    "sensitivity",
    "specificity",
    "se_sensitivity",
    "se_specificity",
    "lr_stat",
    "df",
    "p_value",
    "sensitivity_mle",
    "specificity_mle",
    "pooled",
    "reason",
    "note",
)


def transport_table(
    st: Strata,
    donors: Donors,
    test: LabelShiftTest,
    pooled: NDArray[np.bool_],
    reason: NDArray[Any],
    note: NDArray[Any],
) -> pd.DataFrame:
    """One row per benchmark with the donors' rates, the label-shift test and the decision.

    Returns
    -------
    DataFrame, B rows
        :data:`TRANSPORT_COLUMNS`: Se', Sp' and their standard errors, the LR statistic, df and
        p-value with the common-Se/Sp MLE (NaN where the test was not run), ``pooled``,
        ``reason`` (why not) and ``note`` (the test in words).
    """
    return pd.DataFrame(
        {
            "benchmark": np.asarray(st.benchmarks, dtype=object),
            "n_donors": donors.n_donors.astype(int),
            "n_targets": donors.n_targets.astype(int),
            "sensitivity": donors.sensitivity,
            "specificity": donors.specificity,
            "se_sensitivity": np.sqrt(donors.var_sensitivity),
            "se_specificity": np.sqrt(donors.var_specificity),
            "lr_stat": test.lr_stat,
            "df": test.df,
            "p_value": test.p_value,
            "sensitivity_mle": test.sensitivity,
            "specificity_mle": test.specificity,
            "pooled": pooled,
            "reason": reason,
            "note": note,
        },
        columns=list(TRANSPORT_COLUMNS),
    )
