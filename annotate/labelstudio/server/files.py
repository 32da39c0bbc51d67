"""The run-time files ``annotate`` keeps in a data dir: pid file, start lock and server log.

Names without an underscore that are not in ``__all__`` are for the other modules of this package.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from annotate.errors import LabelStudioError
from annotate.labelstudio.server.env import redact
from annotate.labelstudio.server.procnet import is_server_for, scan_servers_for
from annotate.labelstudio.server.secrets import write_private_file

__all__ = ["LOG_NAME", "PID_NAME"]

PID_NAME = "annotate-server.pid"
LOG_NAME = "server.log"
LOCK_NAME = ".annotate-start.lock"
_LOG_TAIL_LINES = 20
_LOG_ROTATE_BYTES = 10 * 1024 * 1024


def read_pidfile(data_dir: Path) -> dict[str, Any] | None:
    """Content of the pid file (``pid``, ``host``, ``port``, ``url``, ``exe``); None if absent or broken."""
    try:
        raw = json.loads((data_dir / PID_NAME).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("pid"), int):
        return None
    return raw


def write_pidfile(data_dir: Path, *, pid: int, host: str, port: int, url: str, exe: Path) -> None:
    """Record the server just started (0600, replaced atomically)."""
    write_private_file(
        data_dir / PID_NAME,
        json.dumps({"pid": pid, "host": host, "port": port, "url": url, "exe": str(exe)}).encode(),
        replace=True,
    )


def remove_pidfile(data_dir: Path, pid: int | None = None) -> None:
    """Delete the pid file; with ``pid``, only if it still names that pid."""
    info = read_pidfile(data_dir)
    if pid is not None and info is not None and info.get("pid") != pid:
        return  # another server's pid file; not ours to remove
    try:
        (data_dir / PID_NAME).unlink()
    except FileNotFoundError:
        pass


def running_server(data_dir: Path) -> tuple[int, str | None] | None:
    """(pid, url) of a live server on ``data_dir``, from the pid file or a /proc scan."""
    info = read_pidfile(data_dir)
    if info is not None and is_server_for(info["pid"], data_dir):
        return info["pid"], info.get("url")
    pids = scan_servers_for(data_dir)
    if pids:
        return pids[0], None
    return None


@contextmanager
def start_lock(data_dir: Path) -> Iterator[None]:
    """Serialise concurrent ``start_server`` calls on one data dir (two CLI invocations)."""
    import fcntl

    fd = os.open(data_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LabelStudioError(
                f"Another process is starting Label Studio on {data_dir} right now. "
                f"Wait for it, then check with the status command."
            ) from None
        yield
    finally:
        os.close(fd)  # releases the lock


def open_log(log_path: Path) -> tuple[int, int]:
    """Open ``server.log`` for appending (0600); return (fd, offset where this run starts)."""
    try:
        if log_path.stat().st_size > _LOG_ROTATE_BYTES:
            os.replace(log_path, log_path.with_name(log_path.name + ".1"))
    except FileNotFoundError:
        pass
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    offset = os.fstat(fd).st_size
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    os.write(fd, f"--- annotate: starting Label Studio at {stamp} ---\n".encode())
    return fd, offset


def log_tail(log_path: Path, offset: int, known: Iterable[str]) -> str:
    """The last lines this run wrote to the log, redacted, indented for an error message."""
    try:
        with open(log_path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(offset, size - 64 * 1024))
            text = f.read().decode(errors="replace")
    except OSError:
        return "    (the server log could not be read)"
    lines = [ln for ln in text.splitlines() if ln.strip()][-_LOG_TAIL_LINES:]
    if not lines:
        return "    (the server wrote nothing)"
    return "\n".join("    " + ln for ln in redact("\n".join(lines), known).splitlines())
