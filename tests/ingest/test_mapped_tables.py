"""Any results table, mapped (issue #24, part 3): --map and [ingest.map], prompt ids from the
prompt, StrongREJECT's own output, a generic conversation, and rows with nothing to review.

Through the CLI, on real SQLite stores, with the fixtures of tests/data/formats/strongreject/ and
tests/data/formats/custom/ (see PROVENANCE.md). Before: StrongREJECT's ``evaluate_dataset`` output,
a HarmBench-style aggregate CSV and a SORRY-Bench judged table were refused ("not a supported
format"; with ``--format generic`` "missing required column(s): benchmark, prompt_id,
judge_label"); there was no ``--map``, no prompt id without a ``prompt_id`` column, a ``messages``
column was kept as metadata and the conversation flattened, and a row with an empty prompt and an
empty response was stored, counted and routable.
"""

from __future__ import annotations

import csv
import hashlib
import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from annotate.cli import cli
from annotate.config import open_workspace
from annotate.db.store import open_store
from annotate.labelstudio.tasks import task_dialogue
from tests.data_files import FORMATS
from tests.helpers import generic_row, write_csv, write_jsonl

STRONGREJECT = FORMATS / "strongreject" / "evaluation_results.derived.csv"
CUSTOM = FORMATS / "custom"
HB_STYLE = CUSTOM / "harmbench_style_aggregate.csv"
SORRY = CUSTOM / "sorrybench_judged.derived.jsonl"
CONVERSATIONS = CUSTOM / "conversations.derived.jsonl"
HB_MAP = "model=model_name,prompt=prompt_text,response=raw_response,judge_label=harmful"
#: The command docs/formats.md shows for the SORRY-Bench judged table.
SORRY_ARGS = (
    "--map",
    "prompt_id=question_id,prompt=question,response=answer,judge_label=score",
    "--benchmark",
    "sorry-bench",
    "--judge",
    "ft-mistral-7b-instruct-v0.2",
)


@pytest.fixture(params=["sqlite"])
def db_url(request, tmp_path):
    """Real SQLite files (the mapping is the reader's business; the store tests cover PostgreSQL)."""
    return f"sqlite:///{tmp_path / 'store.db'}"


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, "ingest", *map(str, args)])
    if ok:
        assert result.exit_code == 0, (args, result.output, result.stderr if result.stderr_bytes else "")
    else:
        assert result.exit_code == 2, (args, result.output, repr(result.exception))
        assert all(line.startswith("Error: ") for line in result.stderr.splitlines()), result.stderr
    return result


def store_of(prefix):
    return open_store(open_workspace(prefix[1], prefix[3]).db_url)


def stored(prefix) -> list[dict[str, Any]]:
    store = store_of(prefix)
    try:
        return store.responses().drop(columns=["ingested_at"]).sort_values("id").to_dict("records")
    finally:
        store.close()


def runs(prefix) -> list[dict[str, Any]]:
    store = store_of(prefix)
    try:
        return [json.loads(o) if isinstance(o, str) else o for o in store.ingest_runs()["options"]]
    finally:
        store.close()


def snapshot(prefix):
    store = store_of(prefix)
    try:
        return (stored(prefix), len(store.ingest_runs()), len(store.source_files()))
    finally:
        store.close()


def expected_id(text: str) -> str:
    return "sha256:" + hashlib.sha256(unicodedata.normalize("NFC", text).encode()).hexdigest()[:16]


def test_the_fixtures_are_as_their_provenance_says():
    listed = (FORMATS / "PROVENANCE.md").read_text(encoding="utf-8")
    for path in (STRONGREJECT, HB_STYLE, SORRY, CONVERSATIONS):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert f"{digest}  ./{path.relative_to(FORMATS).as_posix()}" in listed, path.name
        row = next(line for line in listed.splitlines() if line.startswith(f"| {path.relative_to(FORMATS)}"))
        assert "DERIVED" in row or "house format" in row or "written for these tests" in row


# -- --map: any table --------------------------------------------------------------------------


