"""garak report files (``<run>.report.jsonl``).

JSON lines discriminated by ``entry_type``: ``start_run setup`` (flattened config), ``init``,
``attempt``, ``eval`` (aggregates), ``completion``, ``digest``. Each attempt is logged twice:
status 1 (started, no detector results) and status 2 (complete, scored). Only status-2
attempts are read; everything else is skipped (the ``eval`` and ``digest`` lines are
aggregates, not rows).

Choices:

* model: ``--model``, else the setup line's ``plugins.target_name`` / ``plugins.model_name``,
  falling back to ``plugins.target_type`` / ``plugins.model_type`` (the ``quack`` example has
  only ``target_type: "test"``). An attempt seen before any model is known is a Problem.
* benchmark = ``garak:<probe module>`` (``lmrc`` for ``lmrc.QuackMedicine``; ``--benchmark``
  overrides); category = the probe class name.
* prompt_id = ``<probe_classname>:<seq>`` (``seq`` numbers a probe's prompts, so it matches
  across runs of the same probe). If a run repeats (probe, seq) in another attempt, that
  attempt's id becomes ``<probe_classname>:<seq>:<uuid>`` (and ``...:<line>`` when that is
  taken too: an aggregated report, whose lines all carry the aggregate's uuid). A second
  status-2 line of the same attempt (uuid, probe, seq and content) is a SetAside (duplicate).
  An attempt logged with status 1 but never with status 2 (an interrupted run) is a SetAside,
  yielded after the file has been read.
* epoch = the output index (garak's ``generations``: one attempt, several outputs). garak 0.12
  to 0.14 score every assistant turn of every history of a multi-turn attempt
  (``Attempt.all_outputs``, history by history), not only the latest outputs (0.15 on): when
  the detectors' scores are that many, each scored turn is an output, its epoch its place in
  that order, its transcript the conversation up to it.
* One Record per (output, detector): judge = the detector name (``--judge`` renames it when
  there is one detector, else keeps only the detector so named), score = the detector's
  score, verdict ``"hit"`` when score >= the threshold else ``"pass"`` (garak counts a hit as
  a failed test). The threshold is ``run.eval_threshold`` from the setup line, else 0.5
  (garak's default; neither example file records it). A null score gives verdict None.
* prompt = the prompt's text (multi-turn prompts are written ``role: text`` per turn);
  response = the output's text. A null output (the target returned nothing) is a SetAside.
* transcript (multi-turn attempts, e.g. ``fitd.FITD``, ``atkgen.Tox``, ``goat``): the
  conversation that ended in the output, turn by turn. From ``conversations[i]`` (0.13 and
  later: one Conversation per output, ``{turns: [{role, content: Message}]}``), else
  ``messages[i]`` (0.12 and earlier: one history per output, ``[{role, content: text}]``), else
  the prompt's turns and the output. A Message's attachment (``data_path`` / ``data_type``)
  becomes ``[image]``, ``[audio]``, ``[video]`` or ``[attachment]``. None for one user turn
  and its answer (the prompt and the response already show it).
* Report keys of both generations are read: 0.12-style (``prompt`` a string, ``outputs``
  strings, ``messages``; ``plugins.model_type`` / ``model_name``) and 0.13-style and later
  (``prompt`` a Conversation, ``outputs`` Messages, ``conversations``; ``plugins.target_*``).
* meta: uuid, seq, goal, threshold.
* line = the line number in the JSONL file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotate.ingest.records import (
    Item,
    Problem,
    ReadContext,
    Record,
    SetAside,
    json_lines,
    placeholder,
    transcript_or_none,
)

NAME = "garak"
DESCRIPTION = "garak report JSONL (entry_type lines; status-2 attempts with detector_results)"

DEFAULT_RUBRIC: dict[str, Any] = {
    "verdicts": {"hit": "harmful", "pass": "safe"},
    "unknown": "error",
    "score_band": {"low": 0.5, "high": 0.5, "harmful_when": "high"},
}

DEFAULT_THRESHOLD = 0.5
ATTEMPT_COMPLETE = 2
_TICK_EVERY = 1024


def sniff(path: Path, head: bytes) -> bool:
    """A ``.jsonl`` file whose lines carry garak's ``entry_type`` values."""
    if path.suffix.lower() != ".jsonl":
        return False
    head = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    return head.startswith(b"{") and b'"entry_type"' in head and (b'"start_run setup"' in head or b'"attempt"' in head)


