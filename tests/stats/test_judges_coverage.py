"""Synthetic judges with known sensitivity and specificity, sampled through the real routing design.

A finite population is drawn once per scenario: cells of one benchmark, each response with a
human label and the labels of the judges (the routing judge and others, each with its own error
rates, ambiguous verdicts included; a judge's errors may depend on the routing judge's label, so
that they sit in the sparsely reviewed judge-safe strata). The truth is every judge's figure on the
whole population. Each replicate routes the population with the design ``annotate route`` uses
(``annotate.stats.sampling.select_for_review``: every ambiguous response, n per clear stratum and
cell, a fresh seed) and audits the judges on the sample. Over the replicates:

* the intervals cover the truth at the nominal rate, for every judge and figure, also where a
  judge other than the routing one makes errors that the reviewed sample rarely shows (issue #23)
  and for a rare class (5 harmful responses in 3,000);
* the design-weighted totals are unbiased (their mean within Monte-Carlo error of the truth) and
  the ratios nearly so, while the unweighted figures on the same reviewed responses are far off.

The measured table (more replicates, every scenario, the construction before issue #23 beside) is
``python bench/coverage.py --part judges`` (docs/methods.md 9.7).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest

from annotate.stats.judges import METRICS, confusion_metrics, design_weights, judge_audit, weighted_confusion
from annotate.stats.sampling import select_for_review

LABELS = np.array(["harmful", "safe", "ambiguous"], dtype=object)
#: A judge: P(harmful, safe, ambiguous | human harmful) and (... | human safe); or, per routing
#: label, such a pair (the judge's errors then depend on where the routing judge put the response).
Judge = tuple[list[float], list[float]] | dict[str, tuple[list[float], list[float]]]
EXACT = ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0])  # a judge that agrees with the human label


@dataclass(frozen=True)
class Scenario:
    """A population (cells of one benchmark) and how it is reviewed."""

    judges: dict[str, Judge]  # the first is the routing judge
    prevalence: tuple[float, ...]  # per model; an int: exactly that many harmful responses
    n: int = 450  # responses per model
    clear: int = 25  # reviewed per clear stratum and cell
    unresolved: float = 0.0  # share of the reviewed responses left without a final label
    note: str = ""
    seed: int = 1


SCENARIOS = {
    # three judges of different kinds: a careful router, a strict one that never abstains, an eager one
    "three judges": Scenario(
        {
            "router": ([0.80, 0.12, 0.08], [0.04, 0.88, 0.08]),
            "strict": ([0.70, 0.30, 0.00], [0.10, 0.90, 0.00]),
            "eager": ([0.92, 0.05, 0.03], [0.20, 0.75, 0.05]),
        },
        (0.1, 0.2, 0.3, 0.4),
        note="4 x 450, 25 per clear stratum",
    ),
    "three judges, 10 per stratum": Scenario(
        {
            "router": ([0.80, 0.12, 0.08], [0.04, 0.88, 0.08]),
            "strict": ([0.70, 0.30, 0.00], [0.10, 0.90, 0.00]),
            "eager": ([0.92, 0.05, 0.03], [0.20, 0.75, 0.05]),
        },
        (0.1, 0.2, 0.3, 0.4),
        clear=10,
        note="4 x 450, 10 per clear stratum",
    ),
    "three judges, 15 % unresolved": Scenario(
        {
            "router": ([0.80, 0.12, 0.08], [0.04, 0.88, 0.08]),
            "strict": ([0.70, 0.30, 0.00], [0.10, 0.90, 0.00]),
            "eager": ([0.92, 0.05, 0.03], [0.20, 0.75, 0.05]),
        },
        (0.1, 0.2, 0.3, 0.4),
        unresolved=0.15,
        note="4 x 450, 25 per clear stratum, 15 % unresolved",
    ),
    # a router that almost never misses: its judge-safe strata look clean in most samples
    "clean safe strata": Scenario(
        {
            "router": ([0.97, 0.01, 0.02], [0.02, 0.93, 0.05]),
            "other": ([0.85, 0.15, 0.00], [0.05, 0.95, 0.00]),
        },
        (0.05, 0.10, 0.15, 0.20),
        note="4 x 450, a router whose safe strata look clean",
    ),
    # issue #23: a second judge whose errors sit in the routing judge's safe strata, where 25 of
    # about 400 are reviewed: most samples show none of them
    "non-routing judge, errors where the router says safe": Scenario(
        {
            "router": ([0.90, 0.06, 0.04], [0.03, 0.93, 0.04]),
            "second": {
                "harmful": EXACT,
                "ambiguous": EXACT,
                "safe": ([0.70, 0.30, 0.00], [0.02, 0.98, 0.00]),
            },
            "abstainer": {
                "harmful": EXACT,
                "ambiguous": ([0.9, 0.0, 0.1], [0.0, 0.9, 0.1]),
                "safe": ([0.80, 0.15, 0.05], [0.01, 0.97, 0.02]),
            },
        },
        (0.05, 0.10, 0.15, 0.20),
        note="4 x 450; the other judges err only on responses the router called safe",
    ),
    # issue #23: a rare class, 5 harmful responses of 3,000
    "rare class": Scenario(
        {
            "router": ([0.80, 0.00, 0.20], [0.01, 0.97, 0.02]),
            "second": ([0.80, 0.20, 0.00], [0.03, 0.97, 0.00]),
        },
        (5,),
        n=3000,
        note="1 x 3,000 with 5 harmful",
    ),
    # issue #23's deterministic case: 20 false alarms of the second judge among about 1,000
    # router-safe responses (2 %; a sample of 25 misses them all with probability 0.60)
    "false alarms in the judge-safe stratum": Scenario(
        {
            "router": ([1.0, 0.0, 0.0], [0.02, 0.98, 0.0]),
            "second": {"harmful": EXACT, "ambiguous": EXACT, "safe": ([1.0, 0.0, 0.0], [0.02, 0.98, 0.0])},
        },
        (80,),
        n=1100,
        note="1 x 1,100: the second judge's 2 % false alarms in the router-safe stratum",
    ),
    # the unseen-label coin's worst case: false alarms common enough to matter (8 %) and rare enough
    # that a sample of 25 misses them all one time in eight
    "8 % false alarms in the judge-safe stratum": Scenario(
        {
            "router": ([1.0, 0.0, 0.0], [0.02, 0.98, 0.0]),
            "second": {"harmful": EXACT, "ambiguous": EXACT, "safe": ([1.0, 0.0, 0.0], [0.08, 0.92, 0.0])},
        },
        (80,),
        n=1100,
        note="1 x 1,100: the second judge's 8 % false alarms in the router-safe stratum",
    ),
}
REPLICATES = 200
DRAWS = 1000
CHECKED = ("sensitivity", "specificity", "ppv", "npv", "balanced_accuracy", "kappa")


def _draw_labels(gen: np.random.Generator, harmful: np.ndarray, spec: tuple[list[float], list[float]]) -> np.ndarray:
    p1, p0 = spec
    return LABELS[np.where(harmful, gen.choice(3, len(harmful), p=p1), gen.choice(3, len(harmful), p=p0))]


def population(sc: Scenario, seed: int | None = None) -> pd.DataFrame:
    """The finite population of a scenario: one row per response, a column per judge."""
    gen = np.random.default_rng(sc.seed if seed is None else seed)
    frames = []
    names = list(sc.judges)
    for m, prev in enumerate(sc.prevalence):
        if isinstance(prev, int):
            harmful = np.zeros(sc.n, dtype=bool)
            harmful[gen.choice(sc.n, prev, replace=False)] = True
        else:
            harmful = gen.random(sc.n) < prev
        frame = pd.DataFrame({"model": f"m{m}", "benchmark": "b", "prompt_id": [f"p{i}" for i in range(sc.n)]})
        frame["human"] = np.where(harmful, "harmful", "safe")
        router = _draw_labels(gen, harmful, sc.judges[names[0]])  # type: ignore[arg-type]
        frame[names[0]] = router
        for name in names[1:]:
            spec = sc.judges[name]
            if isinstance(spec, dict):
                lab = np.empty(sc.n, dtype=object)
                for where, s in spec.items():
                    at = router == where
                    lab[at] = _draw_labels(gen, harmful[at], s)
            else:
                lab = _draw_labels(gen, harmful, spec)
            frame[name] = lab
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def truth(pop: pd.DataFrame, judges) -> dict[str, dict[str, float]]:
    """Every judge's figures on the whole population."""
    return {
        j: {m: float(v) for m, v in confusion_metrics(weighted_confusion(pop.human, pop[j], np.ones(len(pop)))).items()}
        for j in judges
    }


