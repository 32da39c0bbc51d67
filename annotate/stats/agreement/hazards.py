"""Agreement on the hazard categories and severity reviewers give (``route --ask-hazards``; pure).

A reviewer's hazard answer is a set of categories (several may apply; the empty set is "None of
these"). Agreement on a set-valued answer is measured per category: for hazard h each answer is
binary, h chosen or not, and Krippendorff's alpha (nominal) is computed on the U x 2 count matrix of
the items two or more reviewers answered (``coefficients.krippendorff_alpha``, its unit bootstrap
interval). Severity is one of ``levels`` in rank order, so its alpha is ordinal (U x V counts).

The reviewers' answer per item and hazard (the majority): chosen when more than half of the item's
answering reviewers chose it, not chosen when fewer than half, a tie otherwise (the round's expert
settles it, as a verdict tie is).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from annotate.stats.agreement.coefficients import krippendorff_alpha
from annotate.stats.agreement.votes import Thresholds, verdict_for

__all__ = [
    "hazard_agreement",
    "nominal_alpha_of_patterns",
    "pattern_posterior_interval",
    "hazard_majority",
    "settle_hazards",
]


#: A category's interval: the unit bootstrap's (annotate-export/17 and /18), or that joined with the
#: posterior interval over unit patterns (``"joined"``, since /19: the bootstrap alone covered 0.885-0.92
#: for a category in 3 % of items, docs/validity.md).
INTERVALS = ("bootstrap", "joined")
#: The Dirichlet prior's weight on every possible unit pattern.
PATTERN_PRIOR = 0.5


def nominal_alpha_of_patterns(patterns: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Nominal alpha of units described by their rating patterns, for each row of weights (pure).

    Parameters
    ----------
    patterns : (T, C) int
        The distinct patterns: ratings per category of a unit, ``m_t = sum_c n_tc >= 2``.
    weights : (D, T) float
        How many units of each pattern (any positive reals: a draw of them).

    Returns
    -------
    (D,) float
        ``1 - (n - 1) sum_{c != k} o_ck / sum_{c != k} n_c n_k`` with the coincidences
        ``o_ck = sum_t w_t n_tc (n_tk - [c = k]) / (m_t - 1)`` and ``n_c = sum_k o_ck`` (section 2.2 of
        docs/methods.md, units weighed); NaN where one category holds every value.

    >>> nominal_alpha_of_patterns(np.array([[2, 0], [0, 2], [1, 1]]), np.array([[1.0, 1.0, 1.0]])).round(4)
    array([0.4444])
    """
    n = patterns.astype(float)
    m = n.sum(axis=1)
    per = n[:, :, None] * (n[:, None, :] - np.eye(n.shape[1])[None]) / (m - 1)[:, None, None]  # (T, C, C)
    o = np.einsum("dt,tck->dck", weights, per)
    nc = o.sum(axis=2)
    total = nc.sum(axis=1)
    off = o.sum(axis=(1, 2)) - np.einsum("dcc->d", o)
    expected = total**2 - (nc**2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = 1.0 - (total - 1.0) * off / expected
    return np.where(expected > 0, out, np.nan)


def pattern_posterior_interval(
    counts: np.ndarray, *, draws: int = 4000, seed: int = 0, confidence: float = 0.95, prior: float = PATTERN_PRIOR
) -> tuple[float, float]:
    """A posterior interval of nominal alpha: the units' patterns are a multinomial sample (pure).

    The pairable units (``m_u >= 2``) of the (U, C) ``counts`` are grouped by their number of ratings m;
    within a group of n_m units the patterns (each split of m over the C categories) are drawn from
    Dirichlet(observed + a_m) scaled to n_m units, with ``a_m = prior * K_m' * n_m / (U K_m)``: the
    prior's whole mass is ``prior`` pseudo-units per pattern of the commonest design, spread over the
    groups by their size (K_m patterns in group m, K_m' = 4 for three binary ratings), so it never
    outweighs the data when rater counts vary or are large. Each draw gives alpha
    (:func:`nominal_alpha_of_patterns`); the interval is the draws' central ``confidence`` quantiles.
    Unlike the unit bootstrap it gives patterns no unit showed some mass, which a rare category's few
    disagreeing units need. NaN without two pairable units or a defined draw. Only for C = 2 (a
    hazard category, chosen or not): the patterns of m ratings over C categories number
    C(m + C - 1, C - 1).
    """
    counts = np.asarray(counts, dtype=np.int64)
    counts = counts[counts.sum(axis=1) >= 2]
    if len(counts) < 2:
        return (float("nan"), float("nan"))
    if counts.shape[1] != 2:
        raise ValueError("pattern_posterior_interval is for two categories (chosen or not)")
    rng = np.random.default_rng(seed)
    raters = counts.sum(axis=1)
    total = len(counts)
    patterns, weights = [], []
    for m in sorted(set(raters.tolist())):
        group = counts[raters == m]
        grid = np.array([[m - k, k] for k in range(m + 1)], dtype=np.int64)
        seen = np.bincount(group[:, 1], minlength=m + 1).astype(float)
        alpha_m = prior * 4.0 * len(group) / (total * (m + 1))
        patterns.append(grid)
        weights.append(rng.dirichlet(seen + alpha_m, size=draws) * len(group))
    alphas = nominal_alpha_of_patterns(np.concatenate(patterns), np.concatenate(weights, axis=1))
    alphas = alphas[np.isfinite(alphas)]
    if not alphas.size:
        return (float("nan"), float("nan"))
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(alphas, [tail, 1.0 - tail])
    return (float(low), float(high))


def _alpha_row(
    counts: np.ndarray, level: str, n_boot: int, seed: int, thresholds: Thresholds, interval: str = "bootstrap"
) -> dict[str, Any]:
    alpha = krippendorff_alpha(counts, level=level, n_boot=n_boot, seed=seed)  # type: ignore[arg-type]
    defined = alpha.value == alpha.value
    if interval == "joined" and defined and alpha.ci_low == alpha.ci_low and n_boot:
        low, high = pattern_posterior_interval(counts, draws=max(n_boot, 1000), seed=seed)
        if low == low:  # the wider of the two: each alone misses in some regime (docs/validity.md)
            alpha = replace(alpha, ci_low=min(alpha.ci_low, low), ci_high=max(alpha.ci_high, high))
    return {
        "alpha": alpha.value if defined else None,
        "alpha_ci": [alpha.ci_low, alpha.ci_high] if defined else [None, None],
        "alpha_undefined_reason": alpha.undefined_reason,
        # The whole result: a defined alpha whose interval is withheld (too few units) says so.
        "verdict": verdict_for(alpha, thresholds) if defined else "undefined",
        "interval_note": alpha.interval_note,
        "n_units": int(alpha.n_units),
    }


def hazard_agreement(
    answers: pd.DataFrame,
    hazards: Sequence[str],
    levels: Sequence[str],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    thresholds: Thresholds | None = None,
    interval: str = "bootstrap",
) -> dict[str, Any]:
    """Agreement on each hazard category and on severity.

    Parameters
    ----------
    answers : DataFrame, one row per (item, reviewer)
        ``round_item_id``, ``annotator``, ``hazards`` (a list of codes: the reviewer's answer, ``[]`` for
        "None of these"; None when they left the question unanswered) and ``severity`` (one of
        ``levels`` or None).
    hazards : the categories to measure, in the order printed.
    levels : severity levels in rank order.
    interval : ``"bootstrap"`` (the unit bootstrap) or ``"joined"``: a category's interval is the union of
        the unit bootstrap's and :func:`pattern_posterior_interval`'s, a withheld bootstrap interval stays
        withheld; severity's is the bootstrap's either way.

    Returns
    -------
    dict
        ``hazards``: per category ``hazard``, ``chosen`` (answers choosing it), ``alpha``, ``alpha_ci``,
        ``verdict`` (Krippendorff's thresholds on the interval's lower end), ``n_units`` (items with two
        or more answers) and ``alpha_undefined_reason`` (e.g. nobody chose it: one category only);
        ``severity``: the same for the ordinal scale; ``n_items`` and ``n_answers`` answered.
    """
    thresholds = thresholds or Thresholds()
    answered = answers[answers["hazards"].notna()]
    items = sorted(set(answered["round_item_id"]))
    at = {item: k for k, item in enumerate(items)}
    rows = []
    for h in hazards:
        counts = np.zeros((len(items), 2), dtype=np.int64)
        chosen = 0
        for item, got in zip(answered["round_item_id"], answered["hazards"], strict=True):
            has = h in got
            counts[at[item], int(has)] += 1
            chosen += has
        row = _alpha_row(counts, "nominal", n_boot, seed, thresholds, interval)
        rows.append({"hazard": h, "chosen": chosen, **row})
    rated = answers[answers["severity"].isin(list(levels))]
    sev_items = sorted(set(rated["round_item_id"]))
    sev_at = {item: k for k, item in enumerate(sev_items)}
    rank = {level: k for k, level in enumerate(levels)}
    sev_counts = np.zeros((len(sev_items), len(levels)), dtype=np.int64)
    for item, level in zip(rated["round_item_id"], rated["severity"], strict=True):
        sev_counts[sev_at[item], rank[level]] += 1
    return {
        "n_items": len(items),
        "n_answers": int(len(answered)),
        "hazards": rows,
        "severity": {
            "levels": list(levels),
            "n_answers": int(len(rated)),
            **_alpha_row(sev_counts, "ordinal", n_boot, seed, thresholds),
        },
    }


def hazard_majority(answers: pd.DataFrame) -> pd.DataFrame:
    """Per item and hazard some reviewer chose, the reviewers' answer: ``chosen``, ``not chosen`` or ``tie``.

    Columns ``round_item_id, hazard, votes, answered, answer`` (``votes`` of the ``answered`` reviewers
    chose it). A hazard nobody chose on an item is not chosen and has no row.
    """
    answered = answers[answers["hazards"].notna()]
    columns = ["round_item_id", "hazard", "votes", "answered", "answer"]
    if not len(answered):  # severity answers only
        return pd.DataFrame(columns=columns)
    n = answered.groupby("round_item_id").size().rename("answered")
    long = answered[["round_item_id", "hazards"]].explode("hazards").dropna(subset=["hazards"])
    votes = long.groupby(["round_item_id", "hazards"]).size().rename("votes").reset_index()
    votes = votes.rename(columns={"hazards": "hazard"}).merge(n.reset_index(), on="round_item_id")
    twice = 2 * votes["votes"]
    votes["answer"] = np.where(
        twice > votes["answered"], "chosen", np.where(twice < votes["answered"], "not chosen", "tie")
    )
    return votes[columns]


def settle_hazards(answers: dict[str, list[str]], expert: list[str] | None = None) -> tuple[list[str], list[str]]:
    """One item's reviewed hazard categories from its reviewers' answers: (settled, tied), each sorted.

    A category is settled in when more than half of the reviewers who answered chose it; at exactly
    half it is a tie, which the expert's answer settles where the item went to the expert (in when the
    expert chose it), else it stays tied. ``answers``: reviewer -> the codes they chose (``[]``: "None
    of these"); reviewers who did not answer are not in it.

    >>> settle_hazards({"A1": ["vcr"], "A2": ["vcr", "prv"]})
    (['vcr'], ['prv'])
    >>> settle_hazards({"A1": ["vcr"], "A2": ["vcr", "prv"]}, expert=["prv"])
    (['prv', 'vcr'], [])
    >>> settle_hazards({"A1": ["ssh"], "A2": [], "A3": ["ssh"]})
    (['ssh'], [])
    """
    n = len(answers)
    votes: dict[str, int] = {}
    for codes in answers.values():
        for code in set(codes):
            votes[code] = votes.get(code, 0) + 1
    settled = {c for c, v in votes.items() if 2 * v > n}
    tied = {c for c, v in votes.items() if 2 * v == n}
    if expert is not None:
        settled |= tied & set(expert)
        tied = set()
    return sorted(settled), sorted(tied)
