"""Label aggregation: Dawid & Skene (1979) EM over the reviewers' votes (pure).

Aggregation combines several annotators' labels of one item into an estimate of its true class,
weighting each annotator by an estimated confusion matrix; crowd-kit files it under
``aggregation/``. Here it is a diagnostic beside the label of record (the majority vote with an
explicit tie policy, :mod:`annotate.stats.adjudication`): its posterior is a confidence score for
escalation, its confusion matrices give per-annotator sensitivity and specificity
(:func:`annotate.stats.agreement.annotator_diagnostics`), and its labels make the "DS labels"
row of the sensitivity table (methods.md sections 2.5 and 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from annotate.columns import VERDICTS
from annotate.stats._common import NAN, as_codes, jsonable
from annotate.stats.agreement.votes import vote_matrix

__all__ = ["DawidSkeneResult", "dawid_skene", "dawid_skene_labels"]


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
        True if the log-likelihood gain per rating fell below ``tol`` before ``max_iter``.
    log_likelihood : float
        Observed-data log-likelihood per rating at the returned parameters.
    """

    posteriors: NDArray[np.float64]
    priors: NDArray[np.float64]
    confusion: NDArray[np.float64]
    n_iter: int
    converged: bool
    log_likelihood: float

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
            }
        )
        return out


def dawid_skene(
    labels_matrix: ArrayLike, n_categories: int, max_iter: int = 100, tol: float = 1e-5
) -> DawidSkeneResult:
    """Dawid & Skene (1979) EM with a full confusion matrix per annotator.

    Model: z_u ~ Categorical(pi); given z_u = k, annotator j says l with probability
    theta[j, k, l], independently across annotators. EM starts from majority-vote soft counts
    (T_uk = n_uk / m_u), then alternates

        M-step: pi_k = mean_u T_uk,  theta[j, k, l] proportional to sum_{u: y_uj = l} T_uk
        E-step: log T_uk = log pi_k + sum_{j rated u} log theta[j, k, y_uj] - log-normaliser

    and stops when the observed-data log-likelihood per rating gains less than ``tol``.

    Parameters
    ----------
    labels_matrix : array_like, shape (U, J)
        Codes ``0..K-1``; ``-1`` or NaN = no rating.
    n_categories : int
        K.
    max_iter : int
        Maximum EM iterations.
    tol : float
        Convergence threshold on the per-rating log-likelihood gain.

    Returns
    -------
    DawidSkeneResult

    Notes
    -----
    Work is O(R K) per iteration for R ratings: the ratings are kept as (unit, annotator, label)
    triplets and every sum is a ``np.bincount`` (no dense U x J x K one-hot array, no loop over
    units). Confusion entries are floored at 1e-10 before normalising so that a label an
    annotator never used for a class does not produce log(0). Deterministic: no random start.

    Examples
    --------
    Three annotators, eight units, two classes. A1 agrees with the majority everywhere, A2 and A3
    do not, so the fit trusts A1 most:

    >>> labels = np.array([[0, 0, 0], [0, 0, 1], [1, 1, 1], [1, 1, 0], [1, 1, 1], [0, 0, 0], [1, 0, 1], [0, 0, 0]])
    >>> res = dawid_skene(labels, 2)
    >>> res.converged, res.labels.tolist()
    (True, [0, 0, 1, 1, 1, 0, 1, 0])
    >>> np.round(np.diagonal(res.confusion, axis1=1, axis2=2), 3).tolist()  # P(j right | class)
    [[1.0, 1.0], [1.0, 0.75], [0.75, 0.75]]
    """
    y = as_codes(labels_matrix, n_categories)
    if int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}.")
    K = int(n_categories)
    U, J = y.shape
    u, j = np.nonzero(y >= 0)  # one entry per rating, R in total
    obs = y[u, j]  # the observed label l of each rating
    R = u.size
    if R == 0:
        prior = np.full(K, 1.0 / K)
        return DawidSkeneResult(np.tile(prior, (U, 1)), prior, np.full((J, K, K), 1.0 / K), 0, False, NAN)

    n_uk = np.bincount(u * K + obs, minlength=U * K).reshape(U, K).astype(float)
    m = n_uk.sum(axis=1)
    rated = m > 0
    T = np.where(rated[:, None], n_uk / np.where(rated, m, 1.0)[:, None], 1.0 / K)
    jl = j * K + obs  # (annotator, observed label) cell of each rating
    floor = 1e-10
    ll_prev = -np.inf
    converged = False
    n_iter = 0
    pi = theta = None
    for n_iter in range(1, int(max_iter) + 1):  # noqa: B007 (n_iter is reported after the loop)
        # M-step: pi from the rated units; counts N[j, k, l] = sum of T_uk over j's ratings l.
        pi = np.maximum(T[rated].mean(axis=0), floor)
        pi /= pi.sum()
        Tu = T[u]  # (R, K)
        N = np.stack([np.bincount(jl, weights=Tu[:, k], minlength=J * K) for k in range(K)])
        N = N.reshape(K, J, K).transpose(1, 0, 2)  # (J, true k, observed l)
        theta = np.maximum(N, floor)
        theta /= theta.sum(axis=2, keepdims=True)
        # E-step in logs: each rating adds log theta[j, :, l] to its unit's row.
        G = np.log(theta)[j, :, obs]  # (R, K)
        L = np.log(pi) + np.stack([np.bincount(u, weights=G[:, k], minlength=U) for k in range(K)], axis=1)
        L_max = L.max(axis=1, keepdims=True)
        T = np.exp(L - L_max)
        Z = T.sum(axis=1, keepdims=True)
        T /= Z
        ll = float((L_max[:, 0] + np.log(Z[:, 0]))[rated].sum()) / R
        if ll - ll_prev < tol:
            converged = True
            ll_prev = ll
            break
        ll_prev = ll
    assert pi is not None and theta is not None  # max_iter >= 1
    return DawidSkeneResult(T, pi, theta, n_iter, converged, ll_prev)


