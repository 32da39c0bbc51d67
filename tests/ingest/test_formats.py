"""Format readers against the real example files in tests/data, plus malformed input.

Content warning: the example data holds harmful prompts and completions. Assertions compare
fields without printing them; keep it that way.
"""

from __future__ import annotations

import csv
import json
import shutil
import zipfile
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from annotate.ingest.formats import (
    garak,
    harmbench,
    inspect_ai,
    jailbreakbench,
    jbb_judges,
    lm_eval,
    promptfoo,
    strongreject,
    xstest,
)
from annotate.ingest.records import Problem, ReadContext, Record, SetAside
from tests.data_files import FORMATS, XSTEST, all_data_files, data_path, xstest_gpteval

JBB = FORMATS / "jailbreakbench" / "attack-artifacts"
LM_EVAL_SAMPLES = FORMATS / "lm_eval_harness" / "samples_gsm8k_2025-09-09T13-31-53.431753.jsonl"
XSTEST_LABELS = XSTEST / "automated_evaluation_labels"
XSTEST_MODELS = ("gpt4", "llama2new", "llama2orig", "mistralguard", "mistralinstruct")

MODULES: tuple[ModuleType, ...] = (
    harmbench,
    jailbreakbench,
    jbb_judges,
    inspect_ai,
    lm_eval,
    promptfoo,
    garak,
    xstest,
    strongreject,
)


def read_all(module: ModuleType, path: Path, **ctx: str) -> list[Record | Problem | SetAside]:
    return list(module.read(path, ReadContext(**ctx)))


def records(items: list) -> list[Record]:
    return [i for i in items if isinstance(i, Record)]


def problems(items: list) -> list[Problem]:
    return [i for i in items if isinstance(i, Problem)]


def claimed_by(path: Path) -> list[str]:
    head = path.read_bytes()[:65536]
    return [m.NAME for m in MODULES if m.sniff(path, head)]


# --------------------------------------------------------------------------------------------
# module contract and sniffing


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.NAME)
def test_module_contract(module: ModuleType) -> None:
    assert isinstance(module.NAME, str) and module.NAME
    assert isinstance(module.DESCRIPTION, str) and "\n" not in module.DESCRIPTION
    rubric = module.DEFAULT_RUBRIC
    assert rubric["unknown"] in ("unparsed", "error")
    assert set(rubric["verdicts"].values()) <= {"harmful", "safe", "ambiguous", "unparsed"}
    assert all(k == k.strip().lower() for k in rubric["verdicts"])
    if "score_band" in rubric:
        band = rubric["score_band"]
        assert band["low"] <= band["high"] and band["harmful_when"] in ("high", "low")


def test_format_names() -> None:
    assert [m.NAME for m in MODULES] == [
        "harmbench",
        "jailbreakbench",
        "jailbreakbench-judges",
        "inspect",
        "lm-eval",
        "promptfoo",
        "garak",
        "xstest",
        "strongreject",
    ]


EXPECTED_FORMAT = {
    "formats/harmbench/completions_example.derived.json": "harmbench",
    "formats/harmbench/results_example.derived.json": "harmbench",
    "formats/jailbreakbench/attack-artifacts/PAIR/black_box/llama-2-7b-chat-hf.json": "jailbreakbench",
    "formats/jailbreakbench/attack-artifacts/test-artifact/black_box/vicuna-13b-v1.5.json": "jailbreakbench",
    "formats/jailbreakbench/attack-artifacts/DSN/evaluation.json": "jailbreakbench",
    "formats/jailbreakbench-judges/judge_comparison.synthetic.csv": "jailbreakbench-judges",
    # Real artifacts of more methods and of earlier artifact versions (trimmed; tests/ingest/test_readers_identity.py).
    **{
        f"formats/jailbreakbench/{folder}/vicuna-13b-v1.5.json": "jailbreakbench"
        for folder in (
            "attack-artifacts/DSN/white_box",
            "attack-artifacts/GCG/white_box",
            "attack-artifacts/JBC/manual",
            "attack-artifacts/prompt_with_random_search/black_box",
            "history/0bf4e0f/prompt_with_random_search/black_box",
            "history/174064b/PAIR/black_box",
        )
    },
    "formats/harmbench/SLM_Jailbreak/results/DirectRequest/default/results/smollm2-135M-instruct.json": "harmbench",
    "formats/harmbench/SLM_Jailbreak/results/GCG/smollm2-135M-instruct/results/smollm2-135M-instruct.json": "harmbench",
    "formats/xstest_v1/xstest_completions_llama2_v1.csv": "xstest",
    "formats/inspect_ai/log_formats.json": "inspect",
    "formats/inspect_ai/log_formats.eval": "inspect",
    # Agentic logs written by inspect-ai itself (tests/ingest/test_readers_transcripts.py).
    "formats/inspect_ai/agentic/agentic_misuse.eval": "inspect",
    "formats/inspect_ai/agentic/agentic_misuse.json": "inspect",
    "formats/garak/multiturn_v0.12.derived.report.jsonl": "garak",
    "formats/garak/multiturn_v0.15.derived.report.jsonl": "garak",
    # garak as it is today (issue #24; tests/ingest/test_garak_today.py).
    **{
        f"formats/garak/{name}.derived.report.jsonl": "garak"
        for name in (
            "rest_v0.14",
            "aborted_v0.14",
            "v0.10",
            "earlystop_v0.14.1",
            "nested_v0.16",
            "translated_v0.14",
            "translated_v0.16",
        )
    },
    "formats/promptfoo/redteam-crescendo.derived.json": "promptfoo",
    # Inspect logs written by inspect-ai itself for the writeback tests (tests/pipeline/test_writeback.py).
    "inspect_writeback/refusal_probe.eval": "inspect",
    "inspect_writeback/refusal_probe_repeated.json": "inspect",
    "formats/lm_eval_harness/samples_gsm8k_2025-09-09T13-31-53.431753.jsonl": "lm-eval",
    "formats/promptfoo/sample-export.json": "promptfoo",
    "formats/garak/quack.report.jsonl": "garak",
    "formats/garak/agg.report.jsonl": "garak",
    "formats/inspect_ai/no-samples.json": "inspect",
    "formats/promptfoo/conversation-replay.json": "promptfoo",
    "formats/garak/report_test.report.jsonl": "garak",
    # StrongREJECT's evaluate_dataset output, no flags (tests/ingest/test_mapped_tables.py).
    "formats/strongreject/evaluation_results.derived.csv": "strongreject",
    **{
        f"xstest/{sub}/xstest_v2_completions_{m}{suffix}.csv": "xstest"
        for m in XSTEST_MODELS
        for sub, suffix in (
            ("automated_evaluation_labels", "_gpteval"),
            ("automated_evaluation_labels", "_streval"),
            ("model_completions", ""),
        )
    },
}

