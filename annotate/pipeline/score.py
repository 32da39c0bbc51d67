"""`annotate score` and `annotate plan`: corrected scores and rankings from reviewed rounds.

The computation itself is pure (``annotate.audit.scores.scores_of``) and runs on the audit record
that ``pipeline.record`` builds from the store; an export writes the same record, so ``annotate
verify`` re-derives an export's scores with the same function.

``score --estimator ppi`` (:func:`ppi_from_store`) adds a view: stratified PPI++ (docs/methods.md 4.5)
with a prediction for every response of the design's strata, read from the store here
(:func:`ppi_predictions`): the routing judge's ``judge_score``, else the share of the other judges
that labelled the same response harmful. It needs every response of a stratum, not only the
reviewed ones, so it is not re-derivable from an export's two tables: the PPI rows are a view of
``annotate score`` and never part of an export.
"""

from __future__ import annotations

import json
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate.audit.confound import POOLED_CORRECTION, confound_table
from annotate.audit.judges import judges_from_record
from annotate.errors import InputError
from annotate.ingest.rubric import preset_names
from annotate.pipeline._domains import keyed, routed_populations
from annotate.pipeline._planning import reviewed_strata, score_from_store
from annotate.pipeline._resolve import resolve_judge
from annotate.stats._common import jsonable
from annotate.stats.scoring import plan_allocation
from annotate.stats.scoring.allocation import plan_sensitivity
from annotate.stats.scoring.predictions import judge_predictions, score_direction
from annotate.stats.scoring.tables import PPIOutput, ppi_tables

if TYPE_CHECKING:
    from annotate.audit.design import Design
    from annotate.db import Store


def judge_confound(record: Any, scored: Any, *, seed: int = 0) -> dict[str, Any]:
    """Does a judge err differently by model, and what would a correction pooled over models do to the ranking?

    The model test of ``judges --by model`` (its figures without intervals; the test's own draws of
    the same seed) over the judges the scoring record holds, and
    :func:`annotate.audit.confound.confound_table`; JSON-ready.
    """
    audit = judges_from_record(record, by=("benchmark", "model"), draws=0, seed=seed)
    rows, flips = confound_table(record, scored, audit)
    flagged = audit.models[audit.models.flagged.astype(bool)] if len(audit.models) else audit.models
    return jsonable(
        {
            "test": audit.settings.get("model_test"),
            "fdr": audit.settings.get("fdr"),
            "flagged": flagged.to_dict("records"),
            "pooled_correction": POOLED_CORRECTION,
            "models": rows.to_dict("records"),
            "order_changes": flips,
        }
    )


def ppi_from_store(
    store: Store,
    names: tuple[str, ...],
    *,
    draws: int = 4000,
    seed: int = 0,
    min_reviewed: int = 10,
    estimand: str = "fixed",
    benchmarks: Any = "shared",
    confidence: float = 0.95,
) -> tuple[PPIOutput, list[dict[str, Any]]]:
    """The PPI++ view of the rounds beside their design-based scores, and where the predictions come from.

    The design-based tables are :func:`score_from_store`'s with the same settings (unchanged).
    """
    base, record = score_from_store(
        store,
        names,
        draws=draws,
        seed=seed,
        min_reviewed=min_reviewed,
        estimand=estimand,
        benchmarks=benchmarks,
        confidence=confidence,
    )
    predictions, sources = ppi_predictions(store, record.design)
    try:
        out = ppi_tables(
            record.design.pooled(record.labels),
            record.design.strata_frame(),
            predictions,
            base,
            draws=draws,
            seed=seed,
            estimand=estimand,
            confidence=confidence,
        )
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return out, sources