def test_a_harmbench_style_csv_ingests_with_map(workspace, runner, tmp_path):
    """Before: "not a supported format", and with --format generic "missing required column(s):
    model, benchmark, prompt_id, prompt, response, judge_label"."""
    _, prefix = workspace
    refused = run(runner, prefix, HB_STYLE, ok=False)
    assert "not a supported format" in refused.stderr and "--map FIELD=COLUMN" in refused.stderr
    result = run(runner, prefix, HB_STYLE, "--map", HB_MAP, "--benchmark", "house-runner")
    out = result.output
    assert "harmbench_style_aggregate.csv [generic]: 3 rows read; 3 added." in out
    assert "labels: 1 harmful, 2 safe, 0 ambiguous" in out
    assert (
        "columns read through the map: model=model_name, prompt=prompt_text, response=raw_response, "
        "judge_label=harmful (--map)" in out
    )
    assert "prompt_id: none in the file; made from the prompt text for 3 row(s)" in out
    source = list(csv.DictReader(HB_STYLE.open(encoding="utf-8")))
    rows = stored(prefix)
    assert [(r["model"], r["benchmark"], r["prompt"], r["response"], r["judge_verdict"]) for r in rows] == [
        (s["model_name"], "house-runner", s["prompt_text"], s["raw_response"], s["harmful"]) for s in source
    ]
    assert [r["prompt_id"] for r in rows] == [expected_id(s["prompt_text"]) for s in source]
    assert all(r["meta"] is None for r in rows)  # every column was read as a field
    options = runs(prefix)[-1]
    assert options["map"] == {
        "model": "model_name",
        "prompt": "prompt_text",
        "response": "raw_response",
        "judge_label": "harmful",
    }
    assert set(options["map_from"].values()) == {"--map"}
    assert options["prompt_ids"]["made_from"] == "prompt" and options["prompt_ids"]["rows"] == 3
    # The same file again adds nothing: the made ids are stable.
    again = run(runner, prefix, HB_STYLE, "--map", HB_MAP, "--benchmark", "house-runner")
    assert "0 added; 3 already present" in again.output


def test_identical_prompts_get_one_id_so_models_are_comparable(workspace, runner, tmp_path):
    _, prefix = workspace
    rows = [
        {"who": m, "text": p, "answer": f"{m} on {p}", "verdict": v}
        for m, v in (("m1", "safe"), ("m2", "harmful"))
        for p in ("Tell me about locks.", "caf\u00e9 question")
    ]
    rows.append({"who": "m3", "text": "cafe\u0301 question", "answer": "decomposed", "verdict": "safe"})
    path = write_csv(tmp_path / "t.csv", rows)
    run(runner, prefix, path, "--map", "model=who,prompt=text,response=answer,judge_label=verdict", "--benchmark", "b")
    ids = {(r["model"], r["prompt"]): r["prompt_id"] for r in stored(prefix)}
    assert ids[("m1", "Tell me about locks.")] == ids[("m2", "Tell me about locks.")]
    assert ids[("m1", "caf\u00e9 question")] == ids[("m3", "cafe\u0301 question")]  # NFC: one text
    assert len(set(ids.values())) == 2


def test_two_rows_with_one_made_id_are_a_conflict_as_before(workspace, runner, tmp_path):
    """Two different answers of one model to one prompt (no epoch) share a key: refused, as any key repeated."""
    _, prefix = workspace
    rows = [{"model": "m", "benchmark": "b", "prompt": "p", "response": r, "judge_label": "safe"} for r in "xy"]
    path = write_jsonl(tmp_path / "dup.jsonl", rows)
    result = run(runner, prefix, path, ok=False)
    assert f"Error: {path}:2: key (benchmark='b', model='m', prompt_id='{expected_id('p')}'" in result.stderr
    assert "appears earlier in this file with different content" in result.stderr
    assert stored(prefix) == []


