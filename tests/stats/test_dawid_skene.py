"""Dawid-Skene as the escalation rule uses it: unsure is missing data, the fit is smoothed.

Synthetic reviewers of known accuracy (0.95, 0.85, 0.6) label 500 items; some votes are
``unsure``. The true parameters give every item its "oracle" posterior, so the items whose votes
leave real doubt are known; the rule "escalate when the Dawid-Skene posterior is below 0.9"
must fire on them and not on clear unanimous items, and the fitted confusion matrices must lie
within their sampling error (measured by refitting on data sets drawn from the same truth).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from annotate.columns import VERDICTS
from annotate.stats import agreement as ag
from annotate.stats.adjudication import Rules, propose
from annotate.stats.aggregation import binary_codes, dawid_skene, dawid_skene_labels

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
