"""The report's reading of ``data``: validated records and the views the sections share.

Only the documented keys are read (see :mod:`annotate.report`); anything that is not a list
where a list is expected, or not a dict where a record is expected, reads as empty.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from annotate.columns import ALL, REFERENCE_TREATMENT
from annotate.report._fmt import number

__all__ = ["ReportView", "as_dict", "as_list", "flagged", "not_estimable", "records", "unique"]

Record = dict[str, Any]


def as_list(value: Any) -> list[Any]:
    """``value`` if it is a list or tuple (as a list), else an empty list."""
    return list(value) if isinstance(value, (list, tuple)) else []


def as_dict(value: Any) -> Record:
    """``value`` if it is a mapping (as a dict), else an empty dict."""
    return dict(value) if isinstance(value, Mapping) else {}


def records(value: Any) -> list[Record]:
    """A list of records; items that are not mappings read as empty records."""
    return [as_dict(item) for item in as_list(value)]


def unique(items: Iterable[Any]) -> list[Any]:
    """The items without ``None`` and repeats, in first-seen order."""
    seen: dict[Any, None] = {}
    for item in items:
        if item is not None and item not in seen:
            seen[item] = None
    return list(seen)


def not_estimable(flag: Any) -> bool:
    """Whether a score's flag says it is not estimable."""
    return str(flag or "").startswith("not estimable")


def flagged(flag: Any) -> bool:
    """Whether a score carries a flag other than ``ok``."""
    return bool(flag) and str(flag) != "ok"


class ReportView:
    """Derived, validated views of ``data`` shared by the sections and the charts."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data
        self.scores = records(data.get("scores"))
        self.cells = records(data.get("cells"))
        self.agreement = records(data.get("agreement"))
        self.flips = records(data.get("flips"))
        self.ranking = records(data.get("ranking"))
        treatments = [str(t) for t in as_list(data.get("treatments"))]
        if not treatments:
            treatments = unique(str(r.get("treatment")) for r in self.scores if r.get("treatment") is not None)
        self.treatments: list[str] = treatments
        self.reference = str(data.get("reference_treatment") or REFERENCE_TREATMENT)
        # Without the reference among the treatments, the last column stands in for it.
        self.ref_index = treatments.index(self.reference) if self.reference in treatments else len(treatments) - 1

        self.overall: dict[tuple[str, str], Record] = {}  # (model, treatment) -> the ALL row
        self.by_cell: dict[tuple[str, str, str], Record] = {}  # (model, benchmark, treatment) -> row
        for row in self.scores:
            model, benchmark, treatment = str(row.get("model")), str(row.get("benchmark")), str(row.get("treatment"))
            if benchmark == ALL:
                self.overall[(model, treatment)] = row
            else:
                self.by_cell[(model, benchmark, treatment)] = row

        every_model = unique([str(r.get("model")) for r in self.scores] + [str(c.get("model")) for c in self.cells])
        ranked = [m for m in every_model if self.reference_rank(m) is not None]
        ranked.sort(key=lambda m: (self.reference_rank(m), m))
        #: Models with a rank under the reference, safest first.
        self.ranked: list[str] = ranked
        #: Models without one (not estimable under the reference), by name.
        self.unranked: list[str] = sorted(m for m in every_model if m not in ranked)
        self.models = ranked + self.unranked
        self.benchmarks: list[str] = unique(
            [str(c.get("benchmark")) for c in self.cells]
            + [str(r.get("benchmark")) for r in self.scores if r.get("benchmark") != ALL]
        )

        #: (model, treatment) -> [(the other model of a flipped pair, whether the flip is credible)]
        self.flips_of: dict[tuple[str, str], list[tuple[str, bool]]] = defaultdict(list)
        for flip in self.flips:
            treatment, safer, other = str(flip.get("treatment")), str(flip.get("a")), str(flip.get("b"))
            credible = bool(flip.get("credible"))
            self.flips_of[(safer, treatment)].append((other, credible))
            self.flips_of[(other, treatment)].append((safer, credible))

    def reference_rank(self, model: str) -> float | None:
        """The model's overall rank under the reference treatment."""
        return number(self.overall.get((model, self.reference), {}).get("rank"))

    def style(self, model: str, treatment: str) -> str:
        """``credible`` / ``noise`` / ``none`` for the model's flips under the treatment."""
        flips = self.flips_of.get((model, treatment), [])
        if not flips:
            return "none"
        return "credible" if any(credible for _, credible in flips) else "noise"

    def segment_owner(self, i: int) -> str:
        """The treatment the segment between columns i and i + 1 belongs to."""
        return self.treatments[i] if i < self.ref_index else self.treatments[i + 1]

    def headline_alpha(self) -> Record | None:
        """The pooled binary agreement row, if there is one."""
        pooled = [a for a in self.agreement if a.get("pooled") and a.get("labels") == "binary"]
        return pooled[0] if pooled else None

    def agreement_rows(self) -> list[Record]:
        """The agreement rows, pooled groups first, binary before 3-way within a group."""
        label_order = {"binary": 0, "3-way": 1}
        groups = unique(str(a.get("group")) for a in self.agreement)
        pooled = [g for g in groups if any(a.get("pooled") and str(a.get("group")) == g for a in self.agreement)]
        position = {g: i for i, g in enumerate(pooled + [g for g in groups if g not in pooled])}
        return sorted(
            self.agreement, key=lambda a: (position[str(a.get("group"))], label_order.get(str(a.get("labels")), 2))
        )
