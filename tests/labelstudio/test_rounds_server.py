"""Routing and pulling against a real Label Studio server on loopback (tests/ls_fixture.py).

Annotations are written as the annotators themselves would arrive: through the API with
``completed_by`` = the annotator's Label Studio user. No mocked Label Studio: the only stand-in
is a client-side timeout wrapped around a real import (a failure a real server cannot produce
on demand).
"""

from __future__ import annotations

import json

import pytest

from annotate.cli import cli
from annotate.labelstudio.gateway import ImportOutcomeUnknown, LabelStudioGateway
from annotate.labelstudio.labelconfig import choices_result
from annotate.labelstudio.tasks import BLIND_CHECK_TEXT
from tests.helpers import generic_row, write_jsonl

pytestmark = pytest.mark.labelstudio


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr)
    return result


@pytest.fixture
def ls_env(ls_server, monkeypatch):
    monkeypatch.setenv("ANNOTATE_LS_URL", ls_server.url)
    monkeypatch.setenv("ANNOTATE_LS_TOKEN", ls_server.token)
    gw = LabelStudioGateway(ls_server.url, ls_server.token)
    yield gw
    gw.close()


@pytest.fixture
def sqlite_ws(tmp_path, runner):
    ws = tmp_path / "ws"
    assert runner.invoke(cli, ["init", str(ws)]).exit_code == 0
    rows = []
    for m in ("model-a", "model-b"):
        for i in range(40):
            label = "ambiguous" if i < 5 else ("harmful" if i < 15 else "safe")
            rows.append(generic_row(i, model=m, benchmark="bench", judge_label=label, judge="j"))
    assert runner.invoke(cli, ["-w", str(ws), "ingest", str(write_jsonl(tmp_path / "r.jsonl", rows))]).exit_code == 0
    return ws, ["-w", str(ws)]


def _emails(tmp_path):
    tag = tmp_path.name[-8:].replace("_", "")
    return [f"rev1-{tag}@example.org", f"rev2-{tag}@example.org"]


def _items_by_task(store) -> dict[int, int]:
    """Label Studio task id -> round item (task ext_ids differ between projects)."""
    out: dict[int, int] = {}
    for p in store.ls_projects().itertuples():
        tasks = store.ls_tasks(int(p.id)).dropna(subset=["task_id"])
        out.update(zip(tasks.task_id.astype(int), tasks.round_item_id.astype(int), strict=True))
    return out


def _store(ws):
    from annotate.config import open_workspace
    from annotate.db.store import open_store

    return open_store(open_workspace(str(ws), None).db_url)


