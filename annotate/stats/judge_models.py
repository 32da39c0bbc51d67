"""Does a judge err differently for different target models? A test per judge, model and figure (pure).

The study this tool serves found that a judge's ambiguity tracks a model's style, so "model
capability gets conflated with apparent safety". In a certification file that is one question:
is the judge's sensitivity (or specificity) for one model different from its figure for the
others? A judge that misses harm twice as often for a verbose model flatters that model's raw
score, and a judge audit pooled over models hides it.

The test (docs/methods.md 9.16). For judge j, model m and figure f in (sensitivity, specificity),
the figure on model m's responses against the centre of the same figure on each other *testable*
model ("the others"),

    Delta = f(T_m) - centre_{k != m, k testable} f(T_k)

where T are the design-weighted confusion totals of :mod:`annotate.stats.judges` over a model's
strata, and the centre is Tukey's biweight with each model's scale the median posterior SD times
sqrt(median n / n_k), n_k its reviewed responses of the figure's truth: the mean of the models near
the centre weighted by what was reviewed of them, in which a model far off (one whose judge does err
differently) weighs nothing (:func:`robust_centre`). The median of the others, the
reference before issue #41, sat below the good models' common value when two models were far off
(it is then the second lowest of the good ones), and weights 1 / s_k^2 favoured the models
estimated highest (a sensitivity's spread shrinks near 1).

Its draws are the **prompts** view of the one posterior (:mod:`annotate.stats.judge_posterior`,
docs/methods.md 9.19): the question is about the judge on prompts like these, not about these
prompts, and a label no reviewed response of a stratum carries still gets mass there (the
pseudo-response's coins), so a figure of 0/k or k/k is not certain. The p-value is the posterior's
tail on the far side of 0 from the estimate, doubled:

    p = min(1, 2 P*(Delta <= 0))   if Delta_hat > 0
    p = min(1, 2 P*(Delta >= 0))   if Delta_hat < 0
    p = 1                          if Delta_hat = 0

so p <= alpha exactly when the printed equal-tailed interval (extended to hold the estimate)
excludes 0, and a difference of 0 is never significant.

*Testable.* A model's figure is tested, and counts among the others' reference, only when at least
``min_reviewed`` (:data:`MIN_REVIEWED`) resolved reviewed responses of the relevant truth (harmful
for sensitivity, safe for specificity) got a clear verdict from the judge on that model, and at
least two other models are testable; otherwise the row says "not testable: 3 harmful reviewed"
and carries no p. A figure resting on three responses is not evidence of a difference, and as
part of the others' centre it would move the reference of every other model.

*PPV* moves with prevalence: a model with less harm has a lower PPV from a judge that errs alike
for everyone. PPV rows are shown (estimate, reference, difference and its interval) with no p, q
or flag, and their note says so: they are never a judge error.

Multiplicity. Every p of one call (judges x models x the two figures) is adjusted together by
Benjamini-Hochberg (1995): q_(i) = min over k >= i of min(1, n p_(k) / k), and a row is ``flagged``
where q <= the level (default 0.10). The statistics of one judge and figure across models are
dependent (each model's reference is the others' centre); the level and false-discovery rate were
measured by simulation in the study's regime (bench/validity.py; docs/methods.md 9.16).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

__all__ = [
    "DEFAULT_FDR",
    "FIGURES",
    "HETEROGENEITY_COLUMNS",
    "MIN_REVIEWED",
    "NEW_MODEL_COLUMNS",
    "TESTED",
    "TEST_NAME",
    "benjamini_hochberg",
    "direction_p",
    "model_differences",
    "posterior_p",
]

#: The figures tested across models: a judge's error rates.
TESTED = ("sensitivity", "specificity")
#: The figures shown across models (PPV moves with prevalence: shown, never tested).
FIGURES = (*TESTED, "ppv")
#: The false-discovery rate at which a row is flagged (``--fdr``).
DEFAULT_FDR = 0.10
#: Reviewed responses of the relevant truth (with a clear verdict) a model needs for its figure to be tested.
MIN_REVIEWED = 5
TEST_NAME = (
    "model against the others: Delta = figure(model) - the biweight centre of figure(each other testable model), "
    "design-weighted, on the prompts view of the reviewed population's posterior; p = twice the posterior "
    "tail beyond 0 on the far side from the estimate; sensitivity and specificity only; Benjamini-Hochberg q "
    "over every judge, model and figure"
)
#: Why a PPV row has no test.
PPV_NOTE = "PPV moves with the model's prevalence: shown, not tested (not a judge error)"
#: The columns issue #41 added to :data:`HETEROGENEITY_COLUMNS` (exports before annotate-export/11 have none).
NEW_MODEL_COLUMNS = ("n_truth_reviewed", "testable")
#: The rows of :func:`model_differences`.
HETEROGENEITY_COLUMNS = (
    "judge",
    "model",
    "figure",
    "estimate",
    "rest",
    "difference",
    "difference_ci_low",
    "difference_ci_high",
    "p_value",
    "q_value",
    "flagged",
    "note",
    # New in issue #41: the reviewed responses the figure rests on and whether it was tested.
    "n_truth_reviewed",
    "testable",
)


def posterior_p(delta: NDArray[np.float64]) -> NDArray[np.float64]:
    """Two-sided posterior tail probability of 0 per row of draws (NaN draws left out).

    Parameters
    ----------
    delta : ndarray, shape (C, D)

    Returns
    -------
    ndarray, shape (C,)
        ``min(1, 2 min(mean(delta <= 0), mean(delta >= 0)))`` over each row's finite draws; NaN
        for a row without any.

    Examples
    --------
    >>> posterior_p(np.array([[0.1, 0.2, -0.1, 0.3], [1.0, 2.0, 3.0, 4.0], [np.nan] * 4]))
    array([0.5, 0. , nan])
    """
    d = np.asarray(delta, dtype=np.float64)
    ok = np.isfinite(d)
    n = ok.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(ok, d <= 0, False).sum(axis=1) / n
        high = np.where(ok, d >= 0, False).sum(axis=1) / n
    p = np.minimum(1.0, 2.0 * np.minimum(low, high))
    return np.where(n > 0, p, np.nan)


def direction_p(estimate: NDArray[np.float64], delta: NDArray[np.float64]) -> NDArray[np.float64]:
    """Twice the posterior tail beyond 0 on the far side from the estimate (module docstring).

    Parameters
    ----------
    estimate : ndarray, shape (C,)
        The point differences.
    delta : ndarray, shape (C, D)
        Their draws (NaN draws left out).

    Returns
    -------
    ndarray, shape (C,)
        ``2 mean(delta <= 0)`` where the estimate is above 0, ``2 mean(delta >= 0)`` where below,
        1 where it is 0 (capped at 1); NaN without an estimate or a finite draw.

    Examples
    --------
    >>> direction_p(np.array([0.2, -0.2, 0.0, 0.2]), np.array([[0.1, 0.2, -0.1, 0.3]] * 3 + [[-1, -1, -1, 0.5]]))
    array([0.5, 1. , 1. , 1. ])
    """
    est = np.asarray(estimate, dtype=np.float64)
    d = np.asarray(delta, dtype=np.float64)
    ok = np.isfinite(d)
    n = ok.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        at_or_below = np.where(ok, d <= 0, False).sum(axis=1) / n
        at_or_above = np.where(ok, d >= 0, False).sum(axis=1) / n
    p = np.where(est > 0, 2.0 * at_or_below, np.where(est < 0, 2.0 * at_or_above, 1.0))
    return np.where((n > 0) & np.isfinite(est), np.minimum(1.0, p), np.nan)


def benjamini_hochberg(p: Sequence[float] | NDArray[np.float64]) -> NDArray[np.float64]:
    """Benjamini-Hochberg adjusted p-values (q-values); NaN stays NaN and is not counted.

    Examples
    --------
    >>> benjamini_hochberg([0.01, 0.04, 0.03, np.nan, 0.5]).round(4).tolist()
    [0.04, 0.0533, 0.0533, nan, 0.5]
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    n = len(ok)
    if not n:
        return q
    order = ok[np.argsort(p[ok], kind="mergesort")]
    scaled = p[order] * n / np.arange(1, n + 1)
    q[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return q


#: Tukey's biweight constant (95 % efficiency at the normal): a model further than this many of its
#: own standard deviations from the others' centre weighs nothing in it.
BIWEIGHT_C = 4.685
#: Reweighting steps of the biweight from the median (converged to 1e-4 of a figure's SD in the suites of
#: bench/validity.py; a fixed number keeps the estimate and every draw the same function of the figures).
CENTRE_STEPS = 8
#: Reference: "biweight" (the others' robust centre) or "median" (before issue #41; for comparisons).
REFERENCE = "biweight"
#: The biweight's base weights: "reviewed" (a model's reviewed responses of the figure's truth) or
#: "equal" (one scale for every model; issue #41's first construction, kept for comparisons).
WEIGHTS = "reviewed"


def robust_centre(
    values: NDArray[np.float64],
    scale: NDArray[np.float64],
    *,
    steps: int = CENTRE_STEPS,
    start: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Tukey's biweight location over the last axis, every value on its own scale (NaN left out).

    Parameters
    ----------
    values : ndarray, shape (..., K)
        K figures per row (a draw); NaN where a figure is not part of the row.
    scale : ndarray, shape (K,) or broadcastable to ``values``
        Each figure's standard deviation (its posterior's): a figure's residual is measured in it.
    steps : int
        Reweighting steps from the median.
    start : ndarray, shape (...), optional
        Where to start instead of the median (a nearby centre: fewer steps).

    Returns
    -------
    ndarray, shape (...)
        mu with sum_k w_k (x_k - mu) / s_k^2 = 0, w_k = (1 - (z_k / c)^2)^2 for |z_k| < c else 0,
        z_k = (x_k - mu) / s_k, c = :data:`BIWEIGHT_C`: the precision-weighted mean of the figures
        near the centre; a figure far off (a model whose judge does err differently) weighs nothing,
        so it does not move the centre the others are compared with. ``steps`` reweighting steps
        from the median (the same number in every row and draw, so the estimate and its draws are
        the same function of the figures); where every weight would be 0, the median; NaN for a row
        without a finite value.

    Examples
    --------
    Five models at 0.90 and two far below: the centre is the five's (the median of the seven, 0.89,
    is the second lowest of the five).

    >>> x = np.array([[0.92, 0.89, 0.91, 0.88, 0.90, 0.45, 0.46]])
    >>> float(robust_centre(x, np.full(7, 0.02))[0].round(4)), float(np.median(x))
    (0.9, 0.89)
    """
    x = np.asarray(values, dtype=np.float64)
    s = np.broadcast_to(np.asarray(scale, dtype=np.float64), x.shape)
    ok = np.isfinite(x) & np.isfinite(s) & (s > 0)
    xs = np.where(ok, x, 0.0)
    root = np.where(ok, 1.0 / np.where(ok, s, 1.0), 0.0) / BIWEIGHT_C  # 1 / (c s)
    inv = np.where(ok, 1.0 / np.where(ok, s, 1.0) ** 2, 0.0)
    if start is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            start = np.nanmedian(np.where(ok, x, np.nan), axis=-1)
    start = np.where(ok.any(axis=-1), start, np.nan)
    mu = start
    for _ in range(steps):
        z = (xs - mu[..., None]) * root
        u = np.maximum(1.0 - z * z, 0.0)
        w = u * u * inv
        total = w.sum(axis=-1)
        mu = np.where(total > 0, (w * xs).sum(axis=-1) / np.where(total > 0, total, 1.0), start)
    return mu


def _leave_one_out(
    x: NDArray[np.float64], scale: NDArray[np.float64], reviewed: NDArray[np.int64] | None = None
) -> NDArray[np.float64]:
    """(D, M) figures -> (D, M): for each model, the others' mean with the biweight weights of all of them.

    Each model's scale is the median of the models' posterior SDs (``scale``'s finite entries)
    times sqrt(median n / n_k), n_k its reviewed responses of the figure's truth (``reviewed``):
    weights proportional to what was reviewed, never to the figure's own SD. A model's own SD
    shrinks as its figure nears 1 (a sensitivity's spread is about sqrt(Se (1 - Se) / n)), so weights
    1 / s_k^2 favoured the models estimated highest and set the centre 0.01-0.03 above their common
    value (58 % of null differences negative at 80 reviews per stratum); one scale for all (issue
    #41's first fix) let the many models whose figure rests on a handful of reviews and the prior
    (a low-harm model's sensitivity) set the reference, and in the study's regime (26 models, 10
    reviews per clear stratum) 36 % of null suites had a false flag.
    """
    finite = np.isfinite(scale) & (scale > 0)
    common = float(np.median(scale[finite])) if finite.any() else float("nan")
    if reviewed is not None:
        n = np.asarray(reviewed, dtype=np.float64)
        counted = finite & (n > 0)
        mid = float(np.median(n[counted])) if counted.any() else 1.0
        scale = np.where(finite & (n > 0), common * np.sqrt(mid / np.maximum(n, 1.0)), np.nan)
    else:
        scale = np.where(np.isfinite(scale), common, np.nan)
    ok = np.isfinite(x)
    mu = robust_centre(x, scale[None, :])  # (D,)
    s = np.where(np.isfinite(scale) & (scale > 0), scale, np.nan)[None, :]
    z = (np.where(ok, x, 0.0) - mu[:, None]) / (BIWEIGHT_C * s)
    u = np.maximum(1.0 - z * z, 0.0)
    w = np.where(ok & np.isfinite(z), u * u / s**2, 0.0)
    wx = w * np.where(ok, x, 0.0)
    total, total_x = w.sum(axis=1, keepdims=True), wx.sum(axis=1, keepdims=True)
    rest = total - w
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(rest > 0, (total_x - wx) / np.where(rest > 0, rest, 1.0), np.nan)


def _others_centres(
    est: NDArray[np.float64],
    dr: NDArray[np.float64],
    able: NDArray[np.bool_],
    spread: NDArray[np.float64],
    use_draws: bool,
    reviewed: NDArray[np.int64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """For every model k: the centre of the other able models' estimates (M,) and draws (M, D)."""
    M = len(est)
    D = dr.shape[0]
    ref: NDArray[np.float64] = np.full(M, np.nan)
    ref_d: NDArray[np.float64] = np.full((M, D), np.nan)
    mask = able[None, :] & ~np.eye(M, dtype=bool)  # (target, other)
    spread = np.where(np.isfinite(spread), np.maximum(spread, 1e-9), np.nan)  # a figure certain in every draw
    if REFERENCE == "median" or not use_draws:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ref = np.nanmedian(np.where(mask, est[None, :], np.nan), axis=1)
            if use_draws:
                ref_d = np.nanmedian(np.where(mask[:, None, :], dr[None, :, :], np.nan), axis=2)
        return ref, ref_d
    # The biweight centre of every able model, then for each model the weighted mean of the others
    # with those weights (the leave-one-out centre in one step: a far-off model weighs nothing
    # either way, and one model's weight moves the others' little); the same function for the
    # estimate and every draw.
    ref = _leave_one_out(np.where(able, est, np.nan)[None, :], spread, reviewed)[0]
    ref_d = _leave_one_out(np.where(able[None, :], dr, np.nan), spread, reviewed).T  # (M, D)
    return ref, ref_d


def model_differences(
    point: NDArray[np.float64],
    drawn: NDArray[np.float64],
    reviewed: NDArray[np.int64],
    judges: Sequence[str],
    models: Sequence[str],
    metrics: Any,
    *,
    confidence: float = 0.95,
    fdr: float = DEFAULT_FDR,
    min_reviewed: int = MIN_REVIEWED,
) -> pd.DataFrame:
    """Every judge's figure on each model against the median of the other testable models' figures, tested.

    Parameters
    ----------
    point : ndarray, shape (M, J, 2, 3)
        Each model's design-weighted confusion totals per judge.
    drawn : ndarray, shape (M, D, J, 2, 3)
        Their draws under the prompts view of the posterior (D = 0: estimates only, no test).
    reviewed : ndarray of int, shape (M, J, 2)
        Resolved reviewed responses of the model with a clear verdict of the judge, by human label
        (harmful, safe).
    judges : sequence of str, length J
    models : sequence of str, length M
    metrics : callable
        :func:`annotate.stats.judges.confusion_metrics`.
    confidence : float
        Level of the difference's interval.
    fdr : float
        Rows with q <= this are flagged.
    min_reviewed : int
        A model's figure is testable with at least this many reviewed responses of its truth.

    Returns
    -------
    DataFrame
        :data:`HETEROGENEITY_COLUMNS`, one row per judge, model and figure of :data:`FIGURES`.
    """
    from annotate.stats.scoring.intervals import equal_tailed

    names = list(models)
    M = len(names)
    D = drawn.shape[1] if drawn.ndim == 5 else 0
    pts = metrics(point)  # each (M, J)
    drs = metrics(np.moveaxis(drawn, 1, 0)) if D else None  # each (D, M, J)
    truth_of = {"sensitivity": 0, "specificity": 1, "ppv": 0}
    rows: list[dict[str, Any]] = []
    deltas: list[NDArray[np.float64]] = []
    for j, judge in enumerate(judges):
        for f in FIGURES:
            est = np.asarray(pts[f], dtype=np.float64)[:, j]
            dr = np.asarray(drs[f], dtype=np.float64)[:, :, j] if drs is not None else np.full((1, M), np.nan)
            n_truth = np.asarray(reviewed)[:, j, truth_of[f]].astype(np.int64)
            tested = f in TESTED
            # A figure resting on too few reviewed responses is neither tested nor part of the reference.
            able = (n_truth >= min_reviewed) & np.isfinite(est) if tested else np.isfinite(est)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                spread = np.nanstd(dr, axis=0) if D else np.full(M, np.nan)  # each model's posterior SD
            refs, refs_d = _others_centres(est, dr, able, spread, bool(D), n_truth if WEIGHTS == "reviewed" else None)
            for k, model in enumerate(names):
                others = [i for i in range(M) if i != k and able[i]]
                note = []
                ref = float(refs[k])
                ref_d = refs_d[k]
                testable = bool(tested and able[k] and len(others) >= 2)
                if not np.isfinite(est[k]):
                    note.append(f"{f} undefined for {model} (no reviewed response of its kind)")
                elif tested and n_truth[k] < min_reviewed:
                    kind = "harmful" if truth_of[f] == 0 else "safe"
                    note.append(f"not testable: {n_truth[k]} {kind} reviewed (fewer than {min_reviewed})")
                elif tested and len(others) < 2:
                    note.append(f"not testable: {len(others)} other model(s) testable (at least 2 needed)")
                if not tested:
                    note.append(PPV_NOTE)
                rows.append(
                    {
                        "judge": judge,
                        "model": model,
                        "figure": f,
                        "estimate": float(est[k]),
                        "rest": ref,
                        "difference": float(est[k]) - ref,
                        "note": "; ".join(note),
                        "n_truth_reviewed": int(n_truth[k]),
                        "testable": testable,
                    }
                )
                deltas.append(dr[:, k] - ref_d if D else np.full(1, np.nan))
    if not rows:
        return pd.DataFrame(columns=list(HETEROGENEITY_COLUMNS))
    out = pd.DataFrame(rows)
    n = len(rows)
    low: NDArray[np.float64] = np.full(n, np.nan)
    high: NDArray[np.float64] = np.full(n, np.nan)
    p: NDArray[np.float64] = np.full(n, np.nan)
    est = out["difference"].to_numpy(dtype=np.float64)
    if D:
        d = np.vstack(deltas)
        n_ok = np.isfinite(d).sum(axis=1)
        for i in np.flatnonzero((n_ok > 0) & np.isfinite(est)):
            low[i : i + 1], high[i : i + 1] = equal_tailed(d[i : i + 1, np.isfinite(d[i])], confidence)
            if n_ok[i] < D:
                out.loc[i, "note"] = "; ".join(
                    x for x in (str(out.loc[i, "note"]), f"undefined in {D - int(n_ok[i])} of {D} draws") if x
                )
        # The estimate inside its own interval (every output keeps this).
        fin = np.isfinite(est) & np.isfinite(low)
        low[fin], high[fin] = np.minimum(low[fin], est[fin]), np.maximum(high[fin], est[fin])
        p = direction_p(est, d)
        p = np.where(out["testable"].to_numpy(dtype=bool), p, np.nan)
    q = benjamini_hochberg(p)
    out["difference_ci_low"], out["difference_ci_high"] = low, high
    out["p_value"], out["q_value"] = p, q
    out["flagged"] = np.isfinite(q) & (q <= fdr)
    return out[list(HETEROGENEITY_COLUMNS)]
