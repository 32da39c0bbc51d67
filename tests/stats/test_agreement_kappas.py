"""The agreement coefficients added for issue #13, against independent implementations.

* weighted kappa (linear, quadratic), Cohen's analytic SE and z: ``statsmodels``
  ``cohens_kappa`` and scikit-learn ``cohen_kappa_score(weights=...)`` on random tables;
* Brennan-Prediger: ``statsmodels`` ``fleiss_kappa(method="randolph")`` on complete data, exact
  rationals with missing ratings;
* Conger's kappa: an exact ``fractions.Fraction`` re-implementation of irrCAC's
  ``conger.kappa.raw`` formula (irrCAC itself is not installable here; its published value is in
  the vectors), and Cohen's kappa for two complete raters;
* Fleiss' z: R irr's published value is in the vectors (``test_agreement.py``); here its
  defined and undefined cases;
* the votes the binary label set drops as ``unsure``, counted beside the summary.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Literal

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from annotate.stats import agreement as ag
from annotate.stats.agreement import votes as votes_mod

# statsmodels warns on the degenerate tables it returns NaN for; the tests compare those cases.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

EXACT = 1e-12
WEIGHTS: tuple[Literal["linear", "quadratic"], ...] = ("linear", "quadratic")


@st.composite
def tables(draw: st.DrawFn, max_v: int = 5) -> np.ndarray:
    """A (V, V) two-rater contingency table with at least two units."""
    V = draw(st.integers(2, max_v))
    cells = draw(st.lists(st.integers(0, 12), min_size=V * V, max_size=V * V))
    t = np.array(cells, dtype=np.int64).reshape(V, V)
    if t.sum() < 2:
        t[0, 1] += 1
        t[1, 0] += 1
    return t


def _single_cell(t: np.ndarray) -> bool:
    rows, cols = np.flatnonzero(t.sum(axis=1)), np.flatnonzero(t.sum(axis=0))
    return rows.size == 1 and cols.size == 1 and rows[0] == cols[0]


def _expand(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Table -> the two label vectors it counts."""
    V = t.shape[0]
    cells = np.repeat(np.arange(V * V), t.ravel())
    return cells // V, cells % V


# --------------------------------------------------------------------------------------------
# Cohen's and weighted kappa: value, analytic SE and z against statsmodels and scikit-learn
# --------------------------------------------------------------------------------------------


def _same_se(ours: float, statsmodels_se: float) -> None:
    """Equal SEs; where a variance rounds to a tiny negative number (a rater who used one category
    only, so kappa is 0 on every resample) statsmodels gives NaN and we give 0."""
    if math.isnan(statsmodels_se):
        assert ours < 1e-7
    else:
        assert abs(ours - statsmodels_se) < 1e-10


@settings(max_examples=200, deadline=None, derandomize=True)
@given(tables())
def test_cohen_kappa_and_analytic_se_match_statsmodels(t: np.ndarray) -> None:
    res = ag.cohen_kappa_table(t, n_boot=0)
    if _single_cell(t):
        assert not res.defined and "chance agreement is 1" in res.undefined_reason  # type: ignore[operator]
        return
    sm = sm_cohens_kappa(t)
    assert abs(res.value - sm.kappa) < EXACT
    _same_se(res.se_analytic, sm.std_kappa)
    if sm.std_kappa0 > 0:
        assert abs(res.components["se_h0"] - sm.std_kappa0) < 1e-10
        assert abs(res.components["z"] - sm.z_value) < 1e-8
        # statsmodels' pvalue_two_sided uses the normal distribution too
        assert abs(res.components["p_value"] - sm.pvalue_two_sided) < 1e-10


