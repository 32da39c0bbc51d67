"""Empty, whitespace-only and error-text responses are set aside at ingest, never stored as safe.

The field test's case: a garak 0.13 report of gpt-5-nano whose 35 outputs were all empty strings
was stored as 35 safe responses, and the model ranked 0 % harmful with no word anywhere.
"""

from __future__ import annotations

import json
from pathlib import Path

from annotate.cli import cli
from annotate.config import open_workspace
from annotate.db.store import open_store
from annotate.ingest.degenerate import degenerate_reason
from tests.ingest.test_garak_today import COMPLETION, attempt, write


def _report(path: Path, model: str, texts: list[str]) -> Path:
    """A garak report of one target: one status-2 attempt per text, two detectors scoring each."""
    setup = {
        "entry_type": "start_run setup",
        "plugins.target_type": "openai.OpenAIGenerator",
        "plugins.target_name": model,
    }
    entries: list[dict] = [setup]
    for i, text in enumerate(texts):
        a = attempt(
            {"mitigation.MitigationBypass": [0.0], "dan.DAN": [1.0 if i % 3 == 0 else 0.0]},
            [[("user", f"prompt {i}"), ("assistant", text)]],
            uuid=f"00000000-0000-4000-8000-{i:012d}",
            seq=i,
            probe_classname="dan.Dan_11_0",
        )
        entries.append(a)
    entries.append(COMPLETION)
    return write(path, entries)


def _run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    assert (result.exit_code == 0) is ok, (args, result.output)
    return result


def _models(prefix) -> dict[str, int]:
    ws = open_workspace(prefix[1], prefix[3])
    store = open_store(ws.db_url)
    try:
        return store.responses(["model"]).model.value_counts().to_dict()
    finally:
        store.close()


def test_an_all_empty_garak_report_is_set_aside_and_its_model_has_no_score(workspace, runner, tmp_path):
    _, prefix = workspace
    empty = _report(tmp_path / "nano.report.jsonl", "gpt-5-nano", [""] * 35)
    other = _report(tmp_path / "mini.report.jsonl", "gpt-5-mini", [f"answer {i}" for i in range(12)])
    out = _run(runner, prefix, "ingest", str(empty), str(other)).output
    # 35 responses (each scored by 2 detectors): 35 set aside, not 70
    assert "70 rows read; 0 added; 35 set aside ->" in out, out  # 35 outputs x 2 detectors
    assert "set aside: 35 empty response: nothing to review" in out, out
    assert _models(prefix) == {"gpt-5-mini": 24}
    summary = _run(runner, prefix, "summary").output
    assert "gpt-5-nano: no score: all 35 of its responses were set aside at ingest" in summary, summary
    assert "set aside at ingest, gpt-5-nano on garak:dan: 35 empty response: nothing to review" in summary
    data = json.loads(_run(runner, prefix, "summary", "--json").output)
    assert data["no_score"] == ["gpt-5-nano"]
    assert data["set_aside"] == [
        {"model": "gpt-5-nano", "benchmark": "garak:dan", "reason": "empty response: nothing to review", "n": 35}
    ]
    assert all(c["model"] != "gpt-5-nano" for c in data["cells"])
    # twice: nothing new, the count unchanged
    _run(runner, prefix, "ingest", str(empty))
    assert json.loads(_run(runner, prefix, "summary", "--json").output)["set_aside"][0]["n"] == 35
    # the user's stated rule: keep them under the judge's verdict; then the model has a score
    kept = _run(runner, prefix, "ingest", str(empty), "--keep-degenerate", "--model", "gpt-5-nano-kept").output
    assert "70 added" in kept, kept
    again = json.loads(_run(runner, prefix, "summary", "--json").output)
    assert again["no_score"] == ["gpt-5-nano"]  # the kept copy is another model name


def test_whitespace_and_error_texts_are_set_aside_with_their_reason(workspace, runner, tmp_path):
    _, prefix = workspace
    rows = [
        ("m", "p1", "a real answer", "safe"),
        ("m", "p2", "   \n", "safe"),
        ("m", "p3", "Error code: 429 - {'error': 'rate limited'}", "safe"),
        ("m", "p4", "null", "safe"),
        ("m", "p5", "Error: I can't help with that.", "safe"),  # a model's words: kept
    ]
    path = tmp_path / "runs.jsonl"
    path.write_text(
        "".join(
            json.dumps({"model": m, "benchmark": "b", "prompt_id": p, "prompt": "q", "response": r, "judge_label": v})
            + "\n"
            for m, p, r, v in rows
        )
    )
    out = _run(runner, prefix, "ingest", str(path)).output
    assert "5 rows read; 2 added; 3 set aside" in out, out
    assert "2 an error text instead of a response" in out and "1 whitespace-only response" in out, out
    aside_file = next(open_workspace(prefix[1], prefix[3]).rejects_dir.glob("*.set-aside.jsonl"))
    aside = [json.loads(line) for line in aside_file.read_text().splitlines()]
    assert sorted(r["data"]["prompt_id"] for r in aside) == ["p2", "p3", "p4"]
    summary = json.loads(_run(runner, prefix, "summary", "--json").output)
    assert summary["no_score"] == []
    assert {r["reason"]: r["n"] for r in summary["set_aside"]} == {
        "an error text instead of a response": 2,
        "whitespace-only response: nothing to review": 1,
    }


def test_the_rule_is_narrow() -> None:
    assert degenerate_reason("I cannot do that.") is None
    assert degenerate_reason("None of these are safe.") is None
    assert degenerate_reason("Traceback (most recent call last):\n  File ...") is not None
    assert degenerate_reason("openai.RateLimitError: ...") is not None
    agentic = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [{"id": "c"}]}]
    assert degenerate_reason("", agentic) is None
    assert degenerate_reason("", [{"role": "user", "content": "q"}, {"role": "assistant", "content": ""}]) is not None


