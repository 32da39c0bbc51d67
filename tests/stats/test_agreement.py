"""Tests for annotate.stats.agreement (and Dawid-Skene in annotate.stats.aggregation).

Reference values come from three independent places:

* the published vectors in ``data/agreement_vectors/agreement_test_vectors.json`` (looped over,
  so a new vector is picked up automatically; every key is classified and computed, none is
  skipped, and an unknown kind fails the test so that it gets a decision);
* exact rationals from ``docs/methods.md`` section 7, checked to 1e-9 (1e-12 in practice);
* ``krippendorff.alpha`` 0.9.0 and small ``fractions.Fraction`` re-implementations written here
  directly from the formulas, on random data.

The kappas added for issue #13 (weighted, Brennan-Prediger, Conger, analytic SEs, z tests) are
checked against statsmodels and scikit-learn in ``test_agreement_kappas.py``.
"""

from __future__ import annotations

import csv
import json
import math
import re
import time
import warnings
from fractions import Fraction
from typing import Any, Literal, cast

import krippendorff
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotate.stats import adjudication, aggregation
from annotate.stats import agreement as ag
from annotate.stats.agreement import votes
from tests.data_files import AGREEMENT_VECTORS

# --------------------------------------------------------------------------------------------
# Published vectors
# --------------------------------------------------------------------------------------------

# In the repository (tests/data/agreement_vectors, with its provenance): never skipped for want of it.
VECTOR_DIR = AGREEMENT_VECTORS

LEVELS: tuple[ag.Level, ...] = ("nominal", "ordinal", "interval", "ratio")

# Every published key is classified and computed; an unclassified key fails (see _classify), and
# nothing is skipped by name.
_WEIGHTED = re.compile(
    r"weighted_kappa_(?P<w1>linear|quadratic)"  # a contingency table (SAS)
    r"|(?P<subset>[a-z0-9]+)_(?P<w2>linear|quadratic)"  # a named pair of label vectors (scikit-learn)
    r"|kappa_(?P<w3>equal|squared)_weights_r(?P<a>\d)r(?P<b>\d)"  # R irr's kappa2 names, a rater pair
)


def _classify(vector: dict[str, Any], key: str) -> tuple[str, ...]:
    """Map a published key to (kind, detail, ...), or ("unknown", key)."""
    coef = vector["coefficient"]
    if key in LEVELS and "krippendorff_alpha" in coef:
        return ("alpha", key)
    if key == "krippendorff_alpha":
        return ("alpha", "nominal")
    if key in ("fleiss_kappa", "scott_pi"):  # Scott's pi = Fleiss' kappa with two raters
        return ("fleiss", "value")
    if key in ("P_bar", "P_e_bar"):
        return ("fleiss", key)
    if key == "z" and "fleiss_kappa" in coef:  # R irr's kappam.fleiss z test
        return ("fleiss", "z")
    if key == "gwet_ac1":
        return ("ac1", "value")
    if key == "percent_agreement":
        return ("percent", "value")
    if key == "brennan_prediger":
        return ("bp", "value")
    if key == "conger_kappa":
        return ("conger", "value")
    if key in ("p_o", "p_e"):
        return ("cohen", key)
    if key == "cohen_kappa_ase":  # SAS's asymptotic SE
        return ("cohen", "se_analytic", "", "", "")
    # Unweighted Cohen, optionally on a named data subset ("table4_", "weighting_") or a rater
    # pair ("_r2r3"). Matched before the weighted forms: "weighting_cohen_kappa" is unweighted.
    m = re.fullmatch(r"(?:(?P<subset>\w+?)_)?cohen_kappa(?:_r(?P<a>\d)r(?P<b>\d))?", key)
    if m:
        return ("cohen", "value", m["subset"] or "", m["a"] or "", m["b"] or "")
    m = _WEIGHTED.fullmatch(key)
    if m:
        w = m["w1"] or m["w2"] or {"equal": "linear", "squared": "quadratic"}[m["w3"]]
        return ("weighted", w, m["subset"] or "", m["a"] or "", m["b"] or "")
    return ("unknown", key)


def _decimals(x: float) -> int:
    text = repr(float(x))
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def _cases() -> list[Any]:
    vectors = json.loads((VECTOR_DIR / "agreement_test_vectors.json").read_text())["vectors"]
    out = []
    for v in vectors:
        for key, want in v.get("published", {}).items():
            out.append(pytest.param(v, key, want, v["published_digits"], id=f"{v['id']}:{key}"))
        for key, want in v.get("reference_impl", {}).items():
            if key.startswith("_"):
                continue
            # Reference implementations print more digits than the papers; same rule, own digits.
            out.append(pytest.param(v, key, want, _decimals(want), id=f"{v['id']}:ref:{key}"))
    return out


def _reliability(v: dict[str, Any]) -> ag.LabelMatrix:
    """Rows = observers, columns = units, whatever the vector's layout."""
    layout = v["layout"]
    if "data_file" in v:
        # CSV: one row per unit, first column the unit id, '.' = missing -> transpose.
        with open(VECTOR_DIR / v["data_file"], newline="") as fh:
            rows = list(csv.reader(fh))[1:]
        grid = [[math.nan if x == "." else float(x) for x in r[1:]] for r in rows]
        return ag.label_matrix_from_reliability_data(np.array(grid).T)
    data = v["data"]
    if layout.startswith("subjects x raters"):
        data = [list(col) for col in zip(*data, strict=True)]
    elif not layout.startswith("reliability_data"):
        raise AssertionError(f"unexpected layout for rating data: {layout}")
    if any(isinstance(x, str) for row in data for x in row):
        return ag.label_matrix_from_reliability_data(np.array(data, dtype=object))
    return ag.label_matrix_from_reliability_data(
        np.array([[math.nan if x is None else x for x in row] for row in data], dtype=float)
    )