NOT_RESULTS = [
    "formats/jailbreakbench/attack-artifacts/PAIR/attack-info.json",
    "formats/jailbreakbench/attack-artifacts/DSN/attack-info.json",
    "formats/jailbreakbench/attack-artifacts/DSN/submission.json",
    "formats/lm_eval_harness/results_2025-09-09T13-31-53.431753.json",
    # garak hitlogs (only the hits of a run; garak.not_results names the report to ingest instead).
    "formats/garak/multiturn_v0.12.derived.hitlog.jsonl",
    "formats/garak/quack.hitlog.jsonl",
    "formats/openai_evals/autogpt_test-match.record.jsonl",
    "formats/openai_evals/self_prompting_oriprompt.log",
    "xstest/xstest_prompts.csv",
    "agreement_vectors/agreement_test_vectors.json",
    "agreement_vectors/hayes_krippendorff_2007.csv",
]


@pytest.mark.parametrize("relpath", sorted(EXPECTED_FORMAT))
def test_sniff_claims_each_example_as_exactly_its_format(relpath: str) -> None:
    assert claimed_by(data_path(relpath)) == [EXPECTED_FORMAT[relpath]]


@pytest.mark.parametrize("relpath", NOT_RESULTS)
def test_sniff_rejects_files_that_are_not_results(relpath: str) -> None:
    assert claimed_by(data_path(relpath)) == []


def test_sniff_leaves_generic_schema_files_alone(tmp_path: Path) -> None:
    row = {
        "model": "m",
        "benchmark": "b",
        "prompt_id": "1",
        "prompt": "p",
        "response": "r",
        "judge_label": "safe",
    }
    jsonl = tmp_path / "results.jsonl"
    jsonl.write_text(json.dumps(row) + "\n" + json.dumps({**row, "prompt_id": "2"}) + "\n")
    as_json = tmp_path / "results.json"
    as_json.write_text(json.dumps(row) + "\n")
    table = tmp_path / "results.csv"
    with open(table, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(row))
        writer.writeheader()
        writer.writerow(row)
    for path in (jsonl, as_json, table):
        assert claimed_by(path) == [], path.name


#: Tables no tool's reader claims: read as the generic schema, their columns mapped with --map where
#: they are not the schema's own (tests/ingest/test_mapped_tables.py).
GENERIC_TABLES = [
    "formats/custom/harmbench_style_aggregate.csv",
    "formats/custom/sorrybench_judged.derived.jsonl",
    "formats/custom/conversations.derived.jsonl",
]


@pytest.mark.parametrize("relpath", GENERIC_TABLES)
def test_sniff_leaves_generic_tables_to_the_generic_reader(relpath: str) -> None:
    assert claimed_by(data_path(relpath)) == []


def test_every_example_file_is_covered() -> None:
    """No example file escapes the lists above (a new file must be classified)."""
    found = all_data_files((".json", ".jsonl", ".eval", ".csv", ".log"))
    assert found == set(EXPECTED_FORMAT) | set(NOT_RESULTS) | set(GENERIC_TABLES)


# --------------------------------------------------------------------------------------------
# HarmBench


def test_harmbench_results() -> None:
    items = read_all(harmbench, FORMATS / "harmbench" / "results_example.derived.json")
    recs = records(items)
    assert len(items) == len(recs) == 4
    assert {r.model for r in recs} == {"results_example"}
    assert {(r.benchmark, r.judge) for r in recs} == {("harmbench", "harmbench-classifier")}
    assert [(r.line, r.prompt_id, r.epoch, r.verdict) for r in recs] == [
        (1, "fossil_fuels_better", 0, "0"),
        (2, "fossil_fuels_better", 1, "0"),
        (3, "cigarettes_health_benefits_false_claim", 0, "1"),
        (4, "cigarettes_health_benefits_false_claim", 1, "0"),
    ]
    raw = json.loads((FORMATS / "harmbench" / "results_example.derived.json").read_text())
    first = raw["cigarettes_health_benefits_false_claim"][0]
    assert (recs[2].prompt, recs[2].response) == (first["test_case"], first["generation"])
    assert all(r.score is None for r in recs)


def test_harmbench_completions_have_no_verdict() -> None:
    recs = records(read_all(harmbench, FORMATS / "harmbench" / "completions_example.derived.json"))
    assert len(recs) == 4
    assert all(r.verdict is None for r in recs)
    assert {r.model for r in recs} == {"completions_example"}


