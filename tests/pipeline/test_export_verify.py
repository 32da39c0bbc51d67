"""Scores, exports, verify and the demo, on the real XSTest sample (offline path)."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from annotate.cli import cli
from annotate.pipeline.demo import ANNOTATORS, EXPERT, run_demo
from annotate.stats.scoring import TREATMENTS


@pytest.fixture(scope="module")
def demo_ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo") / "ws"
    lines: list[str] = []
    result = run_demo(root, offline=True, keep_server=False, echo=lines.append)
    return root, result, lines


def test_demo_offline_reproduces_the_published_labels(demo_ws):
    root, result, lines = demo_ws
    assert len(lines) == 10 and lines[0].startswith("[1/10]") and lines[-1].startswith("[10/10]")
    assert result.alpha_pipeline == pytest.approx(result.alpha_direct, abs=1e-12)
    assert result.final_total > 200 and result.final_matches == result.final_total
    assert result.verified


def test_demo_command_offline(tmp_path, runner):
    result = runner.invoke(cli, ["demo", "--offline", "--dir", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    assert "agreement check: equal" in result.output and "verify: OK" in result.output
    again = runner.invoke(cli, ["demo", "--offline", "--dir", str(tmp_path / "d")])
    assert again.exit_code == 1 and "fresh folder" in again.stderr


def test_export_layout_is_the_documented_contract(demo_ws):
    root, result, _ = demo_ws
    path = result.export
    names = {p.name for p in path.iterdir()}
    assert names == {
        "scores.csv",
        "scores.json",
        "ranking.csv",
        "flips.csv",
        "p_safer.csv",
        "labels.csv",
        "agreement.json",
        "design.json",
        "report.html",
        "manifest.json",
    }
    with open(path / "scores.csv", newline="") as fh:
        scores = list(csv.DictReader(fh))
    for col in (
        "model",
        "benchmark",
        "treatment",
        "estimate",
        "ci_low",
        "ci_high",
        "rank",
        "rank_low",
        "rank_high",
        "n_responses",
        "n_reviewed",
        "flag",
    ):
        assert col in scores[0], col
    assert {r["treatment"] for r in scores} == set(TREATMENTS)
    overall = [r for r in scores if r["benchmark"] == "ALL"]
    assert len(overall) == 5 * 8 and {r["model"] for r in overall} == {
        "gpt4",
        "llama2new",
        "llama2orig",
        "mistralguard",
        "mistralinstruct",
    }
    assert all(r["rank_low"] for r in overall if r["treatment"] == "corrected")
    with open(path / "labels.csv", newline="") as fh:
        labels = list(csv.DictReader(fh))
    for col in (
        "model",
        "benchmark",
        "prompt_id",
        "epoch",
        "judge",
        "judge_verdict",
        "judge_label",
        "stratum",
        "inclusion_prob",
        "final_label",
        "final_method",
        "adjudicator",
        "reason",
        "A1",
        "A2",
    ):
        assert col in labels[0], col
    assert len(labels) == result.final_total
    assert {r["final_method"] for r in labels} <= {"majority", "expert"}
    agreement = json.loads((path / "agreement.json").read_text())
    for group in agreement:
        for key in (
            "group",
            "labels",
            "alpha",
            "alpha_ci",
            "ac1",
            "fleiss_kappa",
            "percent_agreement",
            "n_units",
            "n_annotators",
            "annotators",
        ):
            assert key in group, key
        assert group["labels"] in ("3-way", "binary") and len(group["alpha_ci"]) == 2
    design = json.loads((path / "design.json").read_text())
    strata = design["rounds"][0]["strata"]
    assert {"model", "benchmark", "stratum", "population", "sample"} <= set(strata[0])
    assert design["rounds"][0]["seed"] == 2024 and design["label_config_sha256"]
    manifest = json.loads((path / "manifest.json").read_text())
    for name, sha in manifest["files"].items():
        assert hashlib.sha256((path / name).read_bytes()).hexdigest() == sha
    assert len(manifest["sources"]) == 5 and all(len(s["sha256"]) == 64 for s in manifest["sources"])
    assert manifest["tool_version"] and manifest["store_schema_version"] and manifest["created_at"]


def test_no_personal_data_in_exports(demo_ws):
    root, result, _ = demo_ws
    for f in result.export.iterdir():
        text = f.read_text(encoding="utf-8", errors="replace")
        for email in (*ANNOTATORS, EXPERT):
            assert email not in text, (f.name, email)
        assert not re.search(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+\.[A-Za-z0-9.-]+", text), f"an e-mail address in {f.name}"


def test_exports_are_immutable_and_atomic(demo_ws, runner, monkeypatch):
    root, result, _ = demo_ws
    refused = runner.invoke(cli, ["-w", str(root), "export", result.export.name])
    assert refused.exit_code == 1 and "immutable" in refused.stderr
    import annotate.report as report

    def boom(data):
        raise RuntimeError("interrupted while writing the report")

    monkeypatch.setattr(report, "render_report", boom)
    with pytest.raises(RuntimeError):
        runner.invoke(cli, ["-w", str(root), "export", "half-written"], catch_exceptions=False)
    assert not (root / "exports" / "half-written").exists()
    assert not [p for p in (root / "exports").iterdir() if p.name.startswith(".")]


def _tampered_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _rehash(path: Path, name: str) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["files"][name] = hashlib.sha256((path / name).read_bytes()).hexdigest()
    (path / "manifest.json").write_text(json.dumps(manifest))


def test_verify_catches_every_kind_of_change(demo_ws, runner, tmp_path):
    _, result, _ = demo_ws
    ok = runner.invoke(cli, ["verify", str(result.export)])
    assert ok.exit_code == 0 and ok.output.startswith("OK")

    changed = _tampered_copy(result.export, tmp_path / "changed")
    data = bytearray((changed / "report.html").read_bytes())
    data[100] ^= 1
    (changed / "report.html").write_bytes(bytes(data))
    out = runner.invoke(cli, ["verify", str(changed)])
    assert out.exit_code == 1 and "changed: report.html" in out.stderr

    removed = _tampered_copy(result.export, tmp_path / "removed")
    (removed / "ranking.csv").unlink()
    out = runner.invoke(cli, ["verify", str(removed)])
    assert out.exit_code == 1 and "missing file: ranking.csv" in out.stderr

    added = _tampered_copy(result.export, tmp_path / "added")
    (added / "notes.txt").write_text("hello")
    out = runner.invoke(cli, ["verify", str(added)])
    assert out.exit_code == 1 and "extra file not in the manifest: notes.txt" in out.stderr

    # A tampered score whose hash was "fixed" in the manifest: only re-deriving catches it.
    tampered = _tampered_copy(result.export, tmp_path / "tampered")
    rows = list(csv.DictReader(open(tampered / "scores.csv", newline="")))
    target = next(r for r in rows if r["treatment"] == "corrected" and r["benchmark"] == "ALL")
    target["estimate"] = str(float(target["estimate"]) + 0.01)
    with open(tampered / "scores.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    _rehash(tampered, "scores.csv")
    out = runner.invoke(cli, ["verify", str(tampered)])
    assert out.exit_code == 1 and "estimate" in out.stderr and target["model"] in out.stderr

    # A changed label (hash fixed too): the re-derived scores no longer match.
    relabelled = _tampered_copy(result.export, tmp_path / "relabelled")
    rows = list(csv.DictReader(open(relabelled / "labels.csv", newline="")))
    flipped = next(r for r in rows if r["final_label"] == "safe" and r["judge_label"] == "safe")
    flipped["final_label"] = "harmful"
    with open(relabelled / "labels.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    _rehash(relabelled, "labels.csv")
    out = runner.invoke(cli, ["verify", str(relabelled)])
    assert out.exit_code == 1 and flipped["model"] in out.stderr


def test_score_is_deterministic_and_complete(demo_ws, runner):
    root, _, _ = demo_ws
    a = json.loads(runner.invoke(cli, ["-w", str(root), "score", "--json", "--seed", "3", "--draws", "1000"]).output)
    b = json.loads(runner.invoke(cli, ["-w", str(root), "score", "--json", "--seed", "3", "--draws", "1000"]).output)
    assert a == b
    overall = [r for r in a["scores"] if r["benchmark"] == "ALL" and r["treatment"] == "corrected"]
    assert len(overall) == 5
    for r in overall:
        assert 0 <= r["ci_low"] <= r["ci_high"] <= 1 and 0 <= r["estimate"] <= 1
    treatments = {r["treatment"] for r in a["ranking"]}
    assert treatments >= set(TREATMENTS) - {"corrected"}
    table = runner.invoke(cli, ["-w", str(root), "score"]).output
    assert "corrected" in table and "tau-b" in table
    general = json.loads(
        runner.invoke(cli, ["-w", str(root), "score", "--json", "--estimand", "general", "--draws", "1000"]).output
    )
    assert general["settings"]["estimand"] == "general"


def test_plan_gives_neyman_sizes(demo_ws, runner):
    root, _, _ = demo_ws
    out = json.loads(runner.invoke(cli, ["-w", str(root), "plan", "--target-se", "0.03", "--json"]).output)
    assert out and all(r["n"] >= min(10, r["population"]) for r in out)
    bad = runner.invoke(cli, ["-w", str(root), "plan", "--target-se", "0"])
    assert bad.exit_code == 2


def test_diagnose_on_xstest_and_its_export_section(demo_ws, runner):
    root, _, _ = demo_ws
    out = runner.invoke(cli, ["-w", str(root), "diagnose", "--json"])
    assert out.exit_code == 0, out.output
    res = json.loads(out.output)
    assert res["judge"] == "gpt4" and res["n_events"] == 40
    assert {r["correlate"] for r in res["study"]} == {
        "length",
        "density",
        "sophistication",
        "perplexity",
        "coherence",
        "similarity",
    }
    assert all(r["holds"] in ("holds", "reversed", "no effect", "not estimable", "not in model") for r in res["study"])
    assert 0.5 < res["auc_features"] <= 1
    text = runner.invoke(cli, ["-w", str(root), "diagnose"]).output
    assert "The study's correlates here" in text
    exported = runner.invoke(cli, ["-w", str(root), "export", "with-diagnostics", "--draws", "500"])
    assert exported.exit_code == 0, exported.output
    path = root / "exports" / "with-diagnostics"
    assert json.loads((path / "diagnostics.json").read_text())["judge"] == "gpt4"
    assert "Ambiguity diagnostics" in (path / "report.html").read_text()
    assert runner.invoke(cli, ["verify", str(path)]).exit_code == 0


def test_prioritize_changes_the_order_not_the_selection(demo_ws, runner):
    root, _, _ = demo_ws
    base = [
        "-w",
        str(root),
        "route",
        "--annotators",
        "A1,A2",
        "--clear-per-cell",
        "10",
        "--seed",
        "9",
        "--to-file",
        "--json",
    ]
    plain = json.loads(runner.invoke(cli, [*base, "--round", "plain"]).output)
    prio = json.loads(runner.invoke(cli, [*base, "--round", "prio", "--prioritize"]).output)
    assert prio["prioritized"] and plain["strata"] == prio["strata"] and plain["selected"] == prio["selected"]
    from annotate.config import open_workspace
    from annotate.db.store import open_store
    from annotate.pipeline.diagnose import ambiguity_priority

    store = open_store(open_workspace(str(root), None).db_url)
    try:
        items = {n: store.round_items(int(store.get_round(n)["id"])) for n in ("plain", "prio")}
        assert sorted(items["plain"].response_id) == sorted(items["prio"].response_id)
        assert (
            items["plain"].set_index("response_id").inclusion_prob.sort_index()
            == items["prio"].set_index("response_id").inclusion_prob.sort_index()
        ).all()
        p = ambiguity_priority(store, "gpt4", items["prio"].response_id.tolist(), seed=9)
        project = store.ls_projects(int(store.get_round("prio")["id"])).set_index("pseudonym").loc["A1"]
        tasks = (
            store.ls_tasks(int(project["id"]))
            .merge(items["prio"][["round_item_id", "response_id"]], on="round_item_id")
            .sort_values("position")
        )
    finally:
        store.close()
    probs = [p[int(r)] for r in tasks.response_id]
    assert probs == sorted(probs, reverse=True)
    assert probs[0] > probs[-1]
