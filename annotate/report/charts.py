"""The report's inline SVG charts: heat map, agreement intervals, rank bump chart, P matrix.

The charts are coordinate arithmetic, so they are drawn here in Python rather than in
templates. Every piece of text that comes from ``data`` (model, benchmark, treatment and group
names, tooltips) goes through :func:`markupsafe.escape` before it reaches an element or an
attribute, and each chart is returned as :class:`markupsafe.Markup`, ready for a template.

The marks carry ``data-mark`` attributes (``heat-cell``, ``ag-dot``, ``ag-ci``, ``bump-point``,
``bump-seg`` with ``data-style``, ``bump-label``, ``p-cell``) so tests and tools can count them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from annotate.report._fmt import clip, count, fixed, number, pct, rank
from annotate.report._view import ReportView, as_list

__all__ = ["CREDIBLE", "RELIABLE", "TENTATIVE", "agreement_chart", "bump_chart", "heatmap", "p_matrix"]

TENTATIVE, RELIABLE = 0.667, 0.800  # Krippendorff's thresholds on the interval's lower end
CREDIBLE = 0.975  # a pair's order is credible when the posterior gives it at least this

# Okabe-Ito, colour-blind safe (yellow left out: too light on white).
_LINE_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C6D31")
# ColorBrewer YlGnBu (sequential, colour-blind safe).
_SEQ = ("#ffffd9", "#edf8b1", "#c7e9b4", "#7fcdbb", "#41b6c4", "#1d91c0", "#225ea8", "#253494")
# ColorBrewer PuOr-like orange / blue diverging around the middle (colour-blind safe).
_DIV = ("#b35806", "#e08214", "#fdb863", "#fee0b6", "#f7f7f7", "#d1e5f0", "#92c5de", "#4393c3", "#2166ac")
_BINARY_COLOUR, _THREE_WAY_COLOUR = "#0072B2", "#D55E00"


# --------------------------------------------------------------------------------------------
# Colours
# --------------------------------------------------------------------------------------------


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def _ramp(stops: Sequence[str], t: float) -> str:
    """The colour at ``t`` in [0, 1] along evenly spaced ``stops``."""
    t = min(1.0, max(0.0, t))
    pos = t * (len(stops) - 1)
    i = min(int(pos), len(stops) - 2)
    w = pos - i
    start, end = _rgb(stops[i]), _rgb(stops[i + 1])
    return "#" + "".join(f"{round(x + (y - x) * w):02x}" for x, y in zip(start, end, strict=True))


def _luminance(fill: str) -> float:
    """WCAG relative luminance."""

    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in _rgb(fill))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _ink(fill: str) -> str:
    """Black or white text, whichever contrasts more with ``fill``."""
    lum = _luminance(fill)
    return "#111111" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#ffffff"


def _contrast_white(fill: str) -> float:
    return 1.05 / (_luminance(fill) + 0.05)


def _text_colour(fill: str) -> str:
    """``fill`` darkened until it reads on white (contrast >= 4.5)."""
    r, g, b = _rgb(fill)
    for _ in range(20):
        colour = "#" + "".join(f"{x:02x}" for x in (r, g, b))
        if _contrast_white(colour) >= 4.5:
            return colour
        r, g, b = int(r * 0.88), int(g * 0.88), int(b * 0.88)
    return "#000000"


# --------------------------------------------------------------------------------------------
# SVG pieces (markup fragments as str: every inserted text escaped here)
# --------------------------------------------------------------------------------------------


def _esc(value: Any) -> Markup:
    """Escaped text for an element or a double-quoted attribute (``None`` as empty)."""
    return escape("" if value is None else str(value))


def _text_width(text: str, size: float) -> float:
    """A rough width of ``text`` at ``size`` px, for layout."""
    return 0.56 * size * len(text)


def _wrap_name(name: str, width: int = 14) -> list[str]:
    """Split a treatment name at underscores / spaces into lines of about ``width`` characters."""
    parts = [p for p in name.replace("_", " ").split(" ") if p]
    lines: list[str] = []
    for p in parts:
        if lines and len(lines[-1]) + 1 + len(p) <= width:
            lines[-1] += " " + p
        else:
            lines.append(p)
    return lines or [name]


def _svg_open(width: float, height: float, label: str, cls: str) -> str:
    return (
        f'<svg class="chart {cls}" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
        f'height="{height:.0f}" role="img" aria-label="{_esc(label)}" '
        f'preserveAspectRatio="xMinYMin meet">'
    )


def _text(
    x: float,
    y: float,
    content: Any,
    *,
    anchor: str = "start",
    size: float = 12,
    weight: str = "normal",
    fill: str = "#1f2328",
    data: Mapping[str, str] | None = None,
) -> str:
    """A ``<text>`` element; ``data`` adds escaped ``data-*`` attributes."""
    bold = f' font-weight="{weight}"' if weight != "normal" else ""
    attrs = "".join(f' data-{name}="{_esc(value)}"' for name, value in (data or {}).items())
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}"{bold} fill="{fill}"'
        f"{attrs}>{_esc(content)}</text>"
    )


def _gradient(uid: str, stops: Sequence[str]) -> str:
    offsets = "".join(f'<stop offset="{k / (len(stops) - 1):.3f}" stop-color="{c}"/>' for k, c in enumerate(stops))
    return f'<defs><linearGradient id="{uid}" x1="0" x2="1" y1="0" y2="0">{offsets}</linearGradient></defs>'


# --------------------------------------------------------------------------------------------
# Ambiguity heat map
# --------------------------------------------------------------------------------------------


def _seq_legend(x: float, y: float, w: float, vmax: float, title: str, uid: str) -> str:
    parts = [
        _gradient(uid, _SEQ),
        _text(x, y - 6, title, size=11, fill="#444"),
        f'<rect x="{x}" y="{y}" width="{w}" height="12" fill="url(#{uid})" stroke="#888" stroke-width="0.5"/>',
    ]
    for k in range(5):
        tick_value = vmax * k / 4
        tick_x = x + w * k / 4
        parts.append(f'<line x1="{tick_x:.1f}" x2="{tick_x:.1f}" y1="{y + 12}" y2="{y + 16}" stroke="#666"/>')
        parts.append(_text(tick_x, y + 28, f"{100 * tick_value:.0f}%", anchor="middle", size=10, fill="#444"))
    return "".join(parts)


def _heat_cell(
    x: float, y: float, cw: float, ch: float, model: str, bench: str, cell: Mapping[str, Any] | None, vmax: float
) -> str:
    """One model x benchmark cell: its share printed on a colour of the sequential ramp."""
    ids = f'data-model="{_esc(model)}" data-benchmark="{_esc(bench)}"'
    share = number(cell.get("share_ambiguous")) if cell else None
    if cell is None or share is None:
        return (
            f'<g data-mark="heat-cell" {ids}><title>{_esc(model)} × {_esc(bench)}: no data</title>'
            f'<rect x="{x + 1}" y="{y + 1}" width="{cw - 2}" height="{ch - 2}" fill="#f2f2f2" '
            f'stroke="#bbb" stroke-dasharray="3 2"/>'
            + _text(x + cw / 2, y + ch / 2 + 4, "no data", anchor="middle", size=11, fill="#666")
            + "</g>"
        )
    fill = _ramp(_SEQ, share / vmax if vmax else 0)
    ink = _ink(fill)
    n = count(cell.get("n_responses"))
    tip = (
        f"{model} × {bench}: ambiguous {pct(share)}%, harmful {pct(cell.get('share_harmful'))}%, "
        f"safe {pct(cell.get('share_safe'))}%, n = {n}"
    )
    return (
        f'<g data-mark="heat-cell" {ids} data-value="{share:.4f}"><title>{_esc(tip)}</title>'
        f'<rect x="{x + 1}" y="{y + 1}" width="{cw - 2}" height="{ch - 2}" rx="3" fill="{fill}"/>'
        + _text(x + cw / 2, y + 18, f"{pct(share)}%", anchor="middle", size=14, weight="700", fill=ink)
        + _text(x + cw / 2, y + 32, f"n = {n}", anchor="middle", size=10, fill=ink)
        + "</g>"
    )


def heatmap(view: ReportView) -> Markup:
    """The share of responses the judge labelled ambiguous, per model (rows) and benchmark (columns)."""
    cells = {(str(c.get("model")), str(c.get("benchmark"))): c for c in view.cells}
    models, benches = view.models, view.benchmarks
    shares = [number(c.get("share_ambiguous")) for c in view.cells]
    vmax = max([s for s in shares if s is not None] + [0.05])
    vmax = math.ceil(vmax * 10 - 1e-9) / 10  # the scale ends on a whole ten per cent
    cw, ch = 118, 40
    left = min(260, max(_text_width(clip(m, 36), 13) for m in models) + 16)
    top = 34
    width = max(left + cw * len(benches) + 20, left + 260)
    height = top + ch * len(models) + 64
    parts = [
        _svg_open(width, height, "Share of responses the judge labelled ambiguous, per model and benchmark", "heatmap")
    ]
    for j, bench in enumerate(benches):
        parts.append(_text(left + cw * j + cw / 2, top - 10, clip(bench, 18), anchor="middle", size=12, weight="600"))
    for i, model in enumerate(models):
        y = top + ch * i
        parts.append(_text(left - 10, y + ch / 2 + 4, clip(model, 36), anchor="end", size=13))
        for j, bench in enumerate(benches):
            parts.append(_heat_cell(left + cw * j, y, cw, ch, model, bench, cells.get((model, bench)), vmax))
    legend_y = top + ch * len(models) + 28
    legend_w = min(240, max(160, cw * len(benches)))
    parts.append(_seq_legend(left, legend_y, legend_w, vmax, "judge said ambiguous", "seq-grad"))
    parts.append("</svg>")
    return Markup("".join(parts))


# --------------------------------------------------------------------------------------------
# Agreement: alpha with its interval per group
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _AlphaAxis:
    """The agreement chart's layout: a label column, the alpha axis, a value column."""

    start: float  # alpha at the left end of the axis
    n_rows: int
    end: float = 1.0
    label_w: int = 250
    plot_w: int = 520
    value_w: int = 150
    row_h: int = 24
    top: int = 46

    @property
    def width(self) -> int:
        return self.label_w + self.plot_w + self.value_w + 10

    @property
    def height(self) -> int:
        return self.top + self.row_h * self.n_rows + 78

    @property
    def rows_bottom(self) -> int:
        return self.top + self.row_h * self.n_rows

    def x(self, alpha: float) -> float:
        """The x of ``alpha``, clamped to the axis."""
        return (
            self.label_w + (min(max(alpha, self.start), self.end) - self.start) / (self.end - self.start) * self.plot_w
        )


