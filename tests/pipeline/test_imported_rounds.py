"""Imported rounds are first-class in the design (issue #42): they export and verify, and a routed and
an imported round over the same responses are never averaged.

`annotate import-labels` records a round of wave 0 whose strata are the judge's labels on what the
file labelled (a census, or a given design). Before #42 `export` refused every such round (its
design checks were a routed round's: waves from 1, samples from clear_per_cell), and `score` took
a routed and an imported round over one cell together (the check compared stratum keys, and the
imported ones carry ``#w0``), counting each response twice.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from annotate.cli import cli
from annotate.columns import CHANNEL_BLINDING
from tests.pipeline.test_import_labels import JBB, run


def _responses(tmp_path: Path, n: int = 20) -> Path:
    path = tmp_path / "runs.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {"model": "m", "benchmark": "b", "prompt_id": f"p{i}", "prompt": "q", "response": f"answer {i}",
                 "judge": "j", "judge_label": "harmful" if i < 4 else "safe"}
            ) + "\n"
            for i in range(n)
        )
    )  # fmt: skip
    return path


def _long_votes(tmp_path: Path, items: int = 8) -> Path:
    path = tmp_path / "votes.csv"
    path.write_text(
        "item,who,label\n"
        + "".join(
            f"p{i},ana,{'harmful' if i < 3 else 'safe'}\np{i},bo,{'harmful' if i < 3 else 'safe'}\n"
            for i in range(items)
        )
    )
    return path


def _import_given(runner, prefix, tmp_path) -> Path:
    labels = _long_votes(tmp_path)
    run(
        runner, prefix, "import-labels", labels, "--key", "prompt_id=item", "--long", "who,label",
        "--model", "m", "--benchmark", "b", "--round", "earlier",
    )  # fmt: skip
    run(runner, prefix, "adjudicate", "--round", "earlier", "--policy", "majority")
    return labels


def test_a_census_import_exports_and_verifies(workspace, runner, tmp_path):
    ws, prefix = workspace
    run(runner, prefix, "import-labels", JBB, "--round", "jbb")
    run(runner, prefix, "adjudicate", "--round", "jbb", "--policy", "majority")
    run(runner, prefix, "export", "jbb-audit", "--round", "jbb", "--draws", "200")
    out = ws / "exports" / "jbb-audit"
    verified = run(runner, prefix, "verify", out).output
    assert "does not verify" not in verified and "re-derived and equal" in verified, verified
    (rnd,) = json.loads((out / "design.json").read_text())["rounds"]
    origin = rnd["origin"]
    # how the labels came in, and nothing of the machine they came from nor of the raters' names
    assert origin["imported"] is True and origin["design"] == "census" and len(origin["sha256"]) == 64
    assert origin["file"] == JBB.name and "/" not in origin["file"]
    assert "raters" not in origin and "long" not in origin
    assert {s["wave"] for s in rnd["strata"]} == {0}
    assert all(s["sample"] == s["population"] for s in rnd["strata"])
    # the corrected score rests on the 300 human labels (a census: exact)
    rows = list(csv.DictReader(open(out / "scores.csv", newline="", encoding="utf-8")))
    (corrected,) = [r for r in rows if r["treatment"] == "corrected" and r["benchmark"] != "ALL"]
    assert int(corrected["n_reviewed"]) == 300 and corrected["ci_low"] == corrected["ci_high"], corrected


def test_a_given_import_exports_verifies_and_a_tampered_design_is_refused(workspace, runner, tmp_path):
    ws, prefix = workspace
    run(runner, prefix, "ingest", _responses(tmp_path))
    _import_given(runner, prefix, tmp_path)
    run(runner, prefix, "export", "earlier-audit", "--round", "earlier", "--draws", "200")
    out = ws / "exports" / "earlier-audit"
    assert "does not verify" not in run(runner, prefix, "verify", out).output
    doc = json.loads((out / "design.json").read_text())
    strata = {s["judge_label"]: (s["population"], s["sample"]) for s in doc["rounds"][0]["strata"]}
    assert strata == {"harmful": (4, 4), "safe": (16, 4)} and doc["rounds"][0]["origin"]["design"] == "given"
    # A design that claims a census it is not is refused by verify.
    doc["rounds"][0]["origin"]["design"] = "census"
    (out / "design.json").write_text(json.dumps(doc))
    result = runner.invoke(cli, [*prefix, "verify", str(out)])
    assert result.exit_code != 0
    assert "sample 4 of 16 in a census" in result.output + (result.stderr if result.stderr_bytes else "")


def test_a_routed_and_an_imported_round_over_one_cell_are_never_averaged(workspace, runner, tmp_path):
    ws, prefix = workspace
    run(runner, prefix, "ingest", _responses(tmp_path))
    for email in ("a1@example.org", "a2@example.org"):
        run(runner, prefix, "annotators", "add", email, "--offline")
    run(runner, prefix, "route", "--round", "r1", "--annotators", "A1,A2", "--clear-per-cell", "4", "--to-file")
    _import_given(runner, prefix, tmp_path)
    both = runner.invoke(cli, [*prefix, "score", "--round", "r1", "--round", "earlier"])
    message = both.output + (both.stderr if both.stderr_bytes else "")
    assert both.exit_code == 2, message
    assert "cell m x b is covered by more than one round (earlier, r1)" in message and "counted twice" in message
    assert "Traceback" not in message
    refused = runner.invoke(cli, [*prefix, "export", "both", "--round", "r1", "--round", "earlier"])
    assert refused.exit_code != 0 and not (ws / "exports" / "both").exists()
    # each round alone scores
    alone = json.loads(run(runner, prefix, "score", "--round", "earlier", "--json").output)
    assert alone


_KILL_AT = """
import os, sys
from sqlalchemy import event
from sqlalchemy.engine import Engine