@dataclass
class Audited:
    metrics: pd.DataFrame  # indexed by judge (pooled row)
    totals: dict[str, np.ndarray] = field(default_factory=dict)
    raw: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)


def replicate(
    pop: pd.DataFrame, sc: Scenario, seed: int, *, draws: int = DRAWS, audit: Callable | None = None
) -> Audited:
    """Route, review and audit once (``audit``: another implementation of ``judge_audit``)."""
    judges = list(sc.judges)
    router = judges[0]
    routed = pop.assign(response_id=np.arange(len(pop)), epoch=0, judge=router, judge_label=pop[router])
    selected, strata = select_for_review(routed, clear_per_cell=sc.clear, seed=seed)
    sample = pop.iloc[selected.response_id.to_numpy()].assign(
        unit=selected.response_id.to_numpy(), stratum=selected.stratum.to_numpy()
    )
    if sc.unresolved:
        lost = np.random.default_rng(seed + 7).random(len(sample)) < sc.unresolved
        sample["human"] = sample["human"].where(~lost, None)
    verdicts = sample.melt(id_vars=["unit"], value_vars=judges, var_name="judge", value_name="judge_label")
    run = audit or judge_audit
    # the intervals only: the tests' own draws (pair test, model test) are not what this measures
    tests_off = {"test_draws": 0} if audit is None else {}
    result = run(
        sample[["unit", "model", "benchmark", "stratum", "human"]],
        verdicts,
        strata,
        by=(),
        draws=draws,
        seed=seed,
        **tests_off,
    )
    weights = design_weights(sample, strata).to_numpy()
    totals = {j: weighted_confusion(sample.human.tolist(), sample[j].tolist(), weights) for j in judges}
    raw = {
        j: confusion_metrics(weighted_confusion(sample.human.tolist(), sample[j].tolist(), np.ones(len(sample))))
        for j in judges
    }
    return Audited(result.metrics.set_index("judge"), totals, raw)


