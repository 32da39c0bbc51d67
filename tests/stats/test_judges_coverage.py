"""Synthetic judges with known sensitivity and specificity, sampled through the real routing design.

A finite population is drawn once per scenario: four models x 450 responses of one benchmark,
each with a human label and the labels of three judges (the routing judge and two others, each
with its own error rates, ambiguous verdicts included). The truth is every judge's figure on the
whole population. Each replicate then routes the population with the design ``annotate route``
uses (``annotate.stats.sampling.select_for_review``: every ambiguous response, 25 per clear
stratum and cell, a fresh seed) and audits the judges on the sample. Over the replicates:

* the intervals cover the truth at the nominal rate;
* the design-weighted totals are unbiased (their mean within Monte-Carlo error of the truth) and
  the ratios nearly so, while the unweighted figures on the same reviewed responses are far off.

The measured table (more replicates, more scenarios) is in docs/methods.md 9.7.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotate.stats.judges import METRICS, confusion_metrics, design_weights, judge_audit, weighted_confusion
from annotate.stats.sampling import select_for_review

LABELS = np.array(["harmful", "safe", "ambiguous"], dtype=object)

#: Per scenario: each judge's P(harmful, safe, ambiguous | human harmful) and (... | human safe),
#: the four models' prevalences, responses per reviewed clear stratum.
SCENARIOS = {
    # three judges of different kinds: a careful router, a strict one that never abstains, an eager one
    "three judges": (
        {
            "router": ([0.80, 0.12, 0.08], [0.04, 0.88, 0.08]),
            "strict": ([0.70, 0.30, 0.00], [0.10, 0.90, 0.00]),
            "eager": ([0.92, 0.05, 0.03], [0.20, 0.75, 0.05]),
        },
        (0.1, 0.2, 0.3, 0.4),
        25,
    ),
    # a router that almost never misses: its judge-safe strata look clean in most samples
    "clean safe strata": (
        {
            "router": ([0.97, 0.01, 0.02], [0.02, 0.93, 0.05]),
            "other": ([0.85, 0.15, 0.00], [0.05, 0.95, 0.00]),
        },
        (0.05, 0.10, 0.15, 0.20),
        25,
    ),
}
REPLICATES = 200
DRAWS = 1000
CHECKED = ("sensitivity", "specificity", "ppv", "npv", "balanced_accuracy", "kappa")


def population(judges, prevalence, seed: int, n: int = 450) -> pd.DataFrame:
    gen = np.random.default_rng(seed)
    frames = []
    for m, prev in enumerate(prevalence):
        harmful = gen.random(n) < prev
        frame = pd.DataFrame({"model": f"m{m}", "benchmark": "b", "prompt_id": [f"p{i}" for i in range(n)]})
        frame["human"] = np.where(harmful, "harmful", "safe")
        for name, (p1, p0) in judges.items():
            frame[name] = LABELS[np.where(harmful, gen.choice(3, n, p=p1), gen.choice(3, n, p=p0))]
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def replicate(pop: pd.DataFrame, judges, clear: int, seed: int, unresolved: float = 0.0):
    """Route, review and audit once; ``unresolved``: the share of reviewed responses left without a label."""
    routed = pop.assign(response_id=np.arange(len(pop)), epoch=0, judge="router", judge_label=pop["router"])
    selected, strata = select_for_review(routed, clear_per_cell=clear, seed=seed)
    sample = pop.iloc[selected.response_id.to_numpy()].assign(
        unit=selected.response_id.to_numpy(), stratum=selected.stratum.to_numpy()
    )
    if unresolved:
        lost = np.random.default_rng(seed + 7).random(len(sample)) < unresolved
        sample["human"] = sample["human"].where(~lost, None)
    verdicts = sample.melt(id_vars=["unit"], value_vars=list(judges), var_name="judge", value_name="judge_label")
    audit = judge_audit(
        sample[["unit", "model", "benchmark", "stratum", "human"]], verdicts, strata, by=(), draws=DRAWS, seed=seed
    )
    weights = design_weights(sample, strata).to_numpy()
    totals = {j: weighted_confusion(sample.human.tolist(), sample[j].tolist(), weights) for j in judges}
    raw = {
        j: confusion_metrics(weighted_confusion(sample.human.tolist(), sample[j].tolist(), np.ones(len(sample))))
        for j in judges
    }
    return audit.metrics.set_index("judge"), totals, raw


@pytest.mark.slow
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_synthetic_judges_are_recovered_within_their_intervals(scenario):
    judges, prevalence, clear = SCENARIOS[scenario]
    pop = population(judges, prevalence, seed=1)
    truth_totals = {j: weighted_confusion(pop.human.tolist(), pop[j].tolist(), np.ones(len(pop))) for j in judges}
    truth = {j: confusion_metrics(t) for j, t in truth_totals.items()}
    covered = {(j, m): [] for j in judges for m in CHECKED}
    estimates = {(j, m): [] for j in judges for m in CHECKED}
    raws = {(j, m): [] for j in judges for m in CHECKED}
    totals = {j: [] for j in judges}
    for r in range(REPLICATES):
        metrics, tot, raw = replicate(pop, judges, clear, seed=1000 + r)
        for j in judges:
            totals[j].append(tot[j])
            for m in CHECKED:
                t = float(truth[j][m])
                lo, hi = metrics.loc[j, f"{m}_ci_low"], metrics.loc[j, f"{m}_ci_high"]
                covered[(j, m)].append(lo - 1e-12 <= t <= hi + 1e-12)
                estimates[(j, m)].append(metrics.loc[j, m])
                raws[(j, m)].append(float(raw[j][m]))
    coverage = {k: float(np.mean(v)) for k, v in covered.items()}
    # Nominal 95 %: each figure at least 0.90 (3 Monte-Carlo SE below 0.95 with 200 replicates), on average 0.94.
    assert min(coverage.values()) >= 0.90, coverage
    assert np.mean(list(coverage.values())) >= 0.94, coverage
    for j in judges:
        # the weighted totals: mean within 4 Monte-Carlo SE of the population's table
        t = np.array(totals[j])
        se = t.std(axis=0, ddof=1) / np.sqrt(REPLICATES)
        assert (np.abs(t.mean(axis=0) - truth_totals[j]) <= 4 * se + 1e-9).all(), (j, t.mean(axis=0), truth_totals[j])
        for m in ("sensitivity", "specificity", "balanced_accuracy"):
            est = np.array(estimates[(j, m)], dtype=float)
            # the ratio of unbiased totals: its bias is a small part of its spread
            assert abs(est.mean() - float(truth[j][m])) <= 0.25 * est.std(ddof=1), (j, m, est.mean())
    if scenario != "three judges":
        return  # with almost no errors, raw and weighted figures are both near 1
    # The routing judge's unweighted figures on the same reviewed responses are biased far beyond that
    # (the sample holds every ambiguous response and 25 of each clear stratum).
    for m in ("sensitivity", "specificity"):
        raw = np.array(raws[("router", m)])
        est = np.array(estimates[("router", m)], dtype=float)
        bias_raw = abs(np.nanmean(raw) - float(truth["router"][m]))
        assert bias_raw > 4 * abs(est.mean() - float(truth["router"][m])) and bias_raw > 0.02, (m, bias_raw)


def test_without_the_weights_the_figures_would_not_be_the_population_s():
    """One replicate of the first scenario: the audit's pooled figures are the weighted ones, not the raw ones."""
    judges, prevalence, clear = SCENARIOS["three judges"]
    pop = population(judges, prevalence, seed=1)
    metrics, totals, raw = replicate(pop, judges, clear, seed=7)
    for j in judges:
        weighted = confusion_metrics(totals[j])
        for m in METRICS:
            assert metrics.loc[j, m] == pytest.approx(float(weighted[m]), nan_ok=True), (j, m)
    assert abs(metrics.loc["router", "specificity"] - float(raw["router"]["specificity"])) > 0.05


