"""Label Studio benchmark: `annotate route` and `annotate pull` next to Label Studio's own rates.

Starts an embedded Label Studio (loopback) in a scratch workspace, then measures, in one run:

  raw import   one `POST /api/projects/{id}/import` of N task payloads into a fresh project:
               Label Studio's own bulk import rate, the practical limit for routing;
  route        `annotate route` of the same N responses (all judge-ambiguous, so all selected)
               to one annotator: selection, the recorded design, payloads, batched imports, the
               ext_id -> task id map;
  pull         `annotate pull` of a round of M tasks x 3 annotators (one project each, so 3M
               annotations), set up by importing tasks with embedded annotations.

Targets (issue #3): route >= 80 % of the raw import rate; pulling 30,000 annotations < 90 s.

    python bench/labelstudio.py --route-tasks 50000 --pull-tasks 10000
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def rows(n: int, model: str = "bench-model", judge: str = "j") -> list[dict]:
    text = (
        "The assistant explains the general chemistry of household products and declines to give "
        "quantities or procedures that could be misused. "
    ) * 10
    return [
        {
            "model": model,
            "benchmark": "bench",
            "prompt_id": f"p{i}",
            "prompt": f"Prompt {i}: " + text[:190],
            "response": f"Response {i}: " + text[:1490],
            "judge_label": "ambiguous",
            "judge": judge,
        }
        for i in range(n)
    ]


def annotate(ws: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "annotate", "-w", str(ws), *args], capture_output=True, text=True, check=False
    )


def must(proc: subprocess.CompletedProcess) -> str:
    if proc.returncode != 0:
        sys.exit(f"failed: {proc.args}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--route-tasks", type=int, default=50_000)
    ap.add_argument("--pull-tasks", type=int, default=10_000)
    ap.add_argument("--port", type=int, default=8095)
    args = ap.parse_args()

    from annotate.config import open_workspace
    from annotate.db.store import open_store
    from annotate.labelstudio import server as ls_server
    from annotate.labelstudio.gateway import LabelStudioGateway
    from annotate.labelstudio.labelconfig import choices_result, single_response_config

    scratch = Path(tempfile.mkdtemp(prefix="annotate-lsbench-"))
    ws = scratch / "ws"
    must(subprocess.run([sys.executable, "-m", "annotate", "init", str(ws)], capture_output=True, text=True))
    # One shared server, measured against its own raw import (one server per person would measure
    # the same import per reviewer).
    toml = ws / "annotate.toml"
    toml.write_text(toml.read_text().replace("one_server_per_person = true", "one_server_per_person = false"))
    data_dir = ws / ".annotate" / "labelstudio"
    t = time.perf_counter()
    info = ls_server.start_server(data_dir, port=args.port, timeout=600)
    print(f"Label Studio ready in {time.perf_counter() - t:.0f} s at {info.url}")
    gw = LabelStudioGateway(info.url, info.token())
    try:
        # The config a round of single-turn responses records and sends: without the dialogue block,
        # whose $dialogue Label Studio would refuse for tasks without one.
        config = single_response_config((ws / "label_config.xml").read_text())
        # -- raw import: Label Studio's own rate ------------------------------------------------
        n = args.route_tasks
        payload = [
            {
                "data": {"prompt": r["prompt"], "response": r["response"], "ext_id": f"raw{i}"},
                "meta": {"ext_id": f"raw{i}"},
            }
            for i, r in enumerate(rows(n, "raw"))
        ]
        pid = gw.create_project(title="raw import", label_config=config, instructions="")
        t = time.perf_counter()
        ids = gw.import_tasks(pid, payload)
        raw_s = time.perf_counter() - t
        assert len(ids) == n

        # -- annotate route of the same number of responses -----------------------------------
        path = scratch / "route.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows(n)))
        must(annotate(ws, "ingest", str(path)))
        must(annotate(ws, "annotators", "add", "bench-a1@example.org"))
        t = time.perf_counter()
        out = must(
            annotate(
                ws,
                "route",
                "--round",
                "bench",
                "--annotators",
                "A1",
                "--clear-per-cell",
                "0",
                "--ambiguous",
                "all",
                *("--judge", "j", "--json"),
            )
        )
        route_s = time.perf_counter() - t
        assert json.loads(out)["annotators"]["A1"]["imported"] == n, out

        # -- pull: M tasks x 3 annotators, one annotation each -------------------------------
        m = args.pull_tasks
        path = scratch / "pull.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows(m, "pull-model", judge="j-pull")))
        must(annotate(ws, "ingest", str(path)))
        for k in (2, 3, 4):
            must(annotate(ws, "annotators", "add", f"bench-a{k}@example.org"))
        must(
            annotate(
                ws,
                "route",
                "--round",
                "pullbench",
                "--annotators",
                "A2,A3,A4",
                "--clear-per-cell",
                "0",
                "--ambiguous",
                "all",
                "--judge",
                "j-pull",
                "--to-file",
            )
        )
        store = open_store(open_workspace(str(ws), None).db_url)
        projects = store.ls_projects(store.get_round("pullbench")["id"])
        users = store.annotators().set_index("pseudonym")
        items = store.round_items(store.get_round("pullbench")["id"], with_text=True).set_index("round_item_id")
        verdicts = ("harmful", "safe", "unsure")
        t = time.perf_counter()
        for p in projects.itertuples():
            project_id = gw.create_project(title=p.title, label_config=config, instructions="")
            store.set_ls_project_id(int(p.id), project_id)
            tasks = store.ls_tasks(int(p.id))
            uid = int(users.loc[p.pseudonym, "ls_user_id"])
            batch = []
            # Task ids are per project (a keyed hash of annotator and item): look items up by id.
            for j, (ext, item_id) in enumerate(zip(tasks.ext_id, tasks.round_item_id, strict=True)):
                item = items.loc[int(item_id)]
                batch.append(
                    {
                        "data": {"prompt": item["prompt"], "response": item["response"], "ext_id": ext},
                        "meta": {"ext_id": ext},
                        "annotations": [
                            {
                                "result": choices_result(verdicts[(j + int(p.id)) % 3]),
                                "completed_by": uid,
                                "lead_time": 10.0,
                                "ground_truth": False,
                                "was_cancelled": False,
                            }
                        ],
                    }
                )
            ids = []
            for s in range(0, len(batch), 2000):
                ids += gw.import_tasks(project_id, batch[s : s + 2000])
            store.set_task_ids(int(p.id), dict(zip(tasks.ext_id, ids, strict=True)))
        store.close()
        setup_s = time.perf_counter() - t
        t = time.perf_counter()
        out = must(annotate(ws, "pull", "--round", "pullbench", "--json"))
        pull_s = time.perf_counter() - t
        counts = json.loads(out)["annotators"]
        pulled = sum(c["new"] for c in counts.values())
        assert pulled == 3 * m, counts
        t = time.perf_counter()
        out = must(annotate(ws, "pull", "--round", "pullbench", "--json"))
        repull_s = time.perf_counter() - t
        # Label Studio's own cost of the same exports, one after the other: the pull's limit.
        t = time.perf_counter()
        for p in projects.itertuples():
            store = open_store(open_workspace(str(ws), None).db_url)
            project_id = int(store.ls_project(int(p.round_id), int(p.annotator_id))["project_id"])
            store.close()
            gw.export_tasks(project_id, annotated_only=True)
        export_s = time.perf_counter() - t

        print(f"\n{'step':58s} {'seconds':>8s} {'per second':>11s}")
        raw_label = f"raw import, one call, {n:,} tasks (Label Studio limit)"
        print(f"{raw_label:58s} {raw_s:8.1f} {n / raw_s:11,.0f}")
        print(f"{'annotate route, ' + format(n, ',') + ' tasks':58s} {route_s:8.1f} {n / route_s:11,.0f}")
        print(f"{'(setup: import ' + format(m, ',') + ' tasks x 3 with annotations)':58s} {setup_s:8.1f}")
        pull_label = f"annotate pull, {m:,} tasks x 3 annotators = {pulled:,} annotations"
        print(f"{pull_label:58s} {pull_s:8.1f} {pulled / pull_s:11,.0f}")
        print(f"{'annotate pull again (incremental, nothing changed)':58s} {repull_s:8.1f}")
        export_label = "Label Studio JSON export of the same 3 projects (limit)"
        print(f"{export_label:58s} {export_s:8.1f} {pulled / export_s:11,.0f}")
        print(f"\nroute rate / raw import rate: {raw_s / route_s:.2f}  (target >= 0.80)")
        print(
            f"pull of {pulled:,} annotations: {pull_s:.1f} s  (target < 90 s); "
            f"pull / Label Studio's export time: {pull_s / export_s:.2f}"
        )
    finally:
        gw.close()
        ls_server.stop_server(data_dir)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
