"""`annotate adjudicate --ds-with-judges` on a real store (SQLite and PostgreSQL).

The option is a diagnostic: the same round adjudicated with and without it must leave the same
``final_label`` records and export the same ``labels.csv``, byte for byte. Two workspaces are
built from the same inputs (the same seed selects the same responses; the reviewers' labels are
pulled from Label Studio export files), one adjudicated with the option and one without. The
round has three reviewers and 32 items, so Dawid-Skene's escalation rule is in force and a
leak of the judges into it would change decisions.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pandas as pd
import pytest

from annotate.cli import cli
from tests.helpers import (
    pull_task_files,
    sqlite_only_db_url,  # noqa: F401  (fixture: one SQLite store; the subject is not the store)
    write_jsonl,
)

MODELS = ("m-one", "m-two")
N = 40
REVIEWERS = ("A1", "A2", "A3")


def first_label(i: int) -> str:
    return "ambiguous" if i < 6 else ("harmful" if i < 18 else "safe")


def truth(i: int) -> str:
    return "harmful" if i % 3 == 0 else "safe"


def flip(v: str) -> str:
    return {"harmful": "safe", "safe": "harmful"}[v]


def verdict(who: str, i: int) -> str:
    """A1 is always right; A2 and A3 err on some prompts (2-1 splits) and A3 is sometimes unsure."""
    if who == "A2" and i % 7 == 0:
        return flip(truth(i))
    if who == "A3" and i % 5 == 0:
        return flip(truth(i))
    if who == "A3" and i % 11 == 4:
        return "unsure"
    return truth(i)


def second_label(i: int) -> str:
    return flip(truth(i)) if i % 4 == 0 else truth(i)


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
    assert result.exit_code == 0, (args, result.output, result.stderr)
    return result


def pull_reviews(runner, prefix, ws: Path, tmp: Path, reviewers=REVIEWERS, say=verdict) -> None:
    """Each reviewer's Label Studio export of their task file, pulled."""

    def said(who, task):
        found = re.search(r"prompt (\d+)$", task["data"]["prompt"])
        assert found is not None
        return say(who, int(found.group(1)))

    pull_task_files(runner, prefix, ws, tmp, said, reviewers=tuple(reviewers))


def reviewed_round(runner, prefix, ws: Path, tmp: Path) -> None:
    """The first judge routes r1 to three reviewers; their labels are pulled; a second judge is ingested.

    The second judge's row of m-two's prompt 2 has another response text (another response);
    it has no verdict on prompt 4.
    """
    tmp.mkdir(parents=True, exist_ok=True)
    rows = [row(m, i, "first", first_label(i)) for m in MODELS for i in range(N)]
    run(runner, [*prefix, "ingest", str(write_jsonl(tmp / "first.jsonl", rows))])
    for email in ("a1@example.org", "a2@example.org", "a3@example.org"):
        run(runner, [*prefix, "annotators", "add", email, "--offline"])
    run(
        runner,
        [*prefix, "route", "--round", "r1", "--annotators", ",".join(REVIEWERS), "--clear-per-cell", "5"]
        + ["--seed", "3", "--to-file"],
    )
    pull_reviews(runner, prefix, ws, tmp)
    second = [
        row(m, i, "second", second_label(i), response="a different answer" if (m, i) == ("m-two", 2) else None)
        for m in MODELS
        for i in range(N)
        if i != 4
    ]
    run(runner, [*prefix, "ingest", str(write_jsonl(tmp / "second.jsonl", second))])