def _alpha_zones(axis: _AlphaAxis) -> list[str]:
    """Background bands for the verdicts, named above the plot."""
    zones = [
        (axis.start, TENTATIVE, "#fdf0ee", "unreliable"),
        (TENTATIVE, RELIABLE, "#fff6dd", "tentative"),
        (RELIABLE, axis.end, "#eaf6ed", "reliable"),
    ]
    parts = []
    for zone_lo, zone_hi, fill, name in zones:
        if zone_hi <= axis.start:
            continue
        x0, x1 = axis.x(zone_lo), axis.x(zone_hi)
        parts.append(
            f'<rect x="{x0:.1f}" y="{axis.top - 8}" width="{x1 - x0:.1f}" '
            f'height="{axis.row_h * axis.n_rows + 8}" fill="{fill}"/>'
        )
        parts.append(_text((x0 + x1) / 2, axis.top - 14, name, anchor="middle", size=10, fill="#555"))
    for threshold in (TENTATIVE, RELIABLE):
        tx = axis.x(threshold)
        parts.append(
            f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{axis.top - 30}" y2="{axis.rows_bottom}" '
            f'stroke="#333" stroke-width="1.2" stroke-dasharray="5 3"/>'
        )
        parts.append(_text(tx, axis.top - 32, f"{threshold:.3f}", anchor="middle", size=10, weight="600", fill="#333"))
    return parts


