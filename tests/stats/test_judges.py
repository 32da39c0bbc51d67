"""The judge audit's figures (annotate.stats.judges): against independent computations.

* a hand calculation and ``sklearn.metrics`` with ``sample_weight`` on a fixed stratified sample;
* an exhaustive enumeration of every sample a small design can draw: the design-weighted
  totals are exactly unbiased, the ratios nearly so, the unweighted sample figures are not;
* the posterior draws: census strata fixed, the urn's mean at the observed shares, unseen labels
  possible only where a stratum saw one human label;
* the audit's invariants: row order, determinism, estimates inside their intervals, notes for
  what is left out or undefined, probabilities that add up.
"""

from __future__ import annotations

from itertools import combinations, product

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, precision_score, recall_score

from annotate.stats.judges import (
    METRICS,
    confusion_metrics,
    design_weights,
    judge_audit,
    population_draws,
    weighted_confusion,
)

# -- a fixed sample of two cells, three strata each, three judges ------------------------------
#
# Cell m1 x b: routing-judge strata harmful (N = 40, 4 reviewed), safe (N = 120, 5 reviewed, one
# unresolved), ambiguous (census of 3). Cell m2 x b: harmful (N = 10, 2 reviewed), safe (N = 90,
# 3 reviewed), no ambiguous response.

UNITS = pd.DataFrame(
    [
        # unit, model, stratum, human, router, other, third
        ("u1", "m1", "harmful", "harmful", "harmful", "harmful", "harmful"),
        ("u2", "m1", "harmful", "harmful", "harmful", "safe", "harmful"),
        ("u3", "m1", "harmful", "safe", "harmful", "safe", None),
        ("u4", "m1", "harmful", "harmful", "harmful", "ambiguous", "harmful"),
        ("u5", "m1", "safe", "safe", "safe", "safe", "safe"),
        ("u6", "m1", "safe", "harmful", "safe", "harmful", "safe"),
        ("u7", "m1", "safe", "safe", "safe", "harmful", "ambiguous"),
        ("u8", "m1", "safe", None, "safe", "safe", "safe"),
        ("u9", "m1", "safe", "safe", "safe", "safe", "safe"),
        ("u10", "m1", "ambiguous", "harmful", "ambiguous", "harmful", "harmful"),
        ("u11", "m1", "ambiguous", "safe", "ambiguous", "safe", "ambiguous"),
        ("u12", "m1", "ambiguous", "safe", "ambiguous", "harmful", "safe"),
        ("u13", "m2", "harmful", "harmful", "harmful", "harmful", "harmful"),
        ("u14", "m2", "harmful", "safe", "harmful", "safe", "harmful"),
        ("u15", "m2", "safe", "safe", "safe", "safe", "safe"),
        ("u16", "m2", "safe", "safe", "safe", "safe", "harmful"),
        ("u17", "m2", "safe", "harmful", "safe", "safe", "safe"),
    ],
    columns=["unit", "model", "stratum", "human", "router", "other", "third"],
).assign(benchmark="b", round="r1")
STRATA = pd.DataFrame(
    [
        ("m1", "harmful", 40, 4),
        ("m1", "safe", 120, 5),
        ("m1", "ambiguous", 3, 3),
        ("m2", "harmful", 10, 2),
        ("m2", "safe", 90, 3),
    ],
    columns=["model", "stratum", "population", "sample"],
).assign(benchmark="b", round="r1")
#: N_h / r_h by hand: m1 harmful 40/4, m1 safe 120/4 (u8 is unresolved), m1 ambiguous 3/3,
#: m2 harmful 10/2, m2 safe 90/3.
HAND_WEIGHT = {("m1", "harmful"): 10.0, ("m1", "safe"): 30.0, ("m1", "ambiguous"): 1.0}
HAND_WEIGHT |= {("m2", "harmful"): 5.0, ("m2", "safe"): 30.0}


def _verdicts(units: pd.DataFrame = UNITS) -> pd.DataFrame:
    long = units.melt(id_vars=["unit"], value_vars=["router", "other", "third"], var_name="judge", value_name="label")
    return long.dropna().rename(columns={"label": "judge_label"}).reset_index(drop=True)


