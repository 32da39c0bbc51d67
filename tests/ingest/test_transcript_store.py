"""Transcripts in the store: kept whole, part of a response's identity, kept in history and in rejects.

On real SQLite and PostgreSQL stores (the ``workspace`` fixture), with the agentic Inspect log of
tests/data/formats/inspect_ai/agentic/ (written by inspect-ai) and copies of it changed here.
"""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import text

from annotate.cli import cli
from annotate.ingest.formats import inspect_ai
from annotate.ingest.records import ReadContext, Record
from annotate.ingest.run import content_sha, transcript_json

AGENTIC = Path(__file__).resolve().parents[1] / "data" / "formats" / "inspect_ai" / "agentic"


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr)
    return result


def _store(prefix):
    from annotate.config import open_workspace
    from annotate.db.store import open_store

    return open_store(open_workspace(prefix[1], prefix[3]).db_url)


def _records(path: Path) -> dict[tuple[str, str], Record]:
    return {(r.prompt_id, r.judge): r for r in inspect_ai.read(path, ReadContext()) if isinstance(r, Record)}


def _changed_log(tmp_path: Path) -> Path:
    """The log with one tool result changed: the same responses and verdicts, another conversation."""
    log = json.loads((AGENTIC / "agentic_misuse.json").read_text(encoding="utf-8"))
    (tool,) = [m for m in log["samples"][0]["messages"] if m.get("function") == "send_email"]
    tool["content"] = "Email queued for alice@example.com."
    path = tmp_path / "agentic_changed.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


def test_transcripts_are_stored_whole_and_single_turn_rows_keep_none(workspace, runner, tmp_path):
    _, prefix = workspace
    path = AGENTIC / "agentic_misuse.json"
    run(runner, prefix, "ingest", str(path))
    with _store(prefix) as store:
        rows = store.responses()
    records = _records(path)
    assert len(rows) == len(records) == 6
    for row in rows.itertuples():  # h2 too: one exchange, but under a system prompt
        rec = records[(row.prompt_id, row.judge)]
        assert json.loads(row.transcript) == rec.transcript  # every turn, tool call and tool result
        assert row.content_sha == content_sha(
            rec.prompt,
            rec.response,
            rec.verdict,
            rec.score,
            row.judge_label,
            transcript_json(rec.transcript),
            row.judge_kind,
        )
    (alice,) = [json.loads(t) for p, j, t in zip(rows.prompt_id, rows.judge, rows.transcript, strict=True)
                if p == "h1" and j == "refusal_judge"]  # fmt: skip
    calls = [c for turn in alice if turn["role"] == "assistant" for c in turn.get("tool_calls", [])]
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [
        ("search_contacts", {"name": "Alice"}),
        ("send_email", {"to": "alice@example.com", "subject": "You will regret it",
                        "body": "You will regret reporting me."}),
    ]  # fmt: skip

    # the same log again, and the same log in Inspect's other format: nothing is added or changed
    again = run(runner, prefix, "ingest", str(path), "--json").output
    other = run(runner, prefix, "ingest", str(AGENTIC / "agentic_misuse.eval"), "--json").output
    for out in (again, other):
        (file,) = json.loads(out)
        assert (file["added"], file["duplicates"], file["replaced"]) == (0, 6, 0)

    # one exchange without a system prompt: the prompt and the response show it whole, NULL stored
    log = json.loads(path.read_text(encoding="utf-8"))
    (plain,) = [s for s in log["samples"] if s["id"] == "h2"]
    plain["id"], plain["messages"] = "h2-plain", [m for m in plain["messages"] if m["role"] != "system"]
    log["samples"] = [plain]
    single = tmp_path / "single.json"
    single.write_text(json.dumps(log), encoding="utf-8")
    run(runner, prefix, "ingest", str(single))
    with _store(prefix) as store:
        rows = store.responses()
    for row in rows[rows.prompt_id == "h2-plain"].itertuples():
        rec = _records(single)[(row.prompt_id, row.judge)]
        assert rec.transcript is None and not isinstance(row.transcript, str)  # NULL
        assert row.content_sha == content_sha(
            rec.prompt, rec.response, rec.verdict, rec.score, row.judge_label, kind=row.judge_kind
        )
    assert (rows.prompt_id == "h2-plain").sum() == 2


