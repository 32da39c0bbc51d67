"""Tests for annotate.stats.scoring.

Reference values come from places independent of the implementation:

* exact rationals from ``docs/methods.md`` section 7 (TC6, TC6b) and the Neyman example of 4.8,
  rebuilt here with ``fractions.Fraction`` from the formulas;
* the exact distribution of the fiducial Polya draws, a convolution of even mixtures of two
  ``scipy.stats.betabinom`` pmfs per stratum;
* coverage simulations whose truth is the simulated finite population (numpy only);
* a quadratic-root Wilson interval, and pandas groupby for the aggregation.

Transport is tested in ``test_transport.py``, the invariant in ``test_scoring_invariant.py``,
coverage in ``test_coverage.py`` and the output tables in ``test_scoring_outputs.py``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from annotate.stats import scoring as sc

TOL = 1e-9


def cell(
    model="m",
    benchmark="b",
    N=(100, 500, 400),
    n=(25, 25, 400),
    y=(20, 2, 120),
    u=(0, 0, 0),
    labels=("harmful", "safe", "ambiguous"),
    strata=None,
    **extra,
):
    """Strata rows of one cell."""
    strata = strata or labels
    rows = pd.DataFrame(
        {
            "model": model,
            "benchmark": benchmark,
            "stratum": list(strata),
            "judge_label": list(labels),
            "population": list(N),
            "reviewed": list(n),
            "harmful": list(y),
            "unresolved": list(u),
        }
    )
    for k, v in extra.items():
        rows[k] = list(v)
    return rows


def row(result, treatment, model="m", benchmark="b"):
    t = result.treatments
    sel = t[(t.treatment == treatment) & (t.model == model) & (t.benchmark == benchmark)]
    assert len(sel) == 1
    return sel.iloc[0]


# --------------------------------------------------------------------------------------------
# TC6 / TC6b
# --------------------------------------------------------------------------------------------


def test_tc6_point_variance_and_treatments_exact():
    r = sc.corrected_scores(cell())
    c = r.cells.iloc[0]
    N, n, y = (100, 500, 400), (25, 25, 400), (20, 2, 120)
    Ntot = sum(N)
    # Independent exact arithmetic, from the formulas of 4.2/4.3.
    p = sum(Fraction(Nh, Ntot) * Fraction(yh, nh) for Nh, nh, yh in zip(N, n, y, strict=True))
    ht = sum(Fraction(Nh, nh) * yh for Nh, nh, yh in zip(N, n, y, strict=True)) / Ntot  # design weights d = N_h / n_h
    assert p == ht == Fraction(6, 25)
    v = Fraction(0)
    for Nh, nh, yh in zip(N, n, y, strict=True):
        yb = Fraction(yh, nh)
        s2 = nh * yb * (1 - yb) / (nh - 1) if nh > 1 else Fraction(0)
        v += Fraction(Nh, Ntot) ** 2 * (1 - Fraction(nh, Nh)) * s2 / nh
    assert v == Fraction(467, 600000)
    vg = v + p * (1 - p) / Ntot
    assert c.estimate == pytest.approx(0.24, abs=TOL)
    assert c.v_fixed == pytest.approx(float(v), abs=1e-15)
    assert c.v_general == pytest.approx(float(vg), abs=1e-15)
    assert c.v_general == pytest.approx(9.607333e-4, abs=1e-10)
    assert c.se_fixed == pytest.approx(0.027899, abs=1e-6)
    assert c.se_general == pytest.approx(0.030996, abs=1e-6)
    assert c.flag == "ok" and c.method == "stratified"
    expected = {
        "ambiguous_as_safe": 0.10,
        "ambiguous_as_harmful": 0.50,
        "ambiguous_excluded": 1 / 6,
        "adjudicated_clear_trusted": 0.22,
        "corrected": 0.24,
    }
    for name, value in expected.items():
        assert row(r, name).estimate == pytest.approx(value, abs=TOL), name
    # no unresolved items: both bounds equal the estimate
    assert row(r, "corrected_unresolved_safe").estimate == pytest.approx(0.24, abs=TOL)
    assert row(r, "corrected_unresolved_harmful").estimate == pytest.approx(0.24, abs=TOL)
    assert "corrected_dawid_skene" not in set(r.treatments.treatment)
    # census U resolved: the clear-trusted treatment is known exactly for these prompts
    ct = row(r, "adjudicated_clear_trusted")
    assert ct.se == 0 and ct.ci_low == pytest.approx(0.22) and ct.ci_high == pytest.approx(0.22)


def test_tc6_interval_is_posterior_not_wald():
    r = sc.corrected_scores(cell(), seed=3)
    c = r.cells.iloc[0]
    assert c.ci_low < 0.24 < c.ci_high
    # asymmetric (0-positive-ish clear stratum pulls it up), so not p +- 1.96 se
    assert (c.ci_high - 0.24) > (0.24 - c.ci_low)
    assert c.ci_low_general < c.ci_low and c.ci_high_general > c.ci_high - 0.01
    # the draws behind it
    d = r.draws["corrected"][0]
    assert d.shape == (sc.DEFAULT_DRAWS,)
    assert np.quantile(d, 0.025, method="inverted_cdf") == c.ci_low
    # every fixed draw is a count / N
    assert np.allclose(np.round(d * 1000), d * 1000)


def test_tc6b_unresolved_mar_and_bounds():
    df = cell(y=(20, 2, 120), u=(0, 0, 30))
    r = sc.corrected_scores(df)
    c = r.cells.iloc[0]
    mar = Fraction(8, 100) + Fraction(4, 100) + Fraction(4, 10) * Fraction(120, 370)
    assert c.estimate == pytest.approx(float(mar), abs=TOL)
    assert c.estimate == pytest.approx(0.2497297, abs=1e-7)
    assert (c.lower_bound, c.upper_bound) == (pytest.approx(0.24, abs=TOL), pytest.approx(0.27, abs=TOL))
    assert row(r, "corrected_unresolved_safe").estimate == pytest.approx(0.24, abs=TOL)
    assert row(r, "corrected_unresolved_harmful").estimate == pytest.approx(0.27, abs=TOL)
    assert c.n_unresolved == 30 and c.n_resolved == 420 and c.n_reviewed == 450
    # the bound treatments' intervals move with them, and corrected's interval is the partial
    # identification interval from the lower end of one to the upper end of the other (issue #13)
    lo, hi = row(r, "corrected_unresolved_safe"), row(r, "corrected_unresolved_harmful")
    assert (c.ci_low, c.ci_high) == (lo.ci_low, hi.ci_high)
    assert (c.ci_low_general, c.ci_high_general) == (lo.ci_low_general, hi.ci_high_general)
    assert lo.estimate <= c.estimate <= hi.estimate
    corr = row(r, "corrected")
    assert corr.estimate_kind == "mar" and corr.interval.startswith("partial identification")


# --------------------------------------------------------------------------------------------
# Polya-Jeffreys against the exact distribution
# --------------------------------------------------------------------------------------------


def exact_polya(N, r, y, shared=True):
    """pmf of sum_h (y_h + X_h) over 0..sum N, X_h from the fiducial Polya step.

    Per stratum, X_h given the rate is Binomial(N_h - r_h, theta) and the rate is drawn from
    Beta(y_h, r_h - y_h + 1) or Beta(y_h + 1, r_h - y_h), so X_h is one of two beta-binomials (a
    Beta with a zero parameter is a point mass at 0 or 1). With ``shared`` (issue #23: one
    component per draw for every stratum of a model) the pmf is the even mixture of the two
    convolutions of all lower and all upper components; without, the convolution of each
    stratum's even mixture.
    """
    pmf = np.array([1.0])
    lows, highs = np.array([1.0]), np.array([1.0])
    for Nh, rh, yh in zip(N, r, y, strict=True):
        M = Nh - rh
        k = np.arange(M + 1)
        lower = stats.betabinom(M, yh, rh - yh + 1).pmf(k) if yh > 0 else (k == 0).astype(float)
        upper = stats.betabinom(M, yh + 1, rh - yh).pmf(k) if rh > yh else (k == M).astype(float)
        pmf = np.convolve(pmf, 0.5 * (lower + upper))
        lows, highs = np.convolve(lows, lower), np.convolve(highs, upper)
    if shared:
        pmf = 0.5 * (lows + highs)
    out = np.zeros(sum(N) + 1)
    out[sum(y) : sum(y) + len(pmf)] = pmf
    return out


def exact_quantile(pmf, q):
    """Smallest t with CDF(t) >= q."""
    return int(np.searchsorted(np.cumsum(pmf), q - 1e-12))


@pytest.mark.parametrize("share", ["label", "model", "stratum"])
@pytest.mark.parametrize(
    "N,r,y", [((12, 30, 8), (4, 5, 8), (3, 0, 2)), ((40, 60, 10), (10, 12, 10), (9, 1, 4)), ((30, 50), (6, 8), (6, 0))]
)
def test_polya_interval_matches_exact_convolution(N, r, y, share, monkeypatch):
    """The draws follow the exact distribution: the fiducial component shared by a model's strata
    of one judge label (issue #23; the default: independent within a cell of distinct labels), by
    all of a model's strata, or one per stratum (before)."""
    from annotate.stats.scoring import posterior

    monkeypatch.setattr(posterior, "SHARE_COMPONENT", share)
    labels = ("harmful", "safe", "ambiguous")[: len(N)]
    df = cell(N=N, n=r, y=y, u=(0,) * len(N), labels=labels)
    D = 200_000
    res = sc.corrected_scores(df, draws=D, seed=11, min_reviewed=0)
    c = res.cells.iloc[0]
    Ntot = sum(N)
    pmf = exact_polya(N, r, y, shared=share == "model")
    cdf = np.cumsum(pmf)
    lo_t, hi_t = exact_quantile(pmf, 0.025), exact_quantile(pmf, 0.975)
    p_hat = sum(Nh * yh / rh for Nh, rh, yh in zip(N, r, y, strict=True)) / Ntot
    # the reported interval is the exact one, extended to the estimate if it lies outside
    lo_t, hi_t = min(lo_t, round(p_hat * Ntot, 9)), max(hi_t, round(p_hat * Ntot, 9))
    # Monte-Carlo quantiles are exact up to MC error in the CDF (sd ~ 3.5e-4 at D = 200k)
    assert abs(c.ci_low * Ntot - lo_t) <= 1 and abs(c.ci_high * Ntot - hi_t) <= 1
    assert cdf[round(c.ci_low * Ntot)] >= 0.025 - 0.002 or c.ci_low == pytest.approx(p_hat)
    # and the whole distribution: total-variation distance
    counts = np.bincount(np.round(res.draws["corrected"][0] * Ntot).astype(int), minlength=Ntot + 1)
    assert 0.5 * np.abs(counts / D - pmf).sum() < 0.01
    # point estimate stays the design-based one, not the posterior mean
    assert c.estimate == pytest.approx(p_hat, abs=TOL)
    assert c.ci_low <= c.estimate <= c.ci_high


# --------------------------------------------------------------------------------------------
# Coverage (independent simulation; truth = the simulated finite population)
# --------------------------------------------------------------------------------------------


def test_fixed_prompt_interval_covers_in_zero_positive_scenario():
    """methods.md S2: N = 20/780/200, P(Y | stratum) = .80/.01/.10, n_H = n_S = 20, U census."""
    rng = np.random.default_rng(2024)
    reps = 400
    Nh = np.array([20, 780, 200])
    theta = np.array([0.80, 0.01, 0.10])
    K = rng.binomial(Nh, theta, size=(reps, 3))  # harmful responses in each stratum's population
    truth = K.sum(axis=1) / Nh.sum()
    n = np.array([20, 20, 200])
    y = np.column_stack([K[:, 0], rng.hypergeometric(K[:, 1], Nh[1] - K[:, 1], n[1]), K[:, 2]])
    frames = [cell(model=f"rep{i:04d}", N=Nh, n=n, y=y[i]) for i in range(reps)]
    res = sc.corrected_scores(pd.concat(frames, ignore_index=True), seed=5)
    cells = res.cells.set_index("model").loc[[f"rep{i:04d}" for i in range(reps)]]
    assert (y[:, 1] == 0).mean() > 0.6  # mostly zero positives in the sampled safe stratum
    covered = (cells.ci_low.to_numpy() <= truth + 1e-12) & (truth - 1e-12 <= cells.ci_high.to_numpy())
    assert covered.mean() >= 0.93, covered.mean()
    # the Wald interval on the same cells would fail badly (methods.md: .19)
    se = cells.se_fixed.to_numpy()
    est = cells.estimate.to_numpy()
    wald = (est - 1.96 * se <= truth) & (truth <= est + 1.96 * se)
    assert wald.mean() < 0.6


def test_general_interval_covers_superpopulation_rate():
    rng = np.random.default_rng(77)
    reps = 400
    pi = np.array([0.10, 0.50, 0.40])
    theta = np.array([0.85, 0.03, 0.30])  # S1 of methods.md
    truth = float(pi @ theta)
    Nh = rng.multinomial(1000, pi, size=reps)
    K = rng.binomial(Nh, theta)
    n = np.column_stack([np.minimum(25, Nh[:, 0]), np.minimum(25, Nh[:, 1]), Nh[:, 2]])
    y = np.column_stack(
        [
            rng.hypergeometric(K[:, 0], Nh[:, 0] - K[:, 0], n[:, 0]),
            rng.hypergeometric(K[:, 1], Nh[:, 1] - K[:, 1], n[:, 1]),
            K[:, 2],
        ]
    )
    frames = [cell(model=f"rep{i:04d}", N=Nh[i], n=n[i], y=y[i]) for i in range(reps)]
    res = sc.corrected_scores(pd.concat(frames, ignore_index=True), seed=6)
    c = res.cells.set_index("model").loc[[f"rep{i:04d}" for i in range(reps)]]
    covered = (c.ci_low_general <= truth) & (truth <= c.ci_high_general)
    assert covered.mean() >= 0.93, covered.mean()


# --------------------------------------------------------------------------------------------
# Same-cell Rogan-Gladen equivalence (4.4) as a property
# --------------------------------------------------------------------------------------------


@st.composite
def cells_strategy(draw):
    N = [draw(st.integers(1, 300)) for _ in range(3)]
    n = [draw(st.integers(1, Nh)) for Nh in N]
    n[2] = N[2] if draw(st.booleans()) else n[2]
    y = [draw(st.integers(0, nh)) for nh in n]
    return N, n, y


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cells_strategy())
def test_same_cell_rogan_gladen_equals_stratified(data):
    N, n, y = data
    res = sc.corrected_scores(cell(N=N, n=n, y=y), draws=200, seed=1, min_reviewed=0)
    c = res.cells.iloc[0]
    # binarised judge: positive = H, negative = S and U; design-weighted Se / Sp (exact rationals)
    d = [Fraction(Nh, nh) for Nh, nh in zip(N, n, strict=True)]
    pos = [d[h] * y[h] for h in range(3)]
    neg = [d[h] * (n[h] - y[h]) for h in range(3)]
    total_pos, total_neg = sum(pos), sum(neg)
    q = Fraction(N[0], sum(N))
    if total_pos > 0 and total_neg > 0:
        se, sp = pos[0] / total_pos, (neg[1] + neg[2]) / total_neg
        if se + sp - 1 != 0:
            rg = (q + sp - 1) / (se + sp - 1)
            assert c.estimate == pytest.approx(float(rg), abs=1e-9)
    assert 0 <= c.ci_low <= c.ci_high <= 1
    assert c.ci_low_general <= c.ci_high_general
    assert c.lower_bound <= c.estimate + 1e-12 <= c.upper_bound + 2e-12


