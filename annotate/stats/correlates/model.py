"""The association model: do the text features predict the judge's "ambiguous"? (docs/methods.md section 6)

Pure: numpy, pandas, scipy, statsmodels, scikit-learn and threadpoolctl; no file or environment
access.

:func:`fit_ambiguity_model`: logistic regression of a 0/1 outcome (the judge said "ambiguous") on
the z-scored features, with model and benchmark fixed effects (dummies), cluster-robust standard
errors by prompt (statsmodels ``Logit``, ``cov_type="cluster"``). Odds ratio per SD with a 95 %
interval, Holm-adjusted p-values over the features (statsmodels ``multipletests``), variance
inflation factors on the full design the regression sees (equal to statsmodels'
``variance_inflation_factor``, computed from one Gram matrix), and the cross-validated AUC
(scikit-learn ``LogisticRegression``, folds grouped by prompt) of the features alone against the
fixed effects alone (and of both). An odds ratio inside the null band (default 0.9-1.1 per SD)
is "negligible" whatever its p-value. The fit runs in four named steps: (1)
:func:`annotate.stats.correlates.design._design_matrix` (usable rows, separated levels dropped,
z-scored features and dummies; its conventions are in that module), (2) :func:`_fit_logit`, (3)
:func:`_vif` and :func:`annotate.stats.correlates.auc._cross_validated_aucs`, (4)
:func:`_result_table`.

Conventions worth knowing:

* Separation that remains (a feature or combination predicting the outcome perfectly) is
  detected (non-convergence, fitted probabilities within 1.5e-8 of 0 or 1, a coefficient above
  10 in absolute value) and reported in ``separation`` / ``notes``; the verdicts then say
  "separation: not estimable".
* The AUCs use scikit-learn's default L2 penalty (C = 1), negligible at these n; the fixed-effects
  model is fitted on one weighted row per (model x benchmark cell, outcome), which gives the
  same fit in milliseconds.

:func:`fit_human_harmful_model` is the same regression for "human-adjudicated harmful" among the
judge-ambiguous responses; :func:`annotate.stats.correlates.study.compare_with_study` reads the
verdicts against the study's expected directions
(:data:`annotate.stats.correlates.study.CORRELATES`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from annotate.stats.correlates._clock import Clock
from annotate.stats.correlates.auc import _auc_designs, _cross_validated_aucs
from annotate.stats.correlates.design import _as_array, _Design, _design_matrix, _optional_array
from annotate.stats.correlates.study import _CORRELATE_OF, CORRELATES

__all__ = [
    "AmbiguityModel",
    "fit_ambiguity_model",
    "fit_human_harmful_model",
]


_VERDICT_CONSTANT = "constant: not estimable"
_VERDICT_SEPARATION = "separation: not estimable"


@dataclass
class AmbiguityModel:
    """A fitted association model.

    Attributes
    ----------
    table : DataFrame
        One row per feature column of the fit: correlate, feature, odds_ratio (per SD), ci_low,
        ci_high (95 %), p, p_holm, vif, negligible (OR inside the null band), verdict.
    coefficients : DataFrame
        Every term of the logit (intercept, features, controls, fixed effects): term, coef, se,
        z, p.
    auc_features, auc_fixed_effects, auc_combined : float
        Cross-validated AUC (folds grouped by prompt) of the features alone, the fixed effects
        alone, and both (NaN unless asked for).
    n, n_events, n_clusters : int
        Rows fitted, rows with outcome 1, distinct prompts among them.
    dropped : dict of str to int
        Rows left out, by reason.
    fixed_effects : tuple of str
        The fixed effects in the model (``"model"``, ``"benchmark"``).
    null_band : (float, float)
        Odds ratios per SD inside it are negligible.
    outcome_name : str
        The outcome's word in the verdicts ("ambiguity").
    separation : bool
        Whether (quasi-)complete separation remained in the fit.
    notes : list of str
        What the fit left out or detected, in the order it happened.
    timings : dict of str to float
        Seconds per step of the fit.
    """

    table: pd.DataFrame
    coefficients: pd.DataFrame
    auc_features: float
    auc_fixed_effects: float
    auc_combined: float
    n: int
    n_events: int
    n_clusters: int
    dropped: dict[str, int]
    fixed_effects: tuple[str, ...]
    null_band: tuple[float, float]
    outcome_name: str
    separation: bool
    notes: list[str]
    _columns: list[str] = field(repr=False)
    _center: dict[str, float] = field(repr=False)
    _scale: dict[str, float] = field(repr=False)
    _use_missing: bool = field(repr=False)
    _intercept: float = field(repr=False)
    _slopes: dict[str, float] = field(repr=False)
    _level_effects: dict[str, dict[str, float]] = field(repr=False)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per step of the fit

    def predict_proba(
        self, features: pd.DataFrame, model: Iterable[Any] | None = None, benchmark: Iterable[Any] | None = None
    ) -> np.ndarray:
        """Predicted probability of the outcome for new rows.

        ``p = 1 / (1 + exp(-eta))`` with ``eta = intercept + sum_k b_k z_k + b_miss * missing +
        model effect + benchmark effect``, ``z_k = (x_k - mean_k) / sd_k`` with the fit's mean
        and SD (a missing coherence gives ``z = 0``).

        Parameters
        ----------
        features : DataFrame, (N, >= K)
            The feature columns (as from ``compute_features``).
        model, benchmark : iterable, (N,), optional
            Fixed-effect levels; default the columns of those names in ``features``. A level
            not seen in the fit gets the mean effect of the fitted levels (reference level 0
            included); a level dropped for a constant outcome gives probability 0 or 1.

        Returns
        -------
        ndarray, (N,) float64
            NaN for rows with a missing feature.

        Raises
        ------
        ValueError
            A fixed effect of the model is neither given nor a column of ``features``.
        """
        eta = np.full(len(features), self._intercept, dtype=np.float64)
        for col in self._columns:
            if col not in self._slopes:
                continue
            x = pd.to_numeric(features[col], errors="coerce").to_numpy(dtype=np.float64)
            z = (x - self._center[col]) / self._scale[col]
            if col == "coherence":
                z = np.where(np.isnan(z), 0.0, z)
            eta += self._slopes[col] * z
        if self._use_missing:
            miss = (
                features["coherence"].isna().to_numpy()
                if "coherence" in features
                else features["coherence_missing"].to_numpy(dtype=bool)
            )
            eta += np.where(miss, self._slopes["coherence_missing"], 0.0)
        given = {"model": model, "benchmark": benchmark}
        for fe in self.fixed_effects:
            values = given[fe]
            if values is None:
                if fe not in features.columns:
                    raise ValueError(f"predict_proba needs '{fe}' (the model has {fe} fixed effects).")
                values = features[fe]
            effects = self._level_effects[fe]
            finite = [v for v in effects.values() if np.isfinite(v)]
            default = float(np.mean(finite)) if finite else 0.0
            eta += np.array([effects.get(str(v), default) for v in values], dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            p = 1.0 / (1.0 + np.exp(-eta))
        return p


# --------------------------------------------------------------------------------------------
# Step 2: the logit
# --------------------------------------------------------------------------------------------


@dataclass
class _Logit:
    """The fitted logit: (p,) params, bse, z, p-values of the design's columns; separation flag."""

    params: np.ndarray
    bse: np.ndarray
    tvalues: np.ndarray
    pvalues: np.ndarray
    separation: bool


