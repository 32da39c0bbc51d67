"""`annotate judges`: how far to trust each judge, several judges side by side.

A human label belongs to the response, not to a judge's row. The round's items point at the
routing judge's rows; every other judge's row with the same (benchmark, model, prompt_id, epoch)
*and the same prompt and response text* is the same response, so its verdict can be audited
against the reviewed label with no new review (``Store.judge_verdicts``). A row with the same
key but another text is another response: it is counted and named, never audited. The routing
judge's strata stay the strata of every judge's audit (the weights come from the design).

The computation is pure and shared with exports: :func:`audit_tables` turns an export's three
input tables (``labels.csv``, ``judge_labels.csv``, ``design.json``) into the inputs of
:func:`annotate.stats.judges.judge_audit`; ``annotate judges`` builds the same tables from the
store (``pipeline.audit``), and ``annotate export`` / ``verify`` write and re-derive
``judges.csv`` and ``judge_pairs.csv`` from the files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate.columns import HUMAN_LABELS
from annotate.errors import InputError
from annotate.stats._common import jsonable
from annotate.stats.judges import GROUPINGS, METRICS, JudgeAudit, judge_audit

if TYPE_CHECKING:
    from annotate.pipeline.session import Session

__all__ = ["BY", "audit_tables", "judges", "judges_from_tables", "judges_payload"]

#: ``--by``: the groupings a judge's figures can be broken down by (the pooled row is always there).
BY = GROUPINGS
#: The columns that identify a reviewed response in labels.csv and judge_labels.csv.
RESPONSE_KEY = ("round", "model", "benchmark", "prompt_id", "epoch")


def _unit_keys(frame: pd.DataFrame) -> pd.Series:
    out = frame["round"].astype(str)
    for c in RESPONSE_KEY[1:]:
        out = out + "\x1f" + frame[c].astype(str)
    return out


def audit_tables(
    labels: pd.DataFrame, judge_labels: pd.DataFrame | None, doc: dict[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[str]]:
    """The inputs of :func:`annotate.stats.judges.judge_audit` from an export's input tables (pure).

    Parameters
    ----------
    labels : DataFrame
        ``labels.csv``: one row per reviewed response (``round, model, benchmark, prompt_id,
        epoch, judge, judge_label, stratum, final_label``, ...).
    judge_labels : DataFrame or None
        ``judge_labels.csv``: one row per reviewed response and judge with a row for its key
        (``round, model, benchmark, prompt_id, epoch, judge, judge_verdict, judge_label,
        same_response``); None: the routing judge's labels in ``labels`` alone.
    doc : dict
        ``design.json``.

    Returns
    -------
    units, verdicts, strata : DataFrame
        As :func:`~annotate.stats.judges.judge_audit` takes them; only rows with
        ``same_response`` = ``yes`` become verdicts.
    notes : list of str
        The verdicts left out because they are on another text under the same key, per judge.
    """
    keys = _unit_keys(labels)
    final = labels["final_label"].astype(object)
    units = pd.DataFrame(
        {
            "unit": keys.to_numpy(),
            "round": labels["round"].astype(str).to_numpy(),
            "model": labels["model"].astype(str).to_numpy(),
            "benchmark": labels["benchmark"].astype(str).to_numpy(),
            "stratum": labels["stratum"].astype(str).to_numpy(),
            "human": final.where(final.isin(HUMAN_LABELS[:2]), None).to_numpy(),
        }
    )
    strata = pd.DataFrame(
        [
            {
                "round": str(r["round"]),
                "model": str(s["model"]),
                "benchmark": str(s["benchmark"]),
                "stratum": str(s["stratum"]),
                "population": int(s["population"]),
                "sample": int(s["sample"]),
            }
            for r in doc["rounds"]
            for s in r["strata"]
        ],
        columns=["round", "model", "benchmark", "stratum", "population", "sample"],
    )
    notes: list[str] = []
    if judge_labels is None:
        verdicts = pd.DataFrame(
            {"unit": keys.to_numpy(), "judge": labels["judge"].astype(str), "judge_label": labels["judge_label"]}
        )
        return units, verdicts, strata, notes
    jl = judge_labels.assign(unit=_unit_keys(judge_labels).to_numpy())
    same = jl["same_response"].astype(str) == "yes"
    for judge, n in jl.loc[~same].groupby("judge").size().items():
        notes.append(
            f"judge {judge}: {n} reviewed response(s) have a row under the same key with another prompt or response "
            "text; that is another response, so it is not audited against the reviewed label."
        )
    verdicts = jl.loc[same, ["unit", "judge", "judge_label"]].astype({"judge": str}).reset_index(drop=True)
    return units, verdicts, strata, notes


def judges_from_tables(
    labels: pd.DataFrame,
    judge_labels: pd.DataFrame | None,
    doc: dict[str, Any],
    *,
    by: Sequence[str] = ("benchmark",),
    draws: int = 4000,
    seed: int = 0,
    confidence: float = 0.95,
) -> JudgeAudit:
    """The judge audit of an export's input tables (pure; ``export``, ``verify`` and ``annotate judges`` call it).

    Raises ``ValueError`` for tables that do not fit together (a verdict on a response that was
    not reviewed, a response outside the design).
    """
    units, verdicts, strata, notes = audit_tables(labels, judge_labels, doc)
    audit = judge_audit(units, verdicts, strata, by=by, draws=draws, seed=seed, confidence=confidence)
    return JudgeAudit(
        metrics=audit.metrics,
        pairs=audit.pairs,
        judges=audit.judges,
        notes=[*notes, *audit.notes],
        settings=audit.settings,
    )


def judges_payload(audit: JudgeAudit, *, rounds: list[str], by: Sequence[str]) -> dict[str, Any]:
    """What ``annotate judges --json`` prints: the records with every interval as ``<name>_ci: [low, high]``.

    NaN becomes null; a null figure's reason is in the record's ``note``.
    """
    records = []
    for row in audit.metrics.to_dict("records"):
        rec: dict[str, Any] = {k: row[k] for k in ("judge", "benchmark", "model", "n_reviewed", "n_resolved")}
        rec["population"] = row["population"]
        for m in METRICS:
            rec[m] = row[m]
            rec[f"{m}_ci"] = [row[f"{m}_ci_low"], row[f"{m}_ci_high"]]
        rec["rank"] = row["rank"]
        rec["rank_ci"] = [row["rank_low"], row["rank_high"]]
        rec["p_best"] = row["p_best"]
        rec["note"] = row["note"]
        records.append(rec)
    return jsonable(
        {
            "rounds": rounds,
            "by": list(by),
            "settings": audit.settings,
            "weights": "each reviewed response with a final human label weighs N_h / r_h of its routing stratum "
            "(population over resolved reviewed responses), the corrected scores' design weights",
            "judges": records,
            "pairs": audit.pairs.to_dict("records"),
            "notes": audit.notes,
        }
    )


def judges(
    s: Session,
    *,
    round_names: tuple[str, ...] = (),
    by: str = "benchmark",
    draws: int = 4000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """`annotate judges`: every judge's design-weighted figures on the rounds, ranked and compared.

    Raises ``InputError`` for an unknown grouping or round and for settings out of range.
    """
    from annotate.pipeline.audit import design, judge_labels_frame, labels_frame
    from annotate.pipeline.score import rounds_to_score

    if by not in BY:
        raise InputError(f"--by must be one of {', '.join(BY)}; it is {by!r}.")
    if draws < 0:
        raise InputError(f"--draws must be 0 or more; it is {draws}.")
    if not 0.5 <= confidence < 1:
        raise InputError(f"the confidence must be in [0.5, 1); it is {confidence}.")
    rounds = rounds_to_score(s.store, round_names)
    labels = labels_frame(s.store, rounds)
    doc = design(s.store, rounds)
    judge_labels = judge_labels_frame(s.store, rounds)
    try:
        audit = judges_from_tables(labels, judge_labels, doc, by=(by,), draws=draws, seed=seed, confidence=confidence)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return judges_payload(audit, rounds=rounds, by=(by,))
