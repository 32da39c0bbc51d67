"""The certification report in a real headless Chromium (annotate.report.render_report).

The browser is tests/browser.py's: Debian's ``chromium`` driven by the ``playwright`` package,
skipped locally without them and FAILING under CI (env ``CI`` set).

Artifacts: ``tests/artifacts/report.png`` (full-page screenshot) and ``tests/artifacts/report.pdf``.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape

from annotate.report import render_report
from tests.browser import ARTIFACTS, browser  # noqa: F401  (fixture)
from tests.report.report_sample import HOSTILE, HOSTILE_STRINGS, build_hostile_sample, build_sample

# --------------------------------------------------------------------------------------------
# Expected marks, computed from the data independently of the renderer
# --------------------------------------------------------------------------------------------


def _ranked(data: dict[str, Any]) -> list[str]:
    ref = data["reference_treatment"]
    return [
        s["model"]
        for s in data["scores"]
        if s["benchmark"] == "ALL" and s["treatment"] == ref and s["rank"] is not None
    ]


def _expected_segment_styles(data: dict[str, Any]) -> dict[str, int]:
    """Count of bump-chart segments per style, from the documented encoding."""
    T, ref = data["treatments"], data["reference_treatment"]
    r = T.index(ref)
    rank = {(s["model"], s["treatment"]): s["rank"] for s in data["scores"] if s["benchmark"] == "ALL"}
    counts = {"none": 0, "noise": 0, "credible": 0}
    for m in _ranked(data):
        for i in range(len(T) - 1):
            if rank.get((m, T[i])) is None or rank.get((m, T[i + 1])) is None:
                continue
            owner = T[i] if i < r else T[i + 1]  # the end farther from the reference
            mine = [f["credible"] for f in data["flips"] if f["treatment"] == owner and m in (f["a"], f["b"])]
            counts["credible" if any(mine) else "noise" if mine else "none"] += 1
    return counts


def _svgs(page: str) -> list[str]:
    """The source of every inline SVG chart of a page."""
    return re.findall(r"<svg\b.*?</svg>", page, re.S)


class _Parsed(HTMLParser):
    """Elements, attributes and text of a page as a browser's tokenizer sees them."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str]] = []
        self.text: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += [(name, value or "") for name, value in attrs]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _pdf_pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", pdf))


# --------------------------------------------------------------------------------------------
# Pure HTML checks (no browser)
# --------------------------------------------------------------------------------------------


def test_html_is_self_contained():
    page = render_report(build_sample())
    assert page.startswith("<!DOCTYPE html>")
    # nothing that could load: no src attributes, no links out, no CSS url()/@import
    assert not re.search(r"\ssrc\s*=", page, re.I)
    assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", page, re.I)
    assert "url(" not in page.replace("url(#", "")
    assert "@import" not in page and "<link" not in page
    assert page.count("<script") == 1  # the one inline print helper, allowed by its CSP hash
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    for sid in ("summary", "ambiguity", "agreement", "scores", "ranks", "p-safer", "design", "diagnostics"):
        assert f'<section id="{sid}">' in page


def test_hostile_strings_are_escaped():
    page = render_report(build_sample(hostile_name=HOSTILE))
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img" not in page and "<b>co</b>" not in page


