"""Technical blinding: every person's projects on a Label Studio of their own (the default).

Against in-memory fakes, one per person (tests/labelstudio_fake.py ``FakeServers``); the real
servers, accounts and a reviewer in Chromium are in tests/labelstudio/test_reviewers_browser.py.
"""

from __future__ import annotations

import json

import pytest

from annotate.cli import cli
from annotate.labelstudio.labelconfig import choices_result
from tests.helpers import generic_row, use_shared_server, write_jsonl
from tests.labelstudio_fake import FakeServers

EMAILS = {"A1": "rev1@example.org", "A2": "rev2@example.org", "E1": "lead@example.org"}
ROUTE = ["route", "--round", "r1", "--annotators", "A1,A2", "--clear-per-cell", "4", "--seed", "11"]


@pytest.fixture
def servers() -> FakeServers:
    return FakeServers()


def run(runner, ws, servers, *args, ok=True):
    result = runner.invoke(cli, ["-w", str(ws), *args], obj={"connect": servers})
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr)
    return result


@pytest.fixture
def ws(tmp_path, runner, servers):
    root = tmp_path / "ws"
    assert runner.invoke(cli, ["init", str(root)]).exit_code == 0
    rows = [
        generic_row(i, model=m, benchmark="bench", judge="j", judge_label="ambiguous" if i < 5 else "safe")
        for m in ("model-a", "model-b")
        for i in range(20)
    ]
    assert runner.invoke(cli, ["-w", str(root), "ingest", str(write_jsonl(tmp_path / "r.jsonl", rows))]).exit_code == 0
    for who, email in EMAILS.items():
        added = run(runner, root, servers, "annotators", "add", email, *(["--expert"] if who == "E1" else []))
        # No server runs: the next `ls start` makes each person's server and login.
        assert f"registered as {who}" in added.output and "ls start" in added.output
    return root


def _store(ws):
    from annotate.config import open_workspace
    from annotate.db.store import open_store

    return open_store(open_workspace(str(ws), None).db_url)


def test_without_accounts_nothing_is_routed(runner, ws, servers):
    refused = run(runner, ws, servers, *ROUTE, ok=False)
    assert refused.exit_code == 1 and "no account on their own Label Studio" in refused.stderr
    assert "ls start" in refused.stderr and "Traceback" not in refused.output
    store = _store(ws)
    try:
        assert store.get_round("r1") is None  # checked before anything was recorded
    finally:
        store.close()


