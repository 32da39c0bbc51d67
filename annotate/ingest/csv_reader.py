"""The strict CSV reader the CSV formats share (generic, XSTest, StrongREJECT): records with the
lines they span, bounded before the csv module splits them.

A record may span at most ``MAX_RECORD_LINES`` lines and ``records.MAX_FIELD_BYTES`` bytes, and
hold at most ``MAX_CSV_FIELDS`` fields, counted from its delimiters before it is split (the csv
module builds a Python string for every field). See :func:`csv_records`.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

from annotate.ingest import records
from annotate.ingest.records import BOM, Problem, ReadContext, limit_text

#: A CSV record spanning more physical lines than this has lost its quoting: the file is refused.
#: (The longest record of the XSTest files spans 34 lines.)
MAX_RECORD_LINES = 1_000
#: The most fields one CSV record (the header too) may have: the csv module builds every field as a
#: Python string (about 60 bytes each besides its text), so a 64 MiB line of ``ab,ab,...`` would
#: otherwise become 22 million strings, some 1.3 GB. Tables have tens of columns (Excel: 16,384).
MAX_CSV_FIELDS = 100_000


class _LostPlace(Exception):
    """The CSV reader cannot tell where records begin any more (raised from the line feed)."""


class _TooLarge(Exception):
    """A CSV record over the bounds on its size or its fields (raised from the line feed, before it is parsed)."""


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
    never closed), a field or a record larger than ``records.MAX_FIELD_BYTES``, a record of more than
    ``MAX_CSV_FIELDS`` fields (counted from its delimiters before it is parsed), a record spanning more than
    ``MAX_RECORD_LINES`` lines, or a record spanning several lines with the wrong number of
    fields (the mark of a quote opened in one row and closed in another). Lines end with LF or
    CRLF, or with a bare CR (old Mac files: the first line end decides, ``_bare_cr``; a LF in an
    unquoted field of such a file is then a lost place, with a message on its mixed line ends).
    Lines are decoded one by one (so a bad byte is pinned to its record), a UTF-8 BOM is dropped,
    empty records are skipped, and progress is reported in bytes. Shared by the CSV readers
    (generic, XSTest).
    Problems carry ``end_line``, the record's last line.

    Note: the csv module's field limit is process-wide; it is set to ``records.MAX_FIELD_BYTES`` here.
    """
    import csv

    # JSONL lines and CSV fields have the same limit (the csv module's default is 128 Ki characters).
    csv.field_size_limit(records.MAX_FIELD_BYTES)
    consumed = 0
    bad: list[int] = []  # physical lines that were not UTF-8, ascending
    record_start = [1]  # the physical line where the record being read starts
    limit = records.MAX_FIELD_BYTES + 1

    sep = delimiter.encode("utf-8")

    def outside_quotes(raw: bytes, quoted: int) -> tuple[int, int]:
        """The delimiters of a line outside quotes, and whether its end is inside a quoted field."""
        parts = raw.split(b'"')
        return sum(part.count(sep) for part in parts[quoted::2]), (quoted + len(parts) - 1) & 1

    def lines(fh: Any, end: bytes) -> Iterator[str]:
        nonlocal consumed
        readline = fh.readline if end == b"\n" else _cr_line_reader(fh)
        number = 0
        # Of the record being read: its lines, bytes and fields. Fields are counted from the delimiters
        # before the csv module builds them (a string each): all of a line's (cheap, an upper bound),
        # and once that is over the bound, only those outside quotes (exact; kept up line by line).
        record: list[bytes] = []
        record_bytes = fields = 0
        quoted: int | None = None  # exact counting: whether the last line ended inside a quoted field
        while raw := readline(limit):
            number += 1
            consumed += len(raw)
            if len(raw) == limit and not raw.endswith(end):
                raise _LostPlace(f"line {number} is longer than {limit_text()}")
            if number == record_start[0]:
                record.clear()
                record_bytes, fields, quoted = 0, 1, None
            record.append(raw)
            record_bytes += len(raw)
            if record_bytes > records.MAX_FIELD_BYTES:
                raise _TooLarge(
                    f"the record (to line {number}) is longer than {limit_text()}, the longest record read: a quote "
                    "is probably not closed where it should be (a longer record can be ingested from Parquet)"
                )
            if quoted is not None:
                more, quoted = outside_quotes(raw, quoted)
                fields += more
            else:
                fields += raw.count(sep)
                if fields > MAX_CSV_FIELDS:
                    fields, quoted = 1, 0
                    for line in record:
                        more, quoted = outside_quotes(line, quoted)
                        fields += more
            if fields > MAX_CSV_FIELDS:
                raise _TooLarge(
                    f"the record (to line {number}) has more than {MAX_CSV_FIELDS:,} fields, counted from its "
                    "delimiters outside quotes before they are read, the most annotate reads in one record (each "
                    "becomes a string in memory): is the delimiter right?"
                )
            if number - record_start[0] >= MAX_RECORD_LINES:
                raise _LostPlace(
                    f"the record spans more than {MAX_RECORD_LINES:,} lines (to line {number}): a quote is "
                    "probably not closed where it should be; a field that really holds that many lines "
                    "can be ingested from JSONL"
                )
            if number == 1:
                raw = raw.removeprefix(BOM)
            try:
                yield raw.decode(ctx.text_encoding)
            except UnicodeDecodeError:
                bad.append(number)
                yield raw.decode(ctx.text_encoding, errors="replace")

    def bad_before(line: int) -> list[int]:
        found = [n for n in bad if n < line]
        del bad[: len(found)]
        return found

    def lost(line: int, reader: Any, what: str) -> Problem:
        end = max(reader.line_num, line)
        span = f"line {line}" if end == line else f"lines {line}-{end}"
        if bare_cr and "new-line" in what:
            what = (
                "a line feed in an unquoted field of a file whose lines end with a bare carriage return (old "
                "Mac line ends): its line ends are mixed; convert them to one kind, e.g. with dos2unix -c mac"
            )
        return Problem(
            line,
            f"the CSV cannot be read reliably from the record on {span} ({what}); nothing after it can be "
            "trusted, so the file is refused even with --skip-invalid. Fix the quoting (a field holding "
            'a quote must be quoted, with the quote doubled: "say ""hi"""), or write the file as JSONL',
            fatal=True,
            end_line=end,
        )

    with ctx.open(path) as fh:
        # Lines end with LF or CRLF, or (old Mac files) with a bare CR: the first line end decides.
        bare_cr = _bare_cr(os.pread(fh.fileno(), _CR_HEAD, 0))
        reader = csv.reader(lines(fh, b"\r" if bare_cr else b"\n"), delimiter=delimiter, strict=True)
        try:
            header = next(reader)
        except StopIteration:
            yield Problem(1, "empty file: expected a header row", fatal=True)
            return
        except (csv.Error, _LostPlace) as exc:
            yield Problem(1, f"unreadable CSV header ({exc})", fatal=True, end_line=reader.line_num)
            return
        except _TooLarge as exc:
            yield Problem(1, f"the CSV header is not read: {exc}", fatal=True, end_line=reader.line_num)
            return
        if bad:
            yield Problem(1, f"the header is {records.not_text(ctx)}", fatal=True)
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
            except _TooLarge as exc:
                yield Problem(
                    start,
                    f"{exc}; the file is refused (nothing after it can be read reliably), also with --skip-invalid",
                    fatal=True,
                    end_line=reader.line_num,
                )
                return
            line, start = start, reader.line_num + 1
            end = start - 1
            undecodable = bad_before(start)
            if undecodable:
                yield Problem(line, f"{records.not_text(ctx)} (line {undecodable[0]})", end_line=end)
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