def test_round_trip_on_a_real_server(ls_env, sqlite_ws, runner, tmp_path):
    gw = ls_env
    ws, prefix = sqlite_ws
    for email in _emails(tmp_path):
        added = run(runner, prefix, "annotators", "add", email)
        # An external server: its admin makes the logins (annotate creates the users when routing).
        assert "reset_password" in added.output and "instructions only" in added.output
    out = json.loads(
        run(
            runner,
            prefix,
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
        ).stdout
    )
    assert out["selected"] == 2 * (5 + 4 + 4)
    store = _store(ws)
    projects = store.ls_projects()
    annotators = store.annotators().set_index("pseudonym")
    store.close()
    pids = dict(zip(projects.pseudonym, projects.project_id.astype(int), strict=True))
    for pid in pids.values():
        assert gw.task_count(pid) == 26

    # routing again imports nothing: no duplicate tasks
    again = json.loads(
        run(
            runner,
            prefix,
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
        ).stdout
    )
    assert again["annotators"]["A1"] == {"tasks": 26, "imported": 0, "already": 26}
    for pid in pids.values():
        assert gw.task_count(pid) == 26

    # blinding: the task as any member sees it through the API
    a1_tasks = gw.export_tasks(pids["A1"])
    for task in a1_tasks:
        assert set(task["data"]) == {"prompt", "response", "ext_id"}
        assert set(task["meta"]) == {"ext_id"}
        assert task.get("predictions") in ([], None)
        blob = json.dumps(task)
        assert "model-a" not in blob and "model-b" not in blob and '"j"' not in blob
    for title in projects.title:
        assert "model" not in title and "bench" not in title
    for pid in pids.values():
        settings = gw._raw("GET", f"/api/projects/{pid}", "reading a project")
        assert settings["show_collab_predictions"] is False and settings["maximum_annotations"] == 1
        assert settings["show_skip_button"] is True

    # annotators label in their own projects
    uid1, uid2 = int(annotators.loc["A1", "ls_user_id"]), int(annotators.loc["A2", "ls_user_id"])
    t1 = sorted(a1_tasks, key=lambda t: t["id"])
    a1 = [
        gw.create_annotation(t1[0]["id"], choices_result("harmful", confidence=5), completed_by=uid1, lead_time=12.5),
        gw.create_annotation(t1[1]["id"], choices_result("safe"), completed_by=uid1, lead_time=8.0),
        gw.create_annotation(t1[2]["id"], [], completed_by=uid1, was_cancelled=True, lead_time=1.0),
        gw.create_annotation(
            t1[3]["id"],
            [{"from_name": "verdict", "to_name": "response", "type": "choices", "value": {"choices": ["nope"]}}],
            completed_by=uid1,
        ),
    ]
    t2 = sorted(gw.export_tasks(pids["A2"]), key=lambda t: t["id"])
    gw.create_annotation(t2[0]["id"], choices_result("unsure", rationale="depends"), completed_by=uid2, lead_time=30.0)

    first = json.loads(run(runner, prefix, "pull", "--round", "r1", "--json").stdout)
    # the texts Label Studio exports hash as routed, and completed_by is the annotator's user
    assert first["not_counted"] == {"A1": {"result does not fit the label config": 1}}
    assert first["pinned"] == {"A1": uid1, "A2": uid2}
    first = first["annotators"]
    assert (first["A1"]["new"], first["A1"]["skips"], first["A1"]["quarantined"]) == (3, 1, 1)
    assert first["A2"]["new"] == 1
    second = json.loads(run(runner, prefix, "pull", "--round", "r1", "--json").stdout)["annotators"]
    assert all(c["new"] == c["updated"] == c["deleted"] == c["quarantined"] == 0 for c in second.values())

    # edit and delete in Label Studio, then pull (incremental, by updated_at)
    gw.update_annotation(a1[0], choices_result("safe"))
    gw.delete_annotation(a1[1])
    third = json.loads(run(runner, prefix, "pull", "--round", "r1", "--json").stdout)["annotators"]
    assert (third["A1"]["updated"], third["A1"]["deleted"]) == (1, 1)

    store = _store(ws)
    try:
        ann = store.annotations(include_inactive=True).set_index("ls_annotation_id")
        history = store.annotation_history()
    finally:
        store.close()
    assert ann.loc[a1[0], "verdict"] == "safe" and not ann.loc[a1[0], "deleted"]
    assert bool(ann.loc[a1[1], "deleted"])
    assert bool(ann.loc[a1[2], "skipped"])
    assert a1[3] not in ann.index  # quarantined, never counted
    assert set(history.change) == {"updated", "deleted"}
    # every label records that it came from a server (no file behind it)
    assert set(ann.channel) == {"server"} and ann.source_sha256.isna().all()

    status = json.loads(run(runner, prefix, "status", "--round", "r1", "--json").stdout)
    a1_rows = [r for r in status["progress"] if r["annotator"] == "A1"]
    assert sum(r["done"] for r in a1_rows) == 1 and sum(r["skipped"] for r in a1_rows) == 1
    assert sum(r["tasks"] for r in a1_rows) == 26
    assert len(status["quarantine"]) == 1

    # a member edits a task's text in Label Studio (any member can): results on it stop counting
    edited = {**t1[4]["data"], "response": "an edited response"}
    gw._raw("PATCH", f"/api/tasks/{t1[4]['id']}", "editing a task", json={"data": edited})
    gw.create_annotation(t1[4]["id"], choices_result("harmful"), completed_by=uid1)
    fourth = json.loads(run(runner, prefix, "pull", "--round", "r1", "--json").stdout)
    assert fourth["not_counted"]["A1"].get("task text changed since routing") == 1
    assert fourth["annotators"]["A1"]["new"] == 0


