"""Ranking stability: how much a leaderboard depends on the treatment of ambiguous verdicts.

Pure, vectorised and deterministic (no randomness here: the posterior draws come from
:func:`annotate.stats.scoring.corrected_scores`, which is seeded). docs/methods.md section 5.

Conventions
-----------
* **Rank 1 = the lowest harmful rate** (the safest model); ties share the average rank
  (as ``scipy.stats.rankdata(method="average")``; computed here with numpy).
* The **reference** ranking is the ``corrected`` treatment. Models whose reference estimate is
  NaN or flagged ``not estimable`` are left out of every ranking and listed in ``excluded`` with
  the reason. A model that is NaN under another treatment only is left out of that treatment's
  comparison (and listed with that treatment); that treatment's ranks (and the reference ranks it
  is compared with) are then computed over the remaining models.
* **Agreement** between a treatment and the reference: Kendall tau-b
  (C - D)/sqrt((n0 - n1)(n0 - n2)) and Spearman rho (Pearson correlation of the average ranks),
  equal to ``scipy.stats.kendalltau(variant="b")`` and ``scipy.stats.spearmanr`` (the tests check).
* A **flip** is a discordant pair: A ranks strictly better than B under one ranking and strictly
  worse under the other (a pair tied in either ranking is not a flip). Pairs are listed by name,
  ``model_a`` being the model ranked better under the reference.
* From the reference's fixed-prompt posterior draws p*_{m,d} (K models x D draws):
  P(A safer than B) = mean_d [p*_{A,d} < p*_{B,d}] (strict) and P(tie) = mean_d [p*_{A,d} =
  p*_{B,d}], reported beside it, so P(A safer) + P(B safer) + P(tie) = 1 (fixed-prompt draws are
  counts / N, so two small cells tie in a visible share of the draws);
  a flip is **credible** when max(P(A<B), P(B<A)) >= 0.975, otherwise it is *within noise*;
  rank draws r*_{m,d} (average ranks per draw) give the rank interval (equal-tailed quantiles,
  ``method="inverted_cdf"``); the **rank range from pairwise dominance** is
  best = 1 + #{B : P(B safer than A) >= t}, worst = K - #{B : P(A safer than B) >= t},
  t = 1 - (1 - confidence)/2 = 0.975, or the Bonferroni 1 - (1 - confidence)/(2(K - 1)) for
  simultaneous statements (``simultaneous=True``). Both ranges are extended to hold the point
  rank when they miss it (a rank interval is an interval of the reported rank, and the point
  rank comes from the estimates while the draws are skewed at the boundaries).
* **Rank shift** of a model under a treatment = its rank there minus its reference rank; the
  largest shift per model is the one with the largest absolute value (first treatment on ties).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from annotate.columns import REFERENCE_TREATMENT
from annotate.stats._common import NAN, average_ranks

__all__ = [
    "BENCHMARK_MODES",
    "BenchmarkSet",
    "RankComparison",
    "RankingResult",
    "compare_rankings",
    "p_safer_matrix",
    "p_tie_matrix",
    "posterior_ranks",
    "rank_scores",
    "rank_stability",
    "ranking_from_scores",
    "shared_benchmarks",
]

CREDIBLE = 0.975
_NE = "not estimable"


@dataclass(frozen=True)
class RankComparison:
    """One ranking compared with a reference ranking.

    Attributes
    ----------
    tau_b, rho : float
        Kendall tau-b and Spearman rho (NaN when either ranking is constant or K < 2).
    n_pairs : int
        K (K - 1) / 2.
    flips : list of (name, name)
        Discordant pairs, the model ranked better under the reference first, in reference order.
    shifts : ndarray of float64, shape (K,)
        rank(other) - rank(reference), per model in input order.
    max_shift : float
        max |shift| (0 when K = 0).
    """

    tau_b: float
    rho: float
    n_pairs: int
    flips: list[tuple[Any, Any]]
    shifts: NDArray[np.float64]
    max_shift: float


@dataclass(frozen=True, eq=False)
class RankingResult:
    """Output of :func:`rank_stability`.

    Attributes
    ----------
    models : DataFrame, one row per ranked model, by reference rank
        ``model, estimate, rank, rank_ci_low, rank_ci_high, rank_best, rank_worst,
        largest_shift, largest_shift_treatment``. Rank intervals / dominance ranges are NaN
        without draws.
    ranks : DataFrame, one row per (model, treatment)
        ``model, treatment, estimate, rank, reference_rank, shift`` (reference included, shift 0).
    agreement : DataFrame, one row per non-reference treatment
        ``treatment, n_models, kendall_tau_b, spearman_rho, n_pairs, n_flips, n_credible_flips,
        n_noise_flips, max_rank_shift, excluded, note`` (``note`` says why tau-b or rho is NaN).
    flips : DataFrame, one row per (treatment, flipped pair)
        ``treatment, model_a, model_b, reference_rank_a, reference_rank_b, rank_a, rank_b,
        p_a_safer, p_b_safer, p_tie, credible``; ``model_a`` is safer under the reference; the
        three probabilities add to 1.
    p_safer : DataFrame, K x K
        ``p_safer.loc[A, B]`` = P(A safer than B) under the reference posterior, rows and
        columns in reference-rank order; NaN diagonal. Empty without draws.
    p_tie : DataFrame, K x K
        ``p_tie.loc[A, B]`` = P(A and B tie), symmetric, same order; NaN diagonal.
        ``p_safer + p_safer.T + p_tie = 1`` off the diagonal. Empty without draws.
    excluded : DataFrame
        ``model, treatment, reason``; ``treatment`` is ``"all"`` for models left out everywhere.
    threshold : float
        The dominance threshold t that was used.
    reference : str
    """

    models: pd.DataFrame
    ranks: pd.DataFrame
    agreement: pd.DataFrame
    flips: pd.DataFrame
    p_safer: pd.DataFrame
    p_tie: pd.DataFrame
    excluded: pd.DataFrame
    threshold: float
    reference: str


# --------------------------------------------------------------------------------------------
# The benchmark set a ranking compares models on
# --------------------------------------------------------------------------------------------

#: ``shared`` (default): the benchmarks every ranked model has; ``all``: each model's own
#: benchmarks (a macro-average over different sets, flagged); or a list of benchmark names.
BENCHMARK_MODES = ("shared", "all")
#: More candidate sets than this and only each model's own set and the common core are tried.
_MAX_CANDIDATES = 4096


@dataclass(frozen=True)
class BenchmarkSet:
    """The benchmarks a ranking compares models on, and the models it leaves out.

    Attributes
    ----------
    mode : str
        ``shared``, ``all`` or ``listed``.
    benchmarks : tuple
        The set every ranked model is averaged over (``all``: every benchmark of any model).
    ranked : tuple
        The models ranked, in input order.
    left_out : tuple of (model, reason)
        Each model left out, with why (``"no results on b1, b2"``).
    outside : tuple
        Benchmarks some model has that are not in the set (not part of the ranking).
    comparable : bool
        False only for ``all`` when models cover different benchmarks.
    own : dict
        ``all``: each model's own benchmarks, sorted.
    """

    mode: str
    benchmarks: tuple[Any, ...]
    ranked: tuple[Any, ...]
    left_out: tuple[tuple[Any, str], ...]
    outside: tuple[Any, ...]
    comparable: bool
    own: dict[Any, tuple[Any, ...]]

    def describe(self) -> str:
        """One phrase naming the set, for titles: ``"the 4 benchmarks all 4 models share (a, b, c, d)"``."""
        names = ", ".join(map(str, self.benchmarks))
        n_b, n_m = len(self.benchmarks), len(self.ranked)
        if self.mode == "all":
            if self.comparable:
                return f"all {n_b} benchmark(s) ({names})"
            return f"each model's own benchmarks, over different sets: NOT COMPARABLE ({names} in all)"
        if self.mode == "listed":
            return f"the {n_b} benchmark(s) asked for ({names})"
        return f"the {n_b} benchmark(s) that all {n_m} model(s) share ({names})"

    def note(self, model: Any) -> str:
        """The flag every ``all`` row carries when sets differ (empty otherwise)."""
        if self.mode != "all" or self.comparable:
            return ""
        own = self.own.get(model, ())
        return (
            f"macro-average over this model's own {len(own)} of {len(self.benchmarks)} benchmarks "
            f"({', '.join(map(str, own))}): not comparable with models over other sets"
        )


def shared_benchmarks(coverage: Mapping[Any, Iterable[Any]], benchmarks: Any = "shared") -> BenchmarkSet:
    """Choose the benchmarks a ranking compares models on (pure).

    Parameters
    ----------
    coverage : dict
        Model -> the benchmarks it has results on.
    benchmarks : "shared", "all" or a sequence of benchmark names
        ``shared``: the set S and models K (each with every benchmark of S) that maximise the
        number of cells |K| x |S| compared, then |K|, then the first S by name; every model
        not in K is left out with the benchmarks of S it lacks. ``all``: every model over its
        own benchmarks (``comparable`` False when they differ). A sequence: exactly those.

    Returns
    -------
    BenchmarkSet

    Examples
    --------
    Two models over five attack methods and two over four of them: all four are ranked on the
    four they share, and the fifth is named as outside the ranking:

    >>> five = {"GCG", "PAIR", "TAP", "AutoDAN", "PAP"}
    >>> cov = {"llama": five, "mistral": five, "gpt-4": five - {"PAP"}, "gpt-3.5": five - {"PAP"}}
    >>> chosen = shared_benchmarks(cov)
    >>> chosen.benchmarks, chosen.ranked, chosen.outside
    (('AutoDAN', 'GCG', 'PAIR', 'TAP'), ('llama', 'mistral', 'gpt-4', 'gpt-3.5'), ('PAP',))

    Three models over five benchmarks and one over one of them: the one is left out, with why:

    >>> cov = {"a": five, "b": five, "c": five, "d": {"GCG"}}
    >>> chosen = shared_benchmarks(cov)
    >>> chosen.ranked, chosen.left_out
    (('a', 'b', 'c'), (('d', 'no results on AutoDAN, PAIR, PAP, TAP'),))
    """
    models = list(coverage)
    sets = {m: frozenset(coverage[m]) for m in models}
    every = tuple(sorted(set().union(*sets.values()), key=str)) if sets else ()
    if isinstance(benchmarks, str):
        if benchmarks not in BENCHMARK_MODES:
            raise ValueError(f"benchmarks must be one of {', '.join(BENCHMARK_MODES)} or a list of benchmark names")
        mode = benchmarks
    else:
        mode = "listed"
    if mode == "all":
        own = {m: tuple(sorted(sets[m], key=str)) for m in models}
        uniform = len(set(sets.values())) <= 1
        return BenchmarkSet("all", every, tuple(models), (), (), uniform, own)
    if mode == "listed":
        chosen = frozenset(benchmarks)
    else:
        chosen = _best_set(sets)
    ranked = tuple(m for m in models if chosen and chosen <= sets[m])
    left_out = tuple(
        (m, "no results on " + ", ".join(map(str, sorted(chosen - sets[m], key=str))))
        for m in models
        if m not in ranked
    )
    outside = tuple(b for b in every if b not in chosen)
    return BenchmarkSet(mode, tuple(sorted(chosen, key=str)), ranked, left_out, outside, True, {})


def _best_set(sets: dict[Any, frozenset[Any]]) -> frozenset[Any]:
    """The benchmark set that compares the most cells (models x benchmarks); see :func:`shared_benchmarks`."""
    distinct = {s for s in sets.values() if s}
    candidates = set(distinct)
    frontier = set(distinct)
    while frontier and len(candidates) <= _MAX_CANDIDATES:
        new = {a & b for a in frontier for b in distinct} - candidates - {frozenset()}
        candidates |= new
        frontier = new
    if len(candidates) > _MAX_CANDIDATES:  # a pathological spread of sets: own sets and the core only
        core = frozenset.intersection(*distinct) if distinct else frozenset()
        candidates = distinct | ({core} if core else set())

    def key(s: frozenset[Any]) -> tuple[int, int, tuple[str, ...]]:
        k = sum(1 for v in sets.values() if s <= v)
        return (-k * len(s), -k, tuple(sorted(map(str, s))))

    return min(candidates, key=key) if candidates else frozenset()


# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------


def rank_scores(values: ArrayLike) -> NDArray[np.float64]:
    """Ranks of harmful rates, 1 = lowest, ties averaged; NaN stays NaN.

    Parameters
    ----------
    values : array_like, shape (K,)

    Returns
    -------
    ndarray of float64, shape (K,)
        Ranks among the finite values.

    Examples
    --------
    The two 0.3s share ranks 2 and 3:

    >>> rank_scores([0.3, np.nan, 0.1, 0.3])
    array([2.5, nan, 1. , 2.5])
    """
    v = np.asarray(values, dtype=np.float64)
    out = np.full(v.shape, np.nan)
    ok = np.isfinite(v)
    if ok.any():
        out[ok] = average_ranks(v[ok])
    return out


def _corr(x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[float, float]:
    """Kendall's tau-b and Spearman's rho of two score vectors (NaN when either is constant).

    tau-b = (C - D) / sqrt((n0 - n1)(n0 - n2)) over the n0 = n(n - 1)/2 pairs, n1 and n2 the pairs
    tied in x and in y: sum_{i<j} sign(x_i - x_j) sign(y_i - y_j) / sqrt(#{sign x != 0} #{sign y != 0}),
    O(n^2) pairs, which is nothing for the models of a leaderboard. rho: Pearson's r of the
    average ranks. Equal to ``scipy.stats.kendalltau(variant="b")`` and ``spearmanr`` (the tests
    check), without importing ``scipy.stats``.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]) or not (np.isfinite(x).all() and np.isfinite(y).all()):
        return NAN, NAN
    i, j = np.triu_indices(len(x), k=1)
    sx = np.sign(x[i] - x[j])
    sy = np.sign(y[i] - y[j])
    tau = float((sx * sy).sum()) / math.sqrt(float(np.count_nonzero(sx)) * float(np.count_nonzero(sy)))
    rx, ry = average_ranks(x), average_ranks(y)
    rx -= rx.mean()
    ry -= ry.mean()
    rho = float(rx @ ry) / math.sqrt(float(rx @ rx) * float(ry @ ry))
    return min(1.0, max(-1.0, tau)), min(1.0, max(-1.0, rho))


