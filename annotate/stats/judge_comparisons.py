"""Judges compared on the same draws: ranks, P(best), and each pair's paired test (pure).

Every judge is evaluated on the same draws of the reviewed population's posterior
(:mod:`annotate.stats.judge_posterior`), so judges are ranked by balanced accuracy (1 = best)
with a rank interval, ``p_best`` (the share of draws in which a judge is strictly the best) and,
per pair, P(A better), P(B better) and P(tie) under the audit's estimand: paired, so two judges
with overlapping intervals can still be told apart.

*The pair test* (docs/methods.md 9.19): is A's balanced accuracy different from B's on prompts
like these? The difference BA(A) - BA(B) on the prompts view of the posterior (design-weighted: a
routed design samples the judge-harmful stratum far more densely than the judge-safe one, and an
unweighted test compares the sample, not the judges), with the p-value of
:func:`annotate.stats.judge_models.direction_p`: twice the tail beyond 0 on the far side from the
estimate. Always the prompts view: under the responses estimand a census leaves nothing to draw
and every difference would be certain, true of those responses and not of the judges.

*McNemar's exact test* of accuracy on the reviewed responses both judged clearly (:func:`mcnemar`)
is the textbook paired test when the reviewed responses are a simple random sample of the group:
under a census or within one stratum. In a stratified sample its counts are shown and its p is not
(with two judges of equal accuracy, routed by one of them, it rejected in 56 % of replicates).
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotate.stats._common import average_ranks
from annotate.stats.judge_figures import NO_VERDICT, confusion_metrics
from annotate.stats.judge_models import direction_p
from annotate.stats.scoring.intervals import enclose, equal_tailed

__all__ = ["PAIR_COLUMNS", "PAIR_TEST", "EXPORT_PAIR_COLUMNS", "mcnemar", "pair_rows", "rank_judges"]

#: One row of :attr:`JudgeAudit.pairs`: two judges of one group, compared.
PAIR_COLUMNS = (
    "benchmark",
    "model",
    "judge_a",
    "judge_b",
    "n_both",
    "p_a_better",
    "p_b_better",
    "p_tie",
    "agree_share",
    "a_harmful_b_safe",
    "a_harmful_b_safe_n",
    "a_harmful_b_safe_human_harmful",
    "a_safe_b_harmful",
    "a_safe_b_harmful_n",
    "a_safe_b_harmful_human_harmful",
    "one_ambiguous",
    "one_ambiguous_n",
    "one_ambiguous_human_harmful",
    "note",
    # The exact McNemar test of the two judges' accuracy on the reviewed responses both labelled
    # clearly (annotate.stats.judge_prompts.mcnemar): A right and B wrong, the reverse, the p-value.
    "mcnemar_a_only",
    "mcnemar_b_only",
    "mcnemar_p",
    # The paired test of equal balanced accuracy (issue #41): the difference A - B, its interval and
    # p-value on the prompts view of the posterior (PAIR_TEST), which respects the design's weights.
    "difference",
    "difference_ci_low",
    "difference_ci_high",
    "p_value",
)
#: The columns of an export's judge_pairs.csv (annotate-export/3 to /10).
EXPORT_PAIR_COLUMNS = PAIR_COLUMNS[: PAIR_COLUMNS.index("mcnemar_a_only")]


#: The paired test of two judges printed with every pair (``p_value``).
PAIR_TEST = (
    "equal balanced accuracy: twice the posterior tail beyond 0 on the far side from the estimate of "
    "BA(A) - BA(B), on the prompts view of the reviewed population's posterior (design-weighted, paired); "
    "McNemar's exact test only under a census or within one stratum"
)


def mcnemar(right_a: NDArray[np.bool_], right_b: NDArray[np.bool_]) -> tuple[int, int, float]:
    """The exact McNemar test of two judges' accuracy on the same responses.

    ``b``: responses A got right and B wrong; ``c``: the reverse. Under H0 (equal accuracy) b is
    Binomial(b + c, 1/2); the two-sided p-value is min(1, 2 P(X <= min(b, c))).

    >>> mcnemar(np.array([True] * 11 + [False] * 10), np.array([False] * 11 + [True] * 10))
    (11, 10, 1.0)
    >>> b, c, p = mcnemar(np.array([True] * 10), np.array([False] * 10))
    >>> (b, c, round(p, 6))
    (10, 0, 0.001953)
    """
    a = np.asarray(right_a, dtype=bool)
    bb = np.asarray(right_b, dtype=bool)
    b = int((a & ~bb).sum())
    c = int((~a & bb).sum())
    n = b + c
    if n == 0:
        return b, c, 1.0
    k = min(b, c)
    log_half = n * math.log(2.0)
    tail = sum(
        math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - log_half) for i in range(k + 1)
    )
    return b, c, float(min(1.0, 2.0 * tail))


def rank_judges(
    ba: NDArray[np.float64], ba_draws: NDArray[np.float64], confidence: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per group: rank by balanced accuracy (1 = highest; ties averaged), its interval and P(best).

    ``ba`` is (G, J), ``ba_draws`` (G, D, J). Judges without a balanced accuracy are not ranked.
    """
    G, D, J = ba_draws.shape
    rank = np.full((G, J), np.nan)
    lo = np.full((G, J), np.nan)
    hi = np.full((G, J), np.nan)
    best = np.full((G, J), np.nan)
    for g in range(G):
        ok = np.isfinite(ba[g])
        if not ok.any():
            continue
        rank[g, ok] = average_ranks(-ba[g, ok])
        if D == 0:
            continue
        d = ba_draws[g][:, ok]
        # A draw in which a ranked judge's figure is undefined ranks it last in that draw.
        d = np.where(np.isfinite(d), d, -np.inf)
        r = average_ranks(-d, axis=1)
        low, high = equal_tailed(r.T, confidence)
        low, high, _ = enclose(rank[g, ok], low, high)
        lo[g, ok], hi[g, ok] = low, high
        top = d.max(axis=1, keepdims=True)
        unique_top = (d == top).sum(axis=1, keepdims=True) == 1
        best[g, ok] = ((d == top) & unique_top).mean(axis=0)
    return rank, lo, hi, best


