"""`status` after labels came from Label Studio export files (issue #45): it says when, not a server's old time."""

from __future__ import annotations

import json

from annotate.cli import cli
from tests.helpers import pull_task_files, write_jsonl


def test_status_says_the_labels_are_as_of_the_last_file_pull(tmp_path, runner):
    ws = tmp_path / "ws"
    db = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    assert runner.invoke(cli, ["init", str(ws), "--db", db]).exit_code == 0
    prefix = ["--workspace", str(ws), "--db", db]
    rows = [
        {"model": m, "benchmark": "b", "prompt_id": f"p{i}", "prompt": f"q{i}", "response": f"{m} r{i}",
         "judge": "j", "judge_label": ("ambiguous", "safe", "harmful")[i % 3]}
        for m in ("m1", "m2") for i in range(12)
    ]  # fmt: skip
    assert runner.invoke(cli, [*prefix, "ingest", str(write_jsonl(tmp_path / "t.jsonl", rows))]).exit_code == 0
    for email in ("a1@x.invalid", "a2@x.invalid"):
        assert runner.invoke(cli, [*prefix, "annotators", "add", email, "--offline"]).exit_code == 0
    routed = runner.invoke(cli, [*prefix, "route", "--round", "r1", "--annotators", "A1,A2", "--to-file"])
    assert routed.exit_code == 0, routed.output
    before = runner.invoke(cli, [*prefix, "status", "--round", "r1"]).output
    assert "nothing pulled yet" in before.splitlines()[0]
    pull_task_files(runner, prefix, ws, tmp_path, lambda who, task: "safe")
    text = runner.invoke(cli, [*prefix, "status", "--round", "r1"]).output
    lines = text.splitlines()
    table_at = next(k for k, line in enumerate(lines) if line.startswith("reviewer "))
    head = " ".join(" ".join(lines[:table_at]).split())  # the heading, wrapped to 100 columns
    assert "labels as of the last pull, from Label Studio export files, 20" in head, text
    out = json.loads(runner.invoke(cli, [*prefix, "status", "--round", "r1", "--json"]).output)
    assert all(r["last_file_pull_at"] and r["last_pulled_at"] is None for r in out["reviewers"])
