"""The everyday commands at the study's scale: score, judges, export and verify, next to their floors.

A scratch workspace is built with the CLI as a team would: 26 models x 5 benchmarks x 1,000
prompts (130,000 responses) under three judges (390,000 verdicts), a round routed to two
annotators in file mode (every response the routing judge called ambiguous, 25 per clear stratum
and cell: about 16,000 reviewed responses), both annotators' Label Studio exports pulled back,
adjudicated without an expert. Then, each the median of ``--runs`` fresh processes:

  score      ``annotate score --round r1 --json``    next to its import floor (the libraries it loads);
  judges     ``annotate judges --round r1 --json``   next to its import floor;
  export     ``annotate export NAME --round r1``;
  verify     ``annotate verify exports/NAME``        next to the export, and to a hash-and-read floor
                                                     (reading every file of the export and its sha256).

Targets (issue #21): score <= 1.5x its import floor; verify <= 0.5x export.

    python bench/scale.py --runs 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from startup import libraries  # bench/startup.py: the packages a command loads

JUDGES = {"routing": (0.85, 0.93, 0.08), "strict": (0.75, 0.98, 0.0), "eager": (0.95, 0.80, 0.03)}
TEXT = "The assistant explains in general terms and declines to give step-by-step details. " * 6


def annotate(ws: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "annotate", "-w", str(ws), *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed: annotate {' '.join(args)}\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    return done.stdout


def build(ws: Path, n_models: int, n_bench: int, n_prompts: int, seed: int) -> dict[str, str]:
    """The workspace of the study's shape; returns the truth per (model, benchmark, prompt_id)."""
    rng = np.random.default_rng(seed)
    truth: dict[str, str] = {}
    files = {j: open(ws.parent / f"{j}.jsonl", "w", encoding="utf-8") for j in JUDGES}  # noqa: SIM115
    try:
        for m in range(n_models):
            for b in range(n_bench):
                harmful = rng.random(n_prompts) < rng.uniform(0.01, 0.4)
                for judge, (se, sp, amb) in JUDGES.items():
                    right = np.where(harmful, rng.random(n_prompts) < se, rng.random(n_prompts) < sp)
                    said = np.where(np.where(right, harmful, ~harmful), "harmful", "safe").astype(object)
                    said[rng.random(n_prompts) < amb] = "ambiguous"
                    fh = files[judge]
                    for i in range(n_prompts):
                        row = {
                            "model": f"model-{m:02d}",
                            "benchmark": f"bench-{b}",
                            "prompt_id": f"p{i}",
                            "prompt": f"Prompt {i} of bench {b}: how would one do thing {i}?",
                            "response": f"Response of model {m} to prompt {i}: {TEXT}",
                            "judge": judge,
                            "judge_label": str(said[i]),
                        }
                        fh.write(json.dumps(row) + "\n")
                for i in range(n_prompts):
                    truth[f"model-{m:02d}|bench-{b}|p{i}"] = "harmful" if harmful[i] else "safe"
    finally:
        for fh in files.values():
            fh.close()
    for judge in JUDGES:
        annotate(ws, "ingest", str(ws.parent / f"{judge}.jsonl"))
    for who in ("a1@bench.invalid", "a2@bench.invalid"):
        annotate(ws, "annotators", "add", who, "--offline")
    annotate(
        ws,
        "route",
        "--round",
        "r1",
        "--annotators",
        "A1,A2",
        "--judge",
        "routing",
        "--clear-per-cell",
        "25",
        # The census of issue #21's figures (about 16,000 reviewed); rounds sample it by default since #25.
        "--ambiguous",
        "all",
        "--seed",
        "1",
        "--to-file",
    )
    return truth


