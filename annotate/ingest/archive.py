"""Members of a ZIP archive (Inspect's ``.eval`` logs), read against a byte budget.

A member is decompressed in steps of at most ``_CHUNK`` bytes against the size it declares, which
may be at most ``MAX_MEMBER_BYTES``: a decompression bomb is refused at its bound, not after its
bytes are allocated. Only the ZIP methods Inspect writes are read (stored, Deflate, Zstandard);
the last member of a name is the one that counts, as in Inspect's own reader; a name outside the
archive's root is refused. Used by the Inspect reader (``annotate.ingest.formats.inspect_ai``)
and by ``annotate writeback``, which checks a copy as ingest reads it.
"""

from __future__ import annotations

import re
import struct
import sys
import zipfile
import zlib
from collections.abc import Iterator
from typing import IO, cast

__all__ = ["MAX_MEMBER_BYTES", "ZIP_METHODS", "ZIP_ZSTANDARD", "archive_members", "member_bytes", "member_name_problem"]

MAX_MEMBER_BYTES = 512 * 1024 * 1024  # one sample, uncompressed: a bound for a hostile archive
ZIP_ZSTANDARD = 93
#: The ZIP methods Inspect writes (stored, Deflate, Zstandard); any other member is refused.
ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, ZIP_ZSTANDARD)
_DRIVE = re.compile(r"[A-Za-z]:")
_CHUNK = 1 << 20  # decompressed bytes produced per step: the most a member costs beyond its budget
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zipfile's own layout of a member's local header


def archive_members(archive: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo] | str:
    """The members as Inspect reads them (one per name, the last entry, in the place of the first), or why not.

    A member whose name leads outside the archive root refuses the archive (the message, a ``str``).
    Shared by the reader and ``annotate writeback``, which checks the copy it hands to Inspect.
    """
    members: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        problem = member_name_problem(info.filename)
        if problem is not None:
            return problem
        members[info.filename] = info
    return members


def member_name_problem(name: str) -> str | None:
    """Why a member name is refused (absolute, a drive, a ``..`` part with either separator, a NUL), or None.

    (Inspect names a sample ``samples/<id>_epoch_<n>.json`` with the id as it is, so a backslash
    alone is allowed; one that makes a ``..`` part is not.)
    """
    parts = re.split(r"[/\\]", name)
    if not name or "\x00" in name or name.startswith(("/", "\\")) or _DRIVE.match(name) or ".." in parts:
        return (
            f"the archive holds a member named {name!r}, which leads outside the archive root, so the archive is "
            "refused (if a sample id made that name, convert the log to JSON and ingest that: inspect log convert "
            "--to json --output-dir DIR FILE)"
        )
    return None


def member_bytes(archive: zipfile.ZipFile, fh: IO[bytes], info: zipfile.ZipInfo, *, keep: bool = True) -> bytes | str:
    """A member's bytes, decompressed against its byte budget, or why it cannot be read (a ``str``).

    The budget is the size the member declares, which may be at most ``MAX_MEMBER_BYTES``: a
    member that declares more is refused before anything is decompressed, and one that expands
    beyond its declaration is refused as soon as it does (at most ``_CHUNK`` bytes later), never
    after the bytes are allocated. Its CRC-32 and size are checked. ``keep=False`` checks the
    member without keeping its bytes (``annotate writeback`` checks a copy before Inspect reads it).
    """
    limit = f"{MAX_MEMBER_BYTES // 2**20} MiB"
    if info.file_size > MAX_MEMBER_BYTES:
        return f"larger than {limit} uncompressed (it declares {info.file_size:,} bytes)"
    if info.compress_type not in ZIP_METHODS:
        return (
            f"compressed with ZIP method {info.compress_type}, which Inspect never writes (it writes Deflate or "
            "Zstandard); convert the log to JSON (inspect log convert --to json --output-dir DIR FILE) and "
            "ingest that"
        )
    if info.flag_bits & 0x1:
        return "encrypted, which Inspect never writes"
    chunks: list[bytes] = []
    total = 0
    try:
        for chunk in _decompressed(archive, fh, info):
            total += len(chunk)
            if total > info.file_size:
                return (
                    f"expands beyond the {info.file_size:,} bytes it declares uncompressed (a decompression bomb, "
                    "or a damaged archive); refused before reading further"
                )
            if keep:
                chunks.append(chunk)
    except _ZstdUnavailable:
        return (
            "compressed with Zstandard (ZIP method 93, as Inspect writes logs since late 2025), which this Python "
            "cannot read without the zstandard package: pip install zstandard, or convert the log to JSON "
            "(inspect log convert --to json --output-dir DIR FILE) and ingest that"
        )
    except NotImplementedError:
        return (
            f"compressed with a method this Python cannot read (ZIP method {info.compress_type}); convert the "
            "log to JSON (inspect log convert --to json --output-dir DIR FILE) and ingest that"
        )
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, RuntimeError) as exc:  # e.g. a bad CRC
        return f"unreadable ({exc})"
    if total != info.file_size:
        return f"unreadable ({total:,} bytes where the archive says {info.file_size:,})"
    return b"".join(chunks)