count = {"n": 0}
stop = int(os.environ["KILL_AT"])


@event.listens_for(Engine, "before_cursor_execute")
def _kill(conn, cursor, statement, parameters, context, executemany):
    count["n"] += 1
    if count["n"] == stop:
        os._exit(137)  # as kill -9: no handler, no rollback by the program, no cleanup


from annotate.cli import main

sys.argv = ["annotate", *sys.argv[1:]]
main()
"""


def _statements(args: list[str], env: dict) -> int:
    """How many SQL statements the command runs (a run that is never killed)."""
    code = _KILL_AT.replace("os._exit(137)", "pass") + "\n"
    code = code.replace("main()\n", "try:\n    main()\nfinally:\n    print('STATEMENTS', count['n'])\n")
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env)
    return int(done.stdout.rsplit("STATEMENTS", 1)[1])


def test_an_import_killed_between_any_two_statements_leaves_no_half_round(tmp_path, runner):
    """A real process killed (os._exit, as kill -9) at statements spread over the whole import; then
    the store has no round and no rater of it, and the re-run imports everything."""
    from annotate.config import open_workspace
    from annotate.db.store import open_store

    db = f"sqlite:///{tmp_path / 'store.db'}"
    ws = tmp_path / "ws"
    prefix = ["--workspace", str(ws), "--db", db]
    assert runner.invoke(cli, ["init", str(ws), "--db", db]).exit_code == 0
    run(runner, prefix, "ingest", _responses(tmp_path))
    labels = _long_votes(tmp_path)
    args = [*prefix, "import-labels", str(labels), "--key", "prompt_id=item", "--long", "who,label",
            "--model", "m", "--benchmark", "b", "--round", "earlier"]  # fmt: skip
    env = {**os.environ, "KILL_AT": "0", "PYTHONPATH": os.pathsep.join(sys.path)}
    total = _statements([*prefix, "summary"], env)  # a read-only command's statements: no round yet
    kept = (tmp_path / "store.db").read_bytes()
    every = _statements(args, env)  # a whole import, counted, then undone by putting the file back
    (tmp_path / "store.db").write_bytes(kept)
    # the import itself: from after the start-up statements to its last one
    points = sorted({int(x) for x in np.linspace(total, every, 14)})
    for stop in points:
        killed = subprocess.run(
            [sys.executable, "-c", _KILL_AT, *args], capture_output=True, text=True, env={**env, "KILL_AT": str(stop)}
        )
        assert killed.returncode == 137, (stop, killed.stdout, killed.stderr)
        store = open_store(open_workspace(str(ws), db).db_url)
        try:
            assert store.get_round("earlier") is None, stop
            assert len(store.annotators()) == 0, stop
        finally:
            store.close()
    out = run(runner, prefix, *args[len(prefix) :]).output
    assert "16 labels from 2 raters" in out, out
    again = run(runner, prefix, *args[len(prefix) :]).output
    assert "imported already; nothing new" in again


def test_raters_who_would_share_an_address_are_refused_with_both_names(workspace, runner, tmp_path):
    ws, prefix = workspace
    run(runner, prefix, "ingest", _responses(tmp_path))
    labels = tmp_path / "votes.csv"
    labels.write_text("item,who,label\np0,Alice,safe\np0,alice,harmful\np1,Alice,safe\n")
    args = ["import-labels", labels, "--key", "prompt_id=item", "--long", "who,label", "--model", "m",
            "--benchmark", "b", "--round", "r"]  # fmt: skip
    err = run(runner, prefix, *args, code=2).stderr
    assert "raters 'Alice' and 'alice' would be one annotator (alice@imported.invalid)" in err, err
    assert "--annotator Alice=EMAIL --annotator alice=EMAIL" in err
    # with an address each they are two people
    out = run(
        runner, prefix, *args, "--annotator", "Alice=alice.a@example.org", "--annotator", "alice=alice.b@example.org"
    ).output
    assert "Alice = A1" in out and "alice = A2" in out, out


def test_rotating_pairs_of_eighteen_raters_wait_for_nobody_and_export(workspace, runner, tmp_path):
    """A long table whose items are each rated by a different pair of a team of 18 (issue #42's real
    set: 4,000 items, rotating pairs): every item is complete as the file has it."""
    ws, prefix = workspace
    rng = np.random.default_rng(42)
    n = 240
    run(runner, prefix, "ingest", _responses(tmp_path, n))
    raters = [f"R{k:02d}" for k in range(18)]
    lines = ["item,rater,label"]
    for i in range(n):
        truth = rng.random() < 0.3
        for who in rng.choice(raters, size=2, replace=False):
            label = truth if rng.random() < 0.9 else not truth
            lines.append(f"p{i},{who},{'harmful' if label else 'safe'}")
    table = tmp_path / "rotating.csv"
    table.write_text("\n".join(lines) + "\n")
    out = run(
        runner, prefix, "import-labels", table, "--key", "prompt_id=item", "--long", "rater,label",
        "--model", "m", "--benchmark", "b", "--round", "rot",
    ).output  # fmt: skip
    assert f"{2 * n} labels from 18 raters" in out and "design: census" in out, out
    doc = json.loads(run(runner, prefix, "adjudicate", "--round", "rot", "--policy", "majority", "--json").output)
    assert doc["waiting"] == 0 and doc["waiting_for"] == {} and doc["awaiting_review"] == 0, doc
    assert doc["by_votes"] == {"2": n}, doc
    assert doc["counts"].get("resolved", 0) + doc["counts"].get("unresolved", 0) == n, doc
    text = run(runner, prefix, "adjudicate", "--round", "rot", "--policy", "majority").output
    assert "by votes:  2 votes 240" in text and "wait for the rest" not in text, text
    run(runner, prefix, "export", "rot-audit", "--round", "rot", "--draws", "200")
    out_dir = ws / "exports" / "rot-audit"
    verified = run(runner, prefix, "verify", out_dir).output
    assert verified.startswith("OK"), verified
    # each rater's tasks are the items the file gave them, positions 1..k
    order = list(csv.DictReader(open(out_dir / "order.csv", newline="", encoding="utf-8")))
    per = {}
    for r in order:
        per.setdefault(r["annotator"], []).append(int(r["position"]))
    assert len(per) == 18 and sum(map(len, per.values())) == 2 * n
    assert all(sorted(p) == list(range(1, len(p) + 1)) for p in per.values())


def test_a_wide_latin1_table_with_name_columns_binds_people_and_patterns_report_every_match(
    workspace, runner, tmp_path
):
    """annot1_label was written by several people (named in annot1_name): the raters are the people.
    The labels are a taxonomy's codes mapped by patterns; the file is Latin-1 (Excel on Windows)."""
    ws, prefix = workspace
    run(runner, prefix, "ingest", _responses(tmp_path, 6))
    people = ["Zoë", "Ana", "Bo"]
    lines = ["id,annot1_name,annot1_label,annot2_name,annot2_label"]
    codes = ["1.1", "1.2", "0.3", "0.1", "1.4", "0.2"]
    for i in range(6):
        a, b = people[i % 3], people[(i + 1) % 3]
        lines.append(f"p{i},{a},{codes[i]},{b},{codes[(i + 1) % 6] if i != 5 else ''}")
    table = tmp_path / "wide.csv"
    table.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    base = ["import-labels", table, "--key", "prompt_id=id", "--model", "m", "--benchmark", "b", "--round", "w"]
    # Without the value patterns the codes are unknown: the error says how to map them.
    err = run(
        runner, prefix, *base, "--raters", "annot1_label:annot1_name,annot2_label:annot2_name",
        "--encoding", "latin-1", code=2,
    ).stderr  # fmt: skip
    assert "label '1.1' is not one the value map knows" in err and "--values '1.*=safe'" in err, err
    out = run(
        runner, prefix, *base, "--raters", "annot1_label:annot1_name,annot2_label:annot2_name",
        "--encoding", "latin-1", "--values", "1.*=harmful,0.*=safe",
    ).output  # fmt: skip
    assert "from 3 raters (Zoë = A1, Ana = A2, Bo = A3)" in out, out
    assert "--values 1.*=harmful matched '1.1' (1), '1.2' (2), '1.4' (2)" in out, out
    assert "--values 0.*=safe matched '0.1' (2), '0.2' (2), '0.3' (2)" in out, out
    # Columns as raters (the old binding) would have made two raters of three people.
    doc = json.loads(run(runner, prefix, "agreement", "--round", "w", "--json").output)
    assert doc