def dawid_skene_labels(votes: pd.DataFrame, annotators: list[str]) -> pd.DataFrame:
    """Dawid-Skene on the harmful / safe / unsure votes: the most likely class per item.

    Parameters
    ----------
    votes : pandas.DataFrame, shape (R, >=3)
        One row per (round_item_id, annotator) with ``verdict`` (as ``current_labels`` gives);
        verdicts outside harmful / safe / unsure and annotators not listed are left out.
    annotators : list of str, length J
        The reviewers whose votes count.

    Returns
    -------
    pandas.DataFrame
        Indexed by round_item_id (every item of ``votes``, sorted): ``ds_label``, the class with
        the largest posterior (any of the three verdicts; ties go to the first), and
        ``ds_posterior``, that posterior. Empty with these two columns when ``votes`` is empty.

    Examples
    --------
    >>> votes = pd.DataFrame(
    ...     {
    ...         "round_item_id": [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4],
    ...         "annotator": ["A1", "A2", "A3"] * 3 + ["A1", "A3"],
    ...         "verdict": ["harmful", "harmful", "harmful", "safe", "safe", "safe",
    ...                     "harmful", "harmful", "safe", "safe", "safe"],
    ...     }
    ... )
    >>> out = dawid_skene_labels(votes, ["A1", "A2", "A3"])
    >>> out.index.tolist(), out.ds_label.tolist(), out.ds_posterior.round(3).tolist()
    ([1, 2, 3, 4], ['harmful', 'safe', 'harmful', 'safe'], [1.0, 1.0, 1.0, 1.0])
    """
    if votes.empty:
        return pd.DataFrame(columns=["ds_label", "ds_posterior"])
    codes, _counts, items = vote_matrix(votes, VERDICTS, annotators)
    result = dawid_skene(codes, len(VERDICTS))
    post = result.posteriors
    best = post.argmax(axis=1)
    return pd.DataFrame(
        {"ds_label": [VERDICTS[k] for k in best], "ds_posterior": post.max(axis=1)},
        index=pd.Index(items, name="round_item_id"),
    )
