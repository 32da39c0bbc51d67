"""Posterior draws of each cell's harmful rate (methods.md 4.3, 4.4).

* Fixed prompts, Polya-Jeffreys (:func:`polya_draws`): the harmful count among the N_h - r_h
  responses of a stratum without a label is X_h ~ BetaBinomial(N_h - r_h, y_h + 1/2,
  r_h - y_h + 1/2), drawn as theta_h ~ Beta(y_h + 1/2, r_h - y_h + 1/2), X_h ~ Binomial(N_h - r_h,
  theta_h); p* = (1/N) sum_h (y_h + X_h).
* Transported cells (:func:`transport_draws`): Se*, Sp* per benchmark from Beta(y_h + 1/2,
  r_h - y_h + 1/2) draws of the donor strata (superpopulation); p* = (N_C/N) RG(q', Se*, Sp*)
  + the Polya draws of the cell's own ambiguous strata.
* General estimand (:func:`general_draws`): W* ~ Dirichlet(N_h + 1/2) per cell (normalised Gamma
  draws), theta*_h ~ Beta(y_h + 1/2, r_h - y_h + 1/2), p* = sum_h W*_h theta*_h (transported:
  q* = W*_H / (W*_H + W*_S)).

One ``numpy.random.Generator`` is consumed in a fixed order: Polya Beta, Polya Binomial, donor
Beta, Gamma, general Beta. Draws are independent across strata, so a run may reuse another
run's Polya draws of the strata whose counts are the same (common random numbers), and the
general step reuses the Polya step's theta draws, which have the same Beta law.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from annotate.stats.scoring._arrays import group_sum
from annotate.stats.scoring.estimator import StratumTerms
from annotate.stats.scoring.strata import H_CODE, S_CODE, U_CODE, Strata
from annotate.stats.scoring.transport import Donors, TransportPoints

__all__ = [
    "GeneralDraws",
    "PolyaDraws",
    "Posterior",
    "TransportDraws",
    "general_draws",
    "polya_draws",
    "posterior_draws",
    "transport_draws",
]

_TINY = 1e-12  # floor of Se* + Sp* - 1 in a draw


def _by_label(values: NDArray[np.float64], keys: NDArray[np.int64], C: int, D: int) -> NDArray[np.float64]:
    """Sums over (cell, judge label) groups, keys = 3 cell + label: (k, D) -> (C, 3, D)."""
    return group_sum(values, keys, 3 * C).reshape(C, 3, D)


@dataclass(frozen=True, eq=False)
class GeneralDraws:
    """General-estimand draws of one run.

    Attributes
    ----------
    total : ndarray of float64, shape (C, D)
        p* (NaN rows for cells that are not estimable).
    ambiguous : ndarray of float64, shape (C, D)
        The ambiguous part sum_U W*_h theta*_h (NaN rows where an ambiguous stratum has r_h = 0).
    shares : tuple of 3 ndarrays of float64, shape (C, D)
        The Dirichlet judge-label shares W*_H, W*_S, W*_U.
    """

    total: NDArray[np.float64]
    ambiguous: NDArray[np.float64]
    shares: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]


@dataclass(frozen=True, eq=False)
class Posterior:
    """The posterior draws of one run of the estimator.

    Attributes
    ----------
    fixed : ndarray of float64, shape (C, D)
        Fixed-prompt p* (NaN rows for cells that are not estimable).
    amb_fixed : ndarray of float64, shape (C, D)
        (1/N) sum_U (y_h + X_h), the ambiguous part (NaN where an ambiguous stratum has r_h = 0).
    y, r : ndarray of float64, shape (S,)
        The counts the draws were made from.
    drawn : ndarray of int64, shape (k,)
        Strata with Polya draws.
    X : ndarray of float64, shape (k, D)
        Their unobserved harmful counts divided by the cell's N.
    general : GeneralDraws or None
        Only for runs asked for the general estimand.
    """

    fixed: NDArray[np.float64]
    amb_fixed: NDArray[np.float64]
    y: NDArray[np.float64]
    r: NDArray[np.float64]
    drawn: NDArray[np.int64]
    X: NDArray[np.float64]
    general: GeneralDraws | None


# --------------------------------------------------------------------------------------------
# Fixed prompts: Polya-Jeffreys
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PolyaDraws:
    """Polya-Jeffreys draws of the strata that enter an estimate with their own counts.

    Attributes
    ----------
    drawn : ndarray of int64, shape (k,)
        Strata drawn (used with their own counts and N_h - r_h > 0).
    X : ndarray of float64, shape (k, D)
        X_h / N per drawn stratum.
    theta : ndarray of float64, shape (k, D), or None
        The theta_h draws, kept only when every drawn stratum was drawn afresh (none reused).
    fixed : ndarray of float64, shape (C, D)
        (1/N) sum_h (y_h + X_h) over the strata used (:func:`posterior_draws` then overwrites
        the transported and not-estimable rows in place).
    amb_fixed : ndarray of float64, shape (C, D)
        The same over the ambiguous strata only.
    """

    drawn: NDArray[np.int64]
    X: NDArray[np.float64]
    theta: NDArray[np.float64] | None
    fixed: NDArray[np.float64]
    amb_fixed: NDArray[np.float64]


def polya_draws(
    st: Strata,
    y: NDArray[np.float64],
    r: NDArray[np.float64],
    uses_own: NDArray[np.bool_],
    rng: np.random.Generator,
    D: int,
    reuse: Posterior | None,
) -> PolyaDraws:
    """Fixed-prompt draws p* = (1/N) sum_h (y_h + X_h) over the strata in ``uses_own``.

    Parameters
    ----------
    st : Strata
    y, r : ndarray of float64, shape (S,)
        Harmful and resolved counts.
    uses_own : ndarray of bool, shape (S,)
        Strata that enter an estimate with their own counts (r_h > 0).
    rng : numpy.random.Generator
        Consumed: Beta then Binomial, (k_fresh, D) each.
    D : int
        Draws per cell.
    reuse : Posterior, optional
        Another run's draws: strata drawn there with the same (y_h, r_h) keep their X_h.

    Returns
    -------
    PolyaDraws
    """
    C, cell, N = st.C, st.cell, st.N
    Ncell_s = st.N_cell[cell]
    clear = st.label != U_CODE
    M = N - r
    idx = np.flatnonzero(uses_own & (M > 0))
    const = np.where(uses_own, y / Ncell_s, 0.0)
    const_clear = group_sum(np.where(clear, const, 0.0), cell, C)
    const_amb = group_sum(np.where(clear, 0.0, const), cell, C)
    X = np.empty((len(idx), D))
    fresh = np.ones(len(idx), dtype=bool)
    if reuse is not None and len(idx):
        # Strata whose counts are the same as in the run being reused keep their draws (the
        # draws are independent across strata, so each run's posterior stays exact).
        pos = np.full(st.S, -1, dtype=np.int64)
        pos[reuse.drawn] = np.arange(len(reuse.drawn))
        same = (pos[idx] >= 0) & (y[idx] == reuse.y[idx]) & (r[idx] == reuse.r[idx])
        X[same] = reuse.X[pos[idx[same]]]
        fresh = ~same
    theta = None
    if fresh.any():
        fi = idx[fresh]
        theta = rng.beta(y[fi, None] + 0.5, r[fi, None] - y[fi, None] + 0.5, size=(len(fi), D))
        X[fresh] = rng.binomial(M[fi, None].astype(np.int64), theta).astype(np.float64) / Ncell_s[fi, None]
    Xk = _by_label(X, (cell * 3 + st.label)[idx], C, D)
    fixed_amb = Xk[:, U_CODE] + const_amb[:, None]
    fixed = Xk[:, H_CODE] + Xk[:, S_CODE]
    fixed += const_clear[:, None]
    fixed += fixed_amb
    return PolyaDraws(
        drawn=idx,
        X=X,
        theta=theta if (theta is not None and fresh.all()) else None,
        fixed=fixed,
        amb_fixed=fixed_amb,
    )


# --------------------------------------------------------------------------------------------
# Transported cells: Se*, Sp* from the donors
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TransportDraws:
    """Draws for the T transported cells.

    Attributes
    ----------
    cells : ndarray of int64, shape (T,)
    specificity : ndarray of float64, shape (T, D)
        Sp* of each cell's benchmark.
    youden : ndarray of float64, shape (T, D)
        max(Se* + Sp* - 1, 1e-12).
    clear_part : ndarray of float64, shape (T, D)
        (N_C/N) clip((q' + Sp* - 1)/J*, 0, 1).
    """

    cells: NDArray[np.int64]
    specificity: NDArray[np.float64]
    youden: NDArray[np.float64]
    clear_part: NDArray[np.float64]


def transport_draws(
    st: Strata,
    y: NDArray[np.float64],
    r: NDArray[np.float64],
    donors: Donors,
    tr: TransportPoints,
    use_tr: NDArray[np.bool_],
    rng: np.random.Generator,
    D: int,
) -> TransportDraws | None:
    """Rogan-Gladen draws of the transported cells' clear part; None if no cell is transported.

    Parameters
    ----------
    st : Strata
    y, r : ndarray of float64, shape (S,)
    donors : Donors
        ``donors.strata`` of the transported cells' benchmarks are drawn.
    tr : TransportPoints
        q' and N_C/N of each cell.
    use_tr : ndarray of bool, shape (C,)
    rng : numpy.random.Generator
        Consumed: one Beta (donor strata, D).
    D : int

    Returns
    -------
    TransportDraws or None
        Se* = sum_H N_h theta_h / sum_C N_h theta_h, Sp* = sum_S N_h (1 - theta_h) /
        sum_C N_h (1 - theta_h) over the benchmark's donor strata.
    """
    tcells = np.flatnonzero(use_tr)
    if not len(tcells):
        return None
    B = len(st.benchmarks)
    bench_s = st.bench[st.cell]
    lab, N = st.label, st.N
    tb = np.unique(st.bench[tcells])
    didx = np.flatnonzero(donors.strata & np.isin(bench_s, tb))
    th = rng.beta(y[didx, None] + 0.5, r[didx, None] - y[didx, None] + 0.5, size=(len(didx), D))
    g = bench_s[didx] * 2 + lab[didx]
    pos_ = group_sum(N[didx, None] * th, g, 2 * B).reshape(B, 2, D)
    neg_ = group_sum(N[didx, None] * (1.0 - th), g, 2 * B).reshape(B, 2, D)
    with np.errstate(divide="ignore", invalid="ignore"):
        Se_d = pos_[:, H_CODE] / (pos_[:, H_CODE] + pos_[:, S_CODE])
        Sp_d = neg_[:, S_CODE] / (neg_[:, S_CODE] + neg_[:, H_CODE])
    bt = st.bench[tcells]
    Jd = np.maximum(Se_d[bt] + Sp_d[bt] - 1.0, _TINY)
    rg_d = np.clip((tr.q[tcells, None] + Sp_d[bt] - 1.0) / Jd, 0.0, 1.0)
    return TransportDraws(cells=tcells, specificity=Sp_d[bt], youden=Jd, clear_part=tr.clear_share[tcells, None] * rg_d)


# --------------------------------------------------------------------------------------------
# General estimand: Dirichlet x Beta
# --------------------------------------------------------------------------------------------


def general_draws(
    st: Strata,
    y: NDArray[np.float64],
    r: NDArray[np.float64],
    polya: PolyaDraws,
    td: TransportDraws | None,
    estimable: NDArray[np.bool_],
    amb_missing: NDArray[np.bool_],
    rng: np.random.Generator,
    D: int,
) -> GeneralDraws:
    """General-estimand draws p* = sum_h W*_h theta*_h per cell.

    W* ~ Dirichlet(N_h + 1/2) per cell (normalised Gamma draws, drawn for every stratum: the
    judge-label shares W*_H, W*_S, W*_U are also the judge-only treatments' general posterior),
    theta*_h ~ Beta(y_h + 1/2, r_h - y_h + 1/2) (Beta(1/2, 1/2) where r_h = 0; such draws only
    reach cells that are NaN or transported, where they are unused). The Polya step's theta
    draws have exactly this Beta law, so the strata drawn there reuse them (fixed and general
    draws of a cell become dependent, which nothing combines).

    Parameters
    ----------
    st : Strata
    y, r : ndarray of float64, shape (S,)
    polya : PolyaDraws
        Its ``theta`` (if kept) replaces the Beta draws of ``polya.drawn``.
    td : TransportDraws or None
        Sp* and J* of the transported cells, whose p* = (W*_H + W*_S) RG(q*, Se*, Sp*) +
        the ambiguous part, q* = W*_H / (W*_H + W*_S).
    estimable, amb_missing : ndarray of bool, shape (C,)
        Rows of ``total`` / ``ambiguous`` set to NaN where false / true.
    rng : numpy.random.Generator
        Consumed: Gamma (S, D), then Beta for the strata without reused theta.
    D : int

    Returns
    -------
    GeneralDraws
    """
    C, N = st.C, st.N
    key = st.cell * 3 + st.label
    G = rng.gamma(N[:, None] + 0.5, size=(st.S, D))
    Gk = _by_label(G, key, C, D)
    shared = polya.drawn if polya.theta is not None else np.zeros(0, dtype=np.int64)
    rest = np.setdiff1d(np.arange(st.S), shared)
    if len(shared) and polya.theta is not None:
        G[shared] *= polya.theta
    if len(rest):
        G[rest] *= rng.beta(y[rest, None] + 0.5, r[rest, None] - y[rest, None] + 0.5, size=(len(rest), D))
    Tk = _by_label(G, key, C, D)
    del G
    GH, GS, GU = Gk[:, H_CODE], Gk[:, S_CODE], Gk[:, U_CODE]
    Gsum = GH + GS + GU
    with np.errstate(divide="ignore", invalid="ignore"):
        amb_gen = Tk[:, U_CODE] / Gsum
        gen = (Tk[:, H_CODE] + Tk[:, S_CODE]) / Gsum + amb_gen
        if td is not None:
            tcells = td.cells
            GC = GH[tcells] + GS[tcells]
            qg = np.where(GC > 0, GH[tcells] / GC, 0.0)
            rg_g = np.clip((qg + td.specificity - 1.0) / td.youden, 0.0, 1.0)
            gen[tcells] = GC / Gsum[tcells] * rg_g + amb_gen[tcells]
        gen[~estimable] = np.nan
        amb_gen[amb_missing] = np.nan
        return GeneralDraws(total=gen, ambiguous=amb_gen, shares=(GH / Gsum, GS / Gsum, GU / Gsum))


# --------------------------------------------------------------------------------------------
# All draws of one run
# --------------------------------------------------------------------------------------------


def posterior_draws(
    st: Strata,
    terms: StratumTerms,
    donors: Donors,
    tr: TransportPoints,
    use_tr: NDArray[np.bool_],
    estimable: NDArray[np.bool_],
    *,
    rng: np.random.Generator,
    D: int,
    general: bool,
    reuse: Posterior | None = None,
) -> Posterior:
    """Fixed-prompt (and optionally general-estimand) posterior draws of one run.

    Parameters
    ----------
    st : Strata
    terms : StratumTerms
        The run's counts and estimability masks.
    donors : Donors
    tr : TransportPoints
    use_tr, estimable : ndarray of bool, shape (C,)
        Transported and estimable cells.
    rng : numpy.random.Generator
    D : int
        Draws per cell.
    general : bool
        Also draw the general estimand.
    reuse : Posterior, optional
        See :func:`polya_draws`.

    Returns
    -------
    Posterior
        Ambiguous strata are drawn whenever they are all resolved (the clear-trusted treatment
        needs them even where the clear part is not estimable); clear strata only for cells
        estimated per cell.
    """
    cell, y, r, clear, amb_missing = st.cell, terms.y, terms.r, terms.clear, terms.amb_missing
    uses_own = (r > 0) & np.where(clear, estimable[cell] & ~use_tr[cell], ~amb_missing[cell])
    polya = polya_draws(st, y, r, uses_own, rng, D, reuse)
    fixed, fixed_amb = polya.fixed, polya.amb_fixed
    td = transport_draws(st, y, r, donors, tr, use_tr, rng, D)
    if td is not None:
        fixed[td.cells] = td.clear_part + fixed_amb[td.cells]
    fixed[~estimable] = np.nan
    fixed_amb[amb_missing] = np.nan
    return Posterior(
        fixed=fixed,
        amb_fixed=fixed_amb,
        y=y,
        r=r,
        drawn=polya.drawn,
        X=polya.X,
        general=general_draws(st, y, r, polya, td, estimable, amb_missing, rng, D) if general else None,
    )