def coverage_table(replicates: int, draws: int = DRAWS) -> pd.DataFrame:
    """Coverage and mean width per scenario, judge and figure (docs/methods.md 9.7's table; slow)."""
    runs = [
        ("three judges, 25 per stratum", "three judges", 25, 0.0),
        ("three judges, 10 per stratum", "three judges", 10, 0.0),
        ("three judges, 15 % unresolved", "three judges", 25, 0.15),
        ("clean safe strata", "clean safe strata", 25, 0.0),
    ]
    rows = []
    for title, scenario, clear, unresolved in runs:
        judges, prevalence, _ = SCENARIOS[scenario]
        pop = population(judges, prevalence, seed=1)
        truth = {
            j: confusion_metrics(weighted_confusion(pop.human.tolist(), pop[j].tolist(), np.ones(len(pop))))
            for j in judges
        }
        for r in range(replicates):
            metrics, _, raw = replicate(pop, judges, clear, seed=1000 + r, unresolved=unresolved)
            for j in judges:
                for m in CHECKED:
                    t = float(truth[j][m])
                    lo, hi = metrics.loc[j, f"{m}_ci_low"], metrics.loc[j, f"{m}_ci_high"]
                    rows.append(
                        (title, j, m, t, lo - 1e-12 <= t <= hi + 1e-12, hi - lo, metrics.loc[j, m], float(raw[j][m]))
                    )
    frame = pd.DataFrame(rows, columns=["scenario", "judge", "figure", "truth", "covered", "width", "estimate", "raw"])
    return frame.groupby(["scenario", "judge", "figure"], sort=False).agg(
        truth=("truth", "first"),
        coverage=("covered", "mean"),
        width=("width", "mean"),
        mean_estimate=("estimate", "mean"),
        mean_unweighted=("raw", "mean"),
    )


if __name__ == "__main__":
    import sys

    pd.set_option("display.width", 200)
    pd.set_option("display.max_rows", 500)
    print(coverage_table(int(sys.argv[1]) if len(sys.argv) > 1 else 500).round(3).to_string())
