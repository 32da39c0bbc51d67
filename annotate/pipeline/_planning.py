"""Rounds scored and sized to a target: the scores, the next wave's plan, whether a round is done.

The scores of rounds from the store (:func:`score_from_store`, for `score`, `status`, `plan` and
the demo). The plan (:func:`plan_target`) is :func:`annotate.stats.planning.plan_round` on the round's strata
and reviews so far (docs/methods.md 4.10); whether each model is at its target
(:func:`target_status`) is read from the corrected interval the scores report, never from the
plan's normal approximation, so "done" means what the export will say.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.audit.scores import scores_of
from annotate.columns import ALL, judge_of
from annotate.errors import InputError
from annotate.pipeline._resolve import resolve_routing_judges, rounds_to_score
from annotate.pipeline.record import design_from_store, labels_frame, record_from_store
from annotate.stats.planning import BUDGET_HIGH, BUDGET_LOW, RoundPlan, plan_round, ranking_targets, smallest_fitting
from annotate.stats.scoring.strata import strata_table

if TYPE_CHECKING:
    from annotate.audit.design import Design
    from annotate.audit.record import AuditRecord
    from annotate.db import Store
    from annotate.stats.scoring.tables import ScoreOutput


def score_from_store(store: Store, names: tuple[str, ...], **kwargs: Any) -> tuple[ScoreOutput, AuditRecord]:
    """(scores, audit record) of the rounds; kwargs go to ``score_tables`` (draws, seed, ...)."""
    record = record_from_store(store, rounds_to_score(store, names), judges=False)
    try:
        return scores_of(record, **kwargs), record
    except ValueError as exc:  # the design cannot be scored as asked (e.g. overlapping rounds)
        raise InputError(str(exc)) from None


def reviewed_strata(store: Store, names: tuple[str, ...]) -> tuple[Design, pd.DataFrame]:
    """The rounds' design and their strata with the reviews so far (``strata_table``), as the estimators take them.

    Every wave of a stratum is pooled into it (methods 4.9).
    """
    chosen = rounds_to_score(store, names)
    design = design_from_store(store, chosen)
    return design, strata_table(design.pooled(labels_frame(store, chosen)), design.strata_frame())


def _corrected(store: Store, names: tuple[str, ...], **kwargs: Any) -> pd.DataFrame:
    """The corrected rows over all benchmarks (one per model) of the rounds' scores."""
    sc = score_from_store(store, names, **kwargs)[0].scores
    return sc[(sc.benchmark == ALL) & (sc.treatment == "corrected")]


def plan_target(
    store: Store,
    names: tuple[str, ...],
    *,
    target_halfwidth: float | None = None,
    budget: float | None = None,
    ranking: bool = False,
    tie_margin: float = 0.01,
    reviewers: int | None = None,
    expert_share: float = 0.0,
    unresolved: float = 0.0,
    judge: str | None = None,
    reported: dict[str, float] | None = None,
) -> RoundPlan:
    """The next wave for a target half-width of every model's corrected rate (docs/methods.md 4.10).

    From a round's design and labels (each wave's strata as they are; nothing reviewed yet counts
    as nothing known), or, before any round, the judge labels in the store. ``ranking``: each
    model's target from its distance to its nearest neighbour (``ranking_targets``), at least
    ``tie_margin``; needs a scored round. With a round, the models' figures are on the scale the
    round reports (:func:`_as_reported`): the target asked for (or, for a budget, the smallest
    common reported half-width it reaches), the interval `score` reports now, the one expected.
    """
    if (target_halfwidth is None) == (budget is None) and not ranking:
        raise InputError("give --target-halfwidth (e.g. 0.03) or --budget (reviews), or --ranking")
    for name, value in (("--target-halfwidth", target_halfwidth), ("--budget", budget)):
        if value is not None and value <= 0:
            raise InputError(f"{name} must be positive")
    if not 0 <= unresolved < 1 or not 0 <= expert_share <= 1:
        raise InputError("--unresolved must be in [0, 1) and --expert-share in [0, 1]")
    if len(store.rounds()):
        design, st = reviewed_strata(store, names)
        st = st.assign(sampled=st["sample"], stratum=st["round"].astype(str) + "/" + st["stratum"].astype(str))
        if reviewers is None:
            reviewers = max(len(r.annotators) for r in design.rounds)
    else:
        if ranking:
            raise InputError("--ranking needs a round with reviews: route and review one first")
        # Before any round: the strata a new round would route (each benchmark's own judge, as route).
        routing = resolve_routing_judges(store, [judge] if judge else [])
        counts = store.label_counts()
        routed = [
            judge_of(routing.judge, routing.judges, str(b)) == j
            for b, j in zip(counts.benchmark, counts.judge, strict=True)
        ]
        counts = counts[routed]
        st = counts.rename(columns={"n": "population"}).assign(
            stratum=counts.judge_label, sampled=0, resolved=0, harmful=0
        )
    targets: Any = target_halfwidth
    if ranking:
        sc = _corrected(store, names, draws=0)
        rows = sc[(sc.benchmark == ALL) & (sc.treatment == "corrected")]
        est = {str(r.model): float(r.estimate) for r in rows.itertuples() if np.isfinite(r.estimate)}
        targets = ranking_targets(est, tie_margin=tie_margin)
        missing = sorted(set(st["model"].astype(str)) - set(targets))
        if missing:
            raise InputError(f"no corrected estimate yet for {', '.join(missing)}: review some of each first")
        if target_halfwidth is not None:
            targets = {m: min(t, target_halfwidth) for m, t in targets.items()}
    options: dict[str, Any] = {
        "budget": budget if not ranking else None,
        "reviewers": reviewers or 2,
        "expert_share": expert_share,
        "unresolved": unresolved,
    }
    try:
        planned = plan_round(st, targets, **options)
        if not len(store.rounds()):
            return planned
        # The plan's half-widths are normal-theory; the interval a round reports (and status checks)
        # is wider where its strata share a component (docs/methods.md 9.12). Each model's target is
        # narrowed by that ratio, so that the wave planned to reach it reaches it as reported, and
        # the plan is shown on the reported scale (the target asked for, the interval now).
        if reported is None:
            reported = _reported_halfwidths(store, names)
        now = dict(zip(planned.models.model.astype(str), planned.models.halfwidth_now.astype(float), strict=True))
        options["budget"] = None
        if targets is None:  # a budget: the smallest common reported half-width whose reviews fit
            assert budget is not None
            planned, common, ratio = _budget_plan(st, now, reported, budget, options)
            return _as_reported(planned, ratio, reported, dict.fromkeys(ratio, common))
        wanted = targets if isinstance(targets, dict) else dict.fromkeys(now, float(targets))
        ratio = _ratios(now, reported, wanted)
        narrowed = {m: t / ratio.get(m, 1.0) for m, t in wanted.items()}
        if narrowed != wanted:
            planned = plan_round(st, narrowed, **options)
        return _as_reported(planned, ratio, reported, wanted)
    except ValueError as e:
        raise InputError(str(e)) from None