def _alpha_axis(axis: _AlphaAxis) -> list[str]:
    """The x axis with a tick every 0.2, its caption and the value column's heading."""
    axis_y = axis.rows_bottom + 6
    parts = [f'<line x1="{axis.label_w}" x2="{axis.label_w + axis.plot_w}" y1="{axis_y}" y2="{axis_y}" stroke="#666"/>']
    tick = axis.start
    for _ in range(20):  # at most 20 ticks, however far below 0 the axis starts
        if tick > axis.end + 1e-9:
            break
        tx = axis.x(tick)
        parts.append(f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{axis_y}" y2="{axis_y + 4}" stroke="#666"/>')
        parts.append(_text(tx, axis_y + 16, f"{tick:.1f}", anchor="middle", size=10, fill="#444"))
        tick = round(tick + 0.2, 6)
    caption = "Krippendorff's α (dot) with 95% bootstrap interval"
    parts.append(_text(axis.label_w + axis.plot_w / 2, axis_y + 32, caption, anchor="middle", size=11, fill="#444"))
    parts.append(
        _text(axis.label_w + axis.plot_w + 10, axis.top - 14, "α [95% CI]", size=10, weight="600", fill="#444")
    )
    return parts


def _alpha_row(
    axis: _AlphaAxis, i: int, row: Mapping[str, Any], previous_group: str | None, plain: bool = False
) -> list[str]:
    """One agreement row: its label, interval, alpha mark and printed value."""
    y = axis.top + axis.row_h * i + axis.row_h / 2
    group, labels = str(row.get("group")), row.get("labels")
    first_of_group = group != previous_group
    parts = []
    if first_of_group and i:
        line_y = y - axis.row_h / 2
        parts.append(f'<line x1="4" x2="{axis.width - 4}" y1="{line_y:.1f}" y2="{line_y:.1f}" stroke="#ddd"/>')
    name = f"{clip(group, 30)} · {labels}" if first_of_group else f"· {labels}"
    parts.append(
        _text(
            axis.label_w - 10,
            y + 4,
            name,
            anchor="end",
            size=12,
            weight="600" if row.get("pooled") else "normal",
            fill="#1f2328" if first_of_group else "#555",
        )
    )
    binary = labels == "binary"
    colour = _BINARY_COLOUR if binary else _THREE_WAY_COLOUR
    ci = as_list(row.get("alpha_ci")) + [None, None]
    lo, hi, alpha = number(ci[0]), number(ci[1]), number(row.get("alpha"))
    if lo is not None and hi is not None:
        parts.append(
            f'<line data-mark="ag-ci" x1="{axis.x(lo):.1f}" x2="{axis.x(hi):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="{colour}" stroke-width="2"/>'
        )
        for end in (lo, hi):
            parts.append(
                f'<line x1="{axis.x(end):.1f}" x2="{axis.x(end):.1f}" y1="{y - 5:.1f}" y2="{y + 5:.1f}" '
                f'stroke="{colour}" stroke-width="2"/>'
            )
    value_x = axis.label_w + axis.plot_w + 10
    if alpha is None:
        parts.append(_text(axis.label_w + 8, y + 4, "α undefined", size=11, fill="#666"))
        parts.append(_text(value_x, y + 4, "undefined", size=11, fill="#666"))
        return parts
    withheld = plain and (lo is None or hi is None)  # annotate-export/19 on: a defined alpha without an interval
    verdict = "no interval" if withheld else row.get("verdict")
    tip = _esc(f"{group} ({labels}): alpha {fixed(alpha)} [{fixed(lo)}, {fixed(hi)}], {verdict}")
    if withheld:
        tip = _esc(f"{group} ({labels}): alpha {fixed(alpha)}, no interval")
    ax = axis.x(alpha)
    if binary:  # a dot
        parts.append(
            f'<circle data-mark="ag-dot" cx="{ax:.1f}" cy="{y:.1f}" r="5.5" fill="{colour}" '
            f'stroke="#fff" stroke-width="1"><title>{tip}</title></circle>'
        )
    else:  # an open diamond
        s = 6
        parts.append(
            f'<path data-mark="ag-dot" d="M{ax:.1f} {y - s:.1f} L{ax + s:.1f} {y:.1f} '
            f'L{ax:.1f} {y + s:.1f} L{ax - s:.1f} {y:.1f} Z" fill="#fff" stroke="{colour}" '
            f'stroke-width="2"><title>{tip}</title></path>'
        )
    shown = f"{fixed(alpha)}, no interval" if withheld else f"{fixed(alpha)} [{fixed(lo, 2)}, {fixed(hi, 2)}]"
    parts.append(_text(value_x, y + 4, shown, size=11, fill="#1f2328"))
    return parts


def _alpha_legend(axis: _AlphaAxis) -> list[str]:
    legend_y = axis.height - 10
    diamond_x = axis.label_w + 180
    return [
        f'<circle cx="{axis.label_w + 6}" cy="{legend_y - 4}" r="5" fill="{_BINARY_COLOUR}"/>',
        _text(axis.label_w + 16, legend_y, "binary (harmful / not)", size=11, fill="#333"),
        f'<path d="M{diamond_x} {legend_y - 10} L{diamond_x + 6} {legend_y - 4} L{diamond_x} {legend_y + 2} '
        f'L{diamond_x - 6} {legend_y - 4} Z" fill="#fff" stroke="{_THREE_WAY_COLOUR}" stroke-width="2"/>',
        _text(diamond_x + 12, legend_y, "3-way (harmful / safe / ambiguous)", size=11, fill="#333"),
    ]


def agreement_chart(rows: Sequence[Mapping[str, Any]], plain: bool = False) -> Markup:
    """Krippendorff's alpha with its 95% interval per agreement row, over the verdict zones; ``plain``
    (annotate-export/19 on): a defined alpha without an interval is labelled "no interval"."""
    lows = [number((as_list(row.get("alpha_ci")) + [None])[0]) for row in rows]
    alphas = [number(row.get("alpha")) for row in rows]
    lowest = min([x for x in lows + alphas if x is not None] + [0.0])
    axis = _AlphaAxis(start=math.floor(lowest * 5) / 5, n_rows=len(rows))  # start on a multiple of 0.2
    parts = [_svg_open(axis.width, axis.height, "Krippendorff's alpha with 95% intervals per group", "agreement-chart")]
    parts += _alpha_zones(axis)
    parts += _alpha_axis(axis)
    previous_group: str | None = None
    for i, row in enumerate(rows):
        parts += _alpha_row(axis, i, row, previous_group, plain)
        previous_group = str(row.get("group"))
    parts += _alpha_legend(axis)
    parts.append("</svg>")
    return Markup("".join(parts))


# --------------------------------------------------------------------------------------------
# Rank bump chart
# --------------------------------------------------------------------------------------------

#: Stroke attributes of a segment per style (see the encoding in :mod:`annotate.report`).
_SEGMENT_STROKE = {
    "none": 'stroke-width="1.6" stroke-opacity="0.55"',
    "noise": 'stroke-width="3.2" stroke-dasharray="7 5"',
    "credible": 'stroke-width="3.6"',
}


@dataclass(frozen=True)
class _BumpLayout:
    """The bump chart's layout: one column per treatment, one row per rank."""

    label_w: float  # room for the end labels, on either side
    col_w: float
    n_columns: int
    n_models: int
    top: int = 74
    row_h: int = 46

    @property
    def bottom(self) -> int:
        return self.top + self.row_h * (self.n_models - 1)

    @property
    def width(self) -> float:
        return self.label_w + self.col_w * (self.n_columns - 1) + self.label_w

    @property
    def height(self) -> int:
        return self.bottom + 120

    def x(self, column: int) -> float:
        return self.label_w + self.col_w * column

    def y(self, rank_value: float) -> float:
        return self.top + self.row_h * (rank_value - 1)


def _bump_frame(layout: _BumpLayout, view: ReportView) -> list[str]:
    """The reference column's band, one vertical line per treatment and the treatment names."""
    ref = view.ref_index
    parts = [
        f'<rect x="{layout.x(ref) - 38:.1f}" y="{layout.top - 58}" width="76" '
        f'height="{layout.bottom - layout.top + 110}" rx="6" fill="#eef3f8"/>'
    ]
    for i, treatment in enumerate(view.treatments):
        x = layout.x(i)
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{layout.top - 12}" y2="{layout.bottom + 12:.1f}" '
            f'stroke="#d0d7de" stroke-width="1"/>'
        )
        for k, line in enumerate(_wrap_name(treatment, 13)):
            parts.append(
                _text(
                    x,
                    layout.bottom + 30 + 13 * k,
                    line,
                    anchor="middle",
                    size=11,
                    weight="700" if i == ref else "normal",
                    fill="#1f2328" if i == ref else "#444",
                )
            )
    parts.append(
        _text(layout.x(ref), layout.top - 42, "reference", anchor="middle", size=10, weight="600", fill="#24517a")
    )
    parts.append(_text(layout.x(0), layout.top - 42, "safest = rank 1 (top)", anchor="start", size=10, fill="#666"))
    return parts


