"""`annotate adjudicate`: final labels by majority, rules, policy and an expert in Label Studio.

By default an item is decided only when every routed vote is in (a verdict or a skip from each
reviewer of the round): items still waiting for a reviewer are counted and said ("41 waiting
for A2") and recorded as ``waiting``, never sent to the expert, so that the expert spends their
time on items a second reviewer would not settle tomorrow. ``escalate_early`` decides and
escalates on the votes so far (recorded in the rules, ``wait_for_votes``: false).

The expert works in an adjudication project of the round (one per expert) that shows the
prompt, the response (and the dialogue, in a round that shows dialogues) and every reviewer's
verdict and rationale under pseudonyms, still without model name or judge label. The expert's
labels come back with `annotate pull` like any other project's, and the next `annotate
adjudicate` turns them into final labels. Every decision is a new ``final_label`` row
(append-only); re-running without new information adds nothing.

``--ds-with-judges`` adds a diagnostic beside the labels of record: Dawid-Skene over the
reviewers and every judge of the reviewed responses together (each judge one more rater, its
``ambiguous`` missing; :func:`annotate.stats.adjudication.judges_as_raters`). It is computed after
the decisions, from what they read and wrote, and never feeds back into them: the stored records
are those of a run without the option. It is printed (and in ``--json``) only, never stored or
exported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.columns import BINARY_VERDICTS
from annotate.errors import InputError, StateError
from annotate.ingest.media import image_uri
from annotate.labelstudio.labelconfig import expert_label_config, parse_label_config
from annotate.labelstudio.tasks import (
    DIALOGUE_INSTRUCTIONS,
    EXPERT_INSTRUCTIONS,
    expert_prior_text,
    expert_task_payload,
    prior_votes_text,
    task_dialogue,
    task_ext_id,
    task_text_sha,
)
from annotate.pipeline._decisions import round_decisions
from annotate.pipeline._projects import ProjectSpec, ensure_project, sync_tasks, task_file_path, write_task_file
from annotate.pipeline._resolve import blinded_owner, resolve_round, round_blinding, round_lock
from annotate.pipeline._settings import rules_from_settings
from annotate.stats.adjudication import judges_as_raters, rules_record, settings_behind
from annotate.stats.agreement import cohen_kappa

if TYPE_CHECKING:
    from annotate.labelstudio import Gateway
    from annotate.pipeline.session import Session


@dataclass
class AdjudicationOutcome:
    round: str
    policy: str
    counts: dict[str, int] = field(default_factory=dict)  # by status
    methods: dict[str, int] = field(default_factory=dict)
    escalation_reasons: dict[str, int] = field(default_factory=dict)
    # The [adjudication] settings that escalated items a plain majority would have settled.
    settings_behind: list[str] = field(default_factory=list)
    new_records: int = 0
    sent_to_expert: int = 0
    expert: str | None = None
    check: dict[str, Any] = field(default_factory=dict)
    unresolved: list[dict[str, Any]] = field(default_factory=list)
    awaiting_review: int = 0
    #: Items with some votes whose routed votes are not all in (held; none with ``escalate_early``).
    waiting: int = 0
    #: Per reviewer, how many of the waiting items (some votes in) still lack their vote.
    waiting_for: dict[str, int] = field(default_factory=dict)
    #: Items decided on the votes so far although some were missing (``escalate_early``).
    decided_early: int = 0
    #: Whether this adjudication waited for every routed vote (the rules' ``wait_for_votes``).
    waited: bool = True
    files: list[Path] = field(default_factory=list)
    #: Items by how many reviewer verdicts they have ({"2": 388, "1": 12}): an imported round's
    #: raters rotate, and each item counts by the votes its file gave it.
    by_votes: dict[str, int] = field(default_factory=dict)
    #: ``--ds-with-judges``: the diagnostic (a JSON-ready dict), None without the option.
    ds_with_judges: dict[str, Any] | None = None


def adjudicate(
    s: Session,
    *,
    round_name: str,
    policy: str,
    expert: str | None,
    to_file: bool,
    ds_with_judges: bool = False,
    escalate_early: bool = False,
) -> AdjudicationOutcome:
    """Decide every reviewed item of the round whose votes are in; send escalations and checks to the expert.

    With ``ds_with_judges``, also fit Dawid-Skene over the reviewers and the judges together and
    report it beside the labels of record (``outcome.ds_with_judges``); the decisions are the same.
    ``escalate_early``: decide the items still waiting for a vote too, on the votes so far.
    """
    name = str(resolve_round(s.store, round_name)["name"])
    with round_lock(s.store, name):
        return _adjudicate(
            s,
            round_name=name,
            policy=policy,
            expert=expert,
            to_file=to_file,
            ds_with_judges=ds_with_judges,
            escalate_early=escalate_early,
        )


def _adjudicate(
    s: Session,
    *,
    round_name: str,
    policy: str,
    expert: str | None,
    to_file: bool,
    ds_with_judges: bool = False,
    escalate_early: bool = False,
) -> AdjudicationOutcome:
    store = s.store
    rules = replace(rules_from_settings(s.ws, policy), wait_for_votes=not escalate_early)
    round_row = resolve_round(store, round_name)
    round_id = int(round_row["id"])
    team = store.annotators()
    reviewers = [str(r) for r in json.loads(round_row["annotators"])]
    expert_row = None
    if expert is not None:
        hit = team[(team.pseudonym == expert) | (team.email.str.lower() == expert.lower())]
        if hit.empty:
            raise InputError(f"unknown expert {expert!r}; register one with `annotate annotators add EMAIL --expert`.")
        expert_row = hit.iloc[0]
        if expert_row.pseudonym in reviewers:
            raise InputError(f"{expert_row.pseudonym} reviewed this round; the expert must be someone else.")
        if expert_row.role != "expert":
            raise InputError(f"{expert_row.pseudonym} is registered as an annotator; add the expert with --expert.")
        if to_file:  # the file's path is checked before anything is recorded
            task_file_path(s.ws, round_row["name"], str(expert_row.pseudonym), "-adjudication")

    outcome = AdjudicationOutcome(
        round=round_row["name"], policy=policy, expert=None if expert_row is None else expert_row.pseudonym
    )
    plan = round_decisions(store, round_row, rules, with_text=True)
    items, votes, proposals, decisions = plan.items, plan.votes, plan.proposals, plan.decisions
    held, check_ids, expert_labels, ds = plan.held, plan.check_ids, plan.expert_labels, plan.ds
    if proposals.empty:
        raise StateError(f"round {round_row['name']!r} has no pulled labels yet: run `annotate pull` first.")
    # Checked before anything is written: an option that cannot run leaves the store as it was.
    judge_rows = _judge_ratings(store, round_row, votes) if ds_with_judges else None
    escal = store.escalations(round_id)
    rows = plan.record_rows(store.final_labels(round_id), policy)
    # -- send escalations and checks to the expert ----------------------------------------------
    if expert_row is not None:
        wanted = {
            d.round_item_id: ("escalated", proposals.loc[d.round_item_id, "reasons"])
            for d in decisions
            if proposals.loc[d.round_item_id, "escalate"] and d.round_item_id not in held
        }
        for item in check_ids:
            wanted.setdefault(int(item), ("check", "drawn for the majority check"))
        already = set(escal.loc[escal.expert_id == int(expert_row.id), "round_item_id"]) if len(escal) else set()
        new = {k: v for k, v in wanted.items() if k not in already}
        outcome.sent_to_expert = _send_to_expert(
            s, round_row, expert_row, items, votes, new, to_file=to_file, outcome=outcome
        )
    # With the rules every decision in force now follows from (an export re-derives them with these).
    store.add_final_labels(rows, round_id=round_id, rules=rules_record(rules))
    outcome.new_records = len(rows)

    # -- report --------------------------------------------------------------------------------
    final = store.final_labels(round_id)
    outcome.counts = final.status.value_counts().to_dict() if len(final) else {}
    outcome.methods = final.method.value_counts().to_dict() if len(final) else {}
    escalated = proposals.escalate.to_numpy() & ~proposals.index.isin(sorted(held))
    reasons = proposals.loc[escalated, "reasons"].str.split("; ").explode()
    outcome.escalation_reasons = reasons.str.replace(r" [0-9.]+ < [0-9.]+$", "", regex=True).value_counts().to_dict()
    outcome.settings_behind = settings_behind(list(reasons.dropna().unique()), rules)
    outcome.awaiting_review = plan.no_vote_yet
    per_item = votes.groupby("round_item_id").size().value_counts() if len(votes) else pd.Series(dtype=int)
    outcome.by_votes = {str(int(n)): int(c) for n, c in sorted(per_item.items())}
    outcome.waiting = len(held)
    outcome.waited = rules.wait_for_votes
    outcome.decided_early = 0 if rules.wait_for_votes else sum(int(i) in plan.waiting for i in proposals.index)
    outcome.waiting_for = plan.waiting_by_reviewer()
    named = ["round_item_id", "ext_id", "stratum", "model", "prompt_id", "epoch"]
    unresolved = final.loc[~final.status.isin(["resolved", "waiting"])].merge(
        items[[*named, "prompt"] if "prompt" in items else named], on="round_item_id"
    )
    outcome.unresolved = [
        {"ext_id": r.ext_id, "model": r.model, "prompt_id": r.prompt_id, "epoch": int(r.epoch),
         "prompt_start": first_words(getattr(r, "prompt", None)), "stratum": r.stratum, "status": r.status,
         "reason": r.reason}
        for r in unresolved.itertuples()
    ]  # fmt: skip
    outcome.check = _check_agreement(proposals, expert_labels, plan.checks | check_ids, cohen_kappa)
    if judge_rows is not None:
        # From the records as stored (read back above), so it compares with what is in force.
        strata_from = store.round_strata_from(int(round_row["id"]))
        outcome.ds_with_judges = _ds_with_judges(
            round_row, reviewers, votes, judge_rows, final, ds, items, rules, strata_from=strata_from
        )
    return outcome


def _judge_ratings(store: Any, round_row: dict[str, Any], votes: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Every judge's label on the reviewed responses (same text only), and notes on the rows left out.

    Raises InputError when no judge gave a harmful or safe verdict on any reviewed response:
    there is then no judge to add as a rater.
    """
    name = str(round_row["name"])
    reviewed = set(votes["round_item_id"].tolist())
    found = store.judge_verdicts(int(round_row["id"]))
    found = found.loc[found["round_item_id"].isin(reviewed)]
    same = found["same_text"].astype(int) == 1
    rows = found.loc[same, ["round_item_id", "judge", "judge_label"]].reset_index(drop=True)
    notes = [
        f"{n} verdict(s) of judge {judge} are on another prompt or response text under a reviewed response's "
        "key: another response, not used as a rating."
        for judge, n in found.loc[~same].groupby("judge").size().items()
    ]
    if not rows["judge_label"].isin(BINARY_VERDICTS).any():
        said = (
            "; ".join(
                f"{judge}: {', '.join(f'{k} {v}' for k, v in g['judge_label'].astype(str).value_counts().items())}"
                for judge, g in rows.groupby("judge")
            )
            or "no verdict of any judge"
        )
        raise InputError(
            f"round {name!r}: no judge called any of its {len(reviewed)} reviewed response(s) harmful or safe "
            f"({said}), so there is no judge to add as a rater. Ingest another judge's verdicts on the same "
            f"responses (`annotate ingest FILE`) and run `annotate adjudicate --round {name} --ds-with-judges` "
            "again, or adjudicate without --ds-with-judges."
        )
    return rows, notes