def _audit(**kwargs):
    units = UNITS[["unit", "round", "model", "benchmark", "stratum", "human"]]
    return judge_audit(units, _verdicts(), STRATA, **kwargs)


def test_design_weights_are_population_over_resolved_reviewed_by_hand():
    w = design_weights(UNITS, STRATA)
    for row, weight in zip(UNITS.itertuples(), w, strict=True):
        if pd.isna(row.human):
            assert np.isnan(weight), row.unit
        else:
            assert weight == HAND_WEIGHT[(row.model, row.stratum)], row.unit


def test_the_pooled_figures_equal_sklearn_with_design_weights():
    """A second, independent computation of every figure: sklearn.metrics with sample_weight."""
    audit = _audit(draws=0)
    pooled = audit.metrics[(audit.metrics.benchmark == "ALL") & (audit.metrics.model == "ALL")].set_index("judge")
    resolved = UNITS[UNITS.human.notna()]
    w_all = np.array([HAND_WEIGHT[(m, s)] for m, s in zip(resolved.model, resolved.stratum, strict=True)])
    for judge in ("router", "other", "third"):
        labels = resolved[judge]
        clear = labels.isin(["harmful", "safe"]).to_numpy()
        y_true = (resolved.human[clear] == "harmful").astype(int).to_numpy()
        y_pred = (labels[clear] == "harmful").astype(int).to_numpy()
        w = w_all[clear]
        row = pooled.loc[judge]
        assert row.sensitivity == pytest.approx(recall_score(y_true, y_pred, sample_weight=w))
        assert row.specificity == pytest.approx(recall_score(1 - y_true, 1 - y_pred, sample_weight=w))
        assert row.ppv == pytest.approx(precision_score(y_true, y_pred, sample_weight=w))
        assert row.npv == pytest.approx(precision_score(1 - y_true, 1 - y_pred, sample_weight=w))
        assert row.balanced_accuracy == pytest.approx(balanced_accuracy_score(y_true, y_pred, sample_weight=w))
        assert row.kappa == pytest.approx(cohen_kappa_score(y_true, y_pred, sample_weight=w))
        amb = (labels == "ambiguous").to_numpy()
        labelled = labels.notna().to_numpy()
        assert row.ambiguous_share == pytest.approx(w_all[amb].sum() / w_all[labelled].sum())
        if amb.any():
            assert row.ambiguous_harmful == pytest.approx(
                w_all[amb & (resolved.human == "harmful").to_numpy()].sum() / w_all[amb].sum()
            )
        assert row.n_resolved == int(labelled.sum())
        assert row.n_reviewed == int(UNITS[judge].notna().sum())


def test_the_routing_judge_by_hand():
    """router, pooled: TP = 10 x 3 + 5 x 1, FP = 10 + 5, FN = 30 x 1 + 30 x 1, TN = 30 x 3 + 30 x 2."""
    row = _audit(draws=0).metrics.set_index(["judge", "benchmark", "model"]).loc[("router", "ALL", "ALL")]
    tp, fp, fn, tn = 35.0, 15.0, 60.0, 150.0
    assert row.sensitivity == pytest.approx(tp / (tp + fn))
    assert row.specificity == pytest.approx(tn / (tn + fp))
    assert row.ppv == pytest.approx(tp / (tp + fp))
    assert row.npv == pytest.approx(tn / (tn + fn))
    # the ambiguous census of m1: 3 of 3 + 50 + 150 + 10 + 90 = 263 responses; 1 of the 3 harmful
    assert row.ambiguous_share == pytest.approx(3 / 263)
    assert row.ambiguous_harmful == pytest.approx(1 / 3)
    assert row.population == pytest.approx(263)
    # unweighted, the resolved reviewed responses say Se = 4 / 6: the weighting matters
    assert row.sensitivity == pytest.approx(35 / 95) and abs(row.sensitivity - 4 / 6) > 0.25


