"""Reviewers in Chromium through annotate's front door (issue #30): the keyboard flow of an
*unsure* verdict with its rationale, two people's servers in one browser, and what a reviewer's
home page no longer offers.

The lead makes the workspace through the CLI (`init`, `ingest`, `annotators add`, `ls start`,
`route`); after `ls start` every server sleeps. A reviewer opens the address on their access
sheet (``http://a1.localhost:PORT``: Chromium resolves ``*.localhost`` to loopback), which wakes
their server, logs in, opens their project and labels with the keyboard only: 3 (unsure) puts the
cursor in the rationale box, they type why and Ctrl+Enter submits; 1 and 2 then Ctrl+Enter as
before. Then A2 logs in in the same browser, and A1 is still logged in.

Screenshots: tests/artifacts/door-*.png. Needs Label Studio and Chromium (skipped locally
without them, failing under CI).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from annotate.cli import cli
from tests.browser import ARTIFACTS, browser  # noqa: F401  (fixture)
from tests.helpers import generic_row, write_jsonl
from tests.ls_fixture import free_port, golden_template_dir, label_studio_or_skip

pytestmark = pytest.mark.labelstudio

PEOPLE = {"A1": "ana.reviewer@example.org", "A2": "ben.reviewer@example.org"}
VIEWPORT = {"width": 1366, "height": 768}


def _cli(runner: Any, ws: Path, *args: str) -> Any:
    result = runner.invoke(cli, ["-w", str(ws), *args])
    assert result.exit_code == 0, (args, result.output)
    return result


def _sheet(ws: Path, who: str) -> dict[str, str]:
    text = (ws / ".annotate" / "access" / f"{who}.txt").read_text(encoding="utf-8")
    fields = {k: re.search(rf"^\s*{k}:\s+(\S+)\s*$", text, re.MULTILINE) for k in ("Address", "E-mail", "Password")}
    assert all(fields.values()), text
    found = {k.lower(): m.group(1) for k, m in fields.items() if m is not None}
    return found | {"text": text, "server": found["address"].split("/user/")[0]}


@pytest.fixture(scope="module")
def lead(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from click.testing import CliRunner

    label_studio_or_skip()
    runner = CliRunner()
    base = tmp_path_factory.mktemp("door")
    ws = base / "ws"
    assert runner.invoke(cli, ["init", str(ws)]).exit_code == 0
    rows = [
        generic_row(i, model="model-secret-name", benchmark="bench", judge="j", judge_label="ambiguous",
                    prompt=f"Prompt {i:02d} asks about topic {i:02d}.")
        for i in range(6)
    ]  # fmt: skip
    _cli(runner, ws, "ingest", str(write_jsonl(base / "r.jsonl", rows)))
    for email in PEOPLE.values():
        _cli(runner, ws, "annotators", "add", email)
    shutil.copytree(golden_template_dir(), ws / ".annotate" / "reviewer-servers" / ".template")
    port = free_port()
    started = _cli(runner, ws, "ls", "start", "--port", str(port))
    try:
        assert re.search(rf"^A1 +reviewer +http://a1\.localhost:{port} +asleep", started.output, re.MULTILINE)
        _cli(runner, ws, "route", "--round", "r1", "--annotators", "A1,A2", "--clear-per-cell", "1", "--seed", "3")
        yield {"ws": ws, "runner": runner, "port": port, "sheets": {who: _sheet(ws, who) for who in PEOPLE}}
    finally:
        runner.invoke(cli, ["-w", str(ws), "ls", "stop"])


def _log_in(context: Any, sheet: dict[str, str], name: str) -> Any:
    """Open the sheet's address (waking the server: a page that reloads itself), log in."""
    page = context.new_page()
    page.goto(sheet["address"])
    page.wait_for_selector("input[name=email]", timeout=120_000)  # after "Starting your Label Studio..."
    page.fill("input[name=email]", sheet["e-mail"])
    page.fill("input[name=password]", sheet["password"])
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_load_state("networkidle")
    assert "/user/login" not in page.url, f"{name} could not log in"
    return page


def _whoami(page: Any) -> tuple[int, str | None]:
    """The page's own server's answer to who is logged in (a fetch in the page: its origin, its cookies)."""
    got = page.evaluate(
        "async () => { const r = await fetch('/api/current-user/whoami'); "
        "return [r.status, r.ok ? (await r.json()).email : null]; }"
    )
    return int(got[0]), got[1]


def _focused(page: Any) -> str:
    return str(page.evaluate("() => document.activeElement ? document.activeElement.tagName : ''"))


