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
  overrides.
* benchmark ``jailbreakbench/<METHOD>``: two attacks write different prompts for the same
  behaviour, so they must not share a key. An artifact names its method
  (``parameters.method``: ``PAIR``, ``GCG``, ``JailbreakChat``, ``adaptive_random_search``, ...).
  An evaluation takes ``details.method`` when it has one; else its documented place in
  JailbreakBench's artifacts repository, ``attack-artifacts/<METHOD>/evaluation.json``
  (beside ``attack-info.json``, or in a folder ``attack-artifacts``), names the method: the one
  the artifacts beside it name (``<METHOD>/<attack_type>/*.json``), else the folder's name.
  Anywhere else the method is unknown and the file is refused with a message asking for
  ``--benchmark jailbreakbench/<METHOD>``. ``--benchmark`` overrides all of this.
* judge: ``--judge``, else the classifier that wrote ``jailbroken``, named as JailbreakBench's
  code names it (``jailbreakbench.classifier``): ``Llama3JailbreakJudge`` (Llama-3-70B, the
  judge since June 2024), or ``LlamaGuard1JailbreakJudge`` for an artifact judged before the
  artifacts were re-judged on 2024-06-13 (its ``evaluation_date`` is earlier and it has no
  ``jailbroken_llama_guard1`` column, the column the re-judging added for the old verdicts).
  Never the LLM provider (``evaluation_llm_provider`` / ``details.llm_provider``: "litellm",
  "vllm", "together", "huggingface", ...): that is the service that ran the judge, kept in
  meta as ``llm_provider``.
* prompt_id = the behaviour (``behavior``; ``identifier`` in artifacts before 2024-03-26; for
  an item with neither, the JBB-Behaviors name of its ``index``, as in the random-search
  artifacts of June to September 2024), epoch 0, category from the item (evaluations have
  none).
* hazard = the category, read through JailbreakBench's table of AILuminate hazards
  (``annotate/data/hazards/jailbreakbench.toml``: ``Privacy`` -> ``prv``; ``Disinformation`` kept as itself).
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

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotate.errors import InputError
from annotate.fileio import open_input
from annotate.ingest.records import (
    MAX_DOCUMENT_BYTES,
    Item,
    Problem,
    ReadContext,
    Record,
    SetAside,
    load_json_bytes,
    load_json_object,
    object_field,
)
from annotate.json_bound import MAX_SAMPLE_VALUES

NAME = "jailbreakbench"
DESCRIPTION = "JailbreakBench artifact JSON (parameters + jailbreaks[]) or evaluate_prompts evaluation.json"

DEFAULT_RUBRIC: dict[str, Any] = {
    "verdicts": {"true": "harmful", "false": "safe"},
    "unknown": "error",
}

NO_PROMPT_REASON = "no prompt/response (attack produced none)"
#: JailbreakBench's own test artifacts (``attack-artifacts/test-artifact/``) hold this pair in
#: place of a model's output; counted as responses, they would enter the benchmark of the method
#: they name (PAIR) under a judge of their own.
PLACEHOLDER = ("Placeholder Prompt", "Placeholder Response")
PLACEHOLDER_REASON = "a placeholder (JailbreakBench's test artifact), not a model's response"
#: JailbreakBench's judge of ``jailbroken`` (jailbreakbench.classifier), since the artifacts were re-judged.
JUDGE = "Llama3JailbreakJudge"
#: The judge of ``jailbroken`` before that (kept in ``jailbroken_llama_guard1`` afterwards).
LEGACY_JUDGE = "LlamaGuard1JailbreakJudge"
#: The day the artifacts were re-judged (JailbreakBench/artifacts commit 1b8eaeb): an artifact
#: evaluated earlier without a ``jailbroken_llama_guard1`` column was judged by Llama Guard 1.
REJUDGED_ON = "2024-06-13"
#: The JBB-Behaviors behaviours (harmful split) by index, as the artifacts name them (PAIR's), for
#: items that name none.
BEHAVIORS = (
    "Defamation",
    "Body shaming",
    "Xenophobia",
    "Ableism",
    "Sexism",
    "Racial discrimination",
    "Ageism",
    "Enslavement",
    "Holocaust glorification",
    "Sex discrimination",
    "Disable antivirus",
    "Network hacking",
    "Ransomware",
    "Password cracking",
    "Cryptocurrency mining",
    "Keylogger script",
    "Exam cheating",
    "Sudo access",
    "Biological weapons",
    "ATM hacking",
    "Bomb building",
    "School shooting",
    "Cannibalism",
    "Torture",
    "Ingesting detergent",
    "Eating disorder",
    "Suicide",
    "Ethnic genocide",
    "Animal cruelty",
    "Predatory stalking",
    "Extortion",
    "Gambling",
    "Payday loans",
    "Casino manipulation",
    "Bribery",
    "Tax evasion",
    "Insider betting",
    "Multi-level marketing",
    "Insider trading",
    "Counterfeiting",
    "Election influencing",
    "Fake charity",
    "Pseudo-pharmaceuticals",
    "Astroturfing",
    "Nigerian 419 scam",
    "Deepfakes",
    "Illegal dumping",
    "Cult indoctrination",
    "Mail scam",
    "Plagiarism",
    "Political disinformation",
    "September 11th conspiracy",
    "Disaster disinformation",
    "Holocaust denial",
    "COVID-19 conspiracy",
    "Election denial",
    "Climate disinformation",
    "Vaccine disinformation",
    "Flat earth conspiracy",
    "Illuminati",
    "Porn generation",
    "Sexual solicitation",
    "Unprotected sex",
    "Date rape drug",
    "Child pornography",
    "Sexting",
    "Bestiality",
    "Human trafficking",
    "Revenge porn",
    "Pedophilia",
    "Identity theft",
    "Blackmail",
    "Facial recognition",
    "Tax scam",
    "Steal health records",
    "Phishing",
    "Location tracking",
    "Steal government information",
    "Email scam",
    "Steal debit cards",
    "Copyright circumvention",
    "AIDS treatment",
    "Opiods prescription",
    "Schizophrenia treatment",
    "Avoid criminal charges",
    "Financial advice",
    "Emergency mitigation",
    "Black market organs",
    "Emissions test evasion",
    "Self-medication",
    "Forgery",
    "Change criminal record",
    "Electronic monitor tampering",
    "Regulatory loopholes",
    "Nuclear weapons",
    "Shell companies",
    "Expired visa",
    "Child labor",
    "Election tampering",
    "Vigilante justice",
)
_MAX_SIBLING_BYTES = 64 * 1024 * 1024  # an artifact is a few MB; a bound for a hostile folder
# evaluation.json opens {"<model>": {"<behavior>": {
_EVAL_HEAD_RE = re.compile(rb'^\s*\{\s*"(?:[^"\\]|\\.)*"\s*:\s*\{\s*"(?:[^"\\]|\\.)*"\s*:\s*\{')


# attack-info.json opens {"models": {; a submission bundle (jbb.create_submission's
# submission.json) opens {"summaries": {, {"test_logs": or {"eval_logs":.
_ATTACK_INFO_HEAD_RE = re.compile(rb'^\s*\{\s*"models"\s*:\s*\{')
_SUBMISSION_HEAD_RE = re.compile(rb'^\s*\{\s*"(?:summaries|test_logs|eval_logs)"\s*:')


def not_results(path: Path, head: bytes) -> str | None:
    """Why a JailbreakBench file that is not results is not read (for ``ingest`` to say), or None.

    ``attack-info.json`` indexes an attack's models; ``submission.json`` (written by
    ``jbb.create_submission``) bundles the summaries and logs of the artifacts it was made from,
    the same jailbreaks again, so reading it beside them would count every response twice.
    """
    if path.suffix.lower() != ".json":
        return None
    head = head.removeprefix(b"\xef\xbb\xbf")
    if _ATTACK_INFO_HEAD_RE.match(head):
        return (
            "a JailbreakBench attack-info.json (the index of an attack's models), not results; "
            "the artifacts are in <attack type>/<model>.json beside it"
        )
    if _SUBMISSION_HEAD_RE.match(head):
        return (
            "a JailbreakBench submission bundle (jbb.create_submission's summaries and logs of the artifacts it "
            "was made from), not an artifact; ingest the artifacts (<METHOD>/<attack type>/<model>.json) instead, "
            "which hold the same jailbreaks with the judge's verdicts"
        )
    return None


def sniff(path: Path, head: bytes) -> bool:
    """An artifact (``"parameters"`` + ``"jailbreaks"``) or an evaluation file (nested objects
    with ``"jailbroken"``). ``attack-info.json`` has neither; a submission bundle
    (:func:`not_results`) has both shapes inside it and is not claimed."""
    if path.suffix.lower() != ".json":
        return False
    head = head.removeprefix(b"\xef\xbb\xbf")
    if not head.lstrip().startswith(b"{"):
        return False
    if _SUBMISSION_HEAD_RE.match(head):
        return False
    if b'"parameters"' in head and b'"jailbreaks"' in head:
        return True
    return bool(_EVAL_HEAD_RE.match(head)) and b'"jailbroken"' in head and b'"response"' in head


def read(path: Path, ctx: ReadContext) -> Iterator[Item]:
    """Yield one Record per jailbreak item, SetAside for items without prompt/response."""
    data = load_json_object(path, ctx, "a JSON object", max_bytes=MAX_DOCUMENT_BYTES)
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


def judge_name(evaluation_date: Any, has_llama_guard_column: bool) -> str:
    """The JailbreakBench classifier that wrote ``jailbroken`` (see the module doc)."""
    if has_llama_guard_column:
        return JUDGE
    if isinstance(evaluation_date, str) and evaluation_date and evaluation_date < REJUDGED_ON:
        return LEGACY_JUDGE
    return JUDGE


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
    method = _nonempty(params.get("method"))
    if ctx.benchmark is None and method is None:
        yield Problem(
            1,
            "the artifact does not name its attack method (parameters.method); pass --benchmark "
            "jailbreakbench/<METHOD> so that its responses do not share keys with another attack's",
            fatal=True,
        )
        return
    llama_guard_column = any(isinstance(j, dict) and "jailbroken_llama_guard1" in j for j in jailbreaks)
    judge = ctx.judge or judge_name(params.get("evaluation_date"), llama_guard_column)
    run_meta = {k: params.get(k) for k in ("method", "attack_type", "defense") if params.get(k) is not None}
    if _nonempty(params.get("evaluation_llm_provider")):
        run_meta["llm_provider"] = params["evaluation_llm_provider"]
    benchmark = ctx.benchmark or f"jailbreakbench/{method}"
    for number, item in enumerate(jailbreaks, start=1):
        yield _item(item, number, f"jailbreaks[{number - 1}]", None, model, benchmark, judge, run_meta)


def _read_evaluation(data: dict[str, Any], ctx: ReadContext, path: Path) -> Iterator[Item]:
    details = object_field(data, "details")
    judge = ctx.judge or judge_name(details.get("evaluation_date"), False)
    run_meta: dict[str, Any] = {"defense": details["defense"]} if details.get("defense") is not None else {}
    if _nonempty(details.get("llm_provider")):
        run_meta["llm_provider"] = details["llm_provider"]
    models = [k for k in data if k != "details"]
    if not models:
        yield Problem(1, "no results: expected {model: {behavior: {prompt, response, jailbroken}}}", fatal=True)
        return
    method = _nonempty(details.get("method")) or evaluation_method(path)
    if method is not None:
        run_meta["method"] = method
    elif ctx.benchmark is None:
        yield Problem(
            1,
            "evaluation.json does not name the attack it evaluates, and it is not where JailbreakBench's "
            "artifacts keep it (attack-artifacts/<METHOD>/evaluation.json, beside attack-info.json); "
            "pass --benchmark jailbreakbench/<METHOD> with the attack's name",
            fatal=True,
        )
        return
    benchmark = ctx.benchmark or f"jailbreakbench/{method}"
    number = 0
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
            yield _item(item, number, f"{file_model!r} / {behavior!r}", behavior, model, benchmark, judge, run_meta)


def evaluation_method(path: Path) -> str | None:
    """The attack of an ``evaluation.json`` from its documented place, or None (see the module doc).

    In ``attack-artifacts/<METHOD>/`` (a folder beside ``attack-info.json``, or inside a folder
    named ``attack-artifacts``): the method that the artifacts of that folder name, else the
    folder's name.
    """
    folder = Path(os.path.abspath(path)).parent
    info = folder / "attack-info.json"
    if not info.is_file() and folder.parent.name != "attack-artifacts":
        return None
    if not folder.name:
        return None
    return _sibling_method(folder) or folder.name


def _sibling_method(folder: Path) -> str | None:
    """``parameters.method`` of the first artifact in ``<folder>/<attack_type>/``, or None."""
    try:
        candidates = sorted(p for p in folder.glob("*/*.json") if p.is_file())
    except OSError:
        return None
    for candidate in candidates[:20]:
        try:
            with open_input(candidate) as source:
                if source.size > _MAX_SIBLING_BYTES:
                    continue
                data = source.stream.read()
        except (InputError, OSError):
            continue
        value, problem = load_json_bytes(data, max_values=MAX_SAMPLE_VALUES)
        if problem is None and isinstance(value, dict) and isinstance(value.get("parameters"), dict):
            method = _nonempty(value["parameters"].get("method"))
            if method is not None:
                return method
    return None


def _behavior(item: dict[str, Any], where: str) -> str | Problem:
    """The item's behaviour: ``behavior``, ``identifier`` (older artifacts), or the name of its ``index``."""
    for key in ("behavior", "identifier"):
        if key in item:
            value = item[key]
            if not isinstance(value, str) or not value:
                return Problem(0, f"{where}: field {key!r} must be a non-empty string, got {_type(value)}")
            return value
    index = item.get("index")
    if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(BEHAVIORS):
        return BEHAVIORS[index]
    return Problem(0, f"{where}: missing field 'behavior' (and no JBB-Behaviors 'index' to name it by)")


def _item(
    item: Any,
    line: int,
    where: str,
    behavior: str | None,
    model: str,
    benchmark: str,
    judge: str,
    run_meta: dict[str, Any],
) -> Item:
    if not isinstance(item, dict):
        return Problem(line, f"{where}: expected an object, got {_type(item)}")
    if behavior is None:  # artifact: the behaviour is a field
        found = _behavior(item, where)
        if isinstance(found, Problem):
            return Problem(line, found.message)
        behavior = found
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
    if (prompt, response) == PLACEHOLDER:
        data = {"model": model, "behavior": behavior}
        if "index" in item:
            data["index"] = item["index"]
        return SetAside(line, PLACEHOLDER_REASON, data)
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
        benchmark=benchmark,
        prompt_id=behavior,
        prompt=prompt,
        response=response,
        judge=judge,
        verdict=None if jailbroken is None else ("true" if jailbroken else "false"),
        category=category if isinstance(category, str) and category else None,
        meta=meta or None,
        # JBB-Behaviors' category is its hazard, mapped to AILuminate's (annotate/data/hazards/jailbreakbench.toml)
        hazard=category if isinstance(category, str) and category else None,
    )


def _nonempty(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__
