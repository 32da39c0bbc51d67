"""promptfoo ``promptfoo eval -o out.json`` exports.

Shape: ``{evalId, results: {version, timestamp, prompts, results: [EvaluateResult], stats},
config, shareableUrl, metadata}``. One EvaluateResult per (test case, prompt, provider).

Choices:

* model = ``provider.id`` per result (``--model`` overrides); benchmark = ``--benchmark``, else
  ``config.description``, else ``promptfoo``.
* prompt_id = ``str(testIdx)``, so the same test is comparable across providers. When the
  export holds several prompt templates (several distinct ``promptId``), the template is part
  of the id: ``"<testIdx>:<first 8 hex digits of promptId>"``. epoch is always 0:
  ``promptIdx`` numbers the (prompt x provider) columns, it is not a repetition.
* prompt = ``prompt.raw``; response = ``response.output`` (non-strings written as JSON).
* The judge is each model-graded component of ``gradingResult.componentResults`` (searched
  recursively): ``assertion.type`` ``llm-rubric`` (also ``model-graded-closedqa``, ``g-eval``,
  ``factuality``) or a red-team grader ``promptfoo:redteam:<plugin>``. judge = the assertion
  type (``#2``, ``#3``... appended when a type repeats in one result), verdict ``"pass"`` /
  ``"fail"``, score = the component's score, meta = the rubric text and the grader's reason.
  ``--judge`` renames the judge when a result has one such component, and otherwise keeps
  only the component of that name.
* With no model-graded component, the verdict is ``gradingResult.pass`` under judge
  ``promptfoo-assertions``, with a note in meta: it is the conjunction of all assertions.
* meta also keeps a red-team run's ``pluginId`` and ``strategyId`` (from the grading result's
  metadata, else the test's, else the result's).
* The row-level ``success`` / ``score`` are never used: they mix judge verdicts with
  operational checks (in the example every row fails on latency).
* transcript: multi-turn red-team strategies (``crescendo``, ``goat``, ``custom``,
  ``mischievous-user``, ...) return the whole conversation with the target in the response's
  metadata: ``messages`` (``[{role, content}]``, a list or its JSON text), else ``redteamHistory``
  (``[{prompt, output}]``, one user turn and one answer per round) for a strategy in
  ``MULTI_TURN_STRATEGIES``. The metadata is looked up on ``response.metadata``, then on the
  result's ``metadata``. None for a single-turn result. Iterative strategies (``jailbreak``,
  ``jailbreak:tree``) also keep a ``redteamHistory``, but of independent attempts, not a
  conversation: it is not a transcript.
* A result with an error and no output, or any result of a failed provider call
  (``failureReason`` 2, promptfoo's ERROR: its ``output`` is then a placeholder or an error
  text), is a SetAside. An export without any result is refused.
* A test that declares a model-graded assertion whose grader returned no component for it (an
  API error, a timeout) gets that judge's verdict ``grader-error`` (unparsed: ambiguous, sent to
  review), never the row's overall pass/fail.
* line = the 1-based result number.

Judge kinds (``annotate.columns.JUDGE_KINDS``; a rubric's ``kind`` overrides them, see
``annotate.ingest.rubric``), by assertion type with any ``not-`` prefix stripped:

* safety: the red-team graders (``promptfoo:redteam:*``), ``moderation``, ``guardrails``, and an
  ``llm-rubric`` of a red-team test (``metadata.pluginId``) or whose rubric text (with its
  ``metric``) names harm (``HARM_WORDS``: harm, unsafe, jailbreak, refuse, illegal, weapon, ...);
* refusal: ``is-refusal``;
* quality: every other model-graded type (``factuality``, ``answer-relevance``, ``context-*``,
  ``model-graded-closedqa``, ``g-eval``, ``pi``, ...) and an ``llm-rubric`` whose text names no
  harm ("Is a limerick about a cat", "lists every laureate"): its failures are not harm.
* ``promptfoo-assertions`` (no model-graded assertion) takes the most serious kind of the
  assertions it joins (safety over refusal over quality; deterministic checks are quality).

A judge name whose rubrics are about harm in some tests of a benchmark and not in others would
have two kinds; its quality rows are then named ``<judge>:quality`` (said in a note), so a failed
completeness rubric is never read as harm and a failed harm rubric is never hidden.

Rubric: pass -> safe, fail -> harmful (a promptfoo assertion states the wanted behaviour; a
red-team grader passes when the model resisted), grader-error -> unparsed. Other verdicts are
errors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotate.ingest.records import (
    MAX_DOCUMENT_BYTES,
    Item,
    Problem,
    ReadContext,
    Record,
    SetAside,
    load_json_object,
    object_field,
    transcript_or_none,
)
from annotate.json_bound import MAX_SAMPLE_VALUES, json_values_over, too_many_values

NAME = "promptfoo"
DESCRIPTION = "promptfoo eval -o json export (results.results[] with gradingResult)"

#: promptfoo's ResultFailureReason.ERROR (NONE 0, ASSERT 1, ERROR 2): the provider call failed.
ERROR_FAILURE = 2
#: The verdict of a declared model-graded assertion whose grader returned nothing (an API error):
#: the default rubric reads it as unparsed, ambiguous, and goes to human review.
GRADER_ERROR = "grader-error"

DEFAULT_RUBRIC: dict[str, Any] = {
    "verdicts": {"pass": "safe", "fail": "harmful", GRADER_ERROR: "unparsed"},
    "unknown": "error",
}

#: promptfoo's model-graded assertion types (MODEL_GRADED_ASSERTION_TYPES in its assertions, plus
#: g-eval and pi); a ``not-`` prefix (the negated assertion) is graded by the same model.
MODEL_GRADED = frozenset(
    {
        "agent-rubric",
        "answer-relevance",
        "context-faithfulness",
        "context-recall",
        "context-relevance",
        "factuality",
        "g-eval",
        "llm-rubric",
        "model-graded-closedqa",
        "model-graded-factuality",
        "pi",
        "search-rubric",
        "trajectory:goal-success",
    }
)
#: Red-team strategies that hold a conversation with the target (src/redteam/providers/).
MULTI_TURN_STRATEGIES = frozenset(
    {"crescendo", "goat", "custom", "mischievous-user", "hydra", "simba", "voice-crescendo"}
)
_ROLES = ("system", "user", "assistant", "tool")
REDTEAM_PREFIX = "promptfoo:redteam:"
#: Assertion types whose failures are harm (besides the red-team graders), and the refusal one.
SAFETY_TYPES = frozenset({"moderation", "guardrails"})
REFUSAL_TYPES = frozenset({"is-refusal"})
#: Words that make an llm-rubric a harm rubric (matched whole, case-insensitively, with a metric's name).
HARM_WORDS = re.compile(
    r"\b(harm\w*|unsafe|safety|danger\w*|toxic\w*|jailbr\w*|refus\w*|illegal|illicit|violen\w*|weapons?|hate|hateful|"
    r"suicid\w*|self-harm|abus\w*|malicious|malware|exploit\w*|attack\w*|offensive|sexual\w*|extremis\w*|terror\w*|"
    r"crimes?|criminal|pii|privacy|discriminat\w*|misinformation|disinformation|deceptive|manipulat\w*|"
    r"inappropriate|unethical|drugs?|bomb\w*|hack\w*|cyber\w*|red[- ]team\w*)\b",
    re.IGNORECASE,
)
QUALITY_SUFFIX = ":quality"
FALLBACK_JUDGE = "promptfoo-assertions"
FALLBACK_NOTE = (
    "no model-graded assertion: the verdict is promptfoo's overall assertion result "
    "(gradingResult.pass), which may include non-judge checks such as latency or cost"
)


def sniff(path: Path, head: bytes) -> bool:
    """A ``.json`` file with ``"evalId"`` (an export) or ``"promptIdx"`` + ``"testIdx"``."""
    if path.suffix.lower() != ".json":
        return False
    head = head.removeprefix(b"\xef\xbb\xbf")
    if not head.lstrip().startswith(b"{"):
        return False
    return b'"evalId"' in head or (b'"promptIdx"' in head and b'"testIdx"' in head)


def is_judge(assertion_type: Any) -> bool:
    """True for the LLM-graded assertion types whose verdict is routed to humans."""
    return isinstance(assertion_type, str) and (
        assertion_type.removeprefix("not-") in MODEL_GRADED or assertion_type.startswith(REDTEAM_PREFIX)
    )


def read(path: Path, ctx: ReadContext) -> Iterator[Item]:
    """Yield one Record per (result, model-graded component)."""
    data = load_json_object(path, ctx, "a JSON object", max_bytes=MAX_DOCUMENT_BYTES)
    if isinstance(data, Problem):
        yield data
        return
    summary = data.get("results")
    results = summary.get("results") if isinstance(summary, dict) else summary
    if not isinstance(results, list):
        yield Problem(1, "missing field 'results.results' (expected a promptfoo eval -o json export)", fatal=True)
        return
    if not results:
        # An export always holds its results; an empty list is another file (e.g. a Node
        # evaluate() summary) or an eval that ran nothing.
        yield Problem(1, "no results: 'results' is empty (expected a promptfoo eval -o json export of a run)")
        return
    config = object_field(data, "config")
    description = config.get("description")
    benchmark = ctx.benchmark or (description if isinstance(description, str) and description else "promptfoo")
    prompt_ids = {r.get("promptId") for r in results if isinstance(r, dict)}
    several_prompts = len(prompt_ids) > 1
    # The whole export is in memory already: its records are gathered, so that one judge name
    # gets one kind (kinds_apart) before any is yielded.
    items = [
        item
        for number, result in enumerate(results, start=1)
        for item in _result(result, number, benchmark, several_prompts, ctx)
    ]
    yield from kinds_apart(items, ctx)


def judge_kind(assertion_type: str, rubric: Any = None, *, redteam: bool = False, metric: Any = None) -> str:
    """The kind of one assertion (the module doc): safety, refusal or quality.

    >>> judge_kind("promptfoo:redteam:harmful:hate"), judge_kind("factuality"), judge_kind("not-is-refusal")
    ('safety', 'quality', 'refusal')
    >>> judge_kind("llm-rubric", "Is a limerick about a cat"), judge_kind("llm-rubric", "Does not help build a weapon")
    ('quality', 'safety')
    """
    kind = assertion_type.removeprefix("not-")
    if kind.startswith(REDTEAM_PREFIX) or kind in SAFETY_TYPES:
        return "safety"
    if kind in REFUSAL_TYPES:
        return "refusal"
    if kind == "llm-rubric":
        text = " ".join(t if isinstance(t, str) else json.dumps(t) for t in (rubric, metric) if t is not None)
        if redteam or HARM_WORDS.search(text):
            return "safety"
    return "quality"


def _strongest(kinds: list[str]) -> str:
    """The most serious of several kinds: safety over refusal over quality (quality when none)."""
    return next((k for k in ("safety", "refusal") if k in kinds), "quality")


def kinds_apart(items: list[Item], ctx: ReadContext) -> Iterator[Item]:
    """The items, with a judge name that has two kinds in one benchmark split: its quality rows are
    named ``<judge>:quality`` (with a note), so each judge keeps one kind."""
    seen: dict[tuple[str, str], set[str]] = {}
    for item in items:
        if isinstance(item, Record) and item.kind is not None:
            seen.setdefault((item.benchmark, item.judge), set()).add(item.kind)
    mixed = {pair for pair, kinds in seen.items() if "quality" in kinds and len(kinds) > 1}
    for benchmark, judge in sorted(mixed):
        ctx.notes.append(
            f"judge {judge} ({benchmark}): its rubrics are about harm in some tests and not in others; those that "
            f"name no harm are the judge {judge}{QUALITY_SUFFIX} (quality: its failures are not harm)"
        )
    for item in items:
        if isinstance(item, Record) and item.kind == "quality" and (item.benchmark, item.judge) in mixed:
            item.judge += QUALITY_SUFFIX
        yield item


def _result(result: Any, line: int, benchmark: str, several_prompts: bool, ctx: ReadContext) -> Iterator[Item]:
    """One result of the export: its Records (one per judge), or what stops or sets it aside.

    In steps: its key (:func:`_result_key`: test, model, prompt, prompt id), its response (a
    failed provider call is set aside), its grading and metadata (:func:`_base_meta`), its
    transcript, then its verdicts: a grader that gave none (:func:`_grader_error_records`), the
    row's own pass/fail when no model-graded assertion was asked (:func:`_fallback_record`), or
    one per model-graded assertion (:func:`_component_records`).
    """
    where = f"results[{line - 1}]"
    if not isinstance(result, dict):
        yield Problem(line, f"{where}: expected an object, got {_type(result)}")
        return
    key = _result_key(result, several_prompts, ctx)
    if isinstance(key, str):
        yield Problem(line, f"{where}: {key}")
        return
    test_idx, model, prompt_text, prompt_id = key

    response = result.get("response")
    output = response.get("output") if isinstance(response, dict) else None
    # failureReason 2 is promptfoo's ResultFailureReason.ERROR: the provider call failed, and
    # whatever stands in `output` (a placeholder, an error text) is not the model's answer.
    if output is None or result.get("failureReason") == ERROR_FAILURE:
        error = result.get("error") or (response.get("error") if isinstance(response, dict) else None)
        reason = f"provider error: {error}" if error else "no response output"
        yield SetAside(line, reason, {"model": model, "testIdx": test_idx, "promptIdx": result.get("promptIdx")})
        return
    response_text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)

    grading = result.get("gradingResult")
    if not isinstance(grading, dict):
        yield Problem(line, f"{where}: missing field 'gradingResult'")
        return
    grading_meta = object_field(grading, "metadata")
    base_meta = _base_meta(result, grading_meta, test_idx)
    transcript = _transcript(result, grading_meta, ctx.value_limit(MAX_SAMPLE_VALUES))
    if isinstance(transcript, str):
        yield Problem(line, f"{where}: {transcript}")
        return
    judged = [c for c in _components(grading) if is_judge(_assertion_type(c))]
    declared = _declared_judges(result)
    record: dict[str, Any] = dict(
        line=line,
        model=model,
        benchmark=benchmark,
        prompt_id=prompt_id,
        prompt=prompt_text,
        response=response_text,
        transcript=transcript,
    )
    if not judged and declared:
        yield from _grader_error_records(record, base_meta, grading, result, declared, ctx)
    elif not judged:
        yield from _fallback_record(record, base_meta, grading, where, ctx)
    else:
        yield from _component_records(record, base_meta, judged, where, ctx)


def _result_key(result: dict[str, Any], several_prompts: bool, ctx: ReadContext) -> tuple[int, str, str, str] | str:
    """(testIdx, model, prompt text, prompt id) of a result, or what is missing or mistyped.

    The prompt id is the test's index, with the prompt's (its id's first 8 characters, or its
    index) when the export ran several prompts.
    """
    for key in ("testIdx", "provider", "prompt"):
        if key not in result:
            return f"missing field {key!r}"
    test_idx = result["testIdx"]
    if not isinstance(test_idx, int) or isinstance(test_idx, bool):
        return f"field 'testIdx' must be an integer, got {_type(test_idx)}"
    provider = result["provider"]
    provider_id = provider.get("id") if isinstance(provider, dict) else provider
    model = ctx.model or provider_id
    if not isinstance(model, str) or not model:
        return "missing field 'provider.id'"
    prompt = result["prompt"]
    prompt_text = prompt.get("raw") if isinstance(prompt, dict) else prompt
    if not isinstance(prompt_text, str):
        return "missing field 'prompt.raw'"
    prompt_id = str(test_idx)
    if several_prompts:
        prompt_key = result.get("promptId")
        prompt_id += (
            f":{prompt_key[:8]}" if isinstance(prompt_key, str) and prompt_key else f":p{result.get('promptIdx')}"
        )
    return test_idx, model, prompt_text, prompt_id


def _base_meta(result: dict[str, Any], grading_meta: dict[str, Any], test_idx: int) -> dict[str, Any]:
    """The metadata every record of a result keeps: its test and prompt index, and (red-team
    runs) the plugin and strategy, from the grading's, the test's or the result's metadata."""
    base_meta: dict[str, Any] = {"testIdx": test_idx, "promptIdx": result.get("promptIdx")}
    test_meta = object_field(object_field(result, "testCase"), "metadata")
    for key in ("pluginId", "strategyId"):  # red-team runs: e.g. harmful:hate / jailbreak
        for source in (grading_meta, test_meta, object_field(result, "metadata")):
            if source.get(key) is not None:
                base_meta[key] = source[key]
                break
    return base_meta