def _decompressed(archive: zipfile.ZipFile, fh: IO[bytes], info: zipfile.ZipInfo) -> Iterator[bytes]:
    """A member's uncompressed bytes, at most ``_CHUNK`` at a time (zipfile checks the CRC of its own)."""
    if info.compress_type == ZIP_ZSTANDARD:
        zstd = _zstd_reader(fh, info)
        if zstd is not None:
            yield from zstd
            return
        if sys.version_info < (3, 14):
            raise _ZstdUnavailable()
    with archive.open(info) as member:
        while chunk := member.read(_CHUNK):
            yield chunk


class _ZstdUnavailable(Exception):
    """No Zstandard decoder in this Python (neither 3.14's nor the zstandard package)."""


class _Compressed:
    """The compressed bytes of one member, read from the archive in pieces (for a streaming decoder)."""

    def __init__(self, fh: IO[bytes], offset: int, size: int) -> None:
        self._fh, self._pos, self._left = fh, offset, size

    def read(self, n: int = -1) -> bytes:
        n = self._left if n is None or n < 0 else min(n, self._left)
        if n <= 0:
            return b""
        self._fh.seek(self._pos)
        data = self._fh.read(n)
        if not data:
            raise zipfile.BadZipFile("the member is truncated")
        self._pos += len(data)
        self._left -= len(data)
        return data


def _zstd_reader(fh: IO[bytes], info: zipfile.ZipInfo) -> Iterator[bytes] | None:
    """A Zstandard member decompressed in chunks with the zstandard package (None without it).

    zipfile cannot decompress method 93 before Python 3.14, so the member's compressed bytes are
    read at the offset its local header gives and streamed through the decoder; its CRC-32 is
    checked at the end. (The caller stops it as soon as it passes the member's budget.)
    """
    try:
        import zstandard
    except ImportError:
        return None

    def chunks() -> Iterator[bytes]:
        fh.seek(info.header_offset)
        local = fh.read(_LOCAL_HEADER.size)
        if len(local) != _LOCAL_HEADER.size or local[:4] != b"PK\x03\x04":
            raise zipfile.BadZipFile(f"bad local header for {info.filename!r}")
        fields = _LOCAL_HEADER.unpack(local)
        offset = info.header_offset + _LOCAL_HEADER.size + fields[10] + fields[11]  # name and extra field lengths
        source = _Compressed(fh, offset, info.compress_size)
        crc = 0
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(
                cast(IO[bytes], source), read_size=_CHUNK, read_across_frames=True
            )
            while chunk := reader.read(_CHUNK):
                crc = zlib.crc32(chunk, crc)
                yield chunk
        except zstandard.ZstdError as exc:
            raise zipfile.BadZipFile(f"{info.filename!r}: not valid Zstandard data ({exc})") from None
        if crc != info.CRC:
            raise zipfile.BadZipFile(f"bad CRC-32 for file {info.filename!r}")

    return chunks()


def _read_zstd_member(fh: IO[bytes], info: zipfile.ZipInfo) -> bytes:
    """A Zstandard member's bytes, checked against its budget, CRC-32 and size (``member_bytes``'s path)."""
    chunks = _zstd_reader(fh, info)
    if chunks is None:
        raise _ZstdUnavailable()
    out: list[bytes] = []
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > min(info.file_size, MAX_MEMBER_BYTES):
            raise zipfile.BadZipFile(f"{info.filename!r} expands beyond the {info.file_size:,} bytes it declares")
        out.append(chunk)
    if total != info.file_size:
        raise zipfile.BadZipFile(f"{info.filename!r}: {total:,} bytes where the archive says {info.file_size:,}")
    return b"".join(out)
