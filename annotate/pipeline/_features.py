"""Text features of a judge's responses and the ambiguity model fitted on them (shared by `diagnose` and `route`).

Text features are computed once per response and stored (``response_feature``); later runs
compute only the responses ingested since, with the stored ones as context so the corpus-level
parts (the cross-fitted bigram model, TF-IDF weights) match a full recomputation. A response
with a transcript (multi-turn or agentic) is featurised on what its assistant said: the text of
every assistant turn of the conversation, in order, joined by blank lines
(:func:`assistant_text`), rather than on its final answer alone; its prompt stays the first user
turn. :func:`ambiguity_priority` orders a round's review (``route --prioritize``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pandas as pd

from annotate.errors import StateError
from annotate.stats.correlates import compute_features, fit_ambiguity_model

if TYPE_CHECKING:
    from annotate.db import Store
    from annotate.stats.correlates import AmbiguityModel

__all__ = ["FEATURES_VERSION", "ambiguity_priority", "assistant_text", "features_for", "fit"]

FEATURES_VERSION = "1"  # bump when annotate.stats.correlates changes what a feature means


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
    return fit_ambiguity_model(
        frame,
        (frame.judge_label == "ambiguous").astype(int).to_numpy(),
        frame.model.to_numpy(),
        frame.benchmark.to_numpy(),
        (frame.benchmark.astype(str) + "\x1f" + frame.prompt_id.astype(str)).to_numpy(),
        null_band=null_band,
        seed=seed,
    )


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
