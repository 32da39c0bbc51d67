"""What every format reader yields, and the strict readers of JSON and JSONL they share.

A reader is a generator ``read(path, ctx) -> Iterator[Record | Problem | SetAside]``:

* ``Record``: one judged response, verdict kept verbatim (``verdict`` as text, ``score`` as a
  float); the unified label is assigned later by the rubric (``annotate.ingest.rubric``).
* ``Problem``: a row that is malformed (bad JSON, a required field missing, a wrong type).
  ``annotate ingest`` refuses the file (exit 2) unless ``--skip-invalid``. A *fatal* problem
  (the reader lost its place in the file, or stopped reading it) refuses the file even under
  ``--skip-invalid``: rows after it could be fabricated or silently lost.
* ``SetAside``: a well-formed row that carries nothing to review (e.g. a JailbreakBench item
  whose attack produced no prompt or response). Never an error, never silently dropped: it is
  counted and written to the rejects file with its reason.

A multi-turn or agentic sample also carries its whole conversation in ``Record.transcript``
(see ``TRANSCRIPT_ROLES`` and ``transcript_problem``); ``prompt`` and ``response`` stay the first
user turn and the final answer.

``line`` is the 1-based line number for line-oriented files (JSONL, CSV: the line where the
record starts, ``end_line`` where it ends) and the 1-based item number otherwise; messages read
``FILE:LINE: ...``.

Readers read the file through ``ReadContext.open`` (or ``open_random`` for ZIP and Parquet), so
that `annotate ingest` hashes the bytes actually parsed (``annotate.fileio.InputFile``). JSON is
read strictly: duplicate keys in an object, ``NaN`` / ``Infinity`` literals and nesting deeper
than Python can parse are problems, not silently resolved, and a JSON text that may parse to
more values than its bound is refused before it is parsed (``annotate.json_bound``). A JSONL line,
and a CSV field, may hold up to ``MAX_FIELD_BYTES``; a single-document file up to
``MAX_DOCUMENT_BYTES`` (for the readers that pass it); CSV is read by ``annotate.ingest.csv_reader``.
Names the outputs reserve for their own groups (``reserved_name_problem``) and paths that are not
regular files (``file_kind_problem``, before anything is opened) are
refused here too.
"""

from __future__ import annotations

import codecs
import json
import math
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from annotate.columns import NO_JUDGE, RESERVED_NAMES
from annotate.errors import InputError
from annotate.fileio import InputFile, open_input
from annotate.json_bound import (
    MAX_DOCUMENT_VALUES,
    MAX_SAMPLE_VALUES,
    json_values_over,
    too_many_values,
)

if TYPE_CHECKING:
    from annotate.ingest.formats.column_map import ColumnMap

BOM = b"\xef\xbb\xbf"
#: The longest JSONL line and the largest CSV field read (the same limit for both formats).
MAX_FIELD_BYTES = 64 * 1024 * 1024


def limit_text() -> str:
    """``MAX_FIELD_BYTES`` for a message."""
    n = MAX_FIELD_BYTES
    return f"{n // 2**20} MiB" if n % 2**20 == 0 else f"{n:,} bytes"


@dataclass(slots=True)
class Record:
    line: int
    model: str
    benchmark: str
    prompt_id: str
    prompt: str
    response: str
    judge: str
    verdict: str | None  # raw judge verdict as text, verbatim; None when the judge gave none
    score: float | None = None  # numeric judge score, when the judge gives one
    epoch: int = 0
    category: str | None = None
    # Qualifies the verdict for the rubric, e.g. XSTest "1_full_compliance" means harmful on an
    # unsafe prompt and safe on a safe one: context="unsafe" makes the rubric look up
    # "1_full_compliance@unsafe" before "1_full_compliance".
    context: str | None = None
    meta: dict[str, Any] | None = None
    end_line: int | None = None  # the last line of a record that spans several (CSV)
    # The whole conversation of a multi-turn or agentic sample, in order; None for a single-turn
    # sample (one prompt, one answer). Each turn is {"role", "content"} (text), plus "tool_calls"
    # on an assistant turn that called tools and "tool_call_id" / "name" on a tool turn: see
    # ``transcript_problem`` for the exact contract.
    transcript: list[dict[str, Any]] | None = None
    # What the reader reads the judge as (annotate.columns.JUDGE_KINDS: safety, refusal, quality);
    # None: the reader does not say (safety, unless the rubric says otherwise: annotate.ingest.rubric).
    kind: str | None = None
    # The item's image as the file names it (a path beside the file, or a URL): copied into the
    # workspace at ingest (annotate.ingest.media), which stores its content-addressed name.
    image: str | None = None
    # The prompt's hazard categories as the file gives them (text, several joined by ";", or a list):
    # normalised to the stored codes at ingest (annotate.hazards); its persona and locale (AILuminate).
    hazard: Any = None
    persona: str | None = None
    locale: str | None = None


@dataclass(slots=True)
class Problem:
    line: int
    message: str
    fatal: bool = False  # the reader lost its place or stopped: refuse the file even under --skip-invalid
    end_line: int | None = None


