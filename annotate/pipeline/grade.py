"""`annotate grade`: a certification scheme's grade per model, corrected by human review (issue #44).

Reads the rounds' scores (``score_from_store``: the corrected overall rows and the posterior draws their
intervals and ranking read) and grades them (:func:`annotate.audit.grades.grade_frame`, as an export's
``grades.csv``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.audit.grades import DEFAULT_JUDGE_ONLY, Grading, domain_grade_frame, grade_frame
from annotate.columns import ALL, REFERENCE_TREATMENT
from annotate.errors import InputError
from annotate.pipeline._domains import domain_outputs_from_store
from annotate.pipeline._planning import score_from_store
from annotate.stats.grades import Scheme, load_scheme, p_grade
from annotate.stats.scoring.domains import EVERY_MODEL, NO_DOMAIN

if TYPE_CHECKING:
    from annotate.db import Store

__all__ = ["Graded", "grade_from_store", "grades_payload", "grading_of"]


@dataclass(frozen=True)
class Graded:
    """The grade table of :func:`grade_from_store` and what it was computed on."""

    table: pd.DataFrame  # audit.grades.grade_frame's columns
    scheme: Scheme
    references: tuple[str, ...]
    judge_only: str
    benchmarks: str  # what "overall" averages, as `score` says it
    left_out: list[dict[str, str]]  # models without a corrected overall rate, and why


def grading_of(scheme: str, references: list[str], judge_only: str = DEFAULT_JUDGE_ONLY) -> Grading:
    """The grading a command's options ask for; ``InputError`` says what is wrong."""
    if not references:
        raise InputError("name the reference models: MODEL[,MODEL...]")
    try:
        return Grading(load_scheme(scheme), tuple(references), judge_only)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def grade_from_store(
    store: Store,
    round_names: tuple[str, ...],
    *,
    references: list[str],
    scheme: str,
    judge_only: str = DEFAULT_JUDGE_ONLY,
    draws: int = 4000,
    seed: int = 0,
    min_reviewed: int = 10,
    confidence: float = 0.95,
    by_hazard: bool = False,
) -> Graded:
    """Each model's grade under ``scheme`` against ``references``, corrected and judge-only.

    Raises ``InputError`` for an unknown scheme or treatment, a reference that is not a scored model,
    or a reference without a corrected rate (its rate would be everyone's denominator).
    """
    grading = grading_of(scheme, references, judge_only)
    out, _ = score_from_store(store, round_names, draws=draws, seed=seed, min_reviewed=min_reviewed)
    try:
        table = grade_frame(out, grading, confidence=confidence)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    overall = out.scores[(out.scores.benchmark == ALL) & (out.scores.treatment == REFERENCE_TREATMENT)]
    flags = overall.set_index("model").flag
    left_out = [
        {"model": str(m), "reason": str(flags.get(m, "no corrected rate"))}
        for m, u in zip(table.model, table.u, strict=True)
        if not np.isfinite(u)
    ]
    if by_hazard:
        hazard_rows, hazard_left = _hazard_grades(store, round_names, grading, draws, seed, min_reviewed, confidence)
        table = pd.concat([table, hazard_rows], ignore_index=True) if len(hazard_rows) else table
        left_out += hazard_left
    over = out.benchmark_set.describe() if out.benchmark_set is not None else "the benchmarks"
    return Graded(table, grading.scheme, grading.references, grading.judge_only, over, left_out)


def _hazard_grades(
    store: Store,
    round_names: tuple[str, ...],
    grading: Grading,
    draws: int,
    seed: int,
    min_reviewed: int,
    confidence: float,
) -> tuple[pd.DataFrame, list[dict[str, str]]]:
    """Each hazard's grade rows (the references' rate within the same hazard), and the hazards not graded."""
    outputs = domain_outputs_from_store(store, round_names, "hazard", draws=draws, seed=seed, min_reviewed=min_reviewed)
    if not outputs or set(outputs) == {NO_DOMAIN}:
        raise InputError(
            "grade --by hazard: no reviewed response of the rounds has a hazard (ingest them with hazards)"
        )
    rows = domain_grade_frame(outputs, grading, confidence=confidence)
    refused = rows.model == EVERY_MODEL
    left = [
        {"model": EVERY_MODEL, "hazard": str(h), "reason": str(n)}
        for h, n in zip(rows.hazard[refused], rows.note[refused], strict=True)
    ]
    return rows[~refused].reset_index(drop=True), left


def grades_payload(graded: Graded) -> dict[str, Any]:
    """The JSON of ``annotate grade --json``: one row per model, the scheme and what the grade read."""

    def num(x: Any) -> float | None:
        return None if x is None or (isinstance(x, float) and not np.isfinite(x)) else float(x)

    rows = []
    for row in graded.table.to_dict("records"):
        rows.append(
            {
                "model": row["model"],
                "hazard": row["hazard"],
                "reference": bool(row["reference"]),
                "u": num(row["u"]),
                "u_ci": [num(row["u_ci_low"]), num(row["u_ci_high"])],
                "u_ref": num(row["u_ref"]),
                "u_ref_ci": [num(row["u_ref_ci_low"]), num(row["u_ref_ci_high"])],
                "ratio": num(row["ratio"]),
                "ratio_ci": [num(row["ratio_ci_low"]), num(row["ratio_ci_high"])],
                "grade": row["grade"],
                "p_grade": {g: num(p) for g, p in p_grade(row, graded.scheme).items()},
                "straddles": bool(row["straddles"]),
                "straddled_edges": [e for e in str(row["straddled_edges"]).split("; ") if e],
                "grade_judge_only": row["grade_judge_only"],
                "grade_unresolved_safe": row.get("grade_unresolved_safe"),
                "grade_unresolved_harmful": row.get("grade_unresolved_harmful"),
                "u_judge_only": num(row["u_judge_only"]),
                "ratio_judge_only": num(row["ratio_judge_only"]),
                "note": str(row.get("note") or ""),  # why a row has no grade (empty when graded)
            }
        )
    scheme = graded.scheme
    return {
        "scheme": {
            "name": scheme.name,
            "title": scheme.title,
            "grades": list(scheme.grades),
            "rules": [r.said() for r in scheme.rules],
            "otherwise": scheme.otherwise,
        },
        "references": list(graded.references),
        "reference_rule": "u_ref is the highest corrected unsafe rate among the references, draw by draw",
        "judge_only_treatment": graded.judge_only,
        "overall": f"the macro-average over {graded.benchmarks}, as `annotate score` reports it",
        "rows": rows,
        "left_out": graded.left_out,
    }