def _grader_error_records(
    record: dict[str, Any],
    base_meta: dict[str, Any],
    grading: dict[str, Any],
    result: dict[str, Any],
    declared: list[str],
    ctx: ReadContext,
) -> Iterator[Item]:
    """The test asks a model-graded assertion, but its grader returned no component with the
    assertion (an API error, a timeout): that judge gave no verdict. Never the row's overall
    pass/fail, which is then only the other checks'."""
    error = _grader_error(grading, result)
    names = _numbered(declared)
    if ctx.judge is not None and len(names) == 1:
        names = [ctx.judge]
    for judge in names if ctx.judge is None or len(names) == 1 else [n for n in names if n == ctx.judge]:
        yield Record(
            **record,
            judge=judge,
            verdict=GRADER_ERROR,
            meta={**base_meta, "reason": error},
            kind=_declared_kind(result, judge, "pluginId" in base_meta),
        )


def _fallback_record(
    record: dict[str, Any], base_meta: dict[str, Any], grading: dict[str, Any], where: str, ctx: ReadContext
) -> Iterator[Item]:
    """No model-graded assertion: the row's own pass/fail as the verdict of ``FALLBACK_JUDGE``."""
    verdict = _pass_verdict(grading.get("pass"))
    if verdict is None:
        yield Problem(record["line"], f"{where}: field 'gradingResult.pass' must be true or false")
        return
    meta = {**base_meta, "note": FALLBACK_NOTE}
    if isinstance(grading.get("reason"), str):
        meta["reason"] = grading["reason"]
    types = [t for t in map(_assertion_type, _components(grading)) if isinstance(t, str)]
    yield Record(
        **record,
        judge=ctx.judge or FALLBACK_JUDGE,
        verdict=verdict,
        score=_number(grading.get("score")),
        meta=meta,
        kind=_strongest([judge_kind(t, redteam="pluginId" in base_meta) for t in types]),
    )


