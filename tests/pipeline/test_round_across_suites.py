"""One round across suites: several tools' outputs, each benchmark on its own judge (real stores).

Two "tools" wrote outputs of the same two models on two benchmarks, each with its own judge (as
every format brings its own: HarmBench's classifier, JailbreakBench's Llama-3 judge, ...). Before
issue #24 such a workspace could not be routed without ``--judge``, and a round took one judge, so
reviewers needed one project per tool. Every store test runs on SQLite and PostgreSQL; no Label
Studio is needed (``--to-file`` and ``pull --from-file``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from annotate.cli import cli
from tests.helpers import (
    generic_row,
    pull_task_files,
    sqlite_only_db_url,  # noqa: F401  (fixture: one SQLite store; the subject is not the store)
    write_jsonl,
)

ROUTE = ("--annotators", "A1,A2", "--clear-per-cell", "4", "--seed", "5")
DATA = Path(__file__).resolve().parents[1] / "data" / "formats"
MODELS = ("m1", "m2")
N = 30


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (args, result.output, result.stderr)
    else:
        assert result.exit_code != 0, (args, result.output)
    return result


def _label(i: int) -> str:
    return ("harmful", "safe", "ambiguous")[i % 3] if i < 24 else "safe"


def _tool_rows(benchmark: str, judge: str, offset: int) -> list[dict]:
    return [
        generic_row(
            i,
            model=m,
            benchmark=benchmark,
            judge=judge,
            judge_label=_label(i + offset),
            prompt=f"{benchmark} prompt {i}",
            response=f"{benchmark} answer {i} {'HARM' if (i + offset) % 4 == 0 else 'ok'}",
        )
        for m in MODELS
        for i in range(N)
    ]


@pytest.fixture
def two_tools(workspace, runner, tmp_path):
    ws, prefix = workspace
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "hb.jsonl", _tool_rows("hb", "hb-classifier", 0))))
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "jbb.jsonl", _tool_rows("jbb", "llama3-judge", 1))))
    for email in ("a1@example.org", "a2@example.org"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    return ws, prefix


def _pull(runner, prefix, ws: Path, tmp: Path, disagree_on: set[int] = frozenset()) -> None:
    """Each reviewer labels every task of their file: harmful when the answer says HARM."""

    def say(who, task):
        found = re.search(r"answer (\d+) (HARM|ok)$", task["data"]["response"])
        assert found is not None, task["data"]
        verdict = "harmful" if found.group(2) == "HARM" else "safe"
        if who == "A2" and int(found.group(1)) in disagree_on:
            verdict = "safe" if verdict == "harmful" else "harmful"
        return verdict

    pull_task_files(runner, prefix, ws, tmp, say)


def test_two_tools_outputs_are_one_round_each_benchmark_on_its_judge(two_tools, runner, tmp_path):
    ws, prefix = two_tools
    # Before: "the store holds verdicts of several judges (hb-classifier, llama3-judge); choose one with --judge."
    out = json.loads(run(runner, prefix, "route", "--round", "r1", *ROUTE, "--to-file", "--json").output)
    assert out["judges"] == {"hb": "hb-classifier", "jbb": "llama3-judge"}
    assert out["judge"] == "hb=hb-classifier, jbb=llama3-judge"
    assert {s["benchmark"] for s in out["strata"]} == {"hb", "jbb"}
    # Every ambiguous response of each benchmark's own judge is in (census), 4 from each clear stratum.
    for s in out["strata"]:
        offset = 0 if s["benchmark"] == "hb" else 1
        want = sum(1 for i in range(N) if _label(i + offset) == s["stratum"])
        assert s["population"] == want, s
        assert s["sample"] == (want if s["stratum"] == "ambiguous" else min(4, want)), s
    # One project (task file) per reviewer holds both tools' responses, blind to both.
    a1 = json.loads((ws / "tasks" / "r1" / "A1.json").read_text())
    assert {t["data"]["prompt"].split()[0] for t in a1} == {"hb", "jbb"}
    assert len(a1) == out["selected"]
    text = json.dumps(a1)
    for leak in ("hb-classifier", "llama3-judge", "m1", "m2", "ambiguous"):
        assert leak not in text, leak


def test_the_round_is_scored_exported_and_verified_with_the_judge_of_each_benchmark(two_tools, runner, tmp_path):
    ws, prefix = two_tools
    run(runner, prefix, "route", "--round", "r1", *ROUTE, "--to-file")
    _pull(runner, prefix, ws, tmp_path, disagree_on={3})
    adjudicated = json.loads(run(runner, prefix, "adjudicate", "--round", "r1", "--json").output)
    assert adjudicated["round"] == "r1"
    scores = json.loads(run(runner, prefix, "score", "--round", "r1", "--json").output)
    benches = {r["benchmark"] for r in scores["scores"]}
    assert {"hb", "jbb"} <= benches
    agreement = run(runner, prefix, "agreement", "--round", "r1")
    assert "alpha" in agreement.output.lower()
    audit = json.loads(run(runner, prefix, "judges", "--round", "r1", "--json").output)
    assert {r["judge"] for r in audit["judges"]} >= {"hb-classifier", "llama3-judge"}, audit
    status = run(runner, prefix, "status", "--round", "r1")
    assert "r1" in status.output
    run(runner, prefix, "export", "x1", "--round", "r1")
    folder = ws / "exports" / "x1"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["schema"] == "annotate-export/19"
    design = json.loads((folder / "design.json").read_text())
    (rnd,) = design["rounds"]
    assert rnd["judges"] == {"hb": "hb-classifier", "jbb": "llama3-judge"}
    assert rnd["judge"] == "hb=hb-classifier, jbb=llama3-judge"
    labels = (folder / "labels.csv").read_text().splitlines()
    header = labels[0].split(",")
    bi, ji = header.index("benchmark"), header.index("judge")
    pairs = {(line.split(",")[bi], line.split(",")[ji]) for line in labels[1:]}
    assert pairs == {("hb", "hb-classifier"), ("jbb", "llama3-judge")}
    verified = run(runner, [], "verify", str(folder))
    assert verified.stdout.startswith("OK"), verified.output


def test_an_export_of_such_a_round_relabelled_as_annotate_export_5_is_refused(two_tools, runner, tmp_path):
    ws, prefix = two_tools
    run(runner, prefix, "route", "--round", "r1", *ROUTE, "--to-file")
    _pull(runner, prefix, ws, tmp_path)
    run(runner, prefix, "adjudicate", "--round", "r1")
    run(runner, prefix, "export", "x1", "--round", "r1")
    folder = ws / "exports" / "x1"
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["schema"] = "annotate-export/5"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    refused = run(runner, [], "verify", str(folder), ok=False)
    assert "judge per benchmark" in refused.output and "annotate-export/6" in refused.output


def test_a_benchmark_with_several_judges_needs_its_judge_named(two_tools, runner, tmp_path):
    ws, prefix = two_tools
    second = _tool_rows("hb", "strmatch", 2)
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "hb2.jsonl", second)))
    refused = run(runner, prefix, "route", "--round", "r1", *ROUTE, "--to-file", ok=False)
    assert "hb: hb-classifier, strmatch" in refused.output
    assert "--judge hb=hb-classifier" in refused.output
    out = json.loads(
        run(runner, prefix, "route", "--round", "r1", *ROUTE, "--judge", "hb=strmatch", "--to-file", "--json").output
    )
    assert out["judges"] == {"hb": "strmatch", "jbb": "llama3-judge"}
    # One judge for every benchmark it judged: the others are said to be left out.
    dry = json.loads(
        run(runner, prefix, "route", "--round", "r2", *ROUTE, "--judge", "strmatch", "--dry-run", "--json").output
    )
    assert "judges" not in dry and dry["judge"] == "strmatch"
    assert any("jbb" in n for n in dry["notes"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--judge", "hb=nobody"), "no responses of benchmark 'hb' judged by 'nobody'"),
        (("--judge", "hb-classifier", "--judge", "llama3-judge"), "give one, and BENCHMARK=JUDGE"),
        (("--judge", "hb=hb-classifier", "--judge", "hb=llama3-judge"), "already routed on 'hb-classifier'"),
        (("--judge", "hb=hb-classifier", "--strata-from", "hb-classifier,llama3-judge"), "does not take a judge"),
    ],
)
def test_bad_judge_mappings_are_refused_before_anything_is_recorded(two_tools, runner, args, message):
    ws, prefix = two_tools
    refused = run(runner, prefix, "route", "--round", "r1", *ROUTE, *args, "--to-file", ok=False)
    assert message in refused.output
    assert not (ws / "tasks" / "r1").exists()
    status = run(runner, prefix, "route", "--round", "r1", *ROUTE, "--dry-run", "--json")
    assert json.loads(status.output)["judges"] == {"hb": "hb-classifier", "jbb": "llama3-judge"}


def test_a_one_judge_store_routes_as_before(workspace, runner, tmp_path):
    ws, prefix = workspace
    rows = _tool_rows("hb", "hb-classifier", 0) + _tool_rows("jbb", "hb-classifier", 1)
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "one.jsonl", rows)))
    for email in ("a1@example.org", "a2@example.org"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    out = json.loads(run(runner, prefix, "route", "--round", "r1", *ROUTE, "--to-file", "--json").output)
    assert out["judge"] == "hb-classifier" and "judges" not in out and "notes" not in out


def test_real_files_of_two_tools_route_in_one_round(workspace, runner):
    """HarmBench's results file and a JailbreakBench artifact, each with the judge its tool names."""
    ws, prefix = workspace
    run(runner, prefix, "ingest", str(DATA / "harmbench" / "results_example.derived.json"))
    run(
        runner,
        prefix,
        "ingest",
        str(DATA / "jailbreakbench" / "attack-artifacts" / "JBC" / "manual" / "vicuna-13b-v1.5.json"),
    )
    for email in ("a1@example.org", "a2@example.org"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    out = json.loads(run(runner, prefix, "route", "--round", "r1", *ROUTE, "--to-file", "--json").output)
    assert out["judges"] == {
        "harmbench": "harmbench-classifier",
        "jailbreakbench/JailbreakChat": "Llama3JailbreakJudge",
    }
    assert out["selected"] == 7
    assert len(json.loads((ws / "tasks" / "r1" / "A2.json").read_text())) == 7


def _ingest_quality(runner, prefix, tmp_path, benchmark: str) -> None:
    """A quality judge (a completeness grader) on one benchmark's responses, said in a rubric file."""
    rubric = tmp_path / "quality.toml"
    rubric.write_text('[formats.generic.judges."completeness"]\nkind = "quality"\n', encoding="utf-8")
    rows = _tool_rows(benchmark, "completeness", 2)
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / f"q-{benchmark}.jsonl", rows)), "--rubric", str(rubric))


