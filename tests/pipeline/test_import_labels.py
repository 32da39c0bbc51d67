"""`annotate import-labels`: existing human labels as a round of their own, and the judge table
people report, against an independent computation.

The fixture is JailbreakBench's judge-comparison table in shape (its columns, 300 responses,
three raters, four judges) with placeholder texts: tests/data/formats/jailbreakbench-judges.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from annotate.cli import cli
from annotate.config import open_workspace
from annotate.db.store import open_store
from tests.ingest.test_degenerate_responses import _report

JBB = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "formats"
    / "jailbreakbench-judges"
    / "judge_comparison.synthetic.csv"
)
JUDGES = {"harmbench": "harmbench_cf", "gpt4": "gpt4_cf", "llamaguard2": "llamaguard2_cf", "llama3": "llama3_cf"}


def run(runner, prefix, *args, code=0):
    result = runner.invoke(cli, [*prefix, *map(str, args)])
    assert result.exit_code == code, (args, result.output, result.stderr if result.stderr_bytes else "")
    return result


def expected_table() -> pd.DataFrame:
    """Agreement, FPR and FNR of each judge against the majority of human1..3, with pandas alone."""
    d = pd.read_csv(JBB)
    majority = (d[["human1", "human2", "human3"]].sum(axis=1) >= 2).astype(int)
    rows = []
    for judge, column in JUDGES.items():
        v = d[column]
        rows.append(
            {
                "judge": judge,
                "agreement": (v == majority).mean(),
                "fpr": ((v == 1) & (majority == 0)).sum() / (majority == 0).sum(),
                "fnr": ((v == 0) & (majority == 1)).sum() / (majority == 1).sum(),
            }
        )
    return pd.DataFrame(rows).set_index("judge")


def pooled(report: dict) -> dict[str, dict]:
    return {r["judge"]: r for r in report["judges"] if r["benchmark"] == r["model"] == "ALL"}


def test_the_judge_comparison_file_imports_with_one_command_and_judges_reproduce_its_table(workspace, runner, tmp_path):
    _, prefix = workspace
    out = run(runner, prefix, "import-labels", JBB, "--round", "jbb").output
    assert "1200 added" in out and "Round jbb: 300 responses, 900 labels from 3 raters" in out, out
    assert "design: census" in out, out
    again = run(runner, prefix, "import-labels", JBB, "--round", "jbb").output
    assert "imported already; nothing new" in again, again
    run(runner, prefix, "adjudicate", "--round", "jbb", "--policy", "majority")
    # A model whose every response was empty: set aside at ingest, and no score.
    run(runner, prefix, "ingest", _report(tmp_path / "nano.report.jsonl", "gpt-5-nano", [""] * 5))
    agreement = json.loads(run(runner, prefix, "agreement", "--round", "jbb", "--json").output)
    assert agreement  # the round's votes read as a pulled round's

    report = json.loads(run(runner, prefix, "judges", "--round", "jbb", "--json", "--draws", "400").output)
    assert report["estimand"]["name"] == "responses" and report["estimand"]["census"] is True
    assert report["estimand"]["describes"].startswith("these 300 responses (every one reviewed: a census")
    got = pooled(report)
    want = expected_table()
    assert sorted(got) == sorted(want.index)
    for judge, row in want.iterrows():
        for figure in ("agreement", "fpr", "fnr"):
            assert got[judge][figure] == pytest.approx(row[figure], abs=1e-12), (judge, figure)
            assert got[judge][f"{figure}_ci"] == pytest.approx([row[figure]] * 2, abs=1e-12)  # a census: exact
    text = run(runner, prefix, "judges", "--round", "jbb", "--draws", "400").output
    assert "These figures describe these 300 responses (every one reviewed: a census" in text, text
    # the judge papers' table: agreement in per cent with its (zero-width: a census) interval
    assert re.search(r"^llama3 +90\.7 \[90\.7, 90\.7\]", text, re.M), text
    assert re.search(r"^gpt4 +90\.3 \[90\.3, 90\.3\]", text, re.M), text

    scored = run(runner, prefix, "score", "--round", "jbb", "--draws", "400").output
    assert "estimand responses (these prompts' responses" in scored, scored
    assert "no score: gpt-5-nano (all 5 of its responses were set aside at ingest: 5 empty response" in scored
    general = run(runner, prefix, "score", "--round", "jbb", "--draws", "400", "--estimand", "prompts").output
    assert "estimand prompts (the models on prompts like these)" in general, general

    # The judges on prompts like these: the two best are not separated, and McNemar says why.
    prompts = json.loads(
        run(runner, prefix, "judges", "--round", "jbb", "--json", "--estimand", "prompts", "--draws", "2000").output
    )
    assert prompts["estimand"]["name"] == "prompts"
    pair = next(
        p for p in prompts["pairs"] if {p["judge_a"], p["judge_b"]} == {"gpt4", "llama3"} and p["model"] == "ALL"
    )
    assert 0.05 < pair["p_a_better"] < 0.95, pair
    assert (pair["mcnemar_a_only"], pair["mcnemar_b_only"], pair["mcnemar_p"]) == (10, 11, 1.0)
    best = pooled(prompts)
    assert best["llama3"]["rank_ci"] != [1.0, 1.0]  # no longer certain
    for judge, row in want.iterrows():  # the same point figures, now with width
        lo, hi = best[judge]["agreement_ci"]
        assert lo < row["agreement"] < hi


def test_a_bad_label_is_an_error_of_its_line_and_records_nothing(workspace, runner, tmp_path):
    ws, prefix = workspace
    rows = JBB.read_text().splitlines()
    cells = rows[5].split(",")
    cells[5] = "maybe"  # human2 of the response on line 6
    bad = tmp_path / "judge_comparison.csv"
    bad.write_text("\n".join([*rows[:5], ",".join(cells), *rows[6:]]) + "\n")
    result = run(runner, prefix, "import-labels", bad, "--round", "jbb", code=2)
    assert f"Error: {bad}:6: rater 'human2': label 'maybe' is not one the value map knows" in result.stderr
    assert "--values maybe=harmful|safe|unsure" in result.stderr
    store = open_store(open_workspace(str(ws), prefix[3]).db_url)
    try:
        assert store.get_round("jbb") is None
    finally:
        store.close()
    # the stated mapping lets it in
    run(runner, prefix, "import-labels", bad, "--round", "jbb", "--values", "maybe=unsure")


def test_a_long_table_of_an_earlier_round_is_a_given_design(workspace, runner, tmp_path):
    ws, prefix = workspace
    responses = tmp_path / "runs.jsonl"
    responses.write_text(
        "".join(
            json.dumps(
                {"model": "m", "benchmark": "b", "prompt_id": f"p{i}", "prompt": "q", "response": f"answer {i}",
                 "judge": "j", "judge_label": "harmful" if i < 4 else "safe"}
            ) + "\n"
            for i in range(20)
        )
    )  # fmt: skip
    run(runner, prefix, "ingest", responses)
    labels = tmp_path / "votes.csv"
    labels.write_text(
        "item,who,label\n"
        + "".join(
            f"p{i},ana,{'harmful' if i < 3 else 'safe'}\np{i},bo,{'harmful' if i < 2 else 'safe'}\n" for i in range(8)
        )
    )
    out = run(
        runner, prefix, "import-labels", labels, "--key", "prompt_id=item", "--long", "who,label",
        "--model", "m", "--benchmark", "b", "--annotator", "ana=ana@example.org", "--round", "earlier",
    ).output  # fmt: skip
    assert "design: given" in out and "12 stored responses of these cells have no imported label" in out, out
    assert "ana = A1" in out and "bo = A2" in out, out
    store = open_store(open_workspace(str(ws), prefix[3]).db_url)
    try:
        strata = store.round_strata(int(store.get_round("earlier")["id"]))
        origin = json.loads(store.get_round("earlier")["origin"])
        emails = set(store.annotators().email)
    finally:
        store.close()
    assert sorted(zip(strata.stratum, strata.population, strata["sample"], strict=True)) == [
        ("harmful", 4, 4),
        ("safe", 16, 4),
    ]
    assert origin["design"] == "given" and origin["long"] == ["who", "label"] and len(origin["sha256"]) == 64
    assert emails == {"ana@example.org", "bo@imported.invalid"}
    # Plain majority voting: the 1-1 tie (p2) stays unresolved, under its own method.
    doc = json.loads(run(runner, prefix, "adjudicate", "--round", "earlier", "--policy", "majority", "--json").output)
    assert doc["methods"] == {"majority": 7, "policy:majority": 1}, doc
    # A key the store does not hold is an error naming it, nothing recorded.
    labels.write_text("item,who,label\np99,ana,safe\n")
    err = run(
        runner, prefix, "import-labels", labels, "--key", "prompt_id=item", "--long", "who,label",
        "--model", "m", "--benchmark", "b", "--round", "other", code=2,
    ).stderr  # fmt: skip
    assert f"{labels}:2: no stored response of model 'm', benchmark 'b', prompt_id 'p99'" in err, err
