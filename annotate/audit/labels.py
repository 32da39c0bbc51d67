"""labels.csv and judge_labels.csv: the reviewed labels and the judges' verdicts of an audit record.

``labels.csv`` has one row per reviewed (routed) response: its round, cell and stratum, its
inclusion probability, its final label and how it was reached, its gold label, the Dawid-Skene
label (computed: :func:`ds_labels`, a pure function of the annotator columns) and one column per
annotator pseudonym with that reviewer's current verdict. ``judge_labels.csv`` has every judge's
verdict and label on each reviewed response (one row per response and judge, the routing judge
included; ``same_response`` says whether the row's prompt and response text are the reviewed
ones). :func:`votes_long` turns the annotator columns back into the long vote table the
agreement statistics take, so ``export`` and ``verify`` compute from the same table.

:func:`check_labels` and :func:`check_judge_labels` check the two tables against themselves
and the design (one line per problem, with the file and line).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.audit.safecsv import parse_csv
from annotate.audit.schema import listed
from annotate.columns import (
    FINAL_STATUSES,
    HUMAN_LABELS,
    JUDGE_LABELS,
    LABEL_COLUMNS,
    NO_JUDGE,
    PART_SEPARATOR,
    SKIPPED,
    VERDICTS,
)
from annotate.stats.adjudication import decide, propose, rules_from_record, waiting_for
from annotate.stats.aggregation import dawid_skene_labels

if TYPE_CHECKING:
    from annotate.audit.design import Design

__all__ = [
    "JUDGE_LABEL_COLUMNS",
    "LABEL_COLUMNS",
    "check_decisions",
    "check_judge_labels",
    "check_labels",
    "ds_labels",
    "judge_stratum",
    "read_judge_labels",
    "read_labels",
    "votes_long",
]

#: judge_labels.csv of an export (annotate-export/3): one row per reviewed response and judge.
JUDGE_LABEL_COLUMNS = (
    "round",
    "model",
    "benchmark",
    "prompt_id",
    "epoch",
    "judge",
    "judge_verdict",
    "judge_label",
    "same_response",
)


def judge_stratum(stratum: pd.Series) -> pd.Series:
    """The judge label a stratum key stands for (``ambiguous#w2`` -> ``ambiguous``; ``safe|vcr`` -> ``safe``).

    >>> judge_stratum(pd.Series(["ambiguous", "safe#w3", "safe|vcr#w2"])).tolist()
    ['ambiguous', 'safe', 'safe']
    """
    text = stratum.astype(object).where(stratum.notna(), "").astype(str).str.replace(r"#w\d+$", "", regex=True)
    return text.str.partition(PART_SEPARATOR)[0]


def votes_long(labels: pd.DataFrame, annotators: Sequence[str]) -> pd.DataFrame:
    """The verdicts in ``labels``' annotator columns as a long vote table.

    One row per (row of ``labels``, annotator of ``annotators``) with a non-empty verdict:
    ``round_item_id`` (the row's index label: the unit), ``annotator``, ``verdict``, and the
    row's ``model``, ``benchmark``, ``category``, ``gold_label`` and ``stratum`` (the judge label
    of its stratum, waves merged, as the store's round items carry it). Annotators without a
    column have no votes.
    """
    cols = [a for a in annotators if a in labels.columns]
    empty = pd.DataFrame(
        columns=["round_item_id", "model", "benchmark", "category", "gold_label", "stratum", "annotator", "verdict"]
    )
    if not cols or labels.empty:
        return empty
    base = pd.DataFrame(
        {
            "round_item_id": np.asarray(labels.index),
            "model": labels["model"].to_numpy(),
            "benchmark": labels["benchmark"].to_numpy(),
            "category": labels["category"].to_numpy() if "category" in labels else None,
            "gold_label": labels["gold_label"].to_numpy() if "gold_label" in labels else None,
            "stratum": judge_stratum(labels["stratum"]).to_numpy(),
        }
    )
    for a in cols:
        base[a] = labels[a].to_numpy()
    long = base.melt(
        id_vars=["round_item_id", "model", "benchmark", "category", "gold_label", "stratum"],
        value_vars=cols,
        var_name="annotator",
        value_name="verdict",
    )
    # A skip (annotate-export/8) is a reviewer's answer, not a vote.
    keep = long.verdict.isin(VERDICTS)
    return long.loc[keep].reset_index(drop=True)


def ds_labels(labels: pd.DataFrame, annotators_by_round: Mapping[str, Sequence[str]]) -> pd.Series:
    """labels.csv's ``ds_label`` column, from its annotator columns alone (pure).

    Per round, Dawid-Skene over the votes of the round's annotators (two at least); a row without
    any vote, or of a round with fewer than two annotators, gets no label (None).
    """
    # Not pd.Series(None, ..., dtype=object): pandas fills that with NaN, which no file holds (a row
    # without votes would then differ from itself read back: None).
    out = pd.Series([None] * len(labels), index=labels.index, dtype=object)
    for name, annotators in annotators_by_round.items():
        reviewers = list(annotators)
        votes = votes_long(labels.loc[labels["round"] == name], reviewers)
        if len(votes) and len(reviewers) >= 2:
            ds = dawid_skene_labels(votes, reviewers)
            out.loc[ds.index] = ds["ds_label"].to_numpy()
    return out


def read_labels(data: bytes, *, restore: bool = True) -> tuple[pd.DataFrame, list[int]]:
    """labels.csv as the computations take it, and the line each row starts on.

    Every cell is text as written (spreadsheet neutralising undone unless ``restore`` is False,
    for exports older than it); an empty cell is None. Raises :class:`CsvProblem`.
    """
    table = parse_csv(data, "labels.csv", restore_cells=restore)
    frame = table.frame()
    frame = frame.where(frame != "", None)
    return frame, table.lines


def read_judge_labels(data: bytes) -> tuple[pd.DataFrame, list[int]]:
    """judge_labels.csv as the computations take it (text cells, empty as None), and each row's line.

    Raises :class:`CsvProblem`.
    """
    table = parse_csv(data, "judge_labels.csv")
    frame = table.frame()
    frame = frame.where(frame != "", None)
    return frame, table.lines


def check_labels(
    labels: pd.DataFrame,
    lines: list[int],
    design: Design,
    columns: Sequence[str] = LABEL_COLUMNS,
    *,
    skips: bool = False,
) -> list[str]:
    """Problems of labels.csv against itself and design.json (empty when consistent).

    Checks: the documented ``columns`` (the export schema's) and exactly one column per annotator
    of the design; every row in a stratum of its round's design, and each stratum holding n_h
    rows; ``judge`` the round's judge; ``inclusion_prob`` = n_h / N_h; verdicts, final labels and
    statuses from their vocabularies, a final label exactly when the status is ``resolved``; and
    ``ds_label`` equal to the Dawid-Skene labels re-derived from the annotator columns. ``skips``
    (annotate-export/8 on): an annotator column may also say ``skipped``.
    """
    answers = (*VERDICTS, SKIPPED) if skips else VERDICTS
    # What an item's final status can be; "waiting" (a routed vote not in) since annotate-export/8.
    statuses = tuple(st for st in (*FINAL_STATUSES, "awaiting review") if skips or st != "waiting")
    problems: list[str] = []
    missing = [c for c in columns if c not in labels.columns]
    if missing:
        return [f"labels.csv: the column(s) {', '.join(missing)} are missing."]
    annotators_by_round = design.annotators_by_round()
    expected = sorted({a for names in annotators_by_round.values() for a in names})
    have = [c for c in labels.columns if c not in columns]
    if sorted(have) != expected:
        problems.append(
            f"labels.csv: annotator columns {', '.join(have) or '(none)'}; design.json's rounds have "
            f"{', '.join(expected) or '(none)'}."
        )
        return problems

    def line(i: int) -> str:
        return f"labels.csv:{lines[i]}" if i < len(lines) else "labels.csv"

    strata = {(r.round, s.model, s.benchmark, s.stratum): s for r in design.rounds for s in r.strata}
    rounds = {r.round: r for r in design.rounds}
    found: list[str] = []
    counts: dict[tuple[str, str, str, str], int] = {}
    for i, rec in enumerate(labels.to_dict("records")):
        key = (rec["round"], rec["model"], rec["benchmark"], rec["stratum"])
        s = strata.get(key)
        if s is None:
            found.append(f"{line(i)}: {key[1]} x {key[2]}, stratum {key[3]} of round {key[0]} is not in design.json.")
            continue
        counts[key] = counts.get(key, 0) + 1
        routing = rounds[key[0]].judge_for(key[2])
        if rec["judge"] != routing:
            found.append(f"{line(i)}: judge {rec['judge']!r}; round {key[0]} routed {key[2]} for {routing!r}.")
        try:
            prob = float(rec["inclusion_prob"])
        except (TypeError, ValueError):
            prob = math.nan
        want = s.sample / s.population if s.population else math.nan
        if not math.isclose(prob, want, rel_tol=1e-9, abs_tol=1e-12):
            found.append(f"{line(i)}: inclusion_prob {rec['inclusion_prob']!r}; design.json gives n_h/N_h = {want!r}.")
        if rec["final_status"] not in statuses:
            found.append(
                f"{line(i)}: final_status {rec['final_status']!r} is not one of {', '.join(statuses)}"
                + (" (an item waiting for a vote is recorded since annotate-export/8)." if not skips else ".")
            )
        if rec["final_label"] not in (None, *HUMAN_LABELS[:2]):
            found.append(f"{line(i)}: final_label {rec['final_label']!r} is not harmful, safe or empty.")
        elif (rec["final_label"] is not None) != (rec["final_status"] == "resolved"):
            found.append(
                f"{line(i)}: final_status {rec['final_status']!r} with final_label {rec['final_label']!r} "
                "(a resolved item has a final label, any other has none)."
            )
        for a in annotators_by_round.get(key[0], []):
            v = rec[a]
            if v is not None and v not in answers:
                found.append(f"{line(i)}: {a}'s verdict {v!r} is not one of {', '.join(answers)}.")
    listed(problems, found, "rows that do not fit the design")
    short = [
        f"labels.csv: {k[1]} x {k[2]}, stratum {k[3]} of round {k[0]} has {counts.get(k, 0)} rows; "
        f"design.json samples n_h = {s.sample}."
        for k, s in strata.items()
        if counts.get(k, 0) != s.sample
    ]
    listed(problems, short, "strata whose rows do not match their sample")
    if problems:
        return problems
    again = ds_labels(labels, annotators_by_round)
    differ = [
        f"{line(i)}: ds_label {a!r}; the annotator columns give {b!r} (Dawid-Skene re-derived)."
        for i, (a, b) in enumerate(zip(labels["ds_label"], again, strict=True))
        if a != b
    ]
    listed(problems, differ, "ds_label differences")
    return problems


def check_judge_labels(judge_labels: pd.DataFrame, lines: list[int], labels: pd.DataFrame) -> list[str]:
    """Problems of judge_labels.csv against itself and labels.csv (empty when consistent).

    Checks: exactly the documented columns; every row on a reviewed response of labels.csv
    (round, model, benchmark, prompt_id, epoch), a judge named, a judge label from the
    vocabulary, ``same_response`` ``yes`` or ``no``, one row per response and judge; and every
    response of labels.csv with its routing judge's row, ``same_response`` ``yes``, with the
    verdict and label labels.csv gives.
    """
    if list(judge_labels.columns) != list(JUDGE_LABEL_COLUMNS):
        return [
            f"judge_labels.csv: the columns are {', '.join(map(str, judge_labels.columns)) or '(none)'}; an export "
            f"has {', '.join(JUDGE_LABEL_COLUMNS)}."
        ]

    def line(i: int) -> str:
        return f"judge_labels.csv:{lines[i]}" if i < len(lines) else "judge_labels.csv"

    key_cols = ["round", "model", "benchmark", "prompt_id", "epoch"]
    reviewed = {
        tuple(r): (j, v, a)
        for r, j, v, a in zip(
            labels[key_cols].itertuples(index=False, name=None),
            labels["judge"],
            labels["judge_verdict"],
            labels["judge_label"],
            strict=True,
        )
    }
    found: list[str] = []
    seen: dict[tuple[Any, ...], int] = {}
    routed: set[tuple[Any, ...]] = set()
    for i, rec in enumerate(judge_labels.to_dict("records")):
        key = tuple(rec[c] for c in key_cols)
        what = f"{key[1]} x {key[2]}, prompt {key[3]!r}, epoch {key[4]} of round {key[0]}"
        if key not in reviewed:
            found.append(f"{line(i)}: {what} is not a reviewed response of labels.csv.")
            continue
        if not rec["judge"]:
            found.append(f"{line(i)}: the judge is empty.")
            continue
        if rec["judge"] == NO_JUDGE:
            found.append(f"{line(i)}: judge {NO_JUDGE!r} is the mark of responses no judge labelled, not a judge.")
            continue
        if rec["judge_label"] not in JUDGE_LABELS:
            found.append(f"{line(i)}: judge_label {rec['judge_label']!r} is not one of {', '.join(JUDGE_LABELS)}.")
        if rec["same_response"] not in ("yes", "no"):
            found.append(f"{line(i)}: same_response {rec['same_response']!r} is not yes or no.")
        if (key, rec["judge"]) in seen:
            first = line(seen[(key, rec["judge"])])
            found.append(f"{line(i)}: judge {rec['judge']!r} on {what} already has a row ({first}).")
        seen[(key, rec["judge"])] = i
        judge, verdict, label = reviewed[key]
        if rec["judge"] == judge:
            routed.add(key)
            if rec["same_response"] != "yes" or rec["judge_verdict"] != verdict or rec["judge_label"] != label:
                found.append(
                    f"{line(i)}: the routing judge {judge!r} on {what}: verdict {rec['judge_verdict']!r}, label "
                    f"{rec['judge_label']!r}, same_response {rec['same_response']!r}; labels.csv gives {verdict!r}, "
                    f"{label!r} on the reviewed response itself."
                )
    missing = [
        f"judge_labels.csv: no row of the routing judge {reviewed[k][0]!r} on {k[1]} x {k[2]}, prompt {k[3]!r}, "
        f"epoch {k[4]} of round {k[0]} (labels.csv has it)."
        for k in reviewed
        if k not in routed and reviewed[k][0] != NO_JUDGE  # unjudged responses: no judge, no row
    ]
    problems: list[str] = []
    listed(problems, found, "rows of judge_labels.csv that do not fit labels.csv")
    listed(problems, missing, "reviewed responses without their routing judge's row")
    return problems


def check_decisions(labels: pd.DataFrame, lines: list[int], design: Design) -> list[str]:
    """Every final label of labels.csv re-derived from its votes, the expert's answers and the rules.

    Per round, as `annotate adjudicate` decides (``stats.adjudication``): the reviewers' current
    verdicts (the annotator columns), Dawid-Skene over them, the majority and the escalation rules
    of the round's latest adjudication (design.json ``adjudication``), and for an escalated item
    the expert's answer (``expert``, ``expert_verdict``) or the rules' policy. Under rules that
    wait for every vote (``wait_for_votes``), a row with an empty annotator column waits; a row
    whose every column says ``skipped`` is escalated; any other row without a vote awaits
    review. Any other status, label, method or adjudicator than the re-derived one is a problem
    (a final label edited by hand, or votes pulled after the last adjudication).
    """
    found: list[str] = []

    def line(i: int) -> str:
        return f"labels.csv:{lines[i]}" if i < len(lines) else "labels.csv"

    for rnd in design.rounds:
        rows = labels.loc[labels["round"] == rnd.round]
        reviewers = list(rnd.annotators)
        votes = votes_long(rows, reviewers)
        answers = rows.reindex(columns=reviewers)
        waiting = {} if rnd.imported else waiting_for(answers, reviewers)  # an imported file is complete
        no_verdict = [
            int(i)
            for i, any_vote in zip(answers.index, answers.isin(VERDICTS).any(axis=1), strict=True)
            if not any_vote and int(i) not in waiting
        ]
        voted = set(votes.round_item_id) | set(no_verdict)
        for i in rows.index.difference(sorted(voted)):
            if rows.at[i, "final_status"] != "awaiting review" or rows.at[i, "final_label"] is not None:
                found.append(
                    f"{line(i)}: final_status {rows.at[i, 'final_status']!r} with no reviewer's verdict; a response "
                    "without a vote awaits review."
                )
        if not voted:
            continue
        if rnd.adjudication is None:
            decided = rows.loc[rows["final_status"] != "awaiting review"]
            if len(decided):
                found.append(
                    f"labels.csv: round {rnd.round} has {len(decided)} decided item(s) but design.json records no "
                    "adjudication rules to re-derive them from."
                )
            continue
        rules = rules_from_record(rnd.adjudication)
        ds = dawid_skene_labels(votes, reviewers) if len(reviewers) >= 2 and len(votes) else None
        categories = rows["category"] if "category" in rows else None
        proposals = propose(votes, rules, ds=ds, categories=categories, no_verdict=no_verdict)
        sent = rows.loc[rows["expert"].notna() & rows["expert_verdict"].notna()]
        expert = pd.DataFrame(
            {
                "round_item_id": np.asarray(sent.index),
                "annotator": sent["expert"].to_numpy(),
                "verdict": sent["expert_verdict"].to_numpy(),
            }
        )
        settled = bool(rnd.imported and rnd.origin and rnd.origin.get("settled"))
        decisions = decide(proposals, votes, expert, rules, waiting=waiting, settled=settled)
        # The stored record of every decided item as plain tuples (one .loc, not four .at per item).
        kept = ["final_status", "final_label", "final_method", "adjudicator"]
        record = rows.loc[[d.round_item_id for d in decisions], kept]
        for d, stored in zip(decisions, zip(*(record[c].tolist() for c in kept), strict=True), strict=True):
            i = d.round_item_id
            again = (d.status, d.label, d.method, d.adjudicator)
            if stored != again:
                what = f"{rows.at[i, 'model']} x {rows.at[i, 'benchmark']}, prompt {rows.at[i, 'prompt_id']!r}"
                found.append(
                    f"{line(i)} ({what}): final label {stored[1]!r} ({stored[0]}, {stored[2]}, by {stored[3]}); the "
                    f"votes, the expert's answer and the round's rules give {again[1]!r} ({again[0]}, {again[2]}, by "
                    f"{again[3]})."
                )
    problems: list[str] = []
    listed(problems, found, "final labels that do not follow from the votes")
    return problems
