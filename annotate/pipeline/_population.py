"""Populations the design draws from, shared by the commands that route and those that re-read the design.

:func:`unanimity_population` gives a wave's population its strata from the unanimity of several
judges on the same response (``route --strata-from``); ``route`` draws the sample from it and
``score --estimator ppi`` recomputes each response's stratum with it, so both read the strata
the same way. :func:`hazard_parts` does the same for a round routed by hazard.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from annotate.hazards import routing_part
from annotate.stats.sampling import unanimity_strata

if TYPE_CHECKING:
    from annotate.db import Store

__all__ = ["hazard_parts", "unanimity_population"]


def unanimity_population(
    store: Store, population: pd.DataFrame, judge: str, judges: list[str], after: int, up_to: int
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The wave's population with the unanimity strata of ``judges`` as its ``judge_label``.

    Returns the population (``judge_label`` replaced), the cells (``model, benchmark, harmful,
    safe, ambiguous, without_verdict``: N_h of each stratum and how many responses lack a verdict
    of some named judge, all of them in the census stratum) and, per cell and judge with missing
    verdicts, ``model, benchmark, judge, responses, population``.
    """
    key = ["model", "benchmark"]
    if population.empty:
        cells = pd.DataFrame(columns=[*key, "harmful", "safe", "ambiguous", "without_verdict"])
        return population, cells, pd.DataFrame(columns=[*key, "judge", "responses", "population"])
    others = [j for j in judges if j != judge]
    found = store.strata_labels(judge, others, after, up_to)
    ids = population.response_id.astype(int).to_numpy()
    # Columns by position: judge names come from the ingested files and may be any text.
    labels = {judge: population.judge_label.to_numpy(dtype=object)}
    for j in others:
        mine = found[found.judge == j]
        by_id = dict(zip(mine.response_id.astype(int), mine.judge_label, strict=True))
        labels[j] = np.array([by_id.get(int(i)) for i in ids], dtype=object)
    wide = pd.DataFrame({k: labels[j] for k, j in enumerate(judges)})
    stratum = unanimity_strata(wide).to_numpy()
    lacking = wide.isna().to_numpy()
    out = population.assign(judge_label=stratum)
    cell = pd.MultiIndex.from_frame(out[key])
    sizes = pd.crosstab([out.model, out.benchmark], stratum).reindex(
        columns=["harmful", "safe", "ambiguous"], fill_value=0
    )
    sizes["without_verdict"] = pd.Series(lacking.any(axis=1).astype(int), index=cell).groupby(level=key).sum()
    sizes.columns.name = None
    cells = sizes.reset_index().astype({c: int for c in ("harmful", "safe", "ambiguous", "without_verdict")})
    per_judge = pd.DataFrame(lacking.astype(int), index=cell).groupby(level=key).sum()
    population_of = pd.Series(1, index=cell).groupby(level=key).sum()
    rows = [
        {"model": m, "benchmark": b, "judge": judges[k], "responses": int(n), "population": int(population_of[(m, b)])}
        for (m, b), counts in per_judge.iterrows()
        for k, n in enumerate(counts.to_numpy())
        if n > 0
    ]
    missing = pd.DataFrame(rows, columns=[*key, "judge", "responses", "population"])
    missing = missing.sort_values([*key, "judge"], kind="mergesort").reset_index(drop=True)
    return out, cells, missing


def hazard_parts(store: Store, response_ids: Iterable[int]) -> list[str]:
    """Each response's stratum part in a round routed by hazard (``annotate.hazards.routing_part``), in order:
    what ``route --strata-by hazard`` drew by and what the estimators rebuild the round's strata from."""
    hazards = store.responses(["id", "hazard"]).set_index("id")["hazard"]
    return [routing_part(h) for h in hazards.reindex(list(response_ids)).to_numpy()]
