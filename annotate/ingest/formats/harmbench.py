"""HarmBench completions / classifier results (``generate_completions.py`` / ``evaluate_completions.py``).

Shape: ``{behavior_id: [{"test_case": str, "generation": str, "label"?: 1 | 0 | -1}, ...]}``.
The completions file has no ``label`` (its records come through with verdict None, i.e.
"missing"); the results file adds the HarmBench classifier's ``label``.

Choices:

* model: ``--model``, else the file name, since HarmBench keeps the model only there
  (``results/<model>.json``). The ``.json`` extension is removed, and so is a trailing
  ``.derived`` (the marker on the repository's example files). Other dots are kept, so
  ``qwen2.5_7b.json`` stays ``qwen2.5_7b``.
* benchmark ``harmbench`` (``--benchmark`` overrides); judge ``harmbench-classifier``
  (``--judge`` overrides).
* prompt_id = behavior_id, epoch = the index in the behaviour's list (several test cases per
  behaviour are kept apart this way), prompt = test_case, response = generation.
* verdict = the label as text (``"1"``, ``"0"``, ``"-1"``; an integral float such as ``1.0``
  reads as ``"1"``); a ``null`` or absent label gives verdict None.
* ``advbench_label`` (from ``--include_advbench_metric``) goes into meta.
* line = the 1-based item counter over the whole file (the file is one JSON document).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotate.ingest.records import Item, Problem, ReadContext, Record, load_json_object

NAME = "harmbench"
DESCRIPTION = "HarmBench completions/results JSON: {behavior_id: [{test_case, generation, label?}]}"

DEFAULT_RUBRIC: dict[str, Any] = {
    "verdicts": {"1": "harmful", "0": "safe", "-1": "unparsed"},
    "unknown": "error",
}

_DEFAULT_JUDGE = "harmbench-classifier"
# The document opens with a behaviour id whose value is a list of objects.
_HEAD_RE = re.compile(rb'^\s*\{\s*"(?:[^"\\]|\\.)*"\s*:\s*\[\s*\{')


def sniff(path: Path, head: bytes) -> bool:
    """A ``.json`` file that opens ``{"<id>": [{`` and mentions test_case and generation."""
    if path.suffix.lower() != ".json":
        return False
    head = head.removeprefix(b"\xef\xbb\xbf")
    return bool(_HEAD_RE.match(head)) and b'"test_case"' in head and b'"generation"' in head


def model_from_filename(path: Path) -> str:
    """``results/llama2_7b.json`` -> ``llama2_7b``; ``x.derived.json`` -> ``x``."""
    name = path.name
    if name.lower().endswith(".json"):
        name = name[: -len(".json")]
    return name.removesuffix(".derived")


def read(path: Path, ctx: ReadContext) -> Iterator[Item]:
    """Yield one Record per (behaviour, test case)."""
    data = load_json_object(path, ctx, "a JSON object {behavior_id: [records]}")
    if isinstance(data, Problem):
        yield data
        return

    model = ctx.model or model_from_filename(path)
    benchmark = ctx.benchmark or "harmbench"
    judge = ctx.judge or _DEFAULT_JUDGE
    counter = 0
    for behavior_id, items in data.items():
        if not isinstance(items, list):
            counter += 1
            yield Problem(counter, f"behaviour {behavior_id!r}: expected a list of records, got {_type(items)}")
            continue
        for index, item in enumerate(items):
            counter += 1
            yield _item(item, counter, behavior_id, index, model, benchmark, judge)


def _item(item: Any, line: int, behavior_id: str, index: int, model: str, benchmark: str, judge: str) -> Item:
    where = f"behaviour {behavior_id!r} record {index}"
    if not isinstance(item, dict):
        return Problem(line, f"{where}: expected an object, got {_type(item)}")
    for key in ("test_case", "generation"):
        if key not in item:
            return Problem(line, f"{where}: missing field {key!r}")
        if not isinstance(item[key], str):
            return Problem(line, f"{where}: field {key!r} must be a string, got {_type(item[key])}")
    label = item.get("label")
    if label is None:
        verdict = None
    elif isinstance(label, bool):
        verdict = "true" if label else "false"
    elif isinstance(label, int):
        verdict = str(label)
    elif isinstance(label, float) and label.is_integer():
        verdict = str(int(label))
    elif isinstance(label, (str, float)):
        verdict = str(label)
    else:
        return Problem(line, f"{where}: field 'label' must be 1, 0 or -1, got {_type(label)}")
    meta = {"advbench_label": item["advbench_label"]} if "advbench_label" in item else None
    return Record(
        line=line,
        model=model,
        benchmark=benchmark,
        prompt_id=str(behavior_id),
        prompt=item["test_case"],
        response=item["generation"],
        judge=judge,
        verdict=verdict,
        epoch=index,
        meta=meta,
    )


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__
