"""One group's agreement at once: the summary of every coefficient, the prevalence warning, the dropped votes.

:func:`agreement_summary` runs the coefficient core (:mod:`annotate.stats.agreement.coefficients`)
and the kappas (:mod:`annotate.stats.agreement.kappas`) on one **count matrix** ``(U, V)`` (and,
when given, its label matrix ``(U, J)``); :func:`prevalence_warning` flags the kappa paradox;
:func:`dropped_votes` records the votes a label set treats as missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from annotate.stats._common import NAN, SeedLike, as_codes
from annotate.stats.agreement.coefficients import (
    Level,
    category_agreement,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    percent_agreement,
)
from annotate.stats.agreement.kappas import brennan_prediger, conger_kappa, pairwise_cohen_kappa
from annotate.stats.agreement.matrices import _check_counts, counts_from_codes
from annotate.stats.agreement.results import AgreementSummary, DroppedVotes


def prevalence_warning(
    counts: ArrayLike, *, categories: Sequence[Any] | None = None, threshold: float = 0.9
) -> str | None:
    """Warn when one category holds more than ``threshold`` of the pairable values.

    Under such prevalence kappa-type coefficients and alpha drop towards 0 even when raw
    agreement is high (the kappa paradox, Feinstein & Cicchetti 1990), while AC1 stays high.

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
    categories : sequence, length V, optional
        Names for the message.
    threshold : float
        Share above which to warn (strictly greater).

    Returns
    -------
    str or None

    Examples
    --------
    >>> tc3 = np.repeat([[0, 2], [1, 1]], [90, 10], axis=0)
    >>> prevalence_warning(tc3, categories=["harmful", "safe"])[:46]
    'Category safe holds 95.0% of the 200 pairable '
    >>> prevalence_warning([[2, 0], [1, 1], [0, 2]]) is None
    True
    """
    n_all = _check_counts(counts)
    n_c = n_all[n_all.sum(axis=1) >= 2].sum(axis=0)
    n = int(n_c.sum())
    if n == 0:
        return None
    k = int(np.argmax(n_c))
    share = n_c[k] / n
    if share <= threshold:
        return None
    name = k if categories is None else list(categories)[k]
    return (
        f"Category {name!s} holds {share:.1%} of the {n} pairable values; under such prevalence "
        "kappa and alpha are depressed even when raw agreement is high, so read them together "
        "with AC1, percent agreement and category-specific agreement."
    )


def dropped_votes(
    counts: ArrayLike, dropped: ArrayLike | None = None, labels: Sequence[str] = ("unsure",)
) -> DroppedVotes:
    """How many votes a label set treats as missing, and what that costs in pairable units.

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
        The count matrix without the dropped votes.
    dropped : array_like of int, shape (U,), optional
        Votes dropped per unit (e.g. the ``unsure`` column of the 3-way count matrix); None =
        nothing was dropped.
    labels : sequence of str
        The verdicts that were dropped, for the record.

    Returns
    -------
    DroppedVotes

    Examples
    --------
    Three units rated by three reviewers; unit 2 had one unsure vote, unit 3 two of them, so
    unit 3 has a single vote left and is no longer pairable:

    >>> d = dropped_votes([[2, 1], [1, 1], [1, 0]], [0, 1, 2])
    >>> d.n_votes, d.n_dropped, round(d.share, 3), d.n_units_with_dropped, d.n_units_unpairable
    (6, 3, 0.333, 2, 1)
    """
    n_all = _check_counts(counts)
    m = n_all.sum(axis=1)
    raw = np.zeros(len(m), dtype=np.int64) if dropped is None else np.asarray(dropped)
    if raw.shape != m.shape:
        raise ValueError(f"dropped must have one entry per unit ({len(m)}); got shape {raw.shape}.")
    whole = raw.dtype.kind in "iu" or (
        raw.dtype.kind == "f" and bool(np.isfinite(raw).all() and (raw == np.round(raw)).all())
    )
    if not whole or (raw < 0).any():
        raise ValueError("dropped must hold non-negative whole vote counts, one per unit.")
    d = raw.astype(np.int64)
    n_votes, n_dropped = int(m.sum()), int(d.sum())
    total = n_votes + n_dropped
    return DroppedVotes(
        labels=tuple(str(x) for x in labels) if n_dropped or dropped is not None else (),
        n_votes=n_votes,
        n_dropped=n_dropped,
        share=n_dropped / total if total else NAN,
        n_units_with_dropped=int((d > 0).sum()),
        n_units_unpairable=int(((m + d) >= 2).sum() - (m >= 2).sum()),
    )


def agreement_summary(
    counts: ArrayLike,
    categories: Sequence[str],
    *,
    labels: ArrayLike | None = None,
    level: Level = "nominal",
    values: ArrayLike | None = None,
    n_boot: int = 2000,
    seed: SeedLike = 0,
    confidence: float = 0.95,
    prevalence_threshold: float = 0.9,
    dropped: ArrayLike | None = None,
    dropped_labels: Sequence[str] = ("unsure",),
) -> AgreementSummary:
    """Alpha, AC1, Fleiss' kappa, percent, category-specific agreement, Brennan-Prediger for one group.

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
    categories : sequence of str, length V
    labels : array_like, shape (U, J), optional
        The label matrix behind ``counts``; when given, pairwise Cohen's kappa (analytic SEs, no
        bootstrap) and Conger's kappa are added.
    level, values
        Passed to :func:`krippendorff_alpha`.
    n_boot, seed, confidence
        Bootstrap settings. With an int (or None) seed each coefficient is bootstrapped with
        that same seed, so ``summary.alpha`` equals ``krippendorff_alpha(counts, seed=seed)``;
        a Generator is consumed in the order alpha, AC1, Fleiss, percent, category,
        Brennan-Prediger, Conger.
    prevalence_threshold : float
        See :func:`prevalence_warning`.
    dropped : array_like of int, shape (U,), optional
        Votes per unit this label set treats as missing (the binary set's ``unsure`` votes);
        reported in ``summary.dropped`` (see :func:`dropped_votes`), never silently lost.
    dropped_labels : sequence of str
        The verdicts ``dropped`` counts.

    Returns
    -------
    AgreementSummary
        Never raises for undefined coefficients; each carries its ``undefined_reason``.

    Examples
    --------
    Two coders, five units, categories (harmful, safe): A says H H S S S, B says H S S S S.

    >>> labels = np.array([[0, 0], [0, 1], [1, 1], [1, 1], [1, 1]])
    >>> s = agreement_summary(counts_from_codes(labels, 2), ["harmful", "safe"], labels=labels, n_boot=0)
    >>> round(s.alpha.value, 6), round(s.ac1.value, 6), s.percent_agreement.value, s.category_shares
    (0.571429, 0.655172, 0.8, (0.3, 0.7))
    >>> round(s.pairwise_cohen.light_kappa, 6), s.prevalence_warning is None
    (0.545455, True)
    >>> round(s.brennan_prediger.value, 6), round(s.conger_kappa.value, 6)
    (0.6, 0.545455)

    The binary label set of the same reviewers, after two ``unsure`` votes on a sixth unit were
    dropped: the summary says so.

    >>> s = agreement_summary(np.array([[2, 0], [1, 1], [0, 2], [0, 2], [0, 2], [0, 0]]), ["harmful", "safe"],
    ...                       dropped=[0, 0, 0, 0, 0, 2], n_boot=0)
    >>> s.dropped.n_dropped, round(s.dropped.share, 3), s.dropped.n_units_unpairable
    (2, 0.167, 1)
    """
    n_all = _check_counts(counts)
    U, V = n_all.shape
    cats = tuple(str(c) for c in categories)
    if len(cats) != V:
        raise ValueError(f"categories has {len(cats)} entries but the count matrix has {V} columns.")
    pairwise = conger = None
    y = None if labels is None else as_codes(labels, V)
    if y is not None:
        if y.shape[0] != U or not np.array_equal(counts_from_codes(y, V), n_all):
            raise ValueError("The label matrix does not match the count matrix; build both from the same data.")
        pairwise = pairwise_cohen_kappa(y, V)
    dropped_record = dropped_votes(n_all, dropped, dropped_labels)
    m = n_all.sum(axis=1)
    n_c = n_all[m >= 2].sum(axis=0)
    n = int(n_c.sum())
    alpha = krippendorff_alpha(n_all, level=level, values=values, n_boot=n_boot, seed=seed, confidence=confidence)
    ac1 = gwet_ac1(n_all, n_boot=n_boot, seed=seed, confidence=confidence)
    fleiss = fleiss_kappa(n_all, n_boot=n_boot, seed=seed, confidence=confidence)
    percent = percent_agreement(n_all, n_boot=n_boot, seed=seed, confidence=confidence)
    per_cat = category_agreement(n_all, categories=cats, n_boot=n_boot, seed=seed, confidence=confidence)
    bp = brennan_prediger(n_all, n_boot=n_boot, seed=seed, confidence=confidence)
    if y is not None:
        conger = conger_kappa(y, V, n_boot=n_boot, seed=seed, confidence=confidence)
    return AgreementSummary(
        categories=cats,
        n_units=U,
        n_rated_units=int((m >= 1).sum()),
        n_pairable_units=int((m >= 2).sum()),
        n_pairable_values=n,
        category_shares=tuple(float(x / n) if n else NAN for x in n_c),
        alpha=alpha,
        ac1=ac1,
        fleiss_kappa=fleiss,
        percent_agreement=percent,
        category_agreement=per_cat,
        pairwise_cohen=pairwise,
        prevalence_warning=prevalence_warning(n_all, categories=cats, threshold=prevalence_threshold),
        brennan_prediger=bp,
        conger_kappa=conger,
        dropped=dropped_record,
    )
