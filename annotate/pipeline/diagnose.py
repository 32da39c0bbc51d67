"""`annotate diagnose`: do the study's ambiguity correlates hold in this store?

The features and the ambiguity model are ``pipeline._features``'s (text features stored per
response; the logistic regression of "the judge said ambiguous" on the standardised features,
with model and benchmark fixed effects and prompt-clustered standard errors, is
``annotate.stats.correlates``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.columns import NO_JUDGE
from annotate.errors import InputError, StateError
from annotate.pipeline._features import FEATURES_VERSION, features_for, fit
from annotate.pipeline._resolve import resolve_judge
from annotate.stats.correlates import compare_with_study, fit_human_harmful_model

if TYPE_CHECKING:
    from annotate.db import Store
    from annotate.stats.correlates import AmbiguityModel

MIN_HUMAN_ROWS = 30  # human-labelled judge-ambiguous responses needed before that regression is fitted


def _result_dict(res: AmbiguityModel, outcome: str) -> dict[str, Any]:

    table = res.table.replace({np.nan: None}).to_dict("records")
    study = compare_with_study(res).replace({np.nan: None}).to_dict("records")
    return {
        "outcome": outcome,
        "n_responses": int(res.n),
        "n_events": int(res.n_events),
        "n_clusters": int(res.n_clusters),
        "table": table,
        "study": study,
        "auc_features": res.auc_features,
        "auc_fixed_effects": res.auc_fixed_effects,
        "auc_combined": res.auc_combined,
        "notes": list(res.notes),
        "dropped": res.dropped,
    }


def human_labels(store: Store) -> pd.Series:
    """response_id -> 1 (harmful) / 0 (safe) from the latest final labels of every round."""
    rounds = store.rounds()
    out = {}
    for r in rounds.itertuples():
        final = store.final_labels(int(r.id))
        if final.empty:
            continue
        items = store.round_items(int(r.id))[["round_item_id", "response_id"]]
        merged = final.merge(items, on="round_item_id")
        for rid, label in zip(merged.response_id, merged.label, strict=True):
            if label in ("harmful", "safe"):
                out[int(rid)] = 1 if label == "harmful" else 0
    return pd.Series(out, dtype=float)


def diagnose(
    store: Store, *, judge: str | None, by: str | None, null_band: tuple[float, float], seed: int = 0
) -> dict[str, Any]:
    """Fit the ambiguity model for ``judge`` (the store's only judge when None), save and return it.

    The result holds the table, the study comparison and the AUCs of the main fit; with
    ``by="benchmark"`` one fit per benchmark (an ``error`` entry where it cannot be fitted); and
    the human-harmful model among judge-ambiguous responses once enough are adjudicated.

    Raises ``InputError``/``StateError`` (``resolve_judge``) for an unknown or ambiguous judge or
    an empty store, and ``StateError`` when the main model cannot be fitted.
    """

    judge = resolve_judge(store, judge)
    if judge == NO_JUDGE:
        raise InputError(
            "the responses have no judge (ingested unjudged): the ambiguity model explains a judge's 'ambiguous' "
            "verdicts, and there are none; ingest a judge's verdicts on them first"
        )
    frame = features_for(store, judge)
    try:
        result = {
            "judge": judge,
            "null_band": list(null_band),
            "features_version": FEATURES_VERSION,
            **_result_dict(fit(frame, null_band=null_band, seed=seed), "judge said ambiguous"),
        }
    except ValueError as exc:
        raise StateError(f"cannot fit the ambiguity model: {exc}") from None
    result["by_benchmark"] = []
    if by == "benchmark":
        for bench, sub in frame.groupby("benchmark"):
            try:
                result["by_benchmark"].append(
                    {
                        "benchmark": bench,
                        **_result_dict(fit(sub, null_band=null_band, seed=seed), "judge said ambiguous"),
                    }
                )
            except ValueError as exc:
                result["by_benchmark"].append({"benchmark": bench, "error": str(exc)})
    human = human_labels(store)
    result["human"] = None
    amb_ids = set(frame.loc[frame.judge_label == "ambiguous", "response_id"])
    labelled = human[human.index.isin(amb_ids)]
    if len(labelled) and (len(labelled) < MIN_HUMAN_ROWS or min(labelled.sum(), len(labelled) - labelled.sum()) < 5):
        result["human"] = {
            "error": f"too few human-labelled judge-ambiguous responses to fit ({len(labelled)}, "
            f"{int(labelled.sum())} harmful; need {MIN_HUMAN_ROWS} and 5 of each label)"
        }
    elif len(labelled):
        harmful = frame.response_id.map(human)
        try:
            res = fit_human_harmful_model(
                frame,
                harmful.to_numpy(),
                (frame.judge_label == "ambiguous").to_numpy(),
                frame.model.to_numpy(),
                frame.benchmark.to_numpy(),
                (frame.benchmark.astype(str) + "\x1f" + frame.prompt_id.astype(str)).to_numpy(),
                null_band=null_band,
                seed=seed,
            )
            result["human"] = _result_dict(res, "human-adjudicated harmful among judge-ambiguous")
        except ValueError as exc:
            result["human"] = {"error": str(exc)}
    store.save_diagnosis(judge, result)
    return result
