"""Inter-annotator agreement: pure, vectorised statistics on count matrices.

Every coefficient here is computed from the **count matrix** ``n`` with shape ``(U, V)``: one row
per unit (a response sent to humans), one column per category, ``n[u, c]`` = number of annotators
who gave unit ``u`` category ``c``; ``m_u = n[u].sum()`` is the number of ratings of unit ``u``.
Helpers build it from a long table ``(item, annotator, label)`` or from a reliability matrix
``(annotators, units)`` with NaN for missing. Functions that need annotator identity (Cohen's
kappa, per-annotator diagnostics, Dawid-Skene) take a **label matrix** of integer codes with shape
``(U, J)``, ``-1`` or NaN meaning "no rating".

Notation follows ``docs/methods.md`` section 2: ``o`` coincidence matrix, ``n_c`` its margins,
``p_a`` / ``p_e`` observed and chance agreement, ``pi_q`` Gwet's category propensities.

Conventions (documented because the libraries disagree):

* **Single-rating units** (``m_u = 1``) are unpairable: they never enter alpha, percent agreement
  or category-specific agreement, but they *do* count towards AC1's ``pi_q`` (Gwet 2014 /
  irrCAC raw-data formulas). Fleiss' kappa uses complete units only (``m_u = r``) and reports how
  many units it dropped.
* **Q for AC1** is the number of declared categories (columns), as irrCAC does when the category
  labels are given; irrCAC's default counts only observed categories.
* **Percent agreement** is Gwet's ``p_a``: the mean over pairable units of the share of agreeing
  rater pairs, each unit weighted equally (alpha weights units by their number of values).
* **Undefined** results never raise and never fake a value: ``value`` is NaN and
  ``undefined_reason`` says why (fewer than two pairable units, one category only, no complete
  unit, ...). AC1 with a single observed category would be 1 by construction (``p_e = 0``) and
  is reported as undefined for the same reason as alpha.
* **Bootstrap**: Efron's nonparametric bootstrap over the units that enter each coefficient,
  percentile interval, drawn in pattern-compressed form (methods.md section 2.3). Replicates on
  which a coefficient is undefined (e.g. alpha on a resample with one category) are left out of
  the interval and counted in ``n_boot_undefined``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "Level",
    "LabelMatrix",
    "Coefficient",
    "AlphaResult",
    "PairwiseKappa",
    "AgreementSummary",
    "AnnotatorDiagnostic",
    "AnnotatorDiagnostics",
    "DawidSkeneResult",
    "label_matrix_from_long",
    "label_matrix_from_reliability_data",
    "counts_from_codes",
    "counts_from_long",
    "counts_from_reliability_data",
    "krippendorff_alpha",
    "gwet_ac1",
    "fleiss_kappa",
    "percent_agreement",
    "category_agreement",
    "cohen_kappa_table",
    "cohen_kappa",
    "pairwise_cohen_kappa",
    "prevalence_warning",
    "agreement_summary",
    "annotator_diagnostics",
    "dawid_skene",
]

Level = Literal["nominal", "ordinal", "interval", "ratio"]
SeedLike = int | np.random.Generator | None

_LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")
# Upper bound on the elements of one (replicates x patterns) weight block; keeps memory flat
# when there are many distinct count patterns (many annotators or categories).
_MAX_BLOCK = 1 << 22
_NAN = float("nan")


# --------------------------------------------------------------------------------------------
# Result types
# --------------------------------------------------------------------------------------------


def _jsonable(obj: Any) -> Any:
    """Convert results to JSON-ready Python objects; NaN and inf become None."""
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _jsonable(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        return x if math.isfinite(x) else None
    return obj


@dataclass(frozen=True)
class Coefficient:
    """One agreement coefficient with its bootstrap interval.

    Attributes
    ----------
    name : str
        e.g. ``"gwet_ac1"``, ``"fleiss_kappa"``, ``"cohen_kappa"``.
    value : float
        Point estimate; NaN when undefined (see ``undefined_reason``).
    ci_low, ci_high : float
        Percentile bootstrap interval at level ``confidence``; NaN without bootstrap.
    se : float
        Bootstrap standard error (SD of the defined replicates, ddof=1).
    se_jackknife : float
        Leave-one-unit-out jackknife standard error, a check on ``se``.
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
    """

    name: str
    value: float
    ci_low: float = _NAN
    ci_high: float = _NAN
    se: float = _NAN
    se_jackknife: float = _NAN
    n_units: int = 0
    n_excluded: int = 0
    n_boot: int = 0
    n_boot_undefined: int = 0
    confidence: float = 0.95
    components: dict[str, float] = field(default_factory=dict)
    undefined_reason: str | None = None

    @property
    def defined(self) -> bool:
        """True when ``value`` is a number."""
        return self.undefined_reason is None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict (NaN becomes None)."""
        out: dict[str, Any] = _jsonable(self)
        return out