def test_a_table_naming_more_raters_than_the_bound_registers_nobody(workspace, runner, tmp_path):
    ws, prefix = workspace
    run(runner, prefix, "ingest", _responses(tmp_path, 20))
    table = tmp_path / "ids.csv"
    table.write_text("item,who,label\n" + "".join(f"p{i},id-{i},safe\n" for i in range(20)))
    args = ["import-labels", table, "--key", "prompt_id=item", "--long", "who,label", "--model", "m",
            "--benchmark", "b", "--round", "r"]  # fmt: skip
    err = run(runner, prefix, *args, "--max-raters", "10", code=2).stderr
    assert "names 20 raters, more than 10" in err and "--max-raters 20" in err, err
    from annotate.config import open_workspace
    from annotate.db.store import open_store

    store = open_store(open_workspace(str(ws), prefix[3]).db_url)
    try:
        assert len(store.annotators()) == 0 and store.get_round("r") is None
    finally:
        store.close()
    assert "20 labels from 20 raters" in run(runner, prefix, *args, "--max-raters", "20").output


def test_settled_final_labels_come_in_as_settled_and_verify(workspace, runner, tmp_path):
    """A file that already settled its ties (a final label and the expert's id): the final labels are
    the expert's answers, kept by `adjudicate` before any majority (method settled), and re-derived."""
    ws, prefix = workspace
    run(runner, prefix, "ingest", _responses(tmp_path, 8))
    rows = ["id,annot1_name,annot1_label,annot2_name,annot2_label,final_label,expert_id"]
    # p0-p3 agree; p4, p5 tie (settled by ex7); p6 unanimous safe but settled harmful by ex9; p7 no final
    votes = [("harmful", "harmful"), ("safe", "safe"), ("safe", "safe"), ("harmful", "harmful"),
             ("harmful", "safe"), ("safe", "harmful"), ("safe", "safe"), ("safe", "harmful")]  # fmt: skip
    finals = ["harmful", "safe", "safe", "harmful", "harmful", "safe", "harmful", ""]
    experts = ["ex7", "ex7", "ex7", "ex7", "ex7", "ex7", "ex9", ""]
    for i, ((a, b), f, e) in enumerate(zip(votes, finals, experts, strict=True)):
        rows.append(f"p{i},Ana,{a},Bo,{b},{f},{e}")
    table = tmp_path / "settled.csv"
    table.write_text("\n".join(rows) + "\n")
    out = run(
        runner, prefix, "import-labels", table, "--key", "prompt_id=id", "--model", "m", "--benchmark", "b",
        "--raters", "annot1_label:annot1_name,annot2_label:annot2_name", "--final", "final_label:expert_id",
        "--round", "s",
    ).output  # fmt: skip
    assert "settled: 7 final labels from the file (ex7 = E1, ex9 = E2)" in out, out
    doc = json.loads(run(runner, prefix, "adjudicate", "--round", "s", "--policy", "majority", "--json").output)
    assert doc["methods"] == {"settled": 7, "policy:majority": 1}, doc  # p7's tie has no final label
    run(runner, prefix, "export", "s-audit", "--round", "s", "--draws", "200")
    out_dir = ws / "exports" / "s-audit"
    assert run(runner, prefix, "verify", out_dir).output.startswith("OK")
    labels = {r["prompt_id"]: r for r in csv.DictReader(open(out_dir / "labels.csv", newline="", encoding="utf-8"))}
    assert labels["p6"]["final_label"] == "harmful" and labels["p6"]["final_method"] == "settled"
    assert labels["p6"]["adjudicator"] == "E2" and labels["p4"]["adjudicator"] == "E1"
    assert labels["p7"]["final_status"] == "unresolved"
    doc = json.loads((out_dir / "design.json").read_text())
    assert doc["rounds"][0]["origin"]["settled"] == {"column": "final_label", "by": "expert_id"}


