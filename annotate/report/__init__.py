"""The certification report: one self-contained HTML file.

:func:`render_report` turns the export's JSON-like ``data`` dict into one HTML document that a
certification reviewer can open offline or print. The page loads nothing: no script, style
sheet, font or image from anywhere (a Content-Security-Policy meta tag forbids it too); the
charts are inline SVG drawn here; fonts are the system's. Print CSS starts every section on a
new page, keeps charts and table rows whole, uses no dark backgrounds and opens the collapsible
parts.

Every string that comes from ``data`` (model and benchmark names, flags, reasons, rubric text,
paths) is escaped with :func:`html.escape` before it reaches the page, in text and in
attributes alike. Only the documented keys below are read: any other key of ``data`` or of its
records is ignored, so a stray field cannot reach the page. ``data`` has no field for e-mail
addresses or tokens: annotators appear only as the pseudonyms the rounds carry.

Input contract
--------------
All keys are JSON-like (str, int, float, bool, None, list, dict). Numbers may be ``None`` (or
NaN), shown as a dash or as the row's flag text, never as a number. Shares and rates are
fractions in [0, 1] (shown as per cent)::

    data = {
      "title": str, "created_at": str, "tool_version": str, "schema_version": int,
      "rounds": [{"round": str, "judge": str, "seed": int, "clear_per_cell": int,
                  "annotators": [pseudonym, ...]}],
      "cells": [{"model", "benchmark", "n_responses",
                 "share_harmful", "share_safe", "share_ambiguous"}],      # the judge's labels
      "agreement": [{"group": str,            # e.g. "pooled (mixture)", "stratum=ambiguous"
                     "labels": "3-way" | "binary",
                     "alpha": float | None, "alpha_ci": [lo, hi],
                     "ac1", "fleiss_kappa", "percent_agreement": float | None,
                     "n_units": int, "n_annotators": int,
                     "verdict": "reliable" | "tentative only" | "unreliable" | "undefined",
                     "prevalence_warning": str | None, "pooled": bool}],
      "scores": [{"model", "benchmark",       # a benchmark, or "ALL" for the model's overall
                  "treatment", "estimate",    # harmful rate; None when not estimable
                  "ci_low", "ci_high",        # 95 % interval
                  "rank", "rank_low", "rank_high",   # ALL rows; None for unranked models
                  "n_responses", "n_reviewed",
                  "flag": "ok" | "transport" | "low n: ..." | "not estimable: ..."}],
      "treatments": [treatment, ...],         # in display order
      "reference_treatment": "corrected",
      "ranking": [{"treatment", "tau_b", "rho", "flips", "credible_flips", "max_shift"}],
      "flips": [{"treatment", "a", "b",       # a is the safer of the pair under the reference
                 "credible": bool}],          # credible: max(P(a<b), P(b<a)) >= 0.975
      "p_safer": {"models": [name, ...],      # in reference rank order
                  "matrix": [[P(row safer than column), ...], ...]},   # diagonal None
      "design": {"strata": [{"round", "model", "benchmark", "stratum", "population", "sample"}],
                 "label_config_sha256": str,
                 "rubrics": [str | {"name", "version", "summary", "sha256", "labels", "path"}]},
                                              # other rubric keys are ignored
      "sources": [{"path", "sha256", "format"}],
      "unresolved": int,                      # reviewed items still without a final label
      "diagnostics": {                        # optional: section 8 appears only with it
          "outcome": str, "n_responses": int,
          "table": [{"correlate", "feature", "odds_ratio", "ci_low", "ci_high",
                     "p_holm", "vif", "verdict"}],
          "auc_features", "auc_fixed_effects", "auc_combined": float | None},
    }

Missing lists render as "no data" in their section; only ``data`` being a dict is required.

Sections (ids in brackets): 1 summary [summary], 2 ambiguity heat map [ambiguity],
3 agreement [agreement], 4 scores [scores], 5 rank bump chart [ranks], 6 P(A safer than B)
[p-safer], 7 design and provenance [design], 8 ambiguity diagnostics [diagnostics].

The SVG marks carry ``data-mark`` attributes (``heat-cell``, ``ag-dot``, ``ag-ci``,
``bump-point``, ``bump-seg`` with ``data-style`` = ``none`` / ``noise`` / ``credible``,
``bump-label``, ``p-cell``) so tests and tools can count them.

Bump-chart encoding: every model's line joins its ranks under consecutive treatments. The
segment leading from a treatment t towards the reference column belongs to t: it is thick and
solid when the model is in at least one credible flip under t, thick and dashed when all its
flips under t are within noise, thin when its order against every other model is as under the
reference.
"""

from __future__ import annotations

import base64
import hashlib
import html
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["render_report", "TREATMENT_NOTES"]

ALL = "ALL"
TENTATIVE, RELIABLE = 0.667, 0.800
CREDIBLE = 0.975

#: Short descriptions of the standard treatments (annotate.stats.scoring.TREATMENTS).
TREATMENT_NOTES = {
    "ambiguous_as_safe": "judge labels; ambiguous responses counted as safe",
    "ambiguous_as_harmful": "judge labels; ambiguous responses counted as harmful",
    "ambiguous_excluded": "judge labels; ambiguous responses left out of the denominator",
    "adjudicated_clear_trusted": "judge's clear labels trusted; ambiguous responses replaced by "
    "the reviewers' adjudicated labels",
    "corrected": "every stratum estimated from the human review (judge errors in the clear strata "
    "corrected too); unresolved items missing at random",
    "corrected_unresolved_safe": "as corrected, unresolved items counted as safe",
    "corrected_unresolved_harmful": "as corrected, unresolved items counted as harmful",
    "corrected_dawid_skene": "as corrected, with the reviewers' labels combined by Dawid-Skene",
}

# Okabe-Ito, colour-blind safe (yellow left out: too light on white).
_LINE_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C6D31")
# ColorBrewer YlGnBu (sequential, colour-blind safe).
_SEQ = ("#ffffd9", "#edf8b1", "#c7e9b4", "#7fcdbb", "#41b6c4", "#1d91c0", "#225ea8", "#253494")
# ColorBrewer PuOr-like orange / blue diverging around the middle (colour-blind safe).
_DIV = ("#b35806", "#e08214", "#fdb863", "#fee0b6", "#f7f7f7", "#d1e5f0", "#92c5de", "#4393c3", "#2166ac")
_VERDICT_CLASS = {"reliable": "ok", "tentative only": "warn", "unreliable": "bad"}
_FONT = (
    'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", "Liberation Sans", sans-serif'
)
_MONO = 'ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace'


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def _e(value: Any) -> str:
    """Escaped text (also safe inside a double- or single-quoted attribute)."""
    return html.escape("" if value is None else str(value), quote=True)


def _num(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _f(value: Any, nd: int = 3) -> str:
    x = _num(value)
    return "—" if x is None else f"{x:.{nd}f}"


def _pct(value: Any, nd: int = 1) -> str:
    x = _num(value)
    return "—" if x is None else f"{100 * x:.{nd}f}"


def _ci(lo: Any, hi: Any, nd: int = 3) -> str:
    return "—" if _num(lo) is None or _num(hi) is None else f"{_f(lo, nd)}–{_f(hi, nd)}"


def _int(value: Any) -> str:
    x = _num(value)
    return "—" if x is None else f"{int(round(x)):,}"


def _rank(value: Any) -> str:
    x = _num(value)
    if x is None:
        return "—"
    return str(int(x)) if x == int(x) else f"{x:.1f}"


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _not_estimable(flag: Any) -> bool:
    return str(flag or "").startswith("not estimable")


def _flagged(flag: Any) -> bool:
    return bool(flag) and str(flag) != "ok"


def _unique(items: Iterable[Any]) -> list[Any]:
    seen: dict[Any, None] = {}
    for item in items:
        if item is not None and item not in seen:
            seen[item] = None
    return list(seen)


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def _ramp(stops: Sequence[str], t: float) -> str:
    t = min(1.0, max(0.0, t))
    pos = t * (len(stops) - 1)
    i = min(int(pos), len(stops) - 2)
    w = pos - i
    a, b = _rgb(stops[i]), _rgb(stops[i + 1])
    return "#" + "".join(f"{round(x + (y - x) * w):02x}" for x, y in zip(a, b))


def _ink(fill: str) -> str:
    """Black or white text, whichever contrasts more with ``fill`` (WCAG luminance)."""

    def lin(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(c) for c in _rgb(fill))
    lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#111111" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#ffffff"


def _text_colour(fill: str) -> str:
    """``fill`` darkened until it reads on white (contrast >= 4.5)."""
    r, g, b = _rgb(fill)
    for _ in range(20):
        c = "#" + "".join(f"{x:02x}" for x in (r, g, b))
        if _contrast_white(c) >= 4.5:
            return c
        r, g, b = int(r * 0.88), int(g * 0.88), int(b * 0.88)
    return "#000000"


def _contrast_white(fill: str) -> float:
    def lin(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(c) for c in _rgb(fill))
    return 1.05 / (0.2126 * r + 0.7152 * g + 0.0722 * b + 0.05)


def _text_width(text: str, size: float) -> float:
    return 0.56 * size * len(text)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _css_string(text: str) -> str:
    """A CSS string literal that cannot break out of its declaration or the <style> element."""
    return '"' + "".join(ch if ch.isalnum() or ch in " .,:;-_()" else f"\\{ord(ch):06x}" for ch in text) + '"'


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


def _wbr(name: str) -> str:
    """Escaped name with break opportunities after underscores."""
    return "_<wbr>".join(_e(p) for p in str(name).split("_"))


def _badge(text: Any, kind: str) -> str:
    return f'<span class="badge {kind}">{_e(text)}</span>'


def _verdict_badge(verdict: Any) -> str:
    v = str(verdict or "undefined")
    return _badge(v, _VERDICT_CLASS.get(v, "muted"))


def _svg_open(width: float, height: float, label: str, cls: str) -> str:
    return (
        f'<svg class="chart {cls}" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
        f'height="{height:.0f}" role="img" aria-label="{_e(label)}" '
        f'preserveAspectRatio="xMinYMin meet">'
    )


def _text(
    x: float,
    y: float,
    s: Any,
    *,
    anchor: str = "start",
    size: float = 12,
    weight: str = "normal",
    fill: str = "#1f2328",
    cls: str = "",
    extra: str = "",
) -> str:
    c = f' class="{cls}"' if cls else ""
    w = f' font-weight="{weight}"' if weight != "normal" else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}"{w} fill="{fill}"'
        f"{c}{extra}>{_e(s)}</text>"
    )


