"""The people's servers and logins, on real Label Studio servers, through the CLI.

One server per person (``labelstudio.server.fleet``), reached through annotate's front door
(``labelstudio.server.frontdoor``): accounts made with a generated password that works and that
only the access sheet holds, a new password on request (the old one then fails), the one-time
invite link dead after use, a taken port replaced (and said) while the person's address stays
the same, every server stopped by `ls stop`; servers asleep until someone opens them, awake for
annotate's commands, asleep again after them and after the idle limit; and the shared server
(``one_server_per_person = false``), where the sheet says so and `route` warns before sending.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from annotate.cli import cli
from annotate.labelstudio import accounts, server
from annotate.labelstudio.server import fleet
from tests.helpers import generic_row, use_shared_server, write_jsonl
from tests.ls_fixture import free_port, golden_data_dir, golden_template_dir, label_studio_or_skip

pytestmark = pytest.mark.labelstudio

CSRF = re.compile(r'name="csrfmiddlewaretoken"\s+value="([^"]+)"')


def _cli(ws: Path, *args: str, ok: bool = True) -> Any:
    result = CliRunner().invoke(cli, ["-w", str(ws), *args])
    if ok:
        assert result.exit_code == 0, (args, result.output)
    return result


def _password(ws: Path, who: str) -> str:
    text = (ws / ".annotate" / "access" / f"{who}.txt").read_text()
    m = re.search(r"Password:\s+(\S+)", text)
    assert m
    return m.group(1)


def _door(port: int, who: str) -> dict[str, Any]:
    """How a browser reaches ``who``'s server through the front door on ``port`` (``a1.localhost``):
    httpx cannot resolve ``*.localhost`` as browsers do, so it sends the host name itself."""
    return {"base_url": f"http://127.0.0.1:{port}", "headers": {"Host": f"{who.lower()}.localhost:{port}"}}


def _logs_in(url: str, email: str, password: str, *, door: dict[str, Any] | None = None) -> bool:
    where = door or {"base_url": url}
    with httpx.Client(**where, trust_env=False, follow_redirects=False, timeout=120) as web:
        # As a browser opens it: a page load (which wakes a sleeping server behind the door; the
        # "starting" page reloads itself until it is up).
        deadline = time.monotonic() + 120
        page = web.get("/user/login/", headers={"Accept": "text/html"})
        while page.status_code == 503 and time.monotonic() < deadline:
            time.sleep(1)
            page = web.get("/user/login/", headers={"Accept": "text/html"})
        token = CSRF.search(page.text)
        assert token, page.status_code
        r = web.post(
            "/user/login/",
            data={"csrfmiddlewaretoken": token.group(1), "email": email, "password": password},
            headers={"Referer": f"{url}/user/login/"},
        )
        return r.status_code == 302


def _address(ws: Path, who: str) -> str:
    m = re.search(r"Address:\s+(\S+)/user/login/", (ws / ".annotate" / "access" / f"{who}.txt").read_text())
    assert m
    return m.group(1)


def _workspace(base: Path) -> Path:
    label_studio_or_skip()
    ws = base / "ws"
    assert CliRunner().invoke(cli, ["init", str(ws)]).exit_code == 0
    rows = [generic_row(i, model="m", benchmark="b", judge="j", judge_label="ambiguous") for i in range(4)]
    _cli(ws, "ingest", str(write_jsonl(base / "r.jsonl", rows)))
    return ws


@pytest.fixture(scope="module")
def people(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    ws = _workspace(tmp_path_factory.mktemp("people"))
    _cli(ws, "annotators", "add", "ana@example.org")
    shutil.copytree(golden_template_dir(), ws / ".annotate" / "reviewer-servers" / ".template")
    try:
        yield ws
    finally:
        _cli(ws, "ls", "stop", ok=False)


def test_a_login_that_works_and_only_the_sheet_holds(people):
    ws = people
    port = free_port()
    started = _cli(people, "ls", "start", "--port", str(port))
    password = _password(ws, "A1")
    assert password not in started.output
    srv = fleet.person_server(ws / ".annotate" / "reviewer-servers", "A1")
    assert srv is not None
    # The account was made on A1's server, which then went back to sleep: the sheet gives the front
    # door's address under A1's own name, and the first login wakes the server.
    assert not fleet.is_running(srv)
    assert _address(ws, "A1") == f"http://a1.localhost:{port}"
    assert re.search(rf"^A1 +reviewer +http://a1\.localhost:{port} +asleep ", started.output, re.MULTILINE)
    assert _logs_in(srv.url, "ana@example.org", password, door=_door(port, "A1"))
    assert fleet.is_running(srv)
    assert not _logs_in(srv.url, "ana@example.org", password + "x", door=_door(port, "A1"))
    assert (ws / ".annotate" / "access" / "A1.txt").stat().st_mode & 0o777 == 0o600
    sheet = (ws / ".annotate" / "access" / "A1.txt").read_text()
    assert "yours alone" in sheet and "Ctrl+Enter submits" in sheet and "sleeps when nobody uses it" in sheet
    table = [ln for ln in started.output.splitlines() if re.match(r"^(who |---|A1 )", ln)]
    assert len(table) == 3 and max(len(line) for line in table) <= 100, table  # the table fits 100 columns

    # Nobody can sign up on a person's server: without a link signup is closed, and the one-time
    # link annotate uses to make an account is dead right after.
    token = server.read_secrets(srv.data_dir / server.SECRETS_NAME).token

    lead = {"Authorization": f"Token {token}", server.DOOR_HEADER: server.door_key(token)}

    def invite() -> str:
        with httpx.Client(base_url=srv.url, trust_env=False) as api:
            return str(api.get("/api/invite", headers=lead).json()["invite_url"])

    def signs_up(link: str, email: str) -> bool:
        # Where a stranger can send it: the front door (the server's own port answers only the door).
        where = _door(port, "A1")
        with httpx.Client(**where, trust_env=False, follow_redirects=False) as web:
            csrf = CSRF.search(web.get(link, headers={"Accept": "text/html"}).text)
            data = {"email": email, "password": "Abcdefgh-12345"}
            if csrf:
                data["csrfmiddlewaretoken"] = csrf.group(1)
            return (
                web.post(link, data=data, headers={"Referer": f"http://a1.localhost:{port}{link}"}).status_code == 302
            )

    used = invite()
    accounts.create_account(srv.url, token, "carol@example.org")  # as `ls start` makes one
    assert invite() != used
    assert not signs_up(used, "mallory@example.org")
    assert not signs_up("/user/signup/", "mallory@example.org")
    with httpx.Client(base_url=srv.url, trust_env=False) as api:
        emails = {u["email"] for u in api.get("/api/users", headers=lead).json()}
    assert "mallory@example.org" not in emails and "carol@example.org" in emails

    # A new password: the old one stops working, the new one works; nothing printed.
    again = _cli(ws, "annotators", "access", "A1", "--new-password")
    fresh = _password(ws, "A1")
    assert fresh != password and fresh not in again.output and "access/A1.txt" in again.output
    assert _logs_in(srv.url, "ana@example.org", fresh, door=_door(port, "A1"))
    assert not _logs_in(srv.url, "ana@example.org", password, door=_door(port, "A1"))

    # Idempotent: a second start changes nothing (same password, same address).
    _cli(ws, "ls", "start", "--port", str(port))
    assert _password(ws, "A1") == fresh and _address(ws, "A1") == f"http://a1.localhost:{port}"
    listed = json.loads(_cli(ws, "ls", "status", "--json").stdout)
    (a1,) = listed["people"]
    assert a1["pseudonym"] == "A1" and a1["url"] == f"http://a1.localhost:{port}"
    assert listed["door"] == f"http://127.0.0.1:{port}"
    assert fresh not in json.dumps(listed) and token not in json.dumps(listed)

    # Through the door a reviewer cannot create projects, invite or sign up people; annotate's own
    # calls go to the server's port with its admin token.
    with httpx.Client(**_door(port, "A1"), trust_env=False, timeout=120) as web:
        for method, path in (("POST", "/api/projects/"), ("GET", "/api/invite"), ("POST", "/api/invite/reset-token"),
                             ("GET", "/user/signup/")):  # fmt: skip
            assert web.request(method, path).status_code == 403, path
        page = web.get("/user/login/").text
        assert "/__annotate/reviewer.css" in page and "/__annotate/keys.js" in page
        assert "Create new project" in web.get("/__annotate/reviewer.css").text
        # A key of the client's own is dropped: the door sends the server's (the login page still opens).
        assert web.get("/user/login/", headers={server.DOOR_HEADER: "0" * 64}).status_code == 200

    # The server's own port answers only the door: a reviewer who finds it gets nothing, not even the
    # login page, whatever they send as the key (the admin token itself is not the key either).
    assert fleet.is_running(srv)
    with httpx.Client(base_url=srv.url, trust_env=False, timeout=60) as direct:
        for headers in (
            {},
            {server.DOOR_HEADER: "0" * 64},
            {server.DOOR_HEADER: token},
            {"Authorization": f"Token {token}"},
        ):
            for path in ("/user/login/", "/api/version", "/health/", "/api/projects/"):
                refused = direct.get(path, headers=headers)
                assert refused.status_code == 403 and "front door" in refused.text, (path, headers)
        assert direct.get("/api/current-user/whoami", headers=lead).status_code == 200
    # and no output names the server's own port
    assert f":{srv.port}" not in _cli(ws, "ls", "status").output
    assert f":{srv.port}" not in (ws / ".annotate" / "access" / "A1.txt").read_text()


def test_a_new_person_while_the_front_door_runs_gets_a_server_and_an_account_at_once(people):
    ws = people
    port = free_port()
    _cli(ws, "ls", "start", "--port", str(port))
    added = _cli(ws, "annotators", "add", "ben@example.org")
    assert f"A2 logs in at http://a2.localhost:{port}" in added.output and "access/A2.txt" in added.output
    srv = fleet.person_server(ws / ".annotate" / "reviewer-servers", "A2")
    assert srv is not None and not fleet.is_running(srv)  # made, then back to sleep
    assert _logs_in(srv.url, "ben@example.org", _password(ws, "A2"), door=_door(port, "A2"))
    # A1 has no account there (and A1's name leads to A1's server, not A2's).
    assert not _logs_in(srv.url, "ana@example.org", _password(ws, "A1"), door=_door(port, "A2"))


def test_servers_sleep_when_idle_and_wake_for_people_and_commands(people):
    import time

    ws = people
    port = free_port()
    _cli(ws, "ls", "start", "--port", str(port), "--idle-minutes", "0.05")  # three seconds
    root = ws / ".annotate" / "reviewer-servers"
    srv = fleet.person_server(root, "A1")
    assert srv is not None
    with httpx.Client(**_door(port, "A1"), trust_env=False, timeout=120) as web:
        page = web.get("/user/login/", headers={"Accept": "text/html"})
        if not fleet.is_running(srv):  # a page load while it starts: a page that reloads itself
            assert page.status_code == 503 and "Starting your Label Studio" in page.text
        deadline = time.monotonic() + 120
        while web.get("/health/").status_code != 200 and time.monotonic() < deadline:
            time.sleep(1)  # the page reloads itself until the server is up
    assert fleet.is_running(srv)
    # Label Studio's background polls are not use: an open tab left alone lets the server sleep.
    with httpx.Client(**_door(port, "A1"), trust_env=False, timeout=120) as web:
        polled = time.monotonic()
        while fleet.is_running(srv) and time.monotonic() - polled < 30:
            web.get("/api/dm/project?project=1&interaction=timer")  # as the labelling page, every 20 s
            time.sleep(0.5)
        assert not fleet.is_running(srv), "a polling tab kept the server awake"
        # and asleep, an anonymous API call does not wake it: only a page load (or a logged-in write) does
        asleep = web.get("/api/version")
        assert asleep.status_code == 503 and "asleep" in asleep.json()["detail"] and not fleet.is_running(srv)
        web.get("/user/login/", headers={"Accept": "text/html"})
        deadline = time.monotonic() + 120
        while web.get("/health/").status_code != 200 and time.monotonic() < deadline:
            time.sleep(1)
    assert fleet.is_running(srv)
    deadline = time.monotonic() + 30
    while fleet.is_running(srv) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not fleet.is_running(srv), "the idle server was not stopped"
    assert "stopped after" in (root / "frontdoor.log").read_text()
    # A command that needs it wakes it, holds it while it works, and puts it back to sleep.
    again = _cli(ws, "annotators", "access", "A1", "--new-password")
    assert "access/A1.txt" in again.output and not fleet.is_running(srv)
    assert _logs_in(srv.url, "ana@example.org", _password(ws, "A1"), door=_door(port, "A1"))
    # --all: everyone up now, and kept up.
    _cli(ws, "ls", "start", "--port", str(port), "--all")
    assert all(fleet.is_running(p) for p in fleet.person_servers(root))
    time.sleep(5)
    assert all(fleet.is_running(p) for p in fleet.person_servers(root))


def test_a_taken_port_is_replaced_and_said(people):
    ws = people
    stopped = _cli(ws, "ls", "stop")
    assert "A1" in stopped.output
    srv = fleet.person_server(ws / ".annotate" / "reviewer-servers", "A1")
    assert srv is not None and not fleet.is_running(srv)
    port = free_port()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", srv.port))
        squatter.listen()
        started = _cli(ws, "ls", "start", "--port", str(port), "--only", "A1")
    assert f"A1's server moved from port {srv.port}" in started.output
    moved = fleet.person_server(ws / ".annotate" / "reviewer-servers", "A1")
    assert moved is not None and moved.port != srv.port and fleet.is_running(moved)
    # The person's address is the front door's: it did not move, and neither did the password.
    assert _address(ws, "A1") == f"http://a1.localhost:{port}"
    assert _logs_in(moved.url, "ana@example.org", _password(ws, "A1"), door=_door(port, "A1"))


def test_one_shared_server_says_so(tmp_path):
    ws = _workspace(tmp_path)
    use_shared_server(ws)
    for email in ("ana@example.org", "ben@example.org"):
        _cli(ws, "annotators", "add", email)
    try:
        # The shared server from a migrated copy (with its admin), as the tests' golden dir is.
        shutil.copytree(golden_data_dir(), ws / ".annotate" / "labelstudio")
        started = _cli(ws, "ls", "start", "--port", str(free_port()))
        assert "one_server_per_person = false" in started.output
        assert not (ws / ".annotate" / "reviewer-servers").exists()
        for who, email in (("A1", "ana@example.org"), ("A2", "ben@example.org")):
            sheet = (ws / ".annotate" / "access" / f"{who}.txt").read_text()
            assert "shared by every reviewer" in sheet
            url = re.search(r"Address:\s+(\S+)/user/login/", sheet)
            assert url and _logs_in(url.group(1), email, _password(ws, who))
        routed = _cli(ws, "route", "--round", "r1", "--annotators", "A1,A2", "--clear-per-cell", "1", "--seed", "1")
        assert "Warning: every reviewer's project goes to one Label Studio server" in routed.output
        assert "Blinding: instructions only" in routed.output
    finally:
        _cli(ws, "ls", "stop", ok=False)
