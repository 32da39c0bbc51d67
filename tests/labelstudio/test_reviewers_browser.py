"""Reviewers as people: they log in with what annotate gave them, label with the hotkeys, and reach
nothing of anyone else's, in Chromium against the embedded servers (one per person).

The workspace is made through the CLI as a lead would: `init`, `ingest`, `annotators add` for two
reviewers and an expert, `ls start` (each person's server and account), `route`. Then each
reviewer, in a browser of their own, follows their access sheet (the file the lead hands them):
opens the address, logs in with the e-mail and password on it, opens their project, presses
"Label All Tasks", closes the instructions and judges every task with the hotkeys 1/2/3 and
Ctrl+Enter; A1 then changes one verdict in the Data Manager. `pull` and `agreement` must see
exactly those labels. Logged in as A1, nothing of A2's or the expert's (projects, tasks, votes,
e-mail) is reachable: not in the UI, not through the API with A1's session or A1's own token.

Screenshots: tests/artifacts/reviewer-*.png. Needs Label Studio and Chromium (skipped locally
without them, failing under CI).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from annotate.cli import cli
from tests.browser import ARTIFACTS, browser  # noqa: F401  (fixture)
from tests.helpers import generic_row, write_jsonl
from tests.ls_fixture import free_port, golden_template_dir, label_studio_or_skip

pytestmark = pytest.mark.labelstudio

PEOPLE = {"A1": "ana.reviewer@example.org", "A2": "ben.reviewer@example.org", "E1": "eve.expert@example.org"}
KEYS = {"harmful": "1", "safe": "2", "unsure": "3"}
VIEWPORT = {"width": 1366, "height": 768}


def _cli(runner: Any, ws: Path, *args: str) -> Any:
    result = runner.invoke(cli, ["-w", str(ws), *args])
    assert result.exit_code == 0, (args, result.output)
    return result


@pytest.fixture(scope="module")
def lead(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A round routed to A1 and A2 on their own servers, as a lead does it with the CLI."""
    from click.testing import CliRunner

    label_studio_or_skip()
    runner = CliRunner()
    base = tmp_path_factory.mktemp("reviewers")
    ws = base / "ws"
    assert runner.invoke(cli, ["init", str(ws)]).exit_code == 0
    rows = [
        generic_row(
            i,
            model="model-secret-name",
            benchmark="bench",
            judge="j",
            judge_label="ambiguous" if i < 3 else ("harmful" if i < 8 else "safe"),
            prompt=f"Prompt {i:02d} asks about topic {i:02d}.",
        )
        for i in range(14)
    ]
    _cli(runner, ws, "ingest", str(write_jsonl(base / "r.jsonl", rows)))
    for who, email in PEOPLE.items():
        _cli(runner, ws, "annotators", "add", email, *(["--expert"] if who == "E1" else []))
    # The migrated template, as `ls start` would build it in the workspace (a minute, once).
    shutil.copytree(golden_template_dir(), ws / ".annotate" / "reviewer-servers" / ".template")
    started = _cli(runner, ws, "ls", "start", "--port", str(free_port()))
    try:
        for who in PEOPLE:  # made, then asleep until they open their address
            assert re.search(rf"^{who} .* asleep .*access/{who}\.txt", started.output, re.MULTILINE), started.output
        assert "password" not in started.output.lower() or "Password:" not in started.output
        _cli(runner, ws, "route", "--round", "r1", "--annotators", "A1,A2", "--clear-per-cell", "1", "--seed", "5")
        yield {"ws": ws, "runner": runner, "sheets": {who: _sheet(ws, who) for who in PEOPLE}}
    finally:
        runner.invoke(cli, ["-w", str(ws), "ls", "stop"])


def _sheet(ws: Path, who: str) -> dict[str, str]:
    """What a person reads off their access sheet: address, e-mail, password."""
    path = ws / ".annotate" / "access" / f"{who}.txt"
    assert path.stat().st_mode & 0o777 == 0o600
    text = path.read_text(encoding="utf-8")
    fields = {k: re.search(rf"^\s*{k}:\s+(\S+)\s*$", text, re.MULTILINE) for k in ("Address", "E-mail", "Password")}
    assert all(fields.values()), text
    return {k.lower(): m.group(1) for k, m in fields.items() if m is not None}


class _Answer:
    """What a fetch in the page answered."""

    def __init__(self, status: int, text: str) -> None:
        self.status, self.text = status, text

    def json(self) -> Any:
        return json.loads(self.text)


