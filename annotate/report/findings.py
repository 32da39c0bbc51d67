"""What the judge audit found, in one plain sentence each: the answer before the method (issue #45).

Shared by ``annotate judges`` (the pipeline's records) and the report's judges section (an export's
judges.csv, judge_pairs.csv and judge_models.csv, read back as text): every value goes through
:func:`annotate.report._fmt.number`, and an interval is read as ``<key>_ci`` (a pair) or as
``<key>_ci_low`` / ``<key>_ci_high``. No markup: the template escapes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from annotate.columns import ALL
from annotate.report._fmt import number

#: A P(better) this high is what the scores call credible; below it the order is not decisive.
DECISIVE = 0.975
_FIGURE_WORDS = {"sensitivity": "sensitivity", "specificity": "specificity", "ppv": "PPV"}


def _interval(row: Mapping[str, Any], key: str) -> tuple[float | None, float | None]:
    both = row.get(f"{key}_ci")
    if isinstance(both, (list, tuple)) and len(both) == 2:
        return number(both[0]), number(both[1])
    return number(row.get(f"{key}_ci_low")), number(row.get(f"{key}_ci_high"))


def _pooled(row: Mapping[str, Any]) -> bool:
    return str(row.get("benchmark")) == ALL and str(row.get("model")) == ALL


def judge_finding(rows: Sequence[Mapping[str, Any]], pairs: Sequence[Mapping[str, Any]]) -> str | None:
    """The best judge on all responses, how sure, on how many reviewed responses; None without one.

    >>> rows = [
    ...     {"judge": "a", "benchmark": "ALL", "model": "ALL", "rank": 2, "balanced_accuracy": 0.8,
    ...      "balanced_accuracy_ci": [0.7, 0.9], "n_resolved": 40},
    ...     {"judge": "b", "benchmark": "ALL", "model": "ALL", "rank": "1", "balanced_accuracy": "0.9",
    ...      "balanced_accuracy_ci_low": "0.8", "balanced_accuracy_ci_high": "0.95", "n_resolved": "40"}]
    >>> pairs = [{"judge_a": "a", "judge_b": "b", "benchmark": "ALL", "model": "ALL",
    ...           "p_a_better": 0.1, "p_b_better": 0.9, "p_value": 0.2}]
    >>> print(judge_finding(rows, pairs))  # doctest: +NORMALIZE_WHITESPACE
    b is the better judge here: balanced accuracy 0.900 [0.800, 0.950] against the reviewers' final
    labels on 40 reviewed responses; P(better than a) = 0.90, not decisive, and on prompts like these
    the difference could be chance (p = 0.20).
    """
    pooled = [r for r in rows if _pooled(r) and number(r.get("balanced_accuracy")) is not None]
    if not pooled:
        return None
    pooled.sort(key=lambda r: (number(r.get("rank")) is None, number(r.get("rank")) or 0.0, str(r.get("judge"))))
    best = pooled[0]
    judge, ba = str(best.get("judge")), number(best.get("balanced_accuracy"))
    low, high = _interval(best, "balanced_accuracy")
    span = "" if low is None or high is None else f" [{low:.3f}, {high:.3f}]"
    n = number(best.get("n_resolved"))
    on = f" on {int(n)} reviewed responses" if n is not None else ""
    if len(pooled) == 1:
        return f"{judge} against the reviewers' final labels{on}: balanced accuracy {ba:.3f}{span}."
    text = f"{judge} is the better judge here: balanced accuracy {ba:.3f}{span} against the reviewers' final labels{on}"
    pair = next((p for p in pairs if _pooled(p) and judge in (str(p.get("judge_a")), str(p.get("judge_b")))), None)
    if pair is not None:
        mine_a = str(pair.get("judge_a")) == judge
        other = str(pair.get("judge_b") if mine_a else pair.get("judge_a"))
        p_better = number(pair.get("p_a_better" if mine_a else "p_b_better"))
        if p_better is not None:
            text += f"; P(better than {other}) = {p_better:.2f}"
            if p_better < DECISIVE:
                text += ", not decisive"
        p = number(pair.get("p_value"))
        if p is not None and p >= 0.05:
            text += f", and on prompts like these the difference could be chance (p = {p:.2f})"
    return text + "."


def model_test_finding(tests: Sequence[Mapping[str, Any]], fdr: Any) -> str | None:
    """Whether a judge errs differently for some model, in one sentence; None when nothing was tested.

    ``tests``: flat records with ``judge``, ``model``, ``figure``, ``estimate``, ``rest``, ``p_value``,
    ``q_value`` and ``flagged`` (judge_models.csv's columns).

    >>> t = [{"judge": "g", "model": "m", "figure": "specificity", "estimate": 0.8, "rest": 0.95,
    ...       "p_value": 0.01, "q_value": 0.04, "flagged": "True"},
    ...      {"judge": "g", "model": "n", "figure": "sensitivity", "p_value": 0.5, "q_value": 0.5, "flagged": False}]
    >>> print(model_test_finding(t, 0.1))  # doctest: +NORMALIZE_WHITESPACE
    Yes: g's specificity on m is 0.800 against 0.950 on the other models (q = 0.040); the judge's raw
    scores favour or penalise those models, and the corrected rates use each model's own reviewed
    responses.
    >>> print(model_test_finding(t[1:], "0.1"))  # doctest: +NORMALIZE_WHITESPACE
    No: no judge's figure on any model differs from its figure on the other models at a
    false-discovery rate of 10 % (1 test).
    """
    tested = [t for t in tests if number(t.get("p_value")) is not None]
    if not tested:
        return None
    flagged = [t for t in tested if str(t.get("flagged")).lower() == "true"]
    if not flagged:
        level = number(fdr)
        at = f" at a false-discovery rate of {100 * level:.0f} %" if level is not None else ""
        return (
            f"No: no judge's figure on any model differs from its figure on the other models{at} "
            f"({len(tested)} test{'s' if len(tested) != 1 else ''})."
        )
    flagged.sort(key=lambda t: number(t.get("q_value")) or 0.0)
    parts = []
    for t in flagged[:3]:
        figure = _FIGURE_WORDS.get(str(t.get("figure")), str(t.get("figure")))
        est, rest, q = number(t.get("estimate")), number(t.get("rest")), number(t.get("q_value"))
        said = f"{t.get('judge')}'s {figure} on {t.get('model')}"
        if est is not None and rest is not None:
            said += f" is {est:.3f} against {rest:.3f} on the other models"
        parts.append(said + ("" if q is None else f" (q = {q:.3f})"))
    more = f"; {len(flagged) - 3} more flagged" if len(flagged) > 3 else ""
    return (
        f"Yes: {'; '.join(parts)}{more}; the judge's raw scores favour or penalise those models, and the corrected "
        "rates use each model's own reviewed responses."
    )
