"""The prompt's hazard, persona and locale on each record: from the file itself or a prompts table.

A results file often lacks what its prompts are about: HarmBench's results name a behaviour by its
id, its categories live in the behaviours table (``BehaviorID, SemanticCategory, ...``); an
AILuminate response file may keep only the prompt's uid. ``ingest --prompts TABLE`` reads such a
table (CSV, JSONL or Parquet, through the generic reader's bounds) and gives each record whose
``prompt_id`` it lists the table's hazard, persona and locale where the record has none of its own.
Recognised columns (:data:`ID_COLUMNS`, :data:`FACET_COLUMNS`): HarmBench's and AILuminate's
own names and the generic ones. Hazard values become stored codes through
:func:`annotate.hazards.normalise` with the shipped tables and the workspace's own entries.

:class:`PromptFacets` is what the record loop of ``annotate.ingest.run`` asks per record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotate.errors import InputError
from annotate.hazards import normalise
from annotate.ingest.formats.generic import TableRows, is_table, read_table
from annotate.ingest.records import Problem, ReadContext, Record, name_problem

#: The columns a prompts table's id may be in, first found wins.
ID_COLUMNS = ("prompt_id", "BehaviorID", "Release_prompt_id", "behavior_id")
#: Each facet's columns, first found wins.
FACET_COLUMNS: dict[str, tuple[str, ...]] = {
    "hazard": ("hazard", "Hazard", "SemanticCategory", "hazard_uid"),
    "persona": ("persona", "Persona"),
    "locale": ("locale", "Locale"),
}
#: The most problems listed before the prompts table is refused (the rest are counted).
_SHOWN = 10


@dataclass
class PromptRow:
    """One row of a prompts table: its prompt id and facets (as the table gives them)."""

    line: int
    key: str
    facets: dict[str, Any]
    end_line: int | None = None


@dataclass
class PromptFacets:
    """What the record loop needs: the hazard lookup and the prompts table (prompt id -> facets)."""

    lookup: Mapping[str, str]
    prompts: dict[str, dict[str, Any]] = field(default_factory=dict)
    table: Path | None = None
    matched: int = 0
    unmatched: set[str] = field(default_factory=set)
    own: dict[str, str] = field(default_factory=dict)  # the workspace's hazard entries (--hazard-map, annotate.toml)
    table_sha256: str | None = None
    # each distinct text value's reading (shared by the command's files: the lookup is the same)
    _seen: dict[str, tuple[str | None, str | None]] = field(default_factory=dict, repr=False)

    def fill(self, rec: Record) -> None:
        """Give ``rec`` the prompts table's facets it lacks (its own values win)."""
        if self.table is None:
            return
        row = self.prompts.get(rec.prompt_id)
        if row is None:
            if len(self.unmatched) < 100_000:
                self.unmatched.add(rec.prompt_id)
            return
        self.matched += 1
        if rec.hazard is None:
            rec.hazard = row.get("hazard")
        if rec.persona is None:
            rec.persona = row.get("persona")
        if rec.locale is None:
            rec.locale = row.get("locale")

    def hazard(self, rec: Record) -> tuple[str | None, str | None]:
        """The record's stored hazard codes, or the problem that refuses the row (a file repeats a few
        values on every row: each text value is read once)."""
        value = rec.hazard
        if type(value) is not str:
            return normalise(value, self.lookup)
        done = self._seen.get(value)
        if done is None:
            done = normalise(value, self.lookup)
            if len(self._seen) < 10_000:
                self._seen[value] = done
        return done

    def recorded(self) -> dict[str, Any]:
        """What the ingest run's options keep of them (provenance)."""
        out: dict[str, Any] = {}
        if self.table is not None:
            out["prompts"] = {"file": self.table.name, "sha256": self.table_sha256, "matched": self.matched}
        if self.own:
            out["hazard_map"] = dict(self.own)
        return out

    def notes(self) -> list[str]:
        """What the ingest says of the prompts table, once per file."""
        if self.table is None:
            return []
        out = [f"prompts table {self.table.name}: {self.matched:,} response(s) took its hazard, persona and locale"]
        if self.unmatched:
            some = ", ".join(sorted(self.unmatched)[:5])
            out.append(
                f"{len(self.unmatched):,} prompt id(s) have no row in {self.table.name} (e.g. {some}): "
                "their responses keep only the file's own hazard, if any"
            )
        return out


def read_prompts(path: Path) -> dict[str, dict[str, Any]]:
    """A prompts table: prompt id -> {hazard, persona, locale} (the values as the table gives them).

    Raises ``InputError`` (``file:line: ...``) on a table without an id column or a facet column, a
    row without an id, an id listed twice with other facets, a facet that is not text.
    """
    if not is_table(path):
        raise InputError(f"{path}: --prompts reads a table (.csv, .tsv, .jsonl, .parquet)")
    ctx = ReadContext()
    rows = _PromptRows(ctx)
    out: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    item: Any
    for item in read_table(path, ctx, rows):  # _PromptRows.item gives a PromptRow where a Record would be
        if isinstance(item, Problem):
            problems.append(f"{path}:{item.line}: {item.message}")
            if item.fatal:
                break
            continue
        line, key, facets = item.line, item.key, item.facets
        seen = out.get(key)
        if seen is not None and seen != facets:
            problems.append(f"{path}:{line}: prompt id {key!r} is listed again with other values ({seen} before)")
            continue
        out[key] = facets
    if problems:
        more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
        raise InputError("\n".join(problems[:_SHOWN]) + more + "\nNothing was ingested; fix the prompts table.")
    if not out:
        raise InputError(f"{path}: the prompts table has no rows")
    return out


class _PromptRows(TableRows):
    """A prompts table's rows: a :class:`PromptRow` or a Problem."""

    def __init__(self, ctx: ReadContext) -> None:
        super().__init__(ctx, None)
        self.id_column: str | None = None
        self.columns: dict[str, str] = {}

    def _choose(self, names: list[str]) -> str | None:
        self.id_column = next((c for c in ID_COLUMNS if c in names), None)
        self.columns = {
            f: found for f, cols in FACET_COLUMNS.items() if (found := next((c for c in cols if c in names), None))
        }
        if self.id_column is None:
            return f"no prompt id column ({', '.join(ID_COLUMNS)}) in the prompts table (header: {', '.join(names)})"
        if not self.columns:
            wanted = ", ".join(c for cols in FACET_COLUMNS.values() for c in cols)
            return f"no hazard, persona or locale column ({wanted}) in the prompts table (header: {', '.join(names)})"
        return None

    def header(self, names: list[str]) -> Problem | None:
        problem = self._choose(names)
        return Problem(1, problem, fatal=True) if problem else None

    def item(self, obj: dict[str, Any], line: int, *, cells: bool = False) -> Any:
        if not cells:  # a JSONL row names its own columns
            problem = self._choose(list(obj))
            if problem:
                return Problem(line, problem)
        raw = obj.get(self.id_column or "")
        key = str(raw).strip() if isinstance(raw, (str, int)) and not isinstance(raw, bool) else ""
        if not key:
            return Problem(line, f"the prompt id ({self.id_column}) is empty")
        facets: dict[str, Any] = {}
        for facet, column in self.columns.items():
            value = obj.get(column)
            if value is None or value == "":
                continue
            if facet == "hazard" and isinstance(value, list):
                facets[facet] = value
                continue
            problem = name_problem(facet, value)
            if problem:
                return Problem(line, problem)
            facets[facet] = value.strip()
        return PromptRow(line, key, facets)

    def finish(self) -> None:
        return None
