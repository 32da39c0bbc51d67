"""`annotate ingest DIR`: a results folder is walked, each file detected, the others listed as skipped.

The folder is built from the real example files (tests/data/formats): a JailbreakBench artifacts
tree, HarmBench results of two attacks in the pipeline's layout, an Inspect log, beside files that
are not results. Runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from annotate.pipeline.ingest import collect_files, ingest, totals_by_format
from annotate.pipeline.session import open_session
from tests.data_files import FORMATS
from tests.ingest.test_ingest_command import run, snapshot

HB = FORMATS / "harmbench" / "SLM_Jailbreak" / "results"


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A results folder as a team keeps it: several tools' output, indexes and notes among it."""
    root = tmp_path / "results"
    shutil.copytree(FORMATS / "jailbreakbench" / "attack-artifacts" / "DSN", root / "jbb" / "DSN")
    shutil.copytree(HB / "GCG", root / "harmbench" / "GCG")
    shutil.copytree(HB / "DirectRequest", root / "harmbench" / "DirectRequest")
    (root / "harmbench" / "GCG" / "smollm2-135M-instruct" / "test_cases").mkdir()
    (root / "harmbench" / "GCG" / "smollm2-135M-instruct" / "test_cases" / "test_cases.json").write_text(
        json.dumps({"adjusted_advbench_added_22": ["a test case"]})
    )
    (root / "inspect").mkdir()
    shutil.copy(FORMATS / "inspect_ai" / "log_formats.eval", root / "inspect" / "log_formats.eval")
    (root / "README.md").write_text("notes\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".DS_Store").write_bytes(b"\x00\x00")
    return root


EXPECTED_FILES = [
    "harmbench/DirectRequest/default/results/smollm2-135M-instruct.json",
    "harmbench/GCG/smollm2-135M-instruct/results/smollm2-135M-instruct.json",
    "inspect/log_formats.eval",
    "jbb/DSN/evaluation.json",
    "jbb/DSN/white_box/vicuna-13b-v1.5.json",
]


def rel(root: Path, paths) -> list[str]:
    return [str(Path(p).relative_to(root)) for p in paths]


def test_collect_files_walks_the_folder_and_lists_what_it_skips(results: Path) -> None:
    found = collect_files([results])
    assert found.walked
    assert rel(results, found.files) == EXPECTED_FILES
    skipped = {str(p.relative_to(results)): why for p, why in found.skipped}
    assert set(skipped) == {
        ".DS_Store",
        ".git",
        "README.md",
        "jbb/DSN/attack-info.json",
        "jbb/DSN/submission.json",
        "harmbench/GCG/smollm2-135M-instruct/test_cases/test_cases.json",
    }
    assert skipped[".git"] == "a hidden folder (not walked)"
    assert "JailbreakBench attack-info.json" in skipped["jbb/DSN/attack-info.json"]
    # The submission bundle repeats the artifacts' jailbreaks: read beside them, each would count twice.
    assert "submission bundle" in skipped["jbb/DSN/submission.json"]
    assert "not a supported format" in skipped["harmbench/GCG/smollm2-135M-instruct/test_cases/test_cases.json"]


def test_collect_files_with_a_format_keeps_that_readers_files(results: Path) -> None:
    found = collect_files([results], "harmbench")
    assert rel(results, found.files) == EXPECTED_FILES[:2]
    assert any("not a harmbench file" in why for _, why in found.skipped)


def test_collect_files_keeps_named_files_and_takes_each_file_once(results: Path) -> None:
    named = results / "inspect" / "log_formats.eval"
    found = collect_files([named, results, results / "jbb"])
    assert rel(results, found.files) == [EXPECTED_FILES[2], *EXPECTED_FILES[:2], *EXPECTED_FILES[3:]]


def test_collect_files_does_not_follow_links_to_folders(results: Path, tmp_path: Path) -> None:
    (results / "loop").symlink_to(results, target_is_directory=True)
    found = collect_files([results])
    assert rel(results, found.files) == EXPECTED_FILES
    assert any(p.name == "loop" and "link to a folder" in why for p, why in found.skipped)


def test_collect_files_reports_a_folder_it_cannot_read(results: Path, monkeypatch) -> None:
    locked = results / "locked"
    locked.mkdir()
    real_scandir = os.scandir

    # A folder without read permission, which the root user running the tests in CI cannot make.
    def scandir(path):
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    found = collect_files([results])
    assert rel(results, found.files) == EXPECTED_FILES
    assert [why for p, why in found.skipped if p == locked] == ["a folder that cannot be read (Permission denied)"]


def test_a_folder_without_results_is_refused_with_the_others(workspace, runner, tmp_path: Path) -> None:
    _, prefix = workspace
    empty = tmp_path / "notes"
    empty.mkdir()
    (empty / "notes.txt").write_text("hello\n")
    found = collect_files([empty])
    assert found.files == [empty] and [p.name for p, _ in found.skipped] == ["notes.txt"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{broken\n")
    result = run(runner, prefix, "ingest", str(empty), str(bad), ok=False)
    assert result.exit_code == 2 and "2 of 2 files refused" in result.stderr
    assert f"Error: {empty}: is a directory; pass the files in it" in result.stderr
    assert f"Error: {bad}: the format cannot be detected: its first line is not valid JSON (" in result.stderr
    assert snapshot(prefix)[0] == []


def test_ingest_dir_through_the_command(workspace, runner, results: Path) -> None:
    """`annotate ingest DIR` ingests every results file of the tree; the two HarmBench attacks stay apart."""
    _, prefix = workspace
    out = json.loads(run(runner, prefix, "ingest", str(results), "--json").output)
    assert rel(results, [o["path"] for o in out]) == EXPECTED_FILES
    assert [o["format"] for o in out] == ["harmbench", "harmbench", "inspect", "jailbreakbench", "jailbreakbench"]
    stored = snapshot(prefix)[0]
    assert {r["benchmark"] for r in stored} == {
        "harmbench/DirectRequest",
        "harmbench/GCG",
        "popularity",
        "jailbreakbench/DSN",
    }
    again = json.loads(run(runner, prefix, "ingest", str(results), "--json").output)
    assert sum(o["added"] for o in again) == 0


def test_ingest_dir_reports_skips_and_totals_by_format(workspace, results: Path) -> None:
    ws, prefix = workspace
    skipped: list[tuple[Path, str]] = []
    with open_session(prefix[1], prefix[3]) as s:
        outcomes = ingest(s, [results], on_skip=lambda path, why: skipped.append((path, why)))
    assert len(skipped) == 6
    totals = {t.format: t.to_dict() for t in totals_by_format(outcomes)}
    assert list(totals) == ["harmbench", "inspect", "jailbreakbench"]
    assert totals["harmbench"]["files"] == 2 and totals["harmbench"]["added"] == 5
    assert totals["jailbreakbench"]["files"] == 2 and totals["jailbreakbench"]["rows_read"] == 203
    assert sum(totals["jailbreakbench"]["labels"].values()) == 203


def test_ingest_dir_is_all_or_nothing(workspace, runner, results: Path) -> None:
    _, prefix = workspace
    broken = results / "jbb" / "DSN" / "white_box" / "broken.json"
    text = (results / "jbb" / "DSN" / "white_box" / "vicuna-13b-v1.5.json").read_text()
    broken.write_text(text[: len(text) // 2])
    result = run(runner, prefix, "ingest", str(results), ok=False)
    assert result.exit_code == 2 and "broken.json" in result.stderr and "not valid JSON" in result.stderr
    assert snapshot(prefix)[0] == []
