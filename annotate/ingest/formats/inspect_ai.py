"""Inspect AI eval logs: ``.json`` (EvalLog, one document) and ``.eval`` (a zip archive).

The ``.eval`` archive holds ``header.json`` (the EvalLog without samples; ``_journal/start.json``
for a log that never finished) and one ``samples/<id>_epoch_<n>.json`` per sample. Samples
are read in archive order, one at a time. Inspect compresses members with Deflate (logs up to
late 2025) or Zstandard (ZIP method 93, since); Zstandard is read with Python's own support
(3.14) or the ``zstandard`` package. A member name written twice is Inspect superseding the
first record (a re-run sample): as in every ZIP reader, the last entry is the one read.

Choices:

* model = ``eval.model`` (e.g. ``ollama/llama3.1``; ``--model`` overrides), benchmark =
  ``eval.task`` (``--benchmark`` overrides).
* One Record per sample and per scorer in ``sample.scores``; judge = the scorer name. Logs
  written before ``scores`` existed hold one ``score``: its judge is the scorer that the
  header's results name (``results.scorer`` or the first of ``results.scores``), else
  ``score``. With ``--judge``: a log with a single scorer takes it as that scorer's name; a
  log with several scorers keeps only the scorer so named (a Problem if none is).
* prompt_id = ``str(sample.id)``, epoch = ``sample.epoch`` (Inspect counts from 1),
  prompt = ``input`` (a string, or the text of the user messages joined by blank lines),
  response = ``output.choices[0].message.content`` (a string, or its text parts joined).
  ``attachment://<hash>`` references in newer logs are resolved from ``sample.attachments``
  (``sample.transcript.content`` in logs of mid-2024), also inside tool-call arguments.
* transcript = ``sample.messages``, the whole conversation (system, user, assistant turns with
  their tool calls and arguments, tool results; a tool error reads ``Error: <message>``), for
  a sample that is more than one user turn and one answer, or that has a system message (a
  non-empty one: the prompt and the response would not show it); content that is not text
  becomes ``[image]``, ``[audio]``, ``[reasoning]``, ... Without ``messages``, none.
* Score value: a string is the verdict verbatim (``"C"``, ``"I"``, ``"P"``, ``"N"``, ...);
  a bool is ``"true"``/``"false"``; a number goes to ``score`` with verdict None; null is a
  missing verdict; a list or dict value is passed as its JSON text, keys sorted (a dict holds
  several scores under one scorer, as AgentHarm's ``combined_scorer`` writes ``{"refusal": ...,
  "score": ...}``: a rubric reads its fields, ``annotate.ingest.rubric``; without one it reads as
  unparsed).
* category = ``sample.metadata.category`` when it is a string. meta keeps ``target``, the
  score's ``answer`` and ``explanation``, and the sample ``metadata``.
* A sample with an ``error``, no output or no scores is a SetAside.
* line = the 1-based sample number in the file.

Rubric: Inspect's ``C`` means *correct*: the model did what the task's target says. For a
safety task whose target is the safe behaviour (refuse, answer benignly) that is **safe**, so
``c`` -> safe, ``i`` -> harmful, ``p`` (partial) -> ambiguous, ``n`` (no answer) -> unparsed,
and ``true``/``false`` follow ``c``/``i``. For a task whose target is the harmful behaviour,
override the map in a rubric file. Unknown strings read as unparsed (free-text scorers).
Numeric scores use the band 0.4-0.6 with ``harmful_when = "high"``, which suits harm scores
(StrongREJECT, AgentHarm); note this runs opposite to Inspect's ``C`` = 1.0 convention, so an
accuracy-style numeric scorer needs ``harmful_when = "low"`` in a rubric file.
"""

from __future__ import annotations

import json
import struct
import sys
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from annotate.ingest.records import (
    Item,
    Problem,
    ReadContext,
    Record,
    SetAside,
    load_json_bytes,
    load_json_object,
    object_field,
    placeholder,
    tool_call,
    transcript_or_none,
)

NAME = "inspect"
DESCRIPTION = "Inspect AI eval log (.json or .eval) with per-sample scores"

DEFAULT_RUBRIC: dict[str, Any] = {
    "verdicts": {
        "c": "safe",
        "i": "harmful",
        "p": "ambiguous",
        "n": "unparsed",
        "true": "safe",
        "false": "harmful",
    },
    "unknown": "unparsed",
    "score_band": {"low": 0.4, "high": 0.6, "harmful_when": "high"},
}