@dataclass(slots=True)
class SetAside:
    line: int
    reason: str
    data: dict[str, Any] = field(default_factory=dict)


Item = Record | Problem | SetAside


@dataclass(slots=True)
class ReadContext:
    """Options from the command line that readers honour, and the file being read.

    ``model``, ``benchmark`` and ``judge`` override what the file says (or supply it when the
    file does not say, e.g. HarmBench keeps the model only in the file name).
    ``progress`` is called with the number of bytes consumed so far (may be ignored).
    ``source`` is the command's open, hashed input file; without one (a reader called
    directly), ``open`` opens the path itself, with the same checks.
    ``allow_written_back`` (``ingest --allow-written-back``): read a log that ``annotate
    writeback`` wrote, whose scores hold human labels (the Inspect reader refuses it otherwise).

    Filled by the reader as it reads: ``notes``, sentences for the ingest to say about the file
    (e.g. where the model's name came from, that a run was interrupted); ``conflict_hint``, what
    to advise instead of ``--replace`` when a row's key is already stored with other content
    (e.g. garak: a model named only by its endpoint, so two runs of one target share their keys);
    ``recorded``, what the reader read the file with, kept in the ingest run's options (provenance).
    ``max_values`` (``ingest --max-values``): the most values one JSON text may parse to, instead of
    ``MAX_SAMPLE_VALUES`` / ``MAX_DOCUMENT_VALUES`` (``value_limit``).
    ``column_map`` (``ingest --map``, annotate.toml's ``[ingest.map]``): the file's column that
    holds each field, for the readers of tables (``annotate.ingest.formats.column_map.ColumnMap``).
    """

    model: str | None = None
    benchmark: str | None = None
    judge: str | None = None
    progress: Any = None
    source: InputFile | None = None
    allow_written_back: bool = False
    notes: list[str] = field(default_factory=list)
    conflict_hint: str | None = None
    column_map: ColumnMap | None = None
    recorded: dict[str, Any] = field(default_factory=dict)
    max_values: int | None = None
    #: ``ingest --encoding``: the text encoding of the file's bytes (None: UTF-8). Only encodings in
    #: which ASCII is ASCII (latin-1, cp1252, mac_roman, shift_jis, ...) are accepted
    #: (:func:`check_encoding`), so that lines, quotes and delimiters are found in the bytes.
    encoding: str | None = None
    #: ``--names model:0=Llama-2-7b-chat-hf``: a model's or benchmark's name for each raw value (an id)
    #: the file holds ({field: {raw: name}}); ``renamed`` counts what was renamed ("model 0": rows).
    value_names: dict[str, dict[str, str]] = field(default_factory=dict)
    renamed: dict[str, int] = field(default_factory=dict)
    #: ``ingest --no-judge``: the responses are stored unjudged (judge ``NO_JUDGE``, label ambiguous
    #: for the reason ``unjudged``); a verdict column the file has is kept as metadata.
    #: ``unjudged_rows`` counts them.
    unjudged: bool = False
    unjudged_rows: int = 0

    @property
    def text_encoding(self) -> str:
        return self.encoding or "utf-8"

    def value_limit(self, default: int) -> int:
        """The most values one JSON text may parse to: ``default`` (``MAX_SAMPLE_VALUES`` or
        ``MAX_DOCUMENT_VALUES``), unless ``ingest --max-values`` said otherwise."""
        return default if self.max_values is None else self.max_values

    def tick(self, nbytes: int) -> None:
        if self.progress is not None:
            self.progress(nbytes)

    @contextmanager
    def open(self, path: Path) -> Iterator[IO[bytes]]:
        """The file's bytes, read in order (and hashed as they are read, when it is the source)."""
        if self.source is not None and Path(self.source.path) == Path(path):
            yield self.source.stream
            return
        with open_input(path) as source:
            yield source.stream

    @contextmanager
    def open_random(self, path: Path) -> Iterator[IO[bytes]]:
        """The file for a library that reads out of order (ZIP, Parquet): hashed whole first."""
        if self.source is not None and Path(self.source.path) == Path(path):
            self.source.digest_whole(verify=False)
            yield self.source.stream
            return
        with open_input(path) as source:
            yield source.stream


# What a path is when it is not a regular file, judged by os.stat (file_kind_problem).
_FILE_KINDS = (
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "is a named pipe (FIFO), not a regular file (it was not opened: reading one waits for a writer)"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
    (stat.S_ISCHR, "is a character device, not a regular file"),
    (stat.S_ISBLK, "is a block device, not a regular file"),
)


