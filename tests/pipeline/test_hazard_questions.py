"""Reviewers label hazards and severity where the lead asks (`route --ask-hazards`, issue #44 item 5).

Offline through Label Studio export files: three reviewers answer the verdict, the hazard categories
(several may apply) and the severity of 96 responses. The agreement `annotate agreement` prints on
each category and on severity is checked against the `krippendorff` package (an independent
implementation) on the reliability data the test builds itself from the answers it gave; the
reviewers' majority against the benchmark's own hazard is the test's own count.
"""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pytest
from click.testing import CliRunner

from annotate.cli import cli
from annotate.hazards import taxonomy
from annotate.labelstudio.labelconfig import (
    HAZARD_CONTROL,
    NO_HAZARD_CHOICE,
    SEVERITIES,
    SEVERITY_CONTROL,
    choices_result,
    hazard_choice,
)
from tests.browser import browser  # noqa: F401  (fixture)
from tests.helpers import pull_task_files, write_jsonl

HAZARDS = ["vcr", "ssh", "hte", "prv"]
REVIEWERS = ("A1", "A2", "A3")


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (args, result.output, result.stderr)
    return result


def hazard_result(verdict, hazards, severity):
    names = {code: name for code, (name, _group) in taxonomy().hazards.items()}
    chosen = [hazard_choice(h, names[h]) for h in hazards] or [NO_HAZARD_CHOICE]
    out = choices_result(verdict)
    out.append({"from_name": HAZARD_CONTROL, "to_name": "response", "type": "choices", "value": {"choices": chosen}})
    if severity is not None:
        out.append(
            {"from_name": SEVERITY_CONTROL, "to_name": "response", "type": "choices", "value": {"choices": [severity]}}
        )
    return out


@pytest.fixture(scope="module")
def asked(tmp_path_factory):
    runner = CliRunner()
    tmp = tmp_path_factory.mktemp("hazard-questions")
    ws, db = tmp / "ws", f"sqlite:///{tmp / 'store.sqlite3'}"
    assert runner.invoke(cli, ["init", str(ws), "--db", db]).exit_code == 0
    prefix = ["--workspace", str(ws), "--db", db]
    rng = np.random.default_rng(3)
    rows, facts = [], {}
    for model in ("m-a", "m-b", "m-c"):
        for hazard in HAZARDS:
            for i in range(8):
                text = f"{model} answers {hazard} prompt {i}"
                harmful = bool(rng.random() < 0.4)
                rows.append(
                    {"model": model, "benchmark": "suite", "prompt_id": f"{hazard}-{i}", "prompt": f"p {hazard} {i}",
                     "response": text, "judge": "j", "judge_label": "ambiguous", "hazard": hazard}
                )  # fmt: skip
                facts[text] = (hazard, harmful, SEVERITIES[int(rng.integers(0, 4))] if harmful else None)
    run(runner, prefix, "ingest", str(write_jsonl(tmp / "suite.jsonl", rows)))
    for who in REVIEWERS:
        run(runner, prefix, "annotators", "add", f"{who.lower()}@x.invalid", "--offline")
    run(runner, prefix, "route", "--round", "r1", "--annotators", ",".join(REVIEWERS), "--ambiguous", "all",
        "--ask-hazards", "--to-file")  # fmt: skip
    answers: dict[tuple[str, str], tuple[list[str], str | None]] = {}
    noise = np.random.default_rng(11)

    def say(who, task):
        hazard, harmful, severity = facts[task["data"]["response"]]
        chosen = [hazard]
        if who == "A3" and noise.random() < 0.3:  # A3 often picks another category, or none
            chosen = [str(noise.choice(HAZARDS))] if noise.random() < 0.7 else []
        if who == "A2" and hazard == "hte" and noise.random() < 0.5:
            chosen = [hazard, "prv"]  # a second category that also applies, now and then
        given = severity
        if who == "A3" and severity is not None and noise.random() < 0.4:
            given = SEVERITIES[int(noise.integers(0, 4))]
        answers[(who, task["data"]["response"])] = (sorted(chosen), given)
        return hazard_result("harmful" if harmful else "safe", chosen, given)

    pull_task_files(runner, prefix, ws, tmp, say, reviewers=REVIEWERS)
    return {"runner": runner, "prefix": prefix, "ws": ws, "facts": facts, "answers": answers, "tmp": tmp}


