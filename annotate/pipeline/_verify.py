"""`annotate verify`: what an export proves, file by file.

Every file is read once, without following a symbolic link (``O_NOFOLLOW`` relative to the
folder's own descriptor) and only if it is a regular file; its sha256 is compared with the
manifest's, and any missing or extra file is a failure. Then, for an ``annotate-export/3``
export, every derived file is re-derived from ``labels.csv``, ``judge_labels.csv`` and
``design.json`` with the manifest's settings (:func:`annotate.pipeline._derive.derive`, the code
``export`` ran) and compared: ``scores.csv`` (every column), ``scores.json``, ``ranking.csv``,
``flips.csv``, ``p_safer.csv``, ``p_tie.csv``, ``judges.csv``, ``judge_pairs.csv``,
``agreement.json`` (per-annotator figures included) and ``report.html`` (byte for byte).
labels.csv is checked against design.json and its ``ds_label`` column re-derived from its
annotator columns; judge_labels.csv is checked against labels.csv; ``diagnostics.json`` is
checked for its hash and internal consistency only. An ``annotate-export/2`` export (no judge
files) is checked the same way for the files it has. Each file ends with one status:
``re-derived and equal``, ``hash matches`` (an input) or ``checked only for hash`` (with the
reason), or ``FAILED``. The manifest's own sha256 is reported so that it can be published, and a
detached signature is checked with ``--key``.

Exports of schema ``annotate-export/1`` are checked as far as they allow: hashes, and scores.csv
re-derived; the outcome says what could not be re-derived.
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

from annotate.errors import InputError
from annotate.fileio import sha256_bytes
from annotate.pipeline._derive import (
    CSV_FILES,
    DERIVED_FILES,
    EXPORT_SCHEMA,
    INPUT_FILES,
    JSON_FILES,
    MAX_LISTED,
    SCHEMA_2,
    CsvProblem,
    Provenance,
    Settings,
    check_design,
    check_diagnostics,
    check_judge_labels,
    check_labels,
    derive,
    derived_files,
    input_files,
    json_bytes,
    read_judge_labels,
    read_labels,
)
from annotate.pipeline._sign import SIGNATURE_FILE
from annotate.pipeline._spreadsheet import parse_csv

__all__ = ["FileCheck", "VerifyOutcome", "verify"]

SCHEMA_1 = "annotate-export/1"
#: Every file of an annotate-export/3 folder (diagnostics.json only after a diagnosis), manifest aside.
EXPORT_FILES = (*INPUT_FILES, *DERIVED_FILES)
#: The schemas whose every derived file is re-derived.
FULL_SCHEMAS = (EXPORT_SCHEMA, SCHEMA_2)
OPTIONAL_FILES = ("diagnostics.json",)
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
        }

    def ordered_files(self) -> list[FileCheck]:
        """The file checks, in the export layout's order, then any other file by name."""
        order = {n: i for i, n in enumerate((*EXPORT_FILES, *OPTIONAL_FILES, "manifest.json", SIGNATURE_FILE))}
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
        from annotate.pipeline._sign import load_public_key

        public_key = load_public_key(key)  # a bad key is bad input: refused before anything is read
    files = _read_folder(path, out)
    raw = files.pop("manifest.json", None)
    if raw is None:
        if "manifest.json" not in out.files:
            raise InputError(f"{path}: no manifest.json here; is this an annotate export?")
        return out
    out.manifest_sha256 = sha256_bytes(raw)  # the manifest has no hash to match: it is printed to be published
    try:
        manifest = json.loads(raw.decode("utf-8"))
        if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
            raise ValueError("it must be an object with a files object")
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        out.fail("manifest.json", f"manifest.json is unreadable ({exc}).")
        return out
    out.schema = manifest.get("schema") if isinstance(manifest.get("schema"), str) else None
    _check_signature(out, manifest, raw, files.pop(SIGNATURE_FILE, None), public_key, key)
    _check_hashes(out, manifest["files"], files)
    if out.schema in FULL_SCHEMAS:
        _rederive(out, manifest, files, tolerance, out.schema)
    elif out.schema == SCHEMA_1:
        _rederive_v1(out, manifest, files, tolerance)
    else:
        out.fail(
            "manifest.json", f"manifest.json: unknown export schema {manifest.get('schema')!r}; nothing re-derived."
        )
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
            out.signature = "signed (not checked: pass --key PUBFILE)"
            out.status(SIGNATURE_FILE, "not checked", "pass --key PUBFILE to check the signature")
        return
    from annotate.pipeline._sign import fingerprint, signature_valid

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


