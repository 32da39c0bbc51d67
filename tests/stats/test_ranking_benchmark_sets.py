"""Comparable rankings (issue #14): the overall ranking of ``score`` compares models on the
benchmarks they share, states that set, and lists every model it leaves out with its reason; a
macro-average over different sets only on request, flagged in every row."""

from __future__ import annotations

import pandas as pd
import pytest

from annotate.audit.scores import score_payload
from annotate.columns import ALL
from annotate.stats.ranking import shared_benchmarks
from annotate.stats.scoring import tables
from tests.helpers import design_strata

from .test_scoring_invariant import audit_tables, strata_rows

FIVE = ["AutoDAN", "GCG", "PAIR", "PAP", "TAP"]


def attack_design(coverage: dict[str, list[str]], unreviewed: tuple[str, str] | None = None) -> pd.DataFrame:
    """One cell per (model, attack) covered; ``unreviewed``: a cell whose clear strata were not reviewed."""
    frames = []
    for k, (model, benches) in enumerate(coverage.items()):
        for i, bench in enumerate(benches):
            n = (0, 0, 120) if (model, bench) == unreviewed else (25, 25, 120)
            y = (min(20, n[0]), min(1 + (i + k) % 3, n[1]), 30 + 5 * k)
            frames.append(strata_rows(model, bench, (100, 500, 120), n, y, (0, 0, 0)))
    return pd.concat(frames, ignore_index=True)


ISSUE = {
    "llama": FIVE,
    "mistral": FIVE,
    "gpt-4": ["AutoDAN", "GCG", "PAIR", "TAP"],
    "gpt-3.5": ["AutoDAN", "GCG", "PAIR", "TAP"],
}


def overall(out: tables.ScoreOutput) -> pd.DataFrame:
    s = out.scores
    return s[(s.benchmark == ALL) & (s.treatment == "corrected")].set_index("model")


def test_models_over_different_sets_are_ranked_on_the_shared_set():
    """Before: gpt-4 and gpt-3.5 'not estimable' overall, 2 of 4 models ranked, no one said why."""
    labels, doc = audit_tables(attack_design(ISSUE))
    out = tables.score_tables(labels, design_strata(doc), draws=200, seed=1)
    rows = overall(out)
    assert rows["rank"].notna().all() and len(rows) == 4
    assert set(out.models.model) == set(ISSUE)
    assert list(out.benchmark_set.benchmarks) == ["AutoDAN", "GCG", "PAIR", "TAP"]
    assert out.benchmark_set.outside == ("PAP",)
    assert out.left_out.empty
    # the set is stated in every output: settings, score rows, ranking rows, --json
    assert out.settings["benchmarks"] == "shared" and out.settings["benchmark_set"] == ["AutoDAN", "GCG", "PAIR", "TAP"]
    assert (rows.benchmark_set == "AutoDAN, GCG, PAIR, TAP").all()
    ranking = out.ranking[out.ranking.benchmark == ALL]
    assert (ranking.benchmark_set == "AutoDAN, GCG, PAIR, TAP").all() and (ranking.left_out == "").all()
    payload = score_payload(out)
    assert payload["benchmark_set"]["benchmarks"] == ["AutoDAN", "GCG", "PAIR", "TAP"]
    assert payload["benchmark_set"]["outside"] == ["PAP"] and payload["left_out"] == []
    assert "that all 4 model(s) share" in payload["benchmark_set"]["description"]


def test_every_model_left_out_is_named_with_its_reason():
    coverage = {"a": ["GCG", "PAIR"], "b": ["GCG", "PAIR"], "c": ["GCG", "PAIR"], "d": ["TAP"]}
    labels, doc = audit_tables(attack_design(coverage, unreviewed=("c", "PAIR")))
    out = tables.score_tables(labels, design_strata(doc), draws=200, seed=1, min_reviewed=0)
    reasons = dict(zip(out.left_out.model, out.left_out.reason, strict=True))
    assert reasons["d"] == "no results on GCG, PAIR"
    assert reasons["c"].startswith("cell c x PAIR not estimable: ")
    assert set(out.models.model) == {"a", "b"}
    ranking = out.ranking[out.ranking.benchmark == ALL]
    assert ranking.left_out.str.contains("d: no results on GCG, PAIR").all()
    assert ranking.left_out.str.contains("c: cell c x PAIR not estimable").all()
    assert {r["model"] for r in score_payload(out)["left_out"]} == {"c", "d"}


