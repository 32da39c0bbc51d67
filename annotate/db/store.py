"""The store: the one owner of the database, made of one component per group of tables.

Any SQLAlchemy URL of a supported dialect works; SQLite (the default, one file in the workspace,
WAL mode) and PostgreSQL (``postgresql+psycopg://...``, for teams sharing one database) are
tested. Opening a store applies missing migrations (``annotate.db.migrations``).

Components (each a class over the shared engine, none calling another):

* ``ResponseTables`` (``responses.py``): ingested responses, sources, ingest runs, the ingest transaction;
* ``ReviewTables`` (``review.py``): annotators, rounds and their design, Label Studio projects, tasks, annotations;
* ``DecisionTables`` (``decisions.py``): final labels and escalations;
* ``DiagnosticTables`` (``diagnostics.py``): text features and diagnoses.

``Store`` joins them into one flat API (``store.round_items(...)``) and is a context manager.
"""

from __future__ import annotations

from types import TracebackType

from sqlalchemy.exc import OperationalError, ProgrammingError

from annotate.db.decisions import DecisionTables
from annotate.db.diagnostics import DiagnosticTables
from annotate.db.engine import make_engine, utcnow
from annotate.db.ingest_tx import BatchResult, IngestTransaction
from annotate.db.migrations import MIGRATIONS, SCHEMA_VERSION, migrate, schema_version
from annotate.db.responses import ResponseTables
from annotate.db.review import ReviewTables
from annotate.errors import StoreError

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "BatchResult",
    "IngestTransaction",
    "Store",
    "make_engine",
    "open_store",
    "utcnow",
]


class Store(ResponseTables, ReviewTables, DecisionTables, DiagnosticTables):
    """The database of one workspace (or of a team, on PostgreSQL)."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.dialect = self.engine.dialect.name
        try:
            migrate(self.engine, create=create)
        except OperationalError as exc:
            raise StoreError(f"cannot open the database: {exc.orig}") from None

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


def open_store(url: str, *, create: bool = True) -> Store:
    try:
        return Store(url, create=create)
    except (OperationalError, ProgrammingError) as exc:
        raise StoreError(f"cannot open the database: {getattr(exc, 'orig', exc)}") from None