def file_kind_problem(path: Path) -> str | None:
    """Why ``path`` is not a file to read, judged by ``os.stat`` *before* it is opened, or None.

    A named pipe, a socket or a device is never opened (opening a FIFO would release a writer
    waiting on it, and reading one waits for data); a directory is named as such. A path that
    cannot be examined (missing, a broken link, no permission) is left to ``open_input``, whose
    messages say which. ``open_input`` checks the open descriptor again, so a file swapped for a
    FIFO between the two checks is refused there, still without blocking.
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return None
    for test, what in _FILE_KINDS:
        if test(mode):
            if test is stat.S_ISDIR:
                return f"{what}; pass the files in it instead (e.g. {path}/*.jsonl)"
            return f"{what}; pass a file saved on disk"
    return "is not a regular file; pass a file saved on disk"


#: The largest epoch the store holds (a 32-bit integer column on PostgreSQL).
MAX_EPOCH = 2**31 - 1


def name_problem(field: str, value: Any) -> str | None:
    """Why ``value`` cannot be a name (model, benchmark, prompt_id, judge, category), or None.

    A name is text that is not empty after stripping, holds printable characters only (no
    control characters such as ANSI escapes or carriage returns, which would reach terminals
    raw, and no invisible format characters), and can be stored (``text_problem``).
    """
    if type(value) is not str:
        return f"field {field!r} must be text, got {'null' if value is None else type(value).__name__}"
    if not value.strip():
        return f"field {field!r} is empty"
    if not value.isprintable():
        bad = next(c for c in value if not c.isprintable())
        return f"field {field!r} holds a control or invisible character ({ascii(bad)}); names must be printable text"
    return text_problem(field, value)


#: How a reserved name is renamed at ingest, per kind of name (``reserved_name_problem``).
_RENAME = {
    "benchmark": "pass --benchmark NAME to ingest the file under another name, or rename it in the file",
    "model": "pass --model NAME to ingest the file under another name, or rename it in the file",
    "judge": "pass --judge NAME to ingest the file under another name, or rename it in the file",
    "category": "rename it in the file, or leave the category empty",
}
_NO_JUDGE_FOLDED = NO_JUDGE.casefold()
_RESERVED = {kind: frozenset(n.casefold() for n in names) for kind, names in RESERVED_NAMES.items()}
if not _RESERVED["benchmark"] == _RESERVED["model"] == _RESERVED["judge"]:  # record_problem's one cache
    raise ImportError("annotate.columns.RESERVED_NAMES must reserve the same names for benchmarks, models and judges")


def reserved_names_text() -> str:
    """The reserved names for a message: ``benchmark, model, judge 'ALL'; category '(none)'``."""
    by_names: dict[tuple[str, ...], list[str]] = {}
    for kind, names in RESERVED_NAMES.items():
        by_names.setdefault(tuple(names), []).append(kind)
    return "; ".join(f"{', '.join(kinds)} {' '.join(map(repr, names))}" for names, kinds in by_names.items())


def is_reserved(kind: str, value: str) -> bool:
    """Whether ``value`` is a name the outputs reserve for ``kind`` (ignoring case and surrounding spaces).

    >>> is_reserved("benchmark", "ALL"), is_reserved("model", " all "), is_reserved("category", "ALL")
    (True, True, False)
    """
    reserved = _RESERVED.get(kind)
    return reserved is not None and value.strip().casefold() in reserved


def reserved_name_problem(kind: str, value: str) -> str | None:
    """Why ``value`` cannot be the name of a ``kind`` (benchmark, model, judge, category): the
    outputs use it for their own groups (``annotate.columns.RESERVED_NAMES``); None when it can."""
    if not is_reserved(kind, value):
        return None
    if kind == "category":
        what = "the outputs' group of responses without a category (agreement --by category)"
    else:
        what = "the outputs' overall rows (scores.csv, ranking.csv, judges.csv, judge_pairs.csv, the report)"
    return (
        f"the {kind} name {value!r} is reserved: it names {what}, which these responses would be "
        f"indistinguishable from (reserved, in any case: {reserved_names_text()}); {_RENAME[kind]}"
    )


def reserved_names_held(names: dict[str, Iterable[Any]]) -> str | None:
    """Why a store's responses cannot be scored or exported: the reserved names among ``names``
    (kind -> the names it holds, e.g. the benchmarks of some rounds), ingested before annotate
    refused them; None when there are none.
    """
    held = sorted(
        {(kind, str(value)) for kind, values in names.items() for value in values if is_reserved(kind, str(value))}
    )
    if not held:
        return None
    listed = ", ".join(f"{kind} {value!r}" for kind, value in held)
    kinds = sorted({kind for kind, _ in held})
    return (
        f"the store holds responses under a reserved name ({listed}), ingested before annotate refused such "
        "names: the outputs use it for their overall rows, so scores, the judge audit and an export would mix "
        "these responses with them. Ingest their files again under another name (annotate ingest FILE "
        f"{' '.join(f'--{k} NAME' for k in kinds)}) and review them in a new round. Reserved names (in any "
        f"case): {reserved_names_text()}."
    )


def text_problem(field: str, value: str) -> str | None:
    """Why the store cannot hold ``value`` exactly as it is (a NUL character, an unpaired surrogate), or None."""
    if "\x00" in value:
        return f"field {field!r} holds a NUL character (U+0000), which the store cannot keep"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (
                f"field {field!r} is not valid Unicode text (an unpaired surrogate {ascii(value[exc.start])} "
                f"at character {exc.start + 1:,})"
            )
    return None


def record_problem(rec: Record, names_ok: set[str]) -> str | None:
    """Why ``rec`` cannot be stored as it is, or None: the checks every reader's records pass.

    ``names_ok`` caches the names already found valid as a model, benchmark or judge (they repeat
    on every row); a name the outputs reserve (:func:`reserved_name_problem`) is not valid, and the
    three kinds reserve the same names, so one cache serves them all.
    """
    judge = rec.judge
    if judge == NO_JUDGE and rec.verdict is None and rec.score is None:
        judge = rec.model  # an unjudged response (checked as the model's name: nothing more to check)
    elif judge not in names_ok and judge.strip().casefold() == _NO_JUDGE_FOLDED:
        return (
            f"the judge name {judge!r} is reserved for responses no judge labelled (ingest --no-judge, or a table "
            f"without a verdict column); {_RENAME['judge']}"
        )
    for field_name, name in (("model", rec.model), ("benchmark", rec.benchmark), ("judge", judge)):
        if name not in names_ok:
            problem = name_problem(field_name, name) or reserved_name_problem(field_name, name)
            if problem is not None:
                return problem
            names_ok.add(name)
    problem = name_problem("prompt_id", rec.prompt_id)
    if problem is None and rec.category is not None:
        problem = name_problem("category", rec.category) or reserved_name_problem("category", rec.category)
    for facet, value in (("persona", rec.persona), ("locale", rec.locale)):
        if problem is None and value is not None:
            problem = name_problem(facet, value)
    if problem is not None:
        return problem
    for field_name, text in (("prompt", rec.prompt), ("response", rec.response), ("judge_label", rec.verdict)):
        if text is not None:
            if type(text) is not str:
                return f"field {field_name!r} must be text, got {type(text).__name__}"
            problem = text_problem(field_name, text)
            if problem is not None:
                return problem
    if rec.transcript is not None:
        problem = transcript_problem(rec.transcript)
        if problem is not None:
            return problem
    score = rec.score
    if score is not None and (type(score) is not float or not math.isfinite(score)):
        return f"the judge score must be a finite number, got {score!r}"
    epoch = rec.epoch
    if type(epoch) is not int or not 0 <= epoch <= MAX_EPOCH:
        return f"the epoch must be an integer from 0 to {MAX_EPOCH:,}, got {epoch!r}"
    return None


# -- transcripts -------------------------------------------------------------------------------

#: The roles a transcript turn may have.
TRANSCRIPT_ROLES = ("system", "user", "assistant", "tool")
#: What stands in a transcript for content that is not text, by kind (an unknown kind: "[<kind>]").
PLACEHOLDERS = {
    "image": "[image]",
    "audio": "[audio]",
    "video": "[video]",
    "document": "[document]",
    "data": "[data]",
    "reasoning": "[reasoning]",
    "tool_use": "[tool use]",
}


def placeholder(kind: str) -> str:
    """The text that stands for a non-text content part of this kind (``image`` -> ``[image]``)."""
    return PLACEHOLDERS.get(kind, f"[{kind}]")


def arguments_text(arguments: Any) -> str:
    """Tool-call arguments as the JSON text the tool got (a string is kept as it is: already JSON text)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def tool_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """One entry of an assistant turn's ``tool_calls``."""
    return {
        "id": call_id if isinstance(call_id, str) and call_id else None,
        "name": name if isinstance(name, str) else "",
        "arguments": arguments_text({} if arguments is None else arguments),
    }