@pytest.fixture
def other_db_url(request, db_url, tmp_path):
    """A second, empty store of the same kind as ``db_url``."""
    if db_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'other.db'}"
        return
    import psycopg

    server = request.getfixturevalue("pg_server_url")
    base = server.replace("+psycopg", "")
    name = f"annotate_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"{server.rsplit('/', 1)[0]}/{name}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def stored_decisions(ws: Path, db: str) -> list[dict]:
    """Every final_label record (history included), keyed by the response instead of store ids."""
    from annotate.config import open_workspace
    from annotate.pipeline._resolve import resolve_round
    from annotate.pipeline.session import session_for

    s = session_for(open_workspace(str(ws), db))
    try:
        rid = int(resolve_round(s.store, "r1")["id"])
        items = s.store.round_items(rid)[["round_item_id", "model", "benchmark", "prompt_id", "epoch"]]
        final = s.store.final_labels(rid, history=True)
        escalations = s.store.escalations(rid)
    finally:
        s.store.close()
    assert escalations.empty  # no expert: nothing is sent
    cols = ["model", "benchmark", "prompt_id", "epoch", "status", "label", "method", "adjudicator", "reason"]
    cols += ["votes", "policy"]
    df = final.merge(items, on="round_item_id")[cols].astype(object)
    df = df.where(pd.notna(df), None)
    return df.sort_values(["model", "prompt_id"]).to_dict("records")


def test_the_option_changes_no_stored_decision_and_no_exported_label(workspace, runner, tmp_path, other_db_url):
    ws_a, prefix_a = workspace
    ws_b = tmp_path / "ws-b"
    prefix_b = ["--workspace", str(ws_b), "--db", other_db_url]
    run(runner, ["init", str(ws_b), "--db", other_db_url])
    reviewed_round(runner, prefix_a, ws_a, tmp_path / "a")
    reviewed_round(runner, prefix_b, ws_b, tmp_path / "b")

    with_judges = json.loads(
        run(runner, [*prefix_a, "adjudicate", "--round", "r1", "--ds-with-judges", "--json"]).output
    )
    plain = json.loads(run(runner, [*prefix_b, "adjudicate", "--round", "r1", "--json"]).output)
    diagnostic = with_judges.pop("ds_with_judges")
    assert "ds_with_judges" not in plain
    escalated = [dict(u) for u in with_judges["unresolved"]]
    for doc in (with_judges, plain):  # item ids are random per store (route's ext_id)
        for u in doc["unresolved"]:
            del u["ext_id"]
    assert with_judges == plain
    # The round is one in which the reviewers-only Dawid-Skene rule escalates items that the fit
    # with judges is sure of: were that fit used, decisions would differ.
    posterior = {i["ext_id"]: i["ds_posterior"] for i in diagnostic["items"]}
    by_ds = [u["ext_id"] for u in escalated if "dawid-skene posterior" in u["reason"]]
    assert [e for e in by_ds if posterior[e] >= 0.9], (by_ds, posterior)

    decisions_a = stored_decisions(ws_a, prefix_a[-1])
    assert decisions_a == stored_decisions(ws_b, prefix_b[-1])
    assert len(decisions_a) == diagnostic["n_items"] == 32

    for prefix in (prefix_a, prefix_b):
        run(runner, [*prefix, "export", "audit", "--round", "r1", "--draws", "200"])
    labels_a = (ws_a / "exports" / "audit" / "labels.csv").read_bytes()
    assert labels_a == (ws_b / "exports" / "audit" / "labels.csv").read_bytes()
    # The diagnostic is never written into an export.
    for path in (ws_a / "exports" / "audit").iterdir():
        if path.is_file():
            assert b"ds_with_judges" not in path.read_bytes() and b"DS+judges" not in path.read_bytes(), path

    # Re-running either way on the same store adds nothing.
    again = json.loads(run(runner, [*prefix_a, "adjudicate", "--round", "r1", "--json"]).output)
    assert again["new_records"] == 0
    again = json.loads(run(runner, [*prefix_b, "adjudicate", "--round", "r1", "--ds-with-judges", "--json"]).output)
    assert again["new_records"] == 0
    assert stored_decisions(ws_b, prefix_b[-1]) == decisions_a


