"""Label matrices and count matrices: the two inputs of every agreement statistic.

A **label matrix** holds integer category codes with shape ``(U, J)``: one row per unit, one
column per annotator, ``-1`` (or NaN) for "no rating". A **count matrix** ``n`` has shape
``(U, V)``: ``n[u, c]`` = number of annotators who gave unit ``u`` category ``c``. The builders
take a long table ``(item, annotator, label)`` or a reliability matrix ``(annotators, units)``
in ``krippendorff.alpha``'s layout, and are vectorised (no loop over rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from annotate.stats._common import as_codes


def _check_counts(counts: ArrayLike) -> NDArray[np.int64]:
    """Validate a count matrix and return it as int64, shape (U, V)."""
    arr = np.asarray(counts)
    if arr.ndim != 2:
        raise ValueError(
            f"The count matrix must be two-dimensional (units x categories); got an array with shape {arr.shape}."
        )
    if arr.shape[1] < 1:
        raise ValueError(f"The count matrix needs at least one category column; got shape {arr.shape}.")
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"The count matrix must hold integer counts; got dtype {arr.dtype}.")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise ValueError("The count matrix contains NaN or infinite values; counts must be finite integers.")
        if (arr != np.round(arr)).any():
            raise ValueError("The count matrix contains non-integer values; counts must be whole numbers.")
    out = arr.astype(np.int64)
    if out.size and out.min() < 0:
        u, c = np.argwhere(out < 0)[0]
        raise ValueError(f"Counts must be non-negative; found {out[u, c]} at unit {u}, category {c}.")
    return out


@dataclass(frozen=True, eq=False)
class LabelMatrix:
    """Integer-coded ratings, one row per unit and one column per annotator.

    Attributes
    ----------
    codes : ndarray of int64, shape (U, J)
        Category index in ``0 .. V-1``; ``-1`` = no rating.
    items : tuple, length U
        Unit identifiers, in row order.
    annotators : tuple, length J
        Annotator identifiers, in column order.
    categories : tuple, length V
        Category labels, in code order.
    """

    codes: NDArray[np.int64]
    items: tuple[Any, ...]
    annotators: tuple[Any, ...]
    categories: tuple[Any, ...]

    def counts(self) -> NDArray[np.int64]:
        """Count matrix, shape (U, V)."""
        return counts_from_codes(self.codes, len(self.categories))

    def reliability_data(self) -> NDArray[np.float64]:
        """Codes as ``krippendorff.alpha`` wants them: shape (J, U), float, NaN = missing."""
        out = self.codes.T.astype(float)
        out[out < 0] = np.nan
        return out


def counts_from_codes(codes: ArrayLike, n_categories: int) -> NDArray[np.int64]:
    """Count matrix from a label matrix.

    Parameters
    ----------
    codes : array_like, shape (U, J)
        Category codes ``0 .. V-1``; ``-1`` or NaN = no rating.
    n_categories : int
        V.

    Returns
    -------
    ndarray of int64, shape (U, V)
        ``n[u, c]`` = number of annotators who gave unit ``u`` category ``c``.

    Examples
    --------
    >>> counts_from_codes([[0, 0, 1], [1, -1, 1], [-1, -1, 2]], 3).tolist()
    [[2, 1, 0], [0, 2, 0], [0, 0, 1]]
    """
    y = as_codes(codes, n_categories)
    U = y.shape[0]
    K = int(n_categories)
    rated = y >= 0
    # One bincount over flat (unit, category) cells instead of a loop over annotators.
    flat = (np.arange(U, dtype=np.int64)[:, None] * K + y)[rated]
    return np.bincount(flat, minlength=U * K).reshape(U, K)


def _encode(
    values: NDArray[Any], categories: Sequence[Any] | None, *, unknown: Literal["raise", "missing"] = "raise"
) -> tuple[NDArray[np.int64], tuple[Any, ...]]:
    """Map non-missing label values to codes 0..V-1 (default: sorted observed values).

    A value outside ``categories`` raises, or with ``unknown="missing"`` gets code -1.
    """
    if categories is None:
        try:
            cats, codes = np.unique(values, return_inverse=True)
        except TypeError as exc:
            raise ValueError("The labels mix types that cannot be sorted; pass `categories` explicitly.") from exc
        return codes.astype(np.int64).ravel(), tuple(cats.tolist())
    cat_tuple = tuple(categories)
    index = pd.Index(cat_tuple)
    if not index.is_unique:
        raise ValueError(f"The categories must be distinct; got {list(cat_tuple)}.")
    codes = index.get_indexer(values)
    if unknown == "raise" and (codes < 0).any():
        unknown_values = pd.unique(values[codes < 0])[:5]
        raise ValueError(
            f"Some labels are not among the categories {list(cat_tuple)}: {list(unknown_values)}. "
            "Add them to the categories or clean the labels first."
        )
    return codes.astype(np.int64), cat_tuple


def label_matrix_from_reliability_data(
    reliability_data: ArrayLike, categories: Sequence[Any] | None = None
) -> LabelMatrix:
    """Label matrix from a reliability matrix in ``krippendorff.alpha`` layout.

    Parameters
    ----------
    reliability_data : array_like, shape (J, U)
        Rows are annotators, columns are units; NaN or None = missing. Values may be numbers or
        strings.
    categories : sequence, optional
        Category values in code (and, for ordinal alpha, rank) order. Default: the sorted
        distinct observed values.

    Returns
    -------
    LabelMatrix
        ``codes`` with shape (U, J); ``items`` = ``0..U-1``; ``annotators`` = ``0..J-1``.

    Examples
    --------
    Two coders (rows), three units (columns); the first coder has no value for unit 2:

    >>> lm = label_matrix_from_reliability_data([[1, 2, np.nan], [1, 2, 2]])
    >>> lm.codes.tolist(), lm.categories
    ([[0, 0], [1, 1], [-1, 1]], (1.0, 2.0))
    >>> lm.counts().tolist()
    [[2, 0], [0, 2], [0, 1]]
    """
    arr = np.asarray(reliability_data)
    if arr.ndim != 2:
        raise ValueError(
            f"The reliability data must be two-dimensional (annotators x units); got an array with shape {arr.shape}."
        )
    J, U = arr.shape
    missing = np.isnan(arr) if arr.dtype.kind == "f" else np.asarray(pd.isna(arr), dtype=bool)
    codes_t = np.full((J, U), -1, dtype=np.int64)
    codes, cats = _encode(arr[~missing], categories)
    codes_t[~missing] = codes
    return LabelMatrix(codes_t.T.copy(), tuple(range(U)), tuple(range(J)), cats)


def label_matrix_from_long(
    table: pd.DataFrame,
    categories: Sequence[Any],
    *,
    item: str = "item_id",
    annotator: str = "annotator",
    label: str = "label",
    annotators: Sequence[Any] | None = None,
    unknown: Literal["raise", "missing"] = "raise",
    duplicates: Literal["raise", "last"] = "raise",
) -> LabelMatrix:
    """Label matrix from a long table with one row per (item, annotator).

    Parameters
    ----------
    table : pandas.DataFrame, shape (R, >=3)
        Columns ``item``, ``annotator`` and ``label``. A missing label (NaN/None) counts as no
        rating.
    categories : sequence, length V
        The label vocabulary in code order (e.g. ``("harmful", "safe", "unsure")``).
    item, annotator, label : str
        Column names.
    annotators : sequence, length J, optional
        The columns, in this order (distinct). Rows by anyone else, or without an annotator id,
        are left out. Default: every annotator of the table, sorted (a missing id is an error).
    unknown : {"raise", "missing"}
        A label outside ``categories`` raises (default), or counts as no rating.
    duplicates : {"raise", "last"}
        More than one row for an (item, annotator) pair raises (default), or the last of them
        that carries a rating (a label among ``categories``) wins.

    Returns
    -------
    LabelMatrix
        One row per item of the table, sorted (also an item none of whose rows is kept: it has no
        rating); ``codes`` with shape (U, J).

    Examples
    --------
    >>> votes = pd.DataFrame(
    ...     {
    ...         "item_id": [7, 7, 3, 3, 3],
    ...         "annotator": ["A2", "A1", "A1", "A2", "X"],
    ...         "label": ["safe", "harmful", "unsure", "safe", "safe"],
    ...     }
    ... )
    >>> lm = label_matrix_from_long(votes, ["harmful", "safe"], annotators=["A2", "A1"], unknown="missing")
    >>> lm.items, lm.annotators
    ((3, 7), ('A2', 'A1'))
    >>> lm.codes.tolist()
    [[1, -1], [1, 0]]
    """
    missing_cols = [c for c in (item, annotator, label) if c not in table.columns]
    if missing_cols:
        raise ValueError(f"The annotation table lacks the column(s) {missing_cols}; it has {list(table.columns)}.")
    if unknown not in ("raise", "missing") or duplicates not in ("raise", "last"):
        raise ValueError(
            f'unknown must be "raise" or "missing", and duplicates "raise" or "last"; '
            f"got {unknown!r} and {duplicates!r}."
        )
    item_code, items = pd.factorize(table[item], sort=True)
    if annotators is None:
        ann_code, anns = pd.factorize(table[annotator], sort=True)
        ann_tuple = tuple(anns.tolist())
    else:
        ann_tuple = tuple(annotators)
        ann_index = pd.Index(ann_tuple)
        if not ann_index.is_unique:
            raise ValueError(f"The annotators must be distinct; got {list(ann_tuple)}.")
        ann_code = ann_index.get_indexer(table[annotator])  # -1: not a listed annotator, left out
    if (item_code < 0).any() or (annotators is None and (ann_code < 0).any()):
        raise ValueError("The annotation table has rows with a missing item or annotator id.")
    U, J = len(items), len(ann_tuple)
    listed = ann_code >= 0
    flat = item_code.astype(np.int64) * J + ann_code  # cell of each row in the flattened (U, J) matrix
    if duplicates == "raise" and np.unique(flat[listed]).size != int(listed.sum()):
        dup = np.zeros(len(table), dtype=bool)
        dup[listed] = pd.Series(flat[listed]).duplicated(keep=False).to_numpy()
        first = table.loc[dup, [item, annotator]].iloc[0].tolist()
        raise ValueError(
            f"The annotation table has more than one row for (item, annotator) = {tuple(first)}; "
            "keep one current annotation per pair."
        )
    values = table[label].to_numpy()
    present = listed & ~np.asarray(pd.isna(values), dtype=bool)
    codes, cats = _encode(values[present], categories, unknown=unknown)
    cells = flat[present]
    rated = codes >= 0
    cells, codes = cells[rated], codes[rated]
    if duplicates == "last":
        last = ~pd.Series(cells).duplicated(keep="last").to_numpy()
        cells, codes = cells[last], codes[last]
    y = np.full(U * J, -1, dtype=np.int64)
    y[cells] = codes
    return LabelMatrix(y.reshape(U, J), tuple(items.tolist()), ann_tuple, cats)


def counts_from_long(
    table: pd.DataFrame,
    categories: Sequence[Any],
    *,
    item: str = "item_id",
    annotator: str = "annotator",
    label: str = "label",
) -> NDArray[np.int64]:
    """Count matrix, shape (U, V), from a long table; see :func:`label_matrix_from_long`."""
    return label_matrix_from_long(table, categories, item=item, annotator=annotator, label=label).counts()


def counts_from_reliability_data(
    reliability_data: ArrayLike, categories: Sequence[Any] | None = None
) -> NDArray[np.int64]:
    """Count matrix, shape (U, V), from a (J, U) reliability matrix with NaN for missing.

    Columns follow ``categories`` (default: sorted distinct observed values); see
    :func:`label_matrix_from_reliability_data`.
    """
    return label_matrix_from_reliability_data(reliability_data, categories).counts()
