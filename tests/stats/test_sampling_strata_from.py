"""Strata from several judges (``unanimity_strata``): the rule, its edge cases and its properties (pure)."""

from __future__ import annotations

import doctest

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotate.stats import sampling
from annotate.stats.sampling import AMBIGUOUS_STRATA, SAMPLED_STRATA, select_for_review, unanimity_strata

LABEL = st.sampled_from(["harmful", "safe", "ambiguous", None])


def test_the_docstring_example_holds():
    assert doctest.testmod(sampling, verbose=False).failed == 0


@pytest.mark.parametrize(
    ("labels", "stratum"),
    [
        (("harmful", "harmful"), "harmful"),
        (("safe", "safe"), "safe"),
        (("harmful", "safe"), "ambiguous"),
        (("safe", "harmful"), "ambiguous"),
        (("ambiguous", "ambiguous"), "ambiguous"),
        (("safe", "ambiguous"), "ambiguous"),
        (("safe", None), "ambiguous"),
        (("safe", np.nan), "ambiguous"),
        ((None, None), "ambiguous"),
        (("harmful", "harmful", "harmful"), "harmful"),
        (("harmful", "harmful", None), "ambiguous"),
        (("safe", "safe", "harmful"), "ambiguous"),
    ],
)
def test_one_response(labels, stratum):
    frame = pd.DataFrame([labels], columns=[f"j{k}" for k in range(len(labels))], index=[42])
    out = unanimity_strata(frame)
    assert out.tolist() == [stratum] and out.index.tolist() == [42]


def test_the_census_stratum_is_the_only_census_stratum_and_the_others_are_sampled():
    assert AMBIGUOUS_STRATA == ("ambiguous",) and set(SAMPLED_STRATA) == {"harmful", "safe"}


def test_fewer_than_two_judges_is_an_error():
    with pytest.raises(ValueError, match="two judges"):
        unanimity_strata(pd.DataFrame({"j1": ["safe"]}))


def test_no_responses():
    assert unanimity_strata(pd.DataFrame(columns=["j1", "j2"])).tolist() == []


@given(st.lists(st.tuples(LABEL, LABEL, LABEL), min_size=1, max_size=40))
def test_properties(rows):
    frame = pd.DataFrame(rows, columns=["j1", "j2", "j3"])
    out = unanimity_strata(frame)
    for (a, b, c), stratum in zip(rows, out, strict=True):
        if a == b == c and a in ("harmful", "safe"):
            assert stratum == a
        else:
            assert stratum == "ambiguous"
    # The order of the judges does not matter.
    assert unanimity_strata(frame[["j3", "j1", "j2"]]).tolist() == out.tolist()
    # Each clear stratum lies inside every judge's own stratum of the same label; the census
    # holds every response a judge called ambiguous or had no verdict on.
    for judge in frame.columns:
        own = frame[judge]
        assert (own[out == "harmful"] == "harmful").all() and (own[out == "safe"] == "safe").all()
        assert (out[~own.isin(["harmful", "safe"])] == "ambiguous").all()
    # Adding a judge only moves responses into the census.
    two = unanimity_strata(frame[["j1", "j2"]])
    assert ((out == two) | (out == "ambiguous")).all()


def test_the_census_stratum_is_reviewed_in_full_and_the_clear_ones_sampled():
    labels = pd.DataFrame(
        {
            "j1": ["safe"] * 10 + ["harmful"] * 6 + ["safe"] * 4,
            "j2": ["safe"] * 10 + ["harmful"] * 6 + ["harmful"] * 4,
        }
    )
    responses = pd.DataFrame(
        {
            "response_id": range(20),
            "model": "m",
            "benchmark": "b",
            "prompt_id": [f"p{i}" for i in range(20)],
            "epoch": 0,
            "judge": "j1",
            "judge_label": unanimity_strata(labels).to_numpy(),
        }
    )
    selected, strata = select_for_review(responses, clear_per_cell=3, seed=5)
    assert strata.set_index("stratum")[["population", "sample"]].to_dict("index") == {
        "ambiguous": {"population": 4, "sample": 4},
        "harmful": {"population": 6, "sample": 3},
        "safe": {"population": 10, "sample": 3},
    }
    assert set(selected.loc[selected.stratum == "ambiguous", "response_id"]) == {16, 17, 18, 19}
    pi = selected.groupby("stratum").inclusion_prob.first().to_dict()
    assert pi == {"ambiguous": 1.0, "harmful": 0.5, "safe": 0.3}
