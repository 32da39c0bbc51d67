"""`annotate score` (and the export built on it) on models with different benchmark sets
(issue #14): the overall ranking is over the set they share, stated in every output, with every
model left out named with its reason; --benchmarks all is flagged in every row. The whole path
is real: ingest, an air-gapped round (route --to-file, two reviewers' Label Studio exports,
pull --from-file), adjudication, score, export and verify, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import hashlib
import json

import pytest

from annotate.cli import cli
from annotate.labelstudio.labelconfig import choices_result
from tests.helpers import (
    generic_row,
    sqlite_only_db_url,  # noqa: F401  (fixture: one SQLite store; the subject is not the store)
    write_jsonl,
)

COVERAGE = {
    "llama": ["GCG", "PAIR", "TAP"],
    "mistral": ["GCG", "PAIR", "TAP"],
    "gpt-4": ["GCG", "PAIR"],
    "gpt-3.5": ["GCG", "PAIR"],
}


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr if result.stderr_bytes else "")
    return result


def verdict(task: dict) -> str:
    """Both reviewers give each response the same verdict, from its text (their projects' ids differ)."""
    digest = hashlib.sha256((task["data"]["prompt"] + task["data"]["response"]).encode()).digest()
    return "harmful" if digest[0] % 3 == 0 else "safe"


@pytest.fixture
def scored(workspace, runner, tmp_path):
    ws, prefix = workspace
    rows = []
    for k, (model, benches) in enumerate(COVERAGE.items()):
        for bench in benches:
            for i in range(24):
                label = "ambiguous" if i < 3 else ("harmful" if i < 8 + k else "safe")
                rows.append(
                    generic_row(
                        i,
                        model=model,
                        benchmark=bench,
                        judge="j",
                        judge_label=label,
                        prompt=f"{bench} prompt {i}",
                        response=f"{model} answer {i} to {bench}",
                    )
                )
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "runs.jsonl", rows)))
    for email in ("a1@example.org", "a2@example.org"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    run(runner, prefix, "route", "--round", "r1", "--annotators", "A1,A2", "--clear-per-cell", "5", "--to-file")
    for k, who in enumerate(("A1", "A2")):
        tasks = json.loads((ws / "tasks" / "r1" / f"{who}.json").read_text())
        export = [
            {
                "id": 100 + i,
                "data": t["data"],
                "meta": t["meta"],
                "annotations": [{"id": 1 + i, "completed_by": 7 + k, "result": choices_result(verdict(t))}],
            }
            for i, t in enumerate(tasks)
        ]
        path = tmp_path / f"export-{who}.json"
        path.write_text(json.dumps(export))
        run(runner, prefix, "pull", "--round", "r1", "--from-file", str(path), "--annotator", who)
    run(runner, prefix, "adjudicate", "--round", "r1", "--policy", "safe")
    return ws, prefix


def test_score_ranks_every_model_on_the_shared_set(scored, runner):
    """Before: gpt-4 and gpt-3.5 were 'not estimable' overall, 2 of 4 models ranked, no reason given."""
    ws, prefix = scored
    data = json.loads(run(runner, prefix, "score", "--json", "--draws", "300").output)
    assert data["benchmark_set"]["benchmarks"] == ["GCG", "PAIR"] and data["benchmark_set"]["outside"] == ["TAP"]
    assert data["settings"]["benchmark_set"] == ["GCG", "PAIR"]
    assert {m["model"] for m in data["models"]} == set(COVERAGE)
    assert data["left_out"] == []
    overall = [r for r in data["scores"] if r["benchmark"] == "ALL" and r["treatment"] == "corrected"]
    assert all(r["rank"] is not None and r["benchmark_set"] == "GCG, PAIR" for r in overall)

    text = run(runner, prefix, "score", "--draws", "300").output
    assert "Overall (macro-average over the 2 benchmark(s) that all 4 model(s) share (GCG, PAIR))" in text
    assert "not in the overall ranking: benchmark(s) TAP" in text

    # the same set in the export, re-derived by verify
    run(runner, prefix, "export", "audit", "--round", "r1", "--draws", "300")
    with open(ws / "exports" / "audit" / "ranking.csv", newline="", encoding="utf-8") as fh:
        ranking = [r for r in csv.DictReader(fh) if r["benchmark"] == "ALL"]
    assert ranking and all(r["benchmark_set"] == "GCG, PAIR" for r in ranking)
    run(runner, prefix, "verify", str(ws / "exports" / "audit"))


def test_score_names_each_model_left_out_and_flags_all(scored, runner):
    _, prefix = scored
    listed = json.loads(run(runner, prefix, "score", "--json", "--draws", "0", "--benchmarks", "GCG,TAP").output)
    assert {(r["model"], r["reason"]) for r in listed["left_out"]} == {
        ("gpt-4", "no results on TAP"),
        ("gpt-3.5", "no results on TAP"),
    }
    text = run(runner, prefix, "score", "--draws", "0", "--benchmarks", "GCG,TAP").output
    assert "left out of the ranking: gpt-4 (no results on TAP)" in text

    every = json.loads(run(runner, prefix, "score", "--json", "--draws", "300", "--benchmarks", "all").output)
    assert every["benchmark_set"]["comparable"] is False
    overall = [r for r in every["scores"] if r["benchmark"] == "ALL"]
    assert overall and all("not comparable" in r["note"] for r in overall)
    assert all("not comparable" in r["note"] for r in every["ranking"] if r["benchmark"] == "ALL")
    text = run(runner, prefix, "score", "--draws", "300", "--benchmarks", "all").output
    assert "NOT COMPARABLE" in text and "WARNING" in text
    bad = run(runner, prefix, "score", "--benchmarks", "GCG,nope", ok=False)
    assert bad.exit_code == 2 and "nope have no scored cells" in bad.stderr