def test_map_applies_to_jsonl_and_parquet_alike(workspace, runner, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    _, prefix = workspace
    source = list(csv.DictReader(HB_STYLE.open(encoding="utf-8")))
    jsonl = write_jsonl(tmp_path / "runs.jsonl", source)
    parquet = tmp_path / "runs.parquet"
    pq.write_table(pa.Table.from_pylist(source), parquet)
    args = ("--map", HB_MAP, "--benchmark", "house-runner")
    run(runner, prefix, HB_STYLE, *args)
    before = stored(prefix)
    for path in (jsonl, parquet):
        result = run(runner, prefix, path, *args)
        assert "3 rows read; 0 added; 3 already present" in result.output, path.name
        assert "columns read through the map" in result.output
    assert [(r["prompt_id"], r["prompt"], r["response"]) for r in stored(prefix)] == [
        (r["prompt_id"], r["prompt"], r["response"]) for r in before
    ]


def test_a_mapped_column_missing_from_the_file_names_its_columns(workspace, runner, tmp_path):
    _, prefix = workspace
    before = snapshot(prefix)
    result = run(runner, prefix, HB_STYLE, "--map", "prompt=forbidden_prompt", "--benchmark", "b", ok=False)
    assert result.stderr.splitlines()[0] == (
        f"Error: {HB_STYLE}:1: --map prompt=forbidden_prompt: no column 'forbidden_prompt'; the file's columns "
        "are 'model_name', 'prompt_text', 'raw_response', 'harmful'"
    )
    # A JSONL row says so on its own line.
    path = write_jsonl(tmp_path / "rows.jsonl", [{"text": "p", "out": "r", "v": "safe"}, {"text": "q", "v": "safe"}])
    jsonl = run(
        runner,
        prefix,
        path,
        "--map",
        "prompt=text,response=out,judge_label=v",
        "--model",
        "m",
        "--benchmark",
        "b",
        ok=False,
    )
    assert (
        f"Error: {path}:2: --map response=out: no field 'out' in this row; its fields are 'text', 'v'" in jsonl.stderr
    )
    assert snapshot(prefix) == before


@pytest.mark.parametrize(
    "option, message",
    [
        (
            "bogus=prompt_text",
            "--map bogus=prompt_text: 'bogus' is not a field of the generic schema; map to one of: "
            "model, benchmark, prompt_id, prompt, response, judge_label, judge, judge_score, category, epoch, messages",
        ),
        ("prompt=prompt_text,prompt=prompt_text", "--map names the field 'prompt' twice"),  # mapped to itself twice
        (
            "prompt=prompt_text,response=prompt_text",
            "the column 'prompt_text' is mapped twice (--map prompt=prompt_text and --map response=prompt_text)",
        ),
        ("prompt", "--map 'prompt': write FIELD=COLUMN"),
        ("prompt=", "--map prompt=: no column named after the field"),
        ("../../etc/passwd=prompt_text", "'../../etc/passwd' is not a field of the generic schema"),
        # an alias and its field are one field
        ("score=harmful,judge_score=harmful", "--map names the field 'judge_score' twice"),
        ("label=harmful,verdict=model_name", "--map names the field 'judge_label' twice"),
    ],
)
def test_a_bad_map_is_refused_before_any_file_is_read(workspace, runner, option, message):
    _, prefix = workspace
    before = snapshot(prefix)
    result = run(runner, prefix, HB_STYLE, "--map", option, "--benchmark", "b", ok=False)
    assert message in result.stderr
    assert result.stderr.splitlines()[-1].startswith("Error: --map was not used")
    assert snapshot(prefix) == before


def test_hostile_column_names(workspace, runner, tmp_path):
    """A column named like a spreadsheet formula is only a name; a path-like one is never opened."""
    _, prefix = workspace
    rows = [{"=cmd|' /C calc'!A0": "a prompt", "@SUM(1)": "an answer", "+v": "safe"}]
    path = write_csv(tmp_path / "formula.csv", rows)
    mapping = "prompt==cmd|' /C calc'!A0,response=@SUM(1),judge_label=+v"
    run(runner, prefix, path, "--map", mapping, "--model", "m", "--benchmark", "b")
    (row,) = stored(prefix)
    assert (row["prompt"], row["response"], row["judge_label"]) == ("a prompt", "an answer", "safe")
    assert runs(prefix)[-1]["map"]["prompt"] == "=cmd|' /C calc'!A0"
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    refused = run(runner, prefix, path, "--map", f"prompt={secret}", "--model", "m", "--benchmark", "b", ok=False)
    assert f"no column {str(secret)!r}" in refused.stderr and "top secret" not in refused.stderr
    escape = run(runner, prefix, path, "--map", "prompt=\x1b[31mred", "--model", "m", "--benchmark", "b", ok=False)
    assert "\x1b" not in escape.stderr and "\\x1b[31mred" in escape.stderr


def test_a_file_column_named_as_a_mapped_field_is_kept_as_metadata(workspace, runner, tmp_path):
    _, prefix = workspace
    rows = [
        {
            "model": "m",
            "benchmark": "b",
            "prompt": "old text",
            "new_prompt": "new text",
            "response": "r",
            "judge_label": "safe",
            "category": "c",
        }
    ]
    path = write_jsonl(tmp_path / "shadow.jsonl", rows)
    run(runner, prefix, path, "--map", "prompt=new_prompt")
    (row,) = stored(prefix)
    assert (row["prompt"], row["category"]) == ("new text", "c")  # unmapped schema columns are read as before
    assert json.loads(row["meta"]) == {"prompt": "old text"}  # nothing dropped


def test_map_on_a_file_of_another_reader_is_said_not_applied(workspace, runner):
    _, prefix = workspace
    xstest = FORMATS / "xstest_v1" / "xstest_completions_llama2_v1.csv"
    result = run(runner, prefix, xstest, "--map", "prompt=prompt")
    assert "[xstest]" in result.output
    assert "the column map (--map) was not applied: a xstest file is read by its own reader" in result.output
    assert "map" not in runs(prefix)[-1]


# -- [ingest.map] in annotate.toml ---------------------------------------------------------------


def configure(ws: Path, text: str) -> None:
    config = ws / "annotate.toml"
    config.write_text(config.read_text(encoding="utf-8") + "\n" + text, encoding="utf-8")


def test_a_team_keeps_its_map_in_annotate_toml(workspace, runner, tmp_path):
    ws, prefix = workspace
    configure(
        ws,
        '[ingest.map."harmbench_style_*.csv"]\n'
        'model = "model_name"\nprompt = "prompt_text"\nresponse = "raw_response"\njudge_label = "harmful"\n'
        '[ingest.map."runs/*/sorry*.jsonl"]\n'
        'prompt_id = "question_id"\nprompt = "question"\nresponse = "answer"\njudge_label = "score"\n',
    )
    folder = ws / "runs" / "week1"
    folder.mkdir(parents=True)
    (folder / "harmbench_style_aggregate.csv").write_bytes(HB_STYLE.read_bytes())
    (folder / "sorrybench.jsonl").write_bytes(SORRY.read_bytes())
    (folder / "notes.csv").write_text("a,b\n1,2\n")  # no map, no reader: skipped as before
    result = run(runner, prefix, ws / "runs", "--benchmark", "house", "--judge", "j")
    assert "[generic] 2 file(s): 6 rows read; 6 added" in result.output
    assert "1 file(s) skipped" in result.output
    assert '[ingest.map."harmbench_style_*.csv"]' in result.output
    assert {r["prompt_id"] for r in stored(prefix)} >= {"1", "2"}  # the SORRY-Bench ids, read through the map
    options = {o["map"].get("prompt"): o["map_from"] for o in runs(prefix)}
    assert options["prompt_text"] == dict.fromkeys(
        ("model", "prompt", "response", "judge_label"), '[ingest.map."harmbench_style_*.csv"]'
    )
    # --map wins over annotate.toml, field by field; a column read twice across them is an error.
    clash = run(runner, prefix, folder / "harmbench_style_aggregate.csv", "--map", "judge=model_name", ok=False)
    assert (
        'the column \'model_name\' is mapped twice ([ingest.map."harmbench_style_*.csv"] model = "model_name" '
        "in annotate.toml and --map judge=model_name)" in clash.stderr
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ('[ingest.map]\nprompts = "text"\n', "[ingest.map] prompts: 'prompts' is not a field of the generic schema"),
        ("[ingest.map]\nprompt = 3\n", "[ingest.map] prompt: the column must be named as text, got int"),
        ('[ingest.map."*.csv"]\nprompt = "a"\nresponse = "a"\n', "the column 'a' is mapped twice"),
        ('[ingest.map.prompt]\nx = "y"\n', "a table under [ingest.map] names the files it maps"),
        ('[ingest.map.score]\nx = "y"\n', "a table under [ingest.map] names the files it maps"),
        (
            '[ingest.map]\nscore = "a"\njudge_score = "b"\n',
            "[ingest.map] judge_score: the field 'judge_score' is mapped twice (from 'a' too)",
        ),
    ],
)
def test_a_bad_map_in_annotate_toml_is_refused(workspace, runner, text, message):
    ws, prefix = workspace
    configure(ws, text)
    before = snapshot(prefix)
    result = run(runner, prefix, HB_STYLE, "--benchmark", "b", ok=False)
    assert message in result.stderr and "annotate.toml" in result.stderr
    assert snapshot(prefix) == before


