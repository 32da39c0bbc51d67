"""A round sized to a target: the next wave's reviews per stratum for every model's half-width (pure).

docs/methods.md 4.9 (the design) and 4.10 (this planner). The estimand is a model's corrected
rate, the macro-average over its B benchmarks (4.7): p_m = sum_h a_h ybar_h with
a_h = N_h / (B N_cell) over the model's strata h (every (benchmark, stratum) of the model).

**The design after the next wave, pooled** (the default, ``design="pooled"``; 4.9): every wave
of a stratum together is one simple random sample of its N_h responses (the union of the waves
is a prefix of the stratum's hash order), t_h = r_h + (1 - u) n_h resolved after the wave, Var_h =
a_h^2 (1 / t_h - 1 / N_h) S_h^2, allocated by water-filling (:func:`pooled_allocation`). Why pooled
and not the conditional design below: methods 4.9 (a kept stratum's sample is selected on its own
labels; stopping at target selects the last draw on its width; the pilot counts only for itself).

**The conditional design** (``design="conditional"``): in stratum h, the p_h responses sampled so far (any
earlier wave, reviewed or awaiting review) become a census stratum of their own, and the next
wave draws a simple random sample of n_h from the R_h = N_h - p_h not yet sampled. Given the
past, the remainder's sample mean is unbiased for the remainder's rate and

    Var_h(n_h) = w_h^2 (1 / (n_h (1 - u)) - 1 / R_h) S_h^2,     w_h = R_h / (B N_cell),

with u the expected share of reviewed items left unresolved (they count against the resolved
sample). A stratum that gets no new sample keeps its earlier design, Var_h = a_h^2 (1/r_h -
1/N_h) S_h^2 (r_h resolved so far); one with r_h = 0 must be sampled. S_h^2 = pi_h (1 - pi_h)
with the rate guessed from the model's *other* strata of the same judge label (its other
benchmarks) and a prior of weight m0:

    pi_h = (y_(-h) + m0 pi0_h) / (r_(-h) + m0),    pi0 = .85 (judge harmful), .04 (safe), .5 (ambiguous),

y_(-h), r_(-h) the harmful and resolved counts of those strata (none for a model with one
benchmark: the prior alone). Leaving the stratum's own labels
out is what keeps the pooled waves unbiased (issue #33; methods 9.17): with its own labels, a
stratum that showed harm in the pilot got a larger next wave, which pulled its mean back (-0.003
at 5 % harm, 20 Monte-Carlo SE), while one that showed none kept its low mean;
``RATE_SOURCE = "own"`` restores that rule.

floored at 1 / (2 (r_h + n_h + 1)), the fiducial rate's mean when no harmful item is among the
r_h + n_h reviewed (9.1): the interval this tool reports cannot know that a stratum without harm
seen is clean, and a plan that trusted S_h = 0 there would stop short of the target (the floor
is re-solved twice with the planned n_h).

**The allocation** minimises the next wave's reviews sum_h n_h subject to sum_h Var_h <= e_m^2,
e_m = (t_m - u / 2) / z (the target half-width t_m less half the partial-identification gap u
that unresolved items open, 9.2; z the normal quantile of the confidence). For the strata that
are sampled this is Neyman's: with c_h = w_h S_h / sqrt(1 - u),

    n_h = c_h (sum_A c_k) / (e_m^2 - K + F),     K = sum_keep Var_h,  F = sum_A w_h^2 S_h^2 / R_h,

and a stratum h is sampled (in A) when that is cheaper at the Lagrange multiplier lambda =
((e_m^2 - K + F) / sum_A c_k)^2 than keeping it: 2 c_h sqrt(lambda) - w_h^2 S_h^2 / R_h <
Var_h(keep). The two steps alternate until the set A is stable; a stratum whose n_h reaches R_h
is reviewed in full (a census of its remainder, variance 0) and the others are re-solved. n_h is
rounded up and is at least ``min_new`` where a stratum is sampled. Reviews = items x (reviewers
+ the expected share sent to an expert).

**A ranking target** (:func:`ranking_targets`): two models m, k with estimates d = |p_m - p_k|
apart are separated at the confidence when d > z sqrt(V_m + V_k), and declared tied within
tau when the difference's half-width z sqrt(V_m + V_k) <= tau; with equal variances either is
met when each model's half-width is at most max(d, tau) / sqrt(2), the target per model being
that of its nearest neighbour.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotate.columns import JUDGE_LABELS
from annotate.stats._common import normal_quantile

__all__ = [
    "BUDGET_HIGH",
    "BUDGET_LOW",
    "PRIOR_RATES",
    "RoundPlan",
    "model_allocation",
    "plan_round",
    "pooled_allocation",
    "ranking_targets",
    "smallest_fitting",
]

#: Prior guesses of P(harmful | judge label) (docs/methods.md 4.8 for the clear ones; .5, the
#: largest variance, for the ambiguous stratum).
PRIOR_RATES: Mapping[str, float] = {"harmful": 0.85, "safe": 0.04, "ambiguous": 0.5}

_NEED = ("model", "benchmark", "stratum", "judge_label", "population", "sampled", "resolved", "harmful")


@dataclass(frozen=True)
class RoundPlan:
    """The next wave per stratum, and per model what it is expected to reach.

    Attributes
    ----------
    strata : DataFrame
        The input's columns and ``rate_guess`` (pi_h), ``remainder`` (R_h), ``n`` (to draw from
        the remainder in the next wave), ``census`` (n = R_h > 0).
    models : DataFrame
        ``model, target`` (half-width), ``halfwidth_now`` (expected from the reviews so far;
        inf where a stratum has none), ``expected_halfwidth`` (after the next wave), ``items``,
        ``reviews`` (of the next wave), ``at_target`` (no more reviews needed), ``reachable``
        (the plan meets the target), ``note``.
    reviews : float
        Reviews of the next wave over every model.
    """

    strata: pd.DataFrame
    models: pd.DataFrame
    reviews: float


#: A model's note when no wave reaches its target (the CLI shortens it to "not reachable").
UNREACHABLE = "not reachable even with every remaining response reviewed"


def model_allocation(
    a: NDArray[np.float64],
    N: NDArray[np.float64],
    sampled: NDArray[np.float64],
    resolved: NDArray[np.float64],
    S2: NDArray[np.float64],
    e2: float,
    *,
    unresolved: float = 0.0,
    min_new: int = 1,
    keep_population: NDArray[np.float64] | None = None,
    keep_resolved: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], float, float]:
    """The next wave's n_h for one model's strata (module docstring), unrounded then rounded up.

    Parameters
    ----------
    a : ndarray, shape (H,)
        a_h = N_h / (B N_cell), the strata's weights in the model's rate (summing to 1).
    N, sampled, resolved : ndarray, shape (H,)
        N_h, p_h (sampled so far) and r_h (resolved so far).
    S2 : ndarray, shape (H,)
        S_h^2, the guessed variance of a stratum's labels.
    e2 : float
        The target variance e_m^2.
    unresolved : float
        u, the expected share of the new reviews left unresolved.
    min_new : int
        The least n_h of a stratum that is sampled.
    keep_population, keep_resolved : ndarray, shape (H,), optional
        The simple random sample the stratum's current estimate rests on, when it is not one
        sample of all N_h (a stratum already drawn from again: its remainder R' and the r' resolved
        of its last draw, Var_h(keep) = a_h^2 (R'/N_h)^2 (1/r' - 1/R') S_h^2). Default N_h, r_h.

    Returns
    -------
    n : ndarray, shape (H,)
        Responses to draw from each stratum's remainder (integers; 0 = keep).
    v_now, v_next : float
        sum_h Var_h with the reviews so far (inf where a stratum has r_h = 0) and after the wave.

    Examples
    --------
    One stratum never reviewed (N = 1,000, S^2 = .25) with a target SE of .0153: n = S^2 / (e^2 +
    S^2 / N) = 0.25 / (0.000234 + 0.00025) = 516.5, so 517:

    >>> n, v0, v1 = model_allocation(np.array([1.0]), np.array([1000.0]), np.zeros(1), np.zeros(1),
    ...     np.array([0.25]), 0.0153**2)
    >>> int(n[0]), bool(np.isinf(v0)), bool(v1 <= 0.0153**2)
    (517, True, True)
    """
    q = 1.0 - unresolved
    n: NDArray[np.float64]
    R = np.maximum(N - sampled, 0.0)
    w = np.where(N > 0, a * R / np.where(N > 0, N, 1.0), 0.0)
    KP = N if keep_population is None else keep_population
    kr = resolved if keep_resolved is None else keep_resolved
    with np.errstate(divide="ignore", invalid="ignore"):
        aK = np.where(N > 0, a * KP / np.where(N > 0, N, 1.0), 0.0)
        keep_v = np.where(kr >= KP, 0.0, np.where(kr > 0, aK * aK * (1.0 / kr - 1.0 / KP) * S2, np.inf))
        fpc = np.where(R > 0, w * w * S2 / R, 0.0)
    keep_v = np.where(R <= 0, np.where(resolved > 0, keep_v, np.inf if unresolved >= 1 else 0.0), keep_v)
    v_now = float(keep_v.sum())
    n = np.zeros(len(N))
    if v_now <= e2:
        return n, v_now, v_now
    c = w * np.sqrt(S2 / q)
    can = (R > 0) & (c > 0)
    must = can & ~np.isfinite(keep_v)
    kept_v = np.where(np.isfinite(keep_v), keep_v, 0.0)
    A = must | (can & (keep_v > 0))  # start by sampling every stratum with variance left
    census = np.zeros(len(N), dtype=bool)
    reachable = True
    for _ in range(4 * len(N) + 4):
        samp = A & ~census
        room = e2 - float(kept_v[~A].sum()) + float(fpc[samp].sum())
        sum_c = float(c[samp].sum())
        if sum_c <= 0 or room <= 0:
            reachable = sum_c <= 0 and room >= 0
            break
        n_h = np.where(samp, c * sum_c / room, 0.0)
        over = samp & (n_h * q >= R)
        if over.any():  # a census of the remainder; re-solve the others
            census |= over
            continue
        gain = 2.0 * c * (room / sum_c) - fpc
        new_A = must | census | (can & (gain < keep_v))
        if (new_A == A).all():
            break
        A = new_A
    samp = A & ~census
    if not reachable:  # the target cannot be met: every remainder in full
        census |= samp
        samp = np.zeros(len(N), dtype=bool)
        n_f: NDArray[np.float64] = np.zeros(len(N))
    else:
        room = e2 - float(kept_v[~A].sum()) + float(fpc[samp].sum())
        sum_c = float(c[samp].sum())
        n_f = np.where(samp, c * sum_c / room, 0.0) if sum_c > 0 else np.zeros(len(N))
    n = np.minimum(np.where(census, R, np.where(samp, np.maximum(np.ceil(n_f - 1e-9), min_new), 0.0)), R)
    with np.errstate(divide="ignore", invalid="ignore"):
        new_v = np.where(n > 0, np.where(n >= R, 0.0, w * w * (1.0 / (n * q) - 1.0 / R) * S2), keep_v)
    return n, v_now, float(new_v.sum())


def pooled_allocation(
    a: NDArray[np.float64],
    N: NDArray[np.float64],
    sampled: NDArray[np.float64],
    resolved: NDArray[np.float64],
    S2: NDArray[np.float64],
    e2: NDArray[np.float64],
    group: NDArray[np.int64],
    *,
    unresolved: float = 0.0,
    min_new: int = 1,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The next wave's n_h when every wave of a stratum is pooled into one sample (methods 4.9-4.10).

    After the wave stratum h has t_h = r_h + (1 - u) n_h resolved items, one sample of its N_h
    responses (the union of the waves is a prefix of the stratum's hash order), and contributes
    a_h^2 (1 / t_h - 1 / N_h) S_h^2. Minimising sum_h n_h subject to sum_h Var_h <= e_m^2 per
    model m (its rows: ``group == m``) is water-filling: t_h = clip(k_m a_h S_h, r_h, r_h + (1 - u)
    R_h), Neyman's total sample proportional to a_h S_h where a stratum has fewer than that, none
    where it already has more, k_m the smallest level meeting the target (bisection, vectorised
    over the models). n_h = ceil((t_h - r_h) / (1 - u)), at least ``min_new`` where positive; a
    stratum never reviewed (r_h = 0 < N_h) gets at least max(1, ``min_new``).

    Parameters
    ----------
    a, N, sampled, resolved, S2 : ndarray, shape (H,)
        As :func:`model_allocation`, for the strata of every model.
    e2 : ndarray, shape (G,)
        The target variance of each model.
    group : ndarray of int, shape (H,)
        The model (0..G-1) of each stratum.

    Returns
    -------
    n : ndarray, shape (H,)
        Responses to draw from each stratum's remainder.
    v_now, v_next : ndarray, shape (G,)
        Each model's variance with the reviews so far (inf where a stratum has none) and after.

    Examples
    --------
    One stratum never reviewed (N = 1,000, S^2 = .25), target SE .0153: t = S^2 / (e^2 + S^2 / N),
    the textbook size 517, as :func:`model_allocation`; with 300 already resolved, 217 more:

    >>> one = np.ones(1)
    >>> n, v0, v1 = pooled_allocation(one, 1000 * one, 0 * one, 0 * one, 0.25 * one, np.array([0.0153**2]),
    ...     np.zeros(1, dtype=np.int64))
    >>> int(n[0]), bool(np.isinf(v0[0])), bool(v1[0] <= 0.0153**2)
    (517, True, True)
    >>> n, _, _ = pooled_allocation(one, 1000 * one, 300 * one, 300 * one, 0.25 * one, np.array([0.0153**2]),
    ...     np.zeros(1, dtype=np.int64))
    >>> int(n[0])
    217
    """
    q = 1.0 - unresolved
    G = len(e2)
    R = np.maximum(N - sampled, 0.0)
    live = N > 0
    A2 = np.where(live, a * a * S2, 0.0)
    fpc = np.where(live, A2 / np.where(live, N, 1.0), 0.0)
    must = live & (resolved <= 0)
    lo_t = np.where(must, np.minimum(q * max(1, min_new), q * R), resolved)
    hi_t = resolved + q * R

    def var(t: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(divide="ignore", invalid="ignore"):
            term = np.where(live & (t <= 0), np.inf, np.where(live, A2 / np.where(t > 0, t, 1.0), 0.0) - fpc)
        out: NDArray[np.float64] = np.asarray(
            np.bincount(group, weights=np.where(np.isinf(term), 1e300, term), minlength=G), dtype=np.float64
        )
        return out

    with np.errstate(divide="ignore", invalid="ignore"):
        now = np.where(
            live & (resolved <= 0), np.inf, np.where(live, A2 / np.where(resolved > 0, resolved, 1.0), 0.0) - fpc
        )
    v_sum = np.bincount(group, weights=np.where(np.isinf(now), 1e300, now), minlength=G)
    v_now: NDArray[np.float64] = np.where(v_sum >= 1e299, np.inf, v_sum).astype(np.float64)
    need = v_now > e2
    c = np.sqrt(A2)
    with np.errstate(divide="ignore", invalid="ignore"):
        kmax_h = np.where(c > 0, hi_t / np.where(c > 0, c, 1.0), 0.0)
    k_hi: NDArray[np.float64] = np.log(np.maximum(_group_max(kmax_h, group, G), 1e-12)) + 1.0
    k_lo: NDArray[np.float64] = np.full(G, np.log(1e-12))
    reach = var(hi_t) <= e2
    for _ in range(100):
        mid = (k_lo + k_hi) / 2.0
        t = np.clip(np.exp(mid)[group] * c, lo_t, np.maximum(lo_t, hi_t))
        ok = var(t) <= e2
        k_hi = np.where(ok, mid, k_hi)
        k_lo = np.where(ok, k_lo, mid)
    t = np.clip(np.exp(k_hi)[group] * c, lo_t, np.maximum(lo_t, hi_t))
    t = np.where(reach[group], t, hi_t)  # not reachable: every remainder in full
    n0 = np.ceil(np.maximum(t - resolved, 0.0) / q - 1e-9)
    n1 = np.where(n0 > 0, np.maximum(n0, min_new), 0.0)
    n2 = np.where(must, np.maximum(n1, max(1, min_new)), n1)
    n = np.asarray(np.where(need[group], np.minimum(n2, R), 0.0), dtype=np.float64)
    v_next = var(resolved + q * n)
    v_next = np.where(v_next >= 1e299, np.inf, v_next)
    v_out: NDArray[np.float64] = np.where(need, v_next, v_now).astype(np.float64)
    return n.astype(np.float64), v_now.astype(np.float64), v_out


def _group_max(v: NDArray[np.float64], group: NDArray[np.int64], G: int) -> NDArray[np.float64]:
    out = np.zeros(G)
    np.maximum.at(out, group, v)
    return out


#: Where a stratum's rate guess comes from (issue #33): ``"others"`` (the model's other strata of
#: the same judge label, leaving the stratum's own labels out: the default) or ``"own"``.
RATE_SOURCE = "others"


def _others(
    df: pd.DataFrame, y: NDArray[np.float64], r: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Harmful and resolved counts of the model's other strata with the row's judge label."""
    key = [df["model"].astype(str), df["judge_label"].astype(str)]
    y_all = pd.Series(y).groupby(key).transform("sum").to_numpy(dtype=np.float64)
    r_all = pd.Series(r).groupby(key).transform("sum").to_numpy(dtype=np.float64)
    return y_all - y, r_all - r


def _rate_guess(df: pd.DataFrame, prior: Mapping[str, float], weight: float) -> NDArray[np.float64]:
    pi0 = df["judge_label"].map(lambda v: prior.get(v, 0.5)).to_numpy(dtype=np.float64)
    y, r = df["harmful"].to_numpy(dtype=np.float64), df["resolved"].to_numpy(dtype=np.float64)
    if RATE_SOURCE == "others":
        y, r = _others(df, y, r)
        # A model with one benchmark has no other stratum of the label: the prior alone. (The other
        # models' strata of the label in that benchmark were tried: on XSTest they mix models whose
        # rates differ tenfold, and 12 % of the models ended their waves above target.)
    out: NDArray[np.float64] = (y + weight * pi0) / (r + weight)
    return out


def plan_round(
    strata: pd.DataFrame,
    target_halfwidth: float | Mapping[str, float] | None = None,
    *,
    budget: float | None = None,
    reviewers: int = 2,
    expert_share: float = 0.0,
    unresolved: float = 0.0,
    confidence: float = 0.95,
    prior: Mapping[str, float] | None = None,
    prior_weight: float = 2.0,
    min_new: int = 5,
    variances: NDArray[np.float64] | None = None,
    rates: NDArray[np.float64] | None = None,
    design: str = "pooled",
) -> RoundPlan:
    """The next wave that brings every model's corrected rate to its target half-width (module docstring).

    Parameters
    ----------
    strata : DataFrame, one row per stratum
        ``model, benchmark, stratum, judge_label, population`` (N_h), ``sampled`` (p_h: sampled
        in earlier waves), ``resolved`` (r_h: with a final label) and ``harmful`` (y_h);
        optionally ``keep_population`` and ``keep_resolved`` (:func:`model_allocation`) where a
        stratum was drawn from in several waves.
    target_halfwidth : float or mapping model -> float
        t_m, the wanted half-width of each model's interval (0.03 = +-3 points).
    budget : float, optional
        Instead of a target: the reviews the next wave may take. The plan is the one for the
        smallest common half-width whose reviews fit (bisection).
    reviewers : int
        Reviewers per item.
    expert_share : float
        Expected share of items sent to an expert as well (a disagreement).
    unresolved : float
        u, the expected share of reviewed items left without a final label.
    confidence : float
        Of the intervals (z = its two-sided normal quantile).
    prior, prior_weight : mapping, float
        pi0 per judge label (default :data:`PRIOR_RATES`) and m0.
    min_new : int
        The least new sample of a stratum that is sampled again.
    variances : ndarray, optional
        Known S_h^2 per row (normal theory, no floor) instead of the guesses.
    rates : ndarray, optional
        Known pi_h per row (an oracle, for simulations) instead of the guesses; the floor applies.
    design : {"pooled", "conditional"}
        How the waves of a stratum are estimated (docs/methods.md 4.9): ``"pooled"`` (the
        default): a row is a stratum with all its waves, ``sampled`` and ``resolved`` their
        union, one sample of N_h (:func:`pooled_allocation`); ``"conditional"``: what earlier
        waves sampled is a census of its own and the next wave an SRS of the remainder
        (:func:`model_allocation`, with ``keep_population``/``keep_resolved``).

    Returns
    -------
    RoundPlan

    Examples
    --------
    A model with one benchmark of 1,000 responses, half of them ambiguous, nothing reviewed yet;
    +-3 points at 95 % (e = .03 / 1.95996 = .015306). With the prior rates, c = (.1 sqrt(.85 x .15),
    .4 sqrt(.04 x .96), .5 x .5) = (.035707, .078384, .25), sum .364091; F = .01 x .1275 / 100 +
    .16 x .0384 / 400 + .25 x .25 / 500 = .00015311; so n_h = c_h x .364091 / (.00023428 + .00015311)
    = 33.6, 73.7, 235.0, rounded up to 34, 74, 235: 343 items, 686 reviews by two reviewers:

    >>> strata = pd.DataFrame({"model": "m", "benchmark": "b", "stratum": ["harmful", "safe", "ambiguous"],
    ...     "judge_label": ["harmful", "safe", "ambiguous"], "population": [100, 400, 500],
    ...     "sampled": 0, "resolved": 0, "harmful": 0})
    >>> plan = plan_round(strata, 0.03)
    >>> plan.strata.n.tolist(), round(float(plan.models.expected_halfwidth[0]), 4), int(plan.reviews)
    ([34, 74, 235], 0.0299, 686)
    """
    miss = [c for c in _NEED if c not in strata]
    if miss:
        raise ValueError(f"The strata frame lacks column(s) {miss}.")
    if (target_halfwidth is None) == (budget is None):
        raise ValueError("give a target half-width or a budget (one of them).")
    if design not in ("pooled", "conditional"):
        raise ValueError(f"design must be 'pooled' or 'conditional'; got {design!r}.")
    if not 0 <= unresolved < 1 or not 0 <= expert_share <= 1 or reviewers < 1:
        raise ValueError("unresolved must be in [0, 1), expert_share in [0, 1] and reviewers >= 1.")
    bad = set(strata["judge_label"].astype(str)) - set(JUDGE_LABELS)
    if bad:
        raise ValueError(f"Unknown judge_label values {sorted(bad)}; expected one of {list(JUDGE_LABELS)}.")
    z = normal_quantile(0.5 + confidence / 2.0)  # the normal quantile
    df = strata.reset_index(drop=True).copy()
    N = df["population"].to_numpy(dtype=np.float64)
    Ncell = df.groupby(["model", "benchmark"])["population"].transform("sum").to_numpy(dtype=np.float64)
    B = df.groupby("model")["benchmark"].transform("nunique").to_numpy(dtype=np.float64)
    a = N / (B * Ncell)
    pi = (
        np.asarray(rates, dtype=np.float64)
        if rates is not None
        else _rate_guess(df, dict(PRIOR_RATES) | dict(prior or {}), prior_weight)
    )
    S2 = np.array(variances, dtype=np.float64) if variances is not None else pi * (1 - pi)
    sampled = df["sampled"].to_numpy(dtype=np.float64)
    resolved = df["resolved"].to_numpy(dtype=np.float64)
    keep_pop = df["keep_population"].to_numpy(dtype=np.float64) if "keep_population" in df else N
    keep_res = df["keep_resolved"].to_numpy(dtype=np.float64) if "keep_resolved" in df else resolved
    codes, uniques = pd.factorize(df["model"].astype(str))
    models = [str(m) for m in uniques]
    groups = [np.flatnonzero(codes == k) for k in range(len(models))]
    per_item = reviewers + expert_share

    def solve(targets: Mapping[str, float]) -> tuple[NDArray[np.float64], list[dict[str, object]]]:
        n: NDArray[np.float64] = np.zeros(len(df))
        if variances is None:  # the fiducial floor: re-solved with the planned n (twice)
            for _ in range(2):
                n, _rows = solve_once(targets, n)
        return solve_once(targets, n)

    def solve_once(
        targets: Mapping[str, float], n_prev: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], list[dict[str, object]]]:
        if variances is None:
            floor = 0.5 / (resolved + n_prev * (1.0 - unresolved) + 1.0)
            p = np.maximum(pi, floor)
            S2[:] = p * (1.0 - p)
        if design == "pooled":
            return solve_pooled(targets)
        n = np.zeros(len(df))
        rows: list[dict[str, object]] = []
        for m, idx in zip(models, groups, strict=True):
            t = float(targets[m])
            e = (t - unresolved / 2.0) / z
            note = ""
            if e <= 0:
                note = f"not reachable: {unresolved:.0%} unresolved alone give a half-width of {unresolved / 2:.3f}"
                e = 1e-6
            nm, v0, v1 = model_allocation(
                a[idx],
                N[idx],
                sampled[idx],
                resolved[idx],
                S2[idx],
                e * e,
                unresolved=unresolved,
                min_new=min_new,
                keep_population=keep_pop[idx],
                keep_resolved=keep_res[idx],
            )
            n[idx] = nm
            hw0 = z * np.sqrt(v0) + unresolved / 2.0
            hw1 = z * np.sqrt(v1) + unresolved / 2.0
            reach = bool(hw1 <= t + 1e-9) and not note
            if not reach and not note:
                note = UNREACHABLE
            rows.append(
                {
                    "model": m,
                    "target": t,
                    "halfwidth_now": float(hw0),
                    "expected_halfwidth": float(hw1),
                    "items": int(nm.sum()),
                    "reviews": float(nm.sum() * per_item),
                    "at_target": bool(hw0 <= t + 1e-9),
                    "reachable": reach,
                    "note": note,
                }
            )
        return n, rows

    def solve_pooled(targets: Mapping[str, float]) -> tuple[NDArray[np.float64], list[dict[str, object]]]:
        t = np.array([float(targets[m]) for m in models])
        e = (t - unresolved / 2.0) / z
        bad = e <= 0
        e = np.where(bad, 1e-6, e)
        n, v0, v1 = pooled_allocation(
            a, N, sampled, resolved, S2, e * e, codes.astype(np.int64), unresolved=unresolved, min_new=min_new
        )
        items = np.bincount(codes, weights=n, minlength=len(models))
        hw0 = z * np.sqrt(v0) + unresolved / 2.0
        hw1 = z * np.sqrt(v1) + unresolved / 2.0
        rows: list[dict[str, object]] = []
        for k, m in enumerate(models):
            note = ""
            if bad[k]:
                note = f"not reachable: {unresolved:.0%} unresolved alone give a half-width of {unresolved / 2:.3f}"
            reach = bool(hw1[k] <= t[k] + 1e-9) and not note
            if not reach and not note:
                note = UNREACHABLE
            rows.append(
                {
                    "model": m,
                    "target": float(t[k]),
                    "halfwidth_now": float(hw0[k]),
                    "expected_halfwidth": float(hw1[k]),
                    "items": int(items[k]),
                    "reviews": float(items[k] * per_item),
                    "at_target": bool(hw0[k] <= t[k] + 1e-9),
                    "reachable": reach,
                    "note": note,
                }
            )
        return n, rows

    if budget is not None:
        n, rows = solve(dict.fromkeys(models, BUDGET_HIGH))
        if _total(rows) <= budget:
            (n, rows), _ = smallest_fitting(
                lambda t: solve(dict.fromkeys(models, t)), lambda plan: _total(plan[1]), budget, (n, rows)
            )
    else:
        assert target_halfwidth is not None
        targets = (
            dict.fromkeys(models, float(target_halfwidth))
            if isinstance(target_halfwidth, int | float)
            else {m: float(target_halfwidth[m]) for m in models}
        )
        if any(not t > 0 for t in targets.values()):
            raise ValueError("target half-widths must be positive.")
        n, rows = solve(targets)
    out = df.copy()
    out["rate_guess"] = pi
    out["remainder"] = (N - sampled).astype(np.int64)
    out["n"] = n.astype(np.int64)
    out["census"] = (n > 0) & (n >= N - sampled)
    model_frame = pd.DataFrame(rows)
    return RoundPlan(out, model_frame, float(model_frame["reviews"].sum()) if len(model_frame) else 0.0)


#: The range of common half-widths a budget's plan is searched over.
BUDGET_LOW, BUDGET_HIGH = 1e-4, 1.0

PlanT = TypeVar("PlanT")


def smallest_fitting(
    plan_at: Callable[[float], PlanT],
    reviews_of: Callable[[PlanT], float],
    budget: float,
    at_high: PlanT,
    *,
    lo: float = BUDGET_LOW,
    hi: float = BUDGET_HIGH,
) -> tuple[PlanT, float]:
    """(the plan, t) for the smallest common half-width t in (lo, hi] whose reviews fit ``budget``.

    Geometric bisection to 0.1 % (at most 40 steps); ``at_high`` is ``plan_at(hi)``, which fits.
    The reviews a plan takes fall as t grows, so the fitting plans are those at t above a bound.

    >>> t = smallest_fitting(lambda t: 1 / t, lambda reviews: reviews, 100.0, 1.0)[1]  # 1/t <= 100
    >>> 0.01 <= t < 0.0101
    True
    """
    best = at_high
    for _ in range(40):
        mid = (lo * hi) ** 0.5
        trial = plan_at(mid)
        if reviews_of(trial) <= budget:
            hi, best = mid, trial
        else:
            lo = mid
        if hi / lo < 1.001:
            break
    return best, hi


def _total(rows: list[dict[str, object]]) -> float:
    return float(sum(float(str(r["reviews"])) for r in rows))


def ranking_targets(estimates: Mapping[str, float], *, tie_margin: float = 0.01) -> dict[str, float]:
    """Per model, the half-width that separates it from its nearest neighbour or declares them tied.

    t_m = max(d_m, tau) / sqrt(2), d_m the distance to the nearest other estimate, tau =
    ``tie_margin`` (module docstring).

    Examples
    --------
    >>> t = ranking_targets({"a": 0.10, "b": 0.16, "c": 0.165}, tie_margin=0.01)
    >>> {k: round(v, 4) for k, v in t.items()}
    {'a': 0.0424, 'b': 0.0071, 'c': 0.0071}
    """
    if not tie_margin > 0:
        raise ValueError("tie_margin must be positive.")
    names = list(estimates)
    vals = np.array([float(estimates[k]) for k in names])
    out = {}
    for i, k in enumerate(names):
        others = np.delete(vals, i)
        d = float(np.min(np.abs(others - vals[i]))) if len(others) else np.inf
        out[k] = float(max(d if np.isfinite(d) else 1.0, tie_margin) / np.sqrt(2.0))
    return out
