"""The front door against the attacks of issue #43, on a real door and a real Label Studio on loopback.

Before: the door matched a deny-list on the raw path (``/api/%70rojects/`` created a project,
``PATCH /api/projects/%31/`` changed its label config, ``?id=delete%5Ftasks`` deleted tasks,
``DELETE /api/tasks/N/`` was not on the list), read the first ``Content-Length`` and forwarded the
last (a second request smuggled in the body), buffered ``Content-Length: -1`` until the client left,
logged a traceback for ``abc``, had no timeout nor connection cap, woke any server for any
anonymous call, and counted Label Studio's background polls as use. Each attack below is sent as an
attacker would (a raw socket, or A1's own logged-in session) and must change nothing on the server.
"""

from __future__ import annotations

import re
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from annotate.labelstudio import server
from annotate.labelstudio.server import fleet
from annotate.labelstudio.server.frontdoor import MAX_CONNECTIONS
from tests.labelstudio.test_people_servers import CSRF, _cli, _door, _logs_in, _password, _workspace
from tests.ls_fixture import free_port, golden_template_dir

pytestmark = pytest.mark.labelstudio

TIMEOUT = 2.0  # the door's silence limit in this module (ANNOTATE_DOOR_TIMEOUT)


@pytest.fixture(scope="module")
def door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A1's server behind a door on loopback, a round routed to it, and A1 logged in through the door."""
    ws = _workspace(tmp_path_factory.mktemp("attacks"))
    _cli(ws, "annotators", "add", "ana@example.org")
    shutil.copytree(golden_template_dir(), ws / ".annotate" / "reviewer-servers" / ".template")
    port = free_port()
    mp = pytest.MonkeyPatch()
    mp.setenv("ANNOTATE_DOOR_TIMEOUT", str(TIMEOUT))
    try:
        _cli(ws, "ls", "start", "--port", str(port))
        _cli(ws, "route", "--round", "r1", "--annotators", "A1", "--clear-per-cell", "1")
        srv = fleet.person_server(ws / ".annotate" / "reviewer-servers", "A1")
        assert srv is not None
        admin_token = server.read_secrets(srv.data_dir / server.SECRETS_NAME).token
        admin = {"Authorization": f"Token {admin_token}", server.DOOR_HEADER: server.door_key(admin_token)}
        host = f"a1.localhost:{port}"
        web = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Host": host}, trust_env=False, timeout=120)
        page = web.get("/user/login/", headers={"Accept": "text/html"})
        while page.status_code == 503:  # waking
            time.sleep(1)
            page = web.get("/user/login/", headers={"Accept": "text/html"})
        token = CSRF.search(page.text)
        assert token
        login = web.post(
            "/user/login/",
            data={"csrfmiddlewaretoken": token.group(1), "email": "ana@example.org", "password": _password(ws, "A1")},
            headers={"Referer": f"http://{host}/user/login/"},
        )
        assert login.status_code == 302
        cookies = "; ".join(f"{k}={v}" for k, v in web.cookies.items())
        session = {"Host": host, "Cookie": cookies, "X-CSRFToken": web.cookies["csrftoken"],
                   "Referer": f"http://{host}/projects/"}  # fmt: skip
        yield {"ws": ws, "port": port, "srv": srv, "admin": admin, "session": session, "web": web}
        web.close()
    finally:
        mp.undo()
        _cli(ws, "ls", "stop", ok=False)


def _state(srv: fleet.PersonServer, admin: dict[str, str]) -> list[tuple[Any, ...]]:
    """What an attack could change: every project's title, label config and task count (read directly)."""
    with httpx.Client(base_url=srv.url, headers=admin, trust_env=False, timeout=60) as api:
        projects = api.get("/api/projects/", params={"page_size": 100}).json()["results"]
        return sorted((p["id"], p["title"], p["label_config"], p["task_number"]) for p in projects)


