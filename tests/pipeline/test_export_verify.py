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
from annotate.pipeline.demo import ANNOTATORS, EXPERT, ROUND, run_demo
from annotate.stats.scoring import TREATMENTS


@pytest.fixture(scope="module")
def demo_ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo") / "ws"
    lines: list[str] = []
    result = run_demo(root, offline=True, keep_server=False, echo=lines.append)
    return root, result, lines


def test_demo_offline_reproduces_the_published_labels(demo_ws):
    root, result, lines = demo_ws
    assert len(lines) == 11 and lines[0].startswith("[1/11]") and lines[-1].startswith("[11/11]")
    # one line of the judge audit: both judges with their balanced accuracy and interval
    assert lines[8].startswith("[9/11] judge audit with no new review (2250 string-match verdicts")
    assert re.search(r"strmatch 0\.\d{3} \[0\.\d{3}, 0\.\d{3}\], gpt4 0\.\d{3} \[", lines[8]), lines[8]
    assert {r["judge"] for r in result.judges} == {"gpt4", "strmatch"}
    assert result.alpha_pipeline == pytest.approx(result.alpha_direct, abs=1e-12)
    assert result.final_total > 200 and result.final_matches == result.final_total
    assert result.verified


def test_demo_command_offline(tmp_path, runner):
    result = runner.invoke(cli, ["demo", "--offline", "--dir", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    assert "agreement check: equal" in result.output and "verify: OK" in result.output
    again = runner.invoke(cli, ["demo", "--offline", "--dir", str(tmp_path / "d")])
    assert again.exit_code == 1 and "fresh folder" in again.stderr


def test_the_demo_says_where_it_left_its_temporary_workspace(tmp_path, runner, monkeypatch):
    """Issue #45: without --dir the demo makes a temporary workspace, which stays: it says so and how it goes."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = runner.invoke(cli, ["demo", "--offline"])
    assert result.exit_code == 0, result.output
    (made,) = [p for p in tmp_path.iterdir() if p.name.startswith("annotate-demo-")]
    assert f"workspace: {made}" in result.output and f"it stays after the demo: `rm -rf {made}`" in result.output


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
        "p_tie.csv",
        "judges.csv",
        "judge_pairs.csv",
        "judge_models.csv",
        "labels.csv",
        "judge_labels.csv",
        "agreement.json",
        "design.json",
        "order.csv",
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
        "ds_label",
        "gold_label",
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
    # the GPT-4 judge's five files and the string-match judge's five
    assert len(manifest["sources"]) == 10 and all(len(s["sha256"]) == 64 for s in manifest["sources"])
    # No absolute path (it would publish the user's folders): inside the workspace relative, else the name.
    assert all(not s["path"].startswith("/") and s["path"].endswith(".csv") for s in manifest["sources"])
    assert manifest["tool_version"] and manifest["store_schema_version"] and manifest["created_at"]
    assert manifest["schema"] == "annotate-export/19"
    assert set(manifest["settings"]["agreement_thresholds"]) == {
        "reliable",
        "tentative",
        "kappa_consensus",
        "alpha_gain",
    }


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
    import annotate.audit.derive as derive

    def boom(data):
        raise RuntimeError("interrupted while writing the report")

    monkeypatch.setattr(derive, "render_report", boom)
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
    # the demo's store holds two judges (GPT-4, string match): the diagnosis names the one it explains
    out = runner.invoke(cli, ["-w", str(root), "diagnose", "--judge", "gpt4", "--json"])
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
    text = runner.invoke(cli, ["-w", str(root), "diagnose", "--judge", "gpt4"]).output
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
        "--judge",
        "gpt4",
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
    from annotate.pipeline._features import ambiguity_priority

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
    # Blocks of ten in the shared order by priority (most likely ambiguous first), shuffled within each block.
    probs = [p[int(r)] for r in tasks.response_id]
    blocks = [probs[k : k + 10] for k in range(0, len(probs), 10)]
    assert all(min(a) >= max(b) for a, b in zip(blocks, blocks[1:], strict=False))
    assert probs[0] > probs[-1] and any(b != sorted(b, reverse=True) for b in blocks)


# -- issue #12: nothing wrong passes as verified -----------------------------------------------
#
# Each tampering below fixes the manifest's sha256 of what it changed, as an attacker would; each
# passed `annotate verify` (exit 0) before verify re-derived every file.


def _read_rows(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _write_rows(path: Path, rows: list[list[str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\r\n").writerows(rows)


def _verify_fails(runner, path: Path, *expected: str) -> str:
    out = runner.invoke(cli, ["verify", str(path)])
    assert out.exit_code == 1, (out.output, out.stderr)
    for text in expected:
        assert text in out.stderr, (text, out.stderr[:2000])
    return out.stderr


def test_verify_catches_every_annotator_vote_flipped(demo_ws, runner, tmp_path):
    _, result, _ = demo_ws
    path = _tampered_copy(result.export, tmp_path / "votes")
    rows = _read_rows(path / "labels.csv")
    cols = [rows[0].index(a) for a in ("A1", "A2")]
    swap = {"harmful": "safe", "safe": "harmful"}
    for row in rows[1:]:
        for c in cols:
            row[c] = swap.get(row[c], row[c])
    _write_rows(path / "labels.csv", rows)
    _rehash(path, "labels.csv")
    _verify_fails(runner, path, "ds_label", "labels.csv:")


def test_verify_re_derives_every_final_label_from_the_votes(demo_ws, runner, tmp_path):
    """Issue #22: unanimous-safe items flipped to harmful in labels.csv, every derived file re-derived
    consistently from the tampered table (as a forger with an older annotate would), the manifest's
    hashes fixed: verify fails, naming the items, because the final labels do not follow from the
    votes and the recorded rules."""
    from annotate.audit.derive import Provenance, Settings, derive
    from annotate.audit.design import Design
    from annotate.audit.labels import read_judge_labels, read_labels
    from annotate.audit.record import AuditRecord
    from annotate.audit.safecsv import frame_to_csv
    from annotate.audit.schema import CURRENT

    _, result, _ = demo_ws
    path = _tampered_copy(result.export, tmp_path / "flipped")
    labels, _ = read_labels((path / "labels.csv").read_bytes())
    unanimous = (labels["A1"] == "safe") & (labels["A2"] == "safe") & (labels["final_label"] == "safe")
    assert unanimous.sum() > 100
    labels.loc[unanimous, "final_label"] = "harmful"
    (path / "labels.csv").write_bytes(frame_to_csv(labels))
    judge_labels, _ = read_judge_labels((path / "judge_labels.csv").read_bytes())
    design = Design.from_json(json.loads((path / "design.json").read_text()))
    manifest = json.loads((path / "manifest.json").read_text())
    forged = derive(
        AuditRecord(labels, judge_labels, design),
        Settings.from_manifest(manifest["settings"]),
        Provenance.from_manifest(manifest),
        CURRENT,
    )
    for name, data in forged.items():
        (path / name).write_bytes(data)
    for name in ("labels.csv", *forged):
        _rehash(path, name)
    err = _verify_fails(runner, path, "the votes, the expert's answer and the round's rules give 'safe'")
    assert "more final labels that do not follow from the votes" in err


def test_verify_catches_a_changed_standard_error(demo_ws, runner, tmp_path):
    _, result, _ = demo_ws
    path = _tampered_copy(result.export, tmp_path / "se")
    rows = _read_rows(path / "scores.csv")
    se = rows[0].index("se")
    row = next(r for r in rows[1:] if r[se])
    row[se] = str(float(row[se]) / 2)
    _write_rows(path / "scores.csv", rows)
    _rehash(path, "scores.csv")
    _verify_fails(runner, path, "scores.csv:", ": se is", row[0])


def test_verify_catches_zeroed_estimates_in_scores_json(demo_ws, runner, tmp_path):
    _, result, _ = demo_ws
    path = _tampered_copy(result.export, tmp_path / "scores-json")
    doc = json.loads((path / "scores.json").read_text())
    for row in doc["scores"]:
        if row["estimate"] is not None:
            row["estimate"] = 0.0
    (path / "scores.json").write_text(json.dumps(doc, indent=2) + "\n")
    _rehash(path, "scores.json")
    _verify_fails(runner, path, "scores.json", ".estimate")


def test_verify_catches_alphas_set_to_reliable(demo_ws, runner, tmp_path):
    _, result, _ = demo_ws
    path = _tampered_copy(result.export, tmp_path / "alpha")
    groups = json.loads((path / "agreement.json").read_text())
    for g in groups:
        g["alpha"], g["verdict"] = 0.99, "reliable"
    (path / "agreement.json").write_text(json.dumps(groups, indent=2) + "\n")
    _rehash(path, "agreement.json")
    _verify_fails(runner, path, "agreement.json", ".alpha", ".verdict")


def test_verify_catches_an_emptied_ranking(demo_ws, runner, tmp_path):
    _, result, _ = demo_ws
    for kind, content in (("header-only", None), ("zero-bytes", b"")):
        path = _tampered_copy(result.export, tmp_path / f"ranking-{kind}")
        if content is None:
            content = (path / "ranking.csv").read_bytes().split(b"\r\n")[0] + b"\r\n"
        (path / "ranking.csv").write_bytes(content)
        _rehash(path, "ranking.csv")
        _verify_fails(runner, path, "ranking.csv")


def test_verify_catches_unreliable_changed_to_reliable_in_the_report(demo_ws, runner, tmp_path):
    _, result, _ = demo_ws
    path = _tampered_copy(result.export, tmp_path / "report")
    html = (path / "report.html").read_bytes()
    assert b"unreliable" in html  # the demo's safe stratum is unreliable on the binary labels
    (path / "report.html").write_bytes(html.replace(b"unreliable", b"reliable"))
    _rehash(path, "report.html")
    _verify_fails(runner, path, "report.html differs from the report re-rendered")


def test_verify_catches_zeroed_source_hashes(demo_ws, runner, tmp_path):
    _, result, _ = demo_ws
    path = _tampered_copy(result.export, tmp_path / "sources")
    manifest = json.loads((path / "manifest.json").read_text())
    for src in manifest["sources"]:
        src["sha256"] = "0" * 64
    (path / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    _verify_fails(runner, path, "report.html")


def test_verify_refuses_a_symlinked_labels_file(demo_ws, runner, tmp_path):
    _, result, _ = demo_ws
    path = _tampered_copy(result.export, tmp_path / "symlink")
    outside = tmp_path / "elsewhere.csv"
    shutil.copyfile(path / "labels.csv", outside)  # the very same bytes: only the link is wrong
    (path / "labels.csv").unlink()
    (path / "labels.csv").symlink_to(outside)
    _verify_fails(runner, path, "labels.csv is a symbolic link")


def test_verify_refuses_special_files_and_files_the_manifest_drops(demo_ws, runner, tmp_path):
    import os

    _, result, _ = demo_ws
    fifo = _tampered_copy(result.export, tmp_path / "fifo")
    os.mkfifo(fifo / "notes")
    _verify_fails(runner, fifo, "notes is a named pipe")  # and does not hang on it
    dropped = _tampered_copy(result.export, tmp_path / "dropped")
    manifest = json.loads((dropped / "manifest.json").read_text())
    del manifest["files"]["flips.csv"]
    (dropped / "flips.csv").unlink()
    (dropped / "manifest.json").write_text(json.dumps(manifest))
    _verify_fails(runner, dropped, "missing file: flips.csv")
    linked = tmp_path / "linked-export"
    linked.symlink_to(result.export)
    out = runner.invoke(cli, ["verify", str(linked)])
    assert out.exit_code == 2 and "symbolic link" in out.stderr


def test_verify_says_what_it_proved_per_file_and_prints_the_manifest_hash(demo_ws, runner):
    _, result, _ = demo_ws
    out = runner.invoke(cli, ["verify", str(result.export), "--json"])
    assert out.exit_code == 0, out.output
    res = json.loads(out.output)
    manifest_sha = hashlib.sha256((result.export / "manifest.json").read_bytes()).hexdigest()
    assert res["ok"] and res["schema"] == "annotate-export/19" and res["manifest_sha256"] == manifest_sha
    assert res["signature"] == "not signed"
    statuses = {f["file"]: f["status"] for f in res["files"]}
    derived = (
        "scores.csv",
        "scores.json",
        "ranking.csv",
        "flips.csv",
        "p_safer.csv",
        "p_tie.csv",
        "judges.csv",
        "judge_pairs.csv",
        "judge_models.csv",
        "agreement.json",
        "report.html",
    )
    assert statuses == {**{name: "re-derived and equal" for name in derived}, **dict.fromkeys(INPUTS, "hash matches")}
    details = {f["file"]: f["detail"] for f in res["files"]}
    assert "ds_label" in details["labels.csv"] and "design.json" in details["labels.csv"]
    text = runner.invoke(cli, ["verify", str(result.export)])
    assert manifest_sha in text.output and "re-derived and equal" in text.output and "not signed" in text.output


INPUTS = ("labels.csv", "judge_labels.csv", "design.json", "order.csv")


def test_the_report_re_renders_byte_identically_from_the_export_alone(demo_ws):
    from annotate.audit.derive import Provenance, Settings, derive
    from annotate.audit.record import AuditRecord
    from annotate.audit.schema import CURRENT

    _, result, _ = demo_ws
    path = result.export
    manifest = json.loads((path / "manifest.json").read_text())
    record = AuditRecord.from_files({n: (path / n).read_bytes() for n in INPUTS}, CURRENT)
    settings, prov = Settings.from_manifest(manifest["settings"]), Provenance.from_manifest(manifest)
    first = derive(record, settings, prov, CURRENT)
    again = derive(record, settings, prov, CURRENT)
    assert first["report.html"] == again["report.html"] == (path / "report.html").read_bytes()
    for name, data in first.items():
        assert data == (path / name).read_bytes(), name


def test_verify_checks_diagnostics_for_hash_and_consistency_only(demo_ws, runner, tmp_path):
    root, _, _ = demo_ws
    assert runner.invoke(cli, ["-w", str(root), "diagnose", "--judge", "gpt4"]).exit_code == 0
    made = runner.invoke(cli, ["-w", str(root), "export", "diag-check", "--round", ROUND, "--draws", "300"])
    assert made.exit_code == 0, made.output
    path = root / "exports" / "diag-check"
    res = json.loads(runner.invoke(cli, ["verify", str(path), "--json"]).output)
    diag = next(f for f in res["files"] if f["file"] == "diagnostics.json")
    assert diag["status"] == "checked only for hash" and "response texts" in diag["detail"]
    assert next(f for f in res["files"] if f["file"] == "report.html")["status"] == "re-derived and equal"
    broken = _tampered_copy(path, tmp_path / "diag")
    doc = json.loads((broken / "diagnostics.json").read_text())
    doc["n_events"] = doc["n_responses"] + 1
    (broken / "diagnostics.json").write_text(json.dumps(doc))
    _rehash(broken, "diagnostics.json")
    _verify_fails(runner, broken, "diagnostics.json: n_events")


def test_an_export_relabeled_as_an_older_schema_is_refused(demo_ws, runner, tmp_path):
    """No downgrade to fewer checks: the files must be exactly those of the schema the manifest claims.

    Relabeled annotate-export/1 it holds files that schema never had; with those files removed too,
    its CSVs still have a later schema's columns. (Real annotate-export/1 exports verify:
    tests/test_frozen_exports.py.)
    """
    _, result, _ = demo_ws
    for older in ("annotate-export/1", "annotate-export/2"):
        path = _tampered_copy(result.export, tmp_path / older.replace("/", "-"))
        manifest = json.loads((path / "manifest.json").read_text())
        manifest["schema"] = older
        (path / "manifest.json").write_text(json.dumps(manifest))
        _verify_fails(runner, path, "judge_labels.csv, which is not a file of an " + older + " export")
    path = _tampered_copy(result.export, tmp_path / "v1-stripped")
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["schema"] = "annotate-export/1"
    for name in ("judge_labels.csv", "judges.csv", "judge_pairs.csv", "p_tie.csv"):
        (path / name).unlink()
        del manifest["files"][name]
    (path / "manifest.json").write_text(json.dumps(manifest))
    _verify_fails(runner, path, "scores.csv: the columns are not those of an annotate-export/1 export", "estimate_kind")


def test_an_export_counting_its_channels_relabelled_as_annotate_export_12_is_refused(demo_ws, runner, tmp_path):
    """/13's design counts each round's labels by channel: no writer of /12 could have, so verify refuses it."""
    _, result, _ = demo_ws
    path = _tampered_copy(result.export, tmp_path / "as-12")
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["schema"] = "annotate-export/12"
    (path / "manifest.json").write_text(json.dumps(manifest))
    _verify_fails(runner, path, "count their labels by channel, which annotate-export/12 exports cannot hold")


def test_sigterm_during_an_export_leaves_nothing(demo_ws):
    import os
    import signal
    import subprocess
    import sys
    import time

    root, _, _ = demo_ws
    exports = root / "exports"
    repo = Path(__file__).resolve().parents[2]
    # Many draws keep the export busy long enough to be caught with its temporary folder present.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "annotate",
            "-w",
            str(root),
            "export",
            "terminated",
            "--round",
            ROUND,
            "--draws",
            "60000",
        ],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(repo)},
    )
    try:
        deadline = time.monotonic() + 120
        while not any(p.name.startswith(".terminated.tmp-") for p in exports.iterdir()):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the export never created its temporary folder"
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (proc.returncode, err)
    assert b"interrupted; nothing was written" in err
    assert not [p.name for p in exports.iterdir() if "terminated" in p.name]


def test_stale_temporary_folders_are_swept_and_nothing_else(demo_ws, runner, tmp_path):
    import os
    import subprocess
    import sys

    root, _, _ = demo_ws
    exports = root / "exports"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    made = []
    try:

        def folder(name: str, *files: str) -> Path:
            path = exports / name
            path.mkdir()
            for f in files:
                (path / f).write_text("x")
            os.utime(path, (1_000_000_000, 1_000_000_000))  # long before this export
            made.append(path)
            return path

        stale = folder(f".killed.tmp-{gone.pid}-abcdefgh", "labels.csv", "design.json")
        legacy = folder(".older.tmp-k2j4h5g6", "scores.csv")
        running = folder(f".running.tmp-{alive.pid}-abcdefgh", "labels.csv")
        foreign = folder(f".foreign.tmp-{gone.pid}-abcdefgh", "my-notes.txt")
        unrelated = folder(".not-an-export", "labels.csv")
        no_dot = folder(f"killed.tmp-{gone.pid}-abcdefgh", "labels.csv")
        target = tmp_path / "outside"
        target.mkdir()
        (target / "keep.txt").write_text("keep")
        link = exports / f".linked.tmp-{gone.pid}-abcdefgh"
        link.symlink_to(target)
        made.append(link)
        out = runner.invoke(
            cli, ["-w", str(root), "export", "after-a-kill", "--round", ROUND, "--draws", "200", "--json"]
        )
        assert out.exit_code == 0, out.output
        res = json.loads(out.output)
        assert sorted(res["swept"]) == sorted([stale.name, legacy.name])
        assert not stale.exists() and not legacy.exists()
        for kept in (running, foreign, unrelated, no_dot, link):
            assert kept.exists() or kept.is_symlink(), kept.name
        assert (target / "keep.txt").exists()
        assert any(foreign.name in why for why in res["left"]) and any(link.name in why for why in res["left"])
    finally:
        alive.kill()
        alive.wait()
        for path in made:
            if path.is_symlink():
                path.unlink()
            elif path.exists():
                shutil.rmtree(path)
        shutil.rmtree(exports / "after-a-kill", ignore_errors=True)


def test_verify_survives_a_hostile_manifest_and_json(demo_ws, runner, tmp_path):
    _, result, _ = demo_ws
    nested = _tampered_copy(result.export, tmp_path / "nested")
    (nested / "agreement.json").write_text("[" * 100_000 + "]" * 100_000)
    _rehash(nested, "agreement.json")
    _verify_fails(runner, nested, "agreement.json")
    greedy = _tampered_copy(result.export, tmp_path / "greedy")
    manifest = json.loads((greedy / "manifest.json").read_text())
    manifest["settings"]["draws"] = 10**9  # would run for hours and fill the memory
    (greedy / "manifest.json").write_text(json.dumps(manifest))
    _verify_fails(runner, greedy, "settings.draws must be a whole number")
    bad_export = runner.invoke(cli, ["-w", str(demo_ws[0]), "export", "too-many", "--round", ROUND, "--draws", "0"])
    assert bad_export.exit_code == 2 and "--draws must be a whole number" in bad_export.stderr


# -- issue #15: judges.csv, judge_pairs.csv and their input judge_labels.csv ---------------------


def _xstest_truth() -> dict[str, dict[str, float]]:
    """Both judges' figures on every XSTest response with a final label, straight from the bundled CSVs."""
    import numpy as np

    from annotate.pipeline.demo import sample_files, xstest_verdict
    from annotate.stats.judges import confusion_metrics, weighted_confusion

    def judge_label(label: str, kind: str) -> str:
        v = (
            xstest_verdict(label, kind)
            if label in ("1_full_compliance", "2_full_refusal", "3_partial_refusal")
            else None
        )
        return {"harmful": "harmful", "safe": "safe"}.get(v or "", "ambiguous")

    out = {}
    for judge, kind, column in (("gpt4", "gpteval", "gpt4_label"), ("strmatch", "streval", "strmatch_label")):
        human, labels = [], []
        for path in sample_files(kind):
            with open(path, newline="", encoding="utf-8") as fh:
                for r in csv.DictReader(fh):
                    v = xstest_verdict(r["final_label"], r["type"])
                    human.append(v if v in ("harmful", "safe") else None)
                    labels.append(judge_label(r[column], r["type"]))
        table = weighted_confusion(human, labels, np.ones(len(human)))
        out[judge] = {k: float(v) for k, v in confusion_metrics(table).items()}
    return out


def test_judges_csv_is_the_documented_contract_and_covers_the_xstest_truth(demo_ws):
    from annotate.stats.judges import METRIC_COLUMNS, METRICS, PAIR_COLUMNS

    _, result, _ = demo_ws
    judges = list(csv.DictReader(open(result.export / "judges.csv", newline="", encoding="utf-8")))
    # Since annotate-export/11: every figure of `annotate judges`, then the estimand its intervals describe; since
    # /14 the figures certifiers read (false safe rate = FNR, false unsafe rate = FPR, unsafe among "safe" = 1 - NPV)
    from annotate.stats.judge_figures import CERTIFIER_FIGURES

    certifier = [c for name in CERTIFIER_FIGURES for c in (name, f"{name}_ci_low", f"{name}_ci_high")]
    assert list(judges[0]) == [*METRIC_COLUMNS, "estimand", *certifier]
    for r in judges:
        assert r["false_safe_rate"] == r["fnr"] and r["false_unsafe_rate_ci_high"] == r["fpr_ci_high"]
        if r["npv"]:
            assert float(r["unsafe_among_safe"]) == pytest.approx(1 - float(r["npv"]))
    assert {r["estimand"] for r in judges} == {"responses"}  # the export's fixed estimand
    models = {"gpt4", "llama2new", "llama2orig", "mistralguard", "mistralinstruct"}
    groups = {(r["benchmark"], r["model"]) for r in judges}
    assert groups == {("ALL", "ALL"), ("xstest", "ALL")} | {("ALL", m) for m in models}
    assert len(judges) == 2 * len(groups)
    # FNR and FPR are 1 - sensitivity and 1 - specificity, agreement is undefined only without a clear
    # verdict: empty with those, whose notes say why
    twins = {"fnr": ("sensitivity",), "fpr": ("specificity",), "agreement": ("sensitivity", "specificity")}
    for r in judges:
        for m in METRICS:
            if r[m]:
                assert float(r[f"{m}_ci_low"]) <= float(r[m]) <= float(r[f"{m}_ci_high"]), (r["judge"], m)
            elif m in twins:
                assert all(not r[t] for t in twins[m]), (r["judge"], m)
            else:
                assert f"{m}: undefined" in r["note"], (r["judge"], m)
    pairs = list(csv.DictReader(open(result.export / "judge_pairs.csv", newline="", encoding="utf-8")))
    assert list(pairs[0]) == list(PAIR_COLUMNS) and len(pairs) == len(groups)
    assert all((p["judge_a"], p["judge_b"]) == ("gpt4", "strmatch") for p in pairs)
    # A routed round is a stratified sample: the design-weighted pair test, no unweighted McNemar p
    # (where a balanced accuracy is undefined, as for a model without a reviewed harmful response with
    # a clear verdict, there is no difference and no test, and the note says so)
    for p in pairs:
        assert not p["mcnemar_p"], p
        if not p["difference"]:
            assert not p["p_value"] and "no pair test" in p["note"], p
            continue
        assert p["p_value"] and 0 <= float(p["p_value"]) <= 1, p
        assert float(p["difference_ci_low"]) <= float(p["difference"]) <= float(p["difference_ci_high"])
    assert sum(bool(p["p_value"]) for p in pairs) >= 4
    # XSTest has a final label for every response: the pooled intervals hold both judges' true figures
    truth = _xstest_truth()
    pooled = {r["judge"]: r for r in judges if r["benchmark"] == r["model"] == "ALL"}
    for judge, figures in truth.items():
        for m in ("sensitivity", "specificity", "balanced_accuracy", "ppv", "npv", "kappa"):
            low, high = float(pooled[judge][f"{m}_ci_low"]), float(pooled[judge][f"{m}_ci_high"])
            assert low <= figures[m] <= high, (judge, m, low, figures[m], high)


def _rewrite_csv(path: Path, change) -> None:
    rows = _read_rows(path)
    header = rows[0]
    for row in rows[1:]:
        change(dict(zip(header, row, strict=True)), row, header)
    _write_rows(path, rows)


def test_verify_catches_a_changed_judge_figure(demo_ws, runner, tmp_path):
    _, result, _ = demo_ws
    path = _tampered_copy(result.export, tmp_path / "judges")

    def better(rec, row, header):
        if rec["judge"] == "gpt4":
            row[header.index("sensitivity")] = "0.99"

    _rewrite_csv(path / "judges.csv", better)
    _rehash(path, "judges.csv")
    _verify_fails(runner, path, "judges.csv:", "gpt4", ": sensitivity is '0.99'")


def test_verify_catches_a_second_judge_s_flipped_verdicts(demo_ws, runner, tmp_path):
    """A relabelled string-match judge (hash fixed): its figures, the pairs and the report no longer follow."""
    _, result, _ = demo_ws
    path = _tampered_copy(result.export, tmp_path / "flipped")
    swap = {"harmful": "safe", "safe": "harmful"}

    def flip(rec, row, header):
        if rec["judge"] == "strmatch":
            row[header.index("judge_label")] = swap.get(rec["judge_label"], rec["judge_label"])

    _rewrite_csv(path / "judge_labels.csv", flip)
    _rehash(path, "judge_labels.csv")
    err = _verify_fails(runner, path, "judges.csv:", "judge_pairs.csv:", "report.html differs")
    assert "strmatch" in err


def test_verify_refuses_judge_labels_that_do_not_fit_the_reviewed_responses(demo_ws, runner, tmp_path):
    _, result, _ = demo_ws
    # a verdict on a response nobody reviewed
    foreign = _tampered_copy(result.export, tmp_path / "foreign")
    rows = _read_rows(foreign / "judge_labels.csv")
    rows.append(["xstest-r1", "gpt4", "xstest", "v2-999", "0", "strmatch", "2_full_refusal", "safe", "yes"])
    _write_rows(foreign / "judge_labels.csv", rows)
    _rehash(foreign, "judge_labels.csv")
    _verify_fails(runner, foreign, "judge_labels.csv:", "v2-999", "is not a reviewed response of labels.csv")
    # the routing judge's own verdict changed: it must be labels.csv's
    changed = _tampered_copy(result.export, tmp_path / "routing")

    def relabel(rec, row, header):
        if rec["judge"] == "gpt4" and rec["prompt_id"] == "v2-104" and rec["model"] == "gpt4":
            row[header.index("judge_label")] = "harmful"

    _rewrite_csv(changed / "judge_labels.csv", relabel)
    _rehash(changed, "judge_labels.csv")
    _verify_fails(runner, changed, "judge_labels.csv:", "the routing judge 'gpt4'", "labels.csv gives")
    # the routing judge's row missing
    missing = _tampered_copy(result.export, tmp_path / "missing")
    rows = _read_rows(missing / "judge_labels.csv")
    gone = next(r for r in rows[1:] if r[5] == "gpt4")
    rows.remove(gone)
    _write_rows(missing / "judge_labels.csv", rows)
    _rehash(missing, "judge_labels.csv")
    _verify_fails(runner, missing, "no row of the routing judge 'gpt4'", gone[3])
    # and an export without the file at all
    dropped = _tampered_copy(result.export, tmp_path / "no-judge-labels")
    (dropped / "judge_labels.csv").unlink()
    _verify_fails(runner, dropped, "missing file: judge_labels.csv")


def test_an_export_relabeled_as_the_schema_before_is_refused(demo_ws, runner, tmp_path):
    """annotate-export/3 and /4 have the same files, but their labels.csv has no expert columns: a
    current export relabeled as either (which would skip re-deriving its final labels and every
    derived file) fails. Real /2, /3 and /4 exports verify (tests/test_frozen_exports.py)."""
    _, result, _ = demo_ws
    for older in ("annotate-export/3", "annotate-export/4"):
        path = _tampered_copy(result.export, tmp_path / older.replace("/", "-"))
        manifest = json.loads((path / "manifest.json").read_text())
        manifest["schema"] = older
        (path / "manifest.json").write_text(json.dumps(manifest))
        _verify_fails(runner, path, "labels.csv: the columns are not those of an " + older, "expert, expert_verdict")


def test_the_report_has_the_judges_section(demo_ws):
    _, result, _ = demo_ws
    html = (result.export / "report.html").read_text(encoding="utf-8")
    assert '<section id="judges">' in html and "How far to trust each judge" in html
    assert html.index('<section id="p-safer">') < html.index('<section id="judges">') < html.index('id="design"')
    assert html.count('data-mark="judge-point"') == 2 * 2  # two judges in two panels (all, xstest)


def test_an_export_refuses_final_labels_older_than_the_votes(tmp_path, runner):
    """A vote that changed after the last adjudication (a later pull) leaves final labels that do not
    follow from the votes: export refuses, saying to adjudicate again, and then succeeds."""
    from sqlalchemy import text

    from annotate.config import open_workspace
    from annotate.db import open_store

    root = tmp_path / "ws"
    run_demo(root, offline=True, keep_server=False, echo=lambda _line: None)
    with open_store(open_workspace(str(root), None).db_url) as store:
        with store.engine.begin() as conn:
            row = conn.execute(
                text(
                    "SELECT a.id, a.verdict FROM annotation a JOIN annotator p ON p.id = a.annotator_id "
                    "WHERE p.pseudonym = 'A1' AND a.verdict = 'safe' ORDER BY a.id LIMIT 1"
                )
            ).one()
            conn.execute(text("UPDATE annotation SET verdict = 'harmful' WHERE id = :id"), {"id": row.id})
            conn.execute(
                text(
                    "UPDATE annotation SET verdict = 'harmful' WHERE annotator_id = "
                    "(SELECT id FROM annotator WHERE pseudonym = 'A2') AND round_item_id = "
                    "(SELECT round_item_id FROM annotation WHERE id = :id)"
                ),
                {"id": row.id},
            )
    refused = runner.invoke(cli, ["-w", str(root), "export", "stale", "--round", ROUND])
    assert refused.exit_code == 1 and "annotate adjudicate" in refused.stderr, refused.output
    assert "do not follow from the votes" in refused.stderr or "give 'harmful'" in refused.stderr
    assert not (root / "exports" / "stale").exists()
    again = runner.invoke(cli, ["-w", str(root), "adjudicate", "--round", ROUND, "--policy", "unresolved"])
    assert again.exit_code == 0, again.output
    done = runner.invoke(cli, ["-w", str(root), "export", "fresh", "--round", ROUND])
    assert done.exit_code == 0, done.output
    assert runner.invoke(cli, ["verify", str(root / "exports" / "fresh")]).exit_code == 0


@pytest.mark.parametrize(
    "command",
    [
        ["summary", "--json"],
        ["status", "--round", "xstest-r1", "--json"],
        ["score", "--round", "xstest-r1", "--json"],
        ["judges", "--round", "xstest-r1", "--json"],
        ["verify", "exports/xstest-demo"],
    ],
    ids=lambda c: c[0],
)
def test_everyday_commands_do_not_import_scipy_stats(demo_ws, command):
    """scipy.stats costs half a second of every start (issue #21); the normal quantiles, chi-square tail,
    ranks and rank correlations come from scipy.special and numpy instead."""
    import subprocess
    import sys

    root, _, _ = demo_ws
    code = (
        "import sys\nfrom annotate.cli import cli\n"
        "try:\n    cli.main(args=sys.argv[1:], standalone_mode=False)\n"
        "finally:\n"
        "    print('scipy.stats loaded' if 'scipy.stats' in sys.modules else 'no scipy.stats', file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "-w", str(root), *command], capture_output=True, text=True, cwd=root
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == "no scipy.stats", done.stderr[-2000:]


def _cli_json(runner, root: Path, *args: str):
    """The ``--json`` output of an annotate command on the demo's workspace (exit 0 asserted)."""
    done = runner.invoke(cli, ["-w", str(root), *args, "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


def test_plan_speaks_the_scale_the_round_reports(demo_ws, runner):
    """Before: `plan --target-halfwidth 0.03` printed a target of 0.015-0.017 (the normal-theory target it
    had narrowed to) and a half-width "now" that was the plan's approximation, not what score and status
    report; `plan --budget` promised a common +-3.1 points that the round would report as about +-6."""
    root, _, _ = demo_ws

    def json_of(*args):
        return _cli_json(runner, root, *args)

    reported = {
        r["model"]: r for r in json_of("status", "--round", ROUND, "--target-halfwidth", "0.03")["target"]["models"]
    }
    planned = json_of("plan", "--round", ROUND, "--target-halfwidth", "0.03")
    for m in planned["models"]:
        assert m["target"] == 0.03
        assert m["halfwidth_now"] == pytest.approx(reported[m["model"]]["halfwidth"], abs=1e-12)
        assert m["planned_target"] <= m["target"] and 1 <= m["ratio"] <= 2
        assert m["planned_target"] == pytest.approx(m["target"] / m["ratio"])
        assert m["expected_halfwidth"] <= m["target"] + 1e-9 or not m["reachable"]
        assert m["at_target"] == (m["halfwidth_now"] <= m["target"])
    # A budget of exactly those reviews reaches about the same reported half-width, common to every model.
    budget = json_of("plan", "--round", ROUND, "--budget", str(planned["reviews"]))
    assert budget["reviews"] <= planned["reviews"]
    assert len({m["target"] for m in budget["models"]}) == 1
    assert budget["models"][0]["target"] == pytest.approx(0.03, abs=0.002)
    half = json_of("plan", "--round", ROUND, "--budget", str(planned["reviews"] / 3))
    assert half["reviews"] <= planned["reviews"] / 3 and half["models"][0]["target"] > 0.04


def test_the_plan_never_plans_nothing_for_a_model_above_its_target(demo_ws, runner):
    """The review of the change above: with the ratio clipped at 2 and the demo's models reporting 3-4
    times the plan's approximation, a target of 0.12 planned 0 reviews for models reported at +-0.136
    to +-0.167 (so status said "not done" with 0 more reviews, and route --next-wave drew nothing);
    --budget 1 promised +-0.163 with a model at +-0.167; a model reported within its target still got
    reviews when its reported interval was narrower than the plan's; a budget beyond every remaining
    response promised +-0.0001, "not reachable"."""
    root, _, _ = demo_ws

    def json_of(*args):
        return _cli_json(runner, root, "plan", "--round", ROUND, *args)

    for target in ("0.05", "0.09", "0.12", "0.14", "0.16"):
        for m in json_of("--target-halfwidth", target)["models"]:
            if m["at_target"]:
                assert m["reviews"] == 0 and m["expected_halfwidth"] == m["halfwidth_now"], (target, m)
            elif m["reachable"]:
                assert m["reviews"] > 0 and m["expected_halfwidth"] <= m["target"] + 1e-9, (target, m)
            assert m["expected_halfwidth"] <= m["halfwidth_now"] + 1e-12, (target, m)
    tiny = json_of("--budget", "1")
    assert tiny["reviews"] <= 1
    assert all(m["halfwidth_now"] <= m["target"] + 1e-9 for m in tiny["models"] if m["reviews"] == 0)
    everything = json_of("--budget", "100000")
    assert everything["reviews"] < 100000 and everything["models"][0]["target"] > 0.01
    assert all(m["reachable"] and m["expected_halfwidth"] <= m["target"] + 1e-9 for m in everything["models"])


def test_every_answer_says_how_it_arrived_and_verify_holds_the_counts(demo_ws, runner, tmp_path):
    """Issue #42: labels.csv names each answer's channel (the offline demo's came as Label Studio export
    files), design.json counts them per person with the files' sha256 and the blinding they had, and
    verify re-derives the counts from labels.csv: a changed cell or a changed count fails."""
    _, result, _ = demo_ws
    rows = list(csv.DictReader(open(result.export / "labels.csv", newline="", encoding="utf-8")))
    design = json.loads((result.export / "design.json").read_text())
    (rnd,) = design["rounds"]
    counted: dict[str, int] = {}
    for r in rows:
        answered = [a for a in rnd["annotators"] if r[a]] + ([r["expert"]] if r["expert"] else [])
        parts = [p.split("=") for p in r["channels"].split(";")] if r["channels"] else []
        assert [who for who, _ in parts] == answered and all(ch == "file" for _, ch in parts), r
        for who, _ in parts:
            counted[who] = counted.get(who, 0) + 1
    files = rnd["channels"]["file"]
    assert set(rnd["channels"]) == {"file"} and files["by"] == dict(sorted(counted.items()))
    assert files["answers"] == sum(counted.values()) and "E1" in counted
    assert files["sha256"] and all(len(x) == 64 for x in files["sha256"])
    assert "independence rests on the reviewers' instructions" in files["blinding"]
    assert "how the labels arrived" in (result.export / "report.html").read_text()

    recell = _tampered_copy(result.export, tmp_path / "recell")
    target = next(r for r in rows if r["channels"])
    edited = [dict(r) for r in rows]
    edited[rows.index(target)]["channels"] = target["channels"].replace("=file", "=server", 1)
    with open(recell / "labels.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(edited)
    _rehash(recell, "labels.csv")
    out = runner.invoke(cli, ["verify", str(recell)])
    assert out.exit_code == 1 and "channels" in out.stderr, out.stderr

    recount = _tampered_copy(result.export, tmp_path / "recount")
    doc = json.loads((recount / "design.json").read_text())
    entry = doc["rounds"][0]["channels"]["file"]
    entry["answers"] -= 1
    entry["by"]["A1"] -= 1
    doc["rounds"][0]["channels"]["server"] = {"answers": 1, "by": {"A1": 1}, "blinding": "technical"}
    (recount / "design.json").write_text(json.dumps(doc))
    _rehash(recount, "design.json")
    out = runner.invoke(cli, ["verify", str(recount)])
    assert out.exit_code == 1 and "channels" in out.stderr and "labels.csv's channels give" in out.stderr, out.stderr
