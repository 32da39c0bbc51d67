"""`annotate grade`: a certification scheme's grade per model, corrected by human review (issue #44).

Reads the rounds' scores (``score_from_store``: the corrected overall rows and the posterior draws their
intervals and ranking read) and grades them with :mod:`annotate.stats.grades`; the judge-only grade
applies the same scheme to a judge-only treatment, as the scheme is run today.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.columns import ALL, JUDGE_ONLY_TREATMENTS, REFERENCE_TREATMENT
from annotate.errors import InputError
from annotate.pipeline._planning import score_from_store
from annotate.stats.grades import Scheme, grade_table, load_scheme, p_grade

if TYPE_CHECKING:
    from annotate.db import Store

__all__ = ["DEFAULT_JUDGE_ONLY", "Graded", "grade_from_store", "grades_payload"]

#: The judge-only treatment the scheme's own grade reads by default: the judge's ambiguous verdicts left
#: out, as an evaluator's invalid answers are.
DEFAULT_JUDGE_ONLY = "ambiguous_excluded"


@dataclass(frozen=True)
class Graded:
    """The grade table of :func:`grade_from_store` and what it was computed on."""

    table: pd.DataFrame  # stats.grades.GRADE_COLUMNS + p_<grade>
    scheme: Scheme
    references: tuple[str, ...]
    judge_only: str
    benchmarks: str  # what "overall" averages, as `score` says it
    left_out: list[dict[str, str]]  # models without a corrected overall rate, and why


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
) -> Graded:
    """Each model's grade under ``scheme`` against ``references``, corrected and judge-only.

    Raises ``InputError`` for an unknown scheme or treatment, a reference that is not a scored model,
    or a reference without a corrected rate (its grade would be everyone's denominator).
    """
    try:
        chosen = load_scheme(scheme)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if judge_only not in JUDGE_ONLY_TREATMENTS:
        raise InputError(f"--judge-only must be one of {', '.join(JUDGE_ONLY_TREATMENTS)}, not {judge_only!r}")
    if not references:
        raise InputError("name the reference models: --reference MODEL[,MODEL...]")
    out, _ = score_from_store(store, round_names, draws=draws, seed=seed, min_reviewed=min_reviewed)
    overall = out.scores[out.scores.benchmark == ALL]
    corrected = overall[overall.treatment == REFERENCE_TREATMENT].set_index("model")
    judge = overall[overall.treatment == judge_only].set_index("model")
    models = list(out.draw_models)
    unknown = [r for r in references if r not in models]
    if unknown:
        raise InputError(
            f"reference model(s) {', '.join(unknown)} not among the scored models: {', '.join(models) or 'none'}"
        )
    if out.overall_draws is None or REFERENCE_TREATMENT not in out.overall_draws:
        raise InputError("no posterior draws of the corrected rates: run with --draws above 0")
    u = corrected.estimate.reindex(models).to_numpy(dtype=np.float64)
    lost = [r for r in references if not np.isfinite(u[models.index(r)])]
    if lost:
        why = "; ".join(f"{r}: {corrected.flag.get(r, 'not estimable')}" for r in lost)
        raise InputError(f"reference model(s) without a corrected rate, so no model can be graded against them: {why}")
    table = grade_table(
        models,
        u,
        out.overall_draws[REFERENCE_TREATMENT],
        references,
        chosen,
        u_ci=corrected[["ci_low", "ci_high"]].reindex(models).to_numpy(dtype=np.float64),
        judge_only=judge.estimate.reindex(models).to_numpy(dtype=np.float64),
        confidence=confidence,
    )
    # Unresolved items (escalations the expert has not settled): the corrected point and draws assume they
    # are like the resolved ones; the grade with every one of them safe, and with every one harmful, beside it.
    unresolved = corrected.estimate_kind.reindex(models).eq("mar").to_numpy()
    for bound, column in (("corrected_unresolved_safe", "grade_unresolved_safe"),
                          ("corrected_unresolved_harmful", "grade_unresolved_harmful")):  # fmt: skip
        rows = overall[overall.treatment == bound].set_index("model")
        if not unresolved.any() or not len(rows) or bound not in out.overall_draws:
            table[column] = None
            continue
        at_bound = grade_table(
            models,
            rows.estimate.reindex(models).to_numpy(dtype=np.float64),
            out.overall_draws[bound],
            references,
            chosen,
            confidence=confidence,
        )
        table[column] = [g if u_open else None for g, u_open in zip(at_bound.grade, unresolved, strict=True)]
    left_out = [
        {"model": m, "reason": str(corrected.flag.get(m, "no corrected rate"))}
        for m, value in zip(models, u, strict=True)
        if not np.isfinite(value)
    ]
    over = out.benchmark_set.describe() if out.benchmark_set is not None else "the benchmarks"
    return Graded(table, chosen, tuple(references), judge_only, over, left_out)


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
