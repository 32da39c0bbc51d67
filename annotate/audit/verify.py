"""`annotate verify`: what an export proves, file by file.

Every file is read once, without following a symbolic link (``O_NOFOLLOW`` relative to the
folder's own descriptor) and only if it is a regular file; its sha256 is compared with the
manifest's, and any missing or extra file is a failure: the files must be exactly those of the
schema the manifest names (``audit.schema``). Then every file the schema re-derives is re-derived
from the audit record (``labels.csv``, ``judge_labels.csv``, ``design.json``) with the
manifest's settings (:func:`annotate.audit.derive.derive`, the code ``export`` ran) and compared:
``scores.csv`` (every column), ``scores.json``, ``ranking.csv``, ``flips.csv``, ``p_safer.csv``,
``p_tie.csv``, ``judges.csv``, ``judge_pairs.csv``, ``agreement.json`` (per-annotator figures
included) and ``report.html`` (byte for byte). labels.csv is checked against design.json and its
``ds_label`` column re-derived from its annotator columns; judge_labels.csv is checked against
labels.csv; ``diagnostics.json`` is checked for its hash and internal consistency only. Each file
ends with one status: ``re-derived and equal``, ``hash matches`` (an input) or ``checked only for
hash`` (with the reason), or ``FAILED``. The manifest's own sha256 is reported so that it can be
published, and a detached signature is checked with ``--key``.

Exports of a schema whose methods this version no longer has (``annotate-export/1``) are checked
for their hashes and the form of their inputs; each derived file says why it was not re-derived.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotate.audit.derive import Provenance, Settings, check_diagnostics, derive
from annotate.audit.design import Design, DesignError
from annotate.audit.labels import LABEL_COLUMNS, read_labels
from annotate.audit.record import AuditRecord, RecordProblem
from annotate.audit.safecsv import CsvProblem, parse_csv
from annotate.audit.schema import CURRENT, MAX_LISTED, OPTIONAL_FILES, SCHEMAS, ExportSchema, schema_named
from annotate.audit.sign import SIGNATURE_FILE, fingerprint, load_public_key, signature_valid
from annotate.audit.state import describe, export_status, round_states
from annotate.errors import InputError
from annotate.fileio import sha256_bytes
from annotate.stats.scoring import check_scores

__all__ = ["FileCheck", "VerifyOutcome", "verify"]

MAX_FILE_BYTES = 2**31  # larger than any export file; a bigger one is refused before it is read

EQUAL = "re-derived and equal"
HASH = "hash matches"
HASH_ONLY = "checked only for hash"
FAILED = "FAILED"

#: The columns that name a row of each CSV in messages.
ROW_KEYS = {
    "scores.csv": ("model", "benchmark", "treatment"),
    "ranking.csv": ("benchmark", "treatment"),
    "flips.csv": ("benchmark", "treatment", "model_a", "model_b"),
    "p_safer.csv": ("model",),
    "p_tie.csv": ("model",),
    "judges.csv": ("judge", "benchmark", "model"),
    "judge_pairs.csv": ("benchmark", "model", "judge_a", "judge_b"),
    "judge_models.csv": ("judge", "model", "figure"),
}


@dataclass
class FileCheck:
    """What verify established about one file."""

    file: str
    status: str  # EQUAL, HASH, HASH_ONLY or FAILED
    detail: str = ""


@dataclass
class VerifyOutcome:
    """The result of :func:`verify`: per-file statuses, problems, the manifest's sha256, the signature."""

    path: Path
    problems: list[str] = field(default_factory=list)
    files: dict[str, FileCheck] = field(default_factory=dict)
    schema: str | None = None
    manifest_sha256: str | None = None
    signature: str = "not signed"
    checked_files: int = 0
    rederived_rows: int = 0
    rederived_files: int = 0
    #: ``interim`` or ``final`` as re-derived from labels.csv (annotate-export/8 on); None before.
    export_status: str | None = None
    #: Each round's state as re-derived (annotate-export/8 on).
    states: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def fail(self, name: str | None, problem: str) -> None:
        """Record a problem, and mark the file it is about as failed (its first problem is the detail)."""
        self.problems.append(problem)
        if name is None:
            return
        check = self.files.get(name)
        if check is None or check.status != FAILED:
            self.files[name] = FileCheck(name, FAILED, problem)

    def status(self, name: str, status: str, detail: str = "") -> None:
        """Set a file's status unless it has already failed."""
        check = self.files.get(name)
        if check is None or check.status != FAILED:
            self.files[name] = FileCheck(name, status, detail)

    def as_dict(self) -> dict[str, Any]:
        """The outcome as ``verify --json`` prints it."""
        return {
            "path": str(self.path),
            "ok": self.ok,
            "schema": self.schema,
            "manifest_sha256": self.manifest_sha256,
            "signature": self.signature,
            "files": [vars(c) for c in self.ordered_files()],
            "problems": self.problems,
            "checked_files": self.checked_files,
            "rederived_files": self.rederived_files,
            "rederived_rows": self.rederived_rows,
            "export_status": self.export_status,
        }

    def ordered_files(self) -> list[FileCheck]:
        """The file checks, in the export layout's order, then any other file by name."""
        names = (*CURRENT.files, *CURRENT.optional_derived, *OPTIONAL_FILES, "manifest.json", SIGNATURE_FILE)
        order = {n: i for i, n in enumerate(names)}
        return sorted(self.files.values(), key=lambda c: (order.get(c.file, len(order)), c.file))