def _ds_with_judges(
    round_row: dict[str, Any],
    reviewers: list[str],
    votes: pd.DataFrame,
    judge_rows: tuple[pd.DataFrame, list[str]],
    final: pd.DataFrame,
    human_ds: pd.DataFrame | None,
    items: pd.DataFrame,
    rules: Any,
    *,
    strata_from: list[str] | None = None,
) -> dict[str, Any]:
    """The judges-as-raters diagnostic as a JSON-ready dict, items named by ext_id and stratum."""
    from dataclasses import asdict

    rows, notes = judge_rows
    record = pd.Series(final["label"].astype(object).to_numpy(), index=final["round_item_id"].to_numpy())
    record = record.where(final["status"].to_numpy() == "resolved", None)
    routing = round_row.get("judge")
    result = judges_as_raters(
        votes,
        reviewers,
        rows,
        record,
        human_ds,
        rules,
        routing_judge=None if routing is None else str(routing),
        strata_from=strata_from,
    )
    out = asdict(result)
    by_item = items.set_index("round_item_id")
    out["items"] = [
        {
            "ext_id": str(by_item.loc[r["round_item_id"], "ext_id"]),
            "stratum": str(by_item.loc[r["round_item_id"], "stratum"]),
        }
        | {k: v for k, v in r.items() if k != "round_item_id"}
        for r in out["items"]
    ]
    out["notes"] = notes
    return out


