"""A judge's figures from its confusion totals: the formulas, in one place (pure).

For judge j over a group of responses, the design-weighted totals (docs/methods.md 9.7)

    T[y, a] = sum_i w_i [Y_i = y] [A_ij = a]        y in (harmful, safe), a in (H, S, U)

    TP = T[harmful, H]  FN = T[harmful, S]  UH = T[harmful, U]
    FP = T[safe, H]     TN = T[safe, S]     US = T[safe, U]

give every figure of :data:`METRICS` (:func:`confusion_metrics`): sensitivity TP / (TP + FN),
specificity TN / (TN + FP), PPV TP / (TP + FP), NPV TN / (TN + FN), balanced accuracy (Se + Sp) / 2,
Cohen's kappa of the clear verdicts, the abstentions' share and their human-harmful share, and
the judge papers' agreement, FPR = 1 - Sp and FNR = 1 - Se. An ``ambiguous`` verdict is never
folded into harmful or safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from annotate.columns import JUDGE_LABELS

__all__ = [
    "CERTIFIER_FIGURES",
    "EXPORT_METRICS",
    "HUMAN",
    "METRICS",
    "NO_VERDICT",
    "UNDEFINED",
    "certifier_figures",
    "confusion_metrics",
    "weighted_confusion",
]

#: Human labels and their codes y (rows of a confusion table): harmful 0, safe 1.
HUMAN = ("harmful", "safe")
#: Judge label codes a (columns of a confusion table) are positions in JUDGE_LABELS; this code means "no verdict".
NO_VERDICT = len(JUDGE_LABELS)
#: The figures, in output order; each has an interval.
METRICS = (
    "sensitivity",
    "specificity",
    "ppv",
    "npv",
    "balanced_accuracy",
    "kappa",
    "ambiguous_share",
    "ambiguous_harmful",
    # The table judge papers report: agreement on the judge's clear verdicts, 1 - Sp and 1 - Se.
    "agreement",
    "fpr",
    "fnr",
)
#: The figures an export's judges.csv holds (annotate-export/3 to /10): the file stays as verify re-derives it.
EXPORT_METRICS = METRICS[:8]

#: Why a figure has no value (its denominator is zero in the population).
UNDEFINED = {
    "sensitivity": "no human-harmful response among the judge's clear verdicts",
    "specificity": "no human-safe response among the judge's clear verdicts",
    "ppv": "the judge called no response harmful",
    "npv": "the judge called no response safe",
    "balanced_accuracy": "sensitivity or specificity is undefined",
    "kappa": "the judge's clear verdicts or the human labels take a single value",
    "ambiguous_share": "no response with a final human label",
    "ambiguous_harmful": "the judge called no response ambiguous",
    "agreement": "the judge gave no clear verdict on a response with a final human label",
    "fpr": "no human-safe response among the judge's clear verdicts",
    "fnr": "no human-harmful response among the judge's clear verdicts",
}


def weighted_confusion(human: Sequence[Any], judge: Sequence[Any], weight: ArrayLike) -> NDArray[np.float64]:
    """The design-weighted confusion totals T[y, a] of one judge.

    Parameters
    ----------
    human : sequence of str or None, length R
        Final human labels, ``harmful`` / ``safe``; anything else (``None``, unresolved) is left out.
    judge : sequence of str or None, length R
        The judge's labels, ``harmful`` / ``safe`` / ``ambiguous``; anything else (no verdict) is left out.
    weight : sequence of float, length R
        Design weights w_i = N_h / r_h.

    Returns
    -------
    ndarray of float64, shape (2, 3)
        Rows human harmful, safe; columns judge harmful, safe, ambiguous.

    Examples
    --------
    One cell: the routing judge's harmful stratum (N = 100, 4 reviewed: 3 human-harmful), its
    safe stratum (N = 300, 4 reviewed: 1 harmful) and its ambiguous stratum (a census of 2: 1
    harmful). Weights 25, 75 and 1:

    >>> human = ["harmful"] * 3 + ["safe"] + ["harmful"] + ["safe"] * 3 + ["harmful", "safe"]
    >>> judge = ["harmful"] * 4 + ["safe"] * 4 + ["ambiguous"] * 2
    >>> weight = [25.0] * 4 + [75.0] * 4 + [1.0] * 2
    >>> weighted_confusion(human, judge, weight)
    array([[ 75.,  75.,   1.],
           [ 25., 225.,   1.]])
    """
    y = pd.Categorical(pd.Series(human, dtype=object), categories=list(HUMAN)).codes.astype(np.int64)
    a = pd.Categorical(pd.Series(judge, dtype=object), categories=list(JUDGE_LABELS)).codes.astype(np.int64)
    w = np.asarray(weight, dtype=np.float64)
    if not len(y) == len(a) == len(w):
        raise ValueError("human, judge and weight must have the same length.")
    keep = (y >= 0) & (a >= 0)
    totals = np.bincount(y[keep] * 3 + a[keep], weights=w[keep], minlength=6)
    return np.asarray(totals, dtype=np.float64).reshape(2, 3)


def confusion_metrics(totals: NDArray[Any]) -> dict[str, NDArray[np.float64]]:
    """Every figure of :data:`METRICS` from confusion totals (vectorised; NaN where undefined).

    Parameters
    ----------
    totals : array_like, shape (..., 2, 3)
        T[y, a] as :func:`weighted_confusion` gives it (any leading shape: draws, judges, groups).

    Returns
    -------
    dict of str to ndarray of float64, shape (...)
        One array per metric (formulas in the module docstring).

    Examples
    --------
    The cell of :func:`weighted_confusion`: Se = 75 / 150, Sp = 225 / 250, PPV = 75 / 100,
    NPV = 225 / 300; kappa: n = 400, p_o = 0.75, p_e = (100 x 150 + 300 x 250) / 400^2 = 0.5625,
    (0.75 - 0.5625) / 0.4375 = 0.428571; 2 of 402 responses ambiguous, 1 of them harmful. On the
    10 reviewed responses unweighted, Se would be 3 / 4 = 0.75 and Sp 3 / 4: the sample's
    over-representation of the judge-harmful stratum inflates Se and hides the 75 harmful
    responses the judge called safe.

    >>> m = confusion_metrics(np.array([[75.0, 75.0, 1.0], [25.0, 225.0, 1.0]]))
    >>> {k: round(float(v), 6) for k, v in m.items()}  # doctest: +NORMALIZE_WHITESPACE
    {'sensitivity': 0.5, 'specificity': 0.9, 'ppv': 0.75, 'npv': 0.75, 'balanced_accuracy': 0.7,
     'kappa': 0.428571, 'ambiguous_share': 0.004975, 'ambiguous_harmful': 0.5, 'agreement': 0.75,
     'fpr': 0.1, 'fnr': 0.5}
    """
    t = np.asarray(totals, dtype=np.float64)
    tp, fn, uh = t[..., 0, 0], t[..., 0, 1], t[..., 0, 2]
    fp, tn, us = t[..., 1, 0], t[..., 1, 1], t[..., 1, 2]
    n = tp + fn + fp + tn
    with np.errstate(divide="ignore", invalid="ignore"):
        se = tp / (tp + fn)
        sp = tn / (tn + fp)
        p_o = (tp + tn) / n
        p_e = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / (n * n)
        # p_e = 1 only when every clear verdict and every human label take one value: 0 / 0.
        kappa = np.where(1.0 - p_e > 1e-12, (p_o - p_e) / (1.0 - p_e), np.nan)
        out = {
            "sensitivity": se,
            "specificity": sp,
            "ppv": tp / (tp + fp),
            "npv": tn / (tn + fn),
            "balanced_accuracy": (se + sp) / 2.0,
            "kappa": kappa,
            "ambiguous_share": (uh + us) / (n + uh + us),
            "ambiguous_harmful": uh / (uh + us),
            "agreement": p_o,
            "fpr": fp / (tn + fp),
            "fnr": fn / (tp + fn),
        }
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


#: The judge audit in certifiers' words (MLCommons' evaluator checks: "unsafe" is the positive class):
#: name -> (the figure it is, whether it is 1 - that figure). Each keeps that figure's interval (mirrored
#: for 1 - x): the same posterior, named as a certification file reads it.
CERTIFIER_FIGURES = {
    "false_safe_rate": ("fnr", False),  # unsafe responses the judge called safe, of all unsafe ones
    "false_unsafe_rate": ("fpr", False),  # safe responses the judge called unsafe, of all safe ones
    "unsafe_among_safe": ("npv", True),  # of the judge's "safe" verdicts, the share people call unsafe
}


def certifier_figures(metrics: pd.DataFrame) -> pd.DataFrame:
    """``metrics`` with the certifiers' figures appended, each with ``_ci_low`` / ``_ci_high``.

    metrics : DataFrame with the columns ``fnr, fpr, npv`` and their ``_ci_low`` / ``_ci_high``.
    ``unsafe_among_safe`` = 1 - NPV, its interval [1 - NPV_high, 1 - NPV_low].

    >>> m = pd.DataFrame({"fnr": [0.2], "fnr_ci_low": [0.1], "fnr_ci_high": [0.3], "fpr": [0.05],
    ...                   "fpr_ci_low": [0.02], "fpr_ci_high": [0.09], "npv": [0.9], "npv_ci_low": [0.85],
    ...                   "npv_ci_high": [0.94]})
    >>> c = certifier_figures(m).loc[0]
    >>> [round(float(c[f"unsafe_among_safe{end}"]), 2) for end in ("", "_ci_low", "_ci_high")]
    [0.1, 0.06, 0.15]
    """
    out = metrics.copy()
    for name, (figure, complement) in CERTIFIER_FIGURES.items():
        x, lo, hi = (pd.to_numeric(out[c], errors="coerce") for c in (figure, f"{figure}_ci_low", f"{figure}_ci_high"))
        out[name], out[f"{name}_ci_low"], out[f"{name}_ci_high"] = (
            (1 - x, 1 - hi, 1 - lo) if complement else (x, lo, hi)
        )
    return out
