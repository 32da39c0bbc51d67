"""Reading benchmark output into the store under one rubric.

``FORMATS`` is the registry of readers (one module per format under ``annotate.ingest.formats``);
detection tries the tool-specific formats first and the generic schema last, on the file's
first ``HEAD_BYTES`` (a UTF-8 byte-order mark is allowed and skipped: Windows tools write one). ``run`` holds the
ingest of files: detect, validate, map verdicts, write in one transaction
(``ingest_paths``). ``records`` is what readers yield; ``rubric`` maps raw verdicts. ``detect_file`` says which
reader claims a file on disk (``annotate ingest DIR`` uses it to pick the results files of a
folder).
"""

from __future__ import annotations

import csv
import importlib
from pathlib import Path
from types import ModuleType

from annotate.errors import InputError
from annotate.fileio import open_input
from annotate.ingest.records import STRICT_JSON, file_kind_problem, json_array_problem, json_line_error

# --format name -> module. Order = auto-detection order (generic last: it is the catch-all).
FORMATS: dict[str, str] = {
    "harmbench": "annotate.ingest.formats.harmbench",
    "jailbreakbench": "annotate.ingest.formats.jailbreakbench",
    "jailbreakbench-judges": "annotate.ingest.formats.jbb_judges",
    "inspect": "annotate.ingest.formats.inspect_ai",
    "lm-eval": "annotate.ingest.formats.lm_eval",
    "promptfoo": "annotate.ingest.formats.promptfoo",
    "garak": "annotate.ingest.formats.garak",
    "xstest": "annotate.ingest.formats.xstest",
    "strongreject": "annotate.ingest.formats.strongreject",
    "ailuminate": "annotate.ingest.formats.ailuminate",
    "generic": "annotate.ingest.formats.generic",
}
#: The formats whose readers read tables through a column map (``ingest --map``).
TABLE_FORMATS = ("strongreject", "ailuminate", "generic")

HEAD_BYTES = 64 * 1024
BOM = b"\xef\xbb\xbf"
# UTF-32 first: its little-endian mark starts with UTF-16's.
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32LE"),
    (b"\x00\x00\xfe\xff", "UTF-32BE"),
    (b"\xff\xfe", "UTF-16LE"),
    (b"\xfe\xff", "UTF-16BE"),
)


def reader_module(fmt: str) -> ModuleType:
    try:
        return importlib.import_module(FORMATS[fmt])
    except KeyError:
        raise InputError(f"unknown format {fmt!r}; supported: {', '.join(FORMATS)} (or auto)") from None


def formats_help() -> str:
    lines = []
    for name in FORMATS:
        lines.append(f"  {name:15s} {reader_module(name).DESCRIPTION}")
    return "\n".join(lines)


def detect_format(path: Path, head: bytes, size: int, *, mapped: bool = False) -> str:
    """The format whose sniffer claims the file (``head``: its first ``HEAD_BYTES``; ``size``: its length).

    ``mapped``: a column map is in force for the file, so a table (CSV, TSV, JSONL, Parquet) that no
    sniffer claims is read as a generic table through it. When none claims the file, the
    InputError says why as precisely as the head allows: an empty or blank file, or a first line
    longer than the head (the sniffers cannot see a whole record).
    """
    body = head.removeprefix(BOM)  # a UTF-8 BOM is allowed: the readers skip it too
    for name in FORMATS:
        try:
            claimed = reader_module(name).sniff(path, body)
        except (ValueError, RecursionError, csv.Error):  # a hostile head is not claimed, whatever the sniffer
            claimed = False
        if claimed:
            return name
    if mapped and reader_module("generic").is_table(path):
        return "generic"
    for name in FORMATS:
        # A reader may know a file of its tool that holds no results (an index, a bundle) and say so.
        explain = getattr(reader_module(name), "not_results", None)
        why = explain(path, body) if explain is not None else None
        if why:
            raise InputError(f"{path}: {why}")
    names = ", ".join(FORMATS)
    rest = body.lstrip(b" \t\r\n")
    shape = json_shape_problem(path, rest, complete=size <= len(head))
    if shape is not None:
        raise InputError(f"{path}: {shape}")
    if not rest:
        if size <= len(head):
            raise InputError(f"{path}: the file holds only blank lines; there is nothing to ingest")
        raise InputError(
            f"{path}: the format cannot be detected: the first {HEAD_BYTES // 1024} KiB are blank; "
            f"pass --format (one of: {names})"
        )
    if size > len(head) and b"\n" not in rest:
        raise InputError(
            f"{path}: the format cannot be detected: the first line is longer than the "
            f"{HEAD_BYTES // 1024} KiB read to recognise it; pass --format (one of: {names})"
        )
    table = (
        "; or, for a table of your own, map its columns to the generic schema's fields with --map FIELD=COLUMN"
        if reader_module("generic").is_table(path)
        else ""
    )
    raise InputError(
        f"{path}: not a supported format (no reader recognises it); pass --format with one of: {names} "
        f"(annotate ingest --help says what each reads){table}"
    )


