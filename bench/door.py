"""What the front door costs a reviewer: each request through the door next to the same request sent
straight to the person's server (the practical limit: no proxy at all), in one run (issue #43).

A scratch workspace with one reviewer, their server kept up (`ls start --all`), logged in through the
door as a browser does. Then, alternating door and direct so both see the same machine, N times each:

  login page      GET /user/login/ (HTML: the door reads the whole page and injects its two tags)
  version         GET /api/version (a small JSON answer, no session)
  whoami          GET /api/current-user/whoami with the reviewer's session (what every page asks)
  task            GET /api/tasks/ID (a task of the reviewer's round, with the session)
  save            PATCH of the reviewer's annotation of that task with the session and CSRF token (a
                  logged-in write: the door reads the body, checks the route, counts it as use)

Direct requests carry the server's door key (as the lead's commands do); the door adds it itself.

    python bench/door.py            # N = 200
    python bench/door.py -n 50
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CSRF = re.compile(r'name="csrfmiddlewaretoken"\s+value="([^"]+)"')


def annotate(ws: Path, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "annotate", "-w", str(ws), *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        sys.exit(f"failed: annotate {' '.join(args)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=200, help="requests of each kind, each way")
    ap.add_argument("--port", type=int, default=8380)
    args = ap.parse_args()

    import httpx

    from annotate.labelstudio import server
    from annotate.labelstudio.server import fleet

    scratch = Path(tempfile.mkdtemp(prefix="annotate-door-bench-"))
    ws = scratch / "ws"
    root = ws / ".annotate" / "reviewer-servers"
    try:
        subprocess.run([sys.executable, "-m", "annotate", "init", str(ws)], check=True, capture_output=True)
        rows = "".join(
            json.dumps({"model": "m", "benchmark": "b", "prompt_id": f"p{i}", "prompt": f"prompt {i}",
                        "response": f"response {i} " * 40, "judge_label": "ambiguous", "judge": "j"}) + "\n"
            for i in range(4)
        )  # fmt: skip
        (scratch / "rows.jsonl").write_text(rows)
        annotate(ws, "ingest", str(scratch / "rows.jsonl"))
        annotate(ws, "annotators", "add", "ana@bench.invalid")
        annotate(ws, "ls", "start", "--port", str(args.port), "--all")
        annotate(ws, "route", "--round", "r1", "--annotators", "A1", "--clear-per-cell", "1")
        srv = fleet.person_server(root, "A1")
        assert srv is not None and fleet.is_running(srv)
        token = server.read_secrets(srv.data_dir / server.SECRETS_NAME).token
        password = re.search(r"Password:\s+(\S+)", (ws / ".annotate" / "access" / "A1.txt").read_text())
        assert password
        host = f"a1.localhost:{args.port}"
        door = httpx.Client(
            base_url=f"http://127.0.0.1:{args.port}", headers={"Host": host}, trust_env=False, timeout=60
        )
        page = door.get("/user/login/", headers={"Accept": "text/html"})
        form = CSRF.search(page.text)
        assert form, page.status_code
        login = door.post(
            "/user/login/",
            data={"csrfmiddlewaretoken": form.group(1), "email": "ana@bench.invalid", "password": password.group(1)},
            headers={"Referer": f"http://{host}/user/login/"},
        )
        assert login.status_code == 302, login.status_code
        cookie = "; ".join(f"{k}={v}" for k, v in door.cookies.items())
        csrf = door.cookies["csrftoken"]
        # A fresh connection per direct request: on a kept-alive connection Django's development server
        # answers ~40 ms late (a delayed ACK), which would flatter the door. The door's client keeps its
        # connection, as a browser does.
        direct = httpx.Client(
            base_url=srv.url,
            headers={server.DOOR_HEADER: server.door_key(token)},
            trust_env=False,
            timeout=60,
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        admin = {"Authorization": f"Token {token}"}
        project = direct.get("/api/projects/", headers=admin).json()["results"][0]["id"]
        task = direct.get("/api/tasks/", params={"project": project}, headers=admin).json()["tasks"][0]["id"]
        session = {"Cookie": cookie, "X-CSRFToken": csrf, "Referer": f"http://{host}/projects/{project}/data"}
        verdict = {"from_name": "verdict", "to_name": "response", "type": "choices", "value": {"choices": ["safe"]}}
        made = door.post(f"/api/tasks/{task}/annotations/", headers=session, json={"result": [verdict], "lead_time": 1})
        assert made.status_code == 201, (made.status_code, made.text[:300])
        annotation = made.json()["id"]
        door.cookies.clear()  # the session goes explicitly, as in the direct requests; the login page without it
        kinds = {
            "login page": ("GET", "/user/login/", {"Accept": "text/html"}, None),
            "version": ("GET", "/api/version", {}, None),
            "whoami": ("GET", "/api/current-user/whoami", session, None),
            "task": ("GET", f"/api/tasks/{task}", session, None),
            "save": ("PATCH", f"/api/annotations/{annotation}/", session, {"result": [verdict], "lead_time": 2}),
        }
        print(f"{args.n} requests of each kind each way, alternating (ms per request)")
        print(f"{'request':12s} {'door p50':>9s} {'p90':>7s} {'direct p50':>11s} {'p90':>7s} {'ratio':>6s} {'+ms':>6s}")
        for name, (method, path, headers, body) in kinds.items():
            times: dict[str, list[float]] = {"door": [], "direct": []}
            for _ in range(args.n):
                for way, client in (("door", door), ("direct", direct)):
                    t = time.perf_counter()
                    r = client.request(method, path, headers=headers, json=body)
                    times[way].append((time.perf_counter() - t) * 1000)
                    assert r.status_code < 300, (name, way, r.status_code, r.text[:200])
            d50, x50 = statistics.median(times["door"]), statistics.median(times["direct"])
            d90 = statistics.quantiles(times["door"], n=10)[-1]
            x90 = statistics.quantiles(times["direct"], n=10)[-1]
            print(f"{name:12s} {d50:9.1f} {d90:7.1f} {x50:11.1f} {x90:7.1f} {d50 / x50:6.2f} {d50 - x50:6.1f}")
        door.close()
        direct.close()
    finally:
        subprocess.run([sys.executable, "-m", "annotate", "-w", str(ws), "ls", "stop"], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
