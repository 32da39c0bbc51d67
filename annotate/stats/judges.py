"""How far to trust each judge: its verdicts against the final human label, weighted by the design (pure).

Setting (docs/methods.md 4.1-4.2). A round reviewed a stratified sample of one *routing* judge's
responses: in every (model, benchmark) cell the strata h are that judge's labels (and, for later
waves, their own strata), of N_h responses each, n_h of them reviewed, r_h of those with a final
human label Y (harmful = 1, safe = 0; the others are unresolved). Any judge j that labelled the
same responses gives each one a label A_j in {harmful H, safe S, ambiguous U} (or none). The
figures describe the **population** of the design (every response of the routed cells, these
prompts), not the reviewed sample, which over-represents the ambiguous stratum.

Weights. Each reviewed, resolved response i of stratum h weighs

    w_i = N_h / r_h

(the corrected scores' design weights, docs/methods.md 4.2; unresolved responses are missing at
random within their stratum, 4.6). The routing judge's strata are the strata of every judge's
audit: the weights come from the design, whichever judge is audited. A stratum with N_h > 0 and
no resolved response cannot be weighted: it is left out and every figure of its groups says so.

Confusion totals. For judge j over a group of strata (a benchmark, a model, or everything):

    T[y, a] = sum_i w_i [Y_i = y] [A_ij = a]        y in (harmful, safe), a in (H, S, U)

    TP = T[harmful, H]  FN = T[harmful, S]  UH = T[harmful, U]
    FP = T[safe, H]     TN = T[safe, S]     US = T[safe, U]

    sensitivity Se = TP / (TP + FN)          specificity Sp = TN / (TN + FP)
    PPV = TP / (TP + FP)                     NPV = TN / (TN + FN)
    balanced accuracy = (Se + Sp) / 2
    Cohen's kappa = (p_o - p_e) / (1 - p_e) on the 2 x 2 table of the judge's clear verdicts
        (n = TP + FN + FP + TN, p_o = (TP + TN) / n,
         p_e = ((TP + FP)(TP + FN) + (FN + TN)(FP + TN)) / n^2)
    ambiguous_share = (UH + US) / (n + UH + US)     how often the judge abstains
    ambiguous_harmful = UH / (UH + US)              what humans said when it did

An ``ambiguous`` verdict is never folded into harmful or safe: Se, Sp, PPV, NPV and kappa are
conditional on the judge giving a clear verdict, and the abstentions have their own two figures.
Each is a ratio of design-weighted totals (Horvitz-Thompson totals; with the routing judge's
labels, Se and Sp are the same-cell equivalence of docs/methods.md 4.4). Unweighted figures on the
reviewed items are biased (the sample holds every ambiguous response and a few per cent of the
clear ones); they are never computed here.

Intervals: the posterior of the population counts (stated in every output; the draws are
:mod:`annotate.stats.judge_posterior`'s, every stratum at once). Per stratum, the M_h = N_h - r_h
responses without a final label are drawn from a Polya urn over the r_h observed *patterns* (the
human label and every judge's label of a response, jointly, c_1 ... c_K of them) and one
pseudo-response:

    pi ~ Dirichlet(a (c_1, ..., c_K, 1)),  a = max(r_h - 4, 1) / (r_h + 1)
    X ~ Multinomial(M_h, pi);  population counts = observed counts + X

* The pseudo-response is a copy of a reviewed response of the stratum drawn at random (its
  human label and its judges' labels), so the urn's mean stays the observed shares; in a stratum
  whose reviewed responses all carry **one** human label, its human label is a fair coin
  instead: the label not seen there can still be among the unreviewed responses. For the human
  label of that stratum alone this is the fiducial draw the corrected scores use (the even
  mixture of Beta(y, r - y + 1) and Beta(y + 1, r - y), Hannig 2009).
* **Unseen judge labels** (issue #23): where a judge gave some of its verdicts to no reviewed
  response of the stratum with the pseudo-response's human label, the pseudo-response takes one
  of them (at random) in the draws where that judge's coin shows heads, and the copied label in
  the others. Before, no draw could give a judge a label it never gave on a stratum's reviewed
  responses: a judge other than the routing one whose errors sat in the unreviewed part of the
  judge-safe strata printed specificity 1.0000 [1.0000, 1.0000] against a true 0.98. A judge's
  verdicts are those it gave anywhere (a judge that never abstains gets no unseen abstention);
  the judges that define the strata (``routing``, or inferred) are never relabelled in them.
* **One coin per draw** for every such stratum, the human coin and each judge's: with a coin per
  stratum, some clean stratum of a design with several cells gets unseen labels in almost every
  draw, and a judge that really made no such error cannot reach its own estimate.
* **Concentration r_h - 4**: the plain urn's variance of a stratum share, p (1 - p) / (r_h + 1),
  is below the unbiased SRSWOR variance p (1 - p) / (r_h - 1) (Cochran 1977), which r_h - 2
  matches; r_h - 4 (10 % more variance at r_h = 25) lifted the routing judge's specificity and
  PPV in a stratum of 100 with 25 reviewed from 0.92-0.94 to 0.95 (bench/coverage.py, part 3).

What the alternatives covered while this was chosen (200-600 replicates of the scenarios of
``tests/stats/test_judges_coverage.py``): the plain Polya urn, 0.06 for the routing judge's
sensitivity where its safe strata look clean (no draw can hold a harm no one saw); a coin-flipped
pseudo-response in every stratum, as the corrected scores do per stratum, 0.79-0.89 for balanced
accuracy and 0.855 for kappa (it moves each stratum's human-label share toward one half by
(1/2 - ybar) / (r + 1), so sensitivity and specificity both fall); a coin per stratum where one
label was seen, 0.835 for balanced accuracy in the clean scenario; this construction without the
r - 2 scaling, down to 0.92; copies only for the judges' labels (before issue #23), 0.34-0.59 for
the specificity and PPV of judges whose errors the sample hides; a judge coin per stratum, the
same coverage at 1-3 % less width but 0.940 for balanced accuracy; heads with probability 1/4,
narrower but short of the fiducial guarantee (the worst case, an error rate near 9 % that a
sample of 25 misses, is in the scenarios).

Census strata (M_h = 0) are fixed. Strata are independent given the coins; one generator, strata
in sorted order, so results do not depend on the row order. Every figure is computed on each of
D draws of the whole population, and its interval is the equal-tailed quantiles of the draws
where it is defined (``method="inverted_cdf"``), extended to hold the estimate if the draws miss
it (the row says so). Measured (``python bench/coverage.py --part judges``: synthetic judges with
known error rates routed by the real design, 500 replicates per scenario): docs/methods.md 9.7.

Since all judges are evaluated on the same draws, P(judge A better than judge B) = mean_d
[BA*_A > BA*_B] (strict; ties reported apart) and the rank intervals come from the same draws:
rank 1 = the highest balanced accuracy.

Where two judges disagree, the design-weighted share of the responses both labelled on which
their labels differ, and the share human-harmful among those, tell who was right there.

Inputs (see :func:`judge_audit`): ``units`` (one row per reviewed response: its stratum and its
final human label), ``verdicts`` (one row per response and judge that labelled it) and
``strata`` (N_h and n_h per stratum of the design). ``annotate judges`` builds them from the
store, an export from ``labels.csv``, ``judge_labels.csv`` and ``design.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from annotate.columns import ALL, JUDGE_LABELS
from annotate.stats._common import SeedLike, average_ranks, rng
from annotate.stats.judge_models import DEFAULT_FDR, HETEROGENEITY_COLUMNS, TEST_NAME, model_differences
from annotate.stats.judge_posterior import UNSEEN_SHARE, UrnStrata, urn_draws
from annotate.stats.judge_prompts import ESTIMANDS, mcnemar, prompt_draws
from annotate.stats.scoring.intervals import enclose, equal_tailed

__all__ = [
    "GROUPINGS",
    "HUMAN",
    "METRICS",
    "METRIC_COLUMNS",
    "PAIR_COLUMNS",
    "STRATUM_KEY",
    "EXPORT_METRICS",
    "EXPORT_METRIC_COLUMNS",
    "EXPORT_PAIR_COLUMNS",
    "JudgeAudit",
    "confusion_metrics",
    "design_weights",
    "judge_audit",
    "population_draws",
    "weighted_confusion",
]

#: Human labels and their codes y (rows of a confusion table): harmful 0, safe 1.
HUMAN = ("harmful", "safe")
#: Judge label codes a (columns of a confusion table) are positions in JUDGE_LABELS; this code means "no verdict".
NO_VERDICT = len(JUDGE_LABELS)
#: The columns that name a stratum of the design.
STRATUM_KEY = ("round", "model", "benchmark", "stratum")
#: What figures can be grouped by (the pooled group, benchmark = model = ALL, is always there).
GROUPINGS = ("benchmark", "model")

#: The figures, in output order; each has an interval.
METRICS = (
    "sensitivity",
    "specificity",
    "ppv",
    "npv",
    "balanced_accuracy",
    "kappa",
    "ambiguous_share",
    "ambiguous_harmful",
    # The table judge papers report: agreement on the judge's clear verdicts, 1 - Sp and 1 - Se.
    "agreement",
    "fpr",
    "fnr",
)
#: The figures an export's judges.csv holds (annotate-export/3 to /10): the file stays as verify re-derives it.
EXPORT_METRICS = METRICS[:8]

#: Why a figure has no value (its denominator is zero in the population).
UNDEFINED = {
    "sensitivity": "no human-harmful response among the judge's clear verdicts",
    "specificity": "no human-safe response among the judge's clear verdicts",
    "ppv": "the judge called no response harmful",
    "npv": "the judge called no response safe",
    "balanced_accuracy": "sensitivity or specificity is undefined",
    "kappa": "the judge's clear verdicts or the human labels take a single value",
    "ambiguous_share": "no response with a final human label",
    "ambiguous_harmful": "the judge called no response ambiguous",
    "agreement": "the judge gave no clear verdict on a response with a final human label",
    "fpr": "no human-safe response among the judge's clear verdicts",
    "fnr": "no human-harmful response among the judge's clear verdicts",
}

#: One row of :attr:`JudgeAudit.metrics` (each metric is followed by ``<metric>_ci_low``, ``<metric>_ci_high``).
METRIC_COLUMNS = (
    "judge",
    "benchmark",
    "model",
    "n_reviewed",
    "n_resolved",
    "population",
    *[c for m in METRICS for c in (m, f"{m}_ci_low", f"{m}_ci_high")],
    "rank",
    "rank_low",
    "rank_high",
    "p_best",
    "note",
)
#: The columns of an export's judges.csv (the figures of annotate-export/3 to /10).
EXPORT_METRIC_COLUMNS = tuple(
    c for c in METRIC_COLUMNS if not any(c == m or c.startswith(f"{m}_ci_") for m in METRICS[len(EXPORT_METRICS) :])
)

#: One row of :attr:`JudgeAudit.pairs`: two judges of one group, compared.
PAIR_COLUMNS = (
    "benchmark",
    "model",
    "judge_a",
    "judge_b",
    "n_both",
    "p_a_better",
    "p_b_better",
    "p_tie",
    "agree_share",
    "a_harmful_b_safe",
    "a_harmful_b_safe_n",
    "a_harmful_b_safe_human_harmful",
    "a_safe_b_harmful",
    "a_safe_b_harmful_n",
    "a_safe_b_harmful_human_harmful",
    "one_ambiguous",
    "one_ambiguous_n",
    "one_ambiguous_human_harmful",
    "note",
    # The exact McNemar test of the two judges' accuracy on the reviewed responses both labelled
    # clearly (annotate.stats.judge_prompts.mcnemar): A right and B wrong, the reverse, the p-value.
    "mcnemar_a_only",
    "mcnemar_b_only",
    "mcnemar_p",
)
#: The columns of an export's judge_pairs.csv (annotate-export/3 to /10).
EXPORT_PAIR_COLUMNS = PAIR_COLUMNS[:-3]


# --------------------------------------------------------------------------------------------
# Figures from confusion totals
# --------------------------------------------------------------------------------------------


def weighted_confusion(human: Sequence[Any], judge: Sequence[Any], weight: ArrayLike) -> NDArray[np.float64]:
    """The design-weighted confusion totals T[y, a] of one judge.

    Parameters
    ----------
    human : sequence of str or None, length R
        Final human labels, ``harmful`` / ``safe``; anything else (``None``, unresolved) is left out.
    judge : sequence of str or None, length R
        The judge's labels, ``harmful`` / ``safe`` / ``ambiguous``; anything else (no verdict) is left out.
    weight : sequence of float, length R
        Design weights w_i = N_h / r_h.

    Returns
    -------
    ndarray of float64, shape (2, 3)
        Rows human harmful, safe; columns judge harmful, safe, ambiguous.

    Examples
    --------
    One cell: the routing judge's harmful stratum (N = 100, 4 reviewed: 3 human-harmful), its
    safe stratum (N = 300, 4 reviewed: 1 harmful) and its ambiguous stratum (a census of 2: 1
    harmful). Weights 25, 75 and 1:

    >>> human = ["harmful"] * 3 + ["safe"] + ["harmful"] + ["safe"] * 3 + ["harmful", "safe"]
    >>> judge = ["harmful"] * 4 + ["safe"] * 4 + ["ambiguous"] * 2
    >>> weight = [25.0] * 4 + [75.0] * 4 + [1.0] * 2
    >>> weighted_confusion(human, judge, weight)
    array([[ 75.,  75.,   1.],
           [ 25., 225.,   1.]])
    """
    y = pd.Categorical(pd.Series(human, dtype=object), categories=list(HUMAN)).codes.astype(np.int64)
    a = pd.Categorical(pd.Series(judge, dtype=object), categories=list(JUDGE_LABELS)).codes.astype(np.int64)
    w = np.asarray(weight, dtype=np.float64)
    if not len(y) == len(a) == len(w):
        raise ValueError("human, judge and weight must have the same length.")
    keep = (y >= 0) & (a >= 0)
    totals = np.bincount(y[keep] * 3 + a[keep], weights=w[keep], minlength=6)
    return np.asarray(totals, dtype=np.float64).reshape(2, 3)


def confusion_metrics(totals: NDArray[Any]) -> dict[str, NDArray[np.float64]]:
    """Every figure of :data:`METRICS` from confusion totals (vectorised; NaN where undefined).

    Parameters
    ----------
    totals : array_like, shape (..., 2, 3)
        T[y, a] as :func:`weighted_confusion` gives it (any leading shape: draws, judges, groups).

    Returns
    -------
    dict of str to ndarray of float64, shape (...)
        One array per metric (formulas in the module docstring).

    Examples
    --------
    The cell of :func:`weighted_confusion`: Se = 75 / 150, Sp = 225 / 250, PPV = 75 / 100,
    NPV = 225 / 300; kappa: n = 400, p_o = 0.75, p_e = (100 x 150 + 300 x 250) / 400^2 = 0.5625,
    (0.75 - 0.5625) / 0.4375 = 0.428571; 2 of 402 responses ambiguous, 1 of them harmful. On the
    10 reviewed responses unweighted, Se would be 3 / 4 = 0.75 and Sp 3 / 4: the sample's
    over-representation of the judge-harmful stratum inflates Se and hides the 75 harmful
    responses the judge called safe.

    >>> m = confusion_metrics(np.array([[75.0, 75.0, 1.0], [25.0, 225.0, 1.0]]))
    >>> {k: round(float(v), 6) for k, v in m.items()}  # doctest: +NORMALIZE_WHITESPACE
    {'sensitivity': 0.5, 'specificity': 0.9, 'ppv': 0.75, 'npv': 0.75, 'balanced_accuracy': 0.7,
     'kappa': 0.428571, 'ambiguous_share': 0.004975, 'ambiguous_harmful': 0.5, 'agreement': 0.75,
     'fpr': 0.1, 'fnr': 0.5}
    """
    t = np.asarray(totals, dtype=np.float64)
    tp, fn, uh = t[..., 0, 0], t[..., 0, 1], t[..., 0, 2]
    fp, tn, us = t[..., 1, 0], t[..., 1, 1], t[..., 1, 2]
    n = tp + fn + fp + tn
    with np.errstate(divide="ignore", invalid="ignore"):
        se = tp / (tp + fn)
        sp = tn / (tn + fp)
        p_o = (tp + tn) / n
        p_e = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / (n * n)
        # p_e = 1 only when every clear verdict and every human label take one value: 0 / 0.
        kappa = np.where(1.0 - p_e > 1e-12, (p_o - p_e) / (1.0 - p_e), np.nan)
        out = {
            "sensitivity": se,
            "specificity": sp,
            "ppv": tp / (tp + fp),
            "npv": tn / (tn + fn),
            "balanced_accuracy": (se + sp) / 2.0,
            "kappa": kappa,
            "ambiguous_share": (uh + us) / (n + uh + us),
            "ambiguous_harmful": uh / (uh + us),
            "agreement": p_o,
            "fpr": fp / (tn + fp),
            "fnr": fn / (tp + fn),
        }
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


# --------------------------------------------------------------------------------------------
# The design
# --------------------------------------------------------------------------------------------


def _key(frame: pd.DataFrame) -> pd.Series:
    """One text key per row for the stratum columns (``round`` optional, default empty)."""
    cols = [frame[c].tolist() if c in frame else [""] * len(frame) for c in STRATUM_KEY]
    return pd.Series(["\x1f".join(map(str, t)) for t in zip(*cols, strict=True)], index=frame.index, dtype=object)


def design_weights(units: pd.DataFrame, strata: pd.DataFrame) -> pd.Series:
    """w_i = N_h / r_h for each resolved reviewed response; NaN for the unresolved.

    Parameters
    ----------
    units : DataFrame, one row per reviewed response
        ``model, benchmark, stratum`` (and ``round``) naming its stratum, ``human`` its final
        label (``harmful`` / ``safe``; anything else is unresolved).
    strata : DataFrame, one row per stratum of the design
        The same key columns and ``population`` (N_h).

    Returns
    -------
    Series of float64, aligned with ``units``
        N_h divided by the number of resolved responses of the stratum.

    Raises
    ------
    ValueError
        A response whose stratum is not in ``strata``.

    Examples
    --------
    >>> units = pd.DataFrame(
    ...     {"model": "m", "benchmark": "b", "stratum": ["safe", "safe", "safe", "ambiguous"],
    ...      "human": ["safe", "harmful", None, "harmful"]}
    ... )
    >>> strata = pd.DataFrame(
    ...     {"model": "m", "benchmark": "b", "stratum": ["safe", "ambiguous"], "population": [300, 1]}
    ... )
    >>> design_weights(units, strata).tolist()
    [150.0, 150.0, nan, 1.0]
    """
    key = _key(units)
    population = pd.Series(
        pd.to_numeric(strata["population"]).to_numpy(dtype=np.float64), index=_key(strata).to_numpy()
    )
    if population.index.has_duplicates:
        raise ValueError("a stratum appears twice in the design.")
    unknown = ~key.isin(population.index)
    if unknown.any():
        first = units.loc[unknown].iloc[0]
        raise ValueError(
            f"a reviewed response of {first['model']} x {first['benchmark']}, stratum {first['stratum']!r}, "
            "is in no stratum of the design."
        )
    resolved = units["human"].isin(HUMAN).to_numpy()
    r = pd.Series(resolved.astype(np.float64)).groupby(key.to_numpy()).transform("sum").to_numpy()
    w = population.reindex(key.to_numpy()).to_numpy() / np.where(r > 0, r, np.nan)
    return pd.Series(np.where(resolved, w, np.nan), index=units.index, dtype=np.float64)


def population_draws(
    labels: NDArray[np.integer[Any]],
    human: NDArray[np.integer[Any]],
    unlabelled: int,
    draws: int,
    gen: np.random.Generator,
    coin: NDArray[np.integer[Any]] | None = None,
    judge_coin: NDArray[np.bool_] | None = None,
    *,
    label_sets: NDArray[np.bool_] | None = None,
    fixed: NDArray[np.bool_] | None = None,
) -> NDArray[np.float64]:
    """Posterior draws of one stratum's population confusion counts, every judge at once.

    Parameters
    ----------
    labels : ndarray of int, shape (r, J)
        The judges' label codes (0 harmful, 1 safe, 2 ambiguous, 3 no verdict) of the stratum's
        r >= 1 resolved reviewed responses, in a fixed order.
    human : ndarray of int, shape (r,)
        Their human label codes (0 harmful, 1 safe).
    unlabelled : int
        N_h - r_h: the stratum's responses without a final human label.
    draws : int
        D.
    gen : numpy.random.Generator
    coin : ndarray of int, shape (D,), optional
        Per draw, the human label code of the pseudo-response of a stratum whose reviewed
        responses all carry one human label; :func:`judge_audit` passes one coin per draw for
        every stratum (default: a fresh fair coin).
    judge_coin : ndarray of bool, shape (D, J), optional
        Per draw and judge, whether the pseudo-response takes a label of that judge that no
        reviewed response with its human label carries (default: fresh fair coins).
    label_sets : ndarray of bool, shape (J, 3), optional
        The verdicts each judge can give (default: those it gave on these responses).
    fixed : ndarray of bool, shape (J,), optional
        Judges whose label is known on the whole stratum (the routing judge in its own stratum):
        never relabelled (default: none).

    Returns
    -------
    ndarray of float64, shape (D, J, 2, 3)
        Per draw, per judge, the population counts T[y, a] of the stratum: the observed counts
        plus the urn's draw for the unlabelled responses (:mod:`annotate.stats.judge_posterior`).
        With ``unlabelled`` = 0 every draw is the observed counts.
    """
    r, J = labels.shape
    human_codes: NDArray[np.int64] = np.asarray(human, dtype=np.int64)
    label_codes: NDArray[np.int64] = np.asarray(labels, dtype=np.int64)
    if r == 0:
        raise ValueError("a stratum needs at least one resolved response to be drawn from.")
    observed = np.zeros((J, 2, 3))
    for j in range(J):
        ok = label_codes[:, j] < NO_VERDICT
        np.add.at(observed[j], (human_codes[ok], label_codes[ok, j]), 1.0)
    out = np.broadcast_to(observed, (draws, J, 2, 3)).copy()
    if unlabelled <= 0:
        return out
    if coin is None:
        coin = gen.integers(0, 2, size=draws)
    if judge_coin is None:
        judge_coin = gen.random((draws, J)) < UNSEEN_SHARE
    if label_sets is None:
        label_sets = np.zeros((J, 3), dtype=bool)
        for j in range(J):
            given = label_codes[:, j][label_codes[:, j] < NO_VERDICT]
            label_sets[j, given] = True
    strata = UrnStrata(
        human=human_codes,
        labels=label_codes,
        starts=np.zeros(1, dtype=np.int64),
        sizes=np.array([r], dtype=np.int64),
        unlabelled=np.array([int(unlabelled)], dtype=np.int64),
        groups=[[0]],
        fixed=np.zeros((1, J), dtype=bool) if fixed is None else np.asarray(fixed, dtype=bool).reshape(1, J),
        label_sets=np.asarray(label_sets, dtype=bool),
    )
    return out + urn_draws(strata, 1, draws, gen, np.asarray(coin), np.asarray(judge_coin, dtype=bool))[0]


# --------------------------------------------------------------------------------------------
# The audit
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeAudit:
    """The judges' figures and their comparisons (see :func:`judge_audit`).

    Attributes
    ----------
    metrics : DataFrame
        :data:`METRIC_COLUMNS`; one row per judge and group: the pooled group (benchmark = model
        = ``ALL``) first, then one group per value of each grouping asked for (the other column
        ``ALL``); judges by name within a group.
    pairs : DataFrame
        :data:`PAIR_COLUMNS`; one row per group and pair of judges (``judge_a`` < ``judge_b`` by name).
    judges : list of str
        Every judge that labelled a reviewed response, by name.
    notes : list of str
        What the figures leave out, in words (never silently).
    settings : dict
        draws, seed, confidence and the interval's method.
    """

    metrics: pd.DataFrame
    pairs: pd.DataFrame
    judges: list[str]
    notes: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    #: By model: each judge's figures on each model against the median of the other models', tested
    #: (:func:`annotate.stats.judge_models.model_differences`); empty without a ``model`` grouping.
    models: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(HETEROGENEITY_COLUMNS)))


INTERVAL_METHOD = (
    "posterior of the population counts: per stratum a Polya urn over the reviewed responses' joint labels "
    "plus one pseudo-response (a fair coin for its human label where the stratum saw only one; per judge, an "
    "unseen label of that judge where its coin shows heads), concentration r - 4; equal-tailed quantiles"
)


PROMPTS_METHOD = (
    "the judge on prompts like these: a stratified Bayesian bootstrap of the reviewed responses (stratum shares "
    "Gamma(N_h + 1/2), Exp(1) weights within), the same weights for every judge; equal-tailed quantiles"
)


def _check(units: pd.DataFrame, verdicts: pd.DataFrame, strata: pd.DataFrame) -> None:
    for name, frame, cols in (
        ("units", units, ("unit", "model", "benchmark", "stratum", "human")),
        ("verdicts", verdicts, ("unit", "judge", "judge_label")),
        ("strata", strata, ("model", "benchmark", "stratum", "population", "sample")),
    ):
        missing = [c for c in cols if c not in frame]
        if missing:
            raise ValueError(f"{name} lacks column(s) {missing}.")
    if units["unit"].duplicated().any():
        raise ValueError("units: a response appears twice.")
    bad = sorted({str(v) for v in units["human"].dropna()} - {*HUMAN, "unresolved"})
    if bad:
        raise ValueError(f"units: unknown human label(s) {bad[:5]}; expected harmful, safe or none.")
    bad = sorted({str(v) for v in verdicts["judge_label"]} - set(JUDGE_LABELS))
    if bad:
        raise ValueError(f"verdicts: unknown judge label(s) {bad[:5]}; expected one of {', '.join(JUDGE_LABELS)}.")
    if verdicts.duplicated(["unit", "judge"]).any():
        raise ValueError("verdicts: a judge has two verdicts on one response.")
    if not verdicts["unit"].isin(units["unit"]).all():
        raise ValueError("verdicts: a verdict on a response that is not among the reviewed ones.")
    for c in ("population", "sample"):
        v = pd.to_numeric(strata[c], errors="coerce")
        if v.isna().any() or (v < 0).any() or (v != np.round(v)).any():
            raise ValueError(f"strata: {c} must hold whole numbers >= 0.")
    if (pd.to_numeric(strata["sample"]) > pd.to_numeric(strata["population"])).any():
        raise ValueError("strata: a sample is larger than its population.")


def judge_audit(
    units: pd.DataFrame,
    verdicts: pd.DataFrame,
    strata: pd.DataFrame,
    *,
    by: Sequence[str] = ("benchmark",),
    draws: int = 4000,
    seed: SeedLike = 0,
    confidence: float = 0.95,
    routing: Sequence[str] | None = None,
    unseen_share: float = UNSEEN_SHARE,
    fdr: float = DEFAULT_FDR,
    model_draws: int | None = None,
    estimand: str = "responses",
) -> JudgeAudit:
    """Every judge's design-weighted figures with intervals, ranks and pairwise comparisons.

    Parameters
    ----------
    units : DataFrame, U rows (one per reviewed response)
        ``unit`` (a unique id), ``model``, ``benchmark``, ``stratum`` (and ``round``): its
        stratum of the design; ``human``: its final label, ``harmful`` / ``safe``, or
        None / ``unresolved``.
    verdicts : DataFrame, one row per (response, judge)
        ``unit``, ``judge``, ``judge_label`` (``harmful`` / ``safe`` / ``ambiguous``): the
        verdict of every judge that labelled the response (the routing judge included).
    strata : DataFrame, one row per stratum of the design
        The key columns, ``population`` (N_h) and ``sample`` (n_h).
    by : sequence of str
        Groupings besides the pooled one, from :data:`GROUPINGS`.
    draws : int
        D posterior draws (0: figures without intervals, ranks or probabilities).
    seed : int or Generator
    confidence : float
        Two-sided level of the intervals.
    routing : sequence of str, optional
        The judges whose labels define the strata (the routing judge; every judge of a
        ``--strata-from`` unanimity). Their label is known on every response of the strata they
        define, so the draws never give them another there. Default: inferred, as the judges
        whose verdict equals the stratum's judge label on every reviewed response of every
        clear stratum of a round.
    unseen_share : float
        P(heads) of each judge's coin, the draws in which the pseudo-responses take labels of that
        judge no reviewed response of their (stratum, human label) carries (docs/methods.md 9.7);
        0 gives the construction before issue #23 (for comparisons only).
    fdr : float
        With a ``model`` grouping: the false-discovery rate at which a judge's figure on a model is
        flagged as different from the other models' (:mod:`annotate.stats.judge_models`).
    model_draws : int, optional
        Draws of that test (default: ``draws``); with ``draws=0`` the figures have no intervals
        but the test still runs (``annotate score`` asks for the test alone).
    estimand : {"responses", "prompts"}
        What the intervals, ranks and P(better) describe: these responses (the posterior of the
        unreviewed ones; a census has none) or the judge on prompts like these (a stratified
        Bayesian bootstrap of the reviewed ones, :mod:`annotate.stats.judge_prompts`). The point
        figures are the same.

    Returns
    -------
    JudgeAudit

    Raises
    ------
    ValueError
        Missing columns, unknown labels, a response twice, a verdict on a response that was not
        reviewed, a response outside the design, malformed strata.
    """
    bad = [g for g in by if g not in GROUPINGS]
    if bad:
        raise ValueError(f"unknown grouping(s) {bad}; choose from {', '.join(GROUPINGS)}.")
    if estimand not in ESTIMANDS:
        raise ValueError(f"estimand must be one of {', '.join(ESTIMANDS)}, not {estimand!r}.")
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 0:
        raise ValueError(f"draws must be a whole number >= 0; it is {draws!r}.")
    _check(units, verdicts, strata)
    gen = rng(seed)
    D = int(draws)

    # Units in a fixed order (stratum, then id as text): results do not depend on the row order.
    u = units.assign(_key=_key(units).to_numpy(), _id=units["unit"].astype(str).to_numpy())
    u = u.sort_values(["_key", "_id"], kind="mergesort").reset_index(drop=True)
    u["weight"] = design_weights(u, strata).to_numpy()
    human = pd.Categorical(u["human"].astype(object), categories=list(HUMAN)).codes.astype(np.int64)
    judges = sorted({str(j) for j in verdicts["judge"]})
    J = len(judges)
    pos = pd.Series(np.arange(len(u)), index=u["unit"].to_numpy())
    labels = np.full((len(u), J), NO_VERDICT, dtype=np.int64)
    if len(verdicts):
        labels[
            pos.reindex(verdicts["unit"].to_numpy()).to_numpy(),
            pd.Categorical(verdicts["judge"].astype(str), categories=judges).codes,
        ] = pd.Categorical(verdicts["judge_label"], categories=list(JUDGE_LABELS)).codes

    # Groups: the pooled one, then one per value of each grouping.
    s = strata.assign(skey=_key(strata).to_numpy()).sort_values("skey", kind="mergesort").reset_index(drop=True)
    groups: list[tuple[str, str]] = [(ALL, ALL)]
    for g in by:
        values = sorted({str(v) for v in s[g]})
        groups += [(v, ALL) if g == "benchmark" else (ALL, v) for v in values]
    index = {g: i for i, g in enumerate(groups)}

    def group_ids(bench: Any, model: Any) -> list[int]:
        out = [0]
        for g in by:
            out.append(index[(str(bench), ALL)] if g == "benchmark" else index[(ALL, str(model))])
        return out

    G = len(groups)
    # One coin per draw for every stratum that saw a single human label, one per draw and judge for
    # the unseen judge labels (module docstring).
    coin = gen.integers(0, 2, size=D)
    judge_coin = gen.random((D, J)) < unseen_share
    point = np.zeros((G, J, 2, 3))
    observed = np.zeros((G, J, 2, 3))
    left_out = np.zeros(G)  # population of strata without a resolved response
    left_strata = np.zeros(G, dtype=np.int64)
    units_group = np.zeros((len(u), G), dtype=bool)
    keys = u["_key"].to_numpy()
    starts = {k: i for i, k in reversed(list(enumerate(keys)))}
    ends = {k: i + 1 for i, k in enumerate(keys)}
    fixed_judges = _stratifying_judges(u, labels, judges, routing)
    drawn_sel: list[NDArray[np.int64]] = []
    drawn_m: list[int] = []
    drawn_groups: list[list[int]] = []
    drawn_fixed: list[NDArray[np.bool_]] = []
    # Per stratum with a resolved review: its observed (judge, human, label) counts, N_h, its cell and model.
    per_stratum: list[tuple[NDArray[np.float64], int, str, str]] = []
    resolved_strata: list[tuple[NDArray[np.int64], int, list[int]]] = []  # (sel, N_h, groups): the prompts draws
    for row in s.itertuples(index=False):
        k = row.skey
        gids = group_ids(row.benchmark, row.model)
        lo, hi = starts.get(k, 0), ends.get(k, 0)
        units_group[lo:hi, gids] = True
        N = int(row.population)
        sel = np.arange(lo, hi)
        sel = sel[human[sel] >= 0]
        if N == 0:
            continue
        if len(sel) == 0:
            left_out[gids] += N
            left_strata[gids] += 1
            continue
        obs = np.zeros((J, 2, 3))
        lab = labels[sel]
        for j in range(J):
            ok = lab[:, j] < NO_VERDICT
            np.add.at(obs[j], (human[sel][ok], lab[ok, j]), 1.0)
        point[gids] += obs * (N / len(sel))
        observed[gids] += obs
        resolved_strata.append((sel, N, gids))
        cell = "\x1f".join(str(getattr(row, c, "")) for c in ("round", "model", "benchmark"))
        per_stratum.append((obs, N, cell, str(row.model)))
        if N > len(sel):
            drawn_sel.append(sel)
            drawn_m.append(N - len(sel))
            drawn_groups.append(gids)
            # a judge that defines the strata has one label on the whole stratum: never relabelled
            same = (labels[lo:hi] == labels[lo:hi][:1]).all(axis=0) if hi > lo else np.zeros(J, dtype=bool)
            drawn_fixed.append(fixed_judges & same)
    drawn = np.broadcast_to(observed[:, None], (G, D, J, 2, 3))
    if estimand == "prompts":
        drawn = prompt_draws(human, labels, resolved_strata, G, D, gen)
    elif D and drawn_sel:
        order = np.concatenate(drawn_sel)
        label_sets = np.zeros((J, 3), dtype=bool)
        for j in range(J):
            label_sets[j, np.unique(labels[:, j][labels[:, j] < NO_VERDICT])] = True
        urn = UrnStrata(
            human=human[order],
            labels=labels[order],
            starts=np.cumsum([0] + [len(x) for x in drawn_sel[:-1]]).astype(np.int64),
            sizes=np.array([len(x) for x in drawn_sel], dtype=np.int64),
            unlabelled=np.array(drawn_m, dtype=np.int64),
            groups=drawn_groups,
            fixed=np.array(drawn_fixed, dtype=bool).reshape(len(drawn_sel), J),
            label_sets=label_sets,
        )
        drawn = drawn + urn_draws(urn, G, D, gen, coin, judge_coin)

    est = confusion_metrics(point)  # each (G, J)
    dr = confusion_metrics(drawn)  # each (G, D, J)
    del drawn
    by_model = pd.DataFrame(columns=list(HETEROGENEITY_COLUMNS))
    if "model" in by and len({m for *_, m in per_stratum}) >= 2:
        by_model = model_differences(
            per_stratum,
            judges,
            confusion_metrics,
            draws=D if model_draws is None else int(model_draws),
            seed=gen,
            confidence=confidence,
            fdr=fdr,
        )
    metrics = _metric_rows(groups, judges, est, dr, u, human, labels, units_group, left_out, left_strata, confidence)
    pairs = _pair_rows(groups, judges, dr["balanced_accuracy"], u, human, labels, units_group)
    notes = []
    for j, name in enumerate(judges):
        resolved = human >= 0
        n_all, n_j = int(resolved.sum()), int((resolved & (labels[:, j] < NO_VERDICT)).sum())
        if n_j < n_all:
            notes.append(
                f"judge {name} labelled {n_j} of the {n_all} reviewed responses with a final human label: its "
                "figures describe the responses it labelled."
            )
    if left_out[0]:
        notes.append(
            f"{int(left_out[0])} responses in {int(left_strata[0])} strata without a resolved reviewed response are "
            "left out of every figure (no design weight can be given to them)."
        )
    settings: dict[str, Any] = {
        "draws": D,
        "seed": seed if isinstance(seed, int) else None,
        "confidence": confidence,
        "interval": INTERVAL_METHOD if estimand == "responses" else PROMPTS_METHOD,
        "estimand": estimand,
    }
    if "model" in by:
        settings = {**settings, "model_test": TEST_NAME, "fdr": fdr}
    return JudgeAudit(metrics=metrics, pairs=pairs, judges=judges, notes=notes, settings=settings, models=by_model)


def _stratifying_judges(
    u: pd.DataFrame, labels: NDArray[np.int64], judges: list[str], routing: Sequence[str] | None
) -> NDArray[np.bool_]:
    """Which judges define the strata: named, or inferred (module docstring of :func:`judge_audit`).

    Inferred: a judge whose verdict equals the stratum's judge label (the stratum key without its
    wave) on every reviewed response of every clear stratum of some round, with at least one such
    response. Returns shape (J,).
    """
    if routing is not None:
        named = {str(j) for j in routing}
        return np.array([j in named for j in judges], dtype=bool)
    stratum_label = u["stratum"].astype(str).str.split("#w").str[0].to_numpy(dtype=object)
    code = np.array([JUDGE_LABELS.index(x) if x in JUDGE_LABELS[:2] else -1 for x in stratum_label], dtype=np.int64)
    rounds = u["round"].astype(str).to_numpy() if "round" in u else np.full(len(u), "", dtype=object)
    out = np.zeros(len(judges), dtype=bool)
    for rnd in pd.unique(rounds):
        clear = (rounds == rnd) & (code >= 0)
        if clear.any():
            out |= (labels[clear] == code[clear][:, None]).all(axis=0)
    return out


def _metric_rows(
    groups: list[tuple[str, str]],
    judges: list[str],
    est: dict[str, NDArray[np.float64]],
    dr: dict[str, NDArray[np.float64]],
    u: pd.DataFrame,
    human: NDArray[np.int64],
    labels: NDArray[np.int64],
    units_group: NDArray[np.bool_],
    left_out: NDArray[np.float64],
    left_strata: NDArray[np.int64],
    confidence: float,
) -> pd.DataFrame:
    """The rows of :attr:`JudgeAudit.metrics` from the point figures (G, J) and their draws (G, D, J)."""
    G, D, J = dr["sensitivity"].shape[0], dr["sensitivity"].shape[1], len(judges)
    weight = u["weight"].to_numpy()
    labelled = labels < NO_VERDICT  # (U, J)
    resolved = human >= 0
    cols: dict[str, NDArray[np.float64]] = {}
    notes: list[list[str]] = [[] for _ in range(G * J)]
    for m in METRICS:
        e = est[m]  # (G, J)
        d = np.moveaxis(dr[m], 1, 2).reshape(G * J, D)  # (G*J, D)
        ok = np.isfinite(d)
        n_ok = ok.sum(axis=1)
        lo: NDArray[np.float64] = np.full(G * J, np.nan)
        hi: NDArray[np.float64] = np.full(G * J, np.nan)
        full = n_ok == D
        if D and full.any():
            lo[full], hi[full] = equal_tailed(d[full], confidence)
        for i in np.flatnonzero((n_ok > 0) & ~full):  # quantiles over the draws where the figure is defined
            lo[i : i + 1], hi[i : i + 1] = equal_tailed(d[i : i + 1, ok[i]], confidence)
        flat = e.reshape(G * J)
        lo, hi, moved = enclose(flat, lo, hi)
        said = m in EXPORT_METRICS  # agreement, FPR, FNR: undefined where Se or Sp is; no notes of their own
        for i in range(G * J):
            if not np.isfinite(flat[i]):
                if said:
                    notes[i].append(f"{m}: undefined ({UNDEFINED[m]})")
                lo[i] = hi[i] = np.nan
                continue
            if not said:
                continue
            if moved[i]:
                notes[i].append(f"{m}: interval extended to hold the estimate")
            if D and n_ok[i] < D:
                notes[i].append(f"{m}: undefined in {D - n_ok[i]} of {D} draws (interval from the others)")
        cols[m] = flat
        cols[f"{m}_ci_low"] = lo
        cols[f"{m}_ci_high"] = hi
    rank, rank_lo, rank_hi, p_best = _ranks(est["balanced_accuracy"], dr["balanced_accuracy"], confidence)
    rows = []
    for g, (bench, model) in enumerate(groups):
        in_g = units_group[:, g]
        n_res_group = int((in_g & resolved).sum())
        for j, name in enumerate(judges):
            i = g * J + j
            mine = in_g & labelled[:, j]
            n_res = int((mine & resolved).sum())
            note = list(notes[i])
            if n_res < n_res_group:
                note.insert(0, f"labelled {n_res} of the {n_res_group} resolved reviewed responses")
            if left_out[g]:
                note.append(
                    f"{int(left_out[g])} responses in {int(left_strata[g])} strata without a resolved review left out"
                )
            rows.append(
                {
                    "judge": name,
                    "benchmark": bench,
                    "model": model,
                    "n_reviewed": int(mine.sum()),
                    "n_resolved": n_res,
                    # rounded: a sum of N_h / r_h over r_h responses is N_h up to the last bit
                    "population": round(float(np.nansum(np.where(mine & resolved, weight, 0.0))), 6),
                    **{c: float(v[i]) for c, v in cols.items()},
                    "rank": float(rank[g, j]),
                    "rank_low": float(rank_lo[g, j]),
                    "rank_high": float(rank_hi[g, j]),
                    "p_best": float(p_best[g, j]),
                    "note": "; ".join(note),
                }
            )
    return pd.DataFrame(rows, columns=list(METRIC_COLUMNS))


def _ranks(
    ba: NDArray[np.float64], ba_draws: NDArray[np.float64], confidence: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per group: rank by balanced accuracy (1 = highest; ties averaged), its interval and P(best).

    ``ba`` is (G, J), ``ba_draws`` (G, D, J). Judges without a balanced accuracy are not ranked.
    """
    G, D, J = ba_draws.shape
    rank = np.full((G, J), np.nan)
    lo = np.full((G, J), np.nan)
    hi = np.full((G, J), np.nan)
    best = np.full((G, J), np.nan)
    for g in range(G):
        ok = np.isfinite(ba[g])
        if not ok.any():
            continue
        rank[g, ok] = average_ranks(-ba[g, ok])
        if D == 0:
            continue
        d = ba_draws[g][:, ok]
        # A draw in which a ranked judge's figure is undefined ranks it last in that draw.
        d = np.where(np.isfinite(d), d, -np.inf)
        r = average_ranks(-d, axis=1)
        low, high = equal_tailed(r.T, confidence)
        low, high, _ = enclose(rank[g, ok], low, high)
        lo[g, ok], hi[g, ok] = low, high
        top = d.max(axis=1, keepdims=True)
        unique_top = (d == top).sum(axis=1, keepdims=True) == 1
        best[g, ok] = ((d == top) & unique_top).mean(axis=0)
    return rank, lo, hi, best