#: The bytes of a CSV file that decide its line ends (``_bare_cr``).
_CR_HEAD = 64 * 1024


def _bare_cr(head: bytes) -> bool:
    r"""Whether a CSV file's lines end with a bare CR (classic Mac OS, old Excel for Mac): its first
    line end (in ``head``, its first bytes) is a CR not followed by a LF.

    >>> _bare_cr(b"a,b\rc,d\r"), _bare_cr(b"a,b\r\nc,d"), _bare_cr(b"a,b\nc\rd"), _bare_cr(b"a,b")
    (True, False, False, False)
    """
    cr, lf = head.find(b"\r"), head.find(b"\n")
    if cr < 0 or (0 <= lf < cr):
        return False
    return head[cr + 1 : cr + 2] != b"\n" and cr + 1 < len(head)


def _cr_line_reader(fh: Any, chunk: int = 1 << 20) -> Any:
    """A ``readline(limit)`` for a file whose lines end with a bare CR: each line with its CR (a
    line longer than ``limit`` comes in pieces of ``limit`` bytes, as ``readline`` gives them)."""
    buf = b""
    pos = 0

    def readline(limit: int) -> bytes:
        nonlocal buf, pos
        while True:
            i = buf.find(b"\r", pos, pos + limit)
            if i >= 0:
                line, pos = buf[pos : i + 1], i + 1
                return line
            if len(buf) - pos >= limit:
                line, pos = buf[pos : pos + limit], pos + limit
                return line
            more = fh.read(chunk)
            if not more:
                line, buf, pos = buf[pos:], b"", 0
                return line
            buf, pos = buf[pos:] + more, 0

    return readline
