"""`annotate status`: progress per round, annotator and stratum, with an estimate of time to finish."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from annotate.pipeline._resolve import resolve_round

if TYPE_CHECKING:
    from annotate.pipeline.session import Session


def status_table(s: Session, round_name: str | None) -> pd.DataFrame:
    """Per round, annotator and stratum: tasks, done, skipped, remaining, median lead time, ETA."""
    store = s.store
    rounds = store.rounds()
    if round_name is not None:
        resolve_round(store, round_name)
        rounds = rounds[rounds.name == round_name]
    rows = []
    for r in rounds.itertuples():
        items = store.round_items(int(r.id))
        projects = store.ls_projects(int(r.id))
        ann = store.annotations(int(r.id))
        for p in projects.itertuples():
            tasks = store.ls_tasks(int(p.id)).merge(items[["round_item_id", "stratum"]], on="round_item_id")
            mine = ann.loc[ann.annotator == p.pseudonym]
            skipped_mask = mine.skipped.astype(bool)
            labelled = mine.loc[~skipped_mask & mine.verdict.notna()]
            done_items = set(labelled.round_item_id)
            skipped_items = set(mine.loc[skipped_mask].round_item_id) - done_items
            for stratum, group in tasks.groupby("stratum"):
                ids = set(group.round_item_id)
                done = len(ids & done_items)
                skipped = len(ids & skipped_items)
                lead = labelled[labelled.round_item_id.isin(ids)].lead_time.dropna()
                median = float(np.median(lead)) if len(lead) else None
                remaining = len(ids) - done - skipped
                rows.append(
                    {
                        "round": r.name,
                        "annotator": p.pseudonym,
                        "stratum": stratum,
                        "tasks": len(ids),
                        "imported": int(group.task_id.notna().sum()),
                        "done": done,
                        "skipped": skipped,
                        "remaining": remaining,
                        "median_lead_time_s": median,
                        "eta_s": None if median is None else remaining * median,
                    }
                )
    return pd.DataFrame(
        rows,
        columns=[
            "round",
            "annotator",
            "stratum",
            "tasks",
            "imported",
            "done",
            "skipped",
            "remaining",
            "median_lead_time_s",
            "eta_s",
        ],
    )


def quarantine_table(s: Session, round_name: str | None = None) -> pd.DataFrame:
    """Quarantined results (never counted): annotator, annotation, task, ext_id, kind and why.

    ``kind`` is the reason's fixed head (one of ``labelstudio.tasks.QUARANTINE_REASONS``), for
    counting; ``reason`` is the whole reason with its details.
    """
    round_id = int(resolve_round(s.store, round_name)["id"]) if round_name is not None else None
    q = s.store.quarantined(round_id)
    cols = ["annotator", "ls_annotation_id", "task_id", "ext_id", "kind", "reason"]
    if not len(q):
        return pd.DataFrame(columns=cols)
    q = q.assign(kind=q.reason.astype(str).str.split(": ", n=1).str[0])
    return q[cols].reset_index(drop=True)
