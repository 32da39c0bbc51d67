"""The reviewer's time: what the tool and Label Studio cost a person per task, in Chromium.

A scratch workspace is made with the CLI as a lead makes one (the bundled XSTest sample, one
reviewer, `ls start`: the reviewer's own server, `route`). Then a reviewer, in headless
Chromium at 1366x768, logs in with their access sheet, presses "Label All Tasks" and judges N
tasks with the hotkeys (a verdict key, then Ctrl+Enter). Measured per task:

  submit -> next    from Ctrl+Enter to the next task's prompt on the screen (the save, Label
                    Studio's next-task request and its drawing of the task): the time a
                    reviewer waits between two judgements;
  save              from Ctrl+Enter to the answer of the annotation's POST (the save alone);

next to the practical limit measured in the same run:

  page load         Label Studio's own load of one task: a fresh navigation to the labelling
                    stream until the verdict controls of the first task are drawn.

The ratio (submit -> next) / (page load) says how much of a cold page load each judgement
costs. The reviewer works through annotate's front door (their sheet's address); the same N tasks
more are then judged on their server's own port, the limit the door is measured against (the
door's cost per judgement: submit -> next through it / directly).

    python bench/reviewer.py --tasks 50
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def annotate(ws: Path, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "annotate", "-w", str(ws), *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        sys.exit(f"failed: annotate {' '.join(args)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc.stdout


def quantiles(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"median {statistics.median(ordered) * 1000:6.0f} ms, p90 {p90 * 1000:6.0f} ms, n={len(ordered)}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=50)
    ap.add_argument("--loads", type=int, default=5, help="cold page loads measured")
    ap.add_argument("--port", type=int, default=8180)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--template", type=Path, default=None, help="a migrated template to copy (skips migrations)")
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    from annotate.pipeline.demo import sample_files

    scratch = Path(tempfile.mkdtemp(prefix="annotate-reviewer-bench-"))
    ws = scratch / "ws"
    try:
        subprocess.run([sys.executable, "-m", "annotate", "init", str(ws)], check=True, capture_output=True)
        annotate(ws, "ingest", "--format", "xstest", *map(str, sample_files()))
        annotate(ws, "annotators", "add", "reviewer@bench.invalid")
        if args.template is not None:
            shutil.copytree(args.template, ws / ".annotate" / "reviewer-servers" / ".template")
        t = time.perf_counter()
        annotate(ws, "ls", "start", "--port", str(args.port))
        print(f"the reviewer's server ready in {time.perf_counter() - t:.1f} s (template included)")
        clear = max(1, (2 * args.tasks + 20) // 10)
        annotate(ws, "route", "--round", "r1", "--annotators", "A1", "--clear-per-cell", str(clear), "--seed", "1")
        sheet = (ws / ".annotate" / "access" / "A1.txt").read_text()
        address = re.search(r"Address:\s+(\S+)", sheet).group(1)  # type: ignore[union-attr]
        email = re.search(r"E-mail:\s+(\S+)", sheet).group(1)  # type: ignore[union-attr]
        password = re.search(r"Password:\s+(\S+)", sheet).group(1)  # type: ignore[union-attr]

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium, args=ARGS, headless=True)
            page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
            page.goto(address)
            page.wait_for_selector("input[name=email]", timeout=120_000)  # the server wakes up first
            page.fill("input[name=email]", email)
            page.fill("input[name=password]", password)
            page.click("button[type=submit], input[type=submit]")
            page.wait_for_load_state("networkidle")
            page.get_by_text("r1 - A1").first.click()
            page.get_by_text("Label All Tasks").first.click()
            page.get_by_text("Labeling Instructions").wait_for()
            page.keyboard.press("Escape")
            stream = page.url

            def shown_prompt() -> str:
                page.wait_for_function("() => document.querySelectorAll('input[type=radio]').length >= 3")
                return page.locator(".lsf-main-view, body").first.inner_text()[:4000]

            def judge(n: int) -> tuple[list[float], list[float]]:
                waits: list[float] = []
                saves: list[float] = []
                for k in range(n):
                    before = shown_prompt()
                    page.keyboard.press("123"[k % 3])
                    started = time.perf_counter()
                    with page.expect_response(lambda r: "/annotations" in r.url and r.request.method == "POST") as res:
                        page.keyboard.press("Control+Enter")
                    assert res.value.status == 201, res.value.status
                    saves.append(time.perf_counter() - started)
                    page.wait_for_function(
                        "(b) => document.querySelectorAll('input[type=radio]:checked').length === 0 && "
                        "document.body.innerText.slice(0, 4000) !== b",
                        arg=before,
                        timeout=30_000,
                    )
                    waits.append(time.perf_counter() - started)
                return waits, saves

            waits, saves = judge(args.tasks)
            # The same person on their server's own port (same host name: the same login).
            from annotate.labelstudio import server
            from annotate.labelstudio.server import fleet

            own = fleet.person_server(ws / ".annotate" / "reviewer-servers", "A1")
            assert own is not None
            # The server answers only requests with the door's key: the browser sends it, as the door does.
            token = server.read_secrets(own.data_dir / server.SECRETS_NAME).token
            page.context.set_extra_http_headers({server.DOOR_HEADER: server.door_key(token)})
            page.goto(stream.replace(f":{args.port}/", f":{own.port}/"))
            direct_waits, _ = judge(args.tasks)
            loads: list[float] = []
            for _ in range(args.loads):
                started = time.perf_counter()
                page.goto(stream)
                page.wait_for_function("() => document.querySelectorAll('input[type=radio]').length >= 3")
                loads.append(time.perf_counter() - started)
            browser.close()

        print(f"submit -> next task shown: {quantiles(waits)} (through the front door)")
        print(f"submit -> next task shown on the server's own port: {quantiles(direct_waits)}")
        print(
            f"the front door's cost: {statistics.median(waits) / statistics.median(direct_waits):.2f}x "
            "the direct median"
        )
        print(f"Ctrl+Enter -> annotation saved: {quantiles(saves)}")
        print(f"Label Studio page load of one task: {quantiles(loads)}")
        ratio = statistics.median(waits) / statistics.median(loads)
        print(f"ratio submit->next / page load: {ratio:.2f}")
    finally:
        subprocess.run([sys.executable, "-m", "annotate", "-w", str(ws), "ls", "stop"], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
