"""A round sized to a target: the next wave's reviews per stratum for every model's half-width (pure).

docs/methods.md 4.9 (the design) and 4.10 (this planner). The estimand is a model's corrected
rate, the macro-average over its B benchmarks (4.7): p_m = sum_h a_h ybar_h with
a_h = N_h / (B N_cell) over the model's strata h (every (benchmark, stratum) of the model).

**The design after the next wave** (4.9): in stratum h, the p_h responses sampled so far (any
earlier wave, reviewed or awaiting review) become a census stratum of their own, and the next
wave draws a simple random sample of n_h from the R_h = N_h - p_h not yet sampled. Given the
past, the remainder's sample mean is unbiased for the remainder's rate and

    Var_h(n_h) = w_h^2 (1 / (n_h (1 - u)) - 1 / R_h) S_h^2,     w_h = R_h / (B N_cell),

with u the expected share of reviewed items left unresolved (they count against the resolved
sample). A stratum that gets no new sample keeps its earlier design, Var_h = a_h^2 (1/r_h -
1/N_h) S_h^2 (r_h resolved so far); one with r_h = 0 must be sampled. S_h^2 = pi_h (1 - pi_h)
with the rate guessed from the stratum's own labels and a prior of weight m0:

    pi_h = (y_h + m0 pi0_h) / (r_h + m0),      pi0 = .85 (judge harmful), .04 (safe), .5 (ambiguous),

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

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotate.columns import JUDGE_LABELS

__all__ = [
    "PRIOR_RATES",
    "RoundPlan",
    "model_allocation",
    "plan_round",
    "ranking_targets",
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


def _rate_guess(df: pd.DataFrame, prior: Mapping[str, float], weight: float) -> NDArray[np.float64]:
    pi0 = df["judge_label"].map(lambda v: prior.get(v, 0.5)).to_numpy(dtype=np.float64)
    y, r = df["harmful"].to_numpy(dtype=np.float64), df["resolved"].to_numpy(dtype=np.float64)
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
    if not 0 <= unresolved < 1 or not 0 <= expert_share <= 1 or reviewers < 1:
        raise ValueError("unresolved must be in [0, 1), expert_share in [0, 1] and reviewers >= 1.")
    bad = set(strata["judge_label"].astype(str)) - set(JUDGE_LABELS)
    if bad:
        raise ValueError(f"Unknown judge_label values {sorted(bad)}; expected one of {list(JUDGE_LABELS)}.")
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + confidence / 2.0))
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
                note = "not reachable even with every remaining response reviewed"
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

    if budget is not None:
        lo, hi = 1e-4, 1.0
        n, rows = solve(dict.fromkeys(models, hi))
        if _total(rows) <= budget:
            for _ in range(40):
                mid = (lo * hi) ** 0.5
                n_mid, rows_mid = solve(dict.fromkeys(models, mid))
                if _total(rows_mid) <= budget:
                    hi, n, rows = mid, n_mid, rows_mid
                else:
                    lo = mid
                if hi / lo < 1.001:
                    break
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
