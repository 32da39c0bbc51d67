"""Corrected scores under every treatment and the ranking analysis, from the two audit tables (pure).

``score_tables(labels, design)`` is the whole computation behind ``annotate score``; the export
writes the same two tables, so ``annotate verify`` re-derives an export's scores from its own
files with this same function.

The score rows carry :data:`annotate.columns.SCORE_COLUMNS` (``estimate_kind``: ``judge``,
``stratified``, ``transport`` or ``mar``, the missing-at-random point inside a
partial-identification interval, empty when not estimable; ``benchmark_set``: the benchmarks an
overall row averages); the ranking rows :data:`annotate.columns.RANKING_COLUMNS` (``note``: why
tau-b or rho is missing; ``benchmark_set`` and ``left_out``: the models left out, with why).

The overall rows (benchmark ``ALL``) rank models on one benchmark set
(:func:`annotate.stats.ranking.shared_benchmarks`): by default the benchmarks every ranked
model has, every other model left out with its reason (``left_out``: "no results on X", "cell
M x B not estimable: ..."); ``benchmarks="all"`` averages each model over its own benchmarks
and flags every overall row when the sets differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from annotate.columns import ALL, RANKING_COLUMNS, REFERENCE_TREATMENT, SCORE_COLUMNS, TREATMENTS
from annotate.stats.ranking import BenchmarkSet, rank_stability, shared_benchmarks
from annotate.stats.scoring.ppi import ppi_overall, ppi_scores
from annotate.stats.scoring.scores import ScoreResult, corrected_scores
from annotate.stats.scoring.strata import shared_cell, strata_table

__all__ = ["PPI_COLUMNS", "PPIOutput", "ScoreOutput", "ppi_tables", "score_tables"]

#: The rows of ``annotate score --estimator ppi`` (``--json`` ``scores``): the PPI++ figures and,
#: beside them, the design-based ``corrected`` row of the same cell or model.
PPI_COLUMNS = (
    "model",
    "benchmark",
    "treatment",
    "estimate",
    "ci_low",
    "ci_high",
    "se",
    "interval",
    "gain",
    "design_estimate",
    "design_ci_low",
    "design_ci_high",
    "design_interval",
    "design_flag",
    "n_responses",
    "n_reviewed",
    "strata",
    "strata_fallback",
    "flag",
    "note",
    "estimate_kind",
    "benchmark_set",
)


@dataclass
class ScoreOutput:
    """What :func:`score_tables` returns (the tables of ``annotate score`` and of an export)."""

    scores: pd.DataFrame  # SCORE_COLUMNS, cells and benchmark == ALL
    ranking: pd.DataFrame  # RANKING_COLUMNS, per benchmark (and ALL) x treatment
    flips: pd.DataFrame  # benchmark, treatment, model_a, model_b, ranks, p_a_safer, p_b_safer, p_tie, credible
    models: pd.DataFrame  # per model (overall): rank, rank CI, dominance range, largest shift
    p_safer: pd.DataFrame  # K x K, ordered by corrected rank (overall)
    p_tie: pd.DataFrame  # K x K, same order: P(tie); p_safer + p_safer.T + p_tie = 1 off the diagonal
    transport: pd.DataFrame  # one row per benchmark: donors' Se'/Sp', label-shift test, decision
    settings: dict[str, Any]
    fallbacks: pd.DataFrame  # model, benchmark, treatment, reason: rows whose interval is not the one asked for
    benchmark_set: BenchmarkSet | None = None  # the set the overall ranking compares models on
    left_out: pd.DataFrame | None = None  # model, reason: every model the overall ranking leaves out
    #: The overall ranking on each bound's own draws (issue #23), where items are unresolved:
    #: ``bound`` (the bound treatment), ``model, estimate, rank, rank_low, rank_high``; empty otherwise.
    sensitivity: pd.DataFrame | None = None
    #: The overall rows' posterior draws per treatment, shape (M, D), rows in ``draw_models`` order (the
    #: draws the intervals and the ranking read; ``annotate grade`` reads them too). Not exported.
    overall_draws: dict[str, Any] | None = None
    draw_models: tuple[str, ...] = ()


def score_tables(
    labels: pd.DataFrame,
    design_strata: pd.DataFrame,
    *,
    strata_from: Mapping[str, Sequence[str]] | None = None,
    draws: int = 4000,
    seed: int = 0,
    min_reviewed: int = 10,
    estimand: str = "fixed",
    confidence: float = 0.95,
    benchmarks: Any = "shared",
    share_component: str | None = None,
) -> ScoreOutput:
    """Corrected scores under every treatment and the ranking analysis (pure).

    Parameters
    ----------
    labels : DataFrame
        ``labels.csv`` of an export (see :func:`.strata.strata_table`).
    design_strata : DataFrame
        The strata of the export's design.json (:data:`.strata.DESIGN_STRATA_COLUMNS`).
    strata_from : mapping, optional
        The rounds whose strata are several judges' unanimity, with those judges (design.json's
        ``strata_from``): named in ``settings``.
    draws, seed, min_reviewed, confidence, share_component
        Passed to :func:`corrected_scores`.
    estimand : {"fixed", "general"}
        Which interval fills ``ci_low`` / ``ci_high`` (and which ``interval`` names). A row
        without a general-estimand interval keeps its fixed-prompt one; its ``interval`` and
        ``note`` say so, and ``fallbacks`` lists it with the reason.
    benchmarks : "shared", "all" or a list of benchmark names
        The benchmark set of the overall rows and ranking (see the module docstring).

    Returns
    -------
    ScoreOutput
        ``scores`` (SCORE_COLUMNS; each cell and, as benchmark ``ALL``, each model's
        macro-average, under every treatment, with ranks), ``ranking`` (RANKING_COLUMNS, each
        treatment against the corrected ranking per benchmark and overall), ``flips``,
        ``models``, ``p_safer``, ``p_tie``, ``transport``, ``settings``, ``fallbacks``. Every
        estimate lies inside its interval and every rank inside its rank interval
        (:func:`.checks.check_scores` finds nothing). ``benchmark_set`` and ``left_out`` say
        which benchmarks the overall ranking compares and which models it leaves out, and why.

    Raises
    ------
    ValueError
        An unknown ``estimand``, a cell covered by more than one round, or a listed benchmark
        without scored cells.
    """
    if estimand not in ("fixed", "general"):
        raise ValueError("estimand must be 'fixed' or 'general'")
    strata = strata_table(labels, design_strata)
    shared = shared_cell(strata)
    if shared:
        raise ValueError(shared)
    present = strata[pd.to_numeric(strata.population, errors="coerce") > 0] if len(strata) else strata
    coverage = {m: set(g.benchmark) for m, g in present.groupby("model", sort=False)} if len(present) else {}
    if not isinstance(benchmarks, str):
        have = sorted(map(str, set(present.benchmark))) if len(present) else []
        unknown = sorted(set(map(str, benchmarks)) - set(have))
        if unknown or not list(benchmarks):
            raise ValueError(
                f"benchmark(s) {', '.join(unknown) or '(none given)'} have no scored cells; "
                f"the rounds cover: {', '.join(have) or 'none'}"
            )
    chosen = shared_benchmarks(coverage, benchmarks)
    result = _scores(
        strata,
        chosen,
        min_reviewed=min_reviewed,
        draws=draws,
        seed=seed,
        confidence=confidence,
        share_component=share_component,
    )
    pick_general = estimand == "general"
    fallback_rows: list[pd.DataFrame] = []

    def interval(df: pd.DataFrame) -> pd.DataFrame:
        if not pick_general:
            return df
        has = df.ci_low_general.notna() & df.ci_high_general.notna()
        fell = ~has & df.ci_low.notna() & df.ci_high.notna()
        reason = "no general-estimand interval for this row; the fixed-prompt interval is shown"
        df = df.assign(
            ci_low=np.where(has, df.ci_low_general, df.ci_low),
            ci_high=np.where(has, df.ci_high_general, df.ci_high),
            interval=np.where(has, df.interval_general, df.interval.astype(str) + " (fixed-prompt fallback)"),
            note=np.where(fell, [f"{n}; {reason}" if n else reason for n in df.note.fillna("")], df.note),
        )
        if fell.any():
            fallback_rows.append(df.loc[fell, ["model", "benchmark", "treatment"]].assign(reason=reason))
        return df

    cells = interval(result.treatments.copy())
    overall = interval(result.overall.assign(benchmark=ALL))
    if chosen.mode == "all" and not chosen.comparable:  # flagged in every overall row
        flags = [chosen.note(m) for m in overall.model]
        overall["note"] = [
            f"{n}; {f}" if isinstance(n, str) and n else f for n, f in zip(overall.note, flags, strict=True)
        ]
    left_out = _left_out(result, chosen)
    rank_frames, agree_frames, flip_frames = [], [], []
    models_summary = pd.DataFrame()
    p_safer = p_tie = pd.DataFrame()
    for bench in [*sorted(cells.benchmark.unique()), ALL]:
        if bench == ALL:
            est = overall[["model", "treatment", "estimate", "flag"]]
            d = result.overall_draws.get(REFERENCE_TREATMENT)
            names = list(result.models)
        else:
            est = cells.loc[cells.benchmark == bench, ["model", "treatment", "estimate", "flag"]]
            mask = (result.cells.benchmark == bench).to_numpy()
            d = result.draws[REFERENCE_TREATMENT][mask] if REFERENCE_TREATMENT in result.draws else None
            names = list(result.cells.model[mask])
        rk = rank_stability(est, d, names if d is not None else None, confidence=confidence)
        if bench == ALL:
            left_out = _no_draws(left_out, rk.excluded)
        ranks = rk.ranks.assign(benchmark=bench)
        ci = rk.models.set_index("model")[["rank_ci_low", "rank_ci_high"]]
        ranks = ranks.join(ci, on="model")
        ranks.loc[ranks.treatment != REFERENCE_TREATMENT, ["rank_ci_low", "rank_ci_high"]] = np.nan
        rank_frames.append(ranks[["benchmark", "model", "treatment", "rank", "rank_ci_low", "rank_ci_high"]])
        agree_frames.append(rk.agreement.assign(benchmark=bench))
        flip_frames.append(rk.flips.assign(benchmark=bench))
        if bench == ALL:
            models_summary = rk.models
            p_safer, p_tie = rk.p_safer, rk.p_tie
    ranks_all = pd.concat(rank_frames, ignore_index=True)
    both = pd.concat([cells, overall], ignore_index=True)
    both = both.merge(
        ranks_all.rename(columns={"rank_ci_low": "rank_low", "rank_ci_high": "rank_high"}),
        on=["benchmark", "model", "treatment"],
        how="left",
    )
    both["benchmark_set"] = [
        _set_text(chosen, m) if b == ALL else "" for m, b in zip(both.model, both.benchmark, strict=True)
    ]
    # (the extra columns are appended only until annotate.columns lists them itself)
    score_cols = list(SCORE_COLUMNS)
    scores = (
        both[score_cols].sort_values(["benchmark", "model", "treatment"], key=_treatment_order).reset_index(drop=True)
    )
    agreement = pd.concat(agree_frames, ignore_index=True).rename(
        columns={
            "kendall_tau_b": "tau_b",
            "spearman_rho": "rho",
            "n_flips": "flips",
            "n_credible_flips": "credible_flips",
            "n_noise_flips": "noise_flips",
        }
    )
    overall_rows = (agreement.benchmark == ALL).to_numpy()
    agreement["benchmark_set"] = np.where(
        overall_rows, ", ".join(map(str, chosen.benchmarks)), agreement.benchmark.astype(str)
    )
    agreement["left_out"] = np.where(
        overall_rows, "; ".join(f"{r.model}: {r.reason}" for r in left_out.itertuples()), ""
    )
    if chosen.mode == "all" and not chosen.comparable:
        flag = "models averaged over different benchmark sets: not comparable"
        agreement["note"] = [
            (f"{n}; {flag}" if isinstance(n, str) and n else flag) if o else n
            for n, o in zip(agreement.note, overall_rows, strict=True)
        ]
    agreement = agreement.reindex(columns=list(RANKING_COLUMNS))
    flips = pd.concat(flip_frames, ignore_index=True)
    sensitivity = _bound_rankings(overall, result, confidence)
    return ScoreOutput(
        scores=scores,
        ranking=agreement,
        flips=flips,
        models=models_summary,
        p_safer=p_safer,
        p_tie=p_tie,
        transport=result.transport,
        settings={
            "draws": draws,
            "seed": seed,
            "min_reviewed": min_reviewed,
            "estimand": estimand,
            "confidence": confidence,
            "interval": result.settings["interval"],
            "benchmarks": benchmarks if isinstance(benchmarks, str) else list(benchmarks),
            "benchmark_set": list(chosen.benchmarks),
            # Rounds routed with --strata-from: their judge-label rows read the judges' unanimity.
            **_strata_from(strata_from),
        },
        fallbacks=(
            pd.concat(fallback_rows, ignore_index=True)
            if fallback_rows
            else pd.DataFrame(columns=["model", "benchmark", "treatment", "reason"])
        ),
        benchmark_set=chosen,
        left_out=left_out,
        sensitivity=sensitivity,
        overall_draws=result.overall_draws,
        draw_models=tuple(map(str, result.models)),
    )


#: The bound treatments of the corrected rate, in the order the sensitivity view shows them.
BOUNDS = ("corrected_unresolved_safe", "corrected_unresolved_harmful")
SENSITIVITY_COLUMNS = ("bound", "model", "estimate", "rank", "rank_low", "rank_high")


def _bound_rankings(overall: pd.DataFrame, result: ScoreResult, confidence: float) -> pd.DataFrame:
    """The overall ranking on each bound of the corrected rate, with rank intervals from its own draws.

    The headline ranking uses the missing-at-random points; where items are unresolved, this
    view says how the order moves if every unresolved item were safe, or every one harmful
    (each the bound over the assignments, :mod:`.scores`), with the rank intervals of that bound's
    posterior draws. Empty when nothing is unresolved.
    """
    if not len(overall) or not (overall.estimate_kind == "mar").any():
        return pd.DataFrame(columns=list(SENSITIVITY_COLUMNS))
    frames = []
    for bound in BOUNDS:
        d = result.overall_draws.get(bound)
        rows = overall.loc[overall.treatment == bound, ["model", "estimate", "flag"]]
        if d is None or not len(rows):
            continue
        rk = rank_stability(rows.assign(treatment=REFERENCE_TREATMENT), d, list(result.models), confidence=confidence)
        m = rk.models
        frames.append(
            pd.DataFrame(
                {
                    "bound": bound,
                    "model": m.model,
                    "estimate": m.estimate,
                    "rank": m["rank"],
                    "rank_low": m.rank_ci_low,
                    "rank_high": m.rank_ci_high,
                }
            )
        )
    if not frames:
        return pd.DataFrame(columns=list(SENSITIVITY_COLUMNS))
    return pd.concat(frames, ignore_index=True)[list(SENSITIVITY_COLUMNS)]


def _scores(strata: pd.DataFrame, chosen: BenchmarkSet, **kwargs: Any) -> ScoreResult:
    """The corrected scores with each overall row averaged over the chosen set.

    ``all`` over different sets scores once per distinct set (the cell estimates and draws do
    not depend on the set: only the averages do) and takes each model's overall rows from the
    run over its own set.
    """
    if not chosen.benchmarks:
        return corrected_scores(strata, **kwargs)
    if chosen.mode != "all" or chosen.comparable:
        return corrected_scores(strata, benchmarks=list(chosen.benchmarks), **kwargs)
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for model, own in chosen.own.items():
        groups.setdefault(own, []).append(model)
    base: ScoreResult | None = None
    overall = pd.DataFrame()
    draws: dict[str, Any] = {}
    for own, members in groups.items():
        run = corrected_scores(strata, benchmarks=list(own), **kwargs)
        if base is None:
            base, overall = run, run.overall.copy()
            draws = {t: d.copy() for t, d in run.overall_draws.items()}
        rows = overall.model.isin(members).to_numpy()
        overall.loc[rows] = run.overall.loc[rows]
        at = [i for i, m in enumerate(run.models) if m in members]
        for t, d in run.overall_draws.items():
            draws[t][at] = d[at]
    assert base is not None
    return ScoreResult(
        cells=base.cells,
        treatments=base.treatments,
        overall=overall,
        draws=base.draws,
        draws_general=base.draws_general,
        models=base.models,
        overall_draws=draws,
        transport=base.transport,
        settings=base.settings,
    )


def _left_out(result: ScoreResult, chosen: BenchmarkSet) -> pd.DataFrame:
    """Every model the overall ranking leaves out, with why: missing benchmarks, or a cell of the set not estimable."""
    rows = [{"model": m, "reason": why} for m, why in chosen.left_out]
    cells = result.cells
    if chosen.mode != "all" and len(cells):
        ne = cells[
            cells.model.isin(chosen.ranked)
            & cells.benchmark.isin(chosen.benchmarks)
            & cells.flag.astype(str).str.startswith("not estimable")
        ]
        for model, group in ne.groupby("model", sort=False):
            why = "; ".join(
                f"cell {model} x {b} not estimable: {_without_prefix(str(f))}"
                for b, f in zip(group.benchmark, group.flag, strict=True)
            )
            rows.append({"model": model, "reason": why})
    return pd.DataFrame(rows, columns=["model", "reason"])


def _without_prefix(flag: str) -> str:
    return flag.removeprefix("not estimable").removeprefix(":").strip() or "no reason recorded"


def _no_draws(left_out: pd.DataFrame, excluded: pd.DataFrame) -> pd.DataFrame:
    """Add the models the ranking left out for another reason (no finite posterior draws)."""
    extra = excluded[(excluded.treatment == "all") & ~excluded.model.isin(left_out.model)]
    extra = extra[~extra.reason.astype(str).str.startswith("not estimable")]
    if extra.empty:
        return left_out
    return pd.concat([left_out, extra[["model", "reason"]]], ignore_index=True)


def _set_text(chosen: BenchmarkSet, model: Any) -> str:
    own = chosen.own.get(model) if chosen.mode == "all" else None
    return ", ".join(map(str, own if own is not None else chosen.benchmarks))


def _treatment_order(col: pd.Series) -> pd.Series:
    """Sort key: treatments in TREATMENTS order, benchmarks by name with ALL last."""
    if col.name == "treatment":
        order = {t: i for i, t in enumerate(TREATMENTS)}
        return col.map(lambda t: order.get(t, len(order)))
    if col.name == "benchmark":
        return col.map(lambda b: (1, "") if b == ALL else (0, str(b)))
    return col


@dataclass
class PPIOutput:
    """What :func:`ppi_tables` returns: the PPI++ view of ``annotate score`` (not part of an export)."""

    scores: pd.DataFrame  # PPI_COLUMNS, cells and benchmark == ALL
    strata: pd.DataFrame  # per stratum: lambda, the PPI++ and design-based stratum figures, fallbacks
    settings: dict[str, Any]
    base: ScoreOutput  # the design-based tables the rows sit beside (their benchmark set and left-out models)


def ppi_tables(
    labels: pd.DataFrame,
    design_strata: pd.DataFrame,
    predictions: pd.DataFrame,
    base: ScoreOutput,
    *,
    draws: int = 4000,
    seed: int = 0,
    estimand: str = "fixed",
    confidence: float = 0.95,
) -> PPIOutput:
    """Stratified PPI++ rates beside the design-based ``corrected`` ones (pure; docs/methods.md 4.5).

    Parameters
    ----------
    labels, design_strata
        The audit tables ``base`` was computed from.
    predictions : DataFrame
        :func:`annotate.stats.scoring.ppi.ppi_scores`' predictions of every response of the design.
    base : ScoreOutput
        :func:`score_tables` on the same tables and settings: the design-based rows shown beside
        (with their interval for ``estimand``), and the benchmark set the overall rows average.
    draws, seed, estimand, confidence
        As for :func:`score_tables`.

    Returns
    -------
    PPIOutput
        ``scores``: one row per cell and per model (benchmark ``ALL``, averaged over the
        design-based rows' benchmark set), :data:`PPI_COLUMNS`; every estimate inside its
        interval (:func:`.checks.check_scores` finds nothing), every missing number with its
        reason in ``flag`` or ``note``.
    """
    res = ppi_scores(
        labels, design_strata, predictions, draws=draws, seed=seed, estimand=estimand, confidence=confidence
    )
    design = base.scores[base.scores.treatment == REFERENCE_TREATMENT]
    chosen = base.benchmark_set
    overall_models = list(design.loc[design.benchmark == ALL, "model"])
    benches: dict[Any, list[Any]] = {}
    for m in overall_models:
        own = chosen.own.get(m) if chosen is not None and chosen.mode == "all" else None
        benches[m] = list(own if own is not None else (chosen.benchmarks if chosen is not None else []))
    overall = ppi_overall(res, benches, confidence=confidence)
    rows = pd.concat([res.cells, overall], ignore_index=True)
    beside = design[
        ["model", "benchmark", "estimate", "ci_low", "ci_high", "interval", "flag", "benchmark_set"]
    ].rename(
        columns={
            "estimate": "design_estimate",
            "ci_low": "design_ci_low",
            "ci_high": "design_ci_high",
            "interval": "design_interval",
            "flag": "design_flag",
        }
    )
    rows = rows.merge(beside, on=["model", "benchmark"], how="left")
    rows["benchmark_set"] = rows["benchmark_set"].fillna("")
    scores = (
        rows.reindex(columns=list(PPI_COLUMNS))
        .sort_values(["benchmark", "model"], key=_treatment_order)
        .reset_index(drop=True)
    )
    return PPIOutput(
        scores=scores,
        strata=res.strata,
        settings={**base.settings, "design_interval": base.settings.get("interval"), **res.settings, "seed": seed},
        base=base,
    )


def _strata_from(strata_from: Mapping[str, Sequence[str]] | None) -> dict[str, Any]:
    """``{"strata_from": {round: [judge, ...]}}`` for the rounds whose strata are several judges'
    unanimity (``route --strata-from``); empty when there are none, so other settings stay as they were."""
    several = {str(r): list(j) for r, j in (strata_from or {}).items() if j}
    return {"strata_from": several} if several else {}