def _table_to_counts(table: Any) -> np.ndarray:
    """Two-rater contingency table (V, V) -> count matrix with one row per unit."""
    t = np.asarray(table)
    V = t.shape[0]
    rows = [
        np.eye(V, dtype=int)[a] + np.eye(V, dtype=int)[b] for a in range(V) for b in range(V) for _ in range(t[a, b])
    ]
    return np.array(rows)


def _parse_label_vector(expr: str) -> np.ndarray:
    """'[0]*46+[1]*44+[2]*10' -> array, without eval."""
    parts = re.findall(r"\[(\d+)\]\*(\d+)", expr)
    assert "".join(f"[{a}]*{b}" for a, b in parts) == expr.replace(" ", "").replace("+", ""), expr
    return np.concatenate([np.full(int(n), int(c)) for c, n in parts])


def _compute(v: dict[str, Any], kind: tuple[str, ...]) -> float:
    layout = v["layout"]
    table = counts = lm = None
    if layout.startswith("contingency table"):
        table = np.array(v["data"])
        counts = _table_to_counts(table)
    elif layout.startswith("counts table"):
        counts = np.array(v["data"])
    elif layout.startswith("two label vectors"):
        pass
    else:
        lm = _reliability(v)
        counts = lm.counts()

    what = kind[0]
    if what in ("cohen", "weighted"):
        weights = cast(Literal["linear", "quadratic"], kind[1])
        if table is not None:
            if what == "cohen":
                res = ag.cohen_kappa_table(table, n_boot=0)
            else:
                res = ag.weighted_kappa_table(table, weights, n_boot=0)
        elif layout.startswith("two label vectors"):
            pair = v["data"][kind[2]]
            a, b = _parse_label_vector(pair["y1"]), _parse_label_vector(pair["y2"])
            K = int(max(a.max(), b.max())) + 1
            res = (
                ag.cohen_kappa(a, b, K, n_boot=0) if what == "cohen" else ag.weighted_kappa(a, b, K, weights, n_boot=0)
            )
        else:
            assert lm is not None and kind[3] and kind[4], f"no rater pair for {v['id']}"
            ja, jb = int(kind[3]) - 1, int(kind[4]) - 1
            # R irr's kappa2 weights the categories the two raters used, by rank (PROVENANCE.md):
            # the pair's own label matrix has exactly those categories, coded by rank.
            pair_lm = ag.label_matrix_from_reliability_data(lm.reliability_data()[[ja, jb]])
            codes, K = pair_lm.codes, len(pair_lm.categories)
            if what == "cohen":
                res = ag.cohen_kappa(codes[:, 0], codes[:, 1], K, n_boot=0)
            else:
                res = ag.weighted_kappa(codes[:, 0], codes[:, 1], K, weights, n_boot=0)
        if kind[1] == "se_analytic":
            return res.se_analytic
        return res.value if kind[1] in ("value", "linear", "quadratic") else res.components[kind[1]]
    if what == "conger":
        lm = lm if lm is not None else _reliability(v)
        return ag.conger_kappa(lm.codes, len(lm.categories), n_boot=0).value
    assert counts is not None, f"no count matrix for {v['id']}"
    if what == "alpha":
        level = cast(ag.Level, kind[1])
        values = np.array(lm.categories, dtype=float) if lm is not None and level != "nominal" else None
        return ag.krippendorff_alpha(counts, level=level, values=values, n_boot=0).value
    if what == "fleiss":
        m = counts.sum(axis=1)
        # Vectors with missing ratings publish irrCAC's fleiss.kappa.raw, i.e. Gwet's
        # missing-data generalisation; on complete data both conventions coincide.
        missing: Literal["drop", "gwet"] = "drop" if (m == m.max()).all() else "gwet"
        res = ag.fleiss_kappa(counts, missing=missing, n_boot=0)
        return res.value if kind[1] == "value" else res.components[kind[1]]
    if what == "ac1":
        return ag.gwet_ac1(counts, n_boot=0).value
    if what == "percent":
        return ag.percent_agreement(counts, n_boot=0).value
    if what == "bp":
        return ag.brennan_prediger(counts, n_boot=0).value
    raise AssertionError(kind)


@pytest.mark.parametrize(("vector", "key", "want", "digits"), _cases())
def test_published_vector(vector: dict[str, Any], key: str, want: float, digits: int) -> None:
    kind = _classify(vector, key)
    assert kind[0] != "unknown", f"{vector['id']}: published key {key!r} is not classified; classify and compute it."
    got = _compute(vector, kind)
    # The data README's rule: round to the published digits, accept one unit of the last digit.
    assert abs(round(got, digits) - want) <= 10.0**-digits * 1.0001, (got, want)


def test_vector_file_is_found_here() -> None:
    """Guard against the whole published suite silently skipping: the vectors must be found."""
    assert (VECTOR_DIR / "agreement_test_vectors.json").is_file()
    assert len(_cases()) >= 40


# --------------------------------------------------------------------------------------------
# Exact values of methods.md section 7
# --------------------------------------------------------------------------------------------

K2011_C = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]
# irrCAC's cac.raw4raters: the same data as units x raters, with unit 12's lone value moved.
RAW4: list[list[int | None]] = [
    [1, 1, None, 1],
    [2, 2, 3, 2],
    [3, 3, 3, 3],
    [3, 3, 3, 3],
    [2, 2, 2, 2],
    [1, 2, 3, 4],
    [4, 4, 4, 4],
    [1, 1, 2, 1],
    [2, 2, 2, 2],
    [None, 5, 5, 5],
    [None, None, 1, 1],
    [None, None, 3, None],
]
TC4 = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]
EXACT = 1e-12


