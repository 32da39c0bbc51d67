"""`annotate diagnose`: do the study's ambiguity correlates hold in this store? (and review order)

Text features are computed once per response and stored (``response_feature``); later runs
compute only the responses ingested since, with the stored ones as context so the corpus-level
parts (the cross-fitted bigram model, TF-IDF weights) match a full recomputation. The logistic
regression of "the judge said ambiguous" on the standardised features, with model and benchmark
fixed effects and prompt-clustered standard errors, is ``annotate.stats.correlates``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

FEATURES_VERSION = "1"  # bump when annotate.stats.correlates changes what a feature means
MIN_HUMAN_ROWS = 30  # human-labelled judge-ambiguous responses needed before that regression is fitted


def _judge(store: Any, judge: str | None) -> str:
    from annotate.errors import InputError, StateError

    judges = store.judges()
    if not judges:
        raise StateError("the store holds no responses: run `annotate ingest` first.")
    if judge is None:
        if len(judges) > 1:
            raise InputError(f"several judges ({', '.join(judges)}); choose one with --judge.")
        return judges[0]
    if judge not in judges:
        raise InputError(f"no responses judged by {judge!r}; judges: {', '.join(judges)}")
    return judge


def features_for(store: Any, judge: str) -> pd.DataFrame:
    """The judge's responses with their features; computes and stores what is missing."""
    from annotate.stats.correlates import compute_features

    responses = store.responses_for_diagnosis(judge)
    stored = store.stored_features(FEATURES_VERSION)
    have = set(stored.response_id) if len(stored) else set()
    new = responses.loc[~responses.response_id.isin(have)]
    if len(new):
        cols = ["response_id", "model", "prompt", "response"]
        context = responses.loc[responses.response_id.isin(have), cols]
        computed = compute_features(new[cols], context=context if len(context) else None)
        store.save_features(computed, FEATURES_VERSION)
        stored = pd.concat([stored, computed], ignore_index=True) if len(stored) else computed
    return responses.drop(columns=["prompt", "response"]).merge(stored, on="response_id", how="inner")


def fit(frame: pd.DataFrame, *, null_band: tuple[float, float], seed: int = 0) -> Any:
    from annotate.stats.correlates import fit_ambiguity_model

    return fit_ambiguity_model(
        frame,
        (frame.judge_label == "ambiguous").astype(int).to_numpy(),
        frame.model.to_numpy(),
        frame.benchmark.to_numpy(),
        (frame.benchmark.astype(str) + "\x1f" + frame.prompt_id.astype(str)).to_numpy(),
        null_band=null_band,
        seed=seed,
    )


def _result_dict(res: Any, outcome: str) -> dict[str, Any]:
    from annotate.stats.correlates import compare_with_study

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
        "auc_combined": getattr(res, "auc_combined", None),
        "notes": list(res.notes),
        "dropped": res.dropped if isinstance(res.dropped, (dict, list)) else str(res.dropped),
    }


def human_labels(store: Any) -> pd.Series:
    """response_id -> 1 (harmful) / 0 (safe) from the latest final labels of every round."""
    rounds = store.rounds()
    out = {}
    for r in rounds.itertuples():
        final = store.final_labels(int(r.id))
        if final.empty:
            continue
        items = store.round_items(int(r.id))[["round_item_id", "response_id"]]
        merged = final.merge(items, on="round_item_id")
        for rid, label in zip(merged.response_id, merged.label):
            if label in ("harmful", "safe"):
                out[int(rid)] = 1 if label == "harmful" else 0
    return pd.Series(out, dtype=float)


def diagnose(
    store: Any, *, judge: str | None, by: str | None, null_band: tuple[float, float], seed: int = 0
) -> dict[str, Any]:
    from annotate.stats.correlates import fit_human_harmful_model

    judge = _judge(store, judge)
    frame = features_for(store, judge)
    try:
        result = {
            "judge": judge,
            "null_band": list(null_band),
            "features_version": FEATURES_VERSION,
            **_result_dict(fit(frame, null_band=null_band, seed=seed), "judge said ambiguous"),
        }
    except ValueError as exc:
        from annotate.errors import StateError

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


def ambiguity_priority(store: Any, judge: str, response_ids: list[int], *, seed: int) -> dict[int, float]:
    """Predicted probability that the judge calls each response ambiguous (for route --prioritize)."""
    frame = features_for(store, judge)
    model = fit(frame, null_band=(0.9, 1.1), seed=seed)
    sub = frame.loc[frame.response_id.isin(response_ids)]
    p = model.predict_proba(sub, sub.model.to_numpy(), sub.benchmark.to_numpy())
    return {int(r): float(x) for r, x in zip(sub.response_id, p)}
