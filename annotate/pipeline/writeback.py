"""`annotate writeback`: a round's adjudicated labels written into copies of the Inspect AI logs they came from.

For every Inspect log (``.eval`` or ``.json``) that holds responses reviewed in the round, a copy
goes to the folder ``--to``, edited through Inspect's own API (``inspect_ai.log.edit_score`` and
``write_eval_log``), so the copy is what Inspect itself writes and its viewer shows:

* ``--mode edit`` (default) applies a ``ScoreEdit`` to the judge's score of each decided sample,
  with the human label mapped back into that scorer's own values (the inverse of the rubric, as
  observed in the log: the one value the scorer wrote that the rubric read as harmful, and the one
  read as safe). Inspect keeps the judge's verdict as the first entry of the score's history and
  recomputes the log's metrics. A label the scorer's values cannot express (the scorer never wrote
  a value read as that label, wrote several, or is numeric with a score band) refuses the command
  and points to ``--mode add``.
* ``--mode add`` adds a score of its own (``--score-name``, default ``human_review``): 1 for
  harmful, 0 for safe, NaN (unscored, outside the metrics) when a decision was withdrawn.

Each edit carries Inspect provenance: ``author`` = the expert's pseudonym, or ``annotate`` for
majority and policy decisions (never an e-mail); ``reason`` = the method and the decision's reason;
``timestamp`` = when the decision was recorded; ``metadata`` = round, decision id, label, votes
per verdict and per reviewer pseudonym, stratum, inclusion probability, judge and raw verdict,
the annotate version and, with ``--export NAME``, that export's manifest sha256 (on the edit of
the decision in force, which must be the export's final label).

The edits are a pure function of the original log and the round's decision history: every
recorded decision that changed an item's label in force (or who decided it) is one edit, in the
order of the decisions. So writing back twice gives the same files (a target that already holds
exactly the new log is left untouched, byte for byte), nothing is stacked twice, and a label
changed by a later adjudication is one more edit on top of the earlier one. A decision withdrawn
later (the item went back to unresolved) is an edit back to the judge's value, with its own
provenance. Items without a label in force are left as they were and listed.

The originals are never written: each source is copied (through one guarded read) into a private
temporary folder while it is hashed, the copy is used only if its sha256 is the one ingested, and
an ``.eval`` copy is checked as ingest reads it (``annotate.ingest.archive``: member
names inside the archive, each member decompressed against its budget) before Inspect reads it.
``--to`` may not be an original's folder, nor inside the workspace's ``exports/``.

Nothing a log names is run: the metrics are recomputed from Inspect's built-ins only, by exact
name and with their documented options (``annotate.pipeline._inspect``); a log whose metrics or
``epochs_reducer`` are anything else is refused. Each reviewed sample must still read as the
one text the reviewers saw (``reading_problem``: ``output.completion``, ``choices[0]`` and the
last assistant turn agree, and equal the stored response), or its log is refused.

Everything is checked for every log before anything is written, in three steps: every log is
validated (a problem refuses the command with every problem listed, exit 2); then every log is
edited, its metrics recomputed and written by Inspect into a private folder inside ``--to``
(``.annotate-writeback-<pid>-XXXX``, mode 0700, made with ``mkdtemp``; Inspect's own temporary
files stay in it); a failure there refuses the command too, with nothing in ``--to``; only then
is each copy renamed into place. A kill during the last step can leave some targets renamed and
others not, never a partial file. Folders and Inspect temporary files that an interrupted
writeback left in ``--to`` are removed when they are provably its own (its name, this user's,
older than this run, its process gone). Each copy carries ``eval.metadata.annotate_writeback``,
so that ``annotate ingest`` refuses to read its human labels as a judge's.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate import __version__
from annotate.audit.labels import read_labels
from annotate.columns import judge_of
from annotate.errors import InputError, StateError
from annotate.fileio import open_input, sha256_bytes
from annotate.ingest.formats import inspect_ai as inspect_format
from annotate.pipeline._inspect import (
    STAGE_PREFIX,
    Api,
    inspect_api,
    metric_problems,
    recompute,
    sweep_leftovers,
    vet_archive,
)
from annotate.pipeline._resolve import resolve_round, round_judges

if TYPE_CHECKING:
    from annotate.pipeline.session import Session

MODES = ("edit", "add")
DEFAULT_ADD_NAME = "human_review"
MAX_LISTED = 20  # problems listed per command, then a count (as ingest does)
_CHUNK = 1 << 20
_PSEUDONYM = re.compile(r"[A-Z][0-9]+")
_SCORE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
#: The alphabet of Inspect's (shortuuid) event ids.
_B57 = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


@dataclass
class SampleNote:
    """A reviewed sample left as it was (no label in force), or whose decision was withdrawn."""

    sample_id: str
    epoch: int
    status: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"sample_id": self.sample_id, "epoch": self.epoch, "status": self.status, "reason": self.reason}


@dataclass
class LogOutcome:
    """What writeback did to one Inspect log."""

    source: str  # the path as ingested
    sha256: str
    target: Path
    score: str  # the score edited (edit) or added (add)
    written: bool = False  # False: the target already held exactly this log
    edits: int = 0
    samples_edited: int = 0
    reviewed: int = 0
    metrics_before: dict[str, dict[str, float]] = field(default_factory=dict)
    metrics_after: dict[str, dict[str, float]] = field(default_factory=dict)
    unresolved: list[SampleNote] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "sha256": self.sha256,
            "target": str(self.target),
            "score": self.score,
            "written": self.written,
            "edits": self.edits,
            "samples_edited": self.samples_edited,
            "reviewed": self.reviewed,
            "metrics_before": self.metrics_before,
            "metrics_after": self.metrics_after,
            "unresolved": [n.as_dict() for n in self.unresolved],
        }


@dataclass
class WritebackOutcome:
    """What `annotate writeback` wrote, per log."""

    round: str
    mode: str
    to: Path
    export: str | None = None
    export_manifest_sha256: str | None = None
    logs: list[LogOutcome] = field(default_factory=list)
    other_formats: int = 0  # reviewed responses that did not come from an Inspect log
    swept: list[str] = field(default_factory=list)  # leftovers of interrupted writebacks, removed from --to
    left: list[str] = field(default_factory=list)  # temporary files in --to left alone, with why

    def as_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "mode": self.mode,
            "to": str(self.to),
            "export": self.export,
            "export_manifest_sha256": self.export_manifest_sha256,
            "logs": [log.as_dict() for log in self.logs],
            "other_formats": self.other_formats,
            "swept": self.swept,
            "left": self.left,
        }


@dataclass
class _Edit:
    """One planned edit of one sample's score."""

    sample_id: Any  # the log's own id (int or str), as Inspect matches it
    epoch: int
    value: Any
    explanation: str | None
    author: str
    reason: str
    timestamp: datetime
    metadata: dict[str, Any]