def test_a_quality_judge_is_never_a_routing_default(two_tools, runner, tmp_path):
    """Beside a benchmark's safety judge, a quality judge is not a choice to make: the safety judge routes."""
    ws, prefix = two_tools
    _ingest_quality(runner, prefix, tmp_path, "hb")
    out = json.loads(run(runner, prefix, "route", "--round", "r1", *ROUTE, "--dry-run", "--json").output)
    assert out["judges"] == {"hb": "hb-classifier", "jbb": "llama3-judge"}


def test_a_benchmark_judged_only_for_quality_is_left_out_and_said(two_tools, runner, tmp_path):
    ws, prefix = two_tools
    _ingest_quality(runner, prefix, tmp_path, "qa")
    out = json.loads(run(runner, prefix, "route", "--round", "r1", *ROUTE, "--dry-run", "--json").output)
    assert out["judges"] == {"hb": "hb-classifier", "jbb": "llama3-judge"}
    assert any("qa (judges completeness (quality))" in n for n in out["notes"]), out["notes"]
    named = json.loads(
        run(
            runner, prefix, "route", "--round", "r1", *ROUTE, "--judge", "qa=completeness", "--dry-run", "--json"
        ).output
    )
    assert named["judges"]["qa"] == "completeness"
    assert any("completeness of qa is a quality judge" in n for n in named["notes"]), named["notes"]


def test_plan_before_any_round_takes_each_benchmarks_own_judge(two_tools, runner):
    _, prefix = two_tools
    out = json.loads(run(runner, prefix, "plan", "--target-halfwidth", "0.1", "--json").output)
    assert {s["benchmark"] for s in out["strata"]} == {"hb", "jbb"}
