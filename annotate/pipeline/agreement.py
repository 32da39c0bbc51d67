"""`annotate agreement`: per-group agreement of a round's reviewers, from the store.

Labels used: per (item, annotator) the latest non-deleted, non-skipped annotation with a verdict,
by annotators (never the adjudication expert). The computation is ``audit.agreement``'s, the one
an export's agreement.json is re-derived with.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate.audit.agreement import GROUPINGS, agreement_groups
from annotate.errors import InputError
from annotate.hazards import hazards_of, taxonomy
from annotate.labelstudio.labelconfig import SEVERITIES, LabelConfig, asks_hazards, hazard_choice, parse_label_config
from annotate.pipeline._resolve import resolve_round
from annotate.pipeline._settings import thresholds_from_settings
from annotate.stats.agreement.hazards import hazard_agreement, hazard_majority
from annotate.stats.agreement.votes import Thresholds, current_labels

if TYPE_CHECKING:
    from annotate.db import Store
    from annotate.pipeline.session import Session


def agreement_report(
    store: Store,
    *,
    round_name: str | None,
    by: str,
    n_boot: int = 2000,
    seed: int = 0,
    thresholds: Thresholds | None = None,
) -> dict[str, Any]:
    """Everything `annotate agreement` prints, as plain data."""
    thresholds = thresholds or Thresholds()
    if by not in GROUPINGS:
        raise InputError(f"--by must be one of {', '.join(GROUPINGS)}")
    round_row = resolve_round(store, round_name)
    annotators = json.loads(round_row["annotators"])
    items = store.round_items(int(round_row["id"]))
    labels = current_labels(store.annotations(int(round_row["id"])), set(annotators))
    labels = labels.merge(
        items[["round_item_id", "model", "benchmark", "category", "gold_label"]], on="round_item_id", how="left"
    )
    report = {
        "round": round_row["name"],
        "by": by,
        "n_boot": n_boot,
        "seed": seed,
        "thresholds": vars(thresholds),
        "annotators": annotators,
        "n_labels": int(len(labels)),
        "groups": agreement_groups(labels, annotators, by=by, n_boot=n_boot, seed=seed, thresholds=thresholds),
    }
    config = parse_label_config(round_row["label_config"], source=f"round {round_row['name']} label config")
    if asks_hazards(config):  # route --ask-hazards: agreement on the categories and the severity too
        report["hazards"] = hazards_report(store, round_row, config, annotators, n_boot, seed, thresholds)
    return report


def reviewer_hazards(store: Store, round_id: int, config: LabelConfig, reviewers: list[str]) -> pd.DataFrame:
    """Each reviewer's current hazard and severity answers on the round's items (one row per item and
    reviewer with a verdict): ``round_item_id, annotator, hazards`` (codes; ``[]`` for "None of these",
    None unanswered) and ``severity``."""
    votes = current_labels(store.annotations(round_id, with_result=True), set(reviewers))
    codes = {hazard_choice(code, name): code for code, (name, _group) in taxonomy().hazards.items()}
    hazards, severity = [], []
    for raw in votes["result"]:
        try:
            fields, _problems = config.validate_result(json.loads(raw))
        except (ValueError, TypeError):
            fields = {}
        chosen = fields.get("hazard")
        hazards.append(None if chosen is None else sorted(codes[c] for c in chosen if c in codes))
        severity.append(fields.get("severity"))
    return pd.DataFrame(
        {"round_item_id": votes["round_item_id"].to_numpy(), "annotator": votes["annotator"].to_numpy(),
         "hazards": hazards, "severity": severity}
    )  # fmt: skip


def hazards_report(
    store: Store,
    round_row: dict[str, Any],
    config: LabelConfig,
    reviewers: list[str],
    n_boot: int,
    seed: int,
    thresholds: Thresholds,
) -> dict[str, Any]:
    """Agreement on the hazards and severity (``stats.agreement.hazards``), the reviewers' majority per
    item and hazard, and how often it holds the hazard the benchmark gave the prompt."""
    rid = int(round_row["id"])
    answers = reviewer_hazards(store, rid, config, reviewers)
    out = hazard_agreement(
        answers, list(taxonomy().hazards), SEVERITIES, n_boot=n_boot, seed=seed, thresholds=thresholds
    )
    majority = hazard_majority(answers)
    out["majority"] = {a: int((majority.answer == a).sum()) for a in ("chosen", "tie")}
    # The benchmark's own hazard against the reviewers' majority, on the items that have one.
    items = store.round_items(rid)[["round_item_id", "response_id"]]
    given = store.responses(["id", "hazard"]).rename(columns={"id": "response_id"})
    given = items.merge(given, on="response_id", how="left")
    chosen = majority[majority.answer == "chosen"].groupby("round_item_id").hazard.agg(set)
    answered = set(answers.loc[answers.hazards.notna(), "round_item_id"])
    checked = held = 0
    for item, value in zip(given.round_item_id, given.hazard, strict=True):
        own = hazards_of(value) if isinstance(value, str) and value else []
        if own and item in answered:
            checked += 1
            held += bool(set(own) & chosen.get(item, set()))
    out["benchmark_hazard"] = {"items": checked, "held_by_majority": held}
    return out


def agreement(s: Session, *, round_name: str | None, by: str, n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """`annotate agreement`: the report with the workspace's thresholds (``[agreement]``)."""
    return agreement_report(
        s.store, round_name=round_name, by=by, n_boot=n_boot, seed=seed, thresholds=thresholds_from_settings(s.ws)
    )