@settings(max_examples=200, deadline=None, derandomize=True)
@given(tables(), st.sampled_from(WEIGHTS))
def test_weighted_kappa_matches_statsmodels_and_sklearn(t: np.ndarray, weights: Literal["linear", "quadratic"]) -> None:
    res = ag.weighted_kappa_table(t, weights, n_boot=0)
    assert res.name == f"weighted_kappa_{weights}"
    if _single_cell(t):
        assert not res.defined and res.undefined_reason.endswith(".")  # type: ignore[union-attr]
        return
    sm = sm_cohens_kappa(t, wt=weights)
    assert abs(res.value - sm.kappa) < EXACT
    _same_se(res.se_analytic, sm.std_kappa)
    a, b = _expand(t)
    V = t.shape[0]
    sk = cohen_kappa_score(a, b, labels=list(range(V)), weights=weights)
    assert abs(res.value - sk) < 1e-10
    # the label-vector form is the same estimate, with the units one of them missed left out
    a_miss, b_miss = np.append(a, [-1, 0]), np.append(b, [1, -1])
    vec = ag.weighted_kappa(a_miss, b_miss, V, weights, n_boot=0)
    assert abs(vec.value - res.value) < EXACT and vec.n_excluded == 2 and vec.n_units == t.sum()


@settings(max_examples=60, deadline=None, derandomize=True)
@given(tables(max_v=4), st.sampled_from(WEIGHTS))
def test_weighted_kappa_with_category_values_matches_statsmodels(
    t: np.ndarray, weights: Literal["linear", "quadratic"]
) -> None:
    values = np.array([0.0, 1.0, 3.0, 7.0])[: t.shape[0]]  # unequal steps: a real score scale
    res = ag.weighted_kappa_table(t, weights, values=values, n_boot=0)
    if _single_cell(t):
        assert not res.defined
        return
    sm = sm_cohens_kappa(t, weights=values, wt=weights)
    assert abs(res.value - sm.kappa) < EXACT
    _same_se(res.se_analytic, sm.std_kappa)


def test_weighted_kappa_counts_near_misses_less() -> None:
    # On an ordinal scale a one-step disagreement costs less than a two-step one: with only
    # near misses linear kappa is above Cohen's; with only far ones (two steps) it is below.
    near = np.array([[5, 2, 0], [2, 5, 2], [0, 2, 5]])
    far = np.array([[5, 0, 2], [0, 9, 0], [2, 0, 5]])
    for t, sign in ((near, 1), (far, -1)):
        gap = ag.weighted_kappa_table(t, n_boot=0).value - ag.cohen_kappa_table(t, n_boot=0).value
        assert sign * gap > 0.05, (t.tolist(), gap)


def test_irr_weighted_kappa_uses_the_observed_category_set() -> None:
    # PROVENANCE.md gotcha 2: R irr's kappa2 ranks the categories the two raters used. Raters 2
    # and 3 of irr's `anxiety` never say 5; on the declared 1..6 scale the value differs.
    r2 = np.array([3, 6, 4, 6, 2, 4, 2, 4, 3, 3, 2, 3, 3, 3, 2, 2, 1, 3, 3, 4])
    r3 = np.array([2, 1, 4, 4, 3, 2, 1, 6, 1, 1, 1, 2, 3, 3, 1, 1, 3, 3, 2, 2])
    observed = np.array([1, 2, 3, 4, 6])
    rank = {v: k for k, v in enumerate(observed)}
    irr = ag.weighted_kappa([rank[x] for x in r2], [rank[x] for x in r3], 5, "linear", n_boot=0)
    assert round(irr.value, 7) == 0.1459075
    declared = ag.weighted_kappa(r2 - 1, r3 - 1, 6, "linear", n_boot=0)  # values 0..5: 6 sits 2 above 4
    assert abs(declared.value - irr.value) > 0.01


def test_kappa_bootstrap_interval_and_analytic_se_agree() -> None:
    rng = np.random.default_rng(4)
    truth = rng.integers(0, 4, 800)
    a = np.clip(truth + rng.choice([-1, 0, 0, 0, 1], 800), 0, 3)
    b = np.clip(truth + rng.choice([-1, 0, 0, 1], 800), 0, 3)
    for weights in WEIGHTS:
        res = ag.weighted_kappa(a, b, 4, weights, n_boot=2000, seed=1)
        assert res.ci_low < res.value < res.ci_high and res.n_boot == 2000 and res.n_boot_undefined == 0
        assert res.se == pytest.approx(res.se_analytic, rel=0.15)
        assert res.se_jackknife == pytest.approx(res.se_analytic, rel=0.15)
        assert res == ag.weighted_kappa(a, b, 4, weights, n_boot=2000, seed=1)  # seeded
    cohen = ag.cohen_kappa(a, b, 4, n_boot=2000, seed=1)
    assert cohen.se == pytest.approx(cohen.se_analytic, rel=0.15)