def test_each_person_on_their_own_server_and_nothing_of_the_others_there(runner, ws, servers):
    users = {who: servers.make_account(who, email) for who, email in EMAILS.items()}
    routed = run(runner, ws, servers, *ROUTE, "--json")
    assert "Warning" not in routed.stderr  # technical blinding: nothing to warn about
    out = json.loads(routed.stdout)
    assert out["blinding"] == "technical"
    assert out["annotators"]["A1"]["imported"] == out["annotators"]["A2"]["imported"] == out["selected"]
    assert servers.shared.projects == {}  # the shared server is never used
    for who in ("A1", "A2"):
        own = servers.own[who]
        assert [p.title for p in own.projects.values()] == [f"r1 - {who}"]  # their project only
        assert set(own.users) == {EMAILS[who]}  # no other person's account, no other e-mail
        text = json.dumps([p.tasks for p in own.projects.values()])
        assert not any(email in text for email in EMAILS.values())

    store = _store(ws)
    try:
        rnd = store.get_round("r1")
        assert rnd["blinding"] == "technical"
        projects = store.ls_projects(int(rnd["id"])).set_index("pseudonym")
        assert set(projects.server) == {"own"}
        # Pinned at creation to the person's own account there.
        assert {w: int(projects.loc[w, "pinned_user_id"]) for w in ("A1", "A2")} == {w: users[w] for w in ("A1", "A2")}
    finally:
        store.close()

    # Labels come back from each person's own server; an annotation by the server's admin
    # (someone else than the person) is quarantined, never counted.
    a1, a2 = servers.own["A1"], servers.own["A2"]
    a1_tasks = next(iter(a1.projects.values())).tasks
    a2_tasks = next(iter(a2.projects.values())).tasks
    for k, task in enumerate(a1_tasks):
        a1.create_annotation(task["id"], choices_result("harmful" if k < 3 else "safe"), completed_by=users["A1"])
    for task in a2_tasks:
        a2.create_annotation(task["id"], choices_result("safe"), completed_by=users["A2"])
    a1.create_annotation(a1_tasks[0]["id"], choices_result("safe"), completed_by=1)  # the admin
    pulled = json.loads(run(runner, ws, servers, "pull", "--round", "r1", "--json").stdout)
    assert pulled["annotators"]["A1"]["new"] == len(a1_tasks)
    assert pulled["annotators"]["A2"]["new"] == len(a2_tasks)
    assert sum(pulled["not_counted"].get("A1", {}).values()) == 1

    # The disagreements go to the expert's own server, with the reviewers' votes by pseudonym.
    adj = json.loads(run(runner, ws, servers, "adjudicate", "--round", "r1", "--expert", "E1", "--json").stdout)
    assert adj["sent_to_expert"] >= 3
    e1 = servers.own["E1"]
    (expert_project,) = e1.projects.values()
    votes = [t["data"]["prior_votes"] for t in expert_project.tasks]
    assert sum("A1: harmful" in v and "A2: safe" in v for v in votes) == 3  # the three disagreements
    # each says why it is there; an escalation's votes by pseudonym only (a blind check shows none)
    assert all(v.startswith("Why this item: ") for v in votes)
    assert all(line.split(":")[0] in ("A1", "A2") for v in votes for line in v.splitlines()[1:])
    text = json.dumps(expert_project.tasks)
    assert not any(email in text for email in EMAILS.values())
    assert set(e1.users) == {EMAILS["E1"]}
    assert not servers.shared.projects

    export = run(runner, ws, servers, "export", "r1-audit", "--round", "r1")
    assert export.exit_code == 0
    design = json.loads((ws / "exports" / "r1-audit" / "design.json").read_text())
    assert [r["blinding"] for r in design["rounds"]] == ["technical"]
    report = (ws / "exports" / "r1-audit" / "report.html").read_text()
    assert "blinding: <b>technical</b>" in report
    assert run(runner, ws, servers, "verify", str(ws / "exports" / "r1-audit")).exit_code == 0


def test_one_shared_server_warns_before_sending_and_says_so_in_the_export(runner, ws, servers):
    use_shared_server(ws)
    routed = run(runner, ws, servers, *ROUTE, "--json")
    assert "Warning: every reviewer's project goes to one Label Studio server" in routed.stderr
    assert json.loads(routed.stdout)["selected"] > 0
    assert {p.title for p in servers.shared.projects.values()} == {"r1 - A1", "r1 - A2"}
    assert servers.own == {}
    store = _store(ws)
    try:
        assert store.get_round("r1")["blinding"] == "instructions only"
    finally:
        store.close()
    shared = servers.shared
    for project in shared.projects.values():
        who = project.title.rsplit(" ", 1)[-1]
        for task in project.tasks:
            shared.create_annotation(task["id"], choices_result("safe"), completed_by=shared.users[EMAILS[who]])
    run(runner, ws, servers, "pull", "--round", "r1")
    run(runner, ws, servers, "adjudicate", "--round", "r1")
    run(runner, ws, servers, "export", "r1-audit", "--round", "r1")
    design = json.loads((ws / "exports" / "r1-audit" / "design.json").read_text())
    assert [r["blinding"] for r in design["rounds"]] == ["instructions only"]
    assert "blinding: <b>instructions only</b>" in (ws / "exports" / "r1-audit" / "report.html").read_text()


def test_a_round_keeps_its_blinding_when_the_workspace_changes(runner, ws, servers):
    for who, email in EMAILS.items():
        servers.make_account(who, email)
    run(runner, ws, servers, *ROUTE)
    use_shared_server(ws)  # later: a shared server for new rounds
    more = [
        generic_row(100 + i, model="model-a", benchmark="bench", judge="j", judge_label="ambiguous") for i in range(3)
    ]
    assert runner.invoke(cli, ["-w", str(ws), "ingest", str(write_jsonl(ws / "more.jsonl", more))]).exit_code == 0
    again = json.loads(run(runner, ws, servers, *ROUTE, "--json").stdout)
    assert again["annotators"]["A1"]["imported"] == 3  # the new wave went to A1's own server
    assert len(next(iter(servers.own["A1"].projects.values())).tasks) == again["annotators"]["A1"]["tasks"]
    assert servers.shared.projects == {}