# --------------------------------------------------------------------------------------------
# Judge-only treatments: Wilson
# --------------------------------------------------------------------------------------------


def wilson_by_roots(x, n, z=1.959963984540054):
    """Wilson limits as the roots of (p_hat - p)^2 = z^2 p (1 - p) / n."""
    ph = x / n
    a, b, c_ = 1 + z * z / n, -(2 * ph + z * z / n), ph * ph
    return sorted(np.roots([a, b, c_]).real)


def test_wilson_intervals_of_judge_only_treatments():
    r = sc.corrected_scores(cell())
    for name, x, n in (
        ("ambiguous_as_safe", 100, 1000),
        ("ambiguous_as_harmful", 500, 1000),
        ("ambiguous_excluded", 100, 600),
    ):
        t = row(r, name)
        lo, hi = wilson_by_roots(x, n)
        assert (t.ci_low, t.ci_high) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
        assert t.interval.startswith("wilson") and t.n_reviewed == 0
    lo, hi = sc.wilson_interval(np.array([0, 5]), np.array([20, 0]))
    assert lo[0] == 0 and hi[0] > 0 and np.isnan(lo[1]) and np.isnan(hi[1])


# --------------------------------------------------------------------------------------------
# Not estimable cells
# --------------------------------------------------------------------------------------------

