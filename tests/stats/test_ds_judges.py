"""Judges as raters: Dawid-Skene over reviewers and judges together (pure), and its comparison.

Synthetic raters of known error rates label items of known truth: the fit must recover every
rater's sensitivity and specificity within its sampling error when there are enough items, keep
the label set the right way round when a judge is always wrong (that judge gets a low Se / Sp),
treat a judge's ``ambiguous`` exactly as a missing rating, and never merge a judge with a
reviewer that shares its name.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from annotate.stats._common import jsonable
from annotate.stats.adjudication import Rules, compare_labels, judges_as_raters
from annotate.stats.aggregation import dawid_skene_labels, dawid_skene_raters

#: rater -> (kind, sensitivity, specificity, share of its ratings that are unsure / ambiguous)
RATERS = {
    "A1": ("reviewer", 0.95, 0.97, 0.03),
    "A2": ("reviewer", 0.88, 0.92, 0.08),
    "A3": ("reviewer", 0.80, 0.85, 0.10),
    "eager": ("judge", 0.93, 0.70, 0.05),
    "strict": ("judge", 0.60, 0.96, 0.15),
}
PREVALENCE = 0.35


def simulate(seed: int, n: int, raters=RATERS) -> tuple[np.ndarray, pd.DataFrame]:
    """truth (n,) as 'harmful'/'safe', and one rating row per item and rater (unsure/ambiguous included)."""
    rng = np.random.default_rng(seed)
    harmful = rng.random(n) < PREVALENCE
    rows = []
    for name, (kind, se, sp, abstain) in raters.items():
        says_harmful = np.where(harmful, rng.random(n) < se, rng.random(n) >= sp)
        verdict = np.where(says_harmful, "harmful", "safe").astype(object)
        verdict[rng.random(n) < abstain] = "unsure" if kind == "reviewer" else "ambiguous"
        rows.append(pd.DataFrame({"item": np.arange(n), "kind": kind, "rater": name, "verdict": verdict}))
    return np.where(harmful, "harmful", "safe"), pd.concat(rows, ignore_index=True)


def keys(raters=RATERS) -> list[tuple[str, str]]:
    return [(kind, name) for name, (kind, *_rest) in raters.items()]


def test_known_error_rates_are_recovered_with_enough_items():
    n = 4000
    truth, ratings = simulate(1, n)
    fit = dawid_skene_raters(ratings, keys(), range(n))
    assert fit.result.converged
    table = fit.raters.set_index("rater")
    by_item = pd.Series(truth)
    for name, (_kind, se, sp, _abstain) in RATERS.items():
        said = ratings.loc[ratings.rater == name].set_index("item").verdict
        rated = said.isin(["harmful", "safe"])
        # The rates this sample realised (what the fit estimates without knowing the truth) ...
        se_here = ((said == "harmful") & rated & (by_item == "harmful")).sum() / (rated & (by_item == "harmful")).sum()
        sp_here = ((said == "safe") & rated & (by_item == "safe")).sum() / (rated & (by_item == "safe")).sum()
        assert table.loc[name, "sensitivity"] == pytest.approx(se_here, abs=0.02), name
        assert table.loc[name, "specificity"] == pytest.approx(sp_here, abs=0.02), name
        # ... and the generating rates, within four sampling errors (sqrt(Se(1-Se)/(n prevalence)) <= 0.012).
        assert table.loc[name, "sensitivity"] == pytest.approx(se, abs=0.05), name
        assert table.loc[name, "specificity"] == pytest.approx(sp, abs=0.05), name
    assert np.mean(fit.labels["ds_label"].to_numpy() == truth) > 0.97
    # Every rating is counted once: as harmful, safe or missing.
    assert (table.n_harmful + table.n_safe + table.n_missing + table.n_unrated == n).all()
    assert (table.n_unrated == 0).all()


def test_the_judges_add_information_the_reviewers_alone_lack():
    """With two reviewers, the items where they split are settled better with the judges."""
    n = 3000
    two = {k: v for k, v in RATERS.items() if k != "A3"}
    truth, ratings = simulate(2, n, two)
    fit = dawid_skene_raters(ratings, keys(two), range(n))
    human = dawid_skene_raters(ratings.loc[ratings.kind == "reviewer"], keys(two)[:2], range(n))
    split = ratings.loc[ratings.kind == "reviewer"].pivot(index="item", columns="rater", values="verdict")
    split = (split["A1"] != split["A2"]).to_numpy()
    right_with = np.mean(fit.labels["ds_label"].to_numpy()[split] == truth[split])
    right_without = np.mean(human.labels["ds_label"].to_numpy()[split] == truth[split])
    assert right_with > right_without + 0.05, (right_with, right_without)


def test_a_judge_that_is_always_wrong_gets_a_low_se_sp_not_a_flipped_label_set():
    n = 300
    rng = np.random.default_rng(5)
    truth = np.where(rng.random(n) < 0.4, "harmful", "safe")
    flip = {"harmful": "safe", "safe": "harmful"}
    rows = []
    for name in ("A1", "A2"):
        wrong = rng.random(n) < 0.08
        rows += [(i, "reviewer", name, flip[t] if w else t) for i, (t, w) in enumerate(zip(truth, wrong, strict=True))]
    rows += [(i, "judge", "contrarian", flip[t]) for i, t in enumerate(truth)]
    rows += [(i, "judge", "decent", t if rng.random() < 0.85 else flip[t]) for i, t in enumerate(truth)]
    ratings = pd.DataFrame(rows, columns=["item", "kind", "rater", "verdict"])
    raters = [("reviewer", "A1"), ("reviewer", "A2"), ("judge", "contrarian"), ("judge", "decent")]
    fit = dawid_skene_raters(ratings, raters, range(n))
    assert np.mean(fit.labels["ds_label"].to_numpy() == truth) > 0.95
    table = fit.raters.set_index("rater")
    assert table.loc["contrarian", "sensitivity"] < 0.05 and table.loc["contrarian", "specificity"] < 0.05
    for name in ("A1", "A2", "decent"):
        assert table.loc[name, "sensitivity"] > 0.75 and table.loc[name, "specificity"] > 0.75, name


def test_a_judges_ambiguous_is_a_missing_rating():
    truth, ratings = simulate(3, 400)
    raters = keys()
    with_ambiguous = dawid_skene_raters(ratings, raters, range(400))
    without = dawid_skene_raters(ratings.loc[ratings.verdict.isin(["harmful", "safe"])], raters, range(400))
    pd.testing.assert_frame_equal(with_ambiguous.labels, without.labels)
    np.testing.assert_allclose(with_ambiguous.result.confusion, without.result.confusion)
    a = with_ambiguous.raters.set_index("rater")
    b = without.raters.set_index("rater")
    assert (a.n_missing + a.n_unrated == b.n_unrated).all()
    assert a.loc["strict", "n_missing"] == int(
        (ratings.rater == "strict").sum() - (a.loc["strict", ["n_harmful", "n_safe"]]).sum()
    )
    assert a.loc["strict", "n_missing"] > 0 and (a.n_missing > 0).all()


def test_a_judge_named_like_a_reviewer_stays_another_rater():
    """A judge called A1 (judge names come from the files) is not reviewer A1."""
    n = 200
    rng = np.random.default_rng(7)
    truth = np.where(rng.random(n) < 0.5, "harmful", "safe")
    flip = {"harmful": "safe", "safe": "harmful"}
    rows = [(i, "reviewer", a, t) for i, t in enumerate(truth) for a in ("A1", "A2")]
    rows += [(i, "judge", "A1", flip[t] if i % 3 == 0 else t) for i, t in enumerate(truth)]
    ratings = pd.DataFrame(rows, columns=["item", "kind", "rater", "verdict"])
    fit = dawid_skene_raters(ratings, [("reviewer", "A1"), ("reviewer", "A2"), ("judge", "A1")], range(n))
    assert fit.raters[["kind", "rater"]].values.tolist() == [["reviewer", "A1"], ["reviewer", "A2"], ["judge", "A1"]]
    assert fit.raters.n_harmful.sum() + fit.raters.n_safe.sum() == 3 * n
    judge = fit.raters.iloc[2]
    assert 0.55 < judge.sensitivity < 0.8 and 0.55 < judge.specificity < 0.8
    assert fit.raters.iloc[0].sensitivity > 0.95


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([(0, "judge", "j", "safe"), (0, "judge", "j", "harmful")], "two ratings of one item by one rater"),
        ([(0, "judge", "unlisted", "safe")], "raters not listed"),
        ([(9, "judge", "j", "safe")], "items not listed"),
    ],
)
def test_nothing_is_dropped_or_chosen_silently(rows, message):
    ratings = pd.DataFrame(rows, columns=["item", "kind", "rater", "verdict"])
    with pytest.raises(ValueError, match=message):
        dawid_skene_raters(ratings, [("judge", "j")], [0, 1])
    with pytest.raises(ValueError, match="listed twice"):
        dawid_skene_raters(ratings.iloc[0:0], [("judge", "j"), ("judge", "j")], [0])


def test_a_rater_without_a_clear_rating_has_no_se_sp_and_says_why():
    ratings = pd.DataFrame(
        [(0, "reviewer", "A1", "harmful"), (1, "reviewer", "A1", "safe"), (0, "judge", "j", "ambiguous")],
        columns=["item", "kind", "rater", "verdict"],
    )
    fit = dawid_skene_raters(ratings, [("reviewer", "A1"), ("judge", "j"), ("judge", "silent")], [0, 1, 2])
    j, silent = fit.raters.iloc[1], fit.raters.iloc[2]
    assert np.isnan(j.sensitivity) and np.isnan(j.specificity) and "no harmful or safe rating" in j.note
    assert (j.n_missing, j.n_unrated, silent.n_missing, silent.n_unrated) == (1, 2, 0, 3)
    # Item 2 has no rating at all: no evidence, no label.
    assert fit.labels.loc[2, "ds_label"] == "unsure" and np.isnan(fit.labels.loc[2, "ds_posterior"])


def round_data(n: int = 60, reviewers=("A1", "A2", "A3"), seed: int = 11):
    """votes, judge rows and truth of a synthetic round (round_item_id = 100 + i)."""
    rng = np.random.default_rng(seed)
    truth = np.where(rng.random(n) < 0.4, "harmful", "safe")
    flip = {"harmful": "safe", "safe": "harmful"}
    votes = pd.DataFrame(
        [
            (100 + i, a, "unsure" if rng.random() < 0.05 else (flip[t] if rng.random() < 0.1 else t))
            for i, t in enumerate(truth)
            for a in reviewers
        ],
        columns=["round_item_id", "annotator", "verdict"],
    )
    judges = pd.DataFrame(
        [(100 + i, "router", "ambiguous" if i < 10 else t) for i, t in enumerate(truth)]
        + [(100 + i, "second", t if rng.random() < 0.8 else flip[t]) for i, t in enumerate(truth) if i != 3]
        # a judge row of an item nobody reviewed: left out, there is nothing to compare it with
        + [(999, "second", "harmful")],
        columns=["round_item_id", "judge", "judge_label"],
    )
    return votes, judges, pd.Series(truth, index=100 + np.arange(n))


def test_judges_as_raters_compares_with_the_labels_of_record_and_the_reviewers_only_fit():
    votes, judges, truth = round_data()
    final = truth.copy().astype(object)
    final.iloc[:4] = None  # four items not resolved
    final.iloc[4] = "harmful" if final.iloc[4] == "safe" else "safe"  # one final label against the evidence
    human = dawid_skene_labels(votes, ["A1", "A2", "A3"])
    out = judges_as_raters(votes, ["A1", "A2", "A3"], judges, final, human, Rules(), routing_judge="router")
    assert (out.n_items, out.n_reviewers, out.n_judges) == (60, 3, 2)
    assert [(r["rater"], r["kind"], r["routing"]) for r in out.raters] == [
        ("A1", "reviewer", False),
        ("A2", "reviewer", False),
        ("A3", "reviewer", False),
        ("router", "judge", True),
        ("second", "judge", False),
    ]
    router, second = out.raters[3], out.raters[4]
    assert (router["n_missing"], router["n_unrated"]) == (10, 0)
    assert (second["n_missing"], second["n_unrated"]) == (0, 1)
    # Counted by hand from the item rows.
    items = pd.DataFrame(out.items).set_index("round_item_id")
    d, f = items.ds_label, items.final_label
    both = f.notna() & d.isin(["harmful", "safe"])
    assert out.vs_final["n_both"] == int(both.sum()) == 56
    assert out.vs_final["agree"] == int((both & (d == f)).sum())
    assert out.vs_final["harmful_vs_safe"] == int((both & (d == "harmful") & (f == "safe")).sum())
    assert out.vs_final["safe_vs_harmful"] == int((both & (d == "safe") & (f == "harmful")).sum())
    assert out.vs_final["harmful_vs_safe"] + out.vs_final["safe_vs_harmful"] >= 1  # the label against the evidence
    assert sum(out.vs_final["only_diagnostic"].values()) == 4
    assert (items.human_ds_label == human.ds_label.reindex(items.index)).all()
    assert out.vs_human_ds is not None and out.vs_human_ds["n_items"] == 60
    assert out.human_ds_vs_final == compare_labels(human.ds_label, final)
    # Three reviewers and 60 items: no identification caveat; the routing judge's caveat is there.
    caveats = " ".join(out.caveats)
    assert "router routed this round" in caveats and "not an independent rater" in caveats
    assert "weakly identified" not in caveats
    # Strict JSON, every undefined figure null.
    json.dumps(jsonable(out), allow_nan=False)


def test_the_labels_of_record_do_not_enter_the_fit():
    votes, judges, truth = round_data()
    a = judges_as_raters(votes, ["A1", "A2", "A3"], judges, truth, None, Rules())
    b = judges_as_raters(
        votes, ["A1", "A2", "A3"], judges, truth.map({"harmful": "safe", "safe": "harmful"}), None, Rules()
    )
    assert [i["ds_label"] for i in a.items] == [i["ds_label"] for i in b.items]
    assert a.raters == b.raters
    assert a.vs_final["agree"] + b.vs_final["agree"] == 60


def test_two_reviewers_are_said_to_identify_dawid_skene_weakly():
    votes, judges, truth = round_data(reviewers=("A1", "A2"))
    out = judges_as_raters(votes, ["A1", "A2"], judges, truth, None, Rules(), routing_judge="not-here")
    caveats = " ".join(out.caveats)
    assert "4 raters (2 reviewer(s), 2 judge(s)) on 60 item(s)" in caveats
    assert "2 reviewer(s) (its escalation rule needs 3)" in caveats and "weakly identified" in caveats
    assert "routed this round" not in caveats  # the routing judge gave no verdict on these items
    assert out.vs_human_ds is None and out.vs_human_ds_reason == "no reviewers-only Dawid-Skene labels were given"
    few = judges_as_raters(votes.loc[votes.round_item_id < 110], ["A1", "A2", "A3"], judges, truth, None, Rules())
    assert "10 reviewed item(s) (its escalation rule needs 30)" in " ".join(few.caveats)
    one = judges_as_raters(votes.loc[votes.annotator == "A1"], ["A1"], judges, truth, None, Rules())
    assert one.vs_human_ds_reason.startswith("one reviewer only")


def test_compare_labels_counts_every_item_once_by_direction():
    diag = pd.Series(["harmful", "safe", "safe", "harmful", "unsure", None], index=[1, 2, 3, 4, 5, 6])
    record = pd.Series(["safe", "safe", "harmful", None, "harmful", None, "safe"], index=[1, 2, 3, 4, 5, 6, 7])
    c = compare_labels(diag, record)
    assert c == {
        "n_items": 7,
        "n_both": 3,
        "agree": 1,
        "harmful_vs_safe": 1,
        "safe_vs_harmful": 1,
        "only_diagnostic": {"harmful": 1, "safe": 0},
        "only_record": 2,
        "neither": 1,
    }


def test_a_round_stratified_by_several_judges_names_them_all_in_the_caveat():
    votes, judges, truth = round_data()
    human = dawid_skene_labels(votes, ["A1", "A2", "A3"])
    args = (votes, ["A1", "A2", "A3"], judges, truth, human, Rules())
    one = judges_as_raters(*args, routing_judge="router")
    several = judges_as_raters(*args, routing_judge="router", strata_from=["router", "second"])
    assert any("router routed this round" in c for c in one.caveats)
    assert not any("routed this round" in c for c in several.caveats)
    (caveat,) = [c for c in several.caveats if "unanimity" in c]
    assert "router, second" in caveat and "none of router, second is an independent rater" in caveat
    # Only the caveat differs: the fit is the same.
    assert several.raters == one.raters and several.items == one.items
