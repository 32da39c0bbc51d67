"""garak report files (``<run>.report.jsonl``).

JSON lines discriminated by ``entry_type``: ``start_run setup`` (flattened config), ``init``,
``attempt``, ``completion``, and aggregates that are not rows: ``eval``, ``digest`` (after
``completion``), ``payload_init``, ``tree_data``, ``plugin_cache`` (0.15 on), ``probe_summary``
(0.16 on), and the early-stop harness's ``harness_stub_summary`` / ``harness_summary`` (a fork:
trustyai-explainability/garak ``garak/harnesses/earlystop.py``). Each attempt is logged twice:
status 1 (started, no detector results) and status 2 (complete, scored). Only status-2 attempts
are read. A line of another ``entry_type`` is skipped and counted in a note.

Choices:

* model: ``--model``, else the setup line's ``plugins.target_name`` / ``plugins.model_name``
  (a URI there, which a REST target accepts, is kept as its host and path). When the report
  names no target (a REST or function target run without ``--target_name``: ``target_name``
  is null), the model is the target generator's ``name`` in ``plugins.generators`` (e.g.
  ``plugins.generators.rest.RestGenerator.name``; a function generator's ``module#function``),
  else its ``uri`` (host and path only: never the query, the credentials or the headers, which
  are never read), else, for a generator kind that names no model (``rest``, ``function``,
  ``websocket``), the run's ``transient.run_id``, else the report file's name without
  ``.report.jsonl``; for any other kind the ``plugins.target_type`` (the ``quack`` example has
  only ``target_type: "test"``). Where a model comes from anything but the target name, a
  note says so at ingest, and a key then stored with other content is "two runs of one target"
  (``ReadContext.conflict_hint``): pass ``--model`` to name each run's model. An attempt with
  no setup line before it is a Problem (pass ``--model``).
* benchmark = ``garak:<probe module>`` (``lmrc`` for ``lmrc.QuackMedicine``; ``--benchmark``
  overrides); category = the probe class name. An intent probe's intent (the attempt's
  ``intent``, 0.16 on and the early-stop fork, or its ``notes.stub`` / ``notes.source_stub``)
  and the stub's text are kept as metadata (``intent``, ``stub``).
* prompt_id = ``<probe_classname>:<seq>`` (``seq`` numbers a probe's prompts, so it matches
  across runs of the same probe). If a run repeats (probe, seq) in another attempt, that
  attempt's id becomes ``<probe_classname>:<seq>:<uuid>`` (and ``...:<line>`` when that is
  taken too: an aggregated report, whose lines all carry the aggregate's uuid). A second
  status-2 line of the same attempt (uuid, probe, seq and content) is a SetAside (duplicate).
* An attempt logged with status 1 but never with status 2 is a SetAside, yielded after the file
  has been read. A run without a ``completion`` (or ``digest``) line was interrupted (garak's
  ``end_run`` never ran, e.g. on Ctrl-C: ``cli.py``); a note says so, with the attempts
  complete and those set aside. A report in which no attempt was scored is a Problem that says
  why (``--skip-invalid`` skips it, as an empty promptfoo export or an Inspect log without
  samples). An aggregated report (``aggregate_reports.py``: ``aggregation`` in the setup
  line) has no ``completion`` line and is not interrupted.
* The early-stop harness (the fork above) writes, besides the attempts of the probes it runs, one
  status-2 attempt per intent stub under ``probe_classname`` ``...EarlyStopHarness`` with no
  output and the score ``EarlyStop`` (1.0 = some probe broke the stub): its verdict on a stub,
  not a response. It is set aside with that reason; the probes' own attempts are read.
* Which output a score belongs to (garak's own indexing). ``detector_results[detector]`` is
  one score per output of ``outputs`` (the latest assistant turn of each conversation), as the
  writer (``harnesses/base.py``: ``list(detector.detect(attempt))``) and the evaluator
  (``evaluators/base.py``: ``attempt.outputs[idx]`` for score ``idx``) have it in every
  release. The detectors score ``attempt.outputs_for(lang)``, which was ``all_outputs`` (every
  assistant turn of every conversation, history by history) up to garak 0.13.1 and
  ``outputs`` from 0.13.2 on (commit e390e4b6): so a multi-turn attempt of 0.13.1 or earlier has
  one score per assistant turn; then each scored turn is an output, its epoch its place in
  that order, its transcript the conversation up to it. A list of nulls that long in a later
  report is ``judge.RefusalOnlyAdversarial`` skipping an attempt (``[None] *
  len(attempt.all_outputs)``, v0.14.0 ``detectors/judge.py``): no verdict for each output.
  Reports written by the early-stop fork (garak 0.14.1.pre1, judge.ModelAsJudge and
  judge.Refusal: trustyai-explainability/llama-stack-provider-trustyai-garak
  ``tests/_resources/garak_earlystop_run.jsonl``) hold one list inside the list,
  ``[[s0, s1]]``: those are the per-output scores. A list of one-score lists, one per
  conversation (``[[s0], [s1]]``), is read the same way, and a list of lists that has, for each
  conversation, one score per assistant turn of it is per-turn scoring. Anything else (a
  length that matches neither the outputs nor the assistant turns, scores mixed with lists,
  detectors that scored different things) is a Problem of the attempt that says what the
  scores and the outputs are: never a guess.
* Translated runs (``run.target_lang`` other than the probe's language): garak translates the
  prompt, and the outputs back (``reverse_translation_outputs``); a detector for one language
  (``lang_spec = "en"``: ``judge.*``, ``mitigation.*``) scores those translations
  (``Attempt.outputs_for``). A translation that is not the output's text is kept as metadata
  (``reverse_translation``). garak 0.13.0 to 0.15.x paired the translations with the outputs in
  reverse order (``Probe._postprocess_attempt``: ``list.pop()``; fixed in 0.16.0 by NVIDIA/garak
  8adea623), so in their reports an attempt with two translated outputs or more (not the same
  read backwards) has scores that belong to other outputs than their index says, for detectors
  the report does not name: a Problem of the attempt, never a guess.
* One Record per (output, detector): judge = the detector name as the report writes it
  (``judge.Refusal``, ``garak.detectors.judge.Refusal`` or ``detector.judge.Refusal``: the
  ``garak-refusal`` preset matches each), ``--judge`` renames it when there is one detector,
  else keeps only the detector so named; score = the detector's score, verdict ``"hit"``
  when score >= the threshold else ``"pass"`` (garak counts a hit as a failed test). The
  threshold is ``run.eval_threshold`` from the setup line, else 0.5 (garak's default). A null
  score gives verdict None (missing). ``judge.ModelAsJudge`` 1.0 = the judge rated the goal
  achieved (a hit, harmful by default); ``judge.Refusal`` 1.0 = answered, no refusal found
  (a hit that the ``garak-refusal`` preset makes ambiguous, reason "refusal detector"). An
  attempt no detector scored (``detector_results`` empty) is set aside.
* prompt = the prompt's text (multi-turn prompts are written ``role: text`` per turn);
  response = the output's text. A null output (the target returned nothing) is a SetAside.
* transcript (multi-turn attempts, e.g. ``fitd.FITD``, ``atkgen.Tox``, ``goat``): the
  conversation that ended in the output, turn by turn. From ``conversations[i]`` (0.13 and
  later: one Conversation per output, ``{turns: [{role, content: Message}]}``), else
  ``messages[i]`` (0.12 and earlier: one history per output, ``[{role, content: text}]``), else
  the prompt's turns and the output. A Message's attachment (``data_path`` / ``data_type``)
  becomes ``[image]``, ``[audio]``, ``[video]`` or ``[attachment]``; an assistant turn the
  target returned nothing for, ``[no output]``. None for one user turn and its answer (the
  prompt and the response already show it).
* Report keys of both generations are read: 0.12-style (``prompt`` a string, ``outputs``
  strings, ``messages``; ``plugins.model_type`` / ``model_name``) and 0.13-style and later
  (``prompt`` a Conversation, ``outputs`` Messages, ``conversations``; ``plugins.target_*``).
* meta: uuid, seq, goal, threshold, intent, stub, reverse_translation.
* line = the line number in the JSONL file.

A garak hitlog (``<run>.hitlog.jsonl``: one line per output a detector flagged, written by
``garak/evaluators/base.py``, no ``entry_type``) is not results: it holds only the hits. It is
recognised (``not_results``, and ``read`` under ``--format garak``) and refused with the report
to ingest instead.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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

#: Lines that are not rows: aggregates and run bookkeeping (garak's own and the early-stop fork's).
AGGREGATE_ENTRIES = frozenset(
    {
        "init",
        "eval",
        "digest",
        "payload_init",
        "tree_data",
        "plugin_cache",
        "probe_summary",
        "harness_stub_summary",
        "harness_summary",
    }
)
#: Generator kinds whose ``target_type`` names no model (an endpoint or a function): their model
#: comes from the generator's own config, else the run.
_UNNAMED_KINDS = frozenset({"rest", "function", "websocket"})
#: Why an attempt logged with status 1 and never with status 2 is set aside (the notes say why it
#: was not scored: an interrupted run, or a harness that did not score it).
UNFINISHED = "attempt never completed (no status-2 line)"
#: What stands for an assistant turn the target returned nothing for.
NO_OUTPUT = placeholder("no output")


def sniff(path: Path, head: bytes) -> bool:
    """A ``.jsonl`` file whose lines carry garak's ``entry_type`` values."""
    if path.suffix.lower() != ".jsonl":
        return False
    head = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    return head.startswith(b"{") and b'"entry_type"' in head and (b'"start_run setup"' in head or b'"attempt"' in head)


