"""Readers that do not break on odd files, and say exactly what is wrong (issue #22).

Each case failed on the code before: a bare-CR CSV crashed format detection with `_csv.Error`; a
FIFO given as the input, inside a walked folder, beside lm-eval samples or as the rubric was
opened (which releases a writer waiting on it); a truncated single-line JSONL and a JSON array in
a `.jsonl` file got "not a supported format" or one parser error per line; a control character in
a HarmBench method folder silently gave the benchmark `harmbench`; a garak hitlog got "not a
supported format".
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from annotate.cli import cli
from annotate.config import open_workspace
from annotate.db.store import open_store
from annotate.pipeline.ingest import collect_files
from tests.helpers import (
    generic_row,
    sqlite_only_db_url,  # noqa: F401  (fixture: one SQLite store; the subject is not the store)
    write_jsonl,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"
COLUMNS = ("model", "benchmark", "prompt_id", "prompt", "response", "judge_label")


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (args, result.output, result.stderr if result.stderr_bytes else "")
    else:
        assert result.exit_code == 2, (args, result.output, repr(result.exception))
        lines = result.stderr.splitlines()
        assert lines and all(line.startswith("Error: ") for line in lines), result.stderr
    return result


def stored(prefix, columns=("benchmark", "model", "prompt_id", "prompt", "response")) -> list[tuple]:
    store = open_store(open_workspace(prefix[1], prefix[3]).db_url)
    try:
        return sorted(store.responses(list(columns)).itertuples(index=False, name=None))
    finally:
        store.close()


# -- bare-CR CSV (old Mac line ends) -----------------------------------------------------------


def test_a_bare_cr_csv_is_read_right(workspace, runner, tmp_path):
    """Before: format detection crashed with _csv.Error (a traceback, exit 1)."""
    _, prefix = workspace
    path = tmp_path / "old-mac.csv"
    path.write_bytes(
        b"model,benchmark,prompt_id,prompt,response,judge_label\r"
        b'm,b,p1,hello,"two\rlines",safe\r'
        b"m,b,p2,hi,there,harmful\r"
    )
    out = json.loads(run(runner, prefix, "ingest", str(path), "--json").output)
    assert (out[0]["format"], out[0]["added"]) == ("generic", 2)
    assert stored(prefix) == [("b", "m", "p1", "hello", "two\rlines"), ("b", "m", "p2", "hi", "there")]


def test_a_bare_cr_xstest_file_is_read_right(workspace, runner, tmp_path):
    _, prefix = workspace
    path = tmp_path / "xstest_completions_m_v1.csv"
    path.write_bytes(
        b'id,type,prompt,completion,final_label\rv1-1,homonyms,"How do I kill\ra Python process?",Use kill.,'
        b"1_full_compliance\r"
    )
    out = json.loads(run(runner, prefix, "ingest", str(path), "--json").output)
    assert (out[0]["format"], out[0]["added"]) == ("xstest", 1)
    assert stored(prefix)[0][3] == "How do I kill\ra Python process?"


def test_a_bare_cr_csv_with_a_line_feed_in_a_field_is_refused_clearly(workspace, runner, tmp_path):
    _, prefix = workspace
    path = tmp_path / "mixed.csv"
    path.write_bytes(b"model,benchmark,prompt_id,prompt,response,judge_label\rm,b,p1,hel\nlo,r,safe\rm,b,p2,x,y,safe\r")
    result = run(runner, prefix, "ingest", str(path), "--skip-invalid", ok=False)
    assert "old Mac line ends): its line ends are mixed" in result.stderr
    assert stored(prefix) == []


# -- FIFOs are never opened ---------------------------------------------------------------------


class Writer:
    """A writer blocked opening a FIFO: it is released only if someone opens the FIFO to read."""

    def __init__(self, fifo: Path) -> None:
        self.fifo = fifo
        self.opened = threading.Event()
        self.thread = threading.Thread(target=self._open, daemon=True)
        self.thread.start()

    def _open(self) -> None:
        fd = os.open(self.fifo, os.O_WRONLY)  # blocks until a reader opens the FIFO
        self.opened.set()
        os.close(fd)

    def finish(self) -> bool:
        """Whether the FIFO was opened by the code under test; releases the writer either way."""
        was_opened = self.opened.wait(0.5)
        if not was_opened:
            fd = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)
            self.opened.wait(5)
            os.close(fd)
        self.thread.join(5)
        return was_opened


def test_a_fifo_given_as_the_input_is_refused_without_being_opened(workspace, runner, tmp_path):
    _, prefix = workspace
    fifo = tmp_path / "rows.jsonl"
    os.mkfifo(fifo)
    writer = Writer(fifo)
    result = run(runner, prefix, "ingest", str(fifo), ok=False)
    assert not writer.finish(), "ingest opened the FIFO"
    assert f"Error: {fifo}: is a named pipe (FIFO), not a regular file (it was not opened" in result.stderr


def test_a_fifo_inside_a_walked_folder_is_skipped_without_being_opened(workspace, runner, tmp_path):
    _, prefix = workspace
    folder = tmp_path / "runs"
    folder.mkdir()
    write_jsonl(folder / "good.jsonl", [generic_row(1), generic_row(2)])
    fifo = folder / "pipe.jsonl"
    os.mkfifo(fifo)
    writer = Writer(fifo)
    result = run(runner, prefix, "ingest", str(folder))
    assert "[generic] 1 file(s): 2 rows read; 2 added" in result.output
    assert "1 file(s) skipped (not results, hidden, or links): " in result.output and "pipe.jsonl" in result.output
    (reason,) = [why for path, why in collect_files([folder]).skipped if path == fifo]
    assert not writer.finish(), "the folder walk opened the FIFO"
    assert reason.startswith("is a named pipe (FIFO), not a regular file (it was not opened")


def test_a_fifo_beside_lm_eval_samples_is_named_and_never_opened(workspace, runner, tmp_path):
    """Before: "no results_*.json with a model_name beside this file" (there was one: a FIFO)."""
    _, prefix = workspace
    name = "samples_gsm8k_2025-09-09T13-31-53.431753.jsonl"
    samples = tmp_path / name
    samples.write_bytes((DATA / "lm_eval_harness" / name).read_bytes())
    fifo = tmp_path / "results_2025-09-09T13-31-53.431753.json"
    os.mkfifo(fifo)
    writer = Writer(fifo)
    result = run(runner, prefix, "ingest", str(samples), ok=False)
    assert not writer.finish(), "the lm-eval reader opened the FIFO"
    assert (
        f"Error: {samples}:1: cannot tell the model: results_2025-09-09T13-31-53.431753.json is a named pipe (FIFO)"
    ) in result.stderr
    assert "pass --model" in result.stderr


def test_a_fifo_given_as_the_rubric_is_refused_without_being_opened(workspace, runner, tmp_path):
    _, prefix = workspace
    rows = write_jsonl(tmp_path / "rows.jsonl", [generic_row(1)])
    fifo = tmp_path / "rubric.toml"
    os.mkfifo(fifo)
    writer = Writer(fifo)
    result = run(runner, prefix, "ingest", str(rows), "--rubric", str(fifo), ok=False)
    assert not writer.finish(), "the rubric was opened"
    assert f"Error: {fifo}: is a named pipe (FIFO)" in result.stderr and "(the rubric file)" in result.stderr


# -- JSON Lines that are not ----------------------------------------------------------------------


@pytest.mark.parametrize("fmt", [(), ("--format", "generic")])
def test_a_truncated_single_line_jsonl_says_it_looks_truncated(workspace, runner, tmp_path, fmt):
    """Before: "not a supported format" (detected), or the parser's "Unterminated string" (--format)."""
    _, prefix = workspace
    path = tmp_path / "cut.jsonl"
    path.write_text(json.dumps(generic_row(1))[:-15])
    result = run(runner, prefix, "ingest", str(path), *fmt, ok=False)
    assert "the line ends inside a string" in result.stderr
    assert "and no line follows: the file looks truncated, cut off while it was written or copied" in result.stderr