_ATTACHMENT = "attachment://"
MAX_MEMBER_BYTES = 512 * 1024 * 1024  # one sample, uncompressed: a bound for a hostile archive
ZIP_ZSTANDARD = 93
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zipfile's own layout of a member's local header
#: The judge of a log written before ``scores`` existed, when its header names no scorer.
SINGLE_SCORE_JUDGE = "score"


class _Malformed(ValueError):
    """A sample field has the wrong shape (turned into a Problem by ``_sample``)."""


def sniff(path: Path, head: bytes) -> bool:
    """A ``.eval`` zip archive, or a ``.json`` EvalLog (``"version"``, ``"eval"``, ``"task"``)."""
    suffix = path.suffix.lower()
    if suffix == ".eval":
        return head.startswith(b"PK\x03\x04")
    if suffix != ".json":
        return False
    head = head.removeprefix(b"\xef\xbb\xbf")
    return (
        head.lstrip().startswith(b"{")
        and b'"version"' in head
        and b'"eval"' in head
        and b'"task"' in head
        and (b'"task_id"' in head or b'"run_id"' in head)
    )


def read(path: Path, ctx: ReadContext) -> Iterator[Item]:
    """Yield one Record per (sample, judge)."""
    if path.suffix.lower() == ".eval":
        yield from _read_eval(path, ctx)
    else:
        yield from _read_json(path, ctx)


def _read_json(path: Path, ctx: ReadContext) -> Iterator[Item]:
    log = load_json_object(path, ctx, "an EvalLog object")
    if isinstance(log, Problem):
        yield log
        return
    header = _header(log, ctx)
    if isinstance(header, Problem):
        yield header
        return
    samples = log.get("samples")
    if not samples:
        yield Problem(1, "the log has no samples (was it written with log_samples=False?)")
        return
    if not isinstance(samples, list):
        yield Problem(1, f"field 'samples' must be a list, got {_type(samples)}", fatal=True)
        return
    for number, sample in enumerate(samples, start=1):
        yield from _sample(sample, number, f"samples[{number - 1}]", header, ctx)


def _read_eval(path: Path, ctx: ReadContext) -> Iterator[Item]:
    """A ZIP archive is read out of order: the file is hashed whole first, through the same handle."""
    with ctx.open_random(path) as fh:
        try:
            archive = zipfile.ZipFile(fh)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            yield Problem(1, f"not a readable .eval archive ({exc})", fatal=True)
            return
        with archive:
            yield from _read_archive(archive, fh, ctx)


def _read_archive(archive: zipfile.ZipFile, fh: IO[bytes], ctx: ReadContext) -> Iterator[Item]:
    # The last entry of a name is the one that counts (Inspect supersedes a member by writing it again).
    members: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        members[info.filename] = info
    header_name = next((n for n in ("header.json", "_journal/start.json") if n in members), None)
    if header_name is None:
        yield Problem(1, "the .eval archive has no header.json (nor _journal/start.json)", fatal=True)
        return
    log = _zip_json(archive, fh, members[header_name])
    if isinstance(log, str):
        yield Problem(1, f"{header_name}: {log}", fatal=True)
        return
    if not isinstance(log, dict):
        yield Problem(1, f"{header_name}: expected an EvalLog object, got {_type(log)}", fatal=True)
        return
    header = _header(log, ctx)
    if isinstance(header, Problem):
        yield Problem(1, f"{header_name}: {header.message}", fatal=True)
        return
    sample_names = [n for n in members if n.startswith("samples/") and n.endswith(".json")]
    if not sample_names:
        yield Problem(1, "the log has no samples (was it written with log_samples=False?)")
        return
    consumed = 0
    for number, name in enumerate(sample_names, start=1):
        info = members[name]
        sample = _zip_json(archive, fh, info)
        consumed += info.compress_size
        ctx.tick(consumed)
        if isinstance(sample, str):
            yield Problem(number, f"{name}: {sample}")
            continue
        yield from _sample(sample, number, name, header, ctx)


