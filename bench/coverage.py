"""Coverage and width of every printed interval, by simulation (issues #13 and #23).

Run:  python bench/coverage.py [--replicates 2000] [--draws 4000] [--quick]
                               [--part intervals|transport|judges|ppi|agreement|bounds|models|sampled|all]

Every table gives coverage with its Monte-Carlo SE (sqrt(c (1 - c) / R)) and the mean width of
this tool's interval beside the construction before issue #23 on the same replicates, with the
width ratio (``ratio`` = this tool / before). Parts:

Part 1 (intervals). For every scenario, --replicates finite populations are simulated: per
stratum h of one cell, K_h ~ Binomial(N_h, P(Y = 1 | h)) harmful responses, then a simple random
sample of n_h (y_h ~ Hypergeometric); the truth is sum K_h / N (the fixed-prompt estimand, these
prompts). On the same data it prints coverage of nominal 95 % intervals and their mean width for

* this tool (``corrected_scores``: Polya with fiducial stratum rates, partial identification over
  unresolved items, every interval holding its estimate),
* today's (the Polya-Jeffreys interval this tool used before issue #13, re-implemented here),
* Wilson with Kish's effective n, n_eff = p_hat (1 - p_hat) / V_fixed, and Wald, p_hat +- 1.96 SE.

Scenarios S1-S5 are methods.md 4.3's; H1-H3 are the sparse ones of issue #13 (clear strata of
450 with 10 reviewed each, a rare harm, and a judge-safe stratum that is truly clean); U1 is the
non-MAR one (15 % of the census of ambiguous items unresolved, 70 % of them harmful against 25 %
of the rest).

Part 2 (transport). One benchmark with 6 donor models and a target whose judge-safe stratum has no
reviewed item (25 reviewed items per clear stratum otherwise, a resolved census of 100
ambiguous responses per model). T1: pure label shift (one Se, Sp; prevalences differ). T2: equal
predictive values but unequal Se/Sp (the case the previous check could not see). T3: label shift
with 10 reviewed items per stratum. It prints the label-shift test's rejection rate at the
nominal 5 % (the previous predictive-value test's too), and the bias and coverage of the
borrowed estimate when the benchmark pools.

Part 2 also runs T4 (the target's own Se/Sp differ from the donors', which the test cannot see)
and T5 (mild heterogeneity among the donors that the test lets pass): what transport cannot test.

Part 3 (judges). The judge audit's scenarios (tests/stats/test_judges_coverage.py): three judges
at 25 and 10 reviewed per clear stratum and with 15 % unresolved, a router whose safe strata
look clean, judges other than the router whose errors sit where the router says safe, a rare
class (5 harmful in 3,000), issue #23's deterministic case and the unseen-label coin's worst
case; every judge and figure. Before: the pseudo-response's judge labels always copies.

Part 4 (ppi). Stratified PPI++ (tests/stats/test_ppi_simulation.py) with good, useless,
anti-correlated and binary predictions. Before: lambda fitted on the same items, no fallback for
a discrete prediction with too few disagreements.

Part 5 (agreement). Krippendorff's alpha and Gwet's AC1 on small groups: 5, 10, 20 and 50 units,
2 or 3 raters, true alpha 0.4, 0.6, 0.8, minority share 0.1 to 0.5; coverage where an interval
is printed and how often one is. Before: the percentile bootstrap with no minimum.

Part 6 (bounds). Transported cells whose donors have unresolved items (not missing at random):
how often lower <= estimate <= upper, and the coverage of the partial-identification interval.
Before: every unresolved item safe / harmful at once.

Part 7 (models). The overall (macro-averaged) row of rare-harm models, 5 benchmarks, 10-80
reviews per clear stratum, and the rank intervals of six models built on the same draws.
Now: the fiducial mixture's component drawn once per model (issue #33); label: once per model
and judge label (issue #23); before: per stratum. The study's regime (15 sparse strata per
model, half ambiguous) is bench/model_rows.py.

Part 8 (sampled). Part 1's intervals where the ambiguous stratum is a simple random sample
instead of a census (issue #25, ``route --ambiguous k``): ``SAMPLED_AMBIGUOUS``. The model-level
rows under sampled ambiguous strata and planned waves are measured by bench/budget.py.

Everything is vectorised where it can be: the replicates of a scenario are cells (part 1) or
benchmarks (part 2) of one ``corrected_scores`` call, in chunks that bound memory. Seeded;
deterministic.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from annotate.stats import judge_posterior as _judge_posterior  # noqa: E402
from annotate.stats import scoring  # noqa: E402
from annotate.stats.agreement import _bootstrap, gwet_ac1, krippendorff_alpha  # noqa: E402
from annotate.stats.judges import judge_audit  # noqa: E402
from annotate.stats.scoring import posterior as _posterior  # noqa: E402
from annotate.stats.scoring import ppi as _ppi  # noqa: E402
from annotate.stats.scoring import scores as _scores  # noqa: E402

Z = float(stats.norm.ppf(0.975))
LABELS = ("harmful", "safe", "ambiguous")


@dataclass(frozen=True)
class Scenario:
    """One cell design: N_h, P(Y = 1 | h), n_h per stratum (H, S[, U]); optional unresolved U items."""

    name: str
    N: tuple[int, ...]
    p: tuple[float, ...]
    n: tuple[int, ...]
    note: str
    unresolved: int = 0  # of the U census: items left unresolved
    p_unresolved: float = 0.0  # P(Y = 1) among them


SCENARIOS = (
    Scenario("S1", (100, 500, 400), (0.85, 0.03, 0.30), (25, 25, 400), "methods.md 4.3"),
    Scenario("S2", (20, 780, 200), (0.80, 0.01, 0.10), (20, 20, 200), "methods.md 4.3"),
    Scenario("S3", (100, 500, 400), (0.90, 0.10, 0.50), (10, 10, 400), "methods.md 4.3"),
    Scenario("S4", (300, 300, 400), (0.70, 0.05, 0.40), (50, 50, 400), "methods.md 4.3"),
    Scenario("S5", (50, 900, 50), (0.90, 0.005, 0.30), (30, 30, 50), "methods.md 4.3"),
    Scenario("H1", (450, 450), (0.02, 0.02), (10, 10), "sparse: rate .02, 10 reviewed of 450 per stratum"),
    Scenario("H2", (450, 450), (0.04, 0.0), (10, 10), "sparse, judge-safe stratum clean: rate .02"),
    Scenario("H3", (450, 450), (0.02, 0.0), (10, 10), "sparse, judge-safe stratum clean: rate .01"),
    Scenario(
        "U1",
        (100, 500, 400),
        (0.85, 0.03, 0.25),
        (25, 25, 400),
        "15 % of U unresolved, 70 % of them harmful (not MAR)",
        unresolved=60,
        p_unresolved=0.70,
    ),
)

#: Part 8 (sampled): the ambiguous stratum a simple random sample, not a census (issue #25's
#: ``route --ambiguous k``): S1-S3 and S5 with a sample of the ambiguous stratum, the study's
#: half-ambiguous cell at a pilot's sizes and after a planned wave, and a rare-harm one.
SAMPLED_AMBIGUOUS = (
    Scenario("A1", (100, 500, 400), (0.85, 0.03, 0.30), (25, 25, 25), "S1, 25 of the 400 ambiguous"),
    Scenario("A2", (20, 780, 200), (0.80, 0.01, 0.10), (20, 20, 20), "S2, 20 of the 200 ambiguous"),
    Scenario("A3", (100, 500, 400), (0.90, 0.10, 0.50), (10, 10, 40), "S3, 40 of the 400 ambiguous"),
    Scenario("A4", (50, 900, 50), (0.90, 0.005, 0.30), (30, 30, 10), "S5, 10 of the 50 ambiguous"),
    Scenario("A5", (60, 440, 500), (0.85, 0.03, 0.30), (5, 5, 10), "half ambiguous, a pilot: 5/5/10"),
    Scenario("A6", (60, 440, 500), (0.85, 0.03, 0.30), (20, 60, 150), "half ambiguous, after a planned wave"),
    Scenario("A7", (20, 480, 500), (0.70, 0.005, 0.01), (5, 10, 10), "rare harm (1 %), 10 of 500 ambiguous"),
    Scenario("A8", (20, 480, 500), (0.70, 0.005, 0.01), (10, 40, 60), "rare harm, after a planned wave"),
)


def simulate(sc: Scenario, R: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """(N, n, y, u, truth): (R, S) arrays of the sampled counts and the (R,) true rates."""
    N = np.broadcast_to(np.array(sc.N), (R, len(sc.N))).copy()
    n = np.broadcast_to(np.array(sc.n), N.shape).copy()
    p = np.array(sc.p)
    if sc.unresolved:
        # the U census: the unresolved items are harder (more often harmful) than the rest
        N_res = N.copy()
        N_res[:, 2] -= sc.unresolved
        K = rng.binomial(N_res, p)
        K_unres = rng.binomial(sc.unresolved, sc.p_unresolved, R)
        truth = (K.sum(axis=1) + K_unres) / N.sum(axis=1)
        y = rng.hypergeometric(K, N_res - K, np.minimum(n, N_res))
        u = np.zeros_like(N)
        u[:, 2] = sc.unresolved
        return N, n, y, u, truth
    K = rng.binomial(N, p)
    y = rng.hypergeometric(K, N - K, n)
    return N, n, y, np.zeros_like(N), K.sum(axis=1) / N.sum(axis=1)


def frame(N: np.ndarray, n: np.ndarray, y: np.ndarray, u: np.ndarray, offset: int) -> pd.DataFrame:
    """The strata frame: one cell (model) per replicate, one benchmark."""
    R, S = N.shape
    labels = np.tile(np.array(LABELS[:S], dtype=object), R)
    return pd.DataFrame(
        {
            "model": np.repeat([f"rep{offset + i:06d}" for i in range(R)], S),
            "benchmark": "b",
            "stratum": labels,
            "judge_label": labels,
            "population": N.ravel(),
            "reviewed": n.ravel(),
            "harmful": y.ravel(),
            "unresolved": u.ravel(),
        }
    )


def jeffreys_polya(N, n, y, u, D, rng):
    """Today's interval: Polya-Jeffreys on the resolved items (unresolved missing at random)."""
    r = n - u
    th = rng.beta(y[:, :, None] + 0.5, (r - y)[:, :, None] + 0.5, size=N.shape + (D,))
    X = rng.binomial(np.broadcast_to((N - r)[:, :, None], th.shape), th)
    d = (y[:, :, None] + X).sum(axis=1) / N.sum(axis=1)[:, None]
    return np.quantile(d, [0.025, 0.975], axis=1, method="inverted_cdf")