def coverage_rows(
    name: str, replicates: int, *, draws: int = DRAWS, audit: Callable | None = None, start: int = 1000
) -> pd.DataFrame:
    """One row per (replicate, judge, figure): truth, covered, width, estimate, unweighted figure."""
    sc = SCENARIOS[name]
    pop = population(sc)
    true = truth(pop, sc.judges)
    rows = []
    for r in range(replicates):
        a = replicate(pop, sc, seed=start + r, draws=draws, audit=audit)
        for j in sc.judges:
            for m in METRICS:
                t = true[j][m]
                if not np.isfinite(t):
                    continue
                lo, hi = a.metrics.loc[j, f"{m}_ci_low"], a.metrics.loc[j, f"{m}_ci_high"]
                rows.append(
                    (
                        name,
                        j,
                        m,
                        t,
                        bool(lo - 1e-12 <= t <= hi + 1e-12),
                        hi - lo,
                        a.metrics.loc[j, m],
                        float(a.raw[j][m]),
                    )
                )
    return pd.DataFrame(rows, columns=["scenario", "judge", "figure", "truth", "covered", "width", "estimate", "raw"])


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Coverage (with its Monte-Carlo SE) and mean width per scenario, judge and figure."""
    g = frame.groupby(["scenario", "judge", "figure"], sort=False)
    out = g.agg(
        truth=("truth", "first"),
        coverage=("covered", "mean"),
        n=("covered", "size"),
        width=("width", "mean"),
        mean_estimate=("estimate", "mean"),
        mean_unweighted=("raw", "mean"),
    )
    out["mcse"] = np.sqrt(out.coverage * (1 - out.coverage) / out.n)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["three judges", "clean safe strata"])
def test_synthetic_judges_are_recovered_within_their_intervals(scenario):
    sc = SCENARIOS[scenario]
    pop = population(sc)
    true = truth(pop, sc.judges)
    truth_totals = {j: weighted_confusion(pop.human.tolist(), pop[j].tolist(), np.ones(len(pop))) for j in sc.judges}
    covered = {(j, m): [] for j in sc.judges for m in CHECKED}
    estimates = {(j, m): [] for j in sc.judges for m in CHECKED}
    raws = {(j, m): [] for j in sc.judges for m in CHECKED}
    totals = {j: [] for j in sc.judges}
    for r in range(REPLICATES):
        a = replicate(pop, sc, seed=1000 + r)
        for j in sc.judges:
            totals[j].append(a.totals[j])
            for m in CHECKED:
                t = true[j][m]
                lo, hi = a.metrics.loc[j, f"{m}_ci_low"], a.metrics.loc[j, f"{m}_ci_high"]
                covered[(j, m)].append(lo - 1e-12 <= t <= hi + 1e-12)
                estimates[(j, m)].append(a.metrics.loc[j, m])
                raws[(j, m)].append(float(a.raw[j][m]))
    coverage = {k: float(np.mean(v)) for k, v in covered.items()}
    # Nominal 95 %: each figure at least 0.90 (3 Monte-Carlo SE below 0.95 with 200 replicates), on average 0.94.
    assert min(coverage.values()) >= 0.90, coverage
    assert np.mean(list(coverage.values())) >= 0.94, coverage
    for j in sc.judges:
        # the weighted totals: mean within 4 Monte-Carlo SE of the population's table
        t = np.array(totals[j])
        se = t.std(axis=0, ddof=1) / np.sqrt(REPLICATES)
        assert (np.abs(t.mean(axis=0) - truth_totals[j]) <= 4 * se + 1e-9).all(), (j, t.mean(axis=0), truth_totals[j])
        for m in ("sensitivity", "specificity", "balanced_accuracy"):
            est = np.array(estimates[(j, m)], dtype=float)
            # the ratio of unbiased totals: its bias is a small part of its spread
            assert abs(est.mean() - true[j][m]) <= 0.25 * est.std(ddof=1), (j, m, est.mean())
    if scenario != "three judges":
        return  # with almost no errors, raw and weighted figures are both near 1
    # The routing judge's unweighted figures on the same reviewed responses are biased far beyond that
    # (the sample holds every ambiguous response and 25 of each clear stratum).
    for m in ("sensitivity", "specificity"):
        raw = np.array(raws[("router", m)])
        est = np.array(estimates[("router", m)], dtype=float)
        bias_raw = abs(np.nanmean(raw) - true["router"][m])
        assert bias_raw > 4 * abs(est.mean() - true["router"][m]) and bias_raw > 0.02, (m, bias_raw)


@pytest.mark.slow
@pytest.mark.parametrize(
    "scenario",
    ["non-routing judge, errors where the router says safe", "rare class", "false alarms in the judge-safe stratum"],
)
def test_judges_other_than_the_router_cover_where_the_sample_hides_their_errors(scenario):
    """Issue #23: every judge's every figure covers where its errors rarely reach the sample."""
    table = summarise(coverage_rows(scenario, REPLICATES))
    # 200 replicates: 0.95 less 3 Monte-Carlo SE is 0.904
    assert (table.coverage >= 0.90).all(), table[table.coverage < 0.90]
    assert table.coverage.mean() >= 0.94, table


