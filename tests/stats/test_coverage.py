"""Coverage of the corrected rate's interval where issue #13 found it short (simulated; numpy truth).

The truth is the simulated finite population's harmful rate (the fixed-prompt estimand); the
reference width is the Polya-Jeffreys interval the tool used before, re-implemented here. The
full table (2,000 replicates per scenario) is ``bench/coverage.py``'s; these are smaller runs of
the hardest scenarios, with thresholds the earlier intervals fail.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from annotate.stats import scoring as sc

LABELS = np.array(["harmful", "safe", "ambiguous"], dtype=object)


def replicate_frame(N, n, y, u):
    R, S = N.shape
    labels = np.tile(LABELS[:S], R)
    return pd.DataFrame(
        {
            "model": np.repeat([f"rep{i:05d}" for i in range(R)], S),
            "benchmark": "b",
            "stratum": labels,
            "judge_label": labels,
            "population": N.ravel(),
            "reviewed": n.ravel(),
            "harmful": y.ravel(),
            "unresolved": u.ravel(),
        }
    )


def jeffreys_width(N, n, y, u, rng, D=1000):
    r = n - u
    th = rng.beta(y[:, :, None] + 0.5, (r - y)[:, :, None] + 0.5, size=N.shape + (D,))
    X = rng.binomial(np.broadcast_to((N - r)[:, :, None], th.shape), th)
    d = (y[:, :, None] + X).sum(axis=1) / N.sum(axis=1)[:, None]
    lo, hi = np.quantile(d, [0.025, 0.975], axis=1, method="inverted_cdf")
    return float(np.mean(hi - lo))


def coverage(N, n, y, u, truth, seed, share=None):
    frame = replicate_frame(N, n, y, u)
    c = sc.corrected_scores(frame, draws=1000, seed=seed, share_component=share).cells  # rows in replicate order
    lo, hi = c.ci_low.to_numpy(), c.ci_high.to_numpy()
    return float(np.mean((lo <= truth + 1e-12) & (truth <= hi + 1e-12))), float(np.mean(hi - lo))


def label_width(N, n, y, u, truth, seed):
    """The width with the component shared per judge label (issue #23: independent within a cell).

    Since issue #33 a cell's strata share one component (one coin per model), which widens sparse
    cells by about 11 % (1.27 against 1.14 times the Jeffreys width); the issue allows 20 %."""
    return coverage(N, n, y, u, truth, seed, share="label")[1]


def test_sparse_cells_cover_when_the_judge_safe_stratum_is_clean():
    """Clear strata of 450 with 10 reviewed each, harm only in the judge-harmful one (rate .01):
    the Jeffreys prior imputed harm into the clean stratum, so the interval sat too high
    (coverage about 0.86-0.89, every miss on the high side)."""
    rng = np.random.default_rng(2026)
    R = 500
    N = np.full((R, 2), 450)
    n = np.full((R, 2), 10)
    K = rng.binomial(N, [0.02, 0.0])
    y = rng.hypergeometric(K, N - K, n)
    truth = K.sum(axis=1) / N.sum(axis=1)
    u = np.zeros_like(N)
    cov, width = coverage(N, n, y, u, truth, seed=1)
    assert cov >= 0.94, cov
    assert width <= 1.3 * jeffreys_width(N, n, y, u, np.random.default_rng(3))
    assert width <= 1.2 * label_width(N, n, y, u, truth, seed=1)


def test_sparse_cells_cover_a_rare_harm_in_both_clear_strata():
    rng = np.random.default_rng(7)
    R = 500
    N = np.full((R, 2), 450)
    n = np.full((R, 2), 10)
    K = rng.binomial(N, [0.01, 0.03])
    y = rng.hypergeometric(K, N - K, n)
    truth = K.sum(axis=1) / N.sum(axis=1)
    u = np.zeros_like(N)
    cov, width = coverage(N, n, y, u, truth, seed=2)
    assert cov >= 0.935, cov
    assert width <= 1.3 * jeffreys_width(N, n, y, u, np.random.default_rng(4))
    assert width <= 1.2 * label_width(N, n, y, u, truth, seed=2)


def test_unresolved_items_that_are_not_missing_at_random_stay_inside_the_interval():
    """15 % of the ambiguous census unresolved, 70 % of them harmful against 25 % of the rest:
    the MAR interval covered 14 % in the issue's simulation; the partial-identification
    interval (lower end with every unresolved item safe, upper end with every one harmful)
    must cover at least 95 %, and its estimate stays the MAR point."""
    rng = np.random.default_rng(11)
    R = 400
    N = np.tile([100, 500, 400], (R, 1))
    n = np.tile([25, 25, 400], (R, 1))
    Nres = N.copy()
    Nres[:, 2] -= 60
    K = rng.binomial(Nres, [0.85, 0.03, 0.25])
    K_unres = rng.binomial(60, 0.70, R)
    y = rng.hypergeometric(K, Nres - K, np.minimum(n, Nres))
    u = np.zeros_like(N)
    u[:, 2] = 60
    truth = (K.sum(axis=1) + K_unres) / N.sum(axis=1)
    res = sc.corrected_scores(replicate_frame(N, n, y, u), draws=1000, seed=5)
    c = res.cells
    lo, hi = c.ci_low.to_numpy(), c.ci_high.to_numpy()
    assert np.mean((lo <= truth + 1e-12) & (truth <= hi + 1e-12)) >= 0.95
    mar = (N * np.where(n - u > 0, y / np.maximum(n - u, 1), 0)).sum(axis=1) / N.sum(axis=1)
    np.testing.assert_allclose(c.estimate.to_numpy(), mar, atol=1e-12)
    assert (c.estimate_kind == "mar").all()
    t = res.treatments[res.treatments.treatment == "corrected"]
    assert t.interval.str.startswith("partial identification").all()
    safe = res.treatments[res.treatments.treatment == "corrected_unresolved_safe"]
    harm = res.treatments[res.treatments.treatment == "corrected_unresolved_harmful"]
    np.testing.assert_array_equal(lo, np.minimum(safe.ci_low.to_numpy(), c.estimate.to_numpy()))
    np.testing.assert_array_equal(hi, np.maximum(harm.ci_high.to_numpy(), c.estimate.to_numpy()))