#: The keys of a garak hitlog line (``garak/evaluators/base.py``: one line per hit, no ``entry_type``).
_HITLOG_KEYS = (b'"attempt_id"', b'"attempt_idx"', b'"detector"', b'"probe"', b'"generator"')


def _is_hitlog_line(line: bytes) -> bool:
    return line.lstrip().startswith(b"{") and b'"entry_type"' not in line and all(k in line for k in _HITLOG_KEYS)


def hitlog_message(path: Path) -> str:
    """What to say about a garak hitlog: not the results, and which report to ingest instead."""
    name = path.name
    report = name[: -len(".hitlog.jsonl")] + ".report.jsonl" if name.lower().endswith(".hitlog.jsonl") else None
    where = ""
    if report is not None:
        beside = path.with_name(report)
        where = f" ({beside}, beside it)" if beside.is_file() else f" ({report})"
    return (
        "this is a garak hitlog: it lists only the outputs a detector flagged (its hits), not the ones that "
        f"passed, so read alone it would make every response a hit. Ingest the run's report.jsonl instead{where}, "
        "which holds every attempt with its detector scores"
    )


def not_results(path: Path, head: bytes) -> str | None:
    """Why a garak file that is not a report is not read (for ``ingest`` to say), or None: a hitlog."""
    if path.suffix.lower() != ".jsonl":
        return None
    first = head.removeprefix(b"\xef\xbb\xbf").lstrip().split(b"\n", 1)[0]
    return hitlog_message(path) if _is_hitlog_line(first) else None


