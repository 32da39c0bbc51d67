"""Signed exports: `export --sign KEYFILE` and `verify --key PUBFILE` (Ed25519, detached, issue #12)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from annotate.cli import cli
from tests.helpers import sqlite_only_db_url  # noqa: F401  (fixture: one SQLite store; the subject is not the store)
from tests.pipeline.test_export_spreadsheet import reviewed_workspace

serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")
ed25519 = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ed25519")


def _keys(tmp_path, stem: str, fmt: str):
    """An Ed25519 key pair written as ``fmt`` (pem / openssh / raw); returns (private, public) paths."""
    key = ed25519.Ed25519PrivateKey.generate()
    pub = key.public_key()
    if fmt == "pem":
        priv_bytes = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        pub_bytes = pub.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    elif fmt == "openssh":
        priv_bytes = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        )
        pub_bytes = pub.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    else:
        priv_bytes = key.private_bytes(
            serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
        )
        pub_bytes = pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    priv_path, pub_path = tmp_path / f"{stem}.key", tmp_path / f"{stem}.pub"
    priv_path.write_bytes(priv_bytes)
    priv_path.chmod(0o600)  # a private key readable by others is refused, as ssh refuses it
    pub_path.write_bytes(pub_bytes)
    pub_path.chmod(0o644)
    return priv_path, pub_path


@pytest.fixture
def reviewed(workspace, runner, tmp_path):
    ws, prefix = workspace
    reviewed_workspace(runner, prefix, ws, tmp_path, models=("m1", "m2"), benchmark="b", judge="j")
    return ws, prefix


def _export(runner, prefix, name, *extra):
    return runner.invoke(cli, [*prefix, "export", name, "--draws", "200", *extra])


@pytest.mark.parametrize("fmt", ["pem", "openssh", "raw"])
def test_a_signed_export_verifies_with_its_key_and_fails_with_any_other(reviewed, runner, tmp_path, fmt):
    ws, prefix = reviewed
    priv, pub = _keys(tmp_path, "signer", fmt)
    _, other_pub = _keys(tmp_path, "other", fmt)
    raw = ["--raw-key"] if fmt == "raw" else []
    made = _export(runner, prefix, "signed", "--sign", str(priv), *raw)
    assert made.exit_code == 0, (made.output, made.stderr)
    path = ws / "exports" / "signed"
    sig = (path / "manifest.json.sig").read_bytes()
    assert len(sig) == 64
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["signature"]["algorithm"] == "Ed25519" and "manifest.json.sig" not in manifest["files"]

    unchecked = json.loads(runner.invoke(cli, ["verify", str(path), "--json"]).output)
    signer = manifest["signature"]["public_key_sha256"]
    # Without a key the signature is not checked, and verify says so, naming the key by fingerprint.
    assert unchecked["ok"] and unchecked["signature"].startswith(f"signed by the key with sha256 {signer}; NOT checked")
    good = runner.invoke(cli, ["verify", str(path), "--key", str(pub)])
    assert good.exit_code == 0 and "signature valid" in good.output, (good.output, good.stderr)
    wrong = runner.invoke(cli, ["verify", str(path), "--key", str(other_pub)])
    assert wrong.exit_code == 1 and "does not match" in wrong.stderr
    if fmt != "pem":
        return  # the rest does not depend on the key's format

    # The manifest changed after signing (here: its creation time), every hash still right.
    edited = tmp_path / "edited"
    shutil.copytree(path, edited)
    manifest["created_at"] = "2020-01-01T00:00:00+00:00"
    (edited / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    out = runner.invoke(cli, ["verify", str(edited), "--key", str(pub)])
    assert out.exit_code == 1 and "does not match manifest.json" in out.stderr

    # The signature removed: with --key that is a failure, without it the manifest still says signed.
    stripped = tmp_path / "stripped"
    shutil.copytree(path, stripped)
    (stripped / "manifest.json.sig").unlink()
    out = runner.invoke(cli, ["verify", str(stripped), "--key", str(pub)])
    assert out.exit_code == 1 and "not signed" in out.stderr
    out = runner.invoke(cli, ["verify", str(stripped)])
    assert out.exit_code == 1 and "manifest.json says the export was signed" in out.stderr


def test_unsigned_exports_say_so_and_fail_when_a_key_is_given(reviewed, runner, tmp_path):
    ws, prefix = reviewed
    _, pub = _keys(tmp_path, "signer", "pem")
    assert _export(runner, prefix, "plain").exit_code == 0
    path = ws / "exports" / "plain"
    out = runner.invoke(cli, ["verify", str(path)])
    assert out.exit_code == 0 and "signature: not signed" in out.output
    out = runner.invoke(cli, ["verify", str(path), "--key", str(pub)])
    assert out.exit_code == 1 and "not signed: manifest.json.sig is missing" in out.stderr


def test_bad_signing_keys_are_refused_before_anything_is_written(reviewed, runner, tmp_path):
    from cryptography.hazmat.primitives.asymmetric import rsa

    ws, prefix = reviewed
    rsa_key = tmp_path / "rsa.pem"
    rsa_key.write_bytes(
        rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    encrypted = tmp_path / "encrypted.pem"
    encrypted.write_bytes(
        ed25519.Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a key")
    for path in (rsa_key, encrypted, garbage):
        path.chmod(0o600)
    _, pub = _keys(tmp_path, "signer", "pem")
    for key, says in (
        (rsa_key, "Ed25519 keys only"),
        (encrypted, "encrypted"),
        (garbage, "not a private key"),
        (tmp_path / "missing.pem", "no such private key file"),
        (pub, "not a private key"),
    ):
        out = _export(runner, prefix, "never", "--sign", str(key))
        assert out.exit_code == 2 and says in out.stderr, (key.name, out.stderr)
        assert not list((ws / "exports").iterdir()), key.name
    priv, _ = _keys(tmp_path, "x", "pem")
    out = runner.invoke(cli, ["verify", str(ws), "--key", str(priv)])
    assert out.exit_code == 2 and "is a private key" in out.stderr


def test_without_the_sign_extra_the_options_say_how_to_install_it(reviewed, runner, tmp_path, monkeypatch):
    ws, prefix = reviewed
    priv, pub = _keys(tmp_path, "signer", "pem")
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives", None)  # as if not installed
    out = _export(runner, prefix, "needs-extra", "--sign", str(priv))
    assert out.exit_code == 2 and "pip install 'annotate[sign]'" in out.stderr
    assert not (ws / "exports" / "needs-extra").exists()
    out = runner.invoke(cli, ["verify", str(ws / "exports"), "--key", str(pub)])
    assert out.exit_code == 2 and "pip install 'annotate[sign]'" in out.stderr


def test_openssl_checks_the_signature_too(reviewed, runner, tmp_path):
    """The tool-free check of docs/export-format.md: a detached raw Ed25519 signature openssl verifies."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    ws, prefix = reviewed
    priv, pub = _keys(tmp_path, "signer", "pem")
    assert _export(runner, prefix, "signed", "--sign", str(priv)).exit_code == 0
    path = ws / "exports" / "signed"
    cmd = [openssl, "pkeyutl", "-verify", "-pubin", "-inkey", str(pub), "-rawin"]
    out = subprocess.run(
        [*cmd, "-in", str(path / "manifest.json"), "-sigfile", str(path / "manifest.json.sig")],
        capture_output=True,
        text=True,
    )
    if "rawin" in out.stderr and out.returncode != 0:
        pytest.skip(f"this openssl cannot verify Ed25519 with -rawin: {out.stderr.strip()}")
    assert out.returncode == 0 and "Signature Verified Successfully" in out.stdout, out.stderr


