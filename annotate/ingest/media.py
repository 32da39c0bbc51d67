"""An item's image, copied into the workspace (``media/``) under the sha256 of its bytes.

A table may name an image per response (the ``image`` field, ``--map image=COLUMN``): a path
relative to the table's own folder, or with ``ingest --fetch-images`` an ``http(s)`` URL. The image
is checked and copied once, content-addressed (``media/<sha256>.<ext>``), and the response stores
that name (``response.image``, part of its content identity). Reviewers see it in Label Studio
beside the prompt (``annotate.labelstudio.labelconfig``); exports keep it by its hash only.

What a hostile table cannot do with it, each refused on its row with the reason:

* read a file outside the table's folder: an absolute path, a ``..`` that leaves it, or a link
  that points out of it (the path is resolved first) — a results file must not be able to put a
  reviewer's private file on every reviewer's screen;
* pass anything but an image: the bytes must start as PNG, JPEG, GIF or WebP (an allow-list of
  four formats browsers draw; SVG, which can carry script, is not one of them);
* exhaust memory or disk: at most ``MAX_IMAGE_BYTES`` per image, read in bounded pieces;
* reach the network unasked: a URL is fetched only with ``--fetch-images``, over http(s) only,
  with a timeout, its redirects limited to http(s) as well.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

__all__ = ["BLANK_IMAGE", "MAX_IMAGE_BYTES", "MEDIA_TYPES", "ImageStore", "image_type", "image_uri"]

#: The largest image copied (bytes). Label Studio receives it inside the task (a data URI), and a
#: round's import must stay far below its 250 MB request limit.
MAX_IMAGE_BYTES = 5 * 1024 * 1024
#: The image formats accepted, by the bytes they start with: extension and media type.
MEDIA_TYPES = {"png": "image/png", "jpg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}
#: Seconds a URL may take to answer (``--fetch-images``).
FETCH_TIMEOUT = 20


#: What a task of a round that shows images carries for an item without one: a transparent pixel
#: (Label Studio refuses a task that lacks a variable of its config).
BLANK_IMAGE = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def image_uri(media_dir: Path, name: str | None) -> str:
    """The ``data:`` URI a task carries for an image stored as ``name`` (``BLANK_IMAGE`` for None).

    The bytes are checked again (an image changed in media/ since ingest is refused, not sent).
    """
    if name is None:
        return BLANK_IMAGE
    digest, _, ext = name.partition(".")
    data = (media_dir / name).read_bytes()
    if ext not in MEDIA_TYPES or hashlib.sha256(data).hexdigest() != digest or image_type(data[:16]) != ext:
        raise ValueError(f"media/{name} is not the image ingested under that name")
    return f"data:{MEDIA_TYPES[ext]};base64,{base64.b64encode(data).decode('ascii')}"


def image_type(head: bytes) -> str | None:
    """The extension of the image format the bytes start with, or None when it is not one of ``MEDIA_TYPES``.

    >>> image_type(b"\\x89PNG\\r\\n\\x1a\\n...."), image_type(b"\\xff\\xd8\\xff\\xe0"), image_type(b"<svg onload=...>")
    ('png', 'jpg', None)
    """
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None


class _HttpOnly(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to http(s) (never to file:, ftp: or data:)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # urllib's signature
        if not newurl.lower().startswith(("http://", "https://")):
            raise urllib.error.URLError(f"a redirect to {newurl[:60]!r}, not http(s)")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


@dataclass
class ImageStore:
    """Copies the images one ingest names into ``media_dir`` (once per reference), saying why one cannot be.

    ``copied`` counts the images written (new files), ``seen`` the distinct references.
    """

    media_dir: Path
    fetch: bool = False
    copied: int = 0
    _done: dict[tuple[str, str], tuple[str | None, str | None]] = field(default_factory=dict)

    @property
    def seen(self) -> int:
        return len(self._done)

    def add(self, ref: object, base: Path) -> tuple[str | None, str | None]:
        """(the stored name ``<sha256>.<ext>``, None), or (None, why the image cannot be used)."""
        if not isinstance(ref, str) or not ref.strip():
            return None, "field 'image' must be a path or URL (text)"
        key = (str(base), ref)
        if key not in self._done:
            self._done[key] = self._add(ref.strip(), base)
        return self._done[key]

    def _add(self, ref: str, base: Path) -> tuple[str | None, str | None]:
        if "://" in ref:
            data, problem = self._fetched(ref)
        else:
            data, problem = _read_beside(ref, base)
        if problem is not None or data is None:
            return None, f"image {ref[:120]!r}: {problem}"
        ext = image_type(data[:16])
        if ext is None:
            return None, f"image {ref[:120]!r}: not a PNG, JPEG, GIF or WebP image (by its first bytes)"
        name = f"{hashlib.sha256(data).hexdigest()}.{ext}"
        target = self.media_dir / name
        if not target.exists():
            self.media_dir.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{name}.tmp-{os.getpid()}")
            tmp.write_bytes(data)
            os.replace(tmp, target)
            self.copied += 1
        return name, None

    def _fetched(self, url: str) -> tuple[bytes | None, str | None]:
        if not url.lower().startswith(("http://", "https://")):
            return None, "only http and https URLs are fetched"
        if not self.fetch:
            return None, "a URL: pass --fetch-images to download the images into the workspace"
        opener = urllib.request.build_opener(_HttpOnly)
        try:
            with opener.open(
                urllib.request.Request(url, headers={"User-Agent": "annotate"}), timeout=FETCH_TIMEOUT
            ) as r:
                data = r.read(MAX_IMAGE_BYTES + 1)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            return None, f"could not be fetched ({str(getattr(exc, 'reason', exc))[:120]})"
        if len(data) > MAX_IMAGE_BYTES:
            return None, f"larger than {MAX_IMAGE_BYTES:,} bytes"
        return data, None


def _read_beside(ref: str, base: Path) -> tuple[bytes | None, str | None]:
    """The bytes of an image path relative to the table's folder ``base``, or why they cannot be read."""
    rel = PurePosixPath(ref.replace("\\", "/"))
    if rel.is_absolute() or (len(ref) > 1 and ref[1] == ":"):
        return None, "an absolute path: name images relative to the table's folder"
    root = base.resolve()
    try:
        path = (root / rel).resolve(strict=True)
    except (OSError, RuntimeError):
        return None, "no such file beside the table"
    if path != root and root not in path.parents:
        return None, "outside the table's folder (a '..' or a link leading out of it)"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        return None, f"cannot be opened ({exc.strerror})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, "not a regular file"
        if info.st_size > MAX_IMAGE_BYTES:
            return None, f"{info.st_size:,} bytes, larger than {MAX_IMAGE_BYTES:,}"
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_IMAGE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_IMAGE_BYTES:
        return None, f"larger than {MAX_IMAGE_BYTES:,} bytes"
    return data, None
