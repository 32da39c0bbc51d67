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

Intervals: the reviewed population's posterior (:mod:`annotate.stats.judge_posterior`, docs/methods.md
9.19): per stratum a Dirichlet over the reviewed responses' joint labels (the human label and every
judge's) plus one or two pseudo-responses whose labels may be ones no reviewed response of the
stratum carries (errors on one side of a fair coin per draw shared by every stratum, correct labels
on the other), concentration r_h - 4. Its **responses** view draws the
unreviewed responses of each stratum (these responses, a finite population: a census is fixed);
its **prompts** view weighs each stratum's shares by the cell's stratum shares (the judges on
prompts like these). ``estimand`` chooses the view of the intervals, ranks and P(better); the
model test (:mod:`annotate.stats.judge_models`) and each pair's test
(:mod:`annotate.stats.judge_comparisons`) always use the prompts view, with :data:`TEST_DRAWS`
draws of the same seed, whatever ``draws`` (one test prints one q in every command). Every figure
is computed on each draw; its interval is the equal-tailed quantiles of the draws where it is
defined (``method="inverted_cdf"``), extended to hold the estimate if the draws miss it (the row
says so). The coverage of every interval and the level of every test, in the study's regimes,
are bench/validity.py's matrix (docs/methods.md 9.19).

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
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotate.columns import ALL, JUDGE_LABELS
from annotate.stats._common import SeedLike, rng
from annotate.stats.judge_comparisons import (
    EXPORT_PAIR_COLUMNS,
    PAIR_COLUMNS,
    PAIR_TEST,
    mcnemar,
    pair_rows,
    rank_judges,
)
from annotate.stats.judge_figures import (
    EXPORT_METRICS,
    HUMAN,
    METRICS,
    NO_VERDICT,
    UNDEFINED,
    confusion_metrics,
    weighted_confusion,
)
from annotate.stats.judge_models import DEFAULT_FDR, HETEROGENEITY_COLUMNS, TEST_NAME, model_differences
from annotate.stats.judge_posterior import UNSEEN_SHARE, VIEWS, ReviewedStrata, posterior_draws
from annotate.stats.scoring.intervals import enclose, equal_tailed

#: What a judge figure describes: ``responses`` (these responses, finite) or ``prompts`` (the judge
#: on prompts like these: the reviewed ones a sample of them). The views of the one posterior.
ESTIMANDS = VIEWS

__all__ = [
    "ESTIMANDS",
    "GROUPINGS",
    "PAIR_TEST",
    "TEST_DRAWS",
    "UNDEFINED",
    "mcnemar",
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

#: The columns that name a stratum of the design.
STRATUM_KEY = ("round", "model", "benchmark", "stratum")
#: What figures can be grouped by (the pooled group, benchmark = model = ALL, is always there).
GROUPINGS = ("benchmark", "model")

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
    seed: int | np.random.Generator = 0,
    down: NDArray[np.bool_] | None = None,
    judge_coin: NDArray[np.bool_] | None = None,
    *,
    label_sets: NDArray[np.bool_] | None = None,
    fixed: NDArray[np.bool_] | None = None,
    unseen_share: float = UNSEEN_SHARE,
    view: str = "responses",
    down_human: int = 0,
) -> NDArray[np.float64]:
    """Posterior draws of one stratum's confusion totals, every judge at once (a view of :func:`posterior_draws`).

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
    seed : int or Generator
    down : ndarray of bool, shape (D,), optional
        Per draw, whether it is on the errors' side (default: a fair coin): where the stratum saw one
        human label the pseudo-response takes the label that is an error of the stratum's judge
        (``down_human``), and each judge's unseen labels that are errors; on the other side the
        other label and the unseen correct ones.
    judge_coin : ndarray of bool, shape (D, J), optional
        Per draw and judge, whether its unseen labels are taken (default: with P = ``unseen_share``).
    down_human : int
        The human label that is an error of the stratum's judge: 1 (safe) in a stratum it called
        harmful, 0 (harmful) elsewhere.
    label_sets : ndarray of bool, shape (J, 3), optional
        The verdicts each judge can give (default: those it gave on these responses).
    fixed : ndarray of bool, shape (J,), optional
        Judges whose label is known on the whole stratum (the routing judge in its own stratum):
        never relabelled (default: none).
    unseen_share : float
        P that a judge's unseen labels are taken on the draw's side.
    view : {"responses", "prompts"}

    Returns
    -------
    ndarray of float64, shape (D, J, 2, 3)
        Per draw and judge, T[y, a]: under ``responses`` the population counts (the observed counts
        plus the drawn ones: with ``unlabelled`` = 0 every draw is the observed counts); under
        ``prompts`` N_h pi.
    """
    r, J = np.asarray(labels).shape
    label_codes: NDArray[np.int64] = np.asarray(labels, dtype=np.int64)
    if r == 0:
        raise ValueError("a stratum needs at least one resolved response to be drawn from.")
    st = ReviewedStrata(
        human=np.asarray(human, dtype=np.int64),
        labels=label_codes,
        starts=np.zeros(1, dtype=np.int64),
        sizes=np.array([r], dtype=np.int64),
        population=np.array([r + max(int(unlabelled), 0)], dtype=np.int64),
        cells=np.zeros(1, dtype=np.int64),
        groups=[[0]],
        fixed=np.zeros((1, J), dtype=bool) if fixed is None else np.asarray(fixed, dtype=bool).reshape(1, J),
        label_sets=_label_sets(label_codes, J) if label_sets is None else np.asarray(label_sets, dtype=bool),
        down_human=np.array([down_human], dtype=np.int64),
    )
    out = posterior_draws(
        st, 1, draws, seed, views=(view,), unseen_share=unseen_share, down=down, judge_coin=judge_coin
    )
    return out[view][0]


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