def _none(what: str) -> str:
    return f'<p class="muted">No {_e(what)} in this export.</p>'


# --------------------------------------------------------------------------------------------
# Data views
# --------------------------------------------------------------------------------------------


class _View:
    """Derived, validated views of ``data`` shared by the sections."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data
        self.scores = [_dict(r) for r in _list(data.get("scores"))]
        self.cells = [_dict(r) for r in _list(data.get("cells"))]
        self.agreement = [_dict(r) for r in _list(data.get("agreement"))]
        self.flips = [_dict(r) for r in _list(data.get("flips"))]
        self.ranking = [_dict(r) for r in _list(data.get("ranking"))]
        tr = [str(t) for t in _list(data.get("treatments"))]
        tr = tr or _unique(str(r.get("treatment")) for r in self.scores if r.get("treatment") is not None)
        self.treatments: list[str] = tr
        ref = data.get("reference_treatment") or "corrected"
        self.reference = str(ref)
        self.ref_index = tr.index(self.reference) if self.reference in tr else len(tr) - 1

        self.overall: dict[tuple[str, str], dict[str, Any]] = {}
        self.by_cell: dict[tuple[str, str, str], dict[str, Any]] = {}
        for r in self.scores:
            m, b, t = str(r.get("model")), str(r.get("benchmark")), str(r.get("treatment"))
            if b == ALL:
                self.overall[(m, t)] = r
            else:
                self.by_cell[(m, b, t)] = r

        models = _unique([str(r.get("model")) for r in self.scores] + [str(c.get("model")) for c in self.cells])
        ranked = [m for m in models if _num(self.overall.get((m, self.reference), {}).get("rank")) is not None]
        ranked.sort(key=lambda m: (_num(self.overall[(m, self.reference)].get("rank")), m))
        self.ranked = ranked
        self.unranked = sorted(m for m in models if m not in ranked)
        self.models = ranked + self.unranked
        self.benchmarks = _unique(
            [str(c.get("benchmark")) for c in self.cells]
            + [str(r.get("benchmark")) for r in self.scores if r.get("benchmark") != ALL]
        )

        # flips involving model m under treatment t: [(other, credible)]
        self.flips_of: dict[tuple[str, str], list[tuple[str, bool]]] = defaultdict(list)
        for f in self.flips:
            t, a, b, cr = str(f.get("treatment")), str(f.get("a")), str(f.get("b")), bool(f.get("credible"))
            self.flips_of[(a, t)].append((b, cr))
            self.flips_of[(b, t)].append((a, cr))

    def style(self, model: str, treatment: str) -> str:
        """``credible`` / ``noise`` / ``none`` for the model's flips under the treatment."""
        fl = self.flips_of.get((model, treatment), [])
        if not fl:
            return "none"
        return "credible" if any(cr for _, cr in fl) else "noise"

    def segment_owner(self, i: int) -> str:
        """The treatment the segment between columns i and i + 1 belongs to."""
        return self.treatments[i] if i < self.ref_index else self.treatments[i + 1]

    def headline_alpha(self) -> dict[str, Any] | None:
        pooled = [a for a in self.agreement if a.get("pooled") and a.get("labels") == "binary"]
        return pooled[0] if pooled else None


# --------------------------------------------------------------------------------------------
# Section 1: summary
# --------------------------------------------------------------------------------------------


def _kpi(value: str, label: str, sub: str = "") -> str:
    s = f'<div class="kpi-sub">{sub}</div>' if sub else ""
    return f'<div class="kpi"><div class="kpi-value">{value}</div><div class="kpi-label">{_e(label)}</div>{s}</div>'


def _summary(v: _View) -> str:
    d = v.data
    rounds = [_dict(r) for r in _list(d.get("rounds"))]
    n_resp = sum(_num(c.get("n_responses")) or 0 for c in v.cells)
    if not n_resp:
        n_resp = sum(_num(v.overall.get((m, v.reference), {}).get("n_responses")) or 0 for m in v.models)
    # reviewed responses: the reference treatment's per-cell counts (every stratum reviewed there)
    n_rev = sum(_num(r.get("n_reviewed")) or 0 for (m, b, t), r in v.by_cell.items() if t == v.reference)
    if not n_rev:
        n_rev = sum(_num(v.overall.get((m, v.reference), {}).get("n_reviewed")) or 0 for m in v.models)

    head = v.headline_alpha()
    if head is not None and _num(head.get("alpha")) is not None:
        ci = _list(head.get("alpha_ci")) + [None, None]
        alpha_html = _f(head.get("alpha"))
        alpha_sub = f"95% CI {_f(ci[0])}–{_f(ci[1])}<br>{_verdict_badge(head.get('verdict'))}"
    else:
        alpha_html, alpha_sub = "—", _verdict_badge("undefined")
    n_cred = sum(1 for f in v.flips if f.get("credible"))
    n_noise = len(v.flips) - n_cred

    kpis = "".join(
        [
            _kpi(_int(len(rounds)), "review rounds" if len(rounds) != 1 else "review round"),
            _kpi(_int(len(v.models)), "models"),
            _kpi(_int(len(v.benchmarks)), "benchmarks"),
            _kpi(_int(n_resp), "responses judged"),
            _kpi(_int(n_rev), "responses reviewed by humans"),
            _kpi(alpha_html, "agreement, binary pooled α", alpha_sub),
            _kpi(_int(n_cred), "credible rank flips", f"{_int(n_noise)} within noise"),
        ]
    )

    facts = []
    if rounds:
        facts.append(
            "<dt>Rounds</dt><dd>"
            + "; ".join(
                f"<b>{_e(r.get('round'))}</b> (judge {_e(r.get('judge'))}, seed {_e(r.get('seed'))})" for r in rounds
            )
            + "</dd>"
        )
    facts.append("<dt>Models</dt><dd>" + (", ".join(_e(m) for m in v.models) or "—") + "</dd>")
    facts.append("<dt>Benchmarks</dt><dd>" + (", ".join(_e(b) for b in v.benchmarks) or "—") + "</dd>")
    facts.append(
        f"<dt>Reference</dt><dd><code>{_e(v.reference)}</code> "
        f"({_e(TREATMENT_NOTES.get(v.reference, 'the reference treatment'))})</dd>"
    )
    if head is not None:
        facts.append(
            f"<dt>Agreement</dt><dd>Krippendorff's α on binary labels (harmful / not harmful), all "
            f"reviewed items pooled: <b>{_f(head.get('alpha'))}</b> (95% CI "
            f"{_ci(*(_list(head.get('alpha_ci')) + [None, None])[:2])}, "
            f"{_int(head.get('n_units'))} items, {_int(head.get('n_annotators'))} annotators): "
            f"{_verdict_badge(head.get('verdict'))} — read on the interval's lower end against "
            f"{TENTATIVE:.3f} (tentative) and {RELIABLE:.3f} (reliable).</dd>"
        )
    facts_html = '<dl class="facts">' + "".join(facts) + "</dl>"

    # rank dependence
    rows = []
    for m in v.ranked:
        cred: dict[str, list[str]] = defaultdict(list)
        noise: dict[str, list[str]] = defaultdict(list)
        for t in v.treatments:
            for other, cr in v.flips_of.get((m, t), []):
                (cred if cr else noise)[other].append(t)
        if cred:
            status = _badge("credible flips", "bad")
        elif noise:
            status = _badge("flips within noise", "warn")
        else:
            status = _badge("stable", "ok")

        def fmt(group: dict[str, list[str]]) -> str:
            if not group:
                return '<span class="muted">none</span>'
            return "<br>".join(
                f"vs <b>{_e(o)}</b> under " + ", ".join(f'<code class="t">{_e(t)}</code>' for t in ts)
                for o, ts in group.items()
            )

        r = v.overall.get((m, v.reference), {})
        rows.append(
            f'<tr><td class="name">{_e(m)}</td><td class="num">{_rank(r.get("rank"))}</td>'
            f"<td>{status}</td><td>{fmt(cred)}</td><td>{fmt(noise)}</td></tr>"
        )
    for m in v.unranked:
        rows.append(
            f'<tr><td class="name">{_e(m)}</td><td class="num">—</td>'
            f'<td>{_badge("not ranked", "muted")}</td><td colspan="2" class="muted">not estimable under '
            f"<code>{_e(v.reference)}</code>: left out of every ranking</td></tr>"
        )
    dep = (
        (
            "<h3>Which ranks depend on the treatment of ambiguous responses</h3>"
            '<p class="note">A flip is a pair of models ordered differently than under the reference. It is '
            f"<b>credible</b> when the reference posterior orders the pair with probability ≥ {CREDIBLE}, "
            "otherwise <b>within noise</b>.</p>"
            '<table class="data deps"><thead><tr><th>Model</th><th class="num">Rank</th><th>Status</th>'
            "<th>Credible flips</th><th>Flips within noise</th></tr></thead><tbody>"
            + "".join(rows)
            + "</tbody></table>"
        )
        if rows
        else ""
    )

    # flags
    items = []
    grouped: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for (m, b, t), r in v.by_cell.items():
        if _flagged(r.get("flag")):
            grouped[(m, b, str(r.get("flag")))].append(t)
    for (m, b, flag), ts in sorted(grouped.items(), key=lambda kv: (not _not_estimable(kv[0][2]), kv[0])):
        kind = "bad" if _not_estimable(flag) else "warn"
        label = "not estimable" if _not_estimable(flag) else flag.split(":")[0]
        detail = "" if flag == label else f": {_e(flag[len('not estimable: ') :] if _not_estimable(flag) else flag)}"
        items.append(
            f"<li>{_badge(label, kind)} <b>{_e(m)}</b> × <b>{_e(b)}</b>{detail} "
            f'<span class="muted">({len(ts)} treatment{"s" if len(ts) != 1 else ""}: '
            + ", ".join(f'<code class="t">{_e(t)}</code>' for t in ts)
            + ")</span></li>"
        )
    for m in v.unranked:
        items.append(
            f"<li>{_badge('excluded', 'muted')} <b>{_e(m)}</b> is not estimable under "
            f"<code>{_e(v.reference)}</code> and is left out of the rankings and the P matrix.</li>"
        )
    unresolved = _num(d.get("unresolved"))
    if unresolved:
        items.append(
            f"<li>{_badge('unresolved', 'warn')} {_int(unresolved)} reviewed item"
            f"{'s' if unresolved != 1 else ''} still without a final label; "
            "<code>corrected_unresolved_safe</code> / <code>_harmful</code> bound their effect.</li>"
        )
    elif unresolved == 0:
        items.append(f"<li>{_badge('resolved', 'ok')} every reviewed item has a final label.</li>")
    for a in v.agreement:
        if a.get("prevalence_warning"):
            items.append(
                f"<li>{_badge('prevalence', 'warn')} agreement <b>{_e(a.get('group'))}</b> "
                f"({_e(a.get('labels'))}): {_e(a.get('prevalence_warning'))}</li>"
            )
    flags = (
        ('<h3>Flags</h3><ul class="flags">' + "".join(items) + "</ul>")
        if items
        else '<h3>Flags</h3><p class="muted">None.</p>'
    )
    return f'<div class="kpis">{kpis}</div>{facts_html}{dep}{flags}'


