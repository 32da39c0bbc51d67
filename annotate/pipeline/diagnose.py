"""`annotate diagnose`: do the study's ambiguity correlates hold in this store? (and review order)

Text features are computed once per response and stored (``response_feature``); later runs
compute only the responses ingested since, with the stored ones as context so the corpus-level
parts (the cross-fitted bigram model, TF-IDF weights) match a full recomputation. The logistic
regression of "the judge said ambiguous" on the standardised features, with model and benchmark
fixed effects and prompt-clustered standard errors, is ``annotate.stats.correlates``.

A response with a transcript (multi-turn or agentic) is featurised on what its assistant said:
the text of every assistant turn of the conversation, in order, joined by blank lines
(:func:`assistant_text`), rather than on its final answer alone; its prompt stays the first user
turn.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.errors import StateError
from annotate.pipeline._resolve import resolve_judge

if TYPE_CHECKING:
    from annotate.db import Store
    from annotate.stats.correlates import AmbiguityModel

FEATURES_VERSION = "1"  # bump when annotate.stats.correlates changes what a feature means
MIN_HUMAN_ROWS = 30  # human-labelled judge-ambiguous responses needed before that regression is fitted


def assistant_text(response: str, transcript: str | None) -> str:
    """The text the features read: every assistant turn of the transcript joined, else the response.

    Tool calls are not text the assistant wrote; a transcript without assistant text gives the
    final response.

    >>> turns = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "Sure."},
    ...          {"role": "tool", "content": "ok"}, {"role": "assistant", "content": "Done."}]
    >>> print(assistant_text("Done.", json.dumps(turns)))
    Sure.
    <BLANKLINE>
    Done.
    >>> assistant_text("Hello", None)
    'Hello'
    """
    if not isinstance(transcript, str):
        return response
    said = [
        t["content"]
        for t in json.loads(transcript)
        if isinstance(t, dict) and t.get("role") == "assistant" and isinstance(t.get("content"), str) and t["content"]
    ]
    return "\n\n".join(said) or response


def features_for(store: Store, judge: str) -> pd.DataFrame:
    """The judge's responses with their features; computes and stores what is missing.

    A response with a transcript is featurised on :func:`assistant_text`.
    """
    from annotate.stats.correlates import compute_features

    responses = store.responses_for_diagnosis(judge)
    responses["response"] = [
        assistant_text(r, t) for r, t in zip(responses.response, responses.transcript, strict=True)
    ]
    responses = responses.drop(columns=["transcript"])
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


def fit(frame: pd.DataFrame, *, null_band: tuple[float, float], seed: int = 0) -> AmbiguityModel:
    """The ambiguity model on ``features_for``'s frame: judge said ambiguous ~ features, with model
    and benchmark fixed effects and standard errors clustered on (benchmark, prompt).

    Raises ``ValueError`` (from the statistics) when the data cannot support the fit; callers
    turn it into a user-facing error or a reported one.
    """
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


def _result_dict(res: AmbiguityModel, outcome: str) -> dict[str, Any]:
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
    from annotate.stats.correlates import fit_human_harmful_model

    judge = resolve_judge(store, judge)
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


def ambiguity_priority(store: Store, judge: str, response_ids: list[int], *, seed: int) -> dict[int, float]:
    """Predicted probability that the judge calls each response ambiguous (for route --prioritize).

    Raises ``StateError`` when the ambiguity model cannot be fitted on the store's responses
    (e.g. the judge never, or always, says ambiguous).
    """
    frame = features_for(store, judge)
    try:
        model = fit(frame, null_band=(0.9, 1.1), seed=seed)
    except ValueError as exc:
        raise StateError(f"cannot fit the ambiguity model to prioritise the review order: {exc}") from None
    sub = frame.loc[frame.response_id.isin(response_ids)]
    p = model.predict_proba(sub, sub.model.to_numpy(), sub.benchmark.to_numpy())
    return {int(r): float(x) for r, x in zip(sub.response_id, p, strict=True)}