# -- reading the folder ----------------------------------------------------------------------


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symbolic link"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISFIFO(mode):
        return "named pipe"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def _read_folder(path: Path, out: VerifyOutcome) -> dict[str, bytes]:
    """The regular files directly in ``path``, read without following any link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such folder; pass the export's folder, e.g. exports/NAME.") from None
    if stat.S_ISLNK(st.st_mode):
        raise InputError(
            f"{path} is a symbolic link; verify never follows links. Pass the export's real folder "
            f"({os.path.realpath(path)}) after checking that it is the one you mean."
        )
    if not stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path} is not a folder; pass the export's folder, e.g. exports/NAME.")
    dir_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    files: dict[str, bytes] = {}
    try:
        for name in sorted(os.listdir(dir_fd)):
            st = os.lstat(name, dir_fd=dir_fd)
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(name, dir_fd=dir_fd)
                out.fail(
                    name,
                    f"{name} is a symbolic link (to {target}); an export holds regular files only, and verify "
                    "never follows links.",
                )
                continue
            if stat.S_ISDIR(st.st_mode):
                out.fail(name, f"extra folder not in the manifest: {name}/")
                continue
            if not stat.S_ISREG(st.st_mode):
                out.fail(
                    name, f"{name} is a {_kind(st.st_mode)}, not a regular file; an export holds regular files only."
                )
                continue
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
            except OSError as exc:
                # ELOOP: the name became a link after it was listed.
                why = "it is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
                out.fail(name, f"{name} cannot be read ({why}).")
                continue
            with os.fdopen(fd, "rb") as fh:
                st = os.fstat(fh.fileno())
                if not stat.S_ISREG(st.st_mode):  # swapped between the listing and the open
                    out.fail(name, f"{name} is a {_kind(st.st_mode)}, not a regular file.")
                    continue
                if st.st_size > MAX_FILE_BYTES:
                    out.fail(name, f"{name} is {st.st_size:,} bytes, larger than any export file; not read.")
                    continue
                files[name] = fh.read(MAX_FILE_BYTES + 1)
    finally:
        os.close(dir_fd)
    return files


# -- comparisons -----------------------------------------------------------------------------


def _close(a: str, b: str, tolerance: float) -> bool:
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return abs(x - y) <= tolerance * (1 + abs(y))


def _compare_csv(name: str, stored: bytes, again: bytes, source: str, tolerance: float, restore: bool) -> list[str]:
    """Differences between a CSV as stored and as re-derived, cell by cell (numbers within ``tolerance``)."""
    try:
        a = parse_csv(stored, name, restore_cells=restore)
    except CsvProblem as exc:
        return [f"{exc} (re-derived from {source}, it is a valid table)"]
    b = parse_csv(again, name, restore_cells=restore)
    if a.header != b.header:
        return [f"{name}: the columns are {a.header}; re-derived from {source} they are {b.header}."]
    found: list[str] = []
    if len(a.rows) != len(b.rows):
        found.append(f"{name}: {len(a.rows)} rows; re-derived from {source} there are {len(b.rows)}.")
    keys = [a.header.index(k) for k in ROW_KEYS.get(name, ()) if k in a.header]
    for row_a, row_b, line in zip(a.rows, b.rows, a.lines, strict=False):
        what = " x ".join(row_b[k] for k in keys)
        for col, x, y in zip(a.header, row_a, row_b, strict=True):
            if x != y and not _close(x, y, tolerance):
                found.append(
                    f"{name}:{line} ({what}): {col} is {x!r}; re-derived from {source} it is {y!r}."
                    if what
                    else f"{name}:{line}: {col} is {x!r}; re-derived from {source} it is {y!r}."
                )
    return found


def _compare_json(name: str, a: Any, b: Any, where: str, tolerance: float, found: list[str]) -> None:
    """Differences between a JSON document as stored and as re-derived, appended to ``found``."""
    try:
        _compare_values(name, a, b, where, tolerance, found)
    except RecursionError:  # a hostile file nested deeper than any export writes
        found.append(f"{name}: nested deeper than any export file.")


def _compare_values(name: str, a: Any, b: Any, where: str, tolerance: float, found: list[str]) -> None:
    if len(found) > MAX_LISTED:
        return
    if isinstance(b, dict) and isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                missing = "missing from the file" if k not in a else "not in the re-derived file"
                found.append(f"{name} {where}.{k}: {missing}.")
            else:
                _compare_values(name, a[k], b[k], f"{where}.{k}", tolerance, found)
    elif isinstance(b, list) and isinstance(a, list):
        if len(a) != len(b):
            found.append(f"{name} {where or '.'}: {len(a)} entries; re-derived there are {len(b)}.")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _compare_values(name, x, y, f"{where}[{i}]", tolerance, found)
    elif a != b or type(a) is not type(b):
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
        if numbers and abs(a - b) <= tolerance * (1 + abs(b)):
            return
        found.append(f"{name} {where or '.'}: the file says {a!r}; re-derived it is {b!r}.")


def _first_difference(stored: bytes, again: bytes) -> str:
    a, b = stored.decode("utf-8", "replace").split("\n"), again.decode("utf-8", "replace").split("\n")
    for i, (x, y) in enumerate(zip(a, b, strict=False), start=1):
        if x != y:
            return f"line {i} is {x.strip()[:160]!r}; re-rendered it is {y.strip()[:160]!r}"
    return f"{len(a)} lines; re-rendered there are {len(b)}"


def _listed(found: list[str], what: str) -> list[str]:
    return found[:MAX_LISTED] + ([f"... and {len(found) - MAX_LISTED} more {what}"] if len(found) > MAX_LISTED else [])


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refused when it names a key twice (which reader's value would count?)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


# -- the check -------------------------------------------------------------------------------


def verify(path: Path, *, key: Path | None = None, tolerance: float = 1e-9) -> VerifyOutcome:
    """Check an export folder: files and hashes, the signature, and every derived file re-derived.

    Parameters
    ----------
    path : Path
        The export's folder (never a symbolic link).
    key : Path, optional
        An Ed25519 public key; the signature ``manifest.json.sig`` must then exist and be valid.
    tolerance : float
        Relative difference up to which two numbers in a CSV or JSON file count as equal.

    Raises
    ------
    InputError
        ``path`` is not a folder (or is a link), or ``key`` is not a usable public key.
    """
    path = Path(path)
    out = VerifyOutcome(path=path)
    public_key = None
    if key is not None:
        public_key = load_public_key(key)  # a bad key is bad input: refused before anything is read
    files = _read_folder(path, out)
    raw = files.pop("manifest.json", None)
    if raw is None:
        if "manifest.json" not in out.files:
            raise InputError(f"{path}: no manifest.json here; is this an annotate export?")
        return out
    out.manifest_sha256 = sha256_bytes(raw)  # the manifest has no hash to match: it is printed to be published
    try:
        manifest = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_repeated_keys)
        if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
            raise ValueError("it must be an object with a files object")
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        out.fail("manifest.json", f"manifest.json is unreadable ({exc}).")
        return out
    out.schema = manifest.get("schema") if isinstance(manifest.get("schema"), str) else None
    schema = schema_named(out.schema)
    _check_signature(out, manifest, raw, files.pop(SIGNATURE_FILE, None), public_key, key)
    _check_hashes(out, manifest["files"], files, schema)
    if schema is not None:
        _check_writer(out, manifest, schema)
    if schema is None:
        out.fail(
            "manifest.json",
            f"manifest.json: unknown export schema {manifest.get('schema')!r} (known: {', '.join(SCHEMAS)}); "
            "nothing re-derived.",
        )
    elif schema.rederived:
        _rederive(out, manifest, files, tolerance, schema)
    else:
        _check_unrederived(out, files, schema)
    out.rederived_files = sum(c.status == EQUAL for c in out.files.values())
    return out


def _check_signature(
    out: VerifyOutcome, manifest: dict[str, Any], raw: bytes, sig: bytes | None, public_key: Any, key: Path | None
) -> None:
    declared = manifest.get("signature")
    if sig is None and SIGNATURE_FILE in out.files:  # there, but a link or not a regular file
        out.signature = "refused"
        return
    if public_key is None:
        if sig is None and declared:
            out.signature = "FAILED"
            out.fail(SIGNATURE_FILE, f"missing file: {SIGNATURE_FILE} (manifest.json says the export was signed)")
        elif sig is not None and not declared:
            out.signature = "FAILED"
            out.fail(SIGNATURE_FILE, f"extra file: {SIGNATURE_FILE}, but manifest.json does not say it was signed")
        elif sig is not None:
            named = declared.get("public_key_sha256") if isinstance(declared, dict) else None
            by = f" by the key with sha256 {named}" if isinstance(named, str) else ""
            out.signature = f"signed{by}; NOT checked: pass --key PUBFILE (the public key you trust) to check it"
            out.status(SIGNATURE_FILE, "not checked", f"signed{by}; pass --key PUBFILE to check the signature")
        return
    mine = fingerprint(public_key)
    if sig is None:
        out.signature = "FAILED"
        out.fail(SIGNATURE_FILE, f"not signed: {SIGNATURE_FILE} is missing, and --key {key} asks for a signature.")
        return
    theirs = declared.get("public_key_sha256") if isinstance(declared, dict) else None
    if not signature_valid(public_key, sig, raw):
        out.signature = "FAILED"
        other = f" (manifest.json names key sha256 {theirs}, --key is {mine})" if theirs and theirs != mine else ""
        out.fail(
            SIGNATURE_FILE,
            f"the signature in {SIGNATURE_FILE} does not match manifest.json and the key {key}{other}: the manifest "
            "was changed after signing, or signed with another key.",
        )
        return
    if theirs != mine:
        out.signature = "FAILED"
        out.fail(SIGNATURE_FILE, f"manifest.json names signing key sha256 {theirs!r}, but the valid key is {mine}.")
        return
    out.signature = f"signature valid (Ed25519, public key sha256 {mine})"
    out.status(SIGNATURE_FILE, "signature valid", f"Ed25519 signature of manifest.json by key sha256 {mine}")


def _check_writer(out: VerifyOutcome, manifest: dict[str, Any], schema: ExportSchema) -> None:
    """What no writer of the claimed schema could have written: a store newer than its last writer's, a
    status where it records none (an export relabelled as an older schema to escape later checks)."""
    store = manifest.get("store_schema_version")
    if schema.last_store is not None and isinstance(store, int) and store > schema.last_store:
        out.fail(
            "manifest.json",
            f"manifest.json: store_schema_version {store}, but no writer of {schema.name} exports had a store "
            f"newer than version {schema.last_store}: the export was written by a later annotate.",
        )
    if not schema.round_state:
        said = [k for k in ("status", "rounds_state") if k in manifest]
        if said:
            out.fail(
                "manifest.json",
                f"manifest.json: {' and '.join(said)}, which {schema.name} exports do not record (an export's "
                "interim or final state is recorded since annotate-export/8).",
            )
    else:
        out.export_status = out.export_status or (
            manifest.get("status") if manifest.get("status") in ("interim", "final") else None
        )


def _check_hashes(
    out: VerifyOutcome, listed: dict[str, Any], files: dict[str, bytes], schema: ExportSchema | None
) -> None:
    """Every listed file present with its hash, no file unlisted, and exactly the schema's files."""
    required = schema.files if schema is not None else ()
    known = (*required, *OPTIONAL_FILES, *schema.optional_derived) if schema is not None else None
    for name in sorted(listed):
        sha = listed[name]
        if not isinstance(sha, str) or len(sha) != 64:
            out.fail(name, f"manifest.json: the sha256 of {name} is not a sha256.")
        elif known is not None and name not in known:
            out.fail(name, f"manifest.json lists {name}, which is not a file of an {out.schema} export.")
        elif name not in files:
            if name not in out.files:
                out.fail(name, f"missing file: {name}")
        else:
            got = sha256_bytes(files[name])
            out.checked_files += 1
            if got != sha:
                out.fail(name, f"changed: {name} (sha256 {got[:16]}..., manifest says {sha[:16]}...)")
            else:
                out.status(name, HASH, "")
    for name in sorted(set(files) - set(listed)):
        out.fail(name, f"extra file not in the manifest: {name}")
    for name in required:
        if name not in listed and name not in out.files:
            out.fail(name, f"missing file: {name} (every {out.schema} export has one; the manifest omits it)")