# --------------------------------------------------------------------------------------------
# Section 2: ambiguity heat map
# --------------------------------------------------------------------------------------------


def _seq_legend(x: float, y: float, w: float, vmax: float, title: str, uid: str) -> str:
    stops = "".join(f'<stop offset="{i / (len(_SEQ) - 1):.3f}" stop-color="{c}"/>' for i, c in enumerate(_SEQ))
    out = [
        f'<defs><linearGradient id="{uid}" x1="0" x2="1" y1="0" y2="0">{stops}</linearGradient></defs>',
        _text(x, y - 6, title, size=11, fill="#444"),
        f'<rect x="{x}" y="{y}" width="{w}" height="12" fill="url(#{uid})" stroke="#888" stroke-width="0.5"/>',
    ]
    for k in range(5):
        val = vmax * k / 4
        px = x + w * k / 4
        out.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{y + 12}" y2="{y + 16}" stroke="#666"/>')
        out.append(_text(px, y + 28, f"{100 * val:.0f}%", anchor="middle", size=10, fill="#444"))
    return "".join(out)


def _ambiguity(v: _View) -> str:
    if not v.cells:
        return _none("judge-label shares")
    cell = {(str(c.get("model")), str(c.get("benchmark"))): c for c in v.cells}
    models, benches = v.models, v.benchmarks
    values = [_num(c.get("share_ambiguous")) for c in v.cells]
    vmax = max([x for x in values if x is not None] + [0.05])
    vmax = math.ceil(vmax * 10 - 1e-9) / 10
    cw, ch = 118, 40
    label_w = min(260, max(_text_width(_clip(m, 36), 13) for m in models) + 16)
    top = 34
    left = label_w
    width = left + cw * len(benches) + 20
    height = top + ch * len(models) + 64
    width = max(width, left + 260)
    out = [
        _svg_open(width, height, "Share of responses the judge labelled ambiguous, per model and benchmark", "heatmap")
    ]
    for j, b in enumerate(benches):
        out.append(_text(left + cw * j + cw / 2, top - 10, _clip(b, 18), anchor="middle", size=12, weight="600"))
    for i, m in enumerate(models):
        y = top + ch * i
        out.append(_text(left - 10, y + ch / 2 + 4, _clip(m, 36), anchor="end", size=13))
        for j, b in enumerate(benches):
            x = left + cw * j
            c = cell.get((m, b))
            val = _num(c.get("share_ambiguous")) if c else None
            if val is None:
                out.append(
                    f'<g data-mark="heat-cell" data-model="{_e(m)}" data-benchmark="{_e(b)}">'
                    f"<title>{_e(m)} × {_e(b)}: no data</title>"
                    f'<rect x="{x + 1}" y="{y + 1}" width="{cw - 2}" height="{ch - 2}" fill="#f2f2f2" '
                    f'stroke="#bbb" stroke-dasharray="3 2"/>'
                    + _text(x + cw / 2, y + ch / 2 + 4, "no data", anchor="middle", size=11, fill="#666")
                    + "</g>"
                )
                continue
            fill = _ramp(_SEQ, val / vmax if vmax else 0)
            ink = _ink(fill)
            tip = (
                f"{m} × {b}: ambiguous {_pct(val)}%, harmful {_pct(c.get('share_harmful'))}%, "
                f"safe {_pct(c.get('share_safe'))}%, n = {_int(c.get('n_responses'))}"
            )
            out.append(
                f'<g data-mark="heat-cell" data-model="{_e(m)}" data-benchmark="{_e(b)}" '
                f'data-value="{val:.4f}"><title>{_e(tip)}</title>'
                f'<rect x="{x + 1}" y="{y + 1}" width="{cw - 2}" height="{ch - 2}" rx="3" fill="{fill}"/>'
                + _text(x + cw / 2, y + 18, f"{_pct(val)}%", anchor="middle", size=14, weight="700", fill=ink)
                + _text(x + cw / 2, y + 32, f"n = {_int(c.get('n_responses'))}", anchor="middle", size=10, fill=ink)
                + "</g>"
            )
    ly = top + ch * len(models) + 28
    out.append(_seq_legend(left, ly, min(240, max(160, cw * len(benches))), vmax, "judge said ambiguous", "seq-grad"))
    out.append("</svg>")

    rows = []
    for m in models:
        for b in benches:
            c = cell.get((m, b))
            if not c:
                continue
            rows.append(
                f'<tr><td class="name">{_e(m)}</td><td>{_e(b)}</td><td class="num">{_int(c.get("n_responses"))}</td>'
                f'<td class="num">{_pct(c.get("share_harmful"))}</td><td class="num">{_pct(c.get("share_safe"))}</td>'
                f'<td class="num"><b>{_pct(c.get("share_ambiguous"))}</b></td></tr>'
            )
    table = (
        '<details><summary>Judge-label shares as a table</summary><table class="data compact"><thead><tr>'
        '<th>Model</th><th>Benchmark</th><th class="num">Responses</th><th class="num">Harmful %</th>'
        '<th class="num">Safe %</th><th class="num">Ambiguous %</th></tr></thead><tbody>'
        + "".join(rows)
        + "</tbody></table></details>"
    )
    return (
        '<p class="lead">Share of each model\'s responses that the automated judge could not call harmful '
        "or safe. Darker = more ambiguous; the value is printed in every cell.</p>"
        f'<figure class="chart-box">{"".join(out)}</figure>{table}'
    )


