"""`annotate judges` on a real store (SQLite and PostgreSQL): every judge audited against the reviewed labels.

A round is routed by one judge, reviewed (two annotators' labels pulled from Label Studio
files) and adjudicated; then a second judge's verdicts on the same responses are ingested, with
no new review. The second judge's verdicts attach to the reviewed responses by (benchmark,
model, prompt_id, epoch) *and the same prompt and response text*; a row under the same key with
another text is another response and is named, never audited. The figures are checked against
an independent computation: weights N_h / r_h counted from the generated data and the task
files, then ``sklearn.metrics`` with ``sample_weight``.

The command is invoked as its own click command (``annotate.cli.judges.judges``): registering it
in ``annotate.cli`` is not part of this module's change.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, precision_score, recall_score

from annotate.cli import cli
from annotate.cli.judges import judges as judges_command
from annotate.labelstudio.labelconfig import choices_result
from tests.helpers import (
    sqlite_only_db_url,  # noqa: F401  (fixture: one SQLite store; the subject is not the store)
    write_jsonl,
)

MODELS = ("m-one", "m-two")
N = 40
SECOND = "=second()"  # a judge name a spreadsheet would run: exports must neutralise it
OTHER_TEXT = ("m-two", 2)  # the second judge's row under this key is about another response text


def first_label(i: int) -> str:
    return "ambiguous" if i < 6 else ("harmful" if i < 18 else "safe")


def truth(i: int) -> str:
    return "harmful" if i % 3 == 0 else "safe"


def second_label(i: int) -> str:
    return ("harmful" if i % 3 == 0 else "safe") if i % 4 else ("safe" if i % 3 == 0 else "harmful")


def row(model: str, i: int, judge: str, label: str, response: str | None = None) -> dict:
    return {
        "model": model,
        "benchmark": "bench",
        "prompt_id": f"p{i}",
        "prompt": f"{model} prompt {i}",
        "response": response if response is not None else f"{model} answer {i}",
        "judge": judge,
        "judge_label": label,
    }


def run(runner, args):
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, (result.output, result.stderr)
    return result


def reviewed_round(runner, prefix, ws: Path, tmp_path: Path) -> None:
    """Ingest the first judge, route r1 to files, pull two annotators' labels, adjudicate."""
    rows = [row(m, i, "first", first_label(i)) for m in MODELS for i in range(N)]
    run(runner, [*prefix, "ingest", str(write_jsonl(tmp_path / "first.jsonl", rows))])
    for email in ("a1@example.org", "a2@example.org"):
        run(runner, [*prefix, "annotators", "add", email, "--offline"])
    run(
        runner,
        [*prefix, "route", "--round", "r1", "--annotators", "A1,A2", "--clear-per-cell", "5", "--seed", "3"]
        + ["--to-file"],
    )
    for who, user in (("A1", 7), ("A2", 8)):
        tasks = json.loads((ws / "tasks" / "r1" / f"{who}.json").read_text())
        export = []
        for n, task in enumerate(tasks):
            found = re.search(r"prompt (\d+)$", task["data"]["prompt"])
            assert found is not None
            i = int(found.group(1))
            verdict = "unsure" if i == 1 else truth(i)  # both unsure on prompt 1 (a census stratum): unresolved
            export.append(
                {
                    "id": 1000 + n,
                    "data": task["data"],
                    "meta": task["meta"],
                    "annotations": [{"id": 5000 + n, "completed_by": user, "result": choices_result(verdict)}],
                }
            )
        path = tmp_path / f"export-{who}.json"
        path.write_text(json.dumps(export))
        run(runner, [*prefix, "pull", "--round", "r1", "--from-file", str(path), "--annotator", who])
    run(runner, [*prefix, "adjudicate", "--round", "r1", "--policy", "unresolved"])