def test_every_sample_of_a_small_design_enumerated():
    """Exact expectation over every stratified sample (no Monte Carlo): the weighted totals are unbiased.

    One cell: the routing judge's harmful stratum of 5 (4 reviewed), its safe stratum of 10 (2
    reviewed), its ambiguous stratum of 2 (census). Each response has a known human label and a
    label by a second judge; every one of the C(5,4) x C(10,2) = 225 samples is audited.
    """
    pop = pd.DataFrame(
        {
            "stratum": ["harmful"] * 5 + ["safe"] * 10 + ["ambiguous"] * 2,
            "human": ["harmful"] * 3 + ["safe"] * 2 + ["harmful"] * 2 + ["safe"] * 8 + ["harmful", "safe"],
            "other": ["harmful", "harmful", "safe", "harmful", "safe"]
            + ["harmful", "safe", "safe", "safe", "harmful", "safe", "safe", "safe", "safe", "ambiguous"]
            + ["harmful", "ambiguous"],
        }
    )
    pop["unit"] = [f"u{i}" for i in range(len(pop))]
    pop["router"] = pop["stratum"]
    truth = {j: weighted_confusion(pop.human.tolist(), pop[j].tolist(), np.ones(len(pop))) for j in ("router", "other")}
    strata = pd.DataFrame(
        {"model": "m", "benchmark": "b", "stratum": ["harmful", "safe", "ambiguous"], "population": [5, 10, 2]}
    ).assign(sample=[4, 2, 2])
    H, S, U = (pop.index[pop.stratum == s].tolist() for s in ("harmful", "safe", "ambiguous"))
    totals: dict[str, list] = {j: [] for j in truth}
    figures: dict[str, list] = {j: [] for j in truth}
    raw_totals: dict[str, list] = {j: [] for j in truth}
    for h, s in product(combinations(H, 4), combinations(S, 2)):
        sample = pop.loc[[*h, *s, *U]].assign(model="m", benchmark="b")
        verdicts = sample.melt(id_vars=["unit"], value_vars=["router", "other"], var_name="judge")
        verdicts = verdicts.rename(columns={"value": "judge_label"})
        audit = judge_audit(sample, verdicts, strata, by=(), draws=0, test_draws=0)
        w = design_weights(sample, strata).to_numpy()
        for j in truth:
            totals[j].append(weighted_confusion(sample.human.tolist(), sample[j].tolist(), w))
            figures[j].append(audit.metrics.set_index("judge").loc[j, list(METRICS)].to_numpy(dtype=float))
            raw_totals[j].append(weighted_confusion(sample.human.tolist(), sample[j].tolist(), np.ones(len(sample))))
    N = len(pop)
    for j in truth:
        assert len(totals[j]) == 225
        # design-unbiased: the mean over every possible sample is the population's table, exactly
        np.testing.assert_allclose(np.mean(totals[j], axis=0), truth[j], atol=1e-9)
        # the audit's figures are those of the weighted totals, sample by sample
        for t, f in zip(totals[j], figures[j], strict=True):
            np.testing.assert_allclose(f, [float(confusion_metrics(t)[m]) for m in METRICS], equal_nan=True)
    # Unweighted, the sample (4 of 5 judge-harmful responses, 2 of 10 judge-safe ones) misstates
    # the table: the routing judge's true positives make 3 / 17 of the population and a third of
    # the sample.
    raw_shares = np.mean([t / t.sum() for t in raw_totals["router"]], axis=0)
    assert np.abs(raw_shares - truth["router"] / N).max() > 0.15


def test_draws_keep_census_strata_fixed_and_the_urn_centred():
    gen = np.random.default_rng(3)
    labels = np.array([[0, 0], [0, 1], [1, 1], [1, 1], [1, 2]])
    human = np.array([0, 0, 1, 1, 0])
    fixed = population_draws(labels, human, 0, 50, gen)
    assert (fixed == fixed[0]).all() and fixed[0].sum() == 2 * 5  # each judge's five responses
    d = population_draws(labels, human, 995, 4000, gen)
    assert np.allclose(d.sum(axis=(2, 3)), 1000)  # every judge labelled every response
    # mean-neutral where both human labels and, within each, every label of each judge were seen:
    # the shares stay the observed ones
    every = np.array([[a, b] for y in (0, 1) for a in (0, 1, 2) for b in (0, 1, 2)])
    y = np.repeat([0, 1], 9)
    d = population_draws(every, y, 982, 8000, gen)
    observed = population_draws(every, y, 0, 1, gen)[0] / 18
    np.testing.assert_allclose(d.mean(axis=0) / 1000, observed, atol=0.004)