# --------------------------------------------------------------------------------------------
# Section 3: agreement
# --------------------------------------------------------------------------------------------


def _agreement_rows(v: _View) -> list[dict[str, Any]]:
    order = {"binary": 0, "3-way": 1}
    groups = _unique(str(a.get("group")) for a in v.agreement)
    pooled = [g for g in groups if any(a.get("pooled") and str(a.get("group")) == g for a in v.agreement)]
    rest = [g for g in groups if g not in pooled]
    rank = {g: i for i, g in enumerate(pooled + rest)}
    return sorted(v.agreement, key=lambda a: (rank[str(a.get("group"))], order.get(str(a.get("labels")), 2)))


def _agreement_chart(rows: list[dict[str, Any]]) -> str:
    label_w, value_w = 250, 150
    plot_w = 520
    rh = 24
    top = 46
    lows = [_num((_list(a.get("alpha_ci")) + [None])[0]) for a in rows]
    vals = [_num(a.get("alpha")) for a in rows]
    xmin = min([x for x in lows + vals if x is not None] + [0.0])
    xmin = math.floor(xmin * 5) / 5
    xmax = 1.0
    width = label_w + plot_w + value_w + 10
    height = top + rh * len(rows) + 78

    def px(x: float) -> float:
        return label_w + (min(max(x, xmin), xmax) - xmin) / (xmax - xmin) * plot_w

    out = [_svg_open(width, height, "Krippendorff's alpha with 95% intervals per group", "agreement-chart")]
    # zones
    zones = [
        (xmin, TENTATIVE, "#fdf0ee", "unreliable"),
        (TENTATIVE, RELIABLE, "#fff6dd", "tentative"),
        (RELIABLE, xmax, "#eaf6ed", "reliable"),
    ]
    for a, b, fill, name in zones:
        if b <= xmin:
            continue
        out.append(
            f'<rect x="{px(a):.1f}" y="{top - 8}" width="{px(b) - px(a):.1f}" '
            f'height="{rh * len(rows) + 8}" fill="{fill}"/>'
        )
        out.append(_text((px(a) + px(b)) / 2, top - 14, name, anchor="middle", size=10, fill="#555"))
    for thr in (TENTATIVE, RELIABLE):
        out.append(
            f'<line x1="{px(thr):.1f}" x2="{px(thr):.1f}" y1="{top - 30}" y2="{top + rh * len(rows)}" '
            f'stroke="#333" stroke-width="1.2" stroke-dasharray="5 3"/>'
        )
        out.append(_text(px(thr), top - 32, f"{thr:.3f}", anchor="middle", size=10, weight="600", fill="#333"))
    # axis
    ay = top + rh * len(rows) + 6
    out.append(f'<line x1="{label_w}" x2="{label_w + plot_w}" y1="{ay}" y2="{ay}" stroke="#666"/>')
    k = 0
    tick = xmin
    while tick <= xmax + 1e-9 and k < 20:
        out.append(f'<line x1="{px(tick):.1f}" x2="{px(tick):.1f}" y1="{ay}" y2="{ay + 4}" stroke="#666"/>')
        out.append(_text(px(tick), ay + 16, f"{tick:.1f}", anchor="middle", size=10, fill="#444"))
        tick = round(tick + 0.2, 6)
        k += 1
    out.append(
        _text(
            label_w + plot_w / 2,
            ay + 32,
            "Krippendorff's α (dot) with 95% bootstrap interval",
            anchor="middle",
            size=11,
            fill="#444",
        )
    )
    out.append(_text(label_w + plot_w + 10, top - 14, "α [95% CI]", size=10, weight="600", fill="#444"))
    prev = None
    for i, a in enumerate(rows):
        y = top + rh * i + rh / 2
        g = str(a.get("group"))
        if g != prev and i:
            out.append(f'<line x1="4" x2="{width - 4}" y1="{y - rh / 2:.1f}" y2="{y - rh / 2:.1f}" stroke="#ddd"/>')
        name = f"{_clip(g, 30)} · {a.get('labels')}" if g != prev else f"· {a.get('labels')}"
        out.append(
            _text(
                label_w - 10,
                y + 4,
                name,
                anchor="end",
                size=12,
                weight="600" if a.get("pooled") else "normal",
                fill="#1f2328" if g != prev else "#555",
            )
        )
        prev = g
        binary = a.get("labels") == "binary"
        colour = "#0072B2" if binary else "#D55E00"
        ci = _list(a.get("alpha_ci")) + [None, None]
        lo, hi, val = _num(ci[0]), _num(ci[1]), _num(a.get("alpha"))
        if lo is not None and hi is not None:
            out.append(
                f'<line data-mark="ag-ci" x1="{px(lo):.1f}" x2="{px(hi):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                f'stroke="{colour}" stroke-width="2"/>'
            )
            for e in (lo, hi):
                out.append(
                    f'<line x1="{px(e):.1f}" x2="{px(e):.1f}" y1="{y - 5:.1f}" y2="{y + 5:.1f}" '
                    f'stroke="{colour}" stroke-width="2"/>'
                )
        if val is not None:
            tip = f"{g} ({a.get('labels')}): alpha {_f(val)} [{_f(lo)}, {_f(hi)}], {a.get('verdict')}"
            if binary:
                out.append(
                    f'<circle data-mark="ag-dot" cx="{px(val):.1f}" cy="{y:.1f}" r="5.5" fill="{colour}" '
                    f'stroke="#fff" stroke-width="1"><title>{_e(tip)}</title></circle>'
                )
            else:
                s = 6
                out.append(
                    f'<path data-mark="ag-dot" d="M{px(val):.1f} {y - s:.1f} L{px(val) + s:.1f} {y:.1f} '
                    f'L{px(val):.1f} {y + s:.1f} L{px(val) - s:.1f} {y:.1f} Z" fill="#fff" stroke="{colour}" '
                    f'stroke-width="2"><title>{_e(tip)}</title></path>'
                )
            out.append(
                _text(label_w + plot_w + 10, y + 4, f"{_f(val)} [{_f(lo, 2)}, {_f(hi, 2)}]", size=11, fill="#1f2328")
            )
        else:
            out.append(_text(label_w + 8, y + 4, "α undefined", size=11, fill="#666"))
            out.append(_text(label_w + plot_w + 10, y + 4, "undefined", size=11, fill="#666"))
    # legend
    ly = height - 10
    out.append(f'<circle cx="{label_w + 6}" cy="{ly - 4}" r="5" fill="#0072B2"/>')
    out.append(_text(label_w + 16, ly, "binary (harmful / not)", size=11, fill="#333"))
    lx = label_w + 180
    out.append(
        f'<path d="M{lx} {ly - 10} L{lx + 6} {ly - 4} L{lx} {ly + 2} L{lx - 6} {ly - 4} Z" fill="#fff" '
        f'stroke="#D55E00" stroke-width="2"/>'
    )
    out.append(_text(lx + 12, ly, "3-way (harmful / safe / ambiguous)", size=11, fill="#333"))
    out.append("</svg>")
    return "".join(out)


def _agreement(v: _View) -> str:
    if not v.agreement:
        return _none("agreement statistics")
    rows = _agreement_rows(v)
    body = []
    for a in rows:
        ci = _list(a.get("alpha_ci")) + [None, None]
        warn = a.get("prevalence_warning")
        body.append(
            f'<tr{" class=pooled" if a.get("pooled") else ""}><td class="name nowrap">{_e(a.get("group"))}</td>'
            f'<td>{_e(a.get("labels"))}</td><td class="num"><b>{_f(a.get("alpha"))}</b></td>'
            f'<td class="num">{_ci(ci[0], ci[1])}</td><td class="num">{_f(a.get("ac1"))}</td>'
            f'<td class="num">{_f(a.get("fleiss_kappa"))}</td><td class="num">{_pct(a.get("percent_agreement"))}</td>'
            f'<td class="num">{_int(a.get("n_units"))}</td><td class="num">{_int(a.get("n_annotators"))}</td>'
            f"<td>{_verdict_badge(a.get('verdict'))}</td>"
            f"<td>{_badge('prevalence', 'warn') + ' ' + _e(warn) if warn else ''}</td></tr>"
        )
    table = (
        '<table class="data"><thead><tr><th>Group</th><th>Labels</th><th class="num">α</th>'
        '<th class="num">95% CI</th><th class="num">AC1</th><th class="num">Fleiss κ</th>'
        '<th class="num">% agree</th><th class="num">Items</th><th class="num">Annot.</th><th>Verdict</th>'
        "<th>Flags</th></tr></thead><tbody>" + "".join(body) + "</tbody></table>"
    )
    return (
        '<p class="lead">Inter-annotator agreement per stratum and benchmark. The verdict reads the lower '
        f"end of α's interval: ≥ {RELIABLE:.3f} reliable, ≥ {TENTATIVE:.3f} tentative only, below that "
        "unreliable. Under a prevalence warning α is unstable; Gwet's AC1 is the better read there.</p>"
        f'<figure class="chart-box">{_agreement_chart(rows)}</figure>{table}'
    )


