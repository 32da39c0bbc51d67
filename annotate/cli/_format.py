"""Plain-text tables for the terminal (no dependencies; click styles only when asked)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    align: str | None = None,
    style: Callable[[int, int, str], str] | None = None,
) -> str:
    """Render rows as an aligned table.

    ``align`` has one character per column, ``l`` or ``r`` (default: numbers right). ``style``
    (row index, column index, padded cell text) -> styled text lets callers colour cells
    without breaking the alignment.
    """
    cells = [[_fmt(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(c))
    if align is None:
        align = "".join(
            "r" if rows and all(isinstance(r[i], (int, float)) for r in rows) else "l" for i in range(len(headers))
        )

    def pad(text: str, i: int) -> str:
        return text.rjust(widths[i]) if align[i] == "r" else text.ljust(widths[i])

    out = ["  ".join(pad(h, i) for i, h in enumerate(headers)).rstrip()]
    out.append("  ".join("-" * w for w in widths))
    for r, row in enumerate(cells):
        parts = []
        for i, c in enumerate(row):
            text = pad(c, i)
            parts.append(style(r, i, text) if style else text)
        out.append("  ".join(parts).rstrip())
    return "\n".join(out)


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def pct(x: float) -> str:
    return f"{100 * x:5.1f}%"
