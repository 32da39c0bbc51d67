"""`annotate score --estimator ppi` end to end on the bundled XSTest data, through the CLI.

The bundled GPT-4 judge routes the round and gives labels, not scores, so the prediction is a
second judge's label: XSTest's string-match judge (``*_streval.csv``) on the same responses.
The reviewers' verdicts are XSTest's two real human annotations and the expert's its final
label, replayed through Label Studio export files (as ``annotate demo --offline`` does).
"""

from __future__ import annotations

import json
import math

import pytest

from annotate.cli import cli
from annotate.columns import ALL
from annotate.stats.scoring import check_scores
from tests.xstest_rounds import MODELS, replay, run, two_judge_workspace

ROUND = "r1"


@pytest.fixture(scope="module")
def xstest_ws(tmp_path_factory):
    """A workspace with both judges ingested and one adjudicated round routed on the GPT-4 judge."""
    from click.testing import CliRunner

    runner = CliRunner()
    root = tmp_path_factory.mktemp("ppi")
    ws = root / "ws"
    prefix = two_judge_workspace(runner, ws)
    run(
        runner,
        prefix,
        "route",
        "--round",
        ROUND,
        "--annotators",
        "A1,A2",
        "--clear-per-cell",
        "25",
        "--seed",
        "2024",
        "--judge",
        "gpt4",
        "--to-file",
    )
    replay(ws, ROUND, {"A1": "annotation_1", "A2": "annotation_2"})
    run(runner, prefix, "adjudicate", "--round", ROUND, "--expert", "E1", "--to-file")
    replay(ws, ROUND, {"E1": "final_label"}, experts_only=True)
    run(runner, prefix, "adjudicate", "--round", ROUND, "--expert", "E1", "--to-file")
    return ws, prefix


def ppi_json(runner, prefix, *args):
    out = run(runner, prefix, "score", "--round", ROUND, "--estimator", "ppi", "--json", *args).output
    return json.loads(out, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))


def test_ppi_runs_end_to_end_beside_the_design_based_rates(xstest_ws, runner):
    _ws, prefix = xstest_ws
    doc = ppi_json(runner, prefix)
    assert doc["estimator"] == "ppi"
    rows = doc["scores"]
    overall = {r["model"]: r for r in rows if r["benchmark"] == ALL}
    assert set(overall) == set(MODELS)
    # The design-based figures beside are the default command's corrected rows, to the digit.
    design = json.loads(run(runner, prefix, "score", "--round", ROUND, "--json").output)
    corrected = {(r["model"], r["benchmark"]): r for r in design["scores"] if r["treatment"] == "corrected"}
    for r in rows:
        d = corrected[(r["model"], r["benchmark"])]
        assert (r["design_estimate"], r["design_ci_low"], r["design_ci_high"]) == (
            d["estimate"],
            d["ci_low"],
            d["ci_high"],
        )
    # Every response has the string-match judge's label as its prediction, a binary one: a stratum
    # where it disagrees with the humans on fewer than 5 reviewed items keeps the design-based
    # estimate (a cross-fitted lambda from so few disagreements undercovers) and says so.
    fallen = [s for s in doc["strata"] if s["fallback"]]
    assert fallen, "XSTest's string-match judge rarely disagrees with the humans inside one stratum"
    for s in fallen:
        assert "(fewer than 5)" in s["fallback"] and "the design-based estimate is kept" in s["fallback"], s
    for r in overall.values():
        n = sum(1 for s in fallen if s["model"] == r["model"])
        assert (r["flag"] == "") == (n == 0), r
        assert not n or f"design-based in {n} of " in r["flag"], r
    assert {s["prediction"] for s in doc["strata"]} == {"other judges"}
    (src,) = doc["predictions"]
    assert src["judge"] == "gpt4" and src["other_judges"] == ["strmatch"]
    assert src["without_prediction"] == 0 and src["predicted"] == src["responses"] == 2250
    # The invariant: every estimate inside its own interval, every null with its reason.
    assert check_scores(rows) == []
    for r in rows:
        assert r["estimate"] is not None and r["ci_low"] is not None, r
        assert r["gain"] is None or r["gain"] > 0
    # A model with no harmful response in its sample has no sampling variance and so no gain
    # figure; the row says so instead of inventing one.
    for r in overall.values():
        assert r["gain"] is not None or "no gain figure: no sampling variance" in r["note"], r
    # With the fallbacks, PPI gains little on XSTest (methods 9.5): the gains sit near 1, never a
    # large loss, and never a figure without the sampling variance to back it.
    gains = [r["gain"] for r in overall.values() if r["gain"] is not None]
    assert len(gains) >= 3 and all(0.8 < g < 1.25 for g in gains), gains


def test_ppi_text_output_names_both_estimators_and_the_source(xstest_ws, runner):
    _ws, prefix = xstest_ws
    text = run(runner, prefix, "score", "--round", ROUND, "--estimator", "ppi").output
    assert "corrected" in text and "PPI++" in text and "gain" in text
    assert "strmatch" in text and "routing judge gpt4" in text
    assert "exports, verify and the report carry the design-based scores only" in text
    by_bench = run(runner, prefix, "score", "--round", ROUND, "--estimator", "ppi", "--by", "benchmark").output
    assert "Benchmark xstest" in by_bench


def test_ppi_general_estimand_and_no_draws(xstest_ws, runner):
    _ws, prefix = xstest_ws
    doc = ppi_json(runner, prefix, "--estimand", "general")
    assert check_scores(doc["scores"]) == []
    assert all("general" in r["interval"] for r in doc["scores"])
    none = ppi_json(runner, prefix, "--draws", "0")
    assert check_scores(none["scores"]) == []
    for r in none["scores"]:
        assert r["ci_low"] is None and "no posterior draws" in r["note"]


def test_the_default_estimator_is_unchanged(xstest_ws, runner):
    """`score` without --estimator prints what it printed before (the PPI code path is not entered)."""
    _ws, prefix = xstest_ws
    plain = run(runner, prefix, "score", "--round", ROUND).output
    design = run(runner, prefix, "score", "--round", ROUND, "--estimator", "design").output
    assert plain == design
    assert "PPI" not in plain


def test_ppi_refuses_treatments(xstest_ws, runner):
    _ws, prefix = xstest_ws
    result = runner.invoke(cli, [*prefix, "score", "--round", ROUND, "--estimator", "ppi", "--treatments", "corrected"])
    assert result.exit_code == 2
    assert "Error:" in result.output and "--treatments" in result.output


def test_ppi_is_deterministic(xstest_ws, runner):
    _ws, prefix = xstest_ws
    a = ppi_json(runner, prefix, "--seed", "3")
    b = ppi_json(runner, prefix, "--seed", "3")
    assert a == b
    assert all(math.isfinite(r["estimate"]) for r in a["scores"])