#: The judge audit of responses no judge labelled (``annotate.columns.NO_JUDGE``).
NO_JUDGE_NOTE = (
    "no judge labelled the reviewed responses (they were ingested without verdicts): there is no judge to "
    "audit; the scores rest on the human labels alone"
)


INTERVAL_METHOD = (
    "these responses: the responses view of the reviewed population's posterior (per stratum the unreviewed "
    "responses drawn from a Dirichlet over the reviewed responses' joint labels plus pseudo-responses that take "
    "labels no reviewed response of the stratum carries: errors of the judges in half the draws, the correct "
    "ones in the other half, one coin per draw for every stratum; concentration r - 4); equal-tailed quantiles"
)


PROMPTS_METHOD = (
    "the judges on prompts like these: the prompts view of the reviewed population's posterior (per stratum a "
    "Dirichlet over the reviewed responses' joint labels plus the same pseudo-responses, "
    "concentration r - 4, weighted by the cell's stratum shares Dirichlet(N_h + 1/2)); equal-tailed quantiles"
)

#: Draws of the tests (the model test, the pair test) whatever ``draws``: one test, one q everywhere.
TEST_DRAWS = 4000
#: The posterior's stream within a seed (the scores' draws use others).
POSTERIOR_STREAM = 41


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
    test_draws: int | None = None,
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
        P that a judge's unseen labels are taken on the draw's side (docs/methods.md 9.19; 1 by
        default); 0 gives the pseudo-responses' judge labels as copies, the construction before
        issue #23 (for comparisons only).
    fdr : float
        With a ``model`` grouping: the false-discovery rate at which a judge's figure on a model is
        flagged as different from the other models' (:mod:`annotate.stats.judge_models`).
    model_draws : int, optional
        The former name of ``test_draws`` (kept for scripts that pass it).
    estimand : {"responses", "prompts"}
        What the intervals, ranks and P(better) describe: these responses (the responses view of
        the posterior: the unreviewed ones drawn; a census has none to draw) or the judge on prompts
        like these (its prompts view). The point figures are the same.
    test_draws : int, optional
        Draws of the tests (the model test and each judge pair's), always the prompts view of the
        same posterior (default :data:`TEST_DRAWS`, whatever ``draws``: one test prints one q in
        ``score``, ``judges`` and ``export``); with ``draws=0`` the figures have no intervals but
        the tests still run (``annotate score`` asks for the model test alone). 0: no tests.

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
    if test_draws is None and model_draws is not None:
        test_draws = model_draws
    # The posterior's entropy: the seed itself (or one number from a Generator), so that every call
    # with the same seed draws the same posterior whichever figures it asks for.
    entropy = (
        [int(seed), POSTERIOR_STREAM]
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)
        else [int(rng(seed).integers(2**63)), POSTERIOR_STREAM]
    )
    D = int(draws)

    # Units in a fixed order (stratum, then id as text): results do not depend on the row order.
    u = units.assign(_key=_key(units).to_numpy(), _id=units["unit"].astype(str).to_numpy())
    u = u.sort_values(["_key", "_id"], kind="mergesort").reset_index(drop=True)
    u["weight"] = design_weights(u, strata).to_numpy()
    human = pd.Categorical(u["human"].astype(object), categories=list(HUMAN)).codes.astype(np.int64)
    judges = sorted({str(j) for j in verdicts["judge"]})
    J = len(judges)
    if J == 0:  # responses no judge labelled (ingested unjudged): nothing to audit, and said so
        return JudgeAudit(
            metrics=pd.DataFrame(columns=list(METRIC_COLUMNS)),
            pairs=pd.DataFrame(columns=list(PAIR_COLUMNS)),
            judges=[],
            notes=[NO_JUDGE_NOTE],
            settings={"draws": draws, "seed": seed if isinstance(seed, int) else None, "confidence": confidence,
                      "estimand": estimand, "census": False},
        )  # fmt: skip
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
    point = np.zeros((G, J, 2, 3))
    observed = np.zeros((G, J, 2, 3))
    left_out = np.zeros(G)  # population of strata without a resolved response
    left_strata = np.zeros(G, dtype=np.int64)
    units_group = np.zeros((len(u), G), dtype=bool)
    keys = u["_key"].to_numpy()
    starts = {k: i for i, k in reversed(list(enumerate(keys)))}
    ends = {k: i + 1 for i, k in enumerate(keys)}
    fixed_judges = _stratifying_judges(u, labels, judges, routing)
    # Per stratum with a resolved review: its responses, N_h, cell, groups and the judges fixed on it.
    drawn_sel: list[NDArray[np.int64]] = []
    drawn_n: list[int] = []
    drawn_cell: list[int] = []
    drawn_groups: list[list[int]] = []
    drawn_fixed: list[NDArray[np.bool_]] = []
    cell_ids: dict[str, int] = {}
    drawn_down: list[int] = []
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
        cell = "\x1f".join(str(getattr(row, c, "")) for c in ("round", "model", "benchmark"))
        drawn_sel.append(sel)
        drawn_n.append(max(N, len(sel)))
        drawn_cell.append(cell_ids.setdefault(cell, len(cell_ids)))
        # the human label that is an error of the stratum's judge: safe where it said harmful
        drawn_down.append(1 if str(row.stratum).split("#w")[0] == "harmful" else 0)
        drawn_groups.append(gids)
        # a judge that defines the strata has one label on the whole stratum: never relabelled
        same = (labels[lo:hi] == labels[lo:hi][:1]).all(axis=0) if hi > lo else np.zeros(J, dtype=bool)
        drawn_fixed.append(fixed_judges & same)
    reviewed = ReviewedStrata(
        human=human[np.concatenate(drawn_sel)] if drawn_sel else human[:0],
        labels=labels[np.concatenate(drawn_sel)] if drawn_sel else labels[:0],
        starts=np.cumsum([0] + [len(x) for x in drawn_sel[:-1]]).astype(np.int64),
        sizes=np.array([len(x) for x in drawn_sel], dtype=np.int64),
        population=np.array(drawn_n, dtype=np.int64),
        cells=np.array(drawn_cell, dtype=np.int64),
        down_human=np.array(drawn_down, dtype=np.int64),
        groups=drawn_groups,
        fixed=np.array(drawn_fixed, dtype=bool).reshape(len(drawn_sel), J),
        label_sets=_label_sets(labels, J),
    )
    if not drawn_sel:
        reviewed = replace(reviewed, starts=np.zeros(0, dtype=np.int64))
    models_tested = "model" in by and len({str(m) for m in s.loc[s.population > 0, "model"]}) >= 2
    T = TEST_DRAWS if test_draws is None else int(test_draws)
    draws_of = _posterior(reviewed, G, D, T, estimand, models_tested or J >= 2, entropy, unseen_share)
    drawn = draws_of["figures"] if D else np.broadcast_to(observed[:, None], (G, 0, J, 2, 3))
    tests = draws_of.get("tests")

    est = confusion_metrics(point)  # each (G, J)
    dr = confusion_metrics(drawn)  # each (G, D, J)
    del drawn
    by_model = pd.DataFrame(columns=list(HETEROGENEITY_COLUMNS))
    if models_tested:
        model_rows = [i for i, (bench, model) in enumerate(groups) if bench == ALL and model != ALL]
        resolved_clear = (human[:, None] >= 0) & (labels < 2)  # (U, J): a clear verdict on a resolved response
        n_truth = np.stack(
            [
                np.stack(
                    [(units_group[:, g, None] & resolved_clear & (human[:, None] == y)).sum(axis=0) for y in (0, 1)],
                    axis=1,
                )
                for g in model_rows
            ]
        )  # (M, J, 2)
        by_model = model_differences(
            point[model_rows],
            tests[model_rows] if tests is not None else np.zeros((len(model_rows), 0, J, 2, 3)),
            n_truth,
            judges,
            [groups[g][1] for g in model_rows],
            confusion_metrics,
            confidence=confidence,
            fdr=fdr,
        )
    metrics = _metric_rows(groups, judges, est, dr, u, human, labels, units_group, left_out, left_strata, confidence)
    census = reviewed.population.sum() == reviewed.sizes.sum()
    single = _single_stratum_groups(groups, drawn_groups)
    pairs = pair_rows(
        groups, judges, est["balanced_accuracy"], dr["balanced_accuracy"], tests, u, human, labels, units_group,
        census, single, confidence,
    )  # fmt: skip
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
        "census": bool(census),
        "test_draws": T if tests is not None else 0,
        "pair_test": PAIR_TEST,
    }
    if "model" in by:
        settings = {**settings, "model_test": TEST_NAME, "fdr": fdr}
    return JudgeAudit(metrics=metrics, pairs=pairs, judges=judges, notes=notes, settings=settings, models=by_model)