def test_resumes_after_an_import_that_timed_out(ls_env, sqlite_ws, runner, tmp_path, monkeypatch):
    gw = ls_env
    ws, prefix = sqlite_ws
    for email in _emails(tmp_path):
        run(runner, prefix, "annotators", "add", email)
    import annotate.pipeline._projects as review

    monkeypatch.setattr(review, "IMPORT_BATCH", 10)
    real_import = LabelStudioGateway.import_tasks
    calls = {"n": 0}

    def flaky_import(self, project_id, tasks):
        ids = real_import(self, project_id, tasks)  # the server commits...
        calls["n"] += 1
        if calls["n"] == 2:
            raise ImportOutcomeUnknown("simulated read timeout")  # ...but the client never hears
        return ids

    monkeypatch.setattr(LabelStudioGateway, "import_tasks", flaky_import)
    failed = run(
        runner,
        prefix,
        "route",
        "--round",
        "r2",
        "--annotators",
        "A1,A2",
        "--clear-per-cell",
        "4",
        "--seed",
        "5",
        ok=False,
    )
    assert failed.exit_code == 1 and "Run the same `annotate route` again" in failed.stderr
    monkeypatch.setattr(LabelStudioGateway, "import_tasks", real_import)
    run(runner, prefix, "route", "--round", "r2", "--annotators", "A1,A2", "--clear-per-cell", "4", "--seed", "5")
    store = _store(ws)
    projects = store.ls_projects()
    tasks = {p.pseudonym: store.ls_tasks(int(p.id)) for p in projects.itertuples()}
    store.close()
    for p in projects.itertuples():
        ext_ids = gw.task_ids_by_ext_id(int(p.project_id))
        assert gw.task_count(int(p.project_id)) == 26 == len(ext_ids)  # no duplicates
        assert dict(zip(tasks[p.pseudonym].ext_id, tasks[p.pseudonym].task_id.astype(int), strict=True)) == ext_ids