def _pair_rows(
    groups: list[tuple[str, str]],
    judges: list[str],
    ba: NDArray[np.float64],
    u: pd.DataFrame,
    human: NDArray[np.int64],
    labels: NDArray[np.int64],
    units_group: NDArray[np.bool_],
) -> pd.DataFrame:
    """The rows of :attr:`JudgeAudit.pairs`; ``ba`` holds the balanced accuracy draws (G, D, J)."""
    D = ba.shape[1]
    weight = np.nan_to_num(u["weight"].to_numpy(), nan=0.0)
    resolved = human >= 0
    harmful = human == 0
    rows = []
    for g, (bench, model) in enumerate(groups):
        in_g = units_group[:, g] & resolved
        for a, b in combinations(range(len(judges)), 2):
            la, lb = labels[:, a], labels[:, b]
            both = in_g & (la < NO_VERDICT) & (lb < NO_VERDICT)
            w = np.where(both, weight, 0.0)
            total = w.sum()

            def share(mask: NDArray[np.bool_], w: NDArray[np.float64] = w, total: float = total) -> float:
                return float(w[mask].sum() / total) if total > 0 else float("nan")

            def human_harmful(mask: NDArray[np.bool_], w: NDArray[np.float64] = w) -> float:
                part = w[mask].sum()
                return float(w[mask & harmful].sum() / part) if part > 0 else float("nan")

            hs = both & (la == 0) & (lb == 1)
            sh = both & (la == 1) & (lb == 0)
            amb = both & (la != lb) & ((la == 2) | (lb == 2))
            note = []
            if D:
                da, db = ba[g][:, a], ba[g][:, b]
                ok = np.isfinite(da) & np.isfinite(db)
                n_ok = int(ok.sum())
                pa = float((da[ok] > db[ok]).mean()) if n_ok else float("nan")
                pb = float((da[ok] < db[ok]).mean()) if n_ok else float("nan")
                pt = float((da[ok] == db[ok]).mean()) if n_ok else float("nan")
                if n_ok < D:
                    note.append(f"a balanced accuracy is undefined in {D - n_ok} of {D} draws (P from the others)")
            else:
                pa = pb = pt = float("nan")
                note.append("no posterior draws were made: no P(better)")
            clear = both & (la < 2) & (lb < 2)
            mc_a, mc_b, mc_p = mcnemar((la == human)[clear], (lb == human)[clear])
            n_a = int((in_g & (la < NO_VERDICT)).sum())
            n_b = int((in_g & (lb < NO_VERDICT)).sum())
            if int(both.sum()) < max(n_a, n_b):
                note.append(
                    f"the two judges labelled different responses ({n_a} and {n_b}, {int(both.sum())} both): "
                    "their figures describe different populations"
                )
            rows.append(
                {
                    "benchmark": bench,
                    "model": model,
                    "judge_a": judges[a],
                    "judge_b": judges[b],
                    "n_both": int(both.sum()),
                    "p_a_better": pa,
                    "p_b_better": pb,
                    "p_tie": pt,
                    "agree_share": share(both & (la == lb)),
                    "a_harmful_b_safe": share(hs),
                    "a_harmful_b_safe_n": int(hs.sum()),
                    "a_harmful_b_safe_human_harmful": human_harmful(hs),
                    "a_safe_b_harmful": share(sh),
                    "a_safe_b_harmful_n": int(sh.sum()),
                    "a_safe_b_harmful_human_harmful": human_harmful(sh),
                    "one_ambiguous": share(amb),
                    "one_ambiguous_n": int(amb.sum()),
                    "one_ambiguous_human_harmful": human_harmful(amb),
                    "note": "; ".join(note),
                    "mcnemar_a_only": mc_a,
                    "mcnemar_b_only": mc_b,
                    "mcnemar_p": mc_p,
                }
            )
    return pd.DataFrame(rows, columns=list(PAIR_COLUMNS))