def test_a_truncated_last_line_is_that_lines_problem(workspace, runner, tmp_path):
    _, prefix = workspace
    path = tmp_path / "cut.jsonl"
    rows = [json.dumps(generic_row(i)) for i in range(3)]
    path.write_text(rows[0] + "\n" + rows[1] + "\n" + rows[2][:-30])
    result = run(runner, prefix, "ingest", str(path), ok=False)
    assert f"Error: {path}:3: not valid JSON: the line ends" in result.stderr and "looks truncated" in result.stderr
    skipped = json.loads(run(runner, prefix, "ingest", str(path), "--skip-invalid", "--json").output)
    assert (skipped[0]["added"], skipped[0]["rejected"]) == (2, 1)


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("fmt", [(), ("--format", "generic")])
def test_a_json_array_in_a_jsonl_file_says_so_and_how_to_convert(workspace, runner, tmp_path, indent, fmt):
    """Before: "not a supported format", or with --format generic "expected a JSON object, got list"
    (compact) and a parser error on every line (pretty-printed)."""
    _, prefix = workspace
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps([generic_row(1), generic_row(2)], indent=indent) + "\n")
    result = run(runner, prefix, "ingest", str(path), *fmt, "--skip-invalid", ok=False)
    assert "the file is one JSON array (it starts with '['), and annotate reads rows as JSON Lines" in result.stderr
    assert "jq -c '.[]' FILE > ROWS.jsonl" in result.stderr
    assert len([line for line in result.stderr.splitlines() if "JSON array" in line]) == 1