def test_the_diagnostic_names_every_rater_and_the_response_left_out(workspace, runner, tmp_path):
    ws, prefix = workspace
    reviewed_round(runner, prefix, ws, tmp_path)
    doc = json.loads(
        run(runner, [*prefix, "adjudicate", "--round", "r1", "--ds-with-judges", "--json"]).output,
        parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"),
    )
    d = doc["ds_with_judges"]
    assert [(r["rater"], r["kind"], r["routing"]) for r in d["raters"]] == [
        ("A1", "reviewer", False),
        ("A2", "reviewer", False),
        ("A3", "reviewer", False),
        ("first", "judge", True),
        ("second", "judge", False),
    ]
    first, second = d["raters"][3], d["raters"][4]
    assert first["n_missing"] == 12 and first["n_unrated"] == 0  # the census: 6 ambiguous per model
    # No verdict on the two prompts 4; m-two's prompt 2 is another response (named, not used).
    assert second["n_unrated"] == 3 and second["n_missing"] == 0
    assert d["notes"] == [
        "1 verdict(s) of judge second are on another prompt or response text under a reviewed response's key: "
        "another response, not used as a rating."
    ]
    assert d["vs_final"]["n_items"] == 32
    # Three reviewers, 32 items: no identification caveat; the routing judge's is there.
    assert not any("weakly identified" in c for c in d["caveats"])
    assert any(c.startswith("first routed this round") for c in d["caveats"])
    text = run(runner, [*prefix, "adjudicate", "--round", "r1", "--ds-with-judges"]).output
    assert "Note: 1 verdict(s) of judge second" in text
    assert re.search(r"^  first +judge \(routing\) +\d+ +\d+ +12 +0 +0\.\d{3} +0\.\d{3}$", text, re.M), text


def test_an_unknown_round_is_an_input_error(workspace, runner, tmp_path):
    ws, prefix = workspace
    reviewed_round(runner, prefix, ws, tmp_path)
    result = runner.invoke(cli, [*prefix, "adjudicate", "--round", "nope", "--ds-with-judges"])
    assert result.exit_code == 2
    assert "Error: no round named 'nope' (rounds: r1)" in result.output + result.stderr


def test_a_round_without_any_clear_judge_verdict_is_refused_before_anything_is_written(workspace, runner, tmp_path):
    """Every reviewed response is in the routing judge's ambiguous census and no other judge labelled them."""
    ws, prefix = workspace
    rows = [row("m-one", i, "unsure-judge", "ambiguous") for i in range(8)]
    run(runner, [*prefix, "ingest", str(write_jsonl(tmp_path / "amb.jsonl", rows))])
    for email in ("a1@example.org", "a2@example.org"):
        run(runner, [*prefix, "annotators", "add", email, "--offline"])
    run(runner, [*prefix, "annotators", "add", "lead@example.org", "--expert", "--offline"])
    run(runner, [*prefix, "route", "--round", "r1", "--annotators", "A1,A2", "--clear-per-cell", "5", "--to-file"])
    pull_reviews(runner, prefix, ws, tmp_path, reviewers=("A1", "A2"), say=lambda who, i: verdict("A2", i))

    result = runner.invoke(
        cli, [*prefix, "adjudicate", "--round", "r1", "--expert", "E1", "--to-file", "--ds-with-judges"]
    )
    assert result.exit_code == 2, result.output
    message = result.output + result.stderr
    assert (
        "Error: round 'r1': no judge called any of its 8 reviewed response(s) harmful or safe "
        "(unsure-judge: ambiguous 8), so there is no judge to add as a rater." in message
    )
    assert "annotate adjudicate --round r1 --ds-with-judges" in message and "Traceback" not in message
    # The store is as it was: no decision, no escalation, no expert task file.
    from annotate.config import open_workspace
    from annotate.pipeline.session import session_for

    s = session_for(open_workspace(str(ws), prefix[-1]))
    try:
        rid = int(s.store.get_round("r1")["id"])
        assert s.store.final_labels(rid, history=True).empty
        assert s.store.escalations(rid).empty
    finally:
        s.store.close()
    assert not (ws / "tasks" / "r1" / "E1-adjudication.json").exists()
    # Without the option the round adjudicates as always.
    ok = json.loads(run(runner, [*prefix, "adjudicate", "--round", "r1", "--policy", "unresolved", "--json"]).output)
    assert ok["new_records"] == 8