def read(path: Path, ctx: ReadContext) -> Iterator[Item]:
    """Yield one Record per (status-2 attempt, output, detector)."""
    model: str | None = ctx.model
    threshold = DEFAULT_THRESHOLD
    uuids: set[str] = set()  # uuids with a status-2 line
    seen: set[tuple[Any, ...]] = set()  # attempts read: (uuid, probe, seq, content digest)
    prompt_keys: set[str] = set()
    unfinished: dict[str, tuple[int, Any, Any]] = {}  # status-1 uuid -> (line, probe, seq)
    for parsed in json_lines(path, ctx, tick_every=_TICK_EVERY):
        if isinstance(parsed, Problem):
            yield parsed
            continue
        lineno, entry = parsed
        kind = entry.get("entry_type")
        if kind is None:
            yield Problem(lineno, "missing field 'entry_type'")
            continue
        if kind == "start_run setup":
            if ctx.model is None:
                model = _setup_model(entry) or model
            found = entry.get("run.eval_threshold")
            if isinstance(found, (int, float)) and not isinstance(found, bool):
                threshold = float(found)
            continue
        if kind != "attempt":
            continue
        status = entry.get("status")
        if status is None:
            yield Problem(lineno, "attempt: missing field 'status'")
            continue
        if status != ATTEMPT_COMPLETE:
            # status 1 duplicates the completed attempt without scores; remember it in
            # case the run stopped before completing it
            if isinstance(entry.get("uuid"), str) and entry["uuid"] not in uuids:
                unfinished[entry["uuid"]] = (lineno, entry.get("probe_classname"), entry.get("seq"))
            continue
        if isinstance(entry.get("uuid"), str):
            unfinished.pop(entry["uuid"], None)
        if model is None:
            yield Problem(
                lineno,
                "no model known for this attempt (no 'start_run setup' line "
                "with plugins.target_name before it); pass --model",
            )
            continue
        yield from _attempt(entry, lineno, model, threshold, uuids, seen, prompt_keys, ctx)
    for uuid, (lineno, probe, seq) in unfinished.items():
        yield SetAside(lineno, "attempt never completed (no status-2 line)", {"uuid": uuid, "probe": probe, "seq": seq})


def _setup_model(setup: dict[str, Any]) -> str | None:
    for key in ("plugins.target_name", "plugins.model_name", "plugins.target_type", "plugins.model_type"):
        value = setup.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _attempt(
    entry: dict[str, Any],
    line: int,
    model: str,
    threshold: float,
    uuids: set[str],
    seen: set[tuple[Any, ...]],
    prompt_keys: set[str],
    ctx: ReadContext,
) -> Iterator[Item]:
    """One status-2 attempt: a Record per output and detector, or what stops it.

    In steps: its fields checked (:func:`_attempt_problem`), the outputs its detectors scored
    (:func:`_scored_outputs`), its prompt, its identity (a repeated attempt is set aside,
    :func:`_content_digest`) and prompt id (:func:`_prompt_id`), the detectors read as judges
    (:func:`_judges`), the transcripts, then the records.
    """
    problem = _attempt_problem(entry)
    if problem is not None:
        yield Problem(line, f"attempt: {problem}")
        return
    uuid, seq, probe = entry["uuid"], entry["seq"], entry["probe_classname"]
    detectors = entry["detector_results"]
    scored = _scored_outputs(entry, entry["outputs"], detectors)
    if isinstance(scored, str):
        yield Problem(line, f"attempt: {scored}")
        return
    outputs, per_turn_transcripts = scored
    prompt = _prompt_text(entry["prompt"])
    if prompt is None:
        yield Problem(line, "attempt: field 'prompt' has no text (expected a string or {turns: [...]})")
        return
    identity = (uuid, probe, seq, _content_digest(entry))
    if identity in seen:
        yield SetAside(
            line,
            "duplicate status-2 attempt (the same attempt already read)",
            {"uuid": uuid, "probe": probe, "seq": seq},
        )
        return
    seen.add(identity)
    uuids.add(uuid)
    prompt_id = _prompt_id(f"{probe}:{seq}", uuid, line, prompt_keys)
    judges = _judges(detectors, ctx.judge)
    if isinstance(judges, str):
        yield Problem(line, f"attempt: {judges}")
        return
    selected, names = judges
    transcripts = per_turn_transcripts if per_turn_transcripts is not None else _transcripts(entry, outputs)
    if isinstance(transcripts, str):
        yield Problem(line, f"attempt: {transcripts}")
        return
    benchmark = ctx.benchmark or f"garak:{probe.split('.', 1)[0]}"
    meta_base = {"uuid": uuid, "seq": seq, "threshold": threshold}
    if entry.get("goal") is not None:
        meta_base["goal"] = entry["goal"]
    for index, output in enumerate(outputs):
        text = _output_text(output)
        if text is None:
            yield SetAside(
                line,
                f"the target returned no output (output {index})",
                {"uuid": uuid, "probe": probe, "seq": seq, "output": index},
            )
            continue
        for detector in selected:
            raw = detectors[detector][index]
            if raw is not None and (isinstance(raw, bool) or not isinstance(raw, (int, float))):
                yield Problem(
                    line,
                    f"attempt: detector_results[{detector!r}][{index}] must be a number, got {_type(raw)}",
                )
                continue
            score = None if raw is None else float(raw)
            verdict = None if score is None else ("hit" if score >= threshold else "pass")
            yield Record(
                line=line,
                model=model,
                benchmark=benchmark,
                prompt_id=prompt_id,
                prompt=prompt,
                response=text,
                judge=names[detector],
                verdict=verdict,
                score=score,
                epoch=index,
                category=probe,
                meta=dict(meta_base),
                transcript=transcripts[index],
            )


