"""The one posterior of the reviewed population, its two views, and the tests built on it (issue #41).

Checked against what the construction promises (methods 9.19), never against numbers it produced:
the responses view of a census is the observed table; the prompts view's totals are the cells'
prompts; a label no reviewed response carries gets mass where its coin says so; the prompts view
of a seed is the same draws whichever views are asked; the model test flags nothing on issue #41's
4-model table, never a difference of 0, never a figure resting on three responses, and never PPV;
McNemar's test is shown only where it is the design's. The coverage and level of everything here,
in the study's regimes, are bench/validity.py's matrix (tests/test_validity_matrix.py runs a small
one).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotate.stats.judge_models import (
    MIN_REVIEWED,
    PPV_NOTE,
    benjamini_hochberg,
    direction_p,
    robust_centre,
)
from annotate.stats.judge_posterior import ReviewedStrata, posterior_draws
from annotate.stats.judges import judge_audit


def _strata(human, labels, sizes, population, cells=None, groups=None, label_sets=None):
    human = np.asarray(human, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64).reshape(len(human), -1)
    sizes = np.asarray(sizes, dtype=np.int64)
    J = labels.shape[1]
    sets = np.zeros((J, 3), dtype=bool)
    for j in range(J):
        sets[j, np.unique(labels[:, j][labels[:, j] < 3])] = True
    return ReviewedStrata(
        human=human,
        labels=labels,
        starts=np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64),
        sizes=sizes,
        population=np.asarray(population, dtype=np.int64),
        cells=np.zeros(len(sizes), dtype=np.int64) if cells is None else np.asarray(cells, dtype=np.int64),
        groups=[[0]] * len(sizes) if groups is None else groups,
        fixed=np.zeros((len(sizes), J), dtype=bool),
        label_sets=sets if label_sets is None else np.asarray(label_sets, dtype=bool),
    )


def test_a_census_is_fixed_for_these_responses_and_drawn_for_prompts_like_these():
    # one stratum, every response reviewed: 3 harmful (2 called harmful), 5 safe (all called safe)
    st = _strata([0, 0, 0, 1, 1, 1, 1, 1], [[0], [0], [1], [1], [1], [1], [1], [1]], [8], [8])
    d = posterior_draws(st, 1, 3000, 11)
    observed = np.array([[2.0, 1.0, 0.0], [0.0, 5.0, 0.0]])
    assert (d["responses"][0, :, 0] == observed).all()
    prompts = d["prompts"][0, :, 0]
    np.testing.assert_allclose(prompts.sum(axis=(1, 2)), 8.0)  # the cell's 8 prompts in every draw
    # no false alarm was reviewed, yet prompts like these may hold one: in about half the draws (the coin)
    assert 0.3 < (prompts[:, 1, 0] > 1e-9).mean() < 0.7
    # the shares' mean stays near the observed ones (one pseudo-response among 8)
    assert abs(prompts[:, 0, 0].mean() / 8 - 2 / 8) < 0.05


def test_the_prompts_view_weighs_strata_by_dirichlet_shares_of_the_cell():
    # two strata of one cell (N = 90 and 10), a third in another cell (N = 50); each stratum its own group
    st = _strata([1] * 5 + [0] * 5 + [1] * 5, [[1]] * 5 + [[0]] * 5 + [[1]] * 5, [5, 5, 5], [90, 10, 50],
                 cells=[0, 0, 1], groups=[[0], [1], [2]])  # fmt: skip
    d = posterior_draws(st, 3, 4000, 3, views=("prompts",))["prompts"]
    totals = d.sum(axis=(3, 4))[:, :, 0]  # (G, D): each stratum's weight W_h (its shares sum to 1)
    np.testing.assert_allclose(totals[0] + totals[1], 100.0)  # the cell's prompts are fixed, their split drawn
    np.testing.assert_allclose(totals[2], 50.0)
    # W of the second stratum: 100 Beta(10.5, 90.5), mean 10.40, SD 3.02
    assert abs(totals[1].mean() - 100 * 10.5 / 101) < 0.2 and 2.8 < totals[1].std() < 3.25


def test_the_prompts_view_of_a_seed_is_the_same_whichever_views_are_asked():
    rng = np.random.default_rng(0)
    human = rng.integers(0, 2, 40)
    labels = rng.integers(0, 3, (40, 2))
    st = _strata(human, labels, [10, 10, 20], [100, 300, 20], cells=[0, 0, 1], groups=[[0], [0, 1], [1]])
    alone = posterior_draws(st, 2, 500, 5, views=("prompts",))["prompts"]
    both = posterior_draws(st, 2, 500, 5)
    np.testing.assert_array_equal(alone, both["prompts"])
    np.testing.assert_array_equal(posterior_draws(st, 2, 500, 5, views=("responses",))["responses"], both["responses"])


def test_an_unseen_human_label_only_where_the_coin_says_so():
    # 20 reviewed, all safe, of 200: the pseudo-response is harmful only where the coin says so; then
    # its share is Beta(a, 20 a), a = 16/21: about 1/21 of the stratum, never certain
    st = _strata([1] * 20, [[1]] * 20, [20], [200])
    st = ReviewedStrata(**{**st.__dict__, "fixed": np.ones((1, 1), dtype=bool)})  # the judge that routed it
    down = np.array([[True, False] * 500])  # (1 coin group, 1000 draws): the errors' side, the other, ...
    never = np.zeros((1, 1000, 1), dtype=bool)
    d = posterior_draws(st, 1, 1000, 2, down=down, judge_coin=never)
    for view in ("responses", "prompts"):
        harmful = d[view][0, :, 0, 0, :].sum(axis=1)
        assert (harmful[1::2] == 0).all(), view
        assert (harmful[0::2] > 0).mean() > 0.6 and abs(harmful[0::2].mean() - 200 / 21) < 2.5, view


def _frames(cells: dict[str, dict[str, tuple[int, int, int, int]]]):
    """A census per model of one benchmark: cells[model] = {(human, judge): n} as (TP, FN, FP, TN)."""
    units, verdicts, strata = [], [], []
    for model, (tp, fn, fp, tn) in cells.items():
        k = 0
        for human, label, n in (("harmful", "harmful", tp), ("harmful", "safe", fn), ("safe", "harmful", fp),
                                ("safe", "safe", tn)):  # fmt: skip
            for _ in range(n):
                unit = f"{model}/{k}"
                k += 1
                units.append((unit, model, "b", "all", human))
                verdicts.append((unit, "judge", label))
        strata.append((model, "b", "all", tp + fn + fp + tn, tp + fn + fp + tn))
    return (
        pd.DataFrame(units, columns=["unit", "model", "benchmark", "stratum", "human"]),
        pd.DataFrame(verdicts, columns=["unit", "judge", "judge_label"]),
        pd.DataFrame(strata, columns=["model", "benchmark", "stratum", "population", "sample"]),
    )


def test_issue_41s_four_model_table_flags_nothing():
    """3 harmful responses on one model, all missed; 15 of 20 missed on each other; no false alarm anywhere.
    Before: the sensitivity (0/3 against 15/60) and a specificity difference of +0.000 flagged at q 0.000."""
    table = {"m0": (0, 3, 0, 97), "m1": (5, 15, 0, 80), "m2": (5, 15, 0, 80), "m3": (5, 15, 0, 80)}
    audit = judge_audit(*_frames(table), by=("model",), draws=0, seed=0)
    h = audit.models.set_index(["model", "figure"])
    assert not h.flagged.any()
    row = h.loc[("m0", "sensitivity")]
    assert not row.testable and np.isnan(row.p_value) and row.note.startswith("not testable: 3 harmful reviewed")
    assert (h.xs("specificity", level="figure").difference == 0).all()
    assert (h.xs("specificity", level="figure").p_value == 1).all()  # a difference of 0 is no evidence


def test_a_difference_of_zero_is_never_flagged_and_ppv_is_never_tested():
    rng = np.random.default_rng(4)
    for rep in range(6):
        table = {f"m{k}": tuple(int(x) for x in rng.integers(5, 60, 4)) for k in range(6)}
        audit = judge_audit(*_frames(table), by=("model",), draws=0, seed=rep, test_draws=500)
        h = audit.models
        assert not (h.flagged & (h.difference == 0)).any()
        ppv = h[h.figure == "ppv"]
        assert ppv.p_value.isna().all() and not ppv.flagged.any() and (ppv.note == PPV_NOTE).all()
        tested = h[h.p_value.notna()]
        assert set(tested.figure) <= {"sensitivity", "specificity"}
        assert (tested.n_truth_reviewed >= MIN_REVIEWED).all()


def test_a_judge_that_misses_most_harm_on_one_model_is_flagged_there_only():
    table = {f"m{k}": (90, 10, 5, 195) for k in range(6)} | {"bad": (30, 70, 5, 195)}
    audit = judge_audit(*_frames(table), by=("model",), draws=0, seed=1)
    flagged = audit.models[audit.models.flagged]
    assert set(zip(flagged.model, flagged.figure, strict=True)) == {("bad", "sensitivity")}
    row = flagged.iloc[0]
    assert row.difference == pytest.approx(0.3 - 0.9) and row.difference_ci_high < 0
    assert row.rest == pytest.approx(0.9)  # the centre of the six others, not moved by the bad one


def test_direction_p_agrees_with_the_printed_interval():
    rng = np.random.default_rng(1)
    d = rng.normal(0.1, 0.05, (1, 4000))
    est = np.array([0.1])
    p = direction_p(est, d)[0]
    lo, hi = np.quantile(d[0], [0.025, 0.975])
    assert (p <= 0.05) == (lo > 0 or hi < 0)
    # an estimate on the other side of 0 from the draws is no evidence
    assert direction_p(np.array([-0.01]), d)[0] == 1.0
    assert benjamini_hochberg([0.01, np.nan])[1] != benjamini_hochberg([0.01, np.nan])[1]  # NaN stays NaN


def test_the_robust_centre_ignores_models_far_off_and_weighs_the_precise_ones():
    x = np.array([[0.90, 0.91, 0.89, 0.90, 0.30, 0.35]])
    assert robust_centre(x, np.full(6, 0.02))[0] == pytest.approx(0.90, abs=0.002)
    # a precise figure pulls the centre more than a vague one
    y = np.array([[0.80, 0.81, 0.86]])
    assert robust_centre(y, np.array([0.01, 0.01, 0.05]))[0] < 0.81
    assert np.isnan(robust_centre(np.array([[np.nan, np.nan]]), np.array([0.1, 0.1]))[0])


def test_mcnemar_is_shown_only_under_a_census_or_within_one_stratum():
    census = _frames({"m": (30, 10, 8, 52)})
    # a second judge on the same responses
    u, v, s = census
    v2 = v.assign(judge="other", judge_label=np.where(np.arange(len(v)) % 7 == 0, "safe", v.judge_label))
    audit = judge_audit(u, pd.concat([v, v2]), s, by=(), draws=200, seed=0)
    pair = audit.pairs.iloc[0]
    assert np.isfinite(pair.mcnemar_p) and np.isfinite(pair.p_value) and audit.settings["census"]
    # the same responses as a sample of a larger routed population: two strata of unequal weight
    u2 = u.assign(stratum=np.where(v.judge_label.to_numpy() == "harmful", "harmful", "safe"))
    n_h, n_s = int((u2.stratum == "harmful").sum()), int((u2.stratum == "safe").sum())
    s2 = pd.DataFrame(
        [("m", "b", "harmful", 400, n_h), ("m", "b", "safe", 4000, n_s)],
        columns=["model", "benchmark", "stratum", "population", "sample"],
    )
    sampled = judge_audit(u2, pd.concat([v, v2]), s2, by=(), draws=200, seed=0)
    pair = sampled.pairs.iloc[0]
    assert np.isnan(pair.mcnemar_p) and "stratified sample" in pair.note and np.isfinite(pair.p_value)
    assert not sampled.settings["census"]
