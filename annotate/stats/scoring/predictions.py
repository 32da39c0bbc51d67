"""Each routed response's prediction for PPI++ (docs/methods.md 9.5): a judge's score, or other judges' labels.

:func:`score_direction` reads which end of the routing judge's score means harmful from the labels
its score band gave; :func:`judge_predictions` turns the routing judge's scores (or else the share
of the other judges that called the same response harmful) into a prediction f in [0, 1].
Pure: numpy and pandas only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

__all__ = ["judge_predictions", "score_direction"]


# --------------------------------------------------------------------------------------------


def score_direction(scores: ArrayLike, labels: Sequence[Any], reasons: Sequence[Any]) -> str | None:
    """Which end of a judge's score means harmful, read from the labels its score band gave.

    A response whose label came through the rubric's score band (reason ``score-band``) is
    harmful above the band and safe below it when ``harmful_when = "high"``, the other way round
    when ``"low"``: those labels say which way the rubric read these very scores.

    Returns
    -------
    "high", "low" or None
        None without score-band labels on both sides, or when they overlap.

    >>> score_direction([0.9, 0.1, 0.8, 0.5], ["harmful", "safe", "harmful", "ambiguous"],
    ...                 ["score-band"] * 4)
    'high'
    >>> score_direction([0.9, 0.1], ["safe", "harmful"], ["score-band"] * 2)
    'low'
    >>> score_direction([0.9, 0.1], ["harmful", "safe"], ["mapped"] * 2) is None
    True
    """
    s = np.asarray(scores, dtype=np.float64)
    lab = np.asarray(labels, dtype=object)
    band = (np.asarray(reasons, dtype=object) == "score-band") & np.isfinite(s)
    harm, safe = s[band & (lab == "harmful")], s[band & (lab == "safe")]
    if not len(harm) or not len(safe):
        return None
    if harm.min() > safe.max():
        return "high"
    if harm.max() < safe.min():
        return "low"
    return None


def judge_predictions(
    routing: pd.DataFrame,
    others: pd.DataFrame | None = None,
    *,
    direction: str | None = None,
    direction_reason: str = "",
) -> pd.DataFrame:
    """Each routed response's prediction f in [0, 1], where it comes from, or why there is none.

    Parameters
    ----------
    routing : DataFrame
        The routing judge's responses: ``response_id, model, benchmark, prompt_id, epoch,
        judge_score`` (NaN: none) and, when ``others`` is given, ``prompt, response``.
    others : DataFrame, optional
        Every other judge's rows: ``judge, model, benchmark, prompt_id, epoch, judge_label,
        prompt, response``.
    direction : "high", "low" or None
        Which end of the routing judge's score means harmful (None: unknown, scores unused).
    direction_reason : str
        Why the direction is unknown (said for every response that has only a score).

    Returns
    -------
    DataFrame, one row per ``routing`` row (same order)
        ``response_id, prediction`` (NaN: none), ``source`` (``judge_score`` or ``other
        judges (k)``), ``reason`` (why there is no prediction; empty otherwise).

    Notes
    -----
    * The routing judge's ``judge_score`` comes first. Scores of a benchmark that all lie in
      [0, 1] are used as they are, others are rescaled by the judge's range on that benchmark;
      with ``direction = "low"`` f = 1 - score. PPI++ is unchanged by an increasing affine map
      of f except for the clip of lambda at 1, so the scale matters little; the direction
      decides whether the prediction helps (the wrong one gives lambda = 0: no gain, no bias).
    * Otherwise f is the share of the other judges that labelled the same response who said
      harmful: same (benchmark, model, prompt_id, epoch) **and** the same prompt and response
      text (a row with another text is another response). An ``ambiguous`` label counts as not
      harmful in that share.

    Examples
    --------
    >>> routing = pd.DataFrame({"response_id": [1, 2, 3], "model": "m", "benchmark": "b",
    ...     "prompt_id": ["p1", "p2", "p3"], "epoch": 0, "judge_score": [0.8, None, None],
    ...     "prompt": ["q1", "q2", "q3"], "response": ["r1", "r2", "r3"]})
    >>> others = pd.DataFrame({"judge": ["j2", "j3", "j2"], "model": "m", "benchmark": "b",
    ...     "prompt_id": ["p2", "p2", "p3"], "epoch": 0, "judge_label": ["harmful", "safe", "harmful"],
    ...     "prompt": ["q2", "q2", "q3"], "response": ["r2", "r2", "another answer"]})
    >>> out = judge_predictions(routing, others, direction="high")
    >>> out.prediction.tolist(), out.source.tolist()
    ([0.8, 0.5, nan], ['judge_score', 'other judges (2)', ''])
    >>> out.reason[2]
    'no judge_score and no other judge labelled this response (same key, prompt and response text)'
    """
    n = len(routing)
    pred = np.full(n, np.nan)
    source = np.full(n, "", dtype=object)
    reason = np.full(n, "", dtype=object)
    score = pd.to_numeric(routing["judge_score"], errors="coerce").to_numpy(dtype=np.float64)
    has_score = np.isfinite(score)
    if has_score.any() and direction in ("high", "low"):
        scaled = score.copy()
        bench = routing["benchmark"].to_numpy(dtype=object)
        for b in pd.unique(bench[has_score]):
            at = has_score & (bench == b)
            lo, hi = float(score[at].min()), float(score[at].max())
            if lo < 0 or hi > 1:  # another scale: the judge's own range on this benchmark
                scaled[at] = (score[at] - lo) / (hi - lo) if hi > lo else 0.5
        f = scaled if direction == "high" else 1.0 - scaled
        pred[has_score] = f[has_score]
        source[has_score] = "judge_score"
    if others is not None and len(others) and n:
        key = ["model", "benchmark", "prompt_id", "epoch"]
        left = routing[key + ["prompt", "response"]].assign(_row=np.arange(n))
        right = others[key + ["judge", "judge_label", "prompt", "response"]]
        both = left.merge(right, on=key, how="inner", suffixes=("", "_o"))
        same = (both["prompt"] == both["prompt_o"]) & (both["response"] == both["response_o"])
        both = both[same.to_numpy()]
        if len(both):
            harmful = (both["judge_label"] == "harmful").astype(np.float64)
            agg = harmful.groupby(both["_row"].to_numpy()).agg(["mean", "size"])
            rows = agg.index.to_numpy(dtype=np.int64)
            use = ~np.isfinite(pred[rows])
            pred[rows[use]] = agg["mean"].to_numpy()[use]
            source[rows[use]] = [f"other judges ({int(k)})" for k in agg["size"].to_numpy()[use]]
    none = ~np.isfinite(pred)
    if none.any():
        why = "no judge_score and no other judge labelled this response (same key, prompt and response text)"
        score_only = none & has_score
        reason[none] = why
        if direction_reason:
            reason[score_only] = f"its judge_score cannot be read: {direction_reason}"
    return pd.DataFrame(
        {"response_id": routing["response_id"].to_numpy(), "prediction": pred, "source": source, "reason": reason}
    )
