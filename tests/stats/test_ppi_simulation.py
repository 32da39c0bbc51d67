"""Stratified PPI++ by simulation: bias, coverage and width against the design-based interval.

A stratified two-phase design as ``route`` draws it: judge-label strata of known size, a simple
random sample of each clear stratum, the ambiguous one reviewed in full; a score f that correlates
with the human label Y (Beta(a1, b1) for harmful items, Beta(a0, b0) for safe ones). The truth is
the simulated finite population's harmful rate (the fixed-prompt estimand), new each replicate.
The design-based interval is ``corrected_scores``' own. These are small runs with thresholds;
``python -m tests.stats.test_ppi_simulation 2000`` prints the full table (docs/methods.md 9.5).
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import pandas as pd
import pytest

from annotate.stats import scoring as sc
from annotate.stats.scoring.ppi import ppi_cells

LABELS = ("harmful", "safe", "ambiguous")

#: name: N_h, P(harmful | stratum), n_h (None: census), the prediction: Beta parameters of f for
#: Y = 1 and Y = 0, or ("binary", accuracy): f = Y with that probability, else 1 - Y (another
#: judge's label, the fallback when the routing judge has no score).
DESIGNS = {
    "S1, moderate score": ((100, 500, 400), (0.85, 0.03, 0.30), (25, 25, None), ((5, 2), (2, 5))),
    "S4, moderate score": ((300, 300, 400), (0.70, 0.05, 0.40), (50, 50, None), ((5, 2), (2, 5))),
    "S3, strong score, 10 reviewed": ((100, 500, 400), (0.90, 0.10, 0.50), (10, 10, None), ((8, 2), (2, 8))),
    "sparse, strong score, 15 reviewed": ((450, 450), (0.20, 0.02), (15, 15), ((8, 2), (2, 8))),
    "S1, useless score": ((100, 500, 400), (0.85, 0.03, 0.30), (25, 25, None), ((2, 2), (2, 2))),
    "S1, anti-correlated score": ((100, 500, 400), (0.85, 0.03, 0.30), (25, 25, None), ((2, 5), (5, 2))),
    # issue #23: another judge's label as the prediction
    "S1, binary prediction, 97 % accurate": ((100, 500, 400), (0.85, 0.03, 0.30), (25, 25, None), ("binary", 0.97)),
    "S1, binary prediction, 90 % accurate": ((100, 500, 400), (0.85, 0.03, 0.30), (25, 25, None), ("binary", 0.90)),
    "sparse, binary prediction, 97 % accurate": ((450, 450), (0.20, 0.02), (15, 15), ("binary", 0.97)),
    "one stratum of 500, binary, 97 % accurate": ((500,), (0.03,), (25,), ("binary", 0.97)),
}


def replicates(Nh, ph, nh, fpar, R, seed):
    """(strata, items, truth) of R independent replicates, one cell (model ``rNNNNN``) each."""
    rng = np.random.default_rng(seed)
    strata, items, truth = [], [], np.zeros(R)
    for rep in range(R):
        harmful = total = 0
        model = f"r{rep:05d}"
        for h, (N, p, n) in enumerate(zip(Nh, ph, nh, strict=True)):
            n = N if n is None else n
            Y = (rng.random(N) < p).astype(int)
            if fpar[0] == "binary":
                f = np.where(rng.random(N) < fpar[1], Y, 1 - Y).astype(float)
            else:
                (a1, b1), (a0, b0) = fpar
                f = np.where(Y == 1, rng.beta(a1, b1, N), rng.beta(a0, b0, N))
            sel = np.zeros(N, bool)
            sel[rng.choice(N, n, replace=False)] = True
            out = np.where(sel, np.where(Y == 1, "harmful", "safe"), None).astype(object)
            items.append(
                pd.DataFrame({"model": model, "benchmark": "b", "stratum": LABELS[h], "prediction": f, "outcome": out})
            )
            strata.append(
                {
                    "model": model,
                    "benchmark": "b",
                    "stratum": LABELS[h],
                    "judge_label": LABELS[h],
                    "population": N,
                    "reviewed": n,
                    "harmful": int((out == "harmful").sum()),
                    "unresolved": 0,
                }
            )
            harmful, total = harmful + Y.sum(), total + N
        truth[rep] = harmful / total
    return pd.DataFrame(strata), pd.concat(items, ignore_index=True), truth


def summary(cells, truth):
    e, lo, hi = (cells[c].to_numpy() for c in ("estimate", "ci_low", "ci_high"))
    return {
        "bias": float(np.mean(e - truth)),
        "mcse": float(np.std(e - truth) / np.sqrt(len(truth))),
        "coverage": float(np.mean((lo <= truth + 1e-12) & (truth <= hi + 1e-12))),
        "width": float(np.mean(hi - lo)),
    }


def simulate(name, R, seed, draws=1000, cells=ppi_cells):
    """PPI++ and the design-based interval on the same replicates of one design (``cells``: another
    implementation of :func:`ppi_cells`, e.g. the code before issue #23)."""
    strata, items, truth = replicates(*DESIGNS[name], R=R, seed=seed)
    ppi = cells(strata, items, draws=draws, seed=seed).cells
    design = sc.corrected_scores(strata, draws=draws, seed=seed).cells  # rows in replicate order, as ppi's
    assert list(ppi.model) == list(design.model)
    return {
        "ppi": summary(ppi, truth),
        "design": summary(design, truth),
        "gain": float(np.nanmedian(ppi.gain)),
        "fallback": float(np.mean(ppi.strata_fallback > 0)),
        "truth": float(truth.mean()),
        "invariant": sc.check_scores(ppi),
    }


def test_moderate_score_with_50_reviewed_is_unbiased_covers_and_is_narrower():
    r = simulate("S4, moderate score", R=300, seed=1)
    p, d = r["ppi"], r["design"]
    assert abs(p["bias"]) < 0.003, p
    assert p["coverage"] >= 0.93, p
    assert p["width"] < 0.85 * d["width"], (p, d)
    assert r["gain"] > 1.5 and r["invariant"] == []


def test_s1_with_25_reviewed_per_clear_stratum_covers():
    r = simulate("S1, moderate score", R=300, seed=2)
    p, d = r["ppi"], r["design"]
    assert abs(p["bias"]) < 0.003, p  # cross-fitted lambda: no bias of order 1/r (docs/methods.md 9.5)
    assert p["coverage"] >= 0.93, p
    # the judge-safe stratum holds one or two harmful items of 25: without them lambda is
    # unknown, and cross-fitting says so by giving up most of the gain there
    assert p["width"] < 1.05 * d["width"], (p, d)
    assert r["invariant"] == []


def test_sparse_strata_with_few_reviewed_still_cover():
    """With 10-15 reviewed per clear stratum, lambda fitted on the same items biased PPI++ by about
    -0.01 (docs/methods.md 9.5); cross-fitted, the bias is gone and the interval still covers."""
    for name, seed in (("S3, strong score, 10 reviewed", 3), ("sparse, strong score, 15 reviewed", 4)):
        r = simulate(name, R=250, seed=seed)
        p = r["ppi"]
        assert abs(p["bias"]) < 3 * p["mcse"] + 0.002, (name, p)
        assert p["coverage"] >= 0.92, (name, p)
        assert p["width"] < r["design"]["width"], (name, r)


def test_a_binary_prediction_with_too_few_disagreements_falls_back_and_covers():
    """Issue #23: another judge's label (97 % accurate) as the prediction covered 0.75-0.87 while
    printing gains of 3-10x; it now keeps the design-based estimate where its reviewed items show
    fewer than MIN_DISAGREEMENTS disagreements, and says so."""
    for name, seed in (("one stratum of 500, binary, 97 % accurate", 7), ("S1, binary prediction, 97 % accurate", 8)):
        r = simulate(name, R=200, seed=seed)
        p, d = r["ppi"], r["design"]
        assert p["coverage"] >= 0.92 and r["fallback"] > 0.9, (name, r)
        assert p["width"] <= 1.001 * d["width"] + 1e-9 or p["coverage"] >= d["coverage"] - 0.02, (name, r)


def test_the_binary_case_of_issue_23_falls_back_with_the_reason():
    """One stratum of 500 with 15 harmful; the other judge flags 14 of them and 15 safe ones; the 25
    reviewed all agree with it: PPI++ printed 0.0522 [0.0388, 0.1585] (lambda 0.68, gain 9.6, flag
    ok) against a truth of 0.030."""
    N = 500
    Y = np.zeros(N, int)
    Y[:15] = 1
    f = np.zeros(N)
    f[:14] = 1
    f[15:30] = 1
    sel = np.zeros(N, bool)
    sel[0] = True
    sel[100:124] = True
    out = np.where(sel, np.where(Y == 1, "harmful", "safe"), None).astype(object)
    items = pd.DataFrame({"model": "m", "benchmark": "b", "stratum": "safe", "prediction": f, "outcome": out})
    strata = pd.DataFrame(
        [
            {
                "model": "m",
                "benchmark": "b",
                "stratum": "safe",
                "judge_label": "safe",
                "population": N,
                "reviewed": 25,
                "harmful": 1,
                "unresolved": 0,
            }
        ]
    )
    res = ppi_cells(strata, items, draws=4000, seed=0)
    c = res.cells.iloc[0]
    assert c.flag == "fallback: design-based in 1 of 1 strata" and c.estimate == 0.04
    assert c.ci_low <= 0.03 <= c.ci_high and c.gain == pytest.approx(1.0)
    assert "disagrees with the human label on 0 of the 25" in res.strata.fallback.iat[0]
    # the interval is named for the method that runs (issue #23: it was named "shrunk polya-fiducial")
    assert c.interval == "ppi++ residual polya urn, cross-fitted lambda (fixed)"


def test_a_useless_score_costs_nothing():
    r = simulate("S1, useless score", R=200, seed=5)
    p, d = r["ppi"], r["design"]
    assert p["coverage"] >= 0.93 and p["width"] < 1.05 * d["width"], (p, d)


def test_unstratified_ppi_is_biased_on_this_design():
    """methods.md 4.5: the reviewed items are not an iid draw from all responses (the ambiguous
    stratum is a census, the clear ones a few per cent), so PPI over the pooled responses is
    biased; PPI++ inside the strata is not."""
    with warnings.catch_warnings():
        import ppi_py
    strata, items, truth = replicates(*DESIGNS["S1, moderate score"], R=200, seed=6)
    pooled = []
    for _model, g in items.groupby("model", sort=True):
        lab = g.outcome.notna().to_numpy()
        Y = (g.outcome[lab] == "harmful").to_numpy(dtype=float)
        f = g.prediction.to_numpy()
        pooled.append(float(ppi_py.ppi_mean_pointestimate(Y, f[lab], f)[0]))
    stratified = ppi_cells(strata, items, draws=0).cells.estimate.to_numpy()
    assert np.mean(np.array(pooled) - truth) > 0.03  # the census of the ambiguous stratum dominates
    assert abs(np.mean(stratified - truth)) < 0.005


if __name__ == "__main__":  # the table of docs/methods.md 9.5: python -m tests.stats.test_ppi_simulation 2000
    R = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    for i, name in enumerate(DESIGNS):
        t = time.perf_counter()
        r = simulate(name, R=R, seed=100 + i, draws=4000)
        p, d = r["ppi"], r["design"]
        print(
            f"| {name} | {r['truth']:.3f} | {p['bias']:+.4f} ({p['mcse']:.4f}) | {d['bias']:+.4f} | "
            f"**{p['coverage']:.3f}** | {d['coverage']:.3f} | {p['width']:.3f} | {d['width']:.3f} | "
            f"{p['width'] / d['width']:.2f} | {r['gain']:.2f} |  ({time.perf_counter() - t:.0f} s)",
            flush=True,
        )