def test_two_patterns_matching_one_file_are_refused(workspace, runner):
    ws, prefix = workspace
    configure(ws, '[ingest.map."*.csv"]\nmodel = "model_name"\n[ingest.map."harmbench*"]\nmodel = "model_name"\n')
    result = run(runner, prefix, HB_STYLE, "--benchmark", "b", ok=False)
    assert "the file matches several column maps of annotate.toml" in result.stderr


def test_the_issues_own_map_example_reads_score_as_judge_score(workspace, runner):
    """``--map prompt=forbidden_prompt,response=response,score=score`` as the issue writes it
    (before: no --map; with the field's full name only, "'score' is not a field")."""
    ws, prefix = workspace
    args = ("--format", "generic", "--judge", "strongreject_rubric", "--rubric-preset", "strongreject")
    example = "prompt=forbidden_prompt,response=response,score=score,model=model"
    # One benchmark for every jailbreak: a forbidden prompt's jailbreaks share its key (the reader
    # of StrongREJECT's output keeps them apart as strongreject/<jailbreak>).
    merged = run(runner, prefix, STRONGREJECT, *args, "--map", example, "--benchmark", "strongreject", ok=False)
    assert f"Error: {STRONGREJECT}:3: key (benchmark='strongreject', model='model-a'" in merged.stderr
    assert "appears earlier in this file with different content" in merged.stderr
    result = run(runner, prefix, STRONGREJECT, *args, "--map", example + ",benchmark=jailbreak")
    assert "6 rows read; 6 added." in result.output
    assert "judge_score=score (--map)" in result.output
    rows = stored(prefix)
    assert [r["judge_score"] for r in rows[:3]] == [0.0, 0.875, 0.125]
    assert {r["prompt"] for r in rows} == {r["forbidden_prompt"] for r in strongreject_rows()}
    assert [r["judge_label"] for r in rows] == ["safe", "harmful", "safe", "ambiguous", "ambiguous", "safe"]
    assert runs(prefix)[0]["map"]["judge_score"] == "score"  # recorded under the field's own name
    configure(ws, '[ingest.map."house.csv"]\nlabel = "harmful"\nprompt = "prompt_text"\n')
    (ws / "house.csv").write_bytes(HB_STYLE.read_bytes())
    toml = run(runner, prefix, ws / "house.csv", "--map", "model=model_name,response=raw_response", "--benchmark", "h")
    assert "3 rows read; 3 added." in toml.output
    assert 'judge_label=harmful ([ingest.map."house.csv"])' in toml.output


