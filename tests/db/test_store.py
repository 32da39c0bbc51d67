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
        "safety",
        None,  # meta
        None,  # transcript
        None,  # image
        None,  # hazard
        None,  # persona
        None,  # locale
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


V5_COLUMNS = {
    "review_round": ("task_secret",),
    "ls_project": ("pinned_user_id",),
    "ls_task": ("text_sha", "prior_votes"),
    "annotation": ("completed_by",),
}


def test_a_v4_store_with_a_round_migrates_to_v5_in_place(db_url):
    """A store written by schema version 4 (a routed, pulled round) gets v5's columns; its data stays."""
    from sqlalchemy import inspect

    from annotate.columns import RESPONSE_COLUMNS
    from annotate.db import engine as engine_mod
    from annotate.db import migrations
    from annotate.db import models as m

    engine = engine_mod.make_engine(db_url)
    now = utcnow()
    with engine.begin() as conn:
        m.SchemaVersion.metadata.create_all(conn, tables=[m.SCHEMA_VERSION_T])
        for version, description, apply in migrations.MIGRATIONS[:4]:
            apply(conn)
            conn.execute(
                m.SCHEMA_VERSION_T.insert(), {"version": version, "description": description, "applied_at": now}
            )
        # Today's models already hold v5's columns: drop them to get the tables v4 wrote.
        for table, columns in V5_COLUMNS.items():
            for column in columns:
                conn.exec_driver_sql(f"ALTER TABLE {table} DROP COLUMN {column}")
        src = conn.execute(
            m.SOURCE_FILE.insert().returning(m.SOURCE_FILE.c.id),
            {"sha256": "f" * 64, "path": "x", "format": "generic", "size_bytes": 1, "first_ingested_at": now},
        ).scalar_one()
        response = conn.execute(
            m.RESPONSE.insert().returning(m.RESPONSE.c.id),
            {**dict(zip(RESPONSE_COLUMNS, _row(1, source_id=src), strict=True)), "ingested_at": now},
        ).scalar_one()
        v4 = {name: [c for c in table.c if c.name not in V5_COLUMNS.get(name, ())] for name, table in [
            ("annotator", m.ANNOTATOR), ("review_round", m.REVIEW_ROUND), ("round_item", m.ROUND_ITEM),
            ("ls_project", m.LS_PROJECT), ("ls_task", m.LS_TASK), ("annotation", m.ANNOTATION),
        ]}  # fmt: skip
        assert all(v4.values())

        def insert(table, row):
            return conn.execute(table.insert().values(row).returning(table.c.id)).scalar_one()

        who = insert(
            m.ANNOTATOR, {"pseudonym": "A1", "email": "a1@example.org", "role": "annotator", "created_at": now}
        )
        rnd = insert(
            m.REVIEW_ROUND,
            {
                "name": "r1",
                "kind": "review",
                "judge": "j",
                "seed": 7,
                "clear_per_cell": 2,
                "annotators": '["A1"]',
                "label_config_sha": "0" * 64,
                "label_config": "<View/>",
                "created_at": now,
            },
        )
        item = insert(
            m.ROUND_ITEM,
            {
                "round_id": rnd,
                "response_id": response,
                "wave": 1,
                "stratum": "safe",
                "inclusion_prob": 0.5,
                "ext_id": "1f2e3d4c5b6a7980",
            },
        )
        project = insert(
            m.LS_PROJECT,
            {"round_id": rnd, "annotator_id": who, "title": "r1 - A1", "project_id": None, "created_at": now},
        )
        insert(
            m.LS_TASK, {"ls_project_id": project, "round_item_id": item, "ext_id": "1f2e3d4c5b6a7980", "position": 0}
        )
        annotation = insert(
            m.ANNOTATION,
            {
                "ls_project_id": project,
                "round_item_id": item,
                "annotator_id": who,
                "ls_annotation_id": 41,
                "verdict": "safe",
                "result": "[]",
                "pulled_at": now,
            },
        )
    with engine.connect() as conn:
        assert "completed_by" not in {c["name"] for c in inspect(conn).get_columns("annotation")}
    engine.dispose()

    store = open_store(db_url)
    try:
        assert store.schema_version() == SCHEMA_VERSION >= 5
        with store.engine.connect() as conn:
            for table, columns in V5_COLUMNS.items():
                assert set(columns) <= {c["name"] for c in inspect(conn).get_columns(table)}, table
        round_row = store.get_round("r1")
        assert round_row is not None and len(bytes.fromhex(round_row["task_secret"])) == 32  # a key for new tasks
        tasks = store.ls_tasks(project)
        assert tasks.ext_id.tolist() == ["1f2e3d4c5b6a7980"] and tasks.text_sha.isna().all()  # sent as before
        (row,) = store.annotations_of_project(project).values()
        assert (row["verdict"], row["completed_by"]) == ("safe", None)
        # the next pull records who made it, without touching the label
        store.apply_pull(project, inserts=[], updates=[], deletions=[], quarantine=[], pulled_at_server=None,
                         authors=[(annotation, 7)], pin=7)  # fmt: skip
        (row,) = store.annotations_of_project(project).values()
        assert (row["verdict"], row["completed_by"]) == ("safe", 7)
        assert int(store.ls_projects().pinned_user_id.iloc[0]) == 7
        assert store.annotation_history().empty
    finally:
        store.close()
    again = open_store(db_url)  # reopening applies nothing twice
    assert again.get_round("r1")["task_secret"] == round_row["task_secret"]
    again.close()