NUMERIC = ["estimate", "se", "ci_low", "ci_high", "se_general", "ci_low_general", "ci_high_general"]


def test_unreviewed_ambiguous_stratum_is_not_estimable():
    df = pd.concat([cell(model="ok"), cell(model="bad", n=(25, 25, 0), y=(20, 2, 0))], ignore_index=True)
    r = sc.corrected_scores(df)
    bad = r.cells.set_index("model").loc["bad"]
    assert np.isnan(bad.estimate) and np.isnan(bad.ci_low) and np.isnan(bad.v_fixed)
    assert bad.flag.startswith("not estimable") and "'ambiguous'" in bad.flag
    for t in ("corrected", "adjudicated_clear_trusted", "corrected_unresolved_safe"):
        x = row(r, t, model="bad")
        assert x.flag.startswith("not estimable")
        assert x[NUMERIC].isna().all(), t
    # judge-only treatments need no review
    assert row(r, "ambiguous_as_safe", model="bad").estimate == pytest.approx(0.1)
    assert np.isnan(r.draws["corrected"][r.cells.model.tolist().index("bad")]).all()
    assert row(r, "corrected", model="ok").estimate == pytest.approx(0.24)


def test_unreviewed_clear_stratum_without_transport_is_not_estimable():
    df = cell(n=(25, 0, 400), y=(20, 0, 120))
    r = sc.corrected_scores(df, min_reviewed=0)
    c = r.cells.iloc[0]
    assert np.isnan(c.estimate) and c.flag.startswith("not estimable") and "transport disabled" in c.flag
    # the clear-trusted treatment does not need the clear review
    ct = row(r, "adjudicated_clear_trusted")
    assert ct.flag == "ok" and ct.estimate == pytest.approx(0.22)
    # with the default minimum, a lone model has no donors: still not estimable, with the reason
    r2 = sc.corrected_scores(df)
    assert r2.cells.iloc[0].flag.startswith("not estimable") and "no donor" in r2.cells.iloc[0].flag