@dataclass
class _Plan:
    """One source log: where it is, what to edit, and what is left as it was."""

    source_id: int
    source: str  # the path as ingested
    sha256: str
    fmt: str  # "eval" / "json"
    copy: Path  # the verified private copy Inspect reads
    target: Path
    round_name: str = ""
    mode: str = "edit"
    score: str = ""
    edits: list[_Edit] = field(default_factory=list)
    unresolved: list[SampleNote] = field(default_factory=list)
    reviewed: int = 0


def writeback(
    s: Session,
    *,
    round_name: str | None,
    to: Path,
    mode: str = "edit",
    score_name: str | None = None,
    export: str | None = None,
) -> WritebackOutcome:
    """Write the round's final labels into copies of its Inspect logs in ``to`` (see the module docstring).

    Raises ``InputError`` (nothing written) for a bad option, a missing or changed source log, a
    sample the store names but the log does not hold, a label the scorer cannot express in
    ``edit`` mode, or a target in ``to`` that is not a copy of its log; ``StateError`` when the
    round has no reviewed response from an Inspect log.
    """
    if mode not in MODES:
        raise InputError(f"--mode {mode!r}: use 'edit' (the judge's score) or 'add' (a score of its own).")
    if score_name is not None and not _SCORE_NAME.fullmatch(score_name):
        raise InputError(
            f"--score-name {score_name!r}: use letters, digits, '_', '.' or '-' (up to 100), starting with a letter, "
            "digit or '_'."
        )
    started = time.time()
    api = inspect_api()
    store = s.store
    round_row = resolve_round(store, round_name)
    round_id = int(round_row["id"])
    round_judge = str(round_row["judge"])
    per_benchmark = round_judges(round_row)
    outcome = WritebackOutcome(round=str(round_row["name"]), mode=mode, to=Path(to))

    items = store.round_items(round_id, with_text=True).drop(columns=["prompt", "transcript"])
    if items.empty:
        raise StateError(f"round {outcome.round!r} has no routed responses; route it first.")
    history = store.final_labels(round_id, history=True)
    responses = store.responses(["id", "source_id", "prompt_id", "epoch", "judge", "judge_label", "label_reason"])
    sources = store.source_files().set_index("id")
    items = items.merge(
        responses[["id", "source_id"]].rename(columns={"id": "response_id"}), on="response_id", how="left"
    )
    fmt_of = items.source_id.map(sources["format"])
    inspect_items = items.loc[fmt_of == "inspect"]
    outcome.other_formats = int(len(items) - len(inspect_items))
    if inspect_items.empty:
        raise StateError(
            f"round {outcome.round!r} holds no response ingested from an Inspect log; writeback writes Inspect logs "
            "only (use `annotate export` for the others)."
        )
    in_force = _in_force(history)
    if export is not None:
        outcome.export = export
        outcome.export_manifest_sha256 = _check_export(s, export, outcome.round, inspect_items, in_force)

    target_dir = Path(to)
    if target_dir.exists() and not target_dir.is_dir():
        raise InputError(f"--to {target_dir}: not a folder. Name a folder for the written-back logs.")
    if target_dir.is_symlink() and not target_dir.exists():
        raise InputError(f"--to {target_dir}: a broken symbolic link. Name a folder for the written-back logs.")
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="annotate-writeback-") as tmp:
        ids = sorted(set(inspect_items.source_id.astype(int)))
        _check_to(s, target_dir, sources, ids)
        plans = _copy_sources(s, sources, ids, Path(tmp), target_dir)
        by_item: dict[int, list[dict[str, Any]]] = {}
        for decision in history.sort_values("id").to_dict("records") if len(history) else []:
            by_item.setdefault(int(decision["round_item_id"]), []).append(decision)
        for plan in plans:
            plan.round_name, plan.mode = outcome.round, mode
            vetted = vet_archive(plan.copy, plan.source) if plan.fmt == "eval" else None
            if vetted is not None:
                problems.append(vetted)
                continue
            log = _read(api, plan.copy, plan.fmt, plan.source)
            plan_items = inspect_items.loc[inspect_items.source_id == plan.source_id]
            # A round across suites routes each benchmark on its own judge: this log's is its benchmark's.
            judge = judge_of(round_judge, per_benchmark, str(plan_items.benchmark.iloc[0])) or round_judge
            problems += _plan_log(
                api,
                plan,
                log,
                plan_items,
                by_item,
                responses.loc[(responses.source_id == plan.source_id) & (responses.judge == judge)],
                judge=judge,
                round_name=outcome.round,
                mode=mode,
                score_name=score_name,
                export=(export, outcome.export_manifest_sha256),
                in_force=in_force,
                strata_from=store.round_strata_from(round_id),
            )
            problems += _check_target(api, plan, log)
            del log  # one log in memory at a time
        _refuse(problems, outcome.round)
        outcome.logs = _write_all(api, plans, target_dir, started, outcome)
    return outcome


