"""What an ingest says about one file: its counts, labels, notes and the verdicts the rubric could not read.

:class:`IngestOutcome` is filled as the file is read (``annotate.ingest.run``) and is what `annotate
ingest` prints and ``--json`` gives; :class:`UnparsedVerdicts` counts one judge's raw verdicts the
rubric read as unparsed, and :func:`unparsed_hint` turns them into what to show: the top values,
the presets that would map them and the rubric lines that would.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotate.ingest.records import Record
from annotate.ingest.rubric import FormatRubric, Rubric, rubric_lines

__all__ = ["IngestOutcome", "UnparsedVerdicts", "unparsed_hint"]


@dataclass
class IngestOutcome:
    path: Path
    format: str
    sha256: str
    rows_read: int = 0
    added: int = 0
    duplicates: int = 0
    replaced: int = 0
    rejected: int = 0
    set_aside: int = 0
    images: int = 0  # rows with an image (copied into the workspace's media/)
    facets_filled: int = 0  # stored responses that took the hazard, persona or locale this file gives
    hazards: Counter[str] = field(default_factory=Counter)  # accepted rows per stored hazard code
    labels: Counter[str] = field(default_factory=Counter)  # of the rows read and accepted
    reasons: Counter[str] = field(default_factory=Counter)
    ambiguous_reasons: Counter[str] = field(default_factory=Counter)
    # Per judge: the raw verdicts that became unparsed (bounded), the presets in force, and what
    # would map the unparsed ones (``unparsed_hints``: filled once the file is read).
    unparsed: dict[str, UnparsedVerdicts] = field(default_factory=dict)
    presets: dict[str, list[str]] = field(default_factory=dict)
    unparsed_hints: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the reader says about the file (ReadContext.notes)
    # Per (benchmark, judge): its kind (JUDGE_KINDS) and who said it (FormatRubric.judge_kind)
    kinds: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    rubric_source: str | None = None
    rejects_path: Path | None = None
    set_aside_path: Path | None = None
    judge_option: str | None = None  # ingest --judge: the judge's name came from the command line
    pending_files: dict[Path, list[dict[str, Any]]] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "format": self.format,
            "sha256": self.sha256,
            "rows_read": self.rows_read,
            "added": self.added,
            "duplicates": self.duplicates,
            "replaced": self.replaced,
            "rejected": self.rejected,
            "set_aside": self.set_aside,
            "images": self.images,
            "hazards": dict(sorted(self.hazards.items())),
            "facets_filled": self.facets_filled,
            "labels": dict(self.labels),
            "label_reasons": dict(self.reasons),
            "rubric": self.rubric_source,
            "presets": {judge: list(names) for judge, names in sorted(self.presets.items())},
            "unparsed_verdicts": self.unparsed_hints,
            "notes": list(self.notes),
            "judge_kinds": [
                {"benchmark": b, "judge": j, "kind": kind, "source": source}
                for (b, j), (kind, source) in sorted(self.kinds.items())
            ],
            "rejects_file": str(self.rejects_path) if self.rejects_path else None,
            "set_aside_file": str(self.set_aside_path) if self.set_aside_path else None,
        }

    def count(self, rec: Record, label: str, reason: str, presets: tuple[str, ...]) -> None:
        """Count an accepted record's label and its reason; note its judge's presets in force (the
        first time) and its verdict when the rubric read it as unparsed."""
        self.labels[label] += 1
        self.reasons[reason] += 1
        if label == "ambiguous":
            self.ambiguous_reasons[reason] += 1
        if presets and rec.judge not in self.presets:
            self.presets[rec.judge] = list(presets)
        if reason == "unparsed" and not (rec.meta and rec.meta.get("parse_failure")):
            # (a grade the scorer itself says it could not parse is no verdict to map: no hint)
            seen = self.unparsed.get(rec.judge)
            if seen is None:
                seen = self.unparsed[rec.judge] = UnparsedVerdicts(rec.benchmark)
            seen.add(rec.verdict)


#: Distinct unparsed verdicts kept per judge (free-text judges write a new one per row), and the
#: longest kept whole: a longer one is shown cut and never offered as a rubric line.
MAX_UNPARSED_KINDS = 1000
MAX_UNPARSED_CHARS = 200
#: The unparsed verdicts shown per judge, most frequent first.
TOP_UNPARSED = 5


@dataclass
class UnparsedVerdicts:
    """The raw verdicts of one judge that the rubric read as unparsed, counted."""

    benchmark: str
    counts: Counter[str] = field(default_factory=Counter)
    other: int = 0  # beyond MAX_UNPARSED_KINDS distinct values
    long: int = 0  # longer than MAX_UNPARSED_CHARS: free text, not a verdict to map

    def add(self, verdict: str | None) -> None:
        text = verdict if verdict is not None else ""
        if len(text) > MAX_UNPARSED_CHARS:
            self.long += 1
        elif text in self.counts or len(self.counts) < MAX_UNPARSED_KINDS:
            self.counts[text] += 1
        else:
            self.other += 1


def unparsed_hint(
    fmt_rubric: FormatRubric,
    defaults: dict[str, Any],
    judge: str,
    seen: UnparsedVerdicts,
    in_force: list[str] | None = None,
) -> dict[str, Any]:
    """What to show for one judge's unparsed verdicts: the top values, the presets that map them
    (not in force) and the rubric lines that would map them (with a preset's targets where one maps them).

    ``in_force``: the presets that were in force for the judge (default: those of ``fmt_rubric``).
    """
    top = seen.counts.most_common(TOP_UNPARSED)
    if in_force is None:
        in_force = list(fmt_rubric.spec(judge, seen.benchmark).presets)
    in_force = [p for p in in_force if p != "garak-refusal"]
    # With a preset in force, unparsed is its reading (e.g. a judge's parse failure): the lines
    # leave the choice to the user. Otherwise a preset that maps this scorer fills them in.
    suggested = [] if in_force else fmt_rubric.suggestions(judge, seen.benchmark)
    known: dict[str, Any] = {}
    for preset in suggested[:1]:
        spec = Rubric.preset(preset.name).for_format(fmt_rubric.format, defaults).spec(judge, seen.benchmark)
        wanted = {t.strip().lower() for t, _ in top}
        known = {k: v for k, v in spec.verdicts.items() if k in wanted and v != ("ambiguous", "unparsed")}
    return {
        "judge": judge,
        "format": fmt_rubric.format,
        "presets_in_force": in_force,
        "verdicts": [{"verdict": v, "n": n} for v, n in top],
        "distinct": len(seen.counts) + (1 if seen.other else 0),
        "total": sum(seen.counts.values()) + seen.other + seen.long,
        "free_text": seen.long,
        "presets_suggested": [p.name for p in suggested],
        "rubric_lines": rubric_lines(fmt_rubric.format, judge, [(v, n) for v, n in top if v.strip()], known),
    }
