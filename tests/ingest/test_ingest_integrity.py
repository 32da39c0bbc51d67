"""Issue #12, ingest integrity: one regression test per finding, through `annotate ingest`.

Each test failed on the code before the fix. A refused ingest exits 2 with `Error: FILE:LINE:`
lines, each printed once, and leaves the store as it was (row counts of responses, source files
and ingest runs); nothing is fabricated.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from annotate.cli import cli
from annotate.config import open_workspace
from annotate.db.store import open_store
from annotate.ingest import csv_reader, records, run
from tests.helpers import (
    generic_row,
    sqlite_only_db_url,  # noqa: F401  (fixture: one SQLite store; the subject is not the store)
    write_csv,
    write_jsonl,
)


def counts(prefix: list[str]) -> tuple[int, int, int]:
    """(responses, source files, ingest runs) in the workspace's store."""
    ws = open_workspace(prefix[1], prefix[3])
    store = open_store(ws.db_url)
    try:
        return store.count_responses(), len(store.source_files()), len(store.ingest_runs())
    finally:
        store.close()


def stored(prefix: list[str], *columns: str) -> list[tuple]:
    ws = open_workspace(prefix[1], prefix[3])
    store = open_store(ws.db_url)
    try:
        return list(store.responses(list(columns)).itertuples(index=False, name=None))
    finally:
        store.close()