def _component_records(
    record: dict[str, Any], base_meta: dict[str, Any], judged: list[dict[str, Any]], where: str, ctx: ReadContext
) -> Iterator[Item]:
    """A Record per model-graded assertion (named by its type, numbered when repeated); with
    ``--judge``, the one assertion renamed, or the one of that name (else a Problem)."""
    line = record["line"]
    named = list(zip(_numbered([_assertion_type(c) for c in judged]), judged, strict=True))
    if ctx.judge is not None:
        if len(named) == 1:
            named = [(ctx.judge, named[0][1])]
        else:
            available = [name for name, _ in named]
            named = [(name, c) for name, c in named if name == ctx.judge]
            if not named:
                yield Problem(
                    line,
                    f"{where}: no model-graded assertion named {ctx.judge!r} (found: {', '.join(available)})",
                )
                return
    for judge, component in named:
        verdict = _pass_verdict(component.get("pass"))
        if verdict is None:
            yield Problem(line, f"{where}: the {judge} component's 'pass' must be true or false")
            continue
        meta = dict(base_meta)
        if component["assertion"].get("value") is not None:
            meta["rubric"] = component["assertion"]["value"]
        if isinstance(component.get("reason"), str):
            meta["reason"] = component["reason"]
        assertion = component["assertion"]
        kind = judge_kind(
            assertion["type"], assertion.get("value"), redteam="pluginId" in base_meta, metric=assertion.get("metric")
        )
        yield Record(
            **record, judge=judge, verdict=verdict, score=_number(component.get("score")), meta=meta, kind=kind
        )


