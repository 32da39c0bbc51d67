"""JailbreakBench attack artifacts and ``jbb.evaluate_prompts`` output.

Two shapes are read:

* an **artifact** (``<METHOD>/<attack_type>/<model>.json``): ``{"parameters": {...},
  "jailbreaks": [{index, goal, behavior, category, prompt, response, jailbroken, ...}]}``;
* an **evaluation** (``evaluation.json``): ``{model: {behavior: {prompt, response,
  jailbroken}}, "details": {llm_provider, evaluation_date, defense}}``.

``attack-info.json`` (``{"models": {model: [attack types]}}``) is an index, not results: the
sniffer rejects it and ``read`` yields one Problem for it.

Choices:

* model: ``parameters.model`` (artifact) or the top-level key (evaluation); ``--model``
  overrides. benchmark ``jailbreakbench/<METHOD>`` (``parameters.method``, or for an
  ``evaluation.json`` the name of its folder, as in JailbreakBench's artifact layout); two
  attacks write different prompts for the same behaviour, so they must not share a key.
* judge: ``--judge``, else ``parameters.evaluation_llm_provider`` (artifact) or
  ``details.llm_provider`` (evaluation), else ``jailbreakbench``. The provider is the service
  that ran JailbreakBench's judge ("litellm", "vllm"); JBB records no other judge name.
* prompt_id = behavior, epoch 0, category from the item (evaluations have none).
* verdict ``"true"`` / ``"false"`` from ``jailbroken``; ``null`` gives verdict None.
* Extra judge columns (``jailbroken_<judge>``, e.g. ``jailbroken_llama_guard1``) go into
  meta as second opinions, with ``goal``, ``index`` and the run's method / attack type /
  defense.
* An item whose prompt or response is null (the attack found no jailbreak prompt) is a
  SetAside, not an error.
* ``parameters.attack_success_rate`` and ``total_number_of_jailbreaks`` are ignored: they can
  disagree with the items (the PAIR llama-2 artifact says 0.0 with 4 jailbreaks).
* line = the 1-based item number (over all models of an evaluation file, in file order).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotate.ingest.records import Item, Problem, ReadContext, Record, SetAside, load_json_object, object_field

NAME = "jailbreakbench"
DESCRIPTION = "JailbreakBench artifact JSON (parameters + jailbreaks[]) or evaluate_prompts evaluation.json"

DEFAULT_RUBRIC: dict[str, Any] = {
    "verdicts": {"true": "harmful", "false": "safe"},
    "unknown": "error",
}

NO_PROMPT_REASON = "no prompt/response (attack produced none)"
_DEFAULT_JUDGE = "jailbreakbench"
# evaluation.json opens {"<model>": {"<behavior>": {
_EVAL_HEAD_RE = re.compile(rb'^\s*\{\s*"(?:[^"\\]|\\.)*"\s*:\s*\{\s*"(?:[^"\\]|\\.)*"\s*:\s*\{')


def sniff(path: Path, head: bytes) -> bool:
    """An artifact (``"parameters"`` + ``"jailbreaks"``) or an evaluation file (nested objects
    with ``"jailbroken"``). ``attack-info.json`` has neither."""
    if path.suffix.lower() != ".json":
        return False
    head = head.removeprefix(b"\xef\xbb\xbf")
    if not head.lstrip().startswith(b"{"):
        return False
    if b'"parameters"' in head and b'"jailbreaks"' in head:
        return True
    return bool(_EVAL_HEAD_RE.match(head)) and b'"jailbroken"' in head and b'"response"' in head


def read(path: Path, ctx: ReadContext) -> Iterator[Item]:
    """Yield one Record per jailbreak item, SetAside for items without prompt/response."""
    data = load_json_object(path, ctx, "a JSON object")
    if isinstance(data, Problem):
        yield data
        return
    if "jailbreaks" in data or "parameters" in data:
        yield from _read_artifact(data, ctx)
    elif set(data) == {"models"}:
        yield Problem(
            1,
            "this is a JailbreakBench attack-info.json (an index of models), not results; "
            "ingest the artifact files under <attack_type>/ instead",
            fatal=True,
        )
    else:
        yield from _read_evaluation(data, ctx, path)


def _read_artifact(data: dict[str, Any], ctx: ReadContext) -> Iterator[Item]:
    params = data.get("parameters")
    if not isinstance(params, dict):
        yield Problem(
            1,
            (
                "missing field 'parameters'"
                if params is None
                else f"field 'parameters' must be an object, got {_type(params)}"
            ),
            fatal=True,
        )
        return
    jailbreaks = data.get("jailbreaks")
    if not isinstance(jailbreaks, list):
        yield Problem(
            1,
            (
                "missing field 'jailbreaks'"
                if jailbreaks is None
                else f"field 'jailbreaks' must be a list, got {_type(jailbreaks)}"
            ),
            fatal=True,
        )
        return
    model = ctx.model or params.get("model")
    if not isinstance(model, str) or not model:
        yield Problem(1, "missing field 'parameters.model'; pass --model", fatal=True)
        return
    judge = ctx.judge or _nonempty(params.get("evaluation_llm_provider")) or _DEFAULT_JUDGE
    run_meta = {k: params.get(k) for k in ("method", "attack_type", "defense") if params.get(k) is not None}
    for number, item in enumerate(jailbreaks, start=1):
        yield _item(item, number, f"jailbreaks[{number - 1}]", None, model, judge, ctx, run_meta)


def _read_evaluation(data: dict[str, Any], ctx: ReadContext, path: Path) -> Iterator[Item]:
    details = object_field(data, "details")
    judge = ctx.judge or _nonempty(details.get("llm_provider")) or _DEFAULT_JUDGE
    run_meta = {"defense": details["defense"]} if details.get("defense") is not None else {}
    # evaluation.json does not name the attack; JailbreakBench's artifact layout keeps it in the
    # folder name (<METHOD>/evaluation.json).
    if path.parent.name:
        run_meta["method"] = path.parent.name
    number = 0
    models = [k for k in data if k != "details"]
    if not models:
        yield Problem(1, "no results: expected {model: {behavior: {prompt, response, jailbroken}}}", fatal=True)
        return
    for file_model in models:
        behaviors = data[file_model]
        if not isinstance(behaviors, dict):
            number += 1
            yield Problem(
                number,
                f"model {file_model!r}: expected an object {{behavior: result}}, got {_type(behaviors)}",
            )
            continue
        model = ctx.model or file_model
        for behavior, item in behaviors.items():
            number += 1
            yield _item(item, number, f"{file_model!r} / {behavior!r}", behavior, model, judge, ctx, run_meta)


def _item(
    item: Any,
    line: int,
    where: str,
    behavior: str | None,
    model: str,
    judge: str,
    ctx: ReadContext,
    run_meta: dict[str, Any],
) -> Item:
    if not isinstance(item, dict):
        return Problem(line, f"{where}: expected an object, got {_type(item)}")
    if behavior is None:  # artifact: the behaviour is a field
        if "behavior" not in item:
            return Problem(line, f"{where}: missing field 'behavior'")
        behavior = item["behavior"]
        if not isinstance(behavior, str) or not behavior:
            return Problem(line, f"{where}: field 'behavior' must be a non-empty string, got {_type(behavior)}")
    for key in ("prompt", "response", "jailbroken"):
        if key not in item:
            return Problem(line, f"{where}: missing field {key!r}")
    prompt, response, jailbroken = item["prompt"], item["response"], item["jailbroken"]
    if prompt is None or response is None:
        data = {"model": model, "behavior": behavior}
        if "index" in item:
            data["index"] = item["index"]
        return SetAside(line, NO_PROMPT_REASON, data)
    for key, value in (("prompt", prompt), ("response", response)):
        if not isinstance(value, str):
            return Problem(line, f"{where}: field {key!r} must be a string, got {_type(value)}")
    if jailbroken is not None and not isinstance(jailbroken, bool):
        return Problem(line, f"{where}: field 'jailbroken' must be true or false, got {_type(jailbroken)}")
    category = item.get("category")
    meta: dict[str, Any] = dict(run_meta)
    for key in ("index", "goal"):
        if key in item:
            meta[key] = item[key]
    for key, value in item.items():
        if key.startswith("jailbroken_"):  # a second judge, e.g. jailbroken_llama_guard1
            meta[key] = value
    return Record(
        line=line,
        model=model,
        benchmark=ctx.benchmark or _benchmark(run_meta),
        prompt_id=behavior,
        prompt=prompt,
        response=response,
        judge=judge,
        verdict=None if jailbroken is None else ("true" if jailbroken else "false"),
        category=category if isinstance(category, str) and category else None,
        meta=meta or None,
    )


def _benchmark(run_meta: dict[str, Any]) -> str:
    """``jailbreakbench/<METHOD>``: each attack method writes its own prompts for the same
    behaviours, so responses of two methods must not share a key."""
    method = run_meta.get("method")
    return f"jailbreakbench/{method}" if isinstance(method, str) and method else "jailbreakbench"


def _nonempty(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__