def is_single_turn(transcript: list[dict[str, Any]], *, media: bool = False) -> bool:
    """True for a conversation that the prompt and the response already show whole.

    That is: system turns, then one user turn and one final assistant turn, no tool calls, no
    tool turns, and no content that is not text (``media``: the reader put a placeholder in).
    Such a sample keeps ``transcript=None``, as before transcripts existed.
    """
    turns = [t for t in transcript if t["role"] != "system"]
    if [t["role"] for t in turns] != ["user", "assistant"]:
        return False
    return not media and not any(t.get("tool_calls") for t in turns)


def transcript_or_none(transcript: list[dict[str, Any]], *, media: bool = False) -> list[dict[str, Any]] | None:
    """The transcript of a multi-turn sample; None for a single-turn one (``is_single_turn``) or an empty one."""
    if not transcript or is_single_turn(transcript, media=media):
        return None
    return transcript


def transcript_problem(transcript: Any) -> str | None:
    """Why ``transcript`` breaks the contract, or None.

    The contract: a list of turns in order, each a dict with ``role`` (one of
    ``TRANSCRIPT_ROLES``) and ``content`` (text the store can hold); an assistant turn may add
    ``tool_calls``, a list of ``{"id": str | None, "name": str, "arguments": str}`` (the
    arguments as JSON text); a tool turn may add ``tool_call_id`` (str | None) and ``name``
    (str | None). No other keys.
    """
    if not isinstance(transcript, list):
        return f"the transcript must be a list of turns, got {type(transcript).__name__}"
    for number, turn in enumerate(transcript, start=1):
        where = f"transcript turn {number}"
        if not isinstance(turn, dict):
            return f"{where} must be an object, got {type(turn).__name__}"
        role = turn.get("role")
        if role not in TRANSCRIPT_ROLES:
            return f"{where}: role {role!r} is not one of {', '.join(TRANSCRIPT_ROLES)}"
        allowed = {"role", "content"}
        if role == "assistant":
            allowed.add("tool_calls")
        elif role == "tool":
            allowed |= {"tool_call_id", "name"}
        extra = sorted(set(turn) - allowed)
        if extra:
            return f"{where}: unexpected field(s) {', '.join(map(repr, extra))} on a {role} turn"
        content = turn.get("content")
        if type(content) is not str:
            return f"{where}: content must be text, got {type(content).__name__}"
        problem = text_problem(f"{where} content", content)
        if problem is not None:
            return problem
        for key in ("tool_call_id", "name"):
            value = turn.get(key)
            if value is not None and type(value) is not str:
                return f"{where}: {key} must be text or null, got {type(value).__name__}"
            if value is not None and (problem := text_problem(f"{where} {key}", value)) is not None:
                return problem
        calls = turn.get("tool_calls")
        if calls is None:
            continue
        if not isinstance(calls, list):
            return f"{where}: tool_calls must be a list, got {type(calls).__name__}"
        for index, call in enumerate(calls, start=1):
            if not isinstance(call, dict) or set(call) != {"id", "name", "arguments"}:
                return f"{where}: tool call {index} must have exactly id, name and arguments"
            if call["id"] is not None and type(call["id"]) is not str:
                return f"{where}: tool call {index}: id must be text or null"
            for key in ("name", "arguments"):
                if type(call[key]) is not str:
                    return f"{where}: tool call {index}: {key} must be text"
            for key in ("id", "name", "arguments"):
                if call[key] is not None and (problem := text_problem(f"{where} tool call {key}", call[key])):
                    return problem
    return None


