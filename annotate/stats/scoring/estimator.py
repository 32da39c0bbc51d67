"""The stratified (Horvitz-Thompson) estimator of one cell's harmful rate, per stratum and per cell.

For one set of counts (y_h harmful among r_h resolved items; the MAR run, a bound or the
Dawid-Skene labels), with W_h = N_h / N:

    ybar_h = y_h / r_h,   s_h^2 = r_h ybar_h (1 - ybar_h) / (r_h - 1)   (0 if r_h <= 1)
    p_hat = sum_h W_h ybar_h,   V_fixed = sum_h W_h^2 (1 - r_h/N_h) s_h^2 / r_h

(docs/methods.md 4.2-4.3). :func:`stratum_terms` also works out which strata keep their own estimate,
which are flagged as thinly reviewed, and which have nothing of their own and need transport
(:mod:`.transport`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from annotate.stats.scoring._arrays import group_sum
from annotate.stats.scoring.strata import H_CODE, U_CODE, Strata

__all__ = ["StratumTerms", "stratum_terms"]


@dataclass(frozen=True, eq=False)
class StratumTerms:
    """Per-stratum terms of the stratified estimator for one set of counts, and their cell sums.

    Attributes
    ----------
    y, r : ndarray of float64, shape (S,)
        The counts: y_h harmful among r_h resolved reviewed items.
    W : ndarray of float64, shape (S,)
        W_h = N_h / N.
    clear : ndarray of bool, shape (S,)
        Stratum of a clear judge label (harmful or safe).
    ybar, s2, vterm : ndarray of float64, shape (S,)
        ybar_h = y_h / r_h, s_h^2, and W_h^2 (1 - r_h/N_h) s_h^2 / r_h (NaN where r_h = 0).
    missing : ndarray of bool, shape (S,)
        r_h = 0: the stratum has no resolved reviewed item.
    under : ndarray of bool, shape (S,)
        Under-reviewed clear stratum: r_h < min_reviewed and not reviewed in full (n_h < N_h),
        or r_h = 0. Cells with one are not donors for transport.
    fill : ndarray of bool, shape (S,)
        Clear stratum with r_h = 0 while transport is enabled (min_reviewed > 0): the only
        strata transport fills.
    low : ndarray of bool, shape (S,)
        Under-reviewed clear stratum with r_h >= 1: it keeps its own estimate and is flagged.
    amb_missing, clear_missing, target, low_cell, donor : ndarray of bool, shape (C,)
        The cell has an ambiguous stratum with r_h = 0 / a clear stratum with r_h = 0 / a
        stratum to fill (a transport target) / a low stratum / no under-reviewed clear stratum
        and at least one clear response (a possible donor).
    point, v : ndarray of float64, shape (C,)
        Per-cell p_hat = sum_h W_h ybar_h (NaN if any r_h = 0) and V_fixed.
    own_point, own_v : ndarray of float64, shape (C,)
        The same sums over the strata with r_h > 0 only (the part a transported cell keeps).
    amb_point, amb_v : ndarray of float64, shape (C,)
        The ambiguous strata's share: sum_U W_h ybar_h and sum_U W_h^2 (1 - r_h/N_h) s_h^2 / r_h.
    NH, NC : ndarray of float64, shape (C,)
        N_H (judge-harmful responses) and N_C = N_H + N_S (clear responses) per cell.
    """

    y: NDArray[np.float64]
    r: NDArray[np.float64]
    W: NDArray[np.float64]
    clear: NDArray[np.bool_]
    ybar: NDArray[np.float64]
    s2: NDArray[np.float64]
    vterm: NDArray[np.float64]
    missing: NDArray[np.bool_]
    under: NDArray[np.bool_]
    fill: NDArray[np.bool_]
    low: NDArray[np.bool_]
    amb_missing: NDArray[np.bool_]
    clear_missing: NDArray[np.bool_]
    target: NDArray[np.bool_]
    low_cell: NDArray[np.bool_]
    donor: NDArray[np.bool_]
    point: NDArray[np.float64]
    v: NDArray[np.float64]
    own_point: NDArray[np.float64]
    own_v: NDArray[np.float64]
    amb_point: NDArray[np.float64]
    amb_v: NDArray[np.float64]
    NH: NDArray[np.float64]
    NC: NDArray[np.float64]


def stratum_terms(st: Strata, y: NDArray[np.float64], r: NDArray[np.float64], min_reviewed: int) -> StratumTerms:
    """The stratified estimator's terms for counts ``y`` among ``r`` resolved items per stratum.

    Parameters
    ----------
    st : Strata
        S strata in C cells.
    y, r : ndarray of float64, shape (S,)
        Harmful and resolved reviewed items per stratum (0 <= y_h <= r_h <= N_h).
    min_reviewed : int
        A clear stratum with r_h < ``min_reviewed`` that was not reviewed in full is
        under-reviewed; 0 disables transport.

    Returns
    -------
    StratumTerms
        See its attributes for the formulas.
    """
    C, S = st.C, st.S
    cell, lab, N, n = st.cell, st.label, st.N, st.n
    W = N / st.N_cell[cell]
    clear = lab != U_CODE
    with np.errstate(divide="ignore", invalid="ignore"):
        ybar = np.where(r > 0, y / r, np.nan)
        s2 = np.where(r > 1, r * ybar * (1.0 - ybar) / (r - 1.0), 0.0)
        vterm = np.where(r > 0, W * W * (1.0 - r / N) * s2 / r, np.nan)
    missing = r == 0
    under = clear & (r < min_reviewed) & ((n < N) | missing)
    fill = clear & missing & (min_reviewed > 0)
    low = under & ~missing

    def cany(mask: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return np.bincount(cell, weights=mask.astype(np.float64), minlength=C) > 0

    own_terms = np.where(r > 0, W * np.nan_to_num(ybar), 0.0)
    NC = group_sum(np.where(clear, N, 0.0), cell, C)
    return StratumTerms(
        y=y,
        r=r,
        W=W,
        clear=clear,
        ybar=ybar,
        s2=s2,
        vterm=vterm,
        missing=missing,
        under=under,
        fill=fill,
        low=low,
        amb_missing=cany(missing & ~clear),
        clear_missing=cany(missing & clear),
        target=cany(fill),
        low_cell=cany(low),
        donor=~cany(under) & (NC > 0),
        point=np.add.reduceat(np.where(r > 0, W * ybar, np.nan), st.starts) if S else np.zeros(0),
        v=np.add.reduceat(vterm, st.starts) if S else np.zeros(0),
        own_point=group_sum(own_terms, cell, C),
        own_v=group_sum(np.where(r > 0, np.nan_to_num(vterm), 0.0), cell, C),
        amb_point=group_sum(np.where(clear, 0.0, W * np.nan_to_num(ybar)), cell, C),
        amb_v=group_sum(np.where(clear, 0.0, np.nan_to_num(vterm)), cell, C),
        NH=group_sum(np.where(lab == H_CODE, N, 0.0), cell, C),
        NC=NC,
    )