def _refuse(problems: list[str], round_name: str, *, stage: str = "") -> None:
    """InputError listing the problems (capped), when there is any: nothing was written."""
    if not problems:
        return
    shown = problems[:MAX_LISTED]
    if len(problems) > MAX_LISTED:
        shown.append(f"... and {len(problems) - MAX_LISTED} more problem(s)")
    raise InputError(
        f"nothing was written: {len(problems)} problem(s) in the logs of round {round_name!r}{stage}; fix them and "
        "run writeback again.",
        shown,
    )


def _write_all(api: Api, plans: list[_Plan], target_dir: Path, started: float, outcome: WritebackOutcome) -> list[Any]:
    """Every log edited and written into a private folder in ``target_dir``, then (all well) renamed into place."""
    created = not target_dir.exists()
    target_dir.mkdir(parents=True, exist_ok=True)
    outcome.swept, outcome.left = sweep_leftovers(target_dir, before=started)
    stage = Path(tempfile.mkdtemp(prefix=f"{STAGE_PREFIX}{os.getpid()}-", dir=target_dir))
    try:
        staged: list[tuple[LogOutcome, Path | None]] = []
        problems: list[str] = []
        for plan in plans:
            try:
                staged.append(_stage(api, plan, stage))
            except InputError as exc:
                problems.append(str(exc))
        if problems:
            shutil.rmtree(stage, ignore_errors=True)
            if created:
                with contextlib.suppress(OSError):
                    target_dir.rmdir()
            _refuse(problems, outcome.round, stage=" (found while writing them, before any was put in place)")
        done: list[str] = []
        for log_outcome, path in staged:
            if path is None:
                continue
            try:
                os.replace(path, log_outcome.target)
            except OSError as exc:
                raise StateError(
                    f"{log_outcome.target}: could not be put in place ({exc.strerror or exc}); "
                    + (f"already written: {', '.join(done)}." if done else "nothing was written.")
                ) from None
            log_outcome.written = True
            done.append(str(log_outcome.target))
        return [log_outcome for log_outcome, _ in staged]
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _read(api: Api, path: Path, fmt: str, source: str) -> Any:
    try:
        return api.read_eval_log(str(path), format=fmt)
    except Exception as exc:  # Inspect raises many kinds for a damaged log
        raise InputError(f"{source}: Inspect could not read this log ({type(exc).__name__}: {exc}).") from None


# -- sources ---------------------------------------------------------------------------------------