def test_all_averages_each_model_over_its_own_set_flagged_in_every_row():
    labels, doc = audit_tables(attack_design(ISSUE))
    out = tables.score_tables(labels, design_strata(doc), draws=200, seed=1, benchmarks="all")
    assert not out.benchmark_set.comparable and out.settings["benchmarks"] == "all"
    every = out.scores[out.scores.benchmark == ALL]
    assert every.note.str.contains("not comparable").all(), every[["model", "treatment", "note"]]
    assert every.estimate.notna().all()
    assert (every[every.model == "gpt-4"].benchmark_set == "AutoDAN, GCG, PAIR, TAP").all()
    assert (every[every.model == "llama"].benchmark_set == "AutoDAN, GCG, PAIR, PAP, TAP").all()
    ranking = out.ranking[out.ranking.benchmark == ALL]
    assert ranking.note.str.contains("not comparable").all()
    # each model's average is over its own cells: the same as its cells' mean
    cells = out.scores[(out.scores.benchmark != ALL) & (out.scores.treatment == "ambiguous_as_safe")]
    means = cells.groupby("model").estimate.mean()
    own = every[every.treatment == "ambiguous_as_safe"].set_index("model").estimate
    pd.testing.assert_series_equal(own.sort_index(), means.sort_index(), check_names=False)
    # the cells themselves do not depend on the set
    shared = tables.score_tables(labels, design_strata(doc), draws=200, seed=1)
    a, b = (o.scores[o.scores.benchmark != ALL].reset_index(drop=True) for o in (out, shared))
    pd.testing.assert_frame_equal(a, b)


def test_a_listed_set_and_a_benchmark_without_cells():
    labels, doc = audit_tables(attack_design(ISSUE))
    out = tables.score_tables(labels, design_strata(doc), draws=0, seed=1, benchmarks=["GCG", "PAP"])
    assert out.benchmark_set.mode == "listed"
    assert dict(zip(out.left_out.model, out.left_out.reason, strict=True)) == {
        "gpt-4": "no results on PAP",
        "gpt-3.5": "no results on PAP",
    }
    with pytest.raises(ValueError, match="XYZ have no scored cells"):
        tables.score_tables(labels, design_strata(doc), draws=0, benchmarks=["GCG", "XYZ"])


def test_a_uniform_design_scores_as_before():
    """Every model on every benchmark: the shared set is all of them, and nothing else changes."""
    coverage = {m: ["GCG", "PAIR"] for m in ("a", "b", "c")}
    labels, doc = audit_tables(attack_design(coverage))
    shared = tables.score_tables(labels, design_strata(doc), draws=200, seed=3)
    every = tables.score_tables(labels, design_strata(doc), draws=200, seed=3, benchmarks="all")
    assert shared.benchmark_set.comparable and every.benchmark_set.comparable
    pd.testing.assert_frame_equal(shared.scores, every.scores)
    assert not every.scores.note.fillna("").str.contains("not comparable").any()


@pytest.mark.parametrize(
    "coverage,ranked,benchmarks",
    [
        # the most cells: three models over three benchmarks (9) beat four over one (4)
        ({"a": "xyz", "b": "xyz", "c": "xyz", "d": "x"}, "abc", "xyz"),
        # four over two (8) beat two over three (6)
        ({"a": "xyz", "b": "xyz", "c": "xy", "d": "xy"}, "abcd", "xy"),
        # a set no model has alone: all three share x, y (6 cells) where each own set gives 3
        ({"a": "wxy", "b": "xyz", "c": "vxy"}, "abc", "xy"),
        # a tie (x, y with b, c; y, z with a, b: 4 cells, 2 models each) goes to the first set by name
        ({"a": "yz", "b": "xyz", "c": "xy"}, "bc", "xy"),
        ({"a": "x", "b": "y"}, "a", "x"),
    ],
)
def test_the_shared_set_compares_the_most_cells(coverage, ranked, benchmarks):
    chosen = shared_benchmarks({m: set(b) for m, b in coverage.items()})
    assert chosen.ranked == tuple(ranked) and chosen.benchmarks == tuple(benchmarks)
    assert {m for m, _ in chosen.left_out} == set(coverage) - set(ranked)