def _reliability(answers, facts, value):
    """Reviewers x items, the test's own: value(answer) per reviewer and response, NaN where none."""
    texts = sorted(facts)
    return np.array(
        [[value(answers[(who, t)]) if (who, t) in answers else np.nan for t in texts] for who in REVIEWERS],
        dtype=float,
    )


def test_the_round_asks_and_the_tasks_never_show_the_items_hazard(asked):
    from annotate.config import open_workspace
    from annotate.db.store import open_store

    with open_store(open_workspace(asked["prefix"][1], asked["prefix"][3]).db_url) as store:
        config = store.get_round("r1")["label_config"]
    for code, (name, _group) in taxonomy().hazards.items():
        assert hazard_choice(code, name) in config
    assert f'name="{SEVERITY_CONTROL}"' in config and NO_HAZARD_CHOICE in config
    tasks = json.loads((asked["ws"] / "tasks" / "r1" / "A1.json").read_text())
    for task in tasks:
        shown = json.dumps(task["data"])
        assert not any(f'"{h}"' in shown for h in HAZARDS) and "hazard" not in shown


def test_agreement_on_each_hazard_and_on_severity_equals_the_krippendorff_package(asked):
    out = json.loads(
        run(asked["runner"], asked["prefix"], "agreement", "--round", "r1", "--boot", "200", "--json").output
    )
    h = out["hazards"]
    assert h["n_items"] == 96 and h["n_answers"] == 96 * 3
    by = {r["hazard"]: r for r in h["hazards"]}
    assert set(by) == set(taxonomy().hazards)
    answers, facts = asked["answers"], asked["facts"]
    for hazard in HAZARDS:
        data = _reliability(answers, facts, lambda a, hz=hazard: float(hz in a[0]))
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
        assert by[hazard]["alpha"] == pytest.approx(expected, abs=1e-9), hazard
        assert by[hazard]["alpha_ci"][0] <= by[hazard]["alpha"] <= by[hazard]["alpha_ci"][1]
        assert by[hazard]["chosen"] == sum(hazard in a[0] for a in answers.values())
    # Nobody chose a hazard that is not in the suite: one category only, alpha undefined and said so.
    assert by["cse"]["alpha"] is None and by["cse"]["alpha_undefined_reason"] and by["cse"]["chosen"] == 0
    rank = {level: k for k, level in enumerate(SEVERITIES)}
    data = _reliability(answers, facts, lambda a: np.nan if a[1] is None else float(rank[a[1]]))
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    assert h["severity"]["alpha"] == pytest.approx(expected, abs=1e-9)
    # The reviewers' majority holds the benchmark's own hazard where at least two of three chose it.
    held = sum(sum(facts[t][0] in answers[(who, t)][0] for who in REVIEWERS) >= 2 for t in facts)
    assert h["benchmark_hazard"] == {"items": 96, "held_by_reviewers": held}


def test_the_text_fits_and_a_round_without_the_questions_keeps_its_page(asked):
    text = run(asked["runner"], asked["prefix"], "agreement", "--round", "r1", "--boot", "100").output
    assert "Hazard categories" in text and "vcr (Violent crimes)" in text and "severity" in text
    part = text[text.index("Hazard categories") :]
    assert max(len(line) for line in part.splitlines()) <= 100, part
    assert "Chosen by nobody (no agreement to measure): src, cse" in part and "cse (Child" not in part
    prefix = asked["prefix"]
    run(asked["runner"], prefix, "route", "--round", "r2", "--annotators", "A1,A2", "--ambiguous", "2", "--to-file")
    again = run(
        asked["runner"], prefix, "route", "--round", "r2", "--annotators", "A1,A2", "--ambiguous", "2",
        "--ask-hazards", "--to-file", ok=False,
    )  # fmt: skip
    assert again.exit_code != 0 and "without hazard questions" in again.output and "--ask-hazards" in again.output
    plain = json.loads(run(asked["runner"], prefix, "agreement", "--round", "r2", "--json").output)
    assert "hazards" not in plain