def _label_sets(labels: NDArray[np.int64], J: int) -> NDArray[np.bool_]:
    """(J, 3): the verdicts each judge gave anywhere in the reviewed data."""
    out = np.zeros((J, 3), dtype=bool)
    for j in range(J):
        out[j, np.unique(labels[:, j][labels[:, j] < NO_VERDICT])] = True
    return out


def _single_stratum_groups(groups: list[tuple[str, str]], strata_groups: list[list[int]]) -> NDArray[np.bool_]:
    """(G,): the groups that hold one stratum (within it the reviewed responses are a simple random sample)."""
    count = np.zeros(len(groups), dtype=np.int64)
    for gs in strata_groups:
        count[gs] += 1
    return count == 1


def _posterior(
    st: ReviewedStrata,
    G: int,
    D: int,
    T: int,
    estimand: str,
    want_tests: bool,
    entropy: list[int],
    unseen_share: float,
) -> dict[str, NDArray[np.float64]]:
    """The figures' draws (the estimand's view, D draws) and the tests' (the prompts view, T draws).

    One seed, one posterior: with D = T the tests' draws are the prompts view of the same draws as the
    figures' (the prompts estimand: the very same array), so ``score``, ``judges`` and ``export``
    print one q for one test whatever the estimand.
    """
    out: dict[str, NDArray[np.float64]] = {}
    if D and (not want_tests or T != D):
        out["figures"] = posterior_draws(st, G, D, entropy, views=(estimand,), unseen_share=unseen_share)[estimand]
    if want_tests and T:
        views = ("prompts",) if (D != T or estimand == "prompts") else ("responses", "prompts")
        both = posterior_draws(st, G, T, entropy, views=views, unseen_share=unseen_share)
        out["tests"] = both["prompts"]
        if D == T:
            out["figures"] = both[estimand]
    return out


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
    rank, rank_lo, rank_hi, p_best = rank_judges(est["balanced_accuracy"], dr["balanced_accuracy"], confidence)
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
