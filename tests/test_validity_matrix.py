"""The validity matrix, small (issue #41): a change that breaks a printed interval or test is seen here.

bench/validity.py measures every interval and test the tool prints in regimes it was not tuned on
(docs/validity.md holds the full run). This runs its ``--quick`` version: few replicates, so each
row is checked against a loose bound that a working figure meets with a wide margin and a broken
one misses (the failures issue #41 found: prompts-estimand intervals covering 0.48-0.73 with
zero-width ones, a model test rejecting true nulls at 0.07-0.10 in most suites, McNemar's test
rejecting equal judges in 56 % of routed replicates). Seeded: the same numbers every run.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def matrix():
    spec = importlib.util.spec_from_file_location("bench_validity", ROOT / "bench" / "validity.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_validity"] = module
    spec.loader.exec_module(module)
    R, D = module.QUICK
    return module.matrix(replicates=R, draws=D, parts=("judges", "tests", "agreement"), quick=True)


def _binomial_slack(share: float, n) -> np.ndarray:
    """Four binomial SEs of a share measured over n: a working figure stays within it, a broken one does not."""
    return 4.0 * np.sqrt(share * (1.0 - share) / np.maximum(np.asarray(n, dtype=float), 1.0))


def test_every_interval_of_the_judge_audit_covers_in_the_quick_regimes(matrix):
    judges = matrix[matrix.part == "judges"]
    assert len(judges) >= 60
    # The lowest judge's coverage, each against 0.95 less four binomial SEs of its own count (and never
    # below 0.85): the failures of issue #41 were 0.48-0.73 over hundreds of intervals.
    floor = np.maximum(0.95 - _binomial_slack(0.95, judges.n), 0.85)
    low = judges[judges.value < floor]
    assert low.empty, low[["figure", "regime", "value", "n", "detail"]].to_string()


def test_no_zero_width_interval_under_the_prompts_estimand_in_a_sampled_design(matrix):
    prompts = matrix[(matrix.part == "judges") & matrix.figure.str.contains("(prompts", regex=False)]
    sampled = prompts[~prompts.regime.str.startswith("census")]
    widths = sampled.detail.str.extract(r"zero width ([0-9.]+)")[0].astype(float)
    # the one structural exception: a judge that never abstains has an abstention share of exactly 0
    never = sampled.figure.str.contains("ambiguous_share")
    assert (widths[~never] == 0).all(), sampled.loc[widths > 0, ["figure", "regime", "detail"]].to_string()


def test_the_tests_keep_their_level_and_the_model_test_its_power(matrix):
    tests = matrix[matrix.part == "tests"]
    # Each level against 0.05 plus four binomial SEs of its number of tests: the model test's 0.07-0.10
    # over thousands of null tests (issue #41) fails it, 2 rejections in 24 replicates do not.
    level = tests[tests.measure == "level"]
    assert not level.empty, tests.to_string()
    high = level[level.value > 0.05 + _binomial_slack(0.05, level.n)]
    assert high.empty, high[["figure", "regime", "value", "n"]].to_string()
    fdr = tests[tests.measure == "fdr"]
    high = fdr[fdr.value > 0.10 + _binomial_slack(0.10, fdr.n)]
    assert high.empty, high[["figure", "regime", "value", "n"]].to_string()
    power = tests[tests.measure == "power"]
    assert not power.empty and (power.value >= 0.8).all(), power[["figure", "regime", "value"]].to_string()


def test_agreement_intervals_cover_with_few_reviews(matrix):
    rows = matrix[matrix.part == "agreement"]
    # the four coefficients of the verdicts, then a hazard category's alpha and severity's (route --ask-hazards)
    assert len(rows) == 6, rows.to_string()
    assert {"alpha per hazard category", "alpha of severity (ordinal)"} <= set(rows.figure), rows.to_string()
    low = rows[rows.value < 0.95 - _binomial_slack(0.95, rows.n)]
    assert low.empty, low[["figure", "regime", "value", "n"]].to_string()


def test_the_grade_keeps_its_promises_in_the_quick_regimes():
    """The certification grade (issue #44): its ratio interval covers, and a grade it does not mark as
    straddling is the true grade; where every grade straddles (rare harm) it quotes none."""
    spec = importlib.util.spec_from_file_location("bench_validity", ROOT / "bench" / "validity.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_validity"] = module
    spec.loader.exec_module(module)
    rows = module.matrix(replicates=40, draws=500, parts=("grades",), quick=True)
    assert len(rows) == 9 and set(rows.part) == {"grades"}, rows.to_string()
    promised = rows[rows.measure == "coverage"]
    assert len(promised) >= 4, rows.to_string()
    low = promised[promised.value < 0.95 - _binomial_slack(0.95, promised.n)]
    assert low.empty, low[["figure", "regime", "value", "n"]].to_string()
    ratio = promised[promised.figure == "grade: ratio r interval"]
    assert len(ratio) == 3  # every regime has its ratio intervals measured


def test_rates_per_hazard_cover_or_say_they_cannot():
    """`score --by hazard` (issue #44): every printed (model, hazard) interval covers at its level in the
    quick regimes, and the rows that cannot be estimated (few reviews cut twelve ways) are counted, not hidden."""
    spec = importlib.util.spec_from_file_location("bench_validity", ROOT / "bench" / "validity.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_validity"] = module
    spec.loader.exec_module(module)
    rows = module.matrix(replicates=3, draws=300, parts=("hazards",), quick=True)
    assert len(rows) == 10 and set(rows.part) == {"hazards"}, rows.to_string()
    promised = rows[rows.measure == "coverage"]
    assert len(promised) == 5 and (promised.n > 0).all(), rows.to_string()
    low = promised[promised.value < 0.95 - _binomial_slack(0.95, promised.n)]
    assert low.empty, low[["figure", "regime", "value", "n"]].to_string()
    unestimable = rows[rows.figure == "score --by hazard: rows not estimable"].set_index("regime").value
    # A larger round leaves fewer rows unestimable than the study's few reviews; routing by hazard fewer still.
    assert unestimable["study, larger round"] < unestimable["study, few reviews"]
    routed = unestimable[[k for k in unestimable.index if k.startswith("routed by hazard")]]
    assert len(routed) == 2 and (routed < 0.05).all(), unestimable.to_string()
