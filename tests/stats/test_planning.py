"""The next-wave planner (annotate/stats/planning.py): checked against closed forms and brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from annotate.stats.planning import model_allocation, plan_round, ranking_targets

Z = 1.959963984540054


def _strata(**cols: object) -> pd.DataFrame:
    base = {
        "model": "m",
        "benchmark": "b",
        "stratum": ["harmful", "safe", "ambiguous"],
        "judge_label": ["harmful", "safe", "ambiguous"],
        "population": [100, 400, 500],
        "sampled": 0,
        "resolved": 0,
        "harmful": 0,
    }
    base.update(cols)
    return pd.DataFrame(base)


def test_one_stratum_is_the_textbook_sample_size() -> None:
    # Cochran (1977) 4.4: n = n0 / (1 + n0 / N), n0 = z^2 S^2 / d^2
    n0 = Z**2 * 0.25 / 0.03**2
    want = int(np.ceil(n0 / (1 + n0 / 1000)))
    n, _, v1 = model_allocation(
        np.ones(1), np.array([1000.0]), np.zeros(1), np.zeros(1), np.array([0.25]), (0.03 / Z) ** 2
    )
    assert int(n[0]) == want == 517
    assert Z * np.sqrt(v1) <= 0.03


def test_neyman_beats_every_other_integer_allocation_near_it() -> None:
    # Brute force over a grid around the plan: no allocation with fewer items meets the target.
    a = np.array([0.1, 0.4, 0.5])
    N = np.array([100.0, 400.0, 500.0])
    S2 = np.array([0.85 * 0.15, 0.04 * 0.96, 0.25])
    e2 = (0.05 / Z) ** 2
    n, _, v = model_allocation(a, N, np.zeros(3), np.zeros(3), S2, e2)
    assert v <= e2

    def var(m: np.ndarray) -> float:
        return float((a**2 * (1 / m - 1 / N) * S2).sum())

    best = min(
        sum(m)
        for m in itertools.product(*(range(max(1, int(k) - 12), int(k) + 13) for k in n))
        if var(np.array(m, dtype=float)) <= e2
    )
    assert n.sum() <= best + 2  # rounding each stratum up costs at most one item per stratum


def test_the_plan_meets_the_target_by_an_independent_variance() -> None:
    plan = plan_round(_strata(), 0.03)
    st = plan.strata
    p = st.rate_guess.to_numpy()
    N = st.population.to_numpy(float)
    n = st.n.to_numpy(float)
    a = N / N.sum()
    floor = 0.5 / (n + 1)
    S2 = np.maximum(p, floor) * (1 - np.maximum(p, floor))
    hw = Z * np.sqrt((a**2 * (1 / n - 1 / N) * S2).sum())
    assert hw <= 0.03 + 1e-9
    assert float(plan.models.expected_halfwidth[0]) == pytest.approx(hw, rel=1e-6)
    assert plan.reviews == 2 * n.sum()


def test_past_samples_count_and_a_model_at_target_gets_nothing() -> None:
    done = _strata(sampled=[100, 400, 500], resolved=[100, 400, 500], harmful=[85, 16, 250])
    plan = plan_round(done, 0.03)
    assert plan.strata.n.sum() == 0 and bool(plan.models.at_target[0])
    half = _strata(sampled=[20, 40, 100], resolved=[20, 40, 100], harmful=[17, 2, 50])
    plan = plan_round(half, 0.03)
    assert (plan.strata.n <= plan.strata.remainder).all() and plan.strata.n.sum() > 0
    assert plan.models.halfwidth_now[0] > 0.03 >= plan.models.expected_halfwidth[0]


def test_unresolved_items_set_a_floor_on_the_half_width() -> None:
    plan = plan_round(_strata(), 0.03, unresolved=0.08)
    assert not bool(plan.models.reachable[0]) and "unresolved" in plan.models.note[0]
    a = plan_round(_strata(), 0.03, unresolved=0.02)
    b = plan_round(_strata(), 0.03)
    assert a.strata.n.sum() > b.strata.n.sum()


def test_a_budget_buys_the_smallest_common_half_width() -> None:
    plan = plan_round(_strata(), budget=300)
    assert plan.reviews <= 300
    more = plan_round(_strata(), float(plan.models.target[0]) * 0.98)
    assert more.reviews > 300


def test_reviews_per_item_and_bad_input() -> None:
    plan = plan_round(_strata(), 0.03, reviewers=3, expert_share=0.1)
    assert plan.reviews == pytest.approx(3.1 * plan.strata.n.sum())
    with pytest.raises(ValueError, match="one of them"):
        plan_round(_strata())
    with pytest.raises(ValueError, match="lacks"):
        plan_round(_strata().drop(columns="sampled"), 0.03)
    with pytest.raises(ValueError, match="judge_label"):
        plan_round(_strata(judge_label=["harmful", "safe", "unsure"]), 0.03)


def test_ranking_targets() -> None:
    t = ranking_targets({"a": 0.10, "b": 0.20, "c": 0.50}, tie_margin=0.02)
    assert t == pytest.approx({"a": 0.1 / np.sqrt(2), "b": 0.1 / np.sqrt(2), "c": 0.3 / np.sqrt(2)})
    # with both half-widths at the target, the difference's half-width sqrt(2) t is the gap: separated
    assert np.sqrt(2) * t["a"] == pytest.approx(0.10)
    assert ranking_targets({"a": 0.1, "b": 0.1}, tie_margin=0.02)["a"] == pytest.approx(0.02 / np.sqrt(2))