def _numbered(kinds: list[str]) -> list[str]:
    """Judge names of assertion types in order: the type, then ``<type>#2``, ... when repeated."""
    seen: dict[str, int] = {}
    names = []
    for kind in kinds:
        seen[kind] = seen.get(kind, 0) + 1
        names.append(kind if seen[kind] == 1 else f"{kind}#{seen[kind]}")
    return names


def _declared_judges(result: dict[str, Any]) -> list[str]:
    """The model-graded assertion types the result's test case declares, in order."""
    declared = object_field(result, "testCase").get("assert")
    if not isinstance(declared, list):
        return []
    kinds = [a.get("type") for a in declared if isinstance(a, dict)]
    return [str(k) for k in kinds if is_judge(k)]


def _declared_kind(result: dict[str, Any], judge: str, redteam: bool) -> str:
    """The kind of the declared assertion behind a grader-error judge name (``<type>`` or ``<type>#n``)."""
    declared = object_field(result, "testCase").get("assert")
    entries = (
        [a for a in declared if isinstance(a, dict) and is_judge(a.get("type"))] if isinstance(declared, list) else []
    )
    for name, entry in zip(_numbered([str(a["type"]) for a in entries]), entries, strict=True):
        if name == judge:
            return judge_kind(str(entry["type"]), entry.get("value"), redteam=redteam, metric=entry.get("metric"))
    return _strongest([judge_kind(str(a["type"]), a.get("value"), redteam=redteam) for a in entries])


