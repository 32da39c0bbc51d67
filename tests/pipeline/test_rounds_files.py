"""Routing and pulling in file mode (air-gapped): no server involved, real store."""

from __future__ import annotations

import json

import pytest

from annotate.cli import cli
from annotate.labelstudio.labelconfig import choices_result, parse_label_config
from annotate.stats.sampling import select_for_review
from tests.helpers import generic_row, write_jsonl


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr)
    return result


@pytest.fixture
def routed(workspace, runner, tmp_path):
    ws, prefix = workspace
    rows = []
    for m in ("m1", "m2"):
        for i in range(60):
            label = "ambiguous" if i < 6 else ("harmful" if i < 20 else "safe")
            rows.append(generic_row(i, model=m, benchmark="b", judge_label=label, judge="j"))
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "r.jsonl", rows)))
    for email in ("a1@example.org", "a2@example.org"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    out = json.loads(
        run(
            runner,
            prefix,
            "route",
            "--round",
            "r1",
            "--annotators",
            "A1,A2",
            "--clear-per-cell",
            "5",
            "--seed",
            "7",
            "--to-file",
            "--json",
        ).output
    )
    return ws, prefix, out


def test_design_is_recorded_and_blind(routed):
    ws, prefix, out = routed
    assert out["selected"] == 2 * (6 + 5 + 5)
    strata = {(s["model"], s["stratum"]): (s["population"], s["sample"]) for s in out["strata"]}
    assert strata[("m1", "ambiguous")] == (6, 6)
    assert strata[("m1", "harmful")] == (14, 5) and strata[("m1", "safe")] == (40, 5)
    a1 = json.loads((ws / "tasks" / "r1" / "A1.json").read_text())
    a2 = json.loads((ws / "tasks" / "r1" / "A2.json").read_text())
    assert len(a1) == len(a2) == 32
    texts1 = [(t["data"]["prompt"], t["data"]["response"]) for t in a1]
    texts2 = [(t["data"]["prompt"], t["data"]["response"]) for t in a2]
    assert sorted(texts1) == sorted(texts2) and texts1 != texts2  # the same tasks, in each one's own order
    # ...under ids of each project's own: nothing links A1's task to A2's
    assert not {t["data"]["ext_id"] for t in a1} & {t["data"]["ext_id"] for t in a2}
    text = json.dumps(a1)
    for leak in ("m1", "m2", "judge", "harmful", "ambiguous", "model", "benchmark", "predictions"):
        assert leak not in text.replace("response number", "").replace("prompt number", ""), leak
    for task in a1:
        assert set(task["data"]) == {"prompt", "response", "ext_id"} and set(task["meta"]) == {"ext_id"}


def test_routing_again_adds_nothing_and_new_responses_form_a_wave(routed, runner, tmp_path):
    ws, prefix, first = routed
    again = json.loads(
        run(
            runner,
            prefix,
            "route",
            "--round",
            "r1",
            "--annotators",
            "A1,A2",
            "--clear-per-cell",
            "5",
            "--seed",
            "7",
            "--to-file",
            "--json",
        ).output
    )
    assert again["wave"] is None and again["selected"] == 0
    assert again["annotators"]["A1"]["tasks"] == 32
    more = [generic_row(100 + i, model="m1", benchmark="b", judge_label="ambiguous", judge="j") for i in range(3)]
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "more.jsonl", more)))
    third = json.loads(
        run(
            runner,
            prefix,
            "route",
            "--round",
            "r1",
            "--annotators",
            "A1,A2",
            "--clear-per-cell",
            "5",
            "--seed",
            "7",
            "--to-file",
            "--json",
        ).output
    )
    assert third["wave"] == 2 and third["selected"] == 3
    assert len(json.loads((ws / "tasks" / "r1" / "A1.json").read_text())) == 35


def test_a_round_keeps_its_design(routed, runner):
    _, prefix, _ = routed
    result = run(
        runner,
        prefix,
        "route",
        "--round",
        "r1",
        "--annotators",
        "A1,A2",
        "--clear-per-cell",
        "9",
        "--seed",
        "7",
        "--to-file",
        ok=False,
    )
    assert result.exit_code == 2 and "keeps its design" in result.stderr


def test_same_seed_same_selection_any_order():
    import pandas as pd

    df = pd.DataFrame(
        {
            "response_id": range(200),
            "model": ["m"] * 200,
            "benchmark": ["b"] * 200,
            "prompt_id": [str(i) for i in range(200)],
            "epoch": 0,
            "judge": "j",
            "judge_label": ["safe"] * 150 + ["harmful"] * 40 + ["ambiguous"] * 10,
        }
    )
    a, _ = select_for_review(df, clear_per_cell=10, seed=3)
    b, _ = select_for_review(df.sample(frac=1, random_state=1), clear_per_cell=10, seed=3)
    c, _ = select_for_review(df, clear_per_cell=10, seed=4)
    assert sorted(a.response_id) == sorted(b.response_id)
    assert sorted(a.response_id) != sorted(c.response_id)
    assert a.groupby("stratum").inclusion_prob.first().to_dict() == {
        "ambiguous": 1.0,
        "harmful": 0.25,
        "safe": 10 / 150,
    }


A1_USER = 7  # A1's Label Studio user on the air-gapped server (pinned on the first pull)


