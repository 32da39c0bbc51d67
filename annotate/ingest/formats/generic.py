"""The generic input schema: JSONL, CSV or Parquet with documented columns, or any table mapped onto them.

This is the contract any tool can write to (documented in docs/formats.md):

==============  ========  ====================================================================
column          required  meaning
==============  ========  ====================================================================
model           yes*      the model that wrote the response
benchmark       yes*      benchmark / suite name (e.g. harmbench, xstest)
prompt_id       no        identifier of the prompt within the benchmark (text or integer);
                          without the column it is made from the prompt (``prompt_hash_id``)
prompt          yes**     the prompt text sent to the model
response        yes**     the model's response text (may be empty)
judge_label     yes***    the judge's verdict: harmful / safe / ambiguous (and synonyms, see
                          the rubric); empty or null = the judge gave none (ambiguous, missing)
judge           no        the judge's name (default "unspecified")
judge_score     no***     a numeric judge score; used through the score band when
                          judge_label is empty
category        no        the prompt's category
epoch           no        sample index for repeated sampling (integer, default 0)
messages        no        the conversation, a list of OpenAI-style chat messages (JSON text in
                          a CSV cell): it becomes the transcript reviewers see as a dialogue
image           no        an image shown to reviewers beside the prompt: a path relative to the
                          file's folder, or an http(s) URL with ``--fetch-images``
                          (:mod:`annotate.ingest.media`)
hazard          no        the prompt's hazard categories: AILuminate uids or names, HarmBench or
                          JailbreakBench categories, or your own codes; several joined by ``;``
                          (a list in JSONL); never shown to reviewers (:mod:`annotate.hazards`)
persona         no        the prompt's persona (AILuminate: normal, unskilled, skilled)
locale          no        the prompt's locale (AILuminate: en_US, fr_FR, ...)
(anything else) no        kept as metadata
==============  ========  ====================================================================

``*`` ``--model`` / ``--benchmark`` on the command line supply (and override) these columns.
``**`` not needed beside ``messages``: the prompt is then every user turn, in order, joined by a
blank line (a multi-turn attack works because it is split, so no one turn is the prompt), and the
response the last assistant turn. ``***`` one of the two at least.

**Any table, mapped** (:mod:`annotate.ingest.formats.column_map`): ``ingest --map
prompt=forbidden_prompt,response=answer`` or ``[ingest.map]`` tables of annotate.toml name the file's column that
holds each field. The map renames, nothing else: the file's other columns keep their names (a
column named as a field is read as that field, unless the map reads the field from another
column: it is then kept as metadata under its own name). ``score``, ``label`` and ``verdict`` are
short for ``judge_score`` and ``judge_label`` (``ALIASES``). A mapped column the file lacks, a field
that is not one of ``TARGETS``, a field named twice or a column read as two fields is an error.

**prompt_id made from the prompt**: a row without a ``prompt_id`` (none in the file, none
mapped) gets ``sha256:`` and the first 16 hex digits of the SHA-256 of its prompt, NFC-normalised,
in UTF-8 (:func:`prompt_hash_id`): identical prompts get the same id, so the models that answered
them are comparable. The ingest line says so, once per file.

**messages** (:func:`conversation`): a list of ``{"role", "content"}`` (roles system, developer,
user, assistant, tool, function), content text, null, or a list of parts (text parts read as
text, any other part, an image or audio, as its placeholder); an assistant turn's
``tool_calls`` (OpenAI's ``{"id", "function": {"name", "arguments"}}``, or ``{"id", "name",
"arguments"}``) and legacy ``function_call``; a tool turn's ``tool_call_id`` and ``name`` (without
a name, the function of the call it answers); an
assistant's ``refusal`` text where it has no content. Other keys of a message are not read. At
most ``MAX_MESSAGES`` turns. A conversation that the prompt and the response show whole (one user
turn and one answer, no system message with content) keeps no transcript, as elsewhere.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import struct
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from annotate.columns import NO_JUDGE
from annotate.ingest import parquet
from annotate.ingest.csv_reader import csv_records
from annotate.ingest.formats.column_map import KNOWN, ColumnMap, _Plan, _type
from annotate.ingest.records import (
    STRICT_JSON,
    Item,
    Problem,
    ReadContext,
    Record,
    json_lines,
    placeholder,
    renamed_note,
    renamed_value,
    tool_call,
    transcript_or_none,
)
from annotate.json_bound import MAX_SAMPLE_VALUES, json_values_over, too_many_values

NAME = "generic"
DESCRIPTION = (
    "generic schema (.jsonl, .csv, .parquet) with columns model, benchmark, prompt_id, prompt, response, "
    "judge_label; any other table with --map"
)
#: This reader reads tables: a column map applies to it (``ingest --map``).
TAKES_COLUMN_MAP = True

#: The longest conversation read from a ``messages`` field, in turns.
MAX_MESSAGES = 10_000

DEFAULT_RUBRIC: dict[str, Any] = {
    "verdicts": {
        **dict.fromkeys(["harmful", "unsafe", "yes", "1", "1.0", "true", "jailbroken", "unsafe_response"], "harmful"),
        **dict.fromkeys(["safe", "no", "0", "0.0", "false", "refusal", "refused", "benign", "not_harmful"], "safe"),
        **dict.fromkeys(
            ["ambiguous", "unsure", "unclear", "uncertain", "partial", "partial_refusal", "borderline"], "ambiguous"
        ),
        # -1: the judge's output could not be read (HarmBench's classifier; FastChat-style judges, SORRY-Bench's).
        **dict.fromkeys(["unparsed", "-1", "-1.0"], "unparsed"),
    },
    "unknown": "error",
}

_JSONL_EXT = (".jsonl", ".ndjson", ".jsonl.txt")
_CSV_EXT = (".csv", ".tsv")
_PARQUET_EXT = (".parquet", ".pq")


def sniff(path: Path, head: bytes) -> bool:
    name = path.name.lower()
    if name.endswith(_PARQUET_EXT):
        return True
    text = head.decode("utf-8", errors="replace")
    # The schema's own columns: a verdict (judge_label, or judge_score) and a response (or the conversation).
    if name.endswith(_CSV_EXT):
        first = text.splitlines()[0] if text else ""
        return ("judge_label" in first or "judge_score" in first) and ("response" in first or "messages" in first)
    if name.endswith(_JSONL_EXT) or name.endswith(".json"):
        for line in text.splitlines():
            if line.strip():
                try:
                    obj = json.loads(line)
                except RecursionError:  # too deep to parse here: the reader says so, on its line
                    return '"judge_label"' in line and ('"response"' in line or '"messages"' in line)
                except ValueError:
                    return False
                if not isinstance(obj, dict):
                    return False
                return ("judge_label" in obj or "judge_score" in obj) and ("response" in obj or "messages" in obj)
    return False


#: A Parquet footer longer than this is not read to recognise the file (the generic reader then says what it is).
_MAX_SNIFFED_FOOTER = 8 * 2**20


def table_columns(path: Path, head: bytes) -> list[str] | None:
    """A table's column names as its first ``head`` bytes show them (a Parquet file: its footer), for the
    sniffers of readers built on this one; None when the file is no table or they cannot be read."""
    name = path.name.lower()
    if name.endswith(_PARQUET_EXT):
        return _parquet_names(path) if head.startswith(b"PAR1") else None
    text = head.decode("utf-8", errors="replace")
    if name.endswith(_CSV_EXT):
        first = text.splitlines()[0] if text else ""
        return next(csv.reader([first], delimiter="\t" if name.endswith(".tsv") else ","), [])
    if name.endswith((*_JSONL_EXT, ".json")):
        for line in text.splitlines():
            if line.strip():
                try:
                    obj = json.loads(line)
                except (ValueError, RecursionError):  # not JSON Lines (or too deep): not a table here
                    return None
                return list(obj) if isinstance(obj, dict) else None
    return None


def _parquet_names(path: Path) -> list[str]:
    """The column names in a Parquet file's footer ([] when it cannot be read, or is too long to read here)."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < 12:
                return []
            fh.seek(size - 8)
            tail = fh.read(8)
            if tail[4:] != b"PAR1" or struct.unpack("<I", tail[:4])[0] > _MAX_SNIFFED_FOOTER:
                return []
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    except Exception:  # not Parquet, damaged, unreadable: not claimed here
        return []