def test_keys_are_handled_like_keys(reviewed, runner, tmp_path):
    """Issue #22: --sign takes private keys only (a raw 32-byte file only with --raw-key, never one
    equal to a public key beside it), refuses key files others can read or write, and never blocks
    on a named pipe; verify's --key refuses a public key file others can write."""
    import os

    ws, prefix = reviewed
    priv, pub = _keys(tmp_path, "raw-signer", "raw")
    out = _export(runner, prefix, "never", "--sign", str(priv))
    assert out.exit_code == 2 and "--raw-key" in out.stderr, out.stderr
    # The raw *public* key passed as the private one: any 32 bytes would sign, so it is refused.
    out = _export(runner, prefix, "never", "--sign", str(pub), "--raw-key")
    assert out.exit_code == 2, out.stderr
    pem, pem_pub = _keys(tmp_path, "loose", "pem")
    for mode in (0o644, 0o640, 0o602):
        pem.chmod(mode)
        out = _export(runner, prefix, "never", "--sign", str(pem))
        assert out.exit_code == 2 and "chmod 600" in out.stderr, (oct(mode), out.stderr)
    pem.chmod(0o600)
    pem_pub.chmod(0o666)
    fifo = tmp_path / "key.fifo"
    os.mkfifo(fifo)
    out = _export(runner, prefix, "never", "--sign", str(fifo))  # must return, not wait for a writer
    assert out.exit_code == 2 and "not a regular file" in out.stderr, out.stderr
    assert not list((ws / "exports").iterdir())
    assert _export(runner, prefix, "ok", "--sign", str(pem)).exit_code == 0
    out = runner.invoke(cli, ["verify", str(ws / "exports" / "ok"), "--key", str(pem_pub)])
    assert out.exit_code == 2 and "chmod go-w" in out.stderr, out.stderr
    out = runner.invoke(cli, ["verify", str(ws / "exports" / "ok"), "--key", str(fifo)])
    assert out.exit_code == 2 and "not a regular file" in out.stderr, out.stderr


def test_a_manifest_naming_a_key_twice_is_refused(reviewed, runner, tmp_path):
    """Duplicate keys in manifest.json (which value would a reader take?) fail verification."""
    ws, prefix = reviewed
    assert _export(runner, prefix, "dup").exit_code == 0
    path = ws / "exports" / "dup"
    text = (path / "manifest.json").read_text()
    (path / "manifest.json").write_text(text.replace('"schema": ', '"schema": "annotate-export/1", "schema": ', 1))
    out = runner.invoke(cli, ["verify", str(path)])
    assert out.exit_code == 1 and "appears twice" in out.stderr, out.stderr
