"""Small pieces every statistics module shares: seeds, NaN, JSON-ready values, label codes.

Pure: numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: What every seeded function accepts: an int, a Generator (used as is) or None (fresh entropy).
SeedLike = int | np.random.Generator | None

NAN = float("nan")


def rng(seed: SeedLike) -> np.random.Generator:
    """A ``numpy.random.Generator`` for ``seed``.

    >>> rng(7).integers(0, 10, 3).tolist() == rng(7).integers(0, 10, 3).tolist()
    True
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)):
        return np.random.default_rng(seed)
    raise ValueError(f"seed must be an int, a numpy.random.Generator or None; got {seed!r}.")


def is_missing(value: Any) -> bool:
    """None or a float NaN (what a missing cell of a store row or a DataFrame holds).

    >>> is_missing(None), is_missing(float("nan")), is_missing(0.0), is_missing("x")
    (True, True, False, False)
    """
    if value is None:
        return True
    try:
        return bool(isinstance(value, (float, np.floating)) and math.isnan(value))
    except TypeError:
        return False


def jsonable(obj: Any) -> Any:
    """JSON-ready Python objects: dataclasses and mappings to dicts, numpy to Python, NaN/inf to None.

    >>> jsonable({"a": np.float64("nan"), "b": (np.int64(2), float("inf"))})
    {'a': None, 'b': [2, None]}
    """
    kind = type(obj)
    if kind is str or kind is int or kind is bool or obj is None:  # the common case first: a scalar
        return obj
    if kind is float:
        return obj if math.isfinite(obj) else None
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def as_codes(labels: ArrayLike, n_categories: int) -> NDArray[np.int64]:
    """Validate a label matrix of category codes; NaN and -1 both become -1 (no rating).

    Parameters
    ----------
    labels : array_like, shape (U, J)
        One row per unit, one column per annotator; codes ``0 .. V-1``, ``-1`` or NaN = missing.
    n_categories : int
        V.

    Returns
    -------
    ndarray of int64, shape (U, J)

    Raises
    ------
    ValueError
        For a non-2-D array, a non-numeric dtype, non-integer codes or codes outside ``-1 .. V-1``.

    >>> as_codes([[0.0, float("nan")], [1.0, 0.0]], 2).tolist()
    [[0, -1], [1, 0]]
    """
    if int(n_categories) != n_categories or n_categories < 1:
        raise ValueError(f"n_categories must be a positive integer; got {n_categories!r}.")
    arr = np.asarray(labels)
    if arr.ndim != 2:
        raise ValueError(
            f"The label matrix must be two-dimensional (units x annotators); got an array with shape {arr.shape}."
        )
    if arr.dtype.kind == "f":
        missing = np.isnan(arr)
        filled = np.where(missing, -1.0, arr)
        if (filled != np.round(filled)).any():
            raise ValueError("The label matrix contains non-integer codes; use 0..V-1, with -1 or NaN for missing.")
        codes = filled.astype(np.int64)
    elif arr.dtype.kind in "iu":
        codes = arr.astype(np.int64)
    else:
        raise ValueError(
            f"The label matrix must hold integer codes (dtype {arr.dtype} given); "
            "build it with label_matrix_from_long or label_matrix_from_reliability_data."
        )
    bad = (codes < -1) | (codes >= n_categories)
    if bad.any():
        u, j = np.argwhere(bad)[0]
        raise ValueError(
            f"Label codes must lie in 0..{n_categories - 1} (or -1 / NaN for missing); "
            f"found {codes[u, j]} at unit {u}, annotator {j}."
        )
    return codes


def average_ranks(values: ArrayLike, axis: int = -1) -> NDArray[np.float64]:
    """Ranks 1..n along ``axis``, ties given the mean of their ranks; a slice holding a NaN is all NaN.

    What ``scipy.stats.rankdata(values, method="average", axis=axis)`` returns (its default
    ``nan_policy="propagate"``), without importing ``scipy.stats`` (half a second of every
    command's start). Per slice: sort (stable); a tie group spanning sorted positions f..l gets
    (f + l) / 2 + 1; +-inf are ordinary values.

    >>> average_ranks([0.3, 0.1, 0.3, 0.2]).tolist()
    [3.5, 1.0, 3.5, 2.0]
    >>> average_ranks([[1.0, 2.0], [1.0, float("nan")]], axis=1).tolist()
    [[1.0, 2.0], [nan, nan]]
    """
    a = np.moveaxis(np.asarray(values, dtype=np.float64), axis, -1)
    n = a.shape[-1]
    out = np.empty(a.shape)
    if n == 0:
        return np.moveaxis(out, -1, axis)
    order = np.argsort(a, axis=-1, kind="mergesort")
    s = np.take_along_axis(a, order, axis=-1)
    pos = np.broadcast_to(np.arange(n, dtype=np.float64), s.shape)
    starts = np.ones(s.shape, dtype=bool)
    starts[..., 1:] = s[..., 1:] != s[..., :-1]
    ends = np.ones(s.shape, dtype=bool)
    ends[..., :-1] = starts[..., 1:]
    first = np.maximum.accumulate(np.where(starts, pos, 0.0), axis=-1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(ends, pos, float(n)), -1), axis=-1), -1)
    np.put_along_axis(out, order, (first + last) / 2.0 + 1.0, axis=-1)
    out[np.isnan(a).any(axis=-1)] = np.nan
    return np.moveaxis(out, -1, axis)