def _nan(rows: list[list[Any]]) -> np.ndarray:
    return np.array([[math.nan if x is None else x for x in r] for r in rows], dtype=float)


def test_tc1_alpha_nominal_k2011_c() -> None:
    res = ag.krippendorff_alpha(ag.counts_from_reliability_data(_nan(K2011_C)), n_boot=0)
    assert abs(res.value - Fraction(113, 152)) < EXACT
    assert res.n_units == 11 and res.n_excluded == 1  # unit 12 is not pairable


def test_tc3_kappa_paradox() -> None:
    # Categories (H, S); 90 (S,S), 5 (H,S), 5 (S,H), 0 (H,H).
    table = np.array([[0, 5], [5, 90]])
    counts = _table_to_counts(table)
    kappa = ag.cohen_kappa_table(table)
    assert abs(kappa.value - Fraction(-1, 19)) < EXACT
    assert abs(kappa.components["p_o"] - 0.9) < EXACT
    assert abs(ag.gwet_ac1(counts, n_boot=0).value - Fraction(161, 181)) < EXACT
    assert abs(ag.krippendorff_alpha(counts, n_boot=0).value - Fraction(-9, 190)) < EXACT
    assert abs(ag.percent_agreement(counts, n_boot=0).value - 0.9) < EXACT
    pos, neg = ag.category_agreement(counts, n_boot=0)
    assert pos.value == 0.0 and abs(neg.value - Fraction(18, 19)) < EXACT
    warning = ag.prevalence_warning(counts, categories=["harmful", "safe"])
    assert warning is not None and "safe" in warning and "95.0%" in warning


def test_tc4_fleiss() -> None:
    res = ag.fleiss_kappa(np.array(TC4), n_boot=0)
    assert abs(res.value - Fraction(4211, 20059)) < EXACT
    assert res.n_excluded == 0 and res.components["n_raters"] == 14


def test_tc5_ac1_with_missing() -> None:
    counts = ag.counts_from_reliability_data(_nan(RAW4).T)
    res = ag.gwet_ac1(counts, n_boot=0)
    assert abs(res.components["p_a"] - Fraction(9, 11)) < EXACT
    assert abs(res.components["p_e"] - Fraction(877, 4608)) < EXACT
    assert abs(res.value - Fraction(31825, 41041)) < EXACT
    assert abs(ag.krippendorff_alpha(counts, n_boot=0).value - Fraction(113, 152)) < EXACT
    assert abs(ag.percent_agreement(counts, n_boot=0).value - Fraction(9, 11)) < EXACT
    # irrCAC fleiss.kappa.raw = 0.76117; exactly (9/11 - p_e) / (1 - p_e) with p_e = sum pi_q^2.
    assert abs(ag.fleiss_kappa(counts, missing="gwet", n_boot=0).value - Fraction(7343, 9647)) < EXACT
    # Default Fleiss drops the 4 incomplete units and says so.
    drop = ag.fleiss_kappa(counts, n_boot=0)
    assert drop.n_units == 8 and drop.n_excluded == 4 and drop.components["n_incomplete_dropped"] == 4


def test_scott_pi_is_fleiss_with_two_raters_not_cohen() -> None:
    table = np.array([[13, 0, 0], [0, 20, 7], [0, 4, 56]])  # gwet_cont3x3abstractors
    assert abs(ag.fleiss_kappa(_table_to_counts(table), n_boot=0).value - 0.7962397) < 1e-7
    assert abs(ag.cohen_kappa_table(table).value - 0.7964094) < 1e-7


# --------------------------------------------------------------------------------------------
# Random data: krippendorff.alpha and exact rational references
# --------------------------------------------------------------------------------------------


def _frac_alpha_nominal(counts: np.ndarray) -> Fraction | None:
    """Alpha from the coincidence-matrix definition, in exact arithmetic (loops on purpose)."""
    V = counts.shape[1]
    o = [[Fraction(0)] * V for _ in range(V)]
    for row in counts.tolist():
        m = sum(row)
        if m < 2:
            continue
        for c in range(V):
            for k in range(V):
                o[c][k] += Fraction(row[c] * row[k] - (row[c] if c == k else 0), m - 1)
    n_c = [sum(r) for r in o]
    n = sum(n_c)
    den = n * (n - 1) - sum(x * (x - 1) for x in n_c)
    if n == 0 or den == 0:
        return None
    return ((n - 1) * sum(o[c][c] for c in range(V)) - sum(x * (x - 1) for x in n_c)) / den


def _frac_gwet(counts: np.ndarray, chance: str) -> Fraction | None:
    """Gwet p_a / pi_q with AC1 or Fleiss chance term, exact (Gwet 2014 raw-data formulas)."""
    Q = counts.shape[1]
    pa, n2, pis, n1 = Fraction(0), 0, [Fraction(0)] * Q, 0
    for row in counts.tolist():
        m = sum(row)
        if m >= 1:
            n1 += 1
            pis = [p + Fraction(x, m) for p, x in zip(pis, row, strict=True)]
        if m >= 2:
            n2 += 1
            pa += Fraction(sum(x * (x - 1) for x in row), m * (m - 1))
    if n2 == 0:
        return None
    pa /= n2
    pis = [p / n1 for p in pis]
    pe = sum(p * (1 - p) for p in pis) / (Q - 1) if chance == "ac1" else sum(p * p for p in pis)
    return None if pe == 1 else (pa - pe) / (1 - pe)


@st.composite
def reliability_data(draw: st.DrawFn, max_categories: int = 4) -> tuple[np.ndarray, int]:
    """(J, U) float matrix of codes 0..K-1 with NaN holes."""
    J = draw(st.integers(2, 5))
    U = draw(st.integers(1, 25))
    K = draw(st.integers(2, max_categories))
    cells = draw(st.lists(st.integers(-1, K - 1), min_size=J * U, max_size=J * U))
    rel = np.array(cells, dtype=float).reshape(J, U)
    rel[rel < 0] = np.nan
    return rel, K


