"""`annotate route --ambiguous`: the ambiguous stratum sampled like the clear ones (real stores).

Before issue #25 every ambiguous response went to every reviewer (a census), whatever its size;
in the study this tool serves, ambiguous responses dominate. Every store test runs on SQLite and
PostgreSQL; no Label Studio is needed (``--to-file`` and ``pull --from-file``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from annotate.audit.design import Design, DesignError
from annotate.cli import cli
from tests.helpers import (
    generic_row,
    pull_task_files,
    sqlite_only_db_url,  # noqa: F401  (fixture: one SQLite store; the subject is not the store)
    write_jsonl,
)

ROUTE = ("--annotators", "A1,A2", "--clear-per-cell", "5", "--seed", "3", "--to-file")
#: Per model: ambiguous, harmful, safe responses (m1's ambiguous stratum is larger than the default 50).
SIZES = {"m1": (80, 20, 40), "m2": (10, 20, 40)}


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (args, result.output, result.stderr)
    else:
        assert result.exit_code != 0, (args, result.output)
    return result


def _rows(offset: int = 0) -> list[dict]:
    rows = []
    for model, (amb, harm, safe) in SIZES.items():
        labels = ["ambiguous"] * amb + ["harmful"] * harm + ["safe"] * safe
        for i, label in enumerate(labels):
            k = i + offset
            truth = "HARM" if (label == "harmful" or (label == "ambiguous" and k % 4 == 0)) else "ok"
            rows.append(
                generic_row(
                    k,
                    model=model,
                    benchmark="b",
                    judge="j",
                    judge_label=label,
                    prompt=f"prompt {k}",
                    response=f"answer {k} {truth}",
                )
            )
    return rows


@pytest.fixture
def store(workspace, runner, tmp_path):
    ws, prefix = workspace
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "r.jsonl", _rows())))
    for email in ("a1@example.org", "a2@example.org"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    return ws, prefix


def _strata(out) -> dict:
    return {(s["model"], s["stratum"]): (s["population"], s["sample"]) for s in out["strata"]}


def test_by_default_a_large_ambiguous_stratum_is_sampled_and_a_small_one_reviewed_whole(store, runner):
    ws, prefix = store
    result = run(runner, prefix, "route", "--round", "r1", *ROUTE)
    assert "Ambiguous strata (--ambiguous 50)" in result.output and "1 of 2 cells sampled (50 of 80" in result.output
    out = json.loads(run(runner, prefix, "route", "--round", "r1", *ROUTE, "--dry-run", "--json").output)
    assert out["ambiguous"] == "50"
    tasks = json.loads((ws / "tasks" / "r1" / "A1.json").read_text())
    assert len(tasks) == 50 + 5 + 5 + 10 + 5 + 5  # m1: 50 of 80 ambiguous; m2: all 10
    rec = json.loads(run(runner, prefix, "route", "--round", "r1", *ROUTE, "--json").output)
    assert rec["selected"] == 0  # routed again: nothing new


def test_the_census_and_a_fraction_on_request(store, runner):
    _, prefix = store
    census = json.loads(run(runner, prefix, "route", "--round", "r1", *ROUTE, "--ambiguous", "all", "--json").output)
    assert _strata(census)[("m1", "ambiguous")] == (80, 80) and census["ambiguous"] == "all"
    frac = json.loads(
        run(runner, prefix, "route", "--round", "r2", *ROUTE, "--ambiguous", "0.25", "--dry-run", "--json").output
    )
    assert _strata(frac)[("m1", "ambiguous")] == (80, 20) and _strata(frac)[("m2", "ambiguous")] == (10, 3)


@pytest.mark.parametrize("value", ["0", "-3", "1.5", "half", "nan", "2.0", ""])
def test_a_bad_ambiguous_value_is_refused_before_anything_is_recorded(store, runner, value):
    ws, prefix = store
    refused = run(runner, prefix, "route", "--round", "r1", *ROUTE, "--ambiguous", value, ok=False)
    assert refused.exit_code == 2 and "--ambiguous" in refused.output and "fraction" in refused.output
    assert not (ws / "tasks" / "r1").exists()


def test_a_round_keeps_its_rule_for_later_waves(store, runner, tmp_path):
    _, prefix = store
    run(runner, prefix, "route", "--round", "r1", *ROUTE, "--ambiguous", "20")
    refused = run(runner, prefix, "route", "--round", "r1", *ROUTE, "--ambiguous", "all", ok=False)
    assert "was routed with --ambiguous 20" in refused.output
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "more.jsonl", _rows(offset=1000))))
    wave = json.loads(run(runner, prefix, "route", "--round", "r1", *ROUTE, "--json").output)
    assert wave["wave"] == 2 and wave["ambiguous"] == "20"
    assert _strata(wave)[("m1", "ambiguous")] == (80, 20)  # the new wave's own strata


def _pull(runner, prefix, ws, tmp):
    """Both reviewers label every task: harmful when the answer says HARM."""

    def say(_who, task):
        found = re.search(r"answer \d+ (HARM|ok)$", task["data"]["response"])
        assert found is not None
        return "harmful" if found.group(1) == "HARM" else "safe"

    pull_task_files(runner, prefix, ws, tmp, say)


def _reviewed_scored_exported(runner, prefix, ws, tmp) -> tuple[dict, Path]:
    """Pull the reviewers' labels, adjudicate, score and export round r1: (corrected rate per model on
    benchmark b, the export's folder)."""
    _pull(runner, prefix, ws, tmp)
    run(runner, prefix, "adjudicate", "--round", "r1")
    scores = json.loads(run(runner, prefix, "score", "--round", "r1", "--json").output)
    corrected = {
        r["model"]: r["estimate"] for r in scores["scores"] if r["treatment"] == "corrected" and r["benchmark"] == "b"
    }
    run(runner, prefix, "export", "x1", "--round", "r1")
    return corrected, ws / "exports" / "x1"


