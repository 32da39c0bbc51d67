"""`annotate agreement`: per-group agreement of a round's reviewers, from the store.

Labels used: per (item, annotator) the latest non-deleted, non-skipped annotation with a verdict,
by annotators (never the adjudication expert). The computation is ``audit.agreement``'s, the one
an export's agreement.json is re-derived with.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from annotate.audit.agreement import GROUPINGS, agreement_groups
from annotate.audit.hazard_answers import hazard_agreement_doc
from annotate.errors import InputError
from annotate.pipeline._resolve import resolve_round
from annotate.pipeline._settings import thresholds_from_settings
from annotate.pipeline.record import hazard_questions_of, labels_frame
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
        "groups": agreement_groups(
            labels, annotators, by=by, n_boot=n_boot, seed=seed, thresholds=thresholds, reader_notes=True
        ),
    }
    # Only a config that holds the questions is parsed again (a round routed with an older, laxer check stays readable).
    if hazard_questions_of(round_row) is not None:  # route --ask-hazards: the categories and severity too
        # From the round's labels.csv rows, as an export's hazard_agreement.json is (audit.hazard_answers).
        doc = hazard_agreement_doc(
            labels_frame(store, [round_row["name"]]), n_boot=n_boot, seed=seed, thresholds=thresholds,
            interval="joined",
        )  # fmt: skip
        report["hazards"] = doc["rounds"][0] if doc is not None else {"round": round_row["name"], "n_answers": 0}
    return report


def agreement(s: Session, *, round_name: str | None, by: str, n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """`annotate agreement`: the report with the workspace's thresholds (``[agreement]``)."""
    return agreement_report(
        s.store, round_name=round_name, by=by, n_boot=n_boot, seed=seed, thresholds=thresholds_from_settings(s.ws)
    )
