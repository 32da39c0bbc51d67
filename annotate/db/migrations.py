"""The schema's versions: an ordered list of migrations, applied in place when a store opens.

``schema_version`` holds one row per applied migration. Opening a store applies the missing
ones in order and refuses a database written by a newer annotate.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable

from sqlalchemy import Table, func, inspect, select
from sqlalchemy.engine import Connection, Engine

from annotate.db import tables as m
from annotate.db.engine import utcnow
from annotate.errors import StoreError

SCHEMA_VERSION = 16


def _create(conn: Connection, tables: list[Table]) -> None:
    """CREATE TABLE from the schema's declaration (``models``, SQLModel), for the named tables.

    The queries use the declaration's Core image (``tables``, generated from it and checked equal
    by tests/db/test_tables.py); the declaration is loaded only here, where a store is created or
    upgraded, so everyday commands start without SQLModel and pydantic.
    """
    from sqlmodel import SQLModel

    from annotate.db import models  # noqa: F401  (declares the tables on SQLModel.metadata)

    declared = SQLModel.metadata.tables
    SQLModel.metadata.create_all(conn, tables=[declared[t.name] for t in tables])


def _v1(conn: Connection) -> None:
    tables = [
        m.SOURCE_FILE,
        m.INGEST_RUN,
        m.RESPONSE,
        m.RESPONSE_HISTORY,
    ]
    _create(conn, tables)


def _v2(conn: Connection) -> None:
    tables = [
        m.ANNOTATOR,
        m.REVIEW_ROUND,
        m.ROUND_WAVE,
        m.ROUND_STRATUM,
        m.ROUND_ITEM,
        m.LS_PROJECT,
        m.LS_TASK,
        m.ANNOTATION,
        m.ANNOTATION_HISTORY,
        m.QUARANTINE,
    ]
    _create(conn, tables)


def _v3(conn: Connection) -> None:
    _create(conn, [m.FINAL_LABEL, m.ESCALATION])


def _v4(conn: Connection) -> None:
    _create(conn, [m.RESPONSE_FEATURE, m.DIAGNOSIS])


def _add_columns(conn: Connection, table: Table, names: tuple[str, ...]) -> None:
    """ALTER TABLE ... ADD COLUMN for the model's columns the table lacks.

    A store created by this version already has them: ``_v2`` creates its tables from today's
    declaration. The types come from the schema (``tables``), compiled for the connection's dialect.
    """
    have = {c["name"] for c in inspect(conn).get_columns(table.name)}
    for name in names:
        if name not in have:
            column = table.c[name]
            kind = column.type.compile(dialect=conn.dialect)
            conn.exec_driver_sql(f"ALTER TABLE {table.name} ADD COLUMN {name} {kind}")


def _v5(conn: Connection) -> None:
    _add_columns(conn, m.REVIEW_ROUND, ("task_secret",))
    _add_columns(conn, m.LS_PROJECT, ("pinned_user_id",))
    _add_columns(conn, m.LS_TASK, ("text_sha", "prior_votes"))
    _add_columns(conn, m.ANNOTATION, ("completed_by",))
    # Every round gets its key now, so tasks added to an older round (a new wave, an expert's
    # task) carry per-project ids; its tasks already sent keep the item's ext_id.
    t = m.REVIEW_ROUND
    for (round_id,) in conn.execute(select(t.c.id).where(t.c.task_secret.is_(None))).all():
        conn.execute(t.update().where(t.c.id == round_id).values(task_secret=secrets.token_hex(32)))


def _v6(conn: Connection) -> None:
    # Responses ingested before keep NULL: they were stored without their conversation.
    _add_columns(conn, m.RESPONSE, ("transcript",))
    _add_columns(conn, m.RESPONSE_HISTORY, ("transcript",))


def _v7(conn: Connection) -> None:
    # review_round.strata_from: the judges whose unanimity made the round's strata (`route
    # --strata-from`); NULL for every earlier round (the routing judge's own labels).
    _add_columns(conn, m.REVIEW_ROUND, ("strata_from",))


def _v8(conn: Connection) -> None:
    # review_round.blinding and ls_project.server: every earlier project is on the one shared
    # server; an earlier round that reached it was blinded by instructions only.
    _add_columns(conn, m.REVIEW_ROUND, ("blinding",))
    _add_columns(conn, m.LS_PROJECT, ("server",))
    p, t = m.LS_PROJECT, m.REVIEW_ROUND
    sent = select(p.c.round_id).where(p.c.project_id.is_not(None))
    conn.execute(t.update().where(t.c.blinding.is_(None), t.c.id.in_(sent)).values(blinding="instructions only"))


def _v9(conn: Connection) -> None:
    # review_round.adjudication: NULL for every earlier round (adjudicate again to record its rules).
    _add_columns(conn, m.REVIEW_ROUND, ("adjudication",))


def _v10(conn: Connection) -> None:
    # review_round.judges: NULL for every earlier round (one judge for all its benchmarks).
    _add_columns(conn, m.REVIEW_ROUND, ("judges",))


def _v11(conn: Connection) -> None:
    # response.judge_kind: every earlier row was read as a safety judge's (its failures harm), so it
    # migrates to "safety"; the history keeps NULL for rows replaced before kinds existed.
    _add_columns(conn, m.RESPONSE, ("judge_kind",))
    _add_columns(conn, m.RESPONSE_HISTORY, ("judge_kind",))
    t = m.RESPONSE
    conn.execute(t.update().where(t.c.judge_kind.is_(None)).values(judge_kind="safety"))


def _v12(conn: Connection) -> None:
    # review_round.ambiguous: NULL for every earlier round (its ambiguous strata were a census).
    _add_columns(conn, m.REVIEW_ROUND, ("ambiguous",))
    # round_stratum.of_wave, sampled_before: NULL for every earlier stratum (no next waves before v12).
    _add_columns(conn, m.ROUND_STRATUM, ("of_wave", "sampled_before"))


def _v13(conn: Connection) -> None:
    # review_round.task_order: NULL for every earlier round (an independent order keyed by the
    # items' ext_ids); round_item.priority: NULL for every earlier item.
    _add_columns(conn, m.REVIEW_ROUND, ("task_order",))
    _add_columns(conn, m.ROUND_ITEM, ("priority",))


def _v14(conn: Connection) -> None:
    # set_aside_row: empty for every earlier store (rows set aside before v14 are in rejects/ only).
    _create(conn, [m.SET_ASIDE_ROW])
    # review_round.origin: NULL for every earlier round (routed by annotate, none imported).
    _add_columns(conn, m.REVIEW_ROUND, ("origin",))


def _v15(conn: Connection) -> None:
    # annotation.channel, source_sha256: NULL for labels pulled earlier (not recorded), except an
    # imported round's, which all came from its table (review_round.origin keeps the table's sha256).
    _add_columns(conn, m.ANNOTATION, ("channel", "source_sha256"))
    # response.image (and its history): NULL for every earlier response (none had an image).
    _add_columns(conn, m.RESPONSE, ("image",))
    _add_columns(conn, m.RESPONSE_HISTORY, ("image",))
    a, p, r = m.ANNOTATION, m.LS_PROJECT, m.REVIEW_ROUND
    for round_id, origin in conn.execute(select(r.c.id, r.c.origin).where(r.c.origin.is_not(None))).all():
        try:
            sha = json.loads(origin).get("sha256")
        except (ValueError, AttributeError):
            sha = None
        projects = select(p.c.id).where(p.c.round_id == round_id)
        conn.execute(
            a.update()
            .where(a.c.channel.is_(None), a.c.ls_project_id.in_(projects))
            .values(channel="import", source_sha256=sha if isinstance(sha, str) else None)
        )


def _v16(conn: Connection) -> None:
    """Hazard categories, persona and locale of each response's prompt (issue #44)."""
    # NULL for every earlier response: none was read with them.
    _add_columns(conn, m.RESPONSE, ("hazard", "persona", "locale"))
    _add_columns(conn, m.RESPONSE_HISTORY, ("hazard", "persona", "locale"))


