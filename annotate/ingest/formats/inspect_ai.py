"""Inspect AI eval logs: ``.json`` (EvalLog, one document) and ``.eval`` (a zip archive).

The ``.eval`` archive holds ``header.json`` (the EvalLog without samples; ``_journal/start.json``
for a log that never finished) and one ``samples/<id>_epoch_<n>.json`` per sample. Samples
are read in archive order, one at a time. Inspect compresses members with Deflate (logs up to
late 2025) or Zstandard (ZIP method 93, since); Zstandard is read with the ``zstandard`` package
(or, without it, Python's own support from 3.14). A member name written twice is Inspect
superseding the first record (a re-run sample): the last entry is the one read, in the place of
the first, exactly as Inspect's own readers do (``_read_log`` and ``_read_log_from_bytes`` in
``inspect_ai/log/_recorders/eval.py`` take one entry per name, the last). The archive is read as
a hostile file: a member whose name leads outside the archive root (``../x``, ``/x``, ``C:x``)
refuses it; a member is decompressed in chunks against a byte budget, its declared size (at
most ``MAX_MEMBER_BYTES`` of ``annotate.ingest.archive``), so a member that declares more is
refused before it is decompressed and one that expands beyond what it declares (a decompression
bomb) is refused at the budget, never after the bytes are allocated; a member whose JSON may parse
to more values than ``MAX_SAMPLE_VALUES`` (a sample; ``MAX_DOCUMENT_VALUES`` for the header and
summaries) is not parsed (``json_values_over``: 128 MiB of ``{},{},...`` would become 45 million
objects); only the methods Inspect writes (stored, Deflate, Zstandard) are read; and two members
holding the same sample (id and epoch) are a problem, since Inspect would show both.

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
  response = ``output.choices[0].message.content`` (a string, or its text parts joined), which
  must be the text Inspect shows for the sample: ``output.completion`` (when not empty; Inspect
  fills an empty one from the first choice) and the last assistant turn of ``sample.messages``
  must be the same text, or the sample is set aside with the reason (``reading_problem``; the
  write-back checks the same again before it edits a sample).
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
* A log written by ``annotate writeback`` (``eval.metadata.annotate_writeback``, or a score whose
  history holds an edit with annotate's provenance) holds human labels, not a judge's verdicts:
  it is refused (a fatal Problem) unless ``ReadContext.allow_written_back`` (``ingest
  --allow-written-back``). Then each score annotate wrote is read as the judge
  ``human-review:<the round's judge>``, with the decision's provenance in ``meta``; a score whose
  human label was withdrawn, or that was edited again after annotate wrote it, is set aside;
  the other scores are read as usual (they are the judges' own).
* line = the 1-based sample number in the file.

Unscored and unparsed grades (Inspect's own three eras, ``inspect_ai/scorer/_model.py``): up to
0.3.244 ``model_graded_qa`` / ``model_graded_fact`` wrote a grade they could not parse as ``"I"``
with the explanation ``"Grade not found in model output: ..."``; from 0.3.245 as
``Score.unscored`` (value NaN, ``metadata.unscored_reason = "grade_parse_failure"``); from
0.3.285 with ``reason = "grader_failed"`` (``ScoreReason``). The log holds NaN as a bare token,
which this reader accepts (Inspect writes it: ``ser_json_inf_nan="constants"``). So: an ``I``
whose explanation starts so, and an ``I`` of a scorer whose other values are Yes/No (a Yes/No
grader behind ``model_graded_qa``, such as a refusal judge; in a ``.eval`` archive known from its
sample summaries, against which the samples are then checked), are read with the
context ``grade-not-found`` (``i@grade-not-found`` -> unparsed, never harmful; meta
``parse_failure`` says why); a NaN value (or a null one with a reason) is the verdict
``unscored`` or ``unscored:<reason>`` (unparsed), its score None.

Judge kinds (``annotate.columns.JUDGE_KINDS``; presets and rubrics override them): a judge of a
task that is a known safety eval (``SAFETY_TASKS``, or a task or scorer name with a word of
``SAFETY_WORDS``) is a safety judge, a scorer named ``*refusal*`` a refusal judge; any other
task is read as a capability task whose judges are quality judges (a wrong answer is not harm),
said in one note per task ("task dns_diagnosis: ..."). A preset in force for a judge (AgentHarm,
StrongREJECT, ...) makes it a safety judge.

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
import math
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from annotate.ingest.archive import archive_members, member_bytes
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
    placeholder,
    tool_call,
    transcript_or_none,
)
from annotate.json_bound import MAX_DOCUMENT_VALUES, MAX_SAMPLE_VALUES, json_values_over, too_many_values

NAME = "inspect"
DESCRIPTION = "Inspect AI eval log (.json or .eval) with per-sample scores"

#: The context of a grade the scorer could not parse (the module doc): its "I" is no verdict.
GRADE_NOT_FOUND = "grade-not-found"
#: Inspect's explanation of a grade its model-graded scorer could not parse.
GRADE_NOT_FOUND_TEXT = "Grade not found in model output"
#: The verdict of an unscored sample (value NaN): ``unscored`` or ``unscored:<Inspect's reason>``.
UNSCORED = "unscored"
#: Inspect's ScoreReason values (0.3.285) and the legacy metadata.unscored_reason.
UNSCORED_REASONS = (
    "grade_parse_failure",
    "grader_failed",
    "scoring_failed",
    "invalid_response_format",
    "no_response",
    "refusal",
)

DEFAULT_RUBRIC: dict[str, Any] = {
    "verdicts": {
        "c": "safe",
        "i": "harmful",
        "p": "ambiguous",
        "n": "unparsed",
        "true": "safe",
        "false": "harmful",
        f"i@{GRADE_NOT_FOUND}": "unparsed",
        UNSCORED: "unparsed",
        **{f"{UNSCORED}:{reason}": "unparsed" for reason in UNSCORED_REASONS},
    },
    "unknown": "unparsed",
    "score_band": {"low": 0.4, "high": 0.6, "harmful_when": "high"},
}

_ATTACHMENT = "attachment://"
#: The judge of a log written before ``scores`` existed, when its header names no scorer.
SINGLE_SCORE_JUDGE = "score"
#: The key of ``eval.metadata`` that marks a log written by ``annotate writeback``.
WRITEBACK_MARKER = "annotate_writeback"
#: What the provenance of annotate's score edits names as their tool (``metadata.tool``).
WRITEBACK_TOOL = "annotate"
#: The judge name under which ``--allow-written-back`` reads the human labels of a written-back log.
HUMAN_REVIEW_PREFIX = "human-review:"
#: Safety evals by task name (``eval.task`` without ``inspect_evals/``): inspect_evals' safeguards
#: and their kin, whose target is the safe behaviour or whose scorer judges harm.
SAFETY_TASKS = frozenset(
    {
        "agentharm",
        "agentharm_benign",
        "strong_reject",
        "xstest",
        "agentdojo",
        "mask",
        "make_me_pay",
        "coconot",
        "fortress",
        "sosbench",
        "stereoset",
        "bbq",
        "b3",
        "abstention_bench",
        "cyberseceval_2",
        "cse2_interpreter_abuse",
        "cse2_prompt_injection",
    }
)
#: Words that make a task or scorer name a safety eval's (matched in the name's parts).
SAFETY_WORDS = re.compile(
    r"(harm|unsafe|safety|safeguard|jailbreak|refus|toxic|red_?team|injection|attack|misuse|bias|hazard|"
    r"abuse|malicious|deception|sycophan)",
    re.IGNORECASE,
)


class _Malformed(ValueError):
    """A sample field has the wrong shape (turned into a Problem by ``_sample``)."""


class _WrittenBack(Exception):
    """The log was written by ``annotate writeback`` and the ingest did not allow it (a fatal Problem)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def written_back_refusal(what: str) -> str:
    """The message that refuses a written-back log (``what``: where the mark is)."""
    return (
        f"this log was written by `annotate writeback` ({what}): its scores hold human labels from a review "
        "round, not a judge's verdicts, and ingesting them as a judge would review the reviewers. Ingest the "
        f"original log instead, or pass --allow-written-back to read the human labels as the judge "
        f"'{HUMAN_REVIEW_PREFIX}<judge>'"
    )


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
    try:
        if path.suffix.lower() == ".eval":
            yield from _read_eval(path, ctx)
        else:
            yield from _read_json(path, ctx)
    except _WrittenBack as exc:
        yield Problem(exc.line, exc.message, fatal=True)