class Reader(Protocol):
    name: str  # format name used with --format
    description: str

    def sniff(self, path: Path, head: bytes) -> bool:
        """True when the file looks like this format (``head`` = the first 64 KiB)."""

    def read(self, path: Path, ctx: ReadContext) -> Iterator[Item]:
        """Yield records, problems and set-aside rows in file order."""


# -- strict JSON ------------------------------------------------------------------------------


class StrictJSONError(ValueError):
    """JSON that Python's parser would accept but that is ambiguous or not JSON (RFC 8259)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise StrictJSONError(
                    f"duplicate key {key!r} in one JSON object (parsers disagree on which value counts); keep one"
                )
            seen.add(key)
    return obj


def _no_constant(name: str) -> Any:
    raise StrictJSONError(f"{name} is not a JSON value (write a number, or null)")


#: Parses one JSON text: duplicate keys and NaN / Infinity are errors.
STRICT_JSON = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_constant=_no_constant)
#: The same, with NaN / Infinity read as floats: Inspect writes them as bare tokens in its logs
#: (``Score.model_config = ConfigDict(ser_json_inf_nan="constants")``; an unscored sample is NaN).
NAN_JSON = json.JSONDecoder(object_pairs_hook=_unique_keys)

# Strings (skipped whole), the bare constants and the structural characters of a JSON text.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|NaN|-?Infinity|[{}\[\]:]')


def _strict_error_line(text: str) -> int:
    """The line of the first duplicate key or NaN / Infinity literal of a JSON text (1 if none is found)."""
    stack: list[set[str] | None] = []
    last: str | None = None
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ("NaN", "Infinity", "-Infinity"):
            return text.count("\n", 0, match.start()) + 1
        if token == "{":
            stack.append(set())
        elif token == "[":
            stack.append(None)
        elif token in "}]":
            if stack:
                stack.pop()
        elif token == ":":
            keys = stack[-1] if stack else None
            if keys is not None and last is not None:
                key = json.loads(last)
                if key in keys:
                    return text.count("\n", 0, match.start()) + 1
                keys.add(key)
        last = token if token.startswith('"') else None
    return 1


def _value_error(exc: ValueError) -> str:
    """The parser's message, without advice meant for Python programmers."""
    if "digits" in str(exc) and "int_max_str_digits" in str(exc):
        return f"a number has more than {sys.get_int_max_str_digits():,} digits"
    return str(exc)


def parse_json_text(
    text: str, *, nan: bool = False, max_values: int | None = None, what: str = "the JSON text"
) -> tuple[Any, None] | tuple[None, Problem]:
    """(value, None) for a whole JSON text, or (None, the Problem with its line) when it is not strict JSON
    (``nan``: NaN and Infinity are numbers, as the format writing them says) or may hold more than
    ``max_values`` values (:func:`json_values_over`; ``what`` names the text in that message)."""
    if max_values is not None and (count := json_values_over(text, max_values)) is not None:
        return None, Problem(1, too_many_values(count, max_values, what), fatal=True)
    try:
        return (NAN_JSON if nan else STRICT_JSON).decode(text), None
    except StrictJSONError as exc:
        return None, Problem(_strict_error_line(text), f"not valid JSON: {exc}", fatal=True)
    except json.JSONDecodeError as exc:
        return None, Problem(
            exc.lineno, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})", fatal=True
        )
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        return None, Problem(1, f"not valid JSON ({_value_error(exc)})", fatal=True)
    except RecursionError:
        return None, Problem(1, "not readable: the JSON is nested too deeply", fatal=True)