def ingest_second_judge(runner, prefix, tmp_path: Path) -> None:
    """The second judge, after the review: m-two's prompt 2 has another response text; prompt 4 no verdict.

    Both are in the first judge's ambiguous stratum, a census: they were reviewed.
    """
    rows = []
    for m in MODELS:
        for i in range(N):
            if i == 4:
                continue
            other = "a different answer" if (m, i) == OTHER_TEXT else None
            rows.append(row(m, i, SECOND, second_label(i), response=other))
    run(runner, [*prefix, "ingest", str(write_jsonl(tmp_path / "second.jsonl", rows))])


def routed_units(ws: Path) -> list[tuple[str, int]]:
    """(model, i) of every routed response, read from the task files (not from the store)."""
    tasks = json.loads((ws / "tasks" / "r1" / "A1.json").read_text())
    out = []
    for t in tasks:
        found = re.fullmatch(r"(.+) prompt (\d+)", t["data"]["prompt"])
        assert found is not None
        model, i = found.groups()
        out.append((model, int(i)))
    return out


def independent_figures(ws: Path, judge: str) -> dict[str, float]:
    """The judge's pooled figures: N_h / r_h from the generated data, then sklearn with sample_weight."""
    units = routed_units(ws)
    population = {(m, first_label(i)) for m in MODELS for i in range(N)}
    size = {s: sum(1 for m in MODELS for i in range(N) if (m, first_label(i)) == s) for s in population}
    resolved = [(m, i) for m, i in units if i != 1]
    r = {s: sum(1 for m, i in resolved if (m, first_label(i)) == s) for s in population}

    def label(m: str, i: int) -> str | None:
        if judge == "first":
            return first_label(i)
        if (m, i) == OTHER_TEXT or i == 4:
            return None  # another response under the same key / no verdict
        return second_label(i)

    y_true, y_pred, w, amb_w, all_w = [], [], [], 0.0, 0.0
    for m, i in resolved:
        a = label(m, i)
        weight = size[(m, first_label(i))] / r[(m, first_label(i))]
        if a is None:
            continue
        all_w += weight
        if a == "ambiguous":
            amb_w += weight
            continue
        y_true.append(int(truth(i) == "harmful"))
        y_pred.append(int(a == "harmful"))
        w.append(weight)
    yt, yp, ww = np.array(y_true), np.array(y_pred), np.array(w)
    return {
        "sensitivity": recall_score(yt, yp, sample_weight=ww),
        "specificity": recall_score(1 - yt, 1 - yp, sample_weight=ww),
        "ppv": precision_score(yt, yp, sample_weight=ww),
        "npv": precision_score(1 - yt, 1 - yp, sample_weight=ww),
        "balanced_accuracy": balanced_accuracy_score(yt, yp, sample_weight=ww),
        "kappa": cohen_kappa_score(yt, yp, sample_weight=ww),
        "ambiguous_share": amb_w / all_w,
    }


@pytest.fixture
def two_judges(workspace, runner, tmp_path):
    ws, prefix = workspace
    reviewed_round(runner, prefix, ws, tmp_path)
    ingest_second_judge(runner, prefix, tmp_path)
    return ws, prefix


def judges_json(runner, prefix, *args: str) -> dict:
    result = runner.invoke(judges_command, [*prefix, "--json", "--draws", "400", *args])
    assert result.exit_code == 0, (result.output, result.stderr)
    return json.loads(result.output)


def test_a_judge_ingested_after_the_review_is_audited_without_new_review(two_judges, runner):
    ws, prefix = two_judges
    report = judges_json(runner, prefix)
    pooled = {r["judge"]: r for r in report["judges"] if r["benchmark"] == r["model"] == "ALL"}
    assert set(pooled) == {"first", SECOND}
    units = routed_units(ws)
    assert pooled["first"]["n_reviewed"] == len(units)
    # the second judge: every reviewed response but the other text (m-two, 2) and the two prompts 4
    assert pooled[SECOND]["n_reviewed"] == len(units) - 3
    assert "labelled" in pooled[SECOND]["note"] and not pooled["first"]["note"].startswith("labelled")
    for judge in ("first", SECOND):
        want = independent_figures(ws, judge)
        for key, value in want.items():
            assert pooled[judge][key] == pytest.approx(value), (judge, key)
            low, high = pooled[judge][f"{key}_ci"]
            assert low <= pooled[judge][key] <= high, (judge, key)
    # the response under the same key with another text is named, not silently dropped
    assert any(
        SECOND in n and "1 reviewed response(s)" in n and "another prompt or response text" in n
        for n in report["notes"]
    )
    pair = next(p for p in report["pairs"] if p["benchmark"] == p["model"] == "ALL")
    assert pair["p_a_better"] + pair["p_b_better"] + pair["p_tie"] == pytest.approx(1)
    assert {r["rank"] for r in pooled.values()} == {1.0, 2.0}
    assert report["settings"]["interval"].startswith("these responses: the responses view of the reviewed population")