def test_all_unresolved_stratum_mar_not_estimable_but_bounds_are():
    df = cell(y=(20, 2, 0), u=(0, 0, 400))
    r = sc.corrected_scores(df)
    assert np.isnan(row(r, "corrected").estimate)
    assert row(r, "corrected_unresolved_safe").estimate == pytest.approx(0.12)
    assert row(r, "corrected_unresolved_harmful").estimate == pytest.approx(0.52)


def test_no_clear_responses_excluded_treatment_not_estimable():
    df = cell(N=(0, 0, 50), n=(0, 0, 50), y=(0, 0, 10))
    r = sc.corrected_scores(df)
    ex = row(r, "ambiguous_excluded")
    assert np.isnan(ex.estimate) and ex.flag.startswith("not estimable")
    assert row(r, "corrected").estimate == pytest.approx(0.2)


# --------------------------------------------------------------------------------------------
# Transport (Rogan-Gladen with pooled Se / Sp): the rest is in test_transport.py
# --------------------------------------------------------------------------------------------


def transport_frame(donor_h=(26, 26, 26, 26), target_n=(3, 2), target_y=(3, 0)):
    rows = []
    for m, yh in enumerate(donor_h):
        rows.append(cell(model=f"d{m}", N=(100 + 10 * m, 500, 50), n=(30, 30, 50), y=(yh, 2, 20)))
    rows.append(cell(model="t", N=(80, 600, 40), n=(target_n[0], target_n[1], 40), y=(target_y[0], target_y[1], 10)))
    return pd.concat(rows, ignore_index=True)