def _copy_sources(s: Session, sources: pd.DataFrame, ids: list[int], tmp: Path, target_dir: Path) -> list[_Plan]:
    """Each source copied into ``tmp`` in one guarded, hashed read; refused unless its sha256 is the ingested one."""
    problems: list[str] = []
    plans: list[_Plan] = []
    names: dict[str, list[int]] = {}
    for sid in ids:
        names.setdefault(Path(str(sources.loc[sid, "path"])).name, []).append(sid)
    for sid in ids:
        row = sources.loc[sid]
        ingested = str(row["path"])
        expected = str(row["sha256"])
        path = _locate(s, ingested)
        if path is None:
            problems.append(
                f"{ingested}: the log is not there (relative paths are read from the current folder and the "
                "workspace); run writeback where you ran ingest, or put the log back."
            )
            continue
        name = Path(ingested).name
        suffix = Path(name).suffix.lower()
        fmt = "eval" if suffix == ".eval" else "json"
        if len(names[name]) > 1:  # two logs of one name: the sha tells the copies apart
            name = f"{Path(name).stem}.{expected[:12]}{Path(name).suffix}"
        copy = tmp / f"{sid}{suffix or '.json'}"
        try:
            digest = _copy_hashed(path, copy)
        except InputError as exc:
            problems.append(str(exc))
            continue
        if digest != expected:
            problems.append(
                f"{path}: the log changed since it was ingested (sha256 {digest[:16]}... is not the ingested "
                f"{expected[:16]}...), so its samples may not be the ones reviewed. Put the ingested log back, "
                "or ingest the new one and review it."
            )
            continue
        target = target_dir / name
        if _same_file(path, target):
            problems.append(
                f"{target}: this is the original log; choose another --to folder (originals are never written)."
            )
            continue
        plans.append(_Plan(source_id=sid, source=ingested, sha256=expected, fmt=fmt, copy=copy, target=target))
    if problems:
        raise InputError(f"nothing was written: {len(problems)} source log(s) cannot be used.", problems)
    return plans


def _check_to(s: Session, target_dir: Path, sources: pd.DataFrame, ids: list[int]) -> None:
    """InputError when ``--to`` is an original's folder, or inside the workspace's ``exports/``."""
    to = _real(target_dir)
    exports = _real(s.ws.exports_dir)
    if to == exports or exports in to.parents:
        raise InputError(
            f"--to {target_dir}: inside the workspace's exports/ folder, whose exports are immutable (verify would "
            "fail on a file added to one); choose a folder outside exports/."
        )
    for sid in ids:
        path = _locate(s, str(sources.loc[sid, "path"]))
        if path is None:
            continue  # said by _copy_sources
        folder = _real(path.parent)
        if to == folder or (target_dir.exists() and _same_file(folder, target_dir)):
            raise InputError(
                f"--to {target_dir}: the folder of the original log {sources.loc[sid, 'path']}; choose another "
                "folder (originals are never written, nor written beside: a copy would sit with the logs it "
                "came from)."
            )


def _real(path: Path) -> Path:
    """The absolute path with every link resolved (as far as it exists)."""
    return Path(os.path.realpath(os.path.abspath(path)))


def _locate(s: Session, ingested: str) -> Path | None:
    path = Path(ingested)
    candidates = [path] if path.is_absolute() else [Path.cwd() / path, s.ws.root / path]
    return next((c for c in candidates if c.exists()), None)


def _copy_hashed(path: Path, copy: Path) -> str:
    """Copy a regular file while hashing it; the sha256 of the bytes copied."""
    with open_input(path) as source, open(copy, "xb") as out:
        while chunk := source.stream.read(_CHUNK):
            out.write(chunk)
        return source.finish()


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


# -- decisions -------------------------------------------------------------------------------------


def _in_force(history: pd.DataFrame) -> dict[int, dict[str, Any]]:
    """round_item_id -> the latest decision (the one in force)."""
    if history.empty:
        return {}
    latest = history.sort_values("id").drop_duplicates("round_item_id", keep="last")
    return {int(r["round_item_id"]): dict(r) for r in latest.to_dict("records")}


def _key(decision: dict[str, Any]) -> tuple[str, str, str] | None:
    """What an edit records of a decision: its label and who made it (None: no label in force)."""
    if decision["status"] != "resolved" or decision["label"] not in ("harmful", "safe"):
        return None
    return (str(decision["label"]), str(decision["method"]), str(decision["adjudicator"]))


def _author(decision: dict[str, Any], round_name: str) -> str:
    """The expert's pseudonym, or ``annotate`` for a majority or policy decision (never an e-mail)."""
    if decision["method"] != "expert":
        return "annotate"
    who = str(decision["adjudicator"])
    if not _PSEUDONYM.fullmatch(who):
        raise StateError(
            f"round {round_name!r}: decision {decision['id']} names its expert as {who!r}, which is not a pseudonym; "
            "re-run `annotate adjudicate` for the round."
        )
    return who


def _timestamp(value: Any) -> datetime:
    stamp = pd.Timestamp(value)
    if stamp.tzinfo is None:  # the store records UTC
        stamp = stamp.tz_localize(UTC)
    return stamp.tz_convert(UTC).to_pydatetime()


def _votes(raw: Any) -> tuple[dict[str, int], dict[str, str]]:
    """(votes per verdict, verdict per reviewer pseudonym) of a decision's votes JSON."""
    try:
        votes = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        votes = {}
    per_reviewer = {str(k): str(v) for k, v in sorted(votes.items())} if isinstance(votes, dict) else {}
    counts: dict[str, int] = {}
    for verdict in per_reviewer.values():
        counts[verdict] = counts.get(verdict, 0) + 1
    return dict(sorted(counts.items())), per_reviewer


