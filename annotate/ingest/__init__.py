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

import importlib
from pathlib import Path
from types import ModuleType

from annotate.errors import InputError
from annotate.fileio import open_input

# --format name -> module. Order = auto-detection order (generic last: it is the catch-all).
FORMATS: dict[str, str] = {
    "harmbench": "annotate.ingest.formats.harmbench",
    "jailbreakbench": "annotate.ingest.formats.jailbreakbench",
    "inspect": "annotate.ingest.formats.inspect_ai",
    "lm-eval": "annotate.ingest.formats.lm_eval",
    "promptfoo": "annotate.ingest.formats.promptfoo",
    "garak": "annotate.ingest.formats.garak",
    "xstest": "annotate.ingest.formats.xstest",
    "generic": "annotate.ingest.formats.generic",
}

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


def detect_format(path: Path, head: bytes, size: int) -> str:
    """The format whose sniffer claims the file (``head``: its first ``HEAD_BYTES``; ``size``: its length).

    When none does, the InputError says why as precisely as the head allows: an empty or blank
    file, or a first line longer than the head (the sniffers cannot see a whole record).
    """
    body = head.removeprefix(BOM)  # a UTF-8 BOM is allowed: the readers skip it too
    for name in FORMATS:
        try:
            claimed = reader_module(name).sniff(path, body)
        except (ValueError, RecursionError):  # a hostile head is not claimed, whatever the sniffer
            claimed = False
        if claimed:
            return name
    for name in FORMATS:
        # A reader may know a file of its tool that holds no results (an index, a bundle) and say so.
        explain = getattr(reader_module(name), "not_results", None)
        why = explain(path, body) if explain is not None else None
        if why:
            raise InputError(f"{path}: {why}")
    names = ", ".join(FORMATS)
    rest = body.lstrip(b" \t\r\n")
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
    raise InputError(
        f"{path}: not a supported format (no reader recognises it); pass --format with one of: {names} "
        "(annotate ingest --help says what each reads)"
    )


def claims(fmt: str, path: Path, head: bytes) -> bool:
    """True when the reader of ``fmt`` recognises the file (``head``: its first ``HEAD_BYTES``)."""
    try:
        return bool(reader_module(fmt).sniff(path, head.removeprefix(BOM)))
    except (ValueError, RecursionError):
        return False


def detect_file(path: Path, fmt: str = "auto") -> str:
    """The format of the file at ``path``: the reader that claims it (``fmt="auto"``), or ``fmt``
    itself when that reader claims it.

    Raises InputError saying why not: the file cannot be opened or is not a regular file, is
    empty or not UTF-8, or no reader (or not the reader of ``fmt``) recognises it.
    """
    with open_input(path) as source:
        head = source.head(HEAD_BYTES)
        size = source.size
    unreadable = encoding_problem(head, size)
    if unreadable is not None:
        raise InputError(f"{path}: {unreadable}")
    if fmt == "auto":
        return detect_format(path, head, size)
    if not claims(fmt, path, head):
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
