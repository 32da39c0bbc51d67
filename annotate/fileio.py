"""Files the tool writes and hashes: one sha256, one atomic write.

Base layer: standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file's bytes."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` (UTF-8) so that readers see the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> Path:
    """One JSON object per line, written atomically."""
    return write_atomic(path, "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows))