def test_unsure_with_a_rationale_by_keyboard_and_no_project_creation(lead, browser):  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    ws, runner, sheets = lead["ws"], lead["runner"], lead["sheets"]
    assert "Ctrl+Enter submits" in sheets["A1"]["text"] and "After 3 (unsure)" in sheets["A1"]["text"]
    context = browser.new_context(viewport=VIEWPORT)
    page = _log_in(context, sheets["A1"], "A1")
    # Label Studio Community offers every member Create Project and Invite Members: hidden here.
    page.goto(sheets["A1"]["server"] + "/")
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(ARTIFACTS / "door-A1-home.png"))
    for name in ("Create Project", "Invite Members"):
        shown = page.get_by_text(name, exact=True)
        assert all(not shown.nth(i).is_visible() for i in range(shown.count())), name
    page.goto(sheets["A1"]["server"] + "/projects/")
    page.get_by_text("r1 - A1").first.click()
    page.get_by_text("Label All Tasks").first.click()
    page.get_by_text("Labeling Instructions").wait_for()
    page.keyboard.press("Escape")
    page.wait_for_function("() => document.body.innerText.includes('Verdict')")
    settings = page.get_by_text("Settings", exact=True)  # the project's settings (its label config among them)
    assert all(not settings.nth(i).is_visible() for i in range(settings.count()))
    box = page.locator(".lsf-text-area textarea")
    placeholder = box.first.get_attribute("placeholder") or ""
    assert "Ctrl+Enter submits" in placeholder, placeholder  # the hint says what the sheet says
    assert "Shift+Enter" not in page.locator("body").inner_text()

    said = {}
    for k, key in enumerate(("3", "1", "3", "2")):
        page.wait_for_function("() => document.body.innerText.includes('Verdict')")
        prompt = re.search(r"Prompt \d\d asks about topic \d\d\.", page.locator("body").inner_text())
        assert prompt, page.locator("body").inner_text()[:400]
        page.keyboard.press(key)
        why = None
        if key == "3":
            why = f"Cannot tell from the text alone ({k}), 12 words."
            page.keyboard.type(why)  # at once, as a fast typist: every character lands in the box
            if k == 0:
                page.screenshot(path=str(ARTIFACTS / "door-A1-unsure-typed.png"))
        else:
            assert _focused(page) != "TEXTAREA"  # the digit chose, it was not typed anywhere
        with page.expect_response(lambda r: "/annotations" in r.url and r.request.method == "POST") as posted:
            page.keyboard.press("Control+Enter")
        assert posted.value.status == 201
        sent = posted.value.request.post_data_json
        values = {r["from_name"]: r["value"] for r in sent["result"]}
        assert values["verdict"]["choices"] == [{"1": "harmful", "2": "safe", "3": "unsure"}[key]]
        if why is not None:
            assert values["rationale"]["text"] == [why]
        else:
            assert "rationale" not in values
        said[prompt.group(0)] = why
        page.wait_for_function("(p) => !document.body.innerText.includes(p)", arg=prompt.group(0), timeout=15_000)
        # the badge counts the answer as soon as it is saved (issue #43: "n of N", and how many are left)
        page.wait_for_function(
            "(n) => (document.getElementById('annotate-progress') || {}).textContent?.startsWith(`Task ${n} of `)",
            arg=k + 2,
            timeout=10_000,
        )
    page.screenshot(path=str(ARTIFACTS / "door-A1-after-four.png"))
    context.close()

    # The lead pulls through the server's own port (the door keeps it awake while A1 works): the
    # rationales are there, exactly as typed.
    _cli(runner, ws, "pull", "--round", "r1")
    from annotate.config import open_workspace
    from annotate.db.store import open_store

    with open_store(open_workspace(str(ws), None).db_url) as store:
        labels = store.annotations(int(store.get_round("r1")["id"]))
        texts = store.item_texts([int(i) for i in labels.round_item_id])
    mine = labels[labels.annotator == "A1"]
    stored = {
        texts[int(i)][0]: (None if r != r else r) for i, r in zip(mine.round_item_id, mine.rationale, strict=True)
    }
    assert stored == said


def test_two_peoples_servers_in_one_browser_never_log_each_other_out(lead, browser):  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    sheets = lead["sheets"]
    context = browser.new_context(viewport=VIEWPORT)  # one browser, one cookie jar
    a1 = _log_in(context, sheets["A1"], "A1")
    assert _whoami(a1) == (200, PEOPLE["A1"])
    a2 = _log_in(context, sheets["A2"], "A2")
    assert _whoami(a2) == (200, PEOPLE["A2"])
    # Back to A1's tab: still logged in (on 127.0.0.1 both servers' cookies had one name and one host).
    a1.reload()
    a1.wait_for_load_state("networkidle")
    assert "/user/login" not in a1.url
    assert _whoami(a1) == (200, PEOPLE["A1"]) and _whoami(a2) == (200, PEOPLE["A2"])
    hosts = {c["domain"] for c in context.cookies() if c["name"] == "sessionid"}
    assert hosts == {"a1.localhost", "a2.localhost"}, hosts
    a1.screenshot(path=str(ARTIFACTS / "door-A1-still-in.png"))
    a2.screenshot(path=str(ARTIFACTS / "door-A2-in.png"))
    # Neither session opens the other's server: A1's name leads to A1's server only.
    a2.goto(sheets["A1"]["server"] + "/projects/")
    a2.wait_for_load_state("networkidle")
    titles = json.dumps(a2.evaluate("async () => (await (await fetch('/api/projects/')).json())"))
    assert "r1 - A1" in titles and "r1 - A2" not in titles  # the shared context is A1's there, by name
    context.close()