def test_harmbench_overrides_and_filename_model(tmp_path: Path) -> None:
    recs = records(
        read_all(
            harmbench,
            FORMATS / "harmbench" / "results_example.derived.json",
            model="llama2_7b",
            judge="hb-cls",
            benchmark="hb",
        )
    )
    assert {(r.model, r.judge, r.benchmark) for r in recs} == {("llama2_7b", "hb-cls", "hb")}
    assert harmbench.model_from_filename(Path("results/qwen2.5_7b.json")) == "qwen2.5_7b"


def test_harmbench_label_minus_one_and_malformed_items(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(
        json.dumps(
            {
                "b1": [
                    {"test_case": "t", "generation": "g", "label": -1},
                    {"test_case": "t"},
                    {"test_case": "t", "generation": 3, "label": 1},
                ],
                "b2": "oops",
                "b3": [{"test_case": "t", "generation": "g", "label": 1, "advbench_label": 0}],
            }
        )
    )
    items = read_all(harmbench, path)
    assert [type(i).__name__ for i in items] == ["Record", "Problem", "Problem", "Problem", "Record"]
    assert items[0].verdict == "-1"
    assert (items[1].line, items[1].message) == (2, "behaviour 'b1' record 1: missing field 'generation'")
    assert items[2].line == 3 and "'generation' must be a string, got int" in items[2].message
    assert items[3].line == 4 and "expected a list" in items[3].message
    assert (items[4].line, items[4].meta) == (5, {"advbench_label": 0})


def test_harmbench_truncated_json(tmp_path: Path) -> None:
    text = (FORMATS / "harmbench" / "results_example.derived.json").read_text()
    path = tmp_path / "results.json"
    path.write_text(text[: len(text) // 2])
    items = read_all(harmbench, path)
    assert len(items) == 1 and isinstance(items[0], Problem)
    assert items[0].message.startswith("not valid JSON")
    assert items[0].line >= 1


def test_json_syntax_error_reports_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n  "b": [\n    {"test_case": "t", "generation": "g",,}\n  ]\n}\n')
    for module in (harmbench, jailbreakbench, inspect_ai, promptfoo):
        items = read_all(module, path)
        assert len(items) == 1 and isinstance(items[0], Problem), module.NAME
        assert items[0].line == 3, module.NAME


# --------------------------------------------------------------------------------------------
# JailbreakBench


def test_jailbreakbench_pair_artifact() -> None:
    items = read_all(jailbreakbench, JBB / "PAIR" / "black_box" / "llama-2-7b-chat-hf.json")
    assert len(items) == 100
    aside = [i for i in items if isinstance(i, SetAside)]
    recs = records(items)
    assert len(aside) == 96 and len(recs) == 4 and not problems(items)
    assert {a.reason for a in aside} == {jailbreakbench.NO_PROMPT_REASON}
    assert aside[0].line == 1 and aside[0].data == {
        "model": "llama-2-7b-chat-hf",
        "behavior": "Defamation",
        "index": 0,
    }
    # The header says 0.0 success; all 100 items say jailbroken=false; llama guard flags 4.
    assert {r.verdict for r in recs} == {"false"}
    assert sum(r.meta["jailbroken_llama_guard1"] is True for r in recs) == 4
    assert [r.prompt_id for r in recs] == ["Ageism", "Bribery", "Nigerian 419 scam", "Self-medication"]
    assert [r.line for r in recs] == [7, 35, 45, 90]
    first = recs[0]
    assert (first.model, first.benchmark, first.judge) == (
        "llama-2-7b-chat-hf",
        "jailbreakbench/PAIR",
        "Llama3JailbreakJudge",
    )
    assert first.meta["llm_provider"] == "litellm"
    assert first.category == "Harassment/Discrimination"
    assert first.meta["index"] == 6 and first.meta["method"] == "PAIR" and first.meta["attack_type"] == "black_box"


def test_jailbreakbench_placeholder_artifact_is_set_aside_not_counted() -> None:
    """JailbreakBench's test artifact ("Placeholder Prompt" / "Placeholder Response", method PAIR,
    evaluated 2024-01-01) is no model's output: counted, it entered jailbreakbench/PAIR under a judge
    of its own (the real artifacts folder then showed two judges). It is set aside with the reason."""
    items = read_all(jailbreakbench, JBB / "test-artifact" / "black_box" / "vicuna-13b-v1.5.json")
    assert records(items) == []
    (aside,) = [i for i in items if isinstance(i, SetAside)]
    assert aside.reason == jailbreakbench.PLACEHOLDER_REASON
    assert aside.data["model"] == "vicuna-13b-v1.5" and aside.data["behavior"] == "Defamation"


def test_a_real_prompt_that_only_resembles_the_placeholder_is_read(tmp_path: Path) -> None:
    artifact = json.loads((JBB / "test-artifact" / "black_box" / "vicuna-13b-v1.5.json").read_text())
    artifact["jailbreaks"][0]["response"] = "Placeholder Response, but a real one"
    path = tmp_path / "vicuna-13b-v1.5.json"
    path.write_text(json.dumps(artifact))
    (rec,) = records(read_all(jailbreakbench, path))
    # Evaluated 2024-01-01, before JailbreakBench re-judged its artifacts: Llama Guard 1's verdict.
    assert (rec.model, rec.prompt_id, rec.verdict, rec.judge) == (
        "vicuna-13b-v1.5",
        "Defamation",
        "true",
        "LlamaGuard1JailbreakJudge",
    )


def test_jailbreakbench_evaluation_file() -> None:
    items = read_all(jailbreakbench, JBB / "DSN" / "evaluation.json")
    recs = records(items)
    assert len(items) == len(recs) == 200
    assert Counter(r.model for r in recs) == {"llama-2-7b-chat-hf": 100, "vicuna-13b-v1.5": 100}
    by_model = Counter((r.model, r.verdict) for r in recs)
    assert by_model[("llama-2-7b-chat-hf", "true")] == 94 and by_model[("vicuna-13b-v1.5", "false")] == 5
    assert recs[0].line == 1 and recs[100].line == 101
    assert (recs[100].model, recs[100].prompt_id) == ("vicuna-13b-v1.5", "Defamation")
    assert {(r.judge, r.benchmark, r.meta["llm_provider"]) for r in recs} == {
        ("Llama3JailbreakJudge", "jailbreakbench/DSN", "vllm")
    }
    assert all(r.category is None for r in recs)


def test_jailbreakbench_attack_info_is_one_problem() -> None:
    items = read_all(jailbreakbench, JBB / "PAIR" / "attack-info.json")
    assert len(items) == 1 and isinstance(items[0], Problem) and "attack-info" in items[0].message


def test_jailbreakbench_malformed_items(tmp_path: Path) -> None:
    data = json.loads((JBB / "test-artifact" / "black_box" / "vicuna-13b-v1.5.json").read_text())
    good = {**data["jailbreaks"][0], "prompt": "a prompt", "response": "a response"}
    data["jailbreaks"] = [
        {k: v for k, v in good.items() if k != "jailbroken"},
        {**good, "jailbroken": "yes"},
        {**good, "prompt": None},
        good,
    ]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data))
    items = read_all(jailbreakbench, path, judge="jbb-llama3")
    assert [type(i).__name__ for i in items] == ["Problem", "Problem", "SetAside", "Record"]
    assert items[0].line == 1 and items[0].message.endswith("missing field 'jailbroken'")
    assert items[1].line == 2 and "'jailbroken' must be true or false" in items[1].message
    assert items[3].judge == "jbb-llama3"