def _raw(port: int, data: bytes, *, wait: float = 10.0) -> bytes:
    """Send bytes as they are to the door; what it answers until it closes (or ``wait`` passes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(data)
        out = b""
        try:
            while chunk := sock.recv(65536):
                out += chunk
        except TimeoutError:
            pass
        return out


# Every spelling of an action a review has no use for, with A1's own session: refused by the door.
ATTACKS = [
    ("POST", "/api/%70rojects/", b'{"title": "made through the door"}'),
    ("POST", "/api/projects%2F", b'{"title": "made through the door"}'),
    ("POST", "/api/projects", b'{"title": "made through the door"}'),
    ("PATCH", "/api/projects/%31/", b'{"title": "renamed", "label_config": "<View/>"}'),
    ("PUT", "/api/projects/1/", b'{"title": "renamed"}'),
    ("DELETE", "/api/projects/%31/", b""),
    ("DELETE", "/api/projects/1", b""),
    ("GET", "/api/%69nvite", b""),
    ("GET", "/api/invite/", b""),
    ("POST", "/api/invite/reset-token", b""),
    ("POST", "/user/%73ignup/?token=x", b"email=x%40example.org&password=abcdefgh12"),
    ("POST", "/api/dm/actions?id=delete%5Ftasks&project=1", b'{"selectedItems": {"all": true}}'),
    ("POST", "/api/dm/actions?id=delete_tasks_annotations&project=1", b'{"selectedItems": {"all": true}}'),
    ("POST", "/api/dm/actions?id=next_task&id=delete_tasks&project=1", b'{"selectedItems": {"all": true}}'),
    ("DELETE", "/api/tasks/1/", b""),
    ("DELETE", "/api/projects/1/tasks/", b""),
    ("POST", "/api/projects/1/import", b'[{"data": {"prompt": "p", "response": "r"}}]'),
    ("POST", "/api/projects/1/import?commit_to_project=true", b'[{"data": {"prompt": "p", "response": "r"}}]'),
    ("POST", "/api/tasks/", b'{"project": 1, "data": {"prompt": "p", "response": "r"}}'),
    ("POST", "/api/projects/1/validate/", b'{"label_config": "<View/>"}'),
    ("POST", "/api/current-user/reset-token/", b""),
    ("PATCH", "/API/projects/1/", b'{"title": "renamed"}'),
    ("POST", "/api//projects/", b'{"title": "x"}'),
    ("GET", "/api/%2570rojects/", b""),
    ("POST", "/api/projects/./", b'{"title": "x"}'),
    ("POST", "/api/x/../projects/", b'{"title": "x"}'),
    ("DELETE", "/api/projects/1%2F", b""),
]


def test_every_spelling_of_a_refused_action_is_refused_and_changes_nothing(door):
    before = _state(door["srv"], door["admin"])
    assert before and all(count > 0 for *_, count in before)
    for method, target, body in ATTACKS:
        headers = {**door["session"], "Content-Type": "application/json"}
        r = door["web"].request(method, target, content=body, headers=headers)
        assert r.status_code in (400, 403), (method, target, r.status_code, r.text[:200])
        assert "annotate" in r.text or r.status_code == 400, (method, target)
    assert _state(door["srv"], door["admin"]) == before
    # what the labelling page does still passes (its reads, with the session)
    assert door["web"].get("/api/projects/", headers=door["session"]).status_code == 200
    assert door["web"].get("/api/current-user/whoami", headers=door["session"]).status_code == 200


def test_framing_is_read_once_and_nothing_is_smuggled(door):
    port, host = door["port"], door["session"]["Host"]
    before = _state(door["srv"], door["admin"])
    smuggled = (
        f"POST /api/projects/ HTTP/1.1\r\nHost: {host}\r\nCookie: {door['session']['Cookie']}\r\n"
        f"X-CSRFToken: {door['session']['X-CSRFToken']}\r\nContent-Type: application/json\r\n"
        'Content-Length: 13\r\n\r\n{"title":"s"}'
    ).encode()
    head = f"POST /api/tasks/1/annotations/ HTTP/1.1\r\nHost: {host}\r\nCookie: {door['session']['Cookie']}\r\n"
    cases = {
        "two lengths": head + f"Content-Length: {len(smuggled)}\r\nContent-Length: 0\r\n\r\n",
        "a negative length": head + "Content-Length: -1\r\n\r\n",
        "a length that is no number": head + "Content-Length: abc\r\n\r\n",
        "a signed length": head + "Content-Length: +5\r\n\r\n",
        "a chunked body": head + "Transfer-Encoding: chunked\r\n\r\n",
        "two hosts": head + f"Host: {host}\r\nContent-Length: 0\r\n\r\n",
        "an oversized body": head + f"Content-Length: {64 * 1024 * 1024}\r\n\r\n",
    }
    for name, request in cases.items():
        answer = _raw(port, request.encode() + smuggled)
        status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None
        assert status in (400, 411, 413), (name, answer[:200])
        assert answer.count(b"HTTP/1.1 ") == 1, (name, answer[:400])  # one answer: the rest was never read
    assert _state(door["srv"], door["admin"]) == before
    log = (
        ((door["ws"] / ".annotate" / "reviewer-servers") / "frontdoor.log").read_text()
        if ((door["ws"] / ".annotate" / "reviewer-servers") / "frontdoor.log").exists()
        else ""
    )
    assert "Traceback" not in log


def test_the_door_cannot_be_worn_down(door):
    port = door["port"]
    pid = int(
        re.search(
            r'"pid": (\d+)', ((door["ws"] / ".annotate" / "reviewer-servers") / "frontdoor.json").read_text()
        ).group(1)
    )  # type: ignore[union-attr]
    held = []
    try:
        for _ in range(MAX_CONNECTIONS + 20):  # half-sent requests, held open
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(b"GET /api/version HTTP/1.1\r\nHost: a1.local")
            held.append(sock)
        time.sleep(0.5)
        threads = int(re.search(r"Threads:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1))  # type: ignore[union-attr]
        assert threads <= MAX_CONNECTIONS + 8, threads  # a thread per served connection, no more
        # the connections over the cap were answered and closed at once
        refused = 0
        for sock in held[MAX_CONNECTIONS + 2 :]:  # (a slot or two may still be the session's keep-alive)
            refused += sock.recv(100).startswith(b"HTTP/1.1 503")
        assert refused >= 15, refused
        # the silent ones are dropped after the door's timeout, and the door serves again
        time.sleep(TIMEOUT + 2)
        assert door["web"].get("/api/version", headers=door["session"]).status_code == 200
    finally:
        for sock in held:
            sock.close()
    log = ((door["ws"] / ".annotate" / "reviewer-servers") / "frontdoor.log").read_text()
    assert "Traceback" not in log and f"refused: {MAX_CONNECTIONS} already open" in log and "timed out" in log


def test_a_server_killed_during_a_save_says_the_answer_may_have_been_saved(door):
    """Before: a submit cut by a server kill was answered "the server is starting; try again", though
    the annotation had sometimes been stored (a retry then added a second one). The server is frozen
    (SIGSTOP) so that the save is in its hands, then killed: the reviewer is told to reload and look."""
    import os
    import signal
    import threading

    srv, admin, session, port = door["srv"], door["admin"], door["session"], door["port"]
    with httpx.Client(base_url=srv.url, headers=admin, trust_env=False, timeout=60) as api:
        project = api.get("/api/projects/").json()["results"][0]["id"]
        task = api.get("/api/tasks/", params={"project": project}).json()["tasks"][0]["id"]
    pid = server.server_status(srv.data_dir).pid
    assert pid is not None
    verdict = {"from_name": "verdict", "to_name": "response", "type": "choices", "value": {"choices": ["safe"]}}
    answer: dict[str, httpx.Response] = {}

    def save() -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", trust_env=False, timeout=300) as web:
            answer["r"] = web.post(f"/api/tasks/{task}/annotations/", headers=session, json={"result": [verdict]})

    os.kill(pid, signal.SIGSTOP)
    try:
        saving = threading.Thread(target=save)
        saving.start()
        time.sleep(1.5)  # the door has sent it; the frozen server holds it
    finally:
        os.kill(pid, signal.SIGKILL)
    saving.join(300)
    said = answer["r"]
    assert said.status_code == 503 and "may have been saved" in said.json()["detail"], said.text
    assert "reload the task" in said.json()["detail"] and "try again" not in said.json()["detail"]
    assert fleet.is_running(srv)  # woken again for the reviewer's reload


def test_pull_skips_a_server_the_door_put_to_sleep_when_nothing_changed(door):
    """Before: the skip held only for servers `pull` itself had stopped; one the door had put to sleep
    was woken by every pull (23-26 s instead of 1.9 s) though nothing had changed there."""
    import json

    ws, srv, port = door["ws"], door["srv"], door["port"]

    def asleep_within(seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while fleet.is_running(srv) and time.monotonic() < deadline:
            time.sleep(0.5)
        return not fleet.is_running(srv)

    assert fleet.is_running(srv)  # A1 logged in through the door
    first = json.loads(_cli(ws, "pull", "--round", "r1", "--json").stdout)
    assert "A1" not in first["woken"]  # it was running: read, not started
    _cli(ws, "ls", "start", "--port", str(port), "--idle-minutes", "0.05")  # the door, three seconds of idleness
    assert asleep_within(30), "the door did not put the idle server to sleep"
    again = json.loads(_cli(ws, "pull", "--round", "r1", "--json").stdout)
    assert again["asleep_unchanged"] == ["A1"] and not fleet.is_running(srv)
    # a login (a new browser) writes its database: the next pull reads it again
    assert _logs_in(srv.url, "ana@example.org", _password(ws, "A1"), door=_door(port, "A1"))
    assert asleep_within(30)
    third = json.loads(_cli(ws, "pull", "--round", "r1", "--json").stdout)
    assert third["asleep_unchanged"] == [] and third["woken"] == ["A1"]