def _grader_error(grading: dict[str, Any], result: dict[str, Any]) -> str:
    """Why a declared model-graded assertion has no verdict: its component's reason, else the result's error."""
    for component in _components(grading):
        if _assertion_type(component) is None and isinstance(component.get("reason"), str):
            if component.get("pass") is False:
                return f"grader error: {component['reason']}"
    error = result.get("error")
    return f"grader error: {error}" if isinstance(error, str) and error else "the model-graded assertion gave no result"


def _strategy(result: dict[str, Any], grading_meta: dict[str, Any]) -> str | None:
    """The red-team strategy of a result: ``strategyId`` in its metadata, else the test's provider
    ``promptfoo:redteam:<strategy>``."""
    test = object_field(result, "testCase")
    for meta in (grading_meta, object_field(test, "metadata"), object_field(result, "metadata")):
        if isinstance(meta.get("strategyId"), str) and meta["strategyId"]:
            return str(meta["strategyId"])
    provider = test.get("provider")
    provider_id = provider.get("id") if isinstance(provider, dict) else provider
    if isinstance(provider_id, str) and provider_id.startswith(REDTEAM_PREFIX):
        return provider_id[len(REDTEAM_PREFIX) :]
    return None


def _transcript(
    result: dict[str, Any], grading_meta: dict[str, Any], max_values: int
) -> list[dict[str, Any]] | None | str:
    """The conversation behind a multi-turn result (see the module doc), None, or why it cannot be read
    (among them messages written as JSON text that may hold more than ``max_values`` values)."""
    response = result.get("response")
    for meta in (
        object_field(response, "metadata") if isinstance(response, dict) else {},
        object_field(result, "metadata"),
    ):
        messages = meta.get("messages")
        if isinstance(messages, str):
            if (count := json_values_over(messages, max_values)) is not None:
                return too_many_values(count, max_values, "the response metadata's 'messages'")
            try:
                messages = json.loads(messages)
            except ValueError:
                return "the response metadata's 'messages' is text that is not a JSON list of messages"
        if isinstance(messages, list) and messages:
            return _messages(messages)
    if _strategy(result, grading_meta) not in MULTI_TURN_STRATEGIES:
        return None
    for meta in (
        object_field(response, "metadata") if isinstance(response, dict) else {},
        object_field(result, "metadata"),
    ):
        history = meta.get("redteamHistory")
        if isinstance(history, list) and history:
            turns: list[dict[str, Any]] = []
            for number, entry in enumerate(history, start=1):
                if not isinstance(entry, dict):
                    return f"redteamHistory[{number - 1}] must be an object, got {_type(entry)}"
                turns.append({"role": "user", "content": _text(entry.get("prompt"))})
                turns.append({"role": "assistant", "content": _text(entry.get("output"))})
            return transcript_or_none(turns)
    return None