def _fit_logit(D: np.ndarray, design: _Design, notes: list[str]) -> _Logit:
    """Step 2: maximum-likelihood logit ``P(y = 1) = 1 / (1 + exp(-D b))`` with prompt-clustered SEs.

    statsmodels ``Logit(y, D).fit(cov_type="cluster", cov_kwds={"groups": groups})`` (Newton,
    at most 100 iterations). Separation is flagged (and noted) on non-convergence, a linear
    predictor beyond +-18 (fitted probability within 1.5e-8 of 0 or 1), a non-intercept
    coefficient above 10 in absolute value or a non-finite SE, or statsmodels'
    ``PerfectSeparationWarning``; convergence, separation and Hessian warnings become notes.

    Raises
    ------
    ValueError
        The design is singular.
    """
    from statsmodels.discrete.discrete_model import Logit
    from statsmodels.tools.sm_exceptions import (
        ConvergenceWarning,
        HessianInversionWarning,
        PerfectSeparationWarning,
    )

    names = design.names
    caught: list[str] = []
    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always")
        try:
            res = Logit(design.y, D).fit(disp=0, maxiter=100, cov_type="cluster", cov_kwds={"groups": design.groups})
        except np.linalg.LinAlgError as exc:
            raise ValueError(
                f"The logit could not be fitted ({exc}); the design is singular, e.g. a feature "
                "is a linear combination of the fixed effects."
            ) from exc
    for w in wlist:
        if issubclass(w.category, (ConvergenceWarning, PerfectSeparationWarning, HessianInversionWarning)):
            caught.append(f"{w.category.__name__}: {w.message}")
    params = np.asarray(res.params)
    bse = np.asarray(res.bse)
    converged = bool(res.mle_retvals.get("converged", True))
    eta = D @ params
    extreme = int(np.sum(np.abs(eta) > 18.0))  # fitted probability within 1.5e-8 of 0 or 1
    huge = [names[j] for j in range(1, len(names)) if abs(params[j]) > 10.0 or not np.isfinite(bse[j])]
    separation = (not converged) or extreme > 0 or bool(huge) or any(c.startswith("PerfectSeparation") for c in caught)
    if separation:
        notes.append(
            "(quasi-)complete separation: the outcome is (almost) perfectly predicted "
            f"(converged={converged}; {extreme} rows with fitted probability within 1.5e-8 of 0 or 1; "
            f"implausibly large or non-finite terms: {huge or 'none'}); odds ratios and intervals are not meaningful."
        )
    notes.extend(caught)
    return _Logit(
        params=params,
        bse=bse,
        tvalues=np.asarray(res.tvalues),
        pvalues=np.asarray(res.pvalues),
        separation=bool(separation),
    )


