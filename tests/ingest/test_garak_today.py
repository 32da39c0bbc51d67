"""garak as it is today (issue #24, part 1): the reports of garak 0.14 and of the early-stop fork.

The reports are DERIVED (tests/data/formats/garak/make_today.py, with garak's own ``Attempt``
class of each version; see tests/data/formats/PROVENANCE.md). Before: a report of the early-stop
fork (garak 0.14.1.pre1, intent probes, ``judge.ModelAsJudge`` and ``judge.Refusal``) was refused
attempt by attempt (``must be a number, got list``) and added 0 rows with ``--skip-invalid``, so the
``garak-refusal`` preset never applied; a REST target's run was filed under the model ``rest``, two
runs of it collided and the message said ``--replace``; a null reply in a conversation refused the
attempt; an interrupted run ingested silently, and one interrupted before any attempt was scored
added "0 rows" with exit 0.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from annotate.cli import cli
from annotate.config import open_workspace
from annotate.db.store import open_store
from annotate.ingest.formats import garak
from annotate.ingest.records import Problem, ReadContext, Record, SetAside
from tests.data_files import FORMATS

GARAK = FORMATS / "garak"
REST = GARAK / "rest_v0.14.derived.report.jsonl"
ABORTED = GARAK / "aborted_v0.14.derived.report.jsonl"
V010 = GARAK / "v0.10.derived.report.jsonl"
EARLYSTOP = GARAK / "earlystop_v0.14.1.derived.report.jsonl"
NESTED = GARAK / "nested_v0.16.derived.report.jsonl"
FORK_JUDGE, FORK_REFUSAL = "garak.detectors.judge.ModelAsJudge", "garak.detectors.judge.Refusal"
#: What the REST fixtures hold that is a credential or a query: never shown, never stored.
SECRETS = (
    "PLACEHOLDER-CREDENTIAL",
    "PLACEHOLDER-PASSWORD",
    "PLACEHOLDER-KEY",
    "PLACEHOLDER-HEADER",
    "svc-user",
    "api_key",
)


def read(path: Path, **options: Any) -> tuple[list[Any], ReadContext]:
    ctx = ReadContext(**options)
    return list(garak.read(path, ctx)), ctx


def records(items: list[Any]) -> list[Record]:
    return [i for i in items if isinstance(i, Record)]


def of(items: list[Any], kind: type) -> list[Any]:
    return [i for i in items if isinstance(i, kind)]


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (args, result.output, result.stderr if result.stderr_bytes else "")
    else:
        assert result.exit_code == 2, (args, result.output, repr(result.exception))
        assert all(line.startswith("Error: ") for line in result.stderr.splitlines()), result.stderr
    return result


def stored(prefix, columns=("model", "prompt_id", "epoch", "judge", "judge_score", "judge_label", "label_reason")):
    ws = open_workspace(prefix[1], prefix[3])
    store = open_store(ws.db_url)
    try:
        frame = store.responses(list(columns))
    finally:
        store.close()
    none = lambda v: None if isinstance(v, float) and math.isnan(v) else v  # noqa: E731 (pandas gives NaN for NULL)
    return sorted((tuple(none(v) for v in row) for row in frame.itertuples(index=False)), key=repr)


# -- the early-stop fork: nested scores, intents, the harness's own lines --------------------------


def test_the_early_stop_report_gives_one_row_per_output_and_detector() -> None:
    """Before: every attempt a problem, ``detector_results[...][0] must be a number, got list``."""
    items, ctx = read(EARLYSTOP)
    assert of(items, Problem) == []
    got = {(r.prompt_id, r.epoch, r.judge): (r.score, r.verdict) for r in records(items)}
    assert got == {
        ("base.IntentProbe:0", 0, FORK_JUDGE): (1.0, "hit"),
        ("base.IntentProbe:0", 0, FORK_REFUSAL): (1.0, "hit"),
        ("base.IntentProbe:1", 0, FORK_JUDGE): (0.0, "pass"),
        ("base.IntentProbe:1", 0, FORK_REFUSAL): (0.0, "pass"),
        # [[0.0, 1.0]]: the one inner list holds the scores of the two outputs, in order
        ("spo.SPOIntent:0", 0, FORK_JUDGE): (0.0, "pass"),
        ("spo.SPOIntent:0", 1, FORK_JUDGE): (1.0, "hit"),
        ("spo.SPOIntent:0", 0, FORK_REFUSAL): (0.0, "pass"),
        ("spo.SPOIntent:0", 1, FORK_REFUSAL): (1.0, "hit"),
    }
    spo = next(r for r in records(items) if r.prompt_id == "spo.SPOIntent:0" and r.epoch == 1)
    assert spo.response == "Sure, here is a placeholder prank: [placeholder]."
    assert (spo.model, spo.benchmark, spo.category) == ("placeholder-model-24b", "garak:spo", "spo.SPOIntent")
    assert (spo.meta["intent"], spo.meta["stub"]) == ("T999other", "Describe a placeholder prank")
    aside = of(items, SetAside)
    harness = [a for a in aside if a.data.get("probe") == "garak.harnesses.earlystop.EarlyStopHarness"]
    assert [a.line for a in harness] == [10, 11]
    assert harness[0].reason.startswith("the early-stop harness's verdict on an intent stub")
    assert [(a.data["intent"], a.data["detector_results"]) for a in harness] == [
        ("T999test", {"EarlyStop": [1.0]}),
        ("T999other", {"EarlyStop": [0.0]}),
    ]
    (orphan,) = [a for a in aside if a not in harness]
    assert (orphan.line, orphan.reason, orphan.data["seq"]) == (5, garak.UNFINISHED, 2)
    assert ctx.notes == [
        "1 attempt(s) started and never scored (no status-2 line), though the run completed: set aside"
    ]


def test_a_garak_014_intent_probe_report_ingests_with_its_refusal_detector_ambiguous(workspace, runner):
    """The issue's 'done when': one row per output, the refusal detector's hits ambiguous."""
    _, prefix = workspace
    out = run(runner, prefix, "ingest", str(EARLYSTOP)).output
    assert "8 added; 3 set aside" in out
    assert "rubric preset garak-refusal for judge 'garak.detectors.judge.Refusal'" in out
    labels = {(pid, epoch, judge): (label, reason) for _, pid, epoch, judge, _, label, reason in stored(prefix)}
    assert {v for (_, _, j), v in labels.items() if j == FORK_REFUSAL} == {
        ("ambiguous", "refusal detector"),  # 1.0: answered, no refusal found
        ("safe", "mapped"),  # 0.0: refused
    }
    assert labels[("spo.SPOIntent:0", 1, FORK_JUDGE)] == ("harmful", "mapped")  # the judge rated the goal achieved
    assert labels[("spo.SPOIntent:0", 0, FORK_JUDGE)] == ("safe", "mapped")
    assert len(labels) == 8


@pytest.mark.parametrize("key", ["judge.Refusal", "garak.detectors.judge.Refusal", "detector.judge.Refusal"])
def test_the_refusal_preset_applies_whatever_the_detector_key_prefix(workspace, runner, tmp_path, key):
    _, prefix = workspace
    entries = lines(EARLYSTOP)
    for entry in entries:
        results = entry.get("detector_results")
        if isinstance(results, dict) and FORK_REFUSAL in results:
            entry["detector_results"] = {key: results[FORK_REFUSAL]}
    out = run(runner, prefix, "ingest", str(write(tmp_path / "keys.report.jsonl", entries))).output
    assert f"rubric preset garak-refusal for judge '{key}'" in out
    assert {(label, reason) for *_, score, label, reason in stored(prefix) if score == 1.0} == {
        ("ambiguous", "refusal detector")
    }


# -- which output a score belongs to ---------------------------------------------------------------


def test_one_list_per_conversation_and_per_turn_lists_are_garaks_indexing() -> None:
    items, _ = read(NESTED)
    recs = records(items)
    grandma = {(r.epoch, r.judge): r.score for r in recs if r.prompt_id == "grandma.GrandmaIntent:0"}
    assert grandma == {
        (0, "judge.ModelAsJudge"): 1.0,
        (0, "judge.Refusal"): 1.0,
        (1, "judge.ModelAsJudge"): 0.0,
        (1, "judge.Refusal"): 0.0,
    }
    # [[1.0, 1.0], [1.0, 0.0]]: two conversations of two assistant turns each, every turn scored
    fitd = sorted((r.epoch, r.score, r.response) for r in recs if r.prompt_id == "fitd.FITD:0")
    assert fitd == [
        (0, 1.0, "A stand-in for something else."),
        (1, 1.0, "The secret word was [placeholder]."),
        (2, 1.0, "A stand-in for something else."),
        (3, 0.0, "I won't make up secrets."),
    ]
    turn = next(r for r in recs if r.prompt_id == "fitd.FITD:0" and r.epoch == 3)
    assert [t["content"] for t in turn.transcript] == [
        "What is a placeholder?",
        "A stand-in for something else.",
        "Now use one in a sentence about a secret.",
        "I won't make up secrets.",
    ]
    (problem,) = of(items, Problem)
    assert (problem.line, problem.message) == (
        8,
        "attempt: detector_results['judge.Refusal'] holds 1 list(s) of scores (of 3), where the attempt has "
        "2 output(s): the scores cannot be matched to the outputs",
    )


def attempt(
    detectors: dict[str, Any], conversations: list[list[tuple[str, str | None]]], **over: Any
) -> dict[str, Any]:
    """A garak 0.14-shaped status-2 attempt: its outputs are the last assistant turn of each conversation."""

    def turn(role: str, text: str | None) -> dict[str, Any]:
        return {"role": role, "content": None if text is None else {"text": text, "lang": "en"}}

    convs = [{"turns": [turn(role, text) for role, text in c], "notes": {}} for c in conversations]
    outputs = [next(t["content"] for t in reversed(c["turns"]) if t["role"] == "assistant") for c in convs]
    return {
        "entry_type": "attempt",
        "uuid": "00000000-0000-4000-8000-000000000001",
        "seq": 0,
        "status": 2,
        "probe_classname": "test.Probe",
        "prompt": {"turns": [turn(*conversations[0][0])]},
        "outputs": outputs,
        "detector_results": detectors,
        "notes": {},
        "goal": "a placeholder goal",
        "conversations": convs,
        **over,
    }


SETUP = {"entry_type": "start_run setup", "plugins.target_type": "test.Blank", "plugins.target_name": "m"}
COMPLETION = {"entry_type": "completion"}
ONE_TURN = [[("user", "q"), ("assistant", "a0")], [("user", "q"), ("assistant", "a1")]]
TWO_TURNS = [[("user", "q"), ("assistant", "b0"), ("user", "q2"), ("assistant", "a0")]]


@pytest.mark.parametrize(
    ("scores", "conversations", "expected"),
    [
        ([0.2, 0.9], ONE_TURN, [("a0", 0.2), ("a1", 0.9)]),  # upstream garak: one score per output
        ([[0.2, 0.9]], ONE_TURN, [("a0", 0.2), ("a1", 0.9)]),  # the early-stop fork
        ([[0.2], [0.9]], ONE_TURN, [("a0", 0.2), ("a1", 0.9)]),  # one list per conversation
        ([[None], [0.9]], ONE_TURN, [("a0", None), ("a1", 0.9)]),
        ([0.7], TWO_TURNS, [("a0", 0.7)]),  # 0.13.2 on: the latest output of a multi-turn attempt
        ([0.1, 0.7], TWO_TURNS, [("b0", 0.1), ("a0", 0.7)]),  # 0.13.1 and earlier: every assistant turn
        ([[0.1, 0.7]], TWO_TURNS, [("b0", 0.1), ("a0", 0.7)]),  # one list per conversation, per turn
        ([None, None], TWO_TURNS, [("a0", None)]),  # RefusalOnlyAdversarial skipping: no verdict
    ],
)
def test_scores_go_to_the_output_garak_gives_them(tmp_path, scores, conversations, expected):
    path = write(tmp_path / "r.report.jsonl", [SETUP, attempt({"judge.Refusal": scores}, conversations), COMPLETION])
    items, _ = read(path)
    assert [(r.response, r.score) for r in items] == expected
    assert [r.epoch for r in items] == list(range(len(expected)))
    assert [r.verdict for r in items] == [None if s is None else ("hit" if s >= 0.5 else "pass") for _, s in expected]


@pytest.mark.parametrize(
    ("detectors", "message"),
    [
        ({"d": [0.1, 0.2, 0.3]}, "detector_results['d'] holds 3 score(s), where the attempt has 2 output(s)"),
        ({"d": [[0.1, 0.2], [0.3, 0.4]]}, "holds 2 list(s) of scores (of 2, 2), where the attempt has 2 output(s)"),
        ({"d": [0.1, [0.2]]}, "detector_results['d'] mixes scores and lists of scores (1 score(s) and 1 list(s))"),
        ({"d": {"a": 1}}, "detector_results['d'] must be a list of scores, got dict"),
        ({"d": [[0.1, "high"]]}, "detector_results['d'] score 1 must be a number, got str"),
    ],
)
def test_scores_that_fit_no_output_are_a_problem_of_the_attempt(tmp_path, detectors, message):
    path = write(tmp_path / "r.report.jsonl", [SETUP, attempt(detectors, ONE_TURN), COMPLETION])
    items, _ = read(path)
    problems = of(items, Problem)
    assert problems and all(p.line == 2 for p in problems)
    assert message in problems[0].message


@pytest.mark.parametrize(
    ("version", "expected"), [("0.13.1", [("b0", None), ("a0", None)]), ("0.14.0", [("a0", None)])]
)
def test_a_list_of_nulls_is_read_by_what_the_reports_garak_scored(tmp_path, version, expected):
    """judge.RefusalOnlyAdversarial's skip, [None] * len(all_outputs): garak 0.13.1 and earlier
    scored every assistant turn, later ones the latest outputs (Attempt.outputs_for)."""
    setup = SETUP | {"_config.version": version}
    path = write(tmp_path / "r.report.jsonl", [setup, attempt({"d": [None, None]}, TWO_TURNS), COMPLETION])
    assert [(r.response, r.score) for r in read(path)[0]] == expected


def test_detectors_that_scored_different_things_are_a_problem(tmp_path):
    path = write(tmp_path / "r.report.jsonl", [SETUP, attempt({"x": [0.1], "y": [0.1, 0.7]}, TWO_TURNS), COMPLETION])
    (problem,) = read(path)[0]
    assert problem.message == (
        "attempt: the detectors scored different things: 'x' one score per output (1), 'y' one per assistant turn (2)"
    )


def test_an_attempt_no_detector_scored_is_set_aside(tmp_path):
    path = write(tmp_path / "r.report.jsonl", [SETUP, attempt({}, ONE_TURN), COMPLETION])
    (aside,) = read(path)[0]
    assert isinstance(aside, SetAside) and aside.reason == "no detector scored this attempt (detector_results is empty)"


# -- garak 0.14 against a REST endpoint -------------------------------------------------------------


def test_a_rest_target_is_named_by_its_generator_and_the_ingest_says_so(workspace, runner):
    """Before: model ``rest``, no word of it; the null reply in a conversation refused the attempt
    (``conversation turn 2 has no text``)."""
    _, prefix = workspace
    out = run(runner, prefix, "ingest", str(REST)).output
    assert "9 rows read; 8 added; 1 set aside" in out
    assert (
        "model 'placeholder-chat-service' from plugins.generators.rest.RestGenerator.name: the report names no "
        "target (plugins.target_name is empty); pass --model NAME to name it"
    ) in out
    rows = stored(prefix)
    assert {r[0] for r in rows} == {"placeholder-chat-service"}
    # the multi-turn fitd attempt: 0.14 scores its latest output only; RefusalOnlyAdversarial skipped it
    assert [r[1:] for r in rows if r[1] == "fitd.FITD:0"] == [
        ("fitd.FITD:0", 0, "judge.Refusal", 1.0, "ambiguous", "refusal detector"),
        ("fitd.FITD:0", 0, "judge.RefusalOnlyAdversarial", None, "ambiguous", "missing"),
    ]
    assert not any(secret in out for secret in SECRETS)


def test_the_uri_of_a_rest_target_names_it_without_credentials_or_query(workspace, runner, tmp_path):
    ws, prefix = workspace
    out = run(runner, prefix, "ingest", str(NESTED), "--skip-invalid").output
    assert (
        "model 'chat.example.invalid:8443/v2/chat' from plugins.generators.rest.RestGenerator.uri (its host and path)"
        in out
    )
    as_json = run(runner, prefix, "ingest", str(NESTED), "--skip-invalid", "--json").output
    files = [p.read_text(encoding="utf-8") for p in (ws / "rejects").iterdir()]
    rows = stored(prefix, ("model", "prompt", "response", "meta", "transcript"))
    for text in (out, as_json, *files, json.dumps(rows)):
        assert not any(secret in text for secret in SECRETS), text
    # a URI given as the target name (garak's REST generator takes one) is cut the same way
    setup = lines(NESTED)[0] | {"plugins.target_name": "https://u:PLACEHOLDER-PASSWORD@host.invalid/chat?api_key=x"}
    assert garak.setup_model(setup, NESTED) == ("host.invalid/chat", "plugins.target_name, a URI (its host and path)")


@pytest.mark.parametrize(
    ("plugins", "name", "expected"),
    [
        (
            {"plugins.target_type": "rest", "plugins.generators": {}},
            "garak.4f1e.report.jsonl",
            ("3f0c6a2e-0000-4000-8000-000000000014", "the run's transient.run_id"),
        ),
        (
            {
                "plugins.target_type": "function",
                "plugins.generators": {"function": {"Single": {"name": "mymodule#answer"}}},
            },
            "x.report.jsonl",
            ("mymodule#answer", "plugins.generators.function.Single.name"),
        ),
        (
            {"plugins.target_type": "rest.RestGenerator", "plugins.generators": {"rest": {"name": "svc"}}},
            "x.report.jsonl",
            ("svc", "plugins.generators.rest.name"),
        ),
        (
            {"plugins.target_type": "test", "plugins.generators": None},
            "x.report.jsonl",
            ("test", "plugins.target_type"),
        ),
        ({"plugins.model_type": "huggingface", "plugins.model_name": "gpt2"}, "x.report.jsonl", ("gpt2", None)),
    ],
)
def test_the_model_of_an_unnamed_target_comes_from_what_the_report_carries(plugins, name, expected):
    setup = {"entry_type": "start_run setup", "transient.run_id": "3f0c6a2e-0000-4000-8000-000000000014", **plugins}
    assert garak.setup_model(setup, Path(name)) == expected
    del setup["transient.run_id"]
    if expected[1] == "the run's transient.run_id":
        assert garak.setup_model(setup, Path(name)) == ("garak.4f1e", "the report file's name")


def second_run(tmp_path: Path) -> Path:
    """Another run of the same probes against the same REST target: other replies, another run id."""
    entries = lines(REST)
    entries[0]["transient.run_id"] = "3f0c6a2e-0000-4000-8000-0000000000ff"
    for entry in entries:
        if (
            entry.get("entry_type") == "attempt"
            and entry["seq"] == 0
            and entry["probe_classname"] == "dan.DanInTheWild"
        ):
            entry["outputs"][0]["text"] = "A different reply in run 2."
            entry["conversations"][0]["turns"][-1]["content"]["text"] = "A different reply in run 2."
    return write(tmp_path / "garak.run2.report.jsonl", entries)


def test_two_runs_of_one_rest_target_do_not_collide_silently_and_the_fix_is_model(workspace, runner, tmp_path):
    """Before: the message said --replace, which would overwrite run 1 with run 2."""
    _, prefix = workspace
    run(runner, prefix, "ingest", str(REST))
    refused = run(runner, prefix, "ingest", str(second_run(tmp_path)), ok=False).stderr
    assert (
        "two runs of one target: this report names its model only by plugins.generators.rest.RestGenerator.name"
        in refused
    )
    assert "ingest each run with its own --model NAME" in refused
    assert "use --replace" not in refused and "pass --replace" not in refused
    run(runner, prefix, "ingest", str(second_run(tmp_path)), "--model", "placeholder-chat-service-run2")
    assert {r[0] for r in stored(prefix)} == {"placeholder-chat-service", "placeholder-chat-service-run2"}


def test_the_same_run_read_with_another_rubric_is_still_a_replace(workspace, runner, tmp_path):
    """Only the reading changed (judge_label): the same responses, so the fix is --replace, not --model."""
    _, prefix = workspace
    run(runner, prefix, "ingest", str(REST))
    rubric = tmp_path / "rubric.toml"
    rubric.write_text('[formats.garak.judges."*judge.ModelAsJudge".verdicts]\n"hit" = "ambiguous"\n', encoding="utf-8")
    refused = run(runner, prefix, "ingest", str(REST), "--rubric", str(rubric), ok=False).stderr
    assert "use --replace to overwrite" in refused and "two runs of one target" not in refused
    run(runner, prefix, "ingest", str(REST), "--rubric", str(rubric), "--replace")


def test_two_runs_of_one_rest_target_in_one_command_say_the_same(workspace, runner, tmp_path):
    _, prefix = workspace
    refused = run(runner, prefix, "ingest", str(REST), str(second_run(tmp_path)), ok=False).stderr
    assert "comes with different content in an earlier file of this command: two runs of one target" in refused
    assert "or ingest each run with its own --model NAME (two runs of one target share their keys)." in refused
    assert "--replace" not in refused.replace("(--replace would overwrite the other run's responses)", "")


# -- interrupted and empty runs ---------------------------------------------------------------------


def test_an_interrupted_run_says_so(workspace, runner):
    """Before: "4 added; 3 set aside" and nothing on why."""
    _, prefix = workspace
    out = run(runner, prefix, "ingest", str(ABORTED)).output
    assert "7 rows read; 4 added; 3 set aside" in out
    assert (
        "this garak run was interrupted (no completion line): 2 attempt(s) complete, 3 started and never scored "
        "(set aside)"
    ) in out


def test_a_run_interrupted_before_any_attempt_was_scored_is_refused_with_why(workspace, runner, tmp_path):
    """Before: "0 rows read; 0 added", exit 0. Now a problem, which --skip-invalid skips, as an empty
    promptfoo export or an Inspect log without samples."""
    _, prefix = workspace
    path = write(tmp_path / "cut.report.jsonl", lines(ABORTED)[:4])  # setup, init, two status-1 attempts
    refused = run(runner, prefix, "ingest", str(path), ok=False).stderr
    assert (
        f"Error: {path}:1: this garak run was interrupted (no completion line) before any attempt was scored: "
        "2 attempt(s) started and never scored (set aside); nothing to ingest. Run the probes again"
    ) in refused
    done = run(runner, prefix, "ingest", str(path), "--skip-invalid").output
    assert "0 added; 1 rejected" in done and "2 set aside" in done
    assert "this garak run was interrupted (no completion line): 0 attempt(s) complete, 2 started" in done


def test_a_completed_run_with_only_unscored_attempts_is_refused_with_why(workspace, runner, tmp_path):
    _, prefix = workspace
    path = write(tmp_path / "unscored.report.jsonl", [*lines(ABORTED)[:4], COMPLETION])
    refused = run(runner, prefix, "ingest", str(path), ok=False).stderr
    assert (
        "no attempt of this garak run was scored: 2 attempt(s) started and never scored (set aside), none has a "
        "status-2 line with detector results; nothing to ingest"
    ) in refused


def test_aggregate_lines_are_skipped_and_unknown_ones_are_said(tmp_path):
    extra = [
        {"entry_type": "plugin_cache", "run": "r", "plugin_cache": {}},
        {"entry_type": "payload_init", "payload_name": "placeholder"},
        {"entry_type": "tree_data", "probe": "test.Probe", "node_id": 0},
        {"entry_type": "probe_summary", "probe": "test.Probe", "inference_counts": {}},
        {"entry_type": "harness_stub_summary", "harness": "h", "intent": "T999test", "accepted": True},
        {"entry_type": "harness_summary", "harness": "h", "total_stubs": 1},
        {"entry_type": "a_future_line", "what": "placeholder"},
    ]
    path = write(tmp_path / "r.report.jsonl", [SETUP, *extra, attempt({"d": [0.1, 0.9]}, ONE_TURN), COMPLETION])
    items, ctx = read(path)
    assert len(records(items)) == len(items) == 2
    assert ctx.notes == ["skipped lines of entry types this reader does not know (not attempts): 1 'a_future_line'"]


def test_garak_010_reports_still_read(workspace, runner):
    _, prefix = workspace
    out = run(runner, prefix, "ingest", str(V010)).output
    assert "4 rows read; 4 added" in out and "model '" not in out  # named by plugins.model_name: no note
    assert [r[:4] for r in stored(prefix)] == [
        ("gpt2", "dan.Dan_11_0:0", 0, "dan.DAN"),
        ("gpt2", "dan.Dan_11_0:0", 0, "mitigation.MitigationBypass"),
        ("gpt2", "dan.Dan_11_0:0", 1, "dan.DAN"),
        ("gpt2", "dan.Dan_11_0:0", 1, "mitigation.MitigationBypass"),
    ]


# -- translated runs: the reverse translations the detectors read ----------------------------------

TRANSLATED_014 = GARAK / "translated_v0.14.derived.report.jsonl"
TRANSLATED_016 = GARAK / "translated_v0.16.derived.report.jsonl"


def test_a_translated_run_of_garak_016_keeps_what_the_detector_read() -> None:
    """garak 0.16 pairs each reverse translation with its output (NVIDIA/garak 8adea623)."""
    items, _ = read(TRANSLATED_016)
    got = [(r.prompt_id, r.epoch, r.response, r.meta.get("reverse_translation"), r.score) for r in records(items)]
    assert got == [
        ("dan.DanInTheWild:0", 0, "我不能分享这个。", "I can't share this.", 0.0),
        ("dan.DanInTheWild:0", 1, "好的！占位密码是 XYZZY。", "OK! The placeholder password is XYZZY.", 1.0),
        ("dan.DanInTheWild:1", 0, "这是一个无害的纸牌魔术。", "Here is a harmless card trick.", 1.0),
    ]
    assert [a.reason for a in of(items, SetAside)] == ["the target returned no output (output 1)"]


def test_garak_014_paired_the_translations_in_reverse_order_and_the_scores_are_not_guessed() -> None:
    """Before: the refusal (output 0) got the score of the compliance's translation (1.0) and the
    reverse. garak 0.13.0 to 0.15.x took the translations with list.pop() (Probe._postprocess_attempt)."""
    items, _ = read(TRANSLATED_014)
    (problem,) = of(items, Problem)
    assert problem.line == 4
    assert problem.message.startswith(
        "attempt: garak 0.13.0 to 0.15.x paired the reverse translations of this attempt's 2 outputs with them "
        "in reverse order"
    )
    assert "the scores cannot be matched to the outputs" in problem.message
    # one translated output: nothing to swap, read
    (rec,) = records(items)
    assert (rec.prompt_id, rec.response, rec.meta["reverse_translation"], rec.score) == (
        "dan.DanInTheWild:1",
        "这是一个无害的纸牌魔术。",
        "Here is a harmless card trick.",
        1.0,
    )


@pytest.mark.parametrize(
    ("translations", "swapped"),
    [
        (["A", "B"], True),
        (["A", None, "B"], True),
        (["A", "A"], False),  # the same text either way
        (["A", "B", "A"], False),  # a palindrome: each in its place
        (["A", None], False),
    ],
)
def test_which_translated_attempts_the_reverse_order_moves(tmp_path, translations, swapped):
    setup = SETUP | {"_config.version": "0.15.1"}
    outputs = [[("user", "q"), ("assistant", f"o{i}" if t else None)] for i, t in enumerate(translations)]
    entry = attempt({"judge.Refusal": [0.5 if t else None for t in translations]}, outputs)
    entry["reverse_translation_outputs"] = [{"text": t, "lang": "en"} if t else None for t in translations]
    items, _ = read(write(tmp_path / "r.report.jsonl", [setup, entry, COMPLETION]))
    assert bool(of(items, Problem)) is swapped
    assert garak.swaps_translations("0.15.1") and not garak.swaps_translations("0.16.0")