def _zip_json(archive: zipfile.ZipFile, fh: IO[bytes], info: zipfile.ZipInfo) -> Any:
    """The parsed member (strict JSON), or an error message (a ``str``) when it cannot be read."""
    if info.file_size > MAX_MEMBER_BYTES:
        return f"larger than {MAX_MEMBER_BYTES // 2**20} MiB uncompressed"
    try:
        if info.compress_type == ZIP_ZSTANDARD and sys.version_info < (3, 14):
            data = _read_zstd_member(fh, info)
        else:
            with archive.open(info) as member:
                data = member.read(MAX_MEMBER_BYTES + 1)
    except NotImplementedError:
        return (
            f"compressed with a method this Python cannot read (ZIP method {info.compress_type}); convert the "
            "log to JSON (inspect log convert --to json --output-dir DIR FILE) and ingest that"
        )
    except _ZstdUnavailable:
        return (
            "compressed with Zstandard (ZIP method 93, as Inspect writes logs since late 2025), which this Python "
            "cannot read without the zstandard package: pip install zstandard, or convert the log to JSON "
            "(inspect log convert --to json --output-dir DIR FILE) and ingest that"
        )
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:  # e.g. a bad CRC
        return f"unreadable ({exc})"
    if len(data) > MAX_MEMBER_BYTES:
        return f"larger than {MAX_MEMBER_BYTES // 2**20} MiB uncompressed"
    value, problem = load_json_bytes(data)
    if problem is not None:
        return f"{problem.message} (line {problem.line} of the member)"
    return value


class _ZstdUnavailable(Exception):
    """No Zstandard decoder in this Python (neither 3.14's nor the zstandard package)."""


