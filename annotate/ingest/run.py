"""Ingesting files: validate every row, map its verdict, write all files in one transaction.

``ingest_paths`` is the whole of `annotate ingest`: every file is validated (so all problems are
reported at once) and either every file goes in or none does. Rows are tuples in
``annotate.columns.RESPONSE_COLUMNS`` order, written by the store's ingest transaction.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotate.errors import InputError
from annotate.fileio import sha256_file, write_jsonl
from annotate.ingest import detect_format, reader_module
from annotate.ingest.records import Problem, ReadContext, Record, SetAside
from annotate.ingest.rubric import Rubric

if TYPE_CHECKING:
    from annotate.db import Store
    from annotate.db.ingest_tx import IngestTransaction

MAX_PROBLEMS_SHOWN = 20
BATCH_ROWS = 5000


def content_sha(prompt: str, response: str, verdict: str | None, score: float | None, label: str) -> str:
    """The identity of a response's content: a key with another content_sha is a conflict."""
    joined = f"{prompt}\x00{response}\x00{verdict!r}\x00{score!r}\x00{label}"
    return hashlib.sha1(joined.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class IngestOutcome:
    path: Path
    format: str
    sha256: str
    rows_read: int = 0
    added: int = 0
    duplicates: int = 0
    replaced: int = 0
    rejected: int = 0
    set_aside: int = 0
    labels: Counter[str] = field(default_factory=Counter)  # of the rows read and accepted
    reasons: Counter[str] = field(default_factory=Counter)
    ambiguous_reasons: Counter[str] = field(default_factory=Counter)
    rejects_path: Path | None = None
    set_aside_path: Path | None = None
    pending_files: dict[Path, list[dict[str, Any]]] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "format": self.format,
            "sha256": self.sha256,
            "rows_read": self.rows_read,
            "added": self.added,
            "duplicates": self.duplicates,
            "replaced": self.replaced,
            "rejected": self.rejected,
            "set_aside": self.set_aside,
            "labels": dict(self.labels),
            "label_reasons": dict(self.reasons),
            "rejects_file": str(self.rejects_path) if self.rejects_path else None,
            "set_aside_file": str(self.set_aside_path) if self.set_aside_path else None,
        }


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
) -> IngestOutcome:
    """Validate and ingest one file in a single transaction.

    Runs inside ``tx`` (the caller's one transaction for the whole command). Raises
    InputError (listing every problem, capped) and calls ``tx.abort()`` when the file has
    malformed rows, unknown verdicts or conflicting keys, unless ``skip_invalid`` (bad rows go
    to a rejects file) or ``replace`` (conflicting rows overwrite, old values kept in
    response_history).
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a directory; pass the files (e.g. {path}/*.jsonl)")
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    chosen = detect_format(path) if fmt == "auto" else fmt
    module = reader_module(chosen)
    fmt_rubric = rubric.for_format(chosen, module.DEFAULT_RUBRIC)
    sha = sha256_file(path)
    outcome = IngestOutcome(path=path, format=chosen, sha256=sha)
    ctx = ReadContext(model=model, benchmark=benchmark, judge=judge, progress=progress)
    started = datetime.now(UTC)
    stamp = tx.timestamp(started)

    problems: list[tuple[int, str]] = []
    n_problems = 0
    rejects: list[dict[str, Any]] = []
    set_aside: list[dict[str, Any]] = []
    validate_only = tx.aborted  # an earlier file of this command failed: validate, write nothing
    failing = validate_only

    def problem(line: int, message: str, record: dict[str, Any] | None = None) -> None:
        nonlocal n_problems, failing
        n_problems += 1
        if len(problems) < MAX_PROBLEMS_SHOWN:
            problems.append((line, message))
        if skip_invalid:
            rejects.append({"line": line, "reason": message, **({"record": record} if record else {})})
        else:
            failing = True

    tx.use_source(sha256=sha, path=str(path), fmt=chosen, size_bytes=path.stat().st_size)
    first_new_id = tx.max_response_id() + 1
    batch: list[tuple[Any, ...]] = []
    batch_records: list[Record] = []

    def flush() -> None:
        if not batch:
            return
        result = tx.insert_batch(batch, write=not failing)
        outcome.added += result.inserted
        outcome.duplicates += result.duplicates
        for i, rid, _src in result.conflicts:
            rec = batch_records[i]
            if rid >= first_new_id:  # inserted by this very run: a key repeated in the file
                problem(
                    rec.line,
                    f"key {_key_text(rec)} appears earlier in this file with different content",
                    _record_dict(rec),
                )
            elif replace and not failing:
                tx.replace(rid, batch[i], started)
                outcome.replaced += 1
            else:
                what = tx.describe_difference(rid, batch[i])
                problem(
                    rec.line,
                    f"conflict: {_key_text(rec)} is already stored with a different {what}; "
                    "use --replace to overwrite (the old value is kept in history) or --skip-invalid",
                    _record_dict(rec),
                )
        batch.clear()
        batch_records.clear()

    for item in module.read(path, ctx):
        outcome.rows_read += 1
        if isinstance(item, Problem):
            problem(item.line, item.message)
            continue
        if isinstance(item, SetAside):
            outcome.set_aside += 1
            set_aside.append({"line": item.line, "reason": item.reason, "data": item.data})
            continue
        classified = fmt_rubric.classify(item.verdict, item.score, item.context)
        if isinstance(classified, str):
            problem(item.line, classified, _record_dict(item))
            continue
        label, reason = classified
        outcome.labels[label] += 1
        outcome.reasons[reason] += 1
        if label == "ambiguous":
            outcome.ambiguous_reasons[reason] += 1
        batch.append(
            (
                item.benchmark,
                item.model,
                item.prompt_id,
                item.epoch,
                item.judge,
                item.category,
                item.prompt,
                item.response,
                item.verdict,
                item.score,
                label,
                reason,
                json.dumps(item.meta, ensure_ascii=False, sort_keys=True, default=str) if item.meta else None,
                content_sha(item.prompt, item.response, item.verdict, item.score, label),
                tx.source_id,
                stamp,
            )
        )
        batch_records.append(item)
        if len(batch) >= BATCH_ROWS:
            flush()
    flush()

    if n_problems and not skip_invalid:
        tx.abort()
        more = n_problems - len(problems)
        lines = [f"{path}:{line}: {msg}" for line, msg in sorted(problems)]
        if more > 0:
            lines.append(f"{path}: ... and {more} more problem(s)")
        raise InputError(f"{path}: {n_problems} problem(s)", lines)
    if validate_only:
        return outcome
    outcome.rejected = len(rejects)
    stem = f"{path.name}.{sha[:12]}"
    # Written by ingest_paths only after the transaction commits.
    if rejects:
        outcome.rejects_path = rejects_dir / f"{stem}.rejects.jsonl"
        outcome.pending_files[outcome.rejects_path] = rejects
    if set_aside:
        outcome.set_aside_path = rejects_dir / f"{stem}.set-aside.jsonl"
        outcome.pending_files[outcome.set_aside_path] = set_aside
    tx.record_run(
        started_at=started,
        finished_at=datetime.now(UTC),
        rows_read=outcome.rows_read,
        rows_added=outcome.added,
        rows_duplicate=outcome.duplicates,
        rows_replaced=outcome.replaced,
        rows_rejected=outcome.rejected,
        rows_set_aside=outcome.set_aside,
        options={
            "format": chosen,
            "model": model,
            "benchmark": benchmark,
            "judge": judge,
            "skip_invalid": skip_invalid,
            "replace": replace,
        },
        rubric={**rubric.effective(chosen, module.DEFAULT_RUBRIC), "file": rubric.source},
    )
    return outcome


def ingest_paths(
    store: Store,
    paths: list[Path],
    *,
    on_file: Callable[[Path], Callable[[int], None] | None] | None = None,
    **options: Any,
) -> list[IngestOutcome]:
    """Ingest several files all-or-nothing: one transaction for the whole command.

    When any file is refused, every file is still validated (so all problems are reported at
    once), nothing is written, and one InputError lists the problems of all files.
    ``on_file(path)`` may return a progress callback for that file.
    """
    outcomes: list[IngestOutcome] = []
    failures: list[InputError] = []
    with store.ingest_transaction() as tx:
        for path in paths:
            progress = on_file(Path(path)) if on_file else None
            try:
                outcomes.append(ingest_file(tx, Path(path), progress=progress, **options))
            except InputError as exc:
                tx.abort()
                failures.append(exc)
    if failures:
        lines = [line for exc in failures for line in (exc.problems or [str(exc)])]
        total = sum(max(len(exc.problems), 1) for exc in failures)
        summary = f"{len(failures)} of {len(paths)} file(s) refused" if len(paths) > 1 else str(failures[0])
        raise InputError(
            f"{summary}; nothing was ingested. Fix the input, or pass --skip-invalid to ingest "
            "the valid rows and write the others to a rejects file"
            + (
                " (conflicts: --replace overwrites, keeping history)."
                if any("conflict" in line for line in lines)
                else "."
            ),
            lines if total else [],
        )
    for outcome in outcomes:
        for target, rows in outcome.pending_files.items():
            write_jsonl(target, rows)
    return outcomes


def _key_text(rec: Record) -> str:
    return (
        f"(benchmark={rec.benchmark!r}, model={rec.model!r}, prompt_id={rec.prompt_id!r}, "
        f"epoch={rec.epoch}, judge={rec.judge!r})"
    )


def _record_dict(rec: Record) -> dict[str, Any]:
    return {
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