def test_transport_is_per_benchmark():
    a = transport_frame(target_n=(3, 0), target_y=(3, 0))
    b = transport_frame(donor_h=(29, 5, 26, 15), target_n=(3, 0), target_y=(3, 0)).assign(benchmark="b2")
    r = sc.corrected_scores(pd.concat([a, b], ignore_index=True))
    c = r.cells.set_index(["model", "benchmark"])
    assert c.loc[("t", "b"), "flag"] == "transport"
    assert c.loc[("t", "b2"), "flag"].startswith("not estimable")
    o = r.overall[r.overall.treatment == "corrected"].set_index("model")
    assert np.isnan(o.loc["t", "estimate"]) and "b2:" in o.loc["t", "flag"]


# --------------------------------------------------------------------------------------------
# Waves (several strata per judge label), Dawid-Skene, determinism, validation
# --------------------------------------------------------------------------------------------


def test_waves_are_separate_strata():
    df = cell(
        N=(100, 500, 400, 20, 60, 30),
        n=(25, 25, 400, 10, 12, 30),
        y=(20, 2, 120, 9, 0, 6),
        u=(0,) * 6,
        labels=("harmful", "safe", "ambiguous") * 2,
        strata=("harmful|1", "safe|1", "ambiguous|1", "harmful|2", "safe|2", "ambiguous|2"),
    )
    r = sc.corrected_scores(df)
    N = np.array([100, 500, 400, 20, 60, 30])
    n = np.array([25, 25, 400, 10, 12, 30])
    y = np.array([20, 2, 120, 9, 0, 6])
    assert r.cells.iloc[0].estimate == pytest.approx((N * y / n).sum() / N.sum(), abs=TOL)
    # judge-only treatments use the label totals over the waves
    assert row(r, "ambiguous_as_safe").estimate == pytest.approx(120 / 1110)
    assert row(r, "adjudicated_clear_trusted").estimate == pytest.approx((120 + 120 + 6) / 1110)
    with pytest.raises(ValueError, match="Duplicate stratum"):
        sc.corrected_scores(pd.concat([df, df.iloc[[0]]]))


