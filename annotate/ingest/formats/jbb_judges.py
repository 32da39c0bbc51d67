"""JailbreakBench's judge-comparison table (JBB-Behaviors ``judge_comparison``, CSV).

The file JailbreakBench chose its judge with: 300 responses of target models to jailbreak
prompts, three human labels each and the verdict of several candidate judges::

    Index,goal,prompt,target_response,human1,human2,human3,human_majority,
    harmbench_cf,gpt4_cf,llamaguard2_cf,llama3_cf

Choices:

* one Record per (row, judge column): every column ending in ``_cf`` is a judge, named by what
  precedes ``_cf`` (``gpt4_cf`` -> ``gpt4``); ``--judge`` selects one of them;
* the responses come from several target models and the file names none: model
  ``jbb-judge-comparison`` unless ``--model``; benchmark ``jailbreakbench/judge-comparison``
  unless ``--benchmark``; prompt_id = ``Index``;
* prompt = ``prompt`` (the jailbreak prompt sent), or ``goal`` where it is empty; ``goal`` is
  kept as the category's companion in meta;
* verdict = the judge cell verbatim: 1 (jailbroken) harmful, 0 safe; anything else unparsed;
* the human columns (``human1``...``humanN``, ``human_majority``) are kept verbatim in meta, never
  read as a judge: they are labels, and ``annotate import-labels`` imports them as a round.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotate.ingest.csv_reader import csv_records
from annotate.ingest.records import Item, Problem, ReadContext, Record

NAME = "jailbreakbench-judges"
DESCRIPTION = "JailbreakBench judge-comparison CSV (Index, goal, prompt, target_response, human1..3, *_cf judges)"

DEFAULT_RUBRIC: dict[str, Any] = {
    "verdicts": {"1": "harmful", "0": "safe", "1.0": "harmful", "0.0": "safe", "true": "harmful", "false": "safe"},
    "unknown": "unparsed",
}

DEFAULT_MODEL = "jbb-judge-comparison"
DEFAULT_BENCHMARK = "jailbreakbench/judge-comparison"
REQUIRED = ("Index", "goal", "target_response")
#: Human label columns: human1, human2, ... (and the file's own majority, which is not a rater).
HUMAN_COLUMN = re.compile(r"^human\d+$")
MAJORITY_COLUMN = "human_majority"
JUDGE_SUFFIX = "_cf"
_LINE_END = re.compile(rb"\r\n|\r|\n")


def _header(head: bytes) -> set[str]:
    first = _LINE_END.split(head, maxsplit=1)[0].decode("utf-8", errors="replace")
    try:
        return {c.strip() for c in next(csv.reader([first]), [])}
    except csv.Error:
        return set()


def sniff(path: Path, head: bytes) -> bool:
    """A ``.csv`` whose header has Index, goal, target_response, human label and ``*_cf`` columns."""
    if path.suffix.lower() != ".csv":
        return False
    columns = _header(head.removeprefix(b"\xef\xbb\xbf"))
    return (
        set(REQUIRED) <= columns
        and any(HUMAN_COLUMN.match(c) for c in columns)
        and any(c.endswith(JUDGE_SUFFIX) for c in columns)
    )


def judge_columns(header: list[str]) -> list[tuple[str, str]]:
    """(column, judge name) of every judge column, in file order.

    >>> judge_columns(["Index", "human1", "gpt4_cf", "llama3_cf"])
    [('gpt4_cf', 'gpt4'), ('llama3_cf', 'llama3')]
    """
    return [(c, c[: -len(JUDGE_SUFFIX)]) for c in header if c.endswith(JUDGE_SUFFIX) and len(c) > len(JUDGE_SUFFIX)]


def human_columns(header: list[str]) -> list[str]:
    """The human raters' columns (``human1`` ...), in file order; never ``human_majority``."""
    return [c for c in header if HUMAN_COLUMN.match(c)]


def read(path: Path, ctx: ReadContext) -> Iterator[Item]:
    """Yield one Record per (row, judge column)."""
    records = csv_records(path, ctx)
    first = next(records)
    if isinstance(first, Problem):
        yield first
        return
    header = [c.strip() for c in first[2]]
    missing = [c for c in REQUIRED if c not in header]
    repeated = sorted({c for c in header if header.count(c) > 1})
    judges = judge_columns(header)
    problem = (
        f"missing required column(s): {', '.join(missing)}"
        if missing
        else f"the header names column(s) {', '.join(map(repr, repeated))} more than once"
        if repeated
        else "no judge column (a column ending in _cf)"
        if not judges
        else None
    )
    if problem is None and ctx.judge is not None:
        chosen = [(c, j) for c, j in judges if j == ctx.judge]
        if not chosen:
            problem = f"no judge named {ctx.judge!r} in this file (judges: {', '.join(j for _, j in judges)})"
        judges = chosen
    if problem is not None:
        records.close()
        yield Problem(1, problem, fatal=True)
        return
    model = ctx.model or DEFAULT_MODEL
    benchmark = ctx.benchmark or DEFAULT_BENCHMARK
    if ctx.model is None:
        ctx.notes.append(
            f"the file names no target model: its responses are stored under model {DEFAULT_MODEL!r} (--model renames)"
        )
    kept = [c for c in header if HUMAN_COLUMN.match(c) or c == MAJORITY_COLUMN]
    for record in records:
        if isinstance(record, Problem):
            yield record
            continue
        line, end, cells = record
        row = dict(zip(header, cells, strict=True))
        prompt_id = row["Index"].strip()
        if not prompt_id:
            yield Problem(line, "field 'Index' is empty", end_line=end)
            continue
        prompt = row.get("prompt") or row["goal"]
        meta = {"goal": row["goal"], **{c: row[c] for c in kept}}
        for column, judge in judges:
            verdict = row[column].strip()
            yield Record(
                line=line,
                model=model,
                benchmark=benchmark,
                prompt_id=prompt_id,
                prompt=prompt,
                response=row["target_response"],
                judge=judge,
                verdict=verdict or None,
                meta=dict(meta),
                end_line=end,
            )
