"""What every format reader yields.

A reader is a generator ``read(path, ctx) -> Iterator[Record | Problem | SetAside]``:

* ``Record``: one judged response, verdict kept verbatim (``verdict`` as text, ``score`` as a
  float); the unified label is assigned later by the rubric (``annotate.ingest.rubric``).
* ``Problem``: a row that is malformed (bad JSON, a required field missing, a wrong type).
  ``annotate ingest`` refuses the file (exit 2) unless ``--skip-invalid``.
* ``SetAside``: a well-formed row that carries nothing to review (e.g. a JailbreakBench item
  whose attack produced no prompt or response). Never an error, never silently dropped: it is
  counted and written to the rejects file with its reason.

``line`` is the 1-based line number for line-oriented files (JSONL, CSV: the line where the
record starts) and the 1-based item number otherwise; messages read ``FILE:LINE: ...``.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


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


@dataclass(slots=True)
class Problem:
    line: int
    message: str


@dataclass(slots=True)
class SetAside:
    line: int
    reason: str
    data: dict[str, Any] = field(default_factory=dict)


Item = Record | Problem | SetAside


@dataclass(slots=True)
class ReadContext:
    """Options from the command line that readers honour.

    ``model``, ``benchmark`` and ``judge`` override what the file says (or supply it when the
    file does not say, e.g. HarmBench keeps the model only in the file name).
    ``progress`` is called with the number of bytes consumed so far (may be ignored).
    """

    model: str | None = None
    benchmark: str | None = None
    judge: str | None = None
    progress: Any = None

    def tick(self, nbytes: int) -> None:
        if self.progress is not None:
            self.progress(nbytes)


class Reader(Protocol):
    name: str  # format name used with --format
    description: str

    def sniff(self, path: Path, head: bytes) -> bool:
        """True when the file looks like this format (``head`` = the first 64 KiB)."""

    def read(self, path: Path, ctx: ReadContext) -> Iterator[Item]:
        """Yield records, problems and set-aside rows in file order."""


def load_json_object(path: Path, ctx: ReadContext, expected: str = "a JSON object") -> dict[str, Any] | Problem:
    """A whole-file JSON document that must be an object, or the Problem that says why not.

    Shared by the readers of single-document formats (HarmBench, JailbreakBench, Inspect JSON,
    promptfoo); JSON syntax errors carry the text line where they are.
    """
    import json

    try:
        with open(path, "rb") as fh:
            data = json.load(fh)
    except UnicodeDecodeError as exc:
        return Problem(1, f"not valid UTF-8 ({exc})")
    except json.JSONDecodeError as exc:
        return Problem(exc.lineno, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")
    ctx.tick(path.stat().st_size)
    if not isinstance(data, dict):
        got = "null" if data is None else type(data).__name__
        return Problem(1, f"expected {expected}, got {got}")
    return data


def json_lines(
    path: Path, ctx: ReadContext, *, tick_every: int = 1024
) -> Iterator[tuple[int, dict[str, Any]] | Problem]:
    """(line number, object) for each JSON object line of a JSONL file, or a Problem for the line.

    Blank lines are skipped; a line that is not JSON, or not a JSON object, is a Problem and
    reading goes on. Progress is reported in bytes. Shared by the JSONL readers (generic,
    garak, lm-eval).
    """
    import json

    loads = json.loads
    consumed = 0
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            consumed += len(raw)
            if lineno % tick_every == 0:
                ctx.tick(consumed)
            if not raw.strip():
                continue
            try:
                obj = loads(raw)
            except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
                yield Problem(lineno, f"not valid JSON ({exc})")
                continue
            if not isinstance(obj, dict):
                got = "null" if obj is None else type(obj).__name__
                yield Problem(lineno, f"expected a JSON object, got {got}")
                continue
            yield lineno, obj
    ctx.tick(consumed)


def csv_records(
    path: Path, ctx: ReadContext, *, delimiter: str = ",", tick_every: int = 1024
) -> Generator[tuple[int, list[str]] | Problem, None, None]:
    """The header, then each record of a CSV file with the line it starts on, or a Problem.

    Yields ``(1, header)`` first (or one Problem and stops: empty file, unreadable or non-UTF-8
    header); then ``(line, cells)`` per record, where ``line`` is where the record starts
    (records may span lines). A record that is unreadable, not UTF-8 or has the wrong number
    of fields is a Problem on its starting line and reading goes on. Lines are decoded one by
    one (so a bad byte is pinned to its record), a UTF-8 BOM is dropped, empty records are
    skipped, and progress is reported in bytes. Shared by the CSV readers (generic, XSTest).
    """
    import csv

    consumed = 0
    bad: list[int] = []  # physical lines that were not UTF-8, ascending

    def lines(fh: Any) -> Iterator[str]:
        nonlocal consumed
        for number, raw in enumerate(fh, start=1):
            consumed += len(raw)
            if number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError:
                bad.append(number)
                yield raw.decode("utf-8", errors="replace")

    def bad_before(line: int) -> list[int]:
        found = [n for n in bad if n < line]
        del bad[: len(found)]
        return found

    with open(path, "rb") as fh:
        reader = csv.reader(lines(fh), delimiter=delimiter)
        try:
            header = next(reader)
        except StopIteration:
            yield Problem(1, "empty file: expected a header row")
            return
        except csv.Error as exc:
            yield Problem(1, f"unreadable CSV header ({exc})")
            return
        if bad:
            yield Problem(1, "the header is not valid UTF-8 text")
            return
        yield 1, header
        start = reader.line_num + 1
        rows = 0
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                yield Problem(start, f"unreadable CSV record ({exc})")
                start = reader.line_num + 1
                bad_before(start)
                continue
            line, start = start, reader.line_num + 1
            undecodable = bad_before(start)
            if undecodable:
                yield Problem(line, f"not valid UTF-8 text (line {undecodable[0]})")
                continue
            if not cells:
                continue
            rows += 1
            if rows % tick_every == 0:
                ctx.tick(consumed)
            if len(cells) != len(header):
                yield Problem(line, f"expected {len(header)} fields, found {len(cells)}")
                continue
            yield line, cells
    ctx.tick(consumed)


def object_field(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """``obj[key]`` when it is a JSON object, else an empty dict (a missing or malformed optional part)."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}
