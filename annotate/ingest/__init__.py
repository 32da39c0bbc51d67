"""Reading benchmark output into the store under one rubric.

``FORMATS`` is the registry of readers (one module per format under ``annotate.ingest.formats``);
detection tries the tool-specific formats first and the generic schema last. ``run`` holds the
ingest of files: detect, validate, map verdicts, write in one transaction
(``ingest_paths``). ``records`` is what readers yield; ``rubric`` maps raw verdicts.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from annotate.errors import InputError

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


def detect_format(path: Path) -> str:
    with open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    for name in FORMATS:
        if reader_module(name).sniff(path, head):
            return name
    raise InputError(f"{path}: not a supported format. Supported formats (choose one with --format):\n{formats_help()}")