# -- StrongREJECT's evaluate_dataset output --------------------------------------------------------


def strongreject_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(STRONGREJECT.open(encoding="utf-8")))


def test_strongreject_output_ingests_with_no_flags(workspace, runner):
    """Before: "not a supported format"; with --format generic "missing required column(s)"."""
    _, prefix = workspace
    result = run(runner, prefix, STRONGREJECT)
    out = result.output
    assert "evaluation_results.derived.csv [strongreject]: 6 rows read; 6 added." in out
    assert "labels: 1 harmful, 3 safe, 2 ambiguous (ambiguous because: 1 score-band, 1 unparsed)" in out
    assert "read as StrongREJECT's evaluate_dataset output" in out
    assert "made from the forbidden_prompt text for 6 row(s)" in out
    assert "rubric preset strongreject for judge 'strongreject_rubric'" in out
    source = strongreject_rows()
    rows = stored(prefix)
    assert [(r["benchmark"], r["model"], r["judge"]) for r in rows] == [
        (f"strongreject/{s['jailbreak']}", s["model"], s["evaluator"]) for s in source
    ]
    # The prompt shown is the one the model got; the decoded response is the one the judge scored.
    assert [(r["prompt"], r["response"]) for r in rows] == [(s["jailbroken_prompt"], s["response"]) for s in source]
    assert [r["prompt_id"] for r in rows] == [expected_id(s["forbidden_prompt"]) for s in source]
    assert [r["category"] for r in rows] == [s["category"] for s in source]
    scores = [None if r["judge_score"] != r["judge_score"] else r["judge_score"] for r in rows]  # NaN: none stored
    assert [(score, r["judge_label"], r["label_reason"]) for score, r in zip(scores, rows, strict=True)] == [
        (0.0, "safe", "score-band"),  # refused: score 0
        (0.875, "harmful", "score-band"),
        (0.125, "safe", "score-band"),
        (None, "ambiguous", "unparsed"),  # the judge's reply could not be parsed: NaN, an empty cell
        (0.5, "ambiguous", "score-band"),
        (0.0, "safe", "score-band"),
    ]
    assert rows[3]["judge_verdict"] == "nan"
    encoded = json.loads(rows[1]["meta"])
    assert encoded["forbidden_prompt"] == source[1]["forbidden_prompt"]  # kept: the prompt shown is encoded
    assert encoded["raw_response"] == source[1]["raw_response"]  # the undecoded answer
    assert (encoded["jailbreak"], encoded["refusal"], encoded["judge_model"]) == ("base64", "0.0", "openai/gpt-4o-mini")
    plain = json.loads(rows[0]["meta"])
    assert "forbidden_prompt" not in plain and "raw_response" not in plain  # identical to what is shown
    options = runs(prefix)[-1]
    assert options["format"] == "strongreject"
    assert options["map"]["prompt"] == "jailbroken_prompt" and options["map_from"]["prompt"] == "StrongREJECT"


def test_strongreject_as_jsonl_and_parquet(workspace, runner, tmp_path):
    """The Dataset's to_json (JSON Lines, NaN as null) and to_parquet: the same responses."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    _, prefix = workspace
    numbers = ("refusal", "convincingness", "specificity", "score")
    rows = [
        {k: (float(v) if v else None) if k in numbers else (v or None) for k, v in r.items()}
        for r in strongreject_rows()
    ]
    jsonl = write_jsonl(tmp_path / "evaluation.jsonl", rows)
    parquet = tmp_path / "evaluation.parquet"
    pq.write_table(
        pa.Table.from_pylist([{**r, "score": r["score"] if r["score"] is not None else float("nan")} for r in rows]),
        parquet,
    )
    first = run(runner, prefix, jsonl)
    assert "[strongreject]: 6 rows read; 6 added" in first.output
    assert "1 harmful, 3 safe, 2 ambiguous" in first.output
    for path in (parquet, STRONGREJECT):
        again = run(runner, prefix, path)
        assert "[strongreject]: 6 rows read; 0 added; 6 already present" in again.output, path.name


def test_strongreject_map_shows_the_forbidden_prompt_instead(workspace, runner):
    _, prefix = workspace
    run(runner, prefix, STRONGREJECT, "--map", "prompt=forbidden_prompt")
    rows = stored(prefix)
    source = strongreject_rows()
    assert [r["prompt"] for r in rows] == [s["forbidden_prompt"] for s in source]
    assert json.loads(rows[1]["meta"])["jailbroken_prompt"] == source[1]["jailbroken_prompt"]
    assert runs(prefix)[-1]["map_from"]["prompt"] == "--map"


def test_strongreject_without_a_jailbreak_or_a_model(workspace, runner, tmp_path):
    """evaluate_dataset over the user's own responses: no jailbreak columns, no model column."""
    _, prefix = workspace
    rows = [
        {"forbidden_prompt": "p1", "response": "no", "score": "0.0", "evaluator": "string_matching"},
        {"forbidden_prompt": "p2", "response": "sure", "score": "1.0", "evaluator": "string_matching"},
    ]
    path = write_csv(tmp_path / "mine.csv", rows)
    refused = run(runner, prefix, path, ok=False)
    assert "missing required column(s): model" in refused.stderr
    run(runner, prefix, path, "--model", "m")
    assert [(r["benchmark"], r["prompt"], r["judge"], r["judge_label"]) for r in stored(prefix)] == [
        ("strongreject", "p1", "string_matching", "safe"),
        ("strongreject", "p2", "string_matching", "harmful"),
    ]


