"""`annotate status`: progress per round, annotator and stratum, with an estimate of time to finish;
with ``--round``, each reviewer's progress, time per task and agreement so far, and who stands out.

Everything here reads the store alone (what the last `annotate pull` brought in), never Label
Studio, so `status` stays cheap while reviewers work. The statistics and the flag rules are in
:mod:`annotate.stats.agreement.progress`; their limits are ``[agreement]`` settings:
``kappa_consensus`` (the per-annotator limit of `annotate agreement`) and, for a running round,
``fast_ratio`` (default 1/3), ``fast_seconds`` (3) and ``min_items`` (10).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.columns import VERDICTS
from annotate.errors import WorkspaceError
from annotate.pipeline._decisions import round_decisions
from annotate.pipeline._resolve import resolve_round
from annotate.pipeline._settings import rules_from_settings, thresholds_from_settings
from annotate.stats._common import jsonable
from annotate.stats.agreement.progress import (
    RunningLimits,
    agreement_so_far,
    fast_flags,
    low_agreement_flags,
    median_seconds,
    others_median,
    readable,
    seconds_text,
)
from annotate.stats.agreement.votes import current_labels, vote_matrix

if TYPE_CHECKING:
    from annotate.config import Workspace
    from annotate.db import Store
    from annotate.pipeline.session import Session
    from annotate.stats.agreement.progress import RunningLimits


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


REVIEWER_COLUMNS = [
    "annotator",
    "tasks",
    "imported",
    "done",
    "skipped",
    "left",
    "share_done",
    "n_timed",
    "median_seconds",
    "others_median_seconds",
    "time_note",
    "n_agreement_items",
    "agreement_with_majority",
    "kappa",
    "kappa_ci_low",
    "kappa_ci_high",
    "agreement_note",
    "alpha_without",
    "flags",
    "last_pulled_at",
    "last_file_pull_at",
]


def _last_file_pull(ann: pd.DataFrame, who: str) -> str | None:
    """When ``who``'s labels last arrived from a file (``pull --from-file``, ``import-labels``): ISO text, UTC."""
    if not len(ann) or "channel" not in ann or "pulled_at" not in ann:
        return None
    mine = ann.loc[(ann.annotator == who) & ann.channel.isin(["file", "import"]), "pulled_at"].dropna()
    return None if mine.empty else pd.Timestamp(mine.max()).strftime("%Y-%m-%dT%H:%M:%SZ")


def running_limits(ws: Workspace) -> RunningLimits:
    """``[agreement]``: the flag limits of a running round (see :class:`RunningLimits`)."""
    default = RunningLimits()
    cfg = ws.settings.get("agreement", {})

    def number(key: str, fallback: float) -> float:
        value = cfg.get(key, fallback)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise WorkspaceError(f"{ws.config_path}: [agreement] {key} must be a number >= 0, not {value!r}.")
        return float(value)

    min_items = number("min_items", default.min_items)
    if min_items != int(min_items) or min_items < 2:
        raise WorkspaceError(f"{ws.config_path}: [agreement] min_items must be a whole number >= 2, not {min_items:g}.")
    return RunningLimits(
        fast_ratio=number("fast_ratio", default.fast_ratio),
        fast_seconds=number("fast_seconds", default.fast_seconds),
        min_items=int(min_items),
        kappa_consensus=thresholds_from_settings(ws).kappa_consensus,
    )