def test_an_unseen_human_label_is_drawn_only_where_a_stratum_saw_one_label():
    labels = np.array([[1], [1], [1]])  # the stratum's judge said safe three times
    clean = np.array([1, 1, 1])  # and humans said safe three times
    down = np.array([True, False] * 500)  # the errors' side, then the other
    fixed = np.array([True])  # the judge that defines the stratum
    d = population_draws(labels, clean, 97, 1000, 5, down, fixed=fixed)
    harmful = d[:, 0, 0, :].sum(axis=1)
    assert (harmful[~down] == 0).all()  # the other side: no harm the sample did not show
    assert harmful[down].mean() > 5  # the errors' side: unseen harm among the 97 (the judge's miss)
    mixed = np.array([1, 0, 1])
    d = population_draws(labels, mixed, 97, 1000, 5, down, fixed=fixed)
    assert d[:, 0, 0, :].sum(axis=1).min() >= 1  # the observed harmful response is always there
    # in a stratum the judge called harmful, its error is a safe response
    said_harmful = np.array([[0], [0], [0]])
    d = population_draws(said_harmful, np.zeros(3, dtype=np.int64), 97, 1000, 5, down, fixed=fixed, down_human=1)
    safe = d[:, 0, 1, :].sum(axis=1)
    assert (safe[~down] == 0).all() and safe[down].mean() > 5
    # another judge sees the hidden harm in every draw: missed on the errors' side, caught on the other
    both = np.array([[1, 1]] * 3)
    sets = np.array([[True, True, True], [True, True, False]])  # it calls some responses harmful elsewhere
    d = population_draws(both, clean, 97, 1000, 5, down, fixed=np.array([True, False]), label_sets=sets)
    other = d[:, 1, 0, :]  # (draws, the other judge's verdicts on harmful responses)
    assert (other[down, 0] == 0).all() and other[down, 1].mean() > 5  # missed: called safe
    assert (other[~down, 1] == 0).all() and other[~down, 0].mean() > 5  # caught: called harmful


def test_an_unseen_judge_label_gets_prior_mass_on_the_errors_side():
    """Issue #23: a judge that called every reviewed safe response safe can still have false alarms
    among the unreviewed ones, in the draws on the errors' side; the routing judge (fixed on its
    stratum) never gets a label it cannot have, and a judge never gets a verdict it never gives."""
    labels = np.array([[1, 1]] * 25)  # (router, other): both said safe on 25 reviewed safe responses
    human = np.ones(25, dtype=np.int64)
    down = np.repeat([True, False], 1000)  # the errors' side, then the other
    sets = np.array([[True, True, True], [True, True, False]])  # the other judge never abstains
    d = population_draws(labels, human, 975, 2000, 7, down, label_sets=sets, fixed=np.array([True, False]))
    false_alarms = d[:, 1, 1, 0]  # other judge, human safe, judge harmful
    assert (false_alarms[1000:] == 0).all()  # the other side: copies of what was seen
    assert (false_alarms[:1000] > 0).mean() > 0.9 and false_alarms[:1000].mean() > 10  # unseen ones
    assert (d[:, 1, :, 2] == 0).all()  # never an abstention it never gives
    assert (d[:, 0, 1, 0] == 0).all() and (d[:, 0, :, 2] == 0).all()  # the routing judge stays safe


def test_the_routing_judge_is_inferred_or_named_and_never_relabelled_in_its_strata():
    """The router's own figures are the same whichever other judges are audited beside it."""
    alone = judge_audit(
        UNITS[["unit", "round", "model", "benchmark", "stratum", "human"]],
        _verdicts()[lambda v: v.judge == "router"],
        STRATA,
        draws=400,
        seed=3,
        by=(),
    )
    named = judge_audit(
        UNITS[["unit", "round", "model", "benchmark", "stratum", "human"]],
        _verdicts()[lambda v: v.judge == "router"],
        STRATA,
        draws=400,
        seed=3,
        by=(),
        routing=["router"],
    )
    pd.testing.assert_frame_equal(alone.metrics, named.metrics)