def _attempt_problem(entry: dict[str, Any]) -> str | None:
    """What is missing or mistyped among an attempt's fields (the first thing), or None."""
    for key in ("uuid", "seq", "probe_classname", "prompt", "outputs", "detector_results"):
        if key not in entry:
            return f"missing field {key!r}"
    uuid, seq, probe = entry["uuid"], entry["seq"], entry["probe_classname"]
    if not isinstance(uuid, str) or not uuid:
        return f"field 'uuid' must be a non-empty string, got {_type(uuid)}"
    if not isinstance(probe, str) or not probe:
        return f"field 'probe_classname' must be a non-empty string, got {_type(probe)}"
    if not isinstance(seq, int) or isinstance(seq, bool):
        return f"field 'seq' must be an integer, got {_type(seq)}"
    outputs, detectors = entry["outputs"], entry["detector_results"]
    if not isinstance(outputs, list):
        return f"field 'outputs' must be a list, got {_type(outputs)}"
    if not isinstance(detectors, dict):
        return f"field 'detector_results' must be an object, got {_type(detectors)}"
    return None


def _scored_outputs(
    entry: dict[str, Any], outputs: list[Any], detectors: dict[str, Any]
) -> tuple[list[Any], list[list[dict[str, Any]] | None] | str | None] | str:
    """The outputs the detectors scored, with their transcripts when they are every assistant turn
    of every history (else None: the transcripts are read later); or why the scores do not fit.

    0.12 and earlier score every assistant turn of every history (Attempt.all_outputs), which
    for a multi-turn attempt is more than its latest outputs.
    """
    every_turn = _all_outputs(entry)
    per_turn_transcripts: list[list[dict[str, Any]] | None] | str | None = None
    if (
        every_turn is not None
        and detectors
        and all(
            isinstance(scores, list) and len(scores) == len(every_turn[0]) != len(outputs)
            for scores in detectors.values()
        )
    ):
        outputs, per_turn_transcripts = every_turn
    for name, scores in detectors.items():
        if not isinstance(scores, list) or len(scores) != len(outputs):
            return f"detector_results[{name!r}] must list one score per output ({len(outputs)})"
    return outputs, per_turn_transcripts


def _content_digest(entry: dict[str, Any]) -> str:
    """sha256 of an attempt's prompt, outputs and scores.

    The uuid alone is not an attempt's identity: garak's aggregate_reports.py gives every line
    of an aggregated report the aggregate's uuid. A repeated line is the same uuid, probe, seq
    and content; anything else is another attempt.
    """
    return hashlib.sha256(
        json.dumps([entry["prompt"], entry["outputs"], entry["detector_results"]], sort_keys=True, default=str).encode(
            "utf-8", "surrogatepass"
        )
    ).hexdigest()


def _prompt_id(base: str, uuid: str, line: int, prompt_keys: set[str]) -> str:
    """``probe:seq``, or with the uuid (and the line) when another attempt of the file took it;
    the one chosen is added to ``prompt_keys``."""
    prompt_id = base
    for candidate in (base, f"{base}:{uuid}", f"{base}:{uuid}:{line}"):
        if candidate not in prompt_keys:
            prompt_id = candidate
            break
    prompt_keys.add(prompt_id)
    return prompt_id


def _judges(detectors: dict[str, Any], judge: str | None) -> tuple[list[str], dict[str, str]] | str:
    """The detectors to read and the judge name of each: all, under their own names; with
    ``--judge``, the one detector renamed, or the one of that name (else why not)."""
    selected = list(detectors)
    names = {d: d for d in selected}
    if judge is not None:
        if len(selected) == 1:
            names[selected[0]] = judge
        elif judge in detectors:
            selected = [judge]
        else:
            return f"no detector named {judge!r} (detectors: {', '.join(detectors)})"
    return selected, names


#: garak's roles (garak.attempt.roles) are the transcript's.
_ROLES = ("system", "user", "assistant")


