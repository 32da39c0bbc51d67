"""Ambiguity diagnostics: stored text features per response and the diagnoses made from them."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from sqlalchemy import select

from annotate.db import tables as m
from annotate.db.engine import utcnow
from annotate.db.store_base import Component


class DiagnosticTables(Component):
    """Text features (``response_feature``) and diagnoses."""

    # diagnostics --------------------------------------------------------------------------------
    def stored_features(self, version: str) -> pd.DataFrame:
        """response_id plus one column per feature, for the features of this version."""
        t = m.RESPONSE_FEATURE
        with self.engine.connect() as conn:
            rows = conn.execute(select(t.c.response_id, t.c.features).where(t.c.version == version)).all()
        if not rows:
            return pd.DataFrame(columns=["response_id"])
        return pd.DataFrame([{"response_id": r[0], **json.loads(r[1])} for r in rows])

    def save_features(self, frame: Any, version: str) -> None:
        if frame is None or len(frame) == 0:
            return
        t = m.RESPONSE_FEATURE
        now = utcnow()
        cols = [c for c in frame.columns if c != "response_id"]
        rows = [
            {
                "response_id": int(r["response_id"]),
                "version": version,
                "computed_at": now,
                "features": json.dumps({c: (None if r[c] != r[c] else float(r[c])) for c in cols}),
            }
            for r in frame.to_dict("records")
        ]
        with self.engine.begin() as conn:
            conn.execute(t.delete().where(t.c.response_id.in_([r["response_id"] for r in rows])))
            conn.execute(t.insert(), rows)

    def save_diagnosis(self, judge: str, result: dict[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                m.DIAGNOSIS.insert(),
                {"judge": judge, "result": json.dumps(result), "created_at": utcnow()},
            )

    def latest_diagnosis(self, judge: str | None = None) -> dict[str, Any] | None:
        t = m.DIAGNOSIS
        stmt = select(t.c.result).order_by(t.c.id.desc()).limit(1)
        if judge:
            stmt = stmt.where(t.c.judge == judge)
        with self.engine.connect() as conn:
            row = conn.execute(stmt).first()
        return json.loads(row[0]) if row else None