def _read_json(path: Path, ctx: ReadContext) -> Iterator[Item]:
    log = load_json_object(
        path,
        ctx,
        "an EvalLog object",
        max_bytes=MAX_DOCUMENT_BYTES,
        # the .eval form holds one sample per archive member, each read in bounded memory
        advice="Convert it to the .eval form, which annotate reads one sample at a time: "
        "inspect log convert FILE --to eval --output-dir DIR",
        nan=True,
    )
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
    seen: dict[tuple[str, int], str] = {}
    header["yes_no"] = _yes_no_scorers(samples)
    for number, sample in enumerate(samples, start=1):
        yield from _sample(sample, number, f"samples[{number - 1}]", header, ctx, seen)


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
    members = archive_members(archive)
    if isinstance(members, str):
        yield Problem(1, members, fatal=True)
        return
    header_name = next((n for n in ("header.json", "_journal/start.json") if n in members), None)
    if header_name is None:
        yield Problem(1, "the .eval archive has no header.json (nor _journal/start.json)", fatal=True)
        return
    log = _zip_json(archive, fh, members[header_name], ctx.value_limit(MAX_DOCUMENT_VALUES))
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
    # Which scorers answer Yes/No (their I is a grade not found), known before the first sample is read.
    header["yes_no"], source = _archive_yes_no(archive, fh, members, sample_names, ctx)
    consumed = 0
    seen: dict[tuple[str, int], str] = {}
    values: dict[str, set[str]] = {}
    all_read = True
    for number, name in enumerate(sample_names, start=1):
        info = members[name]
        sample = _zip_json(archive, fh, info, ctx.value_limit(MAX_SAMPLE_VALUES))
        consumed += info.compress_size
        ctx.tick(consumed)
        if isinstance(sample, str):
            yield Problem(number, f"{name}: {sample}")
            all_read = False
            continue
        _scorer_values(sample, values)
        yield from _sample(sample, number, name, header, ctx, seen)
    # The summaries decided how each I was read. A scorer on which they and the samples disagree, and
    # which gave an I, had its I read by a rule its samples do not support: the archive was edited.
    wrong = sorted(n for n in header["yes_no"] ^ _yes_no(values) if "i" in values.get(n, set()))
    if source is not None and all_read and wrong:
        yield Problem(
            1,
            f"{source} disagrees with the samples about whether {', '.join(map(repr, wrong))} answers Yes/No (so "
            "whether its I is a grade or a parse failure): the archive was edited after Inspect wrote it. Re-run "
            "the eval, or convert the log to JSON (inspect log convert --to json --output-dir DIR FILE) and ingest "
            "that",
            fatal=True,
        )


