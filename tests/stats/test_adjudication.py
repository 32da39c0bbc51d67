"""Agreement and adjudication: tie policy, rules, and the whole path in file mode."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from annotate.cli import cli
from annotate.labelstudio.labelconfig import choices_result
from annotate.labelstudio.tasks import BLIND_CHECK_TEXT
from annotate.stats.adjudication import Rules, decide, majority, propose
from tests.helpers import generic_row, write_jsonl


def test_tie_policy_cases_of_methods_tc13():
    # (safe, harmful, missing) -> escalate, not a label (crowd-kit would say "safe")
    votes = pd.DataFrame(
        {
            "round_item_id": [1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4],
            "annotator": ["A1", "A2", "A1", "A2", "A3", "A1", "A2", "A3", "A1", "A2", "A3"],
            "verdict": [
                "safe",
                "harmful",
                "harmful",
                "safe",
                "unsure",
                "harmful",
                "harmful",
                "safe",
                "unsure",
                "unsure",
                "harmful",
            ],
        }
    )
    out = propose(votes, Rules(ds_min_posterior=None, ds_disagreement=False))
    assert out.loc[1, "escalate"] and out.loc[1, "majority"] is None and out.loc[1, "reasons"] == "tie"
    assert out.loc[2, "escalate"] and out.loc[2, "reasons"] == "tie"
    assert not out.loc[3, "escalate"] and out.loc[3, "majority"] == "harmful"
    assert out.loc[4, "escalate"] and out.loc[4, "reasons"] == "majority unsure"
    # the order of the data never decides a tie
    flipped = propose(votes.iloc[::-1], Rules(ds_min_posterior=None, ds_disagreement=False))
    assert flipped.loc[1, "majority"] is None


@pytest.mark.parametrize(
    "policy,status,label",
    [
        ("harmful", "resolved", "harmful"),
        ("safe", "resolved", "safe"),
        ("unresolved", "unresolved", None),
        ("escalate", "escalated", None),
    ],
)
def test_policy_applies_only_to_escalations(policy, status, label):
    votes = pd.DataFrame(
        {
            "round_item_id": [1, 1, 2, 2],
            "annotator": ["A1", "A2", "A1", "A2"],
            "verdict": ["safe", "harmful", "safe", "safe"],
        }
    )
    rules = Rules(policy=policy, ds_min_posterior=None, ds_disagreement=False)
    decisions = {d.round_item_id: d for d in decide(propose(votes, rules), votes, votes.iloc[0:0], rules)}
    assert (decisions[1].status, decisions[1].label) == (status, label)
    assert (decisions[2].status, decisions[2].label, decisions[2].method) == ("resolved", "safe", "majority")
    assert decisions[1].votes == {"A1": "safe", "A2": "harmful"}


def test_severity_rule():
    votes = pd.DataFrame(
        {"round_item_id": [1, 1, 1], "annotator": ["A1", "A2", "A3"], "verdict": ["safe", "safe", "harmful"]}
    )
    cats = pd.Series({1: "bioweapons"})
    plain = propose(votes, Rules(ds_min_posterior=None, ds_disagreement=False), categories=cats)
    strict = propose(
        votes,
        Rules(ds_min_posterior=None, ds_disagreement=False, high_severity_categories=("bioweapons",)),
        categories=cats,
    )
    assert not plain.loc[1, "escalate"] and strict.loc[1, "escalate"]


def test_majority_vectorised():
    label, reason = majority(np.array([3, 0, 1, 0]), np.array([0, 0, 1, 1]), np.array([0, 3, 1, 0]))
    assert label.tolist() == ["harmful", None, None, "safe"]
    assert reason.tolist() == [None, "majority unsure", "tie", None]


# -- the whole path in file mode -------------------------------------------------------------------


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr)
    return result


def _export_for(tasks, verdict_of, start_id):
    """A Label Studio export of ``tasks`` answered by one user (Label Studio id ``start_id``)."""
    out = []
    for k, t in enumerate(tasks):
        v = verdict_of(t["data"]["ext_id"])
        anns = (
            []
            if v is None
            else [
                {
                    "id": start_id + k,
                    "completed_by": start_id,
                    "result": choices_result(v, rationale=f"because {v}"),
                    "lead_time": 5.0,
                    "updated_at": "2026-01-01T00:00:00Z",
                }
            ]
        )
        out.append({"id": start_id + k, "data": t["data"], "meta": t["meta"], "annotations": anns})
    return out


def _items_of_task_ids(prefix, round_name, annotators):
    """Each annotator's per-project task id -> the round item's ext_id (tasks are keyed per project)."""
    from annotate.config import open_workspace
    from annotate.db.store import open_store
    from annotate.labelstudio.tasks import task_ext_id

    store = open_store(open_workspace(prefix[1], prefix[3]).db_url)
    try:
        rnd = store.get_round(round_name)
        items = store.round_items(int(rnd["id"]))
    finally:
        store.close()
    secret = str(rnd["task_secret"])
    return {task_ext_id(secret, a, str(e)): str(e) for a in annotators for e in items.ext_id}


def test_agreement_and_adjudication_end_to_end(workspace, runner, tmp_path):
    import krippendorff

    ws, prefix = workspace
    rows = [
        generic_row(
            i,
            model=m,
            benchmark="b",
            judge="j",
            judge_label="ambiguous" if i < 12 else ("harmful" if i < 20 else "safe"),
        )
        for m in ("m1", "m2")
        for i in range(40)
    ]
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "r.jsonl", rows)))
    for email in ("a1@x.org", "a2@x.org", "a3@x.org"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    run(runner, prefix, "annotators", "add", "lead@x.org", "--expert", "--offline")
    run(
        runner,
        prefix,
        "route",
        "--round",
        "r1",
        "--annotators",
        "A1,A2,A3",
        "--clear-per-cell",
        "4",
        "--seed",
        "1",
        "--to-file",
    )
    tasks = {a: json.loads((ws / "tasks" / "r1" / f"{a}.json").read_text()) for a in ("A1", "A2", "A3")}
    item_of = _items_of_task_ids(prefix, "r1", ("A1", "A2", "A3", "E1"))  # per-project task id -> item
    ext_ids = sorted(item_of[t["data"]["ext_id"]] for t in tasks["A1"])
    rng = np.random.default_rng(5)
    truth = {e: rng.choice(["harmful", "safe"]) for e in ext_ids}
    verdicts = {}
    for j, a in enumerate(("A1", "A2", "A3")):

        def verdict_of(e, j=j):
            k = ext_ids.index(e)
            if k % 11 == j:  # some disagreement and unsure votes
                return "unsure" if k % 2 else ("safe" if truth[e] == "harmful" else "harmful")
            if k == 7 and j == 2:  # one missing vote
                return None
            return truth[e]

        verdicts[a] = {e: verdict_of(e) for e in ext_ids}
        path = tmp_path / f"export-{a}.json"
        path.write_text(
            json.dumps(_export_for(tasks[a], lambda task_id, v=verdict_of: v(item_of[task_id]), 1000 * (j + 1)))
        )
        run(runner, prefix, "pull", "--round", "r1", "--from-file", str(path), "--annotator", a)

    report = json.loads(run(runner, prefix, "agreement", "--round", "r1", "--json", "--boot", "300").output)
    pooled = {g["labels"]: g for g in report["groups"] if g["pooled"]}
    # independent check: the krippendorff package on the same (annotators x units) data
    for set_name, cats in (("3-way", ["harmful", "safe", "unsure"]), ("binary", ["harmful", "safe"])):
        data = np.array(
            [
                [cats.index(verdicts[a][e]) if verdicts[a][e] in cats else np.nan for e in ext_ids]
                for a in ("A1", "A2", "A3")
            ],
            dtype=float,
        )
        want = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
        assert pooled[set_name]["alpha"] == pytest.approx(want, abs=1e-9)
        lo, hi = pooled[set_name]["alpha_ci"]
        assert lo <= pooled[set_name]["alpha"] <= hi
    strata = {g["group"] for g in report["groups"]}
    assert {"stratum=ambiguous", "stratum=harmful", "stratum=safe", "pooled (mixture)"} <= strata
    assert {a["annotator"] for a in pooled["binary"]["annotators"]} == {"A1", "A2", "A3"}
    table = run(runner, prefix, "agreement", "--round", "r1", "--boot", "200").output
    assert "pooled (mixture)" in table and "Per annotator" in table

    first = json.loads(
        run(runner, prefix, "adjudicate", "--round", "r1", "--expert", "E1", "--to-file", "--json").output
    )
    assert first["counts"].get("escalated", 0) > 0 and first["counts"]["resolved"] > 0
    # A3 never voted on one item: it waits for A3 (counted and said), and goes nowhere.
    assert first["counts"]["waiting"] == 1 and first["waiting_for"] == {"A3": 1} and first["waited"]
    assert first["sent_to_expert"] >= first["counts"]["escalated"]
    expert_tasks = json.loads((ws / "tasks" / "r1" / "E1-adjudication.json").read_text())
    votes_text = next(t["data"]["prior_votes"] for t in expert_tasks if t["data"]["prior_votes"] != BLIND_CHECK_TEXT)
    assert "A1:" in votes_text and "m1" not in json.dumps(expert_tasks) and "judge" not in json.dumps(expert_tasks)
    # re-running without new information adds nothing
    again = json.loads(
        run(runner, prefix, "adjudicate", "--round", "r1", "--expert", "E1", "--to-file", "--json").output
    )
    assert again["new_records"] == 0 and again["sent_to_expert"] == 0

    # the expert answers (truth), comes back through pull, and the next adjudicate settles it
    path = tmp_path / "export-E1.json"
    path.write_text(json.dumps(_export_for(expert_tasks, lambda task_id: truth[item_of[task_id]], 9000)))
    run(runner, prefix, "pull", "--round", "r1", "--from-file", str(path), "--annotator", "E1")
    # The round is over and A3 will not vote: the lead decides the waiting item on the votes in.
    final = json.loads(
        run(
            runner, prefix, "adjudicate", "--round", "r1", "--expert", "E1", "--to-file", "--json", "--escalate-early"
        ).output
    )
    assert final["decided_early"] == 1 and final["waiting"] == 0
    assert final["counts"].get("escalated", 0) == 0
    assert final["methods"]["expert"] == first["counts"]["escalated"]
    assert final["check"]["n_checked"] >= 1 and final["check"]["agreement"] == 1.0

    from annotate.config import open_workspace
    from annotate.db.store import open_store

    store = open_store(open_workspace(prefix[1], prefix[3]).db_url)
    try:
        rid = int(store.get_round("r1")["id"])
        latest = store.final_labels(rid)
        history = store.final_labels(rid, history=True)
        items = store.round_items(rid)
    finally:
        store.close()
    assert len(latest) == len(items) and (latest.status == "resolved").all()
    merged = latest.merge(items[["round_item_id", "ext_id"]], on="round_item_id")
    assert all(truth[e] == lab for e, lab in zip(merged.ext_id, merged.label, strict=True))
    assert len(history) > len(latest)  # escalated rows were kept, the expert's rows appended
    expert_rows = latest.loc[latest.method == "expert"]
    assert (expert_rows.adjudicator == "E1").all() and expert_rows.reason.str.contains("escalated").all()
    assert all(set(json.loads(v)) <= {"A1", "A2", "A3"} for v in latest.votes)


def test_adjudicate_refuses_a_reviewer_as_expert(workspace, runner, tmp_path):
    _, prefix = workspace
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "r.jsonl", [generic_row(i, judge="j") for i in range(6)])))
    for email in ("a1@x.org", "a2@x.org"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    run(runner, prefix, "route", "--round", "r1", "--annotators", "A1,A2", "--to-file")
    result = run(runner, prefix, "adjudicate", "--round", "r1", "--expert", "A1", ok=False)
    assert result.exit_code != 0 and "expert" in result.stderr


def test_gold_items_give_annotator_accuracy(workspace, runner, tmp_path):
    ws, prefix = workspace
    rows = [generic_row(i, model="m", benchmark="b", judge="j", judge_label="ambiguous") for i in range(12)]
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "r.jsonl", rows)))
    for email in ("a1@x.org", "a2@x.org"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    run(runner, prefix, "route", "--round", "g", "--annotators", "A1,A2", "--to-file")
    tasks = {a: json.loads((ws / "tasks" / "g" / f"{a}.json").read_text()) for a in ("A1", "A2")}
    for j, a in enumerate(("A1", "A2")):
        # A1 always says harmful, A2 always safe
        path = tmp_path / f"e-{a}.json"
        path.write_text(
            json.dumps(_export_for(tasks[a], lambda e, a=a: "harmful" if a == "A1" else "safe", 100 * (j + 1)))
        )
        run(runner, prefix, "pull", "--round", "g", "--from-file", str(path), "--annotator", a)
    gold = tmp_path / "gold.csv"
    gold.write_text("model,benchmark,prompt_id,gold_label\n" + "".join(f"m,b,p{i},safe\n" for i in range(4)))
    assert "4 gold item(s)" in run(runner, prefix, "gold", "--round", "g", str(gold)).output
    report = json.loads(run(runner, prefix, "agreement", "--round", "g", "--json", "--boot", "50").output)
    pooled = next(g for g in report["groups"] if g["pooled"] and g["labels"] == "binary")
    acc = {a["annotator"]: (a["gold_n"], a["gold_accuracy"]) for a in pooled["annotators"]}
    assert acc == {"A1": (4, 0.0), "A2": (4, 1.0)}
    bad = tmp_path / "bad.csv"
    bad.write_text("model,benchmark,prompt_id,gold_label\nm,b,p1,maybe\nm,b,nope,safe\n")
    refused = run(runner, prefix, "gold", "--round", "g", str(bad), ok=False)
    assert refused.exit_code == 2 and ":2:" in refused.stderr and ":3:" in refused.stderr