def ppi_predictions(store: Store, design: Design) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """The prediction of every response of the design's strata, and a description per round.

    A wave's population is the routing judge's responses ingested after the previous wave and up
    to its ``max_response_id`` (as ``route`` drew it); the stratum is the judge label with the
    wave. Predictions come from
    :func:`annotate.stats.scoring.ppi.judge_predictions`; which end of the routing judge's score is
    harmful is read from the labels its score band gave (``score-band``), else from the score band
    of the rubrics its responses were ingested with.

    Returns
    -------
    predictions : DataFrame
        ``round, model, benchmark, stratum, prompt_id, epoch, prediction, source, reason``.
    sources : list of dict
        Per round: ``round, judge, responses, with_score, direction, direction_from,
        other_judges, predicted, without_prediction``.
    """
    cols = ["id", "benchmark", "model", "prompt_id", "epoch", "judge", "judge_score", "judge_label", "label_reason"]
    rows = store.responses(cols + ["source_id"])
    texts: pd.DataFrame | None = None
    frames, sources = [], []
    for rnd, judge, mine, keys in routed_populations(store, design, rows):
        scores = pd.to_numeric(mine.judge_score, errors="coerce")
        direction, how = None, ""
        if scores.notna().any():
            direction = score_direction(scores, mine.judge_label.tolist(), mine.label_reason.tolist())
            if direction is not None:
                how = f"the labels its score band gave ({int((mine.label_reason == 'score-band').sum())} responses)"
            else:
                direction, how = _rubric_direction(store, judge, set(mine.source_id[scores.notna()]))
        others = rows[rows.judge != judge]
        need_others = bool(len(others)) and bool(scores.isna().any() or direction is None)
        if need_others and texts is None:
            texts = store.responses(["id", "prompt", "response"])
        routing = mine.rename(columns={"id": "response_id"})
        other_rows = None
        if need_others and texts is not None:
            routing = routing.merge(texts.rename(columns={"id": "response_id"}), on="response_id", how="left")
            other_rows = others.merge(texts, on="id", how="left")
        pred = judge_predictions(
            routing,
            other_rows,
            direction=direction,
            direction_reason="" if direction else how,
        )
        frames.append(
            pd.DataFrame(
                {
                    **keyed(rnd.round, routing, keys),
                    "prediction": pred["prediction"].to_numpy(),
                    "source": pred["source"].to_numpy(),
                    "reason": pred["reason"].to_numpy(),
                }
            )
        )
        sources.append(
            {
                "round": rnd.round,
                "judge": judge,
                "responses": len(routing),
                "with_score": int(scores.notna().sum()),
                "direction": direction,
                "direction_from": how if direction else "",
                "why_no_direction": "" if direction or not scores.notna().any() else how,
                "other_judges": sorted(map(str, set(others.judge))) if need_others else [],
                "predicted": int(pred.prediction.notna().sum()),
                "without_prediction": int(pred.prediction.isna().sum()),
            }
        )
    cols_out = ["round", "model", "benchmark", "stratum", "prompt_id", "epoch", "prediction", "source", "reason"]
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols_out)), sources


def _rubric_direction(store: Store, judge: str, source_ids: set[Any]) -> tuple[str | None, str]:
    """Which end of a judge's score is harmful by the score band of the rubrics its scores were ingested with.

    A judge section of the rubric (its pattern matching the judge's name) overrides the format's
    band, as at ingest. Returns (direction or None, how it was found or why not).
    """
    runs = store.ingest_runs()
    runs = runs[runs.source_id.isin(source_ids)] if len(runs) else runs
    known = set(preset_names())
    found: set[str] = set()
    for text in runs.rubric if len(runs) else []:
        try:
            rubric = json.loads(text)
        except (TypeError, ValueError):
            continue
        band = rubric.get("score_band") if isinstance(rubric, dict) else None
        for key, section in (rubric.get("judges") or {}).items() if isinstance(rubric, dict) else []:
            head, _, tail = str(key).partition(":")
            pattern = tail if tail and head in known else str(key)
            if isinstance(section, dict) and section.get("score_band") and fnmatchcase(judge.lower(), pattern.lower()):
                band = {**(band or {}), **section["score_band"]}
        if isinstance(band, dict):
            found.add(str(band.get("harmful_when", "high")))
    if len(found) == 1:
        way = found.pop()
        return way, f"the score band of the rubric its scores were ingested with (harmful_when = {way!r})"
    if not found:
        return None, (
            f"judge {judge!r} gave no label through its score band and the rubric its scores were ingested with "
            "has no score band, so which end is harmful is unknown (ingest them with a [score_band] in the rubric)"
        )
    return None, (
        f"the rubrics judge {judge!r}'s scores were ingested with disagree on which end is harmful "
        "(harmful_when high and low); ingest them again under one rubric"
    )


def plan(
    store: Store,
    names: tuple[str, ...],
    target_se: float | None,
    *,
    min_per_stratum: int = 10,
    judge: str | None = None,
    sensitivity_se: float | None = None,
) -> pd.DataFrame:
    """Neyman allocation of clear items per cell for a target SE (docs/methods.md 4.8), or the
    judge-safe reviews a target SE of the routing judge's sensitivity needs (9.7; issue #23).

    Uses the judge-label populations of a round's design when a round exists, else the judge
    labels in the store (for planning the first round). With ``sensitivity_se`` the rows are
    :func:`annotate.stats.scoring.allocation.plan_sensitivity`'s (one per cell: judge-safe reviews).
    """
    if target_se is None and sensitivity_se is None:
        raise InputError("give --target-se (the corrected rate's SE) or --sensitivity-se (the judge's sensitivity)")
    for name, value in (("--target-se", target_se), ("--sensitivity-se", sensitivity_se)):
        if value is not None and value <= 0:
            raise InputError(f"{name} must be positive, e.g. 0.02")
    rates: Any
    if len(store.rounds()):
        strata = reviewed_strata(store, names)[1]
        rates = "data" if strata.resolved.sum() > 0 else None
    else:
        counts = store.label_counts(judge=resolve_judge(store, judge))
        strata = counts.rename(columns={"n": "population"}).assign(
            stratum=counts.judge_label, reviewed=0, harmful=0, unresolved=0
        )
        rates = None
    if sensitivity_se is not None:
        return plan_sensitivity(strata, sensitivity_se, rates=rates, min_per_stratum=min_per_stratum)
    assert target_se is not None
    return plan_allocation(strata, target_se, rates=rates, min_per_stratum=min_per_stratum)
