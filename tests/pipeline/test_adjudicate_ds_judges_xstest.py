"""`annotate adjudicate --ds-with-judges` end to end on the bundled XSTest data, through the CLI.

The round is routed by the GPT-4 judge; XSTest's string-match judge (``*_streval.csv``) labelled
the same responses. The reviewers' verdicts are XSTest's two real human annotations and the
expert's its final label, replayed through Label Studio export files (as ``annotate demo
--offline`` does; the fixture pattern of ``tests/pipeline/test_score_ppi.py``). Dawid-Skene then
has four raters: A1, A2, gpt4 (the routing judge) and strmatch.
"""

from __future__ import annotations

import json

import pytest

from tests.xstest_rounds import replay, run, two_judge_workspace

ROUND = "r1"


def strict_json(text: str) -> dict:
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))


@pytest.fixture(scope="module")
def xstest_ws(tmp_path_factory):
    """Both judges ingested; a round routed on GPT-4, reviewed, adjudicated with the option; the expert replayed."""
    from click.testing import CliRunner

    runner = CliRunner()
    ws = tmp_path_factory.mktemp("dsj") / "ws"
    prefix = two_judge_workspace(runner, ws)
    run(
        runner,
        prefix,
        *("route", "--round", ROUND, "--annotators", "A1,A2", "--clear-per-cell", "25", "--seed", "2024"),
        *("--judge", "gpt4", "--to-file"),
    )
    replay(ws, ROUND, {"A1": "annotation_1", "A2": "annotation_2"})
    first = strict_json(
        run(
            runner, prefix, "adjudicate", "--round", ROUND, "--expert", "E1", "--to-file", "--ds-with-judges", "--json"
        ).output
    )
    replay(ws, ROUND, {"E1": "final_label"}, experts_only=True)
    return ws, prefix, first


def test_judges_join_the_reviewers_as_raters(xstest_ws, runner):
    _ws, prefix, first = xstest_ws
    out = run(runner, prefix, "adjudicate", "--round", ROUND, "--expert", "E1", "--to-file", "--ds-with-judges")
    doc = strict_json(
        run(
            runner, prefix, "adjudicate", "--round", ROUND, "--expert", "E1", "--to-file", "--ds-with-judges", "--json"
        ).output
    )
    d = doc["ds_with_judges"]
    assert [(r["rater"], r["kind"], r["routing"]) for r in d["raters"]] == [
        ("A1", "reviewer", False),
        ("A2", "reviewer", False),
        ("gpt4", "judge", True),
        ("strmatch", "judge", False),
    ]
    assert (d["n_reviewers"], d["n_judges"], d["routing_judge"]) == (2, 2, "gpt4")
    # Every reviewed item gets a diagnostic label; the final labels are those of record.
    assert d["n_items"] == len(d["items"]) == sum(doc["counts"].values())
    final = {i["ext_id"]: i["final_label"] for i in d["items"]}
    assert sum(v is not None for v in final.values()) == doc["counts"]["resolved"]
    # GPT-4's ambiguous stratum is a census: every item of it is a missing rating of GPT-4.
    gpt4 = d["raters"][2]
    census = sum(1 for i in d["items"] if i["stratum"] == "ambiguous")
    assert gpt4["n_missing"] == census > 0
    assert gpt4["n_harmful"] + gpt4["n_safe"] + gpt4["n_missing"] + gpt4["n_unrated"] == d["n_items"]
    strmatch = d["raters"][3]
    assert strmatch["n_unrated"] == 0  # the string-match judge labelled every response
    # The reviewers are reliable raters of XSTest; every Se / Sp is a probability.
    for r in d["raters"]:
        assert 0 < r["sensitivity"] < 1 and 0 < r["specificity"] < 1, r
    assert d["raters"][0]["specificity"] > 0.9 and d["raters"][1]["specificity"] > 0.9
    # The counts add up, by direction.
    for c in (d["vs_final"], d["vs_human_ds"], d["human_ds_vs_final"]):
        assert c["n_both"] == c["agree"] + c["harmful_vs_safe"] + c["safe_vs_harmful"]
        assert c["n_items"] == c["n_both"] + sum(c["only_diagnostic"].values()) + c["only_record"] + c["neither"]
    assert d["vs_final"]["n_items"] == d["n_items"]
    assert d["vs_final"]["agree"] >= 0.9 * d["vs_final"]["n_both"]
    # Both caveats: the routing judge, and two reviewers.
    caveats = " ".join(d["caveats"])
    assert "gpt4 routed this round" in caveats and "not an independent rater" in caveats
    assert "4 raters (2 reviewer(s), 2 judge(s)) on 289 item(s)" in caveats
    assert "2 reviewer(s) (its escalation rule needs 3)" in caveats and "weakly identified" in caveats
    assert "`annotate judges`" in caveats and "unweighted" in caveats
    # The text says the same, one line per rater.
    text = out.output
    assert (
        "Dawid-Skene with judges as raters (DS+judges; a diagnostic: the labels of record above are unchanged)" in text
    )
    for name in ("A1", "A2", "gpt4", "strmatch"):
        assert any(line.split()[:1] == [name] for line in text.splitlines()), name
    assert "judge (routing)" in text and "against the final labels:" in text
    assert "against the reviewers-only DS labels:" in text
    assert "Caveat: gpt4 routed this round" in text
    # The first run (before the expert's labels came back) reported the items still escalated.
    assert first["ds_with_judges"]["vs_final"]["only_diagnostic"] != {"harmful": 0, "safe": 0}


def test_the_option_changes_no_decision(xstest_ws, runner):
    """Re-adjudicating with and without the option adds no record and reports the same decisions."""
    _ws, prefix, _first = xstest_ws
    args = ("adjudicate", "--round", ROUND, "--expert", "E1", "--to-file", "--json")
    plain = strict_json(run(runner, prefix, *args).output)
    with_judges = strict_json(run(runner, prefix, *args, "--ds-with-judges").output)
    assert "ds_with_judges" not in plain
    del with_judges["ds_with_judges"]
    assert plain == with_judges
    assert plain["new_records"] == 0
