"""Detached Ed25519 signatures of an export's manifest (the ``sign`` extra: the cryptography library).

``export --sign KEYFILE`` signs the bytes of ``manifest.json`` and writes the 64-byte signature to
``manifest.json.sig``; the manifest names the signing key by the sha256 of its 32 raw public
bytes. ``verify --key PUBFILE`` checks the signature. Since the manifest holds the sha256 of every
other file, one valid signature vouches for the whole export. The same check works without
annotate: ``openssl pkeyutl -verify -pubin -inkey PUBFILE -rawin -in manifest.json -sigfile
manifest.json.sig``.

Keys are read as the cryptography library reads them: a private key in PEM (PKCS#8, ``openssl
genpkey -algorithm ed25519``) or in OpenSSH format (``ssh-keygen -t ed25519``); as 32 raw bytes only
when asked for (``allow_raw``: any 32 bytes are a valid Ed25519 seed, so a raw *public* key passed by
mistake would sign, and anyone holding the public file could sign alike; a raw file equal to a public
key beside it is refused even then); a public key in PEM (``openssl pkey -pubout``), as an OpenSSH
``ssh-ed25519 ...`` line or as 32 raw bytes. Encrypted private keys are refused (the command line has
no passphrase prompt). Like ssh, a private key file that other users can read or write, or that
another user owns, is refused, and so is a public key file others can write; a key "file" that is
not a regular file (a named pipe, a device) is refused before it is read, so nothing ever blocks.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotate.errors import InputError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

SIGNATURE_FILE = "manifest.json.sig"
ALGORITHM = "Ed25519"
_MAX_KEY_BYTES = 64 * 1024  # a key file is a few hundred bytes; anything larger is not a key
INSTALL = "pip install 'annotate[sign]'"


def _library() -> Any:
    try:
        from cryptography.hazmat.primitives import serialization
    except ImportError:
        raise InputError(
            f"Signing and checking signatures need the cryptography library, which is not installed: {INSTALL} "
            "(or pip install cryptography)."
        ) from None
    return serialization


def _read_key(path: Path, what: str, *, private: bool) -> bytes:
    """The bytes of a key file: a regular file (never a FIFO or device), with ssh's ownership and mode
    rules (a private key's are checked once the file is known not to be a public key)."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # O_NONBLOCK: opening a FIFO never waits
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what} file.") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a folder; pass the {what} file.") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what} ({exc.strerror}).") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{path} is a folder; pass the {what} file.")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{path} is not a regular file (a named pipe or a device?); pass the {what} file.")
        mode = stat.S_IMODE(st.st_mode)
        if not private and mode & 0o022:
            raise InputError(
                f"{path} can be written by other users (mode {mode:o}), who could swap the key you check "
                f"against. Run: chmod go-w {path}"
            )
        data = os.read(fd, _MAX_KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > _MAX_KEY_BYTES:
        raise InputError(f"{path} is larger than any {what} file; pass the {what} itself.")
    if private:
        head = data.lstrip()
        if head.startswith(b"-----BEGIN PUBLIC KEY-----") or head.startswith(b"ssh-"):
            raise InputError(
                f"{path} is a public key, not a private key; --sign needs the private key ({HOW_TO_MAKE})."
            )
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            raise InputError(f"{path} belongs to another user; a signing key must be your own file.")
        if mode & 0o077:
            raise InputError(
                f"{path} can be read or written by other users (mode {mode:o}): anyone who can read it can sign as "
                f"you. Run: chmod 600 {path}"
            )
    return data


def _public_keys_beside(path: Path) -> list[bytes]:
    """The raw bytes of every public key readable beside ``path`` (``*.pub``, ``*.pub.pem``, ``*.pem``)."""
    serialization = _library()
    out = []
    folder = path.parent
    for candidate in sorted(folder.iterdir()) if folder.is_dir() else []:
        if candidate == path or not candidate.is_file() or candidate.stat().st_size > _MAX_KEY_BYTES:
            continue
        if not (candidate.name.endswith((".pub", ".pem")) or candidate.suffix == ""):
            continue
        try:
            key = load_public_key(candidate)
        except InputError:
            continue
        out.append(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))
    return out


