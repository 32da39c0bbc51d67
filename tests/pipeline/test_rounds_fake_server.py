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
from tests.helpers import generic_row, use_shared_server, write_jsonl
from tests.labelstudio_fake import FakeLabelStudio


@pytest.fixture
def fake() -> FakeLabelStudio:
    return FakeLabelStudio()


@pytest.fixture
def ws(tmp_path, runner):
    root = tmp_path / "ws"
    assert runner.invoke(cli, ["init", str(root)]).exit_code == 0
    use_shared_server(root)  # one fake server for everyone (tests/pipeline/test_own_servers.py: one each)
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
        ).stdout
    )


def _items_by_task(ws) -> dict[int, int]:
    """Label Studio task id -> round item, from the store (task ext_ids differ between projects)."""
    from annotate.config import open_workspace
    from annotate.db.store import open_store

    with open_store(open_workspace(str(ws), None).db_url) as store:
        out = {}
        for p in store.ls_projects().itertuples():
            tasks = store.ls_tasks(int(p.id)).dropna(subset=["task_id"])
            out.update(zip(tasks.task_id.astype(int), tasks.round_item_id.astype(int), strict=True))
    return out


def _add_reviewers(runner, ws, fake):
    for who in ("rev1@example.org", "rev2@example.org"):
        out = run(runner, ws, fake, "annotators", "add", who)
        assert "registered as" in out.output


def test_route_imports_each_task_once_in_each_annotators_order_and_blinded(runner, ws, fake):
    _add_reviewers(runner, ws, fake)
    out = _route(runner, ws, fake)
    assert out["selected"] == 2 * (5 + 4 + 4)
    a1, a2 = fake.project_by_title("r1 - A1"), fake.project_by_title("r1 - A2")
    assert len(a1.tasks) == len(a2.tasks) == 26
    items = _items_by_task(ws)
    order1 = [items[t["id"]] for t in a1.tasks]
    order2 = [items[t["id"]] for t in a2.tasks]
    assert sorted(order1) == sorted(order2) and order1 != order2  # same items, each annotator's own order
    # ...under task ids of each project's own: nothing links A1's task to A2's
    assert not {t["data"]["ext_id"] for t in a1.tasks} & {t["data"]["ext_id"] for t in a2.tasks}
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
    first = json.loads(run(runner, ws, fake, "pull", "--round", "r1", "--json").stdout)["annotators"]
    assert (first["A1"]["new"], first["A1"]["skips"], first["A1"]["quarantined"]) == (3, 1, 2)
    calls = len([c for c in fake.calls if c == "export_tasks"])
    second = json.loads(run(runner, ws, fake, "pull", "--round", "r1", "--json").stdout)["annotators"]
    assert all(c["new"] == c["updated"] == c["deleted"] == c["quarantined"] == 0 for c in second.values())
    assert len([c for c in fake.calls if c == "export_tasks"]) == calls  # nothing changed: nothing exported
    fake.update_annotation(ids[0], choices_result("safe"))
    fake.delete_annotation(ids[1])
    third = json.loads(run(runner, ws, fake, "pull", "--round", "r1", "--json").stdout)["annotators"]
    assert (third["A1"]["updated"], third["A1"]["deleted"], third["A1"]["new"]) == (1, 1, 0)
    status = json.loads(run(runner, ws, fake, "status", "--round", "r1", "--json").stdout)
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
    items = _items_by_task(ws)
    by_item: dict[int, dict[str, int]] = {}
    for who in ("A1", "A2"):
        for task in fake.project_by_title(f"r1 - {who}").tasks:
            by_item.setdefault(items[task["id"]], {})[who] = task["id"]
    disagree = set(sorted(by_item)[:3])
    for item, tasks in by_item.items():
        fake.create_annotation(
            tasks["A1"], choices_result("harmful", rationale="gives steps"), completed_by=users["A1"]
        )
        fake.create_annotation(
            tasks["A2"], choices_result("safe" if item in disagree else "harmful"), completed_by=users["A2"]
        )
    run(runner, ws, fake, "pull", "--round", "r1")
    first = json.loads(run(runner, ws, fake, "adjudicate", "--round", "r1", "--expert", "E1", "--json").stdout)
    assert first["counts"]["escalated"] == 3 and first["sent_to_expert"] >= 3
    expert = fake.project_by_title("adjudication - E1")
    assert "prior_votes" in expert.label_config
    items = _items_by_task(ws)
    escalated = [t for t in expert.tasks if items[t["id"]] in disagree]
    assert len(escalated) == 3
    reviewer_ids = {t["data"]["ext_id"] for who in ("A1", "A2") for t in fake.project_by_title(f"r1 - {who}").tasks}
    assert not {t["data"]["ext_id"] for t in expert.tasks} & reviewer_ids  # the expert's own task ids
    for task in expert.tasks:
        assert set(task["data"]) == {"prompt", "response", "ext_id", "prior_votes"}
        assert "model-" not in json.dumps(task) and "rev1@" not in json.dumps(task)
    assert "A1: harmful: gives steps" in escalated[0]["data"]["prior_votes"]
    again = json.loads(run(runner, ws, fake, "adjudicate", "--round", "r1", "--expert", "E1", "--json").stdout)
    assert again["new_records"] == 0 and again["sent_to_expert"] == 0
    assert len(expert.tasks) == len(first and expert.tasks)
    lead = fake.users["lead@example.org"]
    for task in escalated:
        fake.create_annotation(task["id"], choices_result("harmful"), completed_by=lead)
    run(runner, ws, fake, "pull", "--round", "r1")
    final = json.loads(run(runner, ws, fake, "adjudicate", "--round", "r1", "--expert", "E1", "--json").stdout)
    assert final["counts"].get("escalated", 0) == 0
    assert final["methods"].get("expert") == 3


