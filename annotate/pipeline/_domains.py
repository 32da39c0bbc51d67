"""The rounds' populations, response by response, and the scores of their domains (hazard, persona, locale).

``score --by hazard`` and ``grade --by-hazard`` cut each round's strata by a field of the prompt
(``annotate.stats.scoring.domains``); the cut needs every response of the population route drew from,
which only the store holds (:func:`design_population`), as PPI's predictions do (``score.ppi_predictions``
reads the same populations through :func:`routed_populations`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.audit.scores import domain_scores_of
from annotate.errors import InputError
from annotate.pipeline._planning import score_from_store
from annotate.pipeline._population import hazard_parts, unanimity_population
from annotate.stats.scoring.domains import NO_DOMAIN, facet_domains, stacked_scores
from annotate.stats.scoring.strata import stratum_key

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from annotate.audit.design import Design
    from annotate.audit.record import AuditRecord
    from annotate.db import Store
    from annotate.stats.scoring.tables import ScoreOutput


def routed_populations(
    store: Store, design: Design, rows: pd.DataFrame
) -> Iterator[tuple[Any, str, pd.DataFrame, list[str]]]:
    """Per round and routing judge: the population route drew from, and each response's estimation stratum.

    A wave's population is the routing judge's responses (of ``rows``, the store's) ingested after the
    previous wave and up to its ``max_response_id``; a round across suites is one run per routing
    judge, on the benchmarks it routed. Yields (round, judge, its responses with ``wave``, stratum keys:
    a stratum's next waves pooled into it, methods 4.9, under the root wave's key).
    """
    runs = [
        (rnd, judge, None if rnd.judges is None else sorted(b for b, j in rnd.judges.items() if j == judge))
        for rnd in design.rounds
        for judge in rnd.routing_judges
    ]
    for rnd, judge, benchmarks in runs:
        waves = sorted((w.max_response_id, w.wave) for w in rnd.waves)
        mine = rows[rows.judge == judge]
        if benchmarks is not None:
            mine = mine[mine.benchmark.isin(benchmarks)]
        if waves:
            at = np.searchsorted(np.array([m for m, _ in waves]), mine["id"].to_numpy(), side="left")
            mine = mine[at < len(waves)].assign(wave=[waves[k][1] for k in at[at < len(waves)]])
        else:
            mine = mine.iloc[0:0].assign(wave=[])
        strata_from = list(rnd.strata_from) if rnd.strata_from is not None else None
        labels = _design_strata_labels(store, mine, judge, strata_from, waves)
        parts: list[str | None] = [None] * len(mine)
        if rnd.strata_by == "hazard":  # the round cut each judge label by hazard, as route drew it
            parts = list(hazard_parts(store, mine["id"]))
        keys = [stratum_key(lab, w, p) for lab, w, p in zip(labels, mine.wave, parts, strict=True)]
        yield rnd, judge, mine, keys


def keyed(round_name: str, responses: pd.DataFrame, keys: list[str]) -> dict[str, Any]:
    """The columns naming each response of a population: round, model, benchmark, stratum, prompt_id, epoch."""
    return {
        "round": round_name,
        "model": responses["model"].to_numpy(),
        "benchmark": responses["benchmark"].to_numpy(),
        "stratum": keys,
        "prompt_id": responses["prompt_id"].to_numpy(),
        "epoch": responses["epoch"].to_numpy(),
    }


def design_population(store: Store, design: Design, facet: str) -> pd.DataFrame:
    """Every response of the rounds' populations with its estimation stratum and its ``facet`` value.

    ``facet``: ``hazard`` (each code counted for its hazard, :func:`annotate.hazards.hazards_of`: an
    item of two hazards is two rows) or ``persona`` / ``locale``; a response without one is
    :data:`annotate.stats.scoring.domains.NO_DOMAIN`. Columns ``round, model, benchmark, stratum,
    prompt_id, epoch, domain``.
    """
    cols = ["id", "benchmark", "model", "prompt_id", "epoch", "judge", "judge_label", facet]
    rows = store.responses(cols)
    frames = []
    for rnd, _judge, mine, keys in routed_populations(store, design, rows):
        frames.append(
            pd.DataFrame({**keyed(rnd.round, mine, keys), "domain": [facet_domains(v, facet) for v in mine[facet]]})
        )
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*_POP_KEY, "domain"])
    return out.explode("domain", ignore_index=True)


_POP_KEY = ["round", "model", "benchmark", "stratum", "prompt_id", "epoch"]


def domain_population(store: Store, design: Design, by: str) -> pd.DataFrame:
    """N_hd: ``round, model, benchmark, stratum, domain, population``, the responses of each estimation
    stratum of the rounds' populations in each domain of ``by`` (an item of two hazards counted in each).

    Raises InputError when the population rebuilt from the store is not the one the design recorded
    (responses replaced under the round, say): the cut needs the round's own population.
    """
    population = design_population(store, design, by)
    strata = design.strata_frame()
    key = ["round", "model", "benchmark", "stratum"]
    whole = population.drop_duplicates(_POP_KEY).groupby(key).size()
    recorded = strata.set_index(key)["population"]
    differ = recorded.sub(whole.reindex(recorded.index).fillna(0)).abs()
    if (differ > 0).any():
        at = differ[differ > 0].index[0]
        raise InputError(
            f"cutting the scores by {by}: stratum {at[3]!r} of ({at[1]}, {at[2]}) in round {at[0]!r} has "
            f"{int(whole.get(at, 0))} responses in the store and {int(recorded[at])} in the round's design: "
            f"the store changed under the round (an ingest with --replace?), and the cut needs the round's own "
            f"population"
        )
    return population.groupby([*key, "domain"]).size().rename("population").reset_index()


def with_hazard_population(store: Store, record: AuditRecord, *, needed: bool) -> AuditRecord:
    """``record`` with each round's N_hd per hazard (design.json's ``hazard_population``, annotate-export/16),
    so that an export's per-hazard grades re-derive from its own files; the same record when no response
    of the rounds' populations has a hazard.

    When the store no longer holds a round's population (an ingest with --replace under it), the counts
    cannot be made: InputError when ``needed`` (a graded export), else the record without them.
    """
    design = record.design
    if not store.responses(["hazard"])["hazard"].notna().any():  # no hazard anywhere: nothing to count
        return record
    try:
        population = domain_population(store, design, "hazard")
    except InputError:
        if needed:
            raise
        return record
    if not len(population) or set(population["domain"]) == {NO_DOMAIN}:
        return record
    rounds = []
    for rnd in design.rounds:
        mine = population[population["round"] == rnd.round]
        rows = tuple(
            {"model": str(m), "benchmark": str(b), "stratum": str(k), "hazard": str(d), "population": int(n)}
            for m, b, k, d, n in zip(
                mine.model, mine.benchmark, mine.stratum, mine.domain, mine.population, strict=True
            )
        )
        rounds.append(replace(rnd, hazard_population=rows))
    return replace(record, design=replace(design, rounds=tuple(rounds)))


def domain_outputs_from_store(
    store: Store,
    names: tuple[str, ...],
    by: str,
    *,
    draws: int = 4000,
    seed: int = 0,
    min_reviewed: int = 10,
    estimand: str = "fixed",
    benchmarks: Any = "shared",
    confidence: float = 0.95,
) -> dict[str, ScoreOutput | str]:
    """``score --by hazard|persona|locale``: every domain's scores (``audit.scores.domain_scores_of``).

    Needs the store (the rounds' populations, not only the reviewed items): an export records N_hd of
    the hazards in design.json for the same computation. Raises InputError as :func:`domain_population`.
    """
    # The whole rounds scored at their points first: a design that cannot be scored (two rounds over one
    # cell) is one clear error here, not the same refusal repeated for every domain.
    _base, record = score_from_store(
        store, names, draws=0, seed=seed, min_reviewed=min_reviewed, estimand=estimand,
        benchmarks=benchmarks, confidence=confidence,
    )  # fmt: skip
    population = domain_population(store, record.design, by)
    try:
        return domain_scores_of(
            record, by, population, draws=draws, seed=seed, min_reviewed=min_reviewed, estimand=estimand,
            confidence=confidence, benchmarks=benchmarks,
        )  # fmt: skip
    except ValueError as exc:
        raise InputError(str(exc)) from None


def scores_by_from_store(store: Store, names: tuple[str, ...], by: str, **kwargs: Any) -> pd.DataFrame:
    """Every domain's score rows with their ``domain`` (:func:`domain_outputs_from_store`, stacked)."""
    outputs = domain_outputs_from_store(store, names, by, **kwargs)
    return stacked_scores(outputs)


def _design_strata_labels(
    store: Store, mine: pd.DataFrame, judge: str, strata_from: list[str] | None, waves: list[tuple[int, int]]
) -> NDArray[Any]:
    """Each routing response's stratum label as the round's design drew it.

    The routing judge's own label, or for a round routed with ``--strata-from`` the unanimity
    of those judges on the same response, wave by wave with what had been ingested when the wave
    was routed (``route`` computes it the same way: :func:`annotate.pipeline._population.unanimity_population`).
    """
    labels = mine["judge_label"].astype(object).to_numpy().copy()
    if not strata_from:
        return labels
    after = 0
    for up_to, wave in waves:
        sel = (mine["wave"] == wave).to_numpy()
        if sel.any():
            population = mine.loc[sel, ["id", "model", "benchmark", "judge_label"]].rename(
                columns={"id": "response_id"}
            )
            drawn, _cells, _missing = unanimity_population(store, population, judge, list(strata_from), after, up_to)
            labels[sel] = drawn["judge_label"].to_numpy(dtype=object)
        after = up_to
    return labels
