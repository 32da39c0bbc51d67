"""Spreadsheet-safe CSV for exports: the one writer every exported CSV goes through, and its reader.

Auditors open exports in spreadsheets, and a spreadsheet runs a cell that begins with ``=``,
``+``, ``-`` or ``@`` (or a tab or carriage return, which some of them skip first) as a formula:
a model named ``=HYPERLINK(...)`` or ``=cmd|' /C calc'!A0`` would act when the file is opened.
As OWASP recommends (CSV injection), every such *text* cell gets a leading apostrophe, which
spreadsheets show as text; numbers are written as numbers and never touched (a tau of -0.4 stays
``-0.4``). Header cells are text too.

The change is undone exactly by :func:`restore` (so ``verify`` and every re-derivation read the
values the tool computed with): a text cell whose leading apostrophes are followed by one of the
trigger characters gets one more apostrophe on writing and loses one on reading, so a value that
itself begins with ``'=`` survives the round trip as well.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

import pandas as pd

__all__ = ["TRIGGERS", "CsvTable", "CsvProblem", "frame_to_csv", "neutralise", "parse_csv", "restore"]

#: What a text cell must not begin with (after any apostrophes): OWASP's list.
TRIGGERS = frozenset("=+-@\t\r")


def _needs_quote(text: str) -> bool:
    body = text.lstrip("'")
    return bool(body) and body[0] in TRIGGERS


def neutralise(text: str) -> str:
    """A text cell as it is written: one leading apostrophe more when a spreadsheet would run it.

    >>> [neutralise(s) for s in ("=1+2", "@SUM(A1)", "-x", "+1", "\\tx", "plain", "'=x", "'quote", "")]
    ["'=1+2", "'@SUM(A1)", "'-x", "'+1", "'\\tx", 'plain', "''=x", "'quote", '']
    """
    return "'" + text if _needs_quote(text) else text


def restore(text: str) -> str:
    """The inverse of :func:`neutralise`: the value the tool computed with.

    >>> all(restore(neutralise(s)) == s for s in ("=1+2", "'=x", "''@y", "'quote", "a-b", "-", "'"))
    True
    """
    return text[1:] if text.startswith("'") and _needs_quote(text) else text


def _neutral_value(value: Any) -> Any:
    return neutralise(value) if isinstance(value, str) else value


def frame_to_csv(frame: pd.DataFrame) -> bytes:
    """``frame`` as spreadsheet-safe CSV bytes (UTF-8, CRLF line ends as RFC 4180 has them, no index).

    Only ``str`` values and column names are neutralised; numbers, booleans and missing values
    are written as pandas writes them (floats with their shortest exact repr).
    """
    safe = frame.copy()
    for col in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[col]):  # numbers (and booleans) are never touched
            safe[col] = safe[col].astype(object).map(_neutral_value)
    safe.columns = [_neutral_value(str(c)) for c in safe.columns]
    # CRLF (RFC 4180): the csv writer then quotes every cell holding a CR or LF, which it does not
    # do for a lone CR when lines end in LF alone.
    text: str = safe.to_csv(index=False, lineterminator="\r\n")
    return text.encode("utf-8")


@dataclass(frozen=True)
class CsvTable:
    """A CSV file as read back: the header and the rows, every cell restored text."""

    name: str
    header: list[str]
    rows: list[list[str]]
    lines: list[int]  # the line each row starts on (1 = the header), for messages

    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame of text (empty cells are ``""``).

        Raises :class:`CsvProblem` when a column name repeats (a table's columns are named once).
        """
        repeated = sorted({c for c in self.header if self.header.count(c) > 1})
        if repeated:
            raise CsvProblem(f"{self.name}:1: repeated column name(s) {', '.join(map(repr, repeated))}.")
        return pd.DataFrame(self.rows, columns=self.header, dtype=object)


class CsvProblem(ValueError):
    """A CSV file that cannot be read as a table (the message names the line)."""


def parse_csv(data: bytes, name: str, *, restore_cells: bool = True) -> CsvTable:
    """Read CSV bytes strictly and undo the neutralising of every cell and header cell.

    ``restore_cells=False`` keeps the cells as they are (exports written before neutralising).

    Raises :class:`CsvProblem` (``name:LINE: what is wrong``) for bytes that are not UTF-8, an
    empty file, or a row whose number of fields differs from the header.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CsvProblem(f"{name}: byte {exc.start} is not UTF-8; exports are written in UTF-8.") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[list[str]] = []
    lines: list[int] = []
    header: list[str] | None = None
    try:
        start = 1
        for record in reader:
            cells = [restore(c) for c in record] if restore_cells else record
            if header is None:
                header = cells
            else:
                if len(cells) != len(header):
                    raise CsvProblem(f"{name}:{start}: {len(cells)} fields, the header has {len(header)}.")
                rows.append(cells)
                lines.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise CsvProblem(f"{name}:{reader.line_num}: not valid CSV ({exc}).") from None
    if header is None:
        raise CsvProblem(f"{name}: the file is empty; it should start with a header line.")
    return CsvTable(name=name, header=header, rows=rows, lines=lines)
