"""The certification report: one self-contained HTML file.

:func:`render_report` turns the export's JSON-like ``data`` dict into one HTML document that a
certification reviewer can open offline or print. The page loads nothing: no script, style
sheet, font or image from anywhere (a Content-Security-Policy meta tag forbids it too); the
charts are inline SVG; fonts are the system's. Print CSS starts every section on a
new page, keeps charts and table rows whole, uses no dark backgrounds and opens the collapsible
parts.

Every string that comes from ``data`` (model and benchmark names, flags, reasons, rubric text,
paths) is escaped before it reaches the page, in text and in attributes alike: the page is built
from Jinja2 templates with autoescaping on, the SVG charts escape their text with
:func:`markupsafe.escape`, and the title in the print CSS is written as escaped CSS. Only the
documented keys below are read: any other key of ``data`` or of its records is ignored, so a
stray field cannot reach the page. ``data`` has no field for e-mail
addresses or tokens: annotators appear only as the pseudonyms the rounds carry.

Input contract
--------------
All keys are JSON-like (str, int, float, bool, None, list, dict). Numbers may be ``None`` (or
NaN), shown as a dash or as the row's flag text, never as a number. Shares and rates are
fractions in [0, 1] (shown as per cent)::

    data = {
      "title": str, "created_at": str, "tool_version": str, "schema_version": int,
      "rounds": [{"round": str, "judge": str, "seed": int, "clear_per_cell": int,
                  "annotators": [pseudonym, ...],
                  "strata_from": [judge, ...],                   # only with route --strata-from
                  "blinding": "technical" | "instructions only",   # only in exports that record it
                  "channels": {channel: {"answers": int, "by": {pseudonym: int},   # annotate-export/13 on
                                         "blinding": str, "sha256": [str, ...]}}}],
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
      "judges": {                             # optional: the judges section appears only with it
          "rows": [judges.csv records: {"judge", "benchmark", "model", "n_resolved",
                   "sensitivity", "sensitivity_ci_low", "sensitivity_ci_high", ... (every figure
                   of annotate.stats.judges.METRICS with its interval), "rank", "rank_low",
                   "rank_high", "p_best", "note"}],
          "pairs": [judge_pairs.csv records: {"benchmark", "model", "judge_a", "judge_b",
                    "p_a_better", "p_b_better", "agree_share", "a_harmful_b_safe",
                    "a_harmful_b_safe_n", "a_harmful_b_safe_human_harmful", ... }],
          "notes": [str], "method": str},
      "diagnostics": {                        # optional: the last section appears only with it
          "outcome": str, "n_responses": int,
          "table": [{"correlate", "feature", "odds_ratio", "ci_low", "ci_high",
                     "p_holm", "vif", "verdict"}],
          "auc_features", "auc_fixed_effects", "auc_combined": float | None},
    }

Missing lists render as "no data" in their section; only ``data`` being a dict is required.

Sections (ids in brackets): 1 summary [summary], 2 ambiguity heat map [ambiguity],
3 agreement [agreement], 4 scores [scores], 5 rank bump chart [ranks], 6 P(A safer than B)
[p-safer], then, with ``judges``, how far to trust each judge [judges], then design and
provenance [design], and, with ``diagnostics``, ambiguity diagnostics [diagnostics]. Without
``judges`` the page is exactly what it was before the section existed (annotate-export/2
reports re-render byte for byte).

The SVG marks carry ``data-mark`` attributes (``heat-cell``, ``ag-dot``, ``ag-ci``,
``bump-point``, ``bump-seg`` with ``data-style`` = ``none`` / ``noise`` / ``credible``,
``bump-label``, ``p-cell``; ``judge-panel``, ``judge-point``, ``judge-se-ci``, ``judge-sp-ci``)
so tests and tools can count them.

Bump-chart encoding: every model's line joins its ranks under consecutive treatments. The
segment leading from a treatment t towards the reference column belongs to t: it is thick and
solid when the model is in at least one credible flip under t, thick and dashed when all its
flips under t are within noise, thin when its order against every other model is as under the
reference.

Layout of the package: ``page`` (the Jinja2 environment and one context per section),
``templates/`` (the page and its sections), ``report.css`` (the style sheet), ``charts`` (the
SVG charts), ``_judges`` (the judges section's context and chart), ``_view`` (the reading of
``data``) and ``_fmt`` (number formatting).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotate.columns import TREATMENT_NOTES
from annotate.report.page import render_page

__all__ = ["TREATMENT_NOTES", "render_report"]


def render_report(data: Mapping[str, Any]) -> str:
    """Render the certification report as one self-contained HTML document.

    Parameters
    ----------
    data : dict
        The JSON-like export described in the module docstring.

    Returns
    -------
    str
        The HTML page (UTF-8 text; write it with ``encoding="utf-8"``). The same ``data`` gives
        the same page, byte for byte.

    Raises
    ------
    TypeError
        If ``data`` is not a dict (a mapping).
    """
    if not isinstance(data, Mapping):
        raise TypeError(f"render_report needs a dict; got {type(data).__name__}.")
    return render_page(data)
