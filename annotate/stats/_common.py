"""Small pieces every statistics module shares: seeds, NaN, JSON-ready values.

Pure: numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import Any

import numpy as np

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
