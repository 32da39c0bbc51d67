"""Issue #13's invariant: every reported estimate lies inside its own interval, in every output.

A property test over random designs (cell sizes, strata and waves, unresolved shares, transport on
and off, with and without Dawid-Skene labels) checks every treatment row, every per-model average
and, through ``score_tables``, every row and rank of the export's tables; the field cases of the
issue are pinned as regressions; :func:`check_scores` (what ``verify`` runs on every row) is
tested on hand-made rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotate.stats import scoring as sc
from annotate.stats.scoring.tables import score_tables
from tests.helpers import design_strata

LABELS = ("harmful", "safe", "ambiguous")


def strata_rows(model, benchmark, N, n, y, u, labels=LABELS, waves=None, ds=None):
    waves = waves or [1] * len(N)
    rows = pd.DataFrame(
        {
            "model": model,
            "benchmark": benchmark,
            "stratum": [lab if w == 1 else f"{lab}#w{w}" for lab, w in zip(labels, waves, strict=True)],
            "judge_label": list(labels),
            "wave": waves,
            "population": list(N),
            "reviewed": list(n),
            "harmful": list(y),
            "unresolved": list(u),
        }
    )
    if ds is not None:
        rows["harmful_ds"] = list(ds)
    return rows


def assert_every_estimate_inside(frame, where):
    """The invariant on a treatments / overall frame, fixed and general intervals."""
    est = frame.estimate.to_numpy(dtype=float)
    for lo_c, hi_c in (("ci_low", "ci_high"), ("ci_low_general", "ci_high_general")):
        lo, hi = frame[lo_c].to_numpy(dtype=float), frame[hi_c].to_numpy(dtype=float)
        both = np.isfinite(est) & np.isfinite(lo) & np.isfinite(hi)
        bad = both & ((est < lo - 1e-12) | (est > hi + 1e-12))
        assert not bad.any(), (where, lo_c, frame.loc[bad, ["model", "treatment", "estimate", lo_c, hi_c]].head())
        assert (lo[both] >= -1e-12).all() and (hi[both] <= 1 + 1e-12).all() and (lo[both] <= hi[both]).all()
        # Never an estimate without an interval where draws were made: a partial-identification
        # bound that is not estimable runs to 0 or 1 instead (and the note says so).
        bare = np.isfinite(est) & ~(np.isfinite(lo) & np.isfinite(hi))
        assert not bare.any(), (where, lo_c, frame.loc[bare, ["model", "treatment", "estimate", lo_c, hi_c, "note"]])


@st.composite
def designs(draw):
    n_models = draw(st.integers(1, 4))
    n_bench = draw(st.integers(1, 2))
    frames = []
    with_ds = draw(st.booleans())
    for m in range(n_models):
        for b in range(n_bench):
            waves = draw(st.sampled_from([[1, 1, 1], [1, 1, 1, 2, 2, 2]]))
            labels = (LABELS * 2)[: len(waves)]
            N, n, y, u = [], [], [], []
            for lab in labels:
                Nh = draw(st.integers(0, 300))
                kind = draw(st.sampled_from(["census", "none", "few", "some"]))
                if lab == "ambiguous" and kind == "none":
                    kind = "census"
                nh = {"census": Nh, "none": 0, "few": min(Nh, draw(st.integers(1, 4))), "some": min(Nh, 25)}[kind]
                share = draw(st.sampled_from([0.0, 0.0, 0.02, 0.3, 1.0]))  # P(harmful) of reviewed items
                yh = int(round(share * nh))
                uh = min(nh - yh, draw(st.sampled_from([0, 0, 1, 5])))
                N.append(Nh)
                n.append(nh)
                y.append(yh)
                u.append(uh)
            ds = [min(yh + 1, nh) for yh, nh in zip(y, n, strict=True)] if with_ds else None
            frames.append(strata_rows(f"m{m}", f"b{b}", N, n, y, u, labels, waves, ds))
    df = pd.concat(frames, ignore_index=True)
    if df.population.sum() == 0:
        df.loc[0, ["population", "reviewed"]] = [10, 10]
    return df, draw(st.sampled_from([0, 10])), draw(st.integers(0, 2**16))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(designs())
def test_every_estimate_lies_inside_its_interval(design):
    df, min_reviewed, seed = design
    res = sc.corrected_scores(df.drop(columns="wave"), draws=300, seed=seed, min_reviewed=min_reviewed)
    assert_every_estimate_inside(res.treatments, "treatments")
    assert_every_estimate_inside(res.overall, "overall")
    c = res.cells
    ok = np.isfinite(c.estimate)
    assert (c.ci_low[ok] <= c.estimate[ok] + 1e-12).all() and (c.estimate[ok] <= c.ci_high[ok] + 1e-12).all()
    # issue #23: bounds bound, in the cells, the treatment rows and the overall rows
    both = ok & np.isfinite(c.lower_bound) & np.isfinite(c.upper_bound)
    assert (c.lower_bound[both] <= c.estimate[both] + 1e-12).all(), c.loc[both, ["estimate", "lower_bound"]]
    assert (c.estimate[both] <= c.upper_bound[both] + 1e-12).all(), c.loc[both, ["estimate", "upper_bound"]]
    assert sc.check_scores(res.treatments) == []
    assert sc.check_scores(res.overall.assign(benchmark="ALL")) == []


def test_sparse_cell_with_nothing_harmful_holds_zero():
    """Three large strata, 10 reviewed each, none harmful: p_hat = 0 and the Jeffreys prior's
    draws could only add harm, so the old lower end sat above the estimate."""
    df = strata_rows("m", "b", (450, 450, 450), (10, 10, 10), (0, 0, 0), (0, 0, 0))
    res = sc.corrected_scores(df.drop(columns="wave"), seed=0)
    c = res.cells.iloc[0]
    assert c.estimate == 0 and c.ci_low == 0 and c.ci_high > 0


def test_field_case_vicuna_overall_holds_its_estimate():
    """Issue #13: "Vicuna overall: 98.6 % [73.2, 98.2]" - every reviewed item harmful in big
    strata; the average of the draws sat below the average of the estimates."""
    frames = []
    for b in ("jbb", "harmbench", "advbench"):
        frames.append(strata_rows("vicuna", b, (300, 30, 20), (16, 16, 20), (16, 15, 20), (0, 0, 0)))
        frames.append(strata_rows("llama", b, (30, 300, 20), (16, 16, 20), (10, 0, 2), (0, 0, 0)))
    res = sc.corrected_scores(pd.concat(frames, ignore_index=True).drop(columns="wave"), seed=0)
    o = res.overall[res.overall.treatment == "corrected"].set_index("model").loc["vicuna"]
    assert o.ci_low <= o.estimate <= o.ci_high, (o.estimate, o.ci_low, o.ci_high)
    assert_every_estimate_inside(res.overall, "overall")


def test_field_case_transported_cell_holds_its_estimate():
    """A transported JailbreakBench-like cell (the field test printed GPT-4 x PAIR: 66.9 %
    [0.0, 66.4]): the point used the analytic Se'/Sp', the draws a prior per donor stratum."""
    frames = [
        strata_rows(f"d{i}", "jbb", (NH, NS, 0), (min(NH, 16), 16, 0), (yH * min(NH, 16) // NH, 0, 0), (0, 0, 0))
        for i, (NH, NS, yH) in enumerate([(20, 80, 18), (35, 65, 30), (10, 90, 9), (50, 50, 45)])
    ]
    frames.append(strata_rows("gpt4", "jbb", (60, 40, 0), (16, 0, 0), (16, 0, 0), (0, 0, 0)))
    res = sc.corrected_scores(pd.concat(frames, ignore_index=True).drop(columns="wave"), seed=0)
    t = res.cells.set_index("model").loc["gpt4"]
    assert t.flag == "transport"
    assert t.ci_low <= t.estimate <= t.ci_high
    assert_every_estimate_inside(res.treatments, "treatments")


# --------------------------------------------------------------------------------------------
# Through the export's tables: every row and every rank
# --------------------------------------------------------------------------------------------


def audit_tables(strata: pd.DataFrame, round_name: str = "r1") -> tuple[pd.DataFrame, dict]:
    """labels.csv and design.json of an export holding these strata (one round)."""
    design_rows, label_rows = [], []
    for r in strata.itertuples():
        design_rows.append(
            {
                "model": r.model,
                "benchmark": r.benchmark,
                "judge_label": r.judge_label,
                "wave": int(r.wave),
                "stratum": r.stratum,
                "population": int(r.population),
                "sample": int(r.reviewed),
            }
        )
        finals = ["harmful"] * int(r.harmful) + ["unresolved"] * int(r.unresolved)
        finals += ["safe"] * (int(r.reviewed) - len(finals))
        for k, final in enumerate(finals):
            label_rows.append(
                {
                    "round": round_name,
                    "model": r.model,
                    "benchmark": r.benchmark,
                    "prompt_id": f"{r.stratum}-{k}",
                    "stratum": r.stratum,
                    "final_label": None if final == "unresolved" else final,
                    "ds_label": final if final != "unresolved" else "harmful",
                }
            )
    labels = pd.DataFrame(
        label_rows, columns=["round", "model", "benchmark", "prompt_id", "stratum", "final_label", "ds_label"]
    )
    return labels, {"rounds": [{"round": round_name, "strata": design_rows}]}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(designs(), st.sampled_from(["fixed", "general"]))
def test_score_tables_rows_and_ranks_keep_the_invariant(design, estimand):
    df, min_reviewed, seed = design
    labels, doc = audit_tables(df)
    out = score_tables(labels, design_strata(doc), draws=200, seed=seed, min_reviewed=min_reviewed, estimand=estimand)
    assert sc.check_scores(out.scores) == []
    s = out.scores
    ranked = s["rank"].notna() & s.rank_low.notna()
    assert (s.rank_low[ranked] <= s["rank"][ranked]).all() and (s["rank"][ranked] <= s.rank_high[ranked]).all()
    m = out.models
    if len(m) and m.rank_best.notna().all():
        assert (m.rank_best <= m["rank"]).all() and (m["rank"] <= m.rank_worst).all()


# --------------------------------------------------------------------------------------------
# check_scores: what verify runs on every row
# --------------------------------------------------------------------------------------------


def row(**kw):
    base = {
        "model": "a",
        "benchmark": "b",
        "treatment": "corrected",
        "estimate": 0.2,
        "ci_low": 0.1,
        "ci_high": 0.3,
        "rank": 1.0,
        "rank_low": 1.0,
        "rank_high": 2.0,
        "flag": "ok",
        "note": "",
    }
    return {**base, **kw}


@pytest.mark.parametrize(
    "bad,needle",
    [
        (row(estimate=0.35), "lies outside its interval"),
        (row(ci_low=None), "one end only"),
        (row(ci_low=0.4, ci_high=0.3, estimate=0.35), "not an interval"),
        (row(estimate=1.2, ci_high=1.3), "not a rate"),
        (row(estimate=None, ci_low=None, ci_high=None), "flag does not say why"),
        (row(ci_low=None, ci_high=None), "note does not say why"),
        (row(rank=3.0), "rank 3 lies outside"),
        (row(estimate="0.35"), "lies outside its interval"),  # as read from a CSV without types
    ],
)
def test_check_scores_names_each_broken_row(bad, needle):
    problems = sc.check_scores([row(model="fine"), bad])
    assert problems and any(needle in p for p in problems), problems
    assert all(p.startswith("scores row a x b x corrected: ") and p.endswith(".") for p in problems)


def test_check_scores_accepts_reasons_and_a_clean_table():
    good = [
        row(),
        row(estimate=None, ci_low=None, ci_high=None, rank=None, flag="not estimable: no review"),
        row(ci_low=None, ci_high=None, note="no interval: no posterior draws were made (draws=0)"),
        row(rank=None, rank_low=None, rank_high=None),
    ]
    assert sc.check_scores(good) == []
    assert sc.check_scores(pd.DataFrame(good)) == []
    assert sc.check_scores([]) == []


def test_a_bound_that_is_not_estimable_runs_to_one_and_the_estimate_keeps_an_interval():
    """Found by the property test above: a cell filled by transport from one donor whose safe
    stratum holds an unresolved item; with every unresolved item harmful the donor's Se + Sp - 1
    vanishes, the upper bound is not estimable, and the estimate 0 was shown with no interval."""
    df = pd.concat(
        [
            strata_rows("m0", "b0", (2, 2, 0), (2, 2, 0), (1, 0, 0), (0, 1, 0)),
            strata_rows(
                "m2",
                "b0",
                (0, 0, 2, 0, 1, 0),
                (0, 0, 2, 0, 0, 0),
                (0, 0, 0, 0, 0, 0),
                (0, 0, 1, 0, 0, 0),
                LABELS * 2,
                [1, 1, 1, 2, 2, 2],
            ),
        ],
        ignore_index=True,
    )
    res = sc.corrected_scores(df.drop(columns="wave"), draws=300, seed=0, min_reviewed=10)
    cell = res.cells.set_index("model").loc["m2"]
    assert cell.method == "transport" and cell.estimate == 0.0
    assert (cell.ci_low, cell.ci_high) == (0.0, 1.0)
    assert "runs to 0 or 1" in cell.note
    corrected = res.treatments[(res.treatments.model == "m2") & (res.treatments.treatment == "corrected")].iloc[0]
    assert corrected.ci_low <= corrected.estimate <= corrected.ci_high


def _transport_case():
    """Issue #23's reproduction: a donor with 1 of 2 judge-harmful items unresolved, a target with 1
    unresolved item and an unreviewed judge-safe stratum (filled by transport)."""
    return pd.concat(
        [
            strata_rows("donor", "b", (2, 10), (2, 10), (1, 1), (1, 0), LABELS[:2]),
            strata_rows("target", "b", (10, 20), (5, 0), (0, 0), (1, 0), LABELS[:2]),
        ],
        ignore_index=True,
    ).drop(columns="wave")


def test_bounds_with_transport_bound_the_estimate():
    """Before issue #23 the all-safe run printed 0.292 above the all-harmful run's 0.233 with the MAR
    estimate 0.167 outside both (the issue's own numbers: 0.480 over 0.380, MAR 0.250): a donor's
    unresolved judge-harmful item counted harmful raises Se' and lowers the fill. The bounds are now
    the extremes over the corner assignments of the target's and the donors' unresolved items."""
    for draws in (0, 2000):
        res = sc.corrected_scores(_transport_case(), draws=draws, seed=0, min_reviewed=10)
        t = res.cells.set_index("model").loc["target"]
        assert t.method == "transport"
        assert t.lower_bound <= t.estimate <= t.upper_bound
        assert t.lower_bound == pytest.approx(1 / 6) and t.upper_bound == pytest.approx(0.358333, abs=1e-6)
        assert sc.check_scores(res.treatments) == []
    rows = res.treatments[res.treatments.model == "target"].set_index("treatment")
    assert "corner assignments" in rows.loc["corrected_unresolved_harmful", "note"]
    assert rows.loc["corrected", "ci_low"] <= rows.loc["corrected_unresolved_safe", "ci_low"] + 1e-12
    assert rows.loc["corrected", "ci_high"] >= rows.loc["corrected_unresolved_harmful", "ci_high"] - 1e-12


def test_before_issue_23_the_bounds_were_out_of_order_and_check_scores_says_so(monkeypatch):
    from annotate.stats.scoring import scores

    monkeypatch.setattr(scores, "CORNERS", False)
    res = sc.corrected_scores(_transport_case(), draws=0, min_reviewed=10)
    t = res.cells.set_index("model").loc["target"]
    assert t.lower_bound > t.upper_bound  # the bug
    problems = sc.check_scores(res.treatments)
    assert any("do not bound" in p for p in problems) and any("outside its bounds" in p for p in problems)
    problems = sc.check_scores(res.cells.assign(treatment="corrected"))
    assert any("(lower_bound, upper_bound)" in p for p in problems)


def test_donors_held_at_their_mar_counts_also_bound(monkeypatch):
    from annotate.stats.scoring import scores

    monkeypatch.setattr(scores, "BOUND_DONORS", "mar")
    res = sc.corrected_scores(_transport_case(), draws=500, seed=1, min_reviewed=10)
    t = res.cells.set_index("model").loc["target"]
    assert t.lower_bound <= t.estimate <= t.upper_bound
    assert sc.check_scores(res.treatments) == []
