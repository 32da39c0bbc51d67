"""What the hazard questions must not mistake or break (issue #44; found by an independent review).

A team's own label config with a question named ``hazard`` is theirs, not ``--ask-hazards``' (whose
controls have reserved names); a workspace config that takes those names is refused when the lead
asks; two controls of one name are refused; and a graded export of responses with no hazard at all
does not need the hazards' population (the store may have changed under the round).
"""

from __future__ import annotations

from click.testing import CliRunner

from annotate.cli import cli
from annotate.labelstudio.labelconfig import HAZARD_CONTROL, choices_result
from tests.helpers import pull_task_files, write_jsonl


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *map(str, args)])
    if ok:
        assert result.exit_code == 0, (args, result.output, result.stderr)
    return result


def _workspace(tmp_path, rows):
    runner = CliRunner()
    ws, db = tmp_path / "ws", f"sqlite:///{tmp_path / 'store.sqlite3'}"
    assert runner.invoke(cli, ["init", str(ws), "--db", db]).exit_code == 0
    prefix = ["--workspace", str(ws), "--db", db]
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "suite.jsonl", rows)))
    for who in ("A1", "A2"):
        run(runner, prefix, "annotators", "add", f"{who.lower()}@x.invalid", "--offline")
    return runner, prefix, ws


def _rows(n=12):
    return [
        {"model": m, "benchmark": "suite", "prompt_id": f"p{i}", "prompt": f"p {i}", "response": f"{m} {i}",
         "judge": "j", "judge_label": "ambiguous"}
        for m in ("m-a", "m-b") for i in range(n)
    ]  # fmt: skip


def _with_question(ws, xml: str) -> None:
    cfg = (ws / "label_config.xml").read_text()
    (ws / "label_config.xml").write_text(
        cfg.replace('<Header value="2. Refusal type"', xml + '<Header value="2. Refusal type"', 1)
    )


def test_a_teams_own_hazard_question_is_not_the_ask_hazards_one(tmp_path):
    runner, prefix, ws = _workspace(tmp_path, _rows())
    _with_question(
        ws,
        '<Header value="9. Team hazard tag" size="5"/><Choices name="hazard" toName="response" '
        'choice="single-radio"><Choice value="Violence"/><Choice value="Cyber"/></Choices>',
    )
    run(runner, prefix, "route", "--round", "r1", "--annotators", "A1,A2", "--ambiguous", "all", "--to-file")

    def say(who, task):
        out = choices_result("harmful")
        out.append(
            {"from_name": "hazard", "to_name": "response", "type": "choices", "value": {"choices": ["Violence"]}}
        )
        return out

    pull_task_files(runner, prefix, ws, tmp_path, say)
    run(runner, prefix, "adjudicate", "--round", "r1", "--policy", "majority")
    run(runner, prefix, "export", "x", "--round", "r1", "--draws", "50")
    import csv
    import json

    with open(ws / "exports" / "x" / "labels.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and not any(r["hazard_answers"] or r["reviewed_hazard"] for r in rows)
    assert not (ws / "exports" / "x" / "hazard_agreement.json").exists()

    assert "hazards" not in json.loads(run(runner, prefix, "agreement", "--round", "r1", "--json").output)


def test_asking_for_hazards_with_a_config_that_took_their_names_is_refused(tmp_path):
    runner, prefix, ws = _workspace(tmp_path, _rows())
    _with_question(
        ws,
        f'<Choices name="{HAZARD_CONTROL}" toName="response" choice="single-radio"><Choice value="x"/></Choices>',
    )
    out = run(runner, prefix, "route", "--round", "r1", "--annotators", "A1,A2", "--ask-hazards", "--to-file", ok=False)
    assert out.exit_code != 0 and HAZARD_CONTROL in out.output and "rename yours" in out.output, out.output
    assert "Traceback" not in out.output


def test_two_controls_of_one_name_are_refused(tmp_path):
    runner, prefix, ws = _workspace(tmp_path, _rows())
    _with_question(ws, '<Choices name="verdict" toName="response" choice="single-radio"><Choice value="x"/></Choices>')
    out = run(runner, prefix, "route", "--round", "r1", "--annotators", "A1,A2", "--to-file", ok=False)
    assert out.exit_code != 0 and "two controls are named 'verdict'" in out.output, out.output


def test_a_graded_export_without_hazards_does_not_need_their_population(tmp_path):
    runner, prefix, ws = _workspace(tmp_path, _rows())
    run(runner, prefix, "route", "--round", "r1", "--annotators", "A1,A2", "--ambiguous", "all", "--to-file")
    pull_task_files(
        runner, prefix, ws, tmp_path, lambda who, task: "harmful" if "1" in task["data"]["response"] else "safe"
    )
    run(runner, prefix, "adjudicate", "--round", "r1", "--policy", "majority")
    changed = _rows()[:1]
    changed[0]["judge_label"] = "harmful"  # the store changes under the round
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "fix.jsonl", changed)), "--replace")
    run(runner, prefix, "export", "graded", "--round", "r1", "--draws", "50", "--grade-reference", "m-a")