def _messages(messages: list[Any]) -> list[dict[str, Any]] | None | str:
    turns: list[dict[str, Any]] = []
    for number, message in enumerate(messages, start=1):
        if not isinstance(message, dict):
            return f"messages[{number - 1}] must be an object, got {_type(message)}"
        role = message.get("role")
        if role not in _ROLES:
            return f"messages[{number - 1}] has role {role!r}; expected one of {', '.join(_ROLES)}"
        turn: dict[str, Any] = {"role": role, "content": _text(message.get("content"))}
        if role == "tool":
            turn["tool_call_id"] = message.get("tool_call_id") if isinstance(message.get("tool_call_id"), str) else None
            turn["name"] = message.get("name") if isinstance(message.get("name"), str) else None
        turns.append(turn)
    return transcript_or_none(turns)


def _text(value: Any) -> str:
    """Message content as text (non-text content as its JSON, as promptfoo itself stringifies outputs)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _assertion_type(component: dict[str, Any]) -> Any:
    assertion = component.get("assertion")
    return assertion.get("type") if isinstance(assertion, dict) else None


def _components(grading: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """All component results, depth first (assert-sets nest their own componentResults)."""
    for component in grading.get("componentResults") or []:
        if isinstance(component, dict):
            yield component
            yield from _components(component)


def _pass_verdict(value: Any) -> str | None:
    return ("pass" if value else "fail") if isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__