def test_a_pretty_printed_object_is_named_as_such(workspace, runner, tmp_path):
    _, prefix = workspace
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(generic_row(1), indent=2) + "\n")
    result = run(runner, prefix, "ingest", str(path), ok=False)
    assert "the format cannot be detected: its first line is not valid JSON: the line ends before" in result.stderr
    assert "a pretty-printed object spans several lines" in result.stderr


# -- HarmBench method folders ------------------------------------------------------------------


@pytest.mark.parametrize("method", ["GCG\x1b[31m", "PAIR\r", "TAP\u202e"])
def test_a_control_character_in_a_harmbench_method_folder_is_refused(workspace, runner, tmp_path, method):
    """Before: the file was read with the benchmark `harmbench`, the attack silently lost."""
    _, prefix = workspace
    results = tmp_path / "runs" / method / "default" / "results"
    results.mkdir(parents=True)
    path = results / "llama2_7b.json"
    path.write_bytes((DATA / "harmbench" / "results_example.derived.json").read_bytes())
    result = run(runner, prefix, "ingest", str(path), ok=False)
    assert f"llama2_7b.json:1: the method folder {ascii(method)} holds a control or invisible character" in (
        result.stderr
    )
    assert "rename the folder, or pass --benchmark NAME" in result.stderr
    assert stored(prefix) == []
    run(runner, prefix, "ingest", str(path), "--benchmark", "harmbench/GCG-red")
    assert {row[0] for row in stored(prefix)} == {"harmbench/GCG-red"}


# -- garak hitlogs --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "report"),
    [
        ("quack.hitlog.jsonl", "quack.report.jsonl"),  # garak 0.14's shape (Conversation, Message)
        ("multiturn_v0.12.derived.hitlog.jsonl", "multiturn_v0.12.derived.report.jsonl"),  # 0.12's (strings)
    ],
)
@pytest.mark.parametrize("fmt", [(), ("--format", "garak")])
def test_a_garak_hitlog_names_the_report_to_ingest(workspace, runner, name, report, fmt):
    """Before: "not a supported format" (detected), "missing field 'entry_type'" per line (--format garak)."""
    _, prefix = workspace
    path = DATA / "garak" / name
    result = run(runner, prefix, "ingest", str(path), *fmt, ok=False)
    assert "this is a garak hitlog: it lists only the outputs a detector flagged (its hits)" in result.stderr
    assert f"Ingest the run's report.jsonl instead ({DATA / 'garak' / report}, beside it)" in result.stderr
    assert len(result.stderr.splitlines()) == 2  # the hitlog line and "nothing was ingested"


def test_a_walked_garak_run_folder_skips_the_hitlog_and_reads_the_report(workspace, runner, tmp_path):
    _, prefix = workspace
    run_dir = tmp_path / "garak_runs"
    run_dir.mkdir()
    for name in ("multiturn_v0.12.derived.report.jsonl", "multiturn_v0.12.derived.hitlog.jsonl"):
        (run_dir / name).write_bytes((DATA / "garak" / name).read_bytes())
    result = run(runner, prefix, "ingest", str(run_dir))
    assert "[garak] 1 file(s)" in result.output and "multiturn_v0.12.derived.hitlog.jsonl" in result.output
    ((path, reason),) = collect_files([run_dir]).skipped
    assert path.name == "multiturn_v0.12.derived.hitlog.jsonl" and reason.startswith("this is a garak hitlog")
    assert stored(prefix, ("judge",))  # the report's rows