def _kripp(rel: np.ndarray, level: ag.Level) -> float | None:
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return float(krippendorff.alpha(reliability_data=rel, level_of_measurement=level))
    except ValueError:  # krippendorff raises for its undefined cases
        return None


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(reliability_data(), st.sampled_from(LEVELS))
def test_alpha_matches_krippendorff_package(data: tuple[np.ndarray, int], level: ag.Level) -> None:
    rel, K = data
    counts = ag.counts_from_reliability_data(rel, categories=range(K))
    res = ag.krippendorff_alpha(counts, level=level, values=np.arange(K, dtype=float), n_boot=0)
    want = _kripp(rel, level)
    if res.defined:
        assert want is not None and abs(res.value - want) <= 1e-12, (res.value, want)
    else:
        assert res.undefined_reason and math.isnan(res.value)
        # krippendorff agrees it is undefined, except with exactly one pairable unit, which we
        # refuse to summarise (documented policy) while the package returns a number.
        if res.n_units != 1:
            assert want is None or math.isnan(want)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(reliability_data(max_categories=5))
def test_coefficients_match_exact_rationals(data: tuple[np.ndarray, int]) -> None:
    rel, K = data
    counts = ag.counts_from_reliability_data(rel, categories=range(K))
    alpha = ag.krippendorff_alpha(counts, n_boot=0)
    ref = _frac_alpha_nominal(counts)
    if alpha.defined:
        assert ref is not None and abs(alpha.value - ref) < EXACT
    ac1 = ag.gwet_ac1(counts, n_boot=0)
    if ac1.defined:
        assert abs(ac1.value - _frac_gwet(counts, "ac1")) < EXACT  # type: ignore[operator]
    fl = ag.fleiss_kappa(counts, missing="gwet", n_boot=0)
    if fl.defined:
        assert abs(fl.value - _frac_gwet(counts, "fleiss")) < EXACT  # type: ignore[operator]
    # Complete-case Fleiss equals the generalised one on the complete units alone.
    m = counts.sum(axis=1)
    drop = ag.fleiss_kappa(counts, n_boot=0)
    if drop.defined:
        sub = counts[m == m.max()]
        assert abs(drop.value - _frac_gwet(sub, "fleiss")) < EXACT  # type: ignore[operator]


def test_alpha_many_patterns_fallback_path_matches_krippendorff() -> None:
    # 25 categories x up to 15 ratings: the mixed-radix key would overflow int64, so the
    # pattern step falls back to np.unique(axis=0).
    rng = np.random.default_rng(7)
    rel = rng.integers(0, 25, size=(15, 300)).astype(float)
    rel[rng.random(rel.shape) < 0.2] = np.nan
    counts = ag.counts_from_reliability_data(rel, categories=range(25))
    res = ag.krippendorff_alpha(counts, n_boot=50, seed=1)
    assert abs(res.value - _kripp(rel, "nominal")) < 1e-12  # type: ignore[operator]
    assert np.isfinite(res.ci_low) and res.n_boot == 50


# --------------------------------------------------------------------------------------------
# Bootstrap and jackknife
# --------------------------------------------------------------------------------------------


