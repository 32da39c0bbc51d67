"""The store: the one owner of the database, made of one component per group of tables.

Two databases are supported: SQLite (the default, one private file in the workspace, WAL mode)
and PostgreSQL (``postgresql+psycopg://...``, for teams sharing one database); any other URL is
refused before anything is created (``engine.check_url``). Opening a store applies missing
migrations (``annotate.db.migrations``), one opener at a time.

Concurrent commands: writers wait for each other up to ``busy_timeout`` seconds, then fail with
``StoreError`` ("the store is busy ..."); ``Store.exclusive(name)`` keeps a command from running
twice on the same thing (one pull of one annotator's project at a time). See ``engine``.

Components (each a class over the shared engine, none calling another):

* ``ResponseTables`` (``responses.py``): ingested responses, sources, ingest runs, the ingest transaction;
* ``ReviewTables`` (``review.py``): annotators, rounds and their design, Label Studio projects, tasks, annotations;
* ``DecisionTables`` (``decisions.py``): final labels and escalations;
* ``DiagnosticTables`` (``diagnostics.py``): text features and diagnoses;
* ``JudgeTables`` (``judges.py``): every judge's verdict on the responses a round reviewed (reads only).

``Store`` joins them into one flat API (``store.round_items(...)``) and is a context manager.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

from sqlalchemy.exc import OperationalError, ProgrammingError

from annotate.config import DEFAULT_BUSY_TIMEOUT
from annotate.db.decisions import DecisionTables
from annotate.db.diagnostics import DiagnosticTables
from annotate.db.engine import (
    BUSY_MESSAGE,
    Notify,
    advisory_lock,
    check_url,
    file_lock,
    make_engine,
    sqlite_path,
    store_error,
    store_files,
    utcnow,
)
from annotate.db.ingest_tx import BatchResult, IngestTransaction
from annotate.db.judges import JudgeTables
from annotate.db.migrations import MIGRATIONS, SCHEMA_VERSION, migrate, schema_version
from annotate.db.responses import ResponseTables
from annotate.db.review import ReviewTables
from annotate.errors import StateError, StoreError

__all__ = [
    "BUSY_MESSAGE",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "BatchResult",
    "IngestTransaction",
    "Store",
    "check_url",
    "make_engine",
    "open_store",
    "store_error",
    "store_files",
    "utcnow",
]


class Store(ResponseTables, ReviewTables, DecisionTables, DiagnosticTables, JudgeTables):
    """The database of one workspace (or of a team, on PostgreSQL)."""

    def __init__(
        self,
        url: str,
        *,
        create: bool = True,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        notify: Notify | None = None,
    ) -> None:
        """Open (creating and migrating when needed) the store at ``url``.

        ``busy_timeout``: seconds a writer waits for another command's write before giving up;
        ``notify``: where the lines for the user go (that a writer waits; None: nowhere).
        """
        self.url = url
        self.busy_timeout = busy_timeout
        self.notify = notify
        self.engine = make_engine(url, busy_timeout=busy_timeout, notify=notify)
        self.dialect = self.engine.dialect.name
        try:
            if schema_version(self.engine) != SCHEMA_VERSION:
                self._migrate(create)
        except OperationalError as exc:
            self.engine.dispose()
            raise StoreError(f"cannot open the database: {exc.orig}") from None
        except BaseException:
            self.engine.dispose()
            raise

    def _migrate(self, create: bool) -> None:
        # Two commands opening a new (or older) store at once must not both apply a migration.
        running = "another annotate command is creating or upgrading the store"
        try:
            with self.exclusive("schema", wait=self.busy_timeout, message=running):
                migrate(self.engine, create=create)
        except StateError as exc:
            if str(exc) != running:
                raise
            raise StoreError(f"{running}; try again when it has finished.") from None

    @contextmanager
    def exclusive(self, name: str, *, wait: float = 0, message: str | None = None) -> Iterator[None]:
        """Hold the named lock for the block: one holder per store across processes and machines.

        For commands that must not run twice on the same thing (``pull:r1:A1``). If another
        holder keeps it for ``wait`` seconds, raises ``StateError(message)`` (say what is
        running, e.g. "another pull of A1 (round r1) is running"). SQLite: a ``flock`` on a 0600
        file in ``<database>.locks/`` beside the database; PostgreSQL: a session advisory lock on
        a hash of the name. Released when the block ends or the process dies.
        """
        running = message or f"another annotate command holds the lock {name!r}"

        def on_wait() -> None:
            if self.notify is not None:
                self.notify(f"{running}; waiting up to {wait:g} s...")

        if self.dialect == "sqlite":
            lock = file_lock(sqlite_path(self.url), name, wait=wait, on_wait=on_wait)
        else:
            lock = advisory_lock(self.engine, name, wait=wait, on_wait=on_wait)
        with lock as got:
            if not got:
                raise StateError(running if message else f"{running}; try again when it has finished.")
            yield

    def schema_version(self) -> int:
        return schema_version(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def open_store(
    url: str, *, create: bool = True, busy_timeout: float = DEFAULT_BUSY_TIMEOUT, notify: Notify | None = None
) -> Store:
    """The store at ``url`` (see ``Store``); database errors become ``StoreError``."""
    try:
        return Store(url, create=create, busy_timeout=busy_timeout, notify=notify)
    except (OperationalError, ProgrammingError) as exc:
        raise StoreError(f"cannot open the database: {getattr(exc, 'orig', exc)}") from None


def store_exists(url: str) -> bool:
    """True when ``url`` already holds an annotate store (a schema_version table); creates nothing."""
    path = sqlite_path(url)
    if path is not None and not path.exists():
        return False
    try:
        store = Store(url, create=False)
    except StoreError:
        return False
    except (OperationalError, ProgrammingError):
        return False
    store.close()
    return True