# --------------------------------------------------------------------------------------------
# Step 3: the variance inflation factors (the cross-validated AUCs are in auc.py)
# --------------------------------------------------------------------------------------------


def _vif(D: np.ndarray) -> np.ndarray:
    """Variance inflation factor of every column of a design whose column 0 is the intercept.

    ``VIF_j = 1 / (1 - R_j^2)``, ``R_j^2`` the centred R^2 of column j on all other columns and the
    intercept: exactly what statsmodels' ``variance_inflation_factor(D, j)`` returns (the tests
    check this), computed from one k x k centred Gram matrix instead of k least-squares fits on
    n rows (0.1 s instead of about 30 s at 130,000 x 38): with ``C = Z'Z - n mu mu'`` for the
    non-intercept columns ``Z``, ``VIF_j = (C^-1)_jj C_jj``.

    Parameters
    ----------
    D : ndarray, (n, k)
        The design; column 0 is the intercept.

    Returns
    -------
    ndarray, (k,) float64
        Entry 0 is NaN; ``inf`` for a column that is (numerically) a combination of the others.
    """
    n = D.shape[0]
    Z = D[:, 1:]
    mu = Z.mean(axis=0)
    C = Z.T @ Z - n * np.outer(mu, mu)
    out = np.full(D.shape[1], np.nan)
    diag = np.diag(C).copy()
    try:
        inv = np.linalg.inv(C)
        vif = np.diag(inv) * diag
        vif[~np.isfinite(vif) | (vif < 1.0 - 1e-9)] = np.inf  # singular or numerically degenerate
    except np.linalg.LinAlgError:
        vif = np.full(len(diag), np.inf)
    out[1:] = vif
    return out


# --------------------------------------------------------------------------------------------
# Step 4: the result table
# --------------------------------------------------------------------------------------------


def _holm(p: np.ndarray) -> np.ndarray:
    """(K,) Holm-adjusted p-values, statsmodels ``multipletests(p, method="holm")``.

    With the p-values sorted ascending, ``p_holm_(i) = min(1, max_{j <= i} (K - j + 1) p_(j))``.
    """
    from statsmodels.stats.multitest import multipletests

    if len(p) == 0:
        return p
    return multipletests(p, method="holm")[1]


