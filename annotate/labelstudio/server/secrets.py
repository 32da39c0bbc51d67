"""The admin secrets file of a data dir (e-mail, password, legacy API token) and private atomic writes.

The file is JSON, mode 0600, and is written once: Label Studio applies the token only when it first
creates the admin, so the token stored here is the only one its database will ever accept.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets as _secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from annotate.errors import WorkspaceError

__all__ = [
    "DEFAULT_ADMIN_EMAIL",
    "SECRETS_NAME",
    "Secrets",
    "create_secrets",
    "DOOR_HEADER",
    "door_key",
    "is_valid_token",
    "read_secrets",
]

DEFAULT_ADMIN_EMAIL = "admin@annotate.local"
SECRETS_NAME = "annotate-secrets.json"
_SECRETS_FORMAT = 1
_TOKEN_RE = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Secrets:
    """Admin credentials of one data dir. ``repr()`` shows only the e-mail."""

    admin_email: str
    password: str = field(repr=False)
    token: str = field(repr=False)


#: The header a person's server requires on every request (``assets/annotate_door_settings.py``).
DOOR_HEADER = "X-Annotate-Door"


def door_key(token: str) -> str:
    """The value of ``DOOR_HEADER`` for the server whose admin token is ``token``.

    An HMAC of the token, so whoever may use the admin API (the lead's commands, the door) can reach
    the server, and nobody else: a reviewer never holds the token. Not the token itself, so the
    header never carries a credential of the API.

    >>> door_key("0" * 40) == door_key("0" * 40) != door_key("1" * 40)
    True
    """
    return hmac.new(token.encode(), b"annotate front door v1", hashlib.sha256).hexdigest()


def is_valid_token(token: object) -> bool:
    """True for exactly 40 lowercase hex characters (the format we generate).

    ``fullmatch`` rather than ``^...$``: ``$`` also matches before a trailing newline, and a token
    with ``\\n`` would end up in an HTTP header.
    """
    return isinstance(token, str) and _TOKEN_RE.fullmatch(token) is not None


def write_private_file(path: Path, data: bytes, *, replace: bool) -> None:
    """Write ``data`` to ``path`` with mode 0600, atomically.

    The file is created with ``O_CREAT|O_EXCL`` and mode 0600 (a temp name first), so it is never
    readable by others, whatever the umask, not even for an instant. ``replace=False`` publishes
    it with ``link()``, which fails if ``path`` already exists (no clobbering, race-free).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{_secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def create_secrets(path: Path, admin_email: str = DEFAULT_ADMIN_EMAIL) -> Secrets:
    """Generate admin credentials and store them in a new 0600 file at ``path``.

    Raises ``WorkspaceError`` if the file already exists: a token is applied only at the first
    start of a data dir, so silently replacing it would lock us out (401).
    """
    s = Secrets(
        admin_email=admin_email,
        password=_secrets.token_urlsafe(24),
        token=_secrets.token_hex(20),  # 40 hex chars; DRF's key column holds at most 40
    )
    payload = {
        "format": _SECRETS_FORMAT,
        "admin_email": s.admin_email,
        "admin_password": s.password,
        "token": s.token,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    try:
        write_private_file(path, (json.dumps(payload, indent=2) + "\n").encode(), replace=False)
    except FileExistsError:
        raise WorkspaceError(
            f"{path} already exists; refusing to overwrite it (its token is the only one the "
            f"Label Studio database accepts)."
        ) from None
    return s


def read_secrets(path: Path) -> Secrets:
    """Load and check the admin credentials stored at ``path``."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WorkspaceError(f"The Label Studio secrets file {path} does not exist.") from None
    except (OSError, ValueError) as e:
        raise WorkspaceError(
            f"The Label Studio secrets file {path} cannot be read ({type(e).__name__}). "
            f"Restore it from a backup of the workspace."
        ) from None
    if not isinstance(raw, dict) or not all(
        isinstance(raw.get(k), str) and raw.get(k) for k in ("admin_email", "admin_password")
    ):
        raise WorkspaceError(f"The Label Studio secrets file {path} is incomplete.")
    if not is_valid_token(raw.get("token")):
        raise WorkspaceError(
            f"The Label Studio secrets file {path} holds a malformed token (expected 40 lowercase hex characters)."
        )
    return Secrets(raw["admin_email"], raw["admin_password"], raw["token"])