HOW_TO_MAKE = (
    "make one with: openssl genpkey -algorithm ed25519 -out signing-key.pem && "
    "openssl pkey -in signing-key.pem -pubout -out signing-key.pub.pem"
)


def load_private_key(path: Path, *, allow_raw: bool = False) -> Ed25519PrivateKey:
    """The Ed25519 private key in ``path`` (PEM or OpenSSH; 32 raw bytes with ``allow_raw``), else ``InputError``."""
    serialization = _library()
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    data = _read_key(path, "private key", private=True)
    head = data.lstrip()
    if len(data) == 32 and not allow_raw:
        raise InputError(
            f"{path} is 32 raw bytes, which could be a private key or a raw public key (any 32 bytes would sign, "
            "and anyone with the public file could then sign alike). Use a PEM or OpenSSH private key, or pass "
            "--raw-key if this really is a raw private key."
        )
    if len(data) == 32 and data in _public_keys_beside(Path(path)):
        raise InputError(
            f"{path} holds the same 32 bytes as a public key beside it: that is the public key, not the private one."
        )
    try:
        if head.startswith(b"-----BEGIN OPENSSH PRIVATE KEY-----"):
            key = serialization.load_ssh_private_key(data, password=None)
        elif head.startswith(b"-----BEGIN"):
            key = serialization.load_pem_private_key(data, password=None)
        elif len(data) == 32:
            key = Ed25519PrivateKey.from_private_bytes(data)
        else:
            key = serialization.load_der_private_key(data, password=None)
    except TypeError:
        raise InputError(
            f"{path} is an encrypted private key; annotate cannot prompt for its passphrase. Sign with an "
            "unencrypted copy kept somewhere safe (openssl pkey -in KEY -out PLAIN.pem)."
        ) from None
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise InputError(f"{path} is not a private key in PEM, OpenSSH or raw form ({exc}); {HOW_TO_MAKE}.") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InputError(f"{path} holds a {type(key).__name__}; annotate signs with Ed25519 keys only: {HOW_TO_MAKE}.")
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    """The Ed25519 public key in ``path`` (PEM, ``ssh-ed25519`` line or 32 raw bytes); ``InputError`` otherwise."""
    serialization = _library()
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    data = _read_key(path, "public key", private=False)
    stripped = data.strip()
    if b"PRIVATE KEY-----" in stripped:
        raise InputError(
            f"{path} is a private key; pass the public key (openssl pkey -in {path} -pubout), and keep the "
            "private one to yourself."
        )
    try:
        if stripped.startswith(b"ssh-"):
            key = serialization.load_ssh_public_key(stripped)
        elif stripped.startswith(b"-----BEGIN"):
            key = serialization.load_pem_public_key(data)
        elif len(data) == 32:
            key = Ed25519PublicKey.from_public_bytes(data)
        else:
            key = serialization.load_der_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise InputError(f"{path} is not a public key in PEM, OpenSSH or raw form ({exc}).") from None
    if not isinstance(key, Ed25519PublicKey):
        raise InputError(f"{path} holds a {type(key).__name__}; annotate signatures are Ed25519.")
    return key


def fingerprint(key: Ed25519PublicKey) -> str:
    """The sha256 of the key's 32 raw public bytes (how a manifest names its signing key)."""
    serialization = _library()
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def sign(key: Ed25519PrivateKey, data: bytes) -> bytes:
    """The 64-byte Ed25519 signature of ``data``."""
    signature: bytes = key.sign(data)
    return signature


def signature_valid(key: Ed25519PublicKey, signature: bytes, data: bytes) -> bool:
    """Whether ``signature`` is ``key``'s signature of ``data``."""
    from cryptography.exceptions import InvalidSignature

    try:
        key.verify(signature, data)
    except InvalidSignature:
        return False
    return True