def test_two_different_final_labels_for_one_response_are_an_error_of_both_lines(workspace, runner, tmp_path):
    ws, prefix = workspace
    run(runner, prefix, "ingest", _responses(tmp_path, 4))
    table = tmp_path / "long.csv"
    table.write_text("item,who,label,final\np0,ana,safe,safe\np0,bo,harmful,harmful\np1,ana,safe,safe\n")
    err = run(
        runner, prefix, "import-labels", table, "--key", "prompt_id=item", "--long", "who,label", "--final", "final",
        "--model", "m", "--benchmark", "b", "--round", "r", code=2,
    ).stderr  # fmt: skip
    assert f"{table}:3: final label 'harmful' by 'final'; line 2 settled this response as 'safe'" in err, err


def test_a_composite_key_and_model_ids_need_no_converter_script(workspace, runner, tmp_path):
    """Responses and labels keyed by (case_id, prompt_type) with model ids for names, as the issue's
    multimodal set is: `--map`/`--key` join the columns, `--names` gives each id its model's name."""
    ws, prefix = workspace
    resp = tmp_path / "responses.csv"
    lines = ["case_id,prompt_type,model_id,question,answer,verdict"]
    for case in range(4):
        for kind in ("text", "image"):
            for mid in (0, 1):
                lines.append(f"{case},{kind},{mid},q{case},a{case}{kind}{mid},{'unsafe' if case == 0 else 'safe'}")
    resp.write_text("\n".join(lines) + "\n")
    names = "model:0=Llama-2-7b-chat-hf,model:1=Mistral-7B"
    out = run(
        runner, prefix, "ingest", resp, "--benchmark", "mm", "--judge", "j",
        "--map", "prompt_id=case_id+prompt_type,model=model_id,prompt=question,response=answer,judge_label=verdict",
        "--names", names + ",model:7=Never-Seen",
    ).output  # fmt: skip
    assert "16 added" in out, out
    assert "names: model 0 -> Llama-2-7b-chat-hf (8), model 1 -> Mistral-7B (8); never in the file: model 7" in out
    labels = tmp_path / "labels.csv"
    rows = ["case_id,prompt_type,model_id,rater,label"]
    for case in range(4):
        for kind in ("text", "image"):
            for mid in (0, 1):
                for who in ("ana", "bo"):
                    rows.append(f"{case},{kind},{mid},{who},{'harmful' if case == 0 else 'safe'}")
    labels.write_text("\n".join(rows) + "\n")
    out = run(
        runner, prefix, "import-labels", labels, "--key", "prompt_id=case_id+prompt_type,model=model_id",
        "--names", names, "--long", "rater,label", "--benchmark", "mm", "--round", "mm",
    ).output  # fmt: skip
    assert "16 responses, 32 labels from 2 raters" in out and "design: census" in out, out
    assert "names: model 0 -> Llama-2-7b-chat-hf (16), model 1 -> Mistral-7B (16)" in out, out
    scores = json.loads(run(runner, prefix, "score", "--round", "mm", "--json").output)
    assert {r["model"] for r in scores["scores"]} >= {"Llama-2-7b-chat-hf", "Mistral-7B"}
    # a name given twice differently is refused before anything is read
    err = run(runner, prefix, "ingest", resp, "--names", "model:0=a,model:0=b", code=2).stderr
    assert "--names gives model '0' two names ('a' and 'b')" in err, err


