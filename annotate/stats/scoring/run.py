"""One run of the corrected estimator for one set of counts (the MAR run, a bound, Dawid-Skene).

:func:`run_estimator` chains the stages: the stratified estimator's terms
(:func:`.estimator.stratum_terms`), the donors' pooled rates, the label-shift test and the
pooling decision, the transport fills (:mod:`.transport`), the choice per cell between the two
estimates, the flags, and the draws (:mod:`.posterior`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotate.stats.scoring.estimator import StratumTerms, stratum_terms
from annotate.stats.scoring.posterior import Posterior, posterior_draws
from annotate.stats.scoring.strata import Strata
from annotate.stats.scoring.transport import (
    TransportPoints,
    cell_flags,
    label_shift_test,
    pooled_rates,
    pooling_decision,
    transport_points,
    transport_table,
)

__all__ = ["EstimatorRun", "choose_estimates", "run_estimator"]


@dataclass(frozen=True, eq=False)
class EstimatorRun:
    """Everything one run of the estimator gives, per cell (C rows) unless noted.

    Attributes
    ----------
    point, v_fixed, v_general : ndarray of float64, shape (C,)
        p_hat and its variances (NaN where not estimable).
    method : ndarray of object, shape (C,)
        ``stratified`` / ``transport`` / ``none``.
    flag, note : ndarray of object, shape (C,)
    estimable : ndarray of bool, shape (C,)
    ybar : ndarray of float64, shape (S,)
    amb_point, amb_v : ndarray of float64, shape (C,)
        sum_U W_h ybar_h and sum_U W_h^2 (1 - r_h/N_h) s_h^2 / r_h.
    transport : DataFrame
        :func:`.transport.transport_table`.
    draws : Posterior or None
        None when no draws were asked for.
    open_side : ndarray of bool, shape (C,), optional
        A bound's cells where a corner assignment is not estimable (:func:`.scores._corners`): its
        interval runs to 0 (lower bound) or 1 (upper bound) on that side.
    """

    point: NDArray[np.float64]
    v_fixed: NDArray[np.float64]
    v_general: NDArray[np.float64]
    method: NDArray[Any]
    flag: NDArray[Any]
    note: NDArray[Any]
    estimable: NDArray[np.bool_]
    ybar: NDArray[np.float64]
    amb_point: NDArray[np.float64]
    amb_v: NDArray[np.float64]
    transport: pd.DataFrame
    draws: Posterior | None = None
    open_side: NDArray[np.bool_] | None = None


def choose_estimates(
    terms: StratumTerms, tr: TransportPoints, use_tr: NDArray[np.bool_], N_cell: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], NDArray[Any]]:
    """Per cell, the transported estimate where ``use_tr``, else the stratified one.

    Parameters
    ----------
    terms : StratumTerms
    tr : TransportPoints
    use_tr : ndarray of bool, shape (C,)
    N_cell : ndarray of float64, shape (C,)

    Returns
    -------
    point, v_fixed, v_general : ndarray of float64, shape (C,)
        V_general = V_fixed + p_hat (1 - p_hat) / N (the prompts' sampling variance). NaN where
        not estimable.
    estimable : ndarray of bool, shape (C,)
        No ambiguous stratum with r_h = 0, and transported or no clear stratum with r_h = 0.
    method : ndarray of object, shape (C,)
    """
    amb_missing = terms.amb_missing
    estimable = ~amb_missing & (use_tr | ~terms.clear_missing)
    point = np.where(use_tr, tr.point, terms.point)
    v_fixed = np.where(use_tr, tr.v_fixed, terms.v)
    v_general = v_fixed + point * (1 - point) / N_cell
    point[~estimable] = np.nan
    v_fixed[~estimable] = np.nan
    v_general[~estimable] = np.nan
    method = np.where(~estimable, "none", np.where(use_tr, "transport", "stratified")).astype(object)
    return point, v_fixed, v_general, estimable, method


def run_estimator(
    st: Strata,
    y: NDArray[np.float64],
    r: NDArray[np.float64],
    *,
    min_reviewed: int,
    alpha_het: float,
    rng: np.random.Generator | None,
    D: int,
    general: bool,
    reuse: EstimatorRun | None = None,
    component: NDArray[np.bool_] | None = None,
    donor_counts: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
) -> EstimatorRun:
    """The corrected estimator on counts ``y`` among ``r`` resolved items per stratum.

    Parameters
    ----------
    st : Strata
    y, r : ndarray of float64, shape (S,)
    min_reviewed : int
        Clear strata below it (and not reviewed in full) are flagged and their cells are not
        donors; 0 disables transport.
    alpha_het : float
        Level of the label-shift test.
    rng : numpy.random.Generator or None
        None (or D = 0): no draws.
    D : int
        Draws per cell.
    general : bool
        Also draw the general estimand.
    reuse : EstimatorRun, optional
        A run on the same strata whose draws are reused where the counts agree.
    component : ndarray of bool, shape (S, D), optional
        The fiducial mixture's component per stratum and draw (:func:`.posterior.shared_components`);
        every run of one score set gets the same (common random numbers).
    donor_counts : (y, r), optional
        Other counts for the donors' pooled rates and the label-shift test (the bounds with the
        donors held at their MAR counts); default ``y``, ``r``.

    Returns
    -------
    EstimatorRun
    """
    terms = stratum_terms(st, y, r, min_reviewed)
    dterms = terms if donor_counts is None else stratum_terms(st, donor_counts[0], donor_counts[1], min_reviewed)
    donors = pooled_rates(st, dterms)
    need = np.bincount(st.bench, weights=terms.target.astype(float), minlength=len(st.benchmarks)) > 0
    need &= np.isfinite(donors.youden) & (donors.youden > 0)
    test = label_shift_test(st, dterms, donors, need)
    pooled, reason, test_note = pooling_decision(donors, test, alpha_het)
    tr = transport_points(st, terms, donors)
    use_tr = terms.target & pooled[st.bench] & ~terms.amb_missing
    point, v_fixed, v_general, estimable, method = choose_estimates(terms, tr, use_tr, st.N_cell)
    flag, note = cell_flags(st, terms, donors, reason, test_note, use_tr, min_reviewed)
    draws = None
    if D > 0 and rng is not None:
        draws = posterior_draws(
            st,
            terms,
            donors,
            tr,
            use_tr,
            estimable,
            rng=rng,
            D=D,
            general=general,
            reuse=reuse.draws if reuse is not None else None,
            component=component,
        )
    return EstimatorRun(
        point=point,
        v_fixed=v_fixed,
        v_general=v_general,
        method=method,
        flag=flag,
        note=note,
        estimable=estimable,
        ybar=terms.ybar,
        amb_point=terms.amb_point,
        amb_v=terms.amb_v,
        transport=transport_table(st, donors, test, pooled, reason, test_note),
        draws=draws,
    )