def first_words(text: Any, width: int = 32) -> str:
    """The start of a prompt as a lead recognises it: whitespace folded, control characters dropped, cut at
    a word within ``width`` characters with an ellipsis.

    >>> first_words("How do I   kill a Python process" + chr(10) + "that hangs?"), first_words(None)
    ('How do I kill a Python process…', '')
    """
    if not isinstance(text, str):
        return ""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    if len(flat) <= width:
        return flat
    cut = flat[:width].rsplit(" ", 1)[0] if " " in flat[:width] else flat[:width]
    return cut.rstrip(" ,;:") + "…"


def _check_agreement(
    proposals: pd.DataFrame, expert_labels: pd.DataFrame, check_ids: set[int], cohen_kappa: Any
) -> dict[str, Any]:
    """How often the expert agreed with the majority on the items drawn as checks (and kappa)."""
    labelled = expert_labels.loc[
        expert_labels.round_item_id.isin(check_ids) & expert_labels.verdict.isin(BINARY_VERDICTS)
    ]
    if labelled.empty:
        return {"n_checked": 0, "n_drawn": len(check_ids), "agreement": None, "kappa": None}
    mv = proposals.loc[labelled.round_item_id, "majority"].to_numpy()
    ex = labelled.verdict.to_numpy()
    code = {"harmful": 0, "safe": 1}
    kappa = cohen_kappa(np.array([code[x] for x in mv]), np.array([code[x] for x in ex]), 2)
    return {
        "n_checked": int(len(labelled)),
        "n_drawn": len(check_ids),
        "agreement": float(np.mean(mv == ex)),
        "kappa": None if kappa.value != kappa.value else float(kappa.value),
        "kappa_undefined_reason": kappa.undefined_reason,
    }