def test_hostile_strings_in_every_field_are_escaped() -> None:
    page = render_report(build_hostile_sample())
    # markup that would open an element, end the <style> or close a CDATA section appears only escaped
    assert page.count("<script") == 1 and page.count("</script>") == 1  # the print helper
    assert page.count("<style>") == 1 and page.count("</style>") == 1
    assert "<img" not in page and "]]>" not in page and '=HYPERLINK("x")' not in page
    for hostile in HOSTILE_STRINGS:
        assert str(escape(hostile)) in page, hostile
    # the same inside the SVG charts: text, titles and data-* attributes
    svgs = _svgs(page)
    assert len(svgs) == 4
    charts = "".join(svgs)
    for hostile in HOSTILE_STRINGS:
        assert hostile not in charts, hostile
        assert str(escape(hostile)) in charts, hostile
    # parsed, each string is shown as text or kept as an attribute value; no element or handler is added
    parsed = _Parsed(page)
    assert sorted(set(parsed.tags) & {"script", "img", "iframe", "object", "embed", "link"}) == ["script"]
    assert parsed.tags.count("script") == 1 and parsed.tags.count("style") == 1
    assert not [name for name, _ in parsed.attributes if name.startswith("on")]
    text = "".join(parsed.text)
    values = [value for _, value in parsed.attributes]
    for hostile in HOSTILE_STRINGS:
        assert hostile in text, hostile
        assert any(hostile in value for value in values), hostile
    # the title reaches the print footer's CSS only as escaped CSS
    footer = re.search(r"@bottom-left \{ content: (\"[^\"]*\");", page)
    assert footer and "<" not in footer.group(1) and ">" not in footer.group(1)


def test_same_data_same_bytes() -> None:
    assert render_report(build_sample()) == render_report(build_sample())
    assert render_report(build_hostile_sample()) == render_report(build_hostile_sample())


def test_not_estimable_is_text_and_diagnostics_optional():
    data = build_sample(diagnostics=False)
    page = render_report(data)
    assert '<section id="diagnostics">' not in page
    assert "not estimable" in page
    assert "nan" not in re.sub(r"<[^>]+>", " ", page).lower().split()


def test_sparse_input_renders() -> None:
    page = render_report({})
    assert "No scores in this export." in page
    page = render_report(
        {
            "scores": [
                {
                    "model": "m",
                    "benchmark": "ALL",
                    "treatment": "corrected",
                    "estimate": float("nan"),
                    "flag": "not estimable: no data",
                }
            ]
        }
    )
    assert "not estimable" in page
    with pytest.raises(TypeError):
        render_report([])  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# The browser
# --------------------------------------------------------------------------------------------


class _Loaded:
    def __init__(self, page: Any, url: str, requests: list[str], errors: list[str], dialogs: list[str]) -> None:
        self.page, self.url, self.requests, self.errors, self.dialogs = page, url, requests, errors, dialogs

    def count(self, selector: str) -> int:
        return self.page.locator(selector).count()