def _rederive(
    out: VerifyOutcome, manifest: dict[str, Any], files: dict[str, bytes], tolerance: float, schema: ExportSchema
) -> None:
    derived = schema.derived

    def skip(why: str) -> None:
        for name in derived:
            if name in files:
                out.status(name, HASH_ONLY, f"not re-derived: {why}")

    try:
        settings = Settings.from_manifest(manifest.get("settings"))
        prov = Provenance.from_manifest(manifest)
    except ValueError as exc:
        out.fail("manifest.json", str(exc))
        return skip("the manifest's settings or provenance are unusable")
    missing = [f for f in schema.inputs if f not in files]
    if missing:
        return skip(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing")
    try:
        record = AuditRecord.from_files(files, schema)
    except RecordProblem as exc:
        for p in exc.problems:
            out.fail(exc.file, p)
        return skip(_UNUSABLE.get(exc.file, f"{exc.file} is unusable"))
    for name in schema.inputs:
        said = _INPUT_STATUS[name]
        if name == "labels.csv" and schema.channels:
            said += "; its channels column names every answer's channel, counted as design.json's channels say"
        out.status(name, HASH, said)
    if schema.round_state:
        _check_state(out, manifest, record)
    diagnostics = None
    if "diagnostics.json" in files:
        try:
            diagnostics = json.loads(files["diagnostics.json"].decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            out.fail("diagnostics.json", f"diagnostics.json is not JSON ({exc}).")
            return skip("diagnostics.json, which the report shows, is not JSON")
        for p in check_diagnostics(diagnostics, record.design):
            out.fail("diagnostics.json", p)
        out.status(
            "diagnostics.json",
            HASH_ONLY,
            "stored as computed: re-deriving it needs the response texts, which an export does not hold; its "
            "internal consistency was checked, and the report's section re-rendered from it",
        )
    source = " and ".join([", ".join(schema.inputs[:-1]), schema.inputs[-1]]) if len(schema.inputs) > 1 else ""
    try:
        again = derive(record, settings, prov, schema, diagnostics)
    except (ValueError, KeyError, TypeError) as exc:
        out.fail(None, f"cannot re-derive the export from {source}: {exc}")
        return skip("the computation failed on these inputs")
    for name in derived:
        if name not in files:
            continue  # already reported missing
        if name in schema.rederived:
            _compare_file(out, name, files[name], again[name], source, tolerance)
        else:
            out.status(name, HASH_ONLY, f"not re-derived: {schema.not_rederived}")
    for name in schema.optional_derived:  # present exactly when what derives them is there
        why, not_there = _OPTIONAL_BECAUSE.get(name, ("the export's inputs derive it", "nothing derives it"))
        if name in files and name not in again:
            out.fail(name, f"{name} is present, but {not_there}.")
        elif name in again and name not in files:
            if name not in out.files:
                out.fail(name, f"missing file: {name} ({why})")
        elif name in files:
            _compare_file(out, name, files[name], again[name], source, tolerance)
    if "scores.csv" in files:
        _check_score_rules(out, files["scores.csv"])
    if "scores.csv" in out.files and out.files["scores.csv"].status == EQUAL:
        out.rederived_rows = len(parse_csv(again["scores.csv"], "scores.csv").rows)


#: When an optional derived file is present (exactly then).
_OPTIONAL_BECAUSE = {
    "grades.csv": (
        "the manifest's settings record a grading",
        "the manifest's settings record no grading that derives it",
    ),
    "hazard_agreement.json": (
        "labels.csv holds reviewers' hazard answers",
        "labels.csv holds no reviewers' hazard answers that derive it",
    ),
}
#: Why nothing is re-derived when an input is unusable.
_UNUSABLE = {
    "design.json": "design.json is malformed",
    "labels.csv": "labels.csv does not agree with itself or with design.json",
    "judge_labels.csv": "judge_labels.csv does not agree with itself or with labels.csv",
    "order.csv": "order.csv does not agree with labels.csv and design.json",
}
#: What a checked input's status says.
_INPUT_STATUS = {
    "design.json": "an input: the sampling design; well formed",
    "labels.csv": "an input: the reviewed labels; its rows are design.json's samples, and its ds_label column, "
    "re-derived from the annotator columns, is equal",
    "judge_labels.csv": "an input: every judge's verdict on the reviewed responses; its rows are labels.csv's "
    "responses, with the routing judge's verdicts as labels.csv has them",
    "order.csv": "an input: each reviewer's task order; its rows are labels.csv's responses for every reviewer "
    "(an imported round: the items its file gave each rater), and every position, re-derived from design.json's "
    "order design, is equal",
}


def _check_state(out: VerifyOutcome, manifest: dict[str, Any], record: AuditRecord) -> None:
    """The manifest's ``status`` and ``rounds_state`` against the rounds' state re-derived from labels.csv."""
    states = round_states(record.labels, record.design)
    status = export_status(states)
    if manifest.get("status") != status:
        out.fail(
            "manifest.json",
            f"manifest.json: status {manifest.get('status')!r}; labels.csv and design.json make the export {status!r}"
            f" ({'; '.join(describe(s) for s in states if s['status'] != 'final') or 'every round finished'}).",
        )
    found: list[str] = []
    _compare_json("manifest.json", manifest.get("rounds_state"), states, "rounds_state", 0.0, found)
    for p in _listed(found, "differences in rounds_state"):
        out.fail("manifest.json", p)
    out.export_status, out.states = status, states


def _compare_file(out: VerifyOutcome, name: str, stored: bytes, again: bytes, source: str, tolerance: float) -> None:
    """One derived file as stored against its re-derivation: byte for byte, else cell by cell."""
    if stored == again:
        out.status(name, EQUAL, f"from {source} with the manifest's settings")
        return
    if name.endswith(".csv"):
        found = _compare_csv(name, stored, again, source, tolerance, restore=True)
    elif name.endswith(".json"):
        try:
            parsed = json.loads(stored.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            found = [f"{name} is not JSON ({exc})."]
        else:
            found = []
            _compare_json(name, parsed, json.loads(again), "", tolerance, found)
    else:
        found = [
            f"report.html differs from the report re-rendered from the export's files: "
            f"{_first_difference(stored, again)}."
        ]
    for p in _listed(found, "differences"):
        out.fail(name, p)
    if not found:
        out.status(name, EQUAL, f"from {source}; numbers equal within a relative {tolerance:g}")


def _check_score_rules(out: VerifyOutcome, stored: bytes) -> None:
    """Every row of scores.csv as written keeps its own rules (an estimate inside its interval, ...)."""
    try:
        table = parse_csv(stored, "scores.csv")
        rows = table.frame()
    except CsvProblem:
        return  # already reported
    for problem in check_scores(rows, source="scores.csv", lines=table.lines):
        out.fail("scores.csv", problem)


def _check_unrederived(out: VerifyOutcome, files: dict[str, bytes], schema: ExportSchema) -> None:
    """A schema this version cannot re-derive (``annotate-export/1`` to ``/4``): its inputs checked for their form,
    every derived file for its hash only, each with the reason; CSVs must have that schema's columns."""
    for name, header in schema.headers:
        if name not in files:
            continue
        try:
            found = parse_csv(files[name], name, restore_cells=schema.neutralised).header
        except CsvProblem as exc:
            out.fail(name, str(exc))
            continue
        fixed = list(header) if name != "labels.csv" else list(header) + found[len(header) :]
        # labels.csv's annotator columns follow the fixed ones; a later schema's label column there is
        # not an annotator (a later export relabeled as this schema)
        later = [c for c in found if c not in header and (name != "labels.csv" or c in LABEL_COLUMNS)]
        if found != fixed or later:
            why = f" (columns of a later schema: {', '.join(later)})" if later else ""
            out.fail(
                name,
                f"{name}: the columns are not those of an {schema.name} export{why}; the manifest claims a schema "
                "its files do not have.",
            )
    for name in schema.derived:
        if name in files:
            out.status(name, HASH_ONLY, f"not re-derived: {schema.not_rederived}")
    if "diagnostics.json" in files:
        out.status("diagnostics.json", HASH_ONLY, "stored as computed: re-deriving it needs the response texts")
    if "design.json" in files:
        try:
            Design.from_json(json.loads(files["design.json"].decode("utf-8")))
        except DesignError as exc:
            for p in exc.problems:
                out.fail("design.json", p)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            out.fail("design.json", f"design.json is not JSON ({exc}).")
        else:
            out.status("design.json", HASH, "an input: the sampling design; well formed")
    if "labels.csv" in files:
        try:
            read_labels(files["labels.csv"], restore=schema.neutralised)
        except CsvProblem as exc:
            out.fail("labels.csv", str(exc))
        else:
            out.status("labels.csv", HASH, "an input: the reviewed labels; a readable table")
