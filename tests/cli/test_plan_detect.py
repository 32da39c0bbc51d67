"""`annotate plan --detect-se`: the answer first, each clear stratum's own number, and where no number
reaches the power, the power of a census (never a requirement the strata cannot hold; issue #41)."""

from __future__ import annotations

import json
import re

from annotate.cli import cli


def run(runner, *args: str):
    result = runner.invoke(cli, ["plan", "--detect-se", *args])
    return result


def test_the_answer_first_with_a_number_per_clear_stratum(runner):
    result = run(runner, "0.60:0.90")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("Review ") and "judge-harmful stratum" in lines[0]
    text = " ".join(lines)
    assert "judge-safe stratum" in text and "with power" in text
    assert "--clear-per-cell" in text and "16 tests" in text
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    assert not re.search(r"needs \d+ per", text)  # no requirement beyond the strata


def test_no_reachable_power_says_so_and_gives_the_census(runner):
    result = run(runner, "0.60:0.90", "--responses", "100")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("By this plan no number of reviews reaches 80% power")
    text = " ".join(lines)
    assert "census" in text and "(power 80%" not in text
    assert all(len(line) <= 100 for line in lines)


def test_json_carries_both_strata_their_caps_and_both_powers(runner):
    result = run(runner, "0.60:0.90", "--judges", "2", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    for key in ("reviews_judge_harmful", "reviews_judge_safe", "capped_judge_harmful", "capped_judge_safe"):
        assert key in out
    assert out["tests"] == 32 and out["alpha"] == 0.10 / 32
    assert out["reachable"] and out["power_promised"] >= out["power"] == 0.8
    assert out["power_reachable"] >= out["power_promised"]
    assert out["clear_per_cell"] == max(out["reviews_judge_harmful"], out["reviews_judge_safe"])

    census = json.loads(run(runner, "0.60:0.90", "--responses", "100", "--json").output)
    assert census["reachable"] is False and census["capped_judge_harmful"] and census["capped_judge_safe"]
    assert census["power_promised"] == census["power_reachable"] < 0.8
    assert census["clear_per_cell"] == 100


def test_bad_sensitivities_are_an_input_error(runner):
    for bad in ("0.9", "0.6:1.2", "a:b"):
        result = run(runner, bad)
        assert result.exit_code == 2 and "MODEL:OTHERS" in result.output
    same = run(runner, "0.9:0.9")
    assert same.exit_code == 2 and "must differ" in same.output


def test_help_shows_an_example_of_detect_se(runner):
    result = runner.invoke(cli, ["plan", "--help"])
    assert result.exit_code == 0
    assert "annotate plan --detect-se 0.60:0.90" in result.output
    assert "judge-harmful" in result.output and "census" in result.output