def _open(
    browser: Any,  # noqa: F811  (the fixture's value)
    tmp_path: Path,
    data: dict[str, Any] | None,
    name: str = "report.html",
    html: str | None = None,
):
    path = tmp_path / name
    if html is None:
        assert data is not None, "either data or html"
        html = render_report(data)
    path.write_text(html, encoding="utf-8")
    url = path.as_uri()
    context = browser.new_context(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
    requests: list[str] = []
    errors: list[str] = []
    dialogs: list[str] = []

    def route(r: Any) -> None:  # nothing but the page itself may load; anything else is cut off
        if r.request.url == url or r.request.url.startswith("data:"):
            r.continue_()
        else:
            r.abort()

    context.route("**/*", route)
    context.on("request", lambda req: requests.append(req.url))
    page = context.new_page()
    page.on(
        "console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.on("requestfailed", lambda req: errors.append(f"request failed: {req.url}"))

    def on_dialog(d: Any) -> None:
        dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", on_dialog)
    page.goto(url, wait_until="load")
    page.wait_for_timeout(200)
    return context, _Loaded(page, url, requests, errors, dialogs)


def test_report_in_chromium(browser, tmp_path):  # noqa: F811  (the fixture)
    data = build_sample()
    context, r = _open(browser, tmp_path, data)
    try:
        assert r.errors == []
        assert all(u == r.url or u.startswith("data:") for u in r.requests), r.requests
        assert r.requests and r.requests[0] == r.url

        models = {c["model"] for c in data["cells"]}
        benches = {c["benchmark"] for c in data["cells"]}
        ranked = _ranked(data)
        T = data["treatments"]

        # each chart is an <svg> with the expected marks
        assert r.count("section#ambiguity svg.heatmap") == 1
        assert r.count("svg.heatmap [data-mark=heat-cell]") == len(models) * len(benches)
        assert r.count("section#agreement svg.agreement-chart") == 1
        n_alpha = sum(a["alpha"] is not None for a in data["agreement"])
        assert r.count("svg.agreement-chart [data-mark=ag-dot]") == n_alpha
        assert r.count("svg.agreement-chart [data-mark=ag-ci]") == sum(
            a["alpha_ci"][0] is not None for a in data["agreement"]
        )
        assert r.count("section#ranks svg.bump") == 1
        ranks = {(s["model"], s["treatment"]): s["rank"] for s in data["scores"] if s["benchmark"] == "ALL"}
        assert r.count("svg.bump [data-mark=bump-point]") == sum(ranks[(m, t)] is not None for m in ranked for t in T)
        assert r.count("svg.bump [data-mark=bump-label]") == 2 * len(ranked)
        styles = _expected_segment_styles(data)
        assert sum(styles.values()) == len(ranked) * (len(T) - 1)
        for style, n in styles.items():
            assert r.count(f'svg.bump [data-mark=bump-seg][data-style="{style}"]') == n, style
        assert styles["credible"] > 0 and styles["noise"] > 0  # the sample exercises both
        dashed = r.page.eval_on_selector_all(
            "svg.bump [data-mark=bump-seg]",
            "els => els.map(e => [e.dataset.style, e.getAttribute('stroke-dasharray')])",
        )
        assert all((s == "noise") == (d is not None) for s, d in dashed)
        K = len(data["p_safer"]["models"])
        assert r.count("section#p-safer svg.pmatrix") == 1
        assert r.count("svg.pmatrix [data-mark=p-cell]") == K * K

        # the charts are laid out, visible and not wider than the page
        for sel in ("svg.heatmap", "svg.agreement-chart", "svg.bump", "svg.pmatrix"):
            box = r.page.locator(sel).bounding_box()
            assert box and box["width"] > 200 and box["height"] > 100, sel
            assert box["x"] >= 0 and box["x"] + box["width"] <= 1280 + 1, sel
        # values printed in the cells, not colour alone
        heat_text = r.page.locator("svg.heatmap").text_content()
        assert heat_text.count("%") >= len(models) * len(benches)
        # not estimable is text, never a number
        ne = r.page.locator("table.scores .ne")
        assert ne.count() > 0 and all(t.strip().startswith("not estimable") for t in ne.all_text_contents())

        # screenshot and print
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / "report.png"
        r.page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 50_000
        pdf = r.page.pdf(format="A4", print_background=True)
        (ARTIFACTS / "report.pdf").write_bytes(pdf)
        assert pdf.startswith(b"%PDF") and _pdf_pages(pdf) > 1

        # printing opens the collapsible parts
        r.page.emulate_media(media="print")
        box = r.page.locator("details.cells table").bounding_box()
        assert box is not None and box["height"] > 50
        assert r.page.locator("nav.toc").is_hidden()
        assert r.errors == []
    finally:
        context.close()


def test_untrusted_name_does_not_execute(browser, tmp_path):  # noqa: F811  (the fixture)
    data = build_sample(hostile_name=HOSTILE)
    context, r = _open(browser, tmp_path, data, "hostile.html")
    try:
        assert r.dialogs == []
        assert r.errors == []
        assert all(u == r.url or u.startswith("data:") for u in r.requests), r.requests
        assert r.page.evaluate("document.querySelectorAll('script').length") == 1
        assert r.page.evaluate("document.querySelectorAll('img').length") == 0
        assert r.page.evaluate("document.querySelector('h1').children.length") == 0
        # shown as text where model names appear
        assert HOSTILE in r.page.locator("section#summary").inner_text()
        assert HOSTILE in r.page.locator("table.scores").first.inner_text()
        benches = {c["benchmark"] for c in data["cells"]}
        assert r.page.locator(f'svg.heatmap [data-mark=heat-cell][data-model="{HOSTILE}"]').count() == len(benches)
        assert HOSTILE in r.page.locator("svg.bump").text_content()
        assert HOSTILE in r.page.title()
    finally:
        context.close()


def test_hostile_strings_in_every_field_do_not_execute(browser, tmp_path):  # noqa: F811  (the fixture)
    data = build_hostile_sample()
    context, benign = _open(browser, tmp_path, build_sample(), "benign.html")
    try:
        benign_rules = benign.page.evaluate("document.styleSheets[0].cssRules.length")
    finally:
        context.close()
    context, r = _open(browser, tmp_path, data, "hostile-everywhere.html")
    try:
        assert r.dialogs == []
        assert r.errors == []
        assert all(u == r.url or u.startswith("data:") for u in r.requests), r.requests
        assert r.page.evaluate("document.querySelectorAll('script').length") == 1
        assert r.page.evaluate("document.querySelectorAll('style').length") == 1
        assert r.page.evaluate("document.querySelectorAll('img, iframe, object, embed, link').length") == 0
        assert r.page.evaluate("document.querySelectorAll('svg script, svg foreignObject, svg style').length") == 0
        handlers = r.page.evaluate(
            "[...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name))"
            ".filter(n => n.startsWith('on'))"
        )
        assert handlers == []
        # the title did not break out of the style sheet: it has as many rules as the benign page's
        assert r.page.evaluate("document.styleSheets[0].cssRules.length") == benign_rules
        assert r.page.title() == data["title"]
        assert r.page.evaluate("document.querySelector('h1').children.length") == 0
        assert r.page.locator("h1").inner_text() == data["title"]
        # every string is shown as text, on the page and in the charts
        body = r.page.locator("body").inner_text()
        charts = "".join(r.page.locator("svg.chart").all_text_contents())
        for hostile in HOSTILE_STRINGS:
            assert hostile in body, hostile
            assert hostile in charts, hostile
        model = data["p_safer"]["models"][0]
        assert r.count(f"svg.pmatrix [data-mark=p-cell][data-row={_css_attr(model)}]") == len(data["p_safer"]["models"])
        assert r.count("section") == 8
    finally:
        context.close()


def _css_attr(value: str) -> str:
    """``value`` as a quoted CSS attribute-selector value."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def test_a_real_export_report_in_chromium(browser, tmp_path):  # noqa: F811  (the fixture)
    """The report of an actual export (the offline XSTest demo), not the sample: renders cleanly."""
    from annotate.pipeline.demo import run_demo

    result = run_demo(tmp_path / "ws", offline=True, keep_server=False, echo=lambda line: None)
    html = result.report.read_text(encoding="utf-8")
    context, r = _open(browser, tmp_path, None, name="real.html", html=html)
    try:
        assert r.errors == [] and r.dialogs == []
        assert all(u == r.url or u.startswith("data:") for u in r.requests), r.requests
        assert r.count('[data-mark="heat-cell"]') == 5  # 5 models x 1 benchmark
        assert r.count('[data-mark="p-cell"]') == 25
        assert r.count('[data-mark="bump-point"]') == 5 * 8
        ARTIFACTS.mkdir(exist_ok=True)
        r.page.screenshot(path=str(ARTIFACTS / "report-xstest.png"), full_page=True)
    finally:
        context.close()


def test_the_grades_section_of_a_graded_export_in_chromium(browser, tmp_path):  # noqa: F811  (the fixture)
    """A graded export's report (the frozen annotate-export/14): the Grades section opens cleanly and fits."""
    frozen = Path(__file__).resolve().parents[1] / "data" / "exports" / "annotate-export-14" / "report.html"
    context, r = _open(browser, tmp_path, None, name="graded.html", html=frozen.read_text(encoding="utf-8"))
    try:
        assert r.errors == [] and r.dialogs == []
        section = r.page.locator("section#grades")
        assert section.is_visible() and "Certification grades" in section.inner_text()
        assert section.locator("tbody tr").count() == 5 and "changed by review" in section.inner_text()
        box, table = section.bounding_box(), section.locator("table").bounding_box()
        assert box is not None and table is not None and table["width"] <= box["width"] + 1  # no sideways scroll
        ARTIFACTS.mkdir(exist_ok=True)
        section.screenshot(path=str(ARTIFACTS / "report-grades.png"))
    finally:
        context.close()


def test_hostile_model_names_in_the_grades_section_are_escaped():
    data = build_sample()
    data["grades"] = {
        "scheme": HOSTILE,
        "rules": [HOSTILE],
        "otherwise": "Good",
        "grades": ["Good"],
        "references": [HOSTILE],
        "judge_only": "ambiguous_excluded",
        "rows": [{"model": HOSTILE, "grade": "Good", "p_Good": 1.0, "grade_judge_only": HOSTILE, "ratio": "inf"}],
    }
    page = render_report(data)
    assert HOSTILE not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_first_screen_gives_the_answer(browser, tmp_path):  # noqa: F811  (the fixture)
    """annotate-export/18 (issue #45): the report of the demo's export opens with each model's harmful rate
    after review, its interval and rank, and the judge-alone rate, on the first screen a lead sees; the
    agreement figure there is the 3-way one, the binary one beside it."""
    import csv

    from annotate.pipeline.demo import run_demo

    result = run_demo(tmp_path / "ws", offline=True, keep_server=False, echo=lambda line: None)
    html = result.report.read_text(encoding="utf-8")
    context, r = _open(browser, tmp_path, None, name="first-screen.html", html=html)
    try:
        assert r.errors == [] and r.dialogs == []
        table = r.page.locator("table.answer")
        box = table.bounding_box()
        assert box is not None and box["y"] + box["height"] <= 900, box  # all of it on the first screen
        rows = table.locator("tbody tr")
        with open(result.report.parent / "scores.csv", newline="") as fh:
            scores = {
                row["model"]: row for row in csv.DictReader(fh)
                if row["benchmark"] == "ALL" and row["treatment"] == "corrected"
            }  # fmt: skip
        assert rows.count() == len(scores) == 5
        for i in range(rows.count()):
            text = rows.nth(i).inner_text()
            model = text.split("\t")[0].strip()
            row = scores[model]
            assert f"{100 * float(row['estimate']):.1f} %" in text, (model, text)
            assert f"[{100 * float(row['ci_low']):.1f}, {100 * float(row['ci_high']):.1f}]" in text, (model, text)
            assert "after review; the judge alone said" in text
        kpis = r.page.locator(".kpis").inner_text()
        assert "labels as collected" in kpis and "unsure votes left out" in kpis
        ARTIFACTS.mkdir(exist_ok=True)
        r.page.screenshot(path=str(ARTIFACTS / "report-first-screen.png"))
        # annotate-export/19: the lead who scrolls to the judge audit reads what it found before the method
        section = r.page.locator("section#judges")
        section.scroll_into_view_if_needed()
        finding = section.locator("p.finding").first
        assert finding.is_visible()
        said = finding.inner_text()
        assert said.startswith("strmatch is the better judge here: balanced accuracy 0.964 [")
        assert "could be chance (p = 0.10)" in said
        lead = section.locator("p.lead").first
        assert finding.bounding_box()["y"] < lead.bounding_box()["y"]
        by_model = r.page.locator("#judges-by-model + p.finding").inner_text()
        assert by_model.startswith("No: no judge's specificity on any model differs")
        assert "10 rows not testable (" in by_model and "sensitivity untested" in by_model
        assert "with too few other models to compare with" in by_model  # each row's own reason, grouped
        finding.screenshot(path=str(ARTIFACTS / "report-judges-finding.png"))
    finally:
        context.close()
