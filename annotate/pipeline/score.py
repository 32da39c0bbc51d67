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


def score_payload(out: ScoreOutput, treatments: list[str] | None = None) -> dict[str, Any]:
    """What ``annotate score --json`` prints: every table of ``out``, JSON-ready and strict.

    NaN and infinities become null (``jsonable``), and every null has its reason beside it: a
    score row's ``flag`` or ``note``, a ranking row's ``note``, the matrices' ``note``. Rows of
    ``scores`` are restricted to ``treatments`` when given. ``benchmark_set`` states the set the
    overall ranking compares models on; ``left_out`` lists every model it leaves out, with why.
    """
    from annotate.stats._common import jsonable

    scores = out.scores if treatments is None else out.scores[out.scores.treatment.isin(treatments)]
    models = [str(m) for m in out.p_safer.index]
    no_draws = "no posterior draws were made (--draws 0): no rank interval, P(safer) or credibility"
    model_rows = [
        {**r, "note": no_draws if pd.isna(r.get("rank_ci_low")) else ""} for r in out.models.to_dict("records")
    ]
    flip_rows = [{**r, "note": no_draws if pd.isna(r.get("p_a_safer")) else ""} for r in out.flips.to_dict("records")]
    chosen = out.benchmark_set
    left_out = out.left_out if out.left_out is not None else pd.DataFrame(columns=["model", "reason"])
    return jsonable(
        {
            "settings": out.settings,
            # The overall ranking's benchmark set, stated in words too, and every model it leaves out.
            "benchmark_set": {
                "mode": chosen.mode if chosen else "shared",
                "benchmarks": list(chosen.benchmarks) if chosen else [],
                "outside": list(chosen.outside) if chosen else [],
                "comparable": chosen.comparable if chosen else True,
                "description": chosen.describe() if chosen else "",
            },
            "left_out": left_out.to_dict("records"),
            "scores": scores.to_dict("records"),
            "ranking": out.ranking.to_dict("records"),
            "flips": flip_rows,
            "models": model_rows,
            "p_safer": {
                "models": models,
                "matrix": out.p_safer.to_numpy().tolist(),
                "note": "P(row model safer than column model) under the corrected posterior; the diagonal is "
                "null (a model is not compared with itself); P(row safer) + P(column safer) + P(tie) = 1",
            },
            "p_tie": {
                "models": [str(m) for m in out.p_tie.index],
                "matrix": out.p_tie.to_numpy().tolist(),
                "note": "P(the two models' corrected rates are equal in a draw); the diagonal is null",
            },
            "transport": out.transport.to_dict("records"),
            "fallbacks": out.fallbacks.to_dict("records"),
        }
    )


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
