"""What every format reader yields, and the strict readers of JSON, JSONL and CSV they share.

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
than Python can parse are problems, not silently resolved. A JSONL line, and a CSV field, may
hold up to ``MAX_FIELD_BYTES``.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from annotate.fileio import InputFile, open_input

BOM = b"\xef\xbb\xbf"
#: The longest JSONL line and the largest CSV field read (the same limit for both formats).
MAX_FIELD_BYTES = 64 * 1024 * 1024
#: A CSV record spanning more physical lines than this has lost its quoting: the file is refused.
#: (The longest record of the XSTest files spans 34 lines.)
MAX_RECORD_LINES = 1_000


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
    """

    model: str | None = None
    benchmark: str | None = None
    judge: str | None = None
    progress: Any = None
    source: InputFile | None = None

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

    ``names_ok`` caches the names already found valid (models, benchmarks and judges repeat on
    every row).
    """
    for field_name, name in (("model", rec.model), ("benchmark", rec.benchmark), ("judge", rec.judge)):
        if name not in names_ok:
            problem = name_problem(field_name, name)
            if problem is not None:
                return problem
            names_ok.add(name)
    problem = name_problem("prompt_id", rec.prompt_id)
    if problem is None and rec.category is not None:
        problem = name_problem("category", rec.category)
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


def parse_json_text(text: str) -> tuple[Any, None] | tuple[None, Problem]:
    """(value, None) for a whole JSON text, or (None, the Problem with its line) when it is not strict JSON."""
    try:
        return STRICT_JSON.decode(text), None
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


def load_json_bytes(data: bytes) -> tuple[Any, None] | tuple[None, Problem]:
    """A whole JSON document (UTF-8, an optional BOM) parsed strictly, or the fatal Problem."""
    data = data.removeprefix(BOM)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return None, Problem(line, f"not valid UTF-8 text (byte {exc.start:,}: {exc.reason})", fatal=True)
    return parse_json_text(text)


def load_json_object(path: Path, ctx: ReadContext, expected: str = "a JSON object") -> dict[str, Any] | Problem:
    """A whole-file JSON document that must be an object, or the (fatal) Problem that says why not.

    Shared by the readers of single-document formats (HarmBench, JailbreakBench, Inspect JSON,
    promptfoo); errors carry the text line where they are.
    """
    with ctx.open(path) as fh:
        data = fh.read()
    ctx.tick(len(data))
    value, problem = load_json_bytes(data)
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

    Blank lines are skipped; a line that is not strict JSON, not UTF-8, not a JSON object, or
    longer than ``MAX_FIELD_BYTES`` is a Problem and reading goes on with the next line (JSONL
    lines cannot run into each other). A UTF-8 BOM before the first line is allowed (Windows
    tools write one). Progress is reported in bytes. Shared by the JSONL readers (generic,
    garak, lm-eval).
    """
    decode = STRICT_JSON.decode
    consumed = 0
    limit = MAX_FIELD_BYTES + 1
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
            try:
                obj = decode(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                yield Problem(lineno, f"not valid UTF-8 text (byte {exc.start + 1} of the line: {exc.reason})")
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
                    yield Problem(lineno, f"not valid JSON ({_value_error(exc)})")
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


class _LostPlace(Exception):
    """The CSV reader cannot tell where records begin any more (raised from the line feed)."""


def csv_records(
    path: Path, ctx: ReadContext, *, delimiter: str = ",", tick_every: int = 1024
) -> Generator[tuple[int, int, list[str]] | Problem, None, None]:
    """The header, then each record of a CSV file with the lines it spans, or a Problem.

    Yields ``(1, end, header)`` first (or one fatal Problem and stops: empty file, unreadable
    or non-UTF-8 header); then ``(line, end, cells)`` per record, where ``line`` is where the
    record starts and ``end`` where it ends (quoted fields may hold line breaks). A record that
    is not UTF-8, or has the wrong number of fields on a single line, is a Problem on its
    starting line and reading goes on. Anything that means the reader has lost its place is a fatal
    Problem and reading stops: a CSV syntax error (read with ``strict``: a stray quote, a quote
    never closed), a field larger than ``MAX_FIELD_BYTES``, a record spanning more than
    ``MAX_RECORD_LINES`` lines, or a record spanning several lines with the wrong number of
    fields (the mark of a quote opened in one row and closed in another). Lines are decoded one
    by one (so a bad byte is pinned to its record), a UTF-8 BOM is dropped, empty records are
    skipped, and progress is reported in bytes. Shared by the CSV readers (generic, XSTest).
    Problems carry ``end_line``, the record's last line.

    Note: the csv module's field limit is process-wide; it is set to ``MAX_FIELD_BYTES`` here.
    """
    import csv

    # JSONL lines and CSV fields have the same limit (the csv module's default is 128 Ki characters).
    csv.field_size_limit(MAX_FIELD_BYTES)
    consumed = 0
    bad: list[int] = []  # physical lines that were not UTF-8, ascending
    record_start = [1]  # the physical line where the record being read starts
    limit = MAX_FIELD_BYTES + 1

    def lines(fh: Any) -> Iterator[str]:
        nonlocal consumed
        readline = fh.readline
        number = 0
        while raw := readline(limit):
            number += 1
            consumed += len(raw)
            if len(raw) == limit and not raw.endswith(b"\n"):
                raise _LostPlace(f"line {number} is longer than {limit_text()}")
            if number - record_start[0] >= MAX_RECORD_LINES:
                raise _LostPlace(
                    f"the record spans more than {MAX_RECORD_LINES:,} lines (to line {number}): a quote is "
                    "probably not closed where it should be; a field that really holds that many lines "
                    "can be ingested from JSONL"
                )
            if number == 1:
                raw = raw.removeprefix(BOM)
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError:
                bad.append(number)
                yield raw.decode("utf-8", errors="replace")

    def bad_before(line: int) -> list[int]:
        found = [n for n in bad if n < line]
        del bad[: len(found)]
        return found

    def lost(line: int, reader: Any, what: str) -> Problem:
        end = max(reader.line_num, line)
        span = f"line {line}" if end == line else f"lines {line}-{end}"
        return Problem(
            line,
            f"the CSV cannot be read reliably from the record on {span} ({what}); nothing after it can be "
            "trusted, so the file is refused even with --skip-invalid. Fix the quoting (a field holding "
            'a quote must be quoted, with the quote doubled: "say ""hi"""), or write the file as JSONL',
            fatal=True,
            end_line=end,
        )

    with ctx.open(path) as fh:
        reader = csv.reader(lines(fh), delimiter=delimiter, strict=True)
        try:
            header = next(reader)
        except StopIteration:
            yield Problem(1, "empty file: expected a header row", fatal=True)
            return
        except (csv.Error, _LostPlace) as exc:
            yield Problem(1, f"unreadable CSV header ({exc})", fatal=True, end_line=reader.line_num)
            return
        if bad:
            yield Problem(1, "the header is not valid UTF-8 text", fatal=True)
            return
        yield 1, reader.line_num, header
        start = reader.line_num + 1
        rows = 0
        while True:
            record_start[0] = start
            try:
                cells = next(reader)
            except StopIteration:
                break
            except (csv.Error, _LostPlace) as exc:
                yield lost(start, reader, str(exc))
                return
            line, start = start, reader.line_num + 1
            end = start - 1
            undecodable = bad_before(start)
            if undecodable:
                yield Problem(line, f"not valid UTF-8 text (line {undecodable[0]})", end_line=end)
                continue
            if not cells:
                continue
            rows += 1
            if rows % tick_every == 0:
                ctx.tick(consumed)
            if len(cells) != len(header):
                if end > line:
                    yield lost(line, reader, f"{len(cells)} fields where the header has {len(header)}")
                    return
                yield Problem(line, f"expected {len(header)} fields, found {len(cells)}", end_line=end)
                continue
            yield line, end, cells
    ctx.tick(consumed)


def object_field(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """``obj[key]`` when it is a JSON object, else an empty dict (a missing or malformed optional part)."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}
