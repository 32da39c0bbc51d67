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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import event, func, inspect, select, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError, ProgrammingError
from sqlmodel import SQLModel, create_engine

from annotate.db import models
from annotate.errors import StoreError

SCHEMA_VERSION = 4


def utcnow() -> datetime:
    return datetime.now(UTC)


def _v1(conn: Connection) -> None:
    tables = [
        models.SourceFile.__table__,
        models.IngestRun.__table__,
        models.Response.__table__,
        models.ResponseHistory.__table__,
    ]
    SQLModel.metadata.create_all(conn, tables=tables)


def _v2(conn: Connection) -> None:
    tables = [
        models.Annotator.__table__,
        models.ReviewRound.__table__,
        models.RoundWave.__table__,
        models.RoundStratum.__table__,
        models.RoundItem.__table__,
        models.LsProject.__table__,
        models.LsTask.__table__,
        models.Annotation.__table__,
        models.AnnotationHistory.__table__,
        models.Quarantine.__table__,
    ]
    SQLModel.metadata.create_all(conn, tables=tables)


def _v3(conn: Connection) -> None:
    SQLModel.metadata.create_all(conn, tables=[models.FinalLabel.__table__, models.Escalation.__table__])


def _v4(conn: Connection) -> None:
    SQLModel.metadata.create_all(conn, tables=[models.ResponseFeature.__table__, models.Diagnosis.__table__])


# (version, description, apply). Later schema changes append here; never edit a shipped step.
MIGRATIONS: list[tuple[int, str, Callable[[Connection], None]]] = [
    (1, "responses, source files, ingest runs, response history", _v1),
    (2, "annotators, review rounds, design, Label Studio tasks, annotations, quarantine", _v2),
    (3, "final labels (append-only) and escalations to the expert", _v3),
    (4, "response text features and diagnoses", _v4),
]
assert MIGRATIONS[-1][0] == SCHEMA_VERSION

# Column order of the bulk insert into `response`.
RESPONSE_COLUMNS = (
    "benchmark",
    "model",
    "prompt_id",
    "epoch",
    "judge",
    "category",
    "prompt",
    "response",
    "judge_verdict",
    "judge_score",
    "judge_label",
    "label_reason",
    "meta",
    "content_sha",
    "source_id",
    "ingested_at",
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
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
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
                {
                    "sha256": sha256,
                    "path": path,
                    "format": fmt,
                    "size_bytes": size_bytes,
                    "first_ingested_at": utcnow(),
                },
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
        kept = (
            "prompt",
            "response",
            "judge_verdict",
            "judge_score",
            "judge_label",
            "label_reason",
            "category",
            "meta",
            "content_sha",
            "source_id",
            "ingested_at",
        )
        old = self._conn.execute(select(*[t.c[c] for c in kept]).where(t.c.id == response_id)).mappings().one()
        self._conn.execute(
            models.ResponseHistory.__table__.insert(),
            {**dict(old), "response_id": response_id, "replaced_at": now, "replaced_by_source_id": self.source_id},
        )
        values = dict(zip(RESPONSE_COLUMNS, row))
        for k in KEY_COLUMNS:
            values.pop(k)
        values["ingested_at"] = now
        self._conn.execute(
            models.Response.__table__.update().where(models.Response.__table__.c.id == response_id),
            values,
        )


class _CoreStore:
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
    def label_counts(self, *, judge: str | None = None) -> Any:
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

    def responses(self, columns: Sequence[str] | None = None) -> Any:
        import pandas as pd

        t = models.Response.__table__
        cols = [t.c[c] for c in columns] if columns else list(t.c)
        with self.engine.connect() as conn:
            rows = conn.execute(select(*cols).order_by(t.c.id)).all()
        return pd.DataFrame(rows, columns=[c.name for c in cols])

    def history(self) -> Any:
        import pandas as pd

        t = models.ResponseHistory.__table__
        with self.engine.connect() as conn:
            rows = conn.execute(select(t).order_by(t.c.id)).all()
        return pd.DataFrame(rows, columns=[c.name for c in t.c])

    def source_files(self) -> Any:
        import pandas as pd

        t = models.SourceFile.__table__
        with self.engine.connect() as conn:
            rows = conn.execute(select(t).order_by(t.c.id)).all()
        return pd.DataFrame(rows, columns=[c.name for c in t.c])

    def ingest_runs(self) -> Any:
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


# -- review rounds (schema version 2) --------------------------------------------------------------


def _bulk_insert(conn: Connection, table: Any, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> None:
    """executemany on the raw DBAPI cursor: several times faster than Core inserts of dicts."""
    if not rows:
        return
    ph = "?" if conn.dialect.name == "sqlite" else "%s"
    sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join([ph] * len(columns))})"
    cur = conn.connection.driver_connection.cursor()
    cur.executemany(sql, rows)
    cur.close()