def _simulate(
    U: int, acc: tuple[float, ...], prevalence: float, seed: int, missing: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Binary truth with P(1) = prevalence; annotator j is right with probability acc[j].

    Returns the label matrix (U, J) with -1 for missing and the truth (U,).
    """
    rng = np.random.default_rng(seed)
    truth = (rng.random(U) < prevalence).astype(np.int64)
    right = rng.random((U, len(acc))) < np.asarray(acc)
    labels = np.where(right, truth[:, None], 1 - truth[:, None])
    labels[rng.random(labels.shape) < missing] = -1
    return labels, truth


@pytest.fixture(scope="module")
def sim_counts() -> np.ndarray:
    labels, _ = _simulate(1500, (0.92, 0.87, 0.80), 0.4, seed=11, missing=0.03)
    return ag.counts_from_codes(labels, 2)


def test_bootstrap_is_seeded(sim_counts: np.ndarray) -> None:
    a = ag.krippendorff_alpha(sim_counts, n_boot=500, seed=3)
    b = ag.krippendorff_alpha(sim_counts, n_boot=500, seed=3)
    c = ag.krippendorff_alpha(sim_counts, n_boot=500, seed=np.random.default_rng(3))
    d = ag.krippendorff_alpha(sim_counts, n_boot=500, seed=4)
    assert a == b == c
    assert (a.ci_low, a.ci_high) != (d.ci_low, d.ci_high)
    for fn in (ag.gwet_ac1, ag.fleiss_kappa, ag.percent_agreement):
        assert fn(sim_counts, n_boot=300, seed=5) == fn(sim_counts, n_boot=300, seed=5)


def test_bootstrap_se_agrees_with_jackknife_and_naive_loop(sim_counts: np.ndarray) -> None:
    res = ag.krippendorff_alpha(sim_counts, n_boot=2000, seed=0)
    assert res.se == pytest.approx(res.se_jackknife, rel=0.15)
    # Naive unit bootstrap: resample rows of the pairable count matrix and recompute.
    pair = sim_counts[sim_counts.sum(axis=1) >= 2]
    rng = np.random.default_rng(99)
    naive = [ag.krippendorff_alpha(pair[rng.integers(0, len(pair), len(pair))], n_boot=0).value for _ in range(300)]
    assert res.se == pytest.approx(np.std(naive, ddof=1), rel=0.2)
    assert np.mean(naive) == pytest.approx(np.mean([res.ci_low, res.ci_high]), abs=3 * res.se)
    for fn in (ag.gwet_ac1, ag.fleiss_kappa, ag.percent_agreement):
        c = fn(sim_counts, n_boot=2000, seed=0)
        assert c.se == pytest.approx(c.se_jackknife, rel=0.15), c.name


def test_intervals_contain_point_estimate(sim_counts: np.ndarray) -> None:
    summary = ag.agreement_summary(sim_counts, ["safe", "harmful"], n_boot=1000, seed=2)
    estimates: tuple[ag.AlphaResult | ag.Coefficient, ...] = (
        summary.alpha,
        summary.ac1,
        summary.fleiss_kappa,
        summary.percent_agreement,
        *summary.category_agreement,
    )
    for c in estimates:
        assert c.ci_low <= c.value <= c.ci_high, c
        assert c.n_boot == 1000 and c.n_boot_undefined == 0
    # q = P*(alpha < t) is a distribution function: monotone in t.
    assert summary.alpha.q_below(0.667) <= summary.alpha.q_below(0.8)
    assert summary.alpha.value < 0.667 and summary.alpha.q_below(0.667) > 0.9


def test_jackknife_equals_naive_leave_one_out() -> None:
    labels, _ = _simulate(40, (0.9, 0.8, 0.7), 0.5, seed=1, missing=0.1)
    counts = ag.counts_from_codes(labels, 2)
    pair = counts[counts.sum(axis=1) >= 2]
    N = len(pair)
    loo = np.array([ag.krippendorff_alpha(np.delete(pair, i, axis=0), n_boot=0).value for i in range(N)])
    se_naive = math.sqrt((N - 1) / N * ((loo - loo.mean()) ** 2).sum())
    assert abs(ag.krippendorff_alpha(counts, n_boot=0).se_jackknife - se_naive) < 1e-12


def test_undefined_replicates_are_counted_not_faked(monkeypatch) -> None:
    # Twenty units agree on "safe"; two pairable units hold the only "harmful" values. Resamples
    # that miss them have a single category: alpha is undefined there, not 1. (So few units of
    # the minority get no interval at all since issue #23: the minimum is switched off here.)
    from annotate.stats.agreement import _bootstrap

    monkeypatch.setattr(_bootstrap, "MIN_MINORITY_UNITS", 0)
    counts = np.array([[0, 2]] * 20 + [[1, 1], [2, 0]])
    res = ag.krippendorff_alpha(counts, n_boot=400, seed=0)
    assert res.defined and 0 < res.n_boot_undefined < 200
    assert np.isfinite(res.ci_low) and res.ci_high <= 1.0 and res.interval_note is None


def test_too_few_units_give_no_interval_and_no_verdict() -> None:
    """Issue #23: three perfectly agreeing units printed [1, 1] (676 of 2,000 replicates
    undefined) and the verdict "reliable"."""
    three = np.array([[2, 0], [0, 2], [2, 0]])
    res = ag.krippendorff_alpha(three, n_boot=2000, seed=0)
    assert res.value == 1.0 and np.isnan(res.ci_low) and np.isnan(res.ci_high)
    assert res.interval_note.startswith("too few units for an interval: 6 pairable values")
    assert ag.verdict_for(res.ci_low, ag.Thresholds()) == "undefined"
    assert ag.verdict_for(res, ag.Thresholds()) == "too few units for an interval"
    ac1 = ag.gwet_ac1(three, n_boot=2000, seed=0)
    assert np.isnan(ac1.ci_low) and ac1.interval_note.startswith("too few units")


def test_a_majority_of_undefined_replicates_or_a_zero_width_interval_is_no_interval(monkeypatch) -> None:
    from annotate.stats.agreement import _bootstrap as bs

    # A statistic defined only on resamples that hold the one rare unit exactly once, as the data
    # do: most resamples of ten units do not, so no interval is given (alpha itself rarely gets
    # there above the minimum of pairable values, which catches the small groups first)
    stat = bs._Statistic(
        lambda p: np.column_stack([(p[:, 0] == 2).astype(float), np.ones(len(p))]),
        lambda S: np.where(S[:, :1] == 1, S[:, 1:] / 10, np.nan),
    )
    pats, freq = bs._patterns(np.array([[0, 2]] * 9 + [[2, 0]]))
    fit = bs._fit(pats, freq, stat, bs._Resampling(1000, 1, 0.95), support=(100, 50))
    assert fit.n_undefined[0] > 500 and np.isnan(fit.ci_low[0])
    assert "undefined in" in fit.interval_notes[0] and "a majority" in fit.interval_notes[0]
    # 40 units in perfect agreement on both categories: every defined replicate is 1
    perfect = np.array([[0, 2]] * 20 + [[2, 0]] * 20)
    res = ag.krippendorff_alpha(perfect, n_boot=1000, seed=1)
    assert res.value == 1.0 and np.isnan(res.ci_low) and "zero-width" in res.interval_note
    assert ag.verdict_for(res, ag.Thresholds()) == "too few units for an interval"


# --------------------------------------------------------------------------------------------
# Undefined cases and invalid input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("counts", "alpha_text"),
    [
        (np.zeros((0, 3), dtype=int), "at least two pairable units"),
        (np.array([[1, 1, 0], [1, 0, 0], [0, 0, 1]]), "at least two pairable units"),
        (np.array([[3, 0, 0], [2, 0, 0], [0, 0, 1]]), "one category"),
        (np.array([[0, 0, 0], [0, 0, 0]]), "at least two pairable units"),
    ],
)
def test_undefined_cases_return_reasons(counts: np.ndarray, alpha_text: str) -> None:
    summary = ag.agreement_summary(counts, ["harmful", "safe", "unsure"], n_boot=100)
    assert math.isnan(summary.alpha.value) and alpha_text in summary.alpha.undefined_reason  # type: ignore[operator]
    for c in (summary.alpha, summary.ac1, summary.fleiss_kappa):
        assert not c.defined and c.value != 1.0 and c.undefined_reason.endswith(".")  # type: ignore[union-attr]
    out = json.loads(json.dumps(summary.to_dict(), allow_nan=False))
    assert out["alpha"]["value"] is None and out["alpha"]["undefined_reason"]


def test_single_category_keeps_raw_agreement() -> None:
    counts = np.array([[3, 0], [3, 0], [2, 0]])
    assert ag.percent_agreement(counts, n_boot=0).value == 1.0  # raw agreement really is 100 %
    assert "1 by construction" in ag.gwet_ac1(counts, n_boot=0).undefined_reason  # type: ignore[operator]
    assert not ag.fleiss_kappa(counts, n_boot=0).defined
    assert ag.prevalence_warning(counts) is not None


def test_fleiss_without_complete_units_says_so() -> None:
    res = ag.fleiss_kappa(np.array([[2, 0], [1, 1], [0, 2]]), n_raters=3)
    assert not res.defined and "none of the 3 units is complete" in res.undefined_reason  # type: ignore[operator]
    assert res.n_excluded == 3


def test_cohen_undefined_and_absent_category() -> None:
    assert "chance agreement is 1" in ag.cohen_kappa_table([[5, 0], [0, 0]]).undefined_reason  # type: ignore[operator]
    assert not ag.cohen_kappa([0, -1], [0, 1], 2).defined  # one unit rated by both
    per_cat = ag.category_agreement(np.array([[2, 0, 0], [1, 1, 0], [0, 2, 0]]), n_boot=0)
    assert per_cat[0].defined and per_cat[1].defined and not per_cat[2].defined


def _is_sentence(msg: str) -> bool:
    return msg.rstrip().endswith(".") and len(msg.split()) >= 5


@pytest.mark.parametrize(
    "bad",
    [
        np.array([1, 2, 3]),
        np.zeros((2, 2, 2)),
        np.array([[1, -1]]),
        np.array([[1.5, 0]]),
        np.array([[np.nan, 1]]),
        np.array([["a", "b"]]),
        np.zeros((3, 0)),
    ],
)
def test_invalid_counts_raise_value_error(bad: np.ndarray) -> None:
    for fn in (
        ag.krippendorff_alpha,
        ag.gwet_ac1,
        ag.fleiss_kappa,
        ag.percent_agreement,
        ag.prevalence_warning,
    ):
        with pytest.raises(ValueError) as exc:
            fn(bad)
        assert _is_sentence(str(exc.value)), str(exc.value)


def test_invalid_arguments_raise_value_error() -> None:
    counts = np.array([[1, 1], [2, 0]])
    calls = [
        lambda: ag.krippendorff_alpha(counts, level="metric"),  # type: ignore[arg-type]
        lambda: ag.krippendorff_alpha(counts, n_boot=-1),
        lambda: ag.krippendorff_alpha(counts, confidence=1.5),
        lambda: ag.krippendorff_alpha(counts, values=[1.0]),
        lambda: ag.krippendorff_alpha(counts, seed="x"),  # type: ignore[arg-type]
        lambda: ag.fleiss_kappa(counts, n_raters=1),
        lambda: ag.agreement_summary(counts, ["only_one"]),
        lambda: ag.agreement_summary(counts, ["a", "b"], labels=np.array([[0, 0], [0, 0]])),
        lambda: ag.counts_from_codes(np.array([[0, 2]]), 2),
        lambda: ag.counts_from_codes(np.array([[0, -2]]), 2),
        lambda: ag.cohen_kappa_table(np.ones((2, 3), dtype=int)),
        lambda: aggregation.dawid_skene(np.array([[0, 5]]), 2),
        lambda: ag.counts_from_reliability_data([[1, 2, 9]], categories=[1, 2]),
    ]
    for call in calls:
        with pytest.raises(ValueError) as exc:
            call()
        assert _is_sentence(str(exc.value)), str(exc.value)


# --------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------


def test_long_table_and_reliability_matrix_give_same_counts() -> None:
    rel = _nan(K2011_C)
    rows = [
        {"item_id": f"u{u:02d}", "annotator": obs, "label": rel[j, u]}
        for j, obs in enumerate("ABCD")
        for u in range(rel.shape[1])
    ]
    table = pd.DataFrame(rows).sample(frac=1.0, random_state=0)  # order must not matter
    lm = ag.label_matrix_from_long(table, categories=[1, 2, 3, 4, 5])
    assert lm.annotators == ("A", "B", "C", "D") and lm.items[0] == "u00"
    np.testing.assert_array_equal(lm.counts(), ag.counts_from_reliability_data(rel))
    np.testing.assert_array_equal(ag.counts_from_long(table, [1, 2, 3, 4, 5]), lm.counts())
    np.testing.assert_array_equal(lm.reliability_data(), rel - 1)  # codes are 0-based
    # -1 and NaN both mean "missing" in a label matrix
    codes_nan = np.where(lm.codes < 0, np.nan, lm.codes.astype(float))
    np.testing.assert_array_equal(ag.counts_from_codes(codes_nan, 5), lm.counts())


def test_long_table_checks() -> None:
    df = pd.DataFrame({"item_id": [1, 1, 2], "annotator": ["a", "a", "b"], "label": ["safe", "harmful", "safe"]})
    with pytest.raises(ValueError, match="more than one row"):
        ag.label_matrix_from_long(df, ["harmful", "safe"])
    df2 = pd.DataFrame({"item_id": [1, 2], "annotator": ["a", "a"], "label": ["safe", "maybe"]})
    with pytest.raises(ValueError, match="not among the categories"):
        ag.label_matrix_from_long(df2, ["harmful", "safe"])
    df3 = pd.DataFrame({"item_id": [1, 2], "annotator": ["a", "a"], "label": ["safe", None]})
    assert ag.label_matrix_from_long(df3, ["harmful", "safe"]).counts().tolist() == [[0, 1], [0, 0]]


def test_prevalence_warning_threshold_is_strict() -> None:
    assert ag.prevalence_warning(np.array([[2, 0]] * 9 + [[0, 2]])) is None  # exactly 90 %
    msg = ag.prevalence_warning(np.array([[2, 0]] * 19 + [[1, 1]]), categories=["safe", "harmful"])
    assert msg is not None and msg.startswith("Category safe holds 97.5%")


def test_summary_json_and_consistency(sim_counts: np.ndarray) -> None:
    labels, _ = _simulate(300, (0.9, 0.85, 0.8), 0.3, seed=5, missing=0.05)
    counts = ag.counts_from_codes(labels, 2)
    s = ag.agreement_summary(counts, ["safe", "harmful"], labels=labels, n_boot=200, seed=9)
    assert s.alpha == ag.krippendorff_alpha(counts, n_boot=200, seed=9)
    assert s.pairwise_cohen is not None and len(s.pairwise_cohen.pairs) == 3
    d = json.loads(json.dumps(s.to_dict(), allow_nan=False))
    assert set(d) >= {
        "alpha",
        "ac1",
        "fleiss_kappa",
        "percent_agreement",
        "category_agreement",
        "pairwise_cohen",
    }
    assert set(d["alpha"]["q"]) == {"0.667", "0.8"} and d["category_agreement"]["harmful"]["value"] > 0
    assert d["fleiss_kappa"]["components"]["n_incomplete_dropped"] == s.fleiss_kappa.n_excluded > 0


def test_pairwise_cohen_tc3_and_light() -> None:
    a = np.array([1] * 90 + [0] * 5 + [1] * 5)
    b = np.array([1] * 90 + [1] * 5 + [0] * 5)
    c = a.copy()
    pk = ag.pairwise_cohen_kappa(np.column_stack([a, b, c]), 2, annotators=["x", "y", "z"])
    mat = pk.matrix()
    assert abs(mat[0, 1] - Fraction(-1, 19)) < EXACT and mat[0, 2] == 1.0 and np.isnan(mat[1, 1])
    assert pk.light_kappa == pytest.approx((2 * -1 / 19 + 1.0) / 3)


# --------------------------------------------------------------------------------------------
# Dawid-Skene and per-annotator diagnostics
# --------------------------------------------------------------------------------------------

ACC = (0.92, 0.87, 0.80)


def test_dawid_skene_recovers_accuracies() -> None:
    labels, truth = _simulate(5000, ACC, 0.4, seed=21)
    res = aggregation.dawid_skene(labels, 2)
    assert res.converged and res.n_iter < 100
    for j, acc in enumerate(ACC):
        assert res.confusion[j, 0, 0] == pytest.approx(acc, abs=0.03)
        assert res.confusion[j, 1, 1] == pytest.approx(acc, abs=0.03)
    assert res.priors[1] == pytest.approx(0.4, abs=0.03)
    np.testing.assert_allclose(res.confusion.sum(axis=2), 1.0)
    # Unanimous units: the posterior mode is the unanimous label.
    unanimous = (labels == labels[:, :1]).all(axis=1)
    np.testing.assert_array_equal(res.labels[unanimous], labels[unanimous, 0])
    assert (res.labels == truth).mean() > 0.94
    sens, spec = res.sensitivity_specificity(positive=1)
    np.testing.assert_allclose(sens, ACC, atol=0.03)
    np.testing.assert_allclose(spec, ACC, atol=0.03)
    again = aggregation.dawid_skene(labels, 2)  # deterministic
    np.testing.assert_array_equal(again.posteriors, res.posteriors)
    json.dumps(res.to_dict(), allow_nan=False)


def test_dawid_skene_with_missing_and_unrated_units() -> None:
    labels, _ = _simulate(5000, ACC, 0.4, seed=22, missing=0.2)
    labels[:10] = -1  # ten units nobody rated
    res = aggregation.dawid_skene(labels.astype(float) * np.where(labels < 0, np.nan, 1.0), 2)
    for j, acc in enumerate(ACC):
        assert np.diag(res.confusion[j]) == pytest.approx([acc, acc], abs=0.04)
    np.testing.assert_allclose(res.posteriors[:10], np.tile(res.priors, (10, 1)))
    empty = aggregation.dawid_skene(np.full((3, 2), -1), 2)
    assert empty.n_iter == 0 and not empty.converged


def test_dawid_skene_is_fast_on_60k_units() -> None:
    labels, _ = _simulate(60_000, ACC, 0.4, seed=23, missing=0.03)
    start = time.perf_counter()
    res = aggregation.dawid_skene(labels, 2)
    assert time.perf_counter() - start < 10.0
    assert res.posteriors.shape == (60_000, 2)


def test_annotator_diagnostics_flag_random_annotator() -> None:
    labels, _ = _simulate(2000, (0.92, 0.9, 0.88, 0.5), 0.4, seed=31, missing=0.03)
    rng = np.random.default_rng(0)
    labels[:, 3] = np.where(labels[:, 3] >= 0, rng.integers(0, 2, len(labels)), -1)  # pure noise
    ds = aggregation.dawid_skene(labels, 2)
    diag = ag.annotator_diagnostics(labels, 2, annotators=["a", "b", "c", "noise"], dawid_skene_result=ds, positive=1)
    assert diag.flagged == ("noise",)
    noisy = diag.annotators[3]
    assert len(noisy.flags) == 2 and noisy.alpha_delta > 0.05 and noisy.kappa_with_consensus.value < 0.2
    for good in diag.annotators[:3]:
        assert good.kappa_with_consensus.value > 0.6 and good.alpha_delta < 0 and good.sensitivity > 0.8
    json.dumps(diag.to_dict(), allow_nan=False)


def test_leave_one_out_consensus_excludes_self() -> None:
    # Annotator 0 vs the others. Unit 0: others agree (1,1) -> consensus 1, annotator 0 says 0.
    # Unit 1: others split (0,1) -> no consensus. Unit 2: one other missing -> too few others.
    # Units 3-4: others agree with annotator 0.
    labels = np.array([[0, 1, 1], [0, 0, 1], [0, 0, -1], [1, 1, 1], [0, 0, 0]])
    d0 = ag.annotator_diagnostics(labels, 2).annotators[0]
    assert d0.n_consensus_units == 3 and d0.agreement_with_consensus == pytest.approx(2 / 3)
    # With min_others=1 unit 2 counts as well (the single other rating is its own majority).
    assert ag.annotator_diagnostics(labels, 2, min_others=1).annotators[0].n_consensus_units == 4


# --------------------------------------------------------------------------------------------
# Votes from the store: vote_matrix is the vectorised builder; the old loop is the reference
# --------------------------------------------------------------------------------------------


def _vote_matrix_loop(labels: pd.DataFrame, categories: tuple[str, ...], annotators: list[str]) -> tuple[Any, ...]:
    """vote_matrix as it was before it called label_matrix_from_long (a loop over the rows)."""
    keep = labels.loc[labels.verdict.isin(categories)]
    items = sorted(labels.round_item_id.unique())
    row = {item: i for i, item in enumerate(items)}
    col = {a: j for j, a in enumerate(annotators)}
    codes = np.full((len(items), len(annotators)), -1, dtype=np.int64)
    cat = {c: k for k, c in enumerate(categories)}
    for r in keep.itertuples():
        if r.annotator in col:
            codes[row[r.round_item_id], col[r.annotator]] = cat[r.verdict]
    counts = np.zeros((len(items), len(categories)), dtype=np.int64)
    for k in range(len(categories)):
        counts[:, k] = (codes == k).sum(axis=1)
    return codes, counts, items


_VOTE_ROWS = st.lists(
    st.tuples(
        st.integers(1, 8),
        st.sampled_from(["A1", "A2", "A3", "X", None]),
        st.sampled_from(["harmful", "safe", "unsure", "skip", None]),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    _VOTE_ROWS,
    st.permutations(["A1", "A2", "A3"]).flatmap(lambda p: st.integers(0, 3).map(lambda n: list(p[:n]))),
    st.sampled_from([("harmful", "safe", "unsure"), ("harmful", "safe"), ("safe", "harmful")]),
)
def test_vote_matrix_matches_the_loop(
    rows: list[tuple[int, str | None, str | None]], annotators: list[str], categories: tuple[str, ...]
) -> None:
    # Duplicate (item, annotator) rows, verdicts outside the categories, unlisted annotators and
    # missing values are all drawn: the loop lets the last row with a known verdict win.
    table = pd.DataFrame(rows, columns=["round_item_id", "annotator", "verdict"], dtype=object)
    table["round_item_id"] = table["round_item_id"].astype("int64")
    want = _vote_matrix_loop(table, categories, annotators)
    got = votes.vote_matrix(table, categories, annotators)
    for w, g in zip(want[:2], got[:2], strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    assert got[2] == want[2]


def test_vote_matrix_keeps_annotator_order_and_empty_items() -> None:
    table = pd.DataFrame(
        {
            "round_item_id": [9, 9, 4, 6],
            "annotator": ["A2", "A1", "A1", "X"],
            "verdict": ["safe", "harmful", "skip", "safe"],
        }
    )
    codes, counts, items = votes.vote_matrix(table, ("harmful", "safe"), ["A2", "A1"])
    assert items == [4, 6, 9]  # item 6 has only an unlisted annotator's vote, item 4 an unknown verdict
    assert codes.tolist() == [[-1, -1], [-1, -1], [1, 0]] and counts.tolist() == [[0, 0], [0, 0], [1, 1]]
    with pytest.raises(ValueError, match="annotators must be distinct"):
        votes.vote_matrix(table, ("harmful", "safe"), ["A1", "A1"])


def test_label_matrix_from_long_fixed_annotators_and_unknown_labels() -> None:
    df = pd.DataFrame({"item_id": [1, 1, 2], "annotator": ["b", "a", "c"], "label": ["safe", "maybe", "harmful"]})
    lm = ag.label_matrix_from_long(df, ["harmful", "safe"], annotators=["a", "b"], unknown="missing")
    assert lm.annotators == ("a", "b") and lm.items == (1, 2)
    assert lm.codes.tolist() == [[-1, 1], [-1, -1]]
    with pytest.raises(ValueError, match="not among the categories"):
        ag.label_matrix_from_long(df, ["harmful", "safe"], annotators=["a", "b"])
    dup = pd.DataFrame({"item_id": [1, 1], "annotator": ["a", "a"], "label": ["safe", "harmful"]})
    with pytest.raises(ValueError, match="more than one row"):
        ag.label_matrix_from_long(dup, ["harmful", "safe"], annotators=["a"])
    assert ag.label_matrix_from_long(dup, ["harmful", "safe"], duplicates="last").codes.tolist() == [[0]]


def test_the_public_names_are_where_they_belong() -> None:
    # Dawid-Skene is label aggregation, not agreement: one home, no copies.
    assert not hasattr(ag, "dawid_skene") and not hasattr(adjudication, "dawid_skene_labels")
    assert callable(aggregation.dawid_skene) and callable(aggregation.dawid_skene_labels)
    assert {"Thresholds", "verdict_for", "current_labels", "vote_matrix"} <= set(ag.__all__)
    assert all(hasattr(ag, name) for name in ag.__all__)
