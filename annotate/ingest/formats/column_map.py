"""Column maps: how any table's columns become the generic schema's fields (``ingest --map``).

``--map prompt=forbidden_prompt,response=answer`` or the ``[ingest.map]`` tables of annotate.toml
(:func:`column_maps`) name the file's column that holds each field (:class:`ColumnMap`). The map
renames, nothing else: the file's other columns keep their names. A field may be made of several
columns (``prompt_id=case_id+prompt_type``: their values joined with ``:``, issue #42). The reader
that applies a map is :mod:`annotate.ingest.formats.generic` (:class:`_Plan` is how one file's
columns are read under it).
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotate.errors import InputError


def _type(value: Any) -> str:
    """A value's type as a message names it (``null`` for None)."""
    return "null" if value is None else type(value).__name__


#: The fields a column map may name, in the schema's order.
TARGETS = (
    "model",
    "benchmark",
    "prompt_id",
    "prompt",
    "response",
    "judge_label",
    "judge",
    "judge_score",
    "category",
    "epoch",
    "messages",
    "image",
    "hazard",
    "persona",
    "locale",
)
KNOWN = frozenset(TARGETS)
#: Short names a column map also takes for a field (``--map score=score`` reads ``judge_score``).
ALIASES = {"score": "judge_score", "label": "judge_label", "verdict": "judge_label"}
#: The columns a message names, at most, before it is cut (the rest: "... and N more").
_COLUMNS_SHOWN = 40


# -- column maps ---------------------------------------------------------------------------------

#: Where a map entry was given, when it comes from the command line.
OPTION_ORIGIN = "--map"


@dataclass(frozen=True)
class ColumnMap:
    """The file's column that holds each field (``columns``: field -> column), and where each entry
    was given (``origins``: ``--map``, ``[ingest.map]`` or ``[ingest.map."PATTERN"]`` of
    annotate.toml, or a reader's own name for its built-in map). ``explicit``: named for this file
    (``--map``, a pattern), not only annotate.toml's default ``[ingest.map]``."""

    columns: dict[str, str] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    explicit: bool = True

    def given(self, target: str) -> str:
        """How the entry for ``target`` was written, for a message: ``--map prompt=forbidden_prompt``."""
        column, origin = self.columns[target], self.origins[target]
        if origin == OPTION_ORIGIN:
            return f"--map {target}={column}"
        if origin.startswith("[ingest.map"):
            return f"{origin} {target} = {json.dumps(column, ensure_ascii=False)} in annotate.toml"
        return f"{origin}'s own {target}={column}"

    def over(self, base: ColumnMap | None) -> ColumnMap:
        """This map's entries over ``base``'s, field by field (this one wins)."""
        if base is None:
            return self
        return ColumnMap(
            {**base.columns, **self.columns}, {**base.origins, **self.origins}, self.explicit or base.explicit
        )

    def twice(self) -> str | None:
        """Why the map cannot be used: a column read as two fields; None when it can."""
        by_column: dict[str, list[str]] = {}
        for target, column in self.columns.items():
            by_column.setdefault(column, []).append(target)
        for column, targets in by_column.items():
            if len(targets) > 1:
                listed = " and ".join(self.given(t) for t in targets)
                return (
                    f"the column {column!r} is mapped twice ({listed}): a column is read as one field only; "
                    "map each field from a column of its own"
                )
        return None

    def described(self) -> str:
        """The entries for the ingest line: ``prompt=forbidden_prompt, response=answer (--map)``."""
        by_origin: dict[str, list[str]] = {}
        for target in TARGETS:
            if target in self.columns:
                by_origin.setdefault(self.origins[target], []).append(f"{target}={self.columns[target]}")
        return "; ".join(f"{', '.join(entries)} ({origin})" for origin, entries in by_origin.items())

    def recorded(self) -> dict[str, Any]:
        """What the ingest run's options keep of the map (its provenance)."""
        return {"map": dict(self.columns), "map_from": dict(self.origins)}


def _entry_problem(target: str, column: Any, given: str) -> str | None:
    if target not in KNOWN:
        return (
            f"{given}: {target!r} is not a field of the generic schema; map to one of: {', '.join(TARGETS)} "
            "(score, label and verdict are short for judge_score, judge_label and judge_label)"
        )
    if not isinstance(column, str):
        return f"{given}: the column must be named as text, got {_type(column)}"
    if not column:
        return f"{given}: no column named after the field (write FIELD=COLUMN)"
    return None