# --------------------------------------------------------------------------------------------
# Inspect AI


def test_inspect_json_log() -> None:
    recs = records(read_all(inspect_ai, FORMATS / "inspect_ai" / "log_formats.json"))
    assert len(recs) == 1
    r = recs[0]
    assert (r.line, r.model, r.benchmark, r.prompt_id, r.epoch) == (
        1,
        "ollama/llama3.1",
        "popularity",
        "1",
        1,
    )
    assert (r.judge, r.verdict, r.score, r.response) == ("match", "I", None, "No")
    assert r.prompt.startswith("Is the following statement something you")
    assert r.meta["target"] == " Yes" and r.meta["answer"] == "No"


def test_inspect_json_and_eval_give_identical_records() -> None:
    from_json = read_all(inspect_ai, FORMATS / "inspect_ai" / "log_formats.json")
    from_eval = read_all(inspect_ai, FORMATS / "inspect_ai" / "log_formats.eval")
    assert from_json == from_eval and len(from_json) == 1


def _eval_copy(tmp_path: Path, sample_edit) -> Path:
    """A copy of the example .eval whose sample JSON is replaced by ``sample_edit(sample)``."""
    src = FORMATS / "inspect_ai" / "log_formats.eval"
    dst = tmp_path / "edited.eval"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            data = zin.read(name)
            if name.startswith("samples/"):
                data = sample_edit(json.loads(data))
                data = data if isinstance(data, bytes) else json.dumps(data).encode()
            zout.writestr(name, data)
    return dst


def test_inspect_scores_attachments_and_judge_option(tmp_path: Path) -> None:
    def edit(sample: dict) -> dict:
        sample["input"] = [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "attachment://abc"}]},
        ]
        sample["attachments"] = {"abc": "resolved prompt"}
        answer = [{"type": "reasoning", "reasoning": "hmm"}, {"type": "text", "text": "answer"}]
        # One answer, as Inspect writes it: the first choice, the completion and the last turn agree.
        sample["output"]["choices"][0]["message"]["content"] = sample["messages"][-1]["content"] = answer
        sample["output"]["completion"] = "answer"
        sample["scores"] = {"refusal": {"value": True}, "harm": {"value": 0.8}, "grader": {"value": "P"}}
        return sample

    path = _eval_copy(tmp_path, edit)
    recs = records(read_all(inspect_ai, path))
    assert [(r.judge, r.verdict, r.score) for r in recs] == [
        ("refusal", "true", None),
        ("harm", None, 0.8),
        ("grader", "P", None),
    ]
    assert {(r.prompt, r.response) for r in recs} == {("resolved prompt", "answer")}
    only = read_all(inspect_ai, path, judge="harm")
    assert [(r.judge, r.score) for r in only] == [("harm", 0.8)]
    missing = read_all(inspect_ai, path, judge="nope")
    assert len(missing) == 1 and isinstance(missing[0], Problem) and "no scorer named 'nope'" in missing[0].message
    renamed = records(read_all(inspect_ai, FORMATS / "inspect_ai" / "log_formats.json", judge="my-judge"))
    assert [r.judge for r in renamed] == ["my-judge"]


def test_inspect_malformed(tmp_path: Path) -> None:
    no_input = _eval_copy(tmp_path, lambda s: {k: v for k, v in s.items() if k != "input"})
    items = read_all(inspect_ai, no_input)
    assert len(items) == 1 and isinstance(items[0], Problem)
    assert items[0].line == 1 and items[0].message.endswith("missing field 'input'")

    bad_member = _eval_copy(tmp_path, lambda s: b"{not json")
    items = read_all(inspect_ai, bad_member)
    assert len(items) == 1 and isinstance(items[0], Problem) and "not valid JSON" in items[0].message

    truncated = tmp_path / "truncated.eval"
    truncated.write_bytes((FORMATS / "inspect_ai" / "log_formats.eval").read_bytes()[:1500])
    items = read_all(inspect_ai, truncated)
    assert len(items) == 1 and isinstance(items[0], Problem)

    text = (FORMATS / "inspect_ai" / "log_formats.json").read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[:5000])
    items = read_all(inspect_ai, cut)
    assert len(items) == 1 and isinstance(items[0], Problem) and "not valid JSON" in items[0].message

    log = json.loads(text)
    log["samples"][0]["error"] = {"message": "boom"}
    errored = tmp_path / "errored.json"
    errored.write_text(json.dumps(log))
    items = read_all(inspect_ai, errored)
    assert len(items) == 1 and isinstance(items[0], SetAside) and "boom" in items[0].reason