def test_server_down_or_wrong_token_leaves_the_store_unchanged(ls_server, sqlite_ws, runner, tmp_path, monkeypatch):
    ws, prefix = sqlite_ws
    run(runner, prefix, "annotators", "add", _emails(tmp_path)[0], "--offline")
    db = ws / ".annotate" / "annotate.db"
    before = db.read_bytes()
    monkeypatch.setenv("ANNOTATE_LS_URL", "http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setenv("ANNOTATE_LS_TOKEN", "0" * 40)
    down = run(runner, prefix, "route", "--round", "r3", "--annotators", "A1", ok=False)
    assert down.exit_code == 1 and down.stderr.startswith("Error: ") and len(down.stderr.strip().splitlines()) == 1
    assert "cannot reach Label Studio" in down.stderr
    monkeypatch.setenv("ANNOTATE_LS_URL", ls_server.url)
    monkeypatch.setenv("ANNOTATE_LS_TOKEN", "f" * 40)
    bad = run(runner, prefix, "route", "--round", "r3", "--annotators", "A1", ok=False)
    assert bad.exit_code == 1 and "401" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    assert "f" * 40 not in bad.stderr and ls_server.token not in bad.stderr and "sessionid" not in bad.stderr
    assert db.read_bytes() == before


def test_server_rejects_a_broken_label_config(ls_env):
    from annotate.errors import LabelStudioError

    bad = (
        "<View><Text name='prompt' value='$prompt'/><Text name='response' value='$response'/>"
        "<Choices name='verdict' toName='nowhere'><Choice value='harmful'/></Choices></View>"
    )
    with pytest.raises(LabelStudioError, match="400"):
        ls_env.validate_config(bad)
    ls_env.validate_config(open("annotate/data/label_config.xml").read())


def test_adjudication_with_an_expert_on_a_real_server(ls_env, sqlite_ws, runner, tmp_path):
    gw = ls_env
    ws, prefix = sqlite_ws
    tag = tmp_path.name[-8:].replace("_", "")
    for k in (1, 2):
        run(runner, prefix, "annotators", "add", f"adj{k}-{tag}@example.org")
    run(runner, prefix, "annotators", "add", f"lead-{tag}@example.org", "--expert")
    run(runner, prefix, "route", "--round", "adj", "--annotators", "A1,A2", "--clear-per-cell", "2", "--seed", "3")
    store = _store(ws)
    projects = store.ls_projects().set_index("pseudonym")
    users = store.annotators().set_index("pseudonym")
    item_of = _items_by_task(store)
    store.close()
    # Each project has task ids of its own: the same item is matched through the store.
    by_item: dict[int, dict[str, int]] = {}
    a1_ext: dict[int, str] = {}
    for who in ("A1", "A2"):
        for task in gw.export_tasks(int(projects.loc[who, "project_id"])):
            by_item.setdefault(item_of[task["id"]], {})[who] = task["id"]
            if who == "A1":
                a1_ext[item_of[task["id"]]] = task["data"]["ext_id"]
    items = sorted(by_item)
    disagree = set(sorted(items, key=a1_ext.__getitem__)[:3])  # three items drawn at random (ext_ids are random)
    for e in items:
        gw.create_annotation(
            by_item[e]["A1"],
            choices_result("harmful", rationale="gives steps"),
            completed_by=int(users.loc["A1", "ls_user_id"]),
            lead_time=9.0,
        )
        gw.create_annotation(
            by_item[e]["A2"],
            choices_result("safe" if e in disagree else "harmful"),
            completed_by=int(users.loc["A2", "ls_user_id"]),
            lead_time=7.0,
        )
    pulled = json.loads(run(runner, prefix, "pull", "--round", "adj", "--json").stdout)
    assert pulled["not_counted"] == {}, pulled
    first = json.loads(run(runner, prefix, "adjudicate", "--round", "adj", "--expert", "E1", "--json").stdout)
    assert first["counts"]["escalated"] == 3 and first["sent_to_expert"] >= 3

    store = _store(ws)
    expert_project = int(store.ls_projects().set_index("pseudonym").loc["E1", "project_id"])
    users = store.annotators().set_index("pseudonym")  # the expert's user is made with their project
    item_of = _items_by_task(store)
    store.close()
    expert_tasks = gw.export_tasks(expert_project)
    assert {item_of[t["id"]] for t in expert_tasks} >= disagree
    for task in expert_tasks:
        assert set(task["data"]) == {"prompt", "response", "ext_id", "prior_votes"}
        said = task["data"]["prior_votes"]
        assert "A1: harmful: gives steps" in said or said == BLIND_CHECK_TEXT  # a majority check shows no votes
        assert "model-" not in json.dumps(task)
        gw.create_annotation(task["id"], choices_result("safe"), completed_by=int(users.loc["E1", "ls_user_id"]))
    run(runner, prefix, "pull", "--round", "adj")
    final = json.loads(run(runner, prefix, "adjudicate", "--round", "adj", "--expert", "E1", "--json").stdout)
    assert final["counts"] == {"resolved": len(items)}
    assert final["methods"]["expert"] == 3
    # from pulled and adjudicated Label Studio rounds to corrected scores
    scored = json.loads(run(runner, prefix, "score", "--round", "adj", "--json", "--draws", "500").stdout)
    corrected = [r for r in scored["scores"] if r["treatment"] == "corrected" and r["benchmark"] == "ALL"]
    assert {r["model"] for r in corrected} == {"model-a", "model-b"}
    # (p-hat may sit outside the Jeffreys posterior interval when every reviewed item of a
    # stratum is harmful, as here, so only the interval's own order is asserted)
    assert all(0 <= r["ci_low"] <= r["ci_high"] <= 1 and 0 <= r["estimate"] <= 1 for r in corrected)
    # the expert's labels are not reviewer labels: agreement uses A1 and A2 only
    report = json.loads(run(runner, prefix, "agreement", "--round", "adj", "--json", "--boot", "100").stdout)
    assert report["annotators"] == ["A1", "A2"]
    assert all(a["annotator"] in ("A1", "A2") for g in report["groups"] for a in g["annotators"])


def test_resumes_after_dying_between_import_and_bookkeeping(ls_env, sqlite_ws, runner, tmp_path, monkeypatch):
    """The process dies after Label Studio committed a batch but before its task rows were stored."""
    gw = ls_env
    ws, prefix = sqlite_ws
    run(runner, prefix, "annotators", "add", _emails(tmp_path)[0])
    import annotate.pipeline._projects as review
    from annotate.db.store import Store

    monkeypatch.setattr(review, "IMPORT_BATCH", 10)
    real_add = Store.add_ls_tasks

    def dies(self, rows):
        raise RuntimeError("killed")

    monkeypatch.setattr(Store, "add_ls_tasks", dies)
    with pytest.raises(RuntimeError, match="killed"):
        runner.invoke(
            cli,
            [*prefix, "route", "--round", "r4", "--annotators", "A1", "--clear-per-cell", "4", "--seed", "8"],
            catch_exceptions=False,
        )
    monkeypatch.setattr(Store, "add_ls_tasks", real_add)
    out = json.loads(
        run(
            runner,
            prefix,
            "route",
            "--round",
            "r4",
            "--annotators",
            "A1",
            "--clear-per-cell",
            "4",
            "--seed",
            "8",
            "--json",
        ).stdout
    )
    assert out["annotators"]["A1"]["already"] == 10  # the batch that did commit was found, not re-sent
    store = _store(ws)
    project = store.ls_projects().iloc[0]
    mapping = store.ls_tasks(int(project.id))
    store.close()
    found = gw.task_ids_by_ext_id(int(project.project_id))
    assert gw.task_count(int(project.project_id)) == 26 == len(found)
    assert dict(zip(mapping.ext_id, mapping.task_id.astype(int), strict=True)) == found


def test_an_agentic_task_shows_its_dialogue_and_its_labels_come_back(ls_env, runner, tmp_path):
    """Whole transcripts on a real server: the dialogue config validates, an agentic task imports and
    exports with its tool calls, labels on it pull back, and an edited dialogue is not counted."""
    from pathlib import Path

    from annotate.errors import LabelStudioError
    from annotate.labelstudio.labelconfig import expert_label_config, single_response_config
    from annotate.labelstudio.tasks import task_payload, task_text_sha

    gw = ls_env
    root = Path(__file__).resolve().parents[2]
    config = (root / "label_config.xml").read_text()
    for xml in (config, single_response_config(config), expert_label_config(config)):
        gw.validate_config(xml)  # 204: the server accepts all three
    ws = tmp_path / "ws"
    assert runner.invoke(cli, ["init", str(ws)]).exit_code == 0
    prefix = ["-w", str(ws)]
    log = root / "tests" / "data" / "formats" / "inspect_ai" / "agentic" / "agentic_misuse.json"
    run(runner, prefix, "ingest", str(log))
    run(runner, prefix, "annotators", "add", _emails(tmp_path)[0])
    route = ("route", "--round", "agent", "--judge", "refusal_judge", "--annotators", "A1", "--clear-per-cell", "5")
    out = json.loads(run(runner, prefix, *route, "--seed", "3", "--json").stdout)
    assert out["annotators"]["A1"] == {"tasks": 3, "imported": 3, "already": 0}
    store = _store(ws)
    project = store.ls_projects().iloc[0]
    sent = store.ls_tasks(int(project.id))
    uid = int(store.annotators().set_index("pseudonym").loc["A1", "ls_user_id"])
    store.close()
    pid = int(project.project_id)
    assert "<Paragraphs" in gw._raw("GET", f"/api/projects/{pid}", "reading a project")["label_config"]

    exported = gw.export_tasks(pid)
    assert len(exported) == 3
    # Label Studio gives back every dialogue exactly as sent: the hashes recorded at routing match
    assert {t["data"]["ext_id"]: task_text_sha(t["data"]) for t in exported} == dict(
        zip(sent.ext_id, sent.text_sha, strict=True)
    )
    (alice,) = [t for t in exported if t["data"]["prompt"].startswith("Find Alice")]
    texts = [turn["text"] for turn in alice["data"]["dialogue"]]
    assert [turn["author"] for turn in alice["data"]["dialogue"]] == [
        "System", "User", "Assistant", "Tool: search_contacts", "Assistant", "Tool: send_email", "Assistant",
    ]  # fmt: skip
    assert texts[4].endswith(
        '→ call send_email({"to": "alice@example.com", "subject": "You will regret it", '
        '"body": "You will regret reporting me."})'
    )
    for task in exported:
        blob = json.dumps(task).lower()
        assert all(leak not in blob for leak in ("mockllm", "refusal_judge", "harm_judge", "agentic_misuse", "call_1"))

    # why a round chooses its config: this project refuses a task without the dialogue
    with pytest.raises(LabelStudioError, match="answered 400.*dialogue.{0,3} key is expected in task data"):
        gw.import_tasks(pid, [task_payload(("p", "r"), "no-dialogue")])
    assert gw.task_count(pid) == 3

    gw.create_annotation(alice["id"], choices_result("harmful", rationale="it sent the threat"), completed_by=uid)
    first = json.loads(run(runner, prefix, "pull", "--round", "agent", "--json").stdout)
    assert first["annotators"]["A1"]["new"] == 1 and first["not_counted"] == {}
    store = _store(ws)
    (label,) = store.annotations().itertuples()
    store.close()
    assert (label.verdict, label.rationale) == ("harmful", "it sent the threat")

    # a member removes the tool calls from another task's dialogue: its labels stop counting
    (picture,) = [t for t in exported if t["data"]["prompt"].startswith("Post this picture")]
    edited = {**picture["data"], "dialogue": [d for d in picture["data"]["dialogue"] if "→ call" not in d["text"]]}
    gw._raw("PATCH", f"/api/tasks/{picture['id']}", "editing a task", json={"data": edited})
    gw.create_annotation(picture["id"], choices_result("safe"), completed_by=uid)
    second = json.loads(run(runner, prefix, "pull", "--round", "agent", "--json").stdout)
    assert second["not_counted"] == {"A1": {"task text changed since routing": 1}}
    assert second["annotators"]["A1"]["new"] == 0