# (version, description, apply). Later schema changes append here; never edit a shipped step.
MIGRATIONS: list[tuple[int, str, Callable[[Connection], None]]] = [
    (1, "responses, source files, ingest runs, response history", _v1),
    (2, "annotators, review rounds, design, Label Studio tasks, annotations, quarantine", _v2),
    (3, "final labels (append-only) and escalations to the expert", _v3),
    (4, "response text features and diagnoses", _v4),
    (5, "per-project task ids and text hashes, pinned annotator user, completed_by of annotations", _v5),
    (6, "whole transcripts of multi-turn and agentic responses", _v6),
    (7, "the judges whose unanimity made a review round's strata (route --strata-from)", _v7),
    (8, "a Label Studio server per person: where each project lives, how each round was blinded", _v8),
    (9, "the adjudication rules of a round's latest adjudication (so that exports re-derive final labels)", _v9),
    (10, "a round across suites: the judge of each benchmark (route --judge BENCHMARK=JUDGE)", _v10),
    (11, "what each judge's verdict is about: safety, refusal or quality (response.judge_kind)", _v11),
    (12, "ambiguous strata sampled (route --ambiguous) and next waves from the strata's remainders", _v12),
    (13, "the order design of a round's tasks (route --order) and the priorities items were ordered by", _v13),
    (14, "rows set aside at ingest (empty and error responses); rounds of imported labels", _v14),
    (15, "how each label arrived (annotation.channel: a server, an export file, a table); items' images", _v15),
    (16, "the hazard categories, persona and locale of each response's prompt", _v16),
]
assert MIGRATIONS[-1][0] == SCHEMA_VERSION


def schema_version(engine: Engine) -> int:
    with engine.connect() as conn:
        if not inspect(conn).has_table("schema_version"):
            return 0
        return conn.execute(select(func.max(m.SCHEMA_VERSION_T.c.version))).scalar() or 0


def migrate(engine: Engine, *, create: bool) -> None:
    """Apply the missing migrations, each in its own transaction."""
    current = schema_version(engine)
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
        with engine.begin() as conn:
            if version == 1:
                _create(conn, [m.SCHEMA_VERSION_T])
            apply(conn)
            conn.execute(
                m.SCHEMA_VERSION_T.insert(),
                {"version": version, "description": description, "applied_at": utcnow()},
            )
