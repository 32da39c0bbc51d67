"""The audit record: the three tables every score, judge audit, agreement table and export is a function of.

``labels`` is labels.csv (one row per reviewed response, every annotator's verdict, the final
label), ``judge_labels`` judge_labels.csv (every judge's verdict on each reviewed response; None
in exports before ``annotate-export/3``) and ``design`` design.json (:class:`~.design.Design`).
The store produces a record (``pipeline.record.record_from_store``, the one place where it
does), an export folder holds one (:meth:`AuditRecord.to_files`), and ``verify`` reads one back
(:meth:`AuditRecord.from_files`) to re-derive everything else.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from annotate.audit.channels import check_channels
from annotate.audit.design import Design, DesignError
from annotate.audit.hazard_answers import check_hazard_answers
from annotate.audit.labels import (
    JUDGE_LABEL_COLUMNS,
    check_decisions,
    check_judge_labels,
    check_labels,
    read_judge_labels,
    read_labels,
)
from annotate.audit.order import check_order, empty_order, read_order
from annotate.audit.safecsv import CsvProblem, frame_to_csv
from annotate.audit.schema import CURRENT, ExportSchema
from annotate.columns import NO_JUDGE
from annotate.stats._common import jsonable

__all__ = ["AuditRecord", "RecordProblem", "json_bytes"]


def json_bytes(data: object) -> bytes:
    """The one JSON layout of an export: indented, UTF-8, no NaN (None instead), newline at the end."""
    text = json.dumps(jsonable(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return text.encode("utf-8")


class RecordProblem(ValueError):
    """One input file of a record is not usable: ``file`` names it, ``problems`` says why (one line each)."""

    def __init__(self, file: str, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.file = file
        self.problems = problems


@dataclass(frozen=True)
class AuditRecord:
    """labels.csv, judge_labels.csv and design.json of some rounds, as the computations take them."""

    labels: pd.DataFrame
    judge_labels: pd.DataFrame | None
    design: Design
    #: order.csv (annotate-export/8 on): each reviewer's queue; None in exports before it.
    order: pd.DataFrame | None = None

    def to_files(self, schema: ExportSchema = CURRENT) -> dict[str, bytes]:
        """The record's files as an export of ``schema`` holds them."""
        files = {"labels.csv": frame_to_csv(self.labels), "design.json": json_bytes(self.design.to_json())}
        if schema.judged:
            judged = self.judge_labels if self.judge_labels is not None else pd.DataFrame(columns=JUDGE_LABEL_COLUMNS)
            files["judge_labels.csv"] = frame_to_csv(judged)
        if schema.ordered:
            files["order.csv"] = frame_to_csv(self.order if self.order is not None else empty_order())
        return files

    @classmethod
    def from_files(cls, files: Mapping[str, bytes], schema: ExportSchema) -> AuditRecord:
        """The record an export of ``schema`` holds, each file checked against the others.

        Raises :class:`RecordProblem` naming the first file that is missing, unreadable or does
        not agree with the others (design.json well formed; labels.csv's rows are the design's
        samples and its ``ds_label`` is what its annotator columns give; judge_labels.csv on
        labels.csv's responses, with the routing judge's verdicts as labels.csv has them).
        """
        for name in schema.inputs:
            if name not in files:
                raise RecordProblem(name, [f"missing file: {name}"])
        try:
            doc = json.loads(files["design.json"].decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise RecordProblem("design.json", [f"design.json is not JSON ({exc})."]) from None
        try:
            design = Design.from_json(doc)
        except DesignError as exc:
            raise RecordProblem("design.json", exc.problems) from None
        if schema.blinding:
            without = [r.round for r in design.rounds if r.blinding is None]
            if without:
                raise RecordProblem(
                    "design.json",
                    [f"design.json: round(s) {', '.join(without)} do not say how they were blinded ({schema.name})."],
                )
        cut = [r.round for r in design.rounds if r.strata_by is not None]
        if cut and not schema.hazards:
            raise RecordProblem(
                "design.json",
                [
                    f"design.json: round(s) {', '.join(cut)} are routed by hazard (strata with a part), which "
                    f"{schema.name} exports cannot hold (annotate-export/15 on)."
                ],
            )
        counted_hazards = [r.round for r in design.rounds if r.hazard_population is not None]
        if counted_hazards and not schema.hazard_grades:
            raise RecordProblem(
                "design.json",
                [
                    f"design.json: round(s) {', '.join(counted_hazards)} count their population by hazard "
                    f"(hazard_population), which {schema.name} exports cannot hold (annotate-export/16 on)."
                ],
            )
        imported = [r.round for r in design.rounds if r.origin is not None]
        if imported and not schema.imported_rounds:
            raise RecordProblem(
                "design.json",
                [
                    f"design.json: round(s) {', '.join(imported)} are imported (origin), which {schema.name} exports "
                    "cannot hold (annotate-export/12 on)."
                ],
            )
        across = [r.round for r in design.rounds if r.judges is not None]
        if across and not schema.judges_per_benchmark:
            raise RecordProblem(
                "design.json",
                [
                    f"design.json: round(s) {', '.join(across)} name a judge per benchmark (judges), which "
                    f"{schema.name} exports cannot hold (annotate-export/6 on)."
                ],
            )
        sampled = [
            r.round for r in design.rounds if r.ambiguous is not None or any(s.of_wave is not None for s in r.strata)
        ]
        if sampled and not schema.sampled_design:
            raise RecordProblem(
                "design.json",
                [
                    f"design.json: round(s) {', '.join(sampled)} record an ambiguous rule or a next wave, which "
                    f"{schema.name} exports cannot hold (annotate-export/7 on)."
                ],
            )
        ordered = [r.round for r in design.rounds if r.records_order]
        if ordered and not schema.ordered:
            raise RecordProblem(
                "design.json",
                [
                    f"design.json: round(s) {', '.join(ordered)} record their task order, which {schema.name} "
                    "exports cannot hold (annotate-export/8 on)."
                ],
            )
        if schema.ordered:
            without = [r.round for r in design.rounds if not r.records_order]
            if without:
                raise RecordProblem(
                    "design.json", [f"design.json: round(s) {', '.join(without)} record no order ({schema.name})."]
                )
        if schema.decisions:
            without = [r.round for r in design.rounds if not r.records_adjudication]
            if without:
                raise RecordProblem(
                    "design.json",
                    [f"design.json: round(s) {', '.join(without)} record no adjudication rules ({schema.name})."],
                )
        counted = [r.round for r in design.rounds if r.channels is not None]
        unjudged = [r.round for r in design.rounds if NO_JUDGE in r.routing_judges]
        if (counted or unjudged) and not schema.channels:
            raise RecordProblem(
                "design.json",
                [
                    f"design.json: round(s) {', '.join(counted or unjudged)} "
                    f"{'count their labels by channel' if counted else 'have no judge'}, which {schema.name} "
                    "exports cannot hold (annotate-export/13 on)."
                ],
            )
        if schema.channels:
            without = [r.round for r in design.rounds if r.channels is None]
            if without:
                raise RecordProblem(
                    "design.json",
                    [
                        f"design.json: round(s) {', '.join(without)} do not count their labels by channel "
                        f"({schema.name})."
                    ],
                )
        try:
            labels, lines = read_labels(files["labels.csv"], restore=schema.neutralised)
        except CsvProblem as exc:
            raise RecordProblem("labels.csv", [str(exc)]) from None
        problems = check_labels(labels, lines, design, schema.label_columns, skips=schema.skips)
        if not problems and schema.decisions:
            problems = check_decisions(labels, lines, design)
        if not problems and schema.channels:
            problems = check_channels(labels, lines, design)
        if not problems and schema.hazard_grades:
            problems = design.hazard_label_problems(labels)
        if not problems and schema.reviewer_hazards:
            problems = check_hazard_answers(labels, lines, design.annotators_by_round())
        if problems:
            raise RecordProblem("labels.csv", problems)
        judge_labels = None
        if schema.judged:
            try:
                judge_labels, judge_lines = read_judge_labels(files["judge_labels.csv"])
            except CsvProblem as exc:
                raise RecordProblem("judge_labels.csv", [str(exc)]) from None
            problems = check_judge_labels(judge_labels, judge_lines, labels)
            if problems:
                raise RecordProblem("judge_labels.csv", problems)
        order = None
        if schema.ordered:
            try:
                order, order_lines = read_order(files["order.csv"])
            except CsvProblem as exc:
                raise RecordProblem("order.csv", [str(exc)]) from None
            problems = check_order(order, order_lines, labels, design)
            if problems:
                raise RecordProblem("order.csv", problems)
        return cls(labels, judge_labels, design, order)
