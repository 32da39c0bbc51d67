"""A round that lives in time (issue #30), offline on the bundled XSTest files.

Two reviewers label a few tasks a day in the order their task files give (the order Label Studio
serves an imported project in), with XSTest's two real human annotations as their verdicts; the
lead pulls, runs `status`, `adjudicate` and `export` in between, as they would mid-round:

* the default order (blocks of 10 in one shared seeded order, shuffled per reviewer) completes
  items as the reviewers go: after 20 labels each, the 20 items both labelled are the same ones;
  an independent order (``--order independent``) completes almost none;
* `adjudicate` settles or escalates only items whose routed votes are all in; the rest wait,
  counted per reviewer, and never reach the expert (``--escalate-early`` decides them);
* `export` of the unfinished round writes an interim export that says so (manifest, report),
  which `verify` re-derives, order.csv included; tampering with the order fails verification.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from annotate.cli import cli
from annotate.labelstudio.tasks import BLIND_CHECK_TEXT
from tests.data_files import xstest_gpteval

MODELS = ("gpt4", "llama2new", "llama2orig", "mistralguard", "mistralinstruct")
REVIEWERS = {"A1": "annotation_1", "A2": "annotation_2"}


def run(runner: Any, prefix: list[str], *args: str, ok: bool = True) -> Any:
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (args, result.output, result.stderr)
    return result


def _route(runner: Any, tmp_path: Path, *order: str) -> tuple[Path, list[str]]:
    ws = tmp_path / "ws"
    run(runner, [], "init", str(ws))
    prefix = ["-w", str(ws)]
    run(runner, prefix, "ingest", "--format", "xstest", *[str(xstest_gpteval(m)) for m in MODELS])
    for email in ("a1@x.invalid", "a2@x.invalid"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    run(runner, prefix, "annotators", "add", "lead@x.invalid", "--expert", "--offline")
    run(
        runner, prefix, "route", "--round", "r1", "--annotators", "A1,A2", "--clear-per-cell", "25", "--seed", "7",
        "--to-file", *order,
    )  # fmt: skip
    return ws, prefix


def _truth(ws: Path) -> dict[str, dict[str, Any]]:
    """Per reviewer: task ext_id -> (round item, XSTest's human verdict of that reviewer)."""
    from annotate.config import open_workspace
    from annotate.db import open_store
    from annotate.pipeline.demo import xstest_verdict

    store = open_store(open_workspace(str(ws), None).db_url)
    try:
        rid = int(store.get_round("r1")["id"])
        items = store.round_items(rid).merge(
            store.responses(["id", "meta"]).rename(columns={"id": "response_id"}), on="response_id"
        )
        meta = {int(i): json.loads(m) for i, m in zip(items.round_item_id, items.meta, strict=True)}
        category = dict(zip(items.round_item_id.astype(int), items.category, strict=True))
        projects = store.ls_projects(rid).set_index("pseudonym")
        out: dict[str, dict[str, Any]] = {}
        for who, column in REVIEWERS.items():
            tasks = store.ls_tasks(int(projects.loc[who, "id"]))
            out[who] = {}
            for t in tasks.itertuples():
                item = int(t.round_item_id)
                out[who][str(t.ext_id)] = (item, xstest_verdict(meta[item][column], category[item]))
        return out
    finally:
        store.close()


def _label_first(
    runner: Any, prefix: list[str], ws: Path, tmp: Path, who: str, k: int, *, skip: frozenset[int] = frozenset()
) -> list[int]:
    """``who`` labels the first ``k`` tasks of their task file (skipping the round items in ``skip``),
    exported as Label Studio would and pulled; the round items they answered, in order."""
    from annotate.labelstudio.labelconfig import choices_result

    tasks = json.loads((ws / "tasks" / "r1" / f"{who}.json").read_text())
    truth = _truth(ws)[who]
    export, answered = [], []
    for n, task in enumerate(tasks):
        anns = []
        if n < k:
            item, verdict = truth[task["data"]["ext_id"]]
            answered.append(item)
            base = {"id": 10_000 * (1 + list(REVIEWERS).index(who)) + n, "completed_by": 7 + list(REVIEWERS).index(who)}
            if item in skip:
                anns = [{**base, "result": [], "was_cancelled": True}]
            else:
                anns = [{**base, "result": choices_result(verdict), "was_cancelled": False, "lead_time": 20.0}]
        export.append({"id": 1 + n, "data": task["data"], "meta": task["meta"], "annotations": anns})
    path = tmp / f"{who}-labels.json"
    path.write_text(json.dumps(export))
    run(runner, prefix, "pull", "--round", "r1", "--from-file", str(path), "--annotator", who)
    return answered


def _exported_mid_round(runner: Any, tmp_path: Path) -> Path:
    """A round whose two reviewers labelled their first ten tasks, adjudicated and exported: the export's folder."""
    ws, prefix = _route(runner, tmp_path)
    _label_first(runner, prefix, ws, tmp_path, "A1", 10)
    _label_first(runner, prefix, ws, tmp_path, "A2", 10)
    run(runner, prefix, "adjudicate", "--round", "r1")
    run(runner, prefix, "export", "x", "--round", "r1")
    return ws / "exports" / "x"


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def test_twenty_labels_each_complete_twenty_items_and_only_they_are_adjudicated(runner, tmp_path):
    ws, prefix = _route(runner, tmp_path)
    a1 = _label_first(runner, prefix, ws, tmp_path, "A1", 20)
    a2 = _label_first(runner, prefix, ws, tmp_path, "A2", 20)
    both = set(a1) & set(a2)
    assert len(both) >= 15  # the bar; blocks of ten give all 20
    assert len(both) == 20

    status = json.loads(run(runner, prefix, "status", "--round", "r1", "--json").output)["adjudication"]
    assert status["complete"] == 20 and status["worthwhile"] and status["would_settle"] + status["would_escalate"] == 20
    assert status["waiting"] == 0 and status["no_vote_yet"] == 289 - 20

    out = json.loads(run(runner, prefix, "adjudicate", "--round", "r1", "--expert", "E1", "--to-file", "--json").output)
    assert out["waited"] and out["waiting"] == 0 and out["awaiting_review"] == 289 - 20
    decided = sum(out["counts"].values())
    assert decided == 20 and out["counts"].get("escalated", 0) == out["sent_to_expert"] - out["check"]["n_drawn"]
    # The expert's tasks: only items both reviewers answered, each saying why it is there; an escalation
    # shows both votes, a majority check none (the check is blind to them: issue #43).
    sent = json.loads((ws / "tasks" / "r1" / "E1-adjudication.json").read_text())
    checks = [t for t in sent if t["data"]["prior_votes"] == BLIND_CHECK_TEXT]
    escalated = [t for t in sent if t not in checks]
    assert len(checks) == out["check"]["n_drawn"] and len(escalated) == out["sent_to_expert"] - len(checks)
    assert all(t["data"]["prior_votes"].startswith("Why this item: ") for t in escalated)
    assert all("A1:" in t["data"]["prior_votes"] and "A2:" in t["data"]["prior_votes"] for t in escalated)

    # The lead exports the round as it stands: an interim export that says so, and verifies.
    run(runner, prefix, "export", "mid", "--round", "r1")
    folder = ws / "exports" / "mid"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["schema"] == "annotate-export/19" and manifest["status"] == "interim"
    (state,) = manifest["rounds_state"]
    assert (
        state["status"] == "interim"
        and state["awaiting_review"] == 269
        and state["waiting_for"]
        == {
            "A1": 269,
            "A2": 269,
        }
    )
    report = (folder / "report.html").read_text()
    assert "Interim export: the review is not finished." in report and "not yet reviewed" in report
    # its headline counts what was sent to review and what has a vote, not 289 "reviewed by humans" (#43)
    assert "responses reviewed by humans" not in report and "responses sent to review" in report
    assert "20 with a vote so far" in report
    verified = run(runner, [], "verify", str(folder))
    assert "INTERIM" in verified.output and "order.csv" in verified.output
    order = _rows(folder / "order.csv")
    assert len(order) == 2 * 289 and {r["annotator"] for r in order} == {"A1", "A2"}
    design = json.loads((folder / "design.json").read_text())
    assert design["rounds"][0]["order"] == {"design": "blocks", "block_size": 10}


def test_an_independent_order_completes_almost_nothing_early_and_is_recorded(runner, tmp_path):
    ws, prefix = _route(runner, tmp_path, "--order", "independent")
    a1 = _label_first(runner, prefix, ws, tmp_path, "A1", 20)
    a2 = _label_first(runner, prefix, ws, tmp_path, "A2", 20)
    assert len(set(a1) & set(a2)) <= 5
    out = json.loads(run(runner, prefix, "adjudicate", "--round", "r1", "--expert", "E1", "--to-file", "--json").output)
    assert out["waiting"] == len(set(a1) ^ set(a2)) and set(out["waiting_for"]) == {"A1", "A2"}
    assert sum(out["waiting_for"].values()) == out["waiting"]
    # Nothing waiting went to the expert.
    assert not (ws / "tasks" / "r1" / "E1-adjudication.json").exists() or all(
        ("A1:" in t["data"]["prior_votes"] and "A2:" in t["data"]["prior_votes"])
        or t["data"]["prior_votes"] == BLIND_CHECK_TEXT
        for t in json.loads((ws / "tasks" / "r1" / "E1-adjudication.json").read_text())
    )
    run(runner, prefix, "export", "mid", "--round", "r1")
    folder = ws / "exports" / "mid"
    assert json.loads((folder / "design.json").read_text())["rounds"][0]["order"] == {
        "design": "independent",
        "block_size": None,
    }
    assert {r["block"] for r in _rows(folder / "order.csv")} == {""}
    run(runner, [], "verify", str(folder))
    # A routed round keeps its order design.
    refused = run(runner, prefix, "route", "--round", "r1", "--annotators", "A1,A2", "--clear-per-cell", "25",
                  "--seed", "7", "--to-file", "--order", "blocks", ok=False)  # fmt: skip
    assert refused.exit_code == 2 and "was routed with --order independent" in refused.stderr


def test_escalating_early_decides_the_waiting_items_and_waiting_again_holds_them(runner, tmp_path):
    ws, prefix = _route(runner, tmp_path)
    _label_first(runner, prefix, ws, tmp_path, "A1", 17)
    _label_first(runner, prefix, ws, tmp_path, "A2", 3)
    waited = json.loads(run(runner, prefix, "adjudicate", "--round", "r1", "--json").output)
    assert waited["waiting"] == 14 and waited["waiting_for"] == {"A2": 14}
    text = run(runner, prefix, "adjudicate", "--round", "r1").output
    assert "14 item(s) with some votes wait for the rest (14 waiting for A2)" in text
    early = json.loads(run(runner, prefix, "adjudicate", "--round", "r1", "--escalate-early", "--json").output)
    assert not early["waited"] and early["decided_early"] == 14 and early["waiting"] == 0
    # A1's lone sure votes escalate ("only 1 sure vote(s), 2 needed") when decided early.
    assert early["counts"].get("escalated", 0) >= 10
    run(runner, prefix, "export", "early", "--round", "r1")
    design = json.loads((ws / "exports" / "early" / "design.json").read_text())
    assert design["rounds"][0]["adjudication"]["wait_for_votes"] is False
    run(runner, [], "verify", str(ws / "exports" / "early"))
    again = json.loads(run(runner, prefix, "adjudicate", "--round", "r1", "--json").output)
    assert again["waiting"] == 14 and again["new_records"] == 14
    run(runner, prefix, "export", "waiting-again", "--round", "r1")
    run(runner, [], "verify", str(ws / "exports" / "waiting-again"))


def test_a_skip_is_a_vote_in_and_an_item_everyone_skipped_goes_to_the_expert(runner, tmp_path):
    ws, prefix = _route(runner, tmp_path)
    first = _label_first(runner, prefix, ws, tmp_path, "A1", 20)
    both, single = frozenset(first[:2]), frozenset(first[2:6])
    a1 = _label_first(runner, prefix, ws, tmp_path, "A1", 20, skip=both)
    a2 = _label_first(runner, prefix, ws, tmp_path, "A2", 20, skip=both | single)
    assert set(a1) == set(a2)
    out = json.loads(run(runner, prefix, "adjudicate", "--round", "r1", "--json").output)
    assert out["waiting"] == 0 and out["counts"]["escalated"] >= 6
    reasons = out["escalation_reasons"]
    assert reasons["no verdict (every reviewer skipped it)"] == 2 and reasons["only 1 sure vote(s), 2 needed"] >= 4
    run(runner, prefix, "export", "skips", "--round", "r1")
    labels = _rows(ws / "exports" / "skips" / "labels.csv")
    assert sum(r["A2"] == "skipped" for r in labels) == 6 and sum(r["A1"] == "skipped" for r in labels) == 2
    run(runner, [], "verify", str(ws / "exports" / "skips"))


def test_a_new_vote_since_the_last_adjudication_refuses_the_export_with_the_step_that_fixes_it(runner, tmp_path):
    ws, prefix = _route(runner, tmp_path)
    _label_first(runner, prefix, ws, tmp_path, "A1", 10)
    run(runner, prefix, "adjudicate", "--round", "r1")
    _label_first(runner, prefix, ws, tmp_path, "A2", 10)
    refused = run(runner, prefix, "export", "stale", "--round", "r1", ok=False)
    assert refused.exit_code != 0 and "annotate adjudicate" in refused.stderr
    run(runner, prefix, "adjudicate", "--round", "r1")
    run(runner, prefix, "export", "stale", "--round", "r1")  # the step named changed the outcome: no loop
    run(runner, [], "verify", str(ws / "exports" / "stale"))


@pytest.mark.parametrize("how", ["swap", "block", "priority", "drop"])
def test_an_order_that_is_not_the_designs_fails_verification(runner, tmp_path, how):
    folder = _exported_mid_round(runner, tmp_path)
    path = folder / "order.csv"
    rows = _rows(path)
    if how == "swap":  # two tasks of A1 in each other's places
        rows[0]["position"], rows[1]["position"] = rows[1]["position"], rows[0]["position"]
    elif how == "block":
        rows[0]["block"] = "2"
    elif how == "priority":
        rows[5]["priority"] = "0.9"
    else:
        rows = rows[1:]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(_rows(path)[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")
    manifest = json.loads((folder / "manifest.json").read_text())
    import hashlib

    manifest["files"]["order.csv"] = hashlib.sha256(path.read_bytes()).hexdigest()  # a consistent forgery
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    failed = run(runner, [], "verify", str(folder), ok=False)
    assert failed.exit_code == 1
    fails = [line for line in failed.stderr.splitlines() if line.startswith("FAIL:")]
    assert fails and all("order.csv" in line for line in fails), fails


def test_an_export_that_claims_to_be_final_fails_verification(runner, tmp_path):
    folder = _exported_mid_round(runner, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["status"] = "final"
    manifest["rounds_state"][0]["status"] = "final"
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    failed = run(runner, [], "verify", str(folder), ok=False)
    assert "manifest.json: status 'final'; labels.csv and design.json make the export 'interim'" in failed.stderr


def test_an_export_with_an_order_relabelled_as_annotate_export_7_is_refused(runner, tmp_path):
    folder = _exported_mid_round(runner, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["schema"] = "annotate-export/7"
    for name in ("order.csv", "judge_models.csv"):  # files of later schemas than /7
        del manifest["files"][name]
        (folder / name).unlink()
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    failed = run(runner, [], "verify", str(folder), ok=False)
    assert failed.exit_code == 1 and "record their task order" in failed.stderr and "annotate-export/8" in failed.stderr


@pytest.mark.parametrize("older", ["annotate-export/7", "annotate-export/8", "annotate-export/9"])
def test_an_interim_export_relabelled_as_an_older_schema_names_what_no_writer_of_it_could_write(
    runner, tmp_path, older
):
    """Issue #43: no writer of /7 to /9 had store schema 15; /7 records no interim or final state."""
    folder = _exported_mid_round(runner, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "interim" and manifest["store_schema_version"] == 16
    manifest["schema"] = older
    later = {"annotate-export/7": ("order.csv", "judge_models.csv"), "annotate-export/8": ("judge_models.csv",)}
    for name in later.get(older, ()):
        del manifest["files"][name]
        (folder / name).unlink()
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    failed = run(runner, [], "verify", str(folder), ok=False)
    assert failed.exit_code == 1, failed.output
    assert f"no writer of {older} exports had a store newer than version 13" in failed.stderr, failed.stderr
    if older == "annotate-export/7":
        assert "status and rounds_state, which annotate-export/7 exports do not record" in failed.stderr