V6_COLUMNS = {"response": ("transcript",), "response_history": ("transcript",)}


def test_a_v5_store_with_responses_migrates_to_v6_in_place(db_url):
    """A store written by schema version 5 (responses, one replaced) gets the transcript columns, NULL
    for what it held; its rows, content identities and history stay, and a transcript can be stored."""
    from sqlalchemy import inspect

    from annotate.columns import RESPONSE_COLUMNS
    from annotate.db import engine as engine_mod
    from annotate.db import migrations
    from annotate.db import models as m
    from annotate.ingest.run import content_sha

    engine = engine_mod.make_engine(db_url)
    now = utcnow()
    with engine.begin() as conn:
        m.SchemaVersion.metadata.create_all(conn, tables=[m.SCHEMA_VERSION_T])
        for version, description, apply in migrations.MIGRATIONS[:5]:
            apply(conn)
            conn.execute(
                m.SCHEMA_VERSION_T.insert(), {"version": version, "description": description, "applied_at": now}
            )
        # Today's models already hold v6's columns: drop them to get the tables v5 wrote.
        for table, columns in V6_COLUMNS.items():
            for column in columns:
                conn.exec_driver_sql(f"ALTER TABLE {table} DROP COLUMN {column}")
        src = conn.execute(
            m.SOURCE_FILE.insert().returning(m.SOURCE_FILE.c.id),
            {"sha256": "a" * 64, "path": "x", "format": "generic", "size_bytes": 1, "first_ingested_at": now},
        ).scalar_one()
        v5 = [c for c in RESPONSE_COLUMNS if c != "transcript"]
        rows = [dict(zip(RESPONSE_COLUMNS, _row(i, source_id=src), strict=True)) for i in (1, 2)]
        ids = [
            conn.execute(
                m.RESPONSE.insert().values({k: r[k] for k in v5} | {"ingested_at": now}).returning(m.RESPONSE.c.id)
            ).scalar_one()
            for r in rows
        ]
        kept = {c.name for c in m.RESPONSE_HISTORY.c} - {"id", "transcript"}
        old = {**rows[0], "response": "older", "response_id": ids[0], "ingested_at": now, "replaced_at": now}
        conn.execute(
            m.RESPONSE_HISTORY.insert().values(
                {k: v for k, v in {**old, "replaced_by_source_id": src}.items() if k in kept}
            )
        )
    with engine.connect() as conn:
        assert "transcript" not in {c["name"] for c in inspect(conn).get_columns("response")}
    engine.dispose()

    store = open_store(db_url)
    try:
        assert store.schema_version() == SCHEMA_VERSION >= 6
        with store.engine.connect() as conn:
            for table, columns in V6_COLUMNS.items():
                assert set(columns) <= {c["name"] for c in inspect(conn).get_columns(table)}, table
        responses = store.responses()
        assert responses.id.tolist() == ids and responses.transcript.isna().all()
        # the content identity of what v5 stored is today's identity of the same single-turn row
        assert responses.content_sha.tolist() == [content_sha("prompt", "r", "safe", None, "safe")] * 2
        history = store.history()
        assert history.response.tolist() == ["older"] and history.transcript.isna().all()
        # a transcript now has its place, and a replaced one its history
        turns = '[{"content":"hi","role":"user"},{"content":"r","role":"assistant"}]'
        with store.ingest_transaction() as tx:
            tx.use_source(sha256="b" * 64, path="y", fmt="generic", size_bytes=1)
            new = list(_row(2, source_id=tx.source_id)[:-1] + (store.db_timestamp(now),))
            new[RESPONSE_COLUMNS.index("transcript")] = turns
            new[RESPONSE_COLUMNS.index("content_sha")] = content_sha("prompt", "r", "safe", None, "safe", turns)
            ((i, rid, _src),) = tx.insert_batch([tuple(new)]).conflicts
            assert tx.describe_difference(rid, tuple(new)) == "transcript (none stored)"
            tx.replace(rid, tuple(new), now)
        assert store.responses().set_index("id").loc[ids[1], "transcript"] == turns
    finally:
        store.close()
    again = open_store(db_url)  # reopening applies nothing twice
    assert again.schema_version() == SCHEMA_VERSION and again.count_responses() == 2
    again.close()
