"""The export schemas: one row per version, and the rules every version keeps.

An export folder holds the audit record (its *inputs*: ``labels.csv``, ``judge_labels.csv``,
``design.json``), the files derived from it (scores, rankings, the judge audit, agreement, the
report) and ``manifest.json``, which names the schema. A schema says exactly which files an export
of that version holds, which are re-derived by ``verify`` and how. Changing what a derived file
holds, or how it is rendered, is a new schema: one row appended here, and the exports written by
every earlier row keep verifying (tests/data/exports/ holds one frozen export of each;
tests/test_frozen_exports.py verifies them with today's code, so a change that silently alters
an old export's files fails the tests). When a new row changes a *method*, an earlier row's
``rederived`` shrinks to the files this code can still reproduce, and ``not_rederived`` says why
the others are checked for their hash only: verify never claims to have re-derived what it
cannot.

Rows:

* ``annotate-export/1``: its files are checked for their hashes and its design for its form;
  nothing is re-derived: its scores came from the estimators before issue #13 (fiducial stratum
  draws, partial identification of unresolved items), which this version no longer has, and its
  agreement.json and report.html drew on the database. CSVs not spreadsheet-neutralised.
* ``annotate-export/2``: every derived file re-derived (report.html byte for byte); CSV cells
  that would open as formulas neutralised; P(tie).
* ``annotate-export/3``: judge_labels.csv (an input) and the judge audit (judges.csv,
  judge_pairs.csv, the report's judges section).
* ``annotate-export/4``: every round of design.json says how its reviewers were kept apart
  (``blinding``: ``technical`` or ``instructions only``), and the report shows it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CURRENT",
    "MAX_LISTED",
    "OPTIONAL_FILES",
    "SCHEMAS",
    "ExportSchema",
    "listed",
    "schema_named",
]

#: How many problems of one kind are listed before the rest are only counted.
MAX_LISTED = 20
#: A file an export of any schema may hold (written when a diagnosis exists), checked for its
#: hash and internal consistency only.
OPTIONAL_FILES = ("diagnostics.json",)

_SCORES = ("scores.csv", "ranking.csv", "flips.csv", "p_safer.csv")
_JUDGES = ("judges.csv", "judge_pairs.csv")


@dataclass(frozen=True)
class ExportSchema:
    """What an export of one schema version holds and how ``verify`` checks it."""

    name: str
    #: The audit record's files (checked, never re-derived), in the order verify reports them.
    inputs: tuple[str, ...]
    #: Every derived file, in the order verify reports them.
    derived: tuple[str, ...]
    #: The derived files re-derived from the inputs (the others are checked for their hash only).
    rederived: tuple[str, ...]
    #: CSV cells that would open as formulas are written with a leading apostrophe.
    neutralised: bool
    #: Every round of design.json has ``blinding``.
    blinding: bool
    #: One line on what the version added.
    summary: str
    #: Why the derived files outside ``rederived`` are checked for their hash only.
    not_rederived: str = ""
    #: The exact columns of CSV files this version cannot re-derive: a later export relabeled as
    #: this schema has other columns and is refused (no downgrade to fewer checks).
    headers: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        """Every file of such an export but the manifest (and its signature), optional ones aside."""
        return (*self.inputs, *self.derived)

    @property
    def judged(self) -> bool:
        """The export holds the judges' verdicts (judge_labels.csv) and their audit."""
        return "judge_labels.csv" in self.inputs

    @property
    def full(self) -> bool:
        """Every derived file is re-derived."""
        return set(self.rederived) == set(self.derived)


SCHEMAS: dict[str, ExportSchema] = {
    s.name: s
    for s in (
        ExportSchema(
            "annotate-export/1",
            inputs=("labels.csv", "design.json"),
            derived=(*_SCORES, "scores.json", "agreement.json", "report.html"),
            rederived=(),
            neutralised=False,
            blinding=False,
            summary="scores, rankings, agreement and a report from labels.csv and design.json",
            not_rederived="annotate-export/1 files came from the estimators before issue #13 (fiducial stratum "
            "draws, partial identification of unresolved items), which this version no longer has, and its "
            "agreement.json and report.html drew on the database",
            headers=(
                (
                    "scores.csv",
                    (
                        *("model", "benchmark", "treatment", "estimate", "ci_low", "ci_high", "rank", "rank_low"),
                        *("rank_high", "n_responses", "n_reviewed", "flag", "se", "interval", "note"),
                    ),
                ),
                (
                    "ranking.csv",
                    (
                        *("benchmark", "treatment", "tau_b", "rho", "flips", "credible_flips", "noise_flips"),
                        *("max_rank_shift", "n_models", "excluded"),
                    ),
                ),
                (
                    "labels.csv",
                    (
                        *("round", "model", "benchmark", "prompt_id", "epoch", "judge", "category", "judge_verdict"),
                        *("judge_label", "stratum", "wave", "inclusion_prob", "final_label", "final_status"),
                        *("final_method", "adjudicator", "reason", "ds_label"),
                    ),
                ),
            ),
        ),
        ExportSchema(
            "annotate-export/2",
            inputs=("labels.csv", "design.json"),
            derived=(*_SCORES, "p_tie.csv", "scores.json", "agreement.json", "report.html"),
            rederived=(*_SCORES, "p_tie.csv", "scores.json", "agreement.json", "report.html"),
            neutralised=True,
            blinding=False,
            summary="every derived file re-derived, the report byte for byte; spreadsheet-safe CSVs; P(tie)",
        ),
        ExportSchema(
            "annotate-export/3",
            inputs=("labels.csv", "judge_labels.csv", "design.json"),
            derived=(*_SCORES, "p_tie.csv", *_JUDGES, "scores.json", "agreement.json", "report.html"),
            rederived=(*_SCORES, "p_tie.csv", *_JUDGES, "scores.json", "agreement.json", "report.html"),
            neutralised=True,
            blinding=False,
            summary="the judges' verdicts (judge_labels.csv) and the judge audit (judges.csv, judge_pairs.csv)",
        ),
        ExportSchema(
            "annotate-export/4",
            inputs=("labels.csv", "judge_labels.csv", "design.json"),
            derived=(*_SCORES, "p_tie.csv", *_JUDGES, "scores.json", "agreement.json", "report.html"),
            rederived=(*_SCORES, "p_tie.csv", *_JUDGES, "scores.json", "agreement.json", "report.html"),
            neutralised=True,
            blinding=True,
            summary="each round's blinding (technical or instructions only) in design.json and the report",
        ),
    )
}
#: The schema ``annotate export`` writes.
CURRENT = SCHEMAS["annotate-export/4"]


def schema_named(name: object) -> ExportSchema | None:
    """The schema of that name, or None for a name no version of annotate wrote."""
    return SCHEMAS.get(name) if isinstance(name, str) else None


def listed(problems: list[str], found: list[str], what: str) -> None:
    """Append the first ``MAX_LISTED`` of ``found`` to ``problems``, then a count of the rest."""
    problems.extend(found[:MAX_LISTED])
    if len(found) > MAX_LISTED:
        problems.append(f"... and {len(found) - MAX_LISTED} more {what}")
