"""The reviewers' hazard answers in labels.csv, and the agreement on them (annotate-export/17; pure).

A round routed with ``--ask-hazards`` asks every reviewer the hazard categories that apply and the
severity of a harmful response (``labelstudio.labelconfig.with_hazard_questions``). labels.csv keeps
them per item in three cells written and read here:

* ``hazard_answers``: ``A1=prv+vcr;A2=vcr;A3=`` (each reviewer who answered, in the round's order, the
  codes they chose joined by ``+``; nothing after ``=`` for "None of these");
* ``severity_answers``: ``A1=moderate;A2=high`` (each reviewer who gave one);
* ``expert_hazards``: the codes the expert chose on an item decided by them, ``;``-joined (``(none)`` for
  "None of these"; empty when the expert did not answer);

and two cells re-derived from them (``stats.agreement.hazards.settle_hazards``): ``reviewed_hazard``
(the categories the reviewers' majority, or the expert on a tie, settled, ``;``-joined) and
``hazard_tied`` (the ties nobody settled). ``hazard_agreement.json`` holds, per round with answers,
the agreement :func:`hazard_agreement_doc` computes, which ``annotate agreement`` prints and ``verify``
re-derives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from annotate.audit.schema import listed
from annotate.columns import VERDICTS
from annotate.hazards import OFFERABLE_CODE, SEVERITIES, hazards_of, taxonomy
from annotate.stats._common import jsonable
from annotate.stats.agreement.hazards import hazard_agreement, hazard_majority, settle_hazards
from annotate.stats.agreement.votes import Thresholds

__all__ = [
    "HAZARD_ANSWER_COLUMNS",
    "EXPERT_NONE",
    "answers_cell",
    "expert_cell",
    "check_hazard_answers",
    "hazard_agreement_doc",
    "parse_cell",
    "settled_cells",
]

#: labels.csv's columns of the reviewers' hazard answers (annotate-export/17).
HAZARD_ANSWER_COLUMNS = ("hazard_answers", "severity_answers", "expert_hazards", "reviewed_hazard", "hazard_tied")


def answers_cell(by_reviewer: Mapping[str, Any], order: Sequence[str]) -> str | None:
    """One item's answers as a cell: ``A1=prv+vcr;A2=`` (codes) or ``A1=moderate`` (a severity); None when
    no reviewer of ``order`` answered. A value is a list of codes or one text."""
    parts = []
    for who in order:
        value = by_reviewer.get(who)
        if value is None:
            continue
        parts.append(f"{who}={'+'.join(sorted(value)) if isinstance(value, list) else value}")
    return ";".join(parts) or None


def parse_cell(text: Any, *, codes: bool) -> dict[str, Any]:
    """A cell of :func:`answers_cell` back: reviewer -> codes (``codes=True``) or -> one text.

    Raises ``ValueError`` naming what does not fit: a part without ``=``, a reviewer twice, a code that
    is not lower-case letters, digits and ``_``.
    """
    if not isinstance(text, str) or text == "":  # an empty cell (None, or NaN in a frame)
        return {}
    out: dict[str, Any] = {}
    for part in str(text).split(";"):
        who, sep, value = part.partition("=")
        if not sep or not who:
            raise ValueError(f"{part[:40]!r} is not REVIEWER=ANSWER")
        if who in out:
            raise ValueError(f"{who} answers twice")
        if codes:
            chosen = [c for c in value.split("+") if c] if value else []
            bad = [c for c in chosen if not OFFERABLE_CODE.match(c)]
            if bad or len(set(chosen)) != len(chosen):
                raise ValueError(f"{who}'s hazard codes {value[:40]!r} are not distinct codes (letters, digits, _ . -)")
            out[who] = chosen
        else:
            out[who] = value
    return out


#: At most this many codes outside AILuminate's in a round's answers (a team's own list is short).
MAX_OTHER_CODES = 200
#: ``expert_hazards`` of an expert who answered "None of these".
EXPERT_NONE = "(none)"


def expert_cell(chosen: Sequence[str]) -> str:
    """``expert_hazards`` of an expert's answer: its codes ``;``-joined, or :data:`EXPERT_NONE`."""
    return ";".join(sorted(chosen)) or EXPERT_NONE


def settled_cells(hazard_answers: str | None, expert_hazards: str | None) -> tuple[str | None, str | None]:
    """``reviewed_hazard`` and ``hazard_tied`` of one row, from its ``hazard_answers`` and ``expert_hazards``."""
    answers = parse_cell(hazard_answers, codes=True)
    if not answers:
        return None, None
    expert = None
    if isinstance(expert_hazards, str) and expert_hazards:
        expert = [] if expert_hazards == EXPERT_NONE else [c for c in str(expert_hazards).split(";") if c]
    settled, tied = settle_hazards(answers, expert)
    return ";".join(settled) or None, ";".join(tied) or None


