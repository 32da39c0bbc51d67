"""Per-annotator diagnostics: agreement with the leave-one-out consensus, alpha if deleted.

docs/methods.md section 2.5: for annotator j, % agreement and Cohen's kappa against the majority of
the *other* annotators, nominal alpha with j deleted, and (from a Dawid-Skene fit, see
:mod:`annotate.stats.aggregation`) sensitivity and specificity for one class. The flags are
configurable suggestions for recalibration, not standards.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from annotate.stats._common import NAN, as_codes
from annotate.stats.agreement.coefficients import krippendorff_alpha
from annotate.stats.agreement.kappas import cohen_kappa
from annotate.stats.agreement.matrices import counts_from_codes
from annotate.stats.agreement.results import AnnotatorDiagnostic, AnnotatorDiagnostics, Coefficient

if TYPE_CHECKING:
    from annotate.stats.aggregation import DawidSkeneResult


def _alpha_value(counts: NDArray[np.int64]) -> Coefficient:
    """Nominal alpha point estimate as a Coefficient (no bootstrap, no jackknife)."""
    res = krippendorff_alpha(counts, n_boot=0)
    return Coefficient(
        "alpha_nominal",
        res.value,
        n_units=res.n_units,
        n_excluded=res.n_excluded,
        se_jackknife=res.se_jackknife,
        undefined_reason=res.undefined_reason,
    )


def annotator_diagnostics(
    labels: ArrayLike,
    n_categories: int,
    *,
    annotators: Sequence[Any] | None = None,
    kappa_threshold: float = 0.6,
    alpha_gain_threshold: float = 0.05,
    min_others: int = 2,
    dawid_skene_result: DawidSkeneResult | None = None,
    positive: int | None = None,
    n_boot: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
) -> AnnotatorDiagnostics:
    """Agreement of each annotator with the others.

    For annotator j: (1) % agreement and Cohen's kappa with the leave-one-out consensus, on the
    units j rated where the *other* annotators' ratings (at least ``min_others`` of them) have a
    strict majority label (with three annotators: both others agree); leaving j out avoids
    self-inclusion bias. (2) Nominal alpha with j deleted, and its difference from alpha on all.
    (3) Optionally DS sensitivity / specificity for class ``positive``: P(j says positive | truly
    positive) and P(j says negative | truly negative) from the smoothed fit, so that a reviewer
    with few items of a class is never reported as perfect (right on all n clear-cut items of a
    class gives about (n + 1) / (n + 2)); ``unsure`` votes count as no vote there.

    Flags (configurable suggestions, not standards): ``kappa_with_consensus < kappa_threshold``,
    ``alpha_if_deleted - alpha > alpha_gain_threshold``.

    Parameters
    ----------
    labels : array_like, shape (U, J)
        Codes ``0..V-1``; ``-1`` or NaN = no rating.
    n_categories : int
        V.
    annotators : sequence, length J, optional
    kappa_threshold, alpha_gain_threshold : float
    min_others : int
        Minimum number of other annotators' ratings for a unit to have a consensus.
    dawid_skene_result : DawidSkeneResult, optional
        A fit on the same annotators (J must match), e.g. on
        ``binary_codes(labels, categories)``: its classes may be a subset of the categories.
    positive : int, optional
        Class code of the fit for sensitivity / specificity.
    n_boot, seed, confidence
        Bootstrap of each kappa with the consensus over its consensus units (default none: the
        kappa carries its analytic SE, enough for a diagnostic; `annotate status` asks for an
        interval).

    Returns
    -------
    AnnotatorDiagnostics

    Examples
    --------
    Annotator 0 against the other two: on unit 0 they agree on 1 and she says 0; on unit 1 they
    split (no consensus); on unit 2 only one other rated (too few); units 3 and 4 agree with her:

    >>> labels = np.array([[0, 1, 1], [0, 0, 1], [0, 0, -1], [1, 1, 1], [0, 0, 0]])
    >>> d = annotator_diagnostics(labels, 2).annotators[0]
    >>> d.n_consensus_units, round(d.agreement_with_consensus, 6), round(d.kappa_with_consensus.value, 6)
    (3, 0.666667, 0.4)
    >>> d.flags
    ('kappa_with_consensus 0.400 < 0.6', 'alpha_if_deleted - alpha = 0.075 > 0.05')
    """
    y = as_codes(labels, n_categories)
    U, J = y.shape
    K = int(n_categories)
    names = tuple(range(J)) if annotators is None else tuple(annotators)
    if len(names) != J:
        raise ValueError(f"annotators has {len(names)} names but the label matrix has {J} columns.")
    sens, spec = _sensitivity_specificity(dawid_skene_result, positive, J, K)
    counts = counts_from_codes(y, K)
    alpha_all = _alpha_value(counts).value
    out = [  # a loop over annotators only; every step inside is vectorised over units
        _diagnostic(
            names[jj],
            y[:, jj],
            counts,
            alpha_all,
            sensitivity=float(sens[jj]),
            specificity=float(spec[jj]),
            kappa_threshold=kappa_threshold,
            alpha_gain_threshold=alpha_gain_threshold,
            min_others=min_others,
            n_boot=n_boot,
            seed=seed,
            confidence=confidence,
        )
        for jj in range(J)
    ]
    return AnnotatorDiagnostics(float(alpha_all), kappa_threshold, alpha_gain_threshold, tuple(out))


def _sensitivity_specificity(
    result: DawidSkeneResult | None, positive: int | None, J: int, K: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(J,) DS sensitivity and specificity of each annotator for class ``positive``; NaN without a fit.

    The fit's classes may be fewer than the label matrix's categories: Dawid-Skene's are
    harmful and safe only, with unsure votes as missing (annotate.stats.aggregation).
    """
    if result is None or positive is None:
        return np.full(J, np.nan), np.full(J, np.nan)
    shape = result.confusion.shape
    if shape[0] != J or shape[1] != shape[2] or shape[1] > K:
        raise ValueError(
            f"The Dawid-Skene fit has confusion shape {shape}; expected ({J}, C, C) with C <= {K} "
            "classes for this label matrix."
        )
    return result.sensitivity_specificity(positive)


