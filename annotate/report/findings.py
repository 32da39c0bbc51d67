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


def _rank_range(row: Mapping[str, Any]) -> tuple[float | None, float | None]:
    both = row.get("rank_ci")
    if isinstance(both, (list, tuple)) and len(both) == 2:
        return number(both[0]), number(both[1])
    return number(row.get("rank_low")), number(row.get("rank_high"))


def _ba(row: Mapping[str, Any], percent: bool = False) -> str:
    """Balanced accuracy with its interval: ``0.964 [0.687, 0.977]``, or in per cent ``96.4 % [68.7, 97.7]``."""
    low, high = _interval(row, "balanced_accuracy")
    value = number(row.get("balanced_accuracy")) or 0.0
    if percent:
        span = "" if low is None or high is None else f" [{100 * low:.1f}, {100 * high:.1f}]"
        return f"{100 * value:.1f} %{span}"
    span = "" if low is None or high is None else f" [{low:.3f}, {high:.3f}]"
    return f"{value:.3f}{span}"


def judge_finding(
    rows: Sequence[Mapping[str, Any]], pairs: Sequence[Mapping[str, Any]], *, percent: bool = False
) -> str | None:
    """What the judge audit found on all responses, in one sentence; None without a judge's figure.
    ``percent``: balanced accuracy in per cent, as the terminal's tables print it (the report's are 0-1).

    The judge ranked first is compared with the one ranked next (not with any judge): when their
    ranks tie or their rank intervals overlap the sentence says the two are not told apart; else it
    names the better one ("best" of three or more), P(better than the next) and, where the paired test
    on prompts like these does not reject (p >= 0.05), that the difference could be chance.

    >>> rows = [
    ...     {"judge": "a", "benchmark": "ALL", "model": "ALL", "rank": 2, "balanced_accuracy": 0.8,
    ...      "balanced_accuracy_ci": [0.7, 0.9], "rank_ci": [2, 2], "n_resolved": 40},
    ...     {"judge": "b", "benchmark": "ALL", "model": "ALL", "rank": "1", "balanced_accuracy": "0.9",
    ...      "balanced_accuracy_ci_low": "0.8", "balanced_accuracy_ci_high": "0.95", "rank_low": "1",
    ...      "rank_high": "1", "n_resolved": "40"}]
    >>> pairs = [{"judge_a": "a", "judge_b": "b", "benchmark": "ALL", "model": "ALL",
    ...           "p_a_better": 0.1, "p_b_better": 0.9, "p_value": 0.2}]
    >>> print(judge_finding(rows, pairs))  # doctest: +NORMALIZE_WHITESPACE
    b is the better judge here: balanced accuracy 0.900 [0.800, 0.950] against the reviewers' final
    labels on 40 reviewed responses (a: 0.800 [0.700, 0.900]); P(b better than a) = 0.90, not decisive,
    and on prompts like these the difference could be chance (p = 0.20).
    >>> rows[1]["rank_low"] = "1"; rows[1]["rank_high"] = "2"
    >>> print(judge_finding(rows, pairs))  # doctest: +NORMALIZE_WHITESPACE
    b and a are not told apart here: balanced accuracy 0.900 [0.800, 0.950] and 0.800 [0.700, 0.900]
    against the reviewers' final labels on 40 reviewed responses (their ranks' intervals overlap);
    P(b better than a) = 0.90.
    """
    pooled = [r for r in rows if _pooled(r) and number(r.get("balanced_accuracy")) is not None]
    if not pooled:
        return None
    pooled.sort(key=lambda r: (number(r.get("rank")) is None, number(r.get("rank")) or 0.0, str(r.get("judge"))))
    best = pooled[0]
    judge = str(best.get("judge"))
    n = number(best.get("n_resolved"))
    on = f" on {int(n)} reviewed responses" if n is not None else ""
    if len(pooled) == 1:
        return f"{judge} against the reviewers' final labels{on}: balanced accuracy {_ba(best, percent)}."
    second = pooled[1]
    other = str(second.get("judge"))
    r1, r2 = number(best.get("rank")), number(second.get("rank"))
    (_, high1), (low2, _) = _rank_range(best), _rank_range(second)
    ranged = high1 is not None and low2 is not None
    apart = ranged and r1 is not None and r2 is not None and r1 < r2 and high1 < low2  # type: ignore[operator]
    if not ranged:  # no posterior draws: a rank, but nothing says how sure it is
        text = (
            f"{judge} ranks first here: balanced accuracy {_ba(best, percent)} against the reviewers' final "
            f"labels{on} ({other} next: {_ba(second, percent)}; no draws, so no rank interval)"
        )
    elif apart:
        word = "best" if len(pooled) > 2 else "better"
        text = (
            f"{judge} is the {word} judge here: balanced accuracy {_ba(best, percent)} against the reviewers' final "
            f"labels{on} ({other}{' next' if len(pooled) > 2 else ''}: {_ba(second, percent)})"
        )
    else:
        why = "their ranks tie" if r1 == r2 else "their ranks' intervals overlap"
        text = (
            f"{judge} and {other} are not told apart here: balanced accuracy {_ba(best, percent)} and "
            f"{_ba(second, percent)} against the reviewers' final labels{on} ({why})"
        )
    pair = next(
        (p for p in pairs if _pooled(p) and {str(p.get("judge_a")), str(p.get("judge_b"))} == {judge, other}), None
    )
    if pair is not None:
        mine_a = str(pair.get("judge_a")) == judge
        p_better = number(pair.get("p_a_better" if mine_a else "p_b_better"))
        p_worse = number(pair.get("p_b_better" if mine_a else "p_a_better"))
        if not apart and (p_better or 0.0) + (p_worse or 0.0) < 0.5:
            p_better = None  # mostly tied draws: "not told apart" says it, a P near 0 would mislead
        if p_better is not None:
            text += f"; P({judge} better than {other}) = {p_better:.2f}"
            if apart and p_better < DECISIVE:
                text += ", not decisive"
        p = number(pair.get("p_value"))
        if (apart or not ranged) and p is not None and p >= 0.05:
            lead = ", and on" if p_better is not None else "; on"
            text += f"{lead} prompts like these the difference could be chance (p = {p:.2f})"
    return text + "."


