"""Route, pull and adjudicate through the Gateway protocol, against the in-memory Label Studio.

The same flows run against a real server in tests/labelstudio/test_rounds_server.py; these run
in well under a second each, so they can cover more paths: incremental pulls, edits, deletions,
skips, another user's annotation, resume after an import whose outcome was lost, the expert's
project, and blinding of every payload.
"""

from __future__ import annotations

import json

import pytest

from annotate.cli import cli
from annotate.labelstudio.labelconfig import choices_result
from tests.helpers import generic_row, write_jsonl
from tests.labelstudio_fake import FakeLabelStudio


@pytest.fixture
def fake() -> FakeLabelStudio:
    return FakeLabelStudio()


@pytest.fixture
def ws(tmp_path, runner):
    root = tmp_path / "ws"
    assert runner.invoke(cli, ["init", str(root)]).exit_code == 0
    rows = []
    for m in ("model-a", "model-b"):
        for i in range(40):
            label = "ambiguous" if i < 5 else ("harmful" if i < 15 else "safe")
            rows.append(generic_row(i, model=m, benchmark="bench", judge_label=label, judge="j"))
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    assert runner.invoke(cli, ["-w", str(root), "ingest", str(path)]).exit_code == 0
    return root


def run(runner, ws, fake, *args, ok=True):
    result = runner.invoke(cli, ["-w", str(ws), *args], obj={"connect": fake})
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr)
    return result


def _route(runner, ws, fake, *extra):
    return json.loads(
        run(
            runner,
            ws,
            fake,
            "route",
            "--round",
            "r1",
            "--annotators",
            "A1,A2",
            "--clear-per-cell",
            "4",
            "--seed",
            "11",
            "--json",
            *extra,
        ).output
    )


def _add_reviewers(runner, ws, fake):
    for who in ("rev1@example.org", "rev2@example.org"):
        out = run(runner, ws, fake, "annotators", "add", who)
        assert "invite link" in out.output


def test_route_imports_each_task_once_in_each_annotators_order_and_blinded(runner, ws, fake):
    _add_reviewers(runner, ws, fake)
    out = _route(runner, ws, fake)
    assert out["selected"] == 2 * (5 + 4 + 4)
    a1, a2 = fake.project_by_title("r1 - A1"), fake.project_by_title("r1 - A2")
    assert len(a1.tasks) == len(a2.tasks) == 26
    ext1 = [t["data"]["ext_id"] for t in a1.tasks]
    ext2 = [t["data"]["ext_id"] for t in a2.tasks]
    assert sorted(ext1) == sorted(ext2) and ext1 != ext2  # same tasks, each annotator's own order
    for task in a1.tasks + a2.tasks:
        assert set(task["data"]) == {"prompt", "response", "ext_id"} and set(task["meta"]) == {"ext_id"}
        blob = json.dumps(task)
        assert "model-a" not in blob and "model-b" not in blob and "bench" not in blob and '"j"' not in blob
    again = _route(runner, ws, fake)
    assert again["annotators"]["A1"] == {"tasks": 26, "imported": 0, "already": 26}
    assert len(a1.tasks) == 26
    assert fake.closed >= 2  # every session's gateway is closed


def test_pull_is_incremental_and_keeps_edits_deletions_skips_and_quarantine(runner, ws, fake):
    _add_reviewers(runner, ws, fake)
    _route(runner, ws, fake)
    a1 = fake.project_by_title("r1 - A1")
    uid1 = fake.users["rev1@example.org"]
    t = a1.tasks
    ids = [
        fake.create_annotation(t[0]["id"], choices_result("harmful", confidence=5), completed_by=uid1, lead_time=3.0),
        fake.create_annotation(t[1]["id"], choices_result("safe"), completed_by=uid1),
        fake.create_annotation(t[2]["id"], [], completed_by=uid1, was_cancelled=True),
        fake.create_annotation(t[3]["id"], choices_result("nope"), completed_by=uid1),  # not a choice
        fake.create_annotation(t[4]["id"], choices_result("safe"), completed_by=999),  # someone else
    ]
    first = json.loads(run(runner, ws, fake, "pull", "--round", "r1", "--json").output)["annotators"]
    assert (first["A1"]["new"], first["A1"]["skips"], first["A1"]["quarantined"]) == (3, 1, 2)
    calls = len([c for c in fake.calls if c == "export_tasks"])
    second = json.loads(run(runner, ws, fake, "pull", "--round", "r1", "--json").output)["annotators"]
    assert all(c["new"] == c["updated"] == c["deleted"] == c["quarantined"] == 0 for c in second.values())
    assert len([c for c in fake.calls if c == "export_tasks"]) == calls  # nothing changed: nothing exported
    fake.update_annotation(ids[0], choices_result("safe"))
    fake.delete_annotation(ids[1])
    third = json.loads(run(runner, ws, fake, "pull", "--round", "r1", "--json").output)["annotators"]
    assert (third["A1"]["updated"], third["A1"]["deleted"], third["A1"]["new"]) == (1, 1, 0)
    status = json.loads(run(runner, ws, fake, "status", "--round", "r1", "--json").output)
    assert len(status["quarantine"]) == 2
    assert sum(r["done"] for r in status["progress"] if r["annotator"] == "A1") == 1