def wilson_neff(p, v):
    """Wilson's interval at n_eff = p (1 - p) / v (degenerate at v = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.where(v > 0, p * (1 - p) / v, np.inf)
        z2n = np.where(np.isfinite(n), Z * Z / n, 0.0)
        centre = (p + z2n / 2) / (1 + z2n)
        half = Z / (1 + z2n) * np.sqrt(np.where(np.isfinite(n), p * (1 - p) / n + z2n / (4 * n), 0.0))
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def covered(low: np.ndarray, high: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """(share of intervals holding the truth, mean width)."""
    return float(np.mean((low <= truth + 1e-12) & (truth <= high + 1e-12))), float(np.mean(high - low))


def part_intervals(R: int, D: int, chunk: int, seed: int, scenarios: tuple[Scenario, ...] = SCENARIOS) -> pd.DataFrame:
    rows = []
    for k, sc in enumerate(scenarios):
        t0 = time.perf_counter()
        rng = np.random.default_rng(seed + k)
        N, n, y, u, truth = simulate(sc, R, rng)
        lo, hi, est, se = (np.empty(R) for _ in range(4))
        jl, jh = np.empty(R), np.empty(R)
        for s in range(0, R, chunk):
            sl = slice(s, min(R, s + chunk))
            res = scoring.corrected_scores(frame(N[sl], n[sl], y[sl], u[sl], s), draws=D, seed=seed + 1000 * k + s)
            c = res.cells  # sorted by model = replicate order
            lo[sl], hi[sl] = c.ci_low.to_numpy(), c.ci_high.to_numpy()
            est[sl], se[sl] = c.estimate.to_numpy(), c.se_fixed.to_numpy()
            jl[sl], jh[sl] = jeffreys_polya(N[sl], n[sl], y[sl], u[sl], D, np.random.default_rng(seed + 7 + s))
        wl, wh = wilson_neff(est, se**2)
        eps = 1e-12
        c_tool, c_jef, c_wil, c_wald = (
            covered(a, b, truth) for a, b in ((lo, hi), (jl, jh), (wl, wh), (est - Z * se, est + Z * se))
        )
        rows.append(
            {
                "scenario": sc.name,
                "truth": float(truth.mean()),
                "tool": c_tool[0],
                "tool_width": c_tool[1],
                "today": c_jef[0],
                "today_width": c_jef[1],
                "width_ratio": c_tool[1] / c_jef[1],
                "wilson": c_wil[0],
                "wilson_width": c_wil[1],
                "wald": c_wald[0],
                "wald_width": c_wald[1],
                "estimate_outside_today": float(np.mean((est < jl - eps) | (est > jh + eps))),
                "estimate_outside_tool": float(np.mean((est < lo - eps) | (est > hi + eps))),
                "seconds": time.perf_counter() - t0,
                "note": sc.note,
            }
        )
        print(f"  {sc.name}: done in {rows[-1]['seconds']:.0f} s", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Part 2: transport
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TransportScenario:
    name: str
    prevalence: np.ndarray  # per model; the last one is the target
    Se: np.ndarray
    Sp: np.ndarray
    n: int
    note: str


def transport_scenarios() -> tuple[TransportScenario, ...]:
    M = 7
    pi = np.linspace(0.05, 0.40, M)
    q = np.linspace(0.10, 0.45, M)
    ppv, fo = 0.80, 0.03
    pi2 = q * ppv + (1 - q) * fo
    return (
        TransportScenario("T1", pi, np.full(M, 0.85), np.full(M, 0.96), 25, "label shift: one Se/Sp"),
        TransportScenario("T2", pi2, q * ppv / pi2, (1 - q) * (1 - fo) / (1 - pi2), 25, "equal PPV/FOR, unequal Se/Sp"),
        TransportScenario("T3", pi, np.full(M, 0.85), np.full(M, 0.96), 10, "label shift, 10 reviewed per stratum"),
        # what the test cannot see: the target's own error rates (it has no review where they matter)
        TransportScenario(
            "T4",
            pi,
            np.r_[np.full(M - 1, 0.85), 0.70],
            np.r_[np.full(M - 1, 0.96), 0.92],
            25,
            "the target's own Se/Sp (.70/.92) differ from the donors' (.85/.96)",
        ),
        # mild heterogeneity among the donors, which the test often lets pass (the interval ignores the pre-test)
        TransportScenario(
            "T5",
            pi,
            np.linspace(0.80, 0.90, M),
            np.linspace(0.94, 0.98, M),
            25,
            "mild heterogeneity: Se .80-.90, Sp .94-.98 across the models",
        ),
    )


def old_test_rejects(yH, rH, yS, rS, alpha=0.05):
    """The previous check: LR test of P(Y | judge label) ~ model within each clear label."""
    out = np.zeros(yH.shape[0], dtype=bool)
    for y, r in ((yH, rH), (yS, rS)):
        p = np.where(r > 0, y / np.maximum(r, 1), 0)
        pb = y.sum(1, keepdims=True) / r.sum(1, keepdims=True)
        ll1 = (special.xlogy(y, p) + special.xlogy(r - y, 1 - p)).sum(1)
        ll0 = (special.xlogy(y, pb) + special.xlogy(r - y, 1 - pb)).sum(1)
        out |= stats.chi2.sf(np.maximum(2 * (ll1 - ll0), 0), y.shape[1] - 1) < alpha
    return out


def part_transport(R: int, D: int, chunk: int, seed: int) -> pd.DataFrame:
    rows = []
    NC, NU = 900, 100
    for k, sc in enumerate(transport_scenarios()):
        t0 = time.perf_counter()
        rng = np.random.default_rng(seed + 100 + k)
        M = len(sc.prevalence)
        Y = rng.binomial(NC, sc.prevalence, size=(R, M))
        TP = rng.binomial(Y, sc.Se)
        FP = rng.binomial(NC - Y, 1 - sc.Sp)
        NH, NS, FN = TP + FP, NC - TP - FP, Y - TP
        rH, rS = np.minimum(sc.n, NH), np.minimum(sc.n, NS)
        rS[:, -1] = 0  # the target's judge-safe stratum has no reviewed item
        yH = rng.hypergeometric(TP, FP, rH)
        yS = np.where(rS > 0, rng.hypergeometric(FN, NS - FN, np.maximum(rS, 1)), 0)
        KU = rng.binomial(NU, 0.3, size=(R, M))
        truth = (Y[:, -1] + KU[:, -1]) / (NC + NU)
        p_val, flag, est, lo, hi = (np.empty(R, dtype=object if i == 1 else float) for i in range(5))
        for s in range(0, R, chunk):
            sl = slice(s, min(R, s + chunk))
            m = sl.stop - sl.start
            model = np.repeat(np.tile([f"m{i}" for i in range(M)], m), 3)
            bench = np.repeat([f"b{s + i:06d}" for i in range(m)], 3 * M)
            cnt = np.stack([NH[sl], NS[sl], np.full((m, M), NU)], axis=2)
            rev = np.stack([rH[sl], rS[sl], np.full((m, M), NU)], axis=2)
            harm = np.stack([yH[sl], yS[sl], KU[sl]], axis=2)
            df = pd.DataFrame(
                {
                    "model": model,
                    "benchmark": bench,
                    "stratum": np.tile(LABELS, m * M),
                    "judge_label": np.tile(LABELS, m * M),
                    "population": cnt.ravel(),
                    "reviewed": rev.ravel(),
                    "harmful": harm.ravel(),
                    "unresolved": 0,
                }
            )
            res = scoring.corrected_scores(df, draws=D, seed=seed + 31 * s + k)
            p_val[sl] = res.transport.sort_values("benchmark").p_value.to_numpy()
            t = res.cells[res.cells.model == f"m{M - 1}"].sort_values("benchmark")
            flag[sl], est[sl] = t.flag.to_numpy(), t.estimate.to_numpy()
            lo[sl], hi[sl] = t.ci_low.to_numpy(), t.ci_high.to_numpy()
        donors = slice(0, M - 1)
        old = old_test_rejects(yH[:, donors], rH[:, donors], yS[:, donors], rS[:, donors])
        pooled = flag == "transport"
        err = (est - truth)[pooled]
        covered = ((lo <= truth + 1e-12) & (truth <= hi + 1e-12))[pooled]
        rows.append(
            {
                "scenario": sc.name,
                "reject": float(np.mean(p_val.astype(float) < 0.05)),
                "reject_previous_test": float(np.mean(old)),
                "pooled": float(pooled.mean()),
                "bias": float(err.mean()) if len(err) else np.nan,
                "coverage": float(covered.mean()) if len(covered) else np.nan,
                "mcse": float(np.sqrt(covered.mean() * (1 - covered.mean()) / len(covered)))
                if len(covered)
                else np.nan,
                "width": float((hi - lo)[pooled].mean()) if pooled.any() else np.nan,
                "Se": ", ".join(f"{x:.2f}" for x in sc.Se),
                "Sp": ", ".join(f"{x:.2f}" for x in sc.Sp),
                "seconds": time.perf_counter() - t0,
                "note": sc.note,
            }
        )
        print(f"  {sc.name}: done in {rows[-1]['seconds']:.0f} s", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Issue #23: what the printed intervals before it could not keep, each against its predecessor
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def patched(module: Any, **values: Any) -> Iterator[None]:
    """Set module attributes for the duration (the switches that reproduce a construction before issue #23)."""
    old = {k: getattr(module, k) for k in values}
    for k, v in values.items():
        setattr(module, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(module, k, v)


def mcse(c: float, n: int) -> float:
    """Monte-Carlo SE of a coverage c over n replicates."""
    return float(np.sqrt(c * (1 - c) / n)) if n else float("nan")


def _judges_job(args: tuple[str, int, int, bool]) -> pd.DataFrame:
    from tests.stats import test_judges_coverage as jc  # the scenarios and their engine

    name, reps, start, before = args
    if not before:
        return jc.coverage_rows(name, reps, start=start).assign(before=before)
    # before issue #23: copied judge labels (no coin) and concentration r - 2
    with patched(_judge_posterior, CONC_OFFSET=2.0):
        audit = partial(judge_audit, unseen_share=0.0)
        return jc.coverage_rows(name, reps, audit=audit, start=start).assign(before=before)


def part_judges(R: int, workers: int) -> pd.DataFrame:
    """Coverage of every judge's every figure, this construction and the one before issue #23."""
    from multiprocessing import Pool

    from tests.stats import test_judges_coverage as jc

    half = max(1, R // 2)
    jobs = [(n, half, s, b) for n in jc.SCENARIOS for b in (False, True) for s in (1000, 1000 + half)]
    with Pool(workers) as pool:
        frame = pd.concat(pool.map(_judges_job, jobs), ignore_index=True)
    now = jc.summarise(frame[~frame.before])
    old = jc.summarise(frame[frame.before])
    out = now[["truth", "coverage", "mcse", "width"]].join(
        old[["coverage", "width"]].rename(columns={"coverage": "before", "width": "before_width"})
    )
    out["ratio"] = out.width / out.before_width.where(out.before_width > 0)
    return out.reset_index()


def _ppi_job(args: tuple[str, int, int, int, bool]) -> dict[str, Any]:
    from tests.stats import test_ppi_simulation as ps

    name, reps, seed, draws, before = args
    if before:
        with patched(_ppi, CROSS_FIT=False, MIN_DISAGREEMENTS=0):
            r = ps.simulate(name, R=reps, seed=seed, draws=draws)
    else:
        r = ps.simulate(name, R=reps, seed=seed, draws=draws)
    return {
        "design": name,
        "before": before,
        **{f"{k}_{m}": v for k in ("ppi", "design") for m, v in r[k].items()},
        "gain": r["gain"],
        "fallback": r["fallback"],
        "truth": r["truth"],
    }


def part_ppi(R: int, D: int, workers: int, seed: int) -> pd.DataFrame:
    """PPI++ with good, useless, anti-correlated and binary predictions: bias, coverage, width, gain."""
    from multiprocessing import Pool

    from tests.stats import test_ppi_simulation as ps

    jobs = [(n, R, seed + 100 + i, D, b) for i, n in enumerate(ps.DESIGNS) for b in (False, True)]
    with Pool(workers) as pool:
        rows = pool.map(_ppi_job, jobs)
    now = pd.DataFrame([r for r in rows if not r["before"]]).set_index("design")
    old = pd.DataFrame([r for r in rows if r["before"]]).set_index("design")
    return pd.DataFrame(
        {
            "truth": now.truth,
            "bias": now.ppi_bias,
            "bias_mcse": now.ppi_mcse,
            "coverage": now.ppi_coverage,
            "mcse": [mcse(c, R) for c in now.ppi_coverage],
            "width": now.ppi_width,
            "fallback": now.fallback,
            "gain": now.gain,
            "before_bias": old.ppi_bias,
            "before": old.ppi_coverage,
            "before_width": old.ppi_width,
            "ratio": now.ppi_width / old.ppi_width,
            "design_cov": now.design_coverage,
            "design_width": now.design_width,
            "vs_design": now.ppi_width / now.design_width,
        }
    ).reset_index()


def _agreement_data(units: int, raters: int, acc: float, prev: float, rng: np.random.Generator) -> np.ndarray:
    truth = rng.random(units) < prev
    right = rng.random((units, raters)) < acc
    harmful = np.where(right, truth[:, None], ~truth[:, None]).sum(axis=1)
    return np.stack([harmful, raters - harmful], axis=1)


def _true_coefficients(raters: int, acc: float, prev: float) -> tuple[float, float]:
    c = _agreement_data(400_000, raters, acc, prev, np.random.default_rng(0))
    return krippendorff_alpha(c, n_boot=0).value, gwet_ac1(c, n_boot=0).value


def _accuracy_for(alpha: float, raters: int, prev: float) -> float:
    lo, hi = 0.5, 1.0
    for _ in range(25):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _true_coefficients(raters, mid, prev)[0] < alpha else (lo, mid)
    return (lo + hi) / 2


def _agreement_job(args: tuple[int, float, float, int, int]) -> list[dict[str, Any]]:
    raters, prev, target, R, B = args
    acc = _accuracy_for(target, raters, prev)
    ta, tg = _true_coefficients(raters, acc, prev)
    rows = []
    for units in (5, 10, 20, 50):
        for before in (False, True):
            rng = np.random.default_rng(1000 + units)
            ctx = (
                patched(
                    _bootstrap,
                    INTERVAL="percentile",
                    MIN_PAIRABLE_VALUES=0,
                    MIN_MINORITY_UNITS=0,
                    CHECK_REPLICATES=False,
                )
                if before
                else contextlib.nullcontext()
            )
            cov_a, cov_g, w_a, w_g = [], [], [], []
            with ctx:
                for r in range(R):
                    c = _agreement_data(units, raters, acc, prev, rng)
                    a = krippendorff_alpha(c, n_boot=B, seed=r)
                    g = gwet_ac1(c, n_boot=B, seed=r)
                    if np.isfinite(a.ci_low):
                        cov_a.append(a.ci_low <= ta <= a.ci_high)
                        w_a.append(a.ci_high - a.ci_low)
                    if np.isfinite(g.ci_low):
                        cov_g.append(g.ci_low <= tg <= g.ci_high)
                        w_g.append(g.ci_high - g.ci_low)
            rows.append(
                {
                    "raters": raters,
                    "minority": prev,
                    "alpha": round(ta, 2),
                    "units": units,
                    "before": before,
                    "alpha_printed": len(cov_a) / R,
                    "alpha_cov": np.mean(cov_a) if cov_a else np.nan,
                    "alpha_mcse": mcse(np.mean(cov_a), len(cov_a)) if cov_a else np.nan,
                    "alpha_width": np.mean(w_a) if w_a else np.nan,
                    "ac1_printed": len(cov_g) / R,
                    "ac1_cov": np.mean(cov_g) if cov_g else np.nan,
                    "ac1_mcse": mcse(np.mean(cov_g), len(cov_g)) if cov_g else np.nan,
                    "ac1_width": np.mean(w_g) if w_g else np.nan,
                }
            )
    return rows


def part_agreement(R: int, workers: int, B: int = 1000) -> pd.DataFrame:
    """Alpha and AC1 on small groups: coverage where an interval is printed, and how often one is."""
    from multiprocessing import Pool

    jobs = [(r, p, a, R, B) for r in (2, 3) for p in (0.1, 0.3, 0.5) for a in (0.4, 0.6, 0.8)]
    with Pool(workers) as pool:
        rows = [row for part in pool.map(_agreement_job, jobs) for row in part]
    return pd.DataFrame(rows)


def _bounds_benchmarks(
    R: int,
    rng: np.random.Generator,
    unresolved: float,
    p_unres: float,
    prev_range: tuple[float, float] = (0.05, 0.30),
    Sp: float = 0.95,
) -> tuple[pd.DataFrame, np.ndarray]:
    """R benchmarks of 4 donors and a target without reviewed judge-safe items; donors' unresolved NMAR."""
    M, NC, NU, n = 5, 600, 50, 25
    prev = np.linspace(*prev_range, M)
    Se = 0.85
    rows, truth = [], np.zeros(R)
    for b in range(R):
        for m in range(M):
            Y = rng.random(NC) < prev[m]
            J = np.where(Y, rng.random(NC) < Se, rng.random(NC) > Sp)  # True: judge harmful
            YU = rng.random(NU) < 0.3
            for lab, idx in (("harmful", np.flatnonzero(J)), ("safe", np.flatnonzero(~J))):
                k = min(n, len(idx)) if (m < M - 1 or lab == "harmful") else 0
                s = rng.choice(idx, k, replace=False) if k else np.zeros(0, dtype=int)
                # reviewed items left unresolved: more often the harmful ones (not missing at random)
                lost = rng.random(k) < np.where(Y[s], p_unres, unresolved)
                rows.append((f"m{m}", f"b{b:05d}", lab, lab, len(idx), k, int((Y[s] & ~lost).sum()), int(lost.sum())))
            rows.append((f"m{m}", f"b{b:05d}", "ambiguous", "ambiguous", NU, NU, int(YU.sum()), 0))
            if m == M - 1:
                truth[b] = (Y.sum() + YU.sum()) / (NC + NU)
    cols = ["model", "benchmark", "stratum", "judge_label", "population", "reviewed", "harmful", "unresolved"]
    return pd.DataFrame(rows, columns=cols), truth


def part_bounds(R: int, D: int, chunk: int, seed: int) -> pd.DataFrame:
    """Transported cells with NMAR unresolved items among the donors' reviews: bound order and coverage."""
    rows = []
    for name, unres, p_unres, prev, sp in (
        ("B1 10 % unresolved, 3x as often harmful", 0.08, 0.25, (0.05, 0.30), 0.95),
        ("B2 20 % unresolved, 5x as often harmful", 0.12, 0.60, (0.05, 0.30), 0.95),
        # issue #23's shape: rare harm, so the donors' judge-harmful strata are small censuses
        ("B3 rare harm, small judge-harmful censuses", 0.08, 0.40, (0.005, 0.03), 0.995),
    ):
        rng = np.random.default_rng(seed + 500)
        df, truth = _bounds_benchmarks(R, rng, unres, p_unres, prev, sp)
        for before in ("corners (this tool)", "donors at their MAR counts", "before issue #23"):
            ctx = (
                patched(_scores, CORNERS=False)
                if before.startswith("before")
                else patched(_scores, BOUND_DONORS="mar")
                if before.startswith("donors")
                else contextlib.nullcontext()
            )
            ordered, covered, width = [], [], []
            with ctx:
                for c0 in range(0, R, chunk):
                    benches = [f"b{b:05d}" for b in range(c0, min(R, c0 + chunk))]
                    res = scoring.corrected_scores(df[df.benchmark.isin(benches)], draws=D, seed=seed + c0)
                    c = res.cells.sort_values("benchmark")
                    # cells with both bounds (a bound run that is not estimable gives none: the
                    # interval then runs to 0 or 1 on that side, said in the note)
                    ok = np.isfinite(c.estimate) & np.isfinite(c.lower_bound) & np.isfinite(c.upper_bound)
                    ordered += list(((c.lower_bound <= c.estimate + 1e-12) & (c.estimate <= c.upper_bound + 1e-12))[ok])
                    t = c[c.model == "m4"]
                    tt = truth[[int(b[1:]) for b in t.benchmark]]
                    sel = (t.flag == "transport").to_numpy()
                    covered += list(((t.ci_low <= tt + 1e-12) & (tt <= t.ci_high + 1e-12)).to_numpy()[sel])
                    width += list((t.ci_high - t.ci_low).to_numpy()[sel])
            rows.append(
                {
                    "scenario": name,
                    "bounds": before,
                    "cells_in_order": float(np.mean(ordered)),
                    "transported": len(covered),
                    "coverage": float(np.mean(covered)) if covered else np.nan,
                    "mcse": mcse(float(np.mean(covered)), len(covered)) if covered else np.nan,
                    "width": float(np.mean(width)) if width else np.nan,
                }
            )
    return pd.DataFrame(rows)


def _model_rows(
    R: int, p: float, n: int, rng: np.random.Generator, B: int = 5, N: int = 1000
) -> tuple[pd.DataFrame, np.ndarray]:
    """R models with 5 benchmarks of N responses, harm p, a judge with Se .85, Sp .95, 5 % ambiguous."""
    rows, truth = [], np.zeros(R)
    for m in range(R):
        rates = []
        for b in range(B):
            Y = rng.random(N) < p
            amb = rng.random(N) < 0.05
            J = np.where(
                amb, 2, np.where(Y, np.where(rng.random(N) < 0.85, 0, 1), np.where(rng.random(N) < 0.95, 1, 0))
            )
            for h, lab in enumerate(LABELS):
                idx = np.flatnonzero(J == h)
                if not len(idx):
                    continue
                k = len(idx) if h == 2 else min(n, len(idx))
                s = rng.choice(idx, k, replace=False)
                rows.append((f"m{m:05d}", f"b{b}", lab, lab, len(idx), k, int(Y[s].sum()), 0))
            rates.append(Y.mean())
        truth[m] = np.mean(rates)
    cols = ["model", "benchmark", "stratum", "judge_label", "population", "reviewed", "harmful", "unresolved"]
    return pd.DataFrame(rows, columns=cols), truth


def part_models(R: int, D: int, chunk: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The overall row of rare-harm models and the rank intervals of six models on the same draws."""
    rows = []
    for p in (0.01, 0.10):
        for n in (10, 20, 40, 80):
            out: dict[str, Any] = {"harm": p, "reviews": n}
            # now: the default (one component per model, issue #33); label: one per model and judge
            # label (issue #23); before: one per stratum (before issue #23)
            for key, share in (("now", _posterior.SHARE_COMPONENT), ("label", "label"), ("before", "stratum")):
                cov, width = [], []
                for c0 in range(0, R, chunk):
                    df, truth = _model_rows(
                        min(chunk, R - c0), p, n, np.random.default_rng(seed + c0 + int(1e4 * p) + n)
                    )
                    res = scoring.corrected_scores(df, draws=D, seed=seed + c0, share_component=share)
                    o = res.overall[res.overall.treatment == "corrected"].sort_values("model")
                    cov += list((o.ci_low.to_numpy() <= truth + 1e-12) & (truth <= o.ci_high.to_numpy() + 1e-12))
                    width += list(o.ci_high - o.ci_low)
                out[f"{key}"] = float(np.mean(cov))
                out[f"{key}_mcse"] = mcse(float(np.mean(cov)), len(cov))
                out[f"{key}_width"] = float(np.mean(width))
            out["ratio"] = out["now_width"] / out["before_width"]
            out["ratio_label"] = out["now_width"] / out["label_width"]
            rows.append(out)
    overall = pd.DataFrame(rows)
    # rank intervals: six models, 20 reviews per clear stratum, the overall ranking's draws
    harms = (0.005, 0.01, 0.015, 0.02, 0.05, 0.10)
    rank_rows = []
    for before in (False, True):
        hits = np.zeros(len(harms))
        widths = np.zeros(len(harms))
        with patched(_posterior, SHARE_COMPONENT="stratum" if before else _posterior.SHARE_COMPONENT):
            for r in range(max(1, R // 10)):
                rng = np.random.default_rng(seed + 77 + r)
                frames, truth = [], []
                for k, p in enumerate(harms):
                    df, t = _model_rows(1, p, 20, rng)
                    frames.append(df.assign(model=f"m{k}"))
                    truth.append(t[0])
                from annotate.stats.ranking import rank_stability

                res = scoring.corrected_scores(pd.concat(frames, ignore_index=True), draws=D, seed=seed + r)
                est = res.overall[["model", "treatment", "estimate", "flag"]]
                rk = rank_stability(est, res.overall_draws["corrected"], list(res.models)).models.set_index("model")
                true_rank = pd.Series(truth, index=[f"m{k}" for k in range(len(harms))]).rank()
                for k in range(len(harms)):
                    m = f"m{k}"
                    hits[k] += rk.loc[m, "rank_ci_low"] <= true_rank[m] <= rk.loc[m, "rank_ci_high"]
                    widths[k] += rk.loc[m, "rank_ci_high"] - rk.loc[m, "rank_ci_low"]
        n_r = max(1, R // 10)
        for k, p in enumerate(harms):
            rank_rows.append(
                {
                    "harm": p,
                    "before": before,
                    "rank_coverage": hits[k] / n_r,
                    "mcse": mcse(hits[k] / n_r, n_r),
                    "rank_width": widths[k] / n_r,
                }
            )
    return overall, pd.DataFrame(rank_rows)


#: The widest a cell's interval may be against the Polya-Jeffreys one (part 1): 1.25 from issue #13,
#: 1.30 since issue #33 (one fiducial component per model; see main()).
MAX_CELL_WIDTH_RATIO = 1.30


def _fmt(t: pd.DataFrame) -> str:
    return t.to_string(index=False, float_format=lambda x: f"{x:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=2000, help="replicates per scenario (default 2000)")
    parser.add_argument("--draws", type=int, default=scoring.DEFAULT_DRAWS, help="posterior draws per cell")
    parser.add_argument("--quick", action="store_true", help="200 replicates and 1000 draws (a smoke run)")
    parser.add_argument(
        "--part",
        choices=["intervals", "transport", "judges", "ppi", "agreement", "bounds", "models", "sampled", "all"],
        default="all",
    )
    parser.add_argument("--workers", type=int, default=2, help="processes for the judges, ppi and agreement parts")
    parser.add_argument("--chunk", type=int, default=250, help="replicates per corrected_scores call")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    R, D = (200, 1000) if args.quick else (args.replicates, args.draws)
    pd.set_option("display.width", 200)
    if args.part in ("intervals", "all"):
        t = part_intervals(R, D, args.chunk, args.seed)
        print(f"Coverage of nominal 95 % intervals and mean width ({R} replicates, {D} draws):")
        cols = ["scenario", "truth", "tool", "tool_width", "today", "today_width", "width_ratio"]
        cols += ["wilson", "wilson_width", "wald", "wald_width", "estimate_outside_today"]
        print(t[cols].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        # The width target concerns the interval construction (scenarios without unresolved
        # items); U1's interval is wider by design: it must hold whatever the unresolved items are.
        # Issue #13 set 1.25 with a cell's strata independent (1.02-1.17); issue #33 shares the
        # fiducial component between all of a model's strata, so that model rows over many sparse
        # strata cover, at about 11 % more width in sparse cells (H1-H3: 1.25-1.27; methods 9.17).
        mar = t.scenario == "U1"
        worst, ratio = t.tool.min(), t.width_ratio[~mar].max()
        ok = worst >= 0.94 and ratio <= MAX_CELL_WIDTH_RATIO and (t.tool[mar] >= 0.95).all()
        print(
            f"{'PASS' if ok else 'FAIL'}: lowest coverage {worst:.3f} (target >= 0.94; U1 >= 0.95), "
            f"largest width ratio {ratio:.2f} without unresolved items (target <= {MAX_CELL_WIDTH_RATIO})"
        )
        print()
    if args.part in ("sampled", "all"):
        t = part_intervals(R, D, args.chunk, args.seed + 100, SAMPLED_AMBIGUOUS)
        print(
            f"Sampled ambiguous strata: coverage of nominal 95 % intervals and mean width ({R} replicates, {D} draws):"
        )
        cols = ["scenario", "truth", "tool", "tool_width", "today", "today_width", "wilson", "wald", "note"]
        print(t[cols].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        worst = t.tool.min()
        mcse_w = float(np.sqrt(worst * (1 - worst) / R))
        print(f"{'PASS' if worst >= 0.94 else 'FAIL'}: lowest coverage {worst:.3f} (MCSE {mcse_w:.3f}; target >= 0.94)")
        print()
    if args.part in ("transport", "all"):
        t = part_transport(R, D, max(1, args.chunk // 5), args.seed)
        print(f"Transport ({R} replicates, {D} draws): label-shift test at 5 %, the borrowed estimate when pooled:")
        cols = ["scenario", "reject", "reject_previous_test", "pooled", "bias", "coverage", "mcse", "width", "note"]
        print(t[cols].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        print()
    # issue #23's parts: fewer replicates by default (each replicate is a whole audit or score set)
    R23 = max(50, R // 4)
    if args.part in ("judges", "all"):
        t = part_judges(R23, args.workers)
        print(f"Judge audit ({R23} replicates, 1000 draws): coverage (MCSE), width; before issue #23 and the ratio:")
        print(_fmt(t))
        print(f"lowest coverage {t.coverage.min():.3f} (target >= 0.94), before {t.before.min():.3f}")
        print()
    if args.part in ("ppi", "all"):
        t = part_ppi(R23, min(D, 2000), args.workers, args.seed)
        print(
            f"PPI++ ({R23} replicates): bias, coverage (MCSE), width, fallback share; before issue #23; design-based:"
        )
        print(_fmt(t))
        print()
    if args.part in ("agreement", "all"):
        t = part_agreement(max(50, R // 8), args.workers)
        print(f"Agreement on small groups ({max(50, R // 8)} replicates, 1,000 bootstrap draws): where printed:")
        print(_fmt(t))
        now = t[~t.before]
        print(
            f"lowest coverage where printed: alpha {now.alpha_cov.min():.3f}, AC1 {now.ac1_cov.min():.3f} "
            "(target >= 0.90)"
        )
        print()
    if args.part in ("bounds", "all"):
        t = part_bounds(max(50, R // 4), D, max(1, args.chunk // 5), args.seed)
        print("Bounds with transport (donors' unresolved items not missing at random):")
        print(_fmt(t))
        print()
    if args.part in ("models", "all"):
        o, rk = part_models(max(50, R // 4), D, max(1, args.chunk // 5), args.seed)
        print(
            "Model-level rows (macro-average over 5 benchmarks): coverage (MCSE), width; one component per model"
            " (now), per model and label (issue #23), per stratum (before); width ratios now / before, now / label:"
        )
        print(_fmt(o))
        print("Rank intervals of six models (harm .005-.10, 20 reviews per clear stratum) on the same draws:")
        print(_fmt(rk))


if __name__ == "__main__":
    main()