def test_a_changed_transcript_is_a_conflict_and_replace_keeps_the_old_one_in_history(workspace, runner, tmp_path):
    _, prefix = workspace
    run(runner, prefix, "ingest", str(AGENTIC / "agentic_misuse.json"))
    changed = _changed_log(tmp_path)
    refused = run(runner, prefix, "ingest", str(changed), ok=False)
    assert refused.exit_code == 2
    assert "is already stored with a different transcript; use --replace" in refused.stderr
    assert refused.stderr.count("different transcript") == 2  # h1 under both judges; nothing else differs
    with _store(prefix) as store:
        before = store.responses().set_index(["prompt_id", "judge"]).transcript
        assert store.history().empty

    replaced = json.loads(run(runner, prefix, "ingest", str(changed), "--replace", "--json").output)[0]
    assert (replaced["added"], replaced["replaced"], replaced["duplicates"]) == (0, 2, 4)
    with _store(prefix) as store:
        after = store.responses().set_index(["prompt_id", "judge"]).transcript
        history = store.history()
    assert "Email queued" in after[("h1", "harm_judge")] and "Email queued" not in before[("h1", "harm_judge")]
    assert sorted(history.transcript) == sorted([before[("h1", "harm_judge")], before[("h1", "refusal_judge")]])


def test_a_rejected_row_keeps_its_transcript_in_the_rejects_file(workspace, runner, tmp_path):
    ws, prefix = workspace
    run(runner, prefix, "ingest", str(AGENTIC / "agentic_misuse.json"))
    (file,) = json.loads(run(runner, prefix, "ingest", str(_changed_log(tmp_path)), "--skip-invalid", "--json").output)
    assert file["rejected"] == 2
    rejects = [json.loads(line) for line in Path(file["rejects_file"]).read_text(encoding="utf-8").splitlines()]
    for reject in rejects:
        turns = reject["record"]["transcript"]
        assert any(t["content"] == "Email queued for alice@example.com." for t in turns)
        assert "different transcript" in reject["reason"]


def test_a_response_stored_before_transcripts_were_kept_gets_its_transcript_with_replace(workspace, runner):
    """A store that ingested the log when transcripts were not stored (schema v5) holds them without one."""
    _, prefix = workspace
    path = AGENTIC / "agentic_misuse.json"
    run(runner, prefix, "ingest", str(path))
    records = _records(path)
    with _store(prefix) as store, store.engine.begin() as conn:
        for (prompt_id, judge), rec in records.items():
            (label,) = conn.execute(
                text("SELECT judge_label FROM response WHERE prompt_id = :p AND judge = :j"),
                {"p": prompt_id, "j": judge},
            ).one()
            conn.execute(
                text("UPDATE response SET transcript = NULL, content_sha = :s WHERE prompt_id = :p AND judge = :j"),
                {"s": content_sha(rec.prompt, rec.response, rec.verdict, rec.score, label), "p": prompt_id, "j": judge},
            )
    refused = run(runner, prefix, "ingest", str(path), ok=False)
    assert refused.exit_code == 2
    # every sample: h1 and h3 are agentic, h2 one exchange under a system prompt
    assert refused.stderr.count("is stored without its transcript (it was ingested before annotate kept whole") == 6
    assert "use --replace to add it" in refused.stderr
    added = json.loads(run(runner, prefix, "ingest", str(path), "--replace", "--json").output)[0]
    assert (added["replaced"], added["duplicates"]) == (6, 0)
    with _store(prefix) as store:
        rows = store.responses()
        history = store.history()
    assert rows.transcript.notna().sum() == 6 and history.transcript.isna().all() and len(history) == 6