def _zip_json(archive: zipfile.ZipFile, fh: IO[bytes], info: zipfile.ZipInfo, max_values: int) -> Any:
    """The parsed member (strict JSON), or an error message (a ``str``) when it cannot be read (among
    them a member that may parse to more than ``max_values`` values: it is not parsed)."""
    data = member_bytes(archive, fh, info)
    if isinstance(data, str):
        return data
    if (count := json_values_over(data, max_values)) is not None:
        return too_many_values(count, max_values, "the member")
    value, problem = load_json_bytes(data, nan=True, max_values=max_values)
    if problem is not None:
        return f"{problem.message} (line {problem.line} of the member)"
    return value


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
    own_task = spec.get("task")
    task = ctx.benchmark or own_task
    if not isinstance(model, str) or not model:
        return Problem(1, "missing field 'eval.model'; pass --model", fatal=True)
    if not isinstance(task, str) or not task:
        return Problem(1, "missing field 'eval.task'; pass --benchmark", fatal=True)
    marker = object_field(spec, "metadata").get(WRITEBACK_MARKER)
    if marker is not None and not ctx.allow_written_back:
        return Problem(1, written_back_refusal(f"eval.metadata.{WRITEBACK_MARKER}"), fatal=True)
    task_name = own_task if isinstance(own_task, str) and own_task else task
    kind = task_kind(task_name)
    if kind == "quality":
        ctx.notes.append(
            f"task {task_name}: not a safety eval annotate knows (no preset names it); its judges are read as a "
            'capability task\'s (quality: a wrong answer is not harm), unless a preset or a rubric says kind = "safety"'
        )
    return {"model": model, "benchmark": task, "single_judge": _single_score_judge(log), "kind": kind, "yes_no": set()}


