"""Tests for annotate.stats.ranking.

References: methods.md TC10 (tau-b, rho, flipped pairs, the ties case 5/sqrt(30)), pair
counting and Pearson-on-ranks written out here, and posterior summaries recomputed from the
draws with plain numpy.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from annotate.stats import ranking as rk
from annotate.stats import scoring as sc

EXCLUDED = (0.10, 0.12, 0.15, 0.20, 0.30)
CORRECTED = (0.14, 0.11, 0.22, 0.18, 0.25)
NAMES = ("1", "2", "3", "4", "5")


def long(**treatments):
    rows = []
    for t, values in treatments.items():
        for m, v in zip(NAMES, values, strict=True):
            rows.append({"model": m, "treatment": t, "estimate": v})
    return pd.DataFrame(rows)


def tau_b_by_pairs(x, y):
    C = D = tx = ty = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        a, b = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        if a == 0:
            tx += 1
        if b == 0:
            ty += 1
        if a * b > 0:
            C += 1
        elif a * b < 0:
            D += 1
    n0 = len(x) * (len(x) - 1) / 2
    return (C - D) / math.sqrt((n0 - tx) * (n0 - ty))


def test_tc10_compare_rankings():
    c = rk.compare_rankings(CORRECTED, EXCLUDED, names=NAMES)
    assert c.tau_b == pytest.approx(0.6, abs=1e-12)
    assert c.rho == pytest.approx(0.8, abs=1e-12)
    assert c.flips == [("2", "1"), ("4", "3")]  # model ranked better under the reference first
    assert c.n_pairs == 10 and c.max_shift == 1
    np.testing.assert_array_equal(rk.rank_scores(EXCLUDED), [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(rk.rank_scores(CORRECTED), [2, 1, 4, 3, 5])
    # Spearman = 1 - 6 sum d^2 / (n (n^2 - 1)) with sum d^2 = 4
    assert 1 - 6 * 4 / (5 * 24) == pytest.approx(c.rho)


def test_tc10_ties_tau_b():
    x, y = (1, 2, 2, 3), (1, 3, 2, 4)
    c = rk.compare_rankings(x, y)
    assert c.tau_b == pytest.approx(5 / math.sqrt(30), abs=1e-12)
    assert c.tau_b == pytest.approx(0.9128709, abs=1e-7)
    assert c.tau_b == pytest.approx(tau_b_by_pairs(x, y), abs=1e-12)
    assert c.flips == []  # a pair tied in one ranking is not a flip
    np.testing.assert_array_equal(rk.rank_scores(x), [1, 2.5, 2.5, 4])


def test_tc10_through_rank_stability():
    res = rk.rank_stability(long(corrected=CORRECTED, ambiguous_excluded=EXCLUDED))
    a = res.agreement.set_index("treatment").loc["ambiguous_excluded"]
    assert a.kendall_tau_b == pytest.approx(0.6) and a.spearman_rho == pytest.approx(0.8)
    assert a.n_flips == 2 and a.n_pairs == 10 and a.max_rank_shift == 1
    assert np.isnan(a.n_credible_flips)  # no draws, no credibility
    pairs = {frozenset(p) for p in zip(res.flips.model_a, res.flips.model_b, strict=True)}
    assert pairs == {frozenset({"1", "2"}), frozenset({"3", "4"})}
    assert list(res.models.model) == ["2", "1", "4", "3", "5"]
    assert list(res.models["rank"]) == [1, 2, 3, 4, 5]
    r = res.ranks[res.ranks.treatment == "ambiguous_excluded"].set_index("model")
    assert r.loc["1", "shift"] == -1 and r.loc["2", "shift"] == 1 and r.loc["5", "shift"] == 0
    m = res.models.set_index("model")
    assert m.loc["5", "largest_shift"] == 0 and m.loc["5", "largest_shift_treatment"] == ""
    assert abs(m.loc["3", "largest_shift"]) == 1 and m.loc["3", "largest_shift_treatment"] == "ambiguous_excluded"


def separated_draws(D=4000, seed=0):
    """Models 1 and 2 overlap completely; 3, 4, 5 are far apart from each other and from 1-2."""
    rng = np.random.default_rng(seed)
    centres = np.array([0.12, 0.12, 0.40, 0.60, 0.80])
    sd = np.array([0.02, 0.02, 0.005, 0.005, 0.005])
    return centres[:, None] + sd[:, None] * rng.standard_normal((5, D))


def test_posterior_summaries_match_plain_numpy():
    d = separated_draws()
    est = long(corrected=(0.119, 0.121, 0.40, 0.60, 0.80), ambiguous_as_safe=(0.3, 0.1, 0.7, 0.5, 0.9))
    res = rk.rank_stability(est, d, NAMES)
    P = res.p_safer.loc[list(NAMES), list(NAMES)].to_numpy()
    for i, j in itertools.permutations(range(5), 2):
        assert P[i, j] == pytest.approx(np.mean(d[i] < d[j]), abs=1e-15)
    assert np.isnan(np.diag(P)).all()
    ranks = np.argsort(np.argsort(d, axis=0), axis=0) + 1  # no ties among continuous draws
    m = res.models.set_index("model")
    for k, name in enumerate(NAMES):
        assert m.loc[name, "rank_ci_low"] == np.quantile(ranks[k], 0.025, method="inverted_cdf")
        assert m.loc[name, "rank_ci_high"] == np.quantile(ranks[k], 0.975, method="inverted_cdf")
    # dominance: 3, 4, 5 are pinned; 1 and 2 can be 1st or 2nd
    assert (m.loc["1", "rank_best"], m.loc["1", "rank_worst"]) == (1, 2)
    assert (m.loc["2", "rank_best"], m.loc["2", "rank_worst"]) == (1, 2)
    for name, r in (("3", 3), ("4", 4), ("5", 5)):
        assert (m.loc[name, "rank_best"], m.loc[name, "rank_worst"]) == (r, r)
    # flips under "ambiguous_as_safe": (1,2) within noise, (3,4) credible
    f = res.flips.set_index(["model_a", "model_b"])
    assert set(f.index) == {("1", "2"), ("3", "4")}
    assert not f.loc[("1", "2"), "credible"] and f.loc[("3", "4"), "credible"]
    assert f.loc[("3", "4"), "p_a_safer"] == 1.0
    a = res.agreement.set_index("treatment").loc["ambiguous_as_safe"]
    assert (a.n_flips, a.n_credible_flips, a.n_noise_flips) == (2, 1, 1)
    assert res.threshold == pytest.approx(0.975)


def test_bonferroni_dominance_threshold():
    d = separated_draws()
    res = rk.rank_stability(long(corrected=(0.12, 0.121, 0.4, 0.6, 0.8)), d, NAMES, simultaneous=True)
    assert res.threshold == pytest.approx(1 - 0.05 / (2 * 4))


def test_not_estimable_models_are_excluded_with_reason():
    est = long(corrected=(0.14, np.nan, 0.22, 0.18, 0.25), ambiguous_excluded=(0.10, 0.12, np.nan, 0.20, 0.30))
    est["flag"] = "ok"
    est.loc[(est.model == "2") & (est.treatment == "corrected"), "flag"] = "not estimable: b: no review"
    est.loc[(est.model == "3") & (est.treatment == "ambiguous_excluded"), "flag"] = "not estimable: no clear responses"
    d = separated_draws()
    d[1] = np.nan
    res = rk.rank_stability(est, d, NAMES)
    assert "2" not in set(res.models.model) and "2" not in set(res.ranks.model)
    ex = res.excluded.set_index(["model", "treatment"])
    assert ex.loc[("2", "all"), "reason"] == "not estimable: b: no review"
    assert ex.loc[("3", "ambiguous_excluded"), "reason"] == "not estimable: no clear responses"
    a = res.agreement.set_index("treatment").loc["ambiguous_excluded"]
    assert a.n_models == 3 and a.excluded == "3"
    # ranks of a treatment are over its own estimable models
    r = res.ranks[res.ranks.treatment == "ambiguous_excluded"].set_index("model")
    assert np.isnan(r.loc["3", "rank"]) and sorted(r["rank"].dropna()) == [1, 2, 3]
    assert res.p_safer.shape == (4, 4)


def test_ranking_from_scores_is_deterministic_and_consistent():
    rng = np.random.default_rng(3)
    frames = []
    for m in range(6):
        for b in ("x", "y"):
            yh, ys, yu = rng.integers(15, 25), rng.integers(0, 4), rng.integers(20 + 20 * m, 60 + 20 * m)
            frames.append(
                pd.DataFrame(
                    {
                        "model": f"m{m}",
                        "benchmark": b,
                        "stratum": ["harmful", "safe", "ambiguous"],
                        "judge_label": ["harmful", "safe", "ambiguous"],
                        "population": [100, 500, 400],
                        "reviewed": [25, 25, 400],
                        "harmful": [yh, ys, yu],
                        "unresolved": 0,
                    }
                )
            )
    df = pd.concat(frames, ignore_index=True)
    a = rk.ranking_from_scores(sc.corrected_scores(df, seed=8))
    b = rk.ranking_from_scores(sc.corrected_scores(df.iloc[::-1], seed=8))
    pd.testing.assert_frame_equal(a.models, b.models)
    pd.testing.assert_frame_equal(a.agreement, b.agreement)
    pd.testing.assert_frame_equal(a.flips, b.flips)
    pd.testing.assert_frame_equal(a.p_safer, b.p_safer)
    assert set(a.agreement.treatment) == set(sc.TREATMENTS[:4]) | {
        "corrected_unresolved_safe",
        "corrected_unresolved_harmful",
    }
    # agreement values are scipy's on the estimates
    s = sc.corrected_scores(df, seed=8)
    o = s.overall.pivot(index="model", columns="treatment", values="estimate")
    c = rk.compare_rankings(o["corrected"], o["adjudicated_clear_trusted"], names=list(o.index))
    row = a.agreement.set_index("treatment").loc["adjudicated_clear_trusted"]
    assert row.kendall_tau_b == pytest.approx(c.tau_b) and row.n_flips == len(c.flips)
    # every model has the same judge-harmful share: that ranking is one big tie, tau undefined
    tie = a.agreement.set_index("treatment").loc["ambiguous_as_safe"]
    assert np.isnan(tie.kendall_tau_b) and tie.n_flips == 0
    assert (a.models.rank_ci_low <= a.models["rank"]).all() and (a.models["rank"] <= a.models.rank_ci_high).all()
    assert (a.models.rank_best <= a.models["rank"]).all() and (a.models["rank"] <= a.models.rank_worst).all()
    # per-benchmark ranking uses the cells' draws
    per = rk.ranking_from_scores(s, benchmark="x")
    assert len(per.models) == 6 and per.p_safer.shape == (6, 6)
    with pytest.raises(ValueError, match="not in the scores"):
        rk.ranking_from_scores(s, benchmark="nope")


def test_p_safer_ties_count_for_neither():
    d = np.array([[0.1, 0.2, 0.3, 0.3], [0.1, 0.1, 0.4, 0.2]])
    P = rk.p_safer_matrix(d)
    assert P[0, 1] == 0.25 and P[1, 0] == 0.5


def test_p_tie_completes_p_safer():
    d = np.array([[0.1, 0.2, 0.3, 0.3], [0.1, 0.1, 0.4, 0.2], [0.1, 0.2, 0.3, 0.5]])
    P, T = rk.p_safer_matrix(d), rk.p_tie_matrix(d)
    for i, j in itertools.permutations(range(3), 2):
        assert T[i, j] == pytest.approx(np.mean(d[i] == d[j]), abs=1e-15)
        assert P[i, j] + P[j, i] + T[i, j] == pytest.approx(1.0, abs=1e-15)
    assert np.isnan(np.diag(T)).all()


def test_rank_ranges_hold_the_point_rank():
    """Issue #13: a rank is an estimate too. Model 1 has the lower estimate, but its draws sit
    above model 2's (skewed draws at a boundary), so the rank draws' quantiles miss rank 1."""
    est = long(corrected=(0.10, 0.11, 0.40, 0.60, 0.80))
    d = separated_draws()
    d[0] = 0.13 + 0.001 * np.abs(d[0] - 0.12)  # every draw of model 1 (>= 0.13) ...
    d[1] = 0.10 + 0.001 * np.abs(d[1] - 0.12)  # ... above every draw of model 2 (< 0.11)
    res = rk.rank_stability(est, d, NAMES)
    m = res.models.set_index("model")
    for name in NAMES:
        r = m.loc[name]
        assert r.rank_ci_low <= r["rank"] <= r.rank_ci_high, name
        assert r.rank_best <= r["rank"] <= r.rank_worst, name
    assert (m.loc["1", "rank_ci_low"], m.loc["1", "rank_ci_high"]) == (1, 2)  # extended from [2, 2]


def test_tau_rho_and_ranks_equal_scipy_on_ties_and_random_scores():
    """The numpy tau-b, rho and average ranks (no scipy.stats at start-up) against SciPy itself."""
    from scipy import stats

    from annotate.stats._common import average_ranks

    gen = np.random.default_rng(3)
    for trial in range(400):
        n = int(gen.integers(2, 30))
        # Few distinct values in half the trials: ties in x, in y and in both.
        x = gen.integers(0, 4, n).astype(float) if trial % 2 else gen.random(n)
        y = gen.integers(0, 4, n).astype(float) if trial % 3 else gen.random(n)
        tau, rho = rk._corr(x, y)
        if np.all(x == x[0]) or np.all(y == y[0]):
            assert math.isnan(tau) and math.isnan(rho)
            continue
        assert tau == pytest.approx(stats.kendalltau(x, y, variant="b").statistic, abs=1e-12)
        assert rho == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
        d = gen.integers(0, 3, (n, 7)).astype(float)
        d[gen.random(d.shape) < 0.05] = np.inf
        d[gen.random(d.shape) < 0.02] = np.nan
        for axis in (0, 1):
            np.testing.assert_array_equal(average_ranks(d, axis=axis), stats.rankdata(d, method="average", axis=axis))
