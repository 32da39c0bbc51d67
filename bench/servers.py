"""The cost of technical blinding: one Label Studio per person against one shared server.

In a scratch workspace with P people (reviewers and an expert), measured in one run:

  template        building the migrated template once per workspace (`label-studio version`
                  on an empty data dir: Django's migrations);
  shared          one shared server started from a migrated copy (the practical limit: what a
                  single server for everyone costs);
  per person      `annotate ls start`: P servers made from the template and started (a few at
                  once), each person's account made; wall time and each server's memory (RSS of
                  its process tree) at readiness.

    python bench/servers.py --people 4
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--people", type=int, default=4)
    ap.add_argument("--port", type=int, default=8280)
    args = ap.parse_args()

    from annotate.labelstudio import server
    from annotate.labelstudio.server import fleet

    scratch = Path(tempfile.mkdtemp(prefix="annotate-servers-bench-"))
    ws = scratch / "ws"
    try:
        subprocess.run([sys.executable, "-m", "annotate", "init", str(ws)], check=True, capture_output=True)
        t = time.perf_counter()
        template = fleet.ensure_template(ws / ".annotate" / "reviewer-servers")
        built = time.perf_counter() - t
        print(f"template (migrations, once per workspace): {built:6.1f} s")

        shared_dir = scratch / "shared"
        shutil.copytree(template, shared_dir)
        server.create_secrets(shared_dir / server.SECRETS_NAME)
        t = time.perf_counter()
        info = server.start_server(shared_dir, port=args.port, timeout=600)
        shared_s = time.perf_counter() - t
        shared_mb = rss_mb(info.pid)
        server.stop_server(shared_dir)
        print(f"one shared server: ready in {shared_s:5.1f} s, {shared_mb:5.0f} MB")

        for k in range(args.people):
            annotate(ws, "annotators", "add", f"person{k}@bench.invalid", *(["--expert"] if k == 0 else []))
        t = time.perf_counter()
        annotate(ws, "ls", "start", "--port", str(args.port))
        fleet_s = time.perf_counter() - t
        mbs = []
        for srv in fleet.person_servers(ws / ".annotate" / "reviewer-servers"):
            st = server.server_status(srv.data_dir)
            assert st.pid is not None
            mbs.append(rss_mb(st.pid))
        print(
            f"{args.people} servers, one per person (`ls start`, accounts included): ready in {fleet_s:5.1f} s, "
            f"{sum(mbs):5.0f} MB in all ({min(mbs):.0f}-{max(mbs):.0f} MB each)"
        )
        print(
            f"cost against one shared server: {fleet_s / shared_s:.1f}x the start time, "
            f"{sum(mbs) / shared_mb:.1f}x the memory ({os.cpu_count()} cores)"
        )
    finally:
        subprocess.run([sys.executable, "-m", "annotate", "-w", str(ws), "ls", "stop"], capture_output=True)
        server.stop_server(scratch / "shared")
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
