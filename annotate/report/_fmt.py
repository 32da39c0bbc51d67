"""Formatting of numbers, percentages, intervals and ranks for the report.

Every formatter takes any JSON-like value and returns plain text (escaping is the caller's
business). Anything that is not a finite number (``None``, NaN, a bool, a non-numeric string)
is shown as :data:`DASH`, never as a number.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["DASH", "clip", "count", "fixed", "interval", "number", "p_value", "pct", "rank", "share"]

DASH = "—"


def number(value: Any) -> float | None:
    """``value`` as a finite float, or ``None`` (bools are not numbers here)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def fixed(value: Any, nd: int = 3) -> str:
    """``value`` with ``nd`` decimals."""
    x = number(value)
    return DASH if x is None else f"{x:.{nd}f}"


def pct(value: Any, nd: int = 1) -> str:
    """A fraction as per cent with ``nd`` decimals, without the sign."""
    x = number(value)
    return DASH if x is None else f"{100 * x:.{nd}f}"


def interval(lo: Any, hi: Any, nd: int = 3) -> str:
    """``lo–hi`` with ``nd`` decimals; a dash unless both ends are numbers."""
    return DASH if number(lo) is None or number(hi) is None else f"{fixed(lo, nd)}–{fixed(hi, nd)}"


def count(value: Any) -> str:
    """A whole number with thousands separators."""
    x = number(value)
    return DASH if x is None else f"{int(round(x)):,}"


def rank(value: Any) -> str:
    """A rank: whole ranks without decimals, tied (averaged) ranks with one."""
    x = number(value)
    if x is None:
        return DASH
    return str(int(x)) if x == int(x) else f"{x:.1f}"


def p_value(value: Any) -> str:
    """A p-value with three decimals, ``< 0.001`` below that."""
    x = number(value)
    if x is None:
        return DASH
    return "< 0.001" if x < 0.001 else f"{x:.3f}"


def share(part: Any, whole: Any) -> str:
    """``part / whole`` as a whole per cent; a dash when either is missing or ``whole`` is 0."""
    p, w = number(part), number(whole)
    return DASH if p is None or not w else pct(p / w, 0)


def clip(text: str, n: int) -> str:
    """``text`` cut to at most ``n`` characters, an ellipsis marking the cut."""
    return text if len(text) <= n else text[: n - 1] + "…"
