"""Corrected scores of an audit record, and the JSON ``annotate score`` prints (pure).

:func:`scores_of` runs the estimators (``annotate.stats.scoring.tables.score_tables``) on a
record's labels and design; ``annotate score`` calls it on the record built from the store,
``export`` on the record it writes and ``verify`` on the record it reads back, so an export's
scores are re-derived with the same function. :func:`score_payload` and :func:`ppi_payload` are
what ``--json`` prints: strict JSON, every null with its reason beside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate.stats._common import jsonable
from annotate.stats.scoring.domains import domain_outputs, labels_by_domain
from annotate.stats.scoring.tables import PPIOutput, ScoreOutput, score_tables

if TYPE_CHECKING:
    from annotate.audit.record import AuditRecord

__all__ = ["PPI_NOTE", "benchmark_set_json", "domain_scores_of", "ppi_payload", "score_payload", "scores_of"]


def scores_of(record: AuditRecord, **kwargs: Any) -> ScoreOutput:
    """The corrected scores and rankings of a record; ``kwargs`` go to ``score_tables`` (draws, seed, ...).

    Raises ``ValueError`` when the design cannot be scored as asked (e.g. two rounds over one cell).
    """
    design = record.design
    labels = design.pooled(record.labels)  # a next wave's items in their stratum (methods 4.9)
    return score_tables(labels, design.strata_frame(), strata_from=design.strata_from(), **kwargs)


def domain_scores_of(
    record: AuditRecord, facet: str, population: pd.DataFrame, **kwargs: Any
) -> dict[str, ScoreOutput | str]:
    """Each domain's scores (``score --by``, an export's per-hazard grades): :func:`scores_of` on the
    strata cut by ``facet`` (``stats.scoring.domains``, docs/methods.md 9.22).

    ``population``: ``round, model, benchmark, stratum, domain, population``, N_hd of every estimation
    stratum and domain of the rounds' populations (the store holds them; an export records them in
    design.json). Each label's domain is read from its own ``facet`` column, as labels.csv writes it.
    Raises ``ValueError`` when a stratum has more routed items of a domain than its N_hd.
    """
    design = record.design
    labels = labels_by_domain(design.pooled(record.labels), facet)
    return domain_outputs(labels, design.strata_frame(), population, strata_from=design.strata_from(), **kwargs)


def score_payload(out: ScoreOutput, treatments: list[str] | None = None) -> dict[str, Any]:
    """What ``annotate score --json`` prints: every table of ``out``, JSON-ready and strict.

    NaN and infinities become null (``jsonable``), and every null has its reason beside it: a
    score row's ``flag`` or ``note``, a ranking row's ``note``, the matrices' ``note``. Rows of
    ``scores`` are restricted to ``treatments`` when given. ``benchmark_set`` states the set the
    overall ranking compares models on; ``left_out`` lists every model it leaves out, with why.
    """
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
            "benchmark_set": benchmark_set_json(chosen),
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


def benchmark_set_json(chosen: Any) -> dict[str, Any]:
    """The ranking's benchmark set as ``--json`` states it: mode, benchmarks, outside, comparable, description."""
    return {
        "mode": chosen.mode if chosen else "shared",
        "benchmarks": list(chosen.benchmarks) if chosen else [],
        "outside": list(chosen.outside) if chosen else [],
        "comparable": chosen.comparable if chosen else True,
        "description": chosen.describe() if chosen else "",
    }


def ppi_payload(out: PPIOutput, sources: list[dict[str, Any]]) -> dict[str, Any]:
    """What ``annotate score --estimator ppi --json`` prints: strict JSON, every null with its reason beside it.

    ``scores``: the PPI++ rows (PPI_COLUMNS) with the design-based ``corrected`` figures of the
    same cell or model (``design_*``); a null ``estimate`` has its reason in ``flag``, a null
    interval or ``gain`` in ``note``. ``strata``: lambda and the per-stratum figures, a null in
    ``note``, a stratum that fell back to the design-based estimate with why in ``fallback``.
    ``predictions``: where each round's predictions come from.
    """
    chosen = out.base.benchmark_set
    left_out = out.base.left_out if out.base.left_out is not None else pd.DataFrame(columns=["model", "reason"])
    return jsonable(
        {
            "estimator": "ppi",
            "settings": out.settings,
            "benchmark_set": benchmark_set_json(chosen),
            "left_out": left_out.to_dict("records"),
            "scores": out.scores.to_dict("records"),
            "strata": out.strata.to_dict("records"),
            "predictions": sources,
            "note": PPI_NOTE,
        }
    )


#: Said with every PPI view (text and JSON).
PPI_NOTE = (
    "PPI++ rows are a view of `annotate score` (stratified by the routing strata, docs/methods.md 4.5); exports, "
    "verify and the report carry the design-based scores only."
)