def test_a_strongreject_row_without_its_jailbroken_prompt_shows_the_forbidden_one(workspace, runner, tmp_path):
    """An empty jailbroken_prompt cell (or a null in JSON Lines): the model was sent the forbidden prompt,
    never an empty prompt (which would be set aside with its response unreviewed)."""
    _, prefix = workspace
    rows = strongreject_rows()[:2]
    rows[0]["jailbroken_prompt"] = ""
    csv_path = write_csv(tmp_path / "sr.csv", rows)
    jsonl_path = write_jsonl(tmp_path / "sr.jsonl", [{**rows[0], "jailbroken_prompt": None, "model": "model-c"}])
    run(runner, prefix, csv_path)
    run(runner, prefix, jsonl_path)
    got = stored(prefix)
    assert [r["prompt"] for r in got] == [
        rows[0]["forbidden_prompt"],
        rows[1]["jailbroken_prompt"],
        rows[0]["forbidden_prompt"],
    ]
    # --map prompt=... is the user's choice: an empty cell there stays empty.
    mapped = run(runner, prefix, csv_path, "--map", "prompt=jailbroken_prompt", "--model", "model-d")
    assert "1 set aside ->" not in mapped.output  # the response is there: kept
    assert stored(prefix)[-2]["prompt"] == ""


# -- SORRY-Bench -------------------------------------------------------------------------------------


def test_a_sorrybench_judged_table_ingests_with_the_documented_command(workspace, runner):
    """The command of docs/formats.md. Before: "not a supported format"."""
    _, prefix = workspace
    result = run(runner, prefix, SORRY, *SORRY_ARGS)
    assert "3 rows read; 3 added." in result.output
    assert "labels: 1 harmful, 1 safe, 1 ambiguous (ambiguous because: 1 unparsed)" in result.output
    rows = stored(prefix)
    assert [(r["prompt_id"], r["model"], r["judge_verdict"], r["judge_label"]) for r in rows] == [
        ("1", "llama-3-8b-instruct", "0", "safe"),
        ("1", "mistral-7b-instruct-v0.2", "1", "harmful"),
        ("2", "llama-3-8b-instruct", "-1", "ambiguous"),  # FastChat's -1: the rating was not parsed
    ]
    assert {r["judge"] for r in rows} == {"ft-mistral-7b-instruct-v0.2"}
    meta = json.loads(rows[2]["meta"])
    assert meta["judgment"] == "unparseable" and meta["prompt_style"] == "base"
    docs = (Path(__file__).resolve().parents[2] / "docs" / "formats.md").read_text(encoding="utf-8")
    assert " ".join(SORRY_ARGS) in docs
    assert f"--map {HB_MAP}" in docs


# -- messages: a conversation ------------------------------------------------------------------------


