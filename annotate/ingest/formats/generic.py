"""The generic input schema: JSONL, CSV or Parquet with documented columns.

This is the contract any tool can write to (documented in docs/formats.md):

==============  ========  ====================================================================
column          required  meaning
==============  ========  ====================================================================
model           yes*      the model that wrote the response
benchmark       yes*      benchmark / suite name (e.g. harmbench, xstest)
prompt_id       yes       identifier of the prompt within the benchmark (text or integer)
prompt          yes       the prompt text sent to the model
response        yes       the model's response text (may be empty)
judge_label     yes       the judge's verdict: harmful / safe / ambiguous (and synonyms, see
                          the rubric); empty or null = the judge gave none (ambiguous, missing)
judge           no        the judge's name (default "unspecified")
judge_score     no        a numeric judge score; used through the score band when
                          judge_label is empty
category        no        the prompt's category
epoch           no        sample index for repeated sampling (integer, default 0)
(anything else) no        kept as metadata
==============  ========  ====================================================================

``*`` ``--model`` / ``--benchmark`` on the command line supply (and override) these columns.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotate.ingest.records import Item, Problem, ReadContext, Record, csv_records, json_lines

NAME = "generic"
DESCRIPTION = (
    "generic schema (.jsonl, .csv, .parquet) with columns model, benchmark, prompt_id, prompt, response, judge_label"
)

REQUIRED = ("model", "benchmark", "prompt_id", "prompt", "response", "judge_label")
OPTIONAL = ("category", "judge", "judge_score", "epoch")
KNOWN = set(REQUIRED) | set(OPTIONAL)

DEFAULT_RUBRIC: dict[str, Any] = {
    "verdicts": {
        **dict.fromkeys(["harmful", "unsafe", "yes", "1", "true", "jailbroken", "unsafe_response"], "harmful"),
        **dict.fromkeys(["safe", "no", "0", "false", "refusal", "refused", "benign", "not_harmful"], "safe"),
        **dict.fromkeys(
            ["ambiguous", "unsure", "unclear", "uncertain", "partial", "partial_refusal", "borderline"], "ambiguous"
        ),
        "unparsed": "unparsed",
    },
    "unknown": "error",
}

_JSONL_EXT = (".jsonl", ".ndjson", ".jsonl.txt")
_CSV_EXT = (".csv", ".tsv")
_PARQUET_EXT = (".parquet", ".pq")


def sniff(path: Path, head: bytes) -> bool:
    name = path.name.lower()
    if name.endswith(_PARQUET_EXT):
        return True
    text = head.decode("utf-8", errors="replace")
    if name.endswith(_CSV_EXT):
        first = text.splitlines()[0] if text else ""
        return "judge_label" in first and "response" in first
    if name.endswith(_JSONL_EXT) or name.endswith(".json"):
        for line in text.splitlines():
            if line.strip():
                try:
                    obj = json.loads(line)
                except RecursionError:  # too deep to parse here: the reader says so, on its line
                    return '"judge_label"' in line and '"response"' in line
                except ValueError:
                    return False
                return isinstance(obj, dict) and "judge_label" in obj and "response" in obj
    return False


def read(path: Path, ctx: ReadContext) -> Iterator[Item]:
    name = path.name.lower()
    if name.endswith(_PARQUET_EXT):
        yield from _read_parquet(path, ctx)
    elif name.endswith(_CSV_EXT):
        yield from _read_csv(path, ctx)
    else:
        yield from _read_jsonl(path, ctx)


def _read_jsonl(path: Path, ctx: ReadContext) -> Iterator[Item]:
    for entry in json_lines(path, ctx, tick_every=4096):
        yield entry if isinstance(entry, Problem) else _row_to_item(entry[1], entry[0], ctx)


def _read_csv(path: Path, ctx: ReadContext) -> Iterator[Item]:
    delimiter = "\t" if path.name.lower().endswith(".tsv") else ","
    records = csv_records(path, ctx, delimiter=delimiter, tick_every=4096)
    first = next(records)
    if isinstance(first, Problem):
        yield first
        return
    header = first[2]
    missing = [c for c in REQUIRED if c not in header and not _supplied(c, ctx)]
    if missing:
        records.close()
        yield Problem(1, f"missing required column(s): {', '.join(missing)} (header: {', '.join(header)})", fatal=True)
        return
    repeated = sorted({c for c in header if header.count(c) > 1})
    if repeated:
        records.close()
        yield Problem(1, f"the header names column(s) {', '.join(map(repr, repeated))} more than once", fatal=True)
        return
    for record in records:
        if isinstance(record, Problem):
            yield record
            continue
        line, end, cells = record
        obj = {
            k: (None if v == "" and k not in ("prompt", "response") else v) for k, v in zip(header, cells, strict=True)
        }
        item = _row_to_item(obj, line, ctx)
        item.end_line = end
        yield item


def _read_parquet(path: Path, ctx: ReadContext) -> Iterator[Item]:
    """Parquet is read by pyarrow out of order: the file is hashed whole first, through the same handle."""
    import pyarrow.parquet as pq

    with ctx.open_random(path) as fh:
        try:
            pf = pq.ParquetFile(fh)
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            yield Problem(1, f"not a readable Parquet file ({exc})", fatal=True)
            return
        names = pf.schema_arrow.names
        missing = [c for c in REQUIRED if c not in names and not _supplied(c, ctx)]
        if missing:
            yield Problem(1, f"missing required column(s): {', '.join(missing)}", fatal=True)
            return
        repeated = sorted({c for c in names if names.count(c) > 1})
        if repeated:
            yield Problem(1, f"the schema names column(s) {', '.join(map(repr, repeated))} more than once", fatal=True)
            return
        row, total, size = 0, max(pf.metadata.num_rows, 1), os.fstat(fh.fileno()).st_size
        try:
            for batch in pf.iter_batches(batch_size=8192):
                for obj in batch.to_pylist():
                    row += 1
                    yield _row_to_item(obj, row, ctx)
                ctx.tick(size * row // total)  # progress is counted in bytes: scale rows to the file size
        except Exception as exc:  # a damaged page: pyarrow's OSError / ArrowInvalid / ...
            yield Problem(row + 1, f"unreadable Parquet data after row {row} ({exc})", fatal=True)


def _supplied(column: str, ctx: ReadContext) -> bool:
    return (column == "model" and ctx.model is not None) or (column == "benchmark" and ctx.benchmark is not None)


def _row_to_item(obj: dict[str, Any], line: int, ctx: ReadContext) -> Record | Problem:
    # Hot path (one call per row): the common, valid row passes a handful of type checks;
    # anything unusual falls through to the precise checks below.
    model = obj.get("model") if ctx.model is None else ctx.model
    benchmark = obj.get("benchmark") if ctx.benchmark is None else ctx.benchmark
    prompt_id = obj.get("prompt_id")
    prompt = obj.get("prompt")
    response = obj.get("response")
    verdict = obj.get("judge_label")
    score = obj.get("judge_score")
    epoch = obj.get("epoch")
    if not (
        type(model) is str
        and model
        and type(benchmark) is str
        and benchmark
        and type(prompt_id) is str
        and prompt_id
        and type(prompt) is str
        and type(response) is str
        and (verdict is None or type(verdict) is str)
        and (score is None or type(score) is float)
        and (epoch is None or type(epoch) is int)
        and "judge_label" in obj
    ):
        checked = _checked_fields(obj, line, ctx)
        if isinstance(checked, Problem):
            return checked
        model, benchmark, prompt_id, verdict, score, epoch = checked
    elif score is not None and (score != score or score in (_INF, -_INF)):
        return Problem(line, "field 'judge_score' must be a finite number")
    # Both paths above have checked these (the fast one by type, _checked_fields with a message).
    assert isinstance(prompt, str) and isinstance(response, str)
    category = obj.get("category")
    if category == "":
        category = None  # as in a CSV, where an empty cell is no category
    elif category is not None and type(category) is not str:
        if type(category) is not int:
            return Problem(line, f"field 'category' must be text, got {_type(category)}")
        category = str(category)
    judge = ctx.judge if ctx.judge is not None else obj.get("judge")
    if judge is None or judge == "":
        judge = "unspecified"
    elif type(judge) is not str:
        return Problem(line, f"field 'judge' must be text, got {_type(judge)}")
    extra = {k: v for k, v in obj.items() if k not in KNOWN}
    return Record(
        line=line,
        model=str(model).strip(),
        benchmark=str(benchmark).strip(),
        prompt_id=str(prompt_id).strip(),
        prompt=prompt,
        response=response,
        judge=judge,
        verdict=verdict,
        score=score,
        epoch=epoch or 0,
        category=category,
        meta=extra or None,
    )


_INF = float("inf")


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _checked_fields(obj: dict[str, Any], line: int, ctx: ReadContext) -> tuple[Any, ...] | Problem:
    """Full validation with a precise message: (model, benchmark, prompt_id, verdict, score, epoch)."""
    for col in REQUIRED:
        if col not in obj and not _supplied(col, ctx):
            return Problem(line, f"missing required field {col!r}")
    model = ctx.model if ctx.model is not None else obj["model"]
    benchmark = ctx.benchmark if ctx.benchmark is not None else obj["benchmark"]
    for col, value in (("model", model), ("benchmark", benchmark), ("prompt_id", obj["prompt_id"])):
        if value is None or (isinstance(value, str) and not value.strip()):
            return Problem(line, f"field {col!r} is empty")
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            return Problem(line, f"field {col!r} must be text or an integer, got {type(value).__name__}")
    for col in ("prompt", "response"):
        if not isinstance(obj[col], str):
            got = "null" if obj[col] is None else type(obj[col]).__name__
            return Problem(line, f"field {col!r} must be text, got {got}")
    verdict = obj["judge_label"]
    if verdict is not None and not isinstance(verdict, str):
        if isinstance(verdict, bool):
            verdict = "true" if verdict else "false"
        elif isinstance(verdict, (int, float)):
            verdict = str(verdict)
        else:
            return Problem(line, f"field 'judge_label' must be text, got {type(verdict).__name__}")
    score = obj.get("judge_score")
    if score is not None:
        try:
            if isinstance(score, bool):
                raise TypeError
            score = float(score)
        except (TypeError, ValueError):
            return Problem(line, f"field 'judge_score' must be a number, got {score!r}")
        if math.isinf(score) or math.isnan(score):
            return Problem(line, "field 'judge_score' must be a finite number")
    epoch = obj.get("epoch")
    if epoch is None:
        epoch = 0
    else:
        try:
            f = float(epoch)
            if isinstance(epoch, bool) or not f.is_integer():
                raise ValueError
            epoch = int(f)
        except (TypeError, ValueError):
            return Problem(line, f"field 'epoch' must be an integer, got {epoch!r}")
    return model, benchmark, obj["prompt_id"], verdict, score, epoch