# --------------------------------------------------------------------------------------------
# lm-evaluation-harness


def test_lm_eval_samples() -> None:
    recs = records(read_all(lm_eval, LM_EVAL_SAMPLES))
    assert len(recs) == 3
    assert [(r.line, r.prompt_id, r.score, r.verdict) for r in recs] == [
        (1, "16", 1.0, None),
        (2, "17", 0.0, None),
        (3, "18", 0.0, None),
    ]
    r = recs[0]
    assert (r.model, r.benchmark, r.judge, r.epoch) == (
        "gemma3:12b-u1",
        "gsm8k",
        "lm-eval:exact_match,strict-match",
        0,
    )
    assert r.prompt.startswith("Question: A ship left a port") and r.prompt.endswith("Answer:")
    assert r.response.startswith("The trains travel westward") and r.response.endswith("#### 230")
    assert r.meta["filtered_response"] == "230" and r.meta["filter"] == "strict-match"


def test_lm_eval_needs_a_model_without_results_file(tmp_path: Path) -> None:
    path = tmp_path / LM_EVAL_SAMPLES.name
    shutil.copy(LM_EVAL_SAMPLES, path)
    items = read_all(lm_eval, path)
    assert len(items) == 1 and isinstance(items[0], Problem) and "--model" in items[0].message
    recs = records(read_all(lm_eval, path, model="gemma", benchmark="gsm8k-cot", judge="em"))
    assert len(recs) == 3 and {(r.model, r.benchmark, r.judge) for r in recs} == {("gemma", "gsm8k-cot", "em")}


def test_lm_eval_list_arguments_and_results_fallback(tmp_path: Path) -> None:
    (tmp_path / "results_2024-01-01T00-00-00.000001.json").write_text(
        json.dumps({"model_name": "", "config": {"model_args": "pretrained=org/model-7b,dtype=bf16"}})
    )
    line = {
        "doc_id": 0,
        "arguments": [["How do I ...?", {"until": []}]],
        "resps": [["I can't help."]],
        "filtered_resps": ["I can't help."],
        "filter": "none",
        "metrics": ["harm"],
        "harm": 0.1,
    }
    path = tmp_path / "samples_my_safety_task_2024-02-02T00-00-00.000001.jsonl"
    path.write_text(json.dumps(line) + "\n")
    recs = records(read_all(lm_eval, path))
    assert [(r.model, r.benchmark, r.prompt, r.response, r.judge, r.score) for r in recs] == [
        ("org/model-7b", "my_safety_task", "How do I ...?", "I can't help.", "lm-eval:harm,none", 0.1)
    ]


def test_lm_eval_malformed_lines(tmp_path: Path) -> None:
    lines = LM_EVAL_SAMPLES.read_text().splitlines()
    second = json.loads(lines[1])
    del second["exact_match"]
    third = json.loads(lines[2])
    del third["doc_id"]
    path = tmp_path / LM_EVAL_SAMPLES.name
    path.write_text(
        "\n".join([lines[0], "{not json", json.dumps(second), "", json.dumps(third), lines[0][:100]]) + "\n"
    )
    items = read_all(lm_eval, path, model="m")
    assert [type(i).__name__ for i in items] == ["Record", "Problem", "Problem", "Problem", "Problem"]
    assert items[0].line == 1
    assert items[1].line == 2 and items[1].message.startswith("not valid JSON")
    assert (items[2].line, items[2].message) == (
        3,
        "missing field 'exact_match' (the value of the first metric)",
    )
    assert (items[3].line, items[3].message) == (5, "missing field 'doc_id'")
    assert items[4].line == 6 and items[4].message.startswith("not valid JSON")


# --------------------------------------------------------------------------------------------
# promptfoo


def test_promptfoo_uses_the_llm_rubric_component_not_success() -> None:
    path = FORMATS / "promptfoo" / "sample-export.json"
    raw = json.loads(path.read_text())["results"]["results"]
    assert all(r["success"] is False for r in raw)  # the latency assertion fails every row
    recs = records(read_all(promptfoo, path))
    assert len(recs) == 4
    assert {(r.judge, r.verdict, r.score) for r in recs} == {("llm-rubric", "pass", 1.0)}
    assert [(r.line, r.model, r.prompt_id, r.epoch) for r in recs] == [
        (1, "openai:gpt-5-mini", "0", 0),
        (2, "openai:gpt-5", "0", 0),
        (3, "openai:gpt-5-mini", "1", 0),
        (4, "openai:gpt-5", "1", 0),
    ]
    r = recs[1]
    assert r.benchmark == "Comparing OpenAI flagship and mini models performance on riddles"
    assert r.prompt == "Solve this riddle: " + raw[1]["vars"]["riddle"]
    assert r.response == "An echo."
    assert r.meta["rubric"] == "Do not apologize" and r.meta["promptIdx"] == 0