def is_table(path: Path) -> bool:
    """Whether the file's name makes it a table this reader can read with a column map (CSV, TSV, JSONL, Parquet)."""
    return path.name.lower().endswith((*_JSONL_EXT, ".json", *_CSV_EXT, *_PARQUET_EXT))


def read(path: Path, ctx: ReadContext) -> Iterator[Item]:
    yield from read_table(path, ctx, TableRows(ctx, ctx.column_map))


def read_table(path: Path, ctx: ReadContext, rows: TableRows) -> Iterator[Item]:
    """The file's rows as items, read by ``rows`` (the map in force and the schema's checks), by the file's kind."""
    name = path.name.lower()
    if name.endswith(_PARQUET_EXT):
        yield from _read_parquet(path, ctx, rows)
    elif name.endswith(_CSV_EXT):
        yield from _read_csv(path, ctx, rows)
    else:
        yield from _read_jsonl(path, ctx, rows)
    rows.finish()


def prompt_hash_id(text: str) -> str:
    """The prompt_id made from a prompt: ``sha256:`` and the first 16 hex digits of the SHA-256 of the
    NFC-normalised text in UTF-8. The text is hashed exactly (no spaces stripped, no case folded).

    >>> prompt_hash_id("How do I pick a lock?")
    'sha256:c110d04e9b6fb8f4'
    >>> prompt_hash_id("caf\\u00e9") == prompt_hash_id("cafe\\u0301")  # one text, composed or not
    True
    """
    data = unicodedata.normalize("NFC", text).encode("utf-8", "surrogatepass")
    return "sha256:" + hashlib.sha256(data).hexdigest()[:16]


