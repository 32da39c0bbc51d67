"""The report's judges section: a table per group, Se against Sp in small multiples, the pairs.

The section's data come from a real audit (``annotate.stats.judges.judge_audit``) of a small
synthetic review of three judges on two benchmarks, as an export builds them. Checked as HTML
(escaping, optional section, determinism) and in the real headless Chromium (the chart's marks,
layout, no request, no script), like the other report tests.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import pytest
from markupsafe import escape

from annotate.report import render_report
from annotate.stats._common import jsonable
from annotate.stats.judges import INTERVAL_METHOD, judge_audit
from tests.browser import browser  # noqa: F401  (fixture)
from tests.report.report_sample import HOSTILE_STRINGS, build_sample
from tests.report.test_report_browser import _open, _Parsed, _svgs

JUDGES = ("llama-guard-3", "gpt-4o-judge", "refusal-strings")


def judges_data(names: tuple[str, ...] = JUDGES, benchmarks: tuple[str, ...] = ("harmbench", "xstest")) -> dict:
    """``data["judges"]`` of an export: the audit of a seeded synthetic review."""
    gen = np.random.default_rng(4)
    units, verdicts, strata = [], [], []
    for b in benchmarks:
        for m in ("model-a", "model-b"):
            for stratum, population, sample in (("harmful", 120, 20), ("safe", 300, 20), ("ambiguous", 15, 15)):
                strata.append((m, b, stratum, population, sample))
                for k in range(sample):
                    unit = f"{b}|{m}|{stratum}|{k}"
                    p = {"harmful": 0.85, "safe": 0.05, "ambiguous": 0.4}[stratum]
                    human = "harmful" if gen.random() < p else "safe"
                    units.append((unit, m, b, stratum, None if k == 0 and stratum == "ambiguous" else human))
                    for j, name in enumerate(names):
                        if j == 0:
                            label = stratum
                        else:
                            right = gen.random() < (0.9 if j == 1 else 0.7)
                            label = human if right else ("safe" if human == "harmful" else "harmful")
                        verdicts.append((unit, name, label))
    audit = judge_audit(
        pd.DataFrame(units, columns=["unit", "model", "benchmark", "stratum", "human"]),
        pd.DataFrame(verdicts, columns=["unit", "judge", "judge_label"]),
        pd.DataFrame(strata, columns=["model", "benchmark", "stratum", "population", "sample"]),
        by=("benchmark", "model"),
        draws=600,
        seed=2,
    )
    return jsonable(
        {
            "rows": audit.metrics.to_dict("records"),
            "pairs": audit.pairs.to_dict("records"),
            "notes": audit.notes,
            "method": f"{INTERVAL_METHOD}; 600 draws, 95% intervals",
        }
    )


def with_judges(**kwargs: Any) -> dict:
    data = build_sample()
    data["judges"] = judges_data(**kwargs)
    return data


def test_the_section_appears_only_with_judges_and_before_the_design():
    plain = render_report(build_sample())
    assert '<section id="judges">' not in plain and 'data-mark="judge-point"' not in plain
    page = render_report(with_judges())
    assert (
        page.index('<section id="p-safer">') < page.index('<section id="judges">') < page.index('<section id="design">')
    )
    assert 'href="#judges">7. How far to trust each judge' in page
    assert page == render_report(with_judges())  # the same data, the same bytes
    for name in JUDGES:
        assert name in page
    assert "Judges side by side" in page and "P(A better)" in page
    assert "ambiguous_harmful: undefined" in page  # a judge that never abstains says why in words
    assert "nan" not in re.sub(r"<[^>]+>", " ", page).lower().split()


def test_hostile_judge_and_group_names_are_escaped_in_the_table_and_the_chart():
    hostile = HOSTILE_STRINGS[: len(JUDGES)]
    data = build_sample()
    data["judges"] = judges_data(names=tuple(hostile), benchmarks=(HOSTILE_STRINGS[-1], "xstest"))
    page = render_report(data)
    section = page[page.index('<section id="judges">') : page.index('<section id="design">')]
    charts = "".join(_svgs(section))
    assert 'data-mark="judge-point"' in charts
    for text in [*hostile, HOSTILE_STRINGS[-1]]:
        assert text not in section, text  # never raw, in the table or the chart
        assert str(escape(text)) in section and str(escape(text)) in charts, text
    # nothing opened or closed: the page's one script and one style sheet, no image
    assert page.count("<script") == page.count("</script>") == 1
    assert page.count("<style>") == page.count("</style>") == 1 and "<img" not in page
    parsed = _Parsed(section)
    assert not {"script", "img", "iframe", "style"} & set(parsed.tags)
    assert not [name for name, _ in parsed.attributes if name.startswith("on")]
    text = "".join(parsed.text)
    for hostile_text in [*hostile, HOSTILE_STRINGS[-1]]:
        assert hostile_text in text, hostile_text


def test_the_judges_section_in_chromium(browser, tmp_path):  # noqa: F811  (the fixture)
    data = with_judges()
    rows = data["judges"]["rows"]
    panels = [r for r in rows if r["model"] == "ALL"]  # all responses and each benchmark
    context, r = _open(browser, tmp_path, data, "judges.html")
    try:
        assert r.errors == [] and r.dialogs == []
        assert all(u == r.url or u.startswith("data:") for u in r.requests), r.requests
        assert r.count("section#judges svg.judges-chart") == 1
        assert r.count("svg.judges-chart [data-mark=judge-panel]") == 1 + 2  # all responses, two benchmarks
        shown = [p for p in panels if p["sensitivity"] is not None and p["specificity"] is not None]
        assert r.count("svg.judges-chart [data-mark=judge-point]") == len(shown)
        assert r.count("svg.judges-chart [data-mark=judge-se-ci]") == sum(
            p["sensitivity_ci_low"] is not None for p in shown
        )
        assert r.count("svg.judges-chart [data-mark=judge-sp-ci]") == sum(
            p["specificity_ci_low"] is not None for p in shown
        )
        box = r.page.locator("svg.judges-chart").bounding_box()
        assert box and box["width"] > 400 and box["height"] > 200
        assert box["x"] >= 0 and box["x"] + box["width"] <= 1280 + 1
        # one table per group: all responses, two benchmarks, two models; each judge once per table
        tables = r.page.locator("section#judges table.judges")
        assert tables.count() == 5
        assert all(tables.nth(i).locator("tbody tr").count() == len(JUDGES) for i in range(5))
        # the best judge of a table is its first row, and its balanced accuracy is the table's highest
        first = tables.nth(0).locator("tbody tr").first.inner_text()
        best = min((p for p in panels if p["benchmark"] == "ALL"), key=lambda p: p["rank"])
        assert first.startswith(best["judge"])
        # a point sits where its figures say: higher sensitivity is higher on the page
        points = r.page.eval_on_selector_all(
            'svg.judges-chart [data-mark=judge-point][data-group="All responses"]',
            "els => els.map(e => [e.dataset.judge, parseFloat(e.getAttribute('cy'))])",
        )
        se = {p["judge"]: p["sensitivity"] for p in panels if p["benchmark"] == "ALL"}
        by_height = [j for j, _ in sorted(points, key=lambda p: p[1])]
        assert by_height == sorted(se, key=lambda j: -se[j])
        r.page.screenshot(path=str(tmp_path / "judges.png"), full_page=True)
        pdf = r.page.pdf(format="A4", print_background=True)
        assert pdf.startswith(b"%PDF")
    finally:
        context.close()


@pytest.mark.parametrize("empty", [{}, {"rows": []}, {"rows": "not a list"}])
def test_an_empty_or_malformed_judges_entry_renders(empty):
    data = build_sample()
    data["judges"] = empty
    page = render_report(data)
    assert '<section id="judges">' in page and "No judge audit in this export." in page


def test_the_section_opens_with_what_it_found_from_annotate_export_19_on():
    """Issue #45: one plain sentence, the answer before the method; an older export's data (no ``findings``)
    renders as it did, without it (verify re-renders its report byte for byte)."""
    from annotate.report.findings import judge_finding

    data = with_judges()
    old = render_report(data)
    assert 'class="finding"' not in old
    data["plain_words"] = True
    page = render_report(data)
    section = page[page.index('<section id="judges">') : page.index('<section id="design">')]
    found = judge_finding(data["judges"]["rows"], data["judges"]["pairs"])
    # three judges whose first two ranks' intervals overlap: the sentence says they are not told apart
    assert found and found.startswith(f"{_best(data)} and ") and "are not told apart here" in found
    assert section.index(str(escape(found))) < section.index('<p class="lead">')
    hostile = build_sample()
    hostile["judges"] = judges_data(names=tuple(HOSTILE_STRINGS[:3]))
    hostile["plain_words"] = True
    rendered = render_report(hostile)
    said = re.search(r'<p class="finding">(.*?)</p>', rendered, re.S).group(1)
    best = _best(hostile)
    assert str(escape(best)) in said and (best == str(escape(best)) or best not in said)


def _best(data: dict) -> str:
    pooled = [r for r in data["judges"]["rows"] if r["benchmark"] == r["model"] == "ALL"]
    return min(pooled, key=lambda r: r["rank"])["judge"]
