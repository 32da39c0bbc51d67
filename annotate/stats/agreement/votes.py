"""The reviewers' current votes, from the store's long annotation table, as label matrices.

``current_labels`` picks, per (item, annotator), the latest usable verdict; ``vote_matrix`` turns
those votes into the (units x annotators) codes and (units x categories) counts every
coefficient takes; ``Thresholds`` and ``verdict_for`` are Krippendorff's (2004) reading of
alpha, applied to the lower end of its interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Thresholds:
    reliable: float = 0.800
    tentative: float = 0.667
    kappa_consensus: float = 0.6
    alpha_gain: float = 0.05


def verdict_for(alpha_low: float | None, th: Thresholds) -> str:
    """Krippendorff's reading, on the interval's lower end."""
    if alpha_low is None or alpha_low != alpha_low:
        return "undefined"
    if alpha_low >= th.reliable:
        return "reliable"
    if alpha_low >= th.tentative:
        return "tentative only"
    return "unreliable"


def current_labels(annotations: Any, reviewers: set[str] | None = None) -> Any:
    """One row per (round_item_id, annotator): the latest usable verdict.

    Args:
        annotations: Store.annotations() frame.
        reviewers: pseudonyms to keep (the round's annotators); None keeps every non-expert.
    """
    df = annotations.loc[
        ~annotations.deleted.astype(bool) & ~annotations.skipped.astype(bool) & annotations.verdict.notna()
    ]
    if reviewers is not None:
        df = df.loc[df.annotator.isin(reviewers)]
    df = df.sort_values(["updated_at", "annotation_id"], na_position="first")
    return df.drop_duplicates(["round_item_id", "annotator"], keep="last")


def vote_matrix(labels: Any, categories: tuple[str, ...], annotators: list[str]) -> tuple[Any, Any, list[int]]:
    """(codes (U, J) with -1 missing, counts (U, V), round_item_ids) for the given categories."""
    keep = labels.loc[labels.verdict.isin(categories)]
    items = sorted(labels.round_item_id.unique())
    row = {item: i for i, item in enumerate(items)}
    col = {a: j for j, a in enumerate(annotators)}
    codes = np.full((len(items), len(annotators)), -1, dtype=np.int64)
    cat = {c: k for k, c in enumerate(categories)}
    for r in keep.itertuples():
        if r.annotator in col:
            codes[row[r.round_item_id], col[r.annotator]] = cat[r.verdict]
    counts = np.zeros((len(items), len(categories)), dtype=np.int64)
    for k in range(len(categories)):
        counts[:, k] = (codes == k).sum(axis=1)
    return codes, counts, items