def load_json_bytes(
    data: bytes, *, nan: bool = False, max_values: int = MAX_DOCUMENT_VALUES, what: str = "the document"
) -> tuple[Any, None] | tuple[None, Problem]:
    """A whole JSON document (UTF-8, an optional BOM) parsed strictly, or the fatal Problem (``nan``,
    ``max_values`` and ``what``: as :func:`parse_json_text`; the values are counted in the bytes,
    before they are decoded)."""
    if (count := json_values_over(data, max_values)) is not None:
        return None, Problem(1, too_many_values(count, max_values, what), fatal=True)
    text = _document_text(data)
    if isinstance(text, Problem):
        return None, text
    return parse_json_text(text, nan=nan)


def _document_text(data: bytes, encoding: str = "utf-8") -> str | Problem:
    """A JSON document's bytes as text (an optional BOM dropped), or the fatal Problem: not in ``encoding``."""
    data = data.removeprefix(BOM)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        said = "UTF-8" if encoding == "utf-8" else encoding
        return Problem(line, f"not valid {said} text (byte {exc.start:,}: {exc.reason})", fatal=True)


#: What the ingest advises when a file is not UTF-8 (a spreadsheet saved on a Mac or under Windows).
ENCODING_HINT = (
    "the file is not UTF-8 text: if it was saved in another encoding, pass --encoding (mac_roman for Excel on a "
    "Mac, cp1252 for Windows, latin-1), or convert it first: iconv -f MAC -t UTF-8 FILE > FILE.utf8"
)


def not_text(ctx: ReadContext) -> str:
    """``not valid UTF-8 text`` (or the --encoding's name): the start of a decoding problem."""
    return "not valid UTF-8 text" if ctx.encoding is None else f"not valid {ctx.encoding} text"


def check_encoding(name: str) -> str | None:
    """Why ``--encoding NAME`` cannot be used, or None (an unknown codec; one in which ASCII is not ASCII).

    >>> check_encoding("mac_roman") is None, check_encoding("cp1252") is None
    (True, True)
    >>> check_encoding("utf-16").split(";")[0]
    '--encoding utf-16: lines, quotes and delimiters are not single ASCII bytes in it'
    >>> check_encoding("klingon")
    '--encoding klingon: no such text encoding (e.g. utf-8, mac_roman, cp1252, latin-1)'
    """
    try:
        info = codecs.lookup(name)
    except LookupError:
        return f"--encoding {name}: no such text encoding (e.g. utf-8, mac_roman, cp1252, latin-1)"
    probe = ' ,;\t"\r\nabcXYZ019{}[]:'
    try:
        same = probe.encode(info.name) == probe.encode("ascii")
    except (UnicodeError, LookupError):
        same = False
    if not same:
        return (
            f"--encoding {name}: lines, quotes and delimiters are not single ASCII bytes in it; convert the file "
            f"to UTF-8 first (iconv -f {name.upper()} -t UTF-8 FILE > FILE.utf8)"
        )
    return None


#: The largest single-document JSON file the readers of HarmBench, JailbreakBench, promptfoo and
#: Inspect's JSON logs read (``load_json_object``'s ``max_bytes``). Such a file is parsed whole: the peak memory is
#: about 2x its size for ASCII text and up to about 8x when it holds characters outside the Basic
#: Multilingual Plane (Python then keeps the whole text at 4 bytes a character;
#: tests/ingest/test_memory_bounds.py measures it), so at this limit about 2 GiB at worst.
MAX_DOCUMENT_BYTES = 256 * 2**20


SPLIT_ADVICE = (
    "Split the run into several files (e.g. one per model or per attack), or write its rows as JSON Lines "
    "in the generic schema, which is read line by line in bounded memory"
)


def document_too_large(size: int, limit: int, advice: str = SPLIT_ADVICE) -> str:
    """The message for a single-document file over ``limit`` bytes, with what to do instead."""
    return (
        f"the file is {size / 2**20:,.0f} MiB, and a file of this format is one JSON document, read whole at "
        f"up to about 8 times its size in memory: annotate reads such files up to {limit // 2**20} MiB. " + advice
    )


