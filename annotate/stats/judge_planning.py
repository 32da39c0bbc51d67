"""How many reviews the model test needs to find a judge that errs differently on one model (pure).

``annotate plan --detect-se MODEL:OTHERS`` (docs/methods.md 9.16): the reviews of each clear stratum
(judge harmful, judge safe; each sized on its own) at which the test of
:mod:`annotate.stats.judge_models` finds a judge whose sensitivity is MODEL on one model and OTHERS
on the rest, with a given power; and, where no number of reviews reaches that power, the power a
census of the clear strata reaches.

The model. M models of N responses each, a share pi harmful; the judge calls a share a of them
ambiguous and, of the rest, a harmful one harmful with probability Se (Se_m on the one model, Se_o on
the others) and a safe one safe with probability Sp. With C = N (1 - a) clear responses per model,
the judge-harmful and judge-safe strata hold

    N_H = C (pi Se + (1 - pi)(1 - Sp)),   N_S = C (pi (1 - Se) + (1 - pi) Sp)

responses, of which shares y_H = C pi Se / N_H and y_S = C pi (1 - Se) / N_S are harmful. The
judge's figure is Se = A / (A + B), A = N_H y_H, B = N_S y_S (its clear verdicts on the harmful
responses); each is estimated from r_H and r_S reviews (at most the stratum's size). Delta method,
the strata's sizes a multinomial sample of the model's N responses (p_H = N_H / N, p_S = N_S / N):

    Var(A) = y_H^2 N p_H (1 - p_H) + N_H^2 y_H (1 - y_H) g(r_H)      Var(B) alike
    Cov(A, B) = -y_H y_S N p_H p_S
    V(Se) = [B^2 Var(A) + A^2 Var(B) - 2 A B Cov(A, B)] / (A + B)^4

twice: the *sampling* variance of the estimate, g(r) = 1 / r (a simple random sample of r; a
census too, its responses a sample of prompts), and the *posterior* variance of the test's draws
(the prompts view of :mod:`annotate.stats.judge_posterior`), g(r) = 1 / (max(r - 4, 1) + 1) +
1 / (r + 1)^2 (a Dirichlet of concentration r - 4, plus the pseudo-response's own label).

The reference. The test compares Se_m with the others' biweight centre (Tukey, each model on its
own posterior SD: close to the precision-weighted mean of the models near the centre). Its variance
against the mean of the M - 1 others' figures, measured on normal figures with ``robust_centre``
itself (docs/methods.md 9.16): kappa_s = 1.05 for the estimate (the biweight's 95 % efficiency;
0.95-1.10 measured) and, for the draws, kappa_p = 1 + 0.41 rho^2, rho^2 = V_samp(Se_o) / V_post(Se_o)
(within 0.04 of the measured 1.10-1.42 for 3 to 15 other models; the draws of models whose
estimates scatter around the centre move it more than the mean). The median's pi / 2, the factor
before issue #41, is gone with the median.

The scale. The test's draws of Delta are not normal at the level a first discovery needs (p of a
few in a thousand): the missed harm B is a small count, and A / (A + B) bends its tails. On the
scale h(Se) = ((1 - Se) / Se)^(1/3) = (B / A)^(1/3), the cube root of a Gamma-like count (Wilson
and Hilferty), they nearly are; with h' = dh / dSe = -h / (3 Se (1 - Se)) and c = :data:`CALIBRATION`,

    V_samp = c^2 [h'(Se_m)^2 V_samp(Se_m) + h'(Se_o)^2 kappa_s V_samp(Se_o) / (M - 1)]
    V_post = c^2 [h'(Se_m)^2 V_post(Se_m) + h'(Se_o)^2 kappa_p V_post(Se_o) / (M - 1)]
    Delta_h = |h(Se_m) - h(Se_o)|

c is measured, not derived (bench/judge_planning.py ``--calibrate``): the test itself
(``judge_audit``) was simulated at 51 designs, 120 to 150 suites each (1 or 2 judges, 4 or 8
models of 80 to 400 responses, 10 to 50 % harmful, Sp 0.80 or 0.95, a model's Se 0.45, 0.60, 0.70
or 0.95 against 0.75 or 0.90, samples and censuses), and the factor at which the power below equals
the simulated power ranged from 0.79 to 1.04 (median 0.93); on the Se scale, from 0.78 to 1.41 (the
test is more powerful than a normal Se says where the model's judge misses more, less powerful where
it misses less). c = 1.05, the largest rounded up: the promise is at most the simulated power in
every measured regime, and below it in the most favourable ones (a census most: there c is a third
larger than the factor needed). The reference's own lean (the precision weights favour the models whose figure is
estimated highest, which have the narrowest posteriors: 0.01 to 0.03 above the others' mean in
these suites) is in c too.

The test flags the row where a first Benjamini-Hochberg discovery among T tests does, p <= alpha
= fdr / T, p the doubled share of the D test draws beyond 0: X <= k = floor(alpha D / 2) draws of
D, X ~ Binomial(D, Phi(-Delta_hat / sqrt(V_post))), Delta_hat ~ N(Delta_h, V_samp). The power,

    power(r_H, r_S) = E[ P(X <= k) ]    (-> Phi((Delta_h - z_(1 - alpha/2) sqrt(V_post)) / sqrt(V_samp)) as D grows)

is averaged over Delta_hat numerically. The plan takes the (r_H, r_S) with the fewest reviews over
the M models' clear strata (each stratum's reviews capped at its size) whose power reaches the
target, at least :data:`MIN_PER_STRATUM` each (Neyman-like: the reviews go where they shrink the
variance most, mostly to the judge-safe stratum, where the harm the judge missed hides; a stratum
exhausted, the other takes up the rest). Where even a census does not reach it, the plan is the
census and its power, the *reachable* power; no number beyond the strata's sizes is ever given.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from annotate.stats._common import normal_quantile
from annotate.stats.judge_posterior import CONC_OFFSET
from annotate.stats.judges import TEST_DRAWS

__all__ = [
    "CALIBRATION",
    "KAPPA_POSTERIOR",
    "KAPPA_SAMPLING",
    "MIN_PER_STRATUM",
    "detection_power",
    "reviews_to_detect",
]

#: Reviews of a clear stratum at least (all of it when smaller): the posterior of a share is sane from about here.
MIN_PER_STRATUM = 10
#: The biweight centre's sampling variance against the mean's (its 95 % efficiency at the normal).
KAPPA_SAMPLING = 1.05
#: kappa_p = 1 + KAPPA_POSTERIOR rho^2: the centre's variance over the draws against the mean's.
KAPPA_POSTERIOR = 0.41
#: The standard deviations on the h scale times this: the largest factor measured by simulation, rounded up
#: (bench/judge_planning.py; module docstring).
CALIBRATION = 1.05

# Delta_hat's normal, on a grid of standard scores (weights: the normal density, normalised).
_U = np.linspace(-8.0, 8.0, 641)
_W = np.exp(-0.5 * _U**2) / np.exp(-0.5 * _U**2).sum()


def _strata(se: float, prevalence: float, specificity: float, ambiguous: float, responses: float) -> dict[str, float]:
    """A model's expected clear strata: sizes N_H, N_S and harmful shares y_H, y_S (module docstring)."""
    clear = responses * (1 - ambiguous)
    n_h = clear * (prevalence * se + (1 - prevalence) * (1 - specificity))
    n_s = clear - n_h
    a, b = clear * prevalence * se, clear * prevalence * (1 - se)
    return {"n_h": n_h, "n_s": n_s, "y_h": a / n_h if n_h else 0.0, "y_s": b / n_s if n_s else 0.0, "a": a, "b": b}