@dataclass(frozen=True)
class AlphaResult:
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
    n_boot, n_boot_undefined, confidence, components, undefined_reason
        As in :class:`Coefficient`; ``components`` holds ``D_o`` and ``D_e``.
    """

    level: str
    value: float
    ci_low: float = _NAN
    ci_high: float = _NAN
    se: float = _NAN
    se_jackknife: float = _NAN
    q: tuple[tuple[float, float], ...] = ()
    n_units: int = 0
    n_excluded: int = 0
    n_values: int = 0
    n_boot: int = 0
    n_boot_undefined: int = 0
    confidence: float = 0.95
    components: dict[str, float] = field(default_factory=dict)
    undefined_reason: str | None = None

    @property
    def defined(self) -> bool:
        """True when ``value`` is a number."""
        return self.undefined_reason is None

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
        out: dict[str, Any] = _jsonable(self)
        out["q"] = {str(t): _jsonable(p) for t, p in self.q}
        return out


@dataclass(frozen=True, eq=False)
class LabelMatrix:
    """Integer-coded ratings, one row per unit and one column per annotator.

    Attributes
    ----------
    codes : ndarray of int64, shape (U, J)
        Category index in ``0 .. V-1``; ``-1`` = no rating.
    items : tuple, length U
        Unit identifiers, in row order.
    annotators : tuple, length J
        Annotator identifiers, in column order.
    categories : tuple, length V
        Category labels, in code order.
    """

    codes: NDArray[np.int64]
    items: tuple[Any, ...]
    annotators: tuple[Any, ...]
    categories: tuple[Any, ...]

    def counts(self) -> NDArray[np.int64]:
        """Count matrix, shape (U, V)."""
        return counts_from_codes(self.codes, len(self.categories))

    def reliability_data(self) -> NDArray[np.float64]:
        """Codes as ``krippendorff.alpha`` wants them: shape (J, U), float, NaN = missing."""
        out = self.codes.T.astype(float)
        out[out < 0] = np.nan
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
        return float(np.mean(vals)) if vals else _NAN

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict keyed ``"<a>|<b>"``."""
        return {
            "annotators": _jsonable(list(self.annotators)),
            "light_kappa": _jsonable(self.light_kappa),
            "pairs": {f"{self.annotators[a]}|{self.annotators[b]}": k.to_dict() for a, b, k in self.pairs},
        }


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

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict (``json.dumps(..., allow_nan=False)`` works)."""
        cats = [str(c) for c in self.categories]
        return {
            "categories": cats,
            "n_units": self.n_units,
            "n_rated_units": self.n_rated_units,
            "n_pairable_units": self.n_pairable_units,
            "n_pairable_values": self.n_pairable_values,
            "category_shares": {c: _jsonable(s) for c, s in zip(cats, self.category_shares, strict=True)},
            "prevalence_warning": self.prevalence_warning,
            "alpha": self.alpha.to_dict(),
            "ac1": self.ac1.to_dict(),
            "fleiss_kappa": self.fleiss_kappa.to_dict(),
            "percent_agreement": self.percent_agreement.to_dict(),
            "category_agreement": {c: k.to_dict() for c, k in zip(cats, self.category_agreement, strict=True)},
            "pairwise_cohen": None if self.pairwise_cohen is None else self.pairwise_cohen.to_dict(),
            "conventions": dict(CONVENTIONS),
        }


#: Short statement of the conventions, copied into every summary so exports are self-describing.
CONVENTIONS: Mapping[str, str] = {
    "single_rating_units": "unpairable: excluded from alpha, percent and category agreement; "
    "counted in AC1's pi_q (irrCAC convention)",
    "fleiss": "complete units only (m_u = r); incomplete units dropped and counted",
    "ac1_Q": "number of declared categories",
    "percent_agreement": "Gwet p_a: mean over pairable units of the share of agreeing pairs",
    "interval": "percentile unit bootstrap, pattern-compressed; undefined replicates excluded",
}


# --------------------------------------------------------------------------------------------
# Input validation and builders
# --------------------------------------------------------------------------------------------


def _check_counts(counts: ArrayLike) -> NDArray[np.int64]:
    """Validate a count matrix and return it as int64, shape (U, V)."""
    arr = np.asarray(counts)
    if arr.ndim != 2:
        raise ValueError(
            f"The count matrix must be two-dimensional (units x categories); got an array with shape {arr.shape}."
        )
    if arr.shape[1] < 1:
        raise ValueError(f"The count matrix needs at least one category column; got shape {arr.shape}.")
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"The count matrix must hold integer counts; got dtype {arr.dtype}.")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise ValueError("The count matrix contains NaN or infinite values; counts must be finite integers.")
        if (arr != np.round(arr)).any():
            raise ValueError("The count matrix contains non-integer values; counts must be whole numbers.")
    out = arr.astype(np.int64)
    if out.size and out.min() < 0:
        u, c = np.argwhere(out < 0)[0]
        raise ValueError(f"Counts must be non-negative; found {out[u, c]} at unit {u}, category {c}.")
    return out


def _as_codes(labels: ArrayLike, n_categories: int) -> NDArray[np.int64]:
    """Validate a (U, J) label matrix of codes; NaN and -1 become -1."""
    if int(n_categories) != n_categories or n_categories < 1:
        raise ValueError(f"n_categories must be a positive integer; got {n_categories!r}.")
    arr = np.asarray(labels)
    if arr.ndim != 2:
        raise ValueError(
            f"The label matrix must be two-dimensional (units x annotators); got an array with shape {arr.shape}."
        )
    if arr.dtype.kind == "f":
        missing = np.isnan(arr)
        filled = np.where(missing, -1.0, arr)
        if (filled != np.round(filled)).any():
            raise ValueError("The label matrix contains non-integer codes; use 0..V-1, with -1 or NaN for missing.")
        codes = filled.astype(np.int64)
    elif arr.dtype.kind in "iu":
        codes = arr.astype(np.int64)
    else:
        raise ValueError(
            f"The label matrix must hold integer codes (dtype {arr.dtype} given); "
            "build it with label_matrix_from_long or label_matrix_from_reliability_data."
        )
    bad = (codes < -1) | (codes >= n_categories)
    if bad.any():
        u, j = np.argwhere(bad)[0]
        raise ValueError(
            f"Label codes must lie in 0..{n_categories - 1} (or -1 / NaN for missing); "
            f"found {codes[u, j]} at unit {u}, annotator {j}."
        )
    return codes


def counts_from_codes(codes: ArrayLike, n_categories: int) -> NDArray[np.int64]:
    """Count matrix from a label matrix.

    Parameters
    ----------
    codes : array_like, shape (U, J)
        Category codes ``0 .. V-1``; ``-1`` or NaN = no rating.
    n_categories : int
        V.

    Returns
    -------
    ndarray of int64, shape (U, V)
        ``n[u, c]`` = number of annotators who gave unit ``u`` category ``c``.
    """
    y = _as_codes(codes, n_categories)
    U = y.shape[0]
    K = int(n_categories)
    rated = y >= 0
    # One bincount over flat (unit, category) cells instead of a loop over annotators.
    flat = (np.arange(U, dtype=np.int64)[:, None] * K + y)[rated]
    return np.bincount(flat, minlength=U * K).reshape(U, K)


def _encode(values: NDArray[Any], categories: Sequence[Any] | None) -> tuple[NDArray[np.int64], tuple[Any, ...]]:
    """Map non-missing label values to codes 0..V-1 (default: sorted observed values)."""
    if categories is None:
        try:
            cats, codes = np.unique(values, return_inverse=True)
        except TypeError as exc:
            raise ValueError("The labels mix types that cannot be sorted; pass `categories` explicitly.") from exc
        return codes.astype(np.int64).ravel(), tuple(cats.tolist())
    cat_tuple = tuple(categories)
    index = pd.Index(cat_tuple)
    if not index.is_unique:
        raise ValueError(f"The categories must be distinct; got {list(cat_tuple)}.")
    codes = index.get_indexer(values)
    if (codes < 0).any():
        unknown = pd.unique(values[codes < 0])[:5]
        raise ValueError(
            f"Some labels are not among the categories {list(cat_tuple)}: {list(unknown)}. "
            "Add them to the categories or clean the labels first."
        )
    return codes.astype(np.int64), cat_tuple


def label_matrix_from_reliability_data(
    reliability_data: ArrayLike, categories: Sequence[Any] | None = None
) -> LabelMatrix:
    """Label matrix from a reliability matrix in ``krippendorff.alpha`` layout.

    Parameters
    ----------
    reliability_data : array_like, shape (J, U)
        Rows are annotators, columns are units; NaN or None = missing. Values may be numbers or
        strings.
    categories : sequence, optional
        Category values in code (and, for ordinal alpha, rank) order. Default: the sorted
        distinct observed values.

    Returns
    -------
    LabelMatrix
        ``codes`` with shape (U, J); ``items`` = ``0..U-1``; ``annotators`` = ``0..J-1``.
    """
    arr = np.asarray(reliability_data)
    if arr.ndim != 2:
        raise ValueError(
            f"The reliability data must be two-dimensional (annotators x units); got an array with shape {arr.shape}."
        )
    J, U = arr.shape
    missing = np.isnan(arr) if arr.dtype.kind == "f" else np.asarray(pd.isna(arr), dtype=bool)
    codes_t = np.full((J, U), -1, dtype=np.int64)
    codes, cats = _encode(arr[~missing], categories)
    codes_t[~missing] = codes
    return LabelMatrix(codes_t.T.copy(), tuple(range(U)), tuple(range(J)), cats)


def label_matrix_from_long(
    table: pd.DataFrame,
    categories: Sequence[Any],
    *,
    item: str = "item_id",
    annotator: str = "annotator",
    label: str = "label",
) -> LabelMatrix:
    """Label matrix from a long table with one row per (item, annotator).

    Parameters
    ----------
    table : pandas.DataFrame, shape (R, >=3)
        Columns ``item``, ``annotator`` and ``label``. A missing label (NaN/None) counts as no
        rating. Each (item, annotator) pair may appear at most once.
    categories : sequence, length V
        The label vocabulary in code order (e.g. ``("harmful", "safe", "unsure")``).
    item, annotator, label : str
        Column names.

    Returns
    -------
    LabelMatrix
        Items and annotators in sorted order; ``codes`` with shape (U, J).
    """
    missing_cols = [c for c in (item, annotator, label) if c not in table.columns]
    if missing_cols:
        raise ValueError(f"The annotation table lacks the column(s) {missing_cols}; it has {list(table.columns)}.")
    item_code, items = pd.factorize(table[item], sort=True)
    ann_code, anns = pd.factorize(table[annotator], sort=True)
    if (item_code < 0).any() or (ann_code < 0).any():
        raise ValueError("The annotation table has rows with a missing item or annotator id.")
    U, J = len(items), len(anns)
    flat = item_code.astype(np.int64) * J + ann_code
    if np.unique(flat).size != flat.size:
        dup = pd.Series(flat).duplicated(keep=False).to_numpy()
        first = table.loc[dup, [item, annotator]].iloc[0].tolist()
        raise ValueError(
            f"The annotation table has more than one row for (item, annotator) = {tuple(first)}; "
            "keep one current annotation per pair."
        )
    values = table[label].to_numpy()
    present = ~np.asarray(pd.isna(values), dtype=bool)
    codes, cats = _encode(values[present], categories)
    y = np.full(U * J, -1, dtype=np.int64)
    y[flat[present]] = codes
    return LabelMatrix(y.reshape(U, J), tuple(items.tolist()), tuple(anns.tolist()), cats)


def counts_from_long(
    table: pd.DataFrame,
    categories: Sequence[Any],
    *,
    item: str = "item_id",
    annotator: str = "annotator",
    label: str = "label",
) -> NDArray[np.int64]:
    """Count matrix, shape (U, V), from a long table; see :func:`label_matrix_from_long`."""
    return label_matrix_from_long(table, categories, item=item, annotator=annotator, label=label).counts()


def counts_from_reliability_data(
    reliability_data: ArrayLike, categories: Sequence[Any] | None = None
) -> NDArray[np.int64]:
    """Count matrix, shape (U, V), from a (J, U) reliability matrix with NaN for missing.

    Columns follow ``categories`` (default: sorted distinct observed values); see
    :func:`label_matrix_from_reliability_data`.
    """
    return label_matrix_from_reliability_data(reliability_data, categories).counts()


# --------------------------------------------------------------------------------------------
# Pattern-compressed estimation engine (methods.md section 2.3)
# --------------------------------------------------------------------------------------------


def _patterns(counts: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Distinct count rows and their frequencies.

    Every coefficient here depends on the data only through the multiset of count vectors, so
    the U rows collapse to P distinct patterns (P <= 16 for 3 annotators x 3 categories).

    Returns
    -------
    pats : ndarray of int64, shape (P, V)
    freq : ndarray of int64, shape (P,)
    """
    U, V = counts.shape
    if U == 0:
        return np.zeros((0, V), np.int64), np.zeros(0, np.int64)
    radix = int(counts.max()) + 1
    if V * math.log2(radix) < 62:
        # Mixed-radix key per row: np.unique on one int64 column is much cheaper than
        # np.unique(axis=0), and a bincount is cheaper still when the key space is small.
        place = radix ** np.arange(V, dtype=np.int64)
        key = counts @ place
        if radix**V <= max(1 << 16, 4 * U):
            freq_all = np.bincount(key, minlength=radix**V)
            keys = np.flatnonzero(freq_all)
            freq = freq_all[keys]
        else:
            keys, freq = np.unique(key, return_counts=True)
        pats = (keys[:, None] // place[None, :]) % radix
        return pats.astype(np.int64), freq.astype(np.int64)
    pats, freq = np.unique(counts, axis=0, return_counts=True)
    return pats.astype(np.int64), freq.astype(np.int64)


@dataclass(frozen=True)
class _Statistic:
    """A coefficient written as ``finish(sum over units of features(unit))``.

    All coefficients here are smooth functions of a few sums over units, so a bootstrap replicate
    is ``finish(W @ features(pats))`` with multinomial pattern weights W, and a jackknife value
    is ``finish(total - features(pats)[p])``.
    """

    features: Callable[[NDArray[np.int64]], NDArray[np.float64]]  # (P, V) -> (P, F)
    finish: Callable[[NDArray[np.float64]], NDArray[np.float64]]  # (B, F) -> (B, K)


@dataclass(frozen=True)
class _Fit:
    value: NDArray[np.float64]  # (K,)
    ci_low: NDArray[np.float64]  # (K,)
    ci_high: NDArray[np.float64]  # (K,)
    se: NDArray[np.float64]  # (K,)
    se_jackknife: NDArray[np.float64]  # (K,)
    n_undefined: NDArray[np.int64]  # (K,)
    reps: NDArray[np.float64] | None  # (B, K)


def _rng(seed: SeedLike) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)):
        return np.random.default_rng(seed)
    raise ValueError(f"seed must be an int, a numpy.random.Generator or None; got {seed!r}.")