def check_hazard_answers(
    labels: pd.DataFrame, lines: list[int], annotators_by_round: Mapping[str, Sequence[str]]
) -> list[str]:
    """Problems of labels.csv's hazard answer cells (annotate-export/17): each cell parses, names only the
    round's reviewers, a severity is one of :data:`SEVERITIES`, and ``reviewed_hazard`` / ``hazard_tied``
    are what the answers settle (re-derived)."""

    def line(i: int) -> str:
        return f"labels.csv:{lines[i]}" if i < len(lines) else "labels.csv"

    found: list[str] = []
    codes: set[str] = set()
    for i, rec in enumerate(labels.to_dict("records")):
        reviewers = set(annotators_by_round.get(rec["round"], []))
        try:
            answers = parse_cell(rec["hazard_answers"], codes=True)
            severity = parse_cell(rec["severity_answers"], codes=False)
            if rec["expert_hazards"] not in (None, EXPERT_NONE):
                parse_cell(f"E={str(rec['expert_hazards']).replace(';', '+')}", codes=True)
        except ValueError as exc:
            found.append(f"{line(i)}: {exc}.")
            continue
        strangers = sorted((set(answers) | set(severity)) - reviewers)
        if strangers:
            found.append(f"{line(i)}: hazard answers of {', '.join(strangers)}, not reviewers of round {rec['round']}.")
            continue
        # The answers ride on a verdict: a reviewer without one in their column gave none of them.
        silent = sorted(who for who in set(answers) | set(severity) if rec.get(who) not in VERDICTS)
        if silent:
            found.append(f"{line(i)}: hazard answers of {', '.join(silent)}, who gave this item no verdict.")
            continue
        if rec["expert_hazards"] is not None and (rec.get("expert") is None or not answers):
            found.append(
                f"{line(i)}: expert_hazards {str(rec['expert_hazards'])[:40]!r} on an item no expert decided "
                "(or that no reviewer answered)."
            )
            continue
        codes.update(c for got in answers.values() for c in got)
        odd = sorted({v for v in severity.values() if v not in SEVERITIES})
        if odd:
            found.append(f"{line(i)}: severity {odd[0][:40]!r} is not one of {', '.join(SEVERITIES)}.")
            continue
        want = settled_cells(rec["hazard_answers"], rec["expert_hazards"])
        if (rec["reviewed_hazard"], rec["hazard_tied"]) != want:
            found.append(
                f"{line(i)}: reviewed_hazard {rec['reviewed_hazard']!r} and hazard_tied {rec['hazard_tied']!r}; the "
                f"answers settle {want[0]!r} and leave {want[1]!r} tied (re-derived)."
            )
    others = codes - set(taxonomy().hazards)
    if len(others) > MAX_OTHER_CODES:  # each is a category to measure: a page offers a few, not thousands
        found.append(
            f"labels.csv: the hazard answers name {len(others):,} codes outside AILuminate's; at most "
            f"{MAX_OTHER_CODES} are read."
        )
    out: list[str] = []
    listed(out, found, "rows whose hazard answers do not fit")
    return out


def _long(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (item, reviewer who answered the hazard or severity question), items numbered in order."""
    out = []
    for unit, (hz, sv) in enumerate(zip(rows["hazard_answers"], rows["severity_answers"], strict=True)):
        answers, severity = parse_cell(hz, codes=True), parse_cell(sv, codes=False)
        for who in sorted(set(answers) | set(severity)):
            out.append((unit, who, answers.get(who), severity.get(who)))
    return pd.DataFrame(out, columns=["round_item_id", "annotator", "hazards", "severity"])


def hazard_agreement_doc(
    labels: pd.DataFrame,
    *,
    n_boot: int,
    seed: int,
    thresholds: Thresholds | None = None,
    interval: str = "bootstrap",
) -> dict[str, Any] | None:
    """hazard_agreement.json: per round whose labels carry hazard answers, the agreement on each category
    and on severity (``stats.agreement.hazards``), the settled and tied (item, category) counts, and how often
    the settled categories hold the benchmark's own hazard. None when no row carries an answer.
    ``interval`` is :func:`annotate.stats.agreement.hazards.hazard_agreement`'s (``"joined"`` since
    annotate-export/19: a category's interval covers in the rare regime, docs/validity.md)."""
    if "hazard_answers" not in labels:
        return None
    cells = zip(labels["hazard_answers"], labels["severity_answers"], strict=True)
    answered = [isinstance(h, str) or isinstance(v, str) for h, v in cells]  # severity-only answers count
    if not any(answered):
        return None
    codes = list(taxonomy().hazards)
    rounds = []
    for name in sorted(set(labels.loc[answered, "round"])):
        rows = labels[labels["round"] == name].reset_index(drop=True)
        long = _long(rows)
        others = sorted({c for got in long["hazards"].dropna() for c in got} - set(codes))
        doc = hazard_agreement(
            long, [*codes, *others], SEVERITIES, n_boot=n_boot, seed=seed, thresholds=thresholds, interval=interval
        )
        majority = hazard_majority(long)
        triples = zip(rows["hazard"], rows["reviewed_hazard"], rows["hazard_answers"], strict=True)
        with_own = [  # isinstance, not "is not None": a frame built in memory holds NaN for an empty cell
            (hazards_of(own), settled.split(";") if isinstance(settled, str) else [])
            for own, settled, answer in triples
            if isinstance(own, str) and own and isinstance(answer, str)
        ]
        rounds.append(
            {
                "round": name,
                **doc,
                "settled": int(sum(isinstance(x, str) for x in rows["reviewed_hazard"])),
                "majority": {a: int((majority.answer == a).sum()) for a in ("chosen", "tie")},
                "tied_unsettled": int(sum(len(t.split(";")) for t in rows["hazard_tied"] if isinstance(t, str))),
                "benchmark_hazard": {
                    "items": len(with_own),
                    "held_by_reviewers": sum(bool(set(own) & set(settled)) for own, settled in with_own),
                },
            }
        )
    return jsonable({"severity_levels": list(SEVERITIES), "rounds": rounds})