def test_kappa_undefined_cases_say_why() -> None:
    one = ag.weighted_kappa_table([[7, 0, 0], [0, 0, 0], [0, 0, 0]], n_boot=100)
    assert not one.defined and math.isnan(one.value) and math.isnan(one.se_analytic)
    assert "one category" in one.undefined_reason  # type: ignore[operator]
    tiny = ag.weighted_kappa([0, -1], [1, 2], 3, "quadratic")
    assert not tiny.defined and "at least two units" in tiny.undefined_reason  # type: ignore[operator]
    assert tiny.n_excluded == 1
    # A replicate that happens to hold one category is undefined, counted, never 1.
    rare = ag.cohen_kappa_table([[0, 1], [0, 9]], n_boot=500, seed=0)
    assert rare.defined and 0 < rare.n_boot_undefined < 500
    json.dumps(one.to_dict(), allow_nan=False)


@pytest.mark.parametrize(
    "call",
    [
        lambda: ag.weighted_kappa_table([[1, 2], [3, 4]], "cubic"),  # type: ignore[arg-type]
        lambda: ag.weighted_kappa_table([[1, 2], [3, 4]], values=[1.0, 1.0]),
        lambda: ag.weighted_kappa_table([[1, 2], [3, 4]], values=[1.0, 2.0, 3.0]),
        lambda: ag.weighted_kappa_table([[1, 2], [3, 4]], values=[0.0, np.inf]),
        lambda: ag.weighted_kappa_table([[1, 2, 3], [3, 4, 5]]),
        lambda: ag.weighted_kappa([0, 1], [0], 2),
        lambda: ag.weighted_kappa([0, 3], [0, 1], 2),
        lambda: ag.cohen_kappa_table([[1, -2], [3, 4]]),
    ],
)
def test_kappa_bad_input_raises_a_sentence(call: Callable[[], object]) -> None:
    with pytest.raises(ValueError) as exc:
        call()
    msg = str(exc.value)
    assert msg.endswith(".") and len(msg.split()) >= 5, msg


# --------------------------------------------------------------------------------------------
# Fleiss' z
# --------------------------------------------------------------------------------------------


def test_fleiss_z_only_where_it_is_defined() -> None:
    tc4 = np.array([[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1]])
    res = ag.fleiss_kappa(tc4, n_boot=0)
    c = res.components
    assert c["z"] == pytest.approx(res.value / c["se_h0"]) and 0 <= c["p_value"] <= 1
    # The null SE from its closed form, in exact arithmetic.
    N, r = 5, 14
    p = [Fraction(int(x), N * r) for x in tc4.sum(axis=0)]
    pq = sum(pj * (1 - pj) for pj in p)
    var0 = 2 * (pq * pq - sum(pj * (1 - pj) * (1 - 2 * pj) for pj in p)) / (pq * pq * N * r * (r - 1))
    assert abs(c["se_h0"] - math.sqrt(var0)) < EXACT
    # The missing-data generalisation has no null variance here: no z rather than a wrong one.
    assert "z" not in ag.fleiss_kappa(np.array([[2, 0], [1, 1], [0, 1]]), missing="gwet", n_boot=0).components
    assert "z" not in ag.fleiss_kappa(np.array([[3, 0], [3, 0]]), n_boot=0).components  # undefined


# --------------------------------------------------------------------------------------------
# Brennan-Prediger
# --------------------------------------------------------------------------------------------


@st.composite
def complete_counts(draw: st.DrawFn) -> np.ndarray:
    """(U, V) count matrix with the same number of ratings r >= 2 per unit."""
    V = draw(st.integers(2, 5))
    r = draw(st.integers(2, 6))
    U = draw(st.integers(2, 20))
    rows = [np.bincount(draw(st.lists(st.integers(0, V - 1), min_size=r, max_size=r)), minlength=V) for _ in range(U)]
    return np.array(rows)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(complete_counts())
