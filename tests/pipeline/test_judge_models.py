"""Does a judge err differently by target model? The issue #31 suite, end to end through the CLI.

Eight models x 400 prompts of one benchmark, two judges: j1 (routing) misses harm for two models
(sensitivity 0.45 against 0.90), j2 errs alike for all. The round reviews 80 responses of each
clear stratum and the ambiguous stratum in full, two reviewers label the truth (offline, through
Label Studio export files), adjudication settles every item, and `judges --by model --json` must
flag exactly j1's figures on those two models (at most one other row); on a null suite, at most
one row. The test's calibration over many suites is bench/judge_models.py's (docs/methods.md 9.16).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from annotate.cli import cli
from tests.helpers import (
    pull_task_files,
    sqlite_only_db_url,  # noqa: F401  (fixture: one SQLite store; the subject is not the store)
    write_jsonl,
)

pytestmark = pytest.mark.slow

BAD = {"m0", "m1"}


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (args, result.output, result.stderr)
    return result


def _suite(seed: int, bad: set[str]) -> tuple[list[dict], dict[str, str]]:
    """Rows of both judges for 8 models x 400 prompts, and the truth by response text."""
    rng = np.random.default_rng(seed)
    rows, truth = [], {}
    for k in range(8):
        model = f"m{k}"
        harmful = rng.random(400) < 0.3
        for judge, se in (("j1", 0.45 if model in bad else 0.90), ("j2", 0.90)):
            amb = rng.random(400) < 0.15
            says = np.where(harmful, rng.random(400) < se, rng.random(400) < 0.05)
            for i in range(400):
                text = f"response {i} of {model}"
                truth[text] = "harmful" if harmful[i] else "safe"
                label = "ambiguous" if amb[i] else ("harmful" if says[i] else "safe")
                rows.append(
                    {"model": model, "benchmark": "b", "prompt_id": f"p{i}", "prompt": f"prompt {i}",
                     "response": text, "judge": judge, "judge_label": label}
                )  # fmt: skip
    return rows, truth


def _reviewed(workspace, runner, tmp_path, seed: int, bad: set[str]) -> dict:
    ws, prefix = workspace
    rows, truth = _suite(seed, bad)
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "suite.jsonl", rows)))
    for email in ("a1@x.invalid", "a2@x.invalid"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    run(runner, prefix, "route", "--round", "r1", "--annotators", "A1,A2", "--judge", "j1", "--clear-per-cell", "80",
        "--ambiguous", "all", "--seed", "3", "--to-file")  # fmt: skip
    pull_task_files(runner, prefix, ws, tmp_path, lambda who, task: truth[task["data"]["response"]])
    run(runner, prefix, "adjudicate", "--round", "r1")
    return json.loads(
        run(runner, prefix, "judges", "--round", "r1", "--by", "model", "--json", "--draws", "2000").output
    )


def test_the_judge_that_misses_harm_for_two_models_is_flagged_for_those_two(workspace, runner, tmp_path):
    report = _reviewed(workspace, runner, tmp_path, seed=11, bad=BAD)
    test = report["model_test"]
    # sensitivity and specificity of two judges on eight models (PPV is shown, never tested)
    assert test["fdr"] == 0.10 and "Benjamini-Hochberg" in test["correction"] and test["tested"] == 2 * 8 * 2
    assert test["tested_figures"] == ["sensitivity", "specificity"] and test["not_testable"] == 0
    rows = [r for r in report["judges"] if r["model"] != "ALL"]
    assert all({"p_value", "q_value", "flagged"} <= set(r) for r in rows)
    flagged = {(r["judge"], r["model"]) for r in rows if r["flagged"]}
    assert {("j1", "m0"), ("j1", "m1")} <= flagged and len(flagged - {("j1", "m0"), ("j1", "m1")}) <= 1, flagged
    for m in BAD:
        (row,) = [r for r in rows if r["judge"] == "j1" and r["model"] == m]
        se = row["model_test"]["sensitivity"]
        assert se["flagged"] and se["difference"] < -0.2 and se["difference_ci"][1] < 0 and se["q_value"] <= 0.10
    # flagged rows first in the text, with the figure against the other models'
    ws, prefix = workspace
    text = run(runner, prefix, "judges", "--round", "r1", "--by", "model", "--draws", "2000").output
    first = text.index("A judge that errs differently for some models")
    assert first < text.index("All responses:") and "j1     m0" in text[first:] and "j1     m1" in text[first:]


def test_a_null_suite_flags_at_most_one(workspace, runner, tmp_path):
    report = _reviewed(workspace, runner, tmp_path, seed=12, bad=set())
    flagged = [(r["judge"], r["model"]) for r in report["judges"] if r["model"] != "ALL" and r["flagged"]]
    assert len(flagged) <= 1, flagged


def test_score_and_the_report_show_the_flagged_judge_and_both_rankings(workspace, runner, tmp_path):
    ws, prefix = workspace
    _reviewed(workspace, runner, tmp_path, seed=11, bad=BAD)
    scored = json.loads(run(runner, prefix, "score", "--round", "r1", "--draws", "1000", "--json").output)
    view = scored["judges_by_model"]
    assert {(r["judge"], r["model"]) for r in view["flagged"] if r["figure"] == "sensitivity"} == {
        ("j1", "m0"),
        ("j1", "m1"),
    }
    rows = {r["model"]: r for r in view["models"]}
    assert "j1 sensitivity" in rows["m0"]["flagged"] and rows["m0"]["pooled"] < rows["m0"]["corrected"]
    # The model whose judge misses harm looks safest under a pooled correction, not under the corrected one.
    assert rows["m0"]["pooled_rank"] < rows["m0"]["corrected_rank"]
    assert any(c["b"] == "m0" and c["p_corrected_order"] is not None for c in view["order_changes"])
    printed = run(runner, prefix, "score", "--round", "r1", "--draws", "1000").output
    assert max(map(len, printed.splitlines())) <= 100  # fits a terminal (issue #45); sentences wrap
    text = " ".join(printed.split())
    assert "judge errs differently here: j1 sensitivity" in text
    assert "a correction that pools the judge's error rates over the models would rank" in text
    # One test, one q: score, judges and export draw the test from the same posterior of the same seed.
    judged = json.loads(run(runner, prefix, "judges", "--round", "r1", "--by", "model", "--json").output)
    q_judges = {
        (r["judge"], r["model"], f): t["q_value"]
        for r in judged["judges"]
        if r.get("model_test")
        for f, t in r["model_test"].items()
        if t["q_value"] is not None
    }
    q_score = {(r["judge"], r["model"], r["figure"]): r["q_value"] for r in view["flagged"]}
    assert q_score and all(q_score[k] == q_judges[k] for k in q_score), (q_score, q_judges)
    run(runner, prefix, "export", "x", "--round", "r1", "--draws", "1000")
    folder = ws / "exports" / "x"
    import pandas as pd

    csv = pd.read_csv(folder / "judge_models.csv")
    q_export = {(r.judge, r.model, r.figure): r.q_value for r in csv.itertuples() if r.q_value == r.q_value}
    assert q_export == pytest.approx(q_judges, rel=1e-12)
    report = (folder / "report.html").read_text(encoding="utf-8")
    assert "Does a judge err differently by model?" in report and "What it does to the ranking" in report
    assert 'data-mark="model-point" data-model="m0" data-flagged="yes"' in report
    assert "j1,m0,sensitivity" in (folder / "judge_models.csv").read_text(encoding="utf-8")
    verified = run(runner, [], "verify", str(folder))
    assert "judge_models.csv   re-derived and equal" in verified.output
