"""annotate-export/19's plain words in the report (issue #45): a defined alpha without an interval says
"no interval" in the agreement table, its chart and the summary; older exports' data render as they did."""

from __future__ import annotations

import re

from annotate.report import render_report
from tests.report.report_sample import build_sample


def _withheld() -> dict:
    data = build_sample()
    for row in data["agreement"]:
        if row["pooled"]:
            row["alpha_ci"] = [None, None]  # a defined alpha whose interval was withheld
            row["verdict"] = "undefined"  # what agreement.json records there
    return data


def _agreement_section(page: str) -> str:
    return page[page.index('<section id="agreement">') : page.index('<section id="scores">')]


def test_a_withheld_interval_reads_no_interval_from_annotate_export_19_on():
    old = render_report(_withheld())
    assert "no interval" not in old  # an older export's report, byte for byte as before
    data = _withheld()
    data["answer_first"] = {"judge_only": "ambiguous_excluded"}  # every /19 export is /18's too
    data["plain_words"] = True
    page = render_report(data)
    section = _agreement_section(page)
    assert ">no interval<" in section  # the table's verdict badge
    assert re.search(r"0\.\d{3}, no interval", section)  # the chart's value label
    assert "[—, —]" not in section and "—–—" not in page[: page.index('<section id="ambiguity">')]
