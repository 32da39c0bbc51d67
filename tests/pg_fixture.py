"""A real PostgreSQL server for the store tests.

Uses $ANNOTATE_TEST_PG_URL when set (a server you run; each test gets a fresh database in it).
Otherwise starts a throw-away cluster from the system's PostgreSQL binaries
(/usr/lib/postgresql/*/bin, or on PATH), listening on 127.0.0.1 only, for the test session.
Without a server the PostgreSQL tests are skipped, except under CI (CI=true), where they fail:
CI must never silently skip them.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest


def _pg_bin(name: str) -> str | None:
    for candidate in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return candidate
    return shutil.which(name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL tests cannot run in CI: {reason}")
    pytest.skip(f"no PostgreSQL server: {reason}")


class _Cluster:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="annotate-pg-"))
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.as_user: list[str] = []

    def start(self) -> str:
        initdb, postgres = _pg_bin("initdb"), _pg_bin("postgres")
        if not initdb or not postgres:
            _unavailable("initdb/postgres not found (apt-get install postgresql)")
        data = self.dir / "data"
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root: use the postgres account
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                _unavailable("running as root and there is no 'postgres' user")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        subprocess.run(
            self.as_user + [initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"],
            check=True,
            capture_output=True,
        )
        self.proc = subprocess.Popen(
            self.as_user
            + [
                postgres,
                "-D",
                str(data),
                "-p",
                str(self.port),
                "-k",
                str(self.dir),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self.dir / "server.log", "wb"),
        )
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                _unavailable(f"postgres exited: {(self.dir / 'server.log').read_text()[-500:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.2)
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server_url():
    url = os.environ.get("ANNOTATE_TEST_PG_URL")
    if url:
        yield url
        return
    cluster = _Cluster()
    try:
        url = cluster.start()
        # wait until it accepts queries, not only connections
        import psycopg

        deadline = time.time() + 30
        while True:
            try:
                psycopg.connect(url.replace("+psycopg", ""), connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if time.time() > deadline:
                    raise
                time.sleep(0.3)
        yield url
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_server_url):
    """A fresh, empty database on the test server, dropped afterwards."""
    import psycopg

    base = pg_server_url.replace("+psycopg", "")
    name = f"annotate_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    head, _ = pg_server_url.rsplit("/", 1)
    yield f"{head}/{name}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