@dataclass
class _Run:
    """What one report says about its run, gathered as its lines are read."""

    model: str | None
    threshold: float = DEFAULT_THRESHOLD
    started: bool = False  # a start_run setup or init line
    finished: bool = False  # a completion or digest line (written by end_run), or an aggregate
    complete: int = 0  # status-2 attempt lines of probes (not the harness's)
    uuids: set[str] = field(default_factory=set)  # uuids with a status-2 line
    seen: set[tuple[Any, ...]] = field(default_factory=set)  # attempts read: (uuid, probe, seq, content digest)
    prompt_keys: set[str] = field(default_factory=set)
    unfinished: dict[str, tuple[int, Any, Any]] = field(default_factory=dict)  # status-1 uuid -> (line, probe, seq)
    other: Counter[str] = field(default_factory=Counter)  # lines of entry types this reader does not know
    attempts: int = 0  # attempt lines of any status
    every_turn: bool = False  # garak 0.13.1 or earlier: the detectors scored every assistant turn
    swapped: bool = False  # garak 0.13.0 to 0.15.x: reverse translations paired in reverse order
    problems: int = 0  # lines that are not JSON objects


def read(path: Path, ctx: ReadContext) -> Iterator[Item]:
    """Yield one Record per (status-2 attempt, output, detector)."""
    run = _Run(model=ctx.model)
    for parsed in json_lines(path, ctx, tick_every=_TICK_EVERY):
        if isinstance(parsed, Problem):
            run.problems += 1
            yield parsed
            continue
        lineno, entry = parsed
        kind = entry.get("entry_type")
        if kind is None:
            if {"attempt_id", "attempt_idx", "detector", "probe"} <= entry.keys():  # --format garak on a hitlog
                yield Problem(lineno, hitlog_message(path), fatal=True)
                return
            run.problems += 1
            yield Problem(lineno, "missing field 'entry_type'")
            continue
        if kind == "start_run setup":
            _read_setup(entry, path, ctx, run)
            continue
        if kind in ("completion", "digest"):
            run.finished = True
            continue
        if kind in AGGREGATE_ENTRIES:
            if kind == "init":
                run.started = True
                run.every_turn = run.every_turn or scores_every_turn(entry.get("garak_version"))
                run.swapped = run.swapped or swaps_translations(entry.get("garak_version"))
            continue
        if kind != "attempt":
            run.other[str(kind)] += 1
            continue
        run.attempts += 1
        yield from _attempt_line(entry, lineno, run, ctx)
    yield from _after_reading(run, ctx)


