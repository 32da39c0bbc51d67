"""Corrected scores by domain: per hazard (or persona), from a round routed by judge label (pure).

A domain d (a hazard, a persona) cuts every stratum h of the design in two. Within h the reviewed
items are a simple random sample of its N_h items, so the reviewed items of domain d are, given
their number n_hd, a simple random sample of the N_hd items of h in d (docs/methods.md 9.22). The
domain's design is then the same design on the cut strata: N_hd (``population``, counted from the
round's population, which the store holds) and n_hd (``sample``, the routed items of d), and every
figure of :func:`.tables.score_tables` follows unchanged, one run per domain. A cut stratum with no
reviewed item of d (rare hazards: n_hd = 0 < N_hd) is filled as any stratum reviewed too thinly is,
by the cell's judge error rates borrowed from the other models' strata of d on the same benchmark
(transport, methods 4.4), or is not estimable; each row says which (``estimate_kind``, ``flag``).

An item in several domains (a prompt with two hazards) counts in each.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd

from annotate.columns import ALL, SCORE_COLUMNS
from annotate.hazards import hazards_of
from annotate.stats.scoring.strata import DESIGN_STRATA_COLUMNS
from annotate.stats.scoring.tables import ScoreOutput, score_tables

#: The domain of items that have none (no hazard given), as the rows name it.
NO_DOMAIN = "(none)"
#: The model of a refused domain's row (the refusal is the domain's, for every model in it).
EVERY_MODEL = "(every model)"
_KEY = ["round", "model", "benchmark", "stratum"]
#: The prompt fields a round's scores can be cut by (``score --by``).
FACETS = ("hazard", "persona", "locale")


def facet_domains(value: Any, facet: str) -> list[str]:
    """The domains of one stored facet value: a hazard value's hazards (a sub-hazard in its parent, two
    codes two domains), one persona or locale, or :data:`NO_DOMAIN` when the item has none.

    >>> facet_domains("vcr;spc_hlt", "hazard"), facet_domains("skilled", "persona"), facet_domains(None, "locale")
    (['spc', 'vcr'], ['skilled'], ['(none)'])
    """
    if not isinstance(value, str) or not value:
        return [NO_DOMAIN]
    return (hazards_of(value) or [NO_DOMAIN]) if facet == "hazard" else [value]


def labels_by_domain(labels: pd.DataFrame, facet: str) -> pd.DataFrame:
    """``labels`` (labels.csv rows, with the ``facet`` column) with a ``domain`` column, one row per
    (item, domain): an item of two hazards is two rows."""
    domains = [facet_domains(v, facet) for v in labels[facet]] if facet in labels else [[NO_DOMAIN]] * len(labels)
    return labels.assign(domain=domains).explode("domain", ignore_index=True)


def domain_designs(
    labels: pd.DataFrame, design_strata: pd.DataFrame, population: pd.DataFrame
) -> Iterator[tuple[str, pd.DataFrame, pd.DataFrame]]:
    """Each domain's labels and design strata, in domain order.

    Parameters
    ----------
    labels : DataFrame, one row per (routed item, domain)
        The round's pooled labels (``labels.csv`` rows in their estimation strata) with a ``domain``
        column; an item of several domains has one row per domain.
    design_strata : DataFrame
        :data:`.strata.DESIGN_STRATA_COLUMNS` (+ ``judged``): the design, N_h and n_h per stratum.
    population : DataFrame
        ``round, model, benchmark, stratum, domain, population``: N_hd, the items of each stratum's
        population in each domain (an item of several domains counted in each).

    Yields
    ------
    (domain, labels_d, strata_d) : strata_d is ``design_strata`` restricted to the strata with
        N_hd > 0, ``population`` = N_hd and ``sample`` = n_hd (the routed items of d in h).

    Raises
    ------
    ValueError
        A stratum with more routed items of d than N_hd (the population counted is not the round's).
    """
    counted = labels.groupby([*_KEY, "domain"], sort=False).size().rename("sample").reset_index()
    for domain in sorted(map(str, set(population["domain"]))):
        pop_d = population[population["domain"] == domain].drop(columns="domain")
        keep = [c for c in design_strata.columns if c not in ("population", "sample")]
        strata_d = design_strata[keep].merge(pop_d, on=_KEY, how="inner")
        got = counted[counted["domain"] == domain].drop(columns="domain")
        strata_d = strata_d.merge(got, on=_KEY, how="left").fillna({"sample": 0})
        strata_d["sample"] = strata_d["sample"].astype(int)
        strata_d["population"] = strata_d["population"].astype(int)
        over = strata_d[strata_d["sample"] > strata_d["population"]]
        if len(over):
            r = over.iloc[0]
            raise ValueError(
                f"stratum {r['stratum']!r} of ({r['model']}, {r['benchmark']}) has {r['sample']} routed items of "
                f"{domain!r} and a population of {r['population']}: the population counted is not the round's"
            )
        strata_d = strata_d[strata_d["population"] > 0]
        cols = [*DESIGN_STRATA_COLUMNS, *(["judged"] if "judged" in design_strata else [])]
        yield domain, labels[labels["domain"] == domain].drop(columns="domain"), strata_d[cols]


def domain_outputs(
    labels: pd.DataFrame,
    design_strata: pd.DataFrame,
    population: pd.DataFrame,
    **score_kwargs: Any,
) -> dict[str, ScoreOutput | str]:
    """Each domain's :func:`.tables.score_tables` output (its scores, ranking and posterior draws), or the
    reason the tables refuse it (no benchmark shared by its models, say). ``score_kwargs`` go to
    ``score_tables`` (draws, seed, min_reviewed, estimand, confidence, benchmarks, strata_from)."""
    out: dict[str, ScoreOutput | str] = {}
    for domain, labels_d, strata_d in domain_designs(labels, design_strata, population):
        try:
            out[domain] = score_tables(labels_d, strata_d, **score_kwargs)
        except ValueError as exc:
            out[domain] = str(exc)
    return out


def stacked_scores(outputs: dict[str, ScoreOutput | str]) -> pd.DataFrame:
    """The domains' score rows stacked with their ``domain``; a domain the tables refused is one row of its
    own, model ``(every model)``, overall and corrected, with no estimate and the reason as its ``flag``
    and ``note`` (never left out)."""
    frames = []
    for domain, out in outputs.items():
        if isinstance(out, str):
            row = {"model": EVERY_MODEL, "benchmark": ALL, "treatment": "corrected", "flag": out, "note": out}
            frames.append(pd.DataFrame([row]).reindex(columns=list(SCORE_COLUMNS)).assign(domain=domain))
        else:
            frames.append(out.scores.assign(domain=domain))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["model", "domain"])
