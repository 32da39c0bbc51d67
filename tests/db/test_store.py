"""The store on a real SQLite file and a real PostgreSQL database."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import text

from annotate.db.store import SCHEMA_VERSION, Store, open_store, utcnow
from annotate.errors import StoreError


def _row(i: int, response: str = "r", source_id: int = 1, label: str = "safe"):
    from annotate.ingest.run import content_sha

    return (
        "b",
        "m",
        f"p{i}",
        0,
        "j",
        None,
        "prompt",
        response,
        label,
        None,
        label,
        "mapped",
        None,
        content_sha("prompt", response, label, None, label),
        source_id,
        None,
    )


def test_migrates_and_records_schema_version(db_url):
    store = open_store(db_url)
    assert store.schema_version() == SCHEMA_VERSION
    store.close()
    again = open_store(db_url)  # reopening applies nothing twice
    assert again.schema_version() == SCHEMA_VERSION
    with again.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM schema_version")).scalar() == SCHEMA_VERSION
    again.close()


def test_refuses_a_newer_schema(db_url):
    store = open_store(db_url)
    with store.engine.begin() as conn:
        conn.execute(
            text("INSERT INTO schema_version (version, description, applied_at) VALUES (99, 'future', :t)"),
            {"t": utcnow()},
        )
    store.close()
    with pytest.raises(StoreError, match="newer"):
        open_store(db_url)


def test_sqlite_runs_in_wal_mode(tmp_path):
    path = tmp_path / "s.db"
    open_store(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_aborted_ingest_leaves_nothing(db_url):
    store = open_store(db_url)
    with store.ingest_transaction() as tx:
        tx.use_source(sha256="a" * 64, path="x", fmt="generic", size_bytes=1)
        rows = [_row(i, source_id=tx.source_id) for i in range(10)]
        rows = [r[:-1] + (store.db_timestamp(utcnow()),) for r in rows]
        assert tx.insert_batch(rows).inserted == 10
        tx.abort()
    assert store.count_responses() == 0
    assert store.source_files().empty
    store.close()


def test_batch_classifies_duplicates_and_conflicts(db_url):
    store = open_store(db_url)
    now = store.db_timestamp(utcnow())
    with store.ingest_transaction() as tx:
        tx.use_source(sha256="b" * 64, path="x", fmt="generic", size_bytes=1)
        rows = [_row(i, source_id=tx.source_id)[:-1] + (now,) for i in range(5)]
        first = tx.insert_batch(rows)
        assert (first.inserted, first.duplicates, first.conflicts) == (5, 0, [])
        changed = rows[:2] + [_row(2, response="other", source_id=tx.source_id)[:-1] + (now,)]
        second = tx.insert_batch(changed)
        assert second.inserted == 0
        assert second.duplicates == 2
        assert [c[0] for c in second.conflicts] == [2]
        assert "response" in tx.describe_difference(second.conflicts[0][1], changed[2])
    store.close()


def test_replace_keeps_history(db_url):
    store = open_store(db_url)
    now = utcnow()
    with store.ingest_transaction() as tx:
        tx.use_source(sha256="c" * 64, path="x", fmt="generic", size_bytes=1)
        tx.insert_batch([_row(1, source_id=tx.source_id)[:-1] + (store.db_timestamp(now),)])
    with store.ingest_transaction() as tx:
        tx.use_source(sha256="d" * 64, path="y", fmt="generic", size_bytes=1)
        new = _row(1, response="new", source_id=tx.source_id)[:-1] + (store.db_timestamp(now),)
        result = tx.insert_batch([new])
        ((i, rid, _src),) = result.conflicts
        tx.replace(rid, new, now)
    responses = store.responses()
    history = store.history()
    assert responses.response.tolist() == ["new"]
    assert history.response.tolist() == ["r"]
    assert history.response_id.tolist() == responses.id.tolist()
    store.close()


def test_store_error_for_unreachable_database():
    with pytest.raises(StoreError):
        Store("postgresql+psycopg://nobody@127.0.0.1:1/none")


def test_an_older_store_is_migrated_in_place(tmp_path):
    """A version-1 database (as the first release wrote it) opens and migrates, data intact."""
    from sqlmodel import SQLModel

    from annotate.columns import RESPONSE_COLUMNS
    from annotate.db import engine as engine_mod
    from annotate.db import migrations, models

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = engine_mod.make_engine(url)
    with engine.begin() as conn:
        SQLModel.metadata.create_all(conn, tables=[models.SchemaVersion.__table__])
        migrations._v1(conn)
        conn.execute(
            models.SchemaVersion.__table__.insert(), {"version": 1, "description": "v1", "applied_at": utcnow()}
        )
        src = conn.execute(
            models.SourceFile.__table__.insert().returning(models.SourceFile.__table__.c.id),
            {"sha256": "e" * 64, "path": "x", "format": "generic", "size_bytes": 1, "first_ingested_at": utcnow()},
        ).scalar_one()
        conn.execute(
            models.Response.__table__.insert(),
            {**dict(zip(RESPONSE_COLUMNS, _row(1, source_id=src), strict=True)), "ingested_at": utcnow()},
        )
    engine.dispose()
    store = open_store(url)
    try:
        assert store.schema_version() == SCHEMA_VERSION
        assert store.count_responses() == 1
        assert store.annotators().empty  # the tables of later versions exist
    finally:
        store.close()