def test_results_do_not_depend_on_row_order_and_are_seeded():
    a = _audit(draws=500, seed=11)
    units = UNITS[["unit", "round", "model", "benchmark", "stratum", "human"]].iloc[::-1]
    b = judge_audit(units, _verdicts().sample(frac=1.0, random_state=2), STRATA.iloc[::-1], draws=500, seed=11)
    pd.testing.assert_frame_equal(a.metrics, b.metrics)
    pd.testing.assert_frame_equal(a.pairs, b.pairs)
    c = _audit(draws=500, seed=12)
    assert not c.metrics.sensitivity_ci_low.equals(a.metrics.sensitivity_ci_low)


def test_estimates_inside_their_intervals_and_probabilities_add_up():
    audit = _audit(draws=800, seed=1, by=("benchmark", "model"))
    m = audit.metrics
    assert set(zip(m.benchmark, m.model, strict=True)) == {("ALL", "ALL"), ("b", "ALL"), ("ALL", "m1"), ("ALL", "m2")}
    for metric in METRICS:
        ok = m[metric].notna()
        assert (m.loc[ok, f"{metric}_ci_low"] <= m.loc[ok, metric] + 1e-12).all(), metric
        assert (m.loc[ok, metric] <= m.loc[ok, f"{metric}_ci_high"] + 1e-12).all(), metric
        assert m.loc[~ok, f"{metric}_ci_low"].isna().all(), metric
    ranked = m[m["rank"].notna()]
    assert ((ranked.rank_low <= ranked["rank"]) & (ranked["rank"] <= ranked.rank_high)).all()
    p = audit.pairs
    assert np.allclose(p.p_a_better + p.p_b_better + p.p_tie, 1.0)
    # rank 1 goes to the highest balanced accuracy of its group
    for _, group in ranked.groupby(["benchmark", "model"]):
        assert group.loc[group["rank"].idxmin(), "balanced_accuracy"] == group.balanced_accuracy.max()


def test_what_is_left_out_or_undefined_is_said():
    audit = _audit(draws=200)
    pooled = audit.metrics[(audit.metrics.benchmark == "ALL") & (audit.metrics.model == "ALL")].set_index("judge")
    # third has no verdict on u3: its figures describe the responses it labelled
    assert "labelled 15 of the 16" in pooled.loc["third", "note"]
    assert any("judge third labelled 15 of the 16" in n for n in audit.notes)
    # the routing judge never says ambiguous in m2: its ambiguous figures there are undefined, with why
    m2 = _audit(draws=0, by=("model",)).metrics.set_index(["judge", "model"]).loc[("router", "m2")]
    assert np.isnan(m2.ambiguous_harmful) and "judge called no response ambiguous" in m2.note
    # a stratum without any resolved response cannot be weighted: left out and said so
    units = UNITS[["unit", "round", "model", "benchmark", "stratum", "human"]].copy()
    units.loc[units.stratum.eq("safe") & units.model.eq("m2"), "human"] = None
    left = judge_audit(units, _verdicts(), STRATA, draws=0)
    assert any("90 responses in 1 strata" in n for n in left.notes)
    assert "90 responses in 1 strata without a resolved review left out" in left.metrics.note.iloc[0]


def test_bad_input_is_refused_with_what_is_wrong():
    units = UNITS[["unit", "round", "model", "benchmark", "stratum", "human"]]
    v = _verdicts()
    with pytest.raises(ValueError, match="unknown judge label"):
        judge_audit(units, v.assign(judge_label="maybe"), STRATA)
    with pytest.raises(ValueError, match="two verdicts on one response"):
        judge_audit(units, pd.concat([v, v.iloc[:1]]), STRATA)
    with pytest.raises(ValueError, match="not among the reviewed ones"):
        judge_audit(units, pd.concat([v, pd.DataFrame([{"unit": "zz", "judge": "x", "judge_label": "safe"}])]), STRATA)
    with pytest.raises(ValueError, match="in no stratum of the design"):
        judge_audit(units, v, STRATA[STRATA.model != "m2"])
    with pytest.raises(ValueError, match="unknown grouping"):
        judge_audit(units, v, STRATA, by=("category",))
    with pytest.raises(ValueError, match="unknown human label"):
        judge_audit(units.assign(human="unsure"), v, STRATA)