def _diagnostic(
    name: Any,
    y_j: NDArray[np.int64],
    counts: NDArray[np.int64],
    alpha_all: float,
    *,
    sensitivity: float,
    specificity: float,
    kappa_threshold: float,
    alpha_gain_threshold: float,
    min_others: int,
    n_boot: int,
    seed: int,
    confidence: float,
) -> AnnotatorDiagnostic:
    """One annotator (labels ``y_j``, shape (U,)) against the others (``counts`` (U, K) of everyone).

    The consensus units are those ``j`` rated where the others have at least ``min_others``
    ratings with a strict majority; kappa with that consensus, alpha with ``j`` deleted, the flags.
    """
    K = counts.shape[1]
    others = counts - (y_j[:, None] == np.arange(K)[None, :])  # (U, K): counts without annotator j
    m_o = others.sum(axis=1)
    top = others.max(axis=1)
    consensus = others.argmax(axis=1)
    ok = (y_j >= 0) & (m_o >= min_others) & (2 * top > m_o)
    n_ok = int(ok.sum())
    agree = float((y_j[ok] == consensus[ok]).mean()) if n_ok else NAN
    kappa = cohen_kappa(y_j[ok], consensus[ok], K, n_boot=n_boot, seed=seed, confidence=confidence)
    a_del = _alpha_value(others)
    delta = a_del.value - alpha_all
    flags = []
    if kappa.defined and kappa.value < kappa_threshold:
        flags.append(f"kappa_with_consensus {kappa.value:.3f} < {kappa_threshold}")
    if math.isfinite(delta) and delta > alpha_gain_threshold:
        flags.append(f"alpha_if_deleted - alpha = {delta:.3f} > {alpha_gain_threshold}")
    return AnnotatorDiagnostic(
        annotator=name,
        n_rated=int((y_j >= 0).sum()),
        n_consensus_units=n_ok,
        agreement_with_consensus=agree,
        kappa_with_consensus=kappa,
        alpha_if_deleted=a_del,
        alpha_delta=float(delta),
        sensitivity=sensitivity,
        specificity=specificity,
        flags=tuple(flags),
    )
