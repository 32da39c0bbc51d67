"""``summary``'s ranking (stats.shares.ranking_sensitivity) on models with different benchmark
sets (issue #14): ranked on the set they share, every other model left out with its reason, a
macro-average over different sets only on request and flagged in every row."""

from __future__ import annotations

import pandas as pd
import pytest

from annotate.stats.shares import ranking_sensitivity


def shares(coverage: dict[str, list[str]], judge: str = "j") -> pd.DataFrame:
    rows = []
    for k, (model, benches) in enumerate(coverage.items()):
        for i, bench in enumerate(benches):
            rows.append(
                {
                    "judge": judge,
                    "model": model,
                    "benchmark": bench,
                    "share_harmful": 0.05 * (k + 1) + 0.01 * i,
                    "share_ambiguous": 0.1,
                }
            )
    return pd.DataFrame(rows)


OPEN = ["AutoDAN", "GCG", "PAIR", "PAP", "TAP"]
ISSUE = {"llama": OPEN, "mistral": OPEN, "gpt-4": OPEN[:3] + ["TAP"], "gpt-3.5": OPEN[:3] + ["TAP"]}


def test_the_issue_case_ranks_all_four_on_the_four_shared_attacks():
    """Before: the open models averaged over 5 attacks and the GPT models over 4, said nowhere."""
    out = ranking_sensitivity(shares(ISSUE))
    assert set(out.ranking.model) == set(ISSUE)
    assert (out.ranking.n_benchmarks == 4).all()
    assert (out.ranking.benchmark_set == "AutoDAN, GCG, PAIR, TAP").all()
    (s,) = out.sets.to_dict("records")
    assert s["benchmarks"] == ["AutoDAN", "GCG", "PAIR", "TAP"] and s["outside"] == ["PAP"] and s["comparable"]
    assert "that all 4 model(s) share" in s["description"]
    assert out.left_out.empty
    # the open models' rate is over the shared four only
    llama = shares(ISSUE).query("model == 'llama' and benchmark != 'PAP'").share_harmful.mean()
    assert out.ranking.set_index("model").rate_as_safe["llama"] == pytest.approx(llama)


def test_a_model_without_the_shared_benchmarks_is_left_out_with_its_reason():
    coverage = {"a": OPEN, "b": OPEN, "c": OPEN, "d": ["GCG"]}
    out = ranking_sensitivity(shares(coverage))
    assert list(out.left_out.itertuples(index=False)) == [("j", "d", "no results on AutoDAN, PAIR, PAP, TAP")]
    assert set(out.ranking.model) == {"a", "b", "c"}


def test_all_is_flagged_in_every_row_when_the_sets_differ():
    out = ranking_sensitivity(shares(ISSUE), "all")
    assert not out.sets.comparable.iloc[0] and "NOT COMPARABLE" in out.sets.description.iloc[0]
    assert out.ranking.note.str.contains("not comparable").all()
    by = out.ranking.set_index("model")
    assert by.n_benchmarks["llama"] == 5 and by.n_benchmarks["gpt-4"] == 4
    assert by.benchmark_set["llama"] == ", ".join(OPEN)


def test_each_judge_has_its_own_set():
    both = pd.concat([shares(ISSUE, "j1"), shares({"x": ["GCG"], "y": ["GCG", "TAP"]}, "j2")], ignore_index=True)
    out = ranking_sensitivity(both)
    sets = out.sets.set_index("judge")
    assert sets.benchmarks["j1"] == ["AutoDAN", "GCG", "PAIR", "TAP"] and sets.benchmarks["j2"] == ["GCG"]
    assert sets.outside["j2"] == ["TAP"]
    assert out.ranking.groupby("judge").rank_as_safe.max().to_dict() == {"j1": 4.0, "j2": 2.0}


def test_listed_benchmarks():
    out = ranking_sensitivity(shares(ISSUE), ["PAP"])
    assert set(out.ranking.model) == {"llama", "mistral"}
    assert set(out.left_out.reason) == {"no results on PAP"}
