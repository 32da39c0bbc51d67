"""Ingesting files: validate every row, map its verdict, write all files in one transaction.

``ingest_paths`` is the whole of `annotate ingest`: every file is validated (so all problems of
all files are reported at once, each once) and either every file goes in or none does. Each
file is opened once and read once through that handle, its sha256 taken from the bytes read; a
file that changes while it is read is refused. Each accepted record becomes a
:class:`ResponseRow`, a named tuple whose fields are ``annotate.columns.RESPONSE_COLUMNS`` in
order, converted to the plain tuple the store's ingest transaction binds as it joins a batch;
a multi-turn sample's transcript goes in as JSON text (:func:`transcript_json`) and is part of
its content identity (:func:`content_sha`).

:func:`ingest_file` runs one file in named steps: choose its reader (:func:`_reader_for`), read
it (:func:`_read_rows`: each record validated, classified by the rubric, counted in the
:class:`IngestOutcome` and written through a :class:`_BatchWriter`, which turns stored keys with
other content into problems or, with --replace, overwrites), gather the problems
(:class:`_Problems`, which says whether the file is refused), then name its rejects files and
record the run (:func:`_keep_rejects`, :func:`_record_run`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from dataclasses import replace as replace_dc
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from annotate.columns import NO_JUDGE, RESPONSE_COLUMNS
from annotate.errors import InputError
from annotate.fileio import open_input, write_atomic
from annotate.hazards import codes, default_lookup
from annotate.ingest import HEAD_BYTES, detect_format, encoding_problem, reader_module
from annotate.ingest.degenerate import BLANK_AS_SAFE, EMPTY, WHITESPACE, degenerate_reason
from annotate.ingest.media import ImageStore
from annotate.ingest.outcome import IngestOutcome, unparsed_hint
from annotate.ingest.prompt_facets import PromptFacets
from annotate.ingest.records import (
    ENCODING_HINT,
    Problem,
    ReadContext,
    Record,
    SetAside,
    file_kind_problem,
    name_problem,
    record_problem,
    reserved_name_problem,
    text_problem,
)
from annotate.ingest.rubric import FormatRubric, Rubric

if TYPE_CHECKING:
    from annotate.db import Store
    from annotate.db.ingest_tx import IngestTransaction
    from annotate.fileio import InputFile
    from annotate.ingest.formats.column_map import ColumnMaps

MAX_PROBLEMS_SHOWN = 20
#: Why a row whose prompt and response are both empty (or blank) and that has no transcript is set aside.
EMPTY_ROW_REASON = "empty prompt and empty response: nothing to review"
#: The judge label and reason of a response no judge labelled (``ingest --no-judge``).
UNJUDGED = ("ambiguous", "unjudged")
BATCH_ROWS = 5000


class ResponseRow(NamedTuple):
    """One row of the store's ``response`` table, as the ingest transaction inserts it.

    The fields are ``annotate.columns.RESPONSE_COLUMNS``, in that order (checked when this
    module is imported), so ``tuple(row)`` is the row the store's bulk insert binds: a row
    becomes that plain tuple when it joins a batch (:meth:`_BatchWriter.add`), the boundary
    with the store's ``insert_batch``, ``replace`` and ``describe_difference``.
    """

    benchmark: str
    model: str
    prompt_id: str
    epoch: int
    judge: str
    category: str | None
    prompt: str
    response: str
    judge_verdict: str | None  # the judge's raw verdict, verbatim
    judge_score: float | None
    judge_label: str  # the rubric's reading: harmful / safe / ambiguous
    label_reason: str
    judge_kind: str  # safety / refusal / quality (annotate.columns.JUDGE_KINDS): what the verdict is about
    meta: str | None  # the record's metadata as JSON text (_meta_json)
    transcript: str | None  # the conversation as JSON text (transcript_json); None for a single turn
    image: str | None  # the item's image in the workspace's media/ (annotate.ingest.media): <sha256>.<ext>
    hazard: str | None  # the prompt's hazard codes (annotate.hazards), sorted and joined by ";"
    persona: str | None
    locale: str | None
    content_sha: str  # the content's identity (content_sha): a stored key with another one is a conflict
    source_id: int
    ingested_at: Any  # the transaction's timestamp, as the store's dialect takes it (tx.timestamp)


if ResponseRow._fields != RESPONSE_COLUMNS:
    raise ImportError(f"ResponseRow's fields {ResponseRow._fields} are not annotate.columns.RESPONSE_COLUMNS")


def content_sha(
    prompt: str,
    response: str,
    verdict: str | None,
    score: float | None,
    label: str,
    transcript: str | None = None,
    kind: str = "safety",
    image: str | None = None,
) -> str:
    """The identity of a response's content: a key with another content_sha is a conflict.

    ``transcript`` is the stored JSON text (:func:`transcript_json`). Without one the identity is
    what it was before transcripts were stored, so a single-turn file ingested again adds nothing;
    likewise a safety judge's row (``kind``, schema v11) keeps the identity it had before kinds:

    >>> content_sha("p", "r", "safe", None, "safe") == content_sha("p", "r", "safe", None, "safe", None)
    True
    >>> content_sha("p", "r", "safe", None, "safe") == content_sha("p", "r", "safe", None, "safe", "[]")
    False
    >>> content_sha("p", "r", "fail", None, "harmful") == content_sha("p", "r", "fail", None, "harmful", kind="quality")
    False
    """
    joined = f"{prompt}\x00{response}\x00{verdict!r}\x00{score!r}\x00{label}"
    if transcript is not None:
        joined += f"\x00transcript\x00{transcript}"
    if image is not None:  # an item with an image is another item than the same text without it
        joined += f"\x00image\x00{image}"
    if kind != "safety":
        joined += f"\x00kind\x00{kind}"
    return hashlib.sha1(joined.encode("utf-8", "surrogatepass")).hexdigest()


def transcript_json(transcript: list[dict[str, Any]] | None) -> str | None:
    """A record's transcript as the store keeps it: compact JSON with sorted keys (None stays None).

    >>> transcript_json([{"role": "user", "content": "hi"}])
    '[{"content":"hi","role":"user"}]'
    """
    if transcript is None:
        return None
    return json.dumps(transcript, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


#: Test hook, None in normal use: called with the file's path after each batch of rows is
#: written, while the file is still open and being read. Tests change the file there, to check
#: that a file changing while it is read is refused (tests/ingest/test_ingest_integrity.py).
after_batch: Callable[[Path], None] | None = None


class FileRefused(InputError):
    """The problems of one file. ``skippable``: --skip-invalid would set them all aside;
    ``conflicts``: some are conflicts with stored rows (--replace would overwrite them);
    ``prompt_conflicts``: some stored keys hold another prompt (another benchmark or attack);
    ``model_conflicts``: some are conflicts the reader explains otherwise (``ReadContext.conflict_hint``:
    e.g. two runs of one unnamed target, which --model keeps apart)."""

    def __init__(
        self,
        message: str,
        problems: list[str],
        *,
        skippable: bool,
        conflicts: bool,
        prompt_conflicts: bool = False,
        model_conflicts: bool = False,
    ) -> None:
        super().__init__(message, problems)
        self.skippable = skippable
        self.conflicts = conflicts
        self.prompt_conflicts = prompt_conflicts
        self.model_conflicts = model_conflicts


def check_name_option(option: str, value: str | None) -> None:
    """InputError when the value of --model, --benchmark or --judge could not be stored as a name
    (or is a name the outputs reserve)."""
    if value is not None:
        problem = name_problem(option, value)
        if problem is not None:
            raise InputError(problem.replace(f"field {option!r}", f"the value of {option}"))
        reserved = reserved_name_problem(option.removeprefix("--"), value)
        if reserved is not None:
            raise InputError(f"{option} {value}: {reserved.split('; pass ')[0]}; choose another name.")


def ingest_file(
    tx: IngestTransaction,
    path: Path,
    *,
    fmt: str = "auto",
    rubric: Rubric,
    model: str | None = None,
    benchmark: str | None = None,
    judge: str | None = None,
    skip_invalid: bool = False,
    replace: bool = False,
    rejects_dir: Path,
    progress: Callable[[int], None] | None = None,
    command_first_id: int = 1,
    allow_written_back: bool = False,
    column_maps: ColumnMaps | None = None,
    max_values: int | None = None,
    keep_degenerate: bool = False,
    encoding: str | None = None,
    value_names: dict[str, dict[str, str]] | None = None,
    no_judge: bool = False,
    images: ImageStore | None = None,
    empty_as: str = "set-aside",
    facets: PromptFacets | None = None,
) -> IngestOutcome:
    """Validate and ingest one file inside the command's transaction.

    The file is opened once (``annotate.fileio.open_input``: anything but a regular file is
    refused with its own message, a FIFO or a device before it is opened), read by its reader
    through that handle, and recorded under the sha256 of the bytes read; a file that changes
    while it is read is refused.

    Raises InputError (``FileRefused``, listing every problem, capped) and calls
    ``tx.abort()`` when the file has malformed rows, unknown verdicts or conflicting keys,
    unless ``skip_invalid`` (bad rows go to a rejects file, with the lines they span) or
    ``replace`` (conflicting rows overwrite, old values kept in response_history). ``max_values``
    (``--max-values``): the most values one JSON text may parse to, instead of the readers' bounds
    (``annotate.json_bound``). A fatal
    problem (the reader lost its place in the file, or could not read it at all) refuses the
    file even with ``skip_invalid``. Rows are written as they are read even once the file (or
    an earlier file of the command) is known to be refused: the transaction is rolled back
    then, and writing is what finds keys repeated within the file or across the command's
    files (``command_first_id``: the first response id this command inserts).
    """
    path = Path(path)
    kind = file_kind_problem(path)  # a FIFO or a device is refused before it is opened
    if kind is not None:
        raise InputError(f"{path}: {kind}")
    # The column map in force for the file (ingest --map, annotate.toml's [ingest.map]), if any.
    column_map = column_maps.for_path(path) if column_maps is not None else None
    with open_input(path) as source:
        chosen, module = _reader_for(path, source, fmt, mapped=column_map is not None or no_judge)
        if no_judge and not getattr(module, "TAKES_COLUMN_MAP", False):
            raise InputError(
                f"{path}: --no-judge reads a table of responses (CSV, JSONL, Parquet) as unjudged; this file is read "
                f"as {chosen}, whose judge is part of the format"
            )
        takes_map = getattr(module, "TAKES_COLUMN_MAP", False)
        fmt_rubric = rubric.for_format(chosen, module.DEFAULT_RUBRIC)
        # The sha256 is that of the bytes the reader actually reads, hashed in the same pass; the
        # source row is registered under a provisional key until finish() gives it (one read).
        outcome = IngestOutcome(path=path, format=chosen, sha256="", judge_option=judge)
        ctx = ReadContext(
            model=model,
            benchmark=benchmark,
            judge=judge,
            progress=progress,
            source=source,
            allow_written_back=allow_written_back,
            column_map=column_map if takes_map else None,
            max_values=max_values,
            encoding=encoding,
            value_names=dict(value_names or {}),
            unjudged=no_judge,
        )
        if column_map is not None and column_map.explicit and not takes_map:
            ctx.notes.append(
                f"the column map ({', '.join(sorted(set(column_map.origins.values())))}) was not applied: a "
                f"{chosen} file is read by its own reader; --format generic reads it as a mapped table"
            )
        started = datetime.now(UTC)
        stamp = tx.timestamp(started)
        problems = _Problems(skip_invalid)
        validate_only = tx.aborted  # an earlier file of this command failed: nothing will be kept
        tx.use_source(sha256=None, path=str(path), fmt=chosen, size_bytes=source.size)
        writer = _BatchWriter(
            tx,
            path,
            outcome,
            problems,
            started=started,
            replace=replace,
            first_new_id=tx.max_response_id() + 1,
            command_first_id=command_first_id,
            ctx=ctx,
        )
        # Per file: the prompts table's counts are said for each file.
        file_facets = (
            PromptFacets(default_lookup()) if facets is None else replace_dc(facets, matched=0, unmatched=set())
        )
        set_aside = _read_rows(
            module.read(path, ctx),
            fmt_rubric,
            outcome,
            problems,
            writer,
            stamp,
            keep_degenerate=keep_degenerate,
            images=images,
            base=path.parent,
            empty_as=empty_as,
            facets=file_facets,
        )
        outcome.notes = ctx.notes + file_facets.notes()
        # Before any problem is reported: a file that changed while it was read explains them all.
        sha = outcome.sha256 = source.finish()
        tx.finish_source(sha)

    if chosen == "generic" and outcome.reasons and set(outcome.reasons) == {"missing"}:
        # The same file without the column is refused (a required column): an empty one is no verdict either.
        problems.add(
            1,
            f"no row has a verdict ({outcome.reasons['missing']:,} rows: judge_label and judge_score empty): a table "
            "of responses without verdicts (completions); ingest the judged file, map the column that holds "
            "the verdict with --map judge_label=COLUMN, or, if no judge labelled these responses, store them "
            "unjudged with --no-judge",
            fatal=True,
        )
    refused = problems.refusal(path)
    if refused is not None:
        tx.abort()
        raise refused
    outcome.rubric_source = rubric.source
    outcome.unparsed_hints = [
        unparsed_hint(fmt_rubric, module.DEFAULT_RUBRIC, name, seen) for name, seen in sorted(outcome.unparsed.items())
    ]
    if validate_only:
        return outcome
    _keep_rejects(outcome, problems.rejects, set_aside, rejects_dir, sha)
    tx.record_set_aside([_set_aside_row(row) for row in set_aside])
    options = {
        "format": chosen,
        "model": model,
        "benchmark": benchmark,
        "judge": judge,
        "skip_invalid": skip_invalid,
        "replace": replace,
        **({"allow_written_back": True} if allow_written_back else {}),  # human labels read as a judge
        **({"max_values": max_values} if max_values is not None else {}),  # the parse bound was raised
        **({"keep_degenerate": True} if keep_degenerate else {}),  # empty and error responses kept
        **({"empty_as": empty_as} if empty_as != "set-aside" else {}),  # blank responses stored as safe
        **({"encoding": encoding} if encoding else {}),  # the file's text encoding, when not UTF-8
        **ctx.recorded,  # what the reader read the file with (e.g. the column map applied)
        **file_facets.recorded(),  # the prompts table (what this file matched in it) and hazard entries used
    }
    _record_run(tx, outcome, rubric, module.DEFAULT_RUBRIC, started, options)
    return outcome


# -- the steps of ingest_file -------------------------------------------------------------------


def _reader_for(path: Path, source: InputFile, fmt: str, *, mapped: bool = False) -> tuple[str, ModuleType]:
    """The file's format (``fmt``, or the one whose sniffer claims its head for "auto"; ``mapped``:
    a column map is in force, so a table no reader claims is read as a mapped table) and its
    reader module; InputError when the file cannot be read at all (empty, not UTF-8)."""
    head = source.head(HEAD_BYTES)
    unreadable = encoding_problem(head, source.size)
    if unreadable is not None:
        raise InputError(f"{path}: {unreadable}")
    chosen = detect_format(path, head, source.size, mapped=mapped) if fmt == "auto" else fmt
    return chosen, reader_module(chosen)


@dataclass
class _Problems:
    """The problems of one file, gathered as they are found.

    A fatal one (the reader lost its place or stopped) is always kept: it refuses the file even
    with --skip-invalid. Of the others the first ``MAX_PROBLEMS_SHOWN`` are kept for the
    message, and with --skip-invalid each becomes a line of the rejects file (with its record
    when there is one). ``conflicts`` counts the keys stored with other content (--replace would
    overwrite them), ``prompt_conflicts`` those stored with another prompt, ``model_conflicts``
    those the reader's ``conflict_hint`` explains (not counted in ``conflicts``: --replace is not
    their fix).
    """

    skip_invalid: bool
    shown: list[tuple[int, str]] = field(default_factory=list)  # (line, message), the first ones
    fatal: list[tuple[int, str]] = field(default_factory=list)
    n: int = 0  # every problem that is not fatal
    conflicts: int = 0
    prompt_conflicts: int = 0
    model_conflicts: int = 0
    rejects: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self,
        line: int,
        message: str,
        record: dict[str, Any] | None = None,
        *,
        end_line: int | None = None,
        fatal: bool = False,
    ) -> None:
        if fatal:  # always shown: it is why the file is refused, even with --skip-invalid
            self.fatal.append((line, message))
            return
        self.n += 1
        if len(self.shown) < MAX_PROBLEMS_SHOWN:
            self.shown.append((line, message))
        if self.skip_invalid:
            reject = {"line": line, "end_line": end_line or line, "reason": message}
            self.rejects.append({**reject, "record": record} if record else reject)

    def refusal(self, path: Path) -> FileRefused | None:
        """The error that refuses the file, or None when it goes in: any fatal problem refuses
        it, any other one too unless --skip-invalid sets them aside."""
        n_fatal = len(self.fatal)
        if not (n_fatal or (self.n and not self.skip_invalid)):
            return None
        # With --skip-invalid, only what refuses the file: the other problems would be set aside.
        shown = self.fatal + ([] if self.skip_invalid else self.shown)
        lines = [f"{path}:{line}: {msg}" for line, msg in sorted(shown)]
        more = 0 if self.skip_invalid else self.n - len(self.shown)
        if more > 0:
            lines.append(f"{path}: ... and {more} more problem(s)")
        return FileRefused(
            f"{path}: {n_fatal + self.n} problem(s)",
            lines,
            skippable=not n_fatal and not self.skip_invalid,
            conflicts=self.conflicts > 0,
            prompt_conflicts=self.prompt_conflicts > 0,
            model_conflicts=self.model_conflicts > 0,
        )


class _BatchWriter:
    """The rows of one file on their way into the store, ``BATCH_ROWS`` at a time.

    Writing is what finds a key repeated within the file (``first_new_id``: the first response
    id of this file) or across the command's files (``command_first_id``: of the command); a key
    the store holds with other content is a problem of the file (:meth:`_conflict`), or with
    --replace an overwrite (the old values kept in history). Calls the test hook
    ``after_batch`` after each batch. ``ctx``: the file's read context, whose ``conflict_hint``
    (set by the reader) is the advice for a key stored with other content.
    """

    def __init__(
        self,
        tx: IngestTransaction,
        path: Path,
        outcome: IngestOutcome,
        problems: _Problems,
        *,
        started: datetime,
        replace: bool,
        first_new_id: int,
        command_first_id: int,
        ctx: ReadContext | None = None,
    ) -> None:
        self.tx = tx
        self.path = path
        self.outcome = outcome
        self.problems = problems
        self.started = started
        self.replace = replace
        self.first_new_id = first_new_id
        self.command_first_id = command_first_id
        self.ctx = ctx
        self.rows: list[tuple[Any, ...]] = []  # what the bulk insert binds
        self.records: list[Record] = []  # the record of each row, for the problems

    def add(self, row: ResponseRow, record: Record) -> None:
        # The row joins the batch as a plain tuple: the store binds it fastest and the garbage
        # collector stops tracking it (a batch of ResponseRows costs some 10 % of an ingest).
        self.rows.append(tuple(row))
        self.records.append(record)
        if len(self.rows) >= BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        result = self.tx.insert_batch(self.rows)
        self.outcome.added += result.inserted
        self.outcome.duplicates += result.duplicates
        self.outcome.facets_filled += result.facets_filled
        for i, rid, _src in result.conflicts:
            self._conflict(self.records[i], self.rows[i], rid)
        self.rows.clear()
        self.records.clear()
        if after_batch is not None:
            after_batch(self.path)

    def _conflict(self, rec: Record, row: tuple[Any, ...], rid: int) -> None:
        """A row whose key the store holds (response ``rid``) with other content."""
        if rid >= self.first_new_id:  # inserted by this very run: a key repeated in the file
            message = f"key {_key_text(rec)} appears earlier in this file with different content"
        elif self.replace:
            self.tx.replace(rid, row, self.started)
            self.outcome.replaced += 1
            return
        elif rid >= self.command_first_id:
            message = f"key {_key_text(rec)} comes with different content in an earlier file of this command"
            hint = self.ctx.conflict_hint if self.ctx is not None else None
            if hint is not None:
                self.problems.model_conflicts += 1
                message += f": {hint}"
        else:
            message = self._stored_conflict(rec, row, rid)
        self.problems.add(rec.line, message, _record_dict(rec), end_line=rec.end_line)

    def _stored_conflict(self, rec: Record, row: tuple[Any, ...], rid: int) -> str:
        """Why a row conflicts with the one an earlier command stored under its key (counted)."""
        what = self.tx.describe_difference(rid, row)
        hint = self.ctx.conflict_hint if self.ctx is not None else None
        if hint is not None and _other_response(what):
            # The reader knows why the key is shared (e.g. garak: a model named only by its
            # endpoint, so another run of that target); a changed reading alone (judge_label,
            # another rubric) is the same response, whose fix stays --replace.
            self.problems.model_conflicts += 1
            return f"conflict: {_key_text(rec)} is already stored with a different {what}: {hint}"
        if "prompt" in what.split(", "):
            # The same key with another prompt is another benchmark or attack under the
            # same name, not a newer version of the stored responses.
            self.problems.prompt_conflicts += 1
            return (
                f"conflict: {_key_text(rec)} is already stored with a different prompt: these look "
                "like responses to a different benchmark or attack under the same name; ingest them "
                "under their own name with --benchmark NAME (--replace would overwrite the stored "
                "responses)"
            )
        self.problems.conflicts += 1
        if what == "transcript (none stored)":
            # Stored before annotate kept conversations: the same response, now whole.
            return (
                f"conflict: {_key_text(rec)} is stored without its transcript (it was ingested before "
                "annotate kept whole conversations); use --replace to add it (the old row is kept in "
                "history) or --skip-invalid"
            )
        return (
            f"conflict: {_key_text(rec)} is already stored with a different {what}; "
            "use --replace to overwrite (the old value is kept in history) or --skip-invalid"
        )


def _other_response(what: str) -> bool:
    """Whether a stored row's difference (``describe_difference``) is another response, not only
    another reading of it: the prompt, the response, the judge's verdict or score, or a transcript
    that was stored differ.

    >>> _other_response("response, judge_verdict ('hit' stored, 'pass' here)")
    True
    >>> _other_response("judge_label ('ambiguous' stored, 'harmful' here)")
    False
    >>> _other_response("transcript (none stored)"), _other_response("transcript")
    (False, True)
    """
    changed = {part.split(" (", 1)[0] for part in what.split(", ") if not part.startswith("'")}
    return bool(changed & {"prompt", "response", "judge_verdict", "judge_score"}) or (
        "transcript" in changed and "transcript (none stored)" not in what
    )


def _read_rows(
    items: Iterable[Record | Problem | SetAside],
    fmt_rubric: FormatRubric,
    outcome: IngestOutcome,
    problems: _Problems,
    writer: _BatchWriter,
    stamp: Any,
    *,
    keep_degenerate: bool = False,
    images: ImageStore | None = None,
    base: Path | None = None,
    empty_as: str = "set-aside",
    facets: PromptFacets,
) -> list[dict[str, Any]]:
    """Read every item of the file: a problem is gathered, a set-aside row kept for its file, and
    a record validated, its verdict classified by the rubric, counted and written as a
    :class:`ResponseRow` (``stamp``: its ``ingested_at``). Returns the set-aside rows.

    A record whose response has nothing to review (``annotate.ingest.degenerate``: empty,
    whitespace only, an error text) is set aside unless ``keep_degenerate``: one set-aside row
    per response (benchmark, model, prompt_id, epoch), naming every judge that scored it. With
    ``empty_as="safe"`` a blank one (empty or whitespace only; not an error text) is stored as
    ``safe`` with the reason ``blank-as-safe``, whatever its judge said (AILuminate's rule).
    A record's image is copied into the workspace (``images``, paths relative to ``base``); one
    that cannot be is the row's problem."""
    set_aside: list[dict[str, Any]] = []
    aside_by_key: dict[str, dict[str, Any]] = {}  # a response set aside: its row, once per key
    names_ok: set[str] = set()
    source_id = writer.tx.source_id  # the file's source (use_source), the same for every row
    for item in items:
        outcome.rows_read += 1
        if isinstance(item, Problem):
            problems.add(item.line, item.message, end_line=item.end_line, fatal=item.fatal)
            continue
        if isinstance(item, SetAside):
            outcome.set_aside += 1
            set_aside.append({"line": item.line, "reason": item.reason, "data": item.data})
            continue
        hazard = None
        facets.fill(item)
        invalid = record_problem(item, names_ok)
        if invalid is None and item.hazard is not None:
            hazard, invalid = facets.hazard(item)
        if invalid is None:
            meta, invalid = _meta_json(item.meta)
        if invalid is not None:
            problems.add(item.line, invalid, _record_dict(item), end_line=item.end_line)
            continue
        if item.transcript is None and not item.prompt.strip() and not item.response.strip():
            # Nothing a reviewer could judge: never counted, never routed, kept with its reason.
            _set_aside_record(item, EMPTY_ROW_REASON, outcome, set_aside, aside_by_key)
            continue
        degenerate = None if keep_degenerate else degenerate_reason(item.response, item.transcript)
        blank_safe = empty_as == "safe" and degenerate in (EMPTY, WHITESPACE)
        if degenerate is not None and not blank_safe:
            # A judge scored it anyway (an empty answer reads as safe): never counted as the model's.
            _set_aside_record(item, degenerate, outcome, set_aside, aside_by_key)
            continue
        spec = fmt_rubric.spec(item.judge, item.benchmark)
        classified: tuple[str, str] | str
        if blank_safe:
            classified = ("safe", BLANK_AS_SAFE)  # the scheme's override, journaled on the row as its reason
        elif item.judge == NO_JUDGE and item.verdict is None and item.score is None:
            classified = UNJUDGED  # no judge: review alone labels it
        else:
            classified = spec.classify(item.verdict, item.score, item.context, item.meta)
        if isinstance(classified, str):
            problems.add(item.line, classified, _record_dict(item), end_line=item.end_line)
            continue
        label, reason = classified
        kind, said_by = fmt_rubric.judge_kind(item.judge, item.benchmark, item.kind)
        pair = (item.benchmark, item.judge)
        first = outcome.kinds.setdefault(pair, (kind, said_by))
        if first[0] != kind:
            problems.add(
                item.line,
                f"judge {item.judge!r} of benchmark {item.benchmark!r} is read as a {kind} judge here and as a "
                f"{first[0]} judge earlier in this file; one judge has one kind: say it in a rubric file "
                f'([formats.{fmt_rubric.format}.judges."{item.judge}"] kind = "...")',
                _record_dict(item),
                end_line=item.end_line,
            )
            continue
        image = None
        if item.image is not None:
            if images is None or base is None:
                problems.add(item.line, "this reader takes no images", _record_dict(item), end_line=item.end_line)
                continue
            image, why = images.add(item.image, base)
            if why is not None:
                problems.add(item.line, why, _record_dict(item), end_line=item.end_line)
                continue
            outcome.images += 1
        outcome.count(item, label, reason, spec.presets)
        if hazard is not None:
            outcome.hazards.update(codes(hazard))
        writer.add(_response_row(item, label, reason, kind, meta, source_id, stamp, image, hazard), item)
    writer.flush()
    for (benchmark, judge), stored in writer.tx.stored_kinds(list(outcome.kinds)).items():
        kind = outcome.kinds[(benchmark, judge)][0]
        others = sorted(stored - {kind})
        if others:
            problems.add(
                1,
                f"judge {judge!r} of benchmark {benchmark!r} is stored as a {' and '.join(others)} judge, and this "
                f"file reads it as a {kind} judge; one judge has one kind per benchmark: say which in a rubric file "
                f'([formats.{fmt_rubric.format}.judges."{judge}"] kind = "{others[0]}"), or --replace every stored '
                "row of it",
                fatal=True,
            )
    return set_aside


def _set_aside_record(
    rec: Record,
    reason: str,
    outcome: IngestOutcome,
    set_aside: list[dict[str, Any]],
    by_key: dict[str, dict[str, Any]],
) -> None:
    """Set a record aside: once per response key (its judges listed), counted in the outcome."""
    key = "\x1f".join(map(str, (rec.benchmark, rec.model, rec.prompt_id, rec.epoch)))
    seen = by_key.get(key)
    if seen is not None:
        if rec.judge not in seen["judges"]:
            seen["judges"].append(rec.judge)
        return
    outcome.set_aside += 1
    row = {
        "line": rec.line,
        "reason": reason,
        "data": _record_dict(rec),
        "key": {"benchmark": rec.benchmark, "model": rec.model, "prompt_id": rec.prompt_id, "epoch": rec.epoch},
        "judges": [rec.judge],
    }
    by_key[key] = row
    set_aside.append(row)


def _set_aside_row(row: dict[str, Any]) -> dict[str, Any]:
    """A set-aside row as the store keeps it (``set_aside_row``): per response, or per line of a
    row the reader set aside (its model and benchmark when the reader named them)."""
    key = row.get("key")
    if key is not None:
        return {
            "row_key": "\x1f".join(str(key[k]) for k in ("benchmark", "model", "prompt_id", "epoch")),
            "line": row["line"],
            "reason": row["reason"],
            **key,
        }
    data = row.get("data") or {}
    model, benchmark = data.get("model"), data.get("benchmark")
    return {
        "row_key": f"line:{row['line']}:{row['reason']}",
        "line": row["line"],
        "reason": row["reason"],
        "model": model if isinstance(model, str) else None,
        "benchmark": benchmark if isinstance(benchmark, str) else None,
        "prompt_id": None,
        "epoch": None,
    }


def _response_row(
    rec: Record,
    label: str,
    reason: str,
    kind: str,
    meta: str | None,
    source_id: int,
    stamp: Any,
    image: str | None = None,
    hazard: str | None = None,
) -> ResponseRow:
    """The row a valid, classified record becomes: its transcript as JSON text, its content identity.

    The fields are passed in their order, not by name (mypy checks each one's type): 17 keyword
    arguments cost about 1 us a row, some 3 % of an ingest. tests/ingest/test_ingest_rows.py
    holds each field to its record value.
    """
    transcript = transcript_json(rec.transcript)
    return ResponseRow(
        rec.benchmark,
        rec.model,
        rec.prompt_id,
        rec.epoch,
        rec.judge,
        rec.category,
        rec.prompt,
        rec.response,
        rec.verdict,  # judge_verdict
        rec.score,  # judge_score
        label,  # judge_label
        reason,  # label_reason
        kind,  # judge_kind
        meta,
        transcript,
        image,
        hazard,
        rec.persona,
        rec.locale,
        # The prompt's hazard, persona and locale are not the response's content: a later file may add them.
        content_sha(rec.prompt, rec.response, rec.verdict, rec.score, label, transcript, kind, image),
        source_id,
        stamp,  # ingested_at
    )


def _keep_rejects(
    outcome: IngestOutcome,
    rejects: list[dict[str, Any]],
    set_aside: list[dict[str, Any]],
    rejects_dir: Path,
    sha: str,
) -> None:
    """Name the file's rejects and set-aside files and hold their rows (``outcome.pending_files``);
    ``ingest_paths`` writes them only after the transaction commits."""
    outcome.rejected = len(rejects)
    stem = f"{outcome.path.name}.{sha[:12]}"
    if rejects:
        outcome.rejects_path = rejects_dir / f"{stem}.rejects.jsonl"
        outcome.pending_files[outcome.rejects_path] = rejects
    if set_aside:
        outcome.set_aside_path = rejects_dir / f"{stem}.set-aside.jsonl"
        outcome.pending_files[outcome.set_aside_path] = set_aside


def _record_run(
    tx: IngestTransaction,
    outcome: IngestOutcome,
    rubric: Rubric,
    default_rubric: dict[str, Any],
    started: datetime,
    options: dict[str, Any],
) -> None:
    """The file's ingest run in the store: its counts, the options and the rubric in force."""
    tx.record_run(
        started_at=started,
        finished_at=datetime.now(UTC),
        rows_read=outcome.rows_read,
        rows_added=outcome.added,
        rows_duplicate=outcome.duplicates,
        rows_replaced=outcome.replaced,
        rows_rejected=outcome.rejected,
        rows_set_aside=outcome.set_aside,
        options=options,
        rubric={
            **rubric.effective(outcome.format, default_rubric),
            "file": rubric.source,
            # The presets whose sections were in force, per judge (chosen ones included).
            **({"presets_in_force": outcome.presets} if outcome.presets else {}),
        },
    )


def ingest_paths(
    store: Store,
    paths: list[Path],
    *,
    on_file: Callable[[Path], Callable[[int], None] | None] | None = None,
    **options: Any,
) -> list[IngestOutcome]:
    """Ingest several files all-or-nothing: one transaction for the whole command.

    When any file is refused, every file is still validated (so all problems of all files are
    reported at once), nothing is written, and one InputError lists the problems of all files
    (``problems``, each once) under a summary that says what to do (its message).
    ``on_file(path)`` may return a progress callback for that file.
    """
    outcomes: list[IngestOutcome] = []
    failures: list[InputError] = []
    with store.ingest_transaction() as tx:
        command_first_id = tx.max_response_id() + 1
        for path in paths:
            progress = on_file(Path(path)) if on_file else None
            try:
                outcomes.append(
                    ingest_file(tx, Path(path), progress=progress, command_first_id=command_first_id, **options)
                )
            except InputError as exc:
                tx.abort()
                failures.append(exc)
            except OSError as exc:  # the file could be opened but not read (an I/O error, a vanished mount)
                tx.abort()
                failures.append(InputError(f"{path}: could not be read ({exc.strerror or exc}); check the file"))
    if failures:
        lines = [line for exc in failures for line in (exc.problems or [str(exc)])]
        hints = []
        if any(isinstance(exc, FileRefused) and exc.skippable for exc in failures):
            hints.append("pass --skip-invalid to ingest the valid rows and write the others to a rejects file")
        if any(isinstance(exc, FileRefused) and exc.conflicts for exc in failures):
            hints.append("pass --replace to overwrite conflicting rows (the old values are kept in history)")
        if any(isinstance(exc, FileRefused) and exc.model_conflicts for exc in failures):
            hints.append("ingest each run with its own --model NAME (two runs of one target share their keys)")
        if any(isinstance(exc, FileRefused) and exc.prompt_conflicts for exc in failures):
            hints.append("pass --benchmark NAME to keep responses to other prompts (another benchmark or attack) apart")
        refused = "" if len(paths) == 1 else f"{len(failures)} of {len(paths)} files refused; "
        advice = f": fix the input, or {', or '.join(hints)}" if hints else ""
        if any("not valid UTF-8 text" in line for line in lines):
            advice += f"; {ENCODING_HINT}"
        raise InputError(f"{refused}nothing was ingested{advice}.", lines)
    for outcome in outcomes:
        for target, rows in outcome.pending_files.items():
            write_atomic(target, "".join(_json_line(row) for row in rows))
    return outcomes


def _json_line(row: dict[str, Any]) -> str:
    """One line of a rejects file: UTF-8 JSON, or ASCII-escaped when the row holds text UTF-8 cannot encode."""
    text = json.dumps(row, ensure_ascii=False, default=str)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # an unpaired surrogate, kept as its \ud8xx escape
            text = json.dumps(row, default=str)
    return text + "\n"


def _meta_json(meta: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """(the metadata as stored JSON text, None), or (None, why it cannot be stored)."""
    if not meta:
        return None, None
    try:
        text = json.dumps(meta, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError) as exc:
        return None, f"the fields kept as metadata cannot be stored ({exc})"
    problem = text_problem("metadata", text)
    return (None, problem) if problem is not None else (text, None)


def _key_text(rec: Record) -> str:
    return (
        f"(benchmark={rec.benchmark!r}, model={rec.model!r}, prompt_id={rec.prompt_id!r}, "
        f"epoch={rec.epoch}, judge={rec.judge!r})"
    )


def _record_dict(rec: Record) -> dict[str, Any]:
    """A row as a rejects file keeps it: everything it would have stored (the transcript too, when it has one)."""
    out = {
        "model": rec.model,
        "benchmark": rec.benchmark,
        "prompt_id": rec.prompt_id,
        "epoch": rec.epoch,
        "judge": rec.judge,
        "category": rec.category,
        "prompt": rec.prompt,
        "response": rec.response,
        "judge_verdict": rec.verdict,
        "judge_score": rec.score,
    }
    if rec.transcript is not None:
        out["transcript"] = rec.transcript
    return out
