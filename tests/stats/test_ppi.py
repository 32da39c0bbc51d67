"""Stratified PPI++ (annotate.stats.scoring.ppi): ppi-python as the oracle, the identity with 4.2, fallbacks.

ppi-python 0.2.3 (Angelopoulos et al.; the `test` extra) is the oracle of the per-stratum
figures: lambda, the point estimate and the standard error of ``ppi_mean_ci``. It is imported
inside a catch_warnings block because it silences every warning of the process when imported.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from annotate.stats import scoring as sc
from annotate.stats.scoring.ppi import judge_predictions, ppi_cells, ppi_lambda, ppi_stratum, score_direction

LABELS = ("harmful", "safe", "ambiguous")


@pytest.fixture(scope="module")
def ppi_py():
    with warnings.catch_warnings():
        import ppi_py as module
    return module


def oracle(ppi_py, y, f_lab, f_all):
    """ppi-python's lambda, estimate and standard error for one stratum (unlabelled = the whole stratum)."""
    Y, Yhat, Yhat_u = np.asarray(y, float), np.asarray(f_lab, float), np.asarray(f_all, float)
    est = float(ppi_py.ppi_mean_pointestimate(Y, Yhat, Yhat_u)[0])
    lo, hi = ppi_py.ppi_mean_ci(Y, Yhat, Yhat_u, alpha=0.05)
    se = (float(hi[0]) - float(lo[0])) / 2 / 1.959963984540054
    grads, grads_hat, grads_u = Y - est, Yhat - est, Yhat_u - est
    lam = float(ppi_py.ppi._calc_lam_glm(grads, grads_hat, grads_u, np.eye(1), clip=True))
    return lam, est, se


@pytest.mark.parametrize("seed", range(12))
def test_per_stratum_figures_match_ppi_python_on_random_data(ppi_py, seed):
    rng = np.random.default_rng(seed)
    N = int(rng.integers(20, 600))
    n = int(rng.integers(3, min(N, 80) + 1))
    p = rng.uniform(0.02, 0.9)
    Y_all = (rng.random(N) < p).astype(float)
    strength = rng.uniform(-0.3, 1.2)  # from a misleading score to one that beats the label
    f_all = np.clip(0.5 + strength * (Y_all - 0.5) + rng.normal(0, rng.uniform(0.05, 0.4), N), 0, 1)
    at = rng.choice(N, n, replace=False)
    y, f_lab = Y_all[at], f_all[at]
    if y.min() == y.max():  # ppi-python's lambda is 0/0 = NaN without variation in Y
        y[0] = 1 - y[0]
    mine = ppi_stratum(y, f_lab, f_all)
    lam, est, se = oracle(ppi_py, y, f_lab, f_all)
    assert mine.lam == pytest.approx(lam, abs=1e-12)
    assert mine.estimate == pytest.approx(est, abs=1e-12)
    assert mine.se == pytest.approx(se, rel=1e-9)
    assert ppi_lambda(y, f_lab, f_all) == pytest.approx(lam, abs=1e-12)


def test_lambda_clips_at_both_ends_as_ppi_python(ppi_py):
    rng = np.random.default_rng(5)
    Y_all = (rng.random(300) < 0.4).astype(float)
    f_all = np.clip(0.45 + 0.05 * Y_all + rng.normal(0, 0.005, 300), 0, 1)  # Cov / Var(f) is about 20: lambda > 1
    y = Y_all[:40]
    high = ppi_stratum(y, f_all[:40], f_all)
    assert high.lam == 1.0 == pytest.approx(oracle(ppi_py, y, f_all[:40], f_all)[0])
    f_rev = 1 - f_all  # the score points the wrong way: lambda < 0 before the clip
    low = ppi_stratum(y, f_rev[:40], f_rev)
    assert low.lam == 0.0 == pytest.approx(oracle(ppi_py, y, f_rev[:40], f_rev)[0])
    assert low.estimate == pytest.approx(y.mean())