#: The names of JSON files: JSON Lines (one object per line) and whole documents.
_JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.txt")


def json_shape_problem(path: Path, rest: bytes, *, complete: bool) -> str | None:
    """What is wrong with a JSON file that no reader claims, when its first bytes say so (else None).

    ``rest`` is the head without its BOM and leading blanks; ``complete``: it is the whole file.
    A JSON array (``[``) in a ``.jsonl`` or ``.json`` file is not JSON Lines; a ``.jsonl`` file
    whose first line is not JSON says which error (and, for its only line, that it looks
    truncated): a reader's sniffer cannot recognise what it cannot parse.
    """
    name = path.name.lower()
    lines = name.endswith(_JSONL_SUFFIXES)
    if not (lines or name.endswith(".json")) or not rest:
        return None
    first, newline, after = rest.partition(b"\n")
    if rest.startswith(b"["):
        return json_array_problem(first if lines else rest)
    if not lines or not rest.startswith(b"{") or not (newline or complete):
        return None  # not JSON Lines, or a first line longer than the head (said below)
    try:
        STRICT_JSON.decode(first.decode("utf-8"))
    except UnicodeDecodeError:
        return None  # the reader says which byte
    except (ValueError, RecursionError) as exc:
        last = complete and not after.strip(b" \t\r\n")
        if not isinstance(exc, ValueError):
            return None
        why = json_line_error(first + newline, exc, last=last and not newline)
        return f"the format cannot be detected: its first line is {why}"
    return None


def claims(fmt: str, path: Path, head: bytes, *, mapped: bool = False) -> bool:
    """True when the reader of ``fmt`` recognises the file (``head``: its first ``HEAD_BYTES``), or
    reads it as a table through the column map in force (``mapped``)."""
    if mapped and fmt == "generic" and reader_module("generic").is_table(path):
        return True
    try:
        return bool(reader_module(fmt).sniff(path, head.removeprefix(BOM)))
    except (ValueError, RecursionError, csv.Error):
        return False


def detect_file(path: Path, fmt: str = "auto", *, mapped: bool = False) -> str:
    """The format of the file at ``path``: the reader that claims it (``fmt="auto"``), or ``fmt``
    itself when that reader claims it.

    Raises InputError saying why not: the file cannot be opened or is not a regular file (a FIFO
    or a device is never opened: ``os.stat`` says what it is first), is empty or not UTF-8, or no
    reader (or not the reader of ``fmt``) recognises it. ``mapped``: a column map is in force for
    the file (``detect_format``).
    """
    kind = file_kind_problem(path)
    if kind is not None:
        raise InputError(f"{path}: {kind}")
    with open_input(path) as source:
        head = source.head(HEAD_BYTES)
        size = source.size
    unreadable = encoding_problem(head, size)
    if unreadable is not None:
        raise InputError(f"{path}: {unreadable}")
    if fmt == "auto":
        return detect_format(path, head, size, mapped=mapped)
    if not claims(fmt, path, head, mapped=mapped):
        raise InputError(f"{path}: not a {fmt} file (its reader does not recognise it)")
    return fmt


def encoding_problem(head: bytes, size: int) -> str | None:
    """Why a file cannot be read at all, judged from its first bytes: empty, or not UTF-8 (a UTF-16/32 BOM)."""
    if size == 0:
        return "the file is empty (0 bytes); there is nothing to ingest. Check that it was written completely"
    for bom, encoding in _WIDE_BOMS:
        if head.startswith(bom):
            return (
                f"the file is {encoding} text (it starts with a {encoding} byte-order mark) and annotate reads "
                f"UTF-8; convert it first, e.g. iconv -f {encoding} -t UTF-8 FILE > FILE.utf8"
            )
    return None
