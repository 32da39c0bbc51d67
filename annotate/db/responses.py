"""Reads of the ingested responses, their sources and ingest runs; the ingest transaction."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pandas as pd
from sqlalchemy import ColumnElement, and_, false, func, or_, select

from annotate.db import tables as m
from annotate.db.engine import begin_write, frame
from annotate.db.ingest_tx import IngestTransaction
from annotate.db.store_base import Component


def _routed_by(r: Any, judge: str, judges: Mapping[str, str] | None) -> ColumnElement[bool]:
    """The rows a round routes: its one judge's, or each benchmark's own judge's (``judges``)."""
    if judges is None:
        return r.c.judge == judge
    if not judges:
        return false()
    return or_(*(and_(r.c.benchmark == b, r.c.judge == j) for b, j in sorted(judges.items())))


class ResponseTables(Component):
    """Responses (one per judged model answer), source files and ingest runs."""

    @contextmanager
    def ingest_transaction(self) -> Iterator[IngestTransaction]:
        """One transaction for one `annotate ingest` run: commits on normal exit unless aborted.

        It holds the store's write lock from its start (``engine``: another writer waits, then
        gets "the store is busy"), so nothing is half-written when it cannot have the lock.
        """
        with self.engine.connect() as conn:
            trans = conn.begin()
            try:
                begin_write(conn)
                tx = IngestTransaction(conn, self.dialect)
                yield tx
                if tx.aborted:
                    trans.rollback()
                else:
                    trans.commit()
            except BaseException:
                trans.rollback()
                raise

    # -- reads --------------------------------------------------------------------------
    def label_counts(self, *, judge: str | None = None) -> pd.DataFrame:
        """Responses per (model, benchmark, judge, judge_label): a long DataFrame with column n."""
        r = m.RESPONSE.c
        stmt = select(r.model, r.benchmark, r.judge, r.judge_label, func.count().label("n")).group_by(
            r.model, r.benchmark, r.judge, r.judge_label
        )
        if judge:
            stmt = stmt.where(r.judge == judge)
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).all()
        return pd.DataFrame(rows, columns=["model", "benchmark", "judge", "judge_label", "n"])

    def set_aside_counts(self) -> pd.DataFrame:
        """Rows set aside at ingest and still without a response: columns model, benchmark, reason, n.

        One count per response key (benchmark, model, prompt_id, epoch) however many files or
        judges set it aside, the first reason kept; a key that has since been ingested as a
        response (another file, ``--keep-degenerate``) is not counted. Rows the reader set aside
        without a key count once per (file, line); their model is ``None`` when it named none.
        """
        a, r = m.SET_ASIDE_ROW.c, m.RESPONSE.c
        answered = (
            select(r.id)
            .where(
                r.benchmark == a.benchmark,
                r.model == a.model,
                r.prompt_id == a.prompt_id,
                r.epoch == a.epoch,
            )
            .exists()
        )
        stmt = select(a.model, a.benchmark, a.prompt_id, a.epoch, a.reason, a.source_id, a.line).where(~answered)
        with self.engine.connect() as conn:
            rows = pd.DataFrame(
                conn.execute(stmt.order_by(a.id)).all(),
                columns=["model", "benchmark", "prompt_id", "epoch", "reason", "source_id", "line"],
            )
        if rows.empty:
            return pd.DataFrame(columns=["model", "benchmark", "reason", "n"])
        keyed = rows.prompt_id.notna()
        once = pd.concat(
            [
                rows[keyed].drop_duplicates(["benchmark", "model", "prompt_id", "epoch"]),
                rows[~keyed].drop_duplicates(["source_id", "line", "reason"]),
            ]
        )
        out = once.groupby(["model", "benchmark", "reason"], dropna=False).size().rename("n").reset_index()
        return out.sort_values(["model", "benchmark", "n"], ascending=[True, True, False]).reset_index(drop=True)

    def judge_kinds(self) -> pd.DataFrame:
        """What each judge's verdicts are about, per benchmark: columns benchmark, judge, kind, responses.

        kind is one of ``annotate.columns.JUDGE_KINDS`` (schema v11; rows stored before it are
        ``safety``). Ingest keeps one kind per (benchmark, judge) (a file that would add a second
        is refused), so there is one row per pair; a pair with several rows was written around
        that check, and a caller that needs its kind must refuse it rather than choose one.
        """
        r = m.RESPONSE.c
        stmt = (
            select(r.benchmark, r.judge, r.judge_kind, func.count().label("n"))
            .group_by(r.benchmark, r.judge, r.judge_kind)
            .order_by(r.benchmark, r.judge, r.judge_kind)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).all()
        return pd.DataFrame(
            [(b, j, k, int(n)) for b, j, k, n in rows], columns=["benchmark", "judge", "kind", "responses"]
        )

    def unparsed_verdicts(self, *, judge: str | None = None, max_chars: int = 200) -> pd.DataFrame:
        """Raw verdicts the rubric read as unparsed, counted per (format, judge, benchmark, verdict).

        Verdicts longer than ``max_chars`` (an LLM judge's free text) are counted together per
        (format, judge, benchmark) with ``judge_verdict`` None and ``free_text`` True, so a million
        distinct answers make one row.
        """
        r, s = m.RESPONSE.c, m.SOURCE_FILE.c
        keys = (s.format, r.judge, r.benchmark)
        short = func.length(r.judge_verdict) <= max_chars
        grouped = (
            select(*keys, r.judge_verdict, func.count().label("n"))
            .select_from(m.RESPONSE.join(m.SOURCE_FILE, s.id == r.source_id))
            .where(r.label_reason == "unparsed", r.judge_verdict.is_not(None), short)
            .group_by(*keys, r.judge_verdict)
        )
        long = (
            select(*keys, func.count().label("n"))
            .select_from(m.RESPONSE.join(m.SOURCE_FILE, s.id == r.source_id))
            .where(r.label_reason == "unparsed", r.judge_verdict.is_not(None), ~short)
            .group_by(*keys)
        )
        if judge:
            grouped, long = grouped.where(r.judge == judge), long.where(r.judge == judge)
        with self.engine.connect() as conn:
            rows = [(*row, False) for row in conn.execute(grouped).all()]
            rows += [(f, j, b, None, n, True) for f, j, b, n in conn.execute(long).all()]
        return pd.DataFrame(rows, columns=["format", "judge", "benchmark", "judge_verdict", "n", "free_text"])

    def ambiguous_reasons(self, *, judge: str | None = None) -> pd.DataFrame:
        """Responses the judge's verdict made ambiguous, per (judge, label_reason): a DataFrame with column n."""
        r = m.RESPONSE.c
        stmt = (
            select(r.judge, r.label_reason, func.count().label("n"))
            .where(r.judge_label == "ambiguous")
            .group_by(r.judge, r.label_reason)
        )
        if judge:
            stmt = stmt.where(r.judge == judge)
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).all()
        return pd.DataFrame(rows, columns=["judge", "label_reason", "n"])

    def verdict_reasons(self, *, judge: str | None = None) -> pd.DataFrame:
        """Responses per (judge, model, benchmark, label_reason): a DataFrame with column n (the invalid
        verdicts' share per system and test is read from it: ``summary``)."""
        r = m.RESPONSE.c
        stmt = select(r.judge, r.model, r.benchmark, r.label_reason, func.count().label("n")).group_by(
            r.judge, r.model, r.benchmark, r.label_reason
        )
        if judge:
            stmt = stmt.where(r.judge == judge)
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).all()
        return pd.DataFrame(rows, columns=["judge", "model", "benchmark", "label_reason", "n"])

    def count_responses(self) -> int:
        with self.engine.connect() as conn:
            return conn.execute(select(func.count()).select_from(m.RESPONSE)).scalar_one()

    def responses(self, columns: Sequence[str] | None = None) -> pd.DataFrame:
        t = m.RESPONSE
        cols = [t.c[c] for c in columns] if columns else list(t.c)
        with self.engine.connect() as conn:
            rows = conn.execute(select(*cols).order_by(t.c.id)).all()
        return pd.DataFrame(rows, columns=[c.name for c in cols])

    def history(self) -> pd.DataFrame:
        t = m.RESPONSE_HISTORY
        with self.engine.connect() as conn:
            rows = conn.execute(select(t).order_by(t.c.id)).all()
        return pd.DataFrame(rows, columns=[c.name for c in t.c])

    def source_files(self) -> pd.DataFrame:
        t = m.SOURCE_FILE
        with self.engine.connect() as conn:
            rows = conn.execute(select(t).order_by(t.c.id)).all()
        return pd.DataFrame(rows, columns=[c.name for c in t.c])

    def ingest_runs(self) -> pd.DataFrame:
        t = m.INGEST_RUN
        with self.engine.connect() as conn:
            rows = conn.execute(select(t).order_by(t.c.id)).all()
        return pd.DataFrame(rows, columns=[c.name for c in t.c])

    def judges(self) -> list[str]:
        r = m.RESPONSE
        with self.engine.connect() as conn:
            return list(conn.execute(select(r.c.judge).distinct().order_by(r.c.judge)).scalars())

    def max_response_id(self) -> int:
        r = m.RESPONSE
        with self.engine.connect() as conn:
            return conn.execute(select(func.max(r.c.id))).scalar() or 0

    def routing_population(
        self, judge: str, after_id: int, up_to_id: int, judges: Mapping[str, str] | None = None
    ) -> pd.DataFrame:
        """Responses of one judge with after_id < id <= up_to_id (one wave's population).

        ``judges`` ({benchmark: judge}, a round across suites): each benchmark's responses of its
        own judge instead, and only those benchmarks'.
        """
        r = m.RESPONSE
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
            .where(_routed_by(r, judge, judges), r.c.id > after_id, r.c.id <= up_to_id)
            .order_by(r.c.id)
        )
        with self.engine.connect() as conn:
            return frame(conn, stmt)

    def transcript_count(
        self, judge: str, after_id: int, up_to_id: int, judges: Mapping[str, str] | None = None
    ) -> int:
        """How many responses of one judge with after_id < id <= up_to_id have a transcript."""
        return self._count_having(m.RESPONSE.c.transcript, judge, after_id, up_to_id, judges)

    def image_count(self, judge: str, after_id: int, up_to_id: int, judges: Mapping[str, str] | None = None) -> int:
        """How many responses of one judge with after_id < id <= up_to_id have an image."""
        return self._count_having(m.RESPONSE.c.image, judge, after_id, up_to_id, judges)

    def _count_having(
        self, column: Any, judge: str, after_id: int, up_to_id: int, judges: Mapping[str, str] | None
    ) -> int:
        r = m.RESPONSE
        stmt = (
            select(func.count())
            .select_from(r)
            .where(_routed_by(r, judge, judges), r.c.id > after_id, r.c.id <= up_to_id, column.is_not(None))
        )
        with self.engine.connect() as conn:
            return int(conn.execute(stmt).scalar_one())

    def responses_for_diagnosis(self, judge: str) -> pd.DataFrame:
        """The judge's responses with their texts (``transcript``: JSON text, None for single-turn)."""
        r = m.RESPONSE
        stmt = (
            select(
                r.c.id.label("response_id"),
                r.c.model,
                r.c.benchmark,
                r.c.prompt_id,
                r.c.prompt,
                r.c.response,
                r.c.transcript,
                r.c.judge_label,
            )
            .where(r.c.judge == judge)
            .order_by(r.c.id)
        )
        with self.engine.connect() as conn:
            return frame(conn, stmt)
