"""Import benchmark: labels a team already has, next to the practical limit, in the same run (issue #42).

Generates the issue's shape: N responses of 8 models (one benchmark, one judge), ingested first,
and a long table of their human labels, each item rated by a different pair of a team of 18
(rotating pairs: 2N rows). Then measures, each in a fresh subprocess (wall time):

  limit      pandas reads the label table and one raw sqlite3 executemany inserts its 2N rows, in
             one transaction, into a table of (item, rater, label): reading and writing the labels,
             nothing checked;
  import     `annotate import-labels TABLE --key prompt_id=item,model=model --long rater,label`
             (validation of every row, the key matched to the stored responses, the design, the
             raters registered, one transaction);
  adjudicate `annotate adjudicate --policy majority` on the imported round (no item waits);
  export     `annotate export` and `verify` of it (every derived file re-derived).

    python bench/import_labels.py --items 4000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = """
import sqlite3, sys
import pandas as pd
d = pd.read_csv(sys.argv[1], dtype=str)
con = sqlite3.connect(sys.argv[2])
con.execute("create table label (item text, model text, rater text, label text, unique (item, model, rater))")
with con:
    con.executemany("insert into label values (?, ?, ?, ?)", d.itertuples(index=False, name=None))
con.close()
"""


def generate(folder: Path, items: int, seed: int = 42) -> tuple[Path, Path]:
    rng = random.Random(seed)
    responses, table = folder / "responses.jsonl", folder / "labels.csv"
    with open(responses, "w", encoding="utf-8") as fh:
        for i in range(items):
            verdict = rng.choice(["harmful", "safe", "safe", "ambiguous"])
            fh.write(
                json.dumps(
                    {"model": f"m{i % 8}", "benchmark": "mm", "prompt_id": f"p{i}", "prompt": "q",
                     "response": f"answer {i}", "judge": "j", "judge_label": verdict}
                ) + "\n"
            )  # fmt: skip
    raters = [f"R{k:02d}" for k in range(18)]
    with open(table, "w", encoding="utf-8") as fh:
        fh.write("item,model,rater,label\n")
        for i in range(items):
            truth = rng.random() < 0.3
            for who in rng.sample(raters, 2):
                said = truth if rng.random() < 0.9 else not truth
                fh.write(f"p{i},m{i % 8},{who},{'harmful' if said else 'safe'}\n")
    return responses, table


def timed(args: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:6])} ...: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--items", type=int, default=4000)
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        responses, table = generate(folder, args.items)
        ws = folder / "ws"
        cli = [py, "-m", "annotate", "--workspace", str(ws)]
        timed([*cli, "init", str(ws)])
        timed([*cli, "ingest", str(responses)])
        limit = timed([py, "-c", LIMIT, str(table), str(folder / "limit.db")])
        imported = timed(
            [*cli, "import-labels", str(table), "--key", "prompt_id=item,model=model", "--long", "rater,label",
             "--benchmark", "mm", "--round", "rot"]
        )  # fmt: skip
        decided = timed([*cli, "adjudicate", "--round", "rot", "--policy", "majority"])
        exported = timed([*cli, "export", "rot", "--round", "rot"])
        verified = timed([*cli, "verify", str(ws / "exports" / "rot")])
    rows = 2 * args.items
    print(f"{args.items:,} items rated by rotating pairs of 18 raters ({rows:,} label rows)")
    print(f"  limit: pandas read + sqlite3 executemany        {limit:6.2f} s   1.00x")
    print(f"  annotate import-labels                          {imported:6.2f} s  {imported / limit:5.2f}x")
    print(f"  annotate adjudicate --policy majority           {decided:6.2f} s")
    print(f"  annotate export                                 {exported:6.2f} s")
    print(f"  annotate verify                                 {verified:6.2f} s")


if __name__ == "__main__":
    main()