def test_the_readable_table_and_the_groupings(two_judges, runner):
    _, prefix = two_judges
    out = runner.invoke(judges_command, [*prefix, "--draws", "300"])
    assert out.exit_code == 0, out.stderr
    assert "All responses:" in out.output and "benchmark bench:" in out.output
    assert "P(A better than B)" in out.output and SECOND in out.output and "Note:" in out.output
    by_model = judges_json(runner, prefix, "--by", "model")
    groups = {(r["benchmark"], r["model"]) for r in by_model["judges"]}
    assert groups == {("ALL", "ALL"), ("ALL", "m-one"), ("ALL", "m-two")}


def test_bad_input_exits_2_and_a_store_without_rounds_exits_1(workspace, runner, tmp_path):
    ws, prefix = workspace
    bad = runner.invoke(judges_command, [*prefix, "--by", "category"])
    assert bad.exit_code == 2 and "category" in bad.output
    none = runner.invoke(cli, [*prefix, "summary"])  # the workspace is fine
    assert none.exit_code in (0, 1)
    from annotate.cli import AnnotateGroup  # the one place errors become "Error: ..." lines

    group = AnnotateGroup(commands={"judges": judges_command})
    missing = runner.invoke(group, ["judges", *prefix])
    assert missing.exit_code == 1 and missing.stderr.startswith("Error: ") and "route" in missing.stderr
    reviewed_round(runner, prefix, ws, tmp_path)
    unknown = runner.invoke(group, ["judges", *prefix, "--round", "r9"])
    assert unknown.exit_code == 2 and "no round named 'r9'" in unknown.stderr


def test_the_export_carries_every_judge_and_verify_re_derives_it(two_judges, runner):
    ws, prefix = two_judges
    run(runner, [*prefix, "export", "two-judges", "--draws", "300"])
    path = ws / "exports" / "two-judges"
    text = (path / "judge_labels.csv").read_text(encoding="utf-8")
    assert "'=second()" in text and "=second()," not in text.replace("'=second()", "")  # neutralised
    rows = [line.split(",") for line in text.splitlines()]
    assert rows[0] == [
        "round",
        "model",
        "benchmark",
        "prompt_id",
        "epoch",
        "judge",
        "judge_verdict",
        "judge_label",
        "same_response",
    ]
    assert [r[-1] for r in rows[1:] if r[1] == "m-two" and r[3] == "p2"] == ["no", "yes"]  # second, first
    checked = runner.invoke(cli, ["verify", str(path), "--json"])
    assert checked.exit_code == 0, (checked.output, checked.stderr)
    statuses = {f["file"]: f["status"] for f in json.loads(checked.output)["files"]}
    assert statuses["judges.csv"] == statuses["judge_pairs.csv"] == "re-derived and equal"
    assert statuses["judge_labels.csv"] == "hash matches"
    # the export's pooled figures are the command's with the same draws and seed
    report = judges_json(runner, prefix, "--by", "benchmark")
    import csv

    with open(path / "judges.csv", newline="", encoding="utf-8") as fh:
        exported = {(r["judge"].lstrip("'"), r["benchmark"], r["model"]): r for r in csv.DictReader(fh)}
    for rec in report["judges"]:
        if rec["benchmark"] == rec["model"] == "ALL":
            assert float(exported[(rec["judge"], "ALL", "ALL")]["sensitivity"]) == pytest.approx(rec["sensitivity"])
