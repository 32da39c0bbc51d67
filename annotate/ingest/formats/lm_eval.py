"""lm-evaluation-harness per-sample logs (``--log_samples``): ``samples_<task>_<datetime>.jsonl``.

One JSON object per line: ``doc_id, doc, target, arguments, resps, filtered_resps, filter,
metrics, doc_hash, ...`` plus one key per metric with its value (``"exact_match": 1.0``).

Choices:

* benchmark = ``<task>`` from the file name (``--benchmark`` overrides).
* model: ``--model``, else ``model_name`` from a sibling ``results_<datetime>.json`` (the one
  with the same datetime first; otherwise any ``results_*.json`` beside it, if they all name
  the same model). When ``model_name`` is empty, the ``pretrained=`` / ``model=`` entry of
  ``config.model_args`` is used. With no model found, read yields one Problem asking for
  ``--model`` and saying why each ``results_*.json`` beside it named none. A sibling that is
  not a regular file (a FIFO, a device) is never opened: it is named as such in that message.
* prompt_id = ``str(doc_id)``, epoch 0, prompt = the first argument of the first request
  (``arguments`` is ``{"gen_args_0": {"arg_0": prompt, ...}}`` in 0.4.x and a list of argument
  lists on current main). A chat-templated prompt (``--apply_chat_template``: a 1-element
  list holding the JSON text of the messages) is made readable: a single message becomes its
  content, several become ``role: content`` blocks separated by blank lines.
* response = the raw generation ``resps[0][0]``: that is what a reviewer has to read. The
  filtered answer the metric compared (``filtered_resps[0]``, e.g. ``"230"`` for gsm8k) goes
  into meta as ``filtered_response``; it is the response only when ``resps`` has no text.
  Non-text responses (loglikelihood tasks) are written as JSON.
* judge = ``lm-eval:<metric>,<filter>`` for the first metric in ``metrics`` (the filter is
  part of the name because lm-eval writes one line per doc *and filter*, and the filters
  score differently, as ``"exact_match,strict-match"`` does in results files); score = that
  metric's value (a bool reads as 1.0 / 0.0), verdict None. ``--judge`` overrides the name.
* line = the line number in the JSONL file.

Rubric: only a score band (0.4-0.6, high = harmful), and an unknown verdict is an error (the
reader never emits one). Many lm-eval metrics are "higher is better" (accuracy): for such a
task, set ``harmful_when = "low"`` in a rubric file. The example file (gsm8k) is not a safety
task; it only shows the format.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotate.errors import InputError
from annotate.fileio import open_input
from annotate.ingest.records import (
    Item,
    Problem,
    ReadContext,
    Record,
    file_kind_problem,
    json_lines,
    load_json_bytes,
)
from annotate.json_bound import MAX_SAMPLE_VALUES, json_values_over, too_many_values

NAME = "lm-eval"
DESCRIPTION = "lm-evaluation-harness --log_samples output: samples_<task>_<datetime>.jsonl"

DEFAULT_RUBRIC: dict[str, Any] = {
    "verdicts": {},
    "unknown": "error",
    "score_band": {"low": 0.4, "high": 0.6, "harmful_when": "high"},
}

_FILE_RE = re.compile(r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d.\-:]+)\.jsonl$", re.IGNORECASE)
_TICK_EVERY = 1024
MAX_RESULTS_BYTES = 64 * 1024 * 1024  # a results_*.json is a summary: kilobytes, not gigabytes


def sniff(path: Path, head: bytes) -> bool:
    """A ``.jsonl`` file whose first object has ``doc_id`` and ``filtered_resps``."""
    if path.suffix.lower() != ".jsonl":
        return False
    head = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    return head.startswith(b"{") and b'"doc_id"' in head and b'"filtered_resps"' in head


def task_from_filename(path: Path) -> tuple[str | None, str | None]:
    """(task, datetime stamp) from ``samples_<task>_<datetime>.jsonl``; (None, None) otherwise."""
    match = _FILE_RE.match(path.name)
    if not match:
        return None, None
    return match["task"], match["stamp"]


def model_from_results(path: Path) -> str | None:
    """``model_name`` from the ``results_*.json`` beside a samples file, preferring the same run."""
    return _model_and_notes(path)[0]


def _model_and_notes(path: Path) -> tuple[str | None, list[str]]:
    """(the model the ``results_*.json`` beside ``path`` name, or None; why each sibling named none).

    A sibling that is not a regular file (a FIFO, a device) is never opened (``file_kind_problem``).
    """
    notes: list[str] = []
    _, stamp = task_from_filename(path)
    if stamp is not None:
        same_run = path.with_name(f"results_{stamp}.json")
        if os.path.lexists(same_run):
            name, why = _results_model(same_run)
            if name:
                return name, []
            notes.append(f"{same_run.name} {why}")
    try:
        siblings = sorted(path.parent.glob("results_*.json"))
    except OSError as exc:
        return None, [*notes, f"the folder cannot be listed ({exc.strerror or exc})"]
    names: dict[str, list[str]] = {}
    for sibling in siblings:
        if stamp is not None and sibling.name == f"results_{stamp}.json":
            continue
        name, why = _results_model(sibling)
        if name:
            names.setdefault(name, []).append(sibling.name)
        else:
            notes.append(f"{sibling.name} {why}")
    if len(names) == 1:
        return next(iter(names)), []
    if len(names) > 1:
        named = "; ".join(f"{', '.join(files)}: {name!r}" for name, files in sorted(names.items()))
        notes.append(f"the results files beside it name different models ({named})")
    return None, notes


def _results_model(path: Path) -> tuple[str | None, str]:
    """(the model a results file names, ""), or (None, why it names none: a sentence's end)."""
    kind = file_kind_problem(path)
    if kind is not None:  # never opened: a FIFO would block or feed the command
        return None, kind.split(";")[0]
    try:
        with open_input(path) as source:
            raw = source.stream.read(MAX_RESULTS_BYTES + 1)
    except (InputError, OSError) as exc:  # an unreadable sibling is not this file's problem
        return None, f"cannot be read ({str(exc).removeprefix(f'{path}: ')})"
    if len(raw) > MAX_RESULTS_BYTES:
        return None, f"is larger than {MAX_RESULTS_BYTES // 2**20} MiB (a results file is a summary): not read"
    if (count := json_values_over(raw, MAX_SAMPLE_VALUES)) is not None:  # a summary: kilobytes of values
        return None, f"is not read: {too_many_values(count, MAX_SAMPLE_VALUES, 'it')}"
    data, problem = load_json_bytes(raw)
    if problem is not None:
        return None, f"is not valid JSON ({problem.message})"
    if not isinstance(data, dict):
        return None, "is not a JSON object"
    name = data.get("model_name")
    if isinstance(name, str) and name:
        return name, ""
    config = data.get("config")
    args = config.get("model_args") if isinstance(config, dict) else None
    if isinstance(args, dict):
        found = args.get("pretrained") or args.get("model")
        if isinstance(found, str) and found:
            return found, ""
    if isinstance(args, str):
        for part in args.split(","):
            key, _, value = part.partition("=")
            if key.strip() in ("pretrained", "model") and value.strip():
                return value.strip(), ""
    return None, "names no model (no model_name, no pretrained= or model= in config.model_args)"


def read(path: Path, ctx: ReadContext) -> Iterator[Item]:
    """Yield one Record per line (a doc under one filter)."""
    task, _ = task_from_filename(path)
    benchmark = ctx.benchmark or task
    if benchmark is None:
        yield Problem(
            1,
            "cannot tell the task from the file name (expected samples_<task>_<datetime>.jsonl); pass --benchmark",
            fatal=True,
        )
        return
    model, notes = (ctx.model, []) if ctx.model else _model_and_notes(path)
    if model is None:
        why = "; ".join(notes) if notes else "there is no results_*.json beside this file"
        yield Problem(1, f"cannot tell the model: {why}; pass --model", fatal=True)
        return
    for entry in json_lines(path, ctx, tick_every=_TICK_EVERY):
        yield entry if isinstance(entry, Problem) else _line(entry[1], entry[0], model, benchmark, ctx)


def _line(obj: Any, line: int, model: str, benchmark: str, ctx: ReadContext) -> Item:
    if not isinstance(obj, dict):
        return Problem(line, f"expected a JSON object, got {_type(obj)}")
    for key in ("doc_id", "arguments", "metrics"):
        if key not in obj:
            return Problem(line, f"missing field {key!r}")
    doc_id = obj["doc_id"]
    if not isinstance(doc_id, (int, str)) or isinstance(doc_id, bool):
        return Problem(line, f"field 'doc_id' must be an integer, got {_type(doc_id)}")
    metrics = obj["metrics"]
    if not isinstance(metrics, list) or not metrics or not isinstance(metrics[0], str):
        return Problem(line, "field 'metrics' must be a non-empty list of metric names")
    metric = metrics[0]
    if metric not in obj:
        return Problem(line, f"missing field {metric!r} (the value of the first metric)")
    value = obj[metric]
    if isinstance(value, bool):
        score: float | None = float(value)
    elif isinstance(value, (int, float)):
        score = float(value)
    elif value is None:
        score = None
    else:
        return Problem(line, f"field {metric!r} must be a number, got {_type(value)}")
    prompt = _prompt(obj["arguments"])
    if prompt is None:
        return Problem(
            line,
            "field 'arguments' has no prompt (expected {'gen_args_0': {'arg_0': ...}} or a list of argument lists)",
        )
    raw = _first(_first(obj.get("resps")))
    filtered = _first(obj.get("filtered_resps"))
    if raw is None and filtered is None:
        return Problem(line, "missing field 'resps' (no model response)")
    response = raw if raw is not None else filtered
    flt = obj.get("filter")
    judge = ctx.judge or (f"lm-eval:{metric},{flt}" if isinstance(flt, str) and flt else f"lm-eval:{metric}")
    meta: dict[str, Any] = {"metric": metric}
    if isinstance(flt, str):
        meta["filter"] = flt
    if filtered is not None:
        meta["filtered_response"] = _text(filtered)
    if "target" in obj:
        meta["target"] = obj["target"]
    return Record(
        line=line,
        model=model,
        benchmark=benchmark,
        prompt_id=str(doc_id),
        prompt=prompt,
        response=_text(response),
        judge=judge,
        verdict=None,
        score=score,
        meta=meta,
    )


def _prompt(arguments: Any) -> str | None:
    """The first argument of the first request, in either ``arguments`` shape, as text."""
    first = None
    if isinstance(arguments, dict) and arguments:
        request = arguments.get("gen_args_0", next(iter(arguments.values())))
        if isinstance(request, dict) and request:
            first = request.get("arg_0", next(iter(request.values())))
        elif isinstance(request, list):
            first = _first(request)
    elif isinstance(arguments, list):
        request = _first(arguments)
        first = _first(request) if isinstance(request, list) else request
    if isinstance(first, list) and len(first) == 1:  # a chat prompt: JsonChatStr, a 1-tuple
        first = first[0]
    if not isinstance(first, str):
        return None
    return _render_chat(first)


def _render_chat(prompt: str) -> str:
    """A chat-templated prompt (the JSON text of ``[{role, content}, ...]``) made readable:
    one message is its content; several are ``role: content`` blocks. Other text is kept."""
    if not prompt.startswith("[{") or json_values_over(prompt, MAX_SAMPLE_VALUES) is not None:
        return prompt  # not a chat, or too large to parse (it is kept as the text it is)
    try:
        messages = json.loads(prompt)
    except (ValueError, RecursionError):
        return prompt
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in messages
    ):
        return prompt
    if len(messages) == 1:
        return messages[0]["content"]
    return "\n\n".join(f"{m['role']}: {m['content']}" for m in messages)


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__