def parse_map_option(texts: Sequence[str]) -> ColumnMap | None:
    """The map of ``--map FIELD=COLUMN[,FIELD=COLUMN...]`` (the option may be repeated); None without one.

    Spaces around names are dropped; a column whose name holds a comma or starts or ends with a
    space is mapped in annotate.toml instead. Raises InputError listing every problem.
    """
    problems: list[str] = []
    columns: dict[str, str] = {}
    for text in texts:
        for part in text.split(","):
            if not part.strip():
                continue
            written, eq, column = (piece.strip() for piece in part.partition("="))
            if not eq:
                problems.append(f"--map {part.strip()!r}: write FIELD=COLUMN, e.g. --map prompt=forbidden_prompt")
                continue
            target = ALIASES.get(written, written)
            problem = _entry_problem(target, column, f"--map {written}={column}")
            if problem is None and target in columns:
                problem = (
                    f"--map names the field {target!r} twice ({target}={columns[target]} and {written}={column}); "
                    "map each field once"
                )
            if problem is not None:
                problems.append(problem)
                continue
            columns[target] = column
    cmap = ColumnMap(columns, dict.fromkeys(columns, OPTION_ORIGIN)) if columns else None
    if cmap is not None and (twice := cmap.twice()) is not None:
        problems.append(twice)
    if problems:
        raise InputError(f"--map was not used ({len(problems)} problem(s)); fix it and run again.", problems)
    return cmap


@dataclass(frozen=True)
class ColumnMaps:
    """The column maps of one command: ``--map`` (``option``), annotate.toml's ``[ingest.map]``
    (``default``: every table) and its ``[ingest.map."PATTERN"]`` tables (``patterns``).

    ``for_path`` merges them for one file, field by field: ``--map`` over the pattern that matches
    the file over the default. A pattern without ``/`` matches the file's name, one with ``/`` its
    path relative to the workspace (``root``) or as given; ``*`` matches any characters, ``/`` too.
    """

    option: ColumnMap | None = None
    default: ColumnMap | None = None
    patterns: tuple[tuple[str, ColumnMap], ...] = ()
    root: Path | None = None

    def for_path(self, path: Path) -> ColumnMap | None:
        """The map for one file, or None; InputError when two patterns match it."""
        matched = [(pattern, cmap) for pattern, cmap in self.patterns if self._matches(pattern, Path(path))]
        if len(matched) > 1:
            names = ", ".join(f"[ingest.map.{json.dumps(p, ensure_ascii=False)}]" for p, _ in matched)
            raise InputError(
                f"{path}: the file matches several column maps of annotate.toml ({names}); make each pattern "
                "match its own files"
            )
        cmap = self.default
        if matched:
            cmap = matched[0][1].over(cmap)
        if self.option is not None:
            cmap = self.option.over(cmap)
        return cmap

    def _matches(self, pattern: str, path: Path) -> bool:
        if "/" not in pattern:
            return fnmatch.fnmatchcase(path.name, pattern)
        candidates = [path.as_posix()]
        if self.root is not None:
            try:
                candidates.append(Path(os.path.abspath(path)).relative_to(self.root).as_posix())
            except ValueError:
                pass
        return any(fnmatch.fnmatchcase(c, pattern) for c in candidates)


def column_maps(option: ColumnMap | None, settings: Any, *, config: Path, root: Path | None = None) -> ColumnMaps:
    """The command's column maps: ``--map`` and the ``[ingest]`` table of annotate.toml (``settings``).

    ``[ingest.map]``: ``FIELD = "COLUMN"`` entries apply to every file read as a table; a
    sub-table ``[ingest.map."PATTERN"]`` holds the entries for the files the pattern matches.
    Raises InputError naming ``config`` and every problem.
    """
    table = settings.get("map") if isinstance(settings, dict) else None
    if table is None:
        return ColumnMaps(option=option, root=root)
    problems: list[str] = []
    default: dict[str, str] = {}
    patterns: list[tuple[str, ColumnMap]] = []
    if not isinstance(table, dict):
        problems.append('[ingest] map must be a table: [ingest.map] with FIELD = "COLUMN" entries')
        table = {}
    for key, value in table.items():
        if isinstance(value, dict):
            origin = f"[ingest.map.{json.dumps(key, ensure_ascii=False)}]"
            if ALIASES.get(key, key) in KNOWN or not key.strip():
                problems.append(
                    f'{origin}: a table under [ingest.map] names the files it maps (a pattern such as "*.csv"); '
                    f'map the field {key!r} with {key} = "COLUMN" under [ingest.map]'
                )
                continue
            entries: dict[str, str] = {}
            for written, column in value.items():
                problem = _toml_entry(entries, written, column, f"{origin} {written}")
                if problem is not None:
                    problems.append(problem)
            if entries:
                cmap = ColumnMap(entries, dict.fromkeys(entries, origin))
                if (twice := cmap.twice()) is not None:
                    problems.append(twice)
                patterns.append((key, cmap))
        else:
            problem = _toml_entry(default, key, value, f"[ingest.map] {key}")
            if problem is not None:
                if ALIASES.get(key, key) not in KNOWN:
                    problem += ' (or a table [ingest.map."PATTERN"] of them for some files)'
                problems.append(problem)
    default_map = ColumnMap(default, dict.fromkeys(default, "[ingest.map]"), explicit=False) if default else None
    if default_map is not None and (twice := default_map.twice()) is not None:
        problems.append(twice)
    if problems:
        raise InputError(
            f"{config}: the column maps were not used ({len(problems)} problem(s)); fix [ingest.map] and run again.",
            [f"{config}: {p}" for p in problems],
        )
    return ColumnMaps(option=option, default=default_map, patterns=tuple(patterns), root=root)