def model_test_finding(tests: Sequence[Mapping[str, Any]], fdr: Any) -> str | None:
    """Whether a judge errs differently for some model, in one sentence; None when nothing was tested.

    ``tests``: flat records with ``judge``, ``model``, ``figure``, ``estimate``, ``rest``, ``p_value``,
    ``q_value`` and ``flagged`` (judge_models.csv's columns). The sentence names the figures tested and
    how many rows could not be (too few reviewed responses of the truth on the model; PPV is never tested).

    >>> t = [{"judge": "g", "model": "m", "figure": "specificity", "estimate": 0.8, "rest": 0.95,
    ...       "p_value": 0.01, "q_value": 0.04, "flagged": "True"},
    ...      {"judge": "g", "model": "n", "figure": "specificity", "p_value": 0.5, "q_value": 0.5, "flagged": False},
    ...      {"judge": "g", "model": "n", "figure": "sensitivity", "p_value": None,
    ...       "note": "not testable: 2 harmful reviewed (fewer than 5)"}]
    >>> print(model_test_finding(t, 0.1))  # doctest: +NORMALIZE_WHITESPACE
    Yes: g's specificity on m is 0.800 against 0.950 on the other models (q = 0.040); a flagged judge's
    raw scores favour or penalise those models, and the corrected rates use each model's own reviewed
    responses.
    >>> print(model_test_finding(t[1:], "0.1"))  # doctest: +NORMALIZE_WHITESPACE
    No: no judge's specificity on any model differs from its figure on the other models at a
    false-discovery rate of 10 % (1 test; 1 row not testable (1 with too few reviewed responses of the
    truth on the model); sensitivity untested).
    """
    tested = [t for t in tests if number(t.get("p_value")) is not None]
    if not tested:
        return None
    untestable = [t for t in tests if number(t.get("p_value")) is None and str(t.get("figure")) != "ppv"]
    figures = [f for f in ("sensitivity", "specificity") if any(str(t.get("figure")) == f for t in tested)]
    never = [f for f in ("sensitivity", "specificity") if f not in figures and any(
        str(t.get("figure")) == f for t in untestable)]  # fmt: skip
    flagged = [t for t in tested if str(t.get("flagged")).lower() == "true"]
    if not flagged:
        level = number(fdr)
        at = f" at a false-discovery rate of {100 * level:.0f} %" if level is not None else ""
        thin = ""
        if untestable:
            thin = f"; {untested_rows(tests)}" + (f"; {' and '.join(never)} untested" if never else "")
        return (
            f"No: no judge's {' or '.join(figures) or 'figure'} on any model differs from its figure on the other "
            f"models{at} ({len(tested)} test{'s' if len(tested) != 1 else ''}{thin})."
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
        f"Yes: {'; '.join(parts)}{more}; a flagged judge's raw scores favour or penalise those models, and the "
        "corrected rates use each model's own reviewed responses."
    )


def untested_rows(tests: Sequence[Mapping[str, Any]]) -> str:
    """How many of the model test's rows could not be tested, and why ("" when every row was); PPV's
    rows are shown, never tested, and not counted."""
    untestable = [t for t in tests if number(t.get("p_value")) is None and str(t.get("figure")) != "ppv"]
    if not untestable:
        return ""
    reasons: dict[str, int] = {}
    for t in untestable:
        why = _untestable_reason(str(t.get("note") or ""))
        reasons[why] = reasons.get(why, 0) + 1
    said = ", ".join(f"{n} {reason}" for reason, n in reasons.items())
    return f"{len(untestable)} row{'s' if len(untestable) != 1 else ''} not testable ({said})"


def _untestable_reason(note: str) -> str:
    """Why a model test's row was not tested, in a few words, from the row's note (judge_models.csv).

    >>> _untestable_reason("not testable: 2 harmful reviewed (fewer than 5)")
    'with too few reviewed responses of the truth on the model'
    >>> _untestable_reason("not testable: 0 other model(s) testable (at least 2 needed)")
    'with too few other models to compare with'
    """
    if "other model(s) testable" in note:
        return "with too few other models to compare with"
    if "reviewed (fewer than" in note:
        return "with too few reviewed responses of the truth on the model"
    if "undefined" in note:
        return "whose figure is undefined (no reviewed response of its kind)"
    return "for another reason (see --json)"


#: The judges' records' field names as their tables head them (a row's note names the field it is about).
FIELD_WORDS = {
    "ambiguous_harmful": "then harmful",
    "balanced_accuracy": "balanced accuracy",
    "sensitivity": "sensitivity",
    "specificity": "specificity",
    "ppv": "PPV",
    "npv": "NPV",
    "ambiguous_share": "ambiguous",
    "kappa": "kappa",
}


def plain_note(note: str) -> str:
    """A judge row's note with the field names its clauses start with in words.

    >>> plain_note("ambiguous_harmful: undefined (the judge called no response ambiguous)")
    'then harmful: undefined (the judge called no response ambiguous)'
    """
    import re

    return re.sub(r"\b(" + "|".join(FIELD_WORDS) + r"):", lambda m: f"{FIELD_WORDS[m.group(1)]}:", note)
