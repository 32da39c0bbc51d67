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
    """A cell's text; control characters from the data escaped, so that a hostile name (a newline,
    a terminal escape sequence) can neither break the table nor drive the terminal.

    >>> print(_fmt("judge" + chr(10) + chr(27) + "[31mred"), _fmt(0.5), repr(_fmt(None)))
    judge\\n\\x1b[31mred 0.500 ''
    """
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3f}"
    text = str(v)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


# -- numbers in tables ----------------------------------------------------------------------
# One rule everywhere: a missing value (None or NaN) prints as blank, "-" or "n/e" as the column says.


def missing(x: Any) -> bool:
    """None or NaN."""
    return x is None or (isinstance(x, float) and x != x)


def num(x: Any, fmt: str = "{:.3f}") -> str:
    return "-" if missing(x) else fmt.format(x)


def int_or_blank(x: Any) -> str:
    return "" if missing(x) else str(int(x))


def ci(lo: Any, hi: Any) -> str:
    """``[lo, hi]`` with three decimals, blank when either end is missing."""
    return "" if missing(lo) or missing(hi) else f"[{lo:.3f}, {hi:.3f}]"


def pct_or_ne(x: Any) -> str:
    """A rate as a percentage, ``n/e`` (not estimable) when missing."""
    return "n/e" if missing(x) else f"{100 * x:.1f}%"


def ci_pct(lo: Any, hi: Any) -> str:
    return "" if missing(lo) or missing(hi) else f"[{100 * lo:.1f}, {100 * hi:.1f}]"


def eta(seconds: float | None) -> str:
    """A duration a person reads: seconds, minutes or hours."""
    if seconds is None or missing(seconds):
        return ""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def rank(x: float) -> str:
    return f"{x:g}"


def shift(x: float) -> str:
    return "0" if x == 0 else f"{x:+g}"


#: The width default text output keeps to (issue #45): a terminal's, with room to spare.
WIDTH = 100


def wrapped(text: str, indent: str = "", width: int = WIDTH, first: str = "") -> list[str]:
    """``text`` as lines of at most ``width`` columns (indents included), the first at ``first`` and the
    rest at ``indent`` (never broken inside a word or at a hyphen)."""
    import textwrap

    return textwrap.wrap(
        text, width, initial_indent=first, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False
    )


def say(text: str, indent: str = "", first: str = "") -> None:
    """Print a sentence wrapped to :data:`WIDTH` columns (never inside a word or at a hyphen), its first
    line at ``first`` and the rest at ``indent``."""
    import click

    click.echo("\n".join(wrapped(text, indent, first=first)))


def indented(text: str) -> None:
    """Print a note on a row or item above it: at two spaces, its continuation at four."""
    say(text, indent="    ", first="  ")