def test_the_deterministic_case_of_issue_23_has_an_interval_that_holds_the_truth():
    """One sample of the deterministic case: none of the second judge's 20 false alarms among the
    unreviewed router-safe responses is in the sample; before issue #23 its specificity printed
    1.0000 [1.0000, 1.0000] against a true 0.98."""
    sc = SCENARIOS["false alarms in the judge-safe stratum"]
    pop = population(sc)
    true = truth(pop, sc.judges)
    for seed in range(1000, 1100):
        a = replicate(pop, sc, seed=seed, draws=2000)
        if a.raw["second"]["specificity"] == 1.0:  # a sample that shows none of its false alarms
            break
    row = a.metrics.loc["second"]
    assert row.specificity == 1.0
    assert row.specificity_ci_low < true["second"]["specificity"] < 1.0
    assert row.ppv_ci_low < true["second"]["ppv"]


def test_without_the_weights_the_figures_would_not_be_the_population_s():
    """One replicate of the first scenario: the audit's pooled figures are the weighted ones, not the raw ones."""
    sc = SCENARIOS["three judges"]
    pop = population(sc)
    a = replicate(pop, sc, seed=7)
    for j in sc.judges:
        weighted = confusion_metrics(a.totals[j])
        for m in METRICS:
            assert a.metrics.loc[j, m] == pytest.approx(float(weighted[m]), nan_ok=True), (j, m)
    assert abs(a.metrics.loc["router", "specificity"] - float(a.raw["router"]["specificity"])) > 0.05


if __name__ == "__main__":
    import sys

    pd.set_option("display.width", 200)
    pd.set_option("display.max_rows", 500)
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    frames = [coverage_rows(name, reps) for name in SCENARIOS]
    print(summarise(pd.concat(frames, ignore_index=True)).round(3).to_string())
