"""The report page: Jinja2 templates fed with one context per section.

Templates live in ``templates/`` of this package (loaded with :class:`jinja2.PackageLoader`,
so the working directory does not matter). The environment escapes every value it prints
(``autoescape``) and fails on any name a template uses but the context lacks
(``StrictUndefined``). The contexts below hold plain text: numbers already formatted by
:mod:`annotate.report._fmt`, names as given. The only markup handed to a template is built
here: the charts (:mod:`annotate.report.charts`), the sections' rendered templates, the style
sheet and the print script.

``report.css`` is the page's style sheet. It is rendered through the same environment because
the print footer repeats the title, the one value in it that comes from ``data``.
"""

from __future__ import annotations

import base64
import hashlib
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

from jinja2 import Environment, PackageLoader, StrictUndefined, Template
from markupsafe import Markup, escape

from annotate.columns import BLINDING_NOTES, CHANNEL_NAMES, NO_JUDGE, TREATMENT_NOTES, TREATMENT_PLAIN
from annotate.hazards import taxonomy
from annotate.report import _fmt
from annotate.report._judges import judges_section
from annotate.report._view import ReportView, as_dict, as_list, flagged, not_estimable, records
from annotate.report.charts import CREDIBLE, RELIABLE, TENTATIVE, agreement_chart, bump_chart, heatmap, p_matrix
from annotate.stats.scoring.domains import EVERY_MODEL

__all__ = ["render_page"]

DEFAULT_TITLE = "Safety evaluation audit report"

# Opens every <details> for printing in browsers without ::details-content, closes them after.
# The Content-Security-Policy allows this script, and nothing else, by its hash.
PRINT_SCRIPT = (
    "(function(){var o=[];window.addEventListener('beforeprint',function(){"
    "document.querySelectorAll('details:not([open])').forEach(function(d){d.open=true;o.push(d);});});"
    "window.addEventListener('afterprint',function(){o.forEach(function(d){d.open=false;});o=[];});})();"
)
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(PRINT_SCRIPT.encode()).digest()).decode()

_VERDICT_CLASS = {"reliable": "ok", "tentative only": "warn", "unreliable": "bad"}


def _wbr(name: Any) -> Markup:
    """Escaped name with line-break opportunities after its underscores."""
    return Markup("_<wbr>").join(escape(part) for part in str(name).split("_"))