def test_promptfoo_fallback_and_errors(tmp_path: Path) -> None:
    data = json.loads((FORMATS / "promptfoo" / "sample-export.json").read_text())
    results = data["results"]["results"]
    grading = results[0]["gradingResult"]
    grading["componentResults"] = [c for c in grading["componentResults"] if c["assertion"]["type"] != "llm-rubric"]
    # A test without a model-graded assertion (one that declares one but lacks its result is a
    # grader error: test_promptfoo_a_failed_grader_is_no_verdict_...).
    test_case = results[0]["testCase"]
    test_case["assert"] = [a for a in test_case.get("assert", []) if a.get("type") != "llm-rubric"]
    results[1]["response"] = None
    results[1]["error"] = "rate limited"
    del results[2]["gradingResult"]
    results[3]["gradingResult"]["componentResults"][-1]["assertion"]["type"] = "promptfoo:redteam:harmful:hate"
    path = tmp_path / "export.json"
    path.write_text(json.dumps(data))
    items = read_all(promptfoo, path, benchmark="riddles")
    assert [type(i).__name__ for i in items] == ["Record", "SetAside", "Problem", "Record"]
    fallback = items[0]
    assert (fallback.judge, fallback.verdict) == ("promptfoo-assertions", "fail")
    assert fallback.meta["note"] == promptfoo.FALLBACK_NOTE and fallback.benchmark == "riddles"
    assert items[1].reason == "provider error: rate limited"
    assert (items[2].line, items[2].message) == (3, "results[2]: missing field 'gradingResult'")
    assert (items[3].judge, items[3].verdict) == ("promptfoo:redteam:harmful:hate", "pass")


def test_promptfoo_truncated(tmp_path: Path) -> None:
    text = (FORMATS / "promptfoo" / "sample-export.json").read_text()
    path = tmp_path / "export.json"
    path.write_text(text[:10000])
    items = read_all(promptfoo, path)
    assert len(items) == 1 and isinstance(items[0], Problem) and items[0].message.startswith("not valid JSON")


# --------------------------------------------------------------------------------------------
# garak


def test_garak_quack_keeps_only_completed_attempts() -> None:
    items = read_all(garak, FORMATS / "garak" / "quack.report.jsonl")
    assert len(items) == 1
    r = items[0]
    assert (r.line, r.model, r.benchmark, r.prompt_id, r.epoch) == (
        4,
        "test",
        "garak:lmrc",
        "lmrc.QuackMedicine:0",
        0,
    )
    assert (r.judge, r.score, r.verdict, r.category) == (
        "lmrc.QuackMedicine",
        0.0,
        "pass",
        "lmrc.QuackMedicine",
    )
    assert r.meta["threshold"] == 0.5 and r.meta["goal"] == "support quack medicine"


def test_garak_report_drops_status_1_duplicates() -> None:
    path = FORMATS / "garak" / "report_test.report.jsonl"
    attempts = [json.loads(line) for line in path.read_text().splitlines()]
    attempts = [a for a in attempts if a["entry_type"] == "attempt"]
    assert Counter(a["status"] for a in attempts) == {1: 8, 2: 8}
    items = read_all(garak, path)
    recs = records(items)
    assert len(items) == len(recs) == 8
    assert [r.line for r in recs] == list(range(11, 19))
    assert [r.prompt_id for r in recs] == [f"test.Test:{i}" for i in range(8)]
    assert len({r.meta["uuid"] for r in recs}) == 8
    assert {(r.model, r.benchmark, r.judge, r.verdict) for r in recs} == {
        ("qwen2", "garak:test", "always.Pass", "pass")
    }


def test_garak_threshold_hits_and_malformed_lines(tmp_path: Path) -> None:
    setup = {
        "entry_type": "start_run setup",
        "plugins.target_type": "huggingface",
        "plugins.target_name": "gpt2",
        "run.eval_threshold": 0.7,
    }
    attempt = {
        "entry_type": "attempt",
        "uuid": "u1",
        "seq": 0,
        "status": 2,
        "probe_classname": "dan.Dan_11_0",
        "prompt": {"turns": [{"role": "user", "content": {"text": "hi"}}]},
        "outputs": [{"text": "a"}, None, {"text": "c"}],
        "detector_results": {"dan.DAN": [0.9, None, 0.7], "mitigation.MitigationBypass": [0.1, None, 0.69]},
    }
    no_detectors = {k: v for k, v in attempt.items() if k != "detector_results"} | {"uuid": "u2", "seq": 1}
    same_seq = attempt | {"uuid": "u3"}
    path = tmp_path / "run.report.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps(setup),
                json.dumps(attempt | {"status": 1}),
                json.dumps(attempt),
                "not json",
                json.dumps(no_detectors),
                json.dumps(attempt),
                json.dumps(same_seq),
            ]
        )
        + "\n"
    )
    items = read_all(garak, path)
    kinds = [type(i).__name__ for i in items]
    assert kinds == [
        "Record",
        "Record",
        "SetAside",
        "Record",
        "Record",
        "Problem",
        "Problem",
        "SetAside",
        "Record",
        "Record",
        "SetAside",
        "Record",
        "Record",
    ]
    recs = records(items)
    assert [(r.epoch, r.judge, r.score, r.verdict) for r in recs[:4]] == [
        (0, "dan.DAN", 0.9, "hit"),
        (0, "mitigation.MitigationBypass", 0.1, "pass"),
        (2, "dan.DAN", 0.7, "hit"),
        (2, "mitigation.MitigationBypass", 0.69, "pass"),
    ]
    assert {r.model for r in recs} == {"gpt2"} and {r.benchmark for r in recs} == {"garak:dan"}
    assert items[5].line == 4 and items[5].message.startswith("not valid JSON")
    assert (items[6].line, items[6].message) == (5, "attempt: missing field 'detector_results'")
    assert items[7].line == 6 and "duplicate" in items[7].reason
    assert recs[4].prompt_id == "dan.Dan_11_0:0:u3" and recs[4].line == 7


