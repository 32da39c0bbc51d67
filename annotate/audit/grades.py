"""A certification scheme's grades from the scores (``annotate grade``, and an export's ``grades.csv``).

:class:`Grading` is what the grade depends on beyond the scores: the scheme (recorded whole, so an
export's grades re-derive without any scheme file), the reference models, and the judge-only treatment
the scheme-as-run-today grade reads. :func:`grade_frame` turns a :class:`ScoreOutput` into one row per
model (:mod:`annotate.stats.grades`), the corrected grade, its odds under the scores' posterior, the
judge-only grade and, where items are unresolved, the grades the two bounds give.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.columns import ALL, DEFAULT_JUDGE_ONLY, JUDGE_ONLY_TREATMENTS, REFERENCE_TREATMENT
from annotate.stats.grades import GRADE_COLUMNS, Scheme, grade_points, grade_table
from annotate.stats.scoring.domains import EVERY_MODEL, NO_DOMAIN

if TYPE_CHECKING:
    from annotate.stats.scoring.tables import ScoreOutput

__all__ = ["DEFAULT_JUDGE_ONLY", "Grading", "domain_grade_frame", "grade_columns", "grade_frame"]

_BOUNDS = (("corrected_unresolved_safe", "grade_unresolved_safe"),
           ("corrected_unresolved_harmful", "grade_unresolved_harmful"))  # fmt: skip
_MAX_REFERENCES = 100


@dataclass(frozen=True)
class Grading:
    """What a grade reads besides the scores: the scheme, the reference models, the judge-only treatment."""

    scheme: Scheme
    references: tuple[str, ...]
    judge_only: str = DEFAULT_JUDGE_ONLY

    def __post_init__(self) -> None:
        if not self.references or len(self.references) > _MAX_REFERENCES:
            raise ValueError(f"grading needs 1 to {_MAX_REFERENCES} reference models")
        if self.judge_only not in JUDGE_ONLY_TREATMENTS:
            raise ValueError(f"the judge-only treatment must be one of {', '.join(JUDGE_ONLY_TREATMENTS)}")

    def to_manifest(self) -> dict[str, Any]:
        return {"scheme": self.scheme.to_dict(), "references": list(self.references), "judge_only": self.judge_only}

    @classmethod
    def from_manifest(cls, raw: Any, where: str = "manifest.json: settings.grading") -> Grading:
        """The grading a manifest records; ``ValueError`` names what is unusable."""
        if not isinstance(raw, dict):
            raise ValueError(f"{where} must be an object.")
        refs = raw.get("references")
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            raise ValueError(f"{where}.references must be a list of model names.")
        given = raw.get("scheme")
        scheme = Scheme.from_dict(given if isinstance(given, dict) else {}, f"{where}.scheme")
        try:
            return cls(scheme, tuple(refs), str(raw.get("judge_only", DEFAULT_JUDGE_ONLY)))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}.") from None


def grade_frame(
    scored: ScoreOutput, grading: Grading, *, confidence: float = 0.95, hazard: str | None = None
) -> pd.DataFrame:
    """One row per model of the overall scores: :func:`annotate.stats.grades.grade_table`'s columns, then
    ``grade_unresolved_safe`` / ``grade_unresolved_harmful`` (the grades at the two bounds where the
    model has unresolved items; empty otherwise) and ``note`` (why a model has no corrected rate, hence no
    grade: its score row's flag; empty for a graded model).

    Raises ``ValueError`` when a reference is not a scored model or has no corrected rate.
    """
    overall = scored.scores[scored.scores.benchmark == ALL]
    corrected = overall[overall.treatment == REFERENCE_TREATMENT].set_index("model")
    judge = overall[overall.treatment == grading.judge_only].set_index("model")
    models = list(scored.draw_models)
    draws = scored.overall_draws or {}
    unknown = [r for r in grading.references if r not in models]
    if unknown:
        raise ValueError(
            f"reference model(s) {', '.join(unknown)} not among the scored models: {', '.join(models) or 'none'}"
        )
    if REFERENCE_TREATMENT not in draws:
        raise ValueError("no posterior draws of the corrected rates (draws must be above 0)")
    u = corrected.estimate.reindex(models).to_numpy(dtype=np.float64)
    lost = [r for r in grading.references if not np.isfinite(u[models.index(r)])]
    if lost:
        why = "; ".join(f"{r}: {corrected.flag.get(r, 'not estimable')}" for r in lost)
        raise ValueError(f"reference model(s) without a corrected rate, so no model can be graded against them: {why}")
    table = grade_table(
        models,
        u,
        draws[REFERENCE_TREATMENT],
        grading.references,
        grading.scheme,
        u_ci=corrected[["ci_low", "ci_high"]].reindex(models).to_numpy(dtype=np.float64),
        judge_only=judge.estimate.reindex(models).to_numpy(dtype=np.float64),
        confidence=confidence,
        hazard=hazard,
    )
    # Unresolved items: the corrected point and draws take them as like the resolved ones; the grades
    # with every one of them safe, and every one harmful, beside it.
    # Only the points are graded there: the bounds' own draws are not read.
    unresolved = corrected.estimate_kind.reindex(models).eq("mar").to_numpy()
    ref_rows = [models.index(r) for r in grading.references]
    for bound, column in _BOUNDS:
        rows = overall[overall.treatment == bound].set_index("model")
        if not unresolved.any() or not len(rows):
            table[column] = None
            continue
        _, _, at_bound = grade_points(
            rows.estimate.reindex(models).to_numpy(dtype=np.float64), ref_rows, grading.scheme
        )
        table[column] = [g if open_ else None for g, open_ in zip(at_bound, unresolved, strict=True)]
    flags = corrected.flag.reindex(models).fillna("not estimable")
    table["note"] = ["" if np.isfinite(x) else str(f) for x, f in zip(u, flags, strict=True)]
    return table


def grade_columns(scheme: Scheme) -> list[str]:
    """The columns of :func:`grade_frame` (grades.csv's since annotate-export/16; before, without ``note``)."""
    return [*GRADE_COLUMNS, *(f"p_{g}" for g in scheme.grades), *(c for _, c in _BOUNDS), "note"]


def domain_grade_frame(
    outputs: dict[str, ScoreOutput | str], grading: Grading, *, confidence: float = 0.95
) -> pd.DataFrame:
    """Each hazard's grade rows, the references' rate taken within the same hazard (:func:`grade_frame` on
    each domain's scores, ``audit.scores.domain_scores_of``), in hazard order.

    A hazard the scores refuse, or whose references have no corrected rate, is one row of its own: model
    ``(every model)``, no figures, the reason as ``note`` (never left out). Items without a hazard
    (``(none)``) are not a hazard and get no rows.
    """
    columns = grade_columns(grading.scheme)
    frames = []
    for hazard, out in outputs.items():
        if hazard == NO_DOMAIN:
            continue
        reason = out if isinstance(out, str) else None
        if not isinstance(out, str):
            try:
                frames.append(grade_frame(out, grading, confidence=confidence, hazard=hazard))
                continue
            except ValueError as exc:
                reason = str(exc)
        row = {"model": EVERY_MODEL, "hazard": hazard, "reference": False, "straddles": False, "note": reason}
        frames.append(pd.DataFrame([row]).reindex(columns=columns))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