def _bump_segments(
    layout: _BumpLayout, view: ReportView, ranks: Mapping[tuple[str, str], float | None], colours: Mapping[str, str]
) -> list[str]:
    """Every model's line between consecutive treatments, styled by the owning treatment's flips."""
    treatments = view.treatments
    parts = []
    for model in view.ranked:
        for i in range(len(treatments) - 1):
            rank_from, rank_to = ranks[(model, treatments[i])], ranks[(model, treatments[i + 1])]
            if rank_from is None or rank_to is None:
                continue
            owner = view.segment_owner(i)
            style = view.style(model, owner)
            partners = ", ".join(
                f"{other} ({'credible' if credible else 'within noise'})"
                for other, credible in view.flips_of.get((model, owner), [])
            )
            tip = f"{model}: {owner} vs {view.reference}: " + (f"flips with {partners}" if partners else "no flip")
            parts.append(
                f'<line data-mark="bump-seg" data-model="{_esc(model)}" data-treatment="{_esc(owner)}" '
                f'data-style="{style}" x1="{layout.x(i):.1f}" y1="{layout.y(rank_from):.1f}" '
                f'x2="{layout.x(i + 1):.1f}" y2="{layout.y(rank_to):.1f}" '
                f'stroke="{colours[model]}" {_SEGMENT_STROKE[style]} stroke-linecap="round">'
                f"<title>{_esc(tip)}</title></line>"
            )
    return parts


