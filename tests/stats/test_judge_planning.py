"""The plan of the model test (`annotate plan --detect-se`): each clear stratum sized on its own,
never a number beyond what the strata hold, and the power of a census where no number reaches the
one wanted (issue #41: "the plan promises power it cannot reach")."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from annotate.stats._common import jsonable, normal_cdf, normal_quantile
from annotate.stats.judge_planning import MIN_PER_STRATUM, detection_power, reviews_to_detect

ROOT = Path(__file__).resolve().parents[2]
SUITE = {"prevalence": 0.3, "specificity": 0.95, "ambiguous": 0.15, "responses": 400, "models": 8}
ONE_JUDGE = 0.10 / 16  # a first Benjamini-Hochberg discovery among 1 judge x 8 models x 2 figures


def plan(se_model: float = 0.60, se_rest: float = 0.90, **kw: float) -> dict:
    args = {**SUITE, "alpha": ONE_JUDGE, **kw}
    return reviews_to_detect(se_model, se_rest, **args)  # type: ignore[arg-type]


def power_at(r_h: float, r_s: float, se_model: float = 0.60, se_rest: float = 0.90, **kw: float) -> float:
    args = {**SUITE, "alpha": ONE_JUDGE, **kw}
    return float(detection_power(se_model, se_rest, r_h, r_s, **args)["power"])  # type: ignore[arg-type]


def test_each_clear_stratum_gets_its_own_number_and_the_judge_safe_one_the_most():
    out = plan()
    assert out["reachable"] and out["power_promised"] >= 0.8
    # the harm the judge missed is in the judge-safe stratum: that is where the reviews tell
    assert out["reviews_judge_safe"] > 2 * out["reviews_judge_harmful"] >= 2 * MIN_PER_STRATUM
    assert not out["capped_judge_harmful"] and not out["capped_judge_safe"]
    assert out["reviews_judge_harmful"] < out["judge_harmful_stratum"]
    assert out["reviews_judge_safe"] < out["judge_safe_stratum"]
    assert out["power_reachable"] >= out["power_promised"]


def test_the_plan_is_the_fewest_reviews_that_reach_the_power():
    out = plan()
    r_h, r_s = out["reviews_judge_harmful"], out["reviews_judge_safe"]
    assert power_at(r_h, r_s) >= 0.8
    assert power_at(r_h, r_s - 1) < 0.8  # one review fewer in either stratum falls short
    if r_h > MIN_PER_STRATUM:
        assert power_at(r_h - 1, r_s) < 0.8
    # a common number per stratum (the plan before issue #41) needs more reviews in all
    common = next(r for r in range(MIN_PER_STRATUM, 400) if power_at(r, r) >= 0.8)
    assert 2 * common > r_h + r_s


def test_power_grows_with_either_stratum_and_stops_at_a_census():
    grid = np.array([10.0, 20, 40, 80, 160])
    by_safe = [power_at(20, r) for r in grid]
    by_harmful = [power_at(r, 60) for r in grid]
    assert np.all(np.diff(by_safe) > 0) and np.all(np.diff(by_harmful) >= 0)
    # beyond what the strata hold, more "reviews" change nothing
    assert power_at(500, 500) == pytest.approx(power_at(5000, 5000), abs=1e-12)


def test_no_number_beyond_the_strata_and_the_power_of_a_census_when_none_reaches():
    out = plan(responses=100)
    assert not out["reachable"]
    assert out["capped_judge_harmful"] and out["capped_judge_safe"]
    assert out["power_promised"] == pytest.approx(out["power_reachable"])
    assert out["power_reachable"] < 0.8
    # the census's numbers: at most the largest stratum of each kind (over the models), never a requirement
    top_h = math.ceil(
        max(out["judge_harmful_stratum"], plan(responses=100, se_model=0.9 - 1e-9)["judge_harmful_stratum"])
    )
    assert out["reviews_judge_harmful"] <= top_h and out["reviews_judge_safe"] <= 100
    assert out["power_reachable"] == pytest.approx(power_at(1e9, 1e9, responses=100), abs=1e-12)


def test_an_exhausted_judge_harmful_stratum_leaves_the_rest_to_the_judge_safe_one():
    small = plan(0.45, prevalence=0.2, responses=150)
    assert small["reachable"] and small["power_promised"] >= 0.8
    assert small["capped_judge_harmful"] and not small["capped_judge_safe"]
    assert small["reviews_judge_harmful"] >= small["judge_harmful_stratum"]
    # the same difference with the judge-harmful stratum unbounded needs fewer judge-safe reviews
    ample = plan(0.45, prevalence=0.2, responses=400)
    assert (
        ample["reviews_judge_safe"] / ample["judge_safe_stratum"]
        < small["reviews_judge_safe"] / small["judge_safe_stratum"]
    )


def test_more_judges_more_tests_more_reviews():
    one, two = plan(), plan(alpha=0.10 / 32)
    assert (
        two["reviews_judge_safe"] + two["reviews_judge_harmful"]
        > one["reviews_judge_safe"] + one["reviews_judge_harmful"]
    )


def test_a_judge_better_on_one_model_is_planned_too():
    out = plan(0.95, 0.75)
    assert out["reachable"] and out["power_promised"] >= 0.8


def test_without_test_draws_the_power_is_the_normal_formula():
    """With infinitely many draws the flag is |Delta_h| >= z sqrt(V_post): Phi((|Delta| - z s_p) / s_s)."""
    out = detection_power(0.6, 0.9, 30, 90, alpha=ONE_JUDGE, test_draws=None, **SUITE)  # type: ignore[arg-type]
    from annotate.stats import judge_planning as jp

    r_h, r_s = np.array(30.0), np.array(90.0)
    m = jp._strata(0.6, 0.3, 0.95, 0.15, 400)
    o = jp._strata(0.9, 0.3, 0.95, 0.15, 400)
    vs_o = jp._se_variance(o, 400, r_h, r_s, False) * jp.KAPPA_SAMPLING / 7
    vp_o = (jp._se_variance(o, 400, r_h, r_s, True) + jp.KAPPA_POSTERIOR * vs_o / jp.KAPPA_SAMPLING) / 7
    c2 = jp.CALIBRATION**2
    v_s = c2 * (jp._dh(0.6) ** 2 * jp._se_variance(m, 400, r_h, r_s, False) + jp._dh(0.9) ** 2 * vs_o)
    v_p = c2 * (jp._dh(0.6) ** 2 * jp._se_variance(m, 400, r_h, r_s, True) + jp._dh(0.9) ** 2 * vp_o)
    delta = abs(jp._h(0.6) - jp._h(0.9))
    z = normal_quantile(1 - ONE_JUDGE / 2)
    expected = normal_cdf(float((delta - z * np.sqrt(v_p)) / np.sqrt(v_s)))
    assert float(out["power"]) == pytest.approx(expected, abs=2e-3)


def test_few_test_draws_cost_power_at_a_small_level():
    many = power_at(15, 80, test_draws=None)
    assert power_at(15, 80, test_draws=4000) < many
    assert power_at(15, 80, alpha=0.10 / 32, test_draws=500) < power_at(15, 80, alpha=0.10 / 32, test_draws=4000)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"models": 2}, "three models"),
        ({"alpha": 0.0}, "between 0 and 1"),
        ({"power": 1.0}, "between 0 and 1"),
        ({"prevalence": 0.0}, "no harmful response"),
    ],
)
def test_bad_inputs_say_why(kw, match):
    with pytest.raises(ValueError, match=match):
        plan(**kw)
    with pytest.raises(ValueError, match="must differ"):
        plan(0.9, 0.9)


def test_the_plan_is_plain_json():
    out = plan(responses=100)
    again = json.loads(json.dumps(jsonable(out), allow_nan=False))
    assert again["reachable"] is False and isinstance(again["reviews_judge_safe"], int)


@pytest.mark.slow
def test_the_simulated_power_keeps_the_promise():
    """bench/judge_planning.py's planning_rows: the promise against simulated suites (the validity matrix's row)."""
    spec = importlib.util.spec_from_file_location("bench_judge_planning", ROOT / "bench" / "judge_planning.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_judge_planning"] = bench
    spec.loader.exec_module(bench)
    rows = bench.planning_rows(replicates=40, seed=3)
    assert list(rows.columns[:7]) == ["regime", "figure", "promised", "simulated", "mcse", "replicates", "holds"]
    assert (rows.figure == "plan --detect-se").all() and (rows.replicates == 40).all()
    # 40 replicates: a loose bound (3 Monte Carlo SE) that an over-promising plan (0.80 for 0.46) misses
    assert (rows.simulated >= rows.promised - 3 * np.maximum(rows.mcse, 0.03)).all(), rows.to_string()