def _send_to_expert(
    s: Session,
    round_row: dict[str, Any],
    expert: Any,
    items: pd.DataFrame,
    votes: pd.DataFrame,
    new: dict[int, tuple[str, str]],
    *,
    to_file: bool,
    outcome: AdjudicationOutcome,
) -> int:
    """Register the new escalations and checks as tasks of the expert's project, then write or import them."""
    round_id = int(round_row["id"])
    dialogue = parse_label_config(round_row["label_config"]).dialogue is not None
    spec = ProjectSpec(
        round_id=round_id,
        annotator=expert,
        title=f"{round_row['name']} - adjudication - {expert.pseudonym}",
        label_config=expert_label_config(round_row["label_config"]),
        instructions=EXPERT_INSTRUCTIONS + (DIALOGUE_INSTRUCTIONS if dialogue else ""),
    )
    if to_file:
        return _record_expert_tasks(s, None, spec, round_row, items, votes, new, outcome)
    # The expert's project lives where the round's reviewers' do: on the expert's own server
    # when the round is blinded technically (they see the reviewers' votes by pseudonym only).
    blind = round_blinding(s.ws, round_row)
    owner = blinded_owner(blind, str(expert.pseudonym))
    with s.servers() as servers:
        gw = servers.of(owner)
        s.store.set_round_blinding(round_id, blind)
        return _record_expert_tasks(s, gw, spec, round_row, items, votes, new, outcome, own_server=owner is not None)