def test_a_generic_conversation_reaches_the_reviewer_as_a_dialogue(workspace, runner):
    """Before: the ``messages`` column was metadata and the rows were refused for want of a prompt and a response."""
    _, prefix = workspace
    result = run(runner, prefix, CONVERSATIONS)
    assert "conversations.derived.jsonl [generic]: 4 rows read; 4 added." in result.output
    rows = stored(prefix)
    source = [json.loads(line) for line in CONVERSATIONS.read_text(encoding="utf-8").splitlines()]
    split = rows[0]
    turns = source[0]["messages"]
    # The prompt is every user turn (the attack is split across them), the response the last answer.
    assert split["prompt"] == f"{turns[0]['content']}\n\n{turns[2]['content']}"
    assert split["response"] == turns[3]["content"]
    assert json.loads(split["transcript"]) == [{"role": t["role"], "content": t["content"]} for t in turns]
    assert rows[0]["prompt_id"] == rows[1]["prompt_id"] == expected_id(split["prompt"])  # one script, two models
    dialogue = task_dialogue(split["prompt"], split["response"], split["transcript"], split["model"])
    assert [d["author"] for d in dialogue] == ["User", "Assistant", "User", "Assistant"]
    assert [d["text"] for d in dialogue] == [t["content"] for t in turns]
    # A system message around one question is kept: the prompt and the response do not show it.
    assert [t["role"] for t in json.loads(rows[2]["transcript"])] == ["system", "user", "assistant"]
    # OpenAI tool calls become the transcript's tool calls.
    agent = json.loads(rows[3]["transcript"])
    assert agent[1]["tool_calls"] == [
        {"id": "call_1", "name": "search", "arguments": '{"q": "harbour library opening hours"}'}
    ]
    assert (agent[2]["role"], agent[2]["tool_call_id"]) == ("tool", "call_1")
    assert rows[3]["response"] == "It is open Monday to Friday, 9:00 to 17:00."
    dialogue = task_dialogue(rows[3]["prompt"], rows[3]["response"], rows[3]["transcript"], rows[3]["model"])
    assert dialogue[1]["text"] == '→ call search({"q": "harbour library opening hours"})'


def test_a_generic_conversation_routed_to_files_is_a_dialogue_in_the_task(workspace, runner):
    """The whole way: the ``messages`` column, ingested, routed (task files), is the task's dialogue."""
    ws, prefix = workspace
    run(runner, prefix, CONVERSATIONS)
    for email in ("a1@example.org", "a2@example.org"):
        assert runner.invoke(cli, [*prefix, "annotators", "add", email, "--offline"]).exit_code == 0
    route = ["route", "--round", "r1", "--judge", "house-judge", "--clear-per-cell", "5", "--seed", "3"]
    result = runner.invoke(cli, [*prefix, *route, "--annotators", "A1,A2", "--to-file"])
    assert result.exit_code == 0, (result.output, result.stderr)
    tasks = json.loads((ws / "tasks" / "r1" / "A1.json").read_text(encoding="utf-8"))
    assert len(tasks) == 4
    source = [json.loads(line) for line in CONVERSATIONS.read_text(encoding="utf-8").splitlines()]
    split = source[0]["messages"]
    by_response = {t["data"]["response"]: t["data"] for t in tasks}
    for answer in (split[3]["content"], source[1]["messages"][3]["content"]):  # both models' answers
        dialogue = by_response[answer]["dialogue"]
        assert [d["author"] for d in dialogue] == ["User", "Assistant", "User", "Assistant"]
        assert [d["text"] for d in dialogue[:3]] == [m["content"] for m in split[:3]]
        assert dialogue[3]["text"] == answer
    agent = by_response["It is open Monday to Friday, 9:00 to 17:00."]["dialogue"]
    assert [d["author"] for d in agent] == ["User", "Assistant", "Tool: search", "Assistant"]
    assert agent[1]["text"] == '→ call search({"q": "harbour library opening hours"})'
    blob = json.dumps(tasks, ensure_ascii=False)
    assert "model-a" not in blob and "house-judge" not in blob and "call_1" not in blob  # blind


def test_messages_in_a_csv_cell_and_mapped(workspace, runner, tmp_path):
    _, prefix = workspace
    source = [json.loads(line) for line in CONVERSATIONS.read_text(encoding="utf-8").splitlines()]
    rows = [
        {
            "who": s["model"],
            "suite": s["benchmark"],
            "chat": json.dumps(s["messages"]),
            "v": s["judge_label"],
            "judge": s["judge"],
        }
        for s in source
    ]
    path = write_csv(tmp_path / "chats.csv", rows)
    run(runner, prefix, CONVERSATIONS)
    again = run(runner, prefix, path, "--map", "model=who,benchmark=suite,messages=chat,judge_label=v")
    assert "4 rows read; 0 added; 4 already present" in again.output  # the same responses, the same transcripts


BAD_MESSAGES = [
    ("not json [", "field 'messages' is not a JSON list of messages"),
    ('{"role": "user"}', "field 'messages' must be a list of messages ({role, content}), got dict"),
    ('[{"role": "bot", "content": "x"}]', "field 'messages': message 1 has role 'bot'; expected one of system"),
    ('[{"role": "user", "content": 3}]', "field 'messages': message 1: content must be text or a list of parts"),
    ('["hi"]', "field 'messages': message 1 must be an object with role and content, got str"),
    (
        '[{"role": "assistant", "content": "", "tool_calls": [{"id": "1"}]}]',
        "field 'messages': message 1: tool call 1 names no function",
    ),
    (
        '[{"role": "tool", "content": "r", "tool_call_id": 7}]',
        "field 'messages': message 1: tool_call_id must be text, got int",
    ),
    ("[" * 100_000 + "]" * 100_000, "field 'messages' is nested too deeply to read"),
    (
        '[{"role": "user", "content": [{"type": "text", "text": ' + "[" * 900 + "]" * 900 + "}]}]",
        "field 'messages': message 1: a text part's text must be text, got list",
    ),
]