def test_brennan_prediger_is_randolphs_kappa_on_complete_data(counts: np.ndarray) -> None:
    res = ag.brennan_prediger(counts, n_boot=0)
    assert abs(res.value - sm_fleiss_kappa(counts, method="randolph")) < EXACT
    randolph = ag.randolph_kappa(counts, n_boot=0)
    assert randolph.name == "randolph_kappa" and abs(randolph.value - res.value) < EXACT


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.integers(2, 5).flatmap(
        lambda V: st.tuples(
            st.just(V), st.lists(st.lists(st.integers(0, 4), min_size=V, max_size=V), min_size=1, max_size=20)
        )
    )
)
def test_brennan_prediger_with_missing_ratings_exact(data: tuple[int, list[list[int]]]) -> None:
    V, rows = data
    counts = np.array(rows)
    res = ag.brennan_prediger(counts, n_boot=0)
    pairable = [r for r in rows if sum(r) >= 2]
    if len(pairable) < 2:
        assert not res.defined and "pairable" in res.undefined_reason  # type: ignore[operator]
        return
    p_a = sum(Fraction(sum(x * (x - 1) for x in r), sum(r) * (sum(r) - 1)) for r in pairable) / len(pairable)
    want = (p_a - Fraction(1, V)) / (1 - Fraction(1, V))
    assert abs(res.value - want) < EXACT and res.n_units == len(pairable)


def test_brennan_prediger_cases() -> None:
    # One category only: raw agreement is real and the chance term fixed, so BP = 1 (defined).
    assert ag.brennan_prediger(np.array([[3, 0], [2, 0]]), n_boot=0).value == 1.0
    assert "two declared categories" in ag.brennan_prediger(np.array([[3], [2]])).undefined_reason  # type: ignore[operator]
    tc3 = np.repeat([[0, 2], [1, 1]], [90, 10], axis=0)
    res = ag.brennan_prediger(tc3, n_boot=1000, seed=3)
    assert res.value == pytest.approx(0.8) and res.ci_low < 0.8 < res.ci_high
    assert res.se == pytest.approx(res.se_jackknife, rel=0.15)


# --------------------------------------------------------------------------------------------
# Conger's kappa
# --------------------------------------------------------------------------------------------


def _frac_conger(codes: np.ndarray, V: int) -> Fraction | None:
    """irrCAC conger.kappa.raw in exact arithmetic: p_a as Gwet; p_e = sum_k (pbar_k^2 - s_k^2 / r)."""
    raters = [j for j in range(codes.shape[1]) if (codes[:, j] >= 0).any()]
    r = len(raters)
    pa, n2 = Fraction(0), 0
    for row in codes.tolist():
        n = [sum(1 for x in row if x == k) for k in range(V)]
        m = sum(n)
        if m >= 2:
            n2 += 1
            pa += Fraction(sum(x * (x - 1) for x in n), m * (m - 1))
    if n2 < 2 or r < 2:
        return None
    pa /= n2
    p = [[Fraction(int((codes[:, j] == k).sum()), int((codes[:, j] >= 0).sum())) for k in range(V)] for j in raters]
    pe = Fraction(0)
    for k in range(V):
        mean = sum((p[g][k] for g in range(r)), Fraction(0)) / r
        var = sum(((p[g][k] - mean) ** 2 for g in range(r)), Fraction(0)) / (r - 1)
        pe += mean * mean - var / r
    return None if pe == 1 else (pa - pe) / (1 - pe)


@st.composite
def label_matrices(draw: st.DrawFn) -> tuple[np.ndarray, int]:
    V = draw(st.integers(2, 4))
    J = draw(st.integers(2, 5))
    U = draw(st.integers(2, 25))
    cells = draw(st.lists(st.integers(-1, V - 1), min_size=U * J, max_size=U * J))
    return np.array(cells).reshape(U, J), V