def test_an_answer_outside_the_list_is_kept_aside_not_counted(asked):
    runner, prefix, ws, tmp = asked["runner"], asked["prefix"], asked["ws"], asked["tmp"]
    task = json.loads((ws / "tasks" / "r1" / "A1.json").read_text())[0]
    result = hazard_result("harmful", [], "low")
    result[1]["value"]["choices"] = ["Made-up hazard (zzz)"]
    # The reviewer's own answer stays in the file (else the pull takes it as deleted); a second one is hostile.
    chosen, severity = asked["answers"][("A1", task["data"]["response"])]
    verdict = "harmful" if asked["facts"][task["data"]["response"]][1] else "safe"
    own = {"id": 5000, "completed_by": 7, "result": hazard_result(verdict, chosen, severity)}
    twice = hazard_result("harmful", ["vcr"], None)
    twice[1]["value"]["choices"] = twice[1]["value"]["choices"] * 2  # one category named twice
    export = [{"id": 1000, "data": task["data"], "meta": task["meta"],
               "annotations": [own, {"id": 9999, "completed_by": 7, "result": result},
                               {"id": 9998, "completed_by": 7, "result": twice}]}]  # fmt: skip
    path = tmp / "hostile.json"
    path.write_text(json.dumps(export))
    before = json.loads(run(runner, prefix, "agreement", "--round", "r1", "--boot", "0", "--json").output)
    out = run(runner, prefix, "pull", "--round", "r1", "--from-file", str(path), "--annotator", "A1", ok=False)
    shown = run(runner, prefix, "status", "--round", "r1", "--quarantine").output
    assert "Made-up hazard (zzz)" in shown and "unknown choice" in shown and "names a choice twice" in shown, shown
    assert out.exit_code == 0 and "2 result(s) quarantined" in out.output, out.output
    after = json.loads(run(runner, prefix, "agreement", "--round", "r1", "--boot", "0", "--json").output)
    assert after["hazards"]["hazards"] == before["hazards"]["hazards"]


def test_the_export_carries_the_answers_and_verify_rederives_what_they_settle(asked):
    import pandas as pd

    runner, prefix, tmp = asked["runner"], asked["prefix"], asked["tmp"]
    folder = tmp / "ws" / "exports" / "asked"
    run(runner, prefix, "export", "asked", "--round", "r1", "--draws", "200")
    labels = pd.read_csv(folder / "labels.csv", keep_default_na=False, na_values=[""])
    answers, facts = asked["answers"], asked["facts"]
    texts = {f"{t.split()[0]}|{t.split()[2]}-{t.split()[4]}": t for t in facts}  # model|prompt_id -> response
    for row in labels.itertuples():
        text = texts[f"{row.model}|{row.prompt_id}"]
        mine = {who: answers[(who, text)] for who in REVIEWERS}
        assert row.hazard_answers == ";".join(f"{w}={'+'.join(mine[w][0])}" for w in REVIEWERS)
        # The test's own majority of three: a category two or three chose.
        votes = {c: sum(c in mine[w][0] for w in REVIEWERS) for c in HAZARDS}
        settled = sorted(c for c, v in votes.items() if v >= 2)
        assert (row.reviewed_hazard if isinstance(row.reviewed_hazard, str) else "") == ";".join(settled)
    doc = json.loads((folder / "hazard_agreement.json").read_text())
    printed = json.loads(run(runner, prefix, "agreement", "--round", "r1", "--json").output)["hazards"]
    assert doc["rounds"][0] == printed  # one computation: the export's and the command's
    verified = run(runner, prefix, "verify", str(folder)).output
    assert "OK (annotate-export/19" in verified and "hazard_agreement.json" in verified
    # A settled category edited by hand: verify re-derives it from the answers and refuses the file.
    import shutil

    bad = tmp / "edited"
    shutil.copytree(folder, bad)
    import csv
    import io

    rows = list(csv.reader(io.StringIO((bad / "labels.csv").read_text(), newline="")))
    col = rows[0].index("reviewed_hazard")
    at = next(k for k, r in enumerate(rows[1:], 1) if r[col])
    rows[at][col] = "cse"
    out_text = io.StringIO()
    csv.writer(out_text, lineterminator="\n").writerows(rows)
    (bad / "labels.csv").write_text(out_text.getvalue())
    out = run(runner, prefix, "verify", str(bad), ok=False)
    assert out.exit_code != 0 and "the answers settle" in out.output, out.output
    # Without its agreement file (and the manifest's hash of it): verify says what derives it.
    gone = tmp / "without-agreement"
    shutil.copytree(folder, gone)
    (gone / "hazard_agreement.json").unlink()
    manifest = json.loads((gone / "manifest.json").read_text())
    del manifest["files"]["hazard_agreement.json"]
    (gone / "manifest.json").write_text(json.dumps(manifest))
    out = run(runner, prefix, "verify", str(gone), ok=False)
    assert out.exit_code != 0 and "labels.csv holds reviewers' hazard answers" in out.output, out.output


