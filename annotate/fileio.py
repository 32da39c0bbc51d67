"""Files the tool reads, writes and hashes: one sha256, one atomic write, one guarded read.

Base layer: standard library only (and the exception tree).
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from annotate.errors import InputError


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


# -- input files --------------------------------------------------------------------------------

_KINDS = (
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "is a named pipe (FIFO), not a regular file"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
    (stat.S_ISCHR, "is a character device, not a regular file"),
    (stat.S_ISBLK, "is a block device, not a regular file"),
)


def _not_regular(path: Path, mode: int) -> str:
    for test, what in _KINDS:
        if test(mode):
            if test is stat.S_ISDIR:
                return f"{path}: is a directory; pass the files in it instead (e.g. {path}/*.jsonl)"
            return f"{path}: {what}; pass a file saved on disk"
    return f"{path}: is not a regular file; pass a file saved on disk"


def _open_error(path: Path, exc: OSError) -> str:
    """The accurate message for a file that cannot be opened for reading."""
    if exc.errno == errno.ELOOP:
        return f"{path}: is a symbolic link loop (following it never reaches a file); fix or remove the link"
    if exc.errno == errno.ENOENT:
        try:
            target = os.readlink(path)
        except OSError:
            return f"{path}: no such file"
        return f"{path}: is a broken symbolic link (its target {target} does not exist); fix the link or pass the file"
    if exc.errno == errno.ENOTDIR:
        return f"{path}: no such file (a part of the path is not a folder)"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"{path}: permission denied; make the file readable (e.g. chmod u+r) or run as a user who can read it"
    return f"{path}: cannot be opened ({exc.strerror or exc})"


class _HashingRaw(io.RawIOBase):
    """A file descriptor read in order, with every byte read from offset 0 onwards hashed once.

    Bytes are hashed as they are read, as long as reads continue where hashing stopped; bytes
    read again after a seek backwards are not hashed twice, and bytes skipped by a seek forwards
    are hashed later by ``InputFile.finish``.
    """

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._file = io.FileIO(fd, "rb", closefd=True)
        self.hasher = hashlib.sha256()
        self.hashed = 0  # bytes [0, hashed) are in the digest
        self.pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self._file.readinto(buffer) or 0
        if n:
            start, end = self.pos, self.pos + n
            if start <= self.hashed < end:
                with memoryview(buffer) as view:
                    self.hasher.update(view[self.hashed - start : n])
                self.hashed = end
            self.pos = end
        return n

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self.pos = self._file.seek(offset, whence)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def fileno(self) -> int:
        return self._file.fileno()

    def close(self) -> None:
        self._file.close()
        super().close()


class InputFile:
    """An input file opened once for one complete read, with its sha256 taken from the bytes read.

    ``open_input`` refuses anything but a regular file with its own message (a symbolic link
    loop, a broken link, a FIFO, a directory, a device, a socket, an unreadable file), and opens
    a FIFO without blocking. ``stream`` reads the file in order and hashes every byte it reads,
    in the same pass. ``finish`` hashes whatever the reader left unread, checks that the file did
    not change while it was read, and returns the sha256 of the bytes read. "Did not change":
    the same size, modification time and change time (a writer can put the modification time
    back, not the change time; a chmod during the read refuses the file too) through the open
    descriptor before and after, the same file still at the path, and as many bytes hashed as
    the file had when it was opened.

    ``digest_whole`` hashes the whole file up front through the same handle and rewinds: for
    libraries that read out of order (ZIP, Parquet; ``verify=False``, so the file is then
    checked by size, times and identity only) and for callers that need the hash before
    parsing; a later in-order read hashes the bytes a second time and ``finish`` refuses the
    file unless both digests agree.
    """

    BUFFER = 1 << 20

    def __init__(self, path: Path, fd: int, before: os.stat_result) -> None:
        self.path = path
        self.before = before
        self.size = before.st_size
        self._raw = _HashingRaw(fd)
        self.stream = io.BufferedReader(self._raw, buffer_size=self.BUFFER)
        self.prehash: str | None = None
        self._prehashed = 0
        self.verify = True

    def __enter__(self) -> InputFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.stream.close()

    def head(self, n: int) -> bytes:
        """The first ``n`` bytes (fewer for a shorter file), without moving the read position."""
        fd = self._raw.fileno()
        parts: list[bytes] = []
        got = 0
        while got < n:
            chunk = os.pread(fd, n - got, got)
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def digest_whole(self, *, verify: bool = True) -> str:
        """The sha256 of the whole file, read through this handle; the stream is rewound to 0.

        With ``verify`` (for a reader that then reads the file in order), the next read is
        hashed again and ``finish`` compares the two digests.
        """
        if self.prehash is None:
            self.stream.seek(0)
            while self.stream.read(self.BUFFER):
                pass
            self.prehash = self._raw.hasher.hexdigest()
            self._prehashed = self._raw.hashed
            self._raw.hasher = hashlib.sha256()
            self._raw.hashed = 0
        self.verify = self.verify and verify
        self.stream.seek(0)
        return self.prehash

    def finish(self) -> str:
        """The sha256 of the file as read; InputError when the file changed while it was read."""
        raw = self._raw
        hashed_in_order = self.prehash is None or self.verify
        if hashed_in_order:
            fd = raw.fileno()
            while chunk := os.pread(fd, self.BUFFER, raw.hashed):
                raw.hasher.update(chunk)
                raw.hashed += len(chunk)
        after = os.fstat(raw.fileno())
        try:
            now: os.stat_result | None = os.stat(self.path)
        except OSError:
            now = None
        change = _change(self.before, after, now)
        counts = [raw.hashed] if hashed_in_order else []
        if self.prehash is not None:
            counts.append(self._prehashed)
        if change is None and any(n != self.size for n in counts):
            change = f"{min(counts):,} bytes could be read of the {self.size:,} it had when opened"
        digest = raw.hasher.hexdigest() if hashed_in_order else self.prehash
        if change is None and self.prehash is not None and digest != self.prehash:
            change = "two reads of it gave different bytes"
        if change is not None:
            raise InputError(
                f"{self.path}: the file changed while it was being read ({change}), so it was not used. "
                "Wait until the program writing it has finished, then run the command again."
            )
        assert digest is not None
        return digest


def _change(before: os.stat_result, after: os.stat_result, now: os.stat_result | None) -> str | None:
    """How the file changed between ``before`` and ``after`` (its descriptor) / ``now`` (its path)."""
    if after.st_size != before.st_size:
        return f"its size went from {before.st_size:,} to {after.st_size:,} bytes"
    if after.st_mtime_ns != before.st_mtime_ns:
        return "its modification time moved"
    # A writer can set the modification time back; the change time it cannot.
    if after.st_ctime_ns != before.st_ctime_ns:
        return "its status-change time moved"
    if now is None:
        return "it was removed"
    if (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
        return "it was replaced by another file"
    return None


def open_input(path: Path) -> InputFile:
    """Open a regular file for one hashed read (see ``InputFile``); InputError says why not."""
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOCTTY: a terminal device
        # must not become the controlling terminal. Both are cleared or moot for regular files.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(_open_error(path, exc)) from None
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise InputError(_not_regular(path, before.st_mode))
        os.set_blocking(fd, True)
        return InputFile(path, fd, before)
    except BaseException:
        os.close(fd)
        raise


# -- what interrupted writers left behind --------------------------------------------------------
def process_gone(pid: int, *, own: bool) -> bool:
    """Whether process ``pid`` has exited (so what it was writing is abandoned); ``own``: the answer for this process.

    A process that is alive under another user, or a pid that cannot be asked about, counts as
    alive: what it may be writing is left alone.
    """
    if pid == os.getpid():
        return own
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, OSError):
        return False
    return False


def foreign_contents(folder: Path, allowed: Callable[[str], bool], writer: str) -> str | None:
    """Why a writer's temporary ``folder`` is not provably its own, or None when it is.

    Its own holds nothing but regular files whose names ``allowed(name)`` accepts; ``writer``
    names the writer in the reason (``"export"``, ``"writeback"``).
    """
    try:
        foreign = [e for e in os.listdir(folder) if not allowed(e) or not stat.S_ISREG(os.lstat(folder / e).st_mode)]
    except OSError as exc:
        return f"cannot be read: {exc.strerror}"
    if foreign:
        return f"holds {', '.join(sorted(foreign)[:3])}, which no {writer} writes"
    return None
