"""Step 3 of the association model: cross-validated AUCs (docs/methods.md section 6).

The AUC (scikit-learn ``LogisticRegression``, folds grouped by prompt: :func:`_group_splits`) of
the features alone against the fixed effects alone (and of both), on the design of
:mod:`annotate.stats.correlates.design` (:func:`_auc_designs` takes its parts). The AUCs use
scikit-learn's default L2 penalty (C = 1), negligible at these n; the fixed-effects model is
fitted on one weighted row per (model x benchmark cell, outcome), which gives the same fit in
milliseconds (:func:`_cv_auc`).
"""

from __future__ import annotations

import numpy as np

from annotate.stats.correlates._clock import Clock
from annotate.stats.correlates.design import _Design


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
