"""A hazard category's alpha interval since annotate-export/19: the unit bootstrap's joined with a posterior
over unit patterns (``stats.agreement.hazards``).

The pattern form of alpha is checked against the ``krippendorff`` package (units of each pattern written out
as reliability data), never against itself; the posterior interval's coverage is the validity matrix's
business (bench/validity.py, docs/validity.md); here its shape: it holds the estimate, widens the bootstrap
where a category is rare, and is withheld where the bootstrap is.
"""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest

from annotate.stats.agreement.hazards import hazard_agreement, nominal_alpha_of_patterns, pattern_posterior_interval


def _reliability(counts: np.ndarray) -> np.ndarray:
    """(raters, units) reliability data with NaN for a missing rating, from (U, C) counts."""
    m = int(counts.sum(axis=1).max())
    data = np.full((m, len(counts)), np.nan)
    for u, row in enumerate(counts):
        values = [c for c, n in enumerate(row) for _ in range(n)]
        data[: len(values), u] = values
    return data


@pytest.mark.parametrize("seed", range(6))
def test_alpha_of_patterns_equals_the_krippendorff_package(seed):
    rng = np.random.default_rng(seed)
    c = int(rng.integers(2, 4))
    units = []
    for _ in range(int(rng.integers(5, 40))):
        m = int(rng.integers(2, 5))
        units.append(np.bincount(rng.integers(0, c, size=m), minlength=c))
    counts = np.array(units)
    patterns, weights = np.unique(counts, axis=0, return_counts=True)
    got = nominal_alpha_of_patterns(patterns, weights[None, :].astype(float))[0]
    want = krippendorff.alpha(reliability_data=_reliability(counts), level_of_measurement="nominal")
    assert got == pytest.approx(want, abs=1e-12)


def test_one_category_only_is_undefined_not_a_number():
    assert np.isnan(nominal_alpha_of_patterns(np.array([[3, 0]]), np.array([[5.0]])))[0]


def _answers(chosen_per_item: list[int], raters: int = 3) -> pd.DataFrame:
    rows = [
        (item, f"A{r + 1}", ["vcr"] if r < k else [], None)
        for item, k in enumerate(chosen_per_item)
        for r in range(raters)
    ]
    return pd.DataFrame(rows, columns=["round_item_id", "annotator", "hazards", "severity"])


def test_a_rare_categorys_joined_interval_holds_the_bootstraps_and_the_estimate():
    # 96 items: 3 chosen by all, 10 by one reviewer only (a rare category, the validity matrix's failing regime)
    answers = _answers([3] * 3 + [1] * 10 + [0] * 83)
    boot = hazard_agreement(answers, ["vcr"], ["low"], n_boot=1000, seed=3)["hazards"][0]
    joined = hazard_agreement(answers, ["vcr"], ["low"], n_boot=1000, seed=3, interval="joined")["hazards"][0]
    assert joined["alpha"] == boot["alpha"]  # the point is the same
    counts = np.array([[0, 3]] * 3 + [[2, 1]] * 10 + [[3, 0]] * 83)
    low, high = pattern_posterior_interval(counts, draws=1000, seed=3)  # the draws hazard_agreement makes
    assert low < joined["alpha"] < high
    (bl, bh), (jl, jh) = boot["alpha_ci"], joined["alpha_ci"]
    assert (jl, jh) == (min(bl, low), max(bh, high))  # the union, exactly
    assert (low, high) != (bl, bh)


def test_a_withheld_bootstrap_interval_stays_withheld():
    answers = _answers([3, 3, 0, 0])  # four units: too few for an interval
    row = hazard_agreement(answers, ["vcr"], ["low"], n_boot=500, seed=0, interval="joined")["hazards"][0]
    assert row["alpha_ci"] == [row["alpha_ci"][0], row["alpha_ci"][1]]
    assert all(x != x for x in row["alpha_ci"])  # NaN: withheld
    assert row["verdict"] == "too few units for an interval"


def test_many_or_uneven_raters_do_not_let_the_prior_outweigh_the_data():
    """A review's second finding: with 2-25 raters per item the prior's pseudo-units once outweighed 96 real
    units, and one dissenting vote turned 'reliable' into 'unreliable'. The prior's mass is now fixed."""
    rng = np.random.default_rng(0)
    rows = []
    for item in range(96):
        m = int(rng.integers(2, 26))
        chosen = item < 10
        for r in range(m):
            said = chosen if (item, r) != (0, 0) else not chosen
            rows.append((item, f"A{r}", ["vcr"] if said else [], None))
    answers = pd.DataFrame(rows, columns=["round_item_id", "annotator", "hazards", "severity"])
    joined = hazard_agreement(answers, ["vcr"], ["low"], n_boot=1000, seed=1, interval="joined")["hazards"][0]
    low, high = joined["alpha_ci"]
    assert low < joined["alpha"] <= high and joined["verdict"] == "reliable"
    counts = np.zeros((96, 2), dtype=np.int64)
    for item, _, said, _ in rows:
        counts[item, int(bool(said))] += 1
    p_low, p_high = pattern_posterior_interval(counts, draws=2000, seed=2)
    assert p_low < joined["alpha"] < p_high


def test_more_than_two_categories_are_refused():
    with pytest.raises(ValueError, match="two categories"):
        pattern_posterior_interval(np.array([[1, 1, 0], [0, 2, 0], [2, 0, 0]]))