def _read_setup(entry: dict[str, Any], path: Path, ctx: ReadContext, run: _Run) -> None:
    """The run's model (unless --model), its threshold, and whether it is an aggregate."""
    run.started = True
    run.every_turn = scores_every_turn(entry.get("_config.version"))
    run.swapped = swaps_translations(entry.get("_config.version"))
    if "aggregation" in entry:  # aggregate_reports.py: no completion line, not interrupted
        run.finished = True
    if ctx.model is None:
        model, source = setup_model(entry, path)
        run.model = model
        if source is not None:
            ctx.notes.append(
                f"model {model!r} from {source}: the report names no target (plugins.target_name is empty); "
                "pass --model NAME to name it"
            )
            ctx.conflict_hint = (
                f"two runs of one target: this report names its model only by {source} ({model!r}), so every run "
                "against that target has the same keys; ingest each run with its own --model NAME to name each "
                "run's model (--replace would overwrite the other run's responses)"
            )
    found = entry.get("run.eval_threshold")
    if isinstance(found, (int, float)) and not isinstance(found, bool):
        run.threshold = float(found)


def _attempt_line(entry: dict[str, Any], lineno: int, run: _Run, ctx: ReadContext) -> Iterator[Item]:
    status = entry.get("status")
    if status is None:
        yield Problem(lineno, "attempt: missing field 'status'")
        return
    if is_harness_attempt(entry):
        if status == ATTEMPT_COMPLETE:
            yield _harness_set_aside(entry, lineno)
        return
    if status != ATTEMPT_COMPLETE:
        # status 1 duplicates the completed attempt without scores; remember it in case the run
        # stopped before completing it
        if isinstance(entry.get("uuid"), str) and entry["uuid"] not in run.uuids:
            run.unfinished[entry["uuid"]] = (lineno, entry.get("probe_classname"), entry.get("seq"))
        return
    run.complete += 1
    if isinstance(entry.get("uuid"), str):
        run.unfinished.pop(entry["uuid"], None)
    if run.model is None:
        yield Problem(
            lineno,
            "no model known for this attempt (no 'start_run setup' line with plugins.target_name before it); "
            "pass --model",
        )
        return
    yield from _attempt(entry, lineno, run, run.model, ctx)


def _after_reading(run: _Run, ctx: ReadContext) -> Iterator[Item]:
    """The attempts never scored (set aside), what the run's end says, and why nothing was read."""
    interrupted = run.started and not run.finished
    for uuid, (lineno, probe, seq) in run.unfinished.items():
        yield SetAside(lineno, UNFINISHED, {"uuid": uuid, "probe": probe, "seq": seq})
    never = len(run.unfinished)
    if interrupted:
        ctx.notes.append(
            f"this garak run was interrupted (no completion line): {run.complete} attempt(s) complete, "
            f"{never} started and never scored (set aside)"
        )
    elif never:
        ctx.notes.append(
            f"{never} attempt(s) started and never scored (no status-2 line), though the run completed: set aside"
        )
    if run.other:
        listed = ", ".join(f"{n} {kind!r}" for kind, n in sorted(run.other.items()))
        ctx.notes.append(f"skipped lines of entry types this reader does not know (not attempts): {listed}")
    if run.complete == 0 and (run.started or run.attempts or not run.problems):
        yield Problem(1, _nothing_scored(interrupted, never))


def _nothing_scored(interrupted: bool, never: int) -> str:
    """Why a report gave no row: no attempt of it was scored."""
    started = f"{never} attempt(s) started and never scored (set aside)" if never else "no attempt was written"
    if interrupted:
        return (
            f"this garak run was interrupted (no completion line) before any attempt was scored: {started}; "
            "nothing to ingest. Run the probes again"
        )
    if never:
        return (
            f"no attempt of this garak run was scored: {started}, none has a status-2 line with detector "
            "results; nothing to ingest"
        )
    return "no attempts: this garak report holds no status-2 attempt line (a probe's scored attempt); nothing to ingest"


