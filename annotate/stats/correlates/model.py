"""The association model: do the text features predict the judge's "ambiguous"? (methods.md section 6)

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
is "negligible" whatever its p-value. The fit runs in four named steps: (1) :func:`_design_matrix`
(usable rows, separated levels dropped, z-scored features and dummies), (2) :func:`_fit_logit`,
(3) :func:`_vif` and :func:`_cross_validated_aucs`, (4) :func:`_result_table`.

Conventions worth knowing:

* ``coherence`` enters as its z-score with missing values set to 0 (the mean) plus the
  ``coherence_missing`` indicator as a control (missing-indicator method); the indicator is not
  one of the six reported correlates and is left out when it does not vary.
* Rows with a missing outcome, grouping value or feature (other than coherence) are dropped
  and counted in ``dropped``.
* A fixed-effect level whose responses all have the same outcome is perfectly separated by its
  dummy: its maximum-likelihood effect is infinite and its rows carry no information about the
  features. Such rows are dropped before fitting (as fixest does), repeatedly until no level is
  constant, and counted; ``predict_proba`` gives those levels probability 0 or 1. The same holds
  for the coherence-missing indicator when every one-sentence reply has the same outcome.
* Separation that remains (a feature or combination predicting the outcome perfectly) is
  detected (non-convergence, fitted probabilities within 1.5e-8 of 0 or 1, a coefficient above
  10 in absolute value) and reported in ``separation`` / ``notes``; the verdicts then say
  "separation: not estimable".
* The AUCs use scikit-learn's default L2 penalty (C = 1), negligible at these n; the fixed-effects
  model is fitted on one weighted row per (model x benchmark cell, outcome), which gives the
  same fit in milliseconds.

:func:`fit_human_harmful_model` is the same regression for "human-adjudicated harmful" among the
judge-ambiguous responses; :func:`compare_with_study` reads the verdicts against the study's
expected directions (:data:`CORRELATES`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from annotate.stats.correlates._clock import Clock

__all__ = [
    "CORRELATES",
    "AmbiguityModel",
    "Correlate",
    "compare_with_study",
    "fit_ambiguity_model",
    "fit_human_harmful_model",
    "study_direction",
]


@dataclass(frozen=True)
class Correlate:
    """One of the six correlates of ambiguity: its feature column and the study's expected sign
    of the effect *of that column* on P(judge says ambiguous)."""

    name: str
    column: str
    expected_sign: int  # +1: a higher column value raises ambiguity; -1: lowers it
    note: str


# The study's expected directions: length +, density +, perplexity +, sophistication -,
# coherence -, similarity -. Sophistication is measured by zipf_mean, which is high for COMMON
# words, i.e. low sophistication: "sophistication -" is therefore a positive sign on zipf_mean.
CORRELATES: tuple[Correlate, ...] = (
    Correlate("length", "log_len", +1, "longer replies are more often judged ambiguous"),
    Correlate("density", "lexical_density", +1, "denser replies are more often judged ambiguous"),
    Correlate(
        "sophistication",
        "zipf_mean",
        +1,
        "sophistication lowers ambiguity; zipf_mean is inverse sophistication, so its sign is +",
    ),
    Correlate("perplexity", "bigram_log_ppl", +1, "less predictable replies are more often ambiguous"),
    Correlate("coherence", "coherence", -1, "more coherent replies are less often ambiguous"),
    Correlate("similarity", "prompt_similarity", -1, "replies closer to the prompt are less often ambiguous"),
)

#: feature column -> expected sign of its odds ratio (>1: +1, <1: -1), per the study.
study_direction: Mapping[str, int] = {c.column: c.expected_sign for c in CORRELATES}

# Other columns that measure the same correlate (``columns=`` of the fit may use them instead),
# with the study's sign for that column. rare_share is direct sophistication, hence -1.
_ALTERNATIVES: Mapping[str, tuple[tuple[str, int], ...]] = {
    "length": (("n_tokens", +1),),
    "sophistication": (("rare_share", -1),),
    "perplexity": (("lm_log_ppl", +1), ("unigram_log_ppl", +1)),
}
_CORRELATE_OF: dict[str, tuple[str, int]] = {c.column: (c.name, c.expected_sign) for c in CORRELATES}
for _name, _alts in _ALTERNATIVES.items():
    for _col, _sign in _alts:
        _CORRELATE_OF[_col] = (_name, _sign)


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
# Small helpers
# --------------------------------------------------------------------------------------------


def _as_array(values: Any, n: int, name: str) -> np.ndarray:
    """Positional (N,) array of ``values``; raises when the length is not ``n``."""
    if values is None:
        raise ValueError(f"{name} is required.")
    arr = values.to_numpy() if isinstance(values, (pd.Series, pd.Index)) else np.asarray(values, dtype=object)
    if arr.ndim != 1 or len(arr) != n:
        raise ValueError(f"{name} has {len(arr)} values but features has {n} rows.")
    return arr


def _optional_array(values: Any, n: int, name: str) -> np.ndarray | None:
    return None if values is None else _as_array(values, n, name)


def _holm(p: np.ndarray) -> np.ndarray:
    """(K,) Holm-adjusted p-values, statsmodels ``multipletests(p, method="holm")``.

    With the p-values sorted ascending, ``p_holm_(i) = min(1, max_{j <= i} (K - j + 1) p_(j))``.
    """
    from statsmodels.stats.multitest import multipletests

    if len(p) == 0:
        return p
    return multipletests(p, method="holm")[1]


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


def _group_splits(y: np.ndarray, groups: np.ndarray, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) row indices of scikit-learn's shuffled ``GroupKFold``: no group in both."""
    from sklearn.model_selection import GroupKFold

    splitter = GroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros(len(y)), y, groups))