def _ratio(reported: float, planned: float) -> float:
    """The reported over the planned half-width of a model, clipped to [1, 2] as in the design
    bench/budget.py measured (methods 4.10); 1 where either is unknown."""
    r = reported / planned if planned > 0 else np.nan
    return float(min(r, 2.0)) if np.isfinite(r) and r > 1 else 1.0


def _ratios(now: dict[str, float], reported: dict[str, float], wanted: dict[str, float]) -> dict[str, float]:
    """Per model, the ratio its target is narrowed by: :func:`_ratio`, clipped as measured, unless the
    clipped ratio would have the plan call the model at its target when the round reports it is not
    (a ratio above 2 now: a pilot's sparse strata), or not at it when it is (a reported interval
    narrower than the plan's); then the ratio now, unclipped, so that the plan never plans nothing
    for a model the round reports above its target, nor reviews for one it reports within it."""
    out = {}
    for m, h in now.items():
        rep, t = reported.get(m, np.nan), wanted.get(m)
        r = _ratio(rep, h)
        if t is not None and np.isfinite(rep) and rep > 0 and h > 0 and (rep <= t) != (h <= t / r):
            r = rep / h
        out[m] = float(r)
    return out


def _budget_plan(
    st: pd.DataFrame, now: dict[str, float], reported: dict[str, float], budget: float, options: dict[str, Any]
) -> tuple[RoundPlan, float, dict[str, float]]:
    """(the plan, t, the ratios) for the smallest common reported half-width t within ``budget``
    (each model's target t / its ratio, :func:`_ratios`)."""

    def at(t: float) -> tuple[RoundPlan, dict[str, float]]:
        ratio = _ratios(now, reported, dict.fromkeys(now, t))
        return plan_round(st, {m: t / r for m, r in ratio.items()}, **options), ratio

    lo, hi = BUDGET_LOW, BUDGET_HIGH
    best, best_ratio = at(hi)
    if best.reviews > budget:
        return best, hi, best_ratio  # not even +-1 fits: the plan for it, whose reviews say so
    everything, ratio = at(lo)
    if everything.reviews <= budget:
        # The budget covers every remaining response: the plan for the widest half-width that
        # reviewing them all reaches (the rest of the budget is not needed).
        reach = everything.models.expected_halfwidth.astype(float) * everything.models.model.astype(str).map(ratio)
        t = float(reach.max()) * 1.0001
        plan, ratio = at(t)
        return plan, t, ratio
    (best, best_ratio), t = smallest_fitting(at, lambda planned: planned[0].reviews, budget, (best, best_ratio))
    return best, t, best_ratio