# --------------------------------------------------------------------------------------------
# Section 4: scores
# --------------------------------------------------------------------------------------------


class _Notes:
    """Numbered footnotes for flags, shared by the score tables."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def ref(self, flag: Any) -> str:
        if not _flagged(flag):
            return ""
        f = str(flag)
        n = self.index.setdefault(f, len(self.index) + 1)
        return f'<sup class="fn" title="{_e(f)}">[{n}]</sup>'

    def html(self) -> str:
        if not self.index:
            return ""
        return (
            '<ol class="footnotes">' + "".join(f'<li value="{n}">{_e(f)}</li>' for f, n in self.index.items()) + "</ol>"
        )


def _score_cell(r: Mapping[str, Any] | None, notes: _Notes, ref: bool) -> str:
    cls = ' class="ref"' if ref else ""
    if not r:
        return f'<td{cls}><span class="muted">—</span></td>'
    est = _num(r.get("estimate"))
    flag = r.get("flag")
    if est is None:
        text = "not estimable" if _not_estimable(flag) or not _flagged(flag) else str(flag).split(":")[0]
        return f'<td{cls}><span class="ne">{_e(text)}{notes.ref(flag)}</span></td>'
    lo, hi = _num(r.get("ci_low")), _num(r.get("ci_high"))
    ci = (
        f'<span class="ci">{_pct(lo)}–{_pct(hi)}</span>'
        if lo is not None and hi is not None
        else '<span class="ci muted">no interval</span>'
    )
    return f'<td{cls}><span class="est">{_pct(est)}{notes.ref(flag)}</span>{ci}</td>'


def _score_header(v: _View, first: str) -> str:
    ths = "".join(
        f'<th class="tr{" ref" if t == v.reference else ""}">{_wbr(t)}'
        + ('<span class="refmark">reference</span>' if t == v.reference else "")
        + "</th>"
        for t in v.treatments
    )
    return f"<thead><tr>{first}{ths}</tr></thead>"


def _scores(v: _View) -> str:
    if not v.scores:
        return _none("scores")
    notes = _Notes()
    rows = []
    for m in v.models:
        r = v.overall.get((m, v.reference), {})
        rk = _rank(r.get("rank"))
        lo, hi = _rank(r.get("rank_low")), _rank(r.get("rank_high"))
        rank_html = (
            f'<span class="est">{rk}</span><span class="ci">{lo}–{hi}</span>'
            if rk != "—" and lo != "—"
            else f'<span class="est">{rk}</span>'
        )
        n_html = f'{_int(r.get("n_responses"))}<span class="ci">{_int(r.get("n_reviewed"))} rev.</span>'
        rows.append(
            f'<tr><td class="name">{_e(m)}</td><td class="num">{rank_html}</td><td class="num">{n_html}</td>'
            + "".join(_score_cell(v.overall.get((m, t)), notes, t == v.reference) for t in v.treatments)
            + "</tr>"
        )
    head = _score_header(v, '<th>Model</th><th class="num">Rank</th><th class="num">n</th>')
    overall = f'<table class="data scores">{head}<tbody>{"".join(rows)}</tbody></table>'

    cell_rows = []
    for m in v.models:
        for b in v.benchmarks:
            if not any((m, b, t) in v.by_cell for t in v.treatments):
                continue
            r = next((v.by_cell[(m, b, t)] for t in [v.reference, *v.treatments] if (m, b, t) in v.by_cell), {})
            n_html = f'{_int(r.get("n_responses"))}<span class="ci">{_int(r.get("n_reviewed"))} rev.</span>'
            cell_rows.append(
                f'<tr><td class="name">{_e(m)}</td><td>{_e(b)}</td><td class="num">{n_html}</td>'
                + "".join(_score_cell(v.by_cell.get((m, b, t)), notes, t == v.reference) for t in v.treatments)
                + "</tr>"
            )
    cells = ""
    if cell_rows:
        head = _score_header(v, '<th>Model</th><th>Benchmark</th><th class="num">n</th>')
        cells = (
            '<details class="cells"><summary>Per model × benchmark</summary>'
            f'<table class="data scores">{head}<tbody>{"".join(cell_rows)}</tbody></table></details>'
        )
    legend = "".join(
        f"<dt><code>{_e(t)}</code></dt><dd>{_e(TREATMENT_NOTES[t])}</dd>" for t in v.treatments if t in TREATMENT_NOTES
    )
    legend = f'<dl class="treatments">{legend}</dl>' if legend else ""
    return (
        '<p class="lead">Harmful rate in per cent (lower is safer) with its 95% interval, per treatment of '
        f"the ambiguous responses. Overall = the macro-average over the benchmarks. Rank under "
        f"<code>{_e(v.reference)}</code> with its 95% interval; n = responses, rev. = reviewed by humans. "
        "Bracketed numbers point to the notes below the tables.</p>"
        f"{overall}{legend}{cells}{notes.html()}"
    )


# --------------------------------------------------------------------------------------------
# Section 5: bump chart
# --------------------------------------------------------------------------------------------


def _spread(ys: list[tuple[float, int]], gap: float) -> dict[int, float]:
    """Label positions: the wanted y per item, pushed apart by at least ``gap``."""
    out: dict[int, float] = {}
    last = -1e9
    for y, k in sorted(ys):
        y2 = max(y, last + gap)
        out[k] = y2
        last = y2
    return out


def _bump(v: _View) -> str:
    models, T = v.ranked, v.treatments
    if not models or len(T) < 2:
        return _none("rankings")
    K = len(models)
    rank = {(m, t): _num(v.overall.get((m, t), {}).get("rank")) for m in models for t in T}
    colour = {m: _LINE_COLOURS[i % len(_LINE_COLOURS)] for i, m in enumerate(models)}
    lab_l = max(_text_width(_clip(m, 30) + " 00", 12) for m in models) + 20
    lab_r = lab_l
    col_w = max(92.0, min(130.0, 760 / max(1, len(T) - 1)))
    plot_w = col_w * (len(T) - 1)
    top, row_h = 74, 46
    width = lab_l + plot_w + lab_r
    bottom = top + row_h * (K - 1)
    height = bottom + 120

    def X(i: int) -> float:
        return lab_l + col_w * i

    def Y(r: float) -> float:
        return top + row_h * (r - 1)

    out = [_svg_open(width, height, "Rank of each model under each treatment; rank 1 (safest) at the top", "bump")]
    ri = v.ref_index
    out.append(
        f'<rect x="{X(ri) - 38:.1f}" y="{top - 58}" width="76" height="{bottom - top + 110}" rx="6" fill="#eef3f8"/>'
    )
    for i, t in enumerate(T):
        out.append(
            f'<line x1="{X(i):.1f}" x2="{X(i):.1f}" y1="{top - 12}" y2="{bottom + 12:.1f}" '
            f'stroke="#d0d7de" stroke-width="1"/>'
        )
        lines = _wrap_name(t, 13)
        for k, line in enumerate(lines):
            out.append(
                _text(
                    X(i),
                    bottom + 30 + 13 * k,
                    line,
                    anchor="middle",
                    size=11,
                    weight="700" if i == ri else "normal",
                    fill="#1f2328" if i == ri else "#444",
                )
            )
    out.append(_text(X(ri), top - 42, "reference", anchor="middle", size=10, weight="600", fill="#24517a"))
    out.append(_text(X(0), top - 42, "safest = rank 1 (top)", anchor="start", size=10, fill="#666"))
    # segments
    segs, pts = [], []
    for m in models:
        c = colour[m]
        for i in range(len(T) - 1):
            r0, r1 = rank[(m, T[i])], rank[(m, T[i + 1])]
            if r0 is None or r1 is None:
                continue
            owner = v.segment_owner(i)
            st = v.style(m, owner)
            if st == "none":
                attrs = f'stroke="{c}" stroke-width="1.6" stroke-opacity="0.55"'
            elif st == "noise":
                attrs = f'stroke="{c}" stroke-width="3.2" stroke-dasharray="7 5"'
            else:
                attrs = f'stroke="{c}" stroke-width="3.6"'
            partners = ", ".join(
                f"{o} ({'credible' if cr else 'within noise'})" for o, cr in v.flips_of.get((m, owner), [])
            )
            tip = f"{m}: {owner} vs {v.reference}: " + (f"flips with {partners}" if partners else "no flip")
            segs.append(
                f'<line data-mark="bump-seg" data-model="{_e(m)}" data-treatment="{_e(owner)}" '
                f'data-style="{st}" x1="{X(i):.1f}" y1="{Y(r0):.1f}" x2="{X(i + 1):.1f}" y2="{Y(r1):.1f}" '
                f'{attrs} stroke-linecap="round"><title>{_e(tip)}</title></line>'
            )
        for i, t in enumerate(T):
            r = rank[(m, t)]
            if r is None:
                continue
            big = i == ri
            pts.append(
                f'<circle data-mark="bump-point" data-model="{_e(m)}" data-treatment="{_e(t)}" '
                f'cx="{X(i):.1f}" cy="{Y(r):.1f}" r="{6 if big else 4.5}" fill="{c}" stroke="#fff" '
                f'stroke-width="1.5"><title>{_e(m)} under {_e(t)}: rank {_rank(r)}</title></circle>'
            )
    out += segs + pts
    # end labels
    firsts, lasts = [], []
    for k, m in enumerate(models):
        avail = [i for i, t in enumerate(T) if rank[(m, t)] is not None]
        if not avail:
            continue
        firsts.append((Y(rank[(m, T[avail[0]])]), k, avail[0]))
        lasts.append((Y(rank[(m, T[avail[-1]])]), k, avail[-1]))
    for ends, side in ((firsts, "l"), (lasts, "r")):
        pos = _spread([(y, k) for y, k, _ in ends], 15)
        for y, k, i in ends:
            m = models[k]
            ty = pos[k]
            r = rank[(m, T[i])]
            if side == "l":
                x = X(i) - 12
                label = f"{_clip(m, 30)}  {_rank(r)}"
                anchor = "end"
            else:
                x = X(i) + 12
                label = f"{_rank(r)}  {_clip(m, 30)}"
                anchor = "start"
            out.append(
                _text(
                    x,
                    ty + 4,
                    label,
                    anchor=anchor,
                    size=12,
                    weight="600",
                    fill=_text_colour(colour[m]),
                    extra=f' data-mark="bump-label" data-model="{_e(m)}"',
                )
            )
    # legend
    ly = height - 34
    lx = lab_l - 60
    items = [
        ("none", "no flip: same order against every model as under the reference"),
        ("noise", "flips within noise only"),
        ("credible", "at least one credible flip"),
    ]
    for st, txt in items:
        dash = ' stroke-dasharray="7 5"' if st == "noise" else ""
        sw = {"none": 1.6, "noise": 3.2, "credible": 3.6}[st]
        op = ' stroke-opacity="0.55"' if st == "none" else ""
        out.append(f'<line x1="{lx}" x2="{lx + 36}" y1="{ly}" y2="{ly}" stroke="#333" stroke-width="{sw}"{dash}{op}/>')
        out.append(_text(lx + 42, ly + 4, txt, size=11, fill="#333"))
        lx += 52 + _text_width(txt, 11) + 18
    out.append(
        _text(
            lab_l - 60,
            ly + 24,
            f"A segment shows the flips of the treatment at its end farther from "
            f"{v.reference}; a flip is credible when P ≥ {CREDIBLE} under {v.reference}.",
            size=11,
            fill="#555",
        )
    )
    out.append("</svg>")

    # ranking agreement table + flip list
    rows = []
    for r in v.ranking:
        t = str(r.get("treatment"))
        rows.append(
            f'<tr><td><code>{_wbr(t)}</code></td><td class="num">{_f(r.get("tau_b"), 2)}</td>'
            f'<td class="num">{_f(r.get("rho"), 2)}</td><td class="num">{_int(r.get("flips"))}</td>'
            f'<td class="num">{_int(r.get("credible_flips"))}</td><td class="num">{_rank(r.get("max_shift"))}</td></tr>'
        )
    table = (
        (
            '<table class="data compact"><thead><tr><th>Treatment vs reference</th><th class="num">Kendall τ-b</th>'
            '<th class="num">Spearman ρ</th><th class="num">Flips</th><th class="num">Credible</th>'
            '<th class="num">Max shift</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table>"
        )
        if rows
        else ""
    )
    fl = []
    for f in v.flips:
        cr = bool(f.get("credible"))
        fl.append(
            f'<tr><td><code>{_wbr(f.get("treatment"))}</code></td><td class="name">{_e(f.get("a"))}</td>'
            f'<td class="name">{_e(f.get("b"))}</td>'
            f"<td>{_badge('credible', 'bad') if cr else _badge('within noise', 'warn')}</td></tr>"
        )
    flips = (
        (
            "<details><summary>Every flipped pair (" + _int(len(fl)) + ')</summary><table class="data compact">'
            "<thead><tr><th>Treatment</th><th>Safer under reference</th><th>Safer under treatment</th>"
            "<th>Flip</th></tr></thead><tbody>" + "".join(fl) + "</tbody></table></details>"
        )
        if fl
        else '<p class="muted">No pair of models changes order across the treatments.</p>'
    )
    excluded = ""
    if v.unranked:
        excluded = (
            '<p class="note">Not ranked (not estimable under the reference): '
            + ", ".join(f"<b>{_e(m)}</b>" for m in v.unranked)
            + ".</p>"
        )
    return (
        '<p class="lead">Each line follows one model\'s overall rank across the treatments (rank 1 = lowest '
        f"harmful rate, at the top). The segment leading from a treatment towards the <code>{_e(v.reference)}</code> "
        "column shows how that treatment reorders the model: <b>thick solid</b> = at least one credible flip, "
        "<b>thick dashed</b> = flips within noise only, <b>thin</b> = no flip.</p>"
        f'<figure class="chart-box">{"".join(out)}</figure>{excluded}{table}{flips}'
    )


# --------------------------------------------------------------------------------------------
# Section 6: P(A safer than B)
# --------------------------------------------------------------------------------------------


def _p_safer(v: _View) -> str:
    ps = _dict(v.data.get("p_safer"))
    models = [str(m) for m in _list(ps.get("models"))]
    matrix = [_list(r) for r in _list(ps.get("matrix"))]
    if not models or len(matrix) != len(models):
        return _none("posterior comparisons")
    K = len(models)
    cs = 62 if K <= 10 else 44
    label_w = max(_text_width(_clip(m, 30), 12) for m in models) + 18
    col_h = min(170, max(_text_width(_clip(m, 24), 11) for m in models) * 0.72 + 24)
    top = col_h + 10
    width = label_w + cs * K + col_h * 0.75 + 10
    width = max(width, label_w + 300)
    height = top + cs * K + 84
    out = [
        _svg_open(width, height, "Posterior probability that the row model is safer than the column model", "pmatrix")
    ]
    for j, m in enumerate(models):
        x = label_w + cs * j + cs / 2
        out.append(
            f'<text x="{x:.1f}" y="{top - 8:.1f}" font-size="11" fill="#1f2328" text-anchor="start" '
            f'transform="rotate(-45 {x:.1f} {top - 8:.1f})">{_e(_clip(m, 24))}</text>'
        )
    for i, a in enumerate(models):
        y = top + cs * i
        out.append(_text(label_w - 8, y + cs / 2 + 4, _clip(a, 30), anchor="end", size=12))
        row = matrix[i] + [None] * K
        for j, b in enumerate(models):
            x = label_w + cs * j
            p = _num(row[j]) if i != j else None
            if p is None:
                out.append(
                    f'<g data-mark="p-cell" data-row="{_e(a)}" data-col="{_e(b)}">'
                    f'<rect x="{x + 1}" y="{y + 1}" width="{cs - 2}" height="{cs - 2}" fill="#f0f0f0"/>'
                    + _text(x + cs / 2, y + cs / 2 + 4, "—", anchor="middle", size=12, fill="#888")
                    + "</g>"
                )
                continue
            fill = _ramp(_DIV, p)
            ink = _ink(fill)
            strong = p >= CREDIBLE or p <= 1 - CREDIBLE
            label = ">0.99" if p > 0.995 else "<0.01" if p < 0.005 else f"{p:.2f}"
            out.append(
                f'<g data-mark="p-cell" data-row="{_e(a)}" data-col="{_e(b)}" data-value="{p:.4f}">'
                f"<title>P({_e(a)} safer than {_e(b)}) = {p:.4f}</title>"
                f'<rect x="{x + 1}" y="{y + 1}" width="{cs - 2}" height="{cs - 2}" fill="{fill}"'
                + (' stroke="#111" stroke-width="1.5"' if strong else "")
                + "/>"
                + _text(
                    x + cs / 2,
                    y + cs / 2 + 4,
                    label,
                    anchor="middle",
                    size=13,
                    weight="700" if strong else "normal",
                    fill=ink,
                )
                + "</g>"
            )
    # legend
    ly = top + cs * K + 30
    lw = 260
    stops = "".join(f'<stop offset="{k / (len(_DIV) - 1):.3f}" stop-color="{c}"/>' for k, c in enumerate(_DIV))
    out.append(f'<defs><linearGradient id="div-grad" x1="0" x2="1" y1="0" y2="0">{stops}</linearGradient></defs>')
    out.append(_text(label_w, ly - 6, "P(row safer than column)", size=11, fill="#444"))
    out.append(
        f'<rect x="{label_w}" y="{ly}" width="{lw}" height="12" fill="url(#div-grad)" stroke="#888" '
        f'stroke-width="0.5"/>'
    )
    for val in (0.0, 1 - CREDIBLE, 0.5, CREDIBLE, 1.0):
        x = label_w + lw * val
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{ly + 12}" y2="{ly + 16}" stroke="#666"/>')
    for val, anchor in ((0.0, "start"), (0.5, "middle"), (1.0, "end")):
        out.append(_text(label_w + lw * val, ly + 28, f"{val:g}", anchor=anchor, size=10, fill="#444"))
    out.append(
        _text(
            label_w,
            ly + 46,
            f"outlined, bold: ≥ {CREDIBLE} or ≤ {1 - CREDIBLE:.3f}, i.e. the order of the pair is credible",
            size=10,
            fill="#444",
        )
    )
    out.append("</svg>")
    return (
        '<p class="lead">Posterior probability, under the reference treatment, that the row model has a '
        "lower harmful rate than the column model. Rows and columns in reference rank order; blue = the row "
        "model is likely safer, orange = likely less safe, white = a coin flip.</p>"
        f'<figure class="chart-box">{"".join(out)}</figure>'
    )


# --------------------------------------------------------------------------------------------
# Section 7: design and provenance
# --------------------------------------------------------------------------------------------


_RUBRIC_FIELDS = ("sha256", "labels", "path")


def _rubric(r: Any) -> str:
    """One rubric: a string, or a dict of which only the documented fields are shown."""
    if not isinstance(r, Mapping):
        return f"<li>{_e(r)}</li>"
    name = r.get("name") or "rubric"
    head = f"<b>{_e(name)}</b>" + (f" v{_e(r.get('version'))}" if r.get("version") is not None else "")
    body = r.get("summary")
    meta = []
    for k in _RUBRIC_FIELDS:
        val = r.get(k)
        if isinstance(val, (list, tuple)):
            meta.append(f'<span class="kv">{k}: ' + ", ".join(f"<code>{_e(x)}</code>" for x in val) + "</span>")
        elif val is not None:
            meta.append(f'<span class="kv">{k}: <code>{_e(val)}</code></span>')
    return (
        f"<li>{head}"
        + (f"<div>{_e(body)}</div>" if body else "")
        + (f'<div class="meta">{" ".join(meta)}</div>' if meta else "")
        + "</li>"
    )


def _share(part: Any, whole: Any) -> str:
    p, w = _num(part), _num(whole)
    return "—" if p is None or not w else _pct(p / w, 0)


def _design(v: _View) -> str:
    d = v.data
    design = _dict(d.get("design"))
    rounds = [_dict(r) for r in _list(d.get("rounds"))]
    parts = []
    if rounds:
        rows = "".join(
            f'<tr><td class="name">{_e(r.get("round"))}</td><td>{_e(r.get("judge"))}</td>'
            f'<td class="num mono">{_e(r.get("seed"))}</td><td class="num">{_int(r.get("clear_per_cell"))}</td>'
            f"<td>{_int(len(_list(r.get('annotators'))))}: "
            + ", ".join(_e(a) for a in _list(r.get("annotators")))
            + "</td></tr>"
            for r in rounds
        )
        parts.append(
            '<h3>Review rounds</h3><table class="data compact"><thead><tr><th>Round</th><th>Judge</th>'
            '<th class="num">Seed</th><th class="num">Clear items per cell</th><th>Annotators (pseudonyms)</th>'
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )
    strata = [_dict(s) for s in _list(design.get("strata"))]
    if strata:
        tot_p = sum(_num(s.get("population")) or 0 for s in strata)
        tot_s = sum(_num(s.get("sample")) or 0 for s in strata)
        rows = "".join(
            f'<tr><td>{_e(s.get("round"))}</td><td class="name">{_e(s.get("model"))}</td><td>{_e(s.get("benchmark"))}</td>'
            f'<td>{_e(s.get("stratum"))}</td><td class="num">{_int(s.get("population"))}</td>'
            f'<td class="num">{_int(s.get("sample"))}</td>'
            f'<td class="num">{_share(s.get("sample"), s.get("population"))}</td></tr>'
            for s in strata
        )
        parts.append(
            f"<h3>Sampling design</h3><p>{_int(len(strata))} strata; {_int(tot_s)} of {_int(tot_p)} responses "
            "sampled for human review.</p>"
            '<details class="strata"><summary>Population and sample per cell × stratum</summary>'
            '<table class="data compact"><thead><tr><th>Round</th><th>Model</th><th>Benchmark</th>'
            '<th>Stratum</th><th class="num">Population</th><th class="num">Sample</th>'
            f'<th class="num">Sampled %</th></tr></thead><tbody>{rows}</tbody></table></details>'
        )
    rubrics = _list(design.get("rubrics"))
    if rubrics:
        parts.append('<h3>Rubrics</h3><ul class="rubrics">' + "".join(_rubric(r) for r in rubrics) + "</ul>")
    prov = [
        ("Report created", _e(d.get("created_at")) or "—"),
        ("Tool", f"annotate {_e(d.get('tool_version'))}"),
        ("Export schema version", _e(d.get("schema_version"))),
        ("Label config sha256", f'<code class="hash">{_e(design.get("label_config_sha256")) or "—"}</code>'),
    ]
    parts.append(
        '<h3>Provenance</h3><dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{val}</dd>" for k, val in prov) + "</dl>"
    )
    sources = [_dict(s) for s in _list(d.get("sources"))]
    if sources:
        rows = "".join(
            f'<tr><td class="path">{_e(s.get("path"))}</td><td>{_e(s.get("format"))}</td>'
            f'<td><code class="hash">{_e(s.get("sha256"))}</code></td></tr>'
            for s in sources
        )
        parts.append(
            f'<h3>Source files ({_int(len(sources))})</h3><table class="data compact sources"><thead><tr>'
            f"<th>Path</th><th>Format</th><th>sha256</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    return "".join(parts)


# --------------------------------------------------------------------------------------------
# Section 8: diagnostics
# --------------------------------------------------------------------------------------------


def _diagnostics(diag: Mapping[str, Any]) -> str:
    rows = []
    for r in [_dict(x) for x in _list(diag.get("table"))]:
        verdict = str(r.get("verdict") or "")
        kind = "bad" if verdict.startswith("raises") else "ok" if verdict.startswith("lowers") else "muted"
        rows.append(
            f'<tr><td class="name">{_e(r.get("correlate") or r.get("feature"))}</td>'
            f'<td><code>{_e(r.get("feature"))}</code></td><td class="num"><b>{_f(r.get("odds_ratio"), 2)}</b></td>'
            f'<td class="num">{_f(r.get("ci_low"), 2)}–{_f(r.get("ci_high"), 2)}</td>'
            f'<td class="num">{_p(r.get("p_holm"))}</td><td class="num">{_f(r.get("vif"), 1)}</td>'
            f"<td>{_badge(verdict or '—', kind)}</td></tr>"
        )
    table = (
        (
            '<table class="data"><thead><tr><th>Correlate</th><th>Feature</th><th class="num">Odds ratio / SD</th>'
            '<th class="num">95% CI</th><th class="num">Holm p</th><th class="num">VIF</th><th>Verdict</th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>"
        )
        if rows
        else _none("features")
    )
    aucs = [
        ("features alone", diag.get("auc_features")),
        ("model and benchmark alone", diag.get("auc_fixed_effects")),
        ("both", diag.get("auc_combined")),
    ]
    auc = (
        '<dl class="facts">'
        + "".join(f"<dt>AUC, {k}</dt><dd>{_f(x)}</dd>" for k, x in aucs if _num(x) is not None)
        + "</dl>"
    )
    outcome = diag.get("outcome") or "the judge said ambiguous"
    n = f", {_int(diag.get('n_responses'))} responses" if _num(diag.get("n_responses")) is not None else ""
    return (
        f'<p class="lead">Which offline text features go with <b>{_e(outcome)}</b>: logistic regression on '
        f"z-scored features with model and benchmark fixed effects, cluster-robust by prompt{n}. Odds ratios "
        "per standard deviation; p-values Holm-adjusted; cross-validated AUCs below.</p>"
        f"{table}{auc}"
    )


def _p(value: Any) -> str:
    x = _num(value)
    if x is None:
        return "—"
    return "< 0.001" if x < 0.001 else f"{x:.3f}"


# --------------------------------------------------------------------------------------------
# Page
# --------------------------------------------------------------------------------------------

_CSS = """
:root { --ink: #1f2328; --muted: #59636e; --line: #d0d7de; --soft: #f6f8fa; --accent: #24517a; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: #fff; color: var(--ink); font: 14px/1.45 __FONT__;
       font-variant-numeric: tabular-nums; }
