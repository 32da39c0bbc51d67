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
from typing import Any

import numpy as np
import pandas as pd

from annotate.stats.agreement.coefficients import krippendorff_alpha
from annotate.stats.agreement.votes import Thresholds, verdict_for

__all__ = ["RARE_CATEGORY_CAUTION", "hazard_agreement", "hazard_majority", "settle_hazards"]

#: What the validity matrix measured and no rule fixes yet (docs/validity.md, "Agreement on the
#: reviewers' hazard categories"): said wherever a category's interval is shown.
RARE_CATEGORY_CAUTION = (
    "Caution: for a category few items fall in (about 3 % of 96), the 95 % interval covered the true alpha "
    "in only 88 % of simulated rounds; read those intervals as too narrow."
)


def _alpha_row(counts: np.ndarray, level: str, n_boot: int, seed: int, thresholds: Thresholds) -> dict[str, Any]:
    alpha = krippendorff_alpha(counts, level=level, n_boot=n_boot, seed=seed)  # type: ignore[arg-type]
    defined = alpha.value == alpha.value
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
        rows.append({"hazard": h, "chosen": chosen, **_alpha_row(counts, "nominal", n_boot, seed, thresholds)})
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