def test_dawid_skene_treatment():
    df = cell(harmful_ds=(21, 3, 118))
    r = sc.corrected_scores(df)
    t = row(r, "corrected_dawid_skene")
    assert t.estimate == pytest.approx(0.1 * 21 / 25 + 0.5 * 3 / 25 + 0.4 * 118 / 400, abs=TOL)
    assert t.flag == "ok" and t.ci_low < t.estimate < t.ci_high
    df2 = cell(harmful_ds=(21, 3, 118), resolved_ds=(25, 25, 390))
    assert row(sc.corrected_scores(df2), "corrected_dawid_skene").estimate == pytest.approx(
        0.1 * 21 / 25 + 0.5 * 3 / 25 + 0.4 * 118 / 390, abs=TOL
    )


def test_deterministic_and_independent_of_row_order():
    df = pd.concat(
        [cell(model=f"m{i}", benchmark=f"b{j}", y=(20 - i, 2 + j, 120)) for i in range(3) for j in range(2)],
        ignore_index=True,
    )
    a = sc.corrected_scores(df, seed=42, draws=500)
    b = sc.corrected_scores(df.sample(frac=1, random_state=1), seed=42, draws=500)
    pd.testing.assert_frame_equal(a.cells, b.cells)
    pd.testing.assert_frame_equal(a.treatments, b.treatments)
    pd.testing.assert_frame_equal(a.overall, b.overall)
    for k in a.draws:
        np.testing.assert_array_equal(a.draws[k], b.draws[k])
    c = sc.corrected_scores(df, seed=43, draws=500)
    assert not np.array_equal(a.draws["corrected"], c.draws["corrected"])
    assert a.draws["corrected"].shape == (6, 500)


def test_draws_zero_gives_points_only():
    r = sc.corrected_scores(cell(), draws=0)
    c = r.cells.iloc[0]
    assert c.estimate == pytest.approx(0.24) and np.isnan(c.ci_low) and r.draws == {}
    assert not np.isnan(row(r, "ambiguous_as_safe").ci_low)  # Wilson needs no draws


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda d: d.assign(reviewed=[25, 25, 401]), "reviewed > population"),
        (lambda d: d.assign(harmful=[20, 2, 390], unresolved=[0, 0, 20]), "harmful \\+ unresolved"),
        (lambda d: d.assign(judge_label=["harmful", "safe", "maybe"]), "Unknown judge_label"),
        (lambda d: d.drop(columns="unresolved"), "lacks column"),
        (lambda d: d.assign(population=[100.5, 500, 400]), "non-negative integers"),
    ],
)
def test_invalid_input_raises(mutate, match):
    with pytest.raises(ValueError, match=match):
        sc.corrected_scores(mutate(cell()))


def test_judge_label_aliases():
    r = sc.corrected_scores(cell(labels=("H", "S", "U"), strata=("h", "s", "u")))
    assert r.cells.iloc[0].estimate == pytest.approx(0.24)


# --------------------------------------------------------------------------------------------
# Per-model macro-average
# --------------------------------------------------------------------------------------------