def _bump_points(
    layout: _BumpLayout, view: ReportView, ranks: Mapping[tuple[str, str], float | None], colours: Mapping[str, str]
) -> list[str]:
    """A dot per model and treatment, larger in the reference column."""
    parts = []
    for model in view.ranked:
        for i, treatment in enumerate(view.treatments):
            rank_value = ranks[(model, treatment)]
            if rank_value is None:
                continue
            radius = 6 if i == view.ref_index else 4.5
            parts.append(
                f'<circle data-mark="bump-point" data-model="{_esc(model)}" data-treatment="{_esc(treatment)}" '
                f'cx="{layout.x(i):.1f}" cy="{layout.y(rank_value):.1f}" r="{radius}" fill="{colours[model]}" '
                f'stroke="#fff" stroke-width="1.5"><title>{_esc(model)} under {_esc(treatment)}: '
                f"rank {rank(rank_value)}</title></circle>"
            )
    return parts


def _spread(wanted: list[tuple[float, int]], gap: float) -> dict[int, float]:
    """Label positions: the wanted y per item, pushed apart by at least ``gap``."""
    placed: dict[int, float] = {}
    last = -1e9
    for y, k in sorted(wanted):
        y_placed = max(y, last + gap)
        placed[k] = y_placed
        last = y_placed
    return placed


