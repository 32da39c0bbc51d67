"""Per-annotator diagnostics: agreement with the leave-one-out consensus, alpha if deleted.

docs/methods.md section 2.5: for annotator j, % agreement and Cohen's kappa against the majority of
the *other* annotators, nominal alpha with j deleted, and (from a Dawid-Skene fit, see
:mod:`annotate.stats.aggregation`) sensitivity and specificity for one class, when the fit identifies
them: j rated an item that two other annotators rated too (else NaN, with the reason). The flags are
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

__all__ = ["DS_MIN_SHARED", "DS_NOT_SHARED", "DS_ONE_OTHER", "annotator_diagnostics"]

#: Units an annotator must share with two other raters at once in the Dawid-Skene fit (all three
#: voting harmful or safe: the fit's ``n_shared``) for its sensitivity and specificity to be
#: reported: one, where identification starts (see :func:`annotator_diagnostics`).
DS_MIN_SHARED = 1
#: The reason instead of the figures of an annotator who shares no unit with any other rater.
DS_NOT_SHARED = (
    "no item shared with another rater (a harmful or safe vote of both): Dawid-Skene cannot tell this rater's "
    "errors from the truth"
)
#: The reason instead of the figures of an annotator who shares units with one other rater at a
#: time only (never with two others on the same unit).
DS_ONE_OTHER = (
    "items shared with one other rater only, none with two others at once (harmful or safe votes): with one "
    "other rater Dawid-Skene cannot tell which of the two erred"
)


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
    class gives about (n + 1) / (n + 2)); ``unsure`` votes count as no vote there. Only for an
    annotator whose confusion matrix the fit identifies, one who rated a unit that two other
    annotators rated too:

        m_u = #{j : j rated u}                    (ratings of the fit: harmful or safe)
        s_j = #{u : j rated u and m_u >= 3}       (ds_n_shared: the fit's n_shared)
        sensitivity_j, specificity_j = the fit's figures if s_j >= DS_MIN_SHARED (= 1), else NaN

    with ``ds_undefined_reason`` :data:`DS_NOT_SHARED` when m_u = 1 on every unit j rated, and
    :data:`DS_ONE_OTHER` when m_u <= 2 on all of them but not 1 on all. On a unit only j rated, the
    posterior of the truth rests on j's own vote and the prior, so the fit cannot tell j's errors
    from the truth: alone on 100 items beside three reviewers who share 200, a reviewer 95 % or
    55 % right gets about the same figures, near 0.6 (tests/stats/test_dawid_skene.py). With one
    other rater on a unit, the two-class model has 5 parameters (the prior, and a sensitivity and
    a specificity per rater) for the 3 degrees of freedom of the 4 response patterns: it is not
    identified, and the fit splits the disagreements by the prior, the smoothing and the EM start
    (two reviewers 95 % and 65 % right on the same 1,000 items both get about 0.76). Three raters
    on the same units give 7 degrees of freedom for 7 parameters, where identification starts
    (docs/methods.md 9.8). The threshold is that boundary, not a precision. A higher one (5, 10)
    would only draw an arbitrary line between imprecise figures (in 200 runs of the design above
    with the lone reviewer 70 % right and 5 of her units shared with the three, her sensitivity has
    an SD of about 0.12; with 50 shared, 0.07), so ``ds_n_shared`` = s_j is reported beside the
    figures to weigh them by.

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
        ``binary_codes(labels, categories)``: its C classes may be fewer than the categories, and
        are then the first C of them (as for harmful, safe of harmful, safe, unsure); other
        categories are no rating in the fit. Its ``n_shared`` (the units each annotator shares
        with two others in it) decides which figures are reported; its ``n_rated`` must be the
        class votes per unit of ``labels``.
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

    Dawid-Skene figures need a unit shared with two others: annotators 0-2 rate units 0-5,
    annotator 3 rates units 6-9 alone, and annotator 4 rates units 10-13 with annotator 0 only.
    Annotators 3 and 4 get no figures, each with the reason that applies:

    >>> from annotate.stats.aggregation import dawid_skene
    >>> y = np.full((14, 5), -1)
    >>> y[:6, :3] = [[0, 0, 0], [0, 1, 0], [1, 1, 1], [1, 1, 0], [0, 0, 0], [1, 0, 1]]
    >>> y[6:10, 3] = [0, 1, 1, 0]
    >>> y[10:, [0, 4]] = [[0, 0], [1, 0], [1, 1], [0, 0]]
    >>> diag = annotator_diagnostics(y, 2, dawid_skene_result=dawid_skene(y, 2), positive=0)
    >>> [(d.ds_n_shared, round(d.sensitivity, 3)) for d in diag.annotators]
    [(6, 0.647), (6, 0.549), (6, 0.72), (0, nan), (0, nan)]
    >>> [d.ds_undefined_reason == DS_NOT_SHARED for d in diag.annotators[3:]]
    [True, False]
    >>> diag.annotators[4].ds_undefined_reason == DS_ONE_OTHER
    True
    """
    y = as_codes(labels, n_categories)
    U, J = y.shape
    K = int(n_categories)
    names = tuple(range(J)) if annotators is None else tuple(annotators)
    if len(names) != J:
        raise ValueError(f"annotators has {len(names)} names but the label matrix has {J} columns.")
    sens, spec, shared, reasons = _sensitivity_specificity(dawid_skene_result, positive, y, K)
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
            ds_n_shared=int(shared[jj]),
            ds_undefined_reason=reasons[jj],
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
    result: DawidSkeneResult | None, positive: int | None, y: NDArray[np.int64], K: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], list[str | None]]:
    """(J,) DS sensitivity and specificity of each annotator for class ``positive``, (J,) its units
    shared with two others s_j, and J reasons; the figures NaN where s_j < DS_MIN_SHARED, with
    the reason that applies (None where they are figures); NaN, s_j = 0 and no reason without a fit.

    The fit's C classes may be fewer than the label matrix's categories: Dawid-Skene's are
    harmful and safe only, with unsure votes as missing (annotate.stats.aggregation). They are the
    first C categories, and the fit's ``n_rated`` must be the votes for them per unit of ``y``.
    """
    U, J = y.shape
    if result is None or positive is None:
        return np.full(J, np.nan), np.full(J, np.nan), np.zeros(J, np.int64), [None] * J
    shape = result.confusion.shape
    if shape[0] != J or shape[1] != shape[2] or shape[1] > K:
        raise ValueError(
            f"The Dawid-Skene fit has confusion shape {shape}; expected ({J}, C, C) with C <= {K} "
            "classes for this label matrix."
        )
    if result.n_shared is None or result.n_shared.shape != (J,) or result.n_rated is None:
        raise ValueError(
            "The Dawid-Skene fit does not say which units its annotators share (n_shared, n_rated); fit it with "
            "dawid_skene()."
        )
    voted = (y >= 0) & (y < shape[1])  # (U, J): a rating of the fit (a class vote)
    m = voted.sum(axis=1)  # (U,) class votes per unit
    # A fit may leave out the units with a single vote: they carry no evidence on any rater's errors.
    if result.n_rated.shape != (U,) or not np.all((result.n_rated == m) | ((result.n_rated == 0) & (m <= 1))):
        raise ValueError(
            f"The Dawid-Skene fit's ratings per unit (n_rated) are not the votes for its {shape[1]} classes (the "
            "first categories) in this label matrix: fit it on these units, e.g. dawid_skene(binary_codes(...))."
        )
    shared = result.n_shared.astype(np.int64)
    with_one = (voted & (m >= 2)[:, None]).sum(axis=0)  # (J,) units shared with at least one other
    sens, spec = result.sensitivity_specificity(positive)
    known = shared >= DS_MIN_SHARED
    reasons = [None if k else DS_ONE_OTHER if n > 0 else DS_NOT_SHARED for k, n in zip(known, with_one, strict=True)]
    return np.where(known, sens, np.nan), np.where(known, spec, np.nan), shared, reasons


def _diagnostic(
    name: Any,
    y_j: NDArray[np.int64],
    counts: NDArray[np.int64],
    alpha_all: float,
    *,
    sensitivity: float,
    specificity: float,
    ds_n_shared: int,
    ds_undefined_reason: str | None,
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
        ds_n_shared=ds_n_shared,
        ds_undefined_reason=ds_undefined_reason,
        flags=tuple(flags),
    )