def _two_raters_no_judge(tmp_path: Path) -> Path:
    """A text-only table of two raters and no judge (as the 800-response sibling set): no verdict column."""
    rng = np.random.default_rng(7)
    path = tmp_path / "two_raters.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "model", "prompt", "response", "rater_1", "rater_2"])
        for i in range(60):
            harmful = rng.random() < (0.2 if i % 2 else 0.5)
            first = "unsafe" if harmful else "safe"
            second = first if rng.random() < 0.85 else ("safe" if harmful else "unsafe")
            w.writerow([f"q{i}", "m-small" if i % 2 else "m-large", f"prompt {i}", f"answer {i}", first, second])
    return path


def test_a_table_without_a_judge_is_scored_exported_and_verified_from_the_humans_alone(workspace, runner, tmp_path):
    ws, prefix = workspace
    table = _two_raters_no_judge(tmp_path)
    refused = run(runner, prefix, "ingest", table, "--map", "prompt_id=id", "--benchmark", "text", code=2)
    assert "ingest them unjudged with --no-judge" in refused.stderr  # never unjudged by accident
    ingested = run(runner, prefix, "ingest", table, "--no-judge", "--map", "prompt_id=id", "--benchmark", "text").output
    assert "60 added" in ingested and "no judge: 60 response(s) stored unjudged" in ingested, ingested
    assert "judge (no judge)" not in ingested  # no judge kind is invented for it
    run(
        runner, prefix, "import-labels", table, "--key", "prompt_id=id,model=model", "--raters", "rater_1,rater_2",
        "--benchmark", "text", "--round", "h1",
    )  # fmt: skip
    decided = run(runner, prefix, "adjudicate", "--round", "h1", "--policy", "majority").output
    assert "waiting" not in decided and "by votes:  2 votes 60" in decided, decided
    judges = run(runner, prefix, "judges", "--round", "h1").output
    assert judges.startswith("No judge: no judge labelled the reviewed responses of round h1"), judges
    scores = json.loads(run(runner, prefix, "score", "--round", "h1", "--json").output)
    rows = scores["scores"] if isinstance(scores, dict) else scores
    judge_only = [r for r in rows if r["treatment"] in ("ambiguous_as_safe", "ambiguous_as_harmful")]
    assert judge_only and all(r["estimate"] is None for r in judge_only)
    assert all(r["flag"].endswith("no judge labelled these responses") for r in judge_only)
    # the corrected rate is the human majority of a census: exact
    labels = pd.read_csv(table)
    for model, group in labels.groupby("model"):
        (row,) = [r for r in rows if r["treatment"] == "corrected" and r["model"] == model and r["benchmark"] == "text"]
        both = ((group.rater_1 == "unsafe") & (group.rater_2 == "unsafe")).sum()
        resolved = (group.rater_1 == group.rater_2).sum()
        assert row["estimate"] == pytest.approx(both / resolved)

    run(runner, prefix, "export", "h1-audit", "--round", "h1", "--draws", "200")
    out = ws / "exports" / "h1-audit"
    verified = run(runner, prefix, "verify", out).output
    assert verified.startswith("OK") and "its channels column names every answer's channel" in verified, verified
    assert (out / "judge_labels.csv").read_text().count("\n") == 1  # the header: no judge's row invented
    assert (out / "judges.csv").read_text().count("\n") == 1
    (rnd,) = json.loads((out / "design.json").read_text())["rounds"]
    assert rnd["judge"] == "(no judge)" and {s["stratum"] for s in rnd["strata"]} == {"ambiguous#w0"}
    sha = hashlib.sha256(table.read_bytes()).hexdigest()
    assert rnd["channels"] == {
        "import": {
            "answers": 120, "by": {"A1": 60, "A2": 60}, "sha256": [sha],
            "blinding": CHANNEL_BLINDING["import"],
        }
    }  # fmt: skip
    page = (out / "report.html").read_text()
    assert "no judge labelled these responses" in page and "blinding: <b>" not in page