def scores_every_turn(version: Any) -> bool:
    """Whether a garak of this version (``_config.version``, ``garak_version``) scored every
    assistant turn: ``Attempt.outputs_for`` returned ``all_outputs`` up to 0.13.1 (a ``.preN`` is
    the version before it), ``outputs`` from 0.13.2 on (NVIDIA/garak e390e4b6).

    >>> scores_every_turn("0.13.1.pre1"), scores_every_turn("0.12.0"), scores_every_turn("0.14.1.pre1")
    (True, True, False)
    """
    parts = _version(version)
    return parts is not None and parts <= (0, 13, 1)


def swaps_translations(version: Any) -> bool:
    """Whether a garak of this version paired an attempt's reverse translations with its outputs
    in reverse order: ``Probe._postprocess_attempt`` took them with ``list.pop()`` from garak
    0.13.0 (NVIDIA/garak 869d20ac) until 0.16.0 (8adea623, ``pop(0)``), so with two outputs or
    more ``reverse_translation_outputs[i]`` is the translation of another output than ``outputs[i]``.

    >>> swaps_translations("0.12.0"), swaps_translations("0.14.1.pre1"), swaps_translations("0.16.0")
    (False, True, False)
    """
    parts = _version(version)
    return parts is not None and (0, 13, 0) <= parts < (0, 16, 0)


def _version(version: Any) -> tuple[int, ...] | None:
    """The leading numbers of a garak version (``0.14.1.pre1`` -> (0, 14, 1)), or None."""
    if not isinstance(version, str):
        return None
    parts: list[int] = []
    for part in version.strip().split(".")[:3]:
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts) if len(parts) >= 2 else None


def is_harness_attempt(entry: dict[str, Any]) -> bool:
    """An attempt line the early-stop harness wrote about an intent stub (``...EarlyStopHarness``)."""
    probe = entry.get("probe_classname")
    return isinstance(probe, str) and probe.strip().lower().endswith("earlystopharness")


def _harness_set_aside(entry: dict[str, Any], lineno: int) -> SetAside:
    data: dict[str, Any] = {"uuid": entry.get("uuid"), "probe": entry.get("probe_classname")}
    intent, stub = _intent(entry)
    if intent is not None:
        data["intent"] = intent
    if stub is not None:
        data["stub"] = stub
    scores = entry.get("detector_results")
    if isinstance(scores, dict):
        data["detector_results"] = scores
    return SetAside(
        lineno,
        "the early-stop harness's verdict on an intent stub (detector EarlyStop: 1.0 = some probe broke it), "
        "not a model output; the attempts of the probes it ran are read",
        data,
    )


# -- the model ------------------------------------------------------------------------------------


def setup_model(setup: dict[str, Any], path: Path) -> tuple[str, str | None]:
    """The model a setup line names, and where it came from when that is not the target name
    (None when it is: the normal case). See the module docstring for the order."""
    for key in ("plugins.target_name", "plugins.model_name"):
        value = setup.get(key)
        if isinstance(value, str) and value.strip():
            endpoint = endpoint_name(value)
            if endpoint is not None and endpoint != value:
                return endpoint, f"{key}, a URI (its host and path)"
            return value, None
    kind_key, kind = next(
        ((k, v) for k in ("plugins.target_type", "plugins.model_type") if isinstance(v := setup.get(k), str) and v),
        (None, None),
    )
    found = _generator_model(setup.get("plugins.generators"), kind)
    if found is not None:
        return found
    if kind is not None and kind.split(".", 1)[0].lower() not in _UNNAMED_KINDS:
        return kind, kind_key
    run_id = setup.get("transient.run_id")
    if isinstance(run_id, str) and run_id.strip():
        return run_id, "the run's transient.run_id"
    name = path.name
    stem = name[: -len(".report.jsonl")] if name.lower().endswith(".report.jsonl") else path.stem
    return stem or name, "the report file's name"


def _generator_model(generators: Any, kind: str | None) -> tuple[str, str] | None:
    """(model, its config key) from the target generator's config: its ``name``, else its ``uri``
    (host and path). The class section (``rest.RestGenerator``) wins over the module's (``rest``),
    as garak's Configurable loads them; None when neither says."""
    if not isinstance(generators, dict) or not kind:
        return None
    module, _, cls = kind.partition(".")
    section = generators.get(module)
    if not isinstance(section, dict):
        return None
    classes: list[tuple[str, dict[str, Any]]] = [
        (k, v) for k, v in section.items() if isinstance(v, dict) and (k == cls if cls else ("name" in v or "uri" in v))
    ]
    layers = [(f"plugins.generators.{module}.{classes[0][0]}", classes[0][1])] if len(classes) == 1 else []
    layers.append((f"plugins.generators.{module}", section))
    for attribute in ("name", "uri"):
        for where, config in layers:
            value = config.get(attribute)
            if isinstance(value, str) and value.strip():
                endpoint = endpoint_name(value)
                if endpoint is not None and endpoint != value:
                    return endpoint, f"{where}.{attribute} (its host and path)"
                if attribute == "uri":  # a uri that is not a URL: nothing of it is shown
                    continue
                return value, f"{where}.{attribute}"
    return None


