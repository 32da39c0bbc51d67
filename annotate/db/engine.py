"""Engines, timestamps and the two raw-DBAPI helpers every component shares.

SQLite runs in WAL mode with a busy timeout; a ``postgresql://`` URL is taken as psycopg 3.
Bulk writes go through the raw DBAPI cursor's ``executemany`` (SQLAlchemy Core's executemany is
3-4x slower on these paths; README, performance), reads come back as DataFrames built from
plain tuples.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import Table, event
from sqlalchemy.engine import Connection, Engine
from sqlmodel import create_engine


def utcnow() -> datetime:
    return datetime.now(UTC)


def db_timestamp(dialect: str, when: datetime) -> Any:
    """A timestamp as the raw DBAPI path must pass it (SQLAlchemy's SQLite text format)."""
    if dialect == "sqlite":
        return when.strftime("%Y-%m-%d %H:%M:%S.%f")
    return when


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
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    return create_engine(url, pool_pre_ping=True)


def bulk_insert(conn: Connection, table: Table, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> None:
    """executemany on the raw DBAPI cursor: several times faster than Core inserts of dicts."""
    if not rows:
        return
    ph = "?" if conn.dialect.name == "sqlite" else "%s"
    sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join([ph] * len(columns))})"
    cur = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    cur.executemany(sql, rows)
    cur.close()


def frame(conn: Connection, stmt: Any) -> pd.DataFrame:
    """Run a select; the rows as a DataFrame with the statement's column names."""
    result = conn.execute(stmt)
    columns = list(result.keys())
    # Plain tuples: building a frame from SQLAlchemy Row objects is several times slower.
    return pd.DataFrame.from_records([tuple(r) for r in result.all()], columns=columns)
