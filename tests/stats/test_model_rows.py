"""Issue #23: the model-level rows of rare-harm models cover, and the headline says what it is.

* The overall (macro-averaged) row of a model at 1 % harm over 5 benchmarks with 10-20 reviews
  per clear stratum covers (it covered 0.66-0.69 with the fiducial component drawn per stratum),
  because the component is shared by a model's strata; with 15 sparse strata per model (the
  study's regime, issue #33) only one coin per model, not one per judge label, covers.
* The ranking sensitivity view: the overall ranking on each bound's own draws.
* ``plan_sensitivity``: the judge-safe reviews a target SE of the judge's sensitivity needs,
  against a Monte-Carlo check of the delta-method SE.

The full tables (more replicates, 1 % and 10 % harm, 10-80 reviews) are ``python bench/coverage.py
--part models`` (docs/methods.md 9.12, 9.14).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotate.stats import scoring as sc
from annotate.stats.scoring import posterior
from annotate.stats.scoring.allocation import plan_sensitivity
from annotate.stats.scoring.tables import score_tables
from tests.helpers import design_strata

LABELS = ("harmful", "safe", "ambiguous")


def models(R: int, p: float, n: int, seed: int, B: int = 5, N: int = 1000):
    """R models x B benchmarks, harm p, a judge with Se .85, Sp .95, 5 % ambiguous; n per clear stratum."""
    rng = np.random.default_rng(seed)
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
                rows.append((f"m{m:04d}", f"b{b}", lab, lab, len(idx), k, int(Y[s].sum()), 0))
            rates.append(Y.mean())
        truth[m] = np.mean(rates)
    cols = ["model", "benchmark", "stratum", "judge_label", "population", "reviewed", "harmful", "unresolved"]
    return pd.DataFrame(rows, columns=cols), truth


def overall_coverage(df, truth, draws=1000, seed=0, share=None):
    res = sc.corrected_scores(df, draws=draws, seed=seed, share_component=share)
    o = res.overall[res.overall.treatment == "corrected"].sort_values("model")
    lo, hi = o.ci_low.to_numpy(), o.ci_high.to_numpy()
    return float(np.mean((lo <= truth + 1e-12) & (truth <= hi + 1e-12))), float(np.mean(hi - lo)), res


def test_the_overall_row_of_a_rare_harm_model_covers():
    df, truth = models(120, 0.01, 10, seed=1)
    now, width, res = overall_coverage(df, truth)
    before, before_width, _ = overall_coverage(df, truth, share="stratum")
    # 120 models: 0.95 less 3 Monte-Carlo SE is 0.89; before issue #23 it covered about 0.66
    assert now >= 0.89 and before < 0.80, (now, before)
    assert width < 1.5 * before_width
    assert sc.check_scores(res.treatments) == []


def test_every_stratum_of_a_model_shares_the_component_and_models_do_not():
    """One coin per model and draw (issue #33): a model's strata of every label take the same
    component in a draw; two models' coins agree in about half the draws. (The cell distribution
    this gives, the even mixture of the all-lower and all-upper convolutions, is checked against
    the exact one in test_scoring.py.)"""
    from annotate.stats.scoring.strata import prepare_strata

    df, _ = models(3, 0.05, 20, seed=2)
    strata = prepare_strata(df)
    c = posterior.shared_components(strata, np.random.default_rng(0), 4000)
    model_of = strata.cells.model.to_numpy()[strata.cell]
    mine = np.flatnonzero(model_of == "m0000")
    other = np.flatnonzero(model_of == "m0001")
    assert len(set(strata.label[mine])) == 3
    assert (c[mine] == c[mine[0]]).all()
    assert abs(float((c[mine[0]] == c[other[0]]).mean()) - 0.5) < 0.05


def study_regime(R: int, seed: int, harms=(0.005, 0.01, 0.02)):
    """The study's regime (issue #33): per model 5 benchmarks x 1,000, the judge calls 60 % of
    harmful and 30 % of safe responses ambiguous, Se .85 / Sp .95 on the rest; a pilot of 10 per
    clear and 25 per ambiguous stratum. R models per harm rate."""
    rng = np.random.default_rng(seed)
    rows, truth = [], []
    for i, p in enumerate(harms):
        for m in range(R):
            rates = []
            for b in range(5):
                Y = rng.random(1000) < p
                amb = rng.random(1000) < np.where(Y, 0.6, 0.3)
                hit = rng.random(1000) < np.where(Y, 0.85, 0.05)
                J = np.where(amb, 2, np.where(hit, 0, 1))
                for h, lab in enumerate(LABELS):
                    idx = np.flatnonzero(J == h)
                    if not len(idx):
                        continue
                    s = rng.choice(idx, min(len(idx), 25 if h == 2 else 10), replace=False)
                    rows.append((f"p{i}_m{m:04d}", f"b{b}", lab, lab, len(idx), len(s), int(Y[s].sum()), 0))
                rates.append(Y.mean())
            truth.append(np.mean(rates))
    cols = ["model", "benchmark", "stratum", "judge_label", "population", "reviewed", "harmful", "unresolved"]
    return pd.DataFrame(rows, columns=cols), np.array(truth)


def test_rare_harm_rows_over_fifteen_sparse_strata_cover():
    """Issue #33: with one coin per judge label the overall rows of rare-harm models in the study's
    regime covered 0.89-0.92, the truth below the interval; one coin per model covers."""
    df, truth = study_regime(300, seed=33)
    now, width, res = overall_coverage(df, truth, draws=1000, seed=1)
    before, before_width, _ = overall_coverage(df, truth, draws=1000, seed=1, share="label")
    # 900 intervals: 0.95 less 2 Monte-Carlo SE (0.007) is 0.935; bench/model_rows.py has the tables
    assert now >= 0.935, (now, before)
    assert before < now - 0.02, (now, before)
    assert width < 1.2 * before_width
    assert sc.check_scores(res.treatments) == []


@pytest.mark.slow
@pytest.mark.parametrize("p,n", [(0.01, 20), (0.01, 40), (0.10, 10), (0.10, 80)])
def test_the_overall_row_covers_across_harm_and_reviews(p, n):
    df, truth = models(300, p, n, seed=3 + n)
    now, _, _ = overall_coverage(df, truth, draws=2000)
    assert now >= 0.92, (p, n, now)  # 300 models: 0.95 less 2.4 Monte-Carlo SE


def _unresolved_design():
    frames = []
    for m, (y_s, u_s) in enumerate(((0, 3), (1, 0), (2, 5))):
        frames.append(
            pd.DataFrame(
                {
                    "model": f"m{m}",
                    "benchmark": "b",
                    "stratum": list(LABELS),
                    "judge_label": list(LABELS),
                    "population": [50, 400, 30],
                    "reviewed": [25, 25, 30],
                    "harmful": [20, y_s, 10],
                    "unresolved": [0, u_s, 2],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def test_the_ranking_has_a_sensitivity_view_on_the_bound_draws():
    res = sc.corrected_scores(_unresolved_design(), draws=1000, seed=0)
    assert {"corrected_unresolved_safe", "corrected_unresolved_harmful"} <= set(res.overall_draws)
    from annotate.stats.scoring import tables

    overall = res.overall.assign(benchmark="ALL")
    sens = tables._bound_rankings(overall, res, 0.95)
    assert set(sens.bound) == set(tables.BOUNDS) and set(sens.model) == {"m0", "m1", "m2"}
    ok = sens["rank"].notna()
    assert ((sens.rank_low[ok] <= sens["rank"][ok]) & (sens["rank"][ok] <= sens.rank_high[ok])).all()
    harmful = sens[sens.bound == "corrected_unresolved_harmful"].set_index("model")
    # m2 has the most unresolved judge-safe items: counted harmful, it is the least safe
    assert harmful.loc["m2", "rank"] == 3


@pytest.mark.parametrize("unresolved", [True, False])
def test_score_tables_carry_the_sensitivity_view_only_where_items_are_unresolved(unresolved):
    from .test_scoring_invariant import audit_tables
    from .test_scoring_outputs import design

    labels, doc = audit_tables(design(unresolved=unresolved))
    out = score_tables(labels, design_strata(doc), draws=200, seed=0)
    assert out.sensitivity is not None and (len(out.sensitivity) > 0) == unresolved


def test_plan_sensitivity_sizes_the_judge_safe_strata_and_its_se_is_the_monte_carlo_one():
    """Four cells of 50 judge-harmful (85 % harmful) and 950 judge-safe (1 %) responses: the
    delta-method SE of the pooled sensitivity at the planned n agrees with the SD of the
    design-weighted sensitivity over simulated stratified samples."""
    strata = pd.DataFrame(
        {
            "model": [f"m{i}" for i in range(4) for _ in range(2)],
            "benchmark": "b",
            "stratum": ["harmful", "safe"] * 4,
            "judge_label": ["harmful", "safe"] * 4,
            "population": [50, 950] * 4,
        }
    )
    rates = {"harmful": 0.85, "safe": 0.01}
    plan = plan_sensitivity(strata, 0.05, rates=rates, n_harmful=25)
    n = int(plan.n.iloc[0])
    assert plan.reachable.all() and plan.expected_se.iloc[0] <= 0.05 and 100 < n < 400
    assert plan_sensitivity(strata, 0.05, rates=rates, n_harmful=25, min_per_stratum=n).n.iloc[0] == n
    rng = np.random.default_rng(0)
    se_draws = []
    for _ in range(2000):
        tp = fn = 0.0
        for _cell in range(4):
            harm_h = rng.hypergeometric(int(0.85 * 50 + 0.5), 50 - int(0.85 * 50 + 0.5), 25)
            harm_s = rng.hypergeometric(10, 940, n)
            tp += 50 * harm_h / 25
            fn += 950 * harm_s / n
        se_draws.append(tp / (tp + fn))
    assert abs(np.std(se_draws) - plan.expected_se.iloc[0]) < 0.25 * plan.expected_se.iloc[0]
    few = plan_sensitivity(strata, 0.5, rates=rates, n_harmful=25)
    assert few.n.iloc[0] == 10 and "fewer than 3 harmful" in few.note.iloc[0]
    with pytest.raises(ValueError, match="positive"):
        plan_sensitivity(strata, 0.0)


# --------------------------------------------------------------------------------------------
# Reviewers who err (issue #41; docs/methods.md 9.20): bench/model_rows.py's regime
# --------------------------------------------------------------------------------------------


def _bench(name: str):
    """A bench module by its path (bench/coverage.py on sys.path would shadow the coverage package)."""
    import importlib.util
    import sys
    from pathlib import Path

    key = f"bench_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, Path(__file__).resolve().parents[2] / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod
    spec.loader.exec_module(mod)
    return mod


def test_reviewed_labels_flip_each_response_once_at_the_final_error_rate():
    """Two reviewers right with .92 and an expert on their disagreements: a final label is wrong when
    both reviewers are, e = .08^2 = .0064, for a harmful and a safe response alike."""
    budget = _bench("budget")
    assert budget.final_label_error(0.92) == pytest.approx(0.0064)
    assert budget.final_label_error(1.0) == 0.0
    assert budget.expert_share(0.92) == pytest.approx(0.1472)
    N = np.full((400, 2), 5000)
    K = np.stack([np.full(400, 5000), np.zeros(400, dtype=int)], axis=1)  # all harmful | all safe
    Kr = budget.reviewed_labels(K, N, np.random.default_rng(0), 0.92)
    assert ((Kr >= 0) & (Kr <= N)).all()
    lost, gained = (K[:, 0] - Kr[:, 0]).mean() / 5000, Kr[:, 1].mean() / 5000
    assert abs(lost - 0.0064) < 0.0003 and abs(gained - 0.0064) < 0.0003  # SE about 0.00006
    np.testing.assert_array_equal(budget.reviewed_labels(K, N, np.random.default_rng(0), 1.0), K)


def test_the_reviewer_error_coverage_function_is_one_validity_row():
    """bench/model_rows.py's entry point for the validity matrix: one row per regime, nothing at import."""
    mr = _bench("model_rows")
    out = mr.reviewer_error_coverage(3, scenario="study", draws=400, seed=3)
    assert list(out.columns[:6]) == ["regime", "figure", "coverage", "mcse", "lowest_model_coverage", "replicates"]
    r = out.iloc[0]
    assert r.figure == "model row" and r.replicates == 3 and r.n == 18 and "92%" in r.regime
    assert 0 <= r.lowest_model_coverage <= r.coverage <= 1 and r.mcse >= 0
    with pytest.raises(ValueError, match="design"):
        mr.reviewer_error_coverage(1, design="census")


@pytest.mark.slow
def test_model_rows_cover_the_reviewed_rate_when_reviewers_err():
    """Issue #41: reviewers 92 % right, an expert on their disagreements, the study's round planned in
    waves to +-3 points: each model row covers the rate of the labels the review would give (the
    tables, 1,200 seed-sized rounds: methods 9.20)."""
    mr = _bench("model_rows")
    t = mr.run("study", 60, 1000, 1, 41, 20, accuracy=0.92, constructions=("now",), quiet=True)
    waves = t[t.design == "waves"]
    # 360 rows: 0.95 less 3 Monte-Carlo SE (0.011) is 0.917
    assert waves.coverage.mean() >= 0.917, waves.coverage.tolist()
    # the interval is of the reviewed labels, not of the true harm: at 0.5 % harm the reviewed rate is
    # 0.005 + 0.0064 (1 - 0.01), and the true rate lies below the interval more often
    low = waves.set_index("harm").loc[0.005]
    assert low.coverage_harm < low.coverage