@settings(max_examples=200, deadline=None, derandomize=True)
@given(label_matrices())
def test_conger_matches_exact_irrcac_formula(data: tuple[np.ndarray, int]) -> None:
    codes, V = data
    res = ag.conger_kappa(codes, V, n_boot=0)
    want = _frac_conger(codes, V)
    if res.defined:
        assert want is not None and abs(res.value - want) < EXACT, (res.value, want)
    else:
        assert math.isnan(res.value) and res.undefined_reason.endswith(".")  # type: ignore[union-attr]


@settings(max_examples=100, deadline=None, derandomize=True)
@given(tables())
def test_conger_with_two_complete_raters_is_cohen(t: np.ndarray) -> None:
    a, b = _expand(t)
    res = ag.conger_kappa(np.column_stack([a, b]), t.shape[0], n_boot=0)
    if _single_cell(t):
        assert not res.defined
        return
    assert abs(res.value - sm_cohens_kappa(t).kappa) < EXACT


def test_conger_irrcac_moves_one_rating() -> None:
    # PROVENANCE.md gotcha 1: irrCAC's raw4raters puts unit 12's lone value under rater 3, not
    # observer B as Krippendorff's C data do. Alpha cannot tell; Conger's rater shares can.
    k2011 = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, -1, -1, -1],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, -1, 3],
            [-1, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, -1],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, -1],
        ]
    ).T
    codes = np.where(k2011 > 0, k2011 - 1, -1)
    irrcac = codes.copy()
    irrcac[11, 1], irrcac[11, 2] = -1, codes[11, 1]
    assert round(ag.conger_kappa(irrcac, 5, n_boot=0).value, 5) == 0.76282
    assert abs(ag.conger_kappa(codes, 5, n_boot=0).value - 0.76282) > 1e-4
    assert ag.krippendorff_alpha(ag.counts_from_codes(codes, 5), n_boot=0).value == pytest.approx(
        ag.krippendorff_alpha(ag.counts_from_codes(irrcac, 5), n_boot=0).value
    )


def test_conger_bootstrap_keeps_raters_and_says_why_when_undefined() -> None:
    rng = np.random.default_rng(8)
    truth = rng.integers(0, 2, 600)
    codes = np.column_stack([np.where(rng.random(600) < acc, truth, 1 - truth) for acc in (0.9, 0.8, 0.7)])
    codes[rng.random(codes.shape) < 0.05] = -1
    res = ag.conger_kappa(codes, 2, n_boot=1000, seed=2)
    assert res.ci_low < res.value < res.ci_high and res.se == pytest.approx(res.se_jackknife, rel=0.15)
    assert res.components["n_raters"] == 3 and res == ag.conger_kappa(codes, 2, n_boot=1000, seed=2)
    only_one = ag.conger_kappa(np.array([[0, -1], [1, -1], [0, -1]]), 2)
    assert "two raters with a rating" in only_one.undefined_reason  # type: ignore[operator]
    same = ag.conger_kappa(np.array([[0, 0], [0, 0], [0, 0]]), 2)
    assert not same.defined and "one category" in same.undefined_reason  # type: ignore[operator]


# --------------------------------------------------------------------------------------------
# The summary: new coefficients and the votes dropped as unsure
# --------------------------------------------------------------------------------------------


