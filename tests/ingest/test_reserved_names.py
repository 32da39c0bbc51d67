"""Reserved names (issue #22): the outputs name their overall rows ``ALL`` (benchmark and model, in
scores.csv, ranking.csv, judges.csv, judge_pairs.csv) and the agreement group of uncategorised
responses ``(none)``. A benchmark named ``ALL`` used to collide with the macro-average: four
indistinguishable rows per model in scores.csv and `annotate score` crashing with a TypeError.
Ingest now refuses such names (in any case, ignoring surrounding spaces), and score, judges and
export refuse a store that holds one from before.
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

import annotate.ingest.records as records
from annotate.cli import cli
from annotate.config import open_workspace
from annotate.db.store import open_store
from annotate.labelstudio.labelconfig import choices_result
from tests.helpers import (
    generic_row,
    sqlite_only_db_url,  # noqa: F401  (fixture: one SQLite store; the subject is not the store)
    write_jsonl,
)

MODELS = ("m1", "m2")
BENCHMARKS = ("ALL", "B")


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (args, result.output, result.stderr if result.stderr_bytes else "")
    return result


def stored_rows(prefix) -> int:
    store = open_store(open_workspace(prefix[1], prefix[3]).db_url)
    try:
        return len(store.responses(["benchmark"]))
    finally:
        store.close()


def rows(benchmarks=BENCHMARKS, models=MODELS):
    out = []
    for k, model in enumerate(models):
        for bench in benchmarks:
            for i in range(24):
                label = "ambiguous" if i < 3 else ("harmful" if i < 8 + k else "safe")
                out.append(
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
    return out


def verdict(task: dict) -> str:
    digest = hashlib.sha256((task["data"]["prompt"] + task["data"]["response"]).encode()).digest()
    return "harmful" if digest[0] % 3 == 0 else "safe"


@pytest.fixture
def reviewed_with_all(workspace, runner, tmp_path, monkeypatch):
    """A reviewed, adjudicated round over a benchmark named ALL, ingested as annotate did before it
    reserved the name (the ingest check switched off for the ingest only)."""
    ws, prefix = workspace
    with monkeypatch.context() as before:
        before.setattr(records, "_RESERVED", {}, raising=False)
        run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "runs.jsonl", rows())))
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


def test_a_benchmark_named_all_collides_with_the_macro_average(reviewed_with_all, runner, monkeypatch):
    """What the reservation prevents, with the store-side check switched off too: the benchmark's
    rows and the macro-average are indistinguishable, and `annotate score` crashes."""
    ws, prefix = reviewed_with_all
    monkeypatch.setattr("annotate.pipeline.record.reserved_names_held", lambda names: None, raising=False)
    crashed = runner.invoke(cli, [*prefix, "score", "--draws", "200"])
    assert isinstance(crashed.exception, TypeError)
    run(runner, prefix, "export", "collided", "--round", "r1", "--draws", "200")
    with open(ws / "exports" / "collided" / "scores.csv", newline="", encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    for model in MODELS:
        same = [r for r in table if (r["model"], r["benchmark"], r["treatment"]) == (model, "ALL", "corrected")]
        assert len(same) == 4  # the benchmark's rows and the overall ones, under one name


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ({"benchmark": "ALL"}, "the benchmark name 'ALL' is reserved"),
        ({"benchmark": "all"}, "the benchmark name 'all' is reserved"),
        ({"model": "All"}, "the model name 'All' is reserved"),
        ({"judge": " ALL "}, "the judge name ' ALL ' is reserved"),
        ({"category": "(none)"}, "the category name '(none)' is reserved"),
        ({"category": "(NONE)"}, "the category name '(NONE)' is reserved"),
    ],
)
def test_ingest_refuses_a_reserved_name(workspace, runner, tmp_path, override, expected):
    _, prefix = workspace
    path = write_jsonl(tmp_path / "rows.jsonl", [generic_row(1), generic_row(2, **override), generic_row(3)])
    result = run(runner, prefix, "ingest", str(path), ok=False)
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert f"Error: {path}:2: {expected}: it names the outputs'" in result.stderr
    assert "reserved, in any case: benchmark, model, judge 'ALL'; category '(none)'" in result.stderr
    kind = next(iter(override))
    assert (f"pass --{kind} NAME" if kind != "category" else "rename it in the file") in result.stderr
    assert stored_rows(prefix) == 0
    # --skip-invalid sets the row aside with its reason; the others go in.
    skipped = json.loads(run(runner, prefix, "ingest", str(path), "--skip-invalid", "--json").output)
    assert (skipped[0]["added"], skipped[0]["rejected"]) == (2, 1)


def test_names_that_only_contain_a_reserved_word_are_kept(workspace, runner, tmp_path):
    _, prefix = workspace
    names = [{"benchmark": "ALL-2024"}, {"model": "all-mpnet"}, {"judge": "ALLOW"}, {"category": "none"}]
    path = write_jsonl(tmp_path / "rows.jsonl", [generic_row(i, **n) for i, n in enumerate(names)])
    assert json.loads(run(runner, prefix, "ingest", str(path), "--json").output)[0]["added"] == 4


@pytest.mark.parametrize("option", ["--benchmark", "--model", "--judge"])
def test_an_option_cannot_name_a_reserved_name(workspace, runner, tmp_path, option):
    _, prefix = workspace
    path = write_jsonl(tmp_path / "rows.jsonl", [generic_row(1)])
    result = run(runner, prefix, "ingest", str(path), option, "all", ok=False)
    assert result.exit_code == 2
    assert f"Error: {option} all: the {option[2:]} name 'all' is reserved" in result.stderr
    assert "choose another name" in result.stderr
    assert stored_rows(prefix) == 0


def test_names_from_a_path_are_refused_too(workspace, runner, tmp_path):
    """A HarmBench file names its model, an lm-eval file its task: ALL.json, samples_ALL_<date>.jsonl."""
    _, prefix = workspace
    source = Path(__file__).resolve().parents[1] / "data" / "formats"
    harmbench = tmp_path / "ALL.json"
    harmbench.write_bytes((source / "harmbench" / "results_example.derived.json").read_bytes())
    result = run(runner, prefix, "ingest", str(harmbench), ok=False)
    assert f"Error: {harmbench}:1: the model name 'ALL' is reserved" in result.stderr
    lm_eval = tmp_path / "samples_ALL_2025-09-09T13-31-53.431753.jsonl"
    lm_eval.write_bytes((source / "lm_eval_harness" / "samples_gsm8k_2025-09-09T13-31-53.431753.jsonl").read_bytes())
    result = run(runner, prefix, "ingest", str(lm_eval), "--model", "gemma", ok=False)
    assert f"Error: {lm_eval}:1: the benchmark name 'ALL' is reserved" in result.stderr
    assert stored_rows(prefix) == 0
    assert run(runner, prefix, "ingest", str(harmbench), "--model", "model-all").exit_code == 0


@pytest.mark.parametrize(
    "command",
    [
        ("score", "--draws", "200"),
        ("score", "--json", "--draws", "200"),
        ("judges", "--draws", "200"),
        ("export", "audit", "--round", "r1", "--draws", "200"),
    ],
)
def test_a_store_holding_a_reserved_name_is_refused_not_scored(reviewed_with_all, runner, command):
    """Before: score crashed with a TypeError; export wrote four indistinguishable rows per model."""
    ws, prefix = reviewed_with_all
    result = run(runner, prefix, *command, ok=False)
    assert result.exit_code == 2, (result.output, repr(result.exception))
    lines = result.stderr.splitlines()
    assert lines and all(line.startswith("Error: ") for line in lines), result.stderr
    assert "the store holds responses under a reserved name (benchmark 'ALL')" in result.stderr
    assert "annotate ingest FILE --benchmark NAME" in result.stderr
    assert not (ws / "exports" / "audit").exists()
