"""Corrected scores under every treatment and the ranking analysis, from the two audit tables (pure).

``score_tables(labels, design)`` is the whole computation behind ``annotate score``; the export
writes the same two tables, so ``annotate verify`` re-derives an export's scores from its own
files with this same function.

The score rows carry :data:`annotate.columns.SCORE_COLUMNS` (the last, ``estimate_kind``:
``judge``, ``stratified``, ``transport`` or ``mar``, the missing-at-random point inside a
partial-identification interval; empty when not estimable); the ranking rows
:data:`annotate.columns.RANKING_COLUMNS` (the last, ``note``: why tau-b or rho is missing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from annotate.columns import ALL, RANKING_COLUMNS, REFERENCE_TREATMENT, SCORE_COLUMNS, TREATMENTS
from annotate.stats.ranking import rank_stability
from annotate.stats.scoring.scores import corrected_scores
from annotate.stats.scoring.strata import strata_table

__all__ = ["ScoreOutput", "score_tables"]


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


def score_tables(
    labels: pd.DataFrame,
    design_doc: dict[str, Any],
    *,
    draws: int = 4000,
    seed: int = 0,
    min_reviewed: int = 10,
    estimand: str = "fixed",
    confidence: float = 0.95,
) -> ScoreOutput:
    """Corrected scores under every treatment and the ranking analysis (pure).

    Parameters
    ----------
    labels : DataFrame
        ``labels.csv`` of an export (see :func:`.strata.strata_table`).
    design_doc : dict
        ``design.json`` of an export.
    draws, seed, min_reviewed, confidence
        Passed to :func:`corrected_scores`.
    estimand : {"fixed", "general"}
        Which interval fills ``ci_low`` / ``ci_high`` (and which ``interval`` names). A row
        without a general-estimand interval keeps its fixed-prompt one; its ``interval`` and
        ``note`` say so, and ``fallbacks`` lists it with the reason.

    Returns
    -------
    ScoreOutput
        ``scores`` (SCORE_COLUMNS; each cell and, as benchmark ``ALL``, each model's
        macro-average, under every treatment, with ranks), ``ranking`` (RANKING_COLUMNS, each
        treatment against the corrected ranking per benchmark and overall), ``flips``,
        ``models``, ``p_safer``, ``p_tie``, ``transport``, ``settings``, ``fallbacks``. Every
        estimate lies inside its interval and every rank inside its rank interval
        (:func:`.checks.check_scores` finds nothing).

    Raises
    ------
    ValueError
        An unknown ``estimand``, or a cell covered by more than one round.
    """
    if estimand not in ("fixed", "general"):
        raise ValueError("estimand must be 'fixed' or 'general'")
    strata = strata_table(labels, design_doc)
    dup = strata.groupby(["model", "benchmark", "stratum"]).round.nunique()
    if (dup > 1).any():
        cell = dup[dup > 1].index[0]
        raise ValueError(f"cell {cell[0]} x {cell[1]} is covered by more than one round; score one round at a time.")
    result = corrected_scores(strata, min_reviewed=min_reviewed, draws=draws, seed=seed, confidence=confidence)
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
    agreement = agreement.reindex(columns=list(RANKING_COLUMNS))
    flips = pd.concat(flip_frames, ignore_index=True)
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
        },
        fallbacks=(
            pd.concat(fallback_rows, ignore_index=True)
            if fallback_rows
            else pd.DataFrame(columns=["model", "benchmark", "treatment", "reason"])
        ),
    )


def _treatment_order(col: pd.Series) -> pd.Series:
    """Sort key: treatments in TREATMENTS order, benchmarks by name with ALL last."""
    if col.name == "treatment":
        order = {t: i for i, t in enumerate(TREATMENTS)}
        return col.map(lambda t: order.get(t, len(order)))
    if col.name == "benchmark":
        return col.map(lambda b: (1, "") if b == ALL else (0, str(b)))
    return col
