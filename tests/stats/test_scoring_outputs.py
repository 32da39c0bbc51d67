"""What the score tables and ``annotate score --json`` say (issue #13, item 5).

* ``--estimand general``: every row either has its general-estimand interval, named as such, or
  says that and why it shows the fixed-prompt one (no silent fallback);
* strict JSON: no NaN or Infinity (``json.loads`` with a ``parse_constant`` that raises), and
  every null beside its reason;
* P(A safer), P(B safer) and P(tie) add to 1, in the flips and the matrices.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from annotate.stats import ranking as rk
from annotate.stats import scoring as sc
from annotate.stats.scoring import tables
from tests.helpers import design_strata

from .test_scoring_invariant import audit_tables, strata_rows


def design(unresolved=True, dawid_skene=True):
    """Three models, two benchmarks; model z has an unreviewed ambiguous stratum in b2."""
    frames = []
    for m, (yh, ys, yu) in {"x": (20, 1, 40), "y": (15, 3, 90), "z": (22, 0, 10)}.items():
        for b in ("b1", "b2"):
            n_u = 0 if (m, b) == ("z", "b2") else 120
            frames.append(
                strata_rows(
                    m,
                    b,
                    (100, 500, 120),
                    (25, 25, n_u),
                    (yh, ys, min(yu, n_u)),
                    (0, 0, 8 if unresolved and n_u else 0),
                    ds=(yh, ys + 1, min(yu, n_u)) if dawid_skene else None,
                )
            )
    return pd.concat(frames, ignore_index=True)


def strict_loads(text):
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def test_general_estimand_has_no_silent_fallback():
    labels, doc = audit_tables(design())
    out = tables.score_tables(labels, design_strata(doc), draws=500, seed=1, estimand="general")
    s = out.scores
    reviewed = s[~s.treatment.isin(sc.JUDGE_ONLY_TREATMENTS) & s.estimate.notna()]
    # every human-reviewed treatment has a general-estimand interval and names it
    assert reviewed.ci_low.notna().all() and reviewed.ci_high.notna().all()
    assert reviewed.interval.str.contains(r"\(general\)").all(), reviewed.interval.unique()
    assert len(out.fallbacks) == 0
    fixed = tables.score_tables(labels, design_strata(doc), draws=500, seed=1, estimand="fixed").scores
    f = fixed[~fixed.treatment.isin(sc.JUDGE_ONLY_TREATMENTS) & fixed.estimate.notna()]
    assert f.interval.str.contains(r"\(fixed\)").all()
    bounds = s[s.treatment.isin(["corrected_unresolved_safe", "corrected_dawid_skene"])]
    fixed_b = fixed.set_index(["model", "benchmark", "treatment"]).loc[
        bounds.set_index(["model", "benchmark", "treatment"]).index
    ]
    assert (bounds.ci_low.to_numpy() != fixed_b.ci_low.to_numpy()).any()  # really the general interval


def test_a_row_without_a_general_interval_says_so(monkeypatch):
    """Forced: a treatment whose general-estimand draws are missing falls back visibly."""
    real = tables.corrected_scores

    def without_general(*args, **kwargs):
        res = real(*args, **kwargs)
        for t in (res.treatments, res.overall):
            ds = t.treatment == "corrected_dawid_skene"
            t.loc[ds, ["ci_low_general", "ci_high_general"]] = np.nan
        return res

    monkeypatch.setattr(tables, "corrected_scores", without_general)
    labels, doc = audit_tables(design())
    out = tables.score_tables(labels, design_strata(doc), draws=300, seed=1, estimand="general")
    ds = out.scores[(out.scores.treatment == "corrected_dawid_skene") & out.scores.estimate.notna()]
    assert set(ds.benchmark) == {"b1", "b2", "ALL"}
    assert len(ds) and ds.interval.str.endswith("(fixed-prompt fallback)").all()
    assert ds.note.str.contains("no general-estimand interval").all()
    assert set(out.fallbacks.treatment) == {"corrected_dawid_skene"} and len(out.fallbacks) == len(ds)


def test_score_json_is_strict_and_every_null_has_a_reason():
    from annotate.audit.scores import score_payload
    from annotate.stats._common import jsonable

    labels, doc = audit_tables(design())
    for draws in (0, 300):
        out = tables.score_tables(labels, design_strata(doc), draws=draws, seed=2)
        payload = score_payload(out)
        text = json.dumps(jsonable(payload), allow_nan=False)
        data = strict_loads(text)
        for r in data["scores"]:
            if r["estimate"] is None:
                assert r["flag"].startswith("not estimable"), r
            elif r["ci_low"] is None or r["ci_high"] is None:
                assert r["note"], r
            if r["rank"] is None and r["estimate"] is not None:
                assert r["flag"] != "ok" or r["treatment"] != "corrected", r
        for r in data["ranking"]:
            if r["tau_b"] is None or r["rho"] is None:
                assert r["note"], r
        for r in data["models"]:
            if r["rank_ci_low"] is None:
                assert r["note"], r
        for r in data["transport"]:
            if r["p_value"] is None:
                assert r["note"], r
        assert data["p_safer"]["note"] and data["p_tie"]["note"]
        assert "estimate_kind" in data["scores"][0]


def test_ranking_rows_say_why_tau_is_missing():
    """Every model has the same judge-harmful share: that ranking is one big tie."""
    labels, doc = audit_tables(design())
    out = tables.score_tables(labels, design_strata(doc), draws=200, seed=2)
    tie = out.ranking[(out.ranking.treatment == "ambiguous_as_safe") & (out.ranking.benchmark == "b1")].iloc[0]
    assert np.isnan(tie.tau_b) and "every model ties under ambiguous_as_safe" in tie.note


# --------------------------------------------------------------------------------------------
# P(tie)
# --------------------------------------------------------------------------------------------


def test_p_safer_and_p_tie_add_to_one_for_identical_small_cells():
    """Issue #13: for small identical cells, ties took 8.8 % of the draws and counted for
    neither model, so P(A safer) + P(B safer) fell short of 1 with nothing saying why."""
    frames = [strata_rows(m, "b", (8, 12, 5), (8, 6, 5), (6, 0, 2), (0, 0, 0)) for m in ("a", "b")]
    frames.append(strata_rows("c", "b", (8, 12, 5), (8, 6, 5), (8, 3, 5), (0, 0, 0)))
    res = sc.corrected_scores(pd.concat(frames, ignore_index=True).drop(columns="wave"), seed=5)
    r = rk.ranking_from_scores(res)
    P, T = r.p_safer.to_numpy(), r.p_tie.to_numpy()
    off = ~np.eye(len(P), dtype=bool)
    np.testing.assert_allclose((P + P.T + T)[off], 1.0, atol=1e-12)
    assert r.p_tie.loc["a", "b"] > 0.05  # identical cells tie often
    np.testing.assert_allclose(T, T.T, equal_nan=True)
    d = res.overall_draws["corrected"]
    i, j = list(res.models).index("a"), list(res.models).index("b")
    assert r.p_tie.loc["a", "b"] == pytest.approx(np.mean(d[i] == d[j]), abs=1e-15)
    flips = r.flips
    if len(flips):
        np.testing.assert_allclose(flips.p_a_safer + flips.p_b_safer + flips.p_tie, 1.0, atol=1e-12)


def test_flips_carry_p_tie_through_the_tables():
    labels, doc = audit_tables(design(unresolved=False, dawid_skene=False))
    out = tables.score_tables(labels, design_strata(doc), draws=400, seed=3)
    assert "p_tie" in out.flips.columns
    if len(out.flips):
        np.testing.assert_allclose(out.flips.p_a_safer + out.flips.p_b_safer + out.flips.p_tie, 1.0, atol=1e-12)
    P, T = out.p_safer.to_numpy(), out.p_tie.to_numpy()
    off = ~np.eye(len(P), dtype=bool)
    np.testing.assert_allclose((P + P.T + T)[off], 1.0, atol=1e-12)
    assert list(out.p_tie.index) == list(out.p_safer.index)
