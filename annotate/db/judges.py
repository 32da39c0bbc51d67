"""Every judge's verdict on the responses a round reviewed: the human label belongs to the response."""

from __future__ import annotations

from typing import Any

import pandas as pd
from sqlalchemy import ColumnElement, and_, case, select

from annotate.columns import NO_JUDGE
from annotate.db import tables as m
from annotate.db.engine import frame
from annotate.db.store_base import Component


def same_key(a: Any, b: Any) -> ColumnElement[bool]:
    """Two response rows (table aliases) under the same (benchmark, model, prompt_id, epoch)."""
    return and_(
        a.c.benchmark == b.c.benchmark, a.c.model == b.c.model, a.c.prompt_id == b.c.prompt_id, a.c.epoch == b.c.epoch
    )


def same_text(a: Any, b: Any) -> ColumnElement[bool]:
    """Two response rows with the same prompt and response text.

    The texts themselves are compared, not the stored content hash (it covers the verdict too).
    """
    return and_(a.c.prompt == b.c.prompt, a.c.response == b.c.response)


def same_response(a: Any, b: Any) -> ColumnElement[bool]:
    """The same response judged twice: the same key **and** the same text (another text is another response)."""
    return and_(same_key(a, b), same_text(a, b))


class JudgeTables(Component):
    """Reads that put several judges' verdicts beside the responses a round reviewed (no table of their own)."""

    def judge_verdicts(self, round_id: int) -> pd.DataFrame:
        """Every judge's row for the key of each response the round reviewed.

        A response is stored once per judge, identified by (benchmark, model, prompt_id, epoch,
        judge). A round item points at the routing judge's row; a reviewed label belongs to the
        *response*, so every other judge's row with the same (benchmark, model, prompt_id, epoch)
        **and the same prompt and response text** is the same response and can be audited
        against it. A row with the same key but another text is another response: it is
        returned with ``same_text`` 0 so that it can be reported, never audited.

        Returns
        -------
        DataFrame
            ``round_item_id, response_id, judge, judge_verdict, judge_label, label_reason,
            same_text`` (1 or 0), one row per round item and judge with a row for its key (the
            routing judge's own row included, with ``same_text`` 1), ordered by item and judge.
            Rows stored unjudged (judge ``NO_JUDGE``) are no judge's and are left out.
        """
        i = m.ROUND_ITEM
        routed = m.RESPONSE.alias("routed")
        other = m.RESPONSE.alias("other")
        stmt = (
            select(
                i.c.id.label("round_item_id"),
                other.c.id.label("response_id"),
                other.c.judge,
                other.c.judge_verdict,
                other.c.judge_label,
                other.c.label_reason,
                case((same_text(routed, other), 1), else_=0).label("same_text"),
            )
            .select_from(i.join(routed, routed.c.id == i.c.response_id).join(other, same_key(routed, other)))
            # No judge's "verdict" on a response stored unjudged: no judge figure, no judge rating.
            .where(i.c.round_id == round_id, other.c.judge != NO_JUDGE)
            .order_by(i.c.id, other.c.judge)
        )
        with self.engine.connect() as conn:
            return frame(conn, stmt)