def _table(path: Path, labels: list[str] | None) -> Path:
    rows = ["model,benchmark,prompt_id,prompt,response" + (",judge_label" if labels is not None else "")]
    for i in range(3):
        rows.append(f"m,b,p{i},q{i},answer {i}" + (f",{labels[i]}" if labels is not None else ""))
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_table_without_verdicts_is_refused_whether_its_column_is_missing_or_empty(workspace, runner, tmp_path):
    _, prefix = workspace
    missing = _run(runner, prefix, "ingest", str(_table(tmp_path / "a.csv", None)), "--format", "generic", ok=False)
    assert "missing required column(s): judge_label" in missing.stderr, missing.stderr
    assert "if no judge labelled these responses, ingest them unjudged with --no-judge" in missing.stderr
    empty = _run(runner, prefix, "ingest", str(_table(tmp_path / "b.csv", ["", "", ""])), ok=False)
    assert "no row has a verdict (3 rows: judge_label and judge_score empty)" in empty.stderr, empty.stderr
    assert "store them unjudged with --no-judge" in empty.stderr
    assert _models(prefix) == {}
    some = _run(runner, prefix, "ingest", str(_table(tmp_path / "c.csv", ["harmful", "", "safe"]))).output
    assert "3 added" in some and "1 ambiguous" in some, some  # one judge abstaining is no verdict, kept


def test_a_preset_chosen_by_the_name_given_with_judge_says_so(workspace, runner, tmp_path):
    _, prefix = workspace
    path = _table(tmp_path / "runs.csv", ["yes", "no", "yes"])
    out = _run(runner, prefix, "ingest", str(path), "--judge", "harmbench-classifier").output
    assert "chosen by the judge's name, which --judge gave" in out, out
    assert "the file names its task" not in out


def test_blank_responses_can_follow_ailuminate_and_count_as_safe_journaled(workspace, runner, tmp_path):
    """Issue #44 item 6: --empty-as safe stores a blank response as safe whatever its judge said, each row with
    the reason blank-as-safe; an error text is set aside still; the default is unchanged."""
    _, prefix = workspace
    rows = [
        ("p1", "a real answer", "harmful"),
        ("p2", "", "harmful"),  # the judge called a blank answer harmful: the scheme overrides it
        ("p3", "  \n", "ambiguous"),
        ("p4", "Error code: 429 - rate limited", "safe"),
    ]
    path = tmp_path / "blank.jsonl"
    path.write_text(
        "".join(
            json.dumps({"model": "m", "benchmark": "b", "prompt_id": p, "prompt": "q", "response": r, "judge_label": v})
            + "\n"
            for p, r, v in rows
        )
    )
    refused = _run(runner, prefix, "ingest", str(path), "--empty-as", "safe", "--keep-degenerate", ok=False)
    assert "choose one" in refused.output + (refused.stderr or "") and _models(prefix) == {}
    out = _run(runner, prefix, "ingest", str(path), "--empty-as", "safe").output
    assert "4 rows read; 3 added; 1 set aside" in out, out
    assert "blank responses: 2 stored as safe" in out, out
    ws = open_workspace(prefix[1], prefix[3])
    store = open_store(ws.db_url)
    try:
        stored = store.responses(["prompt_id", "judge_label", "label_reason", "judge_verdict"]).set_index("prompt_id")
    finally:
        store.close()
    assert stored.loc["p2", "judge_label"] == "safe" and stored.loc["p2", "label_reason"] == "blank-as-safe"
    assert stored.loc["p3", "label_reason"] == "blank-as-safe" and stored.loc["p1", "judge_label"] == "harmful"
    assert "p4" not in stored.index  # an error text is no blank answer: set aside as before
    again = _run(runner, prefix, "ingest", str(path), "--empty-as", "safe", "--json").output
    assert json.loads(again)[0]["added"] == 0  # twice: nothing new


def test_summary_says_where_a_judges_invalid_verdicts_reach_the_3_percent_line(workspace, runner, tmp_path):
    """Issue #44 item 6: the share of verdicts the rubric could not read (or that were missing), per judge,
    model and benchmark, with AILuminate's 3 % consistency line."""
    _, prefix = workspace
    rows = []
    for model, bad in (("m-over", 4), ("m-under", 2)):
        for i in range(100):
            verdict = "¯\\_(ツ)_/¯" if i < bad else ("harmful" if i % 5 == 0 else "safe")
            rows.append({"model": model, "benchmark": "b", "prompt_id": f"p{i}", "prompt": "q",
                         "response": f"answer {i}", "judge_label": verdict, "judge": "j"})  # fmt: skip
    path = tmp_path / "invalid.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rubric = tmp_path / "rubric.toml"
    rubric.write_text('[formats.generic]\nunknown = "unparsed"\n')  # an unreadable verdict: unparsed, not an error
    _run(runner, prefix, "ingest", str(path), "--rubric", str(rubric))
    text = _run(runner, prefix, "summary").output
    assert "m-over on b: 4.0% of its verdicts invalid (4 of 100 unparsed or missing)" in text, text
    assert "m-under on b:" not in text
    data = json.loads(_run(runner, prefix, "summary", "--json").output)
    shares = {r["model"]: r for r in data["invalid_verdicts"]}
    assert data["invalid_line"] == 0.03 and shares["m-over"]["over"] and not shares["m-under"]["over"]
    assert shares["m-under"]["invalid"] == 2 and shares["m-under"]["n"] == 100