def test_a_lost_import_outcome_is_recovered_by_ext_id_and_never_duplicated(runner, ws, fake, monkeypatch):
    import annotate.pipeline._projects as projects

    monkeypatch.setattr(projects, "IMPORT_BATCH", 10)
    _add_reviewers(runner, ws, fake)
    fake.fail_next_import = True  # the first batch commits, then its outcome is lost
    failed = run(
        runner,
        ws,
        fake,
        "route",
        "--round",
        "r1",
        "--annotators",
        "A1,A2",
        "--clear-per-cell",
        "4",
        "--seed",
        "11",
        ok=False,
    )
    assert failed.exit_code == 1 and "Run the same `annotate route` again" in failed.stderr
    assert "10 of 10 tasks turned out to be there" in failed.stderr
    out = _route(runner, ws, fake)
    assert out["annotators"]["A1"]["tasks"] == 26
    for project in fake.projects.values():
        ext = [t["data"]["ext_id"] for t in project.tasks]
        assert len(ext) == len(set(ext)) == 26  # nothing imported twice


def test_escalations_go_to_the_experts_project_with_the_reviewers_votes_only(runner, ws, fake):
    _add_reviewers(runner, ws, fake)
    run(runner, ws, fake, "annotators", "add", "lead@example.org", "--expert")
    _route(runner, ws, fake)
    users = {p: fake.users[f"rev{p[-1]}@example.org"] for p in ("A1", "A2")}
    by_ext: dict[str, dict[str, int]] = {}
    for who in ("A1", "A2"):
        for task in fake.project_by_title(f"r1 - {who}").tasks:
            by_ext.setdefault(task["data"]["ext_id"], {})[who] = task["id"]
    disagree = set(sorted(by_ext)[:3])
    for ext, tasks in by_ext.items():
        fake.create_annotation(
            tasks["A1"], choices_result("harmful", rationale="gives steps"), completed_by=users["A1"]
        )
        fake.create_annotation(
            tasks["A2"], choices_result("safe" if ext in disagree else "harmful"), completed_by=users["A2"]
        )
    run(runner, ws, fake, "pull", "--round", "r1")
    first = json.loads(run(runner, ws, fake, "adjudicate", "--round", "r1", "--expert", "E1", "--json").output)
    assert first["counts"]["escalated"] == 3 and first["sent_to_expert"] >= 3
    expert = fake.project_by_title("adjudication - E1")
    assert "prior_votes" in expert.label_config
    escalated = [t for t in expert.tasks if t["data"]["ext_id"] in disagree]
    assert len(escalated) == 3
    for task in expert.tasks:
        assert set(task["data"]) == {"prompt", "response", "ext_id", "prior_votes"}
        assert "model-" not in json.dumps(task) and "rev1@" not in json.dumps(task)
    assert "A1: harmful: gives steps" in escalated[0]["data"]["prior_votes"]
    again = json.loads(run(runner, ws, fake, "adjudicate", "--round", "r1", "--expert", "E1", "--json").output)
    assert again["new_records"] == 0 and again["sent_to_expert"] == 0
    assert len(expert.tasks) == len(first and expert.tasks)
    lead = fake.users["lead@example.org"]
    for task in escalated:
        fake.create_annotation(task["id"], choices_result("harmful"), completed_by=lead)
    run(runner, ws, fake, "pull", "--round", "r1")
    final = json.loads(run(runner, ws, fake, "adjudicate", "--round", "r1", "--expert", "E1", "--json").output)
    assert final["counts"].get("escalated", 0) == 0
    assert final["methods"].get("expert") == 3
