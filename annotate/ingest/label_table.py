"""Tables of existing human labels (CSV, TSV, JSONL, Parquet), for ``annotate import-labels``.

A table names each response by its key (``prompt_id``, and ``model``, ``benchmark``, ``epoch``
where the file has them, else from the command line) and holds its human labels in one of two
shapes:

* **wide**: one column per rater (``human1, human2, human3``), one row per response;
* **long**: one row per (response, rater), the rater's name in one column and the label in another.

Each label value goes through the value map (:data:`DEFAULT_VALUES`, over ``--values``): harmful,
safe or unsure; an empty cell is no vote. A value the map does not know is an error of its
``file:line``, so a mislabelled column (a judge's score read as a rater) cannot slip in.

The file is read by the generic table reader (:mod:`annotate.ingest.formats.generic`), with its
bounds on memory and its checks of hostile files; only the rows it yields differ.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotate.ingest.formats.generic import TableRows, is_table, read_table
from annotate.ingest.records import Problem, ReadContext

#: Raw label values (compared lower-cased and stripped) -> a reviewer's verdict.
DEFAULT_VALUES: dict[str, str] = {
    "1": "harmful",
    "1.0": "harmful",
    "true": "harmful",
    "yes": "harmful",
    "harmful": "harmful",
    "unsafe": "harmful",
    "jailbroken": "harmful",
    "0": "safe",
    "0.0": "safe",
    "false": "safe",
    "no": "safe",
    "safe": "safe",
    "unsure": "unsure",
    "ambiguous": "unsure",
}
VERDICTS = ("harmful", "safe", "unsure")
KEY_FIELDS = ("prompt_id", "model", "benchmark", "epoch")


@dataclass(frozen=True)
class LabelSpec:
    """Where a table holds what: ``key`` maps each key field to its column (``prompt_id`` needed);
    ``raters`` the wide shape's rater columns; or ``rater_column`` and ``label_column`` (long)."""

    key: Mapping[str, str]
    raters: Sequence[str] = ()
    rater_column: str | None = None
    label_column: str | None = None
    values: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_VALUES))

    def columns(self) -> list[str]:
        long = [c for c in (self.rater_column, self.label_column) if c]
        return [*self.key.values(), *self.raters, *long]


@dataclass(slots=True)
class LabelRow:
    """One row's key and votes: (rater, verdict, raw value) with verdict None for an empty cell."""

    line: int
    key: dict[str, Any]
    votes: list[tuple[str, str | None, str]]
    end_line: int | None = None


def _text(value: Any) -> str:
    """A cell as text: a whole float as an integer (a Parquet 1.0 is the CSV's 1), None as empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


class _LabelRows(TableRows):
    def __init__(self, ctx: ReadContext, spec: LabelSpec) -> None:
        super().__init__(ctx, None)
        self.spec = spec
        self.values = {str(k).strip().lower(): v for k, v in spec.values.items()}

    def header(self, names: list[str]) -> Problem | None:
        missing = [c for c in self.spec.columns() if c not in names]
        if missing:
            return Problem(
                1, f"missing column(s) {', '.join(map(repr, missing))} (header: {', '.join(names)})", fatal=True
            )
        return None

    def item(self, obj: dict[str, Any], line: int, *, cells: bool = False) -> Any:  # LabelRow | Problem
        missing = [c for c in self.spec.columns() if c not in obj]
        if missing:
            return Problem(line, f"missing field(s) {', '.join(map(repr, missing))}")
        key: dict[str, Any] = {f: _text(obj[c]) for f, c in self.spec.key.items()}
        if not key.get("prompt_id"):
            return Problem(line, f"the key column {self.spec.key['prompt_id']!r} is empty")
        if "epoch" in key:
            try:
                key["epoch"] = int(key["epoch"] or 0)
            except ValueError:
                return Problem(line, f"epoch {key['epoch']!r} is not a whole number")
        pairs = (
            [(c, obj[c]) for c in self.spec.raters]
            if self.spec.raters
            else [(_text(obj[self.spec.rater_column or ""]), obj[self.spec.label_column or ""])]
        )
        votes: list[tuple[str, str | None, str]] = []
        for rater, raw in pairs:
            text = _text(raw)
            if not rater:
                return Problem(line, f"the rater column {self.spec.rater_column!r} is empty")
            if text == "":
                votes.append((rater, None, text))
                continue
            verdict = self.values.get(text.lower())
            if verdict is None:
                return Problem(
                    line,
                    f"rater {rater!r}: label {text[:40]!r} is not one the value map knows "
                    f"({', '.join(sorted(self.values))}); map it with --values {text[:20]}=harmful|safe|unsure",
                )
            votes.append((rater, verdict, text))
        return LabelRow(line, key, votes)

    def finish(self) -> None:
        return None


def read_label_table(path: Path, ctx: ReadContext, spec: LabelSpec) -> Iterator[LabelRow | Problem]:
    """The table's rows as :class:`LabelRow` (or a Problem per bad row; a fatal one stops)."""
    if not is_table(path):
        yield Problem(1, "not a table this command reads (.csv, .tsv, .jsonl, .json lines, .parquet)", fatal=True)
        return
    bad = [v for v in spec.values.values() if v not in VERDICTS]
    if bad:
        yield Problem(1, f"the value map gives {bad[0]!r}; labels are harmful, safe or unsure", fatal=True)
        return
    # _LabelRows.item gives a LabelRow where the generic reader's gives a Record
    yield from read_table(path, ctx, _LabelRows(ctx, spec))  # type: ignore[misc]
