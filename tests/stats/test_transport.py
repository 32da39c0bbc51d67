"""Rogan-Gladen transport as amended by issue #13: what it tests, what it fills, and that it covers.

References independent of the implementation: the label-shift likelihood-ratio statistic from a
direct joint optimisation of the two-phase likelihood with ``scipy.optimize`` (no EM, no
profiling), the fill and its variance written out from the formulas with pandas, and simulated
benchmarks whose truth is the simulated population.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, special, stats

from annotate.stats import scoring as sc

LABELS = ["harmful", "safe", "ambiguous"]


def cell(model, N, n, y, u=(0, 0, 0), benchmark="b"):
    return pd.DataFrame(
        {
            "model": model,
            "benchmark": benchmark,
            "stratum": LABELS,
            "judge_label": LABELS,
            "population": list(N),
            "reviewed": list(n),
            "harmful": list(y),
            "unresolved": list(u),
        }
    )


def transport_frame(donor_h=(26, 26, 26, 26), target_n=(3, 0), target_y=(3, 0), target_u=(0, 0, 0)):
    rows = [cell(f"d{m}", N=(100 + 10 * m, 500, 50), n=(30, 30, 50), y=(yh, 2, 20)) for m, yh in enumerate(donor_h)]
    rows.append(
        cell("t", N=(80, 600, 40), n=(target_n[0], target_n[1], 40), y=(target_y[0], target_y[1], 10), u=target_u)
    )
    return pd.concat(rows, ignore_index=True)


# --------------------------------------------------------------------------------------------
# What transport fills
# --------------------------------------------------------------------------------------------


def test_transport_fills_only_the_unreviewed_stratum_with_pooled_se_sp():
    df = transport_frame()
    r = sc.corrected_scores(df, seed=9)
    c = r.cells.set_index("model")
    t = c.loc["t"]
    assert t.flag == "transport" and t.method == "transport"
    assert "Se'=" in t.note and "4 donor" in t.note and "label-shift LR test p=" in t.note
    assert "'safe'" in t.note and "keep their own estimate" in t.note
    assert (c.drop(index="t").flag == "ok").all()
    # independent: the donors' design-weighted totals, Rogan-Gladen prevalence, the label-shift
    # rate of the judge-safe stratum; the cell's own judge-harmful items (3 of 3) are kept
    d = df[df.model != "t"].copy()
    d["ybar"] = d.harmful / (d.reviewed - d.unresolved)
    H, S = d[d.judge_label == "harmful"], d[d.judge_label == "safe"]
    TH, TS = (H.population * H.ybar).sum(), (S.population * S.ybar).sum()
    FH, FS = (H.population * (1 - H.ybar)).sum(), (S.population * (1 - S.ybar)).sum()
    se, sp = TH / (TH + TS), FS / (FS + FH)
    q = 80 / 680
    pi = min(max((q + sp - 1) / (se + sp - 1), 0), 1)
    theta_s = pi * (1 - se) / (1 - q)
    expected = (80 * 3 / 3 + 600 * theta_s + 40 * 10 / 40) / 720
    assert t.estimate == pytest.approx(expected, abs=1e-12)
    # the previous transport replaced the whole clear part by (N_C/N) RG: a different number
    assert abs(t.estimate - (680 / 720 * pi + 40 / 720 * 10 / 40)) > 0.01

    # variance: the filled prompts' own binomial term and the delta method through the pooled
    # rates (Beta(ybar n_eff + 1/2, (1 - ybar) n_eff + 1/2), Kish's n_eff)
    def pooled(g):
        Np = g.population.sum()
        ybar = (g.population * g.ybar).sum() / Np
        n_eff = Np**2 / (g.population**2 / g.reviewed).sum()
        a, b = ybar * n_eff + 0.5, (1 - ybar) * n_eff + 0.5
        return Np, ybar, a * b / ((a + b) ** 2 * (a + b + 1))

    NpH, yH, VH = pooled(H)
    NpS, yS, VS = pooled(S)

    def theta_of(rate_h, rate_s):
        th, ts = NpH * rate_h, NpS * rate_s
        fh, fs = NpH - th, NpS - ts
        se_, sp_ = th / (th + ts), fs / (fs + fh)
        pi_ = (q + sp_ - 1) / (se_ + sp_ - 1)
        return 600 * pi_ * (1 - se_) / (1 - q) / 720

    h = 1e-6
    gH = (theta_of(yH + h, yS) - theta_of(yH - h, yS)) / (2 * h)
    gS = (theta_of(yH, yS + h) - theta_of(yH, yS - h)) / (2 * h)
    v = 600 * theta_s * (1 - theta_s) / 720**2 + gH**2 * VH + gS**2 * VS
    assert t.v_fixed == pytest.approx(v, rel=1e-6)
    assert t.v_general == pytest.approx(v + expected * (1 - expected) / 720, rel=1e-6)
    assert t.ci_low <= t.estimate <= t.ci_high
    diag = r.transport.set_index("benchmark").loc["b"]
    assert bool(diag.pooled) and diag.sensitivity == pytest.approx(se) and diag.specificity == pytest.approx(sp)
    # every treatment row of the cell that uses the clear review carries the flag
    tt = r.treatments[r.treatments.model == "t"].set_index("treatment")
    assert (
        tt.loc[["corrected", "corrected_unresolved_safe", "corrected_unresolved_harmful"], "flag"] == "transport"
    ).all()
    assert (tt.loc[["corrected"], "estimate_kind"] == "transport").all()
    assert "rogan-gladen" in tt.loc["corrected", "interval"]


def test_transported_draws_are_centred_on_the_estimate():
    """One prior on the pooled counts: the draws' median sits at the estimate (issue #13: a
    Jeffreys prior per donor stratum dragged the pooled Se from 0.892 to 0.846)."""
    donors = [cell(f"d{m}", N=(120 + 15 * m, 900, 0), n=(10, 10, 0), y=(9, 0, 0), u=(0, 0, 0)) for m in range(8)]
    target = cell("t", N=(150, 850, 0), n=(10, 0, 0), y=(9, 0, 0))
    r = sc.corrected_scores(pd.concat([*donors, target], ignore_index=True), seed=3, draws=20_000)
    i = list(r.cells.model).index("t")
    t = r.cells.iloc[i]
    assert t.flag == "transport"
    d = r.draws["corrected"][i]
    width = t.ci_high - t.ci_low
    assert abs(np.median(d) - t.estimate) < 0.1 * width, (np.median(d), t.estimate, width)
    assert t.ci_low < t.estimate < t.ci_high


def test_one_unresolved_clear_item_keeps_the_cells_own_review():
    """Issue #13: one unresolved item in a reviewed clear stratum switched the whole cell to
    transport and discarded its own reviewed items (0.25 -> 0.22 in the field)."""
    # the target's judge-safe stratum: 10 reviewed, 1 unresolved, 2 of the 9 resolved harmful
    df = transport_frame(target_n=(30, 10), target_y=(24, 2), target_u=(0, 1, 0))
    r = sc.corrected_scores(df, seed=1)
    t = r.cells.set_index("model").loc["t"]
    own = (80 * 24 / 30 + 600 * 2 / 9 + 40 * 10 / 40) / 720
    assert t.estimate == pytest.approx(own, abs=1e-12)
    assert t.method == "stratified" and t.flag.startswith("low n")
    assert "keep their own estimate" in t.note or "kept" in t.note


def test_low_n_cell_keeps_its_own_estimate_whatever_the_donors():
    for donors in ((26, 26, 26, 26), (29, 5, 26, 15)):
        r = sc.corrected_scores(transport_frame(donor_h=donors, target_n=(3, 5), target_y=(3, 1)))
        t = r.cells.set_index("model").loc["t"]
        assert t.flag.startswith("low n") and t.method == "stratified"
        assert t.estimate == pytest.approx((80 * 1 + 600 * 1 / 5 + 40 * 10 / 40) / 720, abs=1e-12)
    # below-minimum census strata are not under-reviewed
    small = pd.concat([transport_frame(), cell("c", N=(4, 6, 3), n=(4, 6, 3), y=(4, 0, 1))], ignore_index=True)
    assert sc.corrected_scores(small).cells.set_index("model").loc["c"].flag == "ok"


# --------------------------------------------------------------------------------------------
# The label-shift test
# --------------------------------------------------------------------------------------------


def independent_lr(NH, NS, yH, rH, yS, rS):
    """LR of common Se/Sp (a prevalence per model) against free (q, PPV, FOR), by direct joint
    optimisation over (logit Se, logit Sp, logit pi_1..M) from several starts."""
    NH, NS, yH, rH, yS, rS = (np.asarray(a, dtype=float) for a in (NH, NS, yH, rH, yS, rS))

    def ll(q, ppv, fo):
        return (
            special.xlogy(NH, q)
            + special.xlogy(NS, 1 - q)
            + special.xlogy(yH, ppv)
            + special.xlogy(rH - yH, 1 - ppv)
            + special.xlogy(yS, fo)
            + special.xlogy(rS - yS, 1 - fo)
        ).sum()

    def neg(x):
        se, sp = special.expit(x[:2])
        pi = special.expit(x[2:])
        q = pi * se + (1 - pi) * (1 - sp)
        return -ll(q, pi * se / q, pi * (1 - se) / (1 - q))

    best = None
    for se0, sp0 in ((0.8, 0.95), (0.9, 0.9), (0.6, 0.99)):
        x0 = np.r_[special.logit([se0, sp0]), special.logit(np.clip(NH / (NH + NS), 0.05, 0.95))]
        res = optimize.minimize(neg, x0, method="BFGS", options={"gtol": 1e-10, "maxiter": 10_000})
        if best is None or res.fun < best.fun:
            best = res
    sat = ll(NH / (NH + NS), yH / rH, yS / rS)
    return 2 * (sat + best.fun)


def donors_of(df, benchmark="b"):
    d = df[(df.benchmark == benchmark) & (df.model != "t")]
    H = d[d.judge_label == "harmful"].set_index("model")
    S = d[d.judge_label == "safe"].set_index("model")
    r = lambda g: g.reviewed - g.unresolved  # noqa: E731
    return H.population, S.population, H.harmful, r(H), S.harmful, r(S)


def test_label_shift_lr_matches_an_independent_optimiser():
    df = transport_frame(donor_h=(26, 22, 28, 20))
    r = sc.corrected_scores(df, draws=0)
    diag = r.transport.set_index("benchmark").loc["b"]
    lr = independent_lr(*donors_of(df))
    assert diag.lr_stat == pytest.approx(lr, rel=1e-5, abs=1e-7)
    assert diag.df == 2 * (4 - 1)
    assert diag.p_value == pytest.approx(stats.chi2.sf(lr, 6), rel=1e-4)
    assert bool(diag.pooled) and np.isfinite(diag.sensitivity_mle) and 0 < diag.specificity_mle < 1


def label_shift_benchmark(prevalences, se, sp, NC=900, n=25, rng=None):
    """Strata of one benchmark whose judge has one Se and Sp, exact expected counts when rng is None."""
    rows = []
    for m, pi in enumerate(prevalences):
        pos = NC * pi
        TP, FP = pos * se, (NC - pos) * (1 - sp)
        NH = round(TP + FP)
        NS = NC - NH
        ppv, fo = TP / (TP + FP), pos * (1 - se) / (NC - TP - FP)
        rows.append(cell(f"d{m}", N=(NH, NS, 0), n=(n, n, 0), y=(round(n * ppv), round(n * fo), 0)))
    return rows


def test_pure_label_shift_pools_where_the_predictive_values_differ():
    """Under label shift the predictive values differ across models while Se/Sp do not: the
    earlier check refused to pool (94.6 % of the time in the issue's simulation)."""
    rows = label_shift_benchmark([0.05, 0.15, 0.30, 0.45], se=0.85, sp=0.96, n=40)
    rows.append(cell("t", N=(200, 700, 0), n=(25, 0, 0), y=(20, 0, 0)))
    df = pd.concat(rows, ignore_index=True)
    H = df[(df.judge_label == "harmful") & (df.model != "t")]
    g, p_ppv, *_ = stats.chi2_contingency(np.vstack([H.harmful, H.reviewed - H.harmful]), lambda_="log-likelihood")
    assert p_ppv < 0.05  # the predictive values do differ: the old test would not pool
    r = sc.corrected_scores(df, draws=0)
    assert r.cells.set_index("model").loc["t", "flag"] == "transport"
    diag = r.transport.set_index("benchmark").loc["b"]
    assert diag.p_value > 0.5 and bool(diag.pooled)


def test_unequal_se_sp_blocks_pooling_with_the_reason():
    rows = [
        cell("d0", N=(100, 800, 0), n=(30, 30, 0), y=(29, 0, 0)),  # Se ~ 1, Sp ~ 1
        cell("d1", N=(300, 600, 0), n=(30, 30, 0), y=(10, 9, 0)),  # many FP and FN
        cell("d2", N=(120, 780, 0), n=(30, 30, 0), y=(28, 0, 0)),
        cell("d3", N=(280, 620, 0), n=(30, 30, 0), y=(12, 8, 0)),
        cell("t", N=(200, 700, 0), n=(25, 0, 0), y=(20, 0, 0)),
    ]
    df = pd.concat(rows, ignore_index=True)
    r = sc.corrected_scores(df)
    t = r.cells.set_index("model").loc["t"]
    assert np.isnan(t.estimate) and t.flag.startswith("not estimable") and "label-shift LR test" in t.flag
    diag = r.transport.set_index("benchmark").loc["b"]
    assert diag.p_value < 1e-6 and not bool(diag.pooled)
    assert "sensitivity and specificity differ" in diag.reason
    assert diag.lr_stat == pytest.approx(independent_lr(*donors_of(df)), rel=1e-4)


def simulated_benchmarks(rng, R, prevalence, se, sp, n=25, NC=900, NU=100):
    """R benchmarks of 7 models (the last the target, no reviewed judge-safe item): strata, truth."""
    M = len(prevalence)
    Y = rng.binomial(NC, prevalence, size=(R, M))
    TP, FP = rng.binomial(Y, se), rng.binomial(NC - Y, 1 - sp)
    NH, NS, FN = TP + FP, NC - TP - FP, Y - TP
    rH, rS = np.minimum(n, NH), np.minimum(n, NS)
    rS[:, -1] = 0
    yH = rng.hypergeometric(TP, FP, rH)
    yS = np.where(rS > 0, rng.hypergeometric(FN, NS - FN, np.maximum(rS, 1)), 0)
    KU = rng.binomial(NU, 0.3, size=(R, M))
    cnt = np.stack([NH, NS, np.full((R, M), NU)], axis=2)
    rev = np.stack([rH, rS, np.full((R, M), NU)], axis=2)
    harm = np.stack([yH, yS, KU], axis=2)
    df = pd.DataFrame(
        {
            "model": np.repeat(np.tile([f"m{i}" for i in range(M)], R), 3),
            "benchmark": np.repeat([f"b{i:04d}" for i in range(R)], 3 * M),
            "stratum": np.tile(LABELS, R * M),
            "judge_label": np.tile(LABELS, R * M),
            "population": cnt.ravel(),
            "reviewed": rev.ravel(),
            "harmful": harm.ravel(),
            "unresolved": 0,
        }
    )
    return df, (Y[:, -1] + KU[:, -1]) / (NC + NU)


PI = np.linspace(0.05, 0.40, 7)


def test_label_shift_test_holds_its_level_and_has_power():
    """Rejection rate near 5 % under pure label shift; power against equal predictive values
    with unequal Se/Sp (the case the previous check let through ~88 % of the time)."""
    rng = np.random.default_rng(13)
    df, _ = simulated_benchmarks(rng, 300, PI, np.full(7, 0.85), np.full(7, 0.96))
    p = sc.corrected_scores(df, draws=0).transport.p_value.to_numpy()
    level = np.mean(p < 0.05)
    assert 0.02 <= level <= 0.10, level
    q = np.linspace(0.10, 0.45, 7)
    pi2 = q * 0.8 + (1 - q) * 0.03
    df2, _ = simulated_benchmarks(rng, 300, pi2, q * 0.8 / pi2, (1 - q) * 0.97 / (1 - pi2))
    power = np.mean(sc.corrected_scores(df2, draws=0).transport.p_value.to_numpy() < 0.05)
    assert power >= 0.6, power


def test_borrowed_estimate_is_unbiased_and_covers_under_label_shift():
    rng = np.random.default_rng(21)
    df, truth = simulated_benchmarks(rng, 240, PI, np.full(7, 0.85), np.full(7, 0.96))
    r = sc.corrected_scores(df, draws=1000, seed=4)
    t = r.cells[r.cells.model == "m6"].sort_values("benchmark")
    pooled = (t.flag == "transport").to_numpy()
    assert pooled.mean() >= 0.85, pooled.mean()  # the previous check pooled ~6 % of these
    est, lo, hi = (t[c].to_numpy()[pooled] for c in ("estimate", "ci_low", "ci_high"))
    tr = truth[pooled]
    assert abs(np.mean(est - tr)) < 0.01
    assert np.mean((lo <= tr + 1e-12) & (tr <= hi + 1e-12)) >= 0.9