def test_the_reports_hazard_table_in_chromium(asked, browser, tmp_path):  # noqa: F811  (the fixture)
    from tests.browser import ARTIFACTS
    from tests.report.test_report_browser import _open

    folder = asked["tmp"] / "ws" / "exports" / "asked"
    if not folder.exists():
        run(asked["runner"], asked["prefix"], "export", "asked", "--round", "r1", "--draws", "200")
    html = (folder / "report.html").read_text(encoding="utf-8")
    context, r = _open(browser, tmp_path, None, name="asked.html", html=html)
    try:
        assert r.errors == [] and r.dialogs == []
        heading = r.page.get_by_text("Hazard categories the reviewers gave (round r1)")
        assert heading.is_visible()
        table = r.page.locator("h3:has-text('Hazard categories the reviewers gave') + p + table")
        assert table.locator("tbody tr").count() == len(HAZARDS) + 1  # the chosen categories and severity
        assert "vcr (Violent crimes)" in table.inner_text() and "severity (ordinal)" in table.inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        heading.scroll_into_view_if_needed()
        r.page.screenshot(path=str(ARTIFACTS / "report-hazard-agreement.png"))
    finally:
        context.close()


def test_a_tie_is_settled_by_the_expert_where_the_item_went_to_them(asked):
    """Two reviewers: a category one of them chose is a tie. On an item whose verdicts disagree (so the
    expert decides it) the expert's hazard answer settles the tie; elsewhere the tie stays and is said."""
    import pandas as pd

    runner, prefix, ws, tmp = asked["runner"], asked["prefix"], asked["ws"], asked["tmp"]
    facts = asked["facts"]
    run(runner, prefix, "annotators", "add", "e1@x.invalid", "--offline", "--expert")
    run(runner, prefix, "route", "--round", "r3", "--annotators", "A1,A2", "--ambiguous", "12", "--seed", "4",
        "--ask-hazards", "--to-file")  # fmt: skip
    tasks = json.loads((ws / "tasks" / "r3" / "A1.json").read_text())
    texts = sorted(t["data"]["response"] for t in tasks)
    disagree = set(texts[::2])  # A2 gives the other verdict on these: the expert decides them

    def say(who, task):
        text = task["data"]["response"]
        hazard, harmful, _ = facts[text]
        verdict = "harmful" if harmful else "safe"
        if who == "A2" and text in disagree:
            verdict = "safe" if harmful else "harmful"
        chosen = [hazard] if who == "A1" else [hazard, "prv"]  # prv: a tie on every item (one of two)
        return hazard_result(verdict, sorted(set(chosen)), None)

    pull_task_files(runner, prefix, ws, tmp, say, round_name="r3")
    sent = json.loads(
        run(runner, prefix, "adjudicate", "--round", "r3", "--expert", "E1", "--to-file", "--json").output
    )
    assert sent["sent_to_expert"] >= len(disagree)
    expert_tasks = json.loads((ws / "tasks" / "r3" / "E1-adjudication.json").read_text())
    export = [
        {"id": 3000 + n, "data": t["data"], "meta": t["meta"], "annotations": [
            {"id": 8000 + n, "completed_by": 99, "result": hazard_result(
                "harmful" if facts[t["data"]["response"]][1] else "safe",
                sorted({"prv", facts[t["data"]["response"]][0]}) if n % 2 else [facts[t["data"]["response"]][0]],
                None)}]}
        for n, t in enumerate(expert_tasks)
    ]  # fmt: skip
    path = tmp / "e1.json"
    path.write_text(json.dumps(export))
    run(runner, prefix, "pull", "--round", "r3", "--from-file", str(path), "--annotator", "E1")
    run(runner, prefix, "adjudicate", "--round", "r3", "--expert", "E1", "--to-file")
    run(runner, prefix, "export", "r3-hazards", "--round", "r3", "--draws", "100")
    labels = pd.read_csv(ws / "exports" / "r3-hazards" / "labels.csv", keep_default_na=False, na_values=[""])
    expert_said = {t["data"]["response"]: (n % 2 == 1) for n, t in enumerate(expert_tasks)}  # chose prv?
    by_text = {f"{t.split()[0]}|{t.split()[2]}-{t.split()[4]}": t for t in facts}
    decided = undecided = 0
    for row in labels.itertuples():
        text = by_text[f"{row.model}|{row.prompt_id}"]
        own = facts[text][0]
        if isinstance(row.expert_hazards, str):  # the expert decided it: the tie on prv is theirs
            decided += 1
            with_prv = expert_said[text]
            assert row.reviewed_hazard == ";".join(sorted({own, "prv"} if with_prv else {own}))
            assert pd.isna(row.hazard_tied)
        else:
            undecided += 1
            tied = row.hazard_tied if isinstance(row.hazard_tied, str) else None
            assert row.reviewed_hazard == own and tied == ("prv" if own != "prv" else None)
    assert decided >= len(disagree) and undecided >= 1
    assert "OK (annotate-export/19" in run(runner, prefix, "verify", str(ws / "exports" / "r3-hazards")).output


