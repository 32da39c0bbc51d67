"""Audited score sets: `annotate export` writes them, `annotate verify` checks them.

An export is a folder ``exports/NAME/`` whose layout is a documented contract (docs/export-format.md, "The
layout"): ``scores.csv`` / ``scores.json``, ``ranking.csv``, ``flips.csv``, ``p_safer.csv``, ``p_tie.csv``,
``judges.csv``, ``judge_pairs.csv``, ``labels.csv``, ``judge_labels.csv``, ``agreement.json``,
``design.json``, ``report.html``, ``diagnostics.json`` after a diagnosis, ``manifest.json``
(sha256 of every other file, tool and schema versions, the ingested sources, the command line,
the creation time, the settings) and, with ``--sign``, ``manifest.json.sig``.

Everything in it is a pure function of ``labels.csv`` + ``judge_labels.csv`` + ``design.json`` +
the manifest's settings and provenance (+ ``diagnostics.json``, stored as computed): the store is
read once, for those inputs, and the derived files are :func:`annotate.audit.derive.derive`
of the inputs *as written*, the same call ``verify`` makes. Every CSV is spreadsheet-safe (text cells that a
spreadsheet would run as a formula carry a leading apostrophe; see ``audit.safecsv``).

Exports are immutable: an existing name is refused, and the folder is written under a temporary
name ``.NAME.tmp-PID-XXXXXXXX`` and renamed into place only when complete. Ctrl-C and SIGTERM
remove the temporary folder; one left by a process that was killed outright is swept by the next
export (only folders of that pattern, owned by this user, older than the new export, whose
process is gone and which hold nothing but export files).

Nothing personal or secret goes in: annotators appear as pseudonyms, no e-mail, token, server
URL or prompt/response text is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotate import __version__
from annotate.audit.derive import Provenance, Settings, check_diagnostics, derive
from annotate.audit.grades import Grading
from annotate.audit.record import AuditRecord, RecordProblem, json_bytes
from annotate.audit.schema import CURRENT, OPTIONAL_FILES
from annotate.audit.sign import ALGORITHM, SIGNATURE_FILE, fingerprint, load_private_key, sign
from annotate.audit.state import export_status, round_states
from annotate.audit.verify import VerifyOutcome, verify
from annotate.db import SCHEMA_VERSION
from annotate.errors import InputError, StateError
from annotate.fileio import foreign_contents, process_gone, sha256_bytes
from annotate.names import check_name
from annotate.pipeline._domains import with_hazard_population
from annotate.pipeline._resolve import rounds_to_score
from annotate.pipeline._settings import thresholds_from_settings
from annotate.pipeline.record import record_from_store

if TYPE_CHECKING:
    from annotate.config import Workspace
    from annotate.pipeline.session import Session

__all__ = ["REQUIRED_FILES", "ExportOutcome", "VerifyOutcome", "export", "verify"]

REQUIRED_FILES = CURRENT.files
#: Temporary export folders: ``.NAME.tmp-PID-XXXXXXXX`` (and, from before PIDs, ``.NAME.tmp-XXXXXXXX``).
TMP_RE = re.compile(r"\.(?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,99})\.tmp-(?:(?P<pid>[0-9]{1,10})-)?[a-z0-9_]{8}")
#: What a temporary export folder may hold (anything else means it is not ours to remove).
EXPORT_FILE_NAMES = frozenset({*REQUIRED_FILES, *OPTIONAL_FILES, "manifest.json", SIGNATURE_FILE})


def _redacted_argv(argv: list[str]) -> list[str]:
    """The command line, with database passwords and token-like values masked."""
    out = []
    for arg in argv:
        arg = re.sub(r"(://[^:/@\s]+:)[^@/\s]+@", r"\1***@", arg)
        arg = re.sub(r"\b[0-9a-fA-F]{40}\b", "***", arg)
        out.append(arg)
    return out


@dataclass
class ExportOutcome:
    """What `annotate export` wrote."""

    path: Path
    files: dict[str, str] = field(default_factory=dict)
    n_labels: int = 0
    report: Path | None = None
    manifest_sha256: str = ""
    signed_by: str | None = None  # the sha256 of the signing key's public bytes
    swept: list[str] = field(default_factory=list)  # stale temporary folders removed
    left: list[str] = field(default_factory=list)  # temporary-looking folders left alone, with why
    status: str = "final"  # "interim" while a round is not finished (audit.state)
    states: list[dict[str, Any]] = field(default_factory=list)  # each round's state


def export(
    s: Session,
    name: str,
    *,
    round_names: tuple[str, ...],
    draws: int = 4000,
    seed: int = 0,
    min_reviewed: int = 10,
    estimand: str = "fixed",
    n_boot: int = 2000,
    argv: list[str] | None = None,
    sign_key: Path | None = None,
    raw_key: bool = False,
    grading: Grading | None = None,
) -> ExportOutcome:
    """Write the audited score set of the rounds to ``exports/NAME/`` (see the module docstring).

    ``sign_key``: an Ed25519 private key (PEM or OpenSSH; raw 32 bytes with ``raw_key``) to sign the
    manifest with.
    Raises ``InputError`` for a bad name, key or settings and ``StateError`` for an existing
    export; nothing is written then.
    """
    started = time.time()
    ws, store = s.ws, s.store
    check_name(name, "export name")
    target = ws.exports_dir / name
    if not target.resolve().is_relative_to(ws.exports_dir.resolve()):
        raise InputError(f"export name {name!r}: the export would not be inside {ws.exports_dir}.")
    if target.exists() or target.is_symlink():
        raise StateError(f"{target} exists; exports are immutable. Choose another name.")
    key = load_private_key(sign_key, allow_raw=raw_key) if sign_key is not None else None
    settings = Settings(
        draws=draws,
        seed=seed,
        min_reviewed=min_reviewed,
        estimand=estimand,
        n_boot=n_boot,
        thresholds=thresholds_from_settings(ws),
        grading=grading,
    )
    try:  # the bounds verify applies, so that every export can be verified
        Settings.from_manifest(settings.to_manifest(), options=True)
    except ValueError as exc:
        raise InputError(f"{exc} Choose a value in that range.") from None
    rounds = rounds_to_score(store, round_names)
    record = record_from_store(store, rounds, label_config_sha=_label_config_sha(ws))
    if CURRENT.hazard_grades:  # N_hd per hazard, which the per-hazard grades re-derive from
        record = with_hazard_population(store, record, needed=grading is not None)
    judges = sorted({j for r in record.design.rounds for j in r.routing_judges})
    diagnosis = store.latest_diagnosis(judges[0]) if len(judges) == 1 else None
    manifest: dict[str, Any] = {
        "schema": CURRENT.name,
        "name": name,
        "tool": "annotate",
        "tool_version": __version__,
        "store_schema_version": SCHEMA_VERSION,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": _redacted_argv(argv if argv is not None else sys.argv),
        "rounds": rounds,
        "settings": settings.to_manifest(),
        "csv": "spreadsheet-safe: a text cell that begins with =, +, -, @, a tab or a carriage return (after any "
        "apostrophes) carries one more leading apostrophe; numbers are written as they are",
        "files": {},
        "sources": [
            {"path": shareable_path(str(r.path), ws.root), "sha256": str(r.sha256), "format": str(r.format)}
            for r in store.source_files().itertuples()
        ],
    }
    if key is not None:
        manifest["signature"] = {
            "algorithm": ALGORITHM,
            "public_key_sha256": fingerprint(key.public_key()),
            "file": SIGNATURE_FILE,
        }
    inputs = record.to_files(CURRENT)
    if diagnosis is not None:
        inputs["diagnostics.json"] = json_bytes(diagnosis)
    # From here on, everything is computed from the record as written, exactly as verify reads it;
    # what verify will check of the inputs holds now, or there is no export: one that does not
    # verify is never written.
    try:
        written_record = AuditRecord.from_files(inputs, CURRENT)
    except RecordProblem as exc:
        raise StateError(
            "the review data would not make a verifiable export: "
            + "; ".join(exc.problems[:3])
            + ". "
            + _REMEDY.get(exc.file, _REMEDY["labels.csv"]).format(rounds=" ".join(f"--round {r}" for r in rounds))
        ) from None
    # Where the rounds stand (interim or final), from the record as written: what verify re-derives.
    states = round_states(written_record.labels, written_record.design)
    manifest["status"] = export_status(states)
    manifest["rounds_state"] = states
    diagnosis_rt = json.loads(inputs["diagnostics.json"]) if diagnosis is not None else None
    problems = check_diagnostics(diagnosis_rt, written_record.design) if diagnosis_rt is not None else []
    if problems:
        raise StateError(
            "the stored ambiguity diagnostics are inconsistent: " + "; ".join(problems[:3]) + ". Run "
            "`annotate diagnose` again, then export again."
        )
    try:
        prov = Provenance.from_manifest(manifest)
    except ValueError as exc:
        raise StateError(f"the store's record of the ingested files is unusable: {exc}") from None

    ws.exports_dir.mkdir(parents=True, exist_ok=True)
    outcome = ExportOutcome(path=target, n_labels=len(record.labels), report=target / "report.html")
    outcome.swept, outcome.left = sweep_stale(ws.exports_dir, before=started)
    with _terminate_as_interrupt():
        # A SIGTERM or Ctrl-C between the folder's creation and the try below would leave it
        # behind: they wait (blocked, not lost) until the try can clean up after them.
        held = _block_signals()
        try:
            tmp = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-{os.getpid()}-", dir=ws.exports_dir))
        except BaseException:
            _unblock_signals(held)
            raise
        try:
            _unblock_signals(held)
            for fname, data in inputs.items():
                (tmp / fname).write_bytes(data)
            try:
                derived = derive(written_record, settings, prov, CURRENT, diagnosis_rt)
            except ValueError as exc:  # the design cannot be scored as asked (e.g. overlapping rounds)
                raise InputError(str(exc)) from None
            for fname, data in derived.items():
                (tmp / fname).write_bytes(data)
            written = {**inputs, **derived}
            manifest["files"] = {f: sha256_bytes(written[f]) for f in sorted(written)}
            raw = json_bytes(manifest)
            (tmp / "manifest.json").write_bytes(raw)
            if key is not None:
                (tmp / SIGNATURE_FILE).write_bytes(sign(key, raw))
                outcome.signed_by = manifest["signature"]["public_key_sha256"]
            for p in tmp.iterdir():  # make the content durable before it becomes visible
                with open(p, "rb") as fh:
                    os.fsync(fh.fileno())
            os.chmod(tmp, 0o755)
            try:
                tmp.rename(target)  # atomic: the export appears complete or not at all
            except OSError:
                raise StateError(
                    f"{target} appeared while exporting; exports are immutable. Choose another name."
                ) from None
        except BaseException:
            with _signals_held():
                shutil.rmtree(tmp, ignore_errors=True)
            raise
    outcome.files = manifest["files"]
    outcome.manifest_sha256 = sha256_bytes(raw)
    outcome.status = manifest["status"]
    outcome.states = states
    return outcome


#: The step that changes the outcome when an export's record would not verify, by the file at fault.
_REMEDY = {
    # Votes pulled since the last adjudication: adjudicating records the decisions they give.
    "labels.csv": "Run `annotate adjudicate {rounds}` (the votes changed since the last adjudication), then export "
    "again.",
    # A reviewer's project lacks some of the round's tasks (a route interrupted before it sent them all).
    "order.csv": "Run `annotate route` for the round again (it sends every reviewer the tasks they lack), then "
    "export again.",
    "judge_labels.csv": "The store's judge verdicts disagree with the reviewed rows; run `annotate ingest` of the "
    "judges' files again, then export again.",
    "design.json": "The round's recorded design is inconsistent; see the message above.",
}


def shareable_path(path: str, root: Path) -> str:
    """A source file's path as an export names it: relative to the workspace when inside it, else its
    file name alone (an absolute path would publish the user's folders; the sha256 names the content).

    >>> shareable_path("/home/ana/audit/runs/a.jsonl", Path("/home/ana/audit"))
    'runs/a.jsonl'
    >>> shareable_path("/home/ana/private/a.jsonl", Path("/home/ana/audit"))
    'a.jsonl'
    """
    p = Path(path)
    try:
        return p.relative_to(root).as_posix() if p.is_absolute() else p.as_posix()
    except ValueError:
        return p.name


def _label_config_sha(ws: Workspace) -> str | None:
    try:
        return sha256_bytes(ws.label_config_path.read_bytes())
    except FileNotFoundError:
        return None


# -- interruptions ---------------------------------------------------------------------------


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"terminated by signal {signum}")


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM handled like Ctrl-C (a KeyboardInterrupt) while the temporary folder exists."""
    if not _in_main_thread():  # signal handlers can only be set from the main thread
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


_STOPS = {signal.SIGINT, signal.SIGTERM}


def _block_signals() -> bool:
    """Block Ctrl-C and SIGTERM (they stay pending); True when they were blocked here."""
    if not _in_main_thread() or not hasattr(signal, "pthread_sigmask"):
        return False
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    return True


def _unblock_signals(held: bool) -> None:
    """Deliver what :func:`_block_signals` held back (its handler runs now, where cleanup is in place)."""
    if held:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM ignored while a temporary folder is removed, so that a second one cannot stop it."""
    if not _in_main_thread():
        yield
        return
    saved = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def sweep_stale(exports_dir: Path, *, before: float) -> tuple[list[str], list[str]]:
    """Remove temporary export folders that interrupted exports left behind.

    A folder is removed only if its name matches ``.NAME.tmp-PID-XXXXXXXX`` (or the older
    ``.NAME.tmp-XXXXXXXX``), it is a real folder (not a link) owned by this user, it was last
    changed before ``before`` (the start of the current export), the process ``PID`` is gone, and
    it holds nothing but regular files with the names an export writes. Returns the names removed
    and, for folders of that pattern left alone for another reason than age or a live process,
    the name and why.
    """
    swept: list[str] = []
    left: list[str] = []
    try:
        names = sorted(os.listdir(exports_dir))
    except FileNotFoundError:
        return swept, left
    uid = os.getuid()
    for name in names:
        m = TMP_RE.fullmatch(name)
        if not m:
            continue
        path = exports_dir / name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            left.append(f"{name} (not a folder)")
            continue
        if st.st_uid != uid:
            left.append(f"{name} (owned by another user)")
            continue
        # This process's own pid: it is not writing that folder (its own does not exist yet).
        if st.st_mtime >= before or (m["pid"] and not process_gone(int(m["pid"]), own=True)):
            continue  # possibly another export still running
        why = foreign_contents(path, EXPORT_FILE_NAMES.__contains__, "export")
        if why is not None:
            left.append(f"{name} ({why})")
            continue
        shutil.rmtree(path)
        swept.append(name)
    return swept, left
