"""`annotate score` and `annotate plan`: corrected scores and rankings from a reviewed round.

``score_tables(labels, design)`` is the whole computation from the two audit tables (see
``annotate.pipeline.audit``): the export writes the same tables, so ``annotate verify`` re-derives an
export's scores from its own files with this same function.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from annotate.stats.scoring.tables import ScoreOutput, score_tables


def rounds_to_score(store: Any, names: tuple[str, ...]) -> list[str]:
    from annotate.errors import InputError, StateError

    rounds = store.rounds()
    rounds = rounds[rounds.kind == "review"] if len(rounds) else rounds
    if names:
        missing = [n for n in names if n not in set(rounds.name)]
        if missing:
            raise InputError(f"no round named {missing[0]!r} (rounds: {', '.join(rounds.name) or 'none'})")
        return list(names)
    if len(rounds) == 0:
        raise StateError("no review round yet: route, label, pull and adjudicate one first.")
    if len(rounds) > 1:
        raise InputError(f"several rounds exist ({', '.join(rounds.name)}); choose with --round.")
    return [rounds.iloc[0]["name"]]


def score_from_store(
    store: Any, names: tuple[str, ...], **kwargs: Any
) -> tuple[ScoreOutput, pd.DataFrame, dict[str, Any]]:
    from annotate.pipeline.audit import design, labels_frame

    rounds = rounds_to_score(store, names)
    labels = labels_frame(store, rounds)
    doc = design(store, rounds)
    return score_tables(labels, doc, **kwargs), labels, doc


def plan(
    store: Any, names: tuple[str, ...], target_se: float, *, min_per_stratum: int = 10, judge: str | None = None
) -> pd.DataFrame:
    """Neyman allocation of clear items per cell for a target SE (methods.md 4.8).

    Uses the judge-label populations of a round's design when a round exists, else the judge
    labels in the store (for planning the first round).
    """
    from annotate.stats.scoring import plan_allocation

    rounds = store.rounds()
    if len(rounds):
        from annotate.pipeline.audit import design, labels_frame
        from annotate.stats.scoring.strata import strata_table

        chosen = rounds_to_score(store, names)
        strata = strata_table(labels_frame(store, chosen), design(store, chosen))
        rates: Any = "data" if strata.resolved.sum() > 0 else None
    else:
        counts = store.label_counts(judge=judge)
        if counts.empty:
            from annotate.errors import StateError

            raise StateError("the store holds no responses: run `annotate ingest` first.")
        if counts.judge.nunique() > 1 and judge is None:
            from annotate.errors import InputError

            raise InputError(f"several judges ({', '.join(sorted(counts.judge.unique()))}); choose one with --judge.")
        strata = counts.rename(columns={"n": "population"}).assign(
            stratum=counts.judge_label, reviewed=0, harmful=0, unresolved=0
        )
        rates = None
    return plan_allocation(strata, target_se, rates=rates, min_per_stratum=min_per_stratum)