def test_macro_average_over_benchmarks():
    df = pd.concat(
        [
            cell(model="a", benchmark="b1"),
            cell(model="a", benchmark="b2", y=(10, 0, 40)),
            cell(model="z", benchmark="b1", y=(22, 4, 200)),
            cell(model="z", benchmark="b2", y=(5, 1, 50)),
        ],
        ignore_index=True,
    )
    r = sc.corrected_scores(df, seed=2)
    o = r.overall[r.overall.treatment == "corrected"].set_index("model")
    cells = r.cells.set_index(["model", "benchmark"])
    for m in ("a", "z"):
        pts = cells.loc[m, "estimate"]
        assert o.loc[m, "estimate"] == pytest.approx(pts.mean(), abs=TOL)
        assert o.loc[m, "se"] == pytest.approx(math.sqrt(cells.loc[m, "v_fixed"].sum()) / 2, abs=TOL)
        rows = (r.cells.model == m).to_numpy()
        avg = r.draws["corrected"][rows].mean(axis=0)
        np.testing.assert_allclose(r.overall_draws["corrected"][list(r.models).index(m)], avg)
        assert o.loc[m, "ci_low"] == np.quantile(avg, 0.025, method="inverted_cdf")
        assert o.loc[m, "ci_high"] == np.quantile(avg, 0.975, method="inverted_cdf")
        assert o.loc[m, "n_benchmarks"] == 2 and o.loc[m, "flag"] == "ok"
    # judge-only: macro-average point, interval from the Dirichlet draws of the label shares
    j = r.overall[r.overall.treatment == "ambiguous_as_safe"].set_index("model")
    assert j.loc["a", "estimate"] == pytest.approx(0.1) and j.loc["a", "ci_low"] < 0.1 < j.loc["a", "ci_high"]


def test_macro_average_missing_or_not_estimable_benchmark():
    df = pd.concat(
        [
            cell(model="a", benchmark="b1"),
            cell(model="a", benchmark="b2"),
            cell(model="z", benchmark="b1"),  # z lacks b2
            cell(model="x", benchmark="b1"),
            cell(model="x", benchmark="b2", n=(25, 25, 0), y=(20, 2, 0)),
        ],
        ignore_index=True,
    )
    r = sc.corrected_scores(df)
    o = r.overall[r.overall.treatment == "corrected"].set_index("model")
    assert o.loc["a", "flag"] == "ok" and o.loc["a", "estimate"] == pytest.approx(0.24)
    assert np.isnan(o.loc["z", "estimate"]) and "no responses for benchmark(s) b2" in o.loc["z", "flag"]
    assert np.isnan(o.loc["x", "estimate"]) and o.loc["x", "flag"].startswith("not estimable: b2:")
    assert np.isnan(r.overall_draws["corrected"][list(r.models).index("x")]).all()
    # restricting the benchmark set makes z comparable
    r2 = sc.corrected_scores(df, benchmarks=["b1"])
    o2 = r2.overall[r2.overall.treatment == "corrected"].set_index("model")
    assert o2.loc["z", "estimate"] == pytest.approx(0.24) and o2.loc["x", "flag"] == "ok"


# --------------------------------------------------------------------------------------------
# Aggregation from responses
# --------------------------------------------------------------------------------------------


