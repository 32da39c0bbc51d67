"""The report's judges section: how far to trust each judge (a table, a Se-against-Sp chart, the pairs).

Reads ``data["judges"]`` (see :mod:`annotate.report`): ``rows`` (the records of an export's
``judges.csv``), ``pairs`` (``judge_pairs.csv``), ``notes`` and ``method``. Only the documented
keys are read; every string is escaped, in the template (autoescape) and in the chart
(:func:`markupsafe.escape`).

The chart is small multiples: one panel per group (all responses, then each benchmark), each
judge a point at (specificity, sensitivity) with both 95 % intervals as a cross, on the same
axes in every panel. Marks: ``judge-panel`` (a panel, ``data-group``), ``judge-point``,
``judge-se-ci`` and ``judge-sp-ci`` (``data-judge``, ``data-group``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from annotate.columns import ALL
from annotate.report import _fmt
from annotate.report._view import as_dict, records, unique
from annotate.report.charts import _LINE_COLOURS, _esc, _svg_open, _text
from annotate.report.findings import judge_finding, model_test_finding, plain_note

__all__ = ["judges_chart", "judges_context", "models_chart", "models_context"]

#: The figures of a judge's row in the table, in order: key, heading, shown as per cent.
_FIGURES = (
    ("balanced_accuracy", "Balanced accuracy"),
    ("sensitivity", "Sensitivity"),
    ("specificity", "Specificity"),
    ("ppv", "PPV"),
    ("npv", "NPV"),
    ("kappa", "Cohen's κ"),
)


#: The same figures in certifiers' words (since annotate-export/14: MLCommons' evaluator checks).
_CERTIFIER = (
    ("false_safe_rate", "False safe rate"),
    ("false_unsafe_rate", "False unsafe rate"),
    ("unsafe_among_safe", "Unsafe among “safe” (1 − NPV)"),
)


def _group_name(bench: str, model: str) -> str:
    if bench == ALL and model == ALL:
        return "All responses"
    return f"benchmark {bench}" if model == ALL else f"model {model}"


def _groups(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The groups in the rows' order (the pooled one first, as the audit writes them)."""
    return unique((str(r.get("benchmark")), str(r.get("model"))) for r in rows)