def _as_reported(
    planned: RoundPlan, ratio: dict[str, float], reported: dict[str, float], wanted: dict[str, float]
) -> RoundPlan:
    """The plan's per-model figures on the scale the round reports: ``target`` the half-width asked for
    (``planned_target`` the normal-theory one the allocation was solved for), ``halfwidth_now`` the
    corrected interval `score` reports (the plan's own times the ratio where there is none yet),
    ``expected_halfwidth`` the plan's times the ratio, ``at_target`` from those."""
    m = planned.models.copy()
    names = m.model.astype(str)
    r = names.map(ratio).astype(float).fillna(1.0)
    m["planned_target"] = m["target"]
    m["target"] = names.map(wanted).astype(float)
    now = names.map(reported).astype(float)
    m["halfwidth_now"] = now.where(now.notna(), m["halfwidth_now"] * r)
    # More reviews never widen it; no reviews leave it as it is.
    after = np.minimum(m["expected_halfwidth"] * r, m["halfwidth_now"])
    m["expected_halfwidth"] = after.where(m["items"] > 0, m["halfwidth_now"])
    m["at_target"] = m["halfwidth_now"] <= m["target"] + 1e-9
    m["ratio"] = r
    return RoundPlan(planned.strata, m, planned.reviews)


def _reported_halfwidths(store: Store, names: tuple[str, ...]) -> dict[str, float]:
    """Each model's corrected interval half-width over all benchmarks, as `score` reports it."""
    return _halfwidths(_corrected(store, names))


def _halfwidths(rows: pd.DataFrame) -> dict[str, float]:
    """model -> (ci_high - ci_low) / 2 of the corrected rows that have an interval."""
    return {
        str(m): (float(hi) - float(lo)) / 2
        for m, lo, hi in zip(rows.model, rows.ci_low, rows.ci_high, strict=True)
        if np.isfinite(lo) and np.isfinite(hi)
    }


@dataclass
class TargetStatus:
    """Per model: the corrected rate's interval now, its target, and the reviews a next wave needs.

    ``models``: ``model, estimate, ci_low, ci_high, halfwidth, target, at_target, more_reviews``
    (the plan's reviews for that model's next wave; 0 at target). ``verdict``: ``done`` (every
    model at its target), ``budget spent`` (reviews done >= budget, some not at target) or ``not
    done``; ``reviews_done`` counts the round's current reviews (one per reviewer and item).
    """

    models: pd.DataFrame
    verdict: str
    reviews_done: int
    next_wave_reviews: float
    target: float
    budget: float | None = None
    notes: list[str] = field(default_factory=list)


def target_status(
    store: Store,
    names: tuple[str, ...],
    *,
    target_halfwidth: float,
    budget: float | None = None,
    draws: int = 4000,
    seed: int = 0,
) -> TargetStatus:
    """Whether every model's corrected rate is within ``target_halfwidth`` (the reported interval), and what is left."""
    if target_halfwidth <= 0 or (budget is not None and budget <= 0):
        raise InputError("--target-halfwidth and --budget must be positive")
    rows = _corrected(store, names, draws=draws, seed=seed)
    rounds = rounds_to_score(store, names)
    done = 0
    for name in rounds:
        rid = int(store.get_round(name)["id"])  # type: ignore[index]
        votes = store.annotations(rid)
        done += int(len(votes))
    plan = plan_target(store, names, target_halfwidth=target_halfwidth, reported=_halfwidths(rows))
    more = dict(zip(plan.models.model.astype(str), plan.models.reviews.astype(float), strict=True))
    out = pd.DataFrame(
        {
            "model": rows.model.astype(str).to_numpy(),
            "estimate": rows.estimate.to_numpy(dtype=float),
            "ci_low": rows.ci_low.to_numpy(dtype=float),
            "ci_high": rows.ci_high.to_numpy(dtype=float),
        }
    )
    out["halfwidth"] = (out.ci_high - out.ci_low) / 2
    out["target"] = target_halfwidth
    out["at_target"] = np.isfinite(out.halfwidth) & (out.halfwidth <= target_halfwidth + 1e-12)
    out["more_reviews"] = [
        0.0 if ok else float(more.get(m, np.nan)) for m, ok in zip(out.model, out.at_target, strict=True)
    ]
    notes = []
    reachable = dict(zip(plan.models.model.astype(str), plan.models.reachable.astype(bool), strict=True))
    stuck = out[~out.at_target & ~out.model.map(reachable).fillna(True).astype(bool)]
    if len(stuck):
        notes.append(
            f"{', '.join(stuck.model)}: the plan cannot reach the target with the responses this round has left "
            "(its reviewed strata, the unresolved items and the design's shared component set the width)."
        )
    if out.halfwidth.isna().any():
        notes.append(f"{int(out.halfwidth.isna().sum())} model(s) without a corrected interval yet (too few reviews).")
    if bool(out.at_target.all()) and len(out):
        verdict = "done"
    elif budget is not None and done >= budget:
        verdict = "budget spent"
    else:
        verdict = "not done"
    if verdict != "not done":
        # Neighbours by estimate whose intervals overlap: not separated at this precision or budget.
        ranked = out.dropna(subset=["ci_low", "ci_high"]).sort_values("estimate")
        tied = [
            f"{a.model} and {b.model}"
            for a, b in zip(ranked.itertuples(), ranked.iloc[1:].itertuples(), strict=False)
            if b.ci_low <= a.ci_high
        ]
        if tied:
            at = "at this budget" if verdict == "budget spent" else "at this precision"
            notes.append(f"cannot be separated {at} (their intervals overlap): {'; '.join(tied)}.")
    return TargetStatus(out, verdict, done, float(plan.reviews), target_halfwidth, budget, notes)
