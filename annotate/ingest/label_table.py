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
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from annotate.ingest.formats.column_map import composite_parts, composite_value
from annotate.ingest.formats.generic import TableRows, is_table, read_table
from annotate.ingest.records import Problem, ReadContext, renamed_value

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
#: The settler of a final label when the file does not name one (``--final COLUMN`` alone).
SETTLED_BY_FILE = "final"
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
    #: Wide shape: the column naming who wrote each label column (``annot1_label`` by
    #: ``annot1_name``), so that the raters are people, not column positions.
    rater_names: Mapping[str, str] = field(default_factory=dict)
    #: The file's settled final label (``import-labels --final COLUMN[:BY_COLUMN]``), and the column
    #: naming who settled it (None: one settler, the file).
    final_column: str | None = None
    final_by: str | None = None

    def columns(self) -> list[str]:
        long = [c for c in (self.rater_column, self.label_column) if c]
        final = [c for c in (self.final_column, self.final_by) if c]
        return [*self.key.values(), *self.raters, *self.rater_names.values(), *long, *final]


def is_pattern(raw: str) -> bool:
    """A ``--values`` entry that is a shell-style pattern (``1.*=safe``), not one value."""
    return any(ch in raw for ch in "*?[")


@dataclass(slots=True)
class LabelRow:
    """One row's key and votes: (rater, verdict, raw value) with verdict None for an empty cell."""

    line: int
    key: dict[str, Any]
    votes: list[tuple[str, str | None, str]]
    end_line: int | None = None
    #: The settled final label: (settler, verdict, raw value); None where the row has none.
    final: tuple[str, str, str] | None = None


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
        given = {str(k).strip().lower(): v for k, v in spec.values.items()}
        self.values = {k: v for k, v in given.items() if not is_pattern(k)}
        self.patterns = [(k, v) for k, v in given.items() if is_pattern(k)]
        #: pattern -> {raw value: cells} it matched (reported: every match is said)
        self.matched: dict[str, dict[str, int]] = {}

    def verdict(self, text: str) -> str | None:
        """A raw value's verdict: the value map's own entry, else the first pattern that matches it."""
        low = text.lower()
        if low in self.values:
            return self.values[low]
        for pattern, verdict in self.patterns:
            if fnmatchcase(low, pattern):
                seen = self.matched.setdefault(pattern, {})
                seen[text] = seen.get(text, 0) + 1
                return verdict
        return None

    def header(self, names: list[str]) -> Problem | None:
        missing = [c for c in self.spec.columns() if c not in names and composite_parts(c, names) is None]
        if missing:
            return Problem(
                1, f"missing column(s) {', '.join(map(repr, missing))} (header: {', '.join(names)})", fatal=True
            )
        return None

    def item(self, obj: dict[str, Any], line: int, *, cells: bool = False) -> Any:  # LabelRow | Problem
        missing = [c for c in self.spec.columns() if c not in obj and composite_parts(c, obj) is None]
        if missing:
            return Problem(line, f"missing field(s) {', '.join(map(repr, missing))}")
        key: dict[str, Any] = {}
        for f, c in self.spec.key.items():
            parts = None if c in obj else composite_parts(c, obj)
            key[f] = _text(obj[c]) if parts is None else (composite_value([_text(obj[p]) for p in parts]) or "")
            if f in ("model", "benchmark"):
                key[f] = renamed_value(self.ctx, f, key[f])
        if not key.get("prompt_id"):
            return Problem(line, f"the key column {self.spec.key['prompt_id']!r} is empty")
        if "epoch" in key:
            try:
                key["epoch"] = int(key["epoch"] or 0)
            except ValueError:
                return Problem(line, f"epoch {key['epoch']!r} is not a whole number")
        names = self.spec.rater_names
        if self.spec.raters:
            # wide: each label column's rater is the column, or the person its name column names
            pairs = [(_text(obj[names[c]]) if c in names else c, obj[c], names.get(c)) for c in self.spec.raters]
        else:
            column = self.spec.rater_column or ""
            pairs = [(_text(obj[column]), obj[self.spec.label_column or ""], column)]
        votes: list[tuple[str, str | None, str]] = []
        for rater, raw, name_column in pairs:
            text = _text(raw)
            if not rater:
                if text == "" and name_column in names.values():
                    continue  # a wide row's unused rater slot: no name, no label
                return Problem(line, f"the rater column {name_column!r} is empty")
            if text == "":
                votes.append((rater, None, text))
                continue
            verdict = self.verdict(text)
            if verdict is None:
                known = sorted(self.values) + [p for p, _ in self.patterns]
                return Problem(
                    line,
                    f"rater {rater!r}: label {text[:40]!r} is not one the value map knows "
                    f"({', '.join(known)}); map it with --values {text[:20]}=harmful|safe|unsure "
                    "(or a pattern: --values '1.*=safe')",
                )
            votes.append((rater, verdict, text))
        final = None
        if self.spec.final_column:
            text = _text(obj[self.spec.final_column])
            if text:
                verdict = self.verdict(text)
                if verdict is None:
                    return Problem(
                        line,
                        f"final label {text[:40]!r} ({self.spec.final_column!r}) is not one the value map knows; "
                        f"map it with --values {text[:20]}=harmful|safe|unsure",
                    )
                settler = _text(obj[self.spec.final_by]) if self.spec.final_by else SETTLED_BY_FILE
                if not settler:
                    return Problem(line, f"the final label has no settler: the column {self.spec.final_by!r} is empty")
                final = (settler, verdict, text)
        return LabelRow(line, key, votes, final=final)

    def finish(self) -> None:
        return None


def read_label_table(
    path: Path, ctx: ReadContext, spec: LabelSpec, matched: dict[str, dict[str, int]] | None = None
) -> Iterator[LabelRow | Problem]:
    """The table's rows as :class:`LabelRow` (or a Problem per bad row; a fatal one stops).

    ``matched``, when given, receives what each ``--values`` pattern matched ({pattern: {raw: cells}}).
    """
    if not is_table(path):
        yield Problem(1, "not a table this command reads (.csv, .tsv, .jsonl, .json lines, .parquet)", fatal=True)
        return
    bad = [v for v in spec.values.values() if v not in VERDICTS]
    if bad:
        yield Problem(1, f"the value map gives {bad[0]!r}; labels are harmful, safe or unsure", fatal=True)
        return
    rows = _LabelRows(ctx, spec)
    if matched is not None:
        rows.matched = matched
    # _LabelRows.item gives a LabelRow where the generic reader's gives a Record
    yield from read_table(path, ctx, rows)  # type: ignore[misc]