def _by_rank(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    def key(r: Mapping[str, Any]) -> tuple[bool, float, str]:
        rank = _fmt.number(r.get("rank"))
        return (rank is None, rank or 0.0, str(r.get("judge")))

    return sorted(rows, key=key)


def _figure(row: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = _fmt.number(row.get(key))
    lo, hi = row.get(f"{key}_ci_low"), row.get(f"{key}_ci_high")
    return {
        "value": _fmt.fixed(value),
        "ci": None if value is None or _fmt.number(lo) is None else _fmt.interval(lo, hi),
    }


def _rank(row: Mapping[str, Any]) -> dict[str, Any]:
    rank = _fmt.rank(row.get("rank"))
    lo, hi = _fmt.rank(row.get("rank_low")), _fmt.rank(row.get("rank_high"))
    return {"value": rank, "ci": None if rank == _fmt.DASH or lo == _fmt.DASH else f"{lo}–{hi}"}


def _pct_interval(row: Mapping[str, Any], key: str) -> str | None:
    """A figure's interval in per cent, or None without the figure."""
    if _fmt.number(row.get(key)) is None:
        return None
    return f"{_fmt.pct(row.get(f'{key}_ci_low'))}–{_fmt.pct(row.get(f'{key}_ci_high'))}"


def _share(share: Any, harmful: Any, n: Any) -> str:
    """``x% (n, humans harmful y%)`` for a disagreement cell; a dash when the pair labelled nothing together."""
    if _fmt.number(share) is None:
        return _fmt.DASH
    text = f"{_fmt.pct(share)}% (n = {_fmt.count(n)}"
    if _fmt.number(harmful) is not None:
        text += f"; humans: {_fmt.pct(harmful, 0)}% harmful"
    return text + ")"


def judges_context(judges: Mapping[str, Any], plain: bool = False) -> dict[str, Any]:
    """The judges section's template context (all text; the chart as markup). ``plain`` (annotate-export/19
    on): the section and its by-model part open with what they found, one sentence each."""
    rows = records(judges.get("rows"))
    pairs = records(judges.get("pairs"))
    groups = []
    for bench, model in _groups(rows):
        mine = _by_rank([r for r in rows if (str(r.get("benchmark")), str(r.get("model"))) == (bench, model)])
        groups.append(
            {
                "name": _group_name(bench, model),
                "rows": [
                    {
                        "judge": str(r.get("judge")),
                        "rank": _rank(r),
                        "figures": [_figure(r, key) for key, _ in _FIGURES],
                        "ambiguous": _fmt.pct(r.get("ambiguous_share")),
                        "ambiguous_ci": _pct_interval(r, "ambiguous_share"),
                        "then_harmful": _fmt.pct(r.get("ambiguous_harmful"), 0),
                        "p_best": _fmt.fixed(r.get("p_best"), 2),
                        "n": _fmt.count(r.get("n_resolved")),
                        "note": plain_note(str(r.get("note") or "")) if plain else str(r.get("note") or ""),
                        "certifier": [_figure(r, key) for key, _ in _CERTIFIER] if "false_safe_rate" in r else None,
                    }
                    for r in mine
                ],
            }
        )
    pair_rows = [
        {
            "group": _group_name(str(p.get("benchmark")), str(p.get("model"))),
            "a": str(p.get("judge_a")),
            "b": str(p.get("judge_b")),
            "p_a": _fmt.fixed(p.get("p_a_better"), 3),
            "p_b": _fmt.fixed(p.get("p_b_better"), 3),
            "agree": _fmt.pct(p.get("agree_share")),
            "hs": _share(
                p.get("a_harmful_b_safe"), p.get("a_harmful_b_safe_human_harmful"), p.get("a_harmful_b_safe_n")
            ),
            "sh": _share(
                p.get("a_safe_b_harmful"), p.get("a_safe_b_harmful_human_harmful"), p.get("a_safe_b_harmful_n")
            ),
            "amb": _share(p.get("one_ambiguous"), p.get("one_ambiguous_human_harmful"), p.get("one_ambiguous_n")),
            "note": str(p.get("note") or ""),
            # Since annotate-export/11: the paired test of equal balanced accuracy; McNemar's where it is the design's.
            "difference": _fmt.fixed(p.get("difference"), 3) if "difference" in p else None,
            "difference_ci": _fmt.interval(p.get("difference_ci_low"), p.get("difference_ci_high"))
            if _fmt.number(p.get("difference_ci_low")) is not None
            else None,
            "p": _fmt.p_value(p.get("p_value")) if "p_value" in p else None,
            "mcnemar": f"{_fmt.count(p.get('mcnemar_a_only'))}:{_fmt.count(p.get('mcnemar_b_only'))}, "
            f"p {_fmt.fixed(p.get('mcnemar_p'), 3)}"
            if _fmt.number(p.get("mcnemar_p")) is not None
            else None,
        }
        for p in pairs
    ]
    estimand = as_dict(judges.get("estimand") or {})
    return {
        "empty": not rows,
        # Since annotate-export/19: the answer before the method, in one plain sentence.
        "finding": judge_finding(rows, pairs) if plain else None,
        "method": str(judges.get("method") or ""),
        "headings": [heading for _, heading in _FIGURES],
        "certifier_headings": [heading for _, heading in _CERTIFIER],
        "groups": groups,
        "chart": judges_chart(rows) if rows else None,
        "pairs": pair_rows,
        "notes": [str(n) for n in judges.get("notes") or [] if n is not None],
        "by_model": models_context(judges, plain),
        # Since annotate-export/11: what the figures describe, and the pair test.
        "estimand": {"name": str(estimand.get("name")), "describes": str(estimand.get("describes") or "")}
        if estimand
        else None,
        "pair_test": str(judges.get("pair_test") or ""),
        "pair_tested": any(r["p"] is not None for r in pair_rows),
        "mcnemar_shown": any(r["mcnemar"] is not None for r in pair_rows),
    }


# --------------------------------------------------------------------------------------------
# Small multiples: sensitivity against specificity
# --------------------------------------------------------------------------------------------

_PANEL = 210  # plot area, px
_MARGIN_L, _MARGIN_T, _MARGIN_B, _GAP = 46, 34, 40, 26


def _axis_low(rows: Sequence[Mapping[str, Any]]) -> float:
    """The axes' common lower end: the lowest interval end or figure, down to a tenth (at most 1 - 0.1)."""
    values = [
        _fmt.number(r.get(k))
        for r in rows
        for k in ("sensitivity", "sensitivity_ci_low", "specificity", "specificity_ci_low")
    ]
    low = min([v for v in values if v is not None] + [0.9])
    return max(0.0, math.floor(low * 10 - 1e-9) / 10)


def judges_chart(rows: Sequence[Mapping[str, Any]]) -> Markup:
    """Sensitivity (y) against specificity (x) per judge with both intervals, one panel per group.

    Groups: all responses, then each benchmark (per-model rows are in the table only).
    """
    groups = [g for g in _groups(rows) if g[1] == ALL]
    judges = sorted({str(r.get("judge")) for r in rows})
    colour = {j: _LINE_COLOURS[i % len(_LINE_COLOURS)] for i, j in enumerate(judges)}
    low = _axis_low([r for r in rows if (str(r.get("benchmark")), str(r.get("model"))) in groups])
    columns = min(len(groups), 4)
    n_rows = math.ceil(len(groups) / columns) if groups else 0
    cell_w = _MARGIN_L + _PANEL + _GAP
    cell_h = _MARGIN_T + _PANEL + _MARGIN_B
    legend_h = 22 * math.ceil(len(judges) / 4) + 10
    width = max(cell_w * columns + 10, 420)
    height = cell_h * n_rows + legend_h
    parts = [
        _svg_open(width, height, "Sensitivity against specificity per judge with 95% intervals", "judges-chart"),
    ]

    def scale(v: float) -> float:
        return (min(max(v, low), 1.0) - low) / (1.0 - low) * _PANEL

    for k, (bench, model) in enumerate(groups):
        ox = (k % columns) * cell_w + _MARGIN_L
        oy = (k // columns) * cell_h + _MARGIN_T
        name = _group_name(bench, model)
        parts.append(f'<g data-mark="judge-panel" data-group="{_esc(name)}">')
        parts.append(_text(ox, oy - 12, _fmt.clip(name, 34), size=12, weight="600"))
        parts.append(
            f'<rect x="{ox}" y="{oy}" width="{_PANEL}" height="{_PANEL}" fill="#fafbfc" stroke="#888" '
            'stroke-width="0.8"/>'
        )
        tick = low
        for _ in range(11):
            if tick > 1.0 + 1e-9:
                break
            t = scale(tick)
            parts.append(
                f'<line x1="{ox + t:.1f}" x2="{ox + t:.1f}" y1="{oy}" y2="{oy + _PANEL}" stroke="#e3e6ea"/>'
                f'<line x1="{ox}" x2="{ox + _PANEL}" y1="{oy + _PANEL - t:.1f}" y2="{oy + _PANEL - t:.1f}" '
                f'stroke="#e3e6ea"/>'
            )
            parts.append(_text(ox + t, oy + _PANEL + 14, f"{tick:.1f}", anchor="middle", size=9, fill="#555"))
            parts.append(_text(ox - 4, oy + _PANEL - t + 3, f"{tick:.1f}", anchor="end", size=9, fill="#555"))
            tick = round(tick + (0.1 if 1.0 - low <= 0.5 else 0.2), 6)
        parts.append(_text(ox + _PANEL / 2, oy + _PANEL + 30, "specificity", anchor="middle", size=10, fill="#444"))
        parts.append(
            f'<text x="{ox - 34}" y="{oy + _PANEL / 2:.1f}" text-anchor="middle" font-size="10" fill="#444" '
            f'transform="rotate(-90 {ox - 34} {oy + _PANEL / 2:.1f})">sensitivity</text>'
        )
        for r in rows:
            if (str(r.get("benchmark")), str(r.get("model"))) != (bench, model):
                continue
            parts += _judge_mark(r, ox, oy, scale, colour[str(r.get("judge"))], name)
        parts.append("</g>")
    ly = cell_h * n_rows + 8
    for i, j in enumerate(judges):
        lx = 10 + (i % 4) * 200
        y = ly + 22 * (i // 4)
        parts.append(f'<circle cx="{lx + 6}" cy="{y + 6}" r="5" fill="{colour[j]}"/>')
        parts.append(_text(lx + 16, y + 10, _fmt.clip(j, 28), size=11, fill="#333"))
    parts.append("</svg>")
    return Markup("".join(parts))


def _judge_mark(r: Mapping[str, Any], ox: float, oy: float, scale: Any, colour: str, group: str) -> list[str]:
    """One judge in one panel: the point and its two intervals (nothing when a figure is undefined)."""
    se, sp = _fmt.number(r.get("sensitivity")), _fmt.number(r.get("specificity"))
    if se is None or sp is None:
        return []
    judge = str(r.get("judge"))
    ids = f'data-judge="{_esc(judge)}" data-group="{_esc(group)}"'
    x, y = ox + scale(sp), oy + _PANEL - scale(se)
    parts = []
    se_lo, se_hi = _fmt.number(r.get("sensitivity_ci_low")), _fmt.number(r.get("sensitivity_ci_high"))
    sp_lo, sp_hi = _fmt.number(r.get("specificity_ci_low")), _fmt.number(r.get("specificity_ci_high"))
    if se_lo is not None and se_hi is not None:
        parts.append(
            f'<line data-mark="judge-se-ci" {ids} x1="{x:.1f}" x2="{x:.1f}" y1="{oy + _PANEL - scale(se_lo):.1f}" '
            f'y2="{oy + _PANEL - scale(se_hi):.1f}" stroke="{colour}" stroke-width="1.6"/>'
        )
    if sp_lo is not None and sp_hi is not None:
        parts.append(
            f'<line data-mark="judge-sp-ci" {ids} x1="{ox + scale(sp_lo):.1f}" x2="{ox + scale(sp_hi):.1f}" '
            f'y1="{y:.1f}" y2="{y:.1f}" stroke="{colour}" stroke-width="1.6"/>'
        )
    tip = (
        f"{judge} ({group}): sensitivity {_fmt.fixed(se)} [{_fmt.fixed(se_lo)}, {_fmt.fixed(se_hi)}], "
        f"specificity {_fmt.fixed(sp)} [{_fmt.fixed(sp_lo)}, {_fmt.fixed(sp_hi)}]"
    )
    parts.append(
        f'<circle data-mark="judge-point" {ids} cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{colour}" stroke="#fff" '
        f'stroke-width="1"><title>{_esc(tip)}</title></circle>'
    )
    return parts


def judges_section(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """The section's context when ``data`` has a ``judges`` mapping, else None (the section is left out)."""
    judges = data.get("judges")
    if not isinstance(judges, Mapping):
        return None
    return judges_context(as_dict(judges), plain=data.get("plain_words") is True)


# --------------------------------------------------------------------------------------------
# Does a judge err differently by model? (exports since annotate-export/9)
# --------------------------------------------------------------------------------------------

_MODEL_W, _MODEL_H = 26, 150  # per model, px; plot height
_FIGURE_NAMES = {"sensitivity": "Sensitivity", "specificity": "Specificity", "ppv": "PPV"}


def models_context(judges: Mapping[str, Any], plain: bool = False) -> dict[str, Any] | None:
    """The by-model test's part of the judges section, or None when the export has none."""
    tests = records(judges.get("models"))
    if "models" not in judges:
        return None
    rows = records(judges.get("rows"))
    flagged = [t for t in tests if t.get("flagged") in (True, "True", "true")]
    flagged.sort(key=lambda t: (_fmt.number(t.get("q_value")) or 0.0, str(t.get("judge")), str(t.get("model"))))
    untestable = [t for t in tests if str(t.get("testable")) in ("False", "false") or t.get("testable") is False]
    return {
        "finding": model_test_finding(tests, judges.get("fdr")) if plain else None,
        "test": str(judges.get("model_test") or ""),
        "fdr": _fmt.pct(judges.get("fdr"), 0),
        "n_tests": sum(1 for t in tests if _fmt.number(t.get("p_value")) is not None),
        # Since annotate-export/11: the rows too thin to test (PPV rows are shown, never tested).
        "one_posterior": any("testable" in t for t in tests),
        "n_untestable": sum(1 for t in untestable if str(t.get("figure")) != "ppv"),
        "flagged": [
            {
                "judge": str(t.get("judge")),
                "model": str(t.get("model")),
                "figure": _FIGURE_NAMES.get(str(t.get("figure")), str(t.get("figure"))),
                "estimate": _fmt.fixed(t.get("estimate")),
                "rest": _fmt.fixed(t.get("rest")),
                "difference": _fmt.fixed(t.get("difference")),
                "ci": f"[{_fmt.fixed(t.get('difference_ci_low'))}, {_fmt.fixed(t.get('difference_ci_high'))}]",
                "p": _fmt.fixed(t.get("p_value"), 4),
                "q": _fmt.fixed(t.get("q_value"), 4),
            }
            for t in flagged
        ],
        "chart": models_chart(rows, tests) if rows and tests else None,
        "confound": _confound_context(as_dict(judges.get("confound") or {})),
    }


def _confound_context(confound: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ranking under the per-model correction beside a pooled one, when a judge is flagged for some model."""
    rows = records(confound.get("models"))
    if not any(str(r.get("flagged") or "") for r in rows):
        return None

    def rank(v: Any) -> str:
        return _fmt.rank(v)

    ordered = sorted(rows, key=lambda r: (_fmt.number(r.get("corrected_rank")) is None,
                                          _fmt.number(r.get("corrected_rank")) or 0.0))  # fmt: skip
    changes = records(confound.get("order_changes"))
    return {
        "method": str(confound.get("pooled_correction") or ""),
        "rows": [
            {
                "model": str(r.get("model")),
                "corrected": _fmt.pct(r.get("corrected")),
                "ci": f"{_fmt.pct(r.get('corrected_ci_low'))}–{_fmt.pct(r.get('corrected_ci_high'))}",
                "rank": rank(r.get("corrected_rank")),
                "pooled": _fmt.pct(r.get("pooled")),
                "pooled_rank": rank(r.get("pooled_rank")),
                "flagged": str(r.get("flagged") or ""),
            }
            for r in ordered
        ],
        "changes": [
            {"a": str(c.get("a")), "b": str(c.get("b")), "p": _fmt.fixed(c.get("p_corrected_order"), 2)}
            for c in changes
        ],
    }


def models_chart(rows: Sequence[Mapping[str, Any]], tests: Sequence[Mapping[str, Any]]) -> Markup:
    """Small multiples: per judge and figure, each model's figure with its 95 % interval; flagged models marked.

    One panel per judge x figure (sensitivity, specificity, PPV), the models along x, the figure on
    y (the same axis in every panel), the judge's pooled figure as a dashed line. Marks:
    ``model-panel`` (``data-judge``, ``data-figure``), ``model-point`` (``data-model``,
    ``data-flagged``) and ``model-ci``.
    """
    judges = sorted({str(t.get("judge")) for t in tests})
    models = sorted({str(t.get("model")) for t in tests})
    flagged = {
        (str(t.get("judge")), str(t.get("model")), str(t.get("figure")))
        for t in tests
        if t.get("flagged") in (True, "True", "true")
    }
    by = {(str(r.get("judge")), str(r.get("model"))): r for r in rows if str(r.get("benchmark")) == ALL}
    figures = list(_FIGURE_NAMES)
    values = [
        _fmt.number(by[(j, m)].get(k))
        for j in judges
        for m in models
        if (j, m) in by
        for f in figures
        for k in (f, f"{f}_ci_low")
    ]
    low = max(0.0, math.floor(min([v for v in values if v is not None] + [0.9]) * 10 - 1e-9) / 10)
    panel_w = max(120, _MODEL_W * len(models))
    cell_w, cell_h = _MARGIN_L + panel_w + _GAP, _MARGIN_T + _MODEL_H + 56
    width, height = cell_w * len(figures) + 10, cell_h * len(judges) + 30
    parts = [_svg_open(width, height, "Each judge's figures per model with 95% intervals", "models-chart")]

    def y_of(v: float) -> float:
        return _MODEL_H - (min(max(v, low), 1.0) - low) / (1.0 - low) * _MODEL_H

    for a, judge in enumerate(judges):
        pooled = next((r for r in rows if str(r.get("judge")) == judge and str(r.get("model")) == ALL
                       and str(r.get("benchmark")) == ALL), None)  # fmt: skip
        for b, f in enumerate(figures):
            ox, oy = b * cell_w + _MARGIN_L, a * cell_h + _MARGIN_T
            parts.append(f'<g data-mark="model-panel" data-judge="{_esc(judge)}" data-figure="{_esc(f)}">')
            parts.append(_text(ox, oy - 12, _fmt.clip(f"{judge}: {_FIGURE_NAMES[f]}", 40), size=12, weight="600"))
            parts.append(
                f'<rect x="{ox}" y="{oy}" width="{panel_w}" height="{_MODEL_H}" fill="#fafbfc" stroke="#888" '
                'stroke-width="0.8"/>'
            )
            for tick in (low, (low + 1.0) / 2, 1.0):
                ty = oy + y_of(tick)
                parts.append(f'<line x1="{ox}" x2="{ox + panel_w}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="#e3e6ea"/>')
                parts.append(_text(ox - 4, ty + 3, f"{tick:.2f}", anchor="end", size=9, fill="#555"))
            ref = _fmt.number(pooled.get(f)) if pooled is not None else None
            if ref is not None:
                ry = oy + y_of(ref)
                parts.append(
                    f'<line x1="{ox}" x2="{ox + panel_w}" y1="{ry:.1f}" y2="{ry:.1f}" stroke="#555" '
                    'stroke-dasharray="4 3" stroke-width="1"/>'
                )
            step = panel_w / max(len(models), 1)
            for k, model in enumerate(models):
                x = ox + step * (k + 0.5)
                parts.append(
                    f'<text x="{x:.1f}" y="{oy + _MODEL_H + 10:.1f}" font-size="9" fill="#444" text-anchor="end" '
                    f'transform="rotate(-45 {x:.1f} {oy + _MODEL_H + 10:.1f})">{_esc(_fmt.clip(model, 16))}</text>'
                )
                r = by.get((judge, model))
                v = _fmt.number(r.get(f)) if r is not None else None
                if v is None or r is None:
                    continue
                hot = (judge, model, f) in flagged
                colour = "#b42318" if hot else "#24517a"
                lo, hi = _fmt.number(r.get(f"{f}_ci_low")), _fmt.number(r.get(f"{f}_ci_high"))
                ids = f'data-model="{_esc(model)}" data-flagged="{"yes" if hot else "no"}"'
                if lo is not None and hi is not None:
                    parts.append(
                        f'<line data-mark="model-ci" {ids} x1="{x:.1f}" x2="{x:.1f}" y1="{oy + y_of(lo):.1f}" '
                        f'y2="{oy + y_of(hi):.1f}" stroke="{colour}" stroke-width="1.6"/>'
                    )
                tip = f"{judge}, {model}: {_FIGURE_NAMES[f]} {_fmt.fixed(v)}" + (" (flagged)" if hot else "")
                shape = (
                    f'<rect data-mark="model-point" {ids} x="{x - 5:.1f}" y="{oy + y_of(v) - 5:.1f}" width="10" '
                    f'height="10" fill="{colour}"><title>{_esc(tip)}</title></rect>'
                    if hot
                    else f'<circle data-mark="model-point" {ids} cx="{x:.1f}" cy="{oy + y_of(v):.1f}" r="4" '
                    f'fill="{colour}"><title>{_esc(tip)}</title></circle>'
                )
                parts.append(shape)
            parts.append("</g>")
    parts.append(
        _text(
            10,
            height - 10,
            "Red squares: flagged (differs from the other models); dashed: the judge's pooled figure",
            size=10,
            fill="#444",
        )  # fmt: skip
    )
    parts.append("</svg>")
    return Markup("".join(parts))