def task_kind(task: str) -> str:
    """safety for a known safety eval (``SAFETY_TASKS``, or ``SAFETY_WORDS`` in its name), else quality.

    >>> task_kind("inspect_evals/agentharm"), task_kind("dns_diagnosis"), task_kind("my_jailbreak_suite")
    ('safety', 'quality', 'safety')
    """
    name = task.rsplit("/", 1)[-1].split("@", 1)[0].lower()
    return "safety" if name in SAFETY_TASKS or SAFETY_WORDS.search(name) else "quality"


def scorer_kind(scorer: str, task_kind: str) -> str:
    """A scorer's kind: refusal for ``*refusal*``, safety for a safety word or a safety task, else ``task_kind``."""
    if "refusal" in scorer.lower():
        return "refusal"
    return "safety" if SAFETY_WORDS.search(scorer) else task_kind


def _yes_no_scorers(samples: list[Any]) -> set[str]:
    """The scorers whose string values in the log are Yes/No (beside any ``I``): their ``I`` is no grade.

    >>> sorted(_yes_no_scorers([{"scores": {"refusal": {"value": "Yes"}, "qa": {"value": "C"}}},
    ...                         {"scores": {"refusal": {"value": "I"}, "qa": {"value": "I"}}}]))
    ['refusal']
    """
    values: dict[str, set[str]] = {}
    for sample in samples:
        _scorer_values(sample, values)
    return _yes_no(values)


def _scorer_values(sample: Any, values: dict[str, set[str]]) -> None:
    """Add the string values of a sample's (or a sample summary's) scores to ``values``, per scorer."""
    scores = sample.get("scores") if isinstance(sample, dict) else None
    if isinstance(scores, dict):
        for name, score in scores.items():
            value = score.get("value") if isinstance(score, dict) else None
            if isinstance(value, str):
                values.setdefault(name, set()).add(value.strip().lower())


def _yes_no(values: dict[str, set[str]]) -> set[str]:
    return {name for name, seen in values.items() if seen & {"yes", "no"} and seen <= {"yes", "no", "i"}}


def _archive_yes_no(
    archive: zipfile.ZipFile,
    fh: IO[bytes],
    members: dict[str, zipfile.ZipInfo],
    sample_names: list[str],
    ctx: ReadContext,
) -> tuple[set[str], str | None]:
    """The Yes/No scorers of a ``.eval`` archive before its samples are read, and where that was read.

    From the sample summaries Inspect writes beside the samples (``summaries.json``, else the
    journal's ``_journal/summaries/N.json`` in order), which carry every sample's score values: one
    small member instead of reading every sample twice. A sample summarised twice (re-logged)
    counts once, its last summary, as Inspect reads it. The samples are then checked against this
    as they are read (:func:`_read_archive`). Summaries that cannot be read, or that carry no
    scores while samples may, are not used: the samples' scores are read first instead (a second
    pass over them). Returns (scorers, the member read, or None when the samples were).
    """
    if "summaries.json" in members:
        names = ["summaries.json"]
    else:
        journal = [n for n in members if n.startswith("_journal/summaries/") and n.endswith(".json")]
        names = sorted(journal, key=lambda n: (len(n), n))  # 1.json, 2.json, ..., 10.json
    latest: dict[str, Any] = {}
    usable = bool(names)
    for name in names:
        summaries = _zip_json(archive, fh, members[name], ctx.value_limit(MAX_DOCUMENT_VALUES))
        if not isinstance(summaries, list) or not all(
            isinstance(x, dict) and isinstance(x.get("scores"), dict) for x in summaries
        ):
            usable = False
            break
        for summary in summaries:
            latest[json.dumps([summary.get("id"), summary.get("epoch")], default=str)] = summary
    if usable:
        return _yes_no_scorers(list(latest.values())), names[0] if len(names) == 1 else "_journal/summaries/"
    values: dict[str, set[str]] = {}
    for name in sample_names:
        sample = _zip_json(archive, fh, members[name], ctx.value_limit(MAX_SAMPLE_VALUES))
        if not isinstance(sample, str):
            _scorer_values(sample, values)
    return _yes_no(values), None


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