def _export(tasks, annotations, user=A1_USER):
    """A Label Studio JSON export of routed tasks: every annotation says who made it, as Label Studio's does."""
    return [
        {
            "id": 100 + i,
            "data": t["data"],
            "meta": t["meta"],
            "annotations": [{"completed_by": user, **a} for a in annotations.get(i, [])],
        }
        for i, t in enumerate(tasks)
    ]


def test_pull_from_file_validates_quarantines_and_tracks_changes(routed, runner, tmp_path):
    ws, prefix, _ = routed
    tasks = json.loads((ws / "tasks" / "r1" / "A1.json").read_text())
    anns = {
        0: [{"id": 1, "result": choices_result("harmful", confidence=4, rationale="gives steps"), "lead_time": 20.0}],
        1: [{"id": 2, "result": choices_result("safe"), "lead_time": 10.0}],
        2: [{"id": 3, "result": [], "was_cancelled": True, "lead_time": 2.0}],  # a skip
        3: [
            {
                "id": 4,
                "result": [
                    {"from_name": "verdict", "to_name": "response", "type": "choices", "value": {"choices": ["nope"]}}
                ],
            }
        ],  # unknown choice
        4: [
            {
                "id": 5,
                "result": choices_result("safe")[:0]
                + [{"from_name": "confidence", "to_name": "response", "type": "rating", "value": {"rating": 3}}],
            }
        ],  # no verdict
    }
    export = _export(tasks, anns) + [
        {
            "id": 999,
            "data": {"prompt": "p", "response": "r", "ext_id": "not-ours"},
            "annotations": [{"id": 77, "result": choices_result("safe"), "completed_by": A1_USER}],
        }
    ]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    first = json.loads(
        run(runner, prefix, "pull", "--round", "r1", "--from-file", str(path), "--annotator", "A1", "--json").output
    )["annotators"]["A1"]
    assert (first["new"], first["skips"], first["quarantined"]) == (3, 1, 3)
    again = json.loads(
        run(runner, prefix, "pull", "--round", "r1", "--from-file", str(path), "--annotator", "A1", "--json").output
    )["annotators"]["A1"]
    assert (again["new"], again["updated"], again["deleted"], again["quarantined"]) == (0, 0, 0, 0)

    # edit one, delete one: history is kept, the deletion is marked
    anns[0] = [{"id": 1, "result": choices_result("safe"), "lead_time": 25.0}]
    del anns[1]
    path.write_text(json.dumps(_export(tasks, anns)))
    third = json.loads(
        run(runner, prefix, "pull", "--round", "r1", "--from-file", str(path), "--annotator", "A1", "--json").output
    )["annotators"]["A1"]
    assert (third["updated"], third["deleted"]) == (1, 1)

    from annotate.config import open_workspace
    from annotate.db.store import open_store

    store = open_store(open_workspace(prefix[1], prefix[3]).db_url)
    try:
        ann = store.annotations(include_inactive=True)
        hist = store.annotation_history()
        quarantine = store.quarantined()
    finally:
        store.close()
    current = ann.set_index("ls_annotation_id")
    assert current.loc[1, "verdict"] == "safe" and not current.loc[1, "deleted"]
    assert current.loc[2, "deleted"]
    assert bool(current.loc[3, "skipped"]) and current.loc[3, "verdict"] != current.loc[3, "verdict"]  # NaN: no label
    assert sorted(hist.change) == ["deleted", "updated"] and "harmful" in set(hist.verdict)
    reasons = " | ".join(quarantine.reason)
    assert "unknown choice" in reasons and "required 'verdict' is missing" in reasons and "not a task" in reasons

    status = json.loads(run(runner, prefix, "status", "--round", "r1", "--json").output)["progress"]
    a1 = [r for r in status if r["annotator"] == "A1"]
    assert sum(r["done"] for r in a1) == 1 and sum(r["skipped"] for r in a1) == 1
    assert sum(r["tasks"] for r in a1) == 32


def test_pull_from_file_needs_the_annotator(routed, runner, tmp_path):
    _, prefix, _ = routed
    path = tmp_path / "e.json"
    path.write_text("[]")
    result = run(runner, prefix, "pull", "--round", "r1", "--from-file", str(path), ok=False)
    assert result.exit_code == 2 and "--annotator" in result.stderr
    path.write_text('{"not": "a list"}')
    result = run(runner, prefix, "pull", "--round", "r1", "--from-file", str(path), "--annotator", "A1", ok=False)
    assert result.exit_code == 2 and "not a Label Studio JSON export" in result.stderr


def test_label_config_problems_are_named():
    from annotate.errors import InputError

    with pytest.raises(InputError, match="not well-formed"):
        parse_label_config("<View><Text name='p' value='$prompt'></View>")
    with pytest.raises(InputError, match="verdict"):
        parse_label_config("<View><Text name='p' value='$prompt'/><Text name='r' value='$response'/></View>")
    with pytest.raises(InputError, match="toName"):
        parse_label_config(
            "<View><Text name='p' value='$prompt'/><Text name='r' value='$response'/>"
            "<Choices name='verdict' toName='nope' required='true'><Choice value='harmful'/>"
            "<Choice value='safe'/><Choice value='unsure'/></Choices></View>"
        )
    with pytest.raises(InputError, match="HTML"):
        parse_label_config(
            "<View><Text name='p' value='$prompt'/><HyperText name='r' value='$response'/>"
            "<Choices name='verdict' toName='r' required='true'><Choice value='harmful'/>"
            "<Choice value='safe'/><Choice value='unsure'/></Choices></View>"
        )