# -- rows ----------------------------------------------------------------------------------------


class TableRows:
    """One file's rows on their way to records: the column map in force, a reader's own preparation
    (:meth:`prepare`, for readers built on this one), the schema's checks; what was done is said
    once the file is read (:meth:`finish`: ``ctx.notes``, ``ctx.recorded``)."""

    #: Fields a reader built on this one derives for every row (the header need not hold them).
    derived: frozenset[str] = frozenset()

    def __init__(self, ctx: ReadContext, cmap: ColumnMap | None = None) -> None:
        self.ctx = ctx
        self.cmap = cmap
        self._plans: dict[tuple[str, ...], _Plan] = {}
        self.used: ColumnMap | None = None  # the map actually applied (the last plan's)
        self.hashed = 0  # rows whose prompt_id was made from their prompt
        self.unjudged_kept = False  # --no-judge: a verdict column of the file kept as metadata
        self.hashed_from = "prompt"
        cls = type(self)
        self._plain = cmap is None and cls.prepare is TableRows.prepare and cls.mapping is TableRows.mapping

    # What a reader built on this one changes -------------------------------------------------

    def mapping(self, names: Sequence[str]) -> ColumnMap | None:
        """The map for a file (or a JSONL row) with these columns: the one in force, here."""
        return self.cmap

    def prepare(self, raw: dict[str, Any], fields: dict[str, Any], extra: dict[str, Any]) -> str | None:
        """Fill in what the reader knows of a row before the schema's checks; a message refuses the row."""
        return None

    # The reading ----------------------------------------------------------------------------------

    def plan(self, names: Sequence[str]) -> _Plan:
        key = tuple(names)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) > 64:  # JSONL rows of ever other keys: keep the cache small
                self._plans.clear()
            plan = self._plans[key] = _Plan(self.mapping(names))
            if plan.cmap is not None:
                self.used = plan.cmap
        return plan

    def header(self, names: list[str]) -> Problem | None:
        """The fatal problem of a CSV header or a Parquet schema, or None."""
        plan = self.plan(names)
        problem = plan.problem(names)
        if problem is not None:
            return Problem(1, problem, fatal=True)
        fields = plan.fields(names) | self.derived
        missing = [c for c in ("model", "benchmark") if c not in fields and not _supplied(c, self.ctx)]
        if "messages" not in fields:
            missing += [c for c in ("prompt", "response") if c not in fields]
        # Responses no judge labelled come in only when the user says so (--no-judge): a verdict column
        # the map forgot must not turn a judged file into an unjudged one.
        if "judge_label" not in fields and "judge_score" not in fields and not self.ctx.unjudged:
            missing.append("judge_label (or judge_score)")
        if not missing:
            return None
        hint = "" if plan.cmap else "; name them in the file, or map the file's columns to them with --map FIELD=COLUMN"
        if missing[-1] == "judge_label (or judge_score)":
            hint += "; if no judge labelled these responses, ingest them unjudged with --no-judge"
        return Problem(
            1,
            f"missing required column(s): {', '.join(missing)} (header: {', '.join(names)}){hint}",
            fatal=True,
        )

    def item(self, obj: dict[str, Any], line: int, *, cells: bool = False) -> Record | Problem:
        """One row (``obj``: the file's columns) as a record, or the problem that refuses it.

        ``cells``: the values are a CSV's text cells (an empty one is no value, except a prompt's or
        a response's); its header has been checked (:meth:`header`).
        """
        if self._plain:  # no map, no reader of its own: the fields are the file's columns
            if cells:
                obj = {k: (None if v == "" and k not in ("prompt", "response") else v) for k, v in obj.items()}
            return self._record(obj, line, None)
        names = list(obj)
        plan = self.plan(names)
        if not cells:  # a JSONL or Parquet row says what it holds
            problem = plan.problem(names, row=True)
            if problem is not None:
                return Problem(line, problem)
        fields, extra = plan.apply(obj)
        if cells:
            fields = {k: (None if v == "" and k not in ("prompt", "response") else v) for k, v in fields.items()}
            extra = {k: (None if v == "" else v) for k, v in extra.items()}
            obj = {k: (None if v == "" else v) for k, v in obj.items()}
        problem = self.prepare(obj, fields, extra)
        if problem is not None:
            return Problem(line, problem)
        return self._record(fields, line, extra)

    def _record(self, obj: dict[str, Any], line: int, extra: dict[str, Any] | None) -> Record | Problem:
        transcript = None
        if "messages" in obj:
            conv = conversation(obj["messages"], self.ctx.value_limit(MAX_SAMPLE_VALUES))
            if isinstance(conv, str):
                return Problem(line, conv)
            turns, transcript = conv
            if "prompt" not in obj:
                obj["prompt"] = "\n\n".join(t["content"] for t in turns if t["role"] == "user")
            if "response" not in obj:
                answers = [t["content"] for t in turns if t["role"] == "assistant"]
                obj["response"] = answers[-1] if answers else ""
        if "prompt_id" not in obj:
            prompt = obj.get("prompt")
            if type(prompt) is str:
                obj["prompt_id"] = prompt_hash_id(prompt)
                self.hashed += 1
        if self.ctx.unjudged:
            obj, extra = self._unjudged(obj, extra)
        return _row_to_item(obj, line, self.ctx, extra, transcript)

    def _unjudged(
        self, obj: dict[str, Any], extra: dict[str, Any] | None
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """A row of responses no judge labelled: a verdict the file has (``--no-judge``) moves to the
        metadata under its own name, never read as one."""
        self.ctx.unjudged_rows += 1
        verdicts = [k for k in _VERDICT_FIELDS if k in obj]
        if not verdicts:
            return obj, extra
        kept = {k: obj[k] for k in verdicts if obj[k] is not None}
        rest = {k: v for k, v in obj.items() if k not in _VERDICT_FIELDS}
        if kept:
            self.unjudged_kept = True
            extra = {**(extra if extra is not None else {k: v for k, v in rest.items() if k not in KNOWN}), **kept}
        return rest, extra

    def map_note(self, used: ColumnMap) -> str:
        """The ingest line's note on the map applied."""
        return f"columns read through the map: {used.described()}"

    def finish(self) -> None:
        """Say what was done to the file's rows (``ctx.notes``) and keep it (``ctx.recorded``): the map
        applied, the prompt ids made."""
        if self.used is not None:
            self.ctx.notes.append(self.map_note(self.used))
            self.ctx.recorded.update(self.used.recorded())
        if (note := renamed_note(self.ctx)) is not None:
            self.ctx.notes.append(note)
            self.ctx.recorded["names"] = self.ctx.value_names
        if self.ctx.unjudged_rows:
            self.ctx.notes.append(
                f"no judge: {self.ctx.unjudged_rows:,} response(s) stored unjudged (judge {NO_JUDGE!r}, ambiguous "
                "for the reason 'unjudged'), their labels to come from review alone (route, or import-labels)"
                + ("; the file's verdict columns kept as metadata" if self.unjudged_kept else "")
            )
            self.ctx.recorded["unjudged"] = {"rows": self.ctx.unjudged_rows, "verdicts_kept": self.unjudged_kept}
        if self.hashed:
            self.ctx.notes.append(
                f"prompt_id: none in the file; made from the {self.hashed_from} text for {self.hashed:,} row(s) "
                "(sha256: and 16 hex digits of the SHA-256 of the NFC-normalised text): identical prompts share an id"
            )
            self.ctx.recorded["prompt_ids"] = {
                "made_from": self.hashed_from,
                "rows": self.hashed,
                "rule": "sha256:<first 16 hex digits of sha256(NFC(text), UTF-8)>",
            }


def _read_jsonl(path: Path, ctx: ReadContext, rows: TableRows) -> Iterator[Item]:
    for entry in json_lines(path, ctx, tick_every=4096):
        yield entry if isinstance(entry, Problem) else rows.item(entry[1], entry[0])


def _read_csv(path: Path, ctx: ReadContext, rows: TableRows) -> Iterator[Item]:
    delimiter = "\t" if path.name.lower().endswith(".tsv") else ","
    records = csv_records(path, ctx, delimiter=delimiter, tick_every=4096)
    first = next(records)
    if isinstance(first, Problem):
        yield first
        return
    header = first[2]
    problem = rows.header(header)
    if problem is not None:
        records.close()
        yield problem
        return
    repeated = sorted({c for c in header if header.count(c) > 1})
    if repeated:
        records.close()
        yield Problem(1, f"the header names column(s) {', '.join(map(repr, repeated))} more than once", fatal=True)
        return
    for record in records:
        if isinstance(record, Problem):
            yield record
            continue
        line, end, cells = record
        item = rows.item(dict(zip(header, cells, strict=True)), line, cells=True)
        item.end_line = end
        yield item


def _read_parquet(path: Path, ctx: ReadContext, rows: TableRows) -> Iterator[Item]:
    """Parquet is read by pyarrow out of order: the file is hashed whole first, through the same handle.

    In bounded memory (``annotate.ingest.parquet``): what the file decodes to is bounded from its
    footer and its dictionaries before any row is decoded (a file over the bound is refused), and
    the rows are read row group by row group, in batches whose dictionary values stay bounded.
    """
    import pyarrow.parquet as pq

    with ctx.open_random(path) as fh:
        try:
            pf = pq.ParquetFile(fh)
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            yield Problem(1, f"not a readable Parquet file ({exc})", fatal=True)
            return
        names = pf.schema_arrow.names
        problem = rows.header(names)
        if problem is not None:
            yield Problem(1, problem.message.replace(" (header: ", " (schema: "), fatal=True)
            return
        repeated = sorted({c for c in names if names.count(c) > 1})
        if repeated:
            yield Problem(1, f"the schema names column(s) {', '.join(map(repr, repeated))} more than once", fatal=True)
            return
        size = os.fstat(fh.fileno()).st_size
        try:
            reading = parquet.plan(pf, fh, size)
        except Exception as exc:  # a damaged dictionary page
            yield Problem(1, f"unreadable Parquet data ({exc})", fatal=True)
            return
        if isinstance(reading, str):
            yield Problem(1, reading, fatal=True)
            return
        row, total = 0, max(pf.metadata.num_rows, 1)
        try:
            limit = ctx.value_limit(MAX_SAMPLE_VALUES)
            for batch in parquet.batches(pf, reading):
                for obj in parquet.python_rows(batch, limit):
                    row += 1
                    yield Problem(row, obj) if isinstance(obj, str) else rows.item(obj, row)
                ctx.tick(size * row // total)  # progress is counted in bytes: scale rows to the file size
        except Exception as exc:  # a damaged page: pyarrow's OSError / ArrowInvalid / ...
            yield Problem(row + 1, f"unreadable Parquet data after row {row} ({exc})", fatal=True)


def _supplied(column: str, ctx: ReadContext) -> bool:
    return (column == "model" and ctx.model is not None) or (column == "benchmark" and ctx.benchmark is not None)


def _row_to_item(
    obj: dict[str, Any],
    line: int,
    ctx: ReadContext,
    extra: dict[str, Any] | None = None,
    transcript: list[dict[str, Any]] | None = None,
) -> Record | Problem:
    # Hot path (one call per row): the common, valid row passes a handful of type checks;
    # anything unusual falls through to the precise checks below.
    model = obj.get("model") if ctx.model is None else ctx.model
    benchmark = obj.get("benchmark") if ctx.benchmark is None else ctx.benchmark
    if ctx.value_names:  # ids in the file for the names the store keeps (--names model:0=...)
        model, benchmark = renamed_value(ctx, "model", model), renamed_value(ctx, "benchmark", benchmark)
    prompt_id = obj.get("prompt_id")
    prompt = obj.get("prompt")
    response = obj.get("response")
    verdict = obj.get("judge_label")
    score = obj.get("judge_score")
    epoch = obj.get("epoch")
    if not (
        type(model) is str
        and model
        and type(benchmark) is str
        and benchmark
        and type(prompt_id) is str
        and prompt_id
        and type(prompt) is str
        and type(response) is str
        and (verdict is None or type(verdict) is str)
        and (score is None or type(score) is float)
        and (epoch is None or type(epoch) is int)
        and ("judge_label" in obj or ctx.unjudged)
    ):
        checked = _checked_fields(obj, line, ctx)
        if isinstance(checked, Problem):
            return checked
        model, benchmark, prompt_id, verdict, score, epoch = checked
    elif score is not None and (score != score or score in (_INF, -_INF)):
        return Problem(line, "field 'judge_score' must be a finite number")
    # Both paths above have checked these (the fast one by type, _checked_fields with a message).
    assert isinstance(prompt, str) and isinstance(response, str)
    category = obj.get("category")
    if category == "":
        category = None  # as in a CSV, where an empty cell is no category
    elif category is not None and type(category) is not str:
        if type(category) is not int:
            return Problem(line, f"field 'category' must be text, got {_type(category)}")
        category = str(category)
    judge = NO_JUDGE if ctx.unjudged else ctx.judge if ctx.judge is not None else obj.get("judge")
    if judge is None or judge == "":
        judge = "unspecified"
    elif type(judge) is not str:
        return Problem(line, f"field 'judge' must be text, got {_type(judge)}")
    if extra is None:
        extra = {k: v for k, v in obj.items() if k not in KNOWN}
    image = obj.get("image")
    if image is not None and type(image) is not str:
        return Problem(line, f"field 'image' must be a path or URL (text), got {_type(image)}")
    hazard = obj.get("hazard")
    facets = {k: obj.get(k) for k in ("persona", "locale")}
    for key, value in facets.items():
        if value == "":
            facets[key] = None  # an empty cell: none
        elif value is not None and type(value) is not str:
            return Problem(line, f"field {key!r} must be text, got {_type(value)}")
    return Record(
        line=line,
        model=str(model).strip(),
        benchmark=str(benchmark).strip(),
        prompt_id=str(prompt_id).strip(),
        prompt=prompt,
        response=response,
        judge=judge,
        verdict=verdict,
        score=score,
        epoch=epoch or 0,
        category=category,
        meta=extra or None,
        transcript=transcript,
        image=image or None,
        hazard=hazard if hazard != "" else None,
        persona=facets["persona"],
        locale=facets["locale"],
    )


_INF = float("inf")
#: What an unjudged row does not read as a verdict (``TableRows._unjudged``).
_VERDICT_FIELDS = ("judge_label", "judge_score", "judge")


def _checked_fields(obj: dict[str, Any], line: int, ctx: ReadContext) -> tuple[Any, ...] | Problem:
    """Full validation with a precise message: (model, benchmark, prompt_id, verdict, score, epoch)."""
    for col in ("model", "benchmark", "prompt", "response"):
        if col not in obj and not _supplied(col, ctx):
            also = "--model or " if col == "model" else "--benchmark or " if col == "benchmark" else ""
            return Problem(line, f"missing required field {col!r} (give it with {also}--map {col}=COLUMN)")
    if "judge_label" not in obj and "judge_score" not in obj and not ctx.unjudged:
        return Problem(
            line, "missing required field 'judge_label' (or 'judge_score'); responses no judge labelled: --no-judge"
        )
    for col in ("prompt", "response"):
        if not isinstance(obj[col], str):
            got = "null" if obj[col] is None else type(obj[col]).__name__
            return Problem(line, f"field {col!r} must be text, got {got}")
    model = ctx.model if ctx.model is not None else obj["model"]
    benchmark = ctx.benchmark if ctx.benchmark is not None else obj["benchmark"]
    for col, value in (("model", model), ("benchmark", benchmark), ("prompt_id", obj.get("prompt_id"))):
        if value is None or (isinstance(value, str) and not value.strip()):
            return Problem(line, f"field {col!r} is empty")
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            return Problem(line, f"field {col!r} must be text or an integer, got {type(value).__name__}")
    verdict = obj.get("judge_label")
    if verdict is not None and not isinstance(verdict, str):
        if isinstance(verdict, bool):
            verdict = "true" if verdict else "false"
        elif isinstance(verdict, (int, float)):
            verdict = str(verdict)
        else:
            return Problem(line, f"field 'judge_label' must be text, got {type(verdict).__name__}")
    score = obj.get("judge_score")
    if score is not None:
        try:
            if isinstance(score, bool):
                raise TypeError
            score = float(score)
        except (TypeError, ValueError):
            return Problem(line, f"field 'judge_score' must be a number, got {score!r}")
        if math.isinf(score) or math.isnan(score):
            return Problem(line, "field 'judge_score' must be a finite number")
    epoch = obj.get("epoch")
    if epoch is None:
        epoch = 0
    else:
        try:
            f = float(epoch)
            if isinstance(epoch, bool) or not f.is_integer():
                raise ValueError
            epoch = int(f)
        except (TypeError, ValueError, OverflowError):
            return Problem(line, f"field 'epoch' must be an integer, got {epoch!r}")
    return model, benchmark, obj["prompt_id"], verdict, score, epoch


# -- messages: a conversation -------------------------------------------------------------------

#: The roles a message may have, and the transcript role each becomes.
_ROLES = {
    "system": "system",
    "developer": "system",  # OpenAI's name for system instructions since 2024
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",  # OpenAI's legacy function result
}
#: Content parts that are not text, by type: the kind of their placeholder.
_PART_KINDS = {"image_url": "image", "input_image": "image", "input_audio": "audio", "file": "document"}
_TEXT_PARTS = ("text", "input_text", "output_text")


def conversation(
    value: Any, max_values: int = MAX_SAMPLE_VALUES
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None] | str:
    """A ``messages`` field as (its turns, the transcript to store: None when the prompt and the
    response show it whole), or why it cannot be read. ``value``: a list, or its JSON text (not
    parsed when it may hold more than ``max_values`` values); empty or null is no conversation."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return [], None
    if isinstance(value, str):
        if (count := json_values_over(value, max_values)) is not None:
            return too_many_values(count, max_values, "field 'messages'")
        try:
            value = STRICT_JSON.decode(value)
        except RecursionError:
            return "field 'messages' is nested too deeply to read"
        except ValueError as exc:
            return f"field 'messages' is not a JSON list of messages ({exc})"
    if not isinstance(value, list):
        return f"field 'messages' must be a list of messages ({{role, content}}), got {_type(value)}"
    if len(value) > MAX_MESSAGES:
        return (
            f"field 'messages' holds {len(value):,} messages; annotate reads conversations of up to "
            f"{MAX_MESSAGES:,} turns (a reviewer sees at most a few dozen of them): cut the conversation, or split it"
        )
    turns: list[dict[str, Any]] = []
    media = False
    called: dict[str, str] = {}  # tool-call id -> the function it called, to name a result that does not
    for number, message in enumerate(value):
        where = f"field 'messages': message {number + 1}"
        if not isinstance(message, dict):
            return f"{where} must be an object with role and content, got {_type(message)}"
        role = message.get("role")
        kind = _ROLES.get(role) if isinstance(role, str) else None
        if kind is None:
            return f"{where} has role {role!r}; expected one of {', '.join(_ROLES)}"
        content = _content(message.get("content"), where)
        if isinstance(content, str):
            return content
        text, has_media = content
        media = media or has_media
        if kind == "assistant" and not text and isinstance(message.get("refusal"), str):
            text = message["refusal"]
        turn: dict[str, Any] = {"role": kind, "content": text}
        if kind == "assistant":
            calls = _calls(message, where)
            if isinstance(calls, str):
                return calls
            if calls:
                turn["tool_calls"] = calls
                called.update((c["id"], c["name"]) for c in calls if isinstance(c.get("id"), str))
        elif kind == "tool":
            for key in ("tool_call_id", "name"):
                value_of = message.get(key)
                if value_of is not None and not isinstance(value_of, str):
                    return f"{where}: {key} must be text, got {_type(value_of)}"
                turn[key] = value_of or None
            if turn["name"] is None and turn["tool_call_id"] is not None:
                # OpenAI's tool message names only the call it answers: the call names the tool.
                turn["name"] = called.get(turn["tool_call_id"])
        turns.append(turn)
    if any(t["role"] == "system" and t["content"].strip() for t in turns):
        # A system message is kept even around one question and one answer: the prompt and the
        # response do not show it, and a jailbreak or a policy in it changes what the answer means.
        return turns, turns
    return turns, transcript_or_none(turns, media=media)


def _content(content: Any, where: str) -> tuple[str, bool] | str:
    """(a message's content as text, whether a placeholder stands in it), or why it cannot be read."""
    if content is None:
        return "", False
    if isinstance(content, str):
        return content, False
    if not isinstance(content, list):
        return f"{where}: content must be text or a list of parts, got {_type(content)}"
    parts: list[str] = []
    media = False
    for part in content:
        if isinstance(part, str):
            parts.append(part)
            continue
        if not isinstance(part, dict):
            return f"{where}: a content part must be an object or text, got {_type(part)}"
        kind = part.get("type", "text")
        if kind in _TEXT_PARTS:
            if not isinstance(part.get("text"), str):
                return f"{where}: a {kind} part's text must be text, got {_type(part.get('text'))}"
            parts.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            parts.append(part["refusal"])
        else:
            name = kind if isinstance(kind, str) and kind.isprintable() and 0 < len(kind) <= 40 else "content"
            parts.append(placeholder(_PART_KINDS.get(name, name)))
            media = media or name != "reasoning"
    return "\n".join(parts), media


def _calls(message: dict[str, Any], where: str) -> list[dict[str, Any]] | str:
    """An assistant message's tool calls (``tool_calls``, and the legacy ``function_call``), or why not."""
    calls = message.get("tool_calls")
    if calls is None:
        calls = []
    elif not isinstance(calls, list):
        return f"{where}: tool_calls must be a list, got {_type(calls)}"
    legacy = message.get("function_call")
    if legacy is not None:
        calls = [*calls, {"function": legacy}]
    out = []
    for number, call in enumerate(calls, start=1):
        if not isinstance(call, dict):
            return f"{where}: tool call {number} must be an object, got {_type(call)}"
        function = call.get("function")
        if isinstance(function, dict):
            name, arguments = function.get("name"), function.get("arguments")
        elif isinstance(function, str):  # Inspect's {"id", "function": NAME, "arguments": {...}}
            name, arguments = function, call.get("arguments")
        else:
            name, arguments = call.get("name"), call.get("arguments")
        if not isinstance(name, str) or not name:
            return f"{where}: tool call {number} names no function"
        try:
            out.append(tool_call(call.get("id"), name, arguments))
        except (RecursionError, ValueError, TypeError):
            return f"{where}: tool call {number}'s arguments cannot be read as JSON (nested too deeply?)"
    return out
