"""Result types of the agreement statistics: plain frozen dataclasses with ``to_dict``.

Every result keeps its undefined cases explicit: ``value`` is NaN and ``undefined_reason`` says why
(a full sentence); ``to_dict`` turns NaN into None so that ``json.dumps(..., allow_nan=False)`` works.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from annotate.stats._common import NAN, jsonable


class _MaybeUndefined:
    """What every estimate shares: ``undefined_reason`` is None exactly when ``value`` is a number."""

    undefined_reason: str | None

    @property
    def defined(self) -> bool:
        """True when ``value`` is a number."""
        return self.undefined_reason is None


@dataclass(frozen=True)
class Coefficient(_MaybeUndefined):
    """One agreement coefficient with its bootstrap interval.

    Attributes
    ----------
    name : str
        e.g. ``"gwet_ac1"``, ``"fleiss_kappa"``, ``"cohen_kappa"``.
    value : float
        Point estimate; NaN when undefined (see ``undefined_reason``).
    ci_low, ci_high : float
        BCa bootstrap interval at level ``confidence``; NaN without bootstrap or where
        ``interval_note`` says why there is none.
    se : float
        Bootstrap standard error (SD of the defined replicates, ddof=1).
    se_jackknife : float
        Leave-one-unit-out jackknife standard error, a check on ``se``.
    se_analytic : float
        Large-sample (asymptotic) standard error from a closed formula, where one exists:
        Cohen's and weighted kappa (Fleiss, Cohen & Everitt 1969, SAS's ASE); else NaN. The
        standard error under "no agreement beyond chance", used for the z test, is
        ``components["se_h0"]`` (with ``z`` and a two-sided ``p_value``).
    n_units : int
        Units that entered the estimate (the resampled population).
    n_excluded : int
        Units of the input that did not enter it (unpairable, unrated, or incomplete for Fleiss).
    n_boot : int
        Bootstrap replicates drawn (0 = no interval).
    n_boot_undefined : int
        Replicates on which the coefficient was undefined; left out of the interval.
    confidence : float
        Interval level.
    components : dict of str to float
        Ingredients of the estimate (``p_a``, ``p_e``, ``P_bar`` ...), for reports and tests.
    undefined_reason : str or None
        Full sentence when ``value`` is NaN, else None.
    interval_note : str or None
        Why a defined coefficient has no interval although replicates were drawn (too few
        pairable values, a majority of undefined replicates, a zero-width interval: "too few
        units for an interval"); None when it has one or no bootstrap was asked for.
    """

    name: str
    value: float
    ci_low: float = NAN
    ci_high: float = NAN
    se: float = NAN
    se_jackknife: float = NAN
    n_units: int = 0
    n_excluded: int = 0
    n_boot: int = 0
    n_boot_undefined: int = 0
    confidence: float = 0.95
    components: dict[str, float] = field(default_factory=dict)
    undefined_reason: str | None = None
    se_analytic: float = NAN
    interval_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict (NaN becomes None)."""
        out: dict[str, Any] = jsonable(self)
        return out


@dataclass(frozen=True)
class AlphaResult(_MaybeUndefined):
    """Krippendorff's alpha with bootstrap interval, jackknife SE and threshold probabilities.

    Attributes
    ----------
    level : {"nominal", "ordinal", "interval", "ratio"}
    value, ci_low, ci_high, se, se_jackknife : float
        As in :class:`Coefficient`.
    q : tuple of (float, float)
        ``(alpha_min, P*(alpha < alpha_min))`` from the bootstrap distribution, by default for
        Krippendorff's thresholds 0.667 and 0.800 (KALPHA's q). NaN without bootstrap.
    n_units : int
        Pairable units (two or more ratings), the resampled population.
    n_excluded : int
        Units with fewer than two ratings.
    n_values : int
        Pairable values ``n`` (sum of ``m_u`` over pairable units).
    n_boot, n_boot_undefined, confidence, components, undefined_reason, interval_note
        As in :class:`Coefficient`; ``components`` holds ``D_o`` and ``D_e``.
    """

    level: str
    value: float
    ci_low: float = NAN
    ci_high: float = NAN
    se: float = NAN
    se_jackknife: float = NAN
    q: tuple[tuple[float, float], ...] = ()
    n_units: int = 0
    n_excluded: int = 0
    n_values: int = 0
    n_boot: int = 0
    n_boot_undefined: int = 0
    confidence: float = 0.95
    components: dict[str, float] = field(default_factory=dict)
    undefined_reason: str | None = None
    interval_note: str | None = None

    def q_below(self, alpha_min: float) -> float:
        """Bootstrap probability that alpha is below ``alpha_min`` (one of the thresholds)."""
        for threshold, prob in self.q:
            if math.isclose(threshold, alpha_min):
                return prob
        raise ValueError(
            f"No bootstrap probability was computed for alpha_min={alpha_min}; "
            f"pass it in `thresholds` (computed: {[t for t, _ in self.q]})."
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict; ``q`` becomes ``{"0.667": p, "0.8": p}``."""
        out: dict[str, Any] = jsonable(self)
        out["q"] = {str(t): jsonable(p) for t, p in self.q}
        return out


@dataclass(frozen=True)
class PairwiseKappa:
    """Cohen's kappa for every pair of annotators.

    Attributes
    ----------
    annotators : tuple, length J
    pairs : tuple of (int, int, Coefficient)
        ``(a, b, kappa)`` for ``a < b``, computed on the units both annotators rated.
    """

    annotators: tuple[Any, ...]
    pairs: tuple[tuple[int, int, Coefficient], ...]

    def matrix(self) -> NDArray[np.float64]:
        """Symmetric kappa matrix, shape (J, J); NaN on the diagonal and for undefined pairs."""
        J = len(self.annotators)
        out = np.full((J, J), np.nan)
        for a, b, k in self.pairs:
            out[a, b] = out[b, a] = k.value
        return out

    @property
    def light_kappa(self) -> float:
        """Light's kappa: mean of the defined pairwise values (NaN if none is defined)."""
        vals = [k.value for _, _, k in self.pairs if k.defined]
        return float(np.mean(vals)) if vals else NAN

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict keyed ``"<a>|<b>"``."""
        return {
            "annotators": jsonable(list(self.annotators)),
            "light_kappa": jsonable(self.light_kappa),
            "pairs": {f"{self.annotators[a]}|{self.annotators[b]}": k.to_dict() for a, b, k in self.pairs},
        }


@dataclass(frozen=True)
class DroppedVotes:
    """Votes a label set treats as missing: the ``unsure`` votes of the binary set.

    Binary alpha describes the units and votes that remain once ``unsure`` is dropped, an easier
    subset; these numbers say how much was dropped, so that the subset is never read as the whole.

    Attributes
    ----------
    labels : tuple of str
        The verdicts treated as missing (``("unsure",)`` for the binary set; empty for 3-way).
    n_votes : int
        Votes kept: the ratings in the count matrix.
    n_dropped : int
        Votes dropped as missing.
    share : float
        ``n_dropped / (n_votes + n_dropped)``; NaN when there is no vote at all.
    n_units_with_dropped : int
        Units that lost at least one vote.
    n_units_unpairable : int
        Units pairable with the dropped votes (two or more votes) but not without them: they are
        in no alpha, AC1 or percent agreement of this label set.
    """

    labels: tuple[str, ...]
    n_votes: int
    n_dropped: int
    share: float
    n_units_with_dropped: int
    n_units_unpairable: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict."""
        out: dict[str, Any] = jsonable(self)
        return out


@dataclass(frozen=True)
class AgreementSummary:
    """All agreement statistics for one group of units (a stratum, a benchmark, or pooled).

    Attributes
    ----------
    categories : tuple of str, length V
    n_units, n_rated_units, n_pairable_units, n_pairable_values : int
        Units in the input, with at least one rating, with at least two ratings; pairable values.
    category_shares : tuple of float, length V
        ``n_c / n`` over the pairable values.
    alpha : AlphaResult
    ac1, fleiss_kappa, percent_agreement : Coefficient
    category_agreement : tuple of Coefficient, length V
        ``p_c = o_cc / n_c``.
    pairwise_cohen : PairwiseKappa or None
        Only when a label matrix was given.
    prevalence_warning : str or None
    brennan_prediger : Coefficient
        Percent agreement corrected by the fixed chance term ``1 / V``.
    conger_kappa : Coefficient or None
        Only when a label matrix was given (it needs to know who rated what).
    dropped : DroppedVotes
        Votes this label set treats as missing (none unless the caller says so).
    """

    categories: tuple[str, ...]
    n_units: int
    n_rated_units: int
    n_pairable_units: int
    n_pairable_values: int
    category_shares: tuple[float, ...]
    alpha: AlphaResult
    ac1: Coefficient
    fleiss_kappa: Coefficient
    percent_agreement: Coefficient
    category_agreement: tuple[Coefficient, ...]
    pairwise_cohen: PairwiseKappa | None
    prevalence_warning: str | None
    brennan_prediger: Coefficient
    conger_kappa: Coefficient | None
    dropped: DroppedVotes

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict (``json.dumps(..., allow_nan=False)`` works)."""
        cats = [str(c) for c in self.categories]
        return {
            "categories": cats,
            "n_units": self.n_units,
            "n_rated_units": self.n_rated_units,
            "n_pairable_units": self.n_pairable_units,
            "n_pairable_values": self.n_pairable_values,
            "category_shares": {c: jsonable(s) for c, s in zip(cats, self.category_shares, strict=True)},
            "prevalence_warning": self.prevalence_warning,
            "alpha": self.alpha.to_dict(),
            "ac1": self.ac1.to_dict(),
            "fleiss_kappa": self.fleiss_kappa.to_dict(),
            "percent_agreement": self.percent_agreement.to_dict(),
            "category_agreement": {c: k.to_dict() for c, k in zip(cats, self.category_agreement, strict=True)},
            "pairwise_cohen": None if self.pairwise_cohen is None else self.pairwise_cohen.to_dict(),
            "brennan_prediger": self.brennan_prediger.to_dict(),
            "conger_kappa": None if self.conger_kappa is None else self.conger_kappa.to_dict(),
            "dropped": self.dropped.to_dict(),
            "conventions": dict(CONVENTIONS),
        }


#: Short statement of the conventions, copied into every summary so exports are self-describing.
CONVENTIONS: Mapping[str, str] = {
    "single_rating_units": "unpairable: excluded from alpha, percent and category agreement; "
    "counted in AC1's pi_q (irrCAC convention)",
    "fleiss": "complete units only (m_u = r); incomplete units dropped and counted",
    "ac1_Q": "number of declared categories",
    "percent_agreement": "Gwet p_a: mean over pairable units of the share of agreeing pairs",
    "interval": "BCa unit bootstrap, pattern-compressed; undefined replicates excluded; no interval with fewer "
    "than 30 pairable values or (alpha, Fleiss, Conger, category agreement) 10 units of the second most "
    "frequent category, a majority of undefined replicates, or zero width",
    "brennan_prediger": "percent agreement (Gwet p_a) with chance 1/Q, Q = number of declared categories",
    "conger_kappa": "Gwet p_a; chance from each rater's own category shares over the units that rater rated "
    "(irrCAC conger.kappa.raw)",
    "weighted_kappa": "disagreement weights |v_c - v_k| (linear) or (v_c - v_k)^2 (quadratic) on the category "
    "values, default the codes 0..V-1 of the declared categories",
    "dropped": "votes a label set treats as missing (binary: unsure) are counted and reported, never silently lost",
}


@dataclass(frozen=True)
class AnnotatorDiagnostic:
    """Diagnostics of one annotator (docs/methods.md section 2.5).

    Attributes
    ----------
    annotator : Any
    n_rated : int
        Units this annotator rated.
    n_consensus_units : int
        Rated units on which the *other* annotators form a strict majority.
    agreement_with_consensus : float
        Share of those units where the annotator's label equals that majority (NaN if none).
    kappa_with_consensus : Coefficient
        Cohen's kappa between the annotator and the leave-one-out majority.
    alpha_if_deleted : Coefficient
        Nominal alpha on the data without this annotator (no bootstrap).
    alpha_delta : float
        ``alpha_if_deleted - alpha`` (positive = the group agrees better without them).
    sensitivity, specificity : float
        From a Dawid-Skene fit for the positive class, when one was given and the annotator shares
        an item with two others in it (where its confusion matrix is identified); else NaN.
    ds_n_shared : int
        Units of the Dawid-Skene fit that this annotator and at least two others rated (harmful or
        safe: unsure is missing there); 0 without a fit.
    ds_undefined_reason : str or None
        Why ``sensitivity`` and ``specificity`` are NaN although a fit was given (no item shared
        with another rater, or with one other at a time only); None when they are figures or no
        fit was asked for.
    flags : tuple of str
        Reasons to suggest recalibration.
    """

    annotator: Any
    n_rated: int
    n_consensus_units: int
    agreement_with_consensus: float
    kappa_with_consensus: Coefficient
    alpha_if_deleted: Coefficient
    alpha_delta: float
    sensitivity: float
    specificity: float
    ds_n_shared: int
    ds_undefined_reason: str | None
    flags: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict."""
        out: dict[str, Any] = jsonable(self)
        return out


@dataclass(frozen=True)
class AnnotatorDiagnostics:
    """Per-annotator diagnostics for one group, with the thresholds used.

    Attributes
    ----------
    alpha : float
        Nominal alpha on all annotators (point estimate; NaN if undefined).
    kappa_threshold, alpha_gain_threshold : float
        The flag thresholds applied.
    annotators : tuple of AnnotatorDiagnostic, length J
        In label-matrix column order.
    """

    alpha: float
    kappa_threshold: float
    alpha_gain_threshold: float
    annotators: tuple[AnnotatorDiagnostic, ...]

    @property
    def flagged(self) -> tuple[Any, ...]:
        """Annotators with at least one flag."""
        return tuple(a.annotator for a in self.annotators if a.flags)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict."""
        out: dict[str, Any] = jsonable(self)
        return out
