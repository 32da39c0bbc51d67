"""An export's judge figures say which estimand they are, and `export --estimand prompts` carries it (issue #41).

A round that reviews every response (a census: three models x 40 prompts, two judges, both
reviewers label the truth) is exported twice. Under the fixed estimand (`responses`) the judge
figures describe these 120 responses: zero-width intervals, and the report says so, with McNemar's
test (the design's test under a census). Under `--estimand prompts` (the general estimand) they
describe the judges on prompts like these: intervals with width, `estimand` = `prompts` in
judges.csv, the report saying it. Both verify, every judge file re-derived.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

from annotate.cli import cli
from tests.helpers import (
    pull_task_files,
    sqlite_only_db_url,  # noqa: F401  (fixture: one SQLite store; the subject is not the store)
    write_jsonl,
)


def _run(runner, prefix, *args):
    result = runner.invoke(cli, [*prefix, *args])
    assert result.exit_code == 0, (args, result.output)
    return result


@pytest.fixture
def census(workspace, runner, tmp_path):
    ws, prefix = workspace
    rng = np.random.default_rng(4)
    rows, truth = [], {}
    for model in ("m0", "m1", "m2"):
        harmful = rng.random(40) < 0.4
        for judge, (se, sp) in (("j1", (0.85, 0.9)), ("j2", (0.7, 0.95))):
            says = np.where(harmful, rng.random(40) < se, rng.random(40) > sp)
            for i in range(40):
                text = f"response {i} of {model}"
                truth[text] = "harmful" if harmful[i] else "safe"
                label = "harmful" if says[i] else "safe"
                rows.append({"model": model, "benchmark": "b", "prompt_id": f"p{i}", "prompt": f"prompt {i}",
                             "response": text, "judge": judge, "judge_label": label})  # fmt: skip
    _run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "suite.jsonl", rows)))
    for email in ("a1@x.invalid", "a2@x.invalid"):
        _run(runner, prefix, "annotators", "add", email, "--offline")
    _run(runner, prefix, "route", "--round", "r1", "--annotators", "A1,A2", "--judge", "j1", "--clear-per-cell", "1000",
         "--ambiguous", "all", "--seed", "3", "--to-file")  # fmt: skip
    pull_task_files(runner, prefix, ws, tmp_path, lambda who, task: truth[task["data"]["response"]])
    _run(runner, prefix, "adjudicate", "--round", "r1")
    return ws, prefix


def _judges(folder):
    with open(folder / "judges.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _pairs(folder):
    with open(folder / "judge_pairs.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_a_census_exported_under_each_estimand_says_what_its_judge_figures_describe(census, runner):
    ws, prefix = census
    _run(runner, prefix, "export", "fixed", "--round", "r1", "--draws", "500")
    _run(runner, prefix, "export", "general", "--round", "r1", "--draws", "500", "--estimand", "prompts")
    fixed, general = ws / "exports" / "fixed", ws / "exports" / "general"

    rows = _judges(fixed)
    assert {r["estimand"] for r in rows} == {"responses"}
    pooled = [r for r in rows if r["benchmark"] == r["model"] == "ALL"]
    assert all(r["sensitivity_ci_low"] == r["sensitivity_ci_high"] == r["sensitivity"] for r in pooled)
    report = (fixed / "report.html").read_text(encoding="utf-8")
    assert "Estimand: responses." in report and "every one reviewed: a census" in report
    pair = next(p for p in _pairs(fixed) if p["benchmark"] == p["model"] == "ALL")
    assert pair["mcnemar_p"] and pair["p_value"]  # a census: McNemar's is the design's test

    rows = _judges(general)
    assert {r["estimand"] for r in rows} == {"prompts"}
    pooled = [r for r in rows if r["benchmark"] == r["model"] == "ALL"]
    assert all(float(r["sensitivity_ci_low"]) < float(r["sensitivity_ci_high"]) for r in pooled)
    report = (general / "report.html").read_text(encoding="utf-8")
    assert "Estimand: prompts." in report and "the judges on prompts like these" in report
    # the pair test is the prompts view's under both estimands: the same p
    assert next(p for p in _pairs(general) if p["benchmark"] == p["model"] == "ALL")["p_value"] == pair["p_value"]

    for folder in (fixed, general):
        out = _run(runner, [], "verify", str(folder)).output
        for name in ("judges.csv", "judge_pairs.csv", "judge_models.csv", "report.html"):
            assert f"{name}" in out and "re-derived and equal" in out.split(name, 1)[1].splitlines()[0], out
