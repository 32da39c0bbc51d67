"""The cost of technical blinding: one Label Studio per person, always up or on demand.

In a scratch workspace with P people (reviewers and an expert), measured in one run:

  template        building the migrated template once per workspace (`label-studio version`
                  on an empty data dir: Django's migrations);
  shared          one shared server started from a migrated copy (what a single server for
                  everyone costs);
  all up          `annotate ls start --all`: P servers made from the template and started (a few
                  at once), each person's account made; wall time and each server's memory (RSS of
                  its process tree) at readiness;
  on demand       `annotate ls start` (the default): the front door, every server asleep; then A
                  people open their address through the door (the first request wakes their
                  server) and keep using it, and the memory held by every Label Studio process
                  and the door is measured, against the practical limit: A servers' memory.

    python bench/servers.py --people 4
    python bench/servers.py --people 20 --active 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def annotate(ws: Path, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "annotate", "-w", str(ws), *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        sys.exit(f"failed: annotate {' '.join(args)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc.stdout


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (MB), from /proc."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        todo += [int(c) for c in children]
    return total / 1024


def held_mb(root: Path) -> tuple[float, int]:
    """Memory held by the people's Label Studio servers under ``root`` and the front door (MB), and how
    many servers run."""
    from annotate.labelstudio import server
    from annotate.labelstudio.server import fleet, frontdoor

    total, running = 0.0, 0
    for srv in fleet.person_servers(root):
        st = server.server_status(srv.data_dir)
        if st.running and st.pid is not None:
            total += rss_mb(st.pid)
            running += 1
    door = frontdoor.door_status(root)
    if door.running and door.pid is not None:
        # The door's own memory: the servers it woke are its children, counted above already.
        for line in Path(f"/proc/{door.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) / 1024
    return total, running


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--people", type=int, default=4)
    ap.add_argument("--active", type=int, default=None, help="people who label (default: a fifth, at least 1)")
    ap.add_argument("--port", type=int, default=8280)
    args = ap.parse_args()
    active = args.active if args.active is not None else max(1, args.people // 5)

    import httpx

    from annotate.labelstudio import server
    from annotate.labelstudio.server import fleet

    scratch = Path(tempfile.mkdtemp(prefix="annotate-servers-bench-"))
    ws = scratch / "ws"
    root = ws / ".annotate" / "reviewer-servers"
    try:
        subprocess.run([sys.executable, "-m", "annotate", "init", str(ws)], check=True, capture_output=True)
        t = time.perf_counter()
        template = fleet.ensure_template(root)
        built = time.perf_counter() - t
        print(f"template (migrations, once per workspace): {built:6.1f} s")

        shared_dir = scratch / "shared"
        shutil.copytree(template, shared_dir)
        server.create_secrets(shared_dir / server.SECRETS_NAME)
        t = time.perf_counter()
        info = server.start_server(shared_dir, port=args.port + 900, timeout=600)
        shared_s = time.perf_counter() - t
        shared_mb = rss_mb(info.pid)
        server.stop_server(shared_dir)
        print(f"one shared server: ready in {shared_s:5.1f} s, {shared_mb:5.0f} MB")

        for k in range(args.people):
            annotate(ws, "annotators", "add", f"person{k}@bench.invalid", *(["--expert"] if k == 0 else []))
        t = time.perf_counter()
        annotate(ws, "ls", "start", "--port", str(args.port), "--all")
        fleet_s = time.perf_counter() - t
        mbs = []
        for srv in fleet.person_servers(root):
            st = server.server_status(srv.data_dir)
            assert st.pid is not None
            mbs.append(rss_mb(st.pid))
        all_mb, _ = held_mb(root)
        print(
            f"{args.people} servers, all up (`ls start --all`, accounts included): ready in {fleet_s:5.1f} s, "
            f"{sum(mbs):5.0f} MB in all ({min(mbs):.0f}-{max(mbs):.0f} MB each; {all_mb:.0f} MB with the front door)"
        )
        print(
            f"cost against one shared server: {fleet_s / shared_s:.1f}x the start time, "
            f"{sum(mbs) / shared_mb:.1f}x the memory ({os.cpu_count()} cores)"
        )

        # On demand: everyone asleep, then `active` people open their address and keep working.
        annotate(ws, "ls", "stop")
        annotate(ws, "ls", "start", "--port", str(args.port))
        asleep_mb, running = held_mb(root)
        print(f"`ls start` (on demand): {running} servers running, {asleep_mb:.0f} MB held (the front door alone)")
        people = [p.pseudonym for p in fleet.person_servers(root)][:active]
        wake = []
        with httpx.Client(base_url=f"http://127.0.0.1:{args.port}", trust_env=False, timeout=300) as web:
            for who in people:
                t = time.perf_counter()
                r = web.get("/user/login/", headers={"Host": f"{who.lower()}.localhost:{args.port}"})
                assert r.status_code == 200, (who, r.status_code)
                wake.append(time.perf_counter() - t)
            for who in people:  # a little use each: a page and the API, as a reviewer's browser does
                for path in ("/user/login/", "/health/", "/api/version"):
                    web.get(path, headers={"Host": f"{who.lower()}.localhost:{args.port}"})
        time.sleep(2)
        held, running = held_mb(root)
        limit = sum(sorted(mbs)[:active])
        print(
            f"{active} of {args.people} people labelling: {running} servers running, {held:.0f} MB held "
            f"(all up: {all_mb:.0f} MB); practical limit ({active} servers): {limit:.0f} MB -> {held / limit:.2f}x; "
            f"waking a server on its first request: {min(wake):.1f}-{max(wake):.1f} s"
        )
    finally:
        subprocess.run([sys.executable, "-m", "annotate", "-w", str(ws), "ls", "stop"], capture_output=True)
        server.stop_server(scratch / "shared")
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