def _frame(conn: Connection, stmt: Any) -> Any:
    import pandas as pd

    result = conn.execute(stmt)
    columns = list(result.keys())
    # Plain tuples: building a frame from SQLAlchemy Row objects is several times slower.
    return pd.DataFrame.from_records([tuple(r) for r in result.all()], columns=columns)


class ReviewStore:
    """Queries and writes of review rounds, annotators, Label Studio tasks and annotations.

    Mixed into ``Store``; kept apart only to keep the two halves readable.
    """

    engine: Engine

    # annotators ---------------------------------------------------------------------------------
    def annotators(self) -> Any:
        t = models.Annotator.__table__
        with self.engine.connect() as conn:
            return _frame(conn, select(t).order_by(t.c.id))

    def add_annotator(self, email: str, name: str | None, role: str = "annotator") -> tuple[str, bool]:
        """(pseudonym, created). An e-mail already registered keeps its pseudonym."""
        t = models.Annotator.__table__
        prefix = "E" if role == "expert" else "A"
        with self.engine.begin() as conn:
            row = conn.execute(select(t.c.pseudonym).where(func.lower(t.c.email) == email.lower())).first()
            if row:
                return row[0], False
            taken = conn.execute(select(t.c.pseudonym).where(t.c.pseudonym.like(f"{prefix}%"))).scalars().all()
            numbers = [int(p[1:]) for p in taken if p[1:].isdigit()]
            pseudonym = f"{prefix}{max(numbers, default=0) + 1}"
            conn.execute(
                t.insert(), {"pseudonym": pseudonym, "email": email, "name": name, "role": role, "created_at": utcnow()}
            )
            return pseudonym, True

    def set_annotator_user(self, pseudonym: str, ls_user_id: int) -> None:
        t = models.Annotator.__table__
        with self.engine.begin() as conn:
            conn.execute(t.update().where(t.c.pseudonym == pseudonym).values(ls_user_id=ls_user_id))

    # rounds -------------------------------------------------------------------------------------
    def get_round(self, name: str) -> dict[str, Any] | None:
        t = models.ReviewRound.__table__
        with self.engine.connect() as conn:
            row = conn.execute(select(t).where(t.c.name == name)).mappings().first()
            return dict(row) if row else None

    def rounds(self) -> Any:
        t = models.ReviewRound.__table__
        with self.engine.connect() as conn:
            return _frame(conn, select(t).order_by(t.c.id))

    def judges(self) -> list[str]:
        r = models.Response.__table__
        with self.engine.connect() as conn:
            return list(conn.execute(select(r.c.judge).distinct().order_by(r.c.judge)).scalars())

    def max_response_id(self) -> int:
        r = models.Response.__table__
        with self.engine.connect() as conn:
            return conn.execute(select(func.max(r.c.id))).scalar() or 0

    def routing_population(self, judge: str, after_id: int, up_to_id: int) -> Any:
        """Responses of one judge with after_id < id <= up_to_id (one wave's population)."""
        r = models.Response.__table__
        stmt = (
            select(
                r.c.id.label("response_id"),
                r.c.model,
                r.c.benchmark,
                r.c.prompt_id,
                r.c.epoch,
                r.c.judge,
                r.c.judge_label,
            )
            .where(r.c.judge == judge, r.c.id > after_id, r.c.id <= up_to_id)
            .order_by(r.c.id)
        )
        with self.engine.connect() as conn:
            return _frame(conn, stmt)

    def round_waves(self, round_id: int) -> Any:
        t = models.RoundWave.__table__
        with self.engine.connect() as conn:
            return _frame(conn, select(t).where(t.c.round_id == round_id).order_by(t.c.wave))

    def create_round_wave(
        self,
        *,
        round_row: dict[str, Any] | None,
        new_round: dict[str, Any] | None,
        wave: int,
        max_response_id: int,
        items: Any,
        strata: Any,
    ) -> int:
        """Record a round (when new) and one wave of its design in one transaction; the round id."""
        now = utcnow()
        with self.engine.begin() as conn:
            if round_row is None:
                t = models.ReviewRound.__table__
                round_id = conn.execute(t.insert().returning(t.c.id), {**new_round, "created_at": now}).scalar_one()
            else:
                round_id = round_row["id"]
            conn.execute(
                models.RoundWave.__table__.insert(),
                {"round_id": round_id, "wave": wave, "max_response_id": max_response_id, "routed_at": now},
            )
            if len(strata):
                conn.execute(
                    models.RoundStratum.__table__.insert(),
                    [
                        {
                            "round_id": round_id,
                            "wave": wave,
                            "model": s.model,
                            "benchmark": s.benchmark,
                            "stratum": s.stratum,
                            "population": int(s.population),
                            "sample": int(s.sample),
                        }
                        for s in strata.itertuples()
                    ],
                )
            if len(items):
                _bulk_insert(
                    conn,
                    models.RoundItem.__table__,
                    ("round_id", "response_id", "wave", "stratum", "inclusion_prob", "ext_id"),
                    list(
                        zip(
                            [round_id] * len(items),
                            items.response_id.astype(int).tolist(),
                            [wave] * len(items),
                            items.stratum.tolist(),
                            items.inclusion_prob.astype(float).tolist(),
                            items.ext_id.tolist(),
                        )
                    ),
                )
        return round_id

    def round_strata(self, round_id: int) -> Any:
        t = models.RoundStratum.__table__
        with self.engine.connect() as conn:
            return _frame(conn, select(t).where(t.c.round_id == round_id).order_by(t.c.id))

    def round_items(self, round_id: int, *, with_text: bool = False) -> Any:
        """Items of a round joined with their response (model, benchmark, prompt_id, ...)."""
        i, r = models.RoundItem.__table__, models.Response.__table__
        cols = [
            i.c.id.label("round_item_id"),
            i.c.response_id,
            i.c.wave,
            i.c.stratum,
            i.c.inclusion_prob,
            i.c.ext_id,
            i.c.gold_label,
            r.c.model,
            r.c.benchmark,
            r.c.prompt_id,
            r.c.epoch,
            r.c.judge,
            r.c.category,
            r.c.judge_label,
            r.c.judge_verdict,
        ]
        if with_text:
            cols += [r.c.prompt, r.c.response]
        stmt = select(*cols).join(r, r.c.id == i.c.response_id).where(i.c.round_id == round_id).order_by(i.c.id)
        with self.engine.connect() as conn:
            return _frame(conn, stmt)

    def set_gold(self, round_id: int, labels: dict[int, str]) -> None:
        """round_item_id -> known correct verdict (gold items), in one transaction."""
        t = models.RoundItem.__table__
        with self.engine.begin() as conn:
            for item, label in labels.items():
                conn.execute(t.update().where(t.c.round_id == round_id, t.c.id == item).values(gold_label=label))

    # Label Studio projects and tasks ------------------------------------------------------------
    def ls_project(self, round_id: int, annotator_id: int) -> dict[str, Any] | None:
        t = models.LsProject.__table__
        with self.engine.connect() as conn:
            row = (
                conn.execute(select(t).where(t.c.round_id == round_id, t.c.annotator_id == annotator_id))
                .mappings()
                .first()
            )
            return dict(row) if row else None

    def ls_projects(self, round_id: int | None = None) -> Any:
        p, a, rr = models.LsProject.__table__, models.Annotator.__table__, models.ReviewRound.__table__
        stmt = (
            select(p, a.c.pseudonym, a.c.ls_user_id, rr.c.name.label("round"))
            .join(a, a.c.id == p.c.annotator_id)
            .join(rr, rr.c.id == p.c.round_id)
            .order_by(p.c.id)
        )
        if round_id is not None:
            stmt = stmt.where(p.c.round_id == round_id)
        with self.engine.connect() as conn:
            return _frame(conn, stmt)

    def add_ls_project(self, round_id: int, annotator_id: int, title: str, project_id: int | None) -> int:
        t = models.LsProject.__table__
        with self.engine.begin() as conn:
            return conn.execute(
                t.insert().returning(t.c.id),
                {
                    "round_id": round_id,
                    "annotator_id": annotator_id,
                    "title": title,
                    "project_id": project_id,
                    "created_at": utcnow(),
                },
            ).scalar_one()

    def set_ls_project_id(self, ls_project_id: int, project_id: int) -> None:
        t = models.LsProject.__table__
        with self.engine.begin() as conn:
            conn.execute(t.update().where(t.c.id == ls_project_id).values(project_id=project_id))

    def set_last_pulled(self, ls_project_id: int, when: str) -> None:
        t = models.LsProject.__table__
        with self.engine.begin() as conn:
            conn.execute(t.update().where(t.c.id == ls_project_id).values(last_pulled_at=when))

    def ls_tasks(self, ls_project_id: int) -> Any:
        t = models.LsTask.__table__
        with self.engine.connect() as conn:
            return _frame(conn, select(t).where(t.c.ls_project_id == ls_project_id).order_by(t.c.position))

    def add_ls_tasks(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            cols = ("ls_project_id", "round_item_id", "ext_id", "position")
            with self.engine.begin() as conn:
                _bulk_insert(conn, models.LsTask.__table__, cols, [tuple(r[c] for c in cols) for r in rows])

    def item_texts(self, round_item_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
        """round_item_id -> (prompt, response), for building tasks batch by batch."""
        i, r = models.RoundItem.__table__, models.Response.__table__
        out: dict[int, tuple[str, str]] = {}
        ids = [int(x) for x in round_item_ids]
        with self.engine.connect() as conn:
            for start in range(0, len(ids), 900):
                chunk = ids[start : start + 900]
                rows = conn.execute(
                    select(i.c.id, r.c.prompt, r.c.response).join(r, r.c.id == i.c.response_id).where(i.c.id.in_(chunk))
                ).all()
                out.update({row[0]: (row[1], row[2]) for row in rows})
        return out

    def set_task_ids(self, ls_project_id: int, mapping: dict[str, int]) -> None:
        """Record ext_id -> task id for imported tasks (one transaction)."""
        if not mapping:
            return
        now = utcnow()
        with self.engine.begin() as conn:
            ph = "?" if conn.dialect.name == "sqlite" else "%s"
            stamp = self.db_timestamp(now)  # type: ignore[attr-defined]
            cur = conn.connection.driver_connection.cursor()
            cur.executemany(
                f"UPDATE ls_task SET task_id = {ph}, imported_at = {ph} WHERE ls_project_id = {ph} AND ext_id = {ph}",
                [(int(tid), stamp, int(ls_project_id), ext) for ext, tid in mapping.items()],
            )
            cur.close()

    # annotations --------------------------------------------------------------------------------
    def annotations_of_project(self, ls_project_id: int) -> dict[int, dict[str, Any]]:
        t = models.Annotation.__table__
        with self.engine.connect() as conn:
            rows = conn.execute(select(t).where(t.c.ls_project_id == ls_project_id)).mappings().all()
        return {r["ls_annotation_id"]: dict(r) for r in rows}

    def apply_pull(
        self,
        ls_project_id: int,
        *,
        inserts: list[dict[str, Any]],
        updates: list[dict[str, Any]],
        deletions: list[int],
        quarantine: list[dict[str, Any]],
        pulled_at_server: str | None,
    ) -> int:
        """Write one project's pull in one transaction; returns the number of new quarantine rows.

        ``updates`` carry the annotation ``id`` and the new values; the old values go to
        annotation_history first. ``deletions`` are annotation ids no longer in Label Studio.
        """
        a, h, q, p = (
            models.Annotation.__table__,
            models.AnnotationHistory.__table__,
            models.Quarantine.__table__,
            models.LsProject.__table__,
        )
        now = utcnow()
        kept = ("verdict", "refusal", "confidence", "rationale", "skipped", "deleted", "updated_at", "result")
        new_quarantine = 0
        with self.engine.begin() as conn:
            if inserts:
                conn.execute(a.insert(), [{**row, "pulled_at": now} for row in inserts])
            for row in updates:
                old = conn.execute(select(*[a.c[k] for k in kept]).where(a.c.id == row["id"])).mappings().one()
                conn.execute(
                    h.insert(),
                    {
                        **dict(old),
                        "annotation_id": row["id"],
                        "replaced_at": now,
                        "change": row.pop("change", "updated"),
                    },
                )
                conn.execute(
                    a.update()
                    .where(a.c.id == row["id"])
                    .values(**{k: v for k, v in row.items() if k != "id"}, pulled_at=now)
                )
            for annotation_id in deletions:
                old = conn.execute(select(*[a.c[k] for k in kept]).where(a.c.id == annotation_id)).mappings().one()
                conn.execute(
                    h.insert(), {**dict(old), "annotation_id": annotation_id, "replaced_at": now, "change": "deleted"}
                )
                conn.execute(a.update().where(a.c.id == annotation_id).values(deleted=True, pulled_at=now))
            for row in quarantine:
                exists = conn.execute(
                    select(q.c.id).where(q.c.ls_project_id == ls_project_id, q.c.fingerprint == row["fingerprint"])
                ).first()
                if not exists:
                    conn.execute(q.insert(), {**row, "ls_project_id": ls_project_id, "pulled_at": now})
                    new_quarantine += 1
            if pulled_at_server:
                conn.execute(p.update().where(p.c.id == ls_project_id).values(last_pulled_at=pulled_at_server))
        return new_quarantine

    def annotations(self, round_id: int | None = None, *, include_inactive: bool = False) -> Any:
        """Long table of annotations: round, item, annotator pseudonym, verdict, ... ."""
        a, p, an, i, rr = (
            models.Annotation.__table__,
            models.LsProject.__table__,
            models.Annotator.__table__,
            models.RoundItem.__table__,
            models.ReviewRound.__table__,
        )
        stmt = (
            select(
                rr.c.name.label("round"),
                a.c.id.label("annotation_id"),
                a.c.round_item_id,
                i.c.response_id,
                i.c.stratum,
                an.c.pseudonym.label("annotator"),
                a.c.ls_annotation_id,
                a.c.verdict,
                a.c.refusal,
                a.c.confidence,
                a.c.rationale,
                a.c.skipped,
                a.c.deleted,
                a.c.lead_time,
                a.c.created_at,
                a.c.updated_at,
            )
            .join(p, p.c.id == a.c.ls_project_id)
            .join(an, an.c.id == a.c.annotator_id)
            .join(i, i.c.id == a.c.round_item_id)
            .join(rr, rr.c.id == p.c.round_id)
            .order_by(a.c.id)
        )
        if round_id is not None:
            stmt = stmt.where(p.c.round_id == round_id)
        if not include_inactive:
            stmt = stmt.where(a.c.deleted == False)  # noqa: E712 (SQL expression)
        with self.engine.connect() as conn:
            return _frame(conn, stmt)

    def annotation_history(self) -> Any:
        t = models.AnnotationHistory.__table__
        with self.engine.connect() as conn:
            return _frame(conn, select(t).order_by(t.c.id))

    # adjudication -------------------------------------------------------------------------------
    def final_labels(self, round_id: int, *, history: bool = False) -> Any:
        """Decisions of a round; by default only the latest per item (the one in force)."""
        t = models.FinalLabel.__table__
        with self.engine.connect() as conn:
            df = _frame(conn, select(t).where(t.c.round_id == round_id).order_by(t.c.id))
        if history or df.empty:
            return df
        return df.drop_duplicates("round_item_id", keep="last").reset_index(drop=True)

    def add_final_labels(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            now = utcnow()
            with self.engine.begin() as conn:
                conn.execute(models.FinalLabel.__table__.insert(), [{**r, "decided_at": now} for r in rows])

    def escalations(self, round_id: int) -> Any:
        t, a = models.Escalation.__table__, models.Annotator.__table__
        stmt = (
            select(t, a.c.pseudonym.label("expert"))
            .join(a, a.c.id == t.c.expert_id)
            .where(t.c.round_id == round_id)
            .order_by(t.c.id)
        )
        with self.engine.connect() as conn:
            return _frame(conn, stmt)

    def add_escalations(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            now = utcnow()
            with self.engine.begin() as conn:
                conn.execute(models.Escalation.__table__.insert(), [{**r, "created_at": now} for r in rows])

    # diagnostics --------------------------------------------------------------------------------
    def stored_features(self, version: str) -> Any:
        """response_id plus one column per feature, for the features of this version."""
        import json as _json

        import pandas as pd

        t = models.ResponseFeature.__table__
        with self.engine.connect() as conn:
            rows = conn.execute(select(t.c.response_id, t.c.features).where(t.c.version == version)).all()
        if not rows:
            return pd.DataFrame(columns=["response_id"])
        return pd.DataFrame([{"response_id": r[0], **_json.loads(r[1])} for r in rows])

    def save_features(self, frame: Any, version: str) -> None:
        import json as _json

        if frame is None or len(frame) == 0:
            return
        t = models.ResponseFeature.__table__
        now = utcnow()
        cols = [c for c in frame.columns if c != "response_id"]
        rows = [
            {
                "response_id": int(r["response_id"]),
                "version": version,
                "computed_at": now,
                "features": _json.dumps({c: (None if r[c] != r[c] else float(r[c])) for c in cols}),
            }
            for r in frame.to_dict("records")
        ]
        with self.engine.begin() as conn:
            conn.execute(t.delete().where(t.c.response_id.in_([r["response_id"] for r in rows])))
            conn.execute(t.insert(), rows)

    def responses_for_diagnosis(self, judge: str) -> Any:
        r = models.Response.__table__
        stmt = (
            select(
                r.c.id.label("response_id"),
                r.c.model,
                r.c.benchmark,
                r.c.prompt_id,
                r.c.prompt,
                r.c.response,
                r.c.judge_label,
            )
            .where(r.c.judge == judge)
            .order_by(r.c.id)
        )
        with self.engine.connect() as conn:
            return _frame(conn, stmt)

    def save_diagnosis(self, judge: str, result: dict[str, Any]) -> None:
        import json as _json

        with self.engine.begin() as conn:
            conn.execute(
                models.Diagnosis.__table__.insert(),
                {"judge": judge, "result": _json.dumps(result), "created_at": utcnow()},
            )

    def latest_diagnosis(self, judge: str | None = None) -> dict[str, Any] | None:
        import json as _json

        t = models.Diagnosis.__table__
        stmt = select(t.c.result).order_by(t.c.id.desc()).limit(1)
        if judge:
            stmt = stmt.where(t.c.judge == judge)
        with self.engine.connect() as conn:
            row = conn.execute(stmt).first()
        return _json.loads(row[0]) if row else None

    def quarantined(self, round_id: int | None = None) -> Any:
        q, p = models.Quarantine.__table__, models.LsProject.__table__
        stmt = select(q, p.c.round_id).join(p, p.c.id == q.c.ls_project_id).order_by(q.c.id)
        if round_id is not None:
            stmt = stmt.where(p.c.round_id == round_id)
        with self.engine.connect() as conn:
            return _frame(conn, stmt)


class Store(_CoreStore, ReviewStore):
    """The store: responses and ingest (``_CoreStore``) plus review rounds (``ReviewStore``)."""