def _check_hashes(out: VerifyOutcome, listed: dict[str, Any], files: dict[str, bytes]) -> None:
    """Every listed file present with its hash, and no file unlisted."""
    schema = out.schema or ""
    required = (*input_files(schema), *derived_files(schema)) if schema in FULL_SCHEMAS else ()
    known = (*required, *OPTIONAL_FILES) if schema in FULL_SCHEMAS else None
    for name in sorted(listed):
        sha = listed[name]
        if not isinstance(sha, str) or len(sha) != 64:
            out.fail(name, f"manifest.json: the sha256 of {name} is not a sha256.")
        elif known is not None and name not in known:
            out.fail(name, f"manifest.json lists {name}, which is not a file of an {schema} export.")
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
            out.fail(name, f"missing file: {name} (every {schema} export has one; the manifest omits it)")


def _rederive(
    out: VerifyOutcome, manifest: dict[str, Any], files: dict[str, bytes], tolerance: float, schema: str
) -> None:
    derived = derived_files(schema)
    judged = "judge_labels.csv" in input_files(schema)

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
    missing = [f for f in input_files(schema) if f not in files]
    if missing:
        return skip(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing")
    try:
        doc = json.loads(files["design.json"].decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        out.fail("design.json", f"design.json is not JSON ({exc}).")
        return skip("design.json is not JSON")
    design_problems = check_design(doc)
    for p in design_problems:
        out.fail("design.json", p)
    if design_problems:
        return skip("design.json is malformed")
    out.status("design.json", HASH, "an input: the sampling design; well formed")
    try:
        labels, lines = read_labels(files["labels.csv"])
    except CsvProblem as exc:
        out.fail("labels.csv", str(exc))
        return skip("labels.csv is not a readable table")
    label_problems = check_labels(labels, lines, doc)
    for p in label_problems:
        out.fail("labels.csv", p)
    if label_problems:
        return skip("labels.csv does not agree with itself or with design.json")
    out.status(
        "labels.csv",
        HASH,
        "an input: the reviewed labels; its rows are design.json's samples, and its ds_label column, re-derived "
        "from the annotator columns, is equal",
    )
    judge_labels = None
    if judged:
        try:
            judge_labels, judge_lines = read_judge_labels(files["judge_labels.csv"])
        except CsvProblem as exc:
            out.fail("judge_labels.csv", str(exc))
            return skip("judge_labels.csv is not a readable table")
        judge_problems = check_judge_labels(judge_labels, judge_lines, labels)
        for p in judge_problems:
            out.fail("judge_labels.csv", p)
        if judge_problems:
            return skip("judge_labels.csv does not agree with itself or with labels.csv")
        out.status(
            "judge_labels.csv",
            HASH,
            "an input: every judge's verdict on the reviewed responses; its rows are labels.csv's responses, with the "
            "routing judge's verdicts as labels.csv has them",
        )
    diagnostics = None
    if "diagnostics.json" in files:
        try:
            diagnostics = json.loads(files["diagnostics.json"].decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            out.fail("diagnostics.json", f"diagnostics.json is not JSON ({exc}).")
            return skip("diagnostics.json, which the report shows, is not JSON")
        diag_problems = check_diagnostics(diagnostics, doc)
        for p in diag_problems:
            out.fail("diagnostics.json", p)
        out.status(
            "diagnostics.json",
            HASH_ONLY,
            "stored as computed: re-deriving it needs the response texts, which an export does not hold; its "
            "internal consistency was checked, and the report's section re-rendered from it",
        )
    source = "labels.csv, judge_labels.csv and design.json" if judged else "labels.csv and design.json"
    try:
        again = derive(labels, doc, settings, prov, diagnostics, judge_labels)
    except (ValueError, KeyError, TypeError) as exc:
        out.fail(None, f"cannot re-derive the export from {source}: {exc}")
        return skip("the computation failed on these inputs")
    for name in derived:
        if name not in files:
            continue  # already reported missing
        stored = files[name]
        if stored == again[name]:
            out.status(name, EQUAL, f"from {source} with the manifest's settings")
            continue
        if name in CSV_FILES:
            found = _compare_csv(name, stored, again[name], source, tolerance, restore=True)
        elif name in JSON_FILES:
            try:
                parsed = json.loads(stored.decode("utf-8"))
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                found = [f"{name} is not JSON ({exc})."]
            else:
                found = []
                _compare_json(name, parsed, json.loads(again[name]), "", tolerance, found)
        else:
            found = [
                f"report.html differs from the report re-rendered from the export's files: "
                f"{_first_difference(stored, again[name])}."
            ]
        for p in _listed(found, "differences"):
            out.fail(name, p)
        if not found:
            out.status(name, EQUAL, f"from {source}; numbers equal within a relative {tolerance:g}")
    if "scores.csv" in files:
        _check_score_rules(out, files["scores.csv"])
    if "scores.csv" in out.files and out.files["scores.csv"].status == EQUAL:
        out.rederived_rows = len(parse_csv(again["scores.csv"], "scores.csv").rows)


def _check_score_rules(out: VerifyOutcome, stored: bytes) -> None:
    """Every row of scores.csv as written keeps its own rules (an estimate inside its interval, ...)."""
    from annotate.stats.scoring import check_scores

    try:
        table = parse_csv(stored, "scores.csv")
        rows = table.frame()
    except CsvProblem:
        return  # already reported
    for problem in check_scores(rows, source="scores.csv", lines=table.lines):
        out.fail("scores.csv", problem)


def _v1_benchmarks(manifest: dict[str, Any], files: dict[str, bytes]) -> str:
    """The benchmark set a schema-1 export ranked on: as its settings say, else each model's own ("all")."""
    chosen = (manifest.get("settings") or {}).get("benchmarks")
    if not chosen and "scores.json" in files:
        try:
            chosen = (json.loads(files["scores.json"].decode("utf-8")).get("settings") or {}).get("benchmarks")
        except (ValueError, UnicodeDecodeError, RecursionError, AttributeError):
            chosen = None
    return chosen if isinstance(chosen, str) and chosen else "all"


def _rederive_v1(out: VerifyOutcome, manifest: dict[str, Any], files: dict[str, bytes], tolerance: float) -> None:
    """annotate-export/1: the score tables re-derived from labels.csv and design.json; the rest by hash only.

    Its CSVs were written without neutralising, so they are read as they are.
    """
    from annotate.stats.scoring.tables import score_tables

    for name, reason in (
        ("agreement.json", f"not re-derived: {SCHEMA_1} exports hold no gold labels and no agreement settings"),
        ("report.html", f"not re-derived: {SCHEMA_1} reports drew on the database"),
        ("diagnostics.json", "stored as computed: re-deriving it needs the response texts"),
        ("labels.csv", "an input"),
        ("design.json", "an input"),
    ):
        if name in files:
            out.status(name, HASH_ONLY if name not in ("labels.csv", "design.json") else HASH, reason)
    tables = ("scores.csv", "ranking.csv", "flips.csv", "p_safer.csv", "scores.json")
    if "labels.csv" not in files or "design.json" not in files:
        for name in tables:
            if name in files:
                out.status(name, HASH_ONLY, "not re-derived: labels.csv or design.json is missing")
        return
    try:
        settings = Settings.from_manifest(manifest.get("settings", {}), need_thresholds=False)
        labels, _ = read_labels(files["labels.csv"], restore=False)
        doc = json.loads(files["design.json"].decode("utf-8"))
        design_problems = check_design(doc)
        if design_problems:
            for p in design_problems:
                out.fail("design.json", p)
            return
        scored = score_tables(
            labels,
            doc,
            draws=settings.draws,
            seed=settings.seed,
            min_reviewed=settings.min_reviewed,
            estimand=settings.estimand,
            confidence=settings.confidence,
            # annotate-export/1 averaged each model over its own benchmarks unless its settings say
            # which set it ranked on.
            benchmarks=_v1_benchmarks(manifest, files),
        )
    except (CsvProblem, ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError) as exc:
        out.fail("scores.csv", f"cannot re-derive the scores from labels.csv and design.json: {exc}")
        return
    source = "labels.csv and design.json"
    # As annotate-export/1 wrote them.
    again = {
        "scores.csv": scored.scores.to_csv(index=False, lineterminator="\n").encode("utf-8"),
        "ranking.csv": scored.ranking.to_csv(index=False, lineterminator="\n").encode("utf-8"),
        "flips.csv": scored.flips.to_csv(index=False, lineterminator="\n").encode("utf-8"),
        "p_safer.csv": scored.p_safer.to_csv(index=True, index_label="model", lineterminator="\n").encode("utf-8"),
    }
    for name, data in again.items():
        if name not in files:
            continue
        found = _compare_csv(name, files[name], data, source, tolerance, restore=False)
        for p in _listed(found, "differences"):
            out.fail(name, p)
        if not found:
            out.status(name, EQUAL, f"from {source} with the manifest's settings")
    if "scores.json" in files:
        found = []
        try:
            stored = json.loads(files["scores.json"].decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            found = [f"scores.json is not JSON ({exc})."]
        else:
            doc_again = json.loads(
                json_bytes({"settings": scored.settings, "scores": scored.scores.to_dict("records")})
            )
            _compare_json("scores.json", stored, doc_again, "", tolerance, found)
        for p in _listed(found, "differences"):
            out.fail("scores.json", p)
        if not found:
            out.status("scores.json", EQUAL, f"from {source} with the manifest's settings")
    if out.files.get("scores.csv") is not None and out.files["scores.csv"].status == EQUAL:
        out.rederived_rows = len(scored.scores)