def _check_export(
    s: Session, name: str, round_name: str, items: pd.DataFrame, in_force: dict[int, dict[str, Any]]
) -> str:
    """The sha256 of export NAME's manifest, once the export is known to hold the round's labels in force."""
    folder = s.ws.exports_dir / name
    manifest_path = folder / "manifest.json"
    try:
        with open_input(manifest_path) as fh:
            manifest_bytes = fh.stream.read()
            fh.finish()
        with open_input(folder / "labels.csv") as fh:
            labels_bytes = fh.stream.read()
            fh.finish()
    except InputError as exc:
        raise InputError(f"--export {name}: {exc} (is it an export of this workspace? see `annotate export`)") from None
    try:
        manifest = json.loads(manifest_bytes)
    except ValueError as exc:
        raise InputError(f"{manifest_path}: not JSON ({exc}); check it with `annotate verify {folder}`.") from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or files.get("labels.csv") != sha256_bytes(labels_bytes):
        raise InputError(f"{folder}: labels.csv does not match its manifest; check it with `annotate verify {folder}`.")
    if round_name not in (manifest.get("rounds") or []):
        raise InputError(f"--export {name} does not cover round {round_name!r}; name an export of this round.")
    try:
        labels, _ = read_labels(labels_bytes)
    except Exception as exc:  # a CsvProblem, or a table without the columns
        raise InputError(
            f"{folder}/labels.csv: unreadable ({exc}); check it with `annotate verify {folder}`."
        ) from None
    labels = labels.loc[labels["round"] == round_name]
    exported = {
        (str(r.model), str(r.benchmark), str(r.prompt_id), str(r.epoch), str(r.judge)): r.final_label
        for r in labels.itertuples()
    }
    stale = []
    for r in items.itertuples():
        decision = in_force.get(int(r.round_item_id))
        label = None if decision is None or _key(decision) is None else decision["label"]
        key = (str(r.model), str(r.benchmark), str(r.prompt_id), str(int(r.epoch)), str(r.judge))
        if exported.get(key) != label:
            stale.append(f"{r.prompt_id} (epoch {int(r.epoch)}): {exported.get(key)} in the export, {label} now")
    if stale:
        raise InputError(
            f"--export {name} was made before the round's latest decisions ({len(stale)} label(s) differ, e.g. "
            f"{'; '.join(stale[:3])}); export the round again and name the new export, or leave out --export."
        )
    return sha256_bytes(manifest_bytes)