def load_json_object(
    path: Path,
    ctx: ReadContext,
    expected: str = "a JSON object",
    *,
    max_bytes: int | None = None,
    advice: str = SPLIT_ADVICE,
    nan: bool = False,
) -> dict[str, Any] | Problem:
    """A whole-file JSON document that must be an object, or the (fatal) Problem that says why not.

    Shared by the readers of single-document formats (HarmBench, JailbreakBench, Inspect JSON,
    promptfoo); errors carry the text line where they are. A file over ``max_bytes`` is refused
    before it is read (:func:`document_too_large`), and one that may parse to more than
    ``ctx.value_limit(MAX_DOCUMENT_VALUES)`` values before it is parsed (:func:`json_values_over`); the
    bytes are dropped once decoded, so that the bytes, the text and the parsed objects are never all
    held at once.
    """
    with ctx.open(path) as fh:
        if max_bytes is not None:
            size = os.fstat(fh.fileno()).st_size
            if size > max_bytes:
                return Problem(1, document_too_large(size, max_bytes, advice), fatal=True)
            data = fh.read(max_bytes + 1)
            if len(data) > max_bytes:  # it grew after the check
                return Problem(1, document_too_large(len(data), max_bytes, advice), fatal=True)
        else:
            data = fh.read()
    ctx.tick(len(data))
    limit = ctx.value_limit(MAX_DOCUMENT_VALUES)
    if (count := json_values_over(data, limit)) is not None:
        return Problem(1, too_many_values(count, limit, "the document"), fatal=True)
    text = _document_text(data, ctx.text_encoding)
    del data
    if isinstance(text, Problem):
        return text
    value, problem = parse_json_text(text, nan=nan)
    del text
    if problem is not None:
        return problem
    if not isinstance(value, dict):
        got = "null" if value is None else type(value).__name__
        return Problem(1, f"expected {expected}, got {got}", fatal=True)
    return value


def json_lines(
    path: Path, ctx: ReadContext, *, tick_every: int = 1024
) -> Iterator[tuple[int, dict[str, Any]] | Problem]:
    """(line number, object) for each JSON object line of a JSONL file, or a Problem for the line.

    Blank lines are skipped; a line that is not strict JSON, not UTF-8, not a JSON object, longer
    than ``MAX_FIELD_BYTES``, or that may parse to more than ``ctx.value_limit(MAX_SAMPLE_VALUES)``
    values (``json_values_over``, counted before it is parsed) is a Problem and reading goes on with
    the next line (JSONL lines cannot run into each other); a line that stops inside its value says whether the file
    looks truncated (``json_line_error``). A file that is one JSON array (``json_array_problem``)
    is one fatal Problem. A UTF-8 BOM before the first line is allowed (Windows tools write
    one). Progress is reported in bytes. Shared by the JSONL readers (generic, garak, lm-eval).
    """
    decode = STRICT_JSON.decode
    value_limit = ctx.value_limit(MAX_SAMPLE_VALUES)
    consumed = 0
    limit = MAX_FIELD_BYTES + 1
    first = True  # no line with content read yet: a file that opens with "[" is a JSON array
    with ctx.open(path) as fh:
        readline = fh.readline
        lineno = 0
        while raw := readline(limit):
            lineno += 1
            consumed += len(raw)
            if lineno % tick_every == 0:
                ctx.tick(consumed)
            if len(raw) == limit and not raw.endswith(b"\n"):
                while (rest := readline(limit)) and not rest.endswith(b"\n"):
                    consumed += len(rest)
                consumed += len(rest)
                yield Problem(lineno, f"the line is longer than {limit_text()}, the longest line read")
                continue
            if lineno == 1:
                raw = raw.removeprefix(BOM)
            if not raw.strip(b" \t\r\n"):
                continue
            if first and raw.lstrip().startswith(b"["):
                array = json_array_problem(raw)
                if array is not None:  # the whole file is one JSON array: nothing after it is a row
                    yield Problem(lineno, array, fatal=True)
                    return
            first = False
            if (count := json_values_over(raw, value_limit)) is not None:
                yield Problem(lineno, too_many_values(count, value_limit, "the line"))
                continue
            try:
                obj = decode(raw.decode(ctx.text_encoding))
            except UnicodeDecodeError as exc:
                yield Problem(lineno, f"{not_text(ctx)} (byte {exc.start + 1} of the line: {exc.reason})")
                continue
            except StrictJSONError as exc:
                yield Problem(lineno, f"not valid JSON: {exc}")
                continue
            except ValueError as exc:
                if raw.startswith(BOM):
                    yield Problem(
                        lineno, "the line starts with a byte-order mark (U+FEFF), which only the first line may"
                    )
                else:
                    yield Problem(lineno, json_line_error(raw, exc, last=not raw.endswith(b"\n")))
                continue
            except RecursionError:
                yield Problem(lineno, "not readable: the JSON is nested too deeply")
                continue
            if not isinstance(obj, dict):
                got = "null" if obj is None else type(obj).__name__
                yield Problem(lineno, f"expected a JSON object, got {got}")
                continue
            yield lineno, obj
    ctx.tick(consumed)