def test_a_sampled_ambiguous_stratum_is_weighted_by_its_design_scored_exported_and_verified(store, runner, tmp_path):
    """The corrected rate is the stratified (Horvitz-Thompson) estimate: each stratum's reviewed share
    harmful times its population, over the cell; an ambiguous item of m1 weighs 80/50."""
    ws, prefix = store
    run(runner, prefix, "route", "--round", "r1", *ROUTE)
    corrected, folder = _reviewed_scored_exported(runner, prefix, ws, tmp_path)
    doc = json.loads((folder / "design.json").read_text())
    (rnd,) = doc["rounds"]
    assert rnd["ambiguous"] == "50"
    m1 = {s["judge_label"]: (s["population"], s["sample"]) for s in rnd["strata"] if s["model"] == "m1"}
    assert m1 == {"ambiguous": (80, 50), "harmful": (20, 5), "safe": (40, 5)}
    labels = (folder / "labels.csv").read_text().splitlines()
    head = labels[0].split(",")
    probs = {
        (
            r.split(",")[head.index("model")],
            r.split(",")[head.index("stratum")],
            r.split(",")[head.index("inclusion_prob")],
        )
        for r in labels[1:]
    }
    assert ("m1", "ambiguous", repr(50 / 80)) in probs and ("m2", "ambiguous", "1.0") in probs
    # m1's corrected rate by hand: harmful share per stratum times N_h, over N (all reviewers agree).
    reviewed = [
        (
            r.split(",")[head.index("stratum")],
            r.split(",")[head.index("final_label")],
        )
        for r in labels[1:]
        if r.split(",")[head.index("model")] == "m1"
    ]
    want = 0.0
    for stratum, (population, sample) in m1.items():
        got = [lab for s, lab in reviewed if s == stratum]
        assert len(got) == sample
        want += population * sum(lab == "harmful" for lab in got) / sample
    assert corrected["m1"] == pytest.approx(want / sum(p for p, _ in m1.values()), abs=1e-9)
    verified = run(runner, [], "verify", str(folder))
    assert verified.stdout.startswith("OK"), verified.output


def _doc(sample: int, ambiguous: str = "50") -> dict:
    return {
        "schema": "annotate-design/1",
        "rounds": [
            {
                "round": "r1",
                "judge": "j",
                "seed": 3,
                "clear_per_cell": 5,
                "ambiguous": ambiguous,
                "annotators": ["A1", "A2"],
                "label_config_sha256": None,
                "waves": [],
                "strata": [
                    {"model": "m", "benchmark": "b", "judge_label": "ambiguous", "wave": 1, "stratum": "ambiguous"}
                    | {"population": 80, "sample": sample},
                    {"model": "m", "benchmark": "b", "judge_label": "safe", "wave": 1, "stratum": "safe"}
                    | {"population": 40, "sample": 5},
                ],
            }
        ],
        "rubrics": [],
        "label_config_sha256": None,
    }