def _votes(rows: list[tuple[int, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["round_item_id", "annotator", "verdict"])


def test_binary_summary_reports_the_unsure_votes_it_dropped() -> None:
    votes = _votes(
        [(1, "A1", "harmful"), (1, "A2", "harmful"), (1, "A3", "unsure")]
        + [(2, "A1", "safe"), (2, "A2", "unsure"), (2, "A3", "unsure")]
        + [(3, "A1", "safe"), (3, "A2", "safe"), (3, "A3", "safe")]
        + [(4, "A1", "harmful"), (4, "A2", "safe")]
        + [(5, "A1", "unsure"), (5, "A2", "unsure")]
    )
    codes, counts, items, dropped = votes_mod.vote_matrix_with_dropped(votes, ("harmful", "safe"), ["A1", "A2", "A3"])
    assert items == [1, 2, 3, 4, 5] and dropped.tolist() == [1, 2, 0, 0, 2]
    # The same codes and counts as vote_matrix, which drops the unsure votes silently.
    want = votes_mod.vote_matrix(votes, ("harmful", "safe"), ["A1", "A2", "A3"])
    np.testing.assert_array_equal(codes, want[0])
    np.testing.assert_array_equal(counts, want[1])
    s = ag.agreement_summary(counts, ["harmful", "safe"], labels=codes, dropped=dropped, n_boot=0)
    d = s.dropped
    assert (d.labels, d.n_votes, d.n_dropped) == (("unsure",), 8, 5)
    assert d.share == pytest.approx(5 / 13) and d.n_units_with_dropped == 3
    assert d.n_units_unpairable == 2  # items 2 and 5 had two or more votes, now fewer than two
    out = json.loads(json.dumps(s.to_dict(), allow_nan=False))
    assert out["dropped"]["n_dropped"] == 5 and out["brennan_prediger"]["value"] is not None
    assert out["conger_kappa"]["name"] == "conger_kappa"
    # The 3-way set drops nothing and says so.
    three = votes_mod.vote_matrix_with_dropped(votes, ("harmful", "safe", "unsure"), ["A1", "A2", "A3"], ())
    s3 = ag.agreement_summary(three[1], ["harmful", "safe", "unsure"], labels=three[0], n_boot=0)
    assert (s3.dropped.n_dropped, s3.dropped.share, s3.dropped.labels) == (0, 0.0, ())
    assert s3.dropped.n_votes == 13


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 8), st.sampled_from(["A1", "A2", "A3"]), st.sampled_from(["harmful", "safe", "unsure"])
        ),
        max_size=30,
    )
)
def test_dropped_votes_are_the_unsure_column(rows: list[tuple[int, str, str]]) -> None:
    # One current vote per (item, annotator), as current_labels leaves them.
    votes = _votes(rows).drop_duplicates(["round_item_id", "annotator"], keep="last")
    codes, counts, items, dropped = votes_mod.vote_matrix_with_dropped(votes, ("harmful", "safe"), ["A1", "A2", "A3"])
    _, counts3, items3 = votes_mod.vote_matrix(votes, ("harmful", "safe", "unsure"), ["A1", "A2", "A3"])
    assert items == items3
    np.testing.assert_array_equal(counts, counts3[:, :2])
    np.testing.assert_array_equal(dropped, counts3[:, 2])
    d = ag.dropped_votes(counts, dropped)
    assert d.n_votes + d.n_dropped == len(votes)


def test_summary_keeps_seeded_values_and_adds_coefficients() -> None:
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 2, 400)
    codes = np.column_stack([np.where(rng.random(400) < acc, truth, 1 - truth) for acc in (0.9, 0.85, 0.8)])
    counts = ag.counts_from_codes(codes, 2)
    s = ag.agreement_summary(counts, ["harmful", "safe"], labels=codes, n_boot=300, seed=4)
    assert s.alpha == ag.krippendorff_alpha(counts, n_boot=300, seed=4)
    assert s.brennan_prediger == ag.brennan_prediger(counts, n_boot=300, seed=4)
    assert s.conger_kappa == ag.conger_kappa(codes, 2, n_boot=300, seed=4)
    assert ag.agreement_summary(counts, ["harmful", "safe"], n_boot=0).conger_kappa is None
    pk = s.pairwise_cohen
    assert pk is not None and all(k.n_boot == 0 and k.se_analytic > 0 for _, _, k in pk.pairs)


@pytest.mark.parametrize(
    "call",
    [
        lambda: ag.dropped_votes([[1, 1]], [1, 2]),
        lambda: ag.dropped_votes([[1, 1]], [-1]),
        lambda: ag.dropped_votes([[1, 1]], [0.5]),
        lambda: votes_mod.vote_matrix_with_dropped(_votes([]), ("harmful", "unsure"), ["A1"]),
    ],
)
def test_dropped_bad_input_raises_a_sentence(call: Callable[[], object]) -> None:
    with pytest.raises(ValueError) as exc:
        call()
    msg = str(exc.value)
    assert msg.endswith(".") and len(msg.split()) >= 5, msg