def _log_in(chromium: Any, sheet: dict[str, str], name: str) -> Any:
    context = chromium.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.goto(sheet["address"])
    page.wait_for_selector("input[name=email]", timeout=120_000)  # the server wakes up: "Starting ..." first
    page.fill("input[name=email]", sheet["e-mail"])
    page.fill("input[name=password]", sheet["password"])
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_load_state("networkidle")
    assert "/user/login" not in page.url, f"{name} could not log in"
    return page


def _verdict_for(prompt: str, who: str) -> str:
    """The reviewer's deterministic judgement of a prompt (so the test knows every label)."""
    return list(KEYS)[int(hashlib.sha256(f"{who}:{prompt}".encode()).hexdigest(), 16) % 3]


def _shown_prompt(page: Any) -> str:
    text = page.locator(".lsf-main-view, .lsf-wrapper, body").first.inner_text()
    m = re.search(r"(Prompt \d\d asks about topic \d\d\.)", text)
    assert m, text[:500]
    return m.group(1).strip()


def _label_all(page: Any, who: str, shots: str) -> dict[str, str]:
    """Judge every task of the stream with the hotkeys; prompt -> verdict chosen."""
    page.get_by_text(f"r1 - {who}").first.click()
    page.get_by_text("Label All Tasks").first.click()
    page.get_by_text("Labeling Instructions").wait_for()
    page.screenshot(path=str(ARTIFACTS / f"{shots}-instructions.png"))
    page.keyboard.press("Escape")
    chosen: dict[str, str] = {}
    done = page.get_by_text("No More Tasks Left in Queue")
    for k in range(20):
        page.wait_for_function(
            "() => document.body.innerText.includes('Verdict') || document.body.innerText.includes('No More Tasks')"
        )
        if done.count():
            break
        prompt = _shown_prompt(page)
        if prompt in chosen:
            break
        verdict = _verdict_for(prompt, who)
        page.keyboard.press(KEYS[verdict])
        assert page.locator("input[type=radio]:checked").count() == 1
        if k == 0:
            page.screenshot(path=str(ARTIFACTS / f"{shots}-first-task.png"))
        with page.expect_response(lambda r: "/annotations" in r.url and r.request.method == "POST") as posted:
            page.keyboard.press("Control+Enter")
        assert posted.value.status == 201
        chosen[prompt] = verdict
        page.wait_for_function("(p) => !document.body.innerText.includes(p)", arg=prompt, timeout=15_000)
    assert done.count(), "the stream did not end"
    page.screenshot(path=str(ARTIFACTS / f"{shots}-done.png"))
    return chosen


def _change_one(page: Any, who: str, chosen: dict[str, str], shots: str) -> str:
    """In the Data Manager, open the first labelled task and change its verdict; its prompt."""
    page.goto(page.url.split("/projects/")[0] + "/projects/")
    page.get_by_text(f"r1 - {who}").first.click()
    page.locator(".lsf-table__row-wrapper").first.wait_for()
    page.locator(".lsf-table__row-wrapper").first.click()
    update = page.locator("button:has-text('Update')")
    update.wait_for()
    prompt = _shown_prompt(page)
    new = next(v for v in KEYS if v != chosen[prompt])
    page.keyboard.press(KEYS[new])
    with page.expect_response(lambda r: "/annotations/" in r.url and r.request.method == "PATCH") as patched:
        update.click()
    assert patched.value.status == 200
    page.screenshot(path=str(ARTIFACTS / f"{shots}-changed.png"))
    chosen[prompt] = new
    return prompt


def _stored_labels(ws: Path, who: str) -> dict[str, str]:
    from annotate.config import open_workspace
    from annotate.db.store import open_store

    with open_store(open_workspace(str(ws), None).db_url) as store:
        rnd = store.get_round("r1")
        labels = store.annotations(int(rnd["id"]))
        texts = store.item_texts([int(i) for i in labels.round_item_id])
    mine = labels[(labels.annotator == who) & ~labels.skipped.astype(bool) & ~labels.deleted.astype(bool)]
    return {texts[int(i)][0]: str(v) for i, v in zip(mine.round_item_id, mine.verdict, strict=True)}