def _labels(ws, who):
    from annotate.config import open_workspace
    from annotate.db.store import open_store

    with open_store(open_workspace(str(ws), None).db_url) as store:
        ann = store.annotations()
        projects = store.ls_projects().set_index("pseudonym")
        authors = {r.get("completed_by") for r in store.annotations_of_project(int(projects.loc[who, "id"])).values()}
    mine = ann[ann.annotator == who]
    labels = {
        int(r.ls_annotation_id): (
            int(r.round_item_id),
            r.verdict,
            None if r.confidence != r.confidence else r.confidence,
        )
        for r in mine.itertuples()
    }
    return labels, authors, projects.loc[who].get("pinned_user_id")


def test_a_server_pull_binds_labels_to_their_annotator_and_quarantines_what_does_not_fit(runner, ws, fake):
    """The server-side equivalents of issue #12's findings: edited task data, mismatched ids,
    another user's annotation, results on the wrong control or type, a fractional rating, an
    oversized rationale; and the deletion guard."""
    from annotate.labelstudio import tasks as t

    _add_reviewers(runner, ws, fake)
    _route(runner, ws, fake)
    a1 = fake.project_by_title("r1 - A1").tasks
    uid1 = fake.users["rev1@example.org"]
    good = [
        fake.create_annotation(a1[k]["id"], choices_result("harmful", confidence=4), completed_by=uid1)
        for k in range(4)
    ]
    run(runner, ws, fake, "pull", "--round", "r1")
    before, authors, pinned = _labels(ws, "A1")
    assert set(before) == set(good) and authors == {uid1} and int(pinned) == uid1

    fake.edit_task(a1[0]["id"], data={**a1[0]["data"], "response": "an edited response"})
    fake.edit_task(a1[1]["id"], meta={"ext_id": a1[2]["data"]["ext_id"]})
    rating = choices_result("safe")
    rating.append({"from_name": "confidence", "to_name": "response", "type": "rating", "value": {"rating": 2.7}})
    wrong_to = [{**choices_result("safe")[0], "to_name": "prompt"}]
    wrong_type = [{**choices_result("safe")[0], "type": "labels"}]
    too_long = choices_result("safe", rationale="x" * (t.MAX_TEXT_BYTES + 1))
    for k, result in enumerate([rating, wrong_to, wrong_type, too_long], start=4):
        fake.create_annotation(a1[k]["id"], result, completed_by=uid1)
    fake.create_annotation(a1[3]["id"], choices_result("safe"), completed_by=999)  # newer, by someone else
    out = json.loads(run(runner, ws, fake, "pull", "--round", "r1", "--json").stdout)
    assert out["annotators"]["A1"]["new"] == out["annotators"]["A1"]["deleted"] == 0
    assert out["not_counted"]["A1"] == {
        t.R_TEXT_CHANGED: 1,
        t.R_ID_MISMATCH: 1,
        t.R_INVALID_RESULT: 4,
        t.R_OTHER_USER: 1,
    }
    assert _labels(ws, "A1")[0] == before  # nothing counted, nothing deleted
    status = json.loads(run(runner, ws, fake, "status", "--round", "r1", "--quarantine", "--json").stdout)
    assert {q["kind"] for q in status["quarantine"]} == {
        t.R_TEXT_CHANGED,
        t.R_ID_MISMATCH,
        t.R_INVALID_RESULT,
        t.R_OTHER_USER,
    }
    assert "rating 2.7 is not a whole number" in " ".join(q["reason"] for q in status["quarantine"])

    # a pull that would delete more than half of a project's labels is refused (every project
    # is checked before any is written), then allowed
    a2 = fake.project_by_title("r1 - A2").tasks
    uid2 = fake.users["rev2@example.org"]
    theirs = [fake.create_annotation(a2[k]["id"], choices_result("safe"), completed_by=uid2) for k in range(4)]
    run(runner, ws, fake, "pull", "--round", "r1")
    kept = _labels(ws, "A2")[0]
    for aid in theirs[1:]:
        fake.delete_annotation(aid)
    fake.create_annotation(a1[10]["id"], choices_result("harmful"), completed_by=uid1)  # A1's: not stored either
    refused = run(runner, ws, fake, "pull", "--round", "r1", ok=False)
    assert refused.exit_code == 2 and "would mark 3 of the 4 current labels of A2's project" in refused.stderr
    assert _labels(ws, "A2")[0] == kept and _labels(ws, "A1")[0] == before
    out = json.loads(run(runner, ws, fake, "pull", "--round", "r1", "--allow-deletions", "--json").stdout)
    assert out["annotators"]["A2"]["deleted"] == 3 and out["annotators"]["A1"]["new"] == 1
