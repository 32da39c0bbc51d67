"""Issue #23: agreement on small groups says "too few" rather than printing an interval that misses.

Binary labels from raters right with a common accuracy, set so that the population alpha is the
target; groups of 5, 10, 20 and 50 units. Wherever an interval is printed it covers the
population alpha (and AC1) at least 0.90 of the time; below the minimum support there is no
interval and no verdict. The full grid (2 and 3 raters, alpha 0.4-0.8, minority share 0.1-0.5,
the percentile interval beside) is ``python bench/coverage.py --part agreement``
(docs/methods.md 9.13).
"""

from __future__ import annotations

import numpy as np
import pytest

from annotate.stats import agreement as ag


def groups(units: int, raters: int, accuracy: float, minority: float, rng: np.random.Generator) -> np.ndarray:
    truth = rng.random(units) < minority
    right = rng.random((units, raters)) < accuracy
    harmful = np.where(right, truth[:, None], ~truth[:, None]).sum(axis=1)
    return np.stack([harmful, raters - harmful], axis=1)


def population(raters: int, accuracy: float, minority: float) -> tuple[float, float]:
    c = groups(300_000, raters, accuracy, minority, np.random.default_rng(0))
    return ag.krippendorff_alpha(c, n_boot=0).value, ag.gwet_ac1(c, n_boot=0).value


#: (raters, accuracy, minority share): the population alpha is 0.60 (checked below)
AT_060 = {(3, 0.9006, 0.3), (2, 0.901, 0.3)}


def coverage(units: int, raters: int, accuracy: float, minority: float, R: int, seed: int):
    true_alpha, true_ac1 = population(raters, accuracy, minority)
    rng = np.random.default_rng(seed)
    alpha_hits, ac1_hits, printed, verdicts = [], [], 0, []
    for r in range(R):
        c = groups(units, raters, accuracy, minority, rng)
        a = ag.krippendorff_alpha(c, n_boot=500, seed=r)
        g = ag.gwet_ac1(c, n_boot=500, seed=r)
        verdicts.append(ag.verdict_for(a, ag.Thresholds()))
        if np.isfinite(a.ci_low):
            printed += 1
            alpha_hits.append(a.ci_low <= true_alpha <= a.ci_high)
        elif a.defined:
            assert a.interval_note and verdicts[-1] == "too few units for an interval"
        if np.isfinite(g.ci_low):
            ac1_hits.append(g.ci_low <= true_ac1 <= g.ci_high)
    return true_alpha, alpha_hits, ac1_hits, printed / R, verdicts


def test_the_population_alpha_of_the_scenarios_is_060():
    for raters, acc, prev in AT_060:
        assert population(raters, acc, prev)[0] == pytest.approx(0.60, abs=0.01)


@pytest.mark.parametrize("units", [5, 10])
def test_five_or_ten_units_get_no_interval_and_no_verdict(units):
    _, alpha_hits, _, printed, verdicts = coverage(units, 3, 0.9006, 0.3, R=60, seed=units)
    assert printed == 0 and not alpha_hits  # 15 or 30 values: under the minimum support
    assert set(verdicts) <= {"too few units for an interval", "undefined"}
    assert "reliable" not in verdicts  # issue #23: 20 % of rounds of 5 units said "reliable"


def test_fifty_units_at_alpha_060_cover():
    _, alpha_hits, ac1_hits, printed, _ = coverage(50, 3, 0.9006, 0.3, R=150, seed=50)
    assert printed > 0.95
    # 150 groups: 0.95 less 3 Monte-Carlo SE is 0.90
    assert np.mean(alpha_hits) >= 0.89 and np.mean(ac1_hits) >= 0.89, (np.mean(alpha_hits), np.mean(ac1_hits))


@pytest.mark.slow
@pytest.mark.parametrize("units", [5, 10, 20, 50])
@pytest.mark.parametrize("raters,accuracy,minority", sorted(AT_060))
def test_wherever_an_interval_is_printed_it_covers_at_alpha_060(units, raters, accuracy, minority):
    _, alpha_hits, ac1_hits, _, _ = coverage(units, raters, accuracy, minority, R=400, seed=units + raters)
    # 400 groups: 0.95 less about 3.5 Monte-Carlo SE (fewer where few intervals are printed)
    if len(alpha_hits) >= 50:
        assert np.mean(alpha_hits) >= 0.90, (units, len(alpha_hits), np.mean(alpha_hits))
    if len(ac1_hits) >= 50:
        assert np.mean(ac1_hits) >= 0.90, (units, len(ac1_hits), np.mean(ac1_hits))