_ENV = Environment(
    loader=PackageLoader("annotate.report", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
_ENV.filters["wbr"] = _wbr
_ENV.globals["limits"] = {"tentative": f"{TENTATIVE:.3f}", "reliable": f"{RELIABLE:.3f}", "credible": str(CREDIBLE)}


@cache
def _stylesheet() -> Template:
    """``report.css`` as a template (read once)."""
    source = resources.files("annotate.report").joinpath("report.css").read_text(encoding="utf-8")
    return _ENV.from_string(source)


def _render(template: str, **context: Any) -> Markup:
    # The template escaped every value it printed, so its output is markup.
    return Markup(_ENV.get_template(template).render(**context))


def _text(value: Any) -> str:
    """A value from ``data`` as display text (``None`` as empty)."""
    return "" if value is None else str(value)


def _css_string(text: str) -> str:
    """A CSS string literal that cannot break out of its declaration or the <style> element."""
    return '"' + "".join(ch if ch.isalnum() or ch in " .,:;-_()" else f"\\{ord(ch):06x}" for ch in text) + '"'


class Badge(NamedTuple):
    """A coloured label: its text and its kind (``ok``, ``warn``, ``bad`` or ``muted``)."""

    text: str
    kind: str


def _verdict_badge(verdict: Any) -> Badge:
    text = str(verdict or "undefined")
    return Badge(text, _VERDICT_CLASS.get(text, "muted"))


# --------------------------------------------------------------------------------------------
# Section 1: summary
# --------------------------------------------------------------------------------------------


def _reference_total(view: ReportView, key: str) -> float:
    """The sum of ``key`` over the models' overall rows under the reference."""
    return sum(_fmt.number(view.overall.get((m, view.reference), {}).get(key)) or 0 for m in view.models)


def _answer(view: ReportView) -> dict[str, Any]:
    """The first screen's answer (annotate-export/18 on): per model, best first, the harmful rate after
    review with its interval and rank, the judge-alone rate, and the one sentence that says it."""
    judge_only = str(as_dict(view.data.get("answer_first")).get("judge_only") or "ambiguous_excluded")
    rows: list[dict[str, Any]] = []
    for model in view.models:
        row = view.overall.get((model, view.reference)) or {}
        judge = view.overall.get((model, judge_only)) or {}
        rate, lo, hi = (_fmt.number(row.get(k)) for k in ("estimate", "ci_low", "ci_high"))
        said = _fmt.number(judge.get("estimate"))
        rank, r_lo, r_hi = (_fmt.number(row.get(k)) for k in ("rank", "rank_low", "rank_high"))
        if rate is None:
            sentence = (
                f"{model}: no rate after review ({_text(row.get('flag') or row.get('note') or 'not estimable')})."
            )
        else:
            sentence = f"{model}: {_pct0(rate)} harmful [{_pct0(lo)}, {_pct0(hi)}] after review"
            sentence += f"; the judge alone said {_pct0(said)}." if said is not None else "."
        rows.append(
            {
                "model": _text(model),
                "rate": "—" if rate is None else f"{_fmt.pct(rate)} %",
                "ci": "" if rate is None else f"[{_fmt.pct(lo)}, {_fmt.pct(hi)}]",
                "rank": "—" if rank is None else _fmt.fixed(rank, 1).rstrip("0").rstrip("."),
                "rank_ci": "" if r_lo is None else f"[{r_lo:.0f}, {r_hi:.0f}]",
                "judge": "—" if said is None else f"{_fmt.pct(said)} %",
                "sentence": sentence,
                "order": (rate is None, rank if rank is not None else 0.0, str(model)),
            }
        )
    rows.sort(key=lambda r: r.pop("order"))
    # annotate-export/19 on: no code identifier in the note (the treatment's name is in section 4).
    return {"rows": rows, "judge_only": None if view.data.get("plain_words") is True else judge_only}


def _pct0(x: float | None) -> str:
    """A rate as whole per cent for a sentence (21 %); below 1 % with one decimal (0.4 %)."""
    if x is None:
        return "—"
    return f"{100 * x:.1f} %" if 0 < x < 0.01 else f"{100 * x:.0f} %"


def _alpha3(view: ReportView) -> dict[str, Any] | None:
    """The headline agreement (annotate-export/18 on): the pooled 3-way alpha, on the labels as collected,
    with the binary one (unsure left out) beside it."""
    three = next((a for a in view.agreement if a.get("pooled") and a.get("labels") == "3-way"), None)
    if three is None:
        return None
    binary = view.headline_alpha()
    if view.data.get("plain_words") is True:  # annotate-export/19 on: no placeholder interval, "no interval"
        plain = _plain_alpha(three) or {}
        return {
            **_alpha_kpi(three),
            "ci": plain.get("ci"),
            "verdict": plain.get("verdict"),
            "binary": None if binary is None else _fmt.fixed(binary.get("alpha")),
            "dropped": None if binary is None else _fmt.count(binary.get("n_unsure_dropped")),
        }
    return {
        **_alpha_kpi(three),
        "binary": None if binary is None else _fmt.fixed(binary.get("alpha")),
        "dropped": None if binary is None else _fmt.count(binary.get("n_unsure_dropped")),
    }


def _alpha_kpi(head: Mapping[str, Any] | None) -> dict[str, Any]:
    """The headline alpha's key figure: value, interval and verdict (undefined without a value)."""
    if head is None or _fmt.number(head.get("alpha")) is None:
        return {"value": _fmt.DASH, "ci": None, "verdict": _verdict_badge("undefined")}
    ci = as_list(head.get("alpha_ci")) + [None, None]
    return {
        "value": _fmt.fixed(head.get("alpha")),
        "ci": f"{_fmt.fixed(ci[0])}–{_fmt.fixed(ci[1])}",
        "verdict": _verdict_badge(head.get("verdict")),
    }


def _alpha_verdict(row: Mapping[str, Any], *, plain: bool) -> Badge:
    """An alpha row's verdict badge; with ``plain`` (annotate-export/19 on) "no interval" for a defined
    alpha whose interval is withheld, where the record says "undefined" or "too few units"."""
    ci = as_list(row.get("alpha_ci")) + [None, None]
    withheld = _fmt.number(row.get("alpha")) is not None and None in (_fmt.number(ci[0]), _fmt.number(ci[1]))
    return Badge("no interval", "muted") if plain and withheld else _verdict_badge(row.get("verdict"))


def _plain_alpha(row: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """An alpha for the summary's plain agreement line (annotate-export/19 on): no interval shown when it
    has none, and "no interval" rather than "undefined" beside a defined alpha without one."""
    if row is None:
        return None
    value = _fmt.number(row.get("alpha"))
    ci = as_list(row.get("alpha_ci")) + [None, None]
    known = _fmt.number(ci[0]) is not None and _fmt.number(ci[1]) is not None
    verdict = _alpha_verdict(row, plain=True)
    return {
        "value": _fmt.fixed(value),
        "ci": f"{_fmt.fixed(ci[0])}–{_fmt.fixed(ci[1])}" if known else None,
        "verdict": verdict,
        "n_units": _fmt.count(row.get("n_units")),
        "dropped": _fmt.count(row.get("n_unsure_dropped")),
    }


def _headline(head: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The headline alpha's sentence in the summary's facts, if there is a pooled binary row."""
    if head is None:
        return None
    ci = as_list(head.get("alpha_ci")) + [None, None]
    return {
        "alpha": _fmt.fixed(head.get("alpha")),
        "ci": _fmt.interval(ci[0], ci[1]),
        "n_units": _fmt.count(head.get("n_units")),
        "n_annotators": _fmt.count(head.get("n_annotators")),
        "verdict": _verdict_badge(head.get("verdict")),
    }


def _rank_dependence(view: ReportView) -> list[dict[str, Any]]:
    """Per ranked model: its status and the models it flips with, credibly or within noise."""
    rows = []
    for model in view.ranked:
        credible: dict[str, list[str]] = defaultdict(list)  # other model -> treatments
        noise: dict[str, list[str]] = defaultdict(list)
        for treatment in view.treatments:
            for other, is_credible in view.flips_of.get((model, treatment), []):
                (credible if is_credible else noise)[other].append(treatment)
        if credible:
            status = Badge("credible flips", "bad")
        elif noise:
            status = Badge("flips within noise", "warn")
        else:
            status = Badge("stable", "ok")
        rows.append(
            {
                "model": model,
                "rank": _fmt.rank(view.overall.get((model, view.reference), {}).get("rank")),
                "status": status,
                "credible": list(credible.items()),
                "noise": list(noise.items()),
            }
        )
    return rows


def _treatment_word(name: str) -> str:
    """A treatment in plain words (annotate-export/19 on); an unknown name as it is."""
    return TREATMENT_PLAIN.get(name, name)


def _in_words(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rank-dependence rows with their treatments in plain words."""
    return [
        r | {k: [(other, [_treatment_word(t) for t in ts]) for other, ts in r[k]] for k in ("credible", "noise")}
        for r in rows
    ]


def _cell_flags(view: ReportView) -> list[dict[str, Any]]:
    """Flagged model x benchmark cells, one item per distinct flag; not estimable first."""
    treatments_of: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for (model, bench, treatment), row in view.by_cell.items():
        if flagged(row.get("flag")):
            treatments_of[(model, bench, str(row.get("flag")))].append(treatment)
    items = []
    for (model, bench, flag), treatments in sorted(
        treatments_of.items(), key=lambda item: (not not_estimable(item[0][2]), item[0])
    ):
        if not_estimable(flag):
            kind, label = "bad", "not estimable"
            detail = flag[len("not estimable: ") :]
        else:
            kind, label = "warn", flag.split(":")[0]
            detail = flag
        items.append(
            {
                "badge": Badge(label, kind),
                "model": model,
                "benchmark": bench,
                "detail": None if flag == label else detail,
                "treatments": treatments,
            }
        )
    return items


def _summary(view: ReportView) -> dict[str, Any]:
    rounds = records(view.data.get("rounds"))
    n_judged = sum(_fmt.number(c.get("n_responses")) or 0 for c in view.cells) or _reference_total(view, "n_responses")
    # reviewed responses: the reference treatment's per-cell counts (every stratum reviewed there)
    n_reviewed = sum(
        _fmt.number(row.get("n_reviewed")) or 0
        for (_, _, treatment), row in view.by_cell.items()
        if treatment == view.reference
    ) or _reference_total(view, "n_reviewed")
    head = view.headline_alpha()
    n_credible = sum(1 for f in view.flips if f.get("credible"))
    unresolved = _fmt.number(view.data.get("unresolved"))
    state = view.data.get("state")
    # An interim export of annotate-export/14 on: routed is not reviewed; say how many have a vote so far.
    with_vote = (
        _fmt.count(state.get("with_vote"))
        if isinstance(state, Mapping) and state.get("status") == "interim" and "with_vote" in state
        else None
    )
    answer = _answer(view) if isinstance(view.data.get("answer_first"), Mapping) else None
    return {
        "answer": answer,
        "alpha3": _alpha3(view) if answer is not None else None,
        "plain": view.data.get("plain_words") is True,
        "plain_alpha3": _plain_alpha(
            next((a for a in view.agreement if a.get("pooled") and a.get("labels") == "3-way"), None)
        ),
        "plain_binary": _plain_alpha(view.headline_alpha()),
        "with_vote": with_vote,
        "n_rounds": _fmt.count(len(rounds)),
        "rounds_label": "review rounds" if len(rounds) != 1 else "review round",
        "n_models": _fmt.count(len(view.models)),
        "n_benchmarks": _fmt.count(len(view.benchmarks)),
        "n_judged": _fmt.count(n_judged),
        "n_reviewed": _fmt.count(n_reviewed),
        "alpha": _alpha_kpi(head),
        "n_credible": _fmt.count(n_credible),
        "n_noise": _fmt.count(len(view.flips) - n_credible),
        "rounds": [{key: _text(r.get(key)) for key in ("round", "judge", "seed")} for r in rounds],
        "models": view.models,
        "benchmarks": view.benchmarks,
        "reference": view.reference,
        "reference_note": TREATMENT_NOTES.get(view.reference, "the reference treatment"),
        "headline": _headline(head),
        "dependence": _in_words(_rank_dependence(view))
        if view.data.get("plain_words") is True
        else _rank_dependence(view),
        "unranked": view.unranked,
        "cell_flags": [f | {"treatments": [_treatment_word(t) for t in f["treatments"]]} for f in _cell_flags(view)]
        if view.data.get("plain_words") is True
        else _cell_flags(view),
        "unresolved": unresolved,
        "unresolved_count": _fmt.count(unresolved),
        "prevalence": [
            {"group": _text(a.get("group")), "labels": _text(a.get("labels")), "warning": _text(warning)}
            for a in view.agreement
            if (warning := a.get("prevalence_warning"))
        ],
    }


# --------------------------------------------------------------------------------------------
# Sections 2 and 3: ambiguity heat map, agreement
# --------------------------------------------------------------------------------------------


def _ambiguity(view: ReportView) -> dict[str, Any]:
    if not view.cells:
        return {"chart": None, "rows": []}
    cells = {(str(c.get("model")), str(c.get("benchmark"))): c for c in view.cells}
    rows = []
    for model in view.models:
        for bench in view.benchmarks:
            cell = cells.get((model, bench))
            if not cell:
                continue
            rows.append(
                {
                    "model": model,
                    "benchmark": bench,
                    "n": _fmt.count(cell.get("n_responses")),
                    "harmful": _fmt.pct(cell.get("share_harmful")),
                    "safe": _fmt.pct(cell.get("share_safe")),
                    "ambiguous": _fmt.pct(cell.get("share_ambiguous")),
                }
            )
    return {"chart": heatmap(view), "rows": rows}


def _agreement(view: ReportView) -> dict[str, Any]:
    hazards = _hazard_agreement(view.data.get("hazard_agreement"), plain=view.data.get("plain_words") is True)
    if not view.agreement:
        return {"chart": None, "rows": [], "hazards": hazards}
    ordered = view.agreement_rows()
    rows = []
    for a in ordered:
        ci = as_list(a.get("alpha_ci")) + [None, None]
        warning = a.get("prevalence_warning")
        rows.append(
            {
                "pooled": bool(a.get("pooled")),
                "group": _text(a.get("group")),
                "labels": _text(a.get("labels")),
                "alpha": _fmt.fixed(a.get("alpha")),
                "ci": _fmt.interval(ci[0], ci[1]),
                "ac1": _fmt.fixed(a.get("ac1")),
                "kappa": _fmt.fixed(a.get("fleiss_kappa")),
                "agree": _fmt.pct(a.get("percent_agreement")),
                "n_units": _fmt.count(a.get("n_units")),
                "n_annotators": _fmt.count(a.get("n_annotators")),
                "verdict": _alpha_verdict(a, plain=view.data.get("plain_words") is True),
                "warning": _text(warning) if warning else None,
            }
        )
    chart = agreement_chart(ordered, plain=view.data.get("plain_words") is True)
    return {"chart": chart, "rows": rows, "hazards": hazards}


def _hazard_agreement(doc: Any, plain: bool = False) -> list[dict[str, Any]]:
    """The reviewers' hazard categories (annotate-export/17, rounds routed with --ask-hazards): per round,
    one row per category someone chose and one for severity, with alpha, its interval and verdict ("no
    interval" for a defined alpha without one, from annotate-export/19 on: ``plain``)."""
    out = []
    for rnd in as_list(as_dict(doc).get("rounds")):
        rnd = as_dict(rnd)
        rows = []
        for r in [*(as_dict(x) for x in as_list(rnd.get("hazards"))), as_dict(rnd.get("severity"))]:
            if "hazard" in r and not r.get("chosen"):
                continue
            ci = as_list(r.get("alpha_ci")) + [None, None]
            rows.append(
                {
                    "name": taxonomy().describe(str(r["hazard"])) if "hazard" in r else "severity (ordinal)",
                    "chosen": _fmt.count(r.get("chosen", r.get("n_answers"))),
                    "n_items": _fmt.count(r.get("n_units")),
                    "alpha": _fmt.fixed(r.get("alpha")),
                    "ci": _fmt.interval(ci[0], ci[1]),
                    "verdict": _alpha_verdict(r, plain=plain),
                }
            )
        held = as_dict(rnd.get("benchmark_hazard"))
        kept = _fmt.count(held.get("held_by_reviewers"))
        out.append(
            {
                "round": _text(rnd.get("round")),
                "rows": rows,
                "note": f"{_fmt.count(rnd.get('settled'))} items settled by the reviewers' majority (the expert on a "
                f"tie where the item went to them), {_fmt.count(rnd.get('tied_unsettled'))} tie(s) unsettled; the "
                f"benchmark's own hazard is among the reviewed categories on {kept} "
                f"of {_fmt.count(held.get('items'))} items that have one.",
            }
        )
    return out


# --------------------------------------------------------------------------------------------
# Section 4: scores
# --------------------------------------------------------------------------------------------


class _Footnotes:
    """Numbered notes for flags, shared by the score tables (numbered in order of first use)."""

    def __init__(self) -> None:
        self.number_of: dict[str, int] = {}

    def ref(self, flag: Any) -> int | None:
        """The number of the flag's note (``None`` for no flag or ``ok``)."""
        if not flagged(flag):
            return None
        return self.number_of.setdefault(str(flag), len(self.number_of) + 1)


@dataclass(frozen=True)
class ScoreCell:
    """One treatment's cell of a score table.

    ``kind`` is ``missing`` (no row), ``not estimable`` (``value`` says why in a word) or
    ``estimate`` (``value`` is the rate in per cent, ``ci`` its interval or ``None``).
    ``note`` numbers the footnote that holds ``flag``.
    """

    kind: str
    reference: bool
    value: str = ""
    ci: str | None = None
    note: int | None = None
    flag: str = ""


def _score_cell(row: Mapping[str, Any] | None, notes: _Footnotes, reference: bool) -> ScoreCell:
    """The cell for one score row (``None`` or empty when the table has no such row)."""
    if not row:
        return ScoreCell("missing", reference)
    flag = row.get("flag")
    estimate = _fmt.number(row.get("estimate"))
    if estimate is None:
        reason = "not estimable" if not_estimable(flag) or not flagged(flag) else str(flag).split(":")[0]
        return ScoreCell("not estimable", reference, reason, note=notes.ref(flag), flag=_text(flag))
    lo, hi = _fmt.number(row.get("ci_low")), _fmt.number(row.get("ci_high"))
    ci = f"{_fmt.pct(lo)}–{_fmt.pct(hi)}" if lo is not None and hi is not None else None
    return ScoreCell("estimate", reference, _fmt.pct(estimate), ci, notes.ref(flag), _text(flag))


def _scores(view: ReportView) -> dict[str, Any]:
    if not view.scores:
        return {"empty": True}
    notes = _Footnotes()
    overall_rows = []
    for model in view.models:
        row = view.overall.get((model, view.reference), {})
        shown_rank, lo, hi = (_fmt.rank(row.get(k)) for k in ("rank", "rank_low", "rank_high"))
        overall_rows.append(
            {
                "model": model,
                "rank": shown_rank,
                "rank_interval": f"{lo}–{hi}" if shown_rank != _fmt.DASH and lo != _fmt.DASH else None,
                "n": _fmt.count(row.get("n_responses")),
                "n_reviewed": _fmt.count(row.get("n_reviewed")),
                "cells": [
                    _score_cell(view.overall.get((model, t)), notes, t == view.reference) for t in view.treatments
                ],
            }
        )
    cell_rows = []
    for model in view.models:
        for bench in view.benchmarks:
            if not any((model, bench, t) in view.by_cell for t in view.treatments):
                continue
            # n from the reference's row when there is one (it counts every reviewed stratum)
            first = next(
                (
                    view.by_cell[(model, bench, t)]
                    for t in [view.reference, *view.treatments]
                    if (model, bench, t) in view.by_cell
                ),
                {},
            )
            cell_rows.append(
                {
                    "model": model,
                    "benchmark": bench,
                    "n": _fmt.count(first.get("n_responses")),
                    "n_reviewed": _fmt.count(first.get("n_reviewed")),
                    "cells": [
                        _score_cell(view.by_cell.get((model, bench, t)), notes, t == view.reference)
                        for t in view.treatments
                    ],
                }
            )
    return {
        "empty": False,
        "reference": view.reference,
        "treatments": view.treatments,
        "overall_rows": overall_rows,
        "legend": [(t, TREATMENT_NOTES[t]) for t in view.treatments if t in TREATMENT_NOTES],
        "cell_rows": cell_rows,
        "notes": list(notes.number_of.items()),
    }


# --------------------------------------------------------------------------------------------
# Sections 5 and 6: rank bump chart, P(A safer than B)
# --------------------------------------------------------------------------------------------


def _ranks(view: ReportView) -> dict[str, Any]:
    if not view.ranked or len(view.treatments) < 2:
        return {"chart": None}
    return {
        "chart": bump_chart(view),
        "reference": view.reference,
        "unranked": view.unranked,
        "ranking": [
            {
                "treatment": str(r.get("treatment")),
                "tau_b": _fmt.fixed(r.get("tau_b"), 2),
                "rho": _fmt.fixed(r.get("rho"), 2),
                "flips": _fmt.count(r.get("flips")),
                "credible_flips": _fmt.count(r.get("credible_flips")),
                "max_shift": _fmt.rank(r.get("max_shift")),
            }
            for r in view.ranking
        ],
        "flips": [
            {
                "treatment": str(f.get("treatment")),
                "safer_under_reference": _text(f.get("a")),
                "safer_under_treatment": _text(f.get("b")),
                "badge": Badge("credible", "bad") if f.get("credible") else Badge("within noise", "warn"),
            }
            for f in view.flips
        ],
        "n_flips": _fmt.count(len(view.flips)),
    }


def _p_safer(view: ReportView) -> dict[str, Any]:
    p_safer = as_dict(view.data.get("p_safer"))
    models = [str(m) for m in as_list(p_safer.get("models"))]
    matrix = [as_list(row) for row in as_list(p_safer.get("matrix"))]
    if not models or len(matrix) != len(models):
        return {"chart": None}
    return {"chart": p_matrix(models, matrix)}


# --------------------------------------------------------------------------------------------
# Section 7: design and provenance
# --------------------------------------------------------------------------------------------

_RUBRIC_FIELDS = ("sha256", "labels", "path")  # the rubric keys shown besides name, version, summary


def _rubric(rubric: Any) -> dict[str, Any]:
    """One rubric: a string, or a dict of which only the documented fields are shown."""
    if not isinstance(rubric, Mapping):
        return {"plain": _text(rubric)}
    fields = []
    for key in _RUBRIC_FIELDS:
        value = rubric.get(key)
        if isinstance(value, (list, tuple)):
            fields.append((key, [_text(v) for v in value]))
        elif value is not None:
            fields.append((key, [_text(value)]))
    version = rubric.get("version")
    return {
        "plain": None,
        "name": _text(rubric.get("name") or "rubric"),
        "version": None if version is None else _text(version),
        "summary": _text(rubric.get("summary") or ""),
        "fields": fields,
    }


def _channels(doc: Any) -> list[dict[str, Any]]:
    """A round's channels (annotate-export/13 on) as the design section lists them: one line each."""
    out = []
    for channel, entry in as_dict(doc).items():
        entry = as_dict(entry)
        by = as_dict(entry.get("by"))
        out.append(
            {
                "channel": CHANNEL_NAMES.get(str(channel), _text(channel)),
                "answers": _fmt.count(entry.get("answers")),
                "by": ", ".join(f"{_text(who)} {_fmt.count(n)}" for who, n in by.items()),
                "blinding": _text(entry.get("blinding") or ""),
                "files": [_text(sha)[:16] for sha in as_list(entry.get("sha256"))],
            }
        )
    return out


def _design(view: ReportView) -> dict[str, Any]:
    data = view.data
    design = as_dict(data.get("design"))
    strata = records(design.get("strata"))
    sources = records(data.get("sources"))
    return {
        "rounds": [
            {
                "round": _text(r.get("round")),
                "judge": _text(r.get("judge")),
                "seed": _text(r.get("seed")),
                "clear_per_cell": _fmt.count(r.get("clear_per_cell")),
                "n_annotators": _fmt.count(len(as_list(r.get("annotators")))),
                "annotators": [_text(a) for a in as_list(r.get("annotators"))],
                "strata_from": [_text(j) for j in as_list(r.get("strata_from"))],
                # The round's blinding is its server's: a round whose labels all came otherwise says theirs.
                "blinding": _text(r.get("blinding"))
                if r.get("blinding") and (r.get("channels") is None or "server" in as_dict(r.get("channels")))
                else None,
                "blinding_note": BLINDING_NOTES.get(str(r.get("blinding")), ""),
                "unjudged": r.get("judge") == NO_JUDGE,
                "channels": _channels(r.get("channels")),
            }
            for r in records(data.get("rounds"))
        ],
        "n_strata": _fmt.count(len(strata)),
        "total_population": _fmt.count(sum(_fmt.number(s.get("population")) or 0 for s in strata)),
        "total_sample": _fmt.count(sum(_fmt.number(s.get("sample")) or 0 for s in strata)),
        "strata": [
            {
                **{key: _text(s.get(key)) for key in ("round", "model", "benchmark", "stratum")},
                "population": _fmt.count(s.get("population")),
                "sample": _fmt.count(s.get("sample")),
                "sampled": _fmt.share(s.get("sample"), s.get("population")),
            }
            for s in strata
        ],
        "rubrics": [_rubric(r) for r in as_list(design.get("rubrics"))],
        "created_at": _text(data.get("created_at")),
        "tool_version": _text(data.get("tool_version")),
        "schema_version": _text(data.get("schema_version")),
        "label_config_sha256": _text(design.get("label_config_sha256")),
        "n_sources": _fmt.count(len(sources)),
        "sources": [{key: _text(s.get(key)) for key in ("path", "format", "sha256")} for s in sources],
    }


# --------------------------------------------------------------------------------------------
# Section 8: diagnostics
# --------------------------------------------------------------------------------------------


def _diagnostics(diagnostics: Mapping[str, Any]) -> dict[str, Any]:
    rows = []
    for r in records(diagnostics.get("table")):
        verdict = str(r.get("verdict") or "")
        kind = "bad" if verdict.startswith("raises") else "ok" if verdict.startswith("lowers") else "muted"
        rows.append(
            {
                "correlate": _text(r.get("correlate") or r.get("feature")),
                "feature": _text(r.get("feature")),
                "odds_ratio": _fmt.fixed(r.get("odds_ratio"), 2),
                "ci": f"{_fmt.fixed(r.get('ci_low'), 2)}–{_fmt.fixed(r.get('ci_high'), 2)}",
                "p_holm": _fmt.p_value(r.get("p_holm")),
                "vif": _fmt.fixed(r.get("vif"), 1),
                "verdict": Badge(verdict or _fmt.DASH, kind),
            }
        )
    aucs = [
        ("features alone", diagnostics.get("auc_features")),
        ("model and benchmark alone", diagnostics.get("auc_fixed_effects")),
        ("both", diagnostics.get("auc_combined")),
    ]
    n_responses = diagnostics.get("n_responses")
    return {
        "outcome": _text(diagnostics.get("outcome") or "the judge said ambiguous"),
        "n_responses": _fmt.count(n_responses) if _fmt.number(n_responses) is not None else None,
        "rows": rows,
        "aucs": [(what, _fmt.fixed(auc)) for what, auc in aucs if _fmt.number(auc) is not None],
    }


# --------------------------------------------------------------------------------------------
# Page
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    """A numbered section of the page: its anchor, heading and rendered body."""

    id: str
    heading: str
    body: Markup


#: The sections in page order: anchor, heading, template, context builder.
_SECTIONS: tuple[tuple[str, str, str, Callable[[ReportView], dict[str, Any]]], ...] = (
    ("summary", "Summary", "section_summary.html.j2", _summary),
    ("ambiguity", "Ambiguity rates per model and benchmark", "section_ambiguity.html.j2", _ambiguity),
    ("agreement", "Agreement between reviewers", "section_agreement.html.j2", _agreement),
    ("scores", "Harmful-rate scores per treatment", "section_scores.html.j2", _scores),
    ("ranks", "Rank of each model across treatments", "section_ranks.html.j2", _ranks),
    ("p-safer", "P(A safer than B) under the reference", "section_p_safer.html.j2", _p_safer),
    ("design", "Design and provenance", "section_design.html.j2", _design),
)


def _grades(grades: Mapping[str, Any]) -> dict[str, Any]:
    """The Grades section: one row per model (the corrected grade with its probability beside the judge's),
    then, where the export grades by hazard (annotate-export/16), one small panel per hazard."""
    rows: list[dict[str, Any]] = []
    by_hazard: dict[str, list[Mapping[str, Any]]] = {}
    for r in grades.get("rows") or []:
        hazard = r.get("hazard")
        if hazard:
            by_hazard.setdefault(str(hazard), []).append(r)
        else:
            rows.append(_grade_row(r))
    refs = ", ".join(_text(x) for x in grades.get("references") or [])
    rules = "; ".join(_text(x) for x in grades.get("rules") or [])
    return {
        "lead": f"Each model's grade under {_text(grades.get('scheme'))}, with u its corrected unsafe (harmful) rate "
        f"and u_ref the highest among the reference models ({refs}), judged as every other model is.",
        "rules": f"Rules, in order: {rules}; otherwise {_text(grades.get('otherwise'))}",
        "judge_only": _text(grades.get("judge_only")),
        "rows": rows,
        "hazards": [_hazard_panel(h, hazard_rows) for h, hazard_rows in by_hazard.items()],
    }


def _grade_row(r: Mapping[str, Any]) -> dict[str, Any]:
    kinds = {"Excellent": "ok", "Very Good": "ok", "Good": "muted", "Fair": "warn", "Poor": "bad"}
    grade = r.get("grade")
    p = _fmt.number(r.get(f"p_{grade}")) if grade else None
    safe, harmful = r.get("grade_unresolved_safe"), r.get("grade_unresolved_harmful")
    return {
        "model": _text(r.get("model")),
        "reference": bool(r.get("reference")),
        "u": f"{_fmt.pct(r.get('u'))} %",
        "u_ci": f"[{_fmt.pct(r.get('u_ci_low'))}, {_fmt.pct(r.get('u_ci_high'))}]",
        "ratio": _ratio_text(r.get("ratio")),
        "ratio_ci": f"[{_ratio_text(r.get('ratio_ci_low'))}, {_ratio_text(r.get('ratio_ci_high'))}]",
        "badge": (_text(grade) if grade else "not graded", kinds.get(str(grade), "muted")),
        "straddles": bool(r.get("straddles")),
        "edges": _text(r.get("straddled_edges")),
        "p": "—" if p is None else f"{p:.2f}",
        "judge": _text(r.get("grade_judge_only") or "—"),
        "changed": bool(grade) and grade != r.get("grade_judge_only"),
        "bounds": (
            f"unresolved items: {_text(safe)} if all safe, {_text(harmful)} if all harmful"
            if safe and harmful and (safe != grade or harmful != grade)
            else ""
        ),
        "note": _text(r.get("note")),
    }


def _hazard_panel(hazard: str, rows: list[Mapping[str, Any]]) -> dict[str, Any]:
    """One hazard's panel: its models' grades, or why the hazard has none (a row of every model)."""
    refused = [r for r in rows if r.get("model") == EVERY_MODEL]
    return {
        "title": taxonomy().describe(hazard),
        "note": _text(refused[0].get("note")) if refused else "",
        "rows": [_grade_row(r) for r in rows if r.get("model") != EVERY_MODEL],
    }


def _ratio_text(value: Any) -> str:
    """A ratio with two decimals; an infinite one (a reference rate of 0) as ∞, a missing one as a dash."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return _fmt.DASH
    return "∞" if x == float("inf") else (_fmt.DASH if x != x else f"{x:.2f}")


def render_page(data: Mapping[str, Any]) -> str:
    """The whole HTML document for ``data`` (a mapping; see :mod:`annotate.report`)."""
    view = ReportView(data)
    title = str(data.get("title") or DEFAULT_TITLE)
    sections = [
        Section(anchor, heading, _render(template, **build(view))) for anchor, heading, template, build in _SECTIONS
    ]
    judges = judges_section(data)
    if judges is not None:  # optional (exports since annotate-export/3): before the design and provenance
        body = _render("section_judges.html.j2", **judges)
        sections.insert(len(sections) - 1, Section("judges", "How far to trust each judge", body))
    grades = data.get("grades")
    if isinstance(grades, Mapping):  # graded exports only (annotate-export/14 with a grading): before the judges
        body = _render("section_grades.html.j2", **_grades(grades))
        at = next((i for i, s in enumerate(sections) if s.id in ("judges", "design")), len(sections))
        sections.insert(at, Section("grades", f"Certification grades ({_text(grades.get('scheme'))})", body))
    diagnostics = data.get("diagnostics")
    if isinstance(diagnostics, Mapping):  # optional: the section appears only with it
        body = _render("section_diagnostics.html.j2", **_diagnostics(diagnostics))
        sections.append(Section("diagnostics", "Ambiguity diagnostics", body))

    meta = []
    if data.get("created_at"):
        meta.append(f"created {data.get('created_at')}")
    if data.get("tool_version"):
        meta.append(f"annotate {data.get('tool_version')}")
    if data.get("schema_version") is not None:
        meta.append(f"schema {data.get('schema_version')}")
    # css_string leaves nothing that could end the string or the <style> element: safe as it is.
    css = _stylesheet().render(print_title=Markup(_css_string(_fmt.clip(title, 80))))
    state = data.get("state")
    banner = None
    if isinstance(state, Mapping):  # exports since annotate-export/8 say whether their rounds are finished
        lines = [str(x) for x in state.get("lines") or []]
        banner = {"interim": state.get("status") == "interim", "lines": lines}
    return _ENV.get_template("report.html.j2").render(
        banner=banner,
        title=title,
        css=Markup(css),
        script=Markup(PRINT_SCRIPT),
        script_hash=_SCRIPT_HASH,
        meta=meta,
        reference=view.reference,
        sections=sections,
        created_at=_text(data.get("created_at")),
        tool_version=_text(data.get("tool_version")),
        schema_version=_text(data.get("schema_version")),
    )