def _h(se: float) -> float:
    """The scale of the test statistic: the cube root of the odds of a miss, ((1 - Se) / Se)^(1/3)."""
    return float(((1 - se) / se) ** (1 / 3))


def _dh(se: float) -> float:
    """dh / dSe = -h / (3 Se (1 - Se))."""
    return -_h(se) / (3.0 * se * (1 - se))


def _g(r: NDArray[np.float64], posterior: bool) -> NDArray[np.float64]:
    """The variance factor of a share estimated from r reviews: y (1 - y) g(r)."""
    r = np.maximum(r, 1.0)
    if not posterior:
        return 1.0 / r
    return 1.0 / (np.maximum(r - CONC_OFFSET, 1.0) + 1.0) + 1.0 / (r + 1.0) ** 2


def _se_variance(
    st: dict[str, float], responses: float, r_h: NDArray[np.float64], r_s: NDArray[np.float64], posterior: bool
) -> NDArray[np.float64]:
    """V(Se) of one model at r_H, r_S reviews (capped at the strata's sizes), by the delta method."""
    n_h, n_s, y_h, y_s, a, b = (st[k] for k in ("n_h", "n_s", "y_h", "y_s", "a", "b"))
    if a + b <= 0:
        return np.full(np.shape(r_h), np.inf)
    p_h, p_s = n_h / responses, n_s / responses
    rh, rs = np.minimum(r_h, max(n_h, 1.0)), np.minimum(r_s, max(n_s, 1.0))
    var_a = y_h**2 * responses * p_h * (1 - p_h) + n_h**2 * y_h * (1 - y_h) * _g(rh, posterior)
    var_b = y_s**2 * responses * p_s * (1 - p_s) + n_s**2 * y_s * (1 - y_s) * _g(rs, posterior)
    cov = -y_h * y_s * responses * p_h * p_s
    return np.asarray((b**2 * var_a + a**2 * var_b - 2 * a * b * cov) / (a + b) ** 4, dtype=np.float64)


