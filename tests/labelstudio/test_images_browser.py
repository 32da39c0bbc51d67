"""Items with an image (issue #42): the reviewer sees it beside the prompt in Label Studio, in Chromium.

The lead ingests a table whose ``image`` column names a PNG beside it (copied into the workspace
under its sha256), routes a round to A1 on their own server, and A1 opens the task: the image is
drawn (a real ``<img>`` decoded to the file's size, carried in the task as a ``data:`` URI, so the
browser fetches nothing), an item without an image shows a blank pixel, and the labels come back.
The export keeps each item's image by its hash (labels.csv ``image``) and verifies.

Screenshot: tests/artifacts/image-task.png. Needs Label Studio and Chromium (skipped locally
without them, failing under CI).
"""

from __future__ import annotations

import csv
import hashlib
import re
import shutil
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from annotate.cli import cli
from annotate.labelstudio.server import fleet
from tests.browser import ARTIFACTS, browser  # noqa: F401  (fixture)
from tests.ls_fixture import free_port, golden_template_dir, label_studio_or_skip

pytestmark = pytest.mark.labelstudio

VIEWPORT = {"width": 1366, "height": 768}


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A real PNG of one colour (no imaging library needed)."""
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def _cli(runner: Any, ws: Path, *args: str) -> Any:
    result = runner.invoke(cli, ["-w", str(ws), *args])
    assert result.exit_code == 0, (args, result.output)
    return result


@pytest.fixture(scope="module")
def lead(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from click.testing import CliRunner

    label_studio_or_skip()
    runner = CliRunner()
    base = tmp_path_factory.mktemp("images")
    ws = base / "ws"
    assert runner.invoke(cli, ["init", str(ws)]).exit_code == 0
    (base / "pictures").mkdir()
    picture = base / "pictures" / "chart.png"
    picture.write_bytes(png(120, 80, (200, 40, 40)))
    table = base / "multimodal.csv"
    with open(table, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "benchmark", "prompt_id", "prompt", "response", "judge", "judge_label", "image"])
        w.writerow(["m", "mm", "p0", "Prompt 00: what does the picture show?", "A red chart.", "j", "ambiguous",
                    "pictures/chart.png"])  # fmt: skip
        w.writerow(["m", "mm", "p1", "Prompt 01: no picture here.", "Nothing.", "j", "ambiguous", ""])
    ingested = _cli(runner, ws, "ingest", str(table)).output
    assert "images: 1 row(s) with an image" in ingested, ingested
    _cli(runner, ws, "annotators", "add", "ana.reviewer@example.org")
    shutil.copytree(golden_template_dir(), ws / ".annotate" / "reviewer-servers" / ".template")
    _cli(runner, ws, "ls", "start", "--port", str(free_port()))
    try:
        _cli(runner, ws, "route", "--round", "r1", "--annotators", "A1", "--clear-per-cell", "1", "--seed", "3")
        text = (ws / ".annotate" / "access" / "A1.txt").read_text(encoding="utf-8")
        sheet = {k.lower(): re.search(rf"^\s*{k}:\s+(\S+)\s*$", text, re.MULTILINE).group(1)  # type: ignore[union-attr]
                 for k in ("Address", "E-mail", "Password")}  # fmt: skip
        yield {"ws": ws, "runner": runner, "sheet": sheet, "sha": hashlib.sha256(picture.read_bytes()).hexdigest()}
    finally:
        runner.invoke(cli, ["-w", str(ws), "ls", "stop"])


def test_the_reviewer_sees_the_item_s_image_and_the_export_keeps_it_by_hash(lead, browser):  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    ws, runner, sheet, sha = lead["ws"], lead["runner"], lead["sheet"], lead["sha"]
    assert (ws / "media" / f"{sha}.png").is_file()
    page = browser.new_context(viewport=VIEWPORT).new_page()
    page.goto(sheet["address"])
    page.wait_for_selector("input[name=email]", timeout=120_000)
    page.fill("input[name=email]", sheet["e-mail"])
    page.fill("input[name=password]", sheet["password"])
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_load_state("networkidle")
    page.goto(sheet["address"].split("/user/")[0] + "/projects/")
    page.get_by_text("r1 - A1").first.click()
    page.get_by_text("Label All Tasks").first.click()
    page.get_by_text("Labeling Instructions").wait_for()
    shown = page.locator("body").inner_text()
    assert "1 harmful, 2 safe, 3 unsure" in shown and "Ctrl+Enter submits" in shown  # the keys, named (#43)
    page.keyboard.press("Escape")
    seen: dict[str, int] = {}
    for k in range(2):
        page.wait_for_function("() => document.body.innerText.includes('Verdict')")
        # where the reviewer stands in the round (issue #43), on the task page
        badge = page.locator("#annotate-progress")
        badge.wait_for()
        page.wait_for_function(
            "(t) => document.getElementById('annotate-progress').textContent === t",
            arg=f"Task {k + 1} of 2 ({2 - k} left)",
            timeout=20_000,
        )
        prompt = re.search(r"Prompt (\d\d)", page.locator("body").inner_text()).group(0)  # type: ignore[union-attr]
        # the image as drawn: decoded from the task's data: URI, which Label Studio turns into a blob: of the
        # page (no request leaves it for the image)
        drawn = "[...document.images].filter(i => /^(data:image\\/png|blob:)/.test(i.src) && i.complete)"
        page.wait_for_function(f"() => {drawn}.some(i => i.naturalWidth)")
        widths = page.evaluate(f"() => {drawn}.map(i => i.naturalWidth)")
        seen[prompt] = max(widths)
        if prompt == "Prompt 00":
            assert page.get_by_text("The image sent with the prompt").first.is_visible()
            page.screenshot(path=str(ARTIFACTS / "image-task.png"))
        page.keyboard.press("2")
        if k == 1:
            # The server falls asleep under the open page (a long read): the submit wakes it, and the page says
            # so while it waits (issue #43), then the answer is saved as any other.
            srv = fleet.person_server(ws / ".annotate" / "reviewer-servers", "A1")
            assert srv is not None and fleet.stop_person(srv) and not fleet.is_running(srv)
        with page.expect_response(
            lambda r: "/annotations" in r.url and r.request.method == "POST", timeout=120_000
        ) as posted:
            page.keyboard.press("Control+Enter")
            if k == 1:
                page.wait_for_function(
                    "() => (document.getElementById('annotate-notice') || {}).textContent?.includes('waking up')"
                )
                page.screenshot(path=str(ARTIFACTS / "image-task-waking.png"))
        assert posted.value.status == 201
        if k == 1:
            page.wait_for_function("() => !document.getElementById('annotate-notice')")
        page.wait_for_function("(p) => !document.body.innerText.includes(p)", arg=prompt, timeout=15_000)
    assert seen == {"Prompt 00": 120, "Prompt 01": 1}, seen  # the chart, and a blank pixel for the other
    page.wait_for_function(
        "() => document.getElementById('annotate-progress').textContent === 'All 2 tasks answered'", timeout=20_000
    )

    _cli(runner, ws, "pull", "--round", "r1")
    _cli(runner, ws, "adjudicate", "--round", "r1", "--policy", "majority")
    _cli(runner, ws, "export", "images", "--round", "r1", "--draws", "200")
    out = ws / "exports" / "images"
    assert _cli(runner, ws, "verify", str(out)).output.startswith("OK")
    rows = {r["prompt_id"]: r for r in csv.DictReader(open(out / "labels.csv", newline="", encoding="utf-8"))}
    assert rows["p0"]["image"] == f"{sha}.png" and rows["p1"]["image"] == ""
    assert rows["p0"]["channels"] == "A1=server"