def pair_rows(
    groups: list[tuple[str, str]],
    judges: list[str],
    ba_est: NDArray[np.float64],
    ba: NDArray[np.float64],
    tests: NDArray[np.float64] | None,
    u: pd.DataFrame,
    human: NDArray[np.int64],
    labels: NDArray[np.int64],
    units_group: NDArray[np.bool_],
    census: bool,
    single: NDArray[np.bool_],
    confidence: float,
) -> pd.DataFrame:
    """The rows of :attr:`JudgeAudit.pairs`.

    ``ba_est`` (G, J) and ``ba`` (G, D, J) are the balanced accuracy and its draws under the
    estimand; ``tests`` (G, T, J, 2, 3) the prompts view's totals, on which the paired test of
    equal balanced accuracy is made (:data:`PAIR_TEST`).
    """
    D = ba.shape[1]
    weight = np.nan_to_num(u["weight"].to_numpy(), nan=0.0)
    resolved = human >= 0
    harmful = human == 0
    test_ba = confusion_metrics(tests)["balanced_accuracy"] if tests is not None else None  # (G, T, J)
    rows = []
    for g, (bench, model) in enumerate(groups):
        in_g = units_group[:, g] & resolved
        for a, b in combinations(range(len(judges)), 2):
            la, lb = labels[:, a], labels[:, b]
            both = in_g & (la < NO_VERDICT) & (lb < NO_VERDICT)
            w = np.where(both, weight, 0.0)
            total = w.sum()

            def share(mask: NDArray[np.bool_], w: NDArray[np.float64] = w, total: float = total) -> float:
                return float(w[mask].sum() / total) if total > 0 else float("nan")

            def human_harmful(mask: NDArray[np.bool_], w: NDArray[np.float64] = w) -> float:
                part = w[mask].sum()
                return float(w[mask & harmful].sum() / part) if part > 0 else float("nan")

            hs = both & (la == 0) & (lb == 1)
            sh = both & (la == 1) & (lb == 0)
            amb = both & (la != lb) & ((la == 2) | (lb == 2))
            note = []
            if D:
                da, db = ba[g][:, a], ba[g][:, b]
                ok = np.isfinite(da) & np.isfinite(db)
                n_ok = int(ok.sum())
                pa = float((da[ok] > db[ok]).mean()) if n_ok else float("nan")
                pb = float((da[ok] < db[ok]).mean()) if n_ok else float("nan")
                pt = float((da[ok] == db[ok]).mean()) if n_ok else float("nan")
                if n_ok < D:
                    note.append(f"a balanced accuracy is undefined in {D - n_ok} of {D} draws (P from the others)")
            else:
                pa = pb = pt = float("nan")
                note.append("no posterior draws were made: no P(better)")
            diff = float(ba_est[g, a] - ba_est[g, b])
            lo = hi = p = float("nan")
            if test_ba is not None and np.isfinite(diff):
                d = test_ba[g][:, a] - test_ba[g][:, b]
                d = d[np.isfinite(d)]
                if len(d):
                    low, high = equal_tailed(d[None, :], confidence)
                    lo, hi = min(float(low[0]), diff), max(float(high[0]), diff)
                    p = float(direction_p(np.array([diff]), d[None, :])[0])
            elif test_ba is not None:
                note.append(
                    "no pair test: a judge's balanced accuracy is undefined here (no reviewed response of a kind)"
                )
            clear = both & (la < 2) & (lb < 2)
            mc_a, mc_b, mc_p = mcnemar((la == human)[clear], (lb == human)[clear])
            if not (census or single[g]):
                # Unweighted, McNemar's test is the design's only under a census or within one stratum.
                mc_p = float("nan")
                note.append("McNemar's test not shown: the reviewed responses are a stratified sample (see p_value)")
            n_a = int((in_g & (la < NO_VERDICT)).sum())
            n_b = int((in_g & (lb < NO_VERDICT)).sum())
            if int(both.sum()) < max(n_a, n_b):
                note.append(
                    f"the two judges labelled different responses ({n_a} and {n_b}, {int(both.sum())} both): "
                    "their figures describe different populations"
                )
            rows.append(
                {
                    "benchmark": bench,
                    "model": model,
                    "judge_a": judges[a],
                    "judge_b": judges[b],
                    "n_both": int(both.sum()),
                    "p_a_better": pa,
                    "p_b_better": pb,
                    "p_tie": pt,
                    "agree_share": share(both & (la == lb)),
                    "a_harmful_b_safe": share(hs),
                    "a_harmful_b_safe_n": int(hs.sum()),
                    "a_harmful_b_safe_human_harmful": human_harmful(hs),
                    "a_safe_b_harmful": share(sh),
                    "a_safe_b_harmful_n": int(sh.sum()),
                    "a_safe_b_harmful_human_harmful": human_harmful(sh),
                    "one_ambiguous": share(amb),
                    "one_ambiguous_n": int(amb.sum()),
                    "one_ambiguous_human_harmful": human_harmful(amb),
                    "note": "; ".join(note),
                    "mcnemar_a_only": mc_a,
                    "mcnemar_b_only": mc_b,
                    "mcnemar_p": mc_p,
                    "difference": diff,
                    "difference_ci_low": lo,
                    "difference_ci_high": hi,
                    "p_value": p,
                }
            )
    return pd.DataFrame(rows, columns=list(PAIR_COLUMNS))