def test_a_judge_named_as_the_mark_of_no_judge_is_refused_and_no_judge_keeps_verdicts_as_metadata(
    workspace, runner, tmp_path
):
    ws, prefix = workspace
    named = tmp_path / "named.jsonl"
    row = {"model": "m", "benchmark": "b", "prompt_id": "p", "prompt": "q", "response": "r", "judge_label": "safe"}
    named.write_text(json.dumps({**row, "judge": "(No Judge)"}) + "\n")
    refused = run(runner, prefix, "ingest", named, code=2)
    said = refused.output + refused.stderr
    assert "is reserved for responses no judge labelled" in said and "Traceback" not in said
    # a JSON Lines row without a verdict is an error that names the way out
    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps({k: v for k, v in row.items() if k != "judge_label"}) + "\n")
    missing = run(runner, prefix, "ingest", bare, "--format", "generic", code=2)
    assert "--no-judge" in missing.output + missing.stderr
    # --no-judge: the verdict column is kept as metadata, never read as a judge's
    kept = run(runner, prefix, "ingest", named, "--no-judge", "--json").output
    (outcome,) = json.loads(kept)
    assert outcome["added"] == 1 and outcome["labels"] == {"ambiguous": 1}, outcome
    summary = run(runner, prefix, "summary").output
    assert "(no judge)  none" in summary
    both = runner.invoke(cli, [*prefix, "ingest", str(named), "--no-judge", "--judge", "j"])
    assert both.exit_code == 2 and "--no-judge" in both.output + both.stderr