def test_reviewers_log_in_label_with_hotkeys_and_their_labels_come_back(lead, browser):  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    ws, runner, sheets = lead["ws"], lead["runner"], lead["sheets"]
    chosen = {}
    for who in ("A1", "A2"):
        page = _log_in(browser, sheets[who], who)
        # Their home shows their project and nothing that sends them elsewhere: no offers, no links out.
        # (The project list is fetched after the page loads: on a busy machine it comes seconds later.)
        page.get_by_text(f"r1 - {who}").first.wait_for(state="visible", timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / f"reviewer-{who}-home.png"))
        for elsewhere in ("Resources", "Did you know?", "Label Studio Enterprise", "Create Project", "Invite Members"):
            assert not page.get_by_text(elsewhere).first.is_visible(), (who, elsewhere)
        outside = page.eval_on_selector_all(
            "a[href^='http']", "links => links.filter(a => a.offsetParent !== null).map(a => a.href)"
        )
        assert outside == [], (who, outside)
        chosen[who] = _label_all(page, who, f"reviewer-{who}")
        assert len(chosen[who]) >= 5, chosen[who]
        if who == "A1":
            _change_one(page, who, chosen[who], f"reviewer-{who}")
        page.context.close()
    assert set(chosen["A1"]) == set(chosen["A2"])  # the same items, each in their own order

    pulled = json.loads(_cli(runner, ws, "pull", "--round", "r1", "--json").stdout)
    assert pulled["not_counted"] == {}, pulled
    for who in ("A1", "A2"):
        assert _stored_labels(ws, who) == chosen[who], who

    # Agreement from the pulled labels equals Krippendorff's alpha of exactly what was clicked.
    import krippendorff
    import numpy as np

    items = sorted(chosen["A1"])
    data = np.array([[list(KEYS).index(chosen[w][p]) for p in items] for w in ("A1", "A2")], dtype=float)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    report = json.loads(_cli(runner, ws, "agreement", "--round", "r1", "--json").stdout)
    pooled = next(g for g in report["groups"] if g["pooled"] and g["labels"] == "3-way")
    assert pooled["n_units"] == len(items)
    if np.isnan(expected):
        assert pooled["alpha"] is None
    else:
        assert pooled["alpha"] == pytest.approx(expected, abs=1e-12)


def test_a_reviewer_reaches_nothing_of_the_others(lead, browser):  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    ws, runner, sheets = lead["ws"], lead["runner"], lead["sheets"]
    # The expert's project exists too (the votes of the first test, or none: every item goes there).
    _cli(runner, ws, "pull", "--round", "r1")
    _cli(runner, ws, "adjudicate", "--round", "r1", "--expert", "E1")
    page = _log_in(browser, sheets["A1"], "A1")
    own = sheets["A1"]["address"].split("/user/")[0]
    others = {who: sheets[who]["address"].split("/user/")[0] for who in ("A2", "E1")}
    foreign_emails = [PEOPLE["A2"], PEOPLE["E1"]]

    def get(path: str) -> Any:
        """A request of A1's page to A1's own server (a fetch in the page: its origin, its session)."""
        status, text = page.evaluate(
            "async (p) => { const r = await fetch(p); return [r.status, await r.text()]; }", path
        )
        return _Answer(status, text)

    # Their own server: their own project only, and no other person's e-mail anywhere.
    projects = get("/api/projects/").json()
    assert [p["title"] for p in projects["results"]] == ["r1 - A1"]
    users = get("/api/users").json()
    assert {u["email"] for u in users} == {PEOPLE["A1"], "admin@annotate.local"}
    org = get("/api/current-user/whoami").json()["active_organization"]
    members = get(f"/api/organizations/{org}/memberships").text
    pages = [page.content(), json.dumps(projects), json.dumps(users), members]
    page.goto(f"{own}/projects/")
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(ARTIFACTS / "reviewer-A1-projects.png"))
    pages.append(page.content())
    for text in pages:
        assert not any(email in text for email in foreign_emails)
        assert "model-secret-name" not in text

    # The others' servers: no session (a browser sends A1's cookies to a1.localhost only; sent on
    # purpose they are worthless), no token (A1's own, read with their session), no login, no signup.
    token = get("/api/current-user/token").json()["token"]
    cookies = "; ".join(f"{c['name']}={c['value']}" for c in page.context.cookies())
    for who, url in others.items():
        door = url.replace(f"{who.lower()}.localhost", "127.0.0.1")
        host = {"Host": url.split("//", 1)[1]}
        with httpx.Client(base_url=door, trust_env=False, timeout=120) as web:
            for path in (
                "/api/projects/",
                "/api/tasks/?project=1",
                "/api/users",
                "/api/projects/1/export?exportType=JSON",
            ):
                # 401 from their server, or 503 from the door: asleep, and not woken by an API call
                assert web.get(path, headers={**host, "Cookie": cookies}).status_code in (401, 503), (who, path)
                assert web.get(path, headers={**host, "Authorization": f"Token {token}"}).status_code in (
                    401,
                    503,
                ), (who, path)
            signup = web.post("/user/signup/", headers=host, data={"email": "x@example.org", "password": "abcdefgh12"})
            assert signup.status_code == 403, who
        page.goto(f"{url}/projects/")
        # asleep (the API calls above did not wake it): the page load does, then reloads itself
        page.wait_for_url(re.compile(r".*/user/login.*"), timeout=120_000)
        page.wait_for_load_state("networkidle")
        assert "/user/login" in page.url, (who, page.url)  # sent to a login page
        page.screenshot(path=str(ARTIFACTS / f"reviewer-A1-at-{who}.png"))
        assert not any(email in page.content() for email in foreign_emails)
        page.fill("input[name=email]", sheets["A1"]["e-mail"])
        page.fill("input[name=password]", sheets["A1"]["password"])
        page.click("button[type=submit], input[type=submit]")
        page.wait_for_load_state("networkidle")
        assert "/user/login" in page.url, f"A1's login opened {who}'s server"
    page.context.close()

    # The expert, on their own server, sees the reviewers by pseudonym only.
    expert = _log_in(browser, sheets["E1"], "E1")

    def fetch(path: str) -> str:
        return str(expert.evaluate("async (p) => await (await fetch(p)).text()", path))

    tasks = json.loads(fetch("/api/projects/"))["results"]
    assert [p["title"] for p in tasks] == ["r1 - adjudication - E1"]
    exported = fetch(f"/api/projects/{tasks[0]['id']}/export?exportType=JSON&download_all_tasks=true")
    assert "A1:" in exported or "(no verdicts)" in exported
    assert not any(email in exported for email in (PEOPLE["A1"], PEOPLE["A2"]))
    expert.context.close()