@pytest.mark.parametrize("cell, message", BAD_MESSAGES, ids=range(len(BAD_MESSAGES)))
def test_malformed_messages_are_a_clear_error_on_their_row(workspace, runner, tmp_path, cell, message):
    _, prefix = workspace
    good = {
        "model": "m",
        "benchmark": "b",
        "judge_label": "safe",
        "messages": json.dumps([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]),
    }
    path = write_csv(tmp_path / "bad.csv", [good, {**good, "messages": cell}])
    before = snapshot(prefix)
    result = run(runner, prefix, path, ok=False)
    assert f"Error: {path}:3: {message}" in result.stderr, result.stderr[:2000]
    assert snapshot(prefix) == before
    skipped = run(runner, prefix, path, "--skip-invalid")
    assert "1 added; 1 rejected" in skipped.output


def test_a_deeply_nested_jsonl_line_and_a_huge_conversation_are_bounded(workspace, runner, tmp_path):
    _, prefix = workspace
    deep = tmp_path / "deep.jsonl"
    deep.write_text(
        json.dumps({"model": "m", "benchmark": "b", "judge_label": "safe", "messages": []})[:-1].replace(
            '"messages": [', '"messages": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
        ),
        encoding="utf-8",
    )
    deep_result = run(runner, prefix, deep, "--format", "generic", ok=False)
    assert f"Error: {deep}:1: not readable: the JSON is nested too deeply" in deep_result.stderr
    turns = [{"role": ("user", "assistant")[i % 2], "content": "x"} for i in range(100_000)]
    huge = write_jsonl(
        tmp_path / "huge.jsonl", [{"model": "m", "benchmark": "b", "judge_label": "safe", "messages": turns}]
    )
    result = run(runner, prefix, huge, "--format", "generic", ok=False)  # a first line over the 64 KiB sniffed
    assert (
        f"Error: {huge}:1: field 'messages' holds 100,000 messages; annotate reads conversations of up to 10,000 turns"
        in result.stderr
    )
    assert stored(prefix) == []


# -- rows with nothing to review ----------------------------------------------------------------------


def test_empty_prompt_and_response_rows_are_set_aside(workspace, runner, tmp_path):
    """Before: stored, counted in scores (this one as harmful) and routable as a blank task."""
    ws, prefix = workspace
    rows = [
        generic_row(1),
        generic_row(2, prompt="", response="", judge_label="harmful"),
        generic_row(3, prompt="  ", response="\n"),
        generic_row(4, prompt="", response="an answer to nothing"),  # something to review: kept
    ]
    for writer, name in ((write_jsonl, "rows.jsonl"), (write_csv, "rows.csv")):
        path = writer(tmp_path / name, rows)
        result = run(runner, prefix, path)
        assert "4 rows read" in result.output and "2 set aside ->" in result.output, name
    assert sorted(r["prompt_id"] for r in stored(prefix)) == ["p1", "p4"]
    set_aside = [json.loads(line) for f in sorted((ws / "rejects").glob("*.set-aside.jsonl")) for line in f.open()]
    assert {(r["line"], r["reason"]) for r in set_aside} >= {
        (3, "empty prompt and empty response: nothing to review"),
        (4, "empty prompt and empty response: nothing to review"),
    }
    assert {r["data"]["prompt_id"] for r in set_aside} == {"p2", "p3"}


def test_empty_rows_are_set_aside_in_every_reader(workspace, runner, tmp_path):
    """The check is the ingest's, after any reader: a HarmBench result and a mapped table alike."""
    _, prefix = workspace
    harmbench = tmp_path / "results" / "m.json"
    harmbench.parent.mkdir()
    harmbench.write_text(
        json.dumps(
            {"b1": [{"test_case": "", "generation": "", "label": 1}, {"test_case": "t", "generation": "g", "label": 0}]}
        )
    )
    result = run(runner, prefix, harmbench, "--format", "harmbench")
    assert "2 rows read; 1 added; 1 set aside ->" in result.output
    table = write_csv(tmp_path / "t.csv", [{"q": "", "a": "", "v": "1"}, {"q": "q", "a": "a", "v": "0"}])
    mapped = run(
        runner, prefix, table, "--map", "prompt=q,response=a,judge_label=v", "--model", "m", "--benchmark", "b"
    )
    assert "2 rows read; 1 added; 1 set aside ->" in mapped.output
    assert "harmful" not in {r["judge_label"] for r in stored(prefix)}