def normal_quantile(p: float) -> float:
    """Phi^-1(p), the standard normal quantile: ``scipy.special.ndtri`` for a scalar, without SciPy.

    ``statistics.NormalDist.inv_cdf`` (Wichura's AS241, accurate to about 1e-16, as ndtri); 0 and
    1 give -inf and +inf, as ndtri does. Importing SciPy costs 0.1-0.2 s of a command's start.

    >>> round(normal_quantile(0.975), 12), normal_quantile(0.5), normal_quantile(1.0)
    (1.95996398454, 0.0, inf)
    """
    from statistics import NormalDist

    if p <= 0.0 or p >= 1.0:
        if p == 0.0:
            return -math.inf
        if p == 1.0:
            return math.inf
        return math.nan
    return NormalDist().inv_cdf(p)


def normal_cdf(x: float) -> float:
    """Phi(x), the standard normal distribution function (``scipy.special.ndtr`` for a scalar).

    >>> round(normal_cdf(1.959963984540054), 12), normal_cdf(-math.inf)
    (0.975, 0.0)
    """
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def xlogy(x: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
    """``x * log(y)``, 0 where ``x == 0`` (unless ``y`` is NaN): ``scipy.special.xlogy``, elementwise.

    >>> xlogy(np.array([0.0, 2.0, 0.0]), np.array([0.0, np.e, np.nan])).tolist()
    [0.0, 2.0, nan]
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    zero = (x == 0) & ~np.isnan(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(zero, 0.0, x * np.log(np.where(zero, 1.0, y)))


def chi2_sf(x: float, df: float) -> float:
    """P(X > x) for X ~ chi-square(df): ``scipy.special.chdtrc(df, x)``, without SciPy.

    The regularised upper incomplete gamma Q(df / 2, x / 2): its series where x / 2 < df / 2 + 1,
    else its continued fraction (modified Lentz), to about 1e-15 (Numerical Recipes 6.2).

    >>> round(chi2_sf(3.841458820694124, 1), 12), round(chi2_sf(10.0, 4), 12), chi2_sf(0.0, 3)
    (0.05, 0.040427681995, 1.0)
    """
    if math.isnan(x) or math.isnan(df) or df <= 0:
        return math.nan
    if x <= 0:
        return 1.0
    a, z = df / 2.0, x / 2.0
    log_front = a * math.log(z) - z - math.lgamma(a)
    if z < a + 1.0:  # P by its series, Q = 1 - P
        term = total = 1.0 / a
        n = a
        for _ in range(10_000):
            n += 1.0
            term *= z / n
            total += term
            if abs(term) < abs(total) * 1e-17:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    tiny = 1e-300
    b = z + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return math.exp(log_front) * h


#: Up to this many additions, an indicator product is one ``np.add.at``, which needs no SciPy:
#: importing scipy.sparse costs 0.1-0.2 s of a command's start, more than every product of a small
#: store together. Above it the sparse product is 2-15 times faster (at this bound: 8 ms against 1.5).
DIRECT_ADDITIONS = 1_000_000


def indicator_product(
    rows: NDArray[np.int64], cols: NDArray[np.int64], shape: tuple[int, int], values: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``A @ values`` for the (R x C) matrix ``A`` with a 1 added at each (rows[i], cols[i]).

    Repeated pairs add up, as in ``scipy.sparse.csr_matrix((ones, (rows, cols)), shape)``, and a
    NaN in ``values`` reaches only the rows it is summed into, as there. The product is one
    ``np.add.at`` of the rows it adds when that is at most ``DIRECT_ADDITIONS`` additions, else sparse
    (SciPy, imported then: 2-15 times faster on large inputs). Both give the same sums.

    >>> indicator_product(np.array([0, 1, 1]), np.array([1, 0, 0]), (2, 2), np.array([[1.0], [10.0]])).tolist()
    [[10.0], [2.0]]
    """
    values = np.asarray(values, dtype=np.float64)
    width = int(np.prod(values.shape[1:])) if values.ndim > 1 else 1
    if len(rows) * width <= DIRECT_ADDITIONS:
        out = np.zeros((shape[0],) + values.shape[1:])
        np.add.at(out, rows, values[cols])  # only the entries that are there: 0 x NaN is never formed
        return out
    from scipy import sparse  # lazy: small stores and light commands never load SciPy

    matrix = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=shape)
    return np.asarray(matrix @ values)