def reviewer_status(s: Session, round_name: str, *, n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Per reviewer of one round: progress, time per task, agreement so far, flags and a plain reading.

    From the store alone (the labels as last pulled). Reviewers are the round's annotators (by
    pseudonym; the expert's project is in the per-stratum table only). Done = items with a
    current verdict; skipped = items skipped and not labelled since; left = the rest of the
    reviewer's tasks (imported or not). The agreement figure is
    :func:`annotate.stats.agreement.progress.agreement_so_far` on the 3-way verdicts.
    """
    out = reviewer_summary(s.store, round_name, limits=running_limits(s.ws), n_boot=n_boot, seed=seed)
    out["adjudication"] = adjudication_outlook(s, round_name)
    return out


def adjudication_outlook(s: Session, round_name: str) -> dict[str, Any]:
    """Whether `annotate adjudicate` is worth running now, from the votes as last pulled (nothing written).

    Under the round's latest rules (the workspace's ``[adjudication]`` with the last run's policy,
    waiting for every routed vote): how many items it would settle, send to the expert or leave
    unresolved that the record in force does not say yet, how many wait for a vote (per reviewer)
    and how many nobody has answered.
    """
    store = s.store
    round_row = resolve_round(store, round_name)
    recorded = json.loads(round_row["adjudication"]) if round_row.get("adjudication") else None
    policy = str(recorded.get("policy", "escalate")) if isinstance(recorded, dict) else "escalate"
    rules = replace(rules_from_settings(s.ws, policy), wait_for_votes=True)
    plan = round_decisions(store, round_row, rules)
    changed = plan.changed(store.final_labels(int(round_row["id"])))
    new = {k: sum(d.status == k for d in changed) for k in ("resolved", "escalated", "unresolved", "waiting")}
    complete = len(plan.items) - len(plan.waiting)
    name = round_row["name"]
    waits = ", ".join(f"{n} for {who}" for who, n in plan.waiting_by_reviewer().items())
    held = f"{len(plan.held)} item(s) with some votes wait for the rest ({waits})" if plan.held else ""
    team = store.annotators()
    experts = sorted(team.loc[team.role == "expert", "pseudonym"].astype(str)) if len(team) else []
    expert = f" --expert {experts[0] if len(experts) == 1 else 'EXPERT'}" if new["escalated"] else ""
    if new["resolved"] or new["escalated"] or new["unresolved"]:
        parts = [f"settle {new['resolved']} item(s)"] if new["resolved"] else []
        parts += [f"send {new['escalated']} to the expert"] if new["escalated"] else []
        parts += [f"leave {new['unresolved']} unresolved by policy"] if new["unresolved"] else []
        advice = (
            f"Adjudication is worth running: `annotate adjudicate --round {name}{expert}` would "
            f"{', '.join(parts)} now" + (f"; {held} and are left out" if held else "") + "."
        )
    elif plan.held:
        advice = (
            f"Nothing to adjudicate yet: {held}; they are settled (or go to the expert) once those votes are in "
            f"(`annotate adjudicate --round {name} --escalate-early` decides them on the votes so far)."
        )
    elif complete and plan.no_vote_yet < len(plan.items):
        advice = "Every item whose votes are in is decided: nothing new to adjudicate."
    else:
        advice = "Nothing to adjudicate yet: no item has all its votes."
    return {
        "complete": int(complete),
        "waiting": len(plan.held),
        "waiting_for": plan.waiting_by_reviewer(),
        "no_vote_yet": plan.no_vote_yet,
        "would_settle": new["resolved"],
        "would_escalate": new["escalated"],
        "would_leave_unresolved": new["unresolved"],
        "worthwhile": bool(new["resolved"] or new["escalated"] or new["unresolved"]),
        "advice": advice,
    }


def reviewer_summary(
    store: Store, round_name: str, *, limits: RunningLimits, n_boot: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """:func:`reviewer_status` on a store, with the limits given."""
    round_row = resolve_round(store, round_name)
    round_id = int(round_row["id"])
    reviewers = [str(a) for a in json.loads(round_row["annotators"])]
    projects = store.ls_projects(round_id)
    ann = store.annotations(round_id)
    labels = current_labels(ann, set(reviewers))
    rows: list[dict[str, Any]] = []
    for who in reviewers:
        mine_projects = projects.loc[projects.pseudonym == who]
        tasks = (
            pd.concat([store.ls_tasks(int(p.id)) for p in mine_projects.itertuples()]) if len(mine_projects) else None
        )
        task_items = set() if tasks is None else set(tasks.round_item_id)
        imported = 0 if tasks is None else int(tasks.task_id.notna().sum())
        mine = labels.loc[(labels.annotator == who) & labels.round_item_id.isin(task_items)]
        done_items = set(mine.round_item_id)
        skips = ann.loc[(ann.annotator == who) & ann.skipped.astype(bool) & ann.round_item_id.isin(task_items)]
        skipped = len(set(skips.round_item_id) - done_items)
        median, n_timed = median_seconds(mine.lead_time.to_numpy(dtype=float))
        pulled = [str(t) for t in mine_projects.last_pulled_at.dropna()] if len(mine_projects) else []
        rows.append(
            {
                "annotator": who,
                "tasks": len(task_items),
                "imported": imported,
                "done": len(done_items),
                "skipped": skipped,
                "left": len(task_items) - len(done_items) - skipped,
                "share_done": len(done_items) / len(task_items) if task_items else None,
                "n_timed": n_timed,
                "median_seconds": median,
                "time_note": _time_note(len(done_items), n_timed, limits),
                "last_pulled_at": max(pulled) if pulled else None,
                # When the reviewer's labels last came from a file (pull --from-file, import-labels), in UTC.
                "last_file_pull_at": _last_file_pull(ann, who),
            }
        )
    codes, _, _ = vote_matrix(labels, VERDICTS, reviewers)
    diag = agreement_so_far(
        codes.reshape(-1, len(reviewers)), len(VERDICTS), annotators=reviewers, n_boot=n_boot, seed=seed
    )
    low = low_agreement_flags(diag, limits)
    medians, timed = [r["median_seconds"] for r in rows], [r["n_timed"] for r in rows]
    fast = fast_flags(medians, timed, limits)
    refs = others_median(medians, timed, limits)
    flags: list[dict[str, Any]] = []
    for row, d, why_fast, why_low, ref in zip(rows, diag.annotators, fast, low, refs, strict=True):
        k = d.kappa_with_consensus
        read = readable(d, limits)
        row.update(
            {
                "n_agreement_items": d.n_consensus_units,
                "agreement_with_majority": d.agreement_with_consensus,
                "kappa": k.value,
                "kappa_ci_low": k.ci_low if read else None,
                "kappa_ci_high": k.ci_high if read else None,
                "agreement_note": _agreement_note(d.n_consensus_units, k.undefined_reason, len(reviewers), limits),
                "alpha_without": d.alpha_if_deleted.value,
                "others_median_seconds": ref,
                "flags": [name for name, why in (("fast", why_fast), ("low agreement", why_low)) if why],
            }
        )
        for kind, why in (("fast", why_fast), ("low agreement", why_low)):
            if why:
                flags.append({"annotator": row["annotator"], "kind": kind, "reason": why})
    table = jsonable([{c: row.get(c) for c in REVIEWER_COLUMNS} for row in rows])
    return {
        "round": round_row["name"],
        "label_set": "3-way",
        "statistic": "Cohen's kappa with the leave-one-out majority of the other reviewers, "
        f"95 % percentile bootstrap interval ({n_boot} replicates)",
        "limits": jsonable(vars(limits)),
        "reviewers": table,
        "flags": flags,
        "reading": _reading(table, flags, limits),
    }


def _time_note(done: int, n_timed: int, limits: RunningLimits) -> str | None:
    if not done:
        return "nothing labelled yet"
    if not n_timed:
        return "unknown: the pulled labels carry no lead_time"
    if n_timed < limits.min_items:
        return f"too few timed labels ({n_timed} < {limits.min_items}) to compare"
    return None


def _agreement_note(n_items: int, undefined: str | None, n_reviewers: int, limits: RunningLimits) -> str | None:
    if n_reviewers < 2:
        return "one reviewer: no one to agree with"
    if n_items < limits.min_items:
        return f"too few items ({n_items} < {limits.min_items}) labelled by the others too"
    if undefined is not None:
        return undefined
    if n_reviewers == 2:
        return "two reviewers: one figure for both, it cannot say who disagrees"
    return None


def _reading(rows: list[dict[str, Any]], flags: list[dict[str, Any]], limits: RunningLimits) -> str:
    """One line a lead reads: who stands out and what to do, or that nobody does (and why that may be).

    ``rows`` are the JSON-ready reviewer rows (None where a figure is missing).
    """
    by_name = {r["annotator"]: r for r in rows}
    parts = []
    # Fast by the absolute limit only (not against the others): said once for all of them, never as
    # "faster than the others" (two reviewers at 0.1 s and 0.3 s are each under the limit, neither faster).
    slowest_ok = [
        by_name[f["annotator"]]
        for f in flags
        if f["kind"] == "fast"
        and not (
            by_name[f["annotator"]]["others_median_seconds"] is not None
            and by_name[f["annotator"]]["median_seconds"]
            < limits.fast_ratio * by_name[f["annotator"]]["others_median_seconds"]
        )
    ]
    if slowest_ok:
        listed = ", ".join(f"{r['annotator']} {seconds_text(r['median_seconds'])}" for r in slowest_ok)
        parts.append(
            f"Under {limits.fast_seconds:g} s per task (median: {listed}): too short to read a response; check "
            "how these labels were made."
        )
    for f in flags:
        row = by_name[f["annotator"]]
        if f["kind"] == "fast":
            if row in slowest_ok:
                continue
            ref = row["others_median_seconds"]
            against = "" if ref is None else f" against {seconds_text(ref)}"
            parts.append(
                f"{row['annotator']} is much faster than the others (median {seconds_text(row['median_seconds'])} "
                f"per task{against}): check their labels."
            )
        else:
            others = [r["kappa"] for r in rows if r is not row and r["kappa_ci_low"] is not None]
            against = f" against {_span(others)}" if others else ""
            parts.append(
                f"{row['annotator']} agrees far less with the others (kappa {row['kappa']:.2f} with their "
                f"majority{against}): check their labels."
            )
    if parts:
        return " ".join(parts)
    if not any(r["done"] for r in rows):
        return "Nothing labelled yet (as of the last `annotate pull`)."
    if len(rows) > 1 and all(r["kappa_ci_low"] is None for r in rows):
        return (
            "No reviewer stands out so far; too few items labelled by several reviewers "
            f"(under {limits.min_items}) to compare their agreement yet."
        )
    return "No reviewer stands out so far: times per task and agreement are in line."


def _span(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.2f}" if math.isclose(lo, hi, abs_tol=0.005) else f"{lo:.2f} to {hi:.2f}"