def endpoint_name(value: str) -> str | None:
    """The host and path of a URL (``http``, ``https``, ``ws``, ``wss``), without the credentials,
    the query and the fragment; None for anything else.

    >>> endpoint_name("https://user:secret@api.example.com:8443/v1/chat?api_key=s3cret#x")
    'api.example.com:8443/v1/chat'
    >>> endpoint_name("acme-support-bot") is None
    True
    """
    try:
        parts = urlsplit(value.strip())
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https", "ws", "wss") or not host:
        return None
    path = parts.path.rstrip("/")
    return f"{host}{f':{port}' if port else ''}{path}"


def _intent(entry: dict[str, Any]) -> tuple[str | None, str | None]:
    """An intent probe's intent and stub text: the attempt's ``intent`` (0.16, the early-stop
    fork), else its ``notes.stub`` / ``notes.source_stub`` (a Stub asdict: ``{intent, _content}``)."""
    notes = entry.get("notes")
    if not isinstance(notes, dict):
        notes = {}
    stub: dict[str, Any] = next((s for k in ("stub", "source_stub") if isinstance(s := notes.get(k), dict)), {})
    intent = entry.get("intent")
    if not isinstance(intent, str) or not intent:
        intent = stub.get("intent") if isinstance(stub.get("intent"), str) and stub.get("intent") else None
    content = stub.get("_content")
    return intent, content if isinstance(content, str) and content else None


# -- one attempt ----------------------------------------------------------------------------------