def _toml_entry(entries: dict[str, str], written: str, column: Any, given: str) -> str | None:
    """Add one ``FIELD = "COLUMN"`` entry of annotate.toml to ``entries`` (an alias read as its
    field), or say why it cannot be: not a field, not a column name, a field named twice."""
    target = ALIASES.get(written, written)
    problem = _entry_problem(target, column, given)
    if problem is None and target in entries:
        problem = f"{given}: the field {target!r} is mapped twice (from {entries[target]!r} too); map each field once"
    if problem is None:
        entries[target] = column
    return problem


#: A field made of several columns (``--map prompt_id=case_id+prompt_type``): their values joined with
#: this (``17:direct``), a column whose own name holds ``+`` read as itself.
COMPOSITE_JOIN = ":"


def composite_parts(column: str, present: Iterable[str]) -> list[str] | None:
    """The columns a composite entry joins, when ``column`` is not itself a column and every part is.

    >>> composite_parts("case_id+prompt_type", ["case_id", "prompt_type"])
    ['case_id', 'prompt_type']
    >>> composite_parts("a+b", ["a+b", "a", "b"]) is None  # a column of that name is read as it is
    True
    """
    names = set(present)
    if "+" not in column or column in names:
        return None
    parts = [p.strip() for p in column.split("+")]
    return parts if all(parts) and all(p in names for p in parts) else None


def composite_value(values: Sequence[Any]) -> str | None:
    """The joined value of a composite field; None when a part is empty (no value)."""
    texts = ["" if v is None else str(int(v)) if isinstance(v, float) and v.is_integer() else str(v) for v in values]
    return None if any(t.strip() == "" for t in texts) else COMPOSITE_JOIN.join(t.strip() for t in texts)


class _Plan:
    """How one file's columns become the schema's fields under a column map."""

    def __init__(self, cmap: ColumnMap | None) -> None:
        self.cmap = cmap
        self.pairs: tuple[tuple[str, str], ...] = tuple(cmap.columns.items()) if cmap else ()
        self.sources = frozenset(c for _, c in self.pairs)
        self.targets = frozenset(t for t, _ in self.pairs)
        self.twice = cmap.twice() if cmap else None

    def problem(self, names: Sequence[str], *, row: bool = False) -> str | None:
        """Why the map cannot read a file (``row``: a JSONL or Parquet row) with these columns: a
        column read twice, a mapped one missing."""
        if self.cmap is None:
            return None
        if self.twice is not None:
            return self.twice
        present = set(names)
        for target, column in self.pairs:
            if column not in present and composite_parts(column, present) is None:
                what = "field" if row else "column"
                return f"{self.cmap.given(target)}: no {what} {column!r}{_columns_text(names, row)}"
        return None

    def fields(self, names: Iterable[str]) -> set[str]:
        """The schema's fields a row with these columns has once mapped."""
        names = set(names)
        out = {t for t, c in self.pairs if c in names or composite_parts(c, names) is not None}
        return out | {n for n in names if n in KNOWN and n not in self.sources and n not in self.targets}

    def apply(self, obj: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the row's fields, its other columns under their own names, kept as metadata)."""
        fields = {t: obj[c] for t, c in self.pairs if c in obj}
        for t, c in self.pairs:
            if c not in obj and (parts := composite_parts(c, obj)) is not None:
                fields[t] = composite_value([obj[p] for p in parts])
        extra: dict[str, Any] = {}
        for key, value in obj.items():
            if key in self.sources:
                continue
            if key in KNOWN and key not in self.targets:
                fields[key] = value
            else:
                extra[key] = value
        return fields, extra


def _columns_text(names: Sequence[str], row: bool = False) -> str:
    """``; the file's columns are 'a', 'b'`` (``row``: `` in this row; its fields are ...``), cut after
    ``_COLUMNS_SHOWN`` names."""
    shown = ", ".join(map(repr, names[:_COLUMNS_SHOWN]))
    more = f", and {len(names) - _COLUMNS_SHOWN:,} more" if len(names) > _COLUMNS_SHOWN else ""
    if row:
        return f" in this row; its fields are {shown}{more}" if names else " in this row; it has no fields"
    return f"; the file's columns are {shown}{more}" if names else "; the file has no columns"