def _cv_auc(
    X: np.ndarray | None, y: np.ndarray, splits: list[tuple[np.ndarray, np.ndarray]], cells: np.ndarray | None = None
) -> float:
    """Mean test-fold AUC of scikit-learn's LogisticRegression (folds with one class skipped).

    Parameters
    ----------
    X : ndarray, (N, k), optional
        The predictors; ``None`` or no column gives NaN.
    y : ndarray, (N,)
        The 0/1 outcome.
    splits : list of (train, test) index arrays
        The folds (:func:`_group_splits`).
    cells : ndarray, (N,) int, optional
        Integer id of each row's distinct row of ``X``. When given (a design of dummies only),
        each fold is fitted on one weighted row per (cell, outcome) instead of every response;
        the penalised likelihood, hence the fit, is the same, and it takes milliseconds.

    Returns
    -------
    float
        Mean over the folds whose train and test parts hold both outcomes; NaN if none does.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    if X is None or X.shape[1] == 0:
        return float("nan")
    aucs = []
    for train, test in splits:
        if len(np.unique(y[train])) < 2 or len(np.unique(y[test])) < 2:
            continue
        model = LogisticRegression(max_iter=1000)
        if cells is None:
            model.fit(X[train], y[train])
            score = model.decision_function(X[test])
        else:
            n_cells = int(cells.max()) + 1
            first = np.full(n_cells, -1, dtype=np.int64)
            first[cells[::-1]] = np.arange(len(cells))[::-1]  # a representative row per cell
            events = np.bincount(cells[train], weights=y[train], minlength=n_cells)
            total = np.bincount(cells[train], minlength=n_cells).astype(np.float64)
            seen = total > 0
            rep = X[first[seen]]
            Xa = np.vstack([rep, rep])
            ya = np.r_[np.ones(int(seen.sum())), np.zeros(int(seen.sum()))]
            wa = np.r_[events[seen], total[seen] - events[seen]]
            nz = wa > 0
            model.fit(Xa[nz], ya[nz], sample_weight=wa[nz])
            score = model.decision_function(X[first])[cells[test]]
        aucs.append(roc_auc_score(y[test], score))
    return float(np.mean(aucs)) if aucs else float("nan")


# --------------------------------------------------------------------------------------------
# Step 1: the design matrix (usable rows, separated levels dropped, z-scored features, dummies)
# --------------------------------------------------------------------------------------------


@dataclass
class _Rows:
    """The input aligned by position (``N_all`` rows) and which rows are still usable.

    y: (N_all,) outcome as float (NaN unknown); X: (N_all, K) raw feature values;
    groups: (N_all,) prompt clusters; fe: fixed effect -> (N_all,) level as str, for those in
    use (two or more levels among the usable rows); keep: (N_all,) bool; dropped: rows left
    out, by reason.
    """

    y: np.ndarray
    X: np.ndarray
    groups: np.ndarray
    fe: dict[str, np.ndarray]
    keep: np.ndarray
    dropped: dict[str, int]


@dataclass
class _Design:
    """What is needed, besides the (n, p) design matrix itself, to fit, report and predict.

    Attributes
    ----------
    names : list of str, (p,)
        The design's columns: "Intercept", the estimable features (z-scored),
        "coherence_missing" if it enters, fixed-effect dummies ``"fe[level]"``.
    y : ndarray, (n,) float
        The 0/1 outcome of the rows fitted.
    groups : ndarray, (n,) int
        Prompt cluster codes ``0 .. n_clusters - 1``.
    n_clusters : int
    estimable : list of str
        The feature columns in the design; ``center`` and ``scale`` hold their mean and SD.
    use_missing : bool
        "coherence_missing" is a column of the design.
    missing_effect : float
        ``-inf``/``+inf`` when the one-sentence rows were dropped for a constant outcome, else 0.
    fixed_effects : list of str
        The fixed effects in the design; ``fe_levels`` lists their non-reference levels.
    level_effects : dict
        fixed effect -> level -> effect: 0 for the reference, +-inf for dropped levels; the
        fitted ones are added after the fit.
    cells : ndarray, (n,) int, or None
        Each row's fixed-effect cell (model x benchmark); None without fixed effects.
    """

    names: list[str]
    y: np.ndarray
    groups: np.ndarray
    n_clusters: int
    estimable: list[str]
    center: dict[str, float]
    scale: dict[str, float]
    use_missing: bool
    missing_effect: float
    fixed_effects: list[str]
    fe_levels: list[tuple[str, list[str]]]
    level_effects: dict[str, dict[str, float]]
    cells: np.ndarray | None


def _usable_rows(
    features: pd.DataFrame,
    outcome: Any,
    fe_values: Mapping[str, Any],
    prompt_cluster: Any,
    columns: list[str],
    notes: list[str],
) -> _Rows:
    """Align the inputs and drop rows with a missing outcome, feature or grouping value.

    Raises ``ValueError`` for inconsistent lengths, a non-0/1 outcome, no usable row, or an
    outcome without both values. Fixed effects with a single usable level are left out (noted).
    """
    n_all = len(features)
    y_raw = _as_array(outcome, n_all, "outcome")
    groups_raw = _as_array(prompt_cluster, n_all, "prompt_cluster")
    fe_raw = {fe: _optional_array(values, n_all, fe) for fe, values in fe_values.items()}

    y_num = np.full(n_all, np.nan)
    observed = ~pd.isna(pd.Series(y_raw, dtype=object)).to_numpy()
    try:
        y_num[observed] = [float(v) for v in y_raw[observed]]
    except (TypeError, ValueError):
        y_num[:] = -1.0  # reported below
    bad = observed & ~np.isin(y_num, (0.0, 1.0))
    if bad.any():
        raise ValueError(
            f"outcome must be 0/1 (or True/False, NaN for unknown); found {y_raw[np.flatnonzero(bad)[0]]!r}."
        )

    X_raw = features[columns].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    dropped: dict[str, int] = {}
    keep = ~np.isnan(y_num)
    dropped["missing outcome"] = int((~keep).sum())
    non_coh = [i for i, c in enumerate(columns) if c != "coherence"]
    bad_x: np.ndarray = np.zeros(n_all, dtype=bool)
    if non_coh:
        bad_x = ~np.isfinite(X_raw[:, non_coh]).all(axis=1)
    dropped["missing feature"] = int((keep & bad_x).sum())
    keep &= ~bad_x
    bad_g = pd.isna(pd.Series(groups_raw, dtype=object)).to_numpy().copy()
    for vals in fe_raw.values():
        if vals is not None:
            bad_g = bad_g | pd.isna(pd.Series(vals, dtype=object)).to_numpy()
    dropped["missing model, benchmark or prompt"] = int((keep & bad_g).sum())
    keep &= ~bad_g
    if not keep.any():
        raise ValueError("No usable row: every row lacks the outcome, a feature, or a grouping value.")
    if len(np.unique(y_num[keep])) < 2:
        only = int(y_num[keep][0])
        raise ValueError(
            f"The outcome is {only} for all {int(keep.sum())} usable responses, so nothing can be associated "
            f"with it; a regression needs both outcomes (0 and 1)."
        )

    # fixed effects in use (a single level carries no contrast)
    fe_str: dict[str, np.ndarray] = {}
    for fe, vals in fe_raw.items():
        if vals is None:
            continue
        if pd.Series(vals[keep]).astype(str).nunique() >= 2:
            fe_str[fe] = pd.Series(vals).astype(str).to_numpy()
        else:
            notes.append(f"only one {fe} level: the {fe} fixed effect is left out.")
    return _Rows(y=y_num, X=X_raw, groups=groups_raw, fe=fe_str, keep=keep, dropped=dropped)


def _drop_constant_levels(
    rows: _Rows, coh_col: int | None, notes: list[str]
) -> tuple[dict[str, dict[str, float]], float]:
    """Drop the rows of fixed-effect levels (and of missing coherence) whose outcome is constant.

    Such a level is separated by its dummy (infinite ML effect) and carries no information on
    the features: its rows are dropped, repeatedly until no level is constant, as fixest does.
    The coherence-missing indicator is a dummy too and is treated the same way. Updates
    ``rows.keep`` and ``rows.dropped`` in place.

    Returns
    -------
    level_effects : dict
        fixed effect -> dropped level -> ``-inf`` (outcome always 0) or ``+inf`` (always 1).
    missing_effect : float
        ``-inf``/``+inf`` when the rows without coherence were dropped, else 0.0.
    """
    y_num, keep = rows.y, rows.keep
    level_effects: dict[str, dict[str, float]] = {fe: {} for fe in rows.fe}
    coh_is_missing = ~np.isfinite(rows.X[:, coh_col]) if coh_col is not None else np.zeros(len(keep), dtype=bool)
    n_sep = 0
    n_sep_coh = 0
    missing_effect = 0.0
    changed = True
    while changed:
        changed = False
        for fe, levels in rows.fe.items():
            s = pd.DataFrame({"lvl": levels[keep], "y": y_num[keep]})
            rate = s.groupby("lvl")["y"].mean()
            constant = rate[(rate == 0) | (rate == 1)]
            if 0 < len(constant) < len(rate):
                for lvl, r in constant.items():
                    level_effects[fe][str(lvl)] = -np.inf if r == 0 else np.inf
                hit = keep & np.isin(levels, constant.index.to_numpy())
                n_sep += int(hit.sum())
                keep &= ~hit
                outcomes = "/".join(str(int(v)) for v in sorted(set(constant.to_numpy())))
                notes.append(
                    f"{fe} level(s) {sorted(constant.index.tolist())} have outcome {outcomes} for every "
                    f"response: {int(hit.sum())} rows dropped (separated by their fixed effect)."
                )
                changed = True
        miss = keep & coh_is_missing
        if miss.any() and miss.sum() < keep.sum():
            rate_missing = float(y_num[miss].mean())
            if rate_missing in (0.0, 1.0):
                missing_effect = -np.inf if rate_missing == 0 else np.inf
                n_sep_coh += int(miss.sum())
                keep &= ~miss
                notes.append(
                    f"all {int(miss.sum())} responses without coherence (one sentence) have outcome "
                    f"{int(rate_missing)}: dropped (separated by the coherence_missing indicator)."
                )
                changed = True
    rows.dropped["fixed-effect level with constant outcome"] = n_sep
    rows.dropped["coherence missing with constant outcome"] = n_sep_coh
    return level_effects, missing_effect


def _design_matrix(
    features: pd.DataFrame,
    outcome: Any,
    model: Any,
    benchmark: Any,
    prompt_cluster: Any,
    columns: list[str],
    notes: list[str],
) -> tuple[np.ndarray, _Design, dict[str, int]]:
    """Step 1: the logit's design matrix and outcome, after dropping unusable and separated rows.

    With ``n`` usable rows, feature ``k`` enters as ``z_k = (x_k - mean_k) / sd_k`` (mean and
    sample SD, ``ddof=1``, over the usable rows; a missing coherence gives ``z = 0``); a feature
    whose SD is 0 (relative to its scale) is not estimable and left out. Each fixed effect
    enters as dummies for every level but the most frequent one (ties: the smallest name).

    Returns
    -------
    D : ndarray, (n, p) float64, Fortran order
        The design (statsmodels' Hessian ``X'WX`` is 5x faster in Fortran order).
    design : _Design
        Its column names, the outcome, the clusters and the rest (see :class:`_Design`).
    dropped : dict of str to int
        Rows left out, by reason.

    Raises
    ------
    ValueError
        As :func:`_usable_rows`; the outcome becomes constant after dropping separated levels;
        fewer than 2 prompt clusters remain.
    """
    rows = _usable_rows(features, outcome, {"model": model, "benchmark": benchmark}, prompt_cluster, columns, notes)
    coh_col = columns.index("coherence") if "coherence" in columns else None
    level_effects, missing_effect = _drop_constant_levels(rows, coh_col, notes)
    keep = rows.keep
    if len(np.unique(rows.y[keep])) < 2:
        raise ValueError(
            "After dropping fixed-effect levels whose outcome never varies, the outcome is constant; "
            "the features cannot be associated with it within models and benchmarks."
        )
    fe_kept = {fe: levels[keep] for fe, levels in rows.fe.items()}
    fe_final = []
    for fe, levels in fe_kept.items():
        if pd.Series(levels).nunique() >= 2:
            fe_final.append(fe)
        else:
            level_effects[fe][levels[0]] = 0.0
            notes.append(f"only one {fe} level remains after dropping: the {fe} fixed effect is left out.")
    y = rows.y[keep]
    X = rows.X[keep]
    groups = pd.factorize(pd.Series(rows.groups[keep]).astype(str))[0]
    n_clusters = int(groups.max()) + 1
    if n_clusters < 2:
        raise ValueError("Cluster-robust standard errors need at least 2 distinct prompts.")

    # design: intercept, z-scored features, coherence_missing, fixed-effect dummies
    n = len(y)
    names, blocks, estimable, center, scale, use_missing = _feature_columns(X, columns, notes)
    fe_levels = []
    for fe in fe_final:
        levels, dummies = _dummies(fe_kept[fe], level_effects[fe])
        fe_levels.append((fe, levels))
        blocks.extend(dummies.T)
        names.extend(f"{fe}[{lvl}]" for lvl in levels)
    D = np.empty((n, len(blocks)), order="F")  # Fortran order: statsmodels' Hessian X'WX is 5x faster
    for j, b in enumerate(blocks):
        D[:, j] = b
    del blocks

    cells = None
    if fe_final:  # each row's (model x benchmark) cell, for the fixed-effects-only AUC
        cell_key = np.zeros(n, dtype=np.int64)
        for fe in fe_final:
            codes, uniq = pd.factorize(fe_kept[fe])
            cell_key = cell_key * len(uniq) + codes
        cells = pd.factorize(cell_key)[0]
    design = _Design(
        names=names,
        y=y,
        groups=groups,
        n_clusters=n_clusters,
        estimable=estimable,
        center=center,
        scale=scale,
        use_missing=use_missing,
        missing_effect=missing_effect,
        fixed_effects=fe_final,
        fe_levels=fe_levels,
        level_effects=level_effects,
        cells=cells,
    )
    return D, design, rows.dropped


def _feature_columns(
    X: np.ndarray, columns: list[str], notes: list[str]
) -> tuple[list[str], list[np.ndarray], list[str], dict[str, float], dict[str, float], bool]:
    """The intercept, the z-scored features and the coherence-missing indicator, as columns.

    Column ``k`` of ``X`` (n, K) becomes ``z = (x - mean) / sd`` over its finite values
    (``sd`` with ``ddof=1``; a non-finite value, i.e. a missing coherence, gets ``z = 0``). A
    column whose ``sd`` is not above ``1e-12 * max(1, max |x|)`` is constant: left out (noted).
    ``coherence_missing`` (1.0 where coherence is missing) enters when coherence does and the
    indicator varies.

    Returns
    -------
    names, blocks : list of str, list of (n,) ndarray
        Starting with "Intercept" and a column of ones.
    estimable : list of str
        The feature columns kept.
    center, scale : dict of str to float
        Their mean and SD.
    use_missing : bool
        Whether ``coherence_missing`` is among the columns.
    """
    n = X.shape[0]
    center: dict[str, float] = {}
    scale: dict[str, float] = {}
    names = ["Intercept"]
    blocks: list[np.ndarray] = [np.ones(n)]
    estimable = []
    for i, col in enumerate(columns):
        x = X[:, i]
        finite = np.isfinite(x)
        sd = float(np.std(x[finite], ddof=1)) if finite.sum() > 1 else 0.0
        if not np.isfinite(sd) or sd <= 1e-12 * max(1.0, float(np.abs(x[finite]).max(initial=0.0))):
            notes.append(f"{col} is constant in the data: not estimable.")
            continue
        mu = float(np.mean(x[finite]))
        center[col], scale[col] = mu, sd
        blocks.append(np.where(finite, (x - mu) / sd, 0.0))
        names.append(col)
        estimable.append(col)
    use_missing = False
    if "coherence" in estimable:
        coh_missing = (~np.isfinite(X[:, columns.index("coherence")])).astype(np.float64)
        if 0 < coh_missing.sum() < n:
            blocks.append(coh_missing)
            names.append("coherence_missing")
            use_missing = True
    return names, blocks, estimable, center, scale, use_missing


def _dummies(values: np.ndarray, level_effects: dict[str, float]) -> tuple[list[str], np.ndarray]:
    """Treatment-coded dummies of a fixed effect: (levels, (n, L) 0/1 matrix).

    The reference is the most frequent level (ties: the smallest); it is recorded in
    ``level_effects`` with effect 0. The ``L`` other levels are sorted; row ``i`` has a 1 in the
    column of its level (none for the reference).
    """
    vals = pd.Series(values)
    counts = vals.value_counts()
    ref = min(counts[counts == counts.max()].index)  # most frequent level is the reference
    level_effects[ref] = 0.0
    levels = sorted(set(counts.index) - {ref})
    codes = vals.map({lvl: i for i, lvl in enumerate(levels)}).fillna(-1).to_numpy(dtype=np.int64)
    block = np.zeros((len(values), len(levels)))
    rows_ = np.flatnonzero(codes >= 0)
    block[rows_, codes[rows_]] = 1.0
    return levels, block


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
# Step 3: cross-validated AUCs (the VIFs are _vif above)
# --------------------------------------------------------------------------------------------


def _auc_designs(
    D: np.ndarray, design: _Design, combined_auc: bool
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """C-contiguous copies of the design's feature columns (z-scored features and
    coherence_missing), fixed-effect dummies, and both (only with ``combined_auc``); ``None``
    when a part has no column. z-scoring is a fold-independent affine map, and the L2 penalty
    is negligible at this n, so the z-scored design serves the cross-validation too."""
    names = design.names
    feat_cols = [names.index(c) for c in design.estimable] + (
        [names.index("coherence_missing")] if design.use_missing else []
    )
    fe_cols = [j for j, nm in enumerate(names) if "[" in nm]
    Xf = np.ascontiguousarray(D[:, feat_cols]) if feat_cols else None
    Xfe = np.ascontiguousarray(D[:, fe_cols]) if fe_cols else None
    Xboth = np.ascontiguousarray(D[:, feat_cols + fe_cols]) if combined_auc and feat_cols and fe_cols else None
    return Xf, Xfe, Xboth


def _cross_validated_aucs(
    X: tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None],
    design: _Design,
    *,
    cv_folds: int,
    seed: int,
    combined_auc: bool,
    clock: Clock,
) -> tuple[float, float, float]:
    """Step 3: mean test-fold AUC of the features alone, the fixed effects alone, and both.

    ``min(cv_folds, n_clusters)`` folds grouped by prompt (seeded), the same folds for all
    three. The fixed-effects model is fitted on its cells (see :func:`_cv_auc`). Without
    ``combined_auc`` the third AUC is NaN; when one of the parts has no column, "both" is the
    other part's AUC.

    Parameters
    ----------
    X : (Xf, Xfe, Xboth)
        From :func:`_auc_designs`.
    design : _Design
        For the outcome, the prompt clusters and the fixed-effect cells.
    """
    Xf, Xfe, Xboth = X
    y = design.y
    folds = min(cv_folds, design.n_clusters)
    splits = _group_splits(y, design.groups, folds, seed)
    auc_f = _cv_auc(Xf, y, splits)
    clock.lap("auc_features")
    auc_fe = _cv_auc(Xfe, y, splits, cells=design.cells if Xfe is not None else None)
    clock.lap("auc_fixed_effects")
    if not combined_auc:
        auc_both = float("nan")
    elif Xboth is not None:
        auc_both = _cv_auc(Xboth, y, splits)
    else:
        auc_both = auc_f if Xfe is None else auc_fe
    clock.lap("auc_combined")
    return auc_f, auc_fe, auc_both


# --------------------------------------------------------------------------------------------
# Step 4: the result table
# --------------------------------------------------------------------------------------------


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


def compare_with_study(result: AmbiguityModel) -> pd.DataFrame:
    """Which of the study's six correlates hold here.

    Parameters
    ----------
    result : AmbiguityModel
        A fit from :func:`fit_ambiguity_model` (or :func:`fit_human_harmful_model`).

    Returns
    -------
    DataFrame, (6, 6)
        One row per correlate in :data:`CORRELATES`: correlate; feature, the column that
        measured it (the default column, or an alternative such as ``lm_log_ppl`` for
        perplexity or ``rare_share`` for sophistication when the fit used that one); expected,
        the study's direction for that column; odds_ratio and verdict as observed; and
        ``holds``: "holds" (significant after Holm, outside the null band, expected side),
        "reversed" (same, other side), "no effect" (negligible or not significant), "not
        estimable", or "not in model".
    """
    rows = []
    by_feature = result.table.set_index("feature")
    for c in CORRELATES:
        candidates = [(c.column, c.expected_sign), *_ALTERNATIVES.get(c.name, ())]
        found = [(col, sign) for col, sign in candidates if col in by_feature.index]
        if not found:
            rows.append(
                {
                    "correlate": c.name,
                    "feature": c.column,
                    "expected": f"{'raises' if c.expected_sign > 0 else 'lowers'} {result.outcome_name}",
                    "odds_ratio": np.nan,
                    "verdict": "",
                    "holds": "not in model",
                }
            )
            continue
        col, sign = found[0]
        r = by_feature.loc[col]
        verdict = r["verdict"]
        if verdict.startswith(("raises", "lowers")):
            observed = +1 if r["odds_ratio"] > 1 else -1
            holds = "holds" if observed == sign else "reversed"
        elif verdict in ("negligible", "not significant"):
            holds = "no effect"
        else:
            holds = "not estimable"
        rows.append(
            {
                "correlate": c.name,
                "feature": col,
                "expected": f"{'raises' if sign > 0 else 'lowers'} {result.outcome_name}",
                "odds_ratio": r["odds_ratio"],
                "verdict": verdict,
                "holds": holds,
            }
        )
    return pd.DataFrame(rows)
