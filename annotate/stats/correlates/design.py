"""Step 1 of the association model: the design matrix (docs/methods.md section 6).

:func:`_design_matrix` turns the aligned inputs (features, 0/1 outcome, model and benchmark
levels, prompt clusters) into the logit's design: the usable rows (:func:`_usable_rows`), the
separated fixed-effect levels dropped (:func:`_drop_constant_levels`), the z-scored features
and the coherence-missing indicator (:func:`_feature_columns`), treatment-coded fixed-effect
dummies (:func:`_dummies`), the prompt clusters and each row's model x benchmark cell. The fit
itself is :mod:`annotate.stats.correlates.model`.

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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

# --------------------------------------------------------------------------------------------
# Aligning the inputs
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


# --------------------------------------------------------------------------------------------
# The design matrix (usable rows, separated levels dropped, z-scored features, dummies)
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