def _record_expert_tasks(
    s: Session,
    gw: Gateway | None,
    spec: ProjectSpec,
    round_row: dict[str, Any],
    items: pd.DataFrame,
    votes: pd.DataFrame,
    new: dict[int, tuple[str, str]],
    outcome: AdjudicationOutcome,
    *,
    own_server: bool = False,
) -> int:
    store = s.store
    round_id = int(round_row["id"])
    expert = spec.annotator
    project = ensure_project(store, gw, spec, own_server=own_server)
    tasks = store.ls_tasks(int(project["id"]))
    start = int(tasks.position.max()) + 1 if len(tasks) else 0
    by_item = items.set_index("round_item_id")
    shown = parse_label_config(round_row["label_config"])

    def payload_of(item_id: int, ext_id: str, prior: str) -> dict[str, Any]:
        row = by_item.loc[item_id]
        transcript = row["transcript"] if isinstance(row["transcript"], str) else None
        dialogue = (
            task_dialogue(row["prompt"], row["response"], transcript, str(row["model"]))
            if shown.dialogue is not None
            else None
        )
        # The item's image, as the reviewers saw it (a round that shows images).
        image = None
        if shown.image is not None:
            image = image_uri(s.ws.media_dir, row["image"] if isinstance(row.get("image"), str) else None)
        return expert_task_payload(row["prompt"], row["response"], ext_id, prior, dialogue=dialogue, image=image)

    fresh = sorted(new)
    rows = []
    for k, i in enumerate(fresh):
        # The expert's own ext_id of the item, and the votes as sent (kept: a rewritten task file
        # shows the expert the same text, and the pull checks its hash).
        ext_id = task_ext_id(str(round_row["task_secret"]), str(expert.pseudonym), str(by_item.loc[i, "ext_id"]))
        # Why the item is there; an escalation's votes, never a majority check's (the check is blind).
        prior = expert_prior_text(new[i][0], str(new[i][1] or ""), votes.loc[votes.round_item_id == int(i)])
        payload = payload_of(int(i), ext_id, prior)
        rows.append(
            {
                "ls_project_id": project["id"],
                "round_item_id": i,
                "ext_id": ext_id,
                "position": start + k,
                "text_sha": task_text_sha(payload["data"]),
                "prior_votes": prior,
            }
        )
    store.add_ls_tasks(rows)
    store.add_escalations(
        [
            {
                "round_id": round_id,
                "round_item_id": i,
                "expert_id": int(expert.id),
                "kind": new[i][0],
                "reason": new[i][1] or "",
            }
            for i in fresh
        ]
    )
    tasks = store.ls_tasks(int(project["id"]))

    sent = dict(zip(tasks.ext_id, tasks.prior_votes, strict=True)) if "prior_votes" in tasks else {}

    def build(chunk: pd.DataFrame) -> list[dict[str, Any]]:
        out = []
        for ext_id, item_id in zip(chunk.ext_id, chunk.round_item_id, strict=True):
            prior = sent.get(ext_id)
            if not isinstance(prior, str):  # a task sent before schema v5: the votes as they are now
                prior = prior_votes_text(votes.loc[votes.round_item_id == int(item_id)])
            out.append(payload_of(int(item_id), ext_id, prior))
        return out

    if gw is None:
        path = task_file_path(s.ws, round_row["name"], str(expert.pseudonym), "-adjudication")
        outcome.files.append(write_task_file(path, build(tasks)))
        return len(fresh)
    waiting = tasks.loc[tasks.task_id.isna(), ["ext_id", "round_item_id", "position"]]
    sync_tasks(
        store,
        gw,
        project,
        str(expert.pseudonym),
        waiting,
        build,
        already=len(tasks) - len(waiting),
        command="annotate adjudicate",
    )
    return len(fresh)
