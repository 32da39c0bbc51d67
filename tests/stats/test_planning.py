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


def test_sampled_ambiguous_strata_and_the_next_wave_are_srs_prefixes() -> None:
    from annotate.stats.sampling import select_for_review, select_next_wave

    responses = pd.DataFrame(
        {
            "response_id": range(300),
            "model": "m",
            "benchmark": "b",
            "prompt_id": [f"p{i}" for i in range(300)],
            "epoch": 1,
            "judge": "j",
            "judge_label": ["ambiguous"] * 200 + ["safe"] * 100,
        }
    )
    first, strata = select_for_review(responses, clear_per_cell=10, seed=3, ambiguous=20)
    assert strata.set_index("stratum")["sample"].to_dict() == {"ambiguous": 20, "safe": 10}
    assert set(first.loc[first.stratum == "ambiguous", "inclusion_prob"]) == {0.1}
    census, _ = select_for_review(responses, clear_per_cell=10, seed=3)
    assert (census.stratum == "ambiguous").sum() == 200
    plan = pd.DataFrame({"model": ["m", "m"], "benchmark": ["b", "b"], "stratum": ["ambiguous", "safe"], "n": [30, 0]})
    nxt, st = select_next_wave(responses, first.response_id, plan, seed=3)
    assert not set(nxt.response_id) & set(first.response_id)
    assert st.to_dict("records") == [
        {"model": "m", "benchmark": "b", "stratum": "ambiguous", "population": 180, "sample": 30, "sampled_before": 20}
    ]
    assert set(nxt.inclusion_prob) == {30 / 180}
    fifty, _ = select_for_review(responses, clear_per_cell=10, seed=3, ambiguous=50)
    amb = set(fifty.loc[fifty.stratum == "ambiguous", "response_id"])
    assert amb == set(first.loc[first.stratum == "ambiguous", "response_id"]) | set(nxt.response_id)
    with pytest.raises(ValueError, match="cannot draw"):
        select_next_wave(responses, first.response_id, plan.assign(n=[181, 0]), seed=3)


def test_pooled_waves_are_water_filling_checked_by_brute_force() -> None:
    # Pooled design (methods 4.9): Var = sum_h a_h^2 (1 / t_h - 1 / N_h) S_h^2, t_h = r_h + n_h.
    # Brute force over every allocation near the plan: none with fewer items meets the target.
    from annotate.stats.planning import pooled_allocation

    a = np.array([0.1, 0.4, 0.5])
    N = np.array([100.0, 400.0, 500.0])
    r = np.array([40.0, 10.0, 10.0])  # the judge-harmful stratum already has more than its share
    S2 = np.array([0.85 * 0.15, 0.04 * 0.96, 0.25])
    e2 = (0.05 / Z) ** 2
    g = np.zeros(3, dtype=np.int64)
    n, v0, v1 = pooled_allocation(a, N, r, r, S2, np.array([e2]), g)

    def var(m: np.ndarray) -> float:
        return float((a**2 * (1 / (r + m) - 1 / N) * S2).sum())

    assert v0[0] == pytest.approx(var(np.zeros(3))) and v0[0] > e2
    assert v1[0] == pytest.approx(var(n)) and v1[0] <= e2
    assert n[0] == 0  # kept: its 40 already exceed Neyman's share
    best = min(
        sum(m) for m in itertools.product(*(range(0, int(k) + 15) for k in n)) if var(np.array(m, dtype=float)) <= e2
    )
    assert n.sum() <= best + 2


def test_pooled_allocation_is_per_model_and_never_exceeds_the_remainder() -> None:
    from annotate.stats.planning import pooled_allocation

    a = np.array([0.5, 0.5, 0.5, 0.5])
    N = np.array([50.0, 50.0, 50.0, 50.0])
    r = np.array([5.0, 5.0, 5.0, 5.0])
    S2 = np.full(4, 0.25)
    g = np.array([0, 0, 1, 1])
    # model 0 wants +-1 point (not reachable: both remainders in full), model 1 is at its target
    n, v0, v1 = pooled_allocation(a, N, r, r, S2, np.array([(0.01 / Z) ** 2, 1.0]), g)
    assert n.tolist() == [45.0, 45.0, 0.0, 0.0]
    assert v1[0] == pytest.approx(0.0, abs=1e-15) and v1[1] == v0[1]


def test_pooled_and_conditional_plans_agree_before_any_review() -> None:
    a = plan_round(_strata(), 0.03)
    b = plan_round(_strata(), 0.03, design="conditional")
    assert a.strata.n.tolist() == b.strata.n.tolist() == [34, 74, 235]
    with pytest.raises(ValueError, match="design"):
        plan_round(_strata(), 0.03, design="other")


def test_a_strata_rate_guess_leaves_its_own_labels_out() -> None:
    """Issue #33: the pooled waves drifted (-0.003 at 5 % harm) because a stratum that showed harm in
    the pilot got a larger next wave, which pulled its mean back. The rate guess of a stratum is
    built from the model's other strata of its judge label and the prior, never its own labels."""
    df = pd.DataFrame(
        {
            "model": ["m"] * 6 + ["k"] * 3,
            "benchmark": ["b1", "b1", "b2", "b2", "b3", "b3", "b1", "b2", "b3"],
            "stratum": ["harmful", "safe"] * 3 + ["safe"] * 3,
            "judge_label": ["harmful", "safe"] * 3 + ["safe"] * 3,
            "population": 400,
            "sampled": 10,
            "resolved": 10,
            "harmful": [9, 0, 8, 3, 7, 1, 5, 5, 5],
        }
    )
    guess = plan_round(df, 0.03).strata.rate_guess.to_numpy()
    # m's judge-safe strata: (others' harmful + 2 x .04) / (others' resolved + 2)
    assert guess[[1, 3, 5]] == pytest.approx([(3 + 1 + 0.08) / 22, (0 + 1 + 0.08) / 22, (0 + 3 + 0.08) / 22])
    assert guess[0] == pytest.approx((8 + 7 + 1.7) / 22)
    assert guess[6] == pytest.approx((10 + 0.08) / 22)  # another model's strata are not pooled in
    changed = df.assign(harmful=[9, 0, 8, 9, 7, 1, 5, 5, 5])  # b2's judge-safe stratum shows harm
    again = plan_round(changed, 0.03).strata.rate_guess.to_numpy()
    assert again[3] == guess[3]  # its own guess does not move
    assert again[1] > guess[1] and again[5] > guess[5]  # its neighbours' do
    alone = plan_round(df[df.model == "k"].iloc[:1], 0.03).strata.rate_guess.to_numpy()
    assert alone[0] == pytest.approx(0.04)  # no other stratum: the prior
    # a model with one benchmark: the prior, whatever the other models saw there
    one = pd.concat([df.iloc[:2], df.iloc[6:7].assign(model="j")], ignore_index=True)
    g = plan_round(one, 0.03).strata.rate_guess.to_numpy()
    assert g[1] == pytest.approx(0.04) and g[2] == pytest.approx(0.04) and g[0] == pytest.approx(0.85)
