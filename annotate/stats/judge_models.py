"""Does a judge err differently for different target models? A test per judge, model and figure (pure).

The study this tool serves found that a judge's ambiguity tracks a model's style, so "model
capability gets conflated with apparent safety". In a certification file that is one question:
is the judge's sensitivity (or specificity, or PPV) for one model different from its figure for
the others? A judge that misses harm twice as often for a verbose model flatters that model's
raw score, and a judge audit pooled over models hides it.

The test (docs/methods.md 9.16). For judge j, model m and figure f in (sensitivity,
specificity, PPV), the figure on model m's responses against the median of the same figure on
each other model ("the others"),

    Delta = f(T_m) - median_{k != m} f(T_k)

where T are the design-weighted confusion totals of :mod:`annotate.stats.judges` (each resolved
reviewed response weighs N_h / r_h of its stratum) over a model's cells. A model's strata are its
own (the design stratifies by model x benchmark). The median, not the other models pooled: a model
far off pulls a pooled reference its way, so that every other model looks different too (with two
models at sensitivity 0.45 among eight, the six others sat 0.13 above their pooled reference and the
false-discovery rate of the moderate suite was 0.17); the median of seven is not moved by two.
Draws of a new sample of prompts of the same size per cell (:func:`superpopulation_totals`: the
question is about the judge on prompts like these, not about these prompts) give D draws of Delta,
and

    p = min(1, 2 min(P*(Delta <= 0), P*(Delta >= 0)))

over the draws where Delta is defined (the two-sided tail of the posterior: p <= alpha exactly
when the equal-tailed (1 - alpha) interval of Delta excludes 0). Unresolved reviewed responses
are missing at random within their stratum, as in every judge figure; the unreviewed part of a
stratum is drawn from its reviewed part, so a difference confined to responses no reviewed
response resembles cannot be seen (docs/methods.md 9.16 says what else the test cannot see).

Multiplicity. Every p of one call (judges x models x figures) is adjusted together by
Benjamini-Hochberg (1995): q_(i) = min over k >= i of min(1, n p_(k) / k), and a row is
``flagged`` where q <= the level (default 0.10). The statistics of one judge and figure across
models are dependent (each model's reference is the others' median); Benjamini-Hochberg is proved for
independent and positively dependent tests, and its false-discovery rate here was measured by
simulation, not assumed (bench/judge_models.py; docs/methods.md 9.16): on null suites it flagged
at most one row in the runs reported there. Benjamini-Yekutieli, valid under any dependence, is
log(n)-times stricter and lost most of the power on the study's suites.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotate.stats._common import normal_quantile

__all__ = [
    "DEFAULT_FDR",
    "FIGURES",
    "HETEROGENEITY_COLUMNS",
    "TEST_NAME",
    "benjamini_hochberg",
    "model_differences",
    "posterior_p",
]

#: The figures tested across models (balanced accuracy and kappa follow from them).
FIGURES = ("sensitivity", "specificity", "ppv")
#: The false-discovery rate at which a row is flagged (``--fdr``).
DEFAULT_FDR = 0.10
TEST_NAME = (
    "model against the others: the two-sided tail of Delta = figure(model) - median of figure(each other model), "
    "design-weighted, on draws of a new sample of prompts; Benjamini-Hochberg q over every judge, model and figure"
)
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


def superpopulation_totals(
    per_stratum: Sequence[tuple[NDArray[np.float64], int, str, str]],
    judge: int,
    draws: int,
    gen: np.random.Generator,
) -> tuple[NDArray[np.float64], NDArray[np.float64], list[str]]:
    """Draws of one judge's confusion totals per stratum, the prompts taken as a sample (module docstring).

    Parameters
    ----------
    per_stratum : sequence of (counts (J, 2, 3), N_h, cell, model)
        Each stratum with a resolved review: the reviewed responses' (human, judge label) counts of
        every judge, its population N_h, the (round, model, benchmark) cell it belongs to, its model.
    judge : int
    draws : int
    gen : Generator

    Returns
    -------
    point : ndarray, shape (S, 2, 3)
        N_h times the stratum's observed shares.
    drawn : ndarray, shape (S, D, 2, 3)
        N_h* pi*: pi* ~ Dirichlet(c + 1/2 on the judge labels seen in the stratum, both human
        labels), and the cell's strata sizes N_h* = N_cell x Dirichlet(N_h + 1/2 over the cell's
        strata): a new sample of prompts of the same number per cell.
    models : list of str, length S
    """
    S = len(per_stratum)
    point = np.zeros((S, 2, 3))
    drawn = np.zeros((S, draws, 2, 3))
    cells: dict[str, list[int]] = {}
    for i, (counts, N, cell, _model) in enumerate(per_stratum):
        c = np.asarray(counts[judge], dtype=np.float64)
        r = c.sum()
        if r > 0:
            point[i] = N * c / r
            seen = c.sum(axis=0) > 0  # the judge labels given on this stratum's reviewed responses
            alpha = (c + 0.5 * seen[None, :]).reshape(6)
            keep = alpha > 0
            share = np.zeros((draws, 6))
            g = gen.gamma(alpha[keep], size=(draws, int(keep.sum())))
            share[:, keep] = g / g.sum(axis=1, keepdims=True)
            drawn[i] = share.reshape(draws, 2, 3)
        cells.setdefault(cell, []).append(i)
    for members in cells.values():
        n = np.array([per_stratum[i][1] for i in members], dtype=np.float64)
        g = gen.gamma(n + 0.5, size=(draws, len(members)))
        sizes = n.sum() * g / g.sum(axis=1, keepdims=True)  # (D, strata of the cell)
        for k, i in enumerate(members):
            drawn[i] *= sizes[:, k, None, None]
    return point, drawn, [m for *_, m in per_stratum]


def model_differences(
    per_stratum: Sequence[tuple[NDArray[np.float64], int, str, str]],
    judges: Sequence[str],
    metrics: Any,
    *,
    draws: int,
    seed: np.random.Generator | int = 0,
    confidence: float = 0.95,
    fdr: float = DEFAULT_FDR,
) -> pd.DataFrame:
    """Every judge's figure on each model against the median of the other models' figures, tested (module docstring).

    Parameters
    ----------
    per_stratum : sequence of (counts (J, 2, 3), N_h, cell, model)
        As :func:`superpopulation_totals` takes them (:func:`annotate.stats.judges.judge_audit`
        collects them).
    judges : sequence of str, length J
    metrics : callable
        :func:`annotate.stats.judges.confusion_metrics`.
    draws : int
        D draws (0: estimates only, no test).
    seed : Generator or int
    confidence : float
        Level of the difference's interval.
    fdr : float
        Rows with q <= this are flagged.

    Returns
    -------
    DataFrame
        :data:`HETEROGENEITY_COLUMNS`, one row per judge, model and figure of :data:`FIGURES`
        (judges by name, models by name).
    """
    gen = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    names = sorted({m for *_, m in per_stratum})
    D = int(draws)
    # Per judge and model: the model's totals, as estimated and in each draw.
    own_point: dict[tuple[int, str], NDArray[np.float64]] = {}
    own_drawn: dict[tuple[int, str], NDArray[np.float64]] = {}
    for j in range(len(judges)):
        point, drawn, models = superpopulation_totals(per_stratum, j, D, gen)
        of_model = np.array(models, dtype=object)
        for model in names:
            own_point[j, model] = point[of_model == model].sum(axis=0)
            own_drawn[j, model] = drawn[of_model == model].sum(axis=0)

    rows: list[dict[str, Any]] = []
    deltas: list[NDArray[np.float64]] = []
    for j, judge in enumerate(judges):
        for f in FIGURES:
            # Each model's figure, as estimated and in every draw.
            pts = {m: float(metrics(own_point[j, m])[f]) for m in names}
            drs = {m: np.asarray(metrics(own_drawn[j, m])[f], dtype=np.float64) for m in names}
            for model in names:
                others = [m for m in names if m != model]
                with warnings.catch_warnings():  # all undefined: NaN
                    warnings.simplefilter("ignore", RuntimeWarning)
                    ref = float(np.nanmedian([pts[m] for m in others]))
                    ref_d = np.nanmedian(np.vstack([drs[m] for m in others]), axis=0) if D else np.full(1, np.nan)
                note = []
                if not np.isfinite(pts[model]):
                    note.append(f"{f} undefined for {model} (no reviewed response of its kind)")
                if not np.isfinite(ref):
                    note.append(f"{f} undefined for every other model")
                rows.append(
                    {
                        "judge": judge,
                        "model": model,
                        "figure": f,
                        "estimate": pts[model],
                        "rest": ref,
                        "difference": pts[model] - ref,
                        "note": "; ".join(note),
                    }
                )
                deltas.append(drs[model] - ref_d if D else np.full(1, np.nan))
    return _finish(rows, deltas, D, confidence, fdr)


def _finish(
    rows: list[dict[str, Any]], deltas: list[NDArray[np.float64]], D: int, confidence: float, fdr: float
) -> pd.DataFrame:
    """The rows with their intervals, p- and q-values and flags (Delta's draws in ``deltas``)."""
    from annotate.stats.scoring.intervals import equal_tailed

    if not rows:
        return pd.DataFrame(columns=list(HETEROGENEITY_COLUMNS))
    out = pd.DataFrame(rows)
    low: NDArray[np.float64] = np.full(len(rows), np.nan)
    high: NDArray[np.float64] = np.full(len(rows), np.nan)
    p: NDArray[np.float64] = np.full(len(rows), np.nan)
    if D:
        d = np.vstack(deltas)
        p = posterior_p(d)
        n_ok = np.isfinite(d).sum(axis=1)
        for i in np.flatnonzero(n_ok > 0):
            low[i : i + 1], high[i : i + 1] = equal_tailed(d[i : i + 1, np.isfinite(d[i])], confidence)
            if n_ok[i] < D:
                out.loc[i, "note"] = "; ".join(
                    x for x in (str(out.loc[i, "note"]), f"undefined in {D - int(n_ok[i])} of {D} draws") if x
                )
        # The estimate inside its own interval (every output keeps this); no interval without an estimate.
        est = out["difference"].to_numpy(dtype=np.float64)
        low[~np.isfinite(est)] = high[~np.isfinite(est)] = np.nan
        fin = np.isfinite(est) & np.isfinite(low)
        low[fin], high[fin] = np.minimum(low[fin], est[fin]), np.maximum(high[fin], est[fin])
        p = np.where(np.isfinite(est), p, np.nan).astype(np.float64)
    q = benjamini_hochberg(p)
    out["difference_ci_low"], out["difference_ci_high"] = low, high
    out["p_value"], out["q_value"] = p, q
    out["flagged"] = np.isfinite(q) & (q <= fdr)
    return out[list(HETEROGENEITY_COLUMNS)]


def reviews_to_detect(
    se_model: float,
    se_rest: float,
    *,
    prevalence: float,
    specificity: float,
    ambiguous: float,
    responses: int,
    models: int,
    power: float = 0.8,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Reviews per clear stratum for the model test to find a judge's sensitivity differing on one model.

    The suite: ``models`` models of ``responses`` responses each, a share ``prevalence`` harmful;
    the judge calls a share ``ambiguous`` of them ambiguous and, of the rest, a harmful one harmful
    with probability Se (``se_model`` on the one model, ``se_rest`` on the others) and a safe one
    safe with probability ``specificity``. Every cell's clear strata get r reviews each (the
    ambiguous stratum does not inform the judge's sensitivity: its verdict there is no verdict).

    With C = N (1 - a) clear responses per model, the judge-harmful and judge-safe strata hold
    N_H = C (pi Se + (1 - pi)(1 - Sp)) and N_S = C (pi (1 - Se) + (1 - pi) Sp) responses, of which
    shares y_H = C pi Se / N_H and y_S = C pi (1 - Se) / N_S are harmful. Se is A / (A + B) with
    A = N_H y_H, B = N_S y_S, each estimated from r reviews, so (delta method, prompts as a sample)

        Var(A) = y_H^2 N p_H (1 - p_H) + N_H^2 y_H (1 - y_H) / r        (p_H = N_H / N)
        Var(B) = y_S^2 N p_S (1 - p_S) + N_S^2 y_S (1 - y_S) / r,   Cov(A, B) = -y_H y_S N p_H p_S
        Var(Se) = [B^2 Var(A) + A^2 Var(B) - 2 A B Cov(A, B)] / (A + B)^4

    (the strata's sizes are a multinomial sample of the model's N responses, the harmful shares
    within them binomial samples of r), and the reference, the median of M - 1 such models'
    figures, about pi / 2 times a (M - 1)-th of that (the median's large-sample variance against
    the mean's). The test of Delta = Se_model - Se_rest at two-sided level alpha has power 1 - beta
    at the smallest r with

        Var_r(Se_model) + (pi / 2) Var_r(Se_rest) / (M - 1) <= Delta^2 / (z_(1 - alpha/2) + z_(1 - beta))^2

    (the alternative's variances on both sides; found by bisection). The Benjamini-Hochberg step across T tests acts,
    for the first discovery, like a level of about fdr / T: plan with that ``alpha`` when many
    figures are tested (``annotate plan`` does). Checked against simulation in
    bench/judge_models.py (docs/methods.md 9.16).

    Returns
    -------
    dict
        ``reviews_per_clear_stratum`` (r, rounded up; capped at the strata's sizes: ``capped``
        says when the design cannot reach the power), ``harmful_reviewed_per_model`` (the
        expected harmful responses among the model's reviews), the strata sizes and the
        standard error of Delta at r.

    Examples
    --------
    Eight models of 400 responses, 30 % harmful, 15 % ambiguous, Sp 0.95: Se 0.60 on one model
    against 0.90 on the others at 80 % power and level 0.05:

    >>> out = reviews_to_detect(0.60, 0.90, prevalence=0.3, specificity=0.95, ambiguous=0.15,
    ...                         responses=400, models=8)
    >>> out["reviews_per_clear_stratum"], out["capped"], round(out["se_difference"], 3)
    (36, False, 0.106)
    """
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError("alpha and power must be between 0 and 1")
    if models < 2:
        raise ValueError("the test compares one model with the others: it needs two models at least")
    if se_model == se_rest:
        raise ValueError("the sensitivities to tell apart must differ")

    def strata(se: float, r: float) -> tuple[float, float, float, float, float]:
        clear = responses * (1 - ambiguous)
        n_h = clear * (prevalence * se + (1 - prevalence) * (1 - specificity))
        n_s = clear * (prevalence * (1 - se) + (1 - prevalence) * specificity)
        y_h = clear * prevalence * se / n_h if n_h else 0.0
        y_s = clear * prevalence * (1 - se) / n_s if n_s else 0.0
        a, b = n_h * y_h, n_s * y_s
        # The strata's sizes are themselves a multinomial sample of the model's responses.
        p_h, p_s = n_h / responses, n_s / responses
        var_a = y_h**2 * responses * p_h * (1 - p_h) + n_h**2 * y_h * (1 - y_h) / r
        var_b = y_s**2 * responses * p_s * (1 - p_s) + n_s**2 * y_s * (1 - y_s) / r
        cov = -y_h * y_s * responses * p_h * p_s
        v = (b**2 * var_a + a**2 * var_b - 2 * a * b * cov) / (a + b) ** 4
        return v, n_h, n_s, a, b

    z = normal_quantile(1 - alpha / 2) + normal_quantile(power)
    delta2 = (se_model - se_rest) ** 2
    _, n_h, n_s, a_m, b_m = strata(se_model, 1.0)
    cap = int(np.floor(min(n_h, n_s)))

    def var_at(r: float) -> float:
        return strata(se_model, r)[0] + (np.pi / 2) * strata(se_rest, r)[0] / (models - 1)

    # Var(Delta) falls with r towards the part the strata's sizes contribute: the smallest r whose
    # variance meets Delta^2 / z^2 (bisection; none when even a census does not).
    goal = delta2 / z**2
    r = cap + 1
    if var_at(cap) <= goal:
        lo, hi = 1, cap
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if var_at(mid) <= goal else (mid + 1, hi)
        r = lo
    var = var_at(min(r, cap))
    return {
        "reviews_per_clear_stratum": min(r, cap),
        "capped": r > cap,
        "needed": r,
        "harmful_reviewed_per_model": min(r, cap) * ((a_m / n_h if n_h else 0) + (b_m / n_s if n_s else 0)),
        "judge_harmful_stratum": n_h,
        "judge_safe_stratum": n_s,
        "se_difference": float(np.sqrt(var)),
        "alpha": alpha,
        "power": power,
    }