@pytest.mark.parametrize("value", [0.0, 0.5, 1.0])
def test_a_constant_prediction_gives_ybar_as_ppi_python_does(ppi_py, value):
    """Var(f) = 0 makes lambda 0/0: we take 0; every lambda gives ybar then (methods.md 4.5)."""
    y = np.array([1.0, 0, 0, 1, 0])
    f_lab, f_all = np.full(5, value), np.full(50, value)
    mine = ppi_stratum(y, f_lab, f_all)
    assert mine.lam == 0.0 and mine.estimate == pytest.approx(0.4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _lam, est, se = oracle(ppi_py, y, f_lab, f_all)
        assert float(ppi_py.ppi_mean_pointestimate(y, f_lab, f_all, lam=1)[0]) == pytest.approx(0.4)
    assert (mine.estimate, mine.se) == (pytest.approx(est), pytest.approx(se))


# -- cells ------------------------------------------------------------------------------------


def design(rng, Nh, ph, nh, *, models=("m",), f=None, unresolved=0):
    """Strata and items of a stratified two-phase design (census where n is None)."""
    strata, items = [], []
    for m in models:
        for h, (N, p, n) in enumerate(zip(Nh, ph, nh, strict=True)):
            n = N if n is None else n
            Y = (rng.random(N) < p).astype(int)
            pred = f(Y, h) if f is not None else np.clip(0.3 + 0.4 * Y + rng.normal(0, 0.15, N), 0, 1)
            sel = np.zeros(N, bool)
            sel[rng.choice(N, n, replace=False)] = True
            out = np.where(sel, np.where(Y == 1, "harmful", "safe"), None).astype(object)
            if unresolved and LABELS[h] == "ambiguous":
                out[np.flatnonzero(sel)[:unresolved]] = "unresolved"
            items.append(
                pd.DataFrame({"model": m, "benchmark": "b", "stratum": LABELS[h], "prediction": pred, "outcome": out})
            )
            strata.append(
                {
                    "model": m,
                    "benchmark": "b",
                    "stratum": LABELS[h],
                    "judge_label": LABELS[h],
                    "population": N,
                    "reviewed": n,
                    "harmful": int((out == "harmful").sum()),
                    "unresolved": int((out == "unresolved").sum()),
                }
            )
    return pd.DataFrame(strata), pd.concat(items, ignore_index=True)


@pytest.mark.parametrize("unresolved", [0, 12])
def test_with_the_routing_label_as_prediction_ppi_is_the_design_based_estimator(unresolved):
    """Inside a judge-label stratum the routing judge's label is constant: lambda = 0 and every
    figure is 4.2's (estimate and variance exactly; the interval the same construction)."""
    rng = np.random.default_rng(11)
    strata, items = design(
        rng,
        (120, 600, 300),
        (0.8, 0.04, 0.3),
        (25, 25, None),
        models=("m1", "m2", "m3"),
        f=lambda Y, h: np.full(len(Y), {0: 1.0, 1: 0.0, 2: 0.5}[h]),
        unresolved=unresolved,
    )
    ppi = ppi_cells(strata, items, draws=20000, seed=1)
    ref = sc.corrected_scores(strata, draws=20000, seed=2)
    cells = ref.cells.set_index("model")
    assert (ppi.strata.lam == 0).all()
    for r in ppi.cells.itertuples():
        c = cells.loc[r.model]
        assert r.estimate == pytest.approx(c.estimate, abs=1e-15)
        assert r.v_ppi == pytest.approx(c.v_fixed, rel=1e-12)
        assert r.v_design == pytest.approx(c.v_fixed, rel=1e-12)
        assert r.gain == pytest.approx(1.0)
        assert r.ci_low == pytest.approx(c.ci_low, abs=0.004) and r.ci_high == pytest.approx(c.ci_high, abs=0.004)
        assert r.estimate_kind == ("mar" if unresolved else "ppi")
    general = ppi_cells(strata, items, draws=20000, seed=1, estimand="general").cells
    for r in general.itertuples():
        c = cells.loc[r.model]
        assert r.ci_low == pytest.approx(c.ci_low_general, abs=0.006)
        assert r.ci_high == pytest.approx(c.ci_high_general, abs=0.006)


def test_an_informative_prediction_narrows_the_interval_and_keeps_the_invariant():
    rng = np.random.default_rng(3)
    strata, items = design(rng, (300, 300, 400), (0.7, 0.05, 0.4), (50, 50, None), models=("a", "b", "c", "d"))
    out = ppi_cells(strata, items, draws=4000, seed=0)
    ref = sc.corrected_scores(strata, draws=4000, seed=0).cells
    assert (out.cells.gain > 1.3).all(), out.cells.gain.tolist()
    assert (out.cells.ci_high - out.cells.ci_low).mean() < 0.9 * (ref.ci_high - ref.ci_low).mean()
    assert sc.check_scores(out.cells) == []


def test_a_stratum_without_a_prediction_for_every_response_keeps_the_design_based_estimate():
    rng = np.random.default_rng(4)
    strata, items = design(rng, (100, 400, 50), (0.8, 0.05, 0.3), (25, 25, None))
    gap = items.index[(items.stratum == "safe")][:3]
    items.loc[gap, "prediction"] = np.nan
    items["reason"] = ""
    items.loc[gap, "reason"] = "no judge_score and no other judge labelled this response"
    out = ppi_cells(strata, items, draws=2000, seed=0)
    s = out.strata.set_index("stratum")
    assert s.loc["safe", "lam"] == 0.0
    assert s.loc["safe", "estimate"] == pytest.approx(s.loc["safe", "design_estimate"])
    assert "3 of 400 responses have no prediction" in s.loc["safe", "fallback"]
    assert "no other judge labelled this response: 3" in s.loc["safe", "fallback"]
    (row,) = out.cells.itertuples()
    assert row.flag == "fallback: design-based in 1 of 3 strata"
    assert "stratum safe design-based: 3 of 400" in row.note
    assert sc.check_scores(out.cells) == []


def test_responses_that_no_longer_match_the_design_fall_back_with_the_reason():
    rng = np.random.default_rng(6)
    strata, items = design(rng, (100, 400, 50), (0.8, 0.05, 0.3), (25, 25, None))
    items = items.drop(items.index[(items.stratum == "harmful") & items.outcome.isna()][:2])
    out = ppi_cells(strata, items, draws=500, seed=0)
    why = out.strata.set_index("stratum").loc["harmful", "fallback"]
    assert "do not match the design (100, 25 reviewed" in why and "(98, 25 reviewed" in why


def test_a_stratum_without_resolved_items_is_not_estimable_and_says_why():
    rng = np.random.default_rng(7)
    strata, items = design(rng, (100, 400, 20), (0.8, 0.05, 0.3), (25, 25, None), unresolved=20)
    out = ppi_cells(strata, items, draws=500, seed=0)
    (row,) = out.cells.itertuples()
    assert math.isnan(row.estimate) and math.isnan(row.ci_low)
    assert row.flag.startswith("not estimable: stratum(s) ambiguous without any resolved reviewed item")
    assert out.strata.set_index("stratum").loc["ambiguous", "note"].startswith("no resolved reviewed item")
    assert sc.check_scores(out.cells) == []


def test_unresolved_items_get_the_partial_identification_interval():
    """The interval holds whether the unresolved items are all safe or all harmful."""
    rng = np.random.default_rng(8)
    strata, items = design(rng, (100, 500, 200), (0.85, 0.03, 0.3), (25, 25, None), unresolved=40)
    out = ppi_cells(strata, items, draws=4000, seed=0)
    (row,) = out.cells.itertuples()
    assert row.estimate_kind == "mar" and row.interval.startswith("partial identification")
    for value in ("safe", "harmful"):
        settled = items.assign(outcome=items.outcome.replace("unresolved", value))
        st = strata.assign(
            harmful=[int((settled[settled.stratum == s].outcome == "harmful").sum()) for s in strata.stratum],
            unresolved=0,
        )
        point = ppi_cells(st, settled, draws=0).cells.estimate.iat[0]
        assert row.ci_low <= point <= row.ci_high, (value, point, row.ci_low, row.ci_high)


def test_an_estimate_outside_0_1_is_clipped_and_said(monkeypatch):
    # One harmful item among 20 reviewed, whose predictions are far higher than the unreviewed ones':
    # theta = lambda mean_N(f) + mean_s(Y - lambda f) is about -0.14 (lambda fitted on all the
    # reviewed items; cross-fitted, the harmful item's own lambda is 0 and the estimate 0.05).
    from annotate.stats.scoring import ppi

    monkeypatch.setattr(ppi, "CROSS_FIT", False)
    strata = pd.DataFrame(
        [
            {
                "model": "m",
                "benchmark": "b",
                "stratum": "safe",
                "judge_label": "safe",
                "population": 200,
                "reviewed": 20,
                "harmful": 1,
                "unresolved": 0,
            }
        ]
    )
    f = np.r_[0.9, np.linspace(0.45, 0.55, 19), np.linspace(0.0, 0.01, 180)]
    out = np.r_[["harmful"], ["safe"] * 19, [None] * 180].astype(object)
    items = pd.DataFrame({"model": "m", "benchmark": "b", "stratum": "safe", "prediction": f, "outcome": out})
    res = ppi_cells(strata, items, draws=1000, seed=0).cells
    assert res.estimate.iat[0] == 0.0
    assert "was clipped to [0, 1]" in res.note.iat[0]
    assert sc.check_scores(res) == []


def test_draws_zero_gives_no_interval_with_the_reason():
    rng = np.random.default_rng(9)
    strata, items = design(rng, (100, 400, 50), (0.8, 0.05, 0.3), (25, 25, None))
    (row,) = ppi_cells(strata, items, draws=0).cells.itertuples()
    assert math.isnan(row.ci_low) and "no posterior draws" in row.note
    assert sc.check_scores(ppi_cells(strata, items, draws=0).cells) == []


def test_bad_predictions_and_outcomes_are_refused():
    rng = np.random.default_rng(10)
    strata, items = design(rng, (30, 40), (0.5, 0.1), (10, 10))
    with pytest.raises(ValueError, match="outside \\[0, 1\\]"):
        ppi_cells(strata, items.assign(prediction=items.prediction + 2), draws=0)
    with pytest.raises(ValueError, match="Unknown outcome"):
        ppi_cells(strata, items.assign(outcome=items.outcome.where(items.outcome.isna(), "maybe")), draws=0)


def test_results_do_not_depend_on_the_input_order():
    rng = np.random.default_rng(12)
    strata, items = design(rng, (100, 400, 50), (0.8, 0.05, 0.3), (25, 25, None), models=("x", "y"), unresolved=5)
    a = ppi_cells(strata, items, draws=2000, seed=3).cells
    b = ppi_cells(strata.iloc[::-1], items.sample(frac=1, random_state=1), draws=2000, seed=3).cells
    pd.testing.assert_frame_equal(a, b)


# -- predictions ------------------------------------------------------------------------------


def routing(**cols):
    n = len(next(iter(cols.values())))
    base = {
        "response_id": np.arange(1, n + 1),
        "model": "m",
        "benchmark": "b",
        "prompt_id": [f"p{i}" for i in range(n)],
        "epoch": 0,
        "judge_score": [None] * n,
        "prompt": [f"q{i}" for i in range(n)],
        "response": [f"r{i}" for i in range(n)],
    }
    return pd.DataFrame({**base, **cols})


def test_scores_are_read_in_the_direction_their_band_gave_and_rescaled_off_0_1():
    low = judge_predictions(routing(judge_score=[0.2, 0.9]), direction="low")
    assert low.prediction.tolist() == pytest.approx([0.8, 0.1])
    likert = judge_predictions(routing(judge_score=[1.0, 3.0, 5.0]), direction="high")
    assert likert.prediction.tolist() == pytest.approx([0.0, 0.5, 1.0])
    unknown = judge_predictions(routing(judge_score=[0.2, 0.9]), direction=None, direction_reason="no score band")
    assert unknown.prediction.isna().all()
    assert unknown.reason.tolist() == ["its judge_score cannot be read: no score band"] * 2


def test_other_judges_count_only_on_the_same_response_text():
    r = routing(judge_score=[None, None, None])
    others = pd.DataFrame(
        {
            "judge": ["j2", "j3", "j4", "j2", "j2"],
            "model": "m",
            "benchmark": "b",
            "prompt_id": ["p0", "p0", "p0", "p1", "p2"],
            "epoch": 0,
            "judge_label": ["harmful", "ambiguous", "safe", "harmful", "harmful"],
            "prompt": ["q0", "q0", "q0", "q1", "q2"],
            "response": ["r0", "r0", "r0", "r1 (another sample)", "r2"],
        }
    )
    out = judge_predictions(r, others)
    assert out.prediction.iloc[0] == pytest.approx(1 / 3)  # ambiguous is not harmful
    assert math.isnan(out.prediction.iloc[1]) and "same key, prompt and response text" in out.reason.iloc[1]
    assert out.prediction.iloc[2] == 1.0 and out.source.iloc[2] == "other judges (1)"


def test_score_direction_comes_from_the_score_band_labels():
    assert score_direction([0.1, 0.95, 0.5], ["safe", "harmful", "ambiguous"], ["score-band"] * 3) == "high"
    assert score_direction([0.1, 0.95], ["harmful", "safe"], ["score-band"] * 2) == "low"
    assert score_direction([0.1, 0.95], ["harmful", "safe"], ["mapped"] * 2) is None
    assert score_direction([0.7, 0.9, 0.95], ["harmful", "safe", "harmful"], ["score-band"] * 3) is None
