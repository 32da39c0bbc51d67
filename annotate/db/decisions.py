"""Adjudication: final labels (append-only, the latest per item in force) and escalations."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from sqlalchemy import select

from annotate.db import tables as m
from annotate.db.engine import frame, utcnow
from annotate.db.store_base import Component


class DecisionTables(Component):
    """Final labels and the items sent to an expert."""

    # adjudication -------------------------------------------------------------------------------
    def final_labels(self, round_id: int, *, history: bool = False) -> pd.DataFrame:
        """Decisions of a round; by default only the latest per item (the one in force)."""
        t = m.FINAL_LABEL
        with self.engine.connect() as conn:
            df = frame(conn, select(t).where(t.c.round_id == round_id).order_by(t.c.id))
        if history or df.empty:
            return df
        return df.drop_duplicates("round_item_id", keep="last").reset_index(drop=True)

    def add_final_labels(
        self, rows: list[dict[str, Any]], *, round_id: int | None = None, rules: dict[str, Any] | None = None
    ) -> None:
        """Append decision records; with ``rules``, record them as ``round_id``'s latest adjudication's,
        in the same transaction (the records in force and the rules they follow from never part)."""
        if not rows and rules is None:
            return
        now = utcnow()
        with self.engine.begin() as conn:
            if rows:
                conn.execute(m.FINAL_LABEL.insert(), [{**r, "decided_at": now} for r in rows])
            if rules is not None and round_id is not None:
                t = m.REVIEW_ROUND
                conn.execute(
                    t.update().where(t.c.id == round_id).values(adjudication=json.dumps(rules, sort_keys=True))
                )

    def escalations(self, round_id: int) -> pd.DataFrame:
        t, a = m.ESCALATION, m.ANNOTATOR
        stmt = (
            select(t, a.c.pseudonym.label("expert"))
            .join(a, a.c.id == t.c.expert_id)
            .where(t.c.round_id == round_id)
            .order_by(t.c.id)
        )
        with self.engine.connect() as conn:
            return frame(conn, stmt)

    def add_escalations(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            now = utcnow()
            with self.engine.begin() as conn:
                conn.execute(m.ESCALATION.insert(), [{**r, "created_at": now} for r in rows])