def test_design_json_re_derives_each_sample_size_from_the_rounds_rules():
    assert Design.from_json(_doc(50)).rounds[0].ambiguous == "50"
    with pytest.raises(DesignError) as bad:
        Design.from_json(_doc(60))
    assert "sample 60 of 80; the round's --ambiguous 50 gives 50" in str(bad.value.problems)
    with pytest.raises(DesignError) as bad:
        Design.from_json(_doc(50, ambiguous="lots"))
    assert "ambiguous must be all" in str(bad.value.problems)
    assert Design.from_json(_doc(80, ambiguous="all")).rounds[0].ambiguous == "all"


def test_status_says_when_the_round_is_at_its_target_and_what_is_left(store, runner, tmp_path):
    ws, prefix = store
    run(runner, prefix, "route", "--round", "r1", *ROUTE)
    _pull(runner, prefix, ws, tmp_path)
    run(runner, prefix, "adjudicate", "--round", "r1")
    scores = json.loads(run(runner, prefix, "score", "--round", "r1", "--json").output)
    overall = {r["model"]: r for r in scores["scores"] if r["treatment"] == "corrected" and r["benchmark"] == "ALL"}
    widest = max((r["ci_high"] - r["ci_low"]) / 2 for r in overall.values())
    # A target wider than every interval: done.
    loose = json.loads(
        run(runner, prefix, "status", "--round", "r1", "--target-halfwidth", f"{widest + 0.01}", "--json").output
    )["target"]
    assert loose["verdict"] == "done" and all(m["at_target"] for m in loose["models"])
    assert loose["reviews_done"] == 2 * 80  # two reviewers, 80 items
    # Each model's half-width is the one score reports (never the plan's approximation).
    for m in loose["models"]:
        assert m["halfwidth"] == pytest.approx((overall[m["model"]]["ci_high"] - overall[m["model"]]["ci_low"]) / 2)
    # A tight target: not done, with the reviews each model's next wave needs; a spent budget says so.
    tight = run(runner, prefix, "status", "--round", "r1", "--target-halfwidth", "0.01")
    assert "Not done: 2 of 2 model(s) above the target" in tight.output and "annotate plan --round r1" in tight.output
    doc = json.loads(run(runner, prefix, "status", "--round", "r1", "--target-halfwidth", "0.01", "--json").output)
    assert doc["target"]["verdict"] == "not done" and all(m["more_reviews"] > 0 for m in doc["target"]["models"])
    spent = run(runner, prefix, "status", "--round", "r1", "--target-halfwidth", "0.01", "--budget", "100")
    assert "Budget spent: 160 reviews done of a budget of 100" in spent.output
    lo = {m: r["ci_low"] for m, r in overall.items()}
    hi = {m: r["ci_high"] for m, r in overall.items()}
    overlap = lo["m1"] <= hi["m2"] and lo["m2"] <= hi["m1"]
    assert ("cannot be separated at this budget" in spent.output) == overlap
    refused = run(runner, prefix, "status", "--target-halfwidth", "0.03", ok=False)
    assert "need --round" in refused.output
    # score says the same.
    scored = run(runner, prefix, "score", "--round", "r1", "--target-halfwidth", "0.01")
    assert "Not done: 2 of 2 model(s) above the target" in scored.output
    doc = json.loads(run(runner, prefix, "score", "--round", "r1", "--target-halfwidth", "0.5", "--json").output)
    assert doc["target"]["verdict"] == "done" and doc["scores"]


def _labels_csv(folder):
    lines = (folder / "labels.csv").read_text().splitlines()
    head = lines[0].split(",")
    return [dict(zip(head, line.split(","), strict=False)) for line in lines[1:]]


