"""What a judge that errs differently by model does to the ranking: per-model against pooled correction (pure).

The corrected scores are per model already: each (model, benchmark) cell is estimated from its own
reviewed strata, so a judge that misses harm on one model does not bias that model's corrected
rate (it only widens it). A correction that borrows the judge's error rates from every model (a
Rogan-Gladen correction with the judge's sensitivity and specificity pooled over the benchmark's
models, as transport does, docs/methods.md 4.4) assumes the judge errs alike for every model; where
the model test (:mod:`annotate.stats.judge_models`) flags a judge, that assumption is what fails.
:func:`confound_table` puts the two side by side, per model:

    pooled(m, b) = (N_H + N_S) / N  RG(N_H / (N_H + N_S), Se_b, Sp_b)  +  N_U / N  ybar_U
    RG(q, Se, Sp) = clip((q + Sp - 1) / (Se + Sp - 1), 0, 1)

with the cell's judge-label totals N_H, N_S, N_U (waves pooled), Se_b and Sp_b the routing judge's
design-weighted figures over every model of benchmark b (the judge audit's pooled row of b), and
ybar_U the cell's reviewed ambiguous rate; a model's overall figure is the mean over its
benchmarks (as the overall corrected rows). Ranks are 1 = the least harmful; a pair whose order
differs between the two rankings is listed with P(the corrected order) from the corrected
posterior (``p_safer``), so the lead sees whether the confound moves the leaderboard and how sure
the corrected order is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.columns import ALL
from annotate.stats._common import average_ranks
from annotate.stats.scoring.strata import strata_table

if TYPE_CHECKING:
    from annotate.audit.record import AuditRecord
    from annotate.stats.judges import JudgeAudit

__all__ = ["CONFOUND_COLUMNS", "POOLED_CORRECTION", "confound_table"]

POOLED_CORRECTION = (
    "Rogan-Gladen on each cell's clear part with the routing judge's sensitivity and specificity pooled over the "
    "benchmark's models, plus the cell's reviewed ambiguous rate; mean over benchmarks"
)
CONFOUND_COLUMNS = (
    "model",
    "corrected",
    "corrected_ci_low",
    "corrected_ci_high",
    "corrected_rank",
    "pooled",
    "pooled_rank",
    "flagged",
)


def _rg(q: float, se: float, sp: float) -> float:
    denom = se + sp - 1
    if not np.isfinite(denom) or denom <= 0:
        return float("nan")
    return float(min(max((q + sp - 1) / denom, 0.0), 1.0))


def confound_table(record: AuditRecord, scored: Any, audit: JudgeAudit) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Per model the corrected rate and rank beside the pooled correction's, and the pairs that change order.

    Returns
    -------
    rows : DataFrame
        :data:`CONFOUND_COLUMNS`; ``flagged`` names the judges flagged for the model ("j1
        sensitivity (q 0.000)"; empty when none).
    flips : list of dict
        ``a``, ``b`` (a ranks before b under the corrected scores), ``p_corrected_order`` (P(a
        safer than b) under the corrected posterior; None without draws).
    """
    design = record.design
    labels = design.pooled(record.labels)
    st = strata_table(labels, design.strata_frame())
    pooled_rows = audit.metrics[(audit.metrics.model == ALL) & (audit.metrics.benchmark != ALL)]
    routing = {}
    for rnd in design.rounds:
        for b in st.loc[st["round"] == rnd.round, "benchmark"].unique():
            routing[str(b)] = rnd.judge_for(str(b))
    cells: dict[str, list[float]] = {}
    for (model, bench), g in st.groupby(["model", "benchmark"], sort=True):
        judge = routing.get(str(bench))
        row = pooled_rows[(pooled_rows.benchmark == bench) & (pooled_rows.judge == judge)]
        se = float(row["sensitivity"].iloc[0]) if len(row) else float("nan")
        sp = float(row["specificity"].iloc[0]) if len(row) else float("nan")
        n = {k: float(g.loc[g.judge_label == k, "population"].sum()) for k in ("harmful", "safe", "ambiguous")}
        total = sum(n.values())
        amb = g[(g.judge_label == "ambiguous") & (g.resolved > 0)]
        if n["ambiguous"]:
            ybar = (
                float((amb.population * amb.harmful / amb.resolved).sum() / amb.population.sum())
                if len(amb)
                else np.nan
            )
        else:
            ybar = 0.0
        clear = n["harmful"] + n["safe"]
        rg = _rg(n["harmful"] / clear, se, sp) if clear else 0.0
        value = (clear / total) * rg + (n["ambiguous"] / total) * ybar if total else float("nan")
        cells.setdefault(str(model), []).append(value)
    overall_rows = scored.scores[(scored.scores.benchmark == ALL) & (scored.scores.treatment == "corrected")]
    overall = {
        str(r.model): (float(r.estimate), float(r.ci_low), float(r.ci_high))
        for r in overall_rows.drop_duplicates("model").itertuples()
    }
    nan3 = (np.nan, np.nan, np.nan)
    flagged = audit.models[audit.models.flagged.astype(bool)] if len(audit.models) else audit.models
    models = sorted(cells)
    pooled = np.array([np.mean(cells[m]) if all(np.isfinite(cells[m])) else np.nan for m in models])
    corrected = np.array([overall.get(m, nan3)[0] for m in models])
    ok = np.isfinite(pooled) & np.isfinite(corrected)
    pooled_rank = np.full(len(models), np.nan)
    corrected_rank = np.full(len(models), np.nan)
    if ok.any():
        pooled_rank[ok] = average_ranks(pooled[ok])
        corrected_rank[ok] = average_ranks(corrected[ok])
    rows = []
    for i, m in enumerate(models):
        mine = flagged[flagged.model.astype(str) == m] if len(flagged) else flagged
        rows.append(
            {
                "model": m,
                "corrected": corrected[i],
                "corrected_ci_low": overall.get(m, nan3)[1],
                "corrected_ci_high": overall.get(m, nan3)[2],
                "corrected_rank": corrected_rank[i],
                "pooled": pooled[i],
                "pooled_rank": pooled_rank[i],
                "flagged": "; ".join(f"{r.judge} {r.figure} (q {r.q_value:.3f})" for r in mine.itertuples()),
            }
        )
    flips = []
    p_safer = scored.p_safer
    for i, a in enumerate(models):
        for j, b in enumerate(models):
            if not (ok[i] and ok[j]) or corrected[i] >= corrected[j]:
                continue
            if pooled[i] > pooled[j]:  # a before b under corrected, after it under the pooled correction
                p = p_safer.loc[a, b] if a in p_safer.index and b in p_safer.columns else np.nan
                flips.append({"a": a, "b": b, "p_corrected_order": None if pd.isna(p) else float(p)})
    flips.sort(key=lambda f: (-float(f["p_corrected_order"] or 0.0), str(f["a"]), str(f["b"])))
    return pd.DataFrame(rows, columns=list(CONFOUND_COLUMNS)), flips
