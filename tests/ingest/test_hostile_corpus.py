"""Every file of the hostile-input corpus (tests/ingest/hostile/, described in its README) through
`annotate ingest`, as it is and with --skip-invalid, on SQLite and PostgreSQL.

Never a traceback: exit 0, or exit 2 with `Error:` lines only, each printed once. On exit 2 the
store is exactly as it was and no rejects file is written. On exit 0 every record of the file is
either stored exactly as the file says (read here independently, with the standard library) or
listed in the rejects file: nothing fabricated, nothing dropped.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from annotate.cli import cli
from annotate.config import open_workspace
from annotate.db.store import open_store
from tests.helpers import sqlite_only_db_url  # noqa: F401  (fixture: one SQLite store; the subject is not the store)

HOSTILE = Path(__file__).resolve().parent / "hostile"

# file -> (extra options, exit code as it is, exit code with --skip-invalid)
CORPUS: dict[str, tuple[tuple[str, ...], int, int]] = {
    "formula_names.jsonl": ((), 0, 0),
    "formula_names.csv": ((), 0, 0),
    "path_names.jsonl": ((), 0, 0),
    "ansi_model.jsonl": ((), 2, 0),
    "carriage_return_benchmark.jsonl": ((), 2, 0),
    "bidi_override_judge.jsonl": ((), 2, 0),
    "whitespace_names.jsonl": ((), 2, 0),
    "control_chars_in_text.jsonl": ((), 0, 0),
    "nul_escaped.jsonl": ((), 2, 0),
    "nul_byte_raw.jsonl": ((), 2, 0),
    "nul_byte.csv": ((), 2, 0),
    "unpaired_surrogate.jsonl": ((), 2, 0),
    "overlong_first_line.jsonl": ((), 2, 2),
    "overlong_first_line.jsonl --format generic": (("--format", "generic"), 0, 0),
    "bom.jsonl": ((), 0, 0),
    "bom.csv": ((), 0, 0),
    "bom_in_second_line.jsonl": ((), 2, 0),
    "utf16.jsonl": ((), 2, 2),
    "duplicate_keys.jsonl": ((), 2, 0),
    "duplicate_keys_nested.jsonl": ((), 2, 0),
    "duplicate_keys_harmbench.json": ((), 2, 2),
    "duplicate_header.csv": ((), 2, 2),
    "deep_nesting.jsonl": ((), 2, 0),
    "deep_nesting_harmbench.json": ((), 2, 2),
    "huge_numbers.jsonl": ((), 2, 0),
    "nan_infinity.jsonl": ((), 2, 0),
    "nan_harmbench.json": ((), 2, 2),
    "invalid_utf8.jsonl": ((), 2, 0),
    "invalid_utf8.csv": ((), 2, 0),
    "not_objects.jsonl": ((), 2, 0),
    "unclosed_quote.csv": ((), 2, 2),
    "quote_closed_rows_later.csv": ((), 2, 2),
    "field_200k.csv": ((), 0, 0),
    "wrong_field_count.csv": ((), 2, 0),
    "crlf_and_lf_in_cells.csv": ((), 0, 0),
    "empty.jsonl": ((), 2, 2),
    "blank_lines.jsonl": ((), 2, 2),
    "not_json.json": ((), 2, 2),
    "bare_cr.csv": ((), 0, 0),
    "bare_cr_mixed.csv": ((), 2, 2),
    "json_array.jsonl": ((), 2, 2),
    "json_array_pretty.jsonl": ((), 2, 2),
    "truncated_only_line.jsonl": ((), 2, 2),
    "truncated_last_line.jsonl": ((), 2, 0),
    "reserved_benchmark.jsonl": ((), 2, 0),
    "reserved_names.csv": ((), 2, 0),
    "dictionary_bomb.parquet": ((), 2, 2),
}

STORED = ("model", "benchmark", "prompt_id", "epoch", "judge", "category", "prompt", "response", "judge_verdict")


def test_the_corpus_is_complete():
    on_disk = {p.name for p in HOSTILE.iterdir() if p.name not in ("README.md", "make_corpus.py", "__pycache__")}
    assert on_disk == {name.split(" ")[0] for name in CORPUS}
    readme = (HOSTILE / "README.md").read_text()
    for name in on_disk:
        assert f"`{name}`" in readme, f"{name} is not described in hostile/README.md"


def _state(prefix: list[str]) -> tuple[list[tuple[Any, ...]], int, int]:
    ws = open_workspace(prefix[1], prefix[3])
    store = open_store(ws.db_url)
    try:
        frame = store.responses(list(STORED))
        rows = sorted(tuple(None if v != v else v for v in r) for r in frame.itertuples(index=False, name=None))
        return rows, len(store.source_files()), len(store.ingest_runs())
    finally:
        store.close()


def _reference(path: Path) -> dict[int, tuple[Any, ...] | None]:
    """Line -> the stored row the generic schema says the record is (None: not a readable record),
    read with the standard library only, for every record of a generic JSONL or CSV file."""
    data = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
    out: dict[int, tuple[Any, ...] | None] = {}
    if path.suffix == ".csv":
        reader = csv.reader(io.StringIO(data.decode("utf-8", errors="replace"), newline=""))
        header = next(reader)
        while True:
            start = reader.line_num + 1
            try:
                cells = next(reader)
            except StopIteration:
                break
            if len(cells) != len(header) or len(set(header)) != len(header):
                out[start] = None
                continue
            obj = {
                k: (None if v == "" and k not in ("prompt", "response") else v)
                for k, v in zip(header, cells, strict=True)
            }
            out[start] = _row(obj)
        return out
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            try:
                obj = json.loads(raw.decode("utf-8"))
            except (ValueError, RecursionError):
                out[number] = None
                continue
            out[number] = _row(obj) if isinstance(obj, dict) else None
    return out


def _row(obj: dict[str, Any]) -> tuple[Any, ...]:
    return (
        str(obj["model"]).strip(),
        str(obj["benchmark"]).strip(),
        str(obj["prompt_id"]).strip(),
        int(obj.get("epoch") or 0),
        obj.get("judge") or "unspecified",
        obj.get("category") or None,
        obj["prompt"],
        obj["response"],
        obj["judge_label"],
    )


def _check_errors(stderr: str) -> None:
    lines = stderr.splitlines()
    assert lines, "exit 2 without a message"
    assert all(line.startswith("Error: ") for line in lines), stderr
    assert len(lines) == len(set(lines)), f"a message printed twice:\n{stderr}"
    assert sum("nothing was ingested" in line for line in lines) == 1, stderr


@pytest.mark.parametrize("entry", list(CORPUS))
def test_hostile_file(entry, workspace, runner):
    ws, prefix = workspace
    name = entry.split(" ")[0]
    path = HOSTILE / name
    options, plain_exit, skip_exit = CORPUS[entry]
    empty = _state(prefix)
    rejects_dir = ws / "rejects"
    for skip, expected in (((), plain_exit), (("--skip-invalid",), skip_exit)):
        before = _state(prefix)
        result = runner.invoke(cli, [*prefix, "ingest", str(path), *options, *skip, "--json"])
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        assert result.exit_code == expected, (skip, result.output, result.stderr)
        if expected == 2:
            _check_errors(result.stderr)
            assert _state(prefix) == before, "a refused file changed the store"
            assert not rejects_dir.exists() or not any(rejects_dir.iterdir()), "a refused file wrote rejects"
            continue
        (outcome,) = json.loads(result.output)
        rows, n_sources, _ = _state(prefix)
        assert n_sources == 1
        if not name.endswith((".jsonl", ".csv")):
            continue
        reference = _reference(path)
        rejected: set[int] = set()
        if outcome["rejects_file"]:
            rejected = {json.loads(line)["line"] for line in Path(outcome["rejects_file"]).read_text().splitlines()}
        assert rejected <= set(reference), "a reject names a line that holds no record"
        expected_rows = sorted(row for line, row in reference.items() if line not in rejected)
        assert None not in expected_rows, "an unreadable record was stored"
        assert rows == expected_rows, "what is stored is not what the file says"
        # Nothing dropped: every record of the file is stored, already there, or rejected.
        assert outcome["added"] + outcome["duplicates"] + outcome["rejected"] == len(reference)
        assert before == empty or outcome["added"] == 0
