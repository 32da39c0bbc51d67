"""The reviewers' current votes, from the store's long annotation table, as label matrices.

``current_labels`` picks, per (item, annotator), the latest usable verdict; ``vote_matrix`` turns
those votes into the (units x annotators) codes and (units x categories) counts every
coefficient takes; ``Thresholds`` and ``verdict_for`` are Krippendorff's (2004) reading of
alpha, applied to the lower end of its interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotate.stats.agreement.matrices import counts_from_codes, label_matrix_from_long
from annotate.stats.agreement.results import AlphaResult


@dataclass(frozen=True)
class Thresholds:
    """Cut-offs for reading alpha and for flagging annotators (the ``[agreement]`` settings).

    Attributes
    ----------
    reliable : float
        Alpha at or above which data are relied on (Krippendorff 2004: 0.800).
    tentative : float
        Alpha at or above which only tentative conclusions are drawn (0.667).
    kappa_consensus : float
        Flag an annotator whose kappa with the leave-one-out consensus is below this.
    alpha_gain : float
        Flag an annotator whose deletion raises alpha by more than this.
    """

    reliable: float = 0.800
    tentative: float = 0.667
    kappa_consensus: float = 0.6
    alpha_gain: float = 0.05


#: The verdict of a group whose alpha has no interval (too few pairable values, a majority of
#: undefined bootstrap replicates, or a zero-width interval): no verdict is read from it.
TOO_FEW_UNITS = "too few units for an interval"


def verdict_for(alpha_low: float | AlphaResult | None, th: Thresholds) -> str:
    """Krippendorff's reading, on the interval's lower end.

    Parameters
    ----------
    alpha_low : float, AlphaResult or None
        Lower end of alpha's interval (None or NaN when alpha is undefined or has no interval),
        or the whole result: then a defined alpha without an interval reads
        :data:`TOO_FEW_UNITS` (issue #23: three agreeing units printed [1, 1] and "reliable").
    th : Thresholds

    Returns
    -------
    str
        ``"reliable"``, ``"tentative only"``, ``"unreliable"``, ``"undefined"`` or
        ``"too few units for an interval"``. Never a verdict from a zero-width interval: the
        statistics give none (docs/methods.md 9.13).

    Examples
    --------
    >>> [verdict_for(a, Thresholds()) for a in (0.81, 0.7, 0.5, None)]
    ['reliable', 'tentative only', 'unreliable', 'undefined']
    >>> from annotate.stats.agreement.coefficients import krippendorff_alpha
    >>> verdict_for(krippendorff_alpha([[2, 0], [0, 2], [2, 0]], n_boot=200), Thresholds())
    'too few units for an interval'
    """
    if isinstance(alpha_low, AlphaResult):
        if not alpha_low.defined:
            return "undefined"
        if alpha_low.interval_note is not None:
            return TOO_FEW_UNITS
        alpha_low = alpha_low.ci_low
    if alpha_low is None or alpha_low != alpha_low:
        return "undefined"
    if alpha_low >= th.reliable:
        return "reliable"
    if alpha_low >= th.tentative:
        return "tentative only"
    return "unreliable"


def current_labels(annotations: Any, reviewers: set[str] | None = None) -> Any:
    """One row per (round_item_id, annotator): the latest usable verdict.

    Parameters
    ----------
    annotations : pandas.DataFrame
        ``Store.annotations()`` frame: round_item_id, annotator, verdict, deleted, skipped,
        updated_at, annotation_id, ...
    reviewers : set of str, optional
        Pseudonyms to keep (the round's annotators); None keeps every annotator of the frame
        (there is no filter by role).

    Returns
    -------
    pandas.DataFrame
        The rows that are neither deleted nor skipped and have a verdict, the latest
        (``updated_at``, then ``annotation_id``) per (round_item_id, annotator).
    """
    df = annotations.loc[
        ~annotations.deleted.astype(bool) & ~annotations.skipped.astype(bool) & annotations.verdict.notna()
    ]
    if reviewers is not None:
        df = df.loc[df.annotator.isin(reviewers)]
    df = df.sort_values(["updated_at", "annotation_id"], na_position="first")
    return df.drop_duplicates(["round_item_id", "annotator"], keep="last")


def reviewer_answers(
    annotations: Any, item_ids: Sequence[int], reviewers: Sequence[str], of: str = "verdict"
) -> pd.DataFrame:
    """Each reviewer's answer on each item: their current verdict, ``"skipped"`` or None (not in yet).

    ``of``: another column of the annotation that is the answer (e.g. ``channel``, how it arrived)
    instead of its verdict; a skip then gives that column's value, not ``"skipped"``.

    Parameters
    ----------
    annotations : pandas.DataFrame
        As :func:`current_labels` takes it.
    item_ids : sequence of int, length N
        The round's items (every one is routed to every reviewer).
    reviewers : sequence of str, length J
        The round's reviewers, in column order.

    Returns
    -------
    pandas.DataFrame, shape (N, J)
        Indexed by round_item_id (in the order given), one object column per reviewer. A skip
        (neither deleted nor followed by a verdict) counts as the reviewer's answer: their vote is
        in, without a label; a verdict, given before or after a skip, wins.
    """
    index = pd.Index([int(i) for i in item_ids], name="round_item_id")
    mine = annotations.loc[annotations.annotator.isin(list(reviewers))]
    skip_rows = mine.loc[~mine.deleted.astype(bool) & mine.skipped.astype(bool)]
    if of == "verdict":
        skips = skip_rows[["round_item_id", "annotator"]].assign(verdict="skipped")
    else:
        skips = skip_rows[["round_item_id", "annotator", of]].rename(columns={of: "verdict"})
    votes = current_labels(mine, set(reviewers))[["round_item_id", "annotator", of]].rename(columns={of: "verdict"})
    # The verdicts after the skips: where a reviewer has both, the verdict is kept.
    long = pd.concat([skips, votes], ignore_index=True)
    long = long.assign(round_item_id=long.round_item_id.astype(int)).drop_duplicates(
        ["round_item_id", "annotator"], keep="last"
    )
    wide = long.pivot(index="round_item_id", columns="annotator", values="verdict")
    cells = wide.reindex(index=index, columns=list(reviewers)).to_numpy(dtype=object, copy=True)
    # None, not NaN, for a missing answer (as labels.csv reads an empty cell back).
    cells[pd.isna(cells)] = None
    return pd.DataFrame(cells, index=index, columns=list(reviewers), dtype=object)


def vote_matrix(
    labels: pd.DataFrame, categories: Sequence[str], annotators: Sequence[str]
) -> tuple[NDArray[np.int64], NDArray[np.int64], list[Any]]:
    """Votes as a label matrix and a count matrix, for the given categories and annotators.

    Parameters
    ----------
    labels : pandas.DataFrame
        Columns round_item_id, annotator and verdict (as :func:`current_labels` gives).
    categories : sequence of str, length V
        Verdicts in code order; any other verdict counts as no vote.
    annotators : sequence of str, length J
        The columns, in this order; votes by anyone else are left out.

    Returns
    -------
    codes : ndarray of int64, shape (U, J)
        Category code per (item, annotator), ``-1`` = no vote.
    counts : ndarray of int64, shape (U, V)
    items : list, length U
        Every round_item_id of ``labels`` (also one without a kept vote), sorted.

    Notes
    -----
    If an (item, annotator) pair has several rows, the last one with a verdict among
    ``categories`` counts.

    Examples
    --------
    >>> votes = pd.DataFrame(
    ...     {"round_item_id": [5, 5, 2, 2], "annotator": ["A1", "A2", "A1", "A2"],
    ...      "verdict": ["harmful", "unsure", "safe", "safe"]}
    ... )
    >>> codes, counts, items = vote_matrix(votes, ("harmful", "safe"), ["A1", "A2"])
    >>> codes.tolist(), counts.tolist(), items
    ([[1, 1], [0, -1]], [[0, 2], [1, 0]], [2, 5])
    """
    lm = label_matrix_from_long(
        labels,
        categories,
        item="round_item_id",
        annotator="annotator",
        label="verdict",
        annotators=annotators,
        unknown="missing",
        duplicates="last",
    )
    return lm.codes, lm.counts(), list(lm.items)


def vote_matrix_with_dropped(
    labels: pd.DataFrame, categories: Sequence[str], annotators: Sequence[str], as_missing: Sequence[str] = ("unsure",)
) -> tuple[NDArray[np.int64], NDArray[np.int64], list[Any], NDArray[np.int64]]:
    """:func:`vote_matrix` for a label set that treats some verdicts as missing, with what it dropped.

    Parameters
    ----------
    labels : pandas.DataFrame
        Columns round_item_id, annotator and verdict (as :func:`current_labels` gives).
    categories : sequence of str, length V
        Verdicts in code order (e.g. harmful, safe).
    annotators : sequence of str, length J
    as_missing : sequence of str
        Verdicts counted as no rating, and counted (e.g. unsure); none of them in ``categories``.

    Returns
    -------
    codes, counts, items
        As :func:`vote_matrix`.
    dropped : ndarray of int64, shape (U,)
        Votes per item with a verdict in ``as_missing``: pass it to ``agreement_summary(dropped=...)``.

    Notes
    -----
    An annotator's vote is the last of their rows whose verdict is in ``categories`` or
    ``as_missing``; if that is ``unsure``, the vote is dropped (an earlier harmful or safe row of
    the same pair does not come back). ``current_labels`` leaves one row per pair anyway.

    Examples
    --------
    >>> votes = pd.DataFrame(
    ...     {"round_item_id": [5, 5, 2, 2], "annotator": ["A1", "A2", "A1", "A2"],
    ...      "verdict": ["harmful", "unsure", "safe", "safe"]}
    ... )
    >>> codes, counts, items, dropped = vote_matrix_with_dropped(votes, ("harmful", "safe"), ["A1", "A2"])
    >>> codes.tolist(), counts.tolist(), items, dropped.tolist()
    ([[1, 1], [0, -1]], [[0, 2], [1, 0]], [2, 5], [0, 1])
    """
    cats, missing = tuple(categories), tuple(as_missing)
    both = set(cats) & set(missing)
    if both:
        raise ValueError(f"The verdicts {sorted(both)} are both categories and treated as missing; choose one.")
    lm = label_matrix_from_long(
        labels,
        cats + missing,
        item="round_item_id",
        annotator="annotator",
        label="verdict",
        annotators=annotators,
        unknown="missing",
        duplicates="last",
    )
    V = len(cats)
    gone = lm.codes >= V
    codes = np.where(gone, -1, lm.codes)
    counts = counts_from_codes(codes, V)
    return codes, counts, list(lm.items), gone.sum(axis=1).astype(np.int64)
