"""The store: the only module that talks to the database.

Any SQLAlchemy URL works; SQLite (the default, one file in the workspace, WAL mode) and
PostgreSQL (``postgresql+psycopg://...``, for teams sharing one database) are tested.

The schema is versioned: ``schema_version`` holds one row per applied migration. Opening a store
applies missing migrations in order and refuses a database written by a newer annotate.
Small queries go through SQLModel/SQLAlchemy; the bulk ingest path uses the raw DBAPI cursor's
``executemany`` (SQLAlchemy Core's executemany is 3-4x slower on this path; see
docs/performance figures in the README).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import event, func, inspect, select, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError, ProgrammingError
from sqlmodel import Session, SQLModel, create_engine

from annotate import models
from annotate.errors import StoreError

SCHEMA_VERSION = 1


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _v1(conn: Connection) -> None:
    tables = [
        models.SourceFile.__table__,
        models.IngestRun.__table__,
        models.Response.__table__,
        models.ResponseHistory.__table__,
    ]
    SQLModel.metadata.create_all(conn, tables=tables)


# (version, description, apply). Later schema changes append here; never edit a shipped step.
MIGRATIONS: list[tuple[int, str, Callable[[Connection], None]]] = [
    (1, "responses, source files, ingest runs, response history", _v1),
]
assert MIGRATIONS[-1][0] == SCHEMA_VERSION

# Column order of the bulk insert into `response`.
RESPONSE_COLUMNS = (
    "benchmark", "model", "prompt_id", "epoch", "judge", "category", "prompt", "response",
    "judge_verdict", "judge_score", "judge_label", "label_reason", "meta", "content_sha",
    "source_id", "ingested_at",
)
KEY_COLUMNS = ("benchmark", "model", "prompt_id", "epoch", "judge")


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = url.split(":///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    return create_engine(url, pool_pre_ping=True)


@dataclass
class BatchResult:
    inserted: int = 0
    duplicates: int = 0
    # (index in batch, existing response id, existing source id) for keys holding other content
    conflicts: list[tuple[int, int, int]] = field(default_factory=list)


class IngestTransaction:
    """Bulk writes of one ingested file, all in one database transaction.

    Rows are tuples in ``RESPONSE_COLUMNS`` order. Nothing is visible to others, and nothing
    remains, unless the surrounding ``Store.ingest_transaction`` block ends without error and
    without ``abort()``.
    """

    def __init__(self, conn: Connection, dialect: str) -> None:
        self._conn = conn
        self._dbapi = conn.connection.driver_connection
        self.dialect = dialect
        self.source_id: int = 0
        self.aborted = False
        self._keys_table = False
        ph = "?" if dialect == "sqlite" else "%s"
        self._ph = ph
        cols = ", ".join(RESPONSE_COLUMNS)
        self._insert_sql = (
            f"INSERT INTO response ({cols}) VALUES ({', '.join([ph] * len(RESPONSE_COLUMNS))}) "
            f"ON CONFLICT ({', '.join(KEY_COLUMNS)}) DO NOTHING"
        )

    def abort(self) -> None:
        self.aborted = True

    def use_source(self, *, sha256: str, path: str, fmt: str, size_bytes: int) -> int:
        """Select (registering it when new) the source file the next rows come from."""
        t = models.SourceFile.__table__
        src = self._conn.execute(select(t.c.id).where(t.c.sha256 == sha256)).scalar()
        if src is None:
            src = self._conn.execute(
                t.insert().returning(t.c.id),
                {"sha256": sha256, "path": path, "format": fmt, "size_bytes": size_bytes,
                 "first_ingested_at": utcnow()},
            ).scalar_one()
        self.source_id = src
        return src

    def insert_batch(self, rows: Sequence[tuple[Any, ...]], *, write: bool = True) -> BatchResult:
        """Insert rows whose key is new; classify the others as duplicates or conflicts.

        With ``write=False`` nothing is inserted: only conflicts with stored rows are found
        (used to keep validating a file that is already known to be refused).
        """
        if not rows:
            return BatchResult()
        if write:
            cur = self._dbapi.cursor()
            cur.executemany(self._insert_sql, rows)
            inserted = cur.rowcount if cur.rowcount is not None and cur.rowcount >= 0 else -1
            cur.close()
        else:
            inserted = 0
        result = BatchResult(inserted=inserted)
        if inserted == len(rows):
            return result
        # Some keys existed: look them up and compare content hashes. Rows inserted by this
        # batch compare equal to themselves, so only differing hashes are conflicts.
        key_idx = [RESPONSE_COLUMNS.index(c) for c in KEY_COLUMNS]
        sha_idx = RESPONSE_COLUMNS.index("content_sha")
        existing = self._lookup([tuple(r[i] for i in key_idx) for r in rows])
        for i, row in enumerate(rows):
            found = existing.get(i)
            if found is None:  # only possible with write=False: a new key
                continue
            rid, sha, src = found
            if sha != row[sha_idx]:
                result.conflicts.append((i, rid, src))
        if inserted < 0:  # the driver could not count: every non-conflicting new key went in
            inserted = len(rows) - len(existing)
        result.inserted = inserted
        result.duplicates = len(rows) - inserted - len(result.conflicts)
        return result

    def _lookup(self, keys: list[tuple[Any, ...]]) -> dict[int, tuple[int, str, int]]:
        """Stored (id, content_sha, source_id) per position in ``keys``, for keys that exist.

        Goes through a temporary key table joined on the unique key: a row-value
        ``IN (VALUES ...)`` list makes SQLite scan, about 20x slower.
        """
        cur = self._dbapi.cursor()
        if not self._keys_table:
            cur.execute(
                "CREATE TEMPORARY TABLE ingest_keys (idx INTEGER, benchmark TEXT, model TEXT, "
                "prompt_id TEXT, epoch INTEGER, judge TEXT)"
            )
            self._keys_table = True
        cur.execute("DELETE FROM ingest_keys")
        ph = ", ".join([self._ph] * 6)
        cur.executemany(f"INSERT INTO ingest_keys VALUES ({ph})", [(i, *k) for i, k in enumerate(keys)])
        # CROSS JOIN pins SQLite's join order (small key table outside, unique index inside);
        # PostgreSQL plans it as an ordinary join.
        cur.execute(
            "SELECT k.idx, r.id, r.content_sha, r.source_id FROM ingest_keys k CROSS JOIN response r "
            "WHERE r.benchmark = k.benchmark AND r.model = k.model AND r.prompt_id = k.prompt_id "
            "AND r.epoch = k.epoch AND r.judge = k.judge"
        )
        out = {row[0]: (row[1], row[2], row[3]) for row in cur.fetchall()}
        cur.close()
        return out

    def max_response_id(self) -> int:
        return self._conn.execute(select(func.max(models.Response.__table__.c.id))).scalar() or 0

    def describe_difference(self, response_id: int, row: tuple[Any, ...]) -> str:
        """Which of prompt / response / verdict / score / label differ from the stored row."""
        fields = ("prompt", "response", "judge_verdict", "judge_score", "judge_label")
        stored = self._conn.execute(
            text(f"SELECT {', '.join(fields)} FROM response WHERE id = :id"), {"id": response_id}
        ).one()
        new = dict(zip(RESPONSE_COLUMNS, row))
        diffs = []
        for name, old in zip(fields, stored):
            if old != new[name]:
                if name in ("prompt", "response"):
                    diffs.append(name)
                else:
                    diffs.append(f"{name} ({old!r} stored, {new[name]!r} here)")
        return ", ".join(diffs) or "content"

    def replace(self, response_id: int, row: tuple[Any, ...], now: datetime) -> None:
        """Overwrite an existing response, keeping its previous values in response_history."""
        t = models.Response.__table__
        kept = ("prompt", "response", "judge_verdict", "judge_score", "judge_label", "label_reason",
                "category", "meta", "content_sha", "source_id", "ingested_at")
        old = self._conn.execute(select(*[t.c[c] for c in kept]).where(t.c.id == response_id)).mappings().one()
        self._conn.execute(
            models.ResponseHistory.__table__.insert(),
            {**dict(old), "response_id": response_id, "replaced_at": now,
             "replaced_by_source_id": self.source_id},
        )
        values = dict(zip(RESPONSE_COLUMNS, row))
        for k in KEY_COLUMNS:
            values.pop(k)
        values["ingested_at"] = now
        self._conn.execute(
            models.Response.__table__.update().where(models.Response.__table__.c.id == response_id),
            values,
        )


class Store:
    """The only owner of the database. Each method opens and closes its own connection."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.dialect = self.engine.dialect.name
        try:
            self._migrate(create=create)
        except OperationalError as exc:
            raise StoreError(f"cannot open the database: {exc.orig}") from None

    # -- schema -------------------------------------------------------------------------
    def schema_version(self) -> int:
        with self.engine.connect() as conn:
            if not inspect(conn).has_table("schema_version"):
                return 0
            return conn.execute(select(func.max(models.SchemaVersion.version))).scalar() or 0

    def _migrate(self, *, create: bool) -> None:
        current = self.schema_version()
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"the database has schema version {current}, newer than this annotate "
                f"understands ({SCHEMA_VERSION}). Upgrade annotate (pip install -U annotate)."
            )
        if current == 0 and not create:
            raise StoreError("the database has no annotate schema. Run `annotate init` first.")
        for version, description, apply in MIGRATIONS:
            if version <= current:
                continue
            with self.engine.begin() as conn:
                if version == 1:
                    SQLModel.metadata.create_all(conn, tables=[models.SchemaVersion.__table__])
                apply(conn)
                conn.execute(
                    models.SchemaVersion.__table__.insert(),
                    {"version": version, "description": description, "applied_at": utcnow()},
                )

    def close(self) -> None:
        self.engine.dispose()

    # -- ingest -------------------------------------------------------------------------
    @contextmanager
    def ingest_transaction(self) -> Iterator[IngestTransaction]:
        """One transaction for one `annotate ingest` run: commits on normal exit unless aborted."""
        with self.engine.connect() as conn:
            trans = conn.begin()
            try:
                tx = IngestTransaction(conn, self.dialect)
                yield tx
                if tx.aborted:
                    trans.rollback()
                else:
                    trans.commit()
            except BaseException:
                trans.rollback()
                raise

    @staticmethod
    def record_run(tx: IngestTransaction, **values: Any) -> None:
        values = dict(values)
        for key in ("options", "rubric"):
            if not isinstance(values.get(key), str):
                values[key] = json.dumps(values.get(key), sort_keys=True)
        tx._conn.execute(models.IngestRun.__table__.insert(), {"source_id": tx.source_id, **values})

    def db_timestamp(self, when: datetime) -> Any:
        """A timestamp as the raw DBAPI path must pass it (SQLAlchemy's SQLite text format)."""
        if self.dialect == "sqlite":
            return when.strftime("%Y-%m-%d %H:%M:%S.%f")
        return when

    # -- reads --------------------------------------------------------------------------
    def label_counts(self, *, judge: str | None = None) -> "Any":
        """Responses per (model, benchmark, judge, judge_label): a long DataFrame with column n."""
        import pandas as pd

        r = models.Response.__table__.c
        stmt = select(r.model, r.benchmark, r.judge, r.judge_label, func.count().label("n")).group_by(
            r.model, r.benchmark, r.judge, r.judge_label
        )
        if judge:
            stmt = stmt.where(r.judge == judge)
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).all()
        return pd.DataFrame(rows, columns=["model", "benchmark", "judge", "judge_label", "n"])

    def count_responses(self) -> int:
        with self.engine.connect() as conn:
            return conn.execute(select(func.count()).select_from(models.Response.__table__)).scalar_one()

    def responses(self, columns: Sequence[str] | None = None) -> "Any":
        import pandas as pd

        t = models.Response.__table__
        cols = [t.c[c] for c in columns] if columns else list(t.c)
        with self.engine.connect() as conn:
            rows = conn.execute(select(*cols).order_by(t.c.id)).all()
        return pd.DataFrame(rows, columns=[c.name for c in cols])

    def history(self) -> "Any":
        import pandas as pd

        t = models.ResponseHistory.__table__
        with self.engine.connect() as conn:
            rows = conn.execute(select(t).order_by(t.c.id)).all()
        return pd.DataFrame(rows, columns=[c.name for c in t.c])

    def source_files(self) -> "Any":
        import pandas as pd

        t = models.SourceFile.__table__
        with self.engine.connect() as conn:
            rows = conn.execute(select(t).order_by(t.c.id)).all()
        return pd.DataFrame(rows, columns=[c.name for c in t.c])

    def ingest_runs(self) -> "Any":
        import pandas as pd

        t = models.IngestRun.__table__
        with self.engine.connect() as conn:
            rows = conn.execute(select(t).order_by(t.c.id)).all()
        return pd.DataFrame(rows, columns=[c.name for c in t.c])


def open_store(url: str, *, create: bool = True) -> Store:
    try:
        return Store(url, create=create)
    except (OperationalError, ProgrammingError) as exc:
        raise StoreError(f"cannot open the database: {getattr(exc, 'orig', exc)}") from None
