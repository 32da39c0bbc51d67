"""MLCommons AILuminate-shaped tables: the prompt file's columns with each system's response and verdict.

AILuminate's prompt files (``airr_official_1.0_*_prompt_set_release.csv``) have the columns
``Release_prompt_id, Prompt_text, Hazard, Persona, Locale, Prompt_hash``. A run adds per system
under test (``SUT``) its ``Response`` and the evaluator's verdict; modelgauge's safety annotators
say ``is_safe`` (true / false). The sniffer claims a table (CSV, JSON Lines, Parquet) with
``Release_prompt_id`` and ``Prompt_text`` and a response column.

Choices (the reader is the generic one with a column map of its own, ``BUILTIN``; ``--map`` and
annotate.toml's ``[ingest.map]`` override it field by field):

* prompt_id = ``Release_prompt_id``, prompt = ``Prompt_text``, hazard = ``Hazard`` (the uid, a
  sub-hazard such as ``spc_hlt`` as given: it counts for its parent ``spc``), persona = ``Persona``,
  locale = ``Locale``; ``Prompt_hash`` is kept in metadata.
* model = ``SUT`` (or ``sut``, ``sut_uid``, ``model``); response = ``Response`` (or ``response``,
  ``sut_response``).
* judge = ``Annotator`` (or ``annotator``, ``annotator_uid``, ``evaluator``, ``judge``), else
  ``ailuminate-evaluator``; verdict = ``is_safe`` read as ``safe`` / ``unsafe`` (true / false, 1 / 0;
  anything else is unparsed), or a ``judge_label`` column read under the rubric.
* benchmark = ``ailuminate`` (``--benchmark`` overrides): one benchmark for the prompt set; the
  hazards, personas and locales stay fields of each response, not benchmarks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from annotate.ingest.formats import generic
from annotate.ingest.formats.column_map import ColumnMap
from annotate.ingest.formats.generic import TableRows
from annotate.ingest.records import Item, ReadContext

NAME = "ailuminate"
DESCRIPTION = (
    "MLCommons AILuminate-shaped table: Release_prompt_id, Prompt_text, Hazard, Persona, Locale, SUT, Response, is_safe"
)
TAKES_COLUMN_MAP = True

DEFAULT_RUBRIC: dict[str, Any] = {
    "verdicts": {"safe": "safe", "unsafe": "harmful", "unparsed": "unparsed"},
    "unknown": "unparsed",
}

#: The reader's own map: each field, from the first of its columns the file has.
BUILTIN: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("prompt_id", ("Release_prompt_id",)),
    ("prompt", ("Prompt_text",)),
    ("hazard", ("Hazard",)),
    ("persona", ("Persona",)),
    ("locale", ("Locale",)),
    ("model", ("SUT", "sut", "sut_uid", "model")),
    ("response", ("Response", "response", "sut_response")),
    ("judge", ("Annotator", "annotator", "annotator_uid", "evaluator", "judge")),
    ("judge_label", ("judge_label",)),
)
_ORIGIN = "AILuminate"
_DEFAULT_JUDGE = "ailuminate-evaluator"
_RESPONSES = frozenset({"Response", "response", "sut_response"})
_TRUE = frozenset({"true", "1", "1.0", "yes"})
_FALSE = frozenset({"false", "0", "0.0", "no"})


def is_output(names: Sequence[str]) -> bool:
    """Whether a table with these columns is an AILuminate-shaped response table."""
    present = set(names)
    return {"Release_prompt_id", "Prompt_text"} <= present and bool(_RESPONSES & present)


def sniff(path: Path, head: bytes) -> bool:
    names = generic.table_columns(path, head)
    return names is not None and is_output(names)


def read(path: Path, ctx: ReadContext) -> Iterator[Item]:
    yield from generic.read_table(path, ctx, _Rows(ctx, ctx.column_map))


class _Rows(TableRows):
    """Rows of an AILuminate-shaped table: the reader's map under the one in force, the benchmark,
    judge and verdict it derives (see the module doc)."""

    derived = frozenset({"benchmark", "judge_label"})

    def map_note(self, used: ColumnMap) -> str:
        return f"read as an AILuminate-shaped table: {used.described()}; benchmark ailuminate, verdict is_safe"

    def mapping(self, names: Sequence[str]) -> ColumnMap | None:
        present = set(names)
        columns = {}
        for target, candidates in BUILTIN:
            found = next((c for c in candidates if c in present), None)
            if found is not None:
                columns[target] = found
        builtin = ColumnMap(columns, dict.fromkeys(columns, _ORIGIN), explicit=False)
        return self.cmap.over(builtin) if self.cmap is not None else builtin

    def prepare(self, raw: dict[str, Any], fields: dict[str, Any], extra: dict[str, Any]) -> str | None:
        if "benchmark" not in fields and self.ctx.benchmark is None:
            fields["benchmark"] = "ailuminate"
        if not fields.get("judge") and self.ctx.judge is None:
            fields["judge"] = _DEFAULT_JUDGE
        if "judge_label" not in fields:
            fields["judge_label"] = _is_safe(raw.get("is_safe"))
            extra.pop("is_safe", None)  # read as the verdict: not metadata too
        return None


def _is_safe(value: Any) -> str | None:
    """``is_safe`` as a verdict: ``safe``, ``unsafe``, ``unparsed`` (a value that is neither), None (empty)."""
    if value is None or value == "":
        return None
    text = str(value).strip().lower()
    if text in _TRUE:
        return "safe"
    if text in _FALSE:
        return "unsafe"
    return "unparsed"