def _message_text(content: Any) -> tuple[str, bool] | None:
    """(text, has an attachment) of a turn's content: a string (0.12) or a Message (0.13+); None if neither."""
    if isinstance(content, str):
        return content, False
    if not isinstance(content, dict):
        return None
    text = content.get("text")
    parts = [text] if isinstance(text, str) and text else []
    media = False
    if content.get("data_path") or content.get("data_type") or content.get("data_checksum"):
        data_type = content.get("data_type")
        mime = data_type[0] if isinstance(data_type, list) and data_type and isinstance(data_type[0], str) else ""
        kind = mime.split("/", 1)[0]
        parts.append(placeholder(kind if kind in ("image", "audio", "video") else "attachment"))
        media = True
    return "\n".join(parts), media


def _conversation(turns: Any) -> tuple[list[dict[str, Any]], bool] | str | None:
    """A list of garak turns as transcript turns (and whether any had an attachment), an error, or None."""
    if not isinstance(turns, list) or not turns:
        return None
    out: list[dict[str, Any]] = []
    media = False
    for number, turn in enumerate(turns, start=1):
        if not isinstance(turn, dict):
            return f"conversation turn {number} must be an object, got {_type(turn)}"
        role = turn.get("role")
        if role not in _ROLES:
            return f"conversation turn {number} has role {role!r}; garak's roles are {', '.join(_ROLES)}"
        text = _message_text(turn.get("content"))
        if text is None:
            return f"conversation turn {number} has no text (expected a string or a Message)"
        out.append({"role": role, "content": text[0]})
        media = media or text[1]
    return out, media


def _all_outputs(entry: dict[str, Any]) -> tuple[list[Any], list[list[dict[str, Any]] | None] | str] | None:
    """Every assistant turn of every history (``Attempt.all_outputs``: what the detectors of garak
    0.12 to 0.14 scored), history by history, with the conversation up to each; None without
    histories. The histories are ``messages`` (0.12 and earlier) or ``conversations`` (0.13 on)."""
    histories = entry.get("messages")
    if not isinstance(histories, list) or not histories or not all(isinstance(h, list) for h in histories):
        conversations = entry.get("conversations")
        if not isinstance(conversations, list) or not conversations:
            return None
        histories = [c.get("turns") if isinstance(c, dict) else None for c in conversations]
        if not all(isinstance(h, list) for h in histories):
            return None
    outputs: list[Any] = []
    transcripts: list[list[dict[str, Any]] | None] = []
    for history in histories:
        for end, turn in enumerate(history, start=1):
            if isinstance(turn, dict) and turn.get("role") == "assistant":
                outputs.append(turn.get("content"))
                found = _conversation(history[:end])
                if isinstance(found, str):
                    return outputs, found
                transcripts.append(None if found is None else transcript_or_none(found[0], media=found[1]))
    return outputs, transcripts


def _transcripts(entry: dict[str, Any], outputs: list[Any]) -> list[list[dict[str, Any]] | None] | str:
    """The transcript behind each output (None for single-turn), or why the attempt's conversations cannot be read."""
    conversations = entry.get("conversations")
    if not isinstance(conversations, list) or len(conversations) != len(outputs):
        conversations = None
    histories = entry.get("messages")
    if (
        not isinstance(histories, list)
        or len(histories) != len(outputs)
        or not all(isinstance(h, list) for h in histories)
    ):
        histories = None
    result: list[list[dict[str, Any]] | None] = []
    for index, output in enumerate(outputs):
        found: tuple[list[dict[str, Any]], bool] | str | None = None
        if conversations is not None:
            conversation = conversations[index]
            found = _conversation(conversation.get("turns") if isinstance(conversation, dict) else None)
        elif histories is not None:
            found = _conversation(histories[index])
        if found is None:  # the prompt's turns and the output
            prompt = entry.get("prompt")
            turns = prompt.get("turns") if isinstance(prompt, dict) else [{"role": "user", "content": prompt}]
            found = _conversation([*(turns or []), {"role": "assistant", "content": output}]) if output else None
        if isinstance(found, str):
            return found
        result.append(None if found is None else transcript_or_none(found[0], media=found[1]))
    return result


def _turn_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return None


def _prompt_text(prompt: Any) -> str | None:
    """A prompt string (old reports) or a Conversation ``{turns: [{role, content: {text}}]}``."""
    if isinstance(prompt, str):
        return prompt
    turns = prompt.get("turns") if isinstance(prompt, dict) else None
    if not isinstance(turns, list) or not turns:
        return None
    texts = [(t.get("role"), _turn_text(t.get("content"))) for t in turns if isinstance(t, dict)]
    texts = [(role, text) for role, text in texts if text is not None]
    if not texts:
        return None
    if len(texts) == 1:
        return texts[0][1]
    return "\n\n".join(f"{role or 'user'}: {text}" for role, text in texts)


def _output_text(output: Any) -> str | None:
    """An output string (old reports) or a Message ``{text, lang, ...}``; None if empty."""
    return _turn_text(output)


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__
