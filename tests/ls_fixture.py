"""A real Label Studio server for tests, started fast from a "golden" data dir.

A Label Studio start from scratch spends 40-100 s in Django migrations. So, once per machine and
Label Studio version, we start a server on a fresh data dir, stop it, and keep that migrated data
dir (with its admin secrets) under ``~/.cache/annotate-test/ls-golden-<version>-v<layout>``. Each
test session copies it (``start_server(seed_from=...)``) and is ready in seconds.

Use from ``tests/conftest.py``::

    from tests.ls_fixture import ls_server  # noqa: F401

and mark the tests that request it with ``@pytest.mark.labelstudio``.

Without a ``label-studio`` executable the tests are skipped, except when ``CI`` is set: CI must
run them, so there the missing executable is a failure. Set ``ANNOTATE_TEST_CACHE`` to move the
cache, ``ANNOTATE_LS_BIN`` to choose the executable.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import secrets
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from annotate.errors import LabelStudioError

# Aliased: the fixture below is called ls_server and would shadow the module name.
from annotate.labelstudio import server as lss
from annotate.labelstudio.server import files as lss_files
from annotate.labelstudio.server import fleet

#: Bump when the server package changes what a first start writes (org settings, admin, secrets
#: layout): old golden dirs are then ignored instead of silently reused.
GOLDEN_LAYOUT = 1
CACHE_ENV = "ANNOTATE_TEST_CACHE"

_golden: Path | None = None  # per process: the golden dir is resolved once per session


@dataclass(frozen=True)
class LSHandle:
    """A running test server. ``token`` is kept out of ``repr()`` so a failing assert cannot
    print it into CI logs."""

    url: str
    admin_email: str
    data_dir: Path
    pid: int
    port: int
    info: lss.ServerInfo
    token: str = field(repr=False)

    @property
    def headers(self) -> dict[str, str]:
        """Authorization header for raw httpx calls."""
        return {"Authorization": f"Token {self.token}"}


def label_studio_or_skip() -> Path:
    """The ``label-studio`` executable; skip the test without one (fail under ``CI``)."""
    try:
        return lss.find_label_studio()
    except LabelStudioError as e:
        if os.environ.get("CI"):
            pytest.fail(f"CI requires Label Studio for these tests: {e}", pytrace=False)
        pytest.skip(f"Label Studio not available: {e}")


def free_port() -> int:
    """A loopback port that was free a moment ago (start_server re-checks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cache_root() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "annotate-test"


def _golden_key(exe: Path) -> str:
    version = lss.label_studio_version(exe)
    if version is None:
        # Still one golden dir per installation, never shared across unknown versions.
        version = "unknown-" + hashlib.sha256(str(exe.resolve()).encode()).hexdigest()[:10]
    return f"ls-golden-{version}-v{GOLDEN_LAYOUT}"


def _usable(golden: Path) -> bool:
    return (golden / lss.SQLITE_NAME).is_file() and (golden / lss.SECRETS_NAME).is_file()


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    # Two pytest sessions (or xdist workers) on one machine must not migrate twice in parallel.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def golden_data_dir() -> Path:
    """The migrated golden data dir for the installed Label Studio, built on first use.

    Built in a temporary sibling and renamed into place, so an interrupted build never leaves a
    half-migrated directory under the final name.
    """
    global _golden
    if _golden is not None and _usable(_golden):
        return _golden
    exe = label_studio_or_skip()
    root = _cache_root()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = _golden_key(exe)
    golden = root / key
    if not _usable(golden):
        with _file_lock(root / f".{key}.lock"):
            if not _usable(golden):  # another session may have built it while we waited
                _build_golden(golden, exe)
    _golden = golden
    return golden


def _build_golden(golden: Path, exe: Path) -> None:
    tmp = golden.with_name(f".{golden.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        # Generous timeout: migrations took up to 100 s on a loaded 2-vCPU machine.
        lss.start_server(tmp, port=free_port(), timeout=900, executable=exe)
        lss.stop_server(tmp)
        for name in (lss.LOG_NAME, lss.PID_NAME, lss_files.LOCK_NAME):
            (tmp / name).unlink(missing_ok=True)
        shutil.rmtree(golden, ignore_errors=True)  # an unusable leftover
        os.rename(tmp, golden)
    finally:
        if tmp.exists():
            lss.stop_server(tmp)
            shutil.rmtree(tmp, ignore_errors=True)


def golden_template_dir() -> Path:
    """A migrated Label Studio data dir with no user, no organisation and no SECRET_KEY (what
    ``fleet.ensure_template`` builds in a workspace), built once per machine and version.

    Pass it as ``template_seed`` (``pipeline.ls.start``) or ``seed_from`` (the demo): each person's
    server then starts from a copy in seconds.
    """
    exe = label_studio_or_skip()
    root = _cache_root()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = _golden_key(exe).replace("ls-golden-", "ls-template-")
    template = root / key
    if not (template / lss.SQLITE_NAME).is_file():
        with _file_lock(root / f".{key}.lock"):
            if not (template / lss.SQLITE_NAME).is_file():
                tmp = template.with_name(f".{template.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
                try:
                    fleet.build_template(tmp, executable=exe)
                    shutil.rmtree(template, ignore_errors=True)
                    os.rename(tmp, template)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
    return template


@contextmanager
def running_server(base: Path, *, seed: Path | None = None) -> Iterator[LSHandle]:
    """Copy the golden dir to ``base/labelstudio``, serve it on a free loopback port, stop it
    on exit."""
    exe = label_studio_or_skip()
    seed = seed or golden_data_dir()
    data_dir = base / "labelstudio"
    for attempt in range(3):
        try:
            info = lss.start_server(data_dir, port=free_port(), seed_from=seed, timeout=300, executable=exe)
            break
        except lss.PortInUseError:
            # free_port() raced with another process; nothing was written, try another port.
            if attempt == 2:
                raise
    try:
        yield LSHandle(
            url=info.url,
            admin_email=info.admin_email,
            data_dir=info.data_dir,
            pid=info.pid,
            port=info.port,
            info=info,
            token=info.token(),
        )
    finally:
        lss.stop_server(data_dir)


@pytest.fixture(scope="session")
def ls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LSHandle]:
    """A Label Studio server shared by the whole test session (loopback, admin token)."""
    with running_server(tmp_path_factory.mktemp("labelstudio")) as handle:
        yield handle