def _check_boot_args(n_boot: int, confidence: float) -> None:
    if int(n_boot) != n_boot or n_boot < 0:
        raise ValueError(f"n_boot must be a non-negative integer; got {n_boot!r}.")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1; got {confidence!r}.")


def _fit(
    pats: NDArray[np.int64],
    freq: NDArray[np.int64],
    stat: _Statistic,
    *,
    n_boot: int,
    seed: SeedLike,
    confidence: float,
) -> _Fit:
    """Point estimate, jackknife SE and percentile bootstrap for one statistic."""
    feat = stat.features(pats)  # (P, F)
    total = freq @ feat  # (F,)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = stat.finish(total[None, :])[0]
    K = value.shape[0]
    N = int(freq.sum())
    P = len(freq)

    # Jackknife: only P distinct leave-one-unit-out values, each repeated freq[p] times.
    se_jack = np.full(K, np.nan)
    if N >= 2:
        with np.errstate(divide="ignore", invalid="ignore"):
            theta = stat.finish(total[None, :] - feat)  # (P, K)
        ok = np.isfinite(theta).all(axis=0)
        theta_bar = (freq @ np.where(np.isfinite(theta), theta, 0.0)) / N
        var = (N - 1) / N * (freq @ (theta - theta_bar) ** 2)
        se_jack = np.where(ok, np.sqrt(np.where(ok, var, 0.0)), np.nan)

    nan_k = np.full(K, np.nan)
    if n_boot == 0 or N == 0:
        return _Fit(value, nan_k, nan_k.copy(), nan_k.copy(), se_jack, np.zeros(K, np.int64), None)

    rng = _rng(seed)
    # Resampling N units with replacement = drawing pattern frequencies from
    # Multinomial(N, freq / N); one matrix product then gives every replicate's sums.
    pvals = freq / N
    reps = np.empty((n_boot, K))
    block = max(1, min(n_boot, _MAX_BLOCK // max(P, 1)))
    for start in range(0, n_boot, block):
        b = min(block, n_boot - start)
        W = rng.multinomial(N, pvals, size=b)  # (b, P)
        with np.errstate(divide="ignore", invalid="ignore"):
            reps[start : start + b] = stat.finish(W @ feat)

    tail = (1.0 - confidence) / 2.0
    lo, hi, se = nan_k.copy(), nan_k.copy(), nan_k.copy()
    n_undef = np.zeros(K, np.int64)
    for k in range(K):
        good = reps[:, k][np.isfinite(reps[:, k])]
        n_undef[k] = n_boot - good.size
        if good.size >= 2:
            lo[k], hi[k] = np.quantile(good, [tail, 1.0 - tail])
            se[k] = good.std(ddof=1)
    return _Fit(value, lo, hi, se, se_jack, n_undef, reps)


# --------------------------------------------------------------------------------------------
# Statistics as (features, finish) pairs
# --------------------------------------------------------------------------------------------


def _pair_agreement(n: NDArray[np.float64], m: NDArray[np.float64]) -> NDArray[np.float64]:
    """Share of agreeing rater pairs per unit, sum_q n_q (n_q - 1) / (m (m - 1)); 0 if m < 2."""
    den = m * (m - 1)
    num = (n * (n - 1)).sum(axis=1)
    out: NDArray[np.float64] = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    return out


def _coincidence_features(pats: NDArray[np.int64]) -> NDArray[np.float64]:
    """Per-pattern coincidences (n n^T - diag n) / (m - 1), flattened, then the counts n.

    Returns shape (P, V*V + V). The exact integer counts are kept so that the margins n_c used
    for D_e (and for the "one category only" check) are free of rounding.
    """
    P, V = pats.shape
    n = pats.astype(float)
    m = n.sum(axis=1)
    o = (n[:, :, None] * n[:, None, :] - n[:, :, None] * np.eye(V)) / (m - 1)[:, None, None]
    return np.concatenate([o.reshape(P, V * V), n], axis=1)


def _delta(level: str, n_c: NDArray[np.float64], values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Squared difference functions delta^2_ck; shape (V, V), or (B, V, V) for ordinal."""
    V = n_c.shape[1]
    if level == "nominal":
        return 1.0 - np.eye(V)
    if level == "interval":
        return (values[:, None] - values[None, :]) ** 2
    if level == "ratio":
        diff = values[:, None] - values[None, :]
        tot = values[:, None] + values[None, :]
        return np.divide(diff, tot, out=np.zeros_like(diff), where=tot != 0) ** 2
    # ordinal: (sum_{g=c}^{k} n_g - (n_c + n_k) / 2)^2 with the replicate's own margins,
    # rewritten with cumulative sums S as (S_k - S_c + (n_c - n_k) / 2)^2 (valid for c > k too).
    S = np.cumsum(n_c, axis=1)
    return (S[:, None, :] - S[:, :, None] + (n_c[:, :, None] - n_c[:, None, :]) / 2.0) ** 2


def _expected_sum(n_c: NDArray[np.float64], delta: NDArray[np.float64]) -> NDArray[np.float64]:
    """sum_ck n_c n_k delta_ck per replicate; n_c (B, V), delta (V, V) or (B, V, V) -> (B,)."""
    spec = "bc,bk,ck->b" if delta.ndim == 2 else "bc,bk,bck->b"
    out: NDArray[np.float64] = np.einsum(spec, n_c, n_c, delta)
    return out


def _alpha_statistic(V: int, level: str, values: NDArray[np.float64]) -> _Statistic:
    VV = V * V

    def finish(S: NDArray[np.float64]) -> NDArray[np.float64]:
        o = S[:, :VV].reshape(-1, V, V)
        n_c = S[:, VV:]  # margins n_c = sum_k o_ck (exact integers)
        n = n_c.sum(axis=1)
        if level == "nominal":
            # (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c n_k, using n - trace(o) and
            # n^2 - sum n_c^2 for the off-diagonal sums (fewer rounding steps).
            d_o = n - np.trace(o, axis1=1, axis2=2)
            d_e = (n * n - (n_c * n_c).sum(axis=1)) / (n - 1)
        else:
            delta = _delta(level, n_c, values)
            d_o = (o * delta).sum(axis=(1, 2))
            d_e = _expected_sum(n_c, delta) / (n - 1)
        alpha = 1.0 - d_o / d_e
        # D_e = 0 exactly when a single category occurs: alpha is 0/0, not 1.
        two_cats = (n_c > 0).sum(axis=1) >= 2
        return np.where(two_cats, alpha, np.nan)[:, None]

    return _Statistic(_coincidence_features, finish)


def _alpha_components(counts: NDArray[np.int64], level: str, values: NDArray[np.float64]) -> dict[str, float]:
    """D_o and D_e of the point estimate (for reports)."""
    pats, freq = _patterns(counts)
    V = counts.shape[1]
    S = (freq @ _coincidence_features(pats))[None, :]
    o = S[:, : V * V].reshape(-1, V, V)
    n_c = S[:, V * V :]
    n = float(n_c.sum())
    delta = _delta(level, n_c, values)
    d_o = float((o * delta).sum()) / n
    d_e = float(_expected_sum(n_c, delta)[0]) / (n * (n - 1))
    return {"D_o": d_o, "D_e": d_e}


def _percent_statistic() -> _Statistic:
    def features(pats: NDArray[np.int64]) -> NDArray[np.float64]:
        n = pats.astype(float)
        return np.column_stack([_pair_agreement(n, n.sum(axis=1)), np.ones(len(n))])

    def finish(S: NDArray[np.float64]) -> NDArray[np.float64]:
        return (S[:, 0] / S[:, 1])[:, None]

    return _Statistic(features, finish)


def _ac1_statistic(Q: int, chance: Literal["gwet", "fleiss"] = "gwet") -> _Statistic:
    """AC1 (chance = "gwet"), or Fleiss' kappa generalised to missing ratings (chance = "fleiss").

    Both use Gwet's p_a and pi_q; they differ only in the chance term:
    sum_q pi_q (1 - pi_q) / (Q - 1) for AC1, sum_q pi_q^2 for Fleiss.
    """

    def features(pats: NDArray[np.int64]) -> NDArray[np.float64]:
        n = pats.astype(float)
        m = n.sum(axis=1)
        pairable = (m >= 2).astype(float)
        # [agreement of pairable units, pairable indicator, n_uq / m_u (Q columns), n_uq, 1]
        return np.column_stack([_pair_agreement(n, m), pairable, n / m[:, None], n, np.ones(len(n))])

    def finish(S: NDArray[np.float64]) -> NDArray[np.float64]:
        p_a = S[:, 0] / S[:, 1]
        pi_q = S[:, 2 : 2 + Q] / S[:, -1:]
        if chance == "gwet":
            p_e = (pi_q * (1.0 - pi_q)).sum(axis=1) / (Q - 1)
            ac1: NDArray[np.float64] = (p_a - p_e) / (1.0 - p_e)
            return ac1[:, None]
        p_e = (pi_q * pi_q).sum(axis=1)
        two_cats = (S[:, 2 + Q : 2 + 2 * Q] > 0).sum(axis=1) >= 2  # else p_e = 1: 0/0
        return np.where(two_cats, (p_a - p_e) / (1.0 - p_e), np.nan)[:, None]

    return _Statistic(features, finish)


def _fleiss_statistic(V: int, r: int) -> _Statistic:
    def features(pats: NDArray[np.int64]) -> NDArray[np.float64]:
        n = pats.astype(float)
        P_i = (n * (n - 1)).sum(axis=1) / (r * (r - 1))
        return np.column_stack([P_i, n, np.ones(len(n))])

    def finish(S: NDArray[np.float64]) -> NDArray[np.float64]:
        N = S[:, -1]
        P_bar = S[:, 0] / N
        p_j = S[:, 1 : 1 + V] / (N * r)[:, None]
        P_e = (p_j * p_j).sum(axis=1)
        kappa = (P_bar - P_e) / (1.0 - P_e)
        two_cats = (S[:, 1 : 1 + V] > 0).sum(axis=1) >= 2  # else P_e = 1 and kappa is 0/0
        return np.where(two_cats, kappa, np.nan)[:, None]

    return _Statistic(features, finish)


def _category_statistic(V: int) -> _Statistic:
    def features(pats: NDArray[np.int64]) -> NDArray[np.float64]:
        n = pats.astype(float)
        m = n.sum(axis=1)
        o_cc = (n * (n - 1)) / (m - 1)[:, None]
        return np.column_stack([o_cc, n])

    def finish(S: NDArray[np.float64]) -> NDArray[np.float64]:
        o_cc, n_c = S[:, :V], S[:, V:]
        return np.where(n_c > 0, o_cc / np.where(n_c > 0, n_c, 1.0), np.nan)

    return _Statistic(features, finish)


# --------------------------------------------------------------------------------------------
# Public coefficients
# --------------------------------------------------------------------------------------------


def _pairable_reason(n_pairable: int, what: str) -> str | None:
    if n_pairable < 2:
        return (
            f"{what} needs at least two pairable units (units with two or more ratings); this group has {n_pairable}."
        )
    return None


def _single_category_reason(col_sums: NDArray[np.int64], what: str, where: str) -> str | None:
    present = np.flatnonzero(col_sums > 0)
    if present.size < 2:
        cat = f"category {int(present[0])}" if present.size else "no category"
        return (
            f"All {int(col_sums.sum())} {where} fall in one category ({cat}), so chance agreement "
            f"is total and {what} is undefined (0/0)."
        )
    return None


def krippendorff_alpha(
    counts: ArrayLike,
    *,
    level: Level = "nominal",
    values: ArrayLike | None = None,
    n_boot: int = 2000,
    seed: SeedLike = 0,
    confidence: float = 0.95,
    thresholds: Sequence[float] = (0.667, 0.800),
) -> AlphaResult:
    """Krippendorff's alpha with missing ratings, unit-bootstrap interval and jackknife SE.

    Only units with ``m_u >= 2`` are pairable. With the coincidence matrix

        o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1),  n_c = sum_k o_ck,  n = sum_c n_c

    alpha = 1 - D_o / D_e = 1 - (n - 1) sum_ck o_ck delta_ck / sum_ck n_c n_k delta_ck, with
    delta_ck = [c != k] for nominal data, (v_c - v_k)^2 interval, ((v_c - v_k)/(v_c + v_k))^2
    ratio, and (sum_{g=c..k} n_g - (n_c + n_k)/2)^2 ordinal (Krippendorff 2011).

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
        Count matrix; columns in category order (rank order for ordinal).
    level : {"nominal", "ordinal", "interval", "ratio"}
        Metric. There is no default-to-interval trap here: nominal is the default.
    values : array_like of float, shape (V,), optional
        Numeric category values for interval/ratio (default ``0..V-1``). Ignored otherwise.
    n_boot : int
        Bootstrap replicates B (0 = point estimate and jackknife only).
    seed : int, numpy.random.Generator or None
        Seed of the bootstrap; the same int gives the same interval.
    confidence : float
        Level of the percentile interval.
    thresholds : sequence of float
        ``alpha_min`` values for ``q = P*(alpha < alpha_min)``.

    Returns
    -------
    AlphaResult
        ``value`` NaN with ``undefined_reason`` when fewer than two units are pairable or only one
        category occurs among the pairable values.

    Notes
    -----
    The bootstrap resamples the pairable units (Efron's nonparametric bootstrap, percentile
    interval), not judgement pairs as Hayes & Krippendorff (2007) do, whose SE is too small
    (methods.md section 2.3). It is drawn in pattern-compressed form: with P distinct count rows,
    ``W ~ Multinomial(U_pairable, freq / U_pairable)`` of shape (B, P), and ``W @ features`` gives
    every replicate's coincidence matrix in one product. The cost grows with P, not U: P <= 16
    for 3 annotators x 3 categories, but it approaches U with many annotators and categories
    (then W is drawn in blocks to bound memory).
    """
    n_all = _check_counts(counts)
    if level not in _LEVELS:
        raise ValueError(f"level must be one of {list(_LEVELS)}; got {level!r}.")
    _check_boot_args(n_boot, confidence)
    U, V = n_all.shape
    v = np.arange(V, dtype=float) if values is None else np.asarray(values, dtype=float)
    if v.shape != (V,):
        raise ValueError(f"values must have one entry per category ({V}); got shape {v.shape}.")
    if level in ("interval", "ratio") and np.unique(v).size != V:
        raise ValueError(f"The {level} level needs distinct category values; got {v.tolist()}.")
    if level == "ratio" and (v < 0).any():
        raise ValueError("The ratio level needs non-negative category values.")
    thr = tuple(float(t) for t in thresholds)

    pairable = n_all.sum(axis=1) >= 2
    n_pair = n_all[pairable]
    U_p = int(pairable.sum())
    n_values = int(n_pair.sum())
    reason = _pairable_reason(U_p, "Krippendorff's alpha") or _single_category_reason(
        n_pair.sum(axis=0), "alpha", "pairable values"
    )
    if reason is not None:
        return AlphaResult(
            level,
            _NAN,
            q=tuple((t, _NAN) for t in thr),
            n_units=U_p,
            n_excluded=U - U_p,
            n_values=n_values,
            confidence=confidence,
            undefined_reason=reason,
        )

    pats, freq = _patterns(n_pair)
    fit = _fit(pats, freq, _alpha_statistic(V, level, v), n_boot=n_boot, seed=seed, confidence=confidence)
    if fit.reps is not None:
        good = fit.reps[:, 0][np.isfinite(fit.reps[:, 0])]
        q = tuple((t, float((good < t).mean()) if good.size else _NAN) for t in thr)
    else:
        q = tuple((t, _NAN) for t in thr)
    return AlphaResult(
        level,
        float(fit.value[0]),
        ci_low=float(fit.ci_low[0]),
        ci_high=float(fit.ci_high[0]),
        se=float(fit.se[0]),
        se_jackknife=float(fit.se_jackknife[0]),
        q=q,
        n_boot=int(n_boot),
        n_boot_undefined=int(fit.n_undefined[0]),
        n_units=U_p,
        n_excluded=U - U_p,
        n_values=n_values,
        confidence=confidence,
        components=_alpha_components(n_pair, level, v),
    )


def _coefficient(
    name: str,
    fit: _Fit | None,
    k: int = 0,
    *,
    n_units: int,
    n_excluded: int,
    n_boot: int,
    confidence: float,
    components: dict[str, float] | None = None,
    reason: str | None = None,
) -> Coefficient:
    if reason is not None or fit is None:
        return Coefficient(
            name,
            _NAN,
            n_units=n_units,
            n_excluded=n_excluded,
            confidence=confidence,
            components=components or {},
            undefined_reason=reason,
        )
    return Coefficient(
        name,
        float(fit.value[k]),
        ci_low=float(fit.ci_low[k]),
        ci_high=float(fit.ci_high[k]),
        se=float(fit.se[k]),
        se_jackknife=float(fit.se_jackknife[k]),
        n_units=n_units,
        n_excluded=n_excluded,
        n_boot=int(n_boot) if fit.reps is not None else 0,
        n_boot_undefined=int(fit.n_undefined[k]),
        confidence=confidence,
        components=components or {},
    )


def gwet_ac1(counts: ArrayLike, *, n_boot: int = 2000, seed: SeedLike = 0, confidence: float = 0.95) -> Coefficient:
    """Gwet's AC1 for any number of raters, with missing ratings (Gwet 2014; irrCAC raw data).

        p_a  = mean over units with m_u >= 2 of sum_q n_uq (n_uq - 1) / (m_u (m_u - 1))
        pi_q = mean over units with m_u >= 1 of n_uq / m_u
        p_e  = sum_q pi_q (1 - pi_q) / (Q - 1),      AC1 = (p_a - p_e) / (1 - p_e)

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
        Count matrix; ``Q = V`` (declared categories, observed or not).
    n_boot, seed, confidence
        Bootstrap over the units with at least one rating (the units that enter ``pi_q``).

    Returns
    -------
    Coefficient
        ``components``: ``p_a``, ``p_e``. Undefined with fewer than two categories declared,
        fewer than two pairable units, or a single category among the pairable values (AC1
        would be 1 by construction). Bootstrap replicates keep the formula value.
    """
    n_all = _check_counts(counts)
    _check_boot_args(n_boot, confidence)
    U, V = n_all.shape
    m = n_all.sum(axis=1)
    rated = m >= 1
    U_r, U_p = int(rated.sum()), int((m >= 2).sum())
    reason = None
    if V < 2:
        reason = "Gwet's AC1 needs at least two declared categories (Q - 1 is its chance-term divisor)."
    # One category among the pairable values means p_a = 1 with no variation to agree on; AC1
    # would be 1 by construction, so it is reported as undefined, like alpha.
    reason = (
        reason
        or _pairable_reason(U_p, "Gwet's AC1")
        or _single_category_reason(
            n_all[m >= 2].sum(axis=0), "AC1 (which would be 1 by construction)", "pairable values"
        )
    )
    if reason is not None:
        return _coefficient(
            "gwet_ac1",
            None,
            n_units=U_r,
            n_excluded=U - U_r,
            n_boot=0,
            confidence=confidence,
            reason=reason,
        )
    pats, freq = _patterns(n_all[rated])
    stat = _ac1_statistic(V)
    fit = _fit(pats, freq, stat, n_boot=n_boot, seed=seed, confidence=confidence)
    S = freq @ stat.features(pats)
    pi_q = S[2 : 2 + V] / S[-1]
    comps = {
        "p_a": float(S[0] / S[1]),
        "p_e": float((pi_q * (1 - pi_q)).sum() / (V - 1)),
        "n_pairable_units": float(U_p),
    }
    return _coefficient(
        "gwet_ac1",
        fit,
        n_units=U_r,
        n_excluded=U - U_r,
        n_boot=n_boot,
        confidence=confidence,
        components=comps,
    )


def fleiss_kappa(
    counts: ArrayLike,
    *,
    n_raters: int | None = None,
    missing: Literal["drop", "gwet"] = "drop",
    n_boot: int = 2000,
    seed: SeedLike = 0,
    confidence: float = 0.95,
) -> Coefficient:
    """Fleiss' kappa; by default on the complete units only (every unit rated by r raters).

        P_i = sum_j n_ij (n_ij - 1) / (r (r - 1)),  P_bar = mean_i P_i,
        p_j = sum_i n_ij / (N r),  P_e = sum_j p_j^2,  kappa = (P_bar - P_e) / (1 - P_e)

    With two raters this is Scott's pi, not Cohen's kappa.

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
    n_raters : int, optional
        r for ``missing="drop"``. Default: the largest ``m_u``. Units with ``m_u < r`` are dropped
        as incomplete; ``m_u > r`` is an error.
    missing : {"drop", "gwet"}
        ``"drop"`` (default, methods.md section 2.4): complete units only; prefer alpha for data
        with missing ratings. ``"gwet"``: Gwet's (2014) generalisation used by irrCAC's
        ``fleiss.kappa.raw``: ``P_bar`` becomes AC1's ``p_a`` (units with >= 2 ratings) and
        ``p_j`` AC1's ``pi_q`` (units with >= 1 rating); identical to ``"drop"`` on complete data.
    n_boot, seed, confidence
        Bootstrap over the units that enter the estimate.

    Returns
    -------
    Coefficient
        ``n_excluded`` = units dropped (incomplete, or unrated for ``"gwet"``);
        ``components``: ``P_bar``, ``P_e_bar``, ``n_raters`` / ``n_incomplete_dropped``.
    """
    n_all = _check_counts(counts)
    _check_boot_args(n_boot, confidence)
    if missing not in ("drop", "gwet"):
        raise ValueError(f'missing must be "drop" or "gwet"; got {missing!r}.')
    U, V = n_all.shape
    m = n_all.sum(axis=1)
    if missing == "gwet":
        rated = m >= 1
        U_r, U_p = int(rated.sum()), int((m >= 2).sum())
        reason = _pairable_reason(U_p, "Fleiss' kappa") or _single_category_reason(
            n_all[m >= 2].sum(axis=0), "Fleiss' kappa", "pairable values"
        )
        if reason is not None:
            return _coefficient(
                "fleiss_kappa",
                None,
                n_units=U_r,
                n_excluded=U - U_r,
                n_boot=0,
                confidence=confidence,
                reason=reason,
            )
        pats, freq = _patterns(n_all[rated])
        stat = _ac1_statistic(V, "fleiss")
        fit = _fit(pats, freq, stat, n_boot=n_boot, seed=seed, confidence=confidence)
        S = freq @ stat.features(pats)
        pi_q = S[2 : 2 + V] / S[-1]
        comps = {
            "P_bar": float(S[0] / S[1]),
            "P_e_bar": float((pi_q * pi_q).sum()),
            "n_pairable_units": float(U_p),
        }
        return _coefficient(
            "fleiss_kappa",
            fit,
            n_units=U_r,
            n_excluded=U - U_r,
            n_boot=n_boot,
            confidence=confidence,
            components=comps,
        )

    r = int(m.max()) if n_raters is None and U else int(n_raters or 0)
    if n_raters is not None and U and int(m.max()) > r:
        raise ValueError(
            f"A unit has {int(m.max())} ratings but n_raters={r}; n_raters must be at least the "
            "largest number of ratings per unit."
        )
    complete = (m == r) & (r > 0)
    N = int(complete.sum())
    comps = {"n_raters": float(r), "n_incomplete_dropped": float(U - N)}
    reason = None
    if r < 2:
        reason = f"Fleiss' kappa needs at least two ratings per unit; the most any unit has is {r}."
    elif N == 0:
        reason = f"Fleiss' kappa needs complete units (rated by all {r} raters); none of the {U} units is complete."
    reason = (
        reason
        or _pairable_reason(N, "Fleiss' kappa (complete units only)")
        or _single_category_reason(n_all[complete].sum(axis=0), "Fleiss' kappa", "ratings of the complete units")
    )
    if reason is not None:
        return _coefficient(
            "fleiss_kappa",
            None,
            n_units=N,
            n_excluded=U - N,
            n_boot=0,
            confidence=confidence,
            components=comps,
            reason=reason,
        )
    pats, freq = _patterns(n_all[complete])
    stat = _fleiss_statistic(V, r)
    fit = _fit(pats, freq, stat, n_boot=n_boot, seed=seed, confidence=confidence)
    S = freq @ stat.features(pats)
    p_j = S[1 : 1 + V] / (N * r)
    comps.update(P_bar=float(S[0] / N), P_e_bar=float((p_j * p_j).sum()))
    return _coefficient(
        "fleiss_kappa",
        fit,
        n_units=N,
        n_excluded=U - N,
        n_boot=n_boot,
        confidence=confidence,
        components=comps,
    )


def percent_agreement(
    counts: ArrayLike, *, n_boot: int = 2000, seed: SeedLike = 0, confidence: float = 0.95
) -> Coefficient:
    """Raw percent agreement (Gwet's p_a): mean over pairable units of the agreeing-pair share.

    ``p_a = mean_u sum_q n_uq (n_uq - 1) / (m_u (m_u - 1))`` over units with ``m_u >= 2``; with
    two raters this is the share of units on which they agree.

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
    n_boot, seed, confidence
        Bootstrap over the pairable units.

    Returns
    -------
    Coefficient
        Undefined with fewer than two pairable units.
    """
    n_all = _check_counts(counts)
    _check_boot_args(n_boot, confidence)
    U = n_all.shape[0]
    pairable = n_all.sum(axis=1) >= 2
    U_p = int(pairable.sum())
    reason = _pairable_reason(U_p, "Percent agreement")
    if reason is not None:
        return _coefficient(
            "percent_agreement",
            None,
            n_units=U_p,
            n_excluded=U - U_p,
            n_boot=0,
            confidence=confidence,
            reason=reason,
        )
    pats, freq = _patterns(n_all[pairable])
    fit = _fit(pats, freq, _percent_statistic(), n_boot=n_boot, seed=seed, confidence=confidence)
    return _coefficient(
        "percent_agreement",
        fit,
        n_units=U_p,
        n_excluded=U - U_p,
        n_boot=n_boot,
        confidence=confidence,
    )


def category_agreement(
    counts: ArrayLike,
    *,
    categories: Sequence[Any] | None = None,
    n_boot: int = 2000,
    seed: SeedLike = 0,
    confidence: float = 0.95,
) -> tuple[Coefficient, ...]:
    """Category-specific agreement p_c = o_cc / n_c for every category.

    The share of category-c values that another coder matched. With two coders it is positive
    agreement 2a / (2a + b + c) for the first category of a 2x2 table and negative agreement for
    the second (Cicchetti & Feinstein 1990).

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
    categories : sequence, length V, optional
        Names used in ``Coefficient.name`` (``"category_agreement[<name>]"``).
    n_boot, seed, confidence
        Bootstrap over the pairable units (same draws as alpha's for the same seed).

    Returns
    -------
    tuple of Coefficient, length V
        A category that never occurs among the pairable values is undefined.
    """
    n_all = _check_counts(counts)
    _check_boot_args(n_boot, confidence)
    U, V = n_all.shape
    names = list(range(V)) if categories is None else list(categories)
    if len(names) != V:
        raise ValueError(f"categories has {len(names)} entries but the count matrix has {V} columns.")
    pairable = n_all.sum(axis=1) >= 2
    U_p = int(pairable.sum())
    reason = _pairable_reason(U_p, "Category-specific agreement")
    if reason is not None:
        return tuple(
            _coefficient(
                f"category_agreement[{c}]",
                None,
                n_units=U_p,
                n_excluded=U - U_p,
                n_boot=0,
                confidence=confidence,
                reason=reason,
            )
            for c in names
        )
    n_pair = n_all[pairable]
    pats, freq = _patterns(n_pair)
    fit = _fit(pats, freq, _category_statistic(V), n_boot=n_boot, seed=seed, confidence=confidence)
    n_c = n_pair.sum(axis=0)
    out = []
    for k, c in enumerate(names):
        why = (
            None
            if n_c[k] > 0
            else (f"Category {c} does not occur among the pairable values, so its specific agreement is undefined.")
        )
        out.append(
            _coefficient(
                f"category_agreement[{c}]",
                fit,
                k,
                n_units=U_p,
                n_excluded=U - U_p,
                n_boot=n_boot,
                confidence=confidence,
                components={"n_c": float(n_c[k])},
                reason=why,
            )
        )
    return tuple(out)


def cohen_kappa_table(table: ArrayLike) -> Coefficient:
    """Cohen's kappa from a two-rater contingency table.

        p_o = sum_k p_kk,  p_e = sum_k p_k+ p_+k,  kappa = (p_o - p_e) / (1 - p_e)

    Parameters
    ----------
    table : array_like of int, shape (V, V)
        ``table[a, b]`` = units that rater A put in category a and rater B in category b.

    Returns
    -------
    Coefficient
        ``components``: ``p_o``, ``p_e``. Undefined with fewer than two units or ``p_e = 1``
        (both raters used one and the same category throughout). No bootstrap.
    """
    t = _check_counts(table)
    if t.shape[0] != t.shape[1]:
        raise ValueError(f"A contingency table must be square (V x V); got shape {t.shape}.")
    n = int(t.sum())
    if n < 2:
        return Coefficient(
            "cohen_kappa",
            _NAN,
            n_units=n,
            undefined_reason=(f"Cohen's kappa needs at least two units rated by both raters; there are {n}."),
        )
    p = t / n
    p_o = float(np.trace(p))
    p_e = float(p.sum(axis=1) @ p.sum(axis=0))
    comps = {"p_o": p_o, "p_e": p_e}
    # p_e = 1 exactly iff both raters used the same single category for every unit.
    rows, cols = np.flatnonzero(t.sum(axis=1)), np.flatnonzero(t.sum(axis=0))
    if rows.size == 1 and cols.size == 1 and rows[0] == cols[0]:
        return Coefficient(
            "cohen_kappa",
            _NAN,
            n_units=n,
            components=comps,
            undefined_reason=(
                f"Both raters put all {n} units in one category, so chance agreement is 1 and "
                "Cohen's kappa is undefined (0/0)."
            ),
        )
    return Coefficient("cohen_kappa", (p_o - p_e) / (1.0 - p_e), n_units=n, components=comps)


def cohen_kappa(a: ArrayLike, b: ArrayLike, n_categories: int) -> Coefficient:
    """Cohen's kappa between two label vectors, on the units both rated.

    Parameters
    ----------
    a, b : array_like, shape (U,)
        Category codes ``0..V-1``; ``-1`` or NaN = no rating.
    n_categories : int
        V.

    Returns
    -------
    Coefficient
        ``n_excluded`` = units not rated by both.
    """
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.ndim != 1 or a_arr.shape != b_arr.shape:
        raise ValueError(
            f"cohen_kappa needs two label vectors of equal length; got shapes {a_arr.shape} and {b_arr.shape}."
        )
    y = _as_codes(np.column_stack([a_arr, b_arr]), n_categories)
    both = (y >= 0).all(axis=1)
    K = int(n_categories)
    table = np.bincount(y[both, 0] * K + y[both, 1], minlength=K * K).reshape(K, K)
    res = cohen_kappa_table(table)
    return Coefficient(
        res.name,
        res.value,
        n_units=res.n_units,
        n_excluded=int((~both).sum()),
        components=res.components,
        undefined_reason=res.undefined_reason,
    )


def pairwise_cohen_kappa(
    labels: ArrayLike, n_categories: int, *, annotators: Sequence[Any] | None = None
) -> PairwiseKappa:
    """Cohen's kappa for every pair of annotators (their mean is Light's kappa).

    Parameters
    ----------
    labels : array_like, shape (U, J)
        Label matrix; ``-1`` or NaN = no rating.
    n_categories : int
        V.
    annotators : sequence, length J, optional
        Names (default ``0..J-1``).

    Returns
    -------
    PairwiseKappa
    """
    y = _as_codes(labels, n_categories)
    J = y.shape[1]
    names = tuple(range(J)) if annotators is None else tuple(annotators)
    if len(names) != J:
        raise ValueError(f"annotators has {len(names)} names but the label matrix has {J} columns.")
    pairs = tuple((a, b, cohen_kappa(y[:, a], y[:, b], n_categories)) for a in range(J) for b in range(a + 1, J))
    return PairwiseKappa(names, pairs)


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
) -> AgreementSummary:
    """Alpha, AC1, Fleiss' kappa, percent and category-specific agreement for one group.

    Parameters
    ----------
    counts : array_like of int, shape (U, V)
    categories : sequence of str, length V
    labels : array_like, shape (U, J), optional
        The label matrix behind ``counts``; when given, pairwise Cohen's kappa is added.
    level, values
        Passed to :func:`krippendorff_alpha`.
    n_boot, seed, confidence
        Bootstrap settings. With an int (or None) seed each coefficient is bootstrapped with
        that same seed, so ``summary.alpha`` equals ``krippendorff_alpha(counts, seed=seed)``;
        a Generator is consumed in the order alpha, AC1, Fleiss, percent, category.
    prevalence_threshold : float
        See :func:`prevalence_warning`.

    Returns
    -------
    AgreementSummary
        Never raises for undefined coefficients; each carries its ``undefined_reason``.
    """
    n_all = _check_counts(counts)
    U, V = n_all.shape
    cats = tuple(str(c) for c in categories)
    if len(cats) != V:
        raise ValueError(f"categories has {len(cats)} entries but the count matrix has {V} columns.")
    pairwise = None
    if labels is not None:
        y = _as_codes(labels, V)
        if y.shape[0] != U or not np.array_equal(counts_from_codes(y, V), n_all):
            raise ValueError("The label matrix does not match the count matrix; build both from the same data.")
        pairwise = pairwise_cohen_kappa(y, V)
    m = n_all.sum(axis=1)
    n_c = n_all[m >= 2].sum(axis=0)
    n = int(n_c.sum())
    return AgreementSummary(
        categories=cats,
        n_units=U,
        n_rated_units=int((m >= 1).sum()),
        n_pairable_units=int((m >= 2).sum()),
        n_pairable_values=n,
        category_shares=tuple(float(x / n) if n else _NAN for x in n_c),
        alpha=krippendorff_alpha(n_all, level=level, values=values, n_boot=n_boot, seed=seed, confidence=confidence),
        ac1=gwet_ac1(n_all, n_boot=n_boot, seed=seed, confidence=confidence),
        fleiss_kappa=fleiss_kappa(n_all, n_boot=n_boot, seed=seed, confidence=confidence),
        percent_agreement=percent_agreement(n_all, n_boot=n_boot, seed=seed, confidence=confidence),
        category_agreement=category_agreement(n_all, categories=cats, n_boot=n_boot, seed=seed, confidence=confidence),
        pairwise_cohen=pairwise,
        prevalence_warning=prevalence_warning(n_all, categories=cats, threshold=prevalence_threshold),
    )


# --------------------------------------------------------------------------------------------
# Dawid-Skene
# --------------------------------------------------------------------------------------------


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
        out: dict[str, Any] = _jsonable(
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
    """
    y = _as_codes(labels_matrix, n_categories)
    if int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}.")
    K = int(n_categories)
    U, J = y.shape
    u, j = np.nonzero(y >= 0)  # one entry per rating, R in total
    obs = y[u, j]  # the observed label l of each rating
    R = u.size
    if R == 0:
        prior = np.full(K, 1.0 / K)
        return DawidSkeneResult(np.tile(prior, (U, 1)), prior, np.full((J, K, K), 1.0 / K), 0, False, _NAN)

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


# --------------------------------------------------------------------------------------------
# Per-annotator diagnostics
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnnotatorDiagnostic:
    """Diagnostics of one annotator (methods.md section 2.5).

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
        From a Dawid-Skene fit for the positive class, when one was given; else NaN.
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
    flags: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict."""
        out: dict[str, Any] = _jsonable(self)
        return out


@dataclass(frozen=True)
class AnnotatorDiagnostics:
    """Per-annotator diagnostics for one group, with the thresholds used."""

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
        out: dict[str, Any] = _jsonable(self)
        return out


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
) -> AnnotatorDiagnostics:
    """Agreement of each annotator with the others.

    For annotator j: (1) % agreement and Cohen's kappa with the leave-one-out consensus, on the
    units j rated where the *other* annotators' ratings (at least ``min_others`` of them) have a
    strict majority label (with three annotators: both others agree); leaving j out avoids
    self-inclusion bias. (2) Nominal alpha with j deleted, and its difference from alpha on all.
    (3) Optionally DS sensitivity / specificity for class ``positive``.

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
        A fit on the same label matrix (J must match).
    positive : int, optional
        Class code for sensitivity / specificity.

    Returns
    -------
    AnnotatorDiagnostics
    """
    y = _as_codes(labels, n_categories)
    U, J = y.shape
    K = int(n_categories)
    names = tuple(range(J)) if annotators is None else tuple(annotators)
    if len(names) != J:
        raise ValueError(f"annotators has {len(names)} names but the label matrix has {J} columns.")
    sens: NDArray[np.float64] = np.full(J, np.nan)
    spec: NDArray[np.float64] = np.full(J, np.nan)
    if dawid_skene_result is not None and positive is not None:
        if dawid_skene_result.confusion.shape != (J, K, K):
            raise ValueError(
                f"The Dawid-Skene fit has confusion shape {dawid_skene_result.confusion.shape}; "
                f"expected {(J, K, K)} for this label matrix."
            )
        sens, spec = dawid_skene_result.sensitivity_specificity(positive)

    counts = counts_from_codes(y, K)
    alpha_all = _alpha_value(counts).value
    cats = np.arange(K)
    out = []
    for jj in range(J):  # a loop over annotators only; every step inside is vectorised over units
        y_j = y[:, jj]
        others = counts - (y_j[:, None] == cats[None, :])  # (U, K): counts without annotator j
        m_o = others.sum(axis=1)
        top = others.max(axis=1)
        consensus = others.argmax(axis=1)
        ok = (y_j >= 0) & (m_o >= min_others) & (2 * top > m_o)
        n_ok = int(ok.sum())
        agree = float((y_j[ok] == consensus[ok]).mean()) if n_ok else _NAN
        kappa = cohen_kappa(y_j[ok], consensus[ok], K)
        a_del = _alpha_value(others)
        delta = a_del.value - alpha_all
        flags = []
        if kappa.defined and kappa.value < kappa_threshold:
            flags.append(f"kappa_with_consensus {kappa.value:.3f} < {kappa_threshold}")
        if math.isfinite(delta) and delta > alpha_gain_threshold:
            flags.append(f"alpha_if_deleted - alpha = {delta:.3f} > {alpha_gain_threshold}")
        out.append(
            AnnotatorDiagnostic(
                annotator=names[jj],
                n_rated=int((y_j >= 0).sum()),
                n_consensus_units=n_ok,
                agreement_with_consensus=agree,
                kappa_with_consensus=kappa,
                alpha_if_deleted=a_del,
                alpha_delta=float(delta),
                sensitivity=float(sens[jj]),
                specificity=float(spec[jj]),
                flags=tuple(flags),
            )
        )
    return AnnotatorDiagnostics(float(alpha_all), kappa_threshold, alpha_gain_threshold, tuple(out))