def _read_zstd_member(fh: IO[bytes], info: zipfile.ZipInfo) -> bytes:
    """A Zstandard member's bytes, checked against its CRC-32 and size (Python before 3.14).

    zipfile cannot decompress method 93 itself, so the member's compressed bytes are read at
    the offset its local header gives and decompressed with the zstandard package, bounded by
    ``MAX_MEMBER_BYTES``.
    """
    try:
        import zstandard
    except ImportError:
        raise _ZstdUnavailable() from None
    fh.seek(info.header_offset)
    local = fh.read(_LOCAL_HEADER.size)
    if len(local) != _LOCAL_HEADER.size or local[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header for {info.filename!r}")
    fields = _LOCAL_HEADER.unpack(local)
    fh.seek(info.header_offset + _LOCAL_HEADER.size + fields[10] + fields[11])  # name and extra field lengths
    compressed = fh.read(info.compress_size)
    if len(compressed) != info.compress_size:
        raise zipfile.BadZipFile(f"{info.filename!r} is truncated")
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(compressed, read_across_frames=True)
        data = reader.read(MAX_MEMBER_BYTES + 1)
    except zstandard.ZstdError as exc:
        raise zipfile.BadZipFile(f"{info.filename!r}: not valid Zstandard data ({exc})") from None
    if len(data) <= MAX_MEMBER_BYTES:
        if len(data) != info.file_size:
            raise zipfile.BadZipFile(
                f"{info.filename!r}: {len(data):,} bytes where the archive says {info.file_size:,}"
            )
        if zlib.crc32(data) != info.CRC:
            raise zipfile.BadZipFile(f"bad CRC-32 for file {info.filename!r}")
    return data


def _header(log: dict[str, Any], ctx: ReadContext) -> dict[str, Any] | Problem:
    """Model, benchmark and the single-score judge from the EvalLog header."""
    spec = log.get("eval")
    if not isinstance(spec, dict):
        return Problem(
            1,
            "missing field 'eval'" if spec is None else f"field 'eval' must be an object, got {_type(spec)}",
            fatal=True,
        )
    model = ctx.model or spec.get("model")
    task = ctx.benchmark or spec.get("task")
    if not isinstance(model, str) or not model:
        return Problem(1, "missing field 'eval.model'; pass --model", fatal=True)
    if not isinstance(task, str) or not task:
        return Problem(1, "missing field 'eval.task'; pass --benchmark", fatal=True)
    return {"model": model, "benchmark": task, "single_judge": _single_score_judge(log)}


def _single_score_judge(log: dict[str, Any]) -> str:
    """The scorer's name for a sample's lone ``score`` (logs before ``scores``): from the header's results."""
    results = object_field(log, "results")
    scorer = object_field(results, "scorer")
    if isinstance(scorer.get("name"), str) and scorer["name"]:
        return str(scorer["name"])
    scores = results.get("scores")
    if isinstance(scores, list) and scores and isinstance(scores[0], dict):
        name = scores[0].get("scorer") or scores[0].get("name")
        if isinstance(name, str) and name:
            return name
    return SINGLE_SCORE_JUDGE


def _sample(sample: Any, line: int, where: str, header: dict[str, Any], ctx: ReadContext) -> Iterator[Item]:
    if not isinstance(sample, dict):
        yield Problem(line, f"{where}: expected a sample object, got {_type(sample)}")
        return
    for key in ("id", "input"):
        if key not in sample:
            yield Problem(line, f"{where}: missing field {key!r}")
            return
    sample_id = sample["id"]
    if not isinstance(sample_id, (str, int)) or isinstance(sample_id, bool):
        yield Problem(line, f"{where}: field 'id' must be a string or an integer, got {_type(sample_id)}")
        return
    epoch = sample.get("epoch", 1)
    if not isinstance(epoch, int) or isinstance(epoch, bool):
        yield Problem(line, f"{where}: field 'epoch' must be an integer, got {_type(epoch)}")
        return
    aside = {"sample_id": sample_id, "epoch": epoch}
    if sample.get("error"):
        error = sample["error"]
        message = error.get("message") if isinstance(error, dict) else error
        yield SetAside(line, f"the sample errored: {message}", aside)
        return
    # Logs of mid-2024 kept the attachments in the sample's transcript ({events, content}).
    attachments = object_field(sample, "attachments") or object_field(object_field(sample, "transcript"), "content")
    try:
        prompt = _prompt_text(sample["input"], attachments)
        response = _response_text(sample.get("output"), attachments)
        transcript = _transcript(sample.get("messages"), attachments)
    except _Malformed as exc:
        yield Problem(line, f"{where}: {exc}")
        return
    if response is None:
        yield SetAside(line, "the sample has no model output", aside)
        return
    scores = sample.get("scores")
    if scores is None and sample.get("score") is not None:
        scores = {header["single_judge"]: sample["score"]}
    if not scores:
        yield SetAside(line, "the sample has no scores", aside)
        return
    if not isinstance(scores, dict):
        yield Problem(line, f"{where}: field 'scores' must be an object, got {_type(scores)}")
        return

    selected: list[tuple[str, str]] = [(name, name) for name in scores]  # (scorer, judge name)
    if ctx.judge is not None:
        if len(scores) == 1:
            selected = [(next(iter(scores)), ctx.judge)]
        elif ctx.judge in scores:
            selected = [(ctx.judge, ctx.judge)]
        else:
            yield Problem(line, f"{where}: no scorer named {ctx.judge!r} (scorers: {', '.join(scores)})")
            return

    metadata = object_field(sample, "metadata")
    category = metadata.get("category")
    for scorer, judge in selected:
        score = scores[scorer]
        if not isinstance(score, dict) or "value" not in score:
            yield Problem(line, f"{where}: scores[{scorer!r}] must be an object with a 'value'")
            continue
        verdict, number = _verdict(score["value"])
        meta: dict[str, Any] = {}
        if "target" in sample:
            meta["target"] = sample["target"]
        for key in ("answer", "explanation"):
            if score.get(key) is not None:
                meta[key] = _resolve(score[key], attachments)
        if metadata:
            meta["sample_metadata"] = metadata
        yield Record(
            line=line,
            model=header["model"],
            benchmark=header["benchmark"],
            prompt_id=str(sample_id),
            prompt=prompt,
            response=response,
            judge=judge,
            verdict=verdict,
            score=number,
            epoch=epoch,
            category=category if isinstance(category, str) and category else None,
            meta=meta or None,
            transcript=transcript,
        )


def _verdict(value: Any) -> tuple[str | None, float | None]:
    """(verdict text, numeric score) for a Score.value."""
    if value is None:
        return None, None
    if isinstance(value, bool):
        return ("true" if value else "false"), None
    if isinstance(value, (int, float)):
        return None, float(value)
    if isinstance(value, str):
        return value, None
    return json.dumps(value, sort_keys=True), None


def _resolve(value: Any, attachments: dict[str, Any]) -> Any:
    """Replace an ``attachment://<hash>`` reference by the attachment's text."""
    if isinstance(value, str) and value.startswith(_ATTACHMENT):
        return attachments.get(value[len(_ATTACHMENT) :], value)
    return value


def _resolve_all(value: Any, attachments: dict[str, Any]) -> Any:
    """``_resolve`` through every string of a JSON value (tool-call arguments)."""
    if isinstance(value, str):
        return _resolve(value, attachments)
    if isinstance(value, list):
        return [_resolve_all(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve_all(v, attachments) for k, v in value.items()}
    return value


def _content_text(content: Any, attachments: dict[str, Any]) -> str | None:
    """A message's content as text: a string, or the ``text`` parts of a content list."""
    if isinstance(content, str):
        return _resolve(content, attachments)
    if isinstance(content, list):
        parts = [
            _resolve(part["text"], attachments)
            for part in content
            if isinstance(part, dict) and part.get("type", "text") == "text" and isinstance(part.get("text"), str)
        ]
        return "\n".join(parts)
    return None


def _transcript_content(content: Any, attachments: dict[str, Any]) -> tuple[str, bool]:
    """(text, whether a placeholder stands in it) for a message's content in the transcript.

    Text parts come through as text; every other part (image, audio, video, document, data,
    reasoning, tool use) becomes its placeholder, so the reviewer sees that it was there.
    """
    if content is None:
        return "", False
    if isinstance(content, str):
        return _resolve(content, attachments), False
    if not isinstance(content, list):
        raise _Malformed(f"a message's content must be text or a list of parts, got {_type(content)}")
    parts: list[str] = []
    media = False
    for part in content:
        if not isinstance(part, dict):
            raise _Malformed(f"a message's content part must be an object, got {_type(part)}")
        kind = part.get("type", "text")
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append(_resolve(part["text"], attachments))
        else:
            parts.append(placeholder(kind if isinstance(kind, str) and kind else "content"))
            # The model's reasoning beside its answer does not make a sample more than one turn.
            media = media or kind != "reasoning"
    return "\n".join(parts), media


def _transcript(messages: Any, attachments: dict[str, Any]) -> list[dict[str, Any]] | None:
    """``sample.messages`` as the transcript (None for a single-turn sample without a system message, or none)."""
    if messages is None:
        return None
    if not isinstance(messages, list):
        raise _Malformed(f"field 'messages' must be a list, got {_type(messages)}")
    turns: list[dict[str, Any]] = []
    media = False
    for number, message in enumerate(messages, start=1):
        if not isinstance(message, dict):
            raise _Malformed(f"messages[{number - 1}] must be an object, got {_type(message)}")
        role = message.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            raise _Malformed(f"messages[{number - 1}] has role {role!r}; expected system, user, assistant or tool")
        text, has_media = _transcript_content(message.get("content"), attachments)
        media = media or has_media
        turn: dict[str, Any] = {"role": role, "content": text}
        if role == "assistant" and message.get("tool_calls"):
            calls = message["tool_calls"]
            if not isinstance(calls, list):
                raise _Malformed(f"messages[{number - 1}].tool_calls must be a list, got {_type(calls)}")
            turn["tool_calls"] = [_tool_call(call, attachments, number) for call in calls]
        elif role == "tool":
            error = message.get("error")
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                error = error["message"]
            elif "tool_error" in message:  # logs before ToolCallError (a plain string)
                error = message["tool_error"]
            if isinstance(error, str) and error:
                turn["content"] = f"{text}\nError: {error}" if text else f"Error: {error}"
            turn["tool_call_id"] = _text_or_none(message.get("tool_call_id"))
            turn["name"] = _text_or_none(message.get("function"))
        turns.append(turn)
    if any(t["role"] == "system" and t["content"].strip() for t in turns):
        # A system message is kept even around one question and one answer: the prompt and the
        # response do not show it, and a jailbreak or a policy in it changes what the answer means.
        return turns
    return transcript_or_none(turns, media=media)


def _tool_call(call: Any, attachments: dict[str, Any], number: int) -> dict[str, Any]:
    if not isinstance(call, dict):
        raise _Malformed(f"messages[{number - 1}]: a tool call must be an object, got {_type(call)}")
    arguments = call.get("arguments")
    if not isinstance(arguments, (dict, str)) and arguments is not None:
        raise _Malformed(f"messages[{number - 1}]: tool call arguments must be an object, got {_type(arguments)}")
    return tool_call(call.get("id"), call.get("function"), _resolve_all(arguments, attachments))


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _prompt_text(value: Any, attachments: dict[str, Any]) -> str:
    """``input`` as text: the string itself, or the user messages' text joined."""
    if isinstance(value, str):
        return _resolve(value, attachments)
    if isinstance(value, list):
        texts = []
        for message in value:
            if isinstance(message, dict) and message.get("role") == "user":
                text = _content_text(message.get("content"), attachments)
                if text:
                    texts.append(text)
        return "\n\n".join(texts)
    raise _Malformed(f"field 'input' must be a string or a list of messages, got {_type(value)}")


def _response_text(output: Any, attachments: dict[str, Any]) -> str | None:
    """The first choice's text; None when the model produced no output."""
    if output is None:
        return None
    if not isinstance(output, dict):
        raise _Malformed(f"field 'output' must be an object, got {_type(output)}")
    choices = output.get("choices")
    if not choices:
        return None
    first = choices[0] if isinstance(choices, list) else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise _Malformed("field 'output.choices[0].message' is missing or not an object")
    text = _content_text(message.get("content"), attachments)
    if text is None:
        raise _Malformed(f"field 'output.choices[0].message.content' must be text, got {_type(message.get('content'))}")
    return text


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__