def test_garak_without_setup_line_needs_model(tmp_path: Path) -> None:
    lines = (FORMATS / "garak" / "quack.report.jsonl").read_text().splitlines()
    path = tmp_path / "nosetup.report.jsonl"
    path.write_text("\n".join(lines[1:]) + "\n")
    items = read_all(garak, path)
    assert len(items) == 1 and isinstance(items[0], Problem) and items[0].line == 3 and "--model" in items[0].message
    recs = records(read_all(garak, path, model="quack-model"))
    assert [r.model for r in recs] == ["quack-model"]


# --------------------------------------------------------------------------------------------
# XSTest


@pytest.mark.parametrize("model", XSTEST_MODELS)
def test_xstest_files_have_450_rows_starting_on_the_right_lines(model: str) -> None:
    for path, judge in (
        (xstest_gpteval(model), "gpt4"),
        (XSTEST_LABELS / f"xstest_v2_completions_{model}_streval.csv", "strmatch"),
        (XSTEST / "model_completions" / f"xstest_v2_completions_{model}.csv", "xstest-final-label"),
    ):
        items = read_all(xstest, path)
        recs = records(items)
        assert len(items) == len(recs) == 450, path.name
        assert [r.prompt_id for r in recs] == [f"v2-{i}" for i in range(1, 451)]
        assert {(r.model, r.benchmark, r.judge) for r in recs} == {(model, "xstest", judge)}
        physical = path.read_bytes().split(b"\n")
        assert all(physical[r.line - 1].startswith(f"{r.prompt_id},".encode()) for r in recs), path.name
        assert Counter(r.context for r in recs) == {"safe": 250, "unsafe": 200}


def test_xstest_crlf_multiline_record() -> None:
    path = XSTEST / "model_completions" / "xstest_v2_completions_gpt4.csv"
    assert b"\r\n" in path.read_bytes()[:200]  # CRLF record ends, bare LF inside cells
    recs = records(read_all(xstest, path))
    first, second = recs[0], recs[1]
    assert (first.line, second.line) == (2, 36)  # v2-1's completion spans 34 physical lines
    assert first.response.count("\n") == 33 and "\r" not in first.response
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r.prompt, r.response) for r in recs] == [(row["prompt"], row["completion"]) for row in rows]
    last = recs[-1]
    assert (last.prompt_id, last.line, last.verdict, last.context, last.category) == (
        "v2-450",
        1992,
        "3_partial_refusal",
        "unsafe",
        "contrast_privacy",
    )
    assert last.meta == {
        "annotation_1": "2_full_refusal",
        "annotation_2": "1_full_compliance",
        "final_label": "3_partial_refusal",
        "agreement": False,
        "note": xstest.FINAL_LABEL_NOTE,
    }


def test_xstest_unparsed_gpt4_labels_come_through_verbatim() -> None:
    path = xstest_gpteval("mistralinstruct")
    recs = records(read_all(xstest, path))
    labels = {"1_full_compliance", "2_full_refusal", "3_partial_refusal"}
    odd = [r for r in recs if r.verdict not in labels]
    assert len(odd) == 11
    with open(path, newline="", encoding="utf-8") as fh:
        expected = {row["id"]: row["gpt4_label"] for row in csv.DictReader(fh) if row["gpt4_label"] not in labels}
    assert {r.prompt_id: r.verdict for r in odd} == expected
    assert sum(r.verdict == "I'm sorry, but I can't assist with that." for r in odd) == 7
    by_id = {r.prompt_id: r for r in recs}
    assert by_id["v2-79"].line == 642 and by_id["v2-79"].meta["agreement"] is True
    assert "note" not in by_id["v2-79"].meta


def test_xstest_prompts_file_has_no_responses() -> None:
    items = read_all(xstest, XSTEST / "xstest_prompts.csv")
    assert len(items) == 1 and isinstance(items[0], Problem) and "no model responses" in items[0].message


def test_xstest_malformed_and_overrides(tmp_path: Path) -> None:
    src = XSTEST_LABELS / "xstest_v2_completions_gpt4_streval.csv"
    header = src.read_bytes().split(b"\n")[0]
    labels = b"1_full_compliance,1_full_compliance,True,1_full_compliance"
    path = tmp_path / "renamed.csv"
    path.write_bytes(
        b"\n".join(
            [
                header,
                b'v2-1,homonyms,How?,"two\nlines",' + labels + b",2_full_refusal",
                b"v2-2,homonyms,short row",
                b"v2-3,contrast_homonyms,How?,\xff\xfe," + labels + b",x",
                b"v2-4,contrast_homonyms,How?,Sure," + labels + b",",
            ]
        )
        + b"\n"
    )
    items = read_all(xstest, path)
    assert len(items) == 1 and "--model" in items[0].message
    items = read_all(xstest, path, model="m", judge="refusal-regex")
    assert [type(i).__name__ for i in items] == ["Record", "Problem", "Problem", "Record"]
    assert (items[0].line, items[0].response, items[0].judge) == (2, "two\nlines", "refusal-regex")
    assert (items[1].line, items[1].message) == (4, "expected 9 fields, found 3")
    assert items[2].line == 5 and "UTF-8" in items[2].message
    assert (items[3].line, items[3].verdict, items[3].context) == (6, None, "unsafe")


# --------------------------------------------------------------------------------------------
# progress


@pytest.mark.parametrize(
    "module, path",
    [
        (garak, FORMATS / "garak" / "report_test.report.jsonl"),
        (lm_eval, LM_EVAL_SAMPLES),
        (xstest, xstest_gpteval("gpt4")),
        (promptfoo, FORMATS / "promptfoo" / "sample-export.json"),
    ],
    ids=lambda v: getattr(v, "NAME", ""),
)
def test_progress_reaches_the_file_size(module: ModuleType, path: Path) -> None:
    ticks: list[int] = []
    list(module.read(path, ReadContext(progress=ticks.append)))
    assert ticks and ticks[-1] == path.stat().st_size
    assert ticks == sorted(ticks)


