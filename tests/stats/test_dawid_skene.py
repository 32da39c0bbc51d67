"""Dawid-Skene as the escalation rule uses it: unsure is missing data, the fit is smoothed.

Synthetic reviewers of known accuracy (0.95, 0.85, 0.6) label 500 items; some votes are
``unsure``. The true parameters give every item its "oracle" posterior, so the items whose votes
leave real doubt are known; the rule "escalate when the Dawid-Skene posterior is below 0.9"
must fire on them and not on clear unanimous items, and the fitted confusion matrices must lie
within their sampling error (measured by refitting on data sets drawn from the same truth).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from annotate.columns import VERDICTS
from annotate.stats import agreement as ag
from annotate.stats.adjudication import Rules, propose
from annotate.stats.aggregation import binary_codes, dawid_skene, dawid_skene_labels
from annotate.stats.agreement.annotators import DS_MIN_SHARED, DS_NOT_SHARED, DS_ONE_OTHER

ACC = np.array([0.95, 0.85, 0.6])  # reviewer j is right with this probability, in both classes
UNSURE = np.array([0.03, 0.08, 0.15])  # and says unsure instead with this probability
PREVALENCE = 0.5  # P(harmful)
REVIEWERS = ["A1", "A2", "A3"]
N_ITEMS = 500


def _simulate(seed: int, n: int = N_ITEMS) -> tuple[np.ndarray, np.ndarray, np.ndarray, pd.DataFrame]:
    """truth (n,), binary codes (n, 3) with -1 where unsure, unsure mask (n, 3), long votes table.

    Codes: 0 = harmful, 1 = safe (the order of BINARY_VERDICTS). The last item has only unsure votes.
    """
    rng = np.random.default_rng(seed)
    truth = (rng.random(n) >= PREVALENCE).astype(np.int64)
    right = rng.random((n, 3)) < ACC
    said = np.where(right, truth[:, None], 1 - truth[:, None])
    unsure = rng.random((n, 3)) < UNSURE
    unsure[-1] = True  # one item every reviewer was unsure of (by chance: 0.2 in 500 items)
    verdict = np.where(unsure, "unsure", np.array(["harmful", "safe"])[said])
    votes = pd.DataFrame(
        {"round_item_id": np.repeat(np.arange(n), 3), "annotator": np.tile(REVIEWERS, n), "verdict": verdict.ravel()}
    )
    return truth, np.where(unsure, -1, said), unsure, votes


def _oracle_posterior(codes: np.ndarray) -> np.ndarray:
    """Posterior of the most likely class under the true parameters, shape (n,)."""
    w = np.log(ACC / (1 - ACC))  # each vote's log-odds weight
    vote = np.where(codes == 0, 1.0, np.where(codes == 1, -1.0, 0.0))
    log_odds = math.log(PREVALENCE / (1 - PREVALENCE)) + vote @ w
    p = 1.0 / (1.0 + np.exp(-log_odds))
    return np.maximum(p, 1.0 - p)


def test_escalation_fires_where_the_posterior_is_doubtful() -> None:
    _, codes, unsure, votes = _simulate(seed=13)
    ds = dawid_skene_labels(votes, REVIEWERS)
    out = propose(votes, Rules(), ds=ds)
    assert ds.index.tolist() == out.index.tolist() == list(range(N_ITEMS))
    post = ds.ds_posterior.to_numpy()
    evidence: np.ndarray = np.asarray((codes >= 0).any(axis=1))

    # Classes are harmful and safe; an item with no harmful or safe vote has no posterior.
    assert set(ds.ds_label[evidence]) == {"harmful", "safe"}
    assert (ds.ds_label[~evidence] == "unsure").all() and np.isnan(post[~evidence]).all()
    assert not evidence[-1]
    # Smoothed: nothing is certain.
    assert np.nanmax(post) < 1.0

    # Rule 3 fires exactly where the posterior is below 0.9 or Dawid-Skene disagrees with the
    # majority, and nowhere else.
    rule3 = out.reasons.fillna("").str.contains("dawid-skene").to_numpy()
    majority = out.majority.to_numpy()
    disagrees = np.array([isinstance(m, str) and m != lab for m, lab in zip(majority, ds.ds_label, strict=True)])
    np.testing.assert_array_equal(rule3, (post < 0.9) | disagrees)

    # ... and those are the genuinely doubtful items: every item whose votes leave the true
    # posterior below 0.85 is escalated (by rule 3, or by rules 1-2: a tie, only unsure votes),
    # none above 0.98 is.
    oracle = _oracle_posterior(codes)
    escalated = out.escalate.to_numpy()
    tie = out.reasons.fillna("").str.contains("tie").to_numpy()
    doubtful, clear = oracle < 0.85, oracle > 0.98
    assert doubtful.sum() > 50 and clear.sum() > 200
    assert escalated[doubtful].all()
    assert rule3[doubtful & ~tie & evidence].all()
    assert not escalated[clear].any()

    # The named cases: unanimous items stay with the majority; a 2-1 split against the most
    # reliable reviewer is escalated; one against the least reliable is not.
    complete = ~unsure.any(axis=1)
    unanimous = complete & (codes == codes[:, :1]).all(axis=1)
    reliable_dissents = complete & (codes[:, 1] == codes[:, 2]) & (codes[:, 0] != codes[:, 1])
    weak_dissents = complete & (codes[:, 0] == codes[:, 1]) & (codes[:, 2] != codes[:, 0])
    assert unanimous.sum() > 120 and reliable_dissents.sum() >= 10 and weak_dissents.sum() >= 50
    assert not escalated[unanimous].any()
    assert rule3[reliable_dissents].all()
    assert not escalated[weak_dissents].any()


def test_recovered_confusion_matrices_are_within_their_sampling_error() -> None:
    truth, codes, _, _ = _simulate(seed=13)
    fit = dawid_skene(codes, 2)
    got = np.diagonal(fit.confusion, axis1=1, axis2=2)  # (3 reviewers, 2 classes): P(right | class)
    want = np.column_stack([ACC, ACC])
    # The sampling distribution of the estimator: refit on 40 data sets drawn from the truth.
    reps = np.array(
        [np.diagonal(dawid_skene(_simulate(1000 + r)[1], 2).confusion, axis1=1, axis2=2) for r in range(40)]
    )
    sd = reps.std(axis=0, ddof=1)
    assert (np.abs(got - want) <= 3 * sd).all(), (got.round(3), sd.round(3))
    # The smoothing's pull (towards 1/2, strongest on the most reliable reviewer, whose accuracy
    # the third, near-random reviewer cannot pin down) stays below two sampling SDs.
    assert (np.abs(reps.mean(axis=0) - want) <= 2 * sd).all(), (reps.mean(axis=0).round(3), sd.round(3))
    assert fit.priors[0] == pytest.approx(PREVALENCE, abs=3 * math.sqrt(0.25 / N_ITEMS) + 0.01)
    # The fit ranks the reviewers as the truth does and recovers most labels.
    assert got[0].mean() > got[1].mean() > got[2].mean()
    assert (fit.labels == truth)[(codes >= 0).any(axis=1)].mean() > 0.9


def test_unsure_is_a_missing_vote_not_a_class() -> None:
    votes = pd.DataFrame(
        {
            "round_item_id": [1, 1, 1, 2, 2, 2, 3, 3, 3] + [i for i in range(10, 40) for _ in range(3)],
            "annotator": REVIEWERS * 33,
            "verdict": ["harmful", "unsure", "unsure", "unsure", "unsure", "unsure", "safe", "safe", "unsure"]
            + ["harmful" if i % 2 else "safe" for i in range(10, 40) for _ in range(3)],
        }
    )
    ds = dawid_skene_labels(votes, REVIEWERS)
    # A harmful vote beside two unsure ones is one harmful observation, not an unsure item.
    assert ds.loc[1, "ds_label"] == "harmful" and 0.5 < ds.loc[1, "ds_posterior"] < 0.99
    assert ds.loc[2, "ds_label"] == "unsure" and math.isnan(ds.loc[2, "ds_posterior"])
    assert ds.loc[3, "ds_label"] == "safe"
    # The same as fitting two classes on the votes with unsure recoded to missing.
    codes, _, items = ag.vote_matrix(votes, VERDICTS, REVIEWERS)
    fit = dawid_skene(binary_codes(codes, VERDICTS), 2)
    assert fit.confusion.shape == (3, 2, 2)
    rated = (binary_codes(codes, VERDICTS) >= 0).any(axis=1)
    np.testing.assert_allclose(ds.ds_posterior.to_numpy()[rated], fit.posteriors.max(axis=1)[rated])
    assert items == ds.index.tolist()
    # Without any vote the rule leaves the item to the tie rule.
    out = propose(votes, Rules(), ds=ds)
    assert out.loc[2, "reasons"] == "majority unsure"


def test_smoothing_keeps_every_posterior_below_one() -> None:
    # 100 items per class, three reviewers who never disagree: the unsmoothed fit says each of
    # them is never wrong and every posterior is 1; Laplace smoothing gives (n + 1) / (n + 2).
    labels = np.repeat(np.array([[0, 0, 0], [1, 1, 1]]), 100, axis=0)
    fit = dawid_skene(labels, 2)
    np.testing.assert_allclose(np.diagonal(fit.confusion, axis1=1, axis2=2), 101 / 102, atol=1e-4)
    assert fit.posteriors.max() < 1.0 and fit.pseudo_count == 1.0
    assert fit.to_dict()["pseudo_count"] == 1.0
    ml = dawid_skene(labels, 2, pseudo_count=0)
    assert ml.posteriors.max() == 1.0
    with pytest.raises(ValueError, match="pseudo_count"):
        dawid_skene(labels, 2, pseudo_count=-1)


def test_annotator_diagnostics_take_the_binary_fit_on_three_way_labels() -> None:
    # The 3-way label matrix keeps unsure as a category for alpha and kappa; the Dawid-Skene
    # rates beside them come from the two-class fit, with unsure votes as missing.
    _, _, _, votes = _simulate(seed=13)
    codes, _, _ = ag.vote_matrix(votes, VERDICTS, REVIEWERS)
    fit = dawid_skene(binary_codes(codes, VERDICTS), 2)
    diag = ag.annotator_diagnostics(codes, 3, annotators=REVIEWERS, dawid_skene_result=fit, positive=0)
    sens = np.array([d.sensitivity for d in diag.annotators])
    spec = np.array([d.specificity for d in diag.annotators])
    assert (sens < 1).all() and (spec < 1).all()
    assert sens[0] > sens[1] > sens[2] and spec[0] > spec[1] > spec[2]
    with pytest.raises(ValueError, match="confusion shape"):
        ag.annotator_diagnostics(codes[:, :2], 3, dawid_skene_result=fit, positive=0)


# --------------------------------------------------------------------------------------------
# No rate without an identified model (issue #41): a reviewer's Dawid-Skene rates need an item
# shared with two other reviewers (alone: not identified; with one other: not identified either)
# --------------------------------------------------------------------------------------------

UNSURE_CODE = VERDICTS.index("unsure")


def _codes() -> np.ndarray:
    """3-way codes (500, 3) of the simulation: A1, A2 and A3 on every item."""
    _, _, _, votes = _simulate(seed=13)
    codes, _, _ = ag.vote_matrix(votes, VERDICTS, REVIEWERS)
    return codes.copy()


def _three_and_a_lone_fourth() -> np.ndarray:
    """3-way codes (500, 4): A1-A3 together on items 0-299, A4 alone on items 300-499 (A1's votes there)."""
    codes = _codes()
    a4 = np.full((len(codes), 1), -1)
    a4[300:, 0] = codes[300:, 0]
    codes[300:] = -1
    return np.hstack([codes, a4])


def _two_and_a_lone_third() -> np.ndarray:
    """3-way codes (500, 3): A1 and A2 on items 0-299, A3 alone on items 300-499."""
    codes = _codes()
    codes[:300, 2] = -1
    codes[300:, :2] = -1
    return codes


def _diagnostics(codes: np.ndarray) -> tuple[ag.AnnotatorDiagnostics, np.ndarray]:
    """The diagnostics with the binary fit (harmful = 0), and the fit's own (sens, spec), shape (2, J)."""
    fit = dawid_skene(binary_codes(codes, VERDICTS), 2)
    names = [*REVIEWERS, "A4"][: codes.shape[1]]
    diag = ag.annotator_diagnostics(codes, 3, annotators=names, dawid_skene_result=fit, positive=0)
    return diag, np.array(fit.sensitivity_specificity(0))


def _with_two_others(codes: np.ndarray) -> np.ndarray:
    """(J,) units each reviewer voted harmful or safe on where two others did too."""
    sure = binary_codes(codes, VERDICTS) >= 0
    return (sure & (sure.sum(axis=1) >= 3)[:, None]).sum(axis=0)


def test_a_reviewer_alone_on_their_items_gets_no_dawid_skene_rates_but_the_reason() -> None:
    codes = _three_and_a_lone_fourth()
    diag, fit_rates = _diagnostics(codes)
    *three, a4 = diag.annotators
    assert math.isnan(a4.sensitivity) and math.isnan(a4.specificity)
    assert a4.ds_n_shared == 0 and a4.ds_undefined_reason == DS_NOT_SHARED
    assert "no item shared with another rater" in a4.to_dict()["ds_undefined_reason"]
    assert a4.n_rated == 200  # the rest of A4's diagnostics are there
    # A1-A3 rate items 0-299 together: identified, and their figures are the fit's.
    shared = _with_two_others(codes)
    assert shared[3] == 0 and (shared[:3] == 231).all()  # 231 of the 300 items have three sure votes
    for jj, d in enumerate(three):
        assert (d.sensitivity, d.specificity) == (fit_rates[0, jj], fit_rates[1, jj])
        assert d.ds_n_shared == shared[jj] and d.ds_undefined_reason is None
    assert three[0].sensitivity > three[1].sensitivity > three[2].sensitivity  # 95, 85, 60 % right


def test_reviewers_who_share_items_with_one_other_only_get_no_rates_but_the_reason() -> None:
    # A1 and A2 share items 0-299 and nobody else; A3 is alone on items 300-499.
    diag, fit_rates = _diagnostics(_two_and_a_lone_third())
    a1, a2, a3 = diag.annotators
    # Before: A1 0.858 / 0.903 and A2 0.903 / 0.859, figures of a model that is not identified.
    assert not np.isnan(fit_rates[:, :2]).any()
    for d in (a1, a2):
        assert math.isnan(d.sensitivity) and math.isnan(d.specificity)
        assert d.ds_n_shared == 0 and d.ds_undefined_reason == DS_ONE_OTHER
    assert "cannot tell which of the two erred" in DS_ONE_OTHER
    assert math.isnan(a3.sensitivity) and a3.ds_n_shared == 0 and a3.ds_undefined_reason == DS_NOT_SHARED
    # Three reviewers in pairs, each pair on items of its own: never two others on one item.
    codes = _codes()
    for jj, rows in enumerate((slice(0, 100), slice(100, 200), slice(200, 300))):
        codes[rows, jj] = -1  # items 0-99: A2, A3; 100-199: A1, A3; 200-299: A1, A2
    codes[300:] = -1
    diag, _ = _diagnostics(codes)
    assert [d.ds_undefined_reason for d in diag.annotators] == [DS_ONE_OTHER] * 3
    assert all(math.isnan(d.sensitivity) and d.ds_n_shared == 0 for d in diag.annotators)


def test_two_raters_alone_cannot_tell_which_of_them_erred() -> None:
    # Why two are not enough: on the same 1,000 items a reviewer 95 % right and one 65 % right
    # get about the same fitted rates (about 0.76 both); a third reviewer, 80 % right, on the
    # same items separates them (methods 2.5, 9.8).
    rng = np.random.default_rng(3)
    pairs, triples = [], []
    for _ in range(20):
        truth = rng.integers(0, 2, 1000)
        right = rng.random((1000, 3)) < np.array([0.95, 0.65, 0.8])
        y = np.where(right, truth[:, None], 1 - truth[:, None])
        for cols, out in ((slice(0, 2), pairs), (slice(0, 3), triples)):
            fit = dawid_skene(y[:, cols], 2)
            out.append(fit.sensitivity_specificity(0))
            diag = ag.annotator_diagnostics(y[:, cols], 2, dawid_skene_result=fit, positive=0)
            rates = np.array([(d.sensitivity, d.specificity) for d in diag.annotators])
            assert np.isnan(rates).all() if out is pairs else not np.isnan(rates).any()
    two, three = np.array(pairs).mean(axis=0), np.array(triples).mean(axis=0)  # (sens/spec, rater)
    assert np.abs(two[:, 0] - two[:, 1]).max() < 0.03 and (np.abs(two - 0.76) < 0.03).all(), two
    assert (np.abs(three[:, :2] - [0.95, 0.65]) < 0.05).all(), three


def test_unsure_votes_share_nothing_and_one_item_with_two_others_is_enough() -> None:
    codes = _three_and_a_lone_fourth()
    # A4 also rates items 250-299 beside A1-A3, but says unsure on every one: still alone.
    codes[250:300, 3] = UNSURE_CODE
    diag, _ = _diagnostics(codes)
    a4 = diag.annotators[3]
    assert a4.ds_n_shared == 0 and math.isnan(a4.sensitivity) and a4.ds_undefined_reason == DS_NOT_SHARED
    # A harmful vote of A4 on an item where only A1 voted harmful or safe (A2, A3 unsure): one other.
    sure = binary_codes(codes, VERDICTS) >= 0
    one = 250 + int(np.argmax(sure[250:300, 0]))
    codes[one, 1:3] = UNSURE_CODE
    codes[one, 3] = VERDICTS.index("harmful")
    diag, _ = _diagnostics(codes)
    a4 = diag.annotators[3]
    assert a4.ds_n_shared == 0 and math.isnan(a4.sensitivity) and a4.ds_undefined_reason == DS_ONE_OTHER
    # And one on an item where A1, A2 and A3 all voted harmful or safe: a figure (DS_MIN_SHARED).
    three = 251 + int(np.argmax(sure[251:300, :3].all(axis=1)))
    assert sure[three, :3].all()
    codes[three, 3] = VERDICTS.index("harmful")
    diag, fit_rates = _diagnostics(codes)
    a4 = diag.annotators[3]
    assert DS_MIN_SHARED == 1 and a4.ds_n_shared == 1 and a4.ds_undefined_reason is None
    assert (a4.sensitivity, a4.specificity) == (fit_rates[0, 3], fit_rates[1, 3])
    # Without a fit nothing is reported and nothing needs a reason.
    bare = ag.annotator_diagnostics(codes, 3).annotators[3]
    assert math.isnan(bare.sensitivity) and bare.ds_n_shared == 0 and bare.ds_undefined_reason is None


def test_a_lone_reviewers_fitted_rates_do_not_depend_on_their_accuracy() -> None:
    # Why the rule: three reviewers 90 % right share 200 items; a fourth is alone on 100 more. The
    # fit gives the fourth about the same rates whether she is 95 % or 55 % right (methods 2.5).
    rng = np.random.default_rng(7)

    def lone_rates(accuracy: float) -> np.ndarray:
        out = []
        for _ in range(20):
            truth = rng.integers(0, 2, 300)
            right = rng.random((300, 4)) < np.array([0.9, 0.9, 0.9, accuracy])
            y = np.where(right, truth[:, None], 1 - truth[:, None])
            y[200:, :3] = -1
            y[:200, 3] = -1
            fit = dawid_skene(y, 2)
            assert fit.n_shared is not None and fit.n_shared.tolist() == [200, 200, 200, 0]
            out.append(fit.sensitivity_specificity(0))
            diag = ag.annotator_diagnostics(y, 2, dawid_skene_result=fit, positive=0)
            assert math.isnan(diag.annotators[3].sensitivity) and not math.isnan(diag.annotators[0].sensitivity)
        return np.array(out)[:, :, 3].mean(axis=0)  # (sens, spec) of the lone reviewer

    good, poor = lone_rates(0.95), lone_rates(0.55)
    assert np.abs(good - poor).max() < 0.05 and (good < 0.65).all() and (poor > 0.55).all(), (good, poor)


def test_a_fit_that_does_not_match_the_labels_is_refused() -> None:
    codes = _three_and_a_lone_fourth()
    fit = dawid_skene(binary_codes(codes, VERDICTS), 2)
    bare = dataclasses.replace(fit, n_shared=None)
    with pytest.raises(ValueError, match="n_shared"):
        ag.annotator_diagnostics(codes, 3, dawid_skene_result=bare, positive=0)
    other = codes.copy()
    other[:100, 2] = -1  # a fit on other votes than the matrix's
    fit = dawid_skene(binary_codes(other, VERDICTS), 2)
    with pytest.raises(ValueError, match="n_rated"):
        ag.annotator_diagnostics(codes, 3, dawid_skene_result=fit, positive=0)