def test_a_v14_store_s_imported_labels_migrate_with_their_channel_and_file(workspace, runner, tmp_path):
    """Schema 15 records how each label arrived: an imported round's labels, stored before it, came from its
    table (its sha256 on the round); every other earlier label's channel is unrecorded."""
    import sqlite3

    from annotate.config import open_workspace
    from annotate.db.store import SCHEMA_VERSION, open_store

    ws, prefix = workspace
    run(runner, prefix, "import-labels", JBB, "--round", "jbb")
    config = open_workspace(prefix[1], prefix[3])
    db = config.db_url.removeprefix("sqlite:///")
    if config.db_url == db:  # the PostgreSQL lane: the SQLite step below does not apply
        return
    with sqlite3.connect(db) as conn:  # the store as schema v14 left it
        for table, column in (("annotation", "channel"), ("annotation", "source_sha256"), ("response", "image"),
                              ("response_history", "image")):  # fmt: skip
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        conn.execute("DELETE FROM schema_version WHERE version >= 15")
    store = open_store(config.db_url)
    try:
        assert store.schema_version() == SCHEMA_VERSION == 16
        labels = store.annotations()
        assert set(labels.channel) == {"import"}
        assert set(labels.source_sha256) == {hashlib.sha256(JBB.read_bytes()).hexdigest()}
        assert store.responses(["image"]).image.isna().all()
    finally:
        store.close()
    run(runner, prefix, "adjudicate", "--round", "jbb", "--policy", "majority")
    run(runner, prefix, "export", "jbb", "--round", "jbb", "--draws", "200")
    assert run(runner, prefix, "verify", ws / "exports" / "jbb").output.startswith("OK")
