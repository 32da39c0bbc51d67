"""How soon items get every vote: the round's order designs on the bundled XSTest round.

Routes the bundled XSTest sample (5 models x 450 prompts, GPT-4's judge; 25 per clear stratum,
seed 7: 289 items) through `annotate route --to-file` once per order design and number of
reviewers, reads each reviewer's task file in the order Label Studio serves it (import order,
"Sequential sampling"), and counts, after each reviewer has labelled their first k tasks, the
items that carry every vote:

  blocks        the default: blocks of 10 in one shared seeded order, shuffled within each block
                per reviewer (--order blocks);
  independent   a seeded order per reviewer (--order independent; what rounds did before);
  limit         the practical limit: every reviewer in the same order, so all k items complete
                (and no order effect is randomised between reviewers).

It also runs reviewers at different paces (a reviewer who labels 7 tasks a day beside one who
labels 20) and counts what is complete at the end of each day.

    python bench/order.py
    python bench/order.py --reviewers 2 3 --k 5 7 10 20 50 100 200
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("gpt4", "llama2new", "llama2orig", "mistralguard", "mistralinstruct")


def annotate(ws: Path, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "annotate", "-w", str(ws), *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        sys.exit(f"failed: annotate {' '.join(args)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc.stdout


def routed_orders(base: Path, design: list[str], reviewers: int) -> dict[str, list[int]]:
    """Each reviewer's queue of round items, as route wrote their task file."""
    ws = base / f"ws-{'-'.join(design) or 'default'}-{reviewers}"
    subprocess.run([sys.executable, "-m", "annotate", "init", str(ws)], capture_output=True, check=True)
    data = ROOT / "annotate" / "data" / "xstest"
    annotate(
        ws, "ingest", "--format", "xstest", *[str(data / f"xstest_v2_completions_{m}_gpteval.csv") for m in MODELS]
    )
    names = [f"A{i + 1}" for i in range(reviewers)]
    for name in names:
        annotate(ws, "annotators", "add", f"{name.lower()}@bench.invalid", "--offline")
    annotate(
        ws, "route", "--round", "r1", "--annotators", ",".join(names), "--clear-per-cell", "25", "--seed", "7",
        "--to-file", *design,
    )  # fmt: skip
    # The task files are what a reviewer's Label Studio imports (in file order); the store says
    # which round item each task is (task ids are keyed per project).
    from annotate.config import open_workspace
    from annotate.db import open_store

    store = open_store(open_workspace(str(ws), None).db_url)
    try:
        projects = store.ls_projects(int(store.get_round("r1")["id"])).set_index("pseudonym")
        orders = {}
        for name in names:
            tasks = store.ls_tasks(int(projects.loc[name, "id"])).set_index("ext_id")
            sent = json.loads((ws / "tasks" / "r1" / f"{name}.json").read_text(encoding="utf-8"))
            orders[name] = [int(tasks.loc[t["data"]["ext_id"], "round_item_id"]) for t in sent]
    finally:
        store.close()
    return orders


def complete(orders: dict[str, list[int]], done: dict[str, int]) -> int:
    """Items in every reviewer's first done[reviewer] tasks."""
    sets = [set(orders[who][: done[who]]) for who in orders]
    return len(set.intersection(*sets))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reviewers", type=int, nargs="+", default=[2, 3])
    ap.add_argument("--k", type=int, nargs="+", default=[5, 7, 10, 15, 20, 30, 50, 100, 150, 200, 289])
    args = ap.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="annotate-bench-order-") as tmp:
        base = Path(tmp)
        for r in args.reviewers:
            blocks = routed_orders(base, [], r)
            independent = routed_orders(base, ["--order", "independent"], r)
            n = len(next(iter(blocks.values())))
            print(f"\n{r} reviewers, {n} items: items with every vote after k labels each (share of the k)")
            print(f"{'k':>5} {'blocks':>14} {'independent':>14} {'limit':>8} {'blocks/limit':>13}")
            for k in args.k:
                k = min(k, n)
                done = dict.fromkeys(blocks, k)
                b, i = complete(blocks, done), complete(independent, dict.fromkeys(independent, k))
                print(f"{k:>5} {b:>6} ({b / k:5.1%}) {i:>6} ({i / k:5.1%}) {k:>8} {b / k:>13.2f}")
            if r == 2:
                print(
                    "\nDifferent paces: A1 labels 20 tasks a day, A2 7 (items with both votes at the end of each day)"
                )
                print(f"{'day':>4} {'A1':>4} {'A2':>4} {'blocks':>7} {'independent':>12} {'limit':>6}")
                for day in (1, 2, 3, 5, 10, 20):
                    pace = {"A1": min(n, 20 * day), "A2": min(n, 7 * day)}
                    b, i = complete(blocks, pace), complete(independent, pace)
                    print(f"{day:>4} {pace['A1']:>4} {pace['A2']:>4} {b:>7} {i:>12} {min(pace.values()):>6}")
    print(f"\n(measured in {time.monotonic() - started:.0f} s, through `annotate route --to-file`)")


if __name__ == "__main__":
    main()
