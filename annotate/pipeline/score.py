"""`annotate score` and `annotate plan`: corrected scores and rankings from reviewed rounds.

The computation itself is pure (``annotate.stats.scoring.tables.score_tables``) and runs on the
two audit tables that ``pipeline.audit`` builds from the store; an export writes the same two
tables, so ``annotate verify`` re-derives an export's scores with the same function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate.errors import InputError
from annotate.pipeline._resolve import resolve_judge, resolve_rounds
from annotate.stats.scoring.tables import ScoreOutput, score_tables

if TYPE_CHECKING:
    from annotate.db import Store


def rounds_to_score(store: Store, names: tuple[str, ...] | list[str]) -> list[str]:
    """The names of the rounds a score or export covers (``--round``, default the only one)."""
    return [str(r["name"]) for r in resolve_rounds(store, names)]


def score_from_store(
    store: Store, names: tuple[str, ...], **kwargs: Any
) -> tuple[ScoreOutput, pd.DataFrame, dict[str, Any]]:
    """(scores, labels.csv table, design.json document) of the rounds; kwargs go to ``score_tables``."""
    from annotate.pipeline.audit import design, labels_frame

    rounds = rounds_to_score(store, names)
    labels = labels_frame(store, rounds)
    doc = design(store, rounds)
    try:
        return score_tables(labels, doc, **kwargs), labels, doc
    except ValueError as exc:  # the design cannot be scored as asked (e.g. overlapping rounds)
        raise InputError(str(exc)) from None


def plan(
    store: Store, names: tuple[str, ...], target_se: float, *, min_per_stratum: int = 10, judge: str | None = None
) -> pd.DataFrame:
    """Neyman allocation of clear items per cell for a target SE (methods.md 4.8).

    Uses the judge-label populations of a round's design when a round exists, else the judge
    labels in the store (for planning the first round).
    """
    from annotate.stats.scoring import plan_allocation

    if target_se <= 0:
        raise InputError("--target-se must be positive, e.g. 0.02")
    rates: Any
    if len(store.rounds()):
        from annotate.pipeline.audit import design, labels_frame
        from annotate.stats.scoring.strata import strata_table

        chosen = rounds_to_score(store, names)
        strata = strata_table(labels_frame(store, chosen), design(store, chosen))
        rates = "data" if strata.resolved.sum() > 0 else None
    else:
        counts = store.label_counts(judge=resolve_judge(store, judge))
        strata = counts.rename(columns={"n": "population"}).assign(
            stratum=counts.judge_label, reviewed=0, harmful=0, unresolved=0
        )
        rates = None
    return plan_allocation(strata, target_se, rates=rates, min_per_stratum=min_per_stratum)
