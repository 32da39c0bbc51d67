"""Ingest benchmark: `annotate ingest` next to the practical limit, in the same run.

Generates N synthetic rows in the generic JSONL schema (~200-character prompts, ~1,500-character
responses), then measures, each in a fresh subprocess (wall time and peak RSS):

  baseline   pyarrow reads the file (streaming JSON reader) and one raw sqlite3
             executemany inserts the same rows, in one transaction, into a table with the
             same columns and unique key: the practical limit on this hardware;
  ingest     `annotate ingest FILE` into a new workspace (validation, rubric mapping, content
             hashes, conflict detection, one transaction);
  re-ingest  the same command again on the same file (every row already present).

Targets (issue #2): at 1,000,000 rows ingest/baseline <= 2.0, peak memory < 2 GiB, and
re-ingest no slower than the first ingest.

  mapped     (issue #24) the same rows as someone else's results table: other column names
             (model_name, prompt_text, raw_response, harmful), no prompt_id (made from a hash of
             the prompt), ingested with `--map` into a new workspace, next to `ingest`.

    python bench/ingest.py --rows 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = (
    "the model said that it would not help with this request because the safety policy forbids "
    "instructions for dangerous chemistry weapons malware fraud however here is some general "
    "information about history science and cooking recipes with careful steps and notes"
).split()


#: The generic fields under the names of a house results table (and no prompt_id).
HOUSE = {"model": "model_name", "prompt": "prompt_text", "response": "raw_response", "judge_label": "harmful"}
MAP = ",".join(f"{field}={column}" for field, column in HOUSE.items())


def mapped_copy(src: Path, dst: Path) -> None:
    """The rows of ``src`` with the house table's column names and without prompt_id."""
    with open(src, encoding="utf-8") as fh, open(dst, "w", encoding="utf-8") as out:
        for line in fh:
            row = json.loads(line)
            row.pop("prompt_id")
            out.write(json.dumps({HOUSE.get(k, k): v for k, v in row.items()}) + "\n")


def generate(path: Path, rows: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    pool = [" ".join(rng.choice(WORDS) for _ in range(400)) for _ in range(64)]
    labels = ("harmful", "safe", "ambiguous", "safe", "safe")
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(rows):
            text = pool[i % 64]
            row = {
                "model": f"model-{i % 26}",
                "benchmark": f"bench-{(i // 26) % 5}",
                "prompt_id": f"p{i // 130}",
                "prompt": f"{i} " + text[(i * 7) % 1000 : (i * 7) % 1000 + 195],
                "response": f"{i} " + text[(i * 13) % 500 : (i * 13) % 500 + 1495],
                "judge_label": labels[i % 5],
                "judge": "judge-x",
                "category": f"cat-{i % 7}",
            }
            fh.write(json.dumps(row) + "\n")


BASELINE = r'''
import sqlite3, sys, time
import pyarrow.json as pj
path, db = sys.argv[1], sys.argv[2]
conn = sqlite3.connect(db)
conn.execute("PRAGMA journal_mode=WAL"); conn.execute("PRAGMA synchronous=NORMAL")
conn.execute("""CREATE TABLE response (id INTEGER PRIMARY KEY, benchmark TEXT, model TEXT, prompt_id TEXT,
    epoch INTEGER, judge TEXT, category TEXT, prompt TEXT, response TEXT, judge_verdict TEXT,
    judge_score REAL, judge_label TEXT, UNIQUE (benchmark, model, prompt_id, epoch, judge))""")
cols = ["benchmark", "model", "prompt_id", "judge", "category", "prompt", "response", "judge_label"]
reader = pj.open_json(path, read_options=pj.ReadOptions(block_size=1 << 24))
sql = ("INSERT INTO response (benchmark, model, prompt_id, epoch, judge, category, prompt, response, "
       "judge_verdict, judge_score, judge_label) VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, NULL, ?)")
cur = conn.cursor()
n = 0
for batch in reader:
    data = [batch.column(c).to_pylist() for c in cols]
    rows = list(zip(data[0], data[1], data[2], data[3], data[4], data[5], data[6], data[7], data[7]))
    cur.executemany(sql, rows)
    n += len(rows)
conn.commit()
print(n)
'''


def measure(cmd: list[str]) -> tuple[float, float]:
    wrapper = (
        "import resource, subprocess, sys, time, json; t=time.perf_counter(); "
        "r=subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "e=time.perf_counter()-t; "
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(json.dumps({'rc': r.returncode, 's': e, 'rss': rss, 'err': r.stderr[-3000:], 'out': r.stdout[-3000:]}))"
    )
    proc = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True)
    info = json.loads(proc.stdout)
    if info["rc"] != 0:
        sys.exit(f"command failed ({info['rc']}): {' '.join(cmd)}\n{info['err']}")
    return info["s"], info["rss"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dir", type=Path, default=None, help="scratch folder (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = ap.parse_args()

    scratch = args.dir or Path(tempfile.mkdtemp(prefix="annotate-bench-"))
    scratch.mkdir(parents=True, exist_ok=True)
    data = scratch / f"rows-{args.rows}.jsonl"
    try:
        if not data.exists():
            t = time.perf_counter()
            generate(data, args.rows)
            print(
                f"generated {args.rows:,} rows, {data.stat().st_size / 2**20:,.0f} MiB "
                f"in {time.perf_counter() - t:.1f} s"
            )
        base_db = scratch / "baseline.db"
        for p in scratch.glob("baseline.db*"):
            p.unlink()
        base_s, base_rss = measure([sys.executable, "-c", BASELINE, str(data), str(base_db)])

        ws = scratch / "ws"
        shutil.rmtree(ws, ignore_errors=True)
        annotate = [sys.executable, "-m", "annotate"]
        subprocess.run([*annotate, "init", str(ws)], check=True, capture_output=True)
        ours_s, ours_rss = measure([*annotate, "-w", str(ws), "ingest", str(data)])
        again_s, again_rss = measure([*annotate, "-w", str(ws), "ingest", str(data)])
        house = scratch / f"house-{args.rows}.jsonl"
        if not house.exists():
            mapped_copy(data, house)
        ws2 = scratch / "ws-mapped"
        shutil.rmtree(ws2, ignore_errors=True)
        subprocess.run([*annotate, "init", str(ws2)], check=True, capture_output=True)
        mapped_s, mapped_rss = measure([*annotate, "-w", str(ws2), "ingest", str(house), "--map", MAP])

        rows = [
            ("baseline: pyarrow read + sqlite3 executemany", base_s, base_rss),
            ("annotate ingest (new rows)", ours_s, ours_rss),
            ("annotate ingest again (all present)", again_s, again_rss),
            ("annotate ingest --map (house table, ids made)", mapped_s, mapped_rss),
        ]
        print(f"\n{args.rows:,} rows ({data.stat().st_size / 2**20:,.0f} MiB JSONL), machine: {os.cpu_count()} cores")
        print(f"{'path':46s} {'seconds':>8s} {'rows/s':>9s} {'peak MiB':>9s}")
        for name, s, rss in rows:
            print(f"{name:46s} {s:8.1f} {args.rows / s:9,.0f} {rss:9,.0f}")
        print(f"\nratio ingest / baseline:     {ours_s / base_s:.2f}  (target <= 2.0)")
        print(f"ratio re-ingest / ingest:    {again_s / ours_s:.2f}  (target <= 1.0)")
        print(f"peak memory of ingest:       {max(ours_rss, again_rss):,.0f} MiB (target < 2048)")
        print(f"ratio --map / ingest:        {mapped_s / ours_s:.2f}  (the map and the made ids; target <= 1.2)")
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
