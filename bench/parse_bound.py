"""What counting a JSON text before parsing it costs, beside parsing it (issue #32).

Every JSON text annotate parses is first counted (``annotate.json_bound.json_values_over``: the
commas, colons and opening brackets, at C speed; strings cut out only when that fast count is over
the bound). The practical limit is ``json.loads`` itself on the same bytes: the count must be small
beside it. Measured on

  run       a whole-run document shaped like an Inspect JSON log (many short fields), the
            single-document readers' case, counted against MAX_DOCUMENT_VALUES;
  text      a text-heavy document (HarmBench results: long generations with punctuation);
  over      the run document against MAX_SAMPLE_VALUES: its fast count is over the bound, so its
            strings are cut out and it is counted again (the slow path; it is refused);
  jsonl     JSON Lines of 200,000 rows through ``json_lines``, against a bare readline +
            ``json.loads`` loop (each line is under the bound: not even counted);
  csv       a CSV of 200,000 rows through ``csv_records`` (which now counts each record's
            delimiters), against a bare ``csv.reader`` over the same file.

It prints each time and the ratio count / parse (or reader / bare loop).

    python bench/parse_bound.py
    python bench/parse_bound.py --scale 0.25   # smaller inputs
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotate.ingest.csv_reader import csv_records  # noqa: E402
from annotate.ingest.records import ReadContext, json_lines  # noqa: E402
from annotate.json_bound import MAX_DOCUMENT_VALUES, MAX_SAMPLE_VALUES, json_values_over  # noqa: E402

WORDS = "the model said , that it would : not help [ with ] this { request } because the policy".split()


def best(fn, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run_document(n: int) -> bytes:
    rng = random.Random(0)
    return json.dumps(
        [
            {
                "id": i,
                "epoch": 1,
                "input": " ".join(rng.choices(WORDS, k=12)),
                "messages": [
                    {"role": "user", "content": " ".join(rng.choices(WORDS, k=20)), "id": f"m{j}"} for j in range(6)
                ],
                "scores": {"judge": {"value": rng.choice("CI"), "explanation": " ".join(rng.choices(WORDS, k=15))}},
                "metadata": {"category": rng.choice(["a", "b"]), "tags": [1, 2, 3]},
            }
            for i in range(n)
        ]
    ).encode()


def text_document(n: int) -> bytes:
    rng = random.Random(1)
    return json.dumps(
        {
            f"behaviour_{b}": [
                {
                    "test_case": " ".join(rng.choices(WORDS, k=40)),
                    "generation": " ".join(rng.choices(WORDS, k=300)),
                    "label": 1,
                }
                for _ in range(40)
            ]
            for b in range(n)
        }
    ).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="input sizes relative to the defaults")
    args = parser.parse_args()
    rows: list[tuple[str, str, float, float]] = []

    run = run_document(int(60_000 * args.scale))
    rows.append(
        (
            f"run document, {len(run) / 2**20:.0f} MiB",
            "count / json.loads",
            best(lambda: json_values_over(run, MAX_DOCUMENT_VALUES)),
            best(lambda: json.loads(run)),
        )
    )
    text = text_document(int(600 * args.scale))
    rows.append(
        (
            f"text document, {len(text) / 2**20:.0f} MiB",
            "count / json.loads",
            best(lambda: json_values_over(text, MAX_DOCUMENT_VALUES)),
            best(lambda: json.loads(text)),
        )
    )
    over = run  # over MAX_SAMPLE_VALUES by its fast count: its strings are cut out and it is counted again
    assert json_values_over(over, MAX_SAMPLE_VALUES) is not None
    rows.append(
        (
            f"over the bound, {len(over) / 2**20:.0f} MiB (slow path)",
            "count / json.loads",
            best(lambda: json_values_over(over, MAX_SAMPLE_VALUES)),
            best(lambda: json.loads(over)),
        )
    )
    with tempfile.TemporaryDirectory() as tmp:
        rng = random.Random(2)
        n = int(200_000 * args.scale)
        jsonl = Path(tmp) / "rows.jsonl"
        with open(jsonl, "w") as fh:
            for i in range(n):
                fh.write(
                    json.dumps(
                        {
                            "prompt_id": f"p{i}",
                            "prompt": " ".join(rng.choices(WORDS, k=30)),
                            "response": " ".join(rng.choices(WORDS, k=120)),
                            "judge_label": "safe",
                        }
                    )
                    + "\n"
                )

        def bare_jsonl() -> None:
            with open(jsonl, "rb") as fh:
                for line in fh:
                    json.loads(line)

        rows.append(
            (
                f"JSON Lines, {n:,} rows",
                "json_lines / bare loop",
                best(lambda: sum(1 for _ in json_lines(jsonl, ReadContext()))),
                best(bare_jsonl),
            )
        )
        table = Path(tmp) / "rows.csv"
        with open(table, "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["prompt_id", "prompt", "response", "judge_label"])
            for i in range(n):
                writer.writerow(
                    [f"p{i}", " ".join(rng.choices(WORDS, k=30)), " ".join(rng.choices(WORDS, k=120)), "safe"]
                )

        def bare_csv() -> None:
            with open(table, newline="", encoding="utf-8") as fh:
                for _ in csv.reader(fh):
                    pass

        rows.append(
            (
                f"CSV, {n:,} rows",
                "csv_records / bare csv.reader",
                best(lambda: sum(1 for _ in csv_records(table, ReadContext()))),
                best(bare_csv),
            )
        )

    print(f"{'input':42s} {'ratio of':32s} {'ours':>8s} {'limit':>8s} {'ratio':>6s}")
    for name, what, ours, limit in rows:
        print(f"{name:42s} {what:32s} {ours:7.3f}s {limit:7.3f}s {ours / limit:6.2f}")


if __name__ == "__main__":
    main()
