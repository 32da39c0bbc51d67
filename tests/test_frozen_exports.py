"""Compatibility as a test: exports written by every export schema verify with the current code.

``tests/data/exports/<schema>/`` holds one export folder per schema (``annotate-export/1``, ``/2``,
``/3``, ...), each written by the last commit that wrote that schema (see the README.md there).
They are frozen: a change to annotate that makes one of them fail ``annotate verify`` is a
compatibility break, and the fix belongs in the code, never in the files.

Each case verifies a copy in ``tmp_path`` through the CLI exactly as a user would run it, so the
tests depend on nothing inside ``annotate`` but ``annotate.cli.cli``.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from annotate.cli import cli

EXPORTS = Path(__file__).resolve().parent / "data" / "exports"
FOLDERS = sorted(p for p in EXPORTS.iterdir() if p.is_dir())


def _params() -> list:
    return [pytest.param(folder, id=folder.name) for folder in FOLDERS]


def _copy(folder: Path, tmp_path: Path) -> Path:
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    return copy


def _verify(path: Path) -> Result:
    """``annotate verify PATH``; a crash is raised as itself, never taken for a failed verification."""
    result = CliRunner().invoke(cli, ["verify", str(path)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def _failures(result: Result) -> set[str]:
    return {line for line in result.output.splitlines() if line.startswith("FAIL:")}


def _tamper_one_number(path: Path) -> tuple[str, str]:
    """Change the first estimate in ``path`` (scores.csv) by 0.01, byte for byte otherwise the same."""
    raw = path.read_bytes()
    text = raw.decode("utf-8")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    col = rows[0].index("estimate")
    old = next(row[col] for row in rows[1:] if row[col])
    new = repr(float(old) + 0.01)
    header_end = text.index("\n") + 1
    field = f",{old},"
    at = text.index(field, header_end)  # the estimate of the first data row that has one
    tampered = text[:at] + f",{new}," + text[at + len(field) :]
    path.write_bytes(tampered.encode("utf-8"))
    changed = [
        (a, b)
        for ra, rb in zip(rows, csv.reader(io.StringIO(tampered, newline="")), strict=True)
        for a, b in zip(ra, rb, strict=True)
        if a != b
    ]
    assert changed == [(old, new)], changed  # one number, nothing else
    return old, new


def test_there_is_a_frozen_export_of_every_schema_so_far():
    assert {f"annotate-export-{n}" for n in range(1, 20)} <= {f.name for f in FOLDERS}


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_each_folder_holds_the_schema_it_is_named_for(folder):
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["schema"].replace("/", "-") == folder.name
    assert sorted(p.name for p in folder.iterdir()) == sorted([*manifest["files"], "manifest.json"])


@pytest.mark.parametrize("folder", _params())
def test_frozen_export_verifies_with_the_current_code(folder, tmp_path):
    result = _verify(_copy(folder, tmp_path))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"OK ({folder.name.replace('annotate-export-', 'annotate-export/')}"), result.output
    assert "FAIL" not in result.output, result.output


def test_what_verify_re_derives_of_each_frozen_export(tmp_path):
    """annotate-export/1's files came from the estimators before issue #13, those of /2 to /4 from
    the methods before issue #23 (shared fiducial components, corner bounds with transport, PPI's
    cross-fitting, unseen judge labels, BCa agreement intervals): every derived file is checked for
    its hash only, and verify says so per file rather than claim a re-derivation it cannot make."""
    statuses = {}
    for folder in FOLDERS:
        result = CliRunner().invoke(cli, ["verify", str(_copy(folder, tmp_path)), "--json"])
        doc = json.loads(result.stdout)
        statuses[folder.name] = {f["file"]: f["status"] for f in doc["files"]}
    derived = ["scores.csv", "ranking.csv", "flips.csv", "p_safer.csv", "scores.json", "agreement.json", "report.html"]
    assert {statuses["annotate-export-1"][f] for f in derived} == {"checked only for hash"}
    for name in ("annotate-export-2", "annotate-export-3", "annotate-export-4"):
        assert {statuses[name][f] for f in [*derived, "p_tie.csv"]} == {"checked only for hash"}, name
    for name in ("annotate-export-3", "annotate-export-4"):
        assert {statuses[name][f] for f in ("judges.csv", "judge_pairs.csv")} == {"checked only for hash"}, name
    # annotate-export/5 to /10 (the methods of #23 and #33): the scores, rankings and agreement are
    # re-derived; since issue #41 (one posterior of the reviewed population) their judge audit and
    # the report that shows it are checked for their hashes only, each with the reason.
    judged = {"judges.csv", "judge_pairs.csv", "judge_models.csv", "report.html"}
    for n in range(5, 11):
        name = f"annotate-export-{n}"
        hashed = {f for f, s in statuses[name].items() if s == "checked only for hash"}
        assert hashed == judged & set(statuses[name]), (name, statuses[name])
        assert {statuses[name][f] for f in derived if f != "report.html"} == {"re-derived and equal"}, name


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_frozen_export_with_one_number_changed_in_scores_csv_fails(folder, tmp_path):
    """The tampered copy fails, and for scores.csv: a failure the untouched copy does not have."""
    untouched = _failures(_verify(_copy(folder, tmp_path / "untouched")))
    copy = _copy(folder, tmp_path / "tampered")
    _tamper_one_number(copy / "scores.csv")
    result = _verify(copy)
    assert result.exit_code != 0, result.output
    assert not result.stdout.startswith("OK"), result.output
    assert [line for line in _failures(result) - untouched if "scores.csv" in line], result.output


def test_a_waiting_item_is_no_row_a_writer_before_annotate_export_8_could_have_written():
    """Issue #43: an interim export relabelled /7 (its status and order stripped) still holds rows whose final
    status is ``waiting``, which only /8 on records: the labels check refuses them under an older schema."""
    from annotate.audit.design import Design
    from annotate.audit.labels import check_labels, read_labels
    from annotate.audit.schema import SCHEMAS

    folder = EXPORTS / "annotate-export-13"
    labels, lines = read_labels((folder / "labels.csv").read_bytes(), restore=True)
    design = Design.from_json(json.loads((folder / "design.json").read_text()))
    assert check_labels(labels, lines, design, SCHEMAS["annotate-export/13"].label_columns, skips=True) == []
    row = labels.index[labels.final_status == "resolved"][0]
    labels.loc[row, ["final_status", "final_label"]] = ["waiting", None]
    assert check_labels(labels, lines, design, SCHEMAS["annotate-export/13"].label_columns, skips=True) == []
    refused = check_labels(labels, lines, design, SCHEMAS["annotate-export/13"].label_columns, skips=False)
    assert any("final_status 'waiting'" in p and "annotate-export/8" in p for p in refused), refused
