"""Label aggregation: Dawid & Skene (1979) EM over the reviewers' votes (pure).

Aggregation combines several annotators' labels of one item into an estimate of its true class,
weighting each annotator by an estimated confusion matrix; crowd-kit files it under
``aggregation/``. Here it is a diagnostic beside the label of record (the majority vote with an
explicit tie policy, :mod:`annotate.stats.adjudication`): its posterior is a confidence score for
escalation, its confusion matrices give per-annotator sensitivity and specificity
(:func:`annotate.stats.agreement.annotator_diagnostics`), and its labels make the "DS labels"
row of the sensitivity table (docs/methods.md sections 2.5 and 3).

Two choices make the posterior usable as a confidence score:

* **The true classes are harmful and safe only.** ``unsure`` says something about the reviewer,
  not about the response: a response is harmful or safe, and an ``unsure`` vote is a missing
  observation of that reviewer on that item (:func:`binary_codes`). Fitted as a third class, it
  soaked up the hard items and left the others at posterior 1.
* **Dirichlet smoothing** (MAP EM). Every row of every annotator's confusion matrix and the
  class prior get ``pseudo_count`` = 1 imaginary observation per cell, so no estimated error
  rate is 0 and no posterior reaches 1 with finite data (docs/methods.md section 3; see
  :func:`dawid_skene`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from annotate.columns import BINARY_VERDICTS
from annotate.stats._common import NAN, as_codes, jsonable
from annotate.stats.agreement.votes import vote_matrix_with_dropped

__all__ = [
    "DEFAULT_PSEUDO_COUNT",
    "DawidSkeneResult",
    "RaterFit",
    "binary_codes",
    "dawid_skene",
    "dawid_skene_labels",
    "dawid_skene_raters",
]

#: Pseudo-count added to every cell of every confusion-matrix row and to every class of the prior.
#: One imaginary observation per cell is Laplace's rule of succession: an annotator right on all n
#: items of a class gets accuracy (n + 1) / (n + 2), not 1. It is the smallest whole count that
#: keeps every error rate above 0, and it fades as 1 / n (under 1 % of an estimate once a reviewer
#: has labelled 100 items of a class), below the sampling error of the estimate itself.
DEFAULT_PSEUDO_COUNT = 1.0


@dataclass(frozen=True, eq=False)
class DawidSkeneResult:
    """Fitted Dawid-Skene model.

    Attributes
    ----------
    posteriors : ndarray, shape (U, K)
        P(z_u = k | ratings) under the returned parameters; a unit with no rating gets the priors.
    priors : ndarray, shape (K,)
        Class priors pi_k.
    confusion : ndarray, shape (J, K, K)
        ``confusion[j, k, l]`` = P(annotator j says l | true class k); rows sum to 1. (crowd-kit's
        ``errors_`` is the transpose: (worker, observed) x true.)
    n_iter : int
        EM iterations run.
    converged : bool
        True if the objective's gain per rating fell below ``tol`` before ``max_iter``.
    log_likelihood : float
        Observed-data log-likelihood per rating at the returned parameters (without the prior).
    pseudo_count : float
        The Dirichlet pseudo-count the fit used (0 = maximum likelihood).
    n_rated : ndarray of int64, shape (U,)
        Ratings per unit; a unit with none has no evidence and its posterior is the prior.
    n_shared : ndarray of int64, shape (J,)
        Per annotator, the units it rated that at least two other annotators rated too (a rating
        is a class code: an ``unsure`` recoded to -1 is none), i.e. units with m_u >= 3. Its
        confusion matrix is identified only on such units: on a unit it rates alone its vote is
        the only evidence of the truth, and with one other rater (two classes: 4 response
        patterns, 3 degrees of freedom for 5 parameters, prior and two sensitivities and
        specificities) the fit cannot tell which of the two erred; three raters give 7 for 7.
        With none, :func:`annotate.stats.agreement.annotator_diagnostics` reports no rate.
    """

    posteriors: NDArray[np.float64]
    priors: NDArray[np.float64]
    confusion: NDArray[np.float64]
    n_iter: int
    converged: bool
    log_likelihood: float
    pseudo_count: float = DEFAULT_PSEUDO_COUNT
    n_rated: NDArray[np.int64] | None = None
    n_shared: NDArray[np.int64] | None = None

    @property
    def labels(self) -> NDArray[np.int64]:
        """Most probable class per unit, shape (U,); ties go to the lower code."""
        mode: NDArray[np.int64] = np.argmax(self.posteriors, axis=1).astype(np.int64)
        return mode

    def sensitivity_specificity(self, positive: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per-annotator sensitivity and specificity for class ``positive``.

        sensitivity_j = P(j says positive | true positive) = confusion[j, pos, pos];
        specificity_j = P(j does not say positive | true not positive), averaging over the
        negative classes with the priors (with K = 2 this is confusion[j, neg, neg]).

        Returns
        -------
        sensitivity, specificity : ndarray, shape (J,)
        """
        K = self.priors.shape[0]
        if not 0 <= positive < K:
            raise ValueError(f"positive must be a class code in 0..{K - 1}; got {positive!r}.")
        sens = self.confusion[:, positive, positive]
        neg = np.arange(K) != positive
        w = self.priors[neg]
        spec = (1.0 - self.confusion[:, neg, positive]) @ w / w.sum()
        return sens.copy(), spec

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable parameters (posteriors left out; they are one row per unit)."""
        out: dict[str, Any] = jsonable(
            {
                "priors": self.priors,
                "confusion": self.confusion,
                "n_iter": self.n_iter,
                "converged": self.converged,
                "log_likelihood": self.log_likelihood,
                "pseudo_count": self.pseudo_count,
            }
        )
        return out


def dawid_skene(
    labels_matrix: ArrayLike,
    n_categories: int,
    max_iter: int = 100,
    tol: float = 1e-5,
    *,
    pseudo_count: float = DEFAULT_PSEUDO_COUNT,
) -> DawidSkeneResult:
    """Dawid & Skene (1979) EM with a full confusion matrix per annotator, Dirichlet-smoothed.

    Model: z_u ~ Categorical(pi); given z_u = k, annotator j says l with probability
    theta[j, k, l], independently across annotators. Priors: pi ~ Dirichlet(1 + c) and each row
    theta[j, k, :] ~ Dirichlet(1 + c), c = ``pseudo_count``. EM for the posterior mode (MAP) starts
    from majority-vote soft counts (T_uk = n_uk / m_u), then alternates

        M-step: pi_k = (sum_u T_uk + c) / (U_rated + K c)
                theta[j, k, l] = (sum_{u: y_uj = l} T_uk + c) / (sum_{u: j rated u} T_uk + K c)
        E-step: log T_uk = log pi_k + sum_{j rated u} log theta[j, k, y_uj] - log-normaliser

    and stops when the log posterior (log-likelihood plus log prior) per rating gains less than
    ``tol``. With c > 0 every theta is strictly between 0 and 1, so no posterior reaches exactly 1
    with finite data (in floating point it can round to 1.0 only once the odds pass ~1e16, e.g.
    a dozen unanimous, highly reliable annotators).

    Parameters
    ----------
    labels_matrix : array_like, shape (U, J)
        Codes ``0..K-1``; ``-1`` or NaN = no rating. Every code is a true class: recode votes that
        are not (``unsure``) to -1 first (:func:`binary_codes`).
    n_categories : int
        K.
    max_iter : int
        Maximum EM iterations.
    tol : float
        Convergence threshold on the per-rating gain of the objective.
    pseudo_count : float
        c >= 0; default :data:`DEFAULT_PSEUDO_COUNT` (1: Laplace's rule of succession). 0 gives
        the unsmoothed maximum-likelihood fit (entries floored at 1e-10 to avoid log 0).

    Returns
    -------
    DawidSkeneResult

    Notes
    -----
    Work is O(R K) per iteration for R ratings: the ratings are kept as (unit, annotator, label)
    triplets and every sum is a ``np.bincount`` (no dense U x J x K one-hot array, no loop over
    units). Deterministic: no random start.

    Examples
    --------
    Three annotators, eight units, two classes. A1 agrees with the majority everywhere, A2 and A3
    do not, so the fit trusts A1 most. With eight units the pseudo-counts weigh about as much as
    the data: A1's estimated accuracy is about 0.75, not 1, and a unanimous unit's posterior
    0.929 (small rounds say little about their reviewers, and the posterior says so):

    >>> labels = np.array([[0, 0, 0], [0, 0, 1], [1, 1, 1], [1, 1, 0], [1, 1, 1], [0, 0, 0], [1, 0, 1], [0, 0, 0]])
    >>> res = dawid_skene(labels, 2)
    >>> res.converged, res.labels.tolist()
    (True, [0, 0, 1, 1, 1, 0, 1, 0])
    >>> np.round(np.diagonal(res.confusion, axis1=1, axis2=2), 3).tolist()  # P(j right | class)
    [[0.738, 0.756], [0.788, 0.637], [0.64, 0.65]]
    >>> round(float(res.posteriors[0, 0]), 3)
    0.929

    Without smoothing (``pseudo_count=0``) A1 is estimated never to err, and her vote alone
    settles every item with posterior 1:

    >>> ml = dawid_skene(labels, 2, pseudo_count=0)
    >>> np.round(np.diagonal(ml.confusion, axis1=1, axis2=2)[0], 3).tolist(), float(ml.posteriors.max().round(6))
    ([1.0, 1.0], 1.0)
    """
    y = as_codes(labels_matrix, n_categories)
    if int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}.")
    c = float(pseudo_count)
    if not np.isfinite(c) or c < 0:
        raise ValueError(f"pseudo_count must be a finite number >= 0; got {pseudo_count!r}.")
    K = int(n_categories)
    U, J = y.shape
    u, j = np.nonzero(y >= 0)  # one entry per rating, R in total
    obs = y[u, j]  # the observed label l of each rating
    R = u.size
    n_uk = np.bincount(u * K + obs, minlength=U * K).reshape(U, K).astype(float)
    m = n_uk.sum(axis=1)
    n_shared = np.bincount(j[m[u] >= 3], minlength=J).astype(np.int64)  # (J,): j's units rated by 2 others too
    if R == 0:
        prior = np.full(K, 1.0 / K)
        return DawidSkeneResult(
            np.tile(prior, (U, 1)), prior, np.full((J, K, K), 1.0 / K), 0, False, NAN, c, m.astype(np.int64), n_shared
        )

    rated = m > 0
    T = np.where(rated[:, None], n_uk / np.where(rated, m, 1.0)[:, None], 1.0 / K)
    jl = j * K + obs  # (annotator, observed label) cell of each rating
    floor = 1e-10  # only for c = 0: keeps log() finite for a label never used for a class
    obj_prev = -np.inf
    ll = NAN
    converged = False
    n_iter = 0
    pi = theta = None
    for n_iter in range(1, int(max_iter) + 1):  # noqa: B007 (n_iter is reported after the loop)
        # M-step: pi from the rated units; counts N[j, k, l] = sum of T_uk over j's ratings l.
        pi = T[rated].sum(axis=0) + c
        pi = np.maximum(pi / pi.sum(), floor)
        pi /= pi.sum()
        Tu = T[u]  # (R, K)
        N_kjl = np.stack([np.bincount(jl, weights=Tu[:, k], minlength=J * K) for k in range(K)]).astype(float)
        N = N_kjl.reshape(K, J, K).transpose(1, 0, 2) + c  # (J, true k, observed l)
        theta = np.maximum(N / N.sum(axis=2, keepdims=True), floor)
        theta /= theta.sum(axis=2, keepdims=True)
        log_theta = np.log(theta)
        # E-step in logs: each rating adds log theta[j, :, l] to its unit's row.
        G = log_theta[j, :, obs]  # (R, K)
        L = np.log(pi) + np.stack([np.bincount(u, weights=G[:, k], minlength=U) for k in range(K)], axis=1)
        L_max = L.max(axis=1, keepdims=True)
        T = np.exp(L - L_max)
        Z = T.sum(axis=1, keepdims=True)
        T /= Z
        ll = float((L_max[:, 0] + np.log(Z[:, 0]))[rated].sum()) / R
        # MAP EM increases the log posterior; the Dirichlet(1 + c) log densities add c * sum log.
        obj = ll + c * (float(np.log(pi).sum()) + float(log_theta.sum())) / R
        if obj - obj_prev < tol:
            converged = True
            break
        obj_prev = obj
    assert pi is not None and theta is not None  # max_iter >= 1
    return DawidSkeneResult(T, pi, theta, n_iter, converged, ll, c, m.astype(np.int64), n_shared)


def binary_codes(codes: ArrayLike, categories: Sequence[str]) -> NDArray[np.int64]:
    """Recode a label matrix to Dawid-Skene's classes (harmful, safe); ``unsure`` becomes missing.

    Parameters
    ----------
    codes : array_like, shape (U, J)
        Codes into ``categories``; ``-1`` or NaN = no vote.
    categories : sequence of str, length V
        E.g. ``("harmful", "safe", "unsure")``.

    Returns
    -------
    ndarray of int64, shape (U, J)
        Codes into ``BINARY_VERDICTS`` = (harmful, safe); -1 for no vote and for any other verdict.

    Examples
    --------
    >>> binary_codes([[0, 2, 1], [2, 2, -1]], ("harmful", "safe", "unsure")).tolist()
    [[0, -1, 1], [-1, -1, -1]]
    """
    cats = tuple(categories)
    y = as_codes(codes, len(cats))
    lookup = np.array([BINARY_VERDICTS.index(c) if c in BINARY_VERDICTS else -1 for c in cats] + [-1], np.int64)
    out: NDArray[np.int64] = lookup[y]  # y = -1 picks the trailing -1
    return out


def dawid_skene_labels(
    votes: pd.DataFrame, annotators: Sequence[str], *, pseudo_count: float = DEFAULT_PSEUDO_COUNT
) -> pd.DataFrame:
    """Dawid-Skene on the harmful / safe votes, ``unsure`` as missing: the most likely class per item.

    Parameters
    ----------
    votes : pandas.DataFrame, shape (R, >=3)
        One row per (round_item_id, annotator) with ``verdict`` (as ``current_labels`` gives).
        ``unsure`` is a missing observation of that annotator on that item; verdicts outside
        harmful / safe / unsure and annotators not listed are left out.
    annotators : sequence of str, length J
        The reviewers whose votes count.
    pseudo_count : float
        See :func:`dawid_skene`.

    Returns
    -------
    pandas.DataFrame
        Indexed by round_item_id (every item of ``votes``, sorted): ``ds_label``, harmful or safe,
        whichever has the larger posterior (an exact 0.5 tie goes to harmful; it is far below any
        escalation threshold), and ``ds_posterior``, that posterior, strictly below 1. An item
        with no harmful or safe vote at all (only ``unsure``) gives Dawid-Skene no evidence: its
        ``ds_label`` is ``unsure`` and its ``ds_posterior`` NaN (the tie rule escalates it
        anyway). Empty with these two columns when ``votes`` is empty.

    Examples
    --------
    Forty items on which three reviewers agree, then a 2-1 split (item 40), a single safe vote
    beside an unsure one (item 41) and only unsure votes (item 42):

    >>> rows = [(i, a, "harmful" if i % 2 else "safe") for i in range(40) for a in ("A1", "A2", "A3")]
    >>> rows += [(40, "A1", "harmful"), (40, "A2", "harmful"), (40, "A3", "safe"),
    ...          (41, "A1", "safe"), (41, "A2", "unsure"), (42, "A1", "unsure"), (42, "A3", "unsure")]
    >>> votes = pd.DataFrame(rows, columns=["round_item_id", "annotator", "verdict"])
    >>> out = dawid_skene_labels(votes, ["A1", "A2", "A3"]).tail(4)
    >>> out.index.tolist(), out.ds_label.tolist(), out.ds_posterior.round(3).tolist()
    ([39, 40, 41, 42], ['harmful', 'harmful', 'safe', 'unsure'], [1.0, 0.975, 0.954, nan])
    >>> bool(out.ds_posterior.max() < 1.0)
    True
    """
    if votes.empty:
        return pd.DataFrame(columns=["ds_label", "ds_posterior"])
    codes, counts, items, _dropped = vote_matrix_with_dropped(votes, BINARY_VERDICTS, annotators, ("unsure",))
    result = dawid_skene(codes, len(BINARY_VERDICTS), pseudo_count=pseudo_count)
    post = result.posteriors
    evidence = counts.sum(axis=1) > 0
    best = post.argmax(axis=1)
    return pd.DataFrame(
        {
            "ds_label": np.where(evidence, np.array(BINARY_VERDICTS, dtype=object)[best], "unsure").astype(object),
            "ds_posterior": np.where(evidence, post.max(axis=1), np.nan),
        },
        index=pd.Index(items, name="round_item_id"),
    )


@dataclass(frozen=True, eq=False)
class RaterFit:
    """Dawid-Skene over raters of several kinds (reviewers and judges), per item and per rater.

    Attributes
    ----------
    labels : pandas.DataFrame
        Indexed by item (every item asked for, in the order given): ``ds_label`` (harmful or safe,
        the larger posterior; an exact 0.5 tie goes to harmful; ``unsure`` for an item with no
        harmful or safe rating), ``ds_posterior`` (that posterior; NaN without a rating) and
        ``n_ratings`` (its harmful and safe ratings).
    raters : pandas.DataFrame
        One row per rater, in the order given: ``kind``, ``rater``, ``n_harmful``, ``n_safe``
        (its ratings), ``n_missing`` (its ratings that are neither: ``unsure``, ``ambiguous``),
        ``n_unrated`` (items without any rating of it), ``sensitivity`` = P(says harmful | harmful),
        ``specificity`` = P(says safe | safe), both NaN for a rater without a harmful or safe
        rating (the fit has nothing to estimate them from), and ``note`` saying so.
    result : DawidSkeneResult
        The fit itself (confusion matrices in the order of ``raters``).
    """

    labels: pd.DataFrame
    raters: pd.DataFrame
    result: DawidSkeneResult


def dawid_skene_raters(
    ratings: pd.DataFrame,
    raters: Sequence[tuple[str, str]],
    items: Sequence[Any],
    *,
    pseudo_count: float = DEFAULT_PSEUDO_COUNT,
) -> RaterFit:
    """Dawid-Skene over every rater of ``raters`` on ``items``; harmful and safe count, anything else is missing.

    A rater is a (kind, name) pair, so that a judge and a reviewer that happen to share a name
    (a judge called ``A1``) stay two raters.

    Parameters
    ----------
    ratings : pandas.DataFrame
        One row per rating: ``item``, ``kind``, ``rater``, ``verdict``. ``harmful`` and ``safe``
        are observations; every other verdict (``unsure``, ``ambiguous``, None) is a missing
        observation of that rater on that item, counted in ``n_missing``.
    raters : sequence of (str, str)
        The (kind, rater) pairs, in the order of the output.
    items : sequence
        The items, in the order of the output.
    pseudo_count : float
        See :func:`dawid_skene`.

    Returns
    -------
    RaterFit

    Raises
    ------
    ValueError
        A rating of an item or rater not listed, a rater listed twice, or two ratings of one item
        by one rater: nothing is dropped or chosen silently.

    Examples
    --------
    Two reviewers agree on 40 items; a judge says the opposite of them on every one:

    >>> truth = ["harmful" if i % 2 else "safe" for i in range(40)]
    >>> flip = {"harmful": "safe", "safe": "harmful"}
    >>> rows = [(i, "reviewer", a, t) for i, t in enumerate(truth) for a in ("A1", "A2")]
    >>> rows += [(i, "judge", "j", flip[t]) for i, t in enumerate(truth)]
    >>> ratings = pd.DataFrame(rows, columns=["item", "kind", "rater", "verdict"])
    >>> fit = dawid_skene_raters(ratings, [("reviewer", "A1"), ("reviewer", "A2"), ("judge", "j")], range(40))
    >>> fit.labels.ds_label.tolist() == truth
    True
    >>> fit.raters[["rater", "sensitivity", "specificity"]].round(2).values.tolist()
    [['A1', 0.95, 0.95], ['A2', 0.95, 0.95], ['j', 0.05, 0.05]]
    """
    keys = [(str(k), str(r)) for k, r in raters]
    if len(set(keys)) != len(keys):
        raise ValueError("a rater is listed twice; list every (kind, rater) pair once.")
    item_list = list(items)
    if len(set(item_list)) != len(item_list):
        raise ValueError("an item is listed twice; list every item once.")
    col = {k: j for j, k in enumerate(keys)}
    row = {it: u for u, it in enumerate(item_list)}
    U, J = len(item_list), len(keys)
    pair = list(zip(ratings["kind"].astype(str), ratings["rater"].astype(str), strict=True))
    unknown_raters = sorted({p for p in pair if p not in col})
    if unknown_raters:
        raise ValueError(f"ratings of raters not listed: {unknown_raters[:5]}")
    unknown_items = [it for it in ratings["item"].tolist() if it not in row]
    if unknown_items:
        raise ValueError(f"ratings of items not listed: {unknown_items[:5]}")
    u = np.array([row[it] for it in ratings["item"].tolist()], dtype=np.int64)
    j = np.array([col[p] for p in pair], dtype=np.int64)
    if len(np.unique(u * max(J, 1) + j)) != len(u):
        raise ValueError("two ratings of one item by one rater; pass one rating per item and rater.")
    verdict = ratings["verdict"].astype(object).to_numpy()
    code = np.array([BINARY_VERDICTS.index(v) if v in BINARY_VERDICTS else -1 for v in verdict], dtype=np.int64)
    codes = np.full((U, J), -1, dtype=np.int64)
    codes[u, j] = code
    result = dawid_skene(codes, len(BINARY_VERDICTS), pseudo_count=pseudo_count)
    n_ratings = (codes >= 0).sum(axis=1)
    evidence = n_ratings > 0
    post = result.posteriors
    labels = pd.DataFrame(
        {
            "ds_label": np.where(evidence, np.array(BINARY_VERDICTS, dtype=object)[post.argmax(axis=1)], "unsure"),
            "ds_posterior": np.where(evidence, post.max(axis=1), np.nan),
            "n_ratings": n_ratings.astype(np.int64),
        },
        index=pd.Index(item_list, name="item"),
    )
    labels["ds_label"] = labels["ds_label"].astype(object)
    n_h = (codes == 0).sum(axis=0)
    n_s = (codes == 1).sum(axis=0)
    n_missing = np.bincount(j[code < 0], minlength=J) if J else np.zeros(0, np.int64)
    rated = (n_h + n_s) > 0
    se = np.where(rated, result.confusion[:, 0, 0], np.nan) if J else np.zeros(0)
    sp = np.where(rated, result.confusion[:, 1, 1], np.nan) if J else np.zeros(0)
    table = pd.DataFrame(
        {
            "kind": [k for k, _ in keys],
            "rater": [r for _, r in keys],
            "n_harmful": n_h.astype(np.int64),
            "n_safe": n_s.astype(np.int64),
            "n_missing": n_missing.astype(np.int64),
            "n_unrated": (U - n_h - n_s - n_missing).astype(np.int64),
            "sensitivity": se,
            "specificity": sp,
            "note": [
                "" if ok else "no harmful or safe rating: Dawid-Skene has nothing to estimate its error rates from"
                for ok in rated
            ],
        }
    )
    return RaterFit(labels, table, result)