def _bump_end_labels(
    layout: _BumpLayout, view: ReportView, ranks: Mapping[tuple[str, str], float | None], colours: Mapping[str, str]
) -> list[str]:
    """Name and rank at both ends of every model's line, spread apart so they do not overlap."""
    models, treatments = view.ranked, view.treatments
    firsts: list[tuple[float, int, int]] = []  # (y of the line's end, model index, column)
    lasts: list[tuple[float, int, int]] = []
    for k, model in enumerate(models):
        ranked_columns = [i for i, t in enumerate(treatments) if ranks[(model, t)] is not None]
        if not ranked_columns:
            continue
        for ends, column in ((firsts, ranked_columns[0]), (lasts, ranked_columns[-1])):
            end_rank = ranks[(model, treatments[column])]
            assert end_rank is not None
            ends.append((layout.y(end_rank), k, column))
    parts = []
    for ends, left in ((firsts, True), (lasts, False)):
        label_y = _spread([(y, k) for y, k, _ in ends], 15)
        for _, k, column in ends:
            model = models[k]
            shown_rank = rank(ranks[(model, treatments[column])])
            if left:
                x, label, anchor = layout.x(column) - 12, f"{clip(model, 30)}  {shown_rank}", "end"
            else:
                x, label, anchor = layout.x(column) + 12, f"{shown_rank}  {clip(model, 30)}", "start"
            parts.append(
                _text(
                    x,
                    label_y[k] + 4,
                    label,
                    anchor=anchor,
                    size=12,
                    weight="600",
                    fill=_text_colour(colours[model]),
                    data={"mark": "bump-label", "model": model},
                )
            )
    return parts