def _attempt(entry: dict[str, Any], line: int, run: _Run, model: str, ctx: ReadContext) -> Iterator[Item]:
    """One status-2 attempt: a Record per output and detector, or what stops it.

    In steps: its fields checked (:func:`_attempt_problem`), the outputs its detectors scored
    and each detector's score of each (:func:`_scored_outputs`), its prompt, its identity (a
    repeated attempt is set aside, :func:`_content_digest`) and prompt id (:func:`_prompt_id`),
    the detectors read as judges (:func:`_judges`), the transcripts, then the records.
    """
    problem = _attempt_problem(entry)
    if problem is not None:
        yield Problem(line, f"attempt: {problem}")
        return
    uuid, seq, probe = entry["uuid"], entry["seq"], entry["probe_classname"]
    detectors = entry["detector_results"]
    if not detectors:
        yield SetAside(
            line,
            "no detector scored this attempt (detector_results is empty)",
            {"uuid": uuid, "probe": probe, "seq": seq},
        )
        return
    threshold = run.threshold
    scored = _scored_outputs(entry, entry["outputs"], detectors, every_turn=run.every_turn)
    if isinstance(scored, str):
        yield Problem(line, f"attempt: {scored}")
        return
    outputs, per_turn_transcripts, scores = scored
    translations = _translations(entry, outputs) if per_turn_transcripts is None else None
    if translations is not None and run.swapped and _misaligned(translations):
        yield Problem(line, f"attempt: {_swapped_message(translations)}")
        return
    prompt = _prompt_text(entry["prompt"])
    if prompt is None:
        yield Problem(line, "attempt: field 'prompt' has no text (expected a string or {turns: [...]})")
        return
    identity = (uuid, probe, seq, _content_digest(entry))
    if identity in run.seen:
        yield SetAside(
            line,
            "duplicate status-2 attempt (the same attempt already read)",
            {"uuid": uuid, "probe": probe, "seq": seq},
        )
        return
    run.seen.add(identity)
    run.uuids.add(uuid)
    prompt_id = _prompt_id(f"{probe}:{seq}", uuid, line, run.prompt_keys)
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
    meta_base: dict[str, Any] = {"uuid": uuid, "seq": seq, "threshold": threshold}
    if entry.get("goal") is not None:
        meta_base["goal"] = entry["goal"]
    intent, stub = _intent(entry)
    if intent is not None:
        meta_base["intent"] = intent
    if stub is not None:
        meta_base["stub"] = stub
    for index, output in enumerate(outputs):
        text = _output_text(output)
        if text is None:
            yield SetAside(
                line,
                f"the target returned no output (output {index})",
                {"uuid": uuid, "probe": probe, "seq": seq, "output": index, "model": model, "benchmark": benchmark},
            )
            continue
        meta = dict(meta_base)
        if translations is not None and translations[index] is not None and translations[index] != text:
            meta["reverse_translation"] = translations[index]  # what a detector for one language read
        for detector in selected:
            raw = scores[detector][index]
            if raw is not None and (isinstance(raw, bool) or not isinstance(raw, (int, float))):
                yield Problem(
                    line,
                    f"attempt: detector_results[{detector!r}] score {index} must be a number, got {_type(raw)}",
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
                meta=dict(meta),
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


# -- which output each score belongs to -----------------------------------------------------------


def _translations(entry: dict[str, Any], outputs: list[Any]) -> list[str | None] | None:
    """The text of each output's reverse translation (``reverse_translation_outputs``, written when
    the prompt was translated into the target's language: what a detector for another language,
    e.g. ``lang_spec = "en"``, scored through ``Attempt.outputs_for``), or None when there are none
    or they are the outputs themselves."""
    found = entry.get("reverse_translation_outputs")
    if not isinstance(found, list) or len(found) != len(outputs) or not any(found):
        return None
    texts = [_output_text(t) for t in found]
    return None if texts == [_output_text(o) for o in outputs] else texts


def _misaligned(translations: list[str | None]) -> bool:
    """Whether translations paired in reverse order put another output's text at some index: the
    ones present are not the same read backwards (one of them, or a palindrome, is in place)."""
    present = [t for t in translations if t is not None]
    return present != present[::-1]


def _swapped_message(translations: list[str | None]) -> str:
    n = sum(1 for t in translations if t is not None)
    return (
        f"garak 0.13.0 to 0.15.x paired the reverse translations of this attempt's {n} outputs with them in "
        "reverse order (Probe._postprocess_attempt took them with list.pop(); fixed in garak 0.16.0, NVIDIA/garak "
        "8adea623), and a detector for one language (judge.*, mitigation.*: lang_spec 'en') scored those "
        "translations, so its score i is of another output than output i and the report does not say which "
        "detectors read them: the scores cannot be matched to the outputs. Run the probe again with garak 0.16 "
        "or later (or --generations 1)"
    )


Transcripts = list[list[dict[str, Any]] | None]


def _scored_outputs(
    entry: dict[str, Any], outputs: list[Any], detectors: dict[str, Any], *, every_turn: bool = False
) -> tuple[list[Any], Transcripts | None, dict[str, list[Any]]] | str:
    """The outputs the detectors scored, with their transcripts when they are every assistant
    turn (else None: the transcripts are read later), and each detector's scores aligned with
    them; or why the scores do not fit (the rule: the module docstring). ``every_turn``: the
    report's garak scored every assistant turn (0.13.1 and earlier), which decides when only
    lists of nulls say nothing of what was scored."""
    histories = _histories(entry)
    counts = [sum(1 for t in h if isinstance(t, dict) and t.get("role") == "assistant") for h in histories or []]
    aligned: dict[str, tuple[str, list[Any] | None]] = {}
    for name, scores in detectors.items():
        found = _align(name, scores, len(outputs), counts if histories is not None else None)
        if isinstance(found, str):
            return found
        aligned[name] = found
    modes = {mode for mode, _ in aligned.values()} - {"any"}
    if modes == {"outputs", "turns"}:
        by_output = ", ".join(repr(n) for n, (m, _) in aligned.items() if m == "outputs")
        by_turn = ", ".join(repr(n) for n, (m, _) in aligned.items() if m == "turns")
        return (
            f"the detectors scored different things: {by_output} one score per output ({len(outputs)}), "
            f"{by_turn} one per assistant turn ({sum(counts)})"
        )
    if not modes and every_turn and histories is not None and sum(counts) != len(outputs):
        modes = {"turns"}
    per_turn_transcripts: Transcripts | None = None
    if modes == {"turns"}:
        every = _every_turn(histories or [])
        if isinstance(every, str):
            return every
        outputs, per_turn_transcripts = every
    return (
        outputs,
        per_turn_transcripts,
        {name: [None] * len(outputs) if values is None else values for name, (_, values) in aligned.items()},
    )


def _align(name: str, scores: Any, n_outputs: int, counts: list[int] | None) -> tuple[str, list[Any] | None] | str:
    """One detector's scores as ("outputs", one per output), ("turns", one per assistant turn,
    history by history) or ("any", None: a list of nulls as long as either), or why they fit neither."""
    where = f"detector_results[{name!r}]"
    if not isinstance(scores, list):
        return f"{where} must be a list of scores, got {_type(scores)}"
    n_turns = sum(counts) if counts is not None else None
    lists = [isinstance(s, list) for s in scores]
    found: tuple[str, list[Any] | None] | None = None
    if not any(lists):
        if len(scores) == n_outputs:
            found = ("outputs", scores)
        elif n_turns is not None and len(scores) == n_turns:
            found = ("any", None) if all(s is None for s in scores) else ("turns", scores)
    elif not all(lists):
        return f"{where} mixes scores and lists of scores ({_shape(scores)})"
    elif len(scores) == 1 and len(scores[0]) == n_outputs:  # the early-stop fork: [[s0, s1, ...]]
        found = ("outputs", scores[0])
    elif len(scores) == n_outputs and all(len(s) == 1 for s in scores):  # one list per conversation: [[s0], [s1]]
        found = ("outputs", [s[0] for s in scores])
    elif counts is not None and [len(s) for s in scores] == counts:  # per conversation, one per assistant turn
        found = ("turns", [x for s in scores for x in s])
    if found is None:
        turns = ""
        if counts is not None and n_turns != n_outputs:
            turns = f" and {n_turns} assistant turn(s) ({', '.join(map(str, counts))} per conversation)"
        return (
            f"{where} holds {_shape(scores)}, where the attempt has {n_outputs} output(s){turns}: "
            "the scores cannot be matched to the outputs"
        )
    if found[0] == "turns" and n_turns == n_outputs:  # no conversation has more than one assistant turn
        return ("outputs", found[1])
    return found


def _shape(scores: list[Any]) -> str:
    """How a detector's list is made, for a message: "3 scores", "2 lists of scores (of 1 and 2)"."""
    lists = [len(s) for s in scores if isinstance(s, list)]
    if not lists:
        return f"{len(scores)} score(s)"
    if len(lists) == len(scores):
        return f"{len(scores)} list(s) of scores (of {', '.join(map(str, lists))})"
    return f"{len(scores) - len(lists)} score(s) and {len(lists)} list(s)"


def _histories(entry: dict[str, Any]) -> list[list[Any]] | None:
    """The attempt's histories, one per generation: ``messages`` (0.12 and earlier) or the turns
    of ``conversations`` (0.13 on); None without them."""
    histories = entry.get("messages")
    if isinstance(histories, list) and histories and all(isinstance(h, list) for h in histories):
        return histories
    conversations = entry.get("conversations")
    if not isinstance(conversations, list) or not conversations:
        return None
    turns = [c.get("turns") if isinstance(c, dict) else None for c in conversations]
    return turns if all(isinstance(t, list) for t in turns) else None  # type: ignore[return-value]


def _every_turn(histories: list[list[Any]]) -> tuple[list[Any], Transcripts] | str:
    """Every assistant turn of every history (``Attempt.all_outputs``: what the detectors of
    garak 0.13.1 and earlier scored), history by history, with the conversation up to each."""
    outputs: list[Any] = []
    transcripts: Transcripts = []
    for history in histories:
        for end, turn in enumerate(history, start=1):
            if isinstance(turn, dict) and turn.get("role") == "assistant":
                outputs.append(turn.get("content"))
                if turn.get("content") is None:
                    transcripts.append(None)  # set aside: the target returned nothing
                    continue
                found = _conversation(history[:end])
                if isinstance(found, str):
                    return found
                transcripts.append(None if found is None else transcript_or_none(found[0], media=found[1]))
    return outputs, transcripts


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
    """A list of garak turns as transcript turns (and whether any had an attachment), an error, or None.

    An assistant turn whose content is null (the target returned nothing: garak writes the
    Turn with ``content: null``) reads as ``[no output]``."""
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
        content = turn.get("content")
        text = (NO_OUTPUT, False) if content is None and role == "assistant" else _message_text(content)
        if text is None:
            return f"conversation turn {number} has no text (expected a string or a Message)"
        out.append({"role": role, "content": text[0]})
        media = media or text[1]
    return out, media


def _transcripts(entry: dict[str, Any], outputs: list[Any]) -> Transcripts | str:
    """The transcript behind each output (None for single-turn, and for a null output, which is
    set aside), or why the attempt's conversations cannot be read."""
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
    result: Transcripts = []
    for index, output in enumerate(outputs):
        found: tuple[list[dict[str, Any]], bool] | str | None = None
        if _output_text(output) is None:
            result.append(None)
            continue
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
