"""The bulk write of one ingested file: one database transaction, raw DBAPI ``executemany``.

The raw cursor bypasses SQLAlchemy's error handling, so its calls go through ``translating()``:
a lock timeout there is the same "store is busy" error as anywhere else.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.engine import Connection

from annotate.columns import RESPONSE_COLUMNS, RESPONSE_KEY
from annotate.db import tables as m
from annotate.db.engine import db_timestamp, translating, utcnow


@dataclass
class BatchResult:
    inserted: int = 0
    duplicates: int = 0
    # (index in batch, existing response id, existing source id) for keys holding other content
    conflicts: list[tuple[int, int, int]] = field(default_factory=list)
    # stored duplicates that took the hazard, persona or locale they were stored without
    facets_filled: int = 0


#: The prompt's fields a stored response takes from a later file that gives them (not its content identity).
FACETS = ("hazard", "persona", "locale")


class IngestTransaction:
    """Bulk writes of one ingested file, all in one database transaction.

    Rows are tuples in ``RESPONSE_COLUMNS`` order. Nothing is visible to others, and nothing
    remains, unless the surrounding ``Store.ingest_transaction`` block ends without error and
    without ``abort()``.
    """

    def __init__(self, conn: Connection, dialect: str) -> None:
        self._conn = conn
        self._dbapi: Any = conn.connection.driver_connection
        self.dialect = dialect
        self.source_id: int = 0
        self.aborted = False
        self._keys_table = False
        ph = "?" if dialect == "sqlite" else "%s"
        self._ph = ph
        cols = ", ".join(RESPONSE_COLUMNS)
        self._insert_sql = (
            f"INSERT INTO response ({cols}) VALUES ({', '.join([ph] * len(RESPONSE_COLUMNS))}) "
            f"ON CONFLICT ({', '.join(RESPONSE_KEY)}) DO NOTHING"
        )

    def abort(self) -> None:
        self.aborted = True

    def timestamp(self, when: datetime) -> Any:
        """``when`` as the raw insert path must pass it (the ``ingested_at`` column of a row)."""
        return db_timestamp(self.dialect, when)

    def record_run(self, **values: Any) -> None:
        """Record the ingest run of the current source file (options and rubric as JSON)."""
        values = dict(values)
        for key in ("options", "rubric"):
            if not isinstance(values.get(key), str):
                values[key] = json.dumps(values.get(key), sort_keys=True)
        self._conn.execute(m.INGEST_RUN.insert(), {"source_id": self.source_id, **values})

    def record_set_aside(self, rows: Sequence[dict[str, Any]]) -> int:
        """Keep the current source's set-aside rows (``set_aside_row``), each once: a row the
        source already holds (the same file ingested again) is not added. Returns how many were."""
        if not rows:
            return 0
        t = m.SET_ASIDE_ROW
        have = set(self._conn.execute(select(t.c.row_key).where(t.c.source_id == self.source_id)).scalars())
        new: dict[str, dict[str, Any]] = {}
        for row in rows:
            if row["row_key"] not in have:
                new.setdefault(row["row_key"], {**row, "source_id": self.source_id})
        if new:
            self._conn.execute(t.insert(), list(new.values()))
        return len(new)

    def use_source(self, *, sha256: str | None, path: str, fmt: str, size_bytes: int) -> int:
        """Select (registering it when new) the source file the next rows come from.

        ``sha256=None``: the hash is known only once the file has been read (it is taken from
        the bytes read, in the same pass); the source is registered under a provisional key
        until ``finish_source`` gives it its hash, in the same transaction.
        """
        t = m.SOURCE_FILE
        if sha256 is None:
            sha256 = f"pending:{uuid.uuid4().hex}"
            src = None
        else:
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

    def finish_source(self, sha256: str) -> int:
        """Give the provisional source (``use_source(sha256=None)``) its hash. When those bytes
        are registered already (the same file ingested before), this run's rows and history move
        to that source and the provisional one is deleted. Returns the source id."""
        t = m.SOURCE_FILE
        existing = self._conn.execute(select(t.c.id).where(t.c.sha256 == sha256)).scalar()
        if existing is None:
            self._conn.execute(t.update().where(t.c.id == self.source_id).values(sha256=sha256))
            return self.source_id
        r, h = m.RESPONSE, m.RESPONSE_HISTORY
        self._conn.execute(r.update().where(r.c.source_id == self.source_id).values(source_id=existing))
        self._conn.execute(
            h.update().where(h.c.replaced_by_source_id == self.source_id).values(replaced_by_source_id=existing)
        )
        self._conn.execute(t.delete().where(t.c.id == self.source_id))
        self.source_id = existing
        return existing

    def insert_batch(self, rows: Sequence[tuple[Any, ...]], *, write: bool = True) -> BatchResult:
        """Insert rows whose key is new; classify the others as duplicates or conflicts.

        With ``write=False`` nothing is inserted: only conflicts with stored rows are found
        (used to keep validating a file that is already known to be refused).
        """
        if not rows:
            return BatchResult()
        if write:
            with translating():
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
        key_idx = [RESPONSE_COLUMNS.index(c) for c in RESPONSE_KEY]
        sha_idx = RESPONSE_COLUMNS.index("content_sha")
        with translating():
            existing = self._lookup([tuple(r[i] for i in key_idx) for r in rows])
        facet_idx = [RESPONSE_COLUMNS.index(c) for c in FACETS]
        fills: list[dict[str, Any]] = []
        for i, row in enumerate(rows):
            found = existing.get(i)
            if found is None:  # only possible with write=False: a new key
                continue
            rid, sha, src, *stored = found
            new = [row[k] for k in facet_idx]
            if sha != row[sha_idx] or any(
                o is not None and n is not None and o != n for o, n in zip(stored, new, strict=True)
            ):
                result.conflicts.append((i, rid, src))
            elif any(o is None and n is not None for o, n in zip(stored, new, strict=True)):
                # The same response, stored without its prompt's facets (an older annotate, no --prompts): given now.
                fills.append(
                    {"id": rid, **{f: o if o is not None else n for f, o, n in zip(FACETS, stored, new, strict=True)}}
                )
        if fills and write:
            with translating():
                self._conn.execute(
                    text("UPDATE response SET hazard = :hazard, persona = :persona, locale = :locale WHERE id = :id"),
                    fills,
                )
            result.facets_filled = len(fills)
        if inserted < 0:  # the driver could not count: every non-conflicting new key went in
            inserted = len(rows) - len(existing)
        result.inserted = inserted
        result.duplicates = len(rows) - inserted - len(result.conflicts)
        return result

    def _lookup(self, keys: list[tuple[Any, ...]]) -> dict[int, tuple[Any, ...]]:
        """Stored (id, content_sha, source_id, hazard, persona, locale) per position in ``keys``, for keys that exist.

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
            "SELECT k.idx, r.id, r.content_sha, r.source_id, r.hazard, r.persona, r.locale FROM ingest_keys k "
            "CROSS JOIN response r "
            "WHERE r.benchmark = k.benchmark AND r.model = k.model AND r.prompt_id = k.prompt_id "
            "AND r.epoch = k.epoch AND r.judge = k.judge"
        )
        out = {row[0]: tuple(row[1:]) for row in cur.fetchall()}
        cur.close()
        return out

    def stored_kinds(self, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], set[str]]:
        """The judge kinds stored (this transaction's rows included) per (benchmark, judge) of ``pairs``."""
        r = m.RESPONSE.c
        out: dict[tuple[str, str], set[str]] = {}
        for benchmark, judge in pairs:
            stmt = select(r.judge_kind).where(r.benchmark == benchmark, r.judge == judge).distinct()
            out[(benchmark, judge)] = {k for (k,) in self._conn.execute(stmt).all()}
        return out

    def max_response_id(self) -> int:
        return self._conn.execute(select(func.max(m.RESPONSE.c.id))).scalar() or 0

    def describe_difference(self, response_id: int, row: tuple[Any, ...]) -> str:
        """Which of prompt / response / verdict / score / label / judge kind / transcript differ from the stored row.

        ``"transcript (none stored)"`` alone: the stored row is the same response without its
        transcript (ingested before transcripts were kept).
        """
        fields = (
            *("prompt", "response", "judge_verdict", "judge_score", "judge_label", "judge_kind", "transcript"),
            *("image", "hazard", "persona", "locale"),
        )
        stored = self._conn.execute(
            text(f"SELECT {', '.join(fields)} FROM response WHERE id = :id"), {"id": response_id}
        ).one()
        new = dict(zip(RESPONSE_COLUMNS, row, strict=True))
        diffs = []
        for name, old in zip(fields, stored, strict=True):
            if old != new[name]:
                if name == "transcript" and old is None:
                    diffs.append("transcript (none stored)")
                elif name in ("prompt", "response", "transcript", "image"):
                    diffs.append(name)
                else:
                    diffs.append(f"{name} ({old!r} stored, {new[name]!r} here)")
        return ", ".join(diffs) or "content"

    def replace(self, response_id: int, row: tuple[Any, ...], now: datetime) -> None:
        """Overwrite an existing response, keeping its previous values in response_history."""
        t = m.RESPONSE
        kept = (
            "prompt",
            "response",
            "judge_verdict",
            "judge_score",
            "judge_label",
            "label_reason",
            "judge_kind",
            "category",
            "meta",
            "transcript",
            "image",
            "hazard",
            "persona",
            "locale",
            "content_sha",
            "source_id",
            "ingested_at",
        )
        old = self._conn.execute(select(*[t.c[c] for c in kept]).where(t.c.id == response_id)).mappings().one()
        self._conn.execute(
            m.RESPONSE_HISTORY.insert(),
            {**dict(old), "response_id": response_id, "replaced_at": now, "replaced_by_source_id": self.source_id},
        )
        values = dict(zip(RESPONSE_COLUMNS, row, strict=True))
        for k in RESPONSE_KEY:
            values.pop(k)
        values["ingested_at"] = now
        self._conn.execute(
            m.RESPONSE.update().where(m.RESPONSE.c.id == response_id),
            values,
        )