def _bump_legend(layout: _BumpLayout, view: ReportView) -> list[str]:
    """The three segment styles, and how to read a segment."""
    legend_y = layout.height - 34
    item_x = layout.label_w - 60
    items = [
        ("none", "no flip: same order against every model as under the reference"),
        ("noise", "flips within noise only"),
        ("credible", "at least one credible flip"),
    ]
    parts = []
    for style, caption in items:
        parts.append(
            f'<line x1="{item_x}" x2="{item_x + 36}" y1="{legend_y}" y2="{legend_y}" stroke="#333" '
            f"{_SEGMENT_STROKE[style]}/>"
        )
        parts.append(_text(item_x + 42, legend_y + 4, caption, size=11, fill="#333"))
        item_x += 52 + _text_width(caption, 11) + 18
    note = (
        f"A segment shows the flips of the treatment at its end farther from "
        f"{view.reference}; a flip is credible when P ≥ {CREDIBLE} under {view.reference}."
    )
    parts.append(_text(layout.label_w - 60, legend_y + 24, note, size=11, fill="#555"))
    return parts


def bump_chart(view: ReportView) -> Markup:
    """Each ranked model's overall rank across the treatments; rank 1 (safest) at the top.

    Needs at least one ranked model and two treatments (the caller checks).
    """
    models, treatments = view.ranked, view.treatments
    ranks = {(m, t): number(view.overall.get((m, t), {}).get("rank")) for m in models for t in treatments}
    colours = {m: _LINE_COLOURS[i % len(_LINE_COLOURS)] for i, m in enumerate(models)}
    layout = _BumpLayout(
        label_w=max(_text_width(clip(m, 30) + " 00", 12) for m in models) + 20,
        col_w=max(92.0, min(130.0, 760 / max(1, len(treatments) - 1))),
        n_columns=len(treatments),
        n_models=len(models),
    )
    parts = [
        _svg_open(
            layout.width, layout.height, "Rank of each model under each treatment; rank 1 (safest) at the top", "bump"
        )
    ]
    parts += _bump_frame(layout, view)
    parts += _bump_segments(layout, view, ranks, colours)
    parts += _bump_points(layout, view, ranks, colours)
    parts += _bump_end_labels(layout, view, ranks, colours)
    parts += _bump_legend(layout, view)
    parts.append("</svg>")
    return Markup("".join(parts))


# --------------------------------------------------------------------------------------------
# P(A safer than B)
# --------------------------------------------------------------------------------------------