def test_strata_from_responses_matches_groupby():
    rng = np.random.default_rng(0)
    R = 5000
    judge = rng.choice(["harmful", "safe", "ambiguous"], R)
    reviewed = (judge == "ambiguous") | (rng.random(R) < 0.2)
    human = np.where(reviewed, rng.choice(["harmful", "safe", "unresolved"], R, p=[0.3, 0.6, 0.1]), None)
    ds = np.where(reviewed, rng.choice(["harmful", "safe"], R), None)
    resp = pd.DataFrame(
        {
            "model": rng.choice(["m1", "m2", "m3"], R),
            "benchmark": rng.choice(["x", "y"], R),
            "judge_label": judge,
            "reviewed": reviewed,
            "human_label": human,
            "ds_label": ds,
            "wave": rng.choice([1, 2], R),
        }
    )
    cat = resp.astype({c: "category" for c in ("model", "benchmark", "judge_label", "human_label", "ds_label")})
    for frame in (resp, cat):
        s = (
            sc.strata_from_responses(frame, wave="wave", ds_label="ds_label")
            .set_index(["model", "benchmark", "stratum"])
            .sort_index()
        )
        g = resp.assign(stratum=resp.judge_label + "|" + resp.wave.astype(str)).groupby(
            ["model", "benchmark", "stratum"]
        )
        assert (s.population == g.size()).all()
        assert (s.reviewed == g.reviewed.sum()).all()
        assert (s.harmful == g.human_label.apply(lambda v: (v == "harmful").sum())).all()
        assert (s.unresolved == g.human_label.apply(lambda v: (v == "unresolved").sum())).all()
        assert (s.harmful_ds == g.ds_label.apply(lambda v: (v == "harmful").sum())).all()
        assert (s.resolved_ds == g.ds_label.count()).all()
    plain = sc.strata_from_responses(resp)
    assert set(plain.stratum) == {"harmful", "safe", "ambiguous"} and len(plain) == 18
    sc.corrected_scores(plain, draws=10)
    bad = resp.assign(reviewed=False)
    with pytest.raises(ValueError, match="not 'reviewed'"):
        sc.strata_from_responses(bad)


# --------------------------------------------------------------------------------------------
# Neyman allocation (4.8)
# --------------------------------------------------------------------------------------------


def test_neyman_allocation_reproduces_methods_example():
    df = cell(N=(100, 500, 400), n=(0, 0, 0), y=(0, 0, 0))
    plan = sc.plan_allocation(df, 0.02).set_index("judge_label")
    # independent: the unrounded optimum from the formula
    W = np.array([0.1, 0.5])
    S = np.sqrt(np.array([0.85 * 0.15, 0.04 * 0.96]))
    n = (W @ S) ** 2 / (0.02**2 + (W @ S**2) / 1000)
    assert n == pytest.approx(41.37, abs=0.01)
    assert plan.loc["harmful", "n_neyman"] == pytest.approx(n * W[0] * S[0] / (W @ S))
    assert plan.loc["harmful", "n"] == 11 and plan.loc["safe", "n"] == 31
    assert plan.loc["safe", "n_cell"] == 42
    assert plan.loc["safe", "expected_se"] <= 0.02 + 1e-4
    assert set(plan.index) == {"harmful", "safe"}


def test_neyman_minimum_census_and_rates():
    df = pd.concat(
        [
            cell(model="a", N=(8, 900, 92), n=(0, 0, 0), y=(0, 0, 0)),
            cell(model="b", N=(300, 300, 400), n=(30, 30, 400), y=(15, 15, 100)),
        ],
        ignore_index=True,
    )
    plan = sc.plan_allocation(df, 0.01, min_per_stratum=10).set_index(["model", "judge_label"])
    assert plan.loc[("a", "harmful"), "n"] == 8 and plan.loc[("a", "harmful"), "census"]  # capped at N_h
    assert (plan.n >= np.minimum(10, plan.population)).all() and (plan.n <= plan.population).all()
    data = sc.plan_allocation(df, 0.02, rates="data").set_index(["model", "judge_label"])
    assert data.loc[("b", "harmful"), "rate_guess"] == pytest.approx(15.5 / 31)
    custom = sc.plan_allocation(df, 0.02, rates={"harmful": 0.5, "safe": 0.5})
    assert (custom.rate_guess == 0.5).all()


# --------------------------------------------------------------------------------------------
# One vocabulary, one public API
# --------------------------------------------------------------------------------------------


def test_public_api_and_vocabulary_come_from_columns():
    from annotate import columns
    from annotate.stats import sampling, shares

    assert sc.TREATMENTS is columns.TREATMENTS and sc.JUDGE_ONLY_TREATMENTS is columns.JUDGE_ONLY_TREATMENTS
    assert sc.LABELS is columns.JUDGE_LABELS and sc.CLEAR_LABELS is columns.CLEAR_LABELS
    assert shares.LABELS is columns.JUDGE_LABELS and sampling.SAMPLED_STRATA is columns.CLEAR_LABELS
    assert sampling.AMBIGUOUS_STRATA == ("ambiguous",)
    for name in sc.__all__:
        assert getattr(sc, name) is not None
    r = sc.corrected_scores(cell(), draws=50)
    assert tuple(r.treatments.treatment.unique()) == columns.TREATMENTS[:-1]  # no Dawid-Skene column