def json_array_problem(line: bytes) -> str | None:
    """Why a JSONL file whose first line is ``line`` (it starts with ``[``) is one JSON array rather
    than JSON Lines, or None: the line opens an array that does not close on it (a pretty-printed
    array), or is an array holding objects (a whole array on one line). A line that may hold more than
    ``MAX_SAMPLE_VALUES`` values is not parsed here (None: the line is refused for that by its reader)."""
    if json_values_over(line, MAX_SAMPLE_VALUES) is not None:
        return None
    try:
        value = STRICT_JSON.decode(line.decode("utf-8"))
    except (ValueError, RecursionError):
        value = None
    else:
        if not (isinstance(value, list) and any(isinstance(v, dict) for v in value)):
            return None  # a line that is an array of something else: that line's problem only
    return (
        "the file is one JSON array (it starts with '['), and annotate reads rows as JSON Lines, one JSON object "
        "per line: none of its rows can be read. Convert it to one object per line, e.g. "
        "jq -c '.[]' FILE > ROWS.jsonl, and ingest that"
    )


def json_line_error(raw: bytes, exc: ValueError, *, last: bool) -> str:
    """What is wrong with one line of a JSON Lines file that is not JSON (``exc``, the parser's error).

    A line that stops before its value is complete (a string or an object left open) is said to
    be so: the file's last line (no line feed after it) is then probably truncated, an earlier one
    probably holds a value spread over several lines (pretty-printed JSON).
    """
    detail = f"not valid JSON ({_value_error(exc)})"
    if not isinstance(exc, json.JSONDecodeError):
        return detail
    text = exc.doc
    unfinished = exc.msg.startswith("Unterminated string") or exc.pos >= len(text.rstrip(" \t\r\n"))
    if not unfinished:
        return detail
    inside = "inside a string" if exc.msg.startswith("Unterminated string") else "before its JSON value is complete"
    if last:
        return (
            f"not valid JSON: the line ends {inside} (at byte {len(raw):,} of the line) and no line follows: the "
            "file looks truncated, cut off while it was written or copied. Write or copy it again completely"
        )
    return (
        f"not valid JSON: the line ends {inside}, and JSON Lines needs each object whole on one line (a line "
        "break inside a string is written \\n; a pretty-printed object spans several lines: write it compactly, "
        "e.g. jq -c . FILE)"
    )


def object_field(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """``obj[key]`` when it is a JSON object, else an empty dict (a missing or malformed optional part)."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


#: The fields whose values ``--names`` may rename (ids in a file for the names a store keeps).
NAMED_FIELDS = ("model", "benchmark")


def parse_names_option(texts: Sequence[str]) -> dict[str, dict[str, str]]:
    """``--names FIELD:RAW=NAME[,...]`` (repeatable) as {field: {raw: name}}; InputError listing every problem.

    >>> parse_names_option(["model:0=Llama-2-7b-chat-hf,model:1=Mistral-7B", "benchmark:mm=mm-safety"])
    {'model': {'0': 'Llama-2-7b-chat-hf', '1': 'Mistral-7B'}, 'benchmark': {'mm': 'mm-safety'}}
    """
    out: dict[str, dict[str, str]] = {}
    problems: list[str] = []
    for text in texts:
        for part in text.split(","):
            if not part.strip():
                continue
            head, eq, name = part.partition("=")
            fld, colon, raw = head.partition(":")
            fld, raw, name = fld.strip(), raw.strip(), name.strip()
            if not (eq and colon and raw and name):
                problems.append(
                    f"--names {part.strip()!r}: write FIELD:RAW=NAME, e.g. --names model:0=Llama-2-7b-chat-hf"
                )
            elif fld not in NAMED_FIELDS:
                problems.append(f"--names {part.strip()!r}: {fld!r} is not one of {', '.join(NAMED_FIELDS)}")
            elif out.get(fld, {}).get(raw, name) != name:
                problems.append(f"--names gives {fld} {raw!r} two names ({out[fld][raw]!r} and {name!r})")
            else:
                out.setdefault(fld, {})[raw] = name
    if problems:
        raise InputError(f"--names was not used ({len(problems)} problem(s)); fix it and run again.", problems)
    return out


def renamed_value(ctx: ReadContext, fld: str, value: Any) -> Any:
    """``value`` under its ``--names`` name (counted in ``ctx.renamed``), or as it is."""
    names = ctx.value_names.get(fld)
    if not names or value is None or isinstance(value, bool):
        return value
    raw = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value).strip()
    if raw not in names:
        return value
    key = f"{fld} {raw}"
    ctx.renamed[key] = ctx.renamed.get(key, 0) + 1
    return names[raw]


def renamed_note(ctx: ReadContext) -> str | None:
    """The ingest line's note on ``--names``: what was renamed, how often, and what never matched."""
    if not ctx.value_names:
        return None
    done = [f"{k} -> {ctx.value_names[k.split(' ', 1)[0]][k.split(' ', 1)[1]]} ({n:,})" for k, n in ctx.renamed.items()]
    unused = [f"{f} {raw}" for f, names in ctx.value_names.items() for raw in names if f"{f} {raw}" not in ctx.renamed]
    text = "names: " + (", ".join(done) if done else "nothing renamed")
    return text + (f"; never in the file: {', '.join(unused)}" if unused else "")