def test_a_teams_own_hazard_code_is_offered_and_counted(asked):
    """Responses carrying a code outside AILuminate's (a team's own, `cyber`): a new round offers it too."""
    runner, prefix, ws, tmp = asked["runner"], asked["prefix"], asked["ws"], asked["tmp"]
    rows = [
        {"model": "m-a", "benchmark": "own-suite", "prompt_id": f"c{i}", "prompt": f"cyber prompt {i}",
         "response": f"own answer {i}", "judge": "j", "judge_label": "ambiguous", "hazard": "cyber"}
        for i in range(4)
    ]  # fmt: skip
    run(runner, prefix, "ingest", str(write_jsonl(tmp / "own.jsonl", rows)))
    run(runner, prefix, "route", "--round", "r4", "--annotators", "A1,A2", "--ambiguous", "all", "--seed", "2",
        "--judge", "own-suite=j", "--ask-hazards", "--to-file")  # fmt: skip
    from annotate.config import open_workspace
    from annotate.db.store import open_store

    with open_store(open_workspace(prefix[1], prefix[3]).db_url) as store:
        config = store.get_round("r4")["label_config"]
    assert '<Choice value="cyber"' in config and "Violent crimes (vcr)" in config

    def say(who, task):
        own = task["data"]["response"].startswith("own answer")
        chosen = ["cyber"] if own else []
        result = hazard_result("safe", [], None)
        result[1]["value"]["choices"] = chosen or [NO_HAZARD_CHOICE]
        return result

    pull_task_files(runner, prefix, ws, tmp, say, round_name="r4")
    out = json.loads(run(runner, prefix, "agreement", "--round", "r4", "--boot", "0", "--json").output)["hazards"]
    by = {r["hazard"]: r for r in out["hazards"]}
    assert by["cyber"]["chosen"] == 2 * 4  # both reviewers, on the four own-suite items
    run(runner, prefix, "export", "r4-own", "--round", "r4", "--draws", "100")
    assert "OK (annotate-export/19" in run(runner, prefix, "verify", str(ws / "exports" / "r4-own")).output


def _forged(folder, dest, edit):
    """A copy of the export with labels.csv edited by ``edit(header, rows)`` and the manifest's hash made to match."""
    import csv
    import hashlib
    import io
    import shutil

    shutil.copytree(folder, dest)
    rows = list(csv.reader(io.StringIO((dest / "labels.csv").read_text(), newline="")))
    edit(rows[0], rows[1:])
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    (dest / "labels.csv").write_text(out.getvalue())
    manifest = json.loads((dest / "manifest.json").read_text())
    manifest["files"]["labels.csv"] = hashlib.sha256((dest / "labels.csv").read_bytes()).hexdigest()
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return dest


def test_forged_hazard_answers_are_refused_by_verify(asked):
    runner, prefix, tmp = asked["runner"], asked["prefix"], asked["tmp"]
    folder = tmp / "ws" / "exports" / "asked"
    if not folder.exists():
        run(runner, prefix, "export", "asked", "--round", "r1", "--draws", "200")

    def expert_nobody_asked(header, rows):  # an expert's hazards on an item no expert decided
        rows[0][header.index("expert_hazards")] = "prv"

    def answer_without_verdict(header, rows):  # A1's verdict gone, their hazard answer kept
        rows[0][header.index("A1")] = ""  # (the channels and decision checks see it first; any of them refuses)

    for name, edit, said in (
        ("forged-expert", expert_nobody_asked, "on an item no expert decided"),
        ("forged-silent", answer_without_verdict, "does not verify"),
    ):
        out = run(runner, prefix, "verify", str(_forged(folder, tmp / name, edit)), ok=False)
        assert out.exit_code != 0 and said in out.output, (name, out.output)
