"""How far to trust each judge: the judge audit of an audit record (pure).

A human label belongs to the response, not to a judge's row. The round's items point at the
routing judge's rows; every other judge's row with the same (benchmark, model, prompt_id, epoch)
*and the same prompt and response text* is the same response, so its verdict can be audited
against the reviewed label with no new review (judge_labels.csv, ``same_response`` = yes). A row
with the same key but another text is another response: it is counted and named, never audited.
The routing judge's strata stay the strata of every judge's audit (the weights come from the
design). :func:`audit_tables` turns the record into the inputs of
:func:`annotate.stats.judges.judge_audit`; ``annotate judges`` builds the record from the store,
``annotate export`` / ``verify`` write and re-derive ``judges.csv`` and ``judge_pairs.csv`` from
the files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate.columns import ALL, HUMAN_LABELS
from annotate.stats._common import jsonable
from annotate.stats.judge_figures import CERTIFIER_FIGURES, certifier_figures
from annotate.stats.judge_models import DEFAULT_FDR, FIGURES, MIN_REVIEWED, TESTED
from annotate.stats.judges import GROUPINGS, METRICS, JudgeAudit, judge_audit

if TYPE_CHECKING:
    from annotate.audit.record import AuditRecord

__all__ = ["BY", "JUDGE_ESTIMAND", "audit_tables", "estimand_statement", "judges_from_record", "judges_payload"]

#: The judge audit's estimand for each estimand of the scores (an export's ``settings.estimand``):
#: the fixed prompts are these responses; the general estimand is prompts like these.
JUDGE_ESTIMAND = {"fixed": "responses", "general": "prompts"}

#: ``--by``: the groupings a judge's figures can be broken down by (the pooled row is always there).
BY = GROUPINGS
#: The columns that identify a reviewed response in labels.csv and judge_labels.csv.
RESPONSE_KEY = ("round", "model", "benchmark", "prompt_id", "epoch")


def _unit_keys(frame: pd.DataFrame) -> pd.Series:
    out = frame["round"].astype(str)
    for c in RESPONSE_KEY[1:]:
        out = out + "\x1f" + frame[c].astype(str)
    return out


def audit_tables(record: AuditRecord) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[str]]:
    """The inputs of :func:`annotate.stats.judges.judge_audit` from an audit record (pure).

    Parameters
    ----------
    record : AuditRecord
        ``labels`` (labels.csv: one row per reviewed response, ``round, model, benchmark,
        prompt_id, epoch, judge, judge_label, stratum, final_label``, ...), ``judge_labels``
        (judge_labels.csv: one row per reviewed response and judge with a row for its key,
        ``round, model, benchmark, prompt_id, epoch, judge, judge_verdict, judge_label,
        same_response``; None: the routing judge's labels in ``labels`` alone) and ``design``.

    Returns
    -------
    units, verdicts, strata : DataFrame
        As :func:`~annotate.stats.judges.judge_audit` takes them; only rows with
        ``same_response`` = ``yes`` become verdicts.
    notes : list of str
        The verdicts left out because they are on another text under the same key, per judge.
    """
    # A next wave's items weigh as their root stratum's (methods 4.9).
    labels, judge_labels = record.design.pooled(record.labels), record.judge_labels
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
    strata = record.design.strata_frame()[["round", "model", "benchmark", "stratum", "population", "sample"]]
    strata = strata.astype({"round": str, "model": str, "benchmark": str, "stratum": str})
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


def judges_from_record(
    record: AuditRecord,
    *,
    by: Sequence[str] = ("benchmark",),
    draws: int = 4000,
    seed: int = 0,
    confidence: float = 0.95,
    fdr: float = DEFAULT_FDR,
    model_draws: int | None = None,
    estimand: str = "responses",
) -> JudgeAudit:
    """The judge audit of an audit record (pure; ``export``, ``verify`` and ``annotate judges`` call it).

    Raises ``ValueError`` for tables that do not fit together (a verdict on a response that was
    not reviewed, a response outside the design).
    """
    units, verdicts, strata, notes = audit_tables(record)
    audit = judge_audit(
        units,
        verdicts,
        strata,
        by=by,
        draws=draws,
        seed=seed,
        confidence=confidence,
        fdr=fdr,
        model_draws=model_draws,
        estimand=estimand,
    )
    return JudgeAudit(
        metrics=audit.metrics,
        pairs=audit.pairs,
        judges=audit.judges,
        notes=[*notes, *audit.notes],
        settings=audit.settings,
        models=audit.models,
    )


def estimand_statement(audit: JudgeAudit) -> dict[str, Any]:
    """What the judge figures describe, in words: ``describes`` and ``census`` (every response reviewed).

    Under the responses estimand a census leaves nothing to draw: its intervals have no width and
    its ranks are certain for these responses, not for the judges; the statement says so.
    """
    estimand = str(audit.settings.get("estimand", "responses"))
    m = audit.metrics
    pooled = m[(m.benchmark == ALL) & (m.model == ALL)]
    population = float(pooled["population"].max()) if len(pooled) else 0.0
    census = bool(audit.settings.get("census", False))
    if estimand == "prompts":
        describes = "the judges on prompts like these (the reviewed responses a sample of them)"
    elif census:
        describes = (
            f"these {population:.0f} responses (every one reviewed: a census, so the intervals have no width and the "
            "ranks are certain for these responses, not for the judges on other prompts)"
        )
    else:
        describes = f"these {population:.0f} responses (the unreviewed ones drawn from the reviewed)"
    return {"describes": describes, "census": census}


def judges_payload(audit: JudgeAudit, *, rounds: list[str], by: Sequence[str]) -> dict[str, Any]:
    """What ``annotate judges --json`` prints: the records with every interval as ``<name>_ci: [low, high]``.

    NaN becomes null; a null figure's reason is in the record's ``note``.
    """
    tested = _model_tests(audit)
    records = []
    for row in certifier_figures(audit.metrics).to_dict("records"):
        rec: dict[str, Any] = {k: row[k] for k in ("judge", "benchmark", "model", "n_reviewed", "n_resolved")}
        rec["population"] = row["population"]
        for m in METRICS:
            rec[m] = row[m]
            rec[f"{m}_ci"] = [row[f"{m}_ci_low"], row[f"{m}_ci_high"]]
        for name in CERTIFIER_FIGURES:  # the same figures in certifiers' words (MLCommons' evaluator checks)
            rec[name] = row[name]
            rec[f"{name}_ci"] = [row[f"{name}_ci_low"], row[f"{name}_ci_high"]]
        rec["rank"] = row["rank"]
        rec["rank_ci"] = [row["rank_low"], row["rank_high"]]
        rec["p_best"] = row["p_best"]
        rec["note"] = row["note"]
        test = tested.get((str(row["judge"]), str(row["model"]))) if row["benchmark"] == "ALL" else None
        if test is not None:  # a model's row: does the judge err differently for it than for the others?
            rec.update(test)
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
            **(
                {
                    "model_test": {
                        "test": audit.settings.get("model_test"),
                        "correction": "Benjamini-Hochberg over every judge, model and figure tested",
                        "fdr": audit.settings.get("fdr"),
                        "figures": list(FIGURES),
                        "tested_figures": list(TESTED),
                        "min_reviewed": MIN_REVIEWED,
                        # rows of a tested figure without a test (PPV is never tested: not counted)
                        "not_testable": int(
                            (audit.models["figure"].isin(TESTED) & ~audit.models["testable"].astype(bool)).sum()
                        )
                        if "testable" in audit.models
                        else 0,
                        "flagged": int(audit.models["flagged"].astype(bool).sum()),
                        "tested": int(audit.models["p_value"].notna().sum()),
                    }
                }
                if "model_test" in audit.settings
                else {}
            ),
        }
    )


def _model_tests(audit: JudgeAudit) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (judge, model): the model test's figures, and the row's ``p_value``, ``q_value`` and ``flagged``
    (the smallest q over the figures, and whether any figure is flagged)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    if audit.models.empty:
        return out
    for (judge, model), rows in audit.models.groupby(["judge", "model"], sort=False):
        figures = {
            str(r["figure"]): {
                "estimate": r["estimate"],
                "rest": r["rest"],
                "difference": r["difference"],
                "difference_ci": [r["difference_ci_low"], r["difference_ci_high"]],
                "p_value": r["p_value"],
                "q_value": r["q_value"],
                "flagged": bool(r["flagged"]),
                "note": r["note"],
            }
            for r in rows.to_dict("records")
        }
        q = rows["q_value"].astype(float)
        best = rows.loc[q.idxmin()] if q.notna().any() else None
        out[(str(judge), str(model))] = {
            "p_value": None if best is None else float(best["p_value"]),
            "q_value": None if best is None else float(best["q_value"]),
            "flagged": bool(rows["flagged"].astype(bool).any()),
            "flagged_figures": [str(f) for f in rows.loc[rows["flagged"].astype(bool), "figure"]],
            "model_test": figures,
        }
    return out
