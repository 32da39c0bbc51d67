"""`annotate init / ingest / summary` through click's CliRunner, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from annotate.cli import cli
from annotate.config import open_workspace
from annotate.db.store import open_store
from tests.data_files import data_path
from tests.helpers import generic_row, write_csv, write_jsonl


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr if result.stderr_bytes else "")
    return result


def snapshot(prefix):
    ws = open_workspace(prefix[1], prefix[3])
    store = open_store(ws.db_url)
    try:
        return (
            store.responses().drop(columns=["ingested_at"]).to_dict("records"),
            store.history().to_dict("records"),
            len(store.source_files()),
            len(store.ingest_runs()),
        )
    finally:
        store.close()


def test_init_creates_the_workspace(tmp_path, runner):
    ws = tmp_path / "w"
    result = runner.invoke(cli, ["init", str(ws)], catch_exceptions=False)
    assert result.exit_code == 0
    for name in ("annotate.toml", "label_config.xml", "tasks", "exports", ".gitignore", ".annotate/annotate.db"):
        assert (ws / name).exists(), name
    assert ".annotate/" in (ws / ".gitignore").read_text()
    again = runner.invoke(cli, ["init", str(ws)], catch_exceptions=False)
    assert again.exit_code == 0 and "kept" in again.output


def test_commands_need_a_workspace(tmp_path, runner):
    result = runner.invoke(cli, ["--workspace", str(tmp_path / "none"), "summary"])
    assert result.exit_code == 1
    assert "annotate init" in result.stderr


def test_workspace_from_environment(tmp_path, runner, monkeypatch):
    ws = tmp_path / "envws"
    runner.invoke(cli, ["init", str(ws)], catch_exceptions=False)
    monkeypatch.setenv("ANNOTATE_WORKSPACE", str(ws))
    path = write_jsonl(tmp_path / "a.jsonl", [generic_row(i) for i in range(3)])
    result = runner.invoke(cli, ["ingest", str(path)], catch_exceptions=False)
    assert result.exit_code == 0 and "3 added" in result.output


@pytest.mark.parametrize("writer,suffix", [(write_jsonl, "jsonl"), (write_csv, "csv")])
def test_ingest_is_idempotent(workspace, runner, tmp_path, writer, suffix):
    _, prefix = workspace
    path = writer(tmp_path / f"a.{suffix}", [generic_row(i) for i in range(30)])
    first = run(runner, prefix, "ingest", str(path))
    assert "[generic]" in first.output and "30 added" in first.output
    before = snapshot(prefix)
    second = run(runner, prefix, "ingest", str(path))
    assert "0 added" in second.output and "30 already present" in second.output
    assert "nothing new" in second.output
    after = snapshot(prefix)
    assert before[0] == after[0] and before[1] == after[1] == []


def test_parquet(workspace, runner, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    _, prefix = workspace
    rows = [generic_row(i, judge_score=None, epoch=i % 2) for i in range(20)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "a.parquet")
    result = run(runner, prefix, "ingest", str(tmp_path / "a.parquet"), "--json")
    (out,) = json.loads(result.output)
    assert out["format"] == "generic" and out["added"] == 20


def test_bad_rows_are_all_reported_and_nothing_is_written(workspace, runner, tmp_path):
    _, prefix = workspace
    good = write_jsonl(tmp_path / "good.jsonl", [generic_row(i) for i in range(5)])
    run(runner, prefix, "ingest", str(good))
    before = snapshot(prefix)
    rows = [
        json.dumps(generic_row(10)),
        "{not json",
        json.dumps(generic_row(11, judge_label="maybe-ish")),
        json.dumps({k: v for k, v in generic_row(12).items() if k != "response"}),
        json.dumps(generic_row(13, epoch="x")),
        json.dumps(generic_row(1, response="changed")),
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(rows) + "\n")
    result = run(runner, prefix, "ingest", str(bad), ok=False)
    assert result.exit_code == 2
    err = result.stderr
    assert f"Error: {bad}:2: not valid JSON" in err
    assert f"Error: {bad}:3: unknown judge verdict 'maybe-ish'" in err
    assert f"Error: {bad}:4: missing required field 'response'" in err
    assert f"Error: {bad}:5: field 'epoch' must be an integer" in err
    assert f"Error: {bad}:6: conflict:" in err and "--replace" in err
    assert "nothing was ingested" in err
    assert snapshot(prefix) == before


def test_skip_invalid_writes_rejects(workspace, runner, tmp_path):
    ws, prefix = workspace
    rows = [json.dumps(generic_row(1)), "{oops", json.dumps(generic_row(2, judge_label="??"))]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(rows) + "\n")
    result = run(runner, prefix, "ingest", str(bad), "--skip-invalid")
    assert "1 added" in result.output and "2 rejected" in result.output
    (rejects,) = list((ws / "rejects").glob("*.rejects.jsonl"))
    lines = [json.loads(text) for text in rejects.read_text().splitlines()]
    assert [row["line"] for row in lines] == [2, 3]
    assert lines[1]["record"]["judge_verdict"] == "??"


def test_conflict_replace_keeps_history(workspace, runner, tmp_path):
    _, prefix = workspace
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "a.jsonl", [generic_row(1)])))
    changed = write_jsonl(tmp_path / "b.jsonl", [generic_row(1, judge_label="safe", response="new text")])
    refused = run(runner, prefix, "ingest", str(changed), ok=False)
    assert refused.exit_code == 2 and "response" in refused.stderr
    result = run(runner, prefix, "ingest", str(changed), "--replace")
    assert "1 replaced" in result.output
    responses, history, *_ = snapshot(prefix)
    assert responses[0]["response"] == "new text" and responses[0]["judge_label"] == "safe"
    assert history[0]["response"] == "response number 1" and history[0]["judge_label"] == "safe"
    assert len(history) == 1


def test_duplicate_key_within_a_file_is_a_problem(workspace, runner, tmp_path):
    _, prefix = workspace
    path = write_jsonl(tmp_path / "d.jsonl", [generic_row(1), generic_row(1, response="different")])
    result = run(runner, prefix, "ingest", str(path), ok=False)
    assert result.exit_code == 2 and ":2: key" in result.stderr and "earlier in this file" in result.stderr


def test_several_files_are_all_or_nothing(workspace, runner, tmp_path):
    _, prefix = workspace
    good = write_jsonl(tmp_path / "good.jsonl", [generic_row(i) for i in range(5)])
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{broken\n")
    result = run(runner, prefix, "ingest", str(good), str(bad), ok=False)
    assert result.exit_code == 2 and "1 of 2 files refused" in result.stderr
    assert snapshot(prefix)[0] == []


def test_unsupported_file_lists_the_formats(workspace, runner, tmp_path):
    _, prefix = workspace
    odd = tmp_path / "notes.txt"
    odd.write_text("hello\n")
    result = run(runner, prefix, "ingest", str(odd), ok=False)
    assert result.exit_code == 2
    assert "not a supported format" in result.stderr
    for name in ("harmbench", "jailbreakbench", "inspect", "promptfoo", "garak", "xstest", "generic"):
        assert name in result.stderr


def test_rubric_file_overrides_and_score_band(workspace, runner, tmp_path):
    _, prefix = workspace
    rubric = tmp_path / "rubric.toml"
    rubric.write_text('[score_band]\nlow = 0.3\nhigh = 0.7\n[formats.generic.verdicts]\n"attack_success" = "harmful"\n')
    rows = [
        generic_row(1, judge_label="attack_success"),
        generic_row(2, judge_label=None, judge_score=0.5),
        generic_row(3, judge_label="", judge_score=0.9),
        generic_row(4, judge_label=None, judge_score=0.1),
        generic_row(5, judge_label=None),
    ]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    run(runner, prefix, "ingest", str(path), "--rubric", str(rubric))
    responses = {r["prompt_id"]: r for r in snapshot(prefix)[0]}
    assert (responses["p1"]["judge_label"], responses["p1"]["label_reason"]) == ("harmful", "mapped")
    assert responses["p1"]["judge_verdict"] == "attack_success"  # the raw verdict is kept
    assert (responses["p2"]["judge_label"], responses["p2"]["label_reason"]) == ("ambiguous", "score-band")
    assert responses["p3"]["judge_label"] == "harmful"
    assert responses["p4"]["judge_label"] == "safe"
    assert (responses["p5"]["judge_label"], responses["p5"]["label_reason"]) == ("ambiguous", "missing")


def test_bad_rubric_is_refused(workspace, runner, tmp_path):
    _, prefix = workspace
    rubric = tmp_path / "rubric.toml"
    rubric.write_text('[formats.generic.verdicts]\n"x" = "dangerous"\n')
    path = write_jsonl(tmp_path / "r.jsonl", [generic_row(1)])
    result = run(runner, prefix, "ingest", str(path), "--rubric", str(rubric), ok=False)
    assert result.exit_code == 2 and "dangerous" in result.stderr


def test_overrides_supply_missing_columns(workspace, runner, tmp_path):
    _, prefix = workspace
    rows = [{k: v for k, v in generic_row(i).items() if k not in ("model", "benchmark")} for i in range(3)]
    path = write_jsonl(tmp_path / "o.jsonl", rows)
    refused = run(runner, prefix, "ingest", str(path), "--format", "generic", ok=False)
    assert "missing required field 'model'" in refused.stderr
    run(runner, prefix, "ingest", str(path), "--format", "generic", "--model", "m-x", "--benchmark", "b-y")
    assert {(r["model"], r["benchmark"]) for r in snapshot(prefix)[0]} == {("m-x", "b-y")}


def test_summary_shows_ambiguity_and_rank_flips(workspace, runner, tmp_path):
    _, prefix = workspace
    rows = []
    # model A: 10% harmful, 40% ambiguous; model B: 30% harmful, 0% ambiguous.
    for i in range(10):
        rows.append(
            generic_row(
                i, model="A", benchmark="b", judge_label="harmful" if i < 1 else ("ambiguous" if i < 5 else "safe")
            )
        )
        rows.append(generic_row(i, model="B", benchmark="b", judge_label="harmful" if i < 3 else "safe"))
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "s.jsonl", rows)))
    result = run(runner, prefix, "summary")
    assert "40.0% <" in result.output
    assert "change rank" in result.output
    data = json.loads(run(runner, prefix, "summary", "--json").output)
    by_model = {r["model"]: r for r in data["ranking"]}
    assert by_model["A"]["rank_as_safe"] == 1 and by_model["A"]["rank_as_harmful"] == 2
    assert by_model["A"]["rate_as_harmful"] == pytest.approx(0.5)
    cell = next(c for c in data["cells"] if c["model"] == "A")
    assert cell["share_ambiguous"] == pytest.approx(0.4) and cell["n_responses"] == 10


def test_every_command_has_help_with_an_example(runner):
    import click

    def walk(group, path):
        for name, command in group.commands.items():
            yield [*path, name], command
            if isinstance(command, click.Group):
                yield from walk(command, [*path, name])

    for path, _command in walk(cli, []):
        result = runner.invoke(cli, [*path, "--help"])
        assert result.exit_code == 0, path
        assert "Example" in result.output, f"{' '.join(path)} --help has no example"
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for path, _command in walk(cli, []):
        assert f"annotate {' '.join(path)}" in readme, f"`annotate {' '.join(path)}` is not in the README"


def test_help_is_fast_and_imports_nothing_heavy():
    code = (
        "import sys; from annotate.cli import cli; "
        "import click.testing as t; t.CliRunner().invoke(cli, ['--help']); "
        "heavy = [m for m in ('pandas', 'sqlalchemy', 'label_studio_sdk', 'numpy') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


EXAMPLES = [
    "formats/harmbench/results_example.derived.json",
    "formats/harmbench/completions_example.derived.json",
    "formats/jailbreakbench/attack-artifacts/PAIR/black_box/llama-2-7b-chat-hf.json",
    "formats/jailbreakbench/attack-artifacts/test-artifact/black_box/vicuna-13b-v1.5.json",
    "formats/jailbreakbench/attack-artifacts/DSN/evaluation.json",
    "formats/inspect_ai/log_formats.json",
    "formats/lm_eval_harness/samples_gsm8k_2025-09-09T13-31-53.431753.jsonl",
    "formats/promptfoo/sample-export.json",
    "formats/garak/report_test.report.jsonl",
    "formats/garak/quack.report.jsonl",
    *[
        f"xstest/automated_evaluation_labels/xstest_v2_completions_{m}_gpteval.csv"
        for m in ("gpt4", "llama2new", "llama2orig", "mistralguard", "mistralinstruct")
    ],
]


def test_every_example_format_ingests_into_one_workspace(workspace, runner):
    """The issue's 'done when': every shared example ingests (auto-detected), twice safely."""
    ws, prefix = workspace
    paths = [str(data_path(p)) for p in EXAMPLES]
    first = json.loads(run(runner, prefix, "ingest", *paths, "--json").output)
    assert [o["format"] for o in first] == [
        "harmbench",
        "harmbench",
        "jailbreakbench",
        "jailbreakbench",
        "jailbreakbench",
        "inspect",
        "lm-eval",
        "promptfoo",
        "garak",
        "garak",
    ] + ["xstest"] * 5
    by_name = {Path(o["path"]).name: o for o in first}
    assert by_name["llama-2-7b-chat-hf.json"]["set_aside"] == 96
    assert (ws / "rejects").is_dir() and list((ws / "rejects").glob("llama-2-7b*.set-aside.jsonl"))
    mistral = by_name["xstest_v2_completions_mistralinstruct_gpteval.csv"]
    assert mistral["added"] == 450 and mistral["label_reasons"]["unparsed"] == 11
    second = json.loads(run(runner, prefix, "ingest", *paths, "--json").output)
    assert sum(o["added"] for o in second) == 0
    assert sum(o["duplicates"] for o in second) == sum(o["added"] for o in first)
    summary = json.loads(run(runner, prefix, "summary", "--json").output)
    xs = {c["model"]: c for c in summary["cells"] if c["benchmark"] == "xstest"}
    assert set(xs) == {"gpt4", "llama2new", "llama2orig", "mistralguard", "mistralinstruct"}
    assert xs["mistralinstruct"]["n_ambiguous"] == 13 and xs["mistralinstruct"]["n_responses"] == 450


def test_a_log_without_samples_refuses_the_ingest_unless_skip_invalid(workspace, runner):
    """Field test: one Inspect log written without samples among good files refused them all even
    with --skip-invalid. It is a problem of that file; --skip-invalid sets it aside."""
    ws, prefix = workspace
    empty = str(data_path("formats/inspect_ai/no-samples.json"))
    good = str(data_path("formats/inspect_ai/log_formats.json"))
    refused = run(runner, prefix, "ingest", empty, good, ok=False)
    assert refused.exit_code == 2 and "the log has no samples" in refused.stderr
    done = run(runner, prefix, "ingest", empty, good, "--skip-invalid")
    assert "1 added" in done.output and "1 rejected" in done.output