def _flag_curve(alpha: float, test_draws: int | None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """P(flagged) as a function of x = |Delta_hat| / sqrt(V_post), on a grid (module docstring)."""
    x = np.asarray(np.linspace(-2.0, 14.0, 1601), dtype=np.float64)
    if not test_draws:
        return x, (x >= normal_quantile(1 - alpha / 2)).astype(np.float64)
    tail = np.array([0.5 * math.erfc(v / math.sqrt(2.0)) for v in x])  # Phi(-x)
    d = int(test_draws)
    k = int(math.floor(alpha * d / 2 + 1e-9))
    i = np.arange(k + 1, dtype=np.float64)
    log_choose = np.array([math.lgamma(d + 1) - math.lgamma(j + 1) - math.lgamma(d - j + 1) for j in range(k + 1)])
    t = np.clip(tail, 1e-300, 1 - 1e-16)[:, None]
    pmf = np.exp(log_choose[None, :] + i[None, :] * np.log(t) + (d - i[None, :]) * np.log1p(-t))
    return x, np.asarray(np.minimum(pmf.sum(axis=1), 1.0), dtype=np.float64)


def detection_power(
    se_model: float,
    se_rest: float,
    reviews_harmful: float | NDArray[np.float64],
    reviews_safe: float | NDArray[np.float64],
    *,
    prevalence: float,
    specificity: float,
    ambiguous: float,
    responses: int,
    models: int,
    alpha: float,
    test_draws: int | None = TEST_DRAWS,
    calibration: float = CALIBRATION,
) -> dict[str, Any]:
    """The model test's power at r_H, r_S reviews per judge-harmful and judge-safe stratum (module docstring).

    Parameters
    ----------
    se_model, se_rest : float
        The judge's sensitivity on the one model and on the others.
    reviews_harmful, reviews_safe : float or ndarray
        Reviews per judge-harmful and judge-safe stratum of every model (each capped at its
        stratum's expected size); arrays broadcast.
    prevalence, specificity, ambiguous : float
        pi, Sp, a.
    responses, models : int
        N per model, M.
    alpha : float
        The level a discovery needs (``fdr / tests`` for a first Benjamini-Hochberg discovery).
    test_draws : int or None
        D, the test's draws (``None``: infinitely many).
    calibration : float
        c (default :data:`CALIBRATION`; bench/judge_planning.py measures it).

    Returns
    -------
    dict
        ``power``, ``se_difference`` (sqrt V_post, the draws' SD of Delta) and
        ``se_difference_sampling`` (sqrt V_samp), each shaped as the reviews.

    Examples
    --------
    Eight models of 400 responses, 30 % harmful, 15 % ambiguous, Sp 0.95; Se 0.60 against 0.90 at
    level 0.10 / 16 with 4,000 draws. 13 judge-harmful and 75 judge-safe reviews per model give 80 %;
    44 of each (as many reviews) give 60 %, 75 of each 87 %:

    >>> out = detection_power(0.6, 0.9, np.array([13, 44, 75]), np.array([75, 44, 75]), prevalence=0.3,
    ...                       specificity=0.95, ambiguous=0.15, responses=400, models=8, alpha=0.1 / 16)
    >>> out["power"].round(2).tolist(), out["se_difference"].round(3).tolist()
    ([0.8, 0.6, 0.87], [0.084, 0.1, 0.078])
    """
    m = _strata(se_model, prevalence, specificity, ambiguous, responses)
    o = _strata(se_rest, prevalence, specificity, ambiguous, responses)
    r_h, r_s = np.broadcast_arrays(np.asarray(reviews_harmful, dtype=np.float64), np.asarray(reviews_safe, np.float64))
    vs_m = _se_variance(m, responses, r_h, r_s, posterior=False)
    vp_m = _se_variance(m, responses, r_h, r_s, posterior=True)
    vs_o = _se_variance(o, responses, r_h, r_s, posterior=False) * KAPPA_SAMPLING / (models - 1)
    vp_o = (_se_variance(o, responses, r_h, r_s, posterior=True) + KAPPA_POSTERIOR * vs_o / KAPPA_SAMPLING) / (
        models - 1
    )
    # On the scale h(Se) = ((1 - Se) / Se)^(1/3), h' = -h / (3 Se (1 - Se)): the variances times h'^2.
    dm, do = _dh(se_model), _dh(se_rest)
    v_samp = calibration**2 * (dm**2 * vs_m + do**2 * vs_o)
    v_post = calibration**2 * (dm**2 * vp_m + do**2 * vp_o)
    x, curve = _flag_curve(alpha, test_draws)
    est = abs(_h(se_model) - _h(se_rest)) + _U * np.sqrt(v_samp)[..., None]
    power = (np.interp(est / np.sqrt(v_post)[..., None], x, curve, left=0.0, right=1.0) * _W).sum(axis=-1)
    sd_p, sd_s = np.sqrt(vp_m + vp_o), np.sqrt(vs_m + vs_o)
    return {"power": power, "se_difference": sd_p, "se_difference_sampling": sd_s}


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
    test_draws: int | None = TEST_DRAWS,
) -> dict[str, Any]:
    """Reviews per judge-harmful and judge-safe stratum for the model test to find a judge's sensitivity.

    The suite and the formulas are the module docstring's: the plan is the (r_H, r_S), each at
    least :data:`MIN_PER_STRATUM` (all of a smaller stratum) and at most what the strata hold, with
    the fewest reviews over every model's clear strata whose power reaches ``power`` at level
    ``alpha``. The Benjamini-Hochberg step across T tests acts, for the first discovery, like a
    level of fdr / T: plan with that ``alpha`` (``annotate plan`` does, T = judges x models x 2).

    Returns
    -------
    dict
        ``reviews_judge_harmful``, ``reviews_judge_safe`` (per stratum of every model; each the
        stratum's size at most), ``capped_judge_harmful``, ``capped_judge_safe`` (the number is the
        whole of that stratum of the model: a census of it), ``reachable`` (the power is reached),
        ``power`` (wanted), ``power_promised`` (at the plan: at least ``power`` when reachable, else
        the reachable power), ``power_reachable`` (a census of every clear stratum),
        ``reviews_per_model`` (the model's clear reviews), ``reviews_total`` (over the M models),
        ``harmful_reviewed_per_model`` (expected), ``judge_harmful_stratum``,
        ``judge_safe_stratum`` (the model's expected sizes), ``se_difference`` and
        ``se_difference_sampling`` at the plan, ``alpha``, ``test_draws``.

    Examples
    --------
    Eight models of 400 responses, 30 % harmful, 15 % ambiguous, Sp 0.95: Se 0.60 on one model
    against 0.90 on the others, 80 % power at level 0.10 / 16 (one judge: 8 models x 2 figures).
    Most reviews go to the judge-safe strata, where the missed harm is:

    >>> out = reviews_to_detect(0.60, 0.90, prevalence=0.3, specificity=0.95, ambiguous=0.15,
    ...                         responses=400, models=8, alpha=0.1 / 16)
    >>> out["reviews_judge_harmful"], out["reviews_judge_safe"], out["reachable"], round(out["power_promised"], 2)
    (13, 75, True, 0.8)

    (A common number per stratum needs 64 of each: 128 reviews per model against 88.) With 100
    responses per model even a census falls short: the plan is the census, and its power.

    >>> out = reviews_to_detect(0.60, 0.90, prevalence=0.3, specificity=0.95, ambiguous=0.15,
    ...                         responses=100, models=8, alpha=0.1 / 16)
    >>> out["reachable"], out["capped_judge_harmful"], out["capped_judge_safe"], round(out["power_reachable"], 2)
    (False, True, True, 0.58)
    """
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError("alpha and power must be between 0 and 1")
    if models < 3:
        raise ValueError("the test compares one model with the others' centre: it needs three models at least")
    if se_model == se_rest:
        raise ValueError("the sensitivities to tell apart must differ")
    if responses < 1:
        raise ValueError("responses per model must be at least 1")
    kw: dict[str, Any] = {
        "prevalence": prevalence,
        "specificity": specificity,
        "ambiguous": ambiguous,
        "responses": responses,
        "models": models,
        "alpha": alpha,
        "test_draws": test_draws,
    }
    m = _strata(se_model, prevalence, specificity, ambiguous, responses)
    o = _strata(se_rest, prevalence, specificity, ambiguous, responses)
    if m["a"] + m["b"] <= 0 or m["n_h"] <= 0 or m["n_s"] <= 0:
        raise ValueError("with these rates a model has no harmful response or an empty clear stratum")
    # Beyond the largest stratum of its kind, more reviews change nothing: a census.
    top_h, top_s = math.ceil(max(m["n_h"], o["n_h"])), math.ceil(max(m["n_s"], o["n_s"]))
    low_h, low_s = min(MIN_PER_STRATUM, top_h), min(MIN_PER_STRATUM, top_s)

    def cost(r_h: NDArray[np.float64], r_s: NDArray[np.float64]) -> NDArray[np.float64]:
        """Expected reviews over the M models' clear strata."""
        return (
            np.minimum(r_h, m["n_h"])
            + (models - 1) * np.minimum(r_h, o["n_h"])
            + np.minimum(r_s, m["n_s"])
            + (models - 1) * np.minimum(r_s, o["n_s"])
        )

    def pw(r_h: Any, r_s: Any) -> NDArray[np.float64]:
        return np.asarray(detection_power(se_model, se_rest, r_h, r_s, **kw)["power"], dtype=np.float64)

    reachable = float(pw(top_h, top_s))
    # Every r_H (a geometric grid of integers when there are many), the smallest r_S reaching the power (bisection).
    many = top_h - low_h > 400
    grid = np.asarray(
        np.unique(np.round(np.geomspace(low_h, top_h, 400))) if many else np.arange(low_h, top_h + 1), float
    )
    ok = pw(grid, np.full(grid.shape, float(top_s))) >= power
    r_h, r_s = float(top_h), float(top_s)
    if ok.any():
        g = grid[ok]
        lo, hi = np.full(g.shape, float(low_s)), np.full(g.shape, float(top_s))
        while (hi > lo).any():
            mid = np.floor((lo + hi) / 2)
            meets = pw(g, mid) >= power
            lo, hi = np.where(meets, lo, mid + 1), np.where(meets, mid, hi)
        total = cost(g, hi)
        best = int(np.argmin(total))
        r_h, r_s = float(g[best]), float(hi[best])
    at = detection_power(se_model, se_rest, r_h, r_s, **kw)
    rh_m, rs_m = min(r_h, m["n_h"]), min(r_s, m["n_s"])
    return {
        "reviews_judge_harmful": int(r_h),
        "reviews_judge_safe": int(r_s),
        "capped_judge_harmful": bool(r_h >= m["n_h"]),
        "capped_judge_safe": bool(r_s >= m["n_s"]),
        "reachable": bool(ok.any()),
        "power": power,
        "power_promised": float(at["power"]),
        "power_reachable": reachable,
        "reviews_per_model": rh_m + rs_m,
        "reviews_total": float(cost(np.asarray(r_h), np.asarray(r_s))),
        "harmful_reviewed_per_model": rh_m * m["y_h"] + rs_m * m["y_s"],
        "judge_harmful_stratum": m["n_h"],
        "judge_safe_stratum": m["n_s"],
        "se_difference": float(at["se_difference"]),
        "se_difference_sampling": float(at["se_difference_sampling"]),
        "alpha": alpha,
        "test_draws": test_draws,
    }
