"""`annotate summary` on a store whose models cover different benchmarks (issue #14): the
ranking names the shared set and every model left out with its reason, in the table and in
--json; --benchmarks all is flagged. Real SQLite and PostgreSQL stores."""

from __future__ import annotations

import json

from annotate.cli import cli
from tests.helpers import generic_row, write_jsonl

COVERAGE = {
    "llama": ["GCG", "PAIR", "TAP"],
    "mistral": ["GCG", "PAIR", "TAP"],
    "gpt-4": ["GCG", "PAIR"],
    "gpt-3.5": ["GCG", "PAIR"],
    "tiny": ["TAP"],
}


def run(runner, prefix, *args, ok=True):
    result = runner.invoke(cli, [*prefix, *args])
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr if result.stderr_bytes else "")
    return result


def ingest(runner, prefix, tmp_path):
    rows = []
    for k, (model, benches) in enumerate(COVERAGE.items()):
        for bench in benches:
            for i in range(10):
                label = "harmful" if i < k + 1 else ("ambiguous" if i < k + 3 else "safe")
                rows.append(generic_row(i, model=model, benchmark=bench, judge="j", judge_label=label))
    run(runner, prefix, "ingest", str(write_jsonl(tmp_path / "runs.jsonl", rows)))


def test_summary_ranks_on_the_shared_set_and_names_who_is_left_out(workspace, runner, tmp_path):
    _, prefix = workspace
    ingest(runner, prefix, tmp_path)
    data = json.loads(run(runner, prefix, "summary", "--json").output)
    assert data["benchmarks"] == "shared"
    (s,) = data["benchmark_sets"]
    assert s["benchmarks"] == ["GCG", "PAIR"] and s["outside"] == ["TAP"]
    assert {r["model"] for r in data["ranking"]} == {"llama", "mistral", "gpt-4", "gpt-3.5"}
    assert all(r["n_benchmarks"] == 2 and r["benchmark_set"] == "GCG, PAIR" for r in data["ranking"])
    assert data["left_out"] == [{"judge": "j", "model": "tiny", "reason": "no results on GCG, PAIR"}]

    text = run(runner, prefix, "summary").output
    flat = " ".join(text.split())  # sentences are wrapped to 100 columns
    assert "macro-average over the 2 benchmark(s) that all 4 model(s) share (GCG, PAIR)" in flat
    assert "left out: tiny (no results on GCG, PAIR)" in text
    assert "not in this ranking: benchmark(s) TAP" in text


def test_summary_all_is_flagged(workspace, runner, tmp_path):
    _, prefix = workspace
    ingest(runner, prefix, tmp_path)
    data = json.loads(run(runner, prefix, "summary", "--json", "--benchmarks", "all").output)
    assert {r["model"] for r in data["ranking"]} == set(COVERAGE) and data["left_out"] == []
    assert all("not comparable" in r["note"] for r in data["ranking"])
    text = run(runner, prefix, "summary", "--benchmarks", "all").output
    assert "NOT COMPARABLE" in text and "WARNING" in text
    listed = json.loads(run(runner, prefix, "summary", "--json", "--benchmarks", "TAP").output)
    assert {r["model"] for r in listed["ranking"]} == {"llama", "mistral", "tiny"}
    bad = run(runner, prefix, "summary", "--benchmarks", "GCG,nope", ok=False)
    assert bad.exit_code == 2 and "nope" in bad.stderr
