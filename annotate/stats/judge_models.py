"""Does a judge err differently for different target models? A test per judge, model and figure (pure).

The study this tool serves found that a judge's ambiguity tracks a model's style, so "model
capability gets conflated with apparent safety". In a certification file that is one question:
is the judge's sensitivity (or specificity, or PPV) for one model different from its figure for
the others? A judge that misses harm twice as often for a verbose model flatters that model's
raw score, and a judge audit pooled over models hides it.

The test (docs/methods.md 9.16). For judge j, model m and figure f in (sensitivity,
specificity, PPV), the figure on model m's responses against the same figure on every other
model's responses pooled ("the rest"),

    Delta = f(T_m) - f(T_rest),      T_rest = T_all - T_m

where T are the design-weighted confusion totals of :mod:`annotate.stats.judges` (each resolved
reviewed response weighs N_h / r_h of its stratum) over the model's cells and over the other
models' cells. A model's strata are its own (the design stratifies by model x benchmark), so the
two totals are disjoint. The posterior of the population counts (the judge audit's draws: per
stratum a Polya urn over the reviewed responses' joint labels, with the pseudo-response and its
coins) gives D draws of Delta, and

    p = min(1, 2 min(P*(Delta <= 0), P*(Delta >= 0)))

over the draws where Delta is defined (the two-sided tail of the posterior: p <= alpha exactly
when the equal-tailed (1 - alpha) interval of Delta excludes 0). Unresolved reviewed responses
are missing at random within their stratum, as in every judge figure; the unreviewed part of a
stratum is drawn from its reviewed part, so a difference confined to responses no reviewed
response resembles cannot be seen (docs/methods.md 9.16 says what else the test cannot see).

Multiplicity. Every p of one call (judges x models x figures) is adjusted together by
Benjamini-Hochberg (1995): q_(i) = min over k >= i of min(1, n p_(k) / k), and a row is
``flagged`` where q <= the level (default 0.10). The statistics of one judge and figure across
models are dependent (each model's "rest" holds the others); Benjamini-Hochberg is proved for
independent and positively dependent tests, and its false-discovery rate here was measured by
simulation, not assumed (bench/judge_models.py; docs/methods.md 9.16): on null suites it flagged
at most one row in the runs reported there. Benjamini-Yekutieli, valid under any dependence, is
log(n)-times stricter and lost most of the power on the study's suites.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

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
    "model against the rest: the posterior two-sided tail of Delta = figure(model) - figure(other models pooled), "
    "design-weighted, on the judge audit's draws; Benjamini-Hochberg q over every judge, model and figure"
)
#: At most this many passes of leaving the flagged models out of the others' reference.
_ROUNDS = 10
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
    """Every judge's figure on each model against the other models pooled, tested (the module docstring).

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
    from annotate.stats.scoring.intervals import equal_tailed

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

    def test(exclude: set[tuple[int, str, str]]) -> tuple[list[dict[str, Any]], list[NDArray[np.float64]]]:
        """Each (judge, model, figure) against the other models, leaving out those found different."""
        rows: list[dict[str, Any]] = []
        deltas: list[NDArray[np.float64]] = []
        for j, judge in enumerate(judges):
            for model in names:
                for f in FIGURES:
                    others = [m for m in names if m != model and (j, m, f) not in exclude]
                    own = metrics(own_point[j, model])[f]
                    rest = metrics(sum(own_point[j, m] for m in others))[f] if others else np.nan
                    own_d = metrics(own_drawn[j, model])[f]
                    rest_d = metrics(sum(own_drawn[j, m] for m in others))[f] if others else np.full(D, np.nan)
                    est, other = float(own), float(rest)
                    note = []
                    if not np.isfinite(est):
                        note.append(f"{f} undefined for {model} (no reviewed response of its kind)")
                    if not np.isfinite(other):
                        note.append(f"{f} undefined for the other models")
                    left = len(names) - 1 - len(others)
                    if left:
                        note.append(f"the other models without the {left} found different from the rest")
                    rows.append(
                        {
                            "judge": judge,
                            "model": model,
                            "figure": f,
                            "estimate": est,
                            "rest": other,
                            "difference": est - other,
                            "note": "; ".join(note),
                        }
                    )
                    deltas.append(np.asarray(own_d - rest_d, dtype=np.float64))
        return rows, deltas

    # A model far off pulls the pooled "rest" of every other model its way, so that the others look
    # different too: the models flagged are left out of the others' reference, until nothing changes.
    exclude: set[tuple[int, str, str]] = set()
    for _ in range(_ROUNDS):
        rows, deltas = test(exclude)
        if not D or not rows:
            break
        q = benjamini_hochberg(posterior_p(np.vstack(deltas)))
        flagged = {
            (judges.index(r["judge"]), r["model"], r["figure"]) for r, qq in zip(rows, q, strict=True) if qq <= fdr
        }
        if flagged == exclude:
            break
        exclude = flagged
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
        # The estimate inside its own interval (every output keeps this).
        est = out["difference"].to_numpy(dtype=np.float64)
        fin = np.isfinite(est) & np.isfinite(low)
        low[fin], high[fin] = np.minimum(low[fin], est[fin]), np.maximum(high[fin], est[fin])
        p = np.where(np.isfinite(est), p, np.nan).astype(np.float64)
    q = benjamini_hochberg(p)
    out["difference_ci_low"], out["difference_ci_high"] = low, high
    out["p_value"], out["q_value"] = p, q
    out["flagged"] = np.isfinite(q) & (q <= fdr)
    return out[list(HETEROGENEITY_COLUMNS)]