def _sample(
    sample: Any, line: int, where: str, header: dict[str, Any], ctx: ReadContext, seen: dict[tuple[str, int], str]
) -> Iterator[Item]:
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
    sample_key = (str(sample_id), epoch)
    if sample_key in seen:
        yield Problem(
            line,
            f"{where}: sample {sample_id!r} (epoch {epoch}) is also {seen[sample_key]}; Inspect would show both, so "
            "which one was reviewed could not be told",
        )
        return
    seen[sample_key] = where
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
        if transcript is None and sample.get("messages") is None and isinstance(sample["input"], list) and response:
            # No conversation kept: the input's messages (a system message among them) and the answer.
            transcript = _transcript([*sample["input"], {"role": "assistant", "content": response}], attachments)
        disagreement = None if response is None else _disagreement(sample, response, attachments)
    except _Malformed as exc:
        yield Problem(line, f"{where}: {exc}")
        return
    if response is None:
        yield SetAside(line, "the sample has no model output", aside)
        return
    if disagreement is not None:
        yield SetAside(line, disagreement, aside)
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
        human = _human_review(score, scorer, line, where, ctx)
        if isinstance(human, str):
            yield SetAside(line, human, {**aside, "scorer": scorer})
            continue
        verdict, number = _verdict(score["value"])
        context, failure = _unparsed(score, verdict, number, scorer in header["yes_no"])
        if failure == UNSCORED:
            reason = score.get("reason") or object_field(score, "metadata").get("unscored_reason")
            verdict = f"{UNSCORED}:{reason}" if isinstance(reason, str) and reason else UNSCORED
            number = None
        meta: dict[str, Any] = {}
        if failure is not None:
            meta["parse_failure"] = failure
        if human is not None:
            judge = human.pop("judge")
            meta["human_review"] = human
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
            context=context,
            kind=scorer_kind(scorer, header["kind"]),
        )


def _unparsed(
    score: dict[str, Any], verdict: str | None, number: float | None, yes_no: bool
) -> tuple[str | None, str | None]:
    """(the rubric context, why the score is no grade) for a grade the scorer could not parse; (None, None) otherwise.

    ``UNSCORED`` as the reason: the value is NaN (or null with Inspect's reason), read as ``unscored[:reason]``.
    """
    if number is not None and math.isnan(number):
        return None, UNSCORED
    if (
        verdict is None
        and number is None
        and (score.get("reason") or object_field(score, "metadata").get("unscored_reason"))
    ):
        return None, UNSCORED
    if isinstance(verdict, str) and verdict.strip().lower() == "i":
        explanation = score.get("explanation")
        if isinstance(explanation, str) and explanation.startswith(GRADE_NOT_FOUND_TEXT):
            return GRADE_NOT_FOUND, f"{GRADE_NOT_FOUND_TEXT} (Inspect's I for a grade it could not parse)"
        if yes_no:
            return GRADE_NOT_FOUND, "an I among this scorer's Yes/No answers: a grade it could not parse"
    return None, None


def _annotate_edit(edit: Any) -> dict[str, Any] | None:
    """The provenance of a score edit that ``annotate writeback`` made, or None for any other entry."""
    provenance = edit.get("provenance") if isinstance(edit, dict) else None
    metadata = provenance.get("metadata") if isinstance(provenance, dict) else None
    if isinstance(metadata, dict) and metadata.get("tool") == WRITEBACK_TOOL:
        assert isinstance(provenance, dict)
        return provenance
    return None