# -- one log ---------------------------------------------------------------------------------------


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _plan_log(
    api: Api,
    plan: _Plan,
    log: Any,
    items: pd.DataFrame,
    history: dict[int, list[dict[str, Any]]],
    responses: pd.DataFrame,
    *,
    judge: str,
    round_name: str,
    mode: str,
    score_name: str | None,
    export: tuple[str | None, str | None],
    in_force: dict[int, dict[str, Any]],
    strata_from: list[str] | None = None,
) -> list[str]:
    """Fill ``plan`` with the edits of one log; the problems that refuse it (empty when none)."""
    where = plan.source
    samples = list(log.samples or [])
    if not samples:
        return [f"{where}: the log has no samples (was it written with log_samples=False?)."]
    marker = (log.eval.metadata or {}).get(inspect_format.WRITEBACK_MARKER)
    if marker is not None:
        return [
            f"{where}: this log was itself written by `annotate writeback` (eval.metadata."
            f"{inspect_format.WRITEBACK_MARKER}); write back into the original log it was made from."
        ]
    index: dict[tuple[str, int], Any] = {}
    ids_of: dict[str, set[str]] = {}
    for sample in samples:
        key = (str(sample.id), int(sample.epoch))
        if key in index:
            return [
                f"{where}: sample {key[0]} (epoch {key[1]}) is in the log twice; which one was reviewed cannot be told."
            ]
        index[key] = sample
        ids_of.setdefault(str(sample.id), set()).add(_canonical(sample.id))
    clashing = sorted(k for k, v in ids_of.items() if len(v) > 1)
    if clashing:
        return [
            f"{where}: samples {', '.join(clashing[:5])} each stand for an integer and a text id; the store cannot "
            "tell them apart."
        ]
    scorers = sorted({name for sample in samples for name in (sample.scores or {})})
    problems = metric_problems(api, log, where)

    if mode == "edit":
        if score_name is not None:
            if score_name not in scorers:
                return [f"{where}: no score named {score_name!r} (scores: {', '.join(scorers) or 'none'})."]
            plan.score = score_name
        elif judge in scorers:
            plan.score = judge
        elif len(scorers) == 1:  # ingested with --judge: the log's only scorer is the judge
            plan.score = scorers[0]
        else:
            return [
                f"{where}: the log's scores are {', '.join(scorers) or 'none'} and none is named {judge!r} (the "
                "round's judge); name the one to edit with --score-name."
            ]
        inverse, why_not = _inverse(plan.score, index, responses)
    else:
        plan.score = score_name or DEFAULT_ADD_NAME
        if plan.score in scorers:
            return [
                f"{where}: the log already has a score named {plan.score!r}; choose another name with --score-name."
            ]
        inverse, why_not = {"harmful": 1, "safe": 0}, {}

    items = items.sort_values("round_item_id")
    plan.reviewed = len(items)
    export_name, export_sha = export
    for item in items.to_dict("records"):
        key = (str(item["prompt_id"]), int(item["epoch"]))
        sample = index.get(key)
        if sample is None:
            problems.append(f"{where}: sample {key[0]} (epoch {key[1]}) was reviewed but is not in the log.")
            continue
        if mode == "edit" and plan.score not in (sample.scores or {}):
            problems.append(f"{where}: sample {key[0]} (epoch {key[1]}) has no score {plan.score!r} to edit.")
            continue
        misread = _reading_problem(sample, item.get("response"))
        original = (sample.scores or {}).get(plan.score)
        judges_own = mode == "edit" and score_name in (None, judge)  # the score edited is the judge's verdict
        if misread is None and judges_own and original is not None:
            verdict = inspect_format.verdict_of(original.value)[0]
            if verdict is not None and verdict != item.get("judge_verdict"):
                misread = (
                    f"the judge's verdict in the log is {verdict!r}, not the {item.get('judge_verdict')!r} ingested"
                )
        if misread is not None:
            problems.append(f"{where}: sample {key[0]} (epoch {key[1]}): {misread}.")
            continue
        decisions = history.get(int(item["round_item_id"]), [])
        item_edits: list[_Edit] = []
        refused: set[str] = set()
        last: tuple[str, str, str] | None = None
        for decision in decisions:
            now = _key(decision)
            if now == last:
                continue
            if now is not None and now[0] not in inverse:
                if now[0] not in refused:
                    refused.add(now[0])
                    problems.append(
                        f"{where}: sample {key[0]} (epoch {key[1]}): the human label is {now[0]}, but "
                        f"{why_not[now[0]]} Write the labels as a score of their own with --mode add."
                    )
            elif now is not None:
                item_edits.append(
                    _edit(
                        sample,
                        decision,
                        item,
                        inverse[now[0]],
                        _explanation(decision, round_name),
                        round_name,
                        judge,
                        strata_from=strata_from,
                    )
                )
            elif last is not None:  # the label written earlier was withdrawn: back to the judge's value
                if original is not None:  # edit mode
                    value, explanation = original.value, original.explanation
                else:
                    value, explanation = math.nan, f"No human label in force: {decision['reason']}"
                item_edits.append(
                    _edit(sample, decision, item, value, explanation, round_name, judge, strata_from=strata_from)
                )
            last = now
        current = in_force.get(int(item["round_item_id"]))
        if export_sha is not None and item_edits and current is not None and _key(current) is not None:
            # The export holds the label in force (checked), which is the last edit's.
            item_edits[-1].metadata.update({"export": export_name, "export_manifest_sha256": export_sha})
        plan.edits += item_edits
        if current is None or _key(current) is None:
            plan.unresolved.append(
                SampleNote(
                    sample_id=key[0],
                    epoch=key[1],
                    status="awaiting review" if current is None else str(current["status"]),
                    reason="no decision yet" if current is None else str(current["reason"]),
                )
            )
    return problems


def _reading_problem(sample: Any, reviewed: Any) -> str | None:
    """Why the sample, as Inspect reads it, is not one text, the one the reviewers saw (None when it is)."""
    output = None if sample.output is None else sample.output.model_dump(mode="json")
    messages = [m.model_dump(mode="json") for m in sample.messages or []]
    attachments = dict(sample.attachments or {})
    try:
        problem = inspect_format.reading_problem(output, messages, attachments)
        shown = inspect_format.response_text(output, attachments)
    except ValueError as exc:
        return f"its output is not shaped as Inspect writes it ({exc})"
    if problem is not None:
        return problem.replace("; not reviewable", "; a label would land on another text than the one judged")
    if not isinstance(reviewed, str) or shown != reviewed:
        return (
            "its answer in the log is not the text the reviewers saw (the store holds another), so the label would "
            "land on another response; ingest the log again and review it"
        )
    return None


