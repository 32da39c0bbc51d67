"""Engines, timestamps, the two raw-DBAPI helpers every component shares, and the store's locks.

Two databases are supported: SQLite (a file, WAL mode) and PostgreSQL through psycopg 3
(``postgresql://`` is taken as ``postgresql+psycopg://``). ``check_url`` refuses any other URL
before anything is created.

A SQLite store is private: its file is created 0600 before SQLite opens it (SQLite gives the
``-wal`` and ``-shm`` files the main file's mode) and the folders created for it 0700.

Writers wait for each other, then give up with one clear error. On SQLite a transaction takes
the database's one write lock with ``BEGIN IMMEDIATE`` just before its first write, at the one
point where a wait can be announced (``notify``) and bounded (``busy_timeout``); a deferred
``BEGIN`` could fail mid-transaction without waiting (WAL mode's ``SQLITE_BUSY_SNAPSHOT``). Reads
run outside transactions, so they never wait for writers. The lock is SQLite's own, shared with
every process that opens the file and released by a crash; a workspace lock held for a whole
command would also block the minutes route and pull spend talking to Label Studio, and would
need every command to declare itself a writer. On PostgreSQL, ``lock_timeout`` bounds a writer's
wait for row and table locks.

Past the timeout, busy and lock errors (and serialization failures and deadlocks) become
``StoreError(BUSY_MESSAGE)``; a unique key that another command wrote at the same moment
becomes a ``StateError`` (``store_error``). Both are raised from SQLAlchemy's ``handle_error``
event and from ``translating()`` around the raw-DBAPI paths.

Bulk writes go through the raw DBAPI cursor's ``executemany`` (SQLAlchemy Core's executemany is
3-4x slower on these paths; docs/performance.md), reads come back as DataFrames built from
plain tuples.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import Table, create_engine, event, text
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from annotate.config import DEFAULT_BUSY_TIMEOUT, ensure_private_dir, redact_url
from annotate.errors import AnnotateError, InputError, StateError, StoreError

Notify = Callable[[str], None]

BUSY_MESSAGE = "the store is busy (another annotate command is writing); try again"
WAITING_MESSAGE = "waiting for another annotate command to finish writing..."
SUPPORTED = (
    "annotate stores its data in SQLite (a file path, or sqlite:///PATH) or in PostgreSQL "
    "(postgresql+psycopg://USER@HOST/DB, with the postgres extra: pip install -e '.[postgres]' in a "
    "checkout, or pip install 'psycopg[binary]')"
)
# A writer that gets the lock within this long is not announced.
_QUIET_WAIT = 0.25


def utcnow() -> datetime:
    return datetime.now(UTC)


def db_timestamp(dialect: str, when: datetime) -> Any:
    """A timestamp as the raw DBAPI path must pass it (SQLAlchemy's SQLite text format)."""
    if dialect == "sqlite":
        return when.strftime("%Y-%m-%d %H:%M:%S.%f")
    return when


# -- URLs -----------------------------------------------------------------------------------------
def check_url(url: str) -> URL:
    """The parsed URL of a supported database; InputError naming the supported ones for any other.

    Creates nothing: commands call it before they write anything.
    """
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        raise InputError(f"{redact_url(url)!r} is not a database URL. {SUPPORTED}.") from None
    # From the name alone: loading an unknown dialect to ask it fails with its own traceback.
    backend, _, driver = parsed.drivername.partition("+")
    if backend == "sqlite" and driver in ("", "pysqlite"):
        return parsed
    if backend == "postgresql" and driver in ("", "psycopg"):
        try:
            import psycopg  # noqa: F401  (the driver SQLAlchemy will load)
        except ImportError as exc:
            raise StoreError(
                f"PostgreSQL needs the psycopg driver, which cannot be imported ({exc}). "
                "Install the postgres extra (pip install -e '.[postgres]' in a checkout, or "
                "pip install 'psycopg[binary]'), then run the command again."
            ) from None
        return parsed.set(drivername="postgresql+psycopg")
    raise InputError(
        f"unsupported database URL {redact_url(url)!r}: {SUPPORTED}. Pass one of those with --db, "
        "ANNOTATE_DB or [store] url in annotate.toml."
    )


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (None for another database or an in-memory one)."""
    parsed = make_url(url)
    if parsed.drivername.partition("+")[0] != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database).expanduser().absolute()


def store_files(url: str) -> list[Path]:
    """The files of a SQLite store: the database and its -wal and -shm files (existing or not)."""
    path = sqlite_path(url)
    if path is None:
        return []
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def _create_private_file(path: Path) -> None:
    """Create an empty store file with mode 0600 (SQLite takes an empty file for a new database)."""
    ensure_private_dir(path.parent)
    try:
        # O_EXCL: never follows a symlink, never touches an existing file.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # an existing store keeps its mode (the session warns when it is open to others)
    except OSError as exc:
        raise StoreError(f"cannot create the database {path}: {exc.strerror}. Choose another --db.") from None
    try:
        os.fchmod(fd, 0o600)  # the umask may have narrowed it below what SQLite needs
    finally:
        os.close(fd)


# -- errors ---------------------------------------------------------------------------------------
_RECORDS = {
    "review_round": "round",
    "round_wave": "round wave",
    "round_stratum": "round design",
    "round_item": "round items",
    "ls_project": "Label Studio project",
    "ls_task": "tasks",
    "annotation": "annotations",
    "quarantine": "quarantined results",
    "annotator": "annotator",
    "escalation": "escalations",
    "response": "responses",
    "source_file": "source file",
    "schema_version": "schema version",
}


def _concurrent_write(table: str | None, detail: str) -> StateError:
    what = _RECORDS.get(table or "", "records")
    return StateError(
        f"another annotate command wrote the same {what} at the same time ({detail}), so this change "
        "was not saved; run the command again: it continues from what the store holds."
    )


def store_error(exc: BaseException) -> AnnotateError | None:
    """The user's error for a database exception that concurrency explains; None for any other.

    Busy and locked (SQLite), lock timeouts, serialization failures and deadlocks (PostgreSQL):
    ``StoreError(BUSY_MESSAGE)``. A unique key written by another command at the same moment: a
    ``StateError``. Takes SQLAlchemy's exceptions and the drivers' own (raw DBAPI paths).
    """
    orig: BaseException = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    if isinstance(orig, sqlite3.Error):
        message = str(orig)
        code = getattr(orig, "sqlite_errorcode", None)
        if (code is not None and code & 0xFF in (5, 6)) or message.startswith(
            ("database is locked", "database table is locked", "database is busy")
        ):
            return StoreError(BUSY_MESSAGE)
        if isinstance(orig, sqlite3.IntegrityError) and message.startswith("UNIQUE constraint failed"):
            table = re.match(r"UNIQUE constraint failed: (\w+)\.", message)
            return _concurrent_write(table.group(1) if table else None, message)
        return None
    sqlstate = getattr(orig, "sqlstate", None)  # psycopg
    if sqlstate in ("55P03", "40001", "40P01"):  # lock_not_available, serialization_failure, deadlock
        return StoreError(BUSY_MESSAGE)
    if sqlstate == "23505":  # unique_violation
        diag = getattr(orig, "diag", None)
        table = getattr(diag, "table_name", None)
        constraint = getattr(diag, "constraint_name", None) or "a unique key"
        return _concurrent_write(table, f"{constraint} already exists")
    return None


@contextmanager
def translating() -> Iterator[None]:
    """Raise ``store_error``'s error in place of a database exception it explains."""
    try:
        yield
    except AnnotateError:
        raise
    except Exception as exc:
        error = store_error(exc)
        if error is None:
            raise
        raise error from None


def _on_error(context: Any) -> None:
    error = store_error(context.original_exception)
    if error is not None:
        raise error


# -- engines --------------------------------------------------------------------------------------
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER")
_GATE = "annotate.write_gate"  # key of the gate in each DBAPI connection's pool record


class _SQLiteWrites:
    """Takes SQLite's write lock with ``BEGIN IMMEDIATE`` before a transaction's first write.

    Statements run in the driver's autocommit mode until then, so reads never wait for writers
    (as before). The first write statement of a transaction (seen in ``before_cursor_execute``,
    or announced by ``begin_write`` on the raw-DBAPI paths) begins it: after a short quiet wait a
    waiting writer says so once through ``notify``, and past the timeout it gets
    ``StoreError(BUSY_MESSAGE)``. A raw-DBAPI write that nobody announced still begins
    immediately, through the driver (``isolation_level``), and is bounded by ``busy_timeout``.
    """

    def __init__(self, busy_timeout: float, notify: Notify | None) -> None:
        self.timeout_ms = int(busy_timeout * 1000)
        self.notify = notify
        self.announced = False

    def attach(self, engine: Engine) -> None:
        event.listen(engine, "connect", self.on_connect)
        event.listen(engine, "before_cursor_execute", self.before_cursor_execute)

    def on_connect(self, dbapi_conn: Any, record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={self.timeout_ms}")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()
        dbapi_conn.isolation_level = "IMMEDIATE"
        record.info[_GATE] = self

    def before_cursor_execute(self, conn: Connection, _cursor: Any, statement: str, *_args: Any) -> None:
        words = statement.split(None, 1)
        if words and words[0].upper() in _WRITES:
            self.begin_write(conn.connection.driver_connection)

    def begin_write(self, dbapi_conn: Any) -> None:
        if dbapi_conn.in_transaction:
            return
        quiet_ms = min(int(_QUIET_WAIT * 1000), self.timeout_ms)
        dbapi_conn.execute(f"PRAGMA busy_timeout={quiet_ms}")
        try:
            if self._try_begin(dbapi_conn):
                return
            if self.timeout_ms > quiet_ms:
                if self.notify is not None and not self.announced:
                    self.announced = True
                    self.notify(WAITING_MESSAGE)
                dbapi_conn.execute(f"PRAGMA busy_timeout={self.timeout_ms - quiet_ms}")
                if self._try_begin(dbapi_conn):
                    return
            raise StoreError(BUSY_MESSAGE)
        finally:
            dbapi_conn.execute(f"PRAGMA busy_timeout={self.timeout_ms}")

    @staticmethod
    def _try_begin(dbapi_conn: Any) -> bool:
        try:
            dbapi_conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if isinstance(store_error(exc), StoreError):
                return False
            raise
        return True


def begin_write(conn: Connection) -> None:
    """Take the write lock now, for a transaction whose writes go through the raw DBAPI cursor.

    SQLite: ``BEGIN IMMEDIATE`` as for any first write (waiting, announced, bounded); PostgreSQL
    needs nothing.
    """
    gate = conn.info.get(_GATE)
    if gate is not None:
        gate.begin_write(conn.connection.driver_connection)


def _postgres_lock_timeout(busy_timeout: float) -> Callable[[Any, Any], None]:
    timeout_ms = max(int(busy_timeout * 1000), 1)  # 0 would mean "wait for ever" to PostgreSQL

    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        autocommit = dbapi_conn.autocommit
        dbapi_conn.autocommit = True
        dbapi_conn.execute(f"SET lock_timeout = {timeout_ms}")
        dbapi_conn.autocommit = autocommit

    return on_connect


def make_engine(url: str, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT, notify: Notify | None = None) -> Engine:
    """The engine of a supported URL (``check_url``); a new SQLite file is created private first.

    ``busy_timeout``: seconds a writer waits for another's lock before ``BUSY_MESSAGE``;
    ``notify`` receives the one line that says a writer is waiting.
    """
    parsed = check_url(url)
    if parsed.drivername.startswith("sqlite"):
        path = sqlite_path(url)
        if path is not None:
            _create_private_file(path)
        engine = create_engine(parsed, connect_args={"check_same_thread": False})
        _SQLiteWrites(busy_timeout, notify).attach(engine)
    else:
        engine = create_engine(parsed, pool_pre_ping=True)
        event.listen(engine, "connect", _postgres_lock_timeout(busy_timeout), insert=True)
    event.listen(engine, "handle_error", _on_error)
    return engine


# -- named locks ----------------------------------------------------------------------------------
def _lock_file(db_path: Path, name: str) -> Path:
    """The lock file of one name: readable, and unique per name."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:60]
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return db_path.with_name(db_path.name + ".locks") / f"{readable}-{digest}.lock"


_local_locks: dict[str, threading.Lock] = {}


@contextmanager
def file_lock(db_path: Path | None, name: str, *, wait: float, on_wait: Callable[[], None]) -> Iterator[bool]:
    """Hold the lock ``name`` of a SQLite store; yields False (holding nothing) if it stayed taken.

    A ``flock`` on a 0600 file in a 0700 folder beside the database: it belongs to the open file,
    so it also excludes a second holder in the same process, and the system releases it when the
    holder dies. An in-memory store has only this process to exclude.
    """
    if db_path is None:
        lock = _local_locks.setdefault(name, threading.Lock())
        got = lock.acquire(timeout=wait) if wait > 0 else lock.acquire(blocking=False)
        try:
            yield got
        finally:
            if got:
                lock.release()
        return
    path = _lock_file(db_path, name)
    ensure_private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        got = _poll(lambda: _try_flock(fd), wait, on_wait)
        try:
            yield got
        finally:
            if got:
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextmanager
def advisory_lock(engine: Engine, name: str, *, wait: float, on_wait: Callable[[], None]) -> Iterator[bool]:
    """Hold the PostgreSQL session advisory lock of ``name``; yields False if it stayed taken.

    The lock lives as long as its connection, which stays checked out (in autocommit, so it
    holds no transaction open) until the block ends; the server releases it if this process dies.
    """
    key = int.from_bytes(hashlib.sha256(f"annotate:{name}".encode("utf-8", "surrogatepass")).digest()[:8], "big")
    key -= 1 << 64 if key >= 1 << 63 else 0  # a signed bigint
    with translating():
        conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    try:

        def attempt() -> bool:
            with translating():
                return bool(conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar())

        got = _poll(attempt, wait, on_wait)
        try:
            yield got
        finally:
            if got:
                with translating():
                    conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
    finally:
        conn.close()


def _poll(attempt: Callable[[], bool], wait: float, on_wait: Callable[[], None]) -> bool:
    if attempt():
        return True
    if wait <= 0:
        return False
    on_wait()
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        time.sleep(min(0.1, max(deadline - time.monotonic(), 0)))
        if attempt():
            return True
    return False


# -- raw DBAPI helpers ----------------------------------------------------------------------------
def bulk_insert(conn: Connection, table: Table, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> None:
    """executemany on the raw DBAPI cursor: several times faster than Core inserts of dicts."""
    if not rows:
        return
    ph = "?" if conn.dialect.name == "sqlite" else "%s"
    sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join([ph] * len(columns))})"
    begin_write(conn)
    with translating():
        cur = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        cur.executemany(sql, rows)
        cur.close()


def frame(conn: Connection, stmt: Any) -> pd.DataFrame:
    """Run a select; the rows as a DataFrame with the statement's column names.

    When no selected column needs SQLAlchemy's conversion of its values on this dialect (plain
    integers, floats and text: ``TypeEngine.result_processor`` is None), the rows come straight from
    the DBAPI cursor, as tuples: half the cost of SQLAlchemy's Row objects on the large tables
    (items, annotations, verdicts) that scoring, the judge audit and export read.
    """
    result = conn.execute(stmt)
    columns = list(result.keys())
    selected = getattr(stmt, "selected_columns", None)
    dialect = conn.dialect
    if selected is not None and all(c.type.result_processor(dialect, None) is None for c in selected):
        cursor = getattr(result, "cursor", None)
        if cursor is not None:
            rows = cursor.fetchall()
            result.close()
            return pd.DataFrame.from_records(rows, columns=columns)
    # Plain tuples: building a frame from SQLAlchemy Row objects is several times slower.
    return pd.DataFrame.from_records([tuple(r) for r in result.all()], columns=columns)