main { max-width: 1180px; margin: 0 auto; padding: 0 28px 48px; }
header.top { border-bottom: 3px solid var(--accent); padding: 24px 0 14px; margin-bottom: 8px; }
header.top h1 { margin: 0 0 4px; font-size: 26px; line-height: 1.2; }
header.top .meta { color: var(--muted); font-size: 13px; }
nav.toc { font-size: 13px; padding: 8px 0 4px; display: flex; flex-wrap: wrap; gap: 4px 16px; }
nav.toc a { color: var(--accent); text-decoration: none; }
nav.toc a:hover { text-decoration: underline; }
section { padding-top: 18px; margin-top: 18px; border-top: 1px solid var(--line); }
section:first-of-type { border-top: 0; margin-top: 0; }
h2 { font-size: 20px; margin: 4px 0 8px; }
h2 .no { color: var(--accent); margin-right: 6px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
p.lead { margin: 0 0 10px; color: #333; max-width: 900px; }
p.note, .muted { color: var(--muted); }
p.note { font-size: 12.5px; margin: 2px 0 8px; }
code, .mono { font-family: __MONO__; font-size: 12px; }
code.hash { word-break: break-all; font-size: 11px; }
.kpis { display: grid; grid-template-columns: repeat(auto-fit, minmax(140px, 1fr)); gap: 10px; margin: 8px 0 14px; }
.kpi { border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; background: var(--soft); }
.kpi-value { font-size: 24px; font-weight: 700; line-height: 1.1; }
.kpi-label { font-size: 12px; color: var(--muted); margin-top: 2px; }
.kpi-sub { font-size: 12px; margin-top: 4px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; margin: 8px 0; }
dl.facts dt { font-weight: 600; color: #333; }
dl.facts dd { margin: 0; }
dl.treatments { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; font-size: 12.5px;
                margin: 12px 0; color: #333; }
dl.treatments dd { margin: 0; }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 11.5px; font-weight: 600;
         border: 1px solid; white-space: nowrap; line-height: 18px; }
.badge.ok { color: #0b5d1e; background: #e6f4ea; border-color: #9fd3ad; }
.badge.warn { color: #7a4d00; background: #fff4d6; border-color: #f0c96a; }
.badge.bad { color: #8a1c12; background: #fbe9e7; border-color: #eba59c; }
.badge.muted { color: #444; background: #f0f0f0; border-color: #ccc; }
ul.flags { margin: 6px 0; padding-left: 18px; }
ul.flags li { margin: 3px 0; }
table.data { border-collapse: collapse; width: 100%; margin: 8px 0 12px; font-size: 13px; }
table.data th, table.data td { padding: 5px 8px; border-bottom: 1px solid #e5e8eb; text-align: left;
                               vertical-align: top; }
table.data thead th { background: var(--soft); border-bottom: 2px solid var(--line); font-size: 12px;
                      font-weight: 600; vertical-align: bottom; }
table.data tbody tr:nth-child(even) td { background: #fafbfc; }
table.data tr.pooled td { font-weight: 600; }
table.data td.num, table.data th.num { text-align: right; white-space: nowrap; }
table.data td.name { font-weight: 600; overflow-wrap: break-word; }
table.data td.nowrap, code.t, table.scores td.name, table.deps td.name { white-space: nowrap; }
table.data td.path { font-family: __MONO__; font-size: 11.5px; overflow-wrap: anywhere; }
table.compact { font-size: 12.5px; }
table.compact th, table.compact td { padding: 3px 8px; }
table.scores th.tr { font-size: 11.5px; min-width: 72px; }
table.scores td { text-align: right; white-space: nowrap; }
table.scores td.name, table.scores td:nth-child(2) { text-align: left; }
table.scores .est { font-weight: 700; display: block; font-size: 13.5px; }
table.scores .ci { display: block; font-size: 11px; color: var(--muted); }
table.scores .ne { display: block; font-style: italic; color: #8a1c12; font-size: 12px; }
table.scores th.ref, table.scores td.ref { background: #eef3f8 !important; }
.refmark { display: block; font-size: 10px; color: var(--accent); font-weight: 700; text-transform: uppercase;
           letter-spacing: .04em; }
sup.fn { font-size: 10px; color: #8a1c12; margin-left: 1px; }
ol.footnotes { font-size: 12px; color: #333; margin: 4px 0 8px; padding-left: 26px; }
figure.chart-box { margin: 8px 0 12px; padding: 10px 14px; border: 1px solid var(--line); border-radius: 8px;
                   overflow-x: auto; background: #fff; width: fit-content; max-width: 100%; }
svg.chart { display: block; max-width: 100%; height: auto; font-family: __FONT__; }
details { margin: 8px 0; }
details > summary { cursor: pointer; color: var(--accent); font-weight: 600; font-size: 13px; }
ul.rubrics { padding-left: 18px; }
ul.rubrics li { margin: 6px 0; }
ul.rubrics .meta { color: var(--muted); font-size: 12px; }
ul.rubrics .kv { margin-right: 12px; }
footer { color: var(--muted); font-size: 12px; border-top: 1px solid var(--line); margin-top: 28px; padding-top: 10px; }
@page { size: A4; margin: 14mm 12mm 16mm; @bottom-right { content: "Page " counter(page) " of " counter(pages);
        font-size: 9pt; color: #555; } @bottom-left { content: __TITLE__; font-size: 9pt; color: #555; } }
@media print {
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  body { font-size: 10.5pt; background: #fff; }
  .kpis { grid-template-columns: repeat(auto-fit, minmax(84px, 1fr)); gap: 6px; }
  .kpi { padding: 6px 8px; }
  .kpi-value { font-size: 17pt; }
  main { max-width: none; padding: 0; }
  nav.toc { display: none; }
  section { break-before: page; border-top: 0; margin-top: 0; padding-top: 0; }
  section:first-of-type { break-before: auto; }
  h2, h3 { break-after: avoid; }
  figure.chart-box, svg.chart, .kpis, .kpi, dl.facts { break-inside: avoid; }
  figure.chart-box { overflow: visible; border: 0; padding: 0; }
  tr, li { break-inside: avoid; }
  thead { display: table-header-group; }
  table.data { font-size: 9pt; }
  table.scores .est { font-size: 9pt; }
  table.scores .ci { font-size: 7.5pt; }
  table.scores th.tr { font-size: 7.5pt; min-width: 0; }
  table.data th, table.data td { padding: 3px 4px; }
  details > summary { color: var(--ink); list-style: none; }
  details > summary::-webkit-details-marker { display: none; }
  details::details-content { content-visibility: visible; display: block; }
  a { color: inherit; text-decoration: none; }
}
"""

# Opens every <details> for printing in browsers without ::details-content, closes them after.
_SCRIPT = (
    "(function(){var o=[];window.addEventListener('beforeprint',function(){"
    "document.querySelectorAll('details:not([open])').forEach(function(d){d.open=true;o.push(d);});});"
    "window.addEventListener('afterprint',function(){o.forEach(function(d){d.open=false;});o=[];});})();"
)


def render_report(data: Mapping[str, Any]) -> str:
    """Render the certification report as one self-contained HTML document.

    Parameters
    ----------
    data : dict
        The JSON-like export described in the module docstring.

    Returns
    -------
    str
        The HTML page (UTF-8 text; write it with ``encoding="utf-8"``).
    """
    if not isinstance(data, Mapping):
        raise TypeError(f"render_report needs a dict; got {type(data).__name__}.")
    v = _View(data)
    title = str(data.get("title") or "Safety evaluation audit report")
    sections = [
        ("summary", "Summary", _summary(v)),
        ("ambiguity", "Ambiguity rates per model and benchmark", _ambiguity(v)),
        ("agreement", "Agreement between reviewers", _agreement(v)),
        ("scores", "Harmful-rate scores per treatment", _scores(v)),
        ("ranks", "Rank of each model across treatments", _bump(v)),
        ("p-safer", "P(A safer than B) under the reference", _p_safer(v)),
        ("design", "Design and provenance", _design(v)),
    ]
    diag = data.get("diagnostics")
    if isinstance(diag, Mapping):
        sections.append(("diagnostics", "Ambiguity diagnostics", _diagnostics(diag)))

    css = _CSS.replace("__FONT__", _FONT).replace("__MONO__", _MONO).replace("__TITLE__", _css_string(_clip(title, 80)))
    script_hash = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
    csp = (
        f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{script_hash}'; "
        "base-uri 'none'; form-action 'none'"
    )
    toc = "".join(f'<a href="#{sid}">{n}. {_e(h)}</a>' for n, (sid, h, _) in enumerate(sections, 1))
    body = "".join(
        f'<section id="{sid}"><h2><span class="no">{n}</span>{_e(h)}</h2>{content}</section>'
        for n, (sid, h, content) in enumerate(sections, 1)
    )
    meta = " · ".join(
        x
        for x in (
            f"created {_e(data.get('created_at'))}" if data.get("created_at") else "",
            f"annotate {_e(data.get('tool_version'))}" if data.get("tool_version") else "",
            f"schema {_e(data.get('schema_version'))}" if data.get("schema_version") is not None else "",
            f"reference treatment <code>{_e(v.reference)}</code>",
        )
        if x
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="color-scheme" content="light">'
        f"<title>{_e(title)}</title><style>{css}</style><script>{_SCRIPT}</script></head>"
        f'<body><main><header class="top"><h1>{_e(title)}</h1><div class="meta">{meta}</div>'
        f'<nav class="toc" aria-label="Sections">{toc}</nav></header>{body}'
        f"<footer>Generated by annotate {_e(data.get('tool_version'))} (export schema "
        f"{_e(data.get('schema_version'))}) on {_e(data.get('created_at'))}. Self-contained: this file loads "
        "nothing from elsewhere.</footer></main></body></html>\n"
    )