def _edit(
    sample: Any,
    decision: dict[str, Any],
    item: dict[str, Any],
    value: Any,
    explanation: Any,
    round_name: str,
    judge: str,
    *,
    strata_from: list[str] | None = None,
) -> _Edit:
    """One decision as an edit of the sample's score, with its provenance.

    ``strata_from``: the judges whose unanimity made the round's strata (``route --strata-from``),
    recorded beside ``stratum`` so that the stratum is read right; absent for every other round.
    """
    now = _key(decision)
    votes, reviewers = _votes(decision.get("votes"))
    metadata: dict[str, Any] = {
        "tool": "annotate",
        "annotate_version": __version__,
        "round": round_name,
        "decision": int(decision["id"]),
        "label": None if now is None else now[0],
        "status": str(decision["status"]),
        "method": str(decision["method"]),
        "votes": votes,
        "reviewers": reviewers,
        "stratum": str(item["stratum"]),
        "inclusion_prob": float(item["inclusion_prob"]),
        "judge": judge,
        "judge_verdict": None if _missing(item.get("judge_verdict")) else str(item["judge_verdict"]),
        "judge_label": str(item["judge_label"]),
    }
    if strata_from:
        metadata["strata_from"] = list(strata_from)
    if now is None:
        author, reason = "annotate", f"decision withdrawn ({decision['status']}): {decision['reason']}"
    else:
        author, reason = _author(decision, round_name), f"{decision['method']}: {decision['reason']}"
    return _Edit(
        sample_id=sample.id,
        epoch=int(sample.epoch),
        value=value,
        explanation=explanation,
        author=author,
        reason=reason,
        timestamp=_timestamp(decision["decided_at"]),
        metadata=metadata,
    )


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _inverse(
    scorer: str, index: dict[tuple[str, int], Any], responses: pd.DataFrame
) -> tuple[dict[str, Any], dict[str, str]]:
    """label -> the scorer's own value for it, as observed in the log; and why a label has none."""
    seen: dict[str, dict[str, Any]] = {"harmful": {}, "safe": {}}
    numbers: set[float] = set()
    for sample in index.values():
        score = (sample.scores or {}).get(scorer)
        if score is not None and isinstance(score.value, (int, float)) and not isinstance(score.value, bool):
            numbers.add(float(score.value))
    for r in responses.itertuples():
        if r.judge_label not in seen or r.label_reason not in ("mapped", "score-band"):
            continue
        sample = index.get((str(r.prompt_id), int(r.epoch)))
        score = None if sample is None else (sample.scores or {}).get(scorer)
        if score is not None:
            seen[str(r.judge_label)][_canonical(score.value)] = score.value
    inverse: dict[str, Any] = {}
    why_not: dict[str, str] = {}
    for label, values in seen.items():
        shown = ", ".join(sorted(values)) or "none"
        if numbers and len(numbers) > 2:
            why_not[label] = (
                f"the scorer {scorer!r} is numeric with {len(numbers)} values ({_few(sorted(numbers))}), read "
                f"through a score band: no one value of its own means {label}."
            )
        elif not values:
            why_not[label] = f"the scorer {scorer!r} never wrote a value that the rubric reads as {label} in this log."
        elif len(values) > 1:
            why_not[label] = f"the scorer {scorer!r} wrote several values that the rubric reads as {label} ({shown})."
        else:
            inverse[label] = next(iter(values.values()))
    return inverse, why_not


def _few(numbers: list[float]) -> str:
    return ", ".join(f"{n:g}" for n in numbers[:6]) + (", ..." if len(numbers) > 6 else "")


def _explanation(decision: dict[str, Any], round_name: str) -> str:
    by = {"majority": "the reviewers' majority", "expert": f"expert {decision['adjudicator']}"}.get(
        str(decision["method"]), f"the {decision['method']} rule"
    )
    return f"Human review (annotate, round {round_name}): {decision['label']}, decided by {by}. {decision['reason']}"


def _check_target(api: Api, plan: _Plan, source_log: Any) -> list[str]:
    """A target that exists must be an earlier writeback of the same log (it is replaced, never merged)."""
    target = plan.target
    if not (target.exists() or target.is_symlink()):
        return []
    if target.is_symlink() or not target.is_file():
        return [f"{target}: exists and is not a regular file; remove it or choose another --to folder."]
    unsafe = vet_archive(target, str(target)) if plan.fmt == "eval" else None
    if unsafe is not None:
        return [f"{unsafe} It is in --to and is not a log annotate reads; remove it or choose another --to folder."]
    try:
        prior = api.read_eval_log(str(target), header_only=True, format=plan.fmt)
    except Exception:
        return [f"{target}: exists and is not an Inspect log; remove it or choose another --to folder."]
    if (prior.eval.eval_id, prior.eval.run_id) != (source_log.eval.eval_id, source_log.eval.run_id):
        return [
            f"{target}: exists and is another evaluation's log (eval_id {prior.eval.eval_id}); remove it or choose "
            "another --to folder."
        ]
    return []


# -- writing ---------------------------------------------------------------------------------------


def _metrics(log: Any) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for score in getattr(log.results, "scores", None) or []:
        out[str(score.name)] = {str(k): float(m.value) for k, m in score.metrics.items()}
    return out