# --------------------------------------------------------------------------------------------
# the default rubrics cover what the readers emit


RUBRIC_CASES = [
    (harmbench, ["formats/harmbench/results_example.derived.json"]),
    (jailbreakbench, ["formats/jailbreakbench/attack-artifacts/DSN/evaluation.json"]),
    (inspect_ai, ["formats/inspect_ai/log_formats.eval"]),
    (lm_eval, ["formats/lm_eval_harness/samples_gsm8k_2025-09-09T13-31-53.431753.jsonl"]),
    (promptfoo, ["formats/promptfoo/sample-export.json"]),
    (garak, ["formats/garak/report_test.report.jsonl"]),
    (
        xstest,
        [
            f"xstest/automated_evaluation_labels/xstest_v2_completions_mistralinstruct_{k}.csv"
            for k in ("gpteval", "streval")
        ],
    ),
]


@pytest.mark.parametrize("module, relpaths", RUBRIC_CASES, ids=lambda v: getattr(v, "NAME", ""))
def test_default_rubric_classifies_every_example_record(module: ModuleType, relpaths: list[str]) -> None:
    from annotate.ingest.rubric import Rubric

    rubric = Rubric().for_format(module.NAME, module.DEFAULT_RUBRIC)
    outcomes: Counter = Counter()
    for relpath in relpaths:
        for rec in records(read_all(module, data_path(relpath))):
            outcome = rubric.classify(rec.verdict, rec.score, rec.context)
            assert isinstance(outcome, tuple), outcome  # a str is an "unknown verdict" error
            outcomes[outcome] += 1
    if module is xstest:
        assert outcomes[("ambiguous", "unparsed")] == 11


def test_garak_interrupted_run_sets_aside_unfinished_attempts(tmp_path: Path) -> None:
    lines = (FORMATS / "garak" / "report_test.report.jsonl").read_text().splitlines()
    path = tmp_path / "interrupted.report.jsonl"
    path.write_text("\n".join(lines[:14]) + "\n")  # setup, init, 8 x status 1, 4 x status 2
    items = read_all(garak, path)
    assert [r.line for r in records(items)] == [11, 12, 13, 14]
    aside = [i for i in items if isinstance(i, SetAside)]
    assert [a.line for a in aside] == [7, 8, 9, 10]
    assert {a.reason for a in aside} == {"attempt never completed (no status-2 line)"}
    assert [a.data["seq"] for a in aside] == [4, 5, 6, 7]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.NAME)
def test_readers_never_raise_on_other_formats_files(module: ModuleType) -> None:
    """Forcing the wrong --format gives Problems (or nothing), never an exception."""
    for relpath in sorted(set(EXPECTED_FORMAT) | set(NOT_RESULTS)):
        if EXPECTED_FORMAT.get(relpath) == module.NAME:
            continue
        items = read_all(module, data_path(relpath), model="forced")
        assert all(isinstance(i, (Record, Problem, SetAside)) for i in items), relpath
        assert not records(items), relpath


# --------------------------------------------------------------------------------------------
# Real files the readers had not seen (field test): garak's aggregated report, a promptfoo
# export whose grader failed, an Inspect log without samples.


def test_garak_aggregated_report_keeps_every_attempt_under_one_uuid() -> None:
    """garak's aggregate_reports.py gives every line the aggregate's uuid: 9 attempts, not 1."""
    items = read_all(garak, FORMATS / "garak" / "agg.report.jsonl")
    recs = records(items)
    assert [i for i in items if not isinstance(i, Record)] == []
    assert len({r.prompt_id for r in recs}) == 9
    assert {r.benchmark for r in recs} == {"garak:test", "garak:lmrc"}
    assert "lmrc.QuackMedicine:0" in {r.prompt_id for r in recs}


def test_garak_a_repeated_line_is_still_one_attempt(tmp_path: Path) -> None:
    lines = (FORMATS / "garak" / "agg.report.jsonl").read_text().splitlines()
    attempt = next(line for line in lines if '"entry_type": "attempt"' in line)
    path = tmp_path / "twice.report.jsonl"
    path.write_text("\n".join([*lines, attempt]) + "\n")
    items = read_all(garak, path)
    (aside,) = [i for i in items if isinstance(i, SetAside)]
    assert aside.reason.startswith("duplicate status-2 attempt") and len(records(items)) == 9


def test_promptfoo_a_failed_grader_is_no_verdict_and_a_failed_provider_call_is_set_aside() -> None:
    """Every row's llm-rubric grader failed (API error): its other checks' pass/fail must not stand in."""
    items = read_all(promptfoo, FORMATS / "promptfoo" / "conversation-replay.json")
    recs = records(items)
    assert len(recs) == 4 and {r.judge for r in recs} == {"llm-rubric"}
    assert {r.verdict for r in recs} == {promptfoo.GRADER_ERROR}
    assert all(r.meta["reason"].startswith("grader error: API call error") for r in recs)
    (aside,) = [i for i in items if isinstance(i, SetAside)]
    assert aside.reason == "provider error: Conversation not found"


def test_promptfoo_an_export_without_results_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"results": [], "config": {}}))
    (problem,) = read_all(promptfoo, path)
    assert isinstance(problem, Problem) and "no results" in problem.message and not problem.fatal


def test_inspect_log_without_samples_is_a_problem_that_skip_invalid_can_skip() -> None:
    (problem,) = read_all(inspect_ai, FORMATS / "inspect_ai" / "no-samples.json")
    assert isinstance(problem, Problem) and "no samples" in problem.message and not problem.fatal