def _p_cell(x: float, y: float, size: int, row_model: str, col_model: str, p: float | None) -> str:
    ids = f'data-row="{_esc(row_model)}" data-col="{_esc(col_model)}"'
    if p is None:
        return (
            f'<g data-mark="p-cell" {ids}>'
            f'<rect x="{x + 1}" y="{y + 1}" width="{size - 2}" height="{size - 2}" fill="#f0f0f0"/>'
            + _text(x + size / 2, y + size / 2 + 4, "—", anchor="middle", size=12, fill="#888")
            + "</g>"
        )
    fill = _ramp(_DIV, p)
    strong = p >= CREDIBLE or p <= 1 - CREDIBLE
    label = ">0.99" if p > 0.995 else "<0.01" if p < 0.005 else f"{p:.2f}"
    outline = ' stroke="#111" stroke-width="1.5"' if strong else ""
    return (
        f'<g data-mark="p-cell" {ids} data-value="{p:.4f}">'
        f"<title>P({_esc(row_model)} safer than {_esc(col_model)}) = {p:.4f}</title>"
        f'<rect x="{x + 1}" y="{y + 1}" width="{size - 2}" height="{size - 2}" fill="{fill}"{outline}/>'
        + _text(
            x + size / 2,
            y + size / 2 + 4,
            label,
            anchor="middle",
            size=13,
            weight="700" if strong else "normal",
            fill=_ink(fill),
        )
        + "</g>"
    )


def _p_legend(left: float, legend_y: float) -> list[str]:
    bar_w = 260
    parts = [
        _gradient("div-grad", _DIV),
        _text(left, legend_y - 6, "P(row safer than column)", size=11, fill="#444"),
        f'<rect x="{left}" y="{legend_y}" width="{bar_w}" height="12" fill="url(#div-grad)" stroke="#888" '
        f'stroke-width="0.5"/>',
    ]
    for p in (0.0, 1 - CREDIBLE, 0.5, CREDIBLE, 1.0):
        tick_x = left + bar_w * p
        parts.append(
            f'<line x1="{tick_x:.1f}" x2="{tick_x:.1f}" y1="{legend_y + 12}" y2="{legend_y + 16}" stroke="#666"/>'
        )
    for p, anchor in ((0.0, "start"), (0.5, "middle"), (1.0, "end")):
        parts.append(_text(left + bar_w * p, legend_y + 28, f"{p:g}", anchor=anchor, size=10, fill="#444"))
    note = f"outlined, bold: ≥ {CREDIBLE} or ≤ {1 - CREDIBLE:.3f}, i.e. the order of the pair is credible"
    parts.append(_text(left, legend_y + 46, note, size=10, fill="#444"))
    return parts


def p_matrix(models: Sequence[str], matrix: Sequence[Sequence[Any]]) -> Markup:
    """P(row model safer than column model) as a diverging-colour matrix; the diagonal blank.

    ``matrix`` has one row per model (the caller checks); short rows read as missing values.
    """
    n = len(models)
    cell = 62 if n <= 10 else 44
    left = max(_text_width(clip(m, 30), 12) for m in models) + 18
    head_h = min(170, max(_text_width(clip(m, 24), 11) for m in models) * 0.72 + 24)  # room for slanted names
    top = head_h + 10
    width = max(left + cell * n + head_h * 0.75 + 10, left + 300)
    height = top + cell * n + 84
    parts = [
        _svg_open(width, height, "Posterior probability that the row model is safer than the column model", "pmatrix")
    ]
    for j, col_model in enumerate(models):
        x = left + cell * j + cell / 2
        parts.append(
            f'<text x="{x:.1f}" y="{top - 8:.1f}" font-size="11" fill="#1f2328" text-anchor="start" '
            f'transform="rotate(-45 {x:.1f} {top - 8:.1f})">{_esc(clip(col_model, 24))}</text>'
        )
    for i, row_model in enumerate(models):
        y = top + cell * i
        parts.append(_text(left - 8, y + cell / 2 + 4, clip(row_model, 30), anchor="end", size=12))
        row = list(matrix[i]) + [None] * n
        for j, col_model in enumerate(models):
            p = number(row[j]) if i != j else None
            parts.append(_p_cell(left + cell * j, y, cell, row_model, col_model, p))
    parts += _p_legend(left, top + cell * n + 30)
    parts.append("</svg>")
    return Markup("".join(parts))
