"""A round's decisions as the store's votes give them now: what `adjudicate` records and `status` previews.

:func:`round_decisions` reads the round's items, every reviewer's answer (a verdict, a skip, or
nothing yet), the expert's labels and the escalations, and applies the adjudication rules
(:mod:`annotate.stats.adjudication`): which items wait for a routed vote, which are settled by
the majority, which go to the expert. It writes nothing, so ``status`` can say whether running
``adjudicate`` now would change anything, and ``adjudicate`` records exactly these decisions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate.columns import VERDICTS
from annotate.stats._common import is_missing
from annotate.stats.adjudication import Decision, Rules, check_sample, decide, propose, waiting_for
from annotate.stats.aggregation import dawid_skene_labels
from annotate.stats.agreement.votes import current_labels, reviewer_answers

if TYPE_CHECKING:
    from annotate.db import Store

__all__ = ["RoundDecisions", "round_decisions"]


@dataclass
class RoundDecisions:
    """The decisions the rules give a round now, with what they were computed from."""

    round_row: dict[str, Any]
    reviewers: list[str]
    items: pd.DataFrame
    votes: pd.DataFrame
    #: round_item_id -> the reviewers whose answer is not in yet (every item with one missing).
    waiting: dict[int, list[str]]
    expert_labels: pd.DataFrame
    #: Items drawn before as checks of the majority (their expert labels never decide them).
    checks: set[int]
    ds: pd.DataFrame | None
    proposals: pd.DataFrame
    decisions: list[Decision]
    #: The items held because a routed vote is missing (status ``waiting``).
    held: set[int] = field(default_factory=set)
    #: The majority-resolved items drawn for the expert's check now.
    check_ids: set[int] = field(default_factory=set)

    def changed(self, latest: pd.DataFrame) -> list[Decision]:
        """The decisions whose status, label, method or adjudicator differ from the stored record in force."""
        before = {int(r.round_item_id): (r.status, r.label, r.method, r.adjudicator) for r in latest.itertuples()}
        out = []
        for d in self.decisions:
            prev = before.get(d.round_item_id)
            if prev is None or tuple(None if is_missing(x) else x for x in prev) != (
                d.status,
                d.label,
                d.method,
                d.adjudicator,
            ):
                out.append(d)
        return out

    def record_rows(self, latest: pd.DataFrame, policy: str) -> list[dict[str, Any]]:
        """final_label rows for the decisions that changed (append-only records)."""
        round_id = int(self.round_row["id"])
        return [
            {
                "round_id": round_id,
                "round_item_id": d.round_item_id,
                "status": d.status,
                "label": d.label,
                "method": d.method,
                "adjudicator": d.adjudicator,
                "reason": d.reason,
                "votes": json.dumps(d.votes, sort_keys=True),
                "policy": policy,
            }
            for d in self.changed(latest)
        ]

    @property
    def no_vote_yet(self) -> int:
        """Routed items nobody has answered yet (awaiting review)."""
        return int(len(self.items) - len(self.proposals))

    def waiting_by_reviewer(self) -> dict[str, int]:
        """Per reviewer, how many held items (some votes in) still lack their vote."""
        counts = {who: sum(who in self.waiting[i] for i in self.held) for who in self.reviewers}
        return {who: n for who, n in counts.items() if n}


def round_decisions(
    store: Store, round_row: dict[str, Any], rules: Rules, *, with_text: bool = False
) -> RoundDecisions:
    """What `adjudicate` would decide for the round now, under ``rules`` (nothing is written).

    Every item goes to every reviewer of the round, so an item's votes are in when each has a
    verdict or a skip on it; an item whose every answer is a skip is escalated (no verdict).
    The expert's labels decide only escalated items (not the ones drawn as checks).
    """
    round_id = int(round_row["id"])
    reviewers = [str(r) for r in json.loads(round_row["annotators"])]
    items = store.round_items(round_id, with_text=with_text)
    annotations = store.annotations(round_id)
    votes = current_labels(annotations, set(reviewers))
    answers = reviewer_answers(annotations, items.round_item_id.astype(int).tolist(), reviewers)
    # An imported round is complete as the file is: each item was rated by whom the file says, and
    # nobody will add a vote to it, so no item waits (a rotating pair of 18 raters is not 16 missing).
    origin = json.loads(round_row.get("origin") or "null") or {}
    imported = bool(origin.get("imported"))
    waiting = {} if imported else waiting_for(answers, reviewers)
    complete = ~answers.index.isin(list(waiting))
    no_verdict = answers.index[complete & ~answers.isin(VERDICTS).any(axis=1).to_numpy()].astype(int).tolist()
    team = store.annotators()
    experts = set(team.loc[team.role == "expert", "pseudonym"]) if len(team) else set()
    expert_labels = current_labels(annotations, experts) if experts else annotations.iloc[0:0]
    ds = dawid_skene_labels(votes, reviewers) if len(reviewers) >= 2 and len(votes) else None
    categories = items.set_index("round_item_id")["category"]
    proposals = propose(votes, rules, ds=ds, categories=categories, no_verdict=no_verdict)
    escal = store.escalations(round_id)
    checks = set(escal.loc[escal.kind == "check", "round_item_id"].astype(int)) if len(escal) else set()
    decisions = decide(
        proposals,
        votes,
        expert_labels.loc[~expert_labels.round_item_id.isin(checks)],
        rules,
        waiting=waiting,
        settled=imported and bool(origin.get("settled")),  # the file's final labels (import-labels --final)
    )
    held = {d.round_item_id for d in decisions if d.status == "waiting"}
    resolved = pd.Index([d.round_item_id for d in decisions if d.method == "majority"])
    ext = items.set_index("round_item_id").ext_id
    check_ids = check_sample(pd.Series(resolved), ext.reindex(resolved), rules.check_share, int(round_row["seed"]))
    return RoundDecisions(
        round_row=round_row,
        reviewers=reviewers,
        items=items,
        votes=votes,
        waiting=waiting,
        expert_labels=expert_labels,
        checks=checks,
        ds=ds,
        proposals=proposals,
        decisions=decisions,
        held=held,
        check_ids=check_ids,
    )