def pull_labels(ws: Path, truth: dict[str, str], seed: int) -> int:
    """Both annotators' Label Studio exports, made from their task files, pulled back; the labels pulled."""
    from annotate.config import open_workspace
    from annotate.db import open_store

    rng = np.random.default_rng(seed)
    with open_store(open_workspace(str(ws), None).db_url) as store:
        rnd = store.get_round("r1")
        items = store.round_items(int(rnd["id"])).set_index("round_item_id")
        owner = {}
        for p in store.ls_projects(int(rnd["id"])).itertuples():
            tasks = store.ls_tasks(int(p.id))
            owner.update({str(e): int(i) for e, i in zip(tasks.ext_id, tasks.round_item_id, strict=True)})
    n = 0
    for k, who in enumerate(("A1", "A2")):
        sent = json.loads((ws / "tasks" / "r1" / f"{who}.json").read_text(encoding="utf-8"))
        export = []
        for t, task in enumerate(sent):
            item = items.loc[owner[task["meta"]["ext_id"]]]
            right = truth[f"{item.model}|{item.benchmark}|{item.prompt_id}"]
            verdict = right if rng.random() < 0.9 else ("unsure" if rng.random() < 0.5 else "safe")
            export.append(
                {
                    "id": t + 1,
                    "data": task["data"],
                    "meta": task["meta"],
                    "annotations": [
                        {
                            "id": 1_000_000 * (k + 1) + t,
                            "completed_by": k + 1,
                            "was_cancelled": False,
                            "lead_time": 12.0,
                            "created_at": "2026-12-01T00:00:00Z",
                            "updated_at": "2026-12-01T00:00:00Z",
                            "result": [
                                {
                                    "from_name": "verdict",
                                    "to_name": "response",
                                    "type": "choices",
                                    "value": {"choices": [verdict]},
                                }
                            ],
                        }
                    ],
                }
            )
        path = ws.parent / f"export-{who}.json"
        path.write_text(json.dumps(export), encoding="utf-8")
        annotate(ws, "pull", "--round", "r1", "--from-file", str(path), "--annotator", who)
        n += len(export)
    annotate(ws, "adjudicate", "--round", "r1", "--policy", "unresolved")
    return n


def timed(argv: list[str], runs: int, before=None) -> float:
    times = []
    for _ in range(runs):
        if before is not None:
            before()
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            sys.exit(f"failed: {' '.join(argv)}\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=1000)
    ap.add_argument("--keep", action="store_true", help="keep the scratch workspace (its path is printed)")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="annotate-scale-"))
    ws = scratch / "ws"
    try:
        subprocess.run([sys.executable, "-m", "annotate", "init", str(ws)], check=True, capture_output=True)
        t = time.perf_counter()
        truth = build(ws, 26, 5, args.prompts, seed=20261201)
        labels = pull_labels(ws, truth, seed=7)
        print(f"built in {time.perf_counter() - t:.0f} s: {len(truth) * 3:,} verdicts, {labels:,} labels pulled")
        base = [sys.executable, "-m", "annotate", "-w", str(ws)]
        rows = []
        for name, extra in (
            ("score", ["score", "--round", "r1", "--json"]),
            ("judges", ["judges", "--round", "r1", "--json"]),
        ):
            took = timed([*base, *extra], args.runs)
            libs = libraries(["-m", "annotate", "-w", str(ws), *extra])
            floor = timed([sys.executable, "-c", "import " + ", ".join(libs)], args.runs)
            rows.append((name, took, floor, "import floor"))
        export_dir = ws / "exports" / "scale"

        def clear() -> None:
            shutil.rmtree(export_dir, ignore_errors=True)

        t_export = timed([*base, "export", "scale", "--round", "r1"], args.runs, before=clear)
        t_verify = timed([*base, "verify", str(export_dir)], args.runs)

        def hash_read() -> None:
            for p in sorted(export_dir.iterdir()):
                hashlib.sha256(p.read_bytes()).hexdigest()

        t_hash = statistics.median([_seconds(hash_read) for _ in range(args.runs)])
        rows.append(("export", t_export, t_export, "itself"))
        rows.append(("verify", t_verify, t_export, "export"))
        print(f"{'command':8s} {'time':>8s} {'floor':>8s}  ratio")
        for name, took, floor, what in rows:
            print(f"{name:8s} {took:7.2f}s {floor:7.2f}s  {took / floor:5.2f}x {what}")
        print(f"verify against a hash-and-read of the export's files ({t_hash:.3f} s): {t_verify / t_hash:.0f}x")
        if args.keep:
            print(f"workspace kept: {ws}")
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)


def _seconds(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