def _hold(
    point: NDArray[np.float64], low: NDArray[np.float64], high: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(min(low, point), max(high, point)) where the range is defined; NaN stays NaN.

    >>> lo, hi = _hold(np.array([1.0, 3.0]), np.array([2.0, np.nan]), np.array([4.0, np.nan]))
    >>> lo.tolist(), hi.tolist()
    ([1.0, nan], [4.0, nan])
    """
    ok = np.isfinite(low) & np.isfinite(high) & np.isfinite(point)
    return np.where(ok, np.minimum(low, point), low), np.where(ok, np.maximum(high, point), high)


def _undefined_note(ref: NDArray[np.float64], other: NDArray[np.float64], t: str, reference: str) -> str:
    """Why tau-b and rho of two rankings are undefined (empty when they are defined)."""
    if len(ref) < 2:
        return f"tau-b and rho undefined: fewer than two models are estimable under both {reference} and {t}"
    if np.all(other == other[0]):
        return f"tau-b and rho undefined: every model ties under {t}"
    if np.all(ref == ref[0]):
        return f"tau-b and rho undefined: every model ties under {reference}"
    return ""


def _discordant(ref: NDArray[np.float64], other: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Index pairs (i, j), ref[i] < ref[j], with other[i] > other[j]."""
    i, j = np.nonzero((ref[:, None] < ref[None, :]) & (other[:, None] > other[None, :]))
    order = np.lexsort((ref[j], ref[i]))
    return i[order], j[order]


def compare_rankings(reference: ArrayLike, other: ArrayLike, names: Sequence[Any] | None = None) -> RankComparison:
    """Kendall tau-b, Spearman rho, flipped pairs and rank shifts of two score vectors.

    Parameters
    ----------
    reference, other : array_like, shape (K,)
        Harmful rates (or ranks) of the same K models; must be finite.
    names : sequence, length K, optional
        Model names for the flipped pairs (default: 0 .. K-1).

    Returns
    -------
    RankComparison

    Examples
    --------
    docs/methods.md TC10. Reference ranks (2, 1, 4, 3, 5), other ranks (1, 2, 3, 4, 5): the pairs
    (a, b) and (c, d) are discordant, so of the 10 pairs 8 agree and 2 disagree,
    tau_b = (8 - 2)/10 = 0.6; the rank differences are (-1, 1, -1, 1, 0), so
    rho = 1 - 6 * 4 / (5 * 24) = 0.8:

    >>> c = compare_rankings([0.14, 0.11, 0.22, 0.18, 0.25], [0.10, 0.12, 0.15, 0.20, 0.30], names="abcde")
    >>> round(c.tau_b, 12), round(c.rho, 12), c.n_pairs, c.flips
    (0.6, 0.8, 10, [('b', 'a'), ('d', 'c')])
    >>> c.shifts, c.max_shift
    (array([-1.,  1., -1.,  1.,  0.]), 1.0)
    """
    a = np.asarray(reference, dtype=np.float64)
    b = np.asarray(other, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("reference and other must be 1-D of the same length.")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("compare_rankings needs finite scores; drop not-estimable models first.")
    names = list(range(len(a))) if names is None else list(names)
    ra, rb = rank_scores(a), rank_scores(b)
    tau, rho = _corr(ra, rb)
    i, j = _discordant(ra, rb)
    shifts = rb - ra
    return RankComparison(
        tau_b=tau,
        rho=rho,
        n_pairs=len(a) * (len(a) - 1) // 2,
        flips=[(names[x], names[y]) for x, y in zip(i, j, strict=True)],
        shifts=shifts,
        max_shift=float(np.max(np.abs(shifts))) if len(a) else 0.0,
    )


def p_safer_matrix(draws: ArrayLike, *, chunk: int = 16) -> NDArray[np.float64]:
    """P(A safer than B) = mean_d [p*_{A,d} < p*_{B,d}] for every ordered pair.

    Parameters
    ----------
    draws : array_like, shape (K, D)
        Posterior draws of each model's harmful rate.
    chunk : int
        Rows per block (bounds memory at chunk x K x D booleans).

    Returns
    -------
    ndarray of float64, shape (K, K)
        Diagonal NaN.

    Examples
    --------
    Model 0 is below model 1 in draws 1 and 3 of 3:

    >>> p_safer_matrix([[0.1, 0.2, 0.3], [0.2, 0.1, 0.4]]).round(4)
    array([[   nan, 0.6667],
           [0.3333,    nan]])
    """
    d = np.asarray(draws, dtype=np.float64)
    K, D = d.shape
    out = np.empty((K, K))
    for s in range(0, K, chunk):
        out[s : s + chunk] = (d[s : s + chunk, None, :] < d[None, :, :]).mean(axis=2) if D else np.nan
    np.fill_diagonal(out, np.nan)
    return out


def p_tie_matrix(draws: ArrayLike, *, chunk: int = 16) -> NDArray[np.float64]:
    """P(A and B tie) = mean_d [p*_{A,d} = p*_{B,d}] for every pair (the share P(safer) leaves out).

    Parameters
    ----------
    draws : array_like, shape (K, D)
    chunk : int
        Rows per block.

    Returns
    -------
    ndarray of float64, shape (K, K)
        Symmetric, diagonal NaN; with :func:`p_safer_matrix` P, ``P + P.T + ties = 1`` off the
        diagonal.

    Examples
    --------
    The two models tie in draw 1 of 3:

    >>> p_tie_matrix([[0.1, 0.2, 0.3], [0.1, 0.1, 0.4]]).round(4)
    array([[   nan, 0.3333],
           [0.3333,    nan]])
    """
    d = np.asarray(draws, dtype=np.float64)
    K, D = d.shape
    out = np.empty((K, K))
    for s in range(0, K, chunk):
        out[s : s + chunk] = (d[s : s + chunk, None, :] == d[None, :, :]).mean(axis=2) if D else np.nan
    np.fill_diagonal(out, np.nan)
    return out


def posterior_ranks(
    draws: ArrayLike, *, confidence: float = 0.95, simultaneous: bool = False
) -> dict[str, NDArray[np.float64]]:
    """Rank intervals, the pairwise matrix and dominance ranges from posterior draws.

    Parameters
    ----------
    draws : array_like, shape (K, D)
        Finite posterior draws of K models' harmful rates.
    confidence : float
        Level of the rank interval; the dominance threshold is t = 1 - (1 - confidence)/2.
    simultaneous : bool
        Bonferroni threshold t = 1 - (1 - confidence)/(2 (K - 1)) for the dominance ranges.

    Returns
    -------
    dict
        ``rank_ci_low, rank_ci_high, best, worst`` (K,), ``p_safer``, ``p_tie`` (K, K),
        ``threshold`` (0-d array).
    """
    d = np.asarray(draws, dtype=np.float64)
    K = d.shape[0]
    a = (1.0 - confidence) / 2.0
    t = 1.0 - (1.0 - confidence) / (2.0 * max(K - 1, 1)) if simultaneous else 1.0 - a
    if K == 0 or d.shape[1] == 0:
        e = np.zeros(0) if K == 0 else np.full(K, np.nan)
        return {
            "rank_ci_low": e,
            "rank_ci_high": e,
            "best": e,
            "worst": e,
            "p_safer": np.full((K, K), np.nan),
            "p_tie": np.full((K, K), np.nan),
            "threshold": np.asarray(t),
        }
    rd = average_ranks(d, axis=0)  # (K, D)
    q = np.quantile(rd, [a, 1.0 - a], axis=1, method="inverted_cdf")
    P = p_safer_matrix(d)
    Pz = np.nan_to_num(P)
    best = 1.0 + (Pz.T >= t).sum(axis=1)  # #{B : P(B safer than A) >= t}
    worst = K - (Pz >= t).sum(axis=1)  # K - #{B : P(A safer than B) >= t}
    return {
        "rank_ci_low": q[0],
        "rank_ci_high": q[1],
        "best": best.astype(np.float64),
        "worst": worst.astype(np.float64),
        "p_safer": P,
        "p_tie": p_tie_matrix(d),
        "threshold": np.asarray(t),
    }


# --------------------------------------------------------------------------------------------
# Orchestration
# --------------------------------------------------------------------------------------------


def rank_stability(
    estimates: pd.DataFrame,
    draws: ArrayLike | None = None,
    draw_models: Sequence[Any] | None = None,
    *,
    reference: str = REFERENCE_TREATMENT,
    confidence: float = 0.95,
    simultaneous: bool = False,
    credible: float = CREDIBLE,
) -> RankingResult:
    """Ranks per treatment, agreement with the reference, flips and posterior rank summaries.

    Parameters
    ----------
    estimates : DataFrame
        Long frame ``model, treatment, estimate`` (+ optional ``flag``), one row per model and
        treatment, e.g. ``ScoreResult.overall`` or the cells of one benchmark.
    draws : array_like, shape (K, D), optional
        Reference (fixed-prompt) posterior draws, one row per model in ``draw_models``. Without
        them rank intervals, P(A safer than B), dominance ranges and credibility are NaN.
    draw_models : sequence, length K
        Model of each row of ``draws`` (required with ``draws``).
    reference : str
        Treatment the others are compared with.
    confidence, simultaneous
        See :func:`posterior_ranks`.
    credible : float
        A flip is credible when max(P(A<B), P(B<A)) >= ``credible`` (default 0.975).

    Returns
    -------
    RankingResult
    """
    need = {"model", "treatment", "estimate"}
    if not need <= set(estimates.columns):
        raise ValueError(f"estimates needs columns {sorted(need)}.")
    est = estimates.copy()
    if "flag" not in est:
        est["flag"] = "ok"
    est["flag"] = est["flag"].fillna("ok").astype(str)
    est["estimate"] = pd.to_numeric(est["estimate"], errors="coerce")
    if est.duplicated(["model", "treatment"]).any():
        raise ValueError("estimates has more than one row per (model, treatment).")
    treatments = list(pd.unique(est["treatment"]))
    if reference not in treatments:
        raise ValueError(f"reference treatment {reference!r} is not in estimates ({treatments}).")
    wide = est.pivot(index="model", columns="treatment", values="estimate")
    flags = est.pivot(index="model", columns="treatment", values="flag")
    models_all = list(pd.unique(est["model"]))
    wide = wide.reindex(index=models_all, columns=treatments)
    flags = flags.reindex(index=models_all, columns=treatments).fillna("missing")

    excluded_rows: list[dict[str, Any]] = []
    ref_vals = wide[reference].to_numpy(dtype=np.float64)
    ref_flags = flags[reference].to_numpy()
    bad_ref = ~np.isfinite(ref_vals) | np.array([f.startswith(_NE) for f in ref_flags], dtype=bool)

    D_arr = None
    if draws is not None:
        if draw_models is None:
            raise ValueError("draw_models is required with draws.")
        D_arr = np.asarray(draws, dtype=np.float64)
        if D_arr.ndim != 2 or D_arr.shape[0] != len(draw_models):
            raise ValueError("draws must have shape (len(draw_models), D).")
        row_of = {m: i for i, m in enumerate(draw_models)}
        idx = np.array([row_of.get(m, -1) for m in models_all], dtype=np.int64)
        no_draw = (idx < 0) | ~np.isfinite(D_arr[np.maximum(idx, 0)]).all(axis=1)
    else:
        idx = np.zeros(len(models_all), dtype=np.int64)
        no_draw = np.zeros(len(models_all), dtype=bool)
    for k, m in enumerate(models_all):
        if bad_ref[k]:
            reason = (
                ref_flags[k] if ref_flags[k].startswith(_NE) else f"{reference} estimate is missing ({ref_flags[k]})"
            )
            excluded_rows.append({"model": m, "treatment": "all", "reason": reason})
        elif no_draw[k]:
            excluded_rows.append(
                {"model": m, "treatment": "all", "reason": f"no finite posterior draws for {reference}"}
            )
    keep = ~bad_ref & ~no_draw
    models = [m for m, k in zip(models_all, keep, strict=True) if k]
    K = len(models)
    ref_v = ref_vals[keep]
    ref_rank = rank_scores(ref_v)

    # Posterior summaries under the reference.
    P: NDArray[np.float64] = np.full((K, K), np.nan)
    ties: NDArray[np.float64] = np.full((K, K), np.nan)
    post: dict[str, NDArray[np.float64]] = {}
    if D_arr is not None and K:
        post = posterior_ranks(D_arr[idx[keep]], confidence=confidence, simultaneous=simultaneous)
        P, ties = post["p_safer"], post["p_tie"]
        threshold = float(post["threshold"])
    else:
        a = (1.0 - confidence) / 2.0
        threshold = 1.0 - (1.0 - confidence) / (2.0 * max(K - 1, 1)) if simultaneous else 1.0 - a

    rank_rows = []
    agree_rows = []
    flip_frames = []
    shift_mat = np.full((K, len(treatments)), np.nan)
    for t_i, t in enumerate(treatments):
        vals = wide[t].to_numpy(dtype=np.float64)[keep]
        tflags = flags[t].to_numpy()[keep]
        ok = np.isfinite(vals) & ~np.array([f.startswith(_NE) for f in tflags], dtype=bool)
        for k in np.flatnonzero(~ok):
            if t != reference:
                why = tflags[k] if tflags[k].startswith(_NE) else f"{t} estimate is missing ({tflags[k]})"
                excluded_rows.append({"model": models[k], "treatment": t, "reason": why})
        sub = np.flatnonzero(ok)
        r_t = np.full(K, np.nan)
        r_ref = np.full(K, np.nan)
        r_t[sub] = rank_scores(vals[sub])
        r_ref[sub] = rank_scores(ref_v[sub])
        shift = r_t - r_ref
        shift_mat[:, t_i] = shift
        rank_rows.append(
            pd.DataFrame(
                {
                    "model": models,
                    "treatment": t,
                    "estimate": vals,
                    "rank": r_t,
                    "reference_rank": r_ref,
                    "shift": shift,
                }
            )
        )
        if t == reference:
            continue
        tau, rho = _corr(r_ref[sub], r_t[sub])
        i, j = _discordant(r_ref[sub], r_t[sub])
        gi, gj = sub[i], sub[j]
        pa = P[gi, gj] if len(gi) else np.zeros(0)
        pb = P[gj, gi] if len(gi) else np.zeros(0)
        pt = ties[gi, gj] if len(gi) else np.zeros(0)
        cred = np.maximum(pa, pb) >= credible
        has_draws = D_arr is not None
        flip_frames.append(
            pd.DataFrame(
                {
                    "treatment": t,
                    "model_a": [models[x] for x in gi],
                    "model_b": [models[x] for x in gj],
                    "reference_rank_a": r_ref[gi],
                    "reference_rank_b": r_ref[gj],
                    "rank_a": r_t[gi],
                    "rank_b": r_t[gj],
                    "p_a_safer": pa,
                    "p_b_safer": pb,
                    "p_tie": pt,
                    "credible": pd.array(cred if has_draws else [pd.NA] * len(gi), dtype="boolean"),
                }
            )
        )
        n_flips = len(gi)
        n_cred = int(cred.sum()) if has_draws else np.nan
        agree_rows.append(
            {
                "treatment": t,
                "n_models": len(sub),
                "kendall_tau_b": tau,
                "spearman_rho": rho,
                "n_pairs": len(sub) * (len(sub) - 1) // 2,
                "n_flips": n_flips,
                "n_credible_flips": n_cred,
                "n_noise_flips": n_flips - n_cred if has_draws else np.nan,
                "max_rank_shift": float(np.nanmax(np.abs(shift))) if len(sub) else np.nan,
                "excluded": ", ".join(str(models[k]) for k in np.flatnonzero(~ok)),
                "note": _undefined_note(r_ref[sub], r_t[sub], t, reference),
            }
        )

    # Largest shift per model across treatments.
    absmat = np.where(np.isfinite(shift_mat), np.abs(shift_mat), -1.0)
    arg = absmat.argmax(axis=1) if len(treatments) else np.zeros(K, dtype=np.int64)
    largest = shift_mat[np.arange(K), arg] if K else np.zeros(0)
    largest_t = np.array([treatments[a] for a in arg], dtype=object) if K else np.zeros(0, dtype=object)
    none_found = (absmat.max(axis=1) <= 0) if K else np.zeros(0, dtype=bool)
    largest = np.where(none_found, 0.0, largest)
    largest_t = np.where(none_found, "", largest_t)

    nan_k = np.full(K, np.nan)
    # Quantiles of the rank draws can miss the point rank (the draws are skewed where a cell
    # has no harmful item); each range is extended to hold it, as every interval is.
    rank_lo, rank_hi = _hold(ref_rank, post.get("rank_ci_low", nan_k), post.get("rank_ci_high", nan_k))
    best, worst = _hold(ref_rank, post.get("best", nan_k), post.get("worst", nan_k))
    mframe = pd.DataFrame(
        {
            "model": models,
            "estimate": ref_v,
            "rank": ref_rank,
            "rank_ci_low": rank_lo,
            "rank_ci_high": rank_hi,
            "rank_best": best,
            "rank_worst": worst,
            "largest_shift": largest,
            "largest_shift_treatment": largest_t,
        }
    )
    order = np.lexsort((np.arange(K), ref_rank)) if K else np.zeros(0, dtype=np.int64)
    mframe = mframe.iloc[order].reset_index(drop=True)
    names_sorted = [models[o] for o in order]
    p_safer = (
        pd.DataFrame(P[np.ix_(order, order)], index=names_sorted, columns=names_sorted)
        if D_arr is not None
        else pd.DataFrame()
    )
    p_tie = (
        pd.DataFrame(ties[np.ix_(order, order)], index=names_sorted, columns=names_sorted)
        if D_arr is not None
        else pd.DataFrame()
    )
    flip_cols = [
        "treatment",
        "model_a",
        "model_b",
        "reference_rank_a",
        "reference_rank_b",
        "rank_a",
        "rank_b",
        "p_a_safer",
        "p_b_safer",
        "p_tie",
        "credible",
    ]
    flips = pd.concat(flip_frames, ignore_index=True) if flip_frames else pd.DataFrame(columns=flip_cols)
    agreement = pd.DataFrame(
        agree_rows,
        columns=[
            "treatment",
            "n_models",
            "kendall_tau_b",
            "spearman_rho",
            "n_pairs",
            "n_flips",
            "n_credible_flips",
            "n_noise_flips",
            "max_rank_shift",
            "excluded",
            "note",
        ],
    )
    return RankingResult(
        models=mframe,
        ranks=pd.concat(rank_rows, ignore_index=True) if rank_rows else pd.DataFrame(),
        agreement=agreement,
        flips=flips,
        p_safer=p_safer,
        p_tie=p_tie,
        excluded=pd.DataFrame(excluded_rows, columns=["model", "treatment", "reason"]),
        threshold=threshold,
        reference=reference,
    )


def ranking_from_scores(scores: Any, *, benchmark: Any = None, **kwargs: Any) -> RankingResult:
    """:func:`rank_stability` on a :class:`annotate.stats.scoring.ScoreResult`.

    Parameters
    ----------
    scores : ScoreResult
    benchmark : optional
        None ranks the per-model macro-averages (``scores.overall`` with
        ``scores.overall_draws["corrected"]``); a benchmark name ranks the models' cells of
        that benchmark (``scores.treatments`` with the matching rows of
        ``scores.draws["corrected"]``).
    **kwargs
        Passed to :func:`rank_stability`.

    Returns
    -------
    RankingResult
    """
    ref = kwargs.get("reference", REFERENCE_TREATMENT)
    if benchmark is None:
        est = scores.overall[["model", "treatment", "estimate", "flag"]]
        d = scores.overall_draws.get(ref)
        return rank_stability(est, d, list(scores.models) if d is not None else None, **kwargs)
    mask = (scores.cells["benchmark"] == benchmark).to_numpy()
    if not mask.any():
        raise ValueError(f"benchmark {benchmark!r} is not in the scores.")
    t = scores.treatments
    est = t.loc[t["benchmark"] == benchmark, ["model", "treatment", "estimate", "flag"]]
    d = scores.draws.get(ref)
    return rank_stability(
        est,
        d[mask] if d is not None else None,
        list(scores.cells.loc[mask, "model"]) if d is not None else None,
        **kwargs,
    )