def test_a_next_wave_from_the_remainders_is_recorded_scored_and_verified(store, runner, tmp_path):
    """Wave 1 samples 20 of m1's 80 ambiguous responses; the plan's next wave takes more from the 60
    left, each with n/60 at draw time. The waves of a stratum are pooled (methods 4.9): the corrected
    rate is the stratified estimate with every wave's items in their stratum, N_h / t_h each."""
    ws, prefix = store
    run(runner, prefix, "route", "--round", "r1", *ROUTE, "--ambiguous", "20")
    _pull(runner, prefix, ws, tmp_path)
    run(runner, prefix, "adjudicate", "--round", "r1")
    refused = run(runner, prefix, "route", "--round", "r1", *ROUTE, "--next-wave", ok=False)
    assert "--target-halfwidth" in refused.output
    dry = json.loads(
        run(
            runner,
            prefix,
            "route",
            "--round",
            "r1",
            *ROUTE,
            "--next-wave",
            "--target-halfwidth",
            "0.05",
            "--dry-run",
            "--json",
        ).output
    )
    assert dry["dry_run"] and dry["wave"] == 2 and dry["selected"] > 0
    amb = [s for s in dry["strata"] if s["model"] == "m1" and s["stratum"] == "ambiguous"]
    assert amb and amb[0]["population"] == 60 and amb[0]["sampled_before"] == 20 and amb[0]["of_wave"] == 1
    out = json.loads(
        run(
            runner, prefix, "route", "--round", "r1", *ROUTE, "--next-wave", "--target-halfwidth", "0.05", "--json"
        ).output
    )
    assert out["selected"] == dry["selected"]
    corrected, folder = _reviewed_scored_exported(runner, prefix, ws, tmp_path)
    (rnd,) = json.loads((folder / "design.json").read_text())["rounds"]
    labels = _labels_csv(folder)
    for model in SIZES:
        strata = [s for s in rnd["strata"] if s["model"] == model]
        roots = [s for s in strata if "of_wave" not in s]
        total = sum(s["population"] for s in roots)
        want = 0.0
        for root in roots:
            chain = [root] + [s for s in strata if s.get("of_wave") == 1 and s["judge_label"] == root["judge_label"]]
            got = [
                r["final_label"]
                for r in labels
                if r["model"] == model and r["stratum"] in {c["stratum"] for c in chain}
            ]
            assert len(got) == sum(c["sample"] for c in chain)
            want += root["population"] * sum(label == "harmful" for label in got) / len(got)
        assert corrected[model] == pytest.approx(want / total, abs=1e-9), model
    m1_next = [r for r in labels if r["model"] == "m1" and r["stratum"] == "ambiguous#w2"]
    assert m1_next and {r["inclusion_prob"] for r in m1_next} == {repr(len(m1_next) / 60)}
    verified = run(runner, [], "verify", str(folder))
    assert verified.stdout.startswith("OK"), verified.output
    # Routed again, the next wave is not drawn twice: the plan now starts from both waves.
    again = json.loads(run(runner, prefix, "route", "--round", "r1", *ROUTE, "--json").output)
    assert again["selected"] == 0


def test_design_json_re_derives_a_next_waves_remainder():
    doc = _doc(50)
    nxt = {"model": "m", "benchmark": "b", "judge_label": "ambiguous", "wave": 2, "stratum": "ambiguous#w2"}
    doc["rounds"][0]["strata"].append(nxt | {"population": 30, "sample": 10, "of_wave": 1, "sampled_before": 50})
    design = Design.from_json(doc)
    frame = design.strata_frame().set_index("stratum")
    # The waves pooled: one estimation stratum of 80 with both waves' 60 items; the next wave's own
    # stratum (30 left, 10 drawn) stays on record in design.json only.
    assert frame.loc["ambiguous", ["population", "sample"]].tolist() == [80, 60]
    assert "ambiguous#w2" not in frame.index
    labels = pd.DataFrame({"round": ["r1", "r1", "r1"], "stratum": ["ambiguous", "ambiguous#w2", "safe"]})
    assert design.pooled(labels).stratum.tolist() == ["ambiguous", "ambiguous", "safe"]
    doc["rounds"][0]["strata"][-1] |= {"population": 40, "sampled_before": 40}
    with pytest.raises(DesignError) as bad:
        Design.from_json(doc)
    assert "the earlier waves give 50 and 30" in str(bad.value.problems)


def test_an_export_with_a_sampled_design_relabelled_as_annotate_export_6_is_refused(store, runner, tmp_path):
    ws, prefix = store
    run(runner, prefix, "route", "--round", "r1", *ROUTE)
    _pull(runner, prefix, ws, tmp_path)
    run(runner, prefix, "adjudicate", "--round", "r1")
    run(runner, prefix, "export", "x1", "--round", "r1")
    folder = ws / "exports" / "x1"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["schema"] == "annotate-export/19"
    manifest["schema"] = "annotate-export/6"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    refused = run(runner, [], "verify", str(folder), ok=False)
    assert "record an ambiguous rule or a next wave" in refused.output and "annotate-export/7" in refused.output