def _human_review(score: dict[str, Any], scorer: str, line: int, where: str, ctx: ReadContext) -> Any:
    """None for a judge's own score; for one annotate wrote: refused (``_WrittenBack``) or, when allowed,
    the human review's judge name and provenance (a dict), or why the score is set aside (a ``str``)."""
    history = score.get("history")
    entries = history if isinstance(history, list) else []
    ours = [p for p in map(_annotate_edit, entries) if p is not None]
    if not ours:
        return None
    if not ctx.allow_written_back:
        raise _WrittenBack(line, f"{where}: " + written_back_refusal(f"scores[{scorer!r}] holds its edits"))
    last = _annotate_edit(entries[-1])
    if last is None:
        by = entries[-1].get("provenance") if isinstance(entries[-1], dict) else None
        author = by.get("author") if isinstance(by, dict) else None
        return f"the score {scorer!r} was edited again after annotate wrote it back (by {author or 'someone'})"
    metadata = last["metadata"]
    if metadata.get("label") not in ("harmful", "safe"):
        return f"the human label written back into {scorer!r} was withdrawn ({last.get('reason') or 'no reason'})"
    judge = metadata.get("judge")
    review = {
        "judge": HUMAN_REVIEW_PREFIX + (judge if isinstance(judge, str) and judge else scorer),
        "scorer": scorer,
        "author": last.get("author"),
        "reason": last.get("reason"),
    }
    for key in ("round", "decision", "label", "method", "votes", "export_manifest_sha256", "annotate_version"):
        if key in metadata:
            review[key] = metadata[key]
    return review


def reading_problem(output: Any, messages: Any, attachments: dict[str, Any]) -> str | None:
    """Why a sample's answer would be read two ways, or None when it is one text.

    The reviewers see ``output.choices[0]``; Inspect's viewer and reader show ``output.completion``
    (an empty one is the first choice's text) and the conversation ends with the last assistant
    turn of ``messages``. All three must be the same text. Shared by the reader and ``annotate
    writeback`` (on Inspect's own reading of the sample), so a label never lands on another text.
    Raises ``ValueError`` for an output that is not shaped like Inspect's.
    """
    response = _response_text(output, attachments)
    if response is None:
        return None
    return _disagreement({"output": output, "messages": messages}, response, attachments)


def verdict_of(value: Any) -> tuple[str | None, float | None]:
    """A score value as the reader stores it: (verdict text, numeric score)."""
    return _verdict(value)


def response_text(output: Any, attachments: dict[str, Any]) -> str | None:
    """The text reviewers see for a sample (the first choice's), None without output; ``ValueError`` if malformed."""
    return _response_text(output, attachments)


def _disagreement(sample: dict[str, Any], response: str, attachments: dict[str, Any]) -> str | None:
    output = sample.get("output")
    completion = output.get("completion") if isinstance(output, dict) else None
    if completion is not None and not isinstance(completion, str):
        raise _Malformed(f"field 'output.completion' must be text, got {_type(completion)}")
    completion = _resolve(completion, attachments) if completion else None
    if completion is not None and completion != response:
        return (
            "the sample's answer is read two ways: output.completion (what Inspect shows) is not the text of "
            f"output.choices[0] (what reviewers would see) ({_differ(completion, response)}); not reviewable"
        )
    messages = sample.get("messages")
    if isinstance(messages, list):
        last = next((m for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "assistant"), None)
        if last is not None:
            text = _content_text(last.get("content"), attachments) or ""
            if text != response:
                return (
                    "the sample's answer is read two ways: the conversation's last assistant turn is not the text "
                    f"of output.choices[0] (what reviewers would see) ({_differ(text, response)}); not reviewable"
                )
    return None


def _differ(a: str, b: str) -> str:
    """Where two texts part (a short, escaped description for a message)."""
    at = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"{len(a):,} and {len(b):,} characters, first different at character {at + 1:,}"


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
    """The first choice's text (without choices, a non-empty ``completion``); None when the model produced no output."""
    if output is None:
        return None
    if not isinstance(output, dict):
        raise _Malformed(f"field 'output' must be an object, got {_type(output)}")
    choices = output.get("choices")
    if not choices:
        # A solver that set the completion itself (no choices): the text Inspect shows is the completion.
        completion = output.get("completion")
        return _resolve(completion, attachments) if isinstance(completion, str) and completion else None
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