def _stage(api: Api, plan: _Plan, stage: Path) -> tuple[LogOutcome, Path | None]:
    """The plan applied to a fresh read of the verified copy and written by Inspect into ``stage``.

    Returns the outcome and the file to rename into place (None when the target already holds
    exactly this log). InputError (nothing is in place yet) when Inspect cannot apply, recompute
    or write it.
    """
    log = _read(api, plan.copy, plan.fmt, plan.source)
    out = LogOutcome(
        source=plan.source,
        sha256=plan.sha256,
        target=plan.target,
        score=plan.score,
        edits=len(plan.edits),
        samples_edited=len({(str(e.sample_id), e.epoch) for e in plan.edits}),
        reviewed=plan.reviewed,
        unresolved=plan.unresolved,
        metrics_before=_metrics(log),
    )
    samples = {(str(sample.id), int(sample.epoch)): sample for sample in log.samples or []}
    try:
        for edit in plan.edits:
            provenance = api.ProvenanceData(
                timestamp=edit.timestamp, author=edit.author, reason=edit.reason, metadata=edit.metadata
            )
            change = api.ScoreEdit(value=edit.value, explanation=edit.explanation, provenance=provenance)
            sample = samples[(str(edit.sample_id), edit.epoch)]
            known = {id(event) for event in sample.events}
            # The metrics once, after the last edit, and never by Inspect's resolver (recompute).
            api.edit_score(log, edit.sample_id, plan.score, change, recompute_metrics=False, epoch=edit.epoch)
            _settle_events(sample, known, edit, f"{plan.sha256}:{plan.score}")
    except Exception as exc:  # Inspect's own validation of an edit
        raise InputError(f"{plan.source}: Inspect could not apply the edits ({type(exc).__name__}: {exc}).") from None
    try:
        recompute(api, log)
    except Exception as exc:  # the built-in metrics' own errors on this log's scores
        raise InputError(
            f"{plan.source}: Inspect's metrics could not be recomputed ({type(exc).__name__}: {exc})."
        ) from None
    out.metrics_after = _metrics(log)
    log.eval.metadata = {
        **(log.eval.metadata or {}),
        inspect_format.WRITEBACK_MARKER: {
            "tool": inspect_format.WRITEBACK_TOOL,
            "annotate_version": __version__,
            "round": plan.round_name,
            "mode": plan.mode,
            "score": plan.score,
            "source_sha256": plan.sha256,
            "edits": len(plan.edits),
        },
    }
    fresh = stage / plan.target.name
    try:
        api.write_eval_log(log, str(fresh), format=plan.fmt)
    except Exception as exc:
        raise InputError(f"{plan.source}: Inspect could not write the copy ({type(exc).__name__}: {exc}).") from None
    del log
    if _holds_the_same(api, plan, fresh):
        fresh.unlink()
        return out, None
    return out, fresh


def _settle_events(sample: Any, known: set[int], edit: _Edit, salt: str) -> None:
    """Give the event Inspect just recorded for an edit a reproducible id, time and clock.

    Inspect stamps a ``ScoreEditEvent`` with a random id and the wall and process clocks of the
    moment it is made; the same decision would then give a different file on every run. The
    event takes the decision's time instead, an id derived from the log, the score and the
    decision, and the working time of the event before it.
    """
    events = sample.events
    for position, event in enumerate(events):
        if id(event) in known or getattr(event, "event", None) != "score_edit":
            continue
        key = f"annotate:{salt}:{edit.sample_id!r}:{edit.epoch}:{edit.metadata['decision']}"
        digest = int(sha256_bytes(key.encode()), 16)
        event.uuid = "".join(_B57[(digest >> (6 * k)) % len(_B57)] for k in range(22))
        event.timestamp = edit.timestamp
        if position > 0 and hasattr(event, "working_start"):
            event.working_start = getattr(events[position - 1], "working_start", 0.0)


def _holds_the_same(api: Api, plan: _Plan, fresh: Path) -> bool:
    """Whether the target already holds the log just written (byte for byte, or as Inspect reads it)."""
    if not plan.target.is_file():
        return False
    if _file_bytes_equal(plan.target, fresh):
        return True
    try:
        old = api.read_eval_log(str(plan.target), format=plan.fmt)
        new = api.read_eval_log(str(fresh), format=plan.fmt)
    except Exception:
        return False
    return bool(old.model_dump_json(exclude={"location"}) == new.model_dump_json(exclude={"location"}))


def _file_bytes_equal(a: Path, b: Path) -> bool:
    if a.stat().st_size != b.stat().st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        for chunk_a, chunk_b in _chunks(fa, fb):
            if chunk_a != chunk_b:
                return False
    return True


def _chunks(fa: Any, fb: Any) -> Iterator[tuple[bytes, bytes]]:
    while True:
        chunk_a, chunk_b = fa.read(_CHUNK), fb.read(_CHUNK)
        if not chunk_a and not chunk_b:
            return
        yield chunk_a, chunk_b


__all__ = ["DEFAULT_ADD_NAME", "MODES", "LogOutcome", "SampleNote", "WritebackOutcome", "writeback"]