def test_a_reviewer_answers_the_hazard_questions_where_the_lead_asks(lead, browser):  # noqa: F811
    """`route --ask-hazards`: the reviewer's page adds the hazard categories (several) and the severity;
    what they tick comes back with `pull` and is what `agreement` counts."""
    ARTIFACTS.mkdir(exist_ok=True)
    ws, runner, sheets = lead["ws"], lead["runner"], lead["sheets"]
    _cli(runner, ws, "route", "--round", "r2", "--annotators", "A1,A2", "--clear-per-cell", "1", "--seed", "5",
         "--ask-hazards")  # fmt: skip
    page = _log_in(browser, sheets["A1"], "A1")
    page.get_by_text("r2 - A1").first.wait_for(state="visible", timeout=60_000)
    page.get_by_text("r2 - A1").first.click()
    page.get_by_text("Label All Tasks").first.click()
    page.get_by_text("Labeling Instructions").wait_for()
    page.keyboard.press("Escape")
    page.wait_for_function("() => document.body.innerText.includes('Hazard categories')")
    prompt = _shown_prompt(page)
    page.keyboard.press(KEYS["harmful"])
    # Each choice's text is followed by the hotkey Label Studio gives it ("Violent crimes (vcr)[8]").
    page.get_by_text("Violent crimes (vcr)").first.click()
    page.get_by_text("Privacy (prv)").first.click()
    page.get_by_text(re.compile(r"^moderate")).first.click()
    assert page.locator("input[type=checkbox]:checked").count() == 2
    page.screenshot(path=str(ARTIFACTS / "reviewer-A1-hazards.png"), full_page=True)
    with page.expect_response(lambda r: "/annotations" in r.url and r.request.method == "POST") as posted:
        page.keyboard.press("Control+Enter")
    assert posted.value.status == 201
    page.context.close()

    pulled = json.loads(_cli(runner, ws, "pull", "--round", "r2", "--json").stdout)
    assert pulled["not_counted"] == {}, pulled
    report = json.loads(_cli(runner, ws, "agreement", "--round", "r2", "--boot", "0", "--json").stdout)
    chosen = {r["hazard"]: r["chosen"] for r in report["hazards"]["hazards"]}
    assert chosen["vcr"] == 1 and chosen["prv"] == 1 and sum(chosen.values()) == 2, chosen
    assert report["hazards"]["severity"]["n_answers"] == 1
    assert _stored_labels_of(ws, "r2", "A1") == {prompt: "harmful"}


def _stored_labels_of(ws: Path, round_name: str, who: str) -> dict[str, str]:
    from annotate.config import open_workspace
    from annotate.db.store import open_store

    with open_store(open_workspace(str(ws), None).db_url) as store:
        labels = store.annotations(int(store.get_round(round_name)["id"]))
        texts = store.item_texts([int(i) for i in labels.round_item_id])
    mine = labels[(labels.annotator == who) & ~labels.deleted.astype(bool)]
    return {texts[int(i)][0]: str(v) for i, v in zip(mine.round_item_id, mine.verdict, strict=True)}
