"""`annotate score` and `annotate plan`: corrected scores and rankings from a reviewed round.

``score_tables(labels, design)`` is the whole computation from the two audit tables (see
``annotate.pipeline.audit``): the export writes the same tables, so ``annotate verify`` re-derives an
export's scores from its own files with this same function.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

SCORE_COLUMNS = ["model", "benchmark", "treatment", "estimate", "ci_low", "ci_high", "rank", "rank_low",
                 "rank_high", "n_responses", "n_reviewed", "flag", "se", "interval", "note"]
RANKING_COLUMNS = ["benchmark", "treatment", "tau_b", "rho", "flips", "credible_flips", "noise_flips",
                   "max_rank_shift", "n_models", "excluded"]


@dataclass
class ScoreOutput:
    scores: pd.DataFrame  # SCORE_COLUMNS, cells and benchmark == "ALL"
    ranking: pd.DataFrame  # RANKING_COLUMNS, per benchmark (and ALL) x treatment
    flips: pd.DataFrame  # benchmark, treatment, model_a, model_b, credible, p_a_safer
    models: pd.DataFrame  # per model (overall): rank, rank CI, dominance range, largest shift
    p_safer: pd.DataFrame  # K x K, ordered by corrected rank (overall)
    transport: pd.DataFrame
    settings: dict[str, Any]


def score_tables(labels: pd.DataFrame, design_doc: dict[str, Any], *, draws: int = 4000, seed: int = 0,
                 min_reviewed: int = 10, estimand: str = "fixed", confidence: float = 0.95) -> ScoreOutput:
    """Corrected scores under every treatment and the ranking analysis (pure)."""
    from annotate.pipeline.audit import strata_table
    from annotate.stats.ranking import rank_stability
    from annotate.stats.scoring import corrected_scores

    if estimand not in ("fixed", "general"):
        raise ValueError("estimand must be 'fixed' or 'general'")
    strata = strata_table(labels, design_doc)
    dup = strata.groupby(["model", "benchmark", "stratum"]).round.nunique()
    if (dup > 1).any():
        cell = dup[dup > 1].index[0]
        raise ValueError(f"cell {cell[0]} x {cell[1]} is covered by more than one round; score one round at a time.")
    result = corrected_scores(strata, min_reviewed=min_reviewed, draws=draws, seed=seed, confidence=confidence)
    pick_general = estimand == "general"

    def interval(df: pd.DataFrame) -> pd.DataFrame:
        if pick_general:
            has = df.ci_low_general.notna()
            df = df.assign(ci_low=np.where(has, df.ci_low_general, df.ci_low),
                           ci_high=np.where(has, df.ci_high_general, df.ci_high))
        return df

    cells = interval(result.treatments.copy())
    overall = interval(result.overall.copy()).assign(benchmark="ALL")
    rank_frames, agree_frames, flip_frames = [], [], []
    models_summary = pd.DataFrame()
    p_safer = pd.DataFrame()
    for bench in [*sorted(cells.benchmark.unique()), "ALL"]:
        if bench == "ALL":
            est = overall[["model", "treatment", "estimate", "flag"]]
            d = result.overall_draws.get("corrected")
            names = list(result.models)
        else:
            est = cells.loc[cells.benchmark == bench, ["model", "treatment", "estimate", "flag"]]
            mask = (result.cells.benchmark == bench).to_numpy()
            d = result.draws["corrected"][mask] if "corrected" in result.draws else None
            names = list(result.cells.model[mask])
        rk = rank_stability(est, d, names if d is not None else None, confidence=confidence)
        ranks = rk.ranks.assign(benchmark=bench)
        ci = rk.models.set_index("model")[["rank_ci_low", "rank_ci_high"]]
        ranks = ranks.join(ci, on="model")
        ranks.loc[ranks.treatment != "corrected", ["rank_ci_low", "rank_ci_high"]] = np.nan
        rank_frames.append(ranks[["benchmark", "model", "treatment", "rank", "rank_ci_low", "rank_ci_high"]])
        agree_frames.append(rk.agreement.assign(benchmark=bench))
        flip_frames.append(rk.flips.assign(benchmark=bench))
        if bench == "ALL":
            models_summary = rk.models
            names_sorted = list(rk.models.sort_values("rank").model) if len(rk.models) else []
            p_safer = pd.DataFrame(rk.p_safer, index=names_sorted, columns=names_sorted) if rk.p_safer is not None and len(names_sorted) else pd.DataFrame()
    ranks_all = pd.concat(rank_frames, ignore_index=True)
    both = pd.concat([cells, overall], ignore_index=True)
    both = both.merge(ranks_all.rename(columns={"rank_ci_low": "rank_low", "rank_ci_high": "rank_high"}),
                      on=["benchmark", "model", "treatment"], how="left")
    scores = both[SCORE_COLUMNS].sort_values(["benchmark", "model", "treatment"], key=_treatment_order).reset_index(drop=True)
    agreement = pd.concat(agree_frames, ignore_index=True).rename(columns={
        "kendall_tau_b": "tau_b", "spearman_rho": "rho", "n_flips": "flips", "n_credible_flips": "credible_flips",
        "n_noise_flips": "noise_flips"})
    agreement = agreement.reindex(columns=RANKING_COLUMNS)
    flips = pd.concat(flip_frames, ignore_index=True)
    return ScoreOutput(scores=scores, ranking=agreement, flips=flips, models=models_summary, p_safer=p_safer,
                       transport=result.transport,
                       settings={"draws": draws, "seed": seed, "min_reviewed": min_reviewed, "estimand": estimand,
                                 "confidence": confidence})


def _treatment_order(col: pd.Series) -> pd.Series:
    from annotate.stats.scoring import TREATMENTS

    if col.name == "treatment":
        order = {t: i for i, t in enumerate(TREATMENTS)}
        return col.map(lambda t: order.get(t, len(order)))
    if col.name == "benchmark":
        return col.map(lambda b: (1, "") if b == "ALL" else (0, str(b)))
    return col


def rounds_to_score(store: Any, names: tuple[str, ...]) -> list[str]:
    from annotate.errors import InputError, StateError

    rounds = store.rounds()
    rounds = rounds[rounds.kind == "review"] if len(rounds) else rounds
    if names:
        missing = [n for n in names if n not in set(rounds.name)]
        if missing:
            raise InputError(f"no round named {missing[0]!r} (rounds: {', '.join(rounds.name) or 'none'})")
        return list(names)
    if len(rounds) == 0:
        raise StateError("no review round yet: route, label, pull and adjudicate one first.")
    if len(rounds) > 1:
        raise InputError(f"several rounds exist ({', '.join(rounds.name)}); choose with --round.")
    return [rounds.iloc[0]["name"]]


def score_from_store(store: Any, names: tuple[str, ...], **kwargs: Any) -> tuple[ScoreOutput, pd.DataFrame, dict[str, Any]]:
    from annotate.pipeline.audit import design, labels_frame

    rounds = rounds_to_score(store, names)
    labels = labels_frame(store, rounds)
    doc = design(store, rounds)
    return score_tables(labels, doc, **kwargs), labels, doc


def plan(store: Any, names: tuple[str, ...], target_se: float, *, min_per_stratum: int = 10,
         judge: str | None = None) -> pd.DataFrame:
    """Neyman allocation of clear items per cell for a target SE (methods.md 4.8).

    Uses the judge-label populations of a round's design when a round exists, else the judge
    labels in the store (for planning the first round).
    """
    from annotate.stats.scoring import plan_allocation

    rounds = store.rounds()
    if len(rounds):
        from annotate.pipeline.audit import design, labels_frame, strata_table

        chosen = rounds_to_score(store, names)
        strata = strata_table(labels_frame(store, chosen), design(store, chosen))
        rates: Any = "data" if strata.resolved.sum() > 0 else None
    else:
        counts = store.label_counts(judge=judge)
        if counts.empty:
            from annotate.errors import StateError

            raise StateError("the store holds no responses: run `annotate ingest` first.")
        if counts.judge.nunique() > 1 and judge is None:
            from annotate.errors import InputError

            raise InputError(f"several judges ({', '.join(sorted(counts.judge.unique()))}); choose one with --judge.")
        strata = counts.rename(columns={"n": "population"}).assign(stratum=counts.judge_label, reviewed=0, harmful=0,
                                                                    unresolved=0)
        rates = None
    return plan_allocation(strata, target_se, rates=rates, min_per_stratum=min_per_stratum)