def ingest(runner, prefix: list[str], *args: str):
    result = runner.invoke(cli, [*prefix, "ingest", *map(str, args)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def refused(result, *expected: str) -> list[str]:
    """The stderr lines of a refused ingest, after checking exit 2, the expected lines, each once."""
    assert result.exit_code == 2, (result.output, result.stderr)
    lines = result.stderr.splitlines()
    assert all(line.startswith("Error: ") for line in lines), result.stderr
    assert len(lines) == len(set(lines)), f"a message printed twice:\n{result.stderr}"
    for text in expected:
        assert any(text in line for line in lines), f"{text!r} not in:\n{result.stderr}"
    return lines


# -- 5. a file that changes while it is read ---------------------------------------------------

ROWS = 12_000  # more than two batches of run.BATCH_ROWS: the file changes after the first one


def _truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def _append(path: Path) -> None:
    with open(path, "a") as fh:
        fh.writelines(json.dumps(generic_row(i)) + "\n" for i in range(ROWS, ROWS + 1000))


def _rewrite_same_size(path: Path) -> None:
    """Change bytes near the end, keep the size, and put the modification time back."""
    st = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(st.st_size - 200)
        fh.write(b"X")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("change", [_truncate, _append, _rewrite_same_size], ids=["truncated", "appended", "rewritten"])
def test_a_file_that_changes_while_it_is_read_is_refused(workspace, runner, tmp_path, monkeypatch, change):
    _, prefix = workspace
    path = write_jsonl(tmp_path / "big.jsonl", [generic_row(i) for i in range(ROWS)])
    changed: list[Path] = []

    def after_batch(p: Path) -> None:
        if not changed:
            change(p)
            changed.append(p)

    monkeypatch.setattr(run, "after_batch", after_batch, raising=False)
    result = ingest(runner, prefix, path)
    assert changed, "the file was not changed during the read"
    refused(result, f"Error: {path}: the file changed while it was being read")
    assert counts(prefix) == (0, 0, 0)


@pytest.mark.parametrize("change", [_truncate, _append], ids=["truncated", "appended"])
def test_a_file_changed_from_the_progress_callback_is_refused(db_url, tmp_path, change):
    """The same through the pipeline's own progress callback, called while the reader reads."""
    from annotate.errors import InputError
    from annotate.ingest.rubric import Rubric

    path = write_jsonl(tmp_path / "big.jsonl", [generic_row(i) for i in range(ROWS)])
    store = open_store(db_url)
    changed: list[int] = []

    def tick(nbytes: int) -> None:
        if not changed and nbytes > 0:
            change(path)
            changed.append(nbytes)

    try:
        with pytest.raises(InputError) as info:
            run.ingest_paths(store, [path], on_file=lambda p: tick, rubric=Rubric(), rejects_dir=tmp_path / "rejects")
        assert changed
        assert any("changed while it was being read" in line for line in info.value.problems)
        assert store.count_responses() == 0 and store.source_files().empty and store.ingest_runs().empty
    finally:
        store.close()


def test_the_recorded_sha256_is_that_of_the_bytes_read(workspace, runner, tmp_path):
    import hashlib

    _, prefix = workspace
    path = write_jsonl(tmp_path / "a.jsonl", [generic_row(i) for i in range(10)])
    result = ingest(runner, prefix, path, "--json")
    assert result.exit_code == 0, result.stderr
    (outcome,) = json.loads(result.output)
    assert outcome["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


# -- 6. CSV with --skip-invalid never loses its place ------------------------------------------


def test_a_csv_field_of_200000_characters_is_read_whole_and_never_as_rows(workspace, runner, tmp_path):
    _, prefix = workspace
    field = "x" * 200_000 + '\nmodel-9,bench-z,p999,"fabricated prompt",fabricated,harmful,judge-x\n' + "y" * 10
    rows = [generic_row(i) for i in range(5)]
    rows[2]["response"] = field
    path = write_csv(tmp_path / "big-field.csv", rows)
    result = ingest(runner, prefix, path, "--skip-invalid")
    assert result.exit_code == 0, result.stderr
    assert "5 added" in result.output and "rejected" not in result.output
    by_id = dict(stored(prefix, "prompt_id", "response"))
    assert sorted(by_id) == ["p0", "p1", "p2", "p3", "p4"]  # p999 exists nowhere but inside the field
    assert by_id["p2"] == field


def test_an_unclosed_quote_refuses_the_csv_even_with_skip_invalid(workspace, runner, tmp_path):
    _, prefix = workspace
    path = write_csv(tmp_path / "quote.csv", [generic_row(i) for i in range(3000)])
    lines = path.read_text().splitlines(keepends=True)
    lines[11] = lines[11].replace("prompt number 10", '"prompt number 10', 1)  # the record on line 12
    path.write_text("".join(lines))
    for options in ((), ("--skip-invalid",)):
        result = ingest(runner, prefix, path, *options)
        refused(result, f"Error: {path}:12: the CSV cannot be read reliably", "nothing was ingested")
        assert counts(prefix) == (0, 0, 0)


def test_a_quote_closed_rows_later_refuses_the_csv_even_with_skip_invalid(workspace, runner, tmp_path):
    _, prefix = workspace
    path = write_csv(tmp_path / "quote.csv", [generic_row(i) for i in range(100)])
    lines = path.read_text().splitlines(keepends=True)
    lines[11] = lines[11].replace("prompt number 10", '"prompt number 10', 1)
    lines[41] = lines[41].replace("prompt number 40", 'number 40" closes it', 1)
    path.write_text("".join(lines))
    result = ingest(runner, prefix, path, "--skip-invalid")
    refused(result, f"Error: {path}:12: the CSV cannot be read reliably from the record on lines 12-42")
    assert counts(prefix) == (0, 0, 0)


def test_the_fatal_problem_is_shown_after_any_number_of_others(workspace, runner, tmp_path):
    _, prefix = workspace
    path = write_csv(tmp_path / "many.csv", [generic_row(i) for i in range(60)])
    lines = path.read_text().splitlines(keepends=True)
    for n in range(2, 32):  # 30 rejectable rows (an extra field each), then a quote never closed
        lines[n] = lines[n].replace("prompt number", "prompt,number", 1)
    lines[50] = lines[50].replace("prompt number", '"prompt number', 1)
    path.write_text("".join(lines))
    result = ingest(runner, prefix, path)
    shown = refused(result, f"Error: {path}:51: the CSV cannot be read reliably", "... and 10 more problem(s)")
    assert not any("--skip-invalid to ingest" in line for line in shown)  # it would not help
    result = ingest(runner, prefix, path, "--skip-invalid")
    shown = refused(result, f"Error: {path}:51: the CSV cannot be read reliably")
    assert len(shown) == 2  # with --skip-invalid, only what refuses the file
    assert counts(prefix) == (0, 0, 0)


def test_a_csv_record_spanning_an_implausible_number_of_lines_is_fatal(workspace, runner, tmp_path, monkeypatch):
    _, prefix = workspace
    monkeypatch.setattr(csv_reader, "MAX_RECORD_LINES", 50)
    rows = [generic_row(i) for i in range(5)]
    rows[3]["response"] = "\n".join(f"line {n}" for n in range(80))
    path = write_csv(tmp_path / "tall.csv", rows)
    result = ingest(runner, prefix, path, "--skip-invalid")
    refused(result, f"Error: {path}:5: the CSV cannot be read reliably", "more than 50 lines")
    assert counts(prefix) == (0, 0, 0)


@pytest.fixture
def small_field_limit(monkeypatch):
    """MAX_FIELD_BYTES = 4,096 for one test; the csv module's process-wide limit is put back after."""
    limit = csv.field_size_limit()
    monkeypatch.setattr(records, "MAX_FIELD_BYTES", 4096, raising=False)
    yield 4096
    csv.field_size_limit(limit)


def test_a_csv_line_longer_than_the_field_limit_is_fatal(workspace, runner, tmp_path, small_field_limit):
    _, prefix = workspace
    rows = [generic_row(i) for i in range(5)]
    rows[1]["response"] = "z" * 10_000
    path = write_csv(tmp_path / "long.csv", rows)
    result = ingest(runner, prefix, path, "--skip-invalid")
    refused(result, f"Error: {path}:3: the CSV cannot be read reliably")
    assert counts(prefix) == (0, 0, 0)


def test_csv_rejects_record_the_line_span(workspace, runner, tmp_path):
    ws, prefix = workspace
    rows = [generic_row(0), generic_row(1, response="three\nline\nresponse", judge_label="??"), generic_row(2)]
    path = write_csv(tmp_path / "span.csv", rows)
    result = ingest(runner, prefix, path, "--skip-invalid")
    assert result.exit_code == 0 and "2 added" in result.output and "1 rejected" in result.output
    (rejects,) = (ws / "rejects").glob("span.csv.*.rejects.jsonl")
    (reject,) = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert (reject["line"], reject["end_line"]) == (3, 5)


def test_jsonl_lines_and_csv_fields_share_one_limit(workspace, runner, tmp_path, small_field_limit):
    _, prefix = workspace
    path = write_jsonl(tmp_path / "long.jsonl", [generic_row(0), generic_row(1, response="z" * 10_000), generic_row(2)])
    refused(ingest(runner, prefix, path), f"Error: {path}:2: the line is longer than 4,096 bytes")
    result = ingest(runner, prefix, path, "--skip-invalid")
    assert result.exit_code == 0 and "2 added" in result.output and "1 rejected" in result.output
    assert csv.field_size_limit() >= 4096
    list(csv_reader.csv_records(write_csv(tmp_path / "a.csv", [generic_row(0)]), records.ReadContext()))
    assert csv.field_size_limit() == records.MAX_FIELD_BYTES


# -- 11. names, duplicate keys, detection, special files, all files, each message once -------


@pytest.mark.parametrize("field", ["model", "benchmark", "prompt_id"])
def test_names_that_are_only_whitespace_are_refused(workspace, runner, tmp_path, field):
    _, prefix = workspace
    path = write_jsonl(tmp_path / "ws.jsonl", [generic_row(0), generic_row(1, **{field: " \t "})])
    result = ingest(runner, prefix, path)
    refused(result, f"Error: {path}:2: field {field!r} is empty")
    assert counts(prefix) == (0, 0, 0)


@pytest.mark.parametrize(
    "field, value",
    [
        ("model", "\x1b[31mred\x1b[0m"),
        ("benchmark", "bench\rOVERWRITTEN"),
        ("judge", "judge\x07"),
        ("prompt_id", "p\x1b"),
    ],
)
def test_control_characters_in_names_are_refused_and_never_printed_raw(workspace, runner, tmp_path, field, value):
    _, prefix = workspace
    path = write_jsonl(tmp_path / "ctl.jsonl", [generic_row(1, **{field: value})])
    result = ingest(runner, prefix, path)
    refused(result, f"Error: {path}:1: field {field!r} holds a control or invisible character")
    assert "\x1b" not in result.stderr and "\r" not in result.stderr and "\x07" not in result.stderr
    assert counts(prefix) == (0, 0, 0)


def test_name_options_are_checked_before_anything_is_read(workspace, runner, tmp_path):
    _, prefix = workspace
    path = write_jsonl(tmp_path / "a.jsonl", [generic_row(1)])
    result = ingest(runner, prefix, path, "--model", "\x1b[2Jwiped")
    refused(result, "Error: the value of --model holds a control or invisible character")
    assert "\x1b" not in result.stderr
    assert counts(prefix) == (0, 0, 0)


def test_a_file_name_with_control_characters_is_shown_escaped(workspace, runner, tmp_path):
    _, prefix = workspace
    path = write_jsonl(tmp_path / "evil\x1b[2J\r.jsonl", [generic_row(1)])
    result = ingest(runner, prefix, path)
    assert result.exit_code == 0, result.stderr
    assert "\x1b" not in result.output and "\r" not in result.output
    assert "evil\\x1b[2J\\r.jsonl [generic]" in result.output


def test_duplicate_keys_in_a_json_object_are_refused(workspace, runner, tmp_path):
    _, prefix = workspace
    path = tmp_path / "dup.jsonl"
    row = json.dumps(generic_row(1))
    path.write_text(json.dumps(generic_row(0)) + "\n" + row[:-1] + ', "judge_label": "harmful"}\n')
    result = ingest(runner, prefix, path)
    refused(result, f"Error: {path}:2: not valid JSON: duplicate key 'judge_label'")
    assert counts(prefix) == (0, 0, 0)


def test_duplicate_keys_in_a_json_document_are_refused_on_their_line(workspace, runner, tmp_path):
    _, prefix = workspace
    path = tmp_path / "results.json"
    path.write_text('{\n  "b1": [\n    {"test_case": "t", "generation": "g",\n     "label": 0, "label": 1}\n  ]\n}\n')
    result = ingest(runner, prefix, path, "--skip-invalid")
    refused(result, f"Error: {path}:4: not valid JSON: duplicate key 'label'")
    assert counts(prefix) == (0, 0, 0)


def test_detection_of_an_empty_file_says_so_once(workspace, runner, tmp_path):
    _, prefix = workspace
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    lines = refused(ingest(runner, prefix, path), f"Error: {path}: the file is empty")
    assert len(lines) == 2 and "not a supported format" not in lines[0]


def test_a_jsonl_with_a_utf8_bom_is_read(workspace, runner, tmp_path):
    _, prefix = workspace
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(generic_row(i)) + "\n" for i in range(3)).encode())
    result = ingest(runner, prefix, path)
    assert result.exit_code == 0, result.stderr
    assert sorted(stored(prefix, "prompt_id")) == [("p0",), ("p1",), ("p2",)]


def test_a_utf16_file_is_refused_with_what_to_do(workspace, runner, tmp_path):
    _, prefix = workspace
    path = tmp_path / "wide.jsonl"
    path.write_bytes(("\ufeff" + json.dumps(generic_row(1)) + "\n").encode("utf-16-le"))
    refused(ingest(runner, prefix, path), f"Error: {path}: the file is UTF-16LE text", "iconv")


def test_a_first_line_longer_than_the_sniff_window_asks_for_format(workspace, runner, tmp_path):
    _, prefix = workspace
    path = write_jsonl(tmp_path / "long.jsonl", [generic_row(1, response="r" * 100_000), generic_row(2)])
    lines = refused(ingest(runner, prefix, path), f"Error: {path}: the format cannot be detected", "pass --format")
    assert len(lines) == 2
    assert ingest(runner, prefix, path, "--format", "generic").exit_code == 0


def test_special_files_each_get_their_own_message(workspace, runner, tmp_path):
    _, prefix = workspace
    loop = tmp_path / "loop.jsonl"
    os.symlink(tmp_path / "loop2.jsonl", loop)
    os.symlink(loop, tmp_path / "loop2.jsonl")
    broken = tmp_path / "broken.jsonl"
    os.symlink(tmp_path / "gone.jsonl", broken)
    folder = tmp_path / "folder"
    folder.mkdir()
    cases = {
        loop: "is a symbolic link loop",
        broken: "is a broken symbolic link",
        folder: "is a directory",
        Path(os.devnull): "is a character device",
        tmp_path / "missing.jsonl": "no such file",
    }
    result = ingest(runner, prefix, *cases)
    lines = refused(result, "5 of 5 files refused; nothing was ingested.")
    for path, message in cases.items():
        assert any(line.startswith(f"Error: {path}: {message}") for line in lines), (path, lines)
    assert counts(prefix) == (0, 0, 0)


def test_a_fifo_is_refused_and_never_blocks(workspace, tmp_path):
    _, prefix = workspace
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    proc = subprocess.run(
        [sys.executable, "-m", "annotate", *prefix, "ingest", str(fifo)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"Error: {fifo}: is a named pipe (FIFO), not a regular file"), proc.stderr
    assert counts(prefix) == (0, 0, 0)


def test_an_unreadable_file_says_permission_denied(workspace, runner, tmp_path):
    _, prefix = workspace
    path = write_jsonl(tmp_path / "secret.jsonl", [generic_row(1)])
    path.chmod(0)
    expected = f"Error: {path}: permission denied"
    if os.geteuid() != 0:
        refused(ingest(runner, prefix, path), expected)
    else:  # root reads anything: run the command without the capabilities that let it
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv to drop CAP_DAC_OVERRIDE")
        proc = subprocess.run(
            ["setpriv", "--bounding-set=-dac_override,-dac_read_search", sys.executable, "-m", "annotate"]
            + [*prefix, "ingest", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2, proc.stderr
        assert any(line.startswith(expected) for line in proc.stderr.splitlines()), proc.stderr
    assert counts(prefix) == (0, 0, 0)


def test_problems_of_every_file_are_reported_in_one_run(workspace, runner, tmp_path):
    """The second file's in-file conflict is reported while the first file is refused too."""
    _, prefix = workspace
    first = tmp_path / "first.jsonl"
    first.write_text(json.dumps(generic_row(0)) + "\n{broken\n")
    second = write_jsonl(tmp_path / "second.jsonl", [generic_row(5), generic_row(6), generic_row(5, response="other")])
    result = ingest(runner, prefix, first, second)
    refused(
        result,
        f"Error: {first}:2: not valid JSON",
        f"Error: {second}:3: key",
        "2 of 2 files refused; nothing was ingested",
    )
    assert "appears earlier in this file" in result.stderr
    assert counts(prefix) == (0, 0, 0)


def test_every_ingest_error_is_printed_once(workspace, runner, tmp_path):
    _, prefix = workspace
    missing = tmp_path / "missing.jsonl"
    lines = refused(ingest(runner, prefix, missing), f"Error: {missing}: no such file")
    assert sum("no such file" in line for line in lines) == 1
    bad = write_jsonl(tmp_path / "bad.jsonl", [generic_row(1, judge_label="maybe")])
    lines = refused(ingest(runner, prefix, bad), f"Error: {bad}:1: unknown judge verdict", "--skip-invalid")
    assert sum("unknown judge verdict" in line for line in lines) == 1


@pytest.mark.parametrize(
    "text, message",
    [
        ('[formats.generic]\nverdicts = "harmful"\n', "[formats.generic.verdicts] must be a table"),
        ("[score_band]\nlow = nan\nhigh = 0.6\n", "low and high must be finite numbers"),
        ("formats = 3\n", "[formats] must be a table"),
    ],
    ids=["verdicts-not-a-table", "nan-band", "formats-not-a-table"],
)
def test_a_hostile_rubric_is_refused_with_its_problems(workspace, runner, tmp_path, text, message):
    _, prefix = workspace
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(text)
    path = write_jsonl(tmp_path / "a.jsonl", [generic_row(1)])
    refused(ingest(runner, prefix, path, "--rubric", rubric), message, "the rubric was not used")
    assert counts(prefix) == (0, 0, 0)


def test_a_fifo_as_the_rubric_is_refused_and_never_blocks(workspace, tmp_path):
    _, prefix = workspace
    fifo = tmp_path / "rubric.toml"
    os.mkfifo(fifo)
    path = write_jsonl(tmp_path / "a.jsonl", [generic_row(1)])
    proc = subprocess.run(
        [sys.executable, "-m", "annotate", *prefix, "ingest", str(path), "--rubric", str(fifo)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"Error: {fifo}: is a named pipe (FIFO)"), proc.stderr
    assert counts(prefix) == (0, 0, 0)
