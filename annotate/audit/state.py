"""Where each round of an export stands: finished, or still in review (annotate-export/8 on).

A round is *final* when every routed vote is in (each reviewer answered every item: a verdict or
a skip) and every item is decided (resolved, or unresolved by the expert or the policy); it is
*interim* while some item awaits review, waits for a reviewer's vote or waits for the expert.
An export is interim when any of its rounds is. :func:`round_states` is a pure function of
labels.csv and design.json: ``export`` writes it into the manifest (``status``,
``rounds_state``) and the report, and ``verify`` re-derives it, so an export cannot claim to be
final when its labels say otherwise. The scores of an interim export are computed as always:
every reviewed response without a final label counts as unresolved, under the bounds the scores
already give (``corrected_unresolved_safe`` / ``_harmful``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate.stats.adjudication import waiting_for

if TYPE_CHECKING:
    from annotate.audit.design import Design

__all__ = ["FINAL", "INTERIM", "describe", "export_status", "round_states"]

FINAL = "final"
INTERIM = "interim"


def round_states(labels: pd.DataFrame, design: Design) -> list[dict[str, Any]]:
    """Per round of ``design``, in its order: how many of its reviewed responses are where.

    Returns
    -------
    list of dict
        ``round``, ``status`` (``final`` / ``interim``), ``responses``, ``resolved``,
        ``unresolved`` (decided without a label: the expert unsure, or the policy), ``escalated``
        (waiting for the expert), ``waiting`` (some votes in, a routed vote not yet),
        ``awaiting_review`` (no vote yet) and ``waiting_for`` ({reviewer: items still without
        their answer}, reviewers with none left out).
    """
    out = []
    for rnd in design.rounds:
        rows = labels.loc[labels["round"] == rnd.round]
        status = rows["final_status"].astype(object).value_counts().to_dict() if len(rows) else {}
        reviewers = list(rnd.annotators)
        # an imported round's items wait for nobody: its file is complete (pipeline/_decisions.py)
        missing = waiting_for(rows.reindex(columns=reviewers), reviewers) if len(rows) and not rnd.imported else {}
        per_reviewer = {who: sum(who in m for m in missing.values()) for who in reviewers}
        state = {
            "round": rnd.round,
            "responses": int(len(rows)),
            "resolved": int(status.get("resolved", 0)),
            "unresolved": int(status.get("unresolved", 0)),
            "escalated": int(status.get("escalated", 0)),
            "waiting": int(status.get("waiting", 0)),
            "awaiting_review": int(status.get("awaiting review", 0)),
            "waiting_for": {who: n for who, n in per_reviewer.items() if n},
        }
        done = not state["escalated"] and not state["waiting"] and not state["awaiting_review"] and not missing
        out.append({"round": rnd.round, "status": FINAL if done else INTERIM, **state})
    return out


def export_status(states: list[dict[str, Any]]) -> str:
    """``interim`` when any round is, else ``final``.

    >>> export_status([{"status": "final"}, {"status": "interim"}]), export_status([{"status": "final"}])
    ('interim', 'final')
    """
    return INTERIM if any(s["status"] == INTERIM for s in states) else FINAL


def describe(state: dict[str, Any]) -> str:
    """One round's state in words (the CLI and the report say it so).

    >>> describe({"round": "r1", "status": "interim", "responses": 10, "resolved": 4, "unresolved": 0,
    ...           "escalated": 1, "waiting": 2, "awaiting_review": 3, "waiting_for": {"A2": 5}})
    'round r1 is not finished: of 10 reviewed responses, 4 resolved, 1 waiting for the expert, 2 waiting for a vote, 3 not yet reviewed (waiting for A2: 5)'
    """  # noqa: E501
    if state["status"] == FINAL:
        return (
            f"round {state['round']} is finished: every routed vote is in and each of its {state['responses']} "
            f"reviewed responses is decided ({state['resolved']} resolved, {state['unresolved']} unresolved)"
        )
    parts = [f"{state['resolved']} resolved"]
    for key, words in (
        ("unresolved", "unresolved"),
        ("escalated", "waiting for the expert"),
        ("waiting", "waiting for a vote"),
        ("awaiting_review", "not yet reviewed"),
    ):
        if state[key]:
            parts.append(f"{state[key]} {words}")
    who = ", ".join(f"{k}: {v}" for k, v in state["waiting_for"].items())
    return f"round {state['round']} is not finished: of {state['responses']} reviewed responses, {', '.join(parts)}" + (
        f" (waiting for {who})" if who else ""
    )