def _result_table(
    columns: list[str],
    design: _Design,
    logit: _Logit,
    vifs: Mapping[str, float],
    *,
    alpha: float,
    null_band: tuple[float, float],
    outcome_name: str,
) -> pd.DataFrame:
    """Step 4: one row per feature column (in ``columns`` order) with its reading.

    ``odds_ratio = exp(b)``, interval ``exp(b -+ z_{1-alpha/2} se)``, ``p_holm`` Holm-adjusted
    over the estimable features; ``negligible`` when ``lo <= OR <= hi`` (the null band). The
    verdict, in order of precedence: "separation: not estimable", "negligible", "raises/lowers
    <outcome_name>" (``p_holm < alpha``), "not significant"; a feature constant in the data is
    "constant: not estimable" with NaN numbers.
    """
    from scipy.stats import norm

    lo_band, hi_band = null_band
    zcrit = float(norm.ppf(1 - alpha / 2))
    names, estimable = design.names, design.estimable
    params, bse, pvals = logit.params, logit.bse, logit.pvalues
    rows = []
    p_est = np.array([pvals[names.index(c)] for c in estimable])
    p_holm = dict(zip(estimable, _holm(p_est), strict=True))
    corr_name = {col: name for col, (name, _) in _CORRELATE_OF.items()}
    for col in columns:
        if col not in estimable:
            rows.append(
                {
                    "correlate": corr_name.get(col, col),
                    "feature": col,
                    "odds_ratio": np.nan,
                    "ci_low": np.nan,
                    "ci_high": np.nan,
                    "p": np.nan,
                    "p_holm": np.nan,
                    "vif": np.nan,
                    "negligible": False,
                    "verdict": _VERDICT_CONSTANT,
                }
            )
            continue
        j = names.index(col)
        b, se = params[j], bse[j]
        with np.errstate(over="ignore"):
            orr = float(np.exp(b))
            lo_ci, hi_ci = float(np.exp(b - zcrit * se)), float(np.exp(b + zcrit * se))
        negligible = bool(lo_band <= orr <= hi_band)
        ph = float(p_holm[col])
        if logit.separation:
            verdict = _VERDICT_SEPARATION
        elif negligible:
            verdict = "negligible"
        elif ph < alpha:
            verdict = f"raises {outcome_name}" if orr > 1 else f"lowers {outcome_name}"
        else:
            verdict = "not significant"
        rows.append(
            {
                "correlate": corr_name.get(col, col),
                "feature": col,
                "odds_ratio": orr,
                "ci_low": lo_ci,
                "ci_high": hi_ci,
                "p": float(pvals[j]),
                "p_holm": ph,
                "vif": vifs[col],
                "negligible": negligible,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# The fit
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _FitOptions:
    """The keyword arguments of :func:`fit_ambiguity_model` (``columns`` resolved)."""

    columns: list[str]
    null_band: tuple[float, float]
    cv_folds: int
    seed: int
    outcome_name: str
    alpha: float
    combined_auc: bool


def fit_ambiguity_model(
    features: pd.DataFrame,
    outcome: Any,
    model: Any,
    benchmark: Any,
    prompt_cluster: Any,
    *,
    null_band: tuple[float, float] = (0.9, 1.1),
    cv_folds: int = 5,
    seed: int = 0,
    columns: Sequence[str] | None = None,
    outcome_name: str = "ambiguity",
    alpha: float = 0.05,
    combined_auc: bool = False,
) -> AmbiguityModel:
    """Logistic regression of a 0/1 outcome on standardised features with fixed effects.

    ``logit P(y_i = 1) = a + sum_k b_k z_ik + c m_i + u_model(i) + v_benchmark(i)``, with ``z_ik``
    the z-scored feature ``k``, ``m_i`` the coherence-missing indicator, and dummy-coded fixed
    effects; standard errors clustered on the prompt. ``exp(b_k)`` is the odds ratio per SD.

    Parameters
    ----------
    features : DataFrame, (N, >= K)
        The feature columns (from ``compute_features``), aligned row by row with the other
        arguments.
    outcome : array-like, (N,)
        1 = the judge said ambiguous (bool/0/1; NaN rows are dropped).
    model, benchmark : array-like, (N,), or None
        Fixed-effect levels; ``None`` (or a single level) leaves that fixed effect out (e.g.
        ``model=None`` fits the pooled, between-model version).
    prompt_cluster : array-like, (N,)
        Prompt identifier; standard errors are clustered on it.
    null_band : (float, float), default (0.9, 1.1)
        Odds ratios per SD inside ``[lo, hi]`` are reported as negligible.
    cv_folds : int, default 5
        Folds of the cross-validated AUCs (grouped by prompt).
    seed : int, default 0
        Seed of the fold assignment.
    columns : sequence of str, optional
        The K feature columns to use; default the six correlates of :data:`CORRELATES` (use
        e.g. ``lm_log_ppl`` or ``unigram_log_ppl`` in place of ``bigram_log_ppl``).
    outcome_name : str, default "ambiguity"
        Word used in verdicts ("raises ambiguity").
    alpha : float, default 0.05
        Level of the Holm-adjusted test and of the intervals (95 % by default).
    combined_auc : bool, default False
        Also cross-validate features + fixed effects together (``auc_combined``, the AUC
        relevant to review prioritisation); about 2-3x the time of the rest of the fit at
        130,000 rows, so off by default (``auc_combined`` is then NaN).

    Returns
    -------
    AmbiguityModel

    Raises
    ------
    ValueError
        Inconsistent lengths, a non-0/1 outcome, an outcome without both values (after
        dropping constant fixed-effect levels), fewer than 2 prompt clusters, or no usable row.
    """
    from threadpoolctl import threadpool_limits

    options = _FitOptions(
        columns=list(columns) if columns is not None else [c.column for c in CORRELATES],
        null_band=null_band,
        cv_folds=cv_folds,
        seed=seed,
        outcome_name=outcome_name,
        alpha=alpha,
        combined_auc=combined_auc,
    )
    # The matrices are small (n x ~40); one BLAS thread is as fast on an idle 2-core machine and
    # several times faster when another job holds a core (threads then wait on each other).
    with threadpool_limits(limits=1, user_api="blas"):
        return _fit_ambiguity_model(features, outcome, model, benchmark, prompt_cluster, options)


def _fit_ambiguity_model(
    features: pd.DataFrame, outcome: Any, model: Any, benchmark: Any, prompt_cluster: Any, options: _FitOptions
) -> AmbiguityModel:
    """:func:`fit_ambiguity_model` in its steps: design matrix, logit, VIF and AUCs, table."""
    clock = Clock()
    import scipy.stats  # noqa: F401  (the steps' imports, timed on their own)
    import statsmodels.discrete.discrete_model  # noqa: F401

    clock.lap("imports")
    lo_band, hi_band = options.null_band
    if not (0 < lo_band <= 1 <= hi_band):
        raise ValueError(f"null_band must satisfy 0 < lo <= 1 <= hi; got {options.null_band}.")
    if options.cv_folds < 2:
        raise ValueError("cv_folds must be at least 2.")
    columns = options.columns
    absent = [c for c in columns if c not in features.columns]
    if absent:
        raise ValueError(f"features lacks the columns {absent}.")

    notes: list[str] = []
    D, design, dropped = _design_matrix(features, outcome, model, benchmark, prompt_cluster, columns, notes)
    clock.lap("prepare")

    logit = _fit_logit(D, design, notes)
    clock.lap("logit")

    coef_table = pd.DataFrame(
        {"term": design.names, "coef": logit.params, "se": logit.bse, "z": logit.tvalues, "p": logit.pvalues}
    )
    vif_all = _vif(D)
    vifs = {c: float(vif_all[design.names.index(c)]) for c in design.estimable}
    clock.lap("vif")

    table = _result_table(
        columns,
        design,
        logit,
        vifs,
        alpha=options.alpha,
        null_band=(lo_band, hi_band),
        outcome_name=options.outcome_name,
    )

    X = _auc_designs(D, design, options.combined_auc)
    del D  # free the full design before the cross-validation fits
    auc_f, auc_fe, auc_both = _cross_validated_aucs(
        X, design, cv_folds=options.cv_folds, seed=options.seed, combined_auc=options.combined_auc, clock=clock
    )
    if X[1] is None:
        notes.append("no fixed effect in the model: auc_fixed_effects is undefined (NaN).")
    del X

    slopes, use_missing, level_effects = _prediction_terms(design, logit)
    return AmbiguityModel(
        table=table,
        coefficients=coef_table,
        auc_features=auc_f,
        auc_fixed_effects=auc_fe,
        auc_combined=auc_both,
        n=len(design.y),
        n_events=int(design.y.sum()),
        n_clusters=design.n_clusters,
        dropped=dropped,
        fixed_effects=tuple(design.fixed_effects),
        null_band=(float(lo_band), float(hi_band)),
        outcome_name=options.outcome_name,
        separation=logit.separation,
        notes=notes,
        _columns=list(columns),
        _center=design.center,
        _scale=design.scale,
        _use_missing=use_missing,
        _intercept=float(logit.params[0]),
        _slopes=slopes,
        _level_effects=level_effects,
        timings=clock.laps,
    )


def _prediction_terms(design: _Design, logit: _Logit) -> tuple[dict[str, float], bool, dict[str, dict[str, float]]]:
    """What :meth:`AmbiguityModel.predict_proba` needs: slope per feature (and coherence_missing),
    whether the missing indicator enters, and the effect of every level of the fixed effects in
    the model (reference 0, separated levels +-inf)."""
    names, params = design.names, logit.params
    slopes = {c: float(params[names.index(c)]) for c in design.estimable}
    use_missing = design.use_missing
    if use_missing:
        slopes["coherence_missing"] = float(params[names.index("coherence_missing")])
    elif np.isinf(design.missing_effect):
        slopes["coherence_missing"] = design.missing_effect
        use_missing = True
    level_effects = design.level_effects
    for fe, levels in design.fe_levels:
        for lvl in levels:
            level_effects[fe][lvl] = float(params[names.index(f"{fe}[{lvl}]")])
    return slopes, use_missing, {fe: level_effects[fe] for fe in design.fixed_effects}


def fit_human_harmful_model(
    features: pd.DataFrame,
    human_harmful: Any,
    judge_ambiguous: Any,
    model: Any,
    benchmark: Any,
    prompt_cluster: Any,
    **kwargs: Any,
) -> AmbiguityModel:
    """The same regression for "human-adjudicated harmful" among the judge-ambiguous responses.

    Parameters
    ----------
    features : DataFrame, (N, >= K)
        The feature columns, aligned row by row with the other arguments.
    human_harmful : array-like, (N,)
        1 = adjudicated harmful, 0 = safe, NaN = not (yet) adjudicated (dropped).
    judge_ambiguous : array-like, (N,) bool
        Rows the judge called ambiguous (NaN counts as False); only these are used.
    model, benchmark, prompt_cluster : array-like, (N,)
        As in :func:`fit_ambiguity_model`.
    **kwargs
        Passed to :func:`fit_ambiguity_model`; ``outcome_name`` defaults to "human-harmful".

    Returns
    -------
    AmbiguityModel

    Raises
    ------
    ValueError
        No judge-ambiguous row, or as :func:`fit_ambiguity_model`.
    """
    n = len(features)
    amb = pd.Series(_as_array(judge_ambiguous, n, "judge_ambiguous")).fillna(False).astype(bool).to_numpy()
    harm = _as_array(human_harmful, n, "human_harmful")
    rows = np.flatnonzero(amb)
    if len(rows) == 0:
        raise ValueError("No judge-ambiguous response: there is nothing to relate human labels to.")

    def take(v: Any) -> np.ndarray | None:
        arr = _optional_array(v, n, "grouping")
        return None if arr is None else arr[rows]

    kwargs.setdefault("outcome_name", "human-harmful")
    return fit_ambiguity_model(
        features.iloc[rows].reset_index(drop=True),
        harm[rows],
        take(model),
        take(benchmark),
        take(prompt_cluster),
        **kwargs,
    )
